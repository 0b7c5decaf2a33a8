// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "abi.h"
#include "cpython.h"
#include "base/hmap.h"
#include "base/memread.h"
#include "symbolize/pycode.h"
#include "target/python.h"

#define MAX_NAME_CHARS 4096
/* Larger tables are refused: no real code object has one. */
#define MAX_TABLE_BYTES (1 << 20)

struct code_key {
	uint64_t space;
	uint64_t code;
	uint64_t tag;
};

struct pycode_cache {
	struct hmap *map;
	size_t max_entries;
	uint64_t evictions;
};

struct pycode_cache *pycode_cache__new(size_t max_entries)
{
	struct pycode_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->map = hmap__new(sizeof(struct code_key));
	if (!c->map) {
		free(c);
		return NULL;
	}
	c->max_entries = max_entries;
	return c;
}

static void pycode_free(struct pycode *pc)
{
	if (!pc)
		return;
	free(pc->filename);
	free(pc->qualname);
	free(pc->table);
	hmap__free(pc->memo);
	free(pc);
}

static void cache_clear(struct pycode_cache *c)
{
	size_t it = 0;
	void *val;

	while (hmap__next(c->map, &it, NULL, &val))
		pycode_free(val);
	hmap__free(c->map);
	c->map = hmap__new(sizeof(struct code_key));
}

void pycode_cache__free(struct pycode_cache *c)
{
	size_t it = 0;
	void *val;

	if (!c)
		return;
	while (c->map && hmap__next(c->map, &it, NULL, &val))
		pycode_free(val);
	hmap__free(c->map);
	free(c);
}

uint64_t pycode_cache__evictions(const struct pycode_cache *c)
{
	return c->evictions;
}

const struct pycode *pycode_cache__lookup(struct pycode_cache *c, uint64_t space, uint64_t code,
					  uint64_t tag)
{
	struct code_key k = { .space = space, .code = code, .tag = tag };

	return c->map ? hmap__get(c->map, &k) : NULL;
}

/* Appends code point cp as UTF-8; invalid ones (surrogates, > U+10FFFF)
 * become U+FFFD so that the output is always valid UTF-8. */
static size_t put_utf8(char *out, uint32_t cp)
{
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A str object's header, read: where its characters are and how many. */
struct str_head {
	uint32_t state;
	uint64_t length;
	unsigned int kind;
	uint64_t data;
};

/* The pieces of a str's header at addr, for a batched read. */
static void str_head_pieces(const struct py_offsets *o, uint64_t addr, struct str_head *h,
			    struct mem_piece *p)
{
	p[0] = (struct mem_piece){ addr + o->unicode_state, &h->state, sizeof(h->state), 0 };
	p[1] = (struct mem_piece){ addr + o->unicode_length, &h->length, sizeof(h->length), 0 };
}

/* The header read: 0, or -EINVAL when it is not a compact str's (code
 * object names always are).  At most max_chars characters are kept. */
static int str_head_check(const struct py_offsets *o, uint64_t addr, struct str_head *h,
			  size_t max_chars)
{
	if (!(h->state & o->unicode_compact_mask))
		return -EINVAL;
	h->kind = (h->state & o->unicode_kind_mask) >> __builtin_ctz(o->unicode_kind_mask);
	if (h->kind != 1 && h->kind != 2 && h->kind != 4)
		return -EINVAL;
	if (h->length > max_chars)
		h->length = max_chars;
	h->data = addr + ((h->state & o->unicode_ascii_mask) ? o->unicode_ascii_size
							     : o->unicode_compact_size);
	return 0;
}

/* The characters read (raw, h->length of h->kind bytes each) as UTF-8. */
static char *str_decode(const struct str_head *h, const uint8_t *raw)
{
	char *out = malloc(h->length * 4 + 1);
	size_t i, n = 0;

	if (!out)
		return NULL;
	for (i = 0; i < h->length; i++) {
		uint32_t cp;

		if (h->kind == 1)
			cp = raw[i];
		else if (h->kind == 2)
			cp = raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&cp, raw + 4 * i, 4);
		/* NUL would cut the C string short. */
		n += put_utf8(out + n, cp ? cp : 0xfffd);
	}
	out[n] = '\0';
	return out;
}

/* n pieces in one batched read: 0 when each was read whole, else the first
 * error. */
static int read_whole(int pid, struct mem_piece *p, size_t n)
{
	int err = mem_read_many(pid, p, n);
	size_t i;

	for (i = 0; !err && i < n; i++)
		err = p[i].err;
	return err;
}

/* Where a code object is read from: its process, or what the deallocator's
 * probe copied of it (snap set). */
struct code_src {
	int pid;
	const struct code_snap_record *snap;
};

