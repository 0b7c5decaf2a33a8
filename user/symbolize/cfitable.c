// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unwind tables for BPF (cfitable.h).  The functions come from the file's
 * .eh_frame_hdr table; each one's rows from libdw, which runs the CFI
 * program to an address and says the range its result holds for
 * (dwarf_frame_info): asking again at the end of that range walks a
 * function row by row.  Rows whose rule did not change are merged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base/elfsym.h"
#include "base/log.h"
#include "symbolize/cfitable.h"
#include "symbolize/unwind.h"

/* x86_64's DWARF register numbers. */
#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RA 16

static struct {
	int state; /* 0: not tried, 1: loaded, -1: missing */
	Dwarf_CFI *(*getcfi_elf)(Elf *);
	int (*cfi_end)(Dwarf_CFI *);
	int (*addrframe)(Dwarf_CFI *, Dwarf_Addr, Dwarf_Frame **);
	int (*info)(Dwarf_Frame *, Dwarf_Addr *, Dwarf_Addr *, bool *);
	int (*cfa)(Dwarf_Frame *, Dwarf_Op **, size_t *);
	int (*reg)(Dwarf_Frame *, int, Dwarf_Op *, Dwarf_Op **, size_t *);
} cf;

static int load(void)
{
	void *dl;

	if (cf.state)
		return cf.state > 0 ? 0 : -ENOENT;
	cf.state = -1;
	dl = unwind__libdw();
	if (!dl)
		return -ENOENT;
	*(void **)&cf.getcfi_elf = dlsym(dl, "dwarf_getcfi_elf");
	*(void **)&cf.cfi_end = dlsym(dl, "dwarf_cfi_end");
	*(void **)&cf.addrframe = dlsym(dl, "dwarf_cfi_addrframe");
	*(void **)&cf.info = dlsym(dl, "dwarf_frame_info");
	*(void **)&cf.cfa = dlsym(dl, "dwarf_frame_cfa");
	*(void **)&cf.reg = dlsym(dl, "dwarf_frame_register");
	if (!cf.getcfi_elf || !cf.cfi_end || !cf.addrframe || !cf.info || !cf.cfa || !cf.reg) {
		pr_warn("libdw has no CFI calls (dwarf_cfi_addrframe): unwinding in BPF is off\n");
		return -ENOENT;
	}
	cf.state = 1;
	return 0;
}

/* Where register `regno` of the caller is: the offset from the CFA of the
 * slot it was saved in (*off), or whether it is unchanged (*same); false
 * for a rule BPF cannot follow.  *undefined: the rule says it is lost. */
