// SPDX-License-Identifier: BSD-2-Clause
/*
 * scalene-bpf: parse, set up, run, write, clean up.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/creds.h"
#include "model/facts.h"
#include "session/host.h"
#include "collect/loader.h"
#include "session/memduty.h"
#include "session/meminject.h"
#include "session/memprobe.h"
#include "session/hostmem.h"
#include "base/log.h"
#include "collect/nvml.h"
#include "cli/fleet.h"
#include "cli/options.h"
#include "report/output.h"
#include "model/profile.h"
#include "session/pyhook.h"
#include "target/python.h"
#include "target/runner.h"
#include "base/safefile.h"
#include "sampler/sampler.h"
#include "session/session.h"
#include "target/target.h"
#include "view/top.h"
#include "cli/view_cmd.h"

#define MAX_PROCS 8192
#define RINGBUF_BYTES (16 << 20)
/* --all: samples are counted in BPF (COUNTS_MAX entries per epoch); the
 * ring buffer carries process events, stacks, and the samples that found the
 * count table full. */
#define RINGBUF_BYTES_ALL (16 << 20)
/* --native: a CPU sample takes up to 20 KB (a copy of the thread's stack). */
#define RINGBUF_BYTES_NATIVE (64 << 20)
#define COUNTS_MAX 65536
/* --continuous: the counts are drained every 2 s, not four times a
 * second: a fleet's agent pays for each drain (the stacks of a drain are
 * handed out one by one, and a stack seen again in the next drain is
 * handed out again), and a profile of a minute needs no finer steps. */
#define CONTINUOUS_DRAIN_NS 2000000000ULL
/* --all: the loader's scheduling priority (nice).  It must keep up with
 * the ring buffer on a host whose CPUs are all busy; at nice 0 among fifty
 * busy processes it got 3% of a CPU and lost more samples than it kept.
 * Its own CPU use is what it is either way: only its turn comes sooner. */
#define ALL_NICE (-10)

static volatile sig_atomic_t got_signal;
/* The signal was sent to us (kill), not by the terminal to the whole
 * foreground group, which the child receives by itself. */
static volatile sig_atomic_t signal_sent;

/* top: the live view (NULL without top); nothing is written without -o; the
 * view should stop waiting (a signal, or q). */
static struct top *top_view;
static bool top_no_write;
static volatile sig_atomic_t top_stop;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	got_signal = sig;
	top_stop = 1;
	signal_sent = si && si->si_code <= 0;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

struct run_state {
	const struct options *opts;
	struct user_creds creds;
	struct target target;
	struct loader *loader;
	struct profile *profile;
	struct session *session;
	double start_mono, start_wall;
	double next_cut;	/* --continuous: when the next interval ends (mono s); 0: never */
	bool memory;		/* the allocation sampler is preloaded */
	char sampler[PATH_MAX]; /* its path */
	char *env[5];		/* what the program's environment gets for it */
	char gpu_lib[PATH_MAX]; /* the GPU library, when given to the program */
	bool gpu;
	char gpu_off[256];   /* why not, when it is not */
	struct nvml *nvml;   /* attach: the GPU's use sampled through NVML */
	uint64_t nvml_since; /* start of the period its next reading covers */
	uint64_t nvml_next;  /* when to read it next */
	bool uprobes;	     /* attach: allocation uprobes */
	struct pyhook hook;  /* run: the @profile builtin */
	bool hook_ready;
	char hook_why[PATH_MAX + 160]; /* run: why it is provided or not */
	struct memprobe_report probes;
	struct memprobe_placed placed; /* attach: where they are */
	struct memduty *duty;	       /* attach: their duty cycle */
	struct meminject *inject;      /* attach: the sampler put into the process instead */
	struct host *host;	       /* --all */
	struct hostmem *hm;	       /* --all --memory (the host's) */
	bool quit;		       /* top: q was typed */
	char what[512];		       /* top: what is profiled */
};

/* scalene_bpf.gpu on attach: NVML's readings, or why there are none. */
static void nvml_facts(struct run_state *rs, struct facts *f)
{
	struct facts_gpu *g = &f->gpu;

	f->has_gpu = true;
	g->nvml = true;
	snprintf(g->off, sizeof(g->off), "%s", rs->nvml ? "" : rs->gpu_off);
	profile__gpu_totals(rs->profile, &g->totals);
	if (rs->nvml)
		nvml__facts(rs->nvml, &g->nv);
}

/* The end of --pid --memory's duty cycle, said. */
static void duty_said(const struct facts_duty *d)
{
	fprintf(stderr,
		"scalene-bpf: memory probes were in place %.1f%% of the time (%llu windows of "
		"%.0f%%-%.0f%% of each %.0f s), to keep within %.0f%% of the program's CPU "
		"time; their %llu hits cost it about %.3f s of CPU, %.1f%% of its %.2f s "
		"(at %.2f us a hit, %s); its allocations are estimated from those windows",
		100 * d->open_part, (unsigned long long)d->windows, 100 * d->part_min,
		100 * d->part_max, d->cycle_s, 100 * d->budget, (unsigned long long)d->hits,
		d->cost_s, d->program_cpu_s > 0 ? 100 * d->cost_s / d->program_cpu_s : 0,
		d->program_cpu_s, d->hit_ns / 1e3, d->hit_measured ? "measured here" : "assumed");
	if (d->slowdown != 1.0)
		fprintf(stderr, ", weighed up %.2fx for the work the traps took from it there",
			d->slowdown);
	if (d->slowdown_rel_error >= 0)
		fprintf(stderr, " (+-%.0f%%)", 100 * d->slowdown_rel_error);
	fprintf(stderr, "\n");
	if (d->totals_low)
		fprintf(stderr,
			"scalene-bpf: in the windows the traps took %.0f%% of the program's CPU "
			"time, and the code between them ran slower too: its allocation totals are "
			"low (code that did nothing but allocate was measured at a quarter to a "
			"half "
			"of its own count); the lines' shares of them hold.  --memory-budget 100 "
			"counts every allocation, at the traps' full cost\n",
			100 * d->window_trap_share);
}

