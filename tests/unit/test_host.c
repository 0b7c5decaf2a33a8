/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * user/session/host.c: system-wide profiling (--all) without BPF.  The host
 * is driven through the callbacks it gives the session (struct
 * session_host), with a real session whose BPF side is a stand-in: the
 * filters on real processes (started here, and made grandchildren so that
 * they are not the loader's own), the output folder (made as the user,
 * refused when unusable), each ended image's profile written under its name
 * (PID, command made safe, a number for a later image), images with
 * nothing to show or forked only to exec left out, rotation past
 * --max-profiles, a failed write recorded, and index.json: its numbers,
 * order and warnings, read back by the view's parser.  Then a real Python
 * process found by a scan, recognised by the session, snapshotted while it
 * runs and ended with the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/types.h>

#include "testlib.h"
#include "abi.h"
#include "base/clock.h"
#include "base/creds.h"
#include "base/log.h"
#include "model/profile.h"
#include "session/host.h"
#include "session/session.h"
#include "target/python.h"
#include "view/hostindex.h"

/* PID_MAX_LIMIT is 4194304: no process has a PID above it. */
#define GONE_PID 5000000
#define MS 1000000ULL

static char tmpdir[] = "/tmp/host-test-XXXXXX";
static struct user_creds nobody;
static bool have_nobody;

/* ------------------------------------------------- the BPF stand-in */

struct fake_bpf {
	int tracked[16], ntracked;
	int python_pid;
};

static int fake_track(void *ctx, int tgid)
{
	struct fake_bpf *b = ctx;

	if (b->ntracked < 16)
		b->tracked[b->ntracked++] = tgid;
	return 0;
}

static int fake_untrack(void *ctx, int tgid)
{
	return 0;
}

static int fake_seed_threads(void *ctx, int tgid)
{
	return 1;
}

static int fake_set_python(void *ctx, int tgid, const struct py_walk_cfg *cfg, uint64_t gil_lo,
			   uint64_t gil_hi)
{
	((struct fake_bpf *)ctx)->python_pid = tgid;
	return 0;
}

static int fake_stats(void *ctx, uint64_t *out)
{
	memset(out, 0, STAT_MAX * sizeof(*out));
	return 0;
}

static int fake_prog_runtime(void *ctx, uint64_t *run_ns, uint64_t *run_cnt)
{
	*run_ns = *run_cnt = 0;
	return 0;
}

static bool tracked(const struct fake_bpf *b, int pid)
{
	for (int i = 0; i < b->ntracked; i++) {
		if (b->tracked[i] == pid)
			return true;
	}
	return false;
}

/* ------------------------------------------------ other processes */

/* A process that is not this one's child: a grandchild, its parent
 * (returned in *mid) waiting.  It names itself comm (prctl), runs as uid
 * (when root and uid != -1), then waits, or execs path with argv when
 * given. */
