/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The BPF native unwinder (bpf/unwind.h) compiled as host C and run on this
 * process's own stack, with the tables the loader would give BPF
 * (user/symbolize/utables.c over this process's files): its frames must be
 * those glibc's backtrace() finds with libgcc's unwinder, through libc's
 * qsort (code without frame pointers) and frames kept by rbp (alloca).
 */
#include <alloca.h>
#include <execinfo.h>
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#include "abi.h"

static struct unwind_row *rows;
static __u32 nrows;
static struct unwind_page *pages;
static __u32 npages;
static struct unwind_proc proc;
static unsigned long reads, failed_reads;

/* Reads that fail as bpf_probe_read_user() fails: on memory not mapped. */
static int self_read(void *dst, size_t size, uint64_t addr)
{
	struct iovec local = { dst, size }, remote = { (void *)(uintptr_t)addr, size };

	reads++;
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)size) {
		failed_reads++;
		memset(dst, 0, size);
		return -14;
	}
	return 0;
}

#define UNWIND_READ(dst, size, addr) self_read((dst), (size), (addr))
#define UNWIND_ROW(i) ((__u32)(i) < nrows ? &rows[(__u32)(i)] : NULL)
#define UNWIND_PAGE(i) ((__u32)(i) < npages ? &pages[(__u32)(i)] : NULL)
#include "unwind.h"

#include "base/elfsym.h"
#include "symbolize/cfitable.h"
#include "symbolize/unwind.h"
#include "symbolize/usyms.h"
#include "symbolize/utables.h"
#include "testlib.h"

static int put_rows(void *ctx, __u32 lo, const struct unwind_row *r, __u32 n)
{
	(void)ctx;
	if (lo + n > nrows) {
		struct unwind_row *v = realloc(rows, (size_t)(lo + n) * sizeof(*v));

		if (!v)
			return -12;
		rows = v;
		nrows = lo + n;
	}
	memcpy(rows + lo, r, (size_t)n * sizeof(*r));
	return 0;
}

static int put_pages(void *ctx, __u32 lo, const struct unwind_page *p, __u32 n)
{
	(void)ctx;
	if (lo + n > npages) {
		struct unwind_page *v = realloc(pages, (size_t)(lo + n) * sizeof(*v));

		if (!v)
			return -12;
		pages = v;
		npages = lo + n;
	}
	memcpy(pages + lo, p, (size_t)n * sizeof(*p));
	return 0;
}

/* The row of rows[0, n) that holds for pc (the last whose pc is <= pc), or
 * NULL: a plain search of all of a file's rows, for the page index. */
static const struct unwind_row *find_row(const struct unwind_row *r, size_t n, __u64 pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &r[lo - 1] : NULL;
}

static int put_proc(void *ctx, int pid, const struct unwind_proc *up)
{
	(void)ctx;
	(void)pid;
	proc = *up;
	return 0;
}

/* What one capture saw. */
static struct unwind_frame frames[UNWIND_FRAMES];
static __u32 nframes, end;
static void *bt[UNWIND_FRAMES + 8];
static int nbt;

static __attribute__((noinline)) void capture(void)
{
	__u64 ip, sp, bp;

	asm volatile("lea (%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
		     : "=r"(ip), "=r"(sp), "=r"(bp));
	end = unwind_user(&proc, &(struct unwind_regs){ .ip = ip, .sp = sp, .bp = bp }, frames,
			  &nframes);
	nbt = backtrace(bt, (int)(sizeof(bt) / sizeof(bt[0])));
	asm volatile("" ::: "memory");
}

/* Frames kept by rbp: alloca makes the compiler address them from it. */
static __attribute__((noinline)) int recurse(int depth)
{
	volatile char *p = alloca((size_t)depth * 16 + 16);

	p[0] = (char)depth;
	if (depth)
		recurse(depth - 1);
	else
		capture();
	return p[0];
}

static int compared;

static int cmp(const void *a, const void *b)
{
	if (!compared++)
		recurse(6);
	return *(const int *)a - *(const int *)b;
}

/* Whether the unwind found backtrace()'s frames: from capture's caller on,
 * each frame's pc is a return address less one. */