static int write_profile(struct run_state *rs, bool final)
{
	struct output_meta m = {
		.program = rs->target.program,
		.args = (const char *const *)rs->target.args,
		.nargs = rs->target.nargs,
		.program_dir = rs->target.program_dir,
		.command = rs->target.command,
		.elapsed_sec = mono_s() - rs->start_mono,
		.start_time_absolute = rs->start_wall,
		.start_time_perf = rs->start_mono,
		.cpu_percent_threshold = rs->opts->cpu_percent_threshold,
		.memory = rs->memory || rs->uprobes,
		.no_footprint = rs->uprobes,
		.async_waits = !rs->opts->no_async,
		.leaks = !rs->opts->no_leaks,
		.read_source = session__read_source,
		.ctx = rs->session,
	};
	const struct py_proc *pp = session__root_python(rs->session);
	struct facts *facts = NULL;
	struct output_job wctx = { 0 };
	int err;

	if (top_no_write)
		return 0;
	if (pp) {
		m.main_thread_id = pp->main_thread;
		m.main_pid = pp->pid;
	}
	if (rs->hook_ready)
		pyhook__poll(&rs->hook, rs->profile);
	if (final) {
		session__flush_async(rs->session);
		session__settle_gpu(rs->session);
	}
	facts = facts__new();
	if (facts && session__facts(rs->session, facts)) {
		facts__free(facts);
		facts = NULL;
	}
	if (facts && rs->opts->cmd == CMD_ATTACH)
		nvml_facts(rs, facts);
	if (facts && rs->inject) {
		facts->has_inject = true;
		meminject__facts(rs->inject, &facts->inject);
	}
	m.facts = facts;
	if (rs->opts->cmd == CMD_RUN && facts) {
		facts->has_decorator = true;
		facts->decorator.provided = rs->hook_ready;
		facts->decorator.why = rs->hook_why;
		facts->decorator.functions = profile__ndecorated(rs->profile);
		facts->decorator.bad_report_lines = rs->hook.bad_lines;
		facts->decorator.refused_past_limit = rs->hook.refused;
	}
	if (rs->uprobes && facts) {
		uint64_t stats[STAT_MAX] = { 0 };

		loader__stats(rs->loader, stats);
		facts->has_uprobes = true;
		memprobe__facts(&rs->probes, stats[STAT_UPROBE_HITS], m.elapsed_sec,
				&facts->uprobes);
		if (rs->duty) {
			facts->uprobes.has_duty = true;
			memduty__facts(rs->duty, mono_ns(), &facts->uprobes.duty);
		}
		if (final && rs->duty)
			duty_said(&facts->uprobes.duty);
		else if (final && rs->probes.hit_cost_ns >= 0 && m.elapsed_sec > 0) {
			double rate = stats[STAT_UPROBE_HITS] / m.elapsed_sec;

			fprintf(stderr,
				"scalene-bpf: memory probes fired %llu times (%.0f/s); at %.2f us "
				"a "
				"hit, measured here, that cost the program about %.1f%% of one "
				"CPU\n",
				(unsigned long long)stats[STAT_UPROBE_HITS], rate,
				rs->probes.hit_cost_ns / 1e3,
				100.0 * rate * rs->probes.hit_cost_ns / 1e9);
		}
	}
	wctx.p = rs->profile;
	wctx.m = &m;
	err = outfile_stream(rs->opts->outfile, output_emit, &wctx, &rs->creds);
	if (err == -ENOMEM) {
		pr_warn("failed to write the profile: out of memory\n");
	} else if (err) {
		char fallback[64];

		/* Never lose a profile: say where it went instead. */
		snprintf(fallback, sizeof(fallback), "/tmp/scalene-bpf-profile-%d.json",
			 (int)getpid());
		pr_warn("failed to write the profile to %s: %s\n", rs->opts->outfile,
			strerror(-err));
		if (!outfile_stream(fallback, output_emit, &wctx, &rs->creds))
			pr_warn("the profile was saved to %s instead\n", fallback);
		else
			pr_warn("and could not save it to %s either\n", fallback);
	} else if (final) {
		struct facts_inject fi = { .attached = true };
		char *warn;

		/* A sampler asked for and never loaded: why (said already
		 * if the process answered), not the session's guess for a
		 * preload that failed. */
		if (rs->inject)
			meminject__facts(rs->inject, &fi);
		warn = fi.attached ? session__memory_warnings(rs->session) : NULL;
		if (!fi.attached && fi.answer_s < 0)
			pr_warn("memory: not measured: %s\n",
				fi.why[0] ? fi.why : "the sampler was not loaded");
		if (warn)
			fprintf(stderr, "scalene-bpf: %s", warn);
		free(warn);
		warn = profile__outside_warning(rs->profile);
		if (warn)
			fprintf(stderr, "scalene-bpf: warning: %s\n", warn);
		free(warn);
		fprintf(stderr,
			"scalene-bpf: profile saved to %s (%llu samples)\n"
			"  to view it in the terminal: %s view --cli %s\n"
			"  to view it in a browser:    scalene view %s\n",
			rs->opts->outfile, (unsigned long long)profile__samples(rs->profile),
			log_command(), rs->opts->outfile, rs->opts->outfile);
	}
	facts__free(facts);
	/* Give back what building the pieces took rather than keep it for the
	 * next write. */
	malloc_trim(0);
	return err;
}

/* The session's view of the BPF side: the loader's calls. */
static int bpf_track(void *ctx, int tgid)
{
	return loader__track(ctx, tgid, proc_start_ticks(tgid));
}

static int bpf_untrack(void *ctx, int tgid)
{
	return loader__untrack(ctx, tgid);
}

static int bpf_seed_threads(void *ctx, int tgid)
{
	return loader__seed_threads(ctx, tgid);
}

static int bpf_set_python(void *ctx, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
			  uint64_t gil_hi)
{
	return loader__set_python(ctx, tgid, cfg, gil_lo, gil_hi);
}

static int bpf_code_probe(void *ctx, const char *path, uint64_t off)
{
	return loader__attach_code_probe(ctx, path, off);
}

static int bpf_code_probe_begin(void *ctx, const char *path, uint64_t off)
{
	return loader__code_probe_begin(ctx, path, off);
}

static int bpf_code_probe_result(void *ctx, int id)
{
	return loader__code_probe_result(ctx, id);
}

static int bpf_code_copies(void *ctx)
{
	return loader__drain_code_copies(ctx);
}

static int bpf_alloc_hits(void *ctx, int tgid, uint64_t *hits)
{
	return loader__alloc_hits(ctx, tgid, hits);
}

static int bpf_drain_counts(void *ctx, int tgid, uint32_t gen)
{
	enum counts_drain how = tgid == SESSION_COUNTS_DUE   ? COUNTS_PERIODIC
				: tgid == SESSION_COUNTS_ALL ? COUNTS_ALL
							     : COUNTS_IMAGE;

	return loader__drain_counts(ctx, how, tgid, gen);
}

