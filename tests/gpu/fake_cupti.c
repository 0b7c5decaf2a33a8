// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fake libcupti.so.13 of fake_cupti.h.  It answers only the calls
 * libscalene-bpf-gpu.so makes (the library is linked with -z now, so a call
 * to anything else fails its load) and models what the library relies on:
 * one subscriber, callbacks per id, buffers requested from and completed to
 * the client, forced and unforced flushes, dropped-record counts.  It does
 * not model a GPU.
 */
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <string.h>

#include <cupti.h>

#include "cupti_walk.h"
#include "fake_cupti.h"

#define PENDING_BYTES (1u << 20)

static struct CUpti_Subscriber_st *const the_subscriber = (void *)0x5ca1ab1e;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUptiResult subscribe_result = CUPTI_SUCCESS, enable_result = CUPTI_SUCCESS;
static CUptiResult flush_result = CUPTI_SUCCESS;
static char incumbent[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN],
	subscriber_name[CUPTI_SUBSCRIBER_NAME_MAX_LEN];
static uint8_t state_fatal_enabled;
static uint32_t refused_domain, refused_cbid;
static CUpti_CallbackFunc api_callback;
static void *api_userdata;
static CUpti_BuffersCallbackRequestFunc buffer_requested;
static CUpti_BuffersCallbackCompleteFunc buffer_completed;
static CUpti_TimestampCallbackFunc timestamp;
static uint8_t enabled_runtime[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static uint8_t enabled_driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
static uint8_t kinds[64];
static _Alignas(8) uint8_t pending[PENDING_BYTES];
static size_t pending_len, dropped;
static struct fake_cupti_stats st;

void fake_cupti_subscribe_result(int result)
{
	subscribe_result = (CUptiResult)result;
}

void fake_cupti_incumbent(const char *name)
{
	snprintf(incumbent, sizeof(incumbent), "%s", name);
}

const char *fake_cupti_subscriber_name(void)
{
	return subscriber_name;
}

void fake_cupti_flush_result(int result)
{
	pthread_mutex_lock(&lock);
	flush_result = (CUptiResult)result;
	pthread_mutex_unlock(&lock);
}

int fake_cupti_fatal_error(int result, const char *message)
{
	CUpti_StateData d;

	if (!st.subscribed || !api_callback || !state_fatal_enabled)
		return 0;
	memset(&d, 0, sizeof(d));
	d.notification.result = (CUptiResult)result;
	d.notification.message = message;
	api_callback(api_userdata, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR, &d);
	return 1;
}

void fake_cupti_enable_result(int result)
{
	enable_result = (CUptiResult)result;
}

void fake_cupti_refuse_callback(uint32_t domain, uint32_t cbid)
{
	refused_domain = domain;
	refused_cbid = cbid;
}

int fake_cupti_kind_enabled(int kind)
{
	return kind >= 0 && kind < 64 && kinds[kind];
}

int fake_cupti_callback_enabled(uint32_t domain, uint32_t cbid)
{
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		return enabled_runtime[cbid];
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		return enabled_driver[cbid];
	return 0;
}

void fake_cupti_stats(struct fake_cupti_stats *out)
{
	pthread_mutex_lock(&lock);
	*out = st;
	pthread_mutex_unlock(&lock);
}

void fake_cupti_api_call(uint32_t domain, uint32_t cbid, int site, uint32_t correlation_id,
			 const void *params, const void *ret)
{
	CUpti_CallbackData cb;

	if (!st.subscribed || !api_callback || !fake_cupti_callback_enabled(domain, cbid))
		return;
	memset(&cb, 0, sizeof(cb));
	cb.callbackSite = site ? CUPTI_API_EXIT : CUPTI_API_ENTER;
	cb.functionName = "fake";
	cb.correlationId = correlation_id;
	cb.functionParams = params;
	cb.functionReturnValue = (void *)ret;
	api_callback(api_userdata, (CUpti_CallbackDomain)domain, cbid, &cb);
}

void fake_cupti_api(uint32_t domain, uint32_t cbid, int site, uint32_t correlation_id)
{
	fake_cupti_api_call(domain, cbid, site, correlation_id, NULL, NULL);
}

struct native_call {
	uint32_t domain, cbid, correlation_id;
	unsigned int busy_ms;
	uint64_t kernel_ns;
	const char *kernel_name;
};

/* A thread of the library's own, with no Python frame: the call, then the
 * thread keeps busy for a while, as an autograd worker does. */
static void *native_call_thread(void *arg)
{
	const struct native_call *c = arg;
	struct timespec t0, t;

	fake_cupti_api(c->domain, c->cbid, 0, c->correlation_id);
	fake_cupti_api(c->domain, c->cbid, 1, c->correlation_id);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (c->kernel_ns) {
		uint64_t now = t0.tv_sec * 1000000000ull + t0.tv_nsec;

		fake_cupti_kernel_named(c->correlation_id, now, now + c->kernel_ns, c->kernel_name);
	}
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
	       (long)c->busy_ms);
	return NULL;
}

