/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Records of memory taken through CUDA's virtual memory management
 * (cuMemCreate / cuMemRelease), which CUPTI's MEMORY2 activity does not
 * report: vmm.c.
 */
#ifndef SBG_VMM_H
#define SBG_VMM_H

#include <stdint.h>

#include <cupti.h>

#include "gpu.h"

/*
 * At a traced driver call's callback: for the exit of a cuMemCreate or
 * cuMemRelease that succeeded, fills *out with its allocation or release
 * (GPU_REC_F_VMM, at now_ns, the call's correlation id) and returns 1;
 * otherwise 0.
 */
int vmm_call_record(uint32_t cbid, const CUpti_CallbackData *cb, uint64_t now_ns,
		    struct scalene_bpf_gpu_rec *out);

#endif /* SBG_VMM_H */
