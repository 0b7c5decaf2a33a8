/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-line region fields of a Scalene profile (start/end_region_line,
 * start/end_outermost_loop, start/end_function_line), computed from a Python
 * source file's text the way Scalene 2.4.0 computes them from Python's ast
 * (scalene_analysis.py: find_regions, find_outermost_loop, find_functions).
 *
 * The text is untrusted: any bytes, any size.  Lines end at "\n", "\r\n" or a
 * lone "\r" (Python's universal newlines), and a last line without a newline
 * still counts.  Text that is not valid Python as far as the block structure
 * goes gets the trivial values of every line: region = outermost = (n, n),
 * function = (0, 0).
 */
#ifndef REGIONS_H
#define REGIONS_H

#include <stddef.h>

struct line_regions {
	int start_region, end_region;
	int start_outermost_loop, end_outermost_loop;
	int start_function, end_function;
};

struct regions;

/* Returns NULL and sets errno (ENOMEM, or EOVERFLOW past INT_MAX lines). */
struct regions *regions__compute(const char *src, size_t len);

int regions__nlines(const struct regions *r);

/* lineno is 1-based; NULL outside [1, regions__nlines(r)]. */
const struct line_regions *regions__line(const struct regions *r, int lineno);

/* Whether the text's block structure was understood (0: trivial values only). */
int regions__parsed(const struct regions *r);

void regions__free(struct regions *r);

#endif /* REGIONS_H */
