/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/cli/options.c: the command line and the config file into struct options,
 * without side effects.  Every malformed input must come back as -EINVAL with
 * a message, never as a half-parsed command.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testlib.h"
#include "cli/fleet.h"
#include "cli/options.h"

#define MAX_ARGS 32

/* The message stream of one parse. */
static char *msg;
static size_t msglen;

/* Every argument vector stays allocated until the end, as main's would:
 * nothing a parse leaves behind can point into reused memory. */
static char **kept[512];
static int nkept;

/* Parses the NULL-terminated arguments (after the program name). */
static int parse(struct options *o, ...)
{
	char **argv = calloc(MAX_ARGS + 1, sizeof(char *));
	FILE *err;
	va_list ap;
	const char *a;
	int argc = 0, ret;

	if (nkept < (int)(sizeof(kept) / sizeof(kept[0])))
		kept[nkept++] = argv;
	argv[argc++] = strdup("scalene-bpf");
	va_start(ap, o);
	while ((a = va_arg(ap, const char *)) != NULL && argc < MAX_ARGS)
		argv[argc++] = strdup(a);
	va_end(ap);
	argv[argc] = NULL;
	free(msg);
	msg = NULL;
	err = open_memstream(&msg, &msglen);
	ret = options_parse(argc, argv, o, err);
	fclose(err);
	return ret;
}

static void free_kept(void)
{
	int i, j;

	for (i = 0; i < nkept; i++) {
		for (j = 0; kept[i][j]; j++)
			free(kept[i][j]);
		free(kept[i]);
	}
}

#define CHECK_MSG(needle)                                                                 \
	do {                                                                              \
		if (!msg || !strstr(msg, needle)) {                                       \
			fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, \
				__LINE__, msg ? msg : "(none)", needle);                  \
			t_checks_failed++;                                                \
		}                                                                         \
	} while (0)

/* A failed parse says why, on one line or more, and nothing else matters. */
#define CHECK_REJECTED(ret)                   \
	do {                                  \
		CHECK_EQ_INT((ret), -EINVAL); \
		CHECK(msg &&msglen > 0);      \
	} while (0)

static void test_defaults_and_run(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "prog.py", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_RUN);
	CHECK_EQ_INT(o.argc, 1);
	CHECK_EQ_STR(o.argv[0], "prog.py");
	CHECK(o.argv[1] == NULL);
	CHECK(!o.raw_command);
	CHECK_EQ_INT(o.rate_hz, DEFAULT_RATE_HZ);
	CHECK(o.cpu_percent_threshold == 1.0);
	CHECK_EQ_STR(o.python, "python3");
	CHECK(o.outfile == NULL);
	CHECK_EQ_INT(o.pid, 0);
	CHECK_EQ_INT(o.verbose, 0);
	options_free(&o);
}

static void test_run_options(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "-o", "out.json", "--python", "python3.12", "--rate", "499",
			   "--cpu-only", "--profile-all", "--idle", "--no-follow",
			   "--cpu-percent-threshold", "0.5", "--profile-interval", "2.5", "-vv",
			   "--profile-only", "src/,lib", "--profile-only", "extra",
			   "--profile-exclude", "tests", "prog.py", NULL),
		     0);
	CHECK_EQ_INT(o.cmd, CMD_RUN);
	CHECK_EQ_STR(o.outfile, "out.json");
	CHECK_EQ_STR(o.python, "python3.12");
	CHECK_EQ_INT(o.rate_hz, 499);
	CHECK(o.cpu_only && o.profile_all && o.idle && o.no_follow);
	CHECK(o.cpu_percent_threshold == 0.5);
	CHECK(o.profile_interval == 2.5);
	CHECK_EQ_INT(o.verbose, 2);
	CHECK_EQ_INT(o.nprofile_only, 3);
	if (o.nprofile_only == 3) {
		CHECK_EQ_STR(o.profile_only[0], "src/");
		CHECK_EQ_STR(o.profile_only[1], "lib");
		CHECK_EQ_STR(o.profile_only[2], "extra");
	}
	CHECK_EQ_INT(o.nprofile_exclude, 1);
	CHECK_EQ_STR(o.argv[0], "prog.py");
	options_free(&o);

	/* The --name=value spelling. */
	CHECK_EQ_INT(parse(&o, "run", "--outfile=x.json", "--rate=100", "p.py", NULL), 0);
	CHECK_EQ_STR(o.outfile, "x.json");
	CHECK_EQ_INT(o.rate_hz, 100);
	options_free(&o);

	/* --native-unwind: how --native's stacks are unwound; it implies
	 * --native. */
	CHECK_EQ_INT(parse(&o, "run", "--native", "p.py", NULL), 0);
	CHECK(o.native && !o.native_unwind_bpf);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "run", "--native-unwind", "bpf", "p.py", NULL), 0);
	CHECK(o.native && o.native_unwind_bpf);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "run", "--native-unwind=copy", "p.py", NULL), 0);
	CHECK(o.native && !o.native_unwind_bpf);
	options_free(&o);
	CHECK_REJECTED(parse(&o, "run", "--native-unwind", "dwarf", "p.py", NULL));
	CHECK(strstr(msg, "--native-unwind") != NULL);
}

