// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu/gpu.h"
#include "cli/fleet.h"
#include "cli/options.h"
#include "report/output.h"

enum {
	OPT_CPU_ONLY = 256,
	OPT_PROFILE_ALL,
	OPT_PROFILE_ONLY,
	OPT_PROFILE_EXCLUDE,
	OPT_CPU_PERCENT_THRESHOLD,
	OPT_PROFILE_INTERVAL,
	OPT_RATE,
	OPT_PYTHON,
	OPT_PID,
	OPT_DURATION,
	OPT_IDLE,
	OPT_NATIVE,
	OPT_NATIVE_UNWIND,
	OPT_NO_FOLLOW,
	OPT_PROFILE_BUILTIN,
	OPT_CLI,
	OPT_ALL_LINES,
	OPT_VERSION,
	OPT_MEMORY,
	OPT_SAMPLING_WINDOW,
	OPT_MEMORY_BUDGET,
	OPT_MEMORY_METHOD,
	OPT_COPY_WINDOW,
	OPT_LEAKS,
	OPT_NO_LEAKS,
	OPT_HTML,
	OPT_FORMAT,
	OPT_NO_ASYNC,
	OPT_NO_GPU,
	OPT_GPU_CALL_SAMPLE,
	OPT_ALL,
	OPT_COMM,
	OPT_UID,
	OPT_EXCLUDE_PID,
	OPT_MAX_PROFILES,
	OPT_CONTINUOUS,
	OPT_INTERVAL,
	OPT_MAX_DISK,
	OPT_OTLP_ENDPOINT,
	OPT_HEADER,
	OPT_PYROSCOPE,
	OPT_PYROSCOPE_APP,
	OPT_QUEUE_MB,
	OPT_REFRESH,
	OPT_ONCE,
};

static const struct option long_opts[] = {
	{ "outfile", required_argument, NULL, 'o' },
	{ "cpu-only", no_argument, NULL, OPT_CPU_ONLY },
	{ "memory", no_argument, NULL, OPT_MEMORY },
	{ "allocation-sampling-window", required_argument, NULL, OPT_SAMPLING_WINDOW },
	{ "memory-budget", required_argument, NULL, OPT_MEMORY_BUDGET },
	{ "memory-method", required_argument, NULL, OPT_MEMORY_METHOD },
	{ "copy-sampling-window", required_argument, NULL, OPT_COPY_WINDOW },
	{ "memory-leak-detector", no_argument, NULL, OPT_LEAKS },
	{ "no-memory-leak-detector", no_argument, NULL, OPT_NO_LEAKS },
	{ "profile-all", no_argument, NULL, OPT_PROFILE_ALL },
	{ "profile-only", required_argument, NULL, OPT_PROFILE_ONLY },
	{ "profile-exclude", required_argument, NULL, OPT_PROFILE_EXCLUDE },
	{ "cpu-percent-threshold", required_argument, NULL, OPT_CPU_PERCENT_THRESHOLD },
	{ "profile-interval", required_argument, NULL, OPT_PROFILE_INTERVAL },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "python", required_argument, NULL, OPT_PYTHON },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "idle", no_argument, NULL, OPT_IDLE },
	{ "native", no_argument, NULL, OPT_NATIVE },
	{ "native-unwind", required_argument, NULL, OPT_NATIVE_UNWIND },
	{ "no-follow", no_argument, NULL, OPT_NO_FOLLOW },
	{ "profile-builtin", no_argument, NULL, OPT_PROFILE_BUILTIN },
	{ "no-async", no_argument, NULL, OPT_NO_ASYNC },
	{ "no-gpu", no_argument, NULL, OPT_NO_GPU },
	{ "gpu-call-sample", required_argument, NULL, OPT_GPU_CALL_SAMPLE },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "uid", required_argument, NULL, OPT_UID },
	{ "exclude-pid", required_argument, NULL, OPT_EXCLUDE_PID },
	{ "max-profiles", required_argument, NULL, OPT_MAX_PROFILES },
	{ "continuous", no_argument, NULL, OPT_CONTINUOUS },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "max-disk", required_argument, NULL, OPT_MAX_DISK },
	{ "otlp-endpoint", required_argument, NULL, OPT_OTLP_ENDPOINT },
	{ "header", required_argument, NULL, OPT_HEADER },
	{ "pyroscope", required_argument, NULL, OPT_PYROSCOPE },
	{ "pyroscope-app", required_argument, NULL, OPT_PYROSCOPE_APP },
	{ "queue-mb", required_argument, NULL, OPT_QUEUE_MB },
	{ "refresh", required_argument, NULL, OPT_REFRESH },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "config", required_argument, NULL, 'c' },
	{ "cli", no_argument, NULL, OPT_CLI },
	{ "all-lines", no_argument, NULL, OPT_ALL_LINES },
	{ "html", optional_argument, NULL, OPT_HTML },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{},
};

