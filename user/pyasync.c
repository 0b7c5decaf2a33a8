// SPDX-License-Identifier: BSD-2-Clause
/* Where an asyncio program's coroutines wait, read from outside (see
 * pyasync.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>

#include "abi.h"
#include "hmap.h"
#include "pyasync.h"
#include "pycode.h"
#include "pyoffsets.h"
#include "profile.h"
#include "python.h"

#define MAX_THREADS 256	    /* thread states looked at per poll */
#define IDLE_DEPTH 4	    /* frames from the innermost to _run_once */
#define MAX_LOOPS 16	    /* event loops followed per process */
#define MAX_MEMBERS 200000  /* task-set members read per snapshot */
#define MAX_TASKS 20000	    /* pending tasks credited per snapshot */
#define MAX_CHAIN 64	    /* coroutines followed down one await chain */
#define MAX_STACKTOP 100000 /* a frame's value stack index, sanity bound */
#define MAX_NAMES 65536	    /* task name objects remembered */
/* A poll stands for the time since the one before, up to this much: a
 * loader that stalled for longer does not know what the loop did. */
#define MAX_POLL_GAP_NS 50000000ULL
/* Snapshots at most every MIN_SNAPSHOT_NS, and further apart when they
 * cost more: their own time stays near 1 / COST_RATIO of the time between. */
/* Frames of each task of the last snapshot kept for the idle time after it
 * (pyasync__flush): the innermost ones, where the wait is credited. */
#define SAVED_FRAMES 8
#define MIN_SNAPSHOT_NS 10000000ULL
#define COST_RATIO 50
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
};

struct pending_task {
	uint64_t coro;
	const char *name;
	int loop; /* index in loops[] */
};

/* A task of the last snapshot, as credited. */
struct saved_task {
	const char *name;
	int loop;
	int nframes;
	struct frame_ref frames[SAVED_FRAMES];
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
	/* The task sets: found once from the tasks module, checked each use. */
	uint64_t sets[3];
	int nsets;
	struct hmap *names; /* name object -> interned name */
	uint64_t *members;
	struct pending_task *tasks;
	struct saved_task *saved;
	int nsaved;
	int saved_per_loop[MAX_LOOPS];
	struct hmap *codes; /* code address -> tag and flags, for one poll or snapshot */
	struct pyasync_stats st;
	char last_error[160];
};

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void set_error(struct pyasync *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->last_error, sizeof(a->last_error), fmt, ap);
	va_end(ap);
}

