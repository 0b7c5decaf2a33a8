// SPDX-License-Identifier: BSD-2-Clause
/* Python objects of another process, read from outside (see pyobj.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "base/memread.h"
#include "symbolize/pycode.h"
#include "symbolize/pyobj.h"
#include "pyoffsets.h"
#include "target/python.h"

/* Bounds on what a hostile or torn object can make us read. */
#define MAX_DICT_ENTRIES 65536
#define MAX_SET_SLOTS (1u << 20)
#define MAX_KEY_LEN 256
#define TYPE_READ 320 /* bytes of a type object read at once (tp_dictoffset < 300) */
#define MAX_TYPES 4096

static void ix_cache_clear(struct pyobj *po)
{
	size_t it = 0;
	void *v;

	if (!po->ixs)
		return;
	while (hmap__next(po->ixs, &it, NULL, &v))
		free(v);
	hmap__free(po->ixs);
	po->ixs = NULL;
}

int pyobj__init(struct pyobj *po, const struct py_proc *pp)
{
	memset(po, 0, sizeof(*po));
	po->pp = pp;
	po->budget = UINT64_MAX;
	po->types = hmap__new(sizeof(uint64_t));
	return po->types ? 0 : -ENOMEM;
}

void pyobj__fini(struct pyobj *po)
{
	size_t it = 0;
	void *v;

	if (!po->types)
		return;
	while (hmap__next(po->types, &it, NULL, &v))
		free(v);
	hmap__free(po->types);
	po->types = NULL;
	ix_cache_clear(po);
}

int pyobj__read(struct pyobj *po, uint64_t addr, void *buf, size_t len)
{
	if (!po->budget)
		return -E2BIG;
	po->budget--;
	po->reads++;
	if (addr < 4096 || addr >= (1ULL << 47))
		return -EFAULT;
	return mem_read(po->pp->pid, addr, buf, len);
}

int pyobj__u64(struct pyobj *po, uint64_t addr, uint64_t *v)
{
	return pyobj__read(po, addr, v, sizeof(*v));
}

