/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory profiling of a running process (--pid --memory, --all --memory):
 * uprobes on libc's malloc, calloc and realloc and on Python's
 * PyObject_/PyMem_ allocation functions, each placed where the kernel
 * emulates the probed instruction (user/base/uprobe_site.h).  What was and was
 * not probed is kept for the profile.
 */
#ifndef MEMPROBE_H
#define MEMPROBE_H

#include <limits.h>
#include <stdint.h>

struct loader;
struct py_proc;
struct facts_uprobes;

#define MEMPROBE_MAX 16 /* FACTS_MAX_PROBES: each is in the facts */

struct memprobe_site {
	const char *func;
	char module[64];      /* base name of the file */
	int offset;	      /* into the function; -1: not probed */
	uint64_t file_offset; /* of the probe in the file, when probed */
	char why[160];	      /* why not */
};

struct memprobe_report {
	struct memprobe_site sites[MEMPROBE_MAX];
	int nsites, attached;
	double hit_cost_ns; /* measured here; < 0 if it could not be */
};

struct probe_link;

/* A probe as placed, to be taken out and placed again (a duty cycle). */
struct memprobe_place {
	int prog;		  /* enum alloc_prog */
	char file[PATH_MAX + 32]; /* the file as the process maps it */
	uint64_t file_offset;	  /* of the probe in the file */
	struct probe_link *link;  /* NULL while it is out */
};

struct memprobe_placed {
	struct memprobe_place p[MEMPROBE_MAX];
	int n;
};

/* Attaches what it can; returns how many probes were attached (0: none,
 * the reasons are in rep).  placed: where they went (NULL: not kept). */
int memprobe__attach(struct loader *l, int pid, const struct py_proc *pp,
		     struct memprobe_report *rep, struct memprobe_placed *placed);
/* Takes every probe of pl out (the kernel removes them in the loader's
 * threads, soon after) / places those that are out again, for pid: how
 * many are in place after it. */
void memprobe__take_out(struct loader *l, struct memprobe_placed *pl);
int memprobe__put_back(struct loader *l, int pid, struct memprobe_placed *pl);

/* Number of libc functions memprobe__attach_libc probes (its links[]). */
#define MEMPROBE_LIBC_FNS 3

/* Number of Python allocator functions memprobe__attach_python probes. */
#define MEMPROBE_PY_FNS 6

/* System-wide (--all): Python's allocator functions in path (the
 * executable or libpython, as pid maps it), for attach_pid alone or, with
 * attach_pid -1, for every process that runs that file (the BPF side keeps
 * only followed processes' hits).  known, links: as for
 * memprobe__attach_libc (links: MEMPROBE_PY_FNS, or NULL).  Returns how
 * many were attached, or -errno; hit_cost_ns is not measured. */
int memprobe__attach_python(struct loader *l, int pid, int attach_pid, const char *path,
			    const struct memprobe_report *known, struct memprobe_report *rep,
			    struct probe_link **links);
/* The libc pid maps (its path as mapped), or -ENOENT. */
int memprobe__libc_path(int pid, char *buf, size_t n);
/* System-wide: libc's malloc, calloc and realloc in path (as pid maps it)
 * for pid alone; the links in links[MEMPROBE_LIBC_FNS] (site i's, NULL
 * where not attached).  known: the report of the same file for another
 * process, whose sites are used as they are: a fork child's code holds its
 * parent's breakpoints (int3), which cannot be read past.  Returns how many
 * were attached, or -errno. */
int memprobe__attach_libc(struct loader *l, int pid, const char *path,
			  const struct memprobe_report *known, struct memprobe_report *rep,
			  struct probe_link **links);
/* The report as facts, with the hit count over elapsed_s. */
void memprobe__facts(const struct memprobe_report *rep, unsigned long long hits, double elapsed_s,
		     struct facts_uprobes *out);

#endif /* MEMPROBE_H */
