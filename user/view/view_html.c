// SPDX-License-Identifier: BSD-2-Clause
/*
 * The HTML view of a profile (ours or Scalene's): one self-contained page,
 * its style and script built into the binary (user/view/html/), that draws the
 * line tables, flame graphs and timeline in the browser with no network.
 *
 * The page does not carry the whole profile: the model embedded in it keeps
 * per file the lines above the threshold or with memory activity, the
 * functions, and the heaviest stacks, so that its size follows the hot lines
 * and not the program's length.  The profile is untrusted input: every value
 * is type-checked here, every string made valid UTF-8 without control
 * characters, and the model is written inside <script type=application/json>
 * with <, >, &, U+2028 and U+2029 as \u escapes, so that no text in it can end
 * the element or be read as markup.  The page then shows text only through
 * textContent.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <json-c/json.h>

#include "view/hostindex.h"
#include "base/utf8.h"
#include "report/output.h"
#include "view/view.h"
#include "view/viewutil.h"

#define MAX_FILES 500
#define MAX_LINES_PER_FILE 2000
#define MAX_FUNCS_PER_FILE 2000
/* Stacks kept per flame graph; the rest is counted and said in the page. */
#define MAX_STACKS 2000
#define MAX_DEPTH 256
#define MAX_TIMELINE 5000
/* Intervals of the timeline's tracks (garbage collection, I/O, GIL) shown. */
#define MAX_TRACKS 4000
#define MAX_FOOTPRINT 2000
#define MAX_LINE_SAMPLES 200
#define MAX_SOURCE_BYTES 1000
#define MAX_NAME_BYTES 400
#define MAX_TASK_BYTES 160

/* The page's parts (user/view/html/assets.S). */
extern const char html_page[], html_css[], html_js[];

struct model {
	struct json_object *root;
	struct json_object *frames;	 /* [[kind, name, file, line], ...] */
	struct json_object *frame_index; /* key -> index into frames */
	struct vj_select sel;		 /* the lines shown, and whether memory and GPU are */
	/* scalene_bpf.allocation_churn.files (NULL: not ours), and the entry
	 * of the file being modelled */
	struct json_object *churn_files, *churn;
};

/* Numbers as the shortest text that reads back as the same double: the page
 * rounds them once, as the profile's reader would (six digits rounded here
 * first turned 1.5050001 into 1.505, which the page then showed as 1.50). */
static struct json_object *num(double d)
{
	char buf[32];

	for (int digits = 6; digits <= 17; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, d);
		if (strtod(buf, NULL) == d || !isfinite(d))
			break;
	}
	return json_object_new_double_s(d, buf);
}

static struct json_object *integer(double d)
{
	return json_object_new_int64((int64_t)d);
}

/* A copy of s (len bytes) that is valid UTF-8 with no control character:
 * invalid bytes, C0 (but tab), DEL and C1 become U+FFFD (so do the bytes of
 * a character cut at max).  At most max bytes of s; a trailing line break
 * is dropped. */
static char *clean_text(const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;

	if (len > max)
		len = max;
	while (len && (u[len - 1] == '\n' || u[len - 1] == '\r'))
		len--;
	return utf8_clean(s, len, UTF8_CLEAN_CONTROLS | UTF8_CLEAN_KEEP_TAB);
}

/* A JSON string of the cleaned text; "" for NULL. */
static struct json_object *text(const char *s, size_t max)
{
	struct json_object *j;
	char *c;

	if (!s)
		return json_object_new_string("");
	c = clean_text(s, strlen(s), max);
	if (!c)
		return NULL;
	j = json_object_new_string(c);
	free(c);
	return j;
}

/* A source line: Scalene's \u0026, \u003c, \u003e given back as &, <, >. */
static struct json_object *source_text(const char *s)
{
	struct json_object *j;
	size_t n;
	char *u;

	if (!s)
		return json_object_new_string("");
	n = strnlen(s, MAX_SOURCE_BYTES * 6) + 1;
	u = malloc(n);
	if (!u)
		return NULL;
	vj_unescape_line(s, u, n);
	j = text(u, MAX_SOURCE_BYTES);
	free(u);
	return j;
}