/* The copy of block b of a snapshot. */
static const uint8_t *snap_block(const struct code_snap_record *r, int b)
{
	switch (b) {
	case CODE_SNAP_HEAD:
		return r->head;
	case CODE_SNAP_FNAME:
		return r->fname;
	case CODE_SNAP_NAME:
		return r->name;
	default:
		return r->table;
	}
}

/* As read_whole, from src: a piece must lie in one block of a snapshot. */
static int src_read(const struct code_src *src, struct mem_piece *p, size_t n)
{
	size_t i;
	int b;

	if (!src->snap)
		return read_whole(src->pid, p, n);
	for (i = 0; i < n; i++) {
		for (b = 0; b < CODE_SNAP_BLOCKS; b++) {
			uint64_t at = src->snap->addr[b], len = src->snap->len[b];

			if (p[i].addr >= at && p[i].addr - at <= len &&
			    p[i].len <= len - (p[i].addr - at))
				break;
		}
		if (b == CODE_SNAP_BLOCKS)
			return -EFAULT;
		memcpy(p[i].buf, snap_block(src->snap, b) + (p[i].addr - src->snap->addr[b]),
		       p[i].len);
	}
	return 0;
}

char *pystr_read(int pid, const struct py_proc *pp, uint64_t addr, size_t max_chars)
{
	struct str_head h = { 0 };
	struct mem_piece p[2];
	uint8_t *raw;
	char *out;
	int err;

	if (!addr) {
		errno = EINVAL;
		return NULL;
	}
	str_head_pieces(pp->off, addr, &h, p);
	err = read_whole(pid, p, 2);
	if (!err)
		err = str_head_check(pp->off, addr, &h, max_chars);
	if (err) {
		errno = -err;
		return NULL;
	}
	raw = malloc(h.length * h.kind + 1);
	if (!raw) {
		errno = ENOMEM;
		return NULL;
	}
	err = mem_read(pid, h.data, raw, h.length * h.kind);
	out = err ? NULL : str_decode(&h, raw);
	free(raw);
	if (!out)
		errno = err ? -err : ENOMEM;
	return out;
}

/*
 * A code object in three batched reads (each one system call): its fields;
 * the headers of its file name, its name and its line table; their bytes.
 * Code objects are read by the hundred as a process starts: with a read per
 * field they were a fifth of the loader's CPU time for a stream of
 * short-lived processes under --all (perf).
 */
static struct pycode *read_code(const struct code_src *src, const struct py_proc *pp, uint64_t code,
				uint64_t *tag)
{
	const struct py_offsets *o = pp->off;
	uint64_t fname = 0, name = 0, co_name = 0, table = 0;
	struct str_head hf = { 0 }, hn = { 0 };
	int64_t table_size = 0;
	uint8_t *rawf = NULL, *rawn = NULL;
	struct pycode *pc = NULL;
	int32_t first = 0;
	uint32_t flags = 0;
	int err;
	struct mem_piece f[] = {
		{ code + o->code_firstlineno, &first, sizeof(first), 0 },
		{ code + o->code_filename, &fname, sizeof(fname), 0 },
		{ code + (o->code_qualname != PYOFF_NONE ? o->code_qualname : o->code_name), &name,
		  sizeof(name), 0 },
		{ code + o->code_name, &co_name, sizeof(co_name), 0 },
		{ code + o->code_linetable, &table, sizeof(table), 0 },
		{ code + o->code_flags, &flags, sizeof(flags), 0 },
	};
	struct mem_piece h[5], d[3];

	err = src_read(src, f, 6);
	if (err) {
		errno = -err;
		return NULL;
	}
	/* The object changed since the sample: not the code that ran.  A
	 * snapshot's is the tag it is kept under. */
	if (src->snap)
		*tag = pycode_tag((uint32_t)first, code_ident(fname, co_name));
	else if (pycode_tag((uint32_t)first, code_ident(fname, co_name)) != *tag) {
		errno = ESTALE;
		return NULL;
	}
	if (!fname || !name || !table) {
		errno = EFAULT;
		return NULL;
	}
	str_head_pieces(o, fname, &hf, h);
	str_head_pieces(o, name, &hn, h + 2);
	h[4] = (struct mem_piece){ table + o->varobject_size, &table_size, sizeof(table_size), 0 };
	err = src_read(src, h, 5);
	if (!err)
		err = str_head_check(o, fname, &hf, MAX_NAME_CHARS);
	if (!err)
		err = str_head_check(o, name, &hn, MAX_NAME_CHARS);
	if (!err && (table_size < 0 || table_size > MAX_TABLE_BYTES))
		err = -E2BIG;
	if (err) {
		errno = -err;
		return NULL;
	}
	pc = calloc(1, sizeof(*pc));
	rawf = malloc(hf.length * hf.kind + 1);
	rawn = malloc(hn.length * hn.kind + 1);
	if (pc)
		pc->table = malloc(table_size ? table_size : 1);
	if (!pc || !rawf || !rawn || !pc->table) {
		err = -ENOMEM;
		goto out;
	}
	d[0] = (struct mem_piece){ hf.data, rawf, hf.length * hf.kind, 0 };
	d[1] = (struct mem_piece){ hn.data, rawn, hn.length * hn.kind, 0 };
	d[2] = (struct mem_piece){ table + o->bytes_sval, pc->table, (size_t)table_size, 0 };
	err = src_read(src, d, 3);
	if (err)
		goto out;
	pc->table_len = table_size;
	pc->firstlineno = first;
	pc->flags = flags;
	pc->fmt = linetable_format_for_minor(pp->minor);
	pc->filename = str_decode(&hf, rawf);
	pc->qualname = str_decode(&hn, rawn);
	pc->memo = hmap__new(sizeof(int));
	if (!pc->filename || !pc->qualname || !pc->memo)
		err = -ENOMEM;
out:
	free(rawf);
	free(rawn);
	if (err) {
		pycode_free(pc);
		errno = -err;
		return NULL;
	}
	return pc;
}

