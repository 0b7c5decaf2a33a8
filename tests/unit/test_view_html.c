/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/view/view_html.c without a browser: documents that are not profiles are
 * refused with one line and no page; the model embedded in the page cannot
 * end its script element whatever the profile's text; it keeps the hot lines
 * and the heaviest stacks only; each page has its own CSP nonce.
 * (tests/e2e/test_view_html.py renders the pages in Chromium.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "testlib.h"
#include "view/view.h"

static char *out, *err;
static size_t outlen, errlen;

static int page(struct json_object *doc)
{
	FILE *fo, *fe;
	int ret;

	test_memstreams(&out, &outlen, &err, &errlen, &fo, &fe);
	ret = view_write_html(doc, "t.json", NULL, fo, fe);
	fclose(fo);
	fclose(fe);
	return ret;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/* The model: the JSON between the data script's tags. */
static struct json_object *model(void)
{
	const char *tag = "id=\"profile-data\">", *s = out ? strstr(out, tag) : NULL, *e;
	struct json_object *m;
	char *text;

	CHECK(s != NULL);
	if (!s)
		return NULL;
	s += strlen(tag);
	e = strstr(s, "</script>");
	CHECK(e != NULL);
	if (!e)
		return NULL;
	text = strndup(s, (size_t)(e - s));
	m = json_tokener_parse(text);
	free(text);
	CHECK(m != NULL);
	return m;
}

static struct json_object *at(struct json_object *o, const char *path)
{
	char *p = strdup(path), *save = NULL, *k;

	for (k = strtok_r(p, ".", &save); o && k; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		else if (!json_object_object_get_ex(o, k, &o))
			o = NULL;
	}
	free(p);
	return o;
}

static void test_not_a_profile(void)
{
	const char *docs[] = { "{\"a\": 1}", "[1, 2]", "\"x\"", "{\"files\": []}",
			       "{\"files\": {\"x.py\": 3}}" };
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct json_object *doc = json_tokener_parse(docs[i]);

		CHECK_EQ_INT(page(doc), -EINVAL);
		CHECK_EQ_INT(outlen, 0);
		CHECK(err && strstr(err, "not a profile"));
		CHECK(err && count(err, "\n") == 1);
		json_object_put(doc);
	}
}

static void test_cannot_end_the_script(void)
{
	const char *doc_text =
		"{\"elapsed_time_sec\": 1, \"memory\": true, \"files\": {\"/a</script>.py\": "
		"{\"percent_cpu_time\": 50,"
		" \"functions\": [], \"lines\": [{\"lineno\": 1, \"n_cpu_percent_python\": 50,"
		" \"line\": \"x = '</script><script>alert(1)</script>' \\u2028 & \\\\u003c\\n\","
		" \"memory_samples\": [[1000000000, 5]], \"n_malloc_mb\": 1}]}},"
		" \"combined_stacks\": [[[{\"kind\": \"py\", \"display_name\": \"<!--\","
		" \"filename_or_module\": \"/a.py\", \"line\": 1}], 3]]}";
	struct json_object *doc = json_tokener_parse(doc_text), *m;

	CHECK_EQ_INT(page(doc), 0);
	CHECK_EQ_INT(errlen, 0);
	CHECK_EQ_INT(count(out, "<script"), 2);
	CHECK_EQ_INT(count(out, "</script"), 2);
	CHECK(!strstr(out, "\xe2\x80\xa8"));
	CHECK(!strstr(out, "@@"));
	CHECK(strstr(out, "default-src 'none'") != NULL);
	m = model();
	CHECK_EQ_STR(json_object_get_string(at(m, "files.0.lines.0.src")),
		     "x = '</script><script>alert(1)</script>' \xe2\x80\xa8 & <");
	CHECK_EQ_STR(json_object_get_string(at(m, "files.0.name")), "/a</script>.py");
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.0.1")), "<!--");
	/* [t_ns, MB] becomes [t_s, MB]. */
	CHECK(json_object_get_double(at(m, "files.0.lines.0.mem.0.0")) == 1.0);
	CHECK(json_object_get_double(at(m, "cpu.stacks.0.1")) == 3.0);
	json_object_put(m);
	json_object_put(doc);
}

static void test_hot_lines_and_stacks_only(void)
{
	struct json_object *doc = json_object_new_object(), *files = json_object_new_object();
	struct json_object *fd = json_object_new_object(), *lines = json_object_new_array();
	struct json_object *stacks = json_object_new_array(), *m;
	int i;

	for (i = 0; i < 10010; i++) {
		struct json_object *l = json_object_new_object();

		json_object_object_add(l, "lineno", json_object_new_int(i + 1));
		json_object_object_add(l, "line", json_object_new_string("y = f(x)\n"));
		json_object_object_add(l, "n_cpu_percent_python",
				       json_object_new_double(i < 10 ? 9.0 : 0.001));
		json_object_array_add(lines, l);
	}
	for (i = 0; i < 3000; i++) {
		struct json_object *s = json_object_new_array(), *fr = json_object_new_array();
		struct json_object *f = json_object_new_object();
		char name[32];

		snprintf(name, sizeof(name), "f%d", i);
		json_object_object_add(f, "kind", json_object_new_string("py"));
		json_object_object_add(f, "display_name", json_object_new_string(name));
		json_object_array_add(fr, f);
		json_object_array_add(s, fr);
		json_object_array_add(s, json_object_new_int(i + 1));
		json_object_array_add(stacks, s);
	}
	json_object_object_add(fd, "lines", lines);
	json_object_object_add(files, "/s.py", fd);
	json_object_object_add(doc, "files", files);
	json_object_object_add(doc, "combined_stacks", stacks);
	json_object_object_add(doc, "elapsed_time_sec", json_object_new_double(1.5));
	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK_EQ_INT(json_object_array_length(at(m, "files.0.lines")), 10);
	CHECK_EQ_INT(json_object_get_int(at(m, "files.0.hidden")), 10000);
	CHECK_EQ_INT(json_object_array_length(at(m, "cpu.stacks")), 2000);
	CHECK_EQ_INT(json_object_get_int(at(m, "cpu.omitted")), 1000);
	CHECK(json_object_get_double(at(m, "cpu.omitted_w")) == 1000 * 1001 / 2);
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.0.1")), "f2999");
	/* Scalene's profiles have no sample count: the stacks' total. */
	CHECK_EQ_INT(json_object_get_int(at(m, "samples")), 3000 * 3001 / 2);
	CHECK(outlen < 250000);
	json_object_put(m);
	json_object_put(doc);
}

/* GIL wait reaches the page's model (per row, capped at the row's system
 * time, and in total) only when the profile has some. */
static void test_gil_wait(void)
{
	const char *with =
		"{\"elapsed_time_sec\": 1.0, \"scalene_bpf\": {\"gil_wait_s\": 0.5},"
		"\"files\": {\"/t.py\": {"
		"\"percent_cpu_time\": 50, \"lines\": [{\"lineno\": 1, \"line\": \"x\\n\","
		"\"n_sys_percent\": 40, \"n_gil_wait_percent\": 30}, {\"lineno\": 2,"
		"\"line\": \"y\\n\", \"n_sys_percent\": 10, \"n_gil_wait_percent\": 50}],"
		"\"functions\": [{\"lineno\": 1, \"line\": \"f\", \"n_sys_percent\": 50,"
		"\"n_gil_wait_percent\": 40}]}}}";
	const char *without =
		"{\"elapsed_time_sec\": 1.0, \"files\": {\"/t.py\": {\"lines\": [{\"lineno\": 1,"
		"\"line\": \"x\\n\", \"n_sys_percent\": 40}]}}}";
	struct json_object *doc = json_tokener_parse(with), *m;

	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK(json_object_get_double(at(m, "gil_s")) == 0.5);
	CHECK(json_object_get_double(at(m, "files.0.lines.0.gil")) == 30);
	CHECK(json_object_get_double(at(m, "files.0.lines.1.gil")) == 10);
	CHECK(json_object_get_double(at(m, "files.0.funcs.0.gil")) == 40);
	CHECK(out && strstr(out, "'GIL wait'"));
	json_object_put(m);
	json_object_put(doc);
	doc = json_tokener_parse(without);
	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK(at(m, "gil_s") == NULL);
	CHECK(at(m, "files.0.lines.0.gil") == NULL);
	json_object_put(m);
	json_object_put(doc);
}

/* scalene_bpf.gpu.lines: the first ten entries that name a file and a line,
 * with the copy directions that have data and the line's source; none in
 * the model when the profile has no such lines. */
static void test_gpu_lines(void)
{
	char text[4096];
	struct json_object *doc, *m;
	size_t len;
	int i;

	len = (size_t)snprintf(
		text, sizeof(text),
		"{\"elapsed_time_sec\": 1.0, \"gpu\": true, \"files\": {\"/t.py\": {\"lines\": ["
		"{\"lineno\": 1, \"line\": \"import cupy\\n\"},"
		"{\"lineno\": 2, \"line\": \"    y = f(x) \\u0026 g\\n\", \"n_cpu_percent_c\": "
		"50}]}},"
		"\"scalene_bpf\": {\"gpu\": {\"lines\": ["
		"{\"file\": \"/t.py\", \"line\": 2, \"calls\": 3, \"kernels\": 6, \"kernel_s\": "
		"0.5,"
		" \"copy_mb\": {\"htod\": 8, \"dtoh\": 0, \"dtod\": 1.5}, \"alloc_mb\": 64},"
		"{\"file\": \"/t.py\", \"line\": -1, \"calls\": 1}, 7");
	for (i = 0; i < 11; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len,
					",{\"file\": \"/u.py\", \"line\": %d, \"calls\": 1}",
					10 + i);
	snprintf(text + len, sizeof(text) - len, "]}}}");
	doc = json_tokener_parse(text);
	CHECK(doc != NULL);
	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK(json_object_array_length(at(m, "gpu_lines")) == 10);
	CHECK(json_object_get_int(at(m, "gpu_lines_total")) == 12);
	CHECK(!strcmp(json_object_get_string(at(m, "gpu_lines.0.file")), "/t.py"));
	CHECK(json_object_get_int(at(m, "gpu_lines.0.line")) == 2);
	CHECK(json_object_get_int(at(m, "gpu_lines.0.calls")) == 3);
	CHECK(json_object_get_int(at(m, "gpu_lines.0.kernels")) == 6);
	CHECK(json_object_get_double(at(m, "gpu_lines.0.kernel_s")) == 0.5);
	CHECK(json_object_get_double(at(m, "gpu_lines.0.copy_mb.htod")) == 8);
	CHECK(json_object_get_double(at(m, "gpu_lines.0.copy_mb.dtod")) == 1.5);
	CHECK(at(m, "gpu_lines.0.copy_mb.dtoh") == NULL);
	CHECK(json_object_get_double(at(m, "gpu_lines.0.alloc_mb")) == 64);
	CHECK(!strcmp(json_object_get_string(at(m, "gpu_lines.0.src")), "    y = f(x) & g"));
	/* A line the profile's files do not have: no source. */
	CHECK(!strcmp(json_object_get_string(at(m, "gpu_lines.1.src")), ""));
	CHECK(json_object_get_int(at(m, "gpu_lines.9.line")) == 18);
	json_object_put(m);
	json_object_put(doc);

	doc = json_tokener_parse("{\"elapsed_time_sec\": 1.0, \"files\": {},"
				 " \"scalene_bpf\": {\"gpu\": {\"lines\": []}}}");
	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK(at(m, "gpu_lines") == NULL && at(m, "gpu_lines_total") == NULL);
	json_object_put(m);
	json_object_put(doc);
}

/* scalene_bpf.gpu_stacks: the GPU flame graph's set, in seconds, apart from
 * the page's `gpu` (the profile's GPU flag). */
static void test_gpu_stacks(void)
{
	struct json_object *doc = json_tokener_parse(
		"{\"elapsed_time_sec\": 1.0, \"gpu\": true, \"files\": {},"
		" \"scalene_bpf\": {\"gpu_stacks\": ["
		"[[{\"kind\": \"py\", \"display_name\": \"train\", \"filename_or_module\":"
		" \"/t.py\", \"line\": 4}], 0.75],"
		"[[{\"kind\": \"py\", \"display_name\": \"load\", \"filename_or_module\":"
		" \"/t.py\", \"line\": 9}], 0.25]]}}");
	struct json_object *m;

	CHECK(doc != NULL);
	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK(json_object_get_boolean(at(m, "gpu")));
	CHECK(!strcmp(json_object_get_string(at(m, "gpu_flame.unit")), "s"));
	CHECK(!strcmp(json_object_get_string(at(m, "gpu_flame.from")), "scalene_bpf.gpu_stacks"));
	CHECK(json_object_get_double(at(m, "gpu_flame.total")) == 1.0);
	CHECK(json_object_array_length(at(m, "gpu_flame.stacks")) == 2);
	json_object_put(m);
	json_object_put(doc);
	/* None: no set (the page shows no GPU flame graph). */
	doc = json_tokener_parse("{\"elapsed_time_sec\": 1.0, \"files\": {}}");
	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK(at(m, "gpu_flame") == NULL);
	json_object_put(m);
	json_object_put(doc);
}

/* Scalene's older `stacks`, used when combined_stacks is empty. */
static void test_legacy_stacks(void)
{
	struct json_object *doc = json_tokener_parse(
		"{\"elapsed_time_sec\": 1, \"files\": {}, \"combined_stacks\": [], \"stacks\": ["
		"[[\"/x/p y.py main:20;\", \"weird\", \"a b:c:-inf;\", 7], {\"count\": 5}],"
		"[[\"/x/p y.py main:20;\"], {\"count\": \"9\"}], [\"junk\"], 3]}");
	struct json_object *m;

	CHECK_EQ_INT(page(doc), 0);
	m = model();
	CHECK_EQ_STR(json_object_get_string(at(m, "cpu.from")), "stacks");
	CHECK_EQ_INT(json_object_array_length(at(m, "cpu.stacks")), 1);
	CHECK_EQ_INT(json_object_array_length(at(m, "cpu.stacks.0.0")), 3);
	CHECK(json_object_get_double(at(m, "cpu.stacks.0.1")) == 5);
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.0.1")), "main");
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.0.2")), "/x/p y.py");
	CHECK_EQ_INT(json_object_get_int(at(m, "frames.0.3")), 20);
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.1.1")), "weird");
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.1.2")), "");
	CHECK_EQ_STR(json_object_get_string(at(m, "frames.2.1")), "b:c:-inf");
	CHECK_EQ_INT(json_object_get_int(at(m, "frames.2.3")), 0);
	json_object_put(m);
	json_object_put(doc);
}

static void test_nonce_per_page(void)
{
	struct json_object *doc = json_tokener_parse("{\"elapsed_time_sec\": 1, \"files\": {}}");
	char first[64] = "", *n;

	CHECK_EQ_INT(page(doc), 0);
	n = out ? strstr(out, "'nonce-") : NULL;
	CHECK(n != NULL);
	if (n)
		snprintf(first, sizeof(first), "%.39s", n);
	CHECK_EQ_INT(count(out, first + 7), 4); /* CSP twice, style, script */
	CHECK_EQ_INT(page(doc), 0);
	CHECK(!strstr(out, first));
	json_object_put(doc);
}

int main(void)
{
	RUN_TEST(test_not_a_profile);
	RUN_TEST(test_cannot_end_the_script);
	RUN_TEST(test_hot_lines_and_stacks_only);
	RUN_TEST(test_legacy_stacks);
	RUN_TEST(test_gil_wait);
	RUN_TEST(test_gpu_lines);
	RUN_TEST(test_gpu_stacks);
	RUN_TEST(test_nonce_per_page);
	free(out);
	free(err);
	return test_summary("view_html");
}
