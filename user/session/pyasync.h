/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where an asyncio program's coroutines wait, read from outside.
 *
 * Every poll (the loader's tick) looks at the threads of one Python process:
 * a thread whose innermost Python frames are the event loop's `_run_once`
 * blocked in its selector is an idle event loop, and the time since the
 * last poll is that loop's idle time.  Now and then (at most as often as
 * keeps this reader's own time near 1 % of the time it covers) a snapshot
 * reads the loop's pending tasks from the task set asyncio keeps, walks each
 * task's await chain (coroutine, the coroutine it awaits, ...) to the frame
 * it waits in, and hands the idle time gathered since the last snapshot,
 * split evenly over the tasks, to the profile (profile__add_await).
 *
 * The program is never stopped: a snapshot reads memory that a running
 * thread may change, and a task or coroutine freed or half-written while it
 * is read is counted (tasks_unreadable), never followed blindly.
 */
#ifndef PYASYNC_H
#define PYASYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolize/pyobj.h"

struct py_proc;
struct profile;
struct frame_ref;

/* The private layouts of the C accelerator (_asyncio), measured in the
 * interpreter (asyncprobe.h); and of 3.9/3.10 dict keys. */
struct pyasync_layout {
	bool c_task;	    /* asyncio.Task is _asyncio.Task */
	uint16_t task_size; /* _asyncio.Task's basic size */
	uint16_t fut_loop, fut_state, task_coro, task_name, task_fut_waiter;
	int32_t state_pending;
	uint16_t asend_gen; /* async_generator_asend -> its generator, or PYOFF_NONE */
	uint16_t task_node; /* 3.14+: the C task's node in its thread's list, or PYOFF_NONE */
	/* 3.14+: the heads of the lists of C tasks in a thread state and the
	 * interpreter state, or PYOFF_NONE */
	uint16_t tstate_tasks, interp_tasks;
	struct pyobj_dictkeys keys;
};

/* A code object and instruction offset to a frame (the session's code
 * cache); 0 or -errno. */
typedef int (*pyasync_resolve_fn)(void *ctx, uint64_t code, uint64_t tag, int offset,
				  struct frame_ref *out);

struct pyasync_stats {
	uint64_t polls;		   /* thread scans */
	uint64_t idle_polls;	   /* ... that found an idle event loop */
	uint64_t state_unknown;	   /* ... of a thread whose sleep could not be checked */
	uint64_t snapshots;	   /* task sets read */
	uint64_t tasks_read;	   /* pending tasks of idle loops found in them */
	uint64_t tasks_unreadable; /* tasks (or their chains) that could not be read */
	uint64_t tasks_unstarted;  /* pending tasks whose coroutine has not run yet */
	uint64_t tasks_resumed;	   /* ... that ran on while the snapshot read them */
	uint64_t partial;	   /* snapshots cut short (too many tasks, read budget) */
	uint64_t sampled;	   /* snapshots that read a sample of a large task set */
	uint64_t no_task_set;	   /* snapshots that could not find or read the task set */
	uint64_t reads;		   /* objects read */
	uint64_t syscalls;	   /* ... in batches: process_vm_readv calls for them */
	double idle_ns;		   /* idle loop time seen */
	double credited_ns;	   /* ... handed to tasks */
	double empty_ns;	   /* ... of loops that had no pending task */
	double before_layout_ns;   /* ... before the probe gave the layout: not credited */
	double after_last_ns;	   /* ... after the last snapshot: credited as it found the tasks */
	double cost_ns;		   /* this reader's own time */
	/* The idle time each snapshot handed out to one loop's tasks: how many
	 * times (loop_snapshots), summed and squared: (sum)^2 / (sum of
	 * squares) is how many equally weighted ones the await shares are
	 * worth. */
	uint64_t loop_snapshots;
	double weight_ns, weight_sq_ns2;
	int loops;     /* distinct event loops seen idle */
	int max_tasks; /* the most tasks of one snapshot */
	bool uvloop;   /* uvloop's loop runs here: not recognised (pyasync.c) */
};

struct pyasync;

struct pyasync *pyasync__new(const struct py_proc *pp, struct profile *profile,
			     pyasync_resolve_fn resolve, void *ctx);
void pyasync__free(struct pyasync *a);
void pyasync__set_layout(struct pyasync *a, const struct pyasync_layout *l);

struct async_layout;
struct asyncio_debug;
struct py_offsets;
/* The reader's layout from what the probe measured (probe), the tables
 * (off) and, 3.14+, what _asyncio publishes (published, or NULL): the
 * published offsets stand where they name a field.  Where the probe or the
 * tables had another value, disagree says so ("task_coro 128, probe 120",
 * "" when none). */
void pyasync__layout_from(struct pyasync_layout *pl, const struct async_layout *probe,
			  const struct py_offsets *off, const struct asyncio_debug *published,
			  char *disagree, size_t n);
bool pyasync__has_layout(const struct pyasync *a);
/* When the loops were last looked at (pyasync__poll's now_ns), 0 before. */
uint64_t pyasync__last_poll_ns(const struct pyasync *a);
/* uvloop runs in the process: its waiting is not seen. */
bool pyasync__uvloop(const struct pyasync *a);
/* One poll; now_ns is CLOCK_MONOTONIC.  A loop found idle was idle since
 * the poll before, up to max_gap_ns back (0: 250 ms; a loader that stalled
 * for longer does not know what the loop did; one that spaced its polls on
 * purpose, knowing the process did not run, does).  Returns 1 when an idle
 * event loop was seen (now or before: the process runs asyncio), 0 when
 * none was ever seen, -errno when the process cannot be read. */
int pyasync__poll(struct pyasync *a, uint64_t now_ns, uint64_t max_gap_ns);
/* The idle time seen since the last snapshot goes to the tasks as that
 * snapshot found them (at the end of a run or of a process). */
void pyasync__flush(struct pyasync *a);
const struct pyasync_stats *pyasync__stats(const struct pyasync *a);
/* Members read per snapshot at most: a larger task set is sampled. */
int pyasync__task_sample(void);
/* The last reason a snapshot or a task could not be read, or "". */
const char *pyasync__last_error(const struct pyasync *a);

#endif /* PYASYNC_H */
