/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside libscalene-bpf-sampler.so: the per-thread state, the globals the hooks
 * read, and the slow paths they call.  Nothing here is exported.
 *
 * Rules for everything reachable from a hook: no locks, no allocation, no
 * stdio, errno and the floating-point flags left as found, and every libc
 * call checked for whether it can allocate (pthread_setspecific can: it runs
 * with `busy` set, so the allocation passes straight through).
 */
#ifndef SCALENE_BPF_SAMPLER_INT_H
#define SCALENE_BPF_SAMPLER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "probes.h"
#include "sampler.h"
#include "ptrtab.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define SBS_EXPORT __attribute__((visibility("default")))
#define SBS_COLD __attribute__((noinline, SCALENE_BPF_NOCLONE cold))

/*
 * Per-thread state, initial-exec TLS: the hooks reach it with one %fs-relative
 * access and no __tls_get_addr, which could allocate (and so re-enter the
 * hooks) in a thread of a process that dlopen()ed the library.  Zeroed in a
 * new thread: until <= 0 and gen == 0 send its first allocation to the slow
 * path, which seeds it.
 */
struct sampler_tls {
	int64_t until;	    /* bytes left to the next malloc sample point */
	int64_t copy_until; /* bytes left to the next copy sample point */
	uint32_t busy;	    /* in a Python wrapper or in this library: hooks pass through */
	uint32_t gen;	    /* sbs_gen at the last seeding; another value: seed again */
	int64_t base;	    /* `until` when this thread's bytes were last added to the totals */
	int64_t copy_base;
	uint64_t py_bytes;  /* Python-domain bytes not yet added to the totals */
	uint64_t rng;	    /* xorshift64* state */
	uint32_t exit_hook; /* the thread-exit flush is registered */
	uint32_t slow;	    /* in a slow path of this library (a subset of busy) */
};

extern __thread struct sampler_tls sbs_tls __attribute__((tls_model("initial-exec")));

extern struct scalene_bpf_sampler_state scalene_bpf_sampler_state;
#define sbs_state scalene_bpf_sampler_state

extern struct ptrtab sbs_tab;

/* Work the allocation hooks still have to do once, tested on every call. */
enum sbs_pending {
	SBS_PENDING_RESOLVE = 1 << 0, /* find the next allocator (hooks.c) */
	SBS_PENDING_PYCHECK = 1 << 1, /* check the Python wrap after init (pywrap.c) */
	SBS_PENDING_SEEN = 1 << 2,    /* say in the state block that a hook was called */
};
extern uint32_t sbs_pending;

/* Bumped by the constructor and by scalene_bpf_sampler_attach() (new
 * configuration): threads seed themselves again. */
extern uint32_t sbs_gen;

/*
 * Set for good when sampling must stop: after the restore of an attach, when
 * a wrapper of ours is left covered, in a fork child of an attached process
 * (attach.c).  Only the slow paths read it: a thread that reaches one parks
 * its countdowns at INT64_MAX and fires nothing, so a wrapper still in a
 * chain costs what it did, no more.
 */
extern uint32_t sbs_off;

/* Fires the init probe (sampler.h) again: where the state block is. */
void sbs_announce(void) SBS_COLD;

/* sampler.c: sampling and probes, called by the hooks. */
void sbs_sample_alloc(struct sampler_tls *t, void *p, size_t size, uint32_t flags) SBS_COLD;
void sbs_sample_copy(struct sampler_tls *t, size_t size) SBS_COLD;
/* The calling thread starts over from a fresh gap with the current mean. */
void sbs_reseed(void) SBS_COLD;
/* Reports and forgets p if it is a sampled block: returns 1 and its entry in
 * *meta, or 0 when p is not tracked.  Call before releasing p. */
int sbs_untrack(void *p, uint64_t *meta) SBS_COLD;
/* The same for a free, which needs no entry back: no out-parameter keeps the
 * free paths free of a stack frame, so they can tail-call the real free. */
void sbs_untrack_free(void *p) SBS_COLD;
/* A realloc reported p freed (sbs_untrack) and then failed: track p again. */
void sbs_retrack(void *p, uint64_t meta) SBS_COLD;

/* The counting on every allocation: one subtraction and a test. */
static inline void sbs_count_alloc(struct sampler_tls *t, void *p, size_t size, uint32_t flags)
{
	t->until -= (int64_t)size;
	if (unlikely(t->until <= 0))
		sbs_sample_alloc(t, p, size, flags);
}

/* The free side: one load while nothing sampled is live, a hash and one more
 * load otherwise. */
static inline int sbs_free_check(void *p, uint64_t *meta)
{
	if (p && unlikely(ptrtab_may_contain(&sbs_tab, p)))
		return sbs_untrack(p, meta);
	return 0;
}

/* hooks.c */
void sbs_hooks_init(void);
void sbs_resolve_next(void);

/* pywrap.c */
enum sbs_pywrap_mode {
	SBS_PYWRAP_OFF = 0,
	SBS_PYWRAP_CTOR = 1 << 0,
	SBS_PYWRAP_DEFER = 1 << 1,
	SBS_PYWRAP_BOTH = SBS_PYWRAP_CTOR | SBS_PYWRAP_DEFER,
};
void sbs_pywrap_init(int mode);
void sbs_pywrap_check(struct sampler_tls *t) SBS_COLD;
void sbs_pywrap_exit(void);
void sbs_pywrap_after_fork(void);
/* For scalene_bpf_sampler_attach(), GIL held: whether it may wrap (0,
 * -ENOSYS, -EALREADY); the wrap; the restore, which returns SBS_AT_RESTORED
 * or SBS_AT_COVERED. */
int sbs_pywrap_attachable(void);
void sbs_pywrap_attach(void);
uint32_t sbs_pywrap_restore(void);

/* attach.c */
void sbs_attach_after_fork(void);

/* Runs the pending work; called by the allocation hooks when sbs_pending != 0. */
void sbs_run_pending(void) SBS_COLD;

static inline void sbs_state_or(__u32 *field, __u32 bits)
{
	__atomic_fetch_or(field, bits, __ATOMIC_RELAXED);
}

static inline void sbs_state_add(__u64 *field, __u64 v)
{
	__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

#endif /* SCALENE_BPF_SAMPLER_INT_H */
