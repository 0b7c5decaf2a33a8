// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/elfsym.h"
#include "model/facts.h"
#include "collect/loader.h"
#include "session/memprobe.h"
#include "base/memread.h"
#include "base/procmaps.h"
#include "target/python.h"
#include "base/uprobe_site.h"

#define PROLOGUE_BYTES 32
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(MEMPROBE_MAX <= FACTS_MAX_PROBES, "every probe site has a place in the facts");

struct target_fn {
	const char *func;
	enum alloc_prog prog;
	unsigned int args; /* argument registers the program reads */
	bool python;
};

static const struct target_fn libc_fns[] = {
	{ "malloc", ALLOC_MALLOC, ARG_RDI, false },
	{ "calloc", ALLOC_CALLOC, ARG_RDI | ARG_RSI, false },
	{ "realloc", ALLOC_REALLOC, ARG_RDI | ARG_RSI, false },
};

static const struct target_fn python_fns[] = {
	{ "PyObject_Malloc", ALLOC_PY_MALLOC, ARG_RDI, true },
	{ "PyObject_Calloc", ALLOC_PY_CALLOC, ARG_RDI | ARG_RSI, true },
	{ "PyObject_Realloc", ALLOC_PY_REALLOC, ARG_RDI | ARG_RSI, true },
	{ "PyMem_Malloc", ALLOC_PY_MALLOC, ARG_RDI, true },
	{ "PyMem_Calloc", ALLOC_PY_CALLOC, ARG_RDI | ARG_RSI, true },
	{ "PyMem_Realloc", ALLOC_PY_REALLOC, ARG_RDI | ARG_RSI, true },
};

/* Probes fns in path as pid maps it, for attach_pid (-1: every process
 * running the file); the links go to links[] (when not NULL) in the order
 * of the sites added to rep.  known: the sites found in the same file
 * before (NULL: none), used as they are, without reading the code again. */
static void probe_module(struct loader *l, int pid, int attach_pid, const struct procmaps *m,
			 const char *path, const struct target_fn *fns, int nfns,
			 struct memprobe_report *rep, struct probe_link **links,
			 const struct memprobe_report *known, struct memprobe_placed *placed)
{
	char file[PATH_MAX + 32];
	struct elf_file *e;
	struct memprobe_place *pl;
	uint64_t bias = 0, value;
	int i, err, named;

	named = procmaps__file_in_root(file, sizeof(file), pid, path);
	if (known) {
		for (i = 0; i < nfns && i < known->nsites && rep->nsites < MEMPROBE_MAX; i++) {
			struct memprobe_site *s = &rep->sites[rep->nsites++];

			*s = known->sites[i];
			if (s->offset < 0)
				continue;
			err = named;
			if (!err)
				err = loader__attach_alloc_probe(
					l, fns[i].prog, attach_pid, file, s->file_offset,
					links ? &links[rep->nsites - 1] : NULL);
			if (err) {
				snprintf(s->why, sizeof(s->why), "attach failed: %s",
					 strerror(-err));
				s->offset = -1;
				continue;
			}
			rep->attached++;
		}
		return;
	}
	e = named ? NULL : elf_file__open(file);
	if (e && procmaps_load_bias(m, path, e, &bias)) {
		elf_file__free(e);
		e = NULL;
	}
	for (i = 0; i < nfns && rep->nsites < MEMPROBE_MAX; i++) {
		struct memprobe_site *s = &rep->sites[rep->nsites++];
		uint8_t code[PROLOGUE_BYTES];

		s->func = fns[i].func;
		s->offset = -1;
		snprintf(s->module, sizeof(s->module), "%s", basename(path));
		if (!e) {
			snprintf(s->why, sizeof(s->why), "cannot read %s", path);
			continue;
		}
		if (elf_file__find_symbol(e, fns[i].func, &value, NULL)) {
			snprintf(s->why, sizeof(s->why), "no symbol %s", fns[i].func);
			continue;
		}
		/* The code as mapped in the process. */
		err = mem_read(pid, bias + value, code, sizeof(code));
		if (err) {
			snprintf(s->why, sizeof(s->why), "cannot read its code: %s",
				 strerror(-err));
			continue;
		}
		if (elf_file__vaddr_to_offset(e, value, &s->file_offset)) {
			snprintf(s->why, sizeof(s->why), "%s is not in the file's segments",
				 fns[i].func);
			continue;
		}
		s->offset = uprobe_site(code, sizeof(code), fns[i].args, s->why, sizeof(s->why));
		if (s->offset < 0)
			continue;
		s->file_offset += s->offset;
		pl = placed && placed->n < MEMPROBE_MAX ? &placed->p[placed->n] : NULL;
		err = loader__attach_alloc_probe(l, fns[i].prog, attach_pid, file, s->file_offset,
						 links ? &links[rep->nsites - 1]
						 : pl  ? &pl->link
						       : NULL);
		if (err) {
			snprintf(s->why, sizeof(s->why), "attach failed: %s", strerror(-err));
			s->offset = -1;
			continue;
		}
		rep->attached++;
		if (pl) {
			pl->prog = fns[i].prog;
			snprintf(pl->file, sizeof(pl->file), "%s", file);
			pl->file_offset = s->file_offset;
			placed->n++;
		}
	}
	elf_file__free(e);
}

