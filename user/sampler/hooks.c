// SPDX-License-Identifier: BSD-2-Clause
/*
 * The libc interposers: the malloc family and the copy functions.  Each one
 * forwards to the next definition and counts what it did; the counting is a
 * subtraction and a test (sampler_int.h), everything else is out of line.
 *
 * Forwarding.  Until the constructor runs (other libraries' constructors run
 * first and allocate), the hooks call glibc's exported __libc_* entry points,
 * which need no lookup, and copy with `rep movsb`.  The first allocation
 * hook to run, or the constructor, then asks dlsym(RTLD_NEXT) what comes
 * after this library: if it is not glibc's malloc (jemalloc or tcmalloc
 * later in the search order, or glibc's libc_malloc_debug.so), the whole
 * family is forwarded there, since their blocks must not meet glibc's free.
 * posix_memalign, aligned_alloc and the copy functions, which have no
 * __libc_* name, are always taken from RTLD_NEXT.  While dlsym runs, `busy`
 * is held and the hooks pass straight through to what they had, so nothing
 * recurses.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "sampler_int.h"

/* glibc's own entry points: exported, and the same functions as its malloc. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __chk_fail(void) __attribute__((noreturn));

static int fallback_posix_memalign(void **out, size_t align, size_t size);
static void *fallback_aligned_alloc(size_t align, size_t size);
static void *fallback_memcpy(void *dst, const void *src, size_t n);
static void *fallback_memmove(void *dst, const void *src, size_t n);
static void *fallback_memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen);
static void *fallback_memmove_chk(void *dst, const void *src, size_t n, size_t dstlen);

/* Read on every call, written once at resolution: a cache line of its own. */
static struct next_fns {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memcpy)(void *, const void *, size_t);
	void *(*memmove)(void *, const void *, size_t);
	void *(*memcpy_chk)(void *, const void *, size_t, size_t);
	void *(*memmove_chk)(void *, const void *, size_t, size_t);
} next __attribute__((aligned(64))) = {
	.malloc = __libc_malloc,
	.free = __libc_free,
	.calloc = __libc_calloc,
	.realloc = __libc_realloc,
	.memalign = __libc_memalign,
	.valloc = __libc_valloc,
	.pvalloc = __libc_pvalloc,
	.posix_memalign = fallback_posix_memalign,
	.aligned_alloc = fallback_aligned_alloc,
	.memcpy = fallback_memcpy,
	.memmove = fallback_memmove,
	.memcpy_chk = fallback_memcpy_chk,
	.memmove_chk = fallback_memmove_chk,
};

uint32_t sbs_pending = SBS_PENDING_RESOLVE | SBS_PENDING_SEEN;
static uint32_t resolve_state; /* 0: not yet, 1: under way, 2: done */

/* glibc's rules, for the calls made before posix_memalign is resolved. */
static int fallback_posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align % sizeof(void *) || !align || (align & (align - 1)))
		return EINVAL;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

static void *fallback_aligned_alloc(size_t align, size_t size)
{
	return __libc_memalign(align, size);
}

/* Byte copies the compiler cannot turn back into a memcpy call. */
static void *fallback_memcpy(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	void *d = dst;

	__asm__ volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
#else
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = src;

	while (n--)
		*d++ = *s++;
#endif
	return dst;
}

static void *fallback_memmove(void *dst, const void *src, size_t n)
{
	/* Forward is safe unless dst starts inside [src, src + n). */
	if ((uintptr_t)dst - (uintptr_t)src >= n)
		return fallback_memcpy(dst, src, n);
#if defined(__x86_64__)
	void *d = (unsigned char *)dst + n - 1;
	const void *s = (const unsigned char *)src + n - 1;

	__asm__ volatile("std; rep movsb; cld" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
#else
	volatile unsigned char *d = (unsigned char *)dst + n;
	const volatile unsigned char *s = (const unsigned char *)src + n;

	while (n--)
		*--d = *--s;
#endif
	return dst;
}

static void *fallback_memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
	if (dstlen < n)
		__chk_fail();
	return fallback_memcpy(dst, src, n);
}

