// SPDX-License-Identifier: BSD-2-Clause
/*
 * Delivery over HTTP(S) (http.h).  One thread takes the oldest body and
 * POSTs it; a failure that may pass (no connection, a timeout, 408, 429, a
 * 5xx) is tried again after a wait that doubles from backoff_s up to
 * max_backoff_s, at most max_attempts times; any other answer is final.
 * libcurl is loaded with dlopen: the profiler runs where it is missing,
 * and says so only when a delivery is asked for.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CURLOPT_PROTOCOLS stays, for a libcurl older than 7.85 at run time. */
#define CURL_DISABLE_DEPRECATION
#include <curl/curl.h>

#include "base/log.h"
#include "deliver/http.h"

/* The soname of libcurl 7.16 and later, every flavour (OpenSSL, GnuTLS). */
#define LIBCURL "libcurl.so.4"

struct item {
	struct item *next;
	char *url; /* NULL: the delivery's */
	uint8_t *body;
	size_t len;
	size_t size; /* what it holds in the queue: the body and its URL */
	int attempts;
};

static void item_free(struct item *it)
{
	free(it->url);
	free(it->body);
	free(it);
}

struct deliver {
	struct deliver_opts o;
	void *dl;
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode e);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	struct curl_slist *headers;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	struct item *head, *tail;
	bool stopping;
	double stop_at; /* monotonic s: no new try after it */
	struct deliver_stats st;
	/* The answer's first bytes, for the message of a failure. */
	char reply[160];
	size_t nreply;
	char curl_error[CURL_ERROR_SIZE];
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int load_curl(struct deliver *d)
{
	d->dl = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
	if (!d->dl) {
		pr_warn("sending to %s needs libcurl (%s: %s); install it (Debian and Ubuntu: "
			"apt-get install libcurl4)\n",
			d->o.url, LIBCURL, dlerror());
		return -ENOENT;
	}
#define SYM(f, name)                                                            \
	do {                                                                    \
		*(void **)&d->f = dlsym(d->dl, name);                           \
		if (!d->f) {                                                    \
			pr_warn("%s has no %s: not a libcurl this program can " \
				"use\n",                                        \
				LIBCURL, name);                                 \
			return -ENOENT;                                         \
		}                                                               \
	} while (0)
	SYM(global_init, "curl_global_init");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_perform, "curl_easy_perform");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
	return 0;
}

static size_t on_reply(char *p, size_t size, size_t n, void *arg)
{
	struct deliver *d = arg;
	size_t len = size * n, room = sizeof(d->reply) - 1 - d->nreply;

	memcpy(d->reply + d->nreply, p, len < room ? len : room);
	d->nreply += len < room ? len : room;
	d->reply[d->nreply] = '\0';
	return len;
}

/* The easy handle, set up once: everything but the body. */
static CURL *make_handle(struct deliver *d)
{
	CURL *c = d->easy_init();

	if (!c)
		return NULL;
	d->easy_setopt(c, CURLOPT_URL, d->o.url);
	d->easy_setopt(c, CURLOPT_POST, 1L);
	d->easy_setopt(c, CURLOPT_HTTPHEADER, d->headers);
	d->easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(d->o.timeout_s * 1000));
	d->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(d->o.timeout_s * 1000));
	/* Timeouts without signals: this is one thread of many. */
	d->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	d->easy_setopt(c, CURLOPT_USERAGENT, "scalene-bpf/" SCALENE_BPF_VERSION);
	d->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_reply);
	d->easy_setopt(c, CURLOPT_WRITEDATA, d);
	d->easy_setopt(c, CURLOPT_ERRORBUFFER, d->curl_error);
	/* HTTP and HTTPS only, redirects included (the URL was checked). */
#if LIBCURL_VERSION_NUM >= 0x075500
	if (d->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
	    d->easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK)
