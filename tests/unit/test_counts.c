/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/collect/counts.c: the drain of the counts BPF keeps (system-wide).
 * Without root: EV_STACK records checked before they are kept, the epoch
 * moved on in the program's memory, a drain of a map it cannot read.  As
 * root the two tables are real BPF hash maps of the program's types (no
 * program loaded), filled here as BPF fills them: each count becomes one
 * sample record with its stack's frames and its sums; a periodic drain
 * hands out the epoch it closed, then what was added to it late, once, and
 * deletes it; an image's drain takes only its counts; a count whose stack
 * is not known has no frames, and its stack is forgotten in BPF so that it
 * is sent again; a full table of stacks starts again; a stack not counted
 * for a while is forgotten.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "testlib.h"
#include "abi.h"
#include "base/log.h"
#include "collect/counts.h"

/* Stacks the module keeps before it starts its table again (counts.c). */
#define MAX_STACKS 65536

/* ------------------------------------------------ records received */

#define MAX_GOT 4096

struct got {
	struct sample_event ev[MAX_GOT];
	size_t size[MAX_GOT];
	int n, calls;
};

static struct got got;

static int on_event(void *ctx, const void *data, size_t size)
{
	struct got *g = ctx;

	g->calls++;
	if (g->n < MAX_GOT && size <= sizeof(g->ev[0])) {
		memcpy(&g->ev[g->n], data, size);
		g->size[g->n++] = size;
	}
	return 0;
}

/* The record received for tid (each count here has a tid of its own), or
 * NULL. */
static const struct sample_event *got_tid(int tid)
{
	int i;

	for (i = 0; i < got.n; i++) {
		if ((int)got.ev[i].tid == tid)
			return &got.ev[i];
	}
	return NULL;
}

/* --------------------------------------------------- stacks and maps */

static struct agg_stack_record stack_rec(uint64_t id, uint32_t nframes, uint32_t elided)
{
	struct agg_stack_record r;
	uint32_t i;

	memset(&r, 0, sizeof(r));
	r.hdr.type = EV_STACK;
	r.hdr.tgid = 10;
	r.id = id;
	r.nframes = nframes;
	r.elided = elided;
	for (i = 0; i < nframes && i < MAX_FRAMES; i++) {
		r.frames[i].code = 0x7f0000001000ULL + id * 0x100 + i;
		r.frames[i].offset = (int32_t)(i * 2);
		r.frames[i].tag = (uint32_t)(id + i);
		r.frames[i].ident = 0xabc0 + i;
	}
	return r;
}

static void add_stack(struct counts *c, uint64_t id, uint32_t nframes, uint32_t elided)
{
	struct agg_stack_record r = stack_rec(id, nframes, elided);

	counts__add_stack(c, &r, STACK_HDR_SIZE + nframes * sizeof(struct py_frame));
}

static volatile __u32 epoch;

/* The ring buffer, as counts reads it again for stacks that came late: a
 * stack arrives at the read given. */
static struct {
	struct counts *c;
	int reads, arrive_at;
	uint64_t id;
	uint32_t nframes;
} ring;

static int read_ring(void *ctx)
{
	if (++ring.reads == ring.arrive_at)
		add_stack(ring.c, ring.id, ring.nframes, 0);
	return 0;
}

struct maps {
	int counts_fd, stacks_fd;
	struct counts *c;
};

/* Real BPF maps of the program's types; false (and a skip) when this
 * process may not make them. */
static bool maps_new_idle(struct maps *m, uint32_t max, uint64_t stack_idle_ns)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	struct counts_maps cm;

	memset(m, 0, sizeof(*m));
	m->counts_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "agg_counts", sizeof(struct agg_key),
				      sizeof(struct agg_val), max, &o);
	if (m->counts_fd < 0)
		return false;
	m->stacks_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "agg_stacks", sizeof(__u64), sizeof(__u8),
				      max, &o);
	if (m->stacks_fd < 0) {
		close(m->counts_fd);
		return false;
	}
	epoch = 0;
	cm = (struct counts_maps){ .counts_fd = m->counts_fd,
				   .stacks_fd = m->stacks_fd,
				   .max_counts = max,
				   .epoch = &epoch,
				   .stack_idle_ns = stack_idle_ns,
				   .read_ring = read_ring };
	memset(&got, 0, sizeof(got));
	memset(&ring, 0, sizeof(ring));
	m->c = counts__new(&cm, on_event, &got);
	ring.c = m->c;
	CHECK(m->c != NULL);
	return m->c != NULL;
}

