// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "output.h"
#include "profile.h"
#include "regions.h"
#include "utf8.h"

static const char *const memory_zero_fields[] = {
	"n_avg_mb",	     "n_copy_mb_s",	 "n_gpu_avg_memory_mb", "n_gpu_peak_memory_mb",
	"n_gpu_percent",     "n_growth_mb",	 "n_malloc_mb",		"n_peak_mb",
	"n_python_fraction", "n_usage_fraction",
};

double finite_or_zero(double x)
{
	return isfinite(x) ? x : 0.0;
}

static struct json_object *jdouble(double x)
{
	return json_object_new_double(finite_or_zero(x));
}

char *utf8_sanitize(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(len * 3 + 1), *o = out;
	size_t i = 0, n;

	if (!out)
		return NULL;
	while (i < len) {
		n = utf8_seq_len(u + i, len - i);
		if (n == 0 || (n == 1 && u[i] == 0)) {
			memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD */
			o += 3;
			i++;
			continue;
		}
		memcpy(o, u + i, n);
		o += n;
		i += n;
	}
	*o = '\0';
	return out;
}

char *scalene_line_text(const char *s, size_t len)
{
	char *clean = utf8_sanitize(s, len), *out, *o;
	const char *c;

	if (!clean)
		return NULL;
	out = malloc(strlen(clean) * 6 + 1);
	if (!out) {
		free(clean);
		return NULL;
	}
	for (c = clean, o = out; *c; c++) {
		if (*c == '&' || *c == '<' || *c == '>') {
			o += snprintf(o, 7, "\\u%04x", (unsigned char)*c);
			continue;
		}
		*o++ = *c;
	}
	*o = '\0';
	free(clean);
	return out;
}

static struct json_object *jstring(const char *s)
{
	char *clean = utf8_sanitize(s ? s : "", s ? strlen(s) : 0);
	struct json_object *o;

