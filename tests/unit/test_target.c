/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/target/target.c: what a Python command line runs (script, -m module, -c
 * code, interpreter options before them), the program's directory, the PATH
 * search; then the two constructors against a scratch directory and this
 * process's own /proc entry.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "base/log.h"
#include "target/target.h"

static char tmp[PATH_MAX];     /* scratch directory, resolved */
static char sub[PATH_MAX + 8]; /* tmp/sub */

static int make_file(const char *dir, const char *name, mode_t mode)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("#!/bin/sh\n", f);
	fclose(f);
	return chmod(path, mode);
}

static int setup(void)
{
	char templ[PATH_MAX], *d;
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

	snprintf(templ, sizeof(templ), "%s/scalene-bpf-target-XXXXXX", base);
	d = mkdtemp(templ);
	if (!d || !realpath(d, tmp))
		return -1;
	snprintf(sub, sizeof(sub), "%s/sub", tmp);
	if (mkdir(sub, 0755))
		return -1;
	if (make_file(tmp, "prog.py", 0644) || make_file(sub, "tool", 0755) ||
	    make_file(tmp, "tool", 0644) || make_file(tmp, "python3", 0755))
		return -1;
	return 0;
}

static void teardown(void)
{
	char path[PATH_MAX + 16];
	static const char *const files[] = { "prog.py", "tool", "python3", "sub/tool" };
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, files[i]);
		unlink(path);
	}
	rmdir(sub);
	rmdir(tmp);
}

static int describe(struct target *t, const char *cwd, const char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	memset(t, 0, sizeof(*t));
	return target_describe(t, (char *const *)argv, argc, cwd);
}

static void check_args(const struct target *t, const char *const *want)
{
	int n = 0;

	while (want[n])
		n++;
	CHECK_EQ_INT(t->nargs, n);
	for (int i = 0; i < n && i < t->nargs; i++)
		CHECK_EQ_STR(t->args[i], want[i]);
	if (t->args && t->nargs >= 0)
		CHECK(t->args[t->nargs] == NULL);
}

static void test_script(void)
{
	struct target t;
	char want[PATH_MAX + 16];
	const char *argv[] = { "python3", "prog.py", "a", "-b", NULL };

	CHECK_EQ_INT(describe(&t, tmp, argv), 0);
	snprintf(want, sizeof(want), "%s/prog.py", tmp);
	CHECK_EQ_STR(t.program, want);
	CHECK_EQ_STR(t.program_dir, tmp);
	check_args(&t, (const char *const[]){ "prog.py", "a", "-b", NULL });
	target_free(&t);
	CHECK(t.program == NULL && t.nowned == 0);
}

static void test_relative_paths_resolved(void)
{
	struct target t;
	char want[PATH_MAX + 16];
	const char *up[] = { "python3", "../prog.py", NULL };
	const char *dot[] = { "python3", "./sub/../prog.py", NULL };
	const char *missing[] = { "python3", "pkg/gone.py", NULL };
	const char *abs[] = { "/usr/bin/python3", want, "x", NULL };

	snprintf(want, sizeof(want), "%s/prog.py", tmp);
	CHECK_EQ_INT(describe(&t, sub, up), 0);
	CHECK_EQ_STR(t.program, want);
	CHECK_EQ_STR(t.program_dir, tmp);
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, dot), 0);
	CHECK_EQ_STR(t.program, want);
	CHECK_EQ_STR(t.program_dir, tmp);
	target_free(&t);
	/* An absolute script: the working directory does not matter. */
	CHECK_EQ_INT(describe(&t, "/", abs), 0);
	CHECK_EQ_STR(t.program, want);
	CHECK_EQ_STR(t.program_dir, tmp);
	check_args(&t, (const char *const[]){ want, "x", NULL });
	target_free(&t);
	/* A script that is not there (attach: deleted since) still names a
	 * place under the working directory. */
	CHECK_EQ_INT(describe(&t, tmp, missing), 0);
	snprintf(want, sizeof(want), "%s/pkg/gone.py", tmp);
	CHECK_EQ_STR(t.program, want);
	snprintf(want, sizeof(want), "%s/pkg", tmp);
	CHECK_EQ_STR(t.program_dir, want);
	target_free(&t);
}

/* A script reached through a symbolic link: the folder is resolved, and the
 * folder as named (the interpreter's file names use it) is kept beside. */
