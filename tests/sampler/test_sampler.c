// SPDX-License-Identifier: BSD-2-Clause
/*
 * libscalene-bpf-sampler.so in a plain C program, without BPF: the program
 * runs itself again under LD_PRELOAD, once per suite (each suite needs its own
 * environment), and checks the library's exported counters.
 *
 *   test_sampler			runs every suite, prints the total
 *   test_sampler --suite=NAME	one suite; expects the library preloaded
 *
 * The library is $SCALENE_BPF_SAMPLER_SO, or ../sampler/ next to this binary.
 *
 * Counting is per thread and reaches the shared counters at a thread's
 * samples and at its exit, so each measurement runs its work in threads that
 * are created first, released together, and joined before the counters are
 * read again; the main thread does not allocate in between.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sampler.h"
#include "testlib.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define MAX_WORKERS 8

extern void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
extern void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);

static const struct scalene_bpf_sampler_state *st;

/* Through pointers, so that the compiler calls the interposed symbols. */
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;
static void *(*volatile move_fn)(void *, const void *, size_t) = memmove;
static void *(*volatile copy_chk_fn)(void *, const void *, size_t, size_t) = __memcpy_chk;
static void *(*volatile move_chk_fn)(void *, const void *, size_t, size_t) = __memmove_chk;
static void *(*volatile malloc_fn)(size_t) = malloc;

#define GET(field) __atomic_load_n(&st->field, __ATOMIC_RELAXED)

/* The counters a test looks at; all uint64_t, so that diff() can walk them. */
struct snap {
	uint64_t alloc, python, copy;
	uint64_t ms, sb, fs, fsb, live;
	uint64_t cs, csb;
	uint64_t overflows, stale, restores;
	uint64_t entries;
};

static void take(struct snap *s)
{
	s->alloc = GET(alloc_bytes);
	s->python = GET(python_bytes);
	s->copy = GET(copy_bytes);
	s->ms = GET(malloc_samples);
	s->sb = GET(sampled_bytes);
	s->fs = GET(free_samples);
	s->fsb = GET(freed_sampled_bytes);
	s->live = GET(live_sampled_bytes);
	s->cs = GET(copy_samples);
	s->csb = GET(copy_sampled_bytes);
	s->overflows = GET(table_overflows);
	s->stale = GET(table_stale);
	s->restores = GET(realloc_restores);
	s->entries = GET(table_entries);
}

static void diff(struct snap *d, const struct snap *a, const struct snap *b)
{
	const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
	uint64_t *pd = (uint64_t *)d;

	for (size_t i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
		pd[i] = pb[i] - pa[i];
}

struct worker {
	pthread_barrier_t *go;
	void (*fn)(struct worker *w);
	int id;
	int failed;   /* checks failed inside the thread */
	uint64_t arg; /* per-test input */
	void *shared; /* per-test shared state */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->go);
	w->fn(w);
	return NULL;
}

/* Runs fn in n threads released together; *d gets the counters' change.
 * Returns the number of checks that failed inside the threads. */
static int run_workers(int n, void (*fn)(struct worker *), uint64_t arg, void *shared,
		       struct snap *d)
{
	pthread_t th[MAX_WORKERS];
	struct worker w[MAX_WORKERS];
	pthread_barrier_t go;
	struct snap a, b;
	int failed = 0;

	pthread_barrier_init(&go, NULL, (unsigned int)n + 1);
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){
			.go = &go, .fn = fn, .id = i, .arg = arg, .shared = shared
		};
		if (pthread_create(&th[i], NULL, worker_main, &w[i]))
			abort();
	}
	take(&a);
	pthread_barrier_wait(&go);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	take(&b);
	diff(d, &a, &b);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < n; i++)
		failed += w[i].failed;
	return failed;
}

/* Inside a worker: count, don't print (printing allocates). */
#define WCHECK(w, cond)                \
	do {                           \
		if (!(cond))           \
			(w)->failed++; \
	} while (0)

/* Expected number of samples of n blocks of s bytes at mean p (sampler.h). */
static double expected_samples(double n, double s, double p)
{
	return n * -expm1(-s / p);
}

static int within(double v, double expect, double rel)
{
	return fabs(v - expect) <= rel * expect;
}

