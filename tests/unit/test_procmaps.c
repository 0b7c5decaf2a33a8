// SPDX-License-Identifier: BSD-2-Clause
/*
 * procmaps: real maps captured from a pyenv python3.12 and from Debian's
 * /usr/bin/python3.11, hostile ones, and this process's own.  Run from the
 * repository root, or set FIXTURES to the fixtures folder.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/procmaps.h"
#include "testlib.h"

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *dir = getenv("FIXTURES");

	snprintf(path, sizeof(path), "%s/procmaps/%s", dir ? dir : "tests/fixtures", name);
	return path;
}

static struct procmaps *load_fixture(const char *name)
{
	struct procmaps *m;
	FILE *f;

	f = fopen(fixture(name), "r");
	if (!f) {
		fprintf(stderr, "missing fixture %s: %s (run from the repository root)\n",
			fixture(name), strerror(errno));
		return NULL;
	}
	m = procmaps__parse(f);
	fclose(f);
	return m;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* Every fixture must come out sorted, without overlaps. */
static void check_sorted(const struct procmaps *m)
{
	const struct map_entry *a, *b;
	size_t i;

	for (i = 0; i + 1 < procmaps__count(m); i++) {
		a = procmaps__get(m, i);
		b = procmaps__get(m, i + 1);
		CHECK(a->start < a->end);
		CHECK(a->end <= b->start);
	}
}

static void test_pyenv312(void)
{
	const struct map_entry *e;
	struct procmaps *m;

	m = load_fixture("pyenv-python3.12.maps");
	CHECK(m);
	if (!m)
		return;
	CHECK_EQ_INT(procmaps__count(m), 38);
	CHECK_EQ_INT(procmaps__skipped(m), 0);
	check_sorted(m);

	e = procmaps__get(m, 0);
	CHECK_EQ_INT(e->start, 0x559ac1acd000ULL);
	CHECK_EQ_INT(e->end, 0x559ac1ace000ULL);
	CHECK(e->r && !e->w && !e->x && e->p);
	CHECK_EQ_INT(e->offset, 0);
	CHECK_EQ_INT(e->dev_major, 0xfe);
	CHECK_EQ_INT(e->dev_minor, 0);
	CHECK_EQ_INT(e->inode, 73383);
	CHECK_EQ_STR(e->path, "/root/.pyenv/versions/3.12.1/bin/python3.12");
	CHECK(!e->deleted);

	/* libpython's text mapping. */
	e = procmaps__find(m, 0x7feeb9d06000ULL + 0x5dc0);
	CHECK(e);
	if (e) {
		CHECK_EQ_INT(e->start, 0x7feeb9d06000ULL);
		CHECK_EQ_INT(e->end, 0x7feeb9f79000ULL);
		CHECK(e->r && !e->w && e->x && e->p);
		CHECK_EQ_INT(e->offset, 0x106000);
		CHECK_EQ_INT(e->inode, 73606);
		CHECK_EQ_STR(e->path, "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0");
	}
	/* Boundaries: start is inside, end is not. */
	CHECK(procmaps__find(m, 0x7feeb9d06000ULL) == e);
	e = procmaps__find(m, 0x7feeb9f79000ULL - 1);
	CHECK(e && e->x);
	e = procmaps__find(m, 0x7feeb9f79000ULL);
	CHECK(e && !e->x && e->offset == 0x379000);

	e = procmaps__find(m, 0x7feeb9867000ULL);
	CHECK(e && !strcmp(e->path, "") && e->inode == 0 && e->w);
	e = procmaps__find(m, 0x559af534d000ULL);
	CHECK(e && !strcmp(e->path, "[heap]"));
	e = procmaps__find(m, 0x7feeba4a6000ULL);
	CHECK(e && !e->p && ends_with(e->path, "gconv-modules.cache"));
	e = procmaps__get(m, procmaps__count(m) - 1);
	CHECK(e && e->start == 0xffffffffff600000ULL && !strcmp(e->path, "[vsyscall]"));
	CHECK(e && e->x && !e->r);

	/* Gaps and the ends of the address space. */
	CHECK(!procmaps__find(m, 0));
	CHECK(!procmaps__find(m, 0x559ac1acd000ULL - 1));
	CHECK(!procmaps__find(m, 0x559ac1ad2000ULL));
	CHECK(!procmaps__find(m, 0x7feeba2b5000ULL));
	CHECK(!procmaps__find(m, UINT64_MAX));
	CHECK(!procmaps__get(m, procmaps__count(m)));
	procmaps__free(m);
}

