// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "base/clock.h"
#include "model/facts.h"
#include "base/hmap.h"
#include "session/hostmem.h"
#include "collect/loader.h"
#include "base/log.h"
#include "session/memprobe.h"
#include "base/procmaps.h"
#include "target/python.h"

/* A distinct file probed, by (device, inode) through /proc/PID/root: an
 * interpreter (probed for every process running it, or per_process for
 * each) or a libc (probed for each process).  rep: its sites as its first
 * process's code had them, used as they are for the next process that maps
 * it (a fork child's code holds its parent's breakpoints). */
struct hm_file {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX]; /* as the first process mapped it */
	struct memprobe_report rep;
	uint64_t procs; /* followed images that run it */
};

struct hm_files {
	struct hm_file *v;
	int n;
};

/* A followed Python image. */
struct hm_proc {
	int file; /* into files; -1: its interpreter file was not probed */
	char file_why[160];
	/* per_process: its own Python allocator probes. */
	struct memprobe_report py;
	struct probe_link *py_links[MEMPROBE_PY_FNS];
	struct memprobe_report libc;
	struct probe_link *links[MEMPROBE_LIBC_FNS];
	bool libc_probed;  /* holds one of the HOSTMEM_MAX_LIBC places */
	bool libc_refused; /* past HOSTMEM_MAX_LIBC */
};

struct hostmem {
	struct loader *l;
	double hit_cost_ns;
	bool per_process;      /* Python's allocator probed per followed process */
	struct hm_files files; /* interpreters */
	struct hm_files libcs;
	struct hmap *procs; /* pid -> struct hm_proc */
	int libc_live;	    /* processes whose libc is probed now */
	uint64_t libc_probed, libc_refused, libc_failed;
	int libc_refused_pid;
};

struct hostmem *hostmem__new(struct loader *l, double hit_cost_ns, bool per_process)
{
	struct hostmem *hm = calloc(1, sizeof(*hm));

	if (!hm)
		return NULL;
	hm->l = l;
	hm->hit_cost_ns = hit_cost_ns;
	hm->per_process = per_process;
	hm->procs = hmap__new(sizeof(int));
	if (!hm->procs) {
		free(hm);
		return NULL;
	}
	return hm;
}

void hostmem__free(struct hostmem *hm)
{
	size_t it = 0;
	void *v;

	if (!hm)
		return;
	/* The links are the loader's: it lets them go at the end. */
	while (hmap__next(hm->procs, &it, NULL, &v))
		free(v);
	hmap__free(hm->procs);
	free(hm->files.v);
	free(hm->libcs.v);
	free(hm);
}

/* The identity of path as pid maps it: through the process's root, so that
 * a container's files are its own.  0 or -errno. */
static int file_stat(int pid, const char *path, struct stat *st)
{
	char file[PATH_MAX + 32];
	int err = procmaps__file_in_root(file, sizeof(file), pid, path);

	if (err)
		return err;
	return stat(file, st) ? -errno : 0;
}

/* The entry of the file st names, or -1. */
static int files_find(const struct hm_files *t, const struct stat *st)
{
	int i;

	for (i = 0; i < t->n; i++) {
		if (t->v[i].dev == st->st_dev && t->v[i].ino == st->st_ino)
			return i;
	}
	return -1;
}

/* A new entry for the file st names, with its first process's sites; -1
 * when out of memory. */
static int files_add(struct hm_files *t, const struct stat *st, const char *path,
		     const struct memprobe_report *rep)
{
	struct hm_file *v = realloc(t->v, (t->n + 1) * sizeof(*v));

	if (!v)
		return -1;
	t->v = v;
	memset(&v[t->n], 0, sizeof(v[t->n]));
	v[t->n].dev = st->st_dev;
	v[t->n].ino = st->st_ino;
	snprintf(v[t->n].path, sizeof(v[t->n].path), "%s", path);
	v[t->n].rep = *rep;
	return t->n++;
}

/* The interpreter file of pid: probed once for every process running it
 * or, per_process, for pid alone. */