static void report_rel(const char *what, double got, double expect)
{
	fprintf(stderr, "  %s: %.0f, expected %.0f (%+.2f %%)\n", what, got, expect,
		100.0 * (got - expect) / expect);
}

/* The footprint is back where it was, and every sampled block's free was seen. */
static void check_balanced(const struct snap *d)
{
	CHECK_EQ_INT(d->fs, d->ms);
	CHECK_EQ_INT(d->fsb, d->sb);
	CHECK_EQ_INT(d->live, 0);
	CHECK_EQ_INT(d->overflows, 0);
	CHECK_EQ_INT(d->stale, 0);
}

static void test_state_block(void)
{
	CHECK_EQ_INT(st->magic, SCALENE_BPF_SAMPLER_MAGIC);
	CHECK_EQ_INT(st->abi, SCALENE_BPF_SAMPLER_ABI);
	CHECK_EQ_INT(st->size, sizeof(struct scalene_bpf_sampler_state));
	CHECK_EQ_INT(st->pid, getpid());
	CHECK(st->hooks & SBS_H_READY);
	CHECK(!(st->hooks & (SBS_H_FOREIGN_ALLOC | SBS_H_MALLOC_SHADOWED | SBS_H_MEMCPY_SHADOWED)));
	CHECK_EQ_INT(st->sample_bytes, MiB);
	CHECK_EQ_INT(st->copy_sample_bytes, 2 * MiB);
	CHECK_EQ_INT(st->python, 0); /* no libpython here */
}

/* Each thread allocates and frees w->arg bytes in 64 KiB blocks. */
static void alloc_free_64k(struct worker *w)
{
	for (uint64_t done = 0; done < w->arg; done += 64 * KiB) {
		char *p = malloc(64 * KiB);

		WCHECK(w, p);
		if (p)
			p[0] = 1;
		free(p);
	}
}

/* 4 threads x 1 GiB in 64 KiB blocks: 65,536 blocks, each sampled with
 * probability 1 - e^(-1/16): about 3,971 samples standing for 4 GiB. */
static void test_threads_4gib(void)
{
	double expect = expected_samples(4.0 * GiB / (64 * KiB), 64 * KiB, MiB);
	struct snap d;

	CHECK_EQ_INT(run_workers(4, alloc_free_64k, GiB, NULL, &d), 0);
	CHECK_EQ_INT(d.alloc, 4 * GiB);
	CHECK_EQ_INT(d.python, 0);
	report_rel("samples, 4 x 1 GiB in 64 KiB", (double)d.ms, expect);
	report_rel("sampled bytes", (double)d.sb, 4.0 * GiB);
	CHECK(within((double)d.ms, expect, 0.06)); /* 4 standard deviations */
	CHECK(within((double)d.sb, 4.0 * GiB, 0.06));
	check_balanced(&d);
}

/* Grows a block by 64 KiB steps to 8 MiB, then shrinks it, checking that the
 * contents survive each move. */
static void realloc_chain(struct worker *w)
{
	unsigned char *p = NULL, *q;
	size_t size = 0, step = 64 * KiB;

	for (int i = 0; i < 128; i++) {
		q = realloc(p, size + step);
		WCHECK(w, q);
		if (!q)
			return;
		WCHECK(w, !size || (q[0] == 0xa5 && q[size - 1] == (unsigned char)(i - 1)));
		q[0] = 0xa5;
		q[size + step - 1] = (unsigned char)i;
		p = q;
		size += step;
	}
	for (int i = 0; i < 64; i++) {
		size -= step;
		q = realloc(p, size);
		WCHECK(w, q && q[0] == 0xa5);
		p = q;
	}
	free(p);
}

static void test_realloc_chain(void)
{
	uint64_t up = 64 * KiB * 128 * 129 / 2, down = 0;
	struct snap d;

	for (uint64_t s = 128 * 64 * KiB; s > 64 * 64 * KiB;)
		down += (s -= 64 * KiB);
	CHECK_EQ_INT(run_workers(2, realloc_chain, 0, NULL, &d), 0);
	CHECK_EQ_INT(d.alloc, 2 * (up + down));
	CHECK(d.ms > 0);
	check_balanced(&d);
	CHECK_EQ_INT(d.restores, 0);
}

