// SPDX-License-Identifier: BSD-2-Clause
/*
 * The terminal view of a profile (ours or Scalene's): a short header, then
 * per file the lines that matter with their Python / native / system time
 * (and memory and GPU columns when the profile has them), the file's
 * functions, and a footer naming the data the profiler lost.
 *
 * The profile is untrusted input: types are checked before use, numbers are
 * made to fit their columns, and text from the profile never sends a control
 * character to the terminal.  Every output row is built in memory and cut to
 * the terminal's width, so no row is ever wider than vo->width.
 */
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "base/log.h"
#include "view/hostindex.h"
#include "view/view.h"
#include "view/viewutil.h"

#define MAX_WIDTH 1000
/* Where text was cut to fit (one column). */
#define CUT_MARK "\u2026"
#define DEFAULT_WIDTH 100
/* Bytes of one row: four per column plus the colour escapes. */
#define ROW_BYTES (4 * MAX_WIDTH + 256)
#define LINE_TEXT 4096
/* Source text keeps at least this many columns (a quarter of the width,
 * at least 10) before the other columns go... */
#define MIN_SOURCE 20
/* ... and the graphics go before it is cut under this many. */
#define SOURCE_WANTED 48

/* SGR colours; used only when the caller asked for colour. */
#define SGR_BOLD "1"
#define SGR_DIM "2"
#define SGR_HOT "1;31"
#define SGR_PYTHON "34"
#define SGR_NATIVE "36"
#define SGR_SYSTEM "33"
#define SGR_MEMORY "32"
#define SGR_GPU "35"
#define SGR_AWAIT "96"
#define SGR_WARN "1;33"

struct ctx {
	FILE *f;
	int width;
	bool color;
	bool utf8;
	struct vj_select sel; /* the lines shown, and whether memory and GPU are */
	double elapsed_ns;
	double footprint_mb; /* the sparklines' top */
	/* scalene_bpf.allocation_churn.files (NULL: not one of our profiles),
	 * and the entry of the file being printed */
	struct json_object *churn_files, *churn;
	char text[LINE_TEXT];
};

/* One output row. */
struct row {
	char buf[ROW_BYTES];
	size_t len;
	int cols;
	bool styled;
};

/* ------------------------------------------------------------------ rows */

static void row_reset(struct row *r)
{
	r->len = 0;
	r->cols = 0;
	r->styled = false;
}

static int row_room(const struct ctx *c, const struct row *r)
{
	return c->width - r->cols;
}

/* An SGR escape ("0": back to normal, only when something is set). */
static void row_style(const struct ctx *c, struct row *r, const char *sgr)
{
	bool reset = !strcmp(sgr, "0");
	int n;

	if (!c->color || (reset && !r->styled) || r->len + 16 > sizeof(r->buf))
		return;
	n = snprintf(r->buf + r->len, sizeof(r->buf) - r->len, "\033[%sm", sgr);
	if (n > 0 && (size_t)n < sizeof(r->buf) - r->len) {
		r->len += n;
		r->styled = !reset;
	}
}

static void row_unstyle(const struct ctx *c, struct row *r)
{
	row_style(c, r, "0");
}

/* Text from the profile (or our own), at most max columns and never past
 * the row's width; characters that must not reach a terminal become '?',
 * a tab becomes the spaces up to the next multiple of 8.  Text cut short
 * ends in CUT_MARK, so that a cut is never taken for the whole. */
static void row_text(const struct ctx *c, struct row *r, const char *s, int max)
{
	int start = r->cols, room = row_room(c, r);
	size_t left = strlen(s), last_len = r->len;
	int last_cols = r->cols;

	if (max > room)
		max = room;
	while (left && r->cols - start < max && r->len + 8 < sizeof(r->buf)) {
		size_t n;
		int w;

		if (*s == '\n' || *s == '\r')
			break;
		last_len = r->len;
		last_cols = r->cols;
		w = vj_char_cols(s, left, &n);
		if (*s == '\t') {
			do
				r->buf[r->len++] = ' ';
			while (++r->cols - start < max && (r->cols - start) % 8);
		} else if (w < 0) {
			r->buf[r->len++] = '?';
			r->cols++;
		} else if (r->cols - start + w <= max) {
			memcpy(r->buf + r->len, s, n);
			r->len += n;
			r->cols += w;
		} else {
			break;
		}
		s += n;
		left -= n;
	}
	if (!left || *s == '\n' || *s == '\r' || max <= 0)
		return;
	/* Cut: the mark takes the last column, or the last character's. */
	if (r->cols - start >= max) {
		r->len = last_len;
		r->cols = last_cols;
	}
	if (r->len + sizeof(CUT_MARK) <= sizeof(r->buf)) {
		memcpy(r->buf + r->len, CUT_MARK, sizeof(CUT_MARK) - 1);
		r->len += sizeof(CUT_MARK) - 1;
		r->cols++;
	}
}

