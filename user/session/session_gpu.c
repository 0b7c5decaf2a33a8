// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU in the session: the GPU library's probes (user/gpu/gpu.h) as BPF
 * hands them over.  A traced CUDA call arrives as a sample record with the
 * calling thread's stack (MODE_GPU_API); the library's state at its start
 * and exit and its batches of device records as EV_GPU records.  The
 * profile joins them (profile_gpu.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/hmap.h"
#include "model/profile.h"
#include "session/session_int.h"

static struct session_gpu_proc *gpu_proc(struct session *s, int pid)
{
	int i;

	for (i = 0; i < s->ngpu; i++) {
		if (s->gpu[i].pid == pid)
			return &s->gpu[i];
	}
	if (s->ngpu == SESSION_GPU_PROCS) {
		s->gpu_procs_past++;
		return NULL;
	}
	memset(&s->gpu[s->ngpu], 0, sizeof(s->gpu[0]));
	s->gpu[s->ngpu].pid = pid;
	return &s->gpu[s->ngpu++];
}

static void on_state(struct session *s, struct tproc *tp, const struct gpu_record *r)
{
	struct session_gpu_proc *g = gpu_proc(s, tp->pid);
	struct scalene_bpf_gpu_state st;

	memcpy(&st, r->state, sizeof(st));
	if (g) {
		g->read_err = r->read_err;
		if (!r->read_err && st.magic == SCALENE_BPF_GPU_MAGIC) {
			g->st = st;
			g->final = r->phase == GPU_EXIT;
			if (st.status == GPU_S_ACTIVE && !g->active_ns)
				g->active_ns = mono_ns();
		}
	}
	/* Its samples wait for the device's use from now on, when CUPTI
	 * collects in it. */
	if (!r->read_err && st.magic == SCALENE_BPF_GPU_MAGIC && st.status == GPU_S_ACTIVE)
		profile__gpu_start(s->profile, tp->pid, st.call_sample);
}

/* C++ names demangled with libstdc++'s __cxa_demangle, found at run time
 * (the profiler links no C++ runtime); where it is missing, names stay
 * mangled. */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static demangle_fn demangler(void)
{
	static demangle_fn fn;
	static bool tried;
	void *h;

	if (tried)
		return fn;
	tried = true;
	h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (h)
		fn = (demangle_fn)dlsym(h, "__cxa_demangle");
	return fn;
}

void sgpu_name(struct session *s, struct tproc *tp, const struct gpu_name_record *r)
{
	char name[GPU_NAME_BYTES];
	demangle_fn dm = demangler();
	char *out = NULL;
	int status = -1;

	if (!tp || !s->profile)
		return;
	if (r->len <= 0) {
		snprintf(name, sizeof(name), "[kernel name unreadable at 0x%llx]",
			 (unsigned long long)r->addr);
	} else {
		memcpy(name, r->name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
	}
	if (dm && r->len > 0 && name[0] == '_' && name[1] == 'Z')
		out = dm(name, NULL, NULL, &status);
	profile__gpu_name(s->profile, tp->pid, r->addr, out && !status ? out : name);
	free(out);
}

void sgpu_record(struct session *s, struct tproc *tp, const struct gpu_record *r)
{
	if (!tp)
		return;
	switch (r->phase) {
	case GPU_INIT:
	case GPU_EXIT:
		on_state(s, tp, r);
		break;
	case GPU_ALIAS:
		profile__gpu_alias(s->profile, tp->pid, (uint32_t)r->inner, (uint32_t)r->outer);
		break;
	case GPU_RECORDS:
		s->gpu_batches++;
		if (r->read_err || r->count > GPU_BATCH) {
			s->gpu_bad_batches++;
			break;
		}
		profile__gpu_records(s->profile, tp->pid, r->recs, (int)r->count);
		break;
	default:
		s->bad_records++;
	}
}

void sgpu_facts(struct session *s, struct facts_gpu *out)
{
	int i;

	profile__gpu_totals(s->profile, &out->totals);
	for (i = 0; i < s->ngpu && i < FACTS_GPU_PROCS; i++) {
		out->procs[i].pid = s->gpu[i].pid;
		out->procs[i].final = s->gpu[i].final;
		out->procs[i].read_err = s->gpu[i].read_err;
		out->procs[i].st = s->gpu[i].st;
		/* Both CLOCK_MONOTONIC (the library's clock and ours). */
		out->procs[i].lost_after_s =
			s->gpu[i].st.status == GPU_S_LOST && s->gpu[i].active_ns &&
					s->gpu[i].st.lost_ns > s->gpu[i].active_ns
				? (s->gpu[i].st.lost_ns - s->gpu[i].active_ns) / 1e9
				: -1;
	}
	out->nprocs = i;
	out->procs_past = s->gpu_procs_past;
	out->batches = s->gpu_batches;
	out->bad_batches = s->gpu_bad_batches;
	out->stacks_dropped = s->gpu_stacks_dropped;
	out->calls_no_stack = s->gpu_calls_no_stack;
}

void session__settle_gpu(struct session *s)
{
	if (s->profile)
		profile__gpu_settle(s->profile, UINT64_MAX);
}

/* Stacks of traced calls kept, and launch sites per process and stack. */
#define GPU_STACKS_MAX 65536
#define GPU_SITES_MAX (1u << 18)

struct gpu_site_key {
	int tgid;
	int pad;
	uint64_t stack;
};

void sgpu_stack(struct session *s, const struct agg_stack_record *r)
{
	struct sample_event *ev;
	size_t size = SAMPLE_HDR_SIZE + r->nframes * sizeof(struct py_frame);

	if (!s->gpu_stacks && !(s->gpu_stacks = hmap__new(sizeof(uint64_t))))
		return;
	if (hmap__get(s->gpu_stacks, &r->id))
		return;
	if (hmap__count(s->gpu_stacks) >= GPU_STACKS_MAX) {
		s->gpu_stacks_dropped++;
		return;
	}
	ev = calloc(1, size);
	if (!ev)
		return;
	ev->hdr.type = EV_SAMPLE;
	ev->hdr.tgid = r->hdr.tgid;
	ev->mode = MODE_GPU_API;
	ev->status = WALK_OK;
	ev->nframes = r->nframes;
	ev->elided = r->elided;
	memcpy(ev->frames, r->frames, r->nframes * sizeof(struct py_frame));
	if (hmap__put(s->gpu_stacks, &r->id, ev))
		free(ev);
}

/* The launch site of a call's stack in process tp: resolved once per
 * process and stack; -1 when the stack is not known. */
static int call_site(struct session *s, struct tproc *tp, const struct gpu_call_record *c)
{
	struct frame_ref frames[MAX_FRAMES + 1];
	struct gpu_site_key k = { .tgid = tp->pid, .stack = c->stack };
	const struct sample_event *ev;
	int unattributed = -1, n, site;
	intptr_t v;

	/* A thread with no Python frame: the main thread's line, as its
	 * CPU time would. */
	if (!c->stack)
		return GPU_SITE_MAIN_THREAD;
	if (!s->gpu_sites && !(s->gpu_sites = hmap__new(sizeof(k))))
		return 0;
	v = (intptr_t)hmap__get(s->gpu_sites, &k);
	if (v)
		return (int)v - 1;
	ev = s->gpu_stacks ? hmap__get(s->gpu_stacks, &c->stack) : NULL;
	if (!ev) {
		s->gpu_calls_no_stack++;
		return -1;
	}
	n = session_frames(s, tp, ev, frames, &unattributed);
	site = profile__gpu_site(s->profile, frames, n);
	/* A stack whose code could not be read is not settled for good. */
	if ((n || unattributed != UNATTR_UNREADABLE) && hmap__count(s->gpu_sites) < GPU_SITES_MAX)
		hmap__put(s->gpu_sites, &k, (void *)(intptr_t)(site + 1));
	return site;
}

void sgpu_call(struct session *s, struct tproc *tp, const struct gpu_call_record *c)
{
	if (!tp || !s->profile)
		return;
	profile__gpu_call(s->profile, tp->pid, c->correlation_id, call_site(s, tp, c), c->ts);
}

void sgpu_free(struct session *s)
{
	size_t it = 0;
	void *v;

	while (s->gpu_stacks && hmap__next(s->gpu_stacks, &it, NULL, &v))
		free(v);
	hmap__free(s->gpu_stacks);
	hmap__free(s->gpu_sites);
}