/* A block of 256 MiB is sampled with probability 1 - e^-256, weight its size. */
static volatile size_t huge = SIZE_MAX / 2;

static void realloc_edges(struct worker *w)
{
	char *volatile big = malloc(256 * MiB);
	char *p;

	WCHECK(w, big);
	/* A failed realloc leaves the block, and errno says why. */
	errno = 0;
	p = realloc(big, huge);
	WCHECK(w, !p && errno == ENOMEM);
	/* realloc(p, 0) frees p in glibc. */
	p = realloc(big, 0);
	WCHECK(w, !p);
	/* reallocarray: overflow refused, the rest counted once. */
	errno = 0;
	WCHECK(w, !reallocarray(NULL, huge, 4) && errno == ENOMEM);
	p = reallocarray(NULL, 1024, 1024);
	WCHECK(w, p);
	free(p);
	p = realloc(NULL, 4096);
	WCHECK(w, p);
	free(p);
}

/* The failed realloc shows as a restore; the counters net it out. */
static void test_realloc_edges(void)
{
	struct snap d;

	CHECK_EQ_INT(run_workers(1, realloc_edges, 0, NULL, &d), 0);
	CHECK_EQ_INT(d.alloc, 256 * MiB + MiB + 4096);
	CHECK_EQ_INT(d.restores, 1);
	check_balanced(&d);
}

static void aligned_allocs(struct worker *w)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = NULL;
	int err;

	for (size_t align = sizeof(void *); align <= 64 * KiB; align *= 2) {
		err = posix_memalign(&p, align, 1000);
		WCHECK(w, !err && p && !((uintptr_t)p & (align - 1)));
		memset(p, 1, 1000);
		free(p);
		p = aligned_alloc(align, 2 * align);
		WCHECK(w, p && !((uintptr_t)p & (align - 1)));
		free(p);
		p = memalign(align, 3000);
		WCHECK(w, p && !((uintptr_t)p & (align - 1)));
		free(p);
	}
	/* Invalid alignments: EINVAL, errno untouched, *out untouched. */
	errno = 0;
	p = (void *)1;
	WCHECK(w, posix_memalign(&p, 24, 100) == EINVAL && errno == 0 && p == (void *)1);
	WCHECK(w, posix_memalign(&p, 0, 100) == EINVAL && p == (void *)1);
	p = valloc(5000);
	WCHECK(w, p && !((uintptr_t)p & (uintptr_t)(page - 1)));
	free(p);
	p = pvalloc(5000);
	WCHECK(w, p && !((uintptr_t)p & (uintptr_t)(page - 1)) &&
			  malloc_usable_size(p) >= (size_t)page * 2);
	free(p);
	/* Sampled for sure: its free must be seen too. */
	err = posix_memalign(&p, 4096, 256 * MiB);
	WCHECK(w, !err);
	free(p);
}

static void test_aligned(void)
{
	uint64_t expect = 0;
	struct snap d;

	for (uint64_t align = sizeof(void *); align <= 64 * KiB; align *= 2)
		expect += 1000 + 2 * align + 3000;
	expect += 5000 + 5000 + 256 * MiB;
	CHECK_EQ_INT(run_workers(1, aligned_allocs, 0, NULL, &d), 0);
	CHECK_EQ_INT(d.alloc, expect);
	CHECK(d.ms >= 1);
	check_balanced(&d);
}

/* Copies w->arg bytes in 64 KiB chunks. */
static void copy_64k(struct worker *w)
{
	static __thread char a[64 * KiB], b[64 * KiB];

	for (uint64_t done = 0; done < w->arg; done += 64 * KiB)
		copy_fn(done & 1 ? a : b, done & 1 ? b : a, 64 * KiB);
}

/* 512 MiB in 64 KiB copies at a 2 MiB mean: about 252 samples. */
static void test_memcpy(void)
{
	double expect = expected_samples(512.0 * MiB / (64 * KiB), 64 * KiB, 2 * MiB);
	struct snap d;

	CHECK_EQ_INT(run_workers(1, copy_64k, 512 * MiB, NULL, &d), 0);
	CHECK(d.copy >= 512 * MiB && d.copy < 512 * MiB + 64 * KiB);
	report_rel("copy samples, 512 MiB in 64 KiB", (double)d.cs, expect);
	report_rel("copy sampled bytes", (double)d.csb, 512.0 * MiB);
	CHECK(within((double)d.cs, expect, 0.25)); /* 4 standard deviations */
	CHECK(within((double)d.csb, 512.0 * MiB, 0.25));
	CHECK_EQ_INT(d.alloc, 0);
}

