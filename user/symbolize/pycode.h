/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Code objects of profiled processes, read with process_vm_readv on first
 * sight (or from the copy the probe on their deallocator made of them as
 * they were freed) and cached: file name, qualified name, first line and line table.
 * A cache entry is keyed by (address space, code address, tag), where tag is
 * what the sample read of the code object: co_firstlineno in the low 32 bits
 * and code_ident() of its co_filename and co_name pointers in the high 32
 * (pycode_tag()).  It guards against the address being reused by another
 * code object.
 */
#ifndef PYCODE_H
#define PYCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/linetable.h"

struct py_proc;

struct pycode {
	char *filename; /* UTF-8, as in co_filename */
	char *qualname; /* co_qualname (3.11+) or co_name */
	int firstlineno;
	uint32_t flags; /* co_flags */
	enum linetable_format fmt;
	uint8_t *table;
	size_t table_len;
	struct hmap *memo; /* byte offset -> line */
	bool copied;	   /* read from the copy made as it was freed */
	/* Its names as a user keeps them, under the user's key (see
	 * pycode__names). */
	uint64_t names_key;
	const char *names[2];
};

/* The names a user keeps for pc (its filename and qualname interned in a
 * profile, say) under a key of the user's (not 0): remembered with the
 * code object, so that each sample's frames need not look them up again.
 * false when pc holds none under that key. */
static inline bool pycode__names(const struct pycode *pc, uint64_t key, const char **filename,
				 const char **qualname)
{
	if (pc->names_key != key)
		return false;
	*filename = pc->names[0];
	*qualname = pc->names[1];
	return true;
}

/* Remembers them (the cache's entries keep what their users derive). */
void pycode__keep_names(const struct pycode *pc, uint64_t key, const char *filename,
			const char *qualname);

struct pycode_cache;

static inline uint64_t pycode_tag(uint32_t firstlineno, uint32_t ident)
{
	return (uint64_t)ident << 32 | firstlineno;
}

struct pycode_cache *pycode_cache__new(size_t max_entries);
void pycode_cache__free(struct pycode_cache *c);

/* A cached entry or NULL; never reads memory. */
const struct pycode *pycode_cache__lookup(struct pycode_cache *c, uint64_t space, uint64_t code,
					  uint64_t tag);
/* The cached entry, or reads the code object from pp's process and caches
 * it.  NULL with errno set when it cannot be read. */
const struct pycode *pycode_cache__load(struct pycode_cache *c, const struct py_proc *pp,
					uint64_t space, uint64_t code, uint64_t tag);
/* Caches a code object from what the probe on its deallocator copied of it
 * (a record of size bytes), under the tag it had.  0, or -errno when the
 * copy does not hold it whole (-EFAULT) or is not one. */
struct code_snap_record;
int pycode_cache__put_snap(struct pycode_cache *c, const struct py_proc *pp, uint64_t space,
			   const struct code_snap_record *r, size_t size);
/* Entries dropped because the cache was full. */
uint64_t pycode_cache__evictions(const struct pycode_cache *c);

/* Line of a byte offset (memoized); -1 when the table has none. */
int pycode__line(const struct pycode *pc, int offset);

/* Reads a str object of pid as UTF-8 (malloc'ed), at most max_chars code
 * points.  NULL with errno on failure. */
char *pystr_read(int pid, const struct py_proc *pp, uint64_t addr, size_t max_chars);

#endif /* PYCODE_H */
