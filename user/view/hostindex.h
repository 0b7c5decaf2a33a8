/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The index of a system-wide run, DIR/index.json of `scalene-bpf --all -o
 * DIR`: the host's facts and one entry per process seen, read strictly for
 * the views of the directory (`scalene-bpf view DIR`).  The document is
 * untrusted: a field of the wrong type, a required field missing, an array
 * past its bound or another major version refuses the whole index with the
 * reason; strings are kept as valid UTF-8 without control characters, cut to
 * a bound; a profile file name that could leave DIR (a '/', "..", a leading
 * dot) or is not clean text is refused for that process only.
 */
#ifndef HOSTINDEX_H
#define HOSTINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define HOST_INDEX_VERSION 1
#define HOST_INDEX_NAME "index.json"
#define HOST_INDEX_MAX_BYTES (64ULL << 20)
#define HOST_INDEX_MAX_PROCS 100000
#define HOST_INDEX_MAX_WARNINGS 1000
#define HOST_INDEX_MAX_REASONS 64

struct host_proc {
	long long pid, ns_pid; /* ns_pid == pid unless the index says otherwise */
	long long ppid, uid;   /* -1: not given */
	char *comm;
	char *command;	      /* the command line joined by spaces; comm when it is empty */
	char *python;	      /* the version, NULL: not recognised as Python */
	char *profile;	      /* a safe file name inside DIR; NULL: none (or refused) */
	bool profile_refused; /* the index named a profile that is not a safe name */
	char *not_profiled;   /* why not; NULL: profiled */
	double started_s;
	bool exited, has_exit_code;
	long long exit_code;
	double cpu_s, python_s, native_s, system_s, samples;
	double await_s;	    /* < 0: not measured (--no-async, an older index) */
	double peak_rss_mb; /* < 0: unknown */
	/* Set by the views, freed with the index: why the profile cannot be
	 * shown (missing, malformed), and the file name of its HTML page. */
	char *problem, *page;
};

struct host_count {
	char *reason; /* the key of "not_profiled", cleaned */
	double count;
};

/* --memory under --all (the index's "memory"; on: false when it is null
 * or absent).  What the allocation probes cost the host's processes. */
struct host_memory {
	bool on;
	double hits, hits_per_s, ns_per_hit, cost_percent;
	double libc_probed, libc_not_probed;
};

struct host_index {
	int version;
	char *host, *kernel;
	double start_time; /* unix time; 0: not given */
	double elapsed_s, rate_hz;
	/* The profiled processes by cpu_s, most first (in the index's order
	 * when equal), then those not profiled in the index's order. */
	struct host_proc *procs;
	size_t nprocs, nprofiled;
	struct host_count *counts; /* "not_profiled" counts, in the index's order */
	size_t ncounts;
	char **warnings;
	size_t nwarnings;
	struct host_memory memory;
};

/* Parses and checks an index read into memory (name: the file, for the
 * messages).  NULL with the reason as one line to err. */
struct host_index *host_index__parse(const char *data, size_t len, const char *name, FILE *err);
void host_index__free(struct host_index *hi);

/* Whether s (len bytes) may name a file inside DIR: 1..255 bytes of clean
 * UTF-8 (no NUL, no control character), no '/' and no "..", not starting
 * with a dot. */
bool host_index_name_ok(const char *s, size_t len);

/* The sum of the "not_profiled" counts. */
double host_index_not_profiled(const struct host_index *hi);
/* The sum of the profiled processes' cpu_s. */
double host_index_cpu_s(const struct host_index *hi);
/* One line on the allocation probes for the views: what they counted and
 * cost; "" when memory was not profiled. */
void host_index_memory_text(const struct host_index *hi, char *buf, size_t len);

#endif /* HOSTINDEX_H */
