// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPU and off-CPU sampling of tracked Python processes.
 *
 * on_cpu_sample (perf_event, every CPU): one record per sample of a tracked
 *   thread with its mode (user/kernel), leaf user IP and Python stack.
 * on_switch (tp_btf/sched_switch; on_switch_task_state before Linux 5.18):
 *   timestamps only.  A thread that blocks gets its start time noted; when it
 *   runs again the blocked time is added to a per-thread accumulator.  No
 *   stack walk here: switches can be far more frequent than samples.  A
 *   thread blocking in futex on a word of its process's GIL is waiting for
 *   the GIL: that block also goes to a second accumulator, and records carry
 *   its share (gil_ns).
 * Off-CPU records: each time a thread's accumulator crosses the sampling
 *   period, one record is emitted for the whole periods crossed (blocked time
 *   sampled like CPU time), so the cost follows the sampling rate, not the
 *   switch rate.  It is made in the woken thread before it returns to user
 *   space, while its Python stack is still where it blocked:
 *   - on_switch_work (Linux 6.18+): at the switch-in that crosses the period,
 *     a task work is queued on the thread (offcpu_work_run runs it on its way
 *     back to user space); nothing runs on anyone's system calls;
 *   - on_switch with on_sys_exit (tp_btf/sys_exit), on older kernels: the
 *     check runs at every system call exit on the host (the tracepoint is
 *     global), about 160 ns each.
 * sched_process_{fork,exec,exit}: follow children, re-detect after exec.
 * on_malloc, on_free, on_memcpy (uprobes at the probe functions of
 *   libscalene-bpf-sampler.so, probes.h): the sampler calls them only for
 *   sampled allocations, frees of sampled blocks and sampled copies; each
 *   becomes a record with the Python stack, walked here while the allocating
 *   frame is still live.
 * on_sampler_init, on_sampler_exit (likewise): the sampler's state block.
 *
 * System-wide (aggregate), CPU and off-CPU samples are added up in
 * agg_counts instead of becoming records (see struct agg_key); a count that
 * finds the tables full is sent as a record as before.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/*
 * The loops (pywalk.h: PYWALK_FOR), one object for each way the kernel may
 * have of verifying them (the Makefile builds them, the loader picks the
 * first the kernel can load; a loop unrolled by the verifier, once per
 * iteration, took ~0.13 s of load time per program that walks):
 *   SBPF_LOOPS_ITER      open-coded numeric iterators (kfuncs, Linux 6.4+):
 *                        verified until the loop's states converge;
 *   SBPF_LOOPS_BPF_LOOP  bpf_loop (5.17+): the step is a callback, verified
 *                        once (a call per iteration at run time);
 *   SBPF_LOOPS_BOUNDED   plain loops, unrolled by the verifier (5.3+), for
 *                        kernels before 5.17; the walk's steps are one
 *                        global function of numbers only (walk_step), so
 *                        that each iteration verifies as a call.  That build
 *                        is also the one for what came after 5.10 (see
 *                        SBPF_OLD_KERNEL).
 */
#define SBPF_LOOPS_ITER 1
#define SBPF_LOOPS_BPF_LOOP 2
#define SBPF_LOOPS_BOUNDED 3
#ifndef SBPF_LOOPS
#define SBPF_LOOPS SBPF_LOOPS_ITER
#endif
#if SBPF_LOOPS == SBPF_LOOPS_ITER
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;
#define PYWALK_FOR(n, step, arg)                             \
	do {                                                 \
		struct bpf_iter_num ___it;                   \
		int *___i;                                   \
		bpf_iter_num_new(&___it, 0, (n));            \
		while ((___i = bpf_iter_num_next(&___it))) { \
			if (step(*___i, (arg)))              \
				break;                       \
		}                                            \
		bpf_iter_num_destroy(&___it);                \
	} while (0)
#elif SBPF_LOOPS == SBPF_LOOPS_BPF_LOOP
#define PYWALK_FOR(n, step, arg) bpf_loop((n), step##_cb, (arg), 0)
#define PYWALK_CALLBACK(step)                     \
	static long step##_cb(__u32 i, void *arg) \
	{                                         \
		return step(i, arg);              \
	}
#elif SBPF_LOOPS == SBPF_LOOPS_BOUNDED
/* pywalk.h's plain loop for the small ones; the walk's own by walk_loop. */
enum walk_kind {
	WALK_pywalk_inner_step,
	WALK_pywalk_caller_step,
	WALK_pywalk_ring_step,
};
struct pywalk_walk;
static __always_inline void walk_loop(__u32 n, enum walk_kind kind, struct pywalk_walk *w);
#define PYWALK_WALK_FOR(n, step, w) walk_loop((n), WALK_##step, (w))
/* Global functions take no pointers before Linux 5.12: pywalk_one is
 * verified inside walk_step, once. */
#define PYWALK_GLOBAL static __always_inline
#else
#error "SBPF_LOOPS: SBPF_LOOPS_ITER, SBPF_LOOPS_BPF_LOOP or SBPF_LOOPS_BOUNDED"
#endif

/*
 * The build for kernels before Linux 5.17 also does without what came after
 * 5.10: task storage (5.11; `threads` is a hash map by thread id, emptied at
 * each thread's exit), the current task as a BTF pointer (5.11; its fields
 * are read with probe reads, TASK_READ), bpf_task_pt_regs (5.15; the user
 * registers are found at the top of the task's kernel stack, task_regs),
 * hash maps made as they are used (6.1; preallocated here) and
 * sched_switch's prev_state (5.18; on_switch_task_state, which the loader
 * picks by the tracepoint's arguments in any build).
 */
#define SBPF_OLD_KERNEL (SBPF_LOOPS == SBPF_LOOPS_BOUNDED)
#if SBPF_OLD_KERNEL
/* perf_event programs take only preallocated hash maps before Linux 6.1. */
#define HASH_FLAGS 0
#define current_task() ((struct task_struct *)bpf_get_current_task())
#define TASK_READ(...) BPF_CORE_READ(__VA_ARGS__)
#else
#define HASH_FLAGS BPF_F_NO_PREALLOC
#define current_task() bpf_get_current_task_btf()
/* A direct load through the BTF pointer: cheaper than a probe read on the
 * hot paths.  (libbpf's own a->b->c builder, as BPF_CORE_READ uses it.) */
#define TASK_READ(...) ___arrow(__VA_ARGS__)
#endif

/* The kernel stack's size (x86_64's THREAD_SIZE: 16 KiB, 32 with KASAN), set
 * by the loader; used where bpf_task_pt_regs is missing. */
const volatile __u64 thread_size = 16384;

#if SBPF_OLD_KERNEL
/* x86_64's task_pt_regs(): the user registers at the top of the task's
 * kernel stack (no padding above them on x86_64).  NULL unless they are a
 * user frame (a kernel thread; a stack size the loader got wrong). */
static __always_inline struct pt_regs *task_regs(struct task_struct *task)
{
	struct pt_regs *regs =
		(struct pt_regs *)((char *)BPF_CORE_READ(task, stack) + thread_size) - 1;

	return (BPF_CORE_READ(regs, cs) & 3) == 3 ? regs : NULL;
}
#define REGS_READ(...) BPF_CORE_READ(__VA_ARGS__)
#else
#define task_regs(task) ((struct pt_regs *)bpf_task_pt_regs(task))
/* Direct loads (a BTF pointer): cheaper than probe reads. */
#define REGS_READ(...) ___arrow(__VA_ARGS__)
#endif

/* Task work (Linux 6.18+; under this name since 6.18.y): on_switch_work is
 * loaded only where the loader found it in the kernel's BTF. */
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;
#define PYWALK_READ(dst, sz, src) bpf_probe_read_user((dst), (sz), (const void *)(src))

/* Marks a code object a walk read (code_stamps, below). */
static __always_inline void code_stamp_set(__u64 code);
#define PYWALK_CODE_READ(code) code_stamp_set(code)
#include "pywalk.h"
#include "sampler.h"

_Static_assert(ATTACH_UPROBE_MULTI == BPF_TRACE_UPROBE_MULTI, "uprobe_multi attach type");
_Static_assert(__builtin_offsetof(union bpf_attr, link_create.uprobe_multi.path) ==
		       __builtin_offsetof(struct uprobe_multi_attr, path),
	       "uprobe_multi link_create layout");
_Static_assert(__builtin_offsetof(union bpf_attr, link_create.uprobe_multi.pid) ==
		       __builtin_offsetof(struct uprobe_multi_attr, pid),
	       "uprobe_multi link_create layout");

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TASK_RUNNING 0
/* task_struct.flags: do_exit() has begun (include/linux/sched.h). */
#define PF_EXITING 0x00000004
/* signal_struct.flags: the whole group is exiting (include/linux/sched/signal.h). */
#define SIGNAL_GROUP_EXIT 0x00000004
/* include/uapi/asm-generic/errno-base.h */
#define EBUSY 16

const volatile __u64 sample_period_ns = 1000000;
const volatile __u8 follow_children = 1;
/* System-wide (--all): every exec on the host is reported, so that the loader
 * can look at the new image and track it if it is Python. */
const volatile __u8 track_all = 0;
/* Length of a clock tick: start times are compared in the unit of
 * /proc/PID/stat, which is all the loader can see. */
const volatile __u64 tick_ns = 10000000;
/* Mean bytes between allocation samples taken by the uprobes. */
const volatile __u64 mem_sample_bytes = 1 << 20;
/* Parked threads (see idle_wait) have their waiting counted only with
 * --idle; otherwise it is added up here and never becomes a record, so a
 * thousand threads taking turns at the GIL cannot flood the ring buffer.
 * The syscall numbers come from the loader's headers. */
const volatile __u8 count_idle = 0;
const volatile __s32 nr_futex = -2;
const volatile __s32 nr_futex_waitv = -2;
/*
 * The kernel's uprobe machinery, as [start, end) text ranges the loader
 * resolved from /proc/kallsyms; probe_check is 0 when no uprobe of ours is
 * attached (no check at all).  probe_entry is the entry code of the int3
 * trap: as the outermost kernel frame it means the thread trapped on a
 * breakpoint in user space, which is where uprobes put theirs.  probe_text
 * holds the functions that run a hit (uprobe_notify_resume, with handle_swbp
 * inlined, and its cold part), recognised at any depth.
 */
const volatile __u64 probe_entry[2];
const volatile __u64 probe_text[PROBE_TEXT_RANGES][2];
const volatile __u32 nprobe_text = 0;
const volatile __u8 probe_check = 0;
/* Samples are counted in agg_counts (system-wide). */
const volatile __u8 aggregate = 0;
/* --native: CPU samples go as EV_NATIVE records, with what unwinding their
 * native stacks needs (struct native_sample). */