	if (!clean)
		return NULL;
	o = json_object_new_string(clean);
	free(clean);
	return o;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The fields common to lines and functions (Scalene's FunctionDetail). */
static void put_stats(struct json_object *o, const struct line_stats *st, double total,
		      bool with_times)
{
	double py = 0, c = 0, sys = 0, util = 0, sum;
	struct json_object *times = json_object_new_array();
	size_t i;

	if (st && total > 0) {
		py = 100.0 * st->python_ns / total;
		c = 100.0 * st->native_ns / total;
		sys = 100.0 * st->system_ns / total;
		util = st->util_n ? st->util_sum / st->util_n : 0;
	}
	/* Rounding must never push a line past Scalene's floor(sum) <= 100. */
	sum = py + c + sys;
	if (sum > 100.0) {
		py *= 100.0 / sum;
		c *= 100.0 / sum;
		sys *= 100.0 / sum;
	}
	json_object_object_add(o, "n_cpu_percent_python", jdouble(py));
	json_object_object_add(o, "n_cpu_percent_c", jdouble(c));
	json_object_object_add(o, "n_sys_percent", jdouble(sys));
	json_object_object_add(o, "n_core_utilization", jdouble(util > 1 ? 1 : util));
	for (i = 0; i < sizeof(memory_zero_fields) / sizeof(memory_zero_fields[0]); i++)
		json_object_object_add(o, memory_zero_fields[i], json_object_new_double(0));
	json_object_object_add(o, "n_mallocs", json_object_new_int(0));
	json_object_object_add(o, "memory_samples", json_object_new_array());
	if (with_times && st && st->ncpu_times) {
		double sorted[CPU_SAMPLES_RESERVOIR];

		memcpy(sorted, st->cpu_times, st->ncpu_times * sizeof(double));
		qsort(sorted, st->ncpu_times, sizeof(double), cmp_double);
		for (i = 0; i < st->ncpu_times; i++)
			json_object_array_add(times, jdouble(sorted[i]));
	}
	json_object_object_add(o, "cpu_samples_list", times);
	if (st && total > 0) {
		json_object_object_add(o, "n_blocked_percent",
				       jdouble(100.0 * st->blocked_ns / total));
	}
	if (st && st->nsyms) {
		struct json_object *syms = json_object_new_array();
		int k;

		for (k = 0; k < st->nsyms; k++) {
			struct json_object *s = json_object_new_object();

			json_object_object_add(s, "symbol", jstring(st->syms[k].name));
			json_object_object_add(s, "module", jstring(st->syms[k].module));
			json_object_object_add(
				s, "percent",
				jdouble(total > 0 ? 100.0 * st->syms[k].ns / total : 0));
			json_object_array_add(syms, s);
		}
		json_object_object_add(o, "native_symbols", syms);
	}
}

/* Splits src into lines, keeping each '\n'. */
static int split_lines(const char *src, size_t len, const char ***starts, size_t **lens)
{
	size_t i, n = 0, cap = 64, begin = 0;

	*starts = malloc(cap * sizeof(**starts));
	*lens = malloc(cap * sizeof(**lens));
	if (!*starts || !*lens)
		return -ENOMEM;
	for (i = 0; i <= len; i++) {
		if (i < len && src[i] != '\n')
			continue;
		if (i == len && begin == len)
			break;
		if (n == cap) {
			cap *= 2;
			*starts = realloc(*starts, cap * sizeof(**starts));
			*lens = realloc(*lens, cap * sizeof(**lens));
			if (!*starts || !*lens)
				return -ENOMEM;
		}
		(*starts)[n] = src + begin;
		(*lens)[n] = (i < len ? i + 1 : i) - begin;
		n++;
		begin = i + 1;
	}
	return (int)n;
}

static struct json_object *build_line(const struct file_stats *f, int lineno, const char *text,
				      size_t len, const struct regions *r, int nlines, double total)
{
	const struct line_stats *st = lineno < f->nlines ? f->lines[lineno] : NULL;
	const struct line_regions *lr = r ? regions__line(r, lineno) : NULL;
	struct json_object *o = json_object_new_object();
	char *t = scalene_line_text(text, len);
	int sr = lineno, er = lineno, so = lineno, eo = lineno, sf = 0, ef = 0;

	if (lr) {
		sr = lr->start_region, er = lr->end_region;
		so = lr->start_outermost_loop, eo = lr->end_outermost_loop;
		sf = lr->start_function, ef = lr->end_function;
	}
	/* The GUI reads lines[start .. end) directly: never past the end. */
	if (sr < 1 || er > nlines || sr > er)
		sr = er = lineno;
	if (so < 1 || eo > nlines || so > eo)
		so = eo = lineno;
	if (sf < 0 || ef > nlines || sf > ef)
		sf = ef = 0;
	json_object_object_add(o, "lineno", json_object_new_int(lineno));
	json_object_object_add(o, "line", json_object_new_string(t ? t : ""));
	free(t);
	put_stats(o, st, total, true);
	json_object_object_add(o, "start_region_line", json_object_new_int(sr));
	json_object_object_add(o, "end_region_line", json_object_new_int(er));
	json_object_object_add(o, "start_outermost_loop", json_object_new_int(so));
	json_object_object_add(o, "end_outermost_loop", json_object_new_int(eo));
	json_object_object_add(o, "start_function_line", json_object_new_int(sf));
	json_object_object_add(o, "end_function_line", json_object_new_int(ef));
	return o;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func_stats *x = *(const struct func_stats *const *)a;
	const struct func_stats *y = *(const struct func_stats *const *)b;

	if (x->firstlineno != y->firstlineno)
		return (x->firstlineno > y->firstlineno) - (x->firstlineno < y->firstlineno);
	return strcmp(x->qualname, y->qualname);
}

static struct json_object *build_file(const struct file_stats *f, const struct output_meta *m,
				      double total)
{
	struct json_object *o = json_object_new_object(), *lines, *funcs;
	const char **starts = NULL;
	size_t *lens = NULL, srclen = 0;
	char *src = m->read_source ? m->read_source(m->ctx, f->path, &srclen) : NULL;
	struct regions *r = NULL;
	const struct func_stats **sorted;
	int n = 0, i, nlines, last;

	if (src) {
		n = split_lines(src, srclen, &starts, &lens);
		if (n < 0)
			n = 0;
		r = regions__compute(src, srclen);
	}
	/* Lines sampled past the end of the file as read now (it changed or
	 * vanished): keep their data on empty rows rather than lose it. */
	for (last = f->nlines - 1; last > 0 && !f->lines[last]; last--)
		;
	nlines = n > last ? n : last;
	lines = json_object_new_array_ext(nlines);
	for (i = 1; i <= nlines; i++) {
		json_object_array_add(lines, build_line(f, i, i <= n ? starts[i - 1] : "",
							i <= n ? lens[i - 1] : 0, i <= n ? r : NULL,
							nlines, total));
	}
	funcs = json_object_new_array();
	sorted = malloc((f->nfuncs ? f->nfuncs : 1) * sizeof(*sorted));
	if (sorted) {
		if (f->nfuncs)
			memcpy(sorted, f->funcs, f->nfuncs * sizeof(*sorted));
		qsort(sorted, f->nfuncs, sizeof(*sorted), cmp_func);
		for (i = 0; i < f->nfuncs; i++) {
			struct json_object *fo = json_object_new_object();

			json_object_object_add(fo, "line", jstring(sorted[i]->qualname));
			json_object_object_add(fo, "lineno",
					       json_object_new_int(sorted[i]->firstlineno > 0
									   ? sorted[i]->firstlineno
									   : 1));
			put_stats(fo, &sorted[i]->st, total, false);
			json_object_array_add(funcs, fo);
		}
		free(sorted);
	}
	json_object_object_add(o, "functions", funcs);
	json_object_object_add(o, "imports", json_object_new_array());
	json_object_object_add(o, "leaks", json_object_new_object());
	json_object_object_add(o, "lines", lines);
	json_object_object_add(o, "percent_cpu_time",
			       jdouble(total > 0 ? 100.0 * f->cpu_ns / total : 0));
	if (!src)
		json_object_object_add(o, "source_unavailable", json_object_new_boolean(1));
	regions__free(r);
	free(starts);
	free(lens);
	free(src);
	return o;
}

static char *frame_string(const struct frame_ref *fr)
{
	size_t n = strlen(fr->filename) + strlen(fr->qualname) + 32;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s %s:%d;", fr->filename, fr->qualname, fr->line);
	return s;
}

static struct json_object *py_frame_obj(const struct frame_ref *fr)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "kind", json_object_new_string("py"));
	json_object_object_add(o, "display_name", jstring(fr->qualname));
	json_object_object_add(o, "filename_or_module", jstring(fr->filename));
	json_object_object_add(o, "line", json_object_new_int(fr->line > 0 ? fr->line : 1));
	json_object_object_add(o, "ip", NULL);
	json_object_object_add(o, "offset", NULL);
	return o;
}

