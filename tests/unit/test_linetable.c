// SPDX-License-Identifier: BSD-2-Clause
/*
 * user/symbolize/linetable.c against CPython itself: tests/fixtures/linetable/ holds,
 * per interpreter, the line PyCode_Addr2Line() gave for every even byte
 * offset of every code object in a set of stdlib modules and synthetic edge
 * cases (tools/linetable-fixtures.py writes them).  Every fixture must be
 * present and every offset must agree.  Hand-written tables then pin down
 * each format's rules, and random and truncated tables, each in a heap
 * buffer of exactly its length, check under ASan that a decoder never reads
 * past len and always answers a line or -1.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

#include "symbolize/linetable.h"
#include "testlib.h"

#define FIXTURE_DIR "tests/fixtures/linetable/"
#define FIXTURE_MAX (64u << 20)

/* Which format features a fixture's tables exercise, so that coverage cannot silently shrink. */
struct features {
	long lnotab_neg;	/* 3.9: negative line delta */
	long lnotab_split;	/* 3.9: zero addr delta, a jump split over pairs */
	long t310_noline;	/* 3.10: -128 entry */
	long t310_zero;		/* 3.10: zero-size entry */
	long loc_code[16];	/* 3.11+: entries per code */
	long loc_multibyte;	/* 3.11+: code 13/14 with a multi-byte line delta */
};

struct fixture_stats {
	long codes, offsets, mismatches;
	struct features feat;
};

/* Reads a whole gzip file; returns 0 or -errno, -EINVAL when empty or too big. */
static int read_gz(const char *path, uint8_t **data, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	uint8_t *buf = NULL, *tmp;
	gzFile gz;
	int got, err = 0;

	gz = gzopen(path, "rb");
	if (!gz)
		return errno ? -errno : -ENOMEM;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (;;) {
		if (n == cap) {
			if (cap >= FIXTURE_MAX) {
				err = -EINVAL;
				goto cleanup;
			}
			tmp = realloc(buf, cap * 2);
			if (!tmp) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = tmp;
			cap *= 2;
		}
		got = gzread(gz, buf + n, cap - n);
		if (got < 0) {
			err = -EIO;
			goto cleanup;
		}
		if (got == 0)
			break;
		n += got;
	}
	if (n == 0) {
		err = -EINVAL;
		goto cleanup;
	}
	*data = buf;
	*len = n;
	buf = NULL;
cleanup:
	free(buf);
	gzclose(gz);
	return err;
}

/* A bounds-checked little-endian reader over the fixture. */
struct cursor {
	const uint8_t *p;
	size_t len, pos;
	int bad;
};

static const uint8_t *take(struct cursor *c, size_t n)
{
	const uint8_t *p;

	if (c->bad || n > c->len - c->pos) {
		c->bad = 1;
		return NULL;
	}
	p = c->p + c->pos;
	c->pos += n;
	return p;
}

