/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/report/output.c: the string helpers, then whole documents built from small
 * profiles made through profile.h and read back with json-c.  The checks are
 * the format's own rules (integers as integers, every number finite, valid
 * UTF-8, dense lines, nothing that could end the <script> the GUI pastes the
 * profile into) plus the arithmetic of the percentages.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "testlib.h"
#include "utf8check.h"
#include "model/facts.h"
#include "report/output.h"
#include "model/profile.h"

#define MS 1000000ULL
#define FFFD "\xef\xbf\xbd"

/* ------------------------------------------------------------ helpers */

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b) + 1);
}

#define CHECK_NEAR(a, b)                                                                  \
	do {                                                                              \
		double _x = (a), _y = (b);                                                \
		if (!near(_x, _y)) {                                                      \
			fprintf(stderr, "%s:%d: %s == %.12g, expected %.12g\n", __FILE__, \
				__LINE__, #a, _x, _y);                                    \
			t_checks_failed++;                                                \
		}                                                                         \
	} while (0)

/* Source files served to output_build: path -> text; NULL text: unreadable. */
struct src {
	const char *path;
	const char *text;
};

static char *read_src(void *ctx, const char *filename, size_t *len, double *mtime)
{
	const struct src *s;

	for (s = ctx; s && s->path; s++) {
		if (!strcmp(s->path, filename) && s->text) {
			*len = strlen(s->text);
			*mtime = 0;
			return strdup(s->text);
		}
	}
	return NULL;
}

static struct profile *new_profile(void)
{
	struct profile_filter f = { .program_dir = "/app" };

	return profile__new(&f);
}

static struct frame_ref fr(struct profile *p, const char *file, const char *qual, int first,
			   int line)
{
	return (struct frame_ref){ profile__intern(p, file), profile__intern(p, qual), first,
				   line };
}

struct add_opts {
	int tid; /* 0: the main thread (tid 100) */
	enum sample_where where;
	uint64_t cpu, off, gil;
	double ts; /* seconds */
	double util;
	const char *sym, *mod;
};

static void add(struct profile *p, const struct frame_ref *frames, int n, struct add_opts a)
{
	struct sample_in s = {
		.tgid = 100,
		.tid = a.tid ? a.tid : 100,
		.main_thread = a.tid == 0,
		.ts_ns = (uint64_t)(a.ts * 1e9),
		.cpu_ns = a.cpu,
		.where = a.where,
		.offcpu_ns = a.off,
		.gil_ns = a.gil,
		.core_util = a.util,
		.native_sym = a.sym ? profile__intern(p, a.sym) : NULL,
		.native_module = a.mod ? profile__intern(p, a.mod) : NULL,
		.unattributed = -1,
		.frames = frames,
		.nframes = n,
	};

	profile__add(p, &s);
}

static struct json_object *parse_strict(const char *text)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)strlen(text));
	if (json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* The document as output_write streams it to a file (malloc'ed text). */
static char *streamed(struct profile *p, struct output_meta *m)
{
	FILE *f = tmpfile();
	char *text = NULL;
	long n;

	CHECK(f != NULL);
	if (!f)
		return NULL;
	CHECK_EQ_INT(output_write(p, m, fileno(f)), 0);
	n = ftell(f) > 0 ? ftell(f) : lseek(fileno(f), 0, SEEK_END);
	text = calloc(1, n + 1);
	if (text && pread(fileno(f), text, n, 0) != n) {
		free(text);
		text = NULL;
	}
	fclose(f);
	CHECK(text != NULL);
	return text;
}

/* Builds, serialises and parses back; *text gets the serialised form, as
 * written piece by piece to a file, which must hold the same document as
 * the one built whole. */
static struct json_object *build(struct profile *p, struct output_meta *m, char **text)
{
	struct json_object *doc = output_build(p, m), *back, *whole;
	char *wtext;

	CHECK(doc != NULL);
	if (!doc)
		return NULL;
	wtext = output_to_string(doc);
	json_object_put(doc);
	CHECK(wtext != NULL);
	if (!wtext)
		return NULL;
	whole = parse_strict(wtext);
	free(wtext);
	CHECK(whole != NULL);
	*text = streamed(p, m);
	if (!*text) {
		json_object_put(whole);
		return NULL;
	}
	back = parse_strict(*text);
	CHECK(back != NULL);
	CHECK(json_object_equal(back, whole));
	json_object_put(whole);
	return back;
}

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static double dbl(struct json_object *o, const char *key)
{
	return json_object_get_double(get(o, key));
}

/* Keys whose values must be JSON integers (or null where the format lets
 * them be); "line" is one inside a combined-stack frame only. */
static const char *const int_keys[] = {
	"lineno",
	"n_mallocs",
	"alloc_samples",
	"max_footprint_lineno",
	"start_region_line",
	"end_region_line",
	"start_outermost_loop",
	"end_outermost_loop",
	"start_function_line",
	"end_function_line",
	"main_thread_id",
	"ip",
	"offset",
	"count",
	"stack_index",
	"thread_id",
};

struct walk {
	int bad_numbers, bad_strings, bad_ints;
};

static bool is_int_key(struct json_object *parent, const char *key)
{
	size_t i;

	if (!strcmp(key, "line"))
		return get(parent, "kind") != NULL;
	for (i = 0; i < sizeof(int_keys) / sizeof(int_keys[0]); i++) {
		if (!strcmp(key, int_keys[i]))
			return true;
	}
	return false;
}

static void walk(struct json_object *o, struct walk *w)
{
	size_t i;

	switch (json_object_get_type(o)) {
	case json_type_double:
		if (!isfinite(json_object_get_double(o)))
			w->bad_numbers++;
		break;
	case json_type_string:
		if (!utf8_valid(json_object_get_string(o), json_object_get_string_len(o)))
			w->bad_strings++;
		break;
	case json_type_array:
		for (i = 0; i < json_object_array_length(o); i++)
			walk(json_object_array_get_idx(o, i), w);
		break;
	case json_type_object: {
		json_object_object_foreach (o, key, val) {
			if (!utf8_valid(key, strlen(key)))
				w->bad_strings++;
			if (is_int_key(o, key) && val && !json_object_is_type(val, json_type_int)) {
				fprintf(stderr, "  \"%s\" is not a JSON integer: %s\n", key,
					json_object_to_json_string(val));
				w->bad_ints++;
			}
			walk(val, w);
		}
		break;
	}
	default:
		break;
	}
}

static void check_document_rules(struct json_object *doc, const char *text)
{
	struct walk w = { 0 };

	walk(doc, &w);
	CHECK_EQ_INT(w.bad_numbers, 0);
	CHECK_EQ_INT(w.bad_strings, 0);
	CHECK_EQ_INT(w.bad_ints, 0);
	CHECK(utf8_valid(text, strlen(text)));
	CHECK(strstr(text, "NaN") == NULL);
	CHECK(strstr(text, "nan") == NULL);
	CHECK(strstr(text, "Infinity") == NULL);
	CHECK(strstr(text, "inf,") == NULL);
}

/* Every file: lines dense and in order, regions inside the file, the arrays
 * the GUI reads without checking always present. */
static void check_files_shape(struct json_object *doc)
{
	struct json_object *files = get(doc, "files");

	CHECK(json_object_is_type(files, json_type_object));
	if (!files)
		return;
	json_object_object_foreach (files, name, fd) {
		struct json_object *lines = get(fd, "lines"), *funcs = get(fd, "functions");
		int n, i;

		(void)name;
		CHECK(json_object_is_type(lines, json_type_array));
		CHECK(json_object_is_type(funcs, json_type_array));
		CHECK(json_object_is_type(get(fd, "imports"), json_type_array));
		CHECK(json_object_is_type(get(fd, "leaks"), json_type_object));
		n = (int)json_object_array_length(lines);
		for (i = 0; i < n; i++) {
			struct json_object *l = json_object_array_get_idx(lines, i);
			double sum;

			CHECK_EQ_INT(json_object_get_int(get(l, "lineno")), i + 1);
			CHECK(json_object_is_type(get(l, "line"), json_type_string));
			CHECK(json_object_is_type(get(l, "memory_samples"), json_type_array));
			CHECK(json_object_is_type(get(l, "cpu_samples_list"), json_type_array));
			CHECK(json_object_get_int(get(l, "end_region_line")) <= n);
			CHECK(json_object_get_int(get(l, "end_outermost_loop")) <= n);
			CHECK(json_object_get_int(get(l, "start_region_line")) >= 1);
			CHECK(json_object_get_int(get(l, "start_outermost_loop")) >= 1);
			sum = dbl(l, "n_cpu_percent_python") + dbl(l, "n_cpu_percent_c") +
			      dbl(l, "n_sys_percent");
			CHECK(sum >= 0 && floor(sum) <= 100);
		}
		for (i = 0; i < (int)json_object_array_length(funcs); i++) {
			struct json_object *fn = json_object_array_get_idx(funcs, i);

			CHECK(json_object_is_type(get(fn, "memory_samples"), json_type_array));
			CHECK_EQ_INT(json_object_array_length(get(fn, "cpu_samples_list")), 0);
			CHECK(json_object_get_int(get(fn, "lineno")) >= 1);
		}
	}
}

static struct json_object *line_of(struct json_object *doc, const char *file, int lineno)
{
	struct json_object *lines = get(get(get(doc, "files"), file), "lines");

	if (!lines || lineno < 1 || (size_t)lineno > json_object_array_length(lines))
		return NULL;
	return json_object_array_get_idx(lines, lineno - 1);
}

static struct json_object *func_named(struct json_object *doc, const char *file, const char *name)
{
	struct json_object *funcs = get(get(get(doc, "files"), file), "functions");
	size_t i;

	for (i = 0; funcs && i < json_object_array_length(funcs); i++) {
		struct json_object *fn = json_object_array_get_idx(funcs, i);

		if (!strcmp(json_object_get_string(get(fn, "line")), name))
			return fn;
	}
	return NULL;
}

static double line_total(struct json_object *l)
{
	return dbl(l, "n_cpu_percent_python") + dbl(l, "n_cpu_percent_c") + dbl(l, "n_sys_percent");
}

/* ------------------------------------------------------- string helpers */

static void check_sanitized(const char *in, size_t len, const char *prefix, size_t nbad,
			    const char *suffix)
{
	char *out = utf8_sanitize(in, len);
	size_t lp = strlen(prefix), ls = strlen(suffix), lo, mid, k;

	CHECK(out != NULL);
	if (!out)
		return;
	lo = strlen(out);
	CHECK(utf8_valid(out, lo));
	CHECK(lo >= lp + ls + 3);
	if (lo < lp + ls + 3) {
		free(out);
		return;
	}
	CHECK(!strncmp(out, prefix, lp));
	CHECK(!strcmp(out + lo - ls, suffix));
	/* Between them: one to nbad replacement characters, nothing else. */
	mid = lo - lp - ls;
	CHECK(mid % 3 == 0 && mid / 3 >= 1 && mid / 3 <= nbad);
	for (k = 0; k + 3 <= mid; k += 3)
		CHECK(!memcmp(out + lp + k, FFFD, 3));
	free(out);
}

static void test_utf8_sanitize_keeps_valid(void)
{
	static const char *const ok[] = {
		"",
		"plain ascii /app/prog.py",
		"caf\xc3\xa9",				  /* U+00E9 */
		"\xc2\x80\xdf\xbf",			  /* U+0080, U+07FF */
		"\xe0\xa0\x80 \xe2\x82\xac \xef\xbf\xbf", /* U+0800, U+20AC, U+FFFF */
		"\xed\x9f\xbf \xee\x80\x80",		  /* U+D7FF, U+E000: by the surrogates */
		"\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", /* U+10000, emoji, U+10FFFF */
		"\x7f\x01\x1b[0m",				      /* controls are valid UTF-8 */
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *out = utf8_sanitize(ok[i], strlen(ok[i]));

		CHECK(out != NULL);
		if (out)
			CHECK_EQ_STR(out, ok[i]);
		free(out);
	}
}

static void test_utf8_sanitize_replaces_invalid(void)
{
	/* prefix, bad bytes, suffix */
	static const struct {
		const char *bad;
		size_t n;
	} cases[] = {
		{ "\x80", 1 }, /* lone continuation */
		{ "\xbf", 1 },
		{ "\xff", 1 }, /* never in UTF-8 */
		{ "\xfe", 1 },
		{ "\xc0\xaf", 2 },		   /* overlong '/' */
		{ "\xc1\xbf", 2 },		   /* overlong U+007F */
		{ "\xe0\x80\xaf", 3 },		   /* overlong 3-byte '/' */
		{ "\xe0\x9f\xbf", 3 },		   /* overlong U+07FF */
		{ "\xf0\x80\x80\xaf", 4 },	   /* overlong 4-byte '/' */
		{ "\xf0\x8f\xbf\xbf", 4 },	   /* overlong U+FFFF */
		{ "\xed\xa0\x80", 3 },		   /* U+D800 */
		{ "\xed\xbf\xbf", 3 },		   /* U+DFFF */
		{ "\xed\xa0\xbd\xed\xb8\x80", 6 }, /* a CESU-8 surrogate pair */
		{ "\xf4\x90\x80\x80", 4 },	   /* U+110000 */
		{ "\xf5\x80\x80\x80", 4 },
		{ "\xf8\x88\x80\x80\x80", 5 }, /* old 5-byte form */
		{ "\xc3", 1 },		       /* truncated 2-byte, then ASCII */
		{ "\xe2\x82", 2 },	       /* truncated 3-byte */
		{ "\xf0\x9f\x98", 3 },	       /* truncated 4-byte */
	};
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t lb = strlen(cases[i].bad);

		/* Between valid text, and at the very end of the input. */
		snprintf(buf, sizeof(buf), "a\xc3\xa9%sz\xe2\x82\xac", cases[i].bad);
		check_sanitized(buf, strlen(buf), "a\xc3\xa9", cases[i].n, "z\xe2\x82\xac");
		snprintf(buf, sizeof(buf), "ok%s", cases[i].bad);
		check_sanitized(buf, 2 + lb, "ok", cases[i].n, "");
	}
}

static void test_utf8_sanitize_nul(void)
{
	char *out = utf8_sanitize("a\0b\0", 4);

	CHECK(out != NULL);
	if (out)
		CHECK_EQ_STR(out, "a" FFFD "b" FFFD);
	free(out);
	/* Only len bytes are read: no terminator needed. */
	out = utf8_sanitize("abcdef", 3);
	CHECK_EQ_STR(out, "abc");
	free(out);
}

static void test_scalene_line_text(void)
{
	char *t = scalene_line_text("if a < b && c > d:\n", 19);

	/* The literal six-character text, backslash included. */
	CHECK_EQ_STR(t, "if a \\u003c b \\u0026\\u0026 c \\u003e d:\n");
	free(t);
	t = scalene_line_text("x = \"</script>\"", 15);
	CHECK_EQ_STR(t, "x = \"\\u003c/script\\u003e\"");
	CHECK(strchr(t, '<') == NULL && strchr(t, '>') == NULL);
	free(t);
	/* Control characters stay as they are: json-c escapes them. */
	t = scalene_line_text("\t\x01\x1b[31mred\x7f\r\n", 13);
	CHECK_EQ_STR(t, "\t\x01\x1b[31mred\x7f\r\n");
	free(t);
	/* Invalid UTF-8 and NUL are replaced before anything else. */
	t = scalene_line_text("s = '\xff<\0'", 9);
	CHECK_EQ_STR(t, "s = '" FFFD "\\u003c" FFFD "'");
	free(t);
	t = scalene_line_text("", 0);
	CHECK_EQ_STR(t, "");
	free(t);
	/* Only as many bytes as asked. */
	t = scalene_line_text("<<<<", 2);
	CHECK_EQ_STR(t, "\\u003c\\u003c");
	free(t);
}

/* What json-c makes of the line text: control characters escaped, the
 * backslash of \u003c doubled, no raw '<'. */
static void test_line_text_serialised(void)
{
	char *t = scalene_line_text("a<\x1b\x01\t\"\\\n", 9);
	struct json_object *s = json_object_new_string(t);
	const char *out = json_object_to_json_string_ext(s, JSON_C_TO_STRING_NOSLASHESCAPE);
	const char *c;

	for (c = out; *c; c++)
		CHECK((unsigned char)*c >= 0x20);
	CHECK(strchr(out, '<') == NULL);
	CHECK(strstr(out, "\\\\u003c") != NULL);
	json_object_put(s);
	free(t);
}

static void test_finite_or_zero(void)
{
	CHECK(finite_or_zero(NAN) == 0.0);
	CHECK(finite_or_zero(-NAN) == 0.0);
	CHECK(finite_or_zero(INFINITY) == 0.0);
	CHECK(finite_or_zero(-INFINITY) == 0.0);
	CHECK(finite_or_zero(1.5) == 1.5);
	CHECK(finite_or_zero(-2.25) == -2.25);
	CHECK(finite_or_zero(1.7976931348623157e308) == 1.7976931348623157e308);
	CHECK(finite_or_zero(4.9e-324) == 4.9e-324);
	CHECK(finite_or_zero(0.0) == 0.0);
}

/* ------------------------------------------------------ whole documents */

/* A nine-line program; line 12 is sampled too (the file was shorter when
 * the profile was written). */
static const char prog_src[] = "import json\n"
			       "\n"
			       "def f(x):\n"
			       "    if x < 3 and x > 0:\n"
			       "        return [i for i in range(x)]\n"
			       "    return \"</script>\" and x & 1\n"
			       "\n"
			       "\n"
			       "f(2)\n";

#define PROG "/app/prog.py"
#define BADNAME "/app/bad\xff\xfe.py"

/*
 * The sampled time, in ms (total 141):
 *   line 5:  python 60 (3 main-thread samples) + 10 + 10 (comprehensions,
 *            another thread), native 20 (through a library frame)
 *   line 9:  system 10 on CPU + 10 blocked
 *   line 12: python 10
 *   /app/helper.py: 1 (under the 1% threshold)
 *   BADNAME line 2: python 10
 */
static struct profile *sample_profile(void)
{
	struct profile *p = new_profile();
	struct frame_ref mod = fr(p, PROG, "<module>", 1, 9);
	struct frame_ref f5 = fr(p, PROG, "f", 3, 5);
	struct frame_ref s1[] = { f5, mod };
	struct frame_ref s2[] = { fr(p, "/usr/lib/python3.11/json/decoder.py", "JSONDecoder.decode",
				     332, 337),
				  f5, mod };
	struct frame_ref s3[] = { mod };
	struct frame_ref s5[] = { fr(p, PROG, "f.<locals>.<listcomp>", 5, 5), f5, mod };
	struct frame_ref s6[] = { fr(p, PROG, "<listcomp>", 5, 5), f5, mod };
	struct frame_ref s7[] = { fr(p, PROG, "f", 3, 12) };
	struct frame_ref s8[] = { fr(p, "/app/helper.py", "helper", 1, 2), mod };
	struct frame_ref s9[] = { fr(p, BADNAME, "h\xc3", 1, 2) };

	/* Out of time order: the output sorts sample times. */
	add(p, s1, 2,
	    (struct add_opts){ .where = WHERE_PYTHON, .cpu = 20 * MS, .ts = 3, .util = 0.5 });
	add(p, s1, 2,
	    (struct add_opts){ .where = WHERE_PYTHON, .cpu = 20 * MS, .ts = 1, .util = 0.5 });
	add(p, s1, 2,
	    (struct add_opts){ .where = WHERE_PYTHON, .cpu = 20 * MS, .ts = 2, .util = 0.5 });
	add(p, s2, 3,
	    (struct add_opts){ .where = WHERE_NATIVE,
			       .cpu = 20 * MS,
			       .ts = 4,
			       .util = 0.5,
			       .sym = "scanstring_unicode",
			       .mod = "/usr/lib/_json.so" });
	add(p, s3, 1,
	    (struct add_opts){ .where = WHERE_SYSTEM, .cpu = 10 * MS, .ts = 5, .util = 0.5 });
	add(p, s3, 1, (struct add_opts){ .where = WHERE_PYTHON, .off = 10 * MS, .ts = 5.5 });
	add(p, s5, 3,
	    (struct add_opts){
		    .tid = 101, .where = WHERE_PYTHON, .cpu = 10 * MS, .ts = 7, .util = 0.5 });
	add(p, s6, 3,
	    (struct add_opts){
		    .tid = 101, .where = WHERE_PYTHON, .cpu = 10 * MS, .ts = 8, .util = 0.5 });
	/* A NaN from the utilisation estimate must not reach the output. */
	add(p, s7, 1,
	    (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS, .ts = 6, .util = NAN });
	add(p, s8, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 1 * MS, .ts = 9 });
	add(p, s9, 1,
	    (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS, .ts = 10, .util = INFINITY });
	return p;
}

