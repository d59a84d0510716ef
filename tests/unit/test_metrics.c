/* test_metrics.c - the metrics module: exact exposition text for a known
 * state (bucket edges, cumulative counts, exact sums, label escaping, the
 * "none"/"other" label values), the empty state, the route limit, and exact
 * counts after concurrent updates from several threads.
 *
 * Expected texts are written by hand from the observations below, not
 * copied from the program's output. */
#include "config.h" /* autoconf */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "metrics.h"
#include "reduce.h"

static const struct timespec start = { 1700000000, 123000000 };

/* The admission families (all zero, and after test_known_state's
 * updates: waits of 0 s, 0.3 s and 100 s in the duration buckets). */
#define QUEUE_ZERO                                                                                                                        \
  "# HELP reduced_requests_waiting Requests waiting for admission (--max-inflight-bytes), their connections suspended before the body.\n" \
  "# TYPE reduced_requests_waiting gauge\n"                                                                                               \
  "reduced_requests_waiting 0\n"                                                                                                          \
  "# HELP reduced_inflight_bytes Memory admitted requests hold or are planned to need, bytes.\n"                                          \
  "# TYPE reduced_inflight_bytes gauge\n"                                                                                                 \
  "reduced_inflight_bytes 0\n"                                                                                                            \
  "# HELP reduced_queue_wait_seconds Time admitted requests waited for admission.\n"                                                      \
  "# TYPE reduced_queue_wait_seconds histogram\n"                                                                                         \
  "reduced_queue_wait_seconds_bucket{le=\"0.0005\"} 0\n"                                                                                  \
  "reduced_queue_wait_seconds_bucket{le=\"0.001\"} 0\n"                                                                                   \
  "reduced_queue_wait_seconds_bucket{le=\"0.0025\"} 0\n"                                                                                  \
  "reduced_queue_wait_seconds_bucket{le=\"0.005\"} 0\n"                                                                                   \
  "reduced_queue_wait_seconds_bucket{le=\"0.01\"} 0\n"                                                                                    \
  "reduced_queue_wait_seconds_bucket{le=\"0.025\"} 0\n"                                                                                   \
  "reduced_queue_wait_seconds_bucket{le=\"0.05\"} 0\n"                                                                                    \
  "reduced_queue_wait_seconds_bucket{le=\"0.1\"} 0\n"                                                                                     \
  "reduced_queue_wait_seconds_bucket{le=\"0.25\"} 0\n"                                                                                    \
  "reduced_queue_wait_seconds_bucket{le=\"0.5\"} 0\n"                                                                                     \
  "reduced_queue_wait_seconds_bucket{le=\"1\"} 0\n"                                                                                       \
  "reduced_queue_wait_seconds_bucket{le=\"2.5\"} 0\n"                                                                                     \
  "reduced_queue_wait_seconds_bucket{le=\"5\"} 0\n"                                                                                       \
  "reduced_queue_wait_seconds_bucket{le=\"10\"} 0\n"                                                                                      \
  "reduced_queue_wait_seconds_bucket{le=\"30\"} 0\n"                                                                                      \
  "reduced_queue_wait_seconds_bucket{le=\"60\"} 0\n"                                                                                      \
  "reduced_queue_wait_seconds_bucket{le=\"+Inf\"} 0\n"                                                                                    \
  "reduced_queue_wait_seconds_sum 0\n"                                                                                                    \
  "reduced_queue_wait_seconds_count 0\n"                                                                                                  \
  "# HELP reduced_reload_failures_total SIGHUP reloads of --api-key-file or --tls-cert/--tls-key that kept the old secrets.\n"            \
  "# TYPE reduced_reload_failures_total counter\n"                                                                                        \
  "reduced_reload_failures_total 0\n"
