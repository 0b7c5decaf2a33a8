/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/session.c without BPF: ring-buffer records are made here and handed to
 * session__handle, the BPF side is a stand-in that records what the session
 * asks of it, and the outcome is read through the session's facts and the
 * profile it fills.
 *
 * The root process is this very process, attached as if it were a 3.12
 * interpreter: its code objects are built by hand in our own memory with the
 * generated 3.12 layout and read back through process_vm_readv, as a profiled
 * interpreter's would be.  Processes that must be gone (children whose memory
 * cannot be read, exited ones) have PIDs above the kernel's limit, which no
 * process can have.  No root needed.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/types.h>

#include "testlib.h"
#include "abi.h"
#include "base/clock.h"
#include "cpython.h"
#include "model/facts.h"
#include "gpu/gpu.h"
#include "base/memread.h"
#include "report/output.h"
#include "model/profile.h"
#include "symbolize/pycode.h"
#include "target/python.h"
#include "sampler/sampler.h"
#include "session/session.h"

/* PID_MAX_LIMIT is 4194304: no process has a PID above it. */
#define GONE_PID 5000000
#define MS 1000000ULL
/* Where the fake interpreter's code is: a user-mode sample there is Python. */
#define PY_TEXT_START 0x10000ULL
#define PY_TEXT_END 0x20000ULL

/* ------------------------------------------------- the BPF stand-in */

struct fake_bpf {
	int tracked[8], ntracked;
	int untracked[8], nuntracked;
	int seeded;
	int python_pid, nset_python;
	struct py_walk_cfg cfg;
	int stats_err;
	uint64_t stats[STAT_MAX];
	uint64_t run_ns, run_cnt;
	/* Counted samples: the drains asked for, and what the next one of
	 * SESSION_COUNTS_DUE hands to the session. */
	int drains_due, drains_all, drains_image;
	struct session *s;
	const struct sample_event *next_count;
};

static int fake_track(void *ctx, int tgid)
{
	struct fake_bpf *b = ctx;

	if (b->ntracked < 8)
		b->tracked[b->ntracked++] = tgid;
	return 0;
}

static int fake_untrack(void *ctx, int tgid)
{
	struct fake_bpf *b = ctx;

	if (b->nuntracked < 8)
		b->untracked[b->nuntracked] = tgid;
	b->nuntracked++;
	return 0;
}

static int fake_seed_threads(void *ctx, int tgid)
{
	struct fake_bpf *b = ctx;

	b->seeded = tgid;
	return 1;
}

static int fake_set_python(void *ctx, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
			   uint64_t gil_hi)
{
	struct fake_bpf *b = ctx;

	b->python_pid = tgid;
	b->cfg = *cfg;
	b->nset_python++;
	return 0;
}

static int fake_stats(void *ctx, uint64_t *out)
{
	struct fake_bpf *b = ctx;

	if (b->stats_err)
		return b->stats_err;
	memcpy(out, b->stats, sizeof(b->stats));
	return 0;
}

static int fake_prog_runtime(void *ctx, uint64_t *run_ns, uint64_t *run_cnt)
{
	struct fake_bpf *b = ctx;

	*run_ns = b->run_ns;
	*run_cnt = b->run_cnt;
	return 0;
}

static int fake_drain_counts(void *ctx, int tgid, uint32_t gen)
{
	struct fake_bpf *b = ctx;
	const struct sample_event *e = b->next_count;

	(void)gen;
	if (tgid == SESSION_COUNTS_DUE)
		b->drains_due++;
	else if (tgid == SESSION_COUNTS_ALL)
		b->drains_all++;
	else
		b->drains_image++;
	if (tgid != SESSION_COUNTS_DUE || !e)
		return 0;
	b->next_count = NULL;
	session__handle(b->s, e, SAMPLE_HDR_SIZE + e->nframes * sizeof(struct py_frame));
	return 1;
}

/* ------------------------------------------- code objects of our own */

enum {
	CODE_MAIN,
	CODE_HELPER,
	CODE_OTHER,
	CODE_CHILD_ONLY,
	CODE_REUSED,
	CODE_DEEP,
	NCODES
};

struct fake_code {
	uint64_t mem[64];   /* the code object; fields at the table's offsets */
	uint64_t table[16]; /* a bytes object holding the line table */
	uint64_t str[2][16];
	int32_t first;
};

static struct fake_code codes[NCODES];

/* A compact ASCII str object in buf. */
static uint64_t put_str(uint64_t *buf, const char *text)
{
	const struct py_offsets *o = &py_offsets_3_12;
	unsigned char *b = (unsigned char *)buf;
	uint64_t len = strlen(text);
	uint32_t state = (1u << __builtin_ctz(o->unicode_kind_mask)) | o->unicode_compact_mask |
			 o->unicode_ascii_mask;

	memcpy(b + o->unicode_length, &len, sizeof(len));
	memcpy(b + o->unicode_state, &state, sizeof(state));
	memcpy(b + o->unicode_ascii_size, text, len + 1);
	return (uint64_t)(uintptr_t)b;
}

/* A 3.12 code object whose line table holds one entry: instructions at byte
 * offsets 0 to 5 are on line first + 2. */
static void make_code(int i, const char *file, const char *qual, int32_t first)
{
	const struct py_offsets *o = &py_offsets_3_12;
	struct fake_code *fc = &codes[i];
	unsigned char *c = (unsigned char *)fc->mem, *t = (unsigned char *)fc->table;
	uint64_t f = put_str(fc->str[0], file), q = put_str(fc->str[1], qual);
	uint64_t tab = (uint64_t)(uintptr_t)t;
	/* 1 (entry) | code 13 (no columns) | 3 units - 1; line delta +2 as a
	 * signed varint. */
	const unsigned char loc[] = { 0x80 | (13 << 3) | 2, 4 };
	int64_t size = sizeof(loc);

	fc->first = first;
	memcpy(c + o->code_firstlineno, &first, sizeof(first));
	memcpy(c + o->code_filename, &f, sizeof(f));
	memcpy(c + o->code_qualname, &q, sizeof(q));
	memcpy(c + o->code_name, &q, sizeof(q));
	memcpy(c + o->code_linetable, &tab, sizeof(tab));
	memcpy(t + o->varobject_size, &size, sizeof(size));
	memcpy(t + o->bytes_sval, loc, sizeof(loc));
}

static uint64_t code_addr(int i)
{
	return (uint64_t)(uintptr_t)codes[i].mem;
}

/* The frame a sample would carry for code object i: its address, and the
 * first line and pointer identity the walker read at sample time. */
static struct py_frame frame_of(int i)
{
	const struct py_offsets *o = &py_offsets_3_12;
	const unsigned char *c = (const unsigned char *)codes[i].mem;
	struct py_frame f = { .code = code_addr(i), .tag = (uint32_t)codes[i].first };
	uint64_t fn, n;

	memcpy(&fn, c + o->code_filename, sizeof(fn));
	memcpy(&n, c + o->code_name, sizeof(n));
	f.ident = code_ident(fn, n);
	return f;
}

static void make_codes(void)
{
	make_code(CODE_MAIN, "/app/main.py", "main", 40);
	make_code(CODE_HELPER, "/app/util.py", "Klass.helper", 7);
	make_code(CODE_OTHER, "/app/other.py", "other", 100);
	make_code(CODE_CHILD_ONLY, "/app/child.py", "in_child", 20);
	make_code(CODE_REUSED, "/app/again.py", "again", 60);
	make_code(CODE_DEEP, "/app/deep.py", "recurse", 3);
}

/* ------------------------------------------------------ the fixture */

struct fixture {
	struct profile *p;
	struct session *s;
	struct fake_bpf bpf;
	struct py_proc pp;
};

/* The GPU library the next setup() says was given to the program. */
static const char *setup_gpu_library;

/* A session whose root is this process, attached as a 3.12 interpreter. */
static bool setup(struct fixture *f, bool memory)
{
	struct profile_filter filter = { .profile_all = true };
	struct session_opts so = {
		.rate_hz = 1000, .ncpus = 1, .memory = memory, .gpu_library = setup_gpu_library
	};
	struct session_bpf b = {
		.ctx = &f->bpf,
		.track = fake_track,
		.untrack = fake_untrack,
		.seed_threads = fake_seed_threads,
		.set_python = fake_set_python,
		.stats = fake_stats,
		.prog_runtime = fake_prog_runtime,
	};

	memset(f, 0, sizeof(*f));
	f->p = profile__new(&filter);
	so.profile = f->p;
	f->s = f->p ? session__new(&so) : NULL;
	CHECK(f->s != NULL);
	if (!f->s) {
		profile__free(f->p);
		return false;
	}
	session__set_bpf(f->s, &b);
	f->pp.pid = getpid();
	f->pp.version_hex = 0x030c04f0;
	f->pp.minor = 12;
	f->pp.off = &py_offsets_3_12;
	f->pp.ntext = 1;
	f->pp.text[0][0] = PY_TEXT_START;
	f->pp.text[0][1] = PY_TEXT_END;
	f->pp.cfg.minor = 12;
	f->pp.cfg.tss_key_addr = 0x5eed;
	snprintf(f->pp.path, sizeof(f->pp.path), "/opt/py/lib/libpython3.12.so.1.0");
	CHECK_EQ_INT(session__add_root(f->s, getpid(), &f->pp), 0);
	return true;
}

