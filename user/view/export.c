// SPDX-License-Identifier: BSD-2-Clause
/*
 * Exports of a profile's stacks (`view --format`): folded lines for
 * flamegraph.pl and inferno, speedscope's JSON file format, pprof's gzipped
 * profile.proto for go tool pprof, Pyroscope and Parca, and the
 * OpenTelemetry profiles signal (an OTLP export request).
 *
 * All four are written from one model read from the document: a table of
 * distinct frames and three lists of stacks, outermost frame first.  CPU
 * stacks come from combined_stacks (or `stacks` when that is empty) and carry
 * their sample count and, for our own profiles, their sampled time; memory
 * stacks come from memory_stacks and carry bytes; GPU stacks come from
 * scalene_bpf.gpu_stacks and carry the device time of the work they launched.  The document is untrusted: a
 * field of the wrong type reads as absent, and every string written is valid
 * UTF-8 without control characters.  Numbers come from the profile only: a
 * time is exported where the profile states it, never derived from a guessed
 * sampling period.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <json-c/json.h>
#include <zlib.h>

#include "base/hmap.h"
#include "proto/otlp.pb-c.h"
#include "proto/pprof.pb-c.h"
#include "base/strtab.h"
#include "base/utf8.h"
#include "view/view.h"
#include "view/viewutil.h"

#define MB (1024.0 * 1024.0)
/* Bounds that keep conversions to int64 defined for any input. */
#define MAX_VALUE 1e18
#define MAX_EPOCH_S 1e10
#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct frame {
	const char *func; /* interned: qualname, or the native frame's label */
	const char *file; /* interned: Python file or native module; "" if none */
	int line;	  /* 0 for native frames */
	bool native;
};

/* What a stack's weight is: a pprof sample type, a speedscope profile. */
enum weight {
	W_SAMPLES, /* CPU: hits */
	W_TIME,	   /* CPU: sampled time (ns), when model.have_time */
	W_PYTHON,  /* of W_TIME: in Python code (ns) */
	W_NATIVE,  /* of W_TIME: in native code (ns) */
	W_SYSTEM,  /* of W_TIME: in the kernel or blocked (ns): the rest */
	W_GIL,	   /* of W_SYSTEM: blocked waiting for the GIL (ns) */
	W_BYTES,   /* memory: sampled bytes allocated */
	W_GPU,	   /* GPU: device time (ns) of the work launched */
	W_KINDS,
};

struct stack {
	int *frames; /* indices into model.frames, outermost first */
	int n;
	int src; /* index of the entry in the document */
	int64_t w[W_KINDS];
};

struct stacks {
	struct stack *v;
	int n, cap;
};

struct model {
	struct strtab *strs;
	struct hmap *frame_idx; /* struct frame -> index + 1 */
	struct frame *frames;
	int nframes, cap;
	struct stacks cpu, mem, gpu;
	bool have_time;	   /* cpu stacks carry time_ns */
	bool have_split;   /* and its split (W_PYTHON, W_NATIVE, W_SYSTEM) */
	bool have_gil;	   /* and GIL wait (W_GIL) on some */
	int64_t period_ns; /* the sampling period, 0 when not stated */
	int64_t time_nanos, duration_nanos;
};

/* view.h's: a profile's stacks read once, for several exports of it. */
struct export_src {
	struct model m;
	struct json_object *doc;
};

/* What every string written is made of: valid UTF-8, each control
 * character (tab included) and invalid byte as '?'. */
#define CLEAN_FLAGS (UTF8_CLEAN_CONTROLS | UTF8_CLEAN_ASCII)

static char *clean(const char *s)
{
	return utf8_clean(s, strlen(s), CLEAN_FLAGS);
}

/* The interned, cleaned copy of s (most strings are clean already). */
static const char *intern_clean(struct model *m, const char *s)
{
	const char *r;
	char *c;

	s = s ? s : "";
	if (utf8_is_clean(s, CLEAN_FLAGS))
		return strtab__intern(m->strs, s);
	c = clean(s);
	if (!c)
		return NULL;
	r = strtab__intern(m->strs, c);
	free(c);
	return r;
}

/* An integer field that may exceed int64 (native addresses); false when
 * absent or not an integer. */
static bool json_u64(struct json_object *o, const char *key, unsigned long long *v)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, key, &x) || !json_object_is_type(x, json_type_int))
		return false;
	*v = json_object_get_uint64(x);
	return true;
}

/* a + b for weights (each <= MAX_VALUE), saturating instead of overflowing. */
static int64_t add_sat(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int line_of(double d)
{
	return d >= 1 && d <= INT_MAX ? (int)d : 0;
}

/* Index of the frame, added when new; -ENOMEM. */
static int frame_add(struct model *m, const char *func, const char *file, int line, bool native)
{
	struct frame k;
	void *v;

	memset(&k, 0, sizeof(k)); /* the key is compared bytewise, padding too */
	k.func = intern_clean(m, func);
	k.file = intern_clean(m, file);
	k.line = native ? 0 : line;
	k.native = native;
	if (!k.func || !k.file)
		return -ENOMEM;
	v = hmap__get(m->frame_idx, &k);
	if (v)
		return (int)((uintptr_t)v - 1);
	if (m->nframes == m->cap) {
		int cap = m->cap ? m->cap * 2 : 256;
		struct frame *nf = realloc(m->frames, cap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		m->frames = nf;
		m->cap = cap;
	}
	if (hmap__put(m->frame_idx, &k, (void *)(uintptr_t)(m->nframes + 1)))
		return -ENOMEM;
	m->frames[m->nframes] = k;
	return m->nframes++;
}

/* A native frame's name: its symbol, else module+offset (ours write an
 * unresolved symbol as "+0xOFFSET" next to its module), else its address.
 * The module's directory is left to the frame's file. */
static void native_name(struct json_object *fo, const char *module, char *buf, size_t n)
{
	const char *sym = vj_str(fo, "display_name");
	const char *base = module && *module ? strrchr(module, '/') : NULL;
	unsigned long long x;

	base = base ? base + 1 : module;
	if (sym && *sym && (sym[0] != '+' || !base || !*base))
		snprintf(buf, n, "%s", sym);
	else if (sym && *sym)
		snprintf(buf, n, "%s%s", base, sym);
	else if (base && *base && json_u64(fo, "offset", &x))
		snprintf(buf, n, "%s+0x%llx", base, x);
	else if (base && *base)
		snprintf(buf, n, "%s", base);
	else if (json_u64(fo, "ip", &x))
		snprintf(buf, n, "0x%llx", x);
	else
		snprintf(buf, n, "[unknown]");
}

/* A CombinedStackFrame: {kind, display_name, filename_or_module, line, ip,
 * offset}; anything else is an unknown frame. */
static int frame_from_json(struct model *m, struct json_object *fo)
{
	const char *kind, *name, *file;
	char buf[1024];

	if (!json_object_is_type(fo, json_type_object))
		return frame_add(m, "[unknown]", "", 0, true);
	kind = vj_str(fo, "kind");
	file = vj_str(fo, "filename_or_module");
	if (kind && !strcmp(kind, "native")) {
		native_name(fo, file, buf, sizeof(buf));
		return frame_add(m, buf, file, 0, true);
	}
	name = vj_str(fo, "display_name");
	return frame_add(m, name && *name ? name : "[unknown]", file, line_of(vj_num(fo, "line")),
			 false);
}

/* A frame of `stacks`: "<file> <qualname>:<line>;". */
static int frame_from_string(struct model *m, const char *s)
{
	struct vj_legacy_frame f;
	int idx;

	if (vj_legacy_frame_parse(s, &f))
		return -ENOMEM;
	idx = frame_add(m, *f.func ? f.func : "[unknown]", f.file, f.line, false);
	vj_legacy_frame_free(&f);
	return idx;
}

static struct stack *stack_new(struct stacks *l)
{
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 64;
		struct stack *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		l->v = nv;
		l->cap = cap;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	return &l->v[l->n++];
}

/* The frames of one stack, from an array of frame objects or strings; an
 * empty stack gets one unknown frame so that its weight is kept. */
static int stack_frames(struct model *m, struct stack *st, struct json_object *frames, bool strings)
{
	size_t i, n = json_object_array_length(frames);

	st->frames = malloc((n ? n : 1) * sizeof(int));
	if (!st->frames)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct json_object *fo = json_object_array_get_idx(frames, i);
		int idx;

		if (strings && json_object_is_type(fo, json_type_string))
			idx = frame_from_string(m, json_object_get_string(fo));
		else if (strings)
			idx = frame_add(m, "[unknown]", "", 0, false);
		else
			idx = frame_from_json(m, fo);
		if (idx < 0)
			return idx;
		st->frames[st->n++] = idx;
	}
	if (!n) {
		int idx = frame_add(m, "[unknown]", "", 0, true);

		if (idx < 0)
			return idx;
		st->frames[st->n++] = idx;
	}
	return 0;
}

/* A weight: a finite number > 0, scaled and bounded; 0 otherwise. */
static int64_t weight_of(struct json_object *w, double scale)
{
	double d;

	if (!json_object_is_type(w, json_type_int) && !json_object_is_type(w, json_type_double))
		return 0;
	d = json_object_get_double(w) * scale;
	if (!isfinite(d) || d <= 0)
		return 0;
	return d > MAX_VALUE ? (int64_t)MAX_VALUE : llround(d);
}

/* [[frames...], weight] entries (combined_stacks, memory_stacks in MB,
 * gpu_stacks in seconds) or, for `stacks`, [[frame strings...], {"count": N,
 * ...}].  Entries of another shape or with no weight are left out. */
static int read_stacks(struct model *m, struct json_object *arr, struct stacks *out,
		       enum weight kind, bool strings)
{
	size_t i, n = arr ? json_object_array_length(arr) : 0;

	for (i = 0; i < n && i < INT_MAX; i++) {
		struct json_object *e = json_object_array_get_idx(arr, i), *frames, *w;
		struct stack *st;
		int64_t v;
		int err;

		if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 2)
			continue;
		frames = json_object_array_get_idx(e, 0);
		w = json_object_array_get_idx(e, 1);
		if (!json_object_is_type(frames, json_type_array))
			continue;
		if (strings) {
			if (!json_object_is_type(w, json_type_object) ||
			    !json_object_object_get_ex(w, "count", &w))
				continue;
		}
		v = weight_of(w, kind == W_BYTES ? MB : kind == W_GPU ? 1e9 : 1);
		if (!v)
			continue;
		st = stack_new(out);
		if (!st)
			return -ENOMEM;
		st->src = (int)i;
		st->w[kind] = v;
		err = stack_frames(m, st, frames, strings);
		if (err)
			return err;
	}
	return 0;
}

