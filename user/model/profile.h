/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The profile model: samples resolved to Python frames go in, per-file,
 * per-line, per-function, per-stack and per-thread aggregates come out.  It
 * knows nothing of BPF or of the output format.
 *
 * Time is kept in nanoseconds of sampled time.  Each sample is attributed to
 * the innermost frame whose file is profiled (the program's own files by
 * default), as Scalene does: time spent inside a library lands on the line of
 * the program that called it.
 */
#ifndef PROFILE_H
#define PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPU_SAMPLES_RESERVOIR 500
#define LINE_NATIVE_SYMS 8
/* Points kept of a footprint timeline (Scalene's limit). */
#define MEM_SERIES_MAX 100

/* One resolved Python frame; strings are interned (profile__intern). */
struct frame_ref {
	const char *filename;
	const char *qualname;
	int firstlineno;
	int line;
};

/* A native or kernel frame of a whole stack (sample_in.stack, --native):
 * filename is its object file (a kernel frame's: KERNEL_MODULE, or
 * "[kernel:NAME]" in a kernel module), qualname its symbol, line 0, and
 * firstlineno one of these; a Python frame's first line is >= 0. */
enum frame_native_kind {
	FRAME_NATIVE = -1,
	FRAME_KERNEL = -2,
};
#define KERNEL_MODULE "[kernel]"

static inline bool frame_ref_native(const struct frame_ref *f)
{
	return f->firstlineno < 0;
}

/* What a blocked thread waited in, as its session tells from the system
 * call it blocked in. */
enum blocked_kind {
	BLOCKED_OTHER = 0, /* sleeps, locks, or not known */
	BLOCKED_IO,	   /* reading, writing, polling files and sockets */
};

enum sample_where {
	WHERE_PYTHON = 0, /* user mode, in the interpreter, not under a call */
	WHERE_NATIVE,	  /* user mode, anywhere else, or C code a call runs */
	WHERE_SYSTEM,	  /* kernel mode */
};

/* Why a sample has no Python frame to go to. */
enum unattributed_reason {
	UNATTR_NO_PYTHON_THREAD = 0, /* a thread without a Python thread state */
	UNATTR_UNREADABLE,	     /* the stack or its code objects could not be read */
	UNATTR_NOT_PROFILED,	     /* frames only in files not profiled */
	UNATTR_NOT_DECORATED,	     /* with @profile: in no decorated function */
	UNATTR_MAX,
};

struct sample_in {
	uint32_t count; /* samples it stands for (0: one); times below are their sums */
	int tgid, tid;
	bool main_thread; /* the process's main thread */
	const char *thread_name;
	uint64_t ts_ns;	 /* CLOCK_MONOTONIC */
	uint64_t cpu_ns; /* on-CPU time */
	enum sample_where where;
	uint64_t offcpu_ns;		/* blocked time */
	uint64_t gil_ns;		/* of offcpu_ns: waiting for the GIL */
	enum blocked_kind blocked_kind; /* what offcpu_ns was spent in */
	uint64_t period_ns;		/* the sampling period (0: 1 ms) */
	bool gc;			/* on CPU in the interpreter's garbage collector */
	bool gil_held;			/* on CPU holding the GIL, another thread alive */
	bool not_python;		/* a process that is not (yet) Python: kept apart */
	double core_util;		/* program's CPU use / cores around this sample, 0..1 */
	const char *native_sym;		/* leaf symbol of a native sample, interned, or NULL */
	const char *native_module;
	uint64_t native_ip;		/* its instruction pointer, 0 if unknown */
	int64_t native_offset;		/* ip - the symbol's start, -1 if unknown */
	bool truncated;			/* stack deeper than the walker goes */
	int unattributed;		/* -1, or an enum unattributed_reason */
	const struct frame_ref *frames; /* innermost first */
	int nframes;
	/* --native: the whole stack, innermost first, for the stack table: the
	 * Python frames of frames with the native and kernel frames between and
	 * below them, and each frame's address (0 for a Python frame).  NULL:
	 * the stack is frames and the leaf native symbol. */
	const struct frame_ref *stack;
	const uint64_t *stack_ips;
	int nstack;
};

enum mem_kind {
	MEM_MALLOC = 0,
	MEM_FREE,
	MEM_COPY,
};

