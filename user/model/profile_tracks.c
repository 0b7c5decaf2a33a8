// SPDX-License-Identifier: BSD-2-Clause
/* The timeline's tracks: garbage collection, I/O and GIL waits per thread
 * (profile.h: struct profile_tracks). */
#include <stdlib.h>
#include <string.h>

#include "model/profile.h"
#include "model/profile_int.h"

/* How far back a new interval looks for its thread's last one of its kind:
 * threads interleave, but not by more than this many intervals. */
#define TRACK_LOOKBACK 64

/* Two sampling periods: the samples of a run of collection are a period
 * apart, less what the thread spent off the CPU. */
static uint64_t first_gap(const struct sample_in *s)
{
	return 2 * (s->period_ns ? s->period_ns : 1000000ULL);
}

/* The interval among iv[0..n) that e joins, or NULL: the thread's last one
 * of its kind when at the same line and less than gap away, or when it ends
 * at prev_ns, the thread's previous sample (0: none known).  With no sample
 * of the thread in between, the thread was not doing anything else: a thread
 * preempted in the middle of a collection (on a loaded machine, for longer
 * than the gap) is still collecting, and still holds the GIL. */
static struct track_interval *join(struct track_interval *iv, int n, uint64_t gap, uint64_t prev_ns,
				   const struct track_interval *e)
{
	int i;

	for (i = n - 1; i >= 0 && i >= n - TRACK_LOOKBACK; i--) {
		struct track_interval *a = &iv[i];

		if (a->tid != e->tid || a->tgid != e->tgid || a->kind != e->kind)
			continue;
		/* One line's: another line's stretch begins a new interval. */
		if (a->file != e->file || a->line != e->line)
			return NULL;
		if (prev_ns && a->end_ns == prev_ns && e->start_ns >= a->end_ns)
			return a;
		return e->start_ns <= a->end_ns + gap && a->start_ns <= e->end_ns + gap ? a : NULL;
	}
	return NULL;
}

static void merge(struct track_interval *a, const struct track_interval *e)
{
	if (e->start_ns < a->start_ns)
		a->start_ns = e->start_ns;
	if (e->end_ns > a->end_ns)
		a->end_ns = e->end_ns;
}

/* Doubles the gap until the intervals fill at most half the room. */
static void thin(struct profile_tracks *t)
{
	int i, w;

	do {
		t->gap_ns *= 2;
		for (i = w = 0; i < t->n; i++) {
			struct track_interval e = t->iv[i], *j = join(t->iv, w, t->gap_ns, 0, &e);

			if (j)
				merge(j, &e);
			else
				t->iv[w++] = e;
		}
		t->n = w;
	} while (t->n > TRACK_MAX_INTERVALS / 2 && t->gap_ns < (1ULL << 40));
}

static void add(struct profile *p, const struct sample_in *s, const struct frame_ref *at, int kind,
		uint64_t start, uint64_t end, uint64_t prev_ns)
{
	struct profile_tracks *t = &p->tracks;
	struct track_interval e = { start, end, s->tgid, s->tid, kind, NULL, 0 }, *j;

	if (end <= start)
		return;
	t->ns[kind] += (double)(end - start);
	if (at) {
		e.file = at->filename;
		e.line = at->line > 0 ? at->line : at->firstlineno;
	}
	if (!t->gap_ns)
		t->gap_ns = first_gap(s);
	j = join(t->iv, t->n, t->gap_ns, prev_ns, &e);
	if (j) {
		merge(j, &e);
		return;
	}
	if (t->n == TRACK_MAX_INTERVALS) {
		thin(t);
		j = join(t->iv, t->n, t->gap_ns, prev_ns, &e);
		if (j) {
			merge(j, &e);
			return;
		}
		if (t->n == TRACK_MAX_INTERVALS) {
			t->dropped++;
			return;
		}
	}
	if (t->n == t->cap) {
		int cap = t->cap ? 2 * t->cap : 64;
		struct track_interval *iv;

		if (cap > TRACK_MAX_INTERVALS)
			cap = TRACK_MAX_INTERVALS;
		iv = realloc(t->iv, cap * sizeof(*iv));
		if (!iv) {
			t->dropped++;
			return;
		}
		t->iv = iv;
		t->cap = cap;
	}
	t->iv[t->n++] = e;
}

void profile_tracks_add(struct profile *p, const struct sample_in *s, const struct frame_ref *at,
			double cpu, double blocked, double gil, uint64_t prev_ns)
{
	uint64_t ts = s->ts_ns, c = (uint64_t)cpu, b = (uint64_t)blocked, g = (uint64_t)gil;

	if (s->gc && c && c <= ts)
		add(p, s, at, TRACK_GC, ts - c, ts, prev_ns);
	if (s->gil_held && c && c <= ts)
		add(p, s, at, TRACK_GIL_HELD, ts - c, ts, prev_ns);
	/* The GIL wait ends the block: a thread woken from I/O then waits for
	 * the GIL. */
	if (g && g <= ts)
		add(p, s, at, TRACK_GIL, ts - g, ts, prev_ns);
	if (s->blocked_kind == BLOCKED_IO && b > g && b <= ts)
		add(p, s, at, TRACK_IO, ts - b, ts - g, prev_ns);
}

void profile_tracks_restart(struct profile *p)
{
	struct profile_tracks *t = &p->tracks;

	t->n = 0;
	t->gap_ns = 0;
	t->dropped = 0;
	memset(t->ns, 0, sizeof(t->ns));
}

const struct profile_tracks *profile__tracks(const struct profile *p)
{
	return &p->tracks;
}
