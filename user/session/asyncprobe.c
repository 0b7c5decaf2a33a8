// SPDX-License-Identifier: BSD-2-Clause
/*
 * Runs the asyncio layout probe (asyncprobe.py) in an interpreter binary and
 * parses what it prints.  The output of a program run as another user is
 * untrusted: it is read into fixed buffers, parsed strictly (every key once,
 * every value in range) and checked for consistency before it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session/asyncprobe.h"
#include "base/clock.h"

#define PROBE_TIMEOUT_MS 5000
#define PROBE_OUT_MAX 4096  /* the line is about 500 bytes */
#define PROBE_ERR_MAX 2048  /* the end of stderr, for the reason */
#define LAYOUT_OFF_MAX 4096 /* no asyncio object is near this size */
#define CACHE_SLOTS 16

/* Where the child failed before exec: the stage and errno, sent through a
 * close-on-exec pipe (EOF means exec succeeded). */
enum child_stage {
	STAGE_STDIO = 1,
	STAGE_CREDS,
	STAGE_EXEC
};
struct child_err {
	int stage, err;
};

struct interp_id {
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct asyncprobe {
	pid_t pid;
	int out_fd, err_fd, exec_fd;
	int timeout_ms;
	uint64_t started_ns; /* CLOCK_MONOTONIC */
	bool done;
	int result;
	struct async_layout layout;
	char why[512];
	char path[PATH_MAX]; /* as given */
	struct interp_id id;
	bool have_id;
	bool builtin; /* the built-in probe: its result may be kept on disk */
	char out[PROBE_OUT_MAX + 1];
	size_t nout;
	bool out_overflow;
	char err[PROBE_ERR_MAX + 1];
	size_t nerr;
};

static void set_why(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!why || !whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* ---- parsing ---------------------------------------------------------- */

enum val_kind {
	V_BOOL,
	V_OFF,
	V_SIZE,
	V_INT32,
	V_NAME,
	V_PREFIX,
	V_TASKSET,
	V_HEX,
	V_WORD
};

struct key_spec {
	const char *key;
	enum val_kind kind;
	bool optional; /* may be left out: read as none */
};

static const struct key_spec keys[] = {
	{ "asyncprobe", V_WORD },
	{ "hexversion", V_HEX },
	{ "word", V_WORD },
	{ "c_task", V_BOOL },
	{ "c_future", V_BOOL },
	{ "name_may_be_int", V_BOOL },
	{ "task_set", V_TASKSET },
	{ "task_type", V_NAME },
	{ "future_type", V_NAME },
	{ "futureiter_type", V_NAME },
	{ "task_size", V_SIZE },
	{ "fut_loop", V_OFF },
	{ "fut_state", V_OFF },
	{ "state_pending", V_INT32 },
	{ "state_cancelled", V_INT32 },
	{ "state_finished", V_INT32 },
	{ "task_fut_waiter", V_OFF },
	{ "task_coro", V_OFF },
	{ "task_name", V_OFF },
	{ "name_int_prefix", V_PREFIX },
	{ "asend_size", V_SIZE },
	{ "asend_gen", V_OFF },
	{ "task_node", V_OFF },
	/* 3.9 and 3.10: the private PyDictKeysObject (none since 3.11, whose
	 * layout the headers give). */
	{ "dk_size", V_SIZE, true },
	{ "dk_nentries", V_SIZE, true },
	{ "dk_indices", V_SIZE, true },
	{ "dk_entry_size", V_SIZE, true },
	{ "dk_entry_key", V_SIZE, true },
	{ "dk_entry_value", V_SIZE, true },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* One parsed value: a number (nums; none = absent) or a string. */
struct parsed {
	bool seen[NKEYS];
	bool none[NKEYS];
	long long num[NKEYS];
	char str[NKEYS][64];
};

static bool all_in(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++) {
		if (!s[i] || !strchr(set, s[i]))
			return false;
	}
	return true;
}

/* A decimal without sign, leading zeros or overflow, at most max. */
static int parse_dec(const char *s, size_t n, long long max, long long *v)
{
	long long x = 0;

	if (!n || n > 10 || (n > 1 && s[0] == '0') || !all_in(s, n, "0123456789"))
		return -1;
	for (size_t i = 0; i < n; i++)
		x = x * 10 + (s[i] - '0');
	if (x > max)
		return -1;
	*v = x;
	return 0;
}

static int parse_value(const struct key_spec *k, const char *s, size_t n, struct parsed *p,
		       size_t i)
{
	long long v;

	if (n == 4 && !memcmp(s, "none", 4) && k->kind != V_BOOL && k->kind != V_WORD &&
	    k->kind != V_HEX) {
		p->none[i] = true;
		return 0;
	}
	switch (k->kind) {
	case V_BOOL:
		if (n != 1 || (s[0] != '0' && s[0] != '1'))
			return -1;
		p->num[i] = s[0] - '0';
		return 0;
	case V_WORD:
	case V_OFF:
	case V_SIZE:
		if (parse_dec(s, n, LAYOUT_OFF_MAX, &v))
			return -1;
		p->num[i] = v;
		return 0;
	case V_INT32:
		if (n && s[0] == '-') {
			if (parse_dec(s + 1, n - 1, (long long)INT32_MAX + 1, &v) || !v)
				return -1;
			v = -v;
		} else if (parse_dec(s, n, INT32_MAX, &v)) {
			return -1;
		}
		p->num[i] = v;
		return 0;
	case V_HEX:
		if (n < 3 || n > 10 || memcmp(s, "0x", 2) ||
		    !all_in(s + 2, n - 2, "0123456789abcdef"))
			return -1;
		v = 0;
		for (size_t j = 2; j < n; j++)
			v = v * 16 + (s[j] <= '9' ? s[j] - '0' : s[j] - 'a' + 10);
		p->num[i] = v;
		return 0;
	case V_NAME:
	case V_PREFIX:
	case V_TASKSET:
		if (!n || n >= (k->kind == V_PREFIX ? 16 : 64))
			return -1;
		if (!all_in(s, n,
			    k->kind == V_PREFIX
				    ? "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789_-"
				    : "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789_."))
			return -1;
		memcpy(p->str[i], s, n);
		p->str[i][n] = '\0';
		return 0;
	}
	return -1;
}

static int key_index(const char *s, size_t n)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (strlen(keys[i].key) == n && !memcmp(keys[i].key, s, n))
			return (int)i;
	}
	return -1;
}