static void row_printf(const struct ctx *c, struct row *r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void row_printf(const struct ctx *c, struct row *r, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	row_text(c, r, tmp, MAX_WIDTH);
}

static void row_pad_to(const struct ctx *c, struct row *r, int col)
{
	if (col > c->width)
		col = c->width;
	while (r->cols < col && r->len + 1 < sizeof(r->buf)) {
		r->buf[r->len++] = ' ';
		r->cols++;
	}
}

/* Writes the row without trailing blanks, then starts a new one. */
static void row_emit(const struct ctx *c, struct row *r)
{
	while (r->len && r->buf[r->len - 1] == ' ')
		r->len--;
	row_unstyle(c, r);
	fwrite(r->buf, 1, r->len, c->f);
	fputc('\n', c->f);
	row_reset(r);
}

/* ---------------------------------------------------------- numbers */

/* A right-aligned cell of width w: blank for zero. */
static void cell_num(const struct ctx *c, struct row *r, int w, double v, int dec,
		     const char *suffix, const char *sgr)
{
	char s[64];

	if (v == 0) {
		row_pad_to(c, r, r->cols + w);
		return;
	}
	vj_fit_num(s, sizeof(s), w, v, dec, suffix);
	row_pad_to(c, r, r->cols + w - (int)strlen(s));
	if (sgr)
		row_style(c, r, sgr);
	row_text(c, r, s, w);
	if (sgr)
		row_style(c, r, "0");
}

/* A number cell and the blank after it. */
static void cell_num_gap(const struct ctx *c, struct row *r, int w, double v, int dec,
			 const char *suffix, const char *sgr)
{
	cell_num(c, r, w, v, dec, suffix, sgr);
	row_pad_to(c, r, r->cols + 1);
}

/* A left-aligned text cell of width w and the column's gap. */
static void cell_text(const struct ctx *c, struct row *r, int w, const char *s, const char *sgr)
{
	int end = r->cols + w;

	if (sgr)
		row_style(c, r, sgr);
	row_text(c, r, s, w);
	if (sgr)
		row_style(c, r, "0");
	row_pad_to(c, r, end + 1);
}

/* A right-aligned text cell of width w and the column's gap. */
static void cell_right(const struct ctx *c, struct row *r, int w, const char *s)
{
	int len = vj_text_cols(s);

	row_pad_to(c, r, r->cols + (w > len ? w - len : 0));
	row_text(c, r, s, w);
	row_pad_to(c, r, r->cols + 1);
}

static int max_cols(int a, const char *s)
{
	int w = vj_text_cols(s);

	return w > a ? w : a;
}

/* ----------------------------------------------------------- layout */

enum col {
	COL_LINE,
	COL_PYTHON,
	COL_NATIVE,
	COL_SYSTEM,
	COL_GIL,
	COL_AWAIT,
	COL_BAR,
	COL_AVG_MB,
	COL_PEAK_MB,
	COL_SPARK,
	COL_MEM_PCT,
	COL_CHURN,
	COL_COPY,
	COL_GPU_PCT,
	COL_GPU_MB,
	COL_MAX,
};

static const struct {
	const char *title;
	int width, min; /* min < width: the column can be narrowed */
} columns[COL_MAX] = {
	[COL_LINE] = { "line", 5, 5 },	     [COL_PYTHON] = { "python", 6, 6 },
	[COL_NATIVE] = { "native", 6, 6 },   [COL_SYSTEM] = { "system", 6, 6 },
	[COL_GIL] = { "GIL", 6, 6 },	     [COL_AWAIT] = { "await", 6, 6 },
	[COL_BAR] = { "time", 10, 4 },	     [COL_AVG_MB] = { "avg MB", 6, 6 },
	[COL_PEAK_MB] = { "peak MB", 7, 7 }, [COL_SPARK] = { "timeline", 12, 5 },
	[COL_MEM_PCT] = { "mem%", 4, 4 },    [COL_CHURN] = { "churn", 6, 6 },
	[COL_COPY] = { "MB/s", 5, 5 },	     [COL_GPU_PCT] = { "gpu%", 4, 4 },
	[COL_GPU_MB] = { "gpu MB", 6, 6 },
};

/* The order in which columns go when the terminal is narrow: the graphics
 * first (while the source would be cut), then, once the source is down to
 * MIN_SOURCE columns, the others. */
static const enum col drop_order[] = {
	COL_COPY,    COL_CHURN, COL_GPU_MB, COL_AVG_MB, COL_GPU_PCT, COL_MEM_PCT,
	COL_PEAK_MB, COL_GIL,	COL_SYSTEM, COL_AWAIT,	COL_NATIVE,
};

struct layout {
	int w[COL_MAX]; /* 0: not shown */
};

/* The terminal columns a table of n column widths takes: each shown column
 * and the blank after it, and the blank before the first. */
static int cols_used(const int *w, int n)
{
	int i, used = 0;

	for (i = 0; i < n; i++)
		used += w[i] ? w[i] + 1 : 0;
	return used + 1;
}

static int layout_used(const struct layout *l)
{
	return cols_used(l->w, COL_MAX);
}

/* The fewest columns a table leaves to its text (source or command) when
 * others must go: MIN_SOURCE, or a quarter of a narrower terminal, at least 10. */
static int min_text_cols(int width)
{
	int min = width / 4 < MIN_SOURCE ? width / 4 : MIN_SOURCE;

	return min < 10 ? 10 : min;
}

/* The columns of a file's table, given the widest text it shows (capped at
 * SOURCE_WANTED: a long line is cut rather than lose the graphics). */
static void layout_make(const struct ctx *c, struct layout *l, int text)
{
	int k, min, want = text < SOURCE_WANTED ? text : SOURCE_WANTED;
	size_t i;

	for (k = 0; k < COL_MAX; k++) {
		bool mem = k >= COL_AVG_MB && k <= COL_COPY, gpu = k >= COL_GPU_PCT;
		bool off = (mem && !c->sel.memory) || (gpu && !c->sel.gpu) ||
			   (k == COL_GIL && !c->sel.gil) || (k == COL_AWAIT && !c->sel.await);

		l->w[k] = off ? 0 : columns[k].width;
	}
	if (!c->churn_files)
		l->w[COL_CHURN] = 0; /* not one of our profiles */
	if (want < MIN_SOURCE)
		want = MIN_SOURCE;
	while (layout_used(l) + want > c->width &&
	       (l->w[COL_SPARK] > columns[COL_SPARK].min || l->w[COL_BAR] > columns[COL_BAR].min)) {
		if (l->w[COL_SPARK] > columns[COL_SPARK].min)
			l->w[COL_SPARK]--;
		else
			l->w[COL_BAR]--;
	}
	if (layout_used(l) + want > c->width)
		l->w[COL_BAR] = 0;
	if (layout_used(l) + want > c->width)
		l->w[COL_SPARK] = 0;
	min = min_text_cols(c->width);
	for (i = 0; i < sizeof(drop_order) / sizeof(drop_order[0]); i++) {
		if (layout_used(l) + min <= c->width)
			break;
		l->w[drop_order[i]] = 0;
	}
}

/* ------------------------------------------------------------ cells */

/* The stacked time bar: Python, native, system, 100% = the whole width. */
static void cell_bar(const struct ctx *c, struct row *r, int w, double py, double nat, double sys)
{
	const double parts[3] = { py, nat, sys };
	static const char *const sgr[3] = { SGR_PYTHON, SGR_NATIVE, SGR_SYSTEM };
	static const char *const glyph_utf8[3] = { "\u2588", "\u2593", "\u2591" };
	static const char glyph_ascii[3][2] = { "#", "+", "." };
	int start = r->cols, i, k;
	double acc = 0;

	for (i = 0; i < 3; i++) {
		int upto;

		acc += parts[i] > 0 ? parts[i] : 0;
		upto = acc >= 100 ? w : (int)(acc / 100.0 * w + 0.5);
		if (upto <= r->cols - start)
			continue;
		row_style(c, r, sgr[i]);
		for (k = r->cols - start; k < upto; k++)
			row_text(c, r, c->utf8 ? glyph_utf8[i] : glyph_ascii[i], 1);
		row_style(c, r, "0");
	}
	row_pad_to(c, r, start + w);
}

/* Sample i of memory_samples: its time and footprint; false when it is not
 * a [t, mb] pair. */
static bool spark_sample(struct json_object *samples, size_t i, double *t, double *mb)
{
	struct json_object *p = json_object_array_get_idx(samples, i);

	if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) < 2)
		return false;
	*t = vj_num_at(p, 0);
	*mb = vj_num_at(p, 1);
	return true;
}

/* The line's memory_samples ([t_ns, footprint MB] pairs) over the run's
 * time, one cell per slice of it: the highest footprint sampled in the
 * slice, as a block of eight heights (ASCII without a UTF-8 locale). */
