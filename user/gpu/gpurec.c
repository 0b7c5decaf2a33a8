// SPDX-License-Identifier: BSD-2-Clause
/*
 * CUPTI activity records -> struct scalene_bpf_gpu_rec, and the table of
 * traced API calls.  Built against CUDA 13's headers: the record structs are
 * the versions CUPTI 13 writes (CUpti_ActivityKernel10, Memcpy6,
 * MemcpyPtoP4, Memset4, Memory4).  CUPTI fills a buffer with the layout of
 * the library loaded at run time; the state block carries both versions so
 * that a reader can tell when they differ.
 */
#include <errno.h>
#include <string.h>

#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "gpurec.h"

const struct gpurec_kind gpurec_kinds[] = {
	{ CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, GPU_KIND_CONCURRENT_KERNEL },
	{ CUPTI_ACTIVITY_KIND_MEMCPY, GPU_KIND_MEMCPY },
	{ CUPTI_ACTIVITY_KIND_MEMCPY2, GPU_KIND_MEMCPY2 },
	{ CUPTI_ACTIVITY_KIND_MEMSET, GPU_KIND_MEMSET },
	{ CUPTI_ACTIVITY_KIND_MEMORY2, GPU_KIND_MEMORY2 },
};
const unsigned int gpurec_nr_kinds = sizeof(gpurec_kinds) / sizeof(gpurec_kinds[0]);

static void note_times(struct gpurec_counts *c, uint64_t start, uint64_t end)
{
	if (!c->first_ns || start < c->first_ns)
		c->first_ns = start;
	if (end > c->last_ns)
		c->last_ns = end;
}

/* Kernels, copies and memsets have an interval.  A forced flush hands out
 * work that is still running with end = 0: it has no duration yet and is
 * dropped, counted.  start = 0 or end < start has been seen after tens of
 * millions of graph-kernel records: nothing can be attributed from it. */
static int check_interval(uint64_t start, uint64_t end, struct gpurec_counts *c)
{
	if (!end) {
		c->incomplete++;
		return -ENODATA;
	}
	if (!start || end < start) {
		c->invalid++;
		return -ERANGE;
	}
	return 0;
}

/* The fields every record with an interval has under the same names
 * (kernels, copies, memsets: distinct struct types, hence a macro). */
#define COPY_INTERVAL(out, r)                                    \
	do {                                                     \
		(out)->start_ns = (r)->start;                    \
		(out)->end_ns = (r)->end;                        \
		(out)->correlation_id = (r)->correlationId;      \
		(out)->context_id = (r)->contextId;              \
		(out)->stream_id = (r)->streamId;                \
		if ((r)->graphId) {                              \
			(out)->flags |= GPU_REC_F_GRAPH;         \
			(out)->graph_id = (r)->graphId;          \
			(out)->graph_node_id = (r)->graphNodeId; \
		}                                                \
	} while (0)

static int decode_kernel(const CUpti_ActivityKernel10 *k, struct scalene_bpf_gpu_rec *out,
			 struct gpurec_counts *c)
{
	int err = check_interval(k->start, k->end, c);

	if (err)
		return err;
	out->kind = GPU_REC_KERNEL;
	COPY_INTERVAL(out, k);
	out->name = (uint64_t)(uintptr_t)k->name;
	out->device_id = k->deviceId;
	if (k->isDeviceLaunched)
		out->flags |= GPU_REC_F_DEVICE_LAUNCHED;
	return 1;
}

static int decode_memcpy(const CUpti_ActivityMemcpy6 *m, struct scalene_bpf_gpu_rec *out,
			 struct gpurec_counts *c)
{
	int err = check_interval(m->start, m->end, c);

	if (err)
		return err;
	out->kind = GPU_REC_MEMCPY;
	COPY_INTERVAL(out, m);
	out->bytes = m->bytes;
	out->copy_kind = m->copyKind;
	out->device_id = m->deviceId;
	if (m->isDeviceLaunched)
		out->flags |= GPU_REC_F_DEVICE_LAUNCHED;
	return 1;
}

