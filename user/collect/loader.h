/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF side, opened, configured, loaded and attached; the only module that
 * knows the skeleton.  Records reach the caller through a callback while it
 * polls.
 */
#ifndef LOADER_H
#define LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>
#include "abi.h"
#include "collect/counts.h"

typedef int (*loader_event_fn)(void *ctx, const void *data, size_t size);

/* The period of the CPU timers at rate_hz samples per second per CPU (1
 * and more), in whole ns: the one conversion, which the BPF side's samples
 * and everything that weighs them use.  The timers then draw each period
 * around it (loader.c: rearm). */
uint64_t loader__period_ns(unsigned int rate_hz);

/* How the walker's loops are verified (profile.bpf.c: SBPF_LOOPS). */
enum loader_loops {
	LOADER_LOOPS_NONE = 0,
	LOADER_LOOPS_ITER,     /* the numeric iterator kfuncs (Linux 6.4+) */
	LOADER_LOOPS_BPF_LOOP, /* the bpf_loop helper (5.17+) */
	LOADER_LOOPS_BOUNDED,  /* plain loops, and the build for 5.10-5.16 */
};

/* What the kernel has that the BPF side uses, as found at open. */
struct loader_kernel {
	char release[65];
	enum loader_loops loops;
	bool task_work;	     /* off-CPU records by task work (6.18+), else at syscall exit */
	bool switch_state;   /* sched_switch passes prev_state (5.18+), else read from the task */
	uint64_t stack_size; /* a task's kernel stack (THREAD_SIZE), for the 5.10-5.16 build */
	/* Where a CPU's KVM steal-time area lies from its run queue (both
	 * per-CPU variables), in bytes; 0: no such area in this kernel. */
	int64_t steal_from_rq;
};

struct loader_opts {
	unsigned int rate_hz; /* samples per second per CPU */
	bool follow_children;
	bool track_all;	 /* every exec on the host becomes an EV_EXEC record */
	bool count_idle; /* parked threads' waiting becomes records too */
	/* CPU samples go with what unwinding their native stacks needs
	 * (EV_NATIVE records, never counted in BPF). */
	bool native_stacks;
	/* ... unwound in BPF with the tables given by loader__unwind_sink()
	 * (--native-unwind bpf). */
	bool native_unwind_bpf;
	/* CPU and off-CPU samples are counted in BPF and drained with
	 * loader__drain_counts() (system-wide). */
	bool aggregate;
	unsigned int max_counts;    /* entries of the count table (0: default) */
	unsigned int max_procs;	    /* tracked processes at once */
	unsigned int ringbuf_bytes; /* power of two */
	/* The allocation sampler library whose probes to attach (run mode with
	 * memory profiling), or NULL. */
	const char *sampler_path;
	/* The GPU library whose probes to attach (run mode, see user/gpu/gpu.h),
	 * or NULL. */
	const char *gpu_path;
	/* Attach mode: load the allocation uprobe programs, sampling this many
	 * bytes apart on average (0: not loaded). */
	uint64_t uprobe_sample_bytes;
	loader_event_fn on_event;
	void *ctx;
};

struct loader;
struct elf_file;

/* NULL with errno set; the reason has been printed. */
struct loader *loader__open(const struct loader_opts *opts);
void loader__free(struct loader *l);
/* loader__free(), leaving the kernel's slow removal of uprobes (~0.1 s each)
 * to a child process after this one exits: for the end of a run. */
void loader__free_detached(struct loader *l);

/* Starts recording tgid (its threads, and its children when following). */
int loader__track(struct loader *l, int tgid, uint64_t start_time);
int loader__untrack(struct loader *l, int tgid);
/* Gives the existing threads of tgid their off-CPU state, so that a thread
 * that stays blocked from the start is still accounted; returns how many. */
int loader__seed_threads(struct loader *l, int tgid);
/* Gives a tracked process its walk configuration and its GIL's locks
 * [gil_lo, gil_hi) (0, 0: GIL wait not measured). */
int loader__set_python(struct loader *l, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
		       uint64_t gil_hi);
/* The allocation uprobe hits of tgid's current image so far: 0 or -errno. */
int loader__alloc_hits(struct loader *l, int tgid, uint64_t *hits);
/* Waits up to timeout_ms for records, then drains; records or -errno. */
int loader__poll(struct loader *l, int timeout_ms);
/* Drains the ring buffer; returns records consumed or -errno. */
int loader__drain(struct loader *l);
/* Hands the code objects copied as they were freed (EV_CODE, their ring
 * buffer of their own) to the record callback; loader__poll does it before
 * each read of the other records.  The count, or -errno. */
int loader__drain_code_copies(struct loader *l);
/* With aggregate: the ring buffer, then the counts (see counts.h), handed to
 * on_event as sample records; records or -errno (0 without aggregate). */
int loader__drain_counts(struct loader *l, enum counts_drain how, int tgid, uint32_t gen);
/* False without aggregate. */
bool loader__counts_stats(struct loader *l, struct counts_stats *out);
/* Sums the per-CPU counters into out[STAT_MAX]. */
int loader__stats(struct loader *l, uint64_t *out);

/*
 * --native-unwind bpf: where the unwind tables go (bpf/abi.h): the BPF maps
 * here, plain memory in the tests (symbolize/utables.h keeps them).
 */
