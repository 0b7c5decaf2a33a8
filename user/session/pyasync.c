// SPDX-License-Identifier: BSD-2-Clause
/* Where an asyncio program's coroutines wait, read from outside (see
 * pyasync.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "abi.h"
#include "base/clock.h"
#include "base/hmap.h"
#include "base/memread.h"
#include "session/asyncprobe.h"
#include "session/pyasync.h"
#include "symbolize/pycode.h"
#include "pyoffsets.h"
#include "model/profile.h"
#include "target/asyncdebug.h"
#include "target/python.h"

#define MAX_THREADS 256		   /* thread states looked at per poll */
#define IDLE_DEPTH 4		   /* frames from the innermost to _run_once */
#define MAX_LOOPS 16		   /* event loops followed per process */
#define MAX_MEMBERS 200000	   /* task-set members read per snapshot */
#define TASK_SAMPLE 256		   /* members read per snapshot: a larger set is sampled */
#define MAX_TASKS TASK_SAMPLE	   /* pending tasks credited per snapshot */
#define MAX_CHAIN 64		   /* coroutines followed down one await chain */
#define MAX_STACKTOP 100000	   /* a frame's value stack index, sanity bound */
#define MAX_LIST_NODES MAX_MEMBERS /* 3.14+: C tasks read from the lists per snapshot */
#define LIST_LOOKAHEAD 64	   /* nodes of the last walk skipped to find one again */
#define LIST_GAP 4096		   /* bytes between two nodes read in one range, at most */
#define LIST_RANGE (256 << 10)	   /* bytes of one range, at most */
#define LIST_BYTES (64 << 20)	   /* bytes of all ranges of one snapshot, at most */
#define MAX_NAMES 65536		   /* task name objects remembered */
/* A poll stands for the time since the one before, up to this much: a
 * loader that stalled for longer does not know what the loop did. */
#define MAX_POLL_GAP_NS 250000000ULL
/* Snapshots at most every MIN_SNAPSHOT_NS (under the poll period: every
 * poll when they are cheap), and further apart when they cost more: their
 * own time stays near 1 / COST_RATIO of the time between. */
/* Frames of each task of the last snapshot kept for the idle time after it
 * (pyasync__flush): the innermost ones, where the wait is credited. */
#define SAVED_FRAMES 16
#define MIN_SNAPSHOT_NS 5000000ULL
#define COST_RATIO 50
#define OBJ_READ 512	   /* bytes of a task or coroutine read at once, at most */
#define FRAME_READ_MAX 512 /* bytes of a frame */
#define UVLOOP_CHECK_POLLS 100
/* Reads a snapshot may make: a base, and this many per task. */
#define BUDGET_BASE 512
#define BUDGET_PER_TASK 48

/* CO_ITERABLE_COROUTINE: a generator made awaitable (types.coroutine). */
#define CO_ITERABLE_COROUTINE 0x100

struct loop_state {
	uint64_t loop;
	double pending_ns; /* idle time not yet handed to tasks */
	bool idle;	   /* idle at the last poll */
	uint64_t globals;  /* f_globals of its _run_once frame */
	uint64_t tstate;   /* the thread state it was last seen idle in */
};

struct pending_task {
	uint64_t coro;
	const char *name;
	int loop;    /* index in loops[] */
	int nframes; /* of its await chain, in chains[] */
	int why;     /* CHAIN_*: why nframes is 0 */
};

/* A task of the last snapshot, as credited. */
struct saved_task {
	uint64_t coro;
	const char *name;
	int loop;
	int nframes;
	struct frame_ref frames[SAVED_FRAMES];
};

/* What a frame says: its code and instruction, its caller, its globals, its
 * first local, and the top of its value stack (the awaited object, when the
 * frame is suspended in an await). */
struct rframe {
	uint64_t code;
	int offset;
	uint64_t prev;
	uint64_t globals;
	uint64_t local0;
	bool shim;    /* an interpreter entry frame (3.12+) */
	int8_t state; /* f_state (3.10) */
	/* Where it keeps what it awaits, when suspended in an await
	 * (yield_from_slot); 0: its stack is empty. */
	uint64_t await_addr;
};

/* Chains followed at once, level by level: at each level one batched read
 * of the objects awaited, one of their frames (<= 3.10, where a frame is an
 * object of its own) and one of the tops of their value stacks. */
/* Why a task's chain has no frame: its coroutine has not started (it
 * waits at no await yet), or is running or done (it went on after the loop
 * left its selector during the snapshot). */
enum {
	CHAIN_READ,
	CHAIN_UNSTARTED,
	CHAIN_GONE
};

struct chain_walk {
	uint64_t obj; /* the object to read at this level; 0: done */
	int n;	      /* frames found, outermost first */
	int why;      /* CHAIN_*, when the task's own coroutine is not waiting */
	bool has_frame, suspended;
	uint64_t frame;
	struct rframe f;
	const struct pytype *t;
};

/* A task as the snapshot needs it. */
struct rtask {
	uint64_t loop, coro;
	bool pending;
	const char *name;
};

struct pyasync {
	const struct py_proc *pp;
	struct profile *profile;
	pyasync_resolve_fn resolve;
	void *ctx;
	struct pyobj po;
	struct pyasync_layout lay;
	bool have_layout;
	bool ever_idle;
	uint64_t last_poll_ns;
	uint64_t next_snapshot_ns;
	struct loop_state loops[MAX_LOOPS];
	int nloops;
	/* 3.14+: the list nodes the last walk went through, in order (lold),
	 * their next pointers as read at the start of this walk, this walk's
	 * nodes (lnew), and the pieces of the batched read; lcap entries each. */
	uint64_t *lold, *lnext, *lnew;
	struct mem_piece *lpieces;
	size_t nlold, lcap;
	/* The task sets: found once from the tasks module, checked each use. */
	uint64_t sets[3];
	int nsets;
	struct hmap *names; /* name object -> interned name */
	uint64_t *members;
	struct pending_task *tasks;
	struct frame_ref *chains; /* SAVED_FRAMES per task of tasks[] */
	/* Batched reads (read_chains): pieces, each object's bytes, each
	 * frame's (<= 3.10), the walks and their frames outermost first. */
	struct mem_piece *pieces;
	uint8_t *bufs, *fbufs;
	struct chain_walk *walks;
	struct frame_ref *outer;
	struct rtask *rtasks;
	int *rerrs;
	uint64_t batched; /* objects read in batches (the rest: one call each) */
	struct saved_task *saved;
	int nsaved;
	int saved_per_loop[MAX_LOOPS];
	int saved_conc[MAX_LOOPS]; /* tasks suspended, as that snapshot counted */
	uint64_t saved_snapshot;   /* its number */
	/* The coroutines of all its pending tasks, sorted; npending is -1 when
	 * it read a sample or was cut short (it cannot tell who is new). */
	uint64_t *pending;
	int npending;
	struct hmap *codes; /* code address -> tag and flags, for one poll */
	struct pyasync_stats st;
	char last_error[160];
};

static void set_error(struct pyasync *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->last_error, sizeof(a->last_error), fmt, ap);
	va_end(ap);
}

/* What a code object's header says, remembered for one poll: the tasks of
 * one coroutine function share their code objects.  Not longer: a code
 * object freed (a module's body once imported) and another made at its
 * address would keep the first one's tag, and the session's code cache
 * holds a line for that address and tag, in the first one's file. */
struct code_memo {
	uint64_t tag;
	uint32_t flags;
};