static void cell_spark(const struct ctx *c, struct row *r, int w, struct json_object *samples)
{
	static const char *const utf8[8] = { "\u2581", "\u2582", "\u2583", "\u2584",
					     "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = "_.-:=+*#";
	double cell[MAX_WIDTH], t0 = 0, t1 = c->elapsed_ns, top = c->footprint_mb, t, mb;
	size_t i, n = samples ? json_object_array_length(samples) : 0;
	int start = r->cols, k;
	bool any = false;

	if (w > MAX_WIDTH)
		w = MAX_WIDTH;
	for (k = 0; k < w; k++)
		cell[k] = -1;
	/* The run's span, widened to samples outside it (a profile of
	 * Scalene's or a hand-made one); the top is the peak footprint. */
	for (i = 0; i < n; i++) {
		if (!spark_sample(samples, i, &t, &mb))
			continue;
		t0 = t < t0 ? t : t0;
		t1 = t > t1 ? t : t1;
		top = mb > top ? mb : top;
		any = true;
	}
	for (i = 0; any && i < n; i++) {
		if (!spark_sample(samples, i, &t, &mb))
			continue;
		k = t1 > t0 ? (int)((t - t0) / (t1 - t0) * w) : 0;
		k = k < 0 ? 0 : k >= w ? w - 1 : k;
		if (mb > cell[k])
			cell[k] = mb < 0 ? 0 : mb;
	}
	if (any)
		row_style(c, r, SGR_MEMORY);
	for (k = 0; any && k < w; k++) {
		int level;

		if (cell[k] < 0) {
			row_text(c, r, " ", 1);
			continue;
		}
		level = top > 0 ? (int)(cell[k] / top * 7.999) : 0;
		level = level < 0 ? 0 : level > 7 ? 7 : level;
		if (c->utf8)
			row_text(c, r, utf8[level], 1);
		else
			row_text(c, r, (char[]){ ascii[level], '\0' }, 1);
	}
	row_style(c, r, "0");
	row_pad_to(c, r, start + w);
}

/* ------------------------------------------------------------- lines */

static const char *pct_style(double v, const char *normal)
{
	return v >= 20 ? SGR_HOT : normal;
}

static void print_header_row(struct ctx *c, const struct layout *l, const char *last)
{
	struct row r;
	int k;

	row_reset(&r);
	row_style(c, &r, SGR_BOLD);
	for (k = 0; k < COL_MAX; k++) {
		const char *title = columns[k].title;
		int len, w = l->w[k];

		if (!w)
			continue;
		if (k == COL_SPARK && w < (int)strlen(title))
			title = "trend";
		len = (int)strlen(title);
		if (k == COL_BAR || k == COL_SPARK) {
			row_text(c, &r, title, w);
			row_pad_to(c, &r, r.cols + w - (len < w ? len : w));
		} else {
			row_pad_to(c, &r, r.cols + w - len);
			row_text(c, &r, title, w);
		}
		row_pad_to(c, &r, r.cols + 1);
	}
	row_pad_to(c, &r, r.cols + 1);
	row_text(c, &r, last, MAX_WIDTH);
	row_emit(c, &r);
}

/* Under a row that awaited: the tasks seen waiting there (the first few,
 * then how many more) and how many tasks waited at once, as one row that
 * starts under the source text when it fits there, else further left. */
static void print_await_note(struct ctx *c, const struct layout *l, struct json_object *o,
			     struct row *r)
{
	const char *names[VJ_TASKS_SHOWN];
	size_t i, n = vj_task_names(o, names, VJ_TASKS_SHOWN);
	double mean = vj_num(o, "n_async_concurrency_mean");
	double peak = vj_num(o, "n_async_concurrency_peak");
	char note[LINE_TEXT];
	int len = 0, at, w;

	if (!n && mean <= 0 && peak <= 0)
		return;
	for (i = 0; i < n && i < VJ_TASKS_SHOWN; i++)
		len += snprintf(note + len, sizeof(note) - len, "%s%.40s",
				i ? ", " : "tasks: ", names[i]);
	if (n > VJ_TASKS_SHOWN)
		len += snprintf(note + len, sizeof(note) - len, " +%zu more", n - VJ_TASKS_SHOWN);
	if (mean > 0 || peak > 0)
		snprintf(note + len, sizeof(note) - len, "%sconcurrency %.1f mean, %.0f peak",
			 n ? "; " : "", mean, peak);
	w = vj_text_cols(note);
	at = layout_used(l);
	if (at + w > c->width)
		at = c->width - w;
	if (at < l->w[COL_LINE] + 2)
		at = l->w[COL_LINE] + 2;
	row_reset(r);
	row_pad_to(c, r, at);
	row_style(c, r, SGR_DIM);
	row_text(c, r, note, MAX_WIDTH);
	row_emit(c, r);
}

/* One table row: the numbers of l, then text (source or function name);
 * fn: o is a function. */
static void print_row(struct ctx *c, const struct layout *l, struct json_object *o,
		      const char *text, bool fn)
{
	double py = vj_num(o, "n_cpu_percent_python"), nat = vj_num(o, "n_cpu_percent_c");
	double sys = vj_num(o, "n_sys_percent");
	struct row r;

	row_reset(&r);
	if (l->w[COL_LINE])
		cell_num_gap(c, &r, l->w[COL_LINE], vj_num(o, "lineno"), 0, "", SGR_DIM);
	if (l->w[COL_PYTHON])
		cell_num_gap(c, &r, l->w[COL_PYTHON], py, 1, "%", pct_style(py, SGR_PYTHON));
	if (l->w[COL_NATIVE])
		cell_num_gap(c, &r, l->w[COL_NATIVE], nat, 1, "%", pct_style(nat, SGR_NATIVE));
	if (l->w[COL_SYSTEM])
		cell_num_gap(c, &r, l->w[COL_SYSTEM], sys, 1, "%", pct_style(sys, SGR_SYSTEM));
	if (l->w[COL_GIL]) {
		double gil = vj_gil_wait(o);

		cell_num_gap(c, &r, l->w[COL_GIL], gil, 1, "%", pct_style(gil, SGR_SYSTEM));
	}
	if (l->w[COL_AWAIT]) {
		double aw = vj_await(o);

		cell_num_gap(c, &r, l->w[COL_AWAIT], aw, 1, "%", pct_style(aw, SGR_AWAIT));
	}
	if (l->w[COL_BAR]) {
		cell_bar(c, &r, l->w[COL_BAR], py, nat, sys);
		row_pad_to(c, &r, r.cols + 1);
	}
	if (l->w[COL_AVG_MB])
		cell_num_gap(c, &r, l->w[COL_AVG_MB], vj_num(o, "n_avg_mb"), 1, "", SGR_MEMORY);
	if (l->w[COL_PEAK_MB])
		cell_num_gap(c, &r, l->w[COL_PEAK_MB], vj_num(o, "n_peak_mb"), 1, "", SGR_MEMORY);
	if (l->w[COL_SPARK]) {
		cell_spark(c, &r, l->w[COL_SPARK], vj_array(o, "memory_samples"));
		row_pad_to(c, &r, r.cols + 1);
	}
	if (l->w[COL_MEM_PCT])
		cell_num_gap(c, &r, l->w[COL_MEM_PCT], 100 * vj_num(o, "n_usage_fraction"), 0, "%",
			     SGR_MEMORY);
	if (l->w[COL_CHURN])
		cell_num_gap(c, &r, l->w[COL_CHURN], vj_churn(c->churn, o, fn), 1, "", SGR_MEMORY);
	if (l->w[COL_COPY])
		cell_num_gap(c, &r, l->w[COL_COPY], vj_num(o, "n_copy_mb_s"), 1, "", SGR_MEMORY);
	if (l->w[COL_GPU_PCT])
		cell_num_gap(c, &r, l->w[COL_GPU_PCT], vj_num(o, "n_gpu_percent"), 0, "%", SGR_GPU);
	if (l->w[COL_GPU_MB])
		cell_num_gap(c, &r, l->w[COL_GPU_MB], vj_num(o, "n_gpu_peak_memory_mb"), 1, "",
			     SGR_GPU);
	row_pad_to(c, &r, r.cols + 1);
	if (vj_row_heat(&c->sel, o) >= 20)
		row_style(c, &r, SGR_BOLD);
	row_text(c, &r, text, MAX_WIDTH);
	row_emit(c, &r);
	if (c->sel.await && vj_await(o) > 0)
		print_await_note(c, l, o, &r);
}

/* ---------------------------------------------------------- files */

struct file {
	const char *name;
	struct json_object *fd;
	double pct;
};

static const char *line_text(struct ctx *c, struct json_object *l)
{
	const char *s = vj_str(l, "line");

	c->text[0] = '\0';
	if (s)
		vj_unescape_line(s, c->text, sizeof(c->text));
	return c->text;
}

struct fn {
	struct json_object *o;
	double time, mem;
};

static int fn_cmp(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;

	if (x->time != y->time)
		return (x->time < y->time) - (x->time > y->time);
	return (x->mem < y->mem) - (x->mem > y->mem);
}

/* The file's functions that pass the same test as lines, the hottest
 * (vj_row_heat: time, and await share) first; NULL when there is none (or
 * no memory for them). */
static struct fn *shown_functions(const struct ctx *c, struct json_object *fd, size_t *count)
{
	struct json_object *funcs = vj_array(fd, "functions");
	size_t i, n = funcs ? json_object_array_length(funcs) : 0, k = 0;
	struct fn *v;

	*count = 0;
	if (!n || !(v = calloc(n, sizeof(*v))))
		return NULL;
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(funcs, i);

		if (!json_object_is_type(o, json_type_object) || !vj_row_shown(&c->sel, o))
			continue;
		v[k].o = o;
		v[k].time = vj_row_heat(&c->sel, o);
		v[k].mem = vj_num(o, "n_malloc_mb");
		k++;
	}
	if (!k) {
		free(v);
		return NULL;
	}
	qsort(v, k, sizeof(*v), fn_cmp);
	*count = k;
	return v;
}

