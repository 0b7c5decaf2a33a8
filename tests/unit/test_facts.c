/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/model/facts.c and user/report/output_facts.c: a struct facts filled field by field
 * with values that tell the fields apart, written as JSON and read back.
 * Every object's keys are checked in order (readers and the tests of the
 * views rely on it), every value against the field it comes from, and the
 * keys that are written only sometimes both ways.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "testlib.h"
#include "model/facts.h"
#include "report/output.h"
#include "model/profile.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIB (1024.0 * 1024.0)

static struct json_object *get(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v)) {
		fprintf(stderr, "  no key %s\n", key);
		return NULL;
	}
	return v;
}

static bool has(struct json_object *o, const char *key)
{
	return o && json_object_object_get_ex(o, key, NULL);
}

static int64_t num(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	CHECK(v && json_object_is_type(v, json_type_int));
	return v ? json_object_get_int64(v) : -1;
}

static double dbl(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	CHECK(v && json_object_is_type(v, json_type_double));
	return v ? json_object_get_double(v) : -1;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	CHECK(v && json_object_is_type(v, json_type_string));
	return v ? json_object_get_string(v) : NULL;
}

static int boolean(struct json_object *o, const char *key)
{
	struct json_object *v = get(o, key);

	CHECK(v && json_object_is_type(v, json_type_boolean));
	return v ? json_object_get_boolean(v) : -1;
}

/* o's keys are exactly keys, in this order. */
static void check_keys(struct json_object *o, const char *const *keys, size_t n)
{
	size_t i = 0;

	CHECK(o && json_object_is_type(o, json_type_object));
	if (!o)
		return;
	json_object_object_foreach (o, key, v) {
		(void)v;
		if (i >= n) {
			fprintf(stderr, "  unexpected key %s\n", key);
			CHECK(i < n);
		} else if (strcmp(key, keys[i])) {
			fprintf(stderr, "  key %zu is %s, expected %s\n", i, key, keys[i]);
			CHECK_EQ_STR(key, keys[i]);
		}
		i++;
	}
	CHECK_EQ_INT(i, n);
}

#define CHECK_KEYS(o, ...)                                       \
	do {                                                     \
		static const char *const _k[] = { __VA_ARGS__ }; \
		check_keys((o), _k, ARRAY_SIZE(_k));             \
	} while (0)

static struct profile *new_profile(void)
{
	struct profile_filter f = { .program_dir = "/app" };

	return profile__new(&f);
}

static const char *const cmdline[] = { "python3", "app.py", "--flag" };

/* Every field set, each to a value of its own. */
static struct facts *full_facts(void)
{
	struct facts *f = facts__new();
	struct facts_async *a;
	struct facts_memory *m;
	int i;

