// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CPU and off-CPU sampling of tracked Python processes.
 *
 * on_cpu_sample (perf_event, every CPU): one record per sample of a tracked
 *   thread with its mode (user/kernel), leaf user IP and Python stack.
 * on_switch (tp_btf/sched_switch): timestamps only.  A thread that blocks
 *   gets its start time noted; when it runs again the blocked time is added to
 *   a per-thread accumulator.  No stack walk here: switches can be far more
 *   frequent than samples.
 * on_sys_exit (tp_btf/sys_exit): runs in the woken thread before it returns to
 *   user space, so its Python stack is still where it blocked.  Each time the
 *   accumulator crosses the sampling period one off-CPU record is emitted for
 *   the whole periods crossed (blocked time sampled like CPU time), so the
 *   cost follows the sampling rate, not the switch rate.
 * sched_process_{fork,exec,exit}: follow children, re-detect after exec.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define PYWALK_READ(dst, sz, src) bpf_probe_read_user((dst), (sz), (const void *)(src))
#include "pywalk.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TASK_RUNNING 0

const volatile __u64 sample_period_ns = 1000000;
const volatile __u8 follow_children = 1;
/* Length of a clock tick: start times are compared in the unit of
 * /proc/PID/stat, which is all the loader can see. */
const volatile __u64 tick_ns = 10000000;

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

struct scratch {
	struct sample_event ev;
	struct pywalk_scratch walk;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* Per-thread off-CPU state of tracked threads only: its presence is what
 * makes sched_switch cheap for everyone else. */
struct thread_state {
	__u64 blocked_since; /* 0 while running */
	__u64 pending_ns;    /* blocked time not yet emitted */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

static __always_inline void stat_inc(__u32 id)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &id);

	if (v)
		*v += 1;
}

static __always_inline struct proc_info *tracked_proc(struct task_struct *task, __u32 tgid)
{
	struct proc_info *p = bpf_map_lookup_elem(&procs, &tgid);

	if (!p)
		return NULL;
	/* A recycled PID is not the process we were asked to follow. */
	if (p->start_time &&
	    p->start_time != BPF_CORE_READ(task, group_leader, start_boottime) / tick_ns)
		return NULL;
	return p;
}

/* Fills the record's stack; returns the number of bytes to submit. */
static __always_inline __u64 fill_stack(struct scratch *sc, struct proc_info *p,
					struct task_struct *task)
{
	struct sample_event *ev = &sc->ev;
	__u32 n = 0;
	int status;

	if (!p->has_cfg) {
		status = WALK_NO_CONFIG;
		stat_inc(STAT_NO_CONFIG);
	} else {
		status = pywalk(&p->cfg, BPF_CORE_READ(task, thread.fsbase), ev->frames, &n,
				&sc->walk);
		if (status == WALK_READ_FAILED)
			stat_inc(STAT_WALK_READ_FAILED);
		else if (status == WALK_TRUNCATED)
			stat_inc(STAT_WALK_TRUNCATED);
		else if (status == WALK_NO_TSTATE || status == WALK_TID_MISMATCH)
			stat_inc(STAT_NO_TSTATE);
	}
	ev->status = status;
	ev->nframes = n;
	if (n > MAX_FRAMES)
		n = MAX_FRAMES;
	return SAMPLE_HDR_SIZE + (__u64)n * sizeof(struct py_frame);
}

static __always_inline void submit(struct scratch *sc, __u64 size)
{
	/* verifier: bound the variable size */
	if (size > sizeof(struct sample_event))
		size = sizeof(struct sample_event);
	/* No wake-up: the loader drains on a timer.  Wake-ups cost more than the
	 * walk itself. */
	if (bpf_ringbuf_output(&events, &sc->ev, size, BPF_RB_NO_WAKEUP))
		stat_inc(STAT_RINGBUF_FULL);
}

/* Moves whole sampling periods of accumulated blocked time out of `ts`. */
static __always_inline __u64 take_offcpu(struct thread_state *ts)
{
	__u64 period = sample_period_ns, n;

	if (!ts || ts->pending_ns < period)
		return 0;
	n = ts->pending_ns / period;
	ts->pending_ns -= n * period;
	return n * period;
}

