/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Python frame walker (bpf/pywalk.h) compiled as host C and run against
 * synthetic memory images of CPython 3.9 to 3.13 threads, laid out with the
 * generated pyoffsets tables and configured the way user/target/python.c does it.
 * Reads outside the image fail like bpf_probe_read_user().  Run it under
 * `make SANITIZE=1`: an out-of-bounds access or undefined behaviour in the
 * walker then fails the suite.
 */
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#include "memimg.h"

static struct memimg *cur_img; /* the image PYWALK_READ reads */

#define PYWALK_READ(dst, size, addr) memimg__read(cur_img, (dst), (size), (addr))
#include "pywalk.h"

#include "pyimage.h"
#include "testlib.h"

/* Sanitizer builds: stop at the first report, so that undefined behaviour
 * fails the suite instead of scrolling past in the log. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

#define FIRST_MINOR 9
#define LAST_MINOR 15
#define SENTINEL 0xa5
#define FUZZ_BASE 0x7f3a1e000000ULL
#define FUZZ_SIZE 0x4000ULL
#define FUZZ_ITERS 1000 /* per version and fuzz test */

/* The walker's output and scratch, sized exactly so that ASan sees any write
 * or read past them.  The scratch keeps its bytes between walks, like the
 * per-CPU map it lives in under BPF. */
static struct py_frame *out;
static struct pywalk_scratch *scratch;
static __u32 nout, nelided;

/* The walk's own count of its reads (what the profile reports as its cost)
 * is the number of reads the image saw. */
static int counted(struct pyimg *p, unsigned long before, int status)
{
	CHECK_EQ_INT(scratch->reads, p->m->reads - before);
	return status;
}

static int walk_fs(struct pyimg *p, const struct py_walk_cfg *c, __u64 fsbase)
{
	unsigned long before = p->m->reads;

	memset(out, SENTINEL, MAX_FRAMES * sizeof(*out));
	cur_img = p->m;
	nout = 0xdeadbeef;
	return counted(p, before, pywalk(c, fsbase, out, &nout, &nelided, scratch));
}

static int walk(struct pyimg *p, const struct py_walk_cfg *c)
{
	return walk_fs(p, c, p->fsbase);
}

/* Walks with the configuration user space would build. */
static int walk_default(struct pyimg *p)
{
	struct py_walk_cfg c;

	pyimg__cfg(p, &c);
	return walk(p, &c);
}

static int walk_owned(struct pyimg *p, const struct py_walk_cfg *c, __u64 fsbase,
		      struct pywalk_cache *cache, const struct pywalk_owner *own)
{
	unsigned long before = p->m->reads;

	memset(out, SENTINEL, MAX_FRAMES * sizeof(*out));
	cur_img = p->m;
	nout = 0xdeadbeef;
	return counted(p, before,
		       pywalk_cached(c, fsbase, cache, own, out, &nout, &nelided, scratch));
}

static int walk_cached(struct pyimg *p, const struct py_walk_cfg *c, __u64 fsbase,
		       struct pywalk_cache *cache)
{
	return walk_owned(p, c, fsbase, cache, NULL);
}

/* Slots from `n` on must be as the walker found them. */
static int untouched_from(__u32 n)
{
	const unsigned char *b = (const unsigned char *)out;
	size_t i;

	if (n > MAX_FRAMES)
		return 0;
	for (i = n * sizeof(*out); i < MAX_FRAMES * sizeof(*out); i++)
		if (b[i] != SENTINEL)
			return 0;
	return 1;
}

/* The walk reported exactly what the image was built with, innermost first. */
static void check_frames(const struct pyimg *p, __u32 n)
{
	int shown = 0;
	__u32 i;

	CHECK_EQ_INT(nout, n);
	CHECK(untouched_from(n));
	for (i = 0; i < n && i < nout && i < p->nwant; i++) {
		const struct py_frame *w = pyimg__want(p, i);
		int bad = out[i].code != w->code || out[i].tag != w->tag ||
			  (w->code && out[i].offset != w->offset) ||
			  (!w->code && out[i].ident != w->ident);

		if (bad && shown++ < 5)
			fprintf(stderr,
				"3.%u slot %u: code 0x%llx offset %d tag %u, want 0x%llx %d %u\n",
				p->minor, i, (unsigned long long)out[i].code, out[i].offset,
				out[i].tag, (unsigned long long)w->code, w->offset, w->tag);
		CHECK(!bad);
	}
}

/* A frame that has not run its first instruction yet. */
static int32_t fresh_off(unsigned int minor)
{
	if (minor <= 10)
		return -1;
	return minor <= 12 ? -2 : 0;
}

/* ---- per-version layouts ---------------------------------------------- */

/* <module> -> main -> helper -> fresh callee -> leaf, pushed outermost first. */
static void check_stack_in(struct pyimg *p)
{
	const unsigned int minor = p->minor;
	uint64_t mod = pyimg__code(p, 1), mainf = pyimg__code(p, 12);
	uint64_t helper = pyimg__code(p, 40), callee = pyimg__code(p, 77);
	uint64_t leaf = pyimg__code(p, 90);

	pyimg__push(p, mod, 24);
	pyimg__push(p, mainf, 100);
	pyimg__push(p, helper, 2);
	pyimg__push(p, callee, fresh_off(minor));
	pyimg__push(p, leaf, 300);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	check_frames(p, 5);
	/* Spot values, independent of the builder's bookkeeping. */
	CHECK_EQ_INT(out[0].code, leaf);
	CHECK_EQ_INT(out[0].offset, 300);
	CHECK_EQ_INT(out[0].tag, 90);
	CHECK_EQ_INT(out[1].code, callee);
	CHECK_EQ_INT(out[1].offset, fresh_off(minor));
	CHECK_EQ_INT(out[4].code, mod);
	CHECK_EQ_INT(out[4].offset, 24);
	CHECK_EQ_INT(out[4].tag, 1);
	pyimg__free(p);
}

static void check_stack(unsigned int minor)
{
	check_stack_in(pyimg__new(minor));
}

static void test_stack_3_9(void)
{
	check_stack(9);
}

static void test_stack_3_10(void)
{
	check_stack(10);
}

static void test_stack_3_11(void)
{
	check_stack(11);
}

static void test_stack_3_12(void)
{
	check_stack(12);
}

static void test_stack_3_13(void)
{
	check_stack(13);
}

/* Every other frame's f_executable carries the tag bit (pyimage.h). */
static void test_stack_3_14(void)
{
	check_stack(14);
}

/* Every generated table is one the image builder and the walker handle: a
 * new table fails here until both do. */
static void test_every_table_walks(void)
{
	const struct py_offsets *const *t;
	int n = 0, ft = 0;

	for (t = py_offsets_table; *t; t++) {
		check_stack_in(pyimg__new_table(*t, 1));
		if ((*t)->free_threaded)
			ft++;
		else
			n++;
	}
	CHECK_EQ_INT(n, LAST_MINOR - FIRST_MINOR + 1);
	CHECK(ft >= 1); /* 3.13t: its own object header */
}

/* A one-frame thread whose frame is written by hand through the table. */
static uint64_t one_frame(struct pyimg *p, uint64_t *code)
{
	uint64_t f = memimg__alloc(p->m, p->frames, p->o->frame_size, 16);

	*code = pyimg__code(p, 5);
	memimg__w64(p->m, f + p->o->frame_code, *code);
	pyimg__set_top(p, f);
	return f;
}

/* 3.9: f_lasti counts bytes; -1 before the first instruction. */
static void test_39_lasti_bytes(void)
{
	struct pyimg *p = pyimg__new(9);
	uint64_t code, f = one_frame(p, &code);

	CHECK_EQ_INT(p->o->frame_instr, 104);
	memimg__w32(p->m, f + 104, 14);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(nout, 1);
	CHECK_EQ_INT(out[0].code, code);
	CHECK_EQ_INT(out[0].offset, 14);
	CHECK_EQ_INT(out[0].tag, 5);
	memimg__w32(p->m, f + 104, (uint32_t)-1);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(out[0].offset, -1);
	pyimg__free(p);
}