static void build_stacks(struct json_object *doc, const struct profile *p, double total)
{
	struct json_object *stacks = json_object_new_array();
	struct json_object *combined = json_object_new_array();
	int i, j;

	for (i = 0; i < profile__nstacks(p); i++) {
		const struct stack_stats *st = profile__stack(p, i);
		struct json_object *frames = json_object_new_array();
		struct json_object *cframes = json_object_new_array();
		struct json_object *entry, *stats, *centry;

		for (j = 0; j < st->nframes; j++) {
			char *s = frame_string(&st->frames[j]);

			json_object_array_add(frames, jstring(s));
			free(s);
			json_object_array_add(cframes, py_frame_obj(&st->frames[j]));
		}
		if (st->native_sym) {
			struct json_object *nf = json_object_new_object();

			json_object_object_add(nf, "kind", json_object_new_string("native"));
			json_object_object_add(nf, "display_name", jstring(st->native_sym));
			json_object_object_add(nf, "filename_or_module",
					       jstring(st->native_module));
			json_object_object_add(nf, "line", NULL);
			json_object_object_add(nf, "ip", NULL);
			json_object_object_add(nf, "offset", NULL);
			json_object_array_add(cframes, nf);
		}
		stats = json_object_new_object();
		json_object_object_add(stats, "count", json_object_new_int64(st->count));
		json_object_object_add(stats, "python_time",
				       jdouble(total > 0 ? st->python_ns / total : 0));
		json_object_object_add(stats, "c_time",
				       jdouble(total > 0 ? st->native_ns / total : 0));
		json_object_object_add(
			stats, "cpu_samples",
			jdouble(total > 0 ? (st->python_ns + st->native_ns + st->system_ns) / total
					  : 0));
		entry = json_object_new_array();
		json_object_array_add(entry, frames);
		json_object_array_add(entry, stats);
		json_object_array_add(stacks, entry);
		centry = json_object_new_array();
		json_object_array_add(centry, cframes);
		json_object_array_add(centry, json_object_new_int64(st->count));
		json_object_array_add(combined, centry);
	}
	json_object_object_add(doc, "stacks", stacks);
	json_object_object_add(doc, "combined_stacks", combined);
}