static uint32_t take_u32(struct cursor *c)
{
	const uint8_t *p = take(c, 4);

	if (!p)
		return 0;
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint8_t take_u8(struct cursor *c)
{
	const uint8_t *p = take(c, 1);

	return p ? *p : 0;
}

static void scan_features(enum linetable_format fmt, const uint8_t *t, size_t len,
			  struct features *f)
{
	size_t i;

	switch (fmt) {
	case LINETABLE_LNOTAB:
		for (i = 0; i + 1 < len; i += 2) {
			f->lnotab_neg += (int8_t)t[i + 1] < 0;
			f->lnotab_split += t[i] == 0;
		}
		break;
	case LINETABLE_310:
		for (i = 0; i + 1 < len; i += 2) {
			f->t310_noline += (int8_t)t[i + 1] == -128;
			f->t310_zero += t[i] == 0;
		}
		break;
	case LINETABLE_LOCATIONS:
		for (i = 0; i < len; i++) {
			int code = (t[i] >> 3) & 0xf;

			if (!(t[i] & 0x80))
				continue;
			f->loc_code[code]++;
			if ((code == 13 || code == 14) && i + 1 < len && (t[i + 1] & 0x40))
				f->loc_multibyte++;
		}
		break;
	}
}

/* Checks one code object's record; returns 0, or -EINVAL if the fixture is malformed. */
static int check_code(struct cursor *c, enum linetable_format fmt, const char *name,
		      struct fixture_stats *st)
{
	int firstlineno = (int32_t)take_u32(c);
	uint32_t tlen = take_u32(c), k, i;
	const uint8_t *table = take(c, tlen);
	uint8_t *copy;
	const uint8_t *lines;
	int want, got;

	k = take_u32(c);
	lines = take(c, 4 + (size_t)k * 4);
	if (c->bad)
		return -EINVAL;
	/* An exact-size heap copy, so that ASan sees any read past the table. */
	copy = malloc(tlen ? tlen : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, table, tlen);
	scan_features(fmt, copy, tlen, &st->feat);
	for (i = 0; i <= k; i++) {
		const uint8_t *p = lines + 4 * i;
		int off = i == 0 ? -1 : (int)(i - 1) * 2;

		want = (int32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24);
		got = linetable_addr2line(fmt, copy, tlen, firstlineno, off);
		st->offsets++;
		if (got != want && st->mismatches++ < 10)
			fprintf(stderr, "%s: code #%ld (first line %d, table %u bytes) offset %d: "
				"got %d, expected %d\n", name, st->codes, firstlineno, tlen, off,
				got, want);
	}
	free(copy);
	st->codes++;
	return 0;
}

static int check_fixture(const char *name, int minor, struct fixture_stats *st)
{
	char path[256];
	uint8_t *data = NULL;
	const uint8_t *magic;
	struct cursor c = {};
	enum linetable_format fmt;
	uint32_t ncode, n;
	size_t len;
	int err;

	memset(st, 0, sizeof(*st));
	if (snprintf(path, sizeof(path), FIXTURE_DIR "%s.bin.gz", name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = read_gz(path, &data, &len);
	if (err) {
		fprintf(stderr, "failed to read fixture %s: %s (regenerate with "
			"tools/linetable-fixtures.py)\n", path, strerror(-err));
		return err;
	}
	c.p = data;
	c.len = len;
	err = -EINVAL;
	magic = take(&c, 4);
	if (!magic || memcmp(magic, "SBLT", 4) != 0)
		goto cleanup;
	fmt = linetable_format_for_minor(minor);
	if (take_u8(&c) != 1 || take_u8(&c) != 3 || take_u8(&c) != minor || take_u8(&c) != fmt)
		goto cleanup;
	take(&c, take_u8(&c));
	ncode = take_u32(&c);
	if (c.bad || ncode == 0)
		goto cleanup;
	for (n = 0; n < ncode; n++) {
		err = check_code(&c, fmt, name, st);
		if (err)
			goto cleanup;
	}
	/* Trailing bytes would mean the reader and the writer disagree. */
	err = c.pos == c.len ? 0 : -EINVAL;
cleanup:
	if (err == -EINVAL)
		fprintf(stderr, "fixture %s is malformed near byte %zu\n", path, c.pos);
	free(data);
	return err;
}

static const struct {
	const char *name;
	int minor;
} fixtures[] = {
	{ "cpython-3.9.18", 9 },
	{ "cpython-3.10.13", 10 },
	{ "cpython-3.11.7", 11 },
	{ "cpython-3.11-debian", 11 },
	{ "cpython-3.12.1", 12 },
	{ "cpython-3.13.0", 13 },
};

static void test_fixtures(void)
{
	struct fixture_stats st;
	long total = 0;
	size_t i;

	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		const struct features *f = &st.feat;
		int err = check_fixture(fixtures[i].name, fixtures[i].minor, &st);

		CHECK_EQ_INT(err, 0);
		printf("linetable %s: %ld code objects, %ld offsets, %ld mismatches\n",
		       fixtures[i].name, st.codes, st.offsets, st.mismatches);
		CHECK(st.offsets > 100000);
		CHECK_EQ_INT(st.mismatches, 0);
		total += st.offsets;
		switch (linetable_format_for_minor(fixtures[i].minor)) {
		case LINETABLE_LNOTAB:
			CHECK(f->lnotab_neg > 0);
			CHECK(f->lnotab_split > 0);
			break;
		case LINETABLE_310:
			CHECK(f->t310_noline > 0);
			CHECK(f->t310_zero > 0);
			break;
		default:
			CHECK(f->loc_code[0] > 0);
			CHECK(f->loc_code[10] + f->loc_code[11] + f->loc_code[12] > 0);
			CHECK(f->loc_code[13] > 0);
			CHECK(f->loc_code[14] > 0);
			CHECK(f->loc_code[15] > 0);
			CHECK(f->loc_multibyte > 0);
			break;
		}
	}
	printf("linetable: %ld offsets checked against PyCode_Addr2Line\n", total);
}

/* Calls the decoder on an exact-size heap copy of tab. */
static int a2l(enum linetable_format fmt, const uint8_t *tab, size_t len, int first, int off)
{
	uint8_t *copy = malloc(len ? len : 1);
	int line;

	if (!copy)
		abort();
	if (len)
		memcpy(copy, tab, len);
	line = linetable_addr2line(fmt, copy, len, first, off);
	free(copy);
	return line;
}

static void test_format_for_minor(void)
{
	CHECK_EQ_INT(linetable_format_for_minor(8), 0);
	CHECK_EQ_INT(linetable_format_for_minor(9), LINETABLE_LNOTAB);
	CHECK_EQ_INT(linetable_format_for_minor(10), LINETABLE_310);
	CHECK_EQ_INT(linetable_format_for_minor(11), LINETABLE_LOCATIONS);
	CHECK_EQ_INT(linetable_format_for_minor(13), LINETABLE_LOCATIONS);
	CHECK_EQ_INT(linetable_format_for_minor(14), LINETABLE_LOCATIONS);
	CHECK_EQ_INT(linetable_format_for_minor(15), LINETABLE_LOCATIONS);
	CHECK_EQ_INT(linetable_format_for_minor(16), 0);
	CHECK_EQ_INT(linetable_format_for_minor(-1), 0);
	CHECK_EQ_INT(linetable_addr2line(0, NULL, 0, 5, 0), -1);
	CHECK_EQ_INT(linetable_addr2line(99, (const uint8_t *)"\x02\x01", 2, 5, 0), -1);
}

static void test_lnotab(void)
{
	/* +1 line at byte 2, +2 at byte 6, -3 at byte 8. */
	static const uint8_t t[] = { 2, 1, 4, 2, 2, 0xfd };
	/* A 300-line jump split over three pairs, then 300 bytes split over two. */
	static const uint8_t big[] = { 4, 127, 0, 127, 0, 46, 255, 0, 45, 1 };
	/* The same, backwards. */
	static const uint8_t back[] = { 4, 0x81, 0, 0x81, 0, 0xd2 };
	enum linetable_format f = LINETABLE_LNOTAB;

	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, -1), 10);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, INT_MIN), 10);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 0), 10);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 1), 10);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 2), 11);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 5), 11);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 6), 13);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 8), 10);
	/* 3.9 has no end: the last line holds. */
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 10, 1000), 10);
	CHECK_EQ_INT(a2l(f, big, sizeof(big), 1, 3), 1);
	CHECK_EQ_INT(a2l(f, big, sizeof(big), 1, 4), 301);
	CHECK_EQ_INT(a2l(f, big, sizeof(big), 1, 303), 301);
	CHECK_EQ_INT(a2l(f, big, sizeof(big), 1, 304), 302);
	CHECK_EQ_INT(a2l(f, back, sizeof(back), 400, 4), 100);
	/* Empty table: every offset is on the first line. */
	CHECK_EQ_INT(a2l(f, t, 0, 7, 0), 7);
	CHECK_EQ_INT(linetable_addr2line(f, NULL, 0, 7, 40), 7);
	/* Odd length: the lone last byte is ignored. */
	CHECK_EQ_INT(a2l(f, t, 5, 10, 8), 13);
	CHECK_EQ_INT(a2l(f, t, 1, 10, 8), 10);
}

