// SPDX-License-Identifier: BSD-2-Clause
/*
 * NVML, opened at run time (nvml.h).  The types below are written from
 * NVML's API reference (the functions' documented parameters): nvmlReturn_t
 * is an int, a device an opaque pointer, the structures plain C with the
 * fields in the documented order.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "collect/nvml.h"

/* nvmlReturn_t values used here. */
enum {
	NV_SUCCESS = 0,
	NV_NOT_SUPPORTED = 3,
	NV_NOT_FOUND = 6,
	NV_INSUFFICIENT_SIZE = 7,
};

/* NVML_VALUE_NOT_AVAILABLE: a process's memory the driver does not say. */
#define NV_VALUE_NOT_AVAILABLE (~0ULL)

/* nvmlDeviceGetProcessUtilization reads samples newer than a time it is
 * given; the device takes one every 1/6 s or so.  Each poll reads those of
 * the time since the previous poll, and this much before it, so that a
 * poll faster than the device still finds the sample that covers it. */
#define NV_SAMPLE_US 200000ULL

typedef void *nv_device;

struct nv_utilization {
	unsigned int gpu, memory; /* percent */
};

struct nv_process_info {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};

struct nv_process_sample {
	unsigned int pid;
	unsigned long long timestamp; /* us, CLOCK_REALTIME */
	unsigned int sm_util, mem_util, enc_util, dec_util;
};

struct nv_api {
	int (*init)(void);
	int (*shutdown)(void);
	const char *(*error_string)(int ret);
	int (*count)(unsigned int *n);
	int (*handle)(unsigned int i, nv_device *dev);
	int (*name)(nv_device dev, char *name, unsigned int len);
	int (*util_rates)(nv_device dev, struct nv_utilization *u);
	int (*procs)(nv_device dev, unsigned int *count, struct nv_process_info *infos);
	int (*proc_util)(nv_device dev, struct nv_process_sample *s, unsigned int *count,
			 unsigned long long last_seen);
};

struct nvml {
	void *dl;
	struct nv_api f;
	nv_device dev[NVML_DEVICES_MAX];
	bool per_process[NVML_DEVICES_MAX];
	uint64_t last_poll_us;
	struct nv_process_info *infos;
	size_t ninfos;
	struct nv_process_sample *samples;
	size_t nsamples;
	struct nvml_facts facts;
};

static uint64_t realtime_us(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000;
}

static const char *nv_error(const struct nvml *nv, int ret)
{
	const char *s = nv->f.error_string ? nv->f.error_string(ret) : NULL;

	return s ? s : "unknown error";
}

static int load(struct nvml *nv, const char *lib, char *why, size_t n)
{
	/* Required; the rest may be missing from an old driver. */
	static const char *const need[] = { "nvmlInit_v2", "nvmlDeviceGetCount_v2",
					    "nvmlDeviceGetHandleByIndex_v2",
					    "nvmlDeviceGetUtilizationRates" };
	void *sym[4];
	size_t i;

	nv->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!nv->dl) {
		snprintf(why, n, "%s could not be loaded (%s): no NVIDIA driver here?", lib,
			 dlerror());
		return -ENOENT;
	}
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		sym[i] = dlsym(nv->dl, need[i]);
		if (!sym[i]) {
			snprintf(why, n, "%s has no %s: too old a driver", lib, need[i]);
			return -ENOSYS;
		}
	}
	/* dlsym returns object pointers; POSIX makes them callable. */
	*(void **)&nv->f.init = sym[0];
	*(void **)&nv->f.count = sym[1];
	*(void **)&nv->f.handle = sym[2];
	*(void **)&nv->f.util_rates = sym[3];
	*(void **)&nv->f.shutdown = dlsym(nv->dl, "nvmlShutdown");
	*(void **)&nv->f.error_string = dlsym(nv->dl, "nvmlErrorString");
	*(void **)&nv->f.name = dlsym(nv->dl, "nvmlDeviceGetName");
	*(void **)&nv->f.procs = dlsym(nv->dl, "nvmlDeviceGetComputeRunningProcesses_v3");
	*(void **)&nv->f.proc_util = dlsym(nv->dl, "nvmlDeviceGetProcessUtilization");
	return 0;
}