static void codes_clear(struct pyasync *a)
{
	size_t it = 0;
	void *v;

	if (!a->codes || !hmap__count(a->codes))
		return;
	while (hmap__next(a->codes, &it, NULL, &v))
		free(v);
	hmap__free(a->codes);
	a->codes = hmap__new(sizeof(uint64_t));
}

struct pyasync *pyasync__new(const struct py_proc *pp, struct profile *profile,
			     pyasync_resolve_fn resolve, void *ctx)
{
	struct pyasync *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->pp = pp;
	a->profile = profile;
	a->resolve = resolve;
	a->ctx = ctx;
	a->names = hmap__new(sizeof(uint64_t));
	a->members = malloc(MAX_MEMBERS * sizeof(*a->members));
	a->tasks = malloc(MAX_TASKS * sizeof(*a->tasks));
	a->chains = malloc((size_t)MAX_TASKS * SAVED_FRAMES * sizeof(*a->chains));
	a->pieces = malloc(MAX_TASKS * sizeof(*a->pieces));
	a->bufs = malloc((size_t)MAX_TASKS * OBJ_READ);
	a->fbufs = malloc((size_t)MAX_TASKS * FRAME_READ_MAX);
	a->walks = malloc(MAX_TASKS * sizeof(*a->walks));
	a->outer = malloc((size_t)MAX_TASKS * MAX_CHAIN * sizeof(*a->outer));
	a->rtasks = malloc(MAX_TASKS * sizeof(*a->rtasks));
	a->rerrs = malloc(MAX_TASKS * sizeof(*a->rerrs));
	a->saved = malloc(MAX_TASKS * sizeof(*a->saved));
	a->pending = malloc(MAX_TASKS * sizeof(*a->pending));
	a->npending = -1;
	a->codes = hmap__new(sizeof(uint64_t));
	if (pyobj__init(&a->po, pp) || !a->names || !a->members || !a->tasks || !a->chains ||
	    !a->saved || !a->pending || !a->codes) {
		pyasync__free(a);
		return NULL;
	}
	return a;
}

void pyasync__free(struct pyasync *a)
{
	if (!a)
		return;
	pyobj__fini(&a->po);
	hmap__free(a->names);
	free(a->members);
	free(a->tasks);
	free(a->chains);
	free(a->pieces);
	free(a->bufs);
	free(a->fbufs);
	free(a->walks);
	free(a->outer);
	free(a->rtasks);
	free(a->rerrs);
	free(a->saved);
	free(a->pending);
	free(a->lold);
	free(a->lnext);
	free(a->lnew);
	free(a->lpieces);
	codes_clear(a);
	hmap__free(a->codes);
	free(a);
}

void pyasync__set_layout(struct pyasync *a, const struct pyasync_layout *l)
{
	a->lay = *l;
	a->po.keys = l->keys;
	a->have_layout = true;
}

/* One published offset over the probe's or the table's: a value the other
 * had (not PYOFF_NONE) and that differs is named in disagree. */
static void take_published(uint16_t *field, uint64_t published, const char *name, const char *other,
			   char *disagree, size_t n)
{
	size_t len = strlen(disagree);
	uint16_t v = published < PYOFF_NONE ? (uint16_t)published : PYOFF_NONE;

	if (*field != PYOFF_NONE && *field != v && len + 1 < n)
		snprintf(disagree + len, n - len, "%s%s %llu, %s %u", len ? "; " : "", name,
			 (unsigned long long)published, other, *field);
	*field = v;
}

void pyasync__layout_from(struct pyasync_layout *pl, const struct async_layout *l,
			  const struct py_offsets *off, const struct asyncio_debug *d,
			  char *disagree, size_t n)
{
	memset(pl, 0, sizeof(*pl));
	disagree[0] = '\0';
	pl->task_size = l->task_size;
	pl->fut_loop = l->fut_loop;
	pl->fut_state = l->fut_state;
	pl->task_coro = l->task_coro;
	pl->task_name = l->task_name;
	pl->task_fut_waiter = l->task_fut_waiter;
	pl->state_pending = l->state_pending;
	pl->asend_gen = l->asend_gen;
	pl->task_node = l->task_node;
	pl->tstate_tasks = off->tstate_asyncio_tasks;
	pl->interp_tasks = off->interp_asyncio_tasks;
	pl->keys = (struct pyobj_dictkeys){ l->dk_known,      l->dk_size,	l->dk_nentries,
					    l->dk_indices,    l->dk_entry_size, l->dk_entry_key,
					    l->dk_entry_value };
	if (d) {
		take_published(&pl->task_size, d->task_size, "Task size", "probe", disagree, n);
		take_published(&pl->task_coro, d->task_coro, "task_coro", "probe", disagree, n);
		take_published(&pl->task_name, d->task_name, "task_name", "probe", disagree, n);
		take_published(&pl->task_node, d->task_node, "task_node", "probe", disagree, n);
		take_published(&pl->tstate_tasks, d->tstate_tasks_head,
			       "thread state asyncio_tasks_head", "table", disagree, n);
		take_published(&pl->interp_tasks, d->interp_tasks_head,
			       "interpreter asyncio_tasks_head", "table", disagree, n);
	}
	pl->c_task = l->c_task && pl->fut_loop != PYOFF_NONE && pl->fut_state != PYOFF_NONE &&
		     pl->task_coro != PYOFF_NONE && pl->task_name != PYOFF_NONE &&
		     pl->task_size != PYOFF_NONE && pl->task_size > 0;
}

bool pyasync__has_layout(const struct pyasync *a)
{
	return a->have_layout;
}

const struct pyasync_stats *pyasync__stats(const struct pyasync *a)
{
	return &a->st;
}

int pyasync__task_sample(void)
{
	return TASK_SAMPLE;
}

const char *pyasync__last_error(const struct pyasync *a)
{
	return a->last_error;
}

/* ---- frames ---- */

/* A frame's code, locals and stack slots, which are tagged references from
 * 3.14 (abi.h). */
static uint64_t untag(const struct pyasync *a, uint64_t ref)
{
	return a->pp->minor >= PY_REF_TAG_MINOR ? ref & ~PY_REF_TAG_BITS : ref;
}

/* The slot of its value stack, counted from the top (1), where a frame
 * suspended in an await keeps the object it awaits: 3.15 keeps a NULL above
 * it (its _PyGen_yf peeks at stackpointer[-2]). */
static int yield_from_slot(int minor)
{
	return minor >= 15 ? 2 : 1;
}

/* The frame at addr (a PyFrameObject up to 3.10, an _PyInterpreterFrame
 * since) from its bytes in buf (frame_size of them). */
