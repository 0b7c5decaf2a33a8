// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "profile.h"
#include "strtab.h"

/* Distinct stacks kept; beyond it stacks are counted as dropped (their time
 * still reaches the lines). */
#define MAX_STACKS 20000
/* Line numbers beyond this are not real source lines. */
#define MAX_LINENO 10000000

struct func_key {
	const char *file;
	const char *qualname;
	int firstlineno;
	int pad;
};

struct thread_key {
	int tgid, tid;
};

struct stack_node {
	struct stack_node *next; /* same hash */
	int index;
};

struct profile {
	struct profile_filter filter;
	struct strtab *strings;
	struct hmap *files_by_path; /* interned path -> index + 1 */
	struct file_stats **files;
	int nfiles;
	struct hmap *funcs; /* struct func_key -> struct func_stats */
	struct hmap *stacks_by_hash;
	struct stack_stats **stacks;
	int nstacks;
	uint64_t stacks_dropped;
	struct hmap *threads_by_key;
	struct thread_stats **threads;
	int nthreads;
	double total_ns, idle_ns, not_python_ns;
	double unattributed_ns[UNATTR_MAX];
	uint64_t samples, truncated;
	uint64_t rng;
};

static void *grow(void *arr, int n, size_t elem)
{
	/* Doubling at powers of two: n is the current count. */
	if (n & (n - 1) || !n) {
		if (n)
			return arr;
		return malloc(elem);
	}
	return realloc(arr, 2 * (size_t)n * elem);
}

