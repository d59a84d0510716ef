/* metrics.h - the daemon's Prometheus metrics: counters, gauges and
 * histograms kept in C11 atomics (no lock on the request path), rendered in
 * the text exposition format 0.0.4 for GET /metrics.
 *
 * Label values are bounded: `route` is a route pattern registered with
 * metrics_route_add() (or "none" for a request that matched no route), `op`
 * is ReduceL2, ReduceSumSquare or none, `format` is json, raw, npy, binary
 * (the /v2 binary tensor data extension) or none,
 * `status` is one of a fixed list of HTTP statuses (others count as
 * "other"; a request that ended without a response counts as "none").
 *
 * Threads: metrics_route_add() runs before the struct is shared.  Every
 * other update is a relaxed atomic and may run on any thread: the HTTP code
 * calls them on the loop thread, job.c also calls metrics_queued_add() on
 * pool threads.  metrics_render() may run concurrently with updates; each
 * value it prints is whole, but a histogram's _sum may be one observation
 * ahead of its buckets.
 */
#ifndef RD_METRICS_H
#define RD_METRICS_H

#include <stdint.h>
#include <time.h>

#include "buf.h"

/* Route patterns one struct metrics can tell apart. */
#define METRICS_MAX_ROUTES 32
/* The route index of a request that matched no route (label "none"). */
#define METRICS_ROUTE_NONE ((unsigned)-1)

/* The Content-Type of a GET /metrics answer. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The request body format (label "format"). */
enum metrics_format {
  METRICS_FMT_NONE = 0, /* no body format was accepted */
  METRICS_FMT_JSON,
  METRICS_FMT_RAW,   /* application/octet-stream */
  METRICS_FMT_NPY,   /* application/x-npy */
  METRICS_FMT_BINARY /* /v2 binary tensor data extension (a JSON header
                           * and blobs: Inference-Header-Content-Length) */
};

/* One finished request. */
struct metrics_obs {
  unsigned route;       /* index from metrics_route_add() or ROUTE_NONE */
  int op;               /* enum rd_op, or 0: none */
  int format;           /* enum metrics_format */
  int status;           /* HTTP status sent, or 0: none */
  uint64_t duration_ns; /* first byte of the request to the response sent */
  uint64_t in_bytes;    /* request body bytes received */
  uint64_t out_bytes;   /* response body bytes */
};

struct metrics;

/* A zeroed set of metrics; `threads` and `max_pending` are shown as gauges,
 * `start` (CLOCK_REALTIME) as process_start_time_seconds.  NULL if out of
 * memory. */
struct metrics *metrics_create(unsigned threads, uint64_t max_pending,
                               const struct timespec *start);
void metrics_destroy(struct metrics *m);

/* Registers the next route pattern (label value; not copied, so it must
 * outlive `m`).  Returns its index (0, 1, ... in call order) or -1 if
 * METRICS_MAX_ROUTES are registered already. */
int metrics_route_add(struct metrics *m, const char *pattern);

/* reduced_requests_in_flight += delta (a request begins: +1, ends: -1). */
void metrics_inflight_add(struct metrics *m, int delta);

/* reduced_requests_queued += delta: +1 when a request's work is queued for
 * the pool, -1 when a pool thread takes it up (or queueing failed). */
void metrics_queued_add(struct metrics *m, int delta);

/* reduced_requests_waiting and reduced_inflight_bytes (admit.c). */
void metrics_admit_set(struct metrics *m, long waiting,
                       uint64_t inflight_bytes);

/* One admission's wait, in reduced_queue_wait_seconds. */
void metrics_queue_wait(struct metrics *m, uint64_t ns);

/* reduced_reload_failures_total += 1. */
void metrics_reload_failure(struct metrics *m);

/* Counts one finished request in the counters and histograms. */
void metrics_observe(struct metrics *m, const struct metrics_obs *o);

/* Appends the exposition text of every metric to `b`.  0, or RD_E_NOMEM
 * (then `b` holds a partial text: free it). */
int metrics_render(const struct metrics *m, struct api_buf *b);

#endif /* RD_METRICS_H */