/* Short options first: getopt_long reports no long-option index for them. */
static void test_short_options_alone(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "-o", "a.json", "-v", "prog.py", NULL), 0);
	CHECK_EQ_STR(o.outfile, "a.json");
	CHECK_EQ_INT(o.verbose, 1);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "-v", "--pid", "42", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_ATTACH);
	CHECK_EQ_INT(o.verbose, 1);
	options_free(&o);
}

static void test_program_options_belong_to_program(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "--cpu-only", "prog.py", "-o", "theirs.json", "--rate", "x",
			   "--bogus", "-v", NULL),
		     0);
	CHECK(o.outfile == NULL);
	CHECK_EQ_INT(o.verbose, 0);
	CHECK(o.cpu_only);
	CHECK_EQ_INT(o.argc, 7);
	CHECK_EQ_STR(o.argv[0], "prog.py");
	CHECK_EQ_STR(o.argv[1], "-o");
	CHECK_EQ_STR(o.argv[6], "-v");
	CHECK(!o.raw_command);
	options_free(&o);
}

static void test_double_dash(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "-o", "p.json", "--", "python3.12", "-m", "pkg.tool",
			   "--flag", NULL),
		     0);
	CHECK(o.raw_command);
	CHECK_EQ_INT(o.argc, 4);
	CHECK_EQ_STR(o.argv[0], "python3.12");
	CHECK_EQ_STR(o.argv[3], "--flag");
	CHECK_EQ_STR(o.outfile, "p.json");
	options_free(&o);

	/* "--" right after run. */
	CHECK_EQ_INT(parse(&o, "run", "--", "./tool.py", NULL), 0);
	CHECK(o.raw_command);
	CHECK_EQ_STR(o.argv[0], "./tool.py");
	options_free(&o);

	/* A "--" that belongs to the program is the program's. */
	CHECK_EQ_INT(parse(&o, "run", "prog.py", "--", "x", NULL), 0);
	CHECK(!o.raw_command);
	CHECK_EQ_INT(o.argc, 3);
	CHECK_EQ_STR(o.argv[1], "--");
	options_free(&o);

	/* Nothing after "--". */
	CHECK_REJECTED(parse(&o, "run", "--", NULL));
	CHECK_REJECTED(parse(&o, "run", NULL));
	CHECK_MSG("no program");
}

static void test_attach(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "--pid", "1234", "--duration", "10", "-o", "a.json", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_ATTACH);
	CHECK_EQ_INT(o.pid, 1234);
	CHECK(o.duration == 10);
	CHECK_EQ_STR(o.outfile, "a.json");
	options_free(&o);

	CHECK_REJECTED(parse(&o, "--pid", "1234", "extra", NULL));
	CHECK_MSG("extra");
	CHECK_REJECTED(parse(&o, "run", "--pid", "1234", "prog.py", NULL));
	CHECK_MSG("--pid");
}

static void test_view(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "view", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_VIEW);
	CHECK_EQ_STR(o.view_file, DEFAULT_OUTFILE);
	CHECK(!o.view_cli);
	options_free(&o);

	CHECK_EQ_INT(parse(&o, "view", "--cli", "--all-lines", "p.json", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_VIEW);
	CHECK(o.view_cli && o.view_all_lines);
	CHECK_EQ_STR(o.view_file, "p.json");
	options_free(&o);

	CHECK_EQ_INT(parse(&o, "view", "--cpu-percent-threshold", "5", "p.json", NULL), 0);
	CHECK(o.cpu_percent_threshold == 5);
	options_free(&o);

	CHECK_REJECTED(parse(&o, "view", "a.json", "b.json", NULL));
	CHECK_MSG("b.json");
}