static const char *fn_name(const struct fn *f)
{
	const char *name = vj_str(f->o, "line");

	return name ? name : "";
}

static const char *dedent(const char *s, int indent)
{
	while (indent-- > 0 && *s == ' ')
		s++;
	return s;
}

/* Prints the file when something in it is shown; false when nothing is. */
static bool print_file(struct ctx *c, const struct file *fi)
{
	struct json_object *lines = vj_array(fi->fd, "lines");
	size_t i, n = json_object_array_length(lines), first = n, nfn;
	struct fn *fns = shown_functions(c, fi->fd, &nfn);
	struct layout l;
	int widest = 0, indent = INT_MAX;
	struct row r;

	c->churn = vj_object(c->churn_files, fi->name);
	/* The first line shown, the common indentation of those shown (left
	 * out: it takes columns and says nothing), the widest. */
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(lines, i);
		const char *t;
		int w, sp;

		if (!vj_row_shown(&c->sel, o))
			continue;
		first = first < i ? first : i;
		t = line_text(c, o);
		for (sp = 0; t[sp] == ' '; sp++)
			;
		if (t[sp] && t[sp] != '\n' && t[sp] != '\r')
			indent = sp < indent ? sp : indent;
		w = vj_text_cols(t);
		widest = w > widest ? w : widest;
	}
	if (indent == INT_MAX)
		indent = 0;
	widest -= indent;
	if (!vj_file_shown(&c->sel, fi->fd)) {
		free(fns);
		return false;
	}
	for (i = 0; i < nfn; i++) {
		int w = vj_text_cols(fn_name(&fns[i]));

		widest = w > widest ? w : widest;
	}
	layout_make(c, &l, widest);
	row_reset(&r);
	row_emit(c, &r);
	row_style(c, &r, SGR_BOLD);
	row_text(c, &r, fi->name, MAX_WIDTH);
	row_style(c, &r, "0");
	row_printf(c, &r, ": %.1f%% of the time", fi->pct);
	row_emit(c, &r);
	if (first < n)
		print_header_row(c, &l, "source");
	for (i = first; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(lines, i);

		if (vj_row_shown(&c->sel, o))
			print_row(c, &l, o, dedent(line_text(c, o), indent), false);
	}
	if (nfn) {
		row_emit(c, &r);
		print_header_row(c, &l, "function");
	}
	for (i = 0; i < nfn; i++)
		print_row(c, &l, fns[i].o, fn_name(&fns[i]), true);
	free(fns);
	return true;
}

static int file_cmp(const void *a, const void *b)
{
	const struct file *x = a, *y = b;

	if (x->pct != y->pct)
		return (x->pct < y->pct) - (x->pct > y->pct);
	return strcmp(x->name, y->name);
}

/* ------------------------------------------------- header and footer */

static void print_wrapped(struct ctx *c, struct row *r, const char *text);

static void print_header(struct ctx *c, struct json_object *doc)
{
	struct json_object *bpf = vj_object(vj_object(doc, "scalene_bpf"), "bpf");
	const char *prog = vj_str(doc, "program"), *fname;
	struct row r;

	row_reset(&r);
	row_style(c, &r, SGR_BOLD);
	row_text(c, &r, "program: ", MAX_WIDTH);
	row_style(c, &r, "0");
	row_text(c, &r, prog ? prog : "(unknown)", MAX_WIDTH);
	row_emit(c, &r);
	row_printf(c, &r, "elapsed: %.2f s", vj_num(doc, "elapsed_time_sec"));
	if (bpf)
		row_printf(c, &r, ", %.0f CPU samples", vj_num(bpf, "samples"));
	if (c->sel.memory)
		row_printf(c, &r, ", %.0f allocation samples", vj_num(doc, "alloc_samples"));
	row_emit(c, &r);
	if (vj_no_gil(doc)) {
		row_printf(c, &r,
			   "GIL: none (free-threaded CPython: its threads run Python in "
			   "parallel)");
		row_emit(c, &r);
	} else if (c->sel.gil || vj_free_threaded(doc)) {
		struct json_object *facts = vj_object(doc, "scalene_bpf");
		double gil = vj_num(facts, "gil_wait_s"), total = vj_num(facts, "total_sampled_s");

		/* Part of the system time: the GIL column names it per line. */
		row_printf(c, &r, "GIL wait: %.2f s", gil);
		if (total > 0)
			row_printf(c, &r, " (%.1f%% of the time, in system)", 100 * gil / total);
		if (vj_free_threaded(doc))
			row_printf(c, &r, ", a free-threaded CPython with its GIL turned on");
		row_emit(c, &r);
	}
	if (vj_async_not_covered(doc)) {
		char text[300];

		snprintf(text, sizeof(text), "await: not measured: %s", vj_async_not_covered(doc));
		print_wrapped(c, &r, text);
	} else if (c->sel.await || vj_await_s(doc) > 0) {
		double aw = vj_await_s(doc);
		char text[200];

		/* The await column's base: a share of all await time, not of
		 * the run's time. */
		if (aw >= 0)
			snprintf(text, sizeof(text),
				 "await: %.2f s of event-loop idle time attributed to waiting "
				 "tasks%s",
				 aw,
				 c->sel.await ? "; the await column is each line's share of it"
					      : "");
		else
			snprintf(text, sizeof(text),
				 "await: the await column is each line's share of all await time");
		print_wrapped(c, &r, text);
	}
	if (c->sel.memory && !vj_footprint_measured(doc)) {
		struct json_object *duty =
			vj_object(vj_object(vj_object(doc, "scalene_bpf"), "memory"), "duty_cycle");

		print_wrapped(c, &r,
			      "memory: max footprint not measured, growth rate not measured "
			      "(frees are not seen when attached; scalene-bpf run measures them)");
		if (duty) {
			char text[320];

			snprintf(text, sizeof(text),
				 "memory: estimated from the allocation probes' windows, %.1f%% of "
				 "the time (their cost: %.1f%% of the program's CPU time)%s",
				 100 * vj_num(duty, "open_fraction"),
				 vj_num(duty, "cost_percent_of_program_cpu"),
				 vj_flag(duty, "totals_low")
					 ? "; the traps took most of its time in them, so the "
					   "totals are low, the lines' shares hold"
					 : "");
			print_wrapped(c, &r, text);
		}
	} else if (c->sel.memory) {
		row_printf(c, &r, "memory: max footprint %.1f MB, growth rate %.1f%%",
			   vj_num(doc, "max_footprint_mb"), vj_num(doc, "growth_rate"));
		fname = vj_str(doc, "max_footprint_fname");
		if (fname) {
			row_text(c, &r, ", at ", MAX_WIDTH);
			row_text(c, &r, fname, MAX_WIDTH);
			row_printf(c, &r, ":%.0f", vj_num(doc, "max_footprint_lineno"));
		}
		row_emit(c, &r);
	}
	if (c->sel.memory) {
		char text[640], sentence[600];

		/* --pid on 3.14+: the sampler put into the process (meminject.h). */
		if (vj_memory_attach_text(doc, sentence, sizeof(sentence))) {
			snprintf(text, sizeof(text), "memory: %s", sentence);
			print_wrapped(c, &r, text);
		}
	}
	if (c->sel.gpu) {
		const char *dev = vj_str(doc, "gpu_device");
		struct json_object *g = vj_object(vj_object(doc, "scalene_bpf"), "gpu");
		const char *method = vj_str(g, "method"), *util = vj_str(g, "utilization");

		row_text(c, &r, "gpu: ", MAX_WIDTH);
		row_text(c, &r, dev && *dev ? dev : "yes", MAX_WIDTH);
		/* Sampled from outside (--pid): the lines' GPU use is NVML's
		 * readings, and no line is known to have launched anything. */
		if (method && !strcmp(method, "nvml-sampling"))
			row_printf(c, &r,
				   ", use sampled through NVML every %.0f ms (%s "
				   "utilisation); no launch sites",
				   vj_num(g, "poll_ms"),
				   util && !strcmp(util, "per_process") ? "per-process"
				   : util && !strcmp(util, "mixed") ? "per-process or device-wide"
								    : "device-wide");
		row_emit(c, &r);
	}
}