struct unwind_sink {
	/* Rows [lo, lo + n) of the array, and pages of the page index: 0 or
	 * -errno. */
	int (*put_rows)(void *ctx, __u32 lo, const struct unwind_row *rows, __u32 n);
	int (*put_pages)(void *ctx, __u32 lo, const struct unwind_page *pages, __u32 n);
	/* The process's mappings: 0 or -errno. */
	int (*put_proc)(void *ctx, int pid, const struct unwind_proc *up);
	void (*del_proc)(void *ctx, int pid);
	void *ctx;
	__u32 max_rows, max_pages; /* the arrays' sizes */
};
/* 0, or -ENOTSUP when not loaded for it. */
int loader__unwind_sink(struct loader *l, struct unwind_sink *out);
/* Kernel time spent in the sampling program, if kernel.bpf_stats_enabled. */
int loader__prog_runtime(struct loader *l, uint64_t *run_ns, uint64_t *run_cnt);

/* Whether CPU samples taken inside our uprobes' hits are told apart
 * (counted as bpf.probe_samples, not given to the program's lines). */
bool loader__probe_check(struct loader *l);
/* Where off-CPU records are made: "task_work" (a task work queued at the
 * switch-in, Linux 6.18+) or "sys_exit" (a check at every system call exit
 * of the host). */
const char *loader__offcpu_hook(const struct loader *l);

enum alloc_prog {
	ALLOC_MALLOC = 0, /* (size) */
	ALLOC_CALLOC,	  /* (n, size) */
	ALLOC_REALLOC,	  /* (ptr, size) */
	ALLOC_PY_MALLOC,  /* the same, for Python's allocator */
	ALLOC_PY_CALLOC,
	ALLOC_PY_REALLOC,
	ALLOC_PROGS,
};

struct probe_link;

/* Attaches allocation program `which` at file offset file_offset of the ELF
 * file at path, for process pid (-1: any); the link in *out when out is not
 * NULL.  0 or -errno. */
int loader__attach_alloc_probe(struct loader *l, enum alloc_prog which, int pid, const char *path,
			       uint64_t file_offset, struct probe_link **out);
/* Attaches the probe on the code-object deallocator at file offset
 * file_offset of the interpreter at path, for every process that maps it
 * (see struct pywalk_owner).  0 or -errno. */
int loader__attach_code_probe(struct loader *l, const char *path, uint64_t file_offset);
/* The same, placed by a thread of its own: the placing's id, or -errno when
 * it could not start. */
int loader__code_probe_begin(struct loader *l, const char *path, uint64_t file_offset);
/* How placing id went: -EINPROGRESS while it goes on, then 0 (placed, its
 * link kept with the others) or -errno, the same at every later call. */
int loader__code_probe_result(struct loader *l, int id);
/* Lets go of an allocation probe during the run: in a thread of the
 * loader's, as the kernel takes its time to remove a uprobe.  0, -ENOENT
 * (not ours), -ENOMEM (kept until the end). */
int loader__detach_alloc_probe(struct loader *l, struct probe_link *link);

/* Attach mode's duty cycle: from the first call on, allocation samples
 * count only from lo_ns to hi_ns (CLOCK_MONOTONIC); before it, all count
 * (no duty cycle). */
void loader__mem_window(struct loader *l, uint64_t lo_ns, uint64_t hi_ns);

/* Whether the probe function at file offset off of e (a library of ours)
 * begins with the instruction probes.h gives it, the one the kernel handles
 * without stepping it out of line: 0, -EINVAL (another, or off is past the
 * file), -errno. */
int loader__probe_entry_check(const struct elf_file *e, uint64_t off);

/* Every probe of the allocation sampler (gpu false) or the GPU library (gpu
 * true) at path, found and checked as above: 0 or the first error. */
int loader__probes_check(const char *path, bool gpu);

/* The kind of the uprobes placed so far: "uprobe_multi" (links that take no
 * global lock of the kernel's), "perf_event" (older kernels, or
 * SCALENE_BPF_PERF_UPROBES=1), NULL before the first. */
const char *loader__probe_links(void);

/* A feature the kernel lacks, what is done instead, and what that costs. */
struct loader_fallback {
	const char *missing, *instead, *cost;
};

#define LOADER_MAX_FALLBACKS 6

/* The kernel as the profile reports it: what was found and each fallback
 * taken so far (the uprobes' once some are placed). */
struct loader_kernel_report {
	const char *release;
	const char *build;	 /* the BPF build loaded: "iterators", "bpf_loop", "bounded" */
	const char *sleep_state; /* "sched_switch" (its argument, 5.18+) or "task" */
	const char *offcpu_hook; /* loader__offcpu_hook() */
	const char *uprobes;	 /* loader__probe_links(), NULL: none placed */
	int nfallbacks;
	struct loader_fallback fallbacks[LOADER_MAX_FALLBACKS];
};

void loader__kernel_report(const struct loader *l, struct loader_kernel_report *out);

/* What attaching and detaching allocation probes took (wall clock). */
struct loader_link_stats {
	uint64_t attached, attach_ns;
	uint64_t detached, detach_ns, detach_max_ns;
	uint64_t pending; /* queued for the detaching thread */
};
void loader__link_stats(struct loader *l, struct loader_link_stats *out);
/* Measures what one hit of an allocation uprobe costs the probed thread on
 * this machine (trap and BPF program, for a process that is not tracked):
 * ns per hit, or a negative errno. */
double loader__uprobe_cost_ns(struct loader *l);

/* Start time of a process in clock ticks since boot (/proc/PID/stat field
 * 22), the unit the BPF side compares to tell a recycled PID; 0 on failure. */
uint64_t proc_start_ticks(int pid);
/* CPU time of a process's live threads, user and system, ns (each one's
 * /proc/PID/task/TID/schedstat); 0 on failure.  A thread that ends takes
 * its time out of the sum. */
uint64_t proc_cpu_ns(int pid);

#endif /* LOADER_H */
