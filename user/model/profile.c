// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/hmap.h"
#include "model/profile.h"
#include "model/profile_int.h"
#include "base/strtab.h"
#include "target/target.h"

static void pending_clear(struct thread_stats *m);

/* Distinct stacks kept; beyond it stacks are counted as dropped (their time
 * still reaches the lines, and the stacks' overflow entry). */
void *profile_grow(void *arr, int n, size_t elem)
{
	/* Doubling at powers of two: n is the current count. */
	if (n & (n - 1) || !n) {
		if (n)
			return arr;
		return malloc(elem);
	}
	return realloc(arr, 2 * (size_t)n * elem);
}

/*
 * A zeroed entry of size bytes for an array of n pointers at arr, which
 * profile_grow() makes room in: *grown is the array to keep. NULL when either
 * allocation fails; arr is then unchanged.
 */
static void *profile_entry_new(void *arr, int n, size_t size, void **grown)
{
	void *e = calloc(1, size);

	if (!e)
		return NULL;
	*grown = profile_grow(arr, n, sizeof(void *));
	if (!*grown) {
		free(e);
		return NULL;
	}
	return e;
}

/* profile__serial's source: one number per profile made. */
static uint64_t serials;

struct profile *profile__new(const struct profile_filter *filter)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->filter = *filter;
	p->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
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

static void stack_nodes_free(struct hmap *by_hash)
{
	size_t it = 0;
	void *v;

	while (by_hash && hmap__next(by_hash, &it, NULL, &v)) {
		struct stack_node *n = v;

		while (n) {
			struct stack_node *next = n->next;

			free(n);
			n = next;
		}
	}
}

static void stack_free(struct stack_stats *st)
{
	free((void *)st->frames);
	free((void *)st->ips);
	free(st);
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
				free(p->files[i]->lines[j]->gpu);
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
		free(((struct func_stats *)v)->st.gpu);
		free(v);
	}
	it = 0;
	while (p->blocks && hmap__next(p->blocks, &it, NULL, &v))
		free(v);
	hmap__free(p->blocks);
	profile_gpu_free(p);
	stack_nodes_free(p->stacks_by_hash);
	for (i = 0; i < p->nstacks; i++)
		stack_free(p->stacks[i]);
	free(p->stacks);
	free(p->overflow);
	for (i = 0; i < p->nthreads; i++) {
		pending_clear(p->threads[i]);
		free(p->threads[i]->pending);
		free(p->threads[i]);
	}
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
	free(p->tracks.iv);
	strtab__free(p->strings);
	free(p);
}

static void line_restart(struct line_stats *st)
{
	memset(st, 0, offsetof(struct line_stats, mem));
	if (st->mem)
		profile_mem_stats_restart(st->mem);
	if (st->aw) {
		uint64_t last = st->aw->last_snapshot;

		memset(st->aw, 0, sizeof(*st->aw));
		st->aw->last_snapshot = last;
	}
	if (st->gpu)
		memset(st->gpu, 0, sizeof(*st->gpu));
}

static void stack_zero(struct stack_stats *st)
{
	st->count = 0;
	st->python_ns = st->native_ns = st->system_ns = st->gil_ns = 0;
	st->malloc_bytes = st->gpu_ns = 0;
}

