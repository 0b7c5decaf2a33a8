/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The native stack unwinder of --native-unwind bpf: steps from the
 * interrupted registers to each caller with the rows the loader compiled
 * from the files' .eh_frame (struct unwind_row, bpf/abi.h), or with frame
 * pointers where a frame has no row.  Host C can include it too
 * (tests/bpf/test_unwind.c): define UNWIND_READ and UNWIND_ROW first.
 *
 * Each step: the mapping holding the pc (a binary search of the process's
 * sorted mappings), its file's row for the pc (a binary search of the
 * file's rows), the CFA by the row's rule, then one read of the return
 * address (and of the saved rbp, in the same read when it sits just below
 * it, as after `push rbp`).
 */
#ifndef UNWIND_BPF_H
#define UNWIND_BPF_H

#include "abi.h"

#ifndef UNWIND_READ
#define UNWIND_READ(dst, size, addr) bpf_probe_read_user((dst), (size), (const void *)(addr))
#endif
/* UNWIND_ROW(i): a pointer to row i of every file's rows, NULL past them;
 * UNWIND_PAGE(i): to entry i of the page indexes. */

/* How far above the stack pointer a frame pointer may lie to be followed. */
#define UNWIND_FP_SPAN (8u << 20)

/* The mapping of up that holds pc, or -1.  (A search by base and length:
 * the length does not depend on the comparisons, so the verifier sees one
 * path through the steps, not one per outcome.) */
static __always_inline int unwind_map_find(const struct unwind_proc *up, __u64 pc)
{
	__u32 base = 0, len = up->n, i;

	if (len > UNWIND_MAPS)
		len = UNWIND_MAPS;
	if (!len)
		return -1;
	for (i = 0; i < UNWIND_MAP_STEPS; i++) {
		__u32 half;

		if (len <= 1)
			break;
		half = len / 2;
		if (up->m[(base + half) & (UNWIND_MAPS - 1)].start <= pc)
			base += half;
		len -= half;
	}
	base &= UNWIND_MAPS - 1;
	if (pc < up->m[base].start || pc >= up->m[base].end)
		return -1;
	return (int)base;
}

/* The row of map's file that holds at link-time address vaddr, or NULL:
 * its page's entry says which of its rows to search. */
static __always_inline const struct unwind_row *unwind_row_find(const struct unwind_map *map,
								__u64 vaddr)
{
	const struct unwind_page *pg;
	const struct unwind_row *r;
	__u32 base, len, i;
	__u64 k;

	if (!map->row_n || vaddr < map->page_base)
		return NULL;
	k = (vaddr - map->page_base) >> UNWIND_PAGE_SHIFT;
	if (k >= map->page_n)
		return UNWIND_ROW(map->row_lo + map->row_n - 1);
	pg = UNWIND_PAGE(map->page_lo + (__u32)k);
	if (!pg || pg->last < pg->first || pg->last >= map->row_n)
		return NULL;
	base = map->row_lo + pg->first;
	len = pg->last - pg->first + 1;
	for (i = 0; i < UNWIND_ROW_STEPS; i++) {
		__u32 half;

		if (len <= 1)
			break;
		half = len / 2;
		r = UNWIND_ROW(base + half);
		if (!r)
			return NULL;
		if (r->pc <= vaddr)
			base += half;
		len -= half;
	}
	r = UNWIND_ROW(base);
	if (!r || r->pc > vaddr)
		return NULL;
	return r;
}

/*
 * Frame i: writes its pc and stack pointer to *out and steps r to its
 * caller.  0 to go on, else why the unwind ends there (enum
 * unwind_bpf_end); frame i is written either way (but with no registers).
 */
static __always_inline __u32 unwind_step(const struct unwind_proc *up, struct unwind_regs *r,
					 struct unwind_frame *out, __u32 i)
{
	const struct unwind_row *row = NULL;
	__u64 pc, cfa, ra, rbp_at = 0, slot[2];
	int m;

	if (!r->ip || !r->sp)
		return UNWIND_BPF_NO_REGS;
	pc = i ? r->ip - 1 : r->ip;
	out->pc = pc;
	out->sp = r->sp;
	m = -1;
	if (r->map) {
		__u32 last = (r->map - 1) & (UNWIND_MAPS - 1);

		if (pc >= up->m[last].start && pc < up->m[last].end)
			m = (int)last;
	}
	if (m < 0)
		m = unwind_map_find(up, pc);
	if (m >= 0) {
		const struct unwind_map *map = &up->m[m & (UNWIND_MAPS - 1)];

		r->map = (__u32)m + 1;
		row = unwind_row_find(map, pc - map->bias);
		/* A file without rows (none could be made, or no room for them). */
		if (!map->row_n)
			r->flags |= UNWIND_BPF_F_OUTSIDE;
	} else {
		r->flags |= UNWIND_BPF_F_OUTSIDE;
	}
	if (row && row->cfa == UNW_END)
		return UNWIND_BPF_ROOT;
	if (row && row->cfa == UNW_UNFOLLOWED) {
		r->flags |= UNWIND_BPF_F_UNFOLLOWED;
		return UNWIND_BPF_NO_CFI;
	}
	if (!row || row->cfa == UNW_NONE) {
		/* Frame pointers: the caller's rbp at rbp, its return address
		 * above. */
		if (r->bp < r->sp || r->bp - r->sp > UNWIND_FP_SPAN || (r->bp & 7))
			return UNWIND_BPF_NO_CFI;
		cfa = r->bp + 16;
		rbp_at = r->bp;
	} else if (row->cfa == UNW_CFA_RBP) {
		cfa = r->bp + 8 * (__s64)row->cfa_off;
	} else {
		cfa = r->sp + 8 * (__s64)row->cfa_off;
		if (row->cfa == UNW_CFA_PLT && (pc & 15) >= (__u64)row->rbp)
			cfa += 8;
	}
	if (row && row->cfa != UNW_NONE && row->cfa != UNW_CFA_PLT && row->rbp)
		rbp_at = cfa + 8 * (__s64)row->rbp;
	/* A caller's frame lies above its callee's. */
	if (cfa <= r->sp)
		return UNWIND_BPF_NO_CFI;
	if (rbp_at == cfa - 16) {
		if (UNWIND_READ(slot, sizeof(slot), rbp_at))
			return UNWIND_BPF_READ;
		r->bp = slot[0];
		ra = slot[1];
	} else {
		if (UNWIND_READ(&ra, sizeof(ra), cfa - 8))
			return UNWIND_BPF_READ;
		if (rbp_at && UNWIND_READ(&r->bp, sizeof(r->bp), rbp_at))
			return UNWIND_BPF_READ;
	}
	if (!ra)
		return UNWIND_BPF_ROOT;
	r->ip = ra;
	r->sp = cfa;
	return 0;
}

/*
 * Unwinds from r into out (UNWIND_FRAMES), innermost first; the frames
 * written in *nout, why it ended returned.  (BPF calls the step through a
 * function of its own, profile.bpf.c's unwind_frame.)
 */
static __always_inline __u32 unwind_user(const struct unwind_proc *up, struct unwind_regs *r,
					 struct unwind_frame *out, __u32 *nout)
{
	__u32 i, end;

	for (i = 0; i < UNWIND_FRAMES; i++) {
		end = unwind_step(up, r, &out[i], i);
		if (end) {
			*nout = end == UNWIND_BPF_NO_REGS ? i : i + 1;
			return end;
		}
	}
	*nout = UNWIND_FRAMES;
	return UNWIND_BPF_DEPTH;
}

#endif /* UNWIND_BPF_H */
