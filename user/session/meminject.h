/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --pid --memory without a trap per allocation: the allocation sampler
 * (user/sampler) put into the running interpreter and taken out again.
 *
 * A CPython 3.14+ that allows it runs a short script the profiler sends it
 * (PEP 768, target/remote_exec.h); 3.9-3.13 run it from a call put into the
 * interpreter's queue of pending calls (target/pending_call.h).  The script loads a copy of the sampler
 * from a directory the profiler made in the process's own /tmp and calls
 * scalene_bpf_sampler_attach() with the GIL held, which wraps Python's MEM
 * and OBJ allocator domains.  From then on the process pays what a `run`
 * pays for them: a countdown per allocation and a probe per sampled one.
 *
 * While attached the profiler changes the sampler's heartbeat word at
 * least every second; at the end it sets the detach word.  Either way (its
 * word, or its silence when it is killed) the sampler's own thread has the
 * interpreter put the allocators back as they were.  Native allocations
 * (libc's malloc from C code) and copies are not seen this way: dlopen does
 * not interpose on code already bound.
 */
#ifndef MEMINJECT_H
#define MEMINJECT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct py_proc;
struct facts_inject;

struct meminject_opts {
	const struct py_proc *pp;
	const char *sampler;   /* the library to copy in */
	uint64_t sample_bytes; /* mean bytes between samples */
};

struct meminject;

/* Makes the files the script needs in the process's /tmp.  NULL with errno
 * set and the reason in why: -ENOTSUP (no way in for this interpreter),
 * -EPERM (refused by the interpreter), or -errno. */
struct meminject *meminject__new(const struct meminject_opts *o, char *why, size_t whylen);
/* The copy of the library, as this process reaches it: where the loader
 * places the sampler's probes. */
const char *meminject__library(const struct meminject *m);
/* Sends the request: 0, or -errno with why. */
int meminject__start(struct meminject *m, char *why, size_t whylen);
/* Reads the script's answer once it came, and beats. */
void meminject__tick(struct meminject *m, uint64_t now);
/* Milliseconds until the next tick is due, at most max_ms. */
int meminject__due_ms(const struct meminject *m, uint64_t now, int max_ms);
/* Detaches: asks for the allocators back, waits up to a second for them,
 * takes back a request never taken, and removes the files. */
void meminject__end(struct meminject *m);
/* What happened, for the profile. */
void meminject__facts(const struct meminject *m, struct facts_inject *out);
void meminject__free(struct meminject *m);

#endif /* MEMINJECT_H */
