// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unwind tables kept for every process followed (utables.h).  A file is
 * known by its device and inode: the same libc in every process is compiled
 * and placed once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/elfsym.h"
#include "base/hmap.h"
#include "base/log.h"
#include "symbolize/cfitable.h"
#include "symbolize/usyms.h"
#include "symbolize/utables.h"

struct file_key {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
};

struct file_rows {
	__u32 lo, n; /* n 0: no rows */
	__u64 page_base;
	__u32 page_lo, page_n;
};

struct utables {
	struct unwind_sink sink;
	/* The vDSO's rows (the kernel's, the same in every process: compiled
	 * from this process's own); vdso_tried once. */
	struct file_rows vdso;
	uint64_t vdso_vaddr; /* its first link-time address */
	bool vdso_tried;
	struct hmap *files; /* struct file_key -> struct file_rows */
	__u32 used;	    /* rows placed */
	__u32 pages_used;   /* page index entries placed */
	struct utables_stats st;
	/* The process being built. */
	struct unwind_proc up;
	int err;
};

struct utables *utables__new(const struct unwind_sink *sink)
{
	struct utables *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->sink = *sink;
	t->files = hmap__new(sizeof(struct file_key));
	if (!t->files) {
		free(t);
		return NULL;
	}
	return t;
}

void utables__free(struct utables *t)
{
	size_t it = 0;
	const void *k;
	void *v;

	if (!t)
		return;
	while (hmap__next(t->files, &it, &k, &v))
		free(v);
	hmap__free(t->files);
	free(t);
}

/*
 * Places a file's rows (sorted, at least one) and their page index: for each
 * page from the first row's, the last row at or before its start and the
 * last at or before the next page's.  0, -ENOSPC (no room), -ENOMEM or the
 * sink's error.
 */
static int place(struct utables *t, struct file_rows *fr, const struct unwind_row *rows, size_t n)
{
	__u64 base = rows[0].pc & ~((1ULL << UNWIND_PAGE_SHIFT) - 1);
	__u64 npages = ((rows[n - 1].pc - base) >> UNWIND_PAGE_SHIFT) + 1, k;
	struct unwind_page *pages;
	size_t r = 0;
	int err;

	if (n > t->sink.max_rows - t->used || npages > t->sink.max_pages - t->pages_used)
		return -ENOSPC;
	pages = malloc(npages * sizeof(*pages));
	if (!pages)
		return -ENOMEM;
	for (k = 0; k < npages; k++) {
		__u64 next = base + ((k + 1) << UNWIND_PAGE_SHIFT);

		pages[k].first = (__u32)r;
		while (r + 1 < n && rows[r + 1].pc <= next)
			r++;
		pages[k].last = (__u32)r;
	}
	err = t->sink.put_rows(t->sink.ctx, t->used, rows, (__u32)n);
	if (!err)
		err = t->sink.put_pages(t->sink.ctx, t->pages_used, pages, (__u32)npages);
	free(pages);
	if (err)
		return err;
	fr->lo = t->used;
	fr->n = (__u32)n;
	fr->page_base = base;
	fr->page_lo = t->pages_used;
	fr->page_n = (__u32)npages;
	t->used += (__u32)n;
	t->pages_used += (__u32)npages;
	return 0;
}

/* The file's rows, compiled and placed the first time it is met. */
static const struct file_rows *rows_of(struct utables *t, const struct usyms_text *x)
{
	struct file_key k = { .inode = x->inode,
			      .dev_major = x->dev_major,
			      .dev_minor = x->dev_minor };
	struct cfitable_stats cs = { 0 };
	struct file_rows *fr = hmap__get(t->files, &k);
	struct unwind_row *rows;
	uint64_t t0;
	size_t n;
	int err;

	if (fr)
		return fr;
	fr = calloc(1, sizeof(*fr));
	if (!fr || hmap__put(t->files, &k, fr)) {
		free(fr);
		return NULL;
	}
	t0 = mono_ns();
	err = cfitable__build(x->elf, &rows, &n, &cs);
	t->st.build_ns += mono_ns() - t0;
	if (err) {
		pr_debug("unwind tables: %s: none (%s)\n", x->module, strerror(-err));
		t->st.files_no_table++;
		return fr;
	}
	t->st.fdes += cs.fdes;
	t->st.unsupported += cs.unsupported;
	err = place(t, fr, rows, n);
	if (err == -ENOSPC) {
		pr_debug("unwind tables: %s: %zu rows, the arrays are full\n", x->module, n);
		t->st.files_full++;
	} else if (err) {
		pr_debug("unwind tables: %s: cannot place its rows: %s\n", x->module,
			 strerror(-err));
	} else {
		t->st.files++;
		t->st.rows += n;
		pr_debug(
			"unwind tables: %s: %zu functions, %zu rows (%zu not followed), %u pages\n",
			x->module, cs.fdes, n, cs.unsupported, fr->page_n);
	}
	free(rows);
	return fr;
}

