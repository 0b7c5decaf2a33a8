// SPDX-License-Identifier: BSD-2-Clause
/*
 * `scalene-bpf view`: reads a profile and hands it to the terminal view, the
 * HTML page or an export.  Files are written as the invoking user (see
 * creds.h, safefile.h); the browser is started as that user too, never as
 * root.  Diagnostics go through the logger; stdout carries only the view or
 * export asked for.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base/creds.h"
#include "view/hostindex.h"
#include "base/log.h"
#include "cli/options.h"
#include "base/safefile.h"
#include "view/view.h"
#include "cli/view_cmd.h"
#include "view/viewutil.h"

/* The whole file in memory (at most max bytes); NULL with a message. */
static char *read_file(const char *path, size_t *len, unsigned long long max)
{
	struct stat st;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_warn("cannot open %s: %s\n", path, strerror(errno));
		if (errno == ENOENT)
			pr_warn("write one with: scalene-bpf run -o %s prog.py\n", path);
		return NULL;
	}
	if (fstat(fd, &st) || S_ISDIR(st.st_mode)) {
		pr_warn("%s is a directory, not a profile\n", path);
		close(fd);
		return NULL;
	}
	if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max) {
		pr_warn("%s is too large to be a profile\n", path);
		close(fd);
		return NULL;
	}
	cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 1 << 16;
	for (;;) {
		if (n == cap) {
			char *nb;

			if (cap > max) {
				pr_warn("%s is too large to be a profile\n", path);
				goto fail;
			}
			nb = realloc(buf, cap * 2);
			if (!nb)
				goto oom;
			buf = nb;
			cap *= 2;
		}
		if (!buf) {
			buf = malloc(cap);
			if (!buf)
				goto oom;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			pr_warn("cannot read %s: %s\n", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	*len = n;
	return buf;
oom:
	pr_warn("out of memory reading %s\n", path);
fail:
	free(buf);
	close(fd);
	return NULL;
}

static bool have_display(void)
{
	const char *x = getenv("DISPLAY"), *w = getenv("WAYLAND_DISPLAY");

	return (x && *x) || (w && *w);
}

/* The page's default path: the profile's, .json replaced by .html. */
static void html_path_for(const char *profile, char *buf, size_t n)
{
	size_t l = strlen(profile);

	if (l > 5 && !strcmp(profile + l - 5, ".json"))
		l -= 5;
	snprintf(buf, n, "%.*s.html", (int)l, profile);
}

/* Starts the user's browser on path, as the user when under sudo; does not
 * wait for the browser itself (xdg-open returns once it has handed over). */
static void open_browser(const char *path, const struct user_creds *c)
{
	char url[2 * PATH_MAX + 8];
	int status;
	pid_t pid;

	if (path[0] == '/')
		snprintf(url, sizeof(url), "file://%s", path);
	else {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			goto manual;
		snprintf(url, sizeof(url), "file://%s/%s", cwd, path);
	}
	pid = fork();
	if (pid < 0)
		goto manual;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (creds_become_user(c))
			_exit(126);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execlp("xdg-open", "xdg-open", url, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		pr_warn("opened %s in the browser\n", path);
		return;
	}
manual:
	pr_warn("could not start a browser (xdg-open); open %s in one\n", path);
}

/* Renders into memory, then writes the file as the user (or to stdout when
 * path is NULL). */
static int emit(struct json_object *doc, const struct options *o, const struct view_opts *vo,
		const char *path, const struct user_creds *c)
{
	enum export_format fmt = EXPORT_FOLDED;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (o->view_format && export_parse_format(o->view_format, &fmt)) {
		pr_warn("unknown export format '%s'; use folded, speedscope, pprof or "
			"otlp\n",
			o->view_format);
		return -EINVAL;
	}
	if (o->view_format && (fmt == EXPORT_PPROF || fmt == EXPORT_OTLP) && !path &&
	    isatty(STDOUT_FILENO)) {
		pr_warn("%s is binary; give -o FILE (or redirect the output)\n", o->view_format);
		return -EINVAL;
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		pr_warn("out of memory\n");
		return -ENOMEM;
	}
	if (o->view_format)
		err = export_write(doc, fmt, o->view_file, f, stderr);
	else
		err = view_write_html(doc, o->view_file, vo, f, stderr);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (!err && !path) {
		if (fwrite(buf, 1, len, stdout) != len || fflush(stdout)) {
			pr_warn("writing to the standard output: %s\n", strerror(errno));
			err = -EIO;
		}
	} else if (!err) {
		err = outfile_write(path, buf, len, c);
		if (err)
			pr_warn("cannot write %s: %s\n", path, strerror(-err));
	}
	free(buf);
	return err;
}

static bool is_directory(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* dir/name without a doubled slash; false when it does not fit. */
static bool join(char *buf, size_t n, const char *dir, const char *name)
{
	size_t l = strlen(dir);
	int w = snprintf(buf, n, "%s%s%s", dir, l && dir[l - 1] == '/' ? "" : "/", name);

	return w > 0 && (size_t)w < n;
}

/* The index of a system-wide run's directory; NULL with a message. */
static struct host_index *read_index(const char *dir)
{
	struct host_index *hi;
	char path[PATH_MAX];
	struct stat st;
	size_t len = 0;
	char *data;

	if (!join(path, sizeof(path), dir, HOST_INDEX_NAME)) {
		pr_warn("%s: path too long\n", dir);
		return NULL;
	}
	if (stat(path, &st) && errno == ENOENT) {
		pr_warn("%s is a directory without %s: not the output of scalene-bpf --all -o "
			"DIR; to view one profile, name its file\n",
			dir, HOST_INDEX_NAME);
		return NULL;
	}
	data = read_file(path, &len, HOST_INDEX_MAX_BYTES);
	if (!data)
		return NULL;
	hi = host_index__parse(data, len, path, stderr);
	free(data);
	return hi;
}

/* Marks the processes whose profile file is not there. */
static void check_profiles(struct host_index *hi, const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	size_t i;

	for (i = 0; i < hi->nprofiled; i++) {
		struct host_proc *p = &hi->procs[i];

		if (!p->profile)
			continue;
		if (!join(path, sizeof(path), dir, p->profile) || stat(path, &st) ||
		    !S_ISREG(st.st_mode))
			p->problem = strdup("the profile file is missing");
	}
}

/* What went to a message stream, as one line without our prefix. */
static char *message_of(char *buf, size_t len)
{
	const char *prefix = "scalene-bpf: ";
	char *s = buf && len ? buf : NULL, *nl;

	if (!s)
		return strdup("unreadable");
	if (!strncmp(s, prefix, strlen(prefix)))
		memmove(s, s + strlen(prefix), strlen(s + strlen(prefix)) + 1);
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	return strdup(s);
}

/* The page of one process's profile, written to page_path; the reason in
 * p->problem (and on stderr) when the profile cannot be shown. */
static int write_proc_page(struct host_proc *p, const char *profile_path, const char *page_path,
			   const struct view_opts *vo, const struct user_creds *c)
{
	char *msg = NULL, *page = NULL, *data = NULL;
	size_t msglen = 0, pagelen = 0, len = 0;
	struct json_object *doc = NULL;
	FILE *err = NULL, *f = NULL;
	struct stat st;
	int ret = 0;

	if (stat(profile_path, &st) || !S_ISREG(st.st_mode)) {
		p->problem = strdup("the profile file is missing");
		goto out;
	}
	data = read_file(profile_path, &len, VIEW_MAX_PROFILE_BYTES);
	if (!data) {
		p->problem = strdup("the profile file cannot be read");
		goto out;
	}
	err = open_memstream(&msg, &msglen);
	f = open_memstream(&page, &pagelen);
	if (!err || !f) {
		pr_warn("out of memory\n");
		ret = -ENOMEM;
		goto out;
	}
	/* Named by its path, as `view --html DIR/FILE` names it: the same page. */
	doc = view_parse(data, len, profile_path, err);
	ret = doc ? view_write_html(doc, profile_path, vo, f, err) : -EINVAL;
	fclose(f);
	f = NULL;
	fclose(err);
	err = NULL;
	if (ret == -EINVAL) {
		ret = 0;
		p->problem = message_of(msg, msglen);
	} else if (!ret) {
		ret = outfile_write(page_path, page, pagelen, c);
		if (ret)
			pr_warn("cannot write %s: %s\n", page_path, strerror(-ret));
	}
out:
	/* The reader's messages name the file already. */
	if (p->problem && !strncmp(p->problem, profile_path, strlen(profile_path)))
		pr_warn("%s\n", p->problem);
	else if (p->problem)
		pr_warn("%s: %s\n", profile_path, p->problem);
	if (f)
		fclose(f);
	if (err)
		fclose(err);
	json_object_put(doc);
	free(data);
	free(msg);
	free(page);
	return ret;
}

/* The host's page at html, each process's page beside it: without a name
 * given (DIR/index.html), DIR/<profile>.html, where `view --html
 * DIR/<profile>.json` writes it; with one (OUT.html), OUT-<profile>.html. */
static int write_host_pages(struct host_index *hi, const char *dir, const char *html, bool named,
			    const struct view_opts *vo, const struct user_creds *c)
{
	const char *slash = strrchr(html, '/'), *base = slash ? slash + 1 : html;
	size_t i, pages = 0, blen = strlen(base), dlen = (size_t)(base - html);
	char *buf = NULL, ipath[PATH_MAX];
	size_t len = 0;
	FILE *f;
	int err;

	if (blen > 5 && !strcmp(base + blen - 5, ".html"))
		blen -= 5;
	for (i = 0; i < hi->nprofiled; i++) {
		struct host_proc *p = &hi->procs[i];
		size_t plen = p->profile ? strlen(p->profile) : 0;
		char ppath[PATH_MAX], out[PATH_MAX];
		int w;

		if (!p->profile)
			continue;
		if (plen > 5 && !strcmp(p->profile + plen - 5, ".json"))
			plen -= 5;
		if (named)
			w = snprintf(out, sizeof(out), "%.*s%.*s-%.*s.html", (int)dlen, html,
				     (int)blen, base, (int)plen, p->profile);
		else
			w = snprintf(out, sizeof(out), "%.*s%.*s.html", (int)dlen, html, (int)plen,
				     p->profile);
		if (w <= 0 || (size_t)w >= sizeof(out) ||
		    !join(ppath, sizeof(ppath), dir, p->profile)) {
			p->problem = strdup("path too long");
			continue;
		}
		if (!strcmp(out, html)) {
			p->problem = strdup("its page would be the host page itself");
			pr_warn("%s: %s\n", p->profile, p->problem);
			continue;
		}
		err = write_proc_page(p, ppath, out, vo, c);
		if (err)
			return err;
		if (!p->problem) {
			p->page = strdup(out + dlen);
			pages++;
		}
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		pr_warn("out of memory\n");
		return -ENOMEM;
	}
	if (!join(ipath, sizeof(ipath), dir, HOST_INDEX_NAME))
		snprintf(ipath, sizeof(ipath), "%s", HOST_INDEX_NAME);
	err = view_write_host_html(hi, ipath, f, stderr);
	if (fclose(f) && !err)
		err = -ENOMEM;
	if (!err) {
		err = outfile_write(html, buf, len, c);
		if (err)
			pr_warn("cannot write %s: %s\n", html, strerror(-err));
	}
	free(buf);
	if (!err)
		pr_warn("HTML view written to %s, with %zu process page%s beside it\n", html, pages,
			pages == 1 ? "" : "s");
	return err;
}

/* `view DIR`: a system-wide run's directory. */
static int view_host(const struct options *o, const struct view_opts *vo, bool html_mode,
		     const struct user_creds *c)
{
	struct host_index *hi;
	char html[PATH_MAX];
	int err;

	if (o->view_format) {
		pr_warn("%s is a directory: --format exports one profile; name its file "
			"(DIR/FILE.json)\n",
			o->view_file);
		return 1;
	}
	hi = read_index(o->view_file);
	if (!hi)
		return 1;
	if (html_mode) {
		if (o->view_html_out)
			snprintf(html, sizeof(html), "%s", o->view_html_out);
		else if (!join(html, sizeof(html), o->view_file, "index.html"))
			html[0] = '\0';
		if (!html[0])
			pr_warn("%s: path too long\n", o->view_file);
		err = html[0] ? write_host_pages(hi, o->view_file, html, o->view_html_out != NULL,
						 vo, c)
			      : -ENAMETOOLONG;
		if (!err && !o->view_html)
			open_browser(html, c);
	} else {
		check_profiles(hi, o->view_file);
		err = view_print_host_cli(hi, o->view_file, stdout, vo);
	}
	host_index__free(hi);
	return err ? 1 : 0;
}

static struct json_object *volatile kept_doc;

int view_main(const struct options *o)
{
	struct user_creds creds;
	struct json_object *doc;
	struct view_opts vo = {
		.threshold = o->cpu_percent_threshold,
		.all_lines = o->view_all_lines,
		.width = vj_term_width(STDOUT_FILENO),
		.color = vj_want_color(STDOUT_FILENO),
	};
	char html[PATH_MAX];
	bool html_mode = o->view_html || (!o->view_cli && !o->view_format && have_display());
	size_t len = 0;
	char *data;
	int err;

	if (creds_from_env(&creds))
		return 1;
	if (is_directory(o->view_file))
		return view_host(o, &vo, html_mode, &creds);
	data = read_file(o->view_file, &len, VIEW_MAX_PROFILE_BYTES);
	if (!data)
		return 1;
	doc = view_parse(data, len, o->view_file, stderr);
	free(data);
	if (!doc)
		return 1;
	if (o->view_format) {
		err = emit(doc, o, &vo, o->outfile, &creds);
		if (!err && o->outfile)
			pr_warn("%s export written to %s\n", o->view_format, o->outfile);
	} else if (html_mode) {
		if (o->view_html_out)
			snprintf(html, sizeof(html), "%s", o->view_html_out);
		else
			html_path_for(o->view_file, html, sizeof(html));
		err = emit(doc, o, &vo, html, &creds);
		if (!err) {
			pr_warn("HTML view written to %s\n", html);
			if (!o->view_html)
				open_browser(html, &creds);
		}
	} else {
		err = view_print_cli(doc, stdout, stderr, &vo);
	}
	/* The process ends here: freeing a large profile object by object
	 * would add a tenth of its parse time.  Kept reachable, so that leak
	 * checkers do not count it. */
	kept_doc = doc;
	return err ? 1 : 0;
}
