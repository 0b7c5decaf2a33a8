/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * System-wide profiling (--all): which processes are followed (the filters),
 * one profile per Python process written into the output directory when its
 * image ends, and index.json, the host's view of them all.  The session
 * reports each process through struct session_host.
 */
#ifndef HOST_H
#define HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "model/profile.h"
#include "session/session.h"

struct json_object;
struct user_creds;

/* A profile of one process for one interval (--continuous). */
struct host_piece {
	const char *json; /* the file */
	int pid;
	const char *comm;
	const char *const *argv; /* its command line (argc 0: not known) */
	int argc;
	const struct proc_labels *labels; /* NULL: not known */
};

struct host_opts {
	/* The processes followed: those the lists name (every Python process
	 * where a list is empty), and their children unless no_follow. */
	const int *pids;
	int npids;
	const char *const *comms; /* process names (comm or argv[0]'s base name) */
	int ncomms;
	const char *const *uids; /* user names or numbers */
	int nuids;
	const int *exclude_pids;
	int nexclude_pids;
	bool no_follow;
	/* Each process's profile: which files (program_dir is each process's
	 * own), the threshold below which a file is left out, await times. */
	struct profile_filter files;
	double cpu_percent_threshold;
	bool async_waits;
	const char *dir;  /* where the profiles and index.json go */
	int max_profiles; /* ended processes' profiles kept (0: the default) */
	const struct user_creds *creds;
	double start_mono, start_wall; /* CLOCK_MONOTONIC and Unix time, s */
	double rate_hz;
	/* --continuous: a profile per process per interval, in the folders of
	 * intervals.h, bounded by max_disk_bytes; 0: one profile per image. */
	double interval_s;
	uint64_t max_disk_bytes;
	/* --continuous: profile_done is called with each profile of an
	 * interval as it is written: the document (which the callee must not
	 * keep), its file, the process's pid, command and labels (each
	 * profile states its own start and length); it returns the profile's
	 * pprof export in *pprof (malloc'd; NULL when the profile has no
	 * stacks), which goes beside the file.  interval_done is called once
	 * an interval's profiles are all written; sink_json: the sinks' state
	 * for the run's index, an object whose members (otlp, pyroscope)
	 * become continuous's (a new object; NULL: nothing).  All get
	 * sink_ctx; NULL: none. */
	int (*profile_done)(void *ctx, const struct host_piece *pc, struct json_object *doc,
			    uint8_t **pprof, size_t *len);
	void (*interval_done)(void *ctx);
	struct json_object *(*sink_json)(void *ctx);
	void *sink_ctx;
};

struct host;

/* Makes the output directory (as the user); NULL with errno set after a
 * message saying what is wrong. */
struct host *host__new(const struct host_opts *opts);
void host__free(struct host *h);
/* The session's view of the host; the session is needed for the facts of
 * each profile written. */
const struct session_host *host__session_host(struct host *h);
void host__set_session(struct host *h, struct session *s);
struct hostmem;
/* --memory: the allocation probes (hostmem.h), owned by the host from here;
 * each Python process gets its probes and its profile memory per line. */
void host__set_memory(struct host *h, struct hostmem *hm);
/* Follows every process running now that the filters take; returns how
 * many were handed to the session. */
int host__scan(struct host *h);
/* Writes index.json (the processes still running must have ended first:
 * session__end_all).  0 or -errno after a message. */
int host__finish(struct host *h, double elapsed_s);
/* --profile-interval: each live process's profile as it is now (its file
 * is replaced), and index.json with the live processes' numbers so far. */
int host__snapshot(struct host *h, double elapsed_s);
/* --continuous, at the end of an interval (what BPF sent up to now taken
 * in first): each live process's profile of the interval is written and
 * its counts restart; the interval's folder gets its index.json (the
 * processes that ended in it are there too) and the next interval starts.
 * 0 or -errno after a message. */
int host__cut(struct host *h, double elapsed_s);

/* A process profiled so far, as a live view sees it: a running one with its
 * profile (being built), an ended one with its figures (profile NULL). */
struct host_proc_info {
	int pid;
	const char *comm;
	const struct profile *profile; /* NULL once ended */
	double total_s, python_s, native_s, system_s;
	uint64_t samples;
};

/* Calls fn for each process profiled so far, in the order they were found;
 * a running one's figures are left 0 (its profile has them). */
void host__each_profiled(const struct host *h,
			 void (*fn)(void *ctx, const struct host_proc_info *pi), void *ctx);

#endif /* HOST_H */
