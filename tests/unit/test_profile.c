/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/model/profile.c: where each sample's time goes.  Attribution to the
 * innermost frame of a profiled file, the file filter, blocked time counted
 * or kept apart, unattributed time by reason, the native symbols of a line,
 * the main thread's sample-time reservoir, functions (comprehensions and
 * lambdas folded as Scalene does), stacks and threads.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"
#include "gpu/gpu.h"
#include "model/profile.h"

#define MS 1000000ULL

static struct frame_ref fr(struct profile *p, const char *file, const char *qual, int first,
			   int line)
{
	return (struct frame_ref){ profile__intern(p, file), profile__intern(p, qual), first,
				   line };
}

static struct sample_in sample(const struct frame_ref *frames, int n, uint64_t cpu)
{
	return (struct sample_in){
		.tgid = 100,
		.tid = 100,
		.main_thread = true,
		.cpu_ns = cpu,
		.where = WHERE_PYTHON,
		.core_util = 0.25,
		.unattributed = -1,
		.frames = frames,
		.nframes = n,
	};
}

static const struct file_stats *file_named(const struct profile *p, const char *path)
{
	int i;

	for (i = 0; i < profile__nfiles(p); i++) {
		if (!strcmp(profile__file(p, i)->path, path))
			return profile__file(p, i);
	}
	return NULL;
}

static const struct line_stats *line_of(const struct profile *p, const char *path, int line)
{
	const struct file_stats *f = file_named(p, path);

	return f && line < f->nlines ? f->lines[line] : NULL;
}

static const struct func_stats *func_named(const struct profile *p, const char *path,
					   const char *name)
{
	const struct file_stats *f = file_named(p, path);
	int i;

	for (i = 0; f && i < f->nfuncs; i++) {
		if (!strcmp(f->funcs[i]->qualname, name))
			return f->funcs[i];
	}
	return NULL;
}

static struct profile *new_profile(const char *dir)
{
	struct profile_filter f = { .program_dir = dir };

	return profile__new(&f);
}

/* ------------------------------------------------------------ filter */

static void test_filter_program_dir(void)
{
	struct profile *p = new_profile("/home/u/proj");

	CHECK(profile__file_profiled(p, "/home/u/proj/main.py"));
	CHECK(profile__file_profiled(p, "/home/u/proj/pkg/sub/mod.py"));
	CHECK(!profile__file_profiled(p, "/home/u/proj2/main.py")); /* a prefix, not the dir */
	CHECK(!profile__file_profiled(p, "/home/u/projects.py"));
	CHECK(!profile__file_profiled(p, "/home/u"));
	CHECK(!profile__file_profiled(p, "/usr/lib/python3.11/json/decoder.py"));
	/* A virtual environment inside the project is library code. */
	CHECK(!profile__file_profiled(p, "/home/u/proj/.venv/lib/python3.11/site-packages/x.py"));
	CHECK(!profile__file_profiled(p, "/home/u/proj/env/lib/python3/dist-packages/y.py"));
	/* Relative names are the program's own. */
	CHECK(profile__file_profiled(p, "main.py"));
	CHECK(profile__file_profiled(p, "pkg/mod.py"));
	/* No source behind these. */
	CHECK(!profile__file_profiled(p, "<frozen importlib._bootstrap>"));
	CHECK(!profile__file_profiled(p, "<frozen runpy>"));
	CHECK(!profile__file_profiled(p, "<string>"));
	CHECK(!profile__file_profiled(p, "<stdin>"));
	CHECK(!profile__file_profiled(p, ""));
	profile__free(p);

	/* A trailing slash on the directory changes nothing. */
	p = new_profile("/home/u/proj/");
	CHECK(profile__file_profiled(p, "/home/u/proj/main.py"));
	CHECK(!profile__file_profiled(p, "/home/u/proj2/main.py"));
	profile__free(p);

	/* The root directory holds every absolute path (but not libraries). */
	p = new_profile("/");
	CHECK(profile__file_profiled(p, "/main.py"));
	CHECK(profile__file_profiled(p, "/srv/app/main.py"));
	CHECK(!profile__file_profiled(p, "/usr/lib/python3/dist-packages/y.py"));
	profile__free(p);

	/* No program directory: only relative names. */
	p = new_profile(NULL);
	CHECK(!profile__file_profiled(p, "/srv/app/main.py"));
	CHECK(profile__file_profiled(p, "main.py"));
	profile__free(p);
}

static void test_filter_all_only_exclude(void)
{
	static const char *const only[] = { "mylib", "/srv/tools/" };
	static const char *const exclude[] = { "test_", "mylib/vendored" };
	struct profile_filter f = { .program_dir = "/app", .profile_all = true };
	struct profile *p = profile__new(&f);

	CHECK(profile__file_profiled(p, "/usr/lib/python3.11/json/decoder.py"));
	CHECK(profile__file_profiled(p, "/app/.venv/lib/python3.11/site-packages/x.py"));
	CHECK(profile__file_profiled(p, "/app/main.py"));
	CHECK(!profile__file_profiled(p, "<frozen importlib._bootstrap>"));
	CHECK(!profile__file_profiled(p, "<string>"));
	profile__free(p);

	/* --profile-only: those files alone, the program's own included only
	 * if they match. */
	f = (struct profile_filter){ .program_dir = "/app", .only = only, .nonly = 2 };
	p = profile__new(&f);
	CHECK(profile__file_profiled(p, "/usr/lib/python3/dist-packages/mylib/core.py"));
	CHECK(profile__file_profiled(p, "/srv/tools/x.py"));
	CHECK(!profile__file_profiled(p, "/srv/toolsx.py"));
	CHECK(!profile__file_profiled(p, "/app/main.py"));
	CHECK(!profile__file_profiled(p, "<frozen mylib>"));
	profile__free(p);

	/* --profile-exclude wins over everything. */
	f = (struct profile_filter){
		.program_dir = "/app", .only = only, .nonly = 2, .exclude = exclude, .nexclude = 2
	};
	p = profile__new(&f);
	CHECK(profile__file_profiled(p, "/opt/mylib/a.py"));
	CHECK(!profile__file_profiled(p, "/opt/mylib/vendored/six.py"));
	CHECK(!profile__file_profiled(p, "/opt/mylib/test_a.py"));
	profile__free(p);
	f = (struct profile_filter){
		.program_dir = "/app", .profile_all = true, .exclude = exclude, .nexclude = 1
	};
	p = profile__new(&f);
	CHECK(!profile__file_profiled(p, "/app/test_main.py"));
	CHECK(profile__file_profiled(p, "/app/main.py"));
	profile__free(p);
}

/* ------------------------------------------------------- attribution */

static void test_innermost_profiled_frame(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref frames[] = {
		fr(p, "/usr/lib/python3.11/json/decoder.py", "JSONDecoder.raw_decode", 343, 353),
		fr(p, "/usr/lib/python3.11/json/__init__.py", "loads", 299, 346),
		fr(p, "/app/util.py", "parse", 10, 12),
		fr(p, "/app/main.py", "main", 3, 7),
		fr(p, "/app/main.py", "<module>", 1, 20),
	};
	struct sample_in s = sample(frames, 5, 10 * MS);
	const struct line_stats *st;

	profile__add(p, &s);
	CHECK_EQ_INT(profile__nfiles(p), 1); /* only the file that got the time */
	st = line_of(p, "/app/util.py", 12);
	CHECK(st != NULL);
	if (st) {
		CHECK(st->python_ns == 10 * MS);
		CHECK_EQ_INT(st->samples, 1);
	}
	CHECK(func_named(p, "/app/util.py", "parse") != NULL);
	CHECK(file_named(p, "/usr/lib/python3.11/json/decoder.py") == NULL);
	CHECK(file_named(p, "/app/main.py") == NULL);
	CHECK(profile__total_ns(p) == 10 * MS);
	CHECK_EQ_INT(profile__samples(p), 1);
	profile__free(p);
}

