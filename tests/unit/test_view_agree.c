/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The terminal view, the HTML page and the exports read one profile the same
 * way: the same lines, functions and files shown (with and without
 * --all-lines, at the default threshold, at zero, and with lines of zero
 * time), the same counters of lost data with the same labels, and the same
 * frames from Scalene's `stacks` strings.  The expected rows are written out
 * here, not taken from the code under test.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "testlib.h"
#include "view/view.h"
#include "view/viewutil.h"

/* Every line carries a unique text; which modes show it. */
enum {
	AT_1 = 1,
	AT_0 = 2,
	ALL = 4,
	AT_50 = 8
};

static const struct {
	const char *text, *fields;
	int shown;
} rows[] = {
	{ "src_hot", "\"n_cpu_percent_python\": 50", AT_1 | AT_0 | ALL | AT_50 },
	{ "src_small", "\"n_cpu_percent_c\": 0.5", AT_0 | ALL },
	{ "src_zero", "\"n_cpu_percent_python\": 0", 0 },
	{ "src_negative", "\"n_cpu_percent_python\": -3", 0 },
	{ "src_at_threshold", "\"n_sys_percent\": 1.0", AT_1 | AT_0 | ALL },
	{ "src_malloc", "\"n_malloc_mb\": 3", AT_1 | AT_0 | ALL | AT_50 },
	{ "src_usage", "\"n_usage_fraction\": 0.2", AT_1 | AT_0 | ALL | AT_50 },
	{ "src_copy", "\"n_copy_mb_s\": 4", AT_1 | AT_0 | ALL | AT_50 },
	{ "src_footprint", "\"n_peak_mb\": 2, \"n_avg_mb\": 1", ALL },
	{ "src_gpu_off", "\"n_gpu_percent\": 30", 0 }, /* "gpu": false */
};

static const struct {
	const char *name, *fields;
	int shown;
} funcs[] = {
	{ "fn_hot", "\"n_cpu_percent_python\": 50", AT_1 | AT_0 | ALL | AT_50 },
	{ "fn_small", "\"n_cpu_percent_python\": 0.5", AT_0 | ALL },
	{ "fn_zero", "\"n_cpu_percent_python\": 0", 0 },
};

/* Files besides /app/main.py (which is always shown). */
static const struct {
	const char *name, *entry;
	int shown;
} files[] = {
	{ "/app/cold.py",
	  "{\"percent_cpu_time\": 0.2, \"lines\": [{\"lineno\": 1, \"line\": \"cold_1\\n\","
	  " \"n_cpu_percent_python\": 0.2}]}",
	  AT_0 | ALL },
	{ "/app/idle.py",
	  "{\"percent_cpu_time\": 0, \"lines\": [{\"lineno\": 1, \"line\": \"idle_1\\n\"}]}",
	  AT_0 | ALL },
};

/* The counters of lost data that scalene_bpf writes. */
static const char *const loss_names[] = {
	"bpf.lost_ringbuf_full",     "bpf.memory_lost_ringbuf_full", "bpf.process_events_lost",
	"bpf.process_table_full",    "bpf.thread_state_unavailable", "bpf.walk_read_failed",
	"bpf.walk_truncated",	     "bpf.frames_unreadable",	     "bpf.bad_records",
	"bpf.stacks_dropped",	     "bpf.truncated_stacks",	     "memory.records_lost",
	"memory.sampler_not_loaded", "memory.table_overflows",	     "memory.untracked_blocks",
	"async.tasks_unreadable",    "gpu.records_unmatched",	     "gpu.lost_ringbuf_full",
};

#define NLOSSES (sizeof(loss_names) / sizeof(loss_names[0]))

static char *out, *err;
static size_t outlen, errlen;

