// SPDX-License-Identifier: BSD-2-Clause
/*
 * The OTLP sink of a continuous run (fleet.h).  Each interval's profiles are
 * read back from their files, become one ExportProfilesServiceRequest (a
 * resource per process, with the host's name, the process's command and
 * where it runs (container, Kubernetes pod) beside what the profile says
 * of itself) and go to the delivery's queue:
 * the sampling loop never waits for the network.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <json-c/json.h>

#include "base/log.h"
#include "cli/fleet.h"
#include "deliver/http.h"
#include "target/labels.h"
#include "view/view.h"

/* The path of the profiles signal under an endpoint given without one. */
#define OTLP_PROFILES_PATH "/v1development/profiles"
/* How long the end of a run waits for what is queued to be sent. */
#define FINISH_WAIT_S 10.0

struct fleet {
	struct deliver *d;
	char url[2048];
	char host[65];
	uint64_t intervals, empty_intervals, build_failed;
	bool ending, finished;
	struct deliver_stats final;
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

struct fleet *fleet__new(const struct options *o)
{
	struct fleet *f = calloc(1, sizeof(*f));
	struct deliver_opts d = {
		.content_type = "application/x-protobuf",
		.headers = o->headers,
		.nheaders = o->nheaders,
		.max_queue_bytes = (size_t)((o->queue_mb ? o->queue_mb : DEFAULT_QUEUE_MB) * 1e6),
		.timeout_s = 10,
		.max_attempts = 5,
		.backoff_s = 1,
		.max_backoff_s = 30,
	};
	struct utsname u;

	if (!f) {
		pr_warn("out of memory\n");
		return NULL;
	}
	if (signal_url(o->otlp_endpoint, f->url, sizeof(f->url))) {
		pr_warn("--otlp-endpoint: the URL is too long\n");
		free(f);
		return NULL;
	}
	snprintf(f->host, sizeof(f->host), "%s", uname(&u) ? "" : u.nodename);
	d.url = f->url;
	f->d = deliver__new(&d);
	if (!f->d) {
		free(f);
		return NULL;
	}
	pr_info("sending each interval's profiles to %s (OTLP)\n", f->url);
	return f;
}

void fleet__interval(void *ctx, const struct host_piece *pieces, int n)
{
	struct fleet *f = ctx;
	struct otlp_batch *b = otlp_batch_new();
	uint8_t *buf = NULL;
	size_t len = 0;
	int i, err = b ? 0 : -ENOMEM;

	f->intervals++;
	for (i = 0; !err && i < n; i++) {
		struct json_object *doc = json_object_from_file(pieces[i].json);
		const struct proc_labels *l = pieces[i].labels;
		struct otlp_attr extra[] = {
			{ "host.name", f->host, 0 },
			{ "process.executable.name", pieces[i].comm, 0 },
			{ "container.id", l ? l->container_id : "", 0 },
			{ "k8s.pod.uid", l ? l->pod_uid : "", 0 },
			{ "k8s.namespace.name", l ? l->k8s_namespace : "", 0 },
			{ "k8s.pod.name", l ? l->k8s_pod_name : "", 0 },
		};
		int k;

		if (!doc) {
			pr_warn("cannot read back %s to send it\n", pieces[i].json);
			continue;
		}
		/* An attribute without a value is left out. */
		for (k = 0; k < (int)(sizeof(extra) / sizeof(extra[0])); k++)
			if (!extra[k].str || !extra[k].str[0])
				extra[k].key = NULL;
		err = otlp_batch_add(b, doc, extra, (int)(sizeof(extra) / sizeof(extra[0])));
		if (err == -EINVAL) /* no stacks: await time only */
			err = 0;
		json_object_put(doc);
	}
	if (!err && !otlp_batch_resources(b)) {
		f->empty_intervals++;
		goto out;
	}
	if (!err)
		err = otlp_batch_pack(b, &buf, &len);
	if (err) {
		f->build_failed++;
		pr_warn("interval %llu is not sent: %s\n", (unsigned long long)f->intervals,
			strerror(-err));
		goto out;
	}
	deliver__post(f->d, buf, len);
out:
	otlp_batch_free(b);
}

void fleet__ending(struct fleet *f)
{
	f->ending = true;
}

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_int64((int64_t)v));
}

struct json_object *fleet__json(void *ctx)
{
	struct fleet *f = ctx;
	struct deliver_stats s;
	struct json_object *o = json_object_new_object();

	if (f->ending && !f->finished) {
		deliver__finish(f->d, FINISH_WAIT_S, &f->final);
		f->d = NULL;
		f->finished = true;
	}
	if (f->finished)
		s = f->final;
	else
		deliver__stats(f->d, &s);
	if (!o)
		return NULL;
	json_object_object_add(o, "endpoint", json_object_new_string(f->url));
	add_u64(o, "intervals", f->intervals);
	add_u64(o, "intervals_without_stacks", f->empty_intervals);
	add_u64(o, "requests_not_built", f->build_failed);
	add_u64(o, "requests", s.posted);
	add_u64(o, "sent", s.sent);
	add_u64(o, "bytes_sent", s.bytes_sent);
	add_u64(o, "failed_attempts", s.attempts_failed);
	add_u64(o, "dropped_queue_full", s.dropped_queue_full);
	add_u64(o, "dropped_after_retries", s.dropped_gave_up);
	add_u64(o, "dropped_rejected", s.dropped_rejected);
	add_u64(o, "dropped_at_exit", s.dropped_at_exit);
	add_u64(o, "queued", s.queued);
	json_object_object_add(o, "last_error",
			       s.last_error[0] ? json_object_new_string(s.last_error) : NULL);
	return o;
}

void fleet__free(struct fleet *f)
{
	struct deliver_stats *s;
	uint64_t dropped;

	if (!f)
		return;
	s = &f->final;
	if (!f->finished)
		deliver__finish(f->d, FINISH_WAIT_S, s);
	dropped = s->dropped_queue_full + s->dropped_gave_up + s->dropped_rejected +
		  s->dropped_at_exit;
	if (dropped || f->build_failed)
		pr_warn("OTLP: %llu of %llu requests sent to %s; %llu dropped (queue full %llu, "
			"after retries %llu, rejected %llu, at exit %llu)%s%s\n",
			(unsigned long long)s->sent, (unsigned long long)s->posted, f->url,
			(unsigned long long)dropped, (unsigned long long)s->dropped_queue_full,
			(unsigned long long)s->dropped_gave_up,
			(unsigned long long)s->dropped_rejected,
			(unsigned long long)s->dropped_at_exit,
			s->last_error[0] ? "; last error: " : "", s->last_error);
	else
		pr_info("OTLP: %llu of %llu requests sent to %s\n", (unsigned long long)s->sent,
			(unsigned long long)s->posted, f->url);
	free(f);
}