static const struct src sources[] = {
	{ PROG, prog_src },
	{ "/app/helper.py", "def helper():\n    pass\n" },
	{ NULL, NULL },
};

static const char *const prog_args[] = { "prog.py", "--flag" };

static struct output_meta sample_meta(void)
{
	return (struct output_meta){
		.program = PROG,
		.args = prog_args,
		.nargs = 2,
		.program_dir = "/app",
		.elapsed_sec = 1.5,
		.start_time_absolute = 1.7e9,
		.start_time_perf = 100.25,
		.main_thread_id = 140000000000001ULL,
		.cpu_percent_threshold = 1.0,
		.read_source = read_src,
		.ctx = (void *)sources,
	};
}

static void test_document_rules(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	char *text = NULL;
	struct json_object *doc;

	m.elapsed_sec = NAN; /* fed a NaN: written as a number all the same */
	m.start_time_perf = INFINITY;
	doc = build(p, &m, &text);
	if (doc) {
		check_document_rules(doc, text);
		check_files_shape(doc);
		CHECK(json_object_is_type(get(doc, "elapsed_time_sec"), json_type_double) ||
		      json_object_is_type(get(doc, "elapsed_time_sec"), json_type_int));
		CHECK(dbl(doc, "elapsed_time_sec") == 0);
		CHECK(dbl(doc, "start_time_perf") == 0);
	}
	json_object_put(doc);
	free(text);
	profile__free(p);
}

