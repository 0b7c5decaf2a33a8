/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/view/view.c: the terminal view of a profile, which is untrusted input.
 * Documents of the wrong shape are refused with a message, wrong types and
 * extreme numbers are shown without harm, and nothing written to the terminal
 * is a control character (no ESC, no C0 but the newline, no DEL, no C1) or
 * invalid UTF-8.  Then the real Scalene profiles: their hot lines show.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "testlib.h"
#include "utf8check.h"
#include "view/view.h"
#include "view/viewutil.h"

#define FIXTURES "tests/fixtures/view/"
#define WIDTH 100

static char *out, *err;
static size_t outlen, errlen;

static int view_c(struct json_object *doc, double threshold, int all_lines, int width, bool color);

/* Runs the view; its output and messages land in out / err. */
static int view(struct json_object *doc, double threshold, int all_lines, int width)
{
	return view_c(doc, threshold, all_lines, width, false);
}

static int view_c(struct json_object *doc, double threshold, int all_lines, int width, bool color)
{
	FILE *fo, *fe;
	int ret;

	test_memstreams(&out, &outlen, &err, &errlen, &fo, &fe);
	{
		struct view_opts vo = { threshold, all_lines != 0, width, color };

		ret = view_print_cli(doc, fo, fe, &vo);
	}
	fclose(fo);
	fclose(fe);
	return ret;
}

/* What a terminal must never receive. */
static void check_terminal_safe(const char *s, size_t n, const char *what)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == 0x1b || (c < 0x20 && c != '\n') || c == 0x7f) {
			fprintf(stderr, "  %s: control byte 0x%02x at %zu\n", what, c, i);
			bad++;
		}
		/* C1 controls, as UTF-8. */
		if (c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9f) {
			fprintf(stderr, "  %s: C1 control at %zu\n", what, i);
			bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
	if (!utf8_valid(s, n))
		fprintf(stderr, "  %s: not valid UTF-8\n", what);
	CHECK(utf8_valid(s, n));
}

static void check_outputs_safe(void)
{
	check_terminal_safe(out ? out : "", outlen, "output");
	check_terminal_safe(err ? err : "", errlen, "messages");
}

static struct json_object *load(const char *path)
{
	struct json_object *doc = json_object_from_file(path);

	if (!doc)
		fprintf(stderr, "  cannot read %s: %s\n", path, json_util_get_last_err());
	CHECK(doc != NULL);
	return doc;
}

/* Parses text as json-c does by default: no UTF-8 check. */
static struct json_object *parse(const char *text)
{
	struct json_object *doc = json_tokener_parse(text);

	CHECK(doc != NULL);
	return doc;
}

static bool has(const char *needle)
{
	return out && strstr(out, needle);
}

#define CHECK_HAS(needle)                                                                   \
	do {                                                                                \
		if (!has(needle)) {                                                         \
			fprintf(stderr, "%s:%d: output lacks \"%s\"\n", __FILE__, __LINE__, \
				needle);                                                    \
			t_checks_failed++;                                                  \
		}                                                                           \
	} while (0)

/* ------------------------------------------------------------ shapes */

static void test_not_a_profile(void)
{
	static const char *const docs[] = {
		"[]",
		"\"profile\"",
		"42",
		"true",
		"{}",
		"{\"files\": []}",
		"{\"files\": \"x\"}",
		"{\"files\": null}",
		"{\"files\": 7}",
		"{\"files\": {\"a.py\": 5}}",
		"{\"files\": {\"a.py\": null}}",
		"{\"files\": {\"a.py\": []}}",
		"{\"files\": {\"a.py\": {}}}",
		"{\"files\": {\"a.py\": {\"lines\": {}}}}",
		"{\"files\": {\"a.py\": {\"lines\": \"1\\n2\\n\"}}}",
		"{\"files\": {\"a.py\": {\"lines\": [1, 2]}}}",
		"{\"files\": {\"a.py\": {\"lines\": [{\"lineno\": 1}, null]}}}",
		"{\"files\": {\"\\u001b[2Ja.py\": {\"lines\": [[]]}}}",
		"{\"files\": {\"a\\u2028b\\u202e.py\": {\"lines\": [7]}}}",
	};
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct json_object *doc = parse(docs[i]);
		int ret = view(doc, 1, 0, WIDTH);

		if (ret != -EINVAL)
			fprintf(stderr, "  accepted: %s\n", docs[i]);
		CHECK_EQ_INT(ret, -EINVAL);
		CHECK(errlen > 0 && strstr(err, "not a profile"));
		check_outputs_safe();
		/* Nor the characters that break or reorder a line. */
		CHECK(!strstr(err, "\xe2\x80\xa8") && !strstr(err, "\xe2\x80\xae"));
		json_object_put(doc);
	}
	/* No document at all. */
	CHECK_EQ_INT(view(NULL, 1, 0, WIDTH), -EINVAL);
}

static void test_empty_files(void)
{
	struct json_object *doc =
		parse("{\"elapsed_time_sec\": 1, \"files\": {}, \"program\": \"/app/p.py\"}");

	CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
	CHECK_HAS("/app/p.py");
	CHECK_HAS("no file");
	check_outputs_safe();
	json_object_put(doc);
}