static int stack_node_add(struct hmap *by_hash, uint64_t h, int index)
{
	struct stack_node *n = calloc(1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->index = index;
	n->next = hmap__get(by_hash, &h);
	if (hmap__put(by_hash, &h, n)) {
		free(n);
		return -ENOMEM;
	}
	return 0;
}

/* The stack table starts again empty but for the stacks a GPU launch site
 * points at (they keep their weights' places for calls still to come): a
 * profile that restarts at every interval holds one interval's stacks, not
 * every stack its process ever ran.  Out of memory, the table stays whole
 * and only the weights restart. */
static void stacks_restart(struct profile *p)
{
	struct hmap *by_hash = hmap__new(sizeof(uint64_t));
	int i, kept = 0;

	if (p->overflow)
		stack_zero(p->overflow);
	p->stacks_dropped = 0;
	profile_gpu_hold_stacks(p);
	for (i = 0; by_hash && i < p->nstacks; i++) {
		if (p->stacks[i]->held && stack_node_add(by_hash, p->stacks[i]->hash, kept++)) {
			stack_nodes_free(by_hash);
			hmap__free(by_hash);
			by_hash = NULL;
		}
	}
	if (!by_hash) {
		for (i = 0; i < p->nstacks; i++) {
			p->stacks[i]->held = false;
			stack_zero(p->stacks[i]);
		}
		return;
	}
	kept = 0;
	for (i = 0; i < p->nstacks; i++) {
		struct stack_stats *st = p->stacks[i];

		if (!st->held) {
			stack_free(st);
			continue;
		}
		st->held = false;
		stack_zero(st);
		p->stacks[kept++] = st;
	}
	p->nstacks = kept;
	if (!kept) { /* profile_grow starts an empty table afresh */
		free(p->stacks);
		p->stacks = NULL;
	}
	stack_nodes_free(p->stacks_by_hash);
	hmap__free(p->stacks_by_hash);
	p->stacks_by_hash = by_hash;
}

void profile__restart(struct profile *p)
{
	size_t it = 0;
	void *v;
	int i, j;

	for (i = 0; i < p->nfiles; i++) {
		p->files[i]->total_ns = 0;
		for (j = 0; j < p->files[i]->nlines; j++)
			if (p->files[i]->lines[j])
				line_restart(p->files[i]->lines[j]);
	}
	while (hmap__next(p->funcs, &it, NULL, &v))
		line_restart(&((struct func_stats *)v)->st);
	stacks_restart(p);
	for (i = 0; i < p->nthreads; i++) {
		struct thread_stats *t = p->threads[i];

		t->samples = 0;
		t->cpu_ns = t->blocked_ns = t->gil_ns = t->malloc_bytes = 0;
		pending_clear(t);
	}
	p->total_ns = p->not_python_ns = p->gil_ns = p->blocked_ns = 0;
	memset(p->split_ns, 0, sizeof(p->split_ns));
	memset(p->unattributed_ns, 0, sizeof(p->unattributed_ns));
	p->native_threads_ns = p->pending_ns = 0;
	memset(p->outside, 0, sizeof(p->outside));
	p->samples = p->truncated = 0;
	p->timeline.n = 0;
	p->timeline.t0 = p->timeline.slot_ns = p->timeline.dropped = 0;
	profile_tracks_restart(p);
	profile_mem_restart(p);
	profile_await_restart(p);
	profile_gpu_restart(p);
}

const char *profile__intern(struct profile *p, const char *s)
{
	return strtab__intern(p->strings, s ? s : "");
}

uint64_t profile__serial(const struct profile *p)
{
	return p->serial;
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

	/* "<frozen importlib._bootstrap>", "<string>", "<stdin>": no source,
	 * but a -c program's own code. */
	if (!path[0] || (path[0] == '<' && !(f->command && !strcmp(path, TARGET_COMMAND_FILE))))
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

struct file_stats *profile_file_get(struct profile *p, const char *path)
{
	intptr_t idx = (intptr_t)hmap__get(p->files_by_path, &path);
	struct file_stats *f;
	void *files;

	if (idx)
		return p->files[idx - 1];
	f = profile_entry_new(p->files, p->nfiles, sizeof(*f), &files);
	if (!f)
		return NULL;
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

struct line_stats *profile_line_get(struct file_stats *f, int line)
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

/* CPU time goes where the sample ran; time off the CPU counts as system time. */
static void add_split(double *python_ns, double *native_ns, double *system_ns,
		      const struct sample_in *s, double cpu, double blocked)
{
	if (s->where == WHERE_PYTHON)
		*python_ns += cpu;
	else if (s->where == WHERE_NATIVE)
		*native_ns += cpu;
	else
		*system_ns += cpu;
	*system_ns += blocked;
}

static void add_to_stats(struct profile *p, struct line_stats *st, const struct sample_in *s,
			 double cpu, double blocked, double gil, bool record_time)
{
	uint32_t n = s->count ? s->count : 1, i;

	add_split(&st->python_ns, &st->native_ns, &st->system_ns, s, cpu, blocked);
	st->blocked_ns += blocked;
	st->gil_ns += gil;
	if (s->gc)
		st->gc_ns += cpu;
	if (s->gil_held)
		st->gil_held_ns += cpu;
	st->samples += n;
	if (cpu > 0) {
		st->util_sum += s->core_util * n;
		st->util_n += n;
	}
	if (s->where == WHERE_NATIVE && s->native_sym && cpu > 0)
		add_sym(st, s->native_sym, s->native_module, cpu);
	if (!record_time || !s->main_thread || cpu <= 0)
		return;
	/* Reservoir of the main thread's sample times (algorithm R); the
	 * samples of a count share its time. */
	for (i = 0; i < n; i++) {
		st->cpu_times_seen++;
		if (st->ncpu_times < CPU_SAMPLES_RESERVOIR) {
			st->cpu_times[st->ncpu_times++] = s->ts_ns / 1e9;
		} else {
			uint64_t j = next_rand(p) % st->cpu_times_seen;

			if (j < CPU_SAMPLES_RESERVOIR)
				st->cpu_times[j] = s->ts_ns / 1e9;
		}
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

struct func_stats *profile_func_get(struct profile *p, struct file_stats *f,
				    const struct frame_ref *frames, int nframes, int at)
{
	const struct frame_ref *fr = &frames[at];
	struct func_key k = { .file = f->path,
			      .qualname = fr->qualname,
			      .firstlineno = fr->firstlineno };
	struct func_stats *fs;
	void *funcs;
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
	fs = profile_entry_new(f->funcs, f->nfuncs, sizeof(*fs), &funcs);
	if (!fs)
		return NULL;
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
struct stack_stats *profile_stack_get(struct profile *p, const struct stack_key *k, int *index)
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
	copy = malloc((nframes ? nframes : 1) * sizeof(*copy));
	stacks = profile_grow(p->stacks, p->nstacks, sizeof(*stacks));
	if (!st || !copy || !stacks) {
		free(st);
		free(copy);
		goto dropped;
	}
	p->stacks = stacks;
	for (i = 0; i < nframes; i++)
		copy[i] = frames[nframes - 1 - i];
	st->frames = copy;
	if (k->ips && nframes > 0) {
		uint64_t *ips = malloc((size_t)nframes * sizeof(*ips));

		for (i = 0; ips && i < nframes; i++)
			ips[i] = k->ips[nframes - 1 - i];
		st->ips = ips;
	}
	st->nframes = nframes;
	st->native_sym = k->native_sym;
	st->native_module = k->native_module;
	st->native_offset = -1;
	st->truncated = k->truncated;
	st->hash = h;
	if (stack_node_add(p->stacks_by_hash, h, p->nstacks)) {
		stack_free(st);
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
	uint32_t n = s->count ? s->count : 1;
	struct timeline_event e = { s->ts_ns, stack, s->tgid, s->tid, n, n }, *j;

	/* Grown as needed: a process with a handful of samples (one of many
	 * under --all) does not hold room for the whole timeline. */
	if (tl->n == tl->cap && tl->cap < TIMELINE_MAX_EVENTS) {
		int cap = tl->cap ? 2 * tl->cap : 64;
		struct timeline_event *ev;

		if (cap > TIMELINE_MAX_EVENTS)
			cap = TIMELINE_MAX_EVENTS;
		ev = realloc(tl->ev, cap * sizeof(*tl->ev));
		if (!ev) {
			tl->dropped++;
			return;
		}
		tl->ev = ev;
		tl->cap = cap;
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

static void add_stack(struct profile *p, const struct sample_in *s, double cpu, double blocked,
		      double gil)
{
	/* A whole stack names its native frames itself. */
	struct stack_key k = s->stack ? (struct stack_key){ s->stack, s->nstack,    NULL,
							    NULL,     s->truncated, s->stack_ips }
				      : (struct stack_key){ s->frames, s->nframes, s->native_sym,
							    s->native_module, s->truncated };
	int index = -1;
	struct stack_stats *st = profile_stack_get(p, &k, &index);

	if (!st)
		return;
	timeline_add(p, s, index);
	if (s->native_sym && !st->native_ip && s->native_ip) {
		st->native_ip = s->native_ip;
		st->native_offset = s->native_offset;
	}
	st->count += s->count ? s->count : 1;
	add_split(&st->python_ns, &st->native_ns, &st->system_ns, s, cpu, blocked);
	st->gil_ns += gil;
}

/*
 * The CPU time of a thread with no Python frame (a BLAS or OpenMP worker, a
 * native library's own thread) goes to the line its process's main thread
 * is at meanwhile, as native time (system in the kernel): the work it does
 * is that line's, as Scalene counts it (the process's CPU time beyond the
 * Python time is the running line's native time).  Where the main thread
 * is shows in its next record: the off-CPU record of a wait (in a parallel
 * call, it waits for the workers) comes when the wait ends, so the workers'
 * time waits for it, summed per thread, place and symbol.  A next record at
 * no line of the profiled files (shutting down), or none, leaves it on no
 * line; so does the workers' blocked time.
 */
struct native_pending {
	int tid;
	enum sample_where where;
	const char *sym, *module, *thread_name;
	uint64_t native_ip, ts_ns;
	int64_t native_offset;
	uint32_t count;
	double cpu_ns, util_sum;
	/* --native: the thread's own whole stack (innermost first, a copy),
	 * which goes below the main thread's Python frames when credited;
	 * NULL without one, or once the last place stood for several. */
	struct frame_ref *stack;
	uint64_t *ips;
	int nstack;
};

#define PENDING_MAX 64

static void pending_clear(struct thread_stats *m)
{
	int i;

	for (i = 0; i < m->npending; i++) {
		free(m->pending[i].stack);
		free(m->pending[i].ips);
	}
	m->npending = 0;
}

static bool same_stack(const struct native_pending *x, const struct sample_in *s)
{
	if (!x->stack || !s->stack)
		return !x->stack && !s->stack;
	return x->nstack == s->nstack && !memcmp(x->stack, s->stack, s->nstack * sizeof(*s->stack));
}

/* e's own copy of s's whole stack (none if it cannot be had). */
static void pending_keep_stack(struct native_pending *e, const struct sample_in *s)
{
	if (!s->stack || s->nstack <= 0)
		return;
	e->stack = malloc(s->nstack * sizeof(*e->stack));
	e->ips = malloc(s->nstack * sizeof(*e->ips));
	if (!e->stack || !e->ips) {
		free(e->stack);
		free(e->ips);
		e->stack = NULL;
		e->ips = NULL;
		return;
	}
	memcpy(e->stack, s->stack, s->nstack * sizeof(*e->stack));
	memcpy(e->ips, s->stack_ips, s->nstack * sizeof(*e->ips));
	e->nstack = s->nstack;
}

static bool defer_native(struct profile *p, const struct sample_in *s)
{
	struct thread_key k = { s->tgid, s->tgid };
	struct thread_stats *m = hmap__get(p->threads_by_key, &k);
	uint32_t n = s->count ? s->count : 1;
	struct native_pending *e = NULL;
	int i;

	if (!m || !m->main_thread)
		return false;
	for (i = 0; i < m->npending && !e; i++) {
		struct native_pending *x = &m->pending[i];

		if (x->tid == s->tid && x->where == s->where && x->sym == s->native_sym &&
		    x->module == s->native_module && same_stack(x, s))
			e = x;
	}
	if (!e && !m->pending) {
		m->pending = calloc(PENDING_MAX, sizeof(*m->pending));
		if (!m->pending)
			return false;
	}
	if (!e && m->npending < PENDING_MAX) {
		e = &m->pending[m->npending++];
		*e = (struct native_pending){ .tid = s->tid,
					      .where = s->where,
					      .sym = s->native_sym,
					      .module = s->native_module,
					      .thread_name = s->thread_name,
					      .native_ip = s->native_ip,
					      .native_offset = s->native_offset };
		pending_keep_stack(e, s);
	}
	if (!e) {
		/* Full: its place stands for the rest, with no stack of its own. */
		e = &m->pending[PENDING_MAX - 1];
		free(e->stack);
		free(e->ips);
		e->stack = NULL;
		e->ips = NULL;
		e->nstack = 0;
	}
	e->count += n;
	e->cpu_ns += s->cpu_ns;
	e->util_sum += s->core_util * n;
	e->ts_ns = s->ts_ns;
	p->pending_ns += s->cpu_ns;
	return true;
}

static int attribute(struct profile *p, const struct sample_in *s, double cpu, double blocked,
		     double gil, int reason, uint64_t prev_ns);

/* A native thread's whole stack as credited: its own frames, innermost
 * first, then a frame naming the thread, then the main thread's Python
 * frames (those of s), so that it shows under the line it is credited to. */
static bool credited_stack(struct profile *p, const struct native_pending *e,
			   const struct sample_in *s, struct frame_ref **whole, uint64_t **ips,
			   int *n)
{
	char name[64];
	int k = e->nstack;

	if (e->thread_name)
		snprintf(name, sizeof(name), "[thread %.50s]", e->thread_name);
	else
		snprintf(name, sizeof(name), "[thread %d]", e->tid);
	*whole = malloc((k + 1 + s->nframes) * sizeof(**whole));
	*ips = calloc(k + 1 + s->nframes, sizeof(**ips));
	if (!*whole || !*ips)
		return false;
	memcpy(*whole, e->stack, k * sizeof(**whole));
	memcpy(*ips, e->ips, k * sizeof(**ips));
	(*whole)[k] = (struct frame_ref){ .filename = profile__intern(p, ""),
					  .qualname = profile__intern(p, name),
					  .firstlineno = FRAME_NATIVE };
	if (!(*whole)[k].filename || !(*whole)[k].qualname)
		return false;
	memcpy(*whole + k + 1, s->frames, s->nframes * sizeof(**whole));
	*n = k + 1 + s->nframes;
	return true;
}

/* The pending time of m's process's native threads, to the line of s (the
 * main thread's record) when at >= 0, else to no line. */
static void credit_pending(struct profile *p, struct thread_stats *m, const struct sample_in *s,
			   int at)
{
	int i;

	for (i = 0; i < m->npending; i++) {
		const struct native_pending *e = &m->pending[i];
		struct sample_in c = *s;
		struct frame_ref *whole = NULL;
		uint64_t *ips = NULL;

		p->pending_ns -= e->cpu_ns;
		if (at < 0) {
			p->unattributed_ns[UNATTR_NO_PYTHON_THREAD] += e->cpu_ns;
			continue;
		}
		c.count = e->count;
		c.tid = e->tid;
		c.main_thread = false;
		c.thread_name = e->thread_name;
		c.ts_ns = e->ts_ns;
		c.cpu_ns = e->cpu_ns;
		c.where = e->where;
		c.offcpu_ns = 0;
		c.gil_ns = 0;
		c.core_util = e->util_sum / e->count;
		c.native_sym = e->sym;
		c.native_module = e->module;
		c.native_ip = e->native_ip;
		c.native_offset = e->native_offset;
		c.unattributed = -1;
		c.stack = NULL;
		c.stack_ips = NULL;
		c.nstack = 0;
		if (e->stack && credited_stack(p, e, s, &whole, &ips, &c.nstack)) {
			c.stack = whole;
			c.stack_ips = ips;
		}
		attribute(p, &c, e->cpu_ns, 0, 0, -1, 0);
		p->native_threads_ns += e->cpu_ns;
		free(whole);
		free(ips);
	}
	pending_clear(m);
	if (p->pending_ns < 0)
		p->pending_ns = 0;
}

struct thread_stats *profile_thread_get(struct profile *p, int tgid, int tid)
{
	struct thread_key k = { tgid, tid };
	struct thread_stats *t = hmap__get(p->threads_by_key, &k);
	void *threads;

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
	t = profile_entry_new(p->threads, p->nthreads, sizeof(*t), &threads);
	if (!t)
		return NULL;
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
	d = profile_grow(p->decorated, p->ndecorated, sizeof(*d));
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
int profile_attributed_frame(const struct profile *p, const struct frame_ref *frames, int n)
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
	struct thread_stats *t = profile_thread_get(p, s->tgid, s->tid);
	int at, reason = s->unattributed;
	uint32_t n = s->count ? s->count : 1;
	uint64_t prev_ns = t && !t->folded ? t->last_ts_ns : 0;

	p->samples += n;
	if (s->truncated)
		p->truncated += n;
	if (t) {
		t->samples += n;
		t->cpu_ns += cpu;
		if (s->thread_name && !t->folded)
			t->name = s->thread_name;
		t->blocked_ns += blocked;
		t->gil_ns += gil;
		t->last_ts_ns = s->ts_ns;
	}
	if (s->not_python) {
		p->not_python_ns += cpu + blocked;
		return;
	}
	p->total_ns += cpu + blocked;
	p->split_ns[s->where <= WHERE_SYSTEM ? s->where : WHERE_SYSTEM] += cpu;
	p->split_ns[WHERE_SYSTEM] += blocked;
	p->blocked_ns += blocked;
	p->gil_ns += gil;
	if (cpu + blocked <= 0)
		return;
	if (reason == UNATTR_NO_PYTHON_THREAD && !s->main_thread && cpu > 0 &&
	    !p->native_threads_apart && defer_native(p, s)) {
		p->unattributed_ns[reason] += blocked;
		return;
	}
	at = attribute(p, s, cpu, blocked, gil, reason, prev_ns);
	if (t && t->main_thread && s->main_thread && t->npending)
		credit_pending(p, t, s, at);
	if (s->main_thread && p->gpu)
		profile_gpu_main_record(p, s->tgid, s->frames, s->nframes, s->ts_ns);
}

/* A sample's time to its line, function and stack, or to the reason it has
 * none; the attributed frame, or -1. */
static int attribute(struct profile *p, const struct sample_in *s, double cpu, double blocked,
		     double gil, int reason, uint64_t prev_ns)
{
	struct file_stats *f;
	struct line_stats *st;
	struct func_stats *fs;
	int at = -1;

	if (reason < 0) {
		at = profile_attributed_frame(p, s->frames, s->nframes);
		if (at < 0)
			reason = !s->nframes	 ? UNATTR_UNREADABLE
				 : p->ndecorated ? UNATTR_NOT_DECORATED
						 : UNATTR_NOT_PROFILED;
	}
	if (s->nframes)
		add_stack(p, s, cpu, blocked, gil);
	profile_tracks_add(p, s, at >= 0 ? &s->frames[at] : NULL, cpu, blocked, gil, prev_ns);
	if (at < 0) {
		if (reason < 0 || reason >= UNATTR_MAX)
			reason = UNATTR_UNREADABLE;
		p->unattributed_ns[reason] += cpu + blocked;
		if (reason == UNATTR_NOT_PROFILED)
			outside_add(p, s, cpu + blocked);
		return -1;
	}
	f = profile_file_get(p, s->frames[at].filename);
	if (!f)
		return -1;
	st = profile_line_get(f, s->frames[at].line > 0 ? s->frames[at].line
							: s->frames[at].firstlineno);
	if (!st)
		return -1;
	add_to_stats(p, st, s, cpu, blocked, gil, true);
	f->total_ns += cpu + blocked;
	fs = profile_func_get(p, f, s->frames, s->nframes, at);
	if (fs)
		add_to_stats(p, &fs->st, s, cpu, blocked, gil, false);
	if (p->gpu)
		profile_gpu_sample(p, s->tgid, s->ts_ns, cpu + blocked, st, fs ? &fs->st : NULL);
	return at;
}

double profile__total_ns(const struct profile *p)
{
	return p->total_ns;
}

void profile__split_ns(const struct profile *p, double *python, double *native, double *system)
{
	*python = p->split_ns[WHERE_PYTHON];
	*native = p->split_ns[WHERE_NATIVE];
	*system = p->split_ns[WHERE_SYSTEM];
}

double profile__blocked_ns(const struct profile *p)
{
	return p->blocked_ns;
}

double profile__not_python_ns(const struct profile *p)
{
	return p->not_python_ns;
}

double profile__gil_ns(const struct profile *p)
{
	return p->gil_ns;
}

double profile__native_threads_ns(const struct profile *p)
{
	return p->native_threads_ns;
}

void profile__credit_native_threads(struct profile *p, bool on)
{
	p->native_threads_apart = !on;
}

double profile__unattributed_ns(const struct profile *p, enum unattributed_reason r)
{
	/* Native threads' time still waiting for its main thread's next
	 * record is on no line so far. */
	if (r == UNATTR_NO_PYTHON_THREAD)
		return p->unattributed_ns[r] + p->pending_ns;
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
