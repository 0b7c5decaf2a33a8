// SPDX-License-Identifier: BSD-2-Clause
/*
 * The live view (top.h).  Each frame is built in memory and written at once:
 * cursor home, every row overwritten and cleared to its end, the rest of the
 * screen cleared, so nothing flickers.  The hottest rows are picked with a
 * bounded heap (a partial selection), not a sort of every line.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "session/host.h"
#include "base/hmap.h"
#include "model/profile.h"
#include "view/top.h"
#include "view/viewutil.h"

/* Item rows a plain frame (not a terminal) shows. */
#define BATCH_ITEMS 20
/* Rows of a frame above the items. */
#define HEADER_ROWS 7
/* Seconds a message stays in the header. */
#define MSG_S 3.0
/* Text columns (location, function, command) kept before numbers go. */
#define MIN_TEXT 20
/* How long a terminal that does not take our output is waited for. */
#define WRITE_WAIT_MS 1000
/* Output kept while the view is up that is printed at the end. */
#define LOG_TAIL (64 * 1024)

#define ENTER_SCREEN "\033[?1049h\033[?25l\033[H\033[2J"
/* Until the first frame: loading the BPF programs takes a second or so. */
#define STARTING "starting: loading the profiler..."
#define LEAVE_SCREEN "\033[0m\033[?25h\033[?1049l"

#define SGR_BOLD "1"
#define SGR_HEAD "7"
#define SGR_HOT "1;31"
#define SGR_PYTHON "34"
#define SGR_NATIVE "36"
#define SGR_SYSTEM "33"
#define SGR_WARN "1;33"

enum mode {
	MODE_LINES,
	MODE_FUNCS,
	MODE_PROCS
};

enum sort {
	SORT_TOTAL,
	SORT_PYTHON,
	SORT_NATIVE,
	SORT_SYSTEM,
	SORT_MEMORY, /* offered once a profile has memory figures */
	SORT_MAX
};

static const char *const sort_names[SORT_MAX] = { "total", "python", "native", "system", "memory" };
static const char *const mode_names[] = { "lines", "functions", "processes" };

enum col {
	C_PID,
	C_CPU,
	C_TOTAL,
	C_PY,
	C_NAT,
	C_SYS,
	C_MEM, /* C_TOTAL + SORT_MEMORY, as the times are C_TOTAL + their sort */
	C_TIME,
	C_SAMPLES,
	C_MAX
};

static const struct {
	const char *title;
	int width; /* with the space before it */
} cols[C_MAX] = {
	[C_PID] = { "PID", 8 },	   [C_CPU] = { "CPU%", 7 },	[C_TOTAL] = { "TOT%", 7 },
	[C_PY] = { "PY%", 7 },	   [C_NAT] = { "NAT%", 7 },	[C_SYS] = { "SYS%", 7 },
	[C_MEM] = { "MEM MB", 9 }, [C_TIME] = { "TIME s", 10 }, [C_SAMPLES] = { "SAMPLES", 9 },
};

/* The columns that go first on a narrow terminal (never the sort's). */
static const enum col drop_order[] = { C_SAMPLES, C_TIME, C_CPU, C_MEM, C_SYS, C_NAT, C_PY, C_PID };

/* One row: a line, a function or a process. */
struct item {
	/* By sort: total, python, native and system time (ns); memory: the
	 * net bytes allocated (the profile's n_malloc_mb). */
	double ns[SORT_MAX];
	uint64_t samples;
	const struct profile *p;
	const char *file;
	const char *func; /* functions: its qualname; lines: looked up when shown */
	int line;	  /* lines: the line; functions: the first line */
	int pid;	  /* --all */
	const char *comm; /* processes */
	double cpu_pct;	  /* processes: on-CPU over the last refresh; < 0: unknown */
	bool ended;
};

/* The hottest items so far: a min-heap of at most cap, by ns[sort]. */
struct heap {
	struct item *v;
	int n, cap;
	int sort;
};

struct name_key {
	const void *p;
	const char *file;
	int line, pid;
};

struct cpu_prev {
	double cpu_ns, at;
};

struct top {
	struct top_opts o;
	bool tty;	    /* the view owns a terminal */
	int in, out;	    /* the terminal (copies of stdin and stdout) */
	int saved_err, log; /* stderr before the view, and the kept output */
	bool color;
	enum mode mode;
	int sort;
	int pid_filter; /* 0: every process */
	bool paused, quit, input, dirty, finished;
	bool memory; /* a profile shown has memory figures: the column, the sort */
	char typed[12];
	char msg[128];
	double msg_until, next_draw;
	char *final; /* the last frame, printed after the terminal is restored */
	size_t final_len;
	uint64_t draw_ns, frames, max_draw_ns;
	struct hmap *names; /* struct name_key -> qualname, "" when not found */
	uint64_t names_sig;
	struct hmap *cpu; /* pid -> struct cpu_prev */
	struct heap heap;
};

/* ------------------------------------------------------------ terminal */

