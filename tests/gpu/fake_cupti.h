/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fake libcupti.so.13 for testing libscalene-bpf-gpu.so without a GPU: the
 * CUPTI calls the library makes, answered from memory, and these controls
 * for the test to play CUDA's part (API calls, records, flushes).
 */
#ifndef SCALENE_BPF_FAKE_CUPTI_H
#define SCALENE_BPF_FAKE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

struct fake_cupti_stats {
	int subscribed;		 /* a subscriber is registered */
	int zeroed_attr;	 /* CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER as set */
	int callbacks_enabled;	 /* API callback ids enabled */
	int kinds_enabled;	 /* activity kinds enabled */
	uint64_t flushes;	 /* cuptiActivityFlushAll calls, flag 0 */
	uint64_t forced_flushes; /* ... with CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */
	uint64_t requests;	 /* buffers requested from the client */
	uint64_t null_buffers;	 /* ... that the client declined */
	uint64_t dirty_buffers;	 /* ... that were not zeroed, as the attribute promises */
	uint64_t completions;	 /* buffers handed back to the client */
};

/* What cuptiSubscribe returns (CUPTI_SUCCESS by default). */
void fake_cupti_subscribe_result(int result);
/* The name cuptiSubscribe_v2 gives, when it refuses, of the client
 * already subscribed. */
void fake_cupti_incumbent(const char *name);
/* The name the client subscribed under with cuptiSubscribe_v2 ("" if
 * none). */
const char *fake_cupti_subscriber_name(void);
/* What cuptiActivityFlushAll returns from now on (both flavours): another
 * client's cuptiFinalize or teardown, as the client sees it. */
void fake_cupti_flush_result(int result);
/* CUPTI's CUPTI_CBID_STATE_FATAL_ERROR to the subscriber (when it enabled
 * it): 1 if delivered. */
int fake_cupti_fatal_error(int result, const char *message);
/* What cuptiActivityEnable returns for every kind. */
void fake_cupti_enable_result(int result);
/* cuptiEnableCallback refuses this one id, as a CUPTI that does not know it. */
void fake_cupti_refuse_callback(uint32_t domain, uint32_t cbid);

int fake_cupti_kind_enabled(int kind);
int fake_cupti_callback_enabled(uint32_t domain, uint32_t cbid);
void fake_cupti_stats(struct fake_cupti_stats *out);

/* A traced API call's entry (site 0) or exit (site 1) on the calling
 * thread; delivered only when that callback id is enabled, as CUPTI does. */
void fake_cupti_api(uint32_t domain, uint32_t cbid, int site, uint32_t correlation_id);
/* ... with the call's parameters (the cbid's generated_cuda_meta.h struct)
 * and its return value, as CUPTI passes them. */
void fake_cupti_api_call(uint32_t domain, uint32_t cbid, int site, uint32_t correlation_id,
			 const void *params, const void *ret);
/* The entry and exit of a call made by a new thread with no Python frame,
 * which then queues the record of a kernel of kernel_ns that starts now
 * (none when 0) and keeps its CPU busy for busy_ms; the caller waits for it
 * (as a training step's main thread waits in loss.backward() while
 * autograd's threads launch its kernels, whose records the library's
 * flushes deliver meanwhile).  0, or an errno value. */
int fake_cupti_api_on_native_thread(uint32_t domain, uint32_t cbid, uint32_t correlation_id,
				    unsigned int busy_ms, uint64_t kernel_ns,
				    const char *kernel_name);
/* Queues an activity record for the next flush. */
void fake_cupti_record(const void *record, size_t size);
/* Builds and queues one record as CUDA 13's CUPTI lays it out: a kernel
 * (CONCURRENT_KERNEL), a copy (MEMCPY; copy_kind as CUpti_ActivityMemcpyKind),
 * or a device allocation (alloc 1) or release (alloc 0) (MEMORY2). */
void fake_cupti_kernel(uint32_t correlation_id, uint64_t start, uint64_t end);
/* ... with its (mangled) name, a string that must outlive the record, as
 * CUPTI's own do. */
void fake_cupti_kernel_named(uint32_t correlation_id, uint64_t start, uint64_t end,
			     const char *name);
void fake_cupti_memcpy(uint32_t correlation_id, uint32_t copy_kind, uint64_t bytes, uint64_t start,
		       uint64_t end);
void fake_cupti_memory(uint32_t correlation_id, int alloc, uint64_t address, uint64_t bytes,
		       uint64_t ts);
/* Records CUPTI "dropped": reported with the next completed buffer. */
void fake_cupti_drop(size_t n);
/* The client's timestamp callback, 0 when none is registered. */
uint64_t fake_cupti_timestamp(void);

#endif /* SCALENE_BPF_FAKE_CUPTI_H */
