/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unwind tables for BPF (--native-unwind bpf): a file's call frame
 * information (.eh_frame, read with elfutils' libdw) compiled into the rows
 * BPF unwinds with (struct unwind_row, bpf/abi.h).  A row holds from its pc
 * to the next row's; rules BPF cannot follow (a CFA kept in another
 * register, or given by an expression other than the PLT's, a signal frame)
 * become UNW_UNFOLLOWED rows, whose samples go to user space as copies; code
 * between functions, UNW_NONE rows (frame pointers, as libdw does).
 */
#ifndef CFITABLE_H
#define CFITABLE_H

#include <stddef.h>

#include <linux/types.h>

#include "abi.h"

struct elf_file;

struct cfitable_stats {
	size_t fdes;	    /* functions with unwind data */
	size_t rows_raw;    /* rows as libdw gives them */
	size_t unsupported; /* of those, rules BPF cannot follow */
};

/*
 * The rows of file e, sorted by pc, the last a UNW_NONE row at the end of
 * the last function (malloc'd into *rows, *n of them): 0, -ENOENT (no
 * .eh_frame_hdr table, or libdw missing), -ERANGE (code above 4 GiB of
 * link-time addresses), -ENOMEM.  st may be NULL.
 */
int cfitable__build(const struct elf_file *e, struct unwind_row **rows, size_t *n,
		    struct cfitable_stats *st);

#endif /* CFITABLE_H */