/* What restoring needs, kept where a signal handler can reach it. */
static struct {
	volatile sig_atomic_t raw;
	int in, out;
	struct termios saved;
} term = { .in = -1, .out = -1 };
static volatile sig_atomic_t winch;
static bool atexit_done;

/* Async-signal-safe: tcsetattr and write only. */
static void term_restore(void)
{
	ssize_t r;

	if (!term.raw)
		return;
	term.raw = 0;
	tcsetattr(term.in, TCSANOW, &term.saved);
	r = write(term.out, LEAVE_SCREEN, sizeof(LEAVE_SCREEN) - 1);
	(void)r;
}

static void on_fatal(int sig)
{
	term_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

static int term_raw(int in, int out)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
	struct sigaction sa = { .sa_handler = on_fatal, .sa_flags = SA_RESETHAND };
	struct termios raw;
	size_t i;

	if (tcgetattr(in, &term.saved))
		return -errno;
	term.in = in;
	term.out = out;
	if (!atexit_done) {
		atexit(term_restore);
		atexit_done = true;
	}
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, NULL);
	sa.sa_handler = on_winch;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	raw = term.saved;
	/* Keys one at a time, no echo, Ctrl-C and Ctrl-\ as keys (they quit
	 * the view, which stops the program itself); output processing kept. */
	raw.c_lflag &= ~(ICANON | ECHO | ISIG | IEXTEN);
	raw.c_iflag &= ~(IXON | ICRNL);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	term.raw = 1;
	if (tcsetattr(in, TCSANOW, &raw)) {
		term.raw = 0;
		return -errno;
	}
	return 0;
}

/* Writes all of buf to fd; a terminal that does not drain (a stopped
 * terminal emulator) is given up on rather than waited for forever. */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, WRITE_WAIT_MS) <= 0)
				return;
			continue;
		}
		if (n <= 0)
			return;
		buf += n;
		len -= n;
	}
}

/* ---------------------------------------------------------------- rows */

struct out {
	FILE *f;
	int width, rows; /* rows 0: no limit */
	int row, cols;
	bool color, tty, styled;
};

static bool o_full(const struct out *o)
{
	return o->rows && o->row >= o->rows;
}

static void o_text(struct out *o, const char *s, int max)
{
	int room = o->width - o->cols;

	if (o_full(o))
		return;
	if (max > room)
		max = room;
	if (max > 0)
		o->cols += vj_put_safe(o->f, s, max);
}

static void o_pad(struct out *o, int col)
{
	if (col > o->width)
		col = o->width;
	while (!o_full(o) && o->cols < col) {
		fputc(' ', o->f);
		o->cols++;
	}
}

static void o_style(struct out *o, const char *sgr)
{
	bool reset = !strcmp(sgr, "0");

	if (!o->color || o_full(o) || (reset && !o->styled))
		return;
	fprintf(o->f, "\033[%sm", sgr);
	o->styled = !reset;
}

/* Ends a row: cleared to its end on a terminal (not when the text reached
 * the last column, where clearing would take the last character). */
static void o_end(struct out *o)
{
	if (o_full(o))
		return;
	o_style(o, "0");
	if (o->tty && o->cols < o->width)
		fputs("\033[K", o->f);
	o->row++;
	o->cols = 0;
	/* No newline after a terminal's last row: it would scroll. */
	if (!o->tty || !o->rows || o->row < o->rows)
		fputc('\n', o->f);
}

static void o_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void o_printf(struct out *o, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	o_text(o, tmp, VJ_MAX_WIDTH);
}

/* A number right-aligned in a cell of w columns (one of them the gap);
 * blank for zero. */
static void o_num(struct out *o, int w, double v, int dec, const char *suffix, const char *sgr)
{
	char s[64];
	int len;

	if (!(v > 0)) {
		o_pad(o, o->cols + w);
		return;
	}
	vj_fit_num(s, sizeof(s), w - 1, v, dec, suffix);
	len = (int)strlen(s);
	o_pad(o, o->cols + w - len);
	if (sgr)
		o_style(o, sgr);
	o_text(o, s, len);
	if (sgr)
		o_style(o, "0");
}

/* ---------------------------------------------------------------- heap */

static double key_of(const struct heap *h, const struct item *it)
{
	return it->ns[h->sort];
}

/* a is hotter than b: by the sort's time, then the other times, then
 * place, so that equal rows keep their order between frames. */
static bool hotter(const struct heap *h, const struct item *a, const struct item *b)
{
	int c;

	if (key_of(h, a) != key_of(h, b))
		return key_of(h, a) > key_of(h, b);
	if (a->ns[SORT_TOTAL] != b->ns[SORT_TOTAL])
		return a->ns[SORT_TOTAL] > b->ns[SORT_TOTAL];
	if (a->pid != b->pid)
		return a->pid < b->pid;
	c = a->file && b->file && a->file != b->file ? strcmp(a->file, b->file) : 0;
	if (c)
		return c < 0;
	return a->line < b->line;
}

static void heap_swap(struct heap *h, int i, int j)
{
	struct item t = h->v[i];

	h->v[i] = h->v[j];
	h->v[j] = t;
}

