/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/session_async.c: await attribution in the session, through
 * the session's own calls (the BPF side a stand-in, as in test_session.c)
 * and a real asyncio program in a child interpreter.  A launched program:
 * its reader starts when it is recognised, the layout is measured once an
 * event loop is seen, polls keep a fixed schedule whatever the ticks, the
 * idle time reaches the profile's lines and scalene_bpf.async (all of it
 * accounted for), the reader's counts outlive the process; a layout measured
 * earlier is taken at once.  System-wide, on a clock made up here: a
 * process with no loop is looked at less and less, then not at all until a
 * sample says it runs; one with an idle loop and no samples is looked at
 * seldom, and at the live rate while it has samples.
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

#include <linux/types.h>

#include "testlib.h"
#include "testpython.h"
#include "abi.h"
#include "base/clock.h"
#include "base/log.h"
#include "model/facts.h"
#include "model/profile.h"
#include "session/session.h"
#include "target/python.h"

#define MS 1000000ULL
/* Event loops are polled this often (session_int.h: ASYNC_POLL_NS). */
#define POLL_NS (10 * MS)

static char tmpdir[] = "/tmp/session-async-test-XXXXXX";
static char prog[PATH_MAX];

static const char script[] = "import asyncio, os, sys, time\n"
			     "\n"
			     "\n"
			     "async def waiter(ev):\n"
			     "    await ev.wait()  # L_WAIT\n"
			     "\n"
			     "\n"
			     "async def sleeper():\n"
			     "    await asyncio.sleep(3600)  # L_SLEEP\n"
			     "\n"
			     "\n"
			     "async def main():\n"
			     "    ev = asyncio.Event()\n"
			     "    ts = [asyncio.create_task(waiter(ev)) for i in range(3)]\n"
			     "    ts.append(asyncio.create_task(sleeper()))\n"
			     "    await asyncio.sleep(0)\n"
			     "    os.write(1, b'ready\\n')\n"
			     "    await asyncio.sleep(3600)  # L_MAIN\n"
			     "\n"
			     "\n"
			     "if sys.argv[1] == 'plain':\n"
			     "    os.write(1, b'ready\\n')\n"
			     "    time.sleep(3600)\n"
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

static char py[PATH_MAX];

static int some_python(void)
{
	return test_python_between(9, 13, py, sizeof(py)) < 0 ? -ENOENT : 0;
}

/* The program in mode ("main" or "plain"), once it said it is ready and
 * is known as Python; its pid, or -1. */
