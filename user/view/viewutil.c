// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/utf8.h"
#include "view/viewutil.h"

#define NUM_LIMIT 1e15

double vj_num_of(struct json_object *v)
{
	double d;

	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return 0;
	d = json_object_get_double(v);
	if (!isfinite(d))
		return 0;
	return d > NUM_LIMIT ? NUM_LIMIT : d < -NUM_LIMIT ? -NUM_LIMIT : d;
}

double vj_num(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	return vj_num_of(v);
}

bool vj_flag(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

const char *vj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *typed(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, t))
		return NULL;
	return v;
}

struct json_object *vj_array(struct json_object *o, const char *key)
{
	return typed(o, key, json_type_array);
}

struct json_object *vj_object(struct json_object *o, const char *key)
{
	return typed(o, key, json_type_object);
}

struct json_object *vj_churn_files(struct json_object *doc)
{
	return vj_object(vj_object(vj_object(doc, "scalene_bpf"), "allocation_churn"), "files");
}

bool vj_footprint_measured(struct json_object *doc)
{
	struct json_object *mem = vj_object(vj_object(doc, "scalene_bpf"), "memory");
	const char *mode = vj_str(mem, "mode");

	return !(mode && !strcmp(mode, "uprobes"));
}

double vj_probe_overhead_s(struct json_object *doc)
{
	struct json_object *facts = vj_object(doc, "scalene_bpf"), *v;

	if (!facts || !json_object_object_get_ex(facts, "probe_overhead_s", &v))
		return -1;
	return vj_num_of(v);
}

double vj_stolen_s(struct json_object *doc)
{
	struct json_object *facts = vj_object(doc, "scalene_bpf"), *v;

	if (!facts || !json_object_object_get_ex(facts, "stolen_s", &v))
		return -1;
	return vj_num_of(v);
}

struct vj_off_lines {
	double no_python_s;   /* threads with no Python frame */
	double outside_s;     /* stacks with no frame in a profiled file */
	double undecorated_s; /* with @profile: in no decorated function */
	double unreadable_s;  /* stacks that could not be read */
	double total_s;
};

/* Fills o from doc; false when doc does not say (Scalene's profiles), or
 * when the time on no line is under `share` of the total. */
static bool vj_off_lines(struct json_object *doc, double share, struct vj_off_lines *o)
{
	struct json_object *facts = vj_object(doc, "scalene_bpf");
	struct json_object *u = vj_object(facts, "unattributed");

	memset(o, 0, sizeof(*o));
	if (!u)
		return false;
	o->no_python_s = fmax(0, vj_num(u, "threads_without_python_s"));
	o->outside_s = fmax(0, vj_num(u, "outside_profiled_files_s"));
	o->undecorated_s = fmax(0, vj_num(u, "outside_decorated_functions_s"));
	o->unreadable_s = fmax(0, vj_num(u, "unreadable_stacks_s"));
	o->total_s = vj_num(facts, "total_sampled_s");
	return o->total_s > 0 &&
	       o->no_python_s + o->outside_s + o->undecorated_s + o->unreadable_s >=
		       share * o->total_s;
}

/* The views name the time on no line from this share of the total up. */
#define OFF_LINES_SHOWN 0.02
/* A part under this rounds to 0.00 s: not named. */
#define OFF_LINES_PART_S 0.005

bool vj_memory_attach_text(struct json_object *doc, char *buf, size_t n)
{
	struct json_object *att =
		vj_object(vj_object(vj_object(doc, "scalene_bpf"), "memory"), "attach");

	if (!att)
		return false;
	if (vj_flag(att, "attached"))
		snprintf(buf, n,
			 "the sampler was loaded into the running process for %.1f s (its "
			 "allocators given back: %s); it sees Python's allocator only, not native "
			 "allocations or copies",
			 vj_num(att, "attached_s"), vj_str(att, "detach") ?: "?");
	else
		snprintf(buf, n, "not measured: %s",
			 vj_str(att, "why_not") ?: "the sampler was not loaded");
	return true;
}