static int python_file(struct hostmem *hm, int pid, const char *path, struct hm_proc *p)
{
	struct stat st;
	int i, k, err;

	err = file_stat(pid, path, &st);
	if (err) {
		snprintf(p->file_why, sizeof(p->file_why), "cannot look at %.96s: %s", path,
			 strerror(-err));
		return -1;
	}
	i = files_find(&hm->files, &st);
	if (i >= 0 && !hm->per_process)
		return i;
	if (i >= 0) {
		err = memprobe__attach_python(hm->l, pid, pid, path, &hm->files.v[i].rep, &p->py,
					      p->py_links);
		if (err <= 0) {
			snprintf(p->file_why, sizeof(p->file_why), "cannot probe %.96s: %s", path,
				 err ? strerror(-err) : "no function could be");
			return -1;
		}
		return i;
	}
	/* Its place first: probes attached for every process are not let go
	 * until the end, and must not be attached twice. */
	i = files_add(&hm->files, &st, path, &p->py);
	if (i < 0) {
		snprintf(p->file_why, sizeof(p->file_why), "out of memory");
		return -1;
	}
	err = memprobe__attach_python(hm->l, pid, hm->per_process ? pid : -1, path, NULL, &p->py,
				      hm->per_process ? p->py_links : NULL);
	if (err < 0) {
		/* Not kept: the next process of this build tries again. */
		hm->files.n--;
		snprintf(p->file_why, sizeof(p->file_why), "cannot probe %.96s: %s", path,
			 strerror(-err));
		return -1;
	}
	hm->files.v[i].rep = p->py;
	for (k = 0; k < p->py.nsites; k++) {
		const struct memprobe_site *s = &p->py.sites[k];

		if (s->offset < 0)
			pr_warn("memory: %s in %s not probed: %s\n", s->func, path, s->why);
	}
	pr_info("memory: Python's allocator in %s probed (%d functions), for %s running it\n", path,
		p->py.attached, hm->per_process ? "each followed process" : "every process");
	return i;
}

/* Probes pid's libc, with the sites found before in the same file. */
static int probe_libc(struct hostmem *hm, int pid, struct hm_proc *p)
{
	char path[PATH_MAX];
	struct stat st;
	int i, n, err;

	err = memprobe__libc_path(pid, path, sizeof(path));
	if (!err)
		err = file_stat(pid, path, &st);
	if (err)
		return err;
	i = files_find(&hm->libcs, &st);
	n = memprobe__attach_libc(hm->l, pid, path, i >= 0 ? &hm->libcs.v[i].rep : NULL, &p->libc,
				  p->links);
	/* The first process of this libc: its code is as the file has it. */
	if (i < 0 && n > 0)
		files_add(&hm->libcs, &st, path, &p->libc);
	return n;
}

void hostmem__python(struct hostmem *hm, int pid, const struct py_proc *pp)
{
	struct hm_proc *p = hmap__get(hm->procs, &pid);
	int n;

	if (p) /* an image not ended (cannot happen): the old one's probes go */
		hostmem__ended(hm, pid);
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	if (hmap__put(hm->procs, &pid, p)) {
		free(p);
		return;
	}
	/* Probed one by one, a process past the limit gets no probe at all. */
	if (hm->libc_live >= HOSTMEM_MAX_LIBC) {
		p->libc_refused = true;
		hm->libc_refused++;
		hm->libc_refused_pid = pid;
		if (!hm->per_process)
			goto python;
		p->file = -1;
		snprintf(p->file_why, sizeof(p->file_why),
			 "not probed: more than %d processes probed at once", HOSTMEM_MAX_LIBC);
		return;
	}
	n = probe_libc(hm, pid, p);
	if (n > 0) {
		p->libc_probed = true;
		hm->libc_live++;
		hm->libc_probed++;
	} else {
		hm->libc_failed++;
		pr_debug("memory: libc of process %d not probed: %s\n", pid,
			 n == -ENOENT ? "no libc mapped" : strerror(n < 0 ? -n : EINVAL));
	}
python:
	p->file = python_file(hm, pid, pp->path, p);
	if (p->file >= 0)
		hm->files.v[p->file].procs++;
}

