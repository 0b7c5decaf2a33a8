/* SPDX-License-Identifier: BSD-2-Clause */
/* Command line (and -c config file) into struct options; no side effects. */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

enum command {
	CMD_NONE = 0,
	CMD_RUN,    /* scalene-bpf run [options] prog.py args | -- cmd args */
	CMD_ATTACH, /* scalene-bpf --pid N [options] */
	CMD_ALL,    /* scalene-bpf --all [filters] [options] */
	CMD_VIEW,   /* scalene-bpf view [--cli|--html|--format F] [profile.json] */
	CMD_HELP,
	CMD_VERSION,
};

#define MAX_FILTERS 64

/* --pid --memory: the part of the program's CPU time its allocation
 * probes may take (user/session/memduty.h). */
#define MEMORY_BUDGET_DEFAULT 0.05

/* --pid --memory: how allocations are seen (--memory-method). */
enum memory_method {
	MEMORY_METHOD_AUTO,   /* the sampler put in where the interpreter allows it, else probes */
	MEMORY_METHOD_INJECT, /* the sampler put in (user/session/meminject.h), or nothing */
	MEMORY_METHOD_PROBES, /* uprobes on the allocators, under the budget */
};

struct options {
	enum command cmd;
	const char *outfile;
	const char *python; /* interpreter for a script; default python3 */
	char **argv;	    /* run: the command to start, NULL-terminated */
	int argc;
	bool raw_command; /* run: argv given after --, exec'ed as is */
	int pid;
	/* --all: every Python process on the host that the filters take */
	bool all;
	int pids[MAX_FILTERS]; /* --pid, repeatable with --all */
	int npids;
	const char *comms[MAX_FILTERS]; /* --comm: process names */
	int ncomms;
	const char *uids[MAX_FILTERS]; /* --uid: user IDs or names */
	int nuids;
	int exclude_pids[MAX_FILTERS]; /* --exclude-pid */
	int nexclude_pids;
	int max_profiles; /* --all: profiles of ended processes kept; 0: default */
	/* --all --continuous: a profile per process per interval of interval_s
	 * (0: DEFAULT_INTERVAL_S), their folders bounded by max_disk_mb (0:
	 * DEFAULT_MAX_DISK_MB). */
	bool continuous;
	double interval_s;
	double max_disk_mb;
	/* --continuous --otlp-endpoint: each interval's profiles sent there as
	 * one OTLP request, with headers ("Name: value", from --header), from a
	 * queue of at most queue_mb (0: DEFAULT_QUEUE_MB). */
	const char *otlp_endpoint;
	/* --continuous --pyroscope: each interval's profiles sent to that
	 * Pyroscope server's ingest API, under pyroscope_app (NULL: each
	 * process's own name); the headers and the queue's bound as above. */
	const char *pyroscope_url;
	const char *pyroscope_app;
	const char *headers[MAX_FILTERS];
	int nheaders;
	double queue_mb;
	double duration; /* attach: seconds, 0 = until Ctrl-C or exit */
	unsigned int rate_hz;
	bool cpu_only;
	bool memory;	      /* attach: memory profiling (uprobes) asked for */
	double memory_budget; /* --pid --memory: the probes' most cost, a fraction of the
				 program's CPU time (0: MEMORY_BUDGET_DEFAULT; 1: no bound) */
	enum memory_method memory_method;   /* --pid --memory */
	unsigned long long sampling_window; /* mean bytes between allocation samples; 0: default */
	unsigned long long copy_window;	    /* same for copies */
	bool no_leaks;			    /* no leak report */
	bool profile_all;
	bool idle;
	bool no_follow;
	bool profile_builtin;	      /* run: @profile provided whatever the look finds */
	bool no_async;		      /* no await attribution */
	bool native;		      /* native and kernel frames in the stacks */
	bool native_unwind_bpf;	      /* --native-unwind bpf */
	bool no_gpu;		      /* run: no GPU library for CUDA programs */
	unsigned int gpu_call_sample; /* run: 1 in N CUDA calls probed (0: every one) */
	const char *profile_only[MAX_FILTERS];
	int nprofile_only;
	const char *profile_exclude[MAX_FILTERS];
	int nprofile_exclude;
	double cpu_percent_threshold;
	double profile_interval;
	const char *config;
	int verbose;
	/* top: the live view of run, --pid or --all (cmd says which) */
	bool top;
	double refresh; /* seconds between redraws; 0: default */
	bool once;	/* exit when the profile ends instead of waiting for q */
	/* view */
	const char *view_file;
	bool view_cli;
	bool view_all_lines;
	bool view_html;		   /* write the HTML view */
	const char *view_html_out; /* where; NULL: next to the profile */
	const char *view_format;   /* export: folded, speedscope or pprof */
	char **owned;
	int nowned;
};

#define DEFAULT_RATE_HZ 997
#define DEFAULT_OUTFILE "scalene-profile.json"
#define DEFAULT_OUTDIR "scalene-bpf-profiles"
#define DEFAULT_REFRESH_S 1.0
#define DEFAULT_INTERVAL_S 60.0
#define DEFAULT_MAX_DISK_MB 1024.0
#define DEFAULT_QUEUE_MB 64.0

/* Parses argv into *o.  Returns 0, or -EINVAL after printing a one-line
 * reason to err. */
int options_parse(int argc, char **argv, struct options *o, FILE *err);
/* Reads a config file of "key: value" lines (long option names) into *o;
 * command-line options given afterwards override it. */
int options_load_config(const char *path, struct options *o, FILE *err);
void options_usage(FILE *f);
void options_free(struct options *o);

#endif /* OPTIONS_H */