static void heap_down(struct heap *h, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < h->n && hotter(h, &h->v[m], &h->v[l]))
			m = l;
		if (r < h->n && hotter(h, &h->v[m], &h->v[r]))
			m = r;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

/* Keeps it when it is among the cap hottest seen. */
static void heap_offer(struct heap *h, const struct item *it)
{
	int i;

	if (h->cap <= 0 || !(key_of(h, it) > 0 || it->ns[SORT_TOTAL] > 0 || it->comm))
		return;
	if (h->n < h->cap) {
		i = h->n++;
		h->v[i] = *it;
		while (i && hotter(h, &h->v[(i - 1) / 2], &h->v[i])) {
			heap_swap(h, i, (i - 1) / 2);
			i = (i - 1) / 2;
		}
		return;
	}
	if (!hotter(h, it, &h->v[0]))
		return;
	h->v[0] = *it;
	heap_down(h, 0);
}

/* Whether a line or function with these times could get in: the
 * cheap test that most of them fail once the heap is full. */
static bool heap_may_take(const struct heap *h, const struct line_stats *ls)
{
	double key;

	if (h->n < h->cap)
		return h->cap > 0;
	switch (h->sort) {
	case SORT_PYTHON:
		key = ls->python_ns;
		break;
	case SORT_NATIVE:
		key = ls->native_ns;
		break;
	case SORT_SYSTEM:
		key = ls->system_ns;
		break;
	case SORT_MEMORY:
		key = ls->mem ? ls->mem->net_bytes : 0;
		break;
	default:
		key = ls->python_ns + ls->native_ns + ls->system_ns;
	}
	return key >= key_of(h, &h->v[0]);
}

/* Hottest first; the heap is used up. */
static int heap_drain(struct heap *h)
{
	int n = h->n;

	while (h->n > 1) {
		heap_swap(h, 0, h->n - 1);
		h->n--;
		heap_down(h, 0);
	}
	h->n = 0;
	return n;
}

static int heap_init(struct heap *h, int cap, int sort)
{
	if (cap > h->cap) {
		struct item *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			cap = h->cap;
		else
			h->v = v;
	}
	h->cap = cap;
	h->n = 0;
	h->sort = sort;
	return cap;
}

/* ------------------------------------------------------------ the data */

struct gather {
	struct top *t;
	double now;
	double total_ns, split[3];
	uint64_t samples;
	int nprocs, nlive, shown_procs, shown_live;
	uint64_t sig;
};

/* The row of a line's or a function's statistics; false when it has no
 * time to show. */
static bool item_of(struct item *it, const struct line_stats *ls, const struct profile *p,
		    const char *file, int pid)
{
	memset(it, 0, sizeof(*it));
	it->ns[SORT_PYTHON] = ls->python_ns;
	it->ns[SORT_NATIVE] = ls->native_ns;
	it->ns[SORT_SYSTEM] = ls->system_ns;
	it->ns[SORT_TOTAL] = ls->python_ns + ls->native_ns + ls->system_ns;
	it->ns[SORT_MEMORY] = ls->mem ? ls->mem->net_bytes : 0;
	it->samples = ls->samples;
	it->p = p;
	it->file = file;
	it->pid = pid;
	return it->ns[SORT_TOTAL] > 0 || it->ns[SORT_MEMORY] != 0;
}

static void offer_profile(struct gather *g, const struct profile *p, int pid)
{
	struct top *t = g->t;
	int i, k, n = profile__nfiles(p);

	for (i = 0; i < n; i++) {
		const struct file_stats *fs = profile__file(p, i);

		if (t->mode == MODE_LINES) {
			for (k = 0; k < fs->nlines; k++) {
				const struct line_stats *ls = fs->lines[k];
				struct item it;

				if (!ls || !heap_may_take(&t->heap, ls) ||
				    !item_of(&it, ls, p, fs->path, pid))
					continue;
				it.line = k;
				heap_offer(&t->heap, &it);
			}
			continue;
		}
		for (k = 0; k < fs->nfuncs; k++) {
			const struct func_stats *f = fs->funcs[k];
			const struct line_stats *ls = &f->st;
			struct item it;

			if (!heap_may_take(&t->heap, ls) || !item_of(&it, ls, p, fs->path, pid))
				continue;
			it.func = f->qualname;
			it.line = f->firstlineno;
			heap_offer(&t->heap, &it);
		}
	}
}

/* On-CPU time of a process over the last refresh, in percent of a core. */
static double cpu_recent(struct top *t, int pid, const struct profile *p, double now)
{
	struct cpu_prev *prev = hmap__get(t->cpu, &pid);
	double cpu = 0, pct = -1;
	int i, n = profile__nthreads(p);

	for (i = 0; i < n; i++)
		cpu += profile__thread(p, i)->cpu_ns;
	if (prev && now > prev->at && cpu >= prev->cpu_ns)
		pct = (cpu - prev->cpu_ns) / 1e9 / (now - prev->at) * 100;
	if (!prev) {
		prev = malloc(sizeof(*prev));
		if (!prev || hmap__put(t->cpu, &pid, prev)) {
			free(prev);
			return -1;
		}
	}
	/* Measured over one refresh at least, not between two keys. */
	if (!prev->at || now - prev->at >= t->o.refresh_s * 0.9 || pct < 0) {
		prev->cpu_ns = cpu;
		prev->at = now;
	}
	return pct;
}

