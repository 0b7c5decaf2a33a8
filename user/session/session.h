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

#include "collect/loader.h"

struct facts;
struct loader_kernel_report;
struct profile;
struct py_proc;
struct py_walk_cfg;
struct user_creds;
struct counts_stats;

/* How a process's image ended, for its host (system-wide). */
enum session_end_why {
	END_EXIT = 0, /* the process exited */
	END_EXEC,     /* it exec'ed: a new image (and a new profile) follows */
	END_RUNNING,  /* still running at the end of the run */
};

struct session_end {
	enum session_end_why why;
	int exit_code;	    /* END_EXIT: the wait status's code, as the kernel has it */
	uint64_t maxrss_kb; /* peak resident set so far (0: not known; for a
			     * process still running the host reads VmHWM) */
	uint64_t ts_ns;	    /* CLOCK_MONOTONIC */
	/* The image's allocation uprobe hits (--all --memory): from its exec
	 * or exit record, or read from BPF for one still running; known false
	 * where neither could be had. */
	uint64_t alloc_hits;
	bool alloc_hits_known;
	struct profile *profile;
	/* For output_meta: the process's files as it saw them (its root and
	 * working directory, held open), read by session__read_proc_source. */
	void *source_ctx;
};

/* A Python process, as the session knows it. */
struct session_proc {
	int pid;
	int ppid;	   /* the followed parent that forked it, or 0 */
	uint64_t start_ns; /* its fork or exec record's time (0: found running) */
	const struct py_proc *pp;
};

/*
 * System-wide (--all): the session reports each process to its host, and
 * each Python process gets a profile of its own from it.  A process that is
 * not Python is let go at once (its next exec is reported again).
 */
struct session_host {
	void *ctx;
	/* Whether to follow pid: it exec'ed (ppid 0), or a followed ppid forked
	 * it (filters). */
	bool (*accept)(void *ctx, int pid, int ppid);
	/* A process is Python: its profile, made and owned by the host (NULL:
	 * let it go). */
	struct profile *(*python)(void *ctx, const struct session_proc *sp);
	/* pid was let go: not Python, or Python that cannot be profiled (why
	 * says; NULL for not Python). */
	void (*skipped)(void *ctx, int pid, const char *why);
	/* pid's image ended; the host writes its profile now (the session
	 * adds nothing to it after this call) and frees it when it likes. */
	void (*ended)(void *ctx, int pid, const struct session_end *e);
};

struct session_opts {
	struct profile *profile; /* NULL with host */
	const struct session_host *host;
	unsigned int rate_hz; /* the CPU samples' rate, as given (loader__period_ns) */
	int ncpus;
	bool memory;	  /* the allocation sampler is preloaded into the program */
	bool async_waits; /* await attribution (pyasync.h) */
	bool native;	  /* CPU samples come with their native stacks (--native) */
	/* System-wide: the counts kept in BPF are drained this often (0:
	 * COUNTS_DRAIN_NS). */
	uint64_t drain_ns;
	/* GPU: the library given to the program (CUDA_INJECTION64_PATH), or
	 * NULL with why GPU profiling is off in gpu_off (NULL: not asked). */
	const char *gpu_library;
	const char *gpu_off;
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
	/* Places the probe on an interpreter's code-object deallocator, at
	 * file offset off of path (for every process mapping it); NULL: none.
	 * 0 or -errno. */
	int (*code_probe)(void *ctx, const char *path, uint64_t off);
	/* The same placed in the background, for a process still starting:
	 * an id for code_probe_result, or -errno; NULL: none. */
	int (*code_probe_begin)(void *ctx, const char *path, uint64_t off);
	/* How that placing went: -EINPROGRESS, then 0 or -errno. */
	int (*code_probe_result)(void *ctx, int id);
	/* Hands the code objects copied as they were freed (EV_CODE records)
	 * to session__handle now; NULL: none are. */
	int (*code_copies)(void *ctx);
	/* The allocation uprobe hits of tgid's current image so far (NULL:
	 * none counted). */
	int (*alloc_hits)(void *ctx, int tgid, uint64_t *hits);
	/* The BPF counters summed over CPUs, into out[STAT_MAX]. */
	int (*stats)(void *ctx, uint64_t *out);
	/* Kernel time spent in the sampling program, where measured. */
	int (*prog_runtime)(void *ctx, uint64_t *run_ns, uint64_t *run_cnt);
	/* CPU samples inside our uprobes' hits are told apart (counted as
	 * probe_samples, reported as probe_overhead_s). */
	bool probe_check;
	/* The kind of our uprobes (loader__probe_links), NULL: none placed. */
	const char *probe_links;
	/* Where off-CPU records are made (loader__offcpu_hook). */
	const char *offcpu_hook;
	/* The kernel as the profile reports it (loader__kernel_report), at
	 * the end; NULL: not known. */
	void (*kernel_report)(void *ctx, struct loader_kernel_report *out);
	/* Samples counted in BPF (system-wide): hands the counts of the image
	 * (tgid, gen), or those due (SESSION_COUNTS_DUE) or all of them
	 * (SESSION_COUNTS_ALL), to session__handle as sample records.  NULL
	 * when samples come one by one. */
	int (*drain_counts)(void *ctx, int tgid, uint32_t gen);
	/* What the drains did; false when samples come one by one. */
	bool (*counts_stats)(void *ctx, struct counts_stats *out);
	/* --native-unwind bpf: where each process's unwind tables go
	 * (loader__unwind_sink); unwind.put_rows NULL: stacks come as copies. */
	struct unwind_sink unwind;
};

