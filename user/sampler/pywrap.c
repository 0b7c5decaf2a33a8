// SPDX-License-Identifier: BSD-2-Clause
/*
 * Wraps Python's MEM and OBJ allocator domains, so that allocations of Python
 * objects are counted, flagged Python, and seen at all: pymalloc serves
 * blocks up to 512 bytes from its own arenas without calling malloc.
 *
 * CPython exports PyMem_GetAllocator/PyMem_SetAllocator from libpython and,
 * when linked statically (Debian's /usr/bin/python3.11), from the executable;
 * dlsym(RTLD_DEFAULT) finds them in the constructor either way.  Two chances
 * to install, both on by default (SCALENE_BPF_SAMPLER_PYWRAP=both):
 *
 *   ctor	wrap in the constructor, before Py_Initialize.  Survives
 *		tracemalloc.start()/stop(), which restore what they found, but
 *		PYTHONMALLOC and -X dev make pre-initialisation replace the
 *		domains, dropping it silently (measured on 3.9-3.13).
 *   defer	once, on the first libc allocation made after Py_IsInitialized()
 *		by a thread holding the GIL: any domain whose top is not one of
 *		our wrappers is wrapped again, with a second set of wrappers (the
 *		first set keeps the allocator it wrapped, which may still be
 *		below).  Wrapping a live domain is allowed: CPython documents
 *		that hooks may be installed at any time.  The check never calls
 *		an allocator, only PyMem_Get/SetAllocator, since the malloc it
 *		runs in may come from inside pymalloc.
 *
 * Loaded into a running interpreter instead (Py_IsInitialized() true in the
 * constructor), neither happens: scalene_bpf_sampler_attach() (attach.c)
 * wraps both domains with the second set, holding the GIL, and its restore
 * puts back what it found where our wrapper is still on top.
 *
 * Wrappers may end up nested (ours over tracemalloc over ours): the outermost
 * one counts and holds `busy`, inner ones and the libc hooks pass through.
 * A wrapper runs its own code only with `busy` clear, so it sets and clears
 * it with plain stores.
 * A wrapper ignores its ctx and calls the allocator it saved; the ctx it
 * installs is that allocator's, so a reader that pairs our function with the
 * old ctx (the domain is two words, not written atomically) still works.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include "sampler_int.h"

/* PyMemAllocatorEx and PyMemAllocatorDomain, unchanged since 3.5. */
struct pyalloc {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
};

enum {
	PYMEM_DOMAIN_MEM = 1,
	PYMEM_DOMAIN_OBJ = 2
};

#define N_SETS 2    /* 0: constructor, 1: after init */
#define N_DOMAINS 2 /* 0: MEM, 1: OBJ */

static const int domain_id[N_DOMAINS] = { PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ };

static struct {
	void (*get_allocator)(int domain, struct pyalloc *a);
	void (*set_allocator)(int domain, struct pyalloc *a);
	int (*is_initialized)(void);
	void *(*tstate_unchecked)(void);
	void *(*gilstate_this_thread)(void);
} py;

/* What each wrapper calls: written before the wrapper is installed, never after. */
static struct pyalloc wrapped[N_SETS][N_DOMAINS];
static uint32_t check_claim;

static inline void *pyw_malloc(const struct pyalloc *o, size_t size)
{
	struct sampler_tls *t = &sbs_tls;
	void *p;

	if (t->busy)
		return o->malloc(o->ctx, size);
	t->busy = 1;
	p = o->malloc(o->ctx, size);
	t->busy = 0;
	if (likely(p)) {
		t->py_bytes += size;
		sbs_count_alloc(t, p, size, SBS_F_PYTHON);
	}
	return p;
}

static inline void *pyw_calloc(const struct pyalloc *o, size_t n, size_t size)
{
	struct sampler_tls *t = &sbs_tls;
	size_t bytes;
	void *p;

	if (t->busy)
		return o->calloc(o->ctx, n, size);
	t->busy = 1;
	p = o->calloc(o->ctx, n, size);
	t->busy = 0;
	if (likely(p) && !__builtin_mul_overflow(n, size, &bytes)) {
		t->py_bytes += bytes;
		sbs_count_alloc(t, p, bytes, SBS_F_PYTHON);
	}
	return p;
}