#endif
	{
		d->easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
		d->easy_setopt(c, CURLOPT_REDIR_PROTOCOLS,
			       (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	}
	return c;
}

enum outcome {
	SENT,
	RETRY,
	REJECTED
};

/* One try; err says why it failed. */
static enum outcome post(struct deliver *d, CURL *c, const struct item *it, char *err, size_t n)
{
	long status = 0;
	CURLcode rc;

	d->nreply = 0;
	d->reply[0] = '\0';
	d->curl_error[0] = '\0';
	d->easy_setopt(c, CURLOPT_URL, it->url ? it->url : d->o.url);
	d->easy_setopt(c, CURLOPT_POSTFIELDS, (const char *)it->body);
	d->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
	rc = d->easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(err, n, "%s", d->curl_error[0] ? d->curl_error : d->easy_strerror(rc));
		return RETRY;
	}
	d->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 200 && status < 300)
		return SENT;
	snprintf(err, n, "HTTP %ld%s%.*s", status, d->nreply ? ": " : "", 120, d->reply);
	/* The printable part of the answer only. */
	for (char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return status == 408 || status == 429 || status >= 500 ? RETRY : REJECTED;
}

/* Drops the oldest bodies while the queue is over its bound, but the newest
 * (d->lock held). */
static void bound_queue(struct deliver *d)
{
	while (d->head != d->tail && d->st.queued_bytes > d->o.max_queue_bytes) {
		struct item *it = d->head;

		d->head = it->next;
		if (!d->head)
			d->tail = NULL;
		d->st.queued--;
		d->st.queued_bytes -= it->size;
		d->st.dropped_queue_full++;
		item_free(it);
	}
}

static void wait_until(struct deliver *d, double at)
{
	struct timespec ts;

	ts.tv_sec = (time_t)at;
	ts.tv_nsec = (long)((at - (double)ts.tv_sec) * 1e9);
	pthread_cond_timedwait(&d->cond, &d->lock, &ts);
}

static void *run(void *arg)
{
	struct deliver *d = arg;
	double backoff = d->o.backoff_s;
	char err[256];
	sigset_t all;
	CURL *c;

	/* No signal for this thread: the program's (SIGINT, SIGTERM) go to a
	 * thread that acts on them; and SIGPIPE, which a TLS write raises in
	 * the writing thread when the backend closes the connection (libcurl's
	 * own sends pass MSG_NOSIGNAL, TLS libraries' do not, and NOSIGNAL
	 * keeps libcurl from ignoring it itself), stays pending here while the
	 * write fails with EPIPE, instead of ending the program. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	c = make_handle(d);

	pthread_mutex_lock(&d->lock);
	if (!c) {
		snprintf(d->st.last_error, sizeof(d->st.last_error),
			 "libcurl could not make a handle");
		pr_warn("sending to %s: %s; nothing will be sent\n", d->o.url, d->st.last_error);
	}
	for (;;) {
		struct item *it;
		enum outcome out;

		while (!d->head && !d->stopping)
			pthread_cond_wait(&d->cond, &d->lock);
		if (!d->head || !c || (d->stopping && mono_s() >= d->stop_at))
			break;
		it = d->head;
		d->head = it->next;
		if (!d->head)
			d->tail = NULL;
		d->st.queued--;
		d->st.queued_bytes -= it->size;
		pthread_mutex_unlock(&d->lock);
		out = post(d, c, it, err, sizeof(err));
		pthread_mutex_lock(&d->lock);
		if (out == SENT) {
			d->st.sent++;
			d->st.bytes_sent += it->len;
			backoff = d->o.backoff_s;
			item_free(it);
			continue;
		}
		if (!d->st.last_error[0] || strcmp(d->st.last_error, err))
			pr_warn("sending to %s failed: %s%s\n", d->o.url, err,
				out == RETRY ? " (tried again later)" : " (not tried again)");
		snprintf(d->st.last_error, sizeof(d->st.last_error), "%s", err);
		d->st.attempts_failed++;
		/* Once the run ends a body gets no other try: the backend had
		 * its tries while the run went on. */
		if (out == REJECTED || ++it->attempts >= d->o.max_attempts || d->stopping) {
			if (out == REJECTED)
				d->st.dropped_rejected++;
			else if (d->stopping)
				d->st.dropped_at_exit++;
			else
				d->st.dropped_gave_up++;
			item_free(it);
			continue;
		}
		/* Back to the front, to be tried first; newer bodies may push
		 * it out meanwhile. */
		it->next = d->head;
		d->head = it;
		if (!d->tail)
			d->tail = it;
		d->st.queued++;
		d->st.queued_bytes += it->size;
		bound_queue(d);
		/* The wait ends early when the run ends: one last try. */
		{
			double at = mono_s() + backoff;

			while (!d->stopping && mono_s() < at)
				wait_until(d, at);
		}
		backoff = backoff * 2 < d->o.max_backoff_s ? backoff * 2 : d->o.max_backoff_s;
	}
	pthread_mutex_unlock(&d->lock);
	if (c)
		d->easy_cleanup(c);
	return NULL;
}

