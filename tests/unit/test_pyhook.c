/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/pyhook.c: the directory of the @profile builtin (modes, the
 * environment it hands the program, removal) and the report it reads
 * (decorated functions registered, malformed lines counted and skipped, a
 * line still being written read once it is whole).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"
#include "model/profile.h"
#include "session/pyhook.h"
#include "target/target.h"

static void append(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
	close(fd);
}

static void test_parse_line(void)
{
	char ok[] = "77\t12\t20\tC.m\t/app/a\tb.py";
	char *bad[] = {
		"77\t12\t20\tC.m",	   /* no file */
		"77\tx\t20\tf\t/a.py",   /* not a number */
		"77\t12\t11\tf\t/a.py",  /* ends before it starts */
		"77\t0\t1\tf\t/a.py",    /* no line 0 */
		"77\t12\t20\t\t/a.py",   /* no name */
		"0\t12\t20\tf\t/a.py",   /* no pid 0 */
		"12\t20\tf\t/a.py",	   /* the old form, without a pid */
		"77\t99999999999\t1\tf\t/a.py",
	};
	struct pyhook_line l;
	size_t i;

	CHECK_EQ_INT(pyhook_parse_line(ok, &l), 0);
	CHECK_EQ_INT(l.pid, 77);
	CHECK_EQ_INT(l.first, 12);
	CHECK_EQ_INT(l.last, 20);
	CHECK_EQ_STR(l.qualname, "C.m");
	CHECK_EQ_STR(l.filename, "/app/a\tb.py"); /* the file name is last: tabs allowed */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char buf[128];

		snprintf(buf, sizeof(buf), "%s", bad[i]);
		CHECK_EQ_INT(pyhook_parse_line(buf, &l), -EINVAL);
	}
}

static void test_prepare_poll_cleanup(void)
{
	struct profile_filter filter = { .program_dir = "/app" };
	struct profile *p = profile__new(&filter);
	struct pyhook h;
	char path[256], dir[64];
	struct stat st;

	CHECK_EQ_INT(pyhook__prepare(&h, NULL), 0);
	snprintf(dir, sizeof(dir), "%s", h.dir);
	CHECK(stat(h.dir, &st) == 0 && (st.st_mode & 0777) == 0755);
	snprintf(path, sizeof(path), "%s/sitecustomize.py", h.dir);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);
	CHECK(stat(h.report, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == 0);
	CHECK(!strncmp(h.pythonpath_env, "PYTHONPATH=", 11));
	CHECK(!strncmp(h.pythonpath_env + 11, h.dir, strlen(h.dir)));
	CHECK(!strncmp(h.report_env, PYHOOK_ENV_REPORT "=", strlen(PYHOOK_ENV_REPORT) + 1));
	CHECK_EQ_STR(strchr(h.report_env, '=') + 1, h.report);

	CHECK_EQ_INT(pyhook__poll(&h, p), 0);
	append(h.report, "5\t3\t9\tf\t/app/main.py\ngarbage\n5\t12\t14\tC.m\t/app/main.py\n"
			 "5\t3\t9\tf\t/app");
	CHECK_EQ_INT(pyhook__poll(&h, p), 3);
	CHECK_EQ_INT(profile__ndecorated(p), 2);
	CHECK_EQ_INT(h.bad_lines, 1);
	/* The unfinished line waits for its end. */
	append(h.report, "/main.py\n");
	CHECK_EQ_INT(pyhook__poll(&h, p), 1);
	CHECK_EQ_INT(profile__ndecorated(p), 2); /* the same function again */
	CHECK_EQ_INT(profile__ndecorated(p), 2);
	CHECK_EQ_INT(profile__decorated(p, 1)->lastlineno, 14);
	CHECK_EQ_STR(profile__decorated(p, 1)->qualname, "C.m");
	append(h.report, "6\t5\t6\tg\t/app/other.py\n");
	CHECK_EQ_INT(pyhook__poll(&h, p), 1);
	CHECK_EQ_INT(profile__ndecorated(p), 3);
	CHECK_EQ_STR(profile__decorated(p, 2)->file, "/app/other.py");
	/* Only one process's decorations count (--no-follow). */
	h.only_pid = 5;
	append(h.report, "6\t7\t8\tk\t/app/other.py\n5\t9\t9\tm\t/app/other.py\n");
	CHECK_EQ_INT(pyhook__poll(&h, p), 2);
	CHECK_EQ_INT(profile__ndecorated(p), 4);
	CHECK_EQ_STR(profile__decorated(p, 3)->qualname, "m");
	CHECK_EQ_INT(pyhook__poll(&h, p), 0);

	/* What a program running as root compiles there goes too. */
	snprintf(path, sizeof(path), "%s/__pycache__", h.dir);
	CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/__pycache__/sitecustomize.cpython-311.pyc", h.dir);
	CHECK(close(open(path, O_WRONLY | O_CREAT, 0644)) == 0);
	pyhook__cleanup(&h);
	CHECK(stat(dir, &st) < 0 && errno == ENOENT);
	CHECK(h.pythonpath_env == NULL);
	pyhook__cleanup(&h); /* twice: nothing */
	profile__free(p);
}

