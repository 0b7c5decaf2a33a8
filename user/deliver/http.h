/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Delivery of exports to a backend over HTTP(S): bodies POSTed in order by a
 * thread of their own, from a queue bounded in bytes, with retries.  Posting
 * never blocks and never grows memory past the bound (or the newest body,
 * when that alone is larger): a full queue drops its oldest body, and every
 * body dropped is counted.  libcurl (the system's,
 * loaded when a delivery is made: TLS through the system's CA store) does
 * the HTTP.
 */
#ifndef DELIVER_HTTP_H
#define DELIVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct deliver_opts {
	const char *url;
	const char *content_type;
	const char *const *headers; /* "Name: value" */
	int nheaders;
	size_t max_queue_bytes; /* the bodies waiting, together */
	double timeout_s;	/* one request */
	int max_attempts;	/* tries of one body, then it is dropped */
	double backoff_s;	/* the first wait after a failure, doubled each time */
	double max_backoff_s;
};

struct deliver_stats {
	uint64_t posted; /* bodies handed over */
	uint64_t sent;	 /* accepted by the backend (2xx) */
	uint64_t bytes_sent;
	uint64_t attempts_failed; /* tries that failed (and were retried, or not) */
	uint64_t dropped_queue_full;
	uint64_t dropped_gave_up;  /* max_attempts failed */
	uint64_t dropped_rejected; /* refused for good (a 4xx but 408 and 429) */
	uint64_t dropped_at_exit;  /* still queued when the run ended */
	uint64_t queued, queued_bytes;
	char last_error[256]; /* "" when none */
};

struct deliver;

/* Loads libcurl and starts the thread; NULL after a message saying what is
 * missing. */
struct deliver *deliver__new(const struct deliver_opts *o);
/* Queues body (taken over: freed by the delivery); never blocks. */
void deliver__post(struct deliver *d, uint8_t *body, size_t len);
/* The same, to url (copied) instead of the delivery's own URL; the URL's
 * bytes count in the queue's bound with the body's. */
void deliver__post_to(struct deliver *d, const char *url, uint8_t *body, size_t len);
void deliver__stats(struct deliver *d, struct deliver_stats *s);
/* Sends what is queued, for up to wait_s and without retries (a body that
 * fails now is dropped), stops the thread and frees everything; what was
 * left is counted as dropped_at_exit in *s (if not NULL) first. */
void deliver__finish(struct deliver *d, double wait_s, struct deliver_stats *s);

#endif /* DELIVER_HTTP_H */