#define QUEUE_KNOWN                                                                                                                       \
  "# HELP reduced_requests_waiting Requests waiting for admission (--max-inflight-bytes), their connections suspended before the body.\n" \
  "# TYPE reduced_requests_waiting gauge\n"                                                                                               \
  "reduced_requests_waiting 3\n"                                                                                                          \
  "# HELP reduced_inflight_bytes Memory admitted requests hold or are planned to need, bytes.\n"                                          \
  "# TYPE reduced_inflight_bytes gauge\n"                                                                                                 \
  "reduced_inflight_bytes 12345\n"                                                                                                        \
  "# HELP reduced_queue_wait_seconds Time admitted requests waited for admission.\n"                                                      \
  "# TYPE reduced_queue_wait_seconds histogram\n"                                                                                         \
  "reduced_queue_wait_seconds_bucket{le=\"0.0005\"} 1\n"                                                                                  \
  "reduced_queue_wait_seconds_bucket{le=\"0.001\"} 1\n"                                                                                   \
  "reduced_queue_wait_seconds_bucket{le=\"0.0025\"} 1\n"                                                                                  \
  "reduced_queue_wait_seconds_bucket{le=\"0.005\"} 1\n"                                                                                   \
  "reduced_queue_wait_seconds_bucket{le=\"0.01\"} 1\n"                                                                                    \
  "reduced_queue_wait_seconds_bucket{le=\"0.025\"} 1\n"                                                                                   \
  "reduced_queue_wait_seconds_bucket{le=\"0.05\"} 1\n"                                                                                    \
  "reduced_queue_wait_seconds_bucket{le=\"0.1\"} 1\n"                                                                                     \
  "reduced_queue_wait_seconds_bucket{le=\"0.25\"} 1\n"                                                                                    \
  "reduced_queue_wait_seconds_bucket{le=\"0.5\"} 2\n"                                                                                     \
  "reduced_queue_wait_seconds_bucket{le=\"1\"} 2\n"                                                                                       \
  "reduced_queue_wait_seconds_bucket{le=\"2.5\"} 2\n"                                                                                     \
  "reduced_queue_wait_seconds_bucket{le=\"5\"} 2\n"                                                                                       \
  "reduced_queue_wait_seconds_bucket{le=\"10\"} 2\n"                                                                                      \
  "reduced_queue_wait_seconds_bucket{le=\"30\"} 2\n"                                                                                      \
  "reduced_queue_wait_seconds_bucket{le=\"60\"} 2\n"                                                                                      \
  "reduced_queue_wait_seconds_bucket{le=\"+Inf\"} 3\n"                                                                                    \
  "reduced_queue_wait_seconds_sum 100.3\n"                                                                                                \
  "reduced_queue_wait_seconds_count 3\n"                                                                                                  \
  "# HELP reduced_reload_failures_total SIGHUP reloads of --api-key-file or --tls-cert/--tls-key that kept the old secrets.\n"            \
  "# TYPE reduced_reload_failures_total counter\n"                                                                                        \
  "reduced_reload_failures_total 2\n"

