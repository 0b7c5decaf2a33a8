// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/clock.h"
#include "collect/counts.h"
#include "base/creds.h"
#include "model/facts.h"
#include "base/hmap.h"
#include "session/host.h"
#include "session/hostmem.h"
#include "session/intervals.h"
#include "base/log.h"
#include "report/output.h"
#include "model/profile.h"
#include "target/labels.h"
#include "target/python.h"
#include "base/safefile.h"
#include "target/target.h"

/* Processes kept in the index; past it they are counted only. */
#define MAX_ENTRIES 100000
/* Arguments of a command line kept in the index, and their bytes. */
#define MAX_ARGS 64
#define MAX_CMDLINE 4096
/* A fork child that execs within this long was made to run another
 * program (subprocess, a shell): only its new image is listed. */
#define FORK_EXEC_S 0.1
/* Profiles of ended processes kept in the directory by default. */
#define DEFAULT_MAX_PROFILES 1000
/* --continuous: the ended processes the run's index lists (fold_ended). */
#define CONTINUOUS_ENDED_KEPT 1000
/* index.json's format; a reader refuses another major version. */
#define INDEX_VERSION 1

/* A command line, each argument valid UTF-8; a fork child that has not
 * exec'ed shares its parent's. */
struct cmdline {
	int refs, n;
	char *argv[];
};

/* A profile's numbers (entry_totals). */
struct totals {
	double cpu_s, python_s, native_s, system_s, blocked_s;
	double await_s; /* event-loop idle time credited to awaits */
	uint64_t samples;
};

/* One process image: profiled (a profile is being built or was written), or
 * Python that could not be profiled. */
struct hproc {
	int pid, ns_pid, ppid;
	long uid;
	char comm[32];
	struct cmdline *cmdline; /* NULL: none could be read */
	char python[32];	 /* "" when not known */
	char *file;		 /* the profile's name in the directory, or NULL */
	char *not_profiled;
	double started_s;
	bool live, exited, has_end;
	bool fold;	 /* --continuous: about to be folded out of the run's index */
	double end_mono; /* when it ended (has_end), monotonic s */
	bool hidden;	 /* a fork that only exec'ed: not listed */
	double forked_s; /* a fork child: when, in the run's seconds; else -1 */
	enum session_end_why ended;
	int exit_status; /* a wait status */
	double cpu_s, python_s, native_s, system_s, blocked_s;
	double await_s; /* event-loop idle time credited to awaits */
	uint64_t samples;
	/* --continuous: the numbers of the intervals' profiles written so far
	 * (the counts restarted after each), and how many were written. */
	struct totals done;
	int pieces;
	uint64_t hits_cut;  /* --memory: alloc_hits at the last cut */
	double peak_rss_mb; /* < 0: not known */
	/* --memory: the allocation-probe hits counted for this image, as of
	 * its end or the latest snapshot; < 0: not known. */
	int64_t alloc_hits;
	/* While live. */
	struct profile *profile;
	struct target target;
	uint64_t main_thread;
	/* Where it runs (its cgroup, container, pod), read when first seen. */
	struct proc_labels labels;
	bool labels_read;
};

struct host {
	struct host_opts o;
	const struct user_creds *creds;
	struct session *session;
	struct session_host sh;
	double start_mono, start_wall, start_boot, rate_hz;
	long clk_tck;
	const char *dir;
	long *uids; /* o.uids as numbers */
	int nuids;
	struct hproc **procs;
	int nprocs, cap;
	struct hmap *live;   /* pid -> its live entry */
	struct hmap *images; /* pid -> images of it seen so far (file name suffix) */
	uint64_t not_python, unsupported, filtered, table_full, write_failed, rotated;
	/* Ended processes' profiles in the order they were written (a ring),
	 * for rotation past max_files. */
	struct hproc **fifo;
	int nfifo, fifo_cap, fifo_head, max_files;
	bool told_write_failure;
	char last_write_error[256];
	struct hostmem *mem; /* --memory: the allocation probes */
	/* --continuous: the interval folders, when the current interval
	 * started, and the profiles written in it (copies of their entries
	 * with the interval's numbers, for its index). */
	struct intervals *iv;
	double iv_start_mono;
	struct hproc *pieces;
	int npieces, pieces_cap;
	/* Ended processes folded out of the run's index, and their numbers. */
	uint64_t folded;
	struct totals folded_t;
};

/* A /proc/PID file's first line (or all of it, up to n - 1 bytes). */
static ssize_t read_proc(int pid, const char *what, char *buf, size_t n)
{
	char path[64];
	ssize_t len = 0, r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)len < n - 1 && (r = read(fd, buf + len, n - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = '\0';
	return len;
}

static void proc_comm(int pid, char *out, size_t n)
{
	ssize_t len = read_proc(pid, "comm", out, n);

	if (len <= 0) {
		out[0] = '\0';
		return;
	}
	if (out[len - 1] == '\n')
		out[len - 1] = '\0';
}

/* The real uid, the parent, and the PID in the process's own namespace. */
static int proc_status(int pid, long *uid, int *ppid, int *ns_pid)
{
	char path[64], line[512];
	FILE *f;
	int found = 0;

	*uid = -1;
	*ppid = 0;
	*ns_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %ld", uid) == 1) {
			found++;
		} else if (sscanf(line, "PPid: %d", ppid) == 1) {
			found++;
		} else if (!strncmp(line, "NSpid:", 6)) {
			/* The last field is the innermost namespace's. */
			char *last = strrchr(line, '\t') ? strrchr(line, '\t') : line + 6;

			*ns_pid = atoi(last);
		}
	}
	fclose(f);
	/* An exiting process's namespace PID reads 0: not known. */
	if (*ns_pid <= 0)
		*ns_pid = -1;
	return found == 2 ? 0 : -EINVAL;
}

