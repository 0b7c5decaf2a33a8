/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/view/hostindex.c: the index of a system-wide run (DIR/index.json), which
 * is untrusted input.  A good document is read with every field; a field of
 * the wrong type, a required field missing, an array past its bound or
 * another major version refuses the index with a message naming the field;
 * strings come out as valid UTF-8 without control characters; a profile
 * name that could leave the directory is refused for that process only.
 * Then the host's terminal view and page built from it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "view/hostindex.h"
#include "testlib.h"
#include "utf8check.h"
#include "view/view.h"

static char *err;
static size_t errlen;

static const char good[] =
	"{\"scalene_bpf_index\": 1, \"host\": \"myhost\", \"kernel\": \"6.18.0\","
	" \"start_time_absolute\": 1764186000.5, \"elapsed_time_sec\": 12.3,"
	" \"sampling_rate_hz\": 997,"
	" \"filters\": {\"pid\": [], \"comm\": [\"python3\"], \"uid\": [], \"exclude_pid\": []},"
	" \"processes\": ["
	"  {\"pid\": 4242, \"ns_pid\": 7, \"ppid\": 1, \"uid\": 1000, \"comm\": \"python3\","
	"   \"cmdline\": [\"python3\", \"app.py\", \"--port\", \"80\"], \"python\": \"3.12.1\","
	"   \"profile\": \"4242-python3.json\", \"started_s\": 0.0, \"exited\": true,"
	"   \"exit_code\": 0, \"cpu_s\": 3.21, \"python_s\": 2.0, \"native_s\": 1.0,"
	"   \"system_s\": 0.21, \"samples\": 3210, \"await_s\": 1.5, \"peak_rss_mb\": 45.2,"
	"   \"not_profiled\": null},"
	"  {\"pid\": 555, \"ns_pid\": 555, \"comm\": \"python3.8\", \"cmdline\": [],"
	"   \"python\": null, \"profile\": null, \"exited\": false,"
	"   \"not_profiled\": \"Python 3.8 is not supported\"},"
	"  {\"pid\": 77, \"comm\": \"worker\", \"cmdline\": [\"python3\", \"w.py\"],"
	"   \"python\": \"3.11.7\", \"profile\": \"77-worker.json\", \"exited\": false,"
	"   \"cpu_s\": 5.5, \"python_s\": 5, \"native_s\": 0.5, \"system_s\": 0,"
	"   \"samples\": 5500, \"peak_rss_mb\": null, \"not_profiled\": null}"
	" ],"
	" \"not_profiled\": {\"not_python\": 12, \"unsupported\": 1, \"filtered\": 3,"
	"  \"table_full\": 0},"
	" \"warnings\": [\"ring buffer full twice\"]}";

static struct host_index *parse(const char *text)
{
	struct host_index *hi;
	FILE *fe;

	free(err);
	err = NULL;
	fe = open_memstream(&err, &errlen);
	hi = host_index__parse(text, strlen(text), "d/index.json", fe);
	fclose(fe);
	return hi;
}

/* good with one process field (or a top-level one: proc < 0) set to the
 * JSON text value, or removed when value is NULL; parsed. */
static struct host_index *parse_with(int proc, const char *key, const char *value)
{
	struct json_object *doc = json_tokener_parse(good), *o = doc;
	struct host_index *hi;