/* The families that do not depend on requests, after the histograms. */
#define TAIL(in, sent, inflight, queued, queue)                                \
  "# HELP reduced_bytes_received_total Request body bytes received.\n"         \
  "# TYPE reduced_bytes_received_total counter\n"                              \
  "reduced_bytes_received_total " in "\n"                                      \
  "# HELP reduced_bytes_sent_total Response body bytes sent.\n"                \
  "# TYPE reduced_bytes_sent_total counter\n"                                  \
  "reduced_bytes_sent_total " sent "\n"                                        \
  "# HELP reduced_requests_in_flight Requests received and not yet "           \
  "completed (a scrape counts itself).\n"                                      \
  "# TYPE reduced_requests_in_flight gauge\n"                                  \
  "reduced_requests_in_flight " inflight "\n"                                  \
  "# HELP reduced_requests_queued Admitted requests waiting for a worker "     \
  "thread.\n"                                                                  \
  "# TYPE reduced_requests_queued gauge\n"                                     \
  "reduced_requests_queued " queued "\n" queue                                 \
  "# HELP reduced_worker_threads Size of the worker thread pool "              \
  "(--threads).\n"                                                             \
  "# TYPE reduced_worker_threads gauge\n"                                      \
  "reduced_worker_threads 4\n"                                                 \
  "# HELP reduced_max_pending Requests admitted or waiting for admission "     \
  "at once before 503 (--max-pending).\n"                                      \
  "# TYPE reduced_max_pending gauge\n"                                         \
  "reduced_max_pending 64\n"                                                   \
  "# HELP reduced_buffer_cache_bytes Freed buffers of 256 KiB and up kept "    \
  "resident for the next requests (--buffer-cache-bytes), bytes.\n"            \
  "# TYPE reduced_buffer_cache_bytes gauge\n"                                  \
  "reduced_buffer_cache_bytes 0\n"                                             \
  "# HELP reduced_buffer_cache_hits_total Buffers of 256 KiB and up taken "    \
  "from the cache.\n"                                                          \
  "# TYPE reduced_buffer_cache_hits_total counter\n"                           \
  "reduced_buffer_cache_hits_total 0\n"                                        \
  "# HELP reduced_buffer_cache_misses_total Buffers of 256 KiB and up that "   \
  "mapped fresh pages.\n"                                                      \
  "# TYPE reduced_buffer_cache_misses_total counter\n"                         \
  "reduced_buffer_cache_misses_total 0\n"                                      \
  "# HELP process_start_time_seconds Start time of the process since the "     \
  "Unix epoch in seconds.\n"                                                   \
  "# TYPE process_start_time_seconds gauge\n"                                  \
  "process_start_time_seconds 1700000000.123\n"                                \
  "# HELP reduced_build_info Always 1; the labels describe the build.\n"       \
  "# TYPE reduced_build_info gauge\n"                                          \
  "reduced_build_info{version=\"" PACKAGE_VERSION "\"} 1\n"

#define REQUESTS_HEAD                                                          \
  "# HELP reduced_requests_total HTTP requests answered, by route pattern, "   \
  "operator, request body format and status.\n"                                \
  "# TYPE reduced_requests_total counter\n"

#define HIST_HEADS                                                             \
  "# HELP reduced_request_duration_seconds Time from the start of a request "  \
  "to its response, by route.\n"                                               \
  "# TYPE reduced_request_duration_seconds histogram\n"                        \
  "# HELP reduced_request_size_bytes Request body sizes, by route.\n"          \
  "# TYPE reduced_request_size_bytes histogram\n"                              \
  "# HELP reduced_response_size_bytes Response body sizes, by route.\n"        \
  "# TYPE reduced_response_size_bytes histogram\n"

static char *render(const struct metrics *m)
{
  struct api_buf b;
  size_t len;

  api_buf_init(&b);
  assert_int_equal(metrics_render(m, &b), 0);
  return api_buf_steal(&b, &len);
}

/* Compares line by line, so that a failure names the first wrong line. */
static void assert_text(const char *got, const char *want)
{
  size_t line = 1;

  while (*got != '\0' && *want != '\0') {
    size_t gl = strcspn(got, "\n"), wl = strcspn(want, "\n");
    if (gl != wl || memcmp(got, want, gl) != 0)
      fail_msg("line %zu:\n  got:  %.*s\n  want: %.*s", line, (int)gl, got,
               (int)wl, want);
    got += gl + (got[gl] == '\n');
    want += wl + (want[wl] == '\n');
    line++;
  }
  if (*got != '\0' || *want != '\0')
    fail_msg("line %zu: got %s", line, *got ? "extra lines" : "too few lines");
}

static void test_empty(void **state)
{
  struct metrics *m = metrics_create(4, 64, &start);
  char *t;

  (void)state;
  assert_non_null(m);
  assert_int_equal(metrics_route_add(m, "/v1/reduce"), 0);
  t = render(m);
  /* No request yet: families with HELP/TYPE but no samples. */
  assert_text(t, REQUESTS_HEAD HIST_HEADS TAIL("0", "0", "0", "0", QUEUE_ZERO));
  free(t);
  metrics_destroy(m);
}

static void obs(struct metrics *m, unsigned route, int op, int format,
                int status, uint64_t ns, uint64_t in, uint64_t out)
{
  struct metrics_obs o = { route, op, format, status, ns, in, out };
  metrics_observe(m, &o);
}