static bool bpf_counts_stats(void *ctx, struct counts_stats *out)
{
	return loader__counts_stats(ctx, out);
}

static int bpf_stats(void *ctx, uint64_t *out)
{
	return loader__stats(ctx, out);
}

static int bpf_prog_runtime(void *ctx, uint64_t *run_ns, uint64_t *run_cnt)
{
	return loader__prog_runtime(ctx, run_ns, run_cnt);
}

static void bpf_kernel_report(void *ctx, struct loader_kernel_report *out)
{
	loader__kernel_report(ctx, out);
}

/* The files profiled, as the options say; the program's folder from the
 * target (NULL: each process's own, --all). */
static struct profile_filter report_files(const struct options *o, const struct target *t)
{
	return (struct profile_filter){
		.program_dir = t ? t->program_dir : NULL,
		.program_dir_given = t ? t->program_dir_given : NULL,
		.command = t && t->command,
		.profile_all = o->profile_all,
		.only = o->profile_only,
		.nonly = o->nprofile_only,
		.exclude = o->profile_exclude,
		.nexclude = o->nprofile_exclude,
	};
}

static int setup(struct run_state *rs)
{
	struct profile_filter filter = report_files(rs->opts, &rs->target);
	struct loader_opts lo = {
		.rate_hz = rs->opts->rate_hz,
		.follow_children = !rs->opts->no_follow,
		.count_idle = rs->opts->idle,
		.native_stacks = rs->opts->native,
		.native_unwind_bpf = rs->opts->native_unwind_bpf,
		.max_procs = MAX_PROCS,
		.ringbuf_bytes = RINGBUF_BYTES,
		.sampler_path = rs->memory ? rs->sampler : NULL,
		.gpu_path = rs->gpu ? rs->gpu_lib : NULL,
		.uprobe_sample_bytes =
			rs->uprobes ? (rs->opts->sampling_window ? rs->opts->sampling_window
								 : SCALENE_BPF_DEFAULT_SAMPLE_BYTES)
				    : 0,
		.on_event = session__handle,
	};
	struct session_opts so = { .memory = rs->memory,
				   .async_waits = !rs->opts->no_async,
				   .native = rs->opts->native,
				   .gpu_library = rs->gpu ? rs->gpu_lib : NULL,
				   .gpu_off = !rs->gpu && rs->gpu_off[0] ? rs->gpu_off : NULL,
				   .creds = &rs->creds };
	struct session_bpf bpf = {
		.track = bpf_track,
		.untrack = bpf_untrack,
		.seed_threads = bpf_seed_threads,
		.set_python = bpf_set_python,
		.code_probe = bpf_code_probe,
		.code_probe_begin = bpf_code_probe_begin,
		.code_probe_result = bpf_code_probe_result,
		.code_copies = bpf_code_copies,
		.alloc_hits = bpf_alloc_hits,
		.stats = bpf_stats,
		.prog_runtime = bpf_prog_runtime,
	};

	if (rs->opts->native)
		lo.ringbuf_bytes = RINGBUF_BYTES_NATIVE;
	if (rs->host) {
		/* Every exec on the host is looked at; each Python process
		 * gets a profile of its own. */
		lo.track_all = true;
		if (!rs->opts->native)
			lo.ringbuf_bytes = RINGBUF_BYTES_ALL;
		/* One loader keeps up with a whole host: samples are counted
		 * in BPF and drained on a timer. */
		lo.aggregate = true;
		lo.max_counts = COUNTS_MAX;
		bpf.drain_counts = bpf_drain_counts;
		bpf.counts_stats = bpf_counts_stats;
		so.host = host__session_host(rs->host);
		so.drain_ns = rs->opts->continuous ? CONTINUOUS_DRAIN_NS : 0;
	} else {
		rs->profile = profile__new(&filter);
		if (!rs->profile)
			return -ENOMEM;
	}
	/* The session is the ring buffer's consumer: made first, wired after. */
	so.profile = rs->profile;
	so.ncpus = libbpf_num_possible_cpus();
	so.rate_hz = rs->opts->rate_hz;
	rs->session = session__new(&so);
	if (!rs->session)
		return -ENOMEM;
	lo.ctx = rs->session;
	rs->loader = loader__open(&lo);
	if (!rs->loader)
		return -errno;
	bpf.ctx = rs->loader;
	if (rs->opts->native_unwind_bpf && loader__unwind_sink(rs->loader, &bpf.unwind))
		return -ENOTSUP;
	bpf.probe_check = loader__probe_check(rs->loader);
	bpf.probe_links = loader__probe_links();
	bpf.offcpu_hook = loader__offcpu_hook(rs->loader);
	bpf.kernel_report = bpf_kernel_report;
	session__set_bpf(rs->session, &bpf);
	if (rs->host)
		host__set_session(rs->host, rs->session);
	return 0;
}

static void teardown(struct run_state *rs)
{
	size_t i;

	for (i = 0; i < sizeof(rs->env) / sizeof(rs->env[0]); i++)
		free(rs->env[i]);
	if (rs->hook_ready)
		pyhook__cleanup(&rs->hook);
	rs->hook_ready = false;
	nvml__free(rs->nvml);
	rs->nvml = NULL;
	memduty__free(rs->duty);
	rs->duty = NULL;
	meminject__free(rs->inject);
	rs->inject = NULL;
	loader__free(rs->loader);
	session__free(rs->session);
	host__free(rs->host);
	profile__free(rs->profile);
	target_free(&rs->target);
}

/* The end of a run whose profile is written: the kernel's slow part of the
 * clean-up is left to a child (loader__free_detached). */
static void teardown_written(struct run_state *rs)
{
	loader__free_detached(rs->loader);
	rs->loader = NULL;
	teardown(rs);
}

static bool interval_due(struct run_state *rs, double *next)
{
	double now = mono_s();

	if (rs->opts->profile_interval <= 0 || now < *next)
		return false;
	*next = now + rs->opts->profile_interval;
	return true;
}

/* What top shows: the profile or the host, and what is profiled. */
static void top_source(struct run_state *rs, struct top_src *src, const char *state)
{
	size_t len = 0;
	int i;

	if (!rs->what[0] && rs->host) {
		snprintf(rs->what, sizeof(rs->what), "every Python process the filters take");
	} else if (!rs->what[0]) {
		if (rs->opts->cmd == CMD_ATTACH)
			len = snprintf(rs->what, sizeof(rs->what), "process %d:", rs->opts->pid);
		for (i = 0; i < rs->target.nargs && len + 1 < sizeof(rs->what); i++)
			len += snprintf(rs->what + len, sizeof(rs->what) - len, "%s%s",
					len ? " " : "", rs->target.args[i]);
	}
	src->profile = rs->profile;
	src->host = rs->host;
	src->what = rs->what;
	src->elapsed_s = mono_s() - rs->start_mono;
	src->state = state;
}