const volatile __u8 native_stacks = 0;
/* --native-unwind bpf: BPF unwinds them itself (bpf/unwind.h), with the
 * tables the loader gives it, where it has a process's. */
const volatile __u8 native_unwind_bpf = 0;
/* The epoch counts go into, moved on by the loader at each drain. */
volatile __u32 agg_epoch = 0;
/* Code objects freed in the interpreters that have the probe below: a walk
 * keeps the code objects it read for the next walk of its process while
 * this stays the same (struct pywalk_owner). */
volatile __u64 code_gen = 0;
/* Attach mode's duty cycle (user/session/memduty.h): the allocation uprobes
 * are placed for a window of each cycle, and with mem_windowed set a sample
 * counts only inside [mem_window_lo, mem_window_hi) (bpf_ktime_get_ns); the
 * user side weighs it.  Hits outside it (a probe still being taken out)
 * cost, and count nothing. */
volatile __u64 mem_window_lo = 0;
volatile __u64 mem_window_hi = 0;
volatile __u32 mem_windowed = 0;

/* Where the walker keeps what it read (8 KB: off the BPF stack), one slot
 * per kind of program that may interrupt another on a CPU: the perf_event
 * program, the tracepoints, the probes (see fill_stack()).  `busy` catches
 * what the slots cannot rule out (two probe programs on one CPU under a
 * preemptible kernel): that walk is not made, and is counted.  The first of
 * the maps: clang orders them as its code first names them, and the
 * skeletons of the builds must agree (the Makefile compares them). */
struct walk_slot {
	struct pywalk_scratch s;
	__u64 busy;
	/* --native-unwind bpf: the registers of the slot's unwind
	 * (unwind_frame; native_scratch's slots are the walk's). */
	struct unwind_regs ur;
#if SBPF_LOOPS == SBPF_LOOPS_BOUNDED
	/* walk_step's: the walk's pointers are to here, and where it is
	 * comes and goes by pos; index: this slot's key. */
	__u32 index;
	struct pywalk_pos pos;
	struct py_walk_cfg cfg;
	struct py_frame frames[MAX_FRAMES];
#endif
};

enum {
	WALK_SLOT_SAMPLE,
	WALK_SLOT_TRACEPOINT,
	WALK_SLOT_PROBE,
	WALK_SLOTS
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WALK_SLOTS);
	__type(key, __u32);
	__type(value, struct walk_slot);
} walk_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* set by the loader */
	__type(key, __u32);
	__type(value, struct proc_info);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* set by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * Code objects that walks read lately, for the deallocator's probe
 * (on_code_dealloc): a slot per hash of (process, address) holds when a walk
 * last read it, in steps of 2^CODE_STAMP_SHIFT ns (16.8 ms; 0 is no walk's).
 * A code object read by a walk in the last CODE_STAMP_KEEP steps (17 s) may
 * be named by a sample the loader has not read yet (it reads records as they
 * come, but holds those of a process it has not recognised yet, --pid
 * --memory's duty cycle holds a window's for up to a second, and a loader
 * on a slow machine falls behind: 5-10 s in the kernel matrix's emulated
 * guests with --native): it is sent as it is freed.  Two objects that share a slot cost one needless copy; a slot
 * is never cleared.  Only code that samples named is marked: about 1000 a
 * second at most, so copies cost a program that compiles and drops code in
 * a loop 1-2 ms a second at most.
 */
#define CODE_STAMPS_BITS 15
#define CODE_STAMPS (1u << CODE_STAMPS_BITS)
#define CODE_STAMP_SHIFT 24
#define CODE_STAMP_KEEP 1024
struct code_stamps {
	__u16 when[CODE_STAMPS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct code_stamps);
} code_stamps SEC(".maps");

static __always_inline __u32 code_stamp_slot(__u64 tgid, __u64 code)
{
	return (__u32)((((code >> 4) ^ (tgid << 40)) * 0x9e3779b97f4a7c15ULL) >>
		       (64 - CODE_STAMPS_BITS)) &
	       (CODE_STAMPS - 1);
}

static __always_inline __u16 code_stamp_now(void)
{
	return (__u16)(bpf_ktime_get_ns() >> CODE_STAMP_SHIFT) ?: 1;
}

static __always_inline void code_stamp_set(__u64 code)
{
	struct code_stamps *st = bpf_map_lookup_elem(&code_stamps, &(__u32){ 0 });

	if (st)
		st->when[code_stamp_slot(bpf_get_current_pid_tgid() >> 32, code)] =
			code_stamp_now();
}

/* Per-thread off-CPU state of tracked threads only: its presence is what
 * makes sched_switch cheap for everyone else. */
#if SBPF_OLD_KERNEL
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* the thread id */
	__type(value, struct tracked_thread);
} threads SEC(".maps");

/* The thread's state; a new one (zero) with create. */
static __always_inline struct tracked_thread *thread_state(struct task_struct *task, bool create)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	struct tracked_thread zero = {}, *ts = bpf_map_lookup_elem(&threads, &tid);

	if (ts || !create)
		return ts;
	bpf_map_update_elem(&threads, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&threads, &tid);
}

/* A thread's state goes with it (task storage goes by itself). */
static __always_inline void thread_gone(struct task_struct *task)
{
	__u32 tid = task->pid;

	bpf_map_delete_elem(&threads, &tid);
}
#else
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tracked_thread);
} threads SEC(".maps");

static __always_inline struct tracked_thread *thread_state(struct task_struct *task, bool create)
{
	return bpf_task_storage_get(&threads, task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

static __always_inline void thread_gone(struct task_struct *task)
{
}
#endif

/* Counted samples (aggregate): see struct agg_key. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, HASH_FLAGS);
	__uint(max_entries, 16384); /* set by the loader */
	__type(key, struct agg_key);
	__type(value, struct agg_val);
} agg_counts SEC(".maps");

/* The stack ids whose frames were sent (EV_STACK); the loader empties it
 * when its own table of stacks is full, and they are sent again. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, HASH_FLAGS);
	__uint(max_entries, 32768); /* set by the loader */
	__type(key, __u64);
	__type(value, __u8);
} agg_stacks SEC(".maps");

/* Where a sample is built when it is counted rather than sent: one slot for
 * the perf_event program, one for the tracepoints it can interrupt. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sample_event);
} scratch SEC(".maps");

/* --native: where the perf_event program builds its sample and copies the
 * thread's stack (off the BPF stack: 19 KB). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3); /* a walk slot each */
	__type(key, __u32);
	__type(value, struct native_sample);
} native_scratch SEC(".maps");

/* --native-unwind bpf: every file's unwind rows, and each process's
 * executable mappings (bpf/abi.h).  The loader sizes both; one entry each
 * otherwise. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_row);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct unwind_page);
} unwind_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__uint(map_flags, HASH_FLAGS);
	__type(key, __u32);
	__type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

static __always_inline const struct unwind_row *unwind_row_at(__u32 i)
{
	return bpf_map_lookup_elem(&unwind_rows, &i);
}

static __always_inline const struct unwind_page *unwind_page_at(__u32 i)
{
	return bpf_map_lookup_elem(&unwind_pages, &i);
}

#define UNWIND_ROW(i) unwind_row_at(i)
#define UNWIND_PAGE(i) unwind_page_at(i)
#include "unwind.h"

/*
 * --native: a blocked thread's kernel frames, read at the switch that ends
 * its block when that makes an off-CPU record due (the thread is not
 * running yet, so its saved kernel stack is where it slept), for the record
 * made as it returns to user space.  `at`: that switch (the thread's
 * in_ktime then), so a record takes only the frames of its own block.  The
 * loader gives the map one entry without --native.
 */
struct blocked_kstack {
	__u64 at;
	__u32 n;
	__u32 pad;
	__u64 ips[NATIVE_KFRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct blocked_kstack);
} blocked_kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct blocked_kstack);
} kstack_scratch SEC(".maps");

/* The rest of what counting needs, off the BPF stack. */
struct agg_scratch {
	struct agg_stack_record rec;
	struct agg_key key;
	struct agg_val zero;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct agg_scratch);
} agg_scratch SEC(".maps");

static __always_inline void stat_add(__u32 id, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &id);

	if (v)
		*v += n;
}

static __always_inline void stat_inc(__u32 id)
{
	stat_add(id, 1);
}

static __always_inline struct proc_info *tracked_proc(struct task_struct *task, __u32 tgid)
{
	struct proc_info *p = bpf_map_lookup_elem(&procs, &tgid);

	if (!p)
		return NULL;
	/* A recycled PID is not the process we were asked to follow.  (Direct
	 * BTF loads: cheaper than helper calls on this hot path.) */
	if (p->start_time &&
	    p->start_time != TASK_READ(task, group_leader, start_boottime) / tick_ns)
		return NULL;
	return p;
}

#if SBPF_LOOPS == SBPF_LOOPS_BOUNDED
/*
 * One step of the walk at index i in slot `slot` of walk_scratch, whose
 * frames and configuration the walk reads and writes (fill_stack put them
 * there).  A global function of numbers only, which is what global functions
 * take before Linux 5.12: the verifier checks it once, and each iteration
 * of the loop that calls it as a call.  Returns the step's answer, 1 to stop.
 */
__noinline int walk_step(__u32 slot, __u32 kind, __u32 i)
{
	struct walk_slot *ws = bpf_map_lookup_elem(&walk_scratch, &slot);
	struct pywalk_walk w;

	if (!ws)
		return 1;
	w.c = &ws->cfg;
	w.frames = ws->frames;
	w.s = &ws->s;
	w.pos = &ws->pos;
	if (kind == WALK_pywalk_inner_step)
		return pywalk_inner_step(i, &w);
	if (kind == WALK_pywalk_caller_step)
		return pywalk_caller_step(i, &w);
	return pywalk_ring_step(i, &w);
}

_Static_assert(__builtin_offsetof(struct walk_slot, s) == 0, "walk_loop finds the slot by s");

/* PYWALK_WALK_FOR: n steps at most of `kind`, on the walk whose scratch is
 * a slot of walk_scratch. */
static __always_inline void walk_loop(__u32 n, enum walk_kind kind, struct pywalk_walk *w)
{
	struct walk_slot *ws = (struct walk_slot *)w->s;
	__u32 i;

	__builtin_memcpy(&ws->pos, w->pos, sizeof(ws->pos));
	for (i = 0; i < n; i++) {
		if (walk_step(ws->index, kind, i))
			break;
	}
	__builtin_memcpy(w->pos, &ws->pos, sizeof(ws->pos));
}
#endif