/* Routes: 0 "/v1/x", 1 a"b\c<newline>d (escaping), and "none".
 *   A, F  /v1/x  ReduceL2        json 200  1.000000 ms  in 100 out 50
 *   B     /v1/x  ReduceSumSquare json 400  1.000001 ms  in 64  out 0
 *   C     route1 none            none 404  61 s         in 0   out 70000000
 *   D     none   none            none -    0 ns         in 5   out 0
 *   E     7->none none           raw  299  0.5 ms       in 64 MiB + 1, out 1
 * Bucket edges are inclusive (le): 1 ms is in le="0.001", 64 B in le="64";
 * 61 s, 70000000 B and 64 MiB + 1 B are only in +Inf.  Sums: durations
 * 3000001 ns, 61 s, 500000 ns; request bytes 264, 0, 67108870; response
 * bytes 100, 70000000, 1.  Totals: in 67109134, out 70000101. */
static const char known_text[] = REQUESTS_HEAD
  "reduced_requests_total{route=\"/v1/x\",op=\"ReduceL2\",format=\"json\",status=\"200\"} 2\n"
  "reduced_requests_total{route=\"/v1/x\",op=\"ReduceSumSquare\",format=\"json\",status=\"400\"} 1\n"
  "reduced_requests_total{route=\"a\\\"b\\\\c\\nd\",op=\"none\",format=\"none\",status=\"404\"} 1\n"
  "reduced_requests_total{route=\"none\",op=\"none\",format=\"raw\",status=\"other\"} 1\n"
  "reduced_requests_total{route=\"none\",op=\"none\",format=\"none\",status=\"none\"} 1\n"
  "# HELP reduced_request_duration_seconds Time from the start of a request to its response, by route.\n"
  "# TYPE reduced_request_duration_seconds histogram\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.0005\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.001\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.0025\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.005\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.01\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.025\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.05\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.1\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.25\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"0.5\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"1\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"2.5\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"5\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"10\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"30\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"60\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"/v1/x\",le=\"+Inf\"} 3\n"
  "reduced_request_duration_seconds_sum{route=\"/v1/x\"} 0.003000001\n"
  "reduced_request_duration_seconds_count{route=\"/v1/x\"} 3\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.0005\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.001\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.0025\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.005\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.01\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.025\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.05\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.1\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.25\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"0.5\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"1\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"2.5\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"5\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"10\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"30\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"60\"} 0\n"
  "reduced_request_duration_seconds_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 1\n"
  "reduced_request_duration_seconds_sum{route=\"a\\\"b\\\\c\\nd\"} 61\n"
  "reduced_request_duration_seconds_count{route=\"a\\\"b\\\\c\\nd\"} 1\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.0005\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.001\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.0025\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.005\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.01\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.025\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.05\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.1\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.25\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"0.5\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"1\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"2.5\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"5\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"10\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"30\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"60\"} 2\n"
  "reduced_request_duration_seconds_bucket{route=\"none\",le=\"+Inf\"} 2\n"
  "reduced_request_duration_seconds_sum{route=\"none\"} 0.0005\n"
  "reduced_request_duration_seconds_count{route=\"none\"} 2\n"
  "# HELP reduced_request_size_bytes Request body sizes, by route.\n"
  "# TYPE reduced_request_size_bytes histogram\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"64\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"256\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"1024\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"4096\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"16384\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"65536\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"262144\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"1048576\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"4194304\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"16777216\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"67108864\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"/v1/x\",le=\"+Inf\"} 3\n"
  "reduced_request_size_bytes_sum{route=\"/v1/x\"} 264\n"
  "reduced_request_size_bytes_count{route=\"/v1/x\"} 3\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"64\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"256\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"1024\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"4096\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"16384\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"65536\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"262144\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"1048576\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"4194304\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"16777216\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"67108864\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 1\n"
  "reduced_request_size_bytes_sum{route=\"a\\\"b\\\\c\\nd\"} 0\n"
  "reduced_request_size_bytes_count{route=\"a\\\"b\\\\c\\nd\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"64\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"256\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"1024\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"4096\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"16384\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"65536\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"262144\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"1048576\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"4194304\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"16777216\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"67108864\"} 1\n"
  "reduced_request_size_bytes_bucket{route=\"none\",le=\"+Inf\"} 2\n"
  "reduced_request_size_bytes_sum{route=\"none\"} 67108870\n"
  "reduced_request_size_bytes_count{route=\"none\"} 2\n"
  "# HELP reduced_response_size_bytes Response body sizes, by route.\n"
  "# TYPE reduced_response_size_bytes histogram\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"64\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"256\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"1024\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"4096\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"16384\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"65536\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"262144\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"1048576\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"4194304\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"16777216\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"67108864\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"/v1/x\",le=\"+Inf\"} 3\n"
  "reduced_response_size_bytes_sum{route=\"/v1/x\"} 100\n"
  "reduced_response_size_bytes_count{route=\"/v1/x\"} 3\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"64\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"256\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"1024\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"4096\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"16384\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"65536\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"262144\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"1048576\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"4194304\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"16777216\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"67108864\"} 0\n"
  "reduced_response_size_bytes_bucket{route=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 1\n"
  "reduced_response_size_bytes_sum{route=\"a\\\"b\\\\c\\nd\"} 70000000\n"
  "reduced_response_size_bytes_count{route=\"a\\\"b\\\\c\\nd\"} 1\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"64\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"256\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"1024\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"4096\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"16384\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"65536\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"262144\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"1048576\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"4194304\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"16777216\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"67108864\"} 2\n"
  "reduced_response_size_bytes_bucket{route=\"none\",le=\"+Inf\"} 2\n"
  "reduced_response_size_bytes_sum{route=\"none\"} 1\n"
  "reduced_response_size_bytes_count{route=\"none\"} 2\n" TAIL("67109134",
                                                               "70000101", "2",
                                                               "1",
                                                               QUEUE_KNOWN);

