// SPDX-License-Identifier: BSD-2-Clause
/* The allocation sampler put into a running interpreter (meminject.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/creds.h"
#include "base/log.h"
#include "base/memread.h"
#include "base/procmaps.h"
#include "model/facts.h"
#include "sampler/sampler.h"
#include "session/meminject.h"
#include "target/pending_call.h"
#include "target/python.h"
#include "target/remote_exec.h"

#define BEAT_NS (250 * 1000000ull)  /* the heartbeat's period */
#define STALE_MS 3000		    /* the sampler's wait for a beat, then it detaches */
#define SLOW_NS (2 * 1000000000ull) /* no answer by then: said once */
/* For the allocators to be put back: the sampler's watcher sees the word
 * within 0.1 s and asks the main thread; if that is blocked in C, it takes
 * the GIL itself 1 s later. */
#define DETACH_WAIT_NS (1500 * 1000000ull)
#define STATUS_MAX 512

static const char *const script_name = "attach.py", *const status_name = "status";

static void unlink_all(struct meminject *m);
static void sleep_ms(int ms);

struct meminject {
	int pid;
	const struct py_proc *pp;
	uint64_t sample_bytes;
	char root[64];	       /* /proc/PID/root: the process's view of files */
	char dir[PATH_MAX];    /* the directory, in the process's view */
	char lib[PATH_MAX];    /* the copy of the library, in ours */
	char dlopen[PATH_MAX]; /* the name the script loads it by, in the process's view */
	bool lib_made, script_made, status_made, dir_made;
	uint64_t requested_ns, answered_ns, beat_ns, ended_ns;
	bool requested, answered, attached, slow_said;
	uint64_t state_addr, beat;
	uint32_t attach_state; /* the sampler's, last read */
	/* The sampler's counts when it attached and at the end: a copy
	 * attached before (loaded_before) counts on from there. */
	struct scalene_bpf_sampler_state at_start, at_end;
	bool have_end;
	struct pending_call *pc; /* 3.9-3.13's request, until it has run */
	char outcome[32];	 /* of the detach */
	char why[STATUS_MAX];
};

/* path in the process's view, as this process reaches it. */
static int ours(const struct meminject *m, const char *path, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s%s", m->root, path);

	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

static int in_dir(const struct meminject *m, const char *name, bool host, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s%s/%s", host ? m->root : "", m->dir, name);

	return len < 0 || (size_t)len >= n ? -ENAMETOOLONG : 0;
}

/* A directory of ours in the first of the process's temporary directories
 * whose file system lets it map code: root's, readable by all, writable by
 * none but root, so the process can load what is there and change none of
 * it. */
static int make_dir(struct meminject *m, char *why, size_t whylen)
{
	static const char *const bases[] = { "/tmp", "/var/tmp", "/dev/shm" };
	char host[PATH_MAX];
	struct statvfs vfs;
	uint64_t r = 0;
	size_t i;
	int err = -ENOENT;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		snprintf(m->dir, sizeof(m->dir), "%s/scalene-bpf-attach.%d.%016llx", bases[i],
			 (int)getpid(), (unsigned long long)r);
		err = ours(m, bases[i], host, sizeof(host));
		if (err)
			break;
		if (statvfs(host, &vfs)) {
			err = -errno;
			continue;
		}
		if (vfs.f_flag & ST_NOEXEC) {
			err = -EACCES;
			continue;
		}
		err = ours(m, m->dir, host, sizeof(host));
		if (!err && mkdir(host, 0700))
			err = -errno;
		if (!err && chmod(host, 0755))
			err = -errno;
		if (!err) {
			m->dir_made = true;
			return 0;
		}
	}
	snprintf(why, whylen,
		 "failed to make a directory the process can load code from in its /tmp, "
		 "/var/tmp or /dev/shm: %s",
		 strerror(-err));
	return err;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			err = -EIO;
			break;
		}
	}
	if (n < 0)
		err = -errno;
	if (fchmod(out, 0644) && !err)
		err = -errno;
	if (close(out) && !err)
		err = -errno;
	close(in);
	return err;
}

/* A copy put in by an earlier attach (its file deleted, its hooks out):
 * loaded again by the name it was loaded by, which the dynamic loader finds
 * among those loaded before it looks at any file, and probed through the
 * process's own reference to the file.  1 when found, 0 when not. */