/* A mapping [start, end) of the file whose rows are fr, loaded at bias;
 * counted, not added, past UNWIND_MAPS. */
static void add_map(struct utables *t, uint64_t start, uint64_t end, uint64_t bias,
		    const struct file_rows *fr)
{
	struct unwind_map *m;

	if (t->up.n >= UNWIND_MAPS) {
		t->st.maps_dropped++;
		return;
	}
	m = &t->up.m[t->up.n++];
	m->start = start;
	m->end = end;
	m->bias = bias;
	m->row_lo = fr->lo;
	m->row_n = fr->n;
	m->page_base = fr->page_base;
	m->page_lo = fr->page_lo;
	m->page_n = fr->page_n;
}

static int add_file(void *arg, const struct usyms_text *x)
{
	struct utables *t = arg;
	const struct file_rows *fr = rows_of(t, x);
	uint64_t ranges[8][2];
	int i, n;

	if (!fr)
		return -ENOMEM;
	n = elf_file__exec_ranges(x->elf, ranges, 8);
	for (i = 0; i < n; i++)
		add_map(t, ranges[i][0] + x->bias, ranges[i][1] + x->bias, x->bias, fr);
	return 0;
}

/* The vDSO's rows, from this process's image written to a memory file
 * (elf_file opens files); false when there are none. */
static bool vdso_rows(struct utables *t)
{
	const void *image = (const void *)getauxval(AT_SYSINFO_EHDR);
	struct unwind_row *rows = NULL;
	struct elf_file *e = NULL;
	uint64_t start, end, off;
	struct usyms *self;
	char path[64];
	size_t n = 0;
	int fd = -1;

	if (t->vdso_tried)
		return t->vdso.n > 0;
	t->vdso_tried = true;
	self = usyms__new(0, NULL);
	if (!image || !self || usyms__mapping(self, "[vdso]", &start, &end) ||
	    (uintptr_t)image != start)
		goto out;
	fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0 || write(fd, image, end - start) != (ssize_t)(end - start))
		goto out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	e = elf_file__open(path);
	if (!e || elf_file__first_load(e, &t->vdso_vaddr, &off) ||
	    cfitable__build(e, &rows, &n, NULL))
		goto out;
	if (place(t, &t->vdso, rows, n))
		memset(&t->vdso, 0, sizeof(t->vdso));
out:
	free(rows);
	elf_file__free(e);
	if (fd >= 0)
		close(fd);
	usyms__free(self);
	pr_debug("unwind tables: the vDSO: %u rows\n", t->vdso.n);
	return t->vdso.n > 0;
}

/* The process's vDSO, as a mapping with the vDSO's rows. */
static void add_vdso(struct utables *t, struct usyms *u)
{
	uint64_t start, end;

	if (!usyms__mapping(u, "[vdso]", &start, &end) && vdso_rows(t))
		add_map(t, start, end, start - t->vdso_vaddr, &t->vdso);
}

static int by_start(const void *a, const void *b)
{
	const struct unwind_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int utables__proc(struct utables *t, int pid, struct usyms *u, uint64_t *given)
{
	uint64_t sum;
	int err;

	memset(&t->up, 0, sizeof(t->up));
	err = usyms__each_text(u, add_file, t);
	if (err)
		return err;
	add_vdso(t, u);
	qsort(t->up.m, t->up.n, sizeof(t->up.m[0]), by_start);
	/* The same mappings as BPF has: nothing to give. */
	sum = hash_bytes(&t->up, sizeof(t->up));
	if (*given == sum)
		return 0;
	err = t->sink.put_proc(t->sink.ctx, pid, &t->up);
	if (!err)
		*given = sum;
	return err;
}

void utables__forget(struct utables *t, int pid)
{
	if (t->sink.del_proc)
		t->sink.del_proc(t->sink.ctx, pid);
}

void utables__stats(const struct utables *t, struct utables_stats *out)
{
	*out = t->st;
}
