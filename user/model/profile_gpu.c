// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU work in the profile model (profile.h: profile__gpu_*).
 *
 * Two views of the same records.  Launch sites: each traced CUDA call is
 * remembered by its correlation id with the line that made it; the device
 * records that carry the id (kernels, copies, memsets, allocations) are
 * credited to that line.  Scalene's fields: the GPU's use while a line ran,
 * i.e. for each CPU sample the share of its time during which a kernel of
 * the process ran (the union of the kernel intervals, as the driver counts
 * utilisation) and the device memory the process had allocated at its end.
 * The records of a moment arrive a flush period or more after it, so a
 * sample waits in its process's queue until profile__gpu_settle() says the
 * records of its time are in.
 *
 * Sampled readings (NVML, attach mode) take the same way: a utilisation
 * reading is a period busy for that fraction of its time (a kernel is one
 * busy for all of it), a memory reading an event that brings the process's
 * device memory to that level.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "base/hmap.h"
#include "model/profile.h"
#include "model/profile_int.h"

/* Launch sites remembered, all processes together: the oldest are
 * forgotten first (a record of theirs then counts as unmatched). */
#define GPU_LAUNCHES_KEPT (1u << 20)
/* Calls whose device records have not come yet, per process: a sample is
 * settled only once every call made before its end has its records (a
 * kernel running for seconds is delivered when it ends), waiting at most
 * GPU_OPEN_WAIT_NS past the usual delay for a call that brings none (one
 * that failed, say), and following at most GPU_OPEN_MAX calls. */
#define GPU_OPEN_MAX 65536
#define GPU_OPEN_WAIT_NS 30000000000ULL
/* Calls of threads with no Python frame waiting for their process's main
 * thread's next record, per process. */
#define GPU_PENDING_MAX 65536
/* Kernel intervals and memory events are kept this long behind the oldest
 * waiting sample's window, for samples that stand for a long wait. */
#define GPU_KEEP_NS 5000000000ULL

/* Where calls were made: the line and function (NULL: outside the profiled
 * files) and the whole stack (NULL: none kept), for the GPU flame graph. */
struct gpu_site {
	struct line_stats *st, *fst;
	struct stack_stats *stk;
};

struct launch_key {
	int tgid;
	uint32_t corr;
};

/* [start, end) busy for frac of its time: 1 for a kernel, a reading's
 * share for a sampled period. */
struct interval {
	uint64_t start, end;
	double frac;
};

struct mem_event {
	uint64_t ts;
	double delta;
};

struct waiting {
	uint64_t start, end;
	double ns;
	struct line_stats *st, *fst;
};

struct pending {
	uint64_t ts; /* when the call was made (CLOCK_MONOTONIC) */
	uint32_t corr;
	bool alias; /* another id of a call (a graph's): not a call itself */
};

/* A call whose records are awaited: ring[seq % GPU_OPEN_MAX]; its
 * correlation id and those of the calls it made (aliases: a runtime call's
 * driver call), any of which its records may carry. */
#define OPEN_IDS 4
struct open_call {
	uint64_t seq, ts;
	uint32_t ids[OPEN_IDS];
	uint8_t nids;
	bool done;
};

struct gpu_proc {
	int tgid;
	double weight; /* calls each probed call stands for (1 in weight probed) */
	struct interval *iv;
	size_t niv, civ;
	struct mem_event *mev;
	size_t nmev, cmev;
	double mem_base;  /* device bytes allocated before the first event kept */
	double mem_level; /* device bytes after every event so far */
	struct waiting *q;
	size_t nq, cq;
	struct pending *pending; /* GPU_SITE_MAIN_THREAD calls, and their aliases */
	size_t npending, cpending;
	/* Device records of those calls, held until the calls have a line. */
	struct scalene_bpf_gpu_rec *held;
	size_t nheld, cheld;
	/* Calls awaiting records, oldest first: seq open_head to open_next. */
	struct open_call *open;
	struct hmap *open_by_corr; /* correlation id (and aliases) -> seq + 1 */
	uint64_t open_head, open_next;
};

struct name_key {
	int tgid;
	int pad;
	uint64_t addr;
};

struct profile_gpu {
	struct hmap *procs;	 /* tgid -> struct gpu_proc * */
	struct hmap *names;	 /* struct name_key -> interned kernel name */
	struct hmap *launches;	 /* struct launch_key -> site index + 1 */
	struct hmap *pending;	 /* struct launch_key of a call still waiting for its line */
	struct launch_key *ring; /* launches in the order seen, for forgetting */
	size_t ring_head, ring_len;
	struct hmap *sites_by_key; /* the stack (or the line) -> site index + 1 */
	struct gpu_site *sites;
	int nsites;
	struct profile_gpu_totals t;
	double mem_now; /* all processes' device bytes, for the peak */
};