/* 3.10: f_lasti counts code units (CPython: PyCode_Addr2Line(co, f_lasti * 2)). */
static void test_310_lasti_units(void)
{
	struct pyimg *p = pyimg__new(10);
	uint64_t code, f = one_frame(p, &code);

	CHECK_EQ_INT(p->o->frame_instr, 96);
	memimg__w32(p->m, f + 96, 7);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(nout, 1);
	CHECK_EQ_INT(out[0].code, code);
	CHECK_EQ_INT(out[0].offset, 14);
	memimg__w32(p->m, f + 96, 0);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(out[0].offset, 0);
	memimg__w32(p->m, f + 96, (uint32_t)-1);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(out[0].offset, -1);
	pyimg__free(p);
}

/* 3.11+: offset = instr - code - offsetof(PyCodeObject, co_code_adaptive). */
static void check_instr(unsigned int minor, uint16_t adaptive, int32_t fresh)
{
	struct pyimg *p = pyimg__new(minor);
	uint64_t code, f = one_frame(p, &code);

	CHECK_EQ_INT(p->o->code_code_adaptive, adaptive);
	memimg__w64(p->m, f + p->o->frame_instr, code + adaptive + 10);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(nout, 1);
	CHECK_EQ_INT(out[0].code, code);
	CHECK_EQ_INT(out[0].offset, 10);
	CHECK_EQ_INT(out[0].tag, 5);
	/* 3.11/3.12 prev_instr of a new frame is _PyCode_CODE(co) - 1; 3.13
	 * instr_ptr of a new frame is _PyCode_CODE(co). */
	memimg__w64(p->m, f + p->o->frame_instr, code + adaptive + fresh);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	CHECK_EQ_INT(out[0].offset, fresh);
	pyimg__free(p);
}

static void test_311_prev_instr(void)
{
	check_instr(11, 184, -2);
}

static void test_312_prev_instr(void)
{
	check_instr(12, 192, -2);
}

static void test_313_instr_ptr(void)
{
	check_instr(13, 200, 0);
}

/* 3.11 marks the first frame of each _PyEval_EvalFrameDefault call with
 * is_entry; there are native frames below it, but it is a Python frame and
 * is kept.  Generator (1) and frame-object (2) owned frames are kept too. */
static void test_311_entry_frames_kept(void)
{
	struct pyimg *p = pyimg__new(11);
	uint64_t a = pyimg__code(p, 3), b = pyimg__code(p, 30), c = pyimg__code(p, 60);

	CHECK_EQ_INT(p->o->frame_is_entry, 68);
	pyimg__push_full(p, p->frames, a, 8, 0, 1);
	pyimg__push_full(p, p->frames, b, 16, 1, 1);
	pyimg__push_full(p, p->frames, c, -2, 2, 0);
	pyimg__push_full(p, p->frames, b, 4, 0, 1);
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	check_frames(p, 4);
	CHECK(out[0].code == b && out[3].code == a);
	/* is_entry comes out as PY_FRAME_F_ENTRY (--native: where each call
	 * of the eval loop begins). */
	CHECK_EQ_INT(out[0].flags, PY_FRAME_F_ENTRY);
	CHECK_EQ_INT(out[1].flags, 0);
	CHECK_EQ_INT(out[2].flags, PY_FRAME_F_ENTRY);
	CHECK_EQ_INT(out[3].flags, PY_FRAME_F_ENTRY);
	pyimg__free(p);
}

/* 3.12+: C-stack entry frames (owner >= 3) come out as code 0 in their own
 * slot, and the walk goes on past them. */
static void check_shims(unsigned int minor)
{
	struct pyimg *p = pyimg__new(minor);
	uint64_t mod = pyimg__code(p, 1), key = pyimg__code(p, 20), gen = pyimg__code(p, 23);
	uint64_t spin = pyimg__code(p, 15), heap_reads;

	uint64_t shim;

	pyimg__push(p, mod, 50);
	pyimg__push_shim(p, 3);
	pyimg__push_full(p, p->frames, gen, 12, 1, 0);
	pyimg__push_shim(p, 4); /* 3.14 numbering: FRAME_OWNED_BY_CSTACK = 4 */
	pyimg__push(p, key, fresh_off(minor));
	shim = pyimg__push_shim(p, 3);
	pyimg__push(p, spin, 6);
	heap_reads = p->m->r[p->heap].reads;
	CHECK_EQ_INT(walk_default(p), WALK_OK);
	check_frames(p, 7);
	/* The thread state's span and the four code objects of the program:
	 * a shim's own code object (3.12's trampoline) is not read. */
	CHECK_EQ_INT(p->m->r[p->heap].reads - heap_reads, 1 + 4);
	CHECK_EQ_INT(out[0].code, spin);
	CHECK_EQ_INT(out[1].code, 0);
	/* Where the shim lies: --native finds its eval-loop call by it. */
	CHECK_EQ_INT(out[1].tag, (uint32_t)shim);
	CHECK_EQ_INT(out[1].ident, (uint32_t)(shim >> 32));
	CHECK_EQ_INT(out[0].flags, 0);
	CHECK_EQ_INT(out[2].code, key);
	CHECK_EQ_INT(out[3].code, 0);
	CHECK_EQ_INT(out[4].code, gen);
	CHECK_EQ_INT(out[5].code, 0);
	CHECK_EQ_INT(out[6].code, mod);
	CHECK_EQ_INT(out[6].tag, 1);
	pyimg__free(p);
}

static void test_312_shim_frames(void)
{
	check_shims(12);
}

static void test_313_shim_frames(void)
{
	check_shims(13);
}

/* ---- chain length ------------------------------------------------------ */

static void push_many(struct pyimg *p, unsigned int n)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		pyimg__push(p, pyimg__code(p, 1000 + k), (int32_t)(2 * (k % 50)));
}

static void test_exactly_max_frames(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);

		push_many(p, MAX_FRAMES);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, MAX_FRAMES);
		pyimg__free(p);
	}
}

/* Deeper than MAX_FRAMES: the innermost INNER_FRAMES and the outermost
 * OUTER_FRAMES are kept, the frames between counted as elided, the outer
 * part as a ring rotated by the count; deeper than WALK_DEPTH_MAX, the
 * outermost frames seen are those at that depth, and the walk says so. */
static void test_deep_keeps_both_ends(void)
{
	unsigned int minor, depth[] = { MAX_FRAMES + 1, MAX_FRAMES + 50, 300, WALK_DEPTH_MAX,
					WALK_DEPTH_MAX + 5 };
	unsigned int k, q;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		for (k = 0; k < sizeof(depth) / sizeof(depth[0]); k++) {
			struct pyimg *p = pyimg__new(minor);
			unsigned int walked = depth[k] < WALK_DEPTH_MAX ? depth[k] : WALK_DEPTH_MAX;
			int bad = 0;

			push_many(p, depth[k]);
			CHECK_EQ_INT(walk_default(p),
				     depth[k] > WALK_DEPTH_MAX ? WALK_TRUNCATED : WALK_OK);
			CHECK_EQ_INT(nout, MAX_FRAMES);
			CHECK_EQ_INT(nelided, walked - MAX_FRAMES);
			for (q = 0; q < MAX_FRAMES && nout == MAX_FRAMES; q++) {
				unsigned int slot =
					q < INNER_FRAMES
						? q
						: INNER_FRAMES + (q - INNER_FRAMES + nelided) %
									 OUTER_FRAMES;
				unsigned int want = q < INNER_FRAMES ? q : walked - MAX_FRAMES + q;
				const struct py_frame *w = pyimg__want(p, want);

				if (out[slot].code != w->code || out[slot].tag != w->tag ||
				    out[slot].offset != w->offset) {
					if (!bad++)
						fprintf(stderr,
							"3.%u depth %u: frame %u (slot %u) tag %u, "
							"want %u\n",
							minor, depth[k], q, slot, out[slot].tag,
							w->tag);
				}
			}
			CHECK(!bad);
			/* The outermost frame is the program's, when not truncated. */
			if (depth[k] <= WALK_DEPTH_MAX)
				CHECK_EQ_INT(out[INNER_FRAMES +
						 (OUTER_FRAMES - 1 + nelided) % OUTER_FRAMES]
						     .tag,
					     1000);
			pyimg__free(p);
		}
	}
}