/* ---------------------------------------------------------- hostile */

static void test_hostile_strings(void)
{
	struct json_object *doc = load(FIXTURES "hostile.json");

	if (!doc)
		return;
	CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
	check_outputs_safe();
	/* The content survives around what was removed. */
	CHECK_HAS("evil.py");
	CHECK_HAS("red");
	CHECK_HAS("print(");
	/* Scalene's escaped line text reads as the source did. */
	CHECK_HAS("if a < b && c > d:");
	CHECK_HAS("caf\xc3\xa9 \xe2\x82\xac");
	CHECK_HAS("blink");
	CHECK_HAS("bold");
	/* Below the threshold: not shown. */
	CHECK(!has("cold = 0"));
	json_object_put(doc);

	/* Every line, every width. */
	doc = load(FIXTURES "hostile.json");
	for (int w = 0; w <= 200 && doc; w += 7) {
		CHECK_EQ_INT(view(doc, 0, 1, w), 0);
		check_outputs_safe();
	}
	json_object_put(doc);
}

/* Bytes that are not UTF-8 in a profile (json-c does not check): the
 * lone bytes 0x80..0x9f are C1 controls to an 8-bit terminal (0x9b is CSI)
 * and must not reach it as they are. */
static void test_raw_bytes_not_passed_through(void)
{
	static const char text[] = "{\"elapsed_time_sec\": 1, \"program\": \"/app/\x9b"
				   "2J.py\", \"files\": {"
				   "\"/app/x\x9b"
				   "31m\xff.py\": {\"lines\": [{\"lineno\": 1, "
				   "\"line\": \"a = '\x9b"
				   "2J\xc2' \xe2\x82\n\", \"n_cpu_percent_python\": 50}], "
				   "\"functions\": [{\"line\": \"f\x9d\", \"lineno\": 1, "
				   "\"n_cpu_percent_python\": 50}]}}}";
	struct json_object *doc = parse(text);

	if (!doc)
		return;
	CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
	check_outputs_safe();
	CHECK_HAS("a = '");
	json_object_put(doc);
}

/* Text cut to the terminal's width is cut between characters, never
 * inside one. */
static void test_truncation_keeps_characters_whole(void)
{
#define E2 "\xc3\xa9"	      /* U+00E9: two bytes */
#define E3 "\xe2\x82\xac"     /* U+20AC: three */
#define E4 "\xf0\x9f\x98\x80" /* U+1F600: four */
	static const char text[] =
		"{\"elapsed_time_sec\": 1, \"files\": {\"/app/" E2 E2 E2 E3 E3 E4 E4
		".py\": {\"lines\": [{\"lineno\": 1, "
		"\"line\": \"s = '" E2 E2 E2 E2 E2 E3 E3 E3 E3 E4 E4 E4 E2 E2 "'\\n\", "
		"\"n_cpu_percent_python\": 50}], \"functions\": [{\"line\": \"" E2 E2 E2 E2 E3 E3 E3
			E4 E4 "\", \"lineno\": 1, \"n_cpu_percent_python\": 50}]}}}";
	struct json_object *doc = parse(text);
	int w, bad = 0;

	if (!doc)
		return;
	for (w = 0; w <= 80; w++) {
		CHECK_EQ_INT(view(doc, 1, 0, w), 0);
		if (!utf8_valid(out, outlen)) {
			if (!bad)
				fprintf(stderr, "  width %d: a character cut in two\n", w);
			bad++;
		}
	}
	CHECK_EQ_INT(bad, 0);
	json_object_put(doc);
#undef E2
#undef E3
#undef E4
}

static void test_wrong_types(void)
{
	struct json_object *doc = load(FIXTURES "wrong-types.json");

	if (!doc)
		return;
	/* elapsed_time_sec, required, is right here (test_elapsed_checked). */
	CHECK_EQ_INT(view(doc, 0, 1, WIDTH), 0);
	check_outputs_safe();
	CHECK_HAS("/app/types.py");
	CHECK_HAS("no lineno at all");
	/* Numbers given as strings are not numbers: nothing pretends. */
	CHECK(!has("50.0%"));
	json_object_put(doc);
}

/* elapsed_time_sec: Scalene's schema requires it, a number >= 0.  Anything
 * else is refused with what is wrong, never shown as 0.00 s. */
