/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scalene-compatible JSON (json-c): the profile model plus the run's facts
 * become the document Scalene's viewers open.  Strict about the format: every
 * number finite, integers written as integers, strings valid UTF-8, dense
 * `lines` per file (Scalene's viewer indexes a file's lines by position, so
 * every line from 1 to the last sampled one is written).
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The reporting threshold unless one is given (--cpu-percent-threshold), as
 * Scalene's: files under this percent of the time are left out of a
 * profile, lines under it out of the views. */
#define DEFAULT_CPU_PERCENT_THRESHOLD 1.0

struct profile;
struct json_object;
struct facts;
struct facts_process;
struct proc_labels;

/* Returns the source text of a profiled file (malloc'ed) or NULL, and the
 * file's modification time (Unix time, s). */
typedef char *(*read_source_fn)(void *ctx, const char *filename, size_t *len, double *mtime);

struct output_meta {
	const char *program;	 /* absolute path of the main script */
	const char *const *args; /* the program's argv, as the user gave it */
	int nargs;
	const char *program_dir;
	/* python -c CODE: the code, the source of its file TARGET_COMMAND_FILE
	 * (target.h); NULL otherwise. */
	const char *command;
	double elapsed_sec;
	double start_time_absolute;   /* Unix time, s */
	double start_time_perf;	      /* CLOCK_MONOTONIC, s */
	uint64_t main_thread_id;      /* pthread_t of the main thread, 0 if unknown */
	int main_pid;		      /* the process main_thread_id is of, 0 if unknown */
	double cpu_percent_threshold; /* files below it are left out */
	bool memory;		      /* memory was profiled: the memory fields are filled */
	bool leaks;		      /* report suspected leaks */
	bool no_footprint;	      /* memory from uprobes: allocations only, frees not seen */
	bool async_waits; /* await attribution was on: the n_async_* fields are filled */
	read_source_fn read_source;
	void *ctx;
	const struct facts *facts; /* this profiler's, written as "scalene_bpf"; NULL: none */
};

/* Builds the document; NULL on allocation failure. */
struct json_object *output_build(const struct profile *p, const struct output_meta *m);

/* Writes the same document to fd piece by piece: each line, stack and
 * small field is built, serialised and freed in turn, so that the whole
 * document never sits in memory.  0 or -errno. */
int output_write(const struct profile *p, const struct output_meta *m, int fd);

/* A profile and its meta for output_emit, which writes them to fd as
 * output_write does (safefile.h's outfile_emit_fn); keep: where the
 * document written is handed over as well, for a caller that goes on to
 * use it (the caller's to put; NULL if it could not be built). */
struct output_job {
	const struct profile *p;
	const struct output_meta *m;
	struct json_object **keep;
};
int output_emit(int fd, void *job);

/* The facts as the "scalene_bpf" object (output_facts.c), with how p's
 * stack timeline was thinned; the output adds what it measures itself
 * (stack_bounds, allocation_churn).  NULL on allocation failure. */
struct json_object *output_facts_json(const struct facts *f, const struct profile *p);
/* Who a process is, as its profile's facts and the index of --all say. */
struct json_object *output_identity_json(const struct facts_process *pr);
/* A process's labels, those it has, in OpenTelemetry's names (cgroup,
 * container.id, k8s.pod.uid, k8s.namespace.name, k8s.pod.name). */
struct json_object *output_labels_json(const struct proc_labels *l);

/* Serialises doc to a malloc'ed string (strict JSON, UTF-8). */
char *output_to_string(struct json_object *doc);

/* Helpers, exposed for their tests. */
/* Copies s, replacing invalid UTF-8 sequences with U+FFFD. */
char *utf8_sanitize(const char *s, size_t len);
/* A finite double: NaN and infinities become 0. */
double finite_or_zero(double x);
/* Scalene's line text: &, < and > spelled as the literal text \u0026 etc.,
 * so that a profile pasted into a <script> cannot end it. */
char *scalene_line_text(const char *s, size_t len);

#endif /* OUTPUT_H */