int fake_cupti_api_on_native_thread(uint32_t domain, uint32_t cbid, uint32_t correlation_id,
				    unsigned int busy_ms, uint64_t kernel_ns,
				    const char *kernel_name)
{
	struct native_call c = { domain, cbid, correlation_id, busy_ms, kernel_ns, kernel_name };
	pthread_t th;
	int err = pthread_create(&th, NULL, native_call_thread, &c);

	return err ? err : pthread_join(th, NULL);
}

void fake_cupti_record(const void *record, size_t size)
{
	size_t at;

	pthread_mutex_lock(&lock);
	at = (pending_len + 7) & ~(size_t)7;
	if (at + size <= PENDING_BYTES) {
		memcpy(pending + at, record, size);
		pending_len = at + size;
	}
	pthread_mutex_unlock(&lock);
}

void fake_cupti_kernel_named(uint32_t correlation_id, uint64_t start, uint64_t end,
			     const char *name)
{
	CUpti_ActivityKernel10 k;

	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.start = start;
	k.end = end;
	k.correlationId = correlation_id;
	k.name = name;
	fake_cupti_record(&k, sizeof(k));
}

void fake_cupti_kernel(uint32_t correlation_id, uint64_t start, uint64_t end)
{
	fake_cupti_kernel_named(correlation_id, start, end, "_Z1kv");
}

void fake_cupti_memcpy(uint32_t correlation_id, uint32_t copy_kind, uint64_t bytes, uint64_t start,
		       uint64_t end)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = (uint8_t)copy_kind;
	m.bytes = bytes;
	m.start = start;
	m.end = end;
	m.correlationId = correlation_id;
	fake_cupti_record(&m, sizeof(m));
}

void fake_cupti_memory(uint32_t correlation_id, int alloc, uint64_t address, uint64_t bytes,
		       uint64_t ts)
{
	CUpti_ActivityMemory4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
	m.memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
				      : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.correlationId = correlation_id;
	m.address = address;
	m.bytes = bytes;
	m.timestamp = ts;
	fake_cupti_record(&m, sizeof(m));
}

void fake_cupti_drop(size_t n)
{
	pthread_mutex_lock(&lock);
	dropped += n;
	pthread_mutex_unlock(&lock);
}

uint64_t fake_cupti_timestamp(void)
{
	return timestamp ? timestamp() : 0;
}

static int zeroed(const uint8_t *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (buf[i])
			return 0;
	return 1;
}

