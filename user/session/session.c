// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>
#include <linux/types.h>

#include "abi.h"
#include "session/asyncprobe.h"
#include "base/clock.h"
#include "cpython.h"
#include "base/creds.h"
#include "base/elfcache.h"
#include "base/hmap.h"
#include "base/memread.h"
#include "base/procmaps.h"
#include "sampler/sampler.h"
#include "base/log.h"
#include "model/profile.h"
#include "session/pyasync.h"
#include "symbolize/pycode.h"
#include "target/python.h"
#include "session/session.h"
#include "collect/loader.h"
#include "session/session_int.h"
#include "symbolize/unwind.h"
#include "symbolize/usyms.h"

/* About 600 bytes an entry: bounds the cache near 10 MB.  Past it the cache
 * starts over (evictions are counted). */
#define CODE_CACHE_ENTRIES 16384
/* Exited processes kept in the table before they are retired. */
#define MAX_EXITED_PROCS 256
/* Executables known not to be Python, kept before the cache starts over. */
#define MAX_NOT_PYTHON_EXES 4096
/* Thread names cached before the cache starts over. */
#define MAX_THREAD_NAMES 16384
/*
 * How often and how long a starting process is re-examined: every
 * DETECT_RETRY_NS for DETECT_FAST_NS after its first try (an interpreter is
 * ready a few milliseconds after its exec, tens on a loaded machine: 38 ms
 * for 3.12.1 here; a program of 20 ms must not be half over by then), then
 * backing off, as each try reads the maps and opens the binary (0.1 ms
 * before libpython is mapped or the runtime is initialised, 1.5-2.5 ms for
 * the first after).  A count of fast tries instead (16, 35 ms) let a
 * program of 0.1 s end unrecognised on a loaded machine, its runtime
 * initialised after the last of them and the next try past its end.
 */
#define DETECT_RETRY_NS (2 * 1000000ULL)
#define DETECT_FAST_NS (250 * 1000000ULL)
#define DETECT_RETRY_MAX_NS (1000000000ULL)
#define DETECT_GIVE_UP_NS (60 * 1000000000ULL)
/* Window for the program's CPU use around a sample. */
#define UTIL_BUCKET_NS (10 * 1000000ULL)
#define UTIL_BUCKETS 64
/* Source files larger than this are not read. */
#define MAX_SOURCE_BYTES (64 << 20)

struct session *session__new(const struct session_opts *opts)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->profile = opts->profile;
	s->host = opts->host;
	s->drain_ns = opts->drain_ns ? opts->drain_ns : COUNTS_DRAIN_NS;
	s->rate_hz = opts->rate_hz;
	s->period_ns = loader__period_ns(opts->rate_hz);
	s->creds = opts->creds;
	s->memory = opts->memory;
	s->async_waits = opts->async_waits;
	s->native = opts->native;
	s->async_live_gap_ns = s->async_live_gap_max_ns = ASYNC_POLL_NS;
	s->gpu_library = opts->gpu_library;
	s->gpu_off = opts->gpu_off;
	s->ncpus = opts->ncpus > 0 ? opts->ncpus : 1;
	s->procs = hmap__new(sizeof(int));
	s->tnames = hmap__new(sizeof(struct thread_name_key));
	s->codes = pycode_cache__new(CODE_CACHE_ENTRIES);
	s->elves = elf_cache__new(NULL);
	s->not_python_exes = hmap__new(sizeof(struct exe_key));
	s->code_probes = hmap__new(sizeof(struct code_probe_key));
	s->dealloc_exes = hmap__new(sizeof(struct exe_key));
	s->next_space = 1;
	if (!s->procs || !s->tnames || !s->codes || !s->elves || !s->not_python_exes ||
	    !s->code_probes || !s->dealloc_exes) {
		session__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void session__set_bpf(struct session *s, const struct session_bpf *bpf)
{
	s->bpf = *bpf;
}

/* Its image's symbols and unwinder (read again if asked for). */
static void drop_symbols(struct session *s, struct tproc *tp)
{
	snative_forget(s, tp);
	unwind__free(tp->unwind);
	tp->unwind = NULL;
	tp->unwind_failed = false;
	usyms__free(tp->usyms);
	tp->usyms = NULL;
}

static void tproc_free(struct session *s, struct tproc *tp)
{
	drop_symbols(s, tp);
	sasync_stop(tp);
	if (tp->root_fd >= 0)
		close(tp->root_fd);
	if (tp->cwd_fd >= 0)
		close(tp->cwd_fd);
	free(tp);
}

void session__free(struct session *s)
{
	size_t it = 0;
	void *v;

	if (!s)
		return;
	while (s->procs && hmap__next(s->procs, &it, NULL, &v))
		tproc_free(s, v);
	hmap__free(s->procs);
	hmap__free(s->not_python_exes);
	it = 0;
	while (s->code_probes && hmap__next(s->code_probes, &it, NULL, &v))
		free(v);
	hmap__free(s->code_probes);
	hmap__free(s->dealloc_exes);
	sgpu_free(s);
	snative_free(s);
	hmap__free(s->tnames);
	pycode_cache__free(s->codes);
	elf_cache__free(s->elves);
	while (s->nheld)
		free(s->held[--s->nheld]);
	while (s->nheld_mem)
		free(s->held_mem[--s->nheld_mem]);
	free(s->held_mem);
	free(s);
}

static struct tproc *tproc_new(struct session *s, int pid, int ppid)
{
	struct tproc *tp = calloc(1, sizeof(*tp));

	if (!tp)
		return NULL;
	tp->pid = pid;
	tp->ppid = ppid;
	tp->space = s->next_space++;
	tp->root_fd = tp->cwd_fd = -1;
	tp->session = s;
	if (hmap__put(s->procs, &pid, tp)) {
		free(tp);
		return NULL;
	}
	session_due(s, 0);
	return tp;
}

static void interpreter_facts(const struct tproc *tp, struct facts_interpreter *in)
{
	in->pid = tp->pid;
	python__version_string(tp->pp.version_hex, in->version, sizeof(in->version));
	snprintf(in->path, sizeof(in->path), "%s", tp->pp.path);
	in->static_build = tp->pp.static_build;
	in->free_threaded = tp->pp.off && tp->pp.off->free_threaded;
	in->gil_enabled = tp->pp.gil_enabled;
	/* Whether its GIL wait is measured, and if not why. */
	in->gil_wait_measured = tp->pp.gil_hi != 0;
	snprintf(in->gil_wait_unmeasured, sizeof(in->gil_wait_unmeasured), "%s", tp->pp.gil_why);
	snprintf(in->layout_from_interpreter, sizeof(in->layout_from_interpreter), "%s",
		 tp->pp.layout_note);
}

static void note_interpreter(struct session *s, const struct tproc *tp)
{
	/* One entry per distinct interpreter binary is plenty. */
	if (s->interpreters++ >= FACTS_MAX_INTERPRETERS || s->host)
		return;
	interpreter_facts(tp, &s->interp_list[s->ninterp_list++]);
}

/* Samples counted in BPF for tp's image come in now (before its end). */
static void drain_image(struct session *s, struct tproc *tp)
{
	if (!s->bpf.drain_counts || tp->drained)
		return;
	tp->drained = true;
	s->bpf.drain_counts(s->bpf.ctx, tp->pid, tp->gen);
}

/* The process has a new image (exec), numbered as BPF does. */
static void new_image(struct tproc *tp, uint32_t gen)
{
	tp->gen = gen;
	tp->drained = false;
}

/* System-wide: the process is not followed any more; its entry goes (the
 * caller may be iterating the table: deleting leaves a tombstone). */
static void let_go(struct session *s, struct tproc *tp)
{
	int pid = tp->pid;
	size_t it = 0;
	const void *k;
	void *v;

	s->bpf.untrack(s->bpf.ctx, pid);
	/* Its counts go now, not to a later process given the same PID. */
	drain_image(s, tp);
	/* Its thread names were interned in its profile. */
	while (hmap__next(s->tnames, &it, &k, &v)) {
		if (((const struct thread_name_key *)k)->tgid == pid)
			hmap__del(s->tnames, k);
	}
	hmap__del(s->procs, &pid);
	tproc_free(s, tp);
}

/* System-wide: the end of a process's image; the host writes its profile. */
/* r: the image's exec or exit record, which carries its allocation hits
 * (NULL: none; one still running has them read from BPF). */
static void end_image(struct session *s, struct tproc *tp, enum session_end_why why, int exit_code,
		      uint64_t maxrss_kb, uint64_t ts, const struct proc_record *r)
{
	struct session_end e = {
		.why = why,
		.exit_code = exit_code,
		.maxrss_kb = maxrss_kb,
		.ts_ns = ts,
		.profile = tp->profile,
		.source_ctx = tp,
	};

	if (!tp->profile)
		return;
	if (r) {
		e.alloc_hits = r->alloc_hits;
		e.alloc_hits_known = true;
	} else if (why == END_RUNNING) {
		e.alloc_hits_known = !session__alloc_hits(s, tp->pid, &e.alloc_hits);
	}
	drain_image(s, tp);
	sasync_stop(tp);
	profile__proc_exit(tp->profile, tp->pid, ts);
	s->host->ended(s->host->ctx, tp->pid, &e);
	tp->profile = NULL;
	if (tp->root_fd >= 0)
		close(tp->root_fd);
	if (tp->cwd_fd >= 0)
		close(tp->cwd_fd);
	tp->root_fd = tp->cwd_fd = -1;
}

/* A directory of /proc/PID held open; a fork child gone already has its
 * parent's (the same at the fork). */
static int hold_dir(int pid, const char *what, int parent_fd)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && parent_fd >= 0)
		fd = fcntl(parent_fd, F_DUPFD_CLOEXEC, 0);
	return fd;
}

/* System-wide: a Python process gets its profile from the host, and its
 * root and working directory are held for reading its files later.  parent:
 * the followed process that forked it, or NULL. */
static bool host_python(struct session *s, struct tproc *tp, const struct tproc *parent)
{
	struct session_proc sp = {
		.pid = tp->pid, .ppid = tp->ppid, .start_ns = tp->start_ns, .pp = &tp->pp
	};

	tp->profile = s->host->python(s->host->ctx, &sp);
	if (!tp->profile)
		return false;
	tp->root_fd = hold_dir(tp->pid, "root", parent ? parent->root_fd : -1);
	tp->cwd_fd = hold_dir(tp->pid, "cwd", parent ? parent->cwd_fd : -1);
	return true;
}

/* An interpreter file's probe on its code deallocator (s->code_probes). */
enum {
	CODE_PROBE_PENDING = 1,
	CODE_PROBE_PLACED,
	CODE_PROBE_FAILED
};

struct code_probe {
	int state;
	int job;	    /* the loader's placing, while pending */
	uint64_t t0;	    /* when its placing began */
	uint64_t placed_ns; /* when it was in place (CLOCK_MONOTONIC) */
	char path[PATH_MAX];
};