/* Keeps pc under k: the entry, or NULL with errno (pc is freed). */
static const struct pycode *cache_put(struct pycode_cache *c, const struct code_key *k,
				      struct pycode *pc)
{
	struct pycode *old = hmap__get(c->map, k);

	if (old) {
		/* The same object read twice (a snapshot of one read live). */
		pycode_free(pc);
		return old;
	}
	if (hmap__count(c->map) >= c->max_entries) {
		/* Bounded memory over long runs: start over rather than grow. */
		c->evictions += hmap__count(c->map);
		cache_clear(c);
		if (!c->map) {
			pycode_free(pc);
			errno = ENOMEM;
			return NULL;
		}
	}
	if (hmap__put(c->map, k, pc)) {
		pycode_free(pc);
		errno = ENOMEM;
		return NULL;
	}
	return pc;
}

const struct pycode *pycode_cache__load(struct pycode_cache *c, const struct py_proc *pp,
					uint64_t space, uint64_t code, uint64_t tag)
{
	struct code_key k = { .space = space, .code = code, .tag = tag };
	struct code_src src = { .pid = pp->pid };
	struct pycode *pc;

	if (!c->map) {
		errno = ENOMEM;
		return NULL;
	}
	pc = hmap__get(c->map, &k);
	if (pc)
		return pc;
	pc = read_code(&src, pp, code, &tag);
	return pc ? cache_put(c, &k, pc) : NULL;
}

int pycode_cache__put_snap(struct pycode_cache *c, const struct py_proc *pp, uint64_t space,
			   const struct code_snap_record *r, size_t size)
{
	static const uint32_t cap[CODE_SNAP_BLOCKS] = {
		[CODE_SNAP_HEAD] = CODE_SNAP_HEAD_BYTES,
		[CODE_SNAP_FNAME] = CODE_SNAP_FNAME_BYTES,
		[CODE_SNAP_NAME] = CODE_SNAP_NAME_BYTES,
		[CODE_SNAP_TABLE] = CODE_SNAP_TABLE_BYTES,
	};
	struct code_src src = { .pid = pp->pid, .snap = r };
	struct code_key k = { .space = space };
	struct pycode *pc;
	int b;

	if (size < offsetof(struct code_snap_record, table) ||
	    r->len[CODE_SNAP_TABLE] > size - offsetof(struct code_snap_record, table))
		return -EINVAL;
	for (b = 0; b < CODE_SNAP_BLOCKS; b++)
		if (r->len[b] > cap[b])
			return -EINVAL;
	if (!c->map)
		return -ENOMEM;
	k.code = r->code;
	pc = read_code(&src, pp, r->code, &k.tag);
	if (!pc)
		return -errno;
	pc->copied = true;
	return cache_put(c, &k, pc) ? 0 : -errno;
}

void pycode__keep_names(const struct pycode *pc, uint64_t key, const char *filename,
			const char *qualname)
{
	struct pycode *w = (struct pycode *)pc;

	w->names_key = key;
	w->names[0] = filename;
	w->names[1] = qualname;
}

int pycode__line(const struct pycode *pc, int offset)
{
	void *v = hmap__get(pc->memo, &offset);
	int line;

	if (v)
		return (int)(intptr_t)v - 2;
	line = linetable_addr2line(pc->fmt, pc->table, pc->table_len, pc->firstlineno, offset);
	/* Stored as line + 2 so that -1 ("no line") is not NULL. */
	hmap__put(pc->memo, &offset, (void *)(intptr_t)(line + 2));
	return line;
}
