// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "abi.h"
#include "cpython.h"
#include "hmap.h"
#include "memread.h"
#include "pycode.h"
#include "python.h"

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

char *pystr_read(int pid, const struct py_proc *pp, uint64_t addr, size_t max_chars)
{
	const struct py_offsets *o = pp->off;
	uint32_t state = 0, kind_shift = __builtin_ctz(o->unicode_kind_mask);
	uint64_t length = 0, data;
	unsigned int kind;
	uint8_t *raw = NULL;
	char *out = NULL;
	size_t i, n = 0;
	int err;

	if (!addr) {
		errno = EINVAL;
		return NULL;
	}
	err = mem_read_u32(pid, addr + o->unicode_state, &state);
	if (!err)
		err = mem_read_u64(pid, addr + o->unicode_length, &length);
	if (err) {
		errno = -err;
		return NULL;
	}
	/* Code object names are always compact strings; anything else means
	 * the pointer was not a str. */
	if (!(state & o->unicode_compact_mask)) {
		errno = EINVAL;
		return NULL;
	}
	kind = (state & o->unicode_kind_mask) >> kind_shift;
	if (kind != 1 && kind != 2 && kind != 4) {
		errno = EINVAL;
		return NULL;
	}
	if (length > max_chars)
		length = max_chars;
	data = addr +
	       ((state & o->unicode_ascii_mask) ? o->unicode_ascii_size : o->unicode_compact_size);
	raw = malloc(length * kind + 1);
	out = malloc(length * 4 + 1);
	if (!raw || !out) {
		errno = ENOMEM;
		goto fail;
	}
	err = mem_read(pid, data, raw, length * kind);
	if (err) {
		errno = -err;
		goto fail;
	}
	for (i = 0; i < length; i++) {
		uint32_t cp;

		if (kind == 1)
			cp = raw[i];
		else if (kind == 2)
			cp = raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		else
			memcpy(&cp, raw + 4 * i, 4);
		/* NUL would cut the C string short. */
		n += put_utf8(out + n, cp ? cp : 0xfffd);
	}
	out[n] = '\0';
	free(raw);
	return out;
fail:
	free(raw);
	free(out);
	return NULL;
}

static int read_bytes_obj(int pid, const struct py_offsets *o, uint64_t addr, uint8_t **buf,
			  size_t *len)
{
	int64_t size = 0;
	int err;

	if (!addr)
		return -EINVAL;
	err = mem_read(pid, addr + o->varobject_size, &size, sizeof(size));
	if (err)
		return err;
	if (size < 0 || size > MAX_TABLE_BYTES)
		return -E2BIG;
	*buf = malloc(size ? size : 1);
	if (!*buf)
		return -ENOMEM;
	err = mem_read(pid, addr + o->bytes_sval, *buf, size);
	if (err) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	*len = size;
	return 0;
}

static struct pycode *read_code(const struct py_proc *pp, uint64_t code, uint64_t tag)
{
	const struct py_offsets *o = pp->off;
	uint64_t fname = 0, name = 0, co_name = 0, table = 0;
	struct pycode *pc;
	int32_t first = 0;
	uint32_t flags = 0;
	int err;

	err = mem_read(pp->pid, code + o->code_firstlineno, &first, sizeof(first));
	if (!err)
		err = mem_read_u64(pp->pid, code + o->code_filename, &fname);
	if (!err)
		err = mem_read_u64(
			pp->pid,
			code + (o->code_qualname != PYOFF_NONE ? o->code_qualname : o->code_name),
			&name);
	if (!err)
		err = mem_read_u64(pp->pid, code + o->code_name, &co_name);
	if (!err)
		err = mem_read_u64(pp->pid, code + o->code_linetable, &table);
	if (!err)
		err = mem_read_u32(pp->pid, code + o->code_flags, &flags);
	if (err) {
		errno = -err;
		return NULL;
	}
	/* The object changed since the sample: not the code that ran. */
	if (pycode_tag((uint32_t)first, code_ident(fname, co_name)) != tag) {
		errno = ESTALE;
		return NULL;
	}
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return NULL;
	pc->firstlineno = first;
	pc->flags = flags;
	pc->fmt = linetable_format_for_minor(pp->minor);
	pc->filename = pystr_read(pp->pid, pp, fname, MAX_NAME_CHARS);
	pc->qualname = pystr_read(pp->pid, pp, name, MAX_NAME_CHARS);
	pc->memo = hmap__new(sizeof(int));
	err = read_bytes_obj(pp->pid, o, table, &pc->table, &pc->table_len);
	if (!pc->filename || !pc->qualname || !pc->memo || err) {
		pycode_free(pc);
		errno = err ? -err : EFAULT;
		return NULL;
	}
	return pc;
}

const struct pycode *pycode_cache__load(struct pycode_cache *c, const struct py_proc *pp,
					uint64_t space, uint64_t code, uint64_t tag)
{
	struct code_key k = { .space = space, .code = code, .tag = tag };
	struct pycode *pc;

	if (!c->map) {
		errno = ENOMEM;
		return NULL;
	}
	pc = hmap__get(c->map, &k);
	if (pc)
		return pc;
	pc = read_code(pp, code, tag);
	if (!pc)
		return NULL;
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
	if (hmap__put(c->map, &k, pc)) {
		pycode_free(pc);
		errno = ENOMEM;
		return NULL;
	}
	return pc;
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