static pid_t spawn_other(const char *comm, uid_t uid, const char *path, char *const argv[],
			 pid_t *mid)
{
	int fds[2];
	pid_t pid = -1;

	*mid = -1;
	if (pipe(fds))
		return -1;
	fflush(NULL);
	*mid = fork();
	if (*mid == 0) {
		pid_t b;

		/* Gone with the test, whatever becomes of it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		b = fork();
		if (b == 0) {
			pid_t me = getpid();

			if (uid != (uid_t)-1 && geteuid() == 0 &&
			    (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
			     setresuid(uid, uid, uid)))
				_exit(2);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (comm)
				prctl(PR_SET_NAME, comm);
			if (write(fds[1], &me, sizeof(me)) != sizeof(me))
				_exit(3);
			if (path) {
				execv(path, argv);
				_exit(127);
			}
			for (;;)
				pause();
		}
		for (;;)
			pause();
	}
	close(fds[1]);
	if (*mid > 0 && read(fds[0], &pid, sizeof(pid)) != sizeof(pid))
		pid = -1;
	close(fds[0]);
	return pid;
}

static void stop_other(pid_t pid, pid_t mid)
{
	if (pid > 0)
		kill(pid, SIGKILL);
	if (mid > 0) {
		kill(mid, SIGKILL);
		waitpid(mid, NULL, 0);
	}
}

/* Waits until pid's comm is want (after its exec). */
static bool comm_is(pid_t pid, const char *want)
{
	char path[64], buf[64];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	for (i = 0; i < 400; i++) {
		FILE *f = fopen(path, "re");
		bool ok = false;

		if (f) {
			ok = fgets(buf, sizeof(buf), f) && (buf[strcspn(buf, "\n")] = '\0', 1) &&
			     !strcmp(buf, want);
			fclose(f);
		}
		if (ok)
			return true;
		usleep(5000);
	}
	return false;
}

/* ------------------------------------------------------ the fixture */

struct fixture {
	struct host *h;
	const struct session_host *sh;
	struct session *s;
	struct fake_bpf bpf;
	char dir[PATH_MAX];
};

/* A host writing into tmpdir/sub, and its session. */
static bool setup(struct fixture *f, struct host_opts *o, const char *sub)
{
	struct session_opts so = { .rate_hz = 1000, .ncpus = 1 };
	struct session_bpf b = {
		.track = fake_track,
		.untrack = fake_untrack,
		.seed_threads = fake_seed_threads,
		.set_python = fake_set_python,
		.stats = fake_stats,
		.prog_runtime = fake_prog_runtime,
	};

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "%s/%s", tmpdir, sub);
	o->dir = f->dir;
	o->start_mono = mono_ns() / 1e9;
	o->start_wall = (double)time(NULL);
	o->rate_hz = 997;
	f->h = host__new(o);
	CHECK(f->h != NULL);
	if (!f->h)
		return false;
	f->sh = host__session_host(f->h);
	so.host = f->sh;
	so.async_waits = o->async_waits;
	so.creds = o->creds;
	f->s = session__new(&so);
	CHECK(f->s != NULL);
	if (!f->s) {
		host__free(f->h);
		return false;
	}
	b.ctx = &f->bpf;
	session__set_bpf(f->s, &b);
	host__set_session(f->h, f->s);
	return true;
}

static void teardown(struct fixture *f)
{
	session__free(f->s);
	host__free(f->h);
}

static struct profile *python(struct fixture *f, int pid, int ppid, uint64_t start_ns)
{
	static struct py_proc pp = { .version_hex = 0x030b07f0,
				     .minor = 11,
				     .main_thread = 0x1234 };
	struct session_proc sp = { .pid = pid, .ppid = ppid, .start_ns = start_ns, .pp = &pp };

	return f->sh->python(f->sh->ctx, &sp);
}

/* n samples of cpu_ns each on no line (the profile then has no file whose
 * source the writer would read). */
static void add_samples(struct profile *p, uint32_t n, uint64_t cpu_ns)
{
	struct sample_in s = { .count = n,
			       .tgid = 1,
			       .tid = 1,
			       .cpu_ns = n * cpu_ns,
			       .where = WHERE_PYTHON,
			       .unattributed = UNATTR_NO_PYTHON_THREAD };

	profile__add(p, &s);
}

static void end(struct fixture *f, int pid, struct profile *p, enum session_end_why why,
		int exit_code, uint64_t ts_ns)
{
	struct session_end e = {
		.why = why, .exit_code = exit_code, .ts_ns = ts_ns, .profile = p, .maxrss_kb = 2048
	};

	f->sh->ended(f->sh->ctx, pid, &e);
}

static bool file_exists(const struct fixture *f, const char *fmt, int pid)
{
	char name[128], path[PATH_MAX + 128];

	snprintf(name, sizeof(name), fmt, pid);
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return !access(path, F_OK);
}

static struct json_object *read_json(const struct fixture *f, const char *name)
{
	char path[PATH_MAX + 128];

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	return json_object_from_file(path);
}

static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static bool has(struct json_object *o, const char *k)
{
	return o && json_object_object_get_ex(o, k, NULL);
}

/* The index's entry of pid (the n-th with that pid), or NULL. */
static struct json_object *entry_of(struct json_object *idx, int pid, int nth)
{
	struct json_object *procs = get(idx, "processes");
	size_t i;

	for (i = 0; procs && i < json_object_array_length(procs); i++) {
		struct json_object *e = json_object_array_get_idx(procs, i);

		if (json_object_get_int(get(e, "pid")) == pid && !nth--)
			return e;
	}
	return NULL;
}

static int64_t count_of(struct json_object *idx, const char *reason)
{
	return json_object_get_int64(get(get(idx, "not_profiled"), reason));
}

static bool warning_has(struct json_object *idx, const char *text)
{
	struct json_object *w = get(idx, "warnings");
	size_t i;

	for (i = 0; w && i < json_object_array_length(w); i++) {
		if (strstr(json_object_get_string(json_object_array_get_idx(w, i)), text))
			return true;
	}
	return false;
}

static bool near(double a, double b)
{
	return a > b - 1e-9 && a < b + 1e-9;
}

/* ------------------------------------------------------------ tests */

/* The output folder: made if missing (as the user under sudo), refused
 * when it is a file, has no parent, or the user may not write it; an
 * unknown user name for --uid is refused too. */
static void test_output_dir(void)
{
	static const char *const bad_uid[] = { "no-such-user-sbpf" };
	struct host_opts o = { 0 };
	char path[PATH_MAX + 32];
	struct host *h;
	struct stat st;
	int fd;

	log_set_level(-1);
	snprintf(path, sizeof(path), "%s/made", tmpdir);
	o.dir = path;
	h = host__new(&o);
	CHECK(h != NULL);
	CHECK(!stat(path, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755);
	host__free(h);
	/* Existing: fine, and nothing left in it by the check. */
	h = host__new(&o);
	CHECK(h != NULL);
	host__free(h);
	CHECK_EQ_INT(rmdir(path), 0);

	snprintf(path, sizeof(path), "%s/a-file", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	errno = 0;
	CHECK(host__new(&o) == NULL);
	CHECK_EQ_INT(errno, ENOTDIR);

	snprintf(path, sizeof(path), "%s/no/such/parent", tmpdir);
	errno = 0;
	CHECK(host__new(&o) == NULL);
	CHECK_EQ_INT(errno, ENOENT);

	snprintf(path, sizeof(path), "%s/uids", tmpdir);
	o.uids = bad_uid;
	o.nuids = 1;
	errno = 0;
	CHECK(host__new(&o) == NULL);
	CHECK_EQ_INT(errno, EINVAL);
	CHECK(access(path, F_OK) < 0); /* refused before anything is made */
	log_set_level(LOG_WARN);
}

/* Under sudo the folder is made as the user, and one the user may not
 * write is refused even though root could. */
static void test_output_dir_as_user(void)
{
	struct host_opts o = { .creds = &nobody };
	char open_dir[PATH_MAX + 32], path[PATH_MAX + 64];
	struct host *h;
	struct stat st;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to write as");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	snprintf(open_dir, sizeof(open_dir), "%s/open", tmpdir);
	CHECK_EQ_INT(mkdir(open_dir, 0777), 0);
	chmod(open_dir, 0777);
	snprintf(path, sizeof(path), "%s/out", open_dir);
	o.dir = path;
	h = host__new(&o);
	CHECK(h != NULL);
	CHECK(!stat(path, &st) && st.st_uid == nobody.uid && st.st_gid == nobody.gid);
	host__free(h);

	log_set_level(-1);
	snprintf(path, sizeof(path), "%s/roots", tmpdir);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	errno = 0;
	CHECK(host__new(&o) == NULL);
	CHECK_EQ_INT(errno, EACCES);
	snprintf(path, sizeof(path), "%s/roots/sub", tmpdir);
	errno = 0;
	CHECK(host__new(&o) == NULL);
	CHECK_EQ_INT(errno, EACCES);
	CHECK(access(path, F_OK) < 0);
	log_set_level(LOG_WARN);
}

/* Which processes are followed: never this one or what it starts; a
 * followed process's fork child always (unless no_follow), even gone;
 * then the lists (pid, name or argv[0]'s base name, user); the excluded
 * never.  Refusals by the filters are counted in the index. */
static void test_filters(void)
{
	char *daemon_argv[] = { "/opt/bin/my-daemon", "30", NULL };
	uid_t other_uid = geteuid() == 0 && have_nobody ? nobody.uid : (uid_t)-1;
	pid_t b_mid, c_mid, d_mid, b, c, d, child;
	char b_uid_num[16], b_uid_name[64];
	struct passwd *pw;
	struct fixture f;
	struct host_opts o = { 0 };
	struct json_object *idx;

	b = spawn_other("svc-one", other_uid, NULL, NULL, &b_mid);
	c = spawn_other("svc-two", (uid_t)-1, NULL, NULL, &c_mid);
	/* sleep, its argv[0] saying my-daemon. */
	d = spawn_other(NULL, (uid_t)-1, "/bin/sleep", daemon_argv, &d_mid);
	child = fork();
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	CHECK(b > 0 && c > 0 && d > 0 && child > 0);
	if (b <= 0 || c <= 0 || d <= 0 || child <= 0)
		goto out;
	CHECK(comm_is(d, "sleep"));
	CHECK(comm_is(b, "svc-one"));

	/* No list: any process, but this one and its own. */
	if (!setup(&f, &o, "filters-none"))
		goto out;
	CHECK(!f.sh->accept(f.sh->ctx, getpid(), 0));
	CHECK(!f.sh->accept(f.sh->ctx, b, getpid()));
	CHECK(!f.sh->accept(f.sh->ctx, child, 0));
	CHECK(f.sh->accept(f.sh->ctx, b, 0));
	CHECK(f.sh->accept(f.sh->ctx, c, 0));
	CHECK(!f.sh->accept(f.sh->ctx, GONE_PID, 0));
	CHECK(f.sh->accept(f.sh->ctx, GONE_PID, b));
	CHECK_EQ_INT(host__finish(f.h, 1), 0);
	idx = read_json(&f, "index.json");
	CHECK_EQ_INT(count_of(idx, "filtered"), 0);
	json_object_put(idx);
	teardown(&f);

	/* --pid: that process, and its children unless --no-follow;
	 * --exclude-pid wins. */
	{
		int pids[] = { b }, excl[] = { c };

		o = (struct host_opts){
			.pids = pids, .npids = 1, .exclude_pids = excl, .nexclude_pids = 1
		};
		if (!setup(&f, &o, "filters-pid"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, b, 0));
		CHECK(!f.sh->accept(f.sh->ctx, d, 0));
		CHECK(f.sh->accept(f.sh->ctx, GONE_PID, b));
		CHECK(!f.sh->accept(f.sh->ctx, c, b));
		CHECK(!f.sh->accept(f.sh->ctx, c, 0));
		CHECK_EQ_INT(host__finish(f.h, 1), 0);
		idx = read_json(&f, "index.json");
		CHECK_EQ_INT(count_of(idx, "filtered"), 3);
		CHECK_EQ_INT(json_object_get_int(
				     json_object_array_get_idx(get(get(idx, "filters"), "pid"), 0)),
			     b);
		CHECK_EQ_INT(json_object_get_int(json_object_array_get_idx(
				     get(get(idx, "filters"), "exclude_pid"), 0)),
			     c);
		json_object_put(idx);
		teardown(&f);

		o.no_follow = true;
		o.nexclude_pids = 0;
		if (!setup(&f, &o, "filters-nofollow"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, b, 0));
		CHECK(!f.sh->accept(f.sh->ctx, d, b));
		teardown(&f);
	}

	/* --comm: comm or argv[0]'s base name. */
	{
		static const char *const by_comm[] = { "svc-one" };
		static const char *const by_argv0[] = { "my-daemon" };
		static const char *const by_exe_comm[] = { "sleep" };

		o = (struct host_opts){ .comms = by_comm, .ncomms = 1 };
		if (!setup(&f, &o, "filters-comm"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, b, 0));
		CHECK(!f.sh->accept(f.sh->ctx, c, 0));
		CHECK(!f.sh->accept(f.sh->ctx, d, 0));
		teardown(&f);
		o = (struct host_opts){ .comms = by_argv0, .ncomms = 1 };
		if (!setup(&f, &o, "filters-argv0"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, d, 0));
		CHECK(!f.sh->accept(f.sh->ctx, b, 0));
		teardown(&f);
		o = (struct host_opts){ .comms = by_exe_comm, .ncomms = 1 };
		if (!setup(&f, &o, "filters-exe-comm"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, d, 0));
		CHECK(!f.sh->accept(f.sh->ctx, c, 0));
		teardown(&f);
	}

	/* --uid: a number or a name. */
	pw = getpwuid(other_uid == (uid_t)-1 ? geteuid() : other_uid);
	CHECK(pw != NULL);
	if (!pw)
		goto out;
	snprintf(b_uid_num, sizeof(b_uid_num), "%u", (unsigned)pw->pw_uid);
	snprintf(b_uid_name, sizeof(b_uid_name), "%s", pw->pw_name);
	{
		const char *by_num[] = { b_uid_num }, *by_name[] = { b_uid_name };
		static const char *const nobodys_uid[] = { "4000000" };

		o = (struct host_opts){ .uids = by_num, .nuids = 1 };
		if (!setup(&f, &o, "filters-uid-num"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, b, 0));
		/* c runs as this process: another user than b's when root. */
		CHECK(f.sh->accept(f.sh->ctx, c, 0) == (other_uid == (uid_t)-1));
		teardown(&f);
		o = (struct host_opts){ .uids = by_name, .nuids = 1 };
		if (!setup(&f, &o, "filters-uid-name"))
			goto out;
		CHECK(f.sh->accept(f.sh->ctx, b, 0));
		teardown(&f);
		o = (struct host_opts){ .uids = nobodys_uid, .nuids = 1 };
		if (!setup(&f, &o, "filters-uid-other"))
			goto out;
		CHECK(!f.sh->accept(f.sh->ctx, b, 0));
		CHECK(!f.sh->accept(f.sh->ctx, c, 0));
		teardown(&f);
	}
out:
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	stop_other(b, b_mid);
	stop_other(c, c_mid);
	stop_other(d, d_mid);
}

/* Ended images: a profile file each under its name, the index's numbers
 * and order; nothing to show, no file; a fork that only exec'ed, not
 * listed; processes that are not Python or not supported, counted or
 * listed with why; an end of another profile than the process's, ignored. */
static void test_profiles_and_index(void)
{
	const int gone1 = GONE_PID + 1, gone2 = GONE_PID + 2, gone3 = GONE_PID + 3,
		  gone4 = GONE_PID + 4;
	struct host_opts o = { 0 };
	struct profile *pb, *pc, *pe, *pb2, *p3, *p4, *mine;
	struct json_object *idx, *e, *doc, *procs;
	pid_t b_mid, c_mid, e_mid, b, c, pe_pid;
	struct host_index *hi;
	struct fixture f;
	uint64_t t0;
	char *text;
	size_t i;

	b = spawn_other("svc-one", (uid_t)-1, NULL, NULL, &b_mid);
	c = spawn_other("odd name!", (uid_t)-1, NULL, NULL, &c_mid);
	pe_pid = spawn_other("idle", (uid_t)-1, NULL, NULL, &e_mid);
	CHECK(b > 0 && c > 0 && pe_pid > 0);
	if (b <= 0 || c <= 0 || pe_pid <= 0 || !comm_is(c, "odd name!") || !comm_is(b, "svc-one"))
		goto out;
	if (!setup(&f, &o, "profiles"))
		goto out;
	t0 = mono_ns();
	pb = python(&f, b, 0, 0);
	pc = python(&f, c, 0, 0);
	pe = python(&f, pe_pid, 0, 0);
	CHECK(pb && pc && pe && pb != pc);
	if (!pb || !pc || !pe)
		goto free;
	add_samples(pb, 3, 10 * MS);
	add_samples(pc, 1, 50 * MS);

	/* Fork children of b: one that execs at once (a subprocess) is not
	 * listed; one that ran a while is, with b's names. */
	p3 = python(&f, gone3, b, t0);
	p4 = python(&f, gone4, b, t0);
	CHECK(p3 && p4);
	if (!p3 || !p4)
		goto free;
	add_samples(p3, 1, MS);
	add_samples(p4, 2, MS);
	end(&f, gone3, p3, END_EXEC, 0, t0 + 10 * MS);
	end(&f, gone4, p4, END_EXEC, 0, t0 + 1000 * MS);
	CHECK(!file_exists(&f, "%d-svc-one.json", gone3));
	CHECK(file_exists(&f, "%d-svc-one.json", gone4));

	/* Not this process's profile: ignored, b stays live. */
	mine = profile__new(&(struct profile_filter){ .profile_all = true });
	add_samples(mine, 1, MS);
	end(&f, b, mine, END_EXIT, 0, mono_ns());
	profile__free(mine);
	CHECK(!file_exists(&f, "%d-svc-one.json", b));

	end(&f, b, pb, END_EXIT, 3 << 8, mono_ns());
	end(&f, c, pc, END_EXIT, SIGKILL, mono_ns());
	end(&f, pe_pid, pe, END_EXIT, 0, mono_ns());
	CHECK(file_exists(&f, "%d-svc-one.json", b));
	/* The command's name made safe for a file name. */
	CHECK(file_exists(&f, "%d-odd_name_.json", c));
	CHECK(!file_exists(&f, "%d-idle.json", pe_pid));
	/* A later image of b: a file of its own. */
	pb2 = python(&f, b, 0, 0);
	CHECK(pb2 != NULL);
	if (pb2) {
		add_samples(pb2, 1, MS);
		end(&f, b, pb2, END_EXEC, 0, mono_ns());
	}
	CHECK(file_exists(&f, "%d-svc-one-2.json", b));
	CHECK(file_exists(&f, "%d-svc-one.json", b));

	/* The profile written is a Scalene document. */
	{
		char name[64];

		snprintf(name, sizeof(name), "%d-svc-one.json", b);
		doc = read_json(&f, name);
		CHECK(doc != NULL);
		CHECK(has(doc, "files") && has(doc, "elapsed_time_sec"));
		json_object_put(doc);
	}

	f.sh->skipped(f.sh->ctx, gone1, "Python 3.8 is not supported");
	f.sh->skipped(f.sh->ctx, gone2, NULL);
	f.sh->skipped(f.sh->ctx, gone2, NULL);

	CHECK_EQ_INT(host__finish(f.h, 2.5), 0);
	idx = read_json(&f, "index.json");
	CHECK(idx != NULL);
	CHECK_EQ_INT(json_object_get_int(get(idx, "scalene_bpf_index")), 1);
	CHECK(near(json_object_get_double(get(idx, "elapsed_time_sec")), 2.5));
	CHECK(near(json_object_get_double(get(idx, "sampling_rate_hz")), 997));
	CHECK_EQ_INT(count_of(idx, "not_python"), 2);
	CHECK_EQ_INT(count_of(idx, "unsupported"), 1);
	CHECK_EQ_INT(count_of(idx, "rotated_out"), 0);
	CHECK(get(idx, "memory") == NULL && has(idx, "memory"));

	e = entry_of(idx, b, 0);
	CHECK(e != NULL);
	CHECK_EQ_STR(json_object_get_string(get(e, "comm")), "svc-one");
	CHECK_EQ_STR(json_object_get_string(get(e, "python")), "3.11.7");
	CHECK_EQ_INT(json_object_get_int(get(e, "samples")) +
			     json_object_get_int(get(entry_of(idx, b, 1), "samples")),
		     4);
	/* b's two images: exit code 3 on the one that exited. */
	for (i = 0; i < 2; i++) {
		e = entry_of(idx, b, (int)i);
		if (json_object_get_boolean(get(e, "exited"))) {
			CHECK_EQ_INT(json_object_get_int(get(e, "exit_code")), 3);
			CHECK(!has(e, "exit_signal"));
			CHECK_EQ_STR(json_object_get_string(get(e, "ended")), "exit");
			CHECK(near(json_object_get_double(get(e, "cpu_s")), 0.03));
			CHECK(near(json_object_get_double(get(e, "python_s")), 0.03));
			CHECK(near(json_object_get_double(get(e, "peak_rss_mb")), 2.0));
		} else {
			CHECK_EQ_STR(json_object_get_string(get(e, "ended")), "exec");
		}
		/* No await attribution: no await_s. */
		CHECK(!has(e, "await_s"));
	}
	e = entry_of(idx, c, 0);
	CHECK_EQ_INT(json_object_get_int(get(e, "exit_signal")), SIGKILL);
	CHECK(!has(e, "exit_code"));
	e = entry_of(idx, pe_pid, 0);
	CHECK(e && get(e, "profile") == NULL);
	CHECK(e && strstr(json_object_get_string(get(e, "not_profiled")), "no samples"));
	e = entry_of(idx, gone1, 0);
	CHECK_EQ_STR(json_object_get_string(get(e, "not_profiled")), "Python 3.8 is not supported");
	/* Gone when looked at: its user is not known, and not made up. */
	CHECK(e && !has(e, "uid"));
	CHECK(entry_of(idx, gone2, 0) == NULL);
	CHECK(entry_of(idx, gone3, 0) == NULL);
	e = entry_of(idx, gone4, 0);
	CHECK_EQ_STR(json_object_get_string(get(e, "comm")), "svc-one");
	CHECK_EQ_INT(json_object_get_int(get(e, "ppid")), b);

	/* Profiled first, by CPU time. */
	procs = get(idx, "processes");
	CHECK_EQ_INT(json_object_array_length(procs), 6);
	CHECK_EQ_INT(json_object_get_int(get(json_object_array_get_idx(procs, 0), "pid")), c);
	for (i = 1; i < json_object_array_length(procs); i++) {
		struct json_object *a = json_object_array_get_idx(procs, i - 1);
		struct json_object *n = json_object_array_get_idx(procs, i);

		CHECK(get(a, "profile") || !get(n, "profile"));
		if (get(a, "profile") && get(n, "profile"))
			CHECK(json_object_get_double(get(a, "cpu_s")) >=
			      json_object_get_double(get(n, "cpu_s")));
	}

	/* The view reads it as written. */
	text = strdup(json_object_to_json_string(idx));
	hi = text ? host_index__parse(text, strlen(text), "index.json", stderr) : NULL;
	CHECK(hi != NULL);
	if (hi) {
		CHECK_EQ_INT(hi->nprocs, 6);
		CHECK_EQ_INT(hi->nprofiled, 4);
		CHECK_EQ_INT(hi->procs[0].pid, c);
		CHECK(hi->procs[0].profile != NULL);
		for (i = 0; i < hi->nprocs; i++) {
			if (hi->procs[i].pid == gone1)
				CHECK_EQ_INT(hi->procs[i].uid, -1);
			if (hi->procs[i].pid == b)
				CHECK_EQ_INT(hi->procs[i].uid, geteuid());
		}
		host_index__free(hi);
	}
	free(text);
	json_object_put(idx);
free:
	teardown(&f);
out:
	stop_other(b, b_mid);
	stop_other(c, c_mid);
	stop_other(pe_pid, e_mid);
}

/* What the live view sees: running processes with their profile, ended
 * ones with their numbers, ended ones with nothing, not at all. */
struct seen {
	int pid[8];
	const struct profile *p[8];
	double total_s[8];
	int n;
};

static void each(void *ctx, const struct host_proc_info *pi)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		s->pid[s->n] = pi->pid;
		s->p[s->n] = pi->profile;
		s->total_s[s->n++] = pi->total_s;
	}
}

static void test_each_profiled(void)
{
	struct host_opts o = { 0 };
	struct profile *p1, *p2, *p3;
	struct seen s = { 0 };
	struct fixture f;

	if (!setup(&f, &o, "each"))
		return;
	p1 = python(&f, GONE_PID + 1, 0, 0);
	p2 = python(&f, GONE_PID + 2, 0, 0);
	p3 = python(&f, GONE_PID + 3, 0, 0);
	CHECK(p1 && p2 && p3);
	if (!p1 || !p2 || !p3)
		goto out;
	add_samples(p1, 2, 20 * MS);
	end(&f, GONE_PID + 1, p1, END_EXIT, 0, mono_ns());
	end(&f, GONE_PID + 3, p3, END_EXIT, 0, mono_ns());
	host__each_profiled(f.h, each, &s);
	CHECK_EQ_INT(s.n, 2);
	CHECK(s.n == 2 && s.pid[0] == GONE_PID + 1 && s.p[0] == NULL && near(s.total_s[0], 0.04));
	CHECK(s.n == 2 && s.pid[1] == GONE_PID + 2 && s.p[1] == p2);
out:
	teardown(&f);
}

/* Past --max-profiles, the oldest profile of an ended process goes: its
 * file removed, its numbers kept in the index, which says so; profiles
 * written at the end of the run (still running) are not counted. */
static void test_rotation(void)
{
	struct host_opts o = { .max_profiles = 2 };
	struct json_object *idx, *e;
	struct profile *p;
	struct fixture f;
	int i;

	if (!setup(&f, &o, "rotation"))
		return;
	for (i = 1; i <= 3; i++) {
		p = python(&f, GONE_PID + i, 0, 0);
		CHECK(p != NULL);
		if (!p)
			goto out;
		add_samples(p, (uint32_t)i, MS);
		end(&f, GONE_PID + i, p, END_EXIT, 0, mono_ns());
	}
	CHECK(!file_exists(&f, "%d-process.json", GONE_PID + 1));
	CHECK(file_exists(&f, "%d-process.json", GONE_PID + 2));
	CHECK(file_exists(&f, "%d-process.json", GONE_PID + 3));
	p = python(&f, GONE_PID + 4, 0, 0);
	if (p) {
		add_samples(p, 1, MS);
		end(&f, GONE_PID + 4, p, END_RUNNING, 0, mono_ns());
	}
	CHECK(file_exists(&f, "%d-process.json", GONE_PID + 2));
	CHECK(file_exists(&f, "%d-process.json", GONE_PID + 4));
	CHECK_EQ_INT(host__finish(f.h, 1), 0);
	idx = read_json(&f, "index.json");
	CHECK_EQ_INT(count_of(idx, "rotated_out"), 1);
	CHECK(warning_has(idx, "removed"));
	e = entry_of(idx, GONE_PID + 1, 0);
	CHECK(e && get(e, "profile") == NULL);
	CHECK(e && strstr(json_object_get_string(get(e, "not_profiled")), "--max-profiles"));
	CHECK(e && json_object_get_int(get(e, "samples")) == 1);
	e = entry_of(idx, GONE_PID + 4, 0);
	CHECK_EQ_STR(json_object_get_string(get(e, "ended")), "running");
	json_object_put(idx);
out:
	teardown(&f);
}

/* A profile that cannot be written (the folder became read-only): the
 * run goes on, the index lists what was lost and why. */
static void test_write_failure(void)
{
	struct host_opts o = { 0 };
	struct json_object *idx, *e;
	struct profile *p;
	struct fixture f;

	if (geteuid() == 0 && !have_nobody)
		SKIP_TEST("root, and no user nobody here to be refused");
	if (geteuid() == 0)
		o.creds = &nobody;
	if (geteuid() == 0) {
		char open_dir[PATH_MAX];

		snprintf(open_dir, sizeof(open_dir), "%s/wf", tmpdir);
		CHECK_EQ_INT(mkdir(open_dir, 0777), 0);
		chmod(open_dir, 0777);
	} else {
		char d[PATH_MAX];

		snprintf(d, sizeof(d), "%s/wf", tmpdir);
		CHECK_EQ_INT(mkdir(d, 0755), 0);
	}
	if (!setup(&f, &o, "wf/out"))
		return;
	p = python(&f, GONE_PID + 1, 0, 0);
	CHECK(p != NULL);
	if (!p)
		goto out;
	add_samples(p, 1, MS);
	CHECK_EQ_INT(chmod(f.dir, 0555), 0);
	log_set_level(-1);
	end(&f, GONE_PID + 1, p, END_EXIT, 0, mono_ns());
	log_set_level(LOG_WARN);
	CHECK_EQ_INT(chmod(f.dir, 0755), 0);
	CHECK(!file_exists(&f, "%d-process.json", GONE_PID + 1));
	CHECK_EQ_INT(host__finish(f.h, 1), 0);
	idx = read_json(&f, "index.json");
	CHECK_EQ_INT(count_of(idx, "write_failed"), 1);
	CHECK(warning_has(idx, "could not be written"));
	e = entry_of(idx, GONE_PID + 1, 0);
	CHECK(e && get(e, "profile") == NULL);
	CHECK(e && strstr(json_object_get_string(get(e, "not_profiled")),
			  "could not be written: Permission denied"));
	json_object_put(idx);
out:
	teardown(&f);
}

/* Under sudo the files are the user's. */
static void test_files_are_users(void)
{
	struct host_opts o = { .creds = &nobody };
	char open_dir[PATH_MAX], path[PATH_MAX + 64];
	struct profile *p;
	struct fixture f;
	struct stat st;

	if (geteuid() != 0)
		SKIP_TEST("not root: no other user to write as");
	if (!have_nobody)
		SKIP_TEST("no user nobody here");
	snprintf(open_dir, sizeof(open_dir), "%s/users", tmpdir);
	CHECK_EQ_INT(mkdir(open_dir, 0777), 0);
	chmod(open_dir, 0777);
	if (!setup(&f, &o, "users/out"))
		return;
	p = python(&f, GONE_PID + 1, 0, 0);
	if (p) {
		add_samples(p, 1, MS);
		end(&f, GONE_PID + 1, p, END_EXIT, 0, mono_ns());
	}
	CHECK_EQ_INT(host__finish(f.h, 1), 0);
	snprintf(path, sizeof(path), "%s/%d-process.json", f.dir, GONE_PID + 1);
	CHECK(!stat(path, &st) && st.st_uid == nobody.uid && (st.st_mode & 0777) == 0644);
	snprintf(path, sizeof(path), "%s/index.json", f.dir);
	CHECK(!stat(path, &st) && st.st_uid == nobody.uid);
	teardown(&f);
}

/* A real Python process: found by a scan (the filters take it), the
 * session recognises it, its samples reach its profile, a snapshot writes
 * it while it runs (with its await time: await attribution is on), the end
 * of the run writes it as running, with the session's facts. */
static void test_scan_snapshot_end(void)
{
	const char *python3 = "/usr/bin/python3.11";
	char *argv[] = { (char *)python3, "-c", "import time; time.sleep(60)", NULL };
	struct host_opts o = { 0 };
	struct json_object *idx, *e, *doc;
	struct frame_ref fr[1];
	struct sample_event ev;
	struct seen s = { 0 };
	struct fixture f;
	pid_t mid, py;
	int pids[1], i;

	if (access(python3, X_OK))
		SKIP_TEST("%s not found", python3);
	py = spawn_other(NULL, (uid_t)-1, python3, argv, &mid);
	CHECK(py > 0);
	if (py <= 0 || !comm_is(py, "python3.11"))
		goto out;
	pids[0] = py;
	o.pids = pids;
	o.npids = 1;
	o.async_waits = true;
	if (!setup(&f, &o, "scan"))
		goto out;
	CHECK_EQ_INT(host__scan(f.h), 1);
	CHECK(tracked(&f.bpf, py));
	for (i = 0; i < 400 && !s.n; i++) {
		session__tick(f.s, mono_ns());
		host__each_profiled(f.h, each, &s);
		if (!s.n)
			usleep(5000);
	}
	CHECK_EQ_INT(s.n, 1);
	if (s.n != 1)
		goto free;
	CHECK(s.pid[0] == py && s.p[0] != NULL);
	CHECK_EQ_INT(f.bpf.python_pid, py);
	memset(&ev, 0, sizeof(ev));
	ev.hdr.type = EV_SAMPLE;
	ev.hdr.tgid = py;
	ev.tid = py;
	ev.mode = MODE_USER;
	ev.status = WALK_OK;
	ev.ts = mono_ns();
	ev.cpu_ns = 4 * MS;
	ev.syscall_nr = -1;
	snprintf((char *)ev.comm, sizeof(ev.comm), "python3.11");
	CHECK_EQ_INT(session__handle(f.s, &ev, SAMPLE_HDR_SIZE), 0);
	CHECK_EQ_INT(profile__samples(s.p[0]), 1);
	/* A task's wait, as the await reader would hand it. */
	fr[0] = (struct frame_ref){ profile__intern((struct profile *)s.p[0], "svc.py"),
				    profile__intern((struct profile *)s.p[0], "serve"), 1, 3 };
	profile__add_await(
		(struct profile *)s.p[0],
		&(struct await_in){
			.snapshot = 1, .frames = fr, .nframes = 1, .ns = 1.5e9, .concurrency = 1 });

	CHECK_EQ_INT(host__snapshot(f.h, 0.5), 0);
	CHECK(file_exists(&f, "%d-python3.11.json", py));
	idx = read_json(&f, "index.json");
	e = entry_of(idx, py, 0);
	CHECK(e != NULL);
	CHECK(e && !has(e, "ended"));
	CHECK(e && json_object_get_int(get(e, "samples")) == 1);
	CHECK(e && json_object_get_double(get(e, "peak_rss_mb")) > 0);
	CHECK(e && get(e, "profile") != NULL);
	CHECK(e && near(json_object_get_double(get(e, "await_s")), 1.5));
	json_object_put(idx);

	session__end_all(f.s);
	CHECK_EQ_INT(host__finish(f.h, 1), 0);
	idx = read_json(&f, "index.json");
	e = entry_of(idx, py, 0);
	CHECK_EQ_STR(json_object_get_string(get(e, "ended")), "running");
	CHECK(e && !json_object_get_boolean(get(e, "exited")));
	json_object_put(idx);
	{
		char name[64];

		snprintf(name, sizeof(name), "%d-python3.11.json", py);
		doc = read_json(&f, name);
		CHECK(doc != NULL);
		CHECK_EQ_INT(
			json_object_get_int(get(get(get(doc, "scalene_bpf"), "process"), "pid")),
			py);
		CHECK_EQ_STR(json_object_get_string(
				     get(get(get(doc, "scalene_bpf"), "process"), "ended")),
			     "running");
		json_object_put(doc);
	}
free:
	teardown(&f);
out:
	stop_other(py, mid);
}

int main(void)
{
	char cmd[PATH_MAX + 16];
	struct passwd *pw = getpwnam("nobody");
	int rc;

	umask(022);
	if (pw) {
		have_nobody = true;
		nobody.drop = true;
		nobody.uid = pw->pw_uid;
		nobody.gid = pw->pw_gid;
		nobody.groups[0] = pw->pw_gid;
		nobody.ngroups = 1;
		snprintf(nobody.name, sizeof(nobody.name), "nobody");
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	chmod(tmpdir, 0755);
	RUN_TEST(test_output_dir);
	RUN_TEST(test_output_dir_as_user);
	RUN_TEST(test_filters);
	RUN_TEST(test_profiles_and_index);
	RUN_TEST(test_each_profiled);
	RUN_TEST(test_rotation);
	RUN_TEST(test_write_failure);
	RUN_TEST(test_files_are_users);
	RUN_TEST(test_scan_snapshot_end);
	rc = test_summary("host");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
