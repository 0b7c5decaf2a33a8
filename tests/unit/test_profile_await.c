/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/model/profile_await.c: await time in the profile model.  A suspended
 * task's share of idle time goes to the innermost await of its chain in a
 * profiled file (line and function), as a sample's time would; tasks are
 * counted once per snapshot at a line (concurrency), their names kept up to
 * a limit; its await stack runs from that frame out, per task name; time no
 * profiled file takes is unattributed and tallied by (task, where it waits)
 * up to a limit.  None of it is CPU time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"
#include "model/profile.h"

#define MS 1000000.0

static struct profile *p;

static struct frame_ref fr(const char *file, const char *qual, int first, int line)
{
	return (struct frame_ref){ profile__intern(p, file), profile__intern(p, qual), first,
				   line };
}

static void new_profile(void)
{
	struct profile_filter f = { .program_dir = "/app" };

	p = profile__new(&f);
}

static const struct file_stats *file_named(const char *path)
{
	int i;

	for (i = 0; i < profile__nfiles(p); i++) {
		if (!strcmp(profile__file(p, i)->path, path))
			return profile__file(p, i);
	}
	return NULL;
}

static const struct await_stats *line_aw(const char *path, int line)
{
	const struct file_stats *f = file_named(path);

	return f && line < f->nlines && f->lines[line] ? f->lines[line]->aw : NULL;
}

static const struct await_stats *func_aw(const char *path, const char *name)
{
	const struct file_stats *f = file_named(path);
	int i;

	for (i = 0; f && i < f->nfuncs; i++) {
		if (!strcmp(f->funcs[i]->qualname, name))
			return f->funcs[i]->st.aw;
	}
	return NULL;
}

static bool near(double a, double b)
{
	return a > b - 1e-6 && a < b + 1e-6;
}

static void add(uint64_t snapshot, const char *task, const struct frame_ref *frames, int n,
		double ns, int concurrency)
{
	struct await_in a = {
		.snapshot = snapshot,
		.task_name = task ? profile__intern(p, task) : NULL,
		.frames = frames,
		.nframes = n,
		.ns = ns,
		.concurrency = concurrency,
	};

	profile__add_await(p, &a);
}

/* The innermost frame of a profiled file takes the time (the library's
 * frames inside it do not), on its line and its function; the frames
 * outside it get nothing; none of it is CPU time or a sample. */
static void test_innermost_profiled(void)
{
	struct frame_ref chain[3];

	new_profile();
	chain[0] = fr("/usr/lib/python3.11/asyncio/tasks.py", "sleep", 600, 605);
	chain[1] = fr("/app/svc.py", "fetch", 18, 20);
	chain[2] = fr("/app/svc.py", "main", 8, 10);
	add(1, "Task-1", chain, 3, 4 * MS, 1);
	CHECK(line_aw("/app/svc.py", 20) != NULL);
	CHECK(line_aw("/app/svc.py", 20) && near(line_aw("/app/svc.py", 20)->ns, 4 * MS));
	CHECK(line_aw("/app/svc.py", 10) == NULL);
	CHECK(file_named("/usr/lib/python3.11/asyncio/tasks.py") == NULL);
	CHECK(func_aw("/app/svc.py", "fetch") && near(func_aw("/app/svc.py", "fetch")->ns, 4 * MS));
	CHECK(func_aw("/app/svc.py", "main") == NULL);
	CHECK(near(profile__await_ns(p), 4 * MS));
	CHECK(near(profile__await_unattributed_ns(p), 0));
	CHECK(near(profile__total_ns(p), 0));
	CHECK_EQ_INT(profile__samples(p), 0);
	CHECK_EQ_INT(profile__nstacks(p), 0);

	/* Line 0 (not known): the function's first line. */
	chain[1] = fr("/app/svc.py", "fetch", 18, 0);
	add(2, "Task-1", chain, 3, 1 * MS, 1);
	CHECK(line_aw("/app/svc.py", 18) && near(line_aw("/app/svc.py", 18)->ns, 1 * MS));
	CHECK(near(profile__await_ns(p), 5 * MS));
	/* Module level: the line, no function. */
	chain[1] = fr("/app/svc.py", "<module>", 1, 44);
	add(3, "Task-1", chain, 2, 2 * MS, 1);
	CHECK(line_aw("/app/svc.py", 44) && near(line_aw("/app/svc.py", 44)->ns, 2 * MS));
	CHECK(func_aw("/app/svc.py", "<module>") == NULL);
	profile__free(p);
}

