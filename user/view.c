// SPDX-License-Identifier: BSD-2-Clause
/*
 * The terminal view of a profile (ours or Scalene's): per file, the lines
 * that matter with their Python / native / system time, then the functions.
 * The profile is untrusted input: types are checked before use and source
 * text never sends control characters to the terminal.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <json-c/json.h>

#include "options.h"
#include "utf8.h"
#include "view.h"

#define MAX_PROFILE_BYTES (1ULL << 31)
#define JSON_DEPTH 64

static double num(struct json_object *o, const char *key)
{
	struct json_object *v;
	double d;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return 0;
	d = json_object_get_double(v);
	if (!isfinite(d))
		return 0;
	/* Nothing shown needs more: keeps the printing and the casts to int
	 * defined for any input. */
	return d > 1e9 ? 1e9 : d < -1e9 ? -1e9 : d;
}

/* Writes s to f with control characters (C0, DEL, C1) and invalid UTF-8
 * shown as '?', whole characters only, at most max columns. */
static void put_safe(FILE *f, const char *s, int max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s);
	int cols = 0;

	while (*p && cols < max) {
		size_t n;

		if (*p == '\n' || *p == '\r')
			break;
		n = utf8_seq_len(p, left);
		/* C1 controls, U+0080..U+009F, act as escapes on some terminals. */
		if (n == 2 && p[0] == 0xc2 && p[1] <= 0x9f)
			n = 0;
		if (*p == '\t') {
			fputc(' ', f);
		} else if (n == 0 || *p < 0x20 || *p == 0x7f) {
			fputc('?', f);
			n = n ? n : 1;
		} else {
			fwrite(p, 1, n, f);
		}
		left -= n ? n : 1;
		p += n ? n : 1;
		cols++;
	}
}

/* Scalene stores &, <, > in line text as the literal text \u0026 etc. */
static void unescape_line(const char *s, char *out, size_t n)
{
	size_t o = 0;

	while (*s && o + 1 < n) {
		if (!strncmp(s, "\\u0026", 6) || !strncmp(s, "\\u003c", 6) ||
		    !strncmp(s, "\\u003e", 6)) {
			out[o++] = s[5] == '6' ? '&' : (s[5] == 'c' ? '<' : '>');
			s += 6;
			continue;
		}
		out[o++] = *s++;
	}
	out[o] = '\0';
}

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
	put_safe(f, name, width - 20);
	fprintf(f, ": %.1f%% of the time\n", num(fd, "percent_cpu_time"));
	fprintf(f, "  line  python  native  system %s  source\n",
		memory ? "  avg MB  peak MB  mem%" : "");
	n = json_object_array_length(lines);
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(lines, i), *t;
		double py, c, sys;

		if (!json_object_is_type(l, json_type_object))
			return -EINVAL;
		py = num(l, "n_cpu_percent_python");
		c = num(l, "n_cpu_percent_c");
		sys = num(l, "n_sys_percent");
		if (py + c + sys < (all_lines ? 1e-9 : threshold) &&
		    !(memory && num(l, "n_malloc_mb") > 0))
			continue;
		fprintf(f, "%6d %6.1f%% %6.1f%% %6.1f%% ", (int)num(l, "lineno"), py, c, sys);
		if (memory)
			fprintf(f, "%8.1f %8.1f %4.0f%% ", num(l, "n_avg_mb"), num(l, "n_peak_mb"),
				100 * num(l, "n_usage_fraction"));
		fputs(" ", f);
		text[0] = '\0';
		if (json_object_object_get_ex(l, "line", &t) &&
		    json_object_is_type(t, json_type_string))
			unescape_line(json_object_get_string(t), text, sizeof(text));
		put_safe(f, text, src_cols);
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
		tot = num(fn, "n_cpu_percent_python") + num(fn, "n_cpu_percent_c") +
		      num(fn, "n_sys_percent");
		fprintf(f, "%6d %6.1f%% %6.1f%% %6.1f%%  ", (int)num(fn, "lineno"),
			num(fn, "n_cpu_percent_python"), num(fn, "n_cpu_percent_c"),
			num(fn, "n_sys_percent"));
		bar(f, tot, 10);
		fputs(" ", f);
		if (json_object_object_get_ex(fn, "line", &t) &&
		    json_object_is_type(t, json_type_string))
			put_safe(f, json_object_get_string(t), src_cols - 11);
		fputc('\n', f);
	}
	return 0;
}

int view_print_cli(struct json_object *doc, FILE *f, FILE *err, double threshold, int all_lines,
		   int width)
{
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
		put_safe(f, json_object_get_string(prog), width);
	fprintf(f, "\nelapsed: %.2f s\n", num(doc, "elapsed_time_sec"));
	if (!json_object_object_length(files))
		fprintf(f, "(no file reached the reporting threshold)\n");
	json_object_object_foreach (files, name, fd) {
		if (!json_object_is_type(fd, json_type_object) ||
		    print_file(f, name, fd, threshold, all_lines, width, memory)) {
			fprintf(err, "scalene-bpf: not a profile: file entry ");
			put_safe(err, name, 200);
			fprintf(err, " is malformed\n");
			return -EINVAL;
		}
	}
	return 0;
}

static int term_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col >= 40)
		return ws.ws_col;
	if (cols && atoi(cols) >= 40)
		return atoi(cols);
	return 100;
}

static struct json_object *read_profile(const char *path)
{
	struct json_tokener *tok;
	struct json_object *doc = NULL;
	char buf[65536];
	enum json_tokener_error jerr = json_tokener_continue;
	unsigned long long total = 0;
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f) {
		fprintf(stderr, "scalene-bpf: failed to open %s: %s\n", path, strerror(errno));
		return NULL;
	}
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (!tok) {
		fclose(f);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		total += n;
		if (total > MAX_PROFILE_BYTES)
			break;
		doc = json_tokener_parse_ex(tok, buf, (int)n);
		jerr = json_tokener_get_error(tok);
		if (jerr != json_tokener_continue)
			break;
	}
	if (total == 0)
		fprintf(stderr, "scalene-bpf: %s is empty\n", path);
	else if (total > MAX_PROFILE_BYTES)
		fprintf(stderr, "scalene-bpf: %s is too large to be a profile\n", path);
	else if (jerr == json_tokener_continue)
		fprintf(stderr, "scalene-bpf: %s: truncated JSON\n", path);
	else if (jerr != json_tokener_success)
		fprintf(stderr, "scalene-bpf: %s is not valid JSON: %s\n", path,
			json_tokener_error_desc(jerr));
	if (total == 0 || total > MAX_PROFILE_BYTES || jerr != json_tokener_success) {
		json_object_put(doc);
		doc = NULL;
	}
	json_tokener_free(tok);
	fclose(f);
	return doc;
}

int view_main(const struct options *o)
{
	struct json_object *doc;
	int err;

	if (!o->view_cli)
		fprintf(stderr,
			"scalene-bpf: the HTML view is not built yet; showing the "
			"terminal view (for the browser view: scalene view %s)\n",
			o->view_file);
	doc = read_profile(o->view_file);
	if (!doc)
		return 1;
	err = view_print_cli(doc, stdout, stderr, o->cpu_percent_threshold, o->view_all_lines,
			     term_width());
	json_object_put(doc);
	return err ? 1 : 0;
}