/* One sampled allocation event (see user/sampler/sampler.h for the meaning
 * of the weight and the flags). */
struct mem_in {
	int tgid, tid;
	uint64_t ts_ns; /* CLOCK_MONOTONIC */
	enum mem_kind kind;
	double bytes;	/* the sample's weight */
	double size;	/* malloc: the block's requested size */
	uint64_t addr;	/* the block (malloc, free) */
	bool python;	/* allocated through Python's allocator */
	bool untracked; /* malloc: its free will not be reported */
	bool restored;	/* malloc: a block live again after a failed realloc */
	bool no_frees;	/* from uprobes: frees are not seen, so no footprint */
	bool not_python;
	bool truncated;			/* stack deeper than the walker goes */
	int unattributed;		/* -1, or an enum unattributed_reason */
	const struct frame_ref *frames; /* innermost first */
	const int *offsets;		/* each frame's instruction offset */
	int nframes;
	/* --native: the whole stack (as sample_in's), or NULL. */
	const struct frame_ref *stack;
	const uint64_t *stack_ips;
	int nstack;
};

/* A footprint timeline: at most MEM_SERIES_MAX [time, bytes] points, evenly
 * thinned over the events (each point is the highest of its bucket). */
struct mem_series {
	double t[MEM_SERIES_MAX], y[MEM_SERIES_MAX];
	int n;
	uint64_t stride; /* events per point */
	uint64_t in_bucket;
	double bt, by; /* the open bucket's highest point */
};

/* Scalene's allocation sampling window: what `scalene run` passes its
 * allocator by default (--allocation-sampling-window), in bytes; and the
 * wider window blocks smaller than it are netted over here (see below). */
#define NET_WINDOW_BYTES 1048576.0
#define NET_SMALL_WINDOW_BYTES 10485760.0

/* Memory of a line or function.
 *
 * Two volumes.  Churn (malloc_bytes, python_bytes): every sampled
 * allocation's weight, the bytes the line asked of the allocators, freed
 * or not.  Net growth (net_*), Scalene's meaning of its memory fields
 * (scalene-semantics.md §2): a threshold sampler per allocating line fed by
 * the weights of its sampled blocks, up at their allocation and down at their
 * free; a net malloc sample of (up - down) fires when up reaches down + the
 * window, a net free sample symmetrically, and both counts restart.  A line
 * whose blocks die young never gets there; a line that keeps memory gets it
 * in window-sized samples; a block as large as the window is a sample by
 * itself, as in Scalene.  Blocks under NET_WINDOW_BYTES weigh about one
 * sampling mean (1 MiB) each when sampled, too coarse for a 1 MiB window:
 * they are netted apart, over NET_SMALL_WINDOW_BYTES.  Without frees
 * (uprobes) every sample is a net malloc sample: net equals churn.
 *
 * An "execution" is a run of one thread's net malloc samples on the same
 * line of the same frame, each at a later instruction than the one before:
 * a sample at the same or an earlier instruction (a loop went round) or
 * elsewhere starts a new one. */
struct mem_stats {
	double malloc_bytes, python_bytes, copy_bytes, freed_bytes;
	uint64_t samples;	  /* malloc samples */
	uint64_t mallocs;	  /* closed executions with a net malloc sample */
	double aggregate;	  /* sum of their high-water marks */
	double cur, hwm;	  /* net bytes of the open execution, and its high */
	int open;		  /* executions open on it */
	double peak;		  /* highest net bytes of one execution */
	uint64_t tracked;	  /* sampled blocks whose free would be seen */
	uint64_t reclaimed;	  /* ... of them freed */
	double live_bytes;	  /* weights of those not freed yet */
	struct mem_series series; /* process footprint at this line's net samples */

	/* Windows since the last net sample: [0] blocks of NET_WINDOW_BYTES and
	 * more, [1] smaller ones. */
	double win_up[2], win_down[2], win_python[2];
	double net_bytes, net_python_bytes; /* net malloc samples */
	double net_freed_bytes;		    /* net free samples */
	uint64_t net_samples;		    /* net malloc samples */
};

/* Await time of a line or function (Scalene's n_async_* fields): the event
 * loop's idle time, split evenly over the tasks suspended at that moment,
 * credited to each task's innermost await in the profiled files. */