static void test_script_through_a_link(void)
{
	struct target t;
	char link[PATH_MAX + 16], want[PATH_MAX + 32];
	const char *argv[] = { "python3", want, NULL };
	const char *rel[] = { "python3", "./lnk/./sub/../prog.py", NULL };

	snprintf(link, sizeof(link), "%s/lnk", tmp);
	CHECK_EQ_INT(symlink(tmp, link), 0);
	snprintf(want, sizeof(want), "%s/prog.py", link);
	CHECK_EQ_INT(describe(&t, "/", argv), 0);
	CHECK_EQ_STR(t.program_dir, tmp);
	CHECK(t.program_dir_given && !strcmp(t.program_dir_given, link));
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, rel), 0);
	CHECK_EQ_STR(t.program_dir, tmp);
	CHECK(t.program_dir_given && !strcmp(t.program_dir_given, link));
	target_free(&t);
	/* No link on the way: nothing beside. */
	snprintf(want, sizeof(want), "%s/./prog.py", tmp);
	CHECK_EQ_INT(describe(&t, "/", argv), 0);
	CHECK(t.program_dir_given == NULL);
	target_free(&t);
	unlink(link);
}

static void test_module_and_code(void)
{
	struct target t;
	const char *m[] = { "python3.12", "-m", "pkg.mod", "--flag", "x", NULL };
	const char *c[] = { "python3", "-c", "import sys; print(sys.argv)", "arg", NULL };
	const char *m_last[] = { "python3", "-m", NULL };

	CHECK_EQ_INT(describe(&t, tmp, m), 0);
	CHECK_EQ_STR(t.program, "pkg.mod");
	CHECK_EQ_STR(t.program_dir, tmp);
	check_args(&t, (const char *const[]){ "pkg.mod", "--flag", "x", NULL });
	target_free(&t);

	CHECK_EQ_INT(describe(&t, tmp, c), 0);
	CHECK_EQ_STR(t.program, "import sys; print(sys.argv)");
	CHECK_EQ_STR(t.program_dir, tmp);
	CHECK(t.nargs >= 1 && !strcmp(t.args[t.nargs - 1], "arg"));
	target_free(&t);

	/* "-m" and nothing after it: no crash, something to show. */
	CHECK_EQ_INT(describe(&t, tmp, m_last), 0);
	CHECK(t.program != NULL);
	CHECK_EQ_STR(t.program_dir, tmp);
	target_free(&t);
}

static void test_interpreter_options(void)
{
	struct target t;
	char want[PATH_MAX + 16];
	const char *opts[] = { "python3", "-u", "-X",	   "dev", "-W", "error",
			       "-B",	  "-O", "prog.py", "-W",  "x",	NULL };
	const char *joined[] = { "python3", "-Xdev", "-Wdefault", "-OO", "prog.py", NULL };
	const char *hash[] = { "python3", "--check-hash-based-pycs", "always", "prog.py", NULL };
	const char *mod[] = { "python3", "-X", "importtime", "-I", "-m", "pkg", NULL };

	snprintf(want, sizeof(want), "%s/prog.py", tmp);
	CHECK_EQ_INT(describe(&t, tmp, opts), 0);
	CHECK_EQ_STR(t.program, want);
	/* The script's own options are its arguments. */
	check_args(&t, (const char *const[]){ "prog.py", "-W", "x", NULL });
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, joined), 0);
	CHECK_EQ_STR(t.program, want);
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, hash), 0);
	CHECK_EQ_STR(t.program, want);
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, mod), 0);
	CHECK_EQ_STR(t.program, "pkg");
	target_free(&t);
}

/*
 * Python's short options cluster like getopt's: "-mpkg" is "-m pkg", "-uc
 * CODE" is "-u -c CODE", "-uW error" is "-u -W error".  The interpreter reads
 * them that way, so must we.
 */
static void test_clustered_interpreter_options(void)
{
	struct target t;
	char want[PATH_MAX + 16];
	const char *m_joined[] = { "python3", "-mhttp.server", "8000", NULL };
	const char *m_cluster[] = { "python3", "-Bm", "pkg.mod", "a", NULL };
	const char *c_cluster[] = { "python3", "-uc", "print(1)", NULL };
	const char *w_cluster[] = { "python3", "-uW", "error", "prog.py", NULL };

	CHECK_EQ_INT(describe(&t, tmp, m_joined), 0);
	CHECK_EQ_STR(t.program, "http.server");
	CHECK_EQ_STR(t.program_dir, tmp);
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, m_cluster), 0);
	CHECK_EQ_STR(t.program, "pkg.mod");
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, c_cluster), 0);
	CHECK_EQ_STR(t.program, "print(1)");
	target_free(&t);
	snprintf(want, sizeof(want), "%s/prog.py", tmp);
	CHECK_EQ_INT(describe(&t, tmp, w_cluster), 0);
	CHECK_EQ_STR(t.program, want);
	target_free(&t);
}