/* Room for need elements.  Not profile_grow(): these arrays also shrink
 * (to empty, as samples settle), which its count-only doubling cannot
 * follow. */
static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *g;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	g = realloc(*arr, n * elem);
	if (!g)
		return false;
	*arr = g;
	*cap = n;
	return true;
}

static struct profile_gpu *gpu_get(struct profile *p)
{
	struct profile_gpu *g = p->gpu;

	if (g)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->procs = hmap__new(sizeof(int));
	g->launches = hmap__new(sizeof(struct launch_key));
	g->pending = hmap__new(sizeof(struct launch_key));
	g->sites_by_key = hmap__new(sizeof(void *));
	g->names = hmap__new(sizeof(struct name_key));
	g->ring = malloc(GPU_LAUNCHES_KEPT * sizeof(*g->ring));
	/* Site 0: launched outside the profiled files. */
	g->sites = calloc(1, sizeof(*g->sites));
	if (!g->procs || !g->launches || !g->pending || !g->sites_by_key || !g->names || !g->ring ||
	    !g->sites) {
		hmap__free(g->procs);
		hmap__free(g->names);
		hmap__free(g->launches);
		hmap__free(g->pending);
		hmap__free(g->sites_by_key);
		free(g->ring);
		free(g->sites);
		free(g);
		return NULL;
	}
	g->nsites = 1;
	p->gpu = g;
	return g;
}

static struct gpu_proc *proc_get(struct profile_gpu *g, int tgid)
{
	return g ? hmap__get(g->procs, &tgid) : NULL;
}

void profile__gpu_start(struct profile *p, int tgid, unsigned int call_sample)
{
	struct profile_gpu *g = gpu_get(p);
	struct gpu_proc *gp;

	if (!g || proc_get(g, tgid))
		return;
	gp = calloc(1, sizeof(*gp));
	if (!gp)
		return;
	gp->tgid = tgid;
	gp->weight = call_sample > 1 ? call_sample : 1;
	if (gp->weight > 1)
		g->t.call_sample = call_sample;
	if (hmap__put(g->procs, &tgid, gp)) {
		free(gp);
		return;
	}
	g->t.processes++;
}

bool profile__gpu_on(const struct profile *p)
{
	return p->gpu && p->gpu->t.processes > 0;
}

static struct gpu_stats *gpu_stats_of(struct line_stats *st)
{
	if (!st->gpu)
		st->gpu = calloc(1, sizeof(*st->gpu));
	return st->gpu;
}

/* A site per stack (the line follows from it), or per line when no stack
 * is kept; site 0 when neither is known. */
static int site_of(struct profile_gpu *g, struct line_stats *st, struct line_stats *fst,
		   struct stack_stats *stk)
{
	const void *key = stk ? (const void *)stk : (const void *)st;
	intptr_t idx;
	struct gpu_site *grown;

	if (!key)
		return 0;
	idx = (intptr_t)hmap__get(g->sites_by_key, &key);
	if (idx)
		return (int)idx - 1;
	grown = profile_grow(g->sites, g->nsites, sizeof(*grown));
	if (!grown)
		return 0;
	g->sites = grown;
	g->sites[g->nsites] = (struct gpu_site){ st, fst, stk };
	if (hmap__put(g->sites_by_key, &key, (void *)(intptr_t)(g->nsites + 1)))
		return 0;
	return g->nsites++;
}

/* Remembers a launch; the oldest is forgotten when the table is full. */
static void remember(struct profile_gpu *g, struct launch_key k, int site)
{
	if (g->ring_len == GPU_LAUNCHES_KEPT) {
		struct launch_key old = g->ring[g->ring_head];

		hmap__del(g->launches, &old);
		g->ring_head = (g->ring_head + 1) % GPU_LAUNCHES_KEPT;
		g->ring_len--;
		g->t.launches_forgotten++;
	}
	hmap__del(g->launches, &k);
	if (hmap__put(g->launches, &k, (void *)(intptr_t)(site + 1)))
		return;
	g->ring[(g->ring_head + g->ring_len) % GPU_LAUNCHES_KEPT] = k;
	g->ring_len++;
}

