/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GPU's use by a running process, sampled through NVML: the driver's
 * libnvidia-ml.so.1, opened at run time (no build dependency, no NVIDIA
 * header: the few prototypes and structures used are declared in nvml.c).
 * For --pid, where CUPTI cannot be put into the process.
 *
 * Each poll gives the process's GPU utilisation, averaged over the
 * machine's GPUs as Scalene does (its own, from nvmlDeviceGetProcessUtilization,
 * where the device gives it; else the whole device's), and the device
 * memory it holds on all of them.  PIDs are as NVML sees them: the host's.
 */
#ifndef NVML_H
#define NVML_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* SCALENE_BPF_NVML_LIB names another library (tests use a fake). */
#define NVML_ENV_LIB "SCALENE_BPF_NVML_LIB"
#define NVML_SONAME "libnvidia-ml.so.1"
#define NVML_DEVICES_MAX 16
#define NVML_NAME_BYTES 96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
/* How often the attach loop reads it: faster than the device's own
 * utilisation sample (about 1/6 s), so that no sample is missed. */
#define NVML_POLL_MS 100

struct nvml;

struct nvml_reading {
	double busy;	  /* 0..1: utilisation over the devices, averaged */
	double mem_bytes; /* device memory of the process; < 0: not known */
};

struct nvml_facts {
	char library[PATH_MAX];
	int ndevices;
	char names[NVML_DEVICES_MAX][NVML_NAME_BYTES];
	int per_process;	  /* devices whose utilisation is the process's own
			  * (the others': the whole device's) */
	bool memory;		  /* the process's device memory is read */
	uint64_t polls, failures; /* failed: no utilisation read */
	uint64_t memory_unread;	  /* polls whose memory reading failed */
	char last_error[160];	  /* of the last failed call; "" if none */
};

/* NULL with errno set and why[] filled when there is no NVML to use: no
 * library, no driver, no GPU. */
struct nvml *nvml__open(char *why, size_t n);
/* One reading for process pid; 0, or -EIO (why in the facts). */
int nvml__poll(struct nvml *nv, int pid, struct nvml_reading *out);
void nvml__facts(const struct nvml *nv, struct nvml_facts *out);
void nvml__free(struct nvml *nv);

#endif /* NVML_H */
