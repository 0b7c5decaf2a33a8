// SPDX-License-Identifier: BSD-2-Clause
/*
 * The asyncio layout probe: its parser on hand-made lines, the probe run in
 * every interpreter here with each offset checked against what that
 * interpreter says about a fresh task made another way, and programs that
 * are not a usable Python (a clear reason, no crash, no process left).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session/asyncprobe.h"
#include "testlib.h"
#include "testpython.h"

static char tmpdir[] = "/tmp/asyncprobe-test-XXXXXX";

/* Runs the probe to the end (polling, as the loader does). */
static int run_probe(const char *path, uid_t uid, gid_t gid, const struct asyncprobe_opts *o,
		     struct async_layout *l, char *why, size_t whylen)
{
	struct asyncprobe *p = asyncprobe__start_opts(path, uid, gid, o, why, whylen);
	int err, again;

	if (!p)
		return -errno;
	for (int i = 0; i < 3000; i++) {
		err = asyncprobe__poll(p, l, why, whylen);
		if (err != -EAGAIN)
			break;
		usleep(5000);
	}
	/* Asked again, the same answer. */
	again = asyncprobe__poll(p, l, why, whylen);
	CHECK_EQ_INT(again, err);
	asyncprobe__free(p);
	return err;
}

/* ---- the parser ------------------------------------------------------- */

static const char good[] =
	"asyncprobe=2 c_task=1 c_future=1 name_may_be_int=1 task_set=scheduled_eager "
	"task_type=_asyncio.Task future_type=_asyncio.Future futureiter_type=_asyncio.FutureIter "
	"task_size=144 fut_loop=16 fut_state=96 state_pending=0 state_cancelled=1 "
	"state_finished=2 task_fut_waiter=112 task_coro=120 task_name=128 name_int_prefix=Task- "
	"asend_size=40 asend_gen=16 task_node=none hexversion=0x30d00f0 word=8\n";

static int parse_str(const char *s, struct async_layout *l, char *why, size_t n)
{
	return asyncprobe__parse(s, strlen(s), l, why, n);
}

/* good with the word starting "key=" replaced by rep ("" drops it). */
static int parse_with(const char *key, const char *rep, char *why, size_t n)
{
	struct async_layout l;
	char buf[2048];
	const char *at = strstr(good, key), *end;

	if (!at)
		return -1000;
	end = strpbrk(at, " \n");
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - good), good, rep,
		 *rep ? end : end + (*end == ' '));
	return parse_str(buf, &l, why, n);
}

static void test_parse_good(void)
{
	struct async_layout l;
	char why[256];

	CHECK_EQ_INT(parse_str(good, &l, why, sizeof(why)), 0);
	CHECK_EQ_INT(l.version_hex, 0x30d00f0);
	CHECK(l.c_task && l.c_future && l.name_may_be_int);
	CHECK_EQ_INT(l.task_set, ASYNC_TASKS_SCHEDULED_EAGER);
	CHECK_EQ_STR(l.task_type, "_asyncio.Task");
	CHECK_EQ_STR(l.futureiter_type, "_asyncio.FutureIter");
	CHECK_EQ_STR(l.name_int_prefix, "Task-");
	CHECK_EQ_INT(l.task_size, 144);
	CHECK_EQ_INT(l.fut_loop, 16);
	CHECK_EQ_INT(l.fut_state, 96);
	CHECK_EQ_INT(l.task_fut_waiter, 112);
	CHECK_EQ_INT(l.task_coro, 120);
	CHECK_EQ_INT(l.task_name, 128);
	CHECK_EQ_INT(l.state_finished, 2);
	CHECK_EQ_INT(l.asend_gen, 16);

	/* 3.14's task node: two pointers, the last ending the 144 bytes. */
	CHECK_EQ_INT(parse_with("task_node=", "task_node=128", why, sizeof(why)), 0);
	/* Missing pieces are PYOFF_NONE. */
	CHECK_EQ_INT(parse_with("fut_loop=", "fut_loop=none", why, sizeof(why)), 0);
	CHECK_EQ_INT(parse_with("state_cancelled=", "state_cancelled=-7", why, sizeof(why)), 0);
	{
		const char *nostate =
			"asyncprobe=2 c_task=0 c_future=0 name_may_be_int=0 task_set=none "
			"task_type=Task future_type=Future futureiter_type=none task_size=none "
			"fut_loop=none fut_state=none state_pending=none state_cancelled=none "
			"state_finished=none task_fut_waiter=none task_coro=none task_name=none "
			"name_int_prefix=none asend_size=40 asend_gen=none task_node=none "
			"hexversion=0x30912f0 "
			"word=8\n";

		CHECK_EQ_INT(parse_str(nostate, &l, why, sizeof(why)), 0);
		CHECK(!l.c_task && l.task_size == 0);
		CHECK_EQ_INT(l.fut_loop, PYOFF_NONE);
		CHECK_EQ_INT(l.fut_state, PYOFF_NONE);
		CHECK_EQ_INT(l.asend_gen, PYOFF_NONE);
		CHECK_EQ_INT(l.task_set, ASYNC_TASKS_UNKNOWN);
		CHECK_EQ_STR(l.futureiter_type, "");
	}
}

