/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A profiling session: the set of tracked processes (the root, its children,
 * later a whole host), their interpreters, and the path of each sample from a
 * BPF record to a resolved stack in the profile.
 */
#ifndef SESSION_H
#define SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loader;
struct profile;
struct py_proc;
struct json_object;
struct user_creds;

struct session_opts {
	struct profile *profile;
	uint64_t period_ns;
	int ncpus;
	bool memory; /* the allocation sampler is preloaded into the program */
	/* Whose files the profile may show: source text is read with these
	 * file-system credentials (the user under sudo), never root's. */
	const struct user_creds *creds;
};

struct session;

struct session *session__new(const struct session_opts *opts);
void session__free(struct session *s);
/* The loader feeding this session (it needs the session as its callback
 * context, so it is made second). */
void session__set_loader(struct session *s, struct loader *l);

/* Starts following pid.  With pp (an attach), the process is already known
 * as Python; without it (a launch), it is recognised after its exec. */
int session__add_root(struct session *s, int pid, const struct py_proc *pp);
/* The ring-buffer callback. */
int session__handle(void *ctx, const void *data, size_t size);
/* Periodic work: retries recognising processes that are starting up.
 * now_ns is CLOCK_MONOTONIC. */
void session__tick(struct session *s, uint64_t now_ns);
/* How long the loader may wait before it drains the ring buffer again, in
 * milliseconds: shorter while code objects come and go. */
int session__poll_ms(const struct session *s, uint64_t now_ns);
/* True once the root process has exited. */
bool session__root_exited(const struct session *s);
/* The root's interpreter, if recognised. */
const struct py_proc *session__root_python(const struct session *s);
/* How many processes were recognised as Python. */
int session__interpreters(const struct session *s);
/* Why the root process was not profiled, in a phrase. */
void session__explain_root(const struct session *s, char *buf, size_t n);
/* Facts about the run for the profile's "scalene_bpf" key. */
struct json_object *session__facts(struct session *s);
/* What memory profiling could not measure, one sentence per line (empty
 * when it all went as planned); the caller frees it. */
char *session__memory_warnings(struct session *s);
/* A process's view of a file name: its root and working directory. */
char *session__read_source(void *ctx, const char *filename, size_t *len, double *mtime);

#endif /* SESSION_H */
