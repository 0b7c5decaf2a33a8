// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "view/hostindex.h"
#include "base/utf8.h"
#include "view/view.h"
#include "view/viewutil.h"

/* Bytes kept of each string (cut at the bound; a character cut in two
 * becomes a replacement). */
#define MAX_NAME 256
#define MAX_COMM 64
#define MAX_COMMAND 4096
#define MAX_VERSION 32
#define MAX_REASON 512
#define MAX_WARNING 2000
#define MAX_ARGS 4096
/* pid_t and uid_t are 32 bits; an exit code is a byte, or minus a signal. */
#define MAX_ID 4294967295.0

struct reader {
	const char *name;
	FILE *err;
	char at[64]; /* the entry being read: "", "processes[3]." */
};

/* The reason, once: "<file>: <field> <why>".  A field's name may be the
 * document's own (a reason of not_profiled): it is written as safe text. */
static int fail(struct reader *r, const char *key, const char *why)
{
	fprintf(r->err, "scalene-bpf: ");
	vj_put_safe(r->err, r->name, 400);
	/* An entry itself: its path without the dot. */
	fprintf(r->err, ": not a valid index: %.*s", (int)strlen(r->at) - (*key ? 0 : !!*r->at),
		r->at);
	vj_put_safe(r->err, key, 200);
	fprintf(r->err, " %s\n", why);
	return -EINVAL;
}

/* The field key of o: NULL with *v NULL when absent or null (null counts as
 * absent only where nullable), else its value in *v. */
static int field(struct reader *r, struct json_object *o, const char *key, bool required,
		 bool nullable, struct json_object **v)
{
	bool there = json_object_object_get_ex(o, key, v);

	if (there && !*v && !nullable)
		return fail(r, key, "is null");
	if (!there && required)
		return fail(r, key, "is missing");
	if (!there)
		*v = NULL;
	return 0;
}

/* A number in [min, max] (integral with whole); absent: *out unchanged. */
static int get_num(struct reader *r, struct json_object *o, const char *key, bool required,
		   double min, double max, bool whole, double *out)
{
	struct json_object *v;
	double d;
	int err = field(r, o, key, required, false, &v);

	if (err || !v)
		return err;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return fail(r, key, "is not a number");
	d = json_object_get_double(v);
	if (!isfinite(d))
		return fail(r, key, "is not finite");
	if (d < min || d > max)
		return fail(r, key, "is out of range");
	if (whole && d != floor(d))
		return fail(r, key, "is not a whole number");
	*out = d;
	return 0;
}

static int get_id(struct reader *r, struct json_object *o, const char *key, bool required,
		  double min, long long *out)
{
	double d = (double)*out;
	int err = get_num(r, o, key, required, min, MAX_ID, true, &d);

	*out = (long long)d;
	return err;
}

/* A cleaned copy of the first max bytes of a JSON string. */
static char *clean(struct json_object *s, size_t max)
{
	size_t len = (size_t)json_object_get_string_len(s);

	return utf8_clean(json_object_get_string(s), len < max ? len : max, UTF8_CLEAN_CONTROLS);
}

/* A string, cleaned and cut to max bytes; absent (or null when nullable):
 * *out stays NULL. */
static int get_str(struct reader *r, struct json_object *o, const char *key, bool required,
		   bool nullable, size_t max, char **out)
{
	struct json_object *v;
	int err = field(r, o, key, required, nullable, &v);

	if (err || !v)
		return err;
	if (!json_object_is_type(v, json_type_string))
		return fail(r, key, nullable ? "is not a string or null" : "is not a string");
	*out = clean(v, max);
	return *out ? 0 : -ENOMEM;
}

static int get_bool(struct reader *r, struct json_object *o, const char *key, bool required,
		    bool *out)
{
	struct json_object *v;
	int err = field(r, o, key, required, false, &v);

	if (err || !v)
		return err;
	if (!json_object_is_type(v, json_type_boolean))
		return fail(r, key, "is not true or false");
	*out = json_object_get_boolean(v);
	return 0;
}

