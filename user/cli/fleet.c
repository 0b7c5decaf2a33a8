// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a continuous run makes of each profile it writes (fleet.h): its
 * pprof export, and what goes to each backend's delivery queue (the
 * sampling loop never waits for the network).  The profile's stacks are
 * read once for all of them.
 * - OTLP: one ExportProfilesServiceRequest an interval, a resource per
 *   process, with the host's name, the process's command and where it runs
 *   (container, Kubernetes pod) beside what the profile says of itself.
 * - Pyroscope: its ingest API, a request per process and per kind of value
 *   (CPU, memory, GPU: Pyroscope names a profile after its kind, from its
 *   sample types' names), the pprof export as the body, the application
 *   name and the labels in the query.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <json-c/json.h>

#include "base/log.h"
#include "cli/fleet.h"
#include "deliver/http.h"
#include "target/labels.h"
#include "view/view.h"
#include "view/viewutil.h"

/* The path of the profiles signal under an endpoint given without one. */
#define OTLP_PROFILES_PATH "/v1development/profiles"
/* Pyroscope's ingest path under its server's URL. */
#define PYROSCOPE_INGEST_PATH "/ingest"
/* How long the end of a run waits for what is queued to be sent. */
#define FINISH_WAIT_S 10.0
/* A Pyroscope request's URL: the server's and the query (the name with its
 * labels, escaped, is the most of it). */
#define PYRO_URL_MAX 8192

struct sink {
	const char *what; /* "OTLP", "Pyroscope": for messages */
	struct deliver *d;
	char url[2048];
	uint64_t intervals, empty_intervals, build_failed;
	bool finished;
	struct deliver_stats final;
};

struct fleet {
	struct sink otlp, pyro;
	/* The interval's OTLP request, built as its profiles come; the first
	 * error that spoils it; whether it has a Pyroscope request yet. */
	struct otlp_batch *batch;
	int batch_err;
	bool pyro_any;
	const char *pyro_app; /* NULL: each process's own (pyroscope_app) */
	char host[65];
	bool ending;
};

/* The endpoint as given when it has a path, else with the signal's path
 * (an OpenTelemetry SDK's rule for OTEL_EXPORTER_OTLP_ENDPOINT). */
static int signal_url(const char *endpoint, char *buf, size_t n)
{
	const char *host = strstr(endpoint, "://");
	const char *path = host ? strchr(host + 3, '/') : NULL;
	int len;

	if (path && path[1])
		len = snprintf(buf, n, "%s", endpoint);
	else
		len = snprintf(buf, n, "%.*s%s",
			       path ? (int)(path - endpoint) : (int)strlen(endpoint), endpoint,
			       OTLP_PROFILES_PATH);
	return len > 0 && (size_t)len < n ? 0 : -ENAMETOOLONG;
}

/* Pyroscope's ingest URL under the server's (which may have a path of its
 * own, behind a proxy). */
static int ingest_url(const char *server, char *buf, size_t n)
{
	size_t len = strlen(server);
	int w;

	while (len && server[len - 1] == '/')
		len--;
	w = snprintf(buf, n, "%.*s%s", (int)len, server, PYROSCOPE_INGEST_PATH);
	return w > 0 && (size_t)w < n ? 0 : -ENAMETOOLONG;
}

static int sink_start(struct sink *s, const char *what, const char *content_type,
		      const struct options *o)
{
	struct deliver_opts d = {
		.url = s->url,
		.content_type = content_type,
		.headers = o->headers,
		.nheaders = o->nheaders,
		.max_queue_bytes = (size_t)((o->queue_mb ? o->queue_mb : DEFAULT_QUEUE_MB) * 1e6),
		.timeout_s = 10,
		.max_attempts = 5,
		.backoff_s = 1,
		.max_backoff_s = 30,
	};

	s->what = what;
	s->d = deliver__new(&d);
	if (!s->d)
		return -ENOENT;
	pr_info("sending each interval's profiles to %s (%s)\n", s->url, what);
	return 0;
}

struct fleet *fleet__new(const struct options *o)
{
	struct fleet *f = calloc(1, sizeof(*f));
	struct utsname u;

	if (!f) {
		pr_warn("out of memory\n");
		return NULL;
	}
	snprintf(f->host, sizeof(f->host), "%s", uname(&u) ? "" : u.nodename);
	f->pyro_app = o->pyroscope_app;
	if (o->otlp_endpoint) {
		if (signal_url(o->otlp_endpoint, f->otlp.url, sizeof(f->otlp.url))) {
			pr_warn("--otlp-endpoint: the URL is too long\n");
			goto fail;
		}
		if (sink_start(&f->otlp, "OTLP", "application/x-protobuf", o))
			goto fail;
	}
	if (o->pyroscope_url) {
		if (ingest_url(o->pyroscope_url, f->pyro.url, sizeof(f->pyro.url))) {
			pr_warn("--pyroscope: the URL is too long\n");
			goto fail;
		}
		/* The pprof export, gzipped: Pyroscope reads a body that is not
		 * a multipart form as the profile itself. */
		if (sink_start(&f->pyro, "Pyroscope", "application/octet-stream", o))
			goto fail;
	}
	return f;
fail:
	fleet__free(f);
	return NULL;
}

/* --- OTLP --- */

/* Adds one process's profile of the interval to the interval's request. */
static int otlp_piece(struct fleet *f, struct otlp_batch *b, const struct host_piece *pc,
		      struct export_src *src)
{
	const struct proc_labels *l = pc->labels;
	struct otlp_attr extra[] = {
		{ "host.name", f->host, 0 },
		{ "process.executable.name", pc->comm, 0 },
		{ "container.id", l ? l->container_id : "", 0 },
		{ "k8s.pod.uid", l ? l->pod_uid : "", 0 },
		{ "k8s.namespace.name", l ? l->k8s_namespace : "", 0 },
		{ "k8s.pod.name", l ? l->k8s_pod_name : "", 0 },
	};
	int k, err;

	/* An attribute without a value is left out. */
	for (k = 0; k < (int)(sizeof(extra) / sizeof(extra[0])); k++)
		if (!extra[k].str || !extra[k].str[0])
			extra[k].key = NULL;
	err = otlp_batch_add(b, src, extra, (int)(sizeof(extra) / sizeof(extra[0])));
	return err == -EINVAL ? 0 : err; /* no stacks: await time only */
}

/* The interval's request, once every profile is in it. */
static void otlp_send(struct fleet *f, struct otlp_batch *b, int err)
{
	struct sink *s = &f->otlp;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (!err && !otlp_batch_resources(b)) {
		s->empty_intervals++;
		return;
	}
	if (!err)
		err = otlp_batch_pack(b, &buf, &len);
	if (err) {
		s->build_failed++;
		pr_warn("OTLP: interval %llu is not sent: %s\n", (unsigned long long)s->intervals,
			strerror(-err));
		return;
	}
	deliver__post(s->d, buf, len);
}

/* --- Pyroscope --- */

bool pyroscope_app_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.';
}