static void parse_frame(struct pyasync *a, uint64_t addr, const uint8_t *buf, struct rframe *f)
{
	const struct py_offsets *o = a->pp->off;
	const uint64_t below = 8ULL * yield_from_slot(a->pp->minor);
	uint64_t top_addr = 0, w;
	int32_t i32;

	memset(f, 0, sizeof(*f));
	memcpy(&f->code, buf + o->frame_code, 8);
	memcpy(&f->prev, buf + o->frame_previous, 8);
	memcpy(&f->globals, buf + o->frame_globals, 8);
	memcpy(&f->local0, buf + o->frame_localsplus, 8);
	f->code = untag(a, f->code);
	f->local0 = untag(a, f->local0);
	if (a->pp->minor >= 11) {
		memcpy(&w, buf + o->frame_instr, 8);
		if (o->frame_owner != PYOFF_NONE && buf[o->frame_owner] >= 3)
			f->shim = true;
		f->offset = (int)(int64_t)(w - f->code - o->code_code_adaptive);
		if (o->frame_stackpointer != PYOFF_NONE) {
			/* 3.14+: a pointer past the top slot, inside the frame. */
			memcpy(&w, buf + o->frame_stackpointer, 8);
			if (w >= addr + o->frame_localsplus + below &&
			    w <= addr + o->frame_localsplus + 8ULL * MAX_STACKTOP)
				top_addr = w - below;
		} else {
			memcpy(&i32, buf + o->frame_stacktop, 4);
			if (i32 >= 1 && i32 < MAX_STACKTOP)
				top_addr = addr + o->frame_localsplus + 8ULL * (i32 - 1);
		}
	} else {
		memcpy(&i32, buf + o->frame_instr, 4);
		f->offset = i32 < 0 ? -1 : (a->pp->minor == 10 ? i32 * 2 : i32);
		if (a->pp->minor == 10) {
			f->state = (int8_t)buf[o->frame_state];
			memcpy(&w, buf + o->frame_valuestack, 8);
			memcpy(&i32, buf + o->frame_stacktop, 4);
			if (pyobj__ptr_ok(w) && i32 >= 1 && i32 < MAX_STACKTOP)
				top_addr = w + 8ULL * (i32 - 1);
		} else {
			memcpy(&w, buf + o->frame_stacktop, 8);
			if (pyobj__ptr_ok(w))
				top_addr = w - 8;
		}
	}
	if (!f->code || !pyobj__ptr_ok(f->code))
		f->shim = true;
	f->await_addr = top_addr;
}

static int read_frame(struct pyasync *a, uint64_t addr, struct rframe *f)
{
	const struct py_offsets *o = a->pp->off;
	uint8_t buf[FRAME_READ_MAX];
	int err;

	memset(f, 0, sizeof(*f));
	if (!pyobj__ptr_ok(addr) || o->frame_size > sizeof(buf))
		return -EINVAL;
	err = pyobj__read(&a->po, addr, buf, o->frame_size);
	if (err)
		return err;
	parse_frame(a, addr, buf, f);
	return 0;
}

/* The first len bytes of the object at addr, in one read, and its type.
 * An object at the end of a mapping can make a long read fail: then only
 * its header is read (*len says how much was). */
static int obj_read(struct pyasync *a, uint64_t addr, uint8_t *buf, size_t *len,
		    const struct pytype **t)
{
	const struct py_offsets *o = a->pp->off;
	size_t head = o->object_type + 8;
	uint64_t tp;
	int err;

	if (!pyobj__ptr_ok(addr))
		return -EINVAL;
	err = pyobj__read(&a->po, addr, buf, *len);
	if (err == -EFAULT && *len > head) {
		*len = head;
		err = pyobj__read(&a->po, addr, buf, *len);
	}
	if (err)
		return err;
	memcpy(&tp, buf + o->object_type, 8);
	return pyobj__type_at(&a->po, tp, t);
}