bool host_index_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > 255 || strlen(s) != len || s[0] == '.' || strstr(s, ".."))
		return false;
	for (i = 0; i < len; i++) {
		if (s[i] == '/')
			return false;
	}
	return utf8_is_clean(s, UTF8_CLEAN_CONTROLS);
}

/* The command line joined by spaces, at most MAX_COMMAND bytes. */
static int get_command(struct reader *r, struct json_object *o, struct host_proc *p)
{
	struct json_object *a;
	char buf[MAX_COMMAND + 1];
	size_t i, n, len = 0;
	int err = field(r, o, "cmdline", false, false, &a);

	if (err)
		return err;
	if (a && !json_object_is_type(a, json_type_array))
		return fail(r, "cmdline", "is not an array");
	n = a ? json_object_array_length(a) : 0;
	if (n > MAX_ARGS)
		return fail(r, "cmdline", "has too many elements");
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(a, i);
		size_t sl;

		if (!json_object_is_type(s, json_type_string))
			return fail(r, "cmdline", "has an element that is not a string");
		sl = (size_t)json_object_get_string_len(s);
		if (len && len < MAX_COMMAND)
			buf[len++] = ' ';
		if (sl > MAX_COMMAND - len)
			sl = MAX_COMMAND - len;
		memcpy(buf + len, json_object_get_string(s), sl);
		len += sl;
	}
	if (!len) {
		p->command = strdup(p->comm);
		return p->command ? 0 : -ENOMEM;
	}
	p->command = utf8_clean(buf, len, UTF8_CLEAN_CONTROLS);
	return p->command ? 0 : -ENOMEM;
}

/* The profile's file name: kept only when it is a safe name in DIR. */
static int get_profile(struct reader *r, struct json_object *o, struct host_proc *p)
{
	struct json_object *v;
	int err = field(r, o, "profile", false, true, &v);

	if (err || !v)
		return err;
	if (!json_object_is_type(v, json_type_string))
		return fail(r, "profile", "is not a string or null");
	if (!host_index_name_ok(json_object_get_string(v), (size_t)json_object_get_string_len(v))) {
		p->profile_refused = true;
		return 0;
	}
	p->profile = strdup(json_object_get_string(v));
	return p->profile ? 0 : -ENOMEM;
}