static void test_elapsed_checked(void)
{
	static const struct {
		const char *value; /* NULL: the field left out */
		const char *why;
	} cases[] = {
		{ NULL, "is missing" },
		{ "\"1.5\"", "is not a number" },
		{ "null", "is not a number" },
		{ "[1]", "is not a number" },
		{ "true", "is not a number" },
		{ "-0.5", "is negative" },
		{ "NaN", "is NaN" },
		{ "Infinity", "is infinite" },
		{ "-Infinity", "is infinite" },
	};
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_object *doc;

		if (cases[i].value)
			snprintf(text, sizeof(text),
				 "{\"elapsed_time_sec\": %s, \"files\": {\"/a.py\": "
				 "{\"lines\": []}}}",
				 cases[i].value);
		else
			snprintf(text, sizeof(text), "{\"files\": {\"/a.py\": {\"lines\": []}}}");
		doc = parse(text);
		if (!doc)
			continue;
		CHECK_EQ_INT(view(doc, 1, 0, WIDTH), -EINVAL);
		CHECK(outlen == 0);
		if (!err || !strstr(err, "elapsed_time_sec") || !strstr(err, cases[i].why)) {
			fprintf(stderr, "  %s: message %s\n", text, err ? err : "(none)");
			t_checks_failed++;
		}
		json_object_put(doc);
	}
	/* 0 and a whole number are fine. */
	for (i = 0; i < 2; i++) {
		struct json_object *doc;

		snprintf(text, sizeof(text),
			 "{\"elapsed_time_sec\": %s, \"files\": {\"/a.py\": {\"lines\": []}}}",
			 i ? "3" : "0");
		doc = parse(text);
		if (!doc)
			continue;
		CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
		CHECK_HAS(i ? "elapsed: 3.00 s" : "elapsed: 0.00 s");
		json_object_put(doc);
	}
}

static void test_huge_numbers(void)
{
	struct json_object *doc = load(FIXTURES "huge-numbers.json");

	if (!doc)
		return;
	CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
	check_outputs_safe();
	CHECK_HAS("big = 1");
	CHECK_HAS("lineno past int");
	CHECK(!has("nan") && !has("inf"));
	CHECK_EQ_INT(view(doc, 0, 1, 40), 0);
	check_outputs_safe();
	json_object_put(doc);
}

/* Values built in memory: NaN and infinities cannot come from JSON text,
 * but a caller can hand them over. */
static void test_nonfinite_in_memory(void)
{
	static const char text[] =
		"{\"elapsed_time_sec\": 1, \"files\": {\"/app/n.py\": {\"percent_cpu_time\": 1,"
		"\"lines\": [{\"lineno\": 1, \"line\": \"nan line\\n\"}]}}}";
	struct json_object *doc = parse(text);
	struct json_object *l, *lines, *fd;

	if (!doc)
		return;
	json_object_object_get_ex(doc, "files", &fd);
	json_object_object_get_ex(fd, "/app/n.py", &fd);
	json_object_object_add(fd, "percent_cpu_time", json_object_new_double(NAN));
	json_object_object_get_ex(fd, "lines", &lines);
	l = json_object_array_get_idx(lines, 0);
	json_object_object_add(l, "n_cpu_percent_python", json_object_new_double(INFINITY));
	json_object_object_add(l, "n_cpu_percent_c", json_object_new_double(NAN));
	json_object_object_add(l, "lineno", json_object_new_double(-INFINITY));
	CHECK_EQ_INT(view(doc, 0, 1, WIDTH), 0);
	check_outputs_safe();
	CHECK(!has("nan") && !has("inf"));
	/* The elapsed time is the one number the header cannot do without. */
	json_object_object_add(doc, "elapsed_time_sec", json_object_new_double(NAN));
	CHECK_EQ_INT(view(doc, 0, 1, WIDTH), -EINVAL);
	CHECK(outlen == 0);
	CHECK(err && strstr(err, "elapsed_time_sec) is NaN"));
	json_object_object_add(doc, "elapsed_time_sec", json_object_new_double(-INFINITY));
	CHECK_EQ_INT(view(doc, 0, 1, WIDTH), -EINVAL);
	CHECK(err && strstr(err, "elapsed_time_sec) is infinite"));
	json_object_put(doc);
}

/* ------------------------------------------------------- references */

static const char *ref_dir(void)
{
	const char *d = getenv("SCALENE_REFERENCE_DIR");
	struct stat st;

	return d && stat(d, &st) == 0 && S_ISDIR(st.st_mode) ? d : NULL;
}

static int refs_skipped;

static struct json_object *load_ref(const char *name)
{
	char path[1024];
	const char *d = ref_dir();