static void test_top_level(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct facts *f = facts__new();
	struct json_object *doc = NULL, *args, *sb;
	char *text = NULL;

	if (!f)
		goto out;
	f->rate_hz = 997;
	f->period_ns = 1003009;
	m.facts = f;
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	CHECK(json_object_is_type(get(doc, "alloc_samples"), json_type_int));
	CHECK_EQ_INT(json_object_get_int(get(doc, "alloc_samples")), 0);
	CHECK_EQ_STR(json_object_get_string(get(doc, "program")), PROG);
	CHECK_EQ_STR(json_object_get_string(get(doc, "filename")), "/app");
	CHECK_EQ_STR(json_object_get_string(get(doc, "entrypoint_dir")), "/app");
	args = get(doc, "args");
	CHECK_EQ_INT(json_object_array_length(args), 2);
	CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(args, 1)), "--flag");
	CHECK(json_object_is_type(get(doc, "gpu"), json_type_boolean));
	CHECK(json_object_is_type(get(doc, "memory"), json_type_boolean));
	CHECK(json_object_is_type(get(doc, "async_profile"), json_type_boolean));
	CHECK_EQ_STR(json_object_get_string(get(doc, "gpu_device")), "");
	CHECK(json_object_object_get_ex(doc, "max_footprint_fname", NULL));
	CHECK(json_object_object_get_ex(doc, "max_footprint_lineno", NULL));
	CHECK(json_object_is_type(get(doc, "samples"), json_type_array));
	CHECK(json_object_is_type(get(doc, "memory_stacks"), json_type_array));
	CHECK(json_object_is_type(get(doc, "combined_stacks_timeline"), json_type_array));
	CHECK(json_object_is_type(get(doc, "main_thread_id"), json_type_int));
	CHECK_EQ_INT(json_object_get_int64(get(doc, "main_thread_id")), 140000000000001LL);
	CHECK_NEAR(dbl(doc, "elapsed_time_sec"), 1.5);
	CHECK_NEAR(dbl(doc, "start_time_perf"), 100.25);
	sb = get(doc, "scalene_bpf");
	CHECK(json_object_is_type(sb, json_type_object));
	CHECK(dbl(sb, "sampling_rate_hz") == 997);
