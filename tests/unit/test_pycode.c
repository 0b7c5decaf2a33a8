/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/symbolize/pycode.c against this very process: str objects and code objects are
 * built by hand in our own memory with the layouts of the generated tables
 * (3.12 and 3.9), then read back through process_vm_readv on our own pid,
 * exactly as a profiled interpreter's would be.  No root needed: a process
 * may always read itself.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testlib.h"
#include "cpython.h"
#include "symbolize/pycode.h"
#include "target/python.h"

#define FFFD "\xef\xbf\xbd"

enum {
	KIND1 = 1,
	KIND2 = 2,
	KIND4 = 4
};

/* A str object at a fixed place: 8-aligned, big enough for every test. */
static uint64_t strbuf[64][128];
static int nstr;

static struct py_proc proc(const struct py_offsets *off, int minor)
{
	struct py_proc pp;

	memset(&pp, 0, sizeof(pp));
	pp.pid = getpid();
	pp.minor = minor;
	pp.off = off;
	return pp;
}

/*
 * Lays out a str: length at unicode_length, the state bits at
 * unicode_state, the characters after PyASCIIObject (compact ASCII) or
 * PyCompactUnicodeObject (other compact strings).  The state word sets the
 * kind, compact and ascii bits through the table's masks, as CPython's
 * bitfields place them.
 */
static uint64_t make_str(const struct py_offsets *o, int kind, bool compact, bool ascii,
			 const void *chars, size_t nchars, uint64_t length)
{
	unsigned char *b = (unsigned char *)strbuf[nstr++ % 64];
	uint32_t state = 0;
	unsigned int shift = __builtin_ctz(o->unicode_kind_mask);

	memset(b, 0xa5, sizeof(strbuf[0]));
	state |= ((uint32_t)kind << shift) & o->unicode_kind_mask;
	if (compact)
		state |= o->unicode_compact_mask;
	if (ascii)
		state |= o->unicode_ascii_mask;
	state |= 1; /* an "interned" bit below the kind: must be ignored */
	memcpy(b + o->unicode_length, &length, sizeof(length));
	memcpy(b + o->unicode_state, &state, sizeof(state));
	memcpy(b + (ascii ? o->unicode_ascii_size : o->unicode_compact_size), chars, nchars * kind);
	return (uint64_t)(uintptr_t)b;
}

static void check_read(const struct py_proc *pp, uint64_t addr, size_t max, const char *want)
{
	char *s = pystr_read(pp->pid, pp, addr, max);

	CHECK(s != NULL);
	if (!s) {
		fprintf(stderr, "  pystr_read: %s\n", strerror(errno));
		return;
	}
	CHECK_EQ_STR(s, want);
	free(s);
}

static void check_refused(const struct py_proc *pp, uint64_t addr, int err)
{
	char *s;

	errno = 0;
	s = pystr_read(pp->pid, pp, addr, 100);
	CHECK(s == NULL);
	CHECK_EQ_INT(errno, err);
	free(s);
}

static void test_compact_ascii(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	const struct py_offsets *o = pp.off;

	check_read(&pp, make_str(o, KIND1, true, true, "hello_world.py", 14, 14), 100,
		   "hello_world.py");
	check_read(&pp, make_str(o, KIND1, true, true, "", 0, 0), 100, "");
	/* The data of a compact ASCII string starts after PyASCIIObject: the
	 * same bytes read as a non-ASCII compact one are elsewhere. */
	CHECK(o->unicode_ascii_size < o->unicode_compact_size);
}

static void test_latin1(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	const unsigned char cafe[] = { 'c', 'a', 'f', 0xe9, ' ', 0xff, 0x80 };

	check_read(&pp, make_str(pp.off, KIND1, true, false, cafe, 7, 7), 100,
		   "caf\xc3\xa9 \xc3\xbf\xc2\x80");
}

static void test_ucs2(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	/* Little-endian code units: euro sign, 'x', a CJK character, U+FFFF,
	 * then lone surrogates, which UTF-8 cannot carry. */
	const uint16_t units[] = { 0x20ac, 'x', 0x4e2d, 0xffff, 0xd83d, 'y', 0xdc00 };

	check_read(&pp, make_str(pp.off, KIND2, true, false, units, 7, 7), 100,
		   "\xe2\x82\xac"
		   "x"
		   "\xe4\xb8\xad"
		   "\xef\xbf\xbf" FFFD "y" FFFD);
}