static void test_parse_bad(void)
{
	static const struct {
		const char *key, *rep, *why;
	} cases[] = {
		{ "fut_loop=", "", "no fut_loop" },
		{ "fut_loop=", "fut_loop=16 fut_loop=16", "twice" },
		{ "fut_loop=", "fut_loop=16 extra=1", "unknown key" },
		{ "fut_loop=", "fut_loop=016", "bad value for fut_loop" },
		{ "fut_loop=", "fut_loop=-8", "bad value" },
		{ "fut_loop=", "fut_loop=+8", "bad value" },
		{ "fut_loop=", "fut_loop=99999999999", "bad value" },
		{ "fut_loop=", "fut_loop=", "bad value" },
		{ "fut_loop=", "fut_loop=12", "does not fit" },
		{ "fut_loop=", "fut_loop=144", "does not fit" },
		{ "fut_state=", "fut_state=142", "does not fit" },
		{ "asend_gen=", "asend_gen=40", "does not fit" },
		/* the node's second pointer past the task's 144 bytes */
		{ "task_node=", "task_node=136", "does not fit" },
		{ "task_node=", "task_node=12", "does not fit" },
		{ "task_size=", "task_size=none", "does not fit" },
		{ "fut_loop=", "fut_loop=16  c", "without key=value" },
		{ "fut_loop=", "=16", "without key=value" },
		{ "fut_loop=", "fut_loop", "without key=value" },
		{ "c_task=", "c_task=2", "bad value for c_task" },
		{ "c_task=", "c_task=none", "bad value for c_task" },
		{ "word=", "word=4", "64-bit only" },
		{ "asyncprobe=", "asyncprobe=1", "probe format" },
		{ "hexversion=", "hexversion=0x20712f0", "not a Python 3" },
		{ "hexversion=", "hexversion=0X30d", "bad value" },
		{ "hexversion=", "hexversion=0x123456789", "bad value" },
		{ "state_cancelled=", "state_cancelled=0", "not distinct" },
		{ "state_cancelled=", "state_cancelled=none", "go together" },
		{ "state_cancelled=", "state_cancelled=2147483648", "bad value" },
		{ "state_cancelled=", "state_cancelled=-2147483649", "bad value" },
		{ "state_cancelled=", "state_cancelled=-0", "bad value" },
		{ "task_name=", "task_name=none", "int task name" },
		{ "name_int_prefix=", "name_int_prefix=none", "int task name" },
		{ "name_int_prefix=", "name_int_prefix=Task%d", "bad value" },
		{ "name_int_prefix=", "name_int_prefix=Task-Task-Task-Task-", "bad value" },
		{ "task_type=", "task_type=_asyncio.Task\"", "bad value" },
		{ "task_type=", "task_type=a/b", "bad value" },
		{ "task_set=", "task_set=weakset", "bad value for task_set" },
	};
	struct async_layout l;
	char why[256], big[8192];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = parse_with(cases[i].key, cases[i].rep, why, sizeof(why));

		CHECK_EQ_INT(err, -EBADMSG);
		if (!strstr(why, cases[i].why))
			fprintf(stderr, "case %zu (%s): reason \"%s\"\n", i, cases[i].rep, why);
		CHECK(strstr(why, cases[i].why) != NULL);
	}
	/* Not one line: empty, no newline, two lines, a NUL, a trailing space, too long. */
	CHECK_EQ_INT(asyncprobe__parse("", 0, &l, why, sizeof(why)), -EBADMSG);
	CHECK_EQ_INT(asyncprobe__parse(good, strlen(good) - 1, &l, why, sizeof(why)), -EBADMSG);
	snprintf(big, sizeof(big), "%s%s", good, good);
	CHECK_EQ_INT(parse_str(big, &l, why, sizeof(why)), -EBADMSG);
	memcpy(big, good, sizeof(good));
	big[20] = '\0';
	CHECK_EQ_INT(asyncprobe__parse(big, strlen(good), &l, why, sizeof(why)), -EBADMSG);
	snprintf(big, sizeof(big), "%.*s \n", (int)strlen(good) - 1, good);
	CHECK_EQ_INT(parse_str(big, &l, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "space at the end") != NULL);
	memset(big, 'a', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	CHECK_EQ_INT(asyncprobe__parse(big, sizeof(big), &l, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "one line") != NULL);
}

