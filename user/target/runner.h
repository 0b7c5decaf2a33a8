/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Starting the profiled program on behalf of the user who asked: under sudo
 * as the invoking user (creds.h), never as root.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/creds.h"

struct launch {
	pid_t pid;
	int gate_fd; /* write end: the child execs once it is closed */
	int err_fd;  /* read end: errno of a failed exec */
	/* "NAME=value" strings set in the child's environment before it execs
	 * (after the privilege drop), NULL-terminated; may be NULL. */
	const char *const *env;
};

/* Forks the child; it waits at the gate, then drops privileges and execs
 * argv.  0 or -errno. */
int runner_spawn(char *const argv[], const struct user_creds *c, struct launch *l);
/* Opens the gate; returns 0 once the child has exec'ed, or -errno of the
 * failed exec (and reaps the child). */
int runner_release(struct launch *l);
/* Kills and reaps a child that never passed the gate. */
void runner_abort(struct launch *l);
/* Shell-style exit status of a wait status: the code, or 128 + signal. */
int exit_status_of(int wstatus);

/* The allocation sampler library to preload: $SCALENE_BPF_SAMPLER_LIB, or
 * next to this executable (build tree, then installed layout); writes its
 * absolute path into buf.  0 or -errno. */
int find_sampler_lib(char *buf, size_t n);
/* The GPU library (user/gpu/gpu.h) for CUDA_INJECTION64_PATH: likewise,
 * from $SCALENE_BPF_GPU_LIB or next to this executable. */
int find_gpu_lib(char *buf, size_t n);

#endif /* RUNNER_H */
