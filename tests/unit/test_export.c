/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/view/export.c without root: small documents exported to memory and read
 * back.  folded is compared as text; speedscope is parsed back with json-c;
 * pprof is gunzipped with zlib and decoded with protobuf-c (the end-to-end
 * suite decodes it with independent readers: pprof's own profile.proto and
 * go tool pprof).  Then documents of the wrong shape: refused with one line,
 * or exported with what is usable, never a crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <zlib.h>

#include "proto/pprof.pb-c.h"
#include "testlib.h"
#include "utf8check.h"
#include "view/view.h"

static char *out, *err;
static size_t outlen, errlen;

static int run(const char *json, enum export_format fmt)
{
	struct json_object *doc = json_tokener_parse(json);
	FILE *fo, *fe;
	int ret;

	test_memstreams(&out, &outlen, &err, &errlen, &fo, &fe);
	ret = export_write(doc, fmt, "/some/dir/p.json", fo, fe);
	fclose(fo);
	fclose(fe);
	json_object_put(doc);
	return ret;
}

#define PY(name, file, line)                                                                  \
	"{\"kind\":\"py\",\"display_name\":\"" name "\",\"filename_or_module\":\"" file "\"," \
	"\"line\":" #line ",\"ip\":null,\"offset\":null}"
#define NATIVE(name, module)                                                                  \
	"{\"kind\":\"native\",\"display_name\":\"" name "\",\"filename_or_module\":\"" module \
	"\",\"line\":null,\"ip\":null,\"offset\":null}"

/* Two stacks that fold into one line, a third, and a memory stack. */
/* clang-format off */
static const char *doc_basic =
	"{\"combined_stacks\":["
	"[[" PY("main", "/a.py", 10) "," PY("f", "/a.py", 3) ","
	     NATIVE("memcpy", "/lib/libc.so.6") "],4],"
	"[[" PY("main", "/a.py", 10) "," PY("f", "/a.py", 3) ","
	     NATIVE("memcpy", "/lib/libc.so.6") "],2],"
	"[[" PY("main", "/a.py", 11) "," NATIVE("+0x1f", "/lib/libz.so.1") "],1]],"
	"\"memory_stacks\":[[[" PY("main", "/a.py", 12) "],2.5]],"
	"\"start_time_absolute\":1700000000.5,\"elapsed_time_sec\":2.25}";
/* clang-format on */

static void test_folded(void)
{
	CHECK_EQ_INT(run(doc_basic, EXPORT_FOLDED), 0);
	CHECK_EQ_STR(out, "main (/a.py:10);f (/a.py:3);memcpy 6\n"
			  "main (/a.py:11);libz.so.1+0x1f 1\n");
	/* Memory is not folded, and the user is told where it is. */
	CHECK(err && strstr(err, "CPU stacks only"));
}

static void test_folded_hostile(void)
{
	/* clang-format off */
	const char *doc = "{\"combined_stacks\":[[["
		PY("a;b\\nc\\u0001\\u0085d\\t", "/x;y.py", 2) "," NATIVE("", "") "],3]]}";
	/* clang-format on */

	CHECK_EQ_INT(run(doc, EXPORT_FOLDED), 0);
	CHECK_EQ_STR(out, "a?b?c??d? (/x?y.py:2);[unknown] 3\n");
	CHECK(utf8_valid(out, outlen));
}

static void test_speedscope(void)
{
	struct json_object *d, *p, *frames, *s;

	CHECK_EQ_INT(run(doc_basic, EXPORT_SPEEDSCOPE), 0);
	d = json_tokener_parse(out);
	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(json_object_object_get_ex(d, "$schema", &s));
	CHECK_EQ_STR(json_object_get_string(s),
		     "https://www.speedscope.app/file-format-schema.json");
	CHECK(json_object_object_get_ex(d, "name", &s));
	CHECK_EQ_STR(json_object_get_string(s), "p.json");
	CHECK(json_object_object_get_ex(d, "shared", &s));
	CHECK(json_object_object_get_ex(s, "frames", &frames));
	/* main:10, f:3, memcpy, main:11, libz+0x1f, main:12 */
	CHECK_EQ_INT(json_object_array_length(frames), 6);
	CHECK(json_object_object_get_ex(d, "profiles", &p));
	CHECK_EQ_INT(json_object_array_length(p), 2);
	s = json_object_array_get_idx(p, 0);
	CHECK_EQ_STR(json_object_get_string(json_object_object_get(s, "unit")), "none");
	CHECK_EQ_INT(json_object_get_int64(json_object_object_get(s, "endValue")), 7);
	s = json_object_array_get_idx(p, 1);
	CHECK_EQ_STR(json_object_get_string(json_object_object_get(s, "unit")), "bytes");
	CHECK_EQ_INT(json_object_get_int64(json_object_object_get(s, "endValue")),
		     5 * 1024 * 1024 / 2);
	json_object_put(d);
}

