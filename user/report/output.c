// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "report/output.h"
#include "model/profile.h"
#include "report/regions.h"
#include "model/stackbound.h"
#include "target/target.h"
#include "base/hmap.h"
#include "base/utf8.h"

#define MB (1024.0 * 1024.0)
/* Scalene's leak report: likelihood by the rule of succession at least
 * this, and the program's footprint growing by at least this percent. */
#define LEAK_LIKELIHOOD 0.95
#define LEAK_GROWTH_PERCENT 1.0
/* A file is reported with this much sampled allocation, whatever its time. */
#define FILE_MALLOC_THRESHOLD_MB 1.0
/* Stacks written (stackbound.h): whole, merged entries, frames in all, for
 * the CPU and the memory stacks each. */
#define STACKS_WHOLE 200
#define STACKS_MERGED 1000
#define STACK_FRAMES 10000

/* What every line and function needs to put itself in proportion. */
struct out_ctx {
	const struct profile *p;
	const struct output_meta *m;
	const struct profile_memory *pm;
	double total; /* ns of sampled time */
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
	return utf8_clean(s, len, 0);
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

/* Every string of a tree of facts as valid UTF-8, in place: names that come
 * from the programs (thread and process names, paths) may hold any bytes. */
static void clean_strings(struct json_object *o);

static void clean_value(struct json_object *v)
{
	char *c;

	if (!json_object_is_type(v, json_type_string)) {
		clean_strings(v);
		return;
	}
	if (utf8_is_clean(json_object_get_string(v), 0))
		return;
	c = utf8_sanitize(json_object_get_string(v), json_object_get_string_len(v));
	if (c)
		json_object_set_string(v, c);
	free(c);
}

static void clean_strings(struct json_object *o)
{
	size_t i, n;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach (o, key, v) {
			(void)key;
			clean_value(v);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		n = json_object_array_length(o);
		for (i = 0; i < n; i++)
			clean_value(json_object_array_get_idx(o, i));
	}
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

/* Where the document goes: collected into one json-c object (output_build),
 * or written piece by piece to a file (output_write), each line, stack and
 * small field serialised by json-c and freed at once, so that at most one
 * file's functions or one line's objects exist at a time, or both (written
 * and kept, for a caller that goes on to use the document).  All get the
 * same calls, so all hold the same content. */
#define SINK_DEPTH 4
#define SINK_BUF (1 << 20)

struct sink {
	/* Collecting: the open containers, the document first. */
	struct json_object *open[SINK_DEPTH];
	bool collecting;
	/* Writing: */
	bool array[SINK_DEPTH], first[SINK_DEPTH];
	int depth;
	bool writing;
	int fd;
	char *buf;
	size_t len;
	int err;
};

static void sink_flush(struct sink *s)
{
	size_t off = 0;

	while (!s->err && off < s->len) {
		ssize_t n = write(s->fd, s->buf + off, s->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			s->err = n < 0 ? -errno : -EIO;
		else
			off += n;
	}
	s->len = 0;
}

/* Appends text, "</" written "<\/" so that a profile pasted into a <script>
 * cannot end it. */
static void sink_put(struct sink *s, const char *t)
{
	for (; *t && !s->err; t++) {
		if (s->len + 2 > SINK_BUF)
			sink_flush(s);
		s->buf[s->len++] = *t;
		if (t[0] == '<' && t[1] == '/')
			s->buf[s->len++] = '\\';
	}
}

static void sink_value_text(struct sink *s, struct json_object *v)
{
	sink_put(s, v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_SPACED |
								  JSON_C_TO_STRING_NOSLASHESCAPE)
		      : "null");
}

/* The separator, indentation and key of the next member. */
static void sink_member(struct sink *s, const char *key)
{
	int i;

	sink_put(s, s->first[s->depth - 1] ? "\n" : ",\n");
	s->first[s->depth - 1] = false;
	for (i = 0; i < s->depth; i++)
		sink_put(s, "  ");
	if (!s->array[s->depth - 1]) {
		struct json_object *k = json_object_new_string(key);

		sink_value_text(s, k);
		json_object_put(k);
		sink_put(s, ": ");
	}
}

/* Collecting: val goes into the innermost open container, under key
 * (ignored in an array); takes the reference. */
static void sink_collect(struct sink *s, const char *key, struct json_object *val)
{
	struct json_object *top = s->open[s->depth - 1];

	if (json_object_is_type(top, json_type_array))
		json_object_array_add(top, val);
	else
		json_object_object_add(top, key, val);
}

/* Adds val under key (ignored in an array); takes the reference. */
static void sink_add(struct sink *s, const char *key, struct json_object *val)
{
	if (s->writing) {
		sink_member(s, key);
		sink_value_text(s, val);
	}
	if (s->collecting)
		sink_collect(s, key, val);
	else
		json_object_put(val);
}

static void sink_open(struct sink *s, const char *key, bool array)
{
	struct json_object *c = NULL;

	if (s->depth >= SINK_DEPTH) {
		s->err = -EINVAL;
		return;
	}
	if (s->collecting) {
		c = array ? json_object_new_array() : json_object_new_object();
		sink_collect(s, key, c);
	}
	if (s->writing) {
		sink_member(s, key);
		sink_put(s, array ? "[" : "{");
	}
	s->open[s->depth] = c;
	s->array[s->depth] = array;
	s->first[s->depth] = true;
	s->depth++;
}

static void sink_close(struct sink *s)
{
	int i;

	if (s->depth <= 1)
		return;
	s->depth--;
	if (!s->writing)
		return;
	if (!s->first[s->depth]) {
		sink_put(s, "\n");
		for (i = 0; i < s->depth; i++)
			sink_put(s, "  ");
	}
	sink_put(s, s->array[s->depth] ? "]" : "}");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static struct json_object *series_json(const struct mem_series *s, const struct out_ctx *c)
{
	struct json_object *a = json_object_new_array();
	double t[MEM_SERIES_MAX], y[MEM_SERIES_MAX], t0 = c->m->start_time_perf * 1e9;
	int i, n = s ? mem_series__points(s, t, y) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *pt = json_object_new_array();
		double dt = t[i] - t0;

		json_object_array_add(pt, json_object_new_int64(dt > 0 ? (int64_t)dt : 0));
		json_object_array_add(pt, jdouble(y[i] / MB));
		json_object_array_add(a, pt);
	}
	return a;
}

static void put_memory(struct json_object *o, const struct mem_stats *ms, const struct out_ctx *c)
{
	double peak = 0, avg = 0, pyf = 0, usage = 0, copy = 0, malloc_mb = 0;
	uint64_t mallocs = 0;

	if (c->m->memory && ms) {
		peak = ms->peak;
		/* A line's peak never above the program's (the footprint is not
		 * known from uprobes: peaks are then bytes per execution). */
		if (!c->m->no_footprint && peak > c->pm->max_footprint)
			peak = c->pm->max_footprint;
		avg = mem_stats__avg(ms);
		if (avg > peak)
			avg = peak;
		/* Net growth, as Scalene means it (profile.h); the churn is in
		 * scalene_bpf.allocation_churn. */
		malloc_mb = ms->net_bytes / MB;
		mallocs = mem_stats__mallocs(ms);
		pyf = ms->net_bytes > 0 ? ms->net_python_bytes / ms->net_bytes : 0;
		usage = c->pm->net_bytes > 0 ? ms->net_bytes / c->pm->net_bytes : 0;
		copy = c->m->elapsed_sec > 0 ? ms->copy_bytes / MB / c->m->elapsed_sec : 0;
	}
	json_object_object_add(o, "n_malloc_mb", jdouble(malloc_mb));
	json_object_object_add(o, "n_mallocs", json_object_new_int64((int64_t)mallocs));
	json_object_object_add(o, "n_avg_mb", jdouble(avg / MB));
	json_object_object_add(o, "n_peak_mb", jdouble(peak / MB));
	json_object_object_add(o, "n_growth_mb", jdouble(peak / MB));
	json_object_object_add(o, "n_python_fraction", jdouble(pyf > 1 ? 1 : pyf));
	json_object_object_add(o, "n_usage_fraction", jdouble(usage > 1 ? 1 : usage));
	json_object_object_add(o, "n_copy_mb_s", jdouble(copy));
	json_object_object_add(
		o, "memory_samples",
		series_json(c->m->memory && !c->m->no_footprint && ms ? &ms->series : NULL, c));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Scalene's await fields: the line's share of all await time, the tasks
 * suspended with one waiting here (mean, peak), and their names, sorted. */
static void put_await(struct json_object *o, const struct await_stats *aw, const struct out_ctx *c)
{
	double all = profile__await_ns(c->p);
	struct json_object *names = json_object_new_array();
	const char *sorted[AWAIT_NAMES_MAX];
	int i;

	json_object_object_add(o, "n_async_await_percent",
			       jdouble(aw && all > 0 ? 100.0 * aw->ns / all : 0));
	json_object_object_add(o, "n_async_concurrency_mean",
			       jdouble(aw && aw->conc_n ? aw->conc_sum / aw->conc_n : 0));
	json_object_object_add(o, "n_async_concurrency_peak", jdouble(aw ? aw->conc_peak : 0));
	if (aw) {
		memcpy(sorted, aw->names, aw->nnames * sizeof(*sorted));
		qsort(sorted, aw->nnames, sizeof(*sorted), cmp_str);
		for (i = 0; i < aw->nnames; i++)
			json_object_array_add(names, jstring(sorted[i]));
	}
	json_object_object_add(o, "async_task_names", names);
}

/* Scalene's GPU fields: the GPU's use while the line ran (profile.h). */
static void put_gpu(struct json_object *o, const struct gpu_stats *g)
{
	bool on = g && g->weight > 0;
	double util = on ? 100.0 * g->util_sum / g->weight : 0;
	double avg = on ? g->mem_sum / g->weight / MB : 0, peak = on ? g->mem_peak / MB : 0;

	json_object_object_add(o, "n_gpu_avg_memory_mb", jdouble(avg > peak ? peak : avg));
	json_object_object_add(o, "n_gpu_peak_memory_mb", jdouble(peak));
	json_object_object_add(o, "n_gpu_percent", jdouble(util > 100 ? 100 : util));
}

/* The fields common to lines and functions (Scalene's FunctionDetail). */
static void put_stats(struct json_object *o, const struct line_stats *st, const struct out_ctx *cx,
		      bool with_times)
{
	double py = 0, c = 0, sys = 0, util = 0, sum, total = cx->total;
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
	put_gpu(o, st ? st->gpu : NULL);
	put_memory(o, st ? st->mem : NULL, cx);
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
		/* Of the blocked time, the part spent waiting for the GIL. */
		json_object_object_add(o, "n_gil_wait_percent",
				       jdouble(100.0 * st->gil_ns / total));
		/* Of the CPU time, the part spent collecting garbage. */
		json_object_object_add(o, "n_gc_percent", jdouble(100.0 * st->gc_ns / total));
		/* Of the CPU time, the part run holding the GIL while another
		 * thread of the process was alive. */
		json_object_object_add(o, "n_gil_held_percent",
				       jdouble(100.0 * st->gil_held_ns / total));
	}
	if (cx->m->async_waits)
		put_await(o, st ? st->aw : NULL, cx);
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
				      size_t len, const struct regions *r, int nlines,
				      const struct out_ctx *c)
{
	/* With @profile, lines outside the decorated functions get no data
	 * (Scalene's rule); what ran there before a decorator did is left out. */
	const struct line_stats *st =
		lineno < f->nlines && profile__line_reported(c->p, f->path, lineno)
			? f->lines[lineno]
			: NULL;
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
	put_stats(o, st, c, true);
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

static double growth_rate(const struct profile_memory *pm)
{
	/* Scalene's growth rate is the net footprint change over its net
	 * malloc samples; here the change the program made, teardown left out.
	 * Lines keep up to a window each without a sample: at most 100. */
	double r = pm->net_bytes > 0 ? 100.0 * pm->held_bytes / pm->net_bytes : 0;

	return r > 100 ? 100 : r;
}

/* Lines whose sampled blocks mostly outlived the program or are still
 * live, while the footprint grew: Scalene's leak rule, on the exact set of
 * sampled blocks followed to their frees. */
static struct json_object *build_leaks(const struct file_stats *f, const struct out_ctx *c)
{
	struct json_object *leaks = json_object_new_object();
	int i;

	if (!c->m->memory || !c->m->leaks || c->m->no_footprint ||
	    growth_rate(c->pm) < LEAK_GROWTH_PERCENT)
		return leaks;
	for (i = 1; i < f->nlines; i++) {
		const struct mem_stats *ms = f->lines[i] ? f->lines[i]->mem : NULL;
		struct json_object *l;
		double likelihood;
		char key[16];

		/* Scalene scores only lines that made the footprint grow. */
		if (!ms || !ms->tracked || ms->live_bytes <= 0 || !ms->net_samples ||
		    !profile__line_reported(c->p, f->path, i))
			continue;
		likelihood = 1.0 - (double)(ms->reclaimed + 1) / (ms->tracked - ms->reclaimed + 2);
		if (likelihood < LEAK_LIKELIHOOD)
			continue;
		l = json_object_new_object();
		json_object_object_add(l, "likelihood", jdouble(likelihood));
		json_object_object_add(l, "velocity_mb_s",
				       jdouble(c->m->elapsed_sec > 0
						       ? ms->live_bytes / MB / c->m->elapsed_sec
						       : 0));
		snprintf(key, sizeof(key), "%d", i);
		json_object_object_add(leaks, key, l);
	}
	return leaks;
}

/* The sampled time of a file's reported lines (all of them without
 * @profile). */
static double file_total_ns(const struct profile *p, const struct file_stats *f)
{
	double ns = 0;
	int i;

	if (!profile__ndecorated(p))
		return f->total_ns;
	for (i = 1; i < f->nlines; i++) {
		if (f->lines[i] && profile__line_reported(p, f->path, i))
			ns += f->lines[i]->python_ns + f->lines[i]->native_ns +
			      f->lines[i]->system_ns;
	}
	return ns;
}

/* A file's text: the code of a -c program for its file, else the reader's. */
static char *source_of(const struct output_meta *m, const char *path, size_t *len, double *mtime)
{
	char *src;

	if (m->command && !strcmp(path, TARGET_COMMAND_FILE)) {
		src = strdup(m->command);
		*len = src ? strlen(src) : 0;
		return src;
	}
	return m->read_source ? m->read_source(m->ctx, path, len, mtime) : NULL;
}

static void build_file(struct sink *snk, const char *key, const struct file_stats *f,
		       const struct out_ctx *c)
{
	const struct output_meta *m = c->m;
	double total = c->total;
	struct json_object *funcs;
	const char **starts = NULL;
	size_t *lens = NULL, srclen = 0;
	double mtime = 0;
	char *src = source_of(m, f->path, &srclen, &mtime);
	struct regions *r = NULL;
	const struct func_stats **sorted;
	int n = 0, i, nlines, last;

	if (src) {
		n = split_lines(src, srclen, &starts, &lens);
		if (n < 0)
			n = 0;
		r = regions__compute(src, srclen);
	}
	sink_open(snk, key, false);
	funcs = json_object_new_array();
	sorted = malloc((f->nfuncs ? f->nfuncs : 1) * sizeof(*sorted));
	if (sorted) {
		if (f->nfuncs)
			memcpy(sorted, f->funcs, f->nfuncs * sizeof(*sorted));
		qsort(sorted, f->nfuncs, sizeof(*sorted), cmp_func);
		for (i = 0; i < f->nfuncs; i++) {
			struct json_object *fo;

			if (profile__ndecorated(c->p) &&
			    !profile__is_decorated(c->p, f->path, sorted[i]->firstlineno))
				continue;
			fo = json_object_new_object();

			json_object_object_add(fo, "line", jstring(sorted[i]->qualname));
			json_object_object_add(fo, "lineno",
					       json_object_new_int(sorted[i]->firstlineno > 0
									   ? sorted[i]->firstlineno
									   : 1));
			put_stats(fo, &sorted[i]->st, c, false);
			json_object_array_add(funcs, fo);
		}
		free(sorted);
	}
	sink_add(snk, "functions", funcs);
	sink_add(snk, "imports", json_object_new_array());
	sink_add(snk, "leaks", build_leaks(f, c));
	/* Lines sampled past the end of the file as read now (it changed or
	 * vanished): keep their data on empty rows rather than lose it. */
	for (last = f->nlines - 1; last > 0 && !f->lines[last]; last--)
		;
	nlines = n > last ? n : last;
	sink_open(snk, "lines", true);
	for (i = 1; i <= nlines; i++) {
		sink_add(snk, NULL,
			 build_line(f, i, i <= n ? starts[i - 1] : "", i <= n ? lens[i - 1] : 0,
				    i <= n ? r : NULL, nlines, c));
	}
	sink_close(snk);
	/* Scalene's meaning: the file's sampled time before the split into
	 * Python, native and system, i.e. the sum of its lines' three shares. */
	sink_add(snk, "percent_cpu_time",
		 jdouble(total > 0 ? 100.0 * file_total_ns(c->p, f) / total : 0));
	if (!src)
		sink_add(snk, "source_unavailable", json_object_new_boolean(1));
	/* Written to while the program ran: the text may not be what ran. */
	else if (m->start_time_absolute > 0 && mtime > m->start_time_absolute)
		sink_add(snk, "source_changed", json_object_new_boolean(1));
	sink_close(snk);
	regions__free(r);
	free(starts);
	free(lens);
	free(src);
}

static char *frame_string(const struct frame_ref *fr)
{
	size_t n = strlen(fr->filename) + strlen(fr->qualname) + 32;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s %s:%d;", fr->filename, fr->qualname, fr->line);
	return s;
}

/* A native or kernel frame of a whole stack (--native), as Scalene writes a
 * native frame: its symbol, its object file ("[kernel]" for the kernel's),
 * the address it had in the stack's first sample. */
static struct json_object *native_ref_obj(const struct frame_ref *fr, uint64_t ip)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "kind", json_object_new_string("native"));
	json_object_object_add(o, "display_name", jstring(fr->qualname));
	json_object_object_add(o, "filename_or_module", jstring(fr->filename));
	json_object_object_add(o, "line", NULL);
	json_object_object_add(o, "ip", ip ? json_object_new_int64((int64_t)ip) : NULL);
	json_object_object_add(o, "offset", NULL);
	return o;
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

/*
 * A document's stacks share their frames: the outer ones recur in every
 * stack below them.  Each distinct frame's two forms (the "py" object and
 * the legacy "file qualname:line;" string) are made once per document and
 * the stacks take references to them (json-c counts them), so a few hundred
 * stacks make a few dozen frame objects, not thousands.  Keyed by the
 * profile's interned names.
 */
struct frame_key {
	const char *filename, *qualname;
	int line;
};

struct frame_json {
	struct json_object *obj, *str;
};

static struct hmap *frame_cache_new(void)
{
	return hmap__new(sizeof(struct frame_key));
}

static void frame_cache_free(struct hmap *cache)
{
	size_t it = 0;
	void *v;

	while (cache && hmap__next(cache, &it, NULL, &v)) {
		struct frame_json *fj = v;

		json_object_put(fj->obj);
		json_object_put(fj->str);
		free(fj);
	}
	hmap__free(cache);
}

/* The frame's entry in cache (made on first use), or NULL without one. */
static struct frame_json *frame_cached(struct hmap *cache, const struct frame_ref *fr)
{
	struct frame_key k;
	struct frame_json *fj;

	if (!cache)
		return NULL;
	memset(&k, 0, sizeof(k));
	k.filename = fr->filename;
	k.qualname = fr->qualname;
	k.line = fr->line;
	fj = hmap__get(cache, &k);
	if (fj)
		return fj;
	fj = calloc(1, sizeof(*fj));
	if (!fj || hmap__put(cache, &k, fj)) {
		free(fj);
		return NULL;
	}
	return fj;
}

/* ip: a native frame's address (the first stack's to make the frame's
 * object keeps its own). */
static struct json_object *frame_obj_of(struct hmap *cache, const struct frame_ref *fr, uint64_t ip)
{
	struct frame_json *fj = frame_cached(cache, fr);
	bool native = frame_ref_native(fr);

	if (!fj)
		return native ? native_ref_obj(fr, ip) : py_frame_obj(fr);
	if (!fj->obj)
		fj->obj = native ? native_ref_obj(fr, ip) : py_frame_obj(fr);
	return json_object_get(fj->obj);
}

static struct json_object *frame_str_of(struct hmap *cache, const struct frame_ref *fr)
{
	struct frame_json *fj = frame_cached(cache, fr);
	struct json_object *o;
	char *s;

	if (fj && fj->str)
		return json_object_get(fj->str);
	s = frame_string(fr);
	o = jstring(s);
	free(s);
	if (fj)
		fj->str = json_object_get(o);
	return o;
}

/* The outermost frame of a stack deeper than the walker goes: what is
 * above it was not seen, and is not guessed. */
#define TRUNCATED_FRAME "[truncated]"

/* The innermost frame of an entry that stands for deeper stacks merged into
 * their outermost frames (stackbound.h), and of the one entry of all the
 * stacks not written whole when no cut fits. */
#define MERGED_FRAME "[deeper frames merged]"
#define ALL_MERGED_FRAME "[stacks merged]"
/* The stack of the samples whose stacks found the table full
 * (scalene_bpf.bpf.stacks_dropped counts them). */
#define OVERFLOW_FRAME "[stacks not kept]"

static struct json_object *marker_frame_obj(const char *name)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "kind", json_object_new_string("py"));
	json_object_object_add(o, "display_name", json_object_new_string(name));
	json_object_object_add(o, "filename_or_module", json_object_new_string(""));
	json_object_object_add(o, "line", json_object_new_int(1));
	json_object_object_add(o, "ip", NULL);
	json_object_object_add(o, "offset", NULL);
	return o;
}