/* Builds the profile: every loss counter at 100 + its place, or none. */
static struct json_object *profile(bool losses)
{
	char *s = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&s, &len);
	struct json_object *doc;

	fprintf(f, "{\"program\": \"/app/main.py\", \"elapsed_time_sec\": 2, \"memory\": true,"
		   " \"gpu\": false, \"files\": {\"/app/main.py\": {\"percent_cpu_time\": 60,"
		   " \"lines\": [");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		fprintf(f, "%s{\"lineno\": %zu, \"line\": \"    %s\\n\", %s}", i ? "," : "", i + 1,
			rows[i].text, rows[i].fields);
	fprintf(f, "], \"functions\": [");
	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		fprintf(f, "%s{\"lineno\": %zu, \"line\": \"%s\", %s}", i ? "," : "", i + 1,
			funcs[i].name, funcs[i].fields);
	fprintf(f, "]}");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		fprintf(f, ", \"%s\": %s", files[i].name, files[i].entry);
	/* Scalene's stacks, one with a frame ending in two ';'. */
	fprintf(f, "}, \"combined_stacks\": [], \"stacks\": ["
		   "[[\"/app/main.py <module>:1;\", \"/app/main.py f:6;\"], {\"count\": 3}],"
		   "[[\"/app/a b.py g:9;;\", \"bare\"], {\"count\": 2}]]");
	if (losses) {
		fprintf(f, ", \"scalene_bpf\": {\"bpf\": {\"samples\": 10");
		for (i = 0; i < NLOSSES; i++) {
			if (!strncmp(loss_names[i], "bpf.", 4))
				fprintf(f, ", \"%s\": %zu", loss_names[i] + 4, 100 + i);
		}
		fprintf(f, "}, \"memory\": {\"records\": 5");
		for (i = 0; i < NLOSSES; i++) {
			if (!strncmp(loss_names[i], "memory.", 7))
				fprintf(f, ", \"%s\": %zu", loss_names[i] + 7, 100 + i);
		}
		fprintf(f, "}, \"async\": {\"snapshots\": 5");
		for (i = 0; i < NLOSSES; i++) {
			if (!strncmp(loss_names[i], "async.", 6))
				fprintf(f, ", \"%s\": %zu", loss_names[i] + 6, 100 + i);
		}
		fprintf(f, "}, \"gpu\": {\"records\": 5");
		for (i = 0; i < NLOSSES; i++) {
			if (!strncmp(loss_names[i], "gpu.", 4))
				fprintf(f, ", \"%s\": %zu", loss_names[i] + 4, 100 + i);
		}
		fprintf(f, "}}");
	}
	fprintf(f, "}");
	fclose(f);
	doc = json_tokener_parse(s);
	CHECK(doc != NULL);
	free(s);
	return doc;
}

static void streams(FILE **fo, FILE **fe)
{
	test_memstreams(&out, &outlen, &err, &errlen, fo, fe);
}

static int cli(struct json_object *doc, double threshold, bool all)
{
	struct view_opts vo = { threshold, all, 200, false };
	FILE *fo, *fe;
	int ret;

	streams(&fo, &fe);
	ret = view_print_cli(doc, fo, fe, &vo);
	fclose(fo);
	fclose(fe);
	return ret;
}

/* The page's embedded model. */
static struct json_object *page(struct json_object *doc, double threshold, bool all)
{
	struct view_opts vo = { threshold, all, 200, false };
	const char *tag = "id=\"profile-data\">", *s, *e;
	struct json_object *m = NULL;
	FILE *fo, *fe;
	char *text;

	streams(&fo, &fe);
	CHECK_EQ_INT(view_write_html(doc, "t.json", &vo, fo, fe), 0);
	fclose(fo);
	fclose(fe);
	s = out ? strstr(out, tag) : NULL;
	e = s ? strstr(s, "</script>") : NULL;
	CHECK(s && e);
	if (!s || !e)
		return NULL;
	s += strlen(tag);
	text = strndup(s, (size_t)(e - s));
	m = json_tokener_parse(text);
	free(text);
	CHECK(m != NULL);
	return m;
}

/* The page's file entry named name, or NULL. */
static struct json_object *page_file(struct json_object *m, const char *name)
{
	struct json_object *fs = vj_array(m, "files");
	size_t i, n = fs ? json_object_array_length(fs) : 0;

	for (i = 0; i < n; i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);
		const char *fn = vj_str(f, "name");

		if (fn && !strcmp(fn, name))
			return f;
	}
	return NULL;
}