static void add_totals(struct gather *g, const struct profile *p)
{
	double s[3];

	profile__split_ns(p, &s[0], &s[1], &s[2]);
	g->split[0] += s[0];
	g->split[1] += s[1];
	g->split[2] += s[2];
	g->total_ns += profile__total_ns(p);
	g->samples += profile__samples(p);
	/* Allocations have been sampled: memory is profiled. */
	if (profile__memory(p)->alloc_samples)
		g->t->memory = true;
}

static void each_proc(void *ctx, const struct host_proc_info *pi)
{
	struct gather *g = ctx;
	struct top *t = g->t;
	struct item it;

	g->nprocs++;
	if (pi->profile) {
		g->nlive++;
		g->sig = g->sig * 1000003 ^ (uint64_t)pi->pid ^ (uintptr_t)pi->profile;
	}
	if (t->pid_filter && pi->pid != t->pid_filter)
		return;
	g->shown_procs++;
	memset(&it, 0, sizeof(it));
	it.pid = pi->pid;
	it.comm = pi->comm;
	if (pi->profile) {
		double s[3];

		g->shown_live++;
		add_totals(g, pi->profile);
		/* Kept up in every view, so that the processes view has it. */
		it.cpu_pct = cpu_recent(t, pi->pid, pi->profile, g->now);
		if (t->mode != MODE_PROCS) {
			offer_profile(g, pi->profile, pi->pid);
			return;
		}
		profile__split_ns(pi->profile, &s[0], &s[1], &s[2]);
		it.ns[SORT_PYTHON] = s[0];
		it.ns[SORT_NATIVE] = s[1];
		it.ns[SORT_SYSTEM] = s[2];
		it.ns[SORT_TOTAL] = profile__total_ns(pi->profile);
		it.ns[SORT_MEMORY] = profile__memory(pi->profile)->net_bytes;
		it.samples = profile__samples(pi->profile);
	} else {
		it.ns[SORT_PYTHON] = pi->python_s * 1e9;
		it.ns[SORT_NATIVE] = pi->native_s * 1e9;
		it.ns[SORT_SYSTEM] = pi->system_s * 1e9;
		it.ns[SORT_TOTAL] = pi->total_s * 1e9;
		it.samples = pi->samples;
		it.cpu_pct = -1;
		it.ended = true;
		g->split[0] += it.ns[SORT_PYTHON];
		g->split[1] += it.ns[SORT_NATIVE];
		g->split[2] += it.ns[SORT_SYSTEM];
		g->total_ns += it.ns[SORT_TOTAL];
		g->samples += it.samples;
	}
	if (t->mode == MODE_PROCS)
		heap_offer(&t->heap, &it);
}

/* The function a line belongs to: the frame of any stack at that line (a
 * line belongs to one code object), looked up once per line shown. */
static const char *line_function(struct top *t, const struct item *it)
{
	struct name_key k = { .p = it->p, .file = it->file, .line = it->line, .pid = it->pid };
	const char *name = hmap__get(t->names, &k);
	int i, j, n;

	if (name)
		return name;
	name = "";
	n = profile__nstacks(it->p);
	for (i = 0; i < n && !*name; i++) {
		const struct stack_stats *st = profile__stack(it->p, i);

		for (j = st->nframes - 1; j >= 0; j--) {
			const struct frame_ref *fr = &st->frames[j];

			if (fr->line == it->line && fr->filename == it->file && fr->qualname) {
				name = fr->qualname;
				break;
			}
		}
	}
	hmap__put(t->names, &k, (void *)name);
	return name;
}

/* ---------------------------------------------------------------- frame */

/* "path:line" with leading directories dropped until it fits in w. */
static void o_location(struct out *o, const char *file, int line, int w)
{
	char buf[1024];
	const char *s = buf, *slash;

	if (line > 0)
		snprintf(buf, sizeof(buf), "%s:%d", file ? file : "?", line);
	else
		snprintf(buf, sizeof(buf), "%s", file ? file : "?");
	while (vj_text_cols(s) > w && (slash = strchr(s, '/')) && slash[1])
		s = slash + 1;
	o_text(o, s, w);
}

static const char *pct_sgr(double pct, const char *normal)
{
	return pct >= 20 ? SGR_HOT : normal;
}