static __always_inline struct scratch *new_record(struct task_struct *task, __u64 pid_tgid)
{
	__u32 zero = 0;
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &zero);

	if (!sc)
		return NULL;
	sc->ev.type = EV_SAMPLE;
	sc->ev.tgid = pid_tgid >> 32;
	sc->ev.tid = (__u32)pid_tgid;
	sc->ev.cpu = bpf_get_smp_processor_id();
	sc->ev.ts = bpf_ktime_get_ns();
	sc->ev.cpu_ns = 0;
	sc->ev.offcpu_ns = 0;
	sc->ev.user_ip = 0;
	sc->ev.syscall_nr = -1;
	return sc;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	struct thread_state *ts;
	struct proc_info *p;
	struct scratch *sc;

	p = tracked_proc(task, pid_tgid >> 32);
	if (!p)
		return 0;
	sc = new_record(task, pid_tgid);
	if (!sc)
		return 0;
	stat_inc(STAT_SAMPLES);
	sc->ev.cpu_ns = sample_period_ns;
	/* verifier: context fields are read at their full width. */
	if ((*(volatile __u64 *)&ctx->regs.cs & 3) == 3) {
		sc->ev.mode = MODE_USER;
		sc->ev.user_ip = *(volatile __u64 *)&ctx->regs.ip;
	} else {
		struct pt_regs *uregs = (struct pt_regs *)bpf_task_pt_regs(task);

		sc->ev.mode = MODE_KERNEL;
		sc->ev.user_ip = BPF_CORE_READ(uregs, ip);
	}
	/* Marks the thread as tracked for sched_switch; also picks up blocked
	 * time that ended without a syscall exit (page faults). */
	ts = bpf_task_storage_get(&threads, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		stat_inc(STAT_TASK_STORAGE_FAIL);
	sc->ev.offcpu_ns = take_offcpu(ts);
	submit(sc, fill_stack(sc, p, task));
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct thread_state *ts;
	__u64 now = 0;

	/* Only voluntary sleeps count as blocked: a preempted thread is still
	 * runnable and waiting for a CPU, not for the program. */
	if (prev_state != TASK_RUNNING) {
		ts = bpf_task_storage_get(&threads, prev, 0, 0);
		if (!ts && tracked_proc(prev, prev->tgid)) {
			/* A thread never sampled yet (idle since the attach). */
			ts = bpf_task_storage_get(&threads, prev, 0,
						  BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (!ts)
				stat_inc(STAT_TASK_STORAGE_FAIL);
		}
		if (ts) {
			now = bpf_ktime_get_ns();
			ts->blocked_since = now;
		}
	}
	ts = bpf_task_storage_get(&threads, next, 0, 0);
	if (ts && ts->blocked_since) {
		if (!now)
			now = bpf_ktime_get_ns();
		if (now > ts->blocked_since)
			ts->pending_ns += now - ts->blocked_since;
		ts->blocked_since = 0;
	}
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid, offcpu;
	struct thread_state *ts;
	struct proc_info *p;
	struct scratch *sc;

	ts = bpf_task_storage_get(&threads, task, 0, 0);
	if (!ts || ts->pending_ns < sample_period_ns)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	p = tracked_proc(task, pid_tgid >> 32);
	if (!p)
		return 0;
	offcpu = take_offcpu(ts);
	sc = new_record(task, pid_tgid);
	if (!sc)
		return 0;
	stat_inc(STAT_OFFCPU_EVENTS);
	sc->ev.mode = MODE_OFFCPU;
	sc->ev.offcpu_ns = offcpu;
	sc->ev.syscall_nr = (__s32)BPF_CORE_READ(regs, orig_ax);
	sc->ev.user_ip = BPF_CORE_READ(regs, ip);
	submit(sc, fill_stack(sc, p, task));
	return 0;
}

static __always_inline void emit_proc_record(__u32 type, __u32 tgid, __u32 ppid, __u32 code,
				       struct task_struct *task)
{
	struct proc_record *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		stat_inc(STAT_EVENTS_LOST);
		return;
	}
	e->type = type;
	e->tgid = tgid;
	e->ppid = ppid;
	e->exit_code = code;
	e->ts = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	/* Process events are rare and the loader wants them promptly. */
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct proc_info *p, np;

	p = tracked_proc(parent, ptgid);
	if (!p)
		return 0;
	if (ptgid == ctgid) {
		/* A new thread: track it from its first switch. */
		if (!bpf_task_storage_get(&threads, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
			stat_inc(STAT_TASK_STORAGE_FAIL);
		return 0;
	}
	if (!follow_children)
		return 0;
	/* The child is a copy of the parent's address space: the same walk
	 * configuration holds until it execs. */
	__builtin_memcpy(&np, p, sizeof(np));
	np.start_time = BPF_CORE_READ(child, start_boottime) / tick_ns;
	if (bpf_map_update_elem(&procs, &ctgid, &np, BPF_ANY)) {
		stat_inc(STAT_PROC_TABLE_FULL);
		return 0;
	}
	emit_proc_record(EV_FORK, ctgid, ptgid, 0, child);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = task->tgid;
	struct proc_info *p = tracked_proc(task, tgid);

	if (!p)
		return 0;
	/* New image: the old interpreter layout is gone. */
	p->has_cfg = 0;
	emit_proc_record(EV_EXEC, tgid, 0, 0, task);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;

	/* Only the last thread of the group ends the process. */
	if (task->pid != tgid)
		return 0;
	if (!tracked_proc(task, tgid))
		return 0;
	emit_proc_record(EV_EXIT, tgid, 0, BPF_CORE_READ(task, signal, group_exit_code) ?: task->exit_code, task);
	return 0;
}