/* Whether the thread whose state is tstate holds the GIL whose last
 * holder is at `holder` (struct py_walk_cfg). */
static __always_inline bool holds_gil(__u64 holder, __u64 tstate)
{
	struct {
		__u64 last_holder;
		__s32 locked;
		__s32 pad;
	} g;

	if (!tstate || bpf_probe_read_user(&g, sizeof(g), (const void *)holder))
		return false;
	return g.locked == 1 && g.last_holder == tstate;
}

/* Fills the record's stack. */
static __always_inline void fill_stack(struct sample_event *ev, struct proc_info *p,
				       struct task_struct *task, struct tracked_thread *ts,
				       __u32 slot)
{
	struct pywalk_cache none = {};
	struct walk_slot *w = bpf_map_lookup_elem(&walk_scratch, &slot);
	__u32 n = 0, elided = 0;
	int status;

	if (!p->has_cfg) {
		status = WALK_NO_CONFIG;
		stat_inc(STAT_NO_CONFIG);
	} else if (!w || w->busy) {
		status = WALK_BUSY;
		stat_inc(STAT_WALK_BUSY);
	} else {
		struct pywalk_owner own = {
			.proc = (__u64)TASK_READ(task, tgid) << 32 | p->gen,
			.start = p->start_time,
			.code_gen = code_gen,
		};

		w->busy = 1;
#if SBPF_LOOPS == SBPF_LOOPS_BOUNDED
		/* The walk's steps find everything in the slot (walk_step). */
		w->index = slot;
		bpf_probe_read_kernel(&w->cfg, sizeof(w->cfg), &p->cfg);
		status = pywalk_cached(&w->cfg, TASK_READ(task, thread.fsbase),
				       ts ? &ts->walk : &none, &own, w->frames, &n, &elided, &w->s);
		if (n > MAX_FRAMES)
			n = MAX_FRAMES;
		/* verifier: as in finish_record. */
		__u64 bytes = (__u64)n * sizeof(struct py_frame);

		pywalk_barrier_var(bytes);
		if (bytes > sizeof(ev->frames) ||
		    bpf_probe_read_kernel(ev->frames, bytes, w->frames))
			n = 0;
#else
		status =
			pywalk_cached(&p->cfg, TASK_READ(task, thread.fsbase),
				      ts ? &ts->walk : &none, &own, ev->frames, &n, &elided, &w->s);
#endif
		if (status == WALK_READ_FAILED)
			stat_inc(STAT_WALK_READ_FAILED);
		else if (status == WALK_TRUNCATED)
			stat_inc(STAT_WALK_TRUNCATED);
		else if (status == WALK_NO_TSTATE || status == WALK_TID_MISMATCH)
			stat_inc(STAT_NO_TSTATE);
		/* The collector running: the sample is its. */
		if (n && p->cfg.gc_collecting) {
			__s32 on = 0;

			if (!bpf_probe_read_user(&on, sizeof(on),
						 (const void *)p->cfg.gc_collecting) &&
			    on)
				ev->flags |= SAMPLE_F_GC;
		}
		/* Holding the GIL, in a process where another thread could
		 * want it (one thread alone keeps it from no one). */
		if (n && p->cfg.gil_holder && (ev->mode == MODE_USER || ev->mode == MODE_KERNEL) &&
		    BPF_CORE_READ(task, signal, nr_threads) > 1 &&
		    holds_gil(p->cfg.gil_holder, ts ? ts->walk.tstate : none.tstate))
			ev->flags |= SAMPLE_F_GIL_HELD;
		/* In the interpreter's code under a call: the called C
		 * function's time (native), not the eval loop's. */
		if (n && ev->mode == MODE_USER && pywalk_in_interpreter(&p->cfg, ev->user_ip)) {
			int call = pywalk_at_call(&p->cfg, &w->s);

			if (call < 0)
				stat_inc(STAT_OP_READ_FAILED);
			else if (call)
				ev->flags |= SAMPLE_F_CALL;
		}
		w->busy = 0;
		stat_inc(STAT_WALKS);
		stat_add(STAT_WALK_READS, w->s.reads);
		if (w->s.entering)
			stat_inc(STAT_WALK_ENTERING);
		if (w->s.not_a_frame)
			stat_inc(STAT_WALK_NOT_A_FRAME);
	}
	ev->status = status;
	ev->nframes = n;
	ev->elided = elided;
}

/* A wait of a thread other than the main one in futex: a parked worker
 * (queues, pools, condition variables, waiting for the GIL). */
static __always_inline bool idle_wait(__u64 pid_tgid, __s32 nr)
{
	return (__u32)pid_tgid != pid_tgid >> 32 && nr >= 0 &&
	       (nr == nr_futex || nr == nr_futex_waitv);
}

/* Moves whole sampling periods of accumulated blocked time out of `ts`. */
static __always_inline __u64 take_offcpu(struct tracked_thread *ts)
{
	__u64 period = sample_period_ns, n;

	if (!ts || ts->pending_ns < period)
		return 0;
	n = ts->pending_ns / period;
	ts->pending_ns -= n * period;
	return n * period;
}

/* Moves the GIL's share of `taken` ns of blocked time just taken out of
 * `ts` (what is left of it stays with what is left pending). */
static __always_inline __u64 take_gil(struct tracked_thread *ts, __u64 taken)
{
	__u64 n;

	if (!ts || !taken)
		return 0;
	n = ts->gil_pending_ns < taken ? ts->gil_pending_ns : taken;
	ts->gil_pending_ns -= n;
	return n;
}

/* The process's GIL range into the thread's state (see tracked_thread). */
static __always_inline void copy_gil(struct tracked_thread *ts, const struct proc_info *p)
{
	if (!ts)
		return;
	ts->gil_lo = p->has_cfg ? p->gil_lo : 0;
	ts->gil_hi = p->has_cfg ? p->gil_hi : 0;
}

/* Whether `task`, about to block, waits for its process's GIL: in futex on
 * a word of the GIL's locks (the first syscall argument).  Only threads
 * that block in futex read their registers.  A thread that has not been
 * sampled yet has no copy of the range: a new thread's first wait is
 * usually for the GIL (another thread holds it, up to the switch interval),
 * so it looks the range up in its process's entry. */
static __always_inline __u32 waits_for_gil(struct task_struct *task, struct tracked_thread *ts)
{
	struct pt_regs *regs;
	struct proc_info *p;
	__u64 uaddr;

	regs = task_regs(task);
	if (!regs || (__s32)REGS_READ(regs, orig_ax) != nr_futex)
		return 0;
	if (!ts->gil_hi) {
		p = tracked_proc(task, task->tgid);
		if (!p)
			return 0;
		copy_gil(ts, p);
		if (!ts->gil_hi)
			return 0;
	}
	uaddr = REGS_READ(regs, di);
	return uaddr >= ts->gil_lo && uaddr < ts->gil_hi;
}

/* The current thread's name into the record.  A 16-byte copy from the
 * task (no lock: safe in NMI context), measured in the per-sample cost; it
 * spares the loader a read of /proc per new thread, which comes too late for
 * a short-lived thread and too early for a process that execs. */
static __always_inline void record_comm(struct sample_event *ev)
{
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
}

/*
 * Reserves a whole record in the ring buffer and fills its header; the walk
 * writes the frames in place.  Submitted without a wake-up: the loader
 * drains on a timer, and wake-ups cost more than the walk itself.
 */
/* new_record's slot for a record that always goes to the ring buffer. */
#define RECORD_ONLY 2

static __always_inline struct sample_event *new_record(__u64 pid_tgid, __u32 lost_stat, __u32 slot,
						       bool native)
{
	struct sample_event *ev;

	if (native)
		ev = bpf_map_lookup_elem(&native_scratch, &slot);
	else if (aggregate && slot < RECORD_ONLY)
		ev = bpf_map_lookup_elem(&scratch, &slot);
	else
		ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		stat_inc(lost_stat);
		return NULL;
	}
	ev->hdr.type = EV_SAMPLE;
	ev->hdr.tgid = pid_tgid >> 32;
	ev->tid = (__u32)pid_tgid;
	ev->cpu = bpf_get_smp_processor_id();
	ev->ts = bpf_ktime_get_ns();
	ev->cpu_ns = 0;
	ev->offcpu_ns = 0;
	ev->user_ip = 0;
	ev->syscall_nr = -1;
	ev->mem_bytes = 0;
	ev->mem_addr = 0;
	ev->mem_size = 0;
	ev->mem_flags = 0;
	ev->elided = 0;
	ev->flags = 0;
	ev->gen = 0;
	ev->gil_ns = 0;
	ev->count = 1;
	ev->pad = 0;
	record_comm(ev);
	return ev;
}

struct stack_hash {
	const struct sample_event *ev;
	__u64 h;
};

/* One frame into the hash. */
static __always_inline long stack_hash_step(__u32 i, void *arg)
{
	struct stack_hash *sh = arg;
	const struct py_frame *f = &sh->ev->frames[i & (MAX_FRAMES - 1)];
	__u64 h = sh->h;

	if (i >= sh->ev->nframes)
		return 1;
	h = (h ^ f->code) * 0xff51afd7ed558ccdULL;
	h ^= h >> 31;
	/* A shim's tag and ident are where it lies, not what it is. */
	if (f->code) {
		h = (h ^ ((__u64)(__u32)f->offset << 32 | f->tag)) * 0xc4ceb9fe1a85ec53ULL;
		h ^= (h >> 29) ^ f->ident;
	}
	sh->h = h;
	return 0;
}
PYWALK_CALLBACK(stack_hash_step)

/* The id of the record's stack: a hash of its frames as kept (0: none). */
static __always_inline __u64 stack_id(const struct sample_event *ev)
{
	struct stack_hash sh = {
		.ev = ev,
		.h = 0x9e3779b97f4a7c15ULL ^ ev->nframes ^ ((__u64)ev->elided << 32),
	};

	if (!ev->nframes)
		return 0;
	PYWALK_FOR(MAX_FRAMES, stack_hash_step, &sh);
	return sh.h ?: 1;
}

/* Sends the record's frames once under its stack id; false if they could
 * not be (the sample then goes as a record). */
static __always_inline bool send_stack(const struct sample_event *ev, __u64 id,
				       struct agg_stack_record *r)
{
	__u32 n = ev->nframes;
	__u64 bytes = (__u64)n * sizeof(struct py_frame);
	__u8 one = 1;