out:
	json_object_put(doc);
	free(text);
	facts__free(f);
	profile__free(p);
}

static void test_lines_and_percentages(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc, *lines, *l, *times;
	double total = 141, sum = 0;
	char *text = NULL;
	size_t i;

	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	lines = get(get(get(doc, "files"), PROG), "lines");
	CHECK(lines != NULL);
	if (!lines)
		goto out;
	/* Nine lines of source plus the rows up to the sampled line 12. */
	CHECK_EQ_INT(json_object_array_length(lines), 12);
	CHECK_EQ_STR(json_object_get_string(get(line_of(doc, PROG, 1), "line")), "import json\n");
	CHECK_EQ_STR(json_object_get_string(get(line_of(doc, PROG, 9), "line")), "f(2)\n");
	CHECK_EQ_STR(json_object_get_string(get(line_of(doc, PROG, 12), "line")), "");
	CHECK_EQ_STR(json_object_get_string(get(line_of(doc, PROG, 4), "line")),
		     "    if x \\u003c 3 and x \\u003e 0:\n");

	l = line_of(doc, PROG, 5);
	CHECK_NEAR(dbl(l, "n_cpu_percent_python"), 100 * 80 / total);
	CHECK_NEAR(dbl(l, "n_cpu_percent_c"), 100 * 20 / total);
	CHECK_NEAR(dbl(l, "n_sys_percent"), 0);
	l = line_of(doc, PROG, 9);
	CHECK_NEAR(dbl(l, "n_cpu_percent_python"), 0);
	CHECK_NEAR(dbl(l, "n_cpu_percent_c"), 0);
	CHECK_NEAR(dbl(l, "n_sys_percent"), 100 * 20 / total);
	l = line_of(doc, PROG, 12);
	CHECK_NEAR(line_total(l), 100 * 10 / total);
	CHECK(dbl(l, "n_core_utilization") >= 0 && dbl(l, "n_core_utilization") <= 1);
	CHECK_NEAR(dbl(line_of(doc, PROG, 5), "n_core_utilization"), 0.5);
	for (i = 0; i < json_object_array_length(lines); i++)
		sum += line_total(json_object_array_get_idx(lines, i));
	CHECK_NEAR(sum, 100 * 130 / total);
	/* The file's share: the sum of its lines' python + native + system. */
	CHECK_NEAR(dbl(get(get(doc, "files"), PROG), "percent_cpu_time"), 100 * 130 / total);

	/* The main thread's sample times on line 5, sorted; not the other
	 * thread's, and not the blocked-only sample's. */
	times = get(line_of(doc, PROG, 5), "cpu_samples_list");
	CHECK_EQ_INT(json_object_array_length(times), 4);
	for (i = 0; i < json_object_array_length(times) && i < 4; i++)
		CHECK_NEAR(json_object_get_double(json_object_array_get_idx(times, i)), i + 1.0);
	CHECK_EQ_INT(json_object_array_length(get(line_of(doc, PROG, 9), "cpu_samples_list")), 1);
	CHECK_EQ_INT(json_object_array_length(get(line_of(doc, PROG, 1), "cpu_samples_list")), 0);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* GIL wait: part of the blocked time, itself part of the system time, per
 * line and per function; never more than the blocked time it is part of. */
static void test_gil_wait(void)
{
	struct profile *p = new_profile();
	struct output_meta m = sample_meta();
	struct frame_ref f5 = fr(p, PROG, "f", 3, 5), f9 = fr(p, PROG, "<module>", 1, 9);
	struct frame_ref s5[] = { f5 }, s9[] = { f9 };
	struct json_object *doc, *l;
	char *text = NULL;
	double total = 60;

	add(p, s5, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 20 * MS, .ts = 1 });
	add(p, s5, 1,
	    (struct add_opts){ .where = WHERE_PYTHON, .off = 10 * MS, .gil = 8 * MS, .ts = 2 });
	/* More GIL wait than blocked time (a bad record): capped. */
	add(p, s5, 1,
	    (struct add_opts){ .where = WHERE_PYTHON, .off = 10 * MS, .gil = 30 * MS, .ts = 3 });
	add(p, s9, 1, (struct add_opts){ .where = WHERE_PYTHON, .off = 20 * MS, .ts = 4 });
	CHECK_NEAR(profile__gil_ns(p), 18 * MS);
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	check_document_rules(doc, text);
	l = line_of(doc, PROG, 5);
	CHECK_NEAR(dbl(l, "n_gil_wait_percent"), 100 * 18 / total);
	CHECK_NEAR(dbl(l, "n_blocked_percent"), 100 * 20 / total);
	CHECK_NEAR(dbl(l, "n_sys_percent"), 100 * 20 / total);
	CHECK_NEAR(dbl(l, "n_cpu_percent_python"), 100 * 20 / total);
	l = line_of(doc, PROG, 9);
	CHECK(get(l, "n_gil_wait_percent") != NULL);
	CHECK_NEAR(dbl(l, "n_gil_wait_percent"), 0);
	CHECK_NEAR(dbl(l, "n_blocked_percent"), 100 * 20 / total);
	/* A line never sampled has none of our extras. */
	CHECK(get(line_of(doc, PROG, 2), "n_gil_wait_percent") == NULL);
	CHECK_NEAR(dbl(func_named(doc, PROG, "f"), "n_gil_wait_percent"), 100 * 18 / total);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

static void test_functions(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc, *funcs, *f;
	double total = 141;
	char *text = NULL;

	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	funcs = get(get(get(doc, "files"), PROG), "functions");
	/* f alone: <module> is not a function, and both comprehension
	 * spellings fold into f. */
	CHECK_EQ_INT(json_object_array_length(funcs), 1);
	f = func_named(doc, PROG, "f");
	CHECK(f != NULL);
	CHECK(func_named(doc, PROG, "<module>") == NULL);
	CHECK(func_named(doc, PROG, "<listcomp>") == NULL);
	CHECK(func_named(doc, PROG, "f.<locals>.<listcomp>") == NULL);
	if (!f)
		goto out;
	CHECK(json_object_is_type(get(f, "lineno"), json_type_int));
	CHECK_EQ_INT(json_object_get_int(get(f, "lineno")), 3);
	/* Lines 5 and 12. */
	CHECK_NEAR(dbl(f, "n_cpu_percent_python"), 100 * 90 / total);
	CHECK_NEAR(dbl(f, "n_cpu_percent_c"), 100 * 20 / total);
	CHECK_NEAR(dbl(f, "n_sys_percent"), 0);
	CHECK_EQ_INT(json_object_array_length(get(f, "cpu_samples_list")), 0);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

static void test_invalid_utf8_names(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc, *files, *bad;
	char *text = NULL;

	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	files = get(doc, "files");
	CHECK(get(files, BADNAME) == NULL);
	bad = get(files, "/app/bad" FFFD FFFD ".py");
	CHECK(bad != NULL);
	/* Unreadable source: rows anyway, up to the sampled line, empty text. */
	CHECK_EQ_INT(json_object_array_length(get(bad, "lines")), 2);
	CHECK_NEAR(line_total(line_of(doc, "/app/bad" FFFD FFFD ".py", 2)), 100 * 10 / 141.0);
	CHECK(func_named(doc, "/app/bad" FFFD FFFD ".py", "h" FFFD) != NULL);
	CHECK(utf8_valid(text, strlen(text)));
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* Facts name what the programs named (thread and process names, paths):
 * any bytes, written as valid UTF-8, in the profile and through
 * output_to_string (the index of --all). */
static void test_invalid_utf8_facts(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct facts *f = facts__new();
	struct facts_thread t = { .pid = 1, .tid = 2, .name = "w\x80rker\xff" };
	struct json_object *doc, *arr = json_object_new_array();
	char *text = NULL, *text2;

	if (!f)
		return;
	f->rate_hz = 997;
	f->period_ns = 1003009;
	f->threads = malloc(sizeof(t));
	if (f->threads) {
		f->threads[0] = t;
		f->nthreads = 1;
	}
	CHECK_EQ_INT(facts__warn(f, "in py\xc3"), 0);
	m.facts = f;
	doc = build(p, &m, &text);
	if (doc) {
		CHECK(utf8_valid(text, strlen(text)));
		CHECK(strstr(text, "w" FFFD "rker" FFFD) != NULL);
		CHECK(strstr(text, "in py" FFFD) != NULL);
	}
	json_object_array_add(arr, json_object_new_string("py\xc3"));
	text2 = output_to_string(arr);
	CHECK(text2 && utf8_valid(text2, strlen(text2)) && strstr(text2, "py" FFFD));
	free(text2);
	json_object_put(arr);
	json_object_put(doc);
	free(text);
	facts__free(f);
	profile__free(p);
}

static void test_script_end_not_in_source_text(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc;
	char *text = NULL;

	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	CHECK(strcasestr(text, "</script") == NULL);
	CHECK_EQ_STR(json_object_get_string(get(line_of(doc, PROG, 6), "line")),
		     "    return \"\\u003c/script\\u003e\" and x \\u0026 1\n");
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/*
 * The GUI pastes the whole file into a <script> element: "</script" anywhere
 * in the text ends it, wherever it came from.  An argument of the program
 * (`scalene-bpf run prog.py '</script>'`) and a directory name are strings
 * like any other.
 */
static void test_script_end_nowhere(void)
{
	static const char *const args[] = { "prog.py", "--title", "</script><b>x</b>" };
	struct profile *p = new_profile();
	struct frame_ref s[] = { fr(p, "/app/</SCRIPT>/m.py", "g", 1, 1) };
	struct output_meta m = sample_meta();
	struct json_object *doc;
	char *text = NULL;

	add(p, s, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS, .ts = 1 });
	m.args = args;
	m.nargs = 3;
	m.program = "/app/</SCRIPT>/m.py";
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	CHECK(strcasestr(text, "</script") == NULL);
	/* ...while the values read back unchanged. */
	CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(get(doc, "args"), 2)),
		     "</script><b>x</b>");
	CHECK(get(get(doc, "files"), "/app/</SCRIPT>/m.py") != NULL);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

static void test_threshold(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc;
	char *text = NULL;

	doc = build(p, &m, &text);
	CHECK(get(get(doc, "files"), "/app/helper.py") == NULL); /* 1 of 141 ms < 1% */
	CHECK(get(get(doc, "files"), PROG) != NULL);
	json_object_put(doc);
	free(text);

	m.cpu_percent_threshold = 0;
	doc = build(p, &m, &text);
	CHECK(get(get(doc, "files"), "/app/helper.py") != NULL);
	CHECK_EQ_INT(
		json_object_array_length(get(get(get(doc, "files"), "/app/helper.py"), "lines")),
		2);
	json_object_put(doc);
	free(text);

	/* prog.py holds 130 of 141 ms (92%), the other file 10 (7%). */
	m.cpu_percent_threshold = 85;
	doc = build(p, &m, &text);
	CHECK_EQ_INT(json_object_object_length(get(doc, "files")), 1);
	json_object_put(doc);
	free(text);

	m.cpu_percent_threshold = 100;
	doc = build(p, &m, &text);
	CHECK_EQ_INT(json_object_object_length(get(doc, "files")), 0);
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* Each stacks entry: [[frame strings, outermost first], {count, python_time,
 * c_time, cpu_samples}]; each combined_stacks entry: [[frame objects], hits]. */
static void test_stacks_shape(void)
{
	struct profile *p = sample_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc, *stacks, *combined;
	char *text = NULL;
	int64_t hits = 0;
	size_t i, j;
	int found_plain = 0, found_native = 0;

	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	stacks = get(doc, "stacks");
	combined = get(doc, "combined_stacks");
	CHECK(json_object_is_type(stacks, json_type_array));
	CHECK(json_object_is_type(combined, json_type_array));
	CHECK_EQ_INT(json_object_array_length(stacks), json_object_array_length(combined));
	CHECK(json_object_array_length(stacks) >= 7);
	for (i = 0; i < json_object_array_length(stacks); i++) {
		struct json_object *e = json_object_array_get_idx(stacks, i);
		struct json_object *frames = json_object_array_get_idx(e, 0);
		struct json_object *st = json_object_array_get_idx(e, 1);
		struct json_object *ce = json_object_array_get_idx(combined, i);
		struct json_object *cframes = json_object_array_get_idx(ce, 0);
		struct json_object *chits = json_object_array_get_idx(ce, 1);

		CHECK(json_object_is_type(e, json_type_array));
		CHECK_EQ_INT(json_object_array_length(e), 2);
		CHECK(json_object_is_type(frames, json_type_array));
		CHECK(json_object_is_type(st, json_type_object));
		CHECK(json_object_is_type(get(st, "count"), json_type_int));
		CHECK(json_object_is_type(get(st, "python_time"), json_type_double));
		CHECK(json_object_is_type(get(st, "c_time"), json_type_double));
		CHECK(json_object_is_type(get(st, "cpu_samples"), json_type_double));
		for (j = 0; j < json_object_array_length(frames); j++) {
			struct json_object *fs = json_object_array_get_idx(frames, j);
			const char *s = json_object_get_string(fs);
			size_t n = strlen(s);

			CHECK(n > 2 && s[n - 1] == ';' && strchr(s, ' ') && strrchr(s, ':'));
		}
		CHECK(json_object_is_type(ce, json_type_array));
		CHECK_EQ_INT(json_object_array_length(ce), 2);
		CHECK(json_object_is_type(chits, json_type_int));
		CHECK_EQ_INT(json_object_get_int64(chits), json_object_get_int64(get(st, "count")));
		hits += json_object_get_int64(chits);
		for (j = 0; j < json_object_array_length(cframes); j++) {
			struct json_object *cf = json_object_array_get_idx(cframes, j);
			const char *kind = json_object_get_string(get(cf, "kind"));

			CHECK(json_object_object_length(cf) == 6);
			CHECK(json_object_object_get_ex(cf, "display_name", NULL));
			CHECK(json_object_object_get_ex(cf, "filename_or_module", NULL));
			CHECK(json_object_object_get_ex(cf, "line", NULL));
			CHECK(json_object_object_get_ex(cf, "ip", NULL));
			CHECK(json_object_object_get_ex(cf, "offset", NULL));
			CHECK(kind && (!strcmp(kind, "py") || !strcmp(kind, "native")));
			if (kind && !strcmp(kind, "py")) {
				CHECK(json_object_is_type(get(cf, "line"), json_type_int));
				CHECK(get(cf, "ip") == NULL && get(cf, "offset") == NULL);
			} else {
				CHECK(get(cf, "line") == NULL);
				CHECK(get(cf, "ip") == NULL ||
				      json_object_is_type(get(cf, "ip"), json_type_int));
			}
		}
		/* The three-sample stack: <module> then f, outermost first. */
		if (json_object_get_int(get(st, "count")) == 3) {
			struct json_object *cf1 = json_object_array_get_idx(cframes, 1);

			found_plain = 1;
			CHECK_EQ_INT(json_object_array_length(frames), 2);
			CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(frames, 0)),
				     PROG " <module>:9;");
			CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(frames, 1)),
				     PROG " f:5;");
			CHECK_NEAR(dbl(st, "python_time"), 60 / 141.0);
			CHECK_NEAR(dbl(st, "c_time"), 0);
			CHECK_NEAR(dbl(st, "cpu_samples"), 60 / 141.0);
			CHECK_EQ_STR(json_object_get_string(get(cf1, "display_name")), "f");
			CHECK_EQ_INT(json_object_get_int(get(cf1, "line")), 5);
		}
		/* The native one ends with the native leaf. */
		if (json_object_array_length(cframes) == 4) {
			struct json_object *leaf = json_object_array_get_idx(cframes, 3);

			found_native = 1;
			CHECK_EQ_STR(json_object_get_string(get(leaf, "kind")), "native");
			CHECK_EQ_STR(json_object_get_string(get(leaf, "display_name")),
				     "scanstring_unicode");
			CHECK_EQ_STR(json_object_get_string(get(leaf, "filename_or_module")),
				     "/usr/lib/_json.so");
			CHECK_NEAR(dbl(st, "c_time"), 20 / 141.0);
			CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(frames, 2)),
				     "/usr/lib/python3.11/json/decoder.py "
				     "JSONDecoder.decode:337;");
		}
	}
	CHECK(found_plain);
	CHECK(found_native);
	/* Every sample had frames: the hits add up to the sample count. */
	CHECK_EQ_INT(hits, 11);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* Rows stop at the last line of the source or the last sampled line,
 * whichever is further: never beyond. */
