/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/target/runner.c: the program started behind a gate.  It does not run
 * before the gate opens; the release returns once it has exec'ed (at once,
 * while it runs on) or with the exec's error; an abort kills and reaps a
 * child that never passed the gate; the environment given is set after the
 * privilege drop, and under sudo (root, creds of `nobody`) the program runs
 * as the user with the user's groups only.  Then the shell-style exit
 * status, and where the libraries of ours are found: the variable, the
 * build tree next to the executable, the installed layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "base/clock.h"
#include "target/runner.h"
#include "sampler/sampler.h"

static char tmpdir[] = "/tmp/runner-test-XXXXXX";
static struct user_creds no_drop;
static struct user_creds nobody;
static bool have_nobody;

/* Runs argv through the gate; its wait status in *status (-1: not run). */
static int run(char *const argv[], const struct user_creds *c, const char *const *env, int *status)
{
	struct launch l = { .env = env };
	int err;

	*status = -1;
	err = runner_spawn(argv, c, &l);
	if (err)
		return err;
	err = runner_release(&l);
	if (!err && waitpid(l.pid, status, 0) != l.pid)
		err = -errno;
	return err;
}

static bool exists(const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return !access(path, F_OK);
}

/* The child waits at the gate: no exec before it opens, whatever the
 * wait; then it runs and its exit code is the program's. */
static void test_gate(void)
{
	char cmd[PATH_MAX + 64], self[PATH_MAX], exe[PATH_MAX], link[64];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct timespec nap = { 0, 50 * 1000000 };
	struct launch l = { 0 };
	ssize_t n;
	int st = 0;

	snprintf(cmd, sizeof(cmd), "touch '%s/ran'; exit 7", tmpdir);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';
	CHECK_EQ_INT(runner_spawn(argv, &no_drop, &l), 0);
	CHECK(l.pid > 0 && l.gate_fd >= 0 && l.err_fd >= 0);
	nanosleep(&nap, NULL);
	/* Still this program, not the shell: it has not exec'ed. */
	snprintf(link, sizeof(link), "/proc/%d/exe", l.pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	CHECK_EQ_STR(exe, self);
	CHECK(!exists("ran"));
	CHECK(waitpid(l.pid, NULL, WNOHANG) == 0);
	CHECK_EQ_INT(runner_release(&l), 0);
	CHECK_EQ_INT(l.gate_fd, -1);
	CHECK_EQ_INT(l.err_fd, -1);
	CHECK(waitpid(l.pid, &st, 0) == l.pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ_INT(exit_status_of(st), 7);
	CHECK(exists("ran"));
}

/* The release does not wait for the program to end, only for its exec
 * (the error pipe closes on exec). */
static void test_release_returns_at_exec(void)
{
	char *argv[] = { "sleep", "30", NULL };
	struct launch l = { 0 };
	uint64_t t0;
	int st;

	CHECK_EQ_INT(runner_spawn(argv, &no_drop, &l), 0);
	t0 = mono_ns();
	CHECK_EQ_INT(runner_release(&l), 0);
	CHECK(mono_ns() - t0 < 5000000000ULL);
	/* Running: it was found on PATH and is not done. */
	CHECK(waitpid(l.pid, NULL, WNOHANG) == 0);
	kill(l.pid, SIGKILL);
	CHECK(waitpid(l.pid, &st, 0) == l.pid);
	CHECK_EQ_INT(exit_status_of(st), 128 + SIGKILL);
}

/* A program that cannot be exec'ed: its errno, and the child reaped. */
static void test_exec_errors(void)
{
	char script[PATH_MAX];
	char *missing[] = { "/nonexistent/program", NULL };
	char *not_on_path[] = { "no-such-program-scalene-bpf", NULL };
	char *not_exec[] = { script, NULL };
	struct launch l = { 0 };
	char *saved;
	int fd;

	CHECK_EQ_INT(runner_spawn(missing, &no_drop, &l), 0);
	CHECK_EQ_INT(runner_release(&l), -ENOENT);
	CHECK(waitpid(l.pid, NULL, WNOHANG) < 0 && errno == ECHILD);

	/* Searched on a PATH of readable folders (a folder this user may not
	 * search would make it -EACCES). */
	saved = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", "/usr/bin:/bin", 1);
	CHECK_EQ_INT(runner_spawn(not_on_path, &no_drop, &l), 0);
	CHECK_EQ_INT(runner_release(&l), -ENOENT);
	CHECK(waitpid(l.pid, NULL, WNOHANG) < 0 && errno == ECHILD);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);

	snprintf(script, sizeof(script), "%s/not-executable", tmpdir);
	fd = open(script, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, "#!/bin/sh\n", 10) == 10);
		close(fd);
	}
	CHECK_EQ_INT(runner_spawn(not_exec, &no_drop, &l), 0);
	CHECK_EQ_INT(runner_release(&l), -EACCES);
	CHECK(waitpid(l.pid, NULL, WNOHANG) < 0 && errno == ECHILD);
}