/* An application name as Pyroscope takes it, anything else made '_'. */
static void app_chars(char *s)
{
	for (; *s; s++)
		if (!pyroscope_app_char(*s))
			*s = '_';
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The interpreter's options that take the next argument as their value. */
static bool takes_value(const char *opt)
{
	return !strcmp(opt, "-X") || !strcmp(opt, "-W") || !strcmp(opt, "-Q") ||
	       !strcmp(opt, "--check-hash-based-pycs");
}

/*
 * The application a process runs, named from its command line: the
 * module of `python -m MODULE`, the script's name without .py (its
 * folder's for a __main__.py; a console script such as gunicorn is a
 * script), the process's command for `python -c` or when nothing is named.
 */
void pyroscope_app(const char *const *argv, int argc, const char *comm, char *out, size_t n)
{
	const char *name = NULL;
	size_t len;
	int i;

	for (i = 1; i < argc && !name; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-m") && i + 1 < argc)
			name = argv[i + 1];
		else if (!strcmp(a, "-c") || !strcmp(a, "-"))
			break;
		else if (takes_value(a))
			i++;
		else if (a[0] != '-')
			name = a;
	}
	if (!name || !name[0]) {
		snprintf(out, n, "%s", comm && comm[0] ? comm : "python");
		app_chars(out);
		return;
	}
	if (!strcmp(base_name(name), "__main__.py")) {
		const char *end = name + strlen(name) - strlen("__main__.py");
		const char *start = end;

		/* The folder's name: what `python DIR` ran. */
		while (end > name && end[-1] == '/')
			end--;
		start = end;
		while (start > name && start[-1] != '/')
			start--;
		snprintf(out, n, "%.*s", (int)(end - start), start);
	} else {
		snprintf(out, n, "%s", base_name(name));
		len = strlen(out);
		if (len > 3 && !strcmp(out + len - 3, ".py"))
			out[len - 3] = '\0';
	}
	if (!out[0])
		snprintf(out, n, "%s", comm && comm[0] ? comm : "python");
	app_chars(out);
}

/* Appends "key=value" to the name's label set, the value without the
 * characters that end one there (',', '}') or start one ('{', '='). */
static void add_label(char *buf, size_t n, bool *first, const char *key, const char *value)
{
	size_t len = strlen(buf);
	char *p;

	if (!value || !value[0] || len + strlen(key) + 3 >= n)
		return;
	snprintf(buf + len, n - len, "%s%s=%s", *first ? "" : ",", key, value);
	for (p = buf + len + (*first ? 0 : 1) + strlen(key) + 1; *p; p++)
		if (*p == ',' || *p == '}' || *p == '{' || *p == '=' || (unsigned char)*p < 0x20)
			*p = '_';
	*first = false;
}

/* Percent-encodes s (all but RFC 3986's unreserved characters) onto buf. */
static int url_escape(const char *s, char *buf, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = strlen(buf);

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (k + 4 >= n)
			return -ENAMETOOLONG;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			buf[k++] = (char)c;
		} else {
			buf[k++] = '%';
			buf[k++] = hex[c >> 4];
			buf[k++] = hex[c & 15];
		}
	}
	buf[k] = '\0';
	return 0;
}