/* A frame that points to itself, and two that point to each other. */
static void test_cycles_terminate(void)
{
	unsigned int minor, i;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t a = pyimg__code(p, 7), b = pyimg__code(p, 8);
		uint64_t fa = pyimg__push(p, a, 4), fb;

		memimg__w64(p->m, fa + p->o->frame_previous, fa);
		CHECK_EQ_INT(walk_default(p), WALK_TRUNCATED);
		CHECK_EQ_INT(nout, MAX_FRAMES);
		for (i = 0; i < MAX_FRAMES && i < nout; i++)
			CHECK(out[i].code == a && out[i].tag == 7 && out[i].offset == 4);

		/* b -> a -> a -> ... */
		fb = pyimg__push(p, b, 6);
		CHECK_EQ_INT(walk_default(p), WALK_TRUNCATED);
		CHECK_EQ_INT(nout, MAX_FRAMES);
		for (i = 0; i < MAX_FRAMES && i < nout; i++)
			CHECK(out[i].code == (i ? a : b));
		/* b -> a -> b -> ... */
		memimg__w64(p->m, fa + p->o->frame_previous, fb);
		CHECK_EQ_INT(walk_default(p), WALK_TRUNCATED);
		CHECK_EQ_INT(nout, MAX_FRAMES);
		for (i = 0; i < MAX_FRAMES && i < nout; i++)
			CHECK(out[i].code == (i % 2 ? a : b));
		pyimg__free(p);
	}
}

/* ---- unreadable memory ------------------------------------------------- */

/* Three good frames whose outermost links to `bad`. */
static void check_bad_link(unsigned int minor, uint64_t bad)
{
	struct pyimg *p = pyimg__new(minor);

	pyimg__set_top(p, bad);
	push_many(p, 3);
	CHECK_EQ_INT(walk_default(p), WALK_READ_FAILED);
	check_frames(p, 3);
	pyimg__free(p);
}

static void test_read_failed_mid_chain(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		check_bad_link(minor, HOLE_ADDR);
		check_bad_link(minor, KERNEL_ADDR);
		check_bad_link(minor, 0x10);
		/* The first bytes are mapped, the rest of the read is not. */
		check_bad_link(minor, FRAMES_BASE + REGION_SIZE - 16);
		check_bad_link(minor, HEAP_BASE - 8);
	}
}

/* A frame at the very end of a mapping: the walker reads frame_read bytes,
 * not a full FRAME_BUF, so it does not fault. */
static void test_frame_at_end_of_mapping(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t code = pyimg__code(p, 9), f;

		pyimg__push(p, pyimg__code(p, 1), 10);
		f = memimg__alloc_at_end(p->m, p->frames, p->o->frame_size);
		pyimg__write_frame(p, f, code, 4, p->top, 0, 0);
		pyimg__set_top(p, f);
		pyimg__expect(p, code, 4, 9);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 2);
		/* Outside the data stack's used part: read on its own. */
		CHECK(p->m->r[p->frames].max_read <= FRAME_BUF);
		pyimg__free(p);
	}
}

/* ---- the data stack window (3.11+) ------------------------------------- */

/* Frames pushed on the data stack come from one read of it, not one each:
 * `n` frames cost one read of the frames region per WIN_BUF bytes of them,
 * and the walk reports them exactly. */
static void test_window_one_read(void)
{
	const unsigned int depths[] = { 1, 16, 40 };
	unsigned int minor;
	size_t k;

	for (minor = 11; minor <= LAST_MINOR; minor++) {
		for (k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
			struct pyimg *p = pyimg__new(minor);
			unsigned long span;

			push_many(p, depths[k]);
			span = p->top + p->o->frame_size - (p->chunk + p->o->stackchunk_data);
			CHECK_EQ_INT(walk_default(p), WALK_OK);
			check_frames(p, depths[k]);
			CHECK_EQ_INT(p->m->r[p->frames].reads, (span + WIN_BUF - 1) / WIN_BUF);
			CHECK(p->m->r[p->frames].max_read <= WIN_BUF);
			pyimg__free(p);
		}
	}
}

/* A stack deeper than a window is read in windows, each ending with the
 * first frame the last one did not hold; the frames are the same either way. */
static void test_window_deep(void)
{
	static struct py_frame first[MAX_FRAMES];
	unsigned int minor;

	for (minor = 11; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		unsigned long with, without;
		struct py_walk_cfg c;

		push_many(p, 200);
		pyimg__cfg(p, &c);
		with = p->m->reads;
		CHECK_EQ_INT(walk(p, &c), WALK_OK);
		with = p->m->reads - with;
		CHECK_EQ_INT(nout, MAX_FRAMES);
		CHECK_EQ_INT(nelided, 200 - MAX_FRAMES);
		memcpy(first, out, sizeof(first));
		c.ts_stack_chunk = PYOFF_UNSET;
		without = p->m->reads;
		CHECK_EQ_INT(walk(p, &c), WALK_OK);
		without = p->m->reads - without;
		CHECK_EQ_INT(nout, MAX_FRAMES);
		CHECK_EQ_INT(nelided, 200 - MAX_FRAMES);
		CHECK(!memcmp(first, out, sizeof(first)));
		CHECK(with * 3 < without * 2);
		pyimg__free(p);
	}
}

/* Data stack bounds that do not hold the frames or cannot be read: the
 * frames are read one by one and reported exactly. */
static void test_window_bad_bounds(void)
{
	unsigned int minor;

	for (minor = 11; minor <= LAST_MINOR; minor++) {
		const struct py_offsets *o = pyimg__table(minor);
		const uint64_t chunks[] = { HOLE_ADDR, FRAMES_BASE - 0x10000, 0, KERNEL_ADDR };
		size_t k;

		for (k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
			struct pyimg *p = pyimg__new(minor);

			/* Over a window's worth of frames, so that the window
			 * would start below the chunk claimed. */
			push_many(p, 60);
			memimg__w64(p->m, p->tstate + o->tstate_datastack_chunk, chunks[k]);
			CHECK_EQ_INT(walk_default(p), WALK_OK);
			check_frames(p, 60);
			pyimg__free(p);
		}
		/* A top below the innermost frame: it is read on its own. */
		{
			struct pyimg *p = pyimg__new(minor);

			push_many(p, 5);
			memimg__w64(p->m, p->tstate + o->tstate_datastack_top, p->top + 8);
			CHECK_EQ_INT(walk_default(p), WALK_OK);
			check_frames(p, 5);
			pyimg__free(p);
		}
	}
}

/* A window left from an earlier walk is never used: a new thread state's
 * frames at the same addresses are read anew. */
static void test_window_not_reused(void)
{
	unsigned int minor;

	for (minor = 11; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t f[3];
		int i;

		for (i = 0; i < 3; i++)
			f[i] = pyimg__push(p, pyimg__code(p, 10 + i), 2 * i);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 3);
		/* Same frames, other code: what a later sample sees after the
		 * calls returned and others were made at the same depth. */
		p->nwant = 0;
		pyimg__set_top(p, 0);
		for (i = 0; i < 3; i++) {
			uint64_t code = pyimg__code(p, 20 + i);

			pyimg__write_frame(p, f[i], code, 4, p->top, 0, 0);
			pyimg__set_top(p, f[i]);
			pyimg__expect(p, code, 4, 20 + i);
		}
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 3);
		pyimg__free(p);
	}
}

