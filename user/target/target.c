// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "target/target.h"

#define MAX_CMDLINE (1 << 20)

static char *own(struct target *t, char *s)
{
	char **owned;

	if (!s)
		return NULL;
	owned = realloc(t->owned, (t->nowned + 1) * sizeof(*owned));
	if (!owned) {
		free(s);
		return NULL;
	}
	t->owned = owned;
	t->owned[t->nowned++] = s;
	return s;
}

void target_free(struct target *t)
{
	int i;

	for (i = 0; i < t->nowned; i++)
		free(t->owned[i]);
	free(t->owned);
	free(t->exec_argv);
	free(t->args);
	memset(t, 0, sizeof(*t));
}

static char *own_copy(struct target *t, const char *s)
{
	return s ? own(t, strdup(s)) : NULL;
}

int target_copy(struct target *dst, const struct target *src)
{
	int i;

	memset(dst, 0, sizeof(*dst));
	dst->program = own_copy(dst, src->program);
	dst->program_dir = own_copy(dst, src->program_dir);
	dst->program_dir_given = own_copy(dst, src->program_dir_given);
	dst->args = calloc(src->nargs + 1, sizeof(char *));
	if (!dst->args || (src->program && !dst->program) ||
	    (src->program_dir && !dst->program_dir) ||
	    (src->program_dir_given && !dst->program_dir_given))
		goto nomem;
	for (i = 0; i < src->nargs; i++) {
		dst->args[i] = own_copy(dst, src->args[i]);
		if (!dst->args[i])
			goto nomem;
	}
	dst->nargs = src->nargs;
	/* The command is the program's text (target_describe). */
	dst->command = src->command ? dst->program : NULL;
	return 0;
nomem:
	target_free(dst);
	return -ENOMEM;
}

int find_in_path(const char *name, char *out, unsigned long n)
{
	const char *path = getenv("PATH");
	char *copy, *dir;
	int err = -ENOENT;
	struct stat st;
	char *next;

	if (strchr(name, '/')) {
		if (stat(name, &st))
			return -errno;
		if (!S_ISREG(st.st_mode))
			return -EACCES;
		if (access(name, X_OK))
			return -errno;
		snprintf(out, n, "%s", name);
		return 0;
	}
	copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return -ENOMEM;
	/* strsep, not strtok: an empty entry means the current directory, as
	 * execvp reads it. */
	for (next = copy; (dir = strsep(&next, ":")) != NULL;) {
		if ((unsigned long)snprintf(out, n, "%s/%s", *dir ? dir : ".", name) >= n)
			continue;
		if (!stat(out, &st) && S_ISREG(st.st_mode) && !access(out, X_OK)) {
			err = 0;
			break;
		}
	}
	free(copy);
	return err;
}

/* path as an absolute name, relative to cwd when it is not one. */
static void join_cwd(char *buf, size_t size, const char *path, const char *cwd)
{
	if (path[0] == '/')
		snprintf(buf, size, "%s", path);
	else
		snprintf(buf, size, "%s/%s", cwd, path);
}

static char *absolute(const char *path, const char *cwd)
{
	char buf[PATH_MAX * 2];
	char *real;

	join_cwd(buf, sizeof(buf), path, cwd);
	real = realpath(buf, NULL);
	return real ? real : strdup(buf);
}

/* Removes "." and ".." components and repeated slashes from an absolute
 * path in place, without resolving links (what Python's os.path.abspath
 * does to the main script's name). */