static void teardown(struct fixture *f)
{
	session__free(f->s);
	profile__free(f->p);
}

/* Records. */
static struct sample_event ev;

/* A user-mode sample in the interpreter's code: cpu_ns of Python time. */
static void sample_init(int tgid, int tid, uint64_t cpu_ns, const char *comm)
{
	memset(&ev, 0, sizeof(ev));
	ev.hdr.type = EV_SAMPLE;
	ev.hdr.tgid = tgid;
	ev.tid = tid;
	ev.mode = MODE_USER;
	ev.status = WALK_OK;
	ev.ts = mono_ns();
	ev.cpu_ns = cpu_ns;
	ev.user_ip = PY_TEXT_START + 0x100;
	ev.syscall_nr = -1;
	snprintf((char *)ev.comm, sizeof(ev.comm), "%s", comm);
}

static void push(int code)
{
	ev.frames[ev.nframes++] = frame_of(code);
}

static size_t sample_size(void)
{
	return SAMPLE_HDR_SIZE + ev.nframes * sizeof(struct py_frame);
}

static void send_sample(struct fixture *f)
{
	CHECK_EQ_INT(session__handle(f->s, &ev, sample_size()), 0);
}

static void send_proc(struct fixture *f, uint32_t type, int tgid, int ppid, uint64_t ts)
{
	struct proc_record r = { .hdr.type = type, .hdr.tgid = tgid, .ppid = ppid, .ts = ts };

	snprintf((char *)r.comm, sizeof(r.comm), "proc%d", tgid);
	CHECK_EQ_INT(session__handle(f->s, &r, sizeof(r)), 0);
}

/* -------------------------------------------------- reading results */

/* The session's facts as the profile writes them (of the process pid, or
 * of the session when pid is 0); NULL when there are none. */
static struct json_object *facts_json(struct session *s, int pid, const struct profile *p)
{
	struct facts *f = facts__new();
	struct json_object *o = NULL;

	if (f && !(pid ? session__proc_facts(s, pid, f) : session__facts(s, f)))
		o = output_facts_json(f, p);
	facts__free(f);
	return o;
}

/* The value at a dotted path of the facts ("bpf.records"), or NULL. */
static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL, *key;

	snprintf(buf, sizeof(buf), "%s", path);
	for (key = strtok_r(buf, ".", &save); key && o; key = strtok_r(NULL, ".", &save)) {
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
	}
	return o;
}

static int64_t fact_int(struct fixture *f, const char *path)
{
	struct json_object *o = facts_json(f->s, 0, f->p), *v = at(o, path);
	int64_t r = v ? json_object_get_int64(v) : -1;

	if (!v)
		fprintf(stderr, "  no %s in the facts\n", path);
	json_object_put(o);
	return r;
}

static double fact_dbl(struct fixture *f, const char *path)
{
	struct json_object *o = facts_json(f->s, 0, f->p), *v = at(o, path);
	double r = v ? json_object_get_double(v) : -1;

	if (!v)
		fprintf(stderr, "  no %s in the facts\n", path);
	json_object_put(o);
	return r;
}

static bool near(double a, double b)
{
	return a > b - 1e-9 && a < b + 1e-9;
}

/* The one stack whose innermost frame is qualname, or NULL. */
static const struct stack_stats *stack_ending(struct profile *p, const char *qualname)
{
	int i;

	for (i = 0; i < profile__nstacks(p); i++) {
		const struct stack_stats *st = profile__stack(p, i);

		if (st->nframes && !strcmp(st->frames[st->nframes - 1].qualname, qualname))
			return st;
	}
	return NULL;
}

static const struct line_stats *line_of(struct profile *p, const char *path, int line)
{
	int i;

	for (i = 0; i < profile__nfiles(p); i++) {
		const struct file_stats *fs = profile__file(p, i);

		if (!strcmp(fs->path, path))
			return line < fs->nlines ? fs->lines[line] : NULL;
	}
	return NULL;
}

static const struct thread_stats *thread_of(struct profile *p, int tgid, int tid)
{
	int i;

	for (i = 0; i < profile__nthreads(p); i++) {
		const struct thread_stats *t = profile__thread(p, i);

		if (t->tgid == tgid && t->tid == tid)
			return t;
	}
	return NULL;
}

/* ---------------------------------------------------------- tests */

static void test_attach_root(void)
{
	struct fixture f;
	struct json_object *facts, *interp;

	if (!setup(&f, false))
		return;
	/* What the session asked of the BPF side. */
	CHECK_EQ_INT(f.bpf.ntracked, 1);
	CHECK_EQ_INT(f.bpf.tracked[0], getpid());
	CHECK_EQ_INT(f.bpf.seeded, getpid());
	CHECK_EQ_INT(f.bpf.nset_python, 1);
	CHECK_EQ_INT(f.bpf.python_pid, getpid());
	CHECK_EQ_INT(f.bpf.cfg.tss_key_addr, 0x5eed);
	CHECK(session__root_python(f.s) != NULL);
	CHECK_EQ_INT(session__interpreters(f.s), 1);
	CHECK(!session__root_exited(f.s));
	facts = facts_json(f.s, 0, f.p);
	interp = json_object_array_get_idx(at(facts, "interpreters"), 0);
	CHECK(interp != NULL);
	CHECK_EQ_INT(json_object_get_int(at(interp, "pid")), getpid());
	CHECK_EQ_STR(json_object_get_string(at(interp, "version")), "3.12.4");
	json_object_put(facts);
	/* The BPF counters reach the facts. */
	f.bpf.stats[STAT_SAMPLES] = 4;
	f.bpf.stats[STAT_SAMPLE_NS] = 400;
	f.bpf.stats[STAT_RINGBUF_FULL] = 2;
	f.bpf.stats[STAT_IDLE_NS] = 3000000000ULL;
	f.bpf.run_ns = 900;
	f.bpf.run_cnt = 3;
	CHECK_EQ_INT(fact_int(&f, "bpf.samples"), 4);
	CHECK_EQ_INT(fact_int(&f, "bpf.lost_ringbuf_full"), 2);
	CHECK(near(fact_dbl(&f, "bpf.ns_per_sample"), 100));
	CHECK(near(fact_dbl(&f, "bpf.sampler_ns_per_run"), 300));
	CHECK(near(fact_dbl(&f, "uncounted_blocked_s"), 3));
	/* Counters that cannot be read are left out, not written as 0. */
	f.bpf.stats_err = -EPERM;
	facts = facts_json(f.s, 0, f.p);
	CHECK(at(facts, "bpf.samples") == NULL);
	CHECK(at(facts, "bpf.records") != NULL);
	json_object_put(facts);
	teardown(&f);
}

/* A sample of the root: frames resolved from its memory, attributed to the
 * innermost frame, its thread named by the record. */
static void test_sample_resolved(void)
{
	const struct stack_stats *st;
	const struct line_stats *ls;
	const struct thread_stats *t;
	struct fixture f;

	if (!setup(&f, false))
		return;
	sample_init(getpid(), getpid(), 2 * MS, "python3");
	push(CODE_HELPER);
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 1);
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.002));
	CHECK_EQ_INT(fact_int(&f, "bpf.records"), 1);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	st = stack_ending(f.p, "Klass.helper");
	CHECK(st != NULL);
	if (st) {
		CHECK_EQ_INT(st->nframes, 2);
		CHECK_EQ_STR(st->frames[0].qualname, "main");
		CHECK_EQ_STR(st->frames[0].filename, "/app/main.py");
		CHECK_EQ_INT(st->frames[0].line, 42);
		CHECK_EQ_INT(st->frames[1].line, 9);
	}
	/* In the interpreter's code, not under a call: Python time. */
	ls = line_of(f.p, "/app/util.py", 9);
	CHECK(ls != NULL);
	if (ls) {
		CHECK(near(ls->python_ns, 2 * MS));
		CHECK(near(ls->native_ns, 0));
	}
	CHECK(line_of(f.p, "/app/main.py", 42) == NULL);
	t = thread_of(f.p, getpid(), getpid());
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ_STR(t->name, "python3");
		CHECK(t->main_thread);
	}
	/* Kernel mode: system time on the same line. */
	sample_init(getpid(), getpid(), 1 * MS, "python3");
	ev.mode = MODE_KERNEL;
	push(CODE_HELPER);
	push(CODE_MAIN);
	send_sample(&f);
	if (ls)
		CHECK(near(ls->system_ns, 1 * MS));
	teardown(&f);
}

