/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CUPTI, found and opened at run time by the injection library.  The library
 * names no libcupti at link time: the wheel cannot carry one (it must match
 * the program's CUDA), and the CUPTI that goes with a program is wherever
 * its CUDA came from: the toolkit, or the nvidia-* pip packages that
 * PyTorch installs.  In order, the first that opens wins:
 *
 *   1. a libcupti the process has loaded already (PyTorch's profiler does);
 *   2. next to the CUDA runtime the process loaded (libcudart.so.N): in its
 *      folder (the toolkit's lib64, CUDA 13's pip layout nvidia/cu13/lib),
 *      ../extras/CUPTI/lib64, and ../../cuda_cupti/lib (CUDA 12's pip
 *      layout, nvidia/cuda_runtime/lib beside nvidia/cuda_cupti/lib);
 *   3. libcupti.so.N by the dynamic linker's search (LD_LIBRARY_PATH, the
 *      system's cache), N the runtime's major, else the driver's and the
 *      majors below it; then libcupti.so;
 *   4. the toolkit's folders under $CUDA_HOME and /usr/local/cuda;
 *   5. where the library was built against one (a `make` build only).
 */
#ifndef SBG_CUPTILOAD_H
#define SBG_CUPTILOAD_H

#include <stddef.h>

#include <cupti.h>

#include "gpu.h"

struct cupti_api {
	__typeof__(cuptiGetVersion) *GetVersion;
	__typeof__(cuptiGetResultString) *GetResultString;
	__typeof__(cuptiSubscribe) *Subscribe;
	__typeof__(cuptiUnsubscribe) *Unsubscribe;
	__typeof__(cuptiEnableCallback) *EnableCallback;
	__typeof__(cuptiActivityEnable) *ActivityEnable;
	__typeof__(cuptiActivityRegisterCallbacks) *ActivityRegisterCallbacks;
	__typeof__(cuptiActivitySetAttribute) *ActivitySetAttribute;
	__typeof__(cuptiActivityRegisterTimestampCallback) *ActivityRegisterTimestampCallback;
	__typeof__(cuptiActivityFlushAll) *ActivityFlushAll;
	__typeof__(cuptiActivityGetNextRecord) *ActivityGetNextRecord;
	__typeof__(cuptiActivityGetNumDroppedRecords) *ActivityGetNumDroppedRecords;
#ifdef CUPTI_SUBSCRIBER_NAME_MAX_LEN
	/* Optional (NULL when the CUPTI lacks it): a subscribe that gives our
	 * name and, when refused, the name of the client already there. */
	__typeof__(cuptiSubscribe_v2) *Subscribe_v2;
#endif
};

/*
 * Opens the CUPTI that goes with this process's CUDA and fills api.
 * Returns 0 with where it came from in *from and its path in path, or
 * -ENOENT (none found: what was tried in why) or -ENOSYS (one opened but
 * lacks a function api needs: its path and the function in why).
 */
int cupti_load(struct cupti_api *api, enum gpu_cupti_from *from, char *path, size_t pathlen,
	       char *why, size_t whylen);

#endif /* SBG_CUPTILOAD_H */
