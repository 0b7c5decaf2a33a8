// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cheapest wrap of Python's MEM and OBJ allocator domains: each call
 * forwarded to the allocator found there, nothing else.  What wrapping
 * costs by itself, against which the sampler's wrappers are measured
 * (wrapcost.py).  Built by wrapcost.py; loaded with ctypes.PyDLL, whose
 * calls hold the GIL.
 */
#include <stddef.h>

struct pyalloc {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t n, size_t size);
	void *(*realloc)(void *ctx, void *p, size_t size);
	void (*free)(void *ctx, void *p);
};

void PyMem_GetAllocator(int domain, struct pyalloc *a);
void PyMem_SetAllocator(int domain, struct pyalloc *a);

static struct pyalloc saved[2];

#define FORWARD(D)                                           \
	static void *m##D(void *c, size_t s)                 \
	{                                                    \
		return saved[D].malloc(saved[D].ctx, s);     \
	}                                                    \
	static void *c##D(void *c, size_t n, size_t s)       \
	{                                                    \
		return saved[D].calloc(saved[D].ctx, n, s);  \
	}                                                    \
	static void *r##D(void *c, void *p, size_t s)        \
	{                                                    \
		return saved[D].realloc(saved[D].ctx, p, s); \
	}                                                    \
	static void f##D(void *c, void *p)                   \
	{                                                    \
		saved[D].free(saved[D].ctx, p);              \
	}

FORWARD(0)
FORWARD(1)

/* PYMEM_DOMAIN_MEM is 1, PYMEM_DOMAIN_OBJ 2. */
int passthrough_on(void)
{
	struct pyalloc a[2] = { { 0, m0, c0, r0, f0 }, { 0, m1, c1, r1, f1 } };

	for (int d = 0; d < 2; d++) {
		PyMem_GetAllocator(d + 1, &saved[d]);
		a[d].ctx = saved[d].ctx;
		PyMem_SetAllocator(d + 1, &a[d]);
	}
	return 0;
}

int passthrough_off(void)
{
	for (int d = 0; d < 2; d++)
		PyMem_SetAllocator(d + 1, &saved[d]);
	return 0;
}