/* top: the profile has ended; state says how. */
static void top_finish(struct run_state *rs, const char *state)
{
	struct top_src src;

	if (!top_view)
		return;
	if (rs->quit || got_signal)
		top_stop = 1;
	top_source(rs, &src, state);
	top__finish(top_view, &src);
}

/* One turn of a profiling loop, run or attach: take in what BPF has sent,
 * let the session do its periodic work, write the interim profile when due. */
static void loop_step(struct run_state *rs, double *next)
{
	/* Decorations first: the samples read next may be of them. */
	if (rs->hook_ready)
		pyhook__poll(&rs->hook, rs->profile);
	int ms = session__poll_ms(rs->session, mono_ns());

	if (rs->duty)
		ms = memduty__due_ms(rs->duty, mono_ns(), ms);
	if (rs->inject)
		ms = meminject__due_ms(rs->inject, mono_ns(), ms);
	if (rs->next_cut > 0) {
		double until = rs->next_cut - mono_s();
		int cut_ms = until > 0 ? (int)(until * 1000) + 1 : 0;

		if (ms < 0 || cut_ms < ms)
			ms = cut_ms;
	}
	loader__poll(rs->loader, ms);
	session__tick(rs->session, mono_ns());
	if (rs->duty)
		memduty__tick(rs->duty, mono_ns());
	meminject__tick(rs->inject, mono_ns());
	if (interval_due(rs, next)) {
		if (rs->host)
			host__snapshot(rs->host, mono_s() - rs->start_mono);
		else
			write_profile(rs, false);
	}
	if (top_view && !rs->quit) {
		struct top_src src;

		top_source(rs, &src, NULL);
		rs->quit = top__tick(top_view, &src);
	}
}

/* top's q: the program is asked to stop as Ctrl-C would (SIGINT), then
 * told to (SIGTERM, 2 s later), then killed (5 s). */
static void stop_child(pid_t child, double *since, int *stage)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGKILL };
	static const double after[] = { 0, 2, 5 };
	double now = mono_s();

	if (!*since)
		*since = now;
	if (*stage < 3 && now - *since >= after[*stage])
		kill(child, sigs[(*stage)++]);
}

/* Polls until the child exits; returns its wait status. */
static int run_loop(struct run_state *rs, pid_t child)
{
	double next = mono_s() + rs->opts->profile_interval, stop_since = 0;
	int status = 0, stage = 0;
	char state[128];
	pid_t w;

	for (;;) {
		loop_step(rs, &next);
		if (rs->quit)
			stop_child(child, &stop_since, &stage);
		if (got_signal) {
			/* We keep running until the program ends, so that its
			 * profile is written: a signal sent to us is passed on. */
			if (signal_sent)
				kill(child, got_signal);
			got_signal = 0;
		}
		w = waitpid(child, &status, WNOHANG);
		if (w == child)
			break;
		if (w < 0 && errno != EINTR)
			break;
	}
	loader__drain(rs->loader);
	if (WIFSIGNALED(status))
		snprintf(state, sizeof(state), "the program was killed by %s%s",
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? " (core dumped)" : "");
	else
		snprintf(state, sizeof(state), "the program exited with status %d",
			 WEXITSTATUS(status));
	top_finish(rs, state);
	return status;
}

/* Memory profiling in run mode: the sampler library goes first in the
 * program's LD_PRELOAD (an allocator the user preloads comes after it, and
 * the sampler forwards to it), with its sampling means. */
static int prepare_memory(struct run_state *rs)
{
	const struct options *o = rs->opts;
	const char *old = getenv("LD_PRELOAD");
	int err;

	err = find_sampler_lib(rs->sampler, sizeof(rs->sampler));
	if (err && getenv("SCALENE_BPF_SAMPLER_LIB") && *getenv("SCALENE_BPF_SAMPLER_LIB")) {
		pr_warn("SCALENE_BPF_SAMPLER_LIB=%s cannot be read (%s); point it at %s or use "
			"--cpu-only\n",
			getenv("SCALENE_BPF_SAMPLER_LIB"), strerror(-err),
			SCALENE_BPF_SAMPLER_SONAME);
		return err;
	}
	if (err) {
		pr_warn("memory profiling needs %s, which was not found next to this program (%s); "
			"build it with make, point SCALENE_BPF_SAMPLER_LIB at it, or use "
			"--cpu-only\n",
			SCALENE_BPF_SAMPLER_SONAME, strerror(-err));
		return err;
	}
	if (strpbrk(rs->sampler, " :\t\n")) {
		pr_warn("the sampler library's path has a space or colon, which LD_PRELOAD cannot "
			"carry: %s; install it elsewhere or use --cpu-only\n",
			rs->sampler);
		return -EINVAL;
	}
	if (asprintf(&rs->env[0], "LD_PRELOAD=%s%s%s", rs->sampler, old && *old ? " " : "",
		     old ? old : "") < 0 ||
	    asprintf(&rs->env[1], "%s=%llu", SCALENE_BPF_ENV_SAMPLE_BYTES,
		     o->sampling_window
			     ? o->sampling_window
			     : (unsigned long long)SCALENE_BPF_DEFAULT_SAMPLE_BYTES) < 0 ||
	    asprintf(&rs->env[2], "%s=%llu", SCALENE_BPF_ENV_COPY_SAMPLE_BYTES,
		     o->copy_window
			     ? o->copy_window
			     : (unsigned long long)SCALENE_BPF_DEFAULT_COPY_SAMPLE_BYTES) < 0) {
		rs->env[0] = rs->env[1] = rs->env[2] = NULL;
		return -ENOMEM;
	}
	rs->memory = true;
	return 0;
}

/* --no-gpu, or --cpu-only (as in Scalene, the CPU alone): GPU profiling
 * off, by run's library or attach's NVML alike. */
static bool gpu_refused(struct run_state *rs)
{
	if (!rs->opts->no_gpu && !rs->opts->cpu_only)
		return false;
	snprintf(rs->gpu_off, sizeof(rs->gpu_off), "%s",
		 rs->opts->no_gpu ? "--no-gpu" : "--cpu-only");
	return true;
}

/* GPU in run mode: the CUDA driver loads the GPU library into the program
 * (CUDA_INJECTION64_PATH) at its first cuInit(); a program that never
 * initialises CUDA never maps it. */
