// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "view.h"
int export_parse_format(const char *s, enum export_format *fmt)
{
	if (!strcmp(s, "folded")) *fmt = EXPORT_FOLDED;
	else if (!strcmp(s, "speedscope")) *fmt = EXPORT_SPEEDSCOPE;
	else if (!strcmp(s, "pprof")) *fmt = EXPORT_PPROF;
	else return -EINVAL;
	return 0;
}
int export_write(struct json_object *doc, enum export_format fmt, const char *name, FILE *f, FILE *err)
{
	(void)doc; (void)fmt; (void)name; (void)f;
	fprintf(err, "scalene-bpf: exports are not built yet\n");
	return -EINVAL;
}