static void test_no_rows_past_the_data(void)
{
	static const struct src two[] = { { "/app/two.py", "a = 1\nb = 2\n" }, { NULL, NULL } };
	struct profile *p = new_profile();
	struct frame_ref l1[] = { fr(p, "/app/two.py", "<module>", 1, 1) };
	struct frame_ref l2[] = { fr(p, "/app/two.py", "<module>", 1, 2) };
	struct frame_ref g1[] = { fr(p, "/app/gone.py", "<module>", 1, 1) };
	struct frame_ref g2[] = { fr(p, "/app/gone.py", "<module>", 1, 2) };
	struct output_meta m = sample_meta();
	struct json_object *doc;
	char *text = NULL;

	add(p, l1, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS });
	add(p, l2, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS });
	add(p, g1, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS });
	add(p, g2, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS });
	m.ctx = (void *)two;
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	check_files_shape(doc);
	CHECK_EQ_INT(json_object_array_length(get(get(get(doc, "files"), "/app/two.py"), "lines")),
		     2);
	CHECK_EQ_INT(json_object_array_length(get(get(get(doc, "files"), "/app/gone.py"), "lines")),
		     2);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* combined_stacks_timeline: Scalene's event shape, indices into the
 * emitted combined_stacks (stacks seen by allocations only are not
 * emitted), times from the first event, the main thread under its
 * pthread_t. */