static void test_where_split(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref frames[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(frames, 1, 10 * MS);
	const struct line_stats *st;
	const struct file_stats *f;

	profile__add(p, &s);
	s.where = WHERE_NATIVE;
	s.cpu_ns = 20 * MS;
	profile__add(p, &s);
	s.where = WHERE_SYSTEM;
	s.cpu_ns = 30 * MS;
	profile__add(p, &s);
	st = line_of(p, "/app/main.py", 7);
	f = file_named(p, "/app/main.py");
	CHECK(st && f);
	if (!st || !f)
		goto out;
	CHECK(st->python_ns == 10 * MS);
	CHECK(st->native_ns == 20 * MS);
	CHECK(st->system_ns == 30 * MS);
	CHECK(st->blocked_ns == 0);
	CHECK_EQ_INT(st->samples, 3);
	CHECK_EQ_INT(st->util_n, 3);
	CHECK(fabs(st->util_sum - 0.75) < 1e-12);
	/* The file's total is its lines' Python + native + system. */
	CHECK(f->total_ns == 60 * MS);
	CHECK(profile__total_ns(p) == 60 * MS);
out:
	profile__free(p);
}

static void test_line_zero_and_huge(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref f0[] = { fr(p, "/app/main.py", "main", 3, 0) };
	struct frame_ref fbig[] = { fr(p, "/app/main.py", "main", 3, 2000000000) };
	struct frame_ref fneg[] = { fr(p, "/app/main.py", "main", 3, -5) };
	struct sample_in s = sample(f0, 1, 10 * MS);
	const struct file_stats *f;

	/* No line: the function's first line stands in. */
	profile__add(p, &s);
	CHECK(line_of(p, "/app/main.py", 3) != NULL);
	/* A line number no file has, and a negative one: no giant table. */
	s.frames = fbig;
	profile__add(p, &s);
	s.frames = fneg;
	profile__add(p, &s);
	f = file_named(p, "/app/main.py");
	CHECK(f != NULL && f->nlines < 1000);
	CHECK(profile__total_ns(p) == 30 * MS);
	profile__free(p);
}

/* ----------------------------------------------------- blocked time */

static void test_offcpu_counted(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref frames[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(frames, 1, 0);
	const struct line_stats *st;

	s.offcpu_ns = 40 * MS; /* a sleep */
	profile__add(p, &s);
	st = line_of(p, "/app/main.py", 7);
	CHECK(st != NULL);
	if (st) {
		CHECK(st->system_ns == 40 * MS);
		CHECK(st->blocked_ns == 40 * MS);
		CHECK(st->python_ns == 0 && st->native_ns == 0);
		/* No CPU: no utilisation sample, no sample time. */
		CHECK_EQ_INT(st->util_n, 0);
		CHECK_EQ_INT(st->ncpu_times, 0);
	}
	CHECK(profile__total_ns(p) == 40 * MS);
	CHECK_EQ_INT(profile__nthreads(p), 1);
	CHECK(profile__thread(p, 0)->blocked_ns == 40 * MS);
	profile__free(p);
}

/* Processes that are not Python (launchers, shells): apart from the rest. */
static void test_not_python_kept_apart(void)
{
	struct profile *p = new_profile("/app");
	struct sample_in s = sample(NULL, 0, 7 * MS);

	s.not_python = true;
	s.offcpu_ns = 3 * MS;
	profile__add(p, &s);
	CHECK(profile__not_python_ns(p) == 10 * MS);
	CHECK(profile__total_ns(p) == 0);
	CHECK_EQ_INT(profile__nfiles(p), 0);
	CHECK_EQ_INT(profile__nstacks(p), 0);
	profile__free(p);
}

/* ------------------------------------------------------ unattributed */

static void test_unattributed_reasons(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref lib[] = { fr(p, "/usr/lib/python3.11/threading.py", "Thread.run", 990,
				      1010) };
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(NULL, 0, 1 * MS);

	s.unattributed = UNATTR_NO_PYTHON_THREAD;
	profile__add(p, &s);
	s.unattributed = UNATTR_UNREADABLE;
	s.cpu_ns = 2 * MS;
	profile__add(p, &s);
	/* Frames, but only in library files. */
	s = sample(lib, 1, 4 * MS);
	profile__add(p, &s);
	/* Off CPU too. */
	s.cpu_ns = 0;
	s.offcpu_ns = 8 * MS;
	profile__add(p, &s);
	/* A reason given wins over frames that would otherwise count. */
	s = sample(app, 1, 16 * MS);
	s.unattributed = UNATTR_UNREADABLE;
	profile__add(p, &s);
	/* An out-of-range reason is "unreadable". */
	s = sample(NULL, 0, 32 * MS);
	s.unattributed = 77;
	profile__add(p, &s);

	CHECK(profile__unattributed_ns(p, UNATTR_NO_PYTHON_THREAD) == 1 * MS);
	CHECK(profile__unattributed_ns(p, UNATTR_UNREADABLE) == (2 + 16 + 32) * MS);
	CHECK(profile__unattributed_ns(p, UNATTR_NOT_PROFILED) == 12 * MS);
	CHECK(profile__unattributed_ns(p, UNATTR_MAX) == 0);
	CHECK(profile__total_ns(p) == 63 * MS);
	CHECK_EQ_INT(profile__nfiles(p), 0);
	CHECK_EQ_INT(profile__samples(p), 6);
	profile__free(p);
}

/* A thread with no Python frame (a BLAS worker) works for the line its
 * process's main thread is at meanwhile, which the main thread's next
 * record tells (the off-CPU record of its wait comes when the wait ends):
 * the worker's CPU time goes there, native in user mode and system in the
 * kernel.  Its blocked time, its time before the main thread is seen, and
 * its time whose next main-thread record is at no line (shutting down) or
 * has not come stay on no line. */
static void test_native_threads_credited(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in main = sample(app, 1, 2 * MS), worker = sample(NULL, 0, 1 * MS);
	const struct line_stats *st;
	int i;

	worker.tid = 101;
	worker.main_thread = false;
	worker.where = WHERE_NATIVE;
	worker.unattributed = UNATTR_NO_PYTHON_THREAD;
	profile__add(p, &worker); /* the main thread not seen yet */
	profile__add(p, &main);
	worker.cpu_ns = 4 * MS;
	worker.offcpu_ns = 8 * MS;
	profile__add(p, &worker);
	worker.offcpu_ns = 0;
	worker.where = WHERE_SYSTEM;
	worker.cpu_ns = 16 * MS;
	profile__add(p, &worker);
	CHECK(profile__native_threads_ns(p) == 0); /* not yet: where is main? */
	CHECK(profile__unattributed_ns(p, UNATTR_NO_PYTHON_THREAD) == (1 + 8 + 4 + 16) * MS);
	/* The main thread's wait, at the line, ends. */
	main.cpu_ns = 0;
	main.offcpu_ns = 128 * MS;
	profile__add(p, &main);
	worker.where = WHERE_NATIVE;
	worker.cpu_ns = 32 * MS;
	profile__add(p, &worker);
	/* The main thread shutting down: no Python frame. */
	main = sample(NULL, 0, 64 * MS);
	main.unattributed = UNATTR_NO_PYTHON_THREAD;
	profile__add(p, &main);
	worker.cpu_ns = 256 * MS; /* no main-thread record after it */
	profile__add(p, &worker);

	st = line_of(p, "/app/main.py", 7);
	CHECK(st);
	if (st) {
		CHECK(st->python_ns == 2 * MS);
		CHECK(st->native_ns == 4 * MS);
		CHECK(st->system_ns == (16 + 128) * MS);
		CHECK(st->blocked_ns == 128 * MS);
		CHECK_EQ_INT(st->samples, 4);
	}
	CHECK(profile__native_threads_ns(p) == 20 * MS);
	CHECK(profile__unattributed_ns(p, UNATTR_NO_PYTHON_THREAD) == (1 + 8 + 32 + 64 + 256) * MS);
	CHECK(profile__total_ns(p) == 511 * MS);
	CHECK(file_named(p, "/app/main.py")->total_ns == 150 * MS);
	CHECK_EQ_INT(profile__samples(p), 8);
	/* The worker's own time is still its own. */
	for (i = 0; i < profile__nthreads(p); i++) {
		const struct thread_stats *t = profile__thread(p, i);

		if (t->tid == 101)
			CHECK(t->cpu_ns == 309 * MS && t->blocked_ns == 8 * MS);
	}
	CHECK_EQ_INT(profile__nthreads(p), 2);
	profile__free(p);

	/* Turned off (--all, whose counts come in no useful order): on no line. */
	p = new_profile("/app");
	profile__credit_native_threads(p, false);
	app[0] = fr(p, "/app/main.py", "main", 3, 7);
	main = sample(app, 1, 2 * MS);
	profile__add(p, &main);
	worker.cpu_ns = 4 * MS;
	profile__add(p, &worker);
	main.cpu_ns = 0;
	main.offcpu_ns = 8 * MS;
	profile__add(p, &main);
	st = line_of(p, "/app/main.py", 7);
	CHECK(st && st->native_ns == 0 && st->system_ns == 8 * MS);
	CHECK(profile__native_threads_ns(p) == 0);
	CHECK(profile__unattributed_ns(p, UNATTR_NO_PYTHON_THREAD) == 4 * MS);
	profile__free(p);
}

/* --native: a worker's own native stack goes under the line it is credited
 * to, after a frame naming the thread; two of its samples with one stack
 * make one stack entry, another stack another. */
static void test_native_thread_stack_credited(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	const char *lib = profile__intern(p, "/usr/lib/libblas.so");
	struct frame_ref own[] = {
		{ lib, profile__intern(p, "dgemm_kernel"), FRAME_NATIVE, 0 },
		{ lib, profile__intern(p, "blas_thread_server"), FRAME_NATIVE, 0 },
	};
	uint64_t own_ips[] = { 0x1010, 0x2020 };
	struct sample_in main = sample(app, 1, 2 * MS), worker = sample(NULL, 0, 1 * MS);
	int i, found = 0;

	worker.tid = 101;
	worker.main_thread = false;
	worker.thread_name = "blas";
	worker.where = WHERE_NATIVE;
	worker.unattributed = UNATTR_NO_PYTHON_THREAD;
	worker.stack = own;
	worker.stack_ips = own_ips;
	worker.nstack = 2;
	profile__add(p, &main);
	profile__add(p, &worker);
	profile__add(p, &worker);
	worker.nstack = 1; /* another stack: dgemm_kernel alone */
	profile__add(p, &worker);
	profile__add(p, &main);
	for (i = 0; i < profile__nstacks(p); i++) {
		const struct stack_stats *st = profile__stack(p, i);

		if (st->nframes < 2 || strcmp(st->frames[1].qualname, "[thread blas]"))
			continue;
		found++;
		/* Outermost first: the line, the thread, its own frames. */
		CHECK_EQ_STR(st->frames[0].qualname, "main");
		CHECK_EQ_INT(st->frames[0].line, 7);
		CHECK_EQ_INT(st->frames[1].firstlineno, FRAME_NATIVE);
		CHECK_EQ_STR(st->frames[st->nframes - 1].qualname, "dgemm_kernel");
		CHECK(st->ips && st->ips[st->nframes - 1] == 0x1010);
		if (st->nframes == 4) {
			CHECK_EQ_STR(st->frames[2].qualname, "blas_thread_server");
			CHECK_EQ_INT((int)st->count, 2);
			CHECK(st->native_ns == 2 * MS);
		} else {
			CHECK_EQ_INT(st->nframes, 3);
			CHECK_EQ_INT((int)st->count, 1);
		}
	}
	CHECK_EQ_INT(found, 2);
	CHECK(profile__native_threads_ns(p) == 3 * MS);
	profile__free(p);
}

/* The warning that most of the Python time fell outside the profiled
 * files: over half of the readable Python time and at least 0.1 s, naming
 * the installed package that took most of it. */
static void test_outside_warning(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref pkg[] = {
		fr(p, "/usr/lib/python3.11/re/_parser.py", "_parse", 500, 510),
		fr(p, "/venv/lib/python3.11/site-packages/black/linegen.py", "visit", 40, 44),
		fr(p, "/usr/lib/python3.11/runpy.py", "_run_code", 80, 88),
	};
	struct frame_ref std[] = { fr(p, "/usr/lib/python3.11/json/decoder.py", "decode", 1, 2) };
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(app, 1, 60 * MS);
	char *w;

	profile__add(p, &s);
	s = sample(pkg, 3, 50 * MS);
	profile__add(p, &s);
	/* 50 of 110 ms: not most. */
	CHECK(!profile__outside_warning(p));
	/* Time without readable frames does not count either way. */
	s = sample(NULL, 0, 500 * MS);
	s.unattributed = UNATTR_UNREADABLE;
	profile__add(p, &s);
	CHECK(!profile__outside_warning(p));
	s = sample(pkg, 3, 60 * MS);
	profile__add(p, &s);
	w = profile__outside_warning(p);
	CHECK(w && strstr(w, "64.7%") && strstr(w, "--profile-only black") &&
	      strstr(w, "--profile-all"));
	free(w);
	/* More in the standard library than in any package: no package named. */
	s = sample(std, 1, 200 * MS);
	profile__add(p, &s);
	w = profile__outside_warning(p);
	CHECK(w && !strstr(w, "black") && strstr(w, "--profile-all"));
	free(w);
	profile__free(p);

	/* A short program, mostly start-up: under 0.1 s, no warning.  (Its
	 * frames interned in the new profile: the old one's names are gone.) */
	p = new_profile("/app");
	std[0] = fr(p, "/usr/lib/python3.11/json/decoder.py", "decode", 1, 2);
	s = sample(std, 1, 30 * MS);
	profile__add(p, &s);
	CHECK(!profile__outside_warning(p));
	profile__free(p);
}

/* The tracks' test: a CPU sample of 1 ms (the period) at frames, collecting
 * or not, step ns after the one before (*ts moves on). */
static void cpu_ms(struct profile *p, const struct frame_ref *frames, bool gc, uint64_t *ts,
		   uint64_t step)
{
	struct sample_in s = sample(frames, 1, 1000000);

	s.gc = gc;
	s.period_ns = 1000000;
	s.ts_ns = *ts += step;
	profile__add(p, &s);
}

/* The tracks: a thread's garbage collection samples a period apart are one
 * interval per line; another line, another thread or a gap of more than two
 * periods after a sample not collecting begins a new one, a gap with no
 * sample of the thread does not; off-CPU records give I/O and GIL intervals that
 * end with the block; when they fill, the gap doubles and the count stays
 * bounded. */
static void test_tracks(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "main", 1, 10) };
	struct frame_ref b[] = { fr(p, "/app/main.py", "main", 1, 11) };
	const struct profile_tracks *t = profile__tracks(p);
	struct sample_in s;
	uint64_t ts = 1000000000ULL;
	int i;

	for (i = 0; i < 5; i++) /* line 10: 5 ms of collection */
		cpu_ms(p, a, true, &ts, 1000000);
	cpu_ms(p, b, true, &ts, 1000000);  /* line 11 next: its own interval */
	cpu_ms(p, a, true, &ts, 10000000); /* line 10 again, 10 ms later: a new one */
	cpu_ms(p, a, false, &ts, 1000000); /* not collecting: no interval */
	CHECK_EQ_INT(t->n, 3);
	CHECK_EQ_INT(t->iv[0].kind, TRACK_GC);
	CHECK_EQ_INT(t->iv[0].line, 10);
	CHECK_EQ_INT(t->iv[0].end_ns - t->iv[0].start_ns, 5000000);
	CHECK_EQ_INT(t->iv[1].line, 11);
	CHECK_EQ_INT(t->iv[2].line, 10);
	CHECK(t->ns[TRACK_GC] == 7000000);
	CHECK_EQ_INT(line_of(p, "/app/main.py", 10)->gc_ns, 6000000);

	/* A block of 30 ms in I/O whose last 4 ms waited for the GIL. */
	s = sample(a, 1, 0);
	s.offcpu_ns = 30000000;
	s.gil_ns = 4000000;
	s.blocked_kind = BLOCKED_IO;
	s.ts_ns = ts += 30000000;
	profile__add(p, &s);
	CHECK_EQ_INT(t->n, 5);
	CHECK_EQ_INT(t->iv[3].kind, TRACK_GIL);
	CHECK_EQ_INT(t->iv[3].end_ns, ts);
	CHECK_EQ_INT(t->iv[3].end_ns - t->iv[3].start_ns, 4000000);
	CHECK_EQ_INT(t->iv[4].kind, TRACK_IO);
	CHECK_EQ_INT(t->iv[4].end_ns, ts - 4000000);
	CHECK_EQ_INT(t->iv[4].end_ns - t->iv[4].start_ns, 26000000);

	/* 3 ms at line 11 holding the GIL, the last of them collecting too:
	 * one interval of each. */
	for (i = 0; i < 3; i++) {
		s = sample(b, 1, 1000000);
		s.gil_held = true;
		s.gc = i == 2;
		s.period_ns = 1000000;
		s.ts_ns = ts += 1000000;
		profile__add(p, &s);
	}
	CHECK_EQ_INT(t->n, 7);
	CHECK_EQ_INT(t->iv[5].kind, TRACK_GIL_HELD);
	CHECK_EQ_INT(t->iv[5].line, 11);
	CHECK_EQ_INT(t->iv[5].end_ns, ts);
	CHECK_EQ_INT(t->iv[5].end_ns - t->iv[5].start_ns, 3000000);
	CHECK_EQ_INT(t->iv[6].kind, TRACK_GC);
	CHECK(t->ns[TRACK_GIL_HELD] == 3000000);

	/* The thread's next sample 10 ms later, still collecting at line 11:
	 * preempted in the middle of the collection, the same interval. */
	cpu_ms(p, b, true, &ts, 10000000);
	CHECK_EQ_INT(t->n, 7);
	CHECK_EQ_INT(t->iv[6].end_ns, ts);
	CHECK_EQ_INT(t->iv[6].end_ns - t->iv[6].start_ns, 11000000);
	/* A sample not collecting, then a collection 10 ms later: a new one. */
	cpu_ms(p, b, false, &ts, 1000000);
	cpu_ms(p, b, true, &ts, 10000000);
	CHECK_EQ_INT(t->n, 8);
	CHECK_EQ_INT(t->iv[7].end_ns - t->iv[7].start_ns, 1000000);

	/* Many short collections far apart, the thread doing something else
	 * in between: thinned, never past the bound. */
	for (i = 0; i < 3 * TRACK_MAX_INTERVALS; i++) {
		cpu_ms(p, a, true, &ts, 20000000);
		cpu_ms(p, a, false, &ts, 1000000);
	}
	CHECK(t->n <= TRACK_MAX_INTERVALS);
	CHECK(t->gap_ns > 2000000);
	CHECK_EQ_INT(t->dropped, 0);
	profile__restart(p);
	CHECK_EQ_INT(t->n, 0);
	profile__free(p);
}