static int find_key(const char *key)
{
	return key_index(key, strlen(key));
}

static long long num_of(const struct parsed *p, const char *key)
{
	int i = find_key(key);

	return p->none[i] ? -1 : p->num[i];
}

static uint16_t off_of(const struct parsed *p, const char *key)
{
	int i = find_key(key);

	return p->none[i] ? PYOFF_NONE : (uint16_t)p->num[i];
}

static void copy_name(char *dst, size_t n, const struct parsed *p, const char *key)
{
	int i = find_key(key);

	snprintf(dst, n, "%s", p->none[i] ? "" : p->str[i]);
}

/* Splits the line into key=value words and parses each once. */
static int parse_words(const char *buf, size_t len, struct parsed *p, char *why, size_t whylen)
{
	const char *s = buf, *end = buf + len - 1; /* the '\n' */

	while (s < end) {
		const char *w = s, *eq, *we;
		int k;

		we = memchr(w, ' ', (size_t)(end - w));
		if (!we)
			we = end;
		eq = memchr(w, '=', (size_t)(we - w));
		if (!eq || eq == w) {
			set_why(why, whylen, "a word without key=value at byte %zu",
				(size_t)(w - buf));
			return -EBADMSG;
		}
		k = key_index(w, (size_t)(eq - w));
		if (k < 0) {
			set_why(why, whylen, "unknown key at byte %zu", (size_t)(w - buf));
			return -EBADMSG;
		}
		if (p->seen[k]) {
			set_why(why, whylen, "key %s given twice", keys[k].key);
			return -EBADMSG;
		}
		p->seen[k] = true;
		if (parse_value(&keys[k], eq + 1, (size_t)(we - eq - 1), p, (size_t)k)) {
			set_why(why, whylen, "bad value for %s", keys[k].key);
			return -EBADMSG;
		}
		s = we + (we < end); /* one space between words */
		if (we < end && s == end) {
			set_why(why, whylen, "a space at the end of the line");
			return -EBADMSG;
		}
	}
	for (size_t i = 0; i < NKEYS; i++) {
		if (!p->seen[i] && keys[i].optional) {
			p->none[i] = true;
			continue;
		}
		if (!p->seen[i]) {
			set_why(why, whylen, "no %s", keys[i].key);
			return -EBADMSG;
		}
	}
	return 0;
}