/* The thread-name field: a thread's name is the last one its records
 * carried; an empty one reads "?". */
static void test_thread_names(void)
{
	const struct thread_stats *t;
	struct json_object *facts, *threads;
	struct fixture f;
	int tid = getpid() + 1, i, seen = 0;

	if (!setup(&f, false))
		return;
	sample_init(getpid(), tid, MS, "worker-1");
	push(CODE_MAIN);
	send_sample(&f);
	t = thread_of(f.p, getpid(), tid);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ_STR(t->name, "worker-1");
		CHECK(!t->main_thread);
	}
	sample_init(getpid(), tid, MS, "renamed");
	push(CODE_MAIN);
	send_sample(&f);
	if (t)
		CHECK_EQ_STR(t->name, "renamed");
	/* A full 16-byte name without its NUL. */
	sample_init(getpid(), tid, MS, "");
	memcpy(ev.comm, "sixteen-chars-xy", 16);
	push(CODE_MAIN);
	send_sample(&f);
	if (t)
		CHECK_EQ_STR(t->name, "sixteen-chars-xy");
	sample_init(getpid(), tid + 1, MS, "");
	push(CODE_MAIN);
	send_sample(&f);
	t = thread_of(f.p, getpid(), tid + 1);
	CHECK(t != NULL && t->name && !strcmp(t->name, "?"));
	facts = facts_json(f.s, 0, f.p);
	threads = at(facts, "threads");
	for (i = 0; threads && i < (int)json_object_array_length(threads); i++) {
		struct json_object *o = json_object_array_get_idx(threads, i);

		if (json_object_get_int(at(o, "tid")) != tid)
			continue;
		seen++;
		CHECK_EQ_STR(json_object_get_string(at(o, "name")), "sixteen-chars-xy");
		CHECK_EQ_INT(json_object_get_int(at(o, "samples")), 3);
		CHECK(near(json_object_get_double(at(o, "cpu_s")), 0.003));
	}
	CHECK_EQ_INT(seen, 1);
	json_object_put(facts);
	teardown(&f);
}

/* A child inherits its parent's state at fork: recognised as Python, code
 * objects the parent read before the fork, the allocation sampler. */
static void test_fork_inherits(void)
{
	const int child = GONE_PID + 1;
	struct scalene_bpf_sampler_state st = {
		.magic = SCALENE_BPF_SAMPLER_MAGIC,
		.size = sizeof(st),
		.hooks = SBS_H_MALLOC_SEEN,
		.python = SBS_PY_CTOR,
		.alloc_bytes = 3 << 20,
	};
	struct sampler_record sr = {
		.hdr.type = EV_SAMPLER,
		.hdr.tgid = getpid(),
		.phase = SAMPLER_INIT,
	};
	const struct stack_stats *stk;
	struct fixture f;

	if (!setup(&f, true))
		return;
	memcpy(sr.state, &st, sizeof(st));
	CHECK_EQ_INT(session__handle(f.s, &sr, sizeof(sr)), 0);
	/* The parent reads CODE_MAIN, then forks. */
	sample_init(getpid(), getpid(), MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	send_proc(&f, EV_FORK, child, getpid(), mono_ns());
	/* The child's memory cannot be read (it is gone): the parent's entry
	 * stands for the code object at the same address. */
	sample_init(child, child, 2 * MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	CHECK(near(fact_dbl(&f, "not_python_s"), 0));
	CHECK(near(line_of(f.p, "/app/main.py", 42)->python_ns, 3 * MS));
	stk = stack_ending(f.p, "main");
	CHECK(stk && stk->count == 2);
	/* A code object the parent never read: read from the parent, which
	 * still runs the image the child forked from (a child that ran a
	 * function and exited before its records were read). */
	sample_init(child, child, 4 * MS, "python3");
	push(CODE_OTHER);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	CHECK(line_of(f.p, "/app/other.py", 102) != NULL);
	/* Unless the parent holds another object there (the child made its
	 * own after the fork): the tag tells them apart. */
	sample_init(child, child, 4 * MS, "python3");
	ev.frames[ev.nframes] = frame_of(CODE_HELPER);
	ev.frames[ev.nframes++].tag++;
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 1);
	CHECK(near(fact_dbl(&f, "unattributed.unreadable_stacks_s"), 0.004));
	/* Both are Python processes with the sampler loaded; the child's
	 * counts start at zero and are not known yet. */
	CHECK_EQ_INT(fact_int(&f, "memory.python_processes"), 2);
	CHECK_EQ_INT(fact_int(&f, "memory.sampler_loaded"), 2);
	CHECK_EQ_INT(fact_int(&f, "memory.sampler_not_loaded"), 0);
	CHECK_EQ_INT(fact_int(&f, "memory.sampler_counts.processes"), 1);
	CHECK(near(fact_dbl(&f, "memory.sampler_counts.alloc_mb"), 3));
	/* A BPF-side stand-in: the session never tracks children itself (BPF
	 * follows them) and never configures them again (BPF copied it). */
	CHECK_EQ_INT(f.bpf.ntracked, 1);
	CHECK_EQ_INT(f.bpf.nset_python, 1);
	teardown(&f);
}

/* A real child: its code objects are read from its own memory. */
static void test_fork_real_child(void)
{
	int fds[2], status = 0;
	const struct stack_stats *stk;
	struct fixture f;
	uint64_t probe;
	pid_t pid;
	char c;

	if (pipe(fds))
		SKIP_TEST("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		SKIP_TEST("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[1]);
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(fds[0]);
	if (mem_read(pid, code_addr(CODE_CHILD_ONLY), &probe, sizeof(probe))) {
		close(fds[1]);
		waitpid(pid, &status, 0);
		SKIP_TEST("this process may not read its child's memory (ptrace scope)");
	}
	if (!setup(&f, false)) {
		close(fds[1]);
		waitpid(pid, &status, 0);
		return;
	}
	send_proc(&f, EV_FORK, pid, getpid(), mono_ns());
	sample_init(pid, pid, MS, "python3");
	push(CODE_CHILD_ONLY);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	stk = stack_ending(f.p, "in_child");
	CHECK(stk && stk->nframes == 1 && !strcmp(stk->frames[0].filename, "/app/child.py"));
	/* Its PID reused by another fork (the child stands for both): the new
	 * process is not the exited one, its memory is read. */
	send_proc(&f, EV_EXIT, pid, 0, mono_ns());
	send_proc(&f, EV_FORK, pid, getpid(), mono_ns());
	sample_init(pid, pid, MS, "python3");
	push(CODE_REUSED);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	CHECK(stack_ending(f.p, "again") != NULL);
	/* Gone, its code objects stay known. */
	close(fds[1]);
	waitpid(pid, &status, 0);
	send_proc(&f, EV_EXIT, pid, 0, mono_ns());
	sample_init(pid, pid, MS, "python3");
	push(CODE_CHILD_ONLY);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	CHECK(stk && stk->count == 2);
	teardown(&f);
}

/* An exec starts the process over: recognised anew, its old image's code
 * objects gone.  A record older than the recognition is not an exec of
 * what was recognised. */
static void test_exec(void)
{
	const int child = GONE_PID + 2;
	char why[256];
	struct fixture f;

	if (!setup(&f, false))
		return;
	/* Late: recognised after it. */
	send_proc(&f, EV_EXEC, getpid(), 0, 1);
	CHECK(session__root_python(f.s) != NULL);
	/* A child execs something that is gone before it could be
	 * recognised: not Python, its samples apart. */
	send_proc(&f, EV_FORK, child, getpid(), mono_ns());
	sample_init(child, child, MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.001));
	send_proc(&f, EV_EXEC, child, 0, mono_ns());
	sample_init(child, child, 2 * MS, "sh");
	ev.status = WALK_NO_CONFIG;
	send_sample(&f);
	CHECK(near(fact_dbl(&f, "not_python_s"), 0.002));
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.001));
	/* The root execs this test program: not a Python interpreter. */
	send_proc(&f, EV_EXEC, getpid(), 0, mono_ns() + 1000 * MS);
	CHECK(session__root_python(f.s) == NULL);
	session__explain_root(f.s, why, sizeof(why));
	CHECK(strstr(why, "not a Python interpreter") != NULL);
	sample_init(getpid(), getpid(), 4 * MS, "test_session");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK(near(fact_dbl(&f, "not_python_s"), 0.006));
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.001));
	/* The interpreter it was stays in the list. */
	CHECK_EQ_INT(session__interpreters(f.s), 1);
	teardown(&f);
}

/* A child that execs an interpreter: recognised anew from its own memory,
 * configured on the BPF side, and none of its parent's code objects (the
 * image they were in is gone). */