/* The requests of one process's profile: one per kind of value it has. */
static void pyro_piece(struct fleet *f, const struct host_piece *pc, struct json_object *doc,
		       struct export_src *src, bool *any)
{
	static const unsigned kinds[] = { EXPORT_KIND_CPU, EXPORT_KIND_MEMORY, EXPORT_KIND_GPU };
	struct sink *s = &f->pyro;
	const struct proc_labels *l = pc->labels;
	struct json_object *facts = vj_object(doc, "scalene_bpf");
	struct json_object *interps = vj_array(facts, "interpreters");
	char app[128], name[2048], pid[16], *url = NULL;
	double start = vj_num(doc, "start_time_absolute");
	double elapsed = vj_num(doc, "elapsed_time_sec");
	double rate = vj_num(facts, "sampling_rate_hz");
	const char *python = NULL;
	bool first = true;
	size_t k;
	int err = 0;

	if (interps && json_object_array_length(interps) > 0)
		python = vj_str(json_object_array_get_idx(interps, 0), "version");
	if (f->pyro_app)
		snprintf(app, sizeof(app), "%s", f->pyro_app);
	else
		pyroscope_app(pc->argv, pc->argc, pc->comm, app, sizeof(app));
	snprintf(pid, sizeof(pid), "%d", pc->pid);
	snprintf(name, sizeof(name), "%s{", app);
	add_label(name, sizeof(name), &first, "host", f->host);
	add_label(name, sizeof(name), &first, "pid", pid);
	add_label(name, sizeof(name), &first, "executable", pc->comm);
	add_label(name, sizeof(name), &first, "python_version", python);
	add_label(name, sizeof(name), &first, "container_id", l ? l->container_id : NULL);
	add_label(name, sizeof(name), &first, "k8s_pod_uid", l ? l->pod_uid : NULL);
	add_label(name, sizeof(name), &first, "k8s_namespace", l ? l->k8s_namespace : NULL);
	add_label(name, sizeof(name), &first, "k8s_pod_name", l ? l->k8s_pod_name : NULL);
	snprintf(name + strlen(name), sizeof(name) - strlen(name), "}");

	url = malloc(PYRO_URL_MAX);
	if (!url) {
		s->build_failed++;
		return;
	}
	snprintf(url, PYRO_URL_MAX, "%s?name=", s->url);
	err = url_escape(name, url, PYRO_URL_MAX);
	if (!err) {
		size_t len = strlen(url);
		int w = snprintf(url + len, PYRO_URL_MAX - len,
				 "&from=%lld&until=%lld&format=pprof&sampleRate=%ld"
				 "&spyName=scalene-bpf",
				 (long long)floor(start), (long long)ceil(start + elapsed),
				 lround(rate > 0 ? rate : 100));

		if (w < 0 || (size_t)w >= PYRO_URL_MAX - len)
			err = -ENAMETOOLONG;
	}
	for (k = 0; !err && k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		uint8_t *buf = NULL;
		size_t len = 0;
		int r = export_pprof_kinds(src, kinds[k], &buf, &len);

		if (r == -ENODATA)
			continue;
		if (r) {
			err = r;
			break;
		}
		deliver__post_to(s->d, url, buf, len);
		*any = true;
	}
	if (err) {
		s->build_failed++;
		pr_warn("Pyroscope: the profile of process %d for interval %llu is not sent: %s\n",
			pc->pid, (unsigned long long)s->intervals + 1, strerror(-err));
	}
	free(url);
}