static int loaded_before(struct meminject *m)
{
	static const char mark[] = "/scalene-bpf-attach.";
	struct procmaps *maps = procmaps__load(m->pid);
	const struct map_entry *e;
	size_t i, n, len;
	int found = 0;

	if (!maps)
		return 0;
	for (i = 0; (e = procmaps__get(maps, i)) && !found; i++) {
		const char *base = strrchr(e->path, '/');

		if (!base || !strstr(e->path, mark) || e->offset)
			continue;
		len = strlen(e->path) - (e->deleted ? strlen(" (deleted)") : 0);
		n = strlen(SCALENE_BPF_SAMPLER_SONAME);
		if ((size_t)(e->path + len - base - 1) != n ||
		    strncmp(base + 1, SCALENE_BPF_SAMPLER_SONAME, n) || len >= sizeof(m->dlopen))
			continue;
		memcpy(m->dlopen, e->path, len);
		m->dlopen[len] = '\0';
		snprintf(m->lib, sizeof(m->lib), "/proc/%d/map_files/%llx-%llx", m->pid,
			 (unsigned long long)e->start, (unsigned long long)e->end);
		found = 1;
	}
	procmaps__free(maps);
	return found;
}

/* The script: everything it does is caught and said in the status file,
 * never printed in the process; a Ctrl-C that lands in it is handed back to
 * the main thread. */
static int write_script(struct meminject *m, const char *path)
{
	char status[PATH_MAX];
	int err, fd;
	FILE *f;

	if (strpbrk(m->dlopen, "'\\\n"))
		return -EINVAL;
	err = in_dir(m, status_name, false, status, sizeof(status));
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	/* Paths made here hold no quote or backslash (make_dir); one found in
	 * the maps was checked above. */
	fprintf(f,
		"# scalene-bpf: the allocation sampler, attached to this process\n"
		"def _scalene_bpf_attach():\n"
		"    with open('%s', 'w') as status:\n"
		"        try:\n"
		"            import ctypes\n"
		"            lib = ctypes.PyDLL('%s')\n"
		"            attach = lib.scalene_bpf_sampler_attach\n"
		"            attach.restype = ctypes.c_int\n"
		"            attach.argtypes = (ctypes.c_uint64, ctypes.c_uint32)\n"
		"            rc = attach(%llu, %u)\n"
		"            state = ctypes.addressof(ctypes.c_char.in_dll(lib, '%s'))\n"
		"            msg = 'ok %%d %%x\\n' %% (rc, state)\n"
		"        except BaseException as e:\n"
		"            msg = 'error %%s: %%s\\n' %% (type(e).__name__, str(e)[:300])\n"
		"            if isinstance(e, KeyboardInterrupt):\n"
		"                __import__('_thread').interrupt_main()\n"
		"        status.write(msg)\n"
		"_scalene_bpf_attach()\n",
		status, m->dlopen, (unsigned long long)m->sample_bytes, STALE_MS,
		SCALENE_BPF_SAMPLER_STATE_SYM);
	if (fclose(f))
		return -errno;
	return 0;
}

/* The answer is written by the process as its user: the file is made for
 * it, so that it can write nothing else here. */
static int make_status(struct meminject *m, const char *path)
{
	struct proc_ids ids;
	int err, fd;

	err = creds_of_process(m->pid, &ids);
	if (err)
		return err;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fchown(fd, ids.fsuid, ids.fsgid))
		err = -errno;
	close(fd);
	return err;
}

/* 3.14+ runs a script sent from outside; before, a pending call does
 * (target/pending_call.h).  A 3.14 that refuses remote execution is not
 * asked the older way: the refusal is its owner's choice. */
static bool by_pending_call(const struct py_proc *pp)
{
	return pp->minor < 14;
}

static int can_request(const struct py_proc *pp, char *why, size_t whylen)
{
	return by_pending_call(pp) ? pending_call__check(pp, why, whylen)
				   : remote_exec__check(pp, why, whylen);
}

struct meminject *meminject__new(const struct meminject_opts *o, char *why, size_t whylen)
{
	struct meminject *m = calloc(1, sizeof(*m));
	char path[PATH_MAX];
	int err;

	if (!m)
		return NULL;
	m->pid = o->pp->pid;
	m->pp = o->pp;
	m->sample_bytes = o->sample_bytes;
	snprintf(m->root, sizeof(m->root), "/proc/%d/root", m->pid);
	err = can_request(o->pp, why, whylen);
	if (!err)
		err = make_dir(m, why, whylen);
	if (err)
		goto fail;
	if (!loaded_before(m)) {
		err = in_dir(m, SCALENE_BPF_SAMPLER_SONAME, true, m->lib, sizeof(m->lib))
			      ?: in_dir(m, SCALENE_BPF_SAMPLER_SONAME, false, m->dlopen,
					sizeof(m->dlopen));
		if (!err)
			err = copy_file(o->sampler, m->lib);
		m->lib_made = !err;
	}
	if (!err)
		err = in_dir(m, script_name, true, path, sizeof(path));
	if (!err)
		err = write_script(m, path);
	m->script_made = !err;
	if (!err)
		err = in_dir(m, status_name, true, path, sizeof(path));
	if (!err)
		err = make_status(m, path);
	m->status_made = !err;
	if (err) {
		snprintf(why, whylen, "failed to write the sampler and its script into %s%s: %s",
			 m->root, m->dir, strerror(-err));
		goto fail;
	}
	return m;
fail:
	meminject__free(m);
	errno = -err;
	return NULL;
}