/* An abort kills the child at the gate and reaps it: the program never
 * ran. */
static void test_abort(void)
{
	char cmd[PATH_MAX + 64];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct launch l = { 0 };

	snprintf(cmd, sizeof(cmd), "touch '%s/aborted-ran'", tmpdir);
	CHECK_EQ_INT(runner_spawn(argv, &no_drop, &l), 0);
	runner_abort(&l);
	CHECK(waitpid(l.pid, NULL, WNOHANG) < 0 && errno == ECHILD);
	usleep(50000);
	CHECK(!exists("aborted-ran"));
}

/* No child (pid 0): nothing is killed (kill(0) would be this process's
 * group); run in a group of its own so that a wrong kill shows. */
static void test_abort_without_child(void)
{
	int st = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct launch l = { .pid = 0, .gate_fd = -1, .err_fd = -1 };

		setpgid(0, 0);
		runner_abort(&l);
		_exit(0);
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The environment given reaches the program (added to this one's). */
static void test_env(void)
{
	static const char *const env[] = { "SBPF_TEST_A=one", "SBPF_TEST_B=two words", NULL };
	char *argv[] = { "/bin/sh", "-c",
			 "test \"$SBPF_TEST_A\" = one && test \"$SBPF_TEST_B\" = 'two words' && "
			 "test \"$SBPF_TEST_INHERITED\" = yes",
			 NULL };
	int st;

	setenv("SBPF_TEST_INHERITED", "yes", 1);
	CHECK_EQ_INT(run(argv, &no_drop, env, &st), 0);
	CHECK_EQ_INT(exit_status_of(st), 0);
	/* Nothing of it stays in this process. */
	CHECK(getenv("SBPF_TEST_A") == NULL);
	unsetenv("SBPF_TEST_INHERITED");
	/* No list: fine too. */
	CHECK_EQ_INT(run(argv, &no_drop, NULL, &st), 0);
	CHECK_EQ_INT(exit_status_of(st), 1);
}

/* Under sudo: the program is the user's (ids and groups, no root group),
 * with the user's HOME and USER, and the environment given is set after the
 * drop (it wins over the user's HOME). */
static void test_as_user(void)
{
	static const char *const env[] = { "HOME=/custom-home", NULL };
	char want[PATH_MAX + 512];
	char *argv[] = { "/bin/sh", "-c", want, NULL };
	int st;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to run as");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	snprintf(want, sizeof(want),
		 "test \"$(id -u)\" = %u && test \"$(id -g)\" = %u && test \"$(id -G)\" = %u "
		 "&& test \"$(id -ru)\" = %u && test \"$USER\" = nobody && test \"$HOME\" = %s",
		 (unsigned)nobody.uid, (unsigned)nobody.gid, (unsigned)nobody.gid,
		 (unsigned)nobody.uid, nobody.home);
	CHECK_EQ_INT(run(argv, &nobody, NULL, &st), 0);
	CHECK_EQ_INT(exit_status_of(st), 0);
	argv[2] = "test \"$HOME\" = /custom-home && test \"$(id -u)\" != 0";
	CHECK_EQ_INT(run(argv, &nobody, env, &st), 0);
	CHECK_EQ_INT(exit_status_of(st), 0);
}

/* A drop that fails is the release's error: the program does not run as
 * someone else (as nobody, or not root: no id may be taken). */
static void drop_refused_body(void)
{
	struct user_creds c = { .drop = true, .uid = 4321, .gid = 4321, .ngroups = 1 };
	char cmd[PATH_MAX + 64];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int st;

	c.groups[0] = 4321;
	snprintf(cmd, sizeof(cmd), "touch '%s/wrong-user-ran'", tmpdir);
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) || setresgid(nobody.gid, nobody.gid, nobody.gid) ||
	     setresuid(nobody.uid, nobody.uid, nobody.uid)))
		_exit(2);
	CHECK_EQ_INT(run(argv, &c, NULL, &st), -EPERM);
	CHECK_EQ_INT(st, -1);
	_exit(t_checks_failed ? 1 : 0);
}

