/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /proc/PID/maps, parsed into a sorted array of mappings.
 *
 * The text is treated as untrusted: a line that does not parse is skipped and
 * counted, lines may be of any length, and overlapping ranges are dropped so
 * that procmaps__find() can binary-search.
 */
#ifndef PROCMAPS_H
#define PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct map_entry {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint8_t r, w, x, p; /* p: private (copy-on-write), 0 for shared */
	/*
	 * "" for an anonymous mapping, "[heap]" and the like for pseudo
	 * mappings.  May contain spaces.  A " (deleted)" suffix is kept as the
	 * kernel wrote it and flagged in 'deleted'.
	 */
	const char *path;
	uint8_t deleted;
};

struct procmaps;

/* Parses maps text from f.  Returns NULL and sets errno on a read error. */
struct procmaps *procmaps__parse(FILE *f);
/* Reads /proc/PID/maps; pid 0 means the calling process. */
struct procmaps *procmaps__load(int pid);
void procmaps__free(struct procmaps *m);

size_t procmaps__count(const struct procmaps *m);
/* Lines that did not parse, plus ranges dropped for overlapping another. */
size_t procmaps__skipped(const struct procmaps *m);
/* Entries are sorted by start address; NULL when i is out of range. */
const struct map_entry *procmaps__get(const struct procmaps *m, size_t i);
/* The mapping containing addr, or NULL. */
const struct map_entry *procmaps__find(const struct procmaps *m, uint64_t addr);

/*
 * In buf, the name under which this process opens the file that pid calls
 * path (a mapping's path, absolute): through pid's root, so that a file of
 * another mount namespace is that namespace's.  0, or -ENAMETOOLONG.
 */
int procmaps__file_in_root(char *buf, size_t n, int pid, const char *path);

#endif /* PROCMAPS_H */
