// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "elfsym.h"
#include "loader.h"
#include "memprobe.h"
#include "memread.h"
#include "procmaps.h"
#include "python.h"
#include "uprobe_site.h"

#define PROLOGUE_BYTES 32
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

static void probe_module(struct loader *l, int pid, const struct procmaps *m, const char *path,
			 const struct target_fn *fns, int nfns, struct memprobe_report *rep)
{
	char file[PATH_MAX + 32];
	struct elf_file *e;
	uint64_t bias = 0, value;
	int i, err;

	snprintf(file, sizeof(file), "/proc/%d/root%s", pid, path);
	e = elf_file__open(file);
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
		s->offset = uprobe_site(code, sizeof(code), fns[i].args, s->why, sizeof(s->why));
		if (s->offset < 0)
			continue;
		err = loader__attach_alloc_probe(l, fns[i].prog, pid, file, fns[i].func, s->offset);
		if (err) {
			snprintf(s->why, sizeof(s->why), "attach failed: %s", strerror(-err));
			s->offset = -1;
			continue;
		}
		rep->attached++;
	}
	elf_file__free(e);
}

int memprobe__attach(struct loader *l, int pid, const struct py_proc *pp,
		     struct memprobe_report *rep)
{
	const char *libc = NULL;
	struct procmaps *m;
	size_t i;

	memset(rep, 0, sizeof(*rep));
	m = procmaps__load(pid);
	if (!m)
		return -errno;
	for (i = 0; i < procmaps__count(m); i++) {
		const struct map_entry *e = procmaps__get(m, i);
		const char *b = basename(e->path);

		if (e->x && (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5))) {
			libc = e->path;
			break;
		}
	}
	if (libc)
		probe_module(l, pid, m, libc, libc_fns, ARRAY_SIZE(libc_fns), rep);
	probe_module(l, pid, m, pp->path, python_fns, ARRAY_SIZE(python_fns), rep);
	procmaps__free(m);
	rep->hit_cost_ns = rep->attached ? loader__uprobe_cost_ns(l) : -1;
	return rep->attached;
}

struct json_object *memprobe__facts(const struct memprobe_report *rep, unsigned long long hits,
				    double elapsed_s)
{
	struct json_object *o = json_object_new_object(), *sites = json_object_new_array();
	int i;

	json_object_object_add(o, "mode", json_object_new_string("uprobes"));
	for (i = 0; i < rep->nsites; i++) {
		const struct memprobe_site *s = &rep->sites[i];
		struct json_object *so = json_object_new_object();

		json_object_object_add(so, "function", json_object_new_string(s->func));
		json_object_object_add(so, "module", json_object_new_string(s->module));
		if (s->offset >= 0)
			json_object_object_add(so, "offset", json_object_new_int(s->offset));
		else
			json_object_object_add(so, "not_probed", json_object_new_string(s->why));
		json_object_array_add(sites, so);
	}
	json_object_object_add(o, "probes", sites);
	json_object_object_add(o, "hits", json_object_new_int64((int64_t)hits));
	if (elapsed_s > 0)
		json_object_object_add(o, "hits_per_s", json_object_new_double(hits / elapsed_s));
	if (rep->hit_cost_ns >= 0) {
		json_object_object_add(o, "ns_per_hit_measured",
				       json_object_new_double(rep->hit_cost_ns));
		if (elapsed_s > 0)
			json_object_object_add(
				o, "estimated_cost_cpu_percent",
				json_object_new_double(100.0 * hits * rep->hit_cost_ns / 1e9 /
						       elapsed_s));
	}
	json_object_object_add(
		o, "not_measured",
		json_object_new_string(
			"frees, footprint, peaks, leaks and net growth (they need `run`, "
			"which preloads the sampler): n_malloc_mb and the fields with it hold "
			"gross allocation here, not Scalene's net growth; the Python share of "
			"allocations that "
			"bypass the exported PyObject_/PyMem_ functions (inlined by "
			"LTO builds, or internal calls): those count as native"));
	return o;
}
