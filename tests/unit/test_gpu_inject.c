// SPDX-License-Identifier: BSD-2-Clause
/*
 * libscalene-bpf-gpu.so against a fake libcupti.so.13 (tests/gpu/): the
 * injection logic without a GPU.  The test program is linked against the
 * fake, so the library, loaded with dlopen, binds to it.  These test our
 * library's side of the CUPTI contract (what it enables, the launch
 * callbacks and their nesting, buffers, the flush thread, the flush at exit
 * and in fork children, a second subscriber, failures) as the fake models
 * it, not CUPTI or a GPU.
 *
 * InitializeInjection() runs once per process, so every case runs in a
 * child process of its own and reports through its exit status.
 */
#include "testlib.h"

#ifdef GPU_SKIP_REASON

static void test_gpu_inject(void)
{
	SKIP_TEST("%s", GPU_SKIP_REASON);
}

int main(void)
{
	RUN_TEST(test_gpu_inject);
	return test_summary("gpu_inject");
}

#else

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
#include <cupti.h>

#include "fake_cupti.h"
#include "gpu.h"

static const int RT = CUPTI_CB_DOMAIN_RUNTIME_API, DRV = CUPTI_CB_DOMAIN_DRIVER_API;

static struct scalene_bpf_gpu_state *st;
static int (*init)(void), (*flush)(void);

static void load(void)
{
	void *lib = dlopen(GPU_SO_PATH, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "cannot load %s: %s\n", GPU_SO_PATH, dlerror());
		exit(1);
	}
	init = (int (*)(void))dlsym(lib, "InitializeInjection");
	flush = (int (*)(void))dlsym(lib, "scalene_bpf_gpu_flush");
	st = dlsym(lib, SCALENE_BPF_GPU_STATE_SYM);
	if (!init || !flush || !st) {
		fprintf(stderr, "%s lacks its exports\n", GPU_SO_PATH);
		exit(1);
	}
}