static uint64_t word(const uint8_t *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* The type object at tp, read once and cached by address. */
int pyobj__type_at(struct pyobj *po, uint64_t tp, const struct pytype **out)
{
	const struct py_offsets *o = po->pp->off;
	uint8_t buf[TYPE_READ];
	struct pytype *t;
	uint64_t name;
	size_t i;
	int err;

	if (!pyobj__ptr_ok(tp))
		return -EINVAL;
	t = hmap__get(po->types, &tp);
	if (t) {
		*out = t;
		return 0;
	}
	err = pyobj__read(po, tp, buf, sizeof(buf));
	if (err)
		return err;
	if (hmap__count(po->types) >= MAX_TYPES) {
		/* A process making types without end: start the cache over. */
		size_t it = 0;
		void *v;

		while (hmap__next(po->types, &it, NULL, &v))
			free(v);
		hmap__free(po->types);
		po->types = hmap__new(sizeof(uint64_t));
		if (!po->types)
			return -ENOMEM;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	name = word(buf, o->type_name);
	t->flags = word(buf, o->type_flags);
	t->dictoffset = (int64_t)word(buf, o->type_dictoffset);
	t->basicsize = (int64_t)word(buf, o->type_basicsize);
	t->base = word(buf, o->type_base);
	if ((t->flags & o->tpflags_heaptype) &&
	    pyobj__u64(po, tp + o->heaptype_cached_keys, &t->cached_keys))
		t->cached_keys = 0;
	/* tp_name is a C string: one read, or byte by byte when it sits near
	 * the end of a mapping. */
	if (pyobj__read(po, name, t->name, sizeof(t->name) - 1)) {
		for (i = 0; i < sizeof(t->name) - 1; i++) {
			if (pyobj__read(po, name + i, &t->name[i], 1) || !t->name[i])
				break;
		}
		t->name[i] = 0;
	}
	if (hmap__put(po->types, &tp, t)) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

int pyobj__type(struct pyobj *po, uint64_t obj, const struct pytype **out)
{
	const struct py_offsets *o = po->pp->off;
	uint64_t tp;
	int err;

	if (!pyobj__ptr_ok(obj))
		return -EINVAL;
	err = pyobj__u64(po, obj + o->object_type, &tp);
	if (err)
		return err;
	return pyobj__type_at(po, tp, out);
}

bool pyobj__type_is_a(struct pyobj *po, const struct pytype *t, const char *name)
{
	int depth;

	for (depth = 0; t && depth < 8; depth++) {
		if (!strcmp(t->name, name))
			return true;
		if (!t->base || pyobj__type_at(po, t->base, &t))
			return false;
	}
	return false;
}

bool pyobj__is_a(struct pyobj *po, uint64_t obj, const char *name)
{
	const struct pytype *t;

	return !pyobj__type(po, obj, &t) && pyobj__type_is_a(po, t, name);
}

/* The header and the first bytes of a str: its length, and where and in
 * which width its characters are. */
struct str_hdr {
	uint64_t length;
	unsigned int kind; /* 1, 2, 4 bytes per character */
	uint64_t data;
};

static int str_header(struct pyobj *po, uint64_t addr, struct str_hdr *h)
{
	const struct py_offsets *o = po->pp->off;
	uint8_t buf[64];
	uint32_t state;
	int err;

	if (!pyobj__ptr_ok(addr))
		return -EINVAL;
	err = pyobj__read(po, addr, buf, o->unicode_state + sizeof(state));
	if (err)
		return err;
	memcpy(&state, buf + o->unicode_state, sizeof(state));
	h->length = word(buf, o->unicode_length);
	if (!(state & o->unicode_compact_mask))
		return -EINVAL;
	h->kind = (state & o->unicode_kind_mask) >> __builtin_ctz(o->unicode_kind_mask);
	if (h->kind != 1 && h->kind != 2 && h->kind != 4)
		return -EINVAL;
	h->data = addr + ((state & o->unicode_ascii_mask) ? o->unicode_ascii_size
							  : o->unicode_compact_size);
	return 0;
}

int pyobj__str_eq(struct pyobj *po, uint64_t addr, const char *s)
{
	size_t n = strlen(s);
	char buf[MAX_KEY_LEN];
	struct str_hdr h;
	int err;

	if (n >= sizeof(buf))
		return -EINVAL;
	err = str_header(po, addr, &h);
	if (err)
		return err;
	if (h.kind != 1 || h.length != n)
		return 0;
	err = pyobj__read(po, h.data, buf, n);
	if (err)
		return err;
	return !memcmp(buf, s, n);
}

int pyobj__str(struct pyobj *po, uint64_t addr, char *buf, size_t n)
{
	char *s;

	if (!n)
		return -EINVAL;
	if (!po->budget)
		return -E2BIG;
	po->budget--;
	po->reads++;
	s = pystr_read(po->pp->pid, po->pp, addr, n);
	if (!s)
		return errno ? -errno : -EFAULT;
	strncpy(buf, s, n - 1);
	buf[n - 1] = 0;
	free(s);
	return 0;
}

int pyobj__long(struct pyobj *po, uint64_t addr, int64_t *v)
{
	const struct py_offsets *o = po->pp->off;
	uint8_t buf[48];
	uint64_t size, ndigits, d0, d1;
	uint32_t digits[2];
	bool neg;
	int err;

	if (!pyobj__is_a(po, addr, "int") && !pyobj__is_a(po, addr, "bool"))
		return -EINVAL;
	err = pyobj__read(po, addr, buf, o->long_digits + sizeof(digits));
	if (err)
		return err;
	size = word(buf, o->long_size);
	memcpy(digits, buf + o->long_digits, sizeof(digits));
	if (po->pp->minor >= 12) {
		/* lv_tag: digit count above 3 bits, sign in the low two (0
		 * positive, 1 zero, 2 negative). */
		ndigits = size >> 3;
		neg = (size & 3) == 2;
	} else {
		neg = (int64_t)size < 0;
		ndigits = neg ? (uint64_t)(-(int64_t)size) : size;
	}
	if (ndigits > 2)
		return -ERANGE;
	d0 = ndigits > 0 ? digits[0] : 0;
	d1 = ndigits > 1 ? digits[1] : 0;
	*v = (int64_t)(d0 | d1 << o->long_shift);
	if (neg)
		*v = -*v;
	return 0;
}

/* ---- dicts ---- */

/* Where a keys object's entries are, how many, and their shape. */
struct keys_view {
	uint64_t entries;
	uint64_t n;
	unsigned int esize, ekey, evalue;
};

static int keys_view(struct pyobj *po, uint64_t keys, struct keys_view *kv)
{
	const struct py_offsets *o = po->pp->off;
	uint8_t buf[64];
	int err;

	if (!pyobj__ptr_ok(keys))
		return -EINVAL;
	if (po->pp->minor >= 11) {
		uint8_t log2_size, log2_index, kind;

		err = pyobj__read(po, keys, buf, o->keys_indices);
		if (err)
			return err;
		log2_size = buf[o->keys_log2_size];
		log2_index = buf[o->keys_log2_index_bytes];
		kind = buf[o->keys_kind];
		if (log2_size > 30 || log2_index > 40)
			return -EINVAL;
		kv->n = word(buf, o->keys_nentries);
		kv->entries = keys + o->keys_indices + (1ULL << log2_index);
		if (kind == o->keys_kind_general) {
			kv->esize = o->dict_entry_size;
			kv->ekey = o->dict_entry_key;
			kv->evalue = o->dict_entry_value;
		} else {
			kv->esize = o->dict_uentry_size;
			kv->ekey = o->dict_uentry_key;
			kv->evalue = o->dict_uentry_value;
		}
	} else {
		const struct pyobj_dictkeys *k = &po->keys;
		uint64_t size, ix;

		if (!k->known)
			return -ENOTSUP;
		err = pyobj__read(po, keys, buf, k->indices);
		if (err)
			return err;
		size = word(buf, k->size);
		kv->n = word(buf, k->nentries);
		if (!size || size & (size - 1) || size > (1ULL << 30))
			return -EINVAL;
		ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		kv->entries = keys + k->indices + size * ix;
		kv->esize = k->entry_size;
		kv->ekey = k->entry_key;
		kv->evalue = k->entry_value;
	}
	if (kv->n > MAX_DICT_ENTRIES)
		return -E2BIG;
	return 0;
}

/* Where a key was found in a keys object: the next lookup reads that one
 * entry and checks it still holds the same key object. */
struct ix_key {
	uint64_t keys;
	uint64_t name_hash;
};

struct ix_val {
	int ix;
	uint64_t key_obj;
};

#define MAX_IX_CACHE 4096

/* The index of key among the entries (its entry's bytes in entry, esize of
 * them), -ENOENT, or -errno. */
static int keys_find(struct pyobj *po, uint64_t keys, const struct keys_view *kv, const char *key,
		     uint8_t *entry)
{
	struct ix_key ik = { keys, hash_bytes(key, strlen(key)) };
	struct ix_val *iv = po->ixs ? hmap__get(po->ixs, &ik) : NULL;
	uint8_t *e;
	uint64_t i;
	int err;

	if (!kv->n || kv->esize > 64)
		return -ENOENT;
	if (iv && (uint64_t)iv->ix < kv->n &&
	    !pyobj__read(po, kv->entries + (uint64_t)iv->ix * kv->esize, entry, kv->esize) &&
	    word(entry, kv->ekey) == iv->key_obj)
		return iv->ix;
	e = malloc(kv->n * kv->esize);
	if (!e)
		return -ENOMEM;
	err = pyobj__read(po, kv->entries, e, kv->n * kv->esize);
	if (err) {
		free(e);
		return err;
	}
	for (i = 0; i < kv->n; i++) {
		uint64_t k = word(e, i * kv->esize + kv->ekey);

		if (!pyobj__ptr_ok(k))
			continue;
		err = pyobj__str_eq(po, k, key);
		if (err == 1) {
			memcpy(entry, e + i * kv->esize, kv->esize);
			free(e);
			if (!po->ixs || hmap__count(po->ixs) >= MAX_IX_CACHE) {
				ix_cache_clear(po);
				po->ixs = hmap__new(sizeof(struct ix_key));
			}
			iv = po->ixs ? malloc(sizeof(*iv)) : NULL;
			if (iv) {
				*iv = (struct ix_val){ (int)i, k };
				if (hmap__put(po->ixs, &ik, iv))
					free(iv);
			}
			return (int)i;
		}
		if (err == -E2BIG || err == -ESRCH)
			break;
	}
	free(e);
	return err == -E2BIG || err == -ESRCH ? err : -ENOENT;
}

/* values[ix] of a split dict's values array (3.11+: PyDictValues). */
static int split_value(struct pyobj *po, uint64_t values, int ix, uint64_t *val)
{
	const struct py_offsets *o = po->pp->off;
	uint64_t base = values + (po->pp->minor >= 11 ? o->values_values : 0);

	return pyobj__u64(po, base + 8ULL * ix, val);
}

int pyobj__dict_get(struct pyobj *po, uint64_t dict, const char *key, uint64_t *val)
{
	const struct py_offsets *o = po->pp->off;
	struct keys_view kv;
	uint64_t keys, values;
	uint8_t e[64];
	int ix, err;

	if (!pyobj__is_a(po, dict, "dict"))
		return -EINVAL;
	err = pyobj__u64(po, dict + o->dict_keys, &keys);
	if (!err)
		err = pyobj__u64(po, dict + o->dict_values, &values);
	if (!err)
		err = keys_view(po, keys, &kv);
	if (err)
		return err;
	ix = keys_find(po, keys, &kv, key, e);
	if (ix < 0)
		return ix;
	if (values)
		err = split_value(po, values, ix, val);
	else
		*val = word(e, kv.evalue);
	if (err)
		return err;
	return *val ? 0 : -ENOENT;
}

/* obj.name from values laid out by its type's shared keys. */
static int shared_value(struct pyobj *po, const struct pytype *t, uint64_t values, const char *name,
			uint64_t *val)
{
	struct keys_view kv;
	uint8_t e[64];
	int ix, err;

	err = keys_view(po, t->cached_keys, &kv);
	if (err)
		return err;
	ix = keys_find(po, t->cached_keys, &kv, name, e);
	if (ix < 0)
		return ix;
	err = split_value(po, values, ix, val);
	if (err)
		return err;
	return *val ? 0 : -ENOENT;
}

int pyobj__attr(struct pyobj *po, uint64_t obj, const char *name, uint64_t *val)
{
	const struct pytype *t;
	int err = pyobj__type(po, obj, &t);

	return err ? err : pyobj__attr_of(po, obj, t, name, val);
}

int pyobj__attr_of(struct pyobj *po, uint64_t obj, const struct pytype *type, const char *name,
		   uint64_t *val)
{
	const struct py_offsets *o = po->pp->off;
	const struct pytype tcopy = *type, *t = &tcopy;
	uint64_t w, dict = 0;
	int err;

	if (o->tpflags_managed_dict && (t->flags & o->tpflags_managed_dict)) {
		if (po->pp->minor >= 13) {
			err = pyobj__u64(po, obj + o->managed_dict_off, &dict);
			if (err)
				return err;
			if (!dict && (t->flags & o->tpflags_inline_values)) {
				uint8_t valid;
				uint64_t values = obj + (uint64_t)t->basicsize;

				err = pyobj__read(po, values + o->values_valid, &valid, 1);
				if (err)
					return err;
				if (!valid)
					return -ENOENT;
				return shared_value(po, t, values, name, val);
			}
		} else if (po->pp->minor == 12) {
			/* One word: a dict, or values - 1 (tagged by its low bit). */
			err = pyobj__u64(po, obj + o->managed_dict_off, &w);
			if (err)
				return err;
			if (w & 1)
				return shared_value(po, t, w + 1, name, val);
			dict = w;
		} else {
			err = pyobj__u64(po, obj + o->managed_values_off, &w);
			if (err)
				return err;
			if (w)
				return shared_value(po, t, w, name, val);
			err = pyobj__u64(po, obj + o->managed_dict_off, &dict);
			if (err)
				return err;
		}
	} else if (t->dictoffset > 0 && t->dictoffset < 4096) {
		err = pyobj__u64(po, obj + (uint64_t)t->dictoffset, &dict);
		if (err)
			return err;
	} else {
		return t->dictoffset ? -ENOTSUP : -ENOENT;
	}
	if (!dict)
		return -ENOENT;
	return pyobj__dict_get(po, dict, name, val);
}

int pyobj__set_members(struct pyobj *po, uint64_t set, uint64_t *out, size_t max, size_t *n)
{
	const struct py_offsets *o = po->pp->off;
	uint64_t mask, table, slots, i;
	uint8_t *tab;
	int err;

	*n = 0;
	if (!pyobj__is_a(po, set, "set") && !pyobj__is_a(po, set, "frozenset"))
		return -EINVAL;
	err = pyobj__u64(po, set + o->set_mask, &mask);
	if (!err)
		err = pyobj__u64(po, set + o->set_table, &table);
	if (err)
		return err;
	slots = mask + 1;
	if (!slots || slots & mask || slots > MAX_SET_SLOTS || !pyobj__ptr_ok(table))
		return -EINVAL;
	tab = malloc(slots * o->setentry_size);
	if (!tab)
		return -ENOMEM;
	err = pyobj__read(po, table, tab, slots * o->setentry_size);
	for (i = 0; !err && i < slots; i++) {
		uint64_t key = word(tab, i * o->setentry_size + o->setentry_key);

		/* Empty slots are NULL; removed ones hold the dummy, which the
		 * caller's type check turns away. */
		if (!pyobj__ptr_ok(key))
			continue;
		if (*n == max) {
			err = -E2BIG;
			break;
		}
		out[(*n)++] = key;
	}
	free(tab);
	return err;
}

int pyobj__weakref_target(struct pyobj *po, uint64_t ref, uint64_t *obj)
{
	const struct py_offsets *o = po->pp->off;
	const struct pytype *t;
	int err;

	/* tp_name "weakref" (3.9), "weakref.ReferenceType" (3.10+) */
	if (!pyobj__is_a(po, ref, "weakref.ReferenceType") && !pyobj__is_a(po, ref, "weakref"))
		return -EINVAL;
	err = pyobj__u64(po, ref + o->weakref_object, obj);
	if (err)
		return err;
	/* A dead reference points at None. */
	if (!pyobj__ptr_ok(*obj) || pyobj__type(po, *obj, &t) || !strcmp(t->name, "NoneType"))
		return -ENOENT;
	return 0;
}