/* A code object already read in this walk is not read again (recursion,
 * wrappers), and code objects whose addresses share a memo slot are told
 * apart. */
static void test_code_memo(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t a = pyimg__code(p, 7), b, heap_reads;
		int i;

		/* b shares a's memo slot. */
		do
			b = pyimg__code(p, 8);
		while (pywalk_memo_slot(b) != pywalk_memo_slot(a));
		for (i = 0; i < 12; i++)
			pyimg__push(p, i % 3 ? a : b, 2 * i);
		/* Innermost first: a a b a a b a a b a a b.  The thread
		 * state's span is one read of the heap; then each code object
		 * is read unless the frame before had the same (a and b evict
		 * each other): 8 reads. */
		for (i = 0; i < 2; i++) {
			heap_reads = p->m->r[p->heap].reads;
			CHECK_EQ_INT(walk_default(p), WALK_OK);
			check_frames(p, 12);
			/* The same on the second walk: the memo lives one walk. */
			CHECK_EQ_INT(p->m->r[p->heap].reads - heap_reads, 1 + 8);
		}
		pyimg__free(p);
	}
}

/* Reads of the heap (code objects and the thread state's span) by a walk of
 * the process `own` names. */
static unsigned long heap_reads_owned(struct pyimg *p, const struct py_walk_cfg *c,
				      const struct pywalk_owner *own)
{
	struct pywalk_cache cache = { 0 };
	unsigned long before = p->m->r[p->heap].reads;

	CHECK_EQ_INT(walk_owned(p, c, p->fsbase, &cache, own), WALK_OK);
	return p->m->r[p->heap].reads - before;
}

/* An owner other than `of` (its proc moved on by proc_step, its start by
 * start_step, as often as it takes) that a CPU keeps in the same set. */
static struct pywalk_owner in_set_of(const struct pywalk_owner *of, __u64 proc_step,
				     __u64 start_step)
{
	struct pywalk_owner o = *of;

	do {
		o.proc += proc_step;
		o.start += start_step;
	} while (pywalk_memo_set(&o) != pywalk_memo_set(of));
	return o;
}

/* With the deallocator's probe in place (cfg.code_cache), a walk of the same
 * process takes the code objects an earlier walk read, until one is freed
 * (code_gen moves), and a walk of another process or image, or one made
 * without the probe, reads them anew.  The innermost frame's instruction
 * (<= 3.10: from the code object's co_code) is the same either way. */
static void test_code_memo_across_walks(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		/* The scratch outlives each image: an owner of its own. */
		struct pywalk_owner own = { .proc = (1000ULL * minor) << 32 | 1,
					    .start = 1000ULL * minor,
					    .code_gen = 3 };
		struct pywalk_owner other;
		struct py_walk_cfg c;
		uint64_t a, instr;
		int i;

		for (i = 0; i < 6; i++)
			pyimg__push(p, pyimg__code(p, 10 + i), 2 * i);
		pyimg__cfg(p, &c);
		c.code_cache = 1;
		/* Cold: the thread state's span and six code objects. */
		CHECK_EQ_INT(heap_reads_owned(p, &c, &own), 1 + 6);
		check_frames(p, 6);
		instr = scratch->instr;
		/* Warm: the span only, and the same frames. */
		CHECK_EQ_INT(heap_reads_owned(p, &c, &own), 1);
		check_frames(p, 6);
		CHECK_EQ_INT(scratch->instr, instr);
		CHECK(instr != 0);
		/* Another image of the process, another process, another
		 * start, that a CPU keeps in the same set: read anew, and
		 * then the set is theirs. */
		for (i = 0; i < 3; i++) {
			other = in_set_of(&own, i == 0 ? 1 : i == 1 ? 1ULL << 32 : 0, i == 2);
			CHECK_EQ_INT(heap_reads_owned(p, &c, &other), 1 + 6);
			CHECK_EQ_INT(heap_reads_owned(p, &c, &other), 1);
			CHECK_EQ_INT(heap_reads_owned(p, &c, &own), 1 + 6);
		}
		/* Processes taking turns on a CPU keep their sets, when
		 * they hash to different ones. */
		other = own;
		do
			other.proc += 1ULL << 32;
		while (pywalk_memo_set(&other) == pywalk_memo_set(&own));
		CHECK_EQ_INT(heap_reads_owned(p, &c, &other), 1 + 6);
		CHECK_EQ_INT(heap_reads_owned(p, &c, &own), 1);
		CHECK_EQ_INT(heap_reads_owned(p, &c, &other), 1);
		/* A code object freed (code_gen moves on), and another made
		 * at its address: the new one's first line is reported. */
		a = p->want[p->nwant - 1].code;
		memimg__w32(p->m, a + p->o->code_firstlineno, 99);
		p->want[p->nwant - 1].tag = 99;
		own.code_gen++;
		CHECK_EQ_INT(heap_reads_owned(p, &c, &own), 1 + 6);
		check_frames(p, 6);
		other = own;
		/* Without the probe, every walk reads them. */
		c.code_cache = 0;
		CHECK_EQ_INT(heap_reads_owned(p, &c, &other), 1 + 6);
		CHECK_EQ_INT(heap_reads_owned(p, &c, &other), 1 + 6);
		check_frames(p, 6);
		CHECK_EQ_INT(scratch->instr, instr);
		pyimg__free(p);
	}
}

/* A code pointer that cannot be read keeps its slot; the tag is 0.  One that
 * is not a user address at all is reported as 0. */
static void test_bad_code_pointers(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);

		uint64_t f;

		pyimg__push(p, pyimg__code(p, 1), 10);
		pyimg__push(p, HOLE_ADDR + 0x100, 2);
		/* Code pointers that cannot be user code: taken as shims, so
		 * reported with their addresses. */
		f = pyimg__push(p, KERNEL_ADDR, 4);
		p->want[p->nwant - 1].code = 0;
		p->want[p->nwant - 1].tag = (uint32_t)f;
		p->want[p->nwant - 1].ident = (uint32_t)(f >> 32);
		f = pyimg__push(p, 0, 6);
		p->want[p->nwant - 1].tag = (uint32_t)f;
		p->want[p->nwant - 1].ident = (uint32_t)(f >> 32);
		pyimg__push(p, pyimg__code(p, 3), 8);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 5);
		CHECK_EQ_INT(out[3].code, HOLE_ADDR + 0x100);
		CHECK_EQ_INT(out[3].tag, 0);
		CHECK_EQ_INT(out[2].code, 0);
		CHECK_EQ_INT(out[1].code, 0);
		pyimg__free(p);
	}
}

/* ---- finding the thread state ------------------------------------------ */

static void test_empty_stack(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);

		CHECK_EQ_INT(walk_default(p), WALK_OK);
		CHECK_EQ_INT(nout, 0);
		CHECK(untouched_from(0));
		pyimg__free(p);
	}
}

static void test_tid_mismatch(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);

		push_many(p, 2);
		/* The slot holds another thread's state. */
		memimg__w64(p->m, p->tstate + p->o->tstate_thread_id, p->fsbase + 0x801000);
		CHECK_EQ_INT(walk_default(p), WALK_TID_MISMATCH);
		CHECK_EQ_INT(nout, 0);
		CHECK(untouched_from(0));
		pyimg__free(p);
	}
}

static void check_key(unsigned int minor, uint32_t key, int want)
{
	struct pyimg *p = pyimg__new_key(minor, key);

	push_many(p, 2);
	CHECK_EQ_INT(walk_default(p), want);
	if (want == WALK_OK) {
		check_frames(p, 2);
	} else {
		CHECK_EQ_INT(nout, 0);
		CHECK(untouched_from(0));
	}
	pyimg__free(p);
}