static bool maps_new(struct maps *m, uint32_t max)
{
	return maps_new_idle(m, max, 0);
}

static void maps_free(struct maps *m)
{
	counts__free(m->c);
	close(m->counts_fd);
	close(m->stacks_fd);
}

static bool can_make_maps(void)
{
	struct maps m;

	if (!maps_new(&m, 16))
		return false;
	maps_free(&m);
	return true;
}

static struct agg_key key(int tgid, int tid, uint64_t stack, uint8_t ep)
{
	struct agg_key k;

	memset(&k, 0, sizeof(k));
	k.stack = stack;
	k.tgid = tgid;
	k.tid = tid;
	k.gen = 1;
	k.epoch = ep;
	k.mode = MODE_USER;
	k.status = WALK_OK;
	return k;
}

/* BPF's side: the count of k is now (count, cpu_ns). */
static void set_count(struct maps *m, const struct agg_key *k, uint64_t count, uint64_t cpu_ns)
{
	struct agg_val v;

	memset(&v, 0, sizeof(v));
	v.count = count;
	v.cpu_ns = cpu_ns;
	v.offcpu_ns = count * 7;
	v.gil_ns = count * 3;
	v.last_ts = 1000 + count;
	v.user_ip = 0x401000;
	snprintf((char *)v.comm, sizeof(v.comm), "proc%u", k->tgid);
	CHECK_EQ_INT(bpf_map_update_elem(m->counts_fd, k, &v, BPF_ANY), 0);
}

static bool in_map(int fd, const void *k)
{
	uint8_t v[sizeof(struct agg_val)];

	return !bpf_map_lookup_elem(fd, k, v);
}

static int map_entries(int fd, size_t key_size)
{
	uint8_t k[64], next[64];
	int n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, next) && n < 100000) {
		memcpy(k, next, key_size);
		prev = k;
		n++;
	}
	return n;
}

/* ----------------------------------------------------- no root */

/* EV_STACK records too short for their frames, or with more frames than
 * a stack has, are not kept; a good one is, and sent again it replaces the
 * first. */
static void test_stack_records_checked(void)
{
	struct counts_maps cm = {
		.counts_fd = -1, .stacks_fd = -1, .max_counts = 8, .epoch = &epoch
	};
	struct agg_stack_record r = stack_rec(5, 3, 0);
	struct counts_stats st;
	struct counts *c = counts__new(&cm, on_event, &got);

	CHECK(c != NULL);
	if (!c)
		return;
	counts__add_stack(c, &r, STACK_HDR_SIZE - 1);
	counts__add_stack(c, &r, STACK_HDR_SIZE + 2 * sizeof(struct py_frame));
	r.nframes = MAX_FRAMES + 1;
	counts__add_stack(c, &r, sizeof(r));
	counts__stats(c, &st);
	CHECK_EQ_INT(st.stacks, 0);
	add_stack(c, 5, 3, 0);
	add_stack(c, 5, 4, 1);
	add_stack(c, 6, 0, 0);
	add_stack(c, 7, MAX_FRAMES, 9);
	counts__stats(c, &st);
	CHECK_EQ_INT(st.stacks, 4);
	CHECK_EQ_INT(st.stack_resets, 0);
	CHECK_EQ_INT(st.drains, 0);
	counts__free(c);
	counts__free(NULL);
}

/* The epoch in the program's memory goes 0, 1, 2, 0; a value out of range
 * is taken modulo the epochs. */
static void test_next_epoch(void)
{
	struct counts_maps cm = {
		.counts_fd = -1, .stacks_fd = -1, .max_counts = 8, .epoch = &epoch
	};
	struct counts *c;

	epoch = 0;
	c = counts__new(&cm, on_event, &got);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_EQ_INT(epoch, 0);
	counts__next_epoch(c);
	CHECK_EQ_INT(epoch, 1);
	counts__next_epoch(c);
	CHECK_EQ_INT(epoch, 2);
	counts__next_epoch(c);
	CHECK_EQ_INT(epoch, 0);
	epoch = 7;
	counts__next_epoch(c);
	CHECK_EQ_INT(epoch, 2);
	counts__free(c);
}