/* text as rows no wider than the terminal, broken at spaces, the rows after
 * the first indented by two. */
static void print_wrapped(struct ctx *c, struct row *r, const char *text)
{
	const char *s = text;

	while (*s) {
		size_t n = strcspn(s, " ");
		char word[MAX_WIDTH];

		if (n >= sizeof(word))
			n = sizeof(word) - 1;
		if (r->cols > 2 && (int)n + 1 > row_room(c, r)) {
			row_emit(c, r);
			row_text(c, r, "  ", MAX_WIDTH);
		} else if (s != text) {
			row_text(c, r, " ", MAX_WIDTH);
		}
		memcpy(word, s, n);
		word[n] = '\0';
		row_text(c, r, word, MAX_WIDTH);
		s += n;
		while (*s == ' ')
			s++;
	}
	row_emit(c, r);
}

static void print_footer(struct ctx *c, struct json_object *doc)
{
	struct json_object *facts = vj_object(doc, "scalene_bpf");
	struct json_object *warnings = vj_array(facts, "warnings");
	double overhead = vj_probe_overhead_s(doc), stolen, total;
	char text[512];
	bool title = false;
	struct row r;
	size_t i;

	row_reset(&r);
	if (overhead > 0) {
		/* A few samples' worth reads as milliseconds, not "0.00 s". */
		if (overhead < 0.01)
			snprintf(text, sizeof(text),
				 "profiler overhead: %.1f ms of CPU time in the profiler's probes, "
				 "not counted in the lines' percentages",
				 overhead * 1e3);
		else
			snprintf(text, sizeof(text),
				 "profiler overhead: %.2f s of CPU time in the profiler's probes, "
				 "not counted in the lines' percentages",
				 overhead);
		row_emit(c, &r);
		print_wrapped(c, &r, text);
	}
	stolen = vj_stolen_s(doc);
	total = vj_num(facts, "total_sampled_s");
	/* Said when it is 1 % of the time or more: a busy host. */
	if (stolen > 0 && total > 0 && stolen >= 0.01 * total) {
		snprintf(
			text, sizeof(text),
			"steal: the host took the CPUs away for %.2f s while the program's threads "
			"ran (%.1f%% of the time sampled); left out of the lines' time, as the "
			"threads' own CPU clocks leave it out",
			stolen, 100.0 * stolen / total);
		row_emit(c, &r);
		print_wrapped(c, &r, text);
	}
	if (vj_off_lines_text(doc, text, sizeof(text))) {
		row_emit(c, &r);
		print_wrapped(c, &r, text);
	}
	for (i = 0; warnings && i < json_object_array_length(warnings); i++) {
		struct json_object *w = json_object_array_get_idx(warnings, i);

		if (!json_object_is_type(w, json_type_string))
			continue;
		row_emit(c, &r);
		row_style(c, &r, SGR_WARN);
		row_text(c, &r, "warning: ", MAX_WIDTH);
		row_unstyle(c, &r);
		print_wrapped(c, &r, json_object_get_string(w));
	}
	for (i = 0; i < vj_nlosses; i++) {
		double v = vj_loss_value(doc, &vj_losses[i]);

		if (v <= 0)
			continue;
		if (!title) {
			row_emit(c, &r);
			row_style(c, &r, SGR_WARN);
			row_text(c, &r,
				 "data lost or incomplete (scalene_bpf counters):", MAX_WIDTH);
			row_emit(c, &r);
			title = true;
		}
		row_printf(c, &r, "  %s.%s = %.0f: %s", vj_losses[i].group, vj_losses[i].key, v,
			   vj_losses[i].label);
		row_emit(c, &r);
	}
}

/* ------------------------------------------------ GPU launch sites */

/* Where a GPU line is: the file's base name and the line, or the whole path
 * when another listed line's file has the same base name. */
static void gpu_where(const struct vj_gpu_line *v, size_t n, size_t i, char *buf, size_t len)
{
	const char *slash = strrchr(v[i].file, '/'), *base = slash ? slash + 1 : v[i].file;
	size_t k;

	for (k = 0; *base && k < n; k++) {
		const char *ks = strrchr(v[k].file, '/'), *kb = ks ? ks + 1 : v[k].file;

		if (strcmp(v[k].file, v[i].file) && !strcmp(kb, base))
			break;
	}
	snprintf(buf, len, "%s:%d", *base && k == n ? base : v[i].file, v[i].line);
}

/* MB as the GPU block writes them: one decimal, two digits under 0.1. */
static int gpu_mb(char *buf, size_t n, double v)
{
	return snprintf(buf, n, v >= 0.1 ? "%.1f" : "%.2g", v);
}

/* A GPU line's copies, the directions with data only: "64.0 htod, 2.0 dtoh". */
static void gpu_copies(const struct vj_gpu_line *g, char *buf, size_t n)
{
	size_t len = 0;
	int d;

	buf[0] = '\0';
	for (d = 0; d < VJ_GPU_DIRS && len < n; d++) {
		if (!(g->copy_mb[d] > 0))
			continue;
		if (len)
			len += snprintf(buf + len, n - len, ", ");
		if (len < n)
			len += gpu_mb(buf + len, n - len, g->copy_mb[d]);
		if (len < n)
			len += snprintf(buf + len, n - len, " %s", vj_gpu_dirs[d]);
	}
}