/* ---- live interpreters -------------------------------------------------- */

/* Ground truth taken in the interpreter itself, another way than the probe
 * does: tasks made by asyncio.create_task inside asyncio.run, a future
 * awaited through asyncio.sleep, agen.asend() rather than __anext__(); the
 * bytes at each offset must be what that interpreter says.  argv: the
 * layout's numbers and names.  Prints "ok" or the mismatches. */
static const char truth_script[] =
	"import sys, ctypes, asyncio, asyncio.tasks\n"
	"(loop_o, state_o, waiter_o, coro_o, name_o, pend, canc, fini, int_name, prefix,\n"
	" asend_o, task_type, future_type, futureiter_type, task_set, hexv, c_task) = "
	"sys.argv[1:]\n"
	"bad = []\n"
	"def ptr(o, off): return ctypes.c_void_p.from_address(id(o) + int(off)).value\n"
	"def i32(o, off): return ctypes.c_int32.from_address(id(o) + int(off)).value\n"
	"def obj(a): return ctypes.cast(a, ctypes.py_object).value\n"
	"def want(what, got, exp):\n"
	"    if got != exp: bad.append('%s: %r != %r' % (what, got, exp))\n"
	"def tpn(t): return ('' if t.__module__ == 'builtins' else t.__module__ + '.') + "
	"t.__qualname__\n"
	"want('hexversion', hexv, '%x' % sys.hexversion)\n"
	"import _asyncio\n"
	"want('c_task', c_task, str(int(asyncio.Task is _asyncio.Task)))\n"
	"want('task_type', task_type, tpn(asyncio.Task))\n"
	"want('future_type', future_type, tpn(asyncio.Future))\n"
	"ts = 'scheduled_eager' if hasattr(asyncio.tasks, '_scheduled_tasks') else 'all_tasks'\n"
	"want('task_set', task_set, ts)\n"
	"async def body(): await asyncio.sleep(0.05); return 5\n"
	"async def main():\n"
	"    loop = asyncio.get_running_loop()\n"
	"    want('futureiter_type', futureiter_type, tpn(type(iter(loop.create_future()))))\n"
	"    c = body()\n"
	"    t = asyncio.create_task(c, name='truth-name')\n"
	"    want('fut_loop', ptr(t, loop_o), id(loop))\n"
	"    want('task_coro', ptr(t, coro_o), id(c))\n"
	"    want('task_name', obj(ptr(t, name_o)), 'truth-name')\n"
	"    want('state pending', i32(t, state_o), int(pend))\n"
	"    await asyncio.sleep(0.01)\n"
	"    w = obj(ptr(t, waiter_o))\n"
	"    want('task_fut_waiter', isinstance(w, asyncio.Future) and not w.done(), True)\n"
	"    await t\n"
	"    want('state finished', i32(t, state_o), int(fini))\n"
	"    want('waiter cleared', ptr(t, waiter_o), None)\n"
	"    t2 = asyncio.create_task(body())\n"
	"    t2.cancel()\n"
	"    try: await t2\n"
	"    except asyncio.CancelledError: pass\n"
	"    want('state cancelled', i32(t2, state_o), int(canc))\n"
	"    t3 = asyncio.create_task(body())\n"
	"    held = obj(ptr(t3, name_o))\n"
	"    if int_name == '1':\n"
	"        want('int name', type(held), int)\n"
	"        want('int name text', t3.get_name(), prefix + str(held))\n"
	"    else:\n"
	"        want('str name', held, t3.get_name())\n"
	"    t3.cancel()\n"
	"asyncio.run(main())\n"
	"async def ag(): yield 1\n"
	"g = ag(); s = g.asend(None)\n"
	"want('asend type', type(s).__name__, 'async_generator_asend')\n"
	"want('asend_gen', ptr(s, asend_o), id(g))\n"
	"s.close()\n"
	"print('; '.join(bad) if bad else 'ok')\n";