static void copy_variants(struct worker *w)
{
	char buf[64], chk[64];

	for (int i = 0; i < 64; i++)
		buf[i] = (char)i;
	move_fn(buf + 8, buf, 32); /* overlapping, forward destination */
	WCHECK(w, buf[8] == 0 && buf[39] == 31 && buf[40] == 40);
	move_fn(buf, buf + 8, 32); /* overlapping, backward destination */
	WCHECK(w, buf[0] == 0 && buf[31] == 31 && buf[32] == 24);
	copy_chk_fn(chk, buf, 16, sizeof(chk));
	WCHECK(w, !memcmp(chk, buf, 16));
	move_chk_fn(chk + 1, chk, 16, sizeof(chk) - 1);
	WCHECK(w, chk[1] == buf[0] && chk[16] == buf[15]);
}

static void test_copy_variants(void)
{
	struct snap d;

	CHECK_EQ_INT(run_workers(1, copy_variants, 0, NULL, &d), 0);
	CHECK_EQ_INT(d.copy, 32 + 32 + 16 + 16);
}

/* The hooks must leave errno as the allocator left it, also when sampling. */
static void errno_kept(struct worker *w)
{
	for (int i = 0; i < 2000; i++) {
		void *p, *q;

		errno = EDOM;
		p = malloc(MiB);
		WCHECK(w, p && errno == EDOM);
		q = realloc(p, 2 * MiB);
		WCHECK(w, q && errno == EDOM);
		free(q);
		WCHECK(w, errno == EDOM);
		p = calloc(1, MiB);
		WCHECK(w, p && errno == EDOM);
		copy_fn(p, (char *)p + MiB / 2, MiB / 2);
		WCHECK(w, errno == EDOM);
		free(p);
	}
}

static void test_errno(void)
{
	struct snap d;

	CHECK_EQ_INT(run_workers(2, errno_kept, 0, NULL, &d), 0);
	CHECK(d.ms > 1000); /* most of these blocks are sampled */
	check_balanced(&d);
}

/* Blocks of 32 MiB are all sampled (1 - e^-32): the footprint follows them. */
static void test_footprint(void)
{
	enum {
		N = 64
	};
	struct snap a, b;
	void *p[N];

	take(&a);
	for (int i = 0; i < N; i++)
		p[i] = malloc(32 * MiB);
	take(&b);
	CHECK_EQ_INT(b.ms - a.ms, N);
	CHECK_EQ_INT(b.live - a.live, N * 32 * MiB);
	CHECK_EQ_INT(b.entries - a.entries, N);
	CHECK(GET(peak_sampled_bytes) >= b.live);
	for (int i = 0; i < N; i++)
		free(p[i]);
	take(&b);
	CHECK_EQ_INT(b.fs - a.fs, N);
	CHECK_EQ_INT(b.live, a.live);
	CHECK_EQ_INT(b.entries, a.entries);
}

/* Blocks allocated in one thread and freed in another. */
static void cross_alloc(struct worker *w)
{
	void **slots = w->shared;

	for (int i = 0; i < 256; i++)
		slots[i] = malloc(4 * MiB);
}

static void cross_free(struct worker *w)
{
	void **slots = w->shared;

	for (int i = 0; i < 256; i++)
		free(slots[i]);
}

static void test_cross_thread_free(void)
{
	static void *slots[256];
	struct snap d1, d2;

	CHECK_EQ_INT(run_workers(1, cross_alloc, 0, slots, &d1), 0);
	CHECK_EQ_INT(run_workers(1, cross_free, 0, slots, &d2), 0);
	CHECK(d1.ms > 200); /* 1 - e^-4 of 256 */
	CHECK_EQ_INT(d2.fs, d1.ms);
	CHECK_EQ_INT(d2.fsb, d1.sb);
	CHECK_EQ_INT(d1.live + d2.live, 0);
}