/* A table that cannot be read: the error, no record, no drain counted. */
static void test_drain_unreadable(void)
{
	struct counts_maps cm = {
		.counts_fd = -1, .stacks_fd = -1, .max_counts = 8, .epoch = &epoch
	};
	struct counts_stats st;
	struct counts *c = counts__new(&cm, on_event, &got);

	CHECK(c != NULL);
	if (!c)
		return;
	memset(&got, 0, sizeof(got));
	CHECK_EQ_INT(counts__drain(c, COUNTS_ALL, 0, 0), -EBADF);
	CHECK_EQ_INT(counts__drain(c, COUNTS_PERIODIC, 0, 0), -EBADF);
	counts__stats(c, &st);
	CHECK_EQ_INT(st.drains, 0);
	CHECK_EQ_INT(got.calls, 0);
	counts__free(c);
}

/* -------------------------------------------------- real maps (root) */

#define SKIP_WITHOUT_MAPS()                                                           \
	do {                                                                          \
		if (!maps_ok)                                                         \
			SKIP_TEST("cannot make BPF maps here (not root, or no BPF)"); \
	} while (0)

static bool maps_ok;

/* A count becomes one record: its stack's frames, its sums, its key's
 * fields; a count with no stack has no frames. */
static void test_record_fields(void)
{
	const struct sample_event *e;
	struct agg_key a = key(10, 101, 55, 0), b = key(10, 102, 0, 0);
	struct counts_stats st;
	struct maps m;
	int i;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	add_stack(m.c, 55, 3, 2);
	a.mode = MODE_OFFCPU;
	a.flags = SAMPLE_F_CALL;
	a.gen = 4;
	a.user_ip = 0x401000;
	set_count(&m, &a, 3, 300);
	b.status = WALK_TID_MISMATCH;
	set_count(&m, &b, 2, 200);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 2);
	CHECK_EQ_INT(got.n, 2);
	e = got_tid(101);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_INT(e->hdr.type, EV_SAMPLE);
		CHECK_EQ_INT(e->hdr.tgid, 10);
		CHECK_EQ_INT(e->mode, MODE_OFFCPU);
		CHECK_EQ_INT(e->status, WALK_OK);
		CHECK_EQ_INT(e->flags, SAMPLE_F_CALL);
		CHECK_EQ_INT(e->gen, 4);
		CHECK_EQ_INT(e->count, 3);
		CHECK_EQ_INT(e->cpu_ns, 300);
		CHECK_EQ_INT(e->offcpu_ns, 21);
		CHECK_EQ_INT(e->gil_ns, 9);
		CHECK_EQ_INT(e->ts, 1003);
		CHECK_EQ_INT(e->user_ip, 0x401000);
		CHECK_EQ_INT(e->syscall_nr, -1);
		CHECK_EQ_STR((const char *)e->comm, "proc10");
		CHECK_EQ_INT(e->nframes, 3);
		CHECK_EQ_INT(e->elided, 2);
		for (i = 0; i < 3 && e->nframes == 3; i++) {
			CHECK_EQ_INT(e->frames[i].code, 0x7f0000001000ULL + 55 * 0x100 + i);
			CHECK_EQ_INT(e->frames[i].tag, 55 + i);
		}
		CHECK_EQ_INT(got.size[e - got.ev], SAMPLE_HDR_SIZE + 3 * sizeof(struct py_frame));
	}
	e = got_tid(102);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_INT(e->nframes, 0);
		CHECK_EQ_INT(e->status, WALK_TID_MISMATCH);
		CHECK_EQ_INT(e->count, 2);
		CHECK_EQ_INT(got.size[e - got.ev], SAMPLE_HDR_SIZE);
	}
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.drains, 1);
	CHECK_EQ_INT(st.records, 2);
	CHECK_EQ_INT(st.samples, 5);
	CHECK_EQ_INT(st.late, 0);
	CHECK_EQ_INT(st.stacks_missing, 0);
	maps_free(&m);
}

/* Periodic drains: the epoch closed is handed out and kept; at the next
 * drain what was added to it since goes out (late) and it is deleted; a
 * count of the open epoch waits. */