/* The frame's code and line, through the session's code cache. */
static int frame_ref_of(struct pyasync *a, const struct rframe *f, struct frame_ref *out,
			uint32_t *co_flags)
{
	const struct py_offsets *o = a->pp->off;
	struct code_memo *memo = a->codes ? hmap__get(a->codes, &f->code) : NULL;
	uint8_t buf[256];
	size_t len = 0;
	uint64_t fn, nm;
	int32_t first;
	uint32_t flags;
	int err;

	if (memo) {
		if (co_flags)
			*co_flags = memo->flags;
		return a->resolve(a->ctx, f->code, memo->tag, f->offset, out);
	}

#define SPAN(off, sz) (len = (size_t)(off) + (sz) > len ? (size_t)(off) + (sz) : len)
	SPAN(o->code_firstlineno, 4);
	SPAN(o->code_filename, 8);
	SPAN(o->code_name, 8);
	SPAN(o->code_flags, 4);
#undef SPAN
	if (len > sizeof(buf))
		return -ENOTSUP;
	err = pyobj__read(&a->po, f->code, buf, len);
	if (err)
		return err;
	memcpy(&first, buf + o->code_firstlineno, 4);
	memcpy(&fn, buf + o->code_filename, 8);
	memcpy(&nm, buf + o->code_name, 8);
	memcpy(&flags, buf + o->code_flags, 4);
	if (co_flags)
		*co_flags = flags;
	memo = malloc(sizeof(*memo));
	if (memo) {
		memo->tag = pycode_tag((uint32_t)first, code_ident(fn, nm));
		memo->flags = flags;
		if (hmap__put(a->codes, &f->code, memo))
			free(memo);
	}
	return a->resolve(a->ctx, f->code, pycode_tag((uint32_t)first, code_ident(fn, nm)),
			  f->offset, out);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

static bool is_run_once(const struct frame_ref *fr)
{
	return ends_with(fr->filename, "/asyncio/base_events.py") &&
	       (!strcmp(fr->qualname, "_run_once") || ends_with(fr->qualname, "._run_once"));
}

/* The innermost frame of a thread state, or 0. */
static uint64_t top_frame(struct pyasync *a, uint64_t tstate)
{
	const struct py_offsets *o = a->pp->off;
	uint64_t f = 0, cframe;

	if (a->pp->minor <= 10)
		pyobj__u64(&a->po, tstate + o->tstate_frame, &f);
	else if (a->pp->minor <= 12) {
		if (!pyobj__u64(&a->po, tstate + o->tstate_cframe, &cframe) &&
		    pyobj__ptr_ok(cframe))
			pyobj__u64(&a->po, cframe + o->cframe_current_frame, &f);
	} else
		pyobj__u64(&a->po, tstate + o->tstate_current_frame, &f);
	return pyobj__ptr_ok(f) ? f : 0;
}

/* 'S' when the thread sleeps (in the selector's epoll_wait, here), 'R'
 * when it runs or waits for a CPU; 0 when it cannot be told. */
static char thread_state(int pid, int tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* When the thread is an event loop blocked in its selector: its loop and
 * the globals of base_events.  Blocked, not only there: a loop just woken
 * that waits for a CPU, its stack still in the selector, is not idle. */
static bool idle_loop_of(struct pyasync *a, uint64_t tstate, uint64_t *loop, uint64_t *globals)
{
	uint64_t addr;
	struct frame_ref fr;
	struct rframe f;
	int depth, python = 0, tid;
	char st = 0;

	/* For a thread known to run a loop, its state first, then its frames:
	 * a loop that wakes while they are read still shows the selector's
	 * frames, so the look tells what the thread did at its start, however
	 * long the reads take.  Other threads (most threads of most programs)
	 * are judged by their frames alone, and a loop newly found reads its
	 * state after them.  A thread id from inside another PID namespace
	 * names no task here: then the state cannot be told. */
	bool known = false;
	int i;

	for (i = 0; i < a->nloops && !known; i++)
		known = a->loops[i].tstate == tstate;
	if (known && !python__thread_tid(a->pp, tstate, &tid)) {
		st = thread_state(a->pp->pid, tid);
		if (st && st != 'S' && st != 'D')
			return false;
	}
	addr = top_frame(a, tstate);
	for (depth = 0; addr && depth < IDLE_DEPTH + 2; depth++, addr = f.prev) {
		if (read_frame(a, addr, &f))
			return false;
		if (f.shim)
			continue;
		if (frame_ref_of(a, &f, &fr, NULL))
			return false;
		if (is_run_once(&fr)) {
			/* Idle only when it waits in the selector: the frames
			 * inside it are the selector's. */
			if (!python || !pyobj__ptr_ok(f.local0))
				return false;
			if (!known && !python__thread_tid(a->pp, tstate, &tid)) {
				st = thread_state(a->pp->pid, tid);
				if (st && st != 'S' && st != 'D')
					return false;
			}
			if (!st)
				a->st.state_unknown++;
			*loop = f.local0;
			*globals = f.globals;
			return true;
		}
		if (!ends_with(fr.filename, "/selectors.py"))
			return false;
		python++;
	}
	return false;
}

static struct loop_state *loop_get(struct pyasync *a, uint64_t loop)
{
	int i;

	for (i = 0; i < a->nloops; i++) {
		if (a->loops[i].loop == loop)
			return &a->loops[i];
	}
	if (a->nloops == MAX_LOOPS)
		return NULL;
	a->loops[a->nloops] = (struct loop_state){ .loop = loop };
	a->st.loops = a->nloops + 1;
	return &a->loops[a->nloops++];
}

/* ---- tasks ---- */

/* The task sets of asyncio.tasks: _all_tasks (3.9-3.11), _scheduled_tasks
 * and _eager_tasks (3.12+); a WeakSet's members live in its `data` set. */
static int find_task_sets(struct pyasync *a, uint64_t globals)
{
	static const char *const names[] = { "_all_tasks", "_scheduled_tasks", "_eager_tasks" };
	uint64_t mod, obj, data;
	size_t i;
	int err;

	err = pyobj__dict_get(&a->po, globals, "tasks", &mod);
	if (err) {
		set_error(a, "asyncio.base_events has no `tasks` module (%s)", strerror(-err));
		return err;
	}
	a->nsets = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (pyobj__attr(&a->po, mod, names[i], &obj))
			continue;
		if (pyobj__is_a(&a->po, obj, "set"))
			a->sets[a->nsets++] = obj;
		else if (!pyobj__attr(&a->po, obj, "data", &data) &&
			 pyobj__is_a(&a->po, data, "set"))
			a->sets[a->nsets++] = data;
	}
	if (!a->nsets) {
		set_error(a, "asyncio.tasks has no task set this reader knows");
		return -ENOENT;
	}
	return 0;
}

static const char *task_name(struct pyasync *a, uint64_t name_obj)
{
	const char *s = hmap__get(a->names, &name_obj);
	char buf[128];
	int64_t n;

	if (s)
		return s;
	if (!pyobj__str(&a->po, name_obj, buf, sizeof(buf)))
		s = profile__intern(a->profile, buf);
	else if (!pyobj__long(&a->po, name_obj, &n)) {
		/* 3.13 keeps an unnamed task's counter until asked its name. */
		snprintf(buf, sizeof(buf), "Task-%lld", (long long)n);
		s = profile__intern(a->profile, buf);
	}
	if (!s)
		return NULL;
	if (hmap__count(a->names) >= MAX_NAMES) {
		hmap__free(a->names);
		a->names = hmap__new(sizeof(uint64_t));
		if (!a->names)
			return s;
	}
	hmap__put(a->names, &name_obj, (void *)s);
	return s;
}

/* The bytes of a coroutine, generator or async generator object read at
 * once: its header and (3.11+) the frame embedded in it. */
static size_t gen_read_len(struct pyasync *a)
{
	const struct py_offsets *o = a->pp->off;
	size_t len = a->pp->minor >= 11 ? (size_t)o->gen_iframe + o->frame_size
					: (size_t)(o->gen_running != PYOFF_NONE ? o->gen_running + 1
										: o->gen_frame + 8);

	if (a->lay.asend_gen != PYOFF_NONE && (size_t)a->lay.asend_gen + 8 > len)
		len = (size_t)a->lay.asend_gen + 8;
	return len;
}

static bool generator_like(const char *name)
{
	return !strcmp(name, "coroutine") || !strcmp(name, "generator") ||
	       !strcmp(name, "async_generator");
}

/* Batched read of pieces: the budget counts each piece. */
static int read_pieces(struct pyasync *a, struct mem_piece *p, size_t n)
{
	if (a->po.budget < n)
		return -E2BIG;
	a->po.budget -= n;
	a->po.reads += n;
	a->batched += n;
	a->st.syscalls++;
	return mem_read_many(a->pp->pid, p, n);
}

/* One level of every chain still going: what each awaits is read, its
 * frame parsed, and where it waits appended. */
static int chain_level(struct pyasync *a, struct chain_walk *w, int nw)
{
	const struct py_offsets *o = a->pp->off;
	size_t glen = gen_read_len(a), np = 0;
	struct mem_piece *p = a->pieces;
	int i, err;

	if (glen > OBJ_READ || o->frame_size > FRAME_READ_MAX)
		return -ENOTSUP;
	for (i = 0; i < nw; i++) {
		w[i].has_frame = false;
		if (w[i].obj && pyobj__ptr_ok(w[i].obj))
			p[np++] = (struct mem_piece){ w[i].obj, a->bufs + (size_t)i * OBJ_READ,
						      glen };
		else
			w[i].obj = 0;
	}
	if (!np)
		return 0;
	err = read_pieces(a, p, np);
	if (err)
		return err;
	for (i = 0, np = 0; i < nw; i++) {
		const uint8_t *buf = a->bufs + (size_t)i * OBJ_READ;
		uint64_t tp;
		int8_t state;

		if (!w[i].obj)
			continue;
		if (p[np++].err) {
			w[i].obj = 0;
			continue;
		}
		memcpy(&tp, buf + o->object_type, 8);
		if (pyobj__type_at(&a->po, tp, &w[i].t)) {
			w[i].obj = 0;
			continue;
		}
		if (!strcmp(w[i].t->name, "async_generator_asend")) {
			/* Stands for its generator: next level reads that. */
			if (a->lay.asend_gen == PYOFF_NONE)
				w[i].obj = 0;
			else
				memcpy(&w[i].obj, buf + a->lay.asend_gen, 8);
			w[i].t = NULL;
			continue;
		}
		if (!generator_like(w[i].t->name)) {
			w[i].obj = 0;
			continue;
		}
		if (a->pp->minor >= 11) {
			state = (int8_t)buf[o->gen_frame_state];
			w[i].suspended =
				state == o->state_suspended || state == o->state_suspended_yf;
			if (!w[i].suspended && state != o->state_created) {
				if (!w[i].n)
					w[i].why = CHAIN_GONE;
				w[i].obj = 0;
				continue;
			}
			if (!w[i].suspended && !w[i].n) {
				w[i].why = CHAIN_UNSTARTED;
				w[i].obj = 0;
				continue;
			}
			parse_frame(a, w[i].obj + o->gen_iframe, buf + o->gen_iframe, &w[i].f);
			w[i].has_frame = true;
		} else {
			memcpy(&w[i].frame, buf + o->gen_frame, 8);
			w[i].suspended = a->pp->minor == 9 && !buf[o->gen_running];
			if (a->pp->minor == 9 && buf[o->gen_running]) {
				/* Running: the loop left its selector. */
				if (!w[i].n)
					w[i].why = CHAIN_GONE;
				w[i].obj = 0;
				continue;
			}
			if (!pyobj__ptr_ok(w[i].frame)) {
				if (!w[i].frame && !w[i].n)
					w[i].why = CHAIN_GONE;
				w[i].obj = 0;
			}
		}
	}
	if (a->pp->minor <= 10) {
		/* The frames, objects of their own before 3.11. */
		for (i = 0, np = 0; i < nw; i++) {
			if (w[i].obj && w[i].t)
				p[np++] = (struct mem_piece){ w[i].frame,
							      a->fbufs + (size_t)i * FRAME_READ_MAX,
							      o->frame_size };
		}
		if (np && (err = read_pieces(a, p, np)))
			return err;
		for (i = 0, np = 0; i < nw; i++) {
			if (!w[i].obj || !w[i].t)
				continue;
			if (p[np++].err) {
				w[i].obj = 0;
				continue;
			}
			parse_frame(a, w[i].frame, a->fbufs + (size_t)i * FRAME_READ_MAX, &w[i].f);
			if (a->pp->minor == 9 && w[i].f.offset < 0)
				w[i].suspended = false; /* not started */
			if (a->pp->minor == 10) {
				w[i].suspended = w[i].f.state == o->state_suspended;
				if (!w[i].suspended && w[i].f.state != o->state_created) {
					if (!w[i].n)
						w[i].why = CHAIN_GONE;
					w[i].obj = 0;
					continue;
				}
			}
			if (!w[i].n && (a->pp->minor == 9 ? w[i].f.offset < 0
							  : w[i].f.state == o->state_created)) {
				w[i].why = CHAIN_UNSTARTED;
				w[i].obj = 0;
				continue;
			}
			w[i].has_frame = true;
		}
	}
	return 0;
}

/* The await chains of tasks[0 .. ntasks), innermost first, into chains[]
 * (SAVED_FRAMES each); each task's nframes set (0: unreadable). */
static int read_chains(struct pyasync *a, int ntasks)
{
	struct chain_walk *w = a->walks;
	struct frame_ref *outer = a->outer; /* MAX_CHAIN per task, outermost first */
	struct mem_piece *p = a->pieces;
	int i, level, err = 0;
	size_t np;

	for (i = 0; i < ntasks; i++)
		w[i] = (struct chain_walk){ .obj = a->tasks[i].coro };
	for (level = 0; level < MAX_CHAIN; level++) {
		bool any = false;

		err = chain_level(a, w, ntasks);
		if (err)
			break;
		for (i = 0, np = 0; i < ntasks; i++) {
			struct frame_ref *fr = &outer[(size_t)i * MAX_CHAIN + w[i].n];
			uint32_t flags;

			if (!w[i].obj || !w[i].has_frame)
				continue;
			if (w[i].f.shim || w[i].n >= MAX_CHAIN ||
			    frame_ref_of(a, &w[i].f, fr, &flags)) {
				w[i].obj = 0;
				continue;
			}
			/* A plain generator is only part of an await chain
			 * when it was made awaitable; otherwise it is something
			 * iterated. */
			if (!strcmp(w[i].t->name, "generator") && w[i].n &&
			    !(flags & CO_ITERABLE_COROUTINE)) {
				w[i].obj = 0;
				continue;
			}
			w[i].n++;
			w[i].obj = 0;
			if (w[i].suspended && w[i].f.await_addr)
				p[np++] = (struct mem_piece){ w[i].f.await_addr, &w[i].obj, 8 };
		}
		/* What each suspended frame awaits. */
		if (np && (err = read_pieces(a, p, np)))
			break;
		for (i = 0; i < ntasks; i++) {
			w[i].obj = untag(a, w[i].obj);
			if (w[i].obj && !pyobj__ptr_ok(w[i].obj))
				w[i].obj = 0;
			any |= w[i].obj != 0;
		}
		/* A failed top read leaves obj as read: 0 or garbage the
		 * next level's type check turns away. */
		if (!any)
			break;
	}
	for (i = 0; i < ntasks; i++) {
		int n = w[i].n, k;

		for (k = 0; k < n && k < SAVED_FRAMES; k++)
			a->chains[(size_t)i * SAVED_FRAMES + k] =
				outer[(size_t)i * MAX_CHAIN + n - 1 - k];
		a->tasks[i].nframes = n < SAVED_FRAMES ? n : SAVED_FRAMES;
		a->tasks[i].why = n ? CHAIN_READ : w[i].why;
	}
	return err;
}

static bool loop_idle(struct pyasync *a, uint64_t loop)
{
	int i;

	for (i = 0; i < a->nloops; i++) {
		if (a->loops[i].loop == loop)
			return a->loops[i].idle && a->loops[i].pending_ns > 0;
	}
	return false;
}

/* The task set's members, all of them or (past TASK_SAMPLE) an even
 * spread of TASK_SAMPLE of them: set order is hash order, so a spread is a
 * sample of the whole.  Returns how many are in a->members[0..]. */
static size_t sample_members(struct pyasync *a, size_t nmem)
{
	size_t i, k;

	if (nmem <= TASK_SAMPLE)
		return nmem;
	for (i = 0; i < TASK_SAMPLE; i++) {
		k = (size_t)((double)i * nmem / TASK_SAMPLE);
		a->members[i] = a->members[k];
	}
	return TASK_SAMPLE;
}

/* The tasks the sampled set members stand for, into members[] (0: none):
 * WeakSet members are weak references, read in one batch. */
static int member_tasks(struct pyasync *a, size_t n)
{
	const struct py_offsets *o = a->pp->off;
	size_t len = (size_t)o->weakref_object + 8, i;
	struct mem_piece *p = a->pieces;
	int err;

	if (len > OBJ_READ)
		return -ENOTSUP;
	for (i = 0; i < n; i++)
		p[i] = (struct mem_piece){ a->members[i], a->bufs + i * OBJ_READ, len };
	err = read_pieces(a, p, n);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		const uint8_t *buf = a->bufs + i * OBJ_READ;
		const struct pytype *t;
		uint64_t tp, target;

		memcpy(&tp, buf + o->object_type, 8);
		if (p[i].err || pyobj__type_at(&a->po, tp, &t)) {
			a->members[i] = 0;
			continue;
		}
		/* tp_name "weakref" (3.9), "weakref.ReferenceType" (3.10+) */
		if (strcmp(t->name, "weakref") && strcmp(t->name, "weakref.ReferenceType"))
			continue;
		memcpy(&target, buf + o->weakref_object, 8);
		a->members[i] = pyobj__ptr_ok(target) ? target : 0;
	}
	return 0;
}