/* Runs fn in a child; the child's exit status is its failed checks. */
static void in_child(void (*fn)(void), const char *flush_ms)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		CHECK(pid >= 0);
		return;
	}
	if (!pid) {
		t_checks_failed = 0;
		setenv(SCALENE_BPF_GPU_ENV_FLUSH_MS, flush_ms, 1);
		load();
		fn();
		fflush(NULL);
		exit(t_checks_failed ? 1 : 0);
	}
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int thread_named(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	char path[300], name[64];
	struct dirent *e;
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

/* Waits up to 5 s for *field to reach want (the flush thread's work). */
static uint64_t wait_for(const volatile __u64 *field, uint64_t want)
{
	int i;

	for (i = 0; i < 500 && *field < want; i++)
		usleep(10000);
	return *field;
}

static void queue_kernel(uint32_t corr, uint64_t start, uint64_t end)
{
	fake_cupti_kernel(corr, start, end);
}

static void queue_memcpy(uint32_t corr, uint64_t bytes, uint64_t start, uint64_t end)
{
	fake_cupti_memcpy(corr, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, bytes, start, end);
}

/* What InitializeInjection sets up when CUPTI accepts everything. */
static void active_setup(void)
{
	struct fake_cupti_stats f;
	uint64_t before, ts, after;

	CHECK_EQ_INT(st->status, GPU_S_LOADED);
	CHECK_EQ_INT(init(), 1);
	fake_cupti_stats(&f);
	CHECK_EQ_INT(st->status, GPU_S_ACTIVE);
	CHECK_EQ_INT(st->failed_call, GPU_FAIL_NONE);
	CHECK_EQ_INT(st->pid, getpid());
	CHECK_EQ_INT(st->cupti_version, CUPTI_API_VERSION);
	/* The fake this program links is the libcupti already loaded. */
	CHECK_EQ_INT(st->cupti_from, GPU_CUPTI_LOADED);
	CHECK_EQ_INT(st->built_version, CUPTI_API_VERSION);
	CHECK_EQ_INT(st->flush_ms, 20);
	CHECK(f.subscribed);
	/* Kernels concurrently, never the serialising KERNEL kind. */
	CHECK(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	CHECK(!fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL));
	CHECK(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	CHECK(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY2));
	CHECK(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET));
	CHECK(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
	CHECK(!fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_RUNTIME));
	CHECK(!fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER));
	CHECK_EQ_INT(f.kinds_enabled, 5);
	CHECK_EQ_INT(st->kinds, GPU_KIND_CONCURRENT_KERNEL | GPU_KIND_MEMCPY | GPU_KIND_MEMCPY2 |
					GPU_KIND_MEMSET | GPU_KIND_MEMORY2);
	/* Callbacks per id: the launch APIs of both domains, CUDA 13's
	 * __cudaLaunchKernel included, and nothing called on every step. */
	CHECK_EQ_INT(st->api_callbacks, f.callbacks_enabled);
	CHECK_EQ_INT(st->api_failed, 0);
	CHECK(fake_cupti_callback_enabled(RT, 505));
	CHECK(fake_cupti_callback_enabled(RT, 506));
	CHECK(fake_cupti_callback_enabled(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
	CHECK(fake_cupti_callback_enabled(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
	CHECK(fake_cupti_callback_enabled(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
	CHECK(fake_cupti_callback_enabled(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
	CHECK(fake_cupti_callback_enabled(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel));
	CHECK(fake_cupti_callback_enabled(DRV, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
	CHECK(fake_cupti_callback_enabled(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020));
	CHECK(fake_cupti_callback_enabled(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020));
	CHECK(!fake_cupti_callback_enabled(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020));
	CHECK(!fake_cupti_callback_enabled(RT,
					   CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000));
	/* Buffers come zeroed; timestamps in CLOCK_MONOTONIC. */
	CHECK_EQ_INT(f.zeroed_attr, 1);
	CHECK_EQ_INT(st->clock, GPU_CLOCK_MONOTONIC);
	before = now_ns();
	ts = fake_cupti_timestamp();
	after = now_ns();
	CHECK(ts >= before && ts <= after);
	CHECK_EQ_INT(thread_named("sbpf-gpu-flush"), 1);
	/* Subscribed under its name (cuptiSubscribe_v2). */
	CHECK_EQ_STR(fake_cupti_subscriber_name(), "scalene-bpf");
	/* The driver calls it once; a second call changes nothing. */
	CHECK_EQ_INT(init(), 1);
	fake_cupti_stats(&f);
	CHECK(f.subscribed);
}

static void test_active_setup(void)
{
	in_child(active_setup, "20");
}

static void *other_thread_launch(void *arg)
{
	fake_cupti_api(RT, 505, 0, 900);
	fake_cupti_api(RT, 505, 1, 900);
	return NULL;
}

/* One probe per outermost traced call; nested driver calls fire none, or
 * an alias when their correlation id differs. */
static void launch_nesting(void)
{
	pthread_t th;

	CHECK_EQ_INT(init(), 1);
	CHECK_EQ_INT(st->api_calls, 0);
	/* <<<>>> in CUDA 13: __cudaLaunchKernel, which enters cuLaunchKernel. */
	fake_cupti_api(RT, 505, 0, 10);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 10);
	CHECK_EQ_INT(st->api_calls, 1);
	/* Another thread's launch is outermost on its own thread. */
	CHECK_EQ_INT(pthread_create(&th, NULL, other_thread_launch, NULL), 0);
	pthread_join(th, NULL);
	CHECK_EQ_INT(st->api_calls, 2);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1, 10);
	fake_cupti_api(RT, 505, 1, 10);
	CHECK_EQ_INT(st->api_aliases, 0);
	/* A nested call with its own id. */
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 0, 20);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, 0, 21);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, 1, 21);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, 1, 20);
	CHECK_EQ_INT(st->api_calls, 3);
	CHECK_EQ_INT(st->api_aliases, 1);
	/* Driver-only launches (Triton, JAX) are outermost themselves. */
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 0, 30);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 1, 30);
	CHECK_EQ_INT(st->api_calls, 4);
	/* An exit whose entry was never seen (the call that ran cuInit) does
	 * not leave the thread believing it is nested. */
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, 1, 1);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 0, 40);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 1, 40);
	CHECK_EQ_INT(st->api_calls, 5);
}

