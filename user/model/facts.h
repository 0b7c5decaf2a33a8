/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The profiler's facts about a run, as plain data: its counters and losses,
 * the interpreters and threads it saw, what memory sampling and await
 * attribution measured and cost, what the reader should be warned of.  The
 * session, the allocation uprobes and the @profile hook fill them; only the
 * output (output_facts.c) turns them into the profile's "scalene_bpf" object.
 *
 * Units are those of the sources (ns, bytes): the output converts them to
 * the profile's seconds and MB.  Lists are bounded (the threads by the
 * profile's own limit); what a fact borrows (a thread's name, a command
 * line) must outlive the writing of the profile.
 */
#ifndef FACTS_H
#define FACTS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h>

#include "abi.h"
#include "gpu/gpu.h"
#include "collect/loader.h"
#include "collect/nvml.h"
#include "target/labels.h"
#include "symbolize/utables.h"
#include "model/profile.h"

/* Distinct interpreters described; more are counted only. */
#define FACTS_MAX_INTERPRETERS 16
/* asyncio layouts (found, or why not) described. */
#define FACTS_MAX_LAYOUTS 16
/* Allocation functions the uprobes were placed on, or not. */
#define FACTS_MAX_PROBES 16
#define FACTS_MAX_WARNINGS 8

/* One Python interpreter (a distinct binary, or system-wide the process's). */
struct facts_interpreter {
	int pid;
	char version[32];
	char path[PATH_MAX]; /* the binary holding the interpreter */
	bool static_build;
	bool free_threaded; /* a --disable-gil build */
	int gil_enabled;    /* free-threaded: its GIL on (1) or off (0) when recognised; -1 */
	bool gil_wait_measured;
	char gil_wait_unmeasured[160]; /* why not, when not */
	/* Fields its _Py_DebugOffsets placed elsewhere than the table, taken
	 * from it ("" when they agree: python.h, layout_note). */
	char layout_from_interpreter[256];
};

struct facts_thread {
	int pid, tid;
	const char *name; /* borrowed from the profile; NULL: "" */
	bool main_thread;
	uint64_t samples;
	double cpu_ns, blocked_ns, gil_ns;
};

/* What the asyncio probe found in one process, or why it found nothing. */
struct facts_async_layout {
	int pid;
	char python[32]; /* its version */
	bool found;
	bool c_task; /* found: asyncio.Task is the C _asyncio.Task */
	char task_type[64];
	char unavailable[256]; /* not found: why */
	/* 3.14+: the file whose published offsets (_AsyncioDebug) were taken,
	 * or why none were; the fields where the probe or the tables had
	 * other values ("" when none). */
	char published[512];
	char published_unavailable[256];
	char disagreements[256];
};

/* Await attribution: how the await fields were measured, what it cost. */
struct facts_async {
	double await_ns, await_outside_profiled_files_ns;
	/* Where that time waited (frames interned in the profile). */
	struct await_outside outside[MAX_AWAIT_OUTSIDE];
	int noutside;
	double outside_other_ns;
	double idle_loop_ns, idle_loop_without_tasks_ns, idle_after_last_snapshot_ns;
	double idle_before_layout_ns; /* not credited to any line */
	int loops;
	uint64_t polls, idle_polls, idle_unchecked_polls;
	uint64_t snapshots, partial_snapshots, sampled_snapshots;
	/* Each snapshot hands each idle loop's tasks the idle time since the
	 * one before (loop_snapshots times), and those differ: how many equally
	 * weighted ones the shares are worth. */
	uint64_t loop_snapshots;
	double snapshots_effective;
	int task_sample; /* members read per snapshot at most */
	uint64_t task_set_unreadable, tasks_read, tasks_unreadable, tasks_unstarted;
	uint64_t tasks_resumed;
	int max_tasks;
	uint64_t await_stacks_dropped;
	double reader_ns;	/* the reader's own time */
	double live_gap_max_ns; /* the longest gap between looks at a running loop */
	uint64_t reads, read_calls;
	struct facts_async_layout layouts[FACTS_MAX_LAYOUTS];
	int nlayouts;
	bool uvloop; /* a uvloop loop ran: its waiting is not read */
};

/* The BPF side's counters and the session's own. */
struct facts_bpf {
	bool have_stats;	  /* each counter is written by name */
	uint64_t stats[STAT_MAX]; /* as read (used for the rates even when not) */
	/* System-wide, the counters are the host's: the process's own CPU
	 * samples are written as "samples", the host's as host_samples. */
	bool host;
	int64_t process_samples;
	bool have_runtime; /* the sampling program's kernel time was read */
	uint64_t run_ns, run_cnt;
	uint64_t records, bad_records, frames_unreadable, code_cache_evictions;
	uint64_t frames_from_copies, code_copies_unused;
	/* Of frames_unreadable: BPF could not read the code object; the
	 * sample came before the code deallocator's probe was placed. */
	uint64_t frames_unread_in_bpf, frames_unread_before_probe;
	uint64_t stacks_dropped, truncated_stacks;
	const char *offcpu_hook; /* loader__offcpu_hook(), NULL: not known */
	/* Interpreter files given the probe on their code-object deallocator
	 * (walks keep code objects from one to the next), or not, and why;
	 * placed before a launched program's exec (run with an interpreter's
	 * own file as the command). */
	uint64_t code_probes_placed, code_probes_failed, code_probes_before_exec;
	const char *code_probe_why;
};