/* The tasks of members[0 .. n), read in one batch: C tasks at the probe's
 * offsets, pure-Python ones through their attributes.  err per task: 0,
 * -EINVAL (not a task: a removed member's dummy, a dead reference's None),
 * or why it could not be read. */
static int read_tasks(struct pyasync *a, size_t n, struct rtask *out, int *errs)
{
	const struct pyasync_layout *l = &a->lay;
	size_t len = l->c_task && l->task_size ? l->task_size : 32, i, np = 0;
	struct mem_piece *p = a->pieces;
	int err;

	if (len > OBJ_READ)
		return -ENOTSUP;
	for (i = 0; i < n; i++) {
		errs[i] = -EINVAL;
		if (pyobj__ptr_ok(a->members[i]))
			p[np++] = (struct mem_piece){ a->members[i], a->bufs + i * OBJ_READ, len };
	}
	err = read_pieces(a, p, np);
	if (err)
		return err;
	for (i = 0, np = 0; i < n; i++) {
		uint64_t task = a->members[i], tp, name = 0, state;
		uint8_t *buf = a->bufs + i * OBJ_READ;
		const struct pytype *ty;
		struct rtask *t = &out[i];
		int32_t st;

		if (!pyobj__ptr_ok(task))
			continue;
		memset(t, 0, sizeof(*t));
		if (p[np++].err) {
			/* At the end of a mapping: its header alone, then. */
			size_t head = 32;

			if (obj_read(a, task, buf, &head, &ty)) {
				errs[i] = -EFAULT;
				continue;
			}
		} else {
			memcpy(&tp, buf + a->pp->off->object_type, 8);
			if (pyobj__type_at(&a->po, tp, &ty))
				continue;
		}
		if (l->c_task && pyobj__type_is_a(&a->po, ty, "_asyncio.Task")) {
			if (p[np - 1].err) {
				errs[i] = -EFAULT;
				continue;
			}
			memcpy(&t->loop, buf + l->fut_loop, 8);
			memcpy(&t->coro, buf + l->task_coro, 8);
			memcpy(&name, buf + l->task_name, 8);
			memcpy(&st, buf + l->fut_state, 4);
			t->pending = st == l->state_pending;
		} else {
			/* The pure-Python Task (asyncio.tasks._PyTask and its
			 * kind); anything else is no task. */
			if (!strcmp(ty->name, "NoneType") ||
			    pyobj__attr_of(&a->po, task, ty, "_coro", &t->coro) ||
			    pyobj__attr_of(&a->po, task, ty, "_loop", &t->loop))
				continue;
			pyobj__attr_of(&a->po, task, ty, "_name", &name);
			/* A pending Future has no `_state` of its own: the
			 * class's `_state = _PENDING` holds until the result is
			 * set. */
			err = pyobj__attr_of(&a->po, task, ty, "_state", &state);
			if (err == -ENOENT) {
				t->pending = true;
			} else if (err) {
				errs[i] = err;
				continue;
			} else {
				t->pending = pyobj__str_eq(&a->po, state, "PENDING") == 1;
			}
		}
		if (!pyobj__ptr_ok(t->loop))
			continue;
		t->name = name ? task_name(a, name) : NULL;
		errs[i] = 0;
	}
	return 0;
}

