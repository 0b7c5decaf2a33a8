// SPDX-License-Identifier: BSD-2-Clause
/*
 * Drains the counts BPF adds up in agg_counts (system-wide).  Each entry is
 * (process image, thread, stack, where) -> samples and ns.  A periodic drain
 * moves the epoch on, hands out the entries of the epoch it closed and
 * remembers what it handed out; the next one reads those entries once more,
 * hands out what was added since (a program that read the epoch just before
 * it moved), and deletes them.  An entry whose stack has not arrived yet is
 * handed out whole by that second drain.  A process image that ends has its entries
 * handed out and deleted at once, so that its profile is complete when it
 * is written.  A stack not counted for a while is forgotten (see
 * sweep_stacks).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "collect/counts.h"
#include "base/clock.h"
#include "base/hmap.h"
#include "base/log.h"

/* Stacks kept before the table starts again (a long run on a busy host). */
#define MAX_STACKS 65536
/* Entries read per batch. */
#define BATCH 1024
/* Reads of the ring buffer a drain makes for the stacks of its counts, at
 * most: 1 + 2 + ... + 128 ms of waits between them. */
#define READ_RING_TRIES 9
/* A stack not counted for this long is forgotten (counts_maps.stack_idle_ns
 * unless told). */
#define STACK_IDLE_NS (60 * 1000000000ULL)

struct stack_entry {
	uint32_t nframes;
	uint32_t elided;
	uint64_t used_ns; /* when the periodic drain that last used it ran */
	uint32_t left;	  /* the periodic drain it left BPF's table at, or 0 */
	struct py_frame frames[];
};

struct counts {
	struct counts_maps maps;
	counts_event_fn fn;
	void *ctx;
	struct hmap *stacks; /* id -> struct stack_entry */
	struct hmap *shadow; /* agg_key -> struct agg_val handed out so far */
	struct agg_key *keys;
	struct agg_val *vals;
	uint32_t cap;
	int n; /* entries read into keys and vals */
	struct agg_key *dead;
	uint32_t ndead;
	struct sample_event *ev;
	uint32_t closed;		      /* the epoch counts__next_epoch() closed */
	uint32_t periodic;		      /* periodic drains so far */
	uint64_t drain_ns, swept_ns, idle_ns; /* see sweep_stacks */
	struct counts_stats st;
};

struct counts *counts__new(const struct counts_maps *maps, counts_event_fn fn, void *ctx)
{
	struct counts *c = calloc(1, sizeof(*c));

	if (!c)
		goto nomem;
	c->maps = *maps;
	c->fn = fn;
	c->ctx = ctx;
	c->cap = maps->max_counts ? maps->max_counts : 1;
	/* Nothing closed yet: the first periodic drain closes epoch 0. */
	c->closed = AGG_EPOCHS - 1;
	c->idle_ns = maps->stack_idle_ns ? maps->stack_idle_ns : STACK_IDLE_NS;
	c->drain_ns = c->swept_ns = clock_ns(CLOCK_MONOTONIC);
	c->stacks = hmap__new(sizeof(uint64_t));
	c->shadow = hmap__new(sizeof(struct agg_key));
	c->keys = calloc(c->cap, sizeof(*c->keys));
	c->vals = calloc(c->cap, sizeof(*c->vals));
	c->dead = calloc(c->cap, sizeof(*c->dead));
	c->ev = calloc(1, sizeof(*c->ev));
	if (c->stacks && c->shadow && c->keys && c->vals && c->dead && c->ev)
		return c;
	counts__free(c);
nomem:
	errno = ENOMEM;
	return NULL;
}

static void free_values(struct hmap *h)
{
	size_t it = 0;
	const void *k;
	void *v;

	while (hmap__next(h, &it, &k, &v))
		free(v);
	hmap__free(h);
}

void counts__free(struct counts *c)
{
	if (!c)
		return;
	if (c->stacks)
		free_values(c->stacks);
	if (c->shadow)
		free_values(c->shadow);
	free(c->keys);
	free(c->vals);
	free(c->dead);
	free(c->ev);
	free(c);
}

