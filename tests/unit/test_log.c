/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/base/log.c: the command the hints give is the one the user ran,
 * written so that a shell reads it back as that one word.
 */
#include <limits.h>
#include <string.h>

#include "testlib.h"
#include "base/log.h"

static void test_command(void)
{
	char long_name[PATH_MAX + 200];

	/* Until set, the installed name. */
	CHECK_EQ_STR(log_command(), "scalene-bpf");
	log_set_command("./scalene-bpf");
	CHECK_EQ_STR(log_command(), "./scalene-bpf");
	log_set_command("/usr/local/bin/scalene-bpf");
	CHECK_EQ_STR(log_command(), "/usr/local/bin/scalene-bpf");
	/* A space, a quote: single-quoted, a quote inside closed and reopened. */
	log_set_command("/home/me/my tools/scalene-bpf");
	CHECK_EQ_STR(log_command(), "'/home/me/my tools/scalene-bpf'");
	log_set_command("/opt/it's/scalene-bpf");
	CHECK_EQ_STR(log_command(), "'/opt/it'\\''s/scalene-bpf'");
	/* Nothing, or a name longer than any path: the last one stays. */
	log_set_command("");
	CHECK_EQ_STR(log_command(), "'/opt/it'\\''s/scalene-bpf'");
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	log_set_command(long_name);
	CHECK_EQ_STR(log_command(), "'/opt/it'\\''s/scalene-bpf'");
	long_name[10] = ' ';
	log_set_command(long_name);
	CHECK_EQ_STR(log_command(), "'/opt/it'\\''s/scalene-bpf'");
}

int main(void)
{
	RUN_TEST(test_command);
	return test_summary("log");
}