static void test_periodic_epochs(void)
{
	struct agg_key a = key(10, 1, 0, 0), b = key(10, 2, 0, 0), c1, open;
	const struct sample_event *e;
	struct counts_stats st;
	struct maps m;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	set_count(&m, &a, 3, 300);
	set_count(&m, &b, 2, 200);
	counts__next_epoch(m.c); /* BPF counts into epoch 1 from here */
	CHECK_EQ_INT(epoch, 1);
	open = key(10, 9, 0, 1);
	set_count(&m, &open, 4, 400);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 2);
	CHECK(got_tid(9) == NULL);
	/* Handed out, not deleted: a late addition may still come. */
	CHECK(in_map(m.counts_fd, &a) && in_map(m.counts_fd, &b));

	/* A program that read epoch 0 just before it moved adds to a. */
	set_count(&m, &a, 4, 350);
	c1 = key(10, 3, 0, 1);
	set_count(&m, &c1, 1, 100);
	memset(&got, 0, sizeof(got));
	counts__next_epoch(m.c);
	CHECK_EQ_INT(epoch, 2);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 3);
	/* a: only what came since (1 sample, 50 ns); b: nothing new, no
	 * record; epoch 1's counts whole. */
	e = got_tid(1);
	CHECK(e && e->count == 1 && e->cpu_ns == 50 && e->offcpu_ns == 7);
	CHECK(got_tid(2) == NULL);
	CHECK(got_tid(3) && got_tid(3)->count == 1);
	CHECK(got_tid(9) && got_tid(9)->count == 4 && got_tid(9)->cpu_ns == 400);
	CHECK(!in_map(m.counts_fd, &a) && !in_map(m.counts_fd, &b));
	CHECK(in_map(m.counts_fd, &open));
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.samples, 3 + 2 + 1 + 1 + 4);
	CHECK_EQ_INT(st.late, 1);

	/* Nothing added: the next drain hands out nothing and empties epoch
	 * 1; the one after finds nothing at all. */
	memset(&got, 0, sizeof(got));
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 0);
	CHECK_EQ_INT(got.calls, 0);
	CHECK_EQ_INT(map_entries(m.counts_fd, sizeof(struct agg_key)), 0);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.drains, 4);
	CHECK_EQ_INT(st.samples, 11);
	maps_free(&m);
}

/* A count whose stack never came (or was forgotten): no frames, its walk
 * status says the stack could not be had, and its id leaves BPF's table
 * so that BPF sends the stack again. */
static void test_unknown_stack(void)
{
	struct agg_key k = key(10, 1, 0xdead, 0);
	const struct sample_event *e;
	struct counts_stats st;
	__u8 one = 1;
	struct maps m;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	CHECK_EQ_INT(bpf_map_update_elem(m.stacks_fd, &k.stack, &one, BPF_ANY), 0);
	set_count(&m, &k, 6, 600);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_ALL, 0, 0), 1);
	e = got_tid(1);
	CHECK(e && e->nframes == 0 && e->status == WALK_READ_FAILED && e->count == 6);
	CHECK(!in_map(m.stacks_fd, &k.stack));
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_missing, 6);
	maps_free(&m);
}

/* A periodic drain that finds a count whose stack has not come leaves it:
 * the next drain, which reads the ring buffer again for it, hands it out
 * whole, with its frames; one whose stack never comes has none then. */
static void test_stack_comes_late(void)
{
	struct agg_key k = key(10, 1, 7, 0), never = key(10, 2, 8, 0);
	struct counts_stats st;
	struct maps m;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	set_count(&m, &k, 5, 500);
	set_count(&m, &never, 2, 200);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 0);
	CHECK(got_tid(1) == NULL);
	CHECK(in_map(m.counts_fd, &k));
	/* Not due yet: the ring buffer is not read again for them. */
	CHECK_EQ_INT(ring.reads, 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_waited, 7);
	CHECK_EQ_INT(st.stacks_missing, 0);

	/* Due: one comes at the first read again, the other never. */
	ring.id = 7;
	ring.nframes = 3;
	ring.arrive_at = 1;
	memset(&got, 0, sizeof(got));
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 2);
	CHECK_EQ_INT(ring.reads, 9);
	CHECK(got_tid(1) && got_tid(1)->count == 5 && got_tid(1)->nframes == 3 &&
	      got_tid(1)->status == WALK_OK);
	CHECK(got_tid(2) && got_tid(2)->count == 2 && got_tid(2)->nframes == 0);
	CHECK(!in_map(m.counts_fd, &k) && !in_map(m.counts_fd, &never));
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.samples, 7);
	CHECK_EQ_INT(st.stacks_missing, 2);
	maps_free(&m);
}

/* An image's drain: its counts only (that tgid and gen), whatever their
 * epoch, handed out whole less what a periodic drain gave already, then
 * deleted; the others stay. */