static void check_truth(const char *py, const struct async_layout *l)
{
	static const char *const sets[] = { "unknown", "all_tasks", "scheduled_eager" };
	char cmd[8192], line[2048] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "%s -I -S -c \"$TRUTH\" %u %u %u %u %u %d %d %d %d '%s' %u '%s' '%s' '%s' %s %x "
		 "%d 2>&1",
		 py, l->fut_loop, l->fut_state, l->task_fut_waiter, l->task_coro, l->task_name,
		 l->state_pending, l->state_cancelled, l->state_finished, l->name_may_be_int,
		 l->name_int_prefix, l->asend_gen, l->task_type, l->future_type, l->futureiter_type,
		 sets[l->task_set], l->version_hex, l->c_task);
	setenv("TRUTH", truth_script, 1);
	f = popen(cmd, "r");
	if (!f) {
		CHECK(f != NULL);
		return;
	}
	while (fgets(line, sizeof(line), f) && strcmp(line, "ok\n"))
		fprintf(stderr, "%s: %s", py, line);
	pclose(f);
	CHECK_EQ_STR(line, "ok\n");
}

static void print_layout(const char *py, const struct async_layout *l)
{
	printf("%s: 0x%x c_task=%d c_future=%d task_size=%u fut_loop=%u fut_state=%u "
	       "(%d/%d/%d) task_fut_waiter=%u task_coro=%u task_name=%u name_may_be_int=%d "
	       "asend_gen=%u/%u task_set=%d %s %s %s\n",
	       py, l->version_hex, l->c_task, l->c_future, l->task_size, l->fut_loop, l->fut_state,
	       l->state_pending, l->state_cancelled, l->state_finished, l->task_fut_waiter,
	       l->task_coro, l->task_name, l->name_may_be_int, l->asend_gen, l->asend_size,
	       l->task_set, l->task_type, l->future_type, l->futureiter_type);
}

static void check_interp(const char *py, int minor)
{
	struct async_layout l, c;
	char why[1024];
	int err;

	err = run_probe(py, getuid(), getgid(), NULL, &l, why, sizeof(why));
	CHECK_EQ_INT(err, 0);
	if (err) {
		fprintf(stderr, "%s: %s\n", py, why);
		return;
	}
	print_layout(py, &l);
	CHECK_EQ_INT((l.version_hex >> 16) & 0xff, minor);
	CHECK(l.c_task && l.c_future);
	CHECK(l.fut_loop != PYOFF_NONE && l.fut_state != PYOFF_NONE &&
	      l.task_fut_waiter != PYOFF_NONE && l.task_coro != PYOFF_NONE &&
	      l.task_name != PYOFF_NONE && l.asend_gen != PYOFF_NONE);
	CHECK_EQ_INT(l.task_set, minor >= 12 ? ASYNC_TASKS_SCHEDULED_EAGER : ASYNC_TASKS_ALL);
	CHECK_EQ_INT(l.name_may_be_int, minor >= 12);
	CHECK_EQ_STR(why, "");
	check_truth(py, &l);
	/* Kept for this file, found through any path to it. */
	CHECK_EQ_INT(asyncprobe__cached(py, &c), 0);
	CHECK(!memcmp(&c, &l, sizeof(c)));
}

