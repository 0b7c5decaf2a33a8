/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fake user address space for running the BPF walker as host C: a few
 * regions at made-up user addresses, each backed by a heap buffer.  Reads
 * behave like bpf_probe_read_user(): a read that touches any unmapped byte
 * fails as a whole and zeroes the destination.  Writes are only made by the
 * tests while they build an image, so writing outside a region is a bug in
 * the test and aborts.
 */
#ifndef TESTS_BPF_MEMIMG_H
#define TESTS_BPF_MEMIMG_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMIMG_MAX_REGIONS 8

struct memimg_region {
	uint64_t base;
	uint64_t size;
	uint64_t used; /* bump allocator: bytes handed out from the start */
	uint64_t top;  /* ... and from the end: [top, size) is taken */
	uint8_t *data;
	unsigned long reads;	/* reads that started in here */
	unsigned long max_read; /* largest of them */
};

struct memimg {
	struct memimg_region r[MEMIMG_MAX_REGIONS];
	int n;
	unsigned long reads; /* read calls, failed ones included */
	unsigned long failed_reads;
	unsigned long max_read; /* largest size asked for */
};

static inline void memimg__die(const char *what, uint64_t addr)
{
	fprintf(stderr, "memimg: %s at 0x%llx (test image bug)\n", what, (unsigned long long)addr);
	abort();
}

static inline struct memimg *memimg__new(void)
{
	struct memimg *m = calloc(1, sizeof(*m));

	if (!m)
		memimg__die("out of memory", 0);
	return m;
}

static inline void memimg__free(struct memimg *m)
{
	int i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->r[i].data);
	free(m);
}

/* Maps [base, base + size) zero-filled; returns the region's index. */
static inline int memimg__map(struct memimg *m, uint64_t base, uint64_t size)
{
	struct memimg_region *r;

	if (m->n == MEMIMG_MAX_REGIONS)
		memimg__die("too many regions", base);
	r = &m->r[m->n];
	r->data = calloc(1, size);
	if (!r->data)
		memimg__die("out of memory", base);
	r->base = base;
	r->size = size;
	r->used = 0;
	r->top = size;
	return m->n++;
}

/* The host bytes behind [addr, addr + size), or NULL if any byte is unmapped.
 * Written so that no sum can wrap around. */
static inline uint8_t *memimg__host(struct memimg *m, uint64_t addr, uint64_t size)
{
	int i;

	for (i = 0; i < m->n; i++) {
		struct memimg_region *r = &m->r[i];

		if (addr >= r->base && size <= r->size && addr - r->base <= r->size - size)
			return r->data + (addr - r->base);
	}
	return NULL;
}

static inline int memimg__read(struct memimg *m, void *dst, uint64_t size, uint64_t addr)
{
	const uint8_t *src = memimg__host(m, addr, size);

	int i;

	m->reads++;
	if (size > m->max_read)
		m->max_read = size;
	for (i = 0; i < m->n; i++) {
		struct memimg_region *r = &m->r[i];

		if (addr < r->base || addr - r->base >= r->size)
			continue;
		r->reads++;
		if (size > r->max_read)
			r->max_read = size;
	}
	if (!src) {
		m->failed_reads++;
		memset(dst, 0, size);
		return -EFAULT;
	}
	memcpy(dst, src, size);
	return 0;
}

static inline void memimg__write(struct memimg *m, uint64_t addr, const void *src, uint64_t size)
{
	uint8_t *dst = memimg__host(m, addr, size);

	if (!dst)
		memimg__die("write outside the image", addr);
	memcpy(dst, src, size);
}

static inline void memimg__w64(struct memimg *m, uint64_t addr, uint64_t v)
{
	memimg__write(m, addr, &v, sizeof(v));
}

static inline void memimg__w32(struct memimg *m, uint64_t addr, uint32_t v)
{
	memimg__write(m, addr, &v, sizeof(v));
}

static inline void memimg__w8(struct memimg *m, uint64_t addr, uint8_t v)
{
	memimg__write(m, addr, &v, sizeof(v));
}

/* Hands out `size` zeroed bytes of region `ri`, aligned to `align` (a power
 * of two); returns their address. */
static inline uint64_t memimg__alloc(struct memimg *m, int ri, uint64_t size, uint64_t align)
{
	struct memimg_region *r = &m->r[ri];
	uint64_t start = (r->used + align - 1) & ~(align - 1);

	if (start > r->top || size > r->top - start)
		memimg__die("region full", r->base);
	r->used = start + size;
	return r->base + start;
}

/* Hands out the last `size` bytes of region `ri`, so that the next byte is
 * unmapped. */
static inline uint64_t memimg__alloc_at_end(struct memimg *m, int ri, uint64_t size)
{
	struct memimg_region *r = &m->r[ri];

	if (r->top != r->size)
		memimg__die("region end already taken", r->base);
	if (size > r->top - r->used)
		memimg__die("region full", r->base);
	r->top -= size;
	return r->base + r->top;
}

#endif /* TESTS_BPF_MEMIMG_H */