#define AWAIT_NAMES_MAX 100
struct await_stats {
	double ns;		/* idle time credited here */
	double conc_sum;	/* tasks suspended, summed over the snapshots that found one here */
	uint64_t conc_n;	/* those snapshots */
	int conc_peak;		/* the most tasks suspended in one of them */
	uint64_t last_snapshot; /* the snapshot counted last (one count per snapshot) */
	const char *names[AWAIT_NAMES_MAX]; /* task names seen here, interned */
	int nnames;
	uint64_t names_dropped; /* names past AWAIT_NAMES_MAX */
};

struct native_sym {
	const char *name;
	const char *module;
	double ns;
};

struct line_stats {
	double python_ns, native_ns, system_ns;
	double blocked_ns;  /* part of system_ns spent off CPU */
	double gil_ns;	    /* part of blocked_ns spent waiting for the GIL */
	double gc_ns;	    /* CPU time spent collecting garbage, triggered here */
	double gil_held_ns; /* CPU time holding the GIL, another thread alive */
	double util_sum;
	uint64_t util_n;
	uint64_t samples;
	double cpu_times[CPU_SAMPLES_RESERVOIR]; /* main-thread sample times, s */
	uint32_t ncpu_times;
	uint64_t cpu_times_seen;
	struct native_sym syms[LINE_NATIVE_SYMS];
	int nsyms;
	/* Everything above is counts (profile__restart zeroes it whole). */
	struct mem_stats *mem;	/* NULL until a memory event lands here */
	struct await_stats *aw; /* NULL until a task waits here */
	struct gpu_stats *gpu;	/* NULL until GPU work is launched or seen here */
};

/* GPU work per line.  Launched here (scalene_bpf.gpu): the CUDA calls
 * made at this line and the device work they put on the GPU, joined by
 * correlation id.  As Scalene means it (n_gpu_*): the process's GPU use
 * while this line ran, over its samples weighted by their time. */
enum gpu_dir {
	GPU_DIR_HTOD,
	GPU_DIR_DTOH,
	GPU_DIR_DTOD, /* on one device, or between two (peer) */
	GPU_DIR_OTHER,
	GPU_DIR_MAX
};
/* Kernels of a line by name: the first GPU_LINE_KERNELS names exactly, the
 * rest together. */
#define GPU_LINE_KERNELS 16
struct gpu_kernel {
	const char *name; /* interned; "" when its name was not read */
	double count;	  /* kernels (an estimate when calls are sampled) */
	double ns;
};

struct gpu_stats {
	struct gpu_kernel by_name[GPU_LINE_KERNELS];
	int nnames;
	double other_count; /* kernels past the table */
	double other_ns;
	/* Counts and sums below are estimates when calls are sampled (each
	 * probed call's records stand for call_sample calls'). */
	double launches; /* traced calls (launches, copies, memsets, allocations) */
	double kernels;
	double kernel_ns;
	double copies;
	double copy_bytes[GPU_DIR_MAX];
	double copy_ns;
	double memsets;
	double memset_bytes;
	double alloc_bytes, free_bytes; /* device memory (and managed) */
	/* Host memory allocated or released through CUDA (pinned, as
	 * pin_memory and PyTorch's host caching allocator take it): not the
	 * device's. */
	double host_alloc_bytes, host_free_bytes;
	/* Scalene's fields: busy fraction and device memory (bytes) at the
	 * samples, each weighted by the sample's time. */
	double util_sum, mem_sum, weight, mem_peak;
};

struct func_stats {
	const char *qualname;
	int firstlineno;
	struct line_stats st;
};

struct file_stats {
	const char *path;
	struct line_stats **lines; /* index = line number; NULL where never sampled */
	int nlines;		   /* highest line number + 1 */
	struct func_stats **funcs;
	int nfuncs;
	double total_ns; /* python + native + system of all lines */
};