static struct json_object *truncated_frame_obj(void)
{
	return marker_frame_obj(TRUNCATED_FRAME);
}

/* The Scalene "py" frames of an entry, outermost first; with strings, also
 * the legacy "file qualname:line;" strings. */
static void entry_frames_json(const struct stack_entry *e, struct json_object *cframes,
			      struct json_object *frames, struct hmap *cache)
{
	const struct stack_stats *st = e->rep;
	int j;

	if (st->overflow && !e->all) {
		if (frames)
			json_object_array_add(frames,
					      json_object_new_string(" " OVERFLOW_FRAME ":1;"));
		if (cframes)
			json_object_array_add(cframes, marker_frame_obj(OVERFLOW_FRAME));
	}
	if (st->truncated && !e->all) {
		if (frames)
			json_object_array_add(frames,
					      json_object_new_string(" " TRUNCATED_FRAME ":1;"));
		if (cframes)
			json_object_array_add(cframes, truncated_frame_obj());
	}
	for (j = 0; j < e->depth; j++) {
		/* The legacy strings are Scalene's Python stacks. */
		if (frames && !frame_ref_native(&st->frames[j]))
			json_object_array_add(frames, frame_str_of(cache, &st->frames[j]));
		if (cframes)
			json_object_array_add(cframes, frame_obj_of(cache, &st->frames[j],
								    st->ips ? st->ips[j] : 0));
	}
	if (e->cut) {
		const char *name = e->all ? ALL_MERGED_FRAME : MERGED_FRAME;

		if (frames) {
			char s[64];

			snprintf(s, sizeof(s), " %s:1;", name);
			json_object_array_add(frames, json_object_new_string(s));
		}
		if (cframes)
			json_object_array_add(cframes, marker_frame_obj(name));
	}
}

