/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/base/strtab.c: equal strings get one pointer (the profile compares file
 * and function names by address), and that pointer stays valid and unchanged
 * however much the table grows afterwards.
 */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"
#include "base/strtab.h"

#define MANY 100000

static void test_free_null(void)
{
	strtab__free(NULL);
	CHECK(1);
}

static void test_identity(void)
{
	struct strtab *t = strtab__new();
	char buf[16];
	const char *a, *b, *c, *e1, *e2;

	CHECK(t != NULL);
	if (!t)
		return;
	snprintf(buf, sizeof(buf), "%s", "main.py");
	a = strtab__intern(t, "main.py");
	b = strtab__intern(t, buf);
	c = strtab__intern(t, "main.pyc");
	CHECK(a != NULL && c != NULL);
	CHECK(a == b);
	CHECK(a != buf); /* a copy, not the caller's buffer */
	CHECK(a != c);
	CHECK_EQ_STR(a, "main.py");
	CHECK_EQ_STR(c, "main.pyc");
	/* The copy does not follow later changes to the caller's buffer. */
	buf[0] = 'X';
	CHECK_EQ_STR(a, "main.py");
	CHECK(strtab__intern(t, "main.py") == a);
	e1 = strtab__intern(t, "");
	e2 = strtab__intern(t, "");
	CHECK(e1 != NULL && e1 == e2);
	CHECK_EQ_STR(e1, "");
	strtab__free(t);
}

static void test_many_stable(void)
{
	struct strtab *t = strtab__new();
	const char **ptrs = calloc(MANY, sizeof(*ptrs));
	char buf[64];
	int i, bad = 0, same = 0;

	for (i = 0; i < MANY; i++) {
		snprintf(buf, sizeof(buf), "/app/module_%d.py", i);
		ptrs[i] = strtab__intern(t, buf);
		bad += ptrs[i] == NULL;
	}
	CHECK_EQ_INT(bad, 0);
	/* After all that growth: the same pointers, the same text. */
	for (i = 0; i < MANY; i++) {
		snprintf(buf, sizeof(buf), "/app/module_%d.py", i);
		bad += strtab__intern(t, buf) != ptrs[i];
		bad += strcmp(ptrs[i], buf) != 0;
	}
	CHECK_EQ_INT(bad, 0);
	/* Distinct strings, distinct pointers (spot check against neighbours). */
	for (i = 1; i < MANY; i++)
		same += ptrs[i] == ptrs[i - 1];
	CHECK_EQ_INT(same, 0);
	free(ptrs);
	strtab__free(t);
}

static void test_long_and_binary_ish(void)
{
	struct strtab *t = strtab__new();
	size_t n = 1 << 16;
	char *big = malloc(n + 1);
	const char *a, *b;

	memset(big, 'x', n);
	big[n] = '\0';
	a = strtab__intern(t, big);
	big[n - 1] = 'y';
	b = strtab__intern(t, big);
	CHECK(a != b);
	CHECK_EQ_INT(strlen(a), n);
	CHECK(a[n - 1] == 'x' && b[n - 1] == 'y');
	/* Bytes that are not UTF-8 are just bytes here. */
	CHECK(strtab__intern(t, "bad\xff\xfe") == strtab__intern(t, "bad\xff\xfe"));
	free(big);
	strtab__free(t);
}

int main(void)
{
	RUN_TEST(test_free_null);
	RUN_TEST(test_identity);
	RUN_TEST(test_many_stable);
	RUN_TEST(test_long_and_binary_ish);
	return test_summary("strtab");
}