static void header(struct top *t, struct out *o, const struct top_src *src, const struct gather *g)
{
	double tot = g->total_ns;
	double now = mono_s();

	o_style(o, SGR_BOLD);
	o_text(o, "scalene-bpf top", VJ_MAX_WIDTH);
	o_style(o, "0");
	o_text(o, "  ", 2);
	o_text(o, src->what ? src->what : "", VJ_MAX_WIDTH);
	o_end(o);
	o_printf(o, "elapsed %.1f s  samples %llu  time %.1f s", src->elapsed_s,
		 (unsigned long long)g->samples, tot / 1e9);
	o_end(o);
	o_style(o, SGR_PYTHON);
	o_printf(o, "python %.1f%%", tot > 0 ? 100 * g->split[0] / tot : 0);
	o_style(o, "0");
	o_text(o, "  ", 2);
	o_style(o, SGR_NATIVE);
	o_printf(o, "native %.1f%%", tot > 0 ? 100 * g->split[1] / tot : 0);
	o_style(o, "0");
	o_text(o, "  ", 2);
	o_style(o, SGR_SYSTEM);
	o_printf(o, "system %.1f%%", tot > 0 ? 100 * g->split[2] / tot : 0);
	o_style(o, "0");
	o_end(o);
	o_printf(o, "view: %s  sort: %s", mode_names[t->mode], sort_names[t->sort]);
	if (t->o.all)
		o_printf(o, "  processes: %d running, %d ended", g->nlive, g->nprocs - g->nlive);
	if (t->pid_filter)
		o_printf(o, "  filter: pid %d", t->pid_filter);
	if (t->paused)
		o_text(o, "  PAUSED", VJ_MAX_WIDTH);
	if (t->o.verbose && t->frames)
		o_printf(o, "  draw %.2f ms", t->draw_ns / 1e6 / t->frames);
	o_end(o);
	if (src->state || (t->msg[0] && now < t->msg_until)) {
		o_style(o, SGR_WARN);
		o_text(o, t->msg[0] && now < t->msg_until ? t->msg : src->state, VJ_MAX_WIDTH);
		if (src->state && !(t->msg[0] && now < t->msg_until) && o->tty && !t->o.once)
			o_text(o, " - q to quit", VJ_MAX_WIDTH);
		o_end(o);
	} else if (o->tty) {
		o_end(o);
	}
	/* A plain frame has neither the keys nor the rows kept for them. */
	if (!o->tty)
		return;
	if (t->input)
		o_printf(o, "PID to show (Enter alone: every process, Esc: cancel): %s_", t->typed);
	else
		o_printf(o, "%s view  s sort  %sspace pause  q quit", t->o.all ? "l/f/p" : "l/f",
			 t->o.all ? "/ pid  " : "");
	o_end(o);
	o_end(o);
}

/* Which columns fit: the text keeps MIN_TEXT columns; the sort's column
 * and the total stay. */
static void layout(const struct top *t, const struct out *o, bool show[C_MAX])
{
	int used = 0, i;
	size_t k;

	for (i = 0; i < C_MAX; i++)
		show[i] = false;
	show[C_TOTAL] = show[C_PY] = show[C_NAT] = show[C_SYS] = show[C_TIME] = true;
	show[C_MEM] = t->memory;
	show[C_PID] = t->o.all && (!t->pid_filter || t->mode == MODE_PROCS);
	show[C_CPU] = show[C_SAMPLES] = t->mode == MODE_PROCS;
	for (i = 0; i < C_MAX; i++)
		used += show[i] ? cols[i].width : 0;
	for (k = 0; k < sizeof(drop_order) / sizeof(drop_order[0]); k++) {
		enum col c = drop_order[k];

		if (used + 2 + MIN_TEXT <= o->width)
			break;
		if (!show[c] || (int)c == C_TOTAL + t->sort)
			continue;
		show[c] = false;
		used -= cols[c].width;
	}
}

static void titles(struct top *t, struct out *o, const bool show[C_MAX], int loc_w)
{
	int i, start;

	o_style(o, SGR_HEAD);
	for (i = 0; i < C_MAX; i++) {
		char title[16];
		bool sorted = i == C_TOTAL + t->sort;

		if (!show[i])
			continue;
		snprintf(title, sizeof(title), "%s%s", cols[i].title, sorted ? "*" : "");
		o_pad(o, o->cols + cols[i].width - (int)strlen(title));
		if (sorted)
			o_style(o, SGR_BOLD);
		o_text(o, title, VJ_MAX_WIDTH);
		if (sorted) {
			o_style(o, "0");
			o_style(o, SGR_HEAD);
		}
	}
	o_text(o, "  ", 2);
	start = o->cols;
	if (t->mode == MODE_PROCS)
		o_text(o, "COMMAND", VJ_MAX_WIDTH);
	else
		o_text(o, t->mode == MODE_FUNCS ? "FUNCTION" : "LOCATION", VJ_MAX_WIDTH);
	if (t->mode != MODE_PROCS && loc_w) {
		o_pad(o, start + loc_w + 1);
		o_text(o, t->mode == MODE_FUNCS ? "LOCATION" : "FUNCTION", VJ_MAX_WIDTH);
	}
	if (o->tty)
		o_pad(o, o->width);
	o_end(o);
}