struct stack_stats {
	const struct frame_ref *frames; /* outermost first */
	int nframes;
	/* With native frames (--native): each frame's address in the stack's
	 * first sample, 0 for a Python frame; else NULL. */
	const uint64_t *ips;
	const char *native_sym; /* leaf native frame, if any */
	const char *native_module;
	/* The first sample's address in it (Scalene keeps one per stack too). */
	uint64_t native_ip;    /* 0 if unknown */
	int64_t native_offset; /* ip - the symbol's start, -1 if unknown */
	bool truncated;	       /* the outermost frames were not walked */
	/* The one stack of every sample whose stack found the table full: no
	 * frames, the weights kept (the last stack when there is one). */
	bool overflow;
	/* Kept when the profile restarts: a GPU launch site points at it. */
	bool held;
	uint64_t hash; /* its place in the profile's table */
	uint64_t count;
	double python_ns, native_ns, system_ns;
	double gil_ns;	     /* of system_ns: waiting for the GIL */
	double malloc_bytes; /* net malloc samples on this stack */
	double gpu_ns;	     /* device time of the work launched from it */
};

struct native_pending;

struct thread_stats {
	int tgid, tid;
	const char *name;
	bool main_thread;
	bool folded; /* shared by every thread past the limit (see profile.c) */
	uint64_t samples;
	double cpu_ns, blocked_ns, gil_ns;
	double malloc_bytes;
	uint64_t last_ts_ns; /* its last sample's time (the tracks join across it) */
	/* Main thread: the CPU time of the process's threads with no Python
	 * frame since its last record, waiting for its next one (credit_pending
	 * in profile.c). */
	struct native_pending *pending;
	int npending;
	/* The thread's open allocation execution. */
	struct {
		struct mem_stats *line, *func;
		const char *file, *qualname;
		int lineno, firstlineno, depth, offset;
	} exec;
};

/* Process-wide memory figures. */
struct profile_memory {
	uint64_t alloc_samples;	    /* malloc and free records */
	double malloc_bytes;	    /* all sampled allocations of Python processes */
	double python_bytes;	    /* ... through Python's allocator */
	double native_thread_bytes; /* ... by threads with no Python frame */
	double unattributed_bytes;  /* ... with no profiled frame or unreadable */
	double copy_bytes;
	double not_python_bytes; /* allocations of processes that are not Python */
	double net_bytes;	 /* net malloc samples of all lines (profile.h: mem_stats) */
	double footprint, max_footprint;
	/* Weights of the followed blocks that the running program has not
	 * freed: frees with no Python frame on the freeing thread (interpreter
	 * teardown) and process exits do not lower it.  Leaks are judged by it. */
	double held_bytes;
	const char *max_file; /* where the peak was set, or NULL */
	int max_line;
	double max_python_fraction;
	struct mem_series series;
	uint64_t frees_unknown;	 /* frees of blocks not seen allocated */
	uint64_t blocks_dropped; /* live blocks not kept: table full */
	uint64_t untracked;	 /* samples whose frees are not reported */
};

/*
 * The stack timeline (Scalene's combined_stacks_timeline): events in arrival
 * order, each a run of one thread's CPU samples on one stack.  A sample
 * extends the last event when that is its thread's and on its stack (as
 * Scalene records it).  The list holds at most TIMELINE_MAX_EVENTS: when it
 * fills, time is cut into slots, starting at 1 ms and doubling until the list
 * is at most half full, and each thread's events within one slot become one
 * event whose count is their sum and whose stack is a majority vote over
 * their samples (the stack of more than half of them, when there is one);
 * from then on a sample joins its thread's event in its slot.  So the size is bounded whatever the run's length, and the
 * resolution is the same over the whole run.
 */
/*
 * The timeline's tracks (scalene_bpf.tracks): per thread, the intervals it
 * spent in garbage collection (its CPU samples taken while the collector
 * ran: each stands for the time since the thread's previous sample),
 * blocked in I/O, and waiting for the GIL (its off-CPU records, which end
 * with the block), each at the line it was at (for garbage collection, the
 * line that triggered it).  An interval joins the thread's last one of its
 * kind when that is at the same line and less than gap_ns away, or when
 * that ended with the thread's previous sample.  At
 * most TRACK_MAX_INTERVALS: when they fill, the gap doubles and they are
 * joined again, so the resolution is the same over the whole run.
 */
enum track_kind {
	TRACK_GC = 0,
	TRACK_IO,
	TRACK_GIL,
	TRACK_GIL_HELD,
	TRACK_KINDS,
};
#define TRACK_MAX_INTERVALS 4000

struct track_interval {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	int tgid, tid;
	int kind;	  /* enum track_kind */
	const char *file; /* interned; NULL: at no line of the profiled files */
	int line;
};