static void *fallback_memmove_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
	if (dstlen < n)
		__chk_fail();
	return fallback_memmove(dst, src, n);
}

/*
 * Symbol versions, for finding what the program binds to.  An allocator may
 * define only versioned, non-default symbols (glibc's own libc_malloc_debug.so
 * has malloc@GLIBC_2.2.5 and no malloc@@): the program's versioned references
 * bind to them, dlsym() skips them, dlvsym() finds them.  dlvsym() in turn
 * skips unversioned definitions (jemalloc's, ours), so both are asked.
 */
#if defined(__x86_64__)
#define V_BASE "GLIBC_2.2.5"
#define V_ALIGNED_ALLOC "GLIBC_2.16"
#elif defined(__aarch64__)
#define V_BASE "GLIBC_2.17"
#define V_ALIGNED_ALLOC "GLIBC_2.17"
#else
#define V_BASE NULL
#define V_ALIGNED_ALLOC NULL
#endif

/* GCC copies the target's attributes onto the alias (clang has no copy). */
#if defined(__clang__)
#define SELF_ALIAS(f) __attribute__((alias(#f)))
#else
#define SELF_ALIAS(f) __attribute__((alias(#f), copy(f)))
#endif
static void *self_malloc(size_t size) SELF_ALIAS(malloc);
static void *self_memcpy(void *dst, const void *src, size_t n) SELF_ALIAS(memcpy);

/* 0: unversioned lookups (dlsym), 1: versioned (dlvsym). */
static void *lookup(void *handle, const char *name, const char *version, int versioned)
{
	if (!versioned)
		return dlsym(handle, name);
	return version ? dlvsym(handle, name, version) : NULL;
}

static void take_next(void *slot, const char *name, const char *version, int versioned)
{
	void *sym = lookup(RTLD_NEXT, name, version, versioned);

	/* Keep the fallback rather than a NULL. */
	if (sym)
		*(void **)slot = sym;
}

/*
 * Whether the object defining sym comes before this library in the search
 * order: then the program's calls go there, not here.  A non-PIE executable
 * that takes malloc's address has a canonical PLT stub for it, an undefined
 * symbol with a value, which dlsym returns: that is not a definition.
 */
static int defined_before_us(void *sym)
{
	struct link_map *ours = NULL, *theirs = NULL;
	const ElfW(Sym) *entry = NULL;
	Dl_info info;

	if (!sym || !dladdr1((void *)self_malloc, &info, (void **)&ours, RTLD_DL_LINKMAP) ||
	    !dladdr1(sym, &info, (void **)&theirs, RTLD_DL_LINKMAP) || !ours || !theirs)
		return 0;
	if (dladdr1(sym, &info, (void **)&entry, RTLD_DL_SYMENT) && entry &&
	    entry->st_shndx == SHN_UNDEF)
		return 0;
	for (struct link_map *m = ours->l_prev; m; m = m->l_prev)
		if (m == theirs)
			return 1;
	return 0;
}

static int shadowed(const char *name, const char *version, void *self)
{
	void *plain = dlsym(RTLD_DEFAULT, name);

	return (plain && plain != self && defined_before_us(plain)) ||
	       (version && defined_before_us(dlvsym(RTLD_DEFAULT, name, version)));
}