static bool same_file(const struct code_probe_key *k, const struct py_proc *pp)
{
	return k->inode == pp->file_inode && k->off == pp->code_dealloc_off;
}

/* The file's probe, placed or being placed; NULL: none yet.  Placed from
 * the files before the process mapped them, its key may carry stat's
 * device number, and the maps' that of the file underneath (an overlay):
 * the inode and the offset decide. */
static struct code_probe *code_probe_of(struct session *s, const struct code_probe_key *k)
{
	struct code_probe *cp = hmap__get(s->code_probes, k);
	const void *key;
	size_t it = 0;
	void *val;

	while (!cp && hmap__next(s->code_probes, &it, &key, &val)) {
		const struct code_probe_key *o = key;

		if (o->inode == k->inode && o->off == k->off)
			cp = val;
	}
	return cp;
}

/* Its placing ended (err: how): the processes of the file recognised
 * meanwhile may now keep what their walks read of code objects. */
static void code_probe_done(struct session *s, const struct code_probe_key *k,
			    struct code_probe *cp, int err)
{
	size_t it = 0;
	void *v;

	if (cp->state == CODE_PROBE_PENDING)
		s->code_probes_pending--;
	pr_debug("the probe on %s's code-object deallocator took %.2f ms\n", cp->path,
		 (mono_ns() - cp->t0) / 1e6);
	if (err) {
		cp->state = CODE_PROBE_FAILED;
		snprintf(s->code_probe_why, sizeof(s->code_probe_why),
			 "no probe on %.100s's code-object deallocator: %s", cp->path,
			 strerror(-err));
		pr_debug("%s\n", s->code_probe_why);
		s->code_probes_failed++;
		return;
	}
	cp->state = CODE_PROBE_PLACED;
	cp->placed_ns = mono_ns();
	s->code_probes_placed++;
	while (hmap__next(s->procs, &it, NULL, &v)) {
		struct tproc *tp = v;

		if (tp->state != TP_PYTHON || tp->exited || tp->pp.cfg.code_cache ||
		    !same_file(k, &tp->pp))
			continue;
		tp->code_probe_ns = cp->placed_ns;
		tp->pp.cfg.code_cache = 1;
		err = s->bpf.set_python(s->bpf.ctx, tp->pid, &tp->pp.cfg, tp->pp.gil_lo,
					tp->pp.gil_hi);
		if (err)
			pr_warn("failed to configure process %d: %s\n", tp->pid, strerror(-err));
	}
}

/* The background placings that have ended since the last look. */
static void code_probes_check(struct session *s)
{
	const void *k;
	size_t it = 0;
	void *v;
	int err;

	while (s->code_probes_pending && hmap__next(s->code_probes, &it, &k, &v)) {
		struct code_probe *cp = v;

		if (cp->state != CODE_PROBE_PENDING)
			continue;
		err = s->bpf.code_probe_result(s->bpf.ctx, cp->job);
		if (err != -EINPROGRESS)
			code_probe_done(s, k, cp, err);
	}
}

/*
 * Whether walks of the process may keep what they read of code objects from
 * one walk to the next (struct pywalk_owner): only once the probe on its
 * interpreter's code-object deallocator is in place, placed once per
 * interpreter file for every process that maps it; since when, in
 * *placed_ns (0: not placed).  Not placed yet, it is placed now, or, for a
 * process still starting (background), by a loader thread, and
 * code_probe_done gives the file's processes their cache when it ends.
 * Without it (a type we could not find, a failed attach), each walk reads
 * its code objects anew.
 */
static bool code_cache_for(struct session *s, int pid, const struct py_proc *pp,
			   uint64_t *placed_ns, bool background)
{
	struct code_probe_key k = {
		.inode = pp->file_inode,
		.off = pp->code_dealloc_off,
		.dev_major = pp->file_dev_major,
		.dev_minor = pp->file_dev_minor,
	};
	char path[PATH_MAX + 32];
	struct code_probe *cp;
	int err;

	*placed_ns = 0;
	if (!s->bpf.code_probe || !pp->code_dealloc_off)
		return false;
	cp = code_probe_of(s, &k);
	if (cp && cp->state == CODE_PROBE_PENDING)
		code_probes_check(s);
	if (cp) {
		*placed_ns = cp->state == CODE_PROBE_PLACED ? cp->placed_ns : 0;
		return cp->state == CODE_PROBE_PLACED;
	}
	cp = calloc(1, sizeof(*cp));
	if (!cp || hmap__put(s->code_probes, &k, cp)) {
		free(cp);
		return false;
	}
	cp->t0 = mono_ns();
	snprintf(cp->path, sizeof(cp->path), "%s", pp->path);
	err = procmaps__file_in_root(path, sizeof(path), pid, pp->path);
	if (!err && background && s->bpf.code_probe_begin) {
		err = s->bpf.code_probe_begin(s->bpf.ctx, path, pp->code_dealloc_off);
		if (err >= 0) {
			cp->state = CODE_PROBE_PENDING;
			cp->job = err;
			s->code_probes_pending++;
			return false;
		}
	} else if (!err) {
		err = s->bpf.code_probe(s->bpf.ctx, path, pp->code_dealloc_off);
	}
	code_probe_done(s, &k, cp, err);
	*placed_ns = cp->placed_ns;
	return !err;
}

static bool exe_key(int pid, struct exe_key *k);
static bool file_key(const char *path, struct exe_key *k);

/*
 * A process starting an interpreter: the probe on its code deallocator is
 * placed now, by a loader thread, before any of its code runs, rather than
 * after its first walks (set_python), so that no code freed at its start
 * goes uncopied.  From its memory once its interpreter file is mapped and
 * relocated (pp, partly filled by a detection not ready yet); before that,
 * from the files it will load, found through its executable (a shared
 * libpython is mapped too close to the runtime's start for the loader to
 * see it in between): placed on a file the process has not mapped yet, the
 * dynamic loader maps the file with it.
 */
static void early_code_probe(struct session *s, struct tproc *tp, const struct py_proc *pp)
{
	struct exe_key k;
	struct py_proc fp;
	int err;

	if (pp->code_dealloc_off) {
		code_cache_for(s, tp->pid, pp, &(uint64_t){ 0 }, true);
		return;
	}
	if (tp->dealloc_files_read)
		return;
	tp->dealloc_files_read = true;
	/* Read once per executable (a host starts the same one again and
	 * again): what came of it stands. */
	if (!exe_key(tp->pid, &k) || hmap__get(s->dealloc_exes, &k))
		return;
	if (hmap__count(s->dealloc_exes) < MAX_NOT_PYTHON_EXES)
		hmap__put(s->dealloc_exes, &k, (void *)1);
	err = python__code_dealloc_in_files(tp->pid, NULL, &fp);
	if (err) {
		pr_debug("process %d: the code deallocator is not found from its files: %s\n",
			 tp->pid, strerror(-err));
		return;
	}
	code_cache_for(s, tp->pid, &fp, &(uint64_t){ 0 }, true);
}

static void set_python(struct session *s, struct tproc *tp, const struct py_proc *pp)
{
	int err;

	tp->pp = *pp;
	tp->pp.cfg.code_cache = 0;
	tp->state = TP_PYTHON;
	tp->recognised_ns = mono_ns();
	if (tp->start_ns)
		pr_debug("process %d recognised %.1f ms after its exec\n", tp->pid,
			 (tp->recognised_ns - tp->start_ns) / 1e6);
	/* Start-up: the imports' code objects are short-lived. */
	s->fast_until_ns = tp->recognised_ns + FAST_WINDOW_NS;
	err = s->bpf.set_python(s->bpf.ctx, tp->pid, &tp->pp.cfg, tp->pp.gil_lo, tp->pp.gil_hi);
	if (err)
		pr_warn("failed to configure process %d: %s\n", tp->pid, strerror(-err));
	if (s->host && !host_python(s, tp, NULL)) {
		let_go(s, tp);
		return;
	}
	/* Unless it was placed while the process started (try_detect), the
	 * probe takes 0.02-22 ms to place the first time an interpreter
	 * file takes it: the process is walked meanwhile, reading its code
	 * objects each time, and code freed in between is not copied.  (Placed
	 * before the first walk instead, a program that allocated while it was
	 * placed lost its walk configuration for its memory records in some
	 * runs, for reasons not found: docs/faults-and-limits.md.) */
	/* (Placed just now, code_probe_done gave it its cache already.) */
	if (!err && code_cache_for(s, tp->pid, pp, &tp->code_probe_ns, false) &&
	    !tp->pp.cfg.code_cache) {
		tp->pp.cfg.code_cache = 1;
		err = s->bpf.set_python(s->bpf.ctx, tp->pid, &tp->pp.cfg, tp->pp.gil_lo,
					tp->pp.gil_hi);
		if (err)
			pr_warn("failed to configure process %d: %s\n", tp->pid, strerror(-err));
	}
	note_interpreter(s, tp);
	sasync_start(s, tp);
	/* Symbols read before (for a sample of a launcher that exec'd it,
	 * whose exec record the loader may read only now) are not this
	 * image's; --native reads its maps and files now, while it lives. */
	drop_symbols(s, tp);
	if (s->native)
		snative_tick(s, tp, tp->recognised_ns);
}

static void try_detect(struct session *s, struct tproc *tp, uint64_t now);

/* The identity of an executable file, for the caches of programs known not
 * to be Python (system-wide, where every exec on the host is looked at) and
 * of those whose interpreter files were read: false if it cannot be read. */
static bool file_key(const char *path, struct exe_key *k)
{
	struct stat st;

	if (stat(path, &st))
		return false;
	memset(k, 0, sizeof(*k));
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	k->size = st.st_size;
	k->mtime_ns = st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;
	return true;
}

/* That of pid's executable. */
static bool exe_key(int pid, struct exe_key *k)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return file_key(path, k);
}

/* Remembers that pid's executable is not Python (detection said so from
 * its ELF file alone: no _PyRuntime, no libpython among its needs). */
static void remember_not_python(struct session *s, int pid)
{
	struct exe_key k;

	if (!s->host || !exe_key(pid, &k))
		return;
	if (hmap__count(s->not_python_exes) >= MAX_NOT_PYTHON_EXES) {
		struct hmap *fresh = hmap__new(sizeof(k));

		if (!fresh)
			return;
		hmap__free(s->not_python_exes);
		s->not_python_exes = fresh;
	}
	hmap__put(s->not_python_exes, &k, (void *)1);
}

static bool known_not_python(struct session *s, int pid)
{
	struct exe_key k;

	return exe_key(pid, &k) && hmap__get(s->not_python_exes, &k);
}

/* Starts following pid: BPF records it, its threads get their off-CPU
 * state. */
static int follow(struct session *s, struct tproc *tp)
{
	int err = s->bpf.track(s->bpf.ctx, tp->pid);

	if (err) {
		pr_warn("failed to track process %d: %s\n", tp->pid, strerror(-err));
		return err;
	}
	if (s->bpf.seed_threads(s->bpf.ctx, tp->pid) <= 0)
		pr_debug("process %d: no thread could be given off-CPU state yet\n", tp->pid);
	return 0;
}

