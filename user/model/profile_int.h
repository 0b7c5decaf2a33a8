/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The profile model's own state, shared by its files and nothing else:
 * profile.c (files, lines, functions, stacks, threads and the CPU samples),
 * profile_mem.c (the memory model) and profile_await.c (await time).
 */
#ifndef PROFILE_INT_H
#define PROFILE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/profile.h"

struct hmap;
struct strtab;

#define MAX_STACKS 20000
/* Threads with statistics of their own; the threads after them share one
 * entry, so that a service starting threads all day keeps a bounded model. */
#define MAX_THREAD_STATS 2048
/* Line numbers beyond this are not real source lines. */
#define MAX_LINENO 10000000
/* Sampled blocks followed until their free, all processes together: the
 * sampler itself tracks at most 32768 per process. */
#define MAX_LIVE_BLOCKS (1 << 20)
/* Installed packages tallied for the outside-files warning. */
#define MAX_OUTSIDE_PKGS 16

struct func_key {
	const char *file;
	const char *qualname;
	int firstlineno;
	int pad;
};

struct thread_key {
	int tgid, tid;
};

struct block_key {
	int tgid, pad;
	uint64_t addr;
};

/* A sampled block not yet freed, and where it was allocated. */
struct live_block {
	struct mem_stats *line, *func;
	double bytes;
	int small; /* its net window (mem_stats.win_up) */
};

struct stack_node {
	struct stack_node *next; /* same hash */
	int index;
};

struct profile {
	struct profile_filter filter;
	struct strtab *strings;
	uint64_t serial;	    /* profile__serial */
	struct hmap *files_by_path; /* interned path -> index + 1 */
	struct file_stats **files;
	int nfiles;
	struct hmap *funcs; /* struct func_key -> struct func_stats */
	struct hmap *stacks_by_hash;
	struct stack_stats **stacks;
	int nstacks;
	uint64_t stacks_dropped;
	struct stack_stats *overflow; /* stacks that found the table full */
	struct hmap *threads_by_key;
	struct thread_stats *other_threads; /* past MAX_THREAD_STATS */
	uint64_t threads_folded;	    /* threads counted in it */
	struct thread_stats **threads;
	int nthreads;
	double total_ns, not_python_ns, gil_ns;
	double split_ns[3]; /* of total_ns: Python, native, system (blocked time too) */
	double blocked_ns;  /* of total_ns: off-CPU */
	double unattributed_ns[UNATTR_MAX];
	/* Of total_ns: the CPU time of threads with no Python frame, credited to
	 * their main thread's line (credit_to_main_line). */
	double native_threads_ns;
	double pending_ns;	   /* native threads' CPU time waiting for its line */
	bool native_threads_apart; /* profile__credit_native_threads(p, false) */
	/* Installed packages whose code ran in samples outside the profiled
	 * files, for the warning that suggests --profile-only. */
	struct outside_pkg {
		const char *name; /* interned */
		double ns;
	} outside[MAX_OUTSIDE_PKGS];
	uint64_t samples, truncated;
	uint64_t rng;
	struct hmap *blocks; /* struct block_key -> struct live_block */
	struct profile_memory mem;
	struct profile_timeline timeline;
	struct profile_tracks tracks;
	struct decorated_fn *decorated;
	int ndecorated;
	struct hmap *decorated_by_code; /* struct decorated_key -> index + 1 */
	struct profile_gpu *gpu;	/* NULL until a process's GPU library collects */
	double await_ns, await_unattributed_ns;
	struct await_outside await_outside[MAX_AWAIT_OUTSIDE];
	int nawait_outside;
	double await_outside_other_ns;
	struct hmap *await_by_key; /* struct await_key -> index + 1 */
	struct await_stack *await_stacks;
	int nawait_stacks;
	uint64_t await_stacks_dropped;
};

struct decorated_key {
	const char *file; /* interned */
	int64_t firstlineno;
};

/* Most of the sampled Python time outside the profiled files: the profile
 * says little of what the program did, which the user is told. */
#define OUTSIDE_WARN_SHARE 0.5
/* ... and at least this much of it: Python's own start-up runs outside
 * every file of the program, and a program of a few milliseconds is mostly
 * start-up. */
#define OUTSIDE_WARN_MIN_NS 100e6

/* A stack's identity: its frames, its leaf native symbol, and whether its
 * outermost frames are missing. */
struct stack_key {
	const struct frame_ref *frames; /* innermost first */
	int nframes;
	const char *native_sym;
	const char *native_module;
	bool truncated;
	/* Each frame's address (0 for a Python frame), or NULL: kept from the
	 * stack's first sample, not part of its identity. */
	const uint64_t *ips;
};

void *profile_grow(void *arr, int n, size_t elem);
/* profile_tracks.c: a sample's intervals (at: its line's frame, or NULL;
 * prev_ns: the time of its thread's previous sample, 0 if not known). */
void profile_tracks_add(struct profile *p, const struct sample_in *s, const struct frame_ref *at,
			double cpu, double blocked, double gil, uint64_t prev_ns);
void profile_tracks_restart(struct profile *p);
struct file_stats *profile_file_get(struct profile *p, const char *path);
struct line_stats *profile_line_get(struct file_stats *f, int line);
/* profile_gpu.c: a sample of a process whose GPU library collects waits
 * for the GPU's use at its time; the model's GPU part freed. */
/* A record of tgid's main thread (innermost frame first) made at ts_ns: the
 * calls of its threads with no Python frame made before it and not given a
 * line yet take its line. */
void profile_gpu_main_record(struct profile *p, int tgid, const struct frame_ref *frames, int n,
			     uint64_t ts_ns);
void profile_gpu_sample(struct profile *p, int tgid, uint64_t ts, double ns, struct line_stats *st,
			struct line_stats *fst);
void profile_gpu_free(struct profile *p);
/* profile__restart's parts in the files that own them. */
void profile_gpu_restart(struct profile *p);
/* Marks (held) the stacks the GPU launch sites point at. */
void profile_gpu_hold_stacks(struct profile *p);
void profile_mem_restart(struct profile *p);
void profile_mem_stats_restart(struct mem_stats *m);
void profile_await_restart(struct profile *p);
struct func_stats *profile_func_get(struct profile *p, struct file_stats *f,
				    const struct frame_ref *frames, int nframes, int at);
struct stack_stats *profile_stack_get(struct profile *p, const struct stack_key *k, int *index);
struct thread_stats *profile_thread_get(struct profile *p, int tgid, int tid);
int profile_attributed_frame(const struct profile *p, const struct frame_ref *frames, int n);

#endif /* PROFILE_INT_H */