static void check_matches(const char *what)
{
	int i, n = (int)nframes < nbt ? (int)nframes : nbt, bad = 0;

	for (i = 1; i < n; i++)
		if ((void *)(uintptr_t)(frames[i].pc + 1) != bt[i])
			bad++;
	if (bad || (int)nframes != nbt || end != UNWIND_BPF_ROOT) {
		fprintf(stderr, "%s: %u frames (end %u), backtrace %d; differing %d\n", what,
			nframes, end, nbt, bad);
		for (i = 0; i < (int)nframes || i < nbt; i++)
			fprintf(stderr, "  %2d  %#18llx  %p\n", i,
				i < (int)nframes ? (unsigned long long)frames[i].pc + 1 : 0ULL,
				i < nbt ? bt[i] : NULL);
	}
	CHECK_EQ_INT(end, UNWIND_BPF_ROOT);
	CHECK_EQ_INT((int)nframes, nbt);
	CHECK_EQ_INT(bad, 0);
	/* Each caller's frame lies above its callee's. */
	for (i = 1; i < (int)nframes; i++)
		CHECK(frames[i].sp > frames[i - 1].sp);
}

static void test_tables(void)
{
	struct unwind_sink sink = { .put_rows = put_rows,
				    .put_pages = put_pages,
				    .put_proc = put_proc,
				    .max_rows = UNWIND_ROWS_MAX,
				    .max_pages = UNWIND_PAGES_MAX };
	struct usyms *u = usyms__new(0, NULL);
	struct utables *t = utables__new(&sink);
	struct utables_stats st;
	__u32 i, j, ends = 0;

	CHECK(u && t);
	if (!u || !t)
		return;
	CHECK_EQ_INT(utables__proc(t, getpid(), u, &(uint64_t){ 0 }), 0);
	utables__stats(t, &st);
	/* This program and libc at least. */
	CHECK(st.files >= 2);
	CHECK(proc.n >= 2);
	/* Each file's rows rise and end with a UNW_NONE row; mappings sorted. */
	for (i = 0; i < proc.n; i++) {
		const struct unwind_map *m = &proc.m[i];

		CHECK(m->start < m->end);
		if (i)
			CHECK(m->start >= proc.m[i - 1].end);
		if (!m->row_n)
			continue;
		CHECK(m->row_lo + m->row_n <= nrows);
		for (j = 1; j < m->row_n; j++)
			CHECK(rows[m->row_lo + j].pc > rows[m->row_lo + j - 1].pc);
		CHECK_EQ_INT(rows[m->row_lo + m->row_n - 1].cfa, UNW_NONE);
		/* The page index finds the row a search of all the file's rows
		 * finds, at every 7th address of its code and past it. */
		for (j = 0; j < 2000; j++) {
			__u64 vaddr = m->start - m->bias +
				      (__u64)j * 7 * ((m->end - m->start) / 14000 + 1);

			CHECK(unwind_row_find(m, vaddr) ==
			      find_row(rows + m->row_lo, m->row_n, vaddr));
		}
	}
	/* The vDSO has its rows too. */
	for (i = 0, j = 0; i < proc.n; i++)
		if (proc.m[i].start == getauxval(AT_SYSINFO_EHDR) && proc.m[i].row_n)
			j++;
	CHECK_EQ_INT((int)j, 1);
	for (i = 0; i < nrows; i++)
		ends += rows[i].cfa == UNW_END;
	/* _start's, at least (its return address is undefined). */
	CHECK(ends >= 1);
	utables__free(t);
	usyms__free(u);
}

static void test_own_stack(void)
{
	int v[64], i;

	for (i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	compared = 0;
	qsort(v, 64, sizeof(v[0]), cmp);
	check_matches("through qsort");
	/* recurse's 7 frames, cmp, qsort's own, this test's, main's. */
	CHECK(nframes >= 12);
	recurse(20);
	check_matches("recursion");
	CHECK(nframes >= 24);
}

/* A frame with no row is stepped by its frame pointer. */
static void test_frame_pointers(void)
{
	__u64 stack[8] = { 0 };
	__u64 sp = (uintptr_t)stack, bp = (uintptr_t)&stack[2];
	struct unwind_proc none = { 0 };

	/* At bp: the caller's rbp (0), then its return address. */
	stack[2] = 0;
	stack[3] = 0x1234;
	end = unwind_user(&none, &(struct unwind_regs){ .ip = 0x1000, .sp = sp, .bp = bp }, frames,
			  &nframes);
	CHECK_EQ_INT(nframes, 2);
	CHECK_EQ_INT((int)frames[1].pc, 0x1233);
	CHECK(frames[1].sp == (uintptr_t)&stack[4]);
	/* ... and then a frame pointer of 0 below sp ends it. */
	CHECK_EQ_INT(end, UNWIND_BPF_NO_CFI);
}

static void test_with_libdw(void)
{
	if (unwind__available())
		SKIP_TEST("libdw missing");
	test_tables();
	test_own_stack();
}

int main(void)
{
	RUN_TEST(test_with_libdw);
	RUN_TEST(test_frame_pointers);
	return test_summary("unwind");
}
