// SPDX-License-Identifier: BSD-2-Clause
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

static int log_level = LOG_WARN;
static char command[PATH_MAX + 64] = "scalene-bpf";

void log_set_command(const char *argv0)
{
	char quoted[sizeof(command)];
	size_t n = 0;
	const char *p;

	if (!argv0 || !argv0[0])
		return;
	if (!argv0[strspn(argv0, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789_./+-=:,@")]) {
		if (strlen(argv0) < sizeof(command))
			memcpy(command, argv0, strlen(argv0) + 1);
		return;
	}
	/* Single quotes, each one inside written '\''; a name too long for
	 * that leaves the default. */
	quoted[n++] = '\'';
	for (p = argv0; *p; p++) {
		if (n + 6 > sizeof(quoted))
			return;
		if (*p == '\'') {
			memcpy(quoted + n, "'\\''", 4);
			n += 4;
		} else {
			quoted[n++] = *p;
		}
	}
	quoted[n++] = '\'';
	quoted[n] = '\0';
	memcpy(command, quoted, n + 1);
}

const char *log_command(void)
{
	return command;
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	fputs("scalene-bpf: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}
