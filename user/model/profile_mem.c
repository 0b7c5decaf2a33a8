// SPDX-License-Identifier: BSD-2-Clause
/* The memory model of the profile (profile.h: struct mem_stats, the net
 * growth rule, footprint, live blocks). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "model/profile.h"
#include "model/profile_int.h"
#include "base/strtab.h"

static void series_push(struct mem_series *s, double t, double y)
{
	int i;

	s->t[s->n] = t;
	s->y[s->n] = y;
	if (++s->n < MEM_SERIES_MAX)
		return;
	/* Full: pairs merge into their higher point, buckets double. */
	for (i = 0; i < MEM_SERIES_MAX / 2; i++) {
		int k = s->y[2 * i + 1] > s->y[2 * i] ? 2 * i + 1 : 2 * i;

		s->t[i] = s->t[k];
		s->y[i] = s->y[k];
	}
	s->n = MEM_SERIES_MAX / 2;
	s->stride *= 2;
}

static void series_add(struct mem_series *s, double t, double y)
{
	if (!s->stride)
		s->stride = 1;
	if (!s->in_bucket || y > s->by) {
		s->bt = t;
		s->by = y;
	}
	if (++s->in_bucket < s->stride)
		return;
	s->in_bucket = 0;
	series_push(s, s->bt, s->by);
}

int mem_series__points(const struct mem_series *s, double *t, double *y)
{
	int n = s->n;

	memcpy(t, s->t, n * sizeof(*t));
	memcpy(y, s->y, n * sizeof(*y));
	if (s->in_bucket && n < MEM_SERIES_MAX) {
		t[n] = s->bt;
		y[n] = s->by;
		n++;
	}
	return n;
}

static struct mem_stats *mem_of(struct line_stats *st)
{
	if (!st->mem)
		st->mem = calloc(1, sizeof(*st->mem));
	return st->mem;
}

uint64_t mem_stats__mallocs(const struct mem_stats *m)
{
	return m->mallocs + (m->open > 0 && m->hwm > 0);
}

double mem_stats__avg(const struct mem_stats *m)
{
	uint64_t n = mem_stats__mallocs(m);
	double agg = m->aggregate + (m->open > 0 ? m->hwm : 0), avg;

	if (!n)
		return 0;
	avg = agg / n;
	return avg > m->peak ? m->peak : avg;
}

/* Ends the thread's open execution, if any. */
static void exec_close(struct thread_stats *t)
{
	struct mem_stats *l = t->exec.line, *f = t->exec.func;

	if (!l)
		return;
	l->mallocs++;
	l->aggregate += l->hwm;
	if (f) {
		f->mallocs++;
		f->aggregate += l->hwm;
		f->open--;
	}
	l->cur = l->hwm = 0;
	l->open--;
	t->exec.line = t->exec.func = NULL;
}

/* Starts a new execution unless the sample continues the open one: the same
 * line of the same frame (same code, same depth), at a later instruction. */
static void exec_at(struct thread_stats *t, struct mem_stats *l, struct mem_stats *f,
		    const struct frame_ref *fr, int depth, int offset)
{
	if (t->exec.line == l && t->exec.file == fr->filename && t->exec.lineno == fr->line &&
	    t->exec.qualname == fr->qualname && t->exec.firstlineno == fr->firstlineno &&
	    t->exec.depth == depth && offset > t->exec.offset) {
		t->exec.offset = offset;
		return;
	}
	exec_close(t);
	t->exec.line = l;
	t->exec.func = f;
	t->exec.file = fr->filename;
	t->exec.qualname = fr->qualname;
	t->exec.lineno = fr->line;
	t->exec.firstlineno = fr->firstlineno;
	t->exec.depth = depth;
	t->exec.offset = offset;
	l->open++;
	if (f)
		f->open++;
}

static void mem_grow(struct mem_stats *m, double bytes)
{
	m->cur += bytes;
	if (m->cur > m->hwm)
		m->hwm = m->cur;
	if (m->cur > m->peak)
		m->peak = m->cur;
}

static void footprint_add(struct profile *p, double delta, double t)
{
	struct profile_memory *m = &p->mem;

	m->footprint += delta;
	if (m->footprint < 0)
		m->footprint = 0;
	series_add(&m->series, t, m->footprint);
}