static struct json_object *bound_facts(const struct stack_bound *b, int distinct)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "distinct", json_object_new_int(distinct));
	json_object_object_add(o, "written_whole", json_object_new_int(b->whole));
	json_object_object_add(o, "merged_stacks",
			       json_object_new_int64((int64_t)b->merged_stacks));
	json_object_object_add(o, "merged_entries", json_object_new_int(b->n - b->whole));
	json_object_object_add(o, "merge_depth", json_object_new_int(b->merge_depth));
	json_object_object_add(o, "merged_weight", jdouble(b->merged_weight));
	json_object_object_add(o, "total_weight", jdouble(b->total_weight));
	return o;
}

static const struct stack_bound_limits stack_limits = {
	.whole = STACKS_WHOLE,
	.merged = STACKS_MERGED,
	.frames = STACK_FRAMES,
};

static struct json_object *native_frame_obj(const struct stack_stats *st)
{
	struct json_object *nf = json_object_new_object();

	json_object_object_add(nf, "kind", json_object_new_string("native"));
	json_object_object_add(nf, "display_name", jstring(st->native_sym));
	json_object_object_add(nf, "filename_or_module", jstring(st->native_module));
	json_object_object_add(nf, "line", NULL);
	json_object_object_add(
		nf, "ip", st->native_ip ? json_object_new_int64((int64_t)st->native_ip) : NULL);
	json_object_object_add(nf, "offset",
			       st->native_ip && st->native_offset >= 0
				       ? json_object_new_int64(st->native_offset)
				       : NULL);
	return nf;
}