/* An offset must leave room for its field inside the object. */
static int check_off(uint16_t off, unsigned width, unsigned size, const char *what, char *why,
		     size_t whylen)
{
	if (off == PYOFF_NONE)
		return 0;
	if (off % width || off + width > size) {
		set_why(why, whylen, "%s %u does not fit a %u-byte field in %u bytes", what, off,
			width, size);
		return -EBADMSG;
	}
	return 0;
}

static int check_layout(const struct parsed *p, const struct async_layout *l, char *why,
			size_t whylen)
{
	static const char *const ptrs[] = { "fut_loop", "task_fut_waiter", "task_coro",
					    "task_name" };
	bool st = l->fut_state != PYOFF_NONE;
	int err = 0;

	if (num_of(p, "asyncprobe") != 2) {
		set_why(why, whylen, "probe format %lld, expected 2", num_of(p, "asyncprobe"));
		return -EBADMSG;
	}
	if (num_of(p, "word") != 8) {
		set_why(why, whylen, "a %lld-byte-pointer interpreter (64-bit only)",
			num_of(p, "word"));
		return -EBADMSG;
	}
	if ((l->version_hex >> 24) != 3) {
		set_why(why, whylen, "not a Python 3 (hexversion 0x%x)", l->version_hex);
		return -EBADMSG;
	}
	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]) && !err; i++)
		err = check_off(off_of(p, ptrs[i]), 8, l->task_size, ptrs[i], why, whylen);
	if (!err)
		err = check_off(l->fut_state, 4, l->task_size, "fut_state", why, whylen);
	if (!err)
		err = check_off(l->asend_gen, 8, l->asend_size, "asend_gen", why, whylen);
	/* The node is two pointers: the second must fit too. */
	if (!err && l->task_node != PYOFF_NONE)
		err = check_off(l->task_node + 8, 8, l->task_size, "task_node's prev", why, whylen);
	if (err)
		return err;
	if (p->none[find_key("state_pending")] == st ||
	    p->none[find_key("state_cancelled")] == st ||
	    p->none[find_key("state_finished")] == st) {
		set_why(why, whylen, "fut_state and its three values go together");
		return -EBADMSG;
	}
	if (st &&
	    (l->state_pending == l->state_cancelled || l->state_pending == l->state_finished ||
	     l->state_cancelled == l->state_finished)) {
		set_why(why, whylen, "fut_state's three values are not distinct");
		return -EBADMSG;
	}
	if (l->name_may_be_int && (l->task_name == PYOFF_NONE || !l->name_int_prefix[0])) {
		set_why(why, whylen, "an int task name without task_name or its prefix");
		return -EBADMSG;
	}
	return 0;
}