static void test_help_version_nothing(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "--help", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_HELP);
	CHECK_EQ_INT(parse(&o, "run", "-h", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_HELP);
	CHECK_EQ_INT(parse(&o, "--version", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_VERSION);
	/* No command at all: the usage. */
	CHECK_REJECTED(parse(&o, NULL));
	CHECK_MSG("usage");
	CHECK_REJECTED(parse(&o, "-v", NULL));
	CHECK_MSG("nothing to do");
	/* A program without run. */
	CHECK_REJECTED(parse(&o, "prog.py", NULL));
	CHECK_MSG("scalene-bpf run prog.py");
}

static void test_unknown_and_missing(void)
{
	struct options o;

	CHECK_REJECTED(parse(&o, "run", "--bogus", "prog.py", NULL));
	CHECK_MSG("--bogus");
	CHECK_REJECTED(parse(&o, "run", "-x", "prog.py", NULL));
	CHECK_MSG("unknown option");
	CHECK_REJECTED(parse(&o, "--bogus", NULL));
	CHECK_MSG("--bogus");
	/* A flag given a value. */
	CHECK_REJECTED(parse(&o, "run", "--cpu-only=yes", "prog.py", NULL));
	/* Missing values, at the end of the line. */
	CHECK_REJECTED(parse(&o, "run", "-o", NULL));
	CHECK_MSG("needs a value");
	CHECK_REJECTED(parse(&o, "run", "--outfile", NULL));
	CHECK_MSG("--outfile");
	CHECK_REJECTED(parse(&o, "--pid", NULL));
	CHECK_MSG("--pid");
	CHECK_REJECTED(parse(&o, "run", "--rate", NULL));
	CHECK_REJECTED(parse(&o, "view", "--cpu-percent-threshold", NULL));
}

/* Every numeric option, every kind of garbage. */
static void test_numbers_rejected(void)
{
	static const char *const garbage[] = {
		"",	 "abc",	  "nan", "NaN", "inf", "-inf", "infinity",
		"1e400", "12abc", "0x",	 "--5", "5 ",  "1,5",
	};
	static const struct {
		const char *opt;
		const char *const bad[6];
	} ranges[] = {
		{ "--rate", { "0", "-1", "100001", "99.5", "1e10", "4294967297" } },
		{ "--cpu-percent-threshold", { "-0.1", "-5", "100.5", "101", "1e3", "-1e-300" } },
		{ "--profile-interval", { "0", "-1", "0.05", "1e8", "-0.1", "1e300" } },
		{ "--duration", { "0", "-1", "0.0001", "2e9", "-0.5", "1e300" } },
		{ "--pid", { "0", "-1", "1.5", "99999999", "4194305", "-4194304" } },
		{ "--allocation-sampling-window", { "0", "-1", "1.5m", "2t", "1m5", "2000g" } },
		{ "--copy-sampling-window", { "0", "-4k", "k", "0x10", "1mb2", "99999999999999" } },
	};
	struct options o;
	size_t i, j;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		const char *opt = ranges[i].opt;
		int is_pid = !strcmp(opt, "--pid");

		for (j = 0; j < sizeof(garbage) / sizeof(garbage[0]); j++) {
			int ret = is_pid ? parse(&o, opt, garbage[j], NULL)
					 : parse(&o, "run", opt, garbage[j], "prog.py", NULL);

			if (ret != -EINVAL)
				fprintf(stderr, "  %s '%s' accepted\n", opt, garbage[j]);
			CHECK_REJECTED(ret);
			CHECK_MSG(is_pid ? "--pid" : opt + 2);
		}
		for (j = 0; j < 6; j++) {
			int ret = is_pid ? parse(&o, opt, ranges[i].bad[j], NULL)
					 : parse(&o, "run", opt, ranges[i].bad[j], "prog.py", NULL);

			if (ret != -EINVAL)
				fprintf(stderr, "  %s '%s' accepted\n", opt, ranges[i].bad[j]);
			CHECK_REJECTED(ret);
		}
	}
}

static void test_numbers_accepted(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "--rate", "1", "p.py", NULL), 0);
	CHECK_EQ_INT(o.rate_hz, 1);
	CHECK_EQ_INT(parse(&o, "run", "--rate", "100000", "p.py", NULL), 0);
	CHECK_EQ_INT(o.rate_hz, 100000);
	CHECK_EQ_INT(parse(&o, "run", "--cpu-percent-threshold", "0", "p.py", NULL), 0);
	CHECK(o.cpu_percent_threshold == 0);
	CHECK_EQ_INT(parse(&o, "run", "--cpu-percent-threshold", "100", "p.py", NULL), 0);
	CHECK(o.cpu_percent_threshold == 100);
	CHECK_EQ_INT(parse(&o, "run", "--profile-interval", "0.1", "p.py", NULL), 0);
	CHECK(o.profile_interval == 0.1);
	CHECK_EQ_INT(parse(&o, "--pid", "4194304", NULL), 0);
	CHECK_EQ_INT(o.pid, 4194304);
	CHECK_EQ_INT(parse(&o, "--pid", "1", "--duration", "0.001", NULL), 0);
	CHECK(o.duration == 0.001);
}

static void test_too_many_filters(void)
{
	struct options o;
	char list[MAX_FILTERS * 4 + 8] = "";
	int i;

	for (i = 0; i <= MAX_FILTERS; i++) {
		char one[8];

		snprintf(one, sizeof(one), "%s%d", i ? "," : "", i % 10);
		strcat(list, one);
	}
	CHECK_REJECTED(parse(&o, "run", "--profile-only", list, "p.py", NULL));
	CHECK_MSG("at most");
	/* Empty items are skipped, not counted. */
	CHECK_EQ_INT(parse(&o, "run", "--profile-exclude", ",a,, b,", "p.py", NULL), 0);
	CHECK_EQ_INT(o.nprofile_exclude, 2);
	CHECK_EQ_STR(o.profile_exclude[0], "a");
	CHECK_EQ_STR(o.profile_exclude[1], "b");
}

/*
 * options_parse() may be called more than once in a process (tests, a
 * re-exec): each call must start from a clean getopt state, whatever the
 * previous call stopped in the middle of.
 */