	if (bpf_map_lookup_elem(&agg_stacks, &id))
		return true;
	/* verifier: as in finish_record. */
	pywalk_barrier_var(bytes);
	if (bytes > sizeof(r->frames))
		return false;
	r->hdr.type = EV_STACK;
	r->nframes = n;
	r->id = id;
	r->elided = ev->elided;
	r->hdr.tgid = ev->hdr.tgid;
	if (bpf_probe_read_kernel(r->frames, bytes, ev->frames))
		return false;
	/* Marked sent only once it is in the ring buffer, ahead of any count
	 * that names it. */
	if (bpf_ringbuf_output(&events, r, STACK_HDR_SIZE + bytes, BPF_RB_NO_WAKEUP))
		return false;
	stat_inc(STAT_AGG_STACKS);
	bpf_map_update_elem(&agg_stacks, &id, &one, BPF_ANY);
	return true;
}

enum count_result {
	COUNTED = 0,
	TABLE_FULL,
	NOT_COUNTED, /* sent as a record */
};

/* Adds the sample to its count. */
static __noinline int count_sample(struct sample_event *ev, const struct proc_info *p, __u32 slot)
{
	struct agg_scratch *sc = bpf_map_lookup_elem(&agg_scratch, &slot);
	struct task_struct *task = current_task();
	struct agg_key *k;
	struct agg_val *v;

	if (!sc)
		return TABLE_FULL;
	/* A thread or its process exiting: the process's exit record may be
	 * out already, and the loader drains its counts when it reads that.
	 * A record comes after it, as without counting. */
	if ((TASK_READ(task, flags) & PF_EXITING) ||
	    (TASK_READ(task, signal, flags) & SIGNAL_GROUP_EXIT))
		return NOT_COUNTED;
	k = &sc->key;
	__builtin_memset(k, 0, sizeof(*k));
	__builtin_memset(&sc->zero, 0, sizeof(sc->zero));
	k->stack = stack_id(ev);
	if (k->stack && !send_stack(ev, k->stack, &sc->rec))
		return TABLE_FULL;
	/* The leaf address matters where it decides between Python and
	 * native (a call) or names the native code; elsewhere it would only
	 * split the count. */
	if (ev->mode == MODE_USER && p->has_cfg &&
	    (!pywalk_in_interpreter(&p->cfg, ev->user_ip) || (ev->flags & SAMPLE_F_CALL)))
		k->user_ip = ev->user_ip;
	k->tgid = ev->hdr.tgid;
	k->tid = ev->tid;
	k->gen = ev->gen;
	k->epoch = agg_epoch;
	k->mode = ev->mode;
	k->status = ev->status;
	k->flags = ev->flags;
	v = bpf_map_lookup_elem(&agg_counts, k);
	if (!v) {
		bpf_map_update_elem(&agg_counts, k, &sc->zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&agg_counts, k);
		if (!v)
			return TABLE_FULL;
	}
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->cpu_ns, ev->cpu_ns);
	__sync_fetch_and_add(&v->offcpu_ns, ev->offcpu_ns);
	__sync_fetch_and_add(&v->gil_ns, ev->gil_ns);
	v->last_ts = ev->ts;
	v->user_ip = ev->user_ip;
	__builtin_memcpy(v->comm, ev->comm, sizeof(v->comm));
	return COUNTED;
}

/* The record goes: counted (aggregate), or into the ring buffer (sent as a
 * copy when counting failed). */
static __always_inline void finish_record(struct sample_event *ev, const struct proc_info *p,
					  __u32 slot)
{
	__u32 n = ev->nframes;

	if (!aggregate) {
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
		return;
	}
	switch (count_sample(ev, p, slot)) {
	case COUNTED:
		return;
	case TABLE_FULL:
		stat_inc(STAT_AGG_FULL);
		break;
	}
	if (n > MAX_FRAMES)
		n = MAX_FRAMES;
	/* verifier: the compiler may fold the clamp into the size, whose
	 * bound the verifier then loses; the size checked again, opaquely,
	 * as it is passed. */
	__u64 bytes = (__u64)n * sizeof(struct py_frame);

	pywalk_barrier_var(bytes);
	if (bytes > sizeof(ev->frames))
		return;
	if (bpf_ringbuf_output(&events, ev, SAMPLE_HDR_SIZE + bytes, BPF_RB_NO_WAKEUP))
		stat_inc(STAT_RINGBUF_FULL);
}

/* A record that is not kept. */
static __always_inline void drop_record(struct sample_event *ev)
{
	if (!aggregate && !native_stacks)
		bpf_ringbuf_discard(ev, BPF_RB_NO_WAKEUP);
}

static __always_inline bool in_probe_text(__u64 ip)
{
	__u32 i;

	for (i = 0; i < PROBE_TEXT_RANGES && i < nprobe_text; i++) {
		if (ip >= probe_text[i][0] && ip < probe_text[i][1])
			return true;
	}
	return false;
}

/*
 * Whether a kernel-mode sample fell inside the handling of a uprobe hit (the
 * trap, the lookup of the probe, our program, the emulation of the probed
 * instruction): that time is the profiler's, not the program's.  The kernel
 * stack is read into the record's frame array, which the walk overwrites.
 */
static __always_inline bool in_uprobe(struct bpf_perf_event_data *ctx, struct sample_event *ev)
{
	__u64 *ips = (__u64 *)ev->frames, t0 = bpf_ktime_get_ns();
	long n = bpf_get_stack(ctx, ips, PROBE_STACK_DEPTH * sizeof(__u64), 0);
	bool found = false;
	__u32 i;

	n = n > 0 ? n / sizeof(__u64) : 0;
	for (i = 0; i < PROBE_STACK_DEPTH && i < n; i++) {
		if (in_probe_text(ips[i]) ||
		    (i == n - 1 && ips[i] >= probe_entry[0] && ips[i] < probe_entry[1])) {
			found = true;
			break;
		}
	}
	/* The check's own cost, per kernel-mode sample. */
	stat_inc(STAT_PROBE_CHECKS);
	stat_add(STAT_PROBE_CHECK_NS, bpf_ktime_get_ns() - t0);
	return found;
}

/*
 * Whether the user code was stopped just after an int3 (0xcc): a thread
 * that trapped on a uprobe's breakpoint, until the probed instruction is
 * emulated (a push of a low register leaves the address as it was).  Cheaper
 * than the stack, and it sees where the unwinder cannot (the retpoline thunk
 * that calls our program, the program itself before it marks the thread).
 */
static __always_inline bool after_int3(__u64 user_ip)
{
	__u8 op = 0;

	return user_ip && !bpf_probe_read_user(&op, 1, (const void *)(user_ip - 1)) && op == 0xcc;
}

/* Where the CPU's KVM steal-time area (arch/x86/kernel/kvm.c: steal_time, a
 * per-CPU variable) lies from its run queue (runqueues, another), in bytes,
 * from the kernel's BTF (the loader); 0 where the kernel has none.  The area
 * is the host's ABI: `steal`, the time the host kept the CPU away, first. */
const volatile __s64 steal_from_rq = 0;

/*
 * The time the run queue of `task`'s CPU has left out of its tasks' run time
 * so far (task: current there): rq->clock less rq->clock_task, the time the
 * hypervisor took the CPU away (steal time, with paravirt steal accounting)
 * and the time spent in interrupts (with IRQ time accounting), as of the
 * queue's last clock update (a switch, a tick); and, on KVM, the time stolen
 * since that update, which the host has already written into the CPU's
 * steal-time area (its `steal` less the queue's prev_steal_time_rq): a CPU
 * given back after the host kept it for 5 ms is sampled before the tick
 * that would tell the queue, and a sample then would count the 5 ms as the
 * thread's (taken back from its later samples: never, if the thread ends
 * first).  A task's run time (se.sum_exec_runtime: what time.thread_time()
 * reads) advances by clock_task only; the clock a sample reads advances by
 * both.  The queue is reached through the task's CFS queue (group
 * scheduling, which every distribution's kernel has: the per-CPU run queues
 * themselves are not in the symbols of a kernel without KALLSYMS_ALL); 0
 * without it, and then the samples also count the time lost while the
 * thread ran.
 */
static __always_inline __u64 rq_lost_ns(struct task_struct *task)
{
	__u64 lost, seen, now = 0;
	struct rq *rq;

	if (!bpf_core_field_exists(task->se.cfs_rq))
		return 0;
	rq = TASK_READ(task, se.cfs_rq, rq);
	if (!rq)
		return 0;
	lost = TASK_READ(rq, clock) - TASK_READ(rq, clock_task);
	if (!steal_from_rq || !bpf_core_field_exists(rq->prev_steal_time_rq) ||
	    bpf_probe_read_kernel(&now, sizeof(now), (const char *)rq + steal_from_rq))
		return lost;
	seen = TASK_READ(rq, prev_steal_time_rq);
	/* Zero where the host keeps no steal time (no KVM, or not enabled). */
	return now > seen ? lost + (now - seen) : lost;
}

/* The on-CPU time a sample of the current thread stands for: its run time
 * since its previous sample, known exactly once it has been switched in
 * under tracking (run time then, plus the clock since less the time the CPU
 * was not the thread's: it has been current on this CPU ever since); until
 * then one period.  The time lost since the queue's last clock update is not
 * seen yet (up to a tick): it is taken back from the samples after, which
 * then stand for less, down to nothing (1 ns) until it is repaid, so that
 * the samples of a thread add up to its run time. */
static __always_inline __u64 cpu_since_last(struct task_struct *task, struct tracked_thread *ts,
					    __u64 now)
{
	__u64 run, last, lost, ran;

	if (!ts || !ts->in_ktime || now < ts->in_ktime)
		return sample_period_ns;
	lost = rq_lost_ns(task);
	if (lost > ts->in_lost_ns) {
		stat_add(STAT_STOLEN_NS, lost - ts->in_lost_ns);
		ts->in_stolen_ns += lost - ts->in_lost_ns;
		ts->in_lost_ns = lost;
	}
	ran = now - ts->in_ktime;
	run = ts->in_run_ns + (ran > ts->in_stolen_ns ? ran - ts->in_stolen_ns : 0);
	last = ts->last_run_ns;
	if (run <= last)
		return 1;
	ts->last_run_ns = run;
	return run - last;
}

/*
 * The interrupted registers in the perf_event context (bpf_user_pt_regs_t:
 * x86_64's struct pt_regs, in the order of its user ABI), read by their
 * fixed offsets: the kernel's own pt_regs changed cs's type (a u16 in a
 * union since FRED, Linux 6.9; an unsigned long before), and a relocated
 * 8-byte load of it is refused on the layout it was not compiled against.
 * The context is read at full width only.
 */