static void test_image_drain(void)
{
	struct agg_key mine0 = key(10, 1, 0, 0), mine1 = key(10, 2, 0, 1);
	struct agg_key other_gen = key(10, 3, 0, 0), other_proc = key(11, 4, 0, 0);
	struct counts_stats st;
	struct maps m;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	other_gen.gen = 2;
	set_count(&m, &mine0, 5, 500);
	set_count(&m, &other_gen, 1, 100);
	set_count(&m, &other_proc, 1, 100);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 3);
	/* More, in both epochs, before the image ends. */
	set_count(&m, &mine0, 7, 700);
	set_count(&m, &mine1, 2, 200);
	memset(&got, 0, sizeof(got));
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_IMAGE, 10, 1), 2);
	CHECK_EQ_INT(got.n, 2);
	CHECK(got_tid(1) && got_tid(1)->count == 2 && got_tid(1)->cpu_ns == 200);
	CHECK(got_tid(2) && got_tid(2)->count == 2);
	CHECK(!in_map(m.counts_fd, &mine0) && !in_map(m.counts_fd, &mine1));
	CHECK(in_map(m.counts_fd, &other_gen) && in_map(m.counts_fd, &other_proc));
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.late, 2);
	/* Forgotten once deleted: the same key counted anew is whole. */
	set_count(&m, &mine0, 1, 100);
	memset(&got, 0, sizeof(got));
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_IMAGE, 10, 1), 1);
	CHECK(got_tid(1) && got_tid(1)->count == 1);
	maps_free(&m);
}

/* At the end, a count whose stack has not come has the ring buffer read
 * again (here its stack comes at the second read), then all go out; one
 * whose stack never comes goes out without frames after the last read. */
static void test_final_drains(void)
{
	struct agg_key known = key(10, 1, 77, 0), late = key(10, 2, 88, 1), none = key(10, 3, 0, 2),
		       never = key(10, 4, 99, 0);
	struct counts_stats st;
	struct maps m;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	add_stack(m.c, 77, 2, 0);
	set_count(&m, &known, 1, 10);
	set_count(&m, &late, 2, 20);
	set_count(&m, &none, 3, 30);
	ring.id = 88;
	ring.nframes = 4;
	ring.arrive_at = 2;
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_ALL, 0, 0), 3);
	CHECK_EQ_INT(ring.reads, 2);
	CHECK(got_tid(1) && got_tid(1)->nframes == 2);
	CHECK(got_tid(2) && got_tid(2)->nframes == 4 && got_tid(2)->count == 2);
	CHECK(got_tid(3) && got_tid(3)->nframes == 0);
	CHECK_EQ_INT(map_entries(m.counts_fd, sizeof(struct agg_key)), 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_missing, 0);
	CHECK_EQ_INT(st.ring_rereads, 2);

	ring.reads = 0;
	set_count(&m, &never, 5, 50);
	memset(&got, 0, sizeof(got));
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_ALL, 0, 0), 1);
	CHECK_EQ_INT(ring.reads, 9);
	CHECK(got_tid(4) && got_tid(4)->nframes == 0 && got_tid(4)->status == WALK_READ_FAILED);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_missing, 5);
	maps_free(&m);
}

/* More counts than one batch read takes, and a count too large for the
 * record's field (clamped, never wrapped). */
static void test_many_and_huge(void)
{
	const int n = 2500;
	struct agg_key k;
	struct counts_stats st;
	struct maps m;
	int i;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 4096))
		return;
	for (i = 0; i < n; i++) {
		k = key(10, 1000 + i, 0, 0);
		set_count(&m, &k, 1, 1);
	}
	k = key(10, 1, 0, 0);
	set_count(&m, &k, (uint64_t)UINT32_MAX + 5, 1);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_ALL, 0, 0), n + 1);
	CHECK_EQ_INT(got.n, n + 1);
	CHECK(got_tid(1) && got_tid(1)->count == UINT32_MAX);
	CHECK(got_tid(1000) && got_tid(1000 + n - 1));
	CHECK_EQ_INT(map_entries(m.counts_fd, sizeof(struct agg_key)), 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.samples, n + (uint64_t)UINT32_MAX + 5);
	maps_free(&m);
}

/* A full table of stacks starts again: BPF's ids are emptied (each stack
 * is sent again at its next use), the stacks kept before are gone, the
 * one that did not fit is kept. */