/* Whether the `stacks` entry s (ours: "<file> <qualname>:<line>;" strings
 * and {"count", "cpu_samples"}) describes the combined_stacks entry c: the
 * same count and the same Python frames. */
static bool stacks_match(struct json_object *s, struct json_object *c, int64_t count)
{
	struct json_object *sf, *cf, *stats, *cnt;
	size_t i, k = 0, n;
	char buf[4096];

	if (!json_object_is_type(s, json_type_array) || json_object_array_length(s) != 2)
		return false;
	sf = json_object_array_get_idx(s, 0);
	stats = json_object_array_get_idx(s, 1);
	cf = json_object_array_get_idx(c, 0);
	if (!json_object_is_type(sf, json_type_array) ||
	    !json_object_is_type(stats, json_type_object) ||
	    !json_object_object_get_ex(stats, "count", &cnt) ||
	    !json_object_is_type(cnt, json_type_int) || json_object_get_int64(cnt) != count)
		return false;
	n = json_object_array_length(cf);
	for (i = 0; i < n; i++) {
		struct json_object *fo = json_object_array_get_idx(cf, i), *str;
		const char *kind = vj_str(fo, "kind"), *file, *name;

		if (kind && !strcmp(kind, "native"))
			continue;
		file = vj_str(fo, "filename_or_module");
		name = vj_str(fo, "display_name");
		str = json_object_array_get_idx(sf, k++);
		/* File and function: the line may be written differently (a
		 * frame without one reads 1 in combined_stacks, 0 in stacks). */
		snprintf(buf, sizeof(buf), "%s %s:", file ? file : "", name ? name : "");
		if (!json_object_is_type(str, json_type_string) ||
		    strncmp(buf, json_object_get_string(str), strlen(buf)))
			return false;
	}
	return k == json_object_array_length(sf);
}

/* Our profiles' GIL wait of each CPU stack with any (scalene_bpf.
 * gil_wait_stacks: [index in stacks, seconds]), part of its system time.  A
 * profile with none, or one that does not say, has no such values. */
static void read_gil(struct model *m, struct json_object *pairs, size_t nsrc)
{
	int *at = NULL;
	size_t i, n = pairs ? json_object_array_length(pairs) : 0;
	int k;

	if (!n || !nsrc || !(at = malloc(nsrc * sizeof(*at))))
		return;
	for (i = 0; i < nsrc; i++)
		at[i] = -1;
	for (k = 0; k < m->cpu.n; k++)
		if (m->cpu.v[k].src >= 0 && (size_t)m->cpu.v[k].src < nsrc)
			at[m->cpu.v[k].src] = k;
	for (i = 0; i < n; i++) {
		struct json_object *pair = json_object_array_get_idx(pairs, i);
		double idx = vj_num_at(pair, 0), s = vj_num_at(pair, 1);
		struct stack *st;

		if (!json_object_is_type(pair, json_type_array) ||
		    json_object_array_length(pair) != 2 ||
		    !json_object_is_type(json_object_array_get_idx(pair, 0), json_type_int) ||
		    !(idx >= 0 && idx < nsrc && idx == (size_t)idx) || at[(size_t)idx] < 0 ||
		    !(s >= 0 && s * 1e9 < MAX_VALUE))
			continue;
		st = &m->cpu.v[at[(size_t)idx]];
		st->w[W_GIL] = llround(s * 1e9);
		if (st->w[W_GIL] > st->w[W_SYSTEM])
			st->w[W_GIL] = st->w[W_SYSTEM];
		m->have_gil = true;
	}
	free(at);
}

/*
 * Our profiles state each stack's sampled time: `stacks` holds, entry for
 * entry with combined_stacks, the fraction cpu_samples of the total that
 * scalene_bpf.total_sampled_s gives in seconds (on-CPU and blocked time, as
 * in the percentages), and of it the fractions python_time and c_time (as a
 * line's n_cpu_percent_python and n_cpu_percent_c); the rest is system
 * time, blocked time included, as in n_sys_percent.  The three are kept in
 * whole nanoseconds that add up to the stack's time.  The sample count
 * times the period would miss the blocked time, so it is not used.  Either
 * every CPU stack gets its time or none does; likewise its split.
 */
static void read_times(struct model *m, struct json_object *doc, struct json_object *combined)
{
	struct json_object *facts = vj_object(doc, "scalene_bpf");
	struct json_object *stacks = vj_array(doc, "stacks");
	double total = vj_num(facts, "total_sampled_s");
	bool split = true;
	int i;

	if (!facts || !stacks || total <= 0 || !m->cpu.n ||
	    json_object_array_length(stacks) != json_object_array_length(combined))
		return;
	for (i = 0; i < m->cpu.n; i++) {
		struct stack *st = &m->cpu.v[i];
		struct json_object *s = json_object_array_get_idx(stacks, st->src);
		struct json_object *c = json_object_array_get_idx(combined, st->src);
		struct json_object *stats = json_object_array_get_idx(s, 1);
		double t, py, nat;

		if (!stacks_match(s, c, st->w[W_SAMPLES]))
			return;
		split = split && json_object_object_get_ex(stats, "python_time", NULL) &&
			json_object_object_get_ex(stats, "c_time", NULL);
		t = vj_num(stats, "cpu_samples") * total * 1e9;
		py = vj_num(stats, "python_time") * total * 1e9;
		nat = vj_num(stats, "c_time") * total * 1e9;
		if (t < 0 || t > MAX_VALUE || py < 0 || nat < 0 || py + nat > t + 1)
			return;
		st->w[W_TIME] = llround(t);
		st->w[W_PYTHON] = llround(py);
		st->w[W_NATIVE] = llround(nat);
		if (st->w[W_PYTHON] + st->w[W_NATIVE] > st->w[W_TIME])
			st->w[W_NATIVE] = st->w[W_TIME] - st->w[W_PYTHON];
		st->w[W_SYSTEM] = st->w[W_TIME] - st->w[W_PYTHON] - st->w[W_NATIVE];
	}
	m->have_time = true;
	m->have_split = split;
	if (split)
		read_gil(m, vj_array(facts, "gil_wait_stacks"), json_object_array_length(combined));
}

