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

#include "session/asyncprobe.h"
#include "base/creds.h"
#include "base/hmap.h"
#include "base/log.h"
#include "model/profile.h"
#include "session/pyasync.h"
#include "symbolize/pycode.h"
#include "target/asyncdebug.h"
#include "target/python.h"
#include "session/session_int.h"

/* Folds one reader's counters into a total. */
static void async_add(struct pyasync_stats *t, const struct pyasync_stats *a)
{
	t->polls += a->polls;
	t->idle_polls += a->idle_polls;
	t->state_unknown += a->state_unknown;
	t->snapshots += a->snapshots;
	t->loop_snapshots += a->loop_snapshots;
	t->weight_ns += a->weight_ns;
	t->weight_sq_ns2 += a->weight_sq_ns2;
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
		tp->async_final = *pyasync__stats(tp->aw);
		async_add(&tp->session->async_retired, pyasync__stats(tp->aw));
		pyasync__free(tp->aw);
		tp->aw = NULL;
	}
	tp->probe_done = false;
	tp->async_published_pending = false;
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
	session_frame_names(tp_profile(s, tp), pc, out);
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
	memset(&tp->async_final, 0, sizeof(tp->async_final));
	/* System-wide, the gap doubles while no loop is seen (host_poll). */
	tp->async_gap_ns = ASYNC_POLL_NS;
	tp->async_active_ns = 0;
	tp->async_loop_seen = false;
	tp->aw = pyasync__new(&tp->pp, tp_profile(s, tp), async_resolve, tp);
	if (!tp->aw) {
		pr_warn("process %d: no await attribution: out of memory\n", tp->pid);
		return;
	}
	session_due(s, tp->next_async_ns);
	/* A layout measured before (this run or an earlier one) is taken
	 * now, so that no idle time waits for it; else the probe runs when
	 * an event loop is first seen. */
	async_probe(s, tp, true);
}

/* The uid and gid the process runs as: the probe runs as them. */
static void async_layout_note(struct session *s, struct tproc *tp, const struct async_layout *l,
			      const char *why)
{
	struct facts_async_layout *o;

	if (s->nasync_layouts >= FACTS_MAX_LAYOUTS)
		return;
	tp->async_note = s->nasync_layouts;
	o = &s->async_layouts[s->nasync_layouts++];
	memset(o, 0, sizeof(*o));
	o->pid = tp->pid;
	python__version_string(tp->pp.version_hex, o->python, sizeof(o->python));
	o->found = l != NULL;
	if (l) {
		o->c_task = l->c_task;
		snprintf(o->task_type, sizeof(o->task_type), "%s", l->task_type);
	} else {
		snprintf(o->unavailable, sizeof(o->unavailable), "%s", why);
	}
}

/* 3.14+: the offsets _asyncio publishes stand over the probe's and the
 * tables' (asyncdebug.h): the reader's layout is made again with them.  Not
 * found is final once an event loop runs (last: the module is imported by
 * then); before that, looked for again at the first loop seen. */
static void async_published(struct session *s, struct tproc *tp, bool last)
{
	struct facts_async_layout *note =
		tp->async_note >= 0 ? &s->async_layouts[tp->async_note] : NULL;
	struct pyasync_layout pl;
	struct asyncio_debug d;
	char why[256], disagree[256];
	int err;

	if (!tp->async_published_pending)
		return;
	err = asyncdebug__find(&tp->pp, &d, why, sizeof(why));
	if (err == -ENOENT && !last)
		return;
	tp->async_published_pending = false;
	if (err) {
		if (err != -ENOENT)
			pr_warn("process %d: _asyncio's published offsets not taken: %s\n", tp->pid,
				why);
		if (note)
			snprintf(note->published_unavailable, sizeof(note->published_unavailable),
				 "%s", why);
		return;
	}
	pyasync__layout_from(&pl, &tp->async_probed, tp->pp.off, &d, disagree, sizeof(disagree));
	pyasync__set_layout(tp->aw, &pl);
	if (disagree[0])
		pr_warn("process %d: _asyncio publishes other offsets than were measured (%s): "
			"its own are taken\n",
			tp->pid, disagree);
	if (note) {
		snprintf(note->published, sizeof(note->published), "%s", d.file);
		snprintf(note->disagreements, sizeof(note->disagreements), "%s", disagree);
	}
}

/* The probe measures the layout once the process shows an event loop
 * (cached_only: only a layout measured before is taken). */
