// SPDX-License-Identifier: BSD-2-Clause
/* The rules that bound the stacks a profile writes (stackbound.h). */
#include <stdlib.h>
#include <string.h>

#include "model/profile.h"
#include "model/stackbound.h"
#include "testlib.h"

#define NF 64

static const char *names[NF];
static struct frame_ref pool[NF];

static void init_pool(void)
{
	static char buf[NF][16];
	int i;

	for (i = 0; i < NF; i++) {
		snprintf(buf[i], sizeof(buf[i]), "f%d", i);
		names[i] = buf[i];
		pool[i].filename = "/p/prog.py";
		pool[i].qualname = names[i];
		pool[i].firstlineno = i + 1;
		pool[i].line = i + 2;
	}
}

/* A stack of the pool's frames ids[0..n), outermost first. */
static struct stack_stats *mk(const int *ids, int n, uint64_t count, double malloc_bytes)
{
	struct stack_stats *st = calloc(1, sizeof(*st));
	struct frame_ref *f = calloc(n ? n : 1, sizeof(*f));
	int i;

	for (i = 0; i < n; i++)
		f[i] = pool[ids[i]];
	st->frames = f;
	st->nframes = n;
	st->count = count;
	st->python_ns = count * 1000.0;
	st->malloc_bytes = malloc_bytes;
	return st;
}

static void free_stacks(struct stack_stats **s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free((void *)s[i]->frames);
		free(s[i]);
	}
}

static uint64_t sum_counts(const struct stack_bound *b)
{
	uint64_t c = 0;
	int i;

	for (i = 0; i < b->n; i++)
		c += b->e[i].count;
	return c;
}

static void test_under_limits_all_whole(void)
{
	int a[] = { 0, 1, 2 }, b[] = { 0, 1, 3 };
	struct stack_stats *s[2] = { mk(a, 3, 5, 0), mk(b, 3, 9, 0) };
	struct stack_bound_limits lim = { 10, 10, 100 };
	struct stack_bound r;

	CHECK_EQ_INT(stack_bound__compute((const struct stack_stats *const *)s, 2, STACK_BY_SAMPLES, &lim, &r),
		     0);
	CHECK_EQ_INT(r.n, 2);
	CHECK_EQ_INT(r.whole, 2);
	CHECK_EQ_INT(r.merge_depth, -1);
	CHECK_EQ_INT(r.merged_stacks, 0);
	/* Heaviest first. */
	CHECK(r.e[0].rep == s[1] && r.e[1].rep == s[0]);
	CHECK(!r.e[0].cut && r.e[0].depth == 3);
	stack_bound__free(&r);
	free_stacks(s, 2);
}

/* Beyond the heaviest, stacks are cut at the deepest depth that fits and
 * merged; the counts add up to the total. */
static void test_tail_merged_by_prefix(void)
{
	struct stack_stats *s[40];
	struct stack_bound_limits lim = { 2, 5, 200 };
	struct stack_bound r;
	uint64_t total = 0;
	int i, ids[6];

	/* 40 stacks: 4 outer branches x 10 leaves, depth 6. */
	for (i = 0; i < 40; i++) {
		ids[0] = 0;
		ids[1] = 1;
		ids[2] = 2 + i / 10;
		ids[3] = 10;
		ids[4] = 11;
		ids[5] = 20 + i % 10;
		s[i] = mk(ids, 6, i + 1, 0);
		total += i + 1;
	}
	CHECK_EQ_INT(
		stack_bound__compute((const struct stack_stats *const *)s, 40, STACK_BY_SAMPLES, &lim, &r), 0);
	CHECK_EQ_INT(r.whole, 2);
	/* The two heaviest whole: counts 40 and 39. */
	CHECK_EQ_INT(r.e[0].count, 40);
	CHECK_EQ_INT(r.e[1].count, 39);
	/* Whole stacks (depth 6) would be 38 entries; cut at depth 5 the
	 * stacks are the 4 branches (0, 1, b, 10, 11): the deepest that fits. */
	CHECK_EQ_INT(r.merge_depth, 5);
	CHECK_EQ_INT(r.n - r.whole, 4);
	CHECK_EQ_INT(r.merged_stacks, 38);
	CHECK_EQ_INT(sum_counts(&r), total);
	for (i = r.whole; i < r.n; i++) {
		CHECK(r.e[i].cut);
		CHECK_EQ_INT(r.e[i].depth, 5);
		/* Merged entries heaviest first. */
		if (i > r.whole)
			CHECK(r.e[i].count <= r.e[i - 1].count);
	}
	CHECK(r.merged_weight == (double)(total - 40 - 39));
	/* Each stack is found in its entry: the whole ones at their own, the
	 * others in the entry of their cut. */
	CHECK_EQ_INT(r.entry_of[39], 0);
	CHECK_EQ_INT(r.entry_of[38], 1);
	for (i = 0; i < 38; i++) {
		int e = r.entry_of[i];

		CHECK(e >= r.whole && e < r.n);
		if (e >= r.whole && e < r.n)
			CHECK(!memcmp(r.e[e].rep->frames, s[i]->frames,
				      r.e[e].depth * sizeof(*s[i]->frames)));
	}
	CHECK(r.total_weight == (double)total);
	stack_bound__free(&r);
	free_stacks(s, 40);
}

