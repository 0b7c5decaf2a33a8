/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Preloaded into a program, this holds it back SLOW_START_MS milliseconds
 * (300 when unset) before its own code starts: an interpreter that becomes
 * ready late, as one does on a loaded machine or behind a slow constructor.
 */
#include <stdlib.h>
#include <time.h>

__attribute__((constructor)) static void slow_start(void)
{
	const char *v = getenv("SLOW_START_MS");
	long ms = v ? atol(v) : 300;
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts))
		;
}