int fleet__profile(void *ctx, const struct host_piece *pc, struct json_object *doc, uint8_t **pprof,
		   size_t *len)
{
	struct fleet *f = ctx;
	struct export_src *src;
	int err = export_src_read(doc, &src);

	*pprof = NULL;
	*len = 0;
	if (err)
		return err;
	err = export_pprof_kinds(src, EXPORT_KIND_ALL, pprof, len);
	if (err == -ENODATA)
		err = 0; /* no stacks (await time only): no pprof */
	if (f && f->otlp.d && !f->batch_err) {
		if (!f->batch)
			f->batch = otlp_batch_new();
		f->batch_err = f->batch ? otlp_piece(f, f->batch, pc, src) : -ENOMEM;
	}
	if (f && f->pyro.d)
		pyro_piece(f, pc, doc, src, &f->pyro_any);
	export_src_free(src);
	return err;
}

void fleet__interval(void *ctx)
{
	struct fleet *f = ctx;

	if (f->otlp.d) {
		f->otlp.intervals++;
		if (!f->batch && !f->batch_err)
			f->batch = otlp_batch_new();
		otlp_send(f, f->batch, f->batch ? f->batch_err : -ENOMEM);
	}
	otlp_batch_free(f->batch);
	f->batch = NULL;
	f->batch_err = 0;
	if (f->pyro.d) {
		f->pyro.intervals++;
		if (!f->pyro_any)
			f->pyro.empty_intervals++;
	}
	f->pyro_any = false;
}

void fleet__ending(struct fleet *f)
{
	f->ending = true;
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)v));
}

/* A sink's state: what was made, sent and dropped. */
static struct json_object *sink_json(struct fleet *f, struct sink *s, const char *requests_key)
{
	struct deliver_stats st;
	struct json_object *o;

	if (f->ending && !s->finished) {
		deliver__finish(s->d, FINISH_WAIT_S, &s->final);
		s->d = NULL;
		s->finished = true;
	}
	if (s->finished)
		st = s->final;
	else
		deliver__stats(s->d, &st);
	o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "endpoint", json_object_new_string(s->url));
	add_u64(o, "intervals", s->intervals);
	add_u64(o, "intervals_without_stacks", s->empty_intervals);
	add_u64(o, requests_key, s->build_failed);
	add_u64(o, "requests", st.posted);
	add_u64(o, "sent", st.sent);
	add_u64(o, "bytes_sent", st.bytes_sent);
	add_u64(o, "failed_attempts", st.attempts_failed);
	add_u64(o, "dropped_queue_full", st.dropped_queue_full);
	add_u64(o, "dropped_after_retries", st.dropped_gave_up);
	add_u64(o, "dropped_rejected", st.dropped_rejected);
	add_u64(o, "dropped_at_exit", st.dropped_at_exit);
	add_u64(o, "queued", st.queued);
	json_object_object_add(o, "last_error",
			       st.last_error[0] ? json_object_new_string(st.last_error) : NULL);
	return o;
}

struct json_object *fleet__json(void *ctx)
{
	struct fleet *f = ctx;
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	if (f->otlp.d || f->otlp.finished)
		json_object_object_add(o, "otlp", sink_json(f, &f->otlp, "requests_not_built"));
	if (f->pyro.d || f->pyro.finished)
		json_object_object_add(o, "pyroscope",
				       sink_json(f, &f->pyro, "profiles_not_built"));
	return o;
}

static void sink_free(struct sink *s)
{
	struct deliver_stats *st = &s->final;
	uint64_t dropped;

	if (!s->d && !s->finished)
		return;
	if (!s->finished)
		deliver__finish(s->d, FINISH_WAIT_S, st);
	dropped = st->dropped_queue_full + st->dropped_gave_up + st->dropped_rejected +
		  st->dropped_at_exit;
	if (dropped || s->build_failed)
		pr_warn("%s: %llu of %llu requests sent to %s; %llu dropped (queue full %llu, "
			"after retries %llu, rejected %llu, at exit %llu)%s%s\n",
			s->what, (unsigned long long)st->sent, (unsigned long long)st->posted,
			s->url, (unsigned long long)dropped,
			(unsigned long long)st->dropped_queue_full,
			(unsigned long long)st->dropped_gave_up,
			(unsigned long long)st->dropped_rejected,
			(unsigned long long)st->dropped_at_exit,
			st->last_error[0] ? "; last error: " : "", st->last_error);
	else
		pr_info("%s: %llu of %llu requests sent to %s\n", s->what,
			(unsigned long long)st->sent, (unsigned long long)st->posted, s->url);
}

void fleet__free(struct fleet *f)
{
	if (!f)
		return;
	otlp_batch_free(f->batch);
	sink_free(&f->otlp);
	sink_free(&f->pyro);
	free(f);
}