int profile__gpu_site(struct profile *p, const struct frame_ref *frames, int n)
{
	struct profile_gpu *g = gpu_get(p);
	struct line_stats *st = NULL, *fst = NULL;
	struct stack_stats *stk = NULL;
	int at, index;

	if (!g)
		return 0;
	if (n > 0) {
		struct stack_key k = { frames, n, NULL, NULL, false };

		stk = profile_stack_get(p, &k, &index);
	}
	at = n > 0 ? profile_attributed_frame(p, frames, n) : -1;
	if (at >= 0) {
		struct file_stats *f = profile_file_get(p, frames[at].filename);
		struct func_stats *fs;

		st = f ? profile_line_get(f, frames[at].line > 0 ? frames[at].line
								 : frames[at].firstlineno)
		       : NULL;
		fs = st ? profile_func_get(p, f, frames, n, at) : NULL;
		fst = fs ? &fs->st : NULL;
	}
	return site_of(g, st, fst, stk);
}

/* No more waiting for o: its ids are forgotten. */
static void end_wait(struct gpu_proc *gp, struct open_call *o)
{
	unsigned int i;

	if (!o->done)
		for (i = 0; i < o->nids; i++)
			hmap__del(gp->open_by_corr, &o->ids[i]);
	o->done = true;
}

/* A call made at ts whose records are now awaited. */
static void open_call(struct profile_gpu *g, struct gpu_proc *gp, uint32_t corr, uint64_t ts)
{
	struct open_call *o;

	if (!gp || !ts)
		return;
	if (!gp->open) {
		gp->open = calloc(GPU_OPEN_MAX, sizeof(*gp->open));
		gp->open_by_corr = hmap__new(sizeof(uint32_t));
		if (!gp->open || !gp->open_by_corr) {
			free(gp->open);
			hmap__free(gp->open_by_corr);
			gp->open = NULL;
			gp->open_by_corr = NULL;
			return;
		}
	}
	/* Full: the oldest is let go (its samples settle as they would
	 * without it). */
	if (gp->open_next - gp->open_head == GPU_OPEN_MAX) {
		if (!gp->open[gp->open_head % GPU_OPEN_MAX].done)
			g->t.calls_not_awaited++;
		end_wait(gp, &gp->open[gp->open_head % GPU_OPEN_MAX]);
		gp->open_head++;
	}
	o = &gp->open[gp->open_next % GPU_OPEN_MAX];
	*o = (struct open_call){ .seq = gp->open_next, .ts = ts, .ids = { corr }, .nids = 1 };
	if (hmap__put(gp->open_by_corr, &corr, (void *)(uintptr_t)(gp->open_next + 1)))
		o->done = true;
	gp->open_next++;
}

/* The open call that corr names (or NULL). */
static struct open_call *open_of(struct gpu_proc *gp, uint32_t corr)
{
	uintptr_t v = gp && gp->open_by_corr ? (uintptr_t)hmap__get(gp->open_by_corr, &corr) : 0;
	struct open_call *o;

	if (!v || v - 1 < gp->open_head)
		return NULL;
	o = &gp->open[(v - 1) % GPU_OPEN_MAX];
	return o->seq == v - 1 ? o : NULL;
}

/* A record of corr came: its call's records are no longer awaited (the
 * first of them ends the wait: a graph's kernels may come over several
 * flushes). */
static void close_call(struct gpu_proc *gp, uint32_t corr)
{
	struct open_call *o = open_of(gp, corr);

	if (o)
		end_wait(gp, o);
}

/* The time before which every call's records are in: the oldest open
 * call's, calls open since before `expire` given up. */
static uint64_t open_horizon(struct profile_gpu *g, struct gpu_proc *gp, uint64_t expire)
{
	while (gp->open && gp->open_head < gp->open_next) {
		struct open_call *o = &gp->open[gp->open_head % GPU_OPEN_MAX];

		if (!o->done && o->ts >= expire)
			return o->ts;
		if (!o->done)
			g->t.calls_without_records++;
		end_wait(gp, o);
		gp->open_head++;
	}
	return UINT64_MAX;
}

/* A call at site: counted on its line and remembered for its records. */
static void call_at(struct profile_gpu *g, struct gpu_proc *gp, int tgid, uint32_t correlation_id,
		    int site)
{
	double w = gp ? gp->weight : 1;
	struct gpu_stats *gs;

	if (!g->sites[site].st) {
		g->t.launches_outside++;
	} else {
		if ((gs = gpu_stats_of(g->sites[site].st)))
			gs->launches += w;
		if (g->sites[site].fst && (gs = gpu_stats_of(g->sites[site].fst)))
			gs->launches += w;
	}
	remember(g, (struct launch_key){ tgid, correlation_id }, site);
}