/* Tasks are counted once per snapshot at a line: two tasks waiting there
 * in one snapshot are one observation of its concurrency; the peak is the
 * largest seen. */
static void test_concurrency_per_snapshot(void)
{
	struct frame_ref chain[1];
	const struct await_stats *aw;

	new_profile();
	chain[0] = fr("/app/w.py", "worker", 5, 7);
	add(1, "w0", chain, 1, 1 * MS, 3);
	add(1, "w1", chain, 1, 1 * MS, 3);
	add(1, "w2", chain, 1, 1 * MS, 3);
	aw = line_aw("/app/w.py", 7);
	CHECK(aw != NULL);
	if (!aw)
		goto out;
	CHECK(near(aw->ns, 3 * MS));
	CHECK_EQ_INT(aw->conc_n, 1);
	CHECK(near(aw->conc_sum, 3));
	CHECK_EQ_INT(aw->conc_peak, 3);
	add(2, "w0", chain, 1, 2 * MS, 1);
	CHECK_EQ_INT(aw->conc_n, 2);
	CHECK(near(aw->conc_sum, 4));
	CHECK_EQ_INT(aw->conc_peak, 3);
	add(5, "w0", chain, 1, 2 * MS, 7);
	CHECK_EQ_INT(aw->conc_n, 3);
	CHECK(near(aw->conc_sum, 11));
	CHECK_EQ_INT(aw->conc_peak, 7);
	CHECK(near(aw->ns, 7 * MS));
	/* The function counts the same way. */
	CHECK(func_aw("/app/w.py", "worker") && func_aw("/app/w.py", "worker")->conc_n == 3);
out:
	profile__free(p);
}

/* The names of the tasks seen at a line: each once, none for an unnamed
 * task, the first AWAIT_NAMES_MAX kept and the rest counted. */
static void test_task_names(void)
{
	struct frame_ref chain[1];
	const struct await_stats *aw;
	char name[32];
	int i;

	new_profile();
	chain[0] = fr("/app/n.py", "job", 1, 3);
	add(1, "alpha", chain, 1, 1, 2);
	add(1, "alpha", chain, 1, 1, 2);
	add(2, NULL, chain, 1, 1, 1);
	add(3, "beta", chain, 1, 1, 1);
	aw = line_aw("/app/n.py", 3);
	CHECK(aw != NULL);
	if (!aw)
		goto out;
	CHECK_EQ_INT(aw->nnames, 2);
	CHECK(aw->nnames == 2 && !strcmp(aw->names[0], "alpha") && !strcmp(aw->names[1], "beta"));
	for (i = 0; i < AWAIT_NAMES_MAX + 5; i++) {
		snprintf(name, sizeof(name), "Task-%d", i);
		add(10 + i, name, chain, 1, 1, 1);
	}
	CHECK_EQ_INT(aw->nnames, AWAIT_NAMES_MAX);
	CHECK_EQ_INT(aw->names_dropped, 7);
	/* A name already kept is not counted as dropped. */
	add(500, "alpha", chain, 1, 1, 1);
	CHECK_EQ_INT(aw->names_dropped, 7);
out:
	profile__free(p);
}

/* Await stacks: from the attributed frame out (outermost first, the
 * waiting line last), per task name; a library's frames inside do not
 * tell two stacks apart; each snapshot that finds one counts. */