	if (!d) {
		refs_skipped++;
		t_skip_current = 1;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", d, name);
	return load(path);
}

/* Real Scalene's numbers differ from run to run: the checks take what each
 * line is worth from the document, as the view does. */
static double ref_time(struct json_object *l)
{
	return vj_num(l, "n_cpu_percent_python") + vj_num(l, "n_cpu_percent_c") +
	       vj_num(l, "n_sys_percent");
}

static bool ref_mem_active(struct json_object *doc, struct json_object *l)
{
	struct json_object *m;

	return json_object_object_get_ex(doc, "memory", &m) && json_object_get_boolean(m) &&
	       (vj_num(l, "n_malloc_mb") > 0 || vj_num(l, "n_copy_mb_s") > 0);
}

/* A line's source text without its indentation and newline, at most n - 1
 * bytes (a wide line is cut by the view). */
static void ref_text(struct json_object *l, char *buf, size_t n)
{
	const char *s = vj_str(l, "line");
	size_t len;

	s = s ? s : "";
	s += strspn(s, " \t");
	snprintf(buf, n, "%s", s);
	len = strlen(buf);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		buf[--len] = '\0';
}

/* A line hot by its share of the await time, in an async profile. */
static bool ref_await_hot(struct json_object *doc, struct json_object *l, double threshold)
{
	struct json_object *a;
	double w = vj_num(l, "n_async_await_percent");

	return json_object_object_get_ex(doc, "async_profile", &a) && json_object_get_boolean(a) &&
	       w > 0 && w >= threshold;
}

/* Every line of the first file: the shown ones (time >= threshold, await
 * share >= threshold, or memory activity) are in the output, the others are not, unless their text
 * is part of a shown one's.  Returns how many lines are shown. */
static int check_ref_lines(struct json_object *doc, double threshold)
{
	struct json_object *files, *file = NULL, *lines;
	char shown_text[256][41], text[41];
	int nshown = 0;
	size_t i, n, j;
	bool part;

	if (!json_object_object_get_ex(doc, "files", &files))
		return 0;
	json_object_object_foreach (files, name, f) {
		(void)name;
		file = f;
		break;
	}
	if (!file || !json_object_object_get_ex(file, "lines", &lines))
		return 0;
	n = json_object_array_length(lines);
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(lines, i);
		double t = ref_time(l);

		ref_text(l, text, sizeof(text));
		if (text[0] && ((t > 0 && t >= threshold) || ref_mem_active(doc, l) ||
				ref_await_hot(doc, l, threshold))) {
			CHECK_HAS(text);
			if (nshown < 256)
				strcpy(shown_text[nshown++], text);
		}
	}
	for (i = 0; i < n; i++) {
		struct json_object *l = json_object_array_get_idx(lines, i);
		double t = ref_time(l);

		ref_text(l, text, sizeof(text));
		if (strlen(text) < 12 || (t > 0 && t >= threshold) || ref_mem_active(doc, l) ||
		    ref_await_hot(doc, l, threshold))
			continue;
		for (part = false, j = 0; j < (size_t)nshown && !part; j++)
			part = strstr(shown_text[j], text) != NULL;
		if (!part && has(text)) {
			fprintf(stderr, "%s:%d: cold line shown: %s (%.2f%%, threshold %.2f)\n",
				__FILE__, __LINE__, text, t, threshold);
			t_checks_failed++;
		}
	}
	return nshown;
}

static void check_program_shown(struct json_object *doc)
{
	const char *prog = vj_str(doc, "program");

	CHECK(prog != NULL);
	if (prog)
		CHECK_HAS(prog);
}

/* The time of the hottest line of the first file, and of the next one down. */
static void ref_two_hottest(struct json_object *doc, double *first, double *second)
{
	struct json_object *files, *lines;
	size_t i;

	*first = *second = 0;
	if (!json_object_object_get_ex(doc, "files", &files))
		return;
	json_object_object_foreach (files, name, f) {
		(void)name;
		if (!json_object_object_get_ex(f, "lines", &lines))
			return;
		for (i = 0; i < json_object_array_length(lines); i++) {
			double t = ref_time(json_object_array_get_idx(lines, i));

			if (t > *first) {
				*second = *first;
				*first = t;
			} else if (t < *first && t > *second) {
				*second = t;
			}
		}
		return;
	}
}

static void test_reference_cpu(void)
{
	struct json_object *doc = load_ref("scalene_ref_cpu.json");
	double first, second;

	if (!doc)
		return;
	CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
	check_outputs_safe();
	check_program_shown(doc);
	CHECK(check_ref_lines(doc, 1) >= 2);
	/* cpu_bound.py's two loops: the Python one and the native one. */
	CHECK_HAS("total += i * i % 7");
	CHECK_HAS("s += math.fsum(sorted(data, reverse=True))");
	CHECK_HAS("busy_python");
	CHECK_HAS("busy_native");
	CHECK(!has("avg MB")); /* memory: false */
	/* A threshold between the hottest line and the next keeps only the
	 * hottest. */
	ref_two_hottest(doc, &first, &second);
	CHECK(first > second && second > 0);
	CHECK_EQ_INT(view(doc, (first + second) / 2, 0, WIDTH), 0);
	CHECK(check_ref_lines(doc, (first + second) / 2) >= 1);
	json_object_put(doc);
}

static void test_reference_mem(void)
{
	struct json_object *doc = load_ref("scalene_ref_mem.json");

	if (!doc)
		return;
	CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
	check_outputs_safe();
	check_program_shown(doc);
	CHECK(check_ref_lines(doc, 1) >= 2);
	CHECK_HAS("avg MB");
	/* mem_bound.py's two allocating lines: Python objects, native buffers. */
	CHECK_HAS("keep.append([j for j in range(1000)])");
	CHECK_HAS("bufs.append(bytearray(10 * 1024 * 1024))");
	CHECK_HAS("alloc_python");
	CHECK_HAS("alloc_native");
	json_object_put(doc);
}

static void test_reference_async_and_minimal(void)
{
	struct json_object *doc = load_ref("scalene_ref_async.json");

	if (doc) {
		CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
		check_outputs_safe();
		check_program_shown(doc);
		CHECK(check_ref_lines(doc, 1) >= 1);
		/* Coroutines' time goes to the line that runs the event loop. */
		CHECK_HAS("asyncio.run(main())");
		json_object_put(doc);
	}
	doc = load_ref("minimal_valid.json");
	if (doc) {
		CHECK_EQ_INT(view(doc, 1, 0, WIDTH), 0);
		check_outputs_safe();
		CHECK_HAS("spin.py");
		CHECK_HAS("spin(10_000_000)");
		json_object_put(doc);
	}
}