static void test_reparse_after_early_return(void)
{
	struct options o;

	/* Stops inside the cluster "-hv", at h. */
	CHECK_EQ_INT(parse(&o, "run", "-hv", "prog.py", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_HELP);
	CHECK_EQ_INT(parse(&o, "run", "-o", "x.json", "prog.py", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_RUN);
	CHECK_EQ_INT(o.verbose, 0);
	CHECK_EQ_STR(o.outfile, "x.json");
	CHECK_EQ_INT(o.argc, 1);
	/* Stops at an unknown option inside a cluster. */
	CHECK_REJECTED(parse(&o, "run", "-vqv", "prog.py", NULL));
	CHECK_EQ_INT(parse(&o, "run", "prog.py", NULL), 0);
	CHECK_EQ_INT(o.verbose, 0);
	CHECK(o.argv && o.argc == 1 && !strcmp(o.argv[0], "prog.py"));
}

/* ------------------------------------------------------------ config */

static char cfg_path[256];

static const char *write_config(const char *text)
{
	FILE *f;

	snprintf(cfg_path, sizeof(cfg_path), "%s/scalene-bpf-test-%d.yaml",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	f = fopen(cfg_path, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	return cfg_path;
}

static int load(struct options *o, const char *text)
{
	const char *path = write_config(text);
	FILE *err;
	int ret;

	CHECK(path != NULL);
	free(msg);
	msg = NULL;
	err = open_memstream(&msg, &msglen);
	ret = options_load_config(path, o, err);
	fclose(err);
	return ret;
}

static void fresh(struct options *o)
{
	/* The defaults, from a parse that is known to work. */
	CHECK_EQ_INT(parse(o, "view", NULL), 0);
}

static void test_config_values(void)
{
	struct options o;

	fresh(&o);
	CHECK_EQ_INT(load(&o, "---\n"
			      "# a comment\n"
			      "   # an indented comment\n"
			      "\n"
			      "outfile: out.json\n"
			      "rate: 250\r\n"
			      "cpu_percent_threshold: 2.5\n"
			      "\tpython:   python3.12  \n"
			      "cpu-only: true\n"
			      "profile_all: yes\n"
			      "idle: 1\n"
			      "no_follow:\n"
			      "verbose: true\n"),
		     0);
	CHECK_EQ_STR(o.outfile, "out.json");
	CHECK_EQ_INT(o.rate_hz, 250);
	CHECK(o.cpu_percent_threshold == 2.5);
	CHECK_EQ_STR(o.python, "python3.12");
	CHECK(o.cpu_only && o.profile_all && o.idle && o.no_follow);
	CHECK_EQ_INT(o.verbose, 1);
	options_free(&o);

	/* false / no / 0 leave a flag alone. */
	fresh(&o);
	CHECK_EQ_INT(load(&o, "cpu_only: false\nidle: no\nprofile_all: 0\n"), 0);
	CHECK(!o.cpu_only && !o.idle && !o.profile_all);
	options_free(&o);
}

static void test_config_lists_and_quotes(void)
{
	struct options o;

	fresh(&o);
	CHECK_EQ_INT(load(&o, "profile_only: [src/, lib]\n"
			      "profile_exclude: a,b\n"
			      "outfile: \"my profile.json\"\n"
			      "python: 'python3.11'\n"),
		     0);
	CHECK_EQ_INT(o.nprofile_only, 2);
	if (o.nprofile_only == 2) {
		CHECK_EQ_STR(o.profile_only[0], "src/");
		CHECK_EQ_STR(o.profile_only[1], "lib");
	}
	CHECK_EQ_INT(o.nprofile_exclude, 2);
	CHECK_EQ_STR(o.outfile, "my profile.json");
	CHECK_EQ_STR(o.python, "python3.11");
	options_free(&o);

	/* A single quote character is not a quoted empty string. */
	fresh(&o);
	CHECK_EQ_INT(load(&o, "outfile: \"\n"), 0);
	CHECK_EQ_STR(o.outfile, "\"");
	options_free(&o);
}

/* YAML's flow list of quoted items: each item loses its own quotes. */
static void test_config_list_of_quoted_items(void)
{
	struct options o;

	fresh(&o);
	CHECK_EQ_INT(load(&o, "profile_only: [\"src/\", 'lib']\n"), 0);
	CHECK_EQ_INT(o.nprofile_only, 2);
	if (o.nprofile_only == 2) {
		CHECK_EQ_STR(o.profile_only[0], "src/");
		CHECK_EQ_STR(o.profile_only[1], "lib");
	}
	options_free(&o);
	/* Spaces around items are not part of them. */
	fresh(&o);
	CHECK_EQ_INT(load(&o, "profile_exclude: [ a , b ]\n"), 0);
	CHECK_EQ_INT(o.nprofile_exclude, 2);
	if (o.nprofile_exclude == 2) {
		CHECK_EQ_STR(o.profile_exclude[0], "a");
		CHECK_EQ_STR(o.profile_exclude[1], "b");
	}
	options_free(&o);
}

/* A YAML comment after a value ("key: value  # why") is not the value. */
static void test_config_trailing_comment(void)
{
	struct options o;

	fresh(&o);
	CHECK_EQ_INT(load(&o, "outfile: out.json  # where it goes\n"
			      "rate: 500 # per second\n"
			      "cpu_only: true # no memory yet\n"),
		     0);
	CHECK_EQ_STR(o.outfile, "out.json");
	CHECK_EQ_INT(o.rate_hz, 500);
	CHECK(o.cpu_only);
	options_free(&o);
	/* A '#' inside a value is kept (no space before it). */
	fresh(&o);
	CHECK_EQ_INT(load(&o, "outfile: run#1.json\n"), 0);
	CHECK_EQ_STR(o.outfile, "run#1.json");
	options_free(&o);
}

static void test_config_errors(void)
{
	static const struct {
		const char *text;
		int line;
		const char *needle;
	} bad[] = {
		{ "rate: 100\nno colon here\n", 2, "name: value" },
		{ "# c\n\nbogus_option: 1\n", 3, "bogus-option" },
		{ "config: other.yaml\n", 1, "unknown option" },
		{ "help: true\n", 1, "unknown option" },
		{ "version: true\n", 1, "unknown option" },
		{ "cpu_only: maybe\n", 1, "true or false" },
		{ "rate: fast\n", 1, "rate" },
		{ "rate: nan\n", 1, "rate" },
		{ "rate:\n", 1, "rate" },
		{ "cpu_percent_threshold: 200\n", 1, "cpu-percent-threshold" },
		{ "pid: -3\n", 1, "pid" },
		{ "duration: inf\n", 1, "duration" },
	};
	struct options o;
	char where[300];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		fresh(&o);
		ret = load(&o, bad[i].text);
		CHECK_REJECTED(ret);
		snprintf(where, sizeof(where), "%s:%d:", cfg_path, bad[i].line);
		/* Range and number errors name the option; syntax errors the
		 * place. */
		if (strstr(bad[i].needle, "name: value") || strstr(bad[i].needle, "unknown") ||
		    strstr(bad[i].needle, "true or false") || strstr(bad[i].needle, "bogus"))
			CHECK_MSG(where);
		CHECK_MSG(bad[i].needle);
		options_free(&o);
	}
	/* A file that is not there. */
	fresh(&o);
	free(msg);
	msg = NULL;
	{
		FILE *err = open_memstream(&msg, &msglen);

		CHECK_EQ_INT(options_load_config("/nonexistent/dir/c.yaml", &o, err), -EINVAL);
		fclose(err);
	}
	CHECK_MSG("/nonexistent/dir/c.yaml");
}

/* -c on the command line: the file's values, then later options win. */
static void test_config_on_command_line(void)
{
	struct options o;
	const char *path = write_config("rate: 250\noutfile: from-config.json\n");
	char arg[300];

	snprintf(arg, sizeof(arg), "%s", path);
	CHECK_EQ_INT(parse(&o, "run", "-c", arg, "--rate", "300", "prog.py", NULL), 0);
	CHECK_EQ_INT(o.rate_hz, 300);
	CHECK_EQ_STR(o.outfile, "from-config.json");
	CHECK_EQ_STR(o.config, arg);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "run", "--rate", "300", "--config", arg, "prog.py", NULL), 0);
	CHECK_EQ_INT(o.rate_hz, 250);
	options_free(&o);
	write_config("bogus: 1\n");
	CHECK_REJECTED(parse(&o, "run", "-c", arg, "prog.py", NULL));
	CHECK_MSG(":1:");
	CHECK_REJECTED(parse(&o, "run", "-c", NULL));
}

static void test_usage(void)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	options_usage(f);
	fclose(f);
	CHECK(buf && strstr(buf, "usage: scalene-bpf run"));
	CHECK(buf && strstr(buf, "--cpu-percent-threshold"));
	CHECK(buf && strstr(buf, "[1]")); /* "%%" printed through fputs would show twice */
	CHECK(buf && !strstr(buf, "%%"));
	free(buf);
}

