/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The @profile builtin of run mode.  Programs written for Scalene decorate
 * functions with @profile, a builtin Scalene provides; when any function is
 * decorated, only decorated functions are reported.
 *
 * A private directory (mode 0755, files root's) holds a sitecustomize.py and
 * goes first on the program's PYTHONPATH.  At start-up every Python of the
 * run (children too: they inherit the environment) loads it: it takes its
 * directory off sys.path, runs the sitecustomize the interpreter would have
 * loaded otherwise, and installs builtins.profile unless something already
 * did (line_profiler's kernprof, say).  The decorator returns the function
 * unchanged and appends a line to a report file that the program's user may
 * write; the loader reads it while the run goes on and registers each
 * function with the profile model.  Interpreters started with -E, -I or -S
 * do not load it; nor can a process that is attached to (--pid).
 *
 * Only a program that uses it gets it: any module imported at start-up
 * leaves the allocator's pools in another state than the program alone
 * would, which measurably changes how fast its own code then runs (a loop
 * of int arithmetic ran 0.4-4.4% more instructions with an empty
 * sitecustomize than without, by interpreter; docs/benchmarks.md).
 */
#ifndef PYHOOK_H
#define PYHOOK_H

#include <stdbool.h>
#include <stddef.h>

struct profile;
struct target;
struct user_creds;

#define PYHOOK_ENV_REPORT "SCALENE_BPF_PROFILE_REPORT"
/* A report line: "pid\tfirstlineno\tlastlineno\tqualname\tco_filename\n"
 * (the file name last: it may hold tabs). */
#define PYHOOK_MAX_LINE 8192

struct pyhook {
	char dir[64]; /* "" when not prepared */
	char report[96];
	int fd;		      /* the report, read from offset */
	long offset;	      /* bytes of the report consumed */
	char *pythonpath_env; /* "PYTHONPATH=dir[:what it was]" */
	char report_env[160];
	int only_pid;		 /* 0, or the one process whose decorations count */
	unsigned long bad_lines; /* malformed report lines skipped */
	unsigned long refused;	 /* decorated functions past the profile's limit */
};

/* Whether the program may use the builtin: the -c command, or a .py file
 * under the program's folder (hidden folders, caches, installed packages
 * and virtual environments left out), decorates with @profile; or the look
 * stopped at its bounds before it could say.  why says which, and where. */
bool pyhook__wanted(const struct target *t, const struct user_creds *c, char *why, size_t n);
/* Whether text has a line that decorates with @profile. */
bool pyhook_text_decorates(const char *text, size_t n);

/* Creates the directory and the report file (the latter owned by the user
 * the program runs as).  The environment strings then point at them.  0 or
 * -errno; nothing is left behind on failure. */
int pyhook__prepare(struct pyhook *h, const struct user_creds *c);
/* Registers the functions decorated since the last call; returns how many
 * lines were read, or -errno. */
int pyhook__poll(struct pyhook *h, struct profile *p);
/* Removes the directory; safe on a hook never prepared. */
void pyhook__cleanup(struct pyhook *h);

struct pyhook_line {
	int pid, first, last;
	const char *qualname, *filename;
};

/* Parses one report line (without its newline) into its parts; the strings
 * point into line, which is modified.  0 or -EINVAL. */
int pyhook_parse_line(char *line, struct pyhook_line *out);

#endif /* PYHOOK_H */