static void test_exec_python(void)
{
	const char *python = "/usr/bin/python3.11";
	char exe[PATH_MAX], link[64];
	struct timespec nap = { 0, 5 * 1000000 };
	struct fixture f;
	ssize_t len = 0;
	pid_t pid;
	int i;

	if (access(python, X_OK))
		SKIP_TEST("%s not found (apt-get install python3.11)", python);
	if (!setup(&f, false))
		return;
	sample_init(getpid(), getpid(), MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	pid = fork();
	if (pid == 0) {
		execl(python, python, "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid < 0) {
		teardown(&f);
		return;
	}
	send_proc(&f, EV_FORK, pid, getpid(), mono_ns());
	/* The record comes after the exec. */
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	for (i = 0; i < 2000; i++) {
		len = readlink(link, exe, sizeof(exe) - 1);
		if (len > 0 && (exe[len] = '\0', !strcmp(exe, python)))
			break;
		nanosleep(&nap, NULL);
	}
	send_proc(&f, EV_EXEC, pid, 0, mono_ns());
	/* Recognition is retried until the interpreter has started. */
	for (i = 0; i < 2000 && session__interpreters(f.s) < 2; i++) {
		nanosleep(&nap, NULL);
		session__tick(f.s, mono_ns());
	}
	CHECK_EQ_INT(session__interpreters(f.s), 2);
	CHECK_EQ_INT(f.bpf.nset_python, 2);
	CHECK_EQ_INT(f.bpf.python_pid, pid);
	CHECK_EQ_INT(f.bpf.cfg.minor, 11);
	/* The address of the parent's code object means nothing in the new
	 * image. */
	sample_init(pid, pid, 2 * MS, "python3.11");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 1);
	CHECK(near(fact_dbl(&f, "unattributed.unreadable_stacks_s"), 0.002));
	CHECK(near(fact_dbl(&f, "not_python_s"), 0));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	teardown(&f);
}

/* Exits: the BPF side stops following the process, the root's ends the
 * run, and past a limit exited processes are retired from the table (what
 * the memory summary needs of them is kept). */
static void test_exit(void)
{
	const int child = GONE_PID + 3;
	struct fixture f;
	int i, records;

	if (!setup(&f, true))
		return;
	send_proc(&f, EV_FORK, child, getpid(), mono_ns());
	send_proc(&f, EV_EXIT, child, 0, mono_ns());
	CHECK_EQ_INT(f.bpf.nuntracked, 1);
	CHECK_EQ_INT(f.bpf.untracked[0], child);
	CHECK(!session__root_exited(f.s));
	/* A sample read before the exit and drained after it still counts. */
	sample_init(child, child, MS, "python3");
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 1);
	CHECK_EQ_INT(fact_int(&f, "processes_retired"), 0);
	/* 256 exited processes are kept; the 257th retires them all. */
	for (i = 1; i < 256; i++) {
		send_proc(&f, EV_FORK, child + i, getpid(), mono_ns());
		send_proc(&f, EV_EXIT, child + i, 0, mono_ns());
	}
	CHECK_EQ_INT(fact_int(&f, "processes_retired"), 0);
	send_proc(&f, EV_FORK, child + 256, getpid(), mono_ns());
	send_proc(&f, EV_EXIT, child + 256, 0, mono_ns());
	CHECK_EQ_INT(fact_int(&f, "processes_retired"), 257);
	/* Still counted in the memory summary: Python, no sampler. */
	CHECK_EQ_INT(fact_int(&f, "memory.python_processes"), 258);
	CHECK_EQ_INT(fact_int(&f, "memory.sampler_not_loaded"), 258);
	/* Gone from the table: their late samples are of an unknown process. */
	sample_init(child, child, MS, "python3");
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 1);
	records = (int)fact_int(&f, "bpf.records");
	CHECK_EQ_INT(records, 2 * 257 + 2);
	send_proc(&f, EV_EXIT, getpid(), 0, mono_ns());
	CHECK(session__root_exited(f.s));
	CHECK_EQ_INT(f.bpf.untracked[7], child + 7);
	CHECK_EQ_INT(f.bpf.nuntracked, 258);
	/* The root is never retired. */
	CHECK(session__root_python(f.s) != NULL);
	CHECK_EQ_INT(fact_int(&f, "bpf.bad_records"), 0);
	teardown(&f);
}

/* Samples of a process the session does not know: counted as records,
 * nothing in the profile. */
static void test_unknown_process(void)
{
	struct fixture f;

	if (!setup(&f, false))
		return;
	sample_init(GONE_PID + 4, GONE_PID + 4, 5 * MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 0);
	CHECK_EQ_INT(profile__nthreads(f.p), 0);
	CHECK_EQ_INT(profile__nstacks(f.p), 0);
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0));
	CHECK(near(fact_dbl(&f, "not_python_s"), 0));
	CHECK_EQ_INT(fact_int(&f, "bpf.records"), 1);
	CHECK_EQ_INT(fact_int(&f, "bpf.bad_records"), 0);
	teardown(&f);
}

/* Frames whose code objects cannot be read: each is counted, and a sample
 * left with none keeps its time as unattributed, unreadable. */
static void test_unreadable_frames(void)
{
	struct py_frame stale;
	struct fixture f;

	if (!setup(&f, false))
		return;
	/* Nothing mapped at 16; CODE_OTHER read with another first line: the
	 * address holds another code object than the sample's. */
	stale = frame_of(CODE_OTHER);
	stale.tag++;
	sample_init(getpid(), getpid(), 3 * MS, "python3");
	ev.frames[ev.nframes++] = (struct py_frame){ .code = 16, .tag = 1 };
	ev.frames[ev.nframes++] = stale;
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 2);
	CHECK(near(fact_dbl(&f, "unattributed.unreadable_stacks_s"), 0.003));
	CHECK(near(fact_dbl(&f, "unattributed.threads_without_python_s"), 0));
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.003));
	CHECK_EQ_INT(profile__nstacks(f.p), 0);
	CHECK_EQ_INT(profile__nfiles(f.p), 0);
	/* One frame readable: the sample goes to it, the other is counted. */
	sample_init(getpid(), getpid(), MS, "python3");
	ev.frames[ev.nframes++] = stale;
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 3);
	CHECK(near(fact_dbl(&f, "unattributed.unreadable_stacks_s"), 0.003));
	CHECK(line_of(f.p, "/app/main.py", 42) != NULL);
	/* Interpreter shims only, or a thread with no Python state: no Python
	 * frame rather than an unreadable one. */
	sample_init(getpid(), getpid(), 5 * MS, "python3");
	ev.frames[ev.nframes++] = (struct py_frame){ .code = 0 };
	send_sample(&f);
	sample_init(getpid(), getpid() + 1, 7 * MS, "native");
	ev.status = WALK_NO_TSTATE;
	send_sample(&f);
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 3);
	CHECK(near(fact_dbl(&f, "unattributed.threads_without_python_s"), 0.012));
	CHECK(near(fact_dbl(&f, "unattributed.unreadable_stacks_s"), 0.003));
	teardown(&f);
}

/* The kernel's report, as the loader gives it, and the warning when the
 * samples of too many threads found no state in BPF. */
static void fake_kernel_report(void *ctx, struct loader_kernel_report *out)
{
	(void)ctx;
	memset(out, 0, sizeof(*out));
	out->release = "5.10.0-32-amd64";
	out->build = "bounded";
	out->sleep_state = "task";
	out->offcpu_hook = "sys_exit";
	out->nfallbacks = 1;
	out->fallbacks[0] =
		(struct loader_fallback){ "bpf_loop (Linux 5.17)", "plain loops", "some" };
}

static int nwarnings(struct fixture *f, const char *containing)
{
	struct json_object *o = facts_json(f->s, 0, f->p), *w = at(o, "warnings");
	int i, n = 0;

	for (i = 0; w && i < (int)json_object_array_length(w); i++)
		n += strstr(json_object_get_string(json_object_array_get_idx(w, i)), containing) !=
		     NULL;
	json_object_put(o);
	return n;
}

static void test_kernel_and_thread_state(void)
{
	struct session_bpf b = {
		.stats = fake_stats,
		.prog_runtime = fake_prog_runtime,
		.kernel_report = fake_kernel_report,
	};
	struct json_object *o, *k;
	struct fixture f;

	if (!setup(&f, false))
		return;
	/* Without the callback: no kernel object. */
	o = facts_json(f.s, 0, f.p);
	CHECK(o && !at(o, "kernel"));
	json_object_put(o);
	b.ctx = &f.bpf;
	b.track = fake_track;
	b.untrack = fake_untrack;
	b.seed_threads = fake_seed_threads;
	b.set_python = fake_set_python;
	session__set_bpf(f.s, &b);
	o = facts_json(f.s, 0, f.p);
	k = at(o, "kernel");
	CHECK(k != NULL);
	CHECK(k && !strcmp(json_object_get_string(at(o, "kernel.build")), "bounded"));
	CHECK(k && json_object_array_length(at(o, "kernel.fallbacks")) == 1);
	json_object_put(o);
	/* 1 % of the samples without state is not worth a word; more is. */
	f.bpf.stats[STAT_SAMPLES] = 1000;
	f.bpf.stats[STAT_TASK_STORAGE_FAIL] = 10;
	CHECK_EQ_INT(nwarnings(&f, "found no thread state"), 0);
	f.bpf.stats[STAT_TASK_STORAGE_FAIL] = 11;
	CHECK_EQ_INT(nwarnings(&f, "found no thread state"), 1);
	CHECK_EQ_INT(nwarnings(&f, "16384 threads"), 1);
	teardown(&f);
}