static int read_proc(struct reader *r, struct json_object *o, struct host_proc *p)
{
	struct json_object *v;
	double ns = -1;
	int err;

	p->ppid = p->uid = -1;
	p->peak_rss_mb = -1;
	p->await_s = -1;
	if (!json_object_is_type(o, json_type_object))
		return fail(r, "", "is not an object");
	err = get_id(r, o, "pid", true, 1, &p->pid);
	/* null: not known (a fork child gone before it was looked at). */
	if (!err && !(json_object_object_get_ex(o, "ns_pid", &v) && !v))
		err = get_num(r, o, "ns_pid", false, 1, MAX_ID, true, &ns);
	err = err ?: get_id(r, o, "ppid", false, 0, &p->ppid);
	err = err ?: get_id(r, o, "uid", false, 0, &p->uid);
	err = err ?: get_str(r, o, "comm", true, false, MAX_COMM, &p->comm);
	err = err ?: get_command(r, o, p);
	err = err ?: get_str(r, o, "python", false, true, MAX_VERSION, &p->python);
	err = err ?: get_profile(r, o, p);
	err = err ?: get_str(r, o, "not_profiled", false, true, MAX_REASON, &p->not_profiled);
	err = err ?: get_num(r, o, "started_s", false, 0, 1e12, false, &p->started_s);
	err = err ?: get_bool(r, o, "exited", !p->not_profiled, &p->exited);
	if (err)
		return err;
	p->ns_pid = ns > 0 ? (long long)ns : p->pid;
	if (p->exited) {
		double code = 0;

		p->has_exit_code = json_object_object_get_ex(o, "exit_code", NULL);
		err = get_num(r, o, "exit_code", false, -255, 255, true, &code);
		p->exit_code = (long long)code;
	}
	/* A process not profiled may leave out what was not measured. */
	err = err ?: get_num(r, o, "cpu_s", !p->not_profiled, 0, 1e12, false, &p->cpu_s);
	err = err ?: get_num(r, o, "python_s", !p->not_profiled, 0, 1e12, false, &p->python_s);
	err = err ?: get_num(r, o, "native_s", !p->not_profiled, 0, 1e12, false, &p->native_s);
	err = err ?: get_num(r, o, "system_s", !p->not_profiled, 0, 1e12, false, &p->system_s);
	err = err ?: get_num(r, o, "samples", !p->not_profiled, 0, 1e15, true, &p->samples);
	/* null: unknown, as when absent */
	if (!err && json_object_object_get_ex(o, "peak_rss_mb", &v) && v)
		err = get_num(r, o, "peak_rss_mb", false, 0, 1e12, false, &p->peak_rss_mb);
	if (!err && json_object_object_get_ex(o, "await_s", &v) && v)
		err = get_num(r, o, "await_s", false, 0, 1e12, false, &p->await_s);
	return err;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct host_proc *x = a, *y = b;
	bool xp = !x->not_profiled, yp = !y->not_profiled;

	if (xp != yp)
		return yp - xp;
	if (xp && x->cpu_s != y->cpu_s)
		return (x->cpu_s < y->cpu_s) - (x->cpu_s > y->cpu_s);
	return 0;
}