/* Seconds as "1.25 s", "12.5 ms", "40.0 us"; "" for none. */
static void gpu_secs(char *buf, size_t n, double s)
{
	if (!(s > 0))
		buf[0] = '\0';
	else if (s >= 1)
		snprintf(buf, n, "%.2f s", s);
	else if (s >= 1e-3)
		snprintf(buf, n, "%.1f ms", s * 1e3);
	else
		snprintf(buf, n, "%.1f us", s * 1e6);
}

enum gcol {
	G_WHERE,
	G_CALLS,
	G_KERNELS,
	G_KTIME,
	G_COPY,
	G_ALLOC,
	G_MAX
};

static const char *const gcol_title[G_MAX] = {
	[G_WHERE] = "file:line",   [G_CALLS] = "calls",	 [G_KERNELS] = "kernels",
	[G_KTIME] = "kernel time", [G_COPY] = "copy MB", [G_ALLOC] = "alloc MB",
};

/* After the files: the lines that put work on the GPU (scalene_bpf.gpu.lines,
 * most GPU time first), the first VJ_GPU_LINES_SHOWN of them, with what
 * they launched and their source text. */
static void print_gpu_lines(struct ctx *c, struct json_object *doc)
{
	struct vj_gpu_line v[VJ_GPU_LINES_SHOWN];
	size_t n = vj_gpu_lines(doc, v, VJ_GPU_LINES_SHOWN), shown, i;
	char buf[320], num[64];
	int w[G_MAX], k;
	struct row r;

	if (!n)
		return;
	shown = n < VJ_GPU_LINES_SHOWN ? n : VJ_GPU_LINES_SHOWN;
	for (k = 0; k < G_MAX; k++)
		w[k] = (int)strlen(gcol_title[k]);
	for (i = 0; i < shown; i++) {
		gpu_copies(&v[i], buf, sizeof(buf));
		w[G_COPY] = max_cols(w[G_COPY], buf);
		gpu_where(v, shown, i, buf, sizeof(buf));
		w[G_WHERE] = max_cols(w[G_WHERE], buf);
	}
	if (w[G_COPY] > 48)
		w[G_COPY] = 48;
	if (w[G_WHERE] > c->width / 2)
		w[G_WHERE] = c->width / 2 > 10 ? c->width / 2 : 10;
	/* The calls go first on a narrow terminal; what was launched stays. */
	if (cols_used(w, G_MAX) > c->width)
		w[G_CALLS] = 0;
	row_reset(&r);
	row_emit(c, &r);
	if (n > shown)
		snprintf(buf, sizeof(buf),
			 "GPU work by the line that launched it (the %zu of %zu with the most GPU "
			 "time):",
			 shown, n);
	else
		snprintf(buf, sizeof(buf),
			 "GPU work by the line that launched it (most GPU time first):");
	row_style(c, &r, SGR_BOLD);
	print_wrapped(c, &r, buf);
	row_style(c, &r, SGR_BOLD);
	row_pad_to(c, &r, 1);
	for (k = 0; k < G_MAX; k++) {
		if (!w[k])
			continue;
		if (k == G_COPY || k == G_WHERE)
			cell_text(c, &r, w[k], gcol_title[k], NULL);
		else
			cell_right(c, &r, w[k], gcol_title[k]);
	}
	row_pad_to(c, &r, r.cols + 1);
	row_text(c, &r, "source", MAX_WIDTH);
	row_emit(c, &r);
	for (i = 0; i < shown; i++) {
		const char *src = vj_source_of(doc, v[i].file, v[i].line);

		row_pad_to(c, &r, 1);
		gpu_where(v, shown, i, buf, sizeof(buf));
		cell_text(c, &r, w[G_WHERE], buf, NULL);
		if (w[G_CALLS])
			cell_num_gap(c, &r, w[G_CALLS], v[i].calls, 0, "", NULL);
		cell_num_gap(c, &r, w[G_KERNELS], v[i].kernels, 0, "", SGR_GPU);
		gpu_secs(num, sizeof(num), v[i].kernel_s);
		if (*num)
			row_style(c, &r, SGR_GPU);
		cell_right(c, &r, w[G_KTIME], num);
		row_unstyle(c, &r);
		gpu_copies(&v[i], buf, sizeof(buf));
		cell_text(c, &r, w[G_COPY], buf, NULL);
		num[0] = '\0';
		if (v[i].alloc_mb > 0)
			gpu_mb(num, sizeof(num), v[i].alloc_mb);
		cell_right(c, &r, w[G_ALLOC], num);
		if (src) {
			const char *t;

			vj_unescape_line(src, c->text, sizeof(c->text));
			for (t = c->text; *t == ' ' || *t == '\t'; t++)
				;
			row_pad_to(c, &r, r.cols + 1);
			row_text(c, &r, t, MAX_WIDTH);
		}
		row_emit(c, &r);
	}
}

/* ------------------------------------------------------------- entry */

/* Whether the user's locale (LC_ALL / LC_CTYPE / LANG) is UTF-8, without
 * touching the process's own locale. */
static bool locale_is_utf8(void)
{
	locale_t loc = newlocale(LC_CTYPE_MASK, "", (locale_t)0);
	const char *cs;
	bool utf8;

	if (loc) {
		cs = nl_langinfo_l(CODESET, loc);
		utf8 = cs && (!strcasecmp(cs, "UTF-8") || !strcasecmp(cs, "UTF8"));
		freelocale(loc);
		return utf8;
	}
	/* A locale that is named but not installed: go by its name. */
	cs = getenv("LC_ALL");
	if (!cs || !*cs)
		cs = getenv("LC_CTYPE");
	if (!cs || !*cs)
		cs = getenv("LANG");
	return cs && (strcasestr(cs, "utf-8") || strcasestr(cs, "utf8"));
}

static void ctx_init(struct ctx *c, struct json_object *doc, FILE *f, const struct view_opts *vo)
{
	memset(c, 0, sizeof(*c));
	c->f = f;
	c->width = vo->width <= 0 ? DEFAULT_WIDTH : vo->width > MAX_WIDTH ? MAX_WIDTH : vo->width;
	c->color = vo->color;
	c->utf8 = locale_is_utf8();
	vj_select_init(&c->sel, doc, vo->threshold, vo->all_lines);
	c->elapsed_ns = vj_num(doc, "elapsed_time_sec") * 1e9;
	c->footprint_mb = vj_num(doc, "max_footprint_mb");
	c->churn_files = vj_churn_files(doc);
}

