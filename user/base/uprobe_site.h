/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where to put an entry uprobe so that the kernel emulates the probed
 * instruction instead of single-stepping it out of line (x86-64).  A
 * single-stepped probe costs about ten times as much (~10 us against ~1 us
 * on a 6.18 VM), which on malloc is the difference between a usable and an
 * unusable profiler.  The kernel emulates push, jumps, calls and conditional
 * branches; this looks for the first of those in a function's prologue, over
 * a few instructions that change neither control flow nor the argument
 * registers the probe reads.
 */
#ifndef UPROBE_SITE_H
#define UPROBE_SITE_H

#include <stddef.h>
#include <stdint.h>

/* Argument registers (System V order), for the mask below. */
enum {
	ARG_RDI = 1 << 0,
	ARG_RSI = 1 << 1,
	ARG_RDX = 1 << 2
};

/*
 * code: the function's first bytes; args: the ARG_* registers the probe
 * reads.  Returns the offset of the first emulated instruction reached before
 * anything that could branch or write those registers, or -1 with a reason
 * in why.
 */
int uprobe_site(const uint8_t *code, size_t n, unsigned int args, char *why, size_t whylen);

#endif /* UPROBE_SITE_H */