/* The decoded pprof export of the last run. */
static Perftools__Profiles__Profile *unpack(void)
{
	static uint8_t raw[1 << 20];
	z_stream zs;
	int zr;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return NULL;
	zs.next_in = (Bytef *)out;
	zs.avail_in = outlen;
	zs.next_out = raw;
	zs.avail_out = sizeof(raw);
	zr = inflate(&zs, Z_FINISH);
	inflateEnd(&zs);
	if (zr != Z_STREAM_END)
		return NULL;
	return perftools__profiles__profile__unpack(NULL, zs.total_out, raw);
}

static const char *str(Perftools__Profiles__Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "(out of range)";
}

static void test_pprof(void)
{
	Perftools__Profiles__Profile *p;
	Perftools__Profiles__Sample *s;
	size_t i;

	CHECK_EQ_INT(run(doc_basic, EXPORT_PPROF), 0);
	p = unpack();
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ_STR(str(p, 0), "");
	CHECK_EQ_INT(p->n_sample_type, 2);
	CHECK_EQ_STR(str(p, p->sample_type[0]->type), "samples");
	CHECK_EQ_STR(str(p, p->sample_type[0]->unit), "count");
	CHECK_EQ_STR(str(p, p->sample_type[1]->type), "alloc_space");
	CHECK_EQ_STR(str(p, p->sample_type[1]->unit), "bytes");
	CHECK_EQ_STR(str(p, p->default_sample_type), "samples");
	/* No period stated in this document: none written. */
	CHECK(p->period_type == NULL && p->period == 0);
	CHECK_EQ_INT(p->time_nanos, 1700000000500000000LL);
	CHECK_EQ_INT(p->duration_nanos, 2250000000LL);
	CHECK_EQ_INT(p->n_sample, 4);
	for (i = 0; i < p->n_location; i++)
		CHECK_EQ_INT(p->location[i]->id, i + 1);
	/* main, f, memcpy, libz+0x1f: main:10, main:11 and main:12 share one. */
	CHECK_EQ_INT(p->n_function, 4);
	s = p->sample[0];
	CHECK_EQ_INT(s->n_value, 2);
	CHECK_EQ_INT(s->value[0], 4);
	CHECK_EQ_INT(s->value[1], 0);
	CHECK_EQ_INT(s->n_location_id, 3);
	if (s->n_location_id == 3) {
		/* Leaf first: memcpy, f, main. */
		Perftools__Profiles__Location *leaf = p->location[s->location_id[0] - 1];
		Perftools__Profiles__Location *root = p->location[s->location_id[2] - 1];

		CHECK_EQ_STR(str(p, p->function[leaf->line[0]->function_id - 1]->name), "memcpy");
		CHECK_EQ_STR(str(p, p->function[leaf->line[0]->function_id - 1]->filename),
			     "/lib/libc.so.6");
		CHECK_EQ_STR(str(p, p->function[root->line[0]->function_id - 1]->name), "main");
		CHECK_EQ_INT(root->line[0]->line, 10);
	}
	s = p->sample[3];
	CHECK_EQ_INT(s->value[0], 0);
	CHECK_EQ_INT(s->value[1], 5 * 1024 * 1024 / 2);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* The profile of export_pprof_kinds(doc's stacks, kinds), unpacked (NULL:
 * failed). */
static Perftools__Profiles__Profile *unpack_kinds(struct json_object *doc, unsigned kinds)
{
	struct export_src *src;
	uint8_t *buf;
	size_t len;
	int r;

	if (export_src_read(doc, &src))
		return NULL;
	r = export_pprof_kinds(src, kinds, &buf, &len);
	export_src_free(src);
	if (r)
		return NULL;
	free(out);
	out = (char *)buf;
	outlen = len;
	return unpack();
}

/* A pprof of some kinds only (a backend that names a profile after its
 * kind): CPU has the CPU types and stacks and the period; memory has
 * alloc_space and its stacks, no period; a kind the profile lacks is
 * ENODATA. */
static void test_pprof_kinds(void)
{
	struct json_object *doc = json_tokener_parse(doc_basic), *facts = json_object_new_object();
	Perftools__Profiles__Profile *p;
	struct export_src *src;
	uint8_t *buf;
	size_t len;

	json_object_object_add(facts, "sampling_period_ns", json_object_new_int64(1000000));
	json_object_object_add(doc, "scalene_bpf", facts);
	p = unpack_kinds(doc, EXPORT_KIND_CPU);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->n_sample_type, 1);
		CHECK_EQ_STR(str(p, p->sample_type[0]->type), "samples");
		CHECK_EQ_STR(str(p, p->default_sample_type), "samples");
		CHECK_EQ_INT(p->n_sample, 3);
		CHECK_EQ_INT(p->period, 1000000);
		CHECK(p->period_type != NULL);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	p = unpack_kinds(doc, EXPORT_KIND_MEMORY);
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->n_sample_type, 1);
		CHECK_EQ_STR(str(p, p->sample_type[0]->type), "alloc_space");
		CHECK_EQ_INT(p->default_sample_type, 0);
		CHECK(p->period_type == NULL && p->period == 0);
		CHECK_EQ_INT(p->n_sample, 1);
		if (p->n_sample == 1)
			CHECK_EQ_INT(p->sample[0]->value[0], 5 * 1024 * 1024 / 2);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	CHECK_EQ_INT(export_src_read(doc, &src), 0);
	buf = (uint8_t *)"x";
	CHECK_EQ_INT(export_pprof_kinds(src, EXPORT_KIND_GPU, &buf, &len), -ENODATA);
	CHECK(buf == NULL && len == 0);
	/* All kinds from the stacks read once: the bytes of --format pprof. */
	CHECK_EQ_INT(export_pprof_kinds(src, EXPORT_KIND_ALL, &buf, &len), 0);
	CHECK_EQ_INT(run(json_object_to_json_string(doc), EXPORT_PPROF), 0);
	CHECK(len == outlen && memcmp(buf, out, len) == 0);
	free(buf);
	export_src_free(src);
	json_object_put(doc);
	doc = json_object_new_array();
	src = (struct export_src *)1;
	CHECK_EQ_INT(export_src_read(doc, &src), -EINVAL);
	CHECK(src == NULL);
	json_object_put(doc);
}