static void test_ucs4(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	const uint32_t cps[] = { 0x1f600, 'a', 0x10ffff, 0x110000, 0xffffffff, 0xd800, 0, 'z' };

	check_read(&pp, make_str(pp.off, KIND4, true, false, cps, 8, 8), 100,
		   "\xf0\x9f\x98\x80"
		   "a"
		   "\xf4\x8f\xbf\xbf" FFFD FFFD FFFD FFFD "z");
}

static void test_nul_replaced(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);

	check_read(&pp, make_str(pp.off, KIND1, true, true, "a\0b", 3, 3), 100, "a" FFFD "b");
}

static void test_length_capped(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	const uint32_t cps[] = { 0x1f600, 0x1f601, 0x1f602, 0x1f603 };

	check_read(&pp, make_str(pp.off, KIND1, true, true, "abcdefghij", 10, 10), 3, "abc");
	check_read(&pp, make_str(pp.off, KIND4, true, false, cps, 4, 4), 2,
		   "\xf0\x9f\x98\x80\xf0\x9f\x98\x81");
	/* A length no string has (a stale pointer): capped before any
	 * allocation or read of that size. */
	check_read(&pp, make_str(pp.off, KIND1, true, true, "abcdefghij", 10, 1ULL << 62), 5,
		   "abcde");
	check_read(&pp, make_str(pp.off, KIND4, true, false, cps, 4, UINT64_MAX), 1,
		   "\xf0\x9f\x98\x80");
	check_read(&pp, make_str(pp.off, KIND1, true, true, "abc", 3, 3), 0, "");
}

static void test_refused(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	const struct py_offsets *o = pp.off;

	/* Not compact: a legacy string, or not a str at all. */
	check_refused(&pp, make_str(o, KIND1, false, true, "abc", 3, 3), EINVAL);
	check_refused(&pp, make_str(o, KIND2, false, false, "a\0b\0", 2, 2), EINVAL);
	/* Kinds that do not exist. */
	check_refused(&pp, make_str(o, 0, true, false, "abc", 3, 3), EINVAL);
	check_refused(&pp, make_str(o, 3, true, false, "abc", 1, 1), EINVAL);
	check_refused(&pp, make_str(o, 7, true, false, "abc", 0, 0), EINVAL);
	/* NULL. */
	check_refused(&pp, 0, EINVAL);
}

/* Memory that cannot be read: no page, or characters running into one. */
static void test_unreadable(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	const struct py_offsets *o = pp.off;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *m =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *s;
	uint32_t state = (1u << __builtin_ctz(o->unicode_kind_mask)) | o->unicode_compact_mask |
			 o->unicode_ascii_mask;
	uint64_t len = 64;
	char *r;

	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return;
	/* The header fits in the first page; its 64 characters do not. */
	s = m + page - o->unicode_ascii_size - 16;
	memcpy(s + o->unicode_length, &len, sizeof(len));
	memcpy(s + o->unicode_state, &state, sizeof(state));
	memset(s + o->unicode_ascii_size, 'q', 16);
	CHECK_EQ_INT(munmap(m + page, page), 0);
	errno = 0;
	r = pystr_read(pp.pid, &pp, (uint64_t)(uintptr_t)s, 100);
	CHECK(r == NULL);
	CHECK(errno == EFAULT);
	free(r);
	/* Capped to what is there, it reads. */
	check_read(&pp, (uint64_t)(uintptr_t)s, 16, "qqqqqqqqqqqqqqqq");
	/* A header on no page at all. */
	errno = 0;
	r = pystr_read(pp.pid, &pp, (uint64_t)(uintptr_t)(m + page), 100);
	CHECK(r == NULL);
	CHECK(errno == EFAULT);
	free(r);
	munmap(m, page);
}

/* The same strings with 3.9's layout: a larger PyASCIIObject (wstr). */
static void test_layout_39(void)
{
	struct py_proc pp = proc(&py_offsets_3_9, 9);
	const uint16_t units[] = { 0x20ac, 'x' };

	CHECK(pp.off->unicode_ascii_size != py_offsets_3_12.unicode_ascii_size);
	check_read(&pp, make_str(pp.off, KIND1, true, true, "mod.py", 6, 6), 100, "mod.py");
	check_read(&pp, make_str(pp.off, KIND2, true, false, units, 2, 2), 100, "\xe2\x82\xacx");
}

/* ------------------------------------------------------ code objects */

struct fake_code {
	uint64_t mem[64];   /* the code object; fields at the table's offsets */
	uint64_t table[16]; /* a bytes object holding the line table */
};

static struct fake_code codes[4];

/* A 3.12 code object: file, qualname, first line, flags, and a location
 * table of one entry: 3 code units (6 bytes) on line first + 2. */