enum ctx_reg {
	CTX_REG_R15 = 0,
	CTX_REG_R14 = 1,
	CTX_REG_R13 = 2,
	CTX_REG_R12 = 3,
	CTX_REG_BP = 4,
	CTX_REG_BX = 5,
	CTX_REG_IP = 16,
	CTX_REG_CS = 17,
	CTX_REG_SP = 19,
};
_Static_assert(__builtin_offsetof(struct pt_regs, ip) == CTX_REG_IP * sizeof(__u64), "pt_regs.ip");
_Static_assert(__builtin_offsetof(struct pt_regs, cs) == CTX_REG_CS * sizeof(__u64), "pt_regs.cs");
_Static_assert(__builtin_offsetof(struct pt_regs, sp) == CTX_REG_SP * sizeof(__u64), "pt_regs.sp");
_Static_assert(__builtin_offsetof(struct pt_regs, bp) == CTX_REG_BP * sizeof(__u64), "pt_regs.bp");
_Static_assert(__builtin_offsetof(struct pt_regs, r15) == CTX_REG_R15 * sizeof(__u64),
	       "pt_regs.r15");

static __always_inline __u64 ctx_reg(struct bpf_perf_event_data *ctx, enum ctx_reg r)
{
	return *(volatile __u64 *)((char *)ctx + r * sizeof(__u64));
}

/*
 * --native-unwind bpf: frame i of the unwind of slot's record (native_scratch)
 * from the registers in the slot's walk_slot: 0 to go on, else why it ends
 * (enum unwind_bpf_end).  A function of numbers only, verified once: the
 * loop of native_send calls it once per frame.
 *
 * Kernels before 6.8 verify every global function, called or not, so the
 * first test is of the option: the verifier knows the value of a read-only
 * variable and skips the rest where it is off.  Without that test, the
 * loader's start under software emulation took 12.0 s on 6.1, against 4.4
 * with it, and 51.7 s on 5.10, against 47.2.
 */
__noinline int unwind_frame(__u32 slot, __u32 i)
{
	struct walk_slot *ws;
	struct native_sample *ns;
	const struct unwind_proc *up;

	if (!native_unwind_bpf)
		return UNWIND_BPF_NO_TABLES;
	ws = bpf_map_lookup_elem(&walk_scratch, &slot);
	ns = bpf_map_lookup_elem(&native_scratch, &slot);
	if (!ws || !ns || i >= UNWIND_FRAMES)
		return UNWIND_BPF_DEPTH;
	up = bpf_map_lookup_elem(&unwind_procs, &ns->ev.hdr.tgid);
	if (!up)
		return UNWIND_BPF_NO_TABLES;
	/* verifier: the index masked as the store sees it. */
	pywalk_barrier_var(i);
	i &= UNWIND_FRAMES - 1;
	return (int)unwind_step(up, &ws->ur, &((struct unwind_frame *)(void *)ns->nt.stack)[i], i);
}

/* native_send's loop over the frames (PYWALK_FOR: verified as one step
 * where the kernel can, not once per frame). */
struct unwind_loop {
	__u32 slot, end, n;
};

static __always_inline long unwind_loop_step(__u32 i, void *arg)
{
	struct unwind_loop *ul = arg;
	__u32 end = unwind_frame(ul->slot, i);

	if (!end)
		return 0;
	ul->end = end;
	ul->n = end == UNWIND_BPF_NO_REGS ? i : i + 1;
	return 1;
}
PYWALK_CALLBACK(unwind_loop_step)

/*
 * --native: sends the record (built in native_scratch) with the thread's user
 * registers, a copy of its user stack from the stack pointer up, a page at a
 * time to the first page that cannot be read (the stack's top) or
 * NATIVE_STACK_BYTES, and, for a CPU sample in the kernel, the kernel's
 * frames.  User space unwinds the copy (user/symbolize/unwind.c).  `perf`:
 * ctx is the CPU sample's, whose registers are the user's in user mode;
 * elsewhere (an off-CPU record on the way back to user space, an
 * allocation's uprobe) the task's saved user registers are.
 */
static __always_inline void native_send(struct bpf_perf_event_data *ctx, bool perf,
					struct task_struct *task, struct tracked_thread *ts,
					struct sample_event *ev, __u32 slot)
{
	struct native_sample *ns = (struct native_sample *)ev;
	struct native_tail *nt = &ns->nt;
	struct unwind_regs *ur = NULL;
	__u32 i, len = 0, first;
	__u64 sp, size;
	long n;

	if (perf && ev->mode == MODE_USER) {
		/* The context's registers, in words (ctx_reg). */
		nt->regs[NATIVE_REG_IP] = ctx_reg(ctx, CTX_REG_IP);
		nt->regs[NATIVE_REG_SP] = ctx_reg(ctx, CTX_REG_SP);
		nt->regs[NATIVE_REG_BP] = ctx_reg(ctx, CTX_REG_BP);
		nt->regs[NATIVE_REG_BX] = ctx_reg(ctx, CTX_REG_BX);
		nt->regs[NATIVE_REG_R12] = ctx_reg(ctx, CTX_REG_R12);
		nt->regs[NATIVE_REG_R13] = ctx_reg(ctx, CTX_REG_R13);
		nt->regs[NATIVE_REG_R14] = ctx_reg(ctx, CTX_REG_R14);
		nt->regs[NATIVE_REG_R15] = ctx_reg(ctx, CTX_REG_R15);
	} else {
		struct pt_regs *uregs = task_regs(task);

		__builtin_memset(nt->regs, 0, sizeof(nt->regs));
		if (uregs) {
			nt->regs[NATIVE_REG_IP] = REGS_READ(uregs, ip);
			nt->regs[NATIVE_REG_SP] = REGS_READ(uregs, sp);
			nt->regs[NATIVE_REG_BP] = REGS_READ(uregs, bp);
			nt->regs[NATIVE_REG_BX] = REGS_READ(uregs, bx);
			nt->regs[NATIVE_REG_R12] = REGS_READ(uregs, r12);
			nt->regs[NATIVE_REG_R13] = REGS_READ(uregs, r13);
			nt->regs[NATIVE_REG_R14] = REGS_READ(uregs, r14);
			nt->regs[NATIVE_REG_R15] = REGS_READ(uregs, r15);
		}
	}
	sp = nt->regs[NATIVE_REG_SP];
	nt->ubpf_frames = 0;
	nt->ubpf_end = UNWIND_BPF_NONE;
	first = 4096 - (__u32)(sp & 4095);
	if (native_unwind_bpf && bpf_map_lookup_elem(&unwind_procs, &ev->hdr.tgid)) {
		struct walk_slot *ws = bpf_map_lookup_elem(&walk_scratch, &slot);

		ur = ws ? &ws->ur : NULL;
	}
	if (ur) {
		/* Unwound here: the frames take the copy's place. */
		ur->ip = nt->regs[NATIVE_REG_IP];
		ur->sp = sp;
		ur->bp = nt->regs[NATIVE_REG_BP];
		ur->flags = 0;
		ur->map = 0;
		struct unwind_loop ul = { .slot = slot,
					  .end = UNWIND_BPF_DEPTH,
					  .n = UNWIND_FRAMES };

		PYWALK_FOR(UNWIND_FRAMES, unwind_loop_step, &ul);
		nt->ubpf_end = ul.end;
		nt->ubpf_frames = ul.n;
		len = nt->ubpf_frames * sizeof(struct unwind_frame);
		if (ur->flags) {
			/* Code of no table (a library loaded since the loader
			 * gave them, code of no file: a frame pointer there
			 * may be none), or a rule not followed: the sample goes
			 * as a copy instead, and says why. */
			nt->ubpf_frames = 0;
			nt->ubpf_end = UNWIND_BPF_NONE | (__u32)ur->flags;
			len = 0;
		}
	}
	if (!nt->ubpf_frames && sp && first <= 4096 &&
	    !bpf_probe_read_user(nt->stack, first, (const void *)sp)) {
		len = first;
		for (i = 0; i < NATIVE_STACK_BYTES / 4096 - 1; i++) {
			__u32 off = len;

			/* verifier: the bound checked as the read sees it. */
			pywalk_barrier_var(off);
			if (off > NATIVE_STACK_BYTES - 4096 ||
			    bpf_probe_read_user(nt->stack + off, 4096, (const void *)(sp + off)))
				break;
			len += 4096;
		}
	}
	nt->stack_len = len;
	nt->nkframes = 0;
	if (perf && ev->mode == MODE_KERNEL) {
		n = bpf_get_stack(ctx, nt->kips, sizeof(nt->kips), 0);
		nt->nkframes = n > 0 ? n / sizeof(__u64) : 0;
	} else if (ev->mode == MODE_OFFCPU && ts) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct blocked_kstack *bk = bpf_map_lookup_elem(&blocked_kstacks, &tid);

