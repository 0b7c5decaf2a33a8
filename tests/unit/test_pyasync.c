/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/pyasync.c: where an asyncio program's coroutines wait, read
 * from outside, in real child interpreters (each Python 3.9 to 3.13 found
 * here).  The program starts five tasks that wait at known lines (three on
 * an Event, one two coroutines deep, the main task in a sleep); the reader
 * is given the layout the asyncio probe measures in the same interpreter
 * and its frames resolved through the code-object cache, and is polled at
 * times made up here (10 ms apart), so that every figure is exact: the idle
 * time before the layout is kept apart, the time after it is split evenly
 * over the five tasks and lands on each task's innermost await in the
 * program, with the task's name, the tasks' count and the await stacks.
 * Then: a poll after a long gap counts at most the gap allowed; pure-Python
 * tasks in a loop of another thread are read too; a loop that never waits,
 * and a program with no loop, show none; a process gone is an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "testpython.h"
#include "base/log.h"
#include "model/profile.h"
#include "session/asyncprobe.h"
#include "session/pyasync.h"
#include "symbolize/pycode.h"
#include "target/python.h"

#define MS 1000000ULL

static char tmpdir[] = "/tmp/pyasync-test-XXXXXX";
static char prog[PATH_MAX];

/* The program: its lines found by their markers (line_of). */
static const char script[] =
	"import os, sys, threading\n"
	"mode = sys.argv[1]\n"
	"if 'pure' in mode:\n"
	"    sys.modules['_asyncio'] = None  # the pure-Python Task\n"
	"import asyncio\n"
	"\n"
	"\n"
	"async def waiter(ev):\n"
	"    await ev.wait()  # L_WAIT\n"
	"\n"
	"\n"
	"async def inner():\n"
	"    await asyncio.sleep(3600)  # L_INNER\n"
	"\n"
	"\n"
	"async def outer():\n"
	"    await inner()  # L_OUTER\n"
	"\n"
	"\n"
	"async def main():\n"
	"    ev = asyncio.Event()\n"
	"    tasks = [asyncio.create_task(waiter(ev), name='w%d' % i) for i in range(3)]\n"
	"    tasks.append(asyncio.create_task(outer(), name='deep'))\n"
	"    await asyncio.sleep(0)\n"
	"    await asyncio.sleep(0)\n"
	"    os.write(1, b'ready\\n')\n"
	"    await asyncio.sleep(3600)  # L_MAIN\n"
	"\n"
	"\n"
	"async def spin():\n"
	"    os.write(1, b'ready\\n')\n"
	"    while True:\n"
	"        pass  # never yields: its loop never waits\n"
	"\n"
	"\n"
	"if 'spin' in mode:\n"
	"    asyncio.run(spin())\n"
	"elif 'plain' in mode:\n"
	"    import time\n"
	"    os.write(1, b'ready\\n')\n"
	"    time.sleep(3600)\n"
	"elif 'thread' in mode:\n"
	"    t = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)\n"
	"    t.start()\n"
	"    t.join()\n"
	"else:\n"
	"    asyncio.run(main())\n";

static int line_of(const char *marker)
{
	const char *at = strstr(script, marker), *s;
	int line = 1;

	for (s = script; at && s < at; s++)
		line += *s == '\n';
	return at ? line : -1;
}

/* ------------------------------------------------ the child program */

struct child {
	pid_t pid;
	struct py_proc pp;
};

/* Starts py on the program with mode; 0 once it said it is ready and is
 * known as Python. */
static int child_start(struct child *c, const char *py, const char *mode)
{
	struct pollfd pfd;
	char buf[16], why[256];
	int fds[2], err = -ETIMEDOUT, i;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	if (pipe(fds))
		return -errno;
	fflush(NULL);
	c->pid = fork();
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test */
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(py, py, prog, mode, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	if (c->pid > 0 && poll(&pfd, 1, 20000) == 1 && (n = read(fds[0], buf, sizeof(buf))) > 0 &&
	    !strncmp(buf, "ready", 5))
		err = 0;
	close(fds[0]);
	for (i = 0; !err && i < 400; i++) {
		err = python__detect(c->pid, &c->pp, why, sizeof(why));
		if (err != -EAGAIN)
			break;
		usleep(5000);
	}
	if (err)
		fprintf(stderr, "  %s %s: not started (%s)\n", py, mode, strerror(-err));
	return err;
}

static void child_stop(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->pid = 0;
	}
}

