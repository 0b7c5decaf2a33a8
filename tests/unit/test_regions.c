// SPDX-License-Identifier: BSD-2-Clause
/*
 * user/report/regions.c against Scalene itself: every tests/fixtures/regions/X.py
 * has next to it X.expected, what Scalene 2.4.0's own functions give for
 * each line (tools/regions-oracle.py writes them), and every line must
 * agree.  The fixtures must be there: a missing one fails.  Then the same
 * files with other newlines, f-strings in the 3.12 grammar (values checked
 * against Scalene's functions on CPython 3.12), and hostile text, each in a
 * heap buffer of exactly its length so that ASan sees any read past it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "report/regions.h"
#include "testlib.h"

#define FIXTURE_DIR "tests/fixtures/regions/"
#define FIXTURE_MAX (16u << 20)

/* Fixtures that must exist; any other X.py in the folder is checked as well. */
static const char *const required[] = {
	"edge_blank_ws",
	"edge_bom",
	"edge_clauses",
	"edge_continuations",
	"edge_decorators",
	"edge_deep99",
	"edge_elif_chain",
	"edge_headers",
	"edge_ifs",
	"edge_loops",
	"edge_match",
	"edge_nesting",
	"edge_noeol",
	"edge_oneliners",
	"edge_semicolons",
	"edge_strings",
	"edge_tabs",
	"invalid_decorator",
	"invalid_dedent",
	"invalid_else",
	"invalid_expected_block",
	"invalid_taberror",
	"invalid_too_deep",
	"invalid_try_alone",
	"invalid_unclosed_paren",
	"invalid_unexpected_indent",
	"invalid_unterminated_string",
	"stdlib_asyncio_tasks",
	"stdlib_bisect",
	"stdlib_contextlib",
	"stdlib_json_decoder",
	"stdlib_lib2to3_crlf",
	"stdlib_string",
	"stdlib_test_fstring",
	"stdlib_test_grammar",
	"stdlib_test_patma",
	"stdlib_textwrap",
	"stdlib_tokenize",
};

/* Reads a whole file into an exactly sized heap buffer; 0 or -errno. */
static int read_file(const char *path, char **data, size_t *len)
{
	char *buf = NULL;
	long size;
	FILE *f;
	int err = 0;

	f = fopen(path, "rb");
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		err = -EIO;
		goto cleanup;
	}
	if ((unsigned long)size > FIXTURE_MAX) {
		err = -EFBIG;
		goto cleanup;
	}
	buf = malloc(size ? (size_t)size : 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		err = -EIO;
		goto cleanup;
	}
	*data = buf;
	*len = (size_t)size;
	buf = NULL;
cleanup:
	free(buf);
	fclose(f);
	return err;
}

/* Every line's spans hold the line and stay within the file. */
static void check_invariants(const struct regions *r, const char *what)
{
	const struct line_regions *lr;
	int n = regions__nlines(r), l, bad = 0;

	for (l = 1; l <= n && !bad; l++) {
		lr = regions__line(r, l);
		if (!lr) {
			bad = l;
			break;
		}
		if (lr->start_region < 1 || lr->start_region > l || lr->end_region < l ||
		    lr->end_region > n)
			bad = l;
		if (lr->start_outermost_loop < 1 || lr->start_outermost_loop > l ||
		    lr->end_outermost_loop < l || lr->end_outermost_loop > n)
			bad = l;
		if (!(lr->start_function == 0 && lr->end_function == 0) &&
		    (lr->start_function < 1 || lr->start_function > l || lr->end_function < l ||
		     lr->end_function > n))
			bad = l;
	}
	if (bad)
		fprintf(stderr, "%s: line %d breaks an invariant\n", what, bad);
	CHECK(!bad);
	CHECK(!regions__line(r, 0));
	CHECK(!regions__line(r, n + 1));
}