int view_print_cli(struct json_object *doc, FILE *f, FILE *err, const struct view_opts *vo)
{
	struct json_object *files = vj_object(doc, "files");
	size_t i, n, hidden = 0;
	struct file *v;
	struct ctx *c;
	struct row r;

	if (vj_check_profile(doc, err))
		return -EINVAL;
	n = json_object_object_length(files);
	v = calloc(n ? n : 1, sizeof(*v));
	c = malloc(sizeof(*c));
	if (!v || !c) {
		fprintf(err, "scalene-bpf: out of memory\n");
		free(v);
		free(c);
		return -ENOMEM;
	}
	i = 0;
	json_object_object_foreach (files, name, fd) {
		v[i].name = name;
		v[i].fd = fd;
		v[i].pct = vj_num(fd, "percent_cpu_time");
		i++;
	}
	qsort(v, n, sizeof(*v), file_cmp);
	ctx_init(c, doc, f, vo);
	print_header(c, doc);
	for (i = 0; i < n; i++)
		hidden += !print_file(c, &v[i]);
	row_reset(&r);
	if (!n) {
		row_text(c, &r, "(no file reached the reporting threshold)", MAX_WIDTH);
		row_emit(c, &r);
	} else if (hidden) {
		row_emit(c, &r);
		row_printf(c, &r,
			   "%zu more file%s under %.1f%% of the time (--all-lines shows them)",
			   hidden, hidden == 1 ? "" : "s", c->sel.threshold);
		row_emit(c, &r);
	}
	print_gpu_lines(c, doc);
	print_footer(c, doc);
	free(v);
	free(c);
	return 0;
}

/* ------------------------------------------------ a system-wide run */

enum hcol {
	H_PID,
	H_NSPID,
	H_VERSION,
	H_CPU,
	H_TOTAL,
	H_PY,
	H_NAT,
	H_SYS,
	H_AWAIT,
	H_PEAK,
	H_SAMPLES,
	H_EXIT,
	H_PROFILE,
	H_MAX,
};

static const char *const hcol_title[H_MAX] = {
	[H_PID] = "pid",	 [H_NSPID] = "ns pid", [H_VERSION] = "Python",	[H_CPU] = "CPU s",
	[H_TOTAL] = "total",	 [H_PY] = "python",    [H_NAT] = "native",	[H_SYS] = "system",
	[H_AWAIT] = "await s",	 [H_PEAK] = "peak MB", [H_SAMPLES] = "samples", [H_EXIT] = "exit",
	[H_PROFILE] = "profile",
};

/* The columns that go first on a narrow terminal (H_SYS: the split into
 * Python, native and system); pid, CPU s and total stay, and the command
 * keeps at least MIN_SOURCE columns (or a quarter).  H_AWAIT (seconds of
 * event-loop idle time credited to awaits) is shown only when a process
 * has some. */
static const enum hcol hdrop_order[] = {
	H_SAMPLES, H_PEAK, H_EXIT, H_AWAIT, H_SYS, H_VERSION, H_NSPID, H_PROFILE,
};

#define MAX_PROFILE_COLS 40

struct hlayout {
	int w[H_MAX]; /* 0: not shown */
};

static int hlayout_used(const struct hlayout *l)
{
	return cols_used(l->w, H_MAX);
}

/* What the profile column says of p. */
static void profile_cell(const struct host_proc *p, char *buf, size_t n)
{
	if (p->profile_refused)
		snprintf(buf, n, "(name refused)");
	else if (!p->profile)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%s%s%s", p->profile, p->problem ? " " : "",
			 p->problem ? "(missing)" : "");
}

static void exit_cell(const struct host_proc *p, char *buf, size_t n)
{
	if (!p->exited)
		snprintf(buf, n, "running");
	else if (p->has_exit_code)
		snprintf(buf, n, "exit %lld", p->exit_code);
	else
		snprintf(buf, n, "exited");
}

static void hlayout_make(const struct ctx *c, const struct host_index *hi, struct hlayout *l)
{
	char buf[320];
	bool ns = false, await = false;
	size_t i;
	int min, k;

	for (k = 0; k < H_MAX; k++)
		l->w[k] = (int)strlen(hcol_title[k]);
	l->w[H_CPU] = 7;
	l->w[H_TOTAL] = l->w[H_PY] = l->w[H_NAT] = l->w[H_SYS] = 6;
	l->w[H_SAMPLES] = l->w[H_AWAIT] = 7;
	l->w[H_EXIT] = 8;
	for (i = 0; i < hi->nprofiled; i++) {
		const struct host_proc *p = &hi->procs[i];

		snprintf(buf, sizeof(buf), "%lld", p->pid);
		l->w[H_PID] = max_cols(l->w[H_PID], buf);
		snprintf(buf, sizeof(buf), "%lld", p->ns_pid);
		l->w[H_NSPID] = max_cols(l->w[H_NSPID], buf);
		ns |= p->ns_pid != p->pid;
		await |= p->await_s > 0;
		l->w[H_VERSION] = max_cols(l->w[H_VERSION], p->python ? p->python : "-");
		profile_cell(p, buf, sizeof(buf));
		l->w[H_PROFILE] = max_cols(l->w[H_PROFILE], buf);
	}
	if (!ns)
		l->w[H_NSPID] = 0;
	if (!await)
		l->w[H_AWAIT] = 0;
	if (l->w[H_VERSION] > 10)
		l->w[H_VERSION] = 10;
	if (l->w[H_PROFILE] > MAX_PROFILE_COLS)
		l->w[H_PROFILE] = MAX_PROFILE_COLS;
	min = min_text_cols(c->width);
	for (i = 0; i < sizeof(hdrop_order) / sizeof(hdrop_order[0]); i++) {
		if (hlayout_used(l) + min <= c->width)
			break;
		l->w[hdrop_order[i]] = 0;
		/* The split goes as a whole. */
		if (hdrop_order[i] == H_SYS)
			l->w[H_PY] = l->w[H_NAT] = 0;
	}
}

static void host_header_row(struct ctx *c, const struct hlayout *l)
{
	struct row r;
	int k;

	row_reset(&r);
	row_style(c, &r, SGR_BOLD);
	for (k = 0; k < H_MAX; k++) {
		if (!l->w[k])
			continue;
		if (k == H_VERSION || k == H_EXIT || k == H_PROFILE)
			cell_text(c, &r, l->w[k], hcol_title[k], NULL);
		else
			cell_right(c, &r, l->w[k], hcol_title[k]);
	}
	row_pad_to(c, &r, r.cols + 1);
	row_text(c, &r, "command", MAX_WIDTH);
	row_emit(c, &r);
}

