// SPDX-License-Identifier: BSD-2-Clause
/* The table of sampled blocks; see ptrtab.h.  Called from allocator hooks:
 * no locks, no allocation, no libc calls. */
#include <errno.h>

#include "ptrtab.h"

static void buckets_of(uint64_t h, uint32_t b[2])
{
	b[0] = (uint32_t)h & (PTRTAB_BUCKETS - 1);
	b[1] = (uint32_t)(h >> 16) & (PTRTAB_BUCKETS - 1);
}

static void filter_add(struct ptrtab *t, uint32_t slot, int delta)
{
	uint8_t *f = &t->filter[slot];
	uint8_t v = __atomic_load_n(f, __ATOMIC_RELAXED);

	do {
		if (v == PTRTAB_FILTER_STUCK)
			return;
	} while (!__atomic_compare_exchange_n(f, &v, (uint8_t)(v + delta), 1, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static int find(struct ptrtab *t, const uint32_t b[2], uintptr_t k, uint32_t *bucket, uint32_t *way)
{
	for (int i = 0; i < 2; i++) {
		for (uint32_t w = 0; w < PTRTAB_WAYS; w++) {
			if (__atomic_load_n(&t->key[b[i]][w], __ATOMIC_ACQUIRE) == k) {
				*bucket = b[i];
				*way = w;
				return 1;
			}
		}
	}
	return 0;
}

static uint32_t empties(struct ptrtab *t, uint32_t b)
{
	uint32_t n = 0;

	for (uint32_t w = 0; w < PTRTAB_WAYS; w++)
		n += !__atomic_load_n(&t->key[b][w], __ATOMIC_RELAXED);
	return n;
}

static int claim(struct ptrtab *t, uint32_t b, uintptr_t k, uint64_t meta)
{
	for (uint32_t w = 0; w < PTRTAB_WAYS; w++) {
		uintptr_t old = 0;

		if (__atomic_load_n(&t->key[b][w], __ATOMIC_RELAXED))
			continue;
		if (!__atomic_compare_exchange_n(&t->key[b][w], &old, k, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&t->meta[b][w], meta, __ATOMIC_RELAXED);
		return 1;
	}
	return 0;
}

int ptrtab_insert(struct ptrtab *t, const void *p, uint64_t meta, uint64_t *stale)
{
	uint64_t h = ptrtab_hash(p);
	uintptr_t k = (uintptr_t)p;
	uint32_t b[2], bucket, way;
	int first;

	buckets_of(h, b);
	/* p is a block the allocator just handed out, so no other thread can be
	 * inserting or removing it: an entry for it is a leftover. */
	if (find(t, b, k, &bucket, &way)) {
		*stale = __atomic_load_n(&t->meta[bucket][way], __ATOMIC_RELAXED);
		__atomic_store_n(&t->meta[bucket][way], meta, __ATOMIC_RELAXED);
		return 1;
	}
	first = empties(t, b[1]) > empties(t, b[0]);
	if (!claim(t, b[first], k, meta) && !claim(t, b[!first], k, meta))
		return -ENOSPC;
	filter_add(t, ptrtab_filter_slot(p), 1);
	__atomic_fetch_add(&t->live, 1, __ATOMIC_RELAXED);
	return 0;
}

int ptrtab_remove(struct ptrtab *t, const void *p, uint64_t *meta)
{
	uint64_t h = ptrtab_hash(p);
	uintptr_t k = (uintptr_t)p;
	uint32_t b[2], bucket, way;
	uint64_t m;

	buckets_of(h, b);
	if (!find(t, b, k, &bucket, &way))
		return -ENOENT;
	/* Only the owner of p frees it, so the entry cannot change under us; the
	 * exchange is for other keys' inserts racing for the slot once it is 0. */
	m = __atomic_load_n(&t->meta[bucket][way], __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&t->key[bucket][way], &k, 0, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return -ENOENT;
	filter_add(t, ptrtab_filter_slot(p), -1);
	__atomic_fetch_sub(&t->live, 1, __ATOMIC_RELAXED);
	*meta = m;
	return 0;
}