static void check_key_addr(unsigned int minor, uint64_t addr)
{
	struct pyimg *p = pyimg__new(minor);
	struct py_walk_cfg c;

	push_many(p, 2);
	pyimg__cfg(p, &c);
	c.tss_key_addr = addr;
	CHECK_EQ_INT(walk(p, &c), WALK_BAD_KEY);
	CHECK_EQ_INT(nout, 0);
	pyimg__free(p);
}

static void test_bad_key(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		if (pyimg__table(minor)->runtime_autotss_key == PYOFF_NONE)
			continue; /* no key: test_tls_slot */
		check_key(minor, 0, WALK_OK);
		check_key(minor, 31, WALK_OK);
		check_key(minor, 32, WALK_BAD_KEY);
		check_key(minor, 1000, WALK_BAD_KEY);
		check_key(minor, UINT32_MAX, WALK_BAD_KEY);
		check_key_addr(minor, 0);
		check_key_addr(minor, HOLE_ADDR);
		check_key_addr(minor, LIB_BASE + REGION_SIZE - 2);
	}
}

/* 3.15: the state is read from the thread-local at tls_off, whatever the
 * key address says; an offset that reaches no mapped memory finds none. */
static void test_tls_slot(void)
{
	unsigned int minor;
	int n = 0;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p;
		struct py_walk_cfg c;

		if (pyimg__table(minor)->runtime_autotss_key != PYOFF_NONE)
			continue;
		n++;
		p = pyimg__new(minor);
		push_many(p, 2);
		pyimg__cfg(p, &c);
		CHECK_EQ_INT(c.tss_key_addr, 0);
		CHECK_EQ_INT(c.tls_off, PYIMG_TLS_OFF);
		CHECK_EQ_INT(walk(p, &c), WALK_OK);
		check_frames(p, 2);
		c.tss_key_addr = HOLE_ADDR;
		CHECK_EQ_INT(walk(p, &c), WALK_OK);
		c.tls_off = (int64_t)(HOLE_ADDR - p->fsbase);
		CHECK_EQ_INT(walk(p, &c), WALK_NO_TSTATE);
		CHECK_EQ_INT(nout, 0);
		c.tls_off = -8; /* another thread-local: nothing there */
		CHECK_EQ_INT(walk(p, &c), WALK_NO_TSTATE);
		pyimg__free(p);
	}
	CHECK(n >= 1);
}

static void check_slot(unsigned int minor, uint64_t slot)
{
	struct pyimg *p = pyimg__new(minor);

	push_many(p, 2);
	memimg__w64(p->m, pyimg__tsd_slot(p, 1), slot);
	CHECK_EQ_INT(walk_default(p), WALK_NO_TSTATE);
	CHECK_EQ_INT(nout, 0);
	CHECK(untouched_from(0));
	pyimg__free(p);
}

static void test_no_tstate(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		struct py_walk_cfg c;

		check_slot(minor, 0); /* a native thread: empty slot */
		check_slot(minor, KERNEL_ADDR);
		check_slot(minor, HOLE_ADDR); /* thread_id unreadable */
		check_slot(minor, 0x8);
		/* TCB unreadable */
		pyimg__cfg(p, &c);
		CHECK_EQ_INT(walk_fs(p, &c, HOLE_ADDR), WALK_NO_TSTATE);
		CHECK_EQ_INT(nout, 0);
		pyimg__free(p);
	}
}

/* 3.11, 3.12: tstate->cframe is NULL or unreadable; cframe->current_frame is
 * NULL (no Python frame yet). */
static void test_cframe(void)
{
	unsigned int minor;

	for (minor = 11; minor <= 12; minor++) {
		struct pyimg *p = pyimg__new(minor);

		push_many(p, 2);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		CHECK_EQ_INT(nout, 2);
		memimg__w64(p->m, p->cframe + p->o->cframe_current_frame, 0);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		CHECK_EQ_INT(nout, 0);
		memimg__w64(p->m, p->tstate + p->o->tstate_cframe, HOLE_ADDR);
		CHECK_EQ_INT(walk_default(p), WALK_READ_FAILED);
		CHECK_EQ_INT(nout, 0);
		memimg__w64(p->m, p->tstate + p->o->tstate_cframe, 0);
		CHECK_EQ_INT(walk_default(p), WALK_NO_TSTATE);
		CHECK_EQ_INT(nout, 0);
		pyimg__free(p);
	}
}

/*
 * 3.11, 3.12 entering the eval loop: tstate->cframe already points at the new
 * _PyCFrame, whose current_frame is still what the C stack held there (here
 * an immortal object of 3.12: reference count 0xffffffff, its type itself,
 * which read as frames is a loop of "code objects" 0xffffffff).  The walk
 * starts at the caller's frame, cframe->previous->current_frame, and says
 * so; without a previous _PyCFrame it reports what it found (nothing).
 */
static void test_cframe_entering(void)
{
	unsigned int minor;

	for (minor = 11; minor <= 12; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t outer = memimg__alloc(p->m, p->stack, 32, 16);
		uint64_t obj = memimg__alloc(p->m, p->heap, 128, 16);
		unsigned int i;

		push_many(p, 3);
		memimg__w64(p->m, outer + p->o->cframe_current_frame, p->top);
		memimg__w64(p->m, p->cframe + p->o->cframe_previous, outer);
		for (i = 0; i < 128; i += 8)
			memimg__w64(p->m, obj + i, i % 16 ? obj : 0xffffffff);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 3);
		CHECK_EQ_INT(scratch->entering, 0);

		memimg__w64(p->m, p->cframe + p->o->cframe_current_frame, obj);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 3);
		CHECK_EQ_INT(scratch->entering, 1);

		/* Stack garbage that is not even an address. */
		memimg__w64(p->m, p->cframe + p->o->cframe_current_frame, 0x31);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		check_frames(p, 3);
		CHECK_EQ_INT(scratch->entering, 1);

		/* No caller's _PyCFrame to go to: the walk stops at the first
		 * "frame", which is not one. */
		memimg__w64(p->m, p->cframe + p->o->cframe_current_frame, obj);
		memimg__w64(p->m, p->cframe + p->o->cframe_previous, 0);
		CHECK_EQ_INT(walk_default(p), WALK_READ_FAILED);
		CHECK_EQ_INT(nout, 0);
		CHECK_EQ_INT(scratch->not_a_frame, 1);
		pyimg__free(p);
	}
}

/* A caller pointer that leads to something other than a frame (a code
 * pointer that is no object's address) ends the walk there, on every
 * version: the frames before it are kept. */
static void test_not_a_frame_ends_walk(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t obj = memimg__alloc(p->m, p->heap, 256, 16);
		unsigned int i;

		for (i = 0; i < 256; i += 8)
			memimg__w64(p->m, obj + i, i % 16 ? obj : 0xffffffff);
		pyimg__set_top(p, obj);
		push_many(p, 3);
		CHECK_EQ_INT(walk_default(p), WALK_READ_FAILED);
		check_frames(p, 3);
		CHECK_EQ_INT(scratch->not_a_frame, 1);
		pyimg__free(p);
	}
}

/* ---- the per-thread cache (pywalk_cached) ------------------------------ */

/*
 * pywalk_cached reports what pywalk reports: with a cold cache, and again
 * with the cache the first call left behind, the image unchanged.  Returns
 * whether it did.
 */
static int cached_same(struct pyimg *p, const struct py_walk_cfg *c, __u64 fsbase)
{
	static struct py_frame ref[MAX_FRAMES];
	struct pywalk_cache cache = { 0 };
	int st, k, same = 1;
	__u32 n;

	st = walk_fs(p, c, fsbase);
	n = nout;
	memcpy(ref, out, sizeof(ref));
	for (k = 0; k < 2; k++) {
		int st2 = walk_cached(p, c, fsbase, &cache);

		if (st2 != st || nout != n || memcmp(out, ref, sizeof(ref))) {
			fprintf(stderr, "3.%u: pywalk %d, %u frames; pywalk_cached (%s) %d, %u\n",
				p->minor, st, n, k ? "warm" : "cold", st2, nout);
			same = 0;
		}
	}
	return same;
}