static void item_row(struct top *t, struct out *o, const bool show[C_MAX], const struct item *it,
		     double tot, int loc_w)
{
	double pct = tot > 0 ? 100.0 / tot : 0;
	const char *name;
	int i;

	for (i = 0; i < C_MAX; i++) {
		if (!show[i])
			continue;
		switch (i) {
		case C_PID: {
			char s[16];

			snprintf(s, sizeof(s), "%d", it->pid);
			o_pad(o, o->cols + cols[i].width - (int)strlen(s));
			o_text(o, s, VJ_MAX_WIDTH);
			break;
		}
		case C_CPU:
			if (it->cpu_pct >= 0)
				o_num(o, cols[i].width, it->cpu_pct < 0.05 ? 0.01 : it->cpu_pct, 1,
				      "", NULL);
			else
				o_pad(o, o->cols + cols[i].width);
			break;
		case C_TOTAL:
			o_num(o, cols[i].width, it->ns[SORT_TOTAL] * pct, 1, "",
			      pct_sgr(it->ns[SORT_TOTAL] * pct, NULL));
			break;
		case C_PY:
			o_num(o, cols[i].width, it->ns[SORT_PYTHON] * pct, 1, "", SGR_PYTHON);
			break;
		case C_NAT:
			o_num(o, cols[i].width, it->ns[SORT_NATIVE] * pct, 1, "", SGR_NATIVE);
			break;
		case C_SYS:
			o_num(o, cols[i].width, it->ns[SORT_SYSTEM] * pct, 1, "", SGR_SYSTEM);
			break;
		case C_MEM:
			o_num(o, cols[i].width, it->ns[SORT_MEMORY] / (1024.0 * 1024.0), 1, "",
			      NULL);
			break;
		case C_TIME:
			o_num(o, cols[i].width, it->ns[SORT_TOTAL] / 1e9, 3, "", NULL);
			break;
		case C_SAMPLES:
			o_num(o, cols[i].width, (double)it->samples, 0, "", NULL);
			break;
		}
	}
	o_text(o, "  ", 2);
	if (t->mode == MODE_PROCS) {
		o_text(o, it->comm && *it->comm ? it->comm : "?", VJ_MAX_WIDTH);
		if (it->ended)
			o_text(o, " (ended)", VJ_MAX_WIDTH);
	} else if (t->mode == MODE_FUNCS) {
		int start = o->cols;

		o_text(o, it->func ? it->func : "?", loc_w ? loc_w : VJ_MAX_WIDTH);
		if (loc_w) {
			o_pad(o, start + loc_w + 1);
			o_location(o, it->file, it->line, o->width - o->cols);
		}
	} else {
		int start = o->cols;

		o_location(o, it->file, it->line, loc_w ? loc_w : o->width - o->cols);
		if (loc_w) {
			name = line_function(t, it);
			o_pad(o, start + loc_w + 1);
			o_text(o, name, VJ_MAX_WIDTH);
		}
	}
	o_end(o);
}

static void frame(struct top *t, const struct top_src *src, struct out *o)
{
	struct gather g = { .t = t, .now = mono_s() };
	int nitems, want, i, text, loc_w = 0;
	bool show[C_MAX];

	want = o->rows ? o->rows - HEADER_ROWS - 1 : BATCH_ITEMS;
	if (want < 0)
		want = 0;
	heap_init(&t->heap, want, t->sort);
	if (src->host) {
		host__each_profiled(src->host, each_proc, &g);
		if (g.sig != t->names_sig) {
			/* Profiles came or went: names of a freed one must not be
			 * found under a new one's addresses. */
			struct hmap *fresh = hmap__new(sizeof(struct name_key));

			if (fresh) {
				hmap__free(t->names);
				t->names = fresh;
				t->names_sig = g.sig;
			}
		}
	} else if (src->profile) {
		add_totals(&g, src->profile);
		offer_profile(&g, src->profile, 0);
	}
	nitems = heap_drain(&t->heap);
	header(t, o, src, &g);
	layout(t, o, show);
	for (i = 0, text = o->width - 2; i < C_MAX; i++)
		text -= show[i] ? cols[i].width : 0;
	/* Location and function side by side when both get 16 columns or more. */
	if (t->mode != MODE_PROCS && text >= 40) {
		int widest = 8;

		for (i = 0; i < nitems; i++) {
			const struct item *it = &t->heap.v[i];
			char num[16];
			int w = t->mode == MODE_FUNCS
					? vj_text_cols(it->func ? it->func : "?")
					: vj_text_cols(it->file ? it->file : "?") +
						  snprintf(num, sizeof(num), ":%d", it->line);

			widest = w > widest ? w : widest;
		}
		loc_w = text / 2 > widest ? widest : text / 2;
	}
	titles(t, o, show, loc_w);
	if (!nitems) {
		if (t->pid_filter && !g.shown_procs)
			o_printf(o, "(process %d is not profiled)", t->pid_filter);
		else if (t->pid_filter && !g.shown_live && t->mode != MODE_PROCS)
			o_printf(o, "(process %d has ended: its totals are in the processes view)",
				 t->pid_filter);
		else
			o_text(o,
			       t->mode == MODE_PROCS
				       ? "(no process profiled yet)"
				       : "(nothing sampled in the profiled files yet)",
			       VJ_MAX_WIDTH);
		o_end(o);
	}
	for (i = 0; i < nitems; i++)
		item_row(t, o, show, &t->heap.v[i], g.total_ns, loc_w);
}