static void test_launch_nesting(void)
{
	in_child(launch_nesting, "20");
}

/* Records flow through the flush thread into batches and counters; every
 * buffer handed to CUPTI is zeroed, reused ones included. */
static void records_flow(void)
{
	struct fake_cupti_stats f;
	int round;

	/* Queued before the flush thread starts: one buffer. */
	queue_kernel(1, 1000, 2000);
	queue_kernel(2, 1500, 2500);
	queue_memcpy(3, 4096, 500, 700);
	queue_kernel(4, 3000, 0); /* unfinished */
	queue_kernel(5, 2600, 2700);
	fake_cupti_drop(5);
	CHECK_EQ_INT(init(), 1);
	CHECK_EQ_INT(wait_for(&st->records, 4), 4);
	CHECK_EQ_INT(wait_for(&st->buffers_completed, 1), 1);
	CHECK_EQ_INT(st->incomplete, 1);
	CHECK_EQ_INT(st->lost, 5);
	CHECK_EQ_INT(st->batches, 1);
	CHECK_EQ_INT(st->first_ns, 500);
	CHECK_EQ_INT(st->last_ns, 2700);
	CHECK_EQ_INT(st->buffers_refused, 0);
	CHECK_EQ_INT(st->buffers_malformed, 0);
	/* More flushes, on reused buffers. */
	for (round = 0; round < 6; round++) {
		queue_kernel(10 + round, 5000 + round, 6000 + round);
		wait_for(&st->records, 5 + round);
	}
	CHECK_EQ_INT(st->records, 10);
	CHECK_EQ_INT(st->batches, 7);
	fake_cupti_stats(&f);
	CHECK_EQ_INT(f.completions, 7);
	CHECK_EQ_INT(f.dirty_buffers, 0);
	CHECK_EQ_INT(f.null_buffers, 0);
	CHECK(f.flushes >= 7);
	CHECK_EQ_INT(f.forced_flushes, 0);
	CHECK_EQ_INT(st->buffers_requested, 7);
	CHECK_EQ_INT(st->buffers_completed, 7);
	/* The exported flush is forced and synchronous. */
	queue_kernel(20, 7000, 0);
	CHECK_EQ_INT(flush(), 0);
	fake_cupti_stats(&f);
	CHECK_EQ_INT(f.forced_flushes, 1);
	/* (the flush thread may have taken it first) */
	CHECK_EQ_INT(wait_for(&st->incomplete, 2), 2);
}

static void test_records_flow(void)
{
	in_child(records_flow, "20");
}

/* A record CUPTI cannot step over ends the walk of its buffer: what came
 * before it is handed out, the buffer is counted as malformed (the records
 * after it are lost with it), and the next buffer is read as usual. */
static void malformed_buffer(void)
{
	const CUpti_Activity bad = { .kind = (CUpti_ActivityKind)0x7fff };

	CHECK_EQ_INT(init(), 1);
	queue_kernel(1, 1000, 2000);
	fake_cupti_record(&bad, sizeof(bad));
	queue_kernel(2, 3000, 4000);
	CHECK_EQ_INT(wait_for(&st->buffers_malformed, 1), 1);
	CHECK_EQ_INT(st->records, 1);
	queue_kernel(3, 5000, 6000);
	CHECK_EQ_INT(wait_for(&st->records, 2), 2);
	CHECK_EQ_INT(st->buffers_malformed, 1);
}

static void test_malformed_buffer(void)
{
	in_child(malformed_buffer, "20");
}