static void test_stack_table_reset(void)
{
	struct agg_key k = key(10, 1, 1, 0), last = key(10, 2, MAX_STACKS + 1, 0);
	struct counts_stats st;
	__u8 one = 1;
	struct maps m;
	uint64_t id;

	SKIP_WITHOUT_MAPS();
	if (!maps_new(&m, 64))
		return;
	for (id = 1; id <= 3; id++)
		CHECK_EQ_INT(bpf_map_update_elem(m.stacks_fd, &id, &one, BPF_ANY), 0);
	for (id = 1; id <= MAX_STACKS; id++)
		add_stack(m.c, id, 1, 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stack_resets, 0);
	CHECK_EQ_INT(map_entries(m.stacks_fd, sizeof(__u64)), 3);
	add_stack(m.c, MAX_STACKS + 1, 2, 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stack_resets, 1);
	CHECK_EQ_INT(st.stacks, MAX_STACKS + 1);
	CHECK_EQ_INT(map_entries(m.stacks_fd, sizeof(__u64)), 0);
	set_count(&m, &k, 1, 1);
	set_count(&m, &last, 1, 1);
	log_set_level(-1);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_ALL, 0, 0), 2);
	log_set_level(LOG_WARN);
	CHECK(got_tid(1) && got_tid(1)->nframes == 0);
	CHECK(got_tid(2) && got_tid(2)->nframes == 2);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_missing, 1);
	maps_free(&m);
}

/* A stack not counted for the idle time (1 ns here: not at the last
 * periodic drain) leaves BPF's table of sent ids, so that its next count
 * sends it again; a count made just before that still finds its frames,
 * and two periodic drains later the stack is gone from here too. */
static void test_idle_stacks_forgotten(void)
{
	struct agg_key a = key(10, 1, 1, 0), b = key(10, 2, 2, 0), k;
	uint64_t id;
	struct counts_stats st;
	__u8 one = 1;
	struct maps m;

	SKIP_WITHOUT_MAPS();
	if (!maps_new_idle(&m, 64, 1))
		return;
	for (id = 1; id <= 2; id++) {
		CHECK_EQ_INT(bpf_map_update_elem(m.stacks_fd, &id, &one, BPF_ANY), 0);
		add_stack(m.c, id, 2, 0);
	}
	set_count(&m, &a, 1, 100);
	set_count(&m, &b, 1, 100);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 2);
	CHECK_EQ_INT(map_entries(m.stacks_fd, sizeof(__u64)), 2);

	/* Only stack 1 is counted: stack 2 leaves BPF's table. */
	k = key(10, 3, 1, 1);
	set_count(&m, &k, 1, 100);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 1);
	id = 1;
	CHECK(in_map(m.stacks_fd, &id));
	id = 2;
	CHECK(!in_map(m.stacks_fd, &id));

	/* A count of stack 2 made before it left still has its frames. */
	memset(&got, 0, sizeof(got));
	k = key(10, 4, 2, 2);
	set_count(&m, &k, 1, 100);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 1);
	CHECK(got_tid(4) && got_tid(4)->nframes == 2 && got_tid(4)->status == WALK_OK);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_forgotten, 0);
	/* Two drains after it left BPF's table it is gone here. */
	counts__next_epoch(m.c);
	counts__drain(m.c, COUNTS_PERIODIC, 0, 0);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_forgotten, 1);
	CHECK_EQ_INT(map_entries(m.stacks_fd, sizeof(__u64)), 0);

	/* BPF sends it again at its next count, and the count has frames. */
	memset(&got, 0, sizeof(got));
	add_stack(m.c, 2, 3, 0);
	k = key(10, 5, 2, 0);
	set_count(&m, &k, 1, 100);
	counts__next_epoch(m.c);
	CHECK_EQ_INT(counts__drain(m.c, COUNTS_PERIODIC, 0, 0), 1);
	CHECK(got_tid(5) && got_tid(5)->nframes == 3);
	counts__stats(m.c, &st);
	CHECK_EQ_INT(st.stacks_missing, 0);
	maps_free(&m);
}

int main(void)
{
	RUN_TEST(test_stack_records_checked);
	RUN_TEST(test_next_epoch);
	RUN_TEST(test_drain_unreadable);
	maps_ok = can_make_maps();
	RUN_TEST(test_record_fields);
	RUN_TEST(test_periodic_epochs);
	RUN_TEST(test_unknown_stack);
	RUN_TEST(test_stack_comes_late);
	RUN_TEST(test_image_drain);
	RUN_TEST(test_final_drains);
	RUN_TEST(test_many_and_huge);
	RUN_TEST(test_stack_table_reset);
	RUN_TEST(test_idle_stacks_forgotten);
	return test_summary("counts");
}