/* ------------------------------------------------------------ layout */

/* The widest row of out, in terminal columns, SGR escapes skipped; -1 when
 * something else than SGR, text and newlines is there. */
static int widest_row(void)
{
	size_t i = 0, n;
	int cols = 0, widest = 0, w;

	while (out && i < outlen) {
		if (out[i] == '\033' && i + 1 < outlen && out[i + 1] == '[') {
			i += 2;
			while (i < outlen && ((out[i] >= '0' && out[i] <= '9') || out[i] == ';'))
				i++;
			if (i >= outlen || out[i] != 'm')
				return -1;
			i++;
			continue;
		}
		if (out[i] == '\n') {
			cols = 0;
			i++;
			continue;
		}
		w = vj_char_cols(out + i, outlen - i, &n);
		if (w < 0)
			return -1;
		cols += w;
		widest = cols > widest ? cols : widest;
		i += n;
	}
	return widest;
}

static const char mem_doc[] =
	"{\"program\": \"/app/m.py\", \"memory\": true, \"elapsed_time_sec\": 2,"
	"\"max_footprint_mb\": 80, \"max_footprint_fname\": \"/app/m.py\","
	"\"max_footprint_lineno\": 3, \"alloc_samples\": 42, \"growth_rate\": 1.5,"
	"\"files\": {\"/app/m.py\": {\"percent_cpu_time\": 60, \"lines\": ["
	"{\"lineno\": 1, \"line\": \"def f():\\n\", \"memory_samples\": []},"
	"{\"lineno\": 2, \"line\": \"    x = 1\\n\", \"n_cpu_percent_python\": 0.2,"
	" \"memory_samples\": []},"
	"{\"lineno\": 3, \"line\": \"    a = bytearray(80 \\u003c\\u003c 20)\\n\","
	" \"n_cpu_percent_python\": 10, \"n_cpu_percent_c\": 20, \"n_sys_percent\": 5,"
	" \"n_malloc_mb\": 80, \"n_avg_mb\": 40.25, \"n_peak_mb\": 80,"
	" \"n_usage_fraction\": 0.75, \"n_copy_mb_s\": 12.5,"
	" \"memory_samples\": [[0, 10], [1000000000, 40], [1999999999, 80]]},"
	"{\"lineno\": 4, \"line\": \"    b = a[:]\\n\", \"n_malloc_mb\": 20,"
	" \"n_peak_mb\": 20, \"n_usage_fraction\": 0.25, \"memory_samples\": [[5, 1]]},"
	"{\"lineno\": 5, \"line\": \"    return len(a)\\n\", \"n_cpu_percent_python\": 25,"
	" \"memory_samples\": []}],"
	"\"functions\": [{\"line\": \"small\", \"lineno\": 9, \"n_cpu_percent_python\": 2},"
	"{\"line\": \"f\", \"lineno\": 1, \"n_cpu_percent_python\": 35, \"n_malloc_mb\": 100},"
	"{\"line\": \"g\", \"lineno\": 7, \"n_cpu_percent_python\": 0.5}]}},"
	"\"scalene_bpf\": {\"bpf\": {\"samples\": 1234, \"lost_ringbuf_full\": 7,"
	" \"walk_truncated\": 0, \"frames_unreadable\": \"many\", \"bad_records\": -3},"
	" \"memory\": {\"table_overflows\": 2}}}";

/* scalene_bpf.gpu.lines: a block after the files, one row per line that
 * launched GPU work (the first ten), with what it launched and its source;
 * nothing of it without such lines. */
static const char gpu_lines_doc[] =
	"{\"elapsed_time_sec\": 2, \"gpu\": true, \"gpu_device\": \"GPU\", \"files\": {"
	"\"/app/train.py\": {\"percent_cpu_time\": 60, \"lines\": ["
	"{\"lineno\": 1, \"line\": \"import torch\\n\"},"
	"{\"lineno\": 2, \"line\": \"    y = model(x)  \\u003c\\u003c kernels\\n\","
	"\"n_cpu_percent_python\": 60, \"n_gpu_percent\": 80}]},"
	"\"/lib/a/util.py\": {\"percent_cpu_time\": 0, \"lines\": []}},"
	"\"scalene_bpf\": {\"gpu\": {\"records_unmatched\": 0, \"lines\": ["
	"{\"file\": \"/app/train.py\", \"line\": 2, \"calls\": 40, \"kernels\": 120,"
	" \"kernel_s\": 1.25, \"copies\": 3, \"copy_s\": 0.01,"
	" \"copy_mb\": {\"htod\": 64, \"dtoh\": 2.5, \"dtod\": 0, \"other\": 0},"
	" \"memsets\": 0, \"memset_mb\": 0, \"alloc_mb\": 512, \"free_mb\": 0},"
	"{\"file\": \"/lib/a/util.py\", \"line\": 9, \"calls\": 7, \"kernels\": 7,"
	" \"kernel_s\": 0.00004, \"copy_mb\": {\"other\": 0.004}, \"alloc_mb\": 0},"
	"{\"file\": \"/lib/b/util.py\", \"line\": 3, \"calls\": 1, \"kernel_s\": 0.0123},"
	"{\"file\": \"/app/bad.py\", \"line\": 0, \"calls\": 5},"
	"\"not an object\","
	"{\"line\": 4, \"calls\": 5}";