int session__add_proc(struct session *s, int pid)
{
	struct tproc *tp;
	int err;

	if (hmap__get(s->procs, &pid))
		return 0;
	tp = tproc_new(s, pid, 0);
	if (!tp)
		return -ENOMEM;
	err = follow(s, tp);
	if (err) {
		hmap__del(s->procs, &pid);
		tproc_free(s, tp);
		return err;
	}
	try_detect(s, tp, mono_ns());
	return 0;
}

int session__add_root(struct session *s, int pid, const struct py_proc *pp)
{
	struct tproc *tp = tproc_new(s, pid, 0);
	int err;

	if (!tp)
		return -ENOMEM;
	s->root_pid = pid;
	err = s->bpf.track(s->bpf.ctx, pid);
	if (err) {
		pr_warn("failed to track process %d: %s\n", pid, strerror(-err));
		return err;
	}
	if (s->bpf.seed_threads(s->bpf.ctx, pid) <= 0)
		pr_debug("process %d: no thread could be given off-CPU state yet\n", pid);
	/* A launched root is our own fork until it execs: its exec event
	 * starts the recognition. */
	if (pp)
		set_python(s, tp, pp);
	else
		tp->state = TP_OTHER;
	return 0;
}

int session__leave_out_threads(struct session *s, int pid, const char *comm)
{
	struct tproc *tp = hmap__get(s->procs, &pid);

	if (!tp)
		return -ENOENT;
	snprintf(tp->left_out, sizeof(tp->left_out), "%s", comm);
	return 0;
}

void session__root_will_exec(struct session *s, const char *exe)
{
	char real[PATH_MAX];
	struct py_proc fp;
	struct exe_key k;
	uint64_t t0 = mono_ns(), placed;
	int err;

	/* The dynamic loader's $ORIGIN is the executable's own folder. */
	if (!realpath(exe, real))
		return;
	err = python__code_dealloc_in_files(s->root_pid, real, &fp);
	if (err) {
		pr_debug("%s: its code deallocator is not found before its exec: %s\n", real,
			 strerror(-err));
		return;
	}
	if (code_cache_for(s, s->root_pid, &fp, &placed, false))
		s->code_probes_before_exec++;
	/* Its files are read: at its exec, early_code_probe need not again. */
	if (file_key(real, &k) && hmap__count(s->dealloc_exes) < MAX_NOT_PYTHON_EXES)
		hmap__put(s->dealloc_exes, &k, (void *)1);
	pr_debug("%s: the probe on the code deallocator of %s %s before the exec (%.2f ms)\n", real,
		 fp.path, placed ? "placed" : "not placed", (mono_ns() - t0) / 1e6);
}

static void try_detect(struct session *s, struct tproc *tp, uint64_t now)
{
	struct py_proc pp;
	uint64_t t0;
	int err;

	if (!tp->first_try_ns)
		tp->first_try_ns = now;
	tp->last_try_ns = now;
	t0 = mono_ns();
	err = python__detect_cached(tp->pid, &pp, s->elves, tp->why, sizeof(tp->why));
	pr_debug("process %d: detection took %.2f ms\n", tp->pid, (mono_ns() - t0) / 1e6);
	if (!err) {
		set_python(s, tp, &pp);
		return;
	}
	if (err == -EAGAIN && now - tp->first_try_ns < DETECT_GIVE_UP_NS) {
		pr_debug("process %d not ready %.1f ms after the first try: %s\n", tp->pid,
			 (now - tp->first_try_ns) / 1e6, tp->why);
		early_code_probe(s, tp, &pp);
		tp->retry_ns = now - tp->first_try_ns < DETECT_FAST_NS ? DETECT_RETRY_NS
								       : tp->retry_ns * 2;
		if (tp->retry_ns > DETECT_RETRY_MAX_NS)
			tp->retry_ns = DETECT_RETRY_MAX_NS;
		tp->next_try_ns = now + tp->retry_ns;
		session_due(s, tp->next_try_ns);
		return;
	}
	if (err == -ENOENT || err == -ESRCH) {
		pr_debug("process %d: %s\n", tp->pid, tp->why);
		if (err == -ENOENT)
			remember_not_python(s, tp->pid);
		tp->state = TP_OTHER;
		if (s->host) {
			s->host->skipped(s->host->ctx, tp->pid, NULL);
			let_go(s, tp);
		}
		return;
	}
	/* -EAGAIN past the give-up time: report why it never became ready. */
	if (!s->host)
		pr_warn("process %d is not profiled: %s\n", tp->pid, tp->why);
	tp->state = TP_UNSUPPORTED;
	if (s->host) {
		s->host->skipped(s->host->ctx, tp->pid, tp->why);
		let_go(s, tp);
	}
}

/*
 * A record from a process still being recognised (BPF had no layout to walk
 * its stack with): it is running, so it is tried again DETECT_RETRY_NS after
 * its last try rather than at its backed-off time.  A program slow to start
 * (a loaded machine, a slow library constructor) would otherwise be
 * recognised up to twice as late as it was ready, and its allocations in
 * between, which cannot be walked later, would all be outside Python.
 */
static void detect_soon(struct session *s, struct tproc *tp)
{
	uint64_t at = tp->last_try_ns + DETECT_RETRY_NS;

	if (tp->state != TP_DETECTING || tp->exited || at >= tp->next_try_ns)
		return;
	tp->next_try_ns = at;
	session_due(s, at);
}

static void drain_counts(struct session *s, int which);
static void end_due(struct session *s, bool now);

/* When the process's own work is due next (UINT64_MAX: none). */
static uint64_t tproc_due_ns(const struct session *s, const struct tproc *tp)
{
	uint64_t due = UINT64_MAX;

	if (tp->state == TP_DETECTING && !tp->exited)
		return tp->next_try_ns;
	if (s->async_waits && sasync_due(tp))
		due = tp->next_async_ns;
	if (s->native && tp->state == TP_PYTHON && !tp->exited && tp->next_native_ns < due)
		due = tp->next_native_ns;
	return due;
}

/* Milliseconds from now to `at`, rounded up: a wake-up before it is due
 * would find nothing to do and poll again at once. */
static uint64_t ms_until(uint64_t now, uint64_t at)
{
	return at > now ? (at - now + 999999) / 1000000 : 0;
}

int session__poll_ms(const struct session *s, uint64_t now)
{
	/* Fast while code objects come and go, and while a probe is placed
	 * in the background (its processes' walks wait for it to keep code
	 * objects). */
	uint64_t ms = now < s->fast_until_ns || s->code_probes_pending ? FAST_POLL_MS
		      : s->host					       ? HOST_SLOW_POLL_MS
								       : SLOW_POLL_MS;

	if (s->bpf.drain_counts && ms_until(now, s->next_drain_ns) < ms)
		ms = ms_until(now, s->next_drain_ns);
	/* Awake for the next process's due work: a try at recognising it
	 * while it starts, a poll of its event loop on that one's schedule. */
	if (ms_until(now, s->procs_due_ns) < ms)
		ms = ms_until(now, s->procs_due_ns);
	return (int)ms;
}

void session__tick(struct session *s, uint64_t now)
{
	size_t it = 0;
	void *v;

	if (s->bpf.drain_counts && now >= s->next_drain_ns) {
		drain_counts(s, SESSION_COUNTS_DUE);
		end_due(s, false);
		s->next_drain_ns = now + s->drain_ns;
	}
	code_probes_check(s);
	if (s->profile && now > GPU_SETTLE_NS)
		profile__gpu_settle(s->profile, now - GPU_SETTLE_NS);
	/* A host's hundreds of processes are looked at only when one of
	 * them has work due; each then says when it is due next. */
	if (now < s->procs_due_ns)
		return;
	s->procs_due_ns = UINT64_MAX;
	while (hmap__next(s->procs, &it, NULL, &v)) {
		struct tproc *tp = v;

		if (tp->state == TP_DETECTING && !tp->exited && now >= tp->next_try_ns) {
			/* It reports its next try itself (it may be let go,
			 * and gone, after this). */
			try_detect(s, tp, now);
			continue;
		}
		sasync_tick(s, tp, now);
		if (s->native)
			snative_tick(s, tp, now);
		session_due(s, tproc_due_ns(s, tp));
	}
}

static void handle_fork(struct session *s, const struct proc_record *r)
{
	struct tproc *parent = hmap__get(s->procs, &(int){ (int)r->ppid });
	struct tproc *tp = hmap__get(s->procs, &(int){ (int)r->hdr.tgid });
	bool untracked = r->flags & PROC_F_UNTRACKED;

	/* A fork BPF did not follow (system-wide, any on the host): ours
	 * only when the parent is followed here, and BPF had not been told
	 * yet (a process that forks right after its exec). */
	if (untracked && (!s->host || !parent || parent->exited))
		return;

	/* A parent still being recognised is looked at now: a child that
	 * exits at once would otherwise never be known as Python.  (It may be
	 * let go, and gone, after this.) */
	if (parent && parent->state == TP_DETECTING && !parent->exited) {
		try_detect(s, parent, mono_ns());
		parent = hmap__get(s->procs, &(int){ (int)r->ppid });
	}
	if (tp && s->host) {
		/* A PID used again before its exit record was read. */
		end_image(s, tp, END_EXIT, 0, 0, r->ts, NULL);
		let_go(s, tp);
		tp = NULL;
	}
	if (s->host && !s->host->accept(s->host->ctx, (int)r->hdr.tgid, (int)r->ppid)) {
		/* BPF follows a fork child by itself. */
		s->bpf.untrack(s->bpf.ctx, r->hdr.tgid);
		return;
	}
	if (!tp)
		tp = tproc_new(s, r->hdr.tgid, r->ppid);
	if (!tp)
		return;
	/* BPF follows it from here (if it still runs; its exit record comes
	 * all the same), with its parent's walk configuration. */
	if (untracked && !s->bpf.track(s->bpf.ctx, tp->pid) && parent->state == TP_PYTHON)
		s->bpf.set_python(s->bpf.ctx, tp->pid, &parent->pp.cfg, parent->pp.gil_lo,
				  parent->pp.gil_hi);
	tp->start_ns = r->ts;
	pr_debug("process %d forked %d\n", (int)r->ppid, (int)r->hdr.tgid);
	tp->exited = false;
	if (parent) {
		/* Same image as the parent until it execs; BPF copied the
		 * walk configuration already. */
		tp->state = parent->state;
		tp->pp = parent->pp;
		tp->pp.pid = r->hdr.tgid;
		tp->parent_space = parent->space;
		/* The sampler comes with the copied address space (its
		 * constructor does not run again); its counts are the child's
		 * own from here on, and final only at the child's exit. */
		tp->sampler_loaded = parent->sampler_loaded;
		tp->sampler_addr = parent->sampler_addr;
		tp->sampler_final = false;
		memset(&tp->sampler, 0, sizeof(tp->sampler));
		/* System-wide, a profile of its own from the start. */
		if (s->host && tp->state == TP_PYTHON && !host_python(s, tp, parent)) {
			let_go(s, tp);
			return;
		}
	} else {
		tp->state = TP_DETECTING;
		session_due(s, 0);
	}
}