static void pend(struct profile_gpu *g, struct gpu_proc *gp, uint32_t correlation_id, bool alias,
		 uint64_t ts)
{
	if (!gp || gp->npending >= GPU_PENDING_MAX ||
	    !grow((void **)&gp->pending, &gp->cpending, gp->npending + 1, sizeof(*gp->pending)) ||
	    hmap__put(g->pending, &(struct launch_key){ gp->tgid, correlation_id }, (void *)1)) {
		if (!alias)
			g->t.launches_main_thread_lost++;
		return;
	}
	gp->pending[gp->npending++] = (struct pending){ ts, correlation_id, alias };
}

void profile__gpu_call(struct profile *p, int tgid, uint32_t correlation_id, int site,
		       uint64_t ts_ns)
{
	struct profile_gpu *g = gpu_get(p);
	struct gpu_proc *gp = proc_get(g, tgid);

	if (!g)
		return;
	g->t.launches++;
	open_call(g, gp, correlation_id, ts_ns);
	if (site == GPU_SITE_MAIN_THREAD) {
		pend(g, gp, correlation_id, false, ts_ns);
		return;
	}
	/* Its line unknown: not remembered, so its records count unmatched. */
	if (site < 0 || site >= g->nsites)
		return;
	call_at(g, gp, tgid, correlation_id, site);
}

static void credit_site(struct profile_gpu *g, struct gpu_proc *gp, int tgid,
			const struct scalene_bpf_gpu_rec *r);

void profile_gpu_main_record(struct profile *p, int tgid, const struct frame_ref *frames, int n,
			     uint64_t ts_ns)
{
	struct profile_gpu *g = p->gpu;
	struct gpu_proc *gp = proc_get(g, tgid);
	size_t i, kept = 0;
	int site = -1;

	if (!gp || !gp->npending)
		return;
	for (i = 0; i < gp->npending; i++) {
		const struct pending *e = &gp->pending[i];

		/* A record of before the call (read after it) is not the
		 * main thread waiting for it. */
		if (e->ts > ts_ns) {
			gp->pending[kept++] = *e;
			continue;
		}
		if (site < 0)
			site = profile__gpu_site(p, frames, n);
		hmap__del(g->pending, &(struct launch_key){ tgid, e->corr });
		if (e->alias) {
			remember(g, (struct launch_key){ tgid, e->corr }, site);
			continue;
		}
		call_at(g, gp, tgid, e->corr, site);
		g->t.launches_main_thread++;
	}
	gp->npending = kept;
	/* The records that waited for those calls' line. */
	for (i = 0, kept = 0; i < gp->nheld; i++) {
		const struct scalene_bpf_gpu_rec *r = &gp->held[i];

		if (hmap__get(g->pending, &(struct launch_key){ tgid, r->correlation_id }))
			gp->held[kept++] = *r;
		else
			credit_site(g, gp, tgid, r);
	}
	gp->nheld = kept;
}

void profile__gpu_alias(struct profile *p, int tgid, uint32_t inner, uint32_t outer)
{
	struct profile_gpu *g = p->gpu;
	struct gpu_proc *gp = proc_get(g, tgid);
	intptr_t idx;
	size_t i;

	if (!g)
		return;
	/* Any of its ids' records end the wait for the call. */
	struct open_call *o = open_of(gp, outer);

	if (o && o->nids < OPEN_IDS &&
	    !hmap__put(gp->open_by_corr, &inner, (void *)(uintptr_t)(o->seq + 1)))
		o->ids[o->nids++] = inner;
	idx = (intptr_t)hmap__get(g->launches, &(struct launch_key){ tgid, outer });
	if (idx) {
		remember(g, (struct launch_key){ tgid, inner }, (int)idx - 1);
		return;
	}
	/* Still waiting for the main thread's line: it waits with it. */
	if (!hmap__get(g->pending, &(struct launch_key){ tgid, outer }))
		return;
	for (i = 0; gp && i < gp->npending; i++) {
		if (gp->pending[i].corr == outer && !gp->pending[i].alias) {
			pend(g, gp, inner, true, gp->pending[i].ts);
			return;
		}
	}
}