static inline void *pyw_realloc(const struct pyalloc *o, void *old, size_t size)
{
	struct sampler_tls *t = &sbs_tls;
	uint64_t meta;
	int tracked;
	void *p;

	if (t->busy)
		return o->realloc(o->ctx, old, size);
	tracked = sbs_free_check(old, &meta);
	t->busy = 1;
	p = o->realloc(o->ctx, old, size);
	t->busy = 0;
	if (unlikely(!p)) {
		/* Python's realloc never frees on failure, size 0 included. */
		if (tracked)
			sbs_retrack(old, meta);
		return p;
	}
	t->py_bytes += size;
	sbs_count_alloc(t, p, size, SBS_F_PYTHON);
	return p;
}

/*
 * No `busy` here, so that the common case is a test and a tail call: a libc
 * free below (pymalloc passing on a large block) or a nested wrapper of ours
 * looks p up again and finds it gone.  Nothing of ours frees inside a slow
 * path, so there is nothing to pass through.
 */
static inline void pyw_free(const struct pyalloc *o, void *p)
{
	if (p && unlikely(ptrtab_may_contain(&sbs_tab, p)))
		sbs_untrack_free(p);
	o->free(o->ctx, p);
}

/* One set of four wrappers per (set, domain): each reaches its saved
 * allocator through a constant address, none through ctx. */
#define PYWRAP(S, D)                                                        \
	static void *pyw_malloc_##S##_##D(void *ctx, size_t size)           \
	{                                                                   \
		return pyw_malloc(&wrapped[S][D], size);                    \
	}                                                                   \
	static void *pyw_calloc_##S##_##D(void *ctx, size_t n, size_t size) \
	{                                                                   \
		return pyw_calloc(&wrapped[S][D], n, size);                 \
	}                                                                   \
	static void *pyw_realloc_##S##_##D(void *ctx, void *p, size_t size) \
	{                                                                   \
		return pyw_realloc(&wrapped[S][D], p, size);                \
	}                                                                   \
	static void pyw_free_##S##_##D(void *ctx, void *p)                  \
	{                                                                   \
		pyw_free(&wrapped[S][D], p);                                \
	}

PYWRAP(0, 0)
PYWRAP(0, 1)
PYWRAP(1, 0)
PYWRAP(1, 1)

#define PYWRAP_FNS(S, D)                                                                 \
	{                                                                                \
		NULL, pyw_malloc_##S##_##D, pyw_calloc_##S##_##D, pyw_realloc_##S##_##D, \
			pyw_free_##S##_##D                                               \
	}

static const struct pyalloc ours[N_SETS][N_DOMAINS] = {
	{ PYWRAP_FNS(0, 0), PYWRAP_FNS(0, 1) },
	{ PYWRAP_FNS(1, 0), PYWRAP_FNS(1, 1) },
};

static int is_ours(const struct pyalloc *a, int d)
{
	for (int s = 0; s < N_SETS; s++)
		if (a->malloc == ours[s][d].malloc)
			return 1;
	return 0;
}

static void wrap_domain(int set, int d)
{
	struct pyalloc a;

	py.get_allocator(domain_id[d], &wrapped[set][d]);
	a = ours[set][d];
	a.ctx = wrapped[set][d].ctx;
	py.set_allocator(domain_id[d], &a);
}

#define LOOKUP(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))

void sbs_pywrap_init(int mode)
{
	int found = LOOKUP(get_allocator, "PyMem_GetAllocator") &&
		    LOOKUP(set_allocator, "PyMem_SetAllocator");

	/*
	 * dlopen()ed into a running interpreter (attach, sampler.h).  Not now:
	 * ctypes may have released the GIL around dlopen, and the check after
	 * init would never run, since it runs from libc hooks and nothing is
	 * bound to ours.  scalene_bpf_sampler_attach() wraps, holding the GIL.
	 */
	if (LOOKUP(is_initialized, "Py_IsInitialized") && py.is_initialized()) {
		sbs_state_or(&sbs_state.python, SBS_PY_LATE | (found ? SBS_PY_FOUND : 0));
		return;
	}
	if (!found)
		return;
	sbs_state_or(&sbs_state.python, SBS_PY_FOUND);
	if (mode & SBS_PYWRAP_CTOR) {
		wrap_domain(0, 0);
		wrap_domain(0, 1);
		sbs_state_or(&sbs_state.python, SBS_PY_CTOR);
	}
	if (!(mode & SBS_PYWRAP_DEFER))
		return;
	LOOKUP(gilstate_this_thread, "PyGILState_GetThisThreadState");
	/* 3.13 renamed it and stopped exporting the old name. */
	if (!LOOKUP(tstate_unchecked, "PyThreadState_GetUnchecked"))
		LOOKUP(tstate_unchecked, "_PyThreadState_UncheckedGet");
	if (!py.is_initialized || !py.gilstate_this_thread || !py.tstate_unchecked) {
		sbs_state_or(&sbs_state.python, SBS_PY_NO_GIL_CHECK);
		return;
	}
	__atomic_fetch_or(&sbs_pending, SBS_PENDING_PYCHECK, __ATOMIC_RELEASE);
}