	if (!f)
		return NULL;
	f->has_async = true;
	a = &f->async;
	a->await_ns = 1.5e9;
	a->await_outside_profiled_files_ns = 0.25e9;
	a->outside[0] = (struct await_outside){ .task = { "lib.py", "serve", 3, 9 },
						.waits = { "tasks.py", "sleep", 600, 650 },
						.ns = 0.05e9 };
	a->outside[1] = (struct await_outside){ .task = { "lib.py", "poll", 20, 25 },
						.waits = { "lib.py", "poll", 20, 25 },
						.ns = 0.125e9 };
	a->noutside = 2;
	a->outside_other_ns = 0.075e9;
	a->idle_loop_ns = 2e9;
	a->idle_loop_without_tasks_ns = 0.5e9;
	a->idle_after_last_snapshot_ns = 0.125e9;
	a->idle_before_layout_ns = 0.0625e9;
	a->loops = 2;
	a->polls = 101;
	a->idle_polls = 102;
	a->idle_unchecked_polls = 103;
	a->snapshots = 104;
	a->loop_snapshots = 98;
	a->snapshots_effective = 61.26;
	a->partial_snapshots = 105;
	a->sampled_snapshots = 106;
	a->task_sample = 256;
	a->task_set_unreadable = 107;
	a->tasks_read = 108;
	a->tasks_unreadable = 109;
	a->tasks_unstarted = 110;
	a->tasks_resumed = 111;
	a->max_tasks = 112;
	a->await_stacks_dropped = 113;
	a->reader_ns = 0.75e9;
	a->live_gap_max_ns = 40e6;
	a->reads = 114;
	a->read_calls = 115;
	a->layouts[0] = (struct facts_async_layout){ .pid = 41,
						     .python = "3.14.2",
						     .found = true,
						     .c_task = true,
						     .task_type = "_asyncio.Task",
						     .published = "/usr/lib/_asyncio.so",
						     .disagreements = "task_coro 128, probe 120" };
	a->layouts[1] = (struct facts_async_layout){ .pid = 42,
						     .python = "3.9.18",
						     .unavailable = "probe timed out" };
	a->nlayouts = 2;
	a->uvloop = true;
	f->rate_hz = 997;
	f->period_ns = 1003009;
	f->total_sampled_ns = 4e9;
	f->not_python_ns = 0.5e9;
	f->probe_check = true;
	f->gil_wait_ns = 0.25e9;
	f->unattributed_ns[UNATTR_NO_PYTHON_THREAD] = 1e9;
	f->unattributed_ns[UNATTR_UNREADABLE] = 2e9;
	f->unattributed_ns[UNATTR_NOT_PROFILED] = 3e9;
	f->unattributed_ns[UNATTR_NOT_DECORATED] = 0.5e9;
	f->native_threads_ns = 0.75e9;
	f->bpf.have_stats = true;
	for (i = 0; i < STAT_MAX; i++)
		f->bpf.stats[i] = 1000 + i;
	f->bpf.stats[STAT_SAMPLES] = 400;
	f->bpf.stats[STAT_SAMPLE_NS] = 4000;
	f->bpf.stats[STAT_PROBE_CHECKS] = 10;
	f->bpf.stats[STAT_PROBE_CHECK_NS] = 250;
	f->bpf.stats[STAT_WALKS] = 300;
	f->bpf.stats[STAT_WALK_READS] = 3300;
	f->bpf.stats[STAT_PROBE_SAMPLES] = 3;
	f->bpf.stats[STAT_PROBE_NS] = 3000000;
	f->bpf.stats[STAT_STOLEN_NS] = 7000000;
	f->bpf.stats[STAT_IDLE_NS] = 5000000000ULL;
	f->bpf.stats[STAT_MEM_EVENTS] = 8;
	f->bpf.stats[STAT_MEM_NS] = 100;
	f->bpf.stats[STAT_OFFCPU_EVENTS] = 50;
	f->bpf.stats[STAT_OFFCPU_NS] = 150000;
	f->bpf.offcpu_hook = "task_work";
	f->has_kernel = true;
	f->kernel.release = "5.10.0-32-amd64";
	f->kernel.build = "bounded";
	f->kernel.sleep_state = "task";
	f->kernel.offcpu_hook = "sys_exit";
	f->kernel.uprobes = "perf_event";
	f->kernel.nfallbacks = 2;
	f->kernel.fallbacks[0] = (struct loader_fallback){ "a", "b", "c" };
	f->kernel.fallbacks[1] = (struct loader_fallback){ "d", "e", "f" };
	f->bpf.have_runtime = true;
	f->bpf.run_ns = 900;
	f->bpf.run_cnt = 3;
	f->bpf.records = 201;
	f->bpf.bad_records = 202;
	f->bpf.frames_unreadable = 203;
	f->bpf.frames_from_copies = 17;
	f->bpf.frames_unread_in_bpf = 5;
	f->bpf.frames_unread_before_probe = 6;
	f->bpf.code_copies_unused = 2;
	f->bpf.code_cache_evictions = 204;
	f->bpf.code_probes_placed = 2;
	f->bpf.code_probes_before_exec = 1;
	f->bpf.code_probes_failed = 1;
	f->bpf.code_probe_why = "no probe on /usr/bin/python3.11's code-object deallocator: x";
	f->bpf.stacks_dropped = 205;
	f->bpf.truncated_stacks = 206;
	f->has_memory = true;
	f->has_inject = true;
	f->inject.requested = f->inject.attached = true;
	snprintf(f->inject.method, sizeof(f->inject.method), "remote_exec");
	f->inject.answer_s = 0.25;
	f->inject.attached_s = 3.5;
	snprintf(f->inject.detach, sizeof(f->inject.detach), "restored");
	f->inject.sample_bytes = 1048576;
	f->inject.python_bytes = 3 * MIB;
	f->inject.probe_hits = 77;
	m = &f->memory;
	m->python_processes = 3;
	m->sampler_loaded = 2;
	m->sampler_not_loaded = 1;
	m->sample_bytes = 1048576;
	m->copy_sample_bytes = 2097152;
	m->counted_processes = 4;
	m->alloc_bytes = 1 * MIB;
	m->python_bytes = 2 * MIB;
	m->copy_bytes = 3 * MIB;
	m->sampled_alloc_bytes = 4 * MIB;
	m->sampled_python_bytes = 5 * MIB;
	m->sampled_copy_bytes = 6 * MIB;
	m->profiled_alloc_bytes = 7 * MIB;
	m->profiled_python_bytes = 8 * MIB;
	m->profiled_net_growth_bytes = 9 * MIB;
	m->profiled_copy_bytes = 10 * MIB;
	m->profiled_native_threads_bytes = 11 * MIB;
	m->profiled_unattributed_bytes = 12 * MIB;
	m->profiled_not_python_bytes = 13 * MIB;
	m->records = 301;
	m->records_lost = 302;
	m->frees_of_unknown_blocks = 303;
	m->untracked_blocks = 304;
	m->table_overflows = 305;
	m->stale_frees = 306;
	m->foreign_allocator_processes = 5;
	m->native_allocations_unseen_processes = 6;
	m->python_allocator_unwrapped_processes = 7;
	f->threads = calloc(2, sizeof(*f->threads));
	if (f->threads) {
		f->threads[0] = (struct facts_thread){ .pid = 41,
						       .tid = 41,
						       .name = "MainThread",
						       .main_thread = true,
						       .samples = 401,
						       .cpu_ns = 1.5e9,
						       .blocked_ns = 0.5e9,
						       .gil_ns = 0.25e9 };
		f->threads[1] = (struct facts_thread){ .pid = 41, .tid = 43, .samples = 2 };
		f->nthreads = 2;
	}
	f->processes_retired = 501;
	f->threads_folded = 502;
	f->interpreters[0] = (struct facts_interpreter){ .pid = 41,
							 .version = "3.12.4",
							 .path = "/usr/bin/python3.12",
							 .gil_wait_measured = true };
	f->interpreters[1] = (struct facts_interpreter){
		.pid = 44,
		.version = "3.11.7",
		.path = "/usr/bin/python3.11",
		.static_build = true,
		.free_threaded = true,
		.gil_enabled = 1,
		.gil_wait_unmeasured = "no symbol _PyRuntime",
		.layout_from_interpreter = "frame.previous at 8 (table 16)",
	};
	f->ninterpreters = 2;
	CHECK_EQ_INT(facts__warn(f, "first warning"), 0);
	CHECK_EQ_INT(facts__warn(f, "second warning"), 0);
	f->has_decorator = true;
	f->decorator = (struct facts_decorator){ .provided = true,
						 .why = "/p/a.py decorates with @profile",
						 .functions = 3,
						 .bad_report_lines = 601,
						 .refused_past_limit = 602 };
	f->has_process = true;
	f->process = (struct facts_process){ .pid = 41,
					     .ns_pid = 7,
					     .ppid = 1,
					     .uid = 1000,
					     .comm = "python3",
					     .cmdline = cmdline,
					     .ncmdline = 3,
					     .ended = "exit" };
	return f;
}