static void test_zero_time_sample(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(app, 1, 0);

	s.truncated = true;
	profile__add(p, &s);
	CHECK_EQ_INT(profile__samples(p), 1);
	CHECK_EQ_INT(profile__truncated(p), 1);
	CHECK(profile__total_ns(p) == 0);
	CHECK_EQ_INT(profile__nfiles(p), 0);
	CHECK_EQ_INT(profile__nstacks(p), 0);
	profile__free(p);
}

/* --------------------------------------------------- native symbols */

static void test_native_symbols_top_n(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(app, 1, 0);
	const struct line_stats *st;
	const char *lib = profile__intern(p, "/usr/lib/libm.so.6");
	const char *other = profile__intern(p, "/usr/lib/libc.so.6");
	char name[32];
	double sum = 0;
	int i, k;

	s.where = WHERE_NATIVE;
	s.native_module = lib;
	/* Ten symbols, sym_i taking (i + 1) * 10 ms: more than a line keeps. */
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "sym_%d", i);
		s.native_sym = profile__intern(p, name);
		s.cpu_ns = (uint64_t)(i + 1) * 10 * MS;
		profile__add(p, &s);
	}
	/* The heaviest again: it adds up, takes no new slot. */
	s.native_sym = profile__intern(p, "sym_9");
	profile__add(p, &s);
	/* The same name in another module is another symbol. */
	s.native_module = other;
	s.cpu_ns = 1000 * MS;
	profile__add(p, &s);
	/* Python and kernel samples name no symbol. */
	s.native_module = lib;
	s.native_sym = profile__intern(p, "not_native");
	s.where = WHERE_PYTHON;
	profile__add(p, &s);
	s.where = WHERE_SYSTEM;
	profile__add(p, &s);
	/* Blocked only: no CPU, no symbol. */
	s.where = WHERE_NATIVE;
	s.cpu_ns = 0;
	s.offcpu_ns = 5 * MS;
	s.native_sym = profile__intern(p, "blocked_only");
	profile__add(p, &s);

	st = line_of(p, "/app/main.py", 7);
	CHECK(st != NULL);
	if (!st)
		goto out;
	CHECK_EQ_INT(st->nsyms, LINE_NATIVE_SYMS);
	for (k = 0; k < st->nsyms; k++) {
		sum += st->syms[k].ns;
		CHECK(strcmp(st->syms[k].name, "not_native"));
		CHECK(strcmp(st->syms[k].name, "blocked_only"));
	}
	/* Space-saving: nothing is lost from the sum of the kept counts. */
	CHECK(fabs(sum - (550 + 100 + 1000) * (double)MS) < 1);
	/* Space-saving counts never fall short of the truth, and overshoot by
	 * at most the count of the entry they displaced (30 ms at most here). */
	for (k = 0; k < st->nsyms; k++) {
		double truth = -1;
		int i9;

		if (st->syms[k].module == other)
			truth = 1000 * MS;
		else if (sscanf(st->syms[k].name, "sym_%d", &i9) == 1)
			truth = (i9 == 9 ? 200 : (i9 + 1) * 10) * (double)MS;
		CHECK(truth > 0);
		CHECK(st->syms[k].ns >= truth && st->syms[k].ns <= truth + 30 * MS);
	}
	{
		int found9 = 0, found9b = 0, found8 = 0, found7 = 0;

		for (k = 0; k < st->nsyms; k++) {
			bool is9 = !strcmp(st->syms[k].name, "sym_9");

			found9 += is9 && st->syms[k].module == lib;
			found9b += is9 && st->syms[k].module == other;
			found8 += !strcmp(st->syms[k].name, "sym_8");
			found7 += !strcmp(st->syms[k].name, "sym_7");
		}
		CHECK_EQ_INT(found9, 1);
		CHECK_EQ_INT(found9b, 1);
		CHECK_EQ_INT(found8, 1);
		CHECK_EQ_INT(found7, 1);
	}
out:
	profile__free(p);
}

/* --------------------------------------------------------- reservoir */

