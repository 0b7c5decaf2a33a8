// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sampler proper: per-thread sample points, the probes, the exported
 * state block, the constructor and destructor, and the report at exit.
 * Sampling is described in sampler.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sampler_int.h"

__thread struct sampler_tls sbs_tls __attribute__((tls_model("initial-exec")));

/* Its own cache lines: the slow paths write it, the hooks never read it. */
SBS_EXPORT _Alignas(64) struct scalene_bpf_sampler_state scalene_bpf_sampler_state = {
	.magic = SCALENE_BPF_SAMPLER_MAGIC,
	.abi = SCALENE_BPF_SAMPLER_ABI,
	.size = sizeof(struct scalene_bpf_sampler_state),
	.sample_bytes = SCALENE_BPF_DEFAULT_SAMPLE_BYTES,
	.copy_sample_bytes = SCALENE_BPF_DEFAULT_COPY_SAMPLE_BYTES,
};

struct ptrtab sbs_tab;

/* Threads compare their `gen` with it; zero-initialised TLS never matches. */
uint32_t sbs_gen = 1;

uint32_t sbs_off;

static pthread_key_t exit_key;
static int exit_key_ok;
static char report_path[4096];

/*
 * The probes (sampler.h): exported functions at whose entry the loader places
 * uprobes, called only when something was sampled, so that the common path
 * carries no probe site and its argument set-up.  SCALENE_BPF_PROBE_FN keeps
 * each call and its arguments.
 */
SCALENE_BPF_PROBE_FN void scalene_bpf_probe_init(void *state, unsigned int abi)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_malloc(uint64_t weight, uint32_t flags, void *ptr,
						   uint64_t size)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_free(void *ptr, uint64_t weight, uint32_t flags)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_memcpy(uint64_t weight, uint64_t size)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_exit(void *state)
{
	SCALENE_BPF_PROBE_BODY;
}

/* What a slow path must give back to the program it interrupted. */
struct slow_saved {
	int err;
	fexcept_t fe; /* log() and expm1() raise FE_INEXACT */
};

static void slow_enter(struct sampler_tls *t, struct slow_saved *s)
{
	s->err = errno;
	fegetexceptflag(&s->fe, FE_ALL_EXCEPT);
	t->busy++;
	t->slow++;
}

static void slow_leave(struct sampler_tls *t, struct slow_saved *s)
{
	t->slow--;
	t->busy--;
	fesetexceptflag(&s->fe, FE_ALL_EXCEPT);
	errno = s->err;
}