static void test_memory_options(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "run", "--allocation-sampling-window", "256k",
			   "--copy-sampling-window", "4M", "--no-memory-leak-detector", "prog.py",
			   NULL),
		     0);
	CHECK(o.sampling_window == 256 * 1024);
	CHECK(o.copy_window == 4 * 1024 * 1024);
	CHECK(o.no_leaks);
	CHECK(!o.cpu_only && !o.memory);
	options_free(&o);
	CHECK_EQ_INT(
		parse(&o, "--pid", "7", "--memory", "--allocation-sampling-window", "65536", NULL),
		0);
	CHECK(o.memory && o.sampling_window == 65536);
	options_free(&o);
	/* --all --memory: the attach mode's probes for a whole host. */
	CHECK_EQ_INT(parse(&o, "--all", "--memory", "--comm", "gunicorn", NULL), 0);
	CHECK(o.cmd == CMD_ALL && o.memory && o.ncomms == 1);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "run", "--cpu-only", "--memory-leak-detector", "p.py", NULL), 0);
	CHECK(o.cpu_only && !o.no_leaks);
	options_free(&o);
	/* --memory-budget: a percentage of the program's CPU time, for
	 * --pid --memory only; unset means the default. */
	CHECK_EQ_INT(parse(&o, "--pid", "7", "--memory", NULL), 0);
	CHECK(o.memory_budget == 0);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "--pid", "7", "--memory", "--memory-budget", "2.5", NULL), 0);
	CHECK(o.memory_budget > 0.0249 && o.memory_budget < 0.0251);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "--pid", "7", "--memory", "--memory-budget", "100", NULL), 0);
	CHECK(o.memory_budget == 1.0);
	options_free(&o);
	CHECK_REJECTED(parse(&o, "--pid", "7", "--memory", "--memory-budget", "0", NULL));
	CHECK_MSG("not a valid value");
	CHECK_REJECTED(parse(&o, "--pid", "7", "--memory", "--memory-budget", "150", NULL));
	CHECK_REJECTED(parse(&o, "--pid", "7", "--memory-budget", "5", NULL));
	CHECK_MSG("--memory-budget is for --pid N --memory");
	CHECK_REJECTED(parse(&o, "run", "--memory-budget", "5", "p.py", NULL));
	CHECK_MSG("--memory-budget is for --pid N --memory");
	CHECK_REJECTED(parse(&o, "--all", "--memory", "--memory-budget", "5", NULL));
	CHECK_MSG("--memory-budget is for --pid N --memory");
	/* --memory-method: auto unless said; for --pid --memory only; the
	 * injected sampler has no budget to keep. */
	CHECK_EQ_INT(parse(&o, "--pid", "7", "--memory", NULL), 0);
	CHECK_EQ_INT(o.memory_method, MEMORY_METHOD_AUTO);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "--pid", "7", "--memory", "--memory-method", "inject", NULL), 0);
	CHECK_EQ_INT(o.memory_method, MEMORY_METHOD_INJECT);
	options_free(&o);
	CHECK_EQ_INT(parse(&o, "--pid", "7", "--memory", "--memory-method", "probes",
			   "--memory-budget", "20", NULL),
		     0);
	CHECK_EQ_INT(o.memory_method, MEMORY_METHOD_PROBES);
	options_free(&o);
	CHECK_REJECTED(parse(&o, "--pid", "7", "--memory", "--memory-method", "ptrace", NULL));
	CHECK_MSG("--memory-method takes auto, inject or probes, not 'ptrace'");
	CHECK_REJECTED(parse(&o, "--pid", "7", "--memory-method", "inject", NULL));
	CHECK_MSG("--memory-method is for --pid N --memory");
	CHECK_REJECTED(parse(&o, "--all", "--memory", "--memory-method", "probes", NULL));
	CHECK_MSG("--memory-method is for --pid N --memory");
	CHECK_REJECTED(parse(&o, "--pid", "7", "--memory", "--memory-method", "inject",
			     "--memory-budget", "5", NULL));
	CHECK_MSG("the injected sampler has no budget");
}