static void test_drop_refused(void)
{
	int st = 0;
	pid_t pid;

	if (geteuid() == 0 && !have_nobody)
		SKIP_TEST("no user nobody here");
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		t_checks_failed = 0;
		drop_refused_body();
	}
	CHECK(pid > 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(!exists("wrong-user-ran"));
}

/* The code, or 128 + the signal, or 1 for anything else. */
static void test_exit_status(void)
{
	pid_t pid;
	int st;

	CHECK_EQ_INT(exit_status_of(0), 0);
	pid = fork();
	if (pid == 0)
		_exit(42);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_EQ_INT(exit_status_of(st), 42);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	kill(pid, SIGTERM);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_EQ_INT(exit_status_of(st), 128 + SIGTERM);
	/* A stopped child's status is neither. */
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	kill(pid, SIGSTOP);
	CHECK(waitpid(pid, &st, WUNTRACED) == pid);
	CHECK(WIFSTOPPED(st));
	CHECK_EQ_INT(exit_status_of(st), 1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ------------------------------------------------ our libraries */

static int make_file_at(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* $SCALENE_BPF_SAMPLER_LIB / $SCALENE_BPF_GPU_LIB, when set, is the answer
 * (if it can be read). */
static void test_lib_from_env(void)
{
	char lib[PATH_MAX], buf[PATH_MAX];

	snprintf(lib, sizeof(lib), "%s/libfromenv.so", tmpdir);
	CHECK_EQ_INT(make_file_at(lib, 0644), 0);
	setenv("SCALENE_BPF_SAMPLER_LIB", lib, 1);
	setenv("SCALENE_BPF_GPU_LIB", lib, 1);
	CHECK_EQ_INT(find_sampler_lib(buf, sizeof(buf)), 0);
	CHECK_EQ_STR(buf, lib);
	buf[0] = '\0';
	CHECK_EQ_INT(find_gpu_lib(buf, sizeof(buf)), 0);
	CHECK_EQ_STR(buf, lib);
	setenv("SCALENE_BPF_SAMPLER_LIB", "/nonexistent/lib.so", 1);
	CHECK_EQ_INT(find_sampler_lib(buf, sizeof(buf)), -ENOENT);
	unsetenv("SCALENE_BPF_SAMPLER_LIB");
	unsetenv("SCALENE_BPF_GPU_LIB");
}

/* Next to the executable: a copy of this program in tmp/bin asks (see
 * main's --find), first with the build tree's layout, then with the
 * installed one, then with neither. */
static int ask_copy(const char *copy, const char *which, char *out, size_t n)
{
	char cmd[PATH_MAX + 64];
	FILE *p;
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "env -u SCALENE_BPF_SAMPLER_LIB -u SCALENE_BPF_GPU_LIB '%s' "
		 "--find %s",
		 copy, which);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	out[0] = '\0';
	if (!fgets(out, (int)n, p))
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	rc = pclose(p);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_lib_next_to_executable(void)
{
	char bin[PATH_MAX], copy[PATH_MAX + 16], dir[PATH_MAX + 32], lib[PATH_MAX + 64];
	char inst[PATH_MAX + 32], ilib[PATH_MAX + 64], real[PATH_MAX], got[PATH_MAX];
	char cmd[3 * PATH_MAX];

	snprintf(bin, sizeof(bin), "%s/bin", tmpdir);
	snprintf(copy, sizeof(copy), "%s/prog", bin);
	CHECK_EQ_INT(mkdir(bin, 0755), 0);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), copy);
	if (system(cmd)) {
		CHECK(!"cannot copy this program");
		return;
	}
	/* Build tree: bin/build/sampler/<soname>, bin/build/gpu/<soname>. */
	snprintf(dir, sizeof(dir), "%s/build", bin);
	CHECK_EQ_INT(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/build/sampler", bin);
	CHECK_EQ_INT(mkdir(dir, 0755), 0);
	snprintf(lib, sizeof(lib), "%s/%s", dir, SCALENE_BPF_SAMPLER_SONAME);
	CHECK_EQ_INT(make_file_at(lib, 0644), 0);
	CHECK_EQ_INT(ask_copy(copy, "sampler", got, sizeof(got)), 0);
	CHECK(realpath(lib, real) != NULL);
	CHECK_EQ_STR(got, real);
	/* No GPU library there, nor installed. */
	CHECK_EQ_INT(ask_copy(copy, "gpu", got, sizeof(got)), 1);
	CHECK_EQ_STR(got, "ENOENT");

	/* Installed: bin/../lib/scalene-bpf/<soname>, an absolute path with
	 * no "..". */
	unlink(lib);
	snprintf(inst, sizeof(inst), "%s/lib", tmpdir);
	CHECK_EQ_INT(mkdir(inst, 0755), 0);
	snprintf(inst, sizeof(inst), "%s/lib/scalene-bpf", tmpdir);
	CHECK_EQ_INT(mkdir(inst, 0755), 0);
	snprintf(ilib, sizeof(ilib), "%s/%s", inst, SCALENE_BPF_SAMPLER_SONAME);
	CHECK_EQ_INT(make_file_at(ilib, 0644), 0);
	CHECK_EQ_INT(ask_copy(copy, "sampler", got, sizeof(got)), 0);
	CHECK(realpath(ilib, real) != NULL);
	CHECK_EQ_STR(got, real);
	CHECK(strstr(got, "..") == NULL);

	/* The build tree's wins when both are there. */
	CHECK_EQ_INT(make_file_at(lib, 0644), 0);
	CHECK_EQ_INT(ask_copy(copy, "sampler", got, sizeof(got)), 0);
	CHECK(realpath(lib, real) != NULL);
	CHECK_EQ_STR(got, real);

	unlink(lib);
	unlink(ilib);
	CHECK_EQ_INT(ask_copy(copy, "sampler", got, sizeof(got)), 1);
	CHECK_EQ_STR(got, "ENOENT");
}

int main(int argc, char **argv)
{
	char cmd[PATH_MAX + 16];
	struct passwd *pw;
	int rc;

	/* The copy of test_lib_next_to_executable: where it finds a library. */
	if (argc == 3 && !strcmp(argv[1], "--find")) {
		char buf[PATH_MAX];
		int err = !strcmp(argv[2], "gpu") ? find_gpu_lib(buf, sizeof(buf))
						  : find_sampler_lib(buf, sizeof(buf));

		printf("%s\n", err ? (err == -ENOENT ? "ENOENT" : strerror(-err)) : buf);
		return err ? 1 : 0;
	}
	pw = getpwnam("nobody");
	if (pw) {
		have_nobody = true;
		nobody.drop = true;
		nobody.uid = pw->pw_uid;
		nobody.gid = pw->pw_gid;
		nobody.groups[0] = pw->pw_gid;
		nobody.ngroups = 1;
		snprintf(nobody.name, sizeof(nobody.name), "nobody");
		snprintf(nobody.home, sizeof(nobody.home), "%s", pw->pw_dir);
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* The programs run as nobody write markers here. */
	chmod(tmpdir, 0777);
	RUN_TEST(test_gate);
	RUN_TEST(test_release_returns_at_exec);
	RUN_TEST(test_exec_errors);
	RUN_TEST(test_abort);
	RUN_TEST(test_abort_without_child);
	RUN_TEST(test_env);
	RUN_TEST(test_as_user);
	RUN_TEST(test_drop_refused);
	RUN_TEST(test_exit_status);
	RUN_TEST(test_lib_from_env);
	RUN_TEST(test_lib_next_to_executable);
	rc = test_summary("runner");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