void memprobe__take_out(struct loader *l, struct memprobe_placed *pl)
{
	int i;

	for (i = 0; i < pl->n; i++) {
		if (pl->p[i].link && !loader__detach_alloc_probe(l, pl->p[i].link))
			pl->p[i].link = NULL;
	}
}

int memprobe__put_back(struct loader *l, int pid, struct memprobe_placed *pl)
{
	int i, in = 0;

	for (i = 0; i < pl->n; i++) {
		struct memprobe_place *p = &pl->p[i];

		if (!p->link)
			loader__attach_alloc_probe(l, p->prog, pid, p->file, p->file_offset,
						   &p->link);
		in += p->link != NULL;
	}
	return in;
}

static const char *find_libc(const struct procmaps *m)
{
	size_t i;

	for (i = 0; i < procmaps__count(m); i++) {
		const struct map_entry *e = procmaps__get(m, i);
		const char *b = basename(e->path);

		if (e->x && (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5)))
			return e->path;
	}
	return NULL;
}

int memprobe__attach(struct loader *l, int pid, const struct py_proc *pp,
		     struct memprobe_report *rep, struct memprobe_placed *placed)
{
	const char *libc;
	struct procmaps *m;
	double cost;

	memset(rep, 0, sizeof(*rep));
	if (placed)
		placed->n = 0;
	m = procmaps__load(pid);
	if (!m)
		return -errno;
	/* A hit's cost is measured on our own probe before the process gets
	 * its: the measure takes ~0.2 s, in which a process that allocates at
	 * full speed under its probes would fill the ring buffer (16 MiB in
	 * 0.18 s measured) with records nobody drains, and CPU samples would
	 * be lost with them. */
	cost = loader__uprobe_cost_ns(l);

	libc = find_libc(m);
	if (libc)
		probe_module(l, pid, pid, m, libc, libc_fns, ARRAY_SIZE(libc_fns), rep, NULL, NULL,
			     placed);
	probe_module(l, pid, pid, m, pp->path, python_fns, ARRAY_SIZE(python_fns), rep, NULL, NULL,
		     placed);
	procmaps__free(m);
	rep->hit_cost_ns = rep->attached ? cost : -1;
	return rep->attached;
}

_Static_assert(ARRAY_SIZE(python_fns) == MEMPROBE_PY_FNS, "links[] has a place for each");
_Static_assert(ARRAY_SIZE(libc_fns) == MEMPROBE_LIBC_FNS, "links[] has a place for each");

/* One file's functions, probed for attach_pid (system-wide). */
static int attach_file(struct loader *l, int pid, int attach_pid, const char *path,
		       const struct target_fn *fns, int nfns, const struct memprobe_report *known,
		       struct memprobe_report *rep, struct probe_link **links)
{
	struct procmaps *m = NULL;

	memset(rep, 0, sizeof(*rep));
	rep->hit_cost_ns = -1;
	if (!known) {
		m = procmaps__load(pid);
		if (!m)
			return -errno;
	}
	probe_module(l, pid, attach_pid, m, path, fns, nfns, rep, links, known, NULL);
	procmaps__free(m);
	return rep->attached;
}

int memprobe__attach_python(struct loader *l, int pid, int attach_pid, const char *path,
			    const struct memprobe_report *known, struct memprobe_report *rep,
			    struct probe_link **links)
{
	return attach_file(l, pid, attach_pid, path, python_fns, ARRAY_SIZE(python_fns), known, rep,
			   links);
}

int memprobe__libc_path(int pid, char *buf, size_t n)
{
	struct procmaps *m = procmaps__load(pid);
	const char *libc;

	if (!m)
		return -errno;
	libc = find_libc(m);
	if (libc)
		snprintf(buf, n, "%s", libc);
	procmaps__free(m);
	return libc ? 0 : -ENOENT;
}

int memprobe__attach_libc(struct loader *l, int pid, const char *path,
			  const struct memprobe_report *known, struct memprobe_report *rep,
			  struct probe_link **links)
{
	return attach_file(l, pid, pid, path, libc_fns, ARRAY_SIZE(libc_fns), known, rep, links);
}

void memprobe__facts(const struct memprobe_report *rep, unsigned long long hits, double elapsed_s,
		     struct facts_uprobes *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	out->probe_links = loader__probe_links();
	for (i = 0; i < rep->nsites && i < FACTS_MAX_PROBES; i++) {
		const struct memprobe_site *s = &rep->sites[i];
		struct facts_probe_site *o = &out->probes[i];

		o->function = s->func;
		snprintf(o->module, sizeof(o->module), "%s", s->module);
		o->offset = s->offset;
		if (s->offset < 0)
			snprintf(o->not_probed, sizeof(o->not_probed), "%s", s->why);
	}
	out->nprobes = i;
	out->hits = hits;
	out->elapsed_s = elapsed_s;
	out->ns_per_hit = rep->hit_cost_ns;
}