static void add(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static int is_num(struct json_object *v)
{
	return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

/* [[t_s, MB], ...] from [[t_ns, MB, ...], ...], every k-th pair when there
 * are more than max. */
static struct json_object *time_series(struct json_object *a, size_t max)
{
	struct json_object *out = json_object_new_array();
	size_t n, i, step;

	if (!a || !out)
		return out;
	n = json_object_array_length(a);
	step = n > max ? (n + max - 1) / max : 1;
	for (i = 0; i < n; i += step) {
		struct json_object *p = json_object_array_get_idx(a, i), *pt;
		struct json_object *t, *v;

		if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) < 2)
			continue;
		t = json_object_array_get_idx(p, 0);
		v = json_object_array_get_idx(p, 1);
		if (!is_num(t) || !is_num(v))
			continue;
		pt = json_object_new_array();
		json_object_array_add(pt, num(vj_num_of(t) / 1e9));
		json_object_array_add(pt, num(vj_num_of(v)));
		json_object_array_add(out, pt);
	}
	return out;
}

/* A shown line's weight when a file has too many for the page. */
static double line_weight(const struct model *m, struct json_object *l)
{
	return vj_row_heat(&m->sel, l) + (m->sel.memory ? 100 * vj_num(l, "n_usage_fraction") : 0);
}

/* The await share of a row that awaited, the first task names seen waiting
 * there with how many more, and how many tasks waited at once. */
static void await_model(struct json_object *r, struct json_object *l)
{
	const char *names[VJ_TASKS_SHOWN];
	size_t i, n = vj_task_names(l, names, VJ_TASKS_SHOWN);
	struct json_object *tasks = json_object_new_array();

	add(r, "await", num(vj_await(l)));
	for (i = 0; tasks && i < n && i < VJ_TASKS_SHOWN; i++)
		json_object_array_add(tasks, text(names[i], MAX_TASK_BYTES));
	add(r, "tasks", tasks);
	add(r, "tasks_more", json_object_new_int64(n > VJ_TASKS_SHOWN ? n - VJ_TASKS_SHOWN : 0));
	add(r, "cmean", num(vj_num(l, "n_async_concurrency_mean")));
	add(r, "cpeak", num(vj_num(l, "n_async_concurrency_peak")));
}

/* One line or function of the page; lineno as the profile gives it. */
static struct json_object *row_model(const struct model *m, struct json_object *l, int is_line,
				     double lineno, struct json_object *leaks)
{
	struct json_object *r = json_object_new_object(), *leak;
	char key[32];

	if (!r)
		return NULL;
	add(r, "n", integer(lineno));
	if (is_line)
		add(r, "src", source_text(vj_str(l, "line")));
	else
		add(r, "name", text(vj_str(l, "line"), MAX_NAME_BYTES));
	add(r, "py", num(vj_num(l, "n_cpu_percent_python")));
	add(r, "c", num(vj_num(l, "n_cpu_percent_c")));
	add(r, "sys", num(vj_num(l, "n_sys_percent")));
	if (m->sel.gil)
		add(r, "gil", num(vj_gil_wait(l)));
	if (m->sel.await && vj_await(l) > 0)
		await_model(r, l);
	if (m->sel.memory) {
		add(r, "avg", num(vj_num(l, "n_avg_mb")));
		add(r, "peak", num(vj_num(l, "n_peak_mb")));
		add(r, "malloc", num(vj_num(l, "n_malloc_mb")));
		add(r, "usage", num(vj_num(l, "n_usage_fraction")));
		add(r, "copy", num(vj_num(l, "n_copy_mb_s")));
		if (m->churn_files)
			add(r, "churn", num(vj_churn(m->churn, l, !is_line)));
		add(r, "pyfrac", num(vj_num(l, "n_python_fraction")));
		add(r, "mem", time_series(vj_array(l, "memory_samples"), MAX_LINE_SAMPLES));
		snprintf(key, sizeof(key), "%lld", (long long)lineno);
		leak = leaks ? vj_object(leaks, key) : NULL;
		if (leak)
			add(r, "leak", num(vj_num(leak, "velocity_mb_s")));
	}
	if (m->sel.gpu) {
		add(r, "gpu", num(vj_num(l, "n_gpu_percent")));
		add(r, "gavg", num(vj_num(l, "n_gpu_avg_memory_mb")));
		add(r, "gpeak", num(vj_num(l, "n_gpu_peak_memory_mb")));
	}
	return r;
}

struct pick {
	size_t idx;
	double w;
};