void options_usage(FILE *f)
{
	fputs("usage: scalene-bpf run [options] prog.py [args...]\n"
	      "       scalene-bpf run [options] -- command [args...]\n"
	      "       scalene-bpf --pid PID [options]\n"
	      "       scalene-bpf --all [--pid P] [--comm NAME] [--uid U] [--exclude-pid P]\n"
	      "                   [--duration S] [-o DIR] [options]\n"
	      "       scalene-bpf top [--refresh S] [--once] [options] [run] prog.py [args...]\n"
	      "       scalene-bpf top [options] -- command [args...]\n"
	      "       scalene-bpf top --pid PID | --all [filters] [options]\n"
	      "       scalene-bpf view [--cli | --html [OUT.html] | --format FMT -o FILE]\n"
	      "                        [profile.json | DIR]\n"
	      "\n"
	      "Profiles Python programs with eBPF: time per line and function, split into\n"
	      "Python, native and system time, written as a Scalene-compatible JSON profile.\n"
	      "Needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE); under sudo the program\n"
	      "runs as the invoking user and the profile belongs to that user.\n"
	      "\n"
	      "examples:\n"
	      "  sudo scalene-bpf run prog.py arg1 arg2\n"
	      "  sudo scalene-bpf run -o out.json --python python3.12 prog.py\n"
	      "  sudo scalene-bpf run -- python3.12 -m pkg.tool --flag\n"
	      "  sudo scalene-bpf --pid 1234 --duration 10\n"
	      "  sudo scalene-bpf --all --duration 30 -o profiles/\n"
	      "  sudo scalene-bpf top run prog.py\n"
	      "  sudo scalene-bpf top --all\n"
	      "  scalene-bpf view --cli scalene-profile.json\n"
	      "\n"
	      "options (before the program; everything after it belongs to the program):\n"
	      "  -o, --outfile FILE             where to write the profile [scalene-profile.json]\n"
	      "      --python PATH              interpreter for a script [python3]\n"
	      "      --pid PID                  attach to a running Python process; never pauses\n"
	      "                                 or signals it; ends on Ctrl-C, --duration or exit\n"
	      "      --duration SECONDS         --pid, --all: stop after this long\n"
	      "      --all                      every Python process on the host, running or\n"
	      "                                 started during the run (containers too): one\n"
	      "                                 profile per process and index.json in DIR\n"
	      "                                 (-o DIR [scalene-bpf-profiles]); no await\n"
	      "                                 attribution; memory with --memory.  Filters,\n"
	      "                                 repeatable or comma-separated: --pid P,\n"
	      "                                 --comm NAME (the process name), --uid USER,\n"
	      "                                 --exclude-pid P;\n"
	      "                                 children of a profiled process are profiled\n"
	      "                                 unless excluded (--no-follow: they must pass\n"
	      "                                 the filters themselves).  --profile-interval\n"
	      "                                 S rewrites the live processes' profiles and\n"
	      "                                 the index every S seconds; --max-profiles N\n"
	      "                                 keeps the profiles of the last N processes\n"
	      "                                 that ended [1000] (the index keeps them all)\n"
	      "      --continuous               with --all: run until stopped (or --duration)\n"
	      "                                 and write a profile per process per interval\n"
	      "                                 (JSON and pprof .pb.gz) into DIR/intervals/,\n"
	      "                                 one folder an interval with its own index.json\n"
	      "                                 (scalene-bpf view FOLDER); no gap between\n"
	      "                                 intervals, nothing counted twice\n"
	      "      --interval SECONDS         --continuous: the interval [60]\n"
	      "      --max-disk MB              --continuous: the most the interval folders\n"
	      "                                 take; the oldest go first [1024]\n"
	      "      --otlp-endpoint URL        --continuous: also send each interval's\n"
	      "                                 profiles as one OpenTelemetry profiles request\n"
	      "                                 (OTLP/HTTP protobuf; to URL/v1development/\n"
	      "                                 profiles when URL has no path), retried when\n"
	      "                                 the backend is down; what is dropped is\n"
	      "                                 counted in index.json\n"
	      "      --pyroscope URL            --continuous: also send each interval's\n"
	      "                                 profiles to a Pyroscope server's ingest API\n"
	      "                                 (URL/ingest, pprof; CPU, memory and GPU each\n"
	      "                                 a profile of its own), retried and counted\n"
	      "                                 as for --otlp-endpoint\n"
	      "      --pyroscope-app NAME       --pyroscope: the application name of every\n"
	      "                                 process [each its own: the script's name\n"
	      "                                 without .py, the module of -m, the command]\n"
	      "      --header 'NAME: VALUE'     --otlp-endpoint, --pyroscope: a header of\n"
	      "                                 every request (repeatable); --header @FILE:\n"
	      "                                 the headers in FILE, one a line (a token kept\n"
	      "                                 off the command line)\n"
	      "      --queue-mb MB              --otlp-endpoint, --pyroscope: the most the\n"
	      "                                 requests waiting to be sent to one backend\n"
	      "                                 take; the oldest go first [64]\n"
	      "      --rate HZ                  samples per second per CPU [997]\n"
	      "      --cpu-only                 time only: no memory (run profiles memory by\n"
	      "                                 default: it preloads the allocation sampler,\n"
	      "                                 libscalene-bpf-sampler.so, into the program)\n"
	      "                                 and no GPU\n"
	      "      --memory                   with --pid or --all: profile allocations too.\n"
	      "                                 --pid on Python 3.14+: the sampler is loaded\n"
	      "                                 into the process (--memory-method).  Else by\n"
	      "                                 uprobes on malloc/calloc/realloc and Python's\n"
	      "                                 allocator.  Every allocation call then traps:\n"
	      "                                 ~1-2 us each on the VM measured, so 100k\n"
	      "                                 allocations/s cost 0.1-0.2 s of CPU a second;\n"
	      "                                 the cost measured on this machine is printed.\n"
	      "                                 Frees are not seen: no footprint, peak or leaks.\n"
	      "                                 With --all, Python's allocator is probed per\n"
	      "                                 interpreter file, or with filters per followed\n"
	      "                                 process (those left out never trap), and libc\n"
	      "                                 for at most 64 followed processes at a time\n"
	      "      --memory-budget PCT        --pid --memory: the most of the program's CPU\n"
	      "                                 time the probes may cost [5]: they are placed\n"
	      "                                 for a window of each second, as long as that\n"
	      "                                 allows, and what they see is scaled up to the\n"
	      "                                 second; 100: placed all the time\n"
	      "      --memory-method M          --pid --memory: auto (default), inject or\n"
	      "                                 probes.  inject: Python loads the sampler that\n"
	      "                                 run preloads (3.14+: sys.remote_exec's way, PEP\n"
	      "                                 768; 3.9-3.13: a pending call) and unloads its\n"
	      "                                 hooks at the end:\n"
	      "                                 what run costs, with frees, footprint and\n"
	      "                                 leaks, but Python's allocator only (no native\n"
	      "                                 allocations or copies).  probes: the uprobes\n"
	      "                                 above.  auto: inject where the interpreter\n"
	      "                                 allows it, else probes (probes when\n"
	      "                                 --memory-budget is given)\n"
	      "      --allocation-sampling-window BYTES\n"
	      "                                 mean bytes between allocation samples [1m]\n"
	      "      --copy-sampling-window BYTES  the same for memcpy volume [2m]\n"
	      "      --no-memory-leak-detector  no leak report (on by default, as in Scalene)\n"
	      "      --profile-all              report every file, not only the program's own\n"
	      "      --profile-only A,B         report only files whose path contains A or B\n"
	      "      --profile-exclude A,B      never report files whose path contains A or B\n"
	      "      --cpu-percent-threshold P  leave out files under P% of the time [1]\n"
	      "      --profile-interval SECONDS also write the profile this often while running\n"
	      "      --idle                     count the waiting of parked worker threads too\n"
	      "      --native                   native and kernel frames in the stacks, between\n"
	      "                                 and below the Python frames (each CPU sample\n"
	      "                                 copies up to 16 KiB of the thread's stack,\n"
	      "                                 unwound by libdw: it costs more, see "
	      "docs/stacks.md)\n"
	      "      --native-unwind HOW        --native, its stacks unwound by: copy (as\n"
	      "                                 above, the default) or bpf (in the kernel, with\n"
	      "                                 tables compiled from each file's .eh_frame)\n"
	      "      --no-follow                do not follow child processes\n"
	      "      --profile-builtin          run: provide Scalene's @profile builtin even when\n"
	      "                                 no .py file under the program's folder uses it\n"
	      "      --no-async                 no await attribution (on by default, as in\n"
	      "                                 Scalene: where asyncio tasks wait, per line)\n"
	      "      --no-gpu                   run: do not give CUDA programs the GPU library\n"
	      "                                 (libscalene-bpf-gpu.so, loaded by the CUDA driver\n"
	      "                                 through CUDA_INJECTION64_PATH: GPU time and\n"
	      "                                 memory per line, from CUPTI); --pid: do not\n"
	      "                                 sample the process's GPU use through NVML\n"
	      "                                 (libnvidia-ml.so.1, every 100 ms)\n"
	      "      --gpu-call-sample N        run: probe 1 in N CUDA calls at random (each\n"
	      "                                 probed call costs a few microseconds); the\n"
	      "                                 lines' launched GPU work is then estimated [1]\n"
	      "  -c, --config FILE              options as \"name: value\" lines (long names)\n"
	      "  -v, --verbose                  more messages (-vv: BPF loader messages too)\n"
	      "  -h, --help                     this text\n"
	      "\n"
	      "What the numbers mean: every thread's on-CPU time is sampled; time a thread spends\n"
	      "blocked (sleep, I/O, locks) counts as system time on the line where it blocked.\n"
	      "Threads other than the main one that wait on a lock or condition\n"
	      "(futex: queue.get, idle thread-pool workers, the GIL) are parked, not working:\n"
	      "that waiting is kept apart (under scalene_bpf.uncounted_blocked_s) unless --idle\n"
	      "is given; their waiting in I/O (poll, read, sleep) counts.  The waiting of\n"
	      "processes that are not Python (a shell or launcher waiting for its child) is\n"
	      "kept apart too.\n"
	      "\n"
	      "@profile: run provides Scalene's builtin (through a sitecustomize.py first on\n"
	      "the program's PYTHONPATH, which loads any other one after it); when a function\n"
	      "is decorated, only decorated functions are reported.  Not with --pid (nothing\n"
	      "can be added to a running process), nor for interpreters started with -E, -I\n"
	      "or -S; an existing builtins.profile (line_profiler's) is left in place.\n"
	      "\n"
	      "top: the profile of run, --pid or --all as it is taken, redrawn every second:\n"
	      "the hottest lines (l), functions (f) or, with --all, processes (p); s cycles\n"
	      "the sort (total, python, native, system time), with --all / or P then a\n"
	      "PID and Enter shows one process (Enter alone: all), space pauses the\n"
	      "drawing (not the profiling), q or Ctrl-C quits (run: the program is\n"
	      "stopped with SIGINT, then SIGTERM and SIGKILL if it goes on).\n"
	      "CPU only, unless --memory: then also the net MB allocated (MEM MB, a sort\n"
	      "of its own).  Nothing is written unless -o is given; then the profile (--all:\n"
	      "the directory) is written at the end as the command without top writes it.\n"
	      "On a terminal the program's input is /dev/null and its output, with\n"
	      "scalene-bpf's messages, is printed when the view closes; when the profile\n"
	      "ends (the program exits) the last view stays until q.  Elsewhere (a pipe,\n"
	      "a file) each refresh prints a plain frame and top exits when the profile ends.\n"
	      "      --refresh SECONDS          seconds between redraws [1]\n"
	      "      --once                     exit as soon as the profile ends\n"
	      "\n"
	      "view options (the profile defaults to scalene-profile.json; Scalene's own\n"
	      "profiles are read too):\n"
	      "      --cli                      print the profile as a table in the terminal\n"
	      "                                 (the default without a graphical display)\n"
	      "      --html [OUT.html]          write one self-contained HTML page (no network)\n"
	      "                                 and print its path [next to the profile]; with\n"
	      "                                 a display and neither option, the page is\n"
	      "                                 written and opened in the user's browser\n"
	      "      --format FMT -o FILE       export the stacks: folded (flamegraph.pl,\n"
	      "                                 inferno; CPU samples only), speedscope\n"
	      "                                 (speedscope.app JSON) or pprof (gzipped\n"
	      "                                 profile.proto: go tool pprof, Pyroscope,\n"
	      "                                 Parca) or otlp (an OpenTelemetry profiles\n"
	      "                                 export request, protobuf: OTLP 1.45.2's\n"
	      "                                 v1development schema); all but folded carry\n"
	      "                                 the memory stacks too, and each stack's time\n"
	      "                                 when the profile is scalene-bpf's; without -o,\n"
	      "                                 to stdout\n"
	      "      --all-lines                show every sampled line, however small\n"
	      "      --cpu-percent-threshold P  hide lines under P% of the time [1]\n"
	      "  Colour only on a terminal, never when NO_COLOR is set.\n",
	      f);
}