/* When the process started, in seconds of CLOCK_BOOTTIME; < 0 if unknown. */
static double proc_start_boot(struct host *h, int pid)
{
	char buf[1024], *p;
	unsigned long long ticks;
	int i;

	if (read_proc(pid, "stat", buf, sizeof(buf)) <= 0)
		return -1;
	/* The fields after the name, which may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	for (i = 0; i < 20 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return -1;
	return (double)ticks / h->clk_tck;
}

/* Its first MAX_ARGS arguments (one that cannot be copied is left out);
 * NULL when out of memory. */
static struct cmdline *proc_cmdline(int pid)
{
	char buf[MAX_CMDLINE + 1];
	ssize_t len = read_proc(pid, "cmdline", buf, sizeof(buf));
	ssize_t off = 0;
	struct cmdline *c = calloc(1, sizeof(*c) + MAX_ARGS * sizeof(c->argv[0])), *shrunk;
	int n = 0;

	if (!c)
		return NULL;
	c->refs = 1;
	while (len > 0 && off < len && n < MAX_ARGS) {
		size_t l = strnlen(buf + off, len - off);
		char *clean = utf8_sanitize(buf + off, l);

		if (clean)
			c->argv[c->n++] = clean;
		off += l + 1;
		n++;
	}
	/* Kept for the whole run (the index lists every process): no more
	 * than it holds. */
	shrunk = realloc(c, sizeof(*c) + c->n * sizeof(c->argv[0]));
	return shrunk ? shrunk : c;
}

static struct cmdline *cmdline_get(struct cmdline *c)
{
	if (c)
		c->refs++;
	return c;
}

static void cmdline_put(struct cmdline *c)
{
	int i;

	if (!c || --c->refs)
		return;
	for (i = 0; i < c->n; i++)
		free(c->argv[i]);
	free(c);
}

static bool in_pids(const int *pids, int n, int pid)
{
	int i;

	for (i = 0; i < n; i++) {
		if (pids[i] == pid)
			return true;
	}
	return false;
}

static bool name_matches(struct host *h, int pid)
{
	char comm[32], argv0[PATH_MAX + 1];
	const char *base;
	int i;

	proc_comm(pid, comm, sizeof(comm));
	if (read_proc(pid, "cmdline", argv0, sizeof(argv0)) < 0)
		argv0[0] = '\0';
	base = strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 : argv0;
	for (i = 0; i < h->o.ncomms; i++) {
		if (!strcmp(h->o.comms[i], comm) || !strcmp(h->o.comms[i], base))
			return true;
	}
	return false;
}

static bool host_accept(void *ctx, int pid, int ppid)
{
	struct host *h = ctx;
	const struct host_opts *o = &h->o;
	int real_ppid = 0, ns_pid, i;
	long uid;

	/* Never ourselves, nor what we start. */
	if (pid == getpid() || ppid == getpid())
		return false;
	if (in_pids(o->exclude_pids, o->nexclude_pids, pid))
		goto filtered;
	/* The child of a followed process is followed, as run follows it
	 * (and it may be gone already: a fork storm's). */
	if (ppid && !o->no_follow)
		return true;
	if (proc_status(pid, &uid, &real_ppid, &ns_pid))
		return false; /* gone already */
	if (real_ppid == getpid())
		return false;
	if (o->npids && !in_pids(o->pids, o->npids, pid))
		goto filtered;
	if (o->ncomms && !name_matches(h, pid))
		goto filtered;
	if (h->nuids) {
		for (i = 0; i < h->nuids && h->uids[i] != uid; i++)
			;
		if (i == h->nuids)
			goto filtered;
	}
	return true;
filtered:
	h->filtered++;
	return false;
}

static struct hproc *entry_new(struct host *h, int pid, int ppid, uint64_t start_ns)
{
	const struct hproc *parent = ppid ? hmap__get(h->live, &ppid) : NULL;
	struct hproc *e;
	double started;
	bool gone;

	if (h->nprocs >= MAX_ENTRIES) {
		h->table_full++;
		return NULL;
	}
	if (h->nprocs == h->cap) {
		int cap = h->cap ? h->cap * 2 : 64;
		struct hproc **p = realloc(h->procs, cap * sizeof(*p));

		if (!p)
			return NULL;
		h->procs = p;
		h->cap = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->pid = pid;
	e->peak_rss_mb = -1;
	e->alloc_hits = -1;
	gone = proc_status(pid, &e->uid, &e->ppid, &e->ns_pid) != 0;
	/* A process reaped while its status was read shows PPid 0 (the
	 * kernel's answer for a task no longer alive): gone too. */
	if (!gone && !e->ppid && ppid)
		gone = true;
	/* A fork child's parent is the one its fork record names. */
	if (ppid)
		e->ppid = ppid;
	if (parent) {
		/* A fork child runs its parent's image, under its parent's
		 * names: /proc, read now, may already show the program it
		 * exec'd since (its new image gets an entry of its own). */
		if (gone) {
			e->uid = parent->uid;
			e->ns_pid = -1;
		}
		snprintf(e->comm, sizeof(e->comm), "%s", parent->comm);
		e->cmdline = cmdline_get(parent->cmdline);
	} else {
		proc_comm(pid, e->comm, sizeof(e->comm));
		e->cmdline = proc_cmdline(pid);
	}
	/* A fork child is where its parent is, unless it moved already. */
	e->labels_read = !labels_read("/proc", pid, &e->labels);
	if (!e->labels_read && parent && parent->labels_read) {
		e->labels = parent->labels;
		e->labels_read = true;
	}
	/* When it started: its fork or exec, else (running at the start) the
	 * kernel's start time. */
	started =
		start_ns ? start_ns / 1e9 - h->start_mono : proc_start_boot(h, pid) - h->start_boot;
	e->started_s = started > 0 ? started : 0;
	e->forked_s = ppid && start_ns ? start_ns / 1e9 - h->start_mono : -1;
	h->procs[h->nprocs++] = e;
	return e;
}

static void entry_free(struct hproc *e)
{
	profile__free(e->profile);
	target_free(&e->target);
	cmdline_put(e->cmdline);
	free(e->file);
	free(e->not_profiled);
	free(e);
}

static struct profile *host_python(void *ctx, const struct session_proc *sp)
{
	struct host *h = ctx;
	const struct py_proc *pp = sp->pp;
	const struct hproc *parent;
	int pid = sp->pid;
	const struct host_opts *o = &h->o;
	struct profile_filter filter = {
		.profile_all = o->files.profile_all,
		.only = o->files.only,
		.nonly = o->files.nonly,
		.exclude = o->files.exclude,
		.nexclude = o->files.nexclude,
	};
	struct hproc *e = entry_new(h, pid, sp->ppid, sp->start_ns);

	if (!e)
		return NULL;
	python__version_string(pp->version_hex, e->python, sizeof(e->python));
	e->main_thread = pp->main_thread;
	/* The program and its folder, as --pid finds them: the folder's files
	 * are the ones reported by default. */
	parent = sp->ppid ? hmap__get(h->live, &sp->ppid) : NULL;
	if (parent) {
		/* A fork child runs its parent's program (/proc may show the
		 * one it exec'd since), known or not. */
		if (target_copy(&e->target, &parent->target) || !e->target.program_dir)
			filter.profile_all = true;
	} else if (target_from_pid(pid, &e->target)) {
		/* Gone already: nothing says which files are the program's. */
		target_free(&e->target);
		filter.profile_all = true;
	}
	filter.program_dir = e->target.program_dir;
	filter.program_dir_given = e->target.program_dir_given;
	filter.command = e->target.command != NULL;
	e->profile = profile__new(&filter);
	if (!e->profile) {
		e->not_profiled = strdup("out of memory");
		target_free(&e->target);
		return NULL;
	}
	/* Counts are drained in batches, in no order that says where the main
	 * thread was while threads with no Python frame ran: their time would
	 * go to whichever of its lines came next (a pool's 1.2 s went to the
	 * line after the call, measured), so it stays on no line. */
	profile__credit_native_threads(e->profile, false);
	e->live = true;
	hmap__put(h->live, &pid, e);
	if (h->mem)
		hostmem__python(h->mem, pid, pp);
	return e->profile;
}

static void host_skipped(void *ctx, int pid, const char *why)
{
	struct host *h = ctx;
	struct hproc *e;

	if (!why) {
		h->not_python++;
		return;
	}
	h->unsupported++;
	e = entry_new(h, pid, 0, 0);
	if (e)
		e->not_profiled = strdup(why);
}

/* The file name of a profile: PID, then the command's name made safe. */
static char *profile_name(struct host *h, const struct hproc *e)
{
	uintptr_t seen = (uintptr_t)hmap__get(h->images, &e->pid);
	char name[64], safe[32];
	size_t i, k = 0;

	for (i = 0; e->comm[i] && k < sizeof(safe) - 1; i++) {
		unsigned char c = e->comm[i];

		safe[k++] = isalnum(c) || c == '.' || c == '_' || c == '-' ? c : '_';
	}
	safe[k] = '\0';
	if (!k)
		snprintf(safe, sizeof(safe), "process");
	hmap__put(h->images, &e->pid, (void *)(seen + 1));
	if (seen)
		snprintf(name, sizeof(name), "%d-%s-%d.json", e->pid, safe, (int)seen + 1);
	else
		snprintf(name, sizeof(name), "%d-%s.json", e->pid, safe);
	return strdup(name);
}

static const char *const end_names[] = {
	[END_EXIT] = "exit",
	[END_EXEC] = "exec",
	[END_RUNNING] = "running",
};

/* Who a process is: the same in its profile and in the index. */
static void identity_of(const struct hproc *e, struct facts_process *pr)
{
	pr->pid = e->pid;
	pr->ns_pid = e->ns_pid;
	pr->ppid = e->ppid;
	pr->uid = e->uid;
	pr->comm = e->comm;
	pr->cmdline = e->cmdline ? (const char *const *)e->cmdline->argv : NULL;
	pr->ncmdline = e->cmdline ? e->cmdline->n : 0;
	pr->labels = e->labels_read ? &e->labels : NULL;
}

/* The allocation-probe hits a profile of e ending at end counts: its
 * image's so far, with --continuous those since the last cut. */
static uint64_t profile_hits(const struct host *h, const struct hproc *e,
			     const struct session_end *end)
{
	return end->alloc_hits - (h->iv && end->alloc_hits >= e->hits_cut ? e->hits_cut : 0);
}

/* --continuous: e's profile of the interval, doc, to the sinks, and its
 * pprof export beside it (.pb.gz for .json) when it was written at path. */
static void profile_done(struct host *h, const struct hproc *e, const char *path,
			 struct json_object *doc, bool written)
{
	struct host_piece pc = {
		.json = path,
		.pid = e->pid,
		.comm = e->comm,
		.argv = e->cmdline ? (const char *const *)e->cmdline->argv : NULL,
		.argc = e->cmdline ? e->cmdline->n : 0,
		.labels = e->labels_read ? &e->labels : NULL,
	};
	char out[PATH_MAX];
	size_t n = strlen(path), len = 0;
	uint8_t *pprof = NULL;
	int err;

	err = h->o.profile_done(h->o.sink_ctx, &pc, doc, &pprof, &len);
	if (err)
		pr_warn("the pprof export of %s is not written: %s\n", path, strerror(-err));
	if (written && pprof && n >= 5 && n + 2 < sizeof(out)) {
		snprintf(out, sizeof(out), "%.*s.pb.gz", (int)(n - 5), path);
		err = outfile_write(out, (const char *)pprof, len, h->creds);
		if (!err)
			intervals__wrote(h->iv, out);
		else
			pr_warn("failed to write %s: %s\n", out, strerror(-err));
	}
	free(pprof);
}

/* Writes e's profile (with --continuous, of the current interval, into its
 * folder); final: its image has ended (a failure then is for good; while it
 * runs the next snapshot tries again).  0 when written. */
static int write_profile(struct host *h, struct hproc *e, const struct session_end *end, bool final)
{
	double now = mono_s(), from = h->start_mono + e->started_s;
	double until = end->ts_ns ? end->ts_ns / 1e9 : now;
	struct output_meta m = {
		.program = e->target.program ? e->target.program : e->comm,
		.args = (const char *const *)e->target.args,
		.nargs = e->target.nargs,
		.program_dir = e->target.program_dir,
		.command = e->target.command,
		.elapsed_sec = until > from ? until - from : 0,
		.start_time_absolute = h->start_wall + e->started_s,
		.start_time_perf = from,
		.main_thread_id = e->main_thread,
		.main_pid = e->pid,
		.cpu_percent_threshold = h->o.cpu_percent_threshold,
		/* Memory from uprobes: gross allocation per line, frees not
		 * seen (as --pid --memory). */
		.memory = h->mem != NULL,
		.no_footprint = h->mem != NULL,
		.async_waits = h->o.async_waits,
		.leaks = false,
		/* No way into the process's files (it is not the session's
		 * yet): the profile says its sources are unavailable. */
		.read_source = end->source_ctx ? session__read_proc_source : NULL,
		.ctx = end->source_ctx,
	};
	struct output_job w = { .p = e->profile, .m = &m };
	struct facts *facts = facts__new();
	char path[PATH_MAX];
	int err;

	if (h->iv && from < h->iv_start_mono) {
		from = h->iv_start_mono;
		m.elapsed_sec = until > from ? until - from : 0;
		m.start_time_absolute = h->start_wall + (from - h->start_mono);
		m.start_time_perf = from;
	}
	if (facts && session__proc_facts(h->session, e->pid, facts)) {
		facts__free(facts);
		facts = NULL;
	}
	if (facts) {
		facts->has_process = true;
		identity_of(e, &facts->process);
		facts->process.ended = end_names[end->why];
		if (h->mem) {
			facts->has_uprobes = true;
			hostmem__facts(h->mem, e->pid, &facts->uprobes);
			facts->uprobes.hits = profile_hits(h, e, end);
			facts->uprobes.elapsed_s = m.elapsed_sec;
			facts->uprobes.hits_known = end->alloc_hits_known;
		}
	}
	m.facts = facts;
	if (!e->file)
		e->file = profile_name(h, e);
	if (!e->file) {
		err = -ENOMEM;
	} else if (h->iv) {
		/* The document written is used once more, for the pprof and
		 * the sinks, not read back from its file. */
		struct json_object *doc = NULL;

		w.keep = h->o.profile_done ? &doc : NULL;
		path[0] = '\0';
		err = intervals__path(h->iv, e->file, path, sizeof(path));
		err = err ?: outfile_stream(path, output_emit, &w, h->creds);
		if (!err)
			intervals__wrote(h->iv, path);
		/* The backends get it even when the disk did not. */
		if (!doc && h->o.profile_done)
			doc = output_build(e->profile, &m);
		if (doc)
			profile_done(h, e, path, doc, !err);
		json_object_put(doc);
	} else {
		snprintf(path, sizeof(path), "%s/%s", h->dir, e->file);
		err = outfile_stream(path, output_emit, &w, h->creds);
	}
	facts__free(facts);
	if (!err)
		return 0;
	/* A full disk loses this profile, not the run: said once here, for
	 * each process in the index. */
	snprintf(h->last_write_error, sizeof(h->last_write_error), "%s", strerror(-err));
	if (!h->told_write_failure)
		pr_warn("failed to write the profile of process %d to %s: %s (the run goes on; "
			"the index lists what was lost)\n",
			e->pid, h->dir, strerror(-err));
	h->told_write_failure = true;
	if (h->iv) {
		h->write_failed++; /* this interval's profile, for good */
		return err;
	}
	if (!final)
		return err;
	h->write_failed++;
	free(e->file);
	e->file = NULL;
	if (asprintf(&e->not_profiled, "its profile could not be written: %s", strerror(-err)) < 0)
		e->not_profiled = NULL;
	return err;
}

/* A profile's numbers. */
static struct totals profile_totals(const struct profile *p)
{
	struct totals t;
	double ns[3];

	/* On-CPU time and its split; the blocked time that the profile's
	 * percentages count as system time, apart. */
	profile__split_ns(p, &ns[0], &ns[1], &ns[2]);
	t.blocked_s = profile__blocked_ns(p) / 1e9;
	t.python_s = ns[0] / 1e9;
	t.native_s = ns[1] / 1e9;
	t.system_s = ns[2] / 1e9 - t.blocked_s;
	if (t.system_s < 0)
		t.system_s = 0;
	t.cpu_s = t.python_s + t.native_s + t.system_s;
	t.samples = profile__samples(p);
	t.await_s = profile__await_ns(p) / 1e9;
	return t;
}

static void totals_add(struct totals *to, const struct totals *t)
{
	to->cpu_s += t->cpu_s;
	to->python_s += t->python_s;
	to->native_s += t->native_s;
	to->system_s += t->system_s;
	to->blocked_s += t->blocked_s;
	to->await_s += t->await_s;
	to->samples += t->samples;
}

static void set_totals(struct hproc *e, const struct totals *t)
{
	e->cpu_s = t->cpu_s;
	e->python_s = t->python_s;
	e->native_s = t->native_s;
	e->system_s = t->system_s;
	e->blocked_s = t->blocked_s;
	e->await_s = t->await_s;
	e->samples = t->samples;
}

/* The index's numbers of a process: its profile's, and with --continuous
 * those of the intervals written before. */
static void entry_totals(struct hproc *e)
{
	struct totals t = profile_totals(e->profile);

	totals_add(&t, &e->done);
	set_totals(e, &t);
}

/* --continuous: e's profile of the current interval is written (if it
 * has anything) and listed in the interval's index; then its counts
 * restart, or its image has ended (final). */
static void write_piece(struct host *h, struct hproc *e, const struct session_end *end, bool final)
{
	struct totals t = profile_totals(e->profile);
	bool empty = !t.samples && !(t.await_s > 0);
	struct hproc *copy;
	int err = 0;

	/* Nothing in this interval: no profile; an image that ended in it is
	 * still listed, so that its end is. */
	if (empty && !final)
		goto restart;
	if (!empty)
		err = write_profile(h, e, end, final);
	if (h->npieces == h->pieces_cap) {
		int cap = h->pieces_cap ? h->pieces_cap * 2 : 64;
		struct hproc *g = realloc(h->pieces, cap * sizeof(*g));

		if (!g)
			goto done;
		h->pieces = g;
		h->pieces_cap = cap;
	}
	/* A shallow copy: what it points to is e's, kept until the host is
	 * freed. */
	copy = &h->pieces[h->npieces++];
	*copy = *e;
	set_totals(copy, &t);
	copy->file = err || empty ? NULL : e->file;
	if (end->alloc_hits_known)
		copy->alloc_hits = (int64_t)profile_hits(h, e, end);
	copy->not_profiled = err     ? (char *)"its profile for this interval could not be written"
			     : empty ? (char *)"no samples in this interval"
				     : NULL;
done:
	if (end->alloc_hits_known)
		e->hits_cut = end->alloc_hits;
	e->pieces += !err && !empty;
	totals_add(&e->done, &t);
restart:
	if (!final)
		profile__restart(e->profile);
}

/* The peak resident set of a live process (VmHWM), in MB; -1 if unknown. */
static double hwm_mb(int pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "VmHWM: %llu kB", &kb) == 1;
	fclose(f);
	return found ? kb / 1024.0 : -1;
}

/* Past max_files profiles of ended processes, the oldest goes (the index
 * keeps its numbers and says so). */
static void rotate(struct host *h, struct hproc *e)
{
	struct fs_creds saved;
	char path[PATH_MAX];
	struct hproc *old;

	if (h->nfifo == h->fifo_cap) {
		int cap = h->fifo_cap ? h->fifo_cap * 2 : 256;
		struct hproc **f = realloc(h->fifo, cap * sizeof(*f));

		if (!f)
			return;
		/* The ring unrolled into the larger array. */
		for (int i = 0; i < h->nfifo; i++)
			f[h->fifo_cap + i] = f[(h->fifo_head + i) % h->fifo_cap];
		memmove(f, f + h->fifo_cap, h->nfifo * sizeof(*f));
		h->fifo = f;
		h->fifo_cap = cap;
		h->fifo_head = 0;
	}
	h->fifo[(h->fifo_head + h->nfifo++) % h->fifo_cap] = e;
	if (h->nfifo <= h->max_files)
		return;
	old = h->fifo[h->fifo_head];
	h->fifo_head = (h->fifo_head + 1) % h->fifo_cap;
	h->nfifo--;
	snprintf(path, sizeof(path), "%s/%s", h->dir, old->file);
	creds_fs_user(h->creds, &saved);
	unlink(path);
	creds_fs_self(&saved);
	free(old->file);
	old->file = NULL;
	if (asprintf(&old->not_profiled,
		     "its profile was removed: more than %d profiles of ended processes "
		     "(--max-profiles)",
		     h->max_files) < 0)
		old->not_profiled = NULL;
	h->rotated++;
}

/* A process with something to show (entry_totals): samples, or await time
 * (an asyncio service idle all along has no sample). */
static bool worth_a_profile(const struct hproc *e)
{
	return e->samples || e->await_s > 0;
}

static void host_ended(void *ctx, int pid, const struct session_end *end)
{
	struct host *h = ctx;
	struct hproc *e = hmap__get(h->live, &pid);

	if (!e || e->profile != end->profile)
		return;
	hmap__del(h->live, &pid);
	e->live = false;
	e->exited = end->why == END_EXIT;
	e->ended = end->why;
	e->has_end = true;
	e->end_mono = mono_s();
	e->exit_status = end->exit_code;
	if (end->alloc_hits_known)
		e->alloc_hits = (int64_t)end->alloc_hits;
	if (end->maxrss_kb)
		e->peak_rss_mb = end->maxrss_kb / 1024.0;
	else if (end->why == END_RUNNING)
		e->peak_rss_mb = hwm_mb(pid);
	entry_totals(e);
	/* A process too short to be sampled (a fork storm's children) has
	 * nothing to show: the index says so, no file is written. */
	if (end->why == END_EXEC && e->forked_s >= 0 &&
	    end->ts_ns / 1e9 - h->start_mono - e->forked_s < FORK_EXEC_S)
		e->hidden = true; /* forked to exec (subprocess): its new image counts */
	else if (!worth_a_profile(e))
		e->not_profiled =
			strdup("no samples: it did not run, or too briefly to be sampled");
	else if (h->iv)
		write_piece(h, e, end, true);
	else
		write_profile(h, e, end, true);
	profile__free(e->profile);
	e->profile = NULL;
	target_free(&e->target);
	memset(&e->target, 0, sizeof(e->target));
	if (e->file && end->why != END_RUNNING && !h->iv)
		rotate(h, e);
	/* Its libc probes go (in the background); at the end of the run they
	 * all go with the loader. */
	if (h->mem && end->why != END_RUNNING)
		hostmem__ended(h->mem, pid);
}

/* Users named by --uid, as numbers. */
static int resolve_uids(struct host *h)
{
	int i;

	if (!h->o.nuids)
		return 0;
	h->uids = calloc(h->o.nuids, sizeof(*h->uids));
	if (!h->uids)
		return -ENOMEM;
	for (i = 0; i < h->o.nuids; i++) {
		const char *u = h->o.uids[i];
		struct passwd *pw;
		char *end;
		long v;

		errno = 0;
		v = strtol(u, &end, 10);
		if (*u && !*end && !errno && v >= 0) {
			h->uids[h->nuids++] = v;
			continue;
		}
		pw = getpwnam(u);
		if (!pw) {
			pr_warn("--uid %s: no such user (give a name from /etc/passwd or a "
				"number)\n",
				u);
			return -EINVAL;
		}
		h->uids[h->nuids++] = pw->pw_uid;
	}
	return 0;
}

/* The output directory, made as the user if it is not there. */
static int make_dir(struct host *h)
{
	struct fs_creds saved;
	char probe[PATH_MAX];
	struct stat st;
	int err = 0, fd;

	creds_fs_user(h->creds, &saved);
	if (mkdir(h->dir, 0755) && errno != EEXIST)
		err = -errno;
	if (!err && stat(h->dir, &st))
		err = -errno;
	if (!err && !S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	if (!err) {
		/* Writable by the user: a file made and removed. */
		snprintf(probe, sizeof(probe), "%s/.scalene-bpf-probe-%d", h->dir, (int)getpid());
		fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			err = -errno;
		} else {
			close(fd);
			unlink(probe);
		}
	}
	creds_fs_self(&saved);
	if (err == -ENOTDIR)
		pr_warn("-o %s: with --all, -o names a directory (one profile per process "
			"and index.json go there); %s is a file\n",
			h->dir, h->dir);
	else if (err)
		pr_warn("cannot write into %s: %s; choose another directory with -o\n", h->dir,
			strerror(-err));
	return err;
}

struct host *host__new(const struct host_opts *opts)
{
	struct host *h = calloc(1, sizeof(*h));
	int err;

	if (!h)
		return NULL;
	h->o = *opts;
	h->creds = opts->creds;
	h->dir = opts->dir;
	h->start_mono = opts->start_mono;
	h->start_wall = opts->start_wall;
	h->start_boot = clock_s(CLOCK_BOOTTIME);
	h->rate_hz = opts->rate_hz;
	h->iv_start_mono = opts->start_mono;
	h->max_files = opts->max_profiles > 0 ? opts->max_profiles : DEFAULT_MAX_PROFILES;
	h->clk_tck = sysconf(_SC_CLK_TCK);
	h->live = hmap__new(sizeof(int));
	h->images = hmap__new(sizeof(int));
	h->sh = (struct session_host){
		.ctx = h,
		.accept = host_accept,
		.python = host_python,
		.skipped = host_skipped,
		.ended = host_ended,
	};
	err = h->live && h->images ? 0 : -ENOMEM;
	if (!err)
		err = resolve_uids(h);
	if (!err)
		err = make_dir(h);
	if (!err && opts->interval_s > 0) {
		h->iv = intervals__new(h->dir, h->creds, opts->max_disk_bytes);
		err = h->iv ? intervals__start(h->iv, h->start_wall) : -errno;
		err = err < 0 ? err : 0;
	}
	if (err) {
		host__free(h);
		errno = -err;
		return NULL;
	}
	return h;
}

void host__free(struct host *h)
{
	int i;

	if (!h)
		return;
	for (i = 0; i < h->nprocs; i++)
		entry_free(h->procs[i]);
	free(h->procs);
	free(h->pieces);
	intervals__free(h->iv);
	free(h->fifo);
	free(h->uids);
	hostmem__free(h->mem);
	hmap__free(h->live);
	hmap__free(h->images);
	free(h);
}

const struct session_host *host__session_host(struct host *h)
{
	return &h->sh;
}

void host__set_session(struct host *h, struct session *s)
{
	h->session = s;
}

void host__set_memory(struct host *h, struct hostmem *hm)
{
	h->mem = hm;
}

int host__scan(struct host *h)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	char link[64], exe[16];
	int n = 0;

	if (!d) {
		pr_warn("cannot list /proc: %s\n", strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		/* Kernel threads have no executable. */
		snprintf(link, sizeof(link), "/proc/%ld/exe", pid);
		if (readlink(link, exe, sizeof(exe)) < 0)
			continue;
		if (!host_accept(h, (int)pid, 0))
			continue;
		if (!session__add_proc(h->session, (int)pid))
			n++;
	}
	closedir(d);
	return n;
}

static int by_cpu(const void *a, const void *b)
{
	const struct hproc *x = *(const struct hproc *const *)a;
	const struct hproc *y = *(const struct hproc *const *)b;

	/* Profiled first, then by CPU time, then by PID. */
	if (!x->file != !y->file)
		return x->file ? -1 : 1;
	if (x->cpu_s != y->cpu_s)
		return x->cpu_s > y->cpu_s ? -1 : 1;
	return x->pid - y->pid;
}

static struct json_object *num_or_null(double v)
{
	return v < 0 ? NULL : json_object_new_double(v);
}

/* in_interval: an entry of an interval's index (--continuous), whose
 * profile is in that folder; the run's index has none then, but the
 * number of intervals with one. */
static struct json_object *entry_json(const struct host *h, const struct hproc *e, bool in_interval)
{
	struct facts_process id = { 0 };
	struct json_object *o;

	identity_of(e, &id);
	o = output_identity_json(&id);
	/* A uid not known (the process was gone when it was looked at) is left
	 * out: the index's reader (hostindex.c) refuses the whole index for an
	 * id out of range, as -1 is. */
	if (e->uid < 0)
		json_object_object_del(o, "uid");

	json_object_object_add(o, "python",
			       e->python[0] ? json_object_new_string(e->python) : NULL);
	json_object_object_add(o, "profile",
			       e->file && (in_interval || !h->iv) ? json_object_new_string(e->file)
								  : NULL);
	if (h->iv && !in_interval)
		json_object_object_add(o, "interval_profiles", json_object_new_int(e->pieces));
	json_object_object_add(o, "started_s", json_object_new_double(e->started_s));
	json_object_object_add(o, "exited", json_object_new_boolean(e->exited));
	/* How its image ended: exit, exec (a new image follows, under the
	 * same PID) or running (at the end of the run). */
	if (e->has_end)
		json_object_object_add(o, "ended", json_object_new_string(end_names[e->ended]));
	if (e->exited && WIFSIGNALED(e->exit_status))
		json_object_object_add(o, "exit_signal",
				       json_object_new_int(WTERMSIG(e->exit_status)));
	else if (e->exited)
		json_object_object_add(o, "exit_code",
				       json_object_new_int(WEXITSTATUS(e->exit_status)));
	json_object_object_add(o, "cpu_s", json_object_new_double(e->cpu_s));
	json_object_object_add(o, "python_s", json_object_new_double(e->python_s));
	json_object_object_add(o, "native_s", json_object_new_double(e->native_s));
	json_object_object_add(o, "system_s", json_object_new_double(e->system_s));
	json_object_object_add(o, "blocked_s", json_object_new_double(e->blocked_s));
	json_object_object_add(o, "samples", json_object_new_int64((int64_t)e->samples));
	/* Only with await attribution (on unless --no-async). */
	if (h->o.async_waits)
		json_object_object_add(o, "await_s", json_object_new_double(e->await_s));
	json_object_object_add(o, "peak_rss_mb", num_or_null(e->peak_rss_mb));
	/* Only with --memory; null: not known (a reused PID's count). */
	if (h->mem)
		json_object_object_add(o, "memory_probe_hits",
				       e->alloc_hits < 0 ? NULL
							 : json_object_new_int64(e->alloc_hits));
	json_object_object_add(o, "not_profiled",
			       e->not_profiled ? json_object_new_string(e->not_profiled) : NULL);
	return o;
}

static struct json_object *int_list(const int *v, int n)
{
	struct json_object *a = json_object_new_array();
	int i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int(v[i]));
	return a;
}