static enum gpu_dir dir_of(const struct scalene_bpf_gpu_rec *r)
{
	switch (r->copy_kind) {
	case GPU_COPY_HTOD:
		return GPU_DIR_HTOD;
	case GPU_COPY_DTOH:
		return GPU_DIR_DTOH;
	case GPU_COPY_DTOD:
	case GPU_COPY_PTOP:
		return GPU_DIR_DTOD;
	default:
		return GPU_DIR_OTHER;
	}
}

void profile__gpu_name(struct profile *p, int tgid, uint64_t addr, const char *name)
{
	struct profile_gpu *g = gpu_get(p);
	const char *in = profile__intern(p, name);

	if (g && in)
		hmap__put(g->names, &(struct name_key){ .tgid = tgid, .addr = addr }, (void *)in);
}

static void kernel_by_name(struct gpu_stats *gs, const char *name, double ns, double w)
{
	int i;

	for (i = 0; i < gs->nnames; i++) {
		if (gs->by_name[i].name == name) {
			gs->by_name[i].count += w;
			gs->by_name[i].ns += ns;
			return;
		}
	}
	if (gs->nnames == GPU_LINE_KERNELS) {
		gs->other_count += w;
		gs->other_ns += ns;
		return;
	}
	gs->by_name[gs->nnames++] = (struct gpu_kernel){ name, w, ns };
}

/* Whether an allocation record's memory is host memory (pinned or
 * pageable, CUpti_ActivityMemoryKind 2 and 1) rather than the device's
 * (device, array, managed, static; or unknown: as CUPTI reports a plain
 * device allocation where it cannot say). */
static bool host_memory(const struct scalene_bpf_gpu_rec *r)
{
	return r->memory_kind == 1 || r->memory_kind == 2;
}

/* A record of a probed call, standing for w calls' records. */
static void credit(struct gpu_stats *gs, const struct scalene_bpf_gpu_rec *r, const char *name,
		   double w)
{
	double ns = w * (r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) : 0);
	double bytes = w * (double)r->bytes;

	switch (r->kind) {
	case GPU_REC_KERNEL:
		gs->kernels += w;
		gs->kernel_ns += ns;
		kernel_by_name(gs, name, ns, w);
		break;
	case GPU_REC_MEMCPY:
		gs->copies += w;
		gs->copy_bytes[dir_of(r)] += bytes;
		gs->copy_ns += ns;
		break;
	case GPU_REC_MEMSET:
		gs->memsets += w;
		gs->memset_bytes += bytes;
		break;
	case GPU_REC_ALLOC:
		*(host_memory(r) ? &gs->host_alloc_bytes : &gs->alloc_bytes) += bytes;
		break;
	case GPU_REC_FREE:
		*(host_memory(r) ? &gs->host_free_bytes : &gs->free_bytes) += bytes;
		break;
	}
}

static void totals_add(struct profile_gpu_totals *t, const struct scalene_bpf_gpu_rec *r)
{
	double ns = r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) : 0;

	if (r->kind == GPU_REC_KERNEL) {
		t->kernels++;
		t->kernel_ns += ns;
	} else if (r->kind == GPU_REC_MEMCPY) {
		t->copy_bytes[dir_of(r)] += (double)r->bytes;
		t->copy_ns += ns;
	} else if (r->kind == GPU_REC_MEMSET) {
		t->memset_bytes += (double)r->bytes;
	} else if (r->kind == GPU_REC_ALLOC) {
		*(host_memory(r) ? &t->host_alloc_bytes : &t->alloc_bytes) += (double)r->bytes;
	} else if (r->kind == GPU_REC_FREE) {
		*(host_memory(r) ? &t->host_free_bytes : &t->free_bytes) += (double)r->bytes;
	}
}

/* The process's device memory changes by delta bytes at ts. */
static void mem_event(struct profile_gpu *g, struct gpu_proc *gp, uint64_t ts, double delta)
{
	if (!grow((void **)&gp->mev, &gp->cmev, gp->nmev + 1, sizeof(*gp->mev)))
		return;
	gp->mev[gp->nmev++] = (struct mem_event){ ts, delta };
	gp->mem_level += delta;
	g->mem_now += delta;
	if (g->mem_now > g->t.peak_memory)
		g->t.peak_memory = g->mem_now;
}

/* A record of a call whose line is known (or never will be): to that line,
 * and to the stack that launched it. */