static void handle_exec(struct session *s, const struct proc_record *r)
{
	struct tproc *tp = hmap__get(s->procs, &(int){ (int)r->hdr.tgid });

	/* Recognised already, after this exec: the record was just late, and
	 * the interpreter found is this image's.  What records before it said
	 * of the process belongs to an earlier image all the same: a program
	 * that execs itself without LD_PRELOAD before the loader looked has
	 * its first image's sampler announced ahead of this record. */
	if (tp && tp->state == TP_PYTHON && tp->recognised_ns > r->ts) {
		pr_debug("process %d exec'ed %.16s (recognised already)\n", (int)r->hdr.tgid,
			 (const char *)r->comm);
		if (!s->host)
			profile__proc_exit(s->profile, tp->pid, r->ts);
		tp->sampler_loaded = tp->sampler_final = false;
		return;
	}
	if (s->host && tp) {
		/* The old image's profile is complete; the new one is judged
		 * afresh (its name has changed). */
		end_image(s, tp, END_EXEC, 0, r->maxrss_pages * (getpagesize() / 1024), r->ts, r);
		new_image(tp, r->gen);
		if (!s->host->accept(s->host->ctx, tp->pid, 0)) {
			let_go(s, tp);
			return;
		}
	} else if (s->host) {
		/* Any exec on the host (BPF reports them all): followed only
		 * if the filters take it. */
		if (!s->host->accept(s->host->ctx, (int)r->hdr.tgid, 0))
			return;
		/* A program seen before and not Python: not followed at all. */
		if (known_not_python(s, (int)r->hdr.tgid)) {
			s->exec_cache_hits++;
			s->host->skipped(s->host->ctx, (int)r->hdr.tgid, NULL);
			return;
		}
		tp = tproc_new(s, r->hdr.tgid, 0);
		if (tp && follow(s, tp)) {
			hmap__del(s->procs, &tp->pid);
			tproc_free(s, tp);
			return;
		}
	} else if (!tp) {
		tp = tproc_new(s, r->hdr.tgid, 0);
	}
	if (!tp)
		return;
	pr_debug("process %d exec'ed %.16s (read %.1f ms later)\n", (int)r->hdr.tgid,
		 (const char *)r->comm, (mono_ns() - r->ts) / 1e6);
	new_image(tp, r->gen);
	tp->state = TP_DETECTING;
	session_due(s, 0);
	tp->cpu_samples = 0;
	tp->start_ns = r->ts;
	tp->ppid = 0;
	tp->parent_space = 0;
	tp->space = s->next_space++;
	tp->first_try_ns = 0;
	tp->last_try_ns = 0;
	tp->next_try_ns = 0;
	tp->retry_ns = 0;
	tp->dealloc_files_read = false;
	tp->code_probe_ns = 0;
	drop_symbols(s, tp);
	sasync_stop(tp);
	/* The old image's memory is gone; a new sampler will announce itself. */
	if (!s->host)
		profile__proc_exit(s->profile, tp->pid, r->ts);
	tp->sampler_loaded = tp->sampler_final = false;
	try_detect(s, tp, mono_ns());
}

static void retire_exited(struct session *s);

/* A followed process that exited (system-wide): its profile is handed to
 * the host and it is let go. */
static void finish_end(struct session *s, struct tproc *tp, const struct proc_record *r)
{
	if (tp->end_pending)
		s->npending_ends--;
	tp->end_pending = false;
	end_image(s, tp, END_EXIT, (int)r->exit_code, r->maxrss_pages * (getpagesize() / 1024),
		  r->ts, r);
	let_go(s, tp);
}

/*
 * With counted samples, a process's end waits for two periodic drains
 * (end_due): the first closes the epoch it last ran in and hands it out,
 * the second what a sample racing that drain added.  Ending at once instead
 * reads the whole count table for each exit, which a host that forks
 * children by the second pays for in full (the table holds every process's
 * counts since the last drain).  Not when it cannot wait: the table of those
 * waiting is bounded.
 */
#define MAX_PENDING_ENDS 1024

static bool defer_end(struct session *s, struct tproc *tp, const struct proc_record *r)
{
	if (!s->bpf.drain_counts || tp->drained || s->npending_ends >= MAX_PENDING_ENDS)
		return false;
	tp->end_rec = *r;
	tp->end_pending = true;
	tp->end_drains = 0;
	/* Nothing more is looked at in it. */
	tp->exited = true;
	sasync_stop(tp);
	s->npending_ends++;
	return true;
}

/* After a periodic drain: the ends that waited two; all of them
 * (now) when the run or an interval ends, each with a drain of its own. */
static void end_due(struct session *s, bool now)
{
	size_t it = 0;
	void *v;

	if (!s->npending_ends)
		return;
	while (hmap__next(s->procs, &it, NULL, &v)) {
		struct tproc *tp = v;

		if (!tp->end_pending)
			continue;
		if (!now && ++tp->end_drains < 2)
			continue;
		/* After two drains every count of it came with them; now, a
		 * drain of its own brings them (end_image). */
		tp->drained = !now;
		finish_end(s, tp, &tp->end_rec);
	}
}

static void handle_exit(struct session *s, const struct proc_record *r)
{
	struct tproc *tp = hmap__get(s->procs, &(int){ (int)r->hdr.tgid });

	/* Any exit on the host (system-wide): ours only if followed. */
	if ((r->flags & PROC_F_UNTRACKED) && !tp)
		return;

	pr_debug("process %d exited\n", (int)r->hdr.tgid);
	if (s->host) {
		if (tp && !defer_end(s, tp, r))
			finish_end(s, tp, r);
		return;
	}
	if (tp && !tp->exited) {
		tp->exited = true;
		/* Its symbols are not needed any more. */
		drop_symbols(s, tp);
		tp->unwind_failed = true;
		sasync_stop(tp);
	}
	profile__proc_exit(s->profile, r->hdr.tgid, r->ts);
	s->bpf.untrack(s->bpf.ctx, r->hdr.tgid);
	if ((int)r->hdr.tgid == s->root_pid)
		s->root_exited = true;
	else if (tp)
		retire_exited(s);
}

/* The thread's name as the record carries it, interned; the last name
 * seen per thread is kept so that a thread's samples intern it once. */
static const char *thread_name(struct session *s, struct profile *p, const struct sample_event *ev)
{
	struct thread_name_key k = { (int)ev->hdr.tgid, (int)ev->tid };
	const char *name = hmap__get(s->tnames, &k);
	char buf[sizeof(ev->comm) + 1];

	memcpy(buf, ev->comm, sizeof(ev->comm));
	buf[sizeof(ev->comm)] = '\0';
	if (name && !strcmp(name, buf))
		return name;
	if (!name && hmap__count(s->tnames) >= MAX_THREAD_NAMES) {
		struct hmap *fresh = hmap__new(sizeof(k));

		if (fresh) {
			hmap__free(s->tnames);
			s->tnames = fresh;
		}
	}
	name = profile__intern(p, buf[0] ? buf : "?");
	if (name)
		hmap__put(s->tnames, &k, (void *)name);
	return name;
}

/* The program's CPU use in the window before the sample, as a fraction of
 * all cores: Scalene's per-sample core utilisation. */
static double core_util(struct session *s, const struct sample_event *ev)
{
	uint64_t b = ev->ts / UTIL_BUCKET_NS, prev = b - 1;
	unsigned int i = b % UTIL_BUCKETS, j = prev % UTIL_BUCKETS;
	double per_bucket = (double)UTIL_BUCKET_NS / s->period_ns * s->ncpus;

	if (ev->cpu_ns) {
		if (s->util_bucket[i] != b) {
			s->util_bucket[i] = b;
			s->util_count[i] = 0;
		}
		s->util_count[i] += ev->count ? ev->count : 1;
	}
	if (s->util_bucket[j] != prev || per_bucket <= 0)
		return 0;
	return s->util_count[j] / per_bucket > 1 ? 1 : s->util_count[j] / per_bucket;
}

/* A user-mode sample in the interpreter's code: its own work (Python), unless
 * the innermost frame's current instruction is a call and this is the C
 * function it called (native).  The eval loop and its making and freeing of
 * Python frames stay Python. */
static enum sample_where interpreter_where(const struct tproc *tp, const struct sample_event *ev)
{
	if (!(ev->flags & SAMPLE_F_CALL) || python__in_call_machinery(&tp->pp, ev->user_ip))
		return WHERE_PYTHON;
	return WHERE_NATIVE;
}

int session_native_name(struct session *s, struct tproc *tp, uint64_t ip, uint64_t ts_ns,
			const char **module, const char **sym, int64_t *offset)
{
	struct profile *p = tp_profile(s, tp);
	struct usym u;
	int err;

	if (!tp->usyms) {
		struct usyms_opts o = { .cache = s->elves };

		tp->usyms = usyms__new(tp->pid, &o);
		if (!tp->usyms)
			return -ENOENT;
	}
	err = usyms__resolve(tp->usyms, ip, &u);
	if (err == -ENOENT) {
		/* A library loaded since: the maps again, at usyms' pace. */
		if (usyms__refresh_for(tp->usyms, ts_ns) || usyms__resolve(tp->usyms, ip, &u))
			return -ENOENT;
	} else if (err) {
		return -ENOENT;
	}
	*module = profile__intern(p, u.module);
	/* Without a symbol, u.offset is a file offset, not one from a start. */
	if (!u.name || !u.name[0]) {
		char buf[64];

		snprintf(buf, sizeof(buf), "+0x%llx", (unsigned long long)u.offset);
		*sym = profile__intern(p, buf);
		*offset = -1;
	} else {
		*sym = profile__intern(p, u.name);
		*offset = (int64_t)u.offset;
	}
	return *module && *sym ? 0 : -ENOMEM;
}

static void native_symbol(struct session *s, struct tproc *tp, uint64_t ip, struct sample_in *in)
{
	if (session_native_name(s, tp, ip, in->ts_ns, &in->native_module, &in->native_sym,
				&in->native_offset))
		return;
	in->native_ip = ip;
}