/* The frame as one buffer: on a terminal it starts at the top left and
 * clears what the last one left below it. */
static char *build(struct top *t, const struct top_src *src, int width, int rows, bool color,
		   bool tty, size_t *len)
{
	struct out o = { .width = width, .rows = rows, .color = color, .tty = tty };
	char *buf = NULL;

	o.f = open_memstream(&buf, len);
	if (!o.f)
		return NULL;
	if (tty)
		fputs("\033[H", o.f);
	frame(t, src, &o);
	if (tty && (!rows || o.row < rows))
		fputs("\033[J", o.f);
	if (fclose(o.f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void draw(struct top *t, const struct top_src *src)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), dt;
	int rows = 0, width;
	size_t len = 0;
	char *buf;

	if (t->tty) {
		width = vj_term_size(t->out, &rows);
		width = width > 0 ? width : 80;
		rows = rows > 0 ? rows : 24;
	} else {
		width = vj_term_width(STDOUT_FILENO);
	}
	buf = build(t, src, width, rows, t->color, t->tty, &len);
	if (buf) {
		if (t->tty) {
			write_all(t->out, buf, len);
		} else {
			fwrite(buf, 1, len, stdout);
			fputc('\n', stdout);
			fflush(stdout);
		}
	}
	free(buf);
	dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	t->draw_ns += dt;
	t->max_draw_ns = dt > t->max_draw_ns ? dt : t->max_draw_ns;
	t->frames++;
	t->dirty = false;
	t->next_draw = mono_s() + t->o.refresh_s;
}

void top__draw_to(struct top *t, const struct top_src *src, FILE *f, int width, int rows)
{
	size_t len = 0;
	char *buf = build(t, src, width, rows, false, false, &len);

	if (buf)
		fwrite(buf, 1, len, f);
	free(buf);
}

/* ---------------------------------------------------------------- keys */

static void say(struct top *t, const char *msg)
{
	snprintf(t->msg, sizeof(t->msg), "%s", msg);
	t->msg_until = mono_s() + MSG_S;
}

/* The sort `step` places on (1: next, SORT_MAX - 1: previous); memory only
 * once a profile has it. */
static int next_sort(const struct top *t, int step)
{
	int s = (t->sort + step) % SORT_MAX;

	if (s == SORT_MEMORY && !t->memory)
		s = (s + step) % SORT_MAX;
	return s;
}

static void key(struct top *t, const unsigned char *k, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = k[i];

		t->dirty = true;
		if (t->input) {
			size_t len = strlen(t->typed);

			if (c >= '0' && c <= '9' && len + 1 < sizeof(t->typed)) {
				t->typed[len] = c;
				t->typed[len + 1] = '\0';
			} else if ((c == 127 || c == 8) && len) {
				t->typed[len - 1] = '\0';
			} else if (c == '\r' || c == '\n') {
				t->pid_filter = atoi(t->typed);
				t->input = false;
			} else if (c == 27 || c == 3) {
				t->input = false;
				return; /* the rest of an escape sequence */
			}
			continue;
		}
		switch (c) {
		case 'q':
		case 'Q':
		case 3:	 /* Ctrl-C */
		case 28: /* Ctrl-\ */
			t->quit = true;
			return;
		case 'l':
			t->mode = MODE_LINES;
			break;
		case 'f':
			t->mode = MODE_FUNCS;
			break;
		case 'p':
			if (t->o.all)
				t->mode = MODE_PROCS;
			else
				say(t, "one process is profiled: the processes view is --all's");
			break;
		case 's':
		case 'S':
			t->sort = next_sort(t, c == 's' ? 1 : SORT_MAX - 1);
			break;
		case '/':
		case 'P':
			if (t->o.all) {
				t->input = true;
				t->typed[0] = '\0';
			} else {
				say(t, "one profile here: showing one process is --all's");
			}
			break;
		case ' ':
			t->paused = !t->paused;
			break;
		case 27:
			return; /* an escape sequence (arrows...): ignored whole */
		case 12:	/* Ctrl-L: redraw */
			break;
		default:
			t->dirty = false;
			break;
		}
	}
}

void top__key(struct top *t, int c)
{
	unsigned char k = (unsigned char)c;

	key(t, &k, 1);
}

static void read_keys(struct top *t)
{
	unsigned char buf[64];
	ssize_t n;

	while ((n = read(t->in, buf, sizeof(buf))) > 0)
		key(t, buf, (size_t)n);
}

/* ------------------------------------------------------------- the api */

bool top__tick(struct top *t, const struct top_src *src)
{
	if (t->tty) {
		read_keys(t);
		if (winch) {
			winch = 0;
			t->dirty = true;
		}
	}
	if (t->quit)
		return true;
	if (t->dirty || (!t->paused && mono_s() >= t->next_draw))
		draw(t, src);
	return false;
}

