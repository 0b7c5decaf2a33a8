// SPDX-License-Identifier: BSD-2-Clause
/*
 * Opened ELF files shared by everything that reads the files a process maps,
 * keyed by (device, inode), least recently used evicted first.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/elfcache.h"
#include "base/elfsym.h"

/* One opened file, shared by the cache and those that hold it. */
struct cached_elf {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	struct elf_file *elf;
	int refs;
	uint64_t last_use;
};

struct elf_cache {
	struct cached_elf **slots;
	size_t max, count;
	uint64_t tick;
	size_t hits, evictions;
};

void elf_cache__put(struct cached_elf *ce)
{
	if (!ce || --ce->refs > 0)
		return;
	elf_file__free(ce->elf);
	free(ce);
}

struct elf_cache *elf_cache__new(const struct elf_cache_opts *opts)
{
	struct elf_cache *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max = opts && opts->max_files ? opts->max_files : ELF_CACHE_DEFAULT_FILES;
	c->slots = calloc(c->max, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void elf_cache__free(struct elf_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->count; i++)
		elf_cache__put(c->slots[i]);
	free(c->slots);
	free(c);
}

size_t elf_cache__count(const struct elf_cache *c)
{
	return c->count;
}

size_t elf_cache__hits(const struct elf_cache *c)
{
	return c->hits;
}

size_t elf_cache__evictions(const struct elf_cache *c)
{
	return c->evictions;
}

/* Returns a new reference to the file with this key, or NULL. */
struct cached_elf *elf_cache__find(struct elf_cache *c, uint32_t dev_major, uint32_t dev_minor,
				   uint64_t inode)
{
	struct cached_elf *ce;
	size_t i;

	for (i = 0; i < c->count; i++) {
		ce = c->slots[i];
		if (ce->inode != inode || ce->dev_major != dev_major || ce->dev_minor != dev_minor)
			continue;
		ce->refs++;
		ce->last_use = ++c->tick;
		c->hits++;
		return ce;
	}
	return NULL;
}

/* Drops the least recently used file from the table; users keep theirs. */
static void cache_evict_one(struct elf_cache *c)
{
	size_t i, lru = 0;

	for (i = 1; i < c->count; i++) {
		if (c->slots[i]->last_use < c->slots[lru]->last_use)
			lru = i;
	}
	elf_cache__put(c->slots[lru]);
	c->slots[lru] = c->slots[--c->count];
	c->evictions++;
}

struct cached_elf *elf_cache__add(struct elf_cache *c, uint32_t dev_major, uint32_t dev_minor,
				  uint64_t inode, struct elf_file *elf)
{
	struct cached_elf *ce;

	ce = calloc(1, sizeof(*ce));
	if (!ce) {
		elf_file__free(elf);
		return NULL;
	}
	ce->dev_major = dev_major;
	ce->dev_minor = dev_minor;
	ce->inode = inode;
	ce->elf = elf;
	ce->refs = 2; /* the table's and the caller's */
	ce->last_use = ++c->tick;
	if (c->count == c->max)
		cache_evict_one(c);
	c->slots[c->count++] = ce;
	return ce;
}

struct elf_file *cached_elf__file(const struct cached_elf *ce)
{
	return ce->elf;
}