/* Called with `busy` held (the constructor, or sbs_run_pending). */
void sbs_resolve_next(void)
{
	uint32_t expected = 0;
	int versioned = -1;

	if (!__atomic_compare_exchange_n(&resolve_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	/* Which kind of lookup finds an allocator other than glibc's after us. */
	for (int v = 0; v < 2 && versioned < 0; v++) {
		void *m = lookup(RTLD_NEXT, "malloc", V_BASE, v);

		if (m && m != (void *)__libc_malloc)
			versioned = v;
	}
	if (versioned >= 0) {
		take_next(&next.malloc, "malloc", V_BASE, versioned);
		take_next(&next.free, "free", V_BASE, versioned);
		take_next(&next.calloc, "calloc", V_BASE, versioned);
		take_next(&next.realloc, "realloc", V_BASE, versioned);
		take_next(&next.memalign, "memalign", V_BASE, versioned);
		take_next(&next.valloc, "valloc", V_BASE, versioned);
		take_next(&next.pvalloc, "pvalloc", V_BASE, versioned);
		sbs_state_or(&sbs_state.hooks, SBS_H_FOREIGN_ALLOC);
	} else {
		versioned = 0;
	}
	take_next(&next.posix_memalign, "posix_memalign", V_BASE, versioned);
	take_next(&next.aligned_alloc, "aligned_alloc", V_ALIGNED_ALLOC, versioned);
	take_next(&next.memcpy, "memcpy", NULL, 0);
	take_next(&next.memmove, "memmove", NULL, 0);
	take_next(&next.memcpy_chk, "__memcpy_chk", NULL, 0);
	take_next(&next.memmove_chk, "__memmove_chk", NULL, 0);
	if (shadowed("malloc", V_BASE, (void *)self_malloc))
		sbs_state_or(&sbs_state.hooks, SBS_H_MALLOC_SHADOWED);
	if (shadowed("memcpy", NULL, (void *)self_memcpy))
		sbs_state_or(&sbs_state.hooks, SBS_H_MEMCPY_SHADOWED);
	__atomic_store_n(&resolve_state, 2, __ATOMIC_RELEASE);
	__atomic_fetch_and(&sbs_pending, ~(uint32_t)SBS_PENDING_RESOLVE, __ATOMIC_RELEASE);
}

void sbs_hooks_init(void)
{
	sbs_resolve_next();
}

void sbs_run_pending(void)
{
	struct sampler_tls *t = &sbs_tls;
	uint32_t pending = __atomic_load_n(&sbs_pending, __ATOMIC_ACQUIRE);
	int err;

	if (pending & SBS_PENDING_SEEN) {
		sbs_state_or(&sbs_state.hooks, SBS_H_MALLOC_SEEN);
		__atomic_fetch_and(&sbs_pending, ~(uint32_t)SBS_PENDING_SEEN, __ATOMIC_RELEASE);
	}
	if (t->busy)
		return;
	err = errno;
	t->busy++;
	if (pending & SBS_PENDING_RESOLVE)
		sbs_resolve_next();
	t->busy--;
	if (pending & SBS_PENDING_PYCHECK)
		sbs_pywrap_check(t);
	errno = err;
}

static inline void run_pending(void)
{
	if (unlikely(__atomic_load_n(&sbs_pending, __ATOMIC_RELAXED)))
		sbs_run_pending();
}

/* Counts a block from the libc family, unless a Python wrapper or this
 * library is the caller. */
static inline void count_native(void *p, size_t size)
{
	struct sampler_tls *t = &sbs_tls;

	if (likely(p) && likely(!t->busy))
		sbs_count_alloc(t, p, size, 0);
}

/* What the hooks that return the block do with it from the next library:
 * count it, hand it back. */
static inline void *counted(void *p, size_t size)
{
	count_native(p, size);
	return p;
}

SBS_EXPORT void *malloc(size_t size)
{
	run_pending();
	return counted(next.malloc(size), size);
}

SBS_EXPORT void free(void *p)
{
	/* busy first: a Python wrapper above has already looked p up. */
	if (p && !sbs_tls.busy && unlikely(ptrtab_may_contain(&sbs_tab, p)))
		sbs_untrack_free(p);
	next.free(p);
}

SBS_EXPORT void *calloc(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	run_pending();
	p = next.calloc(n, size);
	if (!__builtin_mul_overflow(n, size, &bytes))
		count_native(p, bytes);
	return p;
}

SBS_EXPORT void *realloc(void *old, size_t size)
{
	struct sampler_tls *t = &sbs_tls;
	uint64_t meta;
	int tracked;
	void *p;

	run_pending();
	if (unlikely(t->busy))
		return next.realloc(old, size);
	/* The free probe goes first: once realloc returns, another thread may
	 * get the old address and fire a malloc probe for it. */
	tracked = sbs_free_check(old, &meta);
	p = next.realloc(old, size);
	if (unlikely(!p)) {
		/* glibc's realloc(p, 0) frees p and returns NULL; with a size, a
		 * NULL means p is untouched. */
		if (tracked && size)
			sbs_retrack(old, meta);
		return p;
	}
	sbs_count_alloc(t, p, size, 0);
	return p;
}

/* glibc's is an overflow check in front of realloc; so is this one, in front
 * of the hook above, so that the block is counted once. */
SBS_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, bytes);
}