/* Heaviest first; equal weights in their order. */
static int by_weight(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	if (x->w != y->w)
		return (x->w < y->w) - (x->w > y->w);
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int by_index(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;

	return (x->idx > y->idx) - (x->idx < y->idx);
}

static struct json_object *lines_model(const struct model *m, struct json_object *fd,
				       struct json_object *fo)
{
	struct json_object *lines = vj_array(fd, "lines"), *leaks = vj_object(fd, "leaks");
	struct json_object *out = json_object_new_array();
	size_t n = lines ? json_object_array_length(lines) : 0, k = 0, i;
	struct pick *p;

	p = calloc(n ? n : 1, sizeof(*p));
	if (!p || !out) {
		free(p);
		return out;
	}
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(lines, i);

		if (vj_row_shown(&m->sel, l)) {
			p[k].w = line_weight(m, l);
			p[k++].idx = i;
		}
	}
	if (k > MAX_LINES_PER_FILE) {
		qsort(p, k, sizeof(*p), by_weight);
		k = MAX_LINES_PER_FILE;
		qsort(p, k, sizeof(*p), by_index);
	}
	for (i = 0; i < k; i++) {
		struct json_object *l = json_object_array_get_idx(lines, p[i].idx);
		double lineno = vj_num(l, "lineno");

		/* Scalene's lines are dense: the row's place is its number. */
		if (lineno == 0)
			lineno = (double)p[i].idx + 1;
		json_object_array_add(out, row_model(m, l, 1, lineno, leaks));
	}
	add(fo, "nlines", json_object_new_int64((int64_t)n));
	add(fo, "hidden", json_object_new_int64((int64_t)(n - k)));
	free(p);
	return out;
}

static struct json_object *file_model(struct model *m, const char *name, struct json_object *fd)
{
	struct json_object *fo = json_object_new_object(), *funcs, *out;
	size_t i, n;

	if (!fo)
		return NULL;
	m->churn = vj_object(m->churn_files, name);
	add(fo, "name", text(name, MAX_NAME_BYTES * 4));
	add(fo, "pct", num(vj_num(fd, "percent_cpu_time")));
	add(fo, "lines", lines_model(m, fd, fo));
	out = json_object_new_array();
	funcs = vj_array(fd, "functions");
	n = funcs ? json_object_array_length(funcs) : 0;
	for (i = 0; i < n && json_object_array_length(out) < MAX_FUNCS_PER_FILE; i++) {
		struct json_object *fn = json_object_array_get_idx(funcs, i);

		if (vj_row_shown(&m->sel, fn))
			json_object_array_add(out, row_model(m, fn, 0, vj_num(fn, "lineno"), NULL));
	}
	add(fo, "funcs", out);
	return fo;
}

/* Files by their share of the time, the busiest first. */
static struct json_object *files_model(struct model *m, struct json_object *files)
{
	struct json_object *out = json_object_new_array();
	size_t n = (size_t)json_object_object_length(files), k = 0, i;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	struct pick *p = calloc(n ? n : 1, sizeof(*p));

	if (!out || !names || !p)
		goto cleanup;
	json_object_object_foreach (files, name, fd) {
		if (!vj_file_shown(&m->sel, fd))
			continue;
		names[k] = name;
		p[k].idx = k;
		p[k].w = vj_num(fd, "percent_cpu_time");
		k++;
	}
	qsort(p, k, sizeof(*p), by_weight);
	for (i = 0; i < k && i < MAX_FILES; i++) {
		struct json_object *fd = NULL;

		json_object_object_get_ex(files, names[p[i].idx], &fd);
		json_object_array_add(out, file_model(m, names[p[i].idx], fd));
	}
	/* Those under the threshold with nothing shown, and those past
	 * MAX_FILES. */
	add(m->root, "files_omitted", json_object_new_int64((int64_t)(n - i)));
cleanup:
	free(names);
	free(p);
	return out;
}

/* The index of a frame in the model's frame table, added when new. */
static int intern_frame(struct model *m, const char *kind, const char *name, const char *file,
			double line)
{
	struct json_object *v, *fr;
	char *cn, *cf, *key = NULL;
	int idx = -1;

	if (!name)
		name = "";
	if (!file)
		file = "";
	kind = kind && !strcmp(kind, "native") ? "native" : "py";
	cn = clean_text(name, strlen(name), MAX_NAME_BYTES);
	cf = clean_text(file, strlen(file), MAX_NAME_BYTES * 4);
	if (!cn || !cf ||
	    asprintf(&key, "%s\x1f%s\x1f%s\x1f%lld", kind, cn, cf, (long long)line) < 0) {
		key = NULL;
		goto cleanup;
	}
	if (json_object_object_get_ex(m->frame_index, key, &v)) {
		idx = json_object_get_int(v);
		goto cleanup;
	}
	fr = json_object_new_array();
	if (!fr)
		goto cleanup;
	json_object_array_add(fr, json_object_new_string(kind));
	json_object_array_add(fr, json_object_new_string(cn));
	json_object_array_add(fr, json_object_new_string(cf));
	json_object_array_add(fr, integer(line));
	idx = (int)json_object_array_length(m->frames);
	json_object_array_add(m->frames, fr);
	json_object_object_add(m->frame_index, key, json_object_new_int(idx));
cleanup:
	free(key);
	free(cn);
	free(cf);
	return idx;
}