/* What a code object's header says, remembered for one poll or snapshot:
 * the tasks of one coroutine function share their code objects. */
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
	a->saved = malloc(MAX_TASKS * sizeof(*a->saved));
	a->codes = hmap__new(sizeof(uint64_t));
	if (pyobj__init(&a->po, pp) || !a->names || !a->members || !a->tasks || !a->saved ||
	    !a->codes) {
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
	free(a->saved);
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

bool pyasync__has_layout(const struct pyasync *a)
{
	return a->have_layout;
}

const struct pyasync_stats *pyasync__stats(const struct pyasync *a)
{
	return &a->st;
}

const char *pyasync__last_error(const struct pyasync *a)
{
	return a->last_error;
}

/* ---- frames ---- */

/* What a frame says: its code and instruction, its caller, its globals, its
 * first local, and the top of its value stack (the awaited object, when the
 * frame is suspended in an await). */
struct rframe {
	uint64_t code;
	int offset;
	uint64_t prev;
	uint64_t globals;
	uint64_t local0;
	uint64_t stack_top; /* 0 when not read or empty */
	bool shim;	    /* an interpreter entry frame (3.12+) */
};

#define FRAME_READ_MAX 512

/* Reads the frame at addr (a PyFrameObject up to 3.10, an
 * _PyInterpreterFrame since); with_top: also the top of its value stack. */
static int read_frame(struct pyasync *a, uint64_t addr, bool with_top, struct rframe *f)
{
	const struct py_offsets *o = a->pp->off;
	uint8_t buf[FRAME_READ_MAX];
	size_t len = o->frame_size < sizeof(buf) ? o->frame_size : sizeof(buf);
	uint64_t top_addr = 0, w;
	int32_t i32;
	int err;

	memset(f, 0, sizeof(*f));
	if (!pyobj__ptr_ok(addr))
		return -EINVAL;
	err = pyobj__read(&a->po, addr, buf, len);
	if (err)
		return err;
	memcpy(&f->code, buf + o->frame_code, 8);
	memcpy(&f->prev, buf + o->frame_previous, 8);
	memcpy(&f->globals, buf + o->frame_globals, 8);
	memcpy(&f->local0, buf + o->frame_localsplus, 8);
	if (a->pp->minor >= 11) {
		memcpy(&w, buf + o->frame_instr, 8);
		if (o->frame_owner != PYOFF_NONE && buf[o->frame_owner] >= 3)
			f->shim = true;
		f->offset = (int)(int64_t)(w - f->code - o->code_code_adaptive);
		memcpy(&i32, buf + o->frame_stacktop, 4);
		if (i32 >= 1 && i32 < MAX_STACKTOP)
			top_addr = addr + o->frame_localsplus + 8ULL * (i32 - 1);
	} else {
		memcpy(&i32, buf + o->frame_instr, 4);
		f->offset = i32 < 0 ? -1 : (a->pp->minor == 10 ? i32 * 2 : i32);
		if (a->pp->minor == 10) {
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
	if (with_top && top_addr && pyobj__u64(&a->po, top_addr, &w) == 0 && pyobj__ptr_ok(w))
		f->stack_top = w;
	return 0;
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

/* When the thread is an event loop blocked in its selector: its loop and
 * the globals of base_events. */
static bool idle_loop_of(struct pyasync *a, uint64_t tstate, uint64_t *loop, uint64_t *globals)
{
	uint64_t addr = top_frame(a, tstate);
	struct frame_ref fr;
	struct rframe f;
	int depth, python = 0;

	for (depth = 0; addr && depth < IDLE_DEPTH + 2; depth++, addr = f.prev) {
		if (read_frame(a, addr, false, &f))
			return false;
		if (f.shim)
			continue;
		if (frame_ref_of(a, &f, &fr, NULL))
			return false;
		if (is_run_once(&fr)) {
			/* Idle only when it waits in the selector: the frames
			 * inside it are the selector's. */
			if (!python)
				return false;
			*loop = f.local0;
			*globals = f.globals;
			return pyobj__ptr_ok(f.local0);
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

/* A task as the snapshot needs it. */
struct rtask {
	uint64_t loop, coro;
	bool pending;
	const char *name;
};

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

static int read_task(struct pyasync *a, uint64_t task, struct rtask *t)
{
	const struct pyasync_layout *l = &a->lay;
	const struct pytype *ty;
	uint64_t name = 0, state;
	uint8_t buf[1024];
	int32_t st;
	int err;

	memset(t, 0, sizeof(*t));
	if (l->c_task && pyobj__is_a(&a->po, task, "_asyncio.Task")) {
		size_t need = 0;

		err = pyobj__type(&a->po, task, &ty);
		if (err)
			return err;
		need = ty->basicsize > 0 && (size_t)ty->basicsize < sizeof(buf)
			       ? (size_t)ty->basicsize
			       : sizeof(buf);
		if (need < (size_t)l->fut_state + 4)
			return -EINVAL;
		err = pyobj__read(&a->po, task, buf, need);
		if (err)
			return err;
		memcpy(&t->loop, buf + l->fut_loop, 8);
		memcpy(&t->coro, buf + l->task_coro, 8);
		memcpy(&name, buf + l->task_name, 8);
		memcpy(&st, buf + l->fut_state, 4);
		t->pending = st == l->state_pending;
	} else {
		/* The pure-Python Task (asyncio.tasks._PyTask and its kind). */
		if (pyobj__attr(&a->po, task, "_coro", &t->coro) ||
		    pyobj__attr(&a->po, task, "_loop", &t->loop))
			return -EINVAL;
		pyobj__attr(&a->po, task, "_name", &name);
		/* A pending Future has no `_state` of its own: the class's
		 * `_state = _PENDING` holds until the result is set. */
		err = pyobj__attr(&a->po, task, "_state", &state);
		if (err == -ENOENT)
			t->pending = true;
		else if (err)
			return err;
		else
			t->pending = pyobj__str_eq(&a->po, state, "PENDING") == 1;
	}
	if (!pyobj__ptr_ok(t->loop))
		return -EINVAL;
	t->name = name ? task_name(a, name) : NULL;
	return 0;
}

/* The frame of a coroutine, generator or async generator object, or 0 when
 * it has finished; *created when it has not started. */
static int gen_frame(struct pyasync *a, uint64_t gen, uint64_t *frame, bool *suspended)
{
	const struct py_offsets *o = a->pp->off;
	int8_t state;
	uint8_t running;
	int err;

	*frame = 0;
	*suspended = false;
	if (a->pp->minor >= 11) {
		err = pyobj__read(&a->po, gen + o->gen_frame_state, &state, 1);
		if (err)
			return err;
		if (state == o->state_created) {
			*frame = gen + o->gen_iframe;
		} else if (state == o->state_suspended || state == o->state_suspended_yf) {
			*frame = gen + o->gen_iframe;
			*suspended = true;
		}
		return 0;
	}
	err = pyobj__u64(&a->po, gen + o->gen_frame, frame);
	if (err || !*frame)
		return err;
	if (!pyobj__ptr_ok(*frame))
		return -EINVAL;
	if (a->pp->minor == 10) {
		err = pyobj__read(&a->po, *frame + o->frame_state, &state, 1);
		if (err)
			return err;
		if (state == o->state_suspended)
			*suspended = true;
		else if (state != o->state_created)
			*frame = 0;
	} else {
		err = pyobj__read(&a->po, gen + o->gen_running, &running, 1);
		if (err)
			return err;
		*suspended = !running;
	}
	return 0;
}

/* Whether a task's coroutine has started: one that has not (a task made
 * but not yet run) waits at no await and is not counted as waiting. */
static bool coro_started(struct pyasync *a, uint64_t coro)
{
	const struct py_offsets *o = a->pp->off;
	uint64_t frame;
	bool suspended;
	int32_t lasti;

	if (gen_frame(a, coro, &frame, &suspended) || !frame)
		return true; /* not ours to judge here: the chain says */
	if (a->pp->minor >= 10)
		return suspended;
	/* 3.9: a frame that never ran has f_lasti -1. */
	if (pyobj__read(&a->po, frame + o->frame_instr, &lasti, 4))
		return true;
	return lasti >= 0;
}

/* A task's await chain, innermost first, into out (at most max). */
static int await_chain(struct pyasync *a, uint64_t coro, struct frame_ref *out, int max)
{
	struct frame_ref chain[MAX_CHAIN];
	uint64_t obj = coro, frame;
	struct rframe f;
	uint32_t flags;
	bool suspended;
	int n = 0, i, err;

	while (obj && n < MAX_CHAIN) {
		const struct pytype *t;

		err = pyobj__type(&a->po, obj, &t);
		if (err)
			return n ? n : err;
		if (!strcmp(t->name, "async_generator_asend")) {
			if (a->lay.asend_gen == PYOFF_NONE ||
			    pyobj__u64(&a->po, obj + a->lay.asend_gen, &obj))
				break;
			continue;
		}
		if (strcmp(t->name, "coroutine") && strcmp(t->name, "generator") &&
		    strcmp(t->name, "async_generator"))
			break;
		err = gen_frame(a, obj, &frame, &suspended);
		if (err)
			return n ? n : err;
		/* The task's own coroutine running or done: the loop left its
		 * selector while the snapshot read, and the task went on. */
		if (!frame && !n)
			return -EAGAIN;
		if (!frame)
			break;
		err = read_frame(a, frame, suspended, &f);
		if (err)
			return n ? n : err;
		if (f.shim || frame_ref_of(a, &f, &chain[n], &flags))
			return n ? n : -EINVAL;
		/* A plain generator is only part of an await chain when it
		 * was made awaitable; otherwise it is something iterated. */
		if (!strcmp(t->name, "generator") && n && !(flags & CO_ITERABLE_COROUTINE))
			break;
		n++;
		obj = suspended ? f.stack_top : 0;
	}
	for (i = 0; i < n && i < max; i++)
		out[i] = chain[n - 1 - i];
	return n < max ? n : max;
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

static void snapshot(struct pyasync *a)
{
	struct pending_task *tasks = a->tasks;
	struct frame_ref frames[MAX_CHAIN];
	int per_loop[MAX_LOOPS] = { 0 };
	size_t nmem = 0, m, i;
	int ntasks = 0, l, n, err = 0, s;
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
	a->po.budget = BUDGET_BASE + BUDGET_PER_TASK * (uint64_t)nmem;
	for (m = 0; m < nmem && ntasks < MAX_TASKS; m++) {
		uint64_t task = a->members[m];
		struct rtask t;

		/* WeakSet members are weak references. */
		if (pyobj__is_a(&a->po, task, "weakref.ReferenceType") ||
		    pyobj__is_a(&a->po, task, "weakref")) {
			if (pyobj__weakref_target(&a->po, task, &task))
				continue;
		}
		err = read_task(a, task, &t);
		if (err == -E2BIG) {
			partial = true;
			break;
		}
		if (err) {
			/* The dummy of a removed set member is no task: only
			 * objects that are tasks count as unreadable. */
			if (err != -EINVAL)
				a->st.tasks_unreadable++;
			continue;
		}
		if (!t.pending || !loop_idle(a, t.loop))
			continue;
		if (!coro_started(a, t.coro)) {
			a->st.tasks_unstarted++;
			continue;
		}
		for (l = 0; l < a->nloops && a->loops[l].loop != t.loop; l++)
			;
		tasks[ntasks++] = (struct pending_task){ t.coro, t.name, l };
		per_loop[l]++;
	}
	if (m < nmem)
		partial = true;
	a->st.snapshots++;
	a->nsaved = 0;
	memset(a->saved_per_loop, 0, sizeof(a->saved_per_loop));
	if (partial)
		a->st.partial++;
	for (i = 0; i < (size_t)ntasks; i++) {
		struct loop_state *ls = &a->loops[tasks[i].loop];
		struct await_in in = {
			.snapshot = a->st.snapshots,
			.task_name = tasks[i].name,
			.ns = ls->pending_ns / per_loop[tasks[i].loop],
			.concurrency = per_loop[tasks[i].loop],
		};

		n = await_chain(a, tasks[i].coro, frames, MAX_CHAIN);
		if (n == -EAGAIN) {
			a->st.tasks_resumed++;
			continue;
		}
		if (n <= 0) {
			a->st.tasks_unreadable++;
			continue;
		}
		in.frames = frames;
		in.nframes = n;
		profile__add_await(a->profile, &in);
		{
			struct saved_task *sv = &a->saved[a->nsaved++];

			sv->name = in.task_name;
			sv->loop = tasks[i].loop;
			sv->nframes = n < SAVED_FRAMES ? n : SAVED_FRAMES;
			memcpy(sv->frames, frames, sv->nframes * sizeof(*frames));
			a->saved_per_loop[sv->loop]++;
		}
		a->st.tasks_read++;
		a->st.credited_ns += in.ns;
	}
	if (ntasks > a->st.max_tasks)
		a->st.max_tasks = ntasks;
	for (l = 0; l < a->nloops; l++) {
		if (!a->loops[l].idle)
			continue;
		if (!per_loop[l])
			a->st.empty_ns += a->loops[l].pending_ns;
		a->loops[l].pending_ns = 0;
	}
	a->po.budget = UINT64_MAX;
}

void pyasync__flush(struct pyasync *a)
{
	int i, l;

	for (l = 0; l < a->nloops; l++) {
		struct loop_state *ls = &a->loops[l];

		if (ls->pending_ns <= 0)
			continue;
		if (!a->saved_per_loop[l]) {
			a->st.empty_ns += ls->pending_ns;
			ls->pending_ns = 0;
			continue;
		}
		for (i = 0; i < a->nsaved; i++) {
			const struct saved_task *sv = &a->saved[i];
			struct await_in in = {
				.snapshot = a->st.snapshots,
				.task_name = sv->name,
				.frames = sv->frames,
				.nframes = sv->nframes,
				.ns = ls->pending_ns / a->saved_per_loop[l],
				.concurrency = a->saved_per_loop[l],
			};

			if (sv->loop != l)
				continue;
			profile__add_await(a->profile, &in);
			a->st.credited_ns += in.ns;
		}
		a->st.after_last_ns += ls->pending_ns;
		ls->pending_ns = 0;
	}
}

int pyasync__poll(struct pyasync *a, uint64_t now_ns)
{
	const struct py_offsets *o = a->pp->off;
	double t0 = mono_ns(), gap;
	uint64_t interp = 0, ts = 0, loop, globals;
	uint64_t reads0 = a->po.reads;
	bool any = false;
	int i, n;

	gap = a->last_poll_ns ? (double)(now_ns - a->last_poll_ns) : 0;
	if (gap > MAX_POLL_GAP_NS)
		gap = MAX_POLL_GAP_NS;
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
				ls->pending_ns += gap;
				a->st.idle_ns += gap;
				any = true;
			}
		}
		if (pyobj__u64(&a->po, ts + o->tstate_next, &ts))
			break;
	}
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
	a->st.cost_ns += mono_ns() - t0;
	return a->ever_idle ? 1 : 0;
}