const struct pycode *session_code_for(struct session *s, struct tproc *tp, uint64_t code,
				      uint64_t tag)
{
	const struct pycode *pc = NULL;

	if (!tp->exited)
		pc = pycode_cache__load(s->codes, &tp->pp, tp->space, code, tag);
	if (!pc)
		pc = pycode_cache__lookup(s->codes, tp->space, code, tag);
	/* Freed since (or gone with its process): the probe on the
	 * deallocator copied it as it went, before its memory was used again,
	 * if a walk had read it lately. */
	if (!pc && s->bpf.code_copies) {
		s->bpf.code_copies(s->bpf.ctx);
		pc = pycode_cache__lookup(s->codes, tp->space, code, tag);
	}
	/* Code objects created before a fork live at the same address in the
	 * child: the parent's entry holds (the tag guards it).  A child that
	 * ends before its records are read (it ran a function and exited)
	 * leaves no process to read them from: the parent, still running the
	 * image it forked from, has them. */
	if (!pc && tp->parent_space) {
		const struct tproc *parent = hmap__get(s->procs, &tp->ppid);

		pc = pycode_cache__lookup(s->codes, tp->parent_space, code, tag);
		if (!pc && parent && parent->space == tp->parent_space && !parent->exited)
			pc = pycode_cache__load(s->codes, &parent->pp, parent->space, code, tag);
	}
	return pc;
}

/* Room for a sample's frames and the marker of the frames elided. */
#define SAMPLE_FRAMES (MAX_FRAMES + 1)

/* The record's slot of the i-th kept frame, innermost first: with frames
 * elided, the outer part is a ring whose innermost frame sits at
 * INNER_FRAMES + elided % OUTER_FRAMES (see bpf/pywalk.h). */
static uint32_t frame_slot(const struct sample_event *ev, uint32_t i)
{
	if (!ev->elided || i < INNER_FRAMES)
		return i;
	return INNER_FRAMES + (i - INNER_FRAMES + ev->elided) % OUTER_FRAMES;
}

/* Stands where the walker left frames out: no file, so never attributed. */
static const struct frame_ref elided_frame = { .filename = "",
					       .qualname = "[frames elided]",
					       .line = 1 };

/* BPF read the frame's code object (its first line and identity): a frame
 * without is one being set up or torn down as the sample came (a thread
 * starting, seen on 3.12: its code pointer leads to no code object), or one
 * whose object BPF could not read.  Nothing can tell later whether the
 * object at its address is the one that ran, so it is not read: it counts
 * as unreadable, and looking sooner would not have helped. */
static bool frame_identified(const struct py_frame *f)
{
	return f->tag || f->ident;
}

void session_frame_names(struct profile *p, const struct pycode *pc, struct frame_ref *out)
{
	uint64_t key = profile__serial(p);

	if (pycode__names(pc, key, &out->filename, &out->qualname))
		return;
	out->filename = profile__intern(p, pc->filename);
	out->qualname = profile__intern(p, pc->qualname);
	if (out->filename && out->qualname)
		pycode__keep_names(pc, key, out->filename, out->qualname);
}

/* Whether the raw frame is the outermost Python frame of one C-level call of
 * the interpreter's eval loop (abi.h: PY_FRAME_F_ENTRY): up to 3.10 every
 * frame has its own call; 3.11 marks the frame; 3.12+ push a shim below it
 * (next: the frame below, NULL at the bottom). */
static bool eval_call_ends(int minor, const struct py_frame *f, const struct py_frame *next)
{
	if (minor <= 10)
		return true;
	if (minor == 11)
		return f->flags & PY_FRAME_F_ENTRY;
	return next && !next->code;
}

/* The sample's frames, resolved, innermost first; with segs, each one's eval
 * loop call (segs->seg), counted from the innermost (0) as eval_call_ends
 * tells them apart (frames left out still count their calls), and where each
 * call's entry frame lies on the C stack (3.12+: the shim's address; else 0). */
static int resolve_frames(struct session *s, struct tproc *tp, const struct sample_event *ev,
			  struct frame_ref *out, int *offsets, struct frame_segs *segs)
{
	uint32_t i, n = ev->nframes < MAX_FRAMES ? ev->nframes : MAX_FRAMES;
	int k = 0, seg = 0;

	for (i = 0; i < n; i++) {
		const struct py_frame *f = &ev->frames[frame_slot(ev, i)];
		const struct pycode *pc;
		int line, this_seg;

		if (ev->elided && i == INNER_FRAMES) {
			out[k] = elided_frame;
			if (offsets)
				offsets[k] = -1;
			if (segs)
				segs->seg[k] = seg;
			k++;
		}
		if (!f->code)
			continue; /* interpreter shim */
		this_seg = seg;
		if (segs) {
			const struct py_frame *next =
				i + 1 < n ? &ev->frames[frame_slot(ev, i + 1)] : NULL;

			if (eval_call_ends(tp->pp.minor, f, next)) {
				segs->entry[seg] = next && !next->code
							   ? (uint64_t)next->ident << 32 | next->tag
							   : 0;
				seg++;
				segs->n = seg;
			}
		}
		if (!frame_identified(f)) {
			s->frames_unreadable++;
			s->frames_unread_in_bpf++;
			continue;
		}
		pc = session_code_for(s, tp, f->code, pycode_tag(f->tag, f->ident));
		if (!pc) {
			s->frames_unreadable++;
			if (!tp->code_probe_ns || ev->ts < tp->code_probe_ns)
				s->frames_unread_before_probe++;
			/* Sooner reads help samples that come by the ring
			 * buffer; counted ones come a drain late whatever
			 * the poll (their stacks' code objects were read as
			 * the stacks came: on_stack). */
			if (!s->bpf.drain_counts)
				s->fast_until_ns = mono_ns() + FAST_WINDOW_NS;
			pr_debug("process %d: code object 0x%llx (frame %u of %u) unreadable "
				 "%.1f ms after the sample, taken %.1f ms after the process was "
				 "recognised: %s\n",
				 tp->pid, (unsigned long long)f->code, i + 1, n,
				 (mono_ns() - ev->ts) / 1e6,
				 ((double)ev->ts - (double)tp->recognised_ns) / 1e6,
				 strerror(errno));
			continue;
		}
		if (pc->copied)
			s->frames_from_copies++;
		line = pycode__line(pc, f->offset);
		session_frame_names(tp_profile(s, tp), pc, &out[k]);
		out[k].firstlineno = pc->firstlineno;
		out[k].line = line > 0 ? line : pc->firstlineno;
		if (!out[k].filename || !out[k].qualname)
			continue;
		if (offsets)
			offsets[k] = f->offset;
		if (segs)
			segs->seg[k] = this_seg;
		k++;
	}
	return k;
}

/* A process not (yet) recognised as Python: its samples are kept apart. */
static bool not_python(const struct tproc *tp, const struct sample_event *ev)
{
	return tp->state != TP_PYTHON || ev->status == WALK_NO_CONFIG;
}

/* A sample's resolved frames, innermost first: their count; when there are
 * none, the reason goes to *unattributed. */
static int sample_frames(struct session *s, struct tproc *tp, const struct sample_event *ev,
			 struct frame_ref *frames, int *offsets, struct frame_segs *segs,
			 int *unattributed)
{
	/* A stack of interpreter shims only (3.12+ entry frames with no Python
	 * frame above them yet: start-up, finalisation) has no Python frame,
	 * rather than an unreadable one. */
	uint64_t unread_before = s->frames_unreadable;
	int n;

	if (ev->status == WALK_NO_TSTATE || ev->status == WALK_TID_MISMATCH ||
	    ev->status == WALK_BAD_KEY) {
		*unattributed = UNATTR_NO_PYTHON_THREAD;
		return 0;
	}
	if (ev->status == WALK_BUSY) {
		*unattributed = UNATTR_UNREADABLE;
		return 0;
	}
	n = resolve_frames(s, tp, ev, frames, offsets, segs);
	if (!n)
		*unattributed = unread_before < s->frames_unreadable ? UNATTR_UNREADABLE
								     : UNATTR_NO_PYTHON_THREAD;
	return n;
}

int session_frames(struct session *s, struct tproc *tp, const struct sample_event *ev,
		   struct frame_ref *frames, int *unattributed)
{
	if (not_python(tp, ev))
		return 0;
	return sample_frames(s, tp, ev, frames, NULL, NULL, unattributed);
}

/* A memory sample held back, resolved (its frames are read while they are
 * what the sample saw), to be added with its weight set later. */
struct held_mem {
	struct profile *p;
	struct mem_in m;
	struct frame_ref frames[SAMPLE_FRAMES];
	int offsets[SAMPLE_FRAMES];
	/* --native: m.nstack addresses, then m.nstack frames, after it */
};

static void hold_mem(struct session *s, struct profile *p, const struct mem_in *m)
{
	struct held_mem *h;

	if (s->nheld_mem == s->cap_held_mem) {
		size_t cap = s->cap_held_mem ? s->cap_held_mem * 2 : 256;
		void **a = cap <= MAX_HELD_MEM ? realloc(s->held_mem, cap * sizeof(*a)) : NULL;

		if (!a) {
			s->held_mem_dropped++;
			return;
		}
		s->held_mem = a;
		s->cap_held_mem = cap;
	}
	h = malloc(sizeof(*h) +
		   (m->stack ? m->nstack * (sizeof(*m->stack_ips) + sizeof(*m->stack)) : 0));
	if (!h) {
		s->held_mem_dropped++;
		return;
	}
	h->p = p;
	h->m = *m;
	if (m->nframes > 0) {
		memcpy(h->frames, m->frames, m->nframes * sizeof(*h->frames));
		memcpy(h->offsets, m->offsets, m->nframes * sizeof(*h->offsets));
	}
	if (m->stack) {
		uint64_t *ips = (uint64_t *)(h + 1);
		struct frame_ref *stack = (struct frame_ref *)(ips + m->nstack);

		memcpy(ips, m->stack_ips, m->nstack * sizeof(*m->stack_ips));
		memcpy(stack, m->stack, m->nstack * sizeof(*m->stack));
		h->m.stack = stack;
		h->m.stack_ips = ips;
	}
	s->held_mem[s->nheld_mem++] = h;
}

void session__hold_memory(struct session *s, bool hold)
{
	s->mem_hold = hold;
}

void session__release_memory(struct session *s, double factor)
{
	size_t i;

	for (i = 0; i < s->nheld_mem; i++) {
		struct held_mem *h = s->held_mem[i];

		h->m.frames = h->frames;
		h->m.offsets = h->offsets;
		h->m.bytes *= factor;
		if (factor > 0)
			profile__add_mem(h->p, &h->m);
		free(h);
	}
	s->nheld_mem = 0;
}

uint64_t session__memory_dropped(const struct session *s)
{
	return s->held_mem_dropped;
}

/* Room for a whole stack (--native): the Python frames, the native ones
 * unwound, the kernel's. */
#define WHOLE_FRAMES (SAMPLE_FRAMES + 128 + NATIVE_KFRAMES)