static void test_cpu_times_reservoir(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref app[] = { fr(p, "/app/main.py", "main", 3, 7) };
	struct sample_in s = sample(app, 1, 1 * MS);
	const struct line_stats *st;
	const struct func_stats *fs;
	int i, bad = 0, dup = 0;
	unsigned char *seen = calloc(3000, 1);

	/* 3000 main-thread samples at t = 1 ms, 2 ms, ... */
	for (i = 1; i <= 3000; i++) {
		s.ts_ns = (uint64_t)i * MS;
		profile__add(p, &s);
	}
	/* Other threads' samples and blocked-only ones are not kept. */
	s.main_thread = false;
	s.tid = 101;
	s.ts_ns = 999999 * MS;
	for (i = 0; i < 100; i++)
		profile__add(p, &s);
	s.main_thread = true;
	s.tid = 100;
	s.cpu_ns = 0;
	s.offcpu_ns = 1 * MS;
	for (i = 0; i < 100; i++)
		profile__add(p, &s);

	st = line_of(p, "/app/main.py", 7);
	CHECK(st != NULL);
	if (!st)
		goto out;
	CHECK_EQ_INT(st->ncpu_times, CPU_SAMPLES_RESERVOIR);
	CHECK_EQ_INT(st->cpu_times_seen, 3000);
	for (i = 0; i < (int)st->ncpu_times; i++) {
		double t = st->cpu_times[i] * 1000;
		int k = (int)llround(t);

		if (fabs(t - k) > 1e-6 || k < 1 || k > 3000)
			bad++;
		else if (seen[k - 1]++)
			dup++;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(dup, 0);
	/* A uniform sample of 3000: some of the later ones replaced early
	 * ones (not just the first 500 kept). */
	{
		int late = 0;

		for (i = 500; i < 3000; i++)
			late += seen[i];
		CHECK(late > 250);
	}
	/* Functions keep no sample times. */
	fs = func_named(p, "/app/main.py", "main");
	CHECK(fs != NULL);
	if (fs)
		CHECK_EQ_INT(fs->st.ncpu_times, 0);
out:
	free(seen);
	profile__free(p);
}

/* --------------------------------------------------------- functions */

static void test_enclosing_function(void)
{
	char buf[64];

	CHECK_EQ_INT(profile_enclosing_function("f.<locals>.<lambda>", buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "f");
	CHECK_EQ_INT(profile_enclosing_function("A.m.<locals>.<listcomp>", buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "A.m");
	CHECK_EQ_INT(profile_enclosing_function("f.<locals>.<genexpr>", buf, sizeof(buf)), 1);
	CHECK_EQ_STR(buf, "f");
	CHECK_EQ_INT(profile_enclosing_function("f.<locals>.<lambda>.<locals>.<lambda>", buf,
						sizeof(buf)),
		     1);
	CHECK_EQ_STR(buf, "f");
	/* No enclosing named function. */
	CHECK_EQ_INT(profile_enclosing_function("<lambda>", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(profile_enclosing_function("<listcomp>", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(profile_enclosing_function("<module>", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(profile_enclosing_function("f", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(profile_enclosing_function("", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(profile_enclosing_function("<lambda>.<locals>.<lambda>", buf, sizeof(buf)), 0);
	/* The buffer: exactly large enough, then one byte short. */
	CHECK_EQ_INT(profile_enclosing_function("abc.<locals>.<lambda>", buf, 4), 1);
	CHECK_EQ_STR(buf, "abc");
	CHECK_EQ_INT(profile_enclosing_function("abc.<locals>.<lambda>", buf, 3), 0);
}

/*
 * A lambda inside a nested function belongs to that nested function, which
 * Scalene reports under its own qualified name (it walks out of frames whose
 * co_name has a '<', then names the frame it stops at by co_qualname).
 */
static void test_enclosing_function_nested(void)
{
	char buf[64];

	CHECK_EQ_INT(profile_enclosing_function("f.<locals>.g.<locals>.<lambda>", buf, sizeof(buf)),
		     1);
	CHECK_EQ_STR(buf, "f.<locals>.g");
	CHECK_EQ_INT(profile_enclosing_function("C.m.<locals>.inner.<locals>.<listcomp>", buf,
						sizeof(buf)),
		     1);
	CHECK_EQ_STR(buf, "C.m.<locals>.inner");
}

static void test_functions_and_module(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref mod[] = { fr(p, "/app/main.py", "<module>", 1, 30) };
	struct frame_ref f[] = { fr(p, "/app/main.py", "Klass.method", 10, 12), mod[0] };
	struct sample_in s = sample(mod, 1, 10 * MS);
	const struct file_stats *fs;
	const struct func_stats *m;

	profile__add(p, &s);
	s = sample(f, 2, 20 * MS);
	profile__add(p, &s);
	f[0].line = 13;
	profile__add(p, &s);
	fs = file_named(p, "/app/main.py");
	CHECK(fs != NULL);
	if (!fs)
		goto out;
	/* <module> is not a function. */
	CHECK_EQ_INT(fs->nfuncs, 1);
	m = func_named(p, "/app/main.py", "Klass.method");
	CHECK(m != NULL);
	if (m) {
		CHECK_EQ_INT(m->firstlineno, 10);
		CHECK(m->st.python_ns == 40 * MS);
		CHECK_EQ_INT(m->st.samples, 2);
	}
out:
	profile__free(p);
}

static void test_comprehensions_fold(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref f = fr(p, "/app/main.py", "f", 3, 5);
	struct frame_ref mod = fr(p, "/app/main.py", "<module>", 1, 30);
	/* 3.11: the name says where it was defined. */
	struct frame_ref s311[] = { fr(p, "/app/main.py", "f.<locals>.<listcomp>", 5, 5), f, mod };
	struct frame_ref l311[] = { fr(p, "/app/main.py", "f.<locals>.<lambda>", 4, 4), f, mod };
	/* 3.9 and 3.10: only the caller in the same file tells. */
	struct frame_ref s39[] = { fr(p, "/app/main.py", "<listcomp>", 5, 5), f, mod };
	struct frame_ref g39[] = { fr(p, "/app/main.py", "<genexpr>", 6, 6),
				   fr(p, "/app/main.py", "<listcomp>", 6, 6), f, mod };
	/* A comprehension at module level: no function at all. */
	struct frame_ref top[] = { fr(p, "/app/main.py", "<listcomp>", 40, 40),
				   fr(p, "/app/main.py", "<module>", 1, 40) };
	/* A lambda called from another file's code: the caller is not its
	 * function (3.9 naming). */
	struct frame_ref cross[] = { fr(p, "/app/main.py", "<lambda>", 50, 50),
				     fr(p, "/app/other.py", "sorter", 1, 2) };
	struct sample_in s = sample(s311, 3, 10 * MS);
	const struct file_stats *fs;
	const struct func_stats *m;
	int i;

	profile__add(p, &s);
	s = sample(l311, 3, 10 * MS);
	profile__add(p, &s);
	s = sample(s39, 3, 10 * MS);
	profile__add(p, &s);
	s = sample(g39, 4, 10 * MS);
	profile__add(p, &s);
	s = sample(top, 2, 10 * MS);
	profile__add(p, &s);
	s = sample(cross, 2, 10 * MS);
	profile__add(p, &s);

	fs = file_named(p, "/app/main.py");
	CHECK(fs != NULL);
	if (!fs)
		goto out;
	for (i = 0; i < fs->nfuncs; i++)
		CHECK(strchr(fs->funcs[i]->qualname, '<') == NULL);
	CHECK_EQ_INT(fs->nfuncs, 1);
	m = func_named(p, "/app/main.py", "f");
	CHECK(m != NULL);
	if (m) {
		CHECK_EQ_INT(m->firstlineno, 3);
		CHECK(m->st.python_ns == 40 * MS);
	}
	/* The lines keep their own time either way. */
	CHECK(line_of(p, "/app/main.py", 40) != NULL);
	CHECK(line_of(p, "/app/main.py", 50) != NULL);
out:
	profile__free(p);
}

/*
 * Nested functions are functions: a closure or a decorator's wrapper is
 * reported under its own qualified name, as Scalene does, and must not
 * vanish when the function that defined it is not on the stack.
 */
static void test_nested_functions_are_functions(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref mod = fr(p, "/app/main.py", "<module>", 1, 40);
	struct frame_ref outer = fr(p, "/app/main.py", "outer", 10, 15);
	struct frame_ref inner[] = { fr(p, "/app/main.py", "outer.<locals>.inner", 11, 12), outer,
				     mod };
	/* deco() returned long ago; wrapper runs from module level. */
	struct frame_ref wrapper[] = { fr(p, "/app/main.py", "deco.<locals>.wrapper", 3, 4), mod };
	struct sample_in s = sample(inner, 3, 10 * MS);
	const struct func_stats *m;

	profile__add(p, &s);
	s = sample(wrapper, 2, 20 * MS);
	profile__add(p, &s);
	m = func_named(p, "/app/main.py", "outer.<locals>.inner");
	CHECK(m != NULL);
	if (m) {
		CHECK_EQ_INT(m->firstlineno, 11);
		CHECK(m->st.python_ns == 10 * MS);
	}
	m = func_named(p, "/app/main.py", "deco.<locals>.wrapper");
	CHECK(m != NULL);
	if (m) {
		CHECK_EQ_INT(m->firstlineno, 3);
		CHECK(m->st.python_ns == 20 * MS);
	}
	/* outer did not run a line of its own. */
	CHECK(func_named(p, "/app/main.py", "outer") == NULL);
	profile__free(p);
}

/* ------------------------------------------------- stacks and threads */

/* Past the stack table's 20 000 distinct stacks, samples go to one overflow
 * stack: counted as dropped, their weight still among the stacks. */
static void test_stack_table_full(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "f", 3, 5),
				 fr(p, "/app/main.py", "<module>", 1, 9) };
	struct sample_in s = sample(a, 2, 1 * MS);
	const struct stack_stats *last;
	uint64_t total = 0;
	int i, n;

	for (i = 0; i < 20050; i++) {
		a[0].line = 10 + i; /* a stack of its own each */
		profile__add(p, &s);
	}
	n = profile__nstacks(p);
	CHECK_EQ_INT(n, 20001);
	CHECK_EQ_INT(profile__stacks_dropped(p), 50);
	last = profile__stack(p, n - 1);
	CHECK(last && last->overflow && last->nframes == 0);
	CHECK_EQ_INT(last ? last->count : 0, 50);
	for (i = 0; i < n; i++)
		total += profile__stack(p, i)->count;
	CHECK_EQ_INT(total, 20050);
	CHECK(profile__stack(p, n) == NULL);
	profile__free(p);
}

static void test_stacks(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "f", 3, 5),
				 fr(p, "/app/main.py", "<module>", 1, 9) };
	struct frame_ref b[] = { fr(p, "/app/main.py", "f", 3, 6),
				 fr(p, "/app/main.py", "<module>", 1, 9) };
	struct sample_in s = sample(a, 2, 10 * MS);
	const struct stack_stats *st;
	int i;

	profile__add(p, &s);
	profile__add(p, &s);
	s.where = WHERE_NATIVE;
	s.native_sym = profile__intern(p, "memcpy");
	profile__add(p, &s); /* same frames, native leaf: another stack */
	s = sample(b, 2, 10 * MS);
	s.offcpu_ns = 5 * MS;
	profile__add(p, &s);
	CHECK_EQ_INT(profile__nstacks(p), 3);
	CHECK_EQ_INT(profile__stacks_dropped(p), 0);
	for (i = 0; i < profile__nstacks(p); i++) {
		st = profile__stack(p, i);
		/* Outermost first. */
		CHECK_EQ_STR(st->frames[0].qualname, "<module>");
		CHECK_EQ_STR(st->frames[1].qualname, "f");
		if (st->frames[1].line == 5 && !st->native_sym) {
			CHECK_EQ_INT(st->count, 2);
			CHECK(st->python_ns == 20 * MS);
		} else if (st->native_sym) {
			CHECK_EQ_INT(st->count, 1);
			CHECK(st->native_ns == 10 * MS);
			CHECK_EQ_STR(st->native_sym, "memcpy");
		} else {
			CHECK_EQ_INT(st->frames[1].line, 6);
			CHECK(st->python_ns == 10 * MS);
			CHECK(st->system_ns == 5 * MS);
		}
	}
	CHECK(profile__stack(p, -1) == NULL);
	CHECK(profile__stack(p, 3) == NULL);
	CHECK(profile__file(p, -1) == NULL);
	CHECK(profile__file(p, 1) == NULL);
	CHECK(profile__thread(p, 5) == NULL);
	profile__free(p);
}

static void test_threads(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "f", 3, 5) };
	struct sample_in s = sample(a, 1, 10 * MS);
	int i, main_seen = 0;

	s.thread_name = profile__intern(p, "python3");
	profile__add(p, &s);
	s.tid = 101;
	s.main_thread = false;
	s.thread_name = profile__intern(p, "worker-1");
	profile__add(p, &s);
	s.thread_name = profile__intern(p, "renamed");
	profile__add(p, &s);
	/* Same tid in another process: another thread. */
	s.tgid = 200;
	profile__add(p, &s);
	CHECK_EQ_INT(profile__nthreads(p), 3);
	for (i = 0; i < profile__nthreads(p); i++) {
		const struct thread_stats *t = profile__thread(p, i);

		main_seen += t->main_thread;
		if (t->tgid == 100 && t->tid == 101) {
			CHECK_EQ_STR(t->name, "renamed");
			CHECK_EQ_INT(t->samples, 2);
			CHECK(t->cpu_ns == 20 * MS);
		}
	}
	CHECK_EQ_INT(main_seen, 1);
	profile__free(p);
}

/* A service starting threads all day: past the limit threads share one
 * entry, and no time is lost on the way. */
static void test_thread_limit(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "f", 3, 5) };
	struct sample_in s = sample(a, 1, 1 * MS);
	const struct thread_stats *last;
	double sum = 0;
	int i, n = 5000;

	s.main_thread = false;
	s.thread_name = profile__intern(p, "worker");
	for (i = 0; i < n; i++) {
		s.tid = 1000 + i;
		profile__add(p, &s);
		profile__add(p, &s);
	}
	CHECK(profile__nthreads(p) < 4096);
	last = profile__thread(p, profile__nthreads(p) - 1);
	CHECK(last != NULL);
	if (last) {
		CHECK(last->folded);
		CHECK_EQ_STR(last->name, "(further threads)");
		CHECK(!last->main_thread);
	}
	/* Every thread past the ones with entries of their own. */
	CHECK_EQ_INT(profile__threads_folded(p), n - profile__nthreads(p) + 1);
	for (i = 0; i < profile__nthreads(p); i++)
		sum += profile__thread(p, i)->cpu_ns;
	CHECK(sum == 2.0 * n * MS);
	profile__free(p);
}

/* Many distinct files, lines and stacks: tables grow, nothing is lost. */
static void test_many(void)
{
	struct profile *p = new_profile("/app");
	char path[64];
	int i, bad = 0;
	double sum = 0;

	for (i = 0; i < 5000; i++) {
		struct frame_ref f[1];
		struct sample_in s;

		snprintf(path, sizeof(path), "/app/m%d.py", i % 500);
		f[0] = fr(p, path, "g", 1, 1 + i / 500 * 97);
		s = sample(f, 1, 1 * MS);
		profile__add(p, &s);
	}
	CHECK_EQ_INT(profile__nfiles(p), 500);
	CHECK_EQ_INT(profile__nstacks(p), 5000);
	for (i = 0; i < profile__nfiles(p); i++) {
		const struct file_stats *f = profile__file(p, i);
		int l, lines = 0;

		snprintf(path, sizeof(path), "/app/m%d.py", i);
		bad += strcmp(f->path, path) != 0; /* first-seen order */
		for (l = 0; l < f->nlines; l++) {
			if (f->lines[l]) {
				lines++;
				sum += f->lines[l]->python_ns;
			}
		}
		bad += lines != 10;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(sum == 5000 * MS);
	profile__free(p);
}

/* ------------------------------------------------------------ memory */

#define MIB (1024.0 * 1024.0)

static void mem_event(struct profile *p, const struct frame_ref *frames, enum mem_kind kind,
		      double bytes, double size, uint64_t addr, bool no_frees)
{
	static uint64_t ts;
	struct mem_in m = {
		.tgid = 100,
		.tid = 100,
		.ts_ns = ++ts * MS,
		.kind = kind,
		.bytes = bytes,
		.size = kind == MEM_MALLOC ? size : 0,
		.addr = addr,
		.python = true,
		.no_frees = no_frees,
		.unattributed = -1,
		.frames = frames,
		.nframes = 2,
	};

	profile__add_mem(p, &m);
}

static const struct mem_stats *mem_at(const struct profile *p, int line)
{
	const struct line_stats *st = line_of(p, "/prog/a.py", line);

	return st ? st->mem : NULL;
}

/* --continuous: a restart zeroes what was counted where it lies (the
 * same entries, so pointers into the model stay good) and the next counts
 * start from nothing; a block allocated before it and freed after is
 * still followed.  The stack table starts again empty, so a long run holds
 * one interval's stacks. */
static void test_restart(void)
{
	struct profile *p = new_profile("/prog");
	struct frame_ref a[] = { fr(p, "/prog/a.py", "f", 3, 5),
				 fr(p, "/prog/a.py", "<module>", 1, 9) };
	struct frame_ref b[] = { fr(p, "/prog/a.py", "g", 12, 14),
				 fr(p, "/prog/a.py", "<module>", 1, 10) };
	struct sample_in s = sample(a, 2, 10 * MS), sb = sample(b, 2, 1 * MS);
	const struct line_stats *before, *after;
	const struct stack_stats *st;
	const struct thread_stats *t;
	double py, nat, sys;

	profile__add(p, &s);
	profile__add(p, &s);
	s.offcpu_ns = 4 * MS;
	profile__add(p, &s);
	profile__add(p, &sb);
	mem_event(p, a, MEM_MALLOC, 2 * MIB, 2 * MIB, 0xa000, false);
	before = line_of(p, "/prog/a.py", 5);
	CHECK(before && before->samples == 3 && before->mem);
	CHECK(profile__total_ns(p) == 35 * MS);
	CHECK_EQ_INT(profile__nstacks(p), 2);

	profile__restart(p);
	after = line_of(p, "/prog/a.py", 5);
	CHECK(after == before);
	CHECK(after->samples == 0 && after->python_ns == 0 && after->system_ns == 0);
	CHECK(after->mem->malloc_bytes == 0 && after->mem->net_bytes == 0);
	CHECK(profile__total_ns(p) == 0 && profile__samples(p) == 0);
	CHECK(profile__memory(p)->malloc_bytes == 0);
	CHECK_EQ_INT(profile__nstacks(p), 0);
	CHECK(!profile__stack(p, 0));
	t = profile__thread(p, 0);
	CHECK(t && t->samples == 0 && t->cpu_ns == 0 && t->blocked_ns == 0);
	CHECK_EQ_INT(profile__timeline(p)->n, 0);

	/* The next interval counts only its own. */
	s = sample(a, 2, 7 * MS);
	profile__add(p, &s);
	profile__split_ns(p, &py, &nat, &sys);
	CHECK(profile__total_ns(p) == 7 * MS && py == 7 * MS && sys == 0);
	CHECK(after->samples == 1 && after->python_ns == 7 * MS);
	CHECK_EQ_INT(profile__nstacks(p), 1);
	st = profile__stack(p, 0);
	CHECK(st && st->count == 1 && st->nframes == 2 && st->frames[1].line == 5);
	/* The same stack again is found, not added. */
	profile__add(p, &s);
	CHECK_EQ_INT(profile__nstacks(p), 1);
	CHECK(profile__stack(p, 0)->count == 2);
	profile__add(p, &sb);
	CHECK_EQ_INT(profile__nstacks(p), 2);
	CHECK(profile__thread(p, 0)->cpu_ns == 15 * MS);
	/* The block from before the restart is known at its free. */
	mem_event(p, a, MEM_FREE, 2 * MIB, 0, 0xa000, false);
	CHECK(profile__memory(p)->frees_unknown == 0);
	profile__free(p);
}

/* Scalene's rule per allocating line: net samples when a line's blocks
 * outgrow their frees by a window; churn counts every sampled block. */
static void test_net_growth(void)
{
	struct profile *p = new_profile("/prog");
	struct frame_ref keep[2], churn[2], arith[2], big[2], done[2], probe[2];
	const struct mem_stats *m;
	const struct func_stats *fn;
	int i;

	for (i = 0; i < 2; i++) {
		keep[i] = fr(p, "/prog/a.py", i ? "<module>" : "f", i ? 0 : 5, i ? 90 : 10);
		churn[i] = fr(p, "/prog/a.py", i ? "<module>" : "f", i ? 0 : 5, i ? 90 : 20);
		arith[i] = fr(p, "/prog/a.py", i ? "<module>" : "f", i ? 0 : 5, i ? 90 : 30);
		big[i] = fr(p, "/prog/a.py", i ? "<module>" : "f", i ? 0 : 5, i ? 90 : 40);
		done[i] = fr(p, "/prog/a.py", i ? "<module>" : "f", i ? 0 : 5, i ? 90 : 50);
		probe[i] = fr(p, "/prog/a.py", i ? "<module>" : "f", i ? 0 : 5, i ? 90 : 60);
	}
	for (i = 0; i < 100; i++) {
		/* 256 KiB blocks sampled with a weight of 1.5 MiB, kept. */
		mem_event(p, keep, MEM_MALLOC, 1.5 * MIB, 256 << 10, 0x100000 + i, false);
		/* 4 MiB blocks, each freed once the next is made. */
		mem_event(p, churn, MEM_MALLOC, 4 * MIB, 4 * MIB, 0x200000 + i, false);
		if (i)
			mem_event(p, churn, MEM_FREE, 4 * MIB, 0, 0x200000 + i - 1, false);
		/* Small ints, each sampled with a weight of 1 MiB, freed at once. */
		mem_event(p, arith, MEM_MALLOC, 1 * MIB, 36, 0x300000 + i, false);
		mem_event(p, arith, MEM_FREE, 1 * MIB, 0, 0x300000 + i, false);
		mem_event(p, big, MEM_MALLOC, 16 * MIB, 16 * MIB, 0x400000 + i, false);
		if (i)
			mem_event(p, big, MEM_FREE, 16 * MIB, 0, 0x400000 + i - 1, false);
	}
	/* Small blocks, kept: over the 10 MiB window, a sample of 10.5 MiB every
	 * 7, 3 MiB held back at the end. */
	m = mem_at(p, 10);
	CHECK(m && fabs(m->malloc_bytes - 150 * MIB) < 1);
	CHECK(m && fabs(m->net_bytes - 147 * MIB) < 1);
	CHECK(m && m->net_samples == 14);
	CHECK(m && fabs(m->net_python_bytes - m->net_bytes) < 1);
	CHECK(m && mem_stats__mallocs(m) == 14 && fabs(m->peak - 10.5 * MIB) < 1);
	/* A block of a window or more is a net sample by itself (Scalene's
	 * 1 MiB window), even when freed soon after. */
	m = mem_at(p, 20);
	CHECK(m && fabs(m->malloc_bytes - 400 * MIB) < 1);
	CHECK(m && fabs(m->net_bytes - 400 * MIB) < 1 && m->net_samples == 100);
	m = mem_at(p, 40);
	CHECK(m && fabs(m->net_bytes - 1600 * MIB) < 1 && m->net_samples == 100);
	/* Small blocks freed at once: churn only, no timeline. */
	m = mem_at(p, 30);
	CHECK(m && fabs(m->malloc_bytes - 100 * MIB) < 1 && m->net_bytes == 0);
	CHECK(m && m->series.n == 0 && !m->series.in_bucket);
	/* The function holds the net samples of its lines. */
	fn = func_named(p, "/prog/a.py", "f");
	CHECK(fn && fn->st.mem && fabs(fn->st.mem->net_bytes - 2147 * MIB) < 1);
	CHECK(fn && fn->st.mem && fabs(fn->st.mem->malloc_bytes - 2250 * MIB) < 1);
	CHECK(fabs(profile__memory(p)->net_bytes - 2147 * MIB) < 1);
	/* Freeing what was kept, on another line: net free samples go to the
	 * line that allocated (3 MiB held back, then 10.5 MiB of frees at a
	 * time once they outrun it by a window). */
	for (i = 0; i < 100; i++)
		mem_event(p, done, MEM_FREE, 1.5 * MIB, 0, 0x100000 + i, false);
	m = mem_at(p, 10);
	CHECK(m && fabs(m->net_freed_bytes - 147 * MIB) < 1);
	CHECK(m && fabs(m->net_bytes - 147 * MIB) < 1);
	m = mem_at(p, 50);
	CHECK(!m || m->net_bytes == 0);
	/* Frees not seen (uprobes): every sample is net. */
	for (i = 0; i < 3; i++)
		mem_event(p, probe, MEM_MALLOC, 2 * MIB, 64, 0, true);
	m = mem_at(p, 60);
	CHECK(m && fabs(m->net_bytes - 6 * MIB) < 1 && m->net_samples == 3);
	profile__free(p);
}

/* ------------------------------------------------------------ @profile */

static void test_decorated_attribution(void)
{
	struct profile *p = new_profile("/app");
	/* helper (not decorated) called by hot (decorated) called by main. */
	struct frame_ref in_helper[] = { fr(p, "/app/main.py", "helper", 20, 22),
					 fr(p, "/app/main.py", "hot", 10, 12),
					 fr(p, "/app/main.py", "<module>", 1, 30) };
	struct frame_ref in_other[] = { fr(p, "/app/main.py", "other", 40, 41),
					fr(p, "/app/main.py", "<module>", 1, 31) };
	struct sample_in s = sample(in_helper, 3, 10 * MS);

	/* Nothing decorated: the innermost profiled frame, as always. */
	profile__add(p, &s);
	CHECK(line_of(p, "/app/main.py", 22) && line_of(p, "/app/main.py", 22)->samples == 1);
	CHECK(profile__line_reported(p, "/app/main.py", 22));
	CHECK_EQ_INT(profile__decorate(p, "/app/main.py", 10, 14, "hot"), 0);
	CHECK_EQ_INT(profile__decorate(p, "/app/main.py", 10, 14, "hot"), 0);
	CHECK_EQ_INT(profile__ndecorated(p), 1);
	CHECK_EQ_STR(profile__decorated(p, 0)->qualname, "hot");
	CHECK(profile__decorated(p, 1) == NULL);
	/* Decorated: the helper's time lands on hot's calling line. */
	profile__add(p, &s);
	CHECK(line_of(p, "/app/main.py", 12) && line_of(p, "/app/main.py", 12)->samples == 1);
	CHECK_EQ_INT(line_of(p, "/app/main.py", 22)->samples, 1);
	/* A stack without a decorated frame is not attributed: its time is
	 * named as outside the decorated functions, not in files not
	 * profiled (its file is the program's own). */
	s = sample(in_other, 2, 10 * MS);
	profile__add(p, &s);
	CHECK(!line_of(p, "/app/main.py", 41));
	CHECK(profile__unattributed_ns(p, UNATTR_NOT_DECORATED) == 10 * MS);
	CHECK(profile__unattributed_ns(p, UNATTR_NOT_PROFILED) == 0);
	/* Lines reported: those of hot, decorator to last line. */
	CHECK(!profile__line_reported(p, "/app/main.py", 9));
	CHECK(profile__line_reported(p, "/app/main.py", 10));
	CHECK(profile__line_reported(p, "/app/main.py", 14));
	CHECK(!profile__line_reported(p, "/app/main.py", 15));
	CHECK(!profile__line_reported(p, "/app/other.py", 12));
	CHECK(profile__is_decorated(p, profile__intern(p, "/app/main.py"), 10));
	CHECK(!profile__is_decorated(p, profile__intern(p, "/app/main.py"), 20));
	profile__free(p);
}

static void test_decorated_outside_program_dir(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/usr/lib/python3/x.py", "lib", 5, 6),
				 fr(p, "/app/main.py", "<module>", 1, 3) };
	struct sample_in s = sample(a, 2, 10 * MS);
	int i;

	/* A decorated function is reported wherever it lives (Scalene). */
	CHECK_EQ_INT(profile__decorate(p, "/usr/lib/python3/x.py", 5, 8, "lib"), 0);
	profile__add(p, &s);
	CHECK(line_of(p, "/usr/lib/python3/x.py", 6) != NULL);
	for (i = 1; i < MAX_DECORATED; i++)
		CHECK_EQ_INT(profile__decorate(p, "/app/main.py", 100 + i, 100 + i, "f"), 0);
	CHECK_EQ_INT(profile__decorate(p, "/app/main.py", 1, 1, "g"), -ENOSPC);
	/* lastlineno before firstlineno: the first line only. */
	profile__free(p);
	p = new_profile("/app");
	CHECK_EQ_INT(profile__decorate(p, "/app/main.py", 7, 3, "h"), 0);
	CHECK_EQ_INT(profile__decorated(p, 0)->lastlineno, 7);
	profile__free(p);
}

/* ------------------------------------------------------------ timeline */

static void test_timeline_runs(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "f", 3, 5) };
	struct frame_ref b[] = { fr(p, "/app/main.py", "f", 3, 6) };
	const struct profile_timeline *tl = profile__timeline(p);
	struct sample_in s = sample(a, 1, 1 * MS);
	int i;

	for (i = 0; i < 3; i++) {
		s.ts_ns = 1000 * MS + i * MS;
		profile__add(p, &s);
	}
	s = sample(b, 1, 1 * MS);
	s.ts_ns = 1003 * MS;
	profile__add(p, &s);
	/* Another thread on the same stack: its own event. */
	s.tid = 101;
	s.main_thread = false;
	s.ts_ns = 1004 * MS;
	profile__add(p, &s);
	s = sample(a, 1, 1 * MS);
	s.ts_ns = 1005 * MS;
	profile__add(p, &s);
	CHECK_EQ_INT(tl->n, 4);
	CHECK_EQ_INT(tl->ev[0].count, 3);
	CHECK(tl->ev[0].ts_ns == 1000 * MS);
	CHECK_EQ_INT(tl->ev[1].count, 1);
	CHECK(tl->ev[1].stack != tl->ev[0].stack);
	CHECK_EQ_INT(tl->ev[2].tid, 101);
	CHECK_EQ_INT(tl->ev[3].stack, tl->ev[0].stack);
	CHECK(tl->slot_ns == 0);
	/* Samples without frames or time make no event. */
	s.nframes = 0;
	profile__add(p, &s);
	CHECK_EQ_INT(tl->n, 4);
	profile__free(p);
}

static void test_timeline_bounded(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref fa[] = { fr(p, "/app/main.py", "f", 3, 5) };
	struct frame_ref fb[] = { fr(p, "/app/main.py", "f", 3, 6) };
	const struct profile_timeline *tl = profile__timeline(p);
	uint64_t total = 0, n = 200000, i, sum = 0;
	int j;

	/* Two stacks alternating every millisecond for 200 s: every sample a
	 * new run without the cap. */
	for (i = 0; i < n; i++) {
		struct sample_in s = sample(i % 2 ? fb : fa, 1, 1 * MS);

		s.ts_ns = 5000 * MS + i * MS;
		profile__add(p, &s);
		total++;
		CHECK(tl->n <= TIMELINE_MAX_EVENTS);
	}
	CHECK(tl->n <= TIMELINE_MAX_EVENTS);
	CHECK(tl->n > TIMELINE_MAX_EVENTS / 4);
	CHECK(tl->slot_ns >= 2 * TIMELINE_FIRST_SLOT_NS);
	CHECK_EQ_INT(tl->dropped, 0);
	for (j = 0; j < tl->n; j++) {
		sum += tl->ev[j].count;
		/* One event per slot: an even resolution over the whole run. */
		if (j)
			CHECK((tl->ev[j].ts_ns - tl->t0) / tl->slot_ns >
			      (tl->ev[j - 1].ts_ns - tl->t0) / tl->slot_ns);
	}
	CHECK(sum == total);
	CHECK(tl->ev[0].ts_ns == 5000 * MS);
	CHECK(tl->ev[tl->n - 1].ts_ns >= 5000 * MS + (n - 1) * MS - 2 * tl->slot_ns);
	profile__free(p);
}

static void test_timeline_majority_kept(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref fa[] = { fr(p, "/app/main.py", "f", 3, 5) };
	struct frame_ref fb[] = { fr(p, "/app/main.py", "f", 3, 6) };
	const struct profile_timeline *tl = profile__timeline(p);
	uint64_t t = 0, all = 0, b_samples = 0;
	int i, j;

	/* 1 sample on a, then 9 on b, then 10 ms of nothing, over and over.
	 * Thinned, the majority b is what the events show. */
	for (i = 0; i < 30000; i++) {
		for (j = 0; j < 10; j++) {
			struct sample_in s = sample(j ? fb : fa, 1, 1 * MS);

			s.ts_ns = 1 + t;
			t += j == 9 ? 10 * MS : 1 * MS;
			profile__add(p, &s);
		}
	}
	CHECK(tl->slot_ns > 0);
	for (i = 0; i < tl->n; i++) {
		all += tl->ev[i].count;
		if (profile__stack(p, tl->ev[i].stack)->frames[0].line == 6)
			b_samples += tl->ev[i].count;
	}
	/* 90 % of the samples are on b: so are at least 85 % of the samples of
	 * the events that show b (a one-sample event of a remains where a slot
	 * ends between a and its b's). */
	CHECK(b_samples * 100 >= 85 * all);
	profile__free(p);
}

static void test_timeline_many_threads(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref fa[] = { fr(p, "/app/main.py", "f", 3, 5) };
	const struct profile_timeline *tl = profile__timeline(p);
	int i;

	/* More threads than events, all at the same moment: bounded, and the
	 * samples that find no room are counted. */
	for (i = 0; i < TIMELINE_MAX_EVENTS + 10; i++) {
		struct sample_in s = sample(fa, 1, 1 * MS);

		s.tid = 1000 + i;
		s.ts_ns = 7 * MS;
		profile__add(p, &s);
	}
	CHECK(tl->n <= TIMELINE_MAX_EVENTS);
	CHECK(tl->dropped > 0);
	profile__free(p);
}

static void test_stack_native_address(void)
{
	struct profile *p = new_profile("/app");
	struct frame_ref a[] = { fr(p, "/app/main.py", "f", 3, 5) };
	struct sample_in s = sample(a, 1, 10 * MS);
	const struct stack_stats *st;

	s.where = WHERE_NATIVE;
	s.native_sym = profile__intern(p, "memcpy");
	s.native_module = profile__intern(p, "/lib/libc.so.6");
	s.native_ip = 0x7f0000001010;
	s.native_offset = 0x10;
	profile__add(p, &s);
	s.native_ip = 0x7f0000001020; /* same symbol: the first address stays */
	s.native_offset = 0x20;
	profile__add(p, &s);
	CHECK_EQ_INT(profile__nstacks(p), 1);
	st = profile__stack(p, 0);
	CHECK(st->native_ip == 0x7f0000001010);
	CHECK_EQ_INT(st->native_offset, 0x10);
	CHECK_EQ_INT(st->count, 2);
	profile__free(p);
}

static void test_free_null(void)
{
	profile__free(NULL);
	CHECK(1);
}

/* ------------------------------------------------------------ GPU readings */

static void gpu_sample(struct profile *p, const struct frame_ref *f, uint64_t end, uint64_t ns)
{
	struct sample_in s = sample(f, 1, ns);

	s.ts_ns = end;
	profile__add(p, &s);
}

static bool near_gpu(double a, double b)
{
	return fabs(a - b) < 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

/* Sampled readings (NVML): each is the GPU busy for a share of the period
 * it covers and the process's memory from its start; a sample takes the
 * busy time under its window and the memory at its end. */
static void test_gpu_sampled_readings(void)
{
	struct profile *p = new_profile("/app");
	const uint64_t t0 = 10000 * MS;
	const double mib512 = 512.0 * 1024 * 1024;
	struct frame_ref gpu_line[] = { fr(p, "/app/main.py", "<module>", 1, 10) };
	struct frame_ref cpu_line[] = { fr(p, "/app/main.py", "<module>", 1, 20) };
	struct profile_gpu_totals t;
	const struct line_stats *g, *c;

	/* A process that is not started gets nothing. */
	profile__gpu_use(p, 100, t0, t0 + 100 * MS, 1);
	CHECK(!profile__gpu_on(p));
	profile__gpu_start(p, 100, 1);
	CHECK(profile__gpu_on(p));
	profile__gpu_use(p, 100, t0, t0 + 100 * MS, 1);
	profile__gpu_memory(p, 100, t0, mib512);
	profile__gpu_use(p, 100, t0 + 100 * MS, t0 + 200 * MS, 0.5);
	profile__gpu_memory(p, 100, t0 + 100 * MS, mib512);
	profile__gpu_use(p, 100, t0 + 200 * MS, t0 + 300 * MS, 0);
	profile__gpu_memory(p, 100, t0 + 200 * MS, 0);
	/* Fully busy; half at busy 1, half at 0.5; idle. */
	gpu_sample(p, gpu_line, t0 + 50 * MS, 10 * MS);
	gpu_sample(p, gpu_line, t0 + 110 * MS, 20 * MS);
	gpu_sample(p, cpu_line, t0 + 260 * MS, 10 * MS);
	/* Before it all: not settled, nothing given yet. */
	profile__gpu_settle(p, t0);
	g = line_of(p, "/app/main.py", 10);
	CHECK(g && (!g->gpu || g->gpu->weight == 0));
	profile__gpu_settle(p, UINT64_MAX);
	g = line_of(p, "/app/main.py", 10);
	c = line_of(p, "/app/main.py", 20);
	CHECK(g && g->gpu && c && c->gpu);
	if (g && g->gpu) {
		/* (10 ms * 1 + 20 ms * 0.75) / 30 ms. */
		CHECK(near_gpu(g->gpu->util_sum / g->gpu->weight, 25.0 / 30));
		CHECK(near_gpu(g->gpu->mem_peak, mib512));
		CHECK(near_gpu(g->gpu->mem_sum / g->gpu->weight, mib512));
		CHECK(g->gpu->launches == 0 && g->gpu->kernels == 0);
	}
	if (c && c->gpu) {
		CHECK(near_gpu(c->gpu->util_sum, 0));
		CHECK(near_gpu(c->gpu->mem_peak, 0));
		CHECK(near_gpu(c->gpu->weight, 10 * MS));
	}
	profile__gpu_totals(p, &t);
	CHECK_EQ_INT(t.processes, 1);
	CHECK_EQ_INT(t.samples, 3);
	CHECK(near_gpu(t.busy_ns, 150 * MS));
	CHECK(near_gpu(t.peak_memory, mib512));
	profile__free(p);
}

static void kernel_rec(struct profile *p, uint32_t corr, uint64_t start, uint64_t ns)
{
	struct scalene_bpf_gpu_rec r = { .start_ns = start,
					 .end_ns = start + ns,
					 .correlation_id = corr,
					 .kind = GPU_REC_KERNEL };

	profile__gpu_records(p, 100, &r, 1);
}

/* Calls from threads with no Python frame (autograd's, NCCL's) take the
 * line of the main thread's next record, as those threads' CPU time does:
 * the line that waits for the work (loss.backward()).  An alias of one
 * waits with it; one whose main thread never records again has no line. */
static void test_gpu_calls_of_threads_without_python(void)
{
	struct profile *p = new_profile("/app");
	const uint64_t t0 = 10000 * MS;
	struct frame_ref fwd[] = { fr(p, "/app/train.py", "step", 1, 10) };
	struct frame_ref bwd[] = { fr(p, "/app/train.py", "step", 1, 11) };
	struct profile_gpu_totals t;
	const struct line_stats *l10, *l11;
	int site;

	profile__gpu_start(p, 100, 1);
	/* The forward pass, launched by the main thread on its own line. */
	site = profile__gpu_site(p, fwd, 1);
	profile__gpu_call(p, 100, 1, site, t0 - 3 * MS);
	/* The backward kernels, launched by threads with no Python frame
	 * while the main thread waits in line 11. */
	profile__gpu_call(p, 100, 2, GPU_SITE_MAIN_THREAD, t0 + 1 * MS);
	profile__gpu_call(p, 100, 3, GPU_SITE_MAIN_THREAD, t0 + 2 * MS);
	profile__gpu_alias(p, 100, 30, 3);
	/* The main thread's record of before the calls, read after them. */
	gpu_sample(p, fwd, t0, 5 * MS);
	/* A record arriving before the main thread's: held for its line
	 * (until then, at the end, it would count as unmatched). */
	kernel_rec(p, 2, t0, 1 * MS);
	profile__gpu_totals(p, &t);
	CHECK_EQ_INT(t.unmatched, 1);
	CHECK_EQ_INT(t.launches_main_thread, 0);
	CHECK_EQ_INT(t.launches_main_thread_lost, 2);
	CHECK_EQ_INT(t.records, 1);
	gpu_sample(p, bwd, t0 + 10 * MS, 5 * MS);
	kernel_rec(p, 3, t0 + 2 * MS, 4 * MS);
	kernel_rec(p, 30, t0 + 6 * MS, 2 * MS);
	kernel_rec(p, 1, t0 - 2 * MS, 1 * MS);
	l10 = line_of(p, "/app/train.py", 10);
	l11 = line_of(p, "/app/train.py", 11);
	CHECK(l10 && l10->gpu && l11 && l11->gpu);
	if (l10 && l10->gpu) {
		CHECK(near_gpu(l10->gpu->launches, 1));
		CHECK(near_gpu(l10->gpu->kernel_ns, 1 * MS));
	}
	if (l11 && l11->gpu) {
		CHECK(near_gpu(l11->gpu->launches, 2));
		CHECK(near_gpu(l11->gpu->kernels, 3));
		CHECK(near_gpu(l11->gpu->kernel_ns, 7 * MS));
	}
	profile__gpu_totals(p, &t);
	CHECK_EQ_INT(t.unmatched, 0);
	CHECK_EQ_INT(t.launches, 3);
	CHECK_EQ_INT(t.launches_main_thread, 2);
	CHECK_EQ_INT(t.launches_main_thread_lost, 0);
	/* Its main thread never records again: no line, and said so. */
	profile__gpu_call(p, 100, 4, GPU_SITE_MAIN_THREAD, t0 + 20 * MS);
	kernel_rec(p, 4, t0 + 21 * MS, 3 * MS);
	profile__gpu_totals(p, &t);
	CHECK_EQ_INT(t.launches_main_thread_lost, 1);
	CHECK_EQ_INT(t.unmatched, 1);
	CHECK(near_gpu(t.unmatched_kernel_ns, 3 * MS));
	profile__free(p);
}

/* A kernel that runs for seconds is delivered when it ends: the samples
 * taken while it ran wait for it (not a fixed delay), so they read the GPU
 * as busy; a call that brings no record holds them GPU_OPEN_WAIT_NS (30 s)
 * at most. */
/* A launch site's stack outlives a restart (--continuous): a call made
 * before the cut whose kernel is delivered after it puts its device time
 * on that stack, which the next interval's profile has; the stacks no site
 * points at are gone. */
static void test_gpu_site_stack_kept_at_restart(void)
{
	struct profile *p = new_profile("/app");
	const uint64_t t0 = 100000 * MS;
	struct frame_ref launch[] = { fr(p, "/app/main.py", "step", 4, 6),
				      fr(p, "/app/main.py", "<module>", 1, 20) };
	struct frame_ref other[] = { fr(p, "/app/main.py", "<module>", 1, 21) };
	struct sample_in s = sample(other, 1, 5 * MS);
	const struct stack_stats *st;

	profile__gpu_start(p, 100, 1);
	profile__add(p, &s);
	profile__gpu_call(p, 100, 1, profile__gpu_site(p, launch, 2), t0);
	CHECK_EQ_INT(profile__nstacks(p), 2);
	profile__restart(p);
	CHECK_EQ_INT(profile__nstacks(p), 1);
	st = profile__stack(p, 0);
	CHECK(st && st->nframes == 2 && st->frames[1].line == 6 && st->gpu_ns == 0);
	kernel_rec(p, 1, t0, 2 * MS);
	st = profile__stack(p, 0);
	CHECK(st && near_gpu(st->gpu_ns, 2 * MS));
	/* The site's stack is the one a sample on it finds. */
	s = sample(launch, 2, 3 * MS);
	profile__add(p, &s);
	CHECK_EQ_INT(profile__nstacks(p), 1);
	CHECK(profile__stack(p, 0)->count == 1);
	profile__free(p);
}

static void test_gpu_settle_waits_for_records(void)
{
	struct profile *p = new_profile("/app");
	const uint64_t t0 = 100000 * MS, s = 1000 * MS;
	struct frame_ref launch[] = { fr(p, "/app/main.py", "<module>", 1, 10) };
	struct frame_ref wait[] = { fr(p, "/app/main.py", "<module>", 1, 11) };
	struct frame_ref after[] = { fr(p, "/app/main.py", "<module>", 1, 12) };
	struct profile_gpu_totals t;
	const struct line_stats *l;

	profile__gpu_start(p, 100, 1);
	profile__gpu_call(p, 100, 1, profile__gpu_site(p, launch, 1), t0);
	gpu_sample(p, wait, t0 + 100 * MS, 5 * MS);
	gpu_sample(p, wait, t0 + 500 * MS, 5 * MS);
	gpu_sample(p, wait, t0 + 2 * s, 5 * MS);
	/* 2.5 s in, the usual delay (1 s) would settle the first two: the
	 * call's records are not in, so nothing settles. */
	profile__gpu_settle(p, t0 + 1500 * MS);
	l = line_of(p, "/app/main.py", 11);
	CHECK(l && (!l->gpu || l->gpu->weight == 0));
	/* The 3 s kernel ends and is delivered. */
	kernel_rec(p, 1, t0, 3 * s);
	profile__gpu_settle(p, t0 + 2200 * MS);
	l = line_of(p, "/app/main.py", 11);
	CHECK(l && l->gpu);
	if (l && l->gpu) {
		CHECK(near_gpu(l->gpu->weight, 15 * MS));
		CHECK(near_gpu(l->gpu->util_sum / l->gpu->weight, 1));
	}
	/* A record that carries the id of a call the call made (a runtime
	 * call's driver call) ends the wait as well. */
	profile__gpu_call(p, 100, 3, profile__gpu_site(p, launch, 1), t0 + 3 * s);
	profile__gpu_alias(p, 100, 30, 3);
	gpu_sample(p, wait, t0 + 3500 * MS, 5 * MS);
	profile__gpu_settle(p, t0 + 3600 * MS);
	l = line_of(p, "/app/main.py", 11);
	CHECK(l && l->gpu && near_gpu(l->gpu->weight, 15 * MS));
	kernel_rec(p, 30, t0 + 3 * s, 1 * s);
	profile__gpu_settle(p, t0 + 3600 * MS);
	l = line_of(p, "/app/main.py", 11);
	CHECK(l && l->gpu && near_gpu(l->gpu->weight, 20 * MS));
	/* A call that brings no record: its samples wait 30 s, no more. */
	profile__gpu_call(p, 100, 2, profile__gpu_site(p, launch, 1), t0 + 4 * s);
	gpu_sample(p, after, t0 + 5 * s, 5 * MS);
	profile__gpu_settle(p, t0 + 20 * s);
	l = line_of(p, "/app/main.py", 12);
	CHECK(l && (!l->gpu || l->gpu->weight == 0));
	profile__gpu_settle(p, t0 + 35 * s);
	l = line_of(p, "/app/main.py", 12);
	CHECK(l && l->gpu && near_gpu(l->gpu->weight, 5 * MS));
	profile__gpu_totals(p, &t);
	CHECK_EQ_INT(t.calls_without_records, 1);
	CHECK(t.settle_wait_max_ns >= 15 * s);
	profile__free(p);
}

/* Pinned host memory taken through CUDA (pin_memory, PyTorch's host
 * caching allocator: CUpti_ActivityMemoryKind 2) is counted apart: not in
 * the device's memory, its peak or a line's device allocations. */
static void test_gpu_host_memory_apart(void)
{
	struct profile *p = new_profile("/app");
	const uint64_t t0 = 10000 * MS;
	const double mib = 1024.0 * 1024;
	struct frame_ref line[] = { fr(p, "/app/main.py", "<module>", 1, 10) };
	struct scalene_bpf_gpu_rec r[] = {
		{ .start_ns = t0,
		  .end_ns = t0,
		  .bytes = 256 * (uint64_t)mib,
		  .correlation_id = 1,
		  .kind = GPU_REC_ALLOC,
		  .memory_kind = 3 },
		{ .start_ns = t0 + MS,
		  .end_ns = t0 + MS,
		  .bytes = 64 * (uint64_t)mib,
		  .correlation_id = 1,
		  .kind = GPU_REC_ALLOC,
		  .memory_kind = 2 },
		{ .start_ns = t0 + 2 * MS,
		  .end_ns = t0 + 2 * MS,
		  .bytes = 64 * (uint64_t)mib,
		  .correlation_id = 1,
		  .kind = GPU_REC_FREE,
		  .memory_kind = 2 },
	};
	struct profile_gpu_totals t;
	const struct line_stats *l;

	profile__gpu_start(p, 100, 1);
	profile__gpu_call(p, 100, 1, profile__gpu_site(p, line, 1), t0);
	profile__gpu_records(p, 100, r, 3);
	gpu_sample(p, line, t0 + 5 * MS, 5 * MS);
	profile__gpu_settle(p, UINT64_MAX);
	profile__gpu_totals(p, &t);
	CHECK(near_gpu(t.alloc_bytes, 256 * mib));
	CHECK(near_gpu(t.free_bytes, 0));
	CHECK(near_gpu(t.host_alloc_bytes, 64 * mib));
	CHECK(near_gpu(t.host_free_bytes, 64 * mib));
	CHECK(near_gpu(t.peak_memory, 256 * mib));
	l = line_of(p, "/app/main.py", 10);
	CHECK(l && l->gpu);
	if (l && l->gpu) {
		CHECK(near_gpu(l->gpu->alloc_bytes, 256 * mib));
		CHECK(near_gpu(l->gpu->host_alloc_bytes, 64 * mib));
		CHECK(near_gpu(l->gpu->host_free_bytes, 64 * mib));
		CHECK(near_gpu(l->gpu->mem_peak, 256 * mib));
	}
	profile__free(p);
}

/* Kernels (busy 1) merge into their union; a sampled period that overlaps
 * one counts only past it, so no time is counted twice. */
static void test_gpu_mixed_fractions(void)
{
	struct profile *p = new_profile("/app");
	const uint64_t t0 = 10000 * MS;
	struct frame_ref line[] = { fr(p, "/app/main.py", "<module>", 1, 10) };
	struct profile_gpu_totals t;
	const struct line_stats *l;

	profile__gpu_start(p, 100, 1);
	profile__gpu_use(p, 100, t0, t0 + 40 * MS, 1);
	profile__gpu_use(p, 100, t0 + 20 * MS, t0 + 60 * MS, 1);
	profile__gpu_use(p, 100, t0 + 50 * MS, t0 + 100 * MS, 0.5);
	gpu_sample(p, line, t0 + 100 * MS, 100 * MS);
	profile__gpu_settle(p, UINT64_MAX);
	l = line_of(p, "/app/main.py", 10);
	/* [t0, t0 + 60 ms) busy, then 40 ms at half. */
	CHECK(l && l->gpu && near_gpu(l->gpu->util_sum / l->gpu->weight, 0.8));
	profile__gpu_totals(p, &t);
	CHECK(near_gpu(t.busy_ns, 80 * MS));
	profile__free(p);
}

int main(void)
{
	RUN_TEST(test_free_null);
	RUN_TEST(test_filter_program_dir);
	RUN_TEST(test_filter_all_only_exclude);
	RUN_TEST(test_innermost_profiled_frame);
	RUN_TEST(test_where_split);
	RUN_TEST(test_native_threads_credited);
	RUN_TEST(test_native_thread_stack_credited);
	RUN_TEST(test_line_zero_and_huge);
	RUN_TEST(test_offcpu_counted);
	RUN_TEST(test_not_python_kept_apart);
	RUN_TEST(test_unattributed_reasons);
	RUN_TEST(test_outside_warning);
	RUN_TEST(test_zero_time_sample);
	RUN_TEST(test_tracks);
	RUN_TEST(test_native_symbols_top_n);
	RUN_TEST(test_cpu_times_reservoir);
	RUN_TEST(test_enclosing_function);
	RUN_TEST(test_enclosing_function_nested);
	RUN_TEST(test_functions_and_module);
	RUN_TEST(test_comprehensions_fold);
	RUN_TEST(test_nested_functions_are_functions);
	RUN_TEST(test_stacks);
	RUN_TEST(test_stack_table_full);
	RUN_TEST(test_restart);
	RUN_TEST(test_threads);
	RUN_TEST(test_thread_limit);
	RUN_TEST(test_many);
	RUN_TEST(test_net_growth);
	RUN_TEST(test_decorated_attribution);
	RUN_TEST(test_decorated_outside_program_dir);
	RUN_TEST(test_timeline_runs);
	RUN_TEST(test_timeline_bounded);
	RUN_TEST(test_timeline_majority_kept);
	RUN_TEST(test_timeline_many_threads);
	RUN_TEST(test_stack_native_address);
	RUN_TEST(test_gpu_sampled_readings);
	RUN_TEST(test_gpu_calls_of_threads_without_python);
	RUN_TEST(test_gpu_host_memory_apart);
	RUN_TEST(test_gpu_site_stack_kept_at_restart);
	RUN_TEST(test_gpu_settle_waits_for_records);
	RUN_TEST(test_gpu_mixed_fractions);
	return test_summary("profile");
}