static void check_cached_same(struct pyimg *p)
{
	struct py_walk_cfg c;

	pyimg__cfg(p, &c);
	CHECK(cached_same(p, &c, p->fsbase));
}

static void test_cached_matches_uncached(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);

		check_cached_same(p); /* no frames */
		push_many(p, 3);
		if (minor >= 12)
			pyimg__push_shim(p, 3);
		push_many(p, 2);
		check_cached_same(p);
		push_many(p, MAX_FRAMES);
		check_cached_same(p); /* truncated */
		pyimg__free(p);

		p = pyimg__new(minor);
		pyimg__set_top(p, HOLE_ADDR);
		push_many(p, 2);
		check_cached_same(p); /* read failed */
		memimg__w64(p->m, p->tstate + p->o->tstate_thread_id, p->fsbase + 0x801000);
		check_cached_same(p); /* thread id mismatch */
		memimg__w64(p->m, pyimg__tsd_slot(p, 1), 0);
		check_cached_same(p); /* no thread state */
		pyimg__free(p);

		p = pyimg__new_key(minor, 32);
		push_many(p, 1);
		check_cached_same(p); /* bad key */
		pyimg__free(p);
	}
}

/* A warm cache confirms the thread state with one read of its slot: the
 * walk no longer needs the key (3.9-3.14). */
static void test_cached_skips_lookup(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		struct pywalk_cache cache = { 0 };
		struct py_walk_cfg c;
		unsigned long cold, warm;

		push_many(p, 2);
		pyimg__cfg(p, &c);
		cold = p->m->reads;
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_OK);
		cold = p->m->reads - cold;
		CHECK_EQ_INT(cache.tstate, p->tstate);
		CHECK_EQ_INT(cache.slot, pyimg__tsd_slot(p, 1));
		c.tss_key_addr = HOLE_ADDR;
		warm = p->m->reads;
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_OK);
		warm = p->m->reads - warm;
		check_frames(p, 2);
		/* 3.15 reads no key: its cold walk is as short. */
		CHECK(p->key_addr ? warm < cold : warm == cold);
		pyimg__free(p);
	}
}

/* The slot changed (a native thread left Python and came back with a new
 * state): the full lookup runs again and the cache follows. */
static void test_cached_new_tstate(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		struct pywalk_cache cache = { 0 };
		struct py_walk_cfg c;

		push_many(p, 2);
		pyimg__cfg(p, &c);
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_OK);
		pyimg__tstate(p, 1);
		pyimg__push(p, pyimg__code(p, 77), 8);
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_OK);
		check_frames(p, 1);
		CHECK_EQ_INT(cache.tstate, p->tstate);
		/* Back in native code: the slot is cleared. */
		memimg__w64(p->m, pyimg__tsd_slot(p, 1), 0);
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_NO_TSTATE);
		CHECK_EQ_INT(nout, 0);
		CHECK_EQ_INT(cache.tstate, 0);
		pyimg__free(p);
	}
}

/*
 * The slot still holds the cached pointer, but the PyThreadState there now
 * belongs to another thread (freed and reused while this thread's slot kept
 * the stale pointer).  pywalk reports WALK_TID_MISMATCH; the cached walk
 * must not report the other thread's stack as this one's.
 */
static void test_cached_rechecks_thread_id(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		struct pywalk_cache cache = { 0 };
		struct py_walk_cfg c;

		push_many(p, 2);
		pyimg__cfg(p, &c);
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_OK);
		memimg__w64(p->m, p->tstate + p->o->tstate_thread_id, p->fsbase + 0x801000);
		CHECK_EQ_INT(walk(p, &c), WALK_TID_MISMATCH);
		CHECK_EQ_INT(walk_cached(p, &c, p->fsbase, &cache), WALK_TID_MISMATCH);
		CHECK_EQ_INT(nout, 0);
		pyimg__free(p);
	}
}

/* ---- configuration ----------------------------------------------------- */

enum cfg_field {
	F_CODE,
	F_PREV,
	F_INSTR,
	F_OWNER
};

static void check_garbage(unsigned int minor, enum cfg_field which, __u16 v)
{
	struct pyimg *p = pyimg__new(minor);
	struct py_walk_cfg c;

	push_many(p, 3);
	pyimg__cfg(p, &c);
	if (which == F_CODE)
		c.f_code = v;
	else if (which == F_PREV)
		c.f_prev = v;
	else if (which == F_INSTR)
		c.f_instr = v;
	else
		c.f_owner = v;
	if (walk(p, &c) != WALK_NO_CONFIG)
		fprintf(stderr, "3.%u: field %d = %u accepted\n", minor, which, v);
	CHECK_EQ_INT(walk(p, &c), WALK_NO_CONFIG);
	CHECK_EQ_INT(nout, 0);
	CHECK(untouched_from(0));
	pyimg__free(p);
}

/* Offsets that would index past the frame buffer, or split a pointer. */
static void test_garbage_offsets(void)
{
	unsigned int minor;
	const __u16 big[] = { 200, FRAME_BUF, FRAME_BUF - 4, 0x8000, 0xfff8 };
	size_t i;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		const struct py_offsets *o = pyimg__table(minor);

		for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
			check_garbage(minor, F_CODE, big[i]);
			check_garbage(minor, F_PREV, big[i]);
			check_garbage(minor, F_INSTR, big[i]);
		}
		check_garbage(minor, F_CODE, o->frame_code + 4);
		check_garbage(minor, F_PREV, o->frame_previous + 1);
		check_garbage(minor, F_INSTR, 121);
		check_garbage(minor, F_OWNER, FRAME_BUF);
		check_garbage(minor, F_OWNER, 0xfffe);
	}
}

/* frame_read beyond FRAME_BUF is clamped, and 0 means FRAME_BUF. */
static void test_frame_read_clamped(void)
{
	const __u16 sizes[] = { 0, FRAME_BUF + 1, 4096, 0xffff };
	unsigned int minor;
	size_t i;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			struct pyimg *p = pyimg__new(minor);
			struct py_walk_cfg c;

			push_many(p, 4);
			pyimg__cfg(p, &c);
			c.frame_read = sizes[i];
			/* One frame at a time: no data stack window (3.11+). */
			c.ts_stack_chunk = PYOFF_UNSET;
			CHECK_EQ_INT(walk(p, &c), WALK_OK);
			check_frames(p, 4);
			CHECK_EQ_INT(p->m->r[p->frames].max_read, FRAME_BUF);
			pyimg__free(p);
		}
	}
}

/*
 * A frame_read too short for the fields the config names: the walker must
 * either refuse the config or still report this thread's frames, never
 * fields left in the scratch buffer by an earlier walk.
 */
static void test_frame_read_short(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *old = pyimg__new(minor), *p = pyimg__new(minor);
		struct py_walk_cfg c;
		int st;

		/* An earlier walk leaves a one-frame stack's bytes in the scratch. */
		push_many(old, 1);
		CHECK_EQ_INT(walk_default(old), WALK_OK);
		push_many(p, 3);
		pyimg__cfg(p, &c);
		c.frame_read = 8;
		st = walk(p, &c);
		if (st != WALK_NO_CONFIG) {
			if (st != WALK_OK || nout != 3)
				fprintf(stderr, "3.%u: frame_read 8: status %d, %u frames\n", minor,
					st, nout);
			CHECK_EQ_INT(st, WALK_OK);
			check_frames(p, 3);
		}
		pyimg__free(old);
		pyimg__free(p);
	}
}

/* 3.10 f_lasti is an int of code units; a garbage value above INT_MAX / 2
 * must not overflow the doubling (undefined behaviour in C; caught by the
 * sanitizer build). */