static void test_310(void)
{
	/* [0,6) +0, [6,10) +1, [10,12) no line, [12,14) +2, then 0-size +127s and [14,18). */
	static const uint8_t t[] = { 6, 0, 4, 1, 2, 0x80, 2, 2, 0, 127, 0, 127, 4, 46 };
	enum linetable_format f = LINETABLE_310;

	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, -1), 5);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 0), 5);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 5), 5);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 6), 6);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 9), 6);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 10), -1);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 11), -1);
	/* A -128 entry leaves the running line alone. */
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 12), 8);
	/* Zero-size entries still add their deltas. */
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 14), 308);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 17), 308);
	/* Past the last range: no line. */
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 5, 18), -1);
	CHECK_EQ_INT(a2l(f, t, 0, 5, 0), -1);
	/* Truncated mid-pair: the half pair is ignored. */
	CHECK_EQ_INT(a2l(f, t, 3, 5, 6), -1);
	CHECK_EQ_INT(a2l(f, t, 4, 5, 6), 6);
}

static void test_locations(void)
{
	/*
	 * [0,2)   code 0, short form: line unchanged
	 * [2,6)   code 11, one-line form: +1
	 * [6,8)   code 15: no location, line kept for what follows
	 * [8,10)  code 13: svarint -3
	 * [10,16) code 14: svarint +200 (two bytes), end line 0, col+1 5, endcol+1 200
	 * [16,32) code 10, eight code units: +0
	 */
	static const uint8_t t[] = {
		0x80, 0x05, 0xd9, 0x04, 0x09, 0xf8, 0xe8, 0x07,
		0xf2, 0x50, 0x06, 0x00, 0x05, 0x48, 0x03, 0xd7, 0x01, 0x02,
	};
	enum linetable_format f = LINETABLE_LOCATIONS;

	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, -1), 100);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 0), 100);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 1), 100);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 2), 101);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 5), 101);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 6), -1);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 8), 98);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 10), 298);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 15), 298);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 16), 298);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 31), 298);
	CHECK_EQ_INT(a2l(f, t, sizeof(t), 100, 32), -1);
	/* Truncated inside the long form's varint: the entry still counts. */
	CHECK_EQ_INT(a2l(f, t, 10, 100, 10), 98 + 8);
	CHECK_EQ_INT(a2l(f, t, 9, 100, 10), 98);
	CHECK_EQ_INT(a2l(f, t, 0, 100, 0), -1);
	/* Leading payload bytes are skipped until an entry starts. */
	CHECK_EQ_INT(a2l(f, (const uint8_t *)"\x01\x7f\xd8\x00\x00", 5, 9, 0), 10);
}

