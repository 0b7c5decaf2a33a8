// SPDX-License-Identifier: BSD-2-Clause
/*
 * A stand-in for jemalloc or tcmalloc in the sampler's tests: a malloc family
 * with unversioned symbols and blocks of its own (a header before each), whose
 * free aborts on a block it did not hand out, as a real allocator would crash.
 * Preloaded after the sampler it must receive every call; preloaded before
 * it, it shadows the sampler's hooks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAGIC 0x66616b65616c6c63ull /* "fakeallc" */

extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);

struct hdr {
	uint64_t magic;
	void *raw;
	size_t size;
	uint64_t pad;
};

EXPORT uint64_t fake_alloc_calls; /* blocks handed out */

static void *get(size_t align, size_t size)
{
	size_t lead = align < sizeof(struct hdr) ? sizeof(struct hdr) : align;
	char *raw = __libc_memalign(align < 16 ? 16 : align, size + lead);
	struct hdr *h;

	if (!raw)
		return NULL;
	h = (struct hdr *)(raw + lead) - 1;
	h->magic = MAGIC;
	h->raw = raw;
	h->size = size;
	__atomic_fetch_add(&fake_alloc_calls, 1, __ATOMIC_RELAXED);
	return raw + lead;
}

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)p - 1;

	if (h->magic != MAGIC)
		abort(); /* not ours: the mix-up a real allocator would crash on */
	return h;
}

EXPORT void *malloc(size_t size)
{
	return get(16, size);
}

EXPORT void free(void *p)
{
	struct hdr *h;

	if (!p)
		return;
	h = hdr_of(p);
	h->magic = 0;
	__libc_free(h->raw);
}

EXPORT void *calloc(size_t n, size_t size)
{
	size_t bytes;
	void *p;

	if (__builtin_mul_overflow(n, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	p = get(16, bytes);
	if (p)
		memset(p, 0, bytes);
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	void *p;

	if (!old)
		return get(16, size);
	p = get(16, size);
	if (!p)
		return NULL;
	memcpy(p, old, hdr_of(old)->size < size ? hdr_of(old)->size : size);
	free(old);
	return p;
}

EXPORT void *memalign(size_t align, size_t size)
{
	return get(align, size);
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return get(align, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (!align || align % sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = get(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t size)
{
	return get((size_t)sysconf(_SC_PAGESIZE), size);
}

EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return get(page, (size + page - 1) & ~(page - 1));
}

EXPORT size_t malloc_usable_size(void *p)
{
	return p ? hdr_of(p)->size : 0;
}
