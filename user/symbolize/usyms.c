// SPDX-License-Identifier: BSD-2-Clause
/*
 * Native symbolization of one process's addresses: /proc/PID/maps finds the
 * mapping, the mapping's file offset finds the link-time address through the
 * file's PT_LOADs, and the file's function symbols name it.  Working from the
 * file offset of each mapping, rather than one bias per path, keeps a library
 * loaded twice (dlmopen) right.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/elfcache.h"
#include "base/elfsym.h"
#include "base/procmaps.h"
#include "symbolize/usyms.h"

enum mod_state {
	MOD_UNTRIED,
	MOD_OK,
	MOD_FAILED
};

/* A file mapped by the process; several mappings share one. */
struct umod {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	enum mod_state state;
	bool used;
	struct cached_elf *ce;
};

struct usyms {
	char proc[32]; /* "/proc/PID" or "/proc/self" */
	int pid;
	struct procmaps *maps;
	struct umod **entry_mod; /* per maps entry; NULL for anonymous ones */
	struct umod **mods;
	size_t nmods, capmods;
	struct elf_cache *cache;
	bool own_cache;
	uint64_t tried_ns; /* the last read of the maps (usyms__refresh_for) */
	unsigned int gen;  /* maps read so far */
};

static bool is_file_backed(const struct map_entry *e)
{
	return e->inode && e->path[0] == '/';
}

static struct elf_file *open_mapped_file(const struct usyms *u, const struct map_entry *e)
{
	struct elf_file *elf = NULL;
	char *path;

	/*
	 * A deleted file's path may name a newer file by now (a package
	 * upgrade renames over it), so only map_files is trusted for it.
	 */
	if (!e->deleted && asprintf(&path, "%s/root%s", u->proc, e->path) >= 0) {
		elf = elf_file__open(path);
		free(path);
	}
	if (!elf &&
	    asprintf(&path, "%s/map_files/%" PRIx64 "-%" PRIx64, u->proc, e->start, e->end) >= 0) {
		elf = elf_file__open(path);
		free(path);
	}
	return elf;
}

static struct elf_file *mod_elf(struct usyms *u, struct umod *m, const struct map_entry *e)
{
	struct elf_file *elf;

	if (m->state == MOD_UNTRIED) {
		m->ce = elf_cache__find(u->cache, m->dev_major, m->dev_minor, m->inode);
		if (!m->ce) {
			elf = open_mapped_file(u, e);
			if (elf)
				m->ce = elf_cache__add(u->cache, m->dev_major, m->dev_minor,
						       m->inode, elf);
		}
		m->state = m->ce ? MOD_OK : MOD_FAILED;
	}
	return m->state == MOD_OK ? cached_elf__file(m->ce) : NULL;
}

static bool mod_matches(const struct umod *m, const struct map_entry *e)
{
	return m->inode == e->inode && m->dev_major == e->dev_major && m->dev_minor == e->dev_minor;
}

static struct umod *find_or_add_mod(struct usyms *u, const struct map_entry *e, struct umod *hint)
{
	struct umod *m, **n;
	size_t i;

	/* A file's mappings are usually adjacent: try the previous one first. */
	if (hint && mod_matches(hint, e))
		return hint;
	for (i = 0; i < u->nmods; i++) {
		if (mod_matches(u->mods[i], e))
			return u->mods[i];
	}
	if (u->nmods == u->capmods) {
		size_t cap = u->capmods ? u->capmods * 2 : 32;

		n = reallocarray(u->mods, cap, sizeof(*n));
		if (!n)
			return NULL;
		u->mods = n;
		u->capmods = cap;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->dev_major = e->dev_major;
	m->dev_minor = e->dev_minor;
	m->inode = e->inode;
	u->mods[u->nmods++] = m;
	return m;
}

/* Frees the modules that no mapping uses any more. */
static void prune_mods(struct usyms *u)
{
	size_t i, kept = 0;

	for (i = 0; i < u->nmods; i++) {
		if (u->mods[i]->used) {
			u->mods[kept++] = u->mods[i];
			continue;
		}
		elf_cache__put(u->mods[i]->ce);
		free(u->mods[i]);
	}
	u->nmods = kept;
}

int usyms__refresh(struct usyms *u)
{
	const struct map_entry *e;
	struct umod **entry_mod, *m = NULL;
	struct procmaps *maps;
	size_t i, n;
	int err = 0;

	u->tried_ns = mono_ns();
	maps = procmaps__load(u->pid);
	if (!maps)
		return -errno;
	n = procmaps__count(maps);
	/* A process exiting has released its memory but not yet its /proc
	 * entry: its maps read empty, and the ones read before still hold. */
	if (!n && u->maps && procmaps__count(u->maps)) {
		procmaps__free(maps);
		return -ESRCH;
	}
	entry_mod = calloc(n ? n : 1, sizeof(*entry_mod));
	if (!entry_mod) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < u->nmods; i++) {
		u->mods[i]->used = false;
		/* A file that failed to open may be readable now. */
		if (u->mods[i]->state == MOD_FAILED)
			u->mods[i]->state = MOD_UNTRIED;
	}
	for (i = 0; i < n; i++) {
		e = procmaps__get(maps, i);
		if (!is_file_backed(e))
			continue;
		m = find_or_add_mod(u, e, m);
		if (!m) {
			err = -ENOMEM;
			goto cleanup;
		}
		m->used = true;
		entry_mod[i] = m;
	}
	prune_mods(u);
	procmaps__free(u->maps);
	free(u->entry_mod);
	u->maps = maps;
	u->entry_mod = entry_mod;
	u->gen++;
	return 0;
cleanup:
	/* Keep the old state; modules added on the way are unused but harmless. */
	for (i = 0; i < u->nmods; i++)
		u->mods[i]->used = true;
	free(entry_mod);
	procmaps__free(maps);
	return err;
}