/* The layout of asyncio in the child's interpreter, from the probe, as the
 * session hands it to the reader (session_async.c). */
static int layout_of(const struct child *c, struct pyasync_layout *pl)
{
	struct async_layout l;
	struct asyncprobe *p;
	char exe[64], why[512];
	int err = -ETIMEDOUT, i;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", c->pid);
	p = asyncprobe__start(exe, getuid(), getgid(), why, sizeof(why));
	if (!p)
		return -errno;
	for (i = 0; i < 2000; i++) {
		err = asyncprobe__poll(p, &l, why, sizeof(why));
		if (err != -EAGAIN)
			break;
		usleep(5000);
	}
	asyncprobe__free(p);
	if (err) {
		fprintf(stderr, "  probe: %s\n", why);
		return err;
	}
	pyasync__layout_from(pl, &l, c->pp.off, NULL, why, sizeof(why));
	return 0;
}

/* ------------------------------------------------------ the reader */

struct resolver {
	struct pycode_cache *codes;
	const struct py_proc *pp;
	struct profile *p;
};

/* Code object to frame, as the session's resolver does. */
static int resolve(void *ctx, uint64_t code, uint64_t tag, int offset, struct frame_ref *out)
{
	struct resolver *r = ctx;
	const struct pycode *pc = pycode_cache__load(r->codes, r->pp, 1, code, tag);
	int line;

	if (!pc)
		return errno ? -errno : -EFAULT;
	line = pycode__line(pc, offset);
	out->filename = profile__intern(r->p, pc->filename);
	out->qualname = profile__intern(r->p, pc->qualname);
	out->firstlineno = pc->firstlineno;
	out->line = line > 0 ? line : pc->firstlineno;
	return 0;
}

struct reader {
	struct child c;
	struct resolver r;
	struct pyasync *a;
	uint64_t now;
};

static bool reader_new(struct reader *rd, const char *py, const char *mode)
{
	struct profile_filter f = { .program_dir = tmpdir };

	memset(rd, 0, sizeof(*rd));
	if (child_start(&rd->c, py, mode))
		return false;
	rd->r.codes = pycode_cache__new(1024);
	rd->r.pp = &rd->c.pp;
	rd->r.p = profile__new(&f);
	rd->a = rd->r.codes && rd->r.p ? pyasync__new(&rd->c.pp, rd->r.p, resolve, &rd->r) : NULL;
	CHECK(rd->a != NULL);
	rd->now = 1000 * MS;
	return rd->a != NULL;
}

static void reader_free(struct reader *rd)
{
	pyasync__free(rd->a);
	child_stop(&rd->c);
	profile__free(rd->r.p);
	pycode_cache__free(rd->r.codes);
}

/* One poll, 10 ms after the last one. */
static int poll_next(struct reader *rd)
{
	rd->now += 10 * MS;
	return pyasync__poll(rd->a, rd->now, 0);
}

/* Polls until an idle loop is seen (the program may still be on its way
 * into its selector); true once one is. */
static bool until_idle(struct reader *rd)
{
	int i;

	for (i = 0; i < 400; i++) {
		if (poll_next(rd) < 0)
			return false;
		if (pyasync__stats(rd->a)->idle_polls)
			return true;
		usleep(5000);
	}
	return false;
}

static const struct file_stats *prog_file(struct profile *p)
{
	int i;

	for (i = 0; i < profile__nfiles(p); i++) {
		if (!strcmp(profile__file(p, i)->path, prog))
			return profile__file(p, i);
	}
	return NULL;
}

static const struct await_stats *aw_at(struct profile *p, int line)
{
	const struct file_stats *f = prog_file(p);

	return f && line > 0 && line < f->nlines && f->lines[line] ? f->lines[line]->aw : NULL;
}

static bool near(double a, double b)
{
	return a > b - 1e-3 && a < b + 1e-3;
}

static bool has_name(const struct await_stats *aw, const char *name)
{
	int i;

	for (i = 0; aw && i < aw->nnames; i++) {
		if (!strcmp(aw->names[i], name))
			return true;
	}
	return false;
}

/* The await stack of the task named name, or NULL. */
static const struct await_stack *stack_of(struct profile *p, const char *name)
{
	int i;

	for (i = 0; i < profile__nawait_stacks(p); i++) {
		const struct await_stack *st = profile__await_stack(p, i);

		if (st->task_name && !strcmp(st->task_name, name))
			return st;
	}
	return NULL;
}