/* GPU stacks (scalene_bpf.gpu_stacks, seconds): a pprof sample type of
 * their own and a speedscope profile; not in folded, which says so. */
/* clang-format off */
static const char *doc_gpu =
	"{\"combined_stacks\":[[[" PY("main", "/a.py", 10) "],3]],"
	"\"scalene_bpf\":{\"gpu_stacks\":["
	"[[" PY("main", "/a.py", 10) "," PY("train", "/a.py", 4) "],0.75],"
	"[[" PY("main", "/a.py", 11) "],0.25]]}}";
/* clang-format on */

static void test_gpu_stacks(void)
{
	Perftools__Profiles__Profile *p;
	struct json_object *doc, *profiles, *g;

	CHECK_EQ_INT(run(doc_gpu, EXPORT_PPROF), 0);
	p = unpack();
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ_INT(p->n_sample_type, 2);
	CHECK_EQ_STR(str(p, p->sample_type[1]->type), "gpu_time");
	CHECK_EQ_STR(str(p, p->sample_type[1]->unit), "nanoseconds");
	CHECK_EQ_INT(p->n_sample, 3);
	if (p->n_sample == 3) {
		CHECK_EQ_INT(p->sample[0]->value[0], 3);
		CHECK_EQ_INT(p->sample[0]->value[1], 0);
		CHECK_EQ_INT(p->sample[1]->value[0], 0);
		CHECK_EQ_INT(p->sample[1]->value[1], 750000000);
		CHECK_EQ_INT(p->sample[1]->n_location_id, 2);
		CHECK_EQ_INT(p->sample[2]->value[1], 250000000);
	}
	perftools__profiles__profile__free_unpacked(p, NULL);

	CHECK_EQ_INT(run(doc_gpu, EXPORT_SPEEDSCOPE), 0);
	doc = json_tokener_parse(out);
	profiles = json_object_object_get(doc, "profiles");
	CHECK(json_object_array_length(profiles) == 2);
	g = json_object_array_get_idx(profiles, 1);
	CHECK_EQ_STR(json_object_get_string(json_object_object_get(g, "name")), "GPU device time");
	CHECK_EQ_STR(json_object_get_string(json_object_object_get(g, "unit")), "nanoseconds");
	CHECK_EQ_INT(json_object_get_int64(json_object_object_get(g, "endValue")), 1000000000);
	json_object_put(doc);

	CHECK_EQ_INT(run(doc_gpu, EXPORT_FOLDED), 0);
	CHECK_EQ_STR(out, "main (/a.py:10) 3\n");
	CHECK(strstr(err, "the GPU stacks are in the speedscope and pprof exports") != NULL);
	/* GPU stacks alone: pprof and speedscope, not folded. */
	CHECK_EQ_INT(run("{\"scalene_bpf\":{\"gpu_stacks\":[[[],0.5]]}}", EXPORT_PPROF), 0);
	CHECK(run("{\"scalene_bpf\":{\"gpu_stacks\":[[[],0.5]]}}", EXPORT_FOLDED) < 0);
	CHECK(strstr(err, "only memory or GPU stacks") != NULL);
}