struct profile *profile__new(const struct profile_filter *filter)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->filter = *filter;
	p->strings = strtab__new();
	p->files_by_path = hmap__new(sizeof(const char *));
	p->funcs = hmap__new(sizeof(struct func_key));
	p->stacks_by_hash = hmap__new(sizeof(uint64_t));
	p->threads_by_key = hmap__new(sizeof(struct thread_key));
	p->rng = 0x9e3779b97f4a7c15ULL;
	if (!p->strings || !p->files_by_path || !p->funcs || !p->stacks_by_hash ||
	    !p->threads_by_key) {
		profile__free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void profile__free(struct profile *p)
{
	size_t it = 0;
	void *v;
	int i, j;

	if (!p)
		return;
	for (i = 0; i < p->nfiles; i++) {
		for (j = 0; j < p->files[i]->nlines; j++)
			free(p->files[i]->lines[j]);
		free(p->files[i]->lines);
		free(p->files[i]->funcs);
		free(p->files[i]);
	}
	free(p->files);
	while (p->funcs && hmap__next(p->funcs, &it, NULL, &v))
		free(v);
	it = 0;
	while (p->stacks_by_hash && hmap__next(p->stacks_by_hash, &it, NULL, &v)) {
		struct stack_node *n = v;

		while (n) {
			struct stack_node *next = n->next;

			free(n);
			n = next;
		}
	}
	for (i = 0; i < p->nstacks; i++) {
		free((void *)p->stacks[i]->frames);
		free(p->stacks[i]);
	}
	free(p->stacks);
	for (i = 0; i < p->nthreads; i++)
		free(p->threads[i]);
	free(p->threads);
	hmap__free(p->files_by_path);
	hmap__free(p->funcs);
	hmap__free(p->stacks_by_hash);
	hmap__free(p->threads_by_key);
	strtab__free(p->strings);
	free(p);
}

const char *profile__intern(struct profile *p, const char *s)
{
	return strtab__intern(p->strings, s ? s : "");
}

static bool under_dir(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return !strncmp(path, dir, n) && (path[n] == '/' || (n == 1 && dir[0] == '/'));
}

bool profile__file_profiled(const struct profile *p, const char *path)
{
	const struct profile_filter *f = &p->filter;
	int i;

	/* "<frozen importlib._bootstrap>", "<string>", "<stdin>": no source. */
	if (!path[0] || path[0] == '<')
		return false;
	for (i = 0; i < f->nexclude; i++) {
		if (strstr(path, f->exclude[i]))
			return false;
	}
	if (f->nonly) {
		for (i = 0; i < f->nonly; i++) {
			if (strstr(path, f->only[i]))
				return true;
		}
		return false;
	}
	if (f->profile_all)
		return true;
	/* Relative names are relative to the program's working directory,
	 * which is where its own files are. */
	if (path[0] != '/')
		return true;
	return f->program_dir && under_dir(path, f->program_dir) &&
	       !strstr(path, "/site-packages/") && !strstr(path, "/dist-packages/");
}

static struct file_stats *file_get(struct profile *p, const char *path)
{
	struct file_stats *f, **files;
	intptr_t idx = (intptr_t)hmap__get(p->files_by_path, &path);

	if (idx)
		return p->files[idx - 1];
	f = calloc(1, sizeof(*f));
	files = grow(p->files, p->nfiles, sizeof(*files));
	if (!f || !files) {
		free(f);
		return NULL;
	}
	p->files = files;
	f->path = path;
	p->files[p->nfiles++] = f;
	if (hmap__put(p->files_by_path, &path, (void *)(intptr_t)p->nfiles)) {
		p->nfiles--;
		free(f);
		return NULL;
	}
	return f;
}

static struct line_stats *line_get(struct file_stats *f, int line)
{
	if (line < 1 || line > MAX_LINENO)
		return NULL;
	if (line >= f->nlines) {
		int n = line + 1 > 2 * f->nlines ? line + 1 : 2 * f->nlines;
		struct line_stats **lines = realloc(f->lines, n * sizeof(*lines));

		if (!lines)
			return NULL;
		memset(lines + f->nlines, 0, (n - f->nlines) * sizeof(*lines));
		f->lines = lines;
		f->nlines = n;
	}
	if (!f->lines[line])
		f->lines[line] = calloc(1, sizeof(struct line_stats));
	return f->lines[line];
}

static uint64_t next_rand(struct profile *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

static void add_sym(struct line_stats *st, const char *name, const char *module, double ns)
{
	int i, min = 0;

	for (i = 0; i < st->nsyms; i++) {
		if (st->syms[i].name == name && st->syms[i].module == module) {
			st->syms[i].ns += ns;
			return;
		}
		if (st->syms[i].ns < st->syms[min].ns)
			min = i;
	}
	if (st->nsyms < LINE_NATIVE_SYMS) {
		st->syms[st->nsyms++] = (struct native_sym){ name, module, ns };
		return;
	}
	/* Full: the smallest entry gives way (space-saving counting). */
	st->syms[min] = (struct native_sym){ name, module, st->syms[min].ns + ns };
}

static void add_to_stats(struct profile *p, struct line_stats *st, const struct sample_in *s,
			 double cpu, double blocked, bool record_time)
{
	if (s->where == WHERE_PYTHON)
		st->python_ns += cpu;
	else if (s->where == WHERE_NATIVE)
		st->native_ns += cpu;
	else
		st->system_ns += cpu;
	st->system_ns += blocked;
	st->blocked_ns += blocked;
	st->samples++;
	if (cpu > 0) {
		st->util_sum += s->core_util;
		st->util_n++;
	}
	if (s->where == WHERE_NATIVE && s->native_sym && cpu > 0)
		add_sym(st, s->native_sym, s->native_module, cpu);
	if (!record_time || !s->main_thread || cpu <= 0)
		return;
	/* Reservoir of the main thread's sample times (algorithm R). */
	st->cpu_times_seen++;
	if (st->ncpu_times < CPU_SAMPLES_RESERVOIR) {
		st->cpu_times[st->ncpu_times++] = s->ts_ns / 1e9;
	} else {
		uint64_t j = next_rand(p) % st->cpu_times_seen;

		if (j < CPU_SAMPLES_RESERVOIR)
			st->cpu_times[j] = s->ts_ns / 1e9;
	}
}

int profile_enclosing_function(const char *qualname, char *buf, size_t n)
{
	size_t len = strlen(qualname);
	const char *last;

	/* Strip trailing ".<locals>.<x>" pairs while the last name is not a
	 * real function's (Scalene walks out of frames whose co_name has '<'). */
	for (;;) {
		const char *dot = NULL, *p;

		for (p = qualname; p < qualname + len; p++)
			if (*p == '.')
				dot = p;
		last = dot ? dot + 1 : qualname;
		if (last[0] != '<')
			break;
		if (!dot || dot - qualname < 9 || strncmp(dot - 9, ".<locals>", 9))
			return 0;
		len = dot - 9 - qualname;
	}
	if (len == strlen(qualname) || len + 1 > n)
		return 0;
	memcpy(buf, qualname, len);
	buf[len] = '\0';
	return 1;
}

static struct func_stats *func_get(struct profile *p, struct file_stats *f,
				   const struct sample_in *s, int at)
{
	const struct frame_ref *fr = &s->frames[at];
	struct func_key k = { .file = f->path,
			      .qualname = fr->qualname,
			      .firstlineno = fr->firstlineno };
	struct func_stats *fs, **funcs;
	char buf[1024];
	int i;

	if ((strrchr(fr->qualname, '.') ? strrchr(fr->qualname, '.')[1] : fr->qualname[0]) == '<') {
		if (!strcmp(fr->qualname, "<module>"))
			return NULL;
		if (profile_enclosing_function(fr->qualname, buf, sizeof(buf))) {
			/* 3.11+: the name says where it is defined. */
			k.qualname = profile__intern(p, buf);
			k.firstlineno = 0;
			for (i = at + 1; i < s->nframes; i++) {
				if (s->frames[i].qualname == k.qualname &&
				    s->frames[i].filename == fr->filename) {
					k.firstlineno = s->frames[i].firstlineno;
					break;
				}
			}
		} else {
			/* <= 3.10 names carry no scope: the caller in the same file. */
			for (i = at + 1; i < s->nframes; i++) {
				if (s->frames[i].filename != fr->filename)
					continue;
				if (strchr(s->frames[i].qualname, '<'))
					continue;
				k.qualname = s->frames[i].qualname;
				k.firstlineno = s->frames[i].firstlineno;
				break;
			}
			if (strchr(k.qualname, '<'))
				return NULL;
		}
		if (!k.qualname || !k.firstlineno)
			return NULL;
	}
	fs = hmap__get(p->funcs, &k);
	if (fs)
		return fs;
	fs = calloc(1, sizeof(*fs));
	funcs = grow(f->funcs, f->nfuncs, sizeof(*funcs));
	if (!fs || !funcs) {
		free(fs);
		return NULL;
	}
	f->funcs = funcs;
	fs->qualname = k.qualname;
	fs->firstlineno = k.firstlineno;
	if (hmap__put(p->funcs, &k, fs)) {
		free(fs);
		return NULL;
	}
	f->funcs[f->nfuncs++] = fs;
	return fs;
}

static uint64_t stack_hash(const struct sample_in *s)
{
	uint64_t h = hash_bytes(s->frames, s->nframes * sizeof(*s->frames));

	return h ^ hash_bytes(&s->native_sym, sizeof(s->native_sym));
}

static bool stack_equal(const struct stack_stats *st, const struct sample_in *s)
{
	int i;

	if (st->nframes != s->nframes || st->native_sym != s->native_sym)
		return false;
	for (i = 0; i < s->nframes; i++) {
		if (memcmp(&st->frames[i], &s->frames[s->nframes - 1 - i], sizeof(st->frames[i])))
			return false;
	}
	return true;
}

static void add_stack(struct profile *p, const struct sample_in *s, double cpu, double blocked)
{
	uint64_t h = stack_hash(s);
	struct stack_node *head = hmap__get(p->stacks_by_hash, &h), *n;
	struct stack_stats *st = NULL, **stacks;
	struct frame_ref *frames;
	int i;

	for (n = head; n; n = n->next) {
		if (stack_equal(p->stacks[n->index], s)) {
			st = p->stacks[n->index];
			break;
		}
	}
	if (!st) {
		if (p->nstacks >= MAX_STACKS) {
			p->stacks_dropped++;
			return;
		}
		st = calloc(1, sizeof(*st));
		n = calloc(1, sizeof(*n));
		frames = malloc((s->nframes ? s->nframes : 1) * sizeof(*frames));
		stacks = grow(p->stacks, p->nstacks, sizeof(*stacks));
		if (!st || !n || !frames || !stacks) {
			free(st);
			free(n);
			free(frames);
			p->stacks_dropped++;
			return;
		}
		p->stacks = stacks;
		for (i = 0; i < s->nframes; i++)
			frames[i] = s->frames[s->nframes - 1 - i];
		st->frames = frames;
		st->nframes = s->nframes;
		st->native_sym = s->native_sym;
		st->native_module = s->native_module;
		n->index = p->nstacks;
		n->next = head;
		if (hmap__put(p->stacks_by_hash, &h, n)) {
			free(st);
			free(n);
			free(frames);
			p->stacks_dropped++;
			return;
		}
		p->stacks[p->nstacks++] = st;
	}
	st->count++;
	if (s->where == WHERE_PYTHON)
		st->python_ns += cpu;
	else if (s->where == WHERE_NATIVE)
		st->native_ns += cpu;
	else
		st->system_ns += cpu;
	st->system_ns += blocked;
}

static struct thread_stats *thread_get(struct profile *p, const struct sample_in *s)
{
	struct thread_key k = { s->tgid, s->tid };
	struct thread_stats *t = hmap__get(p->threads_by_key, &k), **threads;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	threads = grow(p->threads, p->nthreads, sizeof(*threads));
	if (!t || !threads) {
		free(t);
		return NULL;
	}
	p->threads = threads;
	t->tgid = s->tgid;
	t->tid = s->tid;
	t->main_thread = s->main_thread;
	if (hmap__put(p->threads_by_key, &k, t)) {
		free(t);
		return NULL;
	}
	p->threads[p->nthreads++] = t;
	return t;
}

void profile__add(struct profile *p, const struct sample_in *s)
{
	double cpu = s->cpu_ns, blocked = s->offcpu_ns;
	struct thread_stats *t = thread_get(p, s);
	struct file_stats *f = NULL;
	struct line_stats *st;
	struct func_stats *fs;
	int i, at = -1, reason = s->unattributed;

	p->samples++;
	if (s->truncated)
		p->truncated++;
	if (t) {
		t->samples++;
		t->cpu_ns += cpu;
		if (s->thread_name)
			t->name = s->thread_name;
		if (s->offcpu_idle && !p->filter.idle)
			t->idle_ns += blocked;
		else
			t->blocked_ns += blocked;
	}
	if (s->not_python) {
		p->not_python_ns += cpu + blocked;
		return;
	}
	/* A parked worker's waiting is not the program's time (unless asked):
	 * kept apart so that thirty idle threads do not bury the profile. */
	if (s->offcpu_idle && !p->filter.idle) {
		p->idle_ns += blocked;
		blocked = 0;
	}
	p->total_ns += cpu + blocked;
	if (cpu + blocked <= 0)
		return;
	if (reason < 0) {
		for (i = 0; i < s->nframes; i++) {
			if (profile__file_profiled(p, s->frames[i].filename)) {
				at = i;
				break;
			}
		}
		if (at < 0)
			reason = s->nframes ? UNATTR_NOT_PROFILED : UNATTR_UNREADABLE;
	}
	if (s->nframes)
		add_stack(p, s, cpu, blocked);
	if (at < 0) {
		if (reason < 0 || reason >= UNATTR_MAX)
			reason = UNATTR_UNREADABLE;
		p->unattributed_ns[reason] += cpu + blocked;
		return;
	}
	f = file_get(p, s->frames[at].filename);
	if (!f)
		return;
	st = line_get(f, s->frames[at].line > 0 ? s->frames[at].line : s->frames[at].firstlineno);
	if (!st)
		return;
	add_to_stats(p, st, s, cpu, blocked, true);
	f->total_ns += cpu + blocked;
	if (s->where != WHERE_SYSTEM)
		f->cpu_ns += cpu;
	fs = func_get(p, f, s, at);
	if (fs)
		add_to_stats(p, &fs->st, s, cpu, blocked, false);
}

double profile__total_ns(const struct profile *p)
{
	return p->total_ns;
}

double profile__idle_ns(const struct profile *p)
{
	return p->idle_ns;
}

double profile__not_python_ns(const struct profile *p)
{
	return p->not_python_ns;
}

double profile__unattributed_ns(const struct profile *p, enum unattributed_reason r)
{
	return r < UNATTR_MAX ? p->unattributed_ns[r] : 0;
}

uint64_t profile__samples(const struct profile *p)
{
	return p->samples;
}

uint64_t profile__truncated(const struct profile *p)
{
	return p->truncated;
}

uint64_t profile__stacks_dropped(const struct profile *p)
{
	return p->stacks_dropped;
}

int profile__nfiles(const struct profile *p)
{
	return p->nfiles;
}

const struct file_stats *profile__file(const struct profile *p, int i)
{
	return i >= 0 && i < p->nfiles ? p->files[i] : NULL;
}

int profile__nstacks(const struct profile *p)
{
	return p->nstacks;
}

const struct stack_stats *profile__stack(const struct profile *p, int i)
{
	return i >= 0 && i < p->nstacks ? p->stacks[i] : NULL;
}

int profile__nthreads(const struct profile *p)
{
	return p->nthreads;
}

const struct thread_stats *profile__thread(const struct profile *p, int i)
{
	return i >= 0 && i < p->nthreads ? p->threads[i] : NULL;
}