static void test_stdin_and_repl(void)
{
	struct target t;
	const char *dash[] = { "python3", "-", "a", NULL };
	const char *repl[] = { "/usr/bin/python3", NULL };
	const char *opts_only[] = { "python3", "-i", "-u", NULL };

	CHECK_EQ_INT(describe(&t, tmp, dash), 0);
	CHECK_EQ_STR(t.program, "python3");
	CHECK_EQ_STR(t.program_dir, tmp);
	check_args(&t, (const char *const[]){ "-", "a", NULL });
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, repl), 0);
	CHECK_EQ_STR(t.program, "/usr/bin/python3");
	CHECK_EQ_STR(t.program_dir, tmp);
	CHECK_EQ_INT(t.nargs, 0);
	target_free(&t);
	CHECK_EQ_INT(describe(&t, tmp, opts_only), 0);
	CHECK_EQ_STR(t.program, "python3");
	target_free(&t);
}

static void test_find_in_path(void)
{
	char out[PATH_MAX], path[PATH_MAX * 2 + 32], want[PATH_MAX + 32];
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;

	/* tmp/tool is not executable, tmp/sub/tool is; tmp/sub is a
	 * directory named like nothing we look for. */
	snprintf(path, sizeof(path), "%s:%s", tmp, sub);
	setenv("PATH", path, 1);
	snprintf(want, sizeof(want), "%s/tool", sub);
	CHECK_EQ_INT(find_in_path("tool", out, sizeof(out)), 0);
	CHECK_EQ_STR(out, want);
	CHECK_EQ_INT(find_in_path("nonexistent-tool", out, sizeof(out)), -ENOENT);
	/* A directory is not a command. */
	CHECK_EQ_INT(find_in_path("sub", out, sizeof(out)), -ENOENT);
	/* A buffer too small for any candidate: not found, no overflow. */
	CHECK_EQ_INT(find_in_path("tool", out, 8), -ENOENT);
	/* With a slash: that file, if executable. */
	CHECK_EQ_INT(find_in_path(want, out, sizeof(out)), 0);
	CHECK_EQ_STR(out, want);
	snprintf(want, sizeof(want), "%s/tool", tmp);
	CHECK_EQ_INT(find_in_path(want, out, sizeof(out)), -EACCES);
	snprintf(want, sizeof(want), "%s/none", tmp);
	CHECK_EQ_INT(find_in_path(want, out, sizeof(out)), -ENOENT);
	/* No PATH: the usual directories. */
	unsetenv("PATH");
	CHECK_EQ_INT(find_in_path("sh", out, sizeof(out)), 0);
	CHECK(strlen(out) > 3 && !strcmp(out + strlen(out) - 3, "/sh"));
	setenv("PATH", "", 1);
	CHECK_EQ_INT(find_in_path("sh", out, sizeof(out)), 0);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
}