static uint64_t make_code(int i, const char *file, const char *qual, int32_t first)
{
	const struct py_offsets *o = &py_offsets_3_12;
	unsigned char *c = (unsigned char *)codes[i].mem, *t = (unsigned char *)codes[i].table;
	uint64_t f = make_str(o, KIND1, true, true, file, strlen(file), strlen(file));
	uint64_t q = make_str(o, KIND1, true, true, qual, strlen(qual), strlen(qual));
	uint64_t tab = (uint64_t)(uintptr_t)t, flags = 0x3;
	/* Location entry: 1 (entry) | code 13 (no columns) | 3 units - 1;
	 * then the line delta as a signed varint (+2 -> 4). */
	const unsigned char loc[] = { 0x80 | (13 << 3) | 2, 4 };
	int64_t size = sizeof(loc);

	memset(c, 0, sizeof(codes[i].mem));
	memset(t, 0, sizeof(codes[i].table));
	memcpy(c + o->code_firstlineno, &first, sizeof(first));
	memcpy(c + o->code_filename, &f, sizeof(f));
	memcpy(c + o->code_qualname, &q, sizeof(q));
	memcpy(c + o->code_name, &q, sizeof(q));
	memcpy(c + o->code_linetable, &tab, sizeof(tab));
	memcpy(c + o->code_flags, &flags, 4);
	memcpy(t + o->varobject_size, &size, sizeof(size));
	memcpy(t + o->bytes_sval, loc, sizeof(loc));
	return (uint64_t)(uintptr_t)c;
}

/* What a sample reads of code object `code`: its first line and the
 * identity of its co_filename and co_name pointers. */
static uint64_t tag_of(const struct py_offsets *o, uint64_t code, uint32_t first)
{
	const unsigned char *c = (const unsigned char *)(uintptr_t)code;
	uint64_t f, n;

	memcpy(&f, c + o->code_filename, sizeof(f));
	memcpy(&n, c + o->code_name, sizeof(n));
	return pycode_tag(first, code_ident(f, n));
}

static void test_code_cache(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	struct pycode_cache *c = pycode_cache__new(2);
	uint64_t a = make_code(0, "/app/main.py", "Klass.method", 40);
	uint64_t b = make_code(1, "/app/util.py", "helper", 7);
	uint64_t d = make_code(2, "/app/more.py", "more", 1);
	const struct pycode *pa, *pb;

	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(pycode_cache__lookup(c, 1, a, tag_of(&py_offsets_3_12, a, 40)) == NULL);
	pa = pycode_cache__load(c, &pp, 1, a, tag_of(&py_offsets_3_12, a, 40));
	CHECK(pa != NULL);
	if (pa) {
		CHECK_EQ_STR(pa->filename, "/app/main.py");
		CHECK_EQ_STR(pa->qualname, "Klass.method");
		CHECK_EQ_INT(pa->firstlineno, 40);
		CHECK_EQ_INT(pa->flags, 3);
		CHECK_EQ_INT(pa->table_len, 2);
		/* Bytes 0..5: line 42; past the table: none. */
		CHECK_EQ_INT(pycode__line(pa, 0), 42);
		CHECK_EQ_INT(pycode__line(pa, 4), 42);
		CHECK_EQ_INT(pycode__line(pa, 4), 42); /* memoized */
		CHECK_EQ_INT(pycode__line(pa, 6), -1);
		CHECK_EQ_INT(pycode__line(pa, 6), -1);
	}
	CHECK(pycode_cache__lookup(c, 1, a, tag_of(&py_offsets_3_12, a, 40)) == pa);
	CHECK(pycode_cache__load(c, &pp, 1, a, tag_of(&py_offsets_3_12, a, 40)) == pa);
	/* Another address space: another entry. */
	CHECK(pycode_cache__lookup(c, 2, a, tag_of(&py_offsets_3_12, a, 40)) == NULL);
	/* The first line does not match the sample's: the address now holds
	 * another code object. */
	errno = 0;
	CHECK(pycode_cache__load(c, &pp, 1, a, tag_of(&py_offsets_3_12, a, 41)) == NULL);
	CHECK_EQ_INT(errno, ESTALE);
	pb = pycode_cache__load(c, &pp, 1, b, tag_of(&py_offsets_3_12, b, 7));
	CHECK(pb != NULL && pb != pa);
	CHECK_EQ_INT(pycode_cache__evictions(c), 0);
	/* Full (two entries): the cache starts over. */
	CHECK(pycode_cache__load(c, &pp, 1, d, tag_of(&py_offsets_3_12, d, 1)) != NULL);
	CHECK_EQ_INT(pycode_cache__evictions(c), 2);
	CHECK(pycode_cache__lookup(c, 1, a, tag_of(&py_offsets_3_12, a, 40)) == NULL);
	CHECK(pycode_cache__lookup(c, 1, d, tag_of(&py_offsets_3_12, d, 1)) != NULL);
	/* A code object whose name is not a str. */
	{
		uint64_t bad = make_code(3, "/app/x.py", "x", 5), junk = 8;

		memcpy((unsigned char *)codes[3].mem + py_offsets_3_12.code_qualname, &junk, 8);
		CHECK(pycode_cache__load(c, &pp, 1, bad, tag_of(&py_offsets_3_12, bad, 5)) == NULL);
	}
	/* A line table larger than any real one (1 MiB) is refused. */
	{
		uint64_t big = make_code(3, "/app/x.py", "x", 5);
		int64_t size = (1 << 20) + 1;

		memcpy((unsigned char *)codes[3].table + py_offsets_3_12.varobject_size, &size, 8);
		errno = 0;
		CHECK(pycode_cache__load(c, &pp, 1, big, tag_of(&py_offsets_3_12, big, 5)) == NULL);
		CHECK_EQ_INT(errno, E2BIG);
	}
	/* Unreadable address. */
	CHECK(pycode_cache__load(c, &pp, 1, 16, 5) == NULL);
	pycode_cache__free(c);
	pycode_cache__free(NULL);
}