static void test_310_lasti_overflow(void)
{
	const uint32_t lasti[] = { 0x40000000, INT32_MAX };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct pyimg *p = pyimg__new(10);
		uint64_t code, f = one_frame(p, &code);

		memimg__w32(p->m, f + p->o->frame_instr, lasti[i]);
		CHECK_EQ_INT(walk_default(p), WALK_OK);
		CHECK_EQ_INT(nout, 1);
		CHECK_EQ_INT(out[0].code, code);
		pyimg__free(p);
	}
}

/* ---- random memory ----------------------------------------------------- */

static uint64_t rng_seed, rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Percentage of fuzz words that point back into the fuzz region: varied per
 * iteration, from short chains to ones that loop until MAX_FRAMES. */
static unsigned int fuzz_ptr_pct = 50;

/* True with probability pct percent. */
static int chance(unsigned int pct)
{
	return rnd() % 100 < pct;
}

/* A quarter of the iterations nothing but pointers, a quarter nearly so. */
static void fuzz_density(void)
{
	uint64_t r = rnd() % 4;

	fuzz_ptr_pct = r == 0 ? 100 : r == 1 ? 97 + rnd() % 3 : 30 + rnd() % 70;
}

/* A word of the fuzz region: pointers back into it (some misaligned, some
 * past its end) so that walks go somewhere, and otherwise NULLs, a code
 * object, the thread's own fsbase or noise. */
static uint64_t fuzz_word(uint64_t fsbase, uint64_t code)
{
	uint64_t r = rnd();

	if (r % 100 < fuzz_ptr_pct) {
		/* A misaligned frame's fields straddle two words: noise. */
		if ((r >> 40) % 16 == 0)
			return FUZZ_BASE + rnd() % FUZZ_SIZE;
		return (FUZZ_BASE + rnd() % (FUZZ_SIZE + 256)) & ~15ULL;
	}
	switch ((r >> 8) % 5) {
	case 0:
		return 0;
	case 1:
		return code;
	case 2:
		return fsbase;
	default:
		return rnd();
	}
}

static void fuzz_fill(struct memimg *m, uint64_t fsbase, uint64_t code)
{
	uint64_t a;

	for (a = 0; a < FUZZ_SIZE; a += 8)
		memimg__w64(m, FUZZ_BASE + a, fuzz_word(fsbase, code));
}

/* What holds for any walk over any memory. */
static void check_sane(int st, const char *what, unsigned int iter)
{
	int ok = st >= WALK_OK && st <= WALK_TID_MISMATCH && nout <= MAX_FRAMES &&
		 untouched_from(nout) && cur_img->max_read <= WIN_BUF &&
		 (st != WALK_TRUNCATED || nout == MAX_FRAMES) &&
		 (st == WALK_OK || st == WALK_READ_FAILED || st == WALK_TRUNCATED || nout == 0);
	__u32 i;

	for (i = 0; ok && i < nout; i++)
		ok = !out[i].code || pywalk_user_ptr(out[i].code);
	if (!ok)
		fprintf(stderr, "%s: iteration %u: status %d, %u frames, PYWALK_FUZZ_SEED=0x%llx\n",
			what, iter, st, nout, (unsigned long long)rng_seed);
	CHECK(ok);
}

/* A valid thread whose frames are random memory. */
static void test_fuzz_frames(void)
{
	unsigned int minor, iter;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t code = pyimg__code(p, 42);
		struct py_walk_cfg c;

		memimg__map(p->m, FUZZ_BASE, FUZZ_SIZE);
		pyimg__cfg(p, &c);
		for (iter = 0; iter < FUZZ_ITERS; iter++) {
			fuzz_density();
			fuzz_fill(p->m, p->fsbase, code);
			pyimg__set_top(p, fuzz_word(p->fsbase, code));
			check_sane(walk(p, &c), "fuzz frames", iter);
		}
		pyimg__free(p);
	}
}

/* A config field: mostly the real value, else garbage. */
static __u16 fuzz_u16(__u16 real)
{
	if (!chance(12))
		return real;
	if (chance(15))
		return 0xffff;
	return (__u16)(rnd() % (chance(70) ? 256 : 65536));
}

/* Everything random: the config's fields, the TCB, the key, the memory. */
static void fuzz_cfg(const struct pyimg *p, struct py_walk_cfg *c, uint64_t code)
{
	pyimg__cfg(p, c);
	c->minor = chance(85) ? c->minor : chance(50) ? FIRST_MINOR + rnd() % 7 : (__u16)rnd();
	c->tss_key_addr = chance(80) ? c->tss_key_addr : fuzz_word(p->fsbase, code);
	c->tsd_base = fuzz_u16(c->tsd_base);
	c->tsd_stride = fuzz_u16(c->tsd_stride);
	c->tsd_data = fuzz_u16(c->tsd_data);
	c->ts_thread_id = fuzz_u16(c->ts_thread_id);
	c->ts_frame = fuzz_u16(c->ts_frame);
	c->cframe_current = fuzz_u16(c->cframe_current);
	c->f_code = fuzz_u16(c->f_code);
	c->f_prev = fuzz_u16(c->f_prev);
	c->f_instr = fuzz_u16(c->f_instr);
	c->f_owner = fuzz_u16(c->f_owner);
	c->frame_read = fuzz_u16(c->frame_read);
	c->co_adaptive = fuzz_u16(c->co_adaptive);
	c->co_firstlineno = fuzz_u16(c->co_firstlineno);
}

static void test_fuzz_everything(void)
{
	unsigned int minor, iter;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++) {
		struct pyimg *p = pyimg__new(minor);
		uint64_t code = pyimg__code(p, 42);
		struct py_walk_cfg c;

		memimg__map(p->m, FUZZ_BASE, FUZZ_SIZE);
		for (iter = 0; iter < FUZZ_ITERS; iter++) {
			uint64_t fs = chance(85) ? p->fsbase : fuzz_word(p->fsbase, code);

			fuzz_density();
			fuzz_fill(p->m, p->fsbase, code);
			/* The TSD slot and the frame link lead into the noise. */
			memimg__w64(p->m, pyimg__tsd_slot(p, 1),
				    chance(85) ? p->tstate : fuzz_word(p->fsbase, code));
			pyimg__set_top(p, fuzz_word(p->fsbase, code));
			fuzz_cfg(p, &c, code);
			check_sane(walk_fs(p, &c, fs), "fuzz everything", iter);
			if (!cached_same(p, &c, fs))
				fprintf(stderr, "cached: iteration %u, PYWALK_FUZZ_SEED=0x%llx\n",
					iter, (unsigned long long)rng_seed);
			CHECK(cached_same(p, &c, fs));
		}
		pyimg__free(p);
	}
}

static void seed_rng(void)
{
	const char *s = getenv("PYWALK_FUZZ_SEED");

	rng_seed = s ? strtoull(s, NULL, 0) : 0x5ca1e0bbf00dULL;
	if (!rng_seed)
		rng_seed = 1; /* xorshift stays at 0 */
	rng_state = rng_seed;
}

/* ---- the innermost frame's current opcode --------------------------- */

static int op_in(const struct py_offsets *o, unsigned int op)
{
	return (o->call_ops[op / 64] >> (op % 64)) & 1;
}

/* The lowest opcode in (out of) the version's call set, above 0. */
static unsigned int some_op(const struct py_offsets *o, int call)
{
	unsigned int op;

	for (op = 1; op < 256; op++)
		if (op_in(o, op) == call)
			return op;
	memimg__die("no such opcode", call);
	return 0;
}

/*
 * Puts opcode `op` at byte offset `off` of code object `code`'s bytecode:
 * co_code_adaptive (3.11+), or the co_code bytes object (<= 3.10), made on
 * first use.
 */