static void test_pythonpath_kept(void)
{
	struct pyhook h;
	char want[256];

	setenv("PYTHONPATH", "/opt/lib:/srv/x", 1);
	CHECK_EQ_INT(pyhook__prepare(&h, NULL), 0);
	snprintf(want, sizeof(want), "PYTHONPATH=%s:/opt/lib:/srv/x", h.dir);
	CHECK_EQ_STR(h.pythonpath_env, want);
	pyhook__cleanup(&h);
	unsetenv("PYTHONPATH");
}

static void test_text_decorates(void)
{
	static const char *yes[] = {
		"@profile\ndef f(): pass\n",
		"import x\n    @profile\n    def m(self): pass",
		"class C:\n\t@ profile\n\tdef m(self): pass\n",
		"@profile(\n", /* (called: not ours to judge) */
		"x = 1\n@profile",
	};
	static const char *no[] = {
		"def f(): pass\n",
		"# @profile\n",
		"@profiled\ndef f(): pass\n",
		"@line_profiler.profile\n",
		"profile(f)\n",
		"s = '@profile'\n",
		"@profile_me\n",
		"",
	};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		CHECK(pyhook_text_decorates(yes[i], strlen(yes[i])));
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		CHECK(!pyhook_text_decorates(no[i], strlen(no[i])));
	/* Only the bytes given are looked at. */
	CHECK(!pyhook_text_decorates("@profile", 7));
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void test_wanted(void)
{
	char dir[] = "/tmp/test-pyhook.XXXXXX", sub[256], why[PATH_MAX + 160];
	struct target t = { 0 };

	CHECK(mkdtemp(dir) != NULL);
	t.program_dir = dir;
	put(dir, "main.py", "import pkg\nprint(1)\n");
	CHECK(!pyhook__wanted(&t, NULL, why, sizeof(why)));
	CHECK(strstr(why, "no .py file under") != NULL);
	/* Where a program's own code is not: never looked at. */
	snprintf(sub, sizeof(sub), "%s/.venv", dir);
	CHECK(mkdir(sub, 0755) == 0);
	put(sub, "x.py", "@profile\ndef f(): pass\n");
	snprintf(sub, sizeof(sub), "%s/env", dir);
	CHECK(mkdir(sub, 0755) == 0);
	put(sub, "pyvenv.cfg", "home = /usr/bin\n");
	put(sub, "y.py", "@profile\ndef f(): pass\n");
	snprintf(sub, sizeof(sub), "%s/pkg", dir);
	CHECK(mkdir(sub, 0755) == 0);
	put(sub, "notes.txt", "@profile\n");
	CHECK(!pyhook__wanted(&t, NULL, why, sizeof(why)));
	/* A module of the program's, a folder down. */
	put(sub, "work.py", "import os\n\n@profile\ndef work(): pass\n");
	CHECK(pyhook__wanted(&t, NULL, why, sizeof(why)));
	CHECK(strstr(why, "pkg/work.py decorates with @profile") != NULL);
	/* A -c command that decorates. */
	t.program_dir = "/nonexistent-dir";
	t.command = "@profile\ndef f(): pass\nf()";
	CHECK(pyhook__wanted(&t, NULL, why, sizeof(why)));
	CHECK(strstr(why, "-c command") != NULL);
	/* A folder that cannot be read: provided, to be safe. */
	t.command = NULL;
	CHECK(pyhook__wanted(&t, NULL, why, sizeof(why)));
	CHECK(strstr(why, "cannot be read") != NULL);
	snprintf(sub, sizeof(sub), "rm -rf %s", dir);
	CHECK(system(sub) == 0);
}

int main(void)
{
	RUN_TEST(test_text_decorates);
	RUN_TEST(test_wanted);
	RUN_TEST(test_parse_line);
	RUN_TEST(test_prepare_poll_cleanup);
	RUN_TEST(test_pythonpath_kept);
	return test_summary("pyhook");
}
