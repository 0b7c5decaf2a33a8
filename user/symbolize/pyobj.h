/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Python objects of another process, read from outside with
 * process_vm_readv: a type's name and flags, a str compared or read, a dict
 * looked up by a str key, an instance attribute (instance dict, or the
 * managed dicts and inline values of 3.11+), a set's members, a weak
 * reference's target, a small int.  Layouts come from the version's table
 * (pyoffsets/); the dict keys object of 3.9 and 3.10, which no header
 * publishes, from a measurement made in the interpreter (asyncprobe.h).
 *
 * Everything read is untrusted: every count is bounded, every pointer is
 * checked for being a user address before it is followed, and a budget of
 * reads per use stops a reader that a corrupt object would send round in
 * circles.  Functions return 0 or -errno: -ENOENT (no such key or
 * attribute), -EINVAL (not the object expected), -ENOTSUP (a layout this
 * reader does not know), -E2BIG (the budget ran out), -EFAULT / -ESRCH
 * (read failed, process gone).
 */
#ifndef PYOBJ_H
#define PYOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct py_proc;
struct hmap;

/* PyDictKeysObject of 3.9 and 3.10 (Objects/dict-common.h, private):
 * offsets of dk_size, dk_nentries, dk_indices and the entry layout. */
struct pyobj_dictkeys {
	bool known;
	uint16_t size, nentries, indices;
	uint16_t entry_size, entry_key, entry_value;
};

struct pyobj {
	const struct py_proc *pp;
	struct pyobj_dictkeys keys; /* <= 3.10 only */
	uint64_t reads;		    /* reads made, for the cost */
	uint64_t budget;	    /* reads left before -E2BIG */
	struct hmap *types;	    /* type address -> struct pytype */
	struct hmap *ixs;	    /* (keys object, name) -> where it was found */
};

struct pytype {
	char name[64];	      /* tp_name, cut */
	uint64_t flags;	      /* tp_flags */
	int64_t dictoffset;   /* tp_dictoffset */
	int64_t basicsize;    /* tp_basicsize */
	uint64_t cached_keys; /* ht_cached_keys (heap types) */
	uint64_t base;	      /* tp_base */
};

int pyobj__init(struct pyobj *po, const struct py_proc *pp);
void pyobj__fini(struct pyobj *po);

/* True for an address a user-space object can have. */
static inline bool pyobj__ptr_ok(uint64_t a)
{
	return a >= 4096 && a < (1ULL << 47) && !(a & 7);
}

int pyobj__read(struct pyobj *po, uint64_t addr, void *buf, size_t len);
int pyobj__u64(struct pyobj *po, uint64_t addr, uint64_t *v);
/* The type object at tp (cached by address). */
int pyobj__type_at(struct pyobj *po, uint64_t tp, const struct pytype **t);
/* The type of obj (cached by address). */
int pyobj__type(struct pyobj *po, uint64_t obj, const struct pytype **t);
/* True when t, or one of its bases (up to 8), is named name. */
bool pyobj__type_is_a(struct pyobj *po, const struct pytype *t, const char *name);
/* True when obj's type, or one of its bases (up to 8), is named name. */
bool pyobj__is_a(struct pyobj *po, uint64_t obj, const char *name);
/* 1 when the str at addr equals s (ASCII), 0 when not, -errno. */
int pyobj__str_eq(struct pyobj *po, uint64_t addr, const char *s);
/* The str at addr as UTF-8 into buf (cut at n - 1 bytes). */
int pyobj__str(struct pyobj *po, uint64_t addr, char *buf, size_t n);
/* A small int's value (|v| < 2^60). */
int pyobj__long(struct pyobj *po, uint64_t addr, int64_t *v);
int pyobj__dict_get(struct pyobj *po, uint64_t dict, const char *key, uint64_t *val);
/* obj.name from its instance dict (not class attributes, not slots). */
int pyobj__attr(struct pyobj *po, uint64_t obj, const char *name, uint64_t *val);
/* The same, obj's type known (no read of it). */
int pyobj__attr_of(struct pyobj *po, uint64_t obj, const struct pytype *t, const char *name,
		   uint64_t *val);
/* The members of a set (or frozenset): at most max into out, *n of them;
 * -E2BIG when there were more (out holds the first max). */
int pyobj__set_members(struct pyobj *po, uint64_t set, uint64_t *out, size_t max, size_t *n);
/* A weak reference's target; -ENOENT when it is dead. */
int pyobj__weakref_target(struct pyobj *po, uint64_t ref, uint64_t *obj);

#endif /* PYOBJ_H */
