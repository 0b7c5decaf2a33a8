/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one reading of a profile document (ours or Scalene's) that the
 * terminal view, the HTML page and the exports share: typed access to the
 * untrusted document (a field of the wrong type reads as absent, numbers are
 * finite and bounded), the check that it is a profile at all, which lines,
 * functions and files are shown, the counters that mean lost data, and
 * Scalene's frame strings.  What one view shows, the others show too.
 */
#ifndef VIEWUTIL_H
#define VIEWUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct json_object;

/* A number field, 0 when absent, not a number or not finite; clamped to
 * +-1e15 so that casts and printing stay defined for any input. */
double vj_num(struct json_object *o, const char *key);
/* A value as a number, with vj_num's rules. */
double vj_num_of(struct json_object *v);
/* A boolean field that is true; false for anything else. */
bool vj_flag(struct json_object *o, const char *key);
/* A string field or NULL. */
const char *vj_str(struct json_object *o, const char *key);
/* An array / object field or NULL. */
struct json_object *vj_array(struct json_object *o, const char *key);
struct json_object *vj_object(struct json_object *o, const char *key);

/* Writes s to f with what must not reach a terminal (see vj_char_cols:
 * C0, DEL, C1, invalid UTF-8, bidi controls, line separators) shown as '?',
 * tabs as spaces, up to the first line break, whole characters only, at
 * most max columns (wide characters count two); returns the columns
 * written. */
int vj_put_safe(FILE *f, const char *s, int max);
/* Columns that s takes up to its first line break as a row of a view writes
 * it: tabs to the next multiple of 8, a character that must not reach a
 * terminal as one ('?'); at most VJ_MAX_WIDTH. */
int vj_text_cols(const char *s);
/* v in at most w columns: with dec decimals, fewer if it does not fit, an
 * exponent if that does not either; stars as the last resort. */
void vj_fit_num(char *out, size_t n, int w, double v, int dec, const char *suffix);

/* ---- the terminal ---- */

#define VJ_MAX_WIDTH 1000

/* The terminal's columns (and rows, when rows is not NULL) at fd: its size
 * when fd is a terminal, else $COLUMNS / $LINES; 0 when unknown; at most
 * VJ_MAX_WIDTH. */
int vj_term_size(int fd, int *rows);
/* The width a view uses on fd: vj_term_size's when at least 40, else 100. */
int vj_term_width(int fd);
/* Colour on fd: a terminal that is not "dumb", and NO_COLOR not set. */
bool vj_want_color(int fd);
/* Scalene stores &, <, > in line text as the six characters \u0026 etc.;
 * this gives them back. */
void vj_unescape_line(const char *s, char *out, size_t n);

/* scalene_bpf.allocation_churn.files of our profiles, NULL in Scalene's. */
struct json_object *vj_churn_files(struct json_object *doc);

/* Whether the profile's memory footprint was measured: not by uprobes
 * (--pid --memory), which see allocations but no frees. */
bool vj_footprint_measured(struct json_object *doc);

/* CPU time of the profiler's own probes, sampled in the program's threads and
 * kept out of the lines (scalene_bpf.probe_overhead_s); < 0: not measured. */
double vj_probe_overhead_s(struct json_object *doc);
/* scalene_bpf.stolen_s: the time the program's CPUs were taken away while
 * its threads ran (steal), left out of the lines; -1 when absent. */
double vj_stolen_s(struct json_object *doc);

/* The views' note on the sampled time that is on no line
 * (scalene_bpf.unattributed, part of the total_sampled_s the percentages are
 * shares of), in buf, when it is 2 % of the total or more; false (buf
 * empty) otherwise. */
bool vj_off_lines_text(struct json_object *doc, char *buf, size_t n);

/* --pid --memory on 3.14+ (scalene_bpf.memory.attach): how the sampler
 * loaded into the process went, in one sentence; false when the profile
 * has no such object. */
bool vj_memory_attach_text(struct json_object *doc, char *buf, size_t n);
/* MB that a line or function (fn) of a file allocated, freed or not (our
 * churn, beside Scalene's net n_malloc_mb): row is the line's or function's
 * entry, file_churn the file's entry in vj_churn_files (NULL: 0). */
double vj_churn(struct json_object *file_churn, struct json_object *row, bool fn);

/* Element i of an array as a number, with vj_num's rules. */
double vj_num_at(struct json_object *a, size_t i);
/* The character at s (left bytes): its length in *len (at least 1) and the
 * columns a terminal gives it (2 for wide East Asian characters and emoji,
 * counted generously so that a line never ends up wider than counted), or
 * -1 when it must not reach a terminal: invalid UTF-8, C0, DEL, C1, and the
 * invisible characters that reorder or break text (bidi controls, line and
 * paragraph separators). */
int vj_char_cols(const char *s, size_t left, size_t *len);

/* Checks the shape every view relies on: an object whose "files" is an
 * object of file entries, each an object whose "lines" is an array of
 * objects, and an elapsed_time_sec that is a finite number >= 0 (Scalene's
 * schema requires it; the views print it); everything else is optional.
 * 0, or -EINVAL with the reason as one line to err. */
int vj_check_profile(struct json_object *doc, FILE *err);

/* ---- which rows are shown ---- */

struct vj_select {
	double threshold; /* percent of the time */
	bool all_lines;	  /* every line with something sampled */
	bool memory;	  /* the profile has memory data ("memory": true) */
	bool gpu;	  /* and GPU data ("gpu": true) */
	bool gil;	  /* GIL wait above zero (scalene_bpf.gil_wait_s) */
	bool await;	  /* async_profile, and some line or function awaited */
};

void vj_select_init(struct vj_select *sel, struct json_object *doc, double threshold,
		    bool all_lines);
/* A line's (or function's) time: Python + native + system percent. */
double vj_line_time(struct json_object *row);
/* Of a line's (or function's) system time, the part spent waiting for the
 * GIL (n_gil_wait_percent), never more than its system time; 0 in profiles
 * without it (Scalene's). */
double vj_gil_wait(struct json_object *row);
/* Every interpreter of the profile is a free-threaded build: there is no
 * GIL, and no GIL wait to show. */
bool vj_free_threaded(struct json_object *doc);
/* Free-threaded, its GIL off when recognised and no wait for it measured
 * (PYTHON_GIL=1, or an extension that needs it, turns it on). */
bool vj_no_gil(struct json_object *doc);
/* A line's (or function's) share of all await time (n_async_await_percent),
 * 0..100; 0 in profiles without await data. */
double vj_await(struct json_object *row);
/* How hot a row is, for ranking: its time, plus its await share in an async
 * profile (sel->await). */
double vj_row_heat(const struct vj_select *sel, struct json_object *row);
/* Whether a line or function is shown: it allocated, copied or used the GPU
 * (in a profile with that data), or its time, or its await share in an async
 * profile, is above zero and reaches the threshold; with all_lines, any time
 * or await share above zero or any memory footprint does.  A row with
 * nothing sampled is never shown. */
bool vj_row_shown(const struct vj_select *sel, struct json_object *row);
/* Whether a file entry is shown: with all_lines, or when its share of the
 * time reaches the threshold, or when one of its lines or functions is. */
bool vj_file_shown(const struct vj_select *sel, struct json_object *fd);

/* ---- async/await ---- */

/* Task names a view lists for a row before it says "+N more". */
#define VJ_TASKS_SHOWN 3

/* Seconds of event-loop idle time attributed to awaits
 * (scalene_bpf.async.await_s); < 0 when the profile does not say
 * (Scalene's). */
double vj_await_s(struct json_object *doc);
/* The row's async_task_names: how many are strings, and the first max of
 * them in names (NULL for none). */
/* scalene_bpf.async.not_covered: why waiting was not measured (uvloop), or
 * NULL. */
const char *vj_async_not_covered(struct json_object *doc);
size_t vj_task_names(struct json_object *row, const char **names, size_t max);

/* ---- GPU work by launch site ---- */

/* Lines of scalene_bpf.gpu.lines a view lists. */
#define VJ_GPU_LINES_SHOWN 10
/* The copy directions of a GPU line's copy_mb, in the profile's order. */
#define VJ_GPU_DIRS 4
extern const char *const vj_gpu_dirs[VJ_GPU_DIRS];

/* One entry of scalene_bpf.gpu.lines: a Python line that made CUDA calls
 * and the device work they caused. */
struct vj_gpu_line {
	const char *file;
	int line;
	double calls, kernels, kernel_s, copies, copy_s, copy_mb[VJ_GPU_DIRS];
	double memsets, memset_mb, alloc_mb, free_mb;
};

/* The entries of scalene_bpf.gpu.lines that name a file and a line above
 * zero: how many there are, and the first max of them in v, in the
 * profile's order (most GPU time first).  0 in profiles without GPU lines
 * (Scalene's). */
size_t vj_gpu_lines(struct json_object *doc, struct vj_gpu_line *v, size_t max);
/* The "line" text (as the profile stores it) of line `line` of file in the
 * profile's files: the entry whose lineno is line, or in Scalene's dense
 * lines the line-th; NULL when the profile does not have it. */
const char *vj_source_of(struct json_object *doc, const char *file, int line);

/* ---- lost data ---- */

/* A counter of scalene_bpf.<group> whose value above zero means data was
 * lost or is incomplete, with what it means for the reader. */
struct vj_loss {
	const char *group, *key, *label;
};

extern const struct vj_loss vj_losses[];
extern const size_t vj_nlosses;

/* The counter's value in the profile: 0 when absent (Scalene's profiles have
 * none of them). */
double vj_loss_value(struct json_object *doc, const struct vj_loss *loss);

/* ---- Scalene's frame strings ---- */

/* A frame of `stacks` as Scalene writes it, "<file> <function>:<line>;":
 * the file up to the last space, the function after it, the line (up to
 * nine digits) after the last colon when there is one, and the one ';' that
 * ends every frame dropped.  Without a space the whole is the function;
 * without a line, line is 0. */
struct vj_legacy_frame {
	const char *file, *func; /* into buf */
	int line;
	char *buf;
};

/* 0 or -ENOMEM; vj_legacy_frame_free releases f->buf. */
int vj_legacy_frame_parse(const char *s, struct vj_legacy_frame *f);
void vj_legacy_frame_free(struct vj_legacy_frame *f);

#endif /* VIEWUTIL_H */