static void check_async(struct json_object *a)
{
	struct json_object *l;

	CHECK_KEYS(a, "method", "await_s", "await_outside_profiled_files_s",
		   "await_outside_profiled_files", "idle_loop_s", "idle_loop_without_tasks_s",
		   "idle_after_last_snapshot_s", "idle_before_layout_s", "loops", "polls",
		   "idle_polls", "idle_unchecked_polls", "snapshots", "loop_snapshots",
		   "snapshots_effective", "partial_snapshots", "sampled_snapshots", "task_sample",
		   "task_set_unreadable", "tasks_read", "tasks_unreadable", "tasks_unstarted",
		   "tasks_resumed", "max_tasks", "await_stacks_dropped", "reader_s",
		   "poll_interval_max_ms", "reads", "read_calls", "layouts", "not_covered");
	CHECK(strstr(str(a, "method"), "task-set snapshots") != NULL);
	CHECK(dbl(a, "await_s") == 1.5);
	CHECK(dbl(a, "await_outside_profiled_files_s") == 0.25);
	/* Most first, the rest last. */
	l = get(a, "await_outside_profiled_files");
	CHECK_EQ_INT(json_object_array_length(l), 3);
	CHECK(!strcmp(str(get(json_object_array_get_idx(l, 0), "task_coroutine"), "function"),
		      "poll"));
	CHECK(dbl(json_object_array_get_idx(l, 0), "s") == 0.125);
	CHECK_EQ_INT(num(get(json_object_array_get_idx(l, 1), "waits_in"), "line"), 650);
	CHECK(!strcmp(str(get(json_object_array_get_idx(l, 1), "waits_in"), "file"), "tasks.py"));
	CHECK(dbl(json_object_array_get_idx(l, 2), "s") == 0.075);
	CHECK(json_object_get_boolean(get(json_object_array_get_idx(l, 2), "other")));
	CHECK(dbl(a, "idle_loop_s") == 2);
	CHECK(dbl(a, "idle_loop_without_tasks_s") == 0.5);
	CHECK(dbl(a, "idle_after_last_snapshot_s") == 0.125);
	CHECK(dbl(a, "idle_before_layout_s") == 0.0625);
	CHECK_EQ_INT(num(a, "loops"), 2);
	CHECK_EQ_INT(num(a, "polls"), 101);
	CHECK_EQ_INT(num(a, "idle_polls"), 102);
	CHECK_EQ_INT(num(a, "idle_unchecked_polls"), 103);
	CHECK_EQ_INT(num(a, "snapshots"), 104);
	CHECK(dbl(a, "snapshots_effective") == 61.3);
	CHECK_EQ_INT(num(a, "loop_snapshots"), 98);
	CHECK_EQ_INT(num(a, "partial_snapshots"), 105);
	CHECK_EQ_INT(num(a, "sampled_snapshots"), 106);
	CHECK_EQ_INT(num(a, "task_sample"), 256);
	CHECK_EQ_INT(num(a, "task_set_unreadable"), 107);
	CHECK_EQ_INT(num(a, "tasks_read"), 108);
	CHECK_EQ_INT(num(a, "tasks_unreadable"), 109);
	CHECK_EQ_INT(num(a, "tasks_unstarted"), 110);
	CHECK_EQ_INT(num(a, "tasks_resumed"), 111);
	CHECK_EQ_INT(num(a, "max_tasks"), 112);
	CHECK_EQ_INT(num(a, "await_stacks_dropped"), 113);
	CHECK(dbl(a, "reader_s") == 0.75);
	CHECK(dbl(a, "poll_interval_max_ms") == 40);
	CHECK_EQ_INT(num(a, "reads"), 114);
	CHECK_EQ_INT(num(a, "read_calls"), 115);
	CHECK(strstr(str(a, "not_covered"), "uvloop") != NULL);
	CHECK_EQ_INT(json_object_array_length(get(a, "layouts")), 2);
	l = json_object_array_get_idx(get(a, "layouts"), 0);
	CHECK_KEYS(l, "pid", "python", "c_task", "task_type", "published_offsets",
		   "published_disagreements");
	CHECK_EQ_INT(num(l, "pid"), 41);
	CHECK_EQ_STR(str(l, "python"), "3.14.2");
	CHECK_EQ_STR(str(l, "published_offsets"), "/usr/lib/_asyncio.so");
	CHECK_EQ_STR(str(l, "published_disagreements"), "task_coro 128, probe 120");
	CHECK_EQ_INT(boolean(l, "c_task"), 1);
	CHECK_EQ_STR(str(l, "task_type"), "_asyncio.Task");
	l = json_object_array_get_idx(get(a, "layouts"), 1);
	CHECK_KEYS(l, "pid", "python", "unavailable");
	CHECK_EQ_INT(num(l, "pid"), 42);
	CHECK_EQ_STR(str(l, "python"), "3.9.18");
	CHECK_EQ_STR(str(l, "unavailable"), "probe timed out");
}

