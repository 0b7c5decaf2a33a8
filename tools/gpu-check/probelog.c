// SPDX-License-Identifier: BSD-2-Clause
/*
 * The GPU library's side checked without BPF: preloaded (LD_PRELOAD) into a
 * CUDA program that runs with CUDA_INJECTION64_PATH set to
 * libscalene-bpf-gpu.so, this library defines the probe functions the GPU
 * library calls through its PLT (user/gpu/inject.c, gpu.h), so its calls come
 * here instead of to the library's empty ones, and writes each as one JSON
 * line to the file named by GPU_CHECK_PROBE_LOG:
 *
 *   {"ev":"init","t":NS,"abi":N,"state":{...}}
 *   {"ev":"api","t":NS,"tid":N,"corr":N,"cbid":N,"domain":N,"class":N}
 *   {"ev":"alias","t":NS,"inner":N,"outer":N}
 *   {"ev":"rec","kind":N,"corr":N,"start":NS,"end":NS,"bytes":N,"flags":N,
 *    "copy_kind":N,"memory_kind":N,"stream":N,"device":N,"name":"..."}
 *   {"ev":"exit","t":NS,"state":{...}}
 *
 * t is CLOCK_MONOTONIC (Python's time.monotonic_ns()), as is every record's
 * time once the library's state says clock 1.  What BPF would read from the
 * target (the state block, a kernel's name) is read here directly: this runs
 * inside the target.  tools/gpu-check/verify.py judges the log against what
 * check.py asked the GPU to do.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static int opened;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The log, opened at the first probe (unbuffered lines: a program that
 * ends with _exit keeps what was written). */
static FILE *log_file(void)
{
	const char *path;

	if (opened)
		return out;
	opened = 1;
	path = getenv("GPU_CHECK_PROBE_LOG");
	if (path && *path) {
		out = fopen(path, "a");
		if (out)
			setvbuf(out, NULL, _IOLBF, 0);
	}
	if (!out)
		fprintf(stderr, "probelog: GPU_CHECK_PROBE_LOG is not a file it can write: "
				"nothing is logged\n");
	return out;
}

static void json_str(FILE *f, const char *s, size_t max)
{
	size_t i;

	fputc('"', f);
	for (i = 0; s && s[i] && i < max; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void state_json(FILE *f, const struct scalene_bpf_gpu_state *st)
{
	if (!st || st->magic != SCALENE_BPF_GPU_MAGIC) {
		fputs("null", f);
		return;
	}
	fprintf(f,
		"{\"abi\":%u,\"status\":%u,\"failed_call\":%u,\"cupti_error\":%u,\"clock\":%u,"
		"\"cupti_version\":%u,\"kinds\":%u,\"api_callbacks\":%u,\"api_failed\":%u,"
		"\"api_calls\":%llu,\"api_aliases\":%llu,\"records\":%llu,\"batches\":%llu,"
		"\"incomplete\":%llu,\"invalid\":%llu,\"lost\":%llu,\"buffers_refused\":%llu,"
		"\"buffers_malformed\":%llu,\"cupti_from\":%u,\"calls_probed\":%llu}",
		st->abi, st->status, st->failed_call, st->cupti_error, st->clock, st->cupti_version,
		st->kinds, st->api_callbacks, st->api_failed, (unsigned long long)st->api_calls,
		(unsigned long long)st->api_aliases, (unsigned long long)st->records,
		(unsigned long long)st->batches, (unsigned long long)st->incomplete,
		(unsigned long long)st->invalid, (unsigned long long)st->lost,
		(unsigned long long)st->buffers_refused, (unsigned long long)st->buffers_malformed,
		st->cupti_from, (unsigned long long)st->calls_probed);
}

static void state_event(const char *ev, const void *st, int abi)
{
	FILE *f;

	pthread_mutex_lock(&lock);
	f = log_file();
	if (f) {
		fprintf(f, "{\"ev\":\"%s\",\"t\":%llu,\"pid\":%d", ev, now_ns(), (int)getpid());
		if (abi >= 0)
			fprintf(f, ",\"abi\":%d", abi);
		fputs(",\"state\":", f);
		state_json(f, st);
		fputs("}\n", f);
	}
	pthread_mutex_unlock(&lock);
}

EXPORT void scalene_bpf_probe_gpu_init(void *st, unsigned int abi)
{
	state_event("init", st, (int)abi);
}

EXPORT void scalene_bpf_probe_gpu_exit(void *st)
{
	state_event("exit", st, -1);
}

EXPORT void scalene_bpf_probe_gpu_api(uint64_t correlation_id, unsigned int cbid,
				      unsigned int domain, unsigned int class)
{
	FILE *f;

	pthread_mutex_lock(&lock);
	f = log_file();
	if (f)
		fprintf(f,
			"{\"ev\":\"api\",\"t\":%llu,\"tid\":%ld,\"corr\":%llu,\"cbid\":%u,"
			"\"domain\":%u,\"class\":%u}\n",
			now_ns(), (long)syscall(SYS_gettid), (unsigned long long)correlation_id,
			cbid, domain, class);
	pthread_mutex_unlock(&lock);
}

EXPORT void scalene_bpf_probe_gpu_api_alias(uint64_t inner, uint64_t outer)
{
	FILE *f;

	pthread_mutex_lock(&lock);
	f = log_file();
	if (f)
		fprintf(f, "{\"ev\":\"alias\",\"t\":%llu,\"inner\":%llu,\"outer\":%llu}\n",
			now_ns(), (unsigned long long)inner, (unsigned long long)outer);
	pthread_mutex_unlock(&lock);
}

EXPORT void scalene_bpf_probe_gpu_records(const struct scalene_bpf_gpu_rec *recs, uint64_t count,
					  void *st)
{
	uint64_t i;
	FILE *f;

	(void)st;
	pthread_mutex_lock(&lock);
	f = log_file();
	for (i = 0; f && i < count; i++) {
		const struct scalene_bpf_gpu_rec *r = &recs[i];

		fprintf(f,
			"{\"ev\":\"rec\",\"kind\":%u,\"corr\":%u,\"start\":%llu,\"end\":%llu,"
			"\"bytes\":%llu,\"flags\":%u,\"copy_kind\":%u,\"memory_kind\":%u,"
			"\"stream\":%u,\"device\":%u,\"graph\":%u,\"name\":",
			r->kind, r->correlation_id, (unsigned long long)r->start_ns,
			(unsigned long long)r->end_ns, (unsigned long long)r->bytes, r->flags,
			r->copy_kind, r->memory_kind, r->stream_id, r->device_id, r->graph_id);
		if (r->name)
			json_str(f, (const char *)(uintptr_t)r->name, 512);
		else
			fputs("null", f);
		fputs("}\n", f);
	}
	pthread_mutex_unlock(&lock);
}

EXPORT void scalene_bpf_probe_gpu_name(uint64_t name)
{
	(void)name; /* names are logged with their records */
}
