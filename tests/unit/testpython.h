/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The interpreters the unit tests run programs with, the same as the
 * end-to-end suite's (tests/e2e/e2e_helpers.py, INTERPRETERS): pyenv's
 * builds with a shared libpython, Debian's static 3.11 and Debian
 * unstable's static 3.14 and 3.15 (tools/python-sid).  One that is not installed is
 * skipped by the test, which says how to install it.
 */
#ifndef TESTPYTHON_H
#define TESTPYTHON_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct test_python {
	const char *name;    /* as the messages name it */
	const char *pyenv;   /* a pyenv version, or NULL: ... */
	const char *path;    /* ... an absolute path */
	const char *install; /* how to get it */
	int minor;
	bool is_static; /* the interpreter is in the executable (no libpython) */
};

static const struct test_python test_pythons[] __attribute__((unused)) = {
	{ "pyenv 3.9.18", "3.9.18", NULL, "pyenv install 3.9.18", 9, false },
	{ "pyenv 3.10.13", "3.10.13", NULL, "pyenv install 3.10.13", 10, false },
	{ "pyenv 3.11.7", "3.11.7", NULL, "pyenv install 3.11.7", 11, false },
	{ "pyenv 3.12.1", "3.12.1", NULL, "pyenv install 3.12.1", 12, false },
	{ "pyenv 3.13.0", "3.13.0", NULL, "pyenv install 3.13.0", 13, false },
	{ "Debian's 3.11", NULL, "/usr/bin/python3.11", "apt-get install python3.11", 11, true },
	{ "Debian unstable's 3.14", NULL, "/opt/python3.14-sid/usr/bin/python3.14",
	  "tools/python-sid 3.14", 14, true },
	{ "Debian unstable's 3.15", NULL, "/opt/python3.15-sid/usr/bin/python3.15",
	  "tools/python-sid 3.15", 15, true },
	{ "free-threaded 3.13t", NULL, "/opt/python3.13t/bin/python3.13t", "tools/python-ft 3.13",
	  13, true },
};

#define N_TEST_PYTHONS (sizeof(test_pythons) / sizeof(test_pythons[0]))

/* A pyenv version's interpreter: 0, or -ENOENT when it is not installed. */
static inline int test_pyenv_python(const char *version, char *out, size_t n)
{
	char cmd[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "pyenv prefix %s 2>/dev/null", version);
	p = popen(cmd, "r");
	if (!p || !fgets(out, (int)n, p)) {
		if (p)
			pclose(p);
		return -ENOENT;
	}
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
	strncat(out, "/bin/python3", n - strlen(out) - 1);
	return access(out, X_OK) ? -ENOENT : 0;
}

/* tp's interpreter in out: 0, or -ENOENT when it is not installed. */
static inline int test_python_find(const struct test_python *tp, char *out, size_t n)
{
	if (tp->pyenv)
		return test_pyenv_python(tp->pyenv, out, n);
	snprintf(out, n, "%s", tp->path);
	return access(out, X_OK) ? -ENOENT : 0;
}

/* The first installed of test_pythons with a minor from lo to hi: its index,
 * with its path in out; -ENOENT when there is none. */
static inline int test_python_between(int lo, int hi, char *out, size_t n)
{
	size_t i;

	for (i = 0; i < N_TEST_PYTHONS; i++) {
		if (test_pythons[i].minor >= lo && test_pythons[i].minor <= hi &&
		    !test_python_find(&test_pythons[i], out, n))
			return (int)i;
	}
	return -ENOENT;
}

#endif /* TESTPYTHON_H */
