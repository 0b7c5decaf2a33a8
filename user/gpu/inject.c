// SPDX-License-Identifier: BSD-2-Clause
/*
 * libscalene-bpf-gpu.so: the CUPTI injection library (gpu.h describes its
 * ABI).  The CUDA driver loads it through CUDA_INJECTION64_PATH and calls
 * InitializeInjection() inside the first cuInit(): no change to the program,
 * whichever runtime (static or shared cudart, PyTorch, CuPy, Triton) it uses.
 *
 * What runs on the application's threads: the API callback (a thread-local
 * depth counter, one probe at the outermost entry, one relaxed atomic
 * add) and CUPTI's buffer request, which pops a pre-zeroed buffer from a
 * free list.  Nothing else: no flush, no decoding, no allocation per launch.
 *
 * Hand-over of the records.  Completed buffers are decoded (gpurec.c) into
 * batches of SCALENE_BPF_GPU_BATCH fixed-size records on the stack of the
 * completing thread, and each batch is passed to the gpu_records probe as
 * (pointer, count).  The BPF program attached there copies the array into
 * its ring buffer while the thread is stopped at the probe, so the loader
 * receives GPU records in the same stream as every other event and nothing
 * has to stay alive in the target afterwards.  A ring in the target's memory
 * polled with process_vm_readv was the alternative: it needs a consumer
 * index written back into the target, and what is left in it when the
 * process exits is gone before the loader reads it.  The probe costs one
 * uprobe trap per batch, not per launch, on a thread that is not the
 * application's (the flush thread or CUPTI's own).  With nothing attached
 * the probe is a call to an empty function and the records only feed the
 * counters.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "gpu.h"
#include "cuptiload.h"
#include "probes.h"
#include "gpurec.h"
#include "vmm.h"

#define SBG_EXPORT __attribute__((visibility("default")))

/* 8 MiB: about 38 000 kernel records.  Large buffers mean few requests on
 * the application thread; the flush thread hands them back long before they
 * fill unless the program launches over 190 000 kernels a second. */
#define BUF_BYTES (8u << 20)
/* Buffers kept for reuse; beyond that, completed buffers are unmapped. */
#define BUF_POOL 8

SBG_EXPORT _Alignas(64) struct scalene_bpf_gpu_state scalene_bpf_gpu_state = {
	.magic = SCALENE_BPF_GPU_MAGIC,
	.abi = SCALENE_BPF_GPU_ABI,
	.size = sizeof(struct scalene_bpf_gpu_state),
	.built_version = CUPTI_API_VERSION,
};
#define state scalene_bpf_gpu_state

/* CUPTI's functions, from the libcupti cupti_load() found. */
static struct cupti_api cupti;
static CUpti_SubscriberHandle subscriber;
static pid_t init_pid;
/* CUPTI stopped answering (lose): nothing more is asked of it. */
static int lost;

/* Class of each traced callback id, filled from gpu_api_table before the
 * callbacks are enabled; read on every traced call. */
static uint8_t class_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static uint8_t class_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];

/* Nesting of traced calls on this thread: cudaLaunchKernel enters
 * cuLaunchKernel, and only the outermost call is the launch site. */
struct api_tls {
	uint32_t depth;
	uint32_t outer;	  /* correlation id of the outermost call */
	int outer_probed; /* ... and whether it was probed */
	uint64_t rng;	  /* this thread's draws for sampling calls */
};
static __thread struct api_tls api_tls;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *pool[BUF_POOL];
static unsigned int pool_len;

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cond;
static pthread_t flush_thread;
static int flush_running, flush_stop;

/*
 * The probes (gpu.h), one exported function each, as in the allocation
 * sampler: the call sites carry no probe arguments.
 */
SCALENE_BPF_PROBE_FN void scalene_bpf_probe_gpu_init(void *st, unsigned int abi)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_gpu_api(uint64_t correlation_id, unsigned int cbid,
						    unsigned int domain, unsigned int class)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_gpu_api_alias(uint64_t inner, uint64_t outer)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_gpu_records(const struct scalene_bpf_gpu_rec *recs,
							uint64_t count, void *st)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_gpu_name(uint64_t name)
{
	SCALENE_BPF_PROBE_BODY;
}

SCALENE_BPF_PROBE_FN void scalene_bpf_probe_gpu_exit(void *st)
{
	SCALENE_BPF_PROBE_BODY;
}