int asyncprobe__parse(const char *buf, size_t len, struct async_layout *out, char *why,
		      size_t whylen)
{
	struct parsed *p;
	struct async_layout l = { 0 };
	const char *ts;
	int err;

	set_why(why, whylen, "%s", "");
	if (!len || len > PROBE_OUT_MAX || buf[len - 1] != '\n' || memchr(buf, '\n', len - 1) ||
	    memchr(buf, '\0', len)) {
		set_why(why, whylen, "not one line of at most %d bytes", PROBE_OUT_MAX);
		return -EBADMSG;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		set_why(why, whylen, "out of memory");
		return -ENOMEM;
	}
	err = parse_words(buf, len, p, why, whylen);
	if (err)
		goto cleanup;
	l.version_hex = (uint32_t)num_of(p, "hexversion");
	l.c_task = num_of(p, "c_task") == 1;
	l.c_future = num_of(p, "c_future") == 1;
	l.name_may_be_int = num_of(p, "name_may_be_int") == 1;
	l.task_size = p->none[find_key("task_size")] ? 0 : (uint16_t)num_of(p, "task_size");
	l.asend_size = p->none[find_key("asend_size")] ? 0 : (uint16_t)num_of(p, "asend_size");
	l.fut_loop = off_of(p, "fut_loop");
	l.fut_state = off_of(p, "fut_state");
	l.task_fut_waiter = off_of(p, "task_fut_waiter");
	l.task_coro = off_of(p, "task_coro");
	l.task_name = off_of(p, "task_name");
	l.asend_gen = off_of(p, "asend_gen");
	l.task_node = off_of(p, "task_node");
	l.state_pending = (int32_t)p->num[find_key("state_pending")];
	l.state_cancelled = (int32_t)p->num[find_key("state_cancelled")];
	l.state_finished = (int32_t)p->num[find_key("state_finished")];
	copy_name(l.name_int_prefix, sizeof(l.name_int_prefix), p, "name_int_prefix");
	copy_name(l.task_type, sizeof(l.task_type), p, "task_type");
	copy_name(l.future_type, sizeof(l.future_type), p, "future_type");
	copy_name(l.futureiter_type, sizeof(l.futureiter_type), p, "futureiter_type");
	l.dk_size = off_of(p, "dk_size");
	l.dk_nentries = off_of(p, "dk_nentries");
	l.dk_indices = off_of(p, "dk_indices");
	l.dk_entry_size = off_of(p, "dk_entry_size");
	l.dk_entry_key = off_of(p, "dk_entry_key");
	l.dk_entry_value = off_of(p, "dk_entry_value");
	l.dk_known = l.dk_size != PYOFF_NONE && l.dk_nentries != PYOFF_NONE &&
		     l.dk_indices != PYOFF_NONE && l.dk_entry_size != PYOFF_NONE &&
		     l.dk_entry_key != PYOFF_NONE && l.dk_entry_value != PYOFF_NONE;
	if (l.dk_known &&
	    (l.dk_size % 8 || l.dk_nentries % 8 || l.dk_size + 8 > l.dk_indices ||
	     l.dk_nentries + 8 > l.dk_indices || l.dk_indices > 128 || l.dk_entry_size % 8 ||
	     l.dk_entry_size > 64 || l.dk_entry_key % 8 || l.dk_entry_value % 8 ||
	     l.dk_entry_key + 8 > l.dk_entry_size || l.dk_entry_value + 8 > l.dk_entry_size ||
	     l.dk_entry_key == l.dk_entry_value)) {
		set_why(why, whylen, "a dict keys layout that does not hold together");
		err = -EBADMSG;
		goto cleanup;
	}
	ts = p->str[find_key("task_set")];
	if (p->none[find_key("task_set")])
		l.task_set = ASYNC_TASKS_UNKNOWN;
	else if (!strcmp(ts, "all_tasks"))
		l.task_set = ASYNC_TASKS_ALL;
	else if (!strcmp(ts, "scheduled_eager"))
		l.task_set = ASYNC_TASKS_SCHEDULED_EAGER;
	else {
		set_why(why, whylen, "bad value for task_set");
		err = -EBADMSG;
		goto cleanup;
	}
	err = check_layout(p, &l, why, whylen);
	if (!err)
		*out = l;
cleanup:
	free(p);
	return err;
}

/* ---- the in-memory cache ---------------------------------------------- */

static struct {
	struct interp_id id;
	struct async_layout layout;
	bool used;
	unsigned long long stamp;
} cache[CACHE_SLOTS];
static unsigned long long cache_clock;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The file's identity through the path as given (/proc/PID/exe is the
 * running binary itself), its name through the resolved path when there is
 * one (not for a deleted binary). */
static int interp_identify(const char *path, struct interp_id *id)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!realpath(path, id->path))
		snprintf(id->path, sizeof(id->path), "%s", path);
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime = st.st_mtim;
	return 0;
}

static bool id_equal(const struct interp_id *a, const struct interp_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       !strcmp(a->path, b->path);
}

static void cache_store(const struct interp_id *id, const struct async_layout *l);

/* ---- the on-disk cache ----------------------------------------------- */

/* A probe's output line is kept per interpreter file in a directory only
 * root writes (SCALENE_BPF_CACHE_DIR overrides it), so that later runs do
 * not wait for the probe: the event loop's first idle time is otherwise
 * lost while it runs.  What is read back goes through the same strict
 * parser as the probe's own output. */
#define DISK_CACHE_DIR "/var/cache/scalene-bpf"

static const char *disk_dir(void)
{
	const char *d = getenv("SCALENE_BPF_CACHE_DIR");

	return d && *d ? d : DISK_CACHE_DIR;
}

/* Named by the interpreter file and the probe: a probe changed since an
 * entry was written (what it measures, how) measures again. */