/* A PID used again by a new process: its state is the new process's. */
static void test_pid_reuse(void)
{
	const int pid = GONE_PID + 5;
	struct fixture f;

	if (!setup(&f, false))
		return;
	sample_init(getpid(), getpid(), MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	/* First a fork of the root, then exited. */
	send_proc(&f, EV_FORK, pid, getpid(), mono_ns());
	send_proc(&f, EV_EXIT, pid, 0, mono_ns());
	/* The PID again, from a parent the session does not follow (a
	 * process that is not Python yet): its samples are kept apart. */
	send_proc(&f, EV_FORK, pid, GONE_PID + 6, mono_ns());
	sample_init(pid, pid, 2 * MS, "sh");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK(near(fact_dbl(&f, "not_python_s"), 0.002));
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.001));
	/* Recognition is retried at ticks; gone, it is given up. */
	session__tick(f.s, mono_ns());
	sample_init(pid, pid, 2 * MS, "sh");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK(near(fact_dbl(&f, "not_python_s"), 0.004));
	/* Exited, then the PID a fork of the root again: Python from the
	 * first sample, with the root's code objects. */
	send_proc(&f, EV_EXIT, pid, 0, mono_ns());
	send_proc(&f, EV_FORK, pid, getpid(), mono_ns());
	sample_init(pid, pid, 4 * MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK(near(fact_dbl(&f, "not_python_s"), 0.004));
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.005));
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	CHECK(near(line_of(f.p, "/app/main.py", 42)->python_ns, 5 * MS));
	CHECK_EQ_INT(f.bpf.nuntracked, 2);
	teardown(&f);
}

/* Samples counted in BPF come as one record that stands for several; one
 * of an image the session does not know yet waits for the next drain, and
 * is counted apart if it still does not fit. */
static void test_counted_samples(void)
{
	struct session_bpf b = {
		.track = fake_track,
		.untrack = fake_untrack,
		.seed_threads = fake_seed_threads,
		.set_python = fake_set_python,
		.stats = fake_stats,
		.prog_runtime = fake_prog_runtime,
		.drain_counts = fake_drain_counts,
	};
	const struct stack_stats *st;
	const struct line_stats *ls;
	struct sample_event later;
	struct fixture f;
	uint64_t now;

	if (!setup(&f, false))
		return;
	b.ctx = &f.bpf;
	f.bpf.s = f.s;
	session__set_bpf(f.s, &b);
	sample_init(getpid(), getpid(), 5 * MS, "python3");
	ev.count = 5;
	push(CODE_HELPER);
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 5);
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.005));
	ls = line_of(f.p, "/app/util.py", 9);
	CHECK(ls != NULL);
	if (ls) {
		CHECK_EQ_INT(ls->samples, 5);
		CHECK(near(ls->python_ns, 5 * MS));
	}
	st = stack_ending(f.p, "Klass.helper");
	CHECK(st != NULL);
	if (st)
		CHECK_EQ_INT(st->count, 5);
	/* The next image of the process (an exec the session has not read
	 * yet): held, not given to this one. */
	sample_init(getpid(), getpid(), 3 * MS, "python3");
	ev.count = 3;
	ev.gen = 1;
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 5);
	/* The periodic drain, due at once: one more count of the known image
	 * comes in, and the held one, still of no known image, is counted
	 * apart. */
	sample_init(getpid(), getpid(), 2 * MS, "python3");
	ev.count = 2;
	push(CODE_MAIN);
	later = ev;
	f.bpf.next_count = &later;
	now = mono_ns();
	session__tick(f.s, now);
	CHECK_EQ_INT(f.bpf.drains_due, 1);
	CHECK_EQ_INT(profile__samples(f.p), 7);
	CHECK(near(fact_dbl(&f, "total_sampled_s"), 0.007));
	/* Not due again before its period. */
	session__tick(f.s, now + 1);
	CHECK_EQ_INT(f.bpf.drains_due, 1);
	CHECK(session__poll_ms(f.s, now + 1) <= 250);
	teardown(&f);
}

/* Records that do not hold together are counted and dropped. */
static void test_malformed(void)
{
	struct proc_record r = { .hdr.type = EV_FORK, .hdr.tgid = GONE_PID + 7, .ppid = 1 };
	struct sampler_record sr = { .hdr.type = EV_SAMPLER, .hdr.tgid = 1 };
	uint32_t type = EV_SAMPLE;
	struct fixture f;
	int bad = 0;

	if (!setup(&f, false))
		return;
	/* Shorter than its type: not even a record. */
	CHECK_EQ_INT(session__handle(f.s, &type, 2), 0);
	CHECK_EQ_INT(fact_int(&f, "bpf.records"), 0);
	/* A sample shorter than its header. */
	sample_init(getpid(), getpid(), MS, "python3");
	CHECK_EQ_INT(session__handle(f.s, &ev, SAMPLE_HDR_SIZE - 1), 0);
	bad++;
	/* More frames than a record holds. */
	ev.nframes = MAX_FRAMES + 1;
	CHECK_EQ_INT(session__handle(f.s, &ev, sizeof(ev)), 0);
	bad++;
	/* Shorter than its frames. */
	sample_init(getpid(), getpid(), MS, "python3");
	push(CODE_MAIN);
	push(CODE_HELPER);
	CHECK_EQ_INT(session__handle(f.s, &ev, sample_size() - 1), 0);
	bad++;
	/* Frames elided from a stack that does not fill the record. */
	ev.elided = 3;
	send_sample(&f);
	bad++;
	/* A sampling mode that does not exist. */
	ev.elided = 0;
	ev.mode = MODE_GPU_API + 1;
	send_sample(&f);
	bad++;
	/* Short process and sampler records, and an unknown type. */
	CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r) - 1), 0);
	bad++;
	CHECK_EQ_INT(session__handle(f.s, &sr, sizeof(sr) - 1), 0);
	bad++;
	r.hdr.type = 77;
	CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
	bad++;
	CHECK_EQ_INT(fact_int(&f, "bpf.bad_records"), bad);
	CHECK_EQ_INT(fact_int(&f, "bpf.records"), bad);
	/* None of them did anything. */
	CHECK_EQ_INT(profile__samples(f.p), 0);
	r.hdr.type = EV_FORK;
	sample_init(GONE_PID + 7, GONE_PID + 7, MS, "python3");
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 0);
	/* A well-formed record after them is handled as usual. */
	sample_init(getpid(), getpid(), MS, "python3");
	push(CODE_MAIN);
	send_sample(&f);
	CHECK_EQ_INT(profile__samples(f.p), 1);
	CHECK_EQ_INT(fact_int(&f, "bpf.bad_records"), bad);
	teardown(&f);
}

/*
 * A stack deeper than a record: the walker keeps the innermost INNER_FRAMES
 * in order and the outermost OUTER_FRAMES in a ring whose innermost entry
 * sits at slot INNER_FRAMES + elided % OUTER_FRAMES.  The session puts the
 * outer part back in order, with a "[frames elided]" frame between.
 */
static void deep_sample(struct fixture *f, uint32_t elided, uint64_t cpu_ns)
{
	uint32_t first_outer = INNER_FRAMES + elided % OUTER_FRAMES;
	uint32_t last_outer = INNER_FRAMES + (elided + OUTER_FRAMES - 1) % OUTER_FRAMES;
	uint32_t i;

	sample_init(getpid(), getpid(), cpu_ns, "python3");
	ev.nframes = MAX_FRAMES;
	ev.elided = elided;
	/* Shims everywhere but the innermost frame, the outer part's first
	 * and last (the outermost of the stack). */
	for (i = 0; i < MAX_FRAMES; i++)
		ev.frames[i] = (struct py_frame){ .code = 0 };
	ev.frames[0] = frame_of(CODE_DEEP);
	ev.frames[INNER_FRAMES - 1] = frame_of(CODE_HELPER);
	ev.frames[first_outer] = frame_of(CODE_OTHER);
	ev.frames[last_outer] = frame_of(CODE_MAIN);
	send_sample(f);
}

static void check_deep(const struct stack_stats *st, bool marker)
{
	int n = marker ? 5 : 4, k = 0;

	CHECK(st != NULL);
	if (!st)
		return;
	CHECK_EQ_INT(st->nframes, n);
	if (st->nframes != n)
		return;
	CHECK_EQ_STR(st->frames[k++].qualname, "main");
	CHECK_EQ_STR(st->frames[k++].qualname, "other");
	if (marker) {
		CHECK_EQ_STR(st->frames[k].qualname, "[frames elided]");
		CHECK_EQ_STR(st->frames[k].filename, "");
		k++;
	}
	CHECK_EQ_STR(st->frames[k++].qualname, "Klass.helper");
	CHECK_EQ_STR(st->frames[k++].qualname, "recurse");
	CHECK(!st->truncated);
}

