/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native symbols for the instruction pointers of one process.
 *
 * A usyms reads /proc/PID/maps and opens each mapped file the first time an
 * address in it is resolved, through /proc/PID/root/<path> so that it works
 * across mount namespaces, or /proc/PID/map_files/<start>-<end> for a file
 * deleted since it was mapped.  Opened files are kept in an elf_cache
 * (elfcache.h) that several usyms may share.  Not thread-safe.
 */
#ifndef USYMS_H
#define USYMS_H

#include <stddef.h>
#include <stdint.h>

struct elf_cache;
struct elf_file;
struct usyms;

struct usyms_opts {
	/* Shared cache, which must outlive the usyms; NULL: a private one. */
	struct elf_cache *cache;
};

struct usym {
	const char *module; /* the mapping's path as /proc/PID/maps shows it */
	const char *name;   /* NULL when no function symbol covers the address */
	/*
	 * With a name: the offset from the function's start.  Without one: the
	 * file offset in module (what "module+0x..." means) of the start of the
	 * function holding the address, where the file's unwind data tells it
	 * (.eh_frame_hdr), else of the address itself.
	 */
	uint64_t offset;
};

/* Reads /proc/PID/maps; pid 0 is the calling process.  NULL and errno. */
struct usyms *usyms__new(int pid, const struct usyms_opts *opts);
void usyms__free(struct usyms *u);

/* Re-reads the maps (after a dlopen, say); 0 or -errno.  Maps read empty (a
 * process exiting) leave the ones read before: -ESRCH. */
int usyms__refresh(struct usyms *u);
/* For an address of no file known, seen at ts_ns (CLOCK_MONOTONIC): the
 * maps again, unless they were read after ts_ns (they show what was mapped
 * then, and the address is in no file: JIT code, say) or less than
 * USYMS_REFRESH_NS ago (-EAGAIN then).  Every user of one usyms shares the
 * one pace: a library loaded since the last read is found by the first
 * sample in it. */
#define USYMS_REFRESH_NS 20000000ULL
int usyms__refresh_for(struct usyms *u, uint64_t ts_ns);
/* Counts the reads of the maps that took: a user that keeps state per file
 * (unwind.c) looks again when it moved. */
unsigned int usyms__gen(const struct usyms *u);

/*
 * Fills out for addr: 0, or -ENOENT when no mapping holds addr.  The strings
 * stay valid until the next usyms__refresh() or usyms__free().
 */
int usyms__resolve(struct usyms *u, uint64_t addr, struct usym *out);

/* The first mapping the maps name `name` ("[vdso]", say): 0, or -ENOENT. */
int usyms__mapping(const struct usyms *u, const char *name, uint64_t *start, uint64_t *end);

/* A file the process maps code from (usyms__each_text). */
struct usyms_text {
	const char *module; /* the path the process's maps show */
	const char *path;   /* the name this process opens it under */
	/* Its load bias: a link-time address plus the bias is where it is in
	 * the process. */
	uint64_t bias;
	const struct elf_file *elf; /* valid during the call */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
};

/* Calls fn once for each file the process maps code from: the first
 * non-zero return, or 0. */
int usyms__each_text(struct usyms *u, int (*fn)(void *arg, const struct usyms_text *t), void *arg);

#endif /* USYMS_H */