/* Changes the live set of the line and the function a block was allocated
 * on: its weight, and how many blocks they had followed and got back. */
static void owners_update(const struct live_block *b, double live, uint64_t tracked,
			  uint64_t reclaimed)
{
	struct mem_stats *owners[2] = { b->line, b->func };
	int i;

	for (i = 0; i < 2; i++) {
		if (!owners[i])
			continue;
		owners[i]->live_bytes += live;
		owners[i]->tracked += tracked;
		owners[i]->reclaimed += reclaimed;
	}
}

/* Where a net malloc sample fires: the allocating event's thread, frame
 * and stack. */
struct net_site {
	struct thread_stats *t;
	const struct frame_ref *fr;
	int depth, offset;
	struct stack_stats *stack;
};

/* The window of blocks of `size` bytes (mem_stats.win_up). */
static int net_window_of(double size)
{
	return size < NET_WINDOW_BYTES;
}

/* Window w of line l has grown by a window: a net malloc sample of what it
 * holds, on the line, its function and the allocating stack. */
static void net_malloc_sample(struct profile *p, struct mem_stats *l, struct mem_stats *f, int w,
			      const struct net_site *at, double t)
{
	double bytes = l->win_up[w] - l->win_down[w];
	double py = l->win_up[w] > 0 ? bytes * (l->win_python[w] / l->win_up[w]) : 0;

	l->win_up[w] = l->win_down[w] = l->win_python[w] = 0;
	p->mem.net_bytes += bytes;
	if (at->t && at->fr)
		exec_at(at->t, l, f, at->fr, at->depth, at->offset);
	l->net_bytes += bytes;
	l->net_python_bytes += py;
	l->net_samples++;
	mem_grow(l, bytes);
	series_add(&l->series, t, p->mem.footprint);
	if (f) {
		f->net_bytes += bytes;
		f->net_python_bytes += py;
		f->net_samples++;
		if (l->peak > f->peak)
			f->peak = l->peak;
		series_add(&f->series, t, p->mem.footprint);
	}
	if (at->stack)
		at->stack->malloc_bytes += bytes;
}

/* A sampled block of line l (function f) allocated: its window goes up. */
static void net_up(struct profile *p, struct mem_stats *l, struct mem_stats *f, double bytes, int w,
		   bool python, bool no_frees, const struct net_site *at, double t)
{
	double window = w ? NET_SMALL_WINDOW_BYTES : NET_WINDOW_BYTES;

	l->win_up[w] += bytes;
	l->win_python[w] += python ? bytes : 0;
	/* Frees not seen: every sample is net. */
	if (no_frees || l->win_up[w] >= l->win_down[w] + window)
		net_malloc_sample(p, l, f, w, at, t);
}

/* A block of line l (function f) freed by the program: its window goes
 * down; a net free sample when the frees have outrun the allocations by a
 * window. */
static void net_down(struct profile *p, struct mem_stats *l, struct mem_stats *f, double bytes,
		     int w, double t)
{
	double window = w ? NET_SMALL_WINDOW_BYTES : NET_WINDOW_BYTES, freed;

	if (!l)
		return;
	l->win_down[w] += bytes;
	if (l->win_down[w] < l->win_up[w] + window)
		return;
	freed = l->win_down[w] - l->win_up[w];
	l->win_up[w] = l->win_down[w] = l->win_python[w] = 0;
	l->net_freed_bytes += freed;
	l->cur = l->cur > freed ? l->cur - freed : 0;
	series_add(&l->series, t, p->mem.footprint);
	if (f) {
		f->net_freed_bytes += freed;
		series_add(&f->series, t, p->mem.footprint);
	}
}

static void track_block(struct profile *p, int tgid, uint64_t addr, struct mem_stats *line,
			struct mem_stats *func, double bytes, int small, double t)
{
	struct block_key k = { .tgid = tgid, .addr = addr };
	struct live_block *b;

