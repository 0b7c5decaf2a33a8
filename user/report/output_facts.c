// SPDX-License-Identifier: BSD-2-Clause
/*
 * The profile's "scalene_bpf" object: the facts (facts.h) as JSON, in a
 * fixed key order that readers and tests rely on.
 */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "model/facts.h"
#include "report/output.h"
#include "model/profile.h"

/*
 * thread_state_unavailable: a record of a thread with no BPF state yet that
 * could not make it, nearly always because the record's program interrupted
 * another of ours holding this CPU's task-storage lock (a sample's NMI inside
 * sched_switch).  The record is kept, walked without the frame cache; the
 * state is made at the thread's next record.
 */
static const char *const stat_names[] = {
	/* Every counter has a name: the array is sized by the enum. */
	[STAT_SAMPLES] = "samples",
	[STAT_OFFCPU_EVENTS] = "offcpu_records",
	[STAT_RINGBUF_FULL] = "lost_ringbuf_full",
	[STAT_WALK_READ_FAILED] = "walk_read_failed",
	[STAT_WALK_TRUNCATED] = "walk_truncated",
	[STAT_NO_TSTATE] = "no_python_thread_state",
	[STAT_NO_CONFIG] = "not_recognised_yet",
	[STAT_TASK_STORAGE_FAIL] = "thread_state_unavailable",
	[STAT_PROC_TABLE_FULL] = "process_table_full",
	[STAT_EVENTS_LOST] = "process_events_lost",
	[STAT_SAMPLE_NS] = "sample_ns_total",
	[STAT_MEM_EVENTS] = "memory_records",
	[STAT_MEM_NS] = "memory_ns_total",
	[STAT_MEM_LOST] = "memory_lost_ringbuf_full",
	[STAT_UPROBE_HITS] = "allocation_uprobe_hits",
	[STAT_UPROBE_OUTSIDE] = "allocation_samples_outside_window",
	[STAT_IDLE_NS] = "idle_wait_ns",
	[STAT_OP_READ_FAILED] = "opcode_read_failed",
	[STAT_PROBE_SAMPLES] = "probe_samples",
	[STAT_PROBE_CHECKS] = "probe_checks",
	[STAT_PROBE_CHECK_NS] = "probe_check_ns_total",
	[STAT_AGG_FULL] = "count_table_full",
	[STAT_AGG_STACKS] = "stacks_sent",
	[STAT_GPU_API] = "gpu_launch_probes",
	[STAT_GPU_LOST] = "gpu_lost_ringbuf_full",
	[STAT_WALK_BUSY] = "walk_scratch_busy",
	[STAT_WALKS] = "walks",
	[STAT_WALK_READS] = "walk_reads",
	[STAT_PROBE_NS] = "probe_ns_total",
	[STAT_WALK_ENTERING] = "walk_entering_interpreter",
	[STAT_WALK_NOT_A_FRAME] = "walk_not_a_frame",
	[STAT_OFFCPU_WORK_FAILED] = "offcpu_work_failed",
	[STAT_OFFCPU_NS] = "offcpu_ns_total",
	[STAT_CODE_FREED] = "code_objects_freed",
	[STAT_CODE_SNAPS] = "code_objects_read_as_freed",
	[STAT_CODE_SNAPS_LOST] = "code_objects_read_as_freed_lost",
	[STAT_STOLEN_NS] = "stolen_ns",
};
_Static_assert(sizeof(stat_names) / sizeof(stat_names[0]) == STAT_MAX, "a name per counter");

static const char *const unattr_names[UNATTR_MAX] = {
	[UNATTR_NO_PYTHON_THREAD] = "threads_without_python_s",
	[UNATTR_UNREADABLE] = "unreadable_stacks_s",
	[UNATTR_NOT_PROFILED] = "outside_profiled_files_s",
	[UNATTR_NOT_DECORATED] = "outside_decorated_functions_s",
};

/* A duration in ns as the profile's seconds. */
static struct json_object *seconds(double ns)
{
	return json_object_new_double(ns / 1e9);
}

static struct json_object *mb(double bytes)
{
	return json_object_new_double(bytes / (1024.0 * 1024.0));
}

