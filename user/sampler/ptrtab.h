/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The table of sampled blocks: pointer -> (weight, flags), so that the free of
 * a sampled block can be recognised and reported.  Every free asks it, so the
 * question "may this pointer be in the table?" must cost a few loads:
 *
 *   - `live` counts the entries; zero (a C program between samples) answers
 *     at once;
 *   - otherwise an exact counting filter, one byte per hash slice (16 KiB,
 *     mostly cache-resident), says whether any live entry shares the
 *     pointer's slice; with 1,000 live entries (about 1 GiB sampled at the
 *     default mean) 94 % of frees stop there.
 *
 * Entries live in 4096 buckets of 8 pointers (one cache line), two-choice:
 * an entry goes to the emptier of its two buckets, so the first overflow
 * comes at about 3/4 load (24,800 of 32,768 entries in tests/sampler), some
 * 24 GiB of live sampled blocks at the default mean.  Inserting and removing use compare-and-
 * swap on the key; nothing takes a lock, so it is safe in threads, in fork
 * children and in signal handlers.  Memory: 528 KiB of .bss, touched as used.
 *
 * Insert, remove and the filter are all the table needs to be correct: a
 * block's entry is made before its malloc returns and removed before it is
 * released, so whoever frees it is ordered after the insert by the program's
 * own synchronisation.
 */
#ifndef SCALENE_BPF_PTRTAB_H
#define SCALENE_BPF_PTRTAB_H

#include <stdint.h>

#define PTRTAB_BUCKET_BITS 12
#define PTRTAB_BUCKETS (1u << PTRTAB_BUCKET_BITS)
#define PTRTAB_WAYS 8
#define PTRTAB_FILTER_BITS 14
#define PTRTAB_FILTER_SLOTS (1u << PTRTAB_FILTER_BITS)
#define PTRTAB_CAPACITY (PTRTAB_BUCKETS * PTRTAB_WAYS)
/* A filter byte that reaches this stays there: the slice always answers
 * "maybe" (correct, slower).  Needs 255 live pointers in one slice. */
#define PTRTAB_FILTER_STUCK 255

struct ptrtab {
	/* Read by every free: its own cache line. */
	_Alignas(64) uint64_t live;
	_Alignas(64) uint8_t filter[PTRTAB_FILTER_SLOTS];
	_Alignas(64) uintptr_t key[PTRTAB_BUCKETS][PTRTAB_WAYS]; /* 0: empty */
	uint64_t meta[PTRTAB_BUCKETS][PTRTAB_WAYS];
};

/* The entry's value: the weight and SBS_F_* flags of its malloc probe. */
#define PTRTAB_META(weight, flags) (((uint64_t)(weight) << 8) | ((flags)&0xff))
#define PTRTAB_WEIGHT(meta) ((meta) >> 8)
#define PTRTAB_FLAGS(meta) ((uint32_t)((meta)&0xff))
#define PTRTAB_MAX_WEIGHT (UINT64_MAX >> 8)

/* Pointers from malloc have their low 4 bits clear; mix all bits so that
 * neighbouring blocks land in unrelated buckets (murmur3's finaliser). */
static inline uint64_t ptrtab_hash(const void *p)
{
	uint64_t h = (uintptr_t)p;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/*
 * The filter's slot: one multiply (Fibonacci hashing, top bits), since every
 * free computes it; the buckets, reached only when the filter says "maybe",
 * use the stronger hash above.
 */
static inline uint32_t ptrtab_filter_slot(const void *p)
{
	return (uint32_t)(((uintptr_t)p * 0x9e3779b97f4a7c15ull) >> (64 - PTRTAB_FILTER_BITS));
}

/* The free path's test: 0 means p is certainly not in the table. */
static inline int ptrtab_may_contain(const struct ptrtab *t, const void *p)
{
	if (__builtin_expect(!__atomic_load_n(&t->live, __ATOMIC_RELAXED), 1))
		return 0;
	return __atomic_load_n(&t->filter[ptrtab_filter_slot(p)], __ATOMIC_ACQUIRE) != 0;
}

/*
 * Adds p with `meta`.  Returns 0, or 1 when p was already there (its block was
 * released without the hooks seeing it): the old value is replaced and
 * returned in *stale.  -ENOSPC: both of p's buckets are full.
 */
int ptrtab_insert(struct ptrtab *t, const void *p, uint64_t meta, uint64_t *stale);

/* Removes p and returns its value in *meta: 0, or -ENOENT. */
int ptrtab_remove(struct ptrtab *t, const void *p, uint64_t *meta);

#endif /* SCALENE_BPF_PTRTAB_H */