	if (hmap__count(p->blocks) >= MAX_LIVE_BLOCKS) {
		p->mem.blocks_dropped++;
		return;
	}
	b = hmap__get(p->blocks, &k);
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b || hmap__put(p->blocks, &k, b)) {
			free(b);
			p->mem.blocks_dropped++;
			return;
		}
	} else {
		/* Freed behind the sampler's back and handed out again. */
		p->mem.held_bytes -= b->bytes;
		p->mem.footprint -= b->bytes;
		if (p->mem.footprint < 0)
			p->mem.footprint = 0;
		owners_update(b, -b->bytes, 0, 0);
		net_down(p, b->line, b->func, b->bytes, b->small, t);
	}
	*b = (struct live_block){ .line = line, .func = func, .bytes = bytes, .small = small };
	p->mem.held_bytes += bytes;
	owners_update(b, bytes, 1, 0);
}

static void mem_malloc(struct profile *p, const struct mem_in *m, struct mem_stats *l,
		       struct mem_stats *f, const struct net_site *at, double t)
{
	struct profile_memory *pm = &p->mem;
	const struct frame_ref *fr = at->fr;
	/* A block restored after a failed realloc has no size: its weight. */
	int w = net_window_of(m->size > 0 ? m->size : m->bytes);

	if (m->restored) {
		/* Not a new allocation: the block is live again (its free went
		 * down its line's window: up again, no sample). */
		footprint_add(p, m->bytes, t);
		track_block(p, m->tgid, m->addr, l, f, m->bytes, w, t);
		if (l)
			l->win_up[w] += m->bytes;
		return;
	}
	pm->malloc_bytes += m->bytes;
	if (m->python)
		pm->python_bytes += m->bytes;
	/* Without frees (uprobes) there is no footprint to follow. */
	if (!m->no_frees) {
		footprint_add(p, m->bytes, t);
		if (pm->footprint > pm->max_footprint) {
			pm->max_footprint = pm->footprint;
			pm->max_file = fr ? fr->filename : NULL;
			pm->max_line = fr ? fr->line : 0;
			pm->max_python_fraction = m->python ? 1 : 0;
		}
		if (m->untracked)
			pm->untracked++;
		else
			track_block(p, m->tgid, m->addr, l, f, m->bytes, w, t);
	}
	if (!l)
		return;
	l->malloc_bytes += m->bytes;
	l->python_bytes += m->python ? m->bytes : 0;
	l->samples++;
	if (f) {
		f->malloc_bytes += m->bytes;
		f->python_bytes += m->python ? m->bytes : 0;
		f->samples++;
	}
	net_up(p, l, f, m->bytes, w, m->python, m->no_frees, at, t);
}

static void mem_free(struct profile *p, const struct mem_in *m, struct mem_stats *l,
		     struct mem_stats *f, double t)
{
	struct block_key k = { .tgid = m->tgid, .addr = m->addr };
	struct live_block *b = hmap__del(p->blocks, &k);
	/* No Python frame on the freeing thread: the interpreter tearing down
	 * (or a thread that never ran Python).  The block leaves the footprint
	 * but the program itself never gave it back. */
	bool teardown = m->nframes == 0;
	double bytes;

	if (!b) {
		/* Allocated before the sampler's probes were seen, or in the
		 * parent before a fork: it was never in this footprint. */
		p->mem.frees_unknown++;
		return;
	}
	bytes = b->bytes;
	footprint_add(p, -bytes, t);
	if (!teardown) {
		p->mem.held_bytes -= bytes;
		owners_update(b, -bytes, 0, 1);
		net_down(p, b->line, b->func, bytes, b->small, t);
	}
	free(b);
	if (!l)
		return;
	l->freed_bytes += bytes;
	if (f)
		f->freed_bytes += bytes;
}