const char *meminject__library(const struct meminject *m)
{
	return m->lib;
}

/* A queue being emptied, or a request of another's about to be taken, is
 * busy for microseconds to milliseconds: asked again for up to a second. */
#define BUSY_TRIES 100
#define BUSY_WAIT_MS 10

int meminject__start(struct meminject *m, char *why, size_t whylen)
{
	char script[PATH_MAX];
	int err = in_dir(m, script_name, false, script, sizeof(script)), i;

	for (i = 0; !err && i < BUSY_TRIES; i++) {
		if (by_pending_call(m->pp))
			err = pending_call__request(m->pp, script, &m->pc, why, whylen);
		else
			err = remote_exec__request(m->pp, script, why, whylen);
		if (err != -EBUSY)
			break;
		err = 0;
		sleep_ms(BUSY_WAIT_MS);
	}
	if (!err && i == BUSY_TRIES)
		err = -EBUSY;
	if (err)
		return err;
	m->requested = true;
	m->requested_ns = mono_ns();
	return 0;
}

#define STATE_FIELD(f) offsetof(struct scalene_bpf_sampler_state, f)

/* The script's answer: "ok RC ADDR" or "error TEXT".  Written by the
 * process: read as untrusted, and the state block it names is checked. */
static void read_answer(struct meminject *m, uint64_t now)
{
	char path[PATH_MAX], buf[STATUS_MAX];
	unsigned long long addr;
	uint32_t magic = 0;
	ssize_t n;
	int rc, fd;

	if (in_dir(m, status_name, true, path, sizeof(path)))
		return;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[n - 1] != '\n')
		return;
	buf[n - 1] = '\0';
	m->answered = true;
	m->answered_ns = now;
	/* The call has run: the bytes its text took are put back. */
	pending_call__end(m->pc);
	m->pc = NULL;
	/* The process has mapped the library or never will: nothing is left
	 * in its /tmp, even if this profiler is killed next. */
	unlink_all(m);
	if (sscanf(buf, "ok %d %llx", &rc, &addr) == 2 && rc == 0 &&
	    !mem_read_u32(m->pid, addr + STATE_FIELD(magic), &magic) &&
	    magic == SCALENE_BPF_SAMPLER_MAGIC) {
		m->attached = true;
		m->state_addr = addr;
		if (mem_read(m->pid, addr, &m->at_start, sizeof(m->at_start)))
			memset(&m->at_start, 0, sizeof(m->at_start));
		pr_info("memory: the sampler is attached to process %d, %.0f ms after the "
			"request\n",
			m->pid, (now - m->requested_ns) / 1e6);
		return;
	}
	if (sscanf(buf, "ok %d", &rc) == 1 && rc < 0)
		snprintf(m->why, sizeof(m->why), "the sampler refused to attach: %s",
			 rc == -EALREADY ? "it is already there (preloaded, or attached by "
					   "another profiler)"
					 : strerror(-rc));
	else
		snprintf(m->why, sizeof(m->why), "the script failed in the process: %.300s", buf);
	pr_warn("memory: process %d was not profiled for memory: %s\n", m->pid, m->why);
}

void meminject__tick(struct meminject *m, uint64_t now)
{
	if (!m || !m->requested || m->ended_ns)
		return;
	if (!m->answered) {
		read_answer(m, now);
		if (!m->answered && !m->slow_said && now - m->requested_ns > SLOW_NS) {
			m->slow_said = true;
			pr_warn("memory: process %d's main thread has not run Python code since it "
				"was asked to load the sampler; memory is profiled once it does\n",
				m->pid);
		}
		return;
	}
	if (!m->attached || now - m->beat_ns < BEAT_NS)
		return;
	m->beat++;
	m->beat_ns = now;
	mem_write(m->pid, m->state_addr + STATE_FIELD(attach_beat), &m->beat, sizeof(m->beat));
}

int meminject__due_ms(const struct meminject *m, uint64_t now, int max_ms)
{
	uint64_t next;

	/* Nothing to do: not asked, over, or answered without attaching. */
	if (!m || !m->requested || m->ended_ns || (m->answered && !m->attached))
		return max_ms;
	next = m->answered ? m->beat_ns + BEAT_NS : now + 50 * 1000000ull;
	if (next <= now)
		return 0;
	return (next - now) / 1000000 < (uint64_t)max_ms ? (int)((next - now) / 1000000) : max_ms;
}