/* --all and its filters: repeatable or comma-separated; the filters and
 * several --pid only with --all; what --all cannot do refused. */
static void test_all(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "--all", "--pid", "12,34", "--pid", "56", "--comm",
			   "gunicorn,celery", "--uid", "www-data", "--uid", "1000", "--exclude-pid",
			   "7", "--duration", "30", NULL),
		     0);
	CHECK_EQ_INT(o.cmd, CMD_ALL);
	CHECK_EQ_INT(o.npids, 3);
	CHECK_EQ_INT(o.pids[0], 12);
	CHECK_EQ_INT(o.pids[2], 56);
	CHECK_EQ_INT(o.ncomms, 2);
	CHECK_EQ_STR(o.comms[1], "celery");
	CHECK_EQ_INT(o.nuids, 2);
	CHECK_EQ_STR(o.uids[0], "www-data");
	CHECK_EQ_INT(o.nexclude_pids, 1);
	CHECK_EQ_INT(o.exclude_pids[0], 7);
	CHECK(o.duration == 30);
	/* One --pid without --all is an attach, as before. */
	CHECK_EQ_INT(parse(&o, "--pid", "12", NULL), 0);
	CHECK_EQ_INT(o.cmd, CMD_ATTACH);
	CHECK_EQ_INT(o.pid, 12);
	CHECK_REJECTED(parse(&o, "--pid", "12,13", NULL));
	CHECK_MSG("several with --all");
	CHECK_REJECTED(parse(&o, "--comm", "python3", NULL));
	CHECK_MSG("are for --all");
	CHECK_REJECTED(parse(&o, "--pid", "1", "--exclude-pid", "2", NULL));
	CHECK_MSG("are for --all");
	CHECK_REJECTED(parse(&o, "--all", "prog.py", NULL));
	CHECK_MSG("takes no program");
	CHECK_REJECTED(parse(&o, "run", "--all", "prog.py", NULL));
	CHECK_MSG("run starts one program");
	CHECK_REJECTED(parse(&o, "--all", "--exclude-pid", "1,,", NULL));
	CHECK_MSG("--exclude-pid");
	CHECK_REJECTED(parse(&o, "--all", "--pid", "1, 2", NULL));
	CHECK_MSG("' 2'");
}