/* --native: how the samples' native stacks were had (session_native.c;
 * the unwinds are counted for the whole run). */
struct facts_native {
	uint64_t stack_copy_bytes; /* of each sample's stack, at most */
	uint64_t samples;	   /* given a whole stack */
	uint64_t unwinds, frames;  /* native frames found */
	uint64_t copied_bytes;	   /* of the stacks copied for them */
	/* Why the unwinds ended: at the thread's first frame, at the end of
	 * the copy, at code with no unwind data, at the depth limit, with no
	 * user registers. */
	uint64_t ended_root, ended_copy, ended_no_cfi, ended_depth, ended_no_regs;
	uint64_t calls_unpaired; /* eval-loop frames and Python calls did not pair up */
	uint64_t no_unwinder;	 /* samples of a process libdw could not take */
	bool frame_sp;		 /* libdw gives frames' stack pointers (0.188+) */
	/* --native-unwind bpf: stacks unwound in BPF, their frames, why they
	 * ended (enum unwind_bpf_end); the copies above are the samples taken
	 * before BPF had the process's tables.  The tables given. */
	bool bpf;
	uint64_t bpf_unwinds, bpf_frames;
	uint64_t bpf_outside;	 /* copies sent for code of no table (a refresh due) */
	uint64_t bpf_unfollowed; /* copies sent at a rule BPF does not follow */
	uint64_t bpf_ends[UNWIND_BPF_NO_TABLES + 1];
	struct utables_stats tables;
};

/* Memory from the preloaded sampler (run): its exact counts, what the
 * profile holds, what was lost. */
struct facts_memory {
	int python_processes, sampler_loaded, sampler_not_loaded;
	uint64_t sample_bytes, copy_sample_bytes;
	const char *probe_links; /* loader__probe_links() */
	/* The sampler's exact counts, of the processes whose final counts
	 * could be read. */
	int counted_processes;
	double alloc_bytes, python_bytes, copy_bytes;
	double sampled_alloc_bytes, sampled_python_bytes, sampled_copy_bytes;
	/* What reached the profile. */
	double profiled_alloc_bytes, profiled_python_bytes, profiled_net_growth_bytes;
	double profiled_copy_bytes, profiled_native_threads_bytes;
	double profiled_unattributed_bytes, profiled_not_python_bytes;
	uint64_t records, records_lost;
	uint64_t frees_of_unknown_blocks, untracked_blocks, table_overflows, stale_frees;
	int foreign_allocator_processes, native_allocations_unseen_processes;
	int python_allocator_unwrapped_processes;
};

/* --pid --memory with the sampler put into the running interpreter
 * (user/session/meminject.h). */
struct facts_inject {
	bool requested, attached;
	char method[16];   /* remote_exec (3.14+), pending_call (3.9-3.13) */
	double answer_s;   /* from the request to the script's answer; < 0: none */
	double attached_s; /* how long the sampler was in */
	char detach[32];   /* restored, covered, pending, gone, attached, never attached */
	char why[512];	   /* why it did not attach */
	uint64_t sample_bytes;
	/* From the sampler at detach: Python bytes allocated while attached,
	 * and its probes' hits (sampled allocations and their frees). */
	uint64_t python_bytes, probe_hits;
};

/* Memory from uprobes on the allocators (--pid --memory, --all --memory). */
struct facts_probe_site {
	const char *function; /* a constant */
	char module[64];
	int offset; /* into the function; < 0: not probed */
	char not_probed[160];
};

/* --pid --memory's probes placed for a window of each cycle, to keep
 * their cost within a budget (user/session/memduty.h). */
struct facts_duty {
	double budget; /* the most of the program's CPU time they may cost */
	double cycle_s;
	uint64_t windows;
	double open_s;		      /* the windows' time, all together */
	double open_part;	      /* of the profile's */
	double part_min, part_max;    /* a window's part of its cycle */
	double hit_ns;		      /* a hit's cost, taken for the budget */
	bool hit_measured;	      /* measured here (else assumed) */
	uint64_t hits;		      /* the probes', in and out of windows */
	double cost_s;		      /* hits x hit_ns */
	double program_cpu_s;	      /* the program's CPU time less that */
	double slowdown;	      /* the program's pace out of windows over in them */
	double slowdown_rel_error;    /* its relative standard error; < 0: none */
	uint64_t partial_windows;     /* windows shorter than their cycle, behind it */
	double own_expected, own_had; /* its own CPU samples (memduty.c: slowdown) */
	uint64_t held_dropped;	      /* samples dropped while held to be weighed */
	double hits_estimated;	      /* allocation calls in all the time */
	double window_trap_share;     /* of the program's CPU time in the windows, the traps' */
	bool totals_low;	      /* so much that the totals are low (memduty.h) */
	double place_s;		      /* the loader's time placing the probes */
	int place_failed;	      /* windows some probe could not be placed in */
};