/* The await stacks (profile.h), after the CPU stacks, as Scalene writes
 * them in combined_stacks: the frame a task waits in is named "[await]
 * function (task)".  `stacks` gets the same entries (the exports match the
 * two lists entry for entry), with no CPU time and their waiting time. */
static void build_await_stacks(struct sink *snk, const struct profile *p, bool legacy)
{
	int i, j, n = profile__nawait_stacks(p);

	for (i = 0; i < n; i++) {
		const struct await_stack *as = profile__await_stack(p, i);
		struct json_object *frames, *entry, *stats;

		/* None since the counts restarted (--continuous). */
		if (!as->count)
			continue;
		frames = json_object_new_array();
		for (j = 0; j < as->nframes; j++) {
			struct frame_ref fr = as->frames[j];
			char *name = NULL, *str;
			size_t len;

			if (j == as->nframes - 1) {
				len = strlen(fr.qualname) +
				      (as->task_name ? strlen(as->task_name) : 1) + 16;
				name = malloc(len);
				if (name) {
					snprintf(name, len, "[await] %s (%s)", fr.qualname,
						 as->task_name ? as->task_name : "?");
					fr.qualname = name;
				}
			}
			if (legacy) {
				str = frame_string(&fr);
				json_object_array_add(frames, jstring(str));
				free(str);
			} else {
				json_object_array_add(frames, py_frame_obj(&fr));
			}
			free(name);
		}
		entry = json_object_new_array();
		json_object_array_add(entry, frames);
		if (legacy) {
			stats = json_object_new_object();
			json_object_object_add(stats, "count",
					       json_object_new_int64((int64_t)as->count));
			json_object_object_add(stats, "python_time", jdouble(0));
			json_object_object_add(stats, "c_time", jdouble(0));
			json_object_object_add(stats, "cpu_samples", jdouble(0));
			json_object_object_add(stats, "await_s", jdouble(as->ns / 1e9));
			json_object_array_add(entry, stats);
		} else {
			json_object_array_add(entry, json_object_new_int64((int64_t)as->count));
		}
		sink_add(snk, NULL, entry);
	}
}