static void unlink_all(struct meminject *m)
{
	const struct {
		bool *made;
		const char *name;
	} files[] = {
		{ &m->lib_made, SCALENE_BPF_SAMPLER_SONAME },
		{ &m->script_made, script_name },
		{ &m->status_made, status_name },
	};
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (*files[i].made && !in_dir(m, files[i].name, true, path, sizeof(path)))
			unlink(path);
		*files[i].made = false;
	}
	if (m->dir_made && !ours(m, m->dir, path, sizeof(path)))
		rmdir(path);
	m->dir_made = false;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Asks the sampler to put the allocators back, and waits a little for it. */
static void detach(struct meminject *m)
{
	uint32_t ctl = SBS_CTL_DETACH, st = 0;
	uint64_t until = mono_ns() + DETACH_WAIT_NS;

	if (mem_write(m->pid, m->state_addr + STATE_FIELD(attach_ctl), &ctl, sizeof(ctl))) {
		snprintf(m->outcome, sizeof(m->outcome), "gone");
		return;
	}
	while (mono_ns() < until) {
		if (mem_read_u32(m->pid, m->state_addr + STATE_FIELD(attach_state), &st))
			break;
		if (st & (SBS_AT_RESTORED | SBS_AT_COVERED))
			break;
		/* The sampler's thread asks the main thread with a pending
		 * call, which 3.9-3.12 do not flag when another thread adds
		 * it: the flag is tripped from here. */
		if (by_pending_call(m->pp))
			pending_call__nudge(m->pp);
		sleep_ms(10);
	}
	m->attach_state = st;
	m->have_end = !mem_read(m->pid, m->state_addr, &m->at_end, sizeof(m->at_end)) &&
		      m->at_end.magic == SCALENE_BPF_SAMPLER_MAGIC;
	if (st & SBS_AT_RESTORED)
		snprintf(m->outcome, sizeof(m->outcome), "restored");
	else if (st & SBS_AT_COVERED)
		snprintf(m->outcome, sizeof(m->outcome), "covered");
	else
		snprintf(m->outcome, sizeof(m->outcome), "pending");
	if (!(st & (SBS_AT_RESTORED | SBS_AT_COVERED)))
		pr_warn("memory: process %d's main thread has not run Python code since it was "
			"asked for its allocators back; the sampler puts them back when it does\n",
			m->pid);
	else if (st & SBS_AT_COVERED)
		pr_warn("memory: in process %d another allocator hook (tracemalloc?) was put over "
			"the sampler's; the sampler stays under it, sampling nothing\n",
			m->pid);
}

void meminject__end(struct meminject *m)
{
	int i, taken;

	if (!m || m->ended_ns)
		return;
	m->ended_ns = mono_ns();
	if (m->requested && !m->answered) {
		/* A request not yet taken is taken back; one being taken now
		 * gets a moment to answer. */
		taken = m->pc ? pending_call__cancel(m->pc) : remote_exec__cancel(m->pp);
		for (i = 0; taken == 0 && !m->answered && i < 50; i++) {
			sleep_ms(10);
			read_answer(m, mono_ns());
		}
		if (!m->answered)
			snprintf(m->why, sizeof(m->why),
				 "the main thread ran no Python code while the profiler was "
				 "attached, so the sampler was never loaded%s",
				 taken == 1	   ? " (the request was taken back)"
				 : taken == -EBUSY ? " (the request stays queued behind the "
						     "process's own calls, and will run nothing)"
						   : "");
		pending_call__end(m->pc);
		m->pc = NULL;
	}
	if (m->attached)
		detach(m);
	unlink_all(m);
}

void meminject__facts(const struct meminject *m, struct facts_inject *out)
{
	uint64_t end = m->ended_ns ?: mono_ns();

	memset(out, 0, sizeof(*out));
	out->requested = m->requested;
	snprintf(out->method, sizeof(out->method), "%s",
		 by_pending_call(m->pp) ? "pending_call" : "remote_exec");
	out->attached = m->attached;
	out->answer_s = m->answered ? (m->answered_ns - m->requested_ns) / 1e9 : -1;
	out->attached_s = m->attached ? (end - m->answered_ns) / 1e9 : 0;
	snprintf(out->why, sizeof(out->why), "%s", m->why);
	snprintf(out->detach, sizeof(out->detach), "%s",
		 m->outcome[0] ? m->outcome : (m->attached ? "attached" : "never attached"));
	out->sample_bytes = m->sample_bytes;
	if (m->have_end) {
		const struct scalene_bpf_sampler_state *s = &m->at_start, *e = &m->at_end;

		out->python_bytes = e->python_bytes - s->python_bytes;
		out->probe_hits = (e->malloc_samples + e->free_samples) -
				  (s->malloc_samples + s->free_samples);
	}
}

void meminject__free(struct meminject *m)
{
	if (!m)
		return;
	pending_call__end(m->pc);
	unlink_all(m);
	free(m);
}