/* Full: the table starts again, and BPF sends each stack again when it is
 * next counted.  Counts still to come for a stack that is not sent again
 * get no frames (stacks_missing). */
static void reset_stacks(struct counts *c)
{
	uint64_t id, next;
	int more;

	free_values(c->stacks);
	c->stacks = hmap__new(sizeof(uint64_t));
	more = !bpf_map_get_next_key(c->maps.stacks_fd, NULL, &id);
	while (more) {
		more = !bpf_map_get_next_key(c->maps.stacks_fd, &id, &next);
		bpf_map_delete_elem(c->maps.stacks_fd, &id);
		id = next;
	}
	c->st.stack_resets++;
}

void counts__add_stack(struct counts *c, const void *data, size_t size)
{
	const struct agg_stack_record *r = data;
	struct stack_entry *e, *old;
	size_t n;

	if (size < STACK_HDR_SIZE || r->nframes > MAX_FRAMES ||
	    size < STACK_HDR_SIZE + r->nframes * sizeof(struct py_frame))
		return;
	if (!c->stacks || hmap__count(c->stacks) >= MAX_STACKS)
		reset_stacks(c);
	if (!c->stacks)
		return;
	n = r->nframes * sizeof(struct py_frame);
	e = malloc(sizeof(*e) + n);
	if (!e)
		return;
	e->nframes = r->nframes;
	e->elided = r->elided;
	e->used_ns = c->drain_ns;
	e->left = 0;
	memcpy(e->frames, r->frames, n);
	old = hmap__get(c->stacks, &r->id);
	if (hmap__put(c->stacks, &r->id, e)) {
		free(e);
		return;
	}
	free(old);
	c->st.stacks++;
}

/* The sample record that stands for `d` (what was added to key k since it
 * was last handed out). */
static int hand_out(struct counts *c, const struct agg_key *k, const struct agg_val *d, bool late,
		    enum counts_drain how)
{
	struct sample_event *ev = c->ev;
	struct stack_entry *st = NULL;
	uint32_t n = 0;

	if (!d->count)
		return 0;
	memset(ev, 0, SAMPLE_HDR_SIZE);
	if (k->stack) {
		st = c->stacks ? hmap__get(c->stacks, &k->stack) : NULL;
		if (st)
			st->used_ns = c->drain_ns;
		if (!st) {
			/* Sent again at its next use. */
			c->st.stacks_missing += d->count;
			pr_debug("counts: stack %016llx of process %u unknown (%s drain, epoch "
				 "%u)\n",
				 (unsigned long long)k->stack, k->tgid,
				 how == COUNTS_PERIODIC ? "periodic"
				 : how == COUNTS_IMAGE	? "image"
							: "final",
				 k->epoch);
			bpf_map_delete_elem(c->maps.stacks_fd, &k->stack);
		}
	}
	ev->hdr.type = EV_SAMPLE;
	ev->hdr.tgid = k->tgid;
	ev->tid = k->tid;
	ev->mode = k->mode;
	ev->status = st || !k->stack ? k->status : WALK_READ_FAILED;
	ev->ts = d->last_ts;
	ev->cpu_ns = d->cpu_ns;
	ev->offcpu_ns = d->offcpu_ns;
	ev->gil_ns = d->gil_ns;
	ev->user_ip = d->user_ip;
	ev->syscall_nr = -1;
	ev->flags = k->flags;
	ev->gen = k->gen;
	ev->count = d->count > UINT32_MAX ? UINT32_MAX : (uint32_t)d->count;
	memcpy(ev->comm, d->comm, sizeof(ev->comm));
	if (st) {
		n = st->nframes;
		ev->elided = st->elided;
		memcpy(ev->frames, st->frames, n * sizeof(struct py_frame));
	}
	ev->nframes = n;
	c->st.records++;
	c->st.samples += d->count;
	if (late)
		c->st.late += d->count;
	c->fn(c->ctx, ev, SAMPLE_HDR_SIZE + n * sizeof(struct py_frame));
	return 1;
}