struct profile_tracks {
	struct track_interval *iv;
	int n, cap;
	uint64_t gap_ns;
	uint64_t dropped; /* intervals not kept: more threads than room */
	double ns[TRACK_KINDS];
};

/* What view --html shows in full (MAX_TIMELINE there). */
#define TIMELINE_MAX_EVENTS 5000
#define TIMELINE_FIRST_SLOT_NS 1000000ULL

struct timeline_event {
	uint64_t ts_ns; /* CLOCK_MONOTONIC of its first sample */
	int stack;	/* index of profile__stack() */
	int tgid, tid;
	uint32_t count; /* samples */
	uint32_t top;	/* the majority vote's margin for stack */
};

struct profile_timeline {
	struct timeline_event *ev;
	int n, cap;
	uint64_t t0;	  /* slots count from the first sample */
	uint64_t slot_ns; /* 0: every run kept */
	uint64_t dropped; /* samples not recorded (one slot per thread still too many) */
};

/* A function decorated with @profile (the builtin of run mode): when any is,
 * only decorated functions get samples, and the output reports only them. */
struct decorated_fn {
	const char *file; /* co_filename, interned */
	int firstlineno;  /* co_firstlineno */
	int lastlineno;	  /* the last line of its code, nested code included */
	const char *qualname;
};

#define MAX_DECORATED 4096

struct profile_filter {
	const char *program_dir; /* files under it are profiled by default */
	/* A -c program: its code, file TARGET_COMMAND_FILE, is its own. */
	bool command;
	const char *program_dir_given; /* the same folder through a link, or NULL */
	bool profile_all;
	const char *const *only; /* substrings: profile only matching files */
	int nonly;
	const char *const *exclude; /* substrings: never profile matching files */
	int nexclude;
};

/* One suspended task of an event-loop snapshot. */
struct await_in {
	uint64_t snapshot;		/* the snapshot's number (from 1) */
	const char *task_name;		/* interned */
	const struct frame_ref *frames; /* its await chain, innermost first */
	int nframes;
	double ns;	 /* its share of the loop's idle time */
	int concurrency; /* tasks suspended in the snapshot */
};

/* An await stack: a task's await chain down to the line it waits at. */
struct await_stack {
	const struct frame_ref *frames; /* outermost first; the last one waits */
	int nframes;
	const char *task_name;
	uint64_t count; /* snapshots that found it */
	double ns;
};

#define MAX_AWAIT_STACKS 4096

/* The GPU side of a profile, for scalene_bpf.gpu. */
struct profile_gpu_totals {
	int processes;		   /* whose GPU library collected */
	uint64_t launches;	   /* traced calls seen */
	uint64_t launches_outside; /* ... with no frame in a profiled file */
	uint64_t records;	   /* device records received */
	uint64_t unmatched;	   /* ... whose call was not seen (or forgotten) */
	uint64_t unsampled;	   /* ... whose call was not probed (sampling) */
	unsigned int call_sample;  /* 1 in call_sample calls probed (0, 1: all) */
	uint64_t outside;	   /* ... launched outside the profiled files */
	uint64_t kernels;
	double kernel_ns;
	/* Kernel time of the unmatched records (no launch site: made before
	 * the library, or by no public launch call) and of those launched
	 * outside the profiled files. */
	double unmatched_kernel_ns, outside_kernel_ns;
	/* The union of the kernels' intervals, per process: the time a kernel
	 * of the process ran (counted as they settle: final at the end); with
	 * sampled readings, each period by its busy fraction. */
	double busy_ns;
	double copy_bytes[GPU_DIR_MAX];
	double copy_ns, memset_bytes, alloc_bytes, free_bytes;
	double host_alloc_bytes, host_free_bytes; /* pinned or pageable host memory */
	double peak_memory;			  /* device bytes allocated, at the highest */
	uint64_t samples;			  /* CPU samples given the GPU's use */
	uint64_t launches_forgotten;		  /* launch sites dropped: the table was full */
	/* Calls from threads with no Python frame, given the main thread's
	 * line (GPU_SITE_MAIN_THREAD); those whose process had no later record
	 * of its main thread, or past GPU_PENDING_MAX waiting, had no line. */
	uint64_t launches_main_thread, launches_main_thread_lost;
	/* Settling waits for the records of every call made before a sample's
	 * end: the longest it waited past the usual delay for one; calls given
	 * up after GPU_OPEN_WAIT_NS with no record; calls not followed (more
	 * than GPU_OPEN_MAX at once). */
	double settle_wait_max_ns;
	uint64_t calls_without_records, calls_not_awaited;
};

