// SPDX-License-Identifier: BSD-2-Clause
/* The sampled-block table (user/sampler/ptrtab.c) on its own: single-threaded
 * semantics, filling it up, and threads racing on shared buckets. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "ptrtab.h"
#include "testlib.h"

static struct ptrtab tab;

/* Addresses as malloc would give: 16-byte aligned, spread over a heap. */
static void *addr(uint64_t i)
{
	return (void *)(uintptr_t)(0x7f0000000000ull + i * 48);
}

static int filter_all_zero(void)
{
	for (uint32_t i = 0; i < PTRTAB_FILTER_SLOTS; i++)
		if (tab.filter[i])
			return 0;
	return 1;
}

static void test_insert_remove(void)
{
	uint64_t meta = 0, stale = 0;

	CHECK(!ptrtab_may_contain(&tab, addr(1)));
	CHECK_EQ_INT(ptrtab_insert(&tab, addr(1), PTRTAB_META(4096, 1), &stale), 0);
	CHECK_EQ_INT(tab.live, 1);
	CHECK(ptrtab_may_contain(&tab, addr(1)));
	CHECK_EQ_INT(ptrtab_remove(&tab, addr(2), &meta), -ENOENT);
	CHECK_EQ_INT(ptrtab_remove(&tab, addr(1), &meta), 0);
	CHECK_EQ_INT(PTRTAB_WEIGHT(meta), 4096);
	CHECK_EQ_INT(PTRTAB_FLAGS(meta), 1);
	CHECK_EQ_INT(ptrtab_remove(&tab, addr(1), &meta), -ENOENT);
	CHECK_EQ_INT(tab.live, 0);
	CHECK(!ptrtab_may_contain(&tab, addr(1)));
	CHECK(filter_all_zero());
}

/* A block released behind the hooks' back comes back from the allocator. */
static void test_stale(void)
{
	uint64_t meta = 0, stale = 0;

	CHECK_EQ_INT(ptrtab_insert(&tab, addr(7), PTRTAB_META(100, 0), &stale), 0);
	CHECK_EQ_INT(ptrtab_insert(&tab, addr(7), PTRTAB_META(200, 1), &stale), 1);
	CHECK_EQ_INT(PTRTAB_WEIGHT(stale), 100);
	CHECK_EQ_INT(tab.live, 1);
	CHECK_EQ_INT(ptrtab_remove(&tab, addr(7), &meta), 0);
	CHECK_EQ_INT(PTRTAB_WEIGHT(meta), 200);
	CHECK_EQ_INT(PTRTAB_FLAGS(meta), 1);
	CHECK_EQ_INT(tab.live, 0);
	CHECK(filter_all_zero());
}

/* Two-choice buckets: the first refusal comes near full load, and every
 * entry that went in can be found and taken out again. */
static void test_fill(void)
{
	uint64_t meta = 0, stale = 0, n = 0, i;
	int err = 0, missing = 0;

	for (i = 0; i < PTRTAB_CAPACITY + 1000; i++) {
		err = ptrtab_insert(&tab, addr(i), PTRTAB_META(i, 0), &stale);
		if (err)
			break;
		n++;
	}
	CHECK_EQ_INT(err, -ENOSPC);
	fprintf(stderr, "table: first overflow at %llu of %u entries (%.1f %%)\n",
		(unsigned long long)n, PTRTAB_CAPACITY, 100.0 * (double)n / PTRTAB_CAPACITY);
	CHECK(n > PTRTAB_CAPACITY * 7 / 10);
	for (i = 0; i < n; i++) {
		if (!ptrtab_may_contain(&tab, addr(i)) || ptrtab_remove(&tab, addr(i), &meta) ||
		    PTRTAB_WEIGHT(meta) != i)
			missing++;
	}
	CHECK_EQ_INT(missing, 0);
	CHECK_EQ_INT(tab.live, 0);
	CHECK(filter_all_zero());
}

/* Nearly every free asks the filter: how often does it say "maybe" wrongly? */
static void test_filter_rate(void)
{
	uint64_t stale, meta;
	int maybe = 0, probes = 100000;

	for (uint64_t i = 0; i < 1000; i++)
		ptrtab_insert(&tab, addr(i * 1000), PTRTAB_META(1, 0), &stale);
	for (int i = 0; i < probes; i++)
		maybe += ptrtab_may_contain(&tab, addr(5000000 + (uint64_t)i));
	fprintf(stderr, "table: filter passes %.1f %% of non-members with 1000 entries\n",
		100.0 * maybe / probes);
	CHECK(maybe < probes / 10);
	for (uint64_t i = 0; i < 1000; i++)
		ptrtab_remove(&tab, addr(i * 1000), &meta);
	CHECK_EQ_INT(tab.live, 0);
}

#define THREADS 4
#define PER_THREAD 2000
#define ROUNDS 300

struct worker {
	int id;
	int lost;
	int wrong;
};

/* Each thread owns its pointers (as a block has one owner at a time) but
 * they interleave with the other threads' in the same buckets. */
static void *churn(void *arg)
{
	struct worker *w = arg;
	uint64_t stale, meta;

	for (int r = 0; r < ROUNDS; r++) {
		for (uint64_t i = 0; i < PER_THREAD; i++) {
			void *p = addr(i * THREADS + (uint64_t)w->id);

			if (ptrtab_insert(&tab, p, PTRTAB_META(i, w->id), &stale))
				w->lost++;
		}
		for (uint64_t i = 0; i < PER_THREAD; i++) {
			void *p = addr(i * THREADS + (uint64_t)w->id);

			if (!ptrtab_may_contain(&tab, p) || ptrtab_remove(&tab, p, &meta))
				w->lost++;
			else if (PTRTAB_WEIGHT(meta) != i || PTRTAB_FLAGS(meta) != (uint32_t)w->id)
				w->wrong++;
		}
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[THREADS];
	struct worker w[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .id = i };
		CHECK_EQ_INT(pthread_create(&th[i], NULL, churn, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ_INT(w[i].lost, 0);
		CHECK_EQ_INT(w[i].wrong, 0);
	}
	CHECK_EQ_INT(tab.live, 0);
	CHECK(filter_all_zero());
}

int main(void)
{
	RUN_TEST(test_insert_remove);
	RUN_TEST(test_stale);
	RUN_TEST(test_fill);
	RUN_TEST(test_filter_rate);
	RUN_TEST(test_threads);
	return test_summary("ptrtab");
}