/*
 * The exit handler: in the process that initialised CUDA it stops the
 * flush thread and forces a last flush; in a fork child, which inherits the
 * handler but not CUPTI, it does nothing.  The checker is registered before
 * InitializeInjection, so it runs after the library's handler (LIFO).
 */
static pid_t initialising_pid;

static void check_after_exit(void)
{
	struct fake_cupti_stats f;

	fake_cupti_stats(&f);
	if (getpid() == initialising_pid) {
		CHECK_EQ_INT(st->status, GPU_S_EXITED);
		CHECK_EQ_INT(f.forced_flushes, 1);
		CHECK_EQ_INT(st->records, 1);
		CHECK_EQ_INT(st->incomplete, 1);
		CHECK_EQ_INT(thread_named("sbpf-gpu-flush"), 0);
	} else {
		CHECK_EQ_INT(st->status, GPU_S_ACTIVE);
		CHECK_EQ_INT(f.forced_flushes, 0);
		CHECK_EQ_INT(st->records, 0);
	}
	fflush(NULL);
	_exit(t_checks_failed ? 1 : 0);
}

static void exit_flush(void)
{
	int status = 0;
	pid_t pid;

	initialising_pid = getpid();
	atexit(check_after_exit);
	CHECK_EQ_INT(init(), 1);
	/* Flush period 60 s: only the exit handler hands these out. */
	queue_kernel(1, 100, 200);
	queue_kernel(2, 150, 0);
	fflush(NULL);
	pid = fork();
	if (!pid)
		exit(0);
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ_INT(st->records, 0);
}

static void test_exit_flush(void)
{
	in_child(exit_flush, "60000");
}

