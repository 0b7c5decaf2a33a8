// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include "view.h"
int view_write_html(struct json_object *doc, const char *name, FILE *f, FILE *err)
{
	(void)doc; (void)name; (void)f;
	fprintf(err, "scalene-bpf: the HTML view is not built yet\n");
	return -EINVAL;
}
