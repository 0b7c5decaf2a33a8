/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Starting the profiled program and writing files on behalf of the user who
 * asked.  Under sudo both happen as the invoking user (SUDO_UID, SUDO_GID,
 * that user's groups): the program never runs as root and the profile
 * belongs to its owner.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct user_creds {
	bool drop; /* switch to uid/gid (running under sudo as root) */
	uid_t uid;
	gid_t gid;
	gid_t groups[256];
	int ngroups;
	char name[64];
	char home[4096];
};

/* From SUDO_UID/SUDO_GID/SUDO_USER when running as root; 0 or -EINVAL with a
 * message when they are malformed. */
int creds_from_env(struct user_creds *c);

/* In a child about to exec: becomes the user for good (groups, gid, uid,
 * HOME, USER).  0 or -errno; nothing to do when not under sudo. */
int runner_become_user(const struct user_creds *c);

struct launch {
	pid_t pid;
	int gate_fd; /* write end: the child execs once it is closed */
	int err_fd;  /* read end: errno of a failed exec */
	/* "NAME=value" strings set in the child's environment before it execs
	 * (after the privilege drop), NULL-terminated; may be NULL. */
	const char *const *env;
};

/* Forks the child; it waits at the gate, then drops privileges and execs
 * argv.  0 or -errno. */
int runner_spawn(char *const argv[], const struct user_creds *c, struct launch *l);
/* Opens the gate; returns 0 once the child has exec'ed, or -errno of the
 * failed exec (and reaps the child). */
int runner_release(struct launch *l);
/* Kills and reaps a child that never passed the gate. */
void runner_abort(struct launch *l);
/* Shell-style exit status of a wait status: the code, or 128 + signal. */
int exit_status_of(int wstatus);

/* The allocation sampler library to preload: $SCALENE_BPF_SAMPLER_LIB, or
 * next to this executable (build tree, then installed layout); writes its
 * absolute path into buf.  0 or -errno. */
int find_sampler_lib(char *buf, size_t n);

/* File-system credentials only: the calling thread opens files as the user
 * while keeping root's right to use BPF.  runner_fs_user(NULL or creds
 * without drop) changes nothing; runner_fs_self restores. */
struct fs_creds {
	uid_t uid;
	gid_t gid;
};

void runner_fs_user(const struct user_creds *c, struct fs_creds *saved);
void runner_fs_self(const struct fs_creds *saved);

/* Checks that path can be written by the user, before the run. */
int outfile_check(const char *path, const struct user_creds *c);
/* Writes data to path as the user: a new file in the same directory, then
 * renamed over path, so that a symlink or a file planted there is never
 * followed or clobbered in place.  0 or -errno. */
int outfile_write(const char *path, const char *data, size_t len, const struct user_creds *c);

#endif /* RUNNER_H */