static const char *captured_init(int *ret)
{
	static char text[2048];
	struct test_stderr c;

	test_stderr_begin(&c);
	*ret = init();
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

/* Nsight or torch.profiler subscribed first: one line, nothing enabled. */
static void other_subscriber(void)
{
	struct fake_cupti_stats f;
	const char *out;
	int ret;

	fake_cupti_subscribe_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	/* CUPTI names the client already there. */
	fake_cupti_incumbent("CUPTI for torch.profiler");
	out = captured_init(&ret);
	CHECK_EQ_INT(ret, 1);
	CHECK_EQ_INT(st->status, GPU_S_OTHER_SUBSCRIBER);
	CHECK_EQ_INT(st->cupti_error, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	CHECK_EQ_INT(lines(out), 1);
	CHECK(strstr(out, "another CUPTI client (CUPTI for torch.profiler) is active") != NULL);
	fake_cupti_stats(&f);
	CHECK_EQ_INT(f.kinds_enabled, 0);
	CHECK_EQ_INT(f.callbacks_enabled, 0);
	CHECK_EQ_INT(thread_named("sbpf-gpu-flush"), 0);
	CHECK_EQ_INT(flush(), -ENODEV);
	out = captured_init(&ret);
	CHECK_EQ_INT(lines(out), 0);
}

static void test_other_subscriber(void)
{
	in_child(other_subscriber, "20");
}

/* No activity kind accepted: give up and unsubscribe.  One callback id
 * refused: counted, the rest works. */
static void activity_refused(void)
{
	struct fake_cupti_stats f;
	const char *out;
	int ret;

	fake_cupti_enable_result(CUPTI_ERROR_NOT_COMPATIBLE);
	out = captured_init(&ret);
	CHECK_EQ_INT(ret, 1);
	CHECK_EQ_INT(st->status, GPU_S_CUPTI_ERROR);
	CHECK_EQ_INT(st->failed_call, GPU_FAIL_ACTIVITY);
	CHECK_EQ_INT(st->cupti_error, CUPTI_ERROR_NOT_COMPATIBLE);
	CHECK(strstr(out, "cuptiActivityEnable failed") != NULL);
	fake_cupti_stats(&f);
	CHECK(!f.subscribed);
	CHECK_EQ_INT(thread_named("sbpf-gpu-flush"), 0);
}

static void callback_refused(void)
{
	fake_cupti_refuse_callback(RT, 506);
	CHECK_EQ_INT(init(), 1);
	CHECK_EQ_INT(st->status, GPU_S_ACTIVE);
	CHECK_EQ_INT(st->api_failed, 1);
	CHECK(!fake_cupti_callback_enabled(RT, 506));
	CHECK(fake_cupti_callback_enabled(RT, 505));
}

static void test_refusals(void)
{
	in_child(activity_refused, "20");
	in_child(callback_refused, "20");
}

/* A bad SCALENE_BPF_GPU_FLUSH_MS is reported and replaced. */
static void bad_flush_ms(void)
{
	const char *out;
	int ret;

	out = captured_init(&ret);
	CHECK_EQ_INT(st->flush_ms, SCALENE_BPF_GPU_DEFAULT_FLUSH_MS);
	CHECK(strstr(out, "ignoring " SCALENE_BPF_GPU_ENV_FLUSH_MS "=5x") != NULL);
}

static void test_bad_flush_ms(void)
{
	in_child(bad_flush_ms, "5x");
}

/* Waits up to 5 s for the library's status to become want. */
static int wait_status(unsigned int want)
{
	int i;

	for (i = 0; i < 500 && st->status != want; i++)
		usleep(10000);
	return st->status == want;
}

/* Waits up to 5 s for the flush thread to be gone. */
static int flush_thread_gone(void)
{
	int i;

	for (i = 0; i < 500 && thread_named("sbpf-gpu-flush") == 1; i++)
		usleep(10000);
	return thread_named("sbpf-gpu-flush") == 0;
}

/* Runs after the library's exit handler (registered later): a lost CUPTI
 * is not flushed at exit, and the state stays lost. */
static void lost_at_exit(void)
{
	struct fake_cupti_stats f;

	fake_cupti_stats(&f);
	if (f.forced_flushes || st->status != GPU_S_LOST) {
		fprintf(stderr, "lost_at_exit: %llu forced flushes, status %u\n",
			(unsigned long long)f.forced_flushes, st->status);
		_exit(1);
	}
}

/* Another client finalizes CUPTI (torch.profiler's teardown): our next
 * flush fails.  From then on nothing is asked of CUPTI: the flush thread
 * ends, calls are not probed, the exit does not flush, and the state says
 * when and why. */
static void flush_lost(void)
{
	static char text[2048];
	struct fake_cupti_stats f;
	struct test_stderr c;
	uint64_t before, calls, flushes;

	atexit(lost_at_exit);
	CHECK_EQ_INT(init(), 1);
	CHECK_EQ_INT(st->status, GPU_S_ACTIVE);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 1);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 1);
	CHECK_EQ_INT(st->api_calls, 1);
	before = now_ns();
	test_stderr_begin(&c);
	fake_cupti_flush_result(CUPTI_ERROR_INVALID_OPERATION);
	CHECK(wait_status(GPU_S_LOST));
	CHECK(flush_thread_gone());
	test_stderr_end(&c, text, sizeof(text));
	CHECK_EQ_INT(st->failed_call, GPU_FAIL_FLUSH);
	CHECK_EQ_INT(st->cupti_error, CUPTI_ERROR_INVALID_OPERATION);
	CHECK(st->lost_ns >= before && st->lost_ns <= now_ns());
	CHECK(strstr(text, "stops here: cuptiActivityFlushAll failed") != NULL);
	CHECK_EQ_INT(lines(text), 1);
	fake_cupti_stats(&f);
	flushes = f.flushes;
	usleep(100000);
	fake_cupti_stats(&f);
	CHECK_EQ_INT(f.flushes, flushes);
	calls = st->api_calls;
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0, 2);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1, 2);
	CHECK_EQ_INT(st->api_calls, calls);
	CHECK_EQ_INT(flush(), -ENODEV);
	/* A fatal error after it changes nothing. */
	fake_cupti_fatal_error(CUPTI_ERROR_UNKNOWN, "late");
	CHECK_EQ_INT(st->failed_call, GPU_FAIL_FLUSH);
}

