/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --pid --memory at a bounded cost.  Every call of a probed allocation
 * function traps (memprobe.h), about 1-3 us here: a loop making a million
 * small objects a second would spend most of its time in the traps.  So
 * the probes are in place for one window of each MEMDUTY_CYCLE_NS cycle,
 * at a random place in it, as long as keeps their measured cost (hits x
 * the cost of a hit measured at the start) within a budget, a part of the
 * program's own CPU time; each window's samples weigh the cycle over the
 * window (the BPF side counts only those inside it: loader__mem_window),
 * so a line's bytes are estimated for all the time.  The window's length
 * for a cycle comes from the hit rate and CPU time of the cycles before.
 * Which cycles had which window, what the traps cost, and how much the
 * windows' counts vary are kept for the profile.
 */
#ifndef MEMDUTY_H
#define MEMDUTY_H

#include <stdint.h>

struct loader;
struct session;
struct memprobe_placed;
struct facts_duty;

#define MEMDUTY_CYCLE_NS 1000000000ULL
/* The shortest window, as a part of a cycle: below, a window holds too
 * few samples to say anything (and the cost of placing the probes, about a
 * millisecond, would be most of it). */
#define MEMDUTY_MIN_PART 0.01
/* The first cycle's window, before any hit rate is known. */
#define MEMDUTY_FIRST_PART 0.05
/* How much longer a window may be than the one before. */
#define MEMDUTY_GROWTH 4
/* Own CPU samples in the windows below which their ratio to all the
 * cycles' is too rough to weigh the samples by (the time's is used). */
#define MEMDUTY_MIN_OWN_SAMPLES 10
/* Above this share of the program's CPU time in the windows, the traps
 * slow the code around them enough to make the totals low: said
 * (facts_duty.totals_low). */
#define MEMDUTY_TRAP_SHARE_WARN 0.25
/* What a hit is taken to cost where it could not be measured, ns. */
#define MEMDUTY_HIT_NS_UNMEASURED 3000.0

struct memduty;

/* The duty cycle of pid's probes pl (all in place now: they come out at
 * once, to go back in for the first window), keeping to budget (a
 * fraction of the program's CPU time; >= 1: no duty cycle, NULL is not
 * returned for it either), a hit costing hit_ns (< 0: not measured).
 * NULL (errno) when out of memory. */
struct memduty *memduty__new(struct loader *l, struct session *s, int pid,
			     struct memprobe_placed *pl, double budget, double hit_ns,
			     uint64_t now);
/* Moves the cycle on: probes in or out, the window's bounds for BPF. */
void memduty__tick(struct memduty *d, uint64_t now);
/* ms until the next thing to do (the poll's timeout), at most max_ms. */
int memduty__due_ms(const struct memduty *d, uint64_t now, int max_ms);
/* The end of the profile: the open window, if any, closes now and counts
 * for the part of its cycle that has passed. */
void memduty__end(struct memduty *d, uint64_t now);
/* What it did until now (the end, once memduty__end was called). */
void memduty__facts(const struct memduty *d, uint64_t now, struct facts_duty *out);
void memduty__free(struct memduty *d);

#endif /* MEMDUTY_H */