/* A weighed stack entry: [frames, weight], as memory_stacks (MB) and
 * scalene_bpf.gpu_stacks (seconds) have them. */
static struct json_object *weighed_entry(const struct stack_entry *e, double weight,
					 struct hmap *cache)
{
	struct json_object *frames = json_object_new_array(), *entry = json_object_new_array();

	entry_frames_json(e, frames, NULL, cache);
	json_object_array_add(entry, frames);
	json_object_array_add(entry, jdouble(weight));
	return entry;
}

/* scalene_bpf.gpu_stacks: the device time of the work each stack launched. */
static struct json_object *gpu_stacks_json(const struct stack_bound *b, struct hmap *cache)
{
	struct json_object *a = json_object_new_array();
	int i;

	for (i = 0; a && i < b->n; i++)
		json_object_array_add(a, weighed_entry(&b->e[i], b->e[i].gpu_ns / 1e9, cache));
	return a;
}

/* The GIL wait (s) in the CPU stacks that have any, as [index, seconds]
 * with the index of the entry in stacks and combined_stacks: part of the
 * system time their cpu_samples count (Scalene's stacks have no place for
 * it). */
static struct json_object *gil_stacks_json(const struct stack_bound *cpu)
{
	struct json_object *arr = json_object_new_array();
	int i;

	for (i = 0; arr && i < cpu->n; i++) {
		struct json_object *pair;

		if (!(cpu->e[i].gil_ns > 0))
			continue;
		pair = json_object_new_array();
		json_object_array_add(pair, json_object_new_int(i));
		json_object_array_add(pair, jdouble(cpu->e[i].gil_ns / 1e9));
		json_object_array_add(arr, pair);
	}
	return arr;
}

/* emitted[i]: the index in combined_stacks of profile stack i (whole or
 * merged), or -1. */
static void build_stacks(struct sink *snk, const struct profile *p, double total, bool memory,
			 struct json_object *extra, int *emitted)
{
	struct json_object *facts = json_object_new_object();
	struct hmap *cache = frame_cache_new();
	const struct stack_stats **all;
	struct stack_bound cpu = { 0 }, mem = { 0 }, gpu = { 0 };
	int i, n = profile__nstacks(p), ncpu = 0, nmem = 0, ngpu = 0;
	bool ok;

	all = malloc((n ? n : 1) * sizeof(*all));
	for (i = 0; all && i < n; i++) {
		all[i] = profile__stack(p, i);
		ncpu += all[i]->count > 0;
		nmem += all[i]->malloc_bytes > 0;
		ngpu += all[i]->gpu_ns > 0;
	}
	ok = all && !stack_bound__compute(all, n, STACK_BY_SAMPLES, &stack_limits, &cpu) &&
	     (!memory || !stack_bound__compute(all, n, STACK_BY_BYTES, &stack_limits, &mem)) &&
	     (!ngpu || !stack_bound__compute(all, n, STACK_BY_GPU, &stack_limits, &gpu));
	if (!ok) {
		stack_bound__free(&cpu);
		stack_bound__free(&mem);
		stack_bound__free(&gpu);
	}
	for (i = 0; emitted && i < n; i++)
		emitted[i] = ok ? cpu.entry_of[i] : -1;
	sink_open(snk, "stacks", true);
	for (i = 0; i < cpu.n; i++) {
		const struct stack_entry *e = &cpu.e[i];
		struct json_object *frames = json_object_new_array(), *entry, *stats;

		entry_frames_json(e, NULL, frames, cache);
		stats = json_object_new_object();
		json_object_object_add(stats, "count", json_object_new_int64(e->count));
		json_object_object_add(stats, "python_time",
				       jdouble(total > 0 ? e->python_ns / total : 0));
		json_object_object_add(stats, "c_time",
				       jdouble(total > 0 ? e->native_ns / total : 0));
		json_object_object_add(
			stats, "cpu_samples",
			jdouble(total > 0 ? (e->python_ns + e->native_ns + e->system_ns) / total
					  : 0));
		entry = json_object_new_array();
		json_object_array_add(entry, frames);
		json_object_array_add(entry, stats);
		sink_add(snk, NULL, entry);
	}
	build_await_stacks(snk, p, true);
	sink_close(snk);
	sink_open(snk, "combined_stacks", true);
	for (i = 0; i < cpu.n; i++) {
		const struct stack_entry *e = &cpu.e[i];
		struct json_object *cframes = json_object_new_array(), *centry;

		entry_frames_json(e, cframes, NULL, cache);
		if (!e->cut && e->rep->native_sym)
			json_object_array_add(cframes, native_frame_obj(e->rep));
		centry = json_object_new_array();
		json_object_array_add(centry, cframes);
		json_object_array_add(centry, json_object_new_int64(e->count));
		sink_add(snk, NULL, centry);
	}
	build_await_stacks(snk, p, false);
	sink_close(snk);
	sink_open(snk, "memory_stacks", true);
	for (i = 0; i < mem.n; i++)
		sink_add(snk, NULL, weighed_entry(&mem.e[i], mem.e[i].malloc_bytes / MB, cache));
	sink_close(snk);
	/* The table the stacks come from: with --continuous, this interval's
	 * stacks and those a GPU launch site still points at. */
	json_object_object_add(facts, "stacks_kept", json_object_new_int(n));
	if (ok) {
		json_object_object_add(facts, "cpu", bound_facts(&cpu, ncpu));
		if (memory)
			json_object_object_add(facts, "memory", bound_facts(&mem, nmem));
		if (ngpu)
			json_object_object_add(facts, "gpu", bound_facts(&gpu, ngpu));
	}
	if (extra && ok && ngpu)
		json_object_object_add(extra, "gpu_stacks", gpu_stacks_json(&gpu, cache));
	if (extra && ok)
		json_object_object_add(extra, "gil_wait_stacks", gil_stacks_json(&cpu));
	if (extra)
		json_object_object_add(extra, "stack_bounds", facts);
	else
		json_object_put(facts);
	stack_bound__free(&cpu);
	stack_bound__free(&mem);
	stack_bound__free(&gpu);
	frame_cache_free(cache);
	free(all);
}