/*
 * The one-shot check after initialisation.  Runs from a libc allocation hook
 * with `busy` clear, so only in code that is not ours; the calls below do not
 * allocate.
 */
void sbs_pywrap_check(struct sampler_tls *t)
{
	uint32_t expected = 0, bits = SBS_PY_CHECKED;
	struct pyalloc top;
	void *ts;

	if (!py.is_initialized())
		return;
	ts = py.tstate_unchecked();
	if (!ts || ts != py.gilstate_this_thread())
		return;
	if (!__atomic_compare_exchange_n(&check_claim, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	t->busy++;
	for (int d = 0; d < N_DOMAINS; d++) {
		py.get_allocator(domain_id[d], &top);
		if (top.malloc == ours[0][d].malloc)
			continue;
		if (sbs_state.python & SBS_PY_CTOR)
			bits |= SBS_PY_CTOR_LOST;
		if (!is_ours(&top, d)) {
			wrap_domain(1, d);
			bits |= SBS_PY_REWRAPPED;
		}
	}
	sbs_state_or(&sbs_state.python, bits);
	__atomic_fetch_and(&sbs_pending, ~(uint32_t)SBS_PENDING_PYCHECK, __ATOMIC_RELEASE);
	t->busy--;
}

void sbs_pywrap_exit(void)
{
	struct pyalloc top;

	if (!(sbs_state.python & (SBS_PY_CTOR | SBS_PY_CHECKED)))
		return;
	py.get_allocator(PYMEM_DOMAIN_OBJ, &top);
	sbs_state_or(&sbs_state.python, is_ours(&top, 1) ? SBS_PY_EXIT_OURS : SBS_PY_EXIT_OTHER);
}

/* A fork taken while another thread held the claim must not leave the check
 * blocked in the child. */
void sbs_pywrap_after_fork(void)
{
	if (__atomic_load_n(&sbs_pending, __ATOMIC_RELAXED) & SBS_PENDING_PYCHECK)
		__atomic_store_n(&check_claim, 0, __ATOMIC_RELAXED);
}

/*
 * Attach (attach.c) uses the second set of wrappers, which nothing else
 * installs once the check after init cannot run: not in the constructor's
 * chain, not pending, not done.
 */
int sbs_pywrap_attachable(void)
{
	struct pyalloc top;

	if (!py.get_allocator || !py.set_allocator)
		return -ENOSYS;
	if ((sbs_state.python & (SBS_PY_CTOR | SBS_PY_CHECKED)) ||
	    (__atomic_load_n(&sbs_pending, __ATOMIC_ACQUIRE) & SBS_PENDING_PYCHECK))
		return -EALREADY;
	for (int d = 0; d < N_DOMAINS; d++) {
		py.get_allocator(domain_id[d], &top);
		if (is_ours(&top, d))
			return -EALREADY;
	}
	return 0;
}

void sbs_pywrap_attach(void)
{
	for (int d = 0; d < N_DOMAINS; d++)
		wrap_domain(1, d);
}

/*
 * With the GIL held no wrapper call is in flight (in a build with a GIL), and
 * `wrapped` is not written again (attach runs once): a wrapper taken out of
 * its chain can still finish a call it had begun.  A domain whose top is not
 * ours keeps our wrapper below that hook, which saved it and may call it or
 * put it back (tracemalloc.stop()): it must stay, passing calls through.
 */
uint32_t sbs_pywrap_restore(void)
{
	uint32_t bits = SBS_AT_RESTORED;
	struct pyalloc top;

	for (int d = 0; d < N_DOMAINS; d++) {
		py.get_allocator(domain_id[d], &top);
		if (top.malloc == ours[1][d].malloc)
			py.set_allocator(domain_id[d], &wrapped[1][d]);
		else
			bits = SBS_AT_COVERED;
	}
	return bits;
}