static void test_known_state(void **state)
{
  struct metrics *m = metrics_create(4, 64, &start);
  char *t;

  (void)state;
  assert_non_null(m);
  assert_int_equal(metrics_route_add(m, "/v1/x"), 0);
  assert_int_equal(metrics_route_add(m, "a\"b\\c\nd"), 1);
  obs(m, 0, RD_OP_L2, METRICS_FMT_JSON, 200, 1000000, 100, 50);
  obs(m, 0, RD_OP_SUM_SQUARE, METRICS_FMT_JSON, 400, 1000001, 64, 0);
  obs(m, 1, 0, METRICS_FMT_NONE, 404, UINT64_C(61000000000), 0, 70000000);
  obs(m, METRICS_ROUTE_NONE, 0, METRICS_FMT_NONE, 0, 0, 5, 0);
  obs(m, 7, 0, METRICS_FMT_RAW, 299, 500000, UINT64_C(67108865), 1);
  obs(m, 0, RD_OP_L2, METRICS_FMT_JSON, 200, 1000000, 100, 50);
  metrics_inflight_add(m, 3);
  metrics_inflight_add(m, -1);
  metrics_queued_add(m, 2);
  metrics_queued_add(m, -2);
  metrics_queued_add(m, 1);
  metrics_admit_set(m, 3, 12345);
  metrics_queue_wait(m, 0);
  metrics_queue_wait(m, 300000000);
  metrics_queue_wait(m, UINT64_C(100000000000));
  metrics_reload_failure(m);
  metrics_reload_failure(m);
  t = render(m);
  assert_text(t, known_text);
  free(t);
  metrics_destroy(m);
}

/* Every format label, in output order: json, raw, npy, binary (the /v2
 * binary tensor data extension), none. */