static void test_timeline(void)
{
	struct profile *p = new_profile();
	struct output_meta m = sample_meta();
	struct frame_ref mod = fr(p, PROG, "<module>", 1, 9);
	struct frame_ref a[] = { fr(p, PROG, "f", 3, 5), mod };
	struct frame_ref b[] = { fr(p, PROG, "f", 3, 6), mod };
	struct frame_ref alloc[] = { fr(p, PROG, "f", 3, 4), mod };
	struct mem_in mi = { .tgid = 100,
			     .tid = 100,
			     .ts_ns = 900000000,
			     .kind = MEM_MALLOC,
			     .bytes = 1 << 20,
			     .unattributed = -1,
			     .frames = alloc,
			     .nframes = 2 };
	struct json_object *doc, *tl, *combined, *e;
	char *text = NULL;
	size_t i;

	profile__add_mem(p, &mi);
	add(p, a, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = MS, .ts = 1.0 });
	add(p, a, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = MS, .ts = 1.001 });
	add(p, b, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = MS, .ts = 1.002 });
	add(p, a, 2,
	    (struct add_opts){ .tid = 101, .where = WHERE_PYTHON, .cpu = MS, .ts = 1.003 });
	m.main_pid = 100;
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	check_document_rules(doc, text);
	tl = get(doc, "combined_stacks_timeline");
	combined = get(doc, "combined_stacks");
	CHECK_EQ_INT(json_object_array_length(tl), 3);
	for (i = 0; i < json_object_array_length(tl); i++) {
		struct json_object *cf;
		int idx;

		e = json_object_array_get_idx(tl, i);
		CHECK_EQ_INT(json_object_object_length(e), 4);
		CHECK(json_object_is_type(get(e, "t_sec"), json_type_double));
		CHECK(json_object_is_type(get(e, "stack_index"), json_type_int));
		CHECK(json_object_is_type(get(e, "count"), json_type_int));
		CHECK(json_object_is_type(get(e, "thread_id"), json_type_int));
		idx = json_object_get_int(get(e, "stack_index"));
		CHECK(idx >= 0 && (size_t)idx < json_object_array_length(combined));
		cf = json_object_array_get_idx(
			json_object_array_get_idx(json_object_array_get_idx(combined, idx), 0), 1);
		CHECK_EQ_INT(json_object_get_int(get(cf, "line")), i == 1 ? 6 : 5);
	}
	e = json_object_array_get_idx(tl, 0);
	CHECK_NEAR(dbl(e, "t_sec"), 0);
	CHECK_EQ_INT(json_object_get_int(get(e, "count")), 2);
	CHECK_EQ_INT(json_object_get_int64(get(e, "thread_id")), 140000000000001LL);
	e = json_object_array_get_idx(tl, 1);
	CHECK_NEAR(dbl(e, "t_sec"), 0.002);
	CHECK_EQ_INT(json_object_get_int(get(e, "count")), 1);
	e = json_object_array_get_idx(tl, 2);
	CHECK_NEAR(dbl(e, "t_sec"), 0.003);
	CHECK_EQ_INT(json_object_get_int64(get(e, "thread_id")), 101);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* Native frames carry the sampled address and its offset from the symbol;
 * an address with no symbol has no offset. */