struct deliver *deliver__new(const struct deliver_opts *o)
{
	struct deliver *d = calloc(1, sizeof(*d));
	pthread_condattr_t ca;
	char ct[128];
	int i;

	if (!d)
		return NULL;
	d->o = *o;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (load_curl(d))
		goto fail;
	if (d->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		pr_warn("libcurl could not start\n");
		goto fail;
	}
	snprintf(ct, sizeof(ct), "Content-Type: %s", o->content_type);
	d->headers = d->slist_append(NULL, ct);
	/* No "Expect: 100-continue" round trip before a large body. */
	if (d->headers)
		d->headers = d->slist_append(d->headers, "Expect:");
	for (i = 0; d->headers && i < o->nheaders; i++)
		d->headers = d->slist_append(d->headers, o->headers[i]);
	if (!d->headers) {
		pr_warn("out of memory\n");
		goto fail;
	}
	if (pthread_create(&d->thread, NULL, run, d)) {
		pr_warn("cannot start the thread that sends to %s\n", o->url);
		goto fail;
	}
	d->started = true;
	return d;
fail:
	deliver__finish(d, 0, NULL);
	return NULL;
}

void deliver__post(struct deliver *d, uint8_t *body, size_t len)
{
	deliver__post_to(d, NULL, body, len);
}

void deliver__post_to(struct deliver *d, const char *url, uint8_t *body, size_t len)
{
	struct item *it = calloc(1, sizeof(*it));

	if (it && url && !(it->url = strdup(url))) {
		free(it);
		it = NULL;
	}
	pthread_mutex_lock(&d->lock);
	d->st.posted++;
	if (!it) {
		d->st.dropped_queue_full++;
		free(body);
		pthread_mutex_unlock(&d->lock);
		return;
	}
	it->body = body;
	it->len = len;
	it->size = len + (url ? strlen(url) + 1 : 0);
	if (d->tail)
		d->tail->next = it;
	else
		d->head = it;
	d->tail = it;
	d->st.queued++;
	d->st.queued_bytes += it->size;
	bound_queue(d);
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void deliver__stats(struct deliver *d, struct deliver_stats *s)
{
	pthread_mutex_lock(&d->lock);
	*s = d->st;
	pthread_mutex_unlock(&d->lock);
}

void deliver__finish(struct deliver *d, double wait_s, struct deliver_stats *s)
{
	struct item *it, *next;

	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		d->stopping = true;
		d->stop_at = mono_s() + wait_s;
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	for (it = d->head; it; it = next) {
		next = it->next;
		d->st.dropped_at_exit++;
		item_free(it);
	}
	d->st.queued = d->st.queued_bytes = 0;
	if (s)
		*s = d->st;
	if (d->headers)
		d->slist_free_all(d->headers);
	/* libcurl stays loaded: curl_global_cleanup is not safe while other
	 * libraries of the process may use it, and the process ends soon. */
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}