static void test_debian311(void)
{
	const struct map_entry *e;
	struct procmaps *m;

	m = load_fixture("debian-python3.11.maps");
	CHECK(m);
	if (!m)
		return;
	CHECK_EQ_INT(procmaps__count(m), 44);
	CHECK_EQ_INT(procmaps__skipped(m), 0);
	check_sorted(m);
	/* Non-PIE: the exe sits at its link address. */
	e = procmaps__get(m, 0);
	CHECK_EQ_INT(e->start, 0x400000);
	CHECK_EQ_STR(e->path, "/usr/bin/python3.11");
	e = procmaps__find(m, 0x52b0f0);
	CHECK(e && e->x && e->offset == 0x1f000 && e->start == 0x41f000);
	e = procmaps__find(m, 0x3b455000);
	CHECK(e && !strcmp(e->path, "[heap]"));
	procmaps__free(m);
}

static void test_hostile(void)
{
	const struct map_entry *e;
	struct procmaps *m;

	m = load_fixture("hostile.maps");
	CHECK(m);
	if (!m)
		return;
	/*
	 * 15 lines do not parse (missing fields, bad separators, overflowing
	 * numbers, empty or inverted ranges, an embedded NUL) and one range
	 * overlaps its predecessor.
	 */
	CHECK_EQ_INT(procmaps__count(m), 9);
	CHECK_EQ_INT(procmaps__skipped(m), 16);
	check_sorted(m);

	e = procmaps__get(m, 0);
	CHECK(e && e->start == 0x400000 && !strcmp(e->path, "/good/first"));
	e = procmaps__find(m, 0x410000);
	CHECK(e && e->inode == UINT64_MAX && !strcmp(e->path, "/max/inode"));
	e = procmaps__find(m, 0x411800);
	CHECK(e);
	if (e) {
		CHECK_EQ_STR(e->path, "/dev/shm/with some spaces in it");
		CHECK(e->r && e->w && !e->x && !e->p);
		CHECK_EQ_INT(e->offset, 0xabcd);
		CHECK_EQ_INT(e->dev_major, 0xfe);
		CHECK_EQ_INT(e->dev_minor, 1);
	}
	e = procmaps__find(m, 0x412000);
	CHECK(e && e->deleted && !strcmp(e->path, "/usr/lib/libgone.so (deleted)"));
	e = procmaps__find(m, 0x413000);
	CHECK(e && !e->deleted && !strcmp(e->path, "/tmp/a (deleted) b"));
	e = procmaps__find(m, 0x414000);
	CHECK(e && !strcmp(e->path, ""));
	e = procmaps__find(m, 0x415000);
	CHECK(e && !strcmp(e->path, "") && e->end == 0x416000);
	/* The overlapping /overlaps/previous entry was dropped. */
	CHECK(!procmaps__find(m, 0x416800));
	e = procmaps__find(m, UINT64_MAX - 1);
	CHECK(e && !strcmp(e->path, "[top]"));
	CHECK(!procmaps__find(m, UINT64_MAX)); /* end is exclusive */
	e = procmaps__find(m, 0x420000);
	CHECK(e && !strcmp(e->path, "/last/line/without/newline"));
	CHECK(!procmaps__find(m, 0x401000));
	CHECK(!procmaps__find(m, 0x430000));
	procmaps__free(m);
}

static void test_long_line(void)
{
	const struct map_entry *e;
	struct procmaps *m;

	m = load_fixture("long-line.maps");
	CHECK(m);
	if (!m)
		return;
	CHECK_EQ_INT(procmaps__count(m), 3);
	CHECK_EQ_INT(procmaps__skipped(m), 1);
	e = procmaps__find(m, 0x7f0000000800ULL);
	CHECK(e && strlen(e->path) == 10014 && ends_with(e->path, "xxx.so"));
	e = procmaps__find(m, 0x7f0000001000ULL);
	CHECK(e && !strcmp(e->path, "/after"));
	procmaps__free(m);
}