/* The frame budget binds too: shallower cut. */
static void test_frame_budget(void)
{
	struct stack_stats *s[40];
	struct stack_bound_limits lim = { 0, 100, 15 };
	struct stack_bound r;
	int i, ids[6], frames = 0;

	for (i = 0; i < 40; i++) {
		ids[0] = 0;
		ids[1] = 1;
		ids[2] = 2 + i / 10;
		ids[3] = 10;
		ids[4] = 11;
		ids[5] = 20 + i % 10;
		s[i] = mk(ids, 6, 1, 0);
	}
	CHECK_EQ_INT(
		stack_bound__compute((const struct stack_stats *const *)s, 40, STACK_BY_SAMPLES, &lim, &r), 0);
	CHECK_EQ_INT(r.whole, 0);
	for (i = 0; i < r.n; i++)
		frames += r.e[i].depth + r.e[i].cut;
	CHECK(frames <= 15);
	/* 4 entries of depth 3 + marker = 16 > 15; depth 2 gives one entry. */
	CHECK_EQ_INT(r.merge_depth, 2);
	CHECK_EQ_INT(r.n, 1);
	CHECK_EQ_INT(r.e[0].members, 40);
	CHECK_EQ_INT(sum_counts(&r), 40);
	stack_bound__free(&r);
	free_stacks(s, 40);
}

/* When not even depth 0 fits, everything left becomes one entry. */
static void test_all_merged(void)
{
	int a[] = { 0 };
	struct stack_stats *s[3] = { mk(a, 1, 1, 0), mk(a, 0, 2, 0), mk(a, 1, 3, 0) };
	struct stack_bound_limits lim = { 0, 1, 10 };
	struct stack_bound r;

	s[2]->native_sym = "memcpy";
	CHECK_EQ_INT(stack_bound__compute((const struct stack_stats *const *)s, 3, STACK_BY_SAMPLES, &lim, &r),
		     0);
	/* Depth 0: the empty stack stays itself, the other two are cut: 2 > 1. */
	CHECK_EQ_INT(r.n, 1);
	CHECK(r.e[0].all && r.e[0].cut);
	CHECK(r.entry_of[0] == 0 && r.entry_of[1] == 0 && r.entry_of[2] == 0);
	CHECK_EQ_INT(r.e[0].count, 6);
	CHECK_EQ_INT(r.e[0].members, 3);
	stack_bound__free(&r);
	free_stacks(s, 3);
}

/* Memory stacks are ranked by bytes; stacks without weight are left out. */
static void test_memory_weight(void)
{
	int a[] = { 0, 1 }, b[] = { 0, 2 }, c[] = { 0, 3 };
	struct stack_stats *s[3] = { mk(a, 2, 100, 0), mk(b, 2, 1, 5e6), mk(c, 2, 1, 7e6) };
	struct stack_bound_limits lim = { 1, 5, 100 };
	struct stack_bound r;

	CHECK_EQ_INT(stack_bound__compute((const struct stack_stats *const *)s, 3, STACK_BY_BYTES, &lim, &r),
		     0);
	CHECK_EQ_INT(r.whole, 1);
	CHECK(r.e[0].rep == s[2]);
	/* No bytes: in no entry. */
	CHECK_EQ_INT(r.entry_of[0], -1);
	CHECK_EQ_INT(r.merged_stacks, 1);
	CHECK(r.total_weight == 12e6);
	/* The one left fits whole at its own depth: not cut. */
	CHECK_EQ_INT(r.n, 2);
	CHECK(r.e[1].rep == s[1] && !r.e[1].cut);
	stack_bound__free(&r);
	free_stacks(s, 3);
}

/* Same frames, different native leaves: distinct unless cut above them. */
static void test_native_leaf_kept_apart(void)
{
	int a[] = { 0, 1 };
	struct stack_stats *s[2] = { mk(a, 2, 1, 0), mk(a, 2, 1, 0) };
	struct stack_bound_limits lim = { 0, 5, 100 };
	struct stack_bound r;

	s[0]->native_sym = "sin";
	s[1]->native_sym = "cos";
	CHECK_EQ_INT(stack_bound__compute((const struct stack_stats *const *)s, 2, STACK_BY_SAMPLES, &lim, &r),
		     0);
	CHECK_EQ_INT(r.merge_depth, 2);
	CHECK_EQ_INT(r.n, 2);
	stack_bound__free(&r);
	free_stacks(s, 2);
}

/* The overflow stack (no frames) is never merged with an empty stack. */
static void test_overflow_apart(void)
{
	int a[] = { 0 };
	struct stack_stats *s[2] = { mk(a, 0, 1, 0), mk(a, 0, 2, 0) };
	struct stack_bound_limits lim = { 0, 5, 100 };
	struct stack_bound r;

	s[1]->overflow = true;
	CHECK_EQ_INT(stack_bound__compute((const struct stack_stats *const *)s, 2, STACK_BY_SAMPLES, &lim, &r),
		     0);
	CHECK_EQ_INT(r.n, 2);
	CHECK(r.e[0].rep == s[1] && r.e[0].count == 2);
	stack_bound__free(&r);
	free_stacks(s, 2);
}

int main(void)
{
	init_pool();
	RUN_TEST(test_under_limits_all_whole);
	RUN_TEST(test_tail_merged_by_prefix);
	RUN_TEST(test_frame_budget);
	RUN_TEST(test_all_merged);
	RUN_TEST(test_memory_weight);
	RUN_TEST(test_native_leaf_kept_apart);
	RUN_TEST(test_overflow_apart);
	return test_summary("stackbound");
}