/* Scalene's `stacks` frame: "<filename> <qualname>:<line>;". */
static int legacy_frame(struct model *m, const char *s)
{
	struct vj_legacy_frame f;
	int idx;

	if (vj_legacy_frame_parse(s, &f))
		return -1;
	idx = intern_frame(m, "py", f.func, f.file, f.line);
	vj_legacy_frame_free(&f);
	return idx;
}

/* A stack's frames as indices into the frame table, root first. */
static struct json_object *stack_frames(struct model *m, struct json_object *fr, int legacy)
{
	struct json_object *out = json_object_new_array();
	size_t n = json_object_array_length(fr), i, kept = 0;

	for (i = 0; out && i < n && kept < MAX_DEPTH; i++) {
		struct json_object *f = json_object_array_get_idx(fr, i);
		int idx = -1;

		if (legacy && json_object_is_type(f, json_type_string))
			idx = legacy_frame(m, json_object_get_string(f));
		else if (!legacy && json_object_is_type(f, json_type_object))
			idx = intern_frame(m, vj_str(f, "kind"), vj_str(f, "display_name"),
					   vj_str(f, "filename_or_module"), vj_num(f, "line"));
		if (idx < 0)
			continue;
		json_object_array_add(out, json_object_new_int(idx));
		kept++;
	}
	return out;
}

/* The heaviest MAX_STACKS stacks of a [[frames, weight], ...] section (legacy:
 * Scalene's `stacks`, weighted by their count), with the rest counted.  remap,
 * when given, gets for each entry of a its index in the result or -1.  NULL
 * when the section has no stack of positive weight. */
static struct json_object *stack_set(struct model *m, struct json_object *a, int legacy,
				     const char *from, const char *unit, int **remap)
{
	struct json_object *out = NULL, *stacks;
	size_t n = a ? json_object_array_length(a) : 0, k = 0, i, keep;
	double total = 0, omitted = 0;
	struct pick *p;

	if (!n)
		return NULL;
	p = calloc(n, sizeof(*p));
	if (!p)
		return NULL;
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(a, i), *w;

		if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) < 2 ||
		    !json_object_is_type(json_object_array_get_idx(e, 0), json_type_array))
			continue;
		w = json_object_array_get_idx(e, 1);
		p[k].w = legacy ? vj_num(w, "count") : vj_num_of(w);
		if (!(p[k].w > 0))
			continue;
		total += p[k].w;
		p[k++].idx = i;
	}
	if (!k)
		goto cleanup;
	qsort(p, k, sizeof(*p), by_weight);
	keep = k < MAX_STACKS ? k : MAX_STACKS;
	if (remap) {
		*remap = malloc(n * sizeof(**remap));
		for (i = 0; *remap && i < n; i++)
			(*remap)[i] = -1;
	}
	out = json_object_new_object();
	stacks = json_object_new_array();
	for (i = 0; out && stacks && i < k; i++) {
		struct json_object *e = json_object_array_get_idx(a, p[i].idx), *s;

		if (i >= keep) {
			omitted += p[i].w;
			continue;
		}
		s = json_object_new_array();
		json_object_array_add(s, stack_frames(m, json_object_array_get_idx(e, 0), legacy));
		json_object_array_add(s, num(p[i].w));
		json_object_array_add(stacks, s);
		if (remap && *remap)
			(*remap)[p[i].idx] = (int)i;
	}
	add(out, "from", json_object_new_string(from));
	add(out, "unit", json_object_new_string(unit));
	add(out, "stacks", stacks);
	add(out, "count", json_object_new_int64((int64_t)k));
	add(out, "total", num(total));
	add(out, "omitted", json_object_new_int64((int64_t)(k - keep)));
	add(out, "omitted_w", num(omitted));
cleanup:
	free(p);
	return out;
}

/* scalene_bpf.tracks' intervals as they are ([kind, thread, start, end, file,
 * line]), the first MAX_TRACKS of them. */
