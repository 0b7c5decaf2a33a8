// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of the /proc/PID/maps parser: the input as a maps file.
 * Every entry it keeps must be well formed (start < end, a path string),
 * and lookups by address must agree with the entries.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");
	struct procmaps *m;
	size_t i, n;

	if (!f)
		return 0;
	m = procmaps__parse(f);
	fclose(f);
	if (!m)
		return 0;
	n = procmaps__count(m);
	for (i = 0; i < n; i++) {
		const struct map_entry *e = procmaps__get(m, i), *found;

		if (!e || e->start >= e->end || !e->path)
			abort();
		found = procmaps__find(m, e->start);
		if (!found || e->start < found->start || e->start >= found->end)
			abort();
	}
	procmaps__find(m, 0);
	procmaps__find(m, UINT64_MAX);
	procmaps__free(m);
	return 0;
}