static int devices(struct nvml *nv, char *why, size_t n)
{
	unsigned int count = 0, i;
	int ret = nv->f.count(&count);

	if (ret != NV_SUCCESS) {
		snprintf(why, n, "nvmlDeviceGetCount_v2 failed: %s", nv_error(nv, ret));
		return -EIO;
	}
	if (!count) {
		snprintf(why, n, "NVML sees no GPU");
		return -ENODEV;
	}
	if (count > NVML_DEVICES_MAX) {
		pr_warn("gpu: %u GPUs, the first %d are read\n", count, NVML_DEVICES_MAX);
		count = NVML_DEVICES_MAX;
	}
	for (i = 0; i < count; i++) {
		ret = nv->f.handle(i, &nv->dev[i]);
		if (ret != NV_SUCCESS) {
			snprintf(why, n, "nvmlDeviceGetHandleByIndex_v2(%u) failed: %s", i,
				 nv_error(nv, ret));
			return -EIO;
		}
		if (!nv->f.name || nv->f.name(nv->dev[i], nv->facts.names[i], NVML_NAME_BYTES))
			snprintf(nv->facts.names[i], NVML_NAME_BYTES, "GPU %u", i);
		nv->facts.names[i][NVML_NAME_BYTES - 1] = '\0';
		/* Until the device says it cannot. */
		nv->per_process[i] = nv->f.proc_util != NULL;
	}
	nv->facts.ndevices = (int)count;
	nv->facts.memory = nv->f.procs != NULL;
	return 0;
}

struct nvml *nvml__open(char *why, size_t n)
{
	const char *env = getenv(NVML_ENV_LIB);
	const char *lib = env && *env ? env : NVML_SONAME;
	struct nvml *nv = calloc(1, sizeof(*nv));
	int err, ret;

