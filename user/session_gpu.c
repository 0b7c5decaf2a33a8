// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU in the session: the GPU library's probes (user/gpu/gpu.h) as BPF
 * hands them over.  A traced CUDA call arrives as a sample record with the
 * calling thread's stack (MODE_GPU_API); the library's state at its start
 * and exit and its batches of device records as EV_GPU records.  The
 * profile joins them (profile_gpu.c).
 */
#include <errno.h>
#include <string.h>

#include "profile.h"
#include "session_int.h"

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
		}
	}
	/* Its samples wait for the device's use from now on, when CUPTI
	 * collects in it. */
	if (!r->read_err && st.magic == SCALENE_BPF_GPU_MAGIC && st.status == GPU_S_ACTIVE)
		profile__gpu_start(s->profile, tp->pid);
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

void sgpu_launch(struct session *s, struct tproc *tp, const struct sample_event *ev,
		 const struct frame_ref *frames, int nframes)
{
	struct gpu_launch_in l = {
		.tgid = tp->pid,
		.correlation_id = (uint32_t)ev->mem_addr,
		.api_class = ev->mem_flags,
		.frames = frames,
		.nframes = nframes,
	};

	profile__gpu_launch(s->profile, &l);
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
	}
	out->nprocs = i;
	out->procs_past = s->gpu_procs_past;
	out->batches = s->gpu_batches;
	out->bad_batches = s->gpu_bad_batches;
}

void session__settle_gpu(struct session *s)
{
	if (s->profile)
		profile__gpu_settle(s->profile, UINT64_MAX);
}