static pid_t start(const char *mode, struct py_proc *pp)
{
	struct pollfd pfd;
	char buf[16], why[256];
	int fds[2], err = -ETIMEDOUT, i;
	pid_t pid;

	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with the test */
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(py, py, prog, mode, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	if (pid > 0 && poll(&pfd, 1, 20000) == 1 && read(fds[0], buf, sizeof(buf)) >= 5 &&
	    !strncmp(buf, "ready", 5))
		err = 0;
	close(fds[0]);
	for (i = 0; !err && i < 400; i++) {
		err = python__detect(pid, pp, why, sizeof(why));
		if (err != -EAGAIN)
			break;
		usleep(5000);
	}
	if (err && pid > 0) {
		fprintf(stderr, "  %s %s: not started (%s)\n", py, mode, strerror(-err));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return err ? -1 : pid;
}

/* Until pid has slept for a while (its loop waits in its selector). */
static bool asleep(pid_t pid)
{
	char path[64], buf[512], *p;
	int i, in_a_row = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (i = 0; i < 2000 && in_a_row < 10; i++) {
		FILE *f = fopen(path, "re");
		bool s = false;

		if (f) {
			p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
			s = p && p[1] == ' ' && p[2] == 'S';
			fclose(f);
		}
		in_a_row = s ? in_a_row + 1 : 0;
		usleep(2000);
	}
	return in_a_row >= 10;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* ------------------------------------------------- the BPF stand-in */

static int fake_ok(void *ctx, int tgid)
{
	return 0;
}

static int fake_seed(void *ctx, int tgid)
{
	return 1;
}

static int fake_set_python(void *ctx, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
			   uint64_t gil_hi)
{
	return 0;
}

static int fake_stats(void *ctx, uint64_t *out)
{
	memset(out, 0, STAT_MAX * sizeof(*out));
	return 0;
}

static int fake_prog_runtime(void *ctx, uint64_t *run_ns, uint64_t *run_cnt)
{
	*run_ns = *run_cnt = 0;
	return 0;
}

static const struct session_bpf fake_bpf = {
	.track = fake_ok,
	.untrack = fake_ok,
	.seed_threads = fake_seed,
	.set_python = fake_set_python,
	.stats = fake_stats,
	.prog_runtime = fake_prog_runtime,
};

/* The session's scalene_bpf.async (of pid's profile when pid > 0, as
 * system-wide), into *out; false when there is none. */
static bool async_facts(struct session *s, int pid, struct facts_async *out)
{
	struct facts *f = facts__new();
	bool ok = f && !(pid > 0 ? session__proc_facts(s, pid, f) : session__facts(s, f)) &&
		  f->has_async;

	if (ok)
		*out = f->async;
	facts__free(f);
	return ok;
}

static const struct await_stats *aw_at(struct profile *p, int line)
{
	int i;

	for (i = 0; i < profile__nfiles(p); i++) {
		const struct file_stats *f = profile__file(p, i);

		if (!strcmp(f->path, prog))
			return line < f->nlines && f->lines[line] ? f->lines[line]->aw : NULL;
	}
	return NULL;
}

static bool near(double a, double b)
{
	double tol = 1e-6 * (a > b ? a : b) + 1e-3;

	return a > b - tol && a < b + tol;
}

/* ------------------------------------------------------ run mode */

/* Ticks (every 2 ms, on the real clock) until scalene_bpf.async shows n
 * snapshots; the facts then, and the time it took. */
static bool tick_until_snapshots(struct session *s, uint64_t n, struct facts_async *fa,
				 uint64_t *elapsed)
{
	uint64_t t0 = mono_ns();
	int i;

	for (i = 0; i < 5000; i++) {
		session__tick(s, mono_ns());
		if (async_facts(s, 0, fa) && fa->snapshots >= n)
			break;
		usleep(2000);
	}
	*elapsed = mono_ns() - t0;
	return fa->snapshots >= n;
}

/* A launched asyncio program: its layout measured once its loop is seen,
 * its tasks' waits on their lines (three on the Event's, one each on the
 * two sleeps: 3:1:1), every bit of idle time accounted for, polls no more
 * often than their schedule; after its exit the counts stay and no poll
 * comes. */
static void test_run_mode(void)
{
	const int l_wait = line_of("# L_WAIT"), l_sleep = line_of("# L_SLEEP"),
		  l_main = line_of("# L_MAIN");
	struct profile_filter filter = { .program_dir = tmpdir };
	struct session_opts so = { .rate_hz = 1000, .ncpus = 1, .async_waits = true };
	const struct await_stats *w, *sl, *m;
	struct session_bpf b = fake_bpf;
	struct facts_async fa = { 0 }, after;
	struct proc_record r;
	struct py_proc pp;
	struct session *s;
	struct profile *p;
	uint64_t elapsed;
	pid_t pid;
	int i;

	if (some_python())
		SKIP_TEST("no Python 3.9-3.13 here");
	pid = start("main", &pp);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	so.profile = p = profile__new(&filter);
	s = session__new(&so);
	CHECK(s != NULL);
	if (!s)
		goto out;
	session__set_bpf(s, &b);
	CHECK_EQ_INT(session__add_root(s, pid, &pp), 0);
	CHECK(tick_until_snapshots(s, 5, &fa, &elapsed));
	/* Polled on its schedule, not at every tick (there were about five
	 * ticks per poll). */
	CHECK(fa.polls >= 1 && fa.polls <= elapsed / POLL_NS + 2);
	CHECK(fa.idle_polls >= 1 && fa.idle_polls <= fa.polls);
	CHECK_EQ_INT(fa.loops, 1);
	CHECK_EQ_INT(fa.nlayouts, 1);
	if (fa.nlayouts == 1) {
		CHECK_EQ_INT(fa.layouts[0].pid, pid);
		CHECK(fa.layouts[0].found);
		CHECK(fa.layouts[0].c_task);
		CHECK(!strncmp(fa.layouts[0].python, "3.", 2));
	}
	CHECK_EQ_INT(fa.task_sample, 256);
	CHECK_EQ_INT(fa.max_tasks, 5);
	/* Five tasks a snapshot (none in one taken as the reader starts, with
	 * no idle time to share yet). */
	CHECK_EQ_INT(fa.tasks_read % 5, 0);
	CHECK(fa.tasks_read >= 5 * (fa.snapshots - 1));
	CHECK(fa.reads > 0 && fa.reader_ns > 0);

	/* The end of the run: the rest of the idle time to the tasks. */
	session__flush_async(s);
	CHECK(async_facts(s, 0, &fa));
	CHECK(fa.await_ns > 0);
	CHECK(near(fa.await_outside_profiled_files_ns, 0));
	CHECK(near(fa.idle_loop_ns,
		   fa.await_ns + fa.idle_before_layout_ns + fa.idle_loop_without_tasks_ns));
	CHECK(near(fa.await_ns, profile__await_ns(p)));
	w = aw_at(p, l_wait);
	sl = aw_at(p, l_sleep);
	m = aw_at(p, l_main);
	CHECK(w && sl && m);
	if (w && sl && m) {
		CHECK(near(w->ns, 3 * sl->ns));
		CHECK(near(sl->ns, m->ns));
		CHECK(near(w->ns + sl->ns + m->ns, fa.await_ns));
		CHECK_EQ_INT(w->nnames, 3);
		CHECK_EQ_INT(w->conc_peak, 5);
	}

	/* It exits: its reader's counts stay, no poll after. */
	memset(&r, 0, sizeof(r));
	r.hdr.type = EV_EXIT;
	r.hdr.tgid = pid;
	r.ts = mono_ns();
	CHECK_EQ_INT(session__handle(s, &r, sizeof(r)), 0);
	stop(pid);
	pid = 0;
	CHECK(async_facts(s, 0, &after));
	CHECK_EQ_INT(after.polls, fa.polls);
	CHECK(near(after.idle_loop_ns, fa.idle_loop_ns));
	for (i = 0; i < 20; i++) {
		session__tick(s, mono_ns());
		usleep(2000);
	}
	CHECK(async_facts(s, 0, &after));
	CHECK_EQ_INT(after.polls, fa.polls);
	CHECK_EQ_INT(after.snapshots, fa.snapshots);
	CHECK(near(after.await_ns, fa.await_ns));
	session__free(s);
out:
	profile__free(p);
	stop(pid);
}

/* The same interpreter again: its layout, measured in test_run_mode, is
 * taken when the reader starts; no idle time waits for it. */
static void test_layout_known(void)
{
	struct profile_filter filter = { .program_dir = tmpdir };
	struct session_opts so = { .rate_hz = 1000, .ncpus = 1, .async_waits = true };
	struct session_bpf b = fake_bpf;
	struct facts_async fa = { 0 };
	struct py_proc pp;
	struct session *s;
	struct profile *p;
	uint64_t elapsed;
	pid_t pid;

	if (some_python())
		SKIP_TEST("no Python 3.9-3.13 here");
	pid = start("main", &pp);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	so.profile = p = profile__new(&filter);
	s = session__new(&so);
	if (!s)
		goto out;
	session__set_bpf(s, &b);
	CHECK_EQ_INT(session__add_root(s, pid, &pp), 0);
	/* Known at once: in the facts before any poll. */
	CHECK(async_facts(s, 0, &fa));
	CHECK_EQ_INT(fa.polls, 0);
	CHECK(fa.nlayouts == 1 && fa.layouts[0].found);
	CHECK(tick_until_snapshots(s, 2, &fa, &elapsed));
	CHECK(near(fa.idle_before_layout_ns, 0));
	session__flush_async(s);
	CHECK(async_facts(s, 0, &fa));
	CHECK(fa.await_ns > 0);
	CHECK(near(fa.idle_loop_ns, fa.await_ns + fa.idle_loop_without_tasks_ns));
	session__free(s);
out:
	profile__free(p);
	stop(pid);
}

/* Without await attribution: no reader, no async facts. */
static void test_off(void)
{
	struct profile_filter filter = { .program_dir = tmpdir };
	struct session_opts so = { .rate_hz = 1000, .ncpus = 1 };
	struct session_bpf b = fake_bpf;
	struct facts_async fa;
	struct py_proc pp;
	struct session *s;
	struct profile *p;
	pid_t pid;
	int i;

	if (some_python())
		SKIP_TEST("no Python 3.9-3.13 here");
	pid = start("main", &pp);
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	so.profile = p = profile__new(&filter);
	s = session__new(&so);
	if (!s)
		goto out;
	session__set_bpf(s, &b);
	CHECK_EQ_INT(session__add_root(s, pid, &pp), 0);
	for (i = 0; i < 20; i++) {
		session__tick(s, mono_ns());
		usleep(2000);
	}
	CHECK(!async_facts(s, 0, &fa));
	session__flush_async(s);
	CHECK(near(profile__await_ns(p), 0));
	session__free(s);
out:
	profile__free(p);
	stop(pid);
}

/* --------------------------------------------------- system-wide */

struct fake_host {
	struct profile *made[4];
	int nmade;
};

static bool host_accept(void *ctx, int pid, int ppid)
{
	return true;
}

static struct profile *host_python(void *ctx, const struct session_proc *sp)
{
	struct profile_filter filter = { .program_dir = tmpdir };
	struct fake_host *h = ctx;

	if (h->nmade >= 4)
		return NULL;
	return h->made[h->nmade++] = profile__new(&filter);
}

static void host_skipped(void *ctx, int pid, const char *why)
{
}

static void host_ended(void *ctx, int pid, const struct session_end *e)
{
}

static uint64_t polls_of(struct session *s, int pid)
{
	struct facts_async fa;

	return async_facts(s, pid, &fa) ? fa.polls : 0;
}

/* Ticks every 5 ms of the made-up clock from *now to *now + span. */
static void tick_for(struct session *s, uint64_t *now, uint64_t span)
{
	uint64_t end = *now + span;

	while (*now < end) {
		*now += 5 * MS;
		session__tick(s, *now);
	}
}

/* A CPU sample of pid taken at ts. */
static void sample(struct session *s, int pid, uint64_t ts)
{
	struct sample_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.hdr.type = EV_SAMPLE;
	ev.hdr.tgid = pid;
	ev.tid = pid;
	ev.mode = MODE_USER;
	ev.status = WALK_OK;
	ev.ts = ts;
	ev.cpu_ns = MS;
	ev.syscall_nr = -1;
	CHECK_EQ_INT(session__handle(s, &ev, SAMPLE_HDR_SIZE), 0);
}

static void test_host_schedule(void)
{
	struct fake_host h = { 0 };
	struct session_host sh = {
		.ctx = &h,
		.accept = host_accept,
		.python = host_python,
		.skipped = host_skipped,
		.ended = host_ended,
	};
	struct session_opts so = { .rate_hz = 1000, .ncpus = 1, .async_waits = true, .host = &sh };
	struct session_bpf b = fake_bpf;
	struct py_proc pp;
	struct session *s = NULL;
	uint64_t now, n0, n1, n2;
	pid_t plain, loop;
	int i;

	if (some_python())
		SKIP_TEST("no Python 3.9-3.13 here");
	plain = start("plain", &pp);
	loop = start("main", &pp);
	CHECK(plain > 0 && loop > 0);
	if (plain <= 0 || loop <= 0)
		goto out;
	/* The clock below runs far faster than the programs: they must be
	 * where they stay (the loop in its selector) before it starts. */
	CHECK(asleep(plain) && asleep(loop));
	s = session__new(&so);
	if (!s)
		goto out;
	session__set_bpf(s, &b);
	/* Found running at the start of the run. */
	CHECK_EQ_INT(session__add_proc(s, plain), 0);
	CHECK_EQ_INT(session__add_proc(s, loop), 0);
	CHECK_EQ_INT(h.nmade, 2);
	now = mono_ns();

	/* No loop, no sample: looked at less and less (10, 20, 40 ... ms
	 * apart), then not at all once a look is older than a drain of the
	 * counts and no sample came. */
	tick_for(s, &now, 1000 * MS);
	n0 = polls_of(s, plain);
	CHECK(n0 >= 3 && n0 <= 10);
	tick_for(s, &now, 5000 * MS);
	CHECK_EQ_INT(polls_of(s, plain), n0);
	/* A sample: it runs, so it is looked at again. */
	sample(s, plain, now);
	tick_for(s, &now, 100 * MS);
	CHECK(polls_of(s, plain) > n0);

	/* An idle loop with no sample: looked at seldom, about once a second
	 * at most after a while. */
	n0 = polls_of(s, loop);
	tick_for(s, &now, 3000 * MS);
	n1 = polls_of(s, loop);
	CHECK(n1 > n0 && n1 - n0 <= 5);
	/* Samples (it runs): every 10 ms while they come. */
	for (i = 0; i < 10; i++) {
		sample(s, loop, now);
		tick_for(s, &now, 100 * MS);
	}
	n2 = polls_of(s, loop);
	CHECK(n2 - n1 >= 80 && n2 - n1 <= 102);
	/* They stop: seldom again, after a while. */
	tick_for(s, &now, 3000 * MS);
	n1 = polls_of(s, loop);
	tick_for(s, &now, 3000 * MS);
	CHECK(polls_of(s, loop) - n1 <= 4);
	CHECK(polls_of(s, loop) > n2);
out:
	session__free(s);
	for (i = 0; i < h.nmade; i++)
		profile__free(h.made[i]);
	stop(plain);
	stop(loop);
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
	 * the machine's cache: the first test measures one. */
	snprintf(cmd, sizeof(cmd), "%s/cache", tmpdir);
	setenv("SCALENE_BPF_CACHE_DIR", cmd, 1);
	log_set_level(-1);
	RUN_TEST(test_run_mode);
	RUN_TEST(test_layout_known);
	RUN_TEST(test_off);
	RUN_TEST(test_host_schedule);
	rc = test_summary("session_async");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