	if (!nv) {
		snprintf(why, n, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	snprintf(nv->facts.library, sizeof(nv->facts.library), "%s", lib);
	err = load(nv, lib, why, n);
	if (err)
		goto fail;
	ret = nv->f.init();
	if (ret != NV_SUCCESS) {
		snprintf(why, n, "nvmlInit_v2 failed: %s", nv_error(nv, ret));
		err = -EIO;
		goto fail;
	}
	err = devices(nv, why, n);
	if (err) {
		if (nv->f.shutdown)
			nv->f.shutdown();
		goto fail;
	}
	nv->last_poll_us = realtime_us();
	return nv;
fail:
	if (nv->dl)
		dlclose(nv->dl);
	free(nv);
	errno = -err;
	return NULL;
}

static bool room(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *g;

	if (need <= *cap)
		return true;
	g = realloc(*arr, need * elem);
	if (!g)
		return false;
	*arr = g;
	*cap = need;
	return true;
}

static void failed(struct nvml *nv, const char *call, int ret)
{
	snprintf(nv->facts.last_error, sizeof(nv->facts.last_error), "%s: %s", call,
		 nv_error(nv, ret));
}

/* The process's own utilisation of device i in percent, from the samples
 * since since_us: 0 where it has none.  -1 when the device cannot say
 * (it is then read device-wide from now on); -2 on failure. */
static double proc_util(struct nvml *nv, int i, int pid, uint64_t since_us)
{
	unsigned int count = 0, k, seen = 0;
	double sum = 0;
	int ret, tries;

	for (tries = 0; tries < 3; tries++) {
		ret = nv->f.proc_util(nv->dev[i], NULL, &count, since_us);
		if (ret == NV_NOT_FOUND)
			return 0;
		if (ret == NV_NOT_SUPPORTED)
			return -1;
		if (ret != NV_SUCCESS && ret != NV_INSUFFICIENT_SIZE)
			break;
		if (!count)
			return 0;
		/* Room for a few more: samples may arrive between the calls. */
		count += 4;
		if (!room((void **)&nv->samples, &nv->nsamples, count, sizeof(*nv->samples)))
			return -2;
		ret = nv->f.proc_util(nv->dev[i], nv->samples, &count, since_us);
		if (ret == NV_NOT_FOUND)
			return 0;
		if (ret != NV_INSUFFICIENT_SIZE)
			break;
	}
	if (ret != NV_SUCCESS) {
		failed(nv, "nvmlDeviceGetProcessUtilization", ret);
		return -2;
	}
	for (k = 0; k < count; k++) {
		if ((int)nv->samples[k].pid == pid && nv->samples[k].timestamp > since_us) {
			sum += nv->samples[k].sm_util;
			seen++;
		}
	}
	return seen ? sum / seen : 0;
}

/* Device memory of process pid on device i, in bytes; < 0 on failure. */
static double proc_memory(struct nvml *nv, int i, int pid)
{
	unsigned int count = 0, k;
	double bytes = 0;
	int ret, tries;

	for (tries = 0; tries < 3; tries++) {
		count = (unsigned int)nv->ninfos;
		ret = nv->f.procs(nv->dev[i], &count, nv->infos);
		if (ret != NV_INSUFFICIENT_SIZE)
			break;
		if (!room((void **)&nv->infos, &nv->ninfos, count + 8, sizeof(*nv->infos)))
			return -1;
	}
	if (ret != NV_SUCCESS) {
		failed(nv, "nvmlDeviceGetComputeRunningProcesses_v3", ret);
		return -1;
	}
	for (k = 0; k < count && k < nv->ninfos; k++) {
		if ((int)nv->infos[k].pid != pid)
			continue;
		if (nv->infos[k].used_gpu_memory == NV_VALUE_NOT_AVAILABLE) {
			snprintf(
				nv->facts.last_error, sizeof(nv->facts.last_error),
				"nvmlDeviceGetComputeRunningProcesses_v3: the driver does not give "
				"the process's memory");
			return -1;
		}
		bytes += (double)nv->infos[k].used_gpu_memory;
	}
	return bytes;
}

int nvml__poll(struct nvml *nv, int pid, struct nvml_reading *out)
{
	uint64_t now = realtime_us(), since = nv->last_poll_us - NV_SAMPLE_US;
	double util = 0, mem = 0;
	int i, ok = 1;

	nv->facts.polls++;
	for (i = 0; i < nv->facts.ndevices; i++) {
		struct nv_utilization u;
		double d = -1;
		int ret;

		if (nv->per_process[i]) {
			d = proc_util(nv, i, pid, since);
			if (d == -1)
				nv->per_process[i] = false;
			else if (d < 0)
				ok = 0;
		}
		if (!nv->per_process[i]) {
			ret = nv->f.util_rates(nv->dev[i], &u);
			if (ret == NV_SUCCESS) {
				d = u.gpu;
			} else {
				failed(nv, "nvmlDeviceGetUtilizationRates", ret);
				ok = 0;
			}
		}
		if (d > 0)
			util += d;
		if (nv->facts.memory && mem >= 0) {
			double b = proc_memory(nv, i, pid);

			mem = b < 0 ? -1 : mem + b;
		}
	}
	if (nv->facts.memory && mem < 0)
		nv->facts.memory_unread++;
	if (!ok) {
		nv->facts.failures++;
		return -EIO;
	}
	nv->last_poll_us = now;
	out->busy = util / nv->facts.ndevices / 100.0;
	if (out->busy > 1)
		out->busy = 1;
	out->mem_bytes = nv->facts.memory ? mem : -1;
	return 0;
}

void nvml__facts(const struct nvml *nv, struct nvml_facts *out)
{
	int i;

	*out = nv->facts;
	out->per_process = 0;
	for (i = 0; i < nv->facts.ndevices; i++)
		out->per_process += nv->per_process[i];
}

void nvml__free(struct nvml *nv)
{
	if (!nv)
		return;
	if (nv->f.shutdown)
		nv->f.shutdown();
	dlclose(nv->dl);
	free(nv->infos);
	free(nv->samples);
	free(nv);
}