/* No row is wider than the width asked for, whatever it is, with colour or
 * without; the text itself stays safe. */
static void test_every_width(void)
{
	static const char *const refs[] = { "scalene_ref_cpu.json", "scalene_ref_mem.json",
					    "scalene_ref_async.json" };
	struct json_object *docs[8];
	int nd = 0, w, d, bad = 0;
	size_t i;

	docs[nd++] = parse(mem_doc);
	{
		char text[2048];

		snprintf(text, sizeof(text), "%s]}}}", gpu_lines_doc);
		docs[nd++] = parse(text);
	}
	docs[nd++] = load(FIXTURES "hostile.json");
	docs[nd++] = load(FIXTURES "huge-numbers.json");
	for (i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		struct json_object *r = load_ref(refs[i]);

		if (r)
			docs[nd++] = r;
	}
	setenv("LC_ALL", "C.UTF-8", 1);
	for (d = 0; d < nd; d++) {
		for (w = 1; w <= 300 && docs[d]; w++) {
			int got;

			view_c(docs[d], w % 3 ? 1 : 0, w % 2, w, w % 5 == 0);
			got = widest_row();
			if (got < 0 || got > w) {
				if (!bad++)
					fprintf(stderr, "  doc %d width %d: a row of %d\n", d, w,
						got);
			}
		}
		json_object_put(docs[d]);
	}
	unsetenv("LC_ALL");
	CHECK_EQ_INT(bad, 0);
}

static void test_memory_columns(void)
{
	struct json_object *doc = parse(mem_doc);
	const char *row;

	setenv("LC_ALL", "C.UTF-8", 1);
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	check_outputs_safe();
	CHECK_HAS("avg MB");
	CHECK_HAS("peak MB");
	CHECK_HAS("timeline");
	CHECK_HAS("mem%");
	CHECK_HAS("MB/s");
	/* The header: samples and the footprint. */
	CHECK_HAS("1234 CPU samples, 42 allocation samples");
	CHECK_HAS("max footprint 80.0 MB, growth rate 1.5%, at /app/m.py:3");
	/* Line 3: every number, its sparkline, its text unescaped and
	 * without the indentation all the shown lines share. */
	row = out ? strstr(out, "    3  10.0%  20.0%   5.0%") : NULL;
	CHECK(row != NULL);
	if (row) {
		const char *end = strchr(row, '\n');
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)(end - row), row);
		CHECK(strstr(line, "  40.2 ") || strstr(line, "  40.3 "));
		CHECK(strstr(line, "   80.0 "));
		CHECK(strstr(line, " 75% "));
		CHECK(strstr(line, " 12.5 "));
		/* 10, 40 and 80 MB at the start, middle and end of the run. */
		CHECK(strstr(line, "80.0 \xe2\x96\x81     \xe2\x96\x84    \xe2\x96\x88  75%"));
		CHECK(strstr(line, "  a = bytearray(80 << 20)"));
		CHECK(!strstr(line, "    a = bytearray"));
	}
	/* Line 4 has no time but allocates: shown.  Line 2 is cold. */
	CHECK_HAS("b = a[:]");
	CHECK(!has("x = 1"));
	/* Without a UTF-8 locale: the sparkline in ASCII. */
	setenv("LC_ALL", "C", 1);
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK(out && !strstr(out, "\xe2\x96"));
	CHECK_HAS("80.0 _     :    #  75%");
	unsetenv("LC_ALL");
	/* Narrow: the graphics go first, the numbers stay. */
	CHECK_EQ_INT(view(doc, 1, 0, 70), 0);
	CHECK(!has("timeline") && !has("time "));
	CHECK_HAS("10.0%");
	json_object_put(doc);
}

static void test_functions_by_time(void)
{
	struct json_object *doc = parse(mem_doc);
	const char *f, *small;

	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	f = out ? strstr(out, "  f\n") : NULL;
	small = out ? strstr(out, "  small\n") : NULL;
	CHECK(f && small && f < small);
	CHECK(!has("  g\n")); /* under the threshold */
	CHECK_EQ_INT(view(doc, 1, 1, 160), 0);
	CHECK_HAS("  g\n");
	CHECK_HAS("x = 1");
	json_object_put(doc);
}

static void test_loss_footer(void)
{
	struct json_object *doc = parse(mem_doc);

	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK_HAS("data lost or incomplete");
	CHECK_HAS("bpf.lost_ringbuf_full = 7: CPU samples lost");
	CHECK_HAS("memory.table_overflows = 2");
	CHECK(!has("walk_truncated"));	  /* zero */
	CHECK(!has("frames_unreadable")); /* not a number */
	CHECK(!has("bad_records"));	  /* negative */
	json_object_put(doc);
	/* Scalene's profiles have no scalene_bpf: no footer. */
	doc = parse("{\"elapsed_time_sec\": 1, \"files\": {}}");
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK(!has("data lost"));
	json_object_put(doc);
}

