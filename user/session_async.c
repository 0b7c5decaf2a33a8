// SPDX-License-Identifier: BSD-2-Clause
/*
 * Await attribution in the session: each Python process gets a reader of
 * its event loops (pyasync.h) once recognised, the layout of its asyncio
 * (asyncprobe.h: cached, or measured when a loop is first seen idle), a poll
 * on a fixed schedule, and its counters in scalene_bpf.async.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "asyncprobe.h"
#include "hmap.h"
#include "log.h"
#include "profile.h"
#include "pyasync.h"
#include "pycode.h"
#include "python.h"
#include "session_int.h"

/* Folds one reader's counters into a total. */
static void async_add(struct pyasync_stats *t, const struct pyasync_stats *a)
{
	t->polls += a->polls;
	t->idle_polls += a->idle_polls;
	t->state_unknown += a->state_unknown;
	t->snapshots += a->snapshots;
	t->tasks_read += a->tasks_read;
	t->tasks_unreadable += a->tasks_unreadable;
	t->tasks_unstarted += a->tasks_unstarted;
	t->tasks_resumed += a->tasks_resumed;
	t->partial += a->partial;
	t->sampled += a->sampled;
	t->no_task_set += a->no_task_set;
	t->reads += a->reads;
	t->syscalls += a->syscalls;
	t->idle_ns += a->idle_ns;
	t->credited_ns += a->credited_ns;
	t->empty_ns += a->empty_ns;
	t->after_last_ns += a->after_last_ns;
	t->before_layout_ns += a->before_layout_ns;
	t->cost_ns += a->cost_ns;
	t->loops += a->loops;
	if (a->max_tasks > t->max_tasks)
		t->max_tasks = a->max_tasks;
	t->uvloop |= a->uvloop;
}

void sasync_stop(struct tproc *tp)
{
	asyncprobe__free(tp->probe);
	tp->probe = NULL;
	if (tp->aw) {
		pyasync__flush(tp->aw);
		async_add(&tp->session->async_retired, pyasync__stats(tp->aw));
		pyasync__free(tp->aw);
		tp->aw = NULL;
	}
	tp->probe_done = false;
}

void session__flush_async(struct session *s)
{
	size_t it = 0;
	void *v;

	while (hmap__next(s->procs, &it, NULL, &v)) {
		struct tproc *tp = v;

		if (tp->aw)
			pyasync__flush(tp->aw);
	}
}

/* The await reader's frames, through the same code cache as the samples'. */
static int async_resolve(void *ctx, uint64_t code, uint64_t tag, int offset, struct frame_ref *out)
{
	struct tproc *tp = ctx;
	struct session *s = tp->session;
	const struct pycode *pc = session_code_for(s, tp, code, tag);
	int line;

	if (!pc)
		return -errno ? -errno : -EFAULT;
	line = pycode__line(pc, offset);
	out->filename = profile__intern(s->profile, pc->filename);
	out->qualname = profile__intern(s->profile, pc->qualname);
	out->firstlineno = pc->firstlineno;
	out->line = line > 0 ? line : pc->firstlineno;
	return out->filename && out->qualname ? 0 : -ENOMEM;
}

static void async_probe(struct session *s, struct tproc *tp, bool cached_only);

void sasync_start(struct session *s, struct tproc *tp)
{
	if (!s->async_waits || tp->aw)
		return;
	tp->session = s;
	tp->aw = pyasync__new(&tp->pp, s->profile, async_resolve, tp);
	if (!tp->aw) {
		pr_warn("process %d: no await attribution: out of memory\n", tp->pid);
		return;
	}
	/* A layout measured before (this run or an earlier one) is taken
	 * now, so that no idle time waits for it; else the probe runs when
	 * an event loop is first seen. */
	async_probe(s, tp, true);
}

/* The uid and gid the process runs as: the probe runs as them. */
static int proc_ids(int pid, uid_t *uid, gid_t *gid)
{
	char path[64], line[256];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned int a;

		if (sscanf(line, "Uid: %u", &a) == 1)
			*uid = a, found |= 1;
		else if (sscanf(line, "Gid: %u", &a) == 1)
			*gid = a, found |= 2;
	}
	fclose(f);
	return found == 3 ? 0 : -EINVAL;
}