/* Ours: `stacks` beside combined_stacks states each stack's time. */
/* clang-format off */
static const char *doc_ours =
	"{\"combined_stacks\":["
	"[[" PY("main", "/a.py", 10) "," NATIVE("sleep", "/lib/libc.so.6") "],1],"
	"[[" PY("main", "/a.py", 11) "],3]],"
	"\"stacks\":["
	"[[\"/a.py main:10;\"],{\"count\":1,\"cpu_samples\":0.75,\"python_time\":0.25,"
	"\"c_time\":0.375}],"
	"[[\"/a.py main:11;\"],{\"count\":3,\"cpu_samples\":0.25,\"python_time\":0.25,"
	"\"c_time\":0}]],"
	"\"files\":{\"/a.py\":{\"functions\":[{\"line\":\"main\",\"lineno\":9}]}},"
	"\"scalene_bpf\":{\"sampling_rate_hz\":997.0000269190007,\"total_sampled_s\":2}}";
/* clang-format on */

static void test_pprof_time(void)
{
	Perftools__Profiles__Profile *p;

	CHECK_EQ_INT(run(doc_ours, EXPORT_PPROF), 0);
	p = unpack();
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ_INT(p->n_sample_type, 5);
	CHECK_EQ_STR(str(p, p->sample_type[1]->type), "time");
	CHECK_EQ_STR(str(p, p->sample_type[1]->unit), "nanoseconds");
	CHECK_EQ_STR(str(p, p->sample_type[2]->type), "python_time");
	CHECK_EQ_STR(str(p, p->sample_type[3]->type), "native_time");
	CHECK_EQ_STR(str(p, p->sample_type[4]->type), "system_time");
	CHECK_EQ_STR(str(p, p->sample_type[4]->unit), "nanoseconds");
	CHECK_EQ_INT(p->sample[0]->value[1], 1500000000LL);
	/* 0.25 and 0.375 of 2 s; the rest, 0.125 of it, is system time. */
	CHECK_EQ_INT(p->sample[0]->value[2], 500000000LL);
	CHECK_EQ_INT(p->sample[0]->value[3], 750000000LL);
	CHECK_EQ_INT(p->sample[0]->value[4], 250000000LL);
	CHECK_EQ_INT(p->sample[1]->value[1], 500000000LL);
	CHECK_EQ_INT(p->sample[1]->value[2], 500000000LL);
	CHECK_EQ_INT(p->sample[1]->value[3], 0);
	CHECK_EQ_INT(p->sample[1]->value[4], 0);
	CHECK(p->period_type != NULL);
	if (p->period_type)
		CHECK_EQ_STR(str(p, p->period_type->type), "cpu");
	CHECK_EQ_INT(p->period, 1003009);
	CHECK_EQ_INT(p->function[0]->start_line, 9);
	perftools__profiles__profile__free_unpacked(p, NULL);

	CHECK_EQ_INT(run(doc_ours, EXPORT_SPEEDSCOPE), 0);
	CHECK(strstr(out, "\"unit\":\"nanoseconds\"") != NULL);
	CHECK(strstr(out, "\"weights\":[1500000000,500000000]") != NULL);
}