static void prepare_gpu(struct run_state *rs)
{
	const char *old = getenv("CUDA_INJECTION64_PATH");
	int err;

	if (gpu_refused(rs))
		return;
	err = find_gpu_lib(rs->gpu_lib, sizeof(rs->gpu_lib));
	if (err && getenv("SCALENE_BPF_GPU_LIB") && *getenv("SCALENE_BPF_GPU_LIB")) {
		/* Asked for by name: said, not only written in the profile. */
		snprintf(rs->gpu_off, sizeof(rs->gpu_off), "SCALENE_BPF_GPU_LIB=%.160s: %s",
			 getenv("SCALENE_BPF_GPU_LIB"), strerror(-err));
		pr_warn("no GPU profiling: %s\n", rs->gpu_off);
		return;
	}
	if (err) {
		snprintf(rs->gpu_off, sizeof(rs->gpu_off),
			 "%s was not found next to this program (%s): it is built where a CUDA "
			 "toolkit with CUPTI is installed (CUDA_HOME)",
			 SCALENE_BPF_GPU_SONAME, strerror(-err));
		return;
	}
	if (old && *old && strcmp(old, rs->gpu_lib)) {
		snprintf(rs->gpu_off, sizeof(rs->gpu_off),
			 "CUDA_INJECTION64_PATH already names %.180s, which is left in place", old);
		pr_warn("no GPU profiling: %s\n", rs->gpu_off);
		return;
	}
	if (asprintf(&rs->env[3], "CUDA_INJECTION64_PATH=%s", rs->gpu_lib) < 0 ||
	    (rs->opts->gpu_call_sample > 1 &&
	     asprintf(&rs->env[4], "%s=%u", SCALENE_BPF_GPU_ENV_CALL_SAMPLE,
		      rs->opts->gpu_call_sample) < 0)) {
		rs->env[3] = rs->env[4] = NULL;
		snprintf(rs->gpu_off, sizeof(rs->gpu_off), "out of memory");
		return;
	}
	rs->gpu = true;
}

static int cmd_run(const struct options *o)
{
	struct run_state rs = { .opts = o };
	struct launch l = { .pid = -1, .gate_fd = -1, .err_fd = -1 };
	const char *envv[8];
	char why[512], image[PATH_MAX];
	int err, status;
	size_t i, n;

	/* From the start: a signal during the set-up must not kill us with
	 * the program waiting at the gate (it would run unprofiled). */
	install_signals();
	err = creds_from_env(&rs.creds);
	if (!err) {
		struct target_command cmd = {
			.argv = o->argv,
			.argc = o->argc,
			.raw = o->raw_command,
			.python = o->python,
		};

		err = target_from_command(&cmd, &rs.target);
	}
	if (err)
		goto out;
	err = python__check_binary(rs.target.exec_path, why, sizeof(why));
	if (err) {
		pr_warn("%s\n", why);
		goto out;
	}
	err = top_no_write ? 0 : outfile_check(o->outfile, &rs.creds);
	if (err) {
		pr_warn("cannot write the profile to %s: %s; choose another path with -o\n",
			o->outfile, strerror(-err));
		goto out;
	}
	if (!o->cpu_only) {
		err = prepare_memory(&rs);
		if (err)
			goto out;
	}
	prepare_gpu(&rs);
	if (pyhook__wanted(&rs.target, &rs.creds, rs.hook_why, sizeof(rs.hook_why)) ||
	    o->profile_builtin) {
		if (o->profile_builtin)
			snprintf(rs.hook_why, sizeof(rs.hook_why), "--profile-builtin");
		err = pyhook__prepare(&rs.hook, &rs.creds);
		if (err) {
			pr_warn("the @profile builtin is not provided (%s): decorated programs "
				"stop with NameError\n",
				strerror(-err));
			snprintf(rs.hook_why, sizeof(rs.hook_why), "it could not be prepared: %s",
				 strerror(-err));
		}
		rs.hook_ready = !err;
	}
	pr_debug("the @profile builtin is %sprovided: %s\n", rs.hook_ready ? "" : "not ",
		 rs.hook_why);
	for (i = 0, n = 0; i < sizeof(rs.env) / sizeof(rs.env[0]); i++) {
		if (rs.env[i])
			envv[n++] = rs.env[i];
	}
	if (rs.hook_ready) {
		envv[n++] = rs.hook.pythonpath_env;
		envv[n++] = rs.hook.report_env;
	}
	envv[n] = NULL;
	l.env = envv;
	err = setup(&rs);
	if (err)
		goto out;
	err = runner_spawn(rs.target.exec_argv, &rs.creds, &l);
	if (err) {
		pr_warn("failed to start %s: %s\n", rs.target.exec_argv[0], strerror(-err));
		goto out;
	}
	/* Children not followed: their decorations do not count. */
	if (o->no_follow)
		rs.hook.only_pid = l.pid;
	err = session__add_root(rs.session, l.pid, NULL);
	if (err) {
		runner_abort(&l);
		goto out;
	}
	if (!target_exec_image(rs.target.exec_path, image, sizeof(image)))
		session__root_will_exec(rs.session, image);
	if (got_signal) {
		pr_warn("interrupted (%s) before the program started; it was not run\n",
			strsignal(got_signal));
		runner_abort(&l);
		err = 128 + got_signal;
		goto out_noprofile;
	}
	rs.start_mono = mono_s();
	rs.start_wall = clock_s(CLOCK_REALTIME);
	err = runner_release(&l);
	if (err) {
		pr_warn("failed to run %s: %s\n", rs.target.exec_argv[0], strerror(-err));
		err = 127;
		goto out_noprofile;
	}
	status = run_loop(&rs, l.pid);
	write_profile(&rs, true);
	err = exit_status_of(status);
	if (err && !rs.hook_ready)
		pr_warn("the program failed; the @profile builtin was not provided (%s): if it "
			"stopped with NameError: name 'profile' is not defined, run it again with "
			"--profile-builtin\n",
			rs.hook_why);
	/* A profile of nothing is a failure, unless the program failed first. */
	if (!session__interpreters(rs.session)) {
		session__explain_root(rs.session, why, sizeof(why));
		pr_warn("no Python process was profiled: %s\n", why);
		if (!err)
			err = 1;
	}
	teardown_written(&rs);
	return err;
out_noprofile:
	teardown(&rs);
	return err;
out:
	teardown(&rs);
	return 1;
}

/* --memory on attach, first choice: the sampler put into the process
 * (meminject.h).  0 with rs->memory set when it will be, 0 with nothing set
 * when probes are to be placed instead, -errno when neither. */