static void test_native_address(void)
{
	struct profile *p = new_profile();
	struct output_meta m = sample_meta();
	struct frame_ref a[] = { fr(p, PROG, "f", 3, 5) };
	struct frame_ref b[] = { fr(p, PROG, "f", 3, 6) };
	struct sample_in s = { .tgid = 100,
			       .tid = 100,
			       .cpu_ns = MS,
			       .where = WHERE_NATIVE,
			       .native_sym = profile__intern(p, "memcpy"),
			       .native_module = profile__intern(p, "/lib/libc.so.6"),
			       .native_ip = 0x7f1234567890ULL,
			       .native_offset = 0x90,
			       .unattributed = -1,
			       .frames = a,
			       .nframes = 1 };
	struct json_object *doc, *combined, *leaf;
	char *text = NULL;

	profile__add(p, &s);
	s.frames = b;
	s.native_sym = profile__intern(p, "+0x1234");
	s.native_offset = -1;
	profile__add(p, &s);
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	check_document_rules(doc, text);
	combined = get(doc, "combined_stacks");
	CHECK_EQ_INT(json_object_array_length(combined), 2);
	leaf = json_object_array_get_idx(
		json_object_array_get_idx(json_object_array_get_idx(combined, 0), 0), 1);
	CHECK_EQ_STR(json_object_get_string(get(leaf, "kind")), "native");
	CHECK_EQ_INT(json_object_get_int64(get(leaf, "ip")), 0x7f1234567890LL);
	CHECK_EQ_INT(json_object_get_int64(get(leaf, "offset")), 0x90);
	leaf = json_object_array_get_idx(
		json_object_array_get_idx(json_object_array_get_idx(combined, 1), 0), 1);
	CHECK_EQ_INT(json_object_get_int64(get(leaf, "ip")), 0x7f1234567890LL);
	CHECK(json_object_object_get_ex(leaf, "offset", NULL) && get(leaf, "offset") == NULL);
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* With @profile: only files with decorated functions, only the lines of
 * those functions (what ran elsewhere before the decoration is left out),
 * only their function entries. */
static void test_decorated(void)
{
	struct profile *p = new_profile();
	struct output_meta m = sample_meta();
	struct frame_ref mod = fr(p, PROG, "<module>", 1, 9);
	struct frame_ref s_mod[] = { mod };
	struct frame_ref s_f[] = { fr(p, PROG, "f", 3, 5), mod };
	struct frame_ref s_helper[] = { fr(p, "/app/helper.py", "helper", 1, 2), mod };
	struct json_object *doc, *files, *funcs;
	char *text = NULL;

	add(p, s_mod, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 50 * MS, .ts = 1 });
	add(p, s_helper, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 50 * MS, .ts = 1 });
	CHECK_EQ_INT(profile__decorate(p, PROG, 3, 6, "f"), 0);
	add(p, s_f, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 50 * MS, .ts = 2 });
	/* helper is not decorated: this sample is not attributed. */
	add(p, s_helper, 2, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 50 * MS, .ts = 3 });
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	check_document_rules(doc, text);
	files = get(doc, "files");
	CHECK_EQ_INT(json_object_object_length(files), 1);
	CHECK(json_object_object_get_ex(files, PROG, NULL));
	CHECK(line_total(line_of(doc, PROG, 5)) > 0);
	CHECK_NEAR(line_total(line_of(doc, PROG, 9)), 0);
	CHECK_NEAR(dbl(get(files, PROG), "percent_cpu_time"), 25);
	funcs = get(get(files, PROG), "functions");
	CHECK_EQ_INT(json_object_array_length(funcs), 1);
	CHECK_EQ_STR(json_object_get_string(get(json_object_array_get_idx(funcs, 0), "line")), "f");
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

