/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A tiny test harness shared by every unit test program: each test is a
 * function; CHECK() records a failure with its location and keeps going so
 * that one run reports every broken expectation.  Each program prints one
 * "name: N passed, N failed" line; tools/run-tests adds them up.
 */
#ifndef TESTLIB_H
#define TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int t_checks_failed;
static int t_tests_passed, t_tests_failed, t_tests_skipped;
static int t_skip_current __attribute__((unused));

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                                 \
			t_checks_failed++;                                              \
		}                                                                       \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                \
	do {                                                                              \
		long long _a = (long long)(a), _b = (long long)(b);                       \
		if (_a != _b) {                                                           \
			fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__,   \
				__LINE__, #a, _a, _b);                                    \
			t_checks_failed++;                                                \
		}                                                                         \
	} while (0)

#define CHECK_EQ_STR(a, b)                                                               \
	do {                                                                             \
		const char *_a = (a), *_b = (b);                                         \
		if (!_a || !_b || strcmp(_a, _b)) {                                      \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__, \
				__LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)");   \
			t_checks_failed++;                                               \
		}                                                                        \
	} while (0)

#define RUN_TEST(fn)                                                    \
	do {                                                            \
		int _before = t_checks_failed;                          \
		t_skip_current = 0;                                     \
		fn();                                                   \
		if (t_checks_failed != _before) {                       \
			fprintf(stderr, "FAIL %s\n", #fn);              \
			t_tests_failed++;                               \
		} else if (t_skip_current) {                            \
			t_tests_skipped++;                              \
		} else {                                                \
			t_tests_passed++;                               \
		}                                                       \
	} while (0)

/* Something a test needs is not on this machine (an interpreter): says
 * what and why on stdout, counts one skip.  SKIP_TEST leaves the test
 * (counted as skipped, not passed); SKIP_PART goes on with the rest of it. */
#define SKIP_PART(...)                                  \
	do {                                            \
		printf("SKIPPED %s: ", __func__);       \
		printf(__VA_ARGS__);                    \
		printf("\n");                           \
		t_tests_skipped++;                      \
	} while (0)

#define SKIP_TEST(...)                                  \
	do {                                            \
		printf("SKIPPED %s: ", __func__);       \
		printf(__VA_ARGS__);                    \
		printf("\n");                           \
		t_skip_current = 1;                     \
		return;                                 \
	} while (0)

/* What a function prints to a stream, in memory: each call frees the texts
 * of the last and opens *fo and *fe anew; after fclose() of both, *out and
 * *err hold what was written (NUL-terminated). */
static inline void test_memstreams(char **out, size_t *outlen, char **err, size_t *errlen,
				   FILE **fo, FILE **fe)
{
	free(*out);
	free(*err);
	*out = *err = NULL;
	*fo = open_memstream(out, outlen);
	*fe = open_memstream(err, errlen);
}

/* What is written to file descriptor 2 (stderr, and what C code under test
 * writes there directly) between test_stderr_begin and test_stderr_end. */
struct test_stderr {
	FILE *tmp;
	int saved;
};

static inline void test_stderr_begin(struct test_stderr *c)
{
	c->tmp = tmpfile();
	c->saved = c->tmp ? dup(2) : -1;
	fflush(stderr);
	if (c->saved >= 0)
		dup2(fileno(c->tmp), 2);
}

/* The text in out (n bytes at most, NUL-terminated; "(stderr not
 * captured)" when it could not be). */
static inline void test_stderr_end(struct test_stderr *c, char *out, size_t n)
{
	size_t len;

	fflush(stderr);
	if (c->saved < 0) {
		snprintf(out, n, "(stderr not captured)");
		if (c->tmp)
			fclose(c->tmp);
		return;
	}
	dup2(c->saved, 2);
	close(c->saved);
	rewind(c->tmp);
	len = fread(out, 1, n - 1, c->tmp);
	out[len] = '\0';
	fclose(c->tmp);
}

/* Prints the summary line and returns the process exit status. */
static inline int test_summary(const char *suite)
{
	if (t_tests_skipped)
		printf("%s: %d passed, %d failed, %d skipped\n", suite, t_tests_passed,
		       t_tests_failed, t_tests_skipped);
	else
		printf("%s: %d passed, %d failed\n", suite, t_tests_passed, t_tests_failed);
	return t_tests_failed ? 1 : 0;
}

#endif /* TESTLIB_H */