static struct json_object *str_list(const char *const *v, int n)
{
	struct json_object *a = json_object_new_array();
	int i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

/* The counts kept in BPF: what their drains did, and a warning for what
 * could not be counted there. */
static void counts_json(struct host *h, struct json_object *doc, struct json_object *warnings)
{
	struct json_object *o;
	struct counts_stats c;
	uint64_t stats[STAT_MAX];
	char warn[256];

	if (!session__counts_stats(h->session, &c))
		return;
	o = json_object_new_object();
	json_object_object_add(o, "drains", json_object_new_int64((int64_t)c.drains));
	json_object_object_add(o, "records", json_object_new_int64((int64_t)c.records));
	json_object_object_add(o, "samples", json_object_new_int64((int64_t)c.samples));
	json_object_object_add(o, "late_samples", json_object_new_int64((int64_t)c.late));
	json_object_object_add(o, "stacks", json_object_new_int64((int64_t)c.stacks));
	json_object_object_add(o, "stacks_waited", json_object_new_int64((int64_t)c.stacks_waited));
	json_object_object_add(o, "ring_rereads", json_object_new_int64((int64_t)c.ring_rereads));
	json_object_object_add(o, "stacks_missing",
			       json_object_new_int64((int64_t)c.stacks_missing));
	json_object_object_add(o, "stack_table_resets",
			       json_object_new_int64((int64_t)c.stack_resets));
	json_object_object_add(o, "stacks_forgotten",
			       json_object_new_int64((int64_t)c.stacks_forgotten));
	if (!session__bpf_stats(h->session, stats)) {
		json_object_object_add(o, "table_full_samples",
				       json_object_new_int64((int64_t)stats[STAT_AGG_FULL]));
		if (stats[STAT_AGG_FULL]) {
			snprintf(warn, sizeof(warn),
				 "the count table was full for %llu samples: they were sent one "
				 "by one instead",
				 (unsigned long long)stats[STAT_AGG_FULL]);
			json_object_array_add(warnings, json_object_new_string(warn));
		}
	}
	if (c.stacks_missing) {
		snprintf(warn, sizeof(warn),
			 "%llu counted samples named a stack no longer known: they are "
			 "unattributed",
			 (unsigned long long)c.stacks_missing);
		json_object_array_add(warnings, json_object_new_string(warn));
	}
	json_object_object_add(doc, "counts", o);
}

/* An index of the processes in list (n of them) at path: the run's
 * (final: at its end), or an interval's (--continuous; interval: its
 * number, start_wall when it started). */
static int write_index_at(struct host *h, const char *path, struct hproc *const *list, int nlist,
			  double start_wall, double elapsed_s, bool final, int interval)
{
	struct json_object *doc = json_object_new_object(), *procs = json_object_new_array();
	struct json_object *np = json_object_new_object(), *filters = json_object_new_object();
	struct json_object *warnings = json_object_new_array();
	struct utsname u;
	char *text, warn[512];
	uint64_t stats[STAT_MAX];
	int i, err, profiled = 0;
	size_t n;
	struct hproc **order = malloc((nlist ? nlist : 1) * sizeof(*order));

	if (!order) {
		json_object_put(doc);
		json_object_put(procs);
		json_object_put(np);
		json_object_put(filters);
		json_object_put(warnings);
		return -ENOMEM;
	}
	/* Ranked in a copy: the table keeps its order (rotation and the live
	 * map point into it). */
	if (nlist)
		memcpy(order, list, nlist * sizeof(*order));
	qsort(order, nlist, sizeof(*order), by_cpu);
	for (i = 0; i < nlist; i++) {
		if (order[i]->hidden)
			continue;
		json_object_array_add(procs, entry_json(h, order[i], interval > 0));
		profiled += order[i]->file != NULL;
	}
	free(order);
	if (uname(&u))
		memset(&u, 0, sizeof(u));
	json_object_object_add(doc, "scalene_bpf_index", json_object_new_int(INDEX_VERSION));
	json_object_object_add(doc, "host", json_object_new_string(u.nodename));
	json_object_object_add(doc, "kernel", json_object_new_string(u.release));
	json_object_object_add(doc, "start_time_absolute", json_object_new_double(start_wall));
	json_object_object_add(doc, "elapsed_time_sec", json_object_new_double(elapsed_s));
	/* --continuous: the run's index says how it was cut; an interval's
	 * index, which one it is. */
	if (interval > 0) {
		json_object_object_add(doc, "interval", json_object_new_int(interval));
	} else if (h->iv) {
		struct json_object *c = intervals__json(h->iv);

		json_object_object_add(c, "interval_s", json_object_new_double(h->o.interval_s));
		if (h->o.sink_json) {
			struct json_object *sink = h->o.sink_json(h->o.sink_ctx);

			/* Each sink's own member (otlp, pyroscope). */
			if (sink) {
				json_object_object_foreach (sink, key, val)
					json_object_object_add(c, key, json_object_get(val));
				json_object_put(sink);
			}
		}
		json_object_object_add(doc, "continuous", c);
	}
	json_object_object_add(doc, "sampling_rate_hz", json_object_new_double(h->rate_hz));
	json_object_object_add(filters, "pid", int_list(h->o.pids, h->o.npids));
	json_object_object_add(filters, "comm", str_list(h->o.comms, h->o.ncomms));
	json_object_object_add(filters, "uid", str_list(h->o.uids, h->o.nuids));
	json_object_object_add(filters, "exclude_pid",
			       int_list(h->o.exclude_pids, h->o.nexclude_pids));
	json_object_object_add(doc, "filters", filters);
	json_object_object_add(doc, "processes", procs);
	json_object_object_add(np, "not_python", json_object_new_int64((int64_t)h->not_python));
	json_object_object_add(np, "unsupported", json_object_new_int64((int64_t)h->unsupported));
	json_object_object_add(np, "filtered", json_object_new_int64((int64_t)h->filtered));
	json_object_object_add(np, "table_full", json_object_new_int64((int64_t)h->table_full));
	json_object_object_add(np, "write_failed", json_object_new_int64((int64_t)h->write_failed));
	json_object_object_add(np, "rotated_out", json_object_new_int64((int64_t)h->rotated));
	json_object_object_add(doc, "not_profiled", np);
	/* --continuous: the run's index without the oldest ended processes. */
	if (h->iv && interval == 0) {
		struct json_object *fo = json_object_new_object();

		json_object_object_add(fo, "processes", json_object_new_int64((int64_t)h->folded));
		json_object_object_add(fo, "cpu_s", json_object_new_double(h->folded_t.cpu_s));
		json_object_object_add(fo, "python_s",
				       json_object_new_double(h->folded_t.python_s));
		json_object_object_add(fo, "native_s",
				       json_object_new_double(h->folded_t.native_s));
		json_object_object_add(fo, "system_s",
				       json_object_new_double(h->folded_t.system_s));
		json_object_object_add(fo, "blocked_s",
				       json_object_new_double(h->folded_t.blocked_s));
		json_object_object_add(fo, "await_s", json_object_new_double(h->folded_t.await_s));
		json_object_object_add(fo, "samples",
				       json_object_new_int64((int64_t)h->folded_t.samples));
		json_object_object_add(doc, "ended_processes_folded", fo);
		if (h->folded) {
			snprintf(warn, sizeof(warn),
				 "%llu ended processes are folded out of this index (the latest %d "
				 "are listed); each one with samples is in the indexes of the "
				 "intervals it ran in",
				 (unsigned long long)h->folded, CONTINUOUS_ENDED_KEPT);
			json_object_array_add(warnings, json_object_new_string(warn));
		}
	}
	/* Of not_python: execs of a program seen before, let go without a
	 * look at its ELF file. */
	json_object_object_add(
		doc, "execs_known_not_python",
		json_object_new_int64((int64_t)session__execs_known_not_python(h->session)));
	counts_json(h, doc, warnings);
	/* null: --memory was not given. */
	if (h->mem && !session__bpf_stats(h->session, stats))
		json_object_object_add(
			doc, "memory",
			hostmem__json(h->mem, stats[STAT_UPROBE_HITS], elapsed_s, warnings));
	else
		json_object_object_add(doc, "memory", NULL);
	if (h->table_full) {
		snprintf(warn, sizeof(warn),
			 "%llu Python processes past the first %d are not in the index",
			 (unsigned long long)h->table_full, MAX_ENTRIES);
		json_object_array_add(warnings, json_object_new_string(warn));
	}
	if (h->rotated) {
		snprintf(warn, sizeof(warn),
			 "the profiles of %llu ended processes were removed to keep at most %d "
			 "(--max-profiles); their numbers are here",
			 (unsigned long long)h->rotated, h->max_files);
		json_object_array_add(warnings, json_object_new_string(warn));
	}
	if (h->write_failed) {
		snprintf(warn, sizeof(warn), "%llu profiles could not be written (%s)",
			 (unsigned long long)h->write_failed, h->last_write_error);
		json_object_array_add(warnings, json_object_new_string(warn));
	}
	json_object_object_add(doc, "warnings", warnings);
	text = output_to_string(doc);
	json_object_put(doc);
	if (!text)
		return -ENOMEM;
	err = outfile_write(path, text, strlen(text), h->creds);
	free(text);
	if (err) {
		pr_warn("failed to write %s: %s\n", path, strerror(-err));
		return err;
	}
	if (interval > 0)
		intervals__wrote(h->iv, path);
	if (!final)
		return 0;
	n = strlen(h->dir);
	fprintf(stderr,
		"scalene-bpf: %d Python process%s profiled, %llu not (not Python: %llu, "
		"unsupported: %llu, filtered out: %llu); profiles in %s%s\n"
		"  to view them: %s view %s\n",
		profiled, profiled == 1 ? "" : "es",
		(unsigned long long)(h->not_python + h->unsupported + h->filtered),
		(unsigned long long)h->not_python, (unsigned long long)h->unsupported,
		(unsigned long long)h->filtered, h->dir, n && h->dir[n - 1] == '/' ? "" : "/",
		log_command(), h->dir);
	return 0;
}

static int write_index(struct host *h, double elapsed_s, bool final)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/index.json", h->dir);
	return write_index_at(h, path, h->procs, h->nprocs, h->start_wall, elapsed_s, final, 0);
}