		if (bk && bk->at == ts->in_ktime && bk->n <= NATIVE_KFRAMES) {
			__builtin_memcpy(nt->kips, bk->ips, sizeof(nt->kips));
			nt->nkframes = bk->n;
		}
	}
	ev->hdr.type = EV_NATIVE;
	size = NATIVE_HDR_SIZE + (__u64)len;
	pywalk_barrier_var(size);
	if (size > sizeof(*ns))
		return;
	if (bpf_ringbuf_output(&events, ns, size, BPF_RB_NO_WAKEUP))
		stat_inc(STAT_RINGBUF_FULL);
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), t0;
	struct task_struct *task = current_task();
	struct tracked_thread *ts;
	struct sample_event *ev;
	struct proc_info *p;

	p = tracked_proc(task, pid_tgid >> 32);
	if (!p)
		return 0;
	ev = new_record(pid_tgid, STAT_RINGBUF_FULL, 0, native_stacks);
	if (!ev)
		return 0;
	t0 = ev->ts;
	ev->gen = p->gen;
	stat_inc(STAT_SAMPLES);
	/* Marks the thread as tracked for sched_switch; also picks up blocked
	 * time that ended without a syscall exit (page faults). */
	ts = thread_state(task, true);
	if (!ts)
		stat_inc(STAT_TASK_STORAGE_FAIL);
	ev->cpu_ns = cpu_since_last(task, ts, t0);
	if ((ctx_reg(ctx, CTX_REG_CS) & 3) == 3) {
		ev->mode = MODE_USER;
		ev->user_ip = ctx_reg(ctx, CTX_REG_IP);
	} else {
		struct pt_regs *uregs = task_regs(task);

		ev->mode = MODE_KERNEL;
		/* The syscall the thread is in, if any: blocked time taken here
		 * ended in it (a thread just woken from futex, say). */
		if (uregs) {
			ev->user_ip = BPF_CORE_READ(uregs, ip);
			ev->syscall_nr = (__s32)BPF_CORE_READ(uregs, orig_ax);
		}
		/* Inside one of our uprobe hits: the profiler's time.  Only a
		 * thread that entered the kernel by an exception without an
		 * error code (int3 among them; not a syscall, not a page
		 * fault: orig_ax -1) has its stack read. */
		if (probe_check &&
		    ((ts && ts->in_probe) ||
		     (ev->syscall_nr == -1 && (after_int3(ev->user_ip) || in_uprobe(ctx, ev))))) {
			/* Counted apart; pending blocked time waits for the
			 * next record. */
			stat_inc(STAT_PROBE_SAMPLES);
			stat_add(STAT_PROBE_NS, ev->cpu_ns);
			drop_record(ev);
			stat_add(STAT_SAMPLE_NS, bpf_ktime_get_ns() - t0);
			return 0;
		}
	}
	copy_gil(ts, p);
	ev->offcpu_ns = take_offcpu(ts);
	ev->gil_ns = take_gil(ts, ev->offcpu_ns);
	if (ev->offcpu_ns && !count_idle && idle_wait(pid_tgid, ev->syscall_nr)) {
		stat_add(STAT_IDLE_NS, ev->offcpu_ns);
		ev->offcpu_ns = 0;
		ev->gil_ns = 0;
	}
	fill_stack(ev, p, task, ts, WALK_SLOT_SAMPLE);
	if (native_stacks)
		native_send(ctx, true, task, ts, ev, 0);
	else
		finish_record(ev, p, 0);
	/* The cost per sample, measured where it is spent. */
	stat_add(STAT_SAMPLE_NS, bpf_ktime_get_ns() - t0);
	return 0;
}

/* --native: next's kernel frames where it slept (struct blocked_kstack). */
static __always_inline void keep_blocked_kstack(struct task_struct *next, struct tracked_thread *ts)
{
	__u32 zero = 0, tid = next->pid;
	struct blocked_kstack *bk = bpf_map_lookup_elem(&kstack_scratch, &zero);
	long n;

	if (!bk)
		return;
	n = bpf_get_task_stack(next, bk->ips, sizeof(bk->ips), 0);
	if (n <= 0)
		return;
	bk->n = n / sizeof(__u64);
	bk->at = ts->in_ktime;
	bpf_map_update_elem(&blocked_kstacks, &tid, bk, BPF_ANY);
}

/*
 * Switch bookkeeping.  Only voluntary sleeps count as blocked: a preempted
 * thread is still runnable and waiting for a CPU, not for the program.
 * Tracked threads have storage (seeded by the loader at attach, created at
 * clone and at the first sample): everyone else costs one lookup here.
 * Returns the switched-in thread's state if it is tracked.
 */
static __always_inline struct tracked_thread *account_switch(bool preempt, struct task_struct *prev,
							     struct task_struct *next,
							     unsigned int prev_state)
{
	struct tracked_thread *ts;
	__u64 now = 0;

	if (!preempt && prev_state != TASK_RUNNING) {
		ts = thread_state(prev, false);
		if (ts) {
			now = bpf_ktime_get_ns();
			ts->blocked_since = now;
			ts->blocked_on_gil = waits_for_gil(prev, ts);
		}
	}
	ts = thread_state(next, false);
	if (!ts)
		return NULL;
	if (!now)
		now = bpf_ktime_get_ns();
	ts->in_run_ns = next->se.sum_exec_runtime;
	/* The switch has just brought the queue's clock up to date. */
	ts->in_lost_ns = rq_lost_ns(next);
	ts->in_stolen_ns = 0;
	/* The first switch-in under tracking: samples count from here. */
	if (!ts->in_ktime)
		ts->last_run_ns = ts->in_run_ns;
	ts->in_ktime = now;
	if (ts->blocked_since) {
		if (now > ts->blocked_since) {
			ts->pending_ns += now - ts->blocked_since;
			if (ts->blocked_on_gil)
				ts->gil_pending_ns += now - ts->blocked_since;
		}
		ts->blocked_since = 0;
		if (native_stacks && ts->pending_ns >= sample_period_ns)
			keep_blocked_kstack(next, ts);
	}
	return ts;
}

/*
 * The off-CPU record of the current thread, on its way back to user space
 * after a block (regs: its user registers, for the syscall and the ip), once
 * its pending blocked time has crossed the period: whole periods of it, with
 * the stack where it blocked.
 */
static __always_inline void offcpu_record(struct pt_regs *regs)
{
	struct task_struct *task = current_task();
	__u64 pid_tgid, t0;
	struct tracked_thread *ts;
	struct sample_event *ev;
	struct proc_info *p;
	__s32 nr;

	ts = thread_state(task, false);
	if (!ts || ts->pending_ns < sample_period_ns)
		return;
	pid_tgid = bpf_get_current_pid_tgid();
	nr = (__s32)BPF_CORE_READ(regs, orig_ax);
	p = tracked_proc(task, pid_tgid >> 32);
	if (!p)
		return;
	if (!count_idle && idle_wait(pid_tgid, nr)) {
		__u64 idle = take_offcpu(ts);

		take_gil(ts, idle);
		stat_add(STAT_IDLE_NS, idle);
		return;
	}
	ev = new_record(pid_tgid, STAT_RINGBUF_FULL, 1, native_stacks);
	if (!ev)
		return;
	t0 = ev->ts;
	stat_inc(STAT_OFFCPU_EVENTS);
	ev->gen = p->gen;
	ev->mode = MODE_OFFCPU;
	ev->offcpu_ns = take_offcpu(ts);
	ev->gil_ns = take_gil(ts, ev->offcpu_ns);
	ev->syscall_nr = nr;
	ev->user_ip = BPF_CORE_READ(regs, ip);
	fill_stack(ev, p, task, ts, WALK_SLOT_TRACEPOINT);
	if (native_stacks)
		native_send(NULL, false, task, ts, ev, 1);
	else
		finish_record(ev, p, 1);
	/* Measured here: the kernel's statistics do not see a task work's
	 * callback. */
	stat_add(STAT_OFFCPU_NS, bpf_ktime_get_ns() - t0);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	account_switch(preempt, prev, next, prev_state);
	return 0;
}

/* task_struct.state before Linux 5.14 (then __state). */
struct task_struct___state {
	long state;
} __attribute__((preserve_access_index));

/*
 * The same before Linux 5.18, whose tracepoint does not pass prev_state (the
 * loader loads this one where sched_switch has three arguments): the state
 * is read from the task, as the tracepoint's own format did then.  A wakeup
 * that races with the switch can make it read running, and that block is not
 * counted (5.18 passes the state the switch decided on for that reason).
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_task_state, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	unsigned int state;

	if (bpf_core_field_exists(prev->__state))
		state = BPF_CORE_READ(prev, __state);
	else
		state = BPF_CORE_READ((struct task_struct___state *)prev, state);
	account_switch(preempt, prev, next, state);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	offcpu_record(regs);
	return 0;
}

/* A task work per thread that has one queued or had one (LRU: the threads
 * of the past make room). */
struct offcpu_work {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_work);
} offcpu_works SEC(".maps");

/* Runs in the woken thread as it returns to user space (task work callbacks
 * may sleep; this one does not). */
static int offcpu_work_run(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *task = bpf_get_current_task_btf();

	/* Task work also runs at exit, after the memory is gone. */
	if (task->flags & PF_EXITING)
		return 0;
	offcpu_record((struct pt_regs *)bpf_task_pt_regs(task));
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_work, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct tracked_thread *ts = account_switch(preempt, prev, next, prev_state);
	struct offcpu_work zero = {}, *w;
	__u32 tid;
	int err;

	if (!ts || ts->pending_ns < sample_period_ns)
		return 0;
	tid = next->pid;
	w = bpf_map_lookup_elem(&offcpu_works, &tid);
	if (!w) {
		bpf_map_update_elem(&offcpu_works, &tid, &zero, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&offcpu_works, &tid);
		if (!w) {
			stat_inc(STAT_OFFCPU_WORK_FAILED);
			return 0;
		}
	}
	/* -EBUSY: one is queued already (the thread has not reached user
	 * space since), and it takes all that is pending when it runs. */
	err = bpf_task_work_schedule_resume_impl(next, &w->tw, &offcpu_works, offcpu_work_run,
						 NULL);
	if (err && err != -EBUSY)
		stat_inc(STAT_OFFCPU_WORK_FAILED);
	return 0;
}