static int is_trivial(const struct regions *r)
{
	const struct line_regions *lr;
	int l;

	for (l = 1; l <= regions__nlines(r); l++) {
		lr = regions__line(r, l);
		if (lr->start_region != l || lr->end_region != l || lr->start_outermost_loop != l ||
		    lr->end_outermost_loop != l || lr->start_function || lr->end_function)
			return 0;
	}
	return 1;
}

/* Compares against the oracle's lines; returns the number of lines compared, or -1. */
static long compare_expected(const struct regions *r, const char *exp, size_t len, const char *name)
{
	const struct line_regions *lr;
	int v[7], l = 0, consumed, mismatches = 0;
	char *copy, *line, *save = NULL;

	copy = malloc(len + 1);
	if (!copy)
		return -1;
	memcpy(copy, exp, len);
	copy[len] = '\0';
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		l++;
		if (sscanf(line, "%d %d %d %d %d %d %d%n", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			   &v[6], &consumed) != 7 ||
		    v[0] != l) {
			fprintf(stderr, "%s.expected:%d: malformed line\n", name, l);
			mismatches++;
			break;
		}
		lr = regions__line(r, l);
		if (!lr || lr->start_region != v[1] || lr->end_region != v[2] ||
		    lr->start_outermost_loop != v[3] || lr->end_outermost_loop != v[4] ||
		    lr->start_function != v[5] || lr->end_function != v[6]) {
			if (mismatches++ < 5 && lr)
				fprintf(stderr, "%s.py:%d: got %d %d %d %d %d %d, Scalene %s\n",
					name, l, lr->start_region, lr->end_region,
					lr->start_outermost_loop, lr->end_outermost_loop,
					lr->start_function, lr->end_function, line);
			else if (mismatches < 5)
				fprintf(stderr, "%s.py:%d: no such line\n", name, l);
		}
	}
	free(copy);
	if (l != regions__nlines(r)) {
		fprintf(stderr, "%s: %d lines, Scalene %d\n", name, regions__nlines(r), l);
		mismatches++;
	}
	return mismatches ? -1 : l;
}

/* Replaces every "\n" with nl ("\r\n" or "\r"); NULL on failure. */
static char *renewline(const char *src, size_t len, const char *nl, size_t *out_len)
{
	size_t i, n = 0, nll = strlen(nl);
	char *out;

	out = malloc(len * nll + 1);
	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (src[i] == '\n') {
			memcpy(out + n, nl, nll);
			n += nll;
		} else {
			out[n++] = src[i];
		}
	}
	*out_len = n;
	return out;
}

static int same_regions(const struct regions *a, const struct regions *b)
{
	int l;

	if (regions__nlines(a) != regions__nlines(b))
		return 0;
	for (l = 1; l <= regions__nlines(a); l++) {
		if (memcmp(regions__line(a, l), regions__line(b, l), sizeof(struct line_regions)))
			return 0;
	}
	return 1;
}

/* The fixture read with "\r\n" and with "\r" newlines gives the same values. */
static void check_newline_variants(const char *src, size_t len, const struct regions *lf,
				   const char *name)
{
	static const char *const nls[] = { "\r\n", "\r" };
	struct regions *r;
	size_t i, n;
	char *alt;

	if (memchr(src, '\r', len))
		return; /* already has CRs: converting would change its lines */
	for (i = 0; i < 2; i++) {
		alt = renewline(src, len, nls[i], &n);
		CHECK(alt != NULL);
		if (!alt)
			return;
		r = regions__compute(alt, n);
		CHECK(r != NULL);
		if (r && !same_regions(lf, r)) {
			fprintf(stderr, "%s: differs with %s newlines\n", name, i ? "CR" : "CRLF");
			CHECK(0);
		}
		regions__free(r);
		free(alt);
	}
}