/* The child has its own pid in the block and its own counts. */
static void test_fork(void)
{
	uint64_t parent_alloc;
	int status = 0;
	pid_t pid;

	fflush(NULL);
	parent_alloc = GET(alloc_bytes);
	pid = fork();
	if (pid == 0) {
		struct snap d;
		int bad = 0;

		bad += st->pid != (uint32_t)getpid();
		bad += run_workers(2, alloc_free_64k, 64 * MiB, NULL, &d);
		bad += d.alloc != 128 * MiB;
		bad += d.fs != d.ms || d.live != 0;
		_exit(bad ? 1 : 0);
	}
	CHECK(pid > 0);
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ_INT(GET(alloc_bytes), parent_alloc);
	CHECK_EQ_INT(st->pid, getpid());
}

/* dlopen/dlclose (the loader allocates through the hooks) while threads
 * allocate. */
static void dlopen_loop(struct worker *w)
{
	if (w->id) {
		alloc_free_64k(w);
		return;
	}
	for (int i = 0; i < 50; i++) {
		void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);

		if (!h)
			h = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
		WCHECK(w, h);
		if (h)
			dlclose(h);
	}
}

static void test_dlopen(void)
{
	struct snap d;
	struct worker warm = { .id = 0 };

	/* ld.so keeps some memory from a first dlopen (_dl_find_object's
	 * tables): allocate it before the measurement. */
	dlopen_loop(&warm);
	CHECK_EQ_INT(run_workers(2, dlopen_loop, 256 * MiB, NULL, &d), 0);
	CHECK(d.alloc >= 128 * MiB);
	check_balanced(&d);
}

/* Random sizes, reallocs and cross-thread frees at a 4 KiB mean: most blocks
 * are sampled, and every sampled free must still be found. */
struct handoff {
	pthread_mutex_t lock;
	void *box[4][64];
	int n[4];
};

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(unsigned char *p, size_t n, unsigned char v)
{
	p[0] = v;
	p[n - 1] = v;
}

static int intact(const unsigned char *p, size_t n, unsigned char v)
{
	return p[0] == v && p[n - 1] == v;
}

static void stress(struct worker *w)
{
	struct handoff *h = w->shared;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
	unsigned char *slot[256] = { 0 };
	size_t size[256] = { 0 };

	for (int i = 0; i < 200000; i++) {
		uint64_t r = xorshift(&rng);
		int k = (int)(r & 255), op = (int)((r >> 8) % 5);
		size_t n = 1 + (size_t)((r >> 16) % 8192);

		if (slot[k] && !intact(slot[k], size[k], (unsigned char)k))
			w->failed++;
		switch (op) {
		case 0:
		case 1:
			free(slot[k]);
			slot[k] = op ? calloc(1, n) : malloc(n);
			break;
		case 2:
			slot[k] = slot[k] ? realloc(slot[k], n) : malloc(n);
			break;
		case 3: /* hand a block to the next thread */
			pthread_mutex_lock(&h->lock);
			if (slot[k] && h->n[(w->id + 1) % 4] < 64) {
				h->box[(w->id + 1) % 4][h->n[(w->id + 1) % 4]++] = slot[k];
				slot[k] = NULL;
			}
			pthread_mutex_unlock(&h->lock);
			continue;
		default: /* free what others handed over */
			pthread_mutex_lock(&h->lock);
			while (h->n[w->id])
				free(h->box[w->id][--h->n[w->id]]);
			pthread_mutex_unlock(&h->lock);
			continue;
		}
		WCHECK(w, slot[k]);
		if (!slot[k])
			return;
		size[k] = n;
		fill(slot[k], n, (unsigned char)k);
	}
	for (int k = 0; k < 256; k++)
		free(slot[k]);
}

static void idle(struct worker *w)
{
}

static void test_stress(void)
{
	static struct handoff h = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct snap a, b, d;

	/* New threads' DTVs are calloc'd by pthread_create and stay with the
	 * cached stacks: make them before the first reading. */
	run_workers(4, idle, 0, NULL, &d);
	take(&a);
	CHECK_EQ_INT(run_workers(4, stress, 0, &h, &d), 0);
	CHECK(d.ms > 100000);
	for (int i = 0; i < 4; i++)
		while (h.n[i])
			free(h.box[i][--h.n[i]]);
	take(&b);
	diff(&d, &a, &b);
	check_balanced(&d);
	CHECK_EQ_INT(b.entries, a.entries);
}