static void state_add(__u64 *field, uint64_t v)
{
	if (v)
		__atomic_fetch_add(field, v, __ATOMIC_RELAXED);
}

static void state_min(__u64 *field, uint64_t v)
{
	__u64 cur = __atomic_load_n(field, __ATOMIC_RELAXED);

	while (v && (!cur || v < cur) &&
	       !__atomic_compare_exchange_n(field, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void state_max(__u64 *field, uint64_t v)
{
	__u64 cur = __atomic_load_n(field, __ATOMIC_RELAXED);

	while (v > cur &&
	       !__atomic_compare_exchange_n(field, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Calls probed when sampling: one bit per correlation id, for the last
 * 2^20 ids (they grow by one per call in a process); read when the
 * records are decoded. */
#define PROBED_BITS (1u << 20)
static uint8_t probed_bits[PROBED_BITS / 8];

static void mark_probed(uint32_t corr, int on)
{
	uint8_t *b = &probed_bits[(corr % PROBED_BITS) / 8], bit = 1u << (corr % 8);

	if (on)
		__atomic_fetch_or(b, bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(b, (uint8_t)~bit, __ATOMIC_RELAXED);
}

static int was_probed(uint32_t corr)
{
	return __atomic_load_n(&probed_bits[(corr % PROBED_BITS) / 8], __ATOMIC_RELAXED) &
	       (1u << (corr % 8));
}

/* Whether this call is probed: 1 in state.call_sample, at random (a fixed
 * stride could keep in step with a loop that launches several kernels). */
static int draw(struct api_tls *t)
{
	uint64_t x = t->rng;

	if (state.call_sample <= 1)
		return 1;
	if (!x)
		/* The thread id by its system call: gettid() is glibc 2.30's. */
		x = ((uint64_t)syscall(SYS_gettid) << 32) ^ (uint64_t)(uintptr_t)t ^
		    0x9e3779b97f4a7c15ULL;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->rng = x;
	return (x >> 11) % state.call_sample == 0;
}

static void lose(enum gpu_failed_call call, CUptiResult res, const char *detail);

static void emit_batch(const struct scalene_bpf_gpu_rec *in, unsigned int n, void *ctx);

/* A cuMemCreate or cuMemRelease just returned: its record, handed out at
 * once (CUPTI makes none). */
static void vmm_record(CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct scalene_bpf_gpu_rec r;
	struct timespec ts;

	clock_gettime(state.clock == GPU_CLOCK_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME, &ts);
	if (!vmm_call_record(cbid, cb, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
			     &r))
		return;
	emit_batch(&r, 1, NULL);
	state_add(&state.records, 1);
	state_add(&state.batches, 1);
	state_min(&state.first_ns, r.start_ns);
	state_max(&state.last_ns, r.end_ns);
}

static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const void *data)
{
	const CUpti_CallbackData *cb = data;
	struct api_tls *t = &api_tls;
	unsigned int class = 0;

	/* The state domain's data is not an API call's. */
	if (domain == CUPTI_CB_DOMAIN_STATE) {
		const CUpti_StateData *sd = data;

		if (cbid == CUPTI_CBID_STATE_FATAL_ERROR)
			lose(GPU_FAIL_FATAL, sd ? sd->notification.result : CUPTI_ERROR_UNKNOWN,
			     sd ? sd->notification.message : NULL);
		return;
	}
	/* Calls made once collecting stopped bring no records: not probed. */
	if (__atomic_load_n(&lost, __ATOMIC_ACQUIRE))
		return;
	if (cb->callbackSite != CUPTI_API_ENTER) {
		/* An exit whose entry came before the callbacks were enabled
		 * (the call that ran cuInit) finds depth 0. */
		if (t->depth)
			t->depth--;
		if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
			vmm_record(cbid, cb);
		return;
	}
	if (t->depth++) {
		if (cb->correlationId != t->outer) {
			if (state.call_sample > 1)
				mark_probed(cb->correlationId, t->outer_probed);
			if (t->outer_probed) {
				scalene_bpf_probe_gpu_api_alias(cb->correlationId, t->outer);
				__atomic_fetch_add(&state.api_aliases, 1, __ATOMIC_RELAXED);
			}
		}
		return;
	}
	t->outer = cb->correlationId;
	t->outer_probed = draw(t);
	__atomic_fetch_add(&state.api_calls, 1, __ATOMIC_RELAXED);
	if (state.call_sample > 1)
		mark_probed(cb->correlationId, t->outer_probed);
	if (!t->outer_probed)
		return;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		class = class_runtime[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		class = class_driver[cbid];
	scalene_bpf_probe_gpu_api(cb->correlationId, cbid, domain, class);
	__atomic_fetch_add(&state.calls_probed, 1, __ATOMIC_RELAXED);
}

/* Runs on the application thread that needs a buffer: a pop from the pool,
 * or a fresh mapping (zero pages, as ZEROED_OUT_ACTIVITY_BUFFER promises
 * CUPTI, so that it does not clear 8 MiB on this thread). */
static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint8_t *buf = NULL;

	pthread_mutex_lock(&pool_lock);
	if (pool_len)
		buf = pool[--pool_len];
	pthread_mutex_unlock(&pool_lock);
	if (!buf) {
		buf = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);
		if (buf == MAP_FAILED) {
			/* CUPTI drops records and counts them (state.lost). */
			buf = NULL;
			state_add(&state.buffers_refused, 1);
		}
	}
	if (buf)
		state_add(&state.buffers_requested, 1);
	*buffer = buf;
	*size = buf ? BUF_BYTES : 0;
	*max_records = 0;
}

/* Kernel names announced (gpu_name) before the first batch that uses
 * them: each CUPTI-owned name is one pointer for the process's life.  An
 * open-addressing set on the flushing threads; when it is full, names are
 * announced again (a duplicate costs a probe, never a wrong name). */
#define NAMES_SET 4096
static uint64_t names_set[NAMES_SET];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

static int name_is_new(uint64_t name)
{
	unsigned int i, h = (unsigned int)((name >> 3) * 0x9e3779b1u) % NAMES_SET;
	int fresh = 1;

	pthread_mutex_lock(&names_lock);
	for (i = 0; i < NAMES_SET; i++, h = (h + 1) % NAMES_SET) {
		if (names_set[h] == name) {
			fresh = 0;
			break;
		}
		if (!names_set[h]) {
			names_set[h] = name;
			break;
		}
	}
	pthread_mutex_unlock(&names_lock);
	return fresh;
}

static void emit_batch(const struct scalene_bpf_gpu_rec *in, unsigned int n, void *ctx)
{
	struct scalene_bpf_gpu_rec marked[SCALENE_BPF_GPU_BATCH];
	const struct scalene_bpf_gpu_rec *recs = in;
	unsigned int i;

	if (state.call_sample > 1 && n <= SCALENE_BPF_GPU_BATCH) {
		memcpy(marked, in, n * sizeof(*in));
		for (i = 0; i < n; i++) {
			if (!was_probed(marked[i].correlation_id))
				marked[i].flags |= GPU_REC_F_UNSAMPLED;
		}
		recs = marked;
	}
	for (i = 0; i < n; i++) {
		if (recs[i].kind == GPU_REC_KERNEL && recs[i].name && name_is_new(recs[i].name))
			scalene_bpf_probe_gpu_name(recs[i].name);
	}
	scalene_bpf_probe_gpu_records(recs, n, &state);
}

/* Runs on the thread that flushed (ours, CUPTI's worker, or the exiting
 * one): decode, hand out, count, then give the buffer back zeroed. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	struct gpurec_counts c = { 0 };
	size_t dropped = 0;

	if (gpurec_walk(buffer, valid, cupti.ActivityGetNextRecord, emit_batch, NULL, &c) < 0)
		state_add(&state.buffers_malformed, 1);
	state_add(&state.records, c.records);
	state_add(&state.batches, c.batches);
	state_add(&state.incomplete, c.incomplete);
	state_add(&state.invalid, c.invalid);
	state_add(&state.other_kinds, c.other_kinds);
	state_min(&state.first_ns, c.first_ns);
	state_max(&state.last_ns, c.last_ns);
	if (cupti.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
		state_add(&state.lost, dropped);
	state_add(&state.buffers_completed, 1);
	if (!buffer)
		return;
	/* Private anonymous pages read back as zeros after MADV_DONTNEED. */
	madvise(buffer, size, MADV_DONTNEED);
	pthread_mutex_lock(&pool_lock);
	if (size == BUF_BYTES && pool_len < BUF_POOL) {
		pool[pool_len++] = buffer;
		buffer = NULL;
	}
	pthread_mutex_unlock(&pool_lock);
	if (buffer)
		munmap(buffer, size);
}

/* CUPTI's timestamps in CLOCK_MONOTONIC, bpf_ktime_get_ns()'s clock, so
 * that GPU intervals line up with the CPU samples. */
static uint64_t CUPTIAPI monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Hands completed buffers back every flush_ms.  cuptiActivityFlushPeriod
 * is no substitute: it returns only full buffers. */
static void *flush_main(void *arg)
{
	struct timespec deadline;
	CUptiResult res;

	pthread_mutex_lock(&flush_lock);
	while (!flush_stop) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_nsec += (long)state.flush_ms * 1000000L;
		deadline.tv_sec += deadline.tv_nsec / 1000000000L;
		deadline.tv_nsec %= 1000000000L;
		while (!flush_stop &&
		       pthread_cond_timedwait(&flush_cond, &flush_lock, &deadline) != ETIMEDOUT)
			;
		if (flush_stop || __atomic_load_n(&lost, __ATOMIC_ACQUIRE))
			break;
		pthread_mutex_unlock(&flush_lock);
		res = cupti.ActivityFlushAll(0);
		if (res != CUPTI_SUCCESS)
			lose(GPU_FAIL_FLUSH, res, NULL);
		pthread_mutex_lock(&flush_lock);
	}
	pthread_mutex_unlock(&flush_lock);
	return NULL;
}

static int flush_start(void)
{
	pthread_condattr_t attr;
	sigset_t all, old;
	int err;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&flush_cond, &attr);
	pthread_condattr_destroy(&attr);
	/* The program's signals go to its own threads, not to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&flush_thread, NULL, flush_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	pthread_setname_np(flush_thread, "sbpf-gpu-flush");
	flush_running = 1;
	return 0;
}

static void flush_join(void)
{
	if (!flush_running)
		return;
	pthread_mutex_lock(&flush_lock);
	flush_stop = 1;
	pthread_cond_signal(&flush_cond);
	pthread_mutex_unlock(&flush_lock);
	pthread_join(flush_thread, NULL);
	flush_running = 0;
}

/*
 * Registered inside cuInit, so it runs before the handlers registered
 * earlier and before _dl_fini unloads libcuda.  A fork child inherits the
 * handler but neither CUPTI's state nor the flush thread: it does nothing
 * there.  A forced flush also returns work still running, with end = 0;
 * gpurec drops those records and counts them.
 */
static void at_exit(void)
{
	if (getpid() != init_pid)
		return;
	flush_join();
	if (!__atomic_load_n(&lost, __ATOMIC_ACQUIRE)) {
		cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		state.status = GPU_S_EXITED;
	}
	scalene_bpf_probe_gpu_exit(&state);
}

static void say_off(const char *what, CUptiResult res)
{
	const char *msg = NULL;

	if (cupti.GetResultString(res, &msg) != CUPTI_SUCCESS || !msg)
		msg = "unknown error";
	fprintf(stderr, "scalene-bpf: no GPU profile for process %d: %s failed: %s (%d)\n",
		(int)getpid(), what, msg, (int)res);
}

static void fail(enum gpu_failed_call call, const char *what, CUptiResult res)
{
	state.failed_call = call;
	state.cupti_error = res;
	state.status = GPU_S_CUPTI_ERROR;
	say_off(what, res);
}

/*
 * CUPTI went away under us: a flush failed mid-run (another client's
 * cuptiFinalize, torch.profiler's teardown among them) or CUPTI reported a
 * fatal error.  Whatever is touched then may be another client's state, so
 * nothing more is asked of CUPTI: the flush thread ends, calls are no
 * longer probed, the exit does not flush.  The loader hears it at once
 * (the init probe again, with the new status), and the profile says from
 * when.  Once.
 */
static void lose(enum gpu_failed_call call, CUptiResult res, const char *detail)
{
	const char *msg = NULL;

	if (__atomic_exchange_n(&lost, 1, __ATOMIC_ACQ_REL))
		return;
	state.failed_call = call;
	state.cupti_error = res;
	state.lost_ns = monotonic_ns();
	state.status = GPU_S_LOST;
	if (call == GPU_FAIL_FLUSH && (cupti.GetResultString(res, &msg) != CUPTI_SUCCESS || !msg))
		msg = "unknown error";
	fprintf(stderr,
		"scalene-bpf: the GPU profile of process %d stops here: %s (%s, %d); another "
		"CUPTI client (torch.profiler, Nsight) may have finalized CUPTI; nothing more is "
		"collected from it\n",
		(int)getpid(),
		call == GPU_FAIL_FLUSH ? "cuptiActivityFlushAll failed" : "CUPTI fatal error",
		call == GPU_FAIL_FLUSH ? msg
		: detail	       ? detail
				       : "no message",
		(int)res);
	scalene_bpf_probe_gpu_init(&state, SCALENE_BPF_GPU_ABI);
}

static void read_env(void)
{
	const char *s = getenv(SCALENE_BPF_GPU_ENV_FLUSH_MS);
	char *end;
	long v;

	state.flush_ms = SCALENE_BPF_GPU_DEFAULT_FLUSH_MS;
	state.call_sample = 1;
	if (s && *s) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || *end || v < 10 || v > 60000)
			fprintf(stderr, "scalene-bpf: ignoring %s=%s (10 to 60000 ms), using %d\n",
				SCALENE_BPF_GPU_ENV_FLUSH_MS, s, SCALENE_BPF_GPU_DEFAULT_FLUSH_MS);
		else
			state.flush_ms = (__u32)v;
	}
	s = getenv(SCALENE_BPF_GPU_ENV_CALL_SAMPLE);
	if (s && *s) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || *end || v < 1 || v > SCALENE_BPF_GPU_CALL_SAMPLE_MAX)
			fprintf(stderr,
				"scalene-bpf: ignoring %s=%s (1 to %d), probing every call\n",
				SCALENE_BPF_GPU_ENV_CALL_SAMPLE, s,
				SCALENE_BPF_GPU_CALL_SAMPLE_MAX);
		else
			state.call_sample = (__u32)v;
	}
}