/* --continuous: the sinks are told that the interval's profiles are all in. */
static void interval_done(struct host *h)
{
	if (h->o.interval_done)
		h->o.interval_done(h->o.sink_ctx);
}

/* Folded first: those with nothing to show, then those that ended first. */
static int by_fold_order(const void *a, const void *b)
{
	const struct hproc *x = *(struct hproc *const *)a, *y = *(struct hproc *const *)b;
	bool xs = worth_a_profile(x), ys = worth_a_profile(y);

	if (xs != ys)
		return xs - ys;
	return (x->end_mono > y->end_mono) - (x->end_mono < y->end_mono);
}

/* --continuous: past CONTINUOUS_ENDED_KEPT ended processes, the others are
 * folded out of the run's index into a count and sums (by_fold_order), so
 * that a run of days with a fork a second keeps its memory and its index's
 * size; each with samples stays in the indexes of the intervals it ran in.
 * Called between intervals, when no piece points into them. */
static void fold_ended(struct host *h)
{
	struct hproc **ended;
	int i, k = 0, n = 0;

	for (i = 0; i < h->nprocs; i++)
		n += h->procs[i]->has_end && !h->procs[i]->live;
	if (n <= CONTINUOUS_ENDED_KEPT)
		return;
	ended = malloc(n * sizeof(*ended));
	if (!ended)
		return; /* the next interval's end tries again */
	for (i = 0, n = 0; i < h->nprocs; i++)
		if (h->procs[i]->has_end && !h->procs[i]->live)
			ended[n++] = h->procs[i];
	qsort(ended, n, sizeof(*ended), by_fold_order);
	for (i = 0; i < n - CONTINUOUS_ENDED_KEPT; i++)
		ended[i]->fold = true;
	free(ended);
	for (i = 0; i < h->nprocs; i++) {
		struct hproc *e = h->procs[i];

		if (e->fold) {
			struct totals t = {
				e->cpu_s,     e->python_s, e->native_s, e->system_s,
				e->blocked_s, e->await_s,  e->samples,
			};

			totals_add(&h->folded_t, &t);
			h->folded++;
			entry_free(e);
			continue;
		}
		h->procs[k++] = e;
	}
	h->nprocs = k;
}

