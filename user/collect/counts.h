/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loader's side of the counts kept in BPF (system-wide): the stacks sent
 * once as EV_STACK records, and the drain of agg_counts into sample records
 * that stand for several samples each (sample_event.count).  See struct
 * agg_key in bpf/abi.h for the epochs.
 */
#ifndef COUNTS_H
#define COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>
#include "abi.h"

typedef int (*counts_event_fn)(void *ctx, const void *data, size_t size);

struct counts_maps {
	int counts_fd; /* agg_counts */
	int stacks_fd; /* agg_stacks */
	uint32_t max_counts;
	volatile __u32 *epoch; /* agg_epoch, in the program's memory */
	/* A stack not counted for this long is forgotten (0: a minute). */
	uint64_t stack_idle_ns;
	/* Reads the ring buffer, where the stacks come (NULL: never; < 0: not
	 * from here, inside its own callback): a drain that finds counts due
	 * whose stack has not come calls it, a few times over a quarter of a
	 * second at most, before it hands them out without one.  A stack's record comes before its first count, but
	 * the ring buffer is read in order, and a record reserved ahead of it
	 * on a CPU that was held up (a loaded virtual machine) holds it back. */
	int (*read_ring)(void *ctx);
	void *ring_ctx;
};

struct counts;

/* NULL with errno set. */
struct counts *counts__new(const struct counts_maps *maps, counts_event_fn fn, void *ctx);
void counts__free(struct counts *c);

/* An EV_STACK record from the ring buffer. */
void counts__add_stack(struct counts *c, const void *data, size_t size);

enum counts_drain {
	COUNTS_PERIODIC, /* the epoch moves on; counts of the closed ones go out */
	COUNTS_IMAGE,	 /* only the counts of one process image (it has ended) */
	COUNTS_ALL,	 /* every count, at the end of the run */
};

/* Before a periodic drain, and before the ring buffer is read for the
 * stacks it needs: BPF counts into the next epoch from here on. */
void counts__next_epoch(struct counts *c);

/* Hands counts to fn as sample records; records handed out or -errno. */
int counts__drain(struct counts *c, enum counts_drain how, int tgid, uint32_t gen);

struct counts_stats {
	uint64_t drains;
	uint64_t records;	   /* sample records handed out */
	uint64_t samples;	   /* the samples they stand for */
	uint64_t late;		   /* of them, added after their epoch was read */
	uint64_t stacks;	   /* stacks received */
	uint64_t stacks_waited;	   /* samples whose stack came after the drain that found them */
	uint64_t ring_rereads;	   /* ring buffer reads for them (read_ring) */
	uint64_t stacks_missing;   /* samples whose stack was not known: given no frames */
	uint64_t stack_resets;	   /* the table of stacks was full and started again */
	uint64_t stacks_forgotten; /* not counted for a while: gone (sent again if used) */
};

void counts__stats(const struct counts *c, struct counts_stats *out);

#endif /* COUNTS_H */
