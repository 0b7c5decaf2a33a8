/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Code objects of profiled processes, read with process_vm_readv on first
 * sight and cached: file name, qualified name, first line and line table.
 * A cache entry is keyed by (address space, code address, co_firstlineno):
 * the line number read at sample time guards against the address being
 * reused by another code object.
 */
#ifndef PYCODE_H
#define PYCODE_H

#include <stddef.h>
#include <stdint.h>

#include "linetable.h"

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
};

struct pycode_cache;

struct pycode_cache *pycode_cache__new(size_t max_entries);
void pycode_cache__free(struct pycode_cache *c);

/* A cached entry or NULL; never reads memory. */
const struct pycode *pycode_cache__lookup(struct pycode_cache *c, uint64_t space, uint64_t code,
					  uint32_t tag);
/* The cached entry, or reads the code object from pp's process and caches
 * it.  NULL with errno set when it cannot be read. */
const struct pycode *pycode_cache__load(struct pycode_cache *c, const struct py_proc *pp,
					uint64_t space, uint64_t code, uint32_t tag);
/* Entries dropped because the cache was full. */
uint64_t pycode_cache__evictions(const struct pycode_cache *c);

/* Line of a byte offset (memoized); -1 when the table has none. */
int pycode__line(const struct pycode *pc, int offset);

/* Reads a str object of pid as UTF-8 (malloc'ed), at most max_chars code
 * points.  NULL with errno on failure. */
char *pystr_read(int pid, const struct py_proc *pp, uint64_t addr, size_t max_chars);

#endif /* PYCODE_H */