static struct json_object *tracks_model(struct json_object *iv)
{
	struct json_object *out = json_object_new_array();
	size_t n = iv ? json_object_array_length(iv) : 0, i;

	for (i = 0; out && i < n && i < MAX_TRACKS; i++) {
		struct json_object *e = json_object_array_get_idx(iv, i);

		if (json_object_is_type(e, json_type_array) && json_object_array_length(e) >= 4)
			json_object_array_add(out, json_object_get(e));
	}
	return out;
}

/* combined_stacks_timeline as [[t_s, stack, count, thread], ...], stack being
 * the index in the CPU flame graph's stacks or -1 (a stack left out). */
static struct json_object *timeline_model(struct model *m, struct json_object *ev, const int *remap,
					  size_t nremap)
{
	struct json_object *out = json_object_new_array();
	size_t n = ev ? json_object_array_length(ev) : 0, i, kept = 0;

	for (i = 0; out && i < n; i++) {
		struct json_object *e = json_object_array_get_idx(ev, i), *r;
		double si = vj_num(e, "stack_index");
		int idx = -1;

		if (!json_object_is_type(e, json_type_object))
			continue;
		if (kept == MAX_TIMELINE)
			break;
		if (remap && si >= 0 && si < (double)nremap)
			idx = remap[(size_t)si];
		r = json_object_new_array();
		json_object_array_add(r, num(vj_num(e, "t_sec")));
		json_object_array_add(r, json_object_new_int(idx));
		json_object_array_add(r, integer(vj_num(e, "count")));
		json_object_array_add(r, integer(vj_num(e, "thread_id")));
		json_object_array_add(out, r);
		kept++;
	}
	add(m->root, "timeline_omitted", json_object_new_int64((int64_t)(n - i)));
	return out;
}

/* The loss counters that are not zero: [["group.key", value, meaning], ...]. */
static struct json_object *quality_model(struct json_object *doc)
{
	struct json_object *out = json_object_new_array();
	char name[64];
	size_t i;

	for (i = 0; out && i < vj_nlosses; i++) {
		double v = vj_loss_value(doc, &vj_losses[i]);
		struct json_object *q;

		if (!(v > 0))
			continue;
		snprintf(name, sizeof(name), "%s.%s", vj_losses[i].group, vj_losses[i].key);
		q = json_object_new_array();
		json_object_array_add(q, json_object_new_string(name));
		json_object_array_add(q, integer(v));
		json_object_array_add(q, json_object_new_string(vj_losses[i].label));
		json_object_array_add(out, q);
	}
	return out;
}

/* The lines that put work on the GPU (scalene_bpf.gpu.lines), the first
 * VJ_GPU_LINES_SHOWN: [{file, line, calls, kernels, kernel_s, copy_mb:
 * {dir: MB, ...} (the directions with data), alloc_mb, src}, ...]; NULL when
 * the profile has none.  How many there are in *total. */
static struct json_object *gpu_lines_model(struct json_object *doc, size_t *total)
{
	struct vj_gpu_line v[VJ_GPU_LINES_SHOWN];
	size_t n = vj_gpu_lines(doc, v, VJ_GPU_LINES_SHOWN), i;
	struct json_object *out;
	int d;

	*total = n;
	if (!n || !(out = json_object_new_array()))
		return NULL;
	for (i = 0; i < n && i < VJ_GPU_LINES_SHOWN; i++) {
		struct json_object *r = json_object_new_object(), *copy = json_object_new_object();

		if (!r || !copy) {
			json_object_put(r);
			json_object_put(copy);
			break;
		}
		add(r, "file", text(v[i].file, MAX_NAME_BYTES * 4));
		add(r, "line", json_object_new_int(v[i].line));
		add(r, "calls", integer(v[i].calls));
		add(r, "kernels", integer(v[i].kernels));
		add(r, "kernel_s", num(v[i].kernel_s));
		for (d = 0; d < VJ_GPU_DIRS; d++) {
			if (v[i].copy_mb[d] > 0)
				add(copy, vj_gpu_dirs[d], num(v[i].copy_mb[d]));
		}
		add(r, "copy_mb", copy);
		add(r, "alloc_mb", num(v[i].alloc_mb));
		add(r, "src", source_text(vj_source_of(doc, v[i].file, v[i].line)));
		json_object_array_add(out, r);
	}
	return out;
}

/* The profile's warnings (scalene_bpf.warnings): [text, ...]. */
static struct json_object *warnings_model(struct json_object *facts)
{
	struct json_object *in = vj_array(facts, "warnings"), *out = json_object_new_array();
	size_t i;