/* What was added to k since it was last handed out; now becomes the
 * last handed out when `keep`, else k is forgotten. */
static int hand_out_delta(struct counts *c, const struct agg_key *k, const struct agg_val *now,
			  bool keep, enum counts_drain how)
{
	struct agg_val *seen = hmap__get(c->shadow, k), d = *now;
	int n;

	if (seen) {
		d.count -= seen->count < d.count ? seen->count : d.count;
		d.cpu_ns -= seen->cpu_ns < d.cpu_ns ? seen->cpu_ns : d.cpu_ns;
		d.offcpu_ns -= seen->offcpu_ns < d.offcpu_ns ? seen->offcpu_ns : d.offcpu_ns;
		d.gil_ns -= seen->gil_ns < d.gil_ns ? seen->gil_ns : d.gil_ns;
	}
	n = hand_out(c, k, &d, seen != NULL, how);
	if (keep) {
		if (!seen) {
			seen = malloc(sizeof(*seen));
			if (seen && hmap__put(c->shadow, k, seen)) {
				free(seen);
				seen = NULL;
			}
		}
		if (seen)
			*seen = *now;
	} else {
		free(hmap__del(c->shadow, k));
	}
	return n;
}

/* Reads the whole table into c->keys/c->vals; entries read or -errno. */
static int read_all(struct counts *c)
{
	__u32 batch = 0, count;
	uint32_t n = 0;
	bool first = true;
	int err;

	while (n < c->cap) {
		count = c->cap - n < BATCH ? c->cap - n : BATCH;
		err = bpf_map_lookup_batch(c->maps.counts_fd, first ? NULL : &batch, &batch,
					   c->keys + n, c->vals + n, &count, NULL);
		first = false;
		if (err && errno != ENOENT)
			return -errno;
		n += count;
		if (err)
			break;
	}
	return n;
}

static void delete_dead(struct counts *c)
{
	__u32 count = c->ndead;

	if (!c->ndead)
		return;
	if (bpf_map_delete_batch(c->maps.counts_fd, c->dead, &count, NULL)) {
		uint32_t i;

		/* One that went already stops a batch: the rest one by one. */
		for (i = 0; i < c->ndead; i++)
			bpf_map_delete_elem(c->maps.counts_fd, &c->dead[i]);
	}
	c->ndead = 0;
}

void counts__next_epoch(struct counts *c)
{
	uint32_t e = *c->maps.epoch % AGG_EPOCHS;

	c->closed = e;
	__atomic_store_n(c->maps.epoch, (e + 1) % AGG_EPOCHS, __ATOMIC_SEQ_CST);
}

/*
 * Each distinct walk is a stack (the instruction offsets are part of it),
 * so a service that runs for days sends new ones all along.  A stack not
 * counted for idle_ns leaves BPF's table of sent ids first: a count of it
 * from then on sends it again, and the record replaces the entry here.  It
 * leaves this table two periodic drains later, once every count made
 * before it left BPF's table has been handed out (the closed epoch, then
 * what was added to it late).  Both tables then hold the stacks of the last
 * minute or so, not every stack seen.
 */
static void sweep_stacks(struct counts *c)
{
	uint64_t *gone = NULL, *grown;
	size_t it = 0, n = 0, cap = 0, i;
	const void *k;
	void *v;

	if (!c->stacks || c->drain_ns - c->swept_ns < c->idle_ns / 4)
		return;
	c->swept_ns = c->drain_ns;
	while (hmap__next(c->stacks, &it, &k, &v)) {
		struct stack_entry *e = v;

		if (e->left && c->periodic - e->left >= 2) {
			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				grown = realloc(gone, cap * sizeof(*gone));
				if (!grown)
					break;
				gone = grown;
			}
			gone[n++] = *(const uint64_t *)k;
		} else if (!e->left && c->drain_ns - e->used_ns >= c->idle_ns) {
			bpf_map_delete_elem(c->maps.stacks_fd, k);
			e->left = c->periodic;
		}
	}
	for (i = 0; i < n; i++)
		free(hmap__del(c->stacks, &gone[i]));
	c->st.stacks_forgotten += n;
	free(gone);
}