static void test_await_stacks(void)
{
	struct frame_ref a[3], b[3], c[2];
	const struct await_stack *st;
	int i, found = 0;

	new_profile();
	a[0] = fr("/usr/lib/python3.11/asyncio/locks.py", "wait", 200, 212);
	a[1] = fr("/app/s.py", "inner", 30, 33);
	a[2] = fr("/app/s.py", "outer", 20, 25);
	b[0] = fr("/usr/lib/python3.11/asyncio/tasks.py", "sleep", 600, 605);
	b[1] = a[1];
	b[2] = a[2];
	c[0] = a[1];
	c[1] = a[2];
	add(1, "T", a, 3, 2 * MS, 2);
	add(2, "T", b, 3, 3 * MS, 2);
	add(3, "T", c, 2, 1 * MS, 2);
	add(3, "U", c, 2, 5 * MS, 2);
	CHECK_EQ_INT(profile__nawait_stacks(p), 2);
	for (i = 0; i < profile__nawait_stacks(p); i++) {
		st = profile__await_stack(p, i);
		CHECK_EQ_INT(st->nframes, 2);
		if (st->nframes != 2)
			continue;
		CHECK_EQ_STR(st->frames[0].qualname, "outer");
		CHECK_EQ_INT(st->frames[0].line, 25);
		CHECK_EQ_STR(st->frames[1].qualname, "inner");
		CHECK_EQ_INT(st->frames[1].line, 33);
		if (!strcmp(st->task_name, "T")) {
			found |= 1;
			CHECK_EQ_INT(st->count, 3);
			CHECK(near(st->ns, 6 * MS));
		} else if (!strcmp(st->task_name, "U")) {
			found |= 2;
			CHECK_EQ_INT(st->count, 1);
			CHECK(near(st->ns, 5 * MS));
		}
	}
	CHECK_EQ_INT(found, 3);
	CHECK(profile__await_stack(p, -1) == NULL);
	CHECK(profile__await_stack(p, 2) == NULL);
	/* Another line of the same function: another stack. */
	c[0].line = 34;
	add(4, "T", c, 2, 1 * MS, 1);
	CHECK_EQ_INT(profile__nawait_stacks(p), 3);
	CHECK_EQ_INT(profile__await_stack(p, 2)->frames[1].line, 34);
	CHECK_EQ_INT(profile__await_stacks_dropped(p), 0);
	profile__free(p);
}

/* The table of stacks is bounded: past MAX_AWAIT_STACKS new stacks are
 * counted as dropped, their time still goes to the lines, and the stacks
 * kept still grow. */
static void test_await_stacks_bounded(void)
{
	struct frame_ref chain[1];
	char name[32];
	int i;

	new_profile();
	chain[0] = fr("/app/b.py", "f", 1, 2);
	for (i = 0; i < MAX_AWAIT_STACKS + 10; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		add(1 + i, name, chain, 1, 1 * MS, 1);
	}
	CHECK_EQ_INT(profile__nawait_stacks(p), MAX_AWAIT_STACKS);
	CHECK_EQ_INT(profile__await_stacks_dropped(p), 10);
	CHECK(near(line_aw("/app/b.py", 2)->ns, (MAX_AWAIT_STACKS + 10) * MS));
	add(99999, "t0", chain, 1, 1 * MS, 1);
	CHECK_EQ_INT(profile__await_stack(p, 0)->count, 2);
	CHECK_EQ_INT(profile__await_stacks_dropped(p), 10);
	profile__free(p);
}

/* No frame in a profiled file: unattributed, tallied by the task's
 * coroutine (outermost) and where it waits (innermost); a pair seen
 * again adds up; past MAX_AWAIT_OUTSIDE pairs, "other". */