/* Await time credited to no line: the task's coroutine (the outermost
 * frame of its chain) and the frame it waits in (the innermost), tallied
 * for the first MAX_AWAIT_OUTSIDE pairs seen (the rest: other). */
#define MAX_AWAIT_OUTSIDE 8
struct await_outside {
	struct frame_ref task, waits;
	double ns;
};

struct profile;

struct profile *profile__new(const struct profile_filter *filter);
void profile__free(struct profile *p);
/* Counting starts afresh (--continuous: a profile per interval): every
 * count is zeroed where it lies, so that each pointer into the model stays
 * good (GPU calls awaiting their records, open allocation executions, the
 * session's interned strings and thread names), and what spans the cut
 * stays: the footprint and the blocks it follows, the @profile functions,
 * GPU calls not settled yet (their work counts where it settles).  Native
 * threads' time still waiting for the main thread's line is dropped: the
 * profile that ends here counted it, as unattributed. */
void profile__restart(struct profile *p);
const char *profile__intern(struct profile *p, const char *s);
/* A number no other profile of this process has had: what its interned
 * strings can be remembered under elsewhere (pycode__names). */
uint64_t profile__serial(const struct profile *p);
bool profile__file_profiled(const struct profile *p, const char *path);
void profile__add(struct profile *p, const struct sample_in *s);
void profile__add_mem(struct profile *p, const struct mem_in *m);
/* A suspended task: its share of idle time goes to its innermost frame in
 * a profiled file (as a sample's time does), and to its await stack. */
void profile__add_await(struct profile *p, const struct await_in *a);
/* Idle time credited to lines, and to nothing (no frame in a profiled file). */
double profile__await_ns(const struct profile *p);
double profile__await_unattributed_ns(const struct profile *p);
int profile__nawait_stacks(const struct profile *p);
const struct await_stack *profile__await_stack(const struct profile *p, int i);
/* Where the unattributed await time waited: n entries, and the time of
 * chains past the table in *other_ns. */
const struct await_outside *profile__await_outside(const struct profile *p, int *n,
						   double *other_ns);
/* GPU (profile_gpu.c).  A process whose GPU library collects: its CPU
 * samples wait until the device records of their time have arrived, then
 * take the GPU's use (profile__gpu_settle). */
void profile__gpu_start(struct profile *p, int tgid, unsigned int call_sample);
/* A traced CUDA call: the launch site of its stack (0: outside the
 * profiled files), kept for the stack's later calls; then a call there
 * (site < 0: its line is not known, and its records count as unmatched). */
int profile__gpu_site(struct profile *p, const struct frame_ref *frames, int nframes);
void profile__gpu_call(struct profile *p, int tgid, uint32_t correlation_id, int site,
		       uint64_t ts_ns);
/* The site of a call made by a thread with no Python frame (PyTorch's
 * autograd threads, NCCL's): as the CPU time of such threads, its work goes
 * to the line of the process's main thread, the one that waits for it
 * (loss.backward()), as its first record made after the call names it. */
#define GPU_SITE_MAIN_THREAD (-2)
void profile__gpu_alias(struct profile *p, int tgid, uint32_t inner, uint32_t outer);
/* The (demangled) name of the kernels whose records carry addr. */
void profile__gpu_name(struct profile *p, int tgid, uint64_t addr, const char *name);
/* n struct scalene_bpf_gpu_rec of process tgid. */
void profile__gpu_records(struct profile *p, int tgid, const void *recs, int n);
/* Sampled readings of process tgid (NVML): the GPU busy for a fraction
 * busy (0..1) of [start_ns, end_ns), and its device memory in use at ts_ns
 * (bytes).  Its samples take them as they take kernels and allocations. */
void profile__gpu_use(struct profile *p, int tgid, uint64_t start_ns, uint64_t end_ns, double busy);
void profile__gpu_memory(struct profile *p, int tgid, uint64_t ts_ns, double bytes);
/* Gives the waiting samples taken before before_ns the GPU's use then
 * (UINT64_MAX: all of them, at the end). */
