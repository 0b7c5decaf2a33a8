// SPDX-License-Identifier: BSD-2-Clause
/*
 * _asyncio's published offsets (user/target/asyncdebug.c): the table read
 * strictly, found in a running 3.14+ interpreter (built in, or the module
 * once imported) and agreeing there with what the interpreter says of
 * itself; and the reader's layout made from them over the probe's
 * (pyasync__layout_from), a disagreement named.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "session/asyncprobe.h"
#include "session/pyasync.h"
#include "target/asyncdebug.h"
#include "target/python.h"
#include "testlib.h"
#include "testpython.h"

/* 3.14's table as Debian's build publishes it. */
static const uint64_t table_314[13] = { 168,	136,   96,  108, 109, 128, 152,
					225864, 10880, 936, 864, 872, 880 };

static void test_parse(void)
{
	struct asyncio_debug d;
	uint64_t t[14];
	char why[256];

	CHECK_EQ_INT(asyncdebug__parse(table_314, sizeof(table_314), &d, why, sizeof(why)), 0);
	CHECK_EQ_INT(d.task_size, 168);
	CHECK_EQ_INT(d.task_coro, 128);
	CHECK_EQ_INT(d.task_name, 136);
	CHECK_EQ_INT(d.task_node, 152);
	CHECK_EQ_INT(d.interp_tasks_head, 10880);
	CHECK_EQ_INT(d.tstate_tasks_head, 880);
	CHECK_EQ_INT(d.tstate_running_loop, 864);

	/* Another size: a table this reader was not written for. */
	memcpy(t, table_314, sizeof(table_314));
	t[13] = 0;
	CHECK_EQ_INT(asyncdebug__parse(t, sizeof(t), &d, why, sizeof(why)), -EPROTO);
	CHECK(strstr(why, "112 bytes") != NULL);
	/* A list node that would end past the task. */
	memcpy(t, table_314, sizeof(table_314));
	t[6] = 160;
	CHECK_EQ_INT(asyncdebug__parse(t, sizeof(table_314), &d, why, sizeof(why)), -EPROTO);
	CHECK(strstr(why, "Task.task_node at 160") != NULL);
	/* A flag may sit on the last byte; a pointer may not. */
	memcpy(t, table_314, sizeof(table_314));
	t[3] = 167;
	CHECK_EQ_INT(asyncdebug__parse(t, sizeof(table_314), &d, why, sizeof(why)), 0);
	t[5] = 161;
	CHECK_EQ_INT(asyncdebug__parse(t, sizeof(table_314), &d, why, sizeof(why)), -EPROTO);
	/* A zero size (an unset table) and an absurd one. */
	memcpy(t, table_314, sizeof(table_314));
	t[9] = 0;
	CHECK_EQ_INT(asyncdebug__parse(t, sizeof(table_314), &d, why, sizeof(why)), -EPROTO);
	CHECK(strstr(why, "_PyThreadStateImpl: its size, 0") != NULL);
	t[9] = 1ull << 40;
	CHECK_EQ_INT(asyncdebug__parse(t, sizeof(table_314), &d, why, sizeof(why)), -EPROTO);
}

/* The published offsets over a probe's layout: the probe's fields they do
 * not name are kept, a differing one is named, a missing one filled. */
static void test_layout_from(void)
{
	struct async_layout l;
	struct pyasync_layout pl;
	struct asyncio_debug d;
	struct py_offsets off;
	char why[256], dis[256];

	memset(&l, 0, sizeof(l));
	memset(&off, 0, sizeof(off));
	CHECK_EQ_INT(asyncdebug__parse(table_314, sizeof(table_314), &d, why, sizeof(why)), 0);
	l.c_task = true;
	l.task_size = 168;
	l.fut_loop = 16;
	l.fut_state = 72;
	l.task_fut_waiter = 120;
	l.task_coro = 120; /* wrong */
	l.task_name = 136;
	l.task_node = PYOFF_NONE; /* not found */
	l.asend_gen = PYOFF_NONE;
	off.tstate_asyncio_tasks = 880;
	off.interp_asyncio_tasks = 10880;

	pyasync__layout_from(&pl, &l, &off, NULL, dis, sizeof(dis));
	CHECK_EQ_INT(pl.task_coro, 120);
	CHECK_EQ_INT(pl.task_node, PYOFF_NONE);
	CHECK_EQ_STR(dis, "");
	CHECK(pl.c_task);

	pyasync__layout_from(&pl, &l, &off, &d, dis, sizeof(dis));
	CHECK_EQ_INT(pl.task_coro, 128);
	CHECK_EQ_INT(pl.task_node, 152);
	CHECK_EQ_INT(pl.fut_loop, 16);
	CHECK_EQ_INT(pl.task_fut_waiter, 120);
	CHECK_EQ_INT(pl.tstate_tasks, 880);
	CHECK_EQ_INT(pl.interp_tasks, 10880);
	CHECK_EQ_STR(dis, "task_coro 128, probe 120");
	CHECK(pl.c_task);

	/* The tables disagree too: both named. */
	off.tstate_asyncio_tasks = 872;
	pyasync__layout_from(&pl, &l, &off, &d, dis, sizeof(dis));
	CHECK_EQ_INT(pl.tstate_tasks, 880);
	CHECK_EQ_STR(dis,
		     "task_coro 128, probe 120; thread state asyncio_tasks_head 880, table 872");
	/* Not the C Task: no C task is read, whatever is published. */
	l.c_task = false;
	pyasync__layout_from(&pl, &l, &off, &d, dis, sizeof(dis));
	CHECK(!pl.c_task);
}