static void test_unattributed(void)
{
	struct frame_ref chain[2];
	const struct await_outside *o;
	double other = -1;
	int n = -1, i;

	new_profile();
	chain[0] = fr("/usr/lib/python3.11/asyncio/queues.py", "get", 150, 158);
	chain[1] = fr("/usr/lib/python3.11/site-packages/srv.py", "serve", 3, 9);
	add(1, "Task-1", chain, 2, 2 * MS, 1);
	add(2, "Task-1", chain, 2, 3 * MS, 1);
	CHECK(near(profile__await_unattributed_ns(p), 5 * MS));
	CHECK(near(profile__await_ns(p), 0));
	CHECK_EQ_INT(profile__nfiles(p), 0);
	CHECK_EQ_INT(profile__nawait_stacks(p), 0);
	o = profile__await_outside(p, &n, &other);
	CHECK_EQ_INT(n, 1);
	CHECK(n == 1 && near(o[0].ns, 5 * MS));
	CHECK(n == 1 && !strcmp(o[0].task.qualname, "serve") && o[0].task.line == 9);
	CHECK(n == 1 && !strcmp(o[0].waits.qualname, "get") && o[0].waits.line == 158);
	CHECK(near(other, 0));

	/* The same task waiting elsewhere: another pair. */
	chain[0].line = 160;
	add(3, "Task-1", chain, 2, 1 * MS, 1);
	o = profile__await_outside(p, &n, &other);
	CHECK_EQ_INT(n, 2);
	for (i = 2; i < MAX_AWAIT_OUTSIDE + 3; i++) {
		chain[0].line = 1000 + i;
		add(10 + i, "Task-1", chain, 2, 1 * MS, 1);
	}
	o = profile__await_outside(p, &n, &other);
	CHECK_EQ_INT(n, MAX_AWAIT_OUTSIDE);
	CHECK(near(other, 3 * MS));
	CHECK(near(profile__await_unattributed_ns(p), (5 + 1 + MAX_AWAIT_OUTSIDE + 1) * MS));

	/* A chain with no frame at all: unattributed, in no pair. */
	add(100, "Task-9", NULL, 0, 4 * MS, 1);
	CHECK(near(profile__await_unattributed_ns(p), (5 + 1 + MAX_AWAIT_OUTSIDE + 1 + 4) * MS));
	o = profile__await_outside(p, &n, &other);
	CHECK_EQ_INT(n, MAX_AWAIT_OUTSIDE);
	CHECK(near(other, 3 * MS));
	profile__free(p);
}

/* A profiled frame whose line cannot be a line (none known, no first
 * line): unattributed, not on a line. */
static void test_no_line(void)
{
	struct frame_ref chain[] = { { NULL, NULL, 0, 0 } };

	new_profile();
	chain[0] = fr("/app/x.py", "f", 0, 0);
	add(1, "T", chain, 1, 2 * MS, 1);
	CHECK(near(profile__await_ns(p), 0));
	CHECK(near(profile__await_unattributed_ns(p), 2 * MS));
	CHECK_EQ_INT(profile__nawait_stacks(p), 0);
	profile__free(p);
}

/* With @profile functions, the await goes to the innermost decorated
 * frame, as samples do. */
static void test_decorated(void)
{
	struct frame_ref chain[3];

	new_profile();
	CHECK_EQ_INT(profile__decorate(p, "/app/d.py", 10, 20, "handler"), 0);
	chain[0] = fr("/app/d.py", "helper", 30, 32);
	chain[1] = fr("/app/d.py", "handler", 10, 15);
	chain[2] = fr("/app/d.py", "main", 40, 44);
	add(1, "T", chain, 3, 3 * MS, 1);
	CHECK(line_aw("/app/d.py", 15) && near(line_aw("/app/d.py", 15)->ns, 3 * MS));
	CHECK(line_aw("/app/d.py", 32) == NULL);
	CHECK(profile__nawait_stacks(p) == 1 && profile__await_stack(p, 0)->nframes == 2);
	/* Nothing decorated on the chain: unattributed. */
	add(2, "T", chain, 1, 1 * MS, 1);
	CHECK(near(profile__await_unattributed_ns(p), 1 * MS));
	profile__free(p);
}

int main(void)
{
	RUN_TEST(test_innermost_profiled);
	RUN_TEST(test_concurrency_per_snapshot);
	RUN_TEST(test_task_names);
	RUN_TEST(test_await_stacks);
	RUN_TEST(test_await_stacks_bounded);
	RUN_TEST(test_unattributed);
	RUN_TEST(test_no_line);
	RUN_TEST(test_decorated);
	return test_summary("profile_await");
}