/* The pprof export of doc_ours with facts as its scalene_bpf, unpacked
 * (NULL: failed). */
static Perftools__Profiles__Profile *pprof_with_facts(const char *facts)
{
	char doc[2048];
	const char *tail = strstr(doc_ours, "\"scalene_bpf\"");

	snprintf(doc, sizeof(doc), "%.*s\"scalene_bpf\":%s}", (int)(tail - doc_ours), doc_ours,
		 facts);
	if (run(doc, EXPORT_PPROF))
		return NULL;
	return unpack();
}

/* The period as profiles state it now: the rate as given (997, whose
 * 1e9 / rate is not whole) and the timers' period beside it. */
static void test_pprof_period_stated(void)
{
	Perftools__Profiles__Profile *p = pprof_with_facts(
		"{\"sampling_rate_hz\":997,\"sampling_period_ns\":1003009,\"total_sampled_s\":2}");

	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ_INT(p->period, 1003009);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* GIL wait as the profile states it per stack (scalene_bpf.
 * gil_wait_stacks): a sample type of its own, part of system time, at most
 * all of it; pairs that name no stack or no time are left out, and a
 * profile with none has no such type. */
static void test_pprof_gil_wait(void)
{
	/* Stack 0 has 0.25 s of system time: 0.1 s of it GIL wait; stack 1
	 * has none, so its 0.2 s is cut to 0; 7 and "x" name no stack. */
	Perftools__Profiles__Profile *p =
		pprof_with_facts("{\"sampling_rate_hz\":997,\"total_sampled_s\":2,"
				 "\"gil_wait_stacks\":[[0,0.1],[1,0.2],[7,1],[\"x\",1],[0]]}");

	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ_INT(p->n_sample_type, 6);
	CHECK_EQ_STR(str(p, p->sample_type[5]->type), "gil_wait_time");
	CHECK_EQ_STR(str(p, p->sample_type[5]->unit), "nanoseconds");
	CHECK_EQ_INT(p->sample[0]->value[4], 250000000LL);
	CHECK_EQ_INT(p->sample[0]->value[5], 100000000LL);
	CHECK_EQ_INT(p->sample[1]->value[5], 0);
	perftools__profiles__profile__free_unpacked(p, NULL);

	p = pprof_with_facts("{\"sampling_rate_hz\":997,\"total_sampled_s\":2,"
			     "\"gil_wait_stacks\":[]}");
	CHECK(p != NULL);
	if (p) {
		CHECK_EQ_INT(p->n_sample_type, 5);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
}

/* `stacks` that do not match combined_stacks: samples only. */
static void test_no_time_when_stacks_differ(void)
{
	char *doc = strdup(doc_ours), *p = strstr(doc, "main:11;");

	p[1] = 'x'; /* "/a.py mxin:11;": another function */
	CHECK_EQ_INT(run(doc, EXPORT_SPEEDSCOPE), 0);
	CHECK(strstr(out, "\"unit\":\"none\"") != NULL);
	free(doc);
}

static void test_stacks_fallback(void)
{
	const char *doc = "{\"combined_stacks\":[],\"stacks\":["
			  "[[\"/my dir/a.py <module>:3;\",\"/my dir/a.py f:7;\"],{\"count\":5}],"
			  "[[\"odd\"],{\"count\":1}]]}";

	CHECK_EQ_INT(run(doc, EXPORT_FOLDED), 0);
	CHECK_EQ_STR(out, "<module> (/my dir/a.py:3);f (/my dir/a.py:7) 5\nodd (:0) 1\n");
}

/* One line to err, -EINVAL. */
static void check_refused(const char *doc, enum export_format fmt, const char *msg)
{
	CHECK_EQ_INT(run(doc, fmt), -EINVAL);
	CHECK(err && strstr(err, msg));
	CHECK(err && strchr(err, '\n') == err + errlen - 1);
}

static void test_refused(void)
{
	static const char *const no_stacks[] = {
		"{}",
		"{\"combined_stacks\":5,\"stacks\":{},\"memory_stacks\":\"x\"}",
		"{\"combined_stacks\":[[1,2,3],\"x\",[[],-4],[[],\"7\"],[{},2],[[],0]]}",
		"{\"stacks\":[[[\"a b:1;\"],{\"count\":0}],[[\"a b:1;\"],5]]}",
		"{\"memory_stacks\":[[[],0],[[],-1],[5,5]]}",
	};
	size_t i;
	int f;

	for (f = EXPORT_FOLDED; f <= EXPORT_PPROF; f++) {
		check_refused("[1]", f, "not a profile");
		check_refused("\"x\"", f, "not a profile");
		for (i = 0; i < sizeof(no_stacks) / sizeof(no_stacks[0]); i++)
			check_refused(no_stacks[i], f, "no stacks in this profile");
	}
	check_refused("{\"memory_stacks\":[[[],1]]}", EXPORT_FOLDED, "only memory or GPU stacks");
}

/* Wrong types everywhere: what is usable is exported, bounded. */
static void test_wrong_types(void)
{
	const char *doc =
		"{\"combined_stacks\":["
		"[[5,null,{\"kind\":7,\"display_name\":[],\"filename_or_module\":{},\"line\":\"9\"}"
		","
		"{\"kind\":\"native\",\"display_name\":3,\"ip\":-5,\"offset\":2.5}],2],"
		"[[],1e300],"
		"[[{\"kind\":\"native\",\"display_name\":\"\",\"filename_or_module\":\"\","
		"\"ip\":18446744073709551615}],1]],"
		"\"memory_stacks\":[[[{}],1e300]],"
		"\"scalene_bpf\":{\"sampling_rate_hz\":\"997\",\"total_sampled_s\":[1]},"
		"\"start_time_absolute\":1e300,\"elapsed_time_sec\":-5,"
		"\"files\":{\"\":{\"functions\":[{\"line\":\"[unknown]\",\"lineno\":\"x\"},5]}}}";
	Perftools__Profiles__Profile *p;
	struct json_object *d;

	CHECK_EQ_INT(run(doc, EXPORT_FOLDED), 0);
	CHECK_EQ_STR(out, "0xffffffffffffffff 1\n"
			  "[unknown] 1000000000000000000\n"
			  "[unknown];[unknown];[unknown] (:0);0x0 2\n");
	CHECK_EQ_INT(run(doc, EXPORT_SPEEDSCOPE), 0);
	d = json_tokener_parse(out);
	CHECK(d != NULL);
	json_object_put(d);
	CHECK_EQ_INT(run(doc, EXPORT_PPROF), 0);
	p = unpack();
	CHECK(p != NULL);
	if (p) {
		CHECK(p->period_type == NULL);
		CHECK_EQ_INT(p->time_nanos, 0);
		CHECK_EQ_INT(p->duration_nanos, 0);
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
}

int main(void)
{
	RUN_TEST(test_folded);
	RUN_TEST(test_folded_hostile);
	RUN_TEST(test_speedscope);
	RUN_TEST(test_pprof);
	RUN_TEST(test_pprof_time);
	RUN_TEST(test_pprof_kinds);
	RUN_TEST(test_pprof_gil_wait);
	RUN_TEST(test_pprof_period_stated);
	RUN_TEST(test_gpu_stacks);
	RUN_TEST(test_no_time_when_stacks_differ);
	RUN_TEST(test_stacks_fallback);
	RUN_TEST(test_refused);
	RUN_TEST(test_wrong_types);
	free(out);
	free(err);
	return test_summary("export");
}