void top__finish(struct top *t, const struct top_src *src)
{
	int rows = 0, width;

	t->finished = true;
	if (!t->tty) {
		draw(t, src);
		return;
	}
	t->paused = false;
	draw(t, src);
	while (!t->quit && !t->o.once && !(t->o.stop && *t->o.stop)) {
		struct pollfd p = { .fd = t->in, .events = POLLIN };

		if (poll(&p, 1, 250) > 0)
			read_keys(t);
		if (winch) {
			winch = 0;
			t->dirty = true;
		}
		if (t->dirty && !t->quit)
			draw(t, src);
	}
	/* The last view, kept for the normal screen once the terminal is
	 * back: as wide as the terminal, no taller. */
	width = vj_term_size(t->out, &rows);
	free(t->final);
	t->final = build(t, src, width > 0 ? width : 80, rows > 1 ? rows - 1 : 0, t->color, false,
			 &t->final_len);
}

static int keep_output(struct top *t)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	char path[] = "/tmp/scalene-bpf-top-XXXXXX";

	t->log = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (t->log < 0) {
		t->log = mkostemp(path, O_CLOEXEC);
		if (t->log >= 0)
			unlink(path);
	}
	t->in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	t->out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	t->saved_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (null < 0 || t->log < 0 || t->in < 0 || t->out < 0 || t->saved_err < 0) {
		int err = -errno;

		if (null >= 0)
			close(null);
		return err ? err : -EIO;
	}
	fflush(stdout);
	fflush(stderr);
	/* From here the program's input is /dev/null, and its output and
	 * ours go to the file, printed when the view closes. */
	dup2(null, STDIN_FILENO);
	dup2(t->log, STDOUT_FILENO);
	dup2(t->log, STDERR_FILENO);
	close(null);
	return 0;
}

struct top *top__new(const struct top_opts *o)
{
	struct top *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return NULL;
	t->o = *o;
	if (t->o.refresh_s <= 0)
		t->o.refresh_s = 1;
	t->in = t->out = t->saved_err = t->log = -1;
	t->names = hmap__new(sizeof(struct name_key));
	t->cpu = hmap__new(sizeof(int));
	if (!t->names || !t->cpu) {
		top__free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->tty = !o->batch && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (!t->tty)
		return t;
	t->color = vj_want_color(STDOUT_FILENO);
	err = keep_output(t);
	if (!err)
		err = term_raw(t->in, t->out);
	if (err) {
		top__free(t);
		fprintf(stderr, "scalene-bpf: top: cannot take over the terminal: %s\n",
			strerror(-err));
		errno = -err;
		return NULL;
	}
	write_all(t->out, ENTER_SCREEN STARTING, sizeof(ENTER_SCREEN STARTING) - 1);
	t->dirty = true;
	return t;
}

/* The end of the kept output (program and messages) to stderr. */
static void print_kept(struct top *t)
{
	off_t size = lseek(t->log, 0, SEEK_END), from;
	char buf[8192];
	ssize_t n;

	if (size <= 0)
		return;
	from = size > LOG_TAIL ? size - LOG_TAIL : 0;
	if (from)
		fprintf(stderr, "scalene-bpf: (the first %lld bytes of the output are left out)\n",
			(long long)from);
	fflush(stderr);
	lseek(t->log, from, SEEK_SET);
	while ((n = read(t->log, buf, sizeof(buf))) > 0)
		write_all(STDERR_FILENO, buf, (size_t)n);
}

void top__free(struct top *t)
{
	size_t it = 0;
	const void *k;
	void *v;

	if (!t)
		return;
	if (t->tty) {
		term_restore();
		signal(SIGWINCH, SIG_DFL);
		fflush(stdout);
		fflush(stderr);
		if (t->in >= 0)
			dup2(t->in, STDIN_FILENO);
		if (t->out >= 0)
			dup2(t->out, STDOUT_FILENO);
		if (t->saved_err >= 0)
			dup2(t->saved_err, STDERR_FILENO);
		if (t->final) {
			fwrite(t->final, 1, t->final_len, stdout);
			fflush(stdout);
		}
		if (t->log >= 0)
			print_kept(t);
	}
	if (t->o.verbose && t->frames)
		fprintf(stderr,
			"scalene-bpf: top drew %llu frames, %.3f ms of CPU each on average "
			"(%.3f ms at most): %.4f%% of one core at one frame per %.1f s\n",
			(unsigned long long)t->frames, t->draw_ns / 1e6 / t->frames,
			t->max_draw_ns / 1e6, 100.0 * t->draw_ns / 1e9 / t->frames / t->o.refresh_s,
			t->o.refresh_s);
	if (t->in >= 0)
		close(t->in);
	if (t->out >= 0)
		close(t->out);
	if (t->saved_err >= 0)
		close(t->saved_err);
	if (t->log >= 0)
		close(t->log);
	if (t->cpu) {
		while (hmap__next(t->cpu, &it, &k, &v))
			free(v);
	}
	hmap__free(t->cpu);
	hmap__free(t->names);
	free(t->heap.v);
	free(t->final);
	free(t);
}