/* Enables the API callbacks of gpu_api_table; a CUPTI that does not know
 * one (older than the headers) refuses it, which is counted, not fatal. */
static void enable_api_callbacks(void)
{
	const struct gpu_api *a;
	unsigned int i;

	for (i = 0; i < gpu_api_count; i++) {
		a = &gpu_api_table[i];
		if (a->domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
		    a->cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
			class_runtime[a->cbid] = (uint8_t)a->class;
		else if (a->domain == CUPTI_CB_DOMAIN_DRIVER_API &&
			 a->cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
			class_driver[a->cbid] = (uint8_t)a->class;
	}
	for (i = 0; i < gpu_api_count; i++) {
		a = &gpu_api_table[i];
		if (cupti.EnableCallback(1, subscriber, a->domain, a->cbid) == CUPTI_SUCCESS)
			state.api_callbacks++;
		else
			state.api_failed++;
	}
}

static CUptiResult enable_activity(void)
{
	CUptiResult res, last = CUPTI_SUCCESS;
	unsigned int i;

	for (i = 0; i < gpurec_nr_kinds; i++) {
		res = cupti.ActivityEnable(gpurec_kinds[i].kind);
		if (res == CUPTI_SUCCESS)
			state.kinds |= gpurec_kinds[i].bit;
		else
			last = res;
	}
	return state.kinds ? CUPTI_SUCCESS : last;
}

/* Two buffers ready before the first launch: the first requests then cost
 * the application thread a pop, not a system call. */
static void pool_fill(void)
{
	uint8_t *buf;

	while (pool_len < 2) {
		buf = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			   0);
		if (buf == MAP_FAILED)
			return;
		pool[pool_len++] = buf;
	}
}

static void set_activity_attributes(void)
{
	uint8_t zeroed = 1;
	size_t sz = sizeof(zeroed);

	/* Our buffers come zeroed (fresh or MADV_DONTNEED): CUPTI need not
	 * clear them on the application thread. */
	cupti.ActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &sz, &zeroed);
	if (cupti.ActivityRegisterTimestampCallback(monotonic_ns) == CUPTI_SUCCESS)
		state.clock = GPU_CLOCK_MONOTONIC;
}