static void check_bpf(struct json_object *b, const uint64_t *stats)
{
	int i = 0;

	/* Each counter under a name of its own (a name used twice would
	 * leave fewer keys), in the enum's order, then what is derived from
	 * them and the session's own counters. */
	CHECK_EQ_INT(json_object_object_length(b), STAT_MAX + 1 + 5 + 11);
	json_object_object_foreach (b, key, v) {
		if (i < STAT_MAX && (uint64_t)json_object_get_int64(v) != stats[i]) {
			fprintf(stderr, "  bpf.%s is not counter %d\n", key, i);
			CHECK(0);
		}
		i++;
	}
	CHECK_EQ_INT(num(b, "samples"), 400);
	CHECK_EQ_INT(num(b, "lost_ringbuf_full"), 1000 + STAT_RINGBUF_FULL);
	CHECK_EQ_INT(num(b, "probe_check_ns_total"), 250);
	CHECK(dbl(b, "ns_per_sample") == 10);
	CHECK(dbl(b, "reads_per_walk") == 11);
	CHECK(dbl(b, "ns_per_offcpu_record") == 3000);
	CHECK_EQ_STR(str(b, "offcpu_hook"), "task_work");
	CHECK(dbl(b, "probe_check_ns_per_check") == 25);
	CHECK(dbl(b, "sampler_ns_per_run") == 300);
	CHECK_EQ_INT(num(b, "records"), 201);
	CHECK_EQ_INT(num(b, "bad_records"), 202);
	CHECK_EQ_INT(num(b, "frames_unreadable"), 203);
	CHECK_EQ_INT(num(b, "frames_unreadable_in_bpf"), 5);
	CHECK_EQ_INT(num(b, "frames_unreadable_before_probe"), 6);
	CHECK_EQ_INT(num(b, "frames_named_from_freed_code_copies"), 17);
	CHECK_EQ_INT(num(b, "freed_code_copies_unused"), 2);
	CHECK_EQ_INT(num(b, "code_cache_evictions"), 204);
	CHECK_EQ_INT(num(get(b, "code_dealloc_probes"), "placed"), 2);
	CHECK_EQ_INT(num(get(b, "code_dealloc_probes"), "failed"), 1);
	CHECK_EQ_INT(num(get(b, "code_dealloc_probes"), "before_exec"), 1);
	CHECK_EQ_STR(str(get(b, "code_dealloc_probes"), "why"),
		     "no probe on /usr/bin/python3.11's code-object deallocator: x");
	CHECK_EQ_INT(num(b, "stacks_dropped"), 205);
	CHECK_EQ_INT(num(b, "truncated_stacks"), 206);
}

