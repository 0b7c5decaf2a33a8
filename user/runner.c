// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "runner.h"
#include "sampler.h"

static int parse_id(const char *s, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || *out > 0x7fffffff ? -EINVAL : 0;
}

int creds_from_env(struct user_creds *c)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	const char *name = getenv("SUDO_USER");
	unsigned long uid, gid;
	struct passwd *pw;
	int n;

	memset(c, 0, sizeof(*c));
	if (geteuid() != 0 || !su)
		return 0;
	if (parse_id(su, &uid) || (sg && parse_id(sg, &gid))) {
		pr_warn("SUDO_UID/SUDO_GID are not numbers; unset them or run through sudo\n");
		return -EINVAL;
	}
	/* sudo from root to root: nothing to drop. */
	if (uid == 0)
		return 0;
	pw = getpwuid(uid);
	c->drop = true;
	c->uid = uid;
	c->gid = sg ? (gid_t)gid : (pw ? pw->pw_gid : (gid_t)uid);
	snprintf(c->name, sizeof(c->name), "%s", name ? name : (pw ? pw->pw_name : ""));
	snprintf(c->home, sizeof(c->home), "%s", pw ? pw->pw_dir : "/");
	n = sizeof(c->groups) / sizeof(c->groups[0]);
	if (c->name[0] && getgrouplist(c->name, c->gid, c->groups, &n) >= 0) {
		c->ngroups = n;
	} else {
		c->groups[0] = c->gid;
		c->ngroups = 1;
	}
	return 0;
}

static int drop_privileges(const struct user_creds *c)
{
	if (!c->drop)
		return 0;
	if (setgroups(c->ngroups, c->groups) || setresgid(c->gid, c->gid, c->gid) ||
	    setresuid(c->uid, c->uid, c->uid))
		return -errno;
	/* The program sees the user's environment, as under a plain run. */
	setenv("HOME", c->home, 1);
	if (c->name[0]) {
		setenv("USER", c->name, 1);
		setenv("LOGNAME", c->name, 1);
	}
	return 0;
}

int runner_become_user(const struct user_creds *c)
{
	return drop_privileges(c);
}

int runner_spawn(char *const argv[], const struct user_creds *c, struct launch *l)
{
	int gate[2], errp[2];
	char buf;
	int err;

	if (pipe2(gate, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		close(gate[0]);
		close(gate[1]);
		return err;
	}
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		close(gate[0]);
		close(gate[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (l->pid == 0) {
		close(gate[1]);
		close(errp[0]);
		/* Wait until the probes are live: the gate closes. */
		while (read(gate[0], &buf, 1) < 0 && errno == EINTR)
			;
		close(gate[0]);
		err = drop_privileges(c);
		for (const char *const *e = l->env; !err && e && *e; e++) {
			if (putenv((char *)*e))
				err = -errno;
		}
		if (!err) {
			execvp(argv[0], argv);
			err = -errno;
		}
		(void)!write(errp[1], &err, sizeof(err));
		_exit(127);
	}
	close(gate[0]);
	close(errp[1]);
	l->gate_fd = gate[1];
	l->err_fd = errp[0];
	return 0;
}

int runner_release(struct launch *l)
{
	int child_err = 0;
	ssize_t n;

	close(l->gate_fd);
	l->gate_fd = -1;
	/* EOF (exec succeeded: the pipe was close-on-exec) or an errno. */
	do {
		n = read(l->err_fd, &child_err, sizeof(child_err));
	} while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == sizeof(child_err) && child_err < 0) {
		waitpid(l->pid, NULL, 0);
		return child_err;
	}
	return 0;
}

void runner_abort(struct launch *l)
{
	if (l->pid <= 0)
		return;
	kill(l->pid, SIGKILL);
	if (l->gate_fd >= 0)
		close(l->gate_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	waitpid(l->pid, NULL, 0);
}

int exit_status_of(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

void runner_fs_user(const struct user_creds *c, struct fs_creds *saved)
{
	saved->uid = setfsuid(-1);
	saved->gid = setfsgid(-1);
	if (c && c->drop) {
		setfsgid(c->gid);
		setfsuid(c->uid);
	}
}

void runner_fs_self(const struct fs_creds *saved)
{
	setfsuid(saved->uid);
	setfsgid(saved->gid);
}

static void dir_of(const char *path, char *dir, size_t n)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, n, "%s", dirname(tmp));
}

static int make_temp(const char *path, char *tmp, size_t n)
{
	char dir[PATH_MAX];
	int fd;

	dir_of(path, dir, sizeof(dir));
	if ((size_t)snprintf(tmp, n, "%s/.scalene-bpf-XXXXXX", dir) >= n)
		return -ENAMETOOLONG;
	/* mkstemp: O_CREAT|O_EXCL, never follows a planted name. */
	fd = mkstemp(tmp);
	return fd < 0 ? -errno : fd;
}

int outfile_check(const char *path, const struct user_creds *c)
{
	struct fs_creds saved;
	char tmp[PATH_MAX];
	struct stat st;
	int fd, err = 0;

	runner_fs_user(c, &saved);
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		err = -EISDIR;
		goto out;
	}
	fd = make_temp(path, tmp, sizeof(tmp));
	if (fd < 0) {
		err = fd;
		goto out;
	}
	close(fd);
	unlink(tmp);
out:
	runner_fs_self(&saved);
	return err;
}

int outfile_write(const char *path, const char *data, size_t len, const struct user_creds *c)
{
	struct fs_creds saved;
	char tmp[PATH_MAX];
	size_t off = 0;
	ssize_t n;
	int fd, err = 0;

	runner_fs_user(c, &saved);
	fd = make_temp(path, tmp, sizeof(tmp));
	if (fd < 0) {
		err = fd;
		goto out;
	}
	while (off < len) {
		n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += n;
	}
	if (!err && fchmod(fd, 0644))
		err = -errno;
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	/* rename replaces a symlink at path, never writes through it. */
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	runner_fs_self(&saved);
	return err;
}

int find_sampler_lib(char *buf, size_t n)
{
	static const char *const rel[] = {
		"build/sampler/" SCALENE_BPF_SAMPLER_SONAME,	  /* the build tree */
		"../lib/scalene-bpf/" SCALENE_BPF_SAMPLER_SONAME, /* make install */
	};
	const char *env = getenv("SCALENE_BPF_SAMPLER_LIB");
	char exe[PATH_MAX], *dir;
	ssize_t len;
	size_t i;

	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return access(buf, R_OK) ? -errno : 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0)
		return -errno;
	exe[len] = '\0';
	dir = dirname(exe);
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/%s", dir, rel[i]);
		if (access(path, R_OK))
			continue;
		if (!realpath(path, buf))
			continue;
		return 0;
	}
	return -ENOENT;
}