SBS_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int err;

	run_pending();
	err = next.posix_memalign(out, align, size);
	if (!err)
		count_native(*out, size);
	return err;
}

SBS_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	run_pending();
	return counted(next.aligned_alloc(align, size), size);
}

SBS_EXPORT void *memalign(size_t align, size_t size)
{
	run_pending();
	return counted(next.memalign(align, size), size);
}

SBS_EXPORT void *valloc(size_t size)
{
	run_pending();
	return counted(next.valloc(size), size);
}

SBS_EXPORT void *pvalloc(size_t size)
{
	run_pending();
	return counted(next.pvalloc(size), size);
}

/*
 * Copies: counted on every call, whoever the caller; the slow path does not
 * copy, so a copy made while sampling cannot recurse.  The sampled case is a
 * separate function so that the common one is a subtraction, a test and a
 * tail call, with nothing to save.
 */
static inline int copy_crossed(size_t n)
{
	struct sampler_tls *t = &sbs_tls;

	t->copy_until -= (int64_t)n;
	return unlikely(t->copy_until <= 0);
}

static SBS_COLD void *memcpy_sampled(void *dst, const void *src, size_t n)
{
	sbs_sample_copy(&sbs_tls, n);
	return next.memcpy(dst, src, n);
}

static SBS_COLD void *memmove_sampled(void *dst, const void *src, size_t n)
{
	sbs_sample_copy(&sbs_tls, n);
	return next.memmove(dst, src, n);
}

static SBS_COLD void *memcpy_chk_sampled(void *dst, const void *src, size_t n, size_t dstlen)
{
	sbs_sample_copy(&sbs_tls, n);
	return next.memcpy_chk(dst, src, n, dstlen);
}

static SBS_COLD void *memmove_chk_sampled(void *dst, const void *src, size_t n, size_t dstlen)
{
	sbs_sample_copy(&sbs_tls, n);
	return next.memmove_chk(dst, src, n, dstlen);
}

SBS_EXPORT void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	if (copy_crossed(n))
		return memcpy_sampled(dst, src, n);
	return next.memcpy(dst, src, n);
}

SBS_EXPORT void *memmove(void *dst, const void *src, size_t n)
{
	if (copy_crossed(n))
		return memmove_sampled(dst, src, n);
	return next.memmove(dst, src, n);
}

SBS_EXPORT void *__memcpy_chk(void *restrict dst, const void *restrict src, size_t n, size_t dstlen)
{
	if (copy_crossed(n))
		return memcpy_chk_sampled(dst, src, n, dstlen);
	return next.memcpy_chk(dst, src, n, dstlen);
}

SBS_EXPORT void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen)
{
	if (copy_crossed(n))
		return memmove_chk_sampled(dst, src, n, dstlen);
	return next.memmove_chk(dst, src, n, dstlen);
}