static void check_memory(struct json_object *m)
{
	struct json_object *x;

	CHECK_KEYS(m, "mode", "python_processes", "sampler_loaded", "sampler_not_loaded",
		   "sample_bytes", "copy_sample_bytes", "sampler_counts", "profiled", "records",
		   "records_lost", "bpf_ns_per_event", "frees_of_unknown_blocks",
		   "untracked_blocks", "table_overflows", "stale_frees",
		   "foreign_allocator_processes", "native_allocations_unseen_processes",
		   "python_allocator_unwrapped_processes", "attach");
	CHECK_EQ_STR(str(m, "mode"), "sampler");
	x = get(m, "attach");
	CHECK_KEYS(x, "method", "attached", "answer_s", "attached_s", "detach", "sample_bytes",
		   "python_mb", "probe_hits", "not_measured");
	CHECK_EQ_STR(str(x, "method"), "remote_exec");
	CHECK_EQ_INT(boolean(x, "attached"), 1);
	CHECK(dbl(x, "answer_s") == 0.25 && dbl(x, "attached_s") == 3.5);
	CHECK_EQ_STR(str(x, "detach"), "restored");
	CHECK_EQ_INT(num(x, "sample_bytes"), 1048576);
	CHECK(dbl(x, "python_mb") == 3);
	CHECK_EQ_INT(num(x, "probe_hits"), 77);
	CHECK(strstr(str(x, "not_measured"), "native allocations") != NULL);
	CHECK_EQ_INT(num(m, "python_processes"), 3);
	CHECK_EQ_INT(num(m, "sampler_loaded"), 2);
	CHECK_EQ_INT(num(m, "sampler_not_loaded"), 1);
	CHECK_EQ_INT(num(m, "sample_bytes"), 1048576);
	CHECK_EQ_INT(num(m, "copy_sample_bytes"), 2097152);
	x = get(m, "sampler_counts");
	CHECK_KEYS(x, "processes", "alloc_mb", "python_mb", "copy_mb", "sampled_alloc_mb",
		   "sampled_python_mb", "sampled_copy_mb");
	CHECK_EQ_INT(num(x, "processes"), 4);
	CHECK(dbl(x, "alloc_mb") == 1);
	CHECK(dbl(x, "python_mb") == 2);
	CHECK(dbl(x, "copy_mb") == 3);
	CHECK(dbl(x, "sampled_alloc_mb") == 4);
	CHECK(dbl(x, "sampled_python_mb") == 5);
	CHECK(dbl(x, "sampled_copy_mb") == 6);
	x = get(m, "profiled");
	CHECK_KEYS(x, "alloc_mb", "python_mb", "net_growth_mb", "copy_mb", "native_threads_mb",
		   "unattributed_mb", "not_python_mb");
	CHECK(dbl(x, "alloc_mb") == 7);
	CHECK(dbl(x, "python_mb") == 8);
	CHECK(dbl(x, "net_growth_mb") == 9);
	CHECK(dbl(x, "copy_mb") == 10);
	CHECK(dbl(x, "native_threads_mb") == 11);
	CHECK(dbl(x, "unattributed_mb") == 12);
	CHECK(dbl(x, "not_python_mb") == 13);
	CHECK_EQ_INT(num(m, "records"), 301);
	CHECK_EQ_INT(num(m, "records_lost"), 302);
	CHECK(dbl(m, "bpf_ns_per_event") == 12.5);
	CHECK_EQ_INT(num(m, "frees_of_unknown_blocks"), 303);
	CHECK_EQ_INT(num(m, "untracked_blocks"), 304);
	CHECK_EQ_INT(num(m, "table_overflows"), 305);
	CHECK_EQ_INT(num(m, "stale_frees"), 306);
	CHECK_EQ_INT(num(m, "foreign_allocator_processes"), 5);
	CHECK_EQ_INT(num(m, "native_allocations_unseen_processes"), 6);
	CHECK_EQ_INT(num(m, "python_allocator_unwrapped_processes"), 7);
}

static void check_lists(struct json_object *o)
{
	struct json_object *x;

	CHECK_EQ_INT(json_object_array_length(get(o, "threads")), 2);
	x = json_object_array_get_idx(get(o, "threads"), 0);
	CHECK_KEYS(x, "pid", "tid", "name", "main_thread", "samples", "cpu_s", "blocked_s",
		   "gil_wait_s");
	CHECK_EQ_INT(num(x, "pid"), 41);
	CHECK_EQ_INT(num(x, "tid"), 41);
	CHECK_EQ_STR(str(x, "name"), "MainThread");
	CHECK_EQ_INT(boolean(x, "main_thread"), 1);
	CHECK_EQ_INT(num(x, "samples"), 401);
	CHECK(dbl(x, "cpu_s") == 1.5);
	CHECK(dbl(x, "blocked_s") == 0.5);
	CHECK(dbl(x, "gil_wait_s") == 0.25);
	/* A thread without a name is written with an empty one. */
	x = json_object_array_get_idx(get(o, "threads"), 1);
	CHECK_EQ_STR(str(x, "name"), "");
	CHECK_EQ_INT(boolean(x, "main_thread"), 0);
	CHECK_EQ_INT(num(o, "processes_retired"), 501);
	CHECK_EQ_INT(num(o, "threads_folded"), 502);
	CHECK_EQ_INT(json_object_array_length(get(o, "interpreters")), 2);
	x = json_object_array_get_idx(get(o, "interpreters"), 0);
	CHECK_KEYS(x, "pid", "version", "path", "static", "free_threaded", "gil_wait_measured");
	CHECK_EQ_INT(num(x, "pid"), 41);
	CHECK_EQ_STR(str(x, "version"), "3.12.4");
	CHECK_EQ_STR(str(x, "path"), "/usr/bin/python3.12");
	CHECK_EQ_INT(boolean(x, "static"), 0);
	CHECK_EQ_INT(boolean(x, "free_threaded"), 0);
	CHECK_EQ_INT(boolean(x, "gil_wait_measured"), 1);
	x = json_object_array_get_idx(get(o, "interpreters"), 1);
	CHECK_KEYS(x, "pid", "version", "path", "static", "free_threaded", "gil_enabled",
		   "gil_wait_measured", "gil_wait_unmeasured", "layout_from_interpreter");
	CHECK_EQ_INT(boolean(x, "static"), 1);
	CHECK_EQ_INT(boolean(x, "free_threaded"), 1);
	CHECK_EQ_INT(boolean(x, "gil_enabled"), 1);
	CHECK_EQ_INT(boolean(x, "gil_wait_measured"), 0);
	CHECK_EQ_STR(str(x, "gil_wait_unmeasured"), "no symbol _PyRuntime");
	CHECK_EQ_STR(str(x, "layout_from_interpreter"), "frame.previous at 8 (table 16)");
	x = get(o, "warnings");
	CHECK_EQ_INT(json_object_array_length(x), 2);
	CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(x, 0)), "first warning");
	CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(x, 1)), "second warning");
}

