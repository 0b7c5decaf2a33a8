// SPDX-License-Identifier: BSD-2-Clause
/* The duty cycle of --pid --memory's probes (memduty.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/clock.h"
#include "base/log.h"
#include "collect/loader.h"
#include "model/facts.h"
#include "session/memduty.h"
#include "session/memprobe.h"
#include "session/session.h"

/* The counters read at the edges of cycles and windows. */
struct marks {
	uint64_t hits; /* allocation probe hits */
	uint64_t own;  /* CPU samples of the program's own (not in a hit) */
	uint64_t cpu;  /* the program's CPU time, ns */
};

struct memduty {
	struct loader *l;
	struct session *s;
	int pid;
	struct memprobe_placed *pl;
	double budget, hit_ns;
	bool hit_measured;

	/* The cycle under way: [cycle_ns, cycle_ns + MEMDUTY_CYCLE_NS), its
	 * window [open_ns, close_ns) (planned until the probes are in). */
	uint64_t cycle_ns, open_ns, close_ns;
	double part; /* the window's part of the cycle */
	bool in;     /* the probes are in place */
	bool opened; /* this cycle's window was opened */
	struct marks at_cycle, at_open;
	uint64_t own_window, hits_window; /* this cycle's window's, once closed */
	double rate;			  /* hits a second in the last window that opened */

	/* Totals. */
	uint64_t start_ns, end_ns, windows, open_total_ns;
	uint64_t hits, window_hits, window_cpu_ns;
	/* Windows shorter than their cycle: the own CPU samples their time
	 * would have had at the cycle's pace (a), and they had (x). */
	double own_expected, own_had;
	double sum_aa, sum_ax, sum_xx; /* of (a, x), window by window */
	uint64_t partial;	       /* those windows */
	double hits_estimated;	       /* window hits, weighed as their samples */
	double part_min, part_max;
	double cost_ns;	   /* hits x hit_ns */
	double program_ns; /* the program's CPU time less the probes' */
	double factor;	   /* the weight given to the last window's samples */
	uint64_t place_ns; /* time taken placing the probes */
	int place_failed;  /* windows where a probe could not be placed */
};

static void mark(struct memduty *d, struct marks *m)
{
	uint64_t stats[STAT_MAX] = { 0 };

	loader__stats(d->l, stats);
	m->hits = stats[STAT_UPROBE_HITS];
	m->own = stats[STAT_SAMPLES] - stats[STAT_PROBE_SAMPLES];
	m->cpu = proc_cpu_ns(d->pid);
}

static uint64_t since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

static double uniform(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)rand();
	return r / 4294967296.0;
}

/* The window of the cycle that begins at now: its part, from the hit rate
 * in the last window (a second) and the program's CPU time in the cycle
 * before (ns a second). */
static void plan_cycle(struct memduty *d, uint64_t now, double cpu_ns)
{
	double part = MEMDUTY_FIRST_PART, w;

	if (d->windows) {
		/* Hits a second the probes would take if always in, each
		 * costing hit_ns: the part that keeps to budget x CPU.  It
		 * grows by MEMDUTY_GROWTH a cycle at most: a program that
		 * was quiet (no hits: no cost) may start allocating. */
		double cost_all = d->rate * d->hit_ns;

		part = cost_all > 0 ? d->budget * cpu_ns / cost_all : 1.0;
		if (part > d->part * MEMDUTY_GROWTH)
			part = d->part * MEMDUTY_GROWTH;
	}
	if (part < MEMDUTY_MIN_PART)
		part = MEMDUTY_MIN_PART;
	if (part > 1)
		part = 1;
	d->part = part;
	d->cycle_ns = now;
	w = part * MEMDUTY_CYCLE_NS;
	d->open_ns = now + (uint64_t)(uniform() * (MEMDUTY_CYCLE_NS - w));
	d->close_ns = d->open_ns + (uint64_t)w;
	d->opened = false;
	d->own_window = d->hits_window = 0;
	mark(d, &d->at_cycle);
}

/* The open window's counts, as it closes. */
static void close_marks(struct memduty *d)
{
	struct marks m;

	mark(d, &m);
	d->hits_window = since(m.hits, d->at_open.hits);
	d->own_window = since(m.own, d->at_open.own);
	d->window_hits += d->hits_window;
	d->window_cpu_ns += since(m.cpu, d->at_open.cpu);
}

static void take_out(struct memduty *d)
{
	if (!d->in)
		return;
	memprobe__take_out(d->l, d->pl);
	d->in = false;
	if (d->opened)
		close_marks(d);
}