/* A file's allocation churn: the sampled bytes its lines and functions asked
 * of the allocators, freed or not (Scalene's fields hold net growth). */
static struct json_object *file_churn(const struct file_stats *f)
{
	struct json_object *o = json_object_new_object(), *lines = json_object_new_object();
	struct json_object *funcs = json_object_new_array();
	char key[16];
	int i;

	for (i = 1; i < f->nlines; i++) {
		const struct mem_stats *ms = f->lines[i] ? f->lines[i]->mem : NULL;

		if (!ms || ms->malloc_bytes <= 0)
			continue;
		snprintf(key, sizeof(key), "%d", i);
		json_object_object_add(lines, key, jdouble(ms->malloc_bytes / MB));
	}
	for (i = 0; i < f->nfuncs; i++) {
		const struct mem_stats *ms = f->funcs[i]->st.mem;
		struct json_object *fo;

		if (!ms || ms->malloc_bytes <= 0)
			continue;
		fo = json_object_new_object();
		json_object_object_add(fo, "line", jstring(f->funcs[i]->qualname));
		json_object_object_add(fo, "lineno",
				       json_object_new_int(f->funcs[i]->firstlineno > 0
								   ? f->funcs[i]->firstlineno
								   : 1));
		json_object_object_add(fo, "churn_mb", jdouble(ms->malloc_bytes / MB));
		json_object_array_add(funcs, fo);
	}
	json_object_object_add(o, "lines", lines);
	json_object_object_add(o, "functions", funcs);
	return o;
}

/* scalene_bpf.allocation_churn: what the churn is, per file. */
static struct json_object *churn_object(const struct profile_memory *pm, bool no_frees,
					struct json_object *files)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(
		o, "meaning",
		json_object_new_string(
			"MB allocated per line and function, freed or not (gross); Scalene's "
			"n_malloc_mb and the fields with it hold net growth"));
	json_object_object_add(
		o, "scalene_fields",
		json_object_new_string(no_frees ? "gross: frees not seen" : "net growth"));
	json_object_object_add(o, "net_window_bytes",
			       json_object_new_int64((int64_t)NET_WINDOW_BYTES));
	json_object_object_add(o, "net_small_block_window_bytes",
			       json_object_new_int64((int64_t)NET_SMALL_WINDOW_BYTES));
	json_object_object_add(o, "total_mb", jdouble(pm->malloc_bytes / MB));
	json_object_object_add(o, "net_mb", jdouble(pm->net_bytes / MB));
	json_object_object_add(o, "files", files);
	return o;
}

static int cmp_event(const void *a, const void *b)
{
	const struct timeline_event *x = *(const struct timeline_event *const *)a;
	const struct timeline_event *y = *(const struct timeline_event *const *)b;

	if (x->ts_ns != y->ts_ns)
		return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
	return (x > y) - (x < y); /* stable: the recorded order */
}

/* Where combined_stacks_timeline's t_sec counts from: its first event. */
static uint64_t timeline_t0(const struct profile *p)
{
	const struct profile_timeline *tl = profile__timeline(p);
	uint64_t t0 = 0;
	int i;

	for (i = 0; i < tl->n; i++)
		if (!t0 || tl->ev[i].ts_ns < t0)
			t0 = tl->ev[i].ts_ns;
	return t0;
}

/* A thread as the timeline names it: the root process's main thread by its
 * pthread_t (main_thread_id), others by their kernel thread id. */
static int64_t timeline_tid(const struct output_meta *m, int tgid, int tid)
{
	if (m->main_pid && tgid == m->main_pid && tid == tgid && m->main_thread_id)
		return (int64_t)m->main_thread_id;
	return tid;
}

/*
 * scalene_bpf.tracks (profile.h: struct profile_tracks): per thread, when it
 * collected garbage, was blocked in I/O, waited for the GIL, as [kind,
 * thread, start, end, file, line] in the seconds of combined_stacks_timeline
 * (an interval that began before its first event starts at 0).
 */
static struct json_object *build_tracks(const struct profile *p, const struct output_meta *m)
{
	static const char *const kinds[TRACK_KINDS] = { "gc", "io", "gil", "gil_held" };
	const struct profile_tracks *t = profile__tracks(p);
	struct json_object *o = json_object_new_object(), *list = json_object_new_array(),
			   *total = json_object_new_object();
	uint64_t t0 = timeline_t0(p);
	int i;

	for (i = 0; i < TRACK_KINDS; i++)
		json_object_object_add(total, kinds[i], jdouble(t->ns[i] / 1e9));
	for (i = 0; t0 && i < t->n; i++) {
		const struct track_interval *v = &t->iv[i];
		struct json_object *e = json_object_new_array();

		json_object_array_add(e, json_object_new_string(kinds[v->kind]));
		json_object_array_add(e, json_object_new_int64(timeline_tid(m, v->tgid, v->tid)));
		json_object_array_add(
			e, jdouble(v->start_ns > t0 ? round((v->start_ns - t0) / 1e3) / 1e6 : 0));
		json_object_array_add(
			e, jdouble(v->end_ns > t0 ? round((v->end_ns - t0) / 1e3) / 1e6 : 0));
		json_object_array_add(e, v->file ? jstring(v->file) : NULL);
		json_object_array_add(e, v->file ? json_object_new_int(v->line) : NULL);
		json_object_array_add(list, e);
	}
	json_object_object_add(o, "kinds",
			       json_object_new_string("gc: garbage collection, io: "
						      "blocked in I/O, gil: waiting "
						      "for the GIL"));
	json_object_object_add(o, "total_s", total);
	json_object_object_add(o, "gap_s", jdouble(t->gap_ns / 1e9));
	json_object_object_add(o, "intervals_dropped", json_object_new_int64((int64_t)t->dropped));
	json_object_object_add(o, "intervals", list);
	return o;
}

/* Scalene's combined_stacks_timeline: events in time order, t_sec from the
 * first one (to 1 us), the root process's main thread under its pthread_t
 * (main_thread_id), other threads under their kernel thread id. */
