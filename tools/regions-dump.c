// SPDX-License-Identifier: BSD-2-Clause
/*
 * regions-dump FILE...: prints the region fields user/report/regions.c computes
 * for each line of each Python file, one line per source line:
 *
 *     lineno start_region end_region start_outermost end_outermost start_function end_function
 *
 * With more than one file, each file's lines follow a "== PATH" line.  The
 * output has the same format as tools/regions-oracle.py, which prints what
 * Scalene itself computes, so the two can be compared with diff.
 *
 * Build from the repository root:
 *     gcc -O2 -D_GNU_SOURCE -Iuser tools/regions-dump.c user/report/regions.c -o build/regions-dump
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/regions.h"

/* Reads a whole file; returns 0 or -errno. */
static int read_file(const char *path, char **data, size_t *len)
{
	size_t cap = 1 << 16, n = 0, got;
	char *buf = NULL, *tmp;
	FILE *f;
	int err = 0;

	f = fopen(path, "rb");
	if (!f)
		return -errno;
	for (;;) {
		if (!buf || n == cap) {
			cap = buf ? cap * 2 : cap;
			tmp = realloc(buf, cap);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = tmp;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		err = -EIO;
		goto cleanup;
	}
	*data = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	fclose(f);
	return err;
}

static int dump(const char *path, int header)
{
	const struct line_regions *lr;
	struct regions *r;
	size_t len = 0;
	char *src = NULL;
	int err, l;

	err = read_file(path, &src, &len);
	if (err) {
		fprintf(stderr, "failed to read %s: %s\n", path, strerror(-err));
		return err;
	}
	r = regions__compute(src, len);
	if (!r) {
		err = -errno;
		fprintf(stderr, "failed to compute regions of %s: %s\n", path, strerror(-err));
		free(src);
		return err;
	}
	if (!regions__parsed(r))
		fprintf(stderr, "%s: not valid Python, trivial values\n", path);
	if (header)
		printf("== %s\n", path);
	for (l = 1; l <= regions__nlines(r); l++) {
		lr = regions__line(r, l);
		printf("%d %d %d %d %d %d %d\n", l, lr->start_region, lr->end_region,
		       lr->start_outermost_loop, lr->end_outermost_loop, lr->start_function,
		       lr->end_function);
	}
	regions__free(r);
	free(src);
	return 0;
}

int main(int argc, char **argv)
{
	int i, status = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (dump(argv[i], argc > 2))
			status = 1;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "failed to write the output: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