static int parse_double(const char *s, double *out, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A byte count: digits with an optional k, m or g (powers of 1024). */
static int parse_bytes(const char *s, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || v > (1ull << 40) / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_list(char *s, const char **out, int *n)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t l;

		while (*tok == ' ')
			tok++;
		l = strlen(tok);
		while (l && tok[l - 1] == ' ')
			tok[--l] = '\0';
		if (l >= 2 && (tok[0] == '"' || tok[0] == '\'') && tok[l - 1] == tok[0]) {
			tok[l - 1] = '\0';
			tok++;
		}
		if (!*tok)
			continue;
		if (*n >= MAX_FILTERS)
			return -E2BIG;
		out[(*n)++] = tok;
	}
	return 0;
}

/* Process IDs, comma-separated, added to out[*n]. */
/* A request header, "Name: value": a name of token characters (RFC 9110),
 * a colon, and a value without control characters (what ends a header). */
/* A backend's URL (NULL: none given): http or https, which libcurl is
 * held to. */
static int backend_url(const char *opt, const char *url, const char *example, FILE *err)
{
	if (!url || !strncmp(url, "http://", 7) || !strncmp(url, "https://", 8))
		return 0;
	fprintf(err, "scalene-bpf: %s %s: an http:// or https:// URL, such as %s\n", opt, url,
		example);
	return -EINVAL;
}