/* The window opens: the probes go in, and BPF counts from when they are. */
static void open_window(struct memduty *d, uint64_t now)
{
	uint64_t t0 = now, w = d->close_ns - d->open_ns;
	int in = memprobe__put_back(d->l, d->pid, d->pl);

	now = mono_ns();
	d->place_ns += now - t0;
	if (in < d->pl->n)
		d->place_failed++;
	d->in = in > 0;
	d->opened = true;
	mark(d, &d->at_open);
	/* Its length as planned, from when the probes are in. */
	d->open_ns = now;
	d->close_ns = now + w;
	loader__mem_window(d->l, d->open_ns, d->close_ns);
}

/* How much less the program got done in the windows than their time says:
 * the own CPU samples (not in a trap) the windows that were shorter than
 * their cycle would have had at their cycles' pace, over those they had
 * (pooled over those windows: a ratio estimate); 1 while they have too few
 * to say. */
static double slowdown(const struct memduty *d)
{
	if (d->own_had < MEMDUTY_MIN_OWN_SAMPLES || d->own_expected <= 0)
		return 1.0;
	return d->own_expected / d->own_had;
}

/* The cycle ends at now: its counts go into the totals, its samples are
 * weighed, and the next is planned. */
static void end_cycle(struct memduty *d, uint64_t now, bool last)
{
	struct marks m;
	double cost, cpu_ns, open_ns, len = (double)since(now, d->cycle_ns);
	uint64_t hits;

	/* The window's samples, all of them (the ring buffer is read every
	 * few ms): weighed as its, not as the next one's. */
	loader__drain(d->l);
	mark(d, &m);
	hits = since(m.hits, d->at_cycle.hits);
	cost = hits * d->hit_ns;
	cpu_ns = (double)since(m.cpu, d->at_cycle.cpu) - cost;
	if (cpu_ns < 0)
		cpu_ns = 0;
	d->hits += hits;
	d->cost_ns += cost;
	d->program_ns += cpu_ns;
	open_ns = d->opened ? (double)since(d->close_ns < now ? d->close_ns : now, d->open_ns) : 0;
	d->factor = 0;
	if (d->opened) {
		d->windows++;
		d->open_total_ns += (uint64_t)open_ns;
		if (d->part < 1 && open_ns > 0) {
			double a = since(m.own, d->at_cycle.own) * open_ns / len;
			double x = d->own_window;

			d->partial++;
			d->own_expected += a;
			d->own_had += x;
			d->sum_aa += a * a;
			d->sum_ax += a * x;
			d->sum_xx += x * x;
		}
		/* A window's samples weigh its cycle over it, in time and in
		 * the work the traps cost the program there.  The last cycle,
		 * cut short by the end, weighs as a whole one: its window was
		 * placed at random in all of it, so it was before the end as
		 * often as the end came late in the cycle (and the part of it
		 * that was, when the end cut it). */
		double planned = (double)(d->close_ns - d->open_ns);
		double span = last ? (double)MEMDUTY_CYCLE_NS : len;

		d->factor = open_ns > 0 && planned > 0 ? span / (last ? planned : open_ns) *
								 (d->part < 1 ? slowdown(d) : 1.0)
						       : 0;
		d->hits_estimated += d->hits_window * d->factor;
		if (d->windows == 1 || d->part < d->part_min)
			d->part_min = d->part;
		if (d->part > d->part_max)
			d->part_max = d->part;
		/* A window that did not open (the loader held up past it)
		 * says nothing of the rate. */
		if (open_ns > 0)
			d->rate = d->hits_window / (open_ns / 1e9);
	}
	session__release_memory(d->s, d->factor);
	pr_debug("memory probes: cycle of %.3f s, window %.1f%% open %.1f ms, %llu hits, "
		 "%llu own samples in it, program CPU %.1f ms; samples weigh %.2f\n",
		 len / 1e9, 100 * d->part, open_ns / 1e6, (unsigned long long)hits,
		 (unsigned long long)d->own_window, cpu_ns / 1e6, d->factor);
	if (!last)
		plan_cycle(d, now, len > 0 ? cpu_ns * (MEMDUTY_CYCLE_NS / len) : 0);
}