int usyms__refresh_for(struct usyms *u, uint64_t ts_ns)
{
	if (ts_ns < u->tried_ns || mono_ns() - u->tried_ns < USYMS_REFRESH_NS)
		return -EAGAIN;
	return usyms__refresh(u);
}

int usyms__mapping(const struct usyms *u, const char *name, uint64_t *start, uint64_t *end)
{
	size_t i, n = procmaps__count(u->maps);

	for (i = 0; i < n; i++) {
		const struct map_entry *e = procmaps__get(u->maps, i);

		if (!strcmp(e->path, name)) {
			*start = e->start;
			*end = e->end;
			return 0;
		}
	}
	return -ENOENT;
}

unsigned int usyms__gen(const struct usyms *u)
{
	return u->gen;
}

struct usyms *usyms__new(int pid, const struct usyms_opts *opts)
{
	struct usyms *u;
	int err;

	if (pid < 0) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->pid = pid;
	if (pid)
		snprintf(u->proc, sizeof(u->proc), "/proc/%d", pid);
	else
		snprintf(u->proc, sizeof(u->proc), "/proc/self");
	if (opts && opts->cache) {
		u->cache = opts->cache;
	} else {
		u->cache = elf_cache__new(NULL);
		if (!u->cache) {
			err = -ENOMEM;
			goto cleanup;
		}
		u->own_cache = true;
	}
	err = usyms__refresh(u);
cleanup:
	if (err) {
		usyms__free(u);
		errno = -err;
		return NULL;
	}
	return u;
}

void usyms__free(struct usyms *u)
{
	size_t i;

	if (!u)
		return;
	for (i = 0; i < u->nmods; i++) {
		elf_cache__put(u->mods[i]->ce);
		free(u->mods[i]);
	}
	free(u->mods);
	free(u->entry_mod);
	procmaps__free(u->maps);
	if (u->own_cache)
		elf_cache__free(u->cache);
	free(u);
}

int usyms__resolve(struct usyms *u, uint64_t addr, struct usym *out)
{
	const struct map_entry *e;
	struct elf_file *elf;
	uint64_t fileoff, vaddr, symoff;
	const char *name;
	struct umod *m;

	e = procmaps__find(u->maps, addr);
	if (!e)
		return -ENOENT;
	fileoff = addr - e->start + e->offset;
	out->module = e->path;
	out->name = NULL;
	out->offset = fileoff;
	m = u->entry_mod[e - procmaps__get(u->maps, 0)];
	if (!m)
		return 0;
	elf = mod_elf(u, m, e);
	if (!elf || elf_file__offset_to_vaddr(elf, fileoff, &vaddr))
		return 0;
	if (elf_file__symbolize(elf, vaddr, &name, &symoff)) {
		uint64_t start, off;

		/* No symbol: the function's start from the unwind data, the
		 * same for every address in it. */
		if (!elf_file__func_start(elf, vaddr, &start) &&
		    !elf_file__vaddr_to_offset(elf, start, &off))
			out->offset = off;
		return 0;
	}
	out->name = name;
	out->offset = symoff;
	return 0;
}

int usyms__each_text(struct usyms *u, int (*fn)(void *arg, const struct usyms_text *t), void *arg)
{
	size_t i, n = procmaps__count(u->maps);
	struct umod *last = NULL;
	int err;

	for (i = 0; i < n; i++) {
		const struct map_entry *e = procmaps__get(u->maps, i);
		struct umod *m = u->entry_mod[i];
		struct elf_file *elf;
		uint64_t bias, vaddr;
		char *path;

		/* One call per file: its text mapping. */
		if (!m || !e->x || m == last)
			continue;
		elf = mod_elf(u, m, e);
		if (!elf)
			continue;
		if (procmaps_load_bias(u->maps, e->path, elf, &bias)) {
			if (elf_file__offset_to_vaddr(elf, e->offset, &vaddr))
				continue;
			bias = e->start - vaddr;
		}
		last = m;
		/* As open_mapped_file names it. */
		if (e->deleted ? asprintf(&path, "%s/map_files/%" PRIx64 "-%" PRIx64, u->proc,
					  e->start, e->end) < 0
			       : asprintf(&path, "%s/root%s", u->proc, e->path) < 0)
			return -ENOMEM;
		err = fn(arg, &(struct usyms_text){ .module = e->path,
						    .path = path,
						    .bias = bias,
						    .elf = elf,
						    .inode = e->inode,
						    .dev_major = e->dev_major,
						    .dev_minor = e->dev_minor });
		free(path);
		if (err)
			return err;
	}
	return 0;
}