static int check_fixture(const char *name, long *lines)
{
	char path[512], *src = NULL, *exp = NULL;
	size_t src_len, exp_len;
	struct regions *r = NULL;
	long n;
	int err;

	if (snprintf(path, sizeof(path), FIXTURE_DIR "%s.py", name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = read_file(path, &src, &src_len);
	if (err)
		goto cleanup;
	if (snprintf(path, sizeof(path), FIXTURE_DIR "%s.expected", name) >= (int)sizeof(path)) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	err = read_file(path, &exp, &exp_len);
	if (err)
		goto cleanup;
	r = regions__compute(src, src_len);
	if (!r) {
		err = -errno;
		goto cleanup;
	}
	check_invariants(r, name);
	n = compare_expected(r, exp, exp_len, name);
	CHECK(n >= 0);
	if (n > 0)
		*lines += n;
	/* A fixture named invalid_* must fall back, any other must be understood. */
	if (!strncmp(name, "invalid_", 8)) {
		CHECK(!regions__parsed(r));
		CHECK(is_trivial(r));
	} else {
		CHECK(regions__parsed(r));
	}
	check_newline_variants(src, src_len, r, name);
cleanup:
	if (err)
		fprintf(stderr, "%s: %s\n", name, strerror(-err));
	regions__free(r);
	free(exp);
	free(src);
	return err;
}

static void test_required_fixtures(void)
{
	long lines = 0;
	size_t i;

	for (i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		CHECK_EQ_INT(check_fixture(required[i], &lines), 0);
	CHECK(lines > 10000);
	printf("regions: %zu required fixtures, %ld lines agree with Scalene\n",
	       sizeof(required) / sizeof(required[0]), lines);
}

/* Any other fixture in the folder is checked too. */
static void test_other_fixtures(void)
{
	char name[256];
	struct dirent *de;
	size_t i, n;
	long lines = 0;
	DIR *d;
	int known;

	d = opendir(FIXTURE_DIR);
	CHECK(d != NULL);
	if (!d)
		return;
	while ((de = readdir(d))) {
		n = strlen(de->d_name);
		if (n < 4 || n - 3 >= sizeof(name) || strcmp(de->d_name + n - 3, ".py"))
			continue;
		memcpy(name, de->d_name, n - 3);
		name[n - 3] = '\0';
		for (known = 0, i = 0; i < sizeof(required) / sizeof(required[0]); i++)
			known |= !strcmp(required[i], name);
		if (!known)
			CHECK_EQ_INT(check_fixture(name, &lines), 0);
	}
	closedir(d);
}

/* Computes the regions of a string held in an exactly sized heap buffer. */
static struct regions *compute(const char *text, size_t len)
{
	struct regions *r;
	char *buf;

	buf = malloc(len ? len : 1);
	if (!buf)
		return NULL;
	memcpy(buf, text, len);
	r = regions__compute(len ? buf : NULL, len);
	free(buf);
	return r;
}

static struct regions *compute_str(const char *text)
{
	return compute(text, strlen(text));
}

/* Checks every line against rows of "sr er so eo sf ef". */
static void check_rows(const struct regions *r, const int (*rows)[6], int n, const char *what)
{
	const struct line_regions *lr;
	int l;

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(regions__nlines(r), n);
	for (l = 1; l <= n && l <= regions__nlines(r); l++) {
		lr = regions__line(r, l);
		if (lr->start_region != rows[l - 1][0] || lr->end_region != rows[l - 1][1] ||
		    lr->start_outermost_loop != rows[l - 1][2] ||
		    lr->end_outermost_loop != rows[l - 1][3] ||
		    lr->start_function != rows[l - 1][4] || lr->end_function != rows[l - 1][5]) {
			fprintf(stderr, "%s: line %d differs\n", what, l);
			CHECK(0);
		}
	}
}

static void test_line_counting(void)
{
	static const struct {
		const char *text;
		int nlines;
	} cases[] = {
		{ "", 0 },	{ "x", 1 },    { "x\n", 1 },	  { "\n", 1 },
		{ "\r", 1 },	{ "\r\n", 1 }, { "a\r\rb", 3 },	  { "a\r\n\nb\r", 3 },
		{ "a\n\n", 2 }, { "   ", 1 },  { "\n\r\n\r", 3 }, { "x = 1\r\n  \r\n", 2 },
	};
	struct regions *r;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = compute_str(cases[i].text);
		CHECK(r != NULL);
		if (!r)
			continue;
		CHECK_EQ_INT(regions__nlines(r), cases[i].nlines);
		check_invariants(r, "line counting");
		regions__free(r);
	}
	r = regions__compute(NULL, 0);
	CHECK(r != NULL);
	CHECK_EQ_INT(regions__nlines(r), 0);
	CHECK(!regions__line(r, 1));
	regions__free(r);
	regions__free(NULL);
	CHECK_EQ_INT(regions__nlines(NULL), 0);
	CHECK(!regions__line(NULL, 1));
}

/* f-strings in the 3.12 grammar; the values are those of Scalene's functions on CPython 3.12.1. */
static void test_pep701_fstrings(void)
{
	static const char a[] = "def f(d):\n"
				"    s = f\"{d[\"k\"]}\"\n"
				"    if f\"{\"#\"}\" == s:\n"
				"        return 1\n"
				"    for x in f\"{\n"
				"        d\n"
				"    }\":\n"
				"        pass\n"
				"    return f\"\"\"{d # a comment\n"
				"    }\"\"\"\n";
	static const int a_rows[][6] = {
		{ 1, 10, 1, 10, 1, 10 },  { 1, 10, 2, 2, 1, 10 }, { 1, 10, 3, 4, 1, 10 },
		{ 1, 10, 4, 4, 1, 10 },	  { 5, 8, 5, 8, 1, 10 },  { 5, 8, 5, 8, 1, 10 },
		{ 5, 8, 5, 8, 1, 10 },	  { 5, 8, 5, 8, 1, 10 },  { 1, 10, 9, 9, 1, 10 },
		{ 1, 10, 10, 10, 1, 10 },
	};
	static const char b[] = "class C:\n"
				"    def m(self, items):\n"
				"        while items:\n"
				"            t = f'{items.pop()!r:{'>'}{10}} {f'{'nested'}'}'\n"
				"        return f\"{'\\n'.join(items)}\"\n";
	static const int b_rows[][6] = {
		{ 1, 5, 1, 5, 1, 5 }, { 2, 5, 2, 5, 2, 5 }, { 3, 4, 3, 4, 2, 5 },
		{ 3, 4, 3, 4, 2, 5 }, { 2, 5, 5, 5, 2, 5 },
	};
	struct regions *r;

	r = compute_str(a);
	check_rows(r, a_rows, 10, "pep701 a");
	CHECK(regions__parsed(r));
	regions__free(r);
	r = compute_str(b);
	check_rows(r, b_rows, 5, "pep701 b");
	CHECK(regions__parsed(r));
	regions__free(r);
}

/* Text that is not Python falls back to the trivial values, whole. */
static void test_unparseable(void)
{
	static const char *const texts[] = {
		"def f():\n    s = '''never closed\n    return 1\n",
		"def f():\n    s = 'open\n    return 1\n",
		"x = (1,\n",
		"x = 1)\n",
		"x = [1)\n",
		"def f():\nreturn 1\n",
		"def f():\n    return 1\n  x = 2\n",
		"if x:\n\ty = 1\n        z = 2\n",
		"x = 1 \\\n",
		"x = 1 \\ y\n",
		"else:\n    pass\n",
		"try:\n    pass\nx = 1\n",
		"@d\n\nx = 1\n",
		"async x\n",
		"x = 1;;\n",
		"if x; y:\n    pass\n",
		"x = $\n",
		"x = `1`\n",
		"x = f'{a}}'\n",
		"\xc2\xa0x = 1\n",
		"match x:\n    y = 1\n",
		"if x:\n",
		"for x in y: pass\n    z = 1\n",
		"x = 1\x0b\n",
	};
	struct regions *r;
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		r = compute_str(texts[i]);
		CHECK(r != NULL);
		if (!r)
			continue;
		if (regions__parsed(r) || !is_trivial(r)) {
			fprintf(stderr, "unparseable text %zu was understood\n", i);
			CHECK(0);
		}
		regions__free(r);
	}
}

static void test_nul_bytes(void)
{
	static const char text[] = "def f():\n    for i in x:\n        y\0 = 1\n";
	struct regions *r;

	r = compute(text, sizeof(text) - 1);
	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_INT(regions__nlines(r), 3);
	CHECK(!regions__parsed(r));
	CHECK(is_trivial(r));
	regions__free(r);
}

static void test_bom(void)
{
	static const char plain[] = "def f():\n    for i in x:\n        pass\n";
	static const char bom[] = "\xef\xbb\xbf"
				  "def f():\n    for i in x:\n        pass\n";
	struct regions *a, *b;

	a = compute_str(plain);
	b = compute_str(bom);
	CHECK(a && b);
	if (a && b) {
		CHECK(regions__parsed(b));
		CHECK(same_regions(a, b));
	}
	regions__free(a);
	regions__free(b);
}

/* Pseudo-random bytes from a fixed seed: never a crash, always sane values. */
static void test_binary(void)
{
	static const char alphabet[] = "\n\r\t \\:;#'\"()[]{}fbrFBR@=xif elsdoc\x0c\x80\xff\0";
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct regions *r;
	size_t len, i;
	char *buf;
	int round;

	for (round = 0; round < 400; round++) {
		len = (size_t)(round * 37 % 4096);
		buf = malloc(len ? len : 1);
		CHECK(buf != NULL);
		if (!buf)
			return;
		for (i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			/* Half the rounds any byte, half bytes that drive the scanner. */
			if (round & 1)
				buf[i] = (char)(x >> 24);
			else
				buf[i] = alphabet[(x >> 24) % (sizeof(alphabet) - 1)];
		}
		r = regions__compute(buf, len);
		CHECK(r != NULL);
		if (r)
			check_invariants(r, "binary");
		regions__free(r);
		free(buf);
	}
}

/* Every prefix of a real file (cut strings, brackets, blocks) at a stride. */
static void test_truncations(void)
{
	struct regions *r;
	char *src = NULL, *buf;
	size_t len, cut;
	int err;

	err = read_file(FIXTURE_DIR "edge_strings.py", &src, &len);
	CHECK_EQ_INT(err, 0);
	if (err)
		return;
	for (cut = 0; cut <= len; cut += 7) {
		buf = malloc(cut ? cut : 1);
		CHECK(buf != NULL);
		if (!buf)
			break;
		memcpy(buf, src, cut);
		r = regions__compute(buf, cut);
		CHECK(r != NULL);
		if (r)
			check_invariants(r, "truncation");
		regions__free(r);
		free(buf);
	}
	free(src);
}

static char *repeat(const char *head, const char *unit, size_t count, const char *tail, size_t *len)
{
	size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail), i;
	char *buf;

	buf = malloc(hl + ul * count + tl + 1);
	if (!buf)
		return NULL;
	memcpy(buf, head, hl);
	for (i = 0; i < count; i++)
		memcpy(buf + hl + i * ul, unit, ul);
	memcpy(buf + hl + ul * count, tail, tl);
	*len = hl + ul * count + tl;
	return buf;
}

