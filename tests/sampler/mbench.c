// SPDX-License-Identifier: BSD-2-Clause
/*
 * A malloc-heavy microbenchmark for the sampler's overhead: run it with and
 * without the library preloaded (tests/sampler/bench/overhead does, with
 * hyperfine).  Prints nanoseconds per operation on stderr.
 *
 *   sampler_mbench pair N SIZE	N x (malloc(SIZE); free)
 *   sampler_mbench churn N		N random malloc/free/realloc of 16..4096 bytes
 *				over 4096 live slots (the sampled-block table
 *				is never empty)
 *   sampler_mbench copy N SIZE	N x memcpy of SIZE bytes
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Through pointers, so that the calls reach the interposed symbols and the
 * compiler cannot drop a malloc/free pair. */
static void *(*volatile malloc_fn)(size_t) = malloc;
static void (*volatile free_fn)(void *) = free;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pair(long n, size_t size)
{
	for (long i = 0; i < n; i++)
		free_fn(malloc_fn(size));
}

static void churn(long n)
{
	enum {
		SLOTS = 4096
	};
	static void *slot[SLOTS];
	uint64_t r = 88172645463325252ull;

	for (long i = 0; i < n; i++) {
		size_t k, size;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		k = r % SLOTS;
		size = 16 + (r >> 20) % 4081;
		if ((r >> 40) & 1) {
			slot[k] = realloc_fn(slot[k], size);
		} else {
			free_fn(slot[k]);
			slot[k] = malloc_fn(size);
		}
	}
	for (int k = 0; k < SLOTS; k++)
		free_fn(slot[k]);
}

static void copy(long n, size_t size)
{
	char *a = malloc_fn(size), *b = malloc_fn(size);

	memset(a, 1, size);
	for (long i = 0; i < n; i++)
		copy_fn(i & 1 ? a : b, i & 1 ? b : a, size);
	free_fn(a);
	free_fn(b);
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	size_t size = argc > 3 ? (size_t)atol(argv[3]) : 32;
	double t;

	if (argc < 3 || n <= 0 || !size) {
		fprintf(stderr, "usage: %s pair|churn|copy N [SIZE]\n", argv[0]);
		return 2;
	}
	t = now();
	if (!strcmp(argv[1], "pair"))
		pair(n, size);
	else if (!strcmp(argv[1], "churn"))
		churn(n);
	else if (!strcmp(argv[1], "copy"))
		copy(n, size);
	else
		return 2;
	fprintf(stderr, "%s: %.2f ns per operation\n", argv[1], (now() - t) * 1e9 / (double)n);
	return 0;
}