/* The five tasks of main(), polled before and after the layout is known.
 * The idle time after it (60 ms) is shared by the five: three fifths on
 * the Event's line, a fifth on inner's sleep (not on outer's await of it),
 * a fifth on main's sleep. */
static void check_tasks(const char *py, const char *mode)
{
	const int l_wait = line_of("# L_WAIT"), l_inner = line_of("# L_INNER"),
		  l_outer = line_of("# L_OUTER"), l_main = line_of("# L_MAIN");
	const struct pyasync_stats *st;
	const struct await_stats *aw;
	const struct await_stack *sk;
	struct pyasync_layout pl;
	double before, idle;
	struct reader rd;
	int i;

	if (!reader_new(&rd, py, mode)) {
		CHECK(!"the program did not start");
		return;
	}
	st = pyasync__stats(rd.a);
	CHECK(!pyasync__has_layout(rd.a));
	CHECK(until_idle(&rd));
	/* Before the layout: seen idle, kept apart, nothing credited. */
	before = st->before_layout_ns;
	CHECK_EQ_INT(poll_next(&rd), 1);
	CHECK_EQ_INT(poll_next(&rd), 1);
	CHECK(near(st->before_layout_ns, before + 20 * MS));
	CHECK(near(st->idle_ns, st->before_layout_ns));
	CHECK_EQ_INT(st->snapshots, 0);
	CHECK(near(profile__await_ns(rd.r.p), 0));
	CHECK_EQ_INT(st->loops, 1);

	CHECK_EQ_INT(layout_of(&rd.c, &pl), 0);
	pyasync__set_layout(rd.a, &pl);
	CHECK(pyasync__has_layout(rd.a));
	idle = st->idle_ns;
	for (i = 0; i < 6; i++)
		CHECK_EQ_INT(poll_next(&rd), 1);
	CHECK_EQ_INT(pyasync__last_poll_ns(rd.a), rd.now);
	/* Each stack counts the snapshots that found it (before the flush,
	 * which credits the time after the last one). */
	sk = stack_of(rd.r.p, "deep");
	CHECK(sk && sk->count == st->snapshots);
	pyasync__flush(rd.a);
	CHECK(near(st->idle_ns, idle + 60 * MS));
	CHECK(near(st->before_layout_ns, idle));
	CHECK(near(st->credited_ns, 60 * MS));
	CHECK(near(st->empty_ns, 0));
	CHECK(st->snapshots >= 1);
	CHECK_EQ_INT(st->tasks_read, 5 * st->snapshots);
	CHECK_EQ_INT(st->max_tasks, 5);
	CHECK_EQ_INT(st->tasks_unreadable, 0);
	CHECK_EQ_INT(st->no_task_set, 0);
	CHECK_EQ_INT(st->loops, 1);
	CHECK(!st->uvloop);
	CHECK_EQ_STR(pyasync__last_error(rd.a), "");

	/* Where the time went. */
	CHECK(near(profile__await_ns(rd.r.p), 60 * MS));
	CHECK(near(profile__await_unattributed_ns(rd.r.p), 0));
	aw = aw_at(rd.r.p, l_wait);
	CHECK(aw && near(aw->ns, 36 * MS));
	CHECK(aw && aw->nnames == 3 && has_name(aw, "w0") && has_name(aw, "w1") &&
	      has_name(aw, "w2"));
	CHECK(aw && aw->conc_peak == 5);
	aw = aw_at(rd.r.p, l_inner);
	CHECK(aw && near(aw->ns, 12 * MS) && aw->nnames == 1 && has_name(aw, "deep"));
	CHECK(aw_at(rd.r.p, l_outer) == NULL);
	aw = aw_at(rd.r.p, l_main);
	CHECK(aw && near(aw->ns, 12 * MS) && has_name(aw, "Task-1"));
	/* A stack per task: deep's runs from outer's await to inner's. */
	CHECK_EQ_INT(profile__nawait_stacks(rd.r.p), 5);
	sk = stack_of(rd.r.p, "deep");
	CHECK(sk && sk->nframes == 2);
	if (sk && sk->nframes == 2) {
		CHECK_EQ_STR(sk->frames[0].qualname, "outer");
		CHECK_EQ_INT(sk->frames[0].line, l_outer);
		CHECK_EQ_STR(sk->frames[1].qualname, "inner");
		CHECK_EQ_INT(sk->frames[1].line, l_inner);
	}
	sk = stack_of(rd.r.p, "w1");
	CHECK(sk && sk->nframes == 1 && sk->frames[0].line == l_wait);

	/* A long gap: no more than 250 ms of it is the loop's (the loader may
	 * have stalled), or the gap the caller allows. */
	idle = st->idle_ns;
	rd.now += 10000 * MS;
	CHECK_EQ_INT(pyasync__poll(rd.a, rd.now, 0), 1);
	CHECK(near(st->idle_ns, idle + 250 * MS));
	rd.now += 10000 * MS;
	CHECK_EQ_INT(pyasync__poll(rd.a, rd.now, 2000 * MS), 1);
	CHECK(near(st->idle_ns, idle + 2250 * MS));

	/* Gone: the reader says so. */
	child_stop(&rd.c);
	CHECK(poll_next(&rd) < 0);
	reader_free(&rd);
}