static void credit_site(struct profile_gpu *g, struct gpu_proc *gp, int tgid,
			const struct scalene_bpf_gpu_rec *r)
{
	intptr_t idx =
		(intptr_t)hmap__get(g->launches, &(struct launch_key){ tgid, r->correlation_id });
	double w = gp ? gp->weight : 1;

	if (r->flags & GPU_REC_F_UNSAMPLED) {
		/* Its call was not probed: the probed calls' records stand for
		 * it on their lines. */
		g->t.unsampled++;
		return;
	}
	if (!idx) {
		g->t.unmatched++;
		if (r->kind == GPU_REC_KERNEL && r->end_ns > r->start_ns)
			g->t.unmatched_kernel_ns += (double)(r->end_ns - r->start_ns);
		return;
	}
	if (!g->sites[idx - 1].st) {
		g->t.outside++;
		if (r->kind == GPU_REC_KERNEL && r->end_ns > r->start_ns)
			g->t.outside_kernel_ns += (double)(r->end_ns - r->start_ns);
	} else {
		const struct gpu_site *s = &g->sites[idx - 1];
		struct gpu_stats *gs = gpu_stats_of(s->st);
		const char *name = "";

		if (r->kind == GPU_REC_KERNEL && r->name) {
			name = hmap__get(g->names,
					 &(struct name_key){ .tgid = tgid, .addr = r->name });
			if (!name)
				name = "";
		}
		if (gs)
			credit(gs, r, name, w);
		if (s->fst && (gs = gpu_stats_of(s->fst)))
			credit(gs, r, name, w);
	}
	/* The GPU flame graph: the device time of kernels, copies and memsets
	 * by the stack that launched them, wherever it was. */
	if (g->sites[idx - 1].stk &&
	    (r->kind == GPU_REC_KERNEL || r->kind == GPU_REC_MEMCPY || r->kind == GPU_REC_MEMSET) &&
	    r->end_ns > r->start_ns)
		g->sites[idx - 1].stk->gpu_ns += w * (double)(r->end_ns - r->start_ns);
}

void profile__gpu_records(struct profile *p, int tgid, const void *recs, int n)
{
	struct profile_gpu *g = p->gpu;
	struct gpu_proc *gp = proc_get(g, tgid);
	int i;

	if (!g)
		return;
	for (i = 0; i < n; i++) {
		struct scalene_bpf_gpu_rec r;

		memcpy(&r, (const char *)recs + (size_t)i * sizeof(r), sizeof(r));
		g->t.records++;
		totals_add(&g->t, &r);
		if (!(r.flags & GPU_REC_F_UNSAMPLED))
			close_call(gp, r.correlation_id);
		/* Its call waits for its main thread's line: so does its
		 * crediting (the GPU's use below is the process's, now). */
		if (gp && !(r.flags & GPU_REC_F_UNSAMPLED) &&
		    hmap__get(g->pending, &(struct launch_key){ tgid, r.correlation_id }) &&
		    gp->nheld < GPU_PENDING_MAX &&
		    grow((void **)&gp->held, &gp->cheld, gp->nheld + 1, sizeof(*gp->held)))
			gp->held[gp->nheld++] = r;
		else
			credit_site(g, gp, tgid, &r);
		if (!gp)
			continue;
		if (r.kind == GPU_REC_KERNEL && r.end_ns > r.start_ns &&
		    grow((void **)&gp->iv, &gp->civ, gp->niv + 1, sizeof(*gp->iv)))
			gp->iv[gp->niv++] = (struct interval){ r.start_ns, r.end_ns, 1 };
		/* The device's memory: host memory taken through CUDA is not. */
		if ((r.kind == GPU_REC_ALLOC || r.kind == GPU_REC_FREE) && !host_memory(&r))
			mem_event(g, gp, r.start_ns,
				  r.kind == GPU_REC_ALLOC ? (double)r.bytes : -(double)r.bytes);
	}
}

void profile__gpu_use(struct profile *p, int tgid, uint64_t start_ns, uint64_t end_ns, double busy)
{
	struct gpu_proc *gp = proc_get(p->gpu, tgid);

	if (!gp || end_ns <= start_ns || !(busy > 0))
		return;
	if (grow((void **)&gp->iv, &gp->civ, gp->niv + 1, sizeof(*gp->iv)))
		gp->iv[gp->niv++] = (struct interval){ start_ns, end_ns, busy > 1 ? 1 : busy };
}

void profile__gpu_memory(struct profile *p, int tgid, uint64_t ts_ns, double bytes)
{
	struct gpu_proc *gp = proc_get(p->gpu, tgid);

	if (gp && bytes >= 0 && bytes != gp->mem_level)
		mem_event(p->gpu, gp, ts_ns, bytes - gp->mem_level);
}

