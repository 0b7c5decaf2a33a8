// SPDX-License-Identifier: BSD-2-Clause
/*
 * libscalene-bpf-gpu.so in a process without an NVIDIA driver, as on every
 * machine without a GPU.  There the library must change nothing, and the
 * checks are:
 *
 * 1. The real path: with CUDA_INJECTION64_PATH naming the library, the CUDA
 *    runtime's first call finds no driver (cudaErrorInsufficientDriver) and
 *    the library is never mapped.  The driver, libcuda, is what loads it and
 *    calls InitializeInjection(); without libcuda nothing does.  This is the
 *    case that matters: `scalene-bpf run` may set the variable on any
 *    machine.
 * 2. Loaded by hand anyway (dlopen, then InitializeInjection() outside any
 *    cuInit): CUPTI cannot subscribe; the call returns, says so in one line
 *    on stderr and in the state block, starts no thread, registers no exit
 *    handler (this program then exits normally), a second call does nothing
 *    and the exported flush says -ENODEV.
 *
 * Where a driver is installed neither check applies: both are skipped.
 * These are checks of our library without a GPU, not of GPU profiling.
 */
#include "testlib.h"

#ifdef GPU_SKIP_REASON

static void test_gpu_nodriver(void)
{
	SKIP_TEST("%s", GPU_SKIP_REASON);
}

int main(void)
{
	RUN_TEST(test_gpu_nodriver);
	return test_summary("gpu_nodriver");
}

#else

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu.h"

/* cudaErrorInsufficientDriver in driver_types.h. */
#define CUDA_ERROR_INSUFFICIENT_DRIVER 35

static int driver_present(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

	if (!h)
		return 0;
	dlclose(h);
	return 1;
}

/* Whether a mapping of this process comes from a file named `name`. */
static int mapped(const char *name)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name))
			found = 1;
	fclose(f);
	return found;
}

/* Whether a thread of this process is named `comm`. */
static int thread_named(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], name[64];
	int found = 0;
	FILE *f;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, comm, strlen(comm)))
			found = 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

static void test_never_loaded(void)
{
	int (*get_count)(int *);
	int count = -1, rc;
	void *rt;

	if (driver_present())
		SKIP_TEST("an NVIDIA driver is installed: the library would be loaded");
	if (!*GPU_CUDART_PATH)
		SKIP_TEST("no shared CUDA runtime (libcudart.so.N) in the toolkit");
	CHECK_EQ_INT(setenv("CUDA_INJECTION64_PATH", GPU_SO_PATH, 1), 0);
	rt = dlopen(GPU_CUDART_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!rt) {
		fprintf(stderr, "cannot load %s: %s\n", GPU_CUDART_PATH, dlerror());
		CHECK(rt);
		return;
	}
	get_count = (int (*)(int *))dlsym(rt, "cudaGetDeviceCount");
	CHECK(get_count);
	if (get_count) {
		rc = get_count(&count);
		CHECK_EQ_INT(rc, CUDA_ERROR_INSUFFICIENT_DRIVER);
	}
	CHECK_EQ_INT(mapped(SCALENE_BPF_GPU_SONAME), 0);
	CHECK(!dlopen(GPU_SO_PATH, RTLD_NOW | RTLD_NOLOAD));
	unsetenv("CUDA_INJECTION64_PATH");
}

/* Runs fn with stderr sent to a file; returns what it wrote (static). */
static const char *capture_stderr(int (*fn)(void), int *ret)
{
	static char text[2048];
	struct test_stderr c;

	test_stderr_begin(&c);
	*ret = fn();
	test_stderr_end(&c, text, sizeof(text));
	return text;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_loaded_by_hand(void)
{
	const struct scalene_bpf_gpu_state *st;
	int (*init)(void), (*flush)(void);
	const char *out;
	void *lib;
	int ret;

	if (driver_present())
		SKIP_TEST("an NVIDIA driver is installed: CUPTI would start for real");
	lib = dlopen(GPU_SO_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "cannot load %s: %s\n", GPU_SO_PATH, dlerror());
		CHECK(lib);
		return;
	}
	init = (int (*)(void))dlsym(lib, "InitializeInjection");
	flush = (int (*)(void))dlsym(lib, "scalene_bpf_gpu_flush");
	st = dlsym(lib, SCALENE_BPF_GPU_STATE_SYM);
	CHECK(init && flush && st);
	if (!init || !flush || !st)
		return;
	CHECK_EQ_INT(st->magic, SCALENE_BPF_GPU_MAGIC);
	CHECK_EQ_INT(st->abi, SCALENE_BPF_GPU_ABI);
	CHECK_EQ_INT(st->size, sizeof(*st));
	CHECK_EQ_INT(st->status, GPU_S_LOADED);
	CHECK_EQ_INT(flush(), -ENODEV);

	out = capture_stderr(init, &ret);
	CHECK_EQ_INT(ret, 1);
	CHECK_EQ_INT(st->status, GPU_S_CUPTI_ERROR);
	CHECK_EQ_INT(st->failed_call, GPU_FAIL_SUBSCRIBE);
	CHECK(st->cupti_error != 0);
	CHECK_EQ_INT(st->pid, getpid());
	CHECK_EQ_INT(st->kinds, 0);
	CHECK_EQ_INT(st->api_callbacks, 0);
	CHECK_EQ_INT(lines(out), 1);
	CHECK(strstr(out, "cuptiSubscribe failed") != NULL);
	if (lines(out) != 1 || !strstr(out, "cuptiSubscribe failed"))
		fprintf(stderr, "stderr of InitializeInjection: \"%s\"\n", out);
	CHECK_EQ_INT(thread_named("sbpf-gpu-flush"), 0);

	/* The driver calls it once; a second call changes nothing. */
	out = capture_stderr(init, &ret);
	CHECK_EQ_INT(ret, 1);
	CHECK_EQ_INT(lines(out), 0);
	CHECK_EQ_INT(st->status, GPU_S_CUPTI_ERROR);
	CHECK_EQ_INT(flush(), -ENODEV);
	printf("no driver: InitializeInjection by hand: CUPTI error %u, CUPTI version %u (built "
	       "against %u)\n",
	       st->cupti_error, st->cupti_version, st->built_version);
}

int main(void)
{
	/* Order matters: the first test needs the library not yet loaded. */
	RUN_TEST(test_never_loaded);
	RUN_TEST(test_loaded_by_hand);
	return test_summary("gpu_nodriver");
}

#endif /* GPU_SKIP_REASON */