static int decode_peer(const CUpti_ActivityMemcpyPtoP4 *m, struct scalene_bpf_gpu_rec *out,
		       struct gpurec_counts *c)
{
	int err = check_interval(m->start, m->end, c);

	if (err)
		return err;
	out->kind = GPU_REC_MEMCPY;
	out->flags = GPU_REC_F_PEER;
	COPY_INTERVAL(out, m);
	out->bytes = m->bytes;
	out->copy_kind = m->copyKind;
	out->device_id = m->srcDeviceId;
	out->dst_device = m->dstDeviceId;
	return 1;
}

static int decode_memset(const CUpti_ActivityMemset4 *m, struct scalene_bpf_gpu_rec *out,
			 struct gpurec_counts *c)
{
	int err = check_interval(m->start, m->end, c);

	if (err)
		return err;
	out->kind = GPU_REC_MEMSET;
	COPY_INTERVAL(out, m);
	out->bytes = m->bytes;
	out->memory_kind = (uint8_t)m->memoryKind;
	out->device_id = m->deviceId;
	if (m->isDeviceLaunched)
		out->flags |= GPU_REC_F_DEVICE_LAUNCHED;
	return 1;
}

/* MEMORY2: one record per allocation and one per release, each with a
 * single timestamp.  contextId and streamId are 0xFFFFFFFF when there is
 * none; they are passed on as CUPTI gives them. */
static int decode_memory(const CUpti_ActivityMemory4 *m, struct scalene_bpf_gpu_rec *out,
			 struct gpurec_counts *c)
{
	switch (m->memoryOperationType) {
	case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
		out->kind = GPU_REC_ALLOC;
		break;
	case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
		out->kind = GPU_REC_FREE;
		break;
	default:
		c->invalid++;
		return -ERANGE;
	}
	if (!m->timestamp) {
		c->invalid++;
		return -ERANGE;
	}
	out->start_ns = m->timestamp;
	out->end_ns = m->timestamp;
	out->bytes = m->bytes;
	out->address = m->address;
	out->memory_kind = (uint8_t)m->memoryKind;
	out->correlation_id = m->correlationId;
	out->device_id = m->deviceId;
	out->context_id = m->contextId;
	out->stream_id = m->streamId;
	if (m->isAsync)
		out->flags |= GPU_REC_F_ASYNC;
	return 1;
}

int gpurec_decode(const CUpti_Activity *a, struct scalene_bpf_gpu_rec *out, struct gpurec_counts *c)
{
	int ret;

	memset(out, 0, sizeof(*out));
	switch (a->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		ret = decode_kernel((const CUpti_ActivityKernel10 *)a, out, c);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		ret = decode_memcpy((const CUpti_ActivityMemcpy6 *)a, out, c);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		ret = decode_peer((const CUpti_ActivityMemcpyPtoP4 *)a, out, c);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		ret = decode_memset((const CUpti_ActivityMemset4 *)a, out, c);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		ret = decode_memory((const CUpti_ActivityMemory4 *)a, out, c);
		break;
	default:
		c->other_kinds++;
		return 0;
	}
	if (ret == 1) {
		c->records++;
		note_times(c, out->start_ns, out->end_ns);
	}
	return ret;
}

int gpurec_walk(uint8_t *buffer, size_t valid, gpurec_next_fn next, gpurec_emit_fn emit, void *ctx,
		struct gpurec_counts *c)
{
	struct scalene_bpf_gpu_rec batch[SCALENE_BPF_GPU_BATCH];
	CUpti_Activity *rec = NULL;
	unsigned int n = 0;
	int walked = 0, err = 0;
	CUptiResult res;