struct memduty *memduty__new(struct loader *l, struct session *s, int pid,
			     struct memprobe_placed *pl, double budget, double hit_ns, uint64_t now)
{
	struct memduty *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->l = l;
	d->s = s;
	d->pid = pid;
	d->pl = pl;
	d->budget = budget;
	d->hit_measured = hit_ns > 0;
	d->hit_ns = hit_ns > 0 ? hit_ns : MEMDUTY_HIT_NS_UNMEASURED;
	d->start_ns = now;
	d->in = true;
	d->factor = 1;
	/* Nothing counts until the first window opens; what does is held
	 * until its cycle ends, to be weighed then.  The samples the probes
	 * took while they were placed and their cost measured, before the
	 * profile's start, are dropped. */
	loader__mem_window(l, UINT64_MAX, UINT64_MAX);
	session__hold_memory(s, true);
	loader__drain(l);
	session__release_memory(s, 0);
	take_out(d);
	plan_cycle(d, now, 0);
	return d;
}

void memduty__tick(struct memduty *d, uint64_t now)
{
	if (d->end_ns)
		return;
	if (now >= d->cycle_ns + MEMDUTY_CYCLE_NS) {
		/* Probes in for a whole cycle stay in for another. */
		bool whole = d->in && d->part >= 1;

		if (!whole)
			take_out(d);
		else if (d->opened)
			close_marks(d);
		end_cycle(d, now, false);
		if (whole && d->part < 1) {
			memprobe__take_out(d->l, d->pl);
			d->in = false;
		}
	}
	if (!d->opened && now >= d->open_ns && now < d->cycle_ns + MEMDUTY_CYCLE_NS)
		open_window(d, now);
	/* A whole-cycle window stays: the probes go out only to come back. */
	if (d->in && now >= d->close_ns && d->part < 1)
		take_out(d);
}

int memduty__due_ms(const struct memduty *d, uint64_t now, int max_ms)
{
	uint64_t next = d->cycle_ns + MEMDUTY_CYCLE_NS;

	if (d->end_ns)
		return max_ms;
	if (!d->opened && d->open_ns < next)
		next = d->open_ns;
	else if (d->in && d->part < 1 && d->close_ns < next)
		next = d->close_ns;
	if (next <= now)
		return 0;
	return (next - now) / 1000000 < (uint64_t)max_ms ? (int)((next - now) / 1000000) : max_ms;
}

void memduty__end(struct memduty *d, uint64_t now)
{
	if (d->end_ns)
		return;
	take_out(d);
	loader__mem_window(d->l, UINT64_MAX, UINT64_MAX);
	end_cycle(d, now, true);
	session__hold_memory(d->s, false);
	d->end_ns = now;
}

void memduty__facts(const struct memduty *d, uint64_t now, struct facts_duty *out)
{
	uint64_t end = d->end_ns ? d->end_ns : now;
	double elapsed = (double)since(end, d->start_ns);
	double n = d->partial;

	memset(out, 0, sizeof(*out));
	out->budget = d->budget;
	out->cycle_s = MEMDUTY_CYCLE_NS / 1e9;
	out->windows = d->windows;
	out->open_s = d->open_total_ns / 1e9;
	out->open_part = elapsed > 0 ? d->open_total_ns / elapsed : 0;
	out->part_min = d->part_min;
	out->part_max = d->part_max;
	out->hit_ns = d->hit_ns;
	out->hit_measured = d->hit_measured;
	out->hits = d->hits;
	out->cost_s = d->cost_ns / 1e9;
	out->program_cpu_s = d->program_ns / 1e9;
	out->slowdown = slowdown(d);
	out->partial_windows = d->partial;
	out->own_expected = d->own_expected;
	out->own_had = d->own_had;
	out->hits_estimated = d->hits_estimated;
	/* The slowdown's relative standard error, the windows taken as a
	 * sample of (a, x) pairs: the spread of each one's a about the
	 * ratio's line. */
	out->slowdown_rel_error = -1;
	if (n > 1 && out->slowdown != 1.0) {
		double r = d->own_expected / d->own_had;
		double ss = d->sum_aa - 2 * r * d->sum_ax + r * r * d->sum_xx;

		out->slowdown_rel_error = sqrt((ss > 0 ? ss : 0) * n / (n - 1)) / d->own_expected;
	}
	out->window_trap_share =
		d->window_cpu_ns ? d->window_hits * d->hit_ns / d->window_cpu_ns : 0;
	if (out->window_trap_share > 1)
		out->window_trap_share = 1;
	out->totals_low = out->window_trap_share > MEMDUTY_TRAP_SHARE_WARN;
	out->place_s = d->place_ns / 1e9;
	out->place_failed = d->place_failed;
	out->held_dropped = session__memory_dropped(d->s);
}

void memduty__free(struct memduty *d)
{
	free(d);
}