static void test_format_labels(void **state)
{
  struct metrics *m = metrics_create(1, 1, &start);
  char *t;
  const char *p[5];
  static const char *const want[5] = {
    "{route=\"/v2/x\",op=\"ReduceL2\",format=\"json\",status=\"200\"} 1\n",
    "{route=\"/v2/x\",op=\"ReduceL2\",format=\"raw\",status=\"200\"} 2\n",
    "{route=\"/v2/x\",op=\"ReduceL2\",format=\"npy\",status=\"200\"} 3\n",
    "{route=\"/v2/x\",op=\"ReduceL2\",format=\"binary\",status=\"200\"} 4\n",
    "{route=\"/v2/x\",op=\"ReduceL2\",format=\"none\",status=\"200\"} 5\n",
  };
  static const int fmts[5] = { METRICS_FMT_JSON, METRICS_FMT_RAW,
                               METRICS_FMT_NPY, METRICS_FMT_BINARY,
                               METRICS_FMT_NONE };

  (void)state;
  assert_non_null(m);
  assert_int_equal(metrics_route_add(m, "/v2/x"), 0);
  for (int f = 0; f < 5; f++)
    for (int i = 0; i <= f; i++)
      obs(m, 0, RD_OP_L2, fmts[f], 200, 1, 0, 0);
  t = render(m);
  for (int f = 0; f < 5; f++) {
    p[f] = strstr(t, want[f]);
    assert_non_null(p[f]);
    if (f > 0)
      assert_true(p[f - 1] < p[f]);
  }
  free(t);
  metrics_destroy(m);
}

static void test_route_limit(void **state)
{
  struct metrics *m = metrics_create(1, 1, &start);

  (void)state;
  assert_non_null(m);
  for (int i = 0; i < METRICS_MAX_ROUTES; i++)
    assert_int_equal(metrics_route_add(m, "/r"), i);
  assert_int_equal(metrics_route_add(m, "/r"), -1);
  metrics_destroy(m);
}

/* Concurrent updates are not lost: NTHREADS threads each observe NOBS
 * requests (and move the gauges up and back down), then the counts are
 * exact. */
#define NTHREADS 8
#define NOBS 20000

static void *hammer(void *arg)
{
  struct metrics *m = arg;

  for (int i = 0; i < NOBS; i++) {
    metrics_inflight_add(m, 1);
    metrics_queued_add(m, 1);
    obs(m, 0, i % 2 ? RD_OP_L2 : 0, METRICS_FMT_JSON, i % 2 ? 200 : 503,
        2000000, 3, 1);
    metrics_queued_add(m, -1);
    metrics_inflight_add(m, -1);
  }
  return NULL;
}

static void test_concurrent(void **state)
{
  struct metrics *m = metrics_create(4, 64, &start);
  pthread_t th[NTHREADS];
  char *t;

  (void)state;
  assert_non_null(m);
  assert_int_equal(metrics_route_add(m, "/c"), 0);
  for (int i = 0; i < NTHREADS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, hammer, m), 0);
  for (int i = 0; i < NTHREADS; i++)
    assert_int_equal(pthread_join(th[i], NULL), 0);
  t = render(m);
  /* 8 x 20000 = 160000 requests, half each way; 2 ms each = 320 s;
   * 3 bytes in and 1 out each. */
  assert_non_null(strstr(
    t,
    "\nreduced_requests_total{route=\"/c\",op=\"ReduceL2\",format=\"json\",status=\"200\"} 80000\n"));
  assert_non_null(strstr(
    t,
    "\nreduced_requests_total{route=\"/c\",op=\"none\",format=\"json\",status=\"503\"} 80000\n"));
  assert_non_null(strstr(
    t,
    "\nreduced_request_duration_seconds_bucket{route=\"/c\",le=\"0.001\"} 0\n"));
  assert_non_null(strstr(
    t,
    "\nreduced_request_duration_seconds_bucket{route=\"/c\",le=\"0.0025\"} 160000\n"));
  assert_non_null(
    strstr(t, "\nreduced_request_duration_seconds_sum{route=\"/c\"} 320\n"));
  assert_non_null(
    strstr(t,
           "\nreduced_request_duration_seconds_count{route=\"/c\"} 160000\n"));
  assert_non_null(strstr(t, "\nreduced_bytes_received_total 480000\n"));
  assert_non_null(strstr(t, "\nreduced_bytes_sent_total 160000\n"));
  assert_non_null(strstr(t, "\nreduced_requests_in_flight 0\n"));
  assert_non_null(strstr(t, "\nreduced_requests_queued 0\n"));
  free(t);
  metrics_destroy(m);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_empty),         cmocka_unit_test(test_known_state),
    cmocka_unit_test(test_format_labels), cmocka_unit_test(test_route_limit),
    cmocka_unit_test(test_concurrent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
