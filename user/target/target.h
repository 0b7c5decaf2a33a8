/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What is being profiled, as the profile names it: the command to start (run)
 * or the command line found (attach), the main script, its directory (whose
 * files are profiled by default) and the program's arguments.
 */
#ifndef TARGET_H
#define TARGET_H

#include <stdbool.h>

/* The file name CPython gives the code of `python -c CODE`. */
#define TARGET_COMMAND_FILE "<string>"

struct target {
	char **exec_argv; /* run: what to exec, NULL-terminated */
	char *exec_path;  /* run: exec_argv[0] as found in PATH */
	char *program;	  /* absolute path of the main script, or a module/command */
	/* python -c CODE: the code, which the program's frames name as
	 * TARGET_COMMAND_FILE; NULL otherwise. */
	const char *command;
	char *program_dir;
	/* program_dir as the command line reached it, when that went through a
	 * symbolic link: the interpreter names the script's files that way. */
	char *program_dir_given;
	char **args; /* the script and its arguments, as Scalene records them */
	int nargs;
	char **owned; /* strings to free */
	int nowned;
};

/* What `run` was given to start. */
struct target_command {
	char **argv; /* a script and its arguments, or a command; NULL-terminated */
	int argc;
	bool raw;	    /* a command (given after --), exec'ed as is */
	const char *python; /* the interpreter for a script (found in PATH) */
};

/* run: checks that the script and interpreter exist.  0, or -errno after a
 * message. */
int target_from_command(const struct target_command *c, struct target *t);
/* A running process (--pid, --all): from /proc/PID/cmdline and cwd. */
int target_from_pid(int pid, struct target *t);
/* A copy of what src describes (not the command to start): a fork
 * child's, taken from its parent.  0 or -ENOMEM. */
int target_copy(struct target *dst, const struct target *src);
void target_free(struct target *t);

/* Finds name in PATH the way execvp does; 0 and the path in out, or -ENOENT. */
int find_in_path(const char *name, char *out, unsigned long n);
/* The file the kernel runs when path is exec'ed: path itself, or a
 * script's interpreter from its #! line (through /usr/bin/env NAME: NAME
 * found in PATH).  0 and the path in out, or -errno. */
int target_exec_image(const char *path, char *out, unsigned long n);
/* Fills program, program_dir and args from a Python command line (argv[0]
 * is the interpreter) run in cwd.  Exposed for its tests. */
int target_describe(struct target *t, char *const *argv, int argc, const char *cwd);

#endif /* TARGET_H */