static bool page_has(struct json_object *f, const char *list, const char *key, const char *v)
{
	struct json_object *a = vj_array(f, list);
	size_t i, n = a ? json_object_array_length(a) : 0;

	for (i = 0; i < n; i++) {
		const char *s = vj_str(json_object_array_get_idx(a, i), key);

		/* The page keeps the indentation: the terminal dedents. */
		while (s && *s == ' ')
			s++;
		if (s && !strcmp(s, v))
			return true;
	}
	return false;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; hay && (hay = strstr(hay, needle)); hay++)
		n++;
	return n;
}

/* A row of the terminal's table ends with its text. */
static bool cli_has(const char *text)
{
	char buf[128];

	snprintf(buf, sizeof(buf), " %s\n", text);
	return out && strstr(out, buf);
}

static bool cli_has_file(const char *name)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "\n%s: ", name);
	return out && strstr(out, buf);
}

static void check_mode(struct json_object *doc, double threshold, bool all, int mode)
{
	struct json_object *m, *mainf;
	size_t i;

	CHECK_EQ_INT(cli(doc, threshold, all), 0);
	m = page(doc, threshold, all);
	/* Both again, the terminal's output kept. */
	CHECK_EQ_INT(cli(doc, threshold, all), 0);
	mainf = page_file(m, "/app/main.py");
	CHECK(mainf != NULL);
	CHECK(cli_has_file("/app/main.py"));
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool want = rows[i].shown & mode;

		if (cli_has(rows[i].text) != want ||
		    page_has(mainf, "lines", "src", rows[i].text) != want)
			fprintf(stderr, "mode %d: %s: want %d, terminal %d, page %d\n", mode,
				rows[i].text, want, cli_has(rows[i].text),
				page_has(mainf, "lines", "src", rows[i].text));
		CHECK(cli_has(rows[i].text) == want);
		CHECK(page_has(mainf, "lines", "src", rows[i].text) == want);
	}
	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		bool want = funcs[i].shown & mode;

		CHECK(cli_has(funcs[i].name) == want);
		CHECK(page_has(mainf, "funcs", "name", funcs[i].name) == want);
	}
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		bool want = files[i].shown & mode;

		if (cli_has_file(files[i].name) != want ||
		    (page_file(m, files[i].name) != NULL) != want)
			fprintf(stderr, "mode %d: %s: want %d, terminal %d, page %d\n", mode,
				files[i].name, want, cli_has_file(files[i].name),
				page_file(m, files[i].name) != NULL);
		CHECK(cli_has_file(files[i].name) == want);
		CHECK((page_file(m, files[i].name) != NULL) == want);
	}
	json_object_put(m);
}

static void test_same_lines(void)
{
	struct json_object *doc = profile(true);

	check_mode(doc, 1, false, AT_1);
	check_mode(doc, 0, false, AT_0);
	check_mode(doc, 1, true, ALL);
	check_mode(doc, 0, true, ALL);
	check_mode(doc, 50, false, AT_50);
	json_object_put(doc);
}

/* The label each view gives a counter; NULL when it has none. */
static const char *label_of(const char *name)
{
	char group[16];
	size_t i, g = strcspn(name, ".");

	snprintf(group, sizeof(group), "%.*s", (int)g, name);
	for (i = 0; i < vj_nlosses; i++) {
		if (!strcmp(vj_losses[i].group, group) && !strcmp(vj_losses[i].key, name + g + 1))
			return vj_losses[i].label;
	}
	return NULL;
}

