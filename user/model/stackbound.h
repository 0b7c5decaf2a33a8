/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How many stacks a profile writes.  A program can leave tens of thousands of
 * distinct stacks, most of them seen once; written whole they are most of the
 * profile and no one reads them.  The rule, for the CPU stacks (weight: the
 * sample count), the memory stacks (weight: net allocated bytes) and the GPU
 * stacks (weight: device time launched) apart:
 *
 *  1. the heaviest stacks are written whole, heaviest first, while there are
 *     at most lim->whole of them and their frames fit in half of lim->frames;
 *  2. every other stack is cut to its outermost D frames and the stacks with
 *     the same cut form are merged into one entry, weights summed; the
 *     entry's innermost frame is then a marker saying deeper frames were
 *     merged.  D is the deepest cut with at most lim->merged entries whose
 *     frames fit in what step 1 left of lim->frames; when even D = 0 does not
 *     fit, all of them become a single entry.
 *
 * Nothing is dropped: the weights written add up to the weights kept, so
 * every percentage read from the stacks stays right.  A flame graph stays
 * exact down to depth D and for the heaviest stacks at every depth.
 */
#ifndef STACKBOUND_H
#define STACKBOUND_H

#include <stdbool.h>
#include <stdint.h>

struct stack_stats;

/* What a stack weighs. */
enum stack_weight {
	STACK_BY_SAMPLES, /* count */
	STACK_BY_BYTES,	  /* malloc_bytes */
	STACK_BY_GPU,	  /* gpu_ns */
};

struct stack_bound_limits {
	int whole;  /* stacks written whole, at most */
	int merged; /* entries the other stacks are merged into, at most */
	int frames; /* frames written in all, at most (markers included) */
};

/* One written entry: frames[0 .. depth) of rep, then the marker if cut. */
struct stack_entry {
	const struct stack_stats *rep;
	int depth;
	bool cut;	  /* deeper frames merged: a marker frame is innermost */
	bool all;	  /* the single entry of everything not written whole */
	uint64_t members; /* stacks in it */
	uint64_t count;
	double python_ns, native_ns, system_ns, gil_ns, malloc_bytes, gpu_ns;
};

struct stack_bound {
	struct stack_entry *e; /* whole stacks first, then merged ones; each part heaviest first */
	int n;
	/* For each stack given, the entry it is written in, or -1 (no weight):
	 * what a timeline of stacks indexes them by. */
	int *entry_of;
	int whole;		/* entries written whole */
	int merge_depth;	/* D, or -1 when nothing was merged; 0 with all */
	uint64_t merged_stacks; /* stacks in the merged entries */
	double merged_weight;	/* their weight (samples, bytes or ns) */
	double total_weight;	/* weight of all the stacks considered */
};

/* Bounds the stacks of weight > 0; 0 or -ENOMEM.  Free with
 * stack_bound__free. */
int stack_bound__compute(const struct stack_stats *const *st, int n, enum stack_weight by,
			 const struct stack_bound_limits *lim, struct stack_bound *out);
void stack_bound__free(struct stack_bound *b);

#endif /* STACKBOUND_H */
