// SPDX-License-Identifier: BSD-2-Clause
/*
 * The records of CUDA's virtual memory management (user/gpu/vmm.c): each
 * release carries the size its handle was created with, through thousands
 * of live handles released in any order; a release of a handle not seen
 * created, a second release, a failed call and an entry make none.
 */
#include "testlib.h"

#ifdef GPU_SKIP_REASON

static void test_vmm(void)
{
	SKIP_TEST("%s", GPU_SKIP_REASON);
}

int main(void)
{
	RUN_TEST(test_vmm);
	return test_summary("vmm");
}

#else

#include <stdlib.h>

#include <cuda.h>
#include <cupti.h>

#include "vmm.h"

#define N 3000

static int call(uint32_t cbid, const void *params, CUresult ret, CUpti_ApiCallbackSite site,
		struct scalene_bpf_gpu_rec *out)
{
	CUpti_CallbackData cb = { .callbackSite = site,
				  .functionParams = params,
				  .functionReturnValue = &ret,
				  .correlationId = 77 };

	return vmm_call_record(cbid, &cb, 1234, out);
}

static int create(CUmemGenericAllocationHandle h, size_t size, struct scalene_bpf_gpu_rec *out)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE } };
	cuMemCreate_params p = { .handle = &h, .size = size, .prop = &prop };

	return call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, CUDA_SUCCESS, CUPTI_API_EXIT, out);
}

static int release(CUmemGenericAllocationHandle h, struct scalene_bpf_gpu_rec *out)
{
	cuMemRelease_params p = { .handle = h };

	return call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &p, CUDA_SUCCESS, CUPTI_API_EXIT, out);
}

static void test_sizes_follow_handles(void)
{
	static uint64_t handles[N];
	struct scalene_bpf_gpu_rec r;
	int i, j, wrong = 0;

	for (i = 0; i < N; i++) {
		/* Handles as a driver gives them: pointers, 16 bytes apart. */
		handles[i] = 0x7f0000001000ull + 16ull * (uint64_t)i;
		CHECK_EQ_INT(create(handles[i], (size_t)(i + 1) << 21, &r), 1);
		CHECK_EQ_INT(r.kind, GPU_REC_ALLOC);
	}
	CHECK_EQ_INT(r.flags, GPU_REC_F_VMM);
	CHECK_EQ_INT(r.correlation_id, 77);
	CHECK_EQ_INT(r.start_ns, 1234);
	CHECK_EQ_INT(r.memory_kind, 3);
	srand(7);
	for (i = N - 1; i > 0; i--) {
		uint64_t t;

		j = rand() % (i + 1);
		t = handles[i];
		handles[i] = handles[j];
		handles[j] = t;
	}
	for (i = 0; i < N; i++) {
		uint64_t size = ((handles[i] - 0x7f0000001000ull) / 16 + 1) << 21;

		if (release(handles[i], &r) != 1 || r.kind != GPU_REC_FREE || r.bytes != size ||
		    r.address != handles[i])
			wrong++;
	}
	CHECK_EQ_INT(wrong, 0);
	/* Gone: a second release has nothing to say. */
	CHECK_EQ_INT(release(handles[0], &r), 0);
}

static void test_no_record(void)
{
	CUmemGenericAllocationHandle h = 0x1000;
	CUmemAllocationProp prop = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE } };
	cuMemCreate_params p = { .handle = &h, .size = 4096, .prop = &prop };
	struct scalene_bpf_gpu_rec r;

	CHECK_EQ_INT(release(0x99999, &r), 0);
	CHECK_EQ_INT(call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, CUDA_ERROR_OUT_OF_MEMORY,
			  CUPTI_API_EXIT, &r),
		     0);
	CHECK_EQ_INT(
		call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, CUDA_SUCCESS, CUPTI_API_ENTER, &r),
		0);
	CHECK_EQ_INT(call(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &p, CUDA_SUCCESS, CUPTI_API_EXIT, &r),
		     0);
	/* The failed create left nothing to release. */
	CHECK_EQ_INT(release(0x1000, &r), 0);
}

int main(void)
{
	RUN_TEST(test_sizes_follow_handles);
	RUN_TEST(test_no_record);
	return test_summary("vmm");
}

#endif
