/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The clocks, read one way everywhere.  CLOCK_MONOTONIC is the profiler's
 * time base: durations, deadlines, and the BPF side's timestamps
 * (bpf_ktime_get_ns counts the same clock).
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <time.h>

/* Clock id's time in seconds. */
static inline double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Clock id's time in nanoseconds. */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double mono_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif /* CLOCK_H */
