/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * --all --continuous: each profile's pprof export, and with --otlp-endpoint
 * / --pyroscope each interval's profiles as one OpenTelemetry profiles
 * request (view.h's otlp_batch) and as Pyroscope ingest requests (a pprof
 * each), handed to each backend's delivery (deliver/http.h), and what
 * became of them in the run's index.
 */
#ifndef CLI_FLEET_H
#define CLI_FLEET_H

#include "cli/options.h"
#include "session/host.h"

struct fleet;

/* NULL after a message saying why (libcurl missing, no memory). */
struct fleet *fleet__new(const struct options *o);
/* host_opts.profile_done (which makes each profile's pprof, and with a
 * fleet as its ctx sends it; NULL: no backends), .interval_done and
 * .sink_json, with the fleet as their ctx. */
int fleet__profile(void *ctx, const struct host_piece *pc, struct json_object *doc, uint8_t **pprof,
		   size_t *len);
void fleet__interval(void *ctx);
struct json_object *fleet__json(void *ctx);
/* The run is ending: the next fleet__json first waits (a bounded time) for
 * the requests still queued to be sent. */
void fleet__ending(struct fleet *f);
/* Says what was sent and dropped, and frees the fleet. */
void fleet__free(struct fleet *f);
/* The application name Pyroscope gets for a process (--pyroscope without
 * --pyroscope-app) from its command line (argc 0: not known) and command. */
void pyroscope_app(const char *const *argv, int argc, const char *comm, char *out, size_t n);
/* A character Pyroscope takes in an application name. */
bool pyroscope_app_char(char c);

#endif /* CLI_FLEET_H */
