/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The profile model: samples resolved to Python frames go in, per-file,
 * per-line, per-function, per-stack and per-thread aggregates come out.  It
 * knows nothing of BPF or of the output format.
 *
 * Time is kept in nanoseconds of sampled time.  Each sample is attributed to
 * the innermost frame whose file is profiled (the program's own files by
 * default), as Scalene does: time spent inside a library lands on the line of
 * the program that called it.
 */
#ifndef PROFILE_H
#define PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPU_SAMPLES_RESERVOIR 500
#define LINE_NATIVE_SYMS 8

/* One resolved Python frame; strings are interned (profile__intern). */
struct frame_ref {
	const char *filename;
	const char *qualname;
	int firstlineno;
	int line;
};

enum sample_where {
	WHERE_PYTHON = 0, /* user mode, in the interpreter */
	WHERE_NATIVE,	  /* user mode, anywhere else */
	WHERE_SYSTEM,	  /* kernel mode */
};

/* Why a sample has no Python frame to go to. */
enum unattributed_reason {
	UNATTR_NO_PYTHON_THREAD = 0, /* a thread without a Python thread state */
	UNATTR_UNREADABLE,	     /* the stack or its code objects could not be read */
	UNATTR_NOT_PROFILED,	     /* frames only in files not profiled */
	UNATTR_MAX,
};

struct sample_in {
	int tgid, tid;
	bool main_thread; /* the process's main thread */
	const char *thread_name;
	uint64_t ts_ns;	 /* CLOCK_MONOTONIC */
	uint64_t cpu_ns; /* on-CPU time */
	enum sample_where where;
	uint64_t offcpu_ns;	/* blocked time */
	bool offcpu_idle;	/* blocked time of a parked worker: kept apart */
	bool not_python;	/* a process that is not (yet) Python: kept apart */
	double core_util;	/* program's CPU use / cores around this sample, 0..1 */
	const char *native_sym; /* leaf symbol of a native sample, interned, or NULL */
	const char *native_module;
	bool truncated;			/* stack deeper than the walker goes */
	int unattributed;		/* -1, or an enum unattributed_reason */
	const struct frame_ref *frames; /* innermost first */
	int nframes;
};

struct native_sym {
	const char *name;
	const char *module;
	double ns;
};

struct line_stats {
	double python_ns, native_ns, system_ns;
	double blocked_ns; /* part of system_ns spent off CPU */
	double util_sum;
	uint64_t util_n;
	uint64_t samples;
	double cpu_times[CPU_SAMPLES_RESERVOIR]; /* main-thread sample times, s */
	uint32_t ncpu_times;
	uint64_t cpu_times_seen;
	struct native_sym syms[LINE_NATIVE_SYMS];
	int nsyms;
};

struct func_stats {
	const char *qualname;
	int firstlineno;
	struct line_stats st;
};

struct file_stats {
	const char *path;
	struct line_stats **lines; /* index = line number; NULL where never sampled */
	int nlines;		   /* highest line number + 1 */
	struct func_stats **funcs;
	int nfuncs;
	double cpu_ns; /* python + native of all lines */
	double total_ns;
};

struct stack_stats {
	const struct frame_ref *frames; /* outermost first */
	int nframes;
	const char *native_sym; /* leaf native frame, if any */
	const char *native_module;
	uint64_t count;
	double python_ns, native_ns, system_ns;
};

struct thread_stats {
	int tgid, tid;
	const char *name;
	bool main_thread;
	uint64_t samples;
	double cpu_ns, blocked_ns, idle_ns;
};

struct profile_filter {
	const char *program_dir; /* files under it are profiled by default */
	bool profile_all;
	const char *const *only; /* substrings: profile only matching files */
	int nonly;
	const char *const *exclude; /* substrings: never profile matching files */
	int nexclude;
	bool idle; /* count parked threads' blocked time too */
};

struct profile;

struct profile *profile__new(const struct profile_filter *filter);
void profile__free(struct profile *p);
const char *profile__intern(struct profile *p, const char *s);
bool profile__file_profiled(const struct profile *p, const char *path);
void profile__add(struct profile *p, const struct sample_in *s);

/* Totals.  total_ns is the denominator of every percentage: all on-CPU time
 * plus the blocked time that counts (not the idle workers'). */
double profile__total_ns(const struct profile *p);
double profile__idle_ns(const struct profile *p);
/* Time of tracked processes that are not Python (launchers, shells, the
 * interpreter before it is recognised): not part of the percentages. */
double profile__not_python_ns(const struct profile *p);
double profile__unattributed_ns(const struct profile *p, enum unattributed_reason r);
uint64_t profile__samples(const struct profile *p);
uint64_t profile__truncated(const struct profile *p);
uint64_t profile__stacks_dropped(const struct profile *p);

/* Iteration over files (in first-seen order), stacks and threads. */
int profile__nfiles(const struct profile *p);
const struct file_stats *profile__file(const struct profile *p, int i);
int profile__nstacks(const struct profile *p);
const struct stack_stats *profile__stack(const struct profile *p, int i);
int profile__nthreads(const struct profile *p);
const struct thread_stats *profile__thread(const struct profile *p, int i);

/* The enclosing named function for a qualname such as "f.<locals>.<lambda>"
 * (Scalene folds comprehensions and lambdas into their function); writes
 * into buf and returns 1, or returns 0 when no such prefix exists. */
int profile_enclosing_function(const char *qualname, char *buf, size_t n);

#endif /* PROFILE_H */