static void async_probe(struct session *s, struct tproc *tp, bool cached_only)
{
	struct pyasync_layout pl;
	struct async_layout l;
	char why[256] = "", exe[64];
	struct proc_ids ids = { 0 };
	int err;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", tp->pid);
	if (!tp->probe) {
		if (asyncprobe__cached(exe, &l) == 0)
			goto have;
		if (cached_only)
			return;
		err = creds_of_process(tp->pid, &ids);
		if (!err)
			tp->probe = asyncprobe__start(exe, ids.uid, ids.gid, why, sizeof(why));
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
	tp->async_probed = l;
	tp->async_note = -1;
	async_layout_note(s, tp, &l, NULL);
	/* 3.14+: what _asyncio publishes, looked for now (built into the
	 * interpreter) or, in a module not imported yet, once a loop runs. */
	pyasync__layout_from(&pl, &l, tp->pp.off, NULL, why, sizeof(why));
	pyasync__set_layout(tp->aw, &pl);
	tp->async_published_pending = tp->pp.minor >= 14;
	async_published(s, tp, !cached_only);
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

/*
 * A host's process: looked at every async_live_gap_ns (ASYNC_POLL_NS while
 * the looks keep within their budget: host_budget) while it runs an event
 * loop and ran lately, else less and less often (the gap doubles up to
 * ASYNC_QUIET_POLL_NS), and not at all once it is known not to run and to
 * have no loop.  Samples come in with the counts' drain, up to
 * s->drain_ns after they were taken: "it did not run since the last
 * look" is known only of a look older than that.
 */
static int host_poll(struct session *s, struct tproc *tp, uint64_t now)
{
	/* An exec'ed process ran at its exec (start_ns); one found running
	 * at the start of the run has only its samples to say so. */
	uint64_t lately = tp->async_active_ns > tp->start_ns ? tp->async_active_ns : tp->start_ns;
	uint64_t polled = pyasync__last_poll_ns(tp->aw);
	bool ran = tp->async_active_ns > polled;
	bool known_idle = !ran && now >= polled + s->drain_ns;
	uint64_t max_gap = 0;
	/* Two drains at least: samples come with them. */
	uint64_t quiet_after =
		ASYNC_QUIET_AFTER_NS > 2 * s->drain_ns ? ASYNC_QUIET_AFTER_NS : 2 * s->drain_ns;
	int r;

	/* The gap before a loop is first seen is not its idle time (it may
	 * have started just now).  A look after a gap chosen on purpose
	 * stands for all of it: the loop, found idle, was idle all the gap
	 * if the process did not run, and as likely as at the look if it did
	 * (a sample of its time).  The bound is for a loader that stalled. */
	if (!tp->async_loop_seen)
		max_gap = ASYNC_POLL_NS;
	else if (tp->async_gap_ns > ASYNC_POLL_NS)
		max_gap = tp->async_gap_ns + s->drain_ns;
	r = pyasync__poll(tp->aw, now, max_gap);
	if (r == 1 && now < lately + quiet_after) {
		tp->async_gap_ns = s->async_live_gap_ns;
	} else if (r != 1 && tp->start_ns && now > tp->start_ns) {
		/* No event loop yet in a process exec'ed or forked during the
		 * run (start_ns: its record's time): it may be importing what
		 * starts one.  Looked at again after a
		 * quarter of its age (10 ms to 1 s), so that the idle time
		 * missed before its loop is first seen is at most a quarter of
		 * what came before it; a gap doubled at each look missed up to
		 * as much as came before. */
		uint64_t gap = (now - tp->start_ns) / 4;

		tp->async_gap_ns = gap < ASYNC_POLL_NS	       ? ASYNC_POLL_NS
				   : gap > ASYNC_QUIET_POLL_NS ? ASYNC_QUIET_POLL_NS
							       : gap;
	} else if (tp->async_gap_ns < ASYNC_QUIET_POLL_NS)
		tp->async_gap_ns = tp->async_gap_ns * 2 < ASYNC_QUIET_POLL_NS ? tp->async_gap_ns * 2
									      : ASYNC_QUIET_POLL_NS;
	/* Without an event loop and not running: nothing to look at until
	 * it runs (sasync_active), since it cannot start a loop without. */
	if (r != 1 && polled && known_idle)
		tp->next_async_ns = UINT64_MAX;
	else
		tp->next_async_ns = now + tp->async_gap_ns;
	return r;
}

/* System-wide: every ASYNC_BUDGET_NS, the gap between looks at a live loop
 * that would have kept the readers' time of the window past within
 * ASYNC_HOST_BUDGET (their cost is about proportional to the looks). */
static void host_budget(struct session *s, uint64_t now)
{
	double used, gap;

	if (!s->async_budget_from_ns) {
		s->async_budget_from_ns = now;
		return;
	}
	if (now < s->async_budget_from_ns + ASYNC_BUDGET_NS)
		return;
	used = s->async_budget_cost_ns / (double)(now - s->async_budget_from_ns);
	gap = (double)s->async_live_gap_ns * used / ASYNC_HOST_BUDGET;
	if (gap < ASYNC_POLL_NS)
		gap = ASYNC_POLL_NS;
	if (gap > ASYNC_LIVE_MAX_NS)
		gap = ASYNC_LIVE_MAX_NS;
	s->async_live_gap_ns = (uint64_t)gap;
	if (s->async_live_gap_ns > s->async_live_gap_max_ns)
		s->async_live_gap_max_ns = s->async_live_gap_ns;
	s->async_budget_cost_ns = 0;
	s->async_budget_from_ns = now;
}

void sasync_tick(struct session *s, struct tproc *tp, uint64_t now)
{
	int r;

	if (!sasync_due(tp) || now < tp->next_async_ns)
		return;
	if (!s->host) {
		r = pyasync__poll(tp->aw, now, 0);
		tp->next_async_ns += ASYNC_POLL_NS;
		if (tp->next_async_ns <= now)
			tp->next_async_ns = now + ASYNC_POLL_NS;
	} else {
		double cost = pyasync__stats(tp->aw)->cost_ns;

		host_budget(s, now);
		r = host_poll(s, tp, now);
		s->async_budget_cost_ns += pyasync__stats(tp->aw)->cost_ns - cost;
	}
	tp->async_loop_seen = r == 1;
	if (pyasync__uvloop(tp->aw) && !tp->uvloop_told) {
		tp->uvloop_told = true;
		pr_warn("process %d runs uvloop: where its coroutines wait is not measured (its "
			"event loop is compiled code; use the default asyncio loop for await "
			"times)\n",
			tp->pid);
	}
	if (r == 1 && !pyasync__has_layout(tp->aw) && !tp->probe_done)
		async_probe(s, tp, false);
	else if (r == 1)
		async_published(s, tp, true);
}

/* System-wide: a CPU or off-CPU sample of the process, taken at `ts`.  One
 * that runs an event loop and was looked at seldom (it was quiet) is back
 * on the live schedule. */
void sasync_active(struct session *s, struct tproc *tp, uint64_t ts)
{
	uint64_t at;

	if (!s->host || !tp->aw)
		return;
	if (ts > tp->async_active_ns)
		tp->async_active_ns = ts;
	if (tp->async_loop_seen)
		tp->async_gap_ns = s->async_live_gap_ns;
	at = pyasync__last_poll_ns(tp->aw) + tp->async_gap_ns;
	if (at < ts)
		at = ts;
	if (tp->next_async_ns > at) {
		tp->next_async_ns = at;
		session_due(s, at);
	}
}

/* scalene_bpf.async: how the await fields were measured, and what it cost. */
void sasync_facts(struct session *s, const struct tproc *one, struct facts_async *o)
{
	struct pyasync_stats t = s->async_retired;
	const struct profile *p = one ? tp_profile(s, one) : s->profile;
	size_t it = 0;
	int i;
	void *v;

	if (one)
		t = one->aw ? *pyasync__stats(one->aw) : one->async_final;
	while (!one && hmap__next(s->procs, &it, NULL, &v)) {
		const struct tproc *tp = v;

		if (tp->aw)
			async_add(&t, pyasync__stats(tp->aw));
	}
	o->await_ns = profile__await_ns(p);
	o->await_outside_profiled_files_ns = profile__await_unattributed_ns(p);
	{
		const struct await_outside *w =
			profile__await_outside(p, &o->noutside, &o->outside_other_ns);

		memcpy(o->outside, w, o->noutside * sizeof(*w));
	}
	o->idle_loop_ns = t.idle_ns;
	o->idle_loop_without_tasks_ns = t.empty_ns;
	o->idle_after_last_snapshot_ns = t.after_last_ns;
	o->idle_before_layout_ns = t.before_layout_ns;
	o->loops = t.loops;
	o->polls = t.polls;
	o->idle_polls = t.idle_polls;
	o->idle_unchecked_polls = t.state_unknown;
	o->snapshots = t.snapshots;
	o->loop_snapshots = t.loop_snapshots;
	o->snapshots_effective =
		t.weight_sq_ns2 > 0 ? t.weight_ns * t.weight_ns / t.weight_sq_ns2 : 0;
	o->partial_snapshots = t.partial;
	o->sampled_snapshots = t.sampled;
	o->task_sample = pyasync__task_sample();
	o->task_set_unreadable = t.no_task_set;
	o->tasks_read = t.tasks_read;
	o->tasks_unreadable = t.tasks_unreadable;
	o->tasks_unstarted = t.tasks_unstarted;
	o->tasks_resumed = t.tasks_resumed;
	o->max_tasks = t.max_tasks;
	o->await_stacks_dropped = profile__await_stacks_dropped(p);
	o->reader_ns = t.cost_ns;
	o->live_gap_max_ns = s->async_live_gap_max_ns;
	o->reads = t.reads;
	o->read_calls = t.syscalls;
	o->nlayouts = 0;
	for (i = 0; i < s->nasync_layouts; i++) {
		if (!one || s->async_layouts[i].pid == one->pid)
			o->layouts[o->nlayouts++] = s->async_layouts[i];
	}
	o->uvloop = t.uvloop;
}