static void put_op(struct pyimg *p, uint64_t code, int32_t off, uint8_t op)
{
	const struct py_offsets *o = p->o;
	uint64_t bytes;

	if (p->minor >= 11) {
		memimg__w8(p->m, code + o->code_code_adaptive + off, op);
		return;
	}
	bytes = pyimg__u64(p, code + o->code_code);
	if (!bytes) {
		bytes = memimg__alloc(p->m, p->heap, o->bytes_sval + CODE_BYTES, 16);
		memimg__w64(p->m, code + o->code_code, bytes);
	}
	memimg__w8(p->m, bytes + o->bytes_sval + off, op);
}

/* Walks, then tells whether the innermost instruction is a call. */
static int walk_at_call(struct pyimg *p, int *status)
{
	struct py_walk_cfg c;

	pyimg__cfg(p, &c);
	*status = walk(p, &c);
	return pywalk_at_call(&c, scratch);
}

/*
 * Only the innermost frame's instruction counts: a Python function called
 * from a CALL is its own frame, running its own bytecode.  A frame that has
 * not started, or an unreadable instruction, is no call (the latter -1).
 */
static void check_at_call(unsigned int minor)
{
	struct pyimg *p = pyimg__new(minor);
	const struct py_offsets *o = p->o;
	unsigned int call = some_op(o, 1), other = some_op(o, 0);
	uint64_t outer = pyimg__code(p, 1), inner = pyimg__code(p, 20), f;
	int status;

	/* Scratch left over from an earlier walk must not leak into this one. */
	scratch->instr = 0x1234;
	put_op(p, outer, 6, (uint8_t)call);
	pyimg__push(p, outer, 6);
	CHECK_EQ_INT(walk_at_call(p, &status), 1);
	CHECK_EQ_INT(status, WALK_OK);
	CHECK(scratch->instr != 0);

	put_op(p, inner, 10, (uint8_t)other);
	f = pyimg__push(p, inner, 10);
	CHECK_EQ_INT(walk_at_call(p, &status), 0);
	check_frames(p, 2);

	/* The same frame, now at a call. */
	put_op(p, inner, 12, (uint8_t)call);
	pyimg__write_frame(p, f, inner, 12, pyimg__u64(p, f + o->frame_previous), 0, 0);
	CHECK_EQ_INT(walk_at_call(p, &status), 1);

	/* Not started yet: no current instruction. */
	pyimg__write_frame(p, f, inner, fresh_off(minor), pyimg__u64(p, f + o->frame_previous), 0,
			   0);
	if (fresh_off(minor) < 0) {
		CHECK_EQ_INT(walk_at_call(p, &status), 0);
		CHECK_EQ_INT(scratch->instr, 0);
	}

	/* The bytecode cannot be read: the walk still stands. */
	pyimg__write_frame(p, f, inner, 10, pyimg__u64(p, f + o->frame_previous), 0, 0);
	if (minor >= 11)
		memimg__w64(p->m, f + o->frame_instr, HOLE_ADDR);
	else
		memimg__w64(p->m, inner + o->code_code, HOLE_ADDR);
	CHECK_EQ_INT(walk_at_call(p, &status), -1);
	CHECK_EQ_INT(status, WALK_OK);
	CHECK_EQ_INT(nout, 2);

	/* 3.12+: a C-stack entry frame on top is no call. */
	if (minor >= 12) {
		pyimg__write_frame(p, f, inner, 12, pyimg__u64(p, f + o->frame_previous), 0, 0);
		CHECK_EQ_INT(walk_at_call(p, &status), 1);
		pyimg__push_shim(p, 3);
		CHECK_EQ_INT(walk_at_call(p, &status), 0);
		CHECK_EQ_INT(scratch->instr, 0);
	}

	/* No frame at all. */
	pyimg__set_top(p, 0);
	CHECK_EQ_INT(walk_at_call(p, &status), 0);
	pyimg__free(p);
}

static void test_at_call(void)
{
	unsigned int minor;

	for (minor = FIRST_MINOR; minor <= LAST_MINOR; minor++)
		check_at_call(minor);
}

/* The loader's text ranges, [start, end), only as many as ntext says. */
static void test_in_interpreter(void)
{
	struct py_walk_cfg c;

	memset(&c, 0, sizeof(c));
	CHECK(!pywalk_in_interpreter(&c, 0x1000));
	c.ntext = 2;
	c.text[0][0] = 0x400000;
	c.text[0][1] = 0x500000;
	c.text[1][0] = 0x7f0000000000ULL;
	c.text[1][1] = 0x7f0000010000ULL;
	c.text[2][0] = 0x600000; /* beyond ntext: ignored */
	c.text[2][1] = 0x700000;
	CHECK(pywalk_in_interpreter(&c, 0x400000));
	CHECK(pywalk_in_interpreter(&c, 0x4fffff));
	CHECK(!pywalk_in_interpreter(&c, 0x500000));
	CHECK(pywalk_in_interpreter(&c, 0x7f0000000010ULL));
	CHECK(!pywalk_in_interpreter(&c, 0x600010));
	CHECK(!pywalk_in_interpreter(&c, 0));
	c.ntext = PY_TEXT_RANGES + 5; /* garbage: bounded by the array */
	CHECK(pywalk_in_interpreter(&c, 0x600010));
}

int main(void)
{
	out = malloc(MAX_FRAMES * sizeof(*out));
	scratch = malloc(sizeof(*scratch));
	if (!out || !scratch)
		return 1;
	memset(scratch, 0, sizeof(*scratch));
	seed_rng();

	RUN_TEST(test_stack_3_9);
	RUN_TEST(test_stack_3_10);
	RUN_TEST(test_stack_3_11);
	RUN_TEST(test_stack_3_12);
	RUN_TEST(test_stack_3_13);
	RUN_TEST(test_stack_3_14);
	RUN_TEST(test_every_table_walks);
	RUN_TEST(test_39_lasti_bytes);
	RUN_TEST(test_310_lasti_units);
	RUN_TEST(test_311_prev_instr);
	RUN_TEST(test_312_prev_instr);
	RUN_TEST(test_313_instr_ptr);
	RUN_TEST(test_311_entry_frames_kept);
	RUN_TEST(test_312_shim_frames);
	RUN_TEST(test_313_shim_frames);
	RUN_TEST(test_exactly_max_frames);
	RUN_TEST(test_deep_keeps_both_ends);
	RUN_TEST(test_cycles_terminate);
	RUN_TEST(test_read_failed_mid_chain);
	RUN_TEST(test_frame_at_end_of_mapping);
	RUN_TEST(test_window_one_read);
	RUN_TEST(test_window_deep);
	RUN_TEST(test_window_bad_bounds);
	RUN_TEST(test_window_not_reused);
	RUN_TEST(test_code_memo);
	RUN_TEST(test_code_memo_across_walks);
	RUN_TEST(test_bad_code_pointers);
	RUN_TEST(test_empty_stack);
	RUN_TEST(test_tid_mismatch);
	RUN_TEST(test_bad_key);
	RUN_TEST(test_tls_slot);
	RUN_TEST(test_no_tstate);
	RUN_TEST(test_cframe);
	RUN_TEST(test_cframe_entering);
	RUN_TEST(test_not_a_frame_ends_walk);
	RUN_TEST(test_cached_matches_uncached);
	RUN_TEST(test_cached_skips_lookup);
	RUN_TEST(test_cached_new_tstate);
	RUN_TEST(test_cached_rechecks_thread_id);
	RUN_TEST(test_garbage_offsets);
	RUN_TEST(test_frame_read_clamped);
	RUN_TEST(test_frame_read_short);
	/* Last: under the sanitizer build undefined behaviour stops the run. */
	RUN_TEST(test_310_lasti_overflow);
	RUN_TEST(test_at_call);
	RUN_TEST(test_in_interpreter);
	RUN_TEST(test_fuzz_frames);
	RUN_TEST(test_fuzz_everything);

	free(scratch);
	free(out);
	return test_summary("bpf_test_pywalk");
}