/* --all --continuous: its interval and disk bound, only with it. */
static void test_continuous(void)
{
	struct options o;

	CHECK_EQ_INT(parse(&o, "--all", "--continuous", NULL), 0);
	CHECK(o.continuous && o.interval_s == 0 && o.max_disk_mb == 0);
	CHECK_EQ_INT(parse(&o, "--all", "--continuous", "--interval", "10", "--max-disk", "200",
			   "--comm", "gunicorn", NULL),
		     0);
	CHECK(o.interval_s == 10 && o.max_disk_mb == 200 && o.ncomms == 1);
	CHECK_REJECTED(parse(&o, "--all", "--interval", "10", NULL));
	CHECK_MSG("are for --all --continuous");
	CHECK_REJECTED(parse(&o, "--all", "--max-disk", "10", NULL));
	CHECK_MSG("are for --all --continuous");
	CHECK_REJECTED(parse(&o, "--pid", "12", "--continuous", NULL));
	CHECK_MSG("--continuous is for --all");
	CHECK_REJECTED(parse(&o, "run", "--continuous", "prog.py", NULL));
	CHECK_MSG("--continuous is for --all");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--profile-interval", "5", NULL));
	CHECK_MSG("choose one");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--max-profiles", "5", NULL));
	CHECK_MSG("--max-disk");
	CHECK_REJECTED(parse(&o, "top", "--all", "--continuous", NULL));
	CHECK_MSG("run them apart");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--interval", "0.1", NULL));
	CHECK_MSG("--interval");
}

/* --otlp-endpoint and its headers: checked before the run starts. */
static void test_otlp(void)
{
	char path[] = "/tmp/test-options-headers-XXXXXX";
	struct options o;
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	char arg[64];

	CHECK(f != NULL);
	if (!f)
		return;
	fputs("# a comment, then a blank line\n\nX-Scope-OrgID: tenant-1\nAuthorization: Bearer "
	      "x\n",
	      f);
	fclose(f);
	snprintf(arg, sizeof(arg), "@%s", path);
	CHECK_EQ_INT(parse(&o, "--all", "--continuous", "--otlp-endpoint", "http://localhost:4318",
			   "--header", "A: b", "--header", arg, "--queue-mb", "8", NULL),
		     0);
	CHECK_EQ_STR(o.otlp_endpoint, "http://localhost:4318");
	CHECK(o.nheaders == 3 && o.queue_mb == 8);
	if (o.nheaders == 3) {
		CHECK_EQ_STR(o.headers[0], "A: b");
		CHECK_EQ_STR(o.headers[1], "X-Scope-OrgID: tenant-1");
		CHECK_EQ_STR(o.headers[2], "Authorization: Bearer x");
	}
	CHECK_REJECTED(parse(&o, "--all", "--otlp-endpoint", "http://x", NULL));
	CHECK_MSG("are for --all --continuous");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--header", "A: b", NULL));
	CHECK_MSG("are for --otlp-endpoint");
	CHECK_REJECTED(
		parse(&o, "--all", "--continuous", "--otlp-endpoint", "localhost:4318", NULL));
	CHECK_MSG("an http:// or https:// URL");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--otlp-endpoint", "http://x", "--header",
			     "no colon", NULL));
	CHECK_MSG("not a header");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--otlp-endpoint", "http://x", "--header",
			     "A: b\r\nInjected: yes", NULL));
	CHECK_MSG("not a header");
	f = fopen(path, "w");
	if (f) {
		fputs("Good: yes\nbad line\n", f);
		fclose(f);
	}
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--otlp-endpoint", "http://x", "--header",
			     arg, NULL));
	CHECK_MSG("line 2: not a header");
	unlink(path);
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--otlp-endpoint", "http://x", "--header",
			     arg, NULL));
	CHECK_MSG("No such file");
}

/* --pyroscope and --pyroscope-app, and the application name a process
 * gets without it. */
static void test_pyroscope(void)
{
	static const struct {
		const char *argv[6];
		int argc;
		const char *comm, *want;
	} apps[] = {
		{ { "/usr/bin/python3", "/srv/app/server.py", "--port", "80" },
		  4,
		  "python3",
		  "server" },
		{ { "python3", "-u", "-X", "dev", "worker.py" }, 5, "python3", "worker" },
		{ { "python3", "-m", "celery", "worker" }, 4, "python3", "celery" },
		{ { "python3", "-c", "print(1)" }, 3, "python3", "python3" },
		{ { "/usr/bin/python3", "/usr/local/bin/gunicorn", "app:app" },
		  3,
		  "gunicorn",
		  "gunicorn" },
		{ { "python3", "/srv/tool/__main__.py" }, 2, "python3", "tool" },
		{ { "python3", "my app (v2).py" }, 2, "python3", "my_app__v2_" },
		{ { "python3" }, 1, "python3", "python3" },
		{ { NULL }, 0, "sbpf svc", "sbpf_svc" },
		{ { NULL }, 0, "", "python" },
	};
	struct options o;
	char out[64];
	size_t i;

	CHECK_EQ_INT(parse(&o, "--all", "--continuous", "--pyroscope", "https://pyro.example:4040",
			   "--pyroscope-app", "checkout.svc-1", "--header", "X-Scope-OrgID: t",
			   NULL),
		     0);
	CHECK_EQ_STR(o.pyroscope_url, "https://pyro.example:4040");
	CHECK_EQ_STR(o.pyroscope_app, "checkout.svc-1");
	CHECK(o.nheaders == 1 && !o.otlp_endpoint);
	CHECK_EQ_INT(parse(&o, "--all", "--continuous", "--pyroscope", "http://p:4040",
			   "--otlp-endpoint", "http://c:4318", NULL),
		     0);
	CHECK_REJECTED(parse(&o, "--all", "--pyroscope", "http://p:4040", NULL));
	CHECK_MSG("are for --all --continuous");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--pyroscope", "p:4040", NULL));
	CHECK_MSG("--pyroscope p:4040: an http:// or https:// URL");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--pyroscope-app", "x", NULL));
	CHECK_MSG("--pyroscope-app is for --pyroscope");
	CHECK_REJECTED(parse(&o, "--all", "--continuous", "--pyroscope", "http://p",
			     "--pyroscope-app", "a{b=c}", NULL));
	CHECK_MSG("letters, digits");
	for (i = 0; i < sizeof(apps) / sizeof(apps[0]); i++) {
		pyroscope_app(apps[i].argv, apps[i].argc, apps[i].comm, out, sizeof(out));
		CHECK_EQ_STR(out, apps[i].want);
	}
}