static int disk_path(const struct interp_id *id, char *buf, size_t n)
{
	unsigned long long h = 1469598103934665603ULL;
	const char *c;

	for (c = id->path; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	for (c = asyncprobe_script; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	h ^= (unsigned long long)id->dev * 0x9e3779b97f4a7c15ULL;
	h ^= (unsigned long long)id->ino * 0xc2b2ae3d27d4eb4fULL;
	h ^= (unsigned long long)id->size * 0x165667b19e3779f9ULL;
	h ^= (unsigned long long)id->mtime.tv_sec * 0x27d4eb2f165667c5ULL;
	h ^= (unsigned long long)id->mtime.tv_nsec;
	return snprintf(buf, n, "%s/asyncprobe-%016llx", disk_dir(), h) < (int)n ? 0
										 : -ENAMETOOLONG;
}

static int disk_load(const struct interp_id *id, struct async_layout *out)
{
	char path[PATH_MAX], buf[PROBE_OUT_MAX + 1], why[160];
	ssize_t n;
	int fd, err;

	if (disk_path(id, path, sizeof(path)))
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n > PROBE_OUT_MAX)
		return -EBADMSG;
	err = asyncprobe__parse(buf, (size_t)n, out, why, sizeof(why));
	return err;
}

static void disk_store(const struct interp_id *id, const char *line, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 16];
	int fd;

	if (geteuid() != 0 && !getenv("SCALENE_BPF_CACHE_DIR"))
		return;
	if (disk_path(id, path, sizeof(path)))
		return;
	if (mkdir(disk_dir(), 0700) && errno != EEXIST)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, len) != (ssize_t)len || fsync(fd)) {
		close(fd);
		unlink(tmp);
		return;
	}
	close(fd);
	if (rename(tmp, path))
		unlink(tmp);
}

int asyncprobe__cached(const char *interp_path, struct async_layout *out)
{
	struct interp_id id;
	int err = interp_identify(interp_path, &id);

	if (err)
		return err;
	err = -ENOENT;
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < CACHE_SLOTS; i++) {
		if (cache[i].used && id_equal(&cache[i].id, &id)) {
			*out = cache[i].layout;
			cache[i].stamp = ++cache_clock;
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	if (err && !disk_load(&id, out)) {
		cache_store(&id, out);
		err = 0;
	}
	return err;
}

/* Into the slot of the same file, else a free one, else the least recently
 * used. */
static void cache_store(const struct interp_id *id, const struct async_layout *l)
{
	int slot = 0;

	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < CACHE_SLOTS; i++) {
		if (cache[i].used && id_equal(&cache[i].id, id)) {
			slot = i;
			break;
		}
		if (!cache[i].used || (cache[slot].used && cache[i].stamp < cache[slot].stamp))
			slot = i;
	}
	cache[slot].id = *id;
	cache[slot].layout = *l;
	cache[slot].used = true;
	cache[slot].stamp = ++cache_clock;
	pthread_mutex_unlock(&cache_lock);
}

/* ---- the probe's process ---------------------------------------------- */

static void child_fail(int fd, int stage, int err)
{
	struct child_err ce = { stage, err };

	(void)!write(fd, &ce, sizeof(ce));
	_exit(127);
}

/* Every descriptor but 0-2 closes on exec (the loader's BPF objects, the
 * profiled program's files: nothing of them reaches the probe).  By the
 * system call: glibc has close_range() only from 2.34, and the kernel only
 * from 5.11 (then each descriptor in turn). */