/* Room for n nodes in each of the walk's arrays; false without. */
static bool list_room(struct pyasync *a, size_t n)
{
	size_t cap = a->lcap ? a->lcap : 1024;
	uint64_t *p;
	struct mem_piece *mp;

	if (n <= a->lcap)
		return true;
	while (cap < n)
		cap *= 2;
	if (cap > MAX_LIST_NODES)
		cap = MAX_LIST_NODES;
	if (n > cap)
		return false;
	if (!(p = realloc(a->lold, cap * sizeof(*p))))
		return false;
	a->lold = p;
	if (!(p = realloc(a->lnext, cap * sizeof(*p))))
		return false;
	a->lnext = p;
	if (!(p = realloc(a->lnew, cap * sizeof(*p))))
		return false;
	a->lnew = p;
	if (!(mp = realloc(a->lpieces, cap * sizeof(*mp))))
		return false;
	a->lpieces = mp;
	a->lcap = cap;
	return true;
}

/*
 * 3.14+: the C tasks of one list (a thread's, or the interpreter's for
 * threads that ended), appended to members[]: from head's next around to
 * head.  A node the last walk went through, at or a little after where
 * that walk is followed (*j), has its next pointer from the batched read
 * made at the start of this snapshot; any other is read on its own.
 * -E2BIG past MAX_LIST_NODES of them (the rest is left out) or the
 * members' room; -EAGAIN where the list changed under the walk (a task
 * done meanwhile has its node cleared: what was found stands, each still
 * checked for being a pending task).
 */
static int list_tasks(struct pyasync *a, uint64_t head, size_t *nmem, size_t *walked, size_t *j)
{
	uint64_t at, next;
	size_t k;
	int err;

	err = pyobj__u64(&a->po, head, &at);
	if (err)
		return err;
	while (at != head) {
		if (!pyobj__ptr_ok(at) || at < a->lay.task_node)
			return -EAGAIN;
		if (*nmem >= MAX_MEMBERS || !list_room(a, *walked + 1))
			return -E2BIG;
		a->members[(*nmem)++] = at - a->lay.task_node;
		a->lnew[(*walked)++] = at;
		next = 0;
		for (k = *j; k < a->nlold && k < *j + LIST_LOOKAHEAD && a->lold[k] != at; k++)
			;
		if (k < a->nlold && a->lold[k] == at) {
			next = a->lnext[k];
			*j = k + 1;
		}
		if (!next) {
			err = pyobj__u64(&a->po, at, &next);
			if (err == -EFAULT)
				return -EAGAIN;
			if (err)
				return err;
		}
		at = next;
	}
	return 0;
}

struct lnode_ix {
	uint64_t addr;
	uint32_t i; /* in lold[] */
	uint32_t r; /* its range */
};