/* Through /proc/PID/exe of a running interpreter: the same file as its
 * path (test_live cached it), and the probe runs from there too. */
static void check_proc_exe(const char *py)
{
	struct async_layout l, c;
	char exe[64], why[1024];
	pid_t pid = fork();

	if (pid == 0) {
		execl(py, py, "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	CHECK_EQ_INT(asyncprobe__cached(exe, &c), 0);
	CHECK_EQ_INT(run_probe(exe, getuid(), getgid(), NULL, &l, why, sizeof(why)), 0);
	CHECK(!memcmp(&c, &l, sizeof(c)));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_live(void)
{
	char py[512];
	int tested = 0;

	for (size_t i = 0; i < N_TEST_PYTHONS; i++) {
		const struct test_python *tp = &test_pythons[i];

		if (test_python_find(tp, py, sizeof(py))) {
			SKIP_PART("%s not found (%s)", tp->name, tp->install);
			continue;
		}
		check_interp(py, tp->minor);
		if (tp->is_static)
			check_proc_exe(py);
		tested++;
	}
	if (!tested)
		t_skip_current = 1;
}

/* Any Python 3 here, for the tests that need one. */
static int some_python(char *py, size_t n)
{
	return test_python_between(9, 99, py, n) < 0 ? -ENOENT : 0;
}

/* A Python whose _asyncio cannot be imported: the pure-Python asyncio is
 * in use, nothing of the C layout is reported, the generator's still is. */
static void test_no_accelerator(void)
{
	struct asyncprobe_opts o = { 0 };
	struct async_layout l;
	char py[512], why[1024], *script;
	int err;

	if (some_python(py, sizeof(py)))
		SKIP_TEST("no Python 3.9-3.13 here");
	if (asprintf(&script, "import sys\nsys.modules['_asyncio'] = None\n%s", asyncprobe_script) <
	    0) {
		CHECK(0);
		return;
	}
	o.script = script;
	err = run_probe(py, getuid(), getgid(), &o, &l, why, sizeof(why));
	free(script);
	CHECK_EQ_INT(err, 0);
	CHECK(!l.c_task && !l.c_future);
	CHECK_EQ_INT(l.task_size, 0);
	CHECK(l.fut_loop == PYOFF_NONE && l.fut_state == PYOFF_NONE &&
	      l.task_fut_waiter == PYOFF_NONE && l.task_coro == PYOFF_NONE &&
	      l.task_name == PYOFF_NONE);
	CHECK(l.asend_gen != PYOFF_NONE);
	CHECK_EQ_STR(l.task_type, "Task");
	CHECK_EQ_STR(l.futureiter_type, "");
	CHECK(strstr(why, "no C accelerator") != NULL);
}

/* The probe's matching on canned object words: an offset counts only when
 * it holds the expected value in every object and no other offset does. */
static const char logic_script[] =
	"import os\n"
	"ns = {'__name__': 'asyncprobe_logic'}\n"
	"exec(os.environ['PROBE'], ns)\n"
	"class O: pass\n"
	"objs = [O() for _ in range(3)]; wants = [O() for _ in range(3)]\n"
	"table = {}\n"
	"ns['words'] = lambda obj, size, width: table[id(obj)]\n"
	"def fill(): table.update({id(o): [1, 2, id(wants[i]), 7] for i, o in enumerate(objs)})\n"
	"def find(): return str(ns['find_ptr'](objs, wants, 32, 'x'))\n"
	"r = []\n"
	"fill(); r.append(find())\n"
	"table[id(objs[0])][3] = id(wants[0]); r.append(find())\n"
	"for i, o in enumerate(objs): table[id(o)][3] = id(wants[i])\n"
	"r.append(find())\n"
	"fill(); table[id(objs[2])][2] = 0; r.append(find())\n"
	"print(' '.join(r))\n";

static void test_match_logic(void)
{
	char py[512], cmd[1024], line[256] = "";
	FILE *f;

	if (some_python(py, sizeof(py)))
		SKIP_TEST("no Python 3.9-3.13 here");
	setenv("PROBE", asyncprobe_script, 1);
	setenv("LOGIC", logic_script, 1);
	snprintf(cmd, sizeof(cmd), "%s -I -S -c \"$LOGIC\" 2>/dev/null", py);
	f = popen(cmd, "r");
	if (!f) {
		CHECK(f != NULL);
		return;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	pclose(f);
	/* unique; plus a chance match in one object; two everywhere; two of three */
	CHECK_EQ_STR(line, "16 16 none none\n");
}

/* A fake interpreter: a shell script in tmpdir. */
static void fake(const char *name, const char *body, char *path, size_t n)
{
	FILE *f;

	snprintf(path, n, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(path, 0755);
}

static void expect_fail(const char *path, int timeout_ms, int want, const char *reason)
{
	struct asyncprobe_opts o = { .timeout_ms = timeout_ms };
	struct async_layout l;
	char why[1024];
	int err = run_probe(path, getuid(), getgid(), &o, &l, why, sizeof(why));

	CHECK_EQ_INT(err, want);
	if (!strstr(why, reason))
		fprintf(stderr, "%s: reason \"%s\", expected \"%s\"\n", path, why, reason);
	CHECK(strstr(why, reason) != NULL);
	CHECK_EQ_INT(asyncprobe__cached(path, &l), -ENOENT);
}

static void test_not_python(void)
{
	char path[PATH_MAX];

	expect_fail("/bin/true", 0, -EBADMSG, "not one line");
	expect_fail("/bin/false", 0, -ENOEXEC, "exited with status 1");
	expect_fail("/bin/sleep", 0, -ENOEXEC, "status 1 (not a Python 3 interpreter");
	expect_fail("/nonexistent/python3", 0, -ENOENT,
		    "failed to run /nonexistent/python3: No such file");
	fake("noexec", "exit 0", path, sizeof(path));
	chmod(path, 0644);
	expect_fail(path, 0, -EACCES, "Permission denied");
	fake("garbage", "echo 'asyncprobe=2 fut_loop=12abc'", path, sizeof(path));
	expect_fail(path, 0, -EBADMSG, "bad value for fut_loop");
	fake("flood", "head -c 100000 /dev/zero | tr '\\0' a", path, sizeof(path));
	expect_fail(path, 0, -EBADMSG, "over 4096 bytes");
	fake("binary-stderr", "printf 'Traceback\\nBad\\001\\033[31m end\\n' >&2; exit 3", path,
	     sizeof(path));
	expect_fail(path, 0, -ENOEXEC, "status 3");
	expect_fail(path, 0, -ENOEXEC, ": Bad??[31m end");
	fake("killed", "kill -9 $$", path, sizeof(path));
	expect_fail(path, 0, -ENOEXEC, "signal 9");
}

static void test_timeout(void)
{
	struct asyncprobe_opts o = { .timeout_ms = 300 };
	struct async_layout l;
	struct asyncprobe *p;
	char path[PATH_MAX], why[512];
	struct timespec a, b;
	pid_t pid;
	int err;

	fake("hangs", "exec sleep 30", path, sizeof(path));
	clock_gettime(CLOCK_MONOTONIC, &a);
	p = asyncprobe__start_opts(path, getuid(), getgid(), &o, why, sizeof(why));
	CHECK(p != NULL);
	if (!p)
		return;
	pid = asyncprobe__pid(p);
	while ((err = asyncprobe__poll(p, &l, why, sizeof(why))) == -EAGAIN)
		usleep(10000);
	clock_gettime(CLOCK_MONOTONIC, &b);
	CHECK_EQ_INT(err, -ETIMEDOUT);
	CHECK(strstr(why, "ran over 300 ms and was killed") != NULL);
	CHECK(b.tv_sec - a.tv_sec < 3);
	/* Reaped: no such child any more. */
	CHECK(waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD);
	asyncprobe__free(p);

	/* Freed while running: killed and reaped at once. */
	p = asyncprobe__start_opts(path, getuid(), getgid(), NULL, why, sizeof(why));
	CHECK(p != NULL);
	if (!p)
		return;
	pid = asyncprobe__pid(p);
	CHECK_EQ_INT(asyncprobe__poll(p, &l, why, sizeof(why)), -EAGAIN);
	asyncprobe__free(p);
	CHECK(waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD);
	asyncprobe__free(NULL);
}

/* As root, the probe runs as the user asked for, without root's groups. */
static void test_runs_as_user(void)
{
	struct async_layout l;
	char path[PATH_MAX], why[1024];
	int err;

	if (geteuid() != 0)
		SKIP_TEST("not root: the probe runs as whoever runs the loader");
	fake("whoami", "echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G)\" >&2; exit 1", path,
	     sizeof(path));
	err = run_probe(path, 65534, 65534, NULL, &l, why, sizeof(why));
	CHECK_EQ_INT(err, -ENOEXEC);
	CHECK(strstr(why, "uid=65534 gid=65534 groups=65534") != NULL);
	if (!access("/usr/bin/python3.11", X_OK)) {
		err = run_probe("/usr/bin/python3.11", 65534, 65534, NULL, &l, why, sizeof(why));
		CHECK_EQ_INT(err, 0);
		CHECK(l.c_task && l.fut_loop != PYOFF_NONE);
	}
}

/* The cache tells files apart by identity: a changed file is probed again. */
static void test_cache_identity(void)
{
	struct async_layout l;
	char py[512], copy[PATH_MAX], link[PATH_MAX], cmd[2 * PATH_MAX], why[1024];
	struct timespec old_mtime[2] = { { 0, UTIME_OMIT }, { 12345, 0 } };

	if (some_python(py, sizeof(py)))
		SKIP_TEST("no Python 3.9-3.13 here");
	/* A hard copy in place: same bytes, another inode. */
	snprintf(copy, sizeof(copy), "%s/python-copy", tmpdir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", py, copy);
	if (system(cmd)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(asyncprobe__cached(copy, &l), -ENOENT);
	/* The copy may not find its library tree: it either works or says why. */
	if (run_probe(copy, getuid(), getgid(), NULL, &l, why, sizeof(why))) {
		CHECK_EQ_INT(asyncprobe__cached(copy, &l), -ENOENT);
		return;
	}
	CHECK_EQ_INT(asyncprobe__cached(copy, &l), 0);
	snprintf(link, sizeof(link), "%s/python-link", tmpdir);
	CHECK_EQ_INT(symlink(copy, link), 0);
	CHECK_EQ_INT(asyncprobe__cached(link, &l), 0);
	/* Touched: another file as far as the cache can tell. */
	CHECK_EQ_INT(utimensat(AT_FDCWD, copy, old_mtime, 0), 0);
	CHECK_EQ_INT(asyncprobe__cached(copy, &l), -ENOENT);
	CHECK_EQ_INT(asyncprobe__cached(link, &l), -ENOENT);
}

int main(void)
{
	char cmd[256];
	int rc;

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(tmpdir, 0755);
	/* Probe results this run keeps on disk go to the test's folder. */
	snprintf(cmd, sizeof(cmd), "%s/cache", tmpdir);
	setenv("SCALENE_BPF_CACHE_DIR", cmd, 1);
	RUN_TEST(test_parse_good);
	RUN_TEST(test_parse_bad);
	RUN_TEST(test_live);
	RUN_TEST(test_no_accelerator);
	RUN_TEST(test_match_logic);
	RUN_TEST(test_not_python);
	RUN_TEST(test_timeout);
	RUN_TEST(test_runs_as_user);
	RUN_TEST(test_cache_identity);
	rc = test_summary("asyncprobe");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