static void test_empty(void)
{
	struct procmaps *m;

	m = load_fixture("empty.maps");
	CHECK(m);
	if (!m)
		return;
	CHECK_EQ_INT(procmaps__count(m), 0);
	CHECK_EQ_INT(procmaps__skipped(m), 0);
	CHECK(!procmaps__get(m, 0));
	CHECK(!procmaps__find(m, 0));
	CHECK(!procmaps__find(m, 0x400000));
	procmaps__free(m);
}

/* Many entries in reverse order: growth, sorting and search. */
static void test_unsorted_many(void)
{
	const struct map_entry *e;
	struct procmaps *m;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;
	int n = 5000;

	f = open_memstream(&buf, &len);
	CHECK(f);
	if (!f)
		return;
	for (i = n; i-- > 0;)
		fprintf(f, "%zx-%zx r--p %zx 01:02 %zu /lib/%zu.so\n", 0x10000 + i * 0x2000,
			0x11000 + i * 0x2000, i * 0x1000, i + 1, i);
	fclose(f);
	f = fmemopen(buf, len, "r");
	m = f ? procmaps__parse(f) : NULL;
	CHECK(m);
	if (m) {
		CHECK_EQ_INT(procmaps__count(m), n);
		CHECK_EQ_INT(procmaps__skipped(m), 0);
		check_sorted(m);
		for (i = 0; i < (size_t)n; i += 97) {
			e = procmaps__find(m, 0x10000 + i * 0x2000 + 0x800);
			CHECK(e && e->inode == i + 1);
			CHECK(!procmaps__find(m, 0x11000 + i * 0x2000)); /* the gaps */
		}
	}
	procmaps__free(m);
	if (f)
		fclose(f);
	free(buf);
}

static void test_load_self(void)
{
	const struct map_entry *e;
	struct procmaps *m;

	m = procmaps__load(0);
	CHECK(m);
	if (!m)
		return;
	CHECK(procmaps__count(m) > 0);
	CHECK_EQ_INT(procmaps__skipped(m), 0);
	check_sorted(m);
	e = procmaps__find(m, (uint64_t)(uintptr_t)&test_load_self);
	CHECK(e && e->x && e->path[0] == '/');
	e = procmaps__find(m, (uint64_t)(uintptr_t)&m);
	CHECK(e && !strcmp(e->path, "[stack]"));
	procmaps__free(m);

	errno = 0;
	CHECK(!procmaps__load(-1));
	CHECK_EQ_INT(errno, EINVAL);
	errno = 0;
	CHECK(!procmaps__load(0x7ffffff0)); /* above any pid_max */
	CHECK_EQ_INT(errno, ENOENT);
	procmaps__free(NULL);
}

/* A mapping's file as the process that maps it sees it, and a name too long
 * to hold, refused rather than cut short (a cut name can be another file). */
static void test_file_in_root(void)
{
	char buf[64], longpath[128];

	CHECK_EQ_INT(procmaps__file_in_root(buf, sizeof(buf), 42, "/usr/lib/libpython3.12.so"), 0);
	CHECK_EQ_STR(buf, "/proc/42/root/usr/lib/libpython3.12.so");
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	CHECK_EQ_INT(procmaps__file_in_root(buf, sizeof(buf), 42, longpath), -ENAMETOOLONG);
	/* Exactly full: 63 characters and the terminator fit. */
	longpath[63 - (int)strlen("/proc/42/root")] = '\0';
	CHECK_EQ_INT(procmaps__file_in_root(buf, sizeof(buf), 42, longpath), 0);
	CHECK_EQ_INT(strlen(buf), 63);
}

int main(void)
{
	RUN_TEST(test_pyenv312);
	RUN_TEST(test_debian311);
	RUN_TEST(test_hostile);
	RUN_TEST(test_long_line);
	RUN_TEST(test_empty);
	RUN_TEST(test_unsorted_many);
	RUN_TEST(test_load_self);
	RUN_TEST(test_file_in_root);
	return test_summary("procmaps");
}