static struct json_object *build_timeline(const struct profile *p, const struct output_meta *m,
					  const int *emitted)
{
	const struct profile_timeline *tl = profile__timeline(p);
	struct json_object *arr = json_object_new_array(), *last = NULL;
	const struct timeline_event **order;
	int64_t last_idx = -1, last_tid = -1;
	uint64_t last_count = 0, t0;
	int i;

	if (!tl->n || !emitted)
		return arr;
	order = malloc(tl->n * sizeof(*order));
	if (!order)
		return arr;
	for (i = 0; i < tl->n; i++)
		order[i] = &tl->ev[i];
	qsort(order, tl->n, sizeof(*order), cmp_event);
	t0 = order[0]->ts_ns;
	for (i = 0; i < tl->n; i++) {
		const struct timeline_event *e = order[i];
		int idx = e->stack >= 0 && e->stack < profile__nstacks(p) ? emitted[e->stack] : -1;
		int64_t tid = e->tid;
		struct json_object *o;

		if (idx < 0)
			continue;
		tid = timeline_tid(m, e->tgid, e->tid);
		if (last && idx == last_idx && tid == last_tid) {
			last_count += e->count;
			json_object_object_add(last, "count", json_object_new_int64(last_count));
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "t_sec", jdouble(round((e->ts_ns - t0) / 1e3) / 1e6));
		json_object_object_add(o, "stack_index", json_object_new_int(idx));
		json_object_object_add(o, "count", json_object_new_int64(e->count));
		json_object_object_add(o, "thread_id", json_object_new_int64(tid));
		json_object_array_add(arr, o);
		last = o;
		last_idx = idx;
		last_tid = tid;
		last_count = e->count;
	}
	free(order);
	return arr;
}

/* Scalene's rule: a file is reported with at least the threshold of CPU
 * time or FILE_MALLOC_THRESHOLD_MB of net malloc samples (its n_malloc_mb
 * summed); allocation churn alone, memory the file gave back, does not make
 * it one (it stays in scalene_bpf.allocation_churn, see churn_reported). */
static bool file_reported(const struct profile *p, const struct file_stats *f,
			  const struct output_meta *m, double total)
{
	double bytes = 0;
	int i;

	if (profile__ndecorated(p)) {
		for (i = 0; i < profile__ndecorated(p); i++) {
			if (!strcmp(profile__decorated(p, i)->file, f->path))
				break;
		}
		if (i == profile__ndecorated(p))
			return false;
	}

	if (m->memory) {
		for (i = 0; i < f->nlines; i++) {
			if (f->lines[i] && f->lines[i]->mem)
				bytes += f->lines[i]->mem->net_bytes;
		}
		if (bytes / MB >= FILE_MALLOC_THRESHOLD_MB)
			return true;
	}
	for (i = 0; i < f->nlines; i++) {
		/* GPU work launched here, or the GPU busy while it ran. */
		const struct gpu_stats *g = f->lines[i] ? f->lines[i]->gpu : NULL;

		if (g && (g->kernels || g->copies || g->memsets || g->alloc_bytes > 0 ||
			  g->host_alloc_bytes > 0 || g->host_free_bytes > 0 || g->util_sum > 0))
			return true;
	}
	if (m->async_waits && profile__await_ns(p) > 0) {
		double aw = 0;

		for (i = 0; i < f->nlines; i++) {
			if (f->lines[i] && f->lines[i]->aw)
				aw += f->lines[i]->aw->ns;
		}
		if (100.0 * aw / profile__await_ns(p) >= m->cpu_percent_threshold)
			return true;
	}
	if (total <= 0)
		return false;
	return 100.0 * file_total_ns(p, f) / total >= m->cpu_percent_threshold;
}

/* A file whose churn is written: reported, or with the threshold of churn. */
static bool churn_reported(const struct profile *p, const struct file_stats *f,
			   const struct output_meta *m, double total)
{
	double bytes = 0;
	int i;

	for (i = 0; i < f->nlines; i++) {
		if (f->lines[i] && f->lines[i]->mem)
			bytes += f->lines[i]->mem->malloc_bytes;
	}
	return bytes / MB >= FILE_MALLOC_THRESHOLD_MB || file_reported(p, f, m, total);
}

/* scalene_bpf.gpu.lines: the lines that launched GPU work, most kernel
 * time first (GPU_LINES of them). */
#define GPU_LINES 100
struct gpu_line {
	const char *file;
	int line;
	const struct gpu_stats *g;
};

static int cmp_gpu_line(const void *a, const void *b)
{
	const struct gpu_line *x = a, *y = b;
	double kx = x->g->kernel_ns + x->g->copy_ns, ky = y->g->kernel_ns + y->g->copy_ns;

	return kx > ky ? -1 : kx < ky;
}

static int cmp_gpu_kernel(const void *a, const void *b)
{
	const struct gpu_kernel *x = a, *y = b;

	return x->ns > y->ns ? -1 : x->ns < y->ns;
}

/* A line's kernels by name, most time first; those past the table as
 * "[other kernels]". */
static struct json_object *gpu_kernels_json(const struct gpu_stats *g)
{
	struct json_object *arr = json_object_new_array();
	struct gpu_kernel k[GPU_LINE_KERNELS + 1];
	int n = g->nnames, i;