static void test_deep_stack(void)
{
	const struct line_stats *ls;
	struct fixture f;

	if (!setup(&f, false))
		return;
	/* The ring turned: its innermost entry is not at its start. */
	deep_sample(&f, 5, MS);
	check_deep(stack_ending(f.p, "recurse"), true);
	/* Many times round. */
	deep_sample(&f, 3 * OUTER_FRAMES + 17, MS);
	CHECK_EQ_INT(profile__nstacks(f.p), 1);
	check_deep(stack_ending(f.p, "recurse"), true);
	/* Right at a turn: the ring in order. */
	deep_sample(&f, OUTER_FRAMES, MS);
	CHECK_EQ_INT(profile__nstacks(f.p), 1);
	if (profile__nstacks(f.p))
		CHECK_EQ_INT(profile__stack(f.p, 0)->count, 3);
	/* The marker has no file: the time goes to the innermost frame. */
	ls = line_of(f.p, "/app/deep.py", 5);
	CHECK(ls && near(ls->python_ns, 3 * MS));
	CHECK_EQ_INT(fact_int(&f, "bpf.frames_unreadable"), 0);
	CHECK_EQ_INT(fact_int(&f, "bpf.bad_records"), 0);
	teardown(&f);
	/* A full record with nothing elided: no marker, slots in order. */
	if (!setup(&f, false))
		return;
	sample_init(getpid(), getpid(), MS, "python3");
	ev.nframes = MAX_FRAMES;
	ev.frames[0] = frame_of(CODE_DEEP);
	ev.frames[INNER_FRAMES - 1] = frame_of(CODE_HELPER);
	ev.frames[INNER_FRAMES] = frame_of(CODE_OTHER);
	ev.frames[MAX_FRAMES - 1] = frame_of(CODE_MAIN);
	send_sample(&f);
	check_deep(stack_ending(f.p, "recurse"), false);
	teardown(&f);
}

/* ------------------------------------------------ system-wide (--all) */

/* A stand-in host: what the session told it. */
struct fake_host {
	int refuse; /* a PID the filters leave out */
	int accepted, skipped_not_python, skipped_why;
	char why[256];
	struct profile *made[8];
	struct session_proc seen[8];
	int nmade;
	struct session_end ended[8];
	int ended_pid[8], nended;
	struct json_object *facts[8];
};

static bool host_accept(void *ctx, int pid, int ppid)
{
	struct fake_host *h = ctx;

	if (pid == h->refuse)
		return false;
	h->accepted++;
	return true;
}

static struct profile *host_python(void *ctx, const struct session_proc *sp)
{
	struct profile_filter filter = { .profile_all = true };
	struct fake_host *h = ctx;

	if (h->nmade >= 8)
		return NULL;
	h->seen[h->nmade] = *sp;
	h->seen[h->nmade].pp = NULL;
	return h->made[h->nmade++] = profile__new(&filter);
}

static void host_skipped(void *ctx, int pid, const char *why)
{
	struct fake_host *h = ctx;

	if (why) {
		h->skipped_why++;
		snprintf(h->why, sizeof(h->why), "%s", why);
	} else {
		h->skipped_not_python++;
	}
}

static struct session *host_session;

static void host_ended(void *ctx, int pid, const struct session_end *e)
{
	struct fake_host *h = ctx;

	if (h->nended >= 8)
		return;
	h->ended[h->nended] = *e;
	h->ended_pid[h->nended] = pid;
	/* The facts of the process are there while it ends. */
	h->facts[h->nended] = facts_json(host_session, pid, e->profile);
	h->nended++;
}

/* A system-wide session over the stand-in host h, and a Python process
 * (Debian's static python3.11, sleeping) that it follows from its exec:
 * its PID, or -1 (skipped or failed; the caller frees f->s).  With
 * counted, samples come by the drains (fake_drain_counts). */
static pid_t host_python_running(struct fixture *f, struct fake_host *h, struct session_host *sh,
				 struct fake_bpf *fb, struct session_bpf *b, bool counted)
{
	const char *python = "/usr/bin/python3.11";
	struct timespec nap = { 0, 5 * 1000000 };
	struct session_opts so = { .rate_hz = 1000, .ncpus = 1, .host = sh };
	char exe[PATH_MAX], link[64];
	ssize_t len;
	pid_t pid;
	int i;