static void check_long(const char *head, const char *unit, size_t count, const char *tail,
		       int nlines, int parsed)
{
	struct regions *r;
	size_t len;
	char *buf;

	buf = repeat(head, unit, count, tail, &len);
	CHECK(buf != NULL);
	if (!buf)
		return;
	r = regions__compute(buf, len);
	CHECK(r != NULL);
	if (r) {
		CHECK_EQ_INT(regions__nlines(r), nlines);
		CHECK_EQ_INT(regions__parsed(r), parsed);
		check_invariants(r, head);
	}
	regions__free(r);
	free(buf);
}

static void test_long_lines(void)
{
	/* 1 MB on one line, a few ways. */
	check_long("x = 1", " + 1", 1 << 18, "", 1, 1);
	check_long("x = 1", "; y = 2", 150000, "\n", 1, 1);
	check_long("s = '", "a", 1 << 20, "'\n", 1, 1);
	check_long("s = '", "a", 1 << 20, "", 1, 0);
	check_long("x = ", "(", 1 << 20, "", 1, 0);
	check_long("# ", "#", 1 << 20, "", 1, 1);
	check_long("", " ", 1 << 20, "x = 1", 1, 0);
	/* An unterminated triple quote swallowing many lines. */
	check_long("def f():\n    s = \"\"\"", "line\n", 100000, "", 100001, 0);
	/* Many lines. */
	check_long("def f():\n", "    x = 1\n", 200000, "", 200001, 1);
}

