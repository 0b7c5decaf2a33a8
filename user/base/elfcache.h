/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Opened ELF files kept between lookups, keyed by (device, inode) so that
 * the same file mapped by several processes, or under several paths, is
 * opened once.  The cache holds a bounded number of files (each keeps a file
 * descriptor) and evicts the least recently used; a file still referenced
 * stays open until its last reference goes.  Not thread-safe.
 */
#ifndef ELFCACHE_H
#define ELFCACHE_H

#include <stddef.h>
#include <stdint.h>

struct cached_elf;
struct elf_cache;
struct elf_file;

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

#endif /* ELFCACHE_H */