/* The facts beside the stacks: sampling period, start and duration. */
static void read_facts(struct model *m, struct json_object *doc)
{
	struct json_object *facts = vj_object(doc, "scalene_bpf");
	double period = vj_num(facts, "sampling_period_ns");
	double rate = vj_num(facts, "sampling_rate_hz");
	double start = vj_num(doc, "start_time_absolute");
	double elapsed = vj_num(doc, "elapsed_time_sec");

	/* The timers' period as the profile states it; profiles written before
	 * it was stated gave 1e9 / period_ns as the rate: taken when whole. */
	if (period >= 1 && period <= 1e9 && period == floor(period))
		m->period_ns = (int64_t)period;
	else if (rate > 0 && rate <= 1e9 && fabs(1e9 / rate - llround(1e9 / rate)) < 1e-3)
		m->period_ns = llround(1e9 / rate);
	if (start > 0 && start < MAX_EPOCH_S)
		m->time_nanos = llround(start * 1e9);
	if (elapsed > 0 && elapsed < MAX_EPOCH_S)
		m->duration_nanos = llround(elapsed * 1e9);
}

static void model_free(struct model *m)
{
	int i;

	for (i = 0; i < m->cpu.n; i++)
		free(m->cpu.v[i].frames);
	for (i = 0; i < m->mem.n; i++)
		free(m->mem.v[i].frames);
	for (i = 0; i < m->gpu.n; i++)
		free(m->gpu.v[i].frames);
	free(m->cpu.v);
	free(m->mem.v);
	free(m->gpu.v);
	free(m->frames);
	hmap__free(m->frame_idx);
	strtab__free(m->strs);
}

static int model_read(struct model *m, struct json_object *doc)
{
	struct json_object *combined = vj_array(doc, "combined_stacks");
	int err;

	memset(m, 0, sizeof(*m));
	m->strs = strtab__new();
	m->frame_idx = hmap__new(sizeof(struct frame));
	if (!m->strs || !m->frame_idx)
		return -ENOMEM;
	err = read_stacks(m, combined, &m->cpu, W_SAMPLES, false);
	if (!err && m->cpu.n)
		read_times(m, doc, combined);
	/* Scalene's `stacks` (Python frames only) when there is no combined. */
	if (!err && !m->cpu.n)
		err = read_stacks(m, vj_array(doc, "stacks"), &m->cpu, W_SAMPLES, true);
	if (!err)
		err = read_stacks(m, vj_array(doc, "memory_stacks"), &m->mem, W_BYTES, false);
	if (!err)
		err = read_stacks(m, vj_array(vj_object(doc, "scalene_bpf"), "gpu_stacks"), &m->gpu,
				  W_GPU, false);
	read_facts(m, doc);
	return err;
}

/* --- folded --- */