/* Deep indentation: 99 levels are Python, 100 are not (CPython's MAXINDENT). */
static void test_deep_indentation(void)
{
	size_t cap = 10000 * 10000 / 2 + 10000 * 8, len = 0;
	struct regions *r;
	char *buf;
	int depth, i;

	buf = malloc(cap);
	CHECK(buf != NULL);
	if (!buf)
		return;
	for (depth = 0; depth < 10000; depth++) {
		memset(buf + len, ' ', (size_t)depth);
		len += (size_t)depth;
		memcpy(buf + len, "if x:\n", 6);
		len += 6;
		if (depth == 98 || depth == 99 || depth == 9999) {
			/* a body for the innermost header */
			size_t body = len;

			memset(buf + body, ' ', (size_t)depth + 1);
			memcpy(buf + body + depth + 1, "pass\n", 5);
			r = regions__compute(buf, body + depth + 6);
			CHECK(r != NULL);
			if (r) {
				CHECK_EQ_INT(regions__nlines(r), depth + 2);
				CHECK_EQ_INT(regions__parsed(r), depth < 99);
				check_invariants(r, "deep indentation");
				/* Each header's outermost span is its own if, to the end. */
				for (i = 1; depth == 98 && i <= 100; i++) {
					CHECK_EQ_INT(regions__line(r, i)->start_outermost_loop, i);
					CHECK_EQ_INT(regions__line(r, i)->end_outermost_loop, 100);
				}
			}
			regions__free(r);
		}
	}
	free(buf);
}