static void normalize_lexically(char *path)
{
	char *out = path, *p = path;

	while (*p) {
		char *end;
		size_t n;

		while (*p == '/')
			p++;
		end = strchrnul(p, '/');
		n = end - p;
		if (n == 1 && p[0] == '.') {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (out > path && *--out != '/')
				;
		} else if (n) {
			*out++ = '/';
			memmove(out, p, n);
			out += n;
		}
		p = end;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/* The absolute folder of path as the interpreter will name it (links kept),
 * when it differs from the resolved one (`real`); else NULL. */
static char *given_dir(struct target *t, const char *path, const char *cwd, const char *real)
{
	char buf[PATH_MAX * 2], *d;

	join_cwd(buf, sizeof(buf), path, cwd);
	normalize_lexically(buf);
	d = dirname(buf);
	if (!strcmp(d, real))
		return NULL;
	return own(t, strdup(d));
}

/* Interpreter options that take a value in the next argument. */
static int takes_value(const char *opt)
{
	return !strcmp(opt, "-W") || !strcmp(opt, "-X") || !strcmp(opt, "--check-hash-based-pycs");
}

int target_describe(struct target *t, char *const *argv, int argc, const char *cwd)
{
	int i;

	t->program_dir = own(t, strdup(cwd));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *p, *mod = NULL;
		bool is_command = false;

		if (a[0] != '-' || !a[1])
			break;
		if (a[1] == '-') {
			if (!a[2]) {
				i++;
				break;
			}
			if (takes_value(a))
				i++;
			continue;
		}
		/* A cluster of short options, as CPython reads them: -c and
		 * -m end it and take the rest or the next argument; -W and -X
		 * take a value the same way. */
		for (p = a + 1; *p; p++) {
			if (*p == 'c' || *p == 'm') {
				if (p[1])
					mod = p + 1;
				else
					mod = ++i < argc ? argv[i] : a;
				is_command = *p == 'c';
				break;
			}
			if (*p == 'W' || *p == 'X') {
				if (!p[1])
					i++;
				break;
			}
		}
		if (mod) {
			t->program = own(t, strdup(mod));
			if (is_command)
				t->command = t->program;
			t->args = calloc(argc - i + 2, sizeof(char *));
			if (!t->args)
				return -ENOMEM;
			t->args[t->nargs++] = (char *)mod;
			for (i++; i < argc; i++)
				t->args[t->nargs++] = argv[i];
			return t->program && t->program_dir ? 0 : -ENOMEM;
		}
	}
	if (i < argc && strcmp(argv[i], "-")) {
		char *abs = own(t, absolute(argv[i], cwd));
		char *d = abs ? own(t, strdup(abs)) : NULL;

		if (!d)
			return -ENOMEM;
		t->program = abs;
		t->program_dir = dirname(d);
		t->program_dir_given = given_dir(t, argv[i], cwd, t->program_dir);
	} else {
		t->program = own(t, strdup(argv[0]));
	}
	t->args = calloc(argc - i + 1, sizeof(char *));
	if (!t->args)
		return -ENOMEM;
	for (t->nargs = 0; i + t->nargs < argc; t->nargs++)
		t->args[t->nargs] = argv[i + t->nargs];
	return t->program ? 0 : -ENOMEM;
}

static bool is_python_script(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && !strcmp(path + n - 3, ".py");
}

/* Whether path is an ELF file: an interpreter named where the script goes. */
static bool is_elf(const char *path)
{
	char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool elf;

	if (fd < 0)
		return false;
	elf = read(fd, magic, sizeof(magic)) == sizeof(magic) && !memcmp(magic,
									 "\x7f"
									 "ELF",
									 4);
	close(fd);
	return elf;
}

int target_exec_image(const char *path, char *out, unsigned long n)
{
	char line[PATH_MAX + 64], *interp, *arg, *end;
	ssize_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	len = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (len < 0)
		return -errno;
	line[len] = '\0';
	if (len < 2 || line[0] != '#' || line[1] != '!') {
		if ((unsigned long)snprintf(out, n, "%s", path) >= n)
			return -ENAMETOOLONG;
		return 0;
	}
	/* The kernel's reading: the interpreter, then one argument (the rest
	 * of the line), blanks and tabs between. */
	end = strchr(line, '\n');
	if (!end)
		return -ENOEXEC;
	*end = '\0';
	interp = line + 2 + strspn(line + 2, " \t");
	arg = interp + strcspn(interp, " \t");
	if (*arg) {
		*arg++ = '\0';
		arg += strspn(arg, " \t");
		arg[strcspn(arg, " \t")] = '\0';
	}
	if (!*interp)
		return -ENOEXEC;
	if (!strcmp(basename(interp), "env") && *arg && *arg != '-')
		return find_in_path(arg, out, n);
	if ((unsigned long)snprintf(out, n, "%s", interp) >= n)
		return -ENAMETOOLONG;
	return 0;
}

int target_from_command(const struct target_command *c, struct target *t)
{
	char cwd[PATH_MAX], interp[PATH_MAX], **v;
	int err, i, first;

	memset(t, 0, sizeof(*t));
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	if (c->raw) {
		err = find_in_path(c->argv[0], interp, sizeof(interp));
		if (err) {
			pr_warn("%s: command not found\n", c->argv[0]);
			return err;
		}
		t->exec_path = own(t, strdup(interp));
		t->exec_argv = calloc(c->argc + 1, sizeof(char *));
		if (!t->exec_argv || !t->exec_path)
			return -ENOMEM;
		for (i = 0; i < c->argc; i++)
			t->exec_argv[i] = c->argv[i];
		/* An interpreter: its arguments name the program. */
		if (!is_python_script(c->argv[0]) && strstr(c->argv[0], "python"))
			return target_describe(t, c->argv, c->argc, cwd);
		/* A script run directly (./tool.py), or a wrapper (a shell script
		 * that runs Python): the first Python script on the command line
		 * is the program, as `python SCRIPT ...` would make it; failing
		 * one, the command itself. */
		for (first = 0; first < c->argc; first++) {
			if (is_python_script(c->argv[first]))
				break;
		}
		if (first == c->argc)
			first = 0;
		v = calloc(c->argc - first + 2, sizeof(char *));
		if (!v)
			return -ENOMEM;
		v[0] = "";
		for (i = first; i < c->argc; i++)
			v[i - first + 1] = c->argv[i];
		err = target_describe(t, v, c->argc - first + 1, cwd);
		free(v);
		if (!err && !is_python_script(c->argv[first]))
			/* No script: the program's own files are where it runs. */
			t->program_dir = own(t, strdup(cwd));
		return err;
	}
	if (access(c->argv[0], R_OK)) {
		err = -errno;
		pr_warn("%s: %s\n", c->argv[0],
			err == -ENOENT ? "no such file (to run a command, put it after --)"
				       : strerror(-err));
		return err;
	}
	if (is_elf(c->argv[0])) {
		pr_warn("%s is a program, not a Python script: to run a command, put it after -- "
			"(scalene-bpf run [options] -- %s ...)\n",
			c->argv[0], c->argv[0]);
		return -ENOEXEC;
	}
	err = find_in_path(c->python, interp, sizeof(interp));
	if (err) {
		pr_warn("Python interpreter '%s' not found; pass --python PATH\n", c->python);
		return err;
	}
	t->exec_argv = calloc(c->argc + 2, sizeof(char *));
	if (!t->exec_argv)
		return -ENOMEM;
	t->exec_argv[0] = own(t, strdup(interp));
	t->exec_path = t->exec_argv[0];
	for (i = 0; i < c->argc; i++)
		t->exec_argv[i + 1] = c->argv[i];
	return target_describe(t, t->exec_argv, c->argc + 1, cwd);
}

int target_from_pid(int pid, struct target *t)
{
	char path[64], cwd[PATH_MAX], *buf, **argv;
	ssize_t n, len = 0;
	int fd, argc = 0, i, err;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
	n = readlink(path, cwd, sizeof(cwd) - 1);
	if (n < 0)
		snprintf(cwd, sizeof(cwd), "/");
	else
		cwd[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = own(t, malloc(MAX_CMDLINE + 1));
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while ((n = read(fd, buf + len, MAX_CMDLINE - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	for (i = 0; i < len; i++)
		argc += buf[i] == '\0';
	argv = calloc(argc + 1, sizeof(char *));
	if (!argv)
		return -ENOMEM;
	for (i = 0, n = 0; i < argc; i++) {
		argv[i] = buf + n;
		n += strlen(buf + n) + 1;
	}
	err = argc ? target_describe(t, argv, argc, cwd) : -EINVAL;
	free(argv);
	/* args point into buf, which the target owns. */
	return err;
}