/* At a 4 KiB mean, 64 MiB in 1 KiB blocks: 65,536 blocks, q = 1 - e^-1/4. */
static void alloc_free_1k(struct worker *w)
{
	for (int i = 0; i < 65536; i++)
		free(malloc_fn(KiB)); /* a pair the compiler cannot drop */
}

static void test_dense_rate(void)
{
	double expect = expected_samples(65536, KiB, 4 * KiB);
	struct snap d;

	CHECK_EQ_INT(run_workers(1, alloc_free_1k, 0, NULL, &d), 0);
	report_rel("samples, 64 MiB in 1 KiB at a 4 KiB mean", (double)d.ms, expect);
	report_rel("sampled bytes", (double)d.sb, 64.0 * MiB);
	CHECK(within((double)d.ms, expect, 0.03)); /* 4 standard deviations */
	CHECK(within((double)d.sb, 64.0 * MiB, 0.03));
	check_balanced(&d);
}

/* Means of 0: counting goes on, nothing is sampled. */
static void test_off(void)
{
	struct snap d;

	CHECK_EQ_INT(st->sample_bytes, 0);
	CHECK_EQ_INT(run_workers(2, alloc_free_64k, 256 * MiB, NULL, &d), 0);
	CHECK_EQ_INT(d.alloc, 512 * MiB);
	CHECK_EQ_INT(d.ms, 0);
	CHECK_EQ_INT(run_workers(1, copy_64k, 64 * MiB, NULL, &d), 0);
	CHECK_EQ_INT(d.cs, 0);
	CHECK(d.copy >= 64 * MiB);
}

static void mixed_family(struct worker *w)
{
	void *p = NULL;

	alloc_free_64k(w);
	realloc_chain(w);
	WCHECK(w, !posix_memalign(&p, 256, 1000) && !((uintptr_t)p & 255));
	free(p);
	p = calloc(100, 100);
	WCHECK(w, p && !((char *)p)[9999]);
	p = reallocarray(p, 100, 200);
	WCHECK(w, p);
	free(p);
	free(aligned_alloc(64, 640));
	free(memalign(4096, 10));
	free(valloc(10));
	free(pvalloc(10));
}

/* Another allocator after ours: the hooks forward every call to it (a block
 * of it reaching glibc's free would crash) and still count. */
static void test_foreign(void)
{
	uint64_t *calls = dlsym(RTLD_DEFAULT, "fake_alloc_calls"), before = calls ? *calls : 0;
	struct snap d;

	CHECK(st->hooks & SBS_H_FOREIGN_ALLOC);
	CHECK(!(st->hooks & SBS_H_MALLOC_SHADOWED));
	CHECK_EQ_INT(run_workers(2, mixed_family, 64 * MiB, NULL, &d), 0);
	CHECK(st->hooks & SBS_H_MALLOC_SEEN);
	CHECK(d.alloc >= 128 * MiB);
	CHECK(!calls || *calls - before > 2 * 1024);
	check_balanced(&d);
}

/* Another allocator before ours: native allocations are not seen, and the
 * block says so; copies still are. */
static void test_shadowed(void)
{
	struct snap d;

	CHECK(st->hooks & SBS_H_MALLOC_SHADOWED);
	CHECK(!(st->hooks & SBS_H_FOREIGN_ALLOC));
	CHECK_EQ_INT(run_workers(1, mixed_family, 64 * MiB, NULL, &d), 0);
	CHECK_EQ_INT(d.alloc, 0);
	CHECK(!(st->hooks & SBS_H_MALLOC_SEEN));
	CHECK_EQ_INT(run_workers(1, copy_64k, 64 * MiB, NULL, &d), 0);
	CHECK(d.copy >= 64 * MiB);
}

/* Allocates a known amount and exits; the launcher reads the report line. */
static void test_report_source(void)
{
	struct snap d;

	CHECK_EQ_INT(run_workers(1, alloc_free_64k, 64 * MiB, NULL, &d), 0);
}

/* LD_PRELOAD entries: "@" is the sampler, "@fake" tests/sampler/fake_alloc.c. */
struct suite {
	const char *name;
	void (*tests[16])(void);
	const char *test_names[16];
	const char *env[4]; /* set for the suite (besides LD_PRELOAD) */
	const char *preload[3];
};

