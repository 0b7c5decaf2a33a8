// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory taken through CUDA's virtual memory management: cuMemCreate makes
 * physical memory (on a device, or pinned on the host) and cuMemRelease lets
 * it go; cuMemMap only maps it at an address.  CUPTI's MEMORY2 activity has
 * no record of these (PyTorch's expandable segments allocate this way), so
 * the library makes the records itself from the calls' returns: an
 * allocation of the size asked for at the create, a release of the same size
 * at the release of that handle.  What each handle holds is kept here.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cupti.h>

#include "gpu.h"
#include "vmm.h"

/* CUpti_ActivityMemoryKind's device and pinned host kinds. */
#define KIND_PINNED 2
#define KIND_DEVICE 3

struct vmm_slot {
	uint64_t handle; /* 0: free */
	uint64_t bytes;
	uint32_t device;
	uint8_t kind;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_slot *slots;
static size_t nslots, used;

static size_t slot_of(uint64_t handle, size_t n)
{
	return (size_t)((handle * 0x9e3779b97f4a7c15ULL) >> 17) & (n - 1);
}

/* Room for one more (a table at most half full); false without memory. */
static bool grow(void)
{
	struct vmm_slot *fresh;
	size_t i, n = nslots ? nslots * 2 : 256;

	if (nslots && (used + 1) * 2 <= nslots)
		return true;
	fresh = calloc(n, sizeof(*fresh));
	if (!fresh)
		return false;
	for (i = 0; i < nslots; i++) {
		size_t j;

		if (!slots[i].handle)
			continue;
		for (j = slot_of(slots[i].handle, n); fresh[j].handle; j = (j + 1) & (n - 1))
			;
		fresh[j] = slots[i];
	}
	free(slots);
	slots = fresh;
	nslots = n;
	return true;
}

static void put(const struct vmm_slot *s)
{
	size_t j;

	pthread_mutex_lock(&vmm_lock);
	if (grow()) {
		for (j = slot_of(s->handle, nslots);
		     slots[j].handle && slots[j].handle != s->handle; j = (j + 1) & (nslots - 1))
			;
		if (!slots[j].handle)
			used++;
		slots[j] = *s;
	}
	pthread_mutex_unlock(&vmm_lock);
}

/* Takes handle's entry out (backward-shift deletion keeps the probe
 * sequences whole): true and *out when it was there. */
static bool take(uint64_t handle, struct vmm_slot *out)
{
	size_t i, j, k;
	bool found = false;

	pthread_mutex_lock(&vmm_lock);
	if (!nslots)
		goto out;
	for (i = slot_of(handle, nslots); slots[i].handle; i = (i + 1) & (nslots - 1)) {
		if (slots[i].handle == handle) {
			found = true;
			break;
		}
	}
	if (!found)
		goto out;
	*out = slots[i];
	slots[i].handle = 0;
	used--;
	for (j = (i + 1) & (nslots - 1); slots[j].handle; j = (j + 1) & (nslots - 1)) {
		k = slot_of(slots[j].handle, nslots);
		/* Move it back to the hole when its home is not between the
		 * hole and it (cyclically). */
		if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
			slots[i] = slots[j];
			slots[j].handle = 0;
			i = j;
		}
	}
out:
	pthread_mutex_unlock(&vmm_lock);
	return found;
}

int vmm_call_record(uint32_t cbid, const CUpti_CallbackData *cb, uint64_t now_ns,
		    struct scalene_bpf_gpu_rec *out)
{
	const CUresult *ret = cb->functionReturnValue;
	struct vmm_slot s = { 0 };

	if (cb->callbackSite != CUPTI_API_EXIT || !cb->functionParams || !ret ||
	    *ret != CUDA_SUCCESS)
		return 0;
	memset(out, 0, sizeof(*out));
	if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemCreate) {
		const cuMemCreate_params *p = cb->functionParams;

		if (!p->handle || !*p->handle || !p->prop)
			return 0;
		s.handle = (uint64_t)*p->handle;
		s.bytes = p->size;
		s.kind = p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? KIND_DEVICE
									       : KIND_PINNED;
		s.device = s.kind == KIND_DEVICE ? (uint32_t)p->prop->location.id : 0;
		put(&s);
		out->kind = GPU_REC_ALLOC;
	} else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemRelease) {
		const cuMemRelease_params *p = cb->functionParams;

		/* A handle made before the library subscribed: its size is
		 * not known, and its creation was not counted either. */
		if (!take((uint64_t)p->handle, &s))
			return 0;
		out->kind = GPU_REC_FREE;
	} else {
		return 0;
	}
	out->start_ns = out->end_ns = now_ns;
	out->bytes = s.bytes;
	out->address = s.handle;
	out->memory_kind = s.kind;
	out->device_id = s.device;
	out->correlation_id = cb->correlationId;
	out->context_id = UINT32_MAX;
	out->stream_id = UINT32_MAX;
	out->flags = GPU_REC_F_VMM;
	return 1;
}