static int lnode_cmp(const void *x, const void *y)
{
	const struct lnode_ix *a = x, *b = y;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/*
 * The next pointers of the last walk's nodes, lold[0..nlold), into lnext[]
 * (0 where unread).  Tasks made together lie together (the allocator's
 * pools), so the memory they are in is read in ranges: a piece per node
 * costs about a microsecond each (100 000 pending tasks: 120 ms), a few
 * hundred ranges of pages far less.
 */
static int read_old_next(struct pyasync *a)
{
	size_t n = a->nlold, i, nr = 0, total = 0;
	struct lnode_ix *ix = malloc(n * sizeof(*ix));
	uint8_t *buf = NULL;
	uint64_t start = 0, end = 0;
	int err = 0;

	memset(a->lnext, 0, n * sizeof(*a->lnext));
	if (!ix)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		ix[i] = (struct lnode_ix){ a->lold[i], (uint32_t)i, 0 };
	qsort(ix, n, sizeof(*ix), lnode_cmp);
	for (i = 0; i < n; i++) {
		uint64_t at = ix[i].addr;

		if (!nr || at - end > LIST_GAP || at + 8 - start > LIST_RANGE) {
			if (nr)
				total += end - start;
			a->lpieces[nr++] = (struct mem_piece){ at, NULL, 0 };
			start = at;
		}
		end = at + 8;
		a->lpieces[nr - 1].len = end - start;
		ix[i].r = (uint32_t)(nr - 1);
	}
	total += end - start;
	if (total > LIST_BYTES || !(buf = malloc(total))) {
		free(ix);
		return 0; /* each node read on its own */
	}
	for (i = 0, total = 0; i < nr; i++) {
		a->lpieces[i].buf = buf + total;
		total += a->lpieces[i].len;
	}
	err = read_pieces(a, a->lpieces, nr);
	for (i = 0; !err && i < n; i++) {
		const struct mem_piece *p = &a->lpieces[ix[i].r];

		if (!p->err)
			memcpy(&a->lnext[ix[i].i], (uint8_t *)p->buf + (ix[i].addr - p->addr), 8);
	}
	free(buf);
	free(ix);
	return err;
}

/*
 * 3.14+: the C tasks, from the lists of the threads running the loops seen
 * and of the interpreter.  A list cannot be sampled: every node is read.
 * The next pointers of the nodes the last snapshot went through are read
 * first, in one batch of the ranges they lie in (read_old_next); what did
 * not change since is then followed without another read, and only new
 * nodes cost one each.  Those reads come on top of the snapshot's budget.
 */
static int c_task_lists(struct pyasync *a, size_t *nmem, bool *partial)
{
	const struct py_offsets *o = a->pp->off;
	uint64_t heads[MAX_LOOPS + 1], interp = 0, *swap;
	size_t nheads = 0, walked = 0, j = 0, i, k;
	int l, err = 0;

	for (l = 0; l < a->nloops; l++) {
		uint64_t h = a->loops[l].tstate + a->lay.tstate_tasks;

		if (!a->loops[l].tstate)
			continue;
		for (k = 0; k < nheads && heads[k] != h; k++)
			;
		if (k == nheads)
			heads[nheads++] = h;
		if (!interp)
			pyobj__u64(&a->po, a->loops[l].tstate + o->tstate_interp, &interp);
	}
	if (pyobj__ptr_ok(interp))
		heads[nheads++] = interp + a->lay.interp_tasks;
	/* The batch (at most a range per node of the last walk) and the
	 * walk's own reads (at most MAX_LIST_NODES, and each head). */
	a->po.budget += a->nlold + MAX_LIST_NODES + 2 * (MAX_LOOPS + 1);
	if (a->nlold && (err = read_old_next(a))) {
		a->nlold = 0;
		return err;
	}
	for (i = 0; i < nheads; i++) {
		err = list_tasks(a, heads[i], nmem, &walked, &j);
		if (err == -E2BIG || err == -EAGAIN)
			*partial = true;
		if (err == -EAGAIN)
			err = 0;
		if (err == -E2BIG) {
			err = 0;
			break;
		}
		if (err)
			break;
	}
	/* This walk's nodes are the next one's to look up. */
	swap = a->lold;
	a->lold = a->lnew;
	a->lnew = swap;
	a->nlold = err ? 0 : walked;
	return err;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;

	return p < q ? -1 : p > q;
}

static bool has_u64(const uint64_t *v, int n, uint64_t x)
{
	return n > 0 && bsearch(&x, v, n, sizeof(*v), cmp_u64);
}

/* The idle time gathered since the last snapshot, to the tasks pending at
 * this one, each where this snapshot finds it waiting.  (Giving half of it
 * to the tasks as the last snapshot found them read a line of short waits
 * about 1.3 points high, async_ratio.py on 3.11 and 3.12 against the
 * program's clocks; all to this one, within 0.3.)
 *
 * While the loop is idle every pending task waits, so a task pending at
 * both snapshots waited all that time, and one that is new since, or done
 * since, about half of it: when both snapshots read the whole task set,
 * the new ones weigh half a staying one, and the done ones take their
 * half where the last snapshot found them.  Without that, the last
 * snapshot of a gather whose 100 tasks end within 30 ms gave the time of
 * their ending to the few tasks still pending (the gather's own task took
 * 2.7 % of the await time instead of 1 %).  A snapshot of a sample of the
 * set, or one cut short, cannot tell who is new: its tasks weigh alike. */
static void credit_snapshot(struct pyasync *a, int ntasks, const int *per_loop, double scale,
			    bool whole)
{
	const struct pending_task *tasks = a->tasks;
	double w[MAX_TASKS], sum[MAX_LOOPS] = { 0 };
	uint64_t cur[MAX_TASKS];
	bool gone[MAX_TASKS];
	bool known = whole && a->npending >= 0;
	int i, l;

	for (i = 0; i < ntasks; i++)
		cur[i] = tasks[i].coro;
	qsort(cur, ntasks, sizeof(*cur), cmp_u64);
	for (i = 0; i < ntasks; i++) {
		w[i] = !known || has_u64(a->pending, a->npending, tasks[i].coro) ? 1.0 : 0.5;
		if (tasks[i].nframes)
			sum[tasks[i].loop] += w[i];
	}
	for (i = 0; i < a->nsaved; i++) {
		const struct saved_task *sv = &a->saved[i];

		gone[i] = known && a->loops[sv->loop].idle && !has_u64(cur, ntasks, sv->coro);
		if (gone[i])
			sum[sv->loop] += 0.5;
	}
	/* The done ones first, under the last snapshot's number: a line it
	 * credited counts that snapshot's concurrency once. */
	for (i = 0; i < a->nsaved; i++) {
		const struct saved_task *sv = &a->saved[i];
		struct await_in in = {
			.snapshot = a->saved_snapshot,
			.task_name = sv->name,
			.frames = sv->frames,
			.nframes = sv->nframes,
			.ns = a->loops[sv->loop].pending_ns * 0.5 /
			      (sum[sv->loop] ? sum[sv->loop] : 1),
			.concurrency = a->saved_conc[sv->loop],
		};

		if (!gone[i])
			continue;
		profile__add_await(a->profile, &in);
		a->st.credited_ns += in.ns;
	}
	a->nsaved = 0;
	a->saved_snapshot = a->st.snapshots;
	memset(a->saved_per_loop, 0, sizeof(a->saved_per_loop));
	for (l = 0; l < a->nloops; l++)
		a->saved_conc[l] = (int)(per_loop[l] * scale + 0.5);
	for (i = 0; i < ntasks; i++) {
		const struct pending_task *pt = &tasks[i];
		struct await_in in = {
			.snapshot = a->st.snapshots,
			.task_name = pt->name,
			.frames = a->chains + (size_t)i * SAVED_FRAMES,
			.nframes = pt->nframes,
			.ns = a->loops[pt->loop].pending_ns * w[i] /
			      (sum[pt->loop] ? sum[pt->loop] : 1),
			/* Tasks suspended: those found, scaled up when only a
			 * sample of the set was read. */
			.concurrency = (int)(per_loop[pt->loop] * scale + 0.5),
		};
		struct saved_task *sv;

		if (!pt->nframes)
			continue;
		profile__add_await(a->profile, &in);
		sv = &a->saved[a->nsaved++];
		sv->coro = pt->coro;
		sv->name = in.task_name;
		sv->loop = pt->loop;
		sv->nframes = pt->nframes;
		memcpy(sv->frames, in.frames, sv->nframes * sizeof(*sv->frames));
		a->saved_per_loop[sv->loop]++;
		a->st.tasks_read++;
		a->st.credited_ns += in.ns;
	}
	a->npending = whole ? ntasks : -1;
	memcpy(a->pending, cur, ntasks * sizeof(*cur));
	for (l = 0; l < a->nloops; l++) {
		int est = (int)(per_loop[l] * scale + 0.5);

		if (est > a->st.max_tasks)
			a->st.max_tasks = est;
		if (!a->loops[l].idle)
			continue;
		if (!sum[l]) {
			a->st.empty_ns += a->loops[l].pending_ns;
		} else {
			a->st.loop_snapshots++;
			a->st.weight_ns += a->loops[l].pending_ns;
			a->st.weight_sq_ns2 += a->loops[l].pending_ns * a->loops[l].pending_ns;
		}
		a->loops[l].pending_ns = 0;
	}
}

static void snapshot(struct pyasync *a)
{
	struct pending_task *tasks = a->tasks;
	int per_loop[MAX_LOOPS] = { 0 };
	double scale = 1;
	size_t nmem = 0, nsamp, m, i;
	int ntasks = 0, l, err = 0, s;
	bool partial = false;

	a->po.budget = BUDGET_BASE;
	if (!a->nsets) {
		for (l = 0; l < a->nloops && !a->nsets; l++) {
			if (a->loops[l].idle)
				find_task_sets(a, a->loops[l].globals);
		}
		if (!a->nsets) {
			a->st.no_task_set++;
			return;
		}
	}
	for (s = 0; s < a->nsets; s++) {
		size_t got = 0;

		if (!pyobj__is_a(&a->po, a->sets[s], "set")) {
			/* Gone or moved: found again at the next snapshot. */
			a->nsets = 0;
			a->st.no_task_set++;
			set_error(a, "the task set moved");
			return;
		}
		err = pyobj__set_members(&a->po, a->sets[s], a->members + nmem, MAX_MEMBERS - nmem,
					 &got);
		nmem += got;
		if (err == -E2BIG)
			partial = true;
		else if (err) {
			a->st.no_task_set++;
			set_error(a, "reading the task set: %s", strerror(-err));
			return;
		}
	}
	if (a->lay.c_task && a->lay.task_node != PYOFF_NONE && a->lay.tstate_tasks != PYOFF_NONE &&
	    a->lay.interp_tasks != PYOFF_NONE) {
		err = c_task_lists(a, &nmem, &partial);
		if (err) {
			/* The process gone, or no memory (a list changing
			 * under the walk is a partial snapshot, not this). */
			a->st.no_task_set++;
			set_error(a, "reading the task lists: %s", strerror(-err));
			a->po.budget = UINT64_MAX;
			return;
		}
	}
	nsamp = sample_members(a, nmem);
	if (nsamp < nmem) {
		scale = (double)nmem / nsamp;
		a->st.sampled++;
	}
	a->po.budget = BUDGET_BASE + BUDGET_PER_TASK * (uint64_t)nsamp;
	err = member_tasks(a, nsamp);
	if (!err)
		err = read_tasks(a, nsamp, a->rtasks, a->rerrs);
	if (err) {
		a->st.no_task_set++;
		set_error(a, "reading the tasks: %s", strerror(-err));
		a->po.budget = UINT64_MAX;
		return;
	}
	for (m = 0; m < nsamp && ntasks < MAX_TASKS; m++) {
		const struct rtask t = a->rtasks[m];

		if (a->rerrs[m] == -E2BIG) {
			partial = true;
			break;
		}
		if (a->rerrs[m]) {
			/* Only objects that are tasks count as unreadable. */
			if (a->rerrs[m] != -EINVAL)
				a->st.tasks_unreadable++;
			continue;
		}
		if (!t.pending || !loop_idle(a, t.loop))
			continue;
		for (l = 0; l < a->nloops && a->loops[l].loop != t.loop; l++)
			;
		tasks[ntasks] = (struct pending_task){ t.coro, t.name, l, 0, CHAIN_READ };
		per_loop[l]++;
		ntasks++;
	}
	if (m < nsamp)
		partial = true;
	/* The chains, before any credit: the idle time is split over the
	 * tasks whose wait could be read. */
	if (read_chains(a, ntasks) == -E2BIG)
		partial = true;
	for (i = 0; i < (size_t)ntasks; i++) {
		if (tasks[i].nframes)
			continue;
		if (tasks[i].why == CHAIN_UNSTARTED)
			a->st.tasks_unstarted++;
		else if (tasks[i].why == CHAIN_GONE)
			a->st.tasks_resumed++;
		else
			a->st.tasks_unreadable++;
	}
	a->st.snapshots++;
	if (partial)
		a->st.partial++;
	credit_snapshot(a, ntasks, per_loop, scale, !partial && nsamp == nmem);
	a->po.budget = UINT64_MAX;
}

/* ns of loop l's idle time to the tasks of the last snapshot, evenly;
 * false when that snapshot found none of l's. */
static bool credit_saved(struct pyasync *a, int l, double ns)
{
	int i;

	if (!a->saved_per_loop[l])
		return false;
	for (i = 0; i < a->nsaved; i++) {
		const struct saved_task *sv = &a->saved[i];
		struct await_in in = {
			.snapshot = a->saved_snapshot,
			.task_name = sv->name,
			.frames = sv->frames,
			.nframes = sv->nframes,
			.ns = ns / a->saved_per_loop[l],
			.concurrency = a->saved_conc[l],
		};

		if (sv->loop != l)
			continue;
		profile__add_await(a->profile, &in);
		a->st.credited_ns += in.ns;
	}
	return true;
}

void pyasync__flush(struct pyasync *a)
{
	int l;

	for (l = 0; l < a->nloops; l++) {
		struct loop_state *ls = &a->loops[l];

		if (ls->pending_ns <= 0)
			continue;
		if (credit_saved(a, l, ls->pending_ns))
			a->st.after_last_ns += ls->pending_ns;
		else
			a->st.empty_ns += ls->pending_ns;
		ls->pending_ns = 0;
	}
}

/* Whether the process has uvloop loaded: its event loop is compiled code,
 * with no Python frame that says it is idle, so this reader cannot see it
 * wait (and says so rather than report nothing). */
static bool uses_uvloop(int pid)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/uvloop/loop.") != NULL;
	fclose(f);
	return found;
}