#define DEBUG_MALLOC "libc_malloc_debug.so.0"

static const struct suite suites[] = {
	{ "main",
	  { test_state_block, test_threads_4gib, test_realloc_chain, test_realloc_edges,
	    test_aligned, test_memcpy, test_copy_variants, test_errno, test_footprint,
	    test_cross_thread_free, test_fork, test_dlopen },
	  { "test_state_block", "test_threads_4gib", "test_realloc_chain", "test_realloc_edges",
	    "test_aligned", "test_memcpy", "test_copy_variants", "test_errno", "test_footprint",
	    "test_cross_thread_free", "test_fork", "test_dlopen" },
	  { "SCALENE_BPF_SAMPLE_BYTES=1m", "SCALENE_BPF_COPY_SAMPLE_BYTES=2097152" },
	  { "@" } },
	{ "dense",
	  { test_stress, test_dense_rate },
	  { "test_stress", "test_dense_rate" },
	  { "SCALENE_BPF_SAMPLE_BYTES=4k", "SCALENE_BPF_COPY_SAMPLE_BYTES=4k" },
	  { "@" } },
	{ "off",
	  { test_off },
	  { "test_off" },
	  { "SCALENE_BPF_SAMPLE_BYTES=0", "SCALENE_BPF_COPY_SAMPLE_BYTES=0" },
	  { "@" } },
	{ "foreign", { test_foreign }, { "test_foreign" }, { NULL }, { "@", "@fake" } },
	{ "shadowed", { test_shadowed }, { "test_shadowed" }, { NULL }, { "@fake", "@" } },
	/* glibc's debugging malloc: symbols versioned only; with MALLOC_CHECK_ a
	 * block that skipped it fails its checks. */
	{ "foreign-debug",
	  { test_foreign },
	  { "test_foreign" },
	  { "MALLOC_CHECK_=3" },
	  { "@", DEBUG_MALLOC } },
	{ "shadowed-debug",
	  { test_shadowed },
	  { "test_shadowed" },
	  { "MALLOC_CHECK_=3" },
	  { DEBUG_MALLOC, "@" } },
	{ "report",
	  { test_report_source },
	  { "test_report_source" },
	  { "SCALENE_BPF_SAMPLER_REPORT=@" },
	  { "@" } },
};

#define N_SUITES (sizeof(suites) / sizeof(suites[0]))

static int run_suite(const char *name)
{
	for (size_t i = 0; i < N_SUITES; i++) {
		const struct suite *s = &suites[i];
		char label[64];

		if (strcmp(s->name, name))
			continue;
		st = dlsym(RTLD_DEFAULT, SCALENE_BPF_SAMPLER_STATE_SYM);
		if (!st) {
			fprintf(stderr, "suite %s: the sampler is not preloaded\n", name);
			return 2;
		}
		for (int t = 0; s->tests[t]; t++) {
			int before = t_checks_failed;

			s->tests[t]();
			if (t_checks_failed == before) {
				t_tests_passed++;
			} else {
				fprintf(stderr, "FAIL %s\n", s->test_names[t]);
				t_tests_failed++;
			}
		}
		snprintf(label, sizeof(label), "sampler/%s", name);
		return test_summary(label);
	}
	fprintf(stderr, "unknown suite %s\n", name);
	return 2;
}

/* ---- the launcher: no preload here ---- */

static char lib_path[4096], fake_path[4096];

/* The library under test, and the stand-in allocator built next to this binary. */
static int find_libraries(void)
{
	const char *env = getenv("SCALENE_BPF_SAMPLER_SO");
	char exe[4096];
	ssize_t n;
	char *slash;
	int len;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	if (env && *env)
		len = snprintf(lib_path, sizeof(lib_path), "%s", env);
	else
		len = snprintf(lib_path, sizeof(lib_path), "%s/../sampler/%s", exe,
			       SCALENE_BPF_SAMPLER_SONAME);
	if (len < 0 || (size_t)len >= sizeof(lib_path))
		return -ENAMETOOLONG;
	len = snprintf(fake_path, sizeof(fake_path), "%s/libfakealloc.so", exe);
	if (len < 0 || (size_t)len >= sizeof(fake_path))
		return -ENAMETOOLONG;
	if (access(lib_path, R_OK))
		return -errno;
	return access(fake_path, R_OK) ? -errno : 0;
}