static void test_same_losses(void)
{
	struct json_object *doc = profile(true), *m, *q;
	char line[256];
	FILE *fo, *fe;
	size_t i, k;

	CHECK_EQ_INT(vj_nlosses, NLOSSES);
	m = page(doc, 1, false);
	q = vj_array(m, "quality");
	CHECK(q && json_object_array_length(q) == NLOSSES);
	CHECK_EQ_INT(cli(doc, 1, false), 0);
	for (i = 0; i < NLOSSES; i++) {
		const char *label = label_of(loss_names[i]);
		bool in_page = false;

		CHECK(label != NULL);
		if (!label)
			continue;
		snprintf(line, sizeof(line), "  %s = %zu: %s\n", loss_names[i], 100 + i, label);
		CHECK(strstr(out, line) != NULL);
		for (k = 0; q && k < json_object_array_length(q); k++) {
			struct json_object *e = json_object_array_get_idx(q, k);

			in_page |= !strcmp(json_object_get_string(json_object_array_get_idx(e, 0)),
					   loss_names[i]) &&
				   json_object_get_int(json_object_array_get_idx(e, 1)) ==
					   (int)(100 + i) &&
				   !strcmp(json_object_get_string(json_object_array_get_idx(e, 2)),
					   label);
		}
		CHECK(in_page);
	}
	/* Each export says them on its error stream, once each. */
	for (k = 0; k < 3; k++) {
		streams(&fo, &fe);
		CHECK_EQ_INT(export_write(doc, (enum export_format)k, "t.json", fo, fe), 0);
		fclose(fo);
		fclose(fe);
		for (i = 0; i < NLOSSES; i++) {
			snprintf(line, sizeof(line), " %s = %zu: %s\n", loss_names[i], 100 + i,
				 label_of(loss_names[i]));
			CHECK_EQ_INT(count(err, line), 1);
		}
	}
	json_object_put(m);
	json_object_put(doc);

	/* No counters (Scalene's profiles): nothing said anywhere. */
	doc = profile(false);
	CHECK_EQ_INT(cli(doc, 1, false), 0);
	CHECK(!strstr(out, "data lost"));
	m = page(doc, 1, false);
	CHECK(!vj_array(m, "quality") || json_object_array_length(vj_array(m, "quality")) == 0);
	streams(&fo, &fe);
	CHECK_EQ_INT(export_write(doc, EXPORT_FOLDED, "t.json", fo, fe), 0);
	fclose(fo);
	fclose(fe);
	CHECK(!err || !strstr(err, "data lost"));
	json_object_put(m);
	json_object_put(doc);
}

/* The frames of Scalene's `stacks` strings: what the page draws is what the
 * folded export writes, the one ';' Scalene ends a frame with dropped. */
static void test_same_legacy_frames(void)
{
	static const struct {
		const char *func, *file;
		int line;
	} want[] = {
		{ "<module>", "/app/main.py", 1 },
		{ "f", "/app/main.py", 6 },
		{ "g:9;", "/app/a b.py", 0 }, /* a second ';' is the name's */
		{ "bare", "", 0 },
	};
	struct json_object *doc = profile(false), *m, *frames;
	char label[128];
	FILE *fo, *fe;
	size_t i, k;

	m = page(doc, 1, false);
	frames = vj_array(m, "frames");
	CHECK(frames && json_object_array_length(frames) == sizeof(want) / sizeof(want[0]));
	streams(&fo, &fe);
	CHECK_EQ_INT(export_write(doc, EXPORT_FOLDED, "t.json", fo, fe), 0);
	fclose(fo);
	fclose(fe);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool in_page = false;

		for (k = 0; frames && k < json_object_array_length(frames); k++) {
			struct json_object *fr = json_object_array_get_idx(frames, k);

			in_page |= !strcmp(json_object_get_string(json_object_array_get_idx(fr, 1)),
					   want[i].func) &&
				   !strcmp(json_object_get_string(json_object_array_get_idx(fr, 2)),
					   want[i].file) &&
				   json_object_get_int(json_object_array_get_idx(fr, 3)) ==
					   want[i].line;
		}
		CHECK(in_page);
		/* Folded: ';' is its separator, written '?' in a name. */
		snprintf(label, sizeof(label), "%s (%s:%d)", want[i].func, want[i].file,
			 want[i].line);
		for (k = 0; label[k] && label[k] != ' '; k++)
			label[k] = label[k] == ';' ? '?' : label[k];
		CHECK(out && strstr(out, label));
	}
	CHECK(out && strstr(out, "<module> (/app/main.py:1);f (/app/main.py:6) 3\n"));
	CHECK(out && strstr(out, "g:9? (/app/a b.py:0);bare (:0) 2\n"));
	json_object_put(m);
	json_object_put(doc);
}

int main(void)
{
	RUN_TEST(test_same_lines);
	RUN_TEST(test_same_losses);
	RUN_TEST(test_same_legacy_frames);
	free(out);
	free(err);
	return test_summary("view_agree");
}