#define SESSION_COUNTS_DUE (-1)
#define SESSION_COUNTS_ALL (-2)

struct session;

struct session *session__new(const struct session_opts *opts);
void session__free(struct session *s);
/* The end of the run: the event loops' idle time since their last task
 * snapshot goes to the tasks as it found them (pyasync__flush). */
/* The GPU's use given to every sample still waiting for it: at the end,
 * once the last device records are in. */
void session__settle_gpu(struct session *s);
void session__flush_async(struct session *s);
/* The BPF side feeding this session (the loader needs the session as its
 * callback context, so it is made second); *bpf is copied. */
void session__set_bpf(struct session *s, const struct session_bpf *bpf);

/* Starts following pid.  With pp (an attach), the process is already known
 * as Python; without it (a launch), it is recognised after its exec. */
int session__add_root(struct session *s, int pid, const struct py_proc *pp);

/* Leaves the threads of process pid named comm out of the profile from now
 * on: a thread the profiler itself put there (the loaded sampler's watcher,
 * SCALENE_BPF_SAMPLER_THREAD).  0, or -ENOENT (pid not followed). */
int session__leave_out_threads(struct session *s, int pid, const char *comm);
/* A launched root that has not exec'ed yet will exec exe: the probe on its
 * interpreter's code-object deallocator is placed now, before any of its
 * code runs (none of the code objects its start-up frees goes uncopied).
 * Nothing is placed for a file that holds no interpreter we know, or a
 * script, whose interpreter is found at its exec as before. */
void session__root_will_exec(struct session *s, const char *exe);
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
/* Facts about the run for the profile's "scalene_bpf" key, into f (a
 * zeroed facts__new()): 0 or -ENOMEM.  Its threads borrow the profile's
 * names. */
int session__facts(struct session *s, struct facts *f);
/* System-wide: the same facts for one process's profile (during its
 * host->ended call): 0, -ENOENT (not followed), -ENOMEM. */
int session__proc_facts(struct session *s, int pid, struct facts *f);
/* The allocation uprobe hits of pid's current image so far (--all
 * --memory): 0, -ENOTSUP (not counted), -errno. */
int session__alloc_hits(struct session *s, int pid, uint64_t *hits);
/* System-wide: execs of a program already seen not to be Python, let go
 * without a look. */
uint64_t session__execs_known_not_python(const struct session *s);
/* System-wide: what the drains of the counts kept in BPF did; false when
 * samples came one by one. */
bool session__counts_stats(const struct session *s, struct counts_stats *out);
/* The BPF counters summed over CPUs, into out[STAT_MAX]; 0 or -errno. */
int session__bpf_stats(const struct session *s, uint64_t *out);
/* System-wide: a live process's source_ctx (see struct session_end), for a
 * profile written while it runs; NULL if it has no profile. */
void *session__proc_source_ctx(struct session *s, int pid);
/* System-wide: starts following a process found running at the start (the
 * host has accepted it); 0, or -errno when it is gone. */
int session__add_proc(struct session *s, int pid);
/* System-wide, at the end: each live profiled process's image ends
 * (END_RUNNING). */
void session__end_all(struct session *s);
/* System-wide, at a cut (--continuous): the counts drained now, as the
 * periodic drain does (BPF counts into the next epoch from here; a sample
 * counted into the closed one late comes with the next drain), and the
 * samples held back for the drain. */
void session__drain_counts(struct session *s);
/* A process's file as it sees it (source_ctx of struct session_end). */
char *session__read_proc_source(void *ctx, const char *filename, size_t *len, double *mtime);
/* What memory profiling could not measure, one sentence per line (empty
 * when it all went as planned); the caller frees it. */
char *session__memory_warnings(struct session *s);
/* A process's view of a file name: its root and working directory. */
char *session__read_source(void *ctx, const char *filename, size_t *len, double *mtime);

/* --pid --memory's duty cycle (memduty.h): from hold_memory(true), memory
 * samples are kept back, read but not added to the profile; release adds
 * those kept so far, each weighing factor times its own (factor 0: drops
 * them).  At most
 * MAX_HELD_MEM are kept: past that they are dropped (memory_dropped). */
void session__hold_memory(struct session *s, bool hold);
void session__release_memory(struct session *s, double factor);
uint64_t session__memory_dropped(const struct session *s);

#endif /* SESSION_H */