	*sh = (struct session_host){
		.ctx = h,
		.accept = host_accept,
		.python = host_python,
		.skipped = host_skipped,
		.ended = host_ended,
	};
	*b = (struct session_bpf){
		.ctx = fb,
		.track = fake_track,
		.untrack = fake_untrack,
		.seed_threads = fake_seed_threads,
		.set_python = fake_set_python,
		.stats = fake_stats,
		.prog_runtime = fake_prog_runtime,
		.drain_counts = counted ? fake_drain_counts : NULL,
	};
	if (access(python, X_OK)) {
		/* SKIP_TEST, from the test that called. */
		printf("SKIPPED: %s not found (apt-get install python3.11)\n", python);
		t_skip_current = 1;
		return -1;
	}
	f->s = host_session = session__new(&so);
	CHECK(f->s != NULL);
	if (!f->s)
		return -1;
	fb->s = f->s;
	session__set_bpf(f->s, b);
	pid = fork();
	if (pid == 0) {
		execl(python, python, "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	for (i = 0; i < 2000; i++) {
		len = readlink(link, exe, sizeof(exe) - 1);
		if (len > 0 && (exe[len] = '\0', !strcmp(exe, python)))
			break;
		nanosleep(&nap, NULL);
	}
	/* Any exec on the host: followed once the filters take it. */
	send_proc(f, EV_EXEC, pid, 0, mono_ns());
	CHECK_EQ_INT(fb->ntracked, 1);
	CHECK_EQ_INT(fb->tracked[0], pid);
	for (i = 0; i < 2000 && !h->nmade; i++) {
		nanosleep(&nap, NULL);
		session__tick(f->s, mono_ns());
	}
	CHECK_EQ_INT(h->nmade, 1);
	return pid;
}

static void host_done(struct fixture *f, struct fake_host *h, pid_t pid)
{
	int i;

	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	session__free(f->s);
	for (i = 0; i < h->nmade; i++)
		profile__free(h->made[i]);
	for (i = 0; i < h->nended; i++)
		json_object_put(h->facts[i]);
}

/* A system-wide session: an exec'ed interpreter is recognised and gets a
 * profile of its own from the host, its fork child another one (the same
 * program), a process that is not Python is let go, one the filters refuse
 * is never followed; each image's end reaches the host with its profile and
 * its facts, and the end of the run ends the rest. */
static void test_host_mode(void)
{
	const int child = GONE_PID + 7;
	struct timespec nap = { 0, 5 * 1000000 };
	struct fake_host h = { .refuse = GONE_PID + 9 };
	struct session_host sh;
	struct fake_bpf fb = { 0 };
	struct session_bpf b;
	struct fixture f = { 0 };
	pid_t pid;
	int i;

	pid = host_python_running(&f, &h, &sh, &fb, &b, false);
	if (pid < 0)
		goto out;
	CHECK_EQ_INT(h.seen[0].pid, pid);
	CHECK_EQ_INT(h.seen[0].ppid, 0);
	CHECK(h.seen[0].start_ns > 0);
	CHECK_EQ_INT(fb.python_pid, pid);
	/* Its samples go to its own profile. */
	sample_init(pid, pid, 3 * MS, "python3.11");
	send_sample(&f);
	CHECK(near(profile__total_ns(h.made[0]), 3 * MS));
	/* A fork child of it: a profile of its own, its parent's program. */
	send_proc(&f, EV_FORK, child, pid, mono_ns());
	CHECK_EQ_INT(h.nmade, 2);
	CHECK_EQ_INT(h.seen[1].pid, child);
	CHECK_EQ_INT(h.seen[1].ppid, pid);
	sample_init(child, child, 5 * MS, "python3.11");
	send_sample(&f);
	CHECK(near(profile__total_ns(h.made[1]), 5 * MS));
	CHECK(near(profile__total_ns(h.made[0]), 3 * MS));
	/* The child exits: the host gets its profile, code and facts. */
	{
		struct proc_record r = { .hdr.type = EV_EXIT,
					 .hdr.tgid = child,
					 .exit_code = 3 << 8,
					 .ts = mono_ns(),
					 .maxrss_pages = 256,
					 .alloc_hits = 4321 };

		CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
	}
	CHECK_EQ_INT(h.nended, 1);
	/* Its allocation probe hits come with the exit record. */
	CHECK(h.ended[0].alloc_hits_known);
	CHECK_EQ_INT(h.ended[0].alloc_hits, 4321);
	CHECK_EQ_INT(h.ended_pid[0], child);
	CHECK_EQ_INT(h.ended[0].why, END_EXIT);
	CHECK_EQ_INT(h.ended[0].exit_code, 3 << 8);
	CHECK_EQ_INT(h.ended[0].maxrss_kb, 256 * (getpagesize() / 1024));
	CHECK(h.ended[0].profile == h.made[1]);
	CHECK(h.facts[0] != NULL);
	CHECK_EQ_INT(json_object_get_int(at(h.facts[0], "bpf.samples")), 1);
	CHECK_EQ_INT(json_object_get_int(at(
			     json_object_array_get_idx(at(h.facts[0], "interpreters"), 0), "pid")),
		     child);
	/* Not followed any more: its samples go nowhere. */
	sample_init(child, child, 5 * MS, "python3.11");
	send_sample(&f);
	CHECK(near(profile__total_ns(h.made[1]), 5 * MS));
	/* The filters refuse a process: never followed (the fork child was
	 * followed by BPF itself). */
	send_proc(&f, EV_EXEC, h.refuse, 0, mono_ns());
	CHECK_EQ_INT(fb.ntracked, 1);
	/* This test program execs (as far as the session knows): not Python,
	 * let go at once. */
	send_proc(&f, EV_EXEC, getpid(), 0, mono_ns());
	CHECK_EQ_INT(fb.ntracked, 2);
	CHECK_EQ_INT(h.skipped_not_python, 1);
	CHECK(fb.nuntracked >= 2);
	/* The same program again: known, not followed at all. */
	send_proc(&f, EV_EXEC, getpid(), 0, mono_ns());
	CHECK_EQ_INT(fb.ntracked, 2);
	CHECK_EQ_INT(h.skipped_not_python, 2);
	CHECK_EQ_INT(session__execs_known_not_python(f.s), 1);
	/* The interpreter execs: its image ends, the new one is looked at
	 * afresh (the same interpreter: a new profile). */
	send_proc(&f, EV_EXEC, pid, 0, mono_ns() + 1000 * MS);
	CHECK_EQ_INT(h.nended, 2);
	CHECK_EQ_INT(h.ended[1].why, END_EXEC);
	CHECK(h.ended[1].profile == h.made[0]);
	for (i = 0; i < 2000 && h.nmade < 3; i++) {
		nanosleep(&nap, NULL);
		session__tick(f.s, mono_ns());
	}
	CHECK_EQ_INT(h.nmade, 3);
	/* A fork BPF did not follow (it did not know the parent yet): taken
	 * on when the parent is followed here, and told to BPF with the
	 * parent's walk configuration; that of a parent not followed is not,
	 * nor is such an exit. */
	{
		struct proc_record r = { .hdr.type = EV_FORK,
					 .hdr.tgid = GONE_PID + 11,
					 .ppid = GONE_PID + 12,
					 .ts = mono_ns(),
					 .flags = PROC_F_UNTRACKED };

		CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
		CHECK_EQ_INT(fb.ntracked, 2);
		CHECK_EQ_INT(h.nmade, 3);
		r.hdr.tgid = GONE_PID + 13;
		r.ppid = pid;
		fb.python_pid = 0;
		CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
		CHECK_EQ_INT(fb.ntracked, 3);
		CHECK_EQ_INT(fb.tracked[2], GONE_PID + 13);
		CHECK_EQ_INT(fb.python_pid, GONE_PID + 13);
		CHECK_EQ_INT(h.nmade, 4);
		r.hdr.type = EV_EXIT;
		r.hdr.tgid = GONE_PID + 11;
		r.ppid = 0;
		CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
		CHECK_EQ_INT(h.nended, 2);
		r.hdr.tgid = GONE_PID + 13;
		CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
		CHECK_EQ_INT(h.nended, 3);
		CHECK_EQ_INT(h.ended_pid[2], GONE_PID + 13);
		CHECK_EQ_INT(h.ended[2].why, END_EXIT);
	}
	/* The end of the run ends what is still running. */
	session__end_all(f.s);
	CHECK_EQ_INT(h.nended, 4);
	CHECK_EQ_INT(h.ended[3].why, END_RUNNING);
	CHECK(h.ended[3].profile == h.made[2]);
	CHECK_EQ_INT(h.ended[3].maxrss_kb, 0);
	CHECK(session__proc_source_ctx(f.s, pid) == NULL);
out:
	host_done(&f, &h, pid);
}

/* With counted samples, an exit's end waits for two periodic drains (the
 * counts of its last moments come with them, not with a read of the whole
 * table for it), then reaches the host as at once would; its PID given
 * again, an interval's end and the run's end end it without waiting. */
static void test_host_end_waits_for_drains(void)
{
	const int child = GONE_PID + 21;
	struct fake_host h = { 0 };
	struct session_host sh;
	struct fake_bpf fb = { 0 };
	struct session_bpf b;
	struct fixture f = { 0 };
	struct sample_event late;
	struct proc_record r = { .hdr.type = EV_EXIT,
				 .hdr.tgid = child,
				 .exit_code = 7 << 8,
				 .maxrss_pages = 16,
				 .alloc_hits = 99 };
	uint64_t now;
	pid_t pid;

	pid = host_python_running(&f, &h, &sh, &fb, &b, true);
	if (pid < 0)
		goto out;
	now = mono_ns();
	send_proc(&f, EV_FORK, child, pid, now);
	CHECK_EQ_INT(h.nmade, 2);
	r.ts = now;
	CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
	CHECK_EQ_INT(h.nended, 0);
	/* Its last sample, counted before it exited, comes with a drain. */
	sample_init(child, child, 4 * MS, "python3.11");
	push(CODE_MAIN);
	late = ev;
	fb.next_count = &late;
	now += 1000 * MS;
	session__tick(f.s, now);
	CHECK_EQ_INT(fb.drains_due, 1);
	CHECK(near(profile__total_ns(h.made[1]), 4 * MS));
	CHECK_EQ_INT(h.nended, 0);
	now += 1000 * MS;
	session__tick(f.s, now);
	CHECK_EQ_INT(fb.drains_due, 2);
	CHECK_EQ_INT(h.nended, 1);
	CHECK_EQ_INT(h.ended_pid[0], child);
	CHECK_EQ_INT(h.ended[0].why, END_EXIT);
	CHECK_EQ_INT(h.ended[0].exit_code, 7 << 8);
	CHECK_EQ_INT(h.ended[0].maxrss_kb, 16 * (getpagesize() / 1024));
	CHECK_EQ_INT(h.ended[0].alloc_hits, 99);
	CHECK(h.ended[0].profile == h.made[1]);
	CHECK_EQ_INT(fb.drains_image, 0);
	/* Its PID given to a new process before the drains: the end first,
	 * with a drain of its own. */
	send_proc(&f, EV_FORK, child + 1, pid, now);
	r.hdr.tgid = child + 1;
	CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
	CHECK_EQ_INT(h.nended, 1);
	send_proc(&f, EV_FORK, child + 1, pid, now);
	CHECK_EQ_INT(h.nended, 2);
	CHECK_EQ_INT(h.ended_pid[1], child + 1);
	CHECK_EQ_INT(h.ended[1].why, END_EXIT);
	CHECK_EQ_INT(fb.drains_image, 1);
	/* An interval's end: the new one exits, and ends with it. */
	r.hdr.tgid = child + 1;
	CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
	CHECK_EQ_INT(h.nended, 2);
	session__drain_counts(f.s);
	CHECK_EQ_INT(h.nended, 3);
	CHECK_EQ_INT(h.ended[2].why, END_EXIT);
	/* The run's end: one that waits ends as exited, the parent as
	 * running. */
	send_proc(&f, EV_FORK, child + 2, pid, now);
	r.hdr.tgid = child + 2;
	CHECK_EQ_INT(session__handle(f.s, &r, sizeof(r)), 0);
	session__end_all(f.s);
	CHECK_EQ_INT(h.nended, 5);
	CHECK_EQ_INT(h.ended_pid[3] == child + 2 ? h.ended[3].why : h.ended[4].why, END_EXIT);
	CHECK_EQ_INT(h.ended_pid[3] == pid ? h.ended[3].why : h.ended[4].why, END_RUNNING);
out:
	host_done(&f, &h, pid);
}

/* A GPU library record of this process. */
static void send_gpu(struct fixture *f, uint32_t phase, const void *payload, size_t len,
		     uint32_t count)
{
	static struct gpu_record r;

	memset(&r, 0, sizeof(r));
	r.hdr.type = EV_GPU;
	r.hdr.tgid = getpid();
	r.phase = phase;
	r.count = count;
	memcpy(r.recs, payload, len);
	CHECK_EQ_INT(session__handle(f->s, &r, sizeof(r)), 0);
}

/* A traced CUDA call at code's line (under main): its stack first, once,
 * as BPF sends it, then the call naming it. */
static void send_launch(struct fixture *f, uint32_t corr, int code)
{
	static struct agg_stack_record r;
	struct gpu_call_record c = { .hdr.type = EV_GPU_CALL,
				     .hdr.tgid = getpid(),
				     .tid = getpid(),
				     .correlation_id = corr,
				     .stack = 1000 + code,
				     .api_class = GPU_API_LAUNCH,
				     .status = WALK_OK };

	memset(&r, 0, sizeof(r));
	r.hdr.type = EV_STACK;
	r.hdr.tgid = getpid();
	r.id = c.stack;
	r.nframes = 2;
	r.frames[0] = frame_of(code);
	r.frames[1] = frame_of(CODE_MAIN);
	CHECK_EQ_INT(session__handle(f->s, &r, STACK_HDR_SIZE + 2 * sizeof(struct py_frame)), 0);
	c.ts = mono_ns();
	CHECK_EQ_INT(session__handle(f->s, &c, sizeof(c)), 0);
}

static void send_cpu(struct fixture *f, int code, uint64_t ts, uint64_t cpu_ns)
{
	sample_init(getpid(), getpid(), cpu_ns, "python3");
	ev.ts = ts;
	push(code);
	push(CODE_MAIN);
	send_sample(f);
}

/* GPU: a CUDA call's device work goes to the line that made the call (by
 * correlation id); a CPU sample's line gets the GPU's use during the
 * sample (kernel intervals of the process) and the device memory then, once
 * settled; records of calls never seen are counted, not credited. */
static void test_gpu(void)
{
	const uint64_t t0 = 1000 * MS;
	struct scalene_bpf_gpu_state st = { .magic = SCALENE_BPF_GPU_MAGIC,
					    .abi = SCALENE_BPF_GPU_ABI,
					    .status = GPU_S_ACTIVE,
					    .clock = GPU_CLOCK_MONOTONIC };
	struct scalene_bpf_gpu_rec recs[6] = {
		/* Two kernels of call 42, overlapping: busy [t0, t0 + 12 ms). */
		{ .kind = GPU_REC_KERNEL,
		  .correlation_id = 42,
		  .start_ns = t0,
		  .end_ns = t0 + 10 * MS },
		{ .kind = GPU_REC_KERNEL,
		  .correlation_id = 42,
		  .start_ns = t0 + 6 * MS,
		  .end_ns = t0 + 12 * MS },
		{ .kind = GPU_REC_MEMCPY,
		  .correlation_id = 43,
		  .copy_kind = GPU_COPY_HTOD,
		  .bytes = 1 << 20,
		  .start_ns = t0 + 30 * MS,
		  .end_ns = t0 + 31 * MS },
		/* 4 MiB allocated at t0 by a call not seen. */
		{ .kind = GPU_REC_ALLOC,
		  .correlation_id = 44,
		  .bytes = 4 << 20,
		  .start_ns = t0,
		  .end_ns = t0 },
		{ .kind = GPU_REC_FREE,
		  .correlation_id = 45,
		  .bytes = 4 << 20,
		  .start_ns = t0 + 25 * MS,
		  .end_ns = t0 + 25 * MS },
		/* A kernel no call was seen for (no launch site). */
		{ .kind = GPU_REC_KERNEL,
		  .correlation_id = 99,
		  .start_ns = t0 + 50 * MS,
		  .end_ns = t0 + 52 * MS },
	};
	const struct line_stats *helper, *other;
	struct fixture f;

	setup_gpu_library = "/opt/lib/libscalene-bpf-gpu.so";
	if (!setup(&f, false)) {
		setup_gpu_library = NULL;
		return;
	}
	setup_gpu_library = NULL;
	/* Before the library reports, samples take no GPU use. */
	send_cpu(&f, CODE_OTHER, t0 - 50 * MS, MS);
	send_gpu(&f, GPU_INIT, &st, sizeof(st), 0);
	send_launch(&f, 42, CODE_HELPER);
	send_launch(&f, 43, CODE_OTHER);
	/* A call whose stack never came: counted, its records unmatched. */
	{
		struct gpu_call_record c = { .hdr.type = EV_GPU_CALL,
					     .hdr.tgid = getpid(),
					     .correlation_id = 45,
					     .stack = 77,
					     .status = WALK_OK };

		CHECK_EQ_INT(session__handle(f.s, &c, sizeof(c)), 0);
	}
	/* Half of [t0 + 10, t0 + 14 ms) busy, at helper's line; other's line
	 * runs while nothing does, after the free. */
	send_cpu(&f, CODE_HELPER, t0 + 14 * MS, 4 * MS);
	send_cpu(&f, CODE_HELPER, t0 + 5 * MS, 1 * MS);
	send_cpu(&f, CODE_OTHER, t0 + 40 * MS, 2 * MS);
	send_gpu(&f, GPU_RECORDS, recs, sizeof(recs), 6);
	/* Too early to settle: nothing given yet. */
	session__tick(f.s, t0 + 100 * MS);
	helper = line_of(f.p, "/app/util.py", 9);
	CHECK(helper && helper->gpu && helper->gpu->weight == 0);
	session__settle_gpu(f.s);
	helper = line_of(f.p, "/app/util.py", 9);
	other = line_of(f.p, "/app/other.py", 102);
	CHECK(helper && helper->gpu && other && other->gpu);
	if (helper && helper->gpu) {
		const struct gpu_stats *g = helper->gpu;

		CHECK_EQ_INT(g->launches, 1);
		CHECK_EQ_INT(g->kernels, 2);
		CHECK(near(g->kernel_ns, 16 * MS));
		/* (0.5 * 4 ms + 1 * 1 ms) / 5 ms of samples. */
		CHECK(near(g->util_sum / g->weight, 0.6));
		CHECK(near(g->mem_peak, 4 << 20));
		CHECK(near(g->mem_sum / g->weight, 4 << 20));
	}
	if (other && other->gpu) {
		const struct gpu_stats *g = other->gpu;

		CHECK_EQ_INT(g->launches, 1);
		CHECK_EQ_INT(g->copies, 1);
		CHECK(near(g->copy_bytes[GPU_DIR_HTOD], 1 << 20));
		CHECK(near(g->copy_ns, 1 * MS));
		CHECK(near(g->util_sum, 0));
		CHECK(near(g->mem_peak, 0));
		/* Only the sample after the library started waited. */
		CHECK(near(g->weight, 2 * MS));
	}
	CHECK_EQ_INT(fact_int(&f, "gpu.records"), 6);
	/* 44's and 99's calls were never seen, 45's stack never came. */
	CHECK_EQ_INT(fact_int(&f, "gpu.records_unmatched"), 3);
	CHECK(near(fact_dbl(&f, "gpu.kernel_s_no_launch_site"), 0.002));
	CHECK_EQ_INT(fact_int(&f, "gpu.kernels"), 3);
	CHECK_EQ_INT(fact_int(&f, "gpu.calls"), 3);
	CHECK_EQ_INT(fact_int(&f, "gpu.calls_without_stack"), 1);
	CHECK_EQ_INT(fact_int(&f, "gpu.calls_outside_profiled_files"), 0);
	CHECK_EQ_INT(fact_int(&f, "gpu.processes_collecting"), 1);
	CHECK_EQ_INT(fact_int(&f, "gpu.samples_with_gpu_use"), 3);
	CHECK(near(fact_dbl(&f, "gpu.peak_memory_mb"), 4));
	/* The first two kernels overlap: 12 + 2 ms of the process's GPU busy. */
	CHECK(near(fact_dbl(&f, "gpu.busy_s"), 0.014));
	/* A batch that says more than a record holds is counted, not read. */
	send_gpu(&f, GPU_RECORDS, recs, sizeof(recs), GPU_BATCH + 1);
	CHECK_EQ_INT(fact_int(&f, "gpu.record_batches_unreadable"), 1);
	CHECK_EQ_INT(fact_int(&f, "gpu.records"), 6);
	teardown(&f);
}

int main(void)
{
	/* The code objects exist before any child is forked. */
	make_codes();
	signal(SIGPIPE, SIG_IGN);
	RUN_TEST(test_attach_root);
	RUN_TEST(test_sample_resolved);
	RUN_TEST(test_thread_names);
	RUN_TEST(test_fork_inherits);
	RUN_TEST(test_fork_real_child);
	RUN_TEST(test_exec);
	RUN_TEST(test_exec_python);
	RUN_TEST(test_exit);
	RUN_TEST(test_unknown_process);
	RUN_TEST(test_unreadable_frames);
	RUN_TEST(test_kernel_and_thread_state);
	RUN_TEST(test_pid_reuse);
	RUN_TEST(test_counted_samples);
	RUN_TEST(test_malformed);
	RUN_TEST(test_deep_stack);
	RUN_TEST(test_host_mode);
	RUN_TEST(test_host_end_waits_for_drains);
	RUN_TEST(test_gpu);
	return test_summary("session");
}