static void test_gpu_columns(void)
{
	struct json_object *doc = parse(
		"{\"elapsed_time_sec\": 1, \"gpu\": true, \"gpu_device\": \"GPU\", \"files\": "
		"{\"/app/g.py\": {"
		"\"percent_cpu_time\": 30, \"lines\": [{\"lineno\": 7, \"line\": \"y = m(x)\\n\","
		"\"n_cpu_percent_c\": 30, \"n_gpu_percent\": 88, \"n_gpu_peak_memory_mb\": 1200.5,"
		"\"memory_samples\": []}, {\"lineno\": 8, \"line\": \"z = m(y)\\n\","
		"\"n_gpu_percent\": 12, \"memory_samples\": []}]}}}");

	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK_HAS("gpu: GPU");
	CHECK_HAS("gpu%");
	CHECK_HAS("gpu MB");
	CHECK_HAS(" 88% ");
	CHECK_HAS("1200.5");
	CHECK_HAS("z = m(y)"); /* GPU use without CPU time: shown */
	CHECK(!has("avg MB"));
	json_object_put(doc);
}

static void test_gpu_lines(void)
{
	char text[4096];
	struct json_object *doc;
	const char *row;
	int i;

	snprintf(text, sizeof(text), "%s]}}}", gpu_lines_doc);
	doc = parse(text);
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	check_outputs_safe();
	CHECK_HAS("GPU work by the line that launched it (most GPU time first):");
	CHECK_HAS("file:line");
	CHECK_HAS("kernel time");
	/* Line 2 of train.py: every number, the copies with data only, and
	 * its source unescaped and without its indentation. */
	row = out ? strstr(out, " train.py:2 ") : NULL;
	CHECK(row != NULL);
	if (row) {
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(row, "\n"), row);
		CHECK(strstr(line, " 40 "));
		CHECK(strstr(line, " 120 "));
		CHECK(strstr(line, " 1.25 s "));
		CHECK(strstr(line, " 64.0 htod, 2.5 dtoh "));
		CHECK(!strstr(line, "dtod") && !strstr(line, "other"));
		CHECK(strstr(line, " 512.0 "));
		CHECK(strstr(line, "  y = model(x)  << kernels"));
	}
	/* Two files named util.py: their whole paths; small amounts readable. */
	row = out ? strstr(out, " /lib/a/util.py:9 ") : NULL;
	CHECK(row != NULL);
	if (row) {
		CHECK(strstr(row, " 40.0 us ") && strstr(row, " 0.004 other") &&
		      strstr(row, " 0.004 other") < strchr(row, '\n'));
	}
	CHECK_HAS(" /lib/b/util.py:3 ");
	CHECK_HAS(" 12.3 ms");
	/* Entries without a file or a line above zero are not rows. */
	CHECK(!has("bad.py"));
	CHECK(!has(":4 "));
	/* The block follows the files. */
	CHECK(out && strstr(out, "GPU work by") > strstr(out, "/app/train.py: "));
	json_object_put(doc);

	/* More than ten: the first ten, and how many there are. */
	{
		size_t len = strlen(gpu_lines_doc);

		memcpy(text, gpu_lines_doc, len);
		for (i = 0; i < 12; i++)
			len += snprintf(text + len, sizeof(text) - len,
					",{\"file\": \"/app/many.py\", \"line\": %d, \"calls\": 1,"
					" \"kernels\": 1, \"kernel_s\": 0.001}",
					100 + i);
		snprintf(text + len, sizeof(text) - len, "]}}}");
	}
	doc = parse(text);
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK_HAS("(the 10 of 15 with the most GPU time):");
	CHECK_HAS("many.py:106 ");
	CHECK(!has("many.py:107"));
	/* Narrow: rows still fit, the place and the kernels stay. */
	CHECK_EQ_INT(view(doc, 1, 0, 60), 0);
	CHECK(widest_row() >= 0 && widest_row() <= 60);
	CHECK_HAS(" train.py:2 ");
	CHECK(!has(" calls "));
	json_object_put(doc);

	/* No lines, or no gpu object at all: no block. */
	snprintf(text, sizeof(text),
		 "{\"elapsed_time_sec\": 1, \"gpu\": true, \"files\": {},"
		 " \"scalene_bpf\": {\"gpu\": {\"lines\": []}}}");
	doc = parse(text);
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK(!has("GPU work"));
	json_object_put(doc);
	doc = parse("{\"elapsed_time_sec\": 1, \"files\": {}}");
	CHECK_EQ_INT(view(doc, 1, 0, 160), 0);
	CHECK(!has("GPU work"));
	json_object_put(doc);
}

/* GIL wait: a column (of the system time) and a header line when the
 * profile has any; nothing of it in profiles without (Scalene's). */