	memcpy(k, g->by_name, n * sizeof(*k));
	qsort(k, n, sizeof(*k), cmp_gpu_kernel);
	if (g->other_count)
		k[n++] = (struct gpu_kernel){ "[other kernels]", g->other_count, g->other_ns };
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", jstring(k[i].name[0] ? k[i].name : "[unnamed]"));
		json_object_object_add(o, "kernels", json_object_new_int64(llround(k[i].count)));
		json_object_object_add(o, "kernel_s", jdouble(k[i].ns / 1e9));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *gpu_lines(const struct profile *p)
{
	static const char *const dirs[GPU_DIR_MAX] = { "htod", "dtoh", "dtod", "other" };
	struct json_object *arr = json_object_new_array();
	struct gpu_line *v = NULL, *grown;
	int n = 0, cap = 0, i, j, d;

	for (i = 0; i < profile__nfiles(p); i++) {
		const struct file_stats *f = profile__file(p, i);

		for (j = 0; j < f->nlines; j++) {
			const struct gpu_stats *g = f->lines[j] ? f->lines[j]->gpu : NULL;

			if (!g || !g->launches)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				grown = realloc(v, cap * sizeof(*v));
				if (!grown)
					break;
				v = grown;
			}
			v[n++] = (struct gpu_line){ f->path, j, g };
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_gpu_line);
	for (i = 0; i < n && i < GPU_LINES; i++) {
		const struct gpu_stats *g = v[i].g;
		struct json_object *o = json_object_new_object(), *copy = json_object_new_object();

		json_object_object_add(o, "file", jstring(v[i].file));
		json_object_object_add(o, "line", json_object_new_int(v[i].line));
		json_object_object_add(o, "calls", json_object_new_int64(llround(g->launches)));
		json_object_object_add(o, "kernels", json_object_new_int64(llround(g->kernels)));
		json_object_object_add(o, "kernel_s", jdouble(g->kernel_ns / 1e9));
		json_object_object_add(o, "kernels_by_name", gpu_kernels_json(g));
		json_object_object_add(o, "copies", json_object_new_int64(llround(g->copies)));
		json_object_object_add(o, "copy_s", jdouble(g->copy_ns / 1e9));
		for (d = 0; d < GPU_DIR_MAX; d++)
			json_object_object_add(copy, dirs[d], jdouble(g->copy_bytes[d] / MB));
		json_object_object_add(o, "copy_mb", copy);
		json_object_object_add(o, "memsets", json_object_new_int64(llround(g->memsets)));
		json_object_object_add(o, "memset_mb", jdouble(g->memset_bytes / MB));
		json_object_object_add(o, "alloc_mb", jdouble(g->alloc_bytes / MB));
		json_object_object_add(o, "free_mb", jdouble(g->free_bytes / MB));
		json_object_object_add(o, "host_alloc_mb", jdouble(g->host_alloc_bytes / MB));
		json_object_object_add(o, "host_free_mb", jdouble(g->host_free_bytes / MB));
		json_object_array_add(arr, o);
	}
	free(v);
	return arr;
}

static void build_doc(struct sink *snk, const struct profile *p, const struct output_meta *m)
{
	struct json_object *args, *churn = NULL, *extra = NULL;
	const struct profile_memory *pm = profile__memory(p);
	struct out_ctx c = { .p = p, .m = m, .pm = pm, .total = profile__total_ns(p) };
	double total = c.total;
	bool mem = m->memory;
	int *emitted;
	int i;

	sink_add(snk, "alloc_samples", json_object_new_int64(mem ? (int64_t)pm->alloc_samples : 0));
	args = json_object_new_array();
	for (i = 0; i < m->nargs; i++)
		json_object_array_add(args, jstring(m->args[i]));
	sink_add(snk, "args", args);
	sink_add(snk, "async_profile", json_object_new_boolean(m->async_waits));
	sink_add(snk, "elapsed_time_sec", jdouble(m->elapsed_sec));
	sink_add(snk, "start_time_absolute", jdouble(m->start_time_absolute));
	sink_add(snk, "start_time_perf", jdouble(m->start_time_perf));
	sink_add(snk, "entrypoint_dir", jstring(m->program_dir));
	sink_add(snk, "filename", jstring(m->program_dir));
	sink_add(snk, "program", jstring(m->program));
	sink_add(snk, "gpu", json_object_new_boolean(profile__gpu_on(p)));
	sink_add(snk, "gpu_device", json_object_new_string(profile__gpu_on(p) ? "GPU" : ""));
	sink_add(snk, "growth_rate", jdouble(mem ? growth_rate(pm) : 0));
	sink_add(snk, "max_footprint_fname", mem && pm->max_file ? jstring(pm->max_file) : NULL);
	sink_add(snk, "max_footprint_lineno",
		 mem && pm->max_file && pm->max_line > 0 ? json_object_new_int(pm->max_line)
							 : NULL);
	sink_add(snk, "max_footprint_mb", jdouble(mem ? pm->max_footprint / MB : 0));
	sink_add(snk, "max_footprint_python_fraction", jdouble(mem ? pm->max_python_fraction : 0));
	sink_add(snk, "memory", json_object_new_boolean(mem));
	sink_add(snk, "samples", series_json(mem ? &pm->series : NULL, &c));
	sink_add(snk, "native_allocations_mb", jdouble(mem ? pm->native_thread_bytes / MB : 0));
	sink_add(snk, "main_thread_id",
		 m->main_thread_id ? json_object_new_int64((int64_t)m->main_thread_id) : NULL);
	if (m->facts)
		extra = output_facts_json(m->facts, p);
	if (mem && extra)
		churn = json_object_new_object();
	sink_open(snk, "files", false);
	for (i = 0; i < profile__nfiles(p); i++) {
		const struct file_stats *f = profile__file(p, i);
		bool rep = file_reported(p, f, m, total);
		char *key;

		if (!rep && !(churn && churn_reported(p, f, m, total)))
			continue;
		key = utf8_sanitize(f->path, strlen(f->path));
		if (!key)
			continue;
		if (rep)
			build_file(snk, key, f, &c);
		if (churn)
			json_object_object_add(churn, key, file_churn(f));
		free(key);
	}
	sink_close(snk);
	emitted = malloc((profile__nstacks(p) ? profile__nstacks(p) : 1) * sizeof(*emitted));
	build_stacks(snk, p, total, mem, extra, emitted);
	sink_add(snk, "combined_stacks_timeline", build_timeline(p, m, emitted));
	free(emitted);
	if (extra)
		json_object_object_add(extra, "tracks", build_tracks(p, m));
	if (churn)
		json_object_object_add(extra, "allocation_churn",
				       churn_object(pm, m->no_footprint, churn));
	if (extra && profile__gpu_on(p)) {
		struct json_object *gpu = NULL;

		if (!json_object_object_get_ex(extra, "gpu", &gpu)) {
			gpu = json_object_new_object();
			json_object_object_add(extra, "gpu", gpu);
		}
		json_object_object_add(gpu, "lines", gpu_lines(p));
	}
	if (extra) {
		clean_strings(extra);
		sink_add(snk, "scalene_bpf", extra);
	}
}

struct json_object *output_build(const struct profile *p, const struct output_meta *m)
{
	struct sink snk = { .depth = 1, .collecting = true };

	snk.open[0] = json_object_new_object();
	if (!snk.open[0])
		return NULL;
	build_doc(&snk, p, m);
	return snk.open[0];
}

/* Writes the document to fd; keep: and hands it over there too (NULL when
 * it could not be built). */
static int write_doc(const struct profile *p, const struct output_meta *m, int fd,
		     struct json_object **keep)
{
	struct sink snk = { .depth = 1, .writing = true, .fd = fd, .first = { true } };

	if (keep) {
		*keep = NULL;
		snk.collecting = true;
		snk.open[0] = json_object_new_object();
		if (!snk.open[0])
			return -ENOMEM;
	}
	snk.buf = malloc(SINK_BUF);
	if (!snk.buf) {
		json_object_put(snk.open[0]);
		return -ENOMEM;
	}
	sink_put(&snk, "{");
	build_doc(&snk, p, m);
	sink_put(&snk, "\n}\n");
	sink_flush(&snk);
	free(snk.buf);
	if (keep)
		*keep = snk.open[0];
	return snk.err;
}

int output_write(const struct profile *p, const struct output_meta *m, int fd)
{
	return write_doc(p, m, fd, NULL);
}

char *output_to_string(struct json_object *doc)
{
	const char *s;

	clean_strings(doc);
	s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
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

int output_emit(int fd, void *job)
{
	const struct output_job *j = job;

	if (j->keep) {
		/* Called again with the same job (a write tried once more):
		 * the document is built anew. */
		json_object_put(*j->keep);
		*j->keep = NULL;
	}
	return write_doc(j->p, j->m, fd, j->keep);
}