	if (proc >= 0)
		o = json_object_array_get_idx(json_object_object_get(doc, "processes"), proc);
	if (value)
		json_object_object_add(o, key, json_tokener_parse(value));
	else
		json_object_object_del(o, key);
	/* json_tokener_parse gives NULL for "null": the key is then null. */
	hi = parse(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	return hi;
}

static void test_good(void)
{
	struct host_index *hi = parse(good);
	const struct host_proc *p;

	CHECK(hi);
	if (!hi)
		return;
	CHECK_EQ_INT(hi->version, 1);
	CHECK_EQ_STR(hi->host, "myhost");
	CHECK_EQ_STR(hi->kernel, "6.18.0");
	CHECK(hi->elapsed_s == 12.3 && hi->rate_hz == 997 && hi->start_time == 1764186000.5);
	CHECK_EQ_INT(hi->nprocs, 3);
	CHECK_EQ_INT(hi->nprofiled, 2);
	/* Ranked by cpu_s again, whatever the index's order; not profiled last. */
	CHECK_EQ_INT(hi->procs[0].pid, 77);
	CHECK_EQ_INT(hi->procs[1].pid, 4242);
	CHECK_EQ_INT(hi->procs[2].pid, 555);
	p = &hi->procs[1];
	CHECK_EQ_INT(p->ns_pid, 7);
	CHECK_EQ_INT(p->ppid, 1);
	CHECK_EQ_INT(p->uid, 1000);
	CHECK_EQ_STR(p->command, "python3 app.py --port 80");
	CHECK_EQ_STR(p->python, "3.12.1");
	CHECK_EQ_STR(p->profile, "4242-python3.json");
	CHECK(p->exited && p->has_exit_code && p->exit_code == 0);
	CHECK(p->cpu_s == 3.21 && p->python_s == 2.0 && p->native_s == 1.0 && p->system_s == 0.21 &&
	      p->samples == 3210 && p->peak_rss_mb == 45.2 && p->await_s == 1.5);
	CHECK(!p->not_profiled);
	p = &hi->procs[0];
	CHECK_EQ_INT(p->ns_pid, 77); /* absent: the pid */
	CHECK_EQ_INT(p->ppid, -1);
	CHECK(p->peak_rss_mb < 0); /* null: unknown */
	CHECK(p->await_s < 0);	   /* absent: not measured */
	CHECK(!p->exited);
	p = &hi->procs[2];
	CHECK_EQ_STR(p->not_profiled, "Python 3.8 is not supported");
	CHECK_EQ_STR(p->command, "python3.8"); /* empty cmdline: comm */
	CHECK(!p->python && !p->profile);
	CHECK_EQ_INT(hi->ncounts, 4);
	CHECK_EQ_STR(hi->counts[0].reason, "not_python");
	CHECK(host_index_not_profiled(hi) == 16);
	CHECK(fabs(host_index_cpu_s(hi) - 8.71) < 1e-9);
	CHECK_EQ_INT(hi->nwarnings, 1);
	CHECK_EQ_STR(hi->warnings[0], "ring buffer full twice");
	host_index__free(hi);
	host_index__free(NULL);
}

/* Refused, with a message that names what and says why. */
static void refused(struct host_index *hi, const char *what)
{
	CHECK(!hi);
	host_index__free(hi);
	CHECK(err && strstr(err, what));
	if (err && !strstr(err, what))
		fprintf(stderr, "  message: %s  expected: %s\n", err, what);
	CHECK(err && utf8_valid(err, strlen(err)));
}

static void test_wrong_types_and_missing(void)
{
	refused(parse_with(-1, "host", "5"), "host is not a string");
	refused(parse_with(-1, "host", NULL), "host is missing");
	refused(parse_with(-1, "kernel", "[]"), "kernel is not a string");
	refused(parse_with(-1, "elapsed_time_sec", "\"12\""), "elapsed_time_sec is not a number");
	refused(parse_with(-1, "elapsed_time_sec", "-1"), "elapsed_time_sec is out of range");
	refused(parse_with(-1, "sampling_rate_hz", NULL), "sampling_rate_hz is missing");
	refused(parse_with(-1, "processes", "{}"), "processes is not an array");
	refused(parse_with(-1, "processes", NULL), "processes is missing");
	refused(parse_with(-1, "not_profiled", "[1]"), "not_profiled is not an object");
	refused(parse_with(-1, "not_profiled", "{\"x\": \"3\"}"), "not_profiled.x is not a number");
	refused(parse_with(-1, "not_profiled", "{\"x\": -3}"), "not_profiled.x is out of range");
	refused(parse_with(-1, "warnings", "[1]"), "warnings has an element that is not a string");
	refused(parse_with(-1, "filters", "3"), "filters is not an object");
	refused(parse_with(-1, "memory", "[]"), "memory is not an object");
	refused(parse_with(-1, "memory", "{\"hits_per_s\": 3}"), "memory.hits is missing");
	refused(parse_with(-1, "memory", "{\"hits\": 3, \"libc\": 1}"),
		"memory.libc is not an object");
	refused(parse_with(0, "pid", "\"4242\""), "processes[0].pid is not a number");
	refused(parse_with(0, "pid", "0"), "processes[0].pid is out of range");
	refused(parse_with(0, "pid", "1.5"), "processes[0].pid is not a whole number");
	refused(parse_with(0, "pid", "1e300"), "processes[0].pid is out of range");
	refused(parse_with(0, "pid", NULL), "processes[0].pid is missing");
	refused(parse_with(0, "comm", "null"), "processes[0].comm is null");
	refused(parse_with(0, "cmdline", "\"python3 app.py\""), "processes[0].cmdline is not an");
	refused(parse_with(0, "cmdline", "[1, 2]"), "processes[0].cmdline has an element");
	refused(parse_with(0, "python", "3.12"), "processes[0].python is not a string or null");
	refused(parse_with(0, "profile", "{}"), "processes[0].profile is not a string or null");
	refused(parse_with(0, "cpu_s", NULL), "processes[0].cpu_s is missing");
	refused(parse_with(0, "cpu_s", "true"), "processes[0].cpu_s is not a number");
	refused(parse_with(0, "samples", "-1"), "processes[0].samples is out of range");
	refused(parse_with(0, "exited", "1"), "processes[0].exited is not true or false");
	refused(parse_with(0, "exit_code", "\"0\""), "processes[0].exit_code is not a number");
	refused(parse_with(0, "await_s", "-2"), "processes[0].await_s is out of range");
	refused(parse_with(0, "peak_rss_mb", "\"big\""),
		"processes[0].peak_rss_mb is not a number");
	refused(parse_with(1, "not_profiled", "5"),
		"processes[1].not_profiled is not a string or null");
	refused(parse_with(-1, "processes", "[3]"), "processes[0] is not an object");
	refused(parse("[]"), "the document is not an object");
	refused(parse("{\"scalene_bpf_index\": 1"), "truncated JSON");
	refused(parse(""), "is empty");
	/* A process not profiled (good's second) may leave out its numbers
	 * and whether it exited; a profiled one may not (above). */
	{
		struct host_index *hi = parse_with(1, "exited", NULL);

		CHECK(hi);
		host_index__free(hi);
	}
}

/* --memory under --all: one line on what the probes counted and cost, the
 * same in the terminal and on the page; none without --memory. */
static void test_memory(void)
{
	struct host_index *hi =
		parse_with(-1, "memory",
			   "{\"mode\": \"uprobes\", \"hits\": 26498, \"hits_per_s\": 6160.9,"
			   " \"ns_per_hit_measured\": 1395.1, \"estimated_cost_cpu_percent\": 0.86,"
			   " \"libc\": {\"processes_probed\": 4, \"processes_not_probed\": 2}}");
	struct view_opts vo = { 1, false, 300, false };
	char text[320], *out = NULL;
	size_t outlen = 0;
	FILE *f;

	CHECK(hi);
	if (!hi)
		return;
	host_index_memory_text(hi, text, sizeof(text));
	CHECK_EQ_STR(text, "allocation uprobes fired 26498 times (6161/s), 1.40 us a hit: about "
			   "0.9% of one CPU; libc probed in 4 processes, 2 not (their native "
			   "allocations are not counted)");
	f = open_memstream(&out, &outlen);
	view_print_host_cli(hi, "d", f, &vo);
	fclose(f);
	CHECK(strstr(out, "memory: allocation uprobes fired 26498 times"));
	free(out);
	out = NULL;
	f = open_memstream(&out, &outlen);
	CHECK(view_write_host_html(hi, "d/index.html", f, stderr) == 0);
	fclose(f);
	CHECK(strstr(out, "\"memory\":\"allocation uprobes fired 26498 times"));
	free(out);
	host_index__free(hi);
	hi = parse_with(-1, "memory", "null");
	CHECK(hi && !hi->memory.on);
	if (hi) {
		host_index_memory_text(hi, text, sizeof(text));
		CHECK_EQ_STR(text, "");
	}
	host_index__free(hi);
}

static void test_versions(void)
{
	struct host_index *hi = parse_with(-1, "scalene_bpf_index", "1.3");

	CHECK(hi); /* a minor version of 1 */
	host_index__free(hi);
	refused(parse_with(-1, "scalene_bpf_index", "2"), "index format version 2");
	CHECK(err && strstr(err, "reads version 1"));
	refused(parse_with(-1, "scalene_bpf_index", "0"), "index format version 0");
	refused(parse_with(-1, "scalene_bpf_index", "\"1\""), "scalene_bpf_index is not a number");
	refused(parse_with(-1, "scalene_bpf_index", NULL), "scalene_bpf_index is missing");
}

static void test_huge_arrays(void)
{
	size_t n = HOST_INDEX_MAX_PROCS + 1, i;
	const char *head = "{\"scalene_bpf_index\": 1, \"host\": \"h\", \"kernel\": \"k\","
			   " \"elapsed_time_sec\": 1, \"sampling_rate_hz\": 1, \"processes\": [";
	size_t cap = strlen(head) + 3 * n + 8, len;
	char *doc = malloc(cap);

	if (!doc)
		return;
	len = (size_t)snprintf(doc, cap, "%s", head);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(doc + len, cap - len, "%s1", i ? "," : "");
	snprintf(doc + len, cap - len, "]}");
	refused(parse(doc), "processes has more entries than this reader takes");
	free(doc);
}

static void test_profile_names(void)
{
	static const char *const bad[] = { "\"../x.json\"",	 "\"a/b.json\"",
					   "\"/etc/passwd\"",	 "\"..\"",
					   "\".hidden.json\"",	 "\"\"",
					   "\"a\\u0000b.json\"", "\"a\\nb.json\"" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct host_index *hi = parse_with(0, "profile", bad[i]);
		const struct host_proc *p = hi ? &hi->procs[1] : NULL;

		/* The index stands; the process has no profile to open. */
		CHECK(hi);
		CHECK(p && p->pid == 4242 && !p->profile && p->profile_refused);
		host_index__free(hi);
	}
	CHECK(host_index_name_ok("4242-python3.json", 17));
	CHECK(host_index_name_ok("4242-pyth\xc3\xa9.json", 16));
	CHECK(!host_index_name_ok("4242-\xff.json", 10));
	CHECK(!host_index_name_ok("a..b", 4));
}

/* Raw bytes that are not UTF-8 and control characters in every string. */
static void test_strings_cleaned(void)
{
	const char *doc =
		"{\"scalene_bpf_index\": 1, \"host\": \"h\\u001b[2J\xff\", \"kernel\": \"k\\r\","
		" \"elapsed_time_sec\": 1, \"sampling_rate_hz\": 1, \"processes\": ["
		" {\"pid\": 9, \"comm\": \"c\\u0007\\u009b\", \"cmdline\": [\"a\xc0\\u0000\", "
		"\"b\"],"
		"  \"python\": \"3\\u001b\", \"profile\": null, \"exited\": false, \"cpu_s\": 1,"
		"  \"python_s\": 1, \"native_s\": 0, \"system_s\": 0, \"samples\": 1}],"
		" \"warnings\": [\"w\\u001b]0;x\\u0007\"]}";
	struct host_index *hi = parse(doc);
	const char *s[6];
	size_t i, k;

	CHECK(hi);
	if (!hi) {
		fprintf(stderr, "  %s", err ? err : "");
		return;
	}
	s[0] = hi->host, s[1] = hi->kernel, s[2] = hi->procs[0].comm;
	s[3] = hi->procs[0].command, s[4] = hi->procs[0].python, s[5] = hi->warnings[0];
	for (i = 0; i < 6; i++) {
		CHECK(utf8_valid(s[i], strlen(s[i])));
		for (k = 0; s[i][k]; k++)
			CHECK((unsigned char)s[i][k] >= 0x20 && s[i][k] != 0x7f);
		CHECK(!strstr(s[i], "\xc2\x9b"));
	}
	CHECK(!strncmp(hi->procs[0].command, "a", 1) && strstr(hi->procs[0].command, " b"));
	host_index__free(hi);
}

/* The terminal view: safe, no row wider than asked, the numbers of the
 * index; the page: the model cannot end its script element. */
static void test_views(void)
{
	static const int widths[] = { 40, 80, 100, 200 };
	struct host_index *hi = parse(good);
	char *out = NULL;
	size_t outlen = 0, i;
	FILE *f;

	CHECK(hi);
	if (!hi)
		return;
	for (i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		struct view_opts vo = { 1, false, widths[i], false };
		char *row, *save = NULL;

		f = open_memstream(&out, &outlen);
		CHECK(view_print_host_cli(hi, "d", f, &vo) == 0);
		fclose(f);
		CHECK(utf8_valid(out, outlen));
		for (row = strtok_r(out, "\n", &save); row; row = strtok_r(NULL, "\n", &save))
			CHECK((int)utf8_chars(row) <= widths[i]);
		free(out);
		out = NULL;
	}
	{
		struct view_opts vo = { 1, false, 200, false };

		f = open_memstream(&out, &outlen);
		view_print_host_cli(hi, "d/", f, &vo);
		fclose(f);
		CHECK(strstr(out, "processes: 2 profiled, 16 not profiled (not_python 12, "
				  "unsupported 1, filtered 3, table_full 0)"));
		CHECK(strstr(out, "  3.21 "));
		CHECK(strstr(out, "36.9%")); /* 3.21 of 8.71 s */
		CHECK(strstr(out, "Python 3.8 is not supported"));
		CHECK(strstr(out, "warning: ring buffer full twice"));
		/* The hottest with a profile, no doubled slash. */
		CHECK(strstr(out, "scalene-bpf view d/77-worker.json"));
		CHECK(strstr(out, "77-worker.json") < strstr(out, "4242-python3.json"));
		free(out);
		out = NULL;
	}
	{
		/* Too narrow for the processes' line and a command: each cut
		 * ends in the mark, within the width. */
		struct view_opts vo = { 1, false, 60, false };

		f = open_memstream(&out, &outlen);
		view_print_host_cli(hi, "d", f, &vo);
		fclose(f);
		CHECK(strstr(out, "processes: 2 profiled, 16 not profiled (not_python 12, "
				  "unsu\u2026\n"));
		CHECK(strstr(out, "python3 app.py --port 80") == NULL);
		CHECK(strstr(out, "python3 app.py --por\u2026\n") != NULL);
		free(out);
		out = NULL;
	}
	f = open_memstream(&out, &outlen);
	CHECK(view_write_host_html(hi, "d/<index>.html", f, stderr) == 0);
	fclose(f);
	CHECK(strstr(out, "\"kind\":\"host\""));
	CHECK(!strstr(out, "<index>"));
	CHECK(strstr(out, "Content-Security-Policy"));
	free(out);
	host_index__free(hi);
}

int main(void)
{
	RUN_TEST(test_good);
	RUN_TEST(test_wrong_types_and_missing);
	RUN_TEST(test_memory);
	RUN_TEST(test_versions);
	RUN_TEST(test_huge_arrays);
	RUN_TEST(test_profile_names);
	RUN_TEST(test_strings_cleaned);
	RUN_TEST(test_views);
	free(err);
	return test_summary("hostindex");
}
