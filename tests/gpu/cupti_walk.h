/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A stand-in for cuptiActivityGetNextRecord over buffers laid out as CUPTI
 * lays them out: records back to back at 8-byte alignment, each the struct
 * of its kind in the CUDA 13 headers.  Shared by the decoding test and the
 * fake libcupti.
 */
#ifndef SCALENE_BPF_CUPTI_WALK_H
#define SCALENE_BPF_CUPTI_WALK_H

#include <stddef.h>
#include <stdint.h>

#include <cupti_activity.h>

static inline size_t cupti_walk_record_size(CUpti_ActivityKind kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy6);
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		return sizeof(CUpti_ActivityMemcpyPtoP4);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		return sizeof(CUpti_ActivityMemory4);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	default:
		return 0;
	}
}

/* *record NULL starts at the beginning, otherwise it is the previous
 * record; the end of the valid bytes is CUPTI_ERROR_MAX_LIMIT_REACHED; a
 * record of a kind it cannot size is CUPTI_ERROR_INVALID_KIND. */
static inline CUptiResult cupti_walk_next(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	size_t at = 0, size;

	if (*record) {
		size = cupti_walk_record_size((*record)->kind);
		at = ((size_t)((uint8_t *)*record - buffer) + size + 7) & ~(size_t)7;
	}
	if (at >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(buffer + at);
	return cupti_walk_record_size((*record)->kind) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
}

#endif /* SCALENE_BPF_CUPTI_WALK_H */