/* --continuous: the current interval's index, then the oldest folders go
 * past the bound; next: another interval starts. */
static int end_interval(struct host *h, bool next)
{
	double now = mono_s();
	struct hproc **list = malloc((h->npieces ? h->npieces : 1) * sizeof(*list));
	char path[PATH_MAX];
	int i, err, number;

	if (!list)
		return -ENOMEM;
	for (i = 0; i < h->npieces; i++)
		list[i] = &h->pieces[i];
	number = intervals__number(h->iv);
	err = intervals__path(h->iv, "index.json", path, sizeof(path));
	if (err)
		pr_warn("cannot write the index of interval %d: %s\n", number, strerror(-err));
	else
		err = write_index_at(h, path, list, h->npieces,
				     h->start_wall + (h->iv_start_mono - h->start_mono),
				     now - h->iv_start_mono, false, number);
	free(list);
	interval_done(h);
	h->npieces = 0;
	fold_ended(h);
	intervals__end(h->iv);
	if (next) {
		h->iv_start_mono = now;
		intervals__start(h->iv, h->start_wall + (now - h->start_mono));
	}
	return err;
}

/* A live process's image as of now (for --profile-interval and --continuous):
 * the way into its files, its probe hits and its peak resident set. */
static struct session_end live_end(struct host *h, struct hproc *e)
{
	struct session_end now = { .why = END_RUNNING, .profile = e->profile };