static void on_mem_sample(struct session *s, struct tproc *tp, const struct sample_event *ev,
			  const struct native_tail *nt)
{
	struct frame_ref frames[SAMPLE_FRAMES], whole[WHOLE_FRAMES];
	uint64_t whole_ips[WHOLE_FRAMES];
	int offsets[SAMPLE_FRAMES];
	struct frame_segs segs;
	struct mem_in m = {
		.tgid = ev->hdr.tgid,
		.tid = ev->tid,
		.ts_ns = ev->ts,
		.bytes = (double)ev->mem_bytes,
		.size = (double)ev->mem_size,
		.addr = ev->mem_addr,
		.python = ev->mem_flags & SBS_F_PYTHON,
		.untracked = ev->mem_flags & SBS_F_UNTRACKED,
		.restored = ev->mem_flags & SBS_F_RESTORED,
		.no_frees = ev->mem_flags & MEMF_NO_FREES,
		.truncated = ev->status == WALK_TRUNCATED,
		.unattributed = -1,
	};

	s->mem_records++;
	m.kind = ev->mode == MODE_MALLOC ? MEM_MALLOC : ev->mode == MODE_FREE ? MEM_FREE : MEM_COPY;
	m.not_python = not_python(tp, ev);
	if (!m.not_python) {
		m.frames = frames;
		m.offsets = offsets;
		segs.n = 0;
		m.nframes = sample_frames(s, tp, ev, frames, offsets, nt ? &segs : NULL,
					  &m.unattributed);
		/* The stack that allocated, C frames and all (--native). */
		if (nt && m.nframes) {
			m.nstack = snative_stack(s, tp, ev, nt, &segs, frames, m.nframes, whole,
						 whole_ips, WHOLE_FRAMES);
			m.stack = whole;
			m.stack_ips = whole_ips;
		}
	}
	if (s->mem_hold)
		hold_mem(s, tp_profile(s, tp), &m);
	else
		profile__add_mem(tp_profile(s, tp), &m);
}

static void on_sampler(struct session *s, const struct sampler_record *r)
{
	struct tproc *tp = hmap__get(s->procs, &(int){ (int)r->hdr.tgid });

	if (!tp)
		return;
	pr_debug("process %d: allocation sampler %s\n", tp->pid,
		 r->phase == SAMPLER_INIT ? "loaded" : "finished");
	tp->sampler_loaded = true;
	tp->sampler_addr = r->state_addr;
	if (r->read_err)
		return;
	memcpy(&tp->sampler, r->state, sizeof(tp->sampler));
	tp->sampler_final = r->phase == SAMPLER_EXIT;
}

/* A counted sample of an image not known yet (its exec came between the
 * ring buffer's drain and the counts'): kept for the next drain. */
struct held_record {
	size_t size;
	unsigned char data[];
};

static bool hold(struct session *s, const struct sample_event *ev, size_t size)
{
	struct held_record *h;

	if (s->nheld >= MAX_HELD)
		return false;
	h = malloc(sizeof(*h) + size);
	if (!h)
		return false;
	h->size = size;
	memcpy(h->data, ev, size);
	s->held[s->nheld++] = h;
	return true;
}

/* Whether a thread blocked in this system call waits for I/O: files,
 * sockets, pipes, and the polls of event loops. */
static bool io_syscall(int nr)
{
	static const int io[] = {
		SYS_read,	    SYS_write,	      SYS_pread64, SYS_pwrite64,  SYS_readv,
		SYS_writev,	    SYS_preadv,	      SYS_pwritev, SYS_preadv2,	  SYS_pwritev2,
		SYS_recvfrom,	    SYS_sendto,	      SYS_recvmsg, SYS_sendmsg,	  SYS_recvmmsg,
		SYS_sendmmsg,	    SYS_poll,	      SYS_ppoll,   SYS_select,	  SYS_pselect6,
		SYS_epoll_wait,	    SYS_epoll_pwait,  SYS_accept,  SYS_accept4,	  SYS_connect,
		SYS_open,	    SYS_openat,	      SYS_fsync,   SYS_fdatasync, SYS_sendfile,
		SYS_splice,	    SYS_io_getevents,
#ifdef SYS_epoll_pwait2
		SYS_epoll_pwait2,
#endif
#ifdef SYS_io_uring_enter
		SYS_io_uring_enter,
#endif
	};
	size_t i;

	for (i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
		if (nr == io[i])
			return true;
	}
	return false;
}

/* An EV_NATIVE record's native part, or NULL (an EV_SAMPLE, or a record not
 * whole: counted as bad, the sample kept). */
static const struct native_tail *native_part(struct session *s, const struct sample_event *ev,
					     size_t size)
{
	const struct native_sample *ns = (const struct native_sample *)ev;

	if (ev->hdr.type != EV_NATIVE)
		return NULL;
	if (size < NATIVE_HDR_SIZE || ns->nt.stack_len > NATIVE_STACK_BYTES ||
	    size < NATIVE_HDR_SIZE + ns->nt.stack_len || ns->nt.nkframes > NATIVE_KFRAMES) {
		s->bad_records++;
		return NULL;
	}
	return &ns->nt;
}

static void on_sample(struct session *s, const struct sample_event *ev, size_t size, bool retry)
{
	struct frame_ref frames[SAMPLE_FRAMES], whole[WHOLE_FRAMES];
	uint64_t whole_ips[WHOLE_FRAMES];
	struct frame_segs segs;
	struct sample_in in = { .unattributed = -1, .native_offset = -1 };
	uint32_t count = ev->count ? ev->count : 1;
	const struct native_tail *nt;
	struct profile *p;
	struct tproc *tp;

	if (size < SAMPLE_HDR_SIZE || ev->nframes > MAX_FRAMES ||
	    size < SAMPLE_HDR_SIZE + ev->nframes * sizeof(struct py_frame) ||
	    (ev->elided && ev->nframes != MAX_FRAMES)) {
		s->bad_records++;
		return;
	}
	nt = native_part(s, ev, size);
	tp = hmap__get(s->procs, &(int){ (int)ev->hdr.tgid });
	if (s->bpf.drain_counts && ev->mode < MODE_MALLOC && (!tp || ev->gen != tp->gen) &&
	    !retry && hold(s, ev, size))
		return;
	s->walk_status[ev->status < 8 ? ev->status : 7] += count;
	if (!tp || (s->bpf.drain_counts && ev->gen != tp->gen)) {
		s->samples_unknown_proc += count;
		return;
	}
	if (tp->left_out[0] && !strncmp((const char *)ev->comm, tp->left_out, sizeof(ev->comm)))
		return;
	if (ev->status == WALK_NO_CONFIG)
		detect_soon(s, tp);
	p = tp_profile(s, tp);
	if (!p) {
		/* System-wide: not known as Python yet, or let go. */
		s->samples_unknown_proc += count;
		return;
	}
	if (ev->mode >= MODE_MALLOC) {
		if (ev->mode <= MODE_COPY)
			on_mem_sample(s, tp, ev, nt);
		else
			s->bad_records++;
		return;
	}
	if (ev->cpu_ns)
		tp->cpu_samples += count;
	if (ev->cpu_ns || ev->offcpu_ns)
		sasync_active(s, tp, ev->ts);
	in.count = count;
	in.tgid = ev->hdr.tgid;
	in.tid = ev->tid;
	in.main_thread = ev->tid == ev->hdr.tgid;
	in.thread_name = thread_name(s, p, ev);
	in.ts_ns = ev->ts;
	in.cpu_ns = ev->cpu_ns;
	in.offcpu_ns = ev->offcpu_ns;
	in.gil_ns = ev->gil_ns;
	in.gc = ev->flags & SAMPLE_F_GC;
	in.gil_held = ev->flags & SAMPLE_F_GIL_HELD;
	in.blocked_kind = ev->offcpu_ns && io_syscall(ev->syscall_nr) ? BLOCKED_IO : BLOCKED_OTHER;
	in.period_ns = s->period_ns;
	/* Shells, launchers (pyenv's shims), the interpreter before it is
	 * recognised: their time is reported apart, not in the percentages. */
	in.not_python = not_python(tp, ev);
	in.core_util = core_util(s, ev);
	in.truncated = ev->status == WALK_TRUNCATED;
	if (ev->mode == MODE_KERNEL)
		in.where = WHERE_SYSTEM;
	else if (tp->state == TP_PYTHON && python__in_interpreter(&tp->pp, ev->user_ip))
		in.where = interpreter_where(tp, ev);
	else
		in.where = WHERE_NATIVE;
	if (in.where == WHERE_NATIVE && ev->cpu_ns && ev->user_ip)
		native_symbol(s, tp, ev->user_ip, &in);
	if (!in.not_python) {
		in.frames = frames;
		segs.n = 0;
		in.nframes =
			sample_frames(s, tp, ev, frames, NULL, nt ? &segs : NULL, &in.unattributed);
		/* A thread with no Python frame (a BLAS worker) has its own
		 * native stack, which goes under the main thread's line with
		 * its time (profile.c: defer_native). */
		if (nt && (in.nframes || (!in.main_thread && ev->cpu_ns &&
					  in.unattributed == UNATTR_NO_PYTHON_THREAD))) {
			in.nstack = snative_stack(s, tp, ev, nt, &segs, frames, in.nframes, whole,
						  whole_ips, WHOLE_FRAMES);
			in.stack = in.nstack > 0 ? whole : NULL;
			in.stack_ips = in.nstack > 0 ? whole_ips : NULL;
		}
	}
	profile__add(p, &in);
}

/* A stack of counted samples, sent once: its code objects are read now,
 * while they are still there (its counts come later). */
static void on_stack(struct session *s, const struct agg_stack_record *r, size_t size)
{
	struct tproc *tp = hmap__get(s->procs, &(int){ (int)r->hdr.tgid });
	uint32_t i;

	if (size < STACK_HDR_SIZE || r->nframes > MAX_FRAMES ||
	    size < STACK_HDR_SIZE + r->nframes * sizeof(struct py_frame)) {
		s->bad_records++;
		return;
	}
	if (!tp || tp->state != TP_PYTHON || tp->exited)
		return;
	for (i = 0; i < r->nframes; i++) {
		if (r->frames[i].code && frame_identified(&r->frames[i]) &&
		    !session_code_for(s, tp, r->frames[i].code,
				      pycode_tag(r->frames[i].tag, r->frames[i].ident)))
			s->fast_until_ns = mono_ns() + FAST_WINDOW_NS;
	}
	/* In run mode, stacks are those of traced CUDA calls. */
	if (s->gpu_library)
		sgpu_stack(s, r);
}

/* The counts due, then the samples held back from the last drain. */
static void drain_counts(struct session *s, int which)
{
	void *held[MAX_HELD];
	int n = s->nheld, i;

	memcpy(held, s->held, n * sizeof(held[0]));
	s->nheld = 0;
	s->bpf.drain_counts(s->bpf.ctx, which, 0);
	for (i = 0; i < n; i++) {
		struct held_record *h = held[i];

		on_sample(s, (const void *)h->data, h->size, true);
		free(h);
	}
}

/* The handlers of the records, with one signature for the table below. */
static void rec_sample(struct session *s, const void *data, size_t size)
{
	on_sample(s, data, size, false);
}

static void rec_stack(struct session *s, const void *data, size_t size)
{
	on_stack(s, data, size);
}

static void rec_fork(struct session *s, const void *data, size_t size)
{
	handle_fork(s, data);
}