/* CUPTI's fatal-error callback: the same stop, its message said. */
static void fatal_error(void)
{
	static char text[2048];
	struct test_stderr c;
	int delivered;

	atexit(lost_at_exit);
	CHECK_EQ_INT(init(), 1);
	test_stderr_begin(&c);
	delivered = fake_cupti_fatal_error(CUPTI_ERROR_UNKNOWN, "device lost");
	test_stderr_end(&c, text, sizeof(text));
	CHECK_EQ_INT(delivered, 1);
	CHECK_EQ_INT(st->status, GPU_S_LOST);
	CHECK_EQ_INT(st->failed_call, GPU_FAIL_FATAL);
	CHECK_EQ_INT(st->cupti_error, CUPTI_ERROR_UNKNOWN);
	CHECK(st->lost_ns > 0);
	CHECK(strstr(text, "CUPTI fatal error (device lost") != NULL);
	CHECK(flush_thread_gone());
	CHECK_EQ_INT(flush(), -ENODEV);
}

/*
 * tools/gpu-check's check without BPF: probelog.c, loaded ahead of the
 * library (as LD_PRELOAD puts it), takes the library's probe calls (made
 * through its PLT) and writes each as a JSON line.  The child makes a launch
 * with a nested driver call, hands over its kernel and exits; the parent
 * reads the log.
 */
static char probe_log_path[64];

/* Whether the log's line that starts with start also holds want. */
static int line_has(const char *text, const char *start, const char *want)
{
	const char *l = strstr(text, start), *end, *at;

	if (!l)
		return 0;
	end = strchr(l, '\n');
	at = strstr(l, want);
	return at && (!end || at < end);
}

/* One driver call, entry and exit, with its parameters and result. */
static void driver_call(uint32_t cbid, uint32_t corr, const void *params, CUresult ret)
{
	fake_cupti_api_call(DRV, cbid, 0, corr, params, &ret);
	fake_cupti_api_call(DRV, cbid, 1, corr, params, &ret);
}

/*
 * Virtual memory management, which CUPTI has no MEMORY2 record of: a
 * device allocation and a pinned host one made by cuMemCreate, a failed
 * create, the device one released (its size from the create), and the
 * release of a handle made before we subscribed (nothing known: no record).
 */
static void vmm_calls(void)
{
	CUmemGenericAllocationHandle dev = 0x5000, host = 0x6000, none = 0, old = 0x7000;
	CUmemAllocationProp on_dev = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				       .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
						     .id = 1 } };
	CUmemAllocationProp on_host = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
					.location = { .type = CU_MEM_LOCATION_TYPE_HOST } };
	cuMemCreate_params create_dev = { .handle = &dev, .size = 20 << 20, .prop = &on_dev };
	cuMemCreate_params create_host = { .handle = &host, .size = 2 << 20, .prop = &on_host };
	cuMemCreate_params create_failed = { .handle = &none, .size = 4 << 20, .prop = &on_dev };
	cuMemRelease_params release_dev = { .handle = dev }, release_old = { .handle = old };
	uint64_t before = st->records;

	CHECK(fake_cupti_callback_enabled(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemCreate));
	CHECK(fake_cupti_callback_enabled(DRV, CUPTI_DRIVER_TRACE_CBID_cuMemRelease));
	driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 20, &create_dev, CUDA_SUCCESS);
	driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 21, &create_host, CUDA_SUCCESS);
	driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, 22, &create_failed,
		    CUDA_ERROR_OUT_OF_MEMORY);
	driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, 23, &release_dev, CUDA_SUCCESS);
	driver_call(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, 24, &release_old, CUDA_SUCCESS);
	CHECK_EQ_INT(st->records - before, 3);
}