void profile__add_mem(struct profile *p, const struct mem_in *m)
{
	struct mem_stats *l = NULL, *fm = NULL;
	const struct frame_ref *fr = NULL;
	struct net_site net = { 0 };
	struct thread_stats *t;
	struct file_stats *f;
	struct line_stats *st;
	struct func_stats *fs;
	double ts = (double)m->ts_ns;
	int at = -1;

	if (m->not_python) {
		if (m->kind == MEM_MALLOC && !m->restored)
			p->mem.not_python_bytes += m->bytes;
		return;
	}
	t = profile_thread_get(p, m->tgid, m->tid);
	if (m->kind != MEM_COPY)
		p->mem.alloc_samples++;
	if (m->unattributed < 0)
		at = profile_attributed_frame(p, m->frames, m->nframes);
	if (at >= 0) {
		fr = &m->frames[at];
		f = profile_file_get(p, fr->filename);
		st = f ? profile_line_get(f, fr->line > 0 ? fr->line : fr->firstlineno) : NULL;
		l = st ? mem_of(st) : NULL;
		fs = f && l ? profile_func_get(p, f, m->frames, m->nframes, at) : NULL;
		fm = fs ? mem_of(&fs->st) : NULL;
	}
	switch (m->kind) {
	case MEM_MALLOC:
		if (!m->restored && t)
			t->malloc_bytes += m->bytes;
		if (!l && !m->restored) {
			if (m->unattributed == UNATTR_NO_PYTHON_THREAD)
				p->mem.native_thread_bytes += m->bytes;
			else
				p->mem.unattributed_bytes += m->bytes;
		}
		net.t = t;
		net.fr = fr;
		if (fr) {
			net.depth = m->nframes - at;
			net.offset = m->offsets ? m->offsets[at] : 0;
		}
		if (m->nframes && !m->restored) {
			struct stack_key k =
				m->stack
					? (struct stack_key){ m->stack, m->nstack,    NULL,
							      NULL,	m->truncated, m->stack_ips }
					: (struct stack_key){ m->frames, m->nframes, NULL, NULL,
							      m->truncated };
			int index;

			net.stack = profile_stack_get(p, &k, &index);
		}
		mem_malloc(p, m, l, fm, &net, ts);
		break;
	case MEM_FREE:
		mem_free(p, m, l, fm, ts);
		break;
	case MEM_COPY:
		p->mem.copy_bytes += m->bytes;
		if (l)
			l->copy_bytes += m->bytes;
		if (fm)
			fm->copy_bytes += m->bytes;
		break;
	}
}

void profile__proc_exit(struct profile *p, int tgid, uint64_t ts_ns)
{
	size_t it = 0;
	const void *key;
	void *v;
	double bytes = 0;
	int i;

	/* The process's memory is released with it; its blocks' lines keep
	 * them as not reclaimed (the program never freed them). */
	while (hmap__next(p->blocks, &it, &key, &v)) {
		const struct block_key *k = key;

		if (k->tgid != tgid)
			continue;
		bytes += ((struct live_block *)v)->bytes;
		/* Deleting leaves a tombstone: the iteration goes on. */
		free(hmap__del(p->blocks, k));
	}
	for (i = 0; i < p->nthreads; i++) {
		if (p->threads[i]->tgid == tgid)
			exec_close(p->threads[i]);
	}
	if (bytes > 0)
		footprint_add(p, -bytes, (double)ts_ns);
}

const struct profile_memory *profile__memory(const struct profile *p)
{
	return &p->mem;
}

/* The counts of a line's memory restart (profile__restart); the state of
 * its open executions, the blocks it still holds and its netting windows
 * carry over. */
void profile_mem_stats_restart(struct mem_stats *m)
{
	m->malloc_bytes = m->python_bytes = m->copy_bytes = m->freed_bytes = 0;
	m->samples = m->mallocs = 0;
	m->aggregate = m->peak = 0;
	m->tracked = m->reclaimed = 0;
	memset(&m->series, 0, sizeof(m->series));
	m->net_bytes = m->net_python_bytes = m->net_freed_bytes = 0;
	m->net_samples = 0;
}

/* The process-wide figures: the footprint and what it holds carry over;
 * the peak starts again from where the footprint is. */
void profile_mem_restart(struct profile *p)
{
	struct profile_memory *pm = &p->mem;

	pm->alloc_samples = 0;
	pm->malloc_bytes = pm->python_bytes = pm->native_thread_bytes = 0;
	pm->unattributed_bytes = pm->copy_bytes = pm->not_python_bytes = pm->net_bytes = 0;
	pm->max_footprint = pm->footprint;
	pm->max_file = NULL;
	pm->max_line = 0;
	pm->max_python_fraction = 0;
	memset(&pm->series, 0, sizeof(pm->series));
	pm->frees_unknown = pm->blocks_dropped = pm->untracked = 0;
}