static void rec_exec(struct session *s, const void *data, size_t size)
{
	handle_exec(s, data);
}

static void rec_exit(struct session *s, const void *data, size_t size)
{
	handle_exit(s, data);
}

static void rec_sampler(struct session *s, const void *data, size_t size)
{
	on_sampler(s, data);
}

static struct tproc *proc_of(struct session *s, const void *data)
{
	const struct record_hdr *h = data;

	return hmap__get(s->procs, &(int){ (int)h->tgid });
}

static void rec_gpu(struct session *s, const void *data, size_t size)
{
	sgpu_record(s, proc_of(s, data), data);
}

static void rec_gpu_call(struct session *s, const void *data, size_t size)
{
	sgpu_call(s, proc_of(s, data), data);
}

static void rec_gpu_name(struct session *s, const void *data, size_t size)
{
	sgpu_name(s, proc_of(s, data), data);
}

/* A code object copied by the probe on its deallocator (it was named by a
 * walk lately): cached, so that samples read after it was freed still name
 * it. */
static void rec_code(struct session *s, const void *data, size_t size)
{
	const struct code_snap_record *r = data;
	struct tproc *tp = proc_of(s, data);
	int err = -ESRCH;

	if (tp && tp->pp.off)
		err = pycode_cache__put_snap(s->codes, &tp->pp, tp->space, r, size);
	if (err) {
		s->code_copies_unused++;
		pr_debug("process %u: the copy of code object 0x%llx as it was freed is of no use: "
			 "%s\n",
			 r->hdr.tgid, (unsigned long long)r->code, strerror(-err));
	}
}

/* Each record type BPF sends (bpf/abi.h): the size a record of it has at
 * least (samples and stacks then check their frames against their size)
 * and its handler.  A record shorter, or of a type not here, is counted in
 * bad_records. */
static const struct {
	size_t min_size;
	void (*handle)(struct session *s, const void *data, size_t size);
} records[] = {
	[EV_SAMPLE] = { SAMPLE_HDR_SIZE, rec_sample },
	[EV_EXEC] = { sizeof(struct proc_record), rec_exec },
	[EV_FORK] = { sizeof(struct proc_record), rec_fork },
	[EV_EXIT] = { sizeof(struct proc_record), rec_exit },
	[EV_SAMPLER] = { sizeof(struct sampler_record), rec_sampler },
	[EV_STACK] = { STACK_HDR_SIZE, rec_stack },
	[EV_GPU] = { sizeof(struct gpu_record), rec_gpu },
	[EV_GPU_CALL] = { sizeof(struct gpu_call_record), rec_gpu_call },
	[EV_GPU_NAME] = { sizeof(struct gpu_name_record), rec_gpu_name },
	[EV_CODE] = { offsetof(struct code_snap_record, table), rec_code },
	[EV_NATIVE] = { SAMPLE_HDR_SIZE, rec_sample },
};

int session__handle(void *ctx, const void *data, size_t size)
{
	struct session *s = ctx;
	struct record_hdr h;

	if (size < sizeof(h.type)) /* not even a record */
		return 0;
	s->records++;
	if (size < sizeof(h)) {
		s->bad_records++;
		return 0;
	}
	memcpy(&h, data, sizeof(h));
	if (h.type >= sizeof(records) / sizeof(records[0]) || !records[h.type].handle ||
	    size < records[h.type].min_size) {
		s->bad_records++;
		return 0;
	}
	/* A process event of a PID whose end waits (its PID given again): the
	 * end first. */
	if (s->npending_ends && (h.type == EV_FORK || h.type == EV_EXEC || h.type == EV_EXIT)) {
		struct tproc *tp = hmap__get(s->procs, &(int){ (int)h.tgid });

		if (tp && tp->end_pending)
			finish_end(s, tp, &tp->end_rec);
	}
	records[h.type].handle(s, data, size);
	return 0;
}

bool session__root_exited(const struct session *s)
{
	return s->root_exited;
}

int session__interpreters(const struct session *s)
{
	return s->interpreters;
}

void session__explain_root(const struct session *s, char *buf, size_t n)
{
	struct tproc *tp = hmap__get(s->procs, &s->root_pid);

	if (tp && tp->why[0])
		snprintf(buf, n, "%s", tp->why);
	else
		snprintf(buf, n, "the program ran no Python interpreter this profiler recognised");
}

const struct py_proc *session__root_python(const struct session *s)
{
	struct tproc *tp = hmap__get(s->procs, &s->root_pid);

	return tp && tp->state == TP_PYTHON ? &tp->pp : NULL;
}

/* The sampler's state of a process: final if it exited normally, else read
 * now if it is still running.  false when neither is possible. */
static bool sampler_state(struct tproc *tp, struct scalene_bpf_sampler_state *st)
{
	if (!tp->sampler_loaded)
		return false;
	if (!tp->sampler_final && !tp->exited && tp->sampler_addr &&
	    !mem_read(tp->pid, tp->sampler_addr, st, sizeof(*st)) &&
	    st->magic == SCALENE_BPF_SAMPLER_MAGIC)
		return true;
	if (tp->sampler.magic != SCALENE_BPF_SAMPLER_MAGIC)
		return false;
	*st = tp->sampler;
	return true;
}

/* Adds one process to a summary. */
static void summarise_proc(struct tproc *tp, struct mem_summary *m)
{
	struct scalene_bpf_sampler_state st;

	if (tp->state != TP_PYTHON)
		return;
	m->python_procs++;
	if (!tp->sampler_loaded) {
		m->not_loaded++;
		m->not_loaded_pid = tp->pid;
		return;
	}
	m->with_sampler++;
	if (!sampler_state(tp, &st))
		return;
	m->with_state++;
	m->sample_bytes = st.sample_bytes;
	m->copy_sample_bytes = st.copy_sample_bytes;
	m->alloc += st.alloc_bytes;
	m->python += st.python_bytes;
	m->copy += st.copy_bytes;
	m->sampled += st.sampled_bytes;
	m->sampled_python += st.sampled_python_bytes;
	m->sampled_copy += st.copy_sampled_bytes;
	m->overflows += st.table_overflows;
	m->stale += st.table_stale;
	m->restores += st.realloc_restores;
	if (st.hooks & SBS_H_FOREIGN_ALLOC)
		m->foreign++;
	/* Loaded into a running interpreter (session/meminject.h), the sampler
	 * sees no native allocation by design, and the attach facts say so. */
	if (!(st.python & SBS_PY_LATE) &&
	    (st.hooks & SBS_H_MALLOC_SHADOWED ||
	     (tp->sampler_final && !(st.hooks & SBS_H_MALLOC_SEEN)))) {
		m->shadowed++;
		m->shadowed_pid = tp->pid;
	}
	if (!(st.python & (SBS_PY_CTOR | SBS_PY_REWRAPPED)) &&
	    !(st.attach_state & SBS_AT_ATTACHED)) {
		m->not_wrapped++;
		m->not_wrapped_pid = tp->pid;
	}
}

/* The live processes' summaries added to those of processes retired. */
static void summarise_memory(struct session *s, struct mem_summary *m)
{
	size_t it = 0;
	void *v;

	*m = s->retired;
	while (hmap__next(s->procs, &it, NULL, &v))
		summarise_proc(v, m);
}

/*
 * Past MAX_EXITED_PROCS exited processes (a service forking all day), their
 * entries go: what the memory summary needs of them is kept in s->retired,
 * the rest (symbols, recognition state) is not needed once they are gone.
 */
static void retire_exited(struct session *s)
{
	size_t it = 0;
	const void *k;
	void *v;

	if (++s->nexited <= MAX_EXITED_PROCS)
		return;
	while (hmap__next(s->procs, &it, &k, &v)) {
		struct tproc *tp = v;

		if (!tp->exited || tp->pid == s->root_pid)
			continue;
		summarise_proc(tp, &s->retired);
		drop_symbols(s, tp);
		sasync_stop(tp);
		/* Deleting leaves a tombstone: the iteration goes on. */
		hmap__del(s->procs, k);
		free(tp);
		s->procs_retired++;
	}
	s->nexited = 0;
}

char *session__memory_warnings(struct session *s)
{
	struct mem_summary m;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!s->memory)
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	summarise_memory(s, &m);
	if (m.not_loaded) {
		fprintf(f,
			"memory: the allocation sampler was not loaded in %d of %d Python "
			"processes (e.g. %d: LD_PRELOAD cleared or the library not readable by "
			"the program's user); their memory is not in the profile\n",
			m.not_loaded, m.python_procs, m.not_loaded_pid);
	}
	if (m.shadowed) {
		fprintf(f,
			"memory: in %d process(es) (e.g. %d) another malloc comes before the "
			"sampler's (an allocator linked in or preloaded first): native "
			"allocations are not measured, Python ones and copies are\n",
			m.shadowed, m.shadowed_pid);
	}
	if (m.not_wrapped) {
		fprintf(f,
			"memory: Python's allocator could not be wrapped in %d process(es) "
			"(e.g. %d): Python objects are counted as native allocations\n",
			m.not_wrapped, m.not_wrapped_pid);
	}
	if (m.overflows) {
		fprintf(f,
			"memory: %llu sampled blocks were not followed to their free (the "
			"sampler's table was full): footprint and leaks may read high\n",
			(unsigned long long)m.overflows);
	}
	fclose(f);
	if (buf && !*buf) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void memory_facts(struct session *s, const struct profile *p, const uint64_t *stats,
			 struct facts_memory *o)
{
	const struct profile_memory *pm = profile__memory(p);
	struct mem_summary m;

	summarise_memory(s, &m);
	o->python_processes = m.python_procs;
	o->sampler_loaded = m.with_sampler;
	o->sampler_not_loaded = m.not_loaded;
	o->sample_bytes = m.sample_bytes;
	o->copy_sample_bytes = m.copy_sample_bytes;
	o->probe_links = s->bpf.probe_links;
	o->counted_processes = m.with_state;
	o->alloc_bytes = m.alloc;
	o->python_bytes = m.python;
	o->copy_bytes = m.copy;
	o->sampled_alloc_bytes = m.sampled;
	o->sampled_python_bytes = m.sampled_python;
	o->sampled_copy_bytes = m.sampled_copy;
	o->profiled_alloc_bytes = pm->malloc_bytes;
	o->profiled_python_bytes = pm->python_bytes;
	o->profiled_net_growth_bytes = pm->net_bytes;
	o->profiled_copy_bytes = pm->copy_bytes;
	o->profiled_native_threads_bytes = pm->native_thread_bytes;
	o->profiled_unattributed_bytes = pm->unattributed_bytes;
	o->profiled_not_python_bytes = pm->not_python_bytes;
	o->records = s->mem_records;
	o->records_lost = stats[STAT_MEM_LOST];
	o->frees_of_unknown_blocks = pm->frees_unknown;
	o->untracked_blocks = pm->untracked + pm->blocks_dropped;
	o->table_overflows = m.overflows;
	o->stale_frees = m.stale;
	o->foreign_allocator_processes = m.foreign;
	o->native_allocations_unseen_processes = m.shadowed;
	o->python_allocator_unwrapped_processes = m.not_wrapped;
}