/* One script's first line, and what the kernel runs for it. */
static void check_image(const char *first_line, int want_err, const char *want)
{
	char path[PATH_MAX + 16], out[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/script", tmp);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(first_line, f);
	fclose(f);
	CHECK_EQ_INT(target_exec_image(path, out, sizeof(out)), want_err);
	if (!want_err)
		CHECK_EQ_STR(out, want ? want : path);
	unlink(path);
}

static void test_exec_image(void)
{
	char tool[PATH_MAX + 16], path[PATH_MAX * 2 + 32], out[8];
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;

	snprintf(tool, sizeof(tool), "%s/tool", sub);
	snprintf(path, sizeof(path), "%s:%s", tmp, sub);
	setenv("PATH", path, 1);
	/* Not a script: the file itself (an ELF file, here any other). */
	check_image("\x7f"
		    "ELF\2\1\1",
		    0, NULL);
	check_image("print(1)\n", 0, NULL);
	/* The interpreter named, with or without blanks and an argument. */
	check_image("#!/usr/bin/python3.11\nprint(1)\n", 0, "/usr/bin/python3.11");
	check_image("#! \t/opt/py/bin/python -u\n", 0, "/opt/py/bin/python");
	/* Through env: its argument found in PATH, as env finds it. */
	check_image("#!/usr/bin/env tool\n", 0, tool);
	check_image("#!/usr/bin/env  nonexistent-tool\n", -ENOENT, NULL);
	/* env with an option (-S): env itself, which is no interpreter. */
	check_image("#!/usr/bin/env -S tool -u\n", 0, "/usr/bin/env");
	/* No interpreter, or no end to the line in the bytes read. */
	check_image("#!\n", -ENOEXEC, NULL);
	check_image("#!/usr/bin/python3", -ENOEXEC, NULL);
	CHECK_EQ_INT(target_exec_image("/nonexistent/x", out, sizeof(out)), -ENOENT);
	/* Too long for out. */
	CHECK_EQ_INT(target_exec_image("/usr/bin/env", out, sizeof(out)), -ENAMETOOLONG);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
}

static void test_from_command(void)
{
	struct target_command o = { 0 };
	struct target t;
	char old_cwd[PATH_MAX], want[PATH_MAX + 16], path[PATH_MAX + 32];
	char *argv_script[] = { "prog.py", "x", NULL };
	char *argv_missing[] = { "missing.py", NULL };
	char *argv_raw[] = { "python3", "-m", "pkg", NULL };
	char *argv_raw_script[] = { "./prog.py", "y", NULL };
	const char *oldpath = getenv("PATH");
	char *saved = oldpath ? strdup(oldpath) : NULL;

	if (!getcwd(old_cwd, sizeof(old_cwd)) || chdir(tmp)) {
		CHECK(!"cannot enter the scratch directory");
		free(saved);
		return;
	}
	/* The fake python3 in tmp comes first. */
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", tmp);
	setenv("PATH", path, 1);
	log_set_level(-1);

	o.python = "python3";
	o.argv = argv_script;
	o.argc = 2;
	CHECK_EQ_INT(target_from_command(&o, &t), 0);
	snprintf(want, sizeof(want), "%s/python3", tmp);
	CHECK_EQ_STR(t.exec_argv[0], want);
	CHECK_EQ_STR(t.exec_argv[1], "prog.py");
	CHECK_EQ_STR(t.exec_argv[2], "x");
	CHECK(t.exec_argv[3] == NULL);
	snprintf(want, sizeof(want), "%s/prog.py", tmp);
	CHECK_EQ_STR(t.program, want);
	CHECK_EQ_STR(t.program_dir, tmp);
	target_free(&t);

	o.argv = argv_missing;
	o.argc = 1;
	CHECK_EQ_INT(target_from_command(&o, &t), -ENOENT);
	target_free(&t);

	o.argv = argv_script;
	o.argc = 2;
	o.python = "no-such-python";
	CHECK_EQ_INT(target_from_command(&o, &t), -ENOENT);
	target_free(&t);

	/* -- python3 -m pkg: the interpreter's own arguments tell. */
	o.raw = true;
	o.argv = argv_raw;
	o.argc = 3;
	CHECK_EQ_INT(target_from_command(&o, &t), 0);
	CHECK_EQ_STR(t.exec_argv[0], "python3");
	CHECK(t.exec_argv[3] == NULL);
	CHECK_EQ_STR(t.program, "pkg");
	CHECK_EQ_STR(t.program_dir, tmp);
	target_free(&t);

	/* -- ./prog.py y: the script is the program (made executable first). */
	chmod("prog.py", 0755);
	o.argv = argv_raw_script;
	o.argc = 2;
	CHECK_EQ_INT(target_from_command(&o, &t), 0);
	snprintf(want, sizeof(want), "%s/prog.py", tmp);
	CHECK_EQ_STR(t.program, want);
	CHECK(t.nargs >= 1 && !strcmp(t.args[t.nargs - 1], "y"));
	target_free(&t);
	chmod("prog.py", 0644);

	log_set_level(LOG_WARN);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	CHECK_EQ_INT(chdir(old_cwd), 0);
}

/* --pid on ourselves: the command line of this test program. */
static void test_from_pid_self(void)
{
	int pid = getpid();
	struct target t;
	char cwd[PATH_MAX], self[PATH_MAX];
	FILE *f = fopen("/proc/self/cmdline", "r");
	size_t n = f ? fread(self, 1, sizeof(self) - 1, f) : 0;

	if (f)
		fclose(f);
	self[n] = '\0';
	CHECK(n > 0);
	CHECK_EQ_INT(target_from_pid(pid, &t), 0);
	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	/* argv[0] is this program, not a Python script: the program is the
	 * command itself, the directory the working directory. */
	CHECK_EQ_STR(t.program, self);
	CHECK_EQ_STR(t.program_dir, cwd);
	target_free(&t);

	pid = 0x3fffff; /* above any pid_max default: no such process */
	CHECK(target_from_pid(pid, &t) < 0);
	target_free(&t);
}

int main(void)
{
	if (setup()) {
		perror("scratch directory");
		printf("target: 0 passed, 1 failed\n");
		return 1;
	}
	RUN_TEST(test_script);
	RUN_TEST(test_relative_paths_resolved);
	RUN_TEST(test_script_through_a_link);
	RUN_TEST(test_module_and_code);
	RUN_TEST(test_interpreter_options);
	RUN_TEST(test_clustered_interpreter_options);
	RUN_TEST(test_stdin_and_repl);
	RUN_TEST(test_find_in_path);
	RUN_TEST(test_exec_image);
	RUN_TEST(test_from_command);
	RUN_TEST(test_from_pid_self);
	teardown();
	return test_summary("target");
}