static void test_saturation(void)
{
	/* Huge varints and deltas saturate instead of overflowing (UBSan would see it). */
	static const uint8_t huge_up[] = { 0xe8, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f };
	static const uint8_t huge_down[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x3f };
	static const uint8_t up[] = { 0, 127, 0, 127, 2, 127 };

	CHECK_EQ_INT(a2l(LINETABLE_LOCATIONS, huge_up, sizeof(huge_up), INT_MAX - 1, 0), INT_MAX);
	CHECK_EQ_INT(a2l(LINETABLE_LOCATIONS, huge_down, sizeof(huge_down), 1, 0), -1);
	CHECK_EQ_INT(a2l(LINETABLE_LNOTAB, up, sizeof(up), INT_MAX - 100, 0), INT_MAX);
	CHECK_EQ_INT(a2l(LINETABLE_310, up, sizeof(up), INT_MAX - 100, 0), INT_MAX);
	CHECK_EQ_INT(a2l(LINETABLE_310, (const uint8_t *)"\x02\x81", 2, 1, 0), -1);
	CHECK_EQ_INT(a2l(LINETABLE_310, (const uint8_t *)"\x02\x81", 2, INT_MIN, 0), -1);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 32);
}

/*
 * Random bytes, random lengths, every format and offset, plus every prefix of
 * one longer table: each call must stay inside its exact-size buffer (ASan)
 * and answer a line or -1.
 */
static void test_garbage(void)
{
	static const int firsts[] = { 1, 0, 1000, INT_MAX, -5 };
	long bad = 0, calls = 0;
	int round, fmt, off;
	size_t len, i;

	for (round = 0; round < 3000; round++) {
		size_t n = rng() % 97;
		uint8_t *t = malloc(n ? n : 1);
		int first = firsts[round % 5];

		if (!t)
			abort();
		for (i = 0; i < n; i++)
			t[i] = round % 4 == 0 ? 0x80 | rng() : rng();
		for (fmt = LINETABLE_LNOTAB; fmt <= LINETABLE_LOCATIONS; fmt++) {
			for (off = -2; off < (int)n * 16 + 4; off += 1 + (off > 64) * 7) {
				int line = linetable_addr2line(fmt, t, n, first, off);

				calls++;
				bad += off >= 0 && line < -1;
			}
			linetable_addr2line(fmt, t, n, first, INT_MAX);
		}
		free(t);
	}
	for (len = 0; len <= 64; len++) {
		uint8_t *t = malloc(len ? len : 1);

		if (!t)
			abort();
		for (i = 0; i < len; i++)
			t[i] = (uint8_t)(0xc0 + i * 37);
		for (fmt = LINETABLE_LNOTAB; fmt <= LINETABLE_LOCATIONS; fmt++)
			for (off = 0; off < 600; off += 2)
				bad += linetable_addr2line(fmt, t, len, 3, off) < -1;
		free(t);
	}
	CHECK(calls > 100000);
	CHECK_EQ_INT(bad, 0);
}

int main(void)
{
	RUN_TEST(test_format_for_minor);
	RUN_TEST(test_lnotab);
	RUN_TEST(test_310);
	RUN_TEST(test_locations);
	RUN_TEST(test_saturation);
	RUN_TEST(test_garbage);
	RUN_TEST(test_fixtures);
	return test_summary("linetable");
}