void profile__gpu_settle(struct profile *p, uint64_t before_ns);
bool profile__gpu_on(const struct profile *p);
void profile__gpu_totals(const struct profile *p, struct profile_gpu_totals *out);
/* Await stacks not kept: the table was full. */
uint64_t profile__await_stacks_dropped(const struct profile *p);
/* A process ended: its live blocks leave the footprint. */
void profile__proc_exit(struct profile *p, int tgid, uint64_t ts_ns);
const struct profile_memory *profile__memory(const struct profile *p);
/* Figures of a line or function including its open executions. */
uint64_t mem_stats__mallocs(const struct mem_stats *m);
/* A timeline's points in time order (the open bucket last); at most
 * MEM_SERIES_MAX. */
int mem_series__points(const struct mem_series *s, double *t, double *y);
double mem_stats__avg(const struct mem_stats *m);

/* Totals.  total_ns is the denominator of every percentage: all on-CPU time
 * plus the blocked time that counts (parked workers' waiting is left out in
 * BPF, see profile.bpf.c). */
double profile__total_ns(const struct profile *p);
/* Time of tracked processes that are not Python (launchers, shells, the
 * interpreter before it is recognised): not part of the percentages. */
/* total_ns split by where the time went (blocked time is system time),
 * whether or not it reached a profiled line. */
void profile__split_ns(const struct profile *p, double *python, double *native, double *system);
/* Of total_ns, the time threads spent blocked (in system of the split). */
double profile__blocked_ns(const struct profile *p);
double profile__not_python_ns(const struct profile *p);
/* Of total_ns, the blocked time spent waiting for the GIL. */
double profile__gil_ns(const struct profile *p);
double profile__unattributed_ns(const struct profile *p, enum unattributed_reason r);
/* Of profile__total_ns: the CPU time of threads with no Python frame that
 * went to the line their process's main thread was at. */
double profile__native_threads_ns(const struct profile *p);
/* Whether that time goes to the main thread's line (the default) or stays
 * on no line: only records in the order they happened tell the line. */
void profile__credit_native_threads(struct profile *p, bool on);
/* A warning (one line, no newline; malloc'd) when most of the sampled
 * Python time fell outside the profiled files, else NULL. */
char *profile__outside_warning(const struct profile *p);
uint64_t profile__samples(const struct profile *p);
uint64_t profile__truncated(const struct profile *p);
/* Threads whose statistics went to the shared entry (0: none did). */
uint64_t profile__threads_folded(const struct profile *p);
uint64_t profile__stacks_dropped(const struct profile *p);

/* Registers a decorated function; 0, or -ENOSPC past MAX_DECORATED, -ENOMEM.
 * Registering the same (file, firstlineno) again changes nothing. */
int profile__decorate(struct profile *p, const char *file, int firstlineno, int lastlineno,
		      const char *qualname);
int profile__ndecorated(const struct profile *p);
const struct decorated_fn *profile__decorated(const struct profile *p, int i);
/* Whether the code object (file, firstlineno) is a decorated function. */
bool profile__is_decorated(const struct profile *p, const char *file, int firstlineno);
/* Whether a line of file lies in a decorated function (true for every line
 * when nothing is decorated). */
bool profile__line_reported(const struct profile *p, const char *file, int lineno);

const struct profile_timeline *profile__timeline(const struct profile *p);
const struct profile_tracks *profile__tracks(const struct profile *p);

/* Iteration over files (in first-seen order), stacks and threads. */
int profile__nfiles(const struct profile *p);
const struct file_stats *profile__file(const struct profile *p, int i);
int profile__nstacks(const struct profile *p);
const struct stack_stats *profile__stack(const struct profile *p, int i);
int profile__nthreads(const struct profile *p);
const struct thread_stats *profile__thread(const struct profile *p, int i);

/* The enclosing named function for a qualname such as "f.<locals>.<lambda>"
 * (Scalene folds comprehensions and lambdas into their function); writes
 * into buf and returns 1, or returns 0 when no such prefix exists. */
int profile_enclosing_function(const char *qualname, char *buf, size_t n);

#endif /* PROFILE_H */
