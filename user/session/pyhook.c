// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "model/profile.h"
#include "session/pyhook.h"
#include "base/creds.h"
#include "target/target.h"

/* What every Python of the run loads first (see pyhook.h).  Written for
 * CPython 3.9-3.15: co_lines() from 3.10, the line number table before. */
static const char sitecustomize[] =
	"# Loaded by scalene-bpf run: provides the @profile builtin (as Scalene does),\n"
	"# then runs the sitecustomize this interpreter would otherwise have loaded.\n"
	"def _scalene_bpf_hook():\n"
	"    import builtins\n"
	"    import os\n"
	"    import sys\n"
	"\n"
	"    here = os.path.dirname(os.path.abspath(__file__))\n"
	"    report = os.environ.get(\"SCALENE_BPF_PROFILE_REPORT\", \"\")\n"
	"    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != here]\n"
	"\n"
	"    def last_line(code, depth=0):\n"
	"        last = code.co_firstlineno\n"
	"        try:\n"
	"            lines = [ln for _, _, ln in code.co_lines()]\n"
	"        except AttributeError:\n"
	"            import dis\n"
	"\n"
	"            lines = [ln for _, ln in dis.findlinestarts(code)]\n"
	"        for ln in lines:\n"
	"            if ln is not None and ln > last:\n"
	"                last = ln\n"
	"        if depth < 50:\n"
	"            for c in code.co_consts:\n"
	"                if isinstance(c, type(code)):\n"
	"                    last = max(last, last_line(c, depth + 1))\n"
	"        return last\n"
	"\n"
	"    def profile(func):\n"
	"        \"\"\"Marks func for scalene-bpf: when any function is decorated, only\n"
	"        decorated functions are reported.  Returns func unchanged.\"\"\"\n"
	"        try:\n"
	"            f = func\n"
	"            for _ in range(100):\n"
	"                code = getattr(f, \"__code__\", None)\n"
	"                if code is not None:\n"
	"                    break\n"
	"                f = getattr(f, \"__func__\", None) or getattr(f, \"__wrapped__\", None)\n"
	"                if f is None:\n"
	"                    break\n"
	"            if code is not None and report:\n"
	"                qual = getattr(f, \"__qualname__\", None) or code.co_name\n"
	"                name = code.co_filename\n"
	"                if \"\\n\" not in qual and \"\\t\" not in qual and \"\\n\" not in name:\n"
	"                    line = \"%d\\t%d\\t%d\\t%s\\t%s\\n\" % (\n"
	"                        os.getpid(), code.co_firstlineno, last_line(code), qual, name)\n"
	"                    fd = os.open(report, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)\n"
	"                    try:\n"
	"                        os.write(fd, line.encode(\"utf-8\", \"surrogateescape\"))\n"
	"                    finally:\n"
	"                        os.close(fd)\n"
	"        except Exception:\n"
	"            pass\n"
	"        return func\n"
	"\n"
	"    try:\n"
	"        import importlib.machinery\n"
	"\n"
	"        spec = importlib.machinery.PathFinder.find_spec(\"sitecustomize\", sys.path)\n"
	"        if spec is not None and spec.loader is not None:\n"
	"            import importlib.util\n"
	"\n"
	"            mod = importlib.util.module_from_spec(spec)\n"
	"            sys.modules[\"sitecustomize\"] = mod\n"
	"            spec.loader.exec_module(mod)\n"
	"    finally:\n"
	"        if not hasattr(builtins, \"profile\"):\n"
	"            builtins.profile = profile\n"
	"\n"
	"\n"
	"try:\n"
	"    _scalene_bpf_hook()\n"
	"finally:\n"
	"    del _scalene_bpf_hook\n";

/* Bytes read from the report in one poll: a program writing without end
 * cannot hold the loader up. */
#define POLL_BYTES (1 << 20)

static int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	if (n != (ssize_t)len) {
		int err = n < 0 ? -errno : -EIO;

		close(fd);
		return err;
	}
	/* The umask may have narrowed it: the program's user reads it. */
	if (fchmod(fd, 0644)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return close(fd) ? -errno : 0;
}