/* Every field reaches the JSON, under its key, in the order of the facts. */
static void test_every_field(void)
{
	struct profile *p = new_profile();
	struct facts *f = full_facts();
	struct json_object *o, *x;

	if (!p || !f)
		goto out;
	o = output_facts_json(f, p);
	CHECK(o != NULL);
	CHECK_KEYS(o, "profiler_version", "async", "sampling_rate_hz", "sampling_period_ns",
		   "total_sampled_s", "uncounted_blocked_s", "not_python_s", "probe_overhead_s",
		   "stolen_s", "gil_wait_s", "unattributed", "native_threads_credited_s", "bpf",
		   "kernel", "memory", "threads", "processes_retired", "threads_folded",
		   "interpreters", "warnings", "timeline", "profile_decorator", "process");
	check_async(get(o, "async"));
	/* The rate as given, not 1e9 / period (997.0000269...), and the period
	 * the timers use. */
	CHECK_EQ_STR(str(o, "profiler_version"), SCALENE_BPF_VERSION);
	CHECK(num(o, "sampling_rate_hz") == 997);
	CHECK(num(o, "sampling_period_ns") == 1003009);
	CHECK(dbl(o, "total_sampled_s") == 4);
	CHECK(dbl(o, "uncounted_blocked_s") == 5);
	CHECK(dbl(o, "not_python_s") == 0.5);
	CHECK(dbl(o, "probe_overhead_s") == 0.003);
	CHECK(dbl(o, "stolen_s") == 0.007);
	CHECK(dbl(o, "gil_wait_s") == 0.25);
	x = get(o, "unattributed");
	CHECK_KEYS(x, "threads_without_python_s", "unreadable_stacks_s", "outside_profiled_files_s",
		   "outside_decorated_functions_s");
	CHECK(dbl(x, "threads_without_python_s") == 1);
	CHECK(dbl(x, "unreadable_stacks_s") == 2);
	CHECK(dbl(x, "outside_profiled_files_s") == 3);
	CHECK(dbl(x, "outside_decorated_functions_s") == 0.5);
	CHECK(dbl(o, "native_threads_credited_s") == 0.75);
	check_bpf(get(o, "bpf"), f->bpf.stats);
	/* The kernel: what was found, and each fallback in its order. */
	x = get(o, "kernel");
	CHECK_KEYS(x, "release", "build", "sleep_state", "offcpu_hook", "uprobes", "fallbacks");
	CHECK_EQ_STR(str(x, "release"), "5.10.0-32-amd64");
	CHECK_EQ_STR(str(x, "build"), "bounded");
	CHECK_EQ_STR(str(x, "sleep_state"), "task");
	CHECK_EQ_STR(str(x, "offcpu_hook"), "sys_exit");
	CHECK_EQ_STR(str(x, "uprobes"), "perf_event");
	x = get(x, "fallbacks");
	CHECK_EQ_INT(json_object_array_length(x), 2);
	CHECK_KEYS(json_object_array_get_idx(x, 0), "missing", "instead", "cost");
	CHECK_EQ_STR(str(json_object_array_get_idx(x, 0), "missing"), "a");
	CHECK_EQ_STR(str(json_object_array_get_idx(x, 1), "cost"), "f");
	check_memory(get(o, "memory"));
	check_lists(o);
	/* The timeline's thinning is the profile's. */
	x = get(o, "timeline");
	CHECK_KEYS(x, "events", "max_events", "slot_s", "samples_dropped");
	CHECK_EQ_INT(num(x, "events"), 0);
	CHECK_EQ_INT(num(x, "max_events"), TIMELINE_MAX_EVENTS);
	CHECK_EQ_INT(num(x, "samples_dropped"), 0);
	x = get(o, "profile_decorator");
	CHECK_KEYS(x, "builtin_provided", "builtin_why", "functions", "bad_report_lines",
		   "refused_past_limit");
	CHECK(json_object_get_boolean(get(x, "builtin_provided")));
	CHECK(!strcmp(json_object_get_string(get(x, "builtin_why")),
		      "/p/a.py decorates with @profile"));
	CHECK_EQ_INT(num(x, "functions"), 3);
	CHECK_EQ_INT(num(x, "bad_report_lines"), 601);
	CHECK_EQ_INT(num(x, "refused_past_limit"), 602);
	x = get(o, "process");
	CHECK_KEYS(x, "pid", "ns_pid", "ppid", "uid", "comm", "cmdline", "ended");
	CHECK_EQ_INT(num(x, "pid"), 41);
	CHECK_EQ_INT(num(x, "ns_pid"), 7);
	CHECK_EQ_INT(num(x, "ppid"), 1);
	CHECK_EQ_INT(num(x, "uid"), 1000);
	CHECK_EQ_STR(str(x, "comm"), "python3");
	CHECK_EQ_INT(json_object_array_length(get(x, "cmdline")), 3);
	CHECK_EQ_STR(json_object_get_string(json_object_array_get_idx(get(x, "cmdline"), 2)),
		     "--flag");
	CHECK_EQ_STR(str(x, "ended"), "exit");
	json_object_put(o);
out:
	facts__free(f);
	profile__free(p);
}

