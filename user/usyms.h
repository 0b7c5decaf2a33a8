/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native symbols for the instruction pointers of one process.
 *
 * A usyms reads /proc/PID/maps and opens each mapped file the first time an
 * address in it is resolved, through /proc/PID/root/<path> so that it works
 * across mount namespaces, or /proc/PID/map_files/<start>-<end> for a file
 * deleted since it was mapped.  Opened files are kept in an elf_cache keyed
 * by (device, inode) that several usyms may share; the cache holds a bounded
 * number of files (each keeps a file descriptor) and evicts the least
 * recently used.  Neither object is thread-safe.
 */
#ifndef USYMS_H
#define USYMS_H

#include <stddef.h>
#include <stdint.h>

struct cached_elf;
struct elf_cache;
struct elf_file;
struct usyms;

struct elf_cache_opts {
	size_t max_files; /* 0: ELF_CACHE_DEFAULT_FILES */
};

#define ELF_CACHE_DEFAULT_FILES 64

struct elf_cache *elf_cache__new(const struct elf_cache_opts *opts);
/* Files still used by a usyms stay open until that usyms lets them go. */
void elf_cache__free(struct elf_cache *c);
size_t elf_cache__count(const struct elf_cache *c);
size_t elf_cache__hits(const struct elf_cache *c);
size_t elf_cache__evictions(const struct elf_cache *c);

/* The file with this identity (a mapping's device and inode), with a
 * reference for the caller (elf_cache__put), or NULL when not cached. */
struct cached_elf *elf_cache__find(struct elf_cache *c, uint32_t dev_major, uint32_t dev_minor,
				   uint64_t inode);
/* Caches elf (owned from now on, freed on failure) under this identity;
 * returns the caller's reference, or NULL. */
struct cached_elf *elf_cache__add(struct elf_cache *c, uint32_t dev_major, uint32_t dev_minor,
				  uint64_t inode, struct elf_file *elf);
struct elf_file *cached_elf__file(const struct cached_elf *ce);
/* Lets the reference go; the file stays while the cache or others hold it. */
void elf_cache__put(struct cached_elf *ce);

struct usyms_opts {
	/* Shared cache, which must outlive the usyms; NULL: a private one. */
	struct elf_cache *cache;
};

struct usym {
	const char *module; /* the mapping's path as /proc/PID/maps shows it */
	const char *name;   /* NULL when no function symbol covers the address */
	/*
	 * With a name: the offset from the function's start.  Without one: the
	 * file offset of the address in module (what "module+0x..." means).
	 */
	uint64_t offset;
};

/* Reads /proc/PID/maps; pid 0 is the calling process.  NULL and errno. */
struct usyms *usyms__new(int pid, const struct usyms_opts *opts);
void usyms__free(struct usyms *u);

/* Re-reads the maps (after a dlopen, say); 0 or -errno. */
int usyms__refresh(struct usyms *u);

/*
 * Fills out for addr: 0, or -ENOENT when no mapping holds addr.  The strings
 * stay valid until the next usyms__refresh() or usyms__free().
 */
int usyms__resolve(struct usyms *u, uint64_t addr, struct usym *out);

#endif /* USYMS_H */