struct facts_uprobes {
	struct facts_probe_site probes[FACTS_MAX_PROBES];
	int nprobes;
	uint64_t hits;
	double elapsed_s;
	double ns_per_hit;	 /* measured here; < 0 if it could not be */
	const char *probe_links; /* loader__probe_links() */
	/* --all: the probes of one process of many; hits and elapsed_s are
	 * its own, the host's totals are in index.json.  hits_known false: its
	 * count was lost (a PID used again before its exit was read). */
	bool host;
	bool hits_known;
	bool has_duty; /* --pid: placed for a duty cycle */
	struct facts_duty duty;
};

/* The @profile builtin (run). */
struct facts_decorator {
	bool provided;	 /* the builtin was given to the program */
	const char *why; /* why it was or was not */
	int functions;
	uint64_t bad_report_lines, refused_past_limit;
};

/* Who a process is (system-wide): the same in its profile and in the
 * index of the run. */
struct facts_process {
	int pid;
	int ns_pid; /* < 0: not known */
	int ppid;
	long uid;
	const char *comm;
	const char *const *cmdline; /* borrowed; NULL: not known (null) */
	int ncmdline;
	const char *ended;		  /* how its image ended; NULL: not said */
	const struct proc_labels *labels; /* where it runs; NULL: not read */
};

/* GPU (scalene_bpf.gpu): the library in each process, what came of it. */
#define FACTS_GPU_PROCS 16
struct facts_gpu_proc {
	int pid;
	bool final;   /* its state as the exit handler left it */
	int read_err; /* reading its state: 0 or -errno */
	/* GPU_S_LOST: seconds from when it began collecting to when it
	 * stopped (-1: not known) */
	double lost_after_s;
	struct scalene_bpf_gpu_state st;
};

struct facts_gpu {
	/* CUPTI in the program (run), or NVML sampled from outside (--pid). */
	bool nvml;
	struct nvml_facts nv;	/* NVML: when it opened */
	char library[PATH_MAX]; /* given to the program as CUDA_INJECTION64_PATH */
	char off[256];		/* why GPU profiling is off ("" when on) */
	struct profile_gpu_totals totals;
	struct facts_gpu_proc procs[FACTS_GPU_PROCS];
	int nprocs;
	uint64_t procs_past; /* reporting processes past the table */
	uint64_t batches, bad_batches;
	uint64_t stacks_dropped; /* call stacks not kept: the table was full */
	uint64_t calls_no_stack; /* calls whose stack was not there to read */
};

struct facts {
	bool has_gpu;
	struct facts_gpu gpu;
	bool has_async;
	struct facts_async async;
	unsigned int rate_hz; /* the CPU samples' rate, as given */
	uint64_t period_ns;   /* ... and the timers' period (loader__period_ns) */
	double total_sampled_ns;
	double not_python_ns;
	bool probe_check; /* CPU inside our uprobes' hits is told apart */
	double gil_wait_ns;
	double unattributed_ns[UNATTR_MAX];
	double native_threads_ns; /* credited to the main thread's line */
	struct facts_bpf bpf;
	bool has_native;
	struct facts_native native;
	bool has_kernel;
	struct loader_kernel_report kernel;
	bool has_memory;
	struct facts_memory memory;
	struct facts_thread *threads; /* malloc'ed */
	int nthreads;
	uint64_t processes_retired, threads_folded;
	struct facts_interpreter interpreters[FACTS_MAX_INTERPRETERS];
	int ninterpreters;
	char *warnings[FACTS_MAX_WARNINGS]; /* malloc'ed */
	int nwarnings;
	/* Filled by the callers of the session. */
	bool has_decorator;
	struct facts_decorator decorator;
	bool has_uprobes; /* attached: no sampler memory (has_memory) then */
	struct facts_uprobes uprobes;
	bool has_process;
	struct facts_process process;
	bool has_inject; /* attached: the sampler put into the process */
	struct facts_inject inject;
};

/* A zeroed struct facts; NULL (errno set) when out of memory. */
struct facts *facts__new(void);
/* Frees f and what it owns (threads, warnings); NULL is a no-op. */
void facts__free(struct facts *f);
/* Adds a copy of msg to the warnings: 0, -ENOSPC past FACTS_MAX_WARNINGS,
 * -ENOMEM. */
int facts__warn(struct facts *f, const char *msg);

#endif /* FACTS_H */