struct folded_line {
	char *text;
	int64_t count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

/* "qualname (file:line)" or the native name; ';' is the separator. */
static void put_label(FILE *f, const struct frame *fr)
{
	const char *p;

	for (p = fr->func; *p; p++)
		fputc(*p == ';' ? '?' : *p, f);
	if (fr->native)
		return;
	fputs(" (", f);
	for (p = fr->file; *p; p++)
		fputc(*p == ';' ? '?' : *p, f);
	fprintf(f, ":%d)", fr->line);
}

static char *folded_text(const struct model *m, const struct stack *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	if (!f)
		return NULL;
	for (i = 0; i < st->n; i++) {
		if (i)
			fputc(';', f);
		put_label(f, &m->frames[st->frames[i]]);
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* One line per distinct stack, sorted, counts summed: CPU samples only (a
 * folded file has one unit; memory goes to speedscope and pprof). */
static int write_folded(const struct model *m, FILE *f, FILE *err)
{
	struct folded_line *lines = calloc(m->cpu.n, sizeof(*lines));
	int i, n = 0, ret = 0;

	if (!lines)
		return -ENOMEM;
	for (i = 0; i < m->cpu.n; i++) {
		lines[i].text = folded_text(m, &m->cpu.v[i]);
		lines[i].count = m->cpu.v[i].w[W_SAMPLES];
		if (!lines[i].text) {
			ret = -ENOMEM;
			goto cleanup;
		}
	}
	qsort(lines, m->cpu.n, sizeof(*lines), cmp_folded);
	for (i = 0; i < m->cpu.n; i = n) {
		int64_t sum = 0;

		for (n = i; n < m->cpu.n && !strcmp(lines[n].text, lines[i].text); n++)
			sum = add_sat(sum, lines[n].count);
		fprintf(f, "%s %lld\n", lines[i].text, (long long)sum);
	}
	if (m->mem.n || m->gpu.n)
		fprintf(err,
			"scalene-bpf: folded output has the CPU stacks only; the %s stacks "
			"are in the speedscope and pprof exports\n",
			m->mem.n && m->gpu.n ? "memory and GPU"
			: m->mem.n	     ? "memory"
					     : "GPU");
cleanup:
	for (i = 0; i < m->cpu.n; i++)
		free(lines[i].text);
	free(lines);
	return ret;
}

/* --- speedscope --- */

static struct json_object *jstr(const char *s)
{
	return json_object_new_string(s);
}

static struct json_object *speedscope_frames(const struct model *m)
{
	struct json_object *arr = json_object_new_array_ext(m->nframes);
	int i;

	for (i = 0; i < m->nframes; i++) {
		const struct frame *fr = &m->frames[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", jstr(fr->func));
		if (*fr->file)
			json_object_object_add(o, "file", jstr(fr->file));
		if (fr->line > 0)
			json_object_object_add(o, "line", json_object_new_int(fr->line));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *speedscope_profile(const struct model *m, const struct stacks *l,
					      const char *name, const char *unit, enum weight which)
{
	struct json_object *p = json_object_new_object();
	struct json_object *samples = json_object_new_array_ext(l->n);
	struct json_object *weights = json_object_new_array_ext(l->n);
	int64_t total = 0;
	int i, j;

	for (i = 0; i < l->n; i++) {
		const struct stack *st = &l->v[i];
		struct json_object *s = json_object_new_array_ext(st->n);
		int64_t w = st->w[which];

		for (j = 0; j < st->n; j++)
			json_object_array_add(s, json_object_new_int(st->frames[j]));
		json_object_array_add(samples, s);
		json_object_array_add(weights, json_object_new_int64(w));
		total = add_sat(total, w);
	}
	json_object_object_add(p, "type", jstr("sampled"));
	json_object_object_add(p, "name", jstr(name));
	json_object_object_add(p, "unit", jstr(unit));
	json_object_object_add(p, "startValue", json_object_new_int(0));
	json_object_object_add(p, "endValue", json_object_new_int64(total));
	json_object_object_add(p, "samples", samples);
	json_object_object_add(p, "weights", weights);
	return p;
}

static int write_speedscope(const struct model *m, const char *name, FILE *f)
{
	struct json_object *doc = json_object_new_object(), *shared = json_object_new_object();
	struct json_object *profiles = json_object_new_array(), *p = NULL;
	const char *base = name ? strrchr(name, '/') : NULL;
	char *title = clean(base ? base + 1 : name ? name : "");
	const char *text;
	int ret = 0;

	if (!doc || !shared || !profiles || !title) {
		ret = -ENOMEM;
		goto cleanup;
	}
	json_object_object_add(doc, "$schema", jstr(SPEEDSCOPE_SCHEMA));
	json_object_object_add(doc, "exporter", jstr("scalene-bpf"));
	json_object_object_add(doc, "name", jstr(title));
	json_object_object_add(doc, "activeProfileIndex", json_object_new_int(0));
	json_object_object_add(shared, "frames", speedscope_frames(m));
	json_object_object_add(doc, "shared", shared);
	shared = NULL;
	if (m->cpu.n && m->have_time)
		p = speedscope_profile(m, &m->cpu, "CPU and blocked time", "nanoseconds", W_TIME);
	else if (m->cpu.n)
		p = speedscope_profile(m, &m->cpu, "CPU samples", "none", W_SAMPLES);
	if (p)
		json_object_array_add(profiles, p);
	if (m->mem.n)
		json_object_array_add(profiles, speedscope_profile(m, &m->mem, "Memory allocated",
								   "bytes", W_BYTES));
	if (m->gpu.n)
		json_object_array_add(profiles, speedscope_profile(m, &m->gpu, "GPU device time",
								   "nanoseconds", W_GPU));
	json_object_object_add(doc, "profiles", profiles);
	profiles = NULL;
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		ret = -ENOMEM;
		goto cleanup;
	}
	fputs(text, f);
	fputc('\n', f);
cleanup:
	free(title);
	json_object_put(profiles);
	json_object_put(shared);
	json_object_put(doc);
	return ret;
}

/* --- pprof --- */

struct pprof_fn_key {
	const char *name, *file; /* interned */
};

struct pprof {
	Perftools__Profiles__Profile p;
	struct hmap *str_idx; /* interned pointer -> index + 1 */
	struct hmap *fn_idx;  /* struct pprof_fn_key -> id */
	const char **strs;
	size_t nstrs, capstrs;
	Perftools__Profiles__ValueType types[W_KINDS], period_type;
	Perftools__Profiles__ValueType *type_ptrs[W_KINDS];
	int slot[W_KINDS]; /* each weight's place in a sample's values; -1: none */
	Perftools__Profiles__Function *fns;
	Perftools__Profiles__Location *locs;
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Sample *samples;
	uint64_t *loc_ids;
	int64_t *values;
};

/* Index of the interned string s in the string table; -1 when out of memory. */
static int64_t pp_str(struct pprof *pp, const char *s)
{
	void *v = hmap__get(pp->str_idx, &s);

	if (v)
		return (int64_t)(uintptr_t)v - 1;
	if (pp->nstrs == pp->capstrs) {
		size_t cap = pp->capstrs ? pp->capstrs * 2 : 256;
		const char **ns = realloc(pp->strs, cap * sizeof(*ns));

		if (!ns)
			return -1;
		pp->strs = ns;
		pp->capstrs = cap;
	}
	if (hmap__put(pp->str_idx, &s, (void *)(uintptr_t)(pp->nstrs + 1)))
		return -1;
	pp->strs[pp->nstrs] = s;
	return pp->nstrs++;
}

static int64_t pp_cstr(struct pprof *pp, struct model *m, const char *s)
{
	const char *i = strtab__intern(m->strs, s);

	return i ? pp_str(pp, i) : -1;
}

/* The first line of a Python function, from the profile's `functions`
 * (qualname and co_firstlineno); 0 when not listed. */
static int start_line(struct json_object *files, const char *file, const char *name)
{
	struct json_object *fd, *fns;
	size_t i, n;

	if (!files || !json_object_object_get_ex(files, file, &fd) ||
	    !(fns = vj_array(fd, "functions")))
		return 0;
	n = json_object_array_length(fns);
	for (i = 0; i < n; i++) {
		struct json_object *fo = json_object_array_get_idx(fns, i);
		const char *q = vj_str(fo, "line");

		if (q && !strcmp(q, name))
			return line_of(vj_num(fo, "lineno"));
	}
	return 0;
}

/* Functions (one per name and file) and one location per frame; ids are
 * indices + 1: non-zero and unique, as pprof's readers require. */
static int pp_locations(struct pprof *pp, struct model *m, struct json_object *files)
{
	size_t nfn = 0;
	int i;

	pp->fns = calloc(m->nframes ? m->nframes : 1, sizeof(*pp->fns));
	pp->locs = calloc(m->nframes ? m->nframes : 1, sizeof(*pp->locs));
	pp->lines = calloc(m->nframes ? m->nframes : 1, sizeof(*pp->lines));
	pp->p.function = calloc(m->nframes ? m->nframes : 1, sizeof(void *));
	pp->p.location = calloc(m->nframes ? m->nframes : 1, sizeof(void *));
	if (!pp->fns || !pp->locs || !pp->lines || !pp->p.function || !pp->p.location)
		return -ENOMEM;
	for (i = 0; i < m->nframes; i++) {
		const struct frame *fr = &m->frames[i];
		struct pprof_fn_key k = { fr->func, fr->file };
		Perftools__Profiles__Function *fn;
		void *v = hmap__get(pp->fn_idx, &k);

		if (!v) {
			fn = &pp->fns[nfn];
			perftools__profiles__function__init(fn);
			fn->id = nfn + 1;
			fn->name = fn->system_name = pp_str(pp, fr->func);
			fn->filename = pp_str(pp, fr->file);
			if (fn->name < 0 || fn->filename < 0)
				return -ENOMEM;
			if (!fr->native)
				fn->start_line = start_line(files, fr->file, fr->func);
			v = (void *)(uintptr_t)fn->id;
			if (hmap__put(pp->fn_idx, &k, v))
				return -ENOMEM;
			pp->p.function[nfn++] = fn;
		}
		perftools__profiles__line__init(&pp->lines[i]);
		pp->lines[i].function_id = (uintptr_t)v;
		pp->lines[i].line = fr->line;
		perftools__profiles__location__init(&pp->locs[i]);
		pp->locs[i].id = i + 1;
		pp->locs[i].n_line = 1;
		pp->locs[i].line = calloc(1, sizeof(void *));
		if (!pp->locs[i].line)
			return -ENOMEM;
		pp->locs[i].line[0] = &pp->lines[i];
		pp->p.location[i] = &pp->locs[i];
	}
	pp->p.n_function = nfn;
	pp->p.n_location = m->nframes;
	return 0;
}

/* Sample types: samples and time for CPU, and the time split as the
 * percentages split it (python_time, native_time, system_time, and of the
 * last gil_wait_time), alloc_space for memory, gpu_time for GPU; the names
 * pprof and OTLP give them. */
static const char *const weight_names[W_KINDS][2] = {
	[W_SAMPLES] = { "samples", "count" },
	[W_TIME] = { "time", "nanoseconds" },
	[W_PYTHON] = { "python_time", "nanoseconds" },
	[W_NATIVE] = { "native_time", "nanoseconds" },
	[W_SYSTEM] = { "system_time", "nanoseconds" },
	[W_GIL] = { "gil_wait_time", "nanoseconds" },
	[W_BYTES] = { "alloc_space", "bytes" },
	[W_GPU] = { "gpu_time", "nanoseconds" },
};

/* Whether the profile has a value of that kind, and the stacks that carry
 * it. */
static const struct stacks *weight_stacks(const struct model *m, enum weight w)
{
	switch (w) {
	case W_SAMPLES:
		return m->cpu.n ? &m->cpu : NULL;
	case W_TIME:
		return m->cpu.n && m->have_time ? &m->cpu : NULL;
	case W_PYTHON:
	case W_NATIVE:
	case W_SYSTEM:
		return m->cpu.n && m->have_split ? &m->cpu : NULL;
	case W_GIL:
		return m->cpu.n && m->have_gil ? &m->cpu : NULL;
	case W_BYTES:
		return m->mem.n ? &m->mem : NULL;
	case W_GPU:
		return m->gpu.n ? &m->gpu : NULL;
	default:
		return NULL;
	}
}

/* The sampling period applies to the CPU kinds. */
static bool weight_sampled(enum weight w)
{
	return w <= W_GIL;
}

/* The export kind (view.h: EXPORT_KIND_*) a weight is of. */
static unsigned weight_kind(enum weight w)
{
	return w == W_BYTES ? EXPORT_KIND_MEMORY : w == W_GPU ? EXPORT_KIND_GPU : EXPORT_KIND_CPU;
}

/* pprof: every sample has a value for each kind (0 for the other kinds);
 * only the kinds asked for (EXPORT_KIND_*). */
static int pp_types(struct pprof *pp, struct model *m, unsigned kinds)
{
	int i;

	for (i = 0; i < W_KINDS; i++) {
		pp->slot[i] = -1;
		if (!(kinds & weight_kind(i)) || !weight_stacks(m, i))
			continue;
		perftools__profiles__value_type__init(&pp->types[i]);
		pp->types[i].type = pp_cstr(pp, m, weight_names[i][0]);
		pp->types[i].unit = pp_cstr(pp, m, weight_names[i][1]);
		if (pp->types[i].type < 0 || pp->types[i].unit < 0)
			return -ENOMEM;
		pp->slot[i] = (int)pp->p.n_sample_type;
		pp->type_ptrs[pp->p.n_sample_type++] = &pp->types[i];
	}
	pp->p.sample_type = pp->type_ptrs;
	if (!pp->p.n_sample_type)
		return -ENODATA;
	if (pp->slot[W_SAMPLES] >= 0)
		pp->p.default_sample_type = pp->types[W_SAMPLES].type;
	/* The period is the CPU kinds' (a profile of the other kinds alone
	 * states none). */
	if (m->period_ns && (kinds & EXPORT_KIND_CPU)) {
		perftools__profiles__value_type__init(&pp->period_type);
		pp->period_type.type = pp_cstr(pp, m, "cpu");
		pp->period_type.unit = pp_cstr(pp, m, "nanoseconds");
		if (pp->period_type.type < 0 || pp->period_type.unit < 0)
			return -ENOMEM;
		pp->p.period_type = &pp->period_type;
		pp->p.period = m->period_ns;
	}
	return 0;
}

static int pp_samples(struct pprof *pp, const struct model *m, unsigned kinds)
{
	static const struct stacks empty;
	const struct stacks *lists[] = {
		kinds & EXPORT_KIND_CPU ? &m->cpu : &empty,
		kinds & EXPORT_KIND_MEMORY ? &m->mem : &empty,
		kinds & EXPORT_KIND_GPU ? &m->gpu : &empty,
	};
	size_t ns = 0, nloc = 0, k = 0, nv = pp->p.n_sample_type, i;
	int j, w;

	for (i = 0; i < 3; i++) {
		ns += lists[i]->n;
		for (j = 0; j < lists[i]->n; j++)
			nloc += lists[i]->v[j].n;
	}
	pp->samples = calloc(ns ? ns : 1, sizeof(*pp->samples));
	pp->p.sample = calloc(ns ? ns : 1, sizeof(void *));
	pp->loc_ids = calloc(nloc ? nloc : 1, sizeof(*pp->loc_ids));
	pp->values = calloc(ns * nv > 0 ? ns * nv : 1, sizeof(*pp->values));
	if (!pp->samples || !pp->p.sample || !pp->loc_ids || !pp->values)
		return -ENOMEM;
	ns = 0;
	for (i = 0; i < 3; i++) {
		for (j = 0; j < lists[i]->n; j++, ns++) {
			const struct stack *st = &lists[i]->v[j];
			Perftools__Profiles__Sample *s = &pp->samples[ns];
			int64_t *val = pp->values + ns * nv;
			int f;

			perftools__profiles__sample__init(s);
			s->location_id = pp->loc_ids + k;
			s->n_location_id = st->n;
			/* pprof lists a stack leaf first. */
			for (f = st->n - 1; f >= 0; f--)
				pp->loc_ids[k++] = st->frames[f] + 1;
			s->value = val;
			s->n_value = nv;
			for (w = 0; w < W_KINDS; w++) {
				if (pp->slot[w] >= 0)
					val[pp->slot[w]] = st->w[w];
			}
			pp->p.sample[ns] = s;
		}
	}
	pp->p.n_sample = ns;
	return 0;
}

/* gzip (zlib's deflate with a gzip header) of buf to f. */
static int gzip_to(const uint8_t *buf, size_t len, FILE *f)
{
	unsigned char out[1 << 16];
	z_stream zs;
	int zr;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)buf;
	zs.avail_in = len; /* a profile in memory is below 4 GiB (view.c) */
	do {
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		zr = deflate(&zs, Z_FINISH);
		if (zr == Z_STREAM_ERROR)
			break;
		fwrite(out, 1, sizeof(out) - zs.avail_out, f);
	} while (zr != Z_STREAM_END);
	deflateEnd(&zs);
	return zr == Z_STREAM_END ? 0 : -ENOMEM;
}

static void pprof_free(struct pprof *pp)
{
	size_t i;

	for (i = 0; pp->locs && i < pp->p.n_location; i++)
		free(pp->locs[i].line);
	free(pp->locs);
	free(pp->lines);
	free(pp->fns);
	free(pp->samples);
	free(pp->loc_ids);
	free(pp->values);
	free(pp->p.function);
	free(pp->p.location);
	free(pp->p.sample);
	free(pp->strs);
	hmap__free(pp->str_idx);
	hmap__free(pp->fn_idx);
}

static int write_pprof(struct model *m, struct json_object *doc, unsigned kinds, FILE *f)
{
	struct pprof pp;
	uint8_t *buf = NULL;
	size_t len;
	int err;

	memset(&pp, 0, sizeof(pp));
	perftools__profiles__profile__init(&pp.p);
	pp.str_idx = hmap__new(sizeof(const char *));
	pp.fn_idx = hmap__new(sizeof(struct pprof_fn_key));
	if (!pp.str_idx || !pp.fn_idx || pp_cstr(&pp, m, "") != 0) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = pp_types(&pp, m, kinds);
	if (!err)
		err = pp_locations(&pp, m, vj_object(doc, "files"));
	if (!err)
		err = pp_samples(&pp, m, kinds);
	if (err)
		goto cleanup;
	pp.p.string_table = (char **)pp.strs;
	pp.p.n_string_table = pp.nstrs;
	pp.p.time_nanos = m->time_nanos;
	pp.p.duration_nanos = m->duration_nanos;
	len = perftools__profiles__profile__get_packed_size(&pp.p);
	buf = malloc(len ? len : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	perftools__profiles__profile__pack(&pp.p, buf);
	err = gzip_to(buf, len, f);
cleanup:
	free(buf);
	pprof_free(&pp);
	return err;
}

/* --- OTLP --- */

/*
 * The OpenTelemetry profiles signal: an ExportProfilesServiceRequest with a
 * resource per profile added (a process, or a process's interval), each with
 * one scope (this profiler) and a profile per kind of value (OTLP profiles
 * have one sample type each); all of them share one dictionary.  Index 0 of
 * each table is its zero value (the empty string, a function, location and
 * stack of nothing), as the format requires; a location is a function and a
 * line, a stack one of the model's, innermost location first.  The tables
 * are plain arrays while profiles are added, and become messages when the
 * request is packed.
 */
struct ob_fn {
	int32_t name, file;
	int64_t start;
};

struct ob_loc {
	int32_t fn, pad;
	int64_t line;
};

struct ob_range {
	size_t first, n;
};

struct ob_sample {
	int32_t stack;
	int64_t value;
};

struct ob_profile {
	int32_t type, unit;
	struct ob_range samples;
	int64_t time, duration, period;
	uint8_t id[16];
};

struct ob_attr {
	const char *key, *str; /* interned; str NULL: num */
	int64_t num;
};

struct ob_resource {
	struct ob_range attrs, profiles;
};

struct otlp_batch {
	struct strtab *strs;
	struct hmap *str_idx; /* interned -> index + 1 */
	const char **str;
	size_t nstr, capstr;
	struct hmap *fn_idx; /* struct ob_fn without start -> index */
	struct ob_fn *fn;
	size_t nfn, capfn;
	struct hmap *loc_idx; /* struct ob_loc -> index */
	struct ob_loc *loc;
	size_t nloc, caploc;
	int32_t *stack_locs;
	size_t nstack_locs, capstack_locs;
	struct ob_range *stack;
	size_t nstack, capstack;
	struct ob_sample *sample;
	size_t nsample, capsample;
	struct ob_profile *profile;
	size_t nprofile, capprofile;
	struct ob_attr *attr;
	size_t nattr, capattr;
	struct ob_resource *res;
	size_t nres, capres;
};

/* Room for one more element in an array of n with capacity *cap. */
static int grow(void *arrp, size_t n, size_t *cap, size_t size)
{
	void **arr = arrp, *g;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	g = realloc(*arr, c * size);
	if (!g)
		return -ENOMEM;
	*arr = g;
	*cap = c;
	return 0;
}
#define OB_GROW(b, f) grow(&(b)->f, (b)->n##f, &(b)->cap##f, sizeof(*(b)->f))

/* The string table's index of s (copied into the batch), or -1. */
static int32_t ob_str(struct otlp_batch *b, const char *s)
{
	const char *i = strtab__intern(b->strs, s);
	void *v;

	if (!i)
		return -1;
	v = hmap__get(b->str_idx, &i);
	if (v)
		return (int32_t)((uintptr_t)v - 1);
	if (b->nstr >= INT32_MAX || OB_GROW(b, str) ||
	    hmap__put(b->str_idx, &i, (void *)(uintptr_t)(b->nstr + 1)))
		return -1;
	b->str[b->nstr] = i;
	return (int32_t)b->nstr++;
}

static int32_t ob_function(struct otlp_batch *b, const struct frame *fr, struct json_object *files)
{
	struct ob_fn k = { ob_str(b, fr->func), ob_str(b, fr->file), 0 };
	void *v;

	if (k.name < 0 || k.file < 0)
		return -1;
	v = hmap__get(b->fn_idx, &k);
	if (v)
		return (int32_t)(uintptr_t)v;
	if (b->nfn >= INT32_MAX || OB_GROW(b, fn) ||
	    hmap__put(b->fn_idx, &k, (void *)(uintptr_t)b->nfn))
		return -1;
	if (!fr->native)
		k.start = start_line(files, fr->file, fr->func);
	b->fn[b->nfn] = k;
	return (int32_t)b->nfn++;
}

static int32_t ob_location(struct otlp_batch *b, const struct frame *fr, struct json_object *files)
{
	struct ob_loc k = { ob_function(b, fr, files), 0, fr->line };
	void *v;

	if (k.fn < 0)
		return -1;
	v = hmap__get(b->loc_idx, &k);
	if (v)
		return (int32_t)(uintptr_t)v;
	if (b->nloc >= INT32_MAX || OB_GROW(b, loc) ||
	    hmap__put(b->loc_idx, &k, (void *)(uintptr_t)b->nloc))
		return -1;
	b->loc[b->nloc] = k;
	return (int32_t)b->nloc++;
}

/* A stack of the model in the stack table; its index, or -1. */
static int32_t ob_stack(struct otlp_batch *b, const struct model *m, const struct stack *st,
			struct json_object *files)
{
	size_t first = b->nstack_locs;
	int f;

	for (f = st->n - 1; f >= 0; f--) {
		int32_t l = ob_location(b, &m->frames[st->frames[f]], files);

		if (l < 0 || OB_GROW(b, stack_locs))
			return -1;
		b->stack_locs[b->nstack_locs++] = l;
	}
	if (b->nstack >= INT32_MAX || OB_GROW(b, stack))
		return -1;
	b->stack[b->nstack] = (struct ob_range){ first, b->nstack_locs - first };
	return (int32_t)b->nstack++;
}

static int ob_attr(struct otlp_batch *b, const char *key, const char *str, int64_t num)
{
	const char *k = strtab__intern(b->strs, key),
		   *v = str ? strtab__intern(b->strs, str) : NULL;
	size_t i;

	if (!k || (str && !v))
		return -ENOMEM;
	/* A key given again: the later value. */
	for (i = b->res[b->nres].attrs.first; i < b->nattr; i++) {
		if (b->attr[i].key == k) {
			b->attr[i] = (struct ob_attr){ k, v, num };
			return 0;
		}
	}
	if (OB_GROW(b, attr))
		return -ENOMEM;
	b->attr[b->nattr++] = (struct ob_attr){ k, v, num };
	return 0;
}

struct otlp_batch *otlp_batch_new(void)
{
	struct otlp_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->strs = strtab__new();
	b->str_idx = hmap__new(sizeof(const char *));
	b->fn_idx = hmap__new(sizeof(struct ob_fn));
	b->loc_idx = hmap__new(sizeof(struct ob_loc));
	/* The zero values at index 0. */
	if (!b->strs || !b->str_idx || !b->fn_idx || !b->loc_idx || ob_str(b, "") != 0 ||
	    OB_GROW(b, fn) || OB_GROW(b, loc) || OB_GROW(b, stack)) {
		otlp_batch_free(b);
		return NULL;
	}
	b->fn[b->nfn++] = (struct ob_fn){ 0 };
	b->loc[b->nloc++] = (struct ob_loc){ 0 };
	b->stack[b->nstack++] = (struct ob_range){ 0 };
	return b;
}

void otlp_batch_free(struct otlp_batch *b)
{
	if (!b)
		return;
	strtab__free(b->strs);
	hmap__free(b->str_idx);
	hmap__free(b->fn_idx);
	hmap__free(b->loc_idx);
	free(b->str);
	free(b->fn);
	free(b->loc);
	free(b->stack_locs);
	free(b->stack);
	free(b->sample);
	free(b->profile);
	free(b->attr);
	free(b->res);
	free(b);
}

int otlp_batch_resources(const struct otlp_batch *b)
{
	return (int)b->nres;
}

/* The profile's own attributes, in the semantic conventions' names: the
 * program as the service, the interpreter's pid and version. */
static int ob_doc_attrs(struct otlp_batch *b, struct model *m, struct json_object *doc)
{
	struct json_object *ins = vj_array(vj_object(doc, "scalene_bpf"), "interpreters");
	struct json_object *in = ins ? json_object_array_get_idx(ins, 0) : NULL;
	const char *program = vj_str(doc, "program"), *version = vj_str(in, "version");
	const char *base = program ? strrchr(program, '/') : NULL;
	double pid = vj_num(in, "pid");
	int err = 0;

	if (program)
		err = ob_attr(b, "service.name", intern_clean(m, base ? base + 1 : program), 0);
	if (!err && pid >= 1 && pid <= INT_MAX)
		err = ob_attr(b, "process.pid", NULL, (int64_t)pid);
	if (!err && json_object_is_type(in, json_type_object)) {
		err = ob_attr(b, "process.runtime.name", "CPython", 0);
		if (!err && version)
			err = ob_attr(b, "process.runtime.version", intern_clean(m, version), 0);
	}
	return err;
}

/* A profile per kind of value the model has, with a sample for each stack
 * whose value of that kind is not 0; each stack is in the table once. */
static int ob_profiles(struct otlp_batch *b, struct model *m, struct json_object *files)
{
	const struct stacks *lists[] = { &m->cpu, &m->mem, &m->gpu };
	int32_t *idx[3] = { NULL, NULL, NULL };
	int err = -ENOMEM, w, i, j;

	for (i = 0; i < 3; i++) {
		idx[i] = calloc(lists[i]->n ? lists[i]->n : 1, sizeof(*idx[i]));
		if (!idx[i])
			goto out;
		for (j = 0; j < lists[i]->n; j++) {
			idx[i][j] = ob_stack(b, m, &lists[i]->v[j], files);
			if (idx[i][j] < 0)
				goto out;
		}
	}
	for (w = 0; w < W_KINDS; w++) {
		const struct stacks *list = weight_stacks(m, w);
		int32_t *ids = list == &m->cpu ? idx[0] : list == &m->mem ? idx[1] : idx[2];
		struct ob_profile *p;

		if (!list)
			continue;
		if (OB_GROW(b, profile))
			goto out;
		p = &b->profile[b->nprofile];
		memset(p, 0, sizeof(*p));
		p->type = ob_str(b, weight_names[w][0]);
		p->unit = ob_str(b, weight_names[w][1]);
		if (p->type < 0 || p->unit < 0)
			goto out;
		p->samples.first = b->nsample;
		for (j = 0; j < list->n; j++) {
			if (!list->v[j].w[w])
				continue;
			if (OB_GROW(b, sample))
				goto out;
			b->sample[b->nsample++] = (struct ob_sample){ ids[j], list->v[j].w[w] };
		}
		p->samples.n = b->nsample - p->samples.first;
		p->time = m->time_nanos;
		p->duration = m->duration_nanos;
		p->period = weight_sampled(w) ? m->period_ns : 0;
		if (getrandom(p->id, sizeof(p->id), 0) != sizeof(p->id))
			memcpy(p->id, &(uint64_t){ (uint64_t)m->time_nanos ^ b->nprofile }, 8);
		p->id[0] |= 1; /* all zeros would mean none */
		b->nprofile++;
	}
	err = 0;
out:
	for (i = 0; i < 3; i++)
		free(idx[i]);
	return err;
}

/* otlp_batch_add with the profile's model read already. */
static int ob_add(struct otlp_batch *b, struct model *m, struct json_object *doc,
		  const struct otlp_attr *extra, int nextra)
{
	struct ob_resource *r;
	int err, i;

	if (!m->cpu.n && !m->mem.n && !m->gpu.n)
		return -EINVAL;
	if ((err = OB_GROW(b, res)))
		return err;
	r = &b->res[b->nres];
	r->attrs.first = b->nattr;
	r->profiles.first = b->nprofile;
	err = ob_doc_attrs(b, m, doc);
	for (i = 0; !err && i < nextra; i++)
		err = extra[i].key ? ob_attr(b, extra[i].key, extra[i].str, extra[i].num) : 0;
	if (!err)
		err = ob_profiles(b, m, vj_object(doc, "files"));
	if (err)
		return err;
	r->attrs.n = b->nattr - r->attrs.first;
	r->profiles.n = b->nprofile - r->profiles.first;
	b->nres++;
	return 0;
}

int otlp_batch_add(struct otlp_batch *b, struct export_src *src, const struct otlp_attr *extra,
		   int nextra)
{
	return ob_add(b, &src->m, src->doc, extra, nextra);
}

/* The messages of the request, all allocated at once from the tables. */
struct ob_msgs {
	Otlp__ExportProfilesServiceRequest req;
	Otlp__ProfilesDictionary dict;
	Otlp__InstrumentationScope scope;
	Otlp__KeyValueAndUnit attr0, *attr0_ptr;
	Otlp__Function *fn, **fn_p;
	Otlp__Location *loc, **loc_p;
	Otlp__Line *line, **line_p;
	Otlp__Stack *stack, **stack_p;
	Otlp__Sample *sample, **sample_p;
	Otlp__Profile *profile, **profile_p;
	Otlp__ValueType *type;
	Otlp__KeyValue *kv, **kv_p;
	Otlp__AnyValue *val;
	Otlp__ResourceProfiles *rp, **rp_p;
	Otlp__Resource *resource;
	Otlp__ScopeProfiles *sp, **sp_p;
};

static void ob_msgs_free(struct ob_msgs *o)
{
	void *all[] = { o->fn,	     o->fn_p,	 o->loc,    o->loc_p,	 o->line,    o->line_p,
			o->stack,    o->stack_p, o->sample, o->sample_p, o->profile, o->profile_p,
			o->type,     o->kv,	 o->kv_p,   o->val,	 o->rp,	     o->rp_p,
			o->resource, o->sp,	 o->sp_p };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		free(all[i]);
}

#define OB_ALLOC(p, n) ((p) = calloc((size_t)(n) + 1, sizeof(*(p))))

/* cpu, ns: the string indices of the period's type and unit. */
static int ob_msgs_make(struct ob_msgs *o, struct otlp_batch *b, int32_t cpu, int32_t ns)
{
	size_t i;

	if (!OB_ALLOC(o->fn, b->nfn) || !OB_ALLOC(o->fn_p, b->nfn) || !OB_ALLOC(o->loc, b->nloc) ||
	    !OB_ALLOC(o->loc_p, b->nloc) || !OB_ALLOC(o->line, b->nloc) ||
	    !OB_ALLOC(o->line_p, b->nloc) || !OB_ALLOC(o->stack, b->nstack) ||
	    !OB_ALLOC(o->stack_p, b->nstack) || !OB_ALLOC(o->sample, b->nsample) ||
	    !OB_ALLOC(o->sample_p, b->nsample) || !OB_ALLOC(o->profile, b->nprofile) ||
	    !OB_ALLOC(o->profile_p, b->nprofile) || !OB_ALLOC(o->type, 2 * b->nprofile) ||
	    !OB_ALLOC(o->kv, b->nattr) || !OB_ALLOC(o->kv_p, b->nattr) ||
	    !OB_ALLOC(o->val, b->nattr) || !OB_ALLOC(o->rp, b->nres) ||
	    !OB_ALLOC(o->rp_p, b->nres) || !OB_ALLOC(o->resource, b->nres) ||
	    !OB_ALLOC(o->sp, b->nres) || !OB_ALLOC(o->sp_p, b->nres))
		return -ENOMEM;
	for (i = 0; i < b->nfn; i++) {
		otlp__function__init(&o->fn[i]);
		o->fn[i].name_strindex = o->fn[i].system_name_strindex = b->fn[i].name;
		o->fn[i].filename_strindex = b->fn[i].file;
		o->fn[i].start_line = b->fn[i].start;
		o->fn_p[i] = &o->fn[i];
	}
	for (i = 0; i < b->nloc; i++) {
		otlp__location__init(&o->loc[i]);
		otlp__line__init(&o->line[i]);
		o->line[i].function_index = b->loc[i].fn;
		o->line[i].line = b->loc[i].line;
		o->line_p[i] = &o->line[i];
		/* The zero location has no line. */
		if (i) {
			o->loc[i].n_lines = 1;
			o->loc[i].lines = &o->line_p[i];
		}
		o->loc_p[i] = &o->loc[i];
	}
	for (i = 0; i < b->nstack; i++) {
		otlp__stack__init(&o->stack[i]);
		o->stack[i].n_location_indices = b->stack[i].n;
		o->stack[i].location_indices = b->stack_locs + b->stack[i].first;
		o->stack_p[i] = &o->stack[i];
	}
	for (i = 0; i < b->nsample; i++) {
		otlp__sample__init(&o->sample[i]);
		o->sample[i].stack_index = b->sample[i].stack;
		o->sample[i].n_values = 1;
		o->sample[i].values = &b->sample[i].value;
		o->sample_p[i] = &o->sample[i];
	}
	for (i = 0; i < b->nprofile; i++) {
		const struct ob_profile *bp = &b->profile[i];
		Otlp__Profile *p = &o->profile[i];

		otlp__profile__init(p);
		otlp__value_type__init(&o->type[2 * i]);
		o->type[2 * i].type_strindex = bp->type;
		o->type[2 * i].unit_strindex = bp->unit;
		p->sample_type = &o->type[2 * i];
		p->samples = o->sample_p + bp->samples.first;
		p->n_samples = bp->samples.n;
		p->time_unix_nano = bp->time;
		p->duration_nano = bp->duration;
		if (bp->period) {
			otlp__value_type__init(&o->type[2 * i + 1]);
			o->type[2 * i + 1].type_strindex = cpu;
			o->type[2 * i + 1].unit_strindex = ns;
			p->period_type = &o->type[2 * i + 1];
			p->period = bp->period;
		}
		p->profile_id.data = (uint8_t *)bp->id;
		p->profile_id.len = sizeof(bp->id);
		o->profile_p[i] = p;
	}
	for (i = 0; i < b->nattr; i++) {
		otlp__key_value__init(&o->kv[i]);
		otlp__any_value__init(&o->val[i]);
		o->kv[i].key = (char *)b->attr[i].key;
		if (b->attr[i].str) {
			o->val[i].value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
			o->val[i].string_value = (char *)b->attr[i].str;
		} else {
			o->val[i].value_case = OTLP__ANY_VALUE__VALUE_INT_VALUE;
			o->val[i].int_value = b->attr[i].num;
		}
		o->kv[i].value = &o->val[i];
		o->kv_p[i] = &o->kv[i];
	}
	otlp__instrumentation_scope__init(&o->scope);
	o->scope.name = "scalene-bpf";
	o->scope.version = SCALENE_BPF_VERSION;
	for (i = 0; i < b->nres; i++) {
		otlp__resource_profiles__init(&o->rp[i]);
		otlp__resource__init(&o->resource[i]);
		otlp__scope_profiles__init(&o->sp[i]);
		o->resource[i].attributes = o->kv_p + b->res[i].attrs.first;
		o->resource[i].n_attributes = b->res[i].attrs.n;
		o->sp[i].scope = &o->scope;
		o->sp[i].profiles = o->profile_p + b->res[i].profiles.first;
		o->sp[i].n_profiles = b->res[i].profiles.n;
		o->sp_p[i] = &o->sp[i];
		o->rp[i].resource = &o->resource[i];
		o->rp[i].scope_profiles = &o->sp_p[i];
		o->rp[i].n_scope_profiles = 1;
		o->rp_p[i] = &o->rp[i];
	}
	otlp__key_value_and_unit__init(&o->attr0);
	o->attr0_ptr = &o->attr0;
	otlp__profiles_dictionary__init(&o->dict);
	o->dict.function_table = o->fn_p;
	o->dict.n_function_table = b->nfn;
	o->dict.location_table = o->loc_p;
	o->dict.n_location_table = b->nloc;
	o->dict.stack_table = o->stack_p;
	o->dict.n_stack_table = b->nstack;
	o->dict.attribute_table = &o->attr0_ptr;
	o->dict.n_attribute_table = 1;
	otlp__export_profiles_service_request__init(&o->req);
	o->req.resource_profiles = o->rp_p;
	o->req.n_resource_profiles = b->nres;
	o->req.dictionary = &o->dict;
	return 0;
}

int otlp_batch_pack(struct otlp_batch *b, uint8_t **buf, size_t *len)
{
	struct ob_msgs o;
	int err;

	/* The period's strings go in first: the string table is taken after. */
	int32_t cpu = ob_str(b, "cpu"), ns = ob_str(b, "nanoseconds");

	memset(&o, 0, sizeof(o));
	if (cpu < 0 || ns < 0)
		return -ENOMEM;
	err = ob_msgs_make(&o, b, cpu, ns);
	if (!err) {
		o.dict.string_table = (char **)b->str;
		o.dict.n_string_table = b->nstr;
		*len = otlp__export_profiles_service_request__get_packed_size(&o.req);
		*buf = malloc(*len ? *len : 1);
		if (*buf)
			otlp__export_profiles_service_request__pack(&o.req, *buf);
		else
			err = -ENOMEM;
	}
	ob_msgs_free(&o);
	return err;
}

static int write_otlp(struct model *m, struct json_object *doc, FILE *f)
{
	struct otlp_batch *b = otlp_batch_new();
	uint8_t *buf = NULL;
	size_t len = 0;
	int err = b ? ob_add(b, m, doc, NULL, 0) : -ENOMEM;

	if (!err)
		err = otlp_batch_pack(b, &buf, &len);
	if (!err && fwrite(buf, 1, len, f) != len)
		err = -EIO;
	free(buf);
	otlp_batch_free(b);
	return err;
}

/* --- entry points --- */

/* The exports have no place for them: the counters of lost data go to err,
 * as the terminal view's footer and the page's note give them. */
static void note_losses(struct json_object *doc, FILE *err)
{
	size_t i;

	for (i = 0; i < vj_nlosses; i++) {
		double v = vj_loss_value(doc, &vj_losses[i]);

		if (v > 0)
			fprintf(err, "scalene-bpf: data lost or incomplete: %s.%s = %.0f: %s\n",
				vj_losses[i].group, vj_losses[i].key, v, vj_losses[i].label);
	}
}

int export_parse_format(const char *s, enum export_format *fmt)
{
	if (!strcmp(s, "folded"))
		*fmt = EXPORT_FOLDED;
	else if (!strcmp(s, "speedscope"))
		*fmt = EXPORT_SPEEDSCOPE;
	else if (!strcmp(s, "pprof"))
		*fmt = EXPORT_PPROF;
	else if (!strcmp(s, "otlp"))
		*fmt = EXPORT_OTLP;
	else
		return -EINVAL;
	return 0;
}

int export_write(struct json_object *doc, enum export_format fmt, const char *name, FILE *f,
		 FILE *err)
{
	struct model m;
	int ret;

	if (!json_object_is_type(doc, json_type_object)) {
		fprintf(err, "scalene-bpf: not a profile: the document is not a JSON object\n");
		return -EINVAL;
	}
	ret = model_read(&m, doc);
	if (ret)
		goto cleanup;
	if (!m.cpu.n && !m.mem.n && !m.gpu.n) {
		fprintf(err, "scalene-bpf: no stacks in this profile: combined_stacks, stacks, "
			     "memory_stacks and scalene_bpf.gpu_stacks are empty or missing\n");
		ret = -EINVAL;
		goto cleanup;
	}
	if (fmt == EXPORT_FOLDED && !m.cpu.n) {
		fprintf(err,
			"scalene-bpf: no CPU stacks in this profile, only memory or GPU stacks: "
			"use --format speedscope or pprof for those\n");
		ret = -EINVAL;
		goto cleanup;
	}
	if (fmt == EXPORT_FOLDED)
		ret = write_folded(&m, f, err);
	else if (fmt == EXPORT_SPEEDSCOPE)
		ret = write_speedscope(&m, name, f);
	else if (fmt == EXPORT_OTLP)
		ret = write_otlp(&m, doc, f);
	else
		ret = write_pprof(&m, doc, EXPORT_KIND_ALL, f);
	if (!ret)
		note_losses(doc, err);
cleanup:
	if (ret == -ENOMEM)
		fprintf(err, "scalene-bpf: out of memory writing the export\n");
	model_free(&m);
	return ret;
}

int export_src_read(struct json_object *doc, struct export_src **out)
{
	struct export_src *src;
	int err;

	*out = NULL;
	if (!json_object_is_type(doc, json_type_object))
		return -EINVAL;
	src = calloc(1, sizeof(*src));
	if (!src)
		return -ENOMEM;
	src->doc = doc;
	err = model_read(&src->m, doc);
	if (err) {
		export_src_free(src);
		return err;
	}
	*out = src;
	return 0;
}

void export_src_free(struct export_src *src)
{
	if (!src)
		return;
	model_free(&src->m);
	free(src);
}

int export_pprof_kinds(struct export_src *src, unsigned kinds, uint8_t **buf, size_t *len)
{
	FILE *f;
	char *mem = NULL;
	size_t n = 0;
	int ret;

	*buf = NULL;
	*len = 0;
	f = open_memstream(&mem, &n);
	if (!f)
		return -ENOMEM;
	ret = write_pprof(&src->m, src->doc, kinds, f);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(mem);
		return ret;
	}
	*buf = (uint8_t *)mem;
	*len = n;
	return 0;
}