static bool saved_at(Dwarf_Frame *f, int regno, bool *same, bool *undefined, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	int r;

	*same = *undefined = false;
	*off = 0;
	r = cf.reg(f, regno, mem, &ops, &nops);
	if (r < 0)
		return false;
	if (!nops) {
		*same = !ops;
		*undefined = !!ops;
		return true;
	}
	/* offset(N): the location CFA + N (r 0); val_offset and expressions
	 * are not followed. */
	if (r != 0 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1)
		return true;
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* The PLT's CFA: rsp + N, plus 8 once the entry's pushed its index
 * (DW_OP_breg7 N; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litK;
 * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus: K is the push's end). */
static bool plt_cfa(const Dwarf_Op *ops, size_t nops, int16_t *off, int8_t *from)
{
	static const uint8_t want[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,	DW_OP_plus };
	size_t i;

	if (nops != sizeof(want))
		return false;
	for (i = 0; i < nops; i++)
		if (i != 4 && ops[i].atom != want[i])
			return false;
	if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 || ops[1].number ||
	    ops[0].number > 64 || ops[0].number % 8)
		return false;
	*off = (int16_t)(ops[0].number / 8);
	*from = (int8_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

/* The row for frame f (its pc filled in by the caller). */
static void classify(Dwarf_Frame *f, bool signal, struct unwind_row *row, struct cfitable_stats *st)
{
	bool same, undefined;
	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	int64_t off;

	memset(row, 0, sizeof(*row));
	row->cfa = UNW_NONE;
	if (!saved_at(f, DW_REG_RA, &same, &undefined, &off))
		goto unsupported;
	if (undefined) {
		row->cfa = UNW_END;
		return;
	}
	if (signal || same || off != -8)
		goto unsupported;
	if (cf.cfa(f, &ops, &nops) || !nops)
		goto unsupported;
	/* def_cfa: register + offset, as libdw gives it (DW_OP_bregx reg,
	 * offset). */
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == DW_REG_RSP || ops[0].number == DW_REG_RBP)) {
		int64_t v = (int64_t)ops[0].number2;

		if (v % 8 || v / 8 < INT16_MIN || v / 8 > INT16_MAX)
			goto unsupported;
		row->cfa = ops[0].number == DW_REG_RSP ? UNW_CFA_RSP : UNW_CFA_RBP;
		row->cfa_off = (int16_t)(v / 8);
	} else if (plt_cfa(ops, nops, &row->cfa_off, &row->rbp)) {
		row->cfa = UNW_CFA_PLT;
		return; /* rbp untouched there */
	} else {
		goto unsupported;
	}
	if (!saved_at(f, DW_REG_RBP, &same, &undefined, &off))
		goto unsupported;
	if (!same && !undefined) {
		if (!off || off % 8 || off / 8 < INT8_MIN || off / 8 > INT8_MAX)
			goto unsupported;
		row->rbp = (int8_t)(off / 8);
	}
	return;
unsupported:
	memset(row, 0, sizeof(*row));
	row->cfa = UNW_UNFOLLOWED;
	if (st)
		st->unsupported++;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->cfa == b->cfa && a->rbp == b->rbp && a->cfa_off == b->cfa_off;
}

struct rows {
	struct unwind_row *v;
	size_t n, cap;
};

/* Appends a row at pc, merged into the last when its rule is the same; a
 * row at the last one's pc replaces it (an empty range). */
static int push(struct rows *r, uint64_t pc, const struct unwind_row *row)
{
	struct unwind_row *last = r->n ? &r->v[r->n - 1] : NULL;

	if (pc > UINT32_MAX)
		return -ERANGE;
	if (last && pc < last->pc)
		return 0; /* overlapping functions: the first one's rows stand */
	if (last && pc == last->pc) {
		*last = *row;
		last->pc = (__u32)pc;
		if (r->n > 1 && same_rule(&r->v[r->n - 2], last))
			r->n--;
		return 0;
	}
	if (last && same_rule(last, row))
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct unwind_row *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n] = *row;
	r->v[r->n].pc = (__u32)pc;
	r->n++;
	return 0;
}

int cfitable__build(const struct elf_file *e, struct unwind_row **rows, size_t *n,
		    struct cfitable_stats *st)
{
	static const struct unwind_row none = { .cfa = UNW_NONE };
	struct rows r = { 0 };
	const int32_t *t;
	Dwarf_CFI *cfi;
	uint64_t base;
	uint32_t count, i;
	int err = 0;

	*rows = NULL;
	*n = 0;
	if (load() || elf_file__fde_table(e, &t, &count, &base))
		return -ENOENT;
	cfi = cf.getcfi_elf(elf_file__elf(e));
	if (!cfi)
		return -ENOENT;
	for (i = 0; i < count && !err; i++) {
		uint64_t pc = base + (int64_t)t[2 * i];
		uint64_t next = i + 1 < count ? base + (int64_t)t[2 * i + 2] : UINT64_MAX;

		if (st)
			st->fdes++;
		while (pc < next && !err) {
			Dwarf_Addr start, end;
			struct unwind_row row;
			Dwarf_Frame *f;
			bool signal = false;

			if (cf.addrframe(cfi, pc, &f))
				break;
			if (cf.info(f, &start, &end, &signal) < 0) {
				free(f);
				break;
			}
			classify(f, signal, &row, st);
			free(f);
			if (st)
				st->rows_raw++;
			err = push(&r, pc, &row);
			if (end <= pc)
				break;
			pc = end;
		}
		/* Between this function's end and the next one's start: nothing
		 * (but the padding that aligns the next function, never run). */
		if (!err && pc < next && next - pc >= 16)
			err = push(&r, pc, &none);
	}
	cf.cfi_end(cfi);
	if (!err && (!r.n || r.v[r.n - 1].cfa != UNW_NONE))
		err = push(&r, r.n ? (uint64_t)r.v[r.n - 1].pc + 1 : 0, &none);
	if (err) {
		free(r.v);
		return err;
	}
	*rows = r.v;
	*n = r.n;
	return 0;
}