bool vj_off_lines_text(struct json_object *doc, char *buf, size_t n)
{
	const char *sep = ": ";
	struct vj_off_lines o;
	double off;
	int len;

	if (n)
		buf[0] = '\0';
	if (!n || !vj_off_lines(doc, OFF_LINES_SHOWN, &o))
		return false;
	off = o.no_python_s + o.outside_s + o.undecorated_s + o.unreadable_s;
	len = snprintf(buf, n, "time on no line: %.2f s of the %.2f s sampled (%.0f%%)", off,
		       o.total_s, 100 * off / o.total_s);
	if (o.no_python_s >= OFF_LINES_PART_S && len > 0 && (size_t)len < n) {
		len += snprintf(
			buf + len, n - len,
			"%s%.2f s in threads with no Python frame (the interpreter starting "
			"or shutting down, and native threads working meanwhile)",
			sep, o.no_python_s);
		sep = ", ";
	}
	if (o.outside_s >= OFF_LINES_PART_S && len > 0 && (size_t)len < n) {
		len += snprintf(buf + len, n - len, "%s%.2f s in files not profiled", sep,
				o.outside_s);
		sep = ", ";
	}
	if (o.undecorated_s >= OFF_LINES_PART_S && len > 0 && (size_t)len < n) {
		len += snprintf(buf + len, n - len,
				"%s%.2f s in functions not decorated with @profile", sep,
				o.undecorated_s);
		sep = ", ";
	}
	if (o.unreadable_s >= OFF_LINES_PART_S && len > 0 && (size_t)len < n)
		snprintf(buf + len, n - len, "%s%.2f s in stacks that could not be read", sep,
			 o.unreadable_s);
	return true;
}

double vj_churn(struct json_object *file_churn, struct json_object *row, bool fn)
{
	struct json_object *funcs;
	const char *name;
	char key[24];
	size_t i, n;

	if (!file_churn)
		return 0;
	if (!fn) {
		snprintf(key, sizeof(key), "%.0f", vj_num(row, "lineno"));
		return vj_num(vj_object(file_churn, "lines"), key);
	}
	/* Functions by name and first line, as Scalene's "functions" list them. */
	name = vj_str(row, "line");
	funcs = vj_array(file_churn, "functions");
	n = funcs && name ? json_object_array_length(funcs) : 0;
	for (i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(funcs, i);
		const char *fname = vj_str(f, "line");

		if (fname && !strcmp(fname, name) && vj_num(f, "lineno") == vj_num(row, "lineno"))
			return vj_num(f, "churn_mb");
	}
	return 0;
}

int vj_put_safe(FILE *f, const char *s, int max)
{
	size_t left = strlen(s), n;
	int cols = 0;

	while (left && *s != '\n' && *s != '\r') {
		int w = vj_char_cols(s, left, &n);

		if (cols + (w > 1 ? w : 1) > max)
			break;
		if (*s == '\t' || w < 0)
			fputc(*s == '\t' ? ' ' : '?', f);
		else
			fwrite(s, 1, n, f);
		cols += w > 1 ? w : 1;
		s += n;
		left -= n;
	}
	return cols;
}

int vj_text_cols(const char *s)
{
	size_t left = strlen(s), n;
	int cols = 0, w;

	while (left && *s != '\n' && *s != '\r' && cols < VJ_MAX_WIDTH) {
		w = vj_char_cols(s, left, &n);
		cols = *s == '\t' ? (cols / 8 + 1) * 8 : cols + (w < 0 ? 1 : w);
		s += n;
		left -= n;
	}
	return cols;
}

void vj_fit_num(char *out, size_t n, int w, double v, int dec, const char *suffix)
{
	int d, len = 0;

	for (d = dec; d >= 0; d--) {
		len = snprintf(out, n, "%.*f%s", d, v, suffix);
		if (len <= w)
			return;
	}
	len = snprintf(out, n, "%.0e%s", v, suffix);
	if (len <= w)
		return;
	if (w < 0)
		w = 0;
	if ((size_t)w >= n)
		w = (int)n - 1;
	memset(out, '*', w);
	out[w] = '\0';
}