	now.source_ctx = session__proc_source_ctx(h->session, e->pid);
	now.alloc_hits_known = !session__alloc_hits(h->session, e->pid, &now.alloc_hits);
	if (now.alloc_hits_known)
		e->alloc_hits = (int64_t)now.alloc_hits;
	e->peak_rss_mb = hwm_mb(e->pid);
	return now;
}

int host__cut(struct host *h, double elapsed_s)
{
	int i, err;

	if (!h->iv)
		return 0;
	session__drain_counts(h->session);
	for (i = 0; i < h->nprocs; i++) {
		struct hproc *e = h->procs[i];
		struct session_end now;

		if (!e->live || !e->profile)
			continue;
		now = live_end(h, e);
		write_piece(h, e, &now, false);
		entry_totals(e);
	}
	err = end_interval(h, true);
	err = write_index(h, elapsed_s, false) ?: err;
	/* A cut builds and frees the documents of every profile and index it
	 * writes, in many small pieces: the free memory they leave goes back
	 * to the system, so that a run of days holds what it uses. */
	malloc_trim(0);
	return err;
}

int host__finish(struct host *h, double elapsed_s)
{
	int err = h->iv ? end_interval(h, false) : 0;

	return write_index(h, elapsed_s, true) ?: err;
}

int host__snapshot(struct host *h, double elapsed_s)
{
	int i;

	for (i = 0; i < h->nprocs; i++) {
		struct hproc *e = h->procs[i];
		struct session_end now;

		if (!e->live)
			continue;
		now = live_end(h, e);
		entry_totals(e);
		if (worth_a_profile(e) && now.source_ctx)
			write_profile(h, e, &now, false);
	}
	return write_index(h, elapsed_s, false);
}

void host__each_profiled(const struct host *h,
			 void (*fn)(void *ctx, const struct host_proc_info *pi), void *ctx)
{
	int i;

	for (i = 0; i < h->nprocs; i++) {
		const struct hproc *e = h->procs[i];
		struct host_proc_info pi = { .pid = e->pid, .comm = e->comm };

		if (e->live && e->profile) {
			pi.profile = e->profile;
		} else if (e->has_end && e->samples) {
			pi.total_s = e->cpu_s;
			pi.python_s = e->python_s;
			pi.native_s = e->native_s;
			pi.system_s = e->system_s;
			pi.samples = e->samples;
		} else {
			continue;
		}
		fn(ctx, &pi);
	}
}