static int add_header(struct options *o, const char *h, const char *where, FILE *err)
{
	const char *colon = strchr(h, ':'), *p;
	bool ok = colon && colon > h;

	for (p = h; ok && p < colon; p++)
		ok = isalnum((unsigned char)*p) || strchr("!#$%&'*+-.^_`|~", *p);
	for (p = colon; ok && *p; p++)
		ok = (unsigned char)*p >= 0x20 && *p != 0x7f;
	if (!ok) {
		fprintf(err,
			"scalene-bpf: --header %s: not a header (NAME: VALUE, the name of "
			"letters, digits and !#$%%&'*+-.^_`|~, no control character)\n",
			where);
		return -EINVAL;
	}
	if (o->nheaders >= MAX_FILTERS) {
		fprintf(err, "scalene-bpf: --header: at most %d headers\n", MAX_FILTERS);
		return -EINVAL;
	}
	o->headers[o->nheaders++] = h;
	return 0;
}

/* --header @FILE: a header a line; empty lines and lines starting with #
 * are skipped.  The file is read now, before the run starts. */
static int header_file(struct options *o, const char *path, FILE *err)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0, lineno = 0;

	if (!f) {
		fprintf(err, "scalene-bpf: --header @%s: %s\n", path, strerror(errno));
		return -EINVAL;
	}
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		char where[PATH_MAX + 32], *h;

		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!n || line[0] == '#')
			continue;
		h = strdup(line);
		snprintf(where, sizeof(where), "@%s line %d", path, lineno);
		ret = h ? add_header(o, h, where, err) : -ENOMEM;
		if (ret)
			free(h);
	}
	free(line);
	fclose(f);
	return ret;
}

