// SPDX-License-Identifier: BSD-2-Clause
/*
 * GPU work of known size for tools/gpu-check, called from Python (ctypes).
 *
 * Every function returns 0 or the CUDA error (cudaError_t, or CUresult for
 * the driver-API launch) and does exactly one traced CUDA call, so that the
 * profile can credit its work to the Python line that called it:
 *
 *   gt_busy_chevron   one kernel spinning for ns nanoseconds, launched with
 *                     <<<>>> (CUDA 13 lowers that to __cudaLaunchKernel)
 *   gt_busy_runtime   the same kernel through cudaLaunchKernel
 *   gt_busy_driver    the same kernel through the driver's cuLaunchKernel
 *   gt_graph_launch   a CUDA graph of three such kernels (gt_graph_create
 *                     builds it with explicit nodes: no launch is traced then)
 *   gt_malloc/gt_free, gt_htod/gt_dtoh (pageable host memory), gt_memset
 *   gt_sync           cudaDeviceSynchronize (not traced: its line waits)
 *   gt_tiny_loop      m launches of an empty kernel, timed here
 *
 * The busy kernel is one thread reading the GPU's global nanosecond timer
 * until ns have passed, so its duration does not depend on the clock rate.
 * Launches go to the legacy default stream: each kernel starts after the
 * previous work.
 *
 * Built twice (tools/gpu-check/Makefile): with nvcc's default static CUDA
 * runtime and with --cudart shared; -lcuda for cuLaunchKernel.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define GT_API extern "C" __attribute__((visibility("default")))

static __device__ __forceinline__ uint64_t gt_globaltimer(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void gt_busy_kernel(unsigned long long ns)
{
	uint64_t start = gt_globaltimer();

	while (gt_globaltimer() - start < ns)
		;
}

__global__ void gt_tiny_kernel(void)
{
}

static cudaGraph_t gt_graph;
static cudaGraphExec_t gt_graph_exec;

static uint64_t gt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

GT_API const char *gt_error_string(int err)
{
	return cudaGetErrorString((cudaError_t)err);
}

/* The versions the driver and this runtime speak (1000 * major + 10 * minor). */
GT_API int gt_versions(int *driver, int *runtime)
{
	cudaError_t e = cudaDriverGetVersion(driver);

	if (e != cudaSuccess)
		return e;
	return cudaRuntimeGetVersion(runtime);
}

/* Initialises CUDA on device 0 and creates its context (the driver loads the
 * injection library here); reports the device and the scheduling flags. */
GT_API int gt_init(char *name, int len, int *sm_major, int *sm_minor, unsigned int *flags)
{
	struct cudaDeviceProp prop;
	cudaError_t e;
	int n = 0;

	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		return e;
	if (n < 1)
		return cudaErrorNoDevice;
	e = cudaSetDevice(0);
	if (e == cudaSuccess)
		e = cudaFree(0);
	if (e == cudaSuccess)
		e = cudaGetDeviceProperties(&prop, 0);
	if (e != cudaSuccess)
		return e;
	strncpy(name, prop.name, (size_t)len - 1);
	name[len - 1] = '\0';
	*sm_major = prop.major;
	*sm_minor = prop.minor;
	return cudaGetDeviceFlags(flags);
}

GT_API int gt_busy_chevron(unsigned long long ns)
{
	gt_busy_kernel<<<1, 1>>>(ns);
	return cudaGetLastError();
}

GT_API int gt_busy_runtime(unsigned long long ns)
{
	void *args[] = { &ns };

	return cudaLaunchKernel((const void *)gt_busy_kernel, dim3(1), dim3(1), args, 0, 0);
}

GT_API int gt_busy_driver(unsigned long long ns)
{
	void *args[] = { &ns };
	cudaFunction_t fn;
	cudaError_t e;

	/* A runtime function handle is the driver's CUfunction. */
	e = cudaGetFuncBySymbol(&fn, (const void *)gt_busy_kernel);
	if (e != cudaSuccess)
		return e;
	return cuLaunchKernel((CUfunction)fn, 1, 1, 1, 1, 1, 1, 0, 0, args, 0);
}

/* Three busy kernels of ns each, one after the other. */
GT_API int gt_graph_create(unsigned long long ns)
{
	static unsigned long long arg;
	void *args[] = { &arg };
	struct cudaKernelNodeParams p;
	cudaGraphNode_t prev = NULL, node;
	cudaError_t e;
	int i;

	arg = ns;
	memset(&p, 0, sizeof(p));
	p.func = (void *)gt_busy_kernel;
	p.gridDim = dim3(1);
	p.blockDim = dim3(1);
	p.kernelParams = args;
	e = cudaGraphCreate(&gt_graph, 0);
	for (i = 0; i < 3 && e == cudaSuccess; i++) {
		e = cudaGraphAddKernelNode(&node, gt_graph, prev ? &prev : NULL, prev ? 1 : 0, &p);
		prev = node;
	}
	if (e == cudaSuccess)
		e = cudaGraphInstantiate(&gt_graph_exec, gt_graph, 0);
	return e;
}

GT_API int gt_graph_launch(void)
{
	return cudaGraphLaunch(gt_graph_exec, 0);
}

GT_API int gt_graph_destroy(void)
{
	cudaError_t e = cudaGraphExecDestroy(gt_graph_exec);

	if (e == cudaSuccess)
		e = cudaGraphDestroy(gt_graph);
	return e;
}

GT_API int gt_malloc(unsigned long long bytes, void **dev)
{
	return cudaMalloc(dev, bytes);
}

GT_API int gt_free(void *dev)
{
	return cudaFree(dev);
}

GT_API int gt_htod(void *dev, const void *host, unsigned long long bytes)
{
	return cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
}

GT_API int gt_dtoh(void *host, const void *dev, unsigned long long bytes)
{
	return cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
}

GT_API int gt_memset(void *dev, int value, unsigned long long bytes)
{
	return cudaMemset(dev, value, bytes);
}

GT_API int gt_sync(void)
{
	return cudaDeviceSynchronize();
}

/* m launches of an empty kernel: the time to issue them (the CPU's cost per
 * launch, while the launch queue has room) and until the last one ran. */
GT_API int gt_tiny_loop(int m, unsigned long long *issue_ns, unsigned long long *total_ns)
{
	uint64_t t0 = gt_now_ns(), t1;
	cudaError_t e;
	int i;

	for (i = 0; i < m; i++)
		gt_tiny_kernel<<<1, 1>>>();
	t1 = gt_now_ns();
	e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	*issue_ns = t1 - t0;
	*total_ns = gt_now_ns() - t0;
	return e;
}