/* A stable sort: qsort is not, so the index's order breaks ties. */
static void sort_procs(struct host_proc *v, size_t n)
{
	size_t i, j;

	/* Insertion sort over an index that is nearly ranked already. */
	for (i = 1; i < n; i++) {
		struct host_proc t = v[i];

		for (j = i; j > 0 && proc_cmp(&v[j - 1], &t) > 0; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

static int read_procs(struct reader *r, struct json_object *doc, struct host_index *hi)
{
	struct json_object *a;
	size_t i, n;
	int err = field(r, doc, "processes", true, false, &a);

	if (err)
		return err;
	if (!json_object_is_type(a, json_type_array))
		return fail(r, "processes", "is not an array");
	n = json_object_array_length(a);
	if (n > HOST_INDEX_MAX_PROCS)
		return fail(r, "processes", "has more entries than this reader takes (100000)");
	hi->procs = calloc(n ? n : 1, sizeof(*hi->procs));
	if (!hi->procs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(a, i);

		snprintf(r->at, sizeof(r->at), "processes[%zu].", i);
		hi->nprocs = i + 1;
		err = read_proc(r, o, &hi->procs[i]);
		if (err)
			return err;
		hi->nprofiled += !hi->procs[i].not_profiled;
	}
	r->at[0] = '\0';
	sort_procs(hi->procs, hi->nprocs);
	return 0;
}

static int read_counts(struct reader *r, struct json_object *doc, struct host_index *hi)
{
	struct json_object *o;
	size_t n, k = 0;
	int err = field(r, doc, "not_profiled", false, false, &o);

	if (err || !o)
		return err;
	if (!json_object_is_type(o, json_type_object))
		return fail(r, "not_profiled", "is not an object");
	n = (size_t)json_object_object_length(o);
	if (n > HOST_INDEX_MAX_REASONS)
		return fail(r, "not_profiled", "has too many reasons");
	hi->counts = calloc(n ? n : 1, sizeof(*hi->counts));
	if (!hi->counts)
		return -ENOMEM;
	snprintf(r->at, sizeof(r->at), "not_profiled.");
	json_object_object_foreach (o, key, v) {
		(void)v;
		err = get_num(r, o, key, true, 0, 1e12, true, &hi->counts[k].count);
		if (err)
			return err;
		hi->counts[k].reason =
			utf8_clean(key, strnlen(key, MAX_REASON), UTF8_CLEAN_CONTROLS);
		if (!hi->counts[k].reason)
			return -ENOMEM;
		hi->ncounts = ++k;
	}
	r->at[0] = '\0';
	return 0;
}

static int read_memory(struct reader *r, struct json_object *doc, struct host_index *hi)
{
	struct host_memory *m = &hi->memory;
	struct json_object *o, *libc;
	int err = field(r, doc, "memory", false, true, &o);

	if (err || !o)
		return err;
	if (!json_object_is_type(o, json_type_object))
		return fail(r, "memory", "is not an object");
	snprintf(r->at, sizeof(r->at), "memory.");
	err = get_num(r, o, "hits", true, 0, 1e18, true, &m->hits);
	err = err ?: get_num(r, o, "hits_per_s", false, 0, 1e12, false, &m->hits_per_s);
	err = err ?: get_num(r, o, "ns_per_hit_measured", false, 0, 1e9, false, &m->ns_per_hit);
	err = err
		      ?: get_num(r, o, "estimated_cost_cpu_percent", false, 0, 1e9, false,
				 &m->cost_percent);
	err = err ?: field(r, o, "libc", false, false, &libc);
	if (!err && libc && !json_object_is_type(libc, json_type_object))
		err = fail(r, "libc", "is not an object");
	if (!err && libc) {
		snprintf(r->at, sizeof(r->at), "memory.libc.");
		err = get_num(r, libc, "processes_probed", false, 0, 1e12, true, &m->libc_probed);
		err = err
			      ?: get_num(r, libc, "processes_not_probed", false, 0, 1e12, true,
					 &m->libc_not_probed);
	}
	r->at[0] = '\0';
	m->on = !err;
	return err;
}

static int read_warnings(struct reader *r, struct json_object *doc, struct host_index *hi)
{
	struct json_object *a;
	size_t i, n;
	int err = field(r, doc, "warnings", false, false, &a);

	if (err || !a)
		return err;
	if (!json_object_is_type(a, json_type_array))
		return fail(r, "warnings", "is not an array");
	n = json_object_array_length(a);
	if (n > HOST_INDEX_MAX_WARNINGS)
		return fail(r, "warnings", "has more entries than this reader takes (1000)");
	hi->warnings = calloc(n ? n : 1, sizeof(*hi->warnings));
	if (!hi->warnings)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(a, i);

		if (!json_object_is_type(s, json_type_string))
			return fail(r, "warnings", "has an element that is not a string");
		hi->warnings[i] = clean(s, MAX_WARNING);
		if (!hi->warnings[i])
			return -ENOMEM;
		hi->nwarnings = i + 1;
	}
	return 0;
}

/* The format version: a reader of version 1 reads 1.x, and refuses
 * another major version with what to do. */
static int read_version(struct reader *r, struct json_object *doc, struct host_index *hi)
{
	double v = 0;
	int err = get_num(r, doc, "scalene_bpf_index", true, 0, 1e9, false, &v);

	if (err)
		return err;
	if (floor(v) != HOST_INDEX_VERSION) {
		fprintf(r->err, "scalene-bpf: ");
		vj_put_safe(r->err, r->name, 400);
		fprintf(r->err,
			": index format version %.0f (scalene_bpf_index); this scalene-bpf "
			"reads version %d: view it with the scalene-bpf that wrote it\n",
			floor(v), HOST_INDEX_VERSION);
		return -EINVAL;
	}
	hi->version = HOST_INDEX_VERSION;
	return 0;
}

static int read_index(struct reader *r, struct json_object *doc, struct host_index *hi)
{
	struct json_object *filters;
	int err;

	if (!json_object_is_type(doc, json_type_object))
		return fail(r, "the document", "is not an object");
	err = read_version(r, doc, hi);
	err = err ?: get_str(r, doc, "host", true, false, MAX_NAME, &hi->host);
	err = err ?: get_str(r, doc, "kernel", true, false, MAX_NAME, &hi->kernel);
	err = err ?: get_num(r, doc, "start_time_absolute", false, 0, 1e12, false, &hi->start_time);
	err = err ?: get_num(r, doc, "elapsed_time_sec", true, 0, 1e12, false, &hi->elapsed_s);
	err = err ?: get_num(r, doc, "sampling_rate_hz", true, 0, 1e9, false, &hi->rate_hz);
	err = err ?: field(r, doc, "filters", false, false, &filters);
	if (!err && filters && !json_object_is_type(filters, json_type_object))
		err = fail(r, "filters", "is not an object");
	err = err ?: read_procs(r, doc, hi);
	err = err ?: read_counts(r, doc, hi);
	err = err ?: read_memory(r, doc, hi);
	return err ?: read_warnings(r, doc, hi);
}

struct host_index *host_index__parse(const char *data, size_t len, const char *name, FILE *err)
{
	struct reader r = { .name = name, .err = err };
	struct host_index *hi;
	struct json_object *doc;
	int ret;

	if (len > HOST_INDEX_MAX_BYTES) {
		fprintf(err, "scalene-bpf: ");
		vj_put_safe(err, name, 400);
		fprintf(err, " is too large to be an index\n");
		return NULL;
	}
	doc = view_parse(data, len, name, err);
	if (!doc)
		return NULL;
	hi = calloc(1, sizeof(*hi));
	ret = hi ? read_index(&r, doc, hi) : -ENOMEM;
	json_object_put(doc);
	if (ret == -ENOMEM)
		fprintf(err, "scalene-bpf: out of memory reading the index\n");
	if (ret) {
		host_index__free(hi);
		return NULL;
	}
	return hi;
}

void host_index__free(struct host_index *hi)
{
	size_t i;

	if (!hi)
		return;
	for (i = 0; i < hi->nprocs; i++) {
		struct host_proc *p = &hi->procs[i];

		free(p->comm);
		free(p->command);
		free(p->python);
		free(p->profile);
		free(p->not_profiled);
		free(p->problem);
		free(p->page);
	}
	for (i = 0; i < hi->ncounts; i++)
		free(hi->counts[i].reason);
	for (i = 0; i < hi->nwarnings; i++)
		free(hi->warnings[i]);
	free(hi->procs);
	free(hi->counts);
	free(hi->warnings);
	free(hi->host);
	free(hi->kernel);
	free(hi);
}

double host_index_not_profiled(const struct host_index *hi)
{
	double n = 0;
	size_t i;

	for (i = 0; i < hi->ncounts; i++)
		n += hi->counts[i].count;
	return n;
}

double host_index_cpu_s(const struct host_index *hi)
{
	double s = 0;
	size_t i;

	for (i = 0; i < hi->nprocs; i++)
		s += hi->procs[i].not_profiled ? 0 : hi->procs[i].cpu_s;
	return s;
}

void host_index_memory_text(const struct host_index *hi, char *buf, size_t len)
{
	const struct host_memory *m = &hi->memory;
	int n;

	if (!len)
		return;
	buf[0] = '\0';
	if (!m->on)
		return;
	n = snprintf(buf, len, "allocation uprobes fired %.0f times (%.0f/s)", m->hits,
		     m->hits_per_s);
	if (n >= 0 && (size_t)n < len && m->ns_per_hit > 0)
		n += snprintf(buf + n, len - n, ", %.2f us a hit: about %.1f%% of one CPU",
			      m->ns_per_hit / 1000, m->cost_percent);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, "; libc probed in %.0f processes", m->libc_probed);
	if (n >= 0 && (size_t)n < len && m->libc_not_probed > 0)
		snprintf(buf + n, len - n, ", %.0f not (their native allocations are not counted)",
			 m->libc_not_probed);
}