	for (i = 0; out && in && i < json_object_array_length(in); i++) {
		struct json_object *w = json_object_array_get_idx(in, i);

		if (json_object_is_type(w, json_type_string))
			json_object_array_add(out, text(json_object_get_string(w), 2000));
	}
	return out;
}

static void header_model(struct model *m, struct json_object *doc, const char *name)
{
	struct json_object *r = m->root, *facts = vj_object(doc, "scalene_bpf"), *gpu;
	size_t ngpu;

	add(r, "name", text(name, MAX_NAME_BYTES * 4));
	add(r, "program", text(vj_str(doc, "program"), MAX_NAME_BYTES * 4));
	add(r, "producer", json_object_new_string(facts ? "scalene-bpf" : "Scalene"));
	add(r, "elapsed", num(vj_num(doc, "elapsed_time_sec")));
	add(r, "memory", json_object_new_boolean(m->sel.memory));
	add(r, "churn", json_object_new_boolean(m->churn_files != NULL));
	add(r, "gpu", json_object_new_boolean(m->sel.gpu));
	add(r, "gpu_device", text(vj_str(doc, "gpu_device"), 40));
	/* "nvml-sampling" (--pid) or "cupti": what the GPU numbers are. */
	add(r, "gpu_method", text(vj_str(vj_object(facts, "gpu"), "method"), 40));
	add(r, "async", json_object_new_boolean(vj_flag(doc, "async_profile")));
	add(r, "await", json_object_new_boolean(m->sel.await));
	if (vj_await_s(doc) >= 0)
		add(r, "await_s", num(vj_await_s(doc)));
	if (vj_async_not_covered(doc))
		add(r, "await_not_covered", text(vj_async_not_covered(doc), 300));
	add(r, "threshold", num(m->sel.all_lines ? 0 : m->sel.threshold));
	add(r, "max_footprint_mb", num(vj_num(doc, "max_footprint_mb")));
	add(r, "footprint_measured", json_object_new_boolean(vj_footprint_measured(doc)));
	{
		char sentence[600];

		if (vj_memory_attach_text(doc, sentence, sizeof(sentence)))
			add(r, "memory_attach", text(sentence, sizeof(sentence)));
	}
	if (vj_probe_overhead_s(doc) > 0)
		add(r, "probe_overhead_s", num(vj_probe_overhead_s(doc)));
	{
		char note[512];

		if (vj_off_lines_text(doc, note, sizeof(note)))
			add(r, "off_lines_note", text(note, sizeof(note)));
	}
	add(r, "growth_rate", num(vj_num(doc, "growth_rate")));
	add(r, "alloc_samples", integer(vj_num(doc, "alloc_samples")));
	add(r, "native_mb", num(vj_num(doc, "native_allocations_mb")));
	add(r, "footprint", time_series(vj_array(doc, "samples"), MAX_FOOTPRINT));
	if (facts) {
		if (vj_num(vj_object(facts, "bpf"), "samples") > 0)
			add(r, "samples", integer(vj_num(vj_object(facts, "bpf"), "samples")));
		add(r, "sampled_s", num(vj_num(facts, "total_sampled_s")));
		if (m->sel.gil)
			add(r, "gil_s", num(vj_num(facts, "gil_wait_s")));
		add(r, "quality", quality_model(doc));
		add(r, "warnings", warnings_model(facts));
		gpu = gpu_lines_model(doc, &ngpu);
		if (gpu) {
			add(r, "gpu_lines", gpu);
			add(r, "gpu_lines_total", json_object_new_int64((int64_t)ngpu));
		}
	}
}

static void stacks_model(struct model *m, struct json_object *doc)
{
	struct json_object *cpu, *mem, *gpu;
	int *remap = NULL;
	size_t n = 0;

	cpu = stack_set(m, vj_array(doc, "combined_stacks"), 0, "combined_stacks", "samples",
			&remap);
	if (cpu) {
		n = json_object_array_length(vj_array(doc, "combined_stacks"));
	} else {
		free(remap);
		remap = NULL;
		cpu = stack_set(m, vj_array(doc, "stacks"), 1, "stacks", "samples", NULL);
	}
	add(m->root, "cpu", cpu);
	/* Scalene's own count of samples: what its stacks add up to. */
	if (cpu && !json_object_object_get_ex(m->root, "samples", NULL))
		add(m->root, "samples", integer(vj_num(cpu, "total")));
	mem = stack_set(m, vj_array(doc, "memory_stacks"), 0, "memory_stacks", "MB", NULL);
	add(m->root, "mem", mem);
	gpu = stack_set(m, vj_array(vj_object(doc, "scalene_bpf"), "gpu_stacks"), 0,
			"scalene_bpf.gpu_stacks", "s", NULL);
	if (gpu)
		add(m->root, "gpu_flame", gpu);
	add(m->root, "timeline",
	    timeline_model(m, vj_array(doc, "combined_stacks_timeline"), remap, n));
	add(m->root, "tracks",
	    tracks_model(
		    vj_array(vj_object(vj_object(doc, "scalene_bpf"), "tracks"), "intervals")));
	free(remap);
}