/* A zeroed struct: only what is always written, every list empty. */
static void test_least(void)
{
	struct profile *p = new_profile();
	struct facts *f = facts__new();
	struct json_object *o, *b;

	if (!p || !f)
		goto out;
	f->rate_hz = 997;
	f->period_ns = 1003009;
	o = output_facts_json(f, p);
	CHECK_KEYS(o, "profiler_version", "sampling_rate_hz", "sampling_period_ns",
		   "total_sampled_s", "uncounted_blocked_s", "not_python_s", "gil_wait_s",
		   "unattributed", "native_threads_credited_s", "bpf", "threads",
		   "processes_retired", "threads_folded", "interpreters", "warnings", "timeline");
	/* Counters that could not be read are left out, not written as 0;
	 * rates without their counts too. */
	b = get(o, "bpf");
	CHECK_KEYS(b, "records", "bad_records", "frames_unreadable", "frames_unreadable_in_bpf",
		   "frames_unreadable_before_probe", "frames_named_from_freed_code_copies",
		   "freed_code_copies_unused", "code_cache_evictions", "code_dealloc_probes",
		   "stacks_dropped", "truncated_stacks");
	/* No probe placed or failed: nothing to say why. */
	CHECK_KEYS(get(b, "code_dealloc_probes"), "placed", "failed", "before_exec");
	CHECK_EQ_INT(json_object_array_length(get(o, "threads")), 0);
	CHECK_EQ_INT(json_object_array_length(get(o, "interpreters")), 0);
	CHECK_EQ_INT(json_object_array_length(get(o, "warnings")), 0);
	json_object_put(o);
	/* A run time read with no run: no rate. */
	f->bpf.have_runtime = true;
	o = output_facts_json(f, p);
	CHECK(!has(get(o, "bpf"), "sampler_ns_per_run"));
	json_object_put(o);
out:
	facts__free(f);
	profile__free(p);
}

/* System-wide the counters are the host's: the process's own samples take
 * the place of "samples" among them, or follow host_samples when the
 * counters could not be read. */
static void test_host_counters(void)
{
	struct profile *p = new_profile();
	struct facts *f = facts__new();
	struct json_object *o, *b;
	int i = 0;

	if (!p || !f)
		goto out;
	f->rate_hz = 997;
	f->period_ns = 1003009;
	f->bpf.have_stats = true;
	f->bpf.stats[STAT_SAMPLES] = 900;
	f->bpf.host = true;
	f->bpf.process_samples = 40;
	o = output_facts_json(f, p);
	b = get(o, "bpf");
	json_object_object_foreach (b, key, v) {
		(void)v;
		if (i++ == 0)
			CHECK_EQ_STR(key, "samples");
	}
	CHECK_EQ_INT(num(b, "samples"), 40);
	CHECK_EQ_INT(num(b, "host_samples"), 900);
	CHECK_EQ_STR(str(b, "counters_of"), "host");
	CHECK_EQ_INT(json_object_object_length(b), STAT_MAX + 2 + 1 + 11);
	json_object_put(o);
	f->bpf.have_stats = false;
	o = output_facts_json(f, p);
	CHECK_KEYS(get(o, "bpf"), "host_samples", "samples", "counters_of", "ns_per_sample",
		   "records", "bad_records", "frames_unreadable", "frames_unreadable_in_bpf",
		   "frames_unreadable_before_probe", "frames_named_from_freed_code_copies",
		   "freed_code_copies_unused", "code_cache_evictions", "code_dealloc_probes",
		   "stacks_dropped", "truncated_stacks");
	json_object_put(o);
out:
	facts__free(f);
	profile__free(p);
}