int vj_term_size(int fd, int *rows)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS"), *lines = getenv("LINES");
	int c = 0, r = 0;

	if (isatty(fd) && !ioctl(fd, TIOCGWINSZ, &ws)) {
		c = ws.ws_col;
		r = ws.ws_row;
	}
	if (c <= 0 && cols)
		c = atoi(cols);
	if (r <= 0 && lines)
		r = atoi(lines);
	if (rows)
		*rows = r > 0 ? (r > VJ_MAX_WIDTH ? VJ_MAX_WIDTH : r) : 0;
	return c > 0 ? (c > VJ_MAX_WIDTH ? VJ_MAX_WIDTH : c) : 0;
}

int vj_term_width(int fd)
{
	int c = vj_term_size(fd, NULL);

	return c >= 40 ? c : 100;
}

bool vj_want_color(int fd)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	/* https://no-color.org: present and not empty. */
	if (nc && *nc)
		return false;
	return isatty(fd) && !(term && !strcmp(term, "dumb"));
}

void vj_unescape_line(const char *s, char *out, size_t n)
{
	size_t o = 0;

	if (!n)
		return;
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

double vj_num_at(struct json_object *a, size_t i)
{
	return vj_num_of(json_object_array_get_idx(a, i));
}

/* Ranges a terminal draws two columns wide: East Asian wide and full-width
 * forms, and the emoji blocks (some of their characters are narrow on some
 * terminals: counting them as two only ever makes a line shorter). */
static bool wide(uint32_t cp)
{
	static const uint32_t ranges[][2] = {
		{ 0x1100, 0x115f },   { 0x231a, 0x231b },   { 0x2329, 0x232a },
		{ 0x23e9, 0x23f3 },   { 0x25fd, 0x25fe },   { 0x2600, 0x27bf },
		{ 0x2b1b, 0x2b55 },   { 0x2e80, 0x303e },   { 0x3041, 0x33ff },
		{ 0x3400, 0x4dbf },   { 0x4e00, 0x9fff },   { 0xa000, 0xa4cf },
		{ 0xa960, 0xa97f },   { 0xac00, 0xd7a3 },   { 0xf900, 0xfaff },
		{ 0xfe10, 0xfe19 },   { 0xfe30, 0xfe6f },   { 0xff00, 0xff60 },
		{ 0xffe0, 0xffe6 },   { 0x16fe0, 0x18cff }, { 0x1b000, 0x1b2ff },
		{ 0x1f000, 0x1faff }, { 0x20000, 0x3fffd },
	};
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		if (cp < ranges[i][0])
			return false;
		if (cp <= ranges[i][1])
			return true;
	}
	return false;
}