static __always_inline void emit_proc_record(__u32 type, __u32 tgid, __u32 ppid, __u32 code,
					     __u32 gen, __u32 flags, struct task_struct *task,
					     __u64 alloc_hits)
{
	struct signal_struct *sig = task->signal;
	struct proc_record *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	e->hdr.type = type;
	e->hdr.tgid = tgid;
	e->ppid = ppid;
	e->exit_code = code;
	e->gen = gen;
	e->flags = flags;
	e->alloc_hits = alloc_hits;
	e->ts = bpf_ktime_get_ns();
	/* The group's peak resident set so far, in pages (the kernel keeps it
	 * there for getrusage; at the exit of the last thread it is final). */
	e->maxrss_pages = sig ? BPF_CORE_READ(sig, maxrss) : 0;
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	/* Process events of followed processes are rare and the loader wants
	 * them promptly (an exec starts the recognition of the new image): a
	 * wakeup is forced, as the samples before it in the buffer asked for
	 * none (and the default wakes the loader only when the buffer was
	 * drained: measured, an exec was read 10 ms late, at the next drain).
	 * The host's others wait for its next drain. */
	bpf_ringbuf_submit(e, flags & PROC_F_UNTRACKED ? BPF_RB_NO_WAKEUP : BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct proc_info *p, np;

	p = tracked_proc(parent, ptgid);
	if (!p) {
		/* System-wide: a parent the loader has just taken on (after
		 * its exec) may fork before BPF is told; the loader decides
		 * about the child. */
		if (track_all && ptgid != ctgid)
			emit_proc_record(EV_FORK, ctgid, ptgid, 0, 0, PROC_F_UNTRACKED, child, 0);
		return 0;
	}
	if (ptgid == ctgid) {
		/* A new thread: track it from its first switch. */
		if (!thread_state(child, true))
			stat_inc(STAT_TASK_STORAGE_FAIL);
		return 0;
	}
	if (!follow_children)
		return 0;
	/* The child is a copy of the parent's address space: the same walk
	 * configuration holds until it execs. */
	__builtin_memcpy(&np, p, sizeof(np));
	np.start_time = BPF_CORE_READ(child, start_boottime) / tick_ns;
	np.gen = 0;
	np.alloc_hits = 0;
	if (bpf_map_update_elem(&procs, &ctgid, &np, BPF_ANY)) {
		stat_inc(STAT_PROC_TABLE_FULL);
		return 0;
	}
	emit_proc_record(EV_FORK, ctgid, ptgid, 0, 0, 0, child, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = task->tgid;
	struct proc_info *p = tracked_proc(task, tgid);
	__u64 hits;

	if (!p) {
		/* Not followed: the loader decides whether to (ppid: 0). */
		if (track_all)
			emit_proc_record(EV_EXEC, tgid, 0, 0, 0, 0, task, 0);
		return 0;
	}
	/* New image: the old interpreter layout is gone, and its hits are
	 * counted (exec leaves one thread, this one: no hit comes between). */
	p->has_cfg = 0;
	p->gen++;
	hits = p->alloc_hits;
	p->alloc_hits = 0;
	copy_gil(thread_state(task, false), p);
	emit_proc_record(EV_EXEC, tgid, 0, 0, p->gen, 0, task, hits);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid, code;
	struct proc_info *p;

	thread_gone(task);
	/* Only the last thread of the group ends the process. */
	if (task->pid != tgid)
		return 0;
	p = tracked_proc(task, tgid);
	code = BPF_CORE_READ(task, signal, group_exit_code) ?: task->exit_code;
	if (!p) {
		/* System-wide: the exit of a child the loader took on from an
		 * untracked fork record may come before BPF was told. */
		if (track_all)
			emit_proc_record(EV_EXIT, tgid, 0, code, 0, PROC_F_UNTRACKED, task, 0);
		return 0;
	}
	emit_proc_record(EV_EXIT, tgid, 0, code, p->gen, 0, task, p->alloc_hits);
	return 0;
}

/*
 * The allocation sampler's probes.  Attached to every process that maps the
 * library (the loader passes no PID: fork children are covered without a new
 * attach); records are kept only for tracked processes.
 */
/* A memory record of tracked process p, with the thread's stack.  ts: the
 * thread's state if the caller has it, else NULL (found or made here). */
static __always_inline int mem_record(struct proc_info *p, struct task_struct *task,
				      struct tracked_thread *ts, __u8 mode, __u64 bytes, __u64 addr,
				      __u64 size, __u32 flags)
{
	struct sample_event *ev;
	__u64 t0;

	/* A native stack for allocations only: frees and copies keep none. */
	bool native = native_stacks && mode == MODE_MALLOC;

	ev = new_record(bpf_get_current_pid_tgid(), STAT_MEM_LOST, RECORD_ONLY, native);
	if (!ev)
		return 0;
	t0 = ev->ts;
	ev->mode = mode;
	ev->mem_bytes = bytes;
	ev->mem_addr = addr;
	ev->mem_size = size;
	ev->mem_flags = flags;
	ev->gen = p->gen;
	stat_inc(STAT_MEM_EVENTS);
	if (!ts) {
		ts = thread_state(task, true);
		if (!ts)
			stat_inc(STAT_TASK_STORAGE_FAIL);
	}
	fill_stack(ev, p, task, ts, WALK_SLOT_PROBE);
	if (native)
		native_send(NULL, false, task, ts, ev, RECORD_ONLY);
	else
		bpf_ringbuf_submit(ev, BPF_RB_NO_WAKEUP);
	stat_add(STAT_MEM_NS, bpf_ktime_get_ns() - t0);
	return 0;
}

static __always_inline int mem_event(__u8 mode, __u64 bytes, __u64 addr, __u64 size, __u32 flags)
{
	struct task_struct *task = current_task();
	struct proc_info *p = tracked_proc(task, bpf_get_current_pid_tgid() >> 32);

	if (!p)
		return 0;
	return mem_record(p, task, NULL, mode, bytes, addr, size, flags);
}

/* At the entry of an interpreter's code-object deallocator (PyCode_Type's
 * tp_dealloc), before the object's memory can be used again: what any walk
 * kept of code objects is forgotten.  Counted for every process that maps
 * the interpreter, followed or not, which errs on the safe side. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} code_snaps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct code_snap_record);
} code_snap_scratch SEC(".maps");

/* A compact str object at addr, header and characters, into buf (cap
 * bytes at most): the bytes read, 0 when it is not one or unreadable. */
static __always_inline __u32 snap_str(const struct py_walk_cfg *c, __u8 *buf, __u32 cap, __u64 addr)
{
	__u32 state = 0, kind;
	__u64 len = 0, n;

	if (!addr || bpf_probe_read_user(&state, sizeof(state), (void *)(addr + c->str_state)) ||
	    bpf_probe_read_user(&len, sizeof(len), (void *)(addr + c->str_length)))
		return 0;
	kind = (state & c->str_kind_mask) >> (c->str_kind_shift & 31);
	if (!(state & c->str_compact_mask) || (kind != 1 && kind != 2 && kind != 4))
		return 0;
	if (len > cap)
		len = cap;
	n = (state & c->str_ascii_mask ? c->str_ascii_size : c->str_compact_size) + len * kind;
	if (n > cap)
		n = cap;
	return bpf_probe_read_user(buf, n, (void *)addr) ? 0 : (__u32)n;
}

static __always_inline __u64 snap_u64(const __u8 *head, __u32 off)
{
	return *(const __u64 *)&head[off & (CODE_SNAP_HEAD_BYTES - 8)];
}

/* The code object being freed, if a walk read it lately (code_stamp): its
 * fields, names and line table to code_snaps. */
static __always_inline void snap_code(__u64 code)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0, lo, n;
	struct code_snap_record *r;
	struct code_stamps *stamps;
	const struct py_walk_cfg *c;
	struct proc_info *p;
	__u64 table, size = 0;
	__u16 st;

	if (!code)
		return;
	stamps = bpf_map_lookup_elem(&code_stamps, &zero);
	if (!stamps)
		return;
	st = stamps->when[code_stamp_slot(tgid, code)];
	if (!st || (__u16)(code_stamp_now() - st) > CODE_STAMP_KEEP)
		return;
	p = tracked_proc(current_task(), tgid);
	if (!p || !p->has_cfg || !p->cfg.co_len)
		return;
	r = bpf_map_lookup_elem(&code_snap_scratch, &zero);
	if (!r)
		return;
	c = &p->cfg;
	stat_inc(STAT_CODE_SNAPS);
	r->hdr.type = EV_CODE;
	r->hdr.tgid = tgid;
	r->code = code;
	lo = c->co_lo;
	n = c->co_len;
	if (n > CODE_SNAP_HEAD_BYTES)
		n = CODE_SNAP_HEAD_BYTES;
	r->addr[CODE_SNAP_HEAD] = code + lo;
	r->len[CODE_SNAP_HEAD] = n;
	if (bpf_probe_read_user(r->head, n, (void *)(code + lo)))
		goto lost;
	r->addr[CODE_SNAP_FNAME] = snap_u64(r->head, c->co_filename - lo);
	r->len[CODE_SNAP_FNAME] =
		snap_str(c, r->fname, CODE_SNAP_FNAME_BYTES, r->addr[CODE_SNAP_FNAME]);
	r->addr[CODE_SNAP_NAME] = snap_u64(
		r->head, (c->co_qualname != PYOFF_UNSET ? c->co_qualname : c->co_name) - lo);
	r->len[CODE_SNAP_NAME] =
		snap_str(c, r->name, CODE_SNAP_NAME_BYTES, r->addr[CODE_SNAP_NAME]);
	table = snap_u64(r->head, c->co_linetable - lo);
	r->addr[CODE_SNAP_TABLE] = table;
	r->len[CODE_SNAP_TABLE] = 0;
	if (!r->len[CODE_SNAP_FNAME] || !r->len[CODE_SNAP_NAME] || !table ||
	    bpf_probe_read_user(&size, sizeof(size), (void *)(table + c->var_size)))
		goto lost;
	size += c->bytes_sval;
	if (size > CODE_SNAP_TABLE_BYTES)
		size = CODE_SNAP_TABLE_BYTES;
	if (bpf_probe_read_user(r->table, size, (void *)table))
		goto lost;
	r->len[CODE_SNAP_TABLE] = size;
	if (!bpf_ringbuf_output(&code_snaps, r,
				__builtin_offsetof(struct code_snap_record, table) + size,
				BPF_RB_NO_WAKEUP))
		return;
lost:
	stat_inc(STAT_CODE_SNAPS_LOST);
}

SEC("uprobe")
int on_code_dealloc(struct pt_regs *ctx)
{
	__sync_fetch_and_add(&code_gen, 1);
	stat_inc(STAT_CODE_FREED);
	snap_code(PT_REGS_PARM1(ctx));
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_malloc, __u64 weight, __u32 flags, __u64 ptr, __u64 size)
{
	return mem_event(MODE_MALLOC, weight, ptr, size, flags);
}

SEC("uprobe")
int BPF_KPROBE(on_free, __u64 ptr, __u64 weight, __u32 flags)
{
	return mem_event(MODE_FREE, weight, ptr, 0, flags);
}

SEC("uprobe")
int BPF_KPROBE(on_memcpy, __u64 weight, __u64 size)
{
	return mem_event(MODE_COPY, weight, 0, size, 0);
}

static __always_inline int sampler_event(__u32 phase, __u64 state, __u32 abi)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = current_task();
	struct sampler_record *r;

	if (!tracked_proc(task, pid_tgid >> 32))
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_inc(STAT_EVENTS_LOST);
		return 0;
	}
	r->hdr.type = EV_SAMPLER;
	r->hdr.tgid = pid_tgid >> 32;
	r->phase = phase;
	r->abi = abi;
	r->ts = bpf_ktime_get_ns();
	r->state_addr = state;
	r->pad = 0;
	r->read_err = bpf_probe_read_user(r->state, sizeof(r->state), (const void *)state);
	if (r->read_err)
		__builtin_memset(r->state, 0, sizeof(r->state));
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_sampler_init, __u64 state, __u32 abi)
{
	return sampler_event(SAMPLER_INIT, state, abi);
}

SEC("uprobe")
int BPF_KPROBE(on_sampler_exit, __u64 state)
{
	return sampler_event(SAMPLER_EXIT, state, 0);
}