/* top wraps run (with or without the word), --pid and --all. */
static void test_top(void)
{
	struct options o;

	CHECK_EQ_INT(
		parse(&o, "top", "--refresh", "2", "run", "-o", "x.json", "prog.py", "a", NULL), 0);
	CHECK(o.top && o.cmd == CMD_RUN && o.refresh == 2 && o.cpu_only && !o.once);
	CHECK_EQ_STR(o.outfile, "x.json");
	CHECK(o.argc == 2 && !strcmp(o.argv[0], "prog.py") && !strcmp(o.argv[1], "a"));
	CHECK_EQ_INT(parse(&o, "top", "prog.py", NULL), 0);
	CHECK(o.top && o.cmd == CMD_RUN && o.refresh == DEFAULT_REFRESH_S && !o.outfile);
	CHECK_EQ_INT(parse(&o, "top", "--once", "--", "python3", "-c", "pass", NULL), 0);
	CHECK(o.top && o.once && o.cmd == CMD_RUN && o.raw_command && o.argc == 3);
	/* The word run after --: the command's. */
	CHECK_EQ_INT(parse(&o, "top", "--", "run", NULL), 0);
	CHECK(o.cmd == CMD_RUN && o.raw_command && !strcmp(o.argv[0], "run"));
	CHECK_EQ_INT(parse(&o, "top", "--pid", "42", NULL), 0);
	CHECK(o.top && o.cmd == CMD_ATTACH && o.pid == 42);
	CHECK_EQ_INT(parse(&o, "top", "--all", "--comm", "python3", NULL), 0);
	CHECK(o.top && o.cmd == CMD_ALL && o.ncomms == 1);
	CHECK_EQ_INT(parse(&o, "top", NULL), -EINVAL);
	CHECK(msg && strstr(msg, "give a program"));
	CHECK_EQ_INT(parse(&o, "top", "prog.py", NULL), 0);
	CHECK(o.top && o.cpu_only && !o.memory);
	/* Memory on demand: run's sampler, or the uprobes of --pid and --all. */
	CHECK_EQ_INT(parse(&o, "top", "--memory", "prog.py", NULL), 0);
	CHECK(o.top && o.cmd == CMD_RUN && !o.cpu_only && o.memory);
	CHECK_EQ_INT(parse(&o, "top", "--memory", "--pid", "42", NULL), 0);
	CHECK(o.cmd == CMD_ATTACH && o.memory);
	CHECK_EQ_INT(parse(&o, "top", "--refresh", "0", "prog.py", NULL), -EINVAL);
	CHECK_EQ_INT(parse(&o, "top", "--all", "run", "prog.py", NULL), -EINVAL);
	CHECK_EQ_INT(parse(&o, "run", "--once", "prog.py", NULL), -EINVAL);
	CHECK(msg && strstr(msg, "options of top"));
	CHECK_EQ_INT(parse(&o, "--pid", "4", "--refresh", "2", NULL), -EINVAL);
	/* Without top, run is unchanged. */
	CHECK_EQ_INT(parse(&o, "run", "prog.py", NULL), 0);
	CHECK(!o.top && o.cmd == CMD_RUN && !o.cpu_only);
}

int main(void)
{
	RUN_TEST(test_defaults_and_run);
	RUN_TEST(test_run_options);
	RUN_TEST(test_short_options_alone);
	RUN_TEST(test_program_options_belong_to_program);
	RUN_TEST(test_double_dash);
	RUN_TEST(test_attach);
	RUN_TEST(test_view);
	RUN_TEST(test_help_version_nothing);
	RUN_TEST(test_unknown_and_missing);
	RUN_TEST(test_numbers_rejected);
	RUN_TEST(test_numbers_accepted);
	RUN_TEST(test_memory_options);
	RUN_TEST(test_too_many_filters);
	RUN_TEST(test_reparse_after_early_return);
	RUN_TEST(test_config_values);
	RUN_TEST(test_config_lists_and_quotes);
	RUN_TEST(test_config_list_of_quoted_items);
	RUN_TEST(test_config_trailing_comment);
	RUN_TEST(test_config_errors);
	RUN_TEST(test_config_on_command_line);
	RUN_TEST(test_usage);
	RUN_TEST(test_all);
	RUN_TEST(test_continuous);
	RUN_TEST(test_otlp);
	RUN_TEST(test_pyroscope);
	RUN_TEST(test_top);
	unlink(cfg_path);
	free(msg);
	free_kept();
	return test_summary("options");
}