	if (!buffer || !valid)
		return 0;
	for (;;) {
		res = next(buffer, valid, &rec);
		if (res == CUPTI_ERROR_MAX_LIMIT_REACHED)
			break;
		if (res != CUPTI_SUCCESS) {
			err = -EPROTO;
			break;
		}
		walked++;
		if (gpurec_decode(rec, &batch[n], c) != 1)
			continue;
		if (++n == SCALENE_BPF_GPU_BATCH) {
			emit(batch, n, ctx);
			c->batches++;
			n = 0;
		}
	}
	if (n) {
		emit(batch, n, ctx);
		c->batches++;
	}
	return err ? err : walked;
}

void gpurec_counts_add(struct gpurec_counts *total, const struct gpurec_counts *c)
{
	total->records += c->records;
	total->incomplete += c->incomplete;
	total->invalid += c->invalid;
	total->other_kinds += c->other_kinds;
	total->batches += c->batches;
	if (c->first_ns && (!total->first_ns || c->first_ns < total->first_ns))
		total->first_ns = c->first_ns;
	if (c->last_ns > total->last_ns)
		total->last_ns = c->last_ns;
}

/*
 * The API calls whose entry fires the gpu_api probe.  Each is enabled by its
 * callback id, never by whole domains: cudaGetLastError and
 * cudaStreamIsCapturing would call back too.  CUDA 13's nvcc lowers <<<>>>
 * to __cudaLaunchKernel (505/506), which cudaLaunchKernel (211) does not
 * cover.  Driver entry points superseded by a _v2 are left out: cuda.h has
 * mapped the plain names to the _v2 ones since CUDA 3.2.
 */
#define RT(name, cls)                                                                              \
	{                                                                                          \
		CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name, GPU_API_##cls, #name \
	}
#define DRV(name, cls)                                                                           \
	{                                                                                        \
		CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name, GPU_API_##cls, #name \
	}