static int inject_prepare(struct run_state *rs, const struct py_proc *pp)
{
	const struct options *o = rs->opts;
	struct meminject_opts mo = {
		.pp = pp,
		.sampler = rs->sampler,
		.sample_bytes = o->sampling_window ?: SCALENE_BPF_DEFAULT_SAMPLE_BYTES,
	};
	char why[512];
	int err = find_sampler_lib(rs->sampler, sizeof(rs->sampler));

	if (err)
		snprintf(why, sizeof(why), "%s was not found next to this program (%s)",
			 SCALENE_BPF_SAMPLER_SONAME, strerror(-err));
	else {
		rs->inject = meminject__new(&mo, why, sizeof(why));
		err = rs->inject ? 0 : -errno;
	}
	if (!err) {
		snprintf(rs->sampler, sizeof(rs->sampler), "%s", meminject__library(rs->inject));
		rs->memory = true;
		return 0;
	}
	rs->sampler[0] = '\0';
	if (o->memory_method == MEMORY_METHOD_INJECT) {
		pr_warn("memory: cannot put the sampler into process %d: %s\n", pp->pid, why);
		return err;
	}
	pr_warn("memory: the sampler cannot be put into process %d (%s): its allocators are "
		"probed instead\n",
		pp->pid, why);
	return 0;
}

/* The request, once the sampler's probes are in place: without it the
 * process profiles CPU only. */
static void inject_start(struct run_state *rs, int pid)
{
	char why[512];

	/* The sampler's own thread is not the program's. */
	session__leave_out_threads(rs->session, pid, SCALENE_BPF_SAMPLER_THREAD);
	if (!meminject__start(rs->inject, why, sizeof(why))) {
		pr_info("memory: process %d asked to load the sampler\n", pid);
		return;
	}
	pr_warn("memory: failed to ask process %d to load the sampler: %s; profiling CPU only\n",
		pid, why);
	meminject__end(rs->inject);
}

/* --memory on attach: probes on the allocators, and what they cost. */
static int attach_memory(struct run_state *rs, int pid, const struct py_proc *pp)
{
	double budget = rs->opts->memory_budget ?: MEMORY_BUDGET_DEFAULT;
	int i, n = memprobe__attach(rs->loader, pid, pp, &rs->probes, &rs->placed);

	for (i = 0; i < rs->probes.nsites; i++) {
		const struct memprobe_site *s = &rs->probes.sites[i];

		if (s->offset < 0)
			pr_warn("memory: %s in %s not probed: %s\n", s->func, s->module, s->why);
		else
			pr_info("memory: probing %s in %s at +%d\n", s->func, s->module, s->offset);
	}
	if (n <= 0) {
		pr_warn("memory: no allocation function of process %d could be probed; "
			"profiling CPU only\n",
			pid);
		return n;
	}
	if (budget < 1) {
		rs->duty = memduty__new(rs->loader, rs->session, pid, &rs->placed, budget,
					rs->probes.hit_cost_ns, mono_ns());
		if (!rs->duty)
			return -ENOMEM;
		pr_warn("memory: each allocation of process %d traps to the kernel while the "
			"probes are in place (%.2f us a hit%s), so they are placed for a window of "
			"each second that keeps their cost within %.0f%% of its CPU time "
			"(--memory-budget), and its allocations are estimated from the windows; "
			"frees are not followed, so there is no footprint, peak or leak report "
			"(scalene-bpf run gives them)\n",
			pid,
			(rs->probes.hit_cost_ns >= 0 ? rs->probes.hit_cost_ns
						     : MEMDUTY_HIT_NS_UNMEASURED) /
				1e3,
			rs->probes.hit_cost_ns >= 0 ? " on this machine"
						    : ", assumed: not measurable here",
			100 * budget);
	} else if (rs->probes.hit_cost_ns >= 0)
		pr_warn("memory: every allocation of process %d now traps to the kernel, about "
			"%.2f us each on this machine; frees are not followed, so there is no "
			"footprint, peak or leak report (scalene-bpf run gives them)\n",
			pid, rs->probes.hit_cost_ns / 1e3);
	return n;
}

/* GPU on attach: CUPTI cannot be put into a running process, so NVML's
 * readings of its GPU use are sampled from outside.  No NVML (no driver,
 * no GPU) is no error: the profile says why. */
static void attach_gpu(struct run_state *rs, int pid)
{
	const char *env = getenv(NVML_ENV_LIB);

	if (gpu_refused(rs))
		return;
	rs->nvml = nvml__open(rs->gpu_off, sizeof(rs->gpu_off));
	if (!rs->nvml) {
		/* Asked for by name: said, not only written in the profile. */
		if (env && *env)
			pr_warn("no GPU profiling: %s\n", rs->gpu_off);
		else
			pr_info("no GPU profiling: %s\n", rs->gpu_off);
		return;
	}
	profile__gpu_start(rs->profile, pid, 1);
	rs->nvml_since = mono_ns();
	rs->nvml_next = rs->nvml_since + NVML_POLL_MS * 1000000ULL;
	pr_info("gpu: process %d's GPU use read through NVML every %d ms\n", pid, NVML_POLL_MS);
}

/* A reading when one is due (or now, at the end): the GPU's use over the
 * period since the last reading.  A failed one leaves the period to the
 * next reading. */
static void attach_gpu_poll(struct run_state *rs, int pid, bool now_too)
{
	uint64_t now = mono_ns();
	struct nvml_reading r;

	if (!rs->nvml || (!now_too && now < rs->nvml_next))
		return;
	rs->nvml_next = now + NVML_POLL_MS * 1000000ULL;
	if (nvml__poll(rs->nvml, pid, &r))
		return;
	profile__gpu_use(rs->profile, pid, rs->nvml_since, now, r.busy);
	if (r.mem_bytes >= 0)
		profile__gpu_memory(rs->profile, pid, rs->nvml_since, r.mem_bytes);
	rs->nvml_since = now;
}

/* The target has exited: a pidfd turns readable as soon as it ends, a zombie
 * its parent has not reaped included, which kill(pid, 0) still finds. */
static bool target_gone(int pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	char path[64];
	FILE *f;
	char state = 0;

	if (pidfd >= 0)
		return poll(&p, 1, 0) > 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	/* Without pidfds: the state after the command name. */
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z' || state == 'X';
}