static void test_gil_column(void)
{
	struct json_object *doc =
		parse("{\"elapsed_time_sec\": 1.0, \"scalene_bpf\": {\"gil_wait_s\": 0.25, "
		      "\"total_sampled_s\": 1.0},"
		      "\"files\": {\"/app/t.py\": {\"percent_cpu_time\": 90, \"lines\": ["
		      "{\"lineno\": 1, \"line\": \"x += 1\\n\", \"n_cpu_percent_python\": 40,"
		      "\"n_sys_percent\": 30, \"n_gil_wait_percent\": 25.5},"
		      "{\"lineno\": 2, \"line\": \"time.sleep(1)\\n\", \"n_sys_percent\": 20,"
		      "\"n_gil_wait_percent\": 0},"
		      "{\"lineno\": 3, \"line\": \"y = 2\\n\", \"n_sys_percent\": 5,"
		      "\"n_gil_wait_percent\": 1e300}]}}}");

	setenv("LC_ALL", "C.UTF-8", 1);
	CHECK_EQ_INT(view(doc, 1, 0, 120), 0);
	check_outputs_safe();
	CHECK_HAS("GIL wait: 0.25 s (25.0% of the time, in system)");
	CHECK_HAS("  GIL ");
	CHECK_HAS("    1  40.0%         30.0%  25.5% ");
	/* No GIL wait on the sleeping line: an empty cell. */
	CHECK_HAS("    2                20.0%        \xe2\x96");
	unsetenv("LC_ALL");
	/* Never more than the line's system time. */
	CHECK_HAS("    3                 5.0%   5.0% ");
	/* Narrow: the GIL column goes before the system column. */
	CHECK_EQ_INT(view(doc, 1, 0, 40), 0);
	CHECK(!has(" GIL "));
	CHECK_HAS("system");
	json_object_put(doc);
	/* Without GIL wait in the facts: no column, no header line. */
	doc = parse("{\"elapsed_time_sec\": 1.0, \"files\": {\"/app/t.py\": {\"percent_cpu_time\": "
		    "90, \"lines\": ["
		    "{\"lineno\": 1, \"line\": \"x += 1\\n\", \"n_cpu_percent_python\": 40,"
		    "\"n_sys_percent\": 30}]}}}");
	CHECK_EQ_INT(view(doc, 1, 0, 120), 0);
	CHECK(!has("GIL"));
	json_object_put(doc);
}

static void test_color(void)
{
	struct json_object *doc = parse(mem_doc);

	CHECK_EQ_INT(view_c(doc, 1, 0, 120, true), 0);
	CHECK(out && strstr(out, "\033[1m"));
	CHECK(widest_row() > 0); /* only SGR escapes */
	CHECK_EQ_INT(view_c(doc, 1, 0, 120, false), 0);
	CHECK(out && !memchr(out, '\033', outlen));
	json_object_put(doc);
}

static void test_char_cols(void)
{
	static const struct {
		const char *s;
		int cols;
		size_t len;
	} cases[] = {
		{ "a", 1, 1 },
		{ "\xc3\xa9", 1, 2 },	      /* é */
		{ "\xe6\xbc\xa2", 2, 3 },     /* 漢 */
		{ "\xf0\x9f\x98\x80", 2, 4 }, /* emoji */
		{ "\xef\xbc\xa1", 2, 3 },     /* full-width A */
		{ "\x1b", -1, 1 },
		{ "\x7f", -1, 1 },
		{ "\xc2\x9b", -1, 2 },	   /* CSI, C1 */
		{ "\xe2\x80\xae", -1, 3 }, /* RLO */
		{ "\xe2\x81\xa6", -1, 3 }, /* LRI */
		{ "\xe2\x80\xa8", -1, 3 }, /* line separator */
		{ "\xff", -1, 1 },
		{ "\xed\xa0\x80", -1, 1 }, /* surrogate */
		{ "\xe2\x82", -1, 1 },	   /* cut short */
	};
	size_t i, len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int c = vj_char_cols(cases[i].s, strlen(cases[i].s), &len);

		if (c != cases[i].cols || len != cases[i].len)
			fprintf(stderr, "  case %zu: %d columns, %zu bytes\n", i, c, len);
		CHECK_EQ_INT(c, cases[i].cols);
		CHECK_EQ_INT(len, cases[i].len);
	}
}

int main(void)
{
	RUN_TEST(test_not_a_profile);
	RUN_TEST(test_empty_files);
	RUN_TEST(test_hostile_strings);
	RUN_TEST(test_raw_bytes_not_passed_through);
	RUN_TEST(test_truncation_keeps_characters_whole);
	RUN_TEST(test_wrong_types);
	RUN_TEST(test_elapsed_checked);
	RUN_TEST(test_huge_numbers);
	RUN_TEST(test_nonfinite_in_memory);
	RUN_TEST(test_reference_cpu);
	RUN_TEST(test_reference_mem);
	RUN_TEST(test_reference_async_and_minimal);
	RUN_TEST(test_every_width);
	RUN_TEST(test_memory_columns);
	RUN_TEST(test_functions_by_time);
	RUN_TEST(test_loss_footer);
	RUN_TEST(test_gpu_columns);
	RUN_TEST(test_gpu_lines);
	RUN_TEST(test_gil_column);
	RUN_TEST(test_color);
	RUN_TEST(test_char_cols);
	free(out);
	free(err);
	if (refs_skipped)
		printf("view: SKIPPED %d reference profile checks: SCALENE_REFERENCE_DIR names no "
		       "folder (tools/run-tests makes one: tests/refprofiles/scalene_refs.py)\n",
		       refs_skipped);
	return test_summary("view");
}