static void test_tasks_every_version(void)
{
	char py[PATH_MAX];
	int found = 0;
	size_t i;

	for (i = 0; i < N_TEST_PYTHONS; i++) {
		const struct test_python *tp = &test_pythons[i];

		if (test_python_find(tp, py, sizeof(py))) {
			SKIP_PART("%s not found (%s)", tp->name, tp->install);
			continue;
		}
		found++;
		check_tasks(py, "main");
	}
	if (!found)
		SKIP_TEST("no Python 3.9-3.13 here");
}

/* Some Python to run the other programs with. */
static int some_python(char *py, size_t n)
{
	return test_python_between(9, 13, py, n) < 0 ? -ENOENT : 0;
}

/* The pure-Python Task (no _asyncio), in an event loop of another thread
 * than the main one: the same reading. */
static void test_pure_tasks_in_thread(void)
{
	char py[PATH_MAX];

	if (some_python(py, sizeof(py)))
		SKIP_TEST("no Python 3.9-3.13 here");
	check_tasks(py, "pure thread");
}

/* A loop that never waits in its selector, and a program with no loop:
 * never idle, no time, no snapshot. */
static void test_no_idle_loop(void)
{
	static const char *const modes[] = { "spin", "plain" };
	char py[PATH_MAX];
	struct pyasync_layout pl;
	struct reader rd;
	size_t m;
	int i;

	if (some_python(py, sizeof(py)))
		SKIP_TEST("no Python 3.9-3.13 here");
	for (m = 0; m < 2; m++) {
		if (!reader_new(&rd, py, modes[m])) {
			CHECK(!"the program did not start");
			continue;
		}
		CHECK_EQ_INT(layout_of(&rd.c, &pl), 0);
		pyasync__set_layout(rd.a, &pl);
		for (i = 0; i < 20; i++)
			CHECK_EQ_INT(poll_next(&rd), 0);
		CHECK_EQ_INT(pyasync__stats(rd.a)->polls, 20);
		CHECK_EQ_INT(pyasync__stats(rd.a)->idle_polls, 0);
		CHECK(near(pyasync__stats(rd.a)->idle_ns, 0));
		CHECK_EQ_INT(pyasync__stats(rd.a)->snapshots, 0);
		CHECK_EQ_INT(pyasync__stats(rd.a)->loops, 0);
		pyasync__flush(rd.a);
		CHECK(near(profile__await_ns(rd.r.p), 0));
		reader_free(&rd);
	}
	CHECK_EQ_INT(pyasync__task_sample(), 256);
}

int main(void)
{
	char cmd[PATH_MAX + 16];
	FILE *f;
	int rc;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(tmpdir, 0755);
	snprintf(prog, sizeof(prog), "%s/prog.py", tmpdir);
	f = fopen(prog, "w");
	if (!f || fputs(script, f) < 0 || fclose(f)) {
		perror(prog);
		return 1;
	}
	/* Layouts the probe measures are kept in the test's folder, not in
	 * the machine's cache. */
	snprintf(cmd, sizeof(cmd), "%s/cache", tmpdir);
	setenv("SCALENE_BPF_CACHE_DIR", cmd, 1);
	log_set_level(-1);
	RUN_TEST(test_tasks_every_version);
	RUN_TEST(test_pure_tasks_in_thread);
	RUN_TEST(test_no_idle_loop);
	rc = test_summary("pyasync");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