static int threads_facts(const struct profile *p, struct facts *f)
{
	int i, n = profile__nthreads(p);

	f->threads = calloc(n ? n : 1, sizeof(*f->threads));
	if (!f->threads)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct thread_stats *t = profile__thread(p, i);
		struct facts_thread *o = &f->threads[f->nthreads];

		/* Nothing since the counts restarted (--continuous). */
		if (!t->samples && !t->cpu_ns && !t->blocked_ns && !t->malloc_bytes)
			continue;
		f->nthreads++;
		o->pid = t->tgid;
		o->tid = t->tid;
		o->name = t->name;
		o->main_thread = t->main_thread;
		o->samples = t->samples;
		o->cpu_ns = t->cpu_ns;
		o->blocked_ns = t->blocked_ns;
		o->gil_ns = t->gil_ns;
	}
	return 0;
}

/* Threads whose samples found no state in BPF have their blocked time left
 * out: said when more than 1 % of the samples are theirs (where the table of
 * threads is bounded, it may be full). */
static int thread_state_warning(struct facts *f)
{
	uint64_t lost = f->bpf.stats[STAT_TASK_STORAGE_FAIL], n = f->bpf.stats[STAT_SAMPLES];
	char msg[320];

	if (!n || lost * 100 <= n)
		return 0;
	snprintf(msg, sizeof(msg),
		 "%llu of %llu CPU samples found no thread state in BPF "
		 "(scalene_bpf.bpf.thread_state_unavailable): those threads' blocked time is not "
		 "counted%s",
		 (unsigned long long)lost, (unsigned long long)n,
		 f->has_kernel && !strcmp(f->kernel.build, "bounded")
			 ? " (on this kernel, 16384 threads are followed at once at most)"
			 : "");
	return facts__warn(f, msg);
}

/* An interpreter laid out otherwise than its table (a patch release that
 * moved fields): read by what it publishes of itself, which the reader is
 * told, with what that does not cover. */
static int layout_warnings(struct facts *f)
{
	char msg[640];
	int i, err = 0;

	for (i = 0; i < f->ninterpreters && !err; i++) {
		const struct facts_interpreter *in = &f->interpreters[i];

		if (!in->layout_from_interpreter[0])
			continue;
		snprintf(msg, sizeof(msg),
			 "Python %s (%s) lays out %s: not where the layout table this profiler "
			 "was built with has them; those were taken from its _Py_DebugOffsets, and "
			 "the fields it does not publish are the table's (please report it with "
			 "`python -VV`)",
			 in->version, in->path, in->layout_from_interpreter);
		err = facts__warn(f, msg);
	}
	return err;
}

/* The facts of profile p: the session's, or (tp) one process's. */
static int facts_of(struct session *s, const struct profile *p, const struct tproc *tp,
		    struct facts *f)
{
	struct facts_bpf *b = &f->bpf;
	char *warn;
	int i, err;

	b->have_stats = !s->bpf.stats(s->bpf.ctx, b->stats);
	/* System-wide, each process's own (the host has no profile). */
	if (s->async_waits && (tp || !s->host)) {
		f->has_async = true;
		sasync_facts(s, tp, &f->async);
	}
	if (s->gpu_library || s->gpu_off) {
		f->has_gpu = true;
		snprintf(f->gpu.library, sizeof(f->gpu.library), "%s",
			 s->gpu_library ? s->gpu_library : "");
		snprintf(f->gpu.off, sizeof(f->gpu.off), "%s", s->gpu_off ? s->gpu_off : "");
		sgpu_facts(s, &f->gpu);
	}
	if (s->native) {
		f->has_native = true;
		snative_facts(s, &f->native);
	}
	f->rate_hz = s->rate_hz;
	f->period_ns = s->period_ns;
	f->total_sampled_ns = profile__total_ns(p);
	f->not_python_ns = profile__not_python_ns(p);
	f->probe_check = s->bpf.probe_check;
	f->gil_wait_ns = profile__gil_ns(p);
	for (i = 0; i < UNATTR_MAX; i++)
		f->unattributed_ns[i] = profile__unattributed_ns(p, i);
	f->native_threads_ns = profile__native_threads_ns(p);
	if (tp) {
		/* System-wide, BPF counts for the whole host: this process's
		 * CPU samples are its own count. */
		b->host = true;
		b->process_samples = tp->cpu_samples;
	}
	b->have_runtime = !s->bpf.prog_runtime(s->bpf.ctx, &b->run_ns, &b->run_cnt);
	b->records = s->records;
	b->bad_records = s->bad_records;
	b->offcpu_hook = s->bpf.offcpu_hook;
	if (s->bpf.kernel_report) {
		s->bpf.kernel_report(s->bpf.ctx, &f->kernel);
		f->has_kernel = true;
	}
	b->frames_unreadable = s->frames_unreadable;
	b->frames_from_copies = s->frames_from_copies;
	b->frames_unread_in_bpf = s->frames_unread_in_bpf;
	b->frames_unread_before_probe = s->frames_unread_before_probe;
	b->code_copies_unused = s->code_copies_unused;
	b->code_cache_evictions = pycode_cache__evictions(s->codes);
	b->code_probes_placed = s->code_probes_placed;
	b->code_probes_before_exec = s->code_probes_before_exec;
	b->code_probes_failed = s->code_probes_failed;
	b->code_probe_why = s->code_probe_why;
	b->stacks_dropped = profile__stacks_dropped(p);
	b->truncated_stacks = profile__truncated(p);
	if (s->memory) {
		f->has_memory = true;
		memory_facts(s, p, b->stats, &f->memory);
	}
	err = threads_facts(p, f);
	if (err)
		return err;
	f->processes_retired = s->procs_retired;
	f->threads_folded = profile__threads_folded(p);
	if (tp) {
		interpreter_facts(tp, &f->interpreters[0]);
		f->ninterpreters = 1;
	} else {
		memcpy(f->interpreters, s->interp_list, s->ninterp_list * sizeof(*s->interp_list));
		f->ninterpreters = s->ninterp_list;
	}
	/* What the reader should know before trusting the profile: the views
	 * show these. */
	warn = profile__outside_warning(p);
	err = warn ? facts__warn(f, warn) : 0;
	free(warn);
	if (!err)
		err = thread_state_warning(f);
	if (!err)
		err = layout_warnings(f);
	return err;
}

int session__facts(struct session *s, struct facts *f)
{
	return facts_of(s, s->profile, NULL, f);
}

uint64_t session__execs_known_not_python(const struct session *s)
{
	return s->exec_cache_hits;
}

int session__bpf_stats(const struct session *s, uint64_t *out)
{
	return s->bpf.stats(s->bpf.ctx, out);
}

bool session__counts_stats(const struct session *s, struct counts_stats *out)
{
	return s->bpf.counts_stats && s->bpf.counts_stats(s->bpf.ctx, out);
}

void *session__proc_source_ctx(struct session *s, int pid)
{
	struct tproc *tp = hmap__get(s->procs, &pid);

	return tp && tp->profile ? tp : NULL;
}

int session__alloc_hits(struct session *s, int pid, uint64_t *hits)
{
	if (!s->bpf.alloc_hits)
		return -ENOTSUP;
	return s->bpf.alloc_hits(s->bpf.ctx, pid, hits);
}

int session__proc_facts(struct session *s, int pid, struct facts *f)
{
	struct tproc *tp = hmap__get(s->procs, &pid);

	if (!tp || !tp->profile)
		return -ENOENT;
	return facts_of(s, tp->profile, tp, f);
}

void session__drain_counts(struct session *s)
{
	if (s->host && s->bpf.drain_counts) {
		drain_counts(s, SESSION_COUNTS_DUE);
		/* An interval ends: those that ended in it are in it. */
		end_due(s, true);
		s->next_drain_ns = mono_ns() + s->drain_ns;
	}
}

void session__end_all(struct session *s)
{
	uint64_t now = mono_ns();
	size_t it = 0;
	void *v;

	if (!s->host)
		return;
	/* Every count still in BPF, then what was held back: the run ends
	 * here (what is counted after, as the profiles are written, is not
	 * theirs). */
	if (s->bpf.drain_counts) {
		drain_counts(s, SESSION_COUNTS_ALL);
		drain_counts(s, SESSION_COUNTS_ALL);
	}
	while (hmap__next(s->procs, &it, NULL, &v)) {
		struct tproc *tp = v;

		tp->drained = true;
		if (tp->end_pending)
			finish_end(s, tp, &tp->end_rec);
		else
			end_image(s, tp, END_RUNNING, 0, 0, now, NULL);
	}
}

/* A source file's text, from fd (closed here); NULL if it is not a readable
 * regular file of reasonable size. */
static char *read_source_fd(int fd, size_t *len, double *mtime)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_SOURCE_BYTES)
		goto out;
	buf = malloc(st.st_size + 1);
	if (!buf)
		goto out;
	n = read(fd, buf, st.st_size);
	if (n < 0) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[n] = '\0';
	*len = n;
	*mtime = st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
out:
	close(fd);
	return buf;
}

char *session__read_source(void *ctx, const char *filename, size_t *len, double *mtime)
{
	struct session *s = ctx;
	char path[PATH_MAX + 64];
	struct fs_creds saved;
	int fd, named;

	/* Through the root process's view of the file system (its mount
	 * namespace, its working directory for relative names). */
	if (filename[0] == '/')
		named = procmaps__file_in_root(path, sizeof(path), s->root_pid, filename);
	else
		named = snprintf(path, sizeof(path), "/proc/%d/cwd/%s", s->root_pid, filename) >=
			(int)sizeof(path);
	/* The file name comes from the program's memory: open it as the user
	 * who asked, so that a profile never shows a file they cannot read. */
	creds_fs_user(s->creds, &saved);
	fd = named ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(filename, O_RDONLY | O_CLOEXEC);
	creds_fs_self(&saved);
	return read_source_fd(fd, len, mtime);
}

char *session__read_proc_source(void *ctx, const char *filename, size_t *len, double *mtime)
{
	struct tproc *tp = ctx;
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	struct fs_creds saved;
	int fd = -1;

	/* Through the directories held open: the process may be gone, and in
	 * another mount namespace (a container), whose absolute names and
	 * links resolve inside its own root. */
	creds_fs_user(tp->session->creds, &saved);
	if (filename[0] == '/' && tp->root_fd >= 0)
		fd = syscall(SYS_openat2, tp->root_fd, filename, &how, sizeof(how));
	else if (filename[0] != '/' && tp->cwd_fd >= 0)
		fd = openat(tp->cwd_fd, filename, O_RDONLY | O_CLOEXEC);
	creds_fs_self(&saved);
	return read_source_fd(fd, len, mtime);
}