static int cmd_attach(const struct options *o)
{
	struct run_state rs = { .opts = o };
	struct py_proc pp;
	char why[256];
	double deadline;
	double next;
	int err, tries, pidfd;
	const char *state = "stopped";

	/* From the start: a signal during the set-up stops us cleanly, with
	 * the (empty) profile written and everything released. */
	install_signals();
	err = creds_from_env(&rs.creds);
	if (err)
		return 1;
	if (kill(o->pid, 0) && errno == ESRCH) {
		pr_warn("no process with PID %d\n", o->pid);
		return 1;
	}
	/* A process that is still starting up gets a few seconds. */
	for (tries = 0; tries < 200; tries++) {
		err = python__detect(o->pid, &pp, why, sizeof(why));
		if (err != -EAGAIN)
			break;
		usleep(10 * 1000);
	}
	if (err == -EACCES || err == -EPERM) {
		pr_warn("cannot inspect process %d: %s (run as root, or grant CAP_SYS_PTRACE)\n",
			o->pid, why);
		return 1;
	}
	if (err) {
		pr_warn("cannot profile process %d: %s\n", o->pid, why);
		return 1;
	}
	err = target_from_pid(o->pid, &rs.target);
	if (!err && !top_no_write)
		err = outfile_check(o->outfile, &rs.creds);
	if (err) {
		pr_warn("cannot write the profile to %s: %s; choose another path with -o\n",
			o->outfile, strerror(-err));
		target_free(&rs.target);
		return 1;
	}
	/* A budget given is for the probes: auto then means them. */
	if (o->memory && o->memory_method != MEMORY_METHOD_PROBES &&
	    !(o->memory_method == MEMORY_METHOD_AUTO && o->memory_budget) &&
	    inject_prepare(&rs, &pp)) {
		teardown(&rs);
		return 1;
	}
	rs.uprobes = o->memory && !rs.memory;
	err = setup(&rs);
	if (!err)
		err = session__add_root(rs.session, o->pid, &pp);
	if (err) {
		teardown(&rs);
		return 1;
	}
	if (rs.inject)
		inject_start(&rs, o->pid);
	if (rs.uprobes && attach_memory(&rs, o->pid, &pp) <= 0)
		rs.uprobes = false;
	attach_gpu(&rs, o->pid);
	pidfd = syscall(SYS_pidfd_open, o->pid, 0);
	rs.start_mono = mono_s();
	rs.start_wall = clock_s(CLOCK_REALTIME);
	deadline = o->duration > 0 ? rs.start_mono + o->duration : 0;
	next = rs.start_mono + o->profile_interval;
	pr_info("attached to process %d; Ctrl-C to stop\n", o->pid);
	while (!got_signal && !rs.quit && !session__root_exited(rs.session)) {
		loop_step(&rs, &next);
		attach_gpu_poll(&rs, o->pid, false);
		if (deadline && mono_s() >= deadline) {
			state = "--duration reached";
			break;
		}
		if (target_gone(o->pid, pidfd))
			break;
	}
	if (rs.duty)
		memduty__end(rs.duty, mono_ns());
	/* Before the last drain: the sampler's last samples come in first. */
	meminject__end(rs.inject);
	loader__drain(rs.loader);
	attach_gpu_poll(&rs, o->pid, true);
	if (!got_signal && !rs.quit && strcmp(state, "--duration reached"))
		state = "the process has ended";
	top_finish(&rs, state);
	err = write_profile(&rs, true);
	if (pidfd >= 0)
		close(pidfd);
	teardown_written(&rs);
	return err ? 1 : 0;
}

/* --all --memory: the probes go on as each followed Python process is seen
 * (hostmem.h); what a hit costs is measured first and said, as for --pid. */
static int all_memory(struct run_state *rs)
{
	const struct options *o = rs->opts;
	double cost = loader__uprobe_cost_ns(rs->loader);
	bool filtered = o->npids || o->ncomms || o->nuids || o->nexclude_pids;

	rs->hm = hostmem__new(rs->loader, cost, filtered);
	if (!rs->hm)
		return -ENOMEM;
	host__set_memory(rs->host, rs->hm);
	if (cost >= 0)
		pr_warn("memory: every allocation of the followed Python processes now traps to "
			"the kernel, about %.2f us each on this machine (%s, for up to %d at "
			"once%s); "
			"frees are not followed: no footprint, peak or leaks\n",
			cost / 1e3,
			filtered ? "probed per process"
				 : "Python's allocator is probed per interpreter file, for every "
				   "Python process; libc per process",
			HOSTMEM_MAX_LIBC,
			filtered ? ": processes the filters leave out do not trap" : "");
	else
		pr_warn("memory: the cost of a probe hit could not be measured here: %s\n",
			strerror((int)-cost));
	return 0;
}

/* --all: every Python process the filters take, until Ctrl-C or
 * --duration; one profile each and index.json in the output directory. */