static void host_proc_row(struct ctx *c, const struct hlayout *l, const struct host_proc *p,
			  double total)
{
	double share = total > 0 ? 100 / total : 0;
	double t = p->cpu_s * share, py = p->python_s * share;
	double nat = p->native_s * share, sys = p->system_s * share;
	char buf[320];
	struct row r;

	row_reset(&r);
	snprintf(buf, sizeof(buf), "%lld", p->pid);
	cell_right(c, &r, l->w[H_PID], buf);
	if (l->w[H_NSPID]) {
		snprintf(buf, sizeof(buf), "%lld", p->ns_pid);
		cell_right(c, &r, l->w[H_NSPID], p->ns_pid != p->pid ? buf : "");
	}
	if (l->w[H_VERSION])
		cell_text(c, &r, l->w[H_VERSION], p->python ? p->python : "-", NULL);
	cell_num_gap(c, &r, l->w[H_CPU], p->cpu_s, 2, "", NULL);
	cell_num_gap(c, &r, l->w[H_TOTAL], t, 1, "%", pct_style(t, NULL));
	if (l->w[H_PY])
		cell_num_gap(c, &r, l->w[H_PY], py, 1, "%", pct_style(py, SGR_PYTHON));
	if (l->w[H_NAT])
		cell_num_gap(c, &r, l->w[H_NAT], nat, 1, "%", pct_style(nat, SGR_NATIVE));
	if (l->w[H_SYS])
		cell_num_gap(c, &r, l->w[H_SYS], sys, 1, "%", pct_style(sys, SGR_SYSTEM));
	if (l->w[H_AWAIT])
		cell_num_gap(c, &r, l->w[H_AWAIT], p->await_s > 0 ? p->await_s : 0, 2, "",
			     SGR_AWAIT);
	if (l->w[H_PEAK] && p->peak_rss_mb < 0)
		cell_right(c, &r, l->w[H_PEAK], "?");
	else if (l->w[H_PEAK])
		cell_num_gap(c, &r, l->w[H_PEAK], p->peak_rss_mb, 1, "", SGR_MEMORY);
	if (l->w[H_SAMPLES])
		cell_num_gap(c, &r, l->w[H_SAMPLES], p->samples, 0, "", NULL);
	if (l->w[H_EXIT]) {
		exit_cell(p, buf, sizeof(buf));
		cell_text(c, &r, l->w[H_EXIT], buf,
			  p->exited && p->has_exit_code && p->exit_code ? SGR_WARN : NULL);
	}
	if (l->w[H_PROFILE]) {
		profile_cell(p, buf, sizeof(buf));
		cell_text(c, &r, l->w[H_PROFILE], buf,
			  p->problem || p->profile_refused ? SGR_WARN : NULL);
	}
	row_pad_to(c, &r, r.cols + 1);
	if (t >= 20)
		row_style(c, &r, SGR_BOLD);
	row_text(c, &r, p->command, MAX_WIDTH);
	row_emit(c, &r);
}

/* The processes seen but not profiled, with why. */
static void host_skipped(struct ctx *c, const struct host_index *hi)
{
	int wpid = 3, wwhy = 6, k;
	char pid[32];
	struct row r;
	size_t i;

	if (hi->nprocs == hi->nprofiled)
		return;
	for (i = hi->nprofiled; i < hi->nprocs; i++) {
		snprintf(pid, sizeof(pid), "%lld", hi->procs[i].pid);
		wpid = max_cols(wpid, pid);
		wwhy = max_cols(wwhy, hi->procs[i].not_profiled);
	}
	k = c->width / 2 > 10 ? c->width / 2 : 10;
	wwhy = wwhy < k ? wwhy : k;
	row_reset(&r);
	row_emit(c, &r);
	row_style(c, &r, SGR_BOLD);
	row_printf(c, &r, "not profiled (%zu listed):", hi->nprocs - hi->nprofiled);
	row_emit(c, &r);
	row_style(c, &r, SGR_BOLD);
	cell_right(c, &r, wpid, "pid");
	cell_text(c, &r, wwhy, "reason", NULL);
	row_pad_to(c, &r, r.cols + 1);
	row_text(c, &r, "command", MAX_WIDTH);
	row_emit(c, &r);
	for (i = hi->nprofiled; i < hi->nprocs; i++) {
		const struct host_proc *p = &hi->procs[i];

		snprintf(pid, sizeof(pid), "%lld", p->pid);
		cell_right(c, &r, wpid, pid);
		cell_text(c, &r, wwhy, p->not_profiled, SGR_DIM);
		row_pad_to(c, &r, r.cols + 1);
		row_text(c, &r, p->command, MAX_WIDTH);
		row_emit(c, &r);
	}
}

static void host_header(struct ctx *c, const struct host_index *hi)
{
	double skipped =
		hi->ncounts ? host_index_not_profiled(hi) : (double)(hi->nprocs - hi->nprofiled);
	char text[320];
	struct row r;
	size_t i;

	row_reset(&r);
	row_style(c, &r, SGR_BOLD);
	row_text(c, &r, "host: ", MAX_WIDTH);
	row_unstyle(c, &r);
	row_text(c, &r, hi->host, MAX_WIDTH);
	row_text(c, &r, ", kernel ", MAX_WIDTH);
	row_text(c, &r, hi->kernel, MAX_WIDTH);
	row_emit(c, &r);
	row_printf(c, &r, "elapsed: %.2f s, sampling at %.0f Hz", hi->elapsed_s, hi->rate_hz);
	if (hi->start_time > 0) {
		time_t t = (time_t)hi->start_time;
		struct tm tm;
		char when[64];

		if (localtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
			row_printf(c, &r, ", started %s", when);
	}
	row_emit(c, &r);
	row_printf(c, &r, "processes: %zu profiled, %.0f not profiled", hi->nprofiled, skipped);
	for (i = 0; i < hi->ncounts; i++) {
		row_text(c, &r, i ? ", " : " (", MAX_WIDTH);
		row_text(c, &r, hi->counts[i].reason, MAX_WIDTH);
		row_printf(c, &r, " %.0f%s", hi->counts[i].count, i + 1 == hi->ncounts ? ")" : "");
	}
	row_emit(c, &r);
	row_printf(c, &r, "CPU: %.2f s sampled in the profiled processes", host_index_cpu_s(hi));
	row_emit(c, &r);
	host_index_memory_text(hi, text, sizeof(text));
	if (text[0]) {
		row_text(c, &r, "memory: ", MAX_WIDTH);
		row_text(c, &r, text, MAX_WIDTH);
		row_emit(c, &r);
	}
}

/* How to open one process's profile. */
static void host_howto(struct ctx *c, const struct host_index *hi, const char *dir)
{
	size_t i, n = strlen(dir);
	char text[PATH_MAX + 600];
	struct row r;

	for (i = 0; i < hi->nprofiled; i++) {
		if (hi->procs[i].profile && !hi->procs[i].problem)
			break;
	}
	if (i == hi->nprofiled) {
		snprintf(text, sizeof(text), "no profile to open: no process has one in %s", dir);
	} else {
		snprintf(text, sizeof(text), "to open one process: %s view %s%s%s", log_command(),
			 dir, n && dir[n - 1] == '/' ? "" : "/", hi->procs[i].profile);
	}
	row_reset(&r);
	row_emit(c, &r);
	print_wrapped(c, &r, text);
}

int view_print_host_cli(const struct host_index *hi, const char *dir, FILE *f,
			const struct view_opts *vo)
{
	double total = host_index_cpu_s(hi);
	struct hlayout l;
	struct ctx *c = calloc(1, sizeof(*c));
	struct row r;
	size_t i;

	if (!c)
		return -ENOMEM;
	c->f = f;
	c->width = vo->width <= 0 ? DEFAULT_WIDTH : vo->width > MAX_WIDTH ? MAX_WIDTH : vo->width;
	c->color = vo->color;
	c->utf8 = locale_is_utf8();
	host_header(c, hi);
	row_reset(&r);
	row_emit(c, &r);
	if (hi->nprofiled) {
		hlayout_make(c, hi, &l);
		host_header_row(c, &l);
		for (i = 0; i < hi->nprofiled; i++)
			host_proc_row(c, &l, &hi->procs[i], total);
	} else {
		row_text(c, &r, "(no process was profiled)", MAX_WIDTH);
		row_emit(c, &r);
	}
	host_skipped(c, hi);
	for (i = 0; i < hi->nwarnings; i++) {
		row_emit(c, &r);
		row_style(c, &r, SGR_WARN);
		row_text(c, &r, "warning: ", MAX_WIDTH);
		row_unstyle(c, &r);
		print_wrapped(c, &r, hi->warnings[i]);
	}
	host_howto(c, hi, dir);
	free(c);
	return 0;
}