void profile_gpu_sample(struct profile *p, int tgid, uint64_t ts, double ns, struct line_stats *st,
			struct line_stats *fst)
{
	struct gpu_proc *gp = proc_get(p->gpu, tgid);
	struct waiting *w;

	if (!gp || ns <= 0 || !grow((void **)&gp->q, &gp->cq, gp->nq + 1, sizeof(*gp->q)))
		return;
	w = &gp->q[gp->nq++];
	w->end = ts;
	w->start = ts > (uint64_t)ns ? ts - (uint64_t)ns : 0;
	w->ns = ns;
	w->st = st;
	w->fst = fst;
}

static int cmp_interval(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_event(const void *a, const void *b)
{
	const struct mem_event *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_waiting(const void *a, const void *b)
{
	const struct waiting *x = a, *y = b;

	return x->end < y->end ? -1 : x->end > y->end;
}

/* The intervals sorted and merged where they overlap: their union.  Of
 * overlapping ones busy for different fractions (not seen: a process has
 * kernel records or sampled readings), the earlier one stands for the time
 * they share, so that no time is counted twice. */
static void merge(struct gpu_proc *gp)
{
	size_t i, k = 0;

	if (!gp->niv)
		return;
	qsort(gp->iv, gp->niv, sizeof(*gp->iv), cmp_interval);
	for (i = 1; i < gp->niv; i++) {
		struct interval cur = gp->iv[i], *last = &gp->iv[k];

		if (cur.start <= last->end && cur.frac == last->frac) {
			if (cur.end > last->end)
				last->end = cur.end;
		} else if (cur.start < last->end) {
			if (cur.end <= last->end)
				continue;
			cur.start = last->end;
			gp->iv[++k] = cur;
		} else {
			gp->iv[++k] = cur;
		}
	}
	gp->niv = k + 1;
}

/* Busy ns of [a, b): its time under each merged interval, by the
 * interval's fraction. */
static double busy_in(const struct gpu_proc *gp, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = gp->niv;
	double busy = 0;

	/* The first interval that ends after a (ends grow with starts). */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (gp->iv[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < gp->niv && gp->iv[lo].start < b; lo++) {
		uint64_t s = gp->iv[lo].start > a ? gp->iv[lo].start : a;
		uint64_t e = gp->iv[lo].end < b ? gp->iv[lo].end : b;

		if (e > s)
			busy += (double)(e - s) * gp->iv[lo].frac;
	}
	return busy;
}

static void give_use(struct gpu_stats *gs, double util, double mem, double ns)
{
	gs->util_sum += util * ns;
	gs->mem_sum += mem * ns;
	gs->weight += ns;
	if (mem > gs->mem_peak)
		gs->mem_peak = mem;
}

static void settle_proc(struct profile_gpu *g, struct gpu_proc *gp, uint64_t before)
{
	size_t i, n = 0, keep = 0, ev = 0;
	uint64_t oldest = before;
	double mem = gp->mem_base;

	/* The samples due to the front, in order of their end. */
	for (i = 0; i < gp->nq; i++) {
		if (gp->q[i].end < before) {
			struct waiting t = gp->q[i];

			gp->q[i] = gp->q[n];
			gp->q[n++] = t;
		}
	}
	if (n)
		qsort(gp->q, n, sizeof(*gp->q), cmp_waiting);
	merge(gp);
	if (gp->nmev)
		qsort(gp->mev, gp->nmev, sizeof(*gp->mev), cmp_event);
	for (i = 0; i < n; i++) {
		const struct waiting *w = &gp->q[i];
		double span = (double)(w->end - w->start);
		double util = span > 0 ? busy_in(gp, w->start, w->end) / span : 0;
		struct gpu_stats *gs;

		for (; ev < gp->nmev && gp->mev[ev].ts <= w->end; ev++)
			mem += gp->mev[ev].delta;
		if (mem < 0)
			mem = 0;
		if (util > 1)
			util = 1;
		if ((gs = gpu_stats_of(w->st)))
			give_use(gs, util, mem, w->ns);
		if (w->fst && (gs = gpu_stats_of(w->fst)))
			give_use(gs, util, mem, w->ns);
		g->t.samples++;
	}
	memmove(gp->q, gp->q + n, (gp->nq - n) * sizeof(*gp->q));
	gp->nq -= n;
	/* What no waiting sample can need any more: intervals and memory
	 * events before the oldest window left, and GPU_KEEP_NS behind. */
	for (i = 0; i < gp->nq; i++) {
		if (gp->q[i].start < oldest)
			oldest = gp->q[i].start;
	}
	if (before == UINT64_MAX)
		oldest = UINT64_MAX;
	else if (oldest > before - GPU_KEEP_NS && before > GPU_KEEP_NS)
		oldest = before - GPU_KEEP_NS;
	for (; ev < gp->nmev && gp->mev[ev].ts < oldest; ev++)
		mem += gp->mev[ev].delta;
	gp->mem_base = mem < 0 ? 0 : mem;
	memmove(gp->mev, gp->mev + ev, (gp->nmev - ev) * sizeof(*gp->mev));
	gp->nmev -= ev;
	/* An interval leaves merged with all that overlapped it so far: its
	 * busy share of its length is busy time of the run. */
	for (i = 0; i < gp->niv; i++) {
		if (gp->iv[i].end < oldest) {
			g->t.busy_ns += (double)(gp->iv[i].end - gp->iv[i].start) * gp->iv[i].frac;
			continue;
		}
		gp->iv[keep++] = gp->iv[i];
	}
	gp->niv = keep;
}

void profile__gpu_settle(struct profile *p, uint64_t before_ns)
{
	struct profile_gpu *g = p->gpu;
	size_t it = 0;
	void *v;

	if (!g)
		return;
	while (hmap__next(g->procs, &it, NULL, &v)) {
		struct gpu_proc *gp = v;
		uint64_t h = before_ns;

		/* Not before the records of every call made so far are in. */
		if (before_ns != UINT64_MAX) {
			h = open_horizon(g, gp,
					 before_ns > GPU_OPEN_WAIT_NS ? before_ns - GPU_OPEN_WAIT_NS
								      : 0);
			if (h > before_ns)
				h = before_ns;
			else if ((double)(before_ns - h) > g->t.settle_wait_max_ns)
				g->t.settle_wait_max_ns = (double)(before_ns - h);
		}
		settle_proc(g, gp, h);
	}
}

void profile__gpu_totals(const struct profile *p, struct profile_gpu_totals *out)
{
	size_t it = 0;
	void *v;

	memset(out, 0, sizeof(*out));
	if (!p->gpu)
		return;
	*out = p->gpu->t;
	/* Calls still waiting for their main thread's line have none (yet). */
	while (hmap__next(p->gpu->procs, &it, NULL, &v)) {
		const struct gpu_proc *gp = v;
		size_t i;

		for (i = 0; i < gp->npending; i++)
			out->launches_main_thread_lost += !gp->pending[i].alias;
		/* Their records, held for a line that never came. */
		for (i = 0; i < gp->nheld; i++) {
			const struct scalene_bpf_gpu_rec *r = &gp->held[i];

			out->unmatched++;
			if (r->kind == GPU_REC_KERNEL && r->end_ns > r->start_ns)
				out->unmatched_kernel_ns += (double)(r->end_ns - r->start_ns);
		}
	}
}

void profile_gpu_free(struct profile *p)
{
	struct profile_gpu *g = p->gpu;
	size_t it = 0;
	void *v;

	if (!g)
		return;
	while (hmap__next(g->procs, &it, NULL, &v)) {
		struct gpu_proc *gp = v;

		free(gp->iv);
		free(gp->mev);
		free(gp->q);
		free(gp->pending);
		free(gp->held);
		free(gp->open);
		hmap__free(gp->open_by_corr);
		free(gp);
	}
	hmap__free(g->procs);
	hmap__free(g->launches);
	hmap__free(g->pending);
	hmap__free(g->sites_by_key);
	hmap__free(g->names);
	free(g->ring);
	free(g->sites);
	free(g);
	p->gpu = NULL;
}

void profile_gpu_hold_stacks(struct profile *p)
{
	struct profile_gpu *g = p->gpu;
	int i;

	for (i = 0; g && i < g->nsites; i++) {
		if (g->sites[i].stk)
			g->sites[i].stk->held = true;
	}
}

/* The GPU totals restart (profile__restart); calls awaiting records, the
 * launch sites and the device memory in use carry over, and the peak
 * starts again from what is in use. */
void profile_gpu_restart(struct profile *p)
{
	struct profile_gpu *g = p->gpu;
	struct profile_gpu_totals t = { 0 };

	if (!g)
		return;
	t.processes = g->t.processes;
	t.call_sample = g->t.call_sample;
	t.peak_memory = g->mem_now;
	g->t = t;
}