static void test_empty_profile(void)
{
	struct profile *p = new_profile();
	struct output_meta m = sample_meta();
	struct json_object *doc;
	char *text = NULL;

	m.args = NULL;
	m.nargs = 0;
	m.main_thread_id = 0;
	m.program = NULL;
	m.program_dir = NULL;
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	check_document_rules(doc, text);
	CHECK_EQ_INT(json_object_object_length(get(doc, "files")), 0);
	CHECK_EQ_INT(json_object_array_length(get(doc, "stacks")), 0);
	CHECK_EQ_INT(json_object_array_length(get(doc, "combined_stacks")), 0);
	CHECK(json_object_is_type(get(doc, "args"), json_type_array));
	CHECK(json_object_is_type(get(doc, "program"), json_type_string));
	CHECK(json_object_object_get_ex(doc, "main_thread_id", NULL));
	CHECK(get(doc, "main_thread_id") == NULL); /* unknown: null */
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

/* Control characters in source lines and names: escaped by the writer,
 * restored by the reader. */
static void test_control_characters_escaped(void)
{
	static const struct src ctl[] = { { "/app/ctl\x1b[31m.py", "print('\x1b[2J\x07\x01')\n" },
					  { NULL, NULL } };
	struct profile *p = new_profile();
	struct frame_ref s[] = { fr(p, "/app/ctl\x1b[31m.py", "<module>", 1, 1) };
	struct output_meta m = sample_meta();
	struct json_object *doc;
	char *text = NULL;
	const char *c;

	add(p, s, 1, (struct add_opts){ .where = WHERE_PYTHON, .cpu = 10 * MS });
	m.ctx = (void *)ctl;
	doc = build(p, &m, &text);
	if (!doc)
		goto out;
	for (c = text; *c; c++)
		CHECK((unsigned char)*c >= 0x20 || *c == '\n');
	CHECK_EQ_STR(json_object_get_string(get(line_of(doc, "/app/ctl\x1b[31m.py", 1), "line")),
		     "print('\x1b[2J\x07\x01')\n");
out:
	json_object_put(doc);
	free(text);
	profile__free(p);
}

int main(void)
{
	RUN_TEST(test_utf8_sanitize_keeps_valid);
	RUN_TEST(test_utf8_sanitize_replaces_invalid);
	RUN_TEST(test_utf8_sanitize_nul);
	RUN_TEST(test_scalene_line_text);
	RUN_TEST(test_line_text_serialised);
	RUN_TEST(test_finite_or_zero);
	RUN_TEST(test_document_rules);
	RUN_TEST(test_timeline);
	RUN_TEST(test_native_address);
	RUN_TEST(test_decorated);
	RUN_TEST(test_top_level);
	RUN_TEST(test_lines_and_percentages);
	RUN_TEST(test_functions);
	RUN_TEST(test_gil_wait);
	RUN_TEST(test_invalid_utf8_names);
	RUN_TEST(test_invalid_utf8_facts);
	RUN_TEST(test_script_end_not_in_source_text);
	RUN_TEST(test_script_end_nowhere);
	RUN_TEST(test_threshold);
	RUN_TEST(test_stacks_shape);
	RUN_TEST(test_no_rows_past_the_data);
	RUN_TEST(test_empty_profile);
	RUN_TEST(test_control_characters_escaped);
	return test_summary("output");
}