static bool file_reported(const struct file_stats *f, const struct output_meta *m, double total)
{
	if (total <= 0)
		return false;
	return 100.0 * f->total_ns / total >= m->cpu_percent_threshold;
}

struct json_object *output_build(const struct profile *p, const struct output_meta *m)
{
	struct json_object *doc = json_object_new_object(), *files, *args;
	double total = profile__total_ns(p);
	int i;

	if (!doc)
		return NULL;
	json_object_object_add(doc, "alloc_samples", json_object_new_int(0));
	args = json_object_new_array();
	for (i = 0; i < m->nargs; i++)
		json_object_array_add(args, jstring(m->args[i]));
	json_object_object_add(doc, "args", args);
	json_object_object_add(doc, "async_profile", json_object_new_boolean(0));
	json_object_object_add(doc, "elapsed_time_sec", jdouble(m->elapsed_sec));
	json_object_object_add(doc, "start_time_absolute", jdouble(m->start_time_absolute));
	json_object_object_add(doc, "start_time_perf", jdouble(m->start_time_perf));
	json_object_object_add(doc, "entrypoint_dir", jstring(m->program_dir));
	json_object_object_add(doc, "filename", jstring(m->program_dir));
	json_object_object_add(doc, "program", jstring(m->program));
	json_object_object_add(doc, "gpu", json_object_new_boolean(0));
	json_object_object_add(doc, "gpu_device", json_object_new_string(""));
	json_object_object_add(doc, "growth_rate", json_object_new_double(0));
	json_object_object_add(doc, "max_footprint_fname", NULL);
	json_object_object_add(doc, "max_footprint_lineno", NULL);
	json_object_object_add(doc, "max_footprint_mb", json_object_new_double(0));
	json_object_object_add(doc, "max_footprint_python_fraction", json_object_new_double(0));
	json_object_object_add(doc, "memory", json_object_new_boolean(0));
	json_object_object_add(doc, "memory_stacks", json_object_new_array());
	json_object_object_add(doc, "samples", json_object_new_array());
	json_object_object_add(doc, "native_allocations_mb", json_object_new_double(0));
	json_object_object_add(doc, "combined_stacks_timeline", json_object_new_array());
	json_object_object_add(doc, "main_thread_id",
			       m->main_thread_id ? json_object_new_int64((int64_t)m->main_thread_id)
						 : NULL);
	files = json_object_new_object();
	for (i = 0; i < profile__nfiles(p); i++) {
		const struct file_stats *f = profile__file(p, i);
		char *key;

		if (!file_reported(f, m, total))
			continue;
		key = utf8_sanitize(f->path, strlen(f->path));
		if (!key)
			continue;
		json_object_object_add(files, key, build_file(f, m, total));
		free(key);
	}
	json_object_object_add(doc, "files", files);
	build_stacks(doc, p, total);
	if (m->extra)
		json_object_object_add(doc, "scalene_bpf", json_object_get(m->extra));
	return doc;
}

char *output_to_string(struct json_object *doc)
{
	const char *s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
								    JSON_C_TO_STRING_SPACED |
								    JSON_C_TO_STRING_NOSLASHESCAPE);

	size_t n = 0;
	const char *c;
	char *out, *o;

	if (!s)
		return NULL;
	for (c = s; (c = strstr(c, "</")); c++)
		n++;
	out = malloc(strlen(s) + n + 1);
	if (!out)
		return NULL;
	for (c = s, o = out; *c; c++) {
		*o++ = *c;
		if (c[0] == '<' && c[1] == '/')
			*o++ = '\\';
	}
	*o = '\0';
	return out;
}