/* Attached with uprobes: their memory facts, each site probed or why not. */
static void test_uprobes(void)
{
	struct profile *p = new_profile();
	struct facts *f = facts__new();
	struct facts_uprobes *u;
	struct json_object *o, *m, *s;

	if (!p || !f)
		goto out;
	f->rate_hz = 997;
	f->period_ns = 1003009;
	f->has_uprobes = true;
	u = &f->uprobes;
	u->probes[0] = (struct facts_probe_site){
		.function = "malloc", .module = "libc.so.6", .offset = 4, .not_probed = "stale"
	};
	u->probes[1] = (struct facts_probe_site){ .function = "PyObject_Malloc",
						  .module = "python3.12",
						  .offset = -1,
						  .not_probed = "no symbol PyObject_Malloc" };
	u->nprobes = 2;
	u->hits = 5000;
	u->elapsed_s = 2;
	u->ns_per_hit = 1000;
	o = output_facts_json(f, p);
	CHECK_KEYS(o, "profiler_version", "sampling_rate_hz", "sampling_period_ns",
		   "total_sampled_s", "uncounted_blocked_s", "not_python_s", "gil_wait_s",
		   "unattributed", "native_threads_credited_s", "bpf", "threads",
		   "processes_retired", "threads_folded", "interpreters", "warnings", "timeline",
		   "memory");
	m = get(o, "memory");
	CHECK_KEYS(m, "mode", "probes", "hits", "hits_per_s", "ns_per_hit_measured",
		   "estimated_cost_cpu_percent", "not_measured");
	CHECK_EQ_STR(str(m, "mode"), "uprobes");
	CHECK_EQ_INT(num(m, "hits"), 5000);
	CHECK(dbl(m, "hits_per_s") == 2500);
	CHECK(dbl(m, "ns_per_hit_measured") == 1000);
	CHECK(dbl(m, "estimated_cost_cpu_percent") == 100.0 * 5000 * 1000 / 1e9 / 2);
	CHECK(strstr(str(m, "not_measured"), "frees, footprint") != NULL);
	s = json_object_array_get_idx(get(m, "probes"), 0);
	CHECK_KEYS(s, "function", "module", "offset");
	CHECK_EQ_STR(str(s, "function"), "malloc");
	CHECK_EQ_STR(str(s, "module"), "libc.so.6");
	CHECK_EQ_INT(num(s, "offset"), 4);
	s = json_object_array_get_idx(get(m, "probes"), 1);
	CHECK_KEYS(s, "function", "module", "not_probed");
	CHECK_EQ_STR(str(s, "not_probed"), "no symbol PyObject_Malloc");
	json_object_put(o);
	/* Nothing elapsed and no cost measured: no rates. */
	u->elapsed_s = 0;
	u->ns_per_hit = -1;
	o = output_facts_json(f, p);
	CHECK_KEYS(get(o, "memory"), "mode", "probes", "hits", "not_measured");
	json_object_put(o);
	/* One process of --all: its probes, its hits and the cost of a hit;
	 * the host's hits are in index.json. */
	u->host = true;
	u->hits_known = true;
	u->hits = 300;
	u->elapsed_s = 3;
	u->ns_per_hit = 1000;
	o = output_facts_json(f, p);
	m = get(o, "memory");
	CHECK_KEYS(m, "mode", "probes", "host_hits_in", "hits", "hits_per_s", "ns_per_hit_measured",
		   "estimated_cost_cpu_percent", "not_measured");
	CHECK_EQ_STR(str(m, "host_hits_in"), "index.json");
	CHECK_EQ_INT(num(m, "hits"), 300);
	CHECK(dbl(m, "hits_per_s") == 100);
	json_object_put(o);
	/* Its count lost (a PID used again before its exit was read): null. */
	u->hits_known = false;
	o = output_facts_json(f, p);
	m = get(o, "memory");
	CHECK_KEYS(m, "mode", "probes", "host_hits_in", "hits", "ns_per_hit_measured",
		   "not_measured");
	CHECK(json_object_object_get_ex(m, "hits", &s) && s == NULL);
	json_object_put(o);
out:
	facts__free(f);
	profile__free(p);
}

/* A namespace PID or a command line that is not known is null; the
 * identity is the same in the index (no "ended" there). */
static void test_identity(void)
{
	struct facts_process pr = { .pid = 9, .ns_pid = -1, .ppid = 2, .uid = 0, .comm = "x" };
	struct json_object *o = output_identity_json(&pr), *v = NULL;

	CHECK_KEYS(o, "pid", "ns_pid", "ppid", "uid", "comm", "cmdline");
	CHECK(json_object_object_get_ex(o, "ns_pid", &v) && v == NULL);
	CHECK(json_object_object_get_ex(o, "cmdline", &v) && v == NULL);
	json_object_put(o);
	/* An empty command line (a kernel thread's) is an empty list. */
	pr.cmdline = cmdline;
	o = output_identity_json(&pr);
	CHECK(json_object_is_type(get(o, "cmdline"), json_type_array));
	CHECK_EQ_INT(json_object_array_length(get(o, "cmdline")), 0);
	json_object_put(o);
}

static void test_warnings_bounded(void)
{
	struct facts *f = facts__new();
	int i;

	if (!f)
		return;
	for (i = 0; i < FACTS_MAX_WARNINGS; i++)
		CHECK_EQ_INT(facts__warn(f, "w"), 0);
	CHECK_EQ_INT(facts__warn(f, "one too many"), -ENOSPC);
	CHECK_EQ_INT(f->nwarnings, FACTS_MAX_WARNINGS);
	facts__free(f);
	facts__free(NULL);
}

int main(void)
{
	RUN_TEST(test_every_field);
	RUN_TEST(test_least);
	RUN_TEST(test_host_counters);
	RUN_TEST(test_uprobes);
	RUN_TEST(test_identity);
	RUN_TEST(test_warnings_bounded);
	return test_summary("facts");
}