static void async_layout_note(struct session *s, struct tproc *tp, const struct async_layout *l,
			      const char *why)
{
	struct json_object *o = json_object_new_object();
	char ver[32];

	python__version_string(tp->pp.version_hex, ver, sizeof(ver));
	json_object_object_add(o, "pid", json_object_new_int(tp->pid));
	json_object_object_add(o, "python", json_object_new_string(ver));
	if (l) {
		json_object_object_add(o, "c_task", json_object_new_boolean(l->c_task));
		json_object_object_add(o, "task_type", json_object_new_string(l->task_type));
	} else {
		json_object_object_add(o, "unavailable", json_object_new_string(why));
	}
	if (json_object_array_length(s->async_layouts) < 16)
		json_object_array_add(s->async_layouts, o);
	else
		json_object_put(o);
}

/* The probe measures the layout once the process shows an event loop
 * (cached_only: only a layout measured before is taken). */
static void async_probe(struct session *s, struct tproc *tp, bool cached_only)
{
	struct pyasync_layout pl;
	struct async_layout l;
	char why[256] = "", exe[64];
	uid_t uid = 0;
	gid_t gid = 0;
	int err;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", tp->pid);
	if (!tp->probe) {
		if (asyncprobe__cached(exe, &l) == 0)
			goto have;
		if (cached_only)
			return;
		err = proc_ids(tp->pid, &uid, &gid);
		if (!err)
			tp->probe = asyncprobe__start(exe, uid, gid, why, sizeof(why));
		if (!tp->probe) {
			if (!why[0])
				snprintf(why, sizeof(why), "cannot read its ids: %s",
					 strerror(-err));
			goto failed;
		}
	}
	err = asyncprobe__poll(tp->probe, &l, why, sizeof(why));
	if (err == -EAGAIN)
		return;
	asyncprobe__free(tp->probe);
	tp->probe = NULL;
	if (err)
		goto failed;
have:
	tp->probe_done = true;
	memset(&pl, 0, sizeof(pl));
	pl.c_task = l.c_task && l.fut_loop != PYOFF_NONE && l.fut_state != PYOFF_NONE &&
		    l.task_coro != PYOFF_NONE && l.task_name != PYOFF_NONE;
	pl.task_size = l.task_size;
	pl.c_task = pl.c_task && l.task_size > 0;
	pl.fut_loop = l.fut_loop;
	pl.fut_state = l.fut_state;
	pl.task_coro = l.task_coro;
	pl.task_name = l.task_name;
	pl.task_fut_waiter = l.task_fut_waiter;
	pl.state_pending = l.state_pending;
	pl.asend_gen = l.asend_gen;
	pl.keys.known = l.dk_known;
	pl.keys.size = l.dk_size;
	pl.keys.nentries = l.dk_nentries;
	pl.keys.indices = l.dk_indices;
	pl.keys.entry_size = l.dk_entry_size;
	pl.keys.entry_key = l.dk_entry_key;
	pl.keys.entry_value = l.dk_entry_value;
	pyasync__set_layout(tp->aw, &pl);
	async_layout_note(s, tp, &l, NULL);
	return;
failed:
	tp->probe_done = true;
	pr_warn("process %d: where its coroutines wait is not measured: %s\n", tp->pid, why);
	async_layout_note(s, tp, NULL, why);
}

/*
 * Polls the process's event loops every ASYNC_POLL_NS, on a fixed schedule
 * that the loader's wake-ups do not move (session__poll_ms sleeps until the
 * next poll): a poll made because a record arrived would come just after
 * the program woke, and the end of every wait would be missed.
 */
bool sasync_due(const struct tproc *tp)
{
	return tp->aw && !tp->exited && tp->state == TP_PYTHON;
}

