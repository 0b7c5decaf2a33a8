/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A profiling session: the set of tracked processes (the root, its children,
 * later a whole host), their interpreters, and the path of each sample from a
 * BPF record to a resolved stack in the profile.
 */
#ifndef SESSION_H
#define SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;
struct py_proc;
struct py_walk_cfg;
struct json_object;
struct user_creds;

struct session_opts {
	struct profile *profile;
	uint64_t period_ns;
	int ncpus;
	bool memory;	  /* the allocation sampler is preloaded into the program */
	bool async_waits; /* await attribution (pyasync.h) */
	/* Whose files the profile may show: source text is read with these
	 * file-system credentials (the user under sudo), never root's. */
	const struct user_creds *creds;
};

/*
 * What the session asks of the BPF side: in the program, adapters to the
 * loader (main.c); in tests, a stand-in.  ctx is passed back to each; all
 * are set.  0 or -errno unless said otherwise.
 */
struct session_bpf {
	void *ctx;
	/* Starts recording tgid (its threads, and its children when
	 * following); the BPF side tells a recycled PID by its start time. */
	int (*track)(void *ctx, int tgid);
	int (*untrack)(void *ctx, int tgid);
	/* Gives the existing threads of tgid their off-CPU state; returns how
	 * many. */
	int (*seed_threads)(void *ctx, int tgid);
	/* Gives a tracked process its walk configuration. */
	/* The process's walk configuration and its GIL's locks [gil_lo, gil_hi)
	 * (0, 0: GIL wait not measured). */
	int (*set_python)(void *ctx, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
			  uint64_t gil_hi);
	/* The BPF counters summed over CPUs, into out[STAT_MAX]. */
	int (*stats)(void *ctx, uint64_t *out);
	/* Kernel time spent in the sampling program, where measured. */
	int (*prog_runtime)(void *ctx, uint64_t *run_ns, uint64_t *run_cnt);
	/* CPU samples inside our uprobes' hits are told apart (counted as
	 * probe_samples, reported as probe_overhead_s). */
	bool probe_check;
};

struct session;

struct session *session__new(const struct session_opts *opts);
void session__free(struct session *s);
/* The end of the run: the event loops' idle time since their last task
 * snapshot goes to the tasks as it found them (pyasync__flush). */
void session__flush_async(struct session *s);
/* The BPF side feeding this session (the loader needs the session as its
 * callback context, so it is made second); *bpf is copied. */
void session__set_bpf(struct session *s, const struct session_bpf *bpf);

/* Starts following pid.  With pp (an attach), the process is already known
 * as Python; without it (a launch), it is recognised after its exec. */
int session__add_root(struct session *s, int pid, const struct py_proc *pp);
/* The ring-buffer callback. */
int session__handle(void *ctx, const void *data, size_t size);
/* Periodic work: retries recognising processes that are starting up.
 * now_ns is CLOCK_MONOTONIC. */
void session__tick(struct session *s, uint64_t now_ns);
/* How long the loader may wait before it drains the ring buffer again, in
 * milliseconds: shorter while code objects come and go. */
int session__poll_ms(const struct session *s, uint64_t now_ns);
/* True once the root process has exited. */
bool session__root_exited(const struct session *s);
/* The root's interpreter, if recognised. */
const struct py_proc *session__root_python(const struct session *s);
/* How many processes were recognised as Python. */
int session__interpreters(const struct session *s);
/* Why the root process was not profiled, in a phrase. */
void session__explain_root(const struct session *s, char *buf, size_t n);
/* Facts about the run for the profile's "scalene_bpf" key. */
struct json_object *session__facts(struct session *s);
/* What memory profiling could not measure, one sentence per line (empty
 * when it all went as planned); the caller frees it. */
char *session__memory_warnings(struct session *s);
/* A process's view of a file name: its root and working directory. */
char *session__read_source(void *ctx, const char *filename, size_t *len, double *mtime);

#endif /* SESSION_H */