void hostmem__ended(struct hostmem *hm, int pid)
{
	struct hm_proc *p = hmap__del(hm->procs, &pid);
	int i;

	if (!p)
		return;
	/* One the loader cannot queue stays to the end of the run. */
	for (i = 0; i < MEMPROBE_LIBC_FNS; i++) {
		if (p->links[i])
			loader__detach_alloc_probe(hm->l, p->links[i]);
	}
	for (i = 0; i < MEMPROBE_PY_FNS; i++) {
		if (p->py_links[i])
			loader__detach_alloc_probe(hm->l, p->py_links[i]);
	}
	if (p->libc_probed)
		hm->libc_live--;
	free(p);
}

static void add_site(struct facts_uprobes *out, const struct memprobe_site *s)
{
	struct facts_probe_site *o;

	if (out->nprobes >= FACTS_MAX_PROBES)
		return;
	o = &out->probes[out->nprobes++];
	o->function = s->func;
	snprintf(o->module, sizeof(o->module), "%s", s->module);
	o->offset = s->offset;
	if (s->offset < 0)
		snprintf(o->not_probed, sizeof(o->not_probed), "%s", s->why);
}

static void add_missing(struct facts_uprobes *out, const char *func, const char *module,
			const char *why)
{
	struct memprobe_site s = { .func = func, .offset = -1 };

	snprintf(s.module, sizeof(s.module), "%s", module);
	snprintf(s.why, sizeof(s.why), "%s", why);
	add_site(out, &s);
}

void hostmem__facts(const struct hostmem *hm, int pid, struct facts_uprobes *out)
{
	const struct hm_proc *p = hmap__get(hm->procs, &pid);
	static const char *const libc_fns[] = { "malloc", "calloc", "realloc" };
	char why[160];
	int i;

	memset(out, 0, sizeof(*out));
	out->host = true;
	out->ns_per_hit = hm->hit_cost_ns;
	out->probe_links = loader__probe_links();
	if (!p) {
		add_missing(out, "PyObject_Malloc", "", "not probed: not seen as Python");
		return;
	}
	if (p->file >= 0) {
		const struct memprobe_report *py =
			hm->per_process ? &p->py : &hm->files.v[p->file].rep;

		for (i = 0; i < py->nsites; i++)
			add_site(out, &py->sites[i]);
	} else {
		add_missing(out, "PyObject_Malloc", "", p->file_why);
	}
	if (p->libc_refused) {
		snprintf(why, sizeof(why),
			 "libc allocations not probed: more than %d processes probed at once",
			 HOSTMEM_MAX_LIBC);
		for (i = 0; i < MEMPROBE_LIBC_FNS; i++)
			add_missing(out, libc_fns[i], "libc", why);
		return;
	}
	for (i = 0; i < p->libc.nsites; i++)
		add_site(out, &p->libc.sites[i]);
	if (!p->libc.nsites)
		add_missing(out, "malloc", "libc", "no libc mapped");
}