uint64_t pyasync__last_poll_ns(const struct pyasync *a)
{
	return a->last_poll_ns;
}

bool pyasync__uvloop(const struct pyasync *a)
{
	return a->st.uvloop;
}

int pyasync__poll(struct pyasync *a, uint64_t now_ns, uint64_t max_gap_ns)
{
	const struct py_offsets *o = a->pp->off;
	double t0 = mono_ns(), gap;
	uint64_t interp = 0, ts = 0, loop, globals;
	uint64_t reads0 = a->po.reads, batched0 = a->batched;
	bool any = false;
	int i, n;

	gap = a->last_poll_ns ? (double)(now_ns - a->last_poll_ns) : 0;
	if (!max_gap_ns)
		max_gap_ns = MAX_POLL_GAP_NS;
	if (gap > max_gap_ns)
		gap = max_gap_ns;
	a->last_poll_ns = now_ns;
	a->st.polls++;
	for (i = 0; i < a->nloops; i++)
		a->loops[i].idle = false;
	if (pyobj__u64(&a->po, a->pp->runtime + o->runtime_interpreters_head, &interp) ||
	    !pyobj__ptr_ok(interp) || pyobj__u64(&a->po, interp + o->interp_threads_head, &ts)) {
		a->st.cost_ns += mono_ns() - t0;
		return -ESRCH;
	}
	for (n = 0; pyobj__ptr_ok(ts) && n < MAX_THREADS; n++) {
		if (idle_loop_of(a, ts, &loop, &globals)) {
			struct loop_state *ls = loop_get(a, loop);

			if (ls) {
				ls->idle = true;
				ls->globals = globals;
				ls->tstate = ts;
				/* Before the layout is known no snapshot can
				 * say which tasks waited: that time is kept
				 * apart, not given to the first snapshot. */
				if (a->have_layout)
					ls->pending_ns += gap;
				else
					a->st.before_layout_ns += gap;
				a->st.idle_ns += gap;
				any = true;
			}
		}
		if (pyobj__u64(&a->po, ts + o->tstate_next, &ts))
			break;
	}
	/* No idle loop after a second of polls: is it uvloop? (once) */
	if (!a->ever_idle && a->st.polls == UVLOOP_CHECK_POLLS)
		a->st.uvloop = uses_uvloop(a->pp->pid);
	if (any) {
		a->st.idle_polls++;
		a->ever_idle = true;
		if (a->have_layout && now_ns >= a->next_snapshot_ns) {
			double s0 = mono_ns(), cost;

			snapshot(a);
			cost = mono_ns() - s0;
			a->next_snapshot_ns = now_ns + (cost * COST_RATIO > MIN_SNAPSHOT_NS
								? (uint64_t)(cost * COST_RATIO)
								: MIN_SNAPSHOT_NS);
		}
	}
	codes_clear(a);
	a->st.reads += a->po.reads - reads0;
	a->st.syscalls += (a->po.reads - reads0) - (a->batched - batched0);
	a->st.cost_ns += mono_ns() - t0;
	return a->ever_idle ? 1 : 0;
}
