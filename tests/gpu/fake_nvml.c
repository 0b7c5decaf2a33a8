// SPDX-License-Identifier: BSD-2-Clause
/*
 * A fake libnvidia-ml.so.1 for the --pid GPU tests: the few NVML calls
 * user/collect/nvml.c makes, answered from a state file that the test (or the
 * profiled program) rewrites at will.  Its path is in FAKE_NVML_STATE; it
 * is read again at every call.  Lines, each optional:
 *
 *   init RET               what nvmlInit_v2 returns (default 0)
 *   devices N              how many GPUs (default 1)
 *   name I TEXT            device I's name (default "Fake GPU I")
 *   per_process I 0|1      whether device I gives per-process utilisation
 *                          (default 1; 0: NVML_ERROR_NOT_SUPPORTED)
 *   util I PCT             device I's utilisation, all processes
 *   proc I PID SM BYTES    a process on device I: its SM utilisation (%)
 *                          and device memory
 *
 * A missing file is a GPU with nothing on it.  Per-process samples are
 * stamped with the time of the call (CLOCK_REALTIME, us).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_DEVICES 4
#define FAKE_PROCS 16

enum {
	OK = 0,
	ERR_INVALID_ARGUMENT = 2,
	ERR_NOT_SUPPORTED = 3,
	ERR_NOT_FOUND = 6,
	ERR_INSUFFICIENT_SIZE = 7,
};

struct utilization {
	unsigned int gpu, memory;
};

struct process_info {
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};

struct process_sample {
	unsigned int pid;
	unsigned long long timestamp;
	unsigned int sm_util, mem_util, enc_util, dec_util;
};

struct fake_proc {
	unsigned int pid, sm;
	unsigned long long bytes;
};

struct fake_device {
	int index;
	char name[96];
	int per_process;
	unsigned int util;
	struct fake_proc procs[FAKE_PROCS];
	int nprocs;
};

struct fake_state {
	int init_ret;
	int ndevices;
	struct fake_device dev[FAKE_DEVICES];
};

/* Handles point here; the state is read into a copy at each call. */
static struct fake_device handles[FAKE_DEVICES];

static void load(struct fake_state *st)
{
	const char *path = getenv("FAKE_NVML_STATE");
	char line[256];
	FILE *f;
	int i;

	memset(st, 0, sizeof(*st));
	st->ndevices = 1;
	for (i = 0; i < FAKE_DEVICES; i++) {
		st->dev[i].index = i;
		st->dev[i].per_process = 1;
		snprintf(st->dev[i].name, sizeof(st->dev[i].name), "Fake GPU %d", i);
	}
	f = path ? fopen(path, "re") : NULL;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned int a, b, c;
		unsigned long long bytes;
		int n = 0;

		if (sscanf(line, "init %d", &st->init_ret) == 1)
			continue;
		if (sscanf(line, "devices %u", &a) == 1 && a <= FAKE_DEVICES) {
			st->ndevices = (int)a;
			continue;
		}
		if (sscanf(line, "name %u %n", &a, &n) == 1 && n && a < FAKE_DEVICES) {
			snprintf(st->dev[a].name, sizeof(st->dev[a].name), "%.*s",
				 (int)strcspn(line + n, "\n"), line + n);
			continue;
		}
		if (sscanf(line, "per_process %u %u", &a, &b) == 2 && a < FAKE_DEVICES) {
			st->dev[a].per_process = (int)b;
			continue;
		}
		if (sscanf(line, "util %u %u", &a, &b) == 2 && a < FAKE_DEVICES) {
			st->dev[a].util = b;
			continue;
		}
		if (sscanf(line, "proc %u %u %u %llu", &a, &b, &c, &bytes) == 4 &&
		    a < FAKE_DEVICES && st->dev[a].nprocs < FAKE_PROCS)
			st->dev[a].procs[st->dev[a].nprocs++] =
				(struct fake_proc){ .pid = b, .sm = c, .bytes = bytes };
	}
	fclose(f);
}

static const struct fake_device *device(const struct fake_state *st, const void *h)
{
	const struct fake_device *d = h;

	if (d < handles || d >= handles + FAKE_DEVICES || d->index >= st->ndevices)
		return NULL;
	return &st->dev[d->index];
}

int nvmlInit_v2(void)
{
	struct fake_state st;

	load(&st);
	return st.init_ret;
}

int nvmlShutdown(void)
{
	return OK;
}

const char *nvmlErrorString(int ret)
{
	switch (ret) {
	case OK:
		return "Success";
	case ERR_NOT_SUPPORTED:
		return "Not Supported";
	case ERR_NOT_FOUND:
		return "Not Found";
	case ERR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case 9:
		return "Driver Not Loaded";
	default:
		return "Unknown Error";
	}
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
	struct fake_state st;

	load(&st);
	*n = (unsigned int)st.ndevices;
	return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	if (i >= FAKE_DEVICES)
		return ERR_INVALID_ARGUMENT;
	handles[i].index = (int)i;
	*dev = &handles[i];
	return OK;
}

int nvmlDeviceGetName(void *h, char *name, unsigned int len)
{
	struct fake_state st;
	const struct fake_device *d;

	load(&st);
	d = device(&st, h);
	if (!d || !len)
		return ERR_INVALID_ARGUMENT;
	snprintf(name, len, "%s", d->name);
	return OK;
}

int nvmlDeviceGetUtilizationRates(void *h, struct utilization *u)
{
	struct fake_state st;
	const struct fake_device *d;

	load(&st);
	d = device(&st, h);
	if (!d)
		return ERR_INVALID_ARGUMENT;
	u->gpu = d->util;
	u->memory = 0;
	return OK;
}

/* As NVML: with too small a buffer, the count needed and
 * NVML_ERROR_INSUFFICIENT_SIZE. */
int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count,
					    struct process_info *infos)
{
	struct fake_state st;
	const struct fake_device *d;
	int i;

	load(&st);
	d = device(&st, h);
	if (!d || !count)
		return ERR_INVALID_ARGUMENT;
	if (*count < (unsigned int)d->nprocs) {
		*count = (unsigned int)d->nprocs;
		return ERR_INSUFFICIENT_SIZE;
	}
	for (i = 0; i < d->nprocs; i++)
		infos[i] = (struct process_info){ .pid = d->procs[i].pid,
						  .used_gpu_memory = d->procs[i].bytes };
	*count = (unsigned int)d->nprocs;
	return OK;
}

int nvmlDeviceGetProcessUtilization(void *h, struct process_sample *s, unsigned int *count,
				    unsigned long long last_seen)
{
	struct fake_state st;
	const struct fake_device *d;
	struct timespec ts;
	unsigned long long now;
	int i;

	load(&st);
	d = device(&st, h);
	if (!d || !count)
		return ERR_INVALID_ARGUMENT;
	if (!d->per_process)
		return ERR_NOT_SUPPORTED;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
	if (!d->nprocs || now <= last_seen)
		return ERR_NOT_FOUND;
	/* NULL: the size needed. */
	if (!s || *count < (unsigned int)d->nprocs) {
		*count = (unsigned int)d->nprocs;
		return s ? ERR_INSUFFICIENT_SIZE : OK;
	}
	for (i = 0; i < d->nprocs; i++)
		s[i] = (struct process_sample){ .pid = d->procs[i].pid,
						.timestamp = now,
						.sm_util = d->procs[i].sm };
	*count = (unsigned int)d->nprocs;
	return OK;
}