static void add(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static struct json_object *sites_json(const struct memprobe_report *rep)
{
	struct json_object *a = json_object_new_array();
	int i;

	for (i = 0; i < rep->nsites; i++) {
		const struct memprobe_site *s = &rep->sites[i];
		struct json_object *so = json_object_new_object();

		add(so, "function", json_object_new_string(s->func));
		if (s->offset >= 0)
			add(so, "offset", json_object_new_int(s->offset));
		else
			add(so, "not_probed", json_object_new_string(s->why));
		json_object_array_add(a, so);
	}
	return a;
}

struct json_object *hostmem__json(struct hostmem *hm, uint64_t hits, double elapsed_s,
				  struct json_object *warnings)
{
	struct json_object *o = json_object_new_object(), *files = json_object_new_array();
	struct json_object *libc = json_object_new_object(), *links = json_object_new_object();
	struct loader_link_stats ls;
	char warn[256];
	int i;

	add(o, "mode", json_object_new_string("uprobes"));
	add(o, "hits", json_object_new_int64((int64_t)hits));
	if (elapsed_s > 0)
		add(o, "hits_per_s", json_object_new_double(hits / elapsed_s));
	if (hm->hit_cost_ns >= 0) {
		add(o, "ns_per_hit_measured", json_object_new_double(hm->hit_cost_ns));
		if (elapsed_s > 0)
			add(o, "estimated_cost_cpu_percent",
			    json_object_new_double(100.0 * hits * hm->hit_cost_ns / 1e9 /
						   elapsed_s));
	}
	for (i = 0; i < hm->files.n; i++) {
		const struct hm_file *f = &hm->files.v[i];
		struct json_object *fo = json_object_new_object();

		add(fo, "path", json_object_new_string(f->path));
		add(fo, "device", json_object_new_int64((int64_t)f->dev));
		add(fo, "inode", json_object_new_int64((int64_t)f->ino));
		add(fo, "processes", json_object_new_int64((int64_t)f->procs));
		add(fo, "probes", sites_json(&f->rep));
		json_object_array_add(files, fo);
	}
	add(o, "python_files", files);
	add(o, "python_per_process", json_object_new_boolean(hm->per_process));
	add(o, "python_files_note",
	    json_object_new_string(hm->per_process
					   ? "filters given: probed for each followed process, so "
					     "processes filtered out do not trap"
					   : "probed for every process running the file (no filter "
					     "given, every Python process is followed)"));
	add(libc, "max_processes_at_once", json_object_new_int(HOSTMEM_MAX_LIBC));
	add(libc, "processes_probed", json_object_new_int64((int64_t)hm->libc_probed));
	add(libc, "processes_not_probed", json_object_new_int64((int64_t)hm->libc_refused));
	add(libc, "processes_failed", json_object_new_int64((int64_t)hm->libc_failed));
	add(o, "libc", libc);
	loader__link_stats(hm->l, &ls);
	add(links, "attached", json_object_new_int64((int64_t)ls.attached));
	if (ls.attached)
		add(links, "attach_ms_mean",
		    json_object_new_double(ls.attach_ns / 1e6 / (double)ls.attached));
	add(links, "detached", json_object_new_int64((int64_t)ls.detached));
	if (ls.detached) {
		add(links, "detach_ms_mean",
		    json_object_new_double(ls.detach_ns / 1e6 / (double)ls.detached));
		add(links, "detach_ms_max", json_object_new_double(ls.detach_max_ns / 1e6));
	}
	add(links, "detach_pending", json_object_new_int64((int64_t)ls.pending));
	add(o, "links", links);
	add(o, "not_measured",
	    json_object_new_string("frees, footprint, peaks, leaks and net growth: as with "
				   "--pid --memory, n_malloc_mb holds gross allocation"));
	if (hm->libc_refused && warnings) {
		snprintf(warn, sizeof(warn),
			 "memory: %s not probed in %llu processes (more than %d at once, e.g. "
			 "%d): %s not measured",
			 hm->per_process ? "allocations" : "libc allocations",
			 (unsigned long long)hm->libc_refused, HOSTMEM_MAX_LIBC,
			 hm->libc_refused_pid,
			 hm->per_process ? "their memory is" : "their native allocations are");
		json_object_array_add(warnings, json_object_new_string(warn));
	}
	return o;
}

void hostmem__report(struct hostmem *hm, uint64_t hits, double elapsed_s)
{
	double rate = elapsed_s > 0 ? hits / elapsed_s : 0;

	if (hm->libc_refused)
		fprintf(stderr,
			"scalene-bpf: memory: %s not probed in %llu processes (more than %d at "
			"once)\n",
			hm->per_process ? "allocations" : "libc allocations",
			(unsigned long long)hm->libc_refused, HOSTMEM_MAX_LIBC);
	if (hm->hit_cost_ns < 0) {
		fprintf(stderr, "scalene-bpf: memory probes fired %llu times (%.0f/s)\n",
			(unsigned long long)hits, rate);
		return;
	}
	fprintf(stderr,
		"scalene-bpf: memory probes fired %llu times in the followed processes (%.0f/s); "
		"at %.2f us a hit, measured here, that cost them about %.1f%% of one CPU\n",
		(unsigned long long)hits, rate, hm->hit_cost_ns / 1e3,
		100.0 * rate * hm->hit_cost_ns / 1e9);
}