/* Room for the name CUPTI gives of a client already subscribed. */
#ifdef CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN
#define CUPTI_OLD_SUBSCRIBER_NAME_MIN CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN
#else
#define CUPTI_OLD_SUBSCRIBER_NAME_MIN 64
#endif

/* Subscribes under our name where the CUPTI can take one; refused, the
 * client already there is named in incumbent ("" when CUPTI does not say). */
static CUptiResult subscribe(char *incumbent, size_t n)
{
	incumbent[0] = 0;
#ifdef CUPTI_SUBSCRIBER_NAME_MAX_LEN
	if (cupti.Subscribe_v2) {
		CUpti_SubscriberParams p;

		memset(&p, 0, sizeof(p));
		p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
		p.subscriberName = "scalene-bpf";
		p.oldSubscriberName = incumbent;
		p.oldSubscriberSize = n;
		return cupti.Subscribe_v2(&subscriber, on_api, NULL, &p);
	}
#endif
	return cupti.Subscribe(&subscriber, on_api, NULL);
}

/*
 * Called by the driver inside cuInit(), once per process, on the thread
 * that initialises CUDA.  CUPTI is opened first (cuptiload.h: the one that
 * goes with the program's CUDA).  Never fails the program: every error leaves CUDA
 * as it would be without us.  The return value is not documented; NVIDIA's
 * samples return 1.
 */