static void cloexec_all(void)
{
	long max;

	if (!syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC))
		return;
	max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void child(pid_t parent, const char *path, const char *script, uid_t uid, gid_t gid,
		  int null_fd, int out_fd, int err_fd, int exec_fd)
{
	static char *const envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	char *const argv[] = { (char *)path, "-I", "-S", "-c", (char *)script, NULL };
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t none;

	/* Dies with the loader, also when it died before this line. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL);
	if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		child_fail(exec_fd, STAGE_STDIO, errno);
	cloexec_all();
	if (geteuid() == 0 && (setgroups(0, NULL) || setgid(gid) || setuid(uid)))
		child_fail(exec_fd, STAGE_CREDS, errno);
	execve(path, argv, envp);
	child_fail(exec_fd, STAGE_EXEC, errno);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* How long the probe may take: PROBE_TIMEOUT_MS, or
 * SCALENE_BPF_ASYNC_PROBE_MS where an interpreter starts slower than that
 * (an emulated machine: tools/vmtest). */
static int default_timeout_ms(void)
{
	const char *env = getenv("SCALENE_BPF_ASYNC_PROBE_MS");
	long ms = env ? strtol(env, NULL, 10) : 0;

	return ms > 0 && ms <= 600000 ? (int)ms : PROBE_TIMEOUT_MS;
}

struct asyncprobe *asyncprobe__start_opts(const char *interp_path, uid_t uid, gid_t gid,
					  const struct asyncprobe_opts *opts, char *why,
					  size_t whylen)
{
	const char *script = opts && opts->script ? opts->script : asyncprobe_script;
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, execp[2] = { -1, -1 }, null_fd = -1;
	struct asyncprobe *p;
	pid_t parent;
	int err = 0;

	set_why(why, whylen, "%s", "");
	p = calloc(1, sizeof(*p));
	if (!p) {
		set_why(why, whylen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	p->pid = -1;
	p->out_fd = p->err_fd = p->exec_fd = -1;
	p->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : default_timeout_ms();
	snprintf(p->path, sizeof(p->path), "%s", interp_path);
	p->have_id = !interp_identify(interp_path, &p->id);
	p->builtin = script == asyncprobe_script;
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || pipe2(outp, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
	    pipe2(execp, O_CLOEXEC)) {
		err = -errno;
		set_why(why, whylen, "failed to make the probe's pipes: %s", strerror(-err));
		goto cleanup;
	}
	p->started_ns = mono_ns();
	parent = getpid();
	p->pid = fork();
	if (p->pid < 0) {
		err = -errno;
		set_why(why, whylen, "failed to fork the probe: %s", strerror(-err));
		goto cleanup;
	}
	if (p->pid == 0)
		child(parent, interp_path, script, uid, gid, null_fd, outp[1], errp[1], execp[1]);
	p->out_fd = outp[0];
	p->err_fd = errp[0];
	p->exec_fd = execp[0];
	outp[0] = errp[0] = execp[0] = -1;
	fcntl(p->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->err_fd, F_SETFL, O_NONBLOCK);
	fcntl(p->exec_fd, F_SETFL, O_NONBLOCK);
cleanup:
	close_fd(&null_fd);
	for (int i = 0; i < 2; i++) {
		close_fd(&outp[i]);
		close_fd(&errp[i]);
		close_fd(&execp[i]);
	}
	if (err) {
		free(p);
		errno = -err;
		return NULL;
	}
	return p;
}

struct asyncprobe *asyncprobe__start(const char *interp_path, uid_t uid, gid_t gid, char *why,
				     size_t whylen)
{
	return asyncprobe__start_opts(interp_path, uid, gid, NULL, why, whylen);
}

pid_t asyncprobe__pid(const struct asyncprobe *p)
{
	return p ? p->pid : -1;
}

/* Reads what is there now; stdout beyond the limit is counted as overflow,
 * stderr keeps its end. */
static void drain(struct asyncprobe *p)
{
	char buf[4096];
	ssize_t n;

	while (p->out_fd >= 0) {
		n = read(p->out_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				close_fd(&p->out_fd);
			break;
		}
		if (p->nout + (size_t)n > PROBE_OUT_MAX) {
			p->out_overflow = true;
			n = (ssize_t)(PROBE_OUT_MAX - p->nout);
		}
		memcpy(p->out + p->nout, buf, (size_t)n);
		p->nout += (size_t)n;
	}
	while (p->err_fd >= 0) {
		n = read(p->err_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				close_fd(&p->err_fd);
			break;
		}
		if ((size_t)n >= PROBE_ERR_MAX) {
			memcpy(p->err, buf + n - PROBE_ERR_MAX, PROBE_ERR_MAX);
			p->nerr = PROBE_ERR_MAX;
			continue;
		}
		if (p->nerr + (size_t)n > PROBE_ERR_MAX) {
			size_t drop = p->nerr + (size_t)n - PROBE_ERR_MAX;

			memmove(p->err, p->err + drop, p->nerr - drop);
			p->nerr -= drop;
		}
		memcpy(p->err + p->nerr, buf, (size_t)n);
		p->nerr += (size_t)n;
	}
}

/* stderr's lines as one printable line: the last one (a traceback's
 * verdict) when failing, all of them (the probe's notes) otherwise. */
static void stderr_text(struct asyncprobe *p, bool last_only, char *dst, size_t n)
{
	size_t len = p->nerr, start = 0, j = 0;

	while (len && (p->err[len - 1] == '\n' || p->err[len - 1] == ' '))
		len--;
	if (last_only) {
		for (size_t i = len; i > 0; i--) {
			if (p->err[i - 1] == '\n') {
				start = i;
				break;
			}
		}
	}
	for (size_t i = start; i < len && j + 1 < n; i++) {
		unsigned char c = (unsigned char)p->err[i];

		if (c == '\n')
			dst[j++] = ';', c = ' ';
		if (j + 1 < n)
			dst[j++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	if (n)
		dst[j] = '\0';
}

static int finish(struct asyncprobe *p, int status)
{
	struct child_err ce;
	struct interp_id now;
	char text[300];
	ssize_t n;
	int err;

	n = read(p->exec_fd, &ce, sizeof(ce));
	if (n == sizeof(ce)) {
		static const char *const stage[] = { "", "set up the probe's stdio for",
						     "become the user to run", "run" };
		int s = ce.stage >= 1 && ce.stage <= 3 ? ce.stage : 3;

		snprintf(p->why, sizeof(p->why), "failed to %s %.300s: %s", stage[s], p->path,
			 strerror(ce.err));
		return ce.err > 0 ? -ce.err : -EIO;
	}
	stderr_text(p, true, text, sizeof(text));
	if (WIFSIGNALED(status)) {
		snprintf(p->why, sizeof(p->why), "the asyncio probe died of signal %d%s%s",
			 WTERMSIG(status), text[0] ? ": " : "", text);
		return -ENOEXEC;
	}
	if (WEXITSTATUS(status)) {
		snprintf(p->why, sizeof(p->why),
			 "the asyncio probe exited with status %d (not a Python 3 interpreter "
			 "that runs -I -S -c?)%s%s",
			 WEXITSTATUS(status), text[0] ? ": " : "", text);
		return -ENOEXEC;
	}
	if (p->out_overflow) {
		snprintf(p->why, sizeof(p->why), "the asyncio probe printed over %d bytes",
			 PROBE_OUT_MAX);
		return -EBADMSG;
	}
	err = asyncprobe__parse(p->out, p->nout, &p->layout, text, sizeof(text));
	if (err) {
		snprintf(p->why, sizeof(p->why), "the asyncio probe's output is not a layout: %s",
			 text);
		return err;
	}
	stderr_text(p, false, p->why, sizeof(p->why));
	if (p->have_id && !interp_identify(p->path, &now) && id_equal(&now, &p->id)) {
		cache_store(&p->id, &p->layout);
		if (p->builtin)
			disk_store(&p->id, p->out, p->nout);
	}
	return 0;
}

int asyncprobe__poll(struct asyncprobe *p, struct async_layout *out, char *why, size_t whylen)
{
	long long ms;
	int status;
	pid_t r;

	if (!p->done) {
		drain(p);
		do {
			r = waitpid(p->pid, &status, WNOHANG);
		} while (r < 0 && errno == EINTR);
		if (r == 0) {
			ms = (long long)((mono_ns() - p->started_ns) / 1000000);
			if (ms < p->timeout_ms)
				return -EAGAIN;
			kill(p->pid, SIGKILL);
			waitpid(p->pid, NULL, 0);
			snprintf(p->why, sizeof(p->why),
				 "the asyncio probe ran over %d ms and was killed", p->timeout_ms);
			p->result = -ETIMEDOUT;
		} else if (r < 0) {
			p->result = -errno;
			snprintf(p->why, sizeof(p->why), "failed to wait for the asyncio probe: %s",
				 strerror(errno));
		} else {
			drain(p);
			p->result = finish(p, status);
		}
		p->done = true;
		p->pid = -1;
		close_fd(&p->out_fd);
		close_fd(&p->err_fd);
		close_fd(&p->exec_fd);
	}
	set_why(why, whylen, "%s", p->why);
	if (!p->result)
		*out = p->layout;
	return p->result;
}

void asyncprobe__free(struct asyncprobe *p)
{
	if (!p)
		return;
	if (!p->done && p->pid > 0) {
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	close_fd(&p->exec_fd);
	free(p);
}