/* A line the child wrote (up to 20 s): its length, 0 when none. */
static size_t read_line(int fd, char *out, size_t n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t got = 0;

	if (poll(&pfd, 1, 20000) == 1)
		got = read(fd, out, n - 1);
	out[got > 0 ? got : 0] = '\0';
	return got > 0 ? (size_t)got : 0;
}

struct kid {
	pid_t pid;
	int in, out; /* its stdin and stdout, our ends */
};

/* Starts py on code, with pipes for its stdin and stdout. */
static int start(struct kid *k, const char *py, const char *code)
{
	int o[2], i[2];

	if (pipe(o))
		return -errno;
	if (pipe(i)) {
		close(o[0]);
		close(o[1]);
		return -errno;
	}
	fflush(NULL);
	k->pid = fork();
	if (k->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(i[0], 0);
		dup2(o[1], 1);
		close(o[0]);
		close(i[1]);
		execl(py, py, "-I", "-c", code, (char *)NULL);
		_exit(127);
	}
	close(o[1]);
	close(i[0]);
	k->in = i[1];
	k->out = o[0];
	return k->pid > 0 ? 0 : -errno;
}

/* Its stdin closed, it ends. */
static void stop(struct kid *k)
{
	close(k->in);
	close(k->out);
	waitpid(k->pid, NULL, 0);
}

static int inspect(pid_t pid, struct py_proc *pp)
{
	char why[256];
	int err = -EAGAIN, i;

	for (i = 0; i < 400 && err == -EAGAIN; i++) {
		err = python__detect(pid, pp, why, sizeof(why));
		if (err == -EAGAIN)
			usleep(5000);
	}
	if (err)
		fprintf(stderr, "  not known as Python: %s\n", why);
	return err;
}

/* In each 3.14+ interpreter here: before asyncio is imported the table is
 * found only where _asyncio is built in; after, always, and it agrees
 * with the task's size the interpreter reports and with the tables'
 * list heads (generated from that version's headers). */
static void test_running(void)
{
	static const char *const code =
		"import sys\n"
		"print(int('_asyncio' in sys.builtin_module_names), flush=True)\n"
		"sys.stdin.readline()\n"
		"import asyncio, _asyncio\n"
		"print(_asyncio.Task.__basicsize__, flush=True)\n"
		"sys.stdin.read()\n";
	size_t k;
	int found = 0;

	for (k = 0; k < N_TEST_PYTHONS; k++) {
		const struct test_python *tp = &test_pythons[k];
		struct asyncio_debug d;
		struct py_proc pp;
		char py[PATH_MAX], line[64], why[256];
		int err, builtin;
		struct kid kid;

		if (tp->minor < 14 || test_python_find(tp, py, sizeof(py)))
			continue;
		found++;
		if (start(&kid, py, code) || !read_line(kid.out, line, sizeof(line))) {
			CHECK(!"the interpreter did not start");
			continue;
		}
		builtin = atoi(line);
		if (inspect(kid.pid, &pp)) {
			CHECK(!"not recognised");
			stop(&kid);
			continue;
		}
		err = asyncdebug__find(&pp, &d, why, sizeof(why));
		fprintf(stderr, "  %s, before asyncio is imported (_asyncio %s): %s\n", tp->name,
			builtin ? "built in" : "a module", err ? why : d.file);
		CHECK_EQ_INT(err, builtin ? 0 : -ENOENT);
		/* It imports asyncio, then says the C Task's size. */
		if (write(kid.in, "\n", 1) != 1 || !read_line(kid.out, line, sizeof(line))) {
			CHECK(!"it did not import asyncio");
			stop(&kid);
			continue;
		}
		err = asyncdebug__find(&pp, &d, why, sizeof(why));
		CHECK_EQ_INT(err, 0);
		if (!err) {
			fprintf(stderr, "  %s, after: %s (Task %s bytes)\n", tp->name, d.file,
				strtok(line, "\n"));
			CHECK_EQ_INT(d.task_size, atol(line));
			CHECK_EQ_INT(d.tstate_tasks_head, pp.off->tstate_asyncio_tasks);
			CHECK_EQ_INT(d.interp_tasks_head, pp.off->interp_asyncio_tasks);
			CHECK(builtin ? strstr(d.file, "/_asyncio.") == NULL
				      : strstr(d.file, "/_asyncio.") != NULL);
		}
		stop(&kid);
	}
	if (!found)
		SKIP_TEST("no Python 3.14+ here (tools/python-sid 3.14)");
}

int main(void)
{
	log_set_level(-1);
	RUN_TEST(test_parse);
	RUN_TEST(test_layout_from);
	RUN_TEST(test_running);
	return test_summary("asyncdebug");
}