static bool stack_known(const struct counts *c, const struct agg_key *k)
{
	return !k->stack || (c->stacks && hmap__get(c->stacks, &k->stack));
}

/* Whether a count read would be handed out now with no stack: in a
 * periodic drain's second look at an epoch, an image's drain, the end's. */
static bool due_unknown(const struct counts *c, enum counts_drain how, uint32_t earlier, int tgid,
			uint32_t gen)
{
	const struct agg_key *k;
	uint32_t i;

	for (i = 0; i < (uint32_t)c->n; i++) {
		k = &c->keys[i];
		if (stack_known(c, k))
			continue;
		if (how == COUNTS_ALL || (how == COUNTS_PERIODIC && k->epoch == earlier) ||
		    (how == COUNTS_IMAGE && (int)k->tgid == tgid && k->gen == gen))
			return true;
	}
	return false;
}

/* The table read, once the stacks its due counts name have come, or
 * READ_RING_TRIES reads of the ring buffer later (waits of 1, 2, 4... ms
 * between them), or when the ring buffer cannot be read from here (a drain
 * from inside its callback: an image that ended, whose stacks came before
 * the record that says so). */
static int read_settled(struct counts *c, enum counts_drain how, uint32_t earlier, int tgid,
			uint32_t gen)
{
	struct timespec ts;
	int n, i;

	for (i = 0;; i++) {
		n = read_all(c);
		c->n = n;
		if (n < 0 || !c->maps.read_ring || i == READ_RING_TRIES ||
		    !due_unknown(c, how, earlier, tgid, gen))
			return n;
		if (i) {
			ts.tv_sec = 0;
			ts.tv_nsec = 1000000L << (i - 1);
			nanosleep(&ts, NULL);
		}
		if (c->maps.read_ring(c->maps.ring_ctx) < 0)
			return n;
		c->st.ring_rereads++;
	}
}

int counts__drain(struct counts *c, enum counts_drain how, int tgid, uint32_t gen)
{
	uint32_t closed = c->closed, earlier, i;
	int n, out = 0;

	earlier = (closed + AGG_EPOCHS - 1) % AGG_EPOCHS;
	n = read_settled(c, how, earlier, tgid, gen);
	if (n < 0)
		return n;
	c->st.drains++;
	if (how == COUNTS_PERIODIC) {
		c->periodic++;
		c->drain_ns = clock_ns(CLOCK_MONOTONIC);
	}
	c->ndead = 0;
	for (i = 0; i < (uint32_t)n; i++) {
		const struct agg_key *k = &c->keys[i];
		bool mine;

		switch (how) {
		case COUNTS_PERIODIC:
			if (k->epoch == closed) {
				/* Its stack has not come (see read_ring): the
				 * count waits for the next drain, which hands
				 * out the whole of it. */
				if (!stack_known(c, k)) {
					c->st.stacks_waited += c->vals[i].count;
					break;
				}
				out += hand_out_delta(c, k, &c->vals[i], true, how);
			} else if (k->epoch == earlier) {
				out += hand_out_delta(c, k, &c->vals[i], false, how);
				c->dead[c->ndead++] = *k;
			}
			break;
		case COUNTS_IMAGE:
		case COUNTS_ALL:
			mine = how != COUNTS_IMAGE || ((int)k->tgid == tgid && k->gen == gen);
			if (mine) {
				out += hand_out_delta(c, k, &c->vals[i], false, how);
				c->dead[c->ndead++] = *k;
			}
			break;
		}
	}
	delete_dead(c);
	if (how == COUNTS_PERIODIC)
		sweep_stacks(c);
	return out;
}

void counts__stats(const struct counts *c, struct counts_stats *out)
{
	*out = c->st;
}