int pyhook__prepare(struct pyhook *h, const struct user_creds *c)
{
	const char *old = getenv("PYTHONPATH");
	char path[128];
	int err, wfd;

	memset(h, 0, sizeof(*h));
	h->fd = -1;
	snprintf(h->dir, sizeof(h->dir), "/tmp/scalene-bpf-hook.XXXXXX");
	if (!mkdtemp(h->dir)) {
		err = -errno;
		h->dir[0] = '\0';
		return err;
	}
	/* Root's and read-only to others: the program's user cannot put
	 * anything in it, only read it. */
	if (chmod(h->dir, 0755)) {
		err = -errno;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/sitecustomize.py", h->dir);
	err = write_file(path, sitecustomize, sizeof(sitecustomize) - 1);
	if (err)
		goto fail;
	snprintf(h->report, sizeof(h->report), "%s/decorated", h->dir);
	wfd = open(h->report, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (wfd < 0) {
		err = -errno;
		goto fail;
	}
	/* The program appends to it as the user it runs as. */
	if (c && c->drop && fchown(wfd, c->uid, c->gid)) {
		err = -errno;
		close(wfd);
		goto fail;
	}
	close(wfd);
	h->fd = open(h->report, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (h->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (asprintf(&h->pythonpath_env, "PYTHONPATH=%s%s%s", h->dir, old && *old ? ":" : "",
		     old && *old ? old : "") < 0) {
		h->pythonpath_env = NULL;
		err = -ENOMEM;
		goto fail;
	}
	snprintf(h->report_env, sizeof(h->report_env), "%s=%s", PYHOOK_ENV_REPORT, h->report);
	return 0;
fail:
	pyhook__cleanup(h);
	return err;
}

static int parse_int(char **p, int min, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || end == *p || *end != '\t' || v < min || v > INT_MAX)
		return -EINVAL;
	*out = (int)v;
	*p = end + 1;
	return 0;
}

int pyhook_parse_line(char *line, struct pyhook_line *out)
{
	char *tab;

	if (parse_int(&line, 1, &out->pid) || parse_int(&line, 1, &out->first) ||
	    parse_int(&line, out->first, &out->last))
		return -EINVAL;
	tab = strchr(line, '\t');
	if (!tab || tab == line || !tab[1])
		return -EINVAL;
	*tab = '\0';
	out->qualname = line;
	out->filename = tab + 1;
	return 0;
}

int pyhook__poll(struct pyhook *h, struct profile *p)
{
	char *buf, *line, *nl;
	struct stat st;
	size_t want;
	ssize_t n;
	int lines = 0;

	if (h->fd < 0)
		return 0;
	/* Polled every few milliseconds: nothing to do most of the time. */
	if (fstat(h->fd, &st) || st.st_size <= h->offset)
		return 0;
	want = st.st_size - h->offset < POLL_BYTES ? st.st_size - h->offset : POLL_BYTES;
	buf = malloc(want + 1);
	if (!buf)
		return -ENOMEM;
	n = pread(h->fd, buf, want, h->offset);
	if (n <= 0) {
		free(buf);
		return n < 0 ? -errno : 0;
	}
	buf[n] = '\0';
	for (line = buf; (nl = memchr(line, '\n', buf + n - line)); line = nl + 1) {
		struct pyhook_line l;

		*nl = '\0';
		lines++;
		if (nl - line > PYHOOK_MAX_LINE || memchr(line, '\0', nl - line) ||
		    pyhook_parse_line(line, &l)) {
			h->bad_lines++;
			continue;
		}
		/* Decorations of a process that is not profiled (--no-follow)
		 * must not hide the rest. */
		if (h->only_pid && l.pid != h->only_pid)
			continue;
		if (profile__decorate(p, l.filename, l.first, l.last, l.qualname) == -ENOSPC)
			h->refused++;
	}
	/* A line not finished yet is read again next time, unless it can
	 * never be a valid one. */
	if (line == buf && n == POLL_BYTES) {
		h->bad_lines++;
		line = buf + n;
	}
	h->offset += line - buf;
	free(buf);
	return lines;
}

/* ------------------------------------------- whether the builtin is used */

/* How far the look for @profile goes before it gives up and provides the
 * builtin all the same: a program's own tree is read in milliseconds, a
 * home directory or / is not read at all. */
#define SCAN_MAX_ENTRIES 20000
#define SCAN_MAX_BYTES (32u << 20)
#define SCAN_MAX_FILE (4u << 20)
#define SCAN_MAX_DEPTH 12

struct scan {
	const struct user_creds *c;
	unsigned long entries, bytes;
	bool found, stopped;
	char where[PATH_MAX]; /* the file found, or where the look stopped */
};

/* Whether text has a line that decorates with profile ("@profile",
 * "@ profile(...)"), the use Scalene documents. */
bool pyhook_text_decorates(const char *text, size_t n)
{
	static const char word[] = "profile";
	const char *p = text, *end = text + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *q = p;
		const char *eol = nl ? nl : end;

		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if (q < eol && *q == '@') {
			for (q++; q < eol && (*q == ' ' || *q == '\t');)
				q++;
			if ((size_t)(eol - q) >= sizeof(word) - 1 &&
			    !memcmp(q, word, sizeof(word) - 1)) {
				q += sizeof(word) - 1;
				if (q == eol || !(*q == '_' || isalnum((unsigned char)*q)))
					return true;
			}
		}
		p = eol + 1;
	}
	return false;
}

/* Whether the program's user may read what st describes (under sudo the
 * program runs as them: what they cannot read, their program cannot run). */
static bool user_reads(const struct user_creds *c, const struct stat *st)
{
	int i;

	if (!c || !c->drop)
		return true;
	if (st->st_uid == c->uid)
		return st->st_mode & S_IRUSR;
	if (st->st_gid == c->gid)
		return st->st_mode & S_IRGRP;
	for (i = 0; i < c->ngroups; i++) {
		if (st->st_gid == c->groups[i])
			return st->st_mode & S_IRGRP;
	}
	return st->st_mode & S_IROTH;
}

static void scan_file(struct scan *sc, int dfd, const char *name, const char *path)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t n;
	size_t want;

	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !user_reads(sc->c, &st)) {
		close(fd);
		return;
	}
	want = st.st_size < SCAN_MAX_FILE ? (size_t)st.st_size : SCAN_MAX_FILE;
	if (sc->bytes + want > SCAN_MAX_BYTES) {
		sc->stopped = true;
		snprintf(sc->where, sizeof(sc->where), "%s", path);
		close(fd);
		return;
	}
	buf = malloc(want ? want : 1);
	n = buf ? pread(fd, buf, want, 0) : -1;
	close(fd);
	if (n > 0) {
		sc->bytes += n;
		if (pyhook_text_decorates(buf, n)) {
			sc->found = true;
			snprintf(sc->where, sizeof(sc->where), "%s", path);
		}
	}
	free(buf);
}

