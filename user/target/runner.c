// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "base/log.h"
#include "target/runner.h"
#include "sampler/sampler.h"

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
		err = creds_become_user(c);
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

/* A library of ours: $env, else next to this executable (build tree, then
 * installed layout). */
static int find_lib(const char *env_name, const char *build_rel, const char *soname, char *buf,
		    size_t n)
{
	const char *env = getenv(env_name);
	char exe[PATH_MAX], *dir;
	ssize_t len;
	int i;

	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return access(buf, R_OK) ? -errno : 0;
	}
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len < 0)
		return -errno;
	exe[len] = '\0';
	dir = dirname(exe);
	for (i = 0; i < 2; i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/%s/%s", dir,
			 i == 0 ? build_rel : "../lib/scalene-bpf", soname);
		if (access(path, R_OK))
			continue;
		if (!realpath(path, buf))
			continue;
		return 0;
	}
	return -ENOENT;
}

int find_sampler_lib(char *buf, size_t n)
{
	return find_lib("SCALENE_BPF_SAMPLER_LIB", "build/sampler", SCALENE_BPF_SAMPLER_SONAME, buf,
			n);
}

int find_gpu_lib(char *buf, size_t n)
{
	return find_lib("SCALENE_BPF_GPU_LIB", "build/gpu", SCALENE_BPF_GPU_SONAME, buf, n);
}