void sasync_tick(struct session *s, struct tproc *tp, uint64_t now)
{
	int r;

	if (!sasync_due(tp) || now < tp->next_async_ns)
		return;
	tp->next_async_ns += ASYNC_POLL_NS;
	if (tp->next_async_ns <= now)
		tp->next_async_ns = now + ASYNC_POLL_NS;
	r = pyasync__poll(tp->aw, now);
	if (pyasync__uvloop(tp->aw) && !tp->uvloop_told) {
		tp->uvloop_told = true;
		pr_warn("process %d runs uvloop: where its coroutines wait is not measured (its "
			"event loop is compiled code; use the default asyncio loop for await "
			"times)\n",
			tp->pid);
	}
	if (r == 1 && !pyasync__has_layout(tp->aw) && !tp->probe_done)
		async_probe(s, tp, false);
}

/* scalene_bpf.async: how the await fields were measured, and what it cost. */
struct json_object *sasync_facts(struct session *s)
{
	struct json_object *o = json_object_new_object();
	struct pyasync_stats t = s->async_retired;
	const struct profile *p = s->profile;
	size_t it = 0;
	void *v;

	while (hmap__next(s->procs, &it, NULL, &v)) {
		const struct tproc *tp = v;

		if (tp->aw)
			async_add(&t, pyasync__stats(tp->aw));
	}
	json_object_object_add(
		o, "method",
		json_object_new_string("task-set snapshots read from outside while the event "
				       "loop waits in its selector"));
	json_object_object_add(o, "await_s", session_seconds(profile__await_ns(p)));
	json_object_object_add(o, "await_outside_profiled_files_s",
			       session_seconds(profile__await_unattributed_ns(p)));
	json_object_object_add(o, "idle_loop_s", session_seconds(t.idle_ns));
	json_object_object_add(o, "idle_loop_without_tasks_s", session_seconds(t.empty_ns));
	json_object_object_add(o, "idle_after_last_snapshot_s", session_seconds(t.after_last_ns));
	/* The loop's idle time before the probe had measured the layout
	 * (its first ~0.1-0.3 s): not credited to any line. */
	json_object_object_add(o, "idle_before_layout_s", session_seconds(t.before_layout_ns));
	json_object_object_add(o, "loops", json_object_new_int(t.loops));
	json_object_object_add(o, "polls", json_object_new_int64((int64_t)t.polls));
	json_object_object_add(o, "idle_polls", json_object_new_int64((int64_t)t.idle_polls));
	json_object_object_add(o, "idle_unchecked_polls",
			       json_object_new_int64((int64_t)t.state_unknown));
	json_object_object_add(o, "snapshots", json_object_new_int64((int64_t)t.snapshots));
	json_object_object_add(o, "partial_snapshots", json_object_new_int64((int64_t)t.partial));
	json_object_object_add(o, "sampled_snapshots", json_object_new_int64((int64_t)t.sampled));
	json_object_object_add(o, "task_sample", json_object_new_int(pyasync__task_sample()));
	json_object_object_add(o, "task_set_unreadable",
			       json_object_new_int64((int64_t)t.no_task_set));
	json_object_object_add(o, "tasks_read", json_object_new_int64((int64_t)t.tasks_read));
	json_object_object_add(o, "tasks_unreadable",
			       json_object_new_int64((int64_t)t.tasks_unreadable));
	json_object_object_add(o, "tasks_unstarted",
			       json_object_new_int64((int64_t)t.tasks_unstarted));
	json_object_object_add(o, "tasks_resumed", json_object_new_int64((int64_t)t.tasks_resumed));
	json_object_object_add(o, "max_tasks", json_object_new_int(t.max_tasks));
	json_object_object_add(o, "await_stacks_dropped",
			       json_object_new_int64((int64_t)profile__await_stacks_dropped(p)));
	json_object_object_add(o, "reader_s", session_seconds(t.cost_ns));
	json_object_object_add(o, "reads", json_object_new_int64((int64_t)t.reads));
	json_object_object_add(o, "read_calls", json_object_new_int64((int64_t)t.syscalls));
	json_object_object_add(o, "layouts", json_object_get(s->async_layouts));
	if (t.uvloop)
		json_object_object_add(
			o, "not_covered",
			json_object_new_string(
				"uvloop: its event loop is compiled code, so its "
				"waiting and tasks are not read; await fields stay 0"));
	return o;
}