/* Runs one suite in a child; its summary line says how many tests passed. */
static void launch(const struct suite *s, const char *report_file)
{
	extern char **environ;
	char *envp[512], preload[8300], suite_arg[64], line[256];
	int fd[2], n = 0, status = 0, passed = -1, failed = -1;
	FILE *out;
	pid_t pid;

	for (char **e = environ; *e && n < 500; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "SCALENE_BPF_", 12))
			envp[n++] = *e;
	strcpy(preload, "LD_PRELOAD=");
	for (int i = 0; s->preload[i]; i++) {
		const char *item = s->preload[i];

		if (!strcmp(item, "@"))
			item = lib_path;
		else if (!strcmp(item, "@fake"))
			item = fake_path;
		if (strlen(preload) + strlen(item) + 2 > sizeof(preload))
			abort();
		if (i)
			strcat(preload, ":");
		strcat(preload, item);
	}
	envp[n++] = preload;
	for (int i = 0; s->env[i]; i++) {
		static char report_env[4200];

		if (!strcmp(s->env[i], "SCALENE_BPF_SAMPLER_REPORT=@")) {
			snprintf(report_env, sizeof(report_env), "SCALENE_BPF_SAMPLER_REPORT=%s",
				 report_file);
			envp[n++] = report_env;
		} else {
			envp[n++] = (char *)s->env[i];
		}
	}
	envp[n] = NULL;
	snprintf(suite_arg, sizeof(suite_arg), "--suite=%s", s->name);
	fflush(NULL);
	if (pipe(fd))
		abort();
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "test_sampler", suite_arg, NULL };

		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	close(fd[1]);
	out = fdopen(fd[0], "r");
	while (out && fgets(line, sizeof(line), out)) {
		fputs(line, stdout);
		sscanf(line, "%*s %d passed, %d failed", &passed, &failed);
	}
	if (out)
		fclose(out);
	waitpid(pid, &status, 0);
	if (passed < 0 || !WIFEXITED(status)) {
		fprintf(stderr, "FAIL suite %s: no summary (status 0x%x)\n", s->name, status);
		t_tests_failed++;
		return;
	}
	t_tests_passed += passed;
	t_tests_failed += failed;
}

/* The report line of the "report" suite: one line, with the totals. */
static void check_report(const char *path)
{
	char buf[4096] = { 0 };
	unsigned long long alloc = 0, pid = 0;
	const char *p;
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	CHECK(n > 0);
	CHECK(!strncmp(buf, "scalene-bpf-sampler: pid=", 25));
	CHECK(strchr(buf, '\n') == buf + n - 1);
	p = strstr(buf, " alloc_bytes=");
	CHECK(p && sscanf(p, " alloc_bytes=%llu", &alloc) == 1);
	CHECK(alloc >= 64 * MiB);
	CHECK(sscanf(buf, "scalene-bpf-sampler: pid=%llu", &pid) == 1 && pid > 0);
	CHECK(strstr(buf, " hooks=ready,malloc-seen"));
	CHECK(strstr(buf, " python=\n"));
}

int main(int argc, char **argv)
{
	char report_file[] = "/tmp/test_sampler_report.XXXXXX";
	int err, fd;

	if (argc > 1 && !strncmp(argv[1], "--suite=", 8))
		return run_suite(argv[1] + 8);
	err = find_libraries();
	if (err) {
		fprintf(stderr, "FAIL: %s or %s: %s (build them: make unit-tests)\n", lib_path,
			fake_path, strerror(-err));
		t_tests_failed++;
		return test_summary("sampler");
	}
	fd = mkstemp(report_file);
	if (fd < 0)
		abort();
	close(fd);
	for (size_t i = 0; i < N_SUITES; i++)
		launch(&suites[i], report_file);
	{
		int before = t_checks_failed;

		check_report(report_file);
		if (t_checks_failed == before) {
			t_tests_passed++;
		} else {
			fprintf(stderr, "FAIL check_report\n");
			t_tests_failed++;
		}
	}
	unlink(report_file);
	return test_summary("sampler");
}