/* The model as JSON that cannot end the script element it sits in. */
static void put_model(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if (*p == '<' || *p == '>' || *p == '&') {
			fprintf(f, "\\u%04x", *p);
		} else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			fprintf(f, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
			p += 2;
		} else {
			fputc(*p, f);
		}
	}
}

/* The template with its @@NAME@@ marks filled in. */
static void put_page(FILE *f, const char *model, const char *nonce)
{
	static const char *const marks[] = { "@@CSS@@", "@@JS@@", "@@DATA@@", "@@NONCE@@" };
	const char *p = html_page, *mark;
	size_t i;

	while ((mark = strstr(p, "@@"))) {
		fwrite(p, 1, (size_t)(mark - p), f);
		for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
			if (!strncmp(mark, marks[i], strlen(marks[i])))
				break;
		switch (i) {
		case 0:
			fputs(html_css, f);
			break;
		case 1:
			fputs(html_js, f);
			break;
		case 2:
			put_model(f, model);
			break;
		case 3:
			fputs(nonce, f);
			break;
		default:
			fputs("@@", f);
		}
		p = mark + (i < sizeof(marks) / sizeof(marks[0]) ? strlen(marks[i]) : 2);
	}
	fputs(p, f);
}

/* A fresh CSP nonce: only the page's own script and style may run, whatever
 * the profile's text might make of the page. */
static int make_nonce(char *buf, size_t n)
{
	unsigned char r[16];
	size_t i;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -errno;
	for (i = 0; i < sizeof(r) && 2 * i + 2 < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", r[i]);
	return 0;
}

/* The page of a model: 0, -ENOMEM, or -errno with the reason to err. */
static int write_page(struct json_object *root, FILE *f, FILE *err)
{
	const char *model;
	char nonce[40];
	int ret;

	ret = make_nonce(nonce, sizeof(nonce));
	if (ret) {
		fprintf(err, "scalene-bpf: failed to get random bytes for the page: %s\n",
			strerror(-ret));
		return ret;
	}
	model = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!model)
		return -ENOMEM;
	put_page(f, model, nonce);
	return ferror(f) ? -EIO : 0;
}

int view_write_html(struct json_object *doc, const char *name, const struct view_opts *vo, FILE *f,
		    FILE *err)
{
	struct model m = { 0 };
	struct json_object *files;
	int ret = 0;

	if (vj_check_profile(doc, err))
		return -EINVAL;
	files = vj_object(doc, "files");
	/* Lines under the threshold, with no memory or GPU activity, are left
	 * out of the page. */
	vj_select_init(&m.sel, doc, vo ? vo->threshold : DEFAULT_CPU_PERCENT_THRESHOLD,
		       vo && vo->all_lines);
	m.churn_files = vj_churn_files(doc);
	m.root = json_object_new_object();
	m.frames = json_object_new_array();
	m.frame_index = json_object_new_object();
	if (!m.root || !m.frames || !m.frame_index) {
		ret = -ENOMEM;
		goto cleanup;
	}
	header_model(&m, doc, name);
	add(m.root, "files", files_model(&m, files));
	stacks_model(&m, doc);
	add(m.root, "frames", json_object_get(m.frames));
	ret = write_page(m.root, f, err);
cleanup:
	if (ret == -ENOMEM)
		fprintf(err, "scalene-bpf: out of memory writing the HTML view\n");
	json_object_put(m.frame_index);
	json_object_put(m.frames);
	json_object_put(m.root);
	return ret;
}

/* ---------------------------------------------------- a system-wide run */

static struct json_object *host_proc_model(const struct host_proc *p, size_t rank, double total)
{
	struct json_object *r = json_object_new_object();
	double share = total > 0 ? 100 / total : 0;
	char exit[32];

