// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer harness of the source reader that finds each line's enclosing
 * loop and function (regions.c): profiled source files are read from disk
 * and may hold anything.  Every line's fields must be line numbers of the
 * text (or 0 for "no function").
 */
#include <stdint.h>
#include <stdlib.h>

#include "report/regions.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct regions *r = regions__compute((const char *)data, size);
	int i, n;

	if (!r)
		return 0;
	n = regions__nlines(r);
	for (i = 0; i <= n + 1; i++) {
		const struct line_regions *l = regions__line(r, i);

		if ((i < 1 || i > n) != !l)
			abort();
		if (l && (l->start_region < 1 || l->end_region > n || l->start_region > l->end_region ||
			  l->start_outermost_loop < 1 || l->end_outermost_loop > n ||
			  l->start_function < 0 || l->end_function > n))
			abort();
	}
	regions__free(r);
	return 0;
}
