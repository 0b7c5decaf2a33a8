/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/view/top.c without a terminal: the frames it draws of a profile built
 * here (every row within the width, nothing that is not text, the hottest
 * rows first in order, the line's function beside it) and what drawing a
 * profile of many lines costs.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"
#include "model/profile.h"
#include "view/top.h"
#include "view/viewutil.h"

#define MS 1000000ULL

static void add(struct profile *p, const char *file, const char *qual, int first, int line,
		enum sample_where where, uint64_t ns)
{
	struct frame_ref f = { profile__intern(p, file), profile__intern(p, qual), first, line };
	struct sample_in s = {
		.tgid = 100,
		.tid = 100,
		.main_thread = true,
		.cpu_ns = ns,
		.where = where,
		.unattributed = -1,
		.frames = &f,
		.nframes = 1,
	};

	profile__add(p, &s);
}

static struct profile *new_profile(void)
{
	struct profile_filter f = { .program_dir = "/app" };

	return profile__new(&f);
}

static char *frame_of(struct top *t, const struct profile *p, int width, int rows)
{
	struct top_src src = { .profile = p, .what = "main.py", .elapsed_s = 2 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	top__draw_to(t, &src, f, width, rows);
	fclose(f);
	return buf;
}

/* Every row at most width columns; no escape or other control character. */
static void check_fits(const char *frame, int width, int rows)
{
	const char *s = frame;
	int n = 0;

	CHECK(!strchr(frame, '\033'));
	while (*s) {
		const char *e = strchr(s, '\n');
		char row[4096];
		size_t len = e ? (size_t)(e - s) : strlen(s);
		size_t i;

		if (len >= sizeof(row))
			len = sizeof(row) - 1;
		memcpy(row, s, len);
		row[len] = '\0';
		if (vj_text_cols(row) > width)
			fprintf(stderr, "row wider than %d: '%s'\n", width, row);
		CHECK(vj_text_cols(row) <= width);
		for (i = 0; i < len; i++)
			CHECK((unsigned char)row[i] >= 0x20 && row[i] != 0x7f);
		n++;
		s += len + (e ? 1 : 0);
	}
	if (rows)
		CHECK(n <= rows);
}

/* The item rows: after the column titles. */
static const char *items(const char *frame)
{
	const char *s = strstr(frame, "TOT%");

	return s && strchr(s, '\n') ? strchr(s, '\n') + 1 : "";
}

static void test_frame_widths(void)
{
	static const int widths[] = { 40, 60, 80, 120, 200 };
	struct top_opts o = { .refresh_s = 1, .batch = true };
	struct profile *p = new_profile();
	struct top *t = top__new(&o);
	size_t i;

	CHECK(p && t);
	if (!p || !t)
		return;
	add(p, "/app/main.py", "main", 5, 10, WHERE_PYTHON, 800 * MS);
	add(p, "/app/main.py", "helper", 20, 22, WHERE_NATIVE, 300 * MS);
	add(p, "/app/very/long/directory/name/that/goes/on/and/on/module.py", "Klass.method", 1, 3,
	    WHERE_SYSTEM, 100 * MS);
	/* Text that must not reach a terminal as it is, and wide characters. */
	add(p, "/app/\033[31mevil\tname.py", "f\033]0;x\007", 1, 2, WHERE_PYTHON, 50 * MS);
	add(p, "/app/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e.py", "g", 1, 4, WHERE_PYTHON, 40 * MS);
	for (i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		char *f = frame_of(t, p, widths[i], 0);
		char *g = frame_of(t, p, widths[i], 12);
		const char *hot;

		CHECK(f && g);
		if (!f || !g) {
			free(f);
			free(g);
			continue;
		}
		check_fits(f, widths[i], 0);
		check_fits(g, widths[i], 12);
		CHECK(strstr(f, "sort: total") && strstr(f, "TOT%*"));
		/* The hottest line first, whatever the width. */
		hot = strstr(items(f), "main.py:10");
		CHECK(hot && hot < strstr(items(f), "main.py:22"));
		CHECK(hot && !memchr(items(f), '\n', (size_t)(hot - items(f))));
		if (hot && widths[i] >= 120) {
			/* The function beside its line. */
			hot += strlen("main.py:10");
			CHECK(!strncmp(hot + strspn(hot, " "), "main\n", 5));
			CHECK(strstr(f, "helper"));
			CHECK(strstr(f, "SYS%") && strstr(f, "TIME s"));
		}
		free(f);
		free(g);
	}
	top__free(t);
	profile__free(p);
}

/* A 16 MiB block allocated at `line` and kept: a net sample of its own. */
static void alloc(struct profile *p, int line, uint64_t addr)
{
	static uint64_t ts;
	struct frame_ref f = { profile__intern(p, "/app/main.py"), profile__intern(p, "main"), 5,
			       line };
	struct mem_in m = {
		.tgid = 100,
		.tid = 100,
		.ts_ns = ++ts * MS,
		.kind = MEM_MALLOC,
		.bytes = 16 << 20,
		.size = 16 << 20,
		.addr = addr,
		.python = true,
		.unattributed = -1,
		.frames = &f,
		.nframes = 1,
	};

	profile__add_mem(p, &m);
}

/* Memory profiled: a column of the net MB allocated per line, which the
 * sort keys offer; without memory neither. */
static void test_memory_column(void)
{
	struct top_opts o = { .refresh_s = 1, .batch = true };
	struct profile *p = new_profile();
	struct top *t = top__new(&o);
	const char *a, *b;
	char *f;
	int i;

	CHECK(p && t);
	if (!p || !t)
		return;
	add(p, "/app/main.py", "main", 5, 10, WHERE_PYTHON, 800 * MS);
	add(p, "/app/main.py", "main", 5, 12, WHERE_PYTHON, 100 * MS);
	f = frame_of(t, p, 120, 0);
	CHECK(f && !strstr(f, "MEM MB"));
	free(f);
	/* 's' steps past the memory sort while nothing was allocated. */
	for (i = 0; i < 4; i++)
		top__key(t, 's');
	f = frame_of(t, p, 120, 0);
	CHECK(f && strstr(f, "sort: total"));
	free(f);

	for (i = 0; i < 4; i++)
		alloc(p, 12, 0x10000 + i);
	f = frame_of(t, p, 120, 0);
	CHECK(f && strstr(f, "MEM MB"));
	/* 64 MiB on line 12; the time sort keeps line 10 first. */
	a = f ? strstr(items(f), "main.py:10") : NULL;
	b = f ? strstr(items(f), "main.py:12") : NULL;
	/* The 64.0 is on line 12's row, the one after line 10's. */
	CHECK(a && b && a < b && strstr(a, "64.0") && strstr(a, "64.0") < b);
	free(f);
	for (i = 0; i < 4; i++)
		top__key(t, 's');
	f = frame_of(t, p, 120, 0);
	CHECK(f && strstr(f, "sort: memory") && strstr(f, "MEM MB*"));
	a = f ? strstr(items(f), "main.py:10") : NULL;
	b = f ? strstr(items(f), "main.py:12") : NULL;
	CHECK(a && b && b < a);
	/* On a narrow terminal the sort's column stays. */
	free(f);
	f = frame_of(t, p, 40, 0);
	CHECK(f && strstr(f, "MEM"));
	if (f)
		check_fits(f, 40, 0);
	free(f);
	top__free(t);
	profile__free(p);
}

/* The hottest rows, in order, out of many: a partial selection. */
static void test_top_rows_in_order(void)
{
	struct top_opts o = { .refresh_s = 1, .batch = true };
	struct profile *p = new_profile();
	struct top *t = top__new(&o);
	const char *s;
	char *f;
	int i, prev = 1 << 30, n = 0;

	CHECK(p && t);
	if (!p || !t)
		return;
	/* Line i gets time growing with (i * 7919) % 5000: no order of
	 * arrival to lean on. */
	for (i = 1; i <= 5000; i++)
		add(p, "/app/main.py", "main", 1, i, WHERE_PYTHON, (1 + (i * 7919) % 5000) * 1000);
	f = frame_of(t, p, 100, 0);
	CHECK(f != NULL);
	for (s = f ? items(f) : ""; (s = strstr(s, "main.py:")); s++) {
		int line = atoi(s + 8), key = 1 + (line * 7919) % 5000;

		CHECK(key < prev);
		prev = key;
		n++;
	}
	CHECK_EQ_INT(n, 20);
	/* The first is the hottest of all, the last the 20th. */
	CHECK_EQ_INT(prev, 5000 - 19);
	CHECK(f && strstr(items(f), "main.py:") &&
	      1 + (atoi(strstr(items(f), "main.py:") + 8) * 7919) % 5000 == 5000);
	free(f);
	top__free(t);
	profile__free(p);
}

static double thread_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Drawing a frame of a profile of 20,000 sampled lines (a large program),
 * in the order that makes the selection work hardest (each line hotter
 * than the ones before it): under 1% of a core at one frame a second is
 * under 10 ms a frame. */
static void test_draw_cost(void)
{
	struct top_opts o = { .refresh_s = 1, .batch = true };
	struct profile *p = new_profile();
	struct top *t = top__new(&o);
	double t0, per;
	char file[64];
	int i, k;

	CHECK(p && t);
	if (!p || !t)
		return;
	for (i = 0; i < 20; i++) {
		snprintf(file, sizeof(file), "/app/mod%d.py", i);
		for (k = 1; k <= 1000; k++)
			add(p, file, "f", 1, k, WHERE_PYTHON, (uint64_t)(i * 1000 + k));
	}
	free(frame_of(t, p, 120, 40));
	t0 = thread_ms();
	for (i = 0; i < 10; i++)
		free(frame_of(t, p, 120, 40));
	per = (thread_ms() - t0) / 10;
	printf("top: a frame of 20000 lines takes %.3f ms of CPU\n", per);
	CHECK(per < 10);
	top__free(t);
	profile__free(p);
}

int main(void)
{
	RUN_TEST(test_frame_widths);
	RUN_TEST(test_top_rows_in_order);
	RUN_TEST(test_memory_column);
	RUN_TEST(test_draw_cost);
	return test_summary("top");
}
