/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Decoding of CUPTI activity records into struct scalene_bpf_gpu_rec, and the
 * table of CUDA API calls whose entry the library marks with a probe.  Uses
 * CUPTI's headers only, not the library: the walk over a buffer takes
 * cuptiActivityGetNextRecord as a parameter, so tests feed it buffers they
 * build themselves.
 */
#ifndef SCALENE_BPF_GPUREC_H
#define SCALENE_BPF_GPUREC_H

#include <stddef.h>
#include <stdint.h>

#include <cupti_activity.h>

#include "gpu.h"

/* What one walk saw, added to the state block by the caller. */
struct gpurec_counts {
	uint64_t records;     /* decoded and handed to emit */
	uint64_t incomplete;  /* end = 0: dropped */
	uint64_t invalid;     /* end < start or start = 0: dropped */
	uint64_t other_kinds; /* kinds not decoded: skipped */
	uint64_t batches;     /* calls of emit */
	uint64_t first_ns;    /* earliest start among the decoded records; 0: none */
	uint64_t last_ns;     /* latest end among them */
};

/* The activity kinds the library enables, in the order it enables them.
 * KERNEL (3) is left out on purpose: it serialises all kernels on the GPU;
 * CONCURRENT_KERNEL (10) records the same struct without that. */
struct gpurec_kind {
	CUpti_ActivityKind kind;
	uint32_t bit; /* enum gpu_kind_bits */
};
extern const struct gpurec_kind gpurec_kinds[];
extern const unsigned int gpurec_nr_kinds;

/*
 * Decodes the record at `a` into *out.  Returns 1 when *out holds a record,
 * 0 when the kind is not one we decode (counted in c->other_kinds), or
 * -ENODATA / -ERANGE for a kernel, copy or memset that has no end yet
 * (c->incomplete) or impossible times (c->invalid); *out is then undefined.
 */
int gpurec_decode(const CUpti_Activity *a, struct scalene_bpf_gpu_rec *out,
		  struct gpurec_counts *c);

/* cuptiActivityGetNextRecord's type. */
typedef CUptiResult (*gpurec_next_fn)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
/* Receives 1..SCALENE_BPF_GPU_BATCH records, valid only during the call. */
typedef void (*gpurec_emit_fn)(const struct scalene_bpf_gpu_rec *recs, unsigned int n, void *ctx);

/*
 * Decodes every record of a completed buffer (`valid` bytes), in buffer
 * order, handing them to `emit` in batches.  Adds to *c.  Returns the number
 * of records walked, or -EPROTO when `next` failed before the end of the
 * buffer (a record of a kind unknown to that CUPTI: the rest is lost).
 */
int gpurec_walk(uint8_t *buffer, size_t valid, gpurec_next_fn next, gpurec_emit_fn emit, void *ctx,
		struct gpurec_counts *c);

/* Adds a walk's counts into a running total (first/last as min/max). */
void gpurec_counts_add(struct gpurec_counts *total, const struct gpurec_counts *c);

/* A traced CUDA API call. */
struct gpu_api {
	uint16_t domain; /* CUPTI_CB_DOMAIN_DRIVER_API or CUPTI_CB_DOMAIN_RUNTIME_API */
	uint16_t cbid;
	uint16_t class; /* enum gpu_api_class */
	const char *name;
};

extern const struct gpu_api gpu_api_table[];
extern const unsigned int gpu_api_count;

/* enum gpu_api_class of a callback, 0 when it is not traced. */
int gpu_api_class(uint32_t domain, uint32_t cbid);

#endif /* SCALENE_BPF_GPUREC_H */