int vj_char_cols(const char *s, size_t left, size_t *len)
{
	uint32_t cp;
	size_t n = utf8_decode((const unsigned char *)s, left, &cp);

	*len = n ? n : 1;
	/* Controls; LRM, RLM; line and paragraph separators; LRE..RLO;
	 * LRI..PDI. */
	if (!n || utf8_is_control(cp) || cp == 0x200e || cp == 0x200f ||
	    (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return -1;
	return wide(cp) ? 2 : 1;
}

/* The wall time the views print: Scalene's schema requires elapsed_time_sec,
 * a float >= 0.  Anything else is said, never shown as 0.00 s. */
static int check_elapsed(struct json_object *doc, FILE *err)
{
	struct json_object *v;
	const char *why = NULL;
	double d;

	if (!json_object_object_get_ex(doc, "elapsed_time_sec", &v)) {
		why = "is missing";
	} else if (!json_object_is_type(v, json_type_double) &&
		   !json_object_is_type(v, json_type_int)) {
		why = "is not a number";
	} else {
		d = json_object_get_double(v);
		if (isnan(d))
			why = "is NaN";
		else if (isinf(d))
			why = "is infinite";
		else if (d < 0)
			why = "is negative";
	}
	if (!why)
		return 0;
	fprintf(err, "scalene-bpf: not a profile: its elapsed time (elapsed_time_sec) %s\n", why);
	return -EINVAL;
}

int vj_check_profile(struct json_object *doc, FILE *err)
{
	struct json_object *files =
		json_object_is_type(doc, json_type_object) ? vj_object(doc, "files") : NULL;

	if (!files) {
		fprintf(err, "scalene-bpf: not a profile: no \"files\" object\n");
		return -EINVAL;
	}
	json_object_object_foreach (files, name, fd) {
		struct json_object *lines = vj_array(fd, "lines");
		size_t i, n = lines ? json_object_array_length(lines) : 0;
		bool ok = json_object_is_type(fd, json_type_object) && lines;

		for (i = 0; ok && i < n; i++)
			ok = json_object_is_type(json_object_array_get_idx(lines, i),
						 json_type_object);
		if (!ok) {
			fprintf(err, "scalene-bpf: not a profile: file entry ");
			vj_put_safe(err, name, 200);
			fprintf(err, " is malformed\n");
			return -EINVAL;
		}
	}
	return check_elapsed(doc, err);
}

double vj_await(struct json_object *row)
{
	double a = vj_num(row, "n_async_await_percent");

	return a > 0 ? (a < 100 ? a : 100) : 0;
}

double vj_row_heat(const struct vj_select *sel, struct json_object *row)
{
	return vj_line_time(row) + (sel->await ? vj_await(row) : 0);
}

static bool any_awaited(struct json_object *rows)
{
	size_t i, n = rows ? json_object_array_length(rows) : 0;

	for (i = 0; i < n; i++) {
		if (vj_await(json_object_array_get_idx(rows, i)) > 0)
			return true;
	}
	return false;
}

/* The await column is shown for a profile made with await profiling on
 * (Scalene's async_profile) in which some line or function awaited. */
static bool profile_awaits(struct json_object *doc)
{
	struct json_object *files = vj_object(doc, "files");

	if (!vj_flag(doc, "async_profile") || !files)
		return false;
	json_object_object_foreach (files, name, fd) {
		(void)name;
		if (any_awaited(vj_array(fd, "lines")) || any_awaited(vj_array(fd, "functions")))
			return true;
	}
	return false;
}

double vj_await_s(struct json_object *doc)
{
	struct json_object *a = vj_object(vj_object(doc, "scalene_bpf"), "async"), *v;

	if (!a || !json_object_object_get_ex(a, "await_s", &v) ||
	    (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)))
		return -1;
	return vj_num_of(v) > 0 ? vj_num_of(v) : 0;
}

const char *vj_async_not_covered(struct json_object *doc)
{
	const char *s = vj_str(vj_object(vj_object(doc, "scalene_bpf"), "async"), "not_covered");

	return s && *s ? s : NULL;
}

size_t vj_task_names(struct json_object *row, const char **names, size_t max)
{
	struct json_object *a = vj_array(row, "async_task_names");
	size_t i, k = 0, n = a ? json_object_array_length(a) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(a, i);

		if (!json_object_is_type(t, json_type_string))
			continue;
		if (names && k < max)
			names[k] = json_object_get_string(t);
		k++;
	}
	return k;
}

void vj_select_init(struct vj_select *sel, struct json_object *doc, double threshold,
		    bool all_lines)
{
	sel->threshold = threshold;
	sel->all_lines = all_lines;
	sel->memory = vj_flag(doc, "memory");
	sel->gpu = vj_flag(doc, "gpu");
	sel->gil = vj_num(vj_object(doc, "scalene_bpf"), "gil_wait_s") > 0;
	sel->await = profile_awaits(doc);
}

bool vj_free_threaded(struct json_object *doc)
{
	struct json_object *in = vj_array(vj_object(doc, "scalene_bpf"), "interpreters");
	size_t i, n = in ? json_object_array_length(in) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *f = NULL;

		if (!json_object_object_get_ex(json_object_array_get_idx(in, i), "free_threaded",
					       &f) ||
		    !json_object_get_boolean(f))
			return false;
	}
	return n > 0;
}

