/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native stacks from sampled stack copies (--native: EV_NATIVE records,
 * bpf/abi.h).  BPF sends a thread's user registers and a copy of its stack
 * from the stack pointer up; elfutils' libdwfl unwinds the copy with the call
 * frame information of the files the process maps (.eh_frame, .debug_frame
 * from installed debug files, frame pointers where neither covers a frame).
 * libdw is loaded with dlopen: the profiler runs where it is missing, and
 * says so only when --native is asked for.  Not thread-safe.
 */
#ifndef UNWIND_H
#define UNWIND_H

#include <stdbool.h>
#include <stdint.h>

struct native_tail;
struct usyms;

/* Loads libdw; 0, or -ENOENT with the reason printed (once). */
int unwind__available(void);
/* libdw's dlopen handle (for its other calls: cfitable.c), or NULL. */
void *unwind__libdw(void);

struct unwind;

/* The unwinder of process pid, whose files u knows (u must outlive it).
 * NULL and errno. */
struct unwind *unwind__new(int pid, struct usyms *u);
void unwind__free(struct unwind *w);

/* Why an unwind ended. */
enum unwind_end {
	UNWIND_END_ROOT = 0, /* at the thread's first frame: the whole stack */
	UNWIND_END_COPY,     /* the next frame lies above the stack copied */
	UNWIND_END_NO_CFI,   /* no rule for a frame (code of no file, or no unwind data) */
	UNWIND_END_DEPTH,    /* max frames */
	UNWIND_END_NO_REGS,  /* the sample has no user registers */
};

/*
 * Unwinds thread tid's sampled stack: into pcs, innermost first, the address
 * of each frame's current instruction (the interrupted one, then each call
 * instruction's last byte: a return address less one), and into sps each
 * frame's stack pointer (its locals lie between it and the next frame's; 0
 * where libdw cannot tell, before elfutils 0.188).  The frames found (>= 0),
 * why it ended in *end.  ts_ns: when the sample was taken (a frame in a file
 * not known then has the maps read again, usyms__refresh_for, and the stack
 * unwound again).
 */
int unwind__stack(struct unwind *w, int tid, const struct native_tail *nt, uint64_t ts_ns,
		  uint64_t *pcs, uint64_t *sps, int max, enum unwind_end *end);

/* The function holding pc by libdw's symbols for its file: the file's own,
 * else its .gnu_debugdata, else its debug file where installed (found by
 * build id or debug link under /usr/lib/debug); its offset from the start.
 * NULL when none names it. */
const char *unwind__name(struct unwind *w, uint64_t pc, uint64_t *offset);

/* Reads the process's maps again and reports the files mapped since: 0 or
 * -errno (the process gone). */
int unwind__refresh(struct unwind *w);

/* Whether libdw gives each frame's stack pointer (elfutils 0.188+). */
bool unwind__frame_sp(void);

/* Samples unwound, and frames found, by every unwinder so far. */
struct unwind_stats {
	uint64_t stacks, frames;
	uint64_t copied_bytes; /* of the stacks' copies */
	uint64_t ends[UNWIND_END_NO_REGS + 1];
	uint64_t refreshes; /* maps read again for code of no known file */
};
void unwind__stats(struct unwind_stats *out);

#endif /* UNWIND_H */
