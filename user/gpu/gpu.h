/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ABI of libscalene-bpf-gpu.so, the CUPTI injection library that the CUDA
 * driver loads into a program through CUDA_INJECTION64_PATH: its probes,
 * the records it hands out and its state block.  Fixed-width fields only:
 * BPF and user space both include this file.
 *
 * Life cycle.  The driver calls InitializeInjection() inside the process's
 * first cuInit(), on the thread that called it.  Without a driver cuInit()
 * never runs and the library is never mapped.  InitializeInjection()
 * subscribes to CUPTI (one subscriber per process: under Nsight or
 * torch.profiler it gives up, says so once on stderr and in the state
 * block, and leaves the program alone), enables the activity kinds of
 * gpurec.h and the API callbacks of gpu_api_table, starts a thread that
 * flushes CUPTI's buffers every SCALENE_BPF_GPU_FLUSH_MS (default 200) ms
 * and registers an atexit handler that forces a last flush.
 *
 * Probes (probes.h: functions named scalene_bpf_probe_<name>, arguments in
 * order):
 *
 *   gpu_init(state, abi)	InitializeInjection() ran: `state` is the
 *				address of scalene_bpf_gpu_state (its `status`
 *				says whether CUPTI is collecting), `abi` is
 *				SCALENE_BPF_GPU_ABI.
 *   gpu_api(correlation_id, cbid, domain, class)
 *				at the entry of a traced CUDA API call (kernel
 *				and graph launches, copies, memsets, device
 *				allocations), before the call does anything, on
 *				the calling thread: the launching Python frame
 *				is on the stack.  `correlation_id` is the one
 *				the activity records of the work carry; `cbid`
 *				and `domain` are CUPTI's callback id and domain
 *				(1 driver, 2 runtime); `class` is enum
 *				gpu_api_class.  A runtime call that enters the
 *				driver fires only the outermost probe.
 *   gpu_api_alias(inner, outer)
 *				a nested driver call had another correlation id
 *				than the outer call whose probe fired: records
 *				carrying `inner` belong to `outer`'s launch site.
 *   gpu_records(recs, count, state)
 *				`count` (1..SCALENE_BPF_GPU_BATCH) decoded
 *				records at `recs`, an array of struct
 *				scalene_bpf_gpu_rec.  The array is only valid
 *				during the probe: the BPF program copies it out
 *				(see "hand-over" in inject.c).  Fired from the
 *				thread that completed a CUPTI buffer (the flush
 *				thread, CUPTI's own or the exiting one), never
 *				per launch.
 *   gpu_name(name)		before the first batch whose kernel records carry
 *				`name` (the address of a kernel's mangled name,
 *				owned by CUPTI for the process's life): the BPF
 *				program copies the string.  Once per name, unless
 *				the library's set of names is full.
 *   gpu_exit(state)		after the forced flush at a normal exit: the
 *				state block is final.
 *
 * Exported functions: InitializeInjection() (the driver's entry point) and
 * int scalene_bpf_gpu_flush(void), a forced flush for exits that skip atexit
 * handlers (os._exit): 0, or -ENODEV when CUPTI is not collecting here.
 *
 * Arguments are 64-bit except `abi`, `cbid`, `domain`, `class` (32-bit).
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns()'s clock) when
 * state.clock says SBG_CLOCK_MONOTONIC, else CUPTI's default, CLOCK_REALTIME.
 */
#ifndef SCALENE_BPF_GPU_H
#define SCALENE_BPF_GPU_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define SCALENE_BPF_GPU_SONAME "libscalene-bpf-gpu.so"
#define SCALENE_BPF_GPU_STATE_SYM "scalene_bpf_gpu_state"

#define SCALENE_BPF_GPU_MAGIC 0x53475055u /* "UPGS" */
#define SCALENE_BPF_GPU_ABI 2

/* Records per gpu_records probe: bounds the BPF copy loop. */
#define SCALENE_BPF_GPU_BATCH 64

/* Environment read by InitializeInjection(). */
#define SCALENE_BPF_GPU_ENV_FLUSH_MS "SCALENE_BPF_GPU_FLUSH_MS"
#define SCALENE_BPF_GPU_DEFAULT_FLUSH_MS 200
/* Traced calls probed: 1 in N at random (default 1: every one).  The
 * others cost no trap; their records carry GPU_REC_F_UNSAMPLED. */
#define SCALENE_BPF_GPU_ENV_CALL_SAMPLE "SCALENE_BPF_GPU_CALL_SAMPLE"
#define SCALENE_BPF_GPU_CALL_SAMPLE_MAX 1000000

/* scalene_bpf_gpu_rec.kind */
enum gpu_rec_kind {
	GPU_REC_KERNEL = 1,
	GPU_REC_MEMCPY = 2, /* copy_kind says the direction; peer copies too */
	GPU_REC_MEMSET = 3,
	GPU_REC_ALLOC = 4, /* device memory allocated: start = end = its time */
	GPU_REC_FREE = 5,  /* ... released */
};

/* scalene_bpf_gpu_rec.flags */
enum gpu_rec_flags {
	GPU_REC_F_GRAPH = 1 << 0,	    /* launched as a node of a CUDA graph */
	GPU_REC_F_DEVICE_LAUNCHED = 1 << 1, /* launched from the device (no API call) */
	GPU_REC_F_ASYNC = 1 << 2,	    /* stream-ordered allocation or release */
	GPU_REC_F_PEER = 1 << 3,	    /* copy between two devices (src/dst_device) */
	/* Its call was not probed (SCALENE_BPF_GPU_CALL_SAMPLE > 1), as far as
	 * the library remembers (the last 2^20 correlation ids). */
	GPU_REC_F_UNSAMPLED = 1 << 4,
	/* Made by the library from a cuMemCreate / cuMemRelease call (virtual
	 * memory management has no MEMORY2 record); address is its handle. */
	GPU_REC_F_VMM = 1 << 5,
};

/* The direction of a copy: CUPTI's CUpti_ActivityMemcpyKind values. */
enum gpu_copy_kind {
	GPU_COPY_UNKNOWN = 0,
	GPU_COPY_HTOD = 1,
	GPU_COPY_DTOH = 2,
	GPU_COPY_DTOD = 8,
	GPU_COPY_HTOH = 9,
	GPU_COPY_PTOP = 10,
};

/* What a traced API call does: the `class` argument of gpu_api. */
enum gpu_api_class {
	GPU_API_LAUNCH = 1,	  /* kernel launch, any API (runtime, driver, cooperative) */
	GPU_API_GRAPH_LAUNCH = 2, /* all kernels of the graph carry this call's id */
	GPU_API_MEMCPY = 3,
	GPU_API_MEMSET = 4,
	GPU_API_ALLOC = 5,
	GPU_API_FREE = 6,
};

/*
 * One piece of device work or one device allocation event, decoded from a
 * CUPTI activity record (gpurec.c).  80 bytes, no implicit padding.
 */
struct scalene_bpf_gpu_rec {
	__u64 start_ns; /* kernel/copy/memset start; allocation or release time */
	__u64 end_ns;	/* end (== start_ns for GPU_REC_ALLOC/FREE) */
	__u64 bytes;	/* copied, set, allocated or released bytes; 0 for kernels */
	/* Kernels: address of the (mangled) name in the target's memory, owned
	 * by CUPTI and shared by all records of that kernel, so it also serves
	 * as an id; 0 otherwise. */
	__u64 name;
	__u64 address;	      /* GPU_REC_ALLOC/FREE: the device address; else 0 */
	__u64 graph_node_id;  /* GPU_REC_F_GRAPH: the node; else 0 */
	__u32 correlation_id; /* the gpu_api probe of the launching call carries it */
	__u32 kind;	      /* enum gpu_rec_kind */
	__u32 device_id;
	__u32 context_id;
	__u32 stream_id;
	__u32 graph_id;	  /* GPU_REC_F_GRAPH: the graph; else 0 */
	__u32 dst_device; /* GPU_REC_F_PEER: destination device (device_id is the source) */
	__u8 copy_kind;	  /* enum gpu_copy_kind, GPU_REC_MEMCPY only */
	__u8 memory_kind; /* CUpti_ActivityMemoryKind: 3 device, 2 pinned, 5 managed... */
	__u8 flags;	  /* enum gpu_rec_flags */
	__u8 pad;
};

/* scalene_bpf_gpu_state.status */
enum gpu_status {
	GPU_S_LOADED = 0,	    /* mapped, InitializeInjection() not called (yet) */
	GPU_S_ACTIVE = 1,	    /* subscribed, activity enabled, flush thread running */
	GPU_S_OTHER_SUBSCRIBER = 2, /* another CUPTI client (Nsight, torch.profiler) */
	GPU_S_CUPTI_ERROR = 3,	    /* a CUPTI call failed: cupti_error, failed_call */
	GPU_S_EXITED = 4,	    /* the final flush at exit has run */
	GPU_S_NO_CUPTI = 5,	    /* no CUPTI found that opens (cuptiload.h) */
	/* Collecting stopped mid-run: a flush failed or CUPTI reported a
	 * fatal error (another client finalized it, as torch.profiler's
	 * teardown may): failed_call and cupti_error say which, lost_ns when;
	 * nothing is asked of CUPTI from then on. */
	GPU_S_LOST = 6,
};

/* scalene_bpf_gpu_state.cupti_from: where the CUPTI in use was found
 * (cuptiload.h, in its order). */
enum gpu_cupti_from {
	GPU_CUPTI_UNKNOWN = 0,
	GPU_CUPTI_LOADED = 1,	  /* already loaded by the program */
	GPU_CUPTI_BY_RUNTIME = 2, /* next to the CUDA runtime the program loaded */
	GPU_CUPTI_BY_NAME = 3,	  /* the dynamic linker's search */
	GPU_CUPTI_TOOLKIT = 4,	  /* $CUDA_HOME or /usr/local/cuda */
	GPU_CUPTI_BUILD_DIR = 5,  /* where the library was built */
};

/* Where a failure happened: scalene_bpf_gpu_state.failed_call. */
enum gpu_failed_call {
	GPU_FAIL_NONE = 0,
	GPU_FAIL_SUBSCRIBE = 1,
	GPU_FAIL_CALLBACKS = 2,	 /* cuptiActivityRegisterCallbacks */
	GPU_FAIL_ENABLE_API = 3, /* cuptiEnableCallback on every launch API */
	GPU_FAIL_ACTIVITY = 4,	 /* cuptiActivityEnable on every kind */
	GPU_FAIL_THREAD = 5,	 /* the flush thread could not start */
	GPU_FAIL_FLUSH = 6,	 /* cuptiActivityFlushAll, mid-run (GPU_S_LOST) */
	GPU_FAIL_FATAL = 7,	 /* CUPTI_CBID_STATE_FATAL_ERROR (GPU_S_LOST) */
};

/* scalene_bpf_gpu_state.kinds: the activity kinds CUPTI accepted. */
enum gpu_kind_bits {
	GPU_KIND_CONCURRENT_KERNEL = 1 << 0,
	GPU_KIND_MEMCPY = 1 << 1,
	GPU_KIND_MEMCPY2 = 1 << 2, /* peer copies */
	GPU_KIND_MEMSET = 1 << 3,
	GPU_KIND_MEMORY2 = 1 << 4, /* device allocations and releases */
};

/* scalene_bpf_gpu_state.clock */
enum gpu_clock {
	GPU_CLOCK_REALTIME = 0,	 /* CUPTI's default */
	GPU_CLOCK_MONOTONIC = 1, /* our timestamp callback is registered */
};

/*
 * Exported as `scalene_bpf_gpu_state` (SCALENE_BPF_GPU_STATE_SYM): the
 * loader reads it with process_vm_readv, BPF at gpu_init / gpu_exit.
 * Counters only grow.  A fork child keeps its parent's values (CUPTI does not
 * follow a fork).
 */
struct scalene_bpf_gpu_state {
	__u32 magic;	     /* SCALENE_BPF_GPU_MAGIC */
	__u32 abi;	     /* SCALENE_BPF_GPU_ABI */
	__u32 size;	     /* sizeof(struct scalene_bpf_gpu_state) */
	__u32 pid;	     /* the process that initialised CUPTI */
	__u32 status;	     /* enum gpu_status */
	__u32 failed_call;   /* enum gpu_failed_call */
	__u32 cupti_error;   /* CUptiResult of the failed call */
	__u32 clock;	     /* enum gpu_clock */
	__u32 cupti_version; /* cuptiGetVersion() at run time */
	__u32 built_version; /* CUPTI_API_VERSION of the headers built against */
	__u32 kinds;	     /* enum gpu_kind_bits */
	__u32 flush_ms;	     /* period of the flush thread */
	__u32 api_callbacks; /* API callbacks enabled */
	__u32 api_failed;    /* ... that CUPTI refused (unknown to this CUPTI) */

	__u64 api_calls;	 /* traced calls (each probed unless sampled out) */
	__u64 api_aliases;	 /* gpu_api_alias probes fired */
	__u64 records;		 /* records handed out through gpu_records */
	__u64 batches;		 /* gpu_records probes fired */
	__u64 incomplete;	 /* dropped: end = 0 (still running at a forced flush) */
	__u64 invalid;		 /* dropped: end < start or start = 0 */
	__u64 other_kinds;	 /* records of kinds we do not decode, skipped */
	__u64 lost;		 /* CUPTI's own count of records it dropped */
	__u64 buffers_requested; /* buffers handed to CUPTI */
	__u64 buffers_completed; /* ... and given back */
	__u64 buffers_refused;	 /* requests we could not serve (no memory): CUPTI drops */
	__u64 first_ns;		 /* earliest start of a record handed out; 0: none yet */
	__u64 last_ns;		 /* latest end of a record handed out */

	__u32 call_sample; /* 1 in call_sample traced calls probed */
	__u32 pad;
	__u64 calls_probed; /* gpu_api probes fired (api_calls: every traced call) */

	__u32 cupti_from; /* enum gpu_cupti_from */
	__u32 pad2;
	/* Buffers CUPTI could not walk to their end (a record it could not
	 * step over): the records after the bad one are lost, uncounted. */
	__u64 buffers_malformed;
	__u64 lost_ns; /* CLOCK_MONOTONIC when collecting stopped (GPU_S_LOST) */
	__u64 reserved[3];
};

#ifndef __bpf__
_Static_assert(sizeof(struct scalene_bpf_gpu_rec) == 80,
	       "scalene_bpf_gpu_rec is an ABI: change SCALENE_BPF_GPU_ABI with it");
_Static_assert(sizeof(struct scalene_bpf_gpu_state) == 224,
	       "scalene_bpf_gpu_state is an ABI: change SCALENE_BPF_GPU_ABI with it");
#endif

#endif /* SCALENE_BPF_GPU_H */
