/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The unwind tables of --native-unwind bpf, kept for every process followed:
 * each code file's rows (cfitable.c) compiled once and placed in one array
 * of rows, and each process's executable mappings (struct unwind_proc)
 * pointing into it.  Where they go is the sink's business (struct
 * unwind_sink): BPF maps for the profiler, plain memory for the tests.
 * Rows are never taken back: a full array leaves the files met after it to
 * frame pointers.  Not thread-safe.
 */
#ifndef UTABLES_H
#define UTABLES_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "abi.h"
#include "collect/loader.h"

struct usyms;

struct utables *utables__new(const struct unwind_sink *sink);
void utables__free(struct utables *t);

/* Gives the sink process pid's mappings, as u last read them, with every
 * new file's rows first, and its vDSO's; *given: a sum of the mappings last
 * given for pid (0: none), which nothing is given again for.  0 or -errno. */
int utables__proc(struct utables *t, int pid, struct usyms *u, uint64_t *given);
void utables__forget(struct utables *t, int pid);

struct utables_stats {
	size_t files;		  /* files with rows */
	size_t files_no_table;	  /* files without (no .eh_frame_hdr, libdw missing) */
	size_t files_full;	  /* files left out: the array was full */
	size_t rows;		  /* rows placed */
	size_t fdes, unsupported; /* functions compiled; rows BPF cannot follow */
	size_t maps_dropped;	  /* executable mappings beyond UNWIND_MAPS */
	uint64_t build_ns;	  /* time spent compiling */
};
void utables__stats(const struct utables *t, struct utables_stats *out);

#endif /* UTABLES_H */
