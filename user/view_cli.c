// SPDX-License-Identifier: BSD-2-Clause
/*
 * The terminal view of a profile (ours or Scalene's): per file, the lines
 * that matter with their Python / native / system time, then the functions.
 * The profile is untrusted input: types are checked before use and source
 * text never sends control characters to the terminal.
 */
#include <errno.h>
#include <stdio.h>

#include <json-c/json.h>

#include "view.h"
#include "viewutil.h"

static void bar(FILE *f, double pct, int width)
{
	int n = (int)(pct / 100.0 * width + 0.5), i;

	for (i = 0; i < width; i++)
		fputc(i < n ? '#' : ' ', f);
}

static int print_file(FILE *f, const char *name, struct json_object *fd, double threshold,
		      int all_lines, int width, int memory)
{
	struct json_object *lines, *funcs;
	size_t i, n;
	int src_cols = width - (memory ? 52 : 34);
	char text[4096];

	if (!json_object_object_get_ex(fd, "lines", &lines) ||
	    !json_object_is_type(lines, json_type_array))
		return -EINVAL;
	if (src_cols < 10)
		src_cols = 10;
	fputs("\n", f);
	vj_put_safe(f, name, width - 20);
	fprintf(f, ": %.1f%% of the time\n", vj_num(fd, "percent_cpu_time"));
	fprintf(f, "  line  python  native  system %s  source\n",
		memory ? "  avg MB  peak MB  mem%" : "");
	n = json_object_array_length(lines);
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(lines, i), *t;
		double py, c, sys;

		if (!json_object_is_type(l, json_type_object))
			return -EINVAL;
		py = vj_num(l, "n_cpu_percent_python");
		c = vj_num(l, "n_cpu_percent_c");
		sys = vj_num(l, "n_sys_percent");
		if (py + c + sys < (all_lines ? 1e-9 : threshold) &&
		    !(memory && vj_num(l, "n_malloc_mb") > 0))
			continue;
		fprintf(f, "%6d %6.1f%% %6.1f%% %6.1f%% ", (int)vj_num(l, "lineno"), py, c, sys);
		if (memory)
			fprintf(f, "%8.1f %8.1f %4.0f%% ", vj_num(l, "n_avg_mb"), vj_num(l, "n_peak_mb"),
				100 * vj_num(l, "n_usage_fraction"));
		fputs(" ", f);
		text[0] = '\0';
		if (json_object_object_get_ex(l, "line", &t) &&
		    json_object_is_type(t, json_type_string))
			vj_unescape_line(json_object_get_string(t), text, sizeof(text));
		vj_put_safe(f, text, src_cols);
		fputc('\n', f);
	}
	if (!json_object_object_get_ex(fd, "functions", &funcs) ||
	    !json_object_is_type(funcs, json_type_array) || !json_object_array_length(funcs))
		return 0;
	fprintf(f, "  functions:\n");
	n = json_object_array_length(funcs);
	for (i = 0; i < n; i++) {
		struct json_object *fn = json_object_array_get_idx(funcs, i), *t;
		double tot;

		if (!json_object_is_type(fn, json_type_object))
			continue;
		tot = vj_num(fn, "n_cpu_percent_python") + vj_num(fn, "n_cpu_percent_c") +
		      vj_num(fn, "n_sys_percent");
		fprintf(f, "%6d %6.1f%% %6.1f%% %6.1f%%  ", (int)vj_num(fn, "lineno"),
			vj_num(fn, "n_cpu_percent_python"), vj_num(fn, "n_cpu_percent_c"),
			vj_num(fn, "n_sys_percent"));
		bar(f, tot, 10);
		fputs(" ", f);
		if (json_object_object_get_ex(fn, "line", &t) &&
		    json_object_is_type(t, json_type_string))
			vj_put_safe(f, json_object_get_string(t), src_cols - 11);
		fputc('\n', f);
	}
	return 0;
}

int view_print_cli(struct json_object *doc, FILE *f, FILE *err, const struct view_opts *vo)
{
	double threshold = vo->threshold;
	int all_lines = vo->all_lines, width = vo->width;

	struct json_object *files, *mem, *prog;
	int memory = 0;

	if (!json_object_is_type(doc, json_type_object) ||
	    !json_object_object_get_ex(doc, "files", &files) ||
	    !json_object_is_type(files, json_type_object)) {
		fprintf(err, "scalene-bpf: not a profile: no \"files\" object\n");
		return -EINVAL;
	}
	if (json_object_object_get_ex(doc, "memory", &mem))
		memory =
			json_object_is_type(mem, json_type_boolean) && json_object_get_boolean(mem);
	fputs("program: ", f);
	if (json_object_object_get_ex(doc, "program", &prog) &&
	    json_object_is_type(prog, json_type_string))
		vj_put_safe(f, json_object_get_string(prog), width);
	fprintf(f, "\nelapsed: %.2f s\n", vj_num(doc, "elapsed_time_sec"));
	if (!json_object_object_length(files))
		fprintf(f, "(no file reached the reporting threshold)\n");
	json_object_object_foreach (files, name, fd) {
		if (!json_object_is_type(fd, json_type_object) ||
		    print_file(f, name, fd, threshold, all_lines, width, memory)) {
			fprintf(err, "scalene-bpf: not a profile: file entry ");
			vj_put_safe(err, name, 200);
			fprintf(err, " is malformed\n");
			return -EINVAL;
		}
	}
	return 0;
}

