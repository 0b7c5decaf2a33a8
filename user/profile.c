// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "profile.h"
#include "strtab.h"

/* Distinct stacks kept; beyond it stacks are counted as dropped (their time
 * still reaches the lines, and the stacks' overflow entry). */
#define MAX_STACKS 20000
/* Threads with statistics of their own; the threads after them share one
 * entry, so that a service starting threads all day keeps a bounded model. */
#define MAX_THREAD_STATS 2048
/* Line numbers beyond this are not real source lines. */
#define MAX_LINENO 10000000
/* Sampled blocks followed until their free, all processes together: the
 * sampler itself tracks at most 32768 per process. */
#define MAX_LIVE_BLOCKS (1 << 20)
/* Installed packages tallied for the outside-files warning. */
#define MAX_OUTSIDE_PKGS 16

struct func_key {
	const char *file;
	const char *qualname;
	int firstlineno;
	int pad;
};

struct thread_key {
	int tgid, tid;
};

struct block_key {
	int tgid, pad;
	uint64_t addr;
};

/* A sampled block not yet freed, and where it was allocated. */
struct live_block {
	struct mem_stats *line, *func;
	double bytes;
	int small; /* its net window (mem_stats.win_up) */
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
	struct stack_stats *overflow; /* stacks that found the table full */
	struct hmap *threads_by_key;
	struct thread_stats *other_threads; /* past MAX_THREAD_STATS */
	uint64_t threads_folded;	    /* threads counted in it */
	struct thread_stats **threads;
	int nthreads;
	double total_ns, not_python_ns, gil_ns;
	double unattributed_ns[UNATTR_MAX];
	/* Installed packages whose code ran in samples outside the profiled
	 * files, for the warning that suggests --profile-only. */
	struct outside_pkg {
		const char *name; /* interned */
		double ns;
	} outside[MAX_OUTSIDE_PKGS];
	uint64_t samples, truncated;
	uint64_t rng;
	struct hmap *blocks; /* struct block_key -> struct live_block */
	struct profile_memory mem;
	struct profile_timeline timeline;
	struct decorated_fn *decorated;
	int ndecorated;
	struct hmap *decorated_by_code; /* struct decorated_key -> index + 1 */
	double await_ns, await_unattributed_ns;
	struct hmap *await_by_key; /* struct await_key -> index + 1 */
	struct await_stack *await_stacks;
	int nawait_stacks;
	uint64_t await_stacks_dropped;
};

struct decorated_key {
	const char *file; /* interned */
	int64_t firstlineno;
};

/* Most of the sampled Python time outside the profiled files: the profile
 * says little of what the program did, which the user is told. */
#define OUTSIDE_WARN_SHARE 0.5
/* ... and at least this much of it: Python's own start-up runs outside
 * every file of the program, and a program of a few milliseconds is mostly
 * start-up. */