/* A long elif chain is an If nested in an If 20000 times: no recursion limit here. */
static void test_elif_chain(void)
{
	const struct line_regions *lr;
	struct regions *r;
	size_t len;
	char *buf;

	buf = repeat("def f(v):\n    for i in v:\n        if i == 0:\n            pass\n",
		     "        elif i:\n            pass\n", 20000, "    return v\n", &len);
	CHECK(buf != NULL);
	if (!buf)
		return;
	r = regions__compute(buf, len);
	CHECK(r != NULL);
	if (r) {
		CHECK(regions__parsed(r));
		CHECK_EQ_INT(regions__nlines(r), 40005);
		/* The last elif's body: in the loop (2..40004) and the function (1..40005). */
		lr = regions__line(r, 40004);
		CHECK_EQ_INT(lr->start_region, 2);
		CHECK_EQ_INT(lr->end_region, 40004);
		CHECK_EQ_INT(lr->start_outermost_loop, 2);
		CHECK_EQ_INT(lr->end_outermost_loop, 40004);
		CHECK_EQ_INT(lr->start_function, 1);
		CHECK_EQ_INT(lr->end_function, 40005);
		lr = regions__line(r, 40005);
		CHECK_EQ_INT(lr->start_region, 1);
		CHECK_EQ_INT(lr->start_outermost_loop, 40005);
	}
	regions__free(r);
	free(buf);
}

int main(void)
{
	RUN_TEST(test_required_fixtures);
	RUN_TEST(test_other_fixtures);
	RUN_TEST(test_line_counting);
	RUN_TEST(test_pep701_fstrings);
	RUN_TEST(test_unparseable);
	RUN_TEST(test_nul_bytes);
	RUN_TEST(test_bom);
	RUN_TEST(test_binary);
	RUN_TEST(test_truncations);
	RUN_TEST(test_long_lines);
	RUN_TEST(test_deep_indentation);
	RUN_TEST(test_elif_chain);
	return test_summary("regions");
}