	if (!r)
		return NULL;
	if (!p->exited)
		snprintf(exit, sizeof(exit), "running");
	else if (p->has_exit_code)
		snprintf(exit, sizeof(exit), "exit %lld", p->exit_code);
	else
		snprintf(exit, sizeof(exit), "exited");
	add(r, "n", json_object_new_int64((int64_t)rank));
	add(r, "pid", json_object_new_int64(p->pid));
	add(r, "ns_pid", json_object_new_int64(p->ns_pid));
	add(r, "cmd", text(p->command, MAX_NAME_BYTES * 4));
	add(r, "comm", text(p->comm, MAX_NAME_BYTES));
	if (p->not_profiled) {
		add(r, "reason", text(p->not_profiled, MAX_NAME_BYTES * 2));
		return r;
	}
	add(r, "python", p->python ? text(p->python, 40) : NULL);
	add(r, "cpu", num(p->cpu_s));
	add(r, "total", num(p->cpu_s * share));
	add(r, "py", num(p->python_s * share));
	add(r, "c", num(p->native_s * share));
	add(r, "sys", num(p->system_s * share));
	if (p->await_s > 0)
		add(r, "await", num(p->await_s));
	add(r, "peak", p->peak_rss_mb >= 0 ? num(p->peak_rss_mb) : NULL);
	add(r, "samples", integer(p->samples));
	add(r, "exit", json_object_new_string(exit));
	add(r, "exited", json_object_new_boolean(p->exited));
	if (p->profile)
		add(r, "profile", text(p->profile, MAX_NAME_BYTES));
	if (p->page)
		add(r, "page", text(p->page, MAX_NAME_BYTES * 2));
	if (p->profile_refused)
		add(r, "problem",
		    json_object_new_string("the index names a profile file outside the "
					   "directory or with unsafe characters: refused"));
	else if (!p->profile)
		add(r, "problem", json_object_new_string("no profile was written"));
	else if (p->problem)
		add(r, "problem", text(p->problem, 2000));
	return r;
}

int view_write_host_html(const struct host_index *hi, const char *name, FILE *f, FILE *err)
{
	struct json_object *root = json_object_new_object(), *procs, *skipped, *counts, *warn;
	double total = host_index_cpu_s(hi);
	char memory[320];
	size_t i;
	int ret;

	procs = json_object_new_array();
	skipped = json_object_new_array();
	counts = json_object_new_array();
	warn = json_object_new_array();
	if (!root || !procs || !skipped || !counts || !warn) {
		json_object_put(procs);
		json_object_put(skipped);
		json_object_put(counts);
		json_object_put(warn);
		ret = -ENOMEM;
		goto cleanup;
	}
	add(root, "kind", json_object_new_string("host"));
	add(root, "name", text(name, MAX_NAME_BYTES * 4));
	add(root, "host", text(hi->host, MAX_NAME_BYTES));
	add(root, "kernel", text(hi->kernel, MAX_NAME_BYTES));
	add(root, "elapsed", num(hi->elapsed_s));
	add(root, "rate", num(hi->rate_hz));
	if (hi->start_time > 0)
		add(root, "start", num(hi->start_time));
	add(root, "cpu_s", num(total));
	host_index_memory_text(hi, memory, sizeof(memory));
	if (memory[0])
		add(root, "memory", text(memory, sizeof(memory)));
	add(root, "profiled", json_object_new_int64((int64_t)hi->nprofiled));
	add(root, "not_profiled",
	    integer(hi->ncounts ? host_index_not_profiled(hi)
				: (double)(hi->nprocs - hi->nprofiled)));
	for (i = 0; i < hi->ncounts; i++) {
		struct json_object *c = json_object_new_array();

		json_object_array_add(c, text(hi->counts[i].reason, MAX_NAME_BYTES));
		json_object_array_add(c, integer(hi->counts[i].count));
		json_object_array_add(counts, c);
	}
	for (i = 0; i < hi->nprocs; i++)
		json_object_array_add(i < hi->nprofiled ? procs : skipped,
				      host_proc_model(&hi->procs[i], i + 1, total));
	for (i = 0; i < hi->nwarnings; i++)
		json_object_array_add(warn, text(hi->warnings[i], 2000));
	add(root, "counts", counts);
	add(root, "procs", procs);
	add(root, "skipped", skipped);
	add(root, "warnings", warn);
	ret = write_page(root, f, err);
cleanup:
	if (ret == -ENOMEM)
		fprintf(err, "scalene-bpf: out of memory writing the HTML view\n");
	json_object_put(root);
	return ret;
}