/* Hidden folders, caches and installed packages, by name: not the
 * program's own source. */
static bool skipped_name(const char *name)
{
	return name[0] == '.' || !strcmp(name, "__pycache__") || !strcmp(name, "node_modules") ||
	       !strcmp(name, "site-packages") || !strcmp(name, "dist-packages");
}

static void scan_dir(struct scan *sc, int dfd, const char *path, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *e;

	if (!d) {
		close(dfd);
		return;
	}
	while (!sc->found && !sc->stopped && (e = readdir(d))) {
		char sub[PATH_MAX];
		size_t len = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++sc->entries > SCAN_MAX_ENTRIES) {
			sc->stopped = true;
			snprintf(sc->where, sizeof(sc->where), "%s", path);
			break;
		}
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub))
			continue;
		if (e->d_type == DT_DIR) {
			struct stat st;
			int cfd;

			if (depth >= SCAN_MAX_DEPTH || skipped_name(e->d_name))
				continue;
			cfd = openat(dirfd(d), e->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0)
				continue;
			/* A virtual environment: installed packages too. */
			if (!fstatat(cfd, "pyvenv.cfg", &st, 0)) {
				close(cfd);
				continue;
			}
			scan_dir(sc, cfd, sub, depth + 1);
		} else if ((e->d_type == DT_REG || e->d_type == DT_UNKNOWN) && len > 3 &&
			   !strcmp(e->d_name + len - 3, ".py")) {
			scan_file(sc, dirfd(d), e->d_name, sub);
		}
	}
	closedir(d);
}

bool pyhook__wanted(const struct target *t, const struct user_creds *c, char *why, size_t n)
{
	struct scan sc = { .c = c };
	const char *dir = t->program_dir;
	int dfd;

	if (t->command && pyhook_text_decorates(t->command, strlen(t->command))) {
		snprintf(why, n, "the -c command decorates with @profile");
		return true;
	}
	if (!dir) {
		snprintf(why, n, "the program's folder is not known");
		return true;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(why, n, "%s cannot be read (%s)", dir, strerror(errno));
		return true;
	}
	scan_dir(&sc, dfd, dir, 0);
	if (sc.found)
		snprintf(why, n, "%s decorates with @profile", sc.where);
	else if (sc.stopped)
		snprintf(why, n,
			 "the look for @profile under %s stopped at %s (past %d files or %u MiB)",
			 dir, sc.where, SCAN_MAX_ENTRIES, SCAN_MAX_BYTES >> 20);
	else
		snprintf(why, n,
			 "no .py file under %s decorates with @profile (%lu entries, %lu KiB read)",
			 dir, sc.entries, sc.bytes >> 10);
	return sc.found || sc.stopped;
}

static void remove_cache(const char *dir)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "sitecustomize.", 14)) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
	rmdir(dir);
}

void pyhook__cleanup(struct pyhook *h)
{
	char path[128];

	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	free(h->pythonpath_env);
	h->pythonpath_env = NULL;
	if (!h->dir[0])
		return;
	snprintf(path, sizeof(path), "%s/sitecustomize.py", h->dir);
	unlink(path);
	/* A program running as root compiles it into __pycache__ here (the
	 * program's user under sudo cannot write here). */
	snprintf(path, sizeof(path), "%s/__pycache__", h->dir);
	remove_cache(path);
	if (h->report[0])
		unlink(h->report);
	if (rmdir(h->dir))
		pr_debug("could not remove %s: %s\n", h->dir, strerror(errno));
	h->dir[0] = '\0';
}