static int parse_pids(char *arg, int *out, int *n, const char *name, FILE *err)
{
	char *save = NULL, *tok;
	double d;

	/* Exactly digits between the commas: no spaces, no empty items. */
	if (!*arg || arg[strlen(arg) - 1] == ',') {
		fprintf(err, "scalene-bpf: --%s needs a process ID, got '%s'\n", name, arg);
		return -EINVAL;
	}
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (parse_double(tok, &d, 1, 4194304) || d != (int)d || !isdigit(*tok)) {
			fprintf(err, "scalene-bpf: --%s needs a process ID, got '%s'\n", name, tok);
			return -EINVAL;
		}
		if (*n >= MAX_FILTERS) {
			fprintf(err, "scalene-bpf: --%s: at most %d process IDs\n", name,
				MAX_FILTERS);
			return -EINVAL;
		}
		out[(*n)++] = (int)d;
	}
	return 0;
}

/* Applies one option; arg may be NULL for flags.  Shared by the command
 * line and the config file. */
static int apply(struct options *o, int id, char *arg, const char *name, FILE *err)
{
	double d;

	switch (id) {
	case 'o':
		o->outfile = arg;
		return 0;
	case OPT_CPU_ONLY:
		o->cpu_only = true;
		return 0;
	case OPT_MEMORY:
		o->memory = true;
		return 0;
	case OPT_SAMPLING_WINDOW:
		if (parse_bytes(arg, &o->sampling_window) || !o->sampling_window)
			goto bad_number;
		return 0;
	case OPT_MEMORY_BUDGET:
		if (parse_double(arg, &d, 0.1, 100))
			goto bad_number;
		o->memory_budget = d / 100;
		return 0;
	case OPT_MEMORY_METHOD:
		if (!strcmp(arg, "auto"))
			o->memory_method = MEMORY_METHOD_AUTO;
		else if (!strcmp(arg, "inject"))
			o->memory_method = MEMORY_METHOD_INJECT;
		else if (!strcmp(arg, "probes"))
			o->memory_method = MEMORY_METHOD_PROBES;
		else {
			fprintf(err,
				"scalene-bpf: --memory-method takes auto, inject or probes, "
				"not '%s'\n",
				arg);
			return -EINVAL;
		}
		return 0;
	case OPT_COPY_WINDOW:
		if (parse_bytes(arg, &o->copy_window) || !o->copy_window)
			goto bad_number;
		return 0;
	case OPT_LEAKS:
		o->no_leaks = false;
		return 0;
	case OPT_NO_LEAKS:
		o->no_leaks = true;
		return 0;
	case OPT_PROFILE_ALL:
		o->profile_all = true;
		return 0;
	case OPT_PROFILE_ONLY:
		if (parse_list(arg, o->profile_only, &o->nprofile_only))
			goto too_many;
		return 0;
	case OPT_PROFILE_EXCLUDE:
		if (parse_list(arg, o->profile_exclude, &o->nprofile_exclude))
			goto too_many;
		return 0;
	case OPT_CPU_PERCENT_THRESHOLD:
		if (parse_double(arg, &o->cpu_percent_threshold, 0, 100))
			goto bad_number;
		return 0;
	case OPT_PROFILE_INTERVAL:
		if (parse_double(arg, &o->profile_interval, 0.1, 1e7))
			goto bad_number;
		return 0;
	case OPT_RATE:
		if (parse_double(arg, &d, 1, 100000) || d != (unsigned int)d)
			goto bad_number;
		o->rate_hz = (unsigned int)d;
		return 0;
	case OPT_PYTHON:
		o->python = arg;
		return 0;
	case OPT_PID:
		if (parse_pids(arg, o->pids, &o->npids, name, err))
			return -EINVAL;
		o->pid = o->pids[0];
		return 0;
	case OPT_EXCLUDE_PID:
		return parse_pids(arg, o->exclude_pids, &o->nexclude_pids, name, err);
	case OPT_ALL:
		o->all = true;
		return 0;
	case OPT_CONTINUOUS:
		o->continuous = true;
		return 0;
	case OPT_INTERVAL:
		if (parse_double(arg, &o->interval_s, 0.5, 1e7))
			goto bad_number;
		return 0;
	case OPT_MAX_DISK:
		if (parse_double(arg, &o->max_disk_mb, 0.01, 1e9))
			goto bad_number;
		return 0;
	case OPT_OTLP_ENDPOINT:
		o->otlp_endpoint = arg;
		return 0;
	case OPT_PYROSCOPE:
		o->pyroscope_url = arg;
		return 0;
	case OPT_PYROSCOPE_APP:
		o->pyroscope_app = arg;
		return 0;
	case OPT_HEADER:
		return arg[0] == '@' ? header_file(o, arg + 1, err) : add_header(o, arg, arg, err);
	case OPT_QUEUE_MB:
		if (parse_double(arg, &o->queue_mb, 0.001, 1e6))
			goto bad_number;
		return 0;
	case OPT_MAX_PROFILES:
		if (parse_double(arg, &d, 1, 10000000) || d != (int)d)
			goto bad_number;
		o->max_profiles = (int)d;
		return 0;
	case OPT_COMM:
		if (parse_list(arg, o->comms, &o->ncomms))
			goto too_many;
		return 0;
	case OPT_UID:
		if (parse_list(arg, o->uids, &o->nuids))
			goto too_many;
		return 0;
	case OPT_DURATION:
		if (parse_double(arg, &o->duration, 0.001, 1e9))
			goto bad_number;
		return 0;
	case OPT_IDLE:
		o->idle = true;
		return 0;
	case OPT_NATIVE:
		o->native = true;
		return 0;
	case OPT_NATIVE_UNWIND:
		/* Implies --native. */
		if (!strcmp(arg, "bpf"))
			o->native_unwind_bpf = true;
		else if (strcmp(arg, "copy"))
			goto bad_number;
		o->native = true;
		return 0;
	case OPT_NO_FOLLOW:
		o->no_follow = true;
		return 0;
	case OPT_PROFILE_BUILTIN:
		o->profile_builtin = true;
		return 0;
	case OPT_NO_ASYNC:
		o->no_async = true;
		return 0;
	case OPT_NO_GPU:
		o->no_gpu = true;
		return 0;
	case OPT_GPU_CALL_SAMPLE:
		if (parse_double(arg, &d, 1, SCALENE_BPF_GPU_CALL_SAMPLE_MAX) ||
		    d != (unsigned int)d)
			goto bad_number;
		o->gpu_call_sample = (unsigned int)d;
		return 0;
	case OPT_CLI:
		o->view_cli = true;
		return 0;
	case OPT_ALL_LINES:
		o->view_all_lines = true;
		return 0;
	case OPT_HTML:
		o->view_html = true;
		if (arg)
			o->view_html_out = arg;
		return 0;
	case OPT_FORMAT:
		o->view_format = arg;
		return 0;
	case OPT_REFRESH:
		if (parse_double(arg, &o->refresh, 0.1, 3600))
			goto bad_number;
		return 0;
	case OPT_ONCE:
		o->once = true;
		return 0;
	case 'v':
		o->verbose++;
		return 0;
	}
	fprintf(err, "scalene-bpf: option %s cannot be used here\n", name);
	return -EINVAL;
bad_number:
	fprintf(err, "scalene-bpf: --%s: '%s' is not a valid value (see --help)\n", name, arg);
	return -EINVAL;
too_many:
	fprintf(err, "scalene-bpf: --%s: at most %d entries\n", name, MAX_FILTERS);
	return -EINVAL;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcasecmp(s + n - m, suffix);
}