const struct gpu_api gpu_api_table[] = {
	/* Kernel launches. */
	RT(cudaLaunch_v3020, LAUNCH),
	RT(cudaLaunch_ptsz_v7000, LAUNCH),
	RT(cudaLaunchKernel_v7000, LAUNCH),
	RT(cudaLaunchKernel_ptsz_v7000, LAUNCH),
	RT(cudaLaunchCooperativeKernel_v9000, LAUNCH),
	RT(cudaLaunchCooperativeKernel_ptsz_v9000, LAUNCH),
	RT(cudaLaunchCooperativeKernelMultiDevice_v9000, LAUNCH),
	RT(cudaLaunchKernelExC_v11060, LAUNCH),
	RT(cudaLaunchKernelExC_ptsz_v11060, LAUNCH),
	RT(__cudaLaunchKernel_v13000, LAUNCH),
	RT(__cudaLaunchKernel_ptsz_v13000, LAUNCH),
	DRV(cuLaunch, LAUNCH),
	DRV(cuLaunchGrid, LAUNCH),
	DRV(cuLaunchGridAsync, LAUNCH),
	DRV(cuLaunchKernel, LAUNCH),
	DRV(cuLaunchKernel_ptsz, LAUNCH),
	DRV(cuLaunchCooperativeKernel, LAUNCH),
	DRV(cuLaunchCooperativeKernel_ptsz, LAUNCH),
	DRV(cuLaunchCooperativeKernelMultiDevice, LAUNCH),
	DRV(cuLaunchKernelEx, LAUNCH),
	DRV(cuLaunchKernelEx_ptsz, LAUNCH),
	/* Graph launches: every kernel of the graph carries the launch's id. */
	RT(cudaGraphLaunch_v10000, GRAPH_LAUNCH),
	RT(cudaGraphLaunch_ptsz_v10000, GRAPH_LAUNCH),
	DRV(cuGraphLaunch, GRAPH_LAUNCH),
	DRV(cuGraphLaunch_ptsz, GRAPH_LAUNCH),
	/* Copies, runtime. */
	RT(cudaMemcpy_v3020, MEMCPY),
	RT(cudaMemcpy2D_v3020, MEMCPY),
	RT(cudaMemcpyToArray_v3020, MEMCPY),
	RT(cudaMemcpy2DToArray_v3020, MEMCPY),
	RT(cudaMemcpyFromArray_v3020, MEMCPY),
	RT(cudaMemcpy2DFromArray_v3020, MEMCPY),
	RT(cudaMemcpyArrayToArray_v3020, MEMCPY),
	RT(cudaMemcpy2DArrayToArray_v3020, MEMCPY),
	RT(cudaMemcpyToSymbol_v3020, MEMCPY),
	RT(cudaMemcpyFromSymbol_v3020, MEMCPY),
	RT(cudaMemcpyAsync_v3020, MEMCPY),
	RT(cudaMemcpyToArrayAsync_v3020, MEMCPY),
	RT(cudaMemcpyFromArrayAsync_v3020, MEMCPY),
	RT(cudaMemcpy2DAsync_v3020, MEMCPY),
	RT(cudaMemcpy2DToArrayAsync_v3020, MEMCPY),
	RT(cudaMemcpy2DFromArrayAsync_v3020, MEMCPY),
	RT(cudaMemcpyToSymbolAsync_v3020, MEMCPY),
	RT(cudaMemcpyFromSymbolAsync_v3020, MEMCPY),
	RT(cudaMemcpy3D_v3020, MEMCPY),
	RT(cudaMemcpy3DAsync_v3020, MEMCPY),
	RT(cudaMemcpyPeer_v4000, MEMCPY),
	RT(cudaMemcpyPeerAsync_v4000, MEMCPY),
	RT(cudaMemcpy3DPeer_v4000, MEMCPY),
	RT(cudaMemcpy3DPeerAsync_v4000, MEMCPY),
	RT(cudaMemcpy_ptds_v7000, MEMCPY),
	RT(cudaMemcpy2D_ptds_v7000, MEMCPY),
	RT(cudaMemcpyToArray_ptds_v7000, MEMCPY),
	RT(cudaMemcpy2DToArray_ptds_v7000, MEMCPY),
	RT(cudaMemcpyFromArray_ptds_v7000, MEMCPY),
	RT(cudaMemcpy2DFromArray_ptds_v7000, MEMCPY),
	RT(cudaMemcpyArrayToArray_ptds_v7000, MEMCPY),
	RT(cudaMemcpy2DArrayToArray_ptds_v7000, MEMCPY),
	RT(cudaMemcpyToSymbol_ptds_v7000, MEMCPY),
	RT(cudaMemcpyFromSymbol_ptds_v7000, MEMCPY),
	RT(cudaMemcpyAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpyToArrayAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpyFromArrayAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpy2DAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpy2DToArrayAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpy2DFromArrayAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpyToSymbolAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpyFromSymbolAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpy3D_ptds_v7000, MEMCPY),
	RT(cudaMemcpy3DAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpy3DPeer_ptds_v7000, MEMCPY),
	RT(cudaMemcpy3DPeerAsync_ptsz_v7000, MEMCPY),
	RT(cudaMemcpyBatchAsync_v12080, MEMCPY),
	RT(cudaMemcpyBatchAsync_ptsz_v12080, MEMCPY),
	RT(cudaMemcpy3DBatchAsync_v12080, MEMCPY),
	RT(cudaMemcpy3DBatchAsync_ptsz_v12080, MEMCPY),
	RT(cudaMemcpyBatchAsync_v13000, MEMCPY),
	RT(cudaMemcpyBatchAsync_ptsz_v13000, MEMCPY),
	RT(cudaMemcpy3DBatchAsync_v13000, MEMCPY),
	RT(cudaMemcpy3DBatchAsync_ptsz_v13000, MEMCPY),
	/* Copies, driver. */
	DRV(cuMemcpy, MEMCPY),
	DRV(cuMemcpyAsync, MEMCPY),
	DRV(cuMemcpyPeer, MEMCPY),
	DRV(cuMemcpyPeerAsync, MEMCPY),
	DRV(cuMemcpy3DPeer, MEMCPY),
	DRV(cuMemcpy3DPeerAsync, MEMCPY),
	DRV(cuMemcpyHtoD_v2, MEMCPY),
	DRV(cuMemcpyHtoDAsync_v2, MEMCPY),
	DRV(cuMemcpyDtoH_v2, MEMCPY),
	DRV(cuMemcpyDtoHAsync_v2, MEMCPY),
	DRV(cuMemcpyDtoD_v2, MEMCPY),
	DRV(cuMemcpyDtoDAsync_v2, MEMCPY),
	DRV(cuMemcpyAtoH_v2, MEMCPY),
	DRV(cuMemcpyAtoHAsync_v2, MEMCPY),
	DRV(cuMemcpyAtoD_v2, MEMCPY),
	DRV(cuMemcpyDtoA_v2, MEMCPY),
	DRV(cuMemcpyAtoA_v2, MEMCPY),
	DRV(cuMemcpy2D_v2, MEMCPY),
	DRV(cuMemcpy2DUnaligned_v2, MEMCPY),
	DRV(cuMemcpy2DAsync_v2, MEMCPY),
	DRV(cuMemcpy3D_v2, MEMCPY),
	DRV(cuMemcpy3DAsync_v2, MEMCPY),
	DRV(cuMemcpyHtoA_v2, MEMCPY),
	DRV(cuMemcpyHtoAAsync_v2, MEMCPY),
	DRV(cuMemcpyHtoD_v2_ptds, MEMCPY),
	DRV(cuMemcpyDtoH_v2_ptds, MEMCPY),
	DRV(cuMemcpyDtoD_v2_ptds, MEMCPY),
	DRV(cuMemcpyDtoA_v2_ptds, MEMCPY),
	DRV(cuMemcpyAtoD_v2_ptds, MEMCPY),
	DRV(cuMemcpyHtoA_v2_ptds, MEMCPY),
	DRV(cuMemcpyAtoH_v2_ptds, MEMCPY),
	DRV(cuMemcpyAtoA_v2_ptds, MEMCPY),
	DRV(cuMemcpy2D_v2_ptds, MEMCPY),
	DRV(cuMemcpy2DUnaligned_v2_ptds, MEMCPY),
	DRV(cuMemcpy3D_v2_ptds, MEMCPY),
	DRV(cuMemcpy_ptds, MEMCPY),
	DRV(cuMemcpyPeer_ptds, MEMCPY),
	DRV(cuMemcpy3DPeer_ptds, MEMCPY),
	DRV(cuMemcpyAsync_ptsz, MEMCPY),
	DRV(cuMemcpyHtoAAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpyAtoHAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpyHtoDAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpyDtoHAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpyDtoDAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpy2DAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpy3DAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpyPeerAsync_ptsz, MEMCPY),
	DRV(cuMemcpy3DPeerAsync_ptsz, MEMCPY),
	DRV(cuMemcpyBatchAsync, MEMCPY),
	DRV(cuMemcpyBatchAsync_ptsz, MEMCPY),
	DRV(cuMemcpy3DBatchAsync, MEMCPY),
	DRV(cuMemcpy3DBatchAsync_ptsz, MEMCPY),
	DRV(cuMemcpyBatchAsync_v2, MEMCPY),
	DRV(cuMemcpyBatchAsync_v2_ptsz, MEMCPY),
	DRV(cuMemcpy3DBatchAsync_v2, MEMCPY),
	DRV(cuMemcpy3DBatchAsync_v2_ptsz, MEMCPY),
	/* Memsets. */
	RT(cudaMemset_v3020, MEMSET),
	RT(cudaMemset2D_v3020, MEMSET),
	RT(cudaMemsetAsync_v3020, MEMSET),
	RT(cudaMemset2DAsync_v3020, MEMSET),
	RT(cudaMemset3D_v3020, MEMSET),
	RT(cudaMemset3DAsync_v3020, MEMSET),
	RT(cudaMemset_ptds_v7000, MEMSET),
	RT(cudaMemset2D_ptds_v7000, MEMSET),
	RT(cudaMemsetAsync_ptsz_v7000, MEMSET),
	RT(cudaMemset2DAsync_ptsz_v7000, MEMSET),
	RT(cudaMemset3D_ptds_v7000, MEMSET),
	RT(cudaMemset3DAsync_ptsz_v7000, MEMSET),
	DRV(cuMemsetD8_v2, MEMSET),
	DRV(cuMemsetD16_v2, MEMSET),
	DRV(cuMemsetD32_v2, MEMSET),
	DRV(cuMemsetD2D8_v2, MEMSET),
	DRV(cuMemsetD2D16_v2, MEMSET),
	DRV(cuMemsetD2D32_v2, MEMSET),
	DRV(cuMemsetD8Async, MEMSET),
	DRV(cuMemsetD16Async, MEMSET),
	DRV(cuMemsetD32Async, MEMSET),
	DRV(cuMemsetD2D8Async, MEMSET),
	DRV(cuMemsetD2D16Async, MEMSET),
	DRV(cuMemsetD2D32Async, MEMSET),
	DRV(cuMemsetD8_v2_ptds, MEMSET),
	DRV(cuMemsetD16_v2_ptds, MEMSET),
	DRV(cuMemsetD32_v2_ptds, MEMSET),
	DRV(cuMemsetD2D8_v2_ptds, MEMSET),
	DRV(cuMemsetD2D16_v2_ptds, MEMSET),
	DRV(cuMemsetD2D32_v2_ptds, MEMSET),
	DRV(cuMemsetD8Async_ptsz, MEMSET),
	DRV(cuMemsetD16Async_ptsz, MEMSET),
	DRV(cuMemsetD32Async_ptsz, MEMSET),
	DRV(cuMemsetD2D8Async_ptsz, MEMSET),
	DRV(cuMemsetD2D16Async_ptsz, MEMSET),
	DRV(cuMemsetD2D32Async_ptsz, MEMSET),
	/* Device memory: MEMORY2 records carry these calls' ids.  Pinned host
	 * memory (cudaMallocHost) is not device memory and is left out. */
	RT(cudaMalloc_v3020, ALLOC),
	RT(cudaMallocPitch_v3020, ALLOC),
	RT(cudaMalloc3D_v3020, ALLOC),
	RT(cudaMallocManaged_v6000, ALLOC),
	RT(cudaMallocAsync_v11020, ALLOC),
	RT(cudaMallocAsync_ptsz_v11020, ALLOC),
	RT(cudaMallocFromPoolAsync_v11020, ALLOC),
	RT(cudaMallocFromPoolAsync_ptsz_v11020, ALLOC),
	RT(cudaFree_v3020, FREE),
	RT(cudaFreeAsync_v11020, FREE),
	RT(cudaFreeAsync_ptsz_v11020, FREE),
	DRV(cuMemAlloc_v2, ALLOC),
	DRV(cuMemAllocPitch_v2, ALLOC),
	DRV(cuMemAllocManaged, ALLOC),
	DRV(cuMemAllocAsync, ALLOC),
	DRV(cuMemAllocAsync_ptsz, ALLOC),
	DRV(cuMemAllocFromPoolAsync, ALLOC),
	DRV(cuMemAllocFromPoolAsync_ptsz, ALLOC),
	DRV(cuMemFree_v2, FREE),
	DRV(cuMemFreeAsync, FREE),
	DRV(cuMemFreeAsync_ptsz, FREE),
	/* Virtual memory management: the library makes their records (vmm.c). */
	DRV(cuMemCreate, ALLOC),
	DRV(cuMemRelease, FREE),
};
const unsigned int gpu_api_count = sizeof(gpu_api_table) / sizeof(gpu_api_table[0]);

int gpu_api_class(uint32_t domain, uint32_t cbid)
{
	unsigned int i;

	for (i = 0; i < gpu_api_count; i++)
		if (gpu_api_table[i].domain == domain && gpu_api_table[i].cbid == cbid)
			return gpu_api_table[i].class;
	return 0;
}