static int cmd_all(const struct options *o)
{
	struct run_state rs = { .opts = o };
	struct host_opts ho = {
		.pids = o->pids,
		.npids = o->npids,
		.comms = o->comms,
		.ncomms = o->ncomms,
		.uids = o->uids,
		.nuids = o->nuids,
		.exclude_pids = o->exclude_pids,
		.nexclude_pids = o->nexclude_pids,
		.no_follow = o->no_follow,
		.files = report_files(o, NULL),
		.cpu_percent_threshold = o->cpu_percent_threshold,
		.async_waits = !o->no_async,
		.dir = o->outfile,
		.max_profiles = o->max_profiles,
		.creds = &rs.creds,
		.rate_hz = o->rate_hz,
		.interval_s = !o->continuous  ? 0
			      : o->interval_s ? o->interval_s
					      : DEFAULT_INTERVAL_S,
		.profile_done = o->continuous ? fleet__profile : NULL,
		.max_disk_bytes =
			(uint64_t)((o->max_disk_mb ? o->max_disk_mb : DEFAULT_MAX_DISK_MB) * 1e6),
	};
	double deadline, next;
	int err, n;

	struct fleet *fleet = NULL;

	install_signals();
	if (creds_from_env(&rs.creds))
		return 1;
	if (o->otlp_endpoint || o->pyroscope_url) {
		fleet = fleet__new(o);
		if (!fleet)
			return 1;
		ho.interval_done = fleet__interval;
		ho.sink_json = fleet__json;
		ho.sink_ctx = fleet;
	}
	rs.start_mono = mono_s();
	rs.start_wall = clock_s(CLOCK_REALTIME);
	ho.start_mono = rs.start_mono;
	ho.start_wall = rs.start_wall;
	rs.host = host__new(&ho);
	if (!rs.host) {
		fleet__free(fleet);
		return 1;
	}
	if (setpriority(PRIO_PROCESS, 0, ALL_NICE))
		pr_debug("could not raise the loader's priority: %s\n", strerror(errno));
	rs.uprobes = o->memory;
	err = setup(&rs);
	if (!err && rs.uprobes)
		err = all_memory(&rs);
	if (err) {
		teardown(&rs);
		fleet__free(fleet);
		return 1;
	}
	/* After BPF is in place: a process started during the scan is seen by
	 * its exec, one that was there by the scan (both: followed once). */
	n = host__scan(rs.host);
	deadline = o->duration > 0 ? rs.start_mono + o->duration : 0;
	next = mono_s() + o->profile_interval;
	rs.next_cut = ho.interval_s ? rs.start_mono + ho.interval_s : 0;
	pr_info("following %d process%s that the filters take; Ctrl-C to stop\n", n,
		n == 1 ? "" : "es");
	if (ho.interval_s)
		pr_info("a profile per process every %g s into %s/intervals/\n", ho.interval_s,
			o->outfile);
	while (!got_signal && !rs.quit) {
		loop_step(&rs, &next);
		if (deadline && mono_s() >= deadline)
			break;
		/* What BPF sent up to the cut goes into the interval that ends:
		 * taken in first.  The next cut keeps to the grid, unless this
		 * one came more than an interval late. */
		if (rs.next_cut > 0 && mono_s() >= rs.next_cut) {
			loader__drain(rs.loader);
			host__cut(rs.host, mono_s() - rs.start_mono);
			rs.next_cut += ho.interval_s;
			if (rs.next_cut <= mono_s())
				rs.next_cut = mono_s() + ho.interval_s;
		}
	}
	loader__drain(rs.loader);
	top_finish(&rs, got_signal || rs.quit ? "stopped" : "--duration reached");
	session__end_all(rs.session);
	if (fleet)
		fleet__ending(fleet);
	err = top_no_write ? 0 : host__finish(rs.host, mono_s() - rs.start_mono);
	if (rs.uprobes) {
		uint64_t stats[STAT_MAX] = { 0 };

		loader__stats(rs.loader, stats);
		hostmem__report(rs.hm, stats[STAT_UPROBE_HITS], mono_s() - rs.start_mono);
	}
	teardown_written(&rs);
	fleet__free(fleet);
	return err ? 1 : 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* top: the live view around run, --pid or --all.  Without -o nothing is
 * written; --all's host still writes each ended process's profile, into a
 * folder of the user's that is removed at the end. */
static int cmd_top(struct options *o, bool outfile_given)
{
	struct top_opts to = {
		.refresh_s = o->refresh,
		.once = o->once,
		.all = o->cmd == CMD_ALL,
		.verbose = o->verbose,
		.stop = &top_stop,
	};
	char tmpdir[] = "/tmp/scalene-bpf-top-XXXXXX";
	struct user_creds creds;
	struct fs_creds saved;
	bool tmp = false;
	int ret;

	top_no_write = !outfile_given;
	if (o->cmd == CMD_ALL && top_no_write) {
		if (creds_from_env(&creds))
			return 1;
		creds_fs_user(&creds, &saved);
		tmp = mkdtemp(tmpdir) != NULL;
		creds_fs_self(&saved);
		if (!tmp) {
			pr_warn("cannot make a temporary folder in /tmp: %s\n", strerror(errno));
			return 1;
		}
		o->outfile = tmpdir;
	}
	top_view = top__new(&to);
	if (!top_view) {
		ret = 1;
	} else {
		ret = o->cmd == CMD_RUN	     ? cmd_run(o)
		      : o->cmd == CMD_ATTACH ? cmd_attach(o)
					     : cmd_all(o);
		top__free(top_view);
		top_view = NULL;
	}
	if (tmp) {
		/* As the user: a link put in the folder takes nothing of root's. */
		creds_fs_user(&creds, &saved);
		nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		creds_fs_self(&saved);
	}
	return ret;
}

/* Writes arg for a shell: as it is when it needs no quoting, else quoted. */
static void shell_word(FILE *f, const char *arg)
{
	const char *c;

	if (*arg && strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				"@%_+=:,./-") == strlen(arg)) {
		fputs(arg, f);
		return;
	}
	fputc('\'', f);
	for (c = arg; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", f);
		else
			fputc(*c, f);
	}
	fputc('\'', f);
}

/*
 * Profiling loads BPF programs: without root (or the capabilities it takes),
 * says so before anything else fails, with the command that works, this
 * executable by its full path (sudo's PATH has no virtualenv's bin/).
 * 0 when the process has what it needs.
 */
static int need_privileges(int argc, char **argv)
{
	char missing[96], exe[PATH_MAX];
	ssize_t n;
	int i;

	if (!creds_missing_caps(missing, sizeof(missing)))
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	pr_warn("profiling loads BPF programs, which needs root: run it with sudo, as\n");
	fputs("  sudo ", stderr);
	shell_word(stderr, n > 0 ? exe : argv[0]);
	for (i = 1; i < argc; i++) {
		fputc(' ', stderr);
		shell_word(stderr, argv[i]);
	}
	fprintf(stderr,
		"\n(the program then runs as you, and the profile is yours), or run it with "
		"%s\n",
		missing);
	return 1;
}

int main(int argc, char **argv)
{
	struct options o;
	bool outfile_given;
	int ret;

	log_set_command(argv[0]);
	if (options_parse(argc, argv, &o, stderr))
		return 2;
	log_set_level(o.verbose);
	outfile_given = o.outfile != NULL;
	if (!o.outfile && o.cmd != CMD_VIEW)
		o.outfile = o.cmd == CMD_ALL ? DEFAULT_OUTDIR : DEFAULT_OUTFILE;
	switch (o.cmd) {
	case CMD_HELP:
		options_usage(stdout);
		return 0;
	case CMD_VERSION:
		printf("scalene-bpf %s\n", SCALENE_BPF_VERSION);
		return 0;
	case CMD_VIEW:
		return view_main(&o);
	case CMD_RUN:
	case CMD_ATTACH:
	case CMD_ALL:
		if (need_privileges(argc, argv)) {
			ret = 1;
			break;
		}
		if (o.top) {
			ret = cmd_top(&o, outfile_given);
			break;
		}
		ret = o.cmd == CMD_RUN	    ? cmd_run(&o)
		      : o.cmd == CMD_ATTACH ? cmd_attach(&o)
					    : cmd_all(&o);
		break;
	default:
		options_usage(stderr);
		ret = 2;
	}
	options_free(&o);
	return ret;
}