/* view's operands: the profile, and with --html the page to write when it
 * is named as "--html out.html" (getopt only takes "--html=out.html"). */
static int view_operands(struct options *o, char **args, int n, FILE *err)
{
	int i;

	for (i = 0; i < n; i++) {
		if (o->view_html && !o->view_html_out &&
		    (has_suffix(args[i], ".html") || has_suffix(args[i], ".htm"))) {
			o->view_html_out = args[i];
			continue;
		}
		if (o->view_file) {
			fprintf(err, "scalene-bpf: view takes one profile, got '%s' too\n",
				args[i]);
			return -EINVAL;
		}
		o->view_file = args[i];
	}
	if (!o->view_file)
		o->view_file = DEFAULT_OUTFILE;
	if (o->view_format && (o->view_html || o->view_cli)) {
		fprintf(err,
			"scalene-bpf: --format writes an export; it cannot be combined "
			"with --%s\n",
			o->view_html ? "html" : "cli");
		return -EINVAL;
	}
	if (o->view_html && o->view_cli) {
		fprintf(err, "scalene-bpf: choose one of --cli and --html\n");
		return -EINVAL;
	}
	return 0;
}

static const struct option *find_long(const char *name)
{
	const struct option *lo;

	for (lo = long_opts; lo->name; lo++) {
		if (!strcmp(lo->name, name))
			return lo;
	}
	return NULL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int options_load_config(const char *path, struct options *o, FILE *err)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, *key, *val, *c;
	size_t cap = 0;
	int lineno = 0, ret = 0;

	if (!f) {
		fprintf(err, "scalene-bpf: failed to open config file %s: %s\n", path,
			strerror(errno));
		return -EINVAL;
	}
	while (getline(&line, &cap, f) > 0) {
		const struct option *lo;

		lineno++;
		key = trim(line);
		if (!*key || *key == '#' || !strcmp(key, "---"))
			continue;
		c = strchr(key, ':');
		if (!c) {
			fprintf(err, "scalene-bpf: %s:%d: expected 'name: value'\n", path, lineno);
			ret = -EINVAL;
			break;
		}
		*c = '\0';
		key = trim(key);
		val = trim(c + 1);
		{
			char *h, q = 0;

			for (h = val; *h; h++) {
				if (q) {
					q = *h == q ? 0 : q;
				} else if (*h == '"' || *h == '\'') {
					q = *h;
				} else if (*h == '#' &&
					   (h == val || h[-1] == ' ' || h[-1] == '\t')) {
					*h = '\0';
					break;
				}
			}
			val = trim(val);
		}
		/* YAML spellings: a flow list [a, b] and quoted scalars. */
		if (*val == '[' && val[strlen(val) - 1] == ']') {
			val[strlen(val) - 1] = '\0';
			val++;
		}
		if ((*val == '"' || *val == '\'') && strlen(val) >= 2 &&
		    val[strlen(val) - 1] == *val) {
			val[strlen(val) - 1] = '\0';
			val++;
		}
		for (c = key; *c; c++) {
			if (*c == '_')
				*c = '-';
		}
		lo = find_long(key);
		if (!lo || lo->val == 'c' || lo->val == 'h' || lo->val == OPT_VERSION) {
			fprintf(err, "scalene-bpf: %s:%d: unknown option '%s'\n", path, lineno,
				key);
			ret = -EINVAL;
			break;
		}
		if (lo->has_arg == no_argument) {
			if (!strcmp(val, "false") || !strcmp(val, "no") || !strcmp(val, "0"))
				continue;
			if (strcmp(val, "true") && strcmp(val, "yes") && strcmp(val, "1") && *val) {
				fprintf(err, "scalene-bpf: %s:%d: %s takes true or false\n", path,
					lineno, key);
				ret = -EINVAL;
				break;
			}
			ret = apply(o, lo->val, NULL, lo->name, err);
		} else {
			/* Kept for the life of the options: freed by options_free. */
			char *copy = strdup(val);
			char **ow = realloc(o->owned, (o->nowned + 1) * sizeof(*ow));

			if (ow)
				o->owned = ow;
			if (!copy || !ow) {
				free(copy);
				ret = -ENOMEM;
				break;
			}
			o->owned[o->nowned++] = copy;
			ret = apply(o, lo->val, copy, lo->name, err);
		}
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}

/* --all: no program, and the options that need one process refused. */
static int check_all(struct options *o, int argc, char **argv, FILE *err)
{
	const char *why = NULL;

	if (o->cmd == CMD_RUN)
		why = "run starts one program; --all profiles the processes already there and "
		      "those started during the run";
	else if (optind < argc)
		why = "--all takes no program";
	else if (o->continuous && o->top)
		why = "top shows the host live; --continuous writes profiles: run them apart";
	else if (o->continuous && o->profile_interval)
		why = "--continuous writes a profile per interval (--interval); --profile-interval "
		      "rewrites whole-run profiles: choose one";
	else if (o->continuous && o->max_profiles)
		why = "--continuous keeps interval folders up to --max-disk, not --max-profiles";
	if (why) {
		fprintf(err, "scalene-bpf: %s%s%s\n", why, optind < argc ? ": " : "",
			optind < argc ? argv[optind] : "");
		return -EINVAL;
	}
	o->cmd = CMD_ALL;
	return 0;
}

static int parse_run_target(int argc, char **argv, struct options *o, const char *last_optarg,
			    FILE *err)
{
	if (optind >= argc) {
		fprintf(err, "scalene-bpf: run: no program given (see --help)\n");
		return -EINVAL;
	}
	/* getopt stops at "--" and consumes it; tell it apart from "--" given
	 * as an option's value (-o --). */
	o->raw_command =
		optind > 0 && !strcmp(argv[optind - 1], "--") && argv[optind - 1] != last_optarg;
	o->argv = argv + optind;
	o->argc = argc - optind;
	return 0;
}

static int parse_target(int argc, char **argv, struct options *o, const char *last_optarg,
			FILE *err);

/* top: the command it shows is run (a program, with or without the word
 * run), --pid or --all; CPU only unless --memory (then memory as run, --pid
 * --memory and --all --memory profile it). */
static int check_top(int argc, char **argv, struct options *o, const char *last_optarg, FILE *err)
{
	if (!o->memory)
		o->cpu_only = true;
	if (!o->refresh)
		o->refresh = DEFAULT_REFRESH_S;
	if (!o->all && !o->pid && o->cmd == CMD_NONE) {
		if (optind >= argc) {
			fprintf(err, "scalene-bpf: top: give a program (top run prog.py), "
				     "--pid PID or --all (see --help)\n");
			return -EINVAL;
		}
		o->cmd = CMD_RUN;
	}
	return parse_target(argc, argv, o, last_optarg, err);
}

int options_parse(int argc, char **argv, struct options *o, FILE *err)
{
	const char *sub = argc > 1 ? argv[1] : NULL;
	const char *last_optarg = NULL;
	char *view_args[2];
	int nview = 0;
	int c, idx, ret, base;

	memset(o, 0, sizeof(*o));
	o->rate_hz = DEFAULT_RATE_HZ;
	o->cpu_percent_threshold = DEFAULT_CPU_PERCENT_THRESHOLD;
	o->python = "python3";
	if (!sub) {
		options_usage(err);
		return -EINVAL;
	}
	if (!strcmp(sub, "run"))
		o->cmd = CMD_RUN;
	else if (!strcmp(sub, "view"))
		o->cmd = CMD_VIEW;
	else if (!strcmp(sub, "top"))
		o->top = true;
	/* A fresh getopt for each call: optind = 0 re-initialises all of its
	 * state; the subcommand, if any, stands in for argv[0]. */
	base = o->cmd || o->top ? 1 : 0;
	argv += base;
	argc -= base;
	optind = 0;
	opterr = 0;
	/* '+': stop at the first non-option, which begins the program. */
	for (;;) {
		const char *name;

		c = getopt_long(argc, argv, "+:o:c:vh", long_opts, (idx = -1, &idx));
		if (c == -1) {
			/* top [options] run [options] prog: run is a word. */
			if (o->top && o->cmd == CMD_NONE && optind < argc &&
			    !strcmp(argv[optind], "run") && strcmp(argv[optind - 1], "--")) {
				o->cmd = CMD_RUN;
				optind++;
				continue;
			}
			/* view takes its operands anywhere among its options. */
			if (o->cmd != CMD_VIEW || optind >= argc)
				break;
			if (nview >= 2) {
				fprintf(err, "scalene-bpf: view takes one profile, got '%s' too\n",
					argv[optind]);
				return -EINVAL;
			}
			view_args[nview++] = argv[optind++];
			continue;
		}
		name = c == '?' || c == ':' ? argv[optind - 1] : NULL;

		if (c == '?') {
			fprintf(err, "scalene-bpf: unknown option '%s' (see --help)\n", name);
			return -EINVAL;
		}
		if (c == ':') {
			fprintf(err, "scalene-bpf: option '%s' needs a value\n", name);
			return -EINVAL;
		}
		if (c == 'h') {
			o->cmd = CMD_HELP;
			return 0;
		}
		if (c == OPT_VERSION) {
			o->cmd = CMD_VERSION;
			return 0;
		}
		if (c == 'c') {
			o->config = optarg;
			ret = options_load_config(optarg, o, err);
			if (ret)
				return ret;
			continue;
		}
		last_optarg = optarg;
		ret = apply(o, c, optarg, idx >= 0 ? long_opts[idx].name : argv[optind - 1], err);
		if (ret)
			return ret;
	}
	if (o->cmd == CMD_VIEW)
		return view_operands(o, view_args, nview, err);
	if (o->top)
		return check_top(argc, argv, o, last_optarg, err);
	if (o->refresh > 0 || o->once) {
		fprintf(err, "scalene-bpf: --refresh and --once are options of top\n");
		return -EINVAL;
	}
	return parse_target(argc, argv, o, last_optarg, err);
}

/* What is profiled: run's program, --pid's process or --all's. */
static int parse_target(int argc, char **argv, struct options *o, const char *last_optarg,
			FILE *err)
{
	if (o->memory_budget && (!o->pid || o->all || !o->memory)) {
		fprintf(err, "scalene-bpf: --memory-budget is for --pid N --memory (run's "
			     "sampler costs what it costs; --all places its probes all the "
			     "time)\n");
		return -EINVAL;
	}
	if (o->memory_method && (!o->pid || o->all || !o->memory)) {
		fprintf(err, "scalene-bpf: --memory-method is for --pid N --memory\n");
		return -EINVAL;
	}
	if (o->memory_method == MEMORY_METHOD_INJECT && o->memory_budget) {
		fprintf(err, "scalene-bpf: --memory-budget bounds the probes' cost; the injected "
			     "sampler has no budget (--memory-method probes uses one)\n");
		return -EINVAL;
	}
	if ((o->interval_s || o->max_disk_mb || o->otlp_endpoint || o->pyroscope_url) &&
	    !o->continuous) {
		fprintf(err, "scalene-bpf: --interval, --max-disk, --otlp-endpoint and --pyroscope "
			     "are for --all --continuous\n");
		return -EINVAL;
	}
	if ((o->nheaders || o->queue_mb) && !o->otlp_endpoint && !o->pyroscope_url) {
		fprintf(err, "scalene-bpf: --header and --queue-mb are for --otlp-endpoint and "
			     "--pyroscope\n");
		return -EINVAL;
	}
	if (o->pyroscope_app && !o->pyroscope_url) {
		fprintf(err, "scalene-bpf: --pyroscope-app is for --pyroscope\n");
		return -EINVAL;
	}
	if (backend_url("--otlp-endpoint", o->otlp_endpoint,
			"http://localhost:4318 (an OpenTelemetry collector's OTLP/HTTP port)",
			err) ||
	    backend_url("--pyroscope", o->pyroscope_url,
			"http://localhost:4040 (a Pyroscope server)", err))
		return -EINVAL;
	if (o->pyroscope_app) {
		const char *p = o->pyroscope_app;

		while (*p && pyroscope_app_char(*p))
			p++;
		if (*p || !o->pyroscope_app[0]) {
			fprintf(err,
				"scalene-bpf: --pyroscope-app %s: Pyroscope takes letters, digits, "
				"'_', '-' and '.' in an application name\n",
				o->pyroscope_app);
			return -EINVAL;
		}
	}
	if (o->all)
		return check_all(o, argc, argv, err);
	if (o->continuous) {
		fprintf(err, "scalene-bpf: --continuous is for --all (with --pid P to follow "
			     "some processes only)\n");
		return -EINVAL;
	}
	if (o->npids > 1 || o->ncomms || o->nuids || o->nexclude_pids || o->max_profiles) {
		fprintf(err, "scalene-bpf: %s\n",
			o->npids > 1
				? "--pid takes one process, or several with --all"
				: "--comm, --uid, --exclude-pid and --max-profiles are for --all");
		return -EINVAL;
	}
	if (o->cmd == CMD_RUN) {
		if (o->pid) {
			fprintf(err, "scalene-bpf: run starts a program; use --pid without run "
				     "to attach\n");
			return -EINVAL;
		}
		return parse_run_target(argc, argv, o, last_optarg, err);
	}
	if (o->pid) {
		if (optind < argc) {
			fprintf(err,
				"scalene-bpf: --pid attaches to a running process; "
				"unexpected '%s'\n",
				argv[optind]);
			return -EINVAL;
		}
		o->cmd = CMD_ATTACH;
		return 0;
	}
	if (optind < argc) {
		fprintf(err,
			"scalene-bpf: unknown command '%s'; to profile a program: "
			"scalene-bpf run %s\n",
			argv[optind], argv[optind]);
		return -EINVAL;
	}
	fprintf(err, "scalene-bpf: nothing to do: give run PROGRAM, --pid PID or view "
		     "(see --help)\n");
	return -EINVAL;
}

void options_free(struct options *o)
{
	int i;

	for (i = 0; i < o->nowned; i++)
		free(o->owned[i]);
	free(o->owned);
	o->owned = NULL;
	o->nowned = 0;
}