bool vj_no_gil(struct json_object *doc)
{
	struct json_object *in = vj_array(vj_object(doc, "scalene_bpf"), "interpreters");
	size_t i, n = in ? json_object_array_length(in) : 0;

	if (!vj_free_threaded(doc) || vj_num(vj_object(doc, "scalene_bpf"), "gil_wait_s") > 0)
		return false;
	for (i = 0; i < n; i++)
		if (vj_flag(json_object_array_get_idx(in, i), "gil_enabled"))
			return false;
	return true;
}

double vj_gil_wait(struct json_object *row)
{
	double gil = vj_num(row, "n_gil_wait_percent"), sys = vj_num(row, "n_sys_percent");

	if (gil <= 0)
		return 0;
	return gil < sys ? gil : sys > 0 ? sys : 0;
}

double vj_line_time(struct json_object *row)
{
	return vj_num(row, "n_cpu_percent_python") + vj_num(row, "n_cpu_percent_c") +
	       vj_num(row, "n_sys_percent");
}

bool vj_row_shown(const struct vj_select *sel, struct json_object *row)
{
	double t = vj_line_time(row), a = vj_await(row);

	if (!json_object_is_type(row, json_type_object))
		return false;
	if (sel->memory && (vj_num(row, "n_malloc_mb") > 0 || vj_num(row, "n_copy_mb_s") > 0 ||
			    vj_num(row, "n_usage_fraction") > 0))
		return true;
	if (sel->gpu &&
	    (vj_num(row, "n_gpu_percent") > 0 || vj_num(row, "n_gpu_peak_memory_mb") > 0))
		return true;
	/* Time spent waiting in an await is the user's to see, CPU or not. */
	if (sel->await && a > 0 && (sel->all_lines || a >= sel->threshold))
		return true;
	if (sel->all_lines)
		return t > 0 || (sel->memory &&
				 (vj_num(row, "n_peak_mb") > 0 || vj_num(row, "n_avg_mb") > 0));
	return t > 0 && t >= sel->threshold;
}

static bool any_shown(const struct vj_select *sel, struct json_object *rows)
{
	size_t i, n = rows ? json_object_array_length(rows) : 0;

	for (i = 0; i < n; i++) {
		if (vj_row_shown(sel, json_object_array_get_idx(rows, i)))
			return true;
	}
	return false;
}

bool vj_file_shown(const struct vj_select *sel, struct json_object *fd)
{
	return sel->all_lines || vj_num(fd, "percent_cpu_time") >= sel->threshold ||
	       any_shown(sel, vj_array(fd, "lines")) || any_shown(sel, vj_array(fd, "functions"));
}

const struct vj_loss vj_losses[] = {
	{ "bpf", "lost_ringbuf_full", "CPU samples lost: ring buffer full" },
	{ "bpf", "memory_lost_ringbuf_full", "memory records lost: ring buffer full" },
	{ "bpf", "process_events_lost", "fork/exec/exit events lost" },
	{ "bpf", "process_table_full", "processes not followed: process table full" },
	{ "bpf", "thread_state_unavailable",
	  "threads without per-thread state: blocked time not counted" },
	{ "bpf", "walk_read_failed", "stack walks that could not read memory" },
	{ "bpf", "walk_truncated", "stacks cut at the walker's depth limit" },
	{ "bpf", "frames_unreadable", "frames whose code object could not be read" },
	{ "bpf", "bad_records", "malformed records" },
	{ "bpf", "stacks_dropped", "stacks not kept: stack table full" },
	{ "bpf", "truncated_stacks", "stacks kept truncated" },
	{ "memory", "records_lost", "memory records lost (as bpf.memory_lost_ringbuf_full)" },
	{ "memory", "sampler_not_loaded", "processes without the allocation sampler" },
	{ "memory", "table_overflows", "allocations not tracked: sampler table full" },
	{ "memory", "untracked_blocks", "allocated blocks not tracked" },
	{ "async", "tasks_unreadable", "asyncio tasks whose await could not be read" },
	{ "gpu", "records_unmatched",
	  "GPU records whose CUDA call was not seen: not credited to a line" },
	{ "gpu", "lost_ringbuf_full",
	  "GPU launch stacks, records or states lost: ring buffer full" },
};