/* Both flush flavours hand out what is queued in one buffer; a real CUPTI
 * returns unfinished records only when forced, which the tests arrange by
 * queueing them just before a forced flush. */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	uint8_t *buf = NULL;
	size_t size = 0, max = 0, valid;

	pthread_mutex_lock(&lock);
	if (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)
		st.forced_flushes++;
	else
		st.flushes++;
	if (flush_result != CUPTI_SUCCESS) {
		CUptiResult res = flush_result;

		pthread_mutex_unlock(&lock);
		return res;
	}
	if (!pending_len || !buffer_requested) {
		pthread_mutex_unlock(&lock);
		return CUPTI_SUCCESS;
	}
	st.requests++;
	buffer_requested(&buf, &size, &max);
	if (!buf || size < pending_len) {
		st.null_buffers++;
		dropped += 1;
		pending_len = 0;
		pthread_mutex_unlock(&lock);
		return CUPTI_SUCCESS;
	}
	if (st.zeroed_attr && !zeroed(buf, pending_len + (size - pending_len < 4096 ? 0 : 4096)))
		st.dirty_buffers++;
	memcpy(buf, pending, pending_len);
	valid = pending_len;
	pending_len = 0;
	st.completions++;
	pthread_mutex_unlock(&lock);
	buffer_completed(NULL, 0, buf, size, valid);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
						CUpti_Activity **record)
{
	return cupti_walk_next(buffer, valid, record);
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream,
						       size_t *out)
{
	pthread_mutex_lock(&lock);
	*out = dropped;
	dropped = 0;
	pthread_mutex_unlock(&lock);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
	*str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
		       ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
		       : "fake CUPTI error";
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
				    void *userdata)
{
	if (subscribe_result != CUPTI_SUCCESS)
		return subscribe_result;
	if (st.subscribed)
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	api_callback = callback;
	api_userdata = userdata;
	st.subscribed = 1;
	*subscriber = the_subscriber;
	return CUPTI_SUCCESS;
}

/* As cuptiSubscribe, under the client's name; refused, the name of the
 * client already there (fake_cupti_incumbent) is written where asked. */
CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
				       CUpti_CallbackFunc callback, void *userdata,
				       CUpti_SubscriberParams *params)
{
	CUptiResult res;

	if (params && params->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	res = cuptiSubscribe(subscriber, callback, userdata);
	if (res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params &&
	    params->oldSubscriberName && params->oldSubscriberSize)
		snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", incumbent);
	if (res == CUPTI_SUCCESS && params && params->subscriberName)
		snprintf(subscriber_name, sizeof(subscriber_name), "%s", params->subscriberName);
	return res;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	if (subscriber != the_subscriber || !st.subscribed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	st.subscribed = 0;
	api_callback = NULL;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
					 CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	uint8_t *slot = NULL;

	if (subscriber != the_subscriber || !st.subscribed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (domain == refused_domain && cbid == refused_cbid)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (domain == CUPTI_CB_DOMAIN_STATE && cbid == CUPTI_CBID_STATE_FATAL_ERROR) {
		state_fatal_enabled = !!enable;
		return CUPTI_SUCCESS;
	}
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		slot = &enabled_runtime[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		slot = &enabled_driver[cbid];
	if (!slot)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!*slot && enable)
		st.callbacks_enabled++;
	else if (*slot && !enable)
		st.callbacks_enabled--;
	*slot = !!enable;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size,
					       void *value)
{
	if (!size || !value)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && *size == sizeof(uint8_t))
		st.zeroed_attr = *(uint8_t *)value;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	timestamp = fn;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
						    CUpti_BuffersCallbackCompleteFunc completed)
{
	if (!requested || !completed)
		return CUPTI_ERROR_INVALID_PARAMETER;
	buffer_requested = requested;
	buffer_completed = completed;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (enable_result != CUPTI_SUCCESS)
		return enable_result;
	if ((int)kind < 0 || kind >= 64)
		return CUPTI_ERROR_INVALID_KIND;
	if (!kinds[kind])
		st.kinds_enabled++;
	kinds[kind] = 1;
	return CUPTI_SUCCESS;
}