static void probe_log_run(void)
{
	CHECK_EQ_INT(init(), 1);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, 7);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 8);
	fake_cupti_api(DRV, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 8);
	fake_cupti_api(RT, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, 7);
	fake_cupti_kernel_named(8, 1000, 3000, "_Z9gt_kernelv");
	CHECK_EQ_INT(wait_for(&st->records, 1), 1);
	vmm_calls();
}

static void test_probe_log(void)
{
	char line[1024], *text = NULL;
	size_t len = 0, got;
	FILE *f;
	int fd;

	snprintf(probe_log_path, sizeof(probe_log_path), "/tmp/probelog-XXXXXX");
	fd = mkstemp(probe_log_path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	setenv("GPU_CHECK_PROBE_LOG", probe_log_path, 1);
	if (!dlopen(PROBELOG_SO_PATH, RTLD_NOW | RTLD_GLOBAL)) {
		CHECK(!"probelog.so loads");
		unlink(probe_log_path);
		return;
	}
	in_child(probe_log_run, "20");
	f = fopen(probe_log_path, "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f)) {
		got = strlen(line);
		text = realloc(text, len + got + 1);
		memcpy(text + len, line, got + 1);
		len += got;
	}
	if (f)
		fclose(f);
	unlink(probe_log_path);
	CHECK(text != NULL);
	if (!text)
		return;
	/* The launch once (the driver call inside it as its alias), its
	 * kernel with the name read in-process, the state at start and
	 * after the flush at exit. */
	CHECK(strstr(text, "{\"ev\":\"init\"") &&
	      strstr(text, "\"state\":{\"abi\":2,\"status\":1,"));
	CHECK(strstr(text, "\"corr\":7,\"cbid\":211,\"domain\":2,\"class\":1}"));
	CHECK(strstr(text, "\"inner\":8,\"outer\":7}"));
	CHECK(strstr(text, "{\"ev\":\"rec\",\"kind\":1,\"corr\":8,\"start\":1000,\"end\":3000,"));
	CHECK(strstr(text, "\"name\":\"_Z9gt_kernelv\"}"));
	/* The memory of virtual memory management, on its calls' ids: the
	 * device's (memory kind 3, device 1) and the host's (pinned, 2),
	 * then the device's released with its size. */
	CHECK(line_has(text, "{\"ev\":\"rec\",\"kind\":4,\"corr\":20,",
		       "\"bytes\":20971520,\"flags\":32,\"copy_kind\":0,\"memory_kind\":3,"
		       "\"stream\":4294967295,\"device\":1,"));
	CHECK(line_has(text, "{\"ev\":\"rec\",\"kind\":4,\"corr\":21,",
		       "\"bytes\":2097152,\"flags\":32,\"copy_kind\":0,\"memory_kind\":2,"));
	CHECK(line_has(text, "{\"ev\":\"rec\",\"kind\":5,\"corr\":23,",
		       "\"bytes\":20971520,\"flags\":32,\"copy_kind\":0,\"memory_kind\":3,"));
	CHECK(!strstr(text, "{\"ev\":\"rec\",\"kind\":4,\"corr\":22,"));
	CHECK(!strstr(text, "{\"ev\":\"rec\",\"kind\":5,\"corr\":24,"));
	CHECK(strstr(text, "{\"ev\":\"exit\"") && strstr(text, "\"status\":4,") &&
	      strstr(text, "\"records\":4,"));
	free(text);
}

static void test_cupti_lost(void)
{
	in_child(flush_lost, "20");
	in_child(fatal_error, "20");
}

int main(void)
{
	RUN_TEST(test_active_setup);
	RUN_TEST(test_launch_nesting);
	RUN_TEST(test_records_flow);
	RUN_TEST(test_malformed_buffer);
	RUN_TEST(test_exit_flush);
	RUN_TEST(test_other_subscriber);
	RUN_TEST(test_refusals);
	RUN_TEST(test_bad_flush_ms);
	RUN_TEST(test_cupti_lost);
	RUN_TEST(test_probe_log);
	return test_summary("gpu_inject");
}

#endif /* GPU_SKIP_REASON */