SBG_EXPORT int InitializeInjection(void)
{
	static int entered;
	enum gpu_cupti_from from = GPU_CUPTI_UNKNOWN;
	char path[4096], why[1024], incumbent[CUPTI_OLD_SUBSCRIBER_NAME_MIN];
	CUptiResult res;
	uint32_t version = 0;

	if (__atomic_exchange_n(&entered, 1, __ATOMIC_ACQ_REL))
		return 1;
	init_pid = getpid();
	state.pid = (__u32)init_pid;
	if (cupti_load(&cupti, &from, path, sizeof(path), why, sizeof(why))) {
		state.status = GPU_S_NO_CUPTI;
		fprintf(stderr, "scalene-bpf: no GPU profile for process %d: %s\n", (int)getpid(),
			why);
		goto out;
	}
	state.cupti_from = from;
	if (cupti.GetVersion(&version) == CUPTI_SUCCESS)
		state.cupti_version = version;
	read_env();

	res = subscribe(incumbent, sizeof(incumbent));
	if (res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		state.status = GPU_S_OTHER_SUBSCRIBER;
		state.failed_call = GPU_FAIL_SUBSCRIBE;
		state.cupti_error = res;
		incumbent[sizeof(incumbent) - 1] = 0;
		fprintf(stderr,
			"scalene-bpf: no GPU profile for process %d: another CUPTI client (%s) is "
			"active, and CUPTI allows one\n",
			(int)getpid(), incumbent[0] ? incumbent : "Nsight, torch.profiler, ...");
		goto out;
	}
	if (res != CUPTI_SUCCESS) {
		fail(GPU_FAIL_SUBSCRIBE, "cuptiSubscribe", res);
		goto out;
	}
	set_activity_attributes();
	pool_fill();
	res = cupti.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (res != CUPTI_SUCCESS) {
		fail(GPU_FAIL_CALLBACKS, "cuptiActivityRegisterCallbacks", res);
		cupti.Unsubscribe(subscriber);
		goto out;
	}
	res = enable_activity();
	if (res != CUPTI_SUCCESS) {
		fail(GPU_FAIL_ACTIVITY, "cuptiActivityEnable", res);
		cupti.Unsubscribe(subscriber);
		goto out;
	}
	/* Without launch callbacks the device times are still collected; they
	 * go to no line. */
	enable_api_callbacks();
	if (!state.api_callbacks)
		state.failed_call = GPU_FAIL_ENABLE_API;
	/* CUPTI's word that it stopped; a CUPTI without it still fails the
	 * flushes. */
	cupti.EnableCallback(1, subscriber, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
	/* Without the thread, buffers come back when full and at exit. */
	if (flush_start())
		state.failed_call = GPU_FAIL_THREAD;
	atexit(at_exit);
	/* Unless it was lost already (a flush fails within flush_ms). */
	if (!__atomic_load_n(&lost, __ATOMIC_ACQUIRE))
		state.status = GPU_S_ACTIVE;
out:
	scalene_bpf_probe_gpu_init(&state, SCALENE_BPF_GPU_ABI);
	return 1;
}

/*
 * Forces a flush now: for exits that skip atexit handlers (os._exit, as in
 * every multiprocessing fork child).  Returns 0, or -ENODEV when CUPTI is not
 * collecting in this process.
 */
SBG_EXPORT int scalene_bpf_gpu_flush(void)
{
	if (state.status != GPU_S_ACTIVE || getpid() != init_pid)
		return -ENODEV;
	return cupti.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ? 0 : -EIO;
}