static void add(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static struct json_object *layout_json(const struct facts_async_layout *l)
{
	struct json_object *o = json_object_new_object();

	add(o, "pid", json_object_new_int(l->pid));
	add(o, "python", json_object_new_string(l->python));
	if (l->found) {
		add(o, "c_task", json_object_new_boolean(l->c_task));
		add(o, "task_type", json_object_new_string(l->task_type));
		if (l->published[0])
			add(o, "published_offsets", json_object_new_string(l->published));
		else if (l->published_unavailable[0])
			add(o, "published_offsets_unavailable",
			    json_object_new_string(l->published_unavailable));
		if (l->disagreements[0])
			add(o, "published_disagreements", json_object_new_string(l->disagreements));
	} else {
		add(o, "unavailable", json_object_new_string(l->unavailable));
	}
	return o;
}

static struct json_object *frame_json(const struct frame_ref *f)
{
	struct json_object *o = json_object_new_object();

	add(o, "file", json_object_new_string(f->filename));
	add(o, "function", json_object_new_string(f->qualname));
	add(o, "line", json_object_new_int(f->line));
	return o;
}

/* Where the await time outside the profiled files waited, most first. */
static struct json_object *await_outside_json(const struct facts_async *a)
{
	struct json_object *arr = json_object_new_array();
	int order[MAX_AWAIT_OUTSIDE], i, j;

	for (i = 0; i < a->noutside; i++) {
		for (j = i; j > 0 && a->outside[order[j - 1]].ns < a->outside[i].ns; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < a->noutside; i++) {
		const struct await_outside *w = &a->outside[order[i]];
		struct json_object *o = json_object_new_object();

		add(o, "task_coroutine", frame_json(&w->task));
		add(o, "waits_in", frame_json(&w->waits));
		add(o, "s", seconds(w->ns));
		json_object_array_add(arr, o);
	}
	if (a->outside_other_ns > 0) {
		struct json_object *o = json_object_new_object();

		add(o, "other", json_object_new_boolean(true));
		add(o, "s", seconds(a->outside_other_ns));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* scalene_bpf.async: how the await fields were measured, and what it cost. */
static struct json_object *async_json(const struct facts_async *a)
{
	struct json_object *o = json_object_new_object(), *layouts = json_object_new_array();
	int i;

	add(o, "method",
	    json_object_new_string("task-set snapshots read from outside while the event "
				   "loop waits in its selector"));
	add(o, "await_s", seconds(a->await_ns));
	add(o, "await_outside_profiled_files_s", seconds(a->await_outside_profiled_files_ns));
	add(o, "await_outside_profiled_files", await_outside_json(a));
	add(o, "idle_loop_s", seconds(a->idle_loop_ns));
	add(o, "idle_loop_without_tasks_s", seconds(a->idle_loop_without_tasks_ns));
	add(o, "idle_after_last_snapshot_s", seconds(a->idle_after_last_snapshot_ns));
	/* The loop's idle time before the probe had measured the layout
	 * (its first ~0.1-0.3 s): not credited to any line. */
	add(o, "idle_before_layout_s", seconds(a->idle_before_layout_ns));
	add(o, "loops", json_object_new_int(a->loops));
	add(o, "polls", json_object_new_int64((int64_t)a->polls));
	add(o, "idle_polls", json_object_new_int64((int64_t)a->idle_polls));
	add(o, "idle_unchecked_polls", json_object_new_int64((int64_t)a->idle_unchecked_polls));
	add(o, "snapshots", json_object_new_int64((int64_t)a->snapshots));
	add(o, "loop_snapshots", json_object_new_int64((int64_t)a->loop_snapshots));
	add(o, "snapshots_effective",
	    json_object_new_double((double)(int64_t)(a->snapshots_effective * 10 + 0.5) / 10));
	add(o, "partial_snapshots", json_object_new_int64((int64_t)a->partial_snapshots));
	add(o, "sampled_snapshots", json_object_new_int64((int64_t)a->sampled_snapshots));
	add(o, "task_sample", json_object_new_int(a->task_sample));
	add(o, "task_set_unreadable", json_object_new_int64((int64_t)a->task_set_unreadable));
	add(o, "tasks_read", json_object_new_int64((int64_t)a->tasks_read));
	add(o, "tasks_unreadable", json_object_new_int64((int64_t)a->tasks_unreadable));
	add(o, "tasks_unstarted", json_object_new_int64((int64_t)a->tasks_unstarted));
	add(o, "tasks_resumed", json_object_new_int64((int64_t)a->tasks_resumed));
	add(o, "max_tasks", json_object_new_int(a->max_tasks));
	add(o, "await_stacks_dropped", json_object_new_int64((int64_t)a->await_stacks_dropped));
	add(o, "reader_s", seconds(a->reader_ns));
	add(o, "poll_interval_max_ms", json_object_new_double(a->live_gap_max_ns / 1e6));
	add(o, "reads", json_object_new_int64((int64_t)a->reads));
	add(o, "read_calls", json_object_new_int64((int64_t)a->read_calls));
	for (i = 0; i < a->nlayouts && i < FACTS_MAX_LAYOUTS; i++)
		json_object_array_add(layouts, layout_json(&a->layouts[i]));
	add(o, "layouts", layouts);
	if (a->uvloop)
		add(o, "not_covered",
		    json_object_new_string("uvloop: its event loop is compiled code, so its "
					   "waiting and tasks are not read; await fields stay 0"));
	return o;
}

static const char *gpu_status_name(uint32_t st)
{
	switch (st) {
	case GPU_S_LOADED:
		return "loaded";
	case GPU_S_ACTIVE:
		return "collecting";
	case GPU_S_OTHER_SUBSCRIBER:
		return "another CUPTI client (Nsight, torch.profiler) was there first";
	case GPU_S_CUPTI_ERROR:
		return "a CUPTI call failed";
	case GPU_S_EXITED:
		return "exited";
	case GPU_S_NO_CUPTI:
		return "no CUPTI found (the program's stderr names where it looked)";
	case GPU_S_LOST:
		return "stopped mid-run: CUPTI failed a flush or reported a fatal error (another "
		       "CUPTI client, such as torch.profiler's teardown, may have finalized it)";
	default:
		return "unknown";
	}
}

/* Where the library found the CUPTI it used (cuptiload.h). */
static const char *gpu_cupti_from_name(__u32 from)
{
	switch (from) {
	case GPU_CUPTI_LOADED:
		return "loaded by the program";
	case GPU_CUPTI_BY_RUNTIME:
		return "next to the program's CUDA runtime";
	case GPU_CUPTI_BY_NAME:
		return "the dynamic linker's search";
	case GPU_CUPTI_TOOLKIT:
		return "the CUDA toolkit's folder";
	case GPU_CUPTI_BUILD_DIR:
		return "where scalene-bpf was built";
	default:
		return NULL;
	}
}

static struct json_object *gpu_proc_json(const struct facts_gpu_proc *g)
{
	struct json_object *o = json_object_new_object();
	const struct scalene_bpf_gpu_state *st = &g->st;

	add(o, "pid", json_object_new_int(g->pid));
	if (g->read_err) {
		add(o, "state_unreadable", json_object_new_string(strerror(-g->read_err)));
		return o;
	}
	add(o, "status", json_object_new_string(gpu_status_name(st->status)));
	add(o, "final", json_object_new_boolean(g->final));
	if (st->status == GPU_S_CUPTI_ERROR || st->status == GPU_S_LOST) {
		add(o, "failed_call", json_object_new_int((int)st->failed_call));
		add(o, "cupti_error", json_object_new_int((int)st->cupti_error));
	}
	if (st->status == GPU_S_LOST && g->lost_after_s >= 0)
		add(o, "stopped_after_s", json_object_new_double(g->lost_after_s));
	add(o, "cupti_version", json_object_new_int((int)st->cupti_version));
	if (gpu_cupti_from_name(st->cupti_from))
		add(o, "cupti_found", json_object_new_string(gpu_cupti_from_name(st->cupti_from)));
	add(o, "clock",
	    json_object_new_string(st->clock == GPU_CLOCK_MONOTONIC ? "monotonic" : "realtime"));
	add(o, "api_callbacks", json_object_new_int((int)st->api_callbacks));
	add(o, "api_callbacks_refused", json_object_new_int((int)st->api_failed));
	add(o, "calls", json_object_new_int64((int64_t)st->api_calls));
	add(o, "calls_probed", json_object_new_int64((int64_t)st->calls_probed));
	add(o, "records", json_object_new_int64((int64_t)st->records));
	add(o, "dropped_unfinished", json_object_new_int64((int64_t)st->incomplete));
	add(o, "dropped_invalid", json_object_new_int64((int64_t)st->invalid));
	add(o, "lost_by_cupti", json_object_new_int64((int64_t)st->lost));
	add(o, "buffers_refused", json_object_new_int64((int64_t)st->buffers_refused));
	add(o, "buffers_malformed", json_object_new_int64((int64_t)st->buffers_malformed));
	return o;
}

/* scalene_bpf.gpu with NVML (--pid): what was read, how often. */
static struct json_object *gpu_nvml_json(const struct facts_gpu *g)
{
	struct json_object *o = json_object_new_object(), *names = json_object_new_array();
	const struct profile_gpu_totals *t = &g->totals;
	const struct nvml_facts *nv = &g->nv;
	char how[320];
	int i;

	snprintf(how, sizeof(how),
		 "NVML read every %d ms from outside the process: each reading's utilisation "
		 "and device memory go to the lines that ran in the period it covers; no "
		 "launch sites (scalene_bpf.gpu.lines stays empty)",
		 NVML_POLL_MS);
	add(o, "method", json_object_new_string("nvml-sampling"));
	add(o, "how", json_object_new_string(how));
	if (g->off[0]) {
		add(o, "off", json_object_new_string(g->off));
		return o;
	}
	add(o, "library", json_object_new_string(nv->library));
	for (i = 0; i < nv->ndevices && i < NVML_DEVICES_MAX; i++)
		json_object_array_add(names, json_object_new_string(nv->names[i]));
	add(o, "devices", names);
	/* Per process where every device gives it; else (partly) the whole
	 * devices', other processes' work included. */
	add(o, "utilization",
	    json_object_new_string(nv->per_process == nv->ndevices ? "per_process"
				   : nv->per_process		   ? "mixed"
								   : "device"));
	add(o, "memory_read", json_object_new_boolean(nv->memory));
	add(o, "poll_ms", json_object_new_int(NVML_POLL_MS));
	add(o, "polls", json_object_new_int64((int64_t)nv->polls));
	add(o, "polls_failed", json_object_new_int64((int64_t)nv->failures));
	add(o, "polls_memory_unread", json_object_new_int64((int64_t)nv->memory_unread));
	if (nv->last_error[0])
		add(o, "last_error", json_object_new_string(nv->last_error));
	add(o, "processes_collecting", json_object_new_int(t->processes));
	add(o, "busy_s", seconds(t->busy_ns));
	add(o, "peak_memory_mb", mb(t->peak_memory));
	add(o, "samples_with_gpu_use", json_object_new_int64((int64_t)t->samples));
	return o;
}

/* scalene_bpf.gpu: where GPU data comes from, what reached the profile. */
static struct json_object *gpu_json(const struct facts_gpu *g, const uint64_t *stats)
{
	static const char *const dirs[GPU_DIR_MAX] = { "htod", "dtoh", "dtod", "other" };
	struct json_object *o, *procs, *copy;
	const struct profile_gpu_totals *t = &g->totals;
	int i;

	if (g->nvml)
		return gpu_nvml_json(g);
	o = json_object_new_object();
	procs = json_object_new_array();
	copy = json_object_new_object();
	add(o, "method", json_object_new_string("cupti"));
	add(o, "how",
	    json_object_new_string("CUPTI activity records and API callbacks from "
				   "libscalene-bpf-gpu.so (CUDA_INJECTION64_PATH), joined by "
				   "correlation id to the Python line of each CUDA call"));
	if (g->library[0])
		add(o, "library", json_object_new_string(g->library));
	if (g->off[0])
		add(o, "off", json_object_new_string(g->off));
	add(o, "processes_collecting", json_object_new_int(t->processes));
	for (i = 0; i < g->nprocs && i < FACTS_GPU_PROCS; i++)
		json_object_array_add(procs, gpu_proc_json(&g->procs[i]));
	add(o, "processes", procs);
	add(o, "processes_past_table", json_object_new_int64((int64_t)g->procs_past));
	add(o, "calls", json_object_new_int64((int64_t)t->launches));
	add(o, "calls_outside_profiled_files", json_object_new_int64((int64_t)t->launches_outside));
	add(o, "calls_forgotten", json_object_new_int64((int64_t)t->launches_forgotten));
	/* Calls of threads with no Python frame (autograd, NCCL), on the line
	 * of their process's main thread. */
	add(o, "calls_on_main_thread_line",
	    json_object_new_int64((int64_t)t->launches_main_thread));
	add(o, "calls_on_no_line", json_object_new_int64((int64_t)t->launches_main_thread_lost));
	/* Samples wait for the records of every call made before them (a
	 * long kernel's come when it ends), at most 30 s for a call. */
	add(o, "settle_waited_max_s", seconds(t->settle_wait_max_ns));
	add(o, "calls_without_records", json_object_new_int64((int64_t)t->calls_without_records));
	add(o, "calls_not_awaited", json_object_new_int64((int64_t)t->calls_not_awaited));
	add(o, "records", json_object_new_int64((int64_t)t->records));
	add(o, "records_unmatched", json_object_new_int64((int64_t)t->unmatched));
	add(o, "kernel_s_no_launch_site", seconds(t->unmatched_kernel_ns));
	/* With --gpu-call-sample N, 1 in N calls is probed at random; the lines'
	 * numbers are estimates from the probed calls' records. */
	add(o, "call_sample", json_object_new_int(t->call_sample > 1 ? (int)t->call_sample : 1));
	add(o, "records_not_sampled", json_object_new_int64((int64_t)t->unsampled));
	add(o, "records_outside_profiled_files", json_object_new_int64((int64_t)t->outside));
	add(o, "kernel_s_outside_profiled_files", seconds(t->outside_kernel_ns));
	add(o, "kernels", json_object_new_int64((int64_t)t->kernels));
	add(o, "kernel_s", seconds(t->kernel_ns));
	add(o, "busy_s", seconds(t->busy_ns));
	for (i = 0; i < GPU_DIR_MAX; i++)
		add(copy, dirs[i], mb(t->copy_bytes[i]));
	add(o, "copy_mb", copy);
	add(o, "copy_s", seconds(t->copy_ns));
	add(o, "memset_mb", mb(t->memset_bytes));
	add(o, "alloc_mb", mb(t->alloc_bytes));
	add(o, "free_mb", mb(t->free_bytes));
	add(o, "host_alloc_mb", mb(t->host_alloc_bytes));
	add(o, "host_free_mb", mb(t->host_free_bytes));
	add(o, "peak_memory_mb", mb(t->peak_memory));
	add(o, "samples_with_gpu_use", json_object_new_int64((int64_t)t->samples));
	add(o, "record_batches", json_object_new_int64((int64_t)g->batches));
	add(o, "record_batches_unreadable", json_object_new_int64((int64_t)g->bad_batches));
	add(o, "call_stacks_not_kept", json_object_new_int64((int64_t)g->stacks_dropped));
	add(o, "calls_without_stack", json_object_new_int64((int64_t)g->calls_no_stack));
	add(o, "launch_probes", json_object_new_int64((int64_t)stats[STAT_GPU_API]));
	add(o, "lost_ringbuf_full", json_object_new_int64((int64_t)stats[STAT_GPU_LOST]));
	return o;
}

/* Walks keep what they read of code objects from one walk to the next where
 * the interpreter's code-object deallocator has our probe (its hits:
 * code_objects_freed); elsewhere each walk reads them anew. */
static struct json_object *code_probes_json(const struct facts_bpf *b)
{
	struct json_object *o = json_object_new_object();

	add(o, "placed", json_object_new_int64((int64_t)b->code_probes_placed));
	add(o, "failed", json_object_new_int64((int64_t)b->code_probes_failed));
	add(o, "before_exec", json_object_new_int64((int64_t)b->code_probes_before_exec));
	if (b->code_probes_failed && b->code_probe_why)
		add(o, "why", json_object_new_string(b->code_probe_why));
	return o;
}

static struct json_object *bpf_json(const struct facts_bpf *b)
{
	struct json_object *o = json_object_new_object();
	const uint64_t *stats = b->stats;
	int i;

	for (i = 0; b->have_stats && i < STAT_MAX; i++)
		add(o, stat_names[i], json_object_new_int64((int64_t)stats[i]));
	/* Where off-CPU records are made: "task_work" (queued at the
	 * switch-in that crosses the period) or "sys_exit" (a check at every
	 * system call exit of the host). */
	if (b->offcpu_hook)
		add(o, "offcpu_hook", json_object_new_string(b->offcpu_hook));
	if (b->host) {
		/* The process's own count replaces the host's "samples" where
		 * the counters were written (json-c keeps the key's place). */
		add(o, "host_samples", json_object_new_int64((int64_t)stats[STAT_SAMPLES]));
		add(o, "samples", json_object_new_int64(b->process_samples));
		add(o, "counters_of", json_object_new_string("host"));
	}
	if (stats[STAT_SAMPLES])
		add(o, "ns_per_sample",
		    json_object_new_double((double)stats[STAT_SAMPLE_NS] / stats[STAT_SAMPLES]));
	if (stats[STAT_OFFCPU_EVENTS])
		add(o, "ns_per_offcpu_record",
		    json_object_new_double((double)stats[STAT_OFFCPU_NS] /
					   stats[STAT_OFFCPU_EVENTS]));
	if (stats[STAT_WALKS])
		add(o, "reads_per_walk",
		    json_object_new_double((double)stats[STAT_WALK_READS] / stats[STAT_WALKS]));
	if (stats[STAT_PROBE_CHECKS])
		add(o, "probe_check_ns_per_check",
		    json_object_new_double((double)stats[STAT_PROBE_CHECK_NS] /
					   stats[STAT_PROBE_CHECKS]));
	if (b->have_runtime && b->run_cnt)
		add(o, "sampler_ns_per_run",
		    json_object_new_double((double)b->run_ns / b->run_cnt));
	add(o, "records", json_object_new_int64(b->records));
	add(o, "bad_records", json_object_new_int64(b->bad_records));
	add(o, "frames_unreadable", json_object_new_int64(b->frames_unreadable));
	add(o, "frames_unreadable_in_bpf", json_object_new_int64(b->frames_unread_in_bpf));
	add(o, "frames_unreadable_before_probe",
	    json_object_new_int64(b->frames_unread_before_probe));
	add(o, "frames_named_from_freed_code_copies", json_object_new_int64(b->frames_from_copies));
	add(o, "freed_code_copies_unused", json_object_new_int64(b->code_copies_unused));
	add(o, "code_cache_evictions", json_object_new_int64(b->code_cache_evictions));
	add(o, "code_dealloc_probes", code_probes_json(b));
	add(o, "stacks_dropped", json_object_new_int64(b->stacks_dropped));
	add(o, "truncated_stacks", json_object_new_int64(b->truncated_stacks));
	return o;
}

/*
 * --native-unwind bpf: the stacks BPF unwound (those above are the copies
 * sent before BPF had their process's tables), why they ended, and the
 * tables: files and rows compiled from .eh_frame, and the rules BPF cannot
 * follow (a frame there is stepped by its frame pointer).
 */
static struct json_object *native_bpf_json(const struct facts_native *n)
{
	struct json_object *o = json_object_new_object(), *ended = json_object_new_object(),
			   *t = json_object_new_object();
	const struct utables_stats *ts = &n->tables;

	add(o, "unwinds", json_object_new_int64((int64_t)n->bpf_unwinds));
	add(o, "native_frames", json_object_new_int64((int64_t)n->bpf_frames));
	add(o, "copies_outside_tables", json_object_new_int64((int64_t)n->bpf_outside));
	add(o, "copies_at_rules_not_followed", json_object_new_int64((int64_t)n->bpf_unfollowed));
	add(ended, "at_thread_start", json_object_new_int64((int64_t)n->bpf_ends[UNWIND_BPF_ROOT]));
	add(ended, "unreadable", json_object_new_int64((int64_t)n->bpf_ends[UNWIND_BPF_READ]));
	add(ended, "no_unwind_data",
	    json_object_new_int64((int64_t)n->bpf_ends[UNWIND_BPF_NO_CFI]));
	add(ended, "depth_limit", json_object_new_int64((int64_t)n->bpf_ends[UNWIND_BPF_DEPTH]));
	add(ended, "no_registers", json_object_new_int64((int64_t)n->bpf_ends[UNWIND_BPF_NO_REGS]));
	add(ended, "tables_gone",
	    json_object_new_int64((int64_t)n->bpf_ends[UNWIND_BPF_NO_TABLES]));
	add(o, "unwinds_ended", ended);
	add(t, "files", json_object_new_int64((int64_t)ts->files));
	add(t, "rows", json_object_new_int64((int64_t)ts->rows));
	add(t, "functions", json_object_new_int64((int64_t)ts->fdes));
	add(t, "rows_not_followed", json_object_new_int64((int64_t)ts->unsupported));
	add(t, "files_without_table", json_object_new_int64((int64_t)ts->files_no_table));
	add(t, "files_left_out", json_object_new_int64((int64_t)ts->files_full));
	add(t, "mappings_left_out", json_object_new_int64((int64_t)ts->maps_dropped));
	add(t, "compile_s", json_object_new_double((double)ts->build_ns / 1e9));
	add(o, "tables", t);
	return o;
}

/*
 * --native: the stacks' native frames, from a copy of each sample's stack
 * unwound by libdw; where the Python frames were placed among them (the
 * entry frame's address on the C stack, else the eval loop's name); why the
 * unwinds ended (a stack deeper than the copy ends there: its outer Python
 * frames then follow without the native frames between them).
 */
static struct json_object *native_json(const struct facts_native *n)
{
	struct json_object *o = json_object_new_object(), *ended = json_object_new_object();

	add(o, "method",
	    json_object_new_string(n->bpf ? "unwound in BPF with .eh_frame tables"
					  : "stack copy unwound by libdw"));
	add(o, "stack_copy_bytes", json_object_new_int64((int64_t)n->stack_copy_bytes));
	add(o, "python_frames_placed_by",
	    json_object_new_string(n->frame_sp ? "entry frame address, else eval loop symbol"
					       : "eval loop symbol"));
	add(o, "samples", json_object_new_int64((int64_t)n->samples));
	add(o, "unwinds", json_object_new_int64((int64_t)n->unwinds));
	add(o, "native_frames", json_object_new_int64((int64_t)n->frames));
	if (n->unwinds)
		add(o, "stack_bytes_per_unwind",
		    json_object_new_double((double)n->copied_bytes / (double)n->unwinds));
	add(ended, "at_thread_start", json_object_new_int64((int64_t)n->ended_root));
	add(ended, "at_end_of_copy", json_object_new_int64((int64_t)n->ended_copy));
	add(ended, "no_unwind_data", json_object_new_int64((int64_t)n->ended_no_cfi));
	add(ended, "depth_limit", json_object_new_int64((int64_t)n->ended_depth));
	add(ended, "no_registers", json_object_new_int64((int64_t)n->ended_no_regs));
	add(o, "unwinds_ended", ended);
	add(o, "calls_unpaired", json_object_new_int64((int64_t)n->calls_unpaired));
	add(o, "samples_without_unwinder", json_object_new_int64((int64_t)n->no_unwinder));
	if (n->bpf)
		add(o, "bpf", native_bpf_json(n));
	return o;
}

/*
 * The kernel, what the BPF side used of it, and each fallback taken for
 * what it lacks (loader__kernel_report): build is how the walker's loops
 * were verified ("iterators", Linux 6.4+; "bpf_loop", 5.17+; "bounded", the
 * build for 5.10-5.16), sleep_state where the state a thread went to sleep
 * in came from, uprobes the kind of probes placed (absent: none).
 */
static struct json_object *kernel_json(const struct loader_kernel_report *k)
{
	struct json_object *o = json_object_new_object(), *list = json_object_new_array();
	int i;

	add(o, "release", json_object_new_string(k->release));
	add(o, "build", json_object_new_string(k->build));
	add(o, "sleep_state", json_object_new_string(k->sleep_state));
	add(o, "offcpu_hook", json_object_new_string(k->offcpu_hook));
	if (k->uprobes)
		add(o, "uprobes", json_object_new_string(k->uprobes));
	for (i = 0; i < k->nfallbacks && i < LOADER_MAX_FALLBACKS; i++) {
		struct json_object *fb = json_object_new_object();

		add(fb, "missing", json_object_new_string(k->fallbacks[i].missing));
		add(fb, "instead", json_object_new_string(k->fallbacks[i].instead));
		add(fb, "cost", json_object_new_string(k->fallbacks[i].cost));
		json_object_array_add(list, fb);
	}
	add(o, "fallbacks", list);
	return o;
}

/* --pid --memory by the sampler put into the process (meminject.h). */
static struct json_object *inject_json(const struct facts_inject *in)
{
	struct json_object *o = json_object_new_object();

	add(o, "method", json_object_new_string(in->method));
	add(o, "attached", json_object_new_boolean(in->attached));
	if (in->answer_s >= 0)
		add(o, "answer_s", json_object_new_double(in->answer_s));
	add(o, "attached_s", json_object_new_double(in->attached_s));
	add(o, "detach", json_object_new_string(in->detach));
	if (in->why[0])
		add(o, "why_not", json_object_new_string(in->why));
	add(o, "sample_bytes", json_object_new_int64((int64_t)in->sample_bytes));
	add(o, "python_mb", mb((double)in->python_bytes));
	add(o, "probe_hits", json_object_new_int64((int64_t)in->probe_hits));
	add(o, "not_measured",
	    json_object_new_string(
		    "native allocations (libc's malloc called from C code) and copies: a "
		    "library loaded into a running process cannot interpose on code already "
		    "bound; `run` preloads it and sees them"));
	return o;
}

static struct json_object *memory_json(const struct facts_memory *m, const uint64_t *stats)
{
	struct json_object *o = json_object_new_object(), *exact, *est;

	/* The preloaded sampler's (run), or the one put into the process
	 * (--pid: the "attach" object says so). */
	add(o, "mode", json_object_new_string("sampler"));
	add(o, "python_processes", json_object_new_int(m->python_processes));
	add(o, "sampler_loaded", json_object_new_int(m->sampler_loaded));
	add(o, "sampler_not_loaded", json_object_new_int(m->sampler_not_loaded));
	add(o, "sample_bytes", json_object_new_int64((int64_t)m->sample_bytes));
	add(o, "copy_sample_bytes", json_object_new_int64((int64_t)m->copy_sample_bytes));
	if (m->probe_links)
		add(o, "probe_links", json_object_new_string(m->probe_links));
	/* The sampler's exact byte counts (processes whose final counts could
	 * be read: normal exit, or still running) against what the samples
	 * estimate, then what reached the profile. */
	exact = json_object_new_object();
	add(exact, "processes", json_object_new_int(m->counted_processes));
	add(exact, "alloc_mb", mb(m->alloc_bytes));
	add(exact, "python_mb", mb(m->python_bytes));
	add(exact, "copy_mb", mb(m->copy_bytes));
	add(exact, "sampled_alloc_mb", mb(m->sampled_alloc_bytes));
	add(exact, "sampled_python_mb", mb(m->sampled_python_bytes));
	add(exact, "sampled_copy_mb", mb(m->sampled_copy_bytes));
	add(o, "sampler_counts", exact);
	est = json_object_new_object();
	add(est, "alloc_mb", mb(m->profiled_alloc_bytes));
	add(est, "python_mb", mb(m->profiled_python_bytes));
	add(est, "net_growth_mb", mb(m->profiled_net_growth_bytes));
	add(est, "copy_mb", mb(m->profiled_copy_bytes));
	add(est, "native_threads_mb", mb(m->profiled_native_threads_bytes));
	add(est, "unattributed_mb", mb(m->profiled_unattributed_bytes));
	add(est, "not_python_mb", mb(m->profiled_not_python_bytes));
	add(o, "profiled", est);
	add(o, "records", json_object_new_int64((int64_t)m->records));
	add(o, "records_lost", json_object_new_int64((int64_t)m->records_lost));
	if (stats[STAT_MEM_EVENTS])
		add(o, "bpf_ns_per_event",
		    json_object_new_double((double)stats[STAT_MEM_NS] / stats[STAT_MEM_EVENTS]));
	add(o, "frees_of_unknown_blocks",
	    json_object_new_int64((int64_t)m->frees_of_unknown_blocks));
	add(o, "untracked_blocks", json_object_new_int64((int64_t)m->untracked_blocks));
	add(o, "table_overflows", json_object_new_int64((int64_t)m->table_overflows));
	add(o, "stale_frees", json_object_new_int64((int64_t)m->stale_frees));
	add(o, "foreign_allocator_processes", json_object_new_int(m->foreign_allocator_processes));
	add(o, "native_allocations_unseen_processes",
	    json_object_new_int(m->native_allocations_unseen_processes));
	add(o, "python_allocator_unwrapped_processes",
	    json_object_new_int(m->python_allocator_unwrapped_processes));
	return o;
}

static struct json_object *thread_json(const struct facts_thread *t)
{
	struct json_object *o = json_object_new_object();

	add(o, "pid", json_object_new_int(t->pid));
	add(o, "tid", json_object_new_int(t->tid));
	add(o, "name", json_object_new_string(t->name ? t->name : ""));
	add(o, "main_thread", json_object_new_boolean(t->main_thread));
	add(o, "samples", json_object_new_int64(t->samples));
	add(o, "cpu_s", seconds(t->cpu_ns));
	add(o, "blocked_s", seconds(t->blocked_ns));
	add(o, "gil_wait_s", seconds(t->gil_ns));
	return o;
}

static struct json_object *interpreter_json(const struct facts_interpreter *in)
{
	struct json_object *o = json_object_new_object();

	add(o, "pid", json_object_new_int(in->pid));
	add(o, "version", json_object_new_string(in->version));
	add(o, "path", json_object_new_string(in->path));
	add(o, "static", json_object_new_boolean(in->static_build));
	add(o, "free_threaded", json_object_new_boolean(in->free_threaded));
	/* Whether that build's GIL was on when the process was recognised
	 * (its wait is measured all the same). */
	if (in->free_threaded && in->gil_enabled >= 0)
		add(o, "gil_enabled", json_object_new_boolean(in->gil_enabled));
	/* Whether its GIL wait is measured, and if not why. */
	add(o, "gil_wait_measured", json_object_new_boolean(in->gil_wait_measured));
	if (!in->gil_wait_measured)
		add(o, "gil_wait_unmeasured", json_object_new_string(in->gil_wait_unmeasured));
	if (in->layout_from_interpreter[0])
		add(o, "layout_from_interpreter",
		    json_object_new_string(in->layout_from_interpreter));
	return o;
}

static struct json_object *timeline_json(const struct profile *p)
{
	const struct profile_timeline *tl = profile__timeline(p);
	struct json_object *t = json_object_new_object();

	/* How the stack timeline was thinned (profile.h has the rule). */
	add(t, "events", json_object_new_int(tl->n));
	add(t, "max_events", json_object_new_int(TIMELINE_MAX_EVENTS));
	add(t, "slot_s", json_object_new_double(tl->slot_ns / 1e9));
	add(t, "samples_dropped", json_object_new_int64((int64_t)tl->dropped));
	return t;
}

static struct json_object *decorator_json(const struct facts_decorator *d)
{
	struct json_object *o = json_object_new_object();

	add(o, "builtin_provided", json_object_new_boolean(d->provided));
	if (d->why && d->why[0])
		add(o, "builtin_why", json_object_new_string(d->why));
	add(o, "functions", json_object_new_int(d->functions));
	add(o, "bad_report_lines", json_object_new_int64((int64_t)d->bad_report_lines));
	add(o, "refused_past_limit", json_object_new_int64((int64_t)d->refused_past_limit));
	return o;
}

/* --pid --memory's duty cycle (memduty.h). */
static struct json_object *duty_json(const struct facts_duty *d)
{
	struct json_object *o = json_object_new_object();

	add(o, "budget_percent_of_program_cpu", json_object_new_double(100 * d->budget));
	add(o, "cycle_s", json_object_new_double(d->cycle_s));
	add(o, "windows", json_object_new_int64((int64_t)d->windows));
	add(o, "open_s", json_object_new_double(d->open_s));
	add(o, "open_fraction", json_object_new_double(d->open_part));
	add(o, "window_part_min", json_object_new_double(d->part_min));
	add(o, "window_part_max", json_object_new_double(d->part_max));
	add(o, "ns_per_hit", json_object_new_double(d->hit_ns));
	add(o, "ns_per_hit_from",
	    json_object_new_string(d->hit_measured ? "measured here" : "assumed"));
	add(o, "hits", json_object_new_int64((int64_t)d->hits));
	add(o, "cost_s", json_object_new_double(d->cost_s));
	add(o, "program_cpu_s", json_object_new_double(d->program_cpu_s));
	add(o, "cost_percent_of_program_cpu",
	    d->program_cpu_s > 0 ? json_object_new_double(100 * d->cost_s / d->program_cpu_s)
				 : NULL);
	add(o, "partial_windows", json_object_new_int64((int64_t)d->partial_windows));
	add(o, "slowdown", json_object_new_double(d->slowdown));
	add(o, "slowdown_relative_error",
	    d->slowdown_rel_error >= 0 ? json_object_new_double(d->slowdown_rel_error) : NULL);
	add(o, "own_cpu_samples_expected", json_object_new_double(d->own_expected));
	add(o, "own_cpu_samples_in_windows", json_object_new_double(d->own_had));
	add(o, "samples_dropped", json_object_new_int64((int64_t)d->held_dropped));
	add(o, "allocation_calls_estimated", json_object_new_double(d->hits_estimated));
	add(o, "window_trap_share", json_object_new_double(d->window_trap_share));
	add(o, "totals_low", json_object_new_boolean(d->totals_low));
	add(o, "placing_s", json_object_new_double(d->place_s));
	add(o, "windows_not_all_placed", json_object_new_int(d->place_failed));
	add(o, "estimate",
	    json_object_new_string(
		    "the probes are in place for one window of each cycle, at a random place in "
		    "it, and a line's allocation is estimated for all the time from the "
		    "windows': a sample weighs its cycle's time over its window's, times the "
		    "slowdown: the traps take window_trap_share of the program's CPU time in a "
		    "window, so it gets less done there, and slowdown is the own CPU samples "
		    "(those not in a trap) the windows shorter than their cycle would have had "
		    "at their cycles' pace over those they had (a ratio estimate, pooled over "
		    "the windows; allocation per unit of the program's own CPU time is taken to "
		    "be the same in and out of them, which code that the traps make slower "
		    "besides breaks: the estimate is then low; code that did nothing but "
		    "allocate, window_trap_share 0.6-0.9, was measured at 0.24-0.53 of its own "
		    "count).  A line's share of the allocations does not depend on it"));
	return o;
}

static struct json_object *uprobes_json(const struct facts_uprobes *u)
{
	struct json_object *o = json_object_new_object(), *sites = json_object_new_array();
	int i;

	add(o, "mode", json_object_new_string("uprobes"));
	if (u->probe_links)
		add(o, "probe_links", json_object_new_string(u->probe_links));
	for (i = 0; i < u->nprobes && i < FACTS_MAX_PROBES; i++) {
		const struct facts_probe_site *s = &u->probes[i];
		struct json_object *so = json_object_new_object();

		add(so, "function", json_object_new_string(s->function));
		add(so, "module", json_object_new_string(s->module));
		if (s->offset >= 0)
			add(so, "offset", json_object_new_int(s->offset));
		else
			add(so, "not_probed", json_object_new_string(s->not_probed));
		json_object_array_add(sites, so);
	}
	add(o, "probes", sites);
	/* One process of a host's run: its hits; the host's are in the index. */
	if (u->host) {
		add(o, "host_hits_in", json_object_new_string("index.json"));
		if (!u->hits_known) {
			add(o, "hits", NULL);
			if (u->ns_per_hit >= 0)
				add(o, "ns_per_hit_measured",
				    json_object_new_double(u->ns_per_hit));
			goto measured;
		}
	}
	add(o, "hits", json_object_new_int64((int64_t)u->hits));
	if (u->elapsed_s > 0)
		add(o, "hits_per_s", json_object_new_double(u->hits / u->elapsed_s));
	if (u->ns_per_hit >= 0) {
		add(o, "ns_per_hit_measured", json_object_new_double(u->ns_per_hit));
		if (u->elapsed_s > 0)
			add(o, "estimated_cost_cpu_percent",
			    json_object_new_double(100.0 * u->hits * u->ns_per_hit / 1e9 /
						   u->elapsed_s));
	}
measured:
	if (u->has_duty)
		add(o, "duty_cycle", duty_json(&u->duty));
	add(o, "not_measured",
	    json_object_new_string(
		    "frees, footprint, peaks, leaks and net growth (they need `run`, "
		    "which preloads the sampler): n_malloc_mb and the fields with it hold "
		    "gross allocation here, not Scalene's net growth; the Python share of "
		    "allocations that "
		    "bypass the exported PyObject_/PyMem_ functions (inlined by "
		    "LTO builds, or internal calls): those count as native"));
	return o;
}

struct json_object *output_labels_json(const struct proc_labels *l)
{
	struct json_object *o = json_object_new_object();
	const struct {
		const char *key, *value;
	} kv[] = {
		{ "cgroup", l->cgroup },
		{ "container.id", l->container_id },
		{ "k8s.pod.uid", l->pod_uid },
		{ "k8s.namespace.name", l->k8s_namespace },
		{ "k8s.pod.name", l->k8s_pod_name },
	};
	size_t i;

	for (i = 0; o && i < sizeof(kv) / sizeof(kv[0]); i++)
		if (kv[i].value[0])
			add(o, kv[i].key, json_object_new_string(kv[i].value));
	return o;
}

struct json_object *output_identity_json(const struct facts_process *pr)
{
	struct json_object *o = json_object_new_object(), *cmdline = NULL;
	int i;

	add(o, "pid", json_object_new_int(pr->pid));
	add(o, "ns_pid", pr->ns_pid >= 0 ? json_object_new_int(pr->ns_pid) : NULL);
	add(o, "ppid", json_object_new_int(pr->ppid));
	add(o, "uid", json_object_new_int64(pr->uid));
	add(o, "comm", json_object_new_string(pr->comm ? pr->comm : ""));
	/* null: it could not be read */
	if (pr->cmdline)
		cmdline = json_object_new_array();
	for (i = 0; cmdline && i < pr->ncmdline; i++)
		json_object_array_add(cmdline, json_object_new_string(pr->cmdline[i]));
	add(o, "cmdline", cmdline);
	if (pr->labels)
		add(o, "labels", output_labels_json(pr->labels));
	return o;
}

static struct json_object *process_json(const struct facts_process *pr)
{
	struct json_object *o = output_identity_json(pr);

	if (pr->ended)
		add(o, "ended", json_object_new_string(pr->ended));
	return o;
}

struct json_object *output_facts_json(const struct facts *f, const struct profile *p)
{
	struct json_object *o = json_object_new_object(), *un, *list;
	int i;

	if (!o)
		return NULL;
	/* The profiler that wrote the profile (VERSION). */
	add(o, "profiler_version", json_object_new_string(SCALENE_BPF_VERSION));
	if (f->has_async)
		add(o, "async", async_json(&f->async));
	add(o, "sampling_rate_hz", json_object_new_int64(f->rate_hz));
	add(o, "sampling_period_ns", json_object_new_int64((int64_t)f->period_ns));
	add(o, "total_sampled_s", seconds(f->total_sampled_ns));
	/* Blocked time left out of the percentages: parked worker threads'
	 * (unless --idle), added up in BPF. */
	add(o, "uncounted_blocked_s", seconds((double)f->bpf.stats[STAT_IDLE_NS]));
	add(o, "not_python_s", seconds(f->not_python_ns));
	/* The CPU time of our uprobes' hits (the trap, our program, the
	 * emulated instruction), sampled in the program's threads and left out
	 * of its lines and of total_sampled_s. */
	if (f->probe_check)
		add(o, "probe_overhead_s", seconds((double)f->bpf.stats[STAT_PROBE_NS]));
	/* While the program's threads ran, the time their CPUs were taken
	 * away by the hypervisor (steal) or spent in interrupts, where the
	 * kernel leaves both out of a thread's run time: left out of the
	 * lines' CPU time, as from time.thread_time(). */
	if (f->bpf.have_stats)
		add(o, "stolen_s", seconds((double)f->bpf.stats[STAT_STOLEN_NS]));
	/* Of total_sampled_s, the blocked time spent waiting for the GIL (it
	 * is in the lines' n_sys_percent; n_gil_wait_percent names it). */
	add(o, "gil_wait_s", seconds(f->gil_wait_ns));
	un = json_object_new_object();
	for (i = 0; i < UNATTR_MAX; i++)
		add(un, unattr_names[i], seconds(f->unattributed_ns[i]));
	add(o, "unattributed", un);
	/* Of total_sampled_s, on the lines: the CPU time of threads with no
	 * Python frame (native libraries' workers), credited as native time to
	 * the line their process's main thread was at. */
	add(o, "native_threads_credited_s", seconds(f->native_threads_ns));
	add(o, "bpf", bpf_json(&f->bpf));
	if (f->has_native)
		add(o, "native", native_json(&f->native));
	if (f->has_kernel)
		add(o, "kernel", kernel_json(&f->kernel));
	if (f->has_gpu)
		add(o, "gpu", gpu_json(&f->gpu, f->bpf.stats));
	if (f->has_memory) {
		struct json_object *mem = memory_json(&f->memory, f->bpf.stats);

		if (f->has_inject)
			add(mem, "attach", inject_json(&f->inject));
		add(o, "memory", mem);
	}
	list = json_object_new_array();
	for (i = 0; i < f->nthreads; i++)
		json_object_array_add(list, thread_json(&f->threads[i]));
	add(o, "threads", list);
	add(o, "processes_retired", json_object_new_int64(f->processes_retired));
	/* Threads past the per-thread limit, counted together in the last
	 * entry ("(further threads)"). */
	add(o, "threads_folded", json_object_new_int64(f->threads_folded));
	list = json_object_new_array();
	for (i = 0; i < f->ninterpreters && i < FACTS_MAX_INTERPRETERS; i++)
		json_object_array_add(list, interpreter_json(&f->interpreters[i]));
	add(o, "interpreters", list);
	/* What the reader should know before trusting the profile: the views
	 * show these. */
	list = json_object_new_array();
	for (i = 0; i < f->nwarnings && i < FACTS_MAX_WARNINGS; i++)
		json_object_array_add(list, json_object_new_string(f->warnings[i]));
	add(o, "warnings", list);
	add(o, "timeline", timeline_json(p));
	if (f->has_decorator)
		add(o, "profile_decorator", decorator_json(&f->decorator));
	/* Attached with uprobes, memory is theirs (a run's sampler and uprobes
	 * do not go together). */
	if (f->has_uprobes)
		add(o, "memory", uprobes_json(&f->uprobes));
	if (f->has_process)
		add(o, "process", process_json(&f->process));
	return o;
}