#define OUTSIDE_WARN_MIN_NS 100e6

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
	p->blocks = hmap__new(sizeof(struct block_key));
	p->decorated_by_code = hmap__new(sizeof(struct decorated_key));
	p->rng = 0x9e3779b97f4a7c15ULL;
	if (!p->strings || !p->files_by_path || !p->funcs || !p->stacks_by_hash ||
	    !p->threads_by_key || !p->blocks || !p->decorated_by_code) {
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
		for (j = 0; j < p->files[i]->nlines; j++) {
			if (p->files[i]->lines[j]) {
				free(p->files[i]->lines[j]->mem);
				free(p->files[i]->lines[j]->aw);
			}
			free(p->files[i]->lines[j]);
		}
		free(p->files[i]->lines);
		free(p->files[i]->funcs);
		free(p->files[i]);
	}
	free(p->files);
	while (p->funcs && hmap__next(p->funcs, &it, NULL, &v)) {
		free(((struct func_stats *)v)->st.mem);
		free(((struct func_stats *)v)->st.aw);
		free(v);
	}
	it = 0;
	while (p->blocks && hmap__next(p->blocks, &it, NULL, &v))
		free(v);
	hmap__free(p->blocks);
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
	free(p->overflow);
	for (i = 0; i < p->nthreads; i++)
		free(p->threads[i]);
	free(p->threads);
	hmap__free(p->files_by_path);
	hmap__free(p->funcs);
	hmap__free(p->stacks_by_hash);
	hmap__free(p->threads_by_key);
	hmap__free(p->decorated_by_code);
	free(p->decorated);
	for (i = 0; i < p->nawait_stacks; i++)
		free((void *)p->await_stacks[i].frames);
	free(p->await_stacks);
	hmap__free(p->await_by_key);
	free(p->timeline.ev);
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
	return ((f->program_dir && under_dir(path, f->program_dir)) ||
		(f->program_dir_given && under_dir(path, f->program_dir_given))) &&
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
			 double cpu, double blocked, double gil, bool record_time)
{
	if (s->where == WHERE_PYTHON)
		st->python_ns += cpu;
	else if (s->where == WHERE_NATIVE)
		st->native_ns += cpu;
	else
		st->system_ns += cpu;
	st->system_ns += blocked;
	st->blocked_ns += blocked;
	st->gil_ns += gil;
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
				   const struct frame_ref *frames, int nframes, int at)
{
	const struct frame_ref *fr = &frames[at];
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
			for (i = at + 1; i < nframes; i++) {
				if (frames[i].qualname == k.qualname &&
				    frames[i].filename == fr->filename) {
					k.firstlineno = frames[i].firstlineno;
					break;
				}
			}
		} else {
			/* <= 3.10 names carry no scope: the caller in the same file. */
			for (i = at + 1; i < nframes; i++) {
				if (frames[i].filename != fr->filename)
					continue;
				if (strchr(frames[i].qualname, '<'))
					continue;
				k.qualname = frames[i].qualname;
				k.firstlineno = frames[i].firstlineno;
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

/* A stack's identity: its frames, its leaf native symbol, and whether its
 * outermost frames are missing. */
struct stack_key {
	const struct frame_ref *frames; /* innermost first */
	int nframes;
	const char *native_sym;
	const char *native_module;
	bool truncated;
};

static uint64_t stack_hash(const struct stack_key *k)
{
	uint64_t h = hash_bytes(k->frames, k->nframes * sizeof(*k->frames));

	h ^= hash_bytes(&k->native_sym, sizeof(k->native_sym));
	return k->truncated ? ~h : h;
}

static bool stack_equal(const struct stack_stats *st, const struct stack_key *k)
{
	const struct frame_ref *frames = k->frames;
	int i, nframes = k->nframes;

	if (st->nframes != nframes || st->native_sym != k->native_sym ||
	    st->truncated != k->truncated)
		return false;
	for (i = 0; i < nframes; i++) {
		if (memcmp(&st->frames[i], &frames[nframes - 1 - i], sizeof(st->frames[i])))
			return false;
	}
	return true;
}

/* The stack, found or added, and its index; the overflow stack (index
 * MAX_STACKS) when the table is full; NULL out of memory. */
static struct stack_stats *stack_get(struct profile *p, const struct stack_key *k, int *index)
{
	const struct frame_ref *frames = k->frames;
	int nframes = k->nframes;
	uint64_t h = stack_hash(k);
	struct stack_node *head = hmap__get(p->stacks_by_hash, &h), *n;
	struct stack_stats *st, **stacks;
	struct frame_ref *copy;
	int i;

	for (n = head; n; n = n->next) {
		if (stack_equal(p->stacks[n->index], k)) {
			*index = n->index;
			return p->stacks[n->index];
		}
	}
	if (p->nstacks >= MAX_STACKS)
		goto dropped;
	st = calloc(1, sizeof(*st));
	n = calloc(1, sizeof(*n));
	copy = malloc((nframes ? nframes : 1) * sizeof(*copy));
	stacks = grow(p->stacks, p->nstacks, sizeof(*stacks));
	if (!st || !n || !copy || !stacks) {
		free(st);
		free(n);
		free(copy);
		goto dropped;
	}
	p->stacks = stacks;
	for (i = 0; i < nframes; i++)
		copy[i] = frames[nframes - 1 - i];
	st->frames = copy;
	st->nframes = nframes;
	st->native_sym = k->native_sym;
	st->native_module = k->native_module;
	st->native_offset = -1;
	st->truncated = k->truncated;
	n->index = p->nstacks;
	n->next = head;
	if (hmap__put(p->stacks_by_hash, &h, n)) {
		free(st);
		free(n);
		free(copy);
		goto dropped;
	}
	*index = p->nstacks;
	p->stacks[p->nstacks++] = st;
	return st;
dropped:
	p->stacks_dropped++;
	if (p->nstacks < MAX_STACKS)
		return NULL;
	if (!p->overflow) {
		p->overflow = calloc(1, sizeof(*p->overflow));
		if (!p->overflow)
			return NULL;
		p->overflow->overflow = true;
		p->overflow->native_offset = -1;
	}
	*index = p->nstacks;
	return p->overflow;
}

/* ---- the stack timeline ---- */

static uint64_t tl_slot(const struct profile_timeline *tl, uint64_t t0, uint64_t ts)
{
	return ts > t0 ? (ts - t0) / tl->slot_ns : 0;
}

/* Merges b into a (same thread).  The stack kept is a majority vote over
 * the samples (Boyer-Moore, which merges): the stack of more than half of
 * them when there is one; top is the vote's margin. */
static void tl_merge(struct timeline_event *a, const struct timeline_event *b)
{
	if (a->stack == b->stack) {
		a->top += b->top;
	} else if (b->top > a->top) {
		a->stack = b->stack;
		a->top = b->top - a->top;
	} else {
		a->top -= b->top;
	}
	a->count += b->count;
	if (b->ts_ns < a->ts_ns)
		a->ts_ns = b->ts_ns;
}

/* The event of e's thread that e joins among out[0..n), or NULL: the last
 * event when it is the thread's and on e's stack, else (with slots) the
 * thread's event in e's slot. */
static struct timeline_event *tl_join(const struct profile_timeline *tl, struct timeline_event *out,
				      int n, uint64_t t0, const struct timeline_event *e)
{
	uint64_t slot;
	int i;

	if (!n)
		return NULL;
	if (out[n - 1].tid == e->tid && out[n - 1].tgid == e->tgid && out[n - 1].stack == e->stack)
		return &out[n - 1];
	if (!tl->slot_ns)
		return NULL;
	slot = tl_slot(tl, t0, e->ts_ns);
	for (i = n - 1; i >= 0 && tl_slot(tl, t0, out[i].ts_ns) == slot; i--) {
		if (out[i].tid == e->tid && out[i].tgid == e->tgid)
			return &out[i];
	}
	return NULL;
}

/* Re-merges the events under the current slot width. */
static void tl_compact(struct profile_timeline *tl)
{
	uint64_t t0 = tl->t0;
	int i, w = 0;

	for (i = 0; i < tl->n; i++) {
		struct timeline_event e = tl->ev[i], *j = tl_join(tl, tl->ev, w, t0, &e);

		if (j)
			tl_merge(j, &e);
		else
			tl->ev[w++] = e;
	}
	tl->n = w;
}

static void tl_thin(struct profile_timeline *tl)
{
	uint64_t lo = tl->ev[0].ts_ns, hi = lo, span;
	int i;

	for (i = 1; i < tl->n; i++) {
		if (tl->ev[i].ts_ns < lo)
			lo = tl->ev[i].ts_ns;
		if (tl->ev[i].ts_ns > hi)
			hi = tl->ev[i].ts_ns;
	}
	span = hi - lo + 1;
	do {
		tl->slot_ns = tl->slot_ns ? 2 * tl->slot_ns : TIMELINE_FIRST_SLOT_NS;
		tl_compact(tl);
	} while (tl->n > TIMELINE_MAX_EVENTS / 2 && tl->slot_ns < 2 * span);
}

static void timeline_add(struct profile *p, const struct sample_in *s, int stack)
{
	struct profile_timeline *tl = &p->timeline;
	struct timeline_event e = { s->ts_ns, stack, s->tgid, s->tid, 1, 1 }, *j;

	if (!tl->ev) {
		tl->ev = malloc(TIMELINE_MAX_EVENTS * sizeof(*tl->ev));
		if (!tl->ev) {
			tl->dropped++;
			return;
		}
	}
	if (!tl->n && !tl->slot_ns)
		tl->t0 = s->ts_ns;
	j = tl_join(tl, tl->ev, tl->n, tl->t0, &e);
	if (j) {
		tl_merge(j, &e);
		return;
	}
	if (tl->n == TIMELINE_MAX_EVENTS) {
		tl_thin(tl);
		/* Still full: more threads than events, even one slot each. */
		if (tl->n == TIMELINE_MAX_EVENTS) {
			tl->dropped++;
			return;
		}
		j = tl_join(tl, tl->ev, tl->n, tl->t0, &e);
		if (j) {
			tl_merge(j, &e);
			return;
		}
	}
	tl->ev[tl->n++] = e;
}

const struct profile_timeline *profile__timeline(const struct profile *p)
{
	return &p->timeline;
}

static void add_stack(struct profile *p, const struct sample_in *s, double cpu, double blocked)
{
	struct stack_key k = { s->frames, s->nframes, s->native_sym, s->native_module,
			       s->truncated };
	int index = -1;
	struct stack_stats *st = stack_get(p, &k, &index);

	if (!st)
		return;
	timeline_add(p, s, index);
	if (s->native_sym && !st->native_ip && s->native_ip) {
		st->native_ip = s->native_ip;
		st->native_offset = s->native_offset;
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

static struct thread_stats *thread_get(struct profile *p, int tgid, int tid)
{
	struct thread_key k = { tgid, tid };
	struct thread_stats *t = hmap__get(p->threads_by_key, &k), **threads;

	if (t)
		return t;
	if (p->nthreads >= MAX_THREAD_STATS) {
		t = p->other_threads;
		if (!t)
			return NULL;
		if (t->tgid != tgid || t->tid != tid) {
			/* Another thread now: its allocation executions are its own. */
			memset(&t->exec, 0, sizeof(t->exec));
			t->tgid = tgid;
			t->tid = tid;
			p->threads_folded++;
		}
		return t;
	}
	t = calloc(1, sizeof(*t));
	threads = grow(p->threads, p->nthreads, sizeof(*threads));
	if (!t || !threads) {
		free(t);
		return NULL;
	}
	p->threads = threads;
	t->tgid = tgid;
	t->tid = tid;
	t->main_thread = tgid == tid;
	if (hmap__put(p->threads_by_key, &k, t)) {
		free(t);
		return NULL;
	}
	p->threads[p->nthreads++] = t;
	if (p->nthreads == MAX_THREAD_STATS) {
		/* The last slot is the shared one, known by its name. */
		t->name = "(further threads)";
		t->folded = true;
		t->main_thread = false;
		p->other_threads = t;
		p->threads_folded = 1;
	}
	return t;
}

uint64_t profile__threads_folded(const struct profile *p)
{
	return p->threads_folded;
}

/* The package of an installed file: the name after site-packages/ or
 * dist-packages/ up to the next '/' or '.', or 0 (len is its length). */
static const char *package_of(const char *path, size_t *len)
{
	const char *at = strstr(path, "/site-packages/");

	if (!at)
		at = strstr(path, "/dist-packages/");
	if (!at)
		return NULL;
	at += strlen("/site-packages/"); /* as long as "/dist-packages/" */
	*len = strcspn(at, "/.");
	return *len ? at : NULL;
}

/* Tallies the innermost installed package of a sample outside the
 * profiled files; the table keeps the first MAX_OUTSIDE_PKGS packages. */
static void outside_add(struct profile *p, const struct sample_in *s, double ns)
{
	char name[64];
	const char *pkg = NULL, *key;
	size_t len = 0;
	int i;

	for (i = 0; i < s->nframes && !pkg; i++)
		pkg = package_of(s->frames[i].filename, &len);
	if (!pkg || len >= sizeof(name))
		return;
	memcpy(name, pkg, len);
	name[len] = '\0';
	key = strtab__intern(p->strings, name);
	for (i = 0; key && i < MAX_OUTSIDE_PKGS; i++) {
		if (!p->outside[i].name)
			p->outside[i].name = key;
		if (p->outside[i].name == key) {
			p->outside[i].ns += ns;
			return;
		}
	}
}

/* ---- @profile ---- */

int profile__decorate(struct profile *p, const char *file, int firstlineno, int lastlineno,
		      const char *qualname)
{
	struct decorated_key k;
	struct decorated_fn *d;

	memset(&k, 0, sizeof(k));
	k.file = profile__intern(p, file);
	k.firstlineno = firstlineno;
	if (!k.file)
		return -ENOMEM;
	if (hmap__get(p->decorated_by_code, &k))
		return 0;
	if (p->ndecorated >= MAX_DECORATED)
		return -ENOSPC;
	d = grow(p->decorated, p->ndecorated, sizeof(*d));
	if (!d)
		return -ENOMEM;
	p->decorated = d;
	d = &p->decorated[p->ndecorated];
	d->file = k.file;
	d->firstlineno = firstlineno;
	d->lastlineno = lastlineno < firstlineno ? firstlineno : lastlineno;
	d->qualname = profile__intern(p, qualname);
	if (!d->qualname ||
	    hmap__put(p->decorated_by_code, &k, (void *)(intptr_t)(p->ndecorated + 1)))
		return -ENOMEM;
	p->ndecorated++;
	return 0;
}

int profile__ndecorated(const struct profile *p)
{
	return p->ndecorated;
}

const struct decorated_fn *profile__decorated(const struct profile *p, int i)
{
	return i >= 0 && i < p->ndecorated ? &p->decorated[i] : NULL;
}

bool profile__is_decorated(const struct profile *p, const char *file, int firstlineno)
{
	struct decorated_key k;

	memset(&k, 0, sizeof(k));
	k.file = file;
	k.firstlineno = firstlineno;
	return hmap__get(p->decorated_by_code, &k) != NULL;
}

bool profile__line_reported(const struct profile *p, const char *file, int lineno)
{
	int i;

	if (!p->ndecorated)
		return true;
	for (i = 0; i < p->ndecorated; i++) {
		const struct decorated_fn *d = &p->decorated[i];

		if (lineno >= d->firstlineno && lineno <= d->lastlineno && !strcmp(d->file, file))
			return true;
	}
	return false;
}

/* The innermost frame in a profiled file, or -1.  When functions are
 * decorated, the innermost frame of a decorated function: time in what it
 * calls lands on its calling line, as library time does. */
static int attributed_frame(const struct profile *p, const struct frame_ref *frames, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (p->ndecorated
			    ? profile__is_decorated(p, frames[i].filename, frames[i].firstlineno)
			    : profile__file_profiled(p, frames[i].filename))
			return i;
	}
	return -1;
}

void profile__add(struct profile *p, const struct sample_in *s)
{
	double cpu = s->cpu_ns, blocked = s->offcpu_ns;
	double gil = s->gil_ns < s->offcpu_ns ? s->gil_ns : s->offcpu_ns;
	struct thread_stats *t = thread_get(p, s->tgid, s->tid);
	struct file_stats *f = NULL;
	struct line_stats *st;
	struct func_stats *fs;
	int at = -1, reason = s->unattributed;

	p->samples++;
	if (s->truncated)
		p->truncated++;
	if (t) {
		t->samples++;
		t->cpu_ns += cpu;
		if (s->thread_name && !t->folded)
			t->name = s->thread_name;
		t->blocked_ns += blocked;
		t->gil_ns += gil;
	}
	if (s->not_python) {
		p->not_python_ns += cpu + blocked;
		return;
	}
	p->total_ns += cpu + blocked;
	p->gil_ns += gil;
	if (cpu + blocked <= 0)
		return;
	if (reason < 0) {
		at = attributed_frame(p, s->frames, s->nframes);
		if (at < 0)
			reason = s->nframes ? UNATTR_NOT_PROFILED : UNATTR_UNREADABLE;
	}
	if (s->nframes)
		add_stack(p, s, cpu, blocked);
	if (at < 0) {
		if (reason < 0 || reason >= UNATTR_MAX)
			reason = UNATTR_UNREADABLE;
		p->unattributed_ns[reason] += cpu + blocked;
		if (reason == UNATTR_NOT_PROFILED)
			outside_add(p, s, cpu + blocked);
		return;
	}
	f = file_get(p, s->frames[at].filename);
	if (!f)
		return;
	st = line_get(f, s->frames[at].line > 0 ? s->frames[at].line : s->frames[at].firstlineno);
	if (!st)
		return;
	add_to_stats(p, st, s, cpu, blocked, gil, true);
	f->total_ns += cpu + blocked;
	fs = func_get(p, f, s->frames, s->nframes, at);
	if (fs)
		add_to_stats(p, &fs->st, s, cpu, blocked, gil, false);
}

/* ---- await ---- */

static void await_credit(struct line_stats *st, const struct await_in *a)
{
	struct await_stats *aw = st->aw;
	int i;

	if (!aw) {
		aw = st->aw = calloc(1, sizeof(*aw));
		if (!aw)
			return;
	}
	aw->ns += a->ns;
	if (aw->last_snapshot != a->snapshot) {
		aw->last_snapshot = a->snapshot;
		aw->conc_sum += a->concurrency;
		aw->conc_n++;
		if (a->concurrency > aw->conc_peak)
			aw->conc_peak = a->concurrency;
	}
	if (!a->task_name)
		return;
	for (i = 0; i < aw->nnames; i++) {
		if (aw->names[i] == a->task_name)
			return;
	}
	if (aw->nnames < AWAIT_NAMES_MAX)
		aw->names[aw->nnames++] = a->task_name;
	else
		aw->names_dropped++;
}

/* An await stack's identity: its frames down to the waiting one, and the
 * task's name (as Scalene shows it: "[await] func (Task-3)"). */
struct await_key {
	uint64_t hash;
	const char *task_name;
};

static void await_stack_add(struct profile *p, const struct await_in *a, int at)
{
	struct await_key k = { hash_bytes(&a->frames[at], (a->nframes - at) * sizeof(*a->frames)),
			       a->task_name };
	struct await_stack *st, *grown;
	struct frame_ref *fr;
	intptr_t idx;
	int i, n = a->nframes - at;

	if (!p->await_by_key && !(p->await_by_key = hmap__new(sizeof(k))))
		return;
	idx = (intptr_t)hmap__get(p->await_by_key, &k);
	if (idx) {
		st = &p->await_stacks[idx - 1];
		st->count++;
		st->ns += a->ns;
		return;
	}
	if (p->nawait_stacks >= MAX_AWAIT_STACKS) {
		p->await_stacks_dropped++;
		return;
	}
	grown = grow(p->await_stacks, p->nawait_stacks, sizeof(*grown));
	fr = malloc(n * sizeof(*fr));
	if (!grown || !fr) {
		free(fr);
		return;
	}
	p->await_stacks = grown;
	for (i = 0; i < n; i++)
		fr[i] = a->frames[a->nframes - 1 - i];
	st = &p->await_stacks[p->nawait_stacks];
	*st = (struct await_stack){
		.frames = fr, .nframes = n, .task_name = a->task_name, .count = 1, .ns = a->ns
	};
	if (hmap__put(p->await_by_key, &k, (void *)(intptr_t)(p->nawait_stacks + 1))) {
		free(fr);
		return;
	}
	p->nawait_stacks++;
}

void profile__add_await(struct profile *p, const struct await_in *a)
{
	struct file_stats *f;
	struct line_stats *st;
	struct func_stats *fs;
	int at = attributed_frame(p, a->frames, a->nframes);

	if (at < 0) {
		p->await_unattributed_ns += a->ns;
		return;
	}
	f = file_get(p, a->frames[at].filename);
	st = f ? line_get(f,
			  a->frames[at].line > 0 ? a->frames[at].line : a->frames[at].firstlineno)
	       : NULL;
	if (!st) {
		p->await_unattributed_ns += a->ns;
		return;
	}
	p->await_ns += a->ns;
	await_credit(st, a);
	fs = func_get(p, f, a->frames, a->nframes, at);
	if (fs)
		await_credit(&fs->st, a);
	await_stack_add(p, a, at);
}

double profile__await_ns(const struct profile *p)
{
	return p->await_ns;
}

double profile__await_unattributed_ns(const struct profile *p)
{
	return p->await_unattributed_ns;
}

int profile__nawait_stacks(const struct profile *p)
{
	return p->nawait_stacks;
}

const struct await_stack *profile__await_stack(const struct profile *p, int i)
{
	return i >= 0 && i < p->nawait_stacks ? &p->await_stacks[i] : NULL;
}

uint64_t profile__await_stacks_dropped(const struct profile *p)
{
	return p->await_stacks_dropped;
}

/* ---- memory ---- */

static void series_push(struct mem_series *s, double t, double y)
{
	int i;

	s->t[s->n] = t;
	s->y[s->n] = y;
	if (++s->n < MEM_SERIES_MAX)
		return;
	/* Full: pairs merge into their higher point, buckets double. */
	for (i = 0; i < MEM_SERIES_MAX / 2; i++) {
		int k = s->y[2 * i + 1] > s->y[2 * i] ? 2 * i + 1 : 2 * i;

		s->t[i] = s->t[k];
		s->y[i] = s->y[k];
	}
	s->n = MEM_SERIES_MAX / 2;
	s->stride *= 2;
}

static void series_add(struct mem_series *s, double t, double y)
{
	if (!s->stride)
		s->stride = 1;
	if (!s->in_bucket || y > s->by) {
		s->bt = t;
		s->by = y;
	}
	if (++s->in_bucket < s->stride)
		return;
	s->in_bucket = 0;
	series_push(s, s->bt, s->by);
}

int mem_series__points(const struct mem_series *s, double *t, double *y)
{
	int n = s->n;

	memcpy(t, s->t, n * sizeof(*t));
	memcpy(y, s->y, n * sizeof(*y));
	if (s->in_bucket && n < MEM_SERIES_MAX) {
		t[n] = s->bt;
		y[n] = s->by;
		n++;
	}
	return n;
}

static struct mem_stats *mem_of(struct line_stats *st)
{
	if (!st->mem)
		st->mem = calloc(1, sizeof(*st->mem));
	return st->mem;
}

uint64_t mem_stats__mallocs(const struct mem_stats *m)
{
	return m->mallocs + (m->open > 0 && m->hwm > 0);
}

double mem_stats__avg(const struct mem_stats *m)
{
	uint64_t n = mem_stats__mallocs(m);
	double agg = m->aggregate + (m->open > 0 ? m->hwm : 0), avg;

	if (!n)
		return 0;
	avg = agg / n;
	return avg > m->peak ? m->peak : avg;
}

/* Ends the thread's open execution, if any. */
static void exec_close(struct thread_stats *t)
{
	struct mem_stats *l = t->exec.line, *f = t->exec.func;

	if (!l)
		return;
	l->mallocs++;
	l->aggregate += l->hwm;
	if (f) {
		f->mallocs++;
		f->aggregate += l->hwm;
		f->open--;
	}
	l->cur = l->hwm = 0;
	l->open--;
	t->exec.line = t->exec.func = NULL;
}

/* Starts a new execution unless the sample continues the open one: the same
 * line of the same frame (same code, same depth), at a later instruction. */
static void exec_at(struct thread_stats *t, struct mem_stats *l, struct mem_stats *f,
		    const struct frame_ref *fr, int depth, int offset)
{
	if (t->exec.line == l && t->exec.file == fr->filename && t->exec.lineno == fr->line &&
	    t->exec.qualname == fr->qualname && t->exec.firstlineno == fr->firstlineno &&
	    t->exec.depth == depth && offset > t->exec.offset) {
		t->exec.offset = offset;
		return;
	}
	exec_close(t);
	t->exec.line = l;
	t->exec.func = f;
	t->exec.file = fr->filename;
	t->exec.qualname = fr->qualname;
	t->exec.lineno = fr->line;
	t->exec.firstlineno = fr->firstlineno;
	t->exec.depth = depth;
	t->exec.offset = offset;
	l->open++;
	if (f)
		f->open++;
}

static void mem_grow(struct mem_stats *m, double bytes)
{
	m->cur += bytes;
	if (m->cur > m->hwm)
		m->hwm = m->cur;
	if (m->cur > m->peak)
		m->peak = m->cur;
}

static void footprint_add(struct profile *p, double delta, double t)
{
	struct profile_memory *m = &p->mem;

	m->footprint += delta;
	if (m->footprint < 0)
		m->footprint = 0;
	series_add(&m->series, t, m->footprint);
}

/* Changes the live set of the line and the function a block was allocated
 * on: its weight, and how many blocks they had followed and got back. */
static void owners_update(const struct live_block *b, double live, uint64_t tracked,
			  uint64_t reclaimed)
{
	struct mem_stats *owners[2] = { b->line, b->func };
	int i;

	for (i = 0; i < 2; i++) {
		if (!owners[i])
			continue;
		owners[i]->live_bytes += live;
		owners[i]->tracked += tracked;
		owners[i]->reclaimed += reclaimed;
	}
}

/* Where a net malloc sample fires: the allocating event's thread, frame
 * and stack. */
struct net_site {
	struct thread_stats *t;
	const struct frame_ref *fr;
	int depth, offset;
	struct stack_stats *stack;
};

/* The window of blocks of `size` bytes (mem_stats.win_up). */
static int net_window_of(double size)
{
	return size < NET_WINDOW_BYTES;
}

/* Window w of line l has grown by a window: a net malloc sample of what it
 * holds, on the line, its function and the allocating stack. */
static void net_malloc_sample(struct profile *p, struct mem_stats *l, struct mem_stats *f, int w,
			      const struct net_site *at, double t)
{
	double bytes = l->win_up[w] - l->win_down[w];
	double py = l->win_up[w] > 0 ? bytes * (l->win_python[w] / l->win_up[w]) : 0;

	l->win_up[w] = l->win_down[w] = l->win_python[w] = 0;
	p->mem.net_bytes += bytes;
	if (at->t && at->fr)
		exec_at(at->t, l, f, at->fr, at->depth, at->offset);
	l->net_bytes += bytes;
	l->net_python_bytes += py;
	l->net_samples++;
	mem_grow(l, bytes);
	series_add(&l->series, t, p->mem.footprint);
	if (f) {
		f->net_bytes += bytes;
		f->net_python_bytes += py;
		f->net_samples++;
		if (l->peak > f->peak)
			f->peak = l->peak;
		series_add(&f->series, t, p->mem.footprint);
	}
	if (at->stack)
		at->stack->malloc_bytes += bytes;
}

/* A sampled block of line l (function f) allocated: its window goes up. */
static void net_up(struct profile *p, struct mem_stats *l, struct mem_stats *f, double bytes, int w,
		   bool python, bool no_frees, const struct net_site *at, double t)
{
	double window = w ? NET_SMALL_WINDOW_BYTES : NET_WINDOW_BYTES;

	l->win_up[w] += bytes;
	l->win_python[w] += python ? bytes : 0;
	/* Frees not seen: every sample is net. */
	if (no_frees || l->win_up[w] >= l->win_down[w] + window)
		net_malloc_sample(p, l, f, w, at, t);
}

/* A block of line l (function f) freed by the program: its window goes
 * down; a net free sample when the frees have outrun the allocations by a
 * window. */
static void net_down(struct profile *p, struct mem_stats *l, struct mem_stats *f, double bytes,
		     int w, double t)
{
	double window = w ? NET_SMALL_WINDOW_BYTES : NET_WINDOW_BYTES, freed;

	if (!l)
		return;
	l->win_down[w] += bytes;
	if (l->win_down[w] < l->win_up[w] + window)
		return;
	freed = l->win_down[w] - l->win_up[w];
	l->win_up[w] = l->win_down[w] = l->win_python[w] = 0;
	l->net_freed_bytes += freed;
	l->cur = l->cur > freed ? l->cur - freed : 0;
	series_add(&l->series, t, p->mem.footprint);
	if (f) {
		f->net_freed_bytes += freed;
		series_add(&f->series, t, p->mem.footprint);
	}
}

static void track_block(struct profile *p, int tgid, uint64_t addr, struct mem_stats *line,
			struct mem_stats *func, double bytes, int small, double t)
{
	struct block_key k = { .tgid = tgid, .addr = addr };
	struct live_block *b;

	if (hmap__count(p->blocks) >= MAX_LIVE_BLOCKS) {
		p->mem.blocks_dropped++;
		return;
	}
	b = hmap__get(p->blocks, &k);
	if (!b) {
		b = malloc(sizeof(*b));
		if (!b || hmap__put(p->blocks, &k, b)) {
			free(b);
			p->mem.blocks_dropped++;
			return;
		}
	} else {
		/* Freed behind the sampler's back and handed out again. */
		p->mem.held_bytes -= b->bytes;
		p->mem.footprint -= b->bytes;
		if (p->mem.footprint < 0)
			p->mem.footprint = 0;
		owners_update(b, -b->bytes, 0, 0);
		net_down(p, b->line, b->func, b->bytes, b->small, t);
	}
	*b = (struct live_block){ .line = line, .func = func, .bytes = bytes, .small = small };
	p->mem.held_bytes += bytes;
	owners_update(b, bytes, 1, 0);
}

static void mem_malloc(struct profile *p, const struct mem_in *m, struct mem_stats *l,
		       struct mem_stats *f, const struct net_site *at, double t)
{
	struct profile_memory *pm = &p->mem;
	const struct frame_ref *fr = at->fr;
	/* A block restored after a failed realloc has no size: its weight. */
	int w = net_window_of(m->size > 0 ? m->size : m->bytes);

	if (m->restored) {
		/* Not a new allocation: the block is live again (its free went
		 * down its line's window: up again, no sample). */
		footprint_add(p, m->bytes, t);
		track_block(p, m->tgid, m->addr, l, f, m->bytes, w, t);
		if (l)
			l->win_up[w] += m->bytes;
		return;
	}
	pm->malloc_bytes += m->bytes;
	if (m->python)
		pm->python_bytes += m->bytes;
	/* Without frees (uprobes) there is no footprint to follow. */
	if (!m->no_frees) {
		footprint_add(p, m->bytes, t);
		if (pm->footprint > pm->max_footprint) {
			pm->max_footprint = pm->footprint;
			pm->max_file = fr ? fr->filename : NULL;
			pm->max_line = fr ? fr->line : 0;
			pm->max_python_fraction = m->python ? 1 : 0;
		}
		if (m->untracked)
			pm->untracked++;
		else
			track_block(p, m->tgid, m->addr, l, f, m->bytes, w, t);
	}
	if (!l)
		return;
	l->malloc_bytes += m->bytes;
	l->python_bytes += m->python ? m->bytes : 0;
	l->samples++;
	if (f) {
		f->malloc_bytes += m->bytes;
		f->python_bytes += m->python ? m->bytes : 0;
		f->samples++;
	}
	net_up(p, l, f, m->bytes, w, m->python, m->no_frees, at, t);
}

static void mem_free(struct profile *p, const struct mem_in *m, struct mem_stats *l,
		     struct mem_stats *f, double t)
{
	struct block_key k = { .tgid = m->tgid, .addr = m->addr };
	struct live_block *b = hmap__del(p->blocks, &k);
	/* No Python frame on the freeing thread: the interpreter tearing down
	 * (or a thread that never ran Python).  The block leaves the footprint
	 * but the program itself never gave it back. */
	bool teardown = m->nframes == 0;
	double bytes;

	if (!b) {
		/* Allocated before the sampler's probes were seen, or in the
		 * parent before a fork: it was never in this footprint. */
		p->mem.frees_unknown++;
		return;
	}
	bytes = b->bytes;
	footprint_add(p, -bytes, t);
	if (!teardown) {
		p->mem.held_bytes -= bytes;
		owners_update(b, -bytes, 0, 1);
		net_down(p, b->line, b->func, bytes, b->small, t);
	}
	free(b);
	if (!l)
		return;
	l->freed_bytes += bytes;
	if (f)
		f->freed_bytes += bytes;
}

void profile__add_mem(struct profile *p, const struct mem_in *m)
{
	struct mem_stats *l = NULL, *fm = NULL;
	const struct frame_ref *fr = NULL;
	struct net_site net = { 0 };
	struct thread_stats *t;
	struct file_stats *f;
	struct line_stats *st;
	struct func_stats *fs;
	double ts = (double)m->ts_ns;
	int at = -1;

	if (m->not_python) {
		if (m->kind == MEM_MALLOC && !m->restored)
			p->mem.not_python_bytes += m->bytes;
		return;
	}
	t = thread_get(p, m->tgid, m->tid);
	if (m->kind != MEM_COPY)
		p->mem.alloc_samples++;
	if (m->unattributed < 0)
		at = attributed_frame(p, m->frames, m->nframes);
	if (at >= 0) {
		fr = &m->frames[at];
		f = file_get(p, fr->filename);
		st = f ? line_get(f, fr->line > 0 ? fr->line : fr->firstlineno) : NULL;
		l = st ? mem_of(st) : NULL;
		fs = f && l ? func_get(p, f, m->frames, m->nframes, at) : NULL;
		fm = fs ? mem_of(&fs->st) : NULL;
	}
	switch (m->kind) {
	case MEM_MALLOC:
		if (!m->restored && t)
			t->malloc_bytes += m->bytes;
		if (!l && !m->restored) {
			if (m->unattributed == UNATTR_NO_PYTHON_THREAD)
				p->mem.native_thread_bytes += m->bytes;
			else
				p->mem.unattributed_bytes += m->bytes;
		}
		net.t = t;
		net.fr = fr;
		if (fr) {
			net.depth = m->nframes - at;
			net.offset = m->offsets ? m->offsets[at] : 0;
		}
		if (m->nframes && !m->restored) {
			struct stack_key k = { m->frames, m->nframes, NULL, NULL, m->truncated };
			int index;

			net.stack = stack_get(p, &k, &index);
		}
		mem_malloc(p, m, l, fm, &net, ts);
		break;
	case MEM_FREE:
		mem_free(p, m, l, fm, ts);
		break;
	case MEM_COPY:
		p->mem.copy_bytes += m->bytes;
		if (l)
			l->copy_bytes += m->bytes;
		if (fm)
			fm->copy_bytes += m->bytes;
		break;
	}
}

void profile__proc_exit(struct profile *p, int tgid, uint64_t ts_ns)
{
	size_t it = 0;
	const void *key;
	void *v;
	double bytes = 0;
	int i;

	/* The process's memory is released with it; its blocks' lines keep
	 * them as not reclaimed (the program never freed them). */
	while (hmap__next(p->blocks, &it, &key, &v)) {
		const struct block_key *k = key;

		if (k->tgid != tgid)
			continue;
		bytes += ((struct live_block *)v)->bytes;
		/* Deleting leaves a tombstone: the iteration goes on. */
		free(hmap__del(p->blocks, k));
	}
	for (i = 0; i < p->nthreads; i++) {
		if (p->threads[i]->tgid == tgid)
			exec_close(p->threads[i]);
	}
	if (bytes > 0)
		footprint_add(p, -bytes, (double)ts_ns);
}

const struct profile_memory *profile__memory(const struct profile *p)
{
	return &p->mem;
}

double profile__total_ns(const struct profile *p)
{
	return p->total_ns;
}

double profile__not_python_ns(const struct profile *p)
{
	return p->not_python_ns;
}

double profile__gil_ns(const struct profile *p)
{
	return p->gil_ns;
}

double profile__unattributed_ns(const struct profile *p, enum unattributed_reason r)
{
	return r < UNATTR_MAX ? p->unattributed_ns[r] : 0;
}

char *profile__outside_warning(const struct profile *p)
{
	const struct profile_filter *f = &p->filter;
	double out = p->unattributed_ns[UNATTR_NOT_PROFILED];
	double python = p->total_ns - p->unattributed_ns[UNATTR_NO_PYTHON_THREAD] -
			p->unattributed_ns[UNATTR_UNREADABLE];
	const struct outside_pkg *top = NULL;
	char *msg = NULL;
	int i, n;

	if (!(python > 0) || out < OUTSIDE_WARN_SHARE * python || out < OUTSIDE_WARN_MIN_NS)
		return NULL;
	for (i = 0; i < MAX_OUTSIDE_PKGS && p->outside[i].name; i++) {
		if (!top || p->outside[i].ns > top->ns)
			top = &p->outside[i];
	}
	if (f->nonly || f->nexclude) {
		n = asprintf(&msg,
			     "%.1f%% of the sampled Python time was in files that "
			     "--profile-only/--profile-exclude leave out: the profile shows little "
			     "of it; widen the patterns or use --profile-all",
			     100.0 * out / python);
	} else if (top && top->ns >= 0.5 * out) {
		n = asprintf(&msg,
			     "%.1f%% of the sampled Python time was in files not profiled, most "
			     "of it in the installed package '%s': by default only the "
			     "program's own files are profiled (not site-packages); use "
			     "--profile-only %s or --profile-all",
			     100.0 * out / python, top->name, top->name);
	} else {
		n = asprintf(&msg,
			     "%.1f%% of the sampled Python time was in files not profiled: by "
			     "default only the program's own files are profiled (not the "
			     "standard library or site-packages); use --profile-all to profile "
			     "every file, or --profile-only to choose",
			     100.0 * out / python);
	}
	return n < 0 ? NULL : msg;
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
	return p->nstacks + !!p->overflow;
}

const struct stack_stats *profile__stack(const struct profile *p, int i)
{
	if (i == p->nstacks)
		return p->overflow;
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
