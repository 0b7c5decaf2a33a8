/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `scalene-bpf top`: the profile of run, --pid or --all shown as it is
 * taken, redrawn every refresh: the hottest lines, functions or (--all)
 * processes.
 *
 * On a terminal (stdin and stdout both one) the view takes it over: raw
 * mode, the alternate screen, keys read between the profiling loop's turns.
 * Meanwhile the program's input is /dev/null and its output, with
 * scalene-bpf's own messages, goes to a file that is printed when the view
 * closes.  The terminal is restored on every way out: top__free, exit(), a
 * fatal signal.  Elsewhere each refresh prints a plain frame.
 */
#ifndef TOP_H
#define TOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

struct profile;
struct host;

struct top_opts {
	double refresh_s;
	bool once; /* top__finish does not wait for q */
	bool all;  /* --all: the processes mode, the PID filter */
	int verbose;
	/* Set by the program's signal handler: stop waiting (NULL: none). */
	volatile sig_atomic_t *stop;
	bool batch; /* plain frames even on a terminal (tests) */
};

/* What is shown: one profile (run, --pid) or every profile of the host. */
struct top_src {
	const struct profile *profile;
	const struct host *host;
	const char *what;  /* what is profiled, one line */
	double elapsed_s;  /* since the profiling began */
	const char *state; /* NULL while profiling, else how it ended */
};

struct top;

/* NULL with errno set after a message. */
struct top *top__new(const struct top_opts *o);
/* Reads the keys typed and redraws when due; true once the user has asked
 * to quit (q, Ctrl-C). */
bool top__tick(struct top *t, const struct top_src *src);
/* The profile has ended (src->state says how): the last view, and on a
 * terminal, unless once or the user already quit, waiting for q. */
void top__finish(struct top *t, const struct top_src *src);
/* Gives the terminal back, then prints the last view, the output kept while
 * the view was up and, with -v, what drawing cost. */
void top__free(struct top *t);

/* One plain frame of width columns and at most rows rows (0: no limit) to
 * f, as the view would show it now; for tests. */
void top__draw_to(struct top *t, const struct top_src *src, FILE *f, int width, int rows);
/* A key as if typed; for tests. */
void top__key(struct top *t, int c);

#endif /* TOP_H */