/* Every module's code starts at line 1: a code object freed and another one
 * made at the same address must not inherit the first one's entry. */
static void test_code_reuse_same_first_line(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	struct pycode_cache *c = pycode_cache__new(16);
	uint64_t a = make_code(0, "/app/first.py", "<module>", 1), b, ta, tb;
	const struct pycode *pa, *pb;

	CHECK(c != NULL);
	if (!c)
		return;
	ta = tag_of(&py_offsets_3_12, a, 1);
	pa = pycode_cache__load(c, &pp, 1, a, ta);
	CHECK(pa != NULL && !strcmp(pa->filename, "/app/first.py"));
	b = make_code(0, "/app/second.py", "<module>", 1);
	tb = tag_of(&py_offsets_3_12, b, 1);
	CHECK(a == b);
	CHECK(ta != tb);
	/* A sample of the new object finds no entry and reads it anew. */
	CHECK(pycode_cache__lookup(c, 1, b, tb) == NULL);
	pb = pycode_cache__load(c, &pp, 1, b, tb);
	CHECK(pb != NULL && pb != pa);
	if (pb)
		CHECK_EQ_STR(pb->filename, "/app/second.py");
	pycode_cache__free(c);
}

/* The names a user keeps with a code object are its under its key only:
 * another key (another profile) finds none, and keeping them for it takes
 * the first's place. */
static void test_kept_names(void)
{
	struct py_proc pp = proc(&py_offsets_3_12, 12);
	struct pycode_cache *c = pycode_cache__new(16);
	uint64_t a = make_code(0, "/app/main.py", "f", 3);
	static const char fa[] = "/app/main.py", qa[] = "f", fb[] = "/app/main.py", qb[] = "f";
	const struct pycode *pa;
	const char *f = NULL, *q = NULL;

	CHECK(c != NULL);
	if (!c)
		return;
	pa = pycode_cache__load(c, &pp, 1, a, tag_of(&py_offsets_3_12, a, 3));
	CHECK(pa != NULL);
	if (!pa) {
		pycode_cache__free(c);
		return;
	}
	CHECK(!pycode__names(pa, 7, &f, &q));
	pycode__keep_names(pa, 7, fa, qa);
	CHECK(pycode__names(pa, 7, &f, &q) && f == fa && q == qa);
	CHECK(!pycode__names(pa, 8, &f, &q));
	pycode__keep_names(pa, 8, fb, qb);
	CHECK(pycode__names(pa, 8, &f, &q) && f == fb && q == qb);
	CHECK(!pycode__names(pa, 7, &f, &q));
	pycode_cache__free(c);
}

int main(void)
{
	RUN_TEST(test_compact_ascii);
	RUN_TEST(test_latin1);
	RUN_TEST(test_ucs2);
	RUN_TEST(test_ucs4);
	RUN_TEST(test_nul_replaced);
	RUN_TEST(test_length_capped);
	RUN_TEST(test_refused);
	RUN_TEST(test_unreadable);
	RUN_TEST(test_layout_39);
	RUN_TEST(test_code_cache);
	RUN_TEST(test_code_reuse_same_first_line);
	RUN_TEST(test_kept_names);
	return test_summary("pycode");
}