static uint64_t rng_next(struct sampler_tls *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Bytes to the next sample point: exponential with the given mean. */
static int64_t draw_gap(struct sampler_tls *t, uint64_t mean)
{
	double u, gap;

	if (!mean)
		return INT64_MAX / 2;
	u = (double)((rng_next(t) >> 11) + 1) * 0x1.0p-53; /* (0, 1] */
	gap = -log(u) * (double)mean;
	if (gap < 1)
		return 1;
	if (gap > 0x1.0p61)
		return (int64_t)1 << 61;
	return (int64_t)gap;
}

/* s / P(an s-byte block holds a sample point); see sampler.h. */
static uint64_t weight_of(size_t size, uint64_t mean)
{
	double x = (double)size / (double)mean;

	if (x > 36) /* 1 - e^-x == 1 in double */
		return size;
	return (uint64_t)((double)size / -expm1(-x) + 0.5);
}

/* Adds what the thread counted since its last flush to the shared totals. */
static void flush(struct sampler_tls *t)
{
	int64_t n = t->base - t->until;

	if (n > 0)
		sbs_state_add(&sbs_state.alloc_bytes, (uint64_t)n);
	t->base = t->until;
	n = t->copy_base - t->copy_until;
	if (n > 0)
		sbs_state_add(&sbs_state.copy_bytes, (uint64_t)n);
	t->copy_base = t->copy_until;
	if (t->py_bytes) {
		sbs_state_add(&sbs_state.python_bytes, t->py_bytes);
		t->py_bytes = 0;
	}
}

static void thread_exit(void *arg)
{
	flush(&sbs_tls);
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * (Re)starts a thread's sampling: in its first slow path, after the
 * constructor changed the configuration, and in a fork child, which must not
 * repeat its parent's sample points.  Called with `busy` held.
 */
static void thread_seed(struct sampler_tls *t)
{
	struct timespec ts = { 0 };

	flush(t);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t->rng = splitmix((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		 splitmix((uintptr_t)t ^ ((uint64_t)sbs_state.pid << 32) ^ sbs_gen);
	if (!t->rng)
		t->rng = 1;
	/* Memoryless: a fresh exponential gap is the right start at any point. */
	t->until = t->base = draw_gap(t, sbs_state.sample_bytes);
	t->copy_until = t->copy_base = draw_gap(t, sbs_state.copy_sample_bytes);
	t->gen = __atomic_load_n(&sbs_gen, __ATOMIC_RELAXED);
	/* The main thread's counts are flushed by the destructor instead. A key
	 * above glibc's first 32 makes pthread_setspecific calloc: `busy` lets
	 * that through. */
	if (!t->exit_hook && exit_key_ok && !pthread_setspecific(exit_key, t))
		t->exit_hook = 1;
}

static void live_add(int64_t delta)
{
	uint64_t live = __atomic_add_fetch(&sbs_state.live_sampled_bytes, (uint64_t)delta,
					   __ATOMIC_RELAXED);
	__u64 peak = __atomic_load_n(&sbs_state.peak_sampled_bytes, __ATOMIC_RELAXED);

	while (delta > 0 && live > peak &&
	       !__atomic_compare_exchange_n(&sbs_state.peak_sampled_bytes, &peak, live, 1,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void report_free(void *p, uint64_t meta, uint32_t extra_flags)
{
	uint64_t w = PTRTAB_WEIGHT(meta);

	scalene_bpf_probe_free(p, w, PTRTAB_FLAGS(meta) | extra_flags);
	sbs_state_add(&sbs_state.free_samples, 1);
	sbs_state_add(&sbs_state.freed_sampled_bytes, w);
	if (PTRTAB_FLAGS(meta) & SBS_F_PYTHON)
		sbs_state_add(&sbs_state.freed_sampled_python_bytes, w);
	live_add(-(int64_t)w);
}

/* The inverse, for a realloc that failed after its block's free was counted. */
static void unreport_free(uint64_t meta)
{
	uint64_t w = PTRTAB_WEIGHT(meta);

	sbs_state_add(&sbs_state.free_samples, (uint64_t)-1);
	sbs_state_add(&sbs_state.freed_sampled_bytes, -w);
	if (PTRTAB_FLAGS(meta) & SBS_F_PYTHON)
		sbs_state_add(&sbs_state.freed_sampled_python_bytes, -w);
	live_add((int64_t)w);
}

/* Tracks the sampled block p and fires its malloc probe. */
static void record(void *p, size_t size, uint64_t weight, uint32_t flags)
{
	uint64_t stale = 0;
	int err;

	if (weight > PTRTAB_MAX_WEIGHT)
		weight = PTRTAB_MAX_WEIGHT;
	err = ptrtab_insert(&sbs_tab, p, PTRTAB_META(weight, flags), &stale);
	if (err == 1) {
		/* Its free probe must come before the new block's malloc probe. */
		report_free(p, stale, SBS_F_STALE);
		sbs_state_add(&sbs_state.table_stale, 1);
	} else if (err < 0) {
		flags |= SBS_F_UNTRACKED;
		sbs_state_add(&sbs_state.table_overflows, 1);
	} else {
		sbs_state_add(&sbs_state.table_entries, 1);
	}
	scalene_bpf_probe_malloc(weight, flags, p, size);
	sbs_state_add(&sbs_state.malloc_samples, 1);
	sbs_state_add(&sbs_state.sampled_bytes, weight);
	if (flags & SBS_F_PYTHON) {
		sbs_state_add(&sbs_state.python_samples, 1);
		sbs_state_add(&sbs_state.sampled_python_bytes, weight);
	}
	if (!(flags & SBS_F_UNTRACKED))
		live_add((int64_t)weight);
}

/*
 * Sampling is off (sbs_off): what the thread counted so far goes to the
 * totals, and its countdowns are put 4 GiB away, so that it comes back here
 * once per 4 GiB it allocates at most: to find sampling still off, or (a
 * second attach turned it on again, attach.c) to seed itself again.  Nothing
 * in it sets errno or raises a floating-point flag.
 */
#define PARK_BYTES (1ll << 32)

static void park(struct sampler_tls *t)
{
	flush(t);
	t->until = t->base = PARK_BYTES;
	t->copy_until = t->copy_base = PARK_BYTES;
}

void sbs_sample_alloc(struct sampler_tls *t, void *p, size_t size, uint32_t flags)
{
	struct slow_saved s;
	uint64_t mean;

	/* A signal handler's allocation may have taken the sample and re-armed
	 * the thread between the hook's subtraction and its test. */
	if (t->until > 0)
		return;
	if (unlikely(__atomic_load_n(&sbs_off, __ATOMIC_ACQUIRE))) {
		park(t);
		return;
	}
	slow_enter(t, &s);
	if (unlikely(t->gen != __atomic_load_n(&sbs_gen, __ATOMIC_RELAXED))) {
		thread_seed(t);
		/* The flush counted this block; decide its sampling on the new
		 * gap without counting it again. */
		t->until -= (int64_t)size;
		t->base -= (int64_t)size;
		if (t->until > 0)
			goto out;
	}
	flush(t);
	mean = sbs_state.sample_bytes;
	if (mean && size)
		record(p, size, weight_of(size, mean), flags);
	t->until = t->base = draw_gap(t, mean);
out:
	slow_leave(t, &s);
}

void sbs_sample_copy(struct sampler_tls *t, size_t size)
{
	struct slow_saved s;
	uint64_t mean, w;

	/* Copies are counted inside Python's wrappers too (a realloc's move is
	 * a copy), but not inside a slow path that a signal handler's memcpy
	 * interrupted: the countdown stays crossed and the next copy samples. */
	if (t->copy_until > 0 || t->slow)
		return;
	if (unlikely(__atomic_load_n(&sbs_off, __ATOMIC_ACQUIRE))) {
		park(t);
		return;
	}
	slow_enter(t, &s);
	if (unlikely(t->gen != __atomic_load_n(&sbs_gen, __ATOMIC_RELAXED))) {
		thread_seed(t);
		t->copy_until -= (int64_t)size;
		t->copy_base -= (int64_t)size;
		if (t->copy_until > 0)
			goto out;
	}
	flush(t);
	mean = sbs_state.copy_sample_bytes;
	if (mean && size) {
		w = weight_of(size, mean);
		scalene_bpf_probe_memcpy(w, size);
		sbs_state_add(&sbs_state.copy_samples, 1);
		sbs_state_add(&sbs_state.copy_sampled_bytes, w);
	}
	t->copy_until = t->copy_base = draw_gap(t, mean);
out:
	slow_leave(t, &s);
}

void sbs_reseed(void)
{
	struct sampler_tls *t = &sbs_tls;
	struct slow_saved s;

	slow_enter(t, &s);
	thread_seed(t);
	slow_leave(t, &s);
}

int sbs_untrack(void *p, uint64_t *meta)
{
	if (ptrtab_remove(&sbs_tab, p, meta))
		return 0;
	sbs_state_add(&sbs_state.table_entries, (uint64_t)-1);
	report_free(p, *meta, 0);
	return 1;
}

void sbs_untrack_free(void *p)
{
	uint64_t meta;

	sbs_untrack(p, &meta);
}

/* The probes show both events (free, then malloc with SBS_F_RESTORED); the
 * counters show neither. */
void sbs_retrack(void *p, uint64_t meta)
{
	uint64_t stale;
	uint32_t flags = PTRTAB_FLAGS(meta);
	int err = ptrtab_insert(&sbs_tab, p, meta, &stale);

	unreport_free(meta);
	if (err < 0) {
		flags |= SBS_F_UNTRACKED;
		sbs_state_add(&sbs_state.table_overflows, 1);
		live_add(-(int64_t)PTRTAB_WEIGHT(meta));
	} else {
		sbs_state_add(&sbs_state.table_entries, 1);
	}
	scalene_bpf_probe_malloc(PTRTAB_WEIGHT(meta), flags | SBS_F_RESTORED, p, 0);
	sbs_state_add(&sbs_state.realloc_restores, 1);
}

/* A size from the environment: digits with an optional k, m or g (KiB, MiB,
 * GiB).  Returns -EINVAL for anything else, leaving *out alone. */
static int parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mult = 1;

	if (!s || !*s)
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	switch (*s) {
	case 'k':
	case 'K':
		mult = 1ull << 10;
		s++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		s++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		s++;
		break;
	}
	if (*s || (v && mult > UINT64_MAX / v) || v * mult > ((uint64_t)1 << 50))
		return -EINVAL;
	*out = v * mult;
	return 0;
}

static int pywrap_mode(const char *s)
{
	if (!s || !*s || !strcmp(s, "both"))
		return SBS_PYWRAP_BOTH;
	if (!strcmp(s, "ctor"))
		return SBS_PYWRAP_CTOR;
	if (!strcmp(s, "defer"))
		return SBS_PYWRAP_DEFER;
	if (!strcmp(s, "off") || !strcmp(s, "0"))
		return SBS_PYWRAP_OFF;
	return SBS_PYWRAP_BOTH;
}

static void read_config(void)
{
	const char *rep = getenv(SCALENE_BPF_ENV_REPORT);
	uint64_t v;

	if (!parse_size(getenv(SCALENE_BPF_ENV_SAMPLE_BYTES), &v))
		sbs_state.sample_bytes = v;
	if (!parse_size(getenv(SCALENE_BPF_ENV_COPY_SAMPLE_BYTES), &v))
		sbs_state.copy_sample_bytes = v;
	/* Kept: the program may change its environment before exit. */
	if (rep && *rep && strlen(rep) < sizeof(report_path))
		memcpy(report_path, rep, strlen(rep) + 1);
}

static void after_fork_child(void)
{
	struct sampler_tls *t = &sbs_tls;

	t->busy++;
	sbs_state.pid = (__u32)getpid();
	thread_seed(t);
	sbs_pywrap_after_fork();
	sbs_attach_after_fork();
	t->busy--;
}

__attribute__((constructor)) static void sampler_init(void)
{
	struct sampler_tls *t = &sbs_tls;
	int err = errno;

	t->busy++;
	sbs_state.pid = (__u32)getpid();
	read_config();
	sbs_hooks_init();
	exit_key_ok = !pthread_key_create(&exit_key, thread_exit);
	pthread_atfork(NULL, NULL, after_fork_child);
	__atomic_add_fetch(&sbs_gen, 1, __ATOMIC_RELAXED);
	thread_seed(t);
	sbs_pywrap_init(pywrap_mode(getenv(SCALENE_BPF_ENV_PYWRAP)));
	sbs_state_or(&sbs_state.hooks, SBS_H_READY);
	scalene_bpf_probe_init(&sbs_state, SCALENE_BPF_SAMPLER_ABI);
	t->busy--;
	errno = err;
}

void sbs_announce(void)
{
	scalene_bpf_probe_init(&sbs_state, SCALENE_BPF_SAMPLER_ABI);
}

/* Names of the bits of scalene_bpf_sampler_state.hooks and .python, by bit number. */
static const char *const hook_names[] = {
	"foreign-alloc", "malloc-shadowed", "memcpy-shadowed", "ready", "malloc-seen",
};

static const char *const python_names[] = {
	"found",	"ctor",	     "checked",	   "ctor-lost", "rewrapped",
	"no-gil-check", "exit-ours", "exit-other", "late",
};

static const char *const attach_names[] = {
	"attached", "watching", "detach-asked", "beat-lost", "restored", "covered", "forked",
};

/* Appends str to buf[*len]; returns -ENOSPC once it no longer fits. */
static int put_str(char *buf, size_t size, size_t *len, const char *str)
{
	size_t n = strlen(str);

	if (n >= size - *len)
		return -ENOSPC;
	memcpy(buf + *len, str, n + 1);
	*len += n;
	return 0;
}

static int put_u64(char *buf, size_t size, size_t *len, unsigned long long v)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%llu", v);

	if (n < 0 || (size_t)n >= sizeof(num))
		return -ENOSPC;
	return put_str(buf, size, len, num);
}

static int put_names(char *buf, size_t size, size_t *len, const char *key, unsigned int bits,
		     const char *const *names, size_t n)
{
	const char *sep = "";
	int err = put_str(buf, size, len, key);

	for (size_t i = 0; !err && i < n; i++) {
		if (!(bits & (1u << i)))
			continue;
		err = put_str(buf, size, len, sep) ?: put_str(buf, size, len, names[i]);
		sep = ",";
	}
	return err;
}

/* One line of key=value totals, for tests and for runs without BPF. */
static void report(void)
{
	const struct scalene_bpf_sampler_state *s = &sbs_state;
	const struct {
		const char *key;
		unsigned long long v;
	} f[] = {
		{ "pid", s->pid },
		{ "alloc_bytes", s->alloc_bytes },
		{ "python_bytes", s->python_bytes },
		{ "native_bytes", s->alloc_bytes - s->python_bytes },
		{ "copy_bytes", s->copy_bytes },
		{ "malloc_samples", s->malloc_samples },
		{ "python_samples", s->python_samples },
		{ "sampled_bytes", s->sampled_bytes },
		{ "sampled_python_bytes", s->sampled_python_bytes },
		{ "free_samples", s->free_samples },
		{ "freed_sampled_bytes", s->freed_sampled_bytes },
		{ "freed_sampled_python_bytes", s->freed_sampled_python_bytes },
		{ "live_sampled_bytes", s->live_sampled_bytes },
		{ "peak_sampled_bytes", s->peak_sampled_bytes },
		{ "copy_samples", s->copy_samples },
		{ "copy_sampled_bytes", s->copy_sampled_bytes },
		{ "table_entries", s->table_entries },
		{ "table_overflows", s->table_overflows },
		{ "table_stale", s->table_stale },
		{ "realloc_restores", s->realloc_restores },
		{ "sample_bytes", s->sample_bytes },
		{ "copy_sample_bytes", s->copy_sample_bytes },
	};
	char buf[2048];
	size_t len = 0;
	int err, fd = 2;

	if (!report_path[0])
		return;
	err = put_str(buf, sizeof(buf), &len, "scalene-bpf-sampler:");
	for (size_t i = 0; !err && i < sizeof(f) / sizeof(f[0]); i++) {
		err = put_str(buf, sizeof(buf), &len, " ")
			      ?: put_str(buf, sizeof(buf), &len, f[i].key);
		if (!err)
			err = put_str(buf, sizeof(buf), &len, "=")
				      ?: put_u64(buf, sizeof(buf), &len, f[i].v);
	}
	if (!err)
		err = put_names(buf, sizeof(buf), &len, " hooks=", s->hooks, hook_names,
				sizeof(hook_names) / sizeof(hook_names[0]));
	if (!err)
		err = put_names(buf, sizeof(buf), &len, " python=", s->python, python_names,
				sizeof(python_names) / sizeof(python_names[0]));
	/* Only where attach was called: preloaded runs keep their line as it was. */
	if (!err && s->attach_state)
		err = put_names(buf, sizeof(buf), &len, " attach=", s->attach_state, attach_names,
				sizeof(attach_names) / sizeof(attach_names[0]));
	if (!err)
		err = put_str(buf, sizeof(buf), &len, "\n");
	if (err)
		return;
	if (strcmp(report_path, "1")) {
		fd = open(report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return;
	}
	/* One write: reports of several processes appending to one file stay whole. */
	if (write(fd, buf, len) < 0) {
		/* nothing to do: the report is best effort */
	}
	if (fd != 2)
		close(fd);
}

/*
 * Runs at exit() after the program's atexit handlers, while other threads
 * may still allocate: it takes nothing down, it only adds the exiting
 * thread's counts and reports.
 */
__attribute__((destructor)) static void sampler_fini(void)
{
	struct sampler_tls *t = &sbs_tls;
	int err = errno;

	t->busy++;
	flush(t);
	sbs_pywrap_exit();
	scalene_bpf_probe_exit(&sbs_state);
	report();
	t->busy--;
	errno = err;
}