const size_t vj_nlosses = sizeof(vj_losses) / sizeof(vj_losses[0]);

double vj_loss_value(struct json_object *doc, const struct vj_loss *loss)
{
	return vj_num(vj_object(vj_object(doc, "scalene_bpf"), loss->group), loss->key);
}

const char *const vj_gpu_dirs[VJ_GPU_DIRS] = { "htod", "dtoh", "dtod", "other" };

size_t vj_gpu_lines(struct json_object *doc, struct vj_gpu_line *v, size_t max)
{
	struct json_object *gpu = vj_object(vj_object(doc, "scalene_bpf"), "gpu");
	struct json_object *a = vj_array(gpu, "lines");
	size_t i, k = 0, n = a ? json_object_array_length(a) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i), *copy;
		struct vj_gpu_line *g;
		double line = vj_num(o, "line");
		int d;

		if (!json_object_is_type(o, json_type_object) || !vj_str(o, "file") ||
		    !(line >= 1 && line <= INT32_MAX))
			continue;
		if (k++ >= max)
			continue;
		g = &v[k - 1];
		g->file = vj_str(o, "file");
		g->line = (int)line;
		g->calls = vj_num(o, "calls");
		g->kernels = vj_num(o, "kernels");
		g->kernel_s = vj_num(o, "kernel_s");
		g->copies = vj_num(o, "copies");
		g->copy_s = vj_num(o, "copy_s");
		copy = vj_object(o, "copy_mb");
		for (d = 0; d < VJ_GPU_DIRS; d++)
			g->copy_mb[d] = vj_num(copy, vj_gpu_dirs[d]);
		g->memsets = vj_num(o, "memsets");
		g->memset_mb = vj_num(o, "memset_mb");
		g->alloc_mb = vj_num(o, "alloc_mb");
		g->free_mb = vj_num(o, "free_mb");
	}
	return k;
}

const char *vj_source_of(struct json_object *doc, const char *file, int line)
{
	struct json_object *lines = vj_array(vj_object(vj_object(doc, "files"), file), "lines");
	size_t i, n = lines ? json_object_array_length(lines) : 0;
	struct json_object *o;

	if (line < 1)
		return NULL;
	/* Ours and Scalene's are dense: line n is usually the n-th. */
	if ((size_t)line <= n) {
		o = json_object_array_get_idx(lines, (size_t)line - 1);
		if (vj_num(o, "lineno") == line || (json_object_is_type(o, json_type_object) &&
						    !json_object_object_get_ex(o, "lineno", NULL)))
			return vj_str(o, "line");
	}
	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(lines, i);
		if (vj_num(o, "lineno") == line)
			return vj_str(o, "line");
	}
	return NULL;
}

int vj_legacy_frame_parse(const char *s, struct vj_legacy_frame *f)
{
	size_t len = strlen(s), digits;
	char *colon, *sp;

	memset(f, 0, sizeof(*f));
	f->buf = strdup(s);
	if (!f->buf)
		return -ENOMEM;
	if (len && f->buf[len - 1] == ';')
		f->buf[--len] = '\0';
	colon = strrchr(f->buf, ':');
	digits = colon ? strlen(colon + 1) : 0;
	if (digits && digits <= 9 && strspn(colon + 1, "0123456789") == digits) {
		f->line = atoi(colon + 1);
		*colon = '\0';
	}
	sp = strrchr(f->buf, ' ');
	f->file = "";
	f->func = f->buf;
	if (sp) {
		*sp = '\0';
		f->file = f->buf;
		f->func = sp + 1;
	}
	return 0;
}

void vj_legacy_frame_free(struct vj_legacy_frame *f)
{
	free(f->buf);
	f->buf = NULL;
}