/*
 * The GPU library's probes (user/gpu/gpu.h), attached like the sampler's to
 * every process that maps the library; only tracked processes are kept.  A
 * traced CUDA call is a small record naming the calling thread's Python
 * stack (the launch site), whose frames go once per distinct stack; records,
 * names and state blocks are copied while the library's thread waits at the
 * probe.
 */
/* Where a traced call's stack is built (per CPU: uprobe programs do not
 * nest on a CPU), and its EV_STACK record. */
struct gpu_scratch {
	struct sample_event ev;
	struct agg_stack_record rec;
	struct gpu_call_record call;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpu_scratch);
} gpu_scratch SEC(".maps");

/* The call's record, after its stack (sent once); a call whose stack
 * could not be sent names none. */
static __noinline int send_call(struct gpu_scratch *sc)
{
	struct gpu_call_record *r = &sc->call;

	r->stack = stack_id(&sc->ev);
	if (r->stack && !send_stack(&sc->ev, r->stack, &sc->rec))
		r->stack = 0;
	if (bpf_ringbuf_output(&events, r, sizeof(*r), BPF_RB_NO_WAKEUP))
		stat_inc(STAT_GPU_LOST);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_gpu_api, __u64 correlation_id, __u32 cbid, __u32 domain, __u32 class)
{
	struct task_struct *task = current_task();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct proc_info *p = tracked_proc(task, pid_tgid >> 32);
	struct tracked_thread *ts;
	struct gpu_call_record *r;
	struct gpu_scratch *sc;
	__u32 zero = 0;

	if (!p)
		return 0;
	stat_inc(STAT_GPU_API);
	sc = bpf_map_lookup_elem(&gpu_scratch, &zero);
	if (!sc)
		return 0;
	/* The call's fields first: nothing stays live across the walk. */
	r = &sc->call;
	r->hdr.type = EV_GPU_CALL;
	r->hdr.tgid = pid_tgid >> 32;
	r->tid = (__u32)pid_tgid;
	r->correlation_id = (__u32)correlation_id;
	r->ts = bpf_ktime_get_ns();
	r->api_class = class;
	r->cbid = cbid;
	r->domain = domain;
	r->gen = p->gen;
	sc->ev.hdr.tgid = pid_tgid >> 32;
	sc->ev.mode = MODE_GPU_API;
	sc->ev.user_ip = 0;
	sc->ev.flags = 0;
	ts = thread_state(task, true);
	if (!ts)
		stat_inc(STAT_TASK_STORAGE_FAIL);
	fill_stack(&sc->ev, p, task, ts, WALK_SLOT_PROBE);
	sc->call.status = sc->ev.status;
	return send_call(sc);
}

static __always_inline struct gpu_record *gpu_reserve(__u32 phase, __u64 state)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = current_task();
	struct gpu_record *r;

	if (!tracked_proc(task, pid_tgid >> 32))
		return NULL;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_inc(STAT_GPU_LOST);
		return NULL;
	}
	r->hdr.type = EV_GPU;
	r->hdr.tgid = pid_tgid >> 32;
	r->phase = phase;
	r->abi = 0;
	r->ts = bpf_ktime_get_ns();
	r->state_addr = state;
	r->inner = 0;
	r->outer = 0;
	r->read_err = 0;
	r->count = 0;
	return r;
}

static __always_inline int gpu_state_event(__u32 phase, __u64 state, __u32 abi)
{
	struct gpu_record *r = gpu_reserve(phase, state);

	if (!r)
		return 0;
	r->abi = abi;
	r->read_err = bpf_probe_read_user(r->state, sizeof(r->state), (const void *)state);
	if (r->read_err)
		__builtin_memset(r->state, 0, sizeof(r->state));
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_gpu_init, __u64 state, __u32 abi)
{
	return gpu_state_event(GPU_INIT, state, abi);
}

SEC("uprobe")
int BPF_KPROBE(on_gpu_exit, __u64 state)
{
	return gpu_state_event(GPU_EXIT, state, 0);
}

SEC("uprobe")
int BPF_KPROBE(on_gpu_api_alias, __u64 inner, __u64 outer)
{
	struct gpu_record *r = gpu_reserve(GPU_ALIAS, 0);

	if (!r)
		return 0;
	r->inner = inner;
	r->outer = outer;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_gpu_name, __u64 addr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gpu_name_record *r;

	if (!tracked_proc(current_task(), pid_tgid >> 32))
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		stat_inc(STAT_GPU_LOST);
		return 0;
	}
	r->hdr.type = EV_GPU_NAME;
	r->hdr.tgid = pid_tgid >> 32;
	r->addr = addr;
	r->pad = 0;
	r->len = bpf_probe_read_user_str(r->name, sizeof(r->name), (const void *)addr);
	if (r->len < 0)
		r->name[0] = 0;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(on_gpu_records, __u64 recs, __u64 count, __u64 state)
{
	struct gpu_record *r;
	__u32 n = count > GPU_BATCH ? GPU_BATCH : (__u32)count;

	r = gpu_reserve(GPU_RECORDS, state);
	if (!r)
		return 0;
	r->count = n;
	r->read_err = bpf_probe_read_user(r->recs, n * GPU_REC_BYTES, (const void *)recs);
	if (r->read_err)
		r->count = 0;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/*
 * Attach mode: uprobes on the allocation functions themselves (nothing can
 * be preloaded into a running process), placed by the loader on an
 * instruction the kernel emulates.  Every call traps, so the work here is
 * kept to a countdown until a sample is due.  The sampling is the preloaded
 * sampler's (user/sampler/sampler.h): sample points form a Poisson process
 * over each thread's allocated bytes, a block of s bytes that holds one is
 * sampled and weighs s / (1 - e^(-s/P)), so each line's estimate is
 * unbiased whatever is allocated around it.  The exponential gaps and the
 * weights come from tables the loader fills (1/16 P steps for the weights).
 * A gap is drawn from one of 256 equally likely cells of the exponential
 * distribution, uniformly inside it: a cell's width is set so that its mean
 * is the distribution's there, and the last cell (beyond ln 256) is ln 256
 * plus a second draw, as the distribution is memoryless.  Gaps on a lattice
 * (the cells' midpoints alone, in steps of P / 256) beat against programs
 * that allocate in a fixed cycle: bytes blocks of 1033 and 3033 and a 32-byte
 * int made the 3033 one's share 4 % low and the int's 60 % high.
 * The block's address is not known at entry, so frees are not followed
 * (MEMF_NO_FREES).
 */
const volatile __u32 gap_lo[256];	/* -ln(1 - i / 256), x 65536 */
const volatile __u32 gap_width[256];	/* x 65536: the cell's mean at its middle */
const volatile __u32 weight_table[256]; /* 1 / (1 - e^-((k + 0.5) / 16)), x 65536 */

/* A point of the exponential distribution of mean 1, x 65536, from 32
 * random bits: the top 8 pick the cell, the rest the place in it. */
static __always_inline __u64 gap_units(__u32 r)
{
	__u32 i = r >> 24;

	return gap_lo[i] + ((__u64)gap_width[i] * (r & 0xffffff) >> 24);
}

static __always_inline __s64 draw_gap(void)
{
	__u32 r = bpf_get_prandom_u32();
	__u64 x = gap_units(r), gap;

	if (r >> 24 == 255)
		x = gap_lo[255] + gap_units(bpf_get_prandom_u32());
	gap = mem_sample_bytes * x >> 16;
	return gap ? (__s64)gap : 1;
}

static __always_inline __u64 sample_weight(__u64 size)
{
	__u64 p = mem_sample_bytes, k;

	if (size * 16 < p)
		return p + size / 2; /* s / (1 - e^(-s/P)) for s << P */
	k = size * 16 / p;
	if (k >= 256)
		return size;
	return size * weight_table[k & 255] / 65536;
}

/* Whether a sample taken now is inside the duty cycle's window, or there
 * is no duty cycle. */
static __always_inline bool in_mem_window(void)
{
	__u64 now;

	if (!mem_windowed)
		return true;
	now = bpf_ktime_get_ns();
	if (now < mem_window_lo || now >= mem_window_hi) {
		stat_inc(STAT_UPROBE_OUTSIDE);
		return false;
	}
	return true;
}

/* Counts an allocation of size bytes down to the next sample point; at the
 * point, a record. */
static __always_inline void count_alloc(struct proc_info *p, struct task_struct *task,
					struct tracked_thread *ts, __u64 size, bool python)
{
	if (!python && size && ts->py_pending == size) {
		/* The libc half of a large Python allocation: counted already. */
		ts->py_pending = 0;
		return;
	}
	/* pymalloc passes requests over 512 bytes to the raw allocator. */
	if (python)
		ts->py_pending = size > 512 ? size : 0;
	/* Zero before the first draw, and above zero between draws (a gap is
	 * at least one byte). */
	if (!ts->mem_left)
		ts->mem_left = draw_gap();
	if ((__s64)size < ts->mem_left) {
		ts->mem_left -= (__s64)size;
		return;
	}
	ts->mem_left = draw_gap();
	if (!in_mem_window())
		return;
	mem_record(p, task, ts, MODE_MALLOC, sample_weight(size), 0, size,
		   (python ? SBS_F_PYTHON : 0) | MEMF_NO_FREES);
}

static __always_inline int alloc_probe(__u64 size, bool python)
{
	struct task_struct *task = current_task();
	struct proc_info *p = tracked_proc(task, bpf_get_current_pid_tgid() >> 32);
	struct tracked_thread *ts;

	if (!p)
		return 0;
	stat_inc(STAT_UPROBE_HITS);
	__sync_fetch_and_add(&p->alloc_hits, 1);
	ts = thread_state(task, true);
	if (!ts)
		return 0;
	/* Samples taken from here on are the probe's (on_cpu_sample). */
	ts->in_probe = 1;
	count_alloc(p, task, ts, size, python);
	ts->in_probe = 0;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(up_malloc, __u64 size)
{
	return alloc_probe(size, false);
}

SEC("uprobe")
int BPF_KPROBE(up_calloc, __u64 n, __u64 size)
{
	return alloc_probe(n * size, false);
}

SEC("uprobe")
int BPF_KPROBE(up_realloc, __u64 ptr, __u64 size)
{
	return alloc_probe(size, false);
}

SEC("uprobe")
int BPF_KPROBE(up_py_malloc, __u64 size)
{
	return alloc_probe(size, true);
}

SEC("uprobe")
int BPF_KPROBE(up_py_calloc, __u64 n, __u64 size)
{
	return alloc_probe(n * size, true);
}

SEC("uprobe")
int BPF_KPROBE(up_py_realloc, __u64 ptr, __u64 size)
{
	return alloc_probe(size, true);
}
