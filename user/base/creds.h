/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The user who asked, when scalene-bpf runs as root under sudo (SUDO_UID,
 * SUDO_GID, that user's groups): the profiled program, the browser and the
 * files written (see safefile.h) are theirs, never root's.  Shared by the
 * run and the view.
 */
#ifndef CREDS_H
#define CREDS_H

#include <stdbool.h>
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
int creds_become_user(const struct user_creds *c);

/* File-system credentials only: the calling thread opens files as the user
 * while keeping root's right to use BPF.  creds_fs_user(NULL or creds
 * without drop) changes nothing; creds_fs_self restores. */
struct fs_creds {
	uid_t uid;
	gid_t gid;
};

void creds_fs_user(const struct user_creds *c, struct fs_creds *saved);
void creds_fs_self(const struct fs_creds *saved);

/* Another process's ids, from /proc/PID/status: its real user and group,
 * and those its file accesses use (file-system ids).  0, -EINVAL when the
 * lines are not there, or -errno. */
struct proc_ids {
	uid_t uid, fsuid;
	gid_t gid, fsgid;
};

int creds_of_process(int pid, struct proc_ids *ids);

/* The capabilities profiling needs (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE;
 * CAP_SYS_ADMIN stands for the first two) that this process lacks in its
 * effective set, named in buf ("CAP_BPF, CAP_PERFMON"); returns how many
 * (0: it has them all). */
int creds_missing_caps(char *buf, size_t n);

#endif /* CREDS_H */
