/* metrics.c - Prometheus counters, gauges and histograms (see metrics.h).
 *
 * Storage is fixed arrays of relaxed atomics indexed by label values, so an
 * update is one or two atomic adds and never allocates or locks.  Durations
 * are summed in integer nanoseconds and sizes in bytes, so _sum is exact and
 * printed without floating-point rounding.  Histogram buckets are stored
 * per bucket and made cumulative when rendered.
 */
#include "config.h" /* autoconf: PACKAGE_VERSION */

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "reduce.h"
#include "tmem.h"

/* Route slots: the registered patterns, then "none". */
#define NROUTE (METRICS_MAX_ROUTES + 1)
#define NOP (RD_OP_COUNT + 1) /* the operators in enum order, then none */
#define NFMT 5                /* json, raw, npy, binary, none */
#define MAX_BUCKETS 20

/* Statuses with their own label value; then "other", then "none". */
static const int statuses[] = { 200, 400, 401, 403, 404, 405, 406, 408,
                                411, 413, 415, 422, 429, 500, 501, 503 };
#define NSTATUS_NUM (sizeof statuses / sizeof statuses[0])
#define STATUS_OTHER NSTATUS_NUM
#define STATUS_NONE (NSTATUS_NUM + 1)
#define NSTATUS (NSTATUS_NUM + 2)

/* Labels from rd_op_name(slot + 1); the last slot is "none". */
static const char *op_label(unsigned slot)
{
  const char *n = slot < RD_OP_COUNT ? rd_op_name((int)slot + 1) : NULL;
  return n != NULL ? n : "none";
}
static const char *const fmt_labels[NFMT] = { "json", "raw", "npy", "binary",
                                              "none" };

/* Bucket upper bounds: the value compared (ns or bytes) and its label. */
struct bucket_def {
  uint64_t bound;
  const char *le;
};

static const struct bucket_def dur_buckets[] = {
  { 500000, "0.0005" },  { 1000000, "0.001" },   { 2500000, "0.0025" },
  { 5000000, "0.005" },  { 10000000, "0.01" },   { 25000000, "0.025" },
  { 50000000, "0.05" },  { 100000000, "0.1" },   { 250000000, "0.25" },
  { 500000000, "0.5" },  { 1000000000, "1" },    { 2500000000u, "2.5" },
  { 5000000000u, "5" },  { 10000000000u, "10" }, { 30000000000u, "30" },
  { 60000000000u, "60" }
};

/* Powers of 4 from 64 B to 64 MiB (the default --max-body). */
static const struct bucket_def size_buckets[] = { { 64, "64" },
                                                  { 256, "256" },
                                                  { 1024, "1024" },
                                                  { 4096, "4096" },
                                                  { 16384, "16384" },
                                                  { 65536, "65536" },
                                                  { 262144, "262144" },
                                                  { 1048576, "1048576" },
                                                  { 4194304, "4194304" },
                                                  { 16777216, "16777216" },
                                                  { 67108864, "67108864" } };

#define NDUR (sizeof dur_buckets / sizeof dur_buckets[0])

/* One histogram family, by route.  bucket[r][nb] is the +Inf overflow. */
struct hist {
  atomic_uint_least64_t bucket[NROUTE][MAX_BUCKETS + 1];
  atomic_uint_least64_t sum[NROUTE];
};

struct metrics {
  const char *routes[METRICS_MAX_ROUTES];
  unsigned nroutes;
  unsigned threads;
  uint64_t max_pending;
  struct timespec start;

  atomic_uint_least64_t requests[NROUTE][NOP][NFMT][NSTATUS];
  atomic_uint_least64_t bytes_in, bytes_out;
  atomic_long inflight, queued;
  struct hist duration, req_size, resp_size;
  /* Admission (admit.c) and reload (server.c). */
  atomic_long waiting;
  atomic_uint_least64_t inflight_bytes, reload_failures;
  atomic_uint_least64_t qwait[MAX_BUCKETS + 1], qwait_sum;
};

struct metrics *metrics_create(unsigned threads, uint64_t max_pending,
                               const struct timespec *start)
{
  /* calloc: all-zero bytes is a valid zero for lock-free atomics (C11
   * leaves it unspecified, but every target we build for does this). */
  struct metrics *m = calloc(1, sizeof *m);

  if (m == NULL)
    return NULL;
  m->threads = threads;
  m->max_pending = max_pending;
  m->start = *start;
  return m;
}

void metrics_destroy(struct metrics *m)
{
  free(m);
}

int metrics_route_add(struct metrics *m, const char *pattern)
{
  if (m->nroutes >= METRICS_MAX_ROUTES)
    return -1;
  m->routes[m->nroutes] = pattern;
  return (int)m->nroutes++;
}

void metrics_inflight_add(struct metrics *m, int delta)
{
  atomic_fetch_add_explicit(&m->inflight, delta, memory_order_relaxed);
}

void metrics_queued_add(struct metrics *m, int delta)
{
  atomic_fetch_add_explicit(&m->queued, delta, memory_order_relaxed);
}

void metrics_admit_set(struct metrics *m, long waiting, uint64_t inflight_bytes)
{
  atomic_store_explicit(&m->waiting, waiting, memory_order_relaxed);
  atomic_store_explicit(&m->inflight_bytes, inflight_bytes,
                        memory_order_relaxed);
}

void metrics_queue_wait(struct metrics *m, uint64_t ns)
{
  size_t i = 0;

  while (i < NDUR && ns > dur_buckets[i].bound)
    i++;
  atomic_fetch_add_explicit(&m->qwait[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->qwait_sum, ns, memory_order_relaxed);
}

void metrics_reload_failure(struct metrics *m)
{
  atomic_fetch_add_explicit(&m->reload_failures, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Observing                                                          */
/* ------------------------------------------------------------------ */

static unsigned route_slot(const struct metrics *m, unsigned route)
{
  return route < m->nroutes ? route : METRICS_MAX_ROUTES;
}

static unsigned op_slot(int op)
{
  return op >= 1 && op <= RD_OP_COUNT ? (unsigned)op - 1 : RD_OP_COUNT;
}

static unsigned fmt_slot(int format)
{
  switch (format) {
  case METRICS_FMT_JSON: return 0;
  case METRICS_FMT_RAW: return 1;
  case METRICS_FMT_NPY: return 2;
  case METRICS_FMT_BINARY: return 3;
  default: return 4;
  }
}

static unsigned status_slot(int status)
{
  if (status == 0)
    return STATUS_NONE;
  for (unsigned i = 0; i < NSTATUS_NUM; i++)
    if (statuses[i] == status)
      return i;
  return STATUS_OTHER;
}

static void hist_observe(struct hist *h, const struct bucket_def *defs,
                         size_t nb, unsigned r, uint64_t v)
{
  size_t i = 0;

  while (i < nb && v > defs[i].bound)
    i++;
  atomic_fetch_add_explicit(&h->bucket[r][i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->sum[r], v, memory_order_relaxed);
}

#define NSIZE (sizeof size_buckets / sizeof size_buckets[0])
_Static_assert(NDUR <= MAX_BUCKETS && NSIZE <= MAX_BUCKETS, "MAX_BUCKETS");

void metrics_observe(struct metrics *m, const struct metrics_obs *o)
{
  unsigned r = route_slot(m, o->route);

  atomic_fetch_add_explicit(&m->requests[r][op_slot(o->op)][fmt_slot(o->format)]
                                        [status_slot(o->status)],
                            1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->bytes_in, o->in_bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->bytes_out, o->out_bytes, memory_order_relaxed);
  hist_observe(&m->duration, dur_buckets, NDUR, r, o->duration_ns);
  hist_observe(&m->req_size, size_buckets, NSIZE, r, o->in_bytes);
  hist_observe(&m->resp_size, size_buckets, NSIZE, r, o->out_bytes);
}

/* ------------------------------------------------------------------ */
/* Rendering                                                          */
/* ------------------------------------------------------------------ */

/* An output buffer that remembers its first error, so that the rendering
 * code reads as a list of lines. */
struct out {
  struct api_buf *b;
  int err;
};

static void outf(struct out *o, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));

static void outf(struct out *o, const char *fmt, ...)
{
  char small[256];
  va_list ap;
  int n;

  if (o->err)
    return;
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  /* Only short pieces (names, numbers) come here; help texts and label
   * values go through outs() and out_label(). */
  if (n < 0 || (size_t)n >= sizeof small)
    o->err = RD_E_INVALID;
  else
    o->err = api_buf_append(o->b, small, (size_t)n);
}

/* A label value with \, " and newline escaped, as the format requires. */
static void out_label(struct out *o, const char *v)
{
  for (; !o->err && *v != '\0'; v++) {
    if (*v == '\\')
      o->err = api_buf_append(o->b, "\\\\", 2);
    else if (*v == '"')
      o->err = api_buf_append(o->b, "\\\"", 2);
    else if (*v == '\n')
      o->err = api_buf_append(o->b, "\\n", 2);
    else
      o->err = api_buf_append(o->b, v, 1);
  }
}

static void outs(struct out *o, const char *s)
{
  if (!o->err)
    o->err = api_buf_puts(o->b, s);
}

static void out_family(struct out *o, const char *name, const char *type,
                       const char *help)
{
  outs(o, "# HELP ");
  outs(o, name);
  outs(o, " ");
  outs(o, help);
  outs(o, "\n# TYPE ");
  outs(o, name);
  outs(o, " ");
  outs(o, type);
  outs(o, "\n");
}

/* Nanoseconds as decimal seconds, exact, without trailing zeros. */
static void out_seconds(struct out *o, uint64_t sec, uint64_t ns)
{
  char frac[24];
  int n;

  if (ns == 0) {
    outf(o, "%llu", (unsigned long long)sec);
    return;
  }
  snprintf(frac, sizeof frac, "%09llu", (unsigned long long)ns);
  for (n = 9; n > 0 && frac[n - 1] == '0'; n--)
    frac[n - 1] = '\0';
  outf(o, "%llu.%s", (unsigned long long)sec, frac);
}

static uint64_t load(const atomic_uint_least64_t *a)
{
  return atomic_load_explicit(a, memory_order_relaxed);
}

static const char *route_label(const struct metrics *m, unsigned r)
{
  return r < m->nroutes ? m->routes[r] : "none";
}

/* The route slots in output order: registered routes, then "none". */
static int next_route(const struct metrics *m, int r)
{
  if (r < 0)
    return m->nroutes > 0 ? 0 : METRICS_MAX_ROUTES;
  if ((unsigned)r + 1 < m->nroutes)
    return r + 1;
  return (unsigned)r == METRICS_MAX_ROUTES ? -1 : METRICS_MAX_ROUTES;
}

static void render_requests(const struct metrics *m, struct out *o)
{
  out_family(o, "reduced_requests_total", "counter",
             "HTTP requests answered, by route pattern, operator, request "
             "body format and status.");
  for (int r = next_route(m, -1); r >= 0; r = next_route(m, r))
    for (unsigned op = 0; op < NOP; op++)
      for (unsigned f = 0; f < NFMT; f++)
        for (unsigned s = 0; s < NSTATUS; s++) {
          uint64_t v = load(&m->requests[r][op][f][s]);
          if (v == 0)
            continue;
          outf(o, "reduced_requests_total{route=\"");
          out_label(o, route_label(m, (unsigned)r));
          outf(o, "\",op=\"%s\",format=\"%s\",status=\"", op_label(op),
               fmt_labels[f]);
          if (s < NSTATUS_NUM)
            outf(o, "%d", statuses[s]);
          else
            outf(o, "%s", s == STATUS_OTHER ? "other" : "none");
          outf(o, "\"} %llu\n", (unsigned long long)v);
        }
}

static void render_hist(const struct metrics *m, struct out *o,
                        const struct hist *h, const struct bucket_def *defs,
                        size_t nb, const char *name, const char *help,
                        int seconds)
{
  out_family(o, name, "histogram", help);
  for (int r = next_route(m, -1); r >= 0; r = next_route(m, r)) {
    uint64_t cum = 0, sum;

    for (size_t i = 0; i <= nb; i++)
      cum += load(&h->bucket[r][i]);
    if (cum == 0)
      continue; /* no request on this route yet */
    cum = 0;
    for (size_t i = 0; i <= nb; i++) {
      cum += load(&h->bucket[r][i]);
      outf(o, "%s_bucket{route=\"", name);
      out_label(o, route_label(m, (unsigned)r));
      outf(o, "\",le=\"%s\"} %llu\n", i < nb ? defs[i].le : "+Inf",
           (unsigned long long)cum);
    }
    sum = load(&h->sum[r]);
    outf(o, "%s_sum{route=\"", name);
    out_label(o, route_label(m, (unsigned)r));
    outf(o, "\"} ");
    if (seconds)
      out_seconds(o, sum / 1000000000u, sum % 1000000000u);
    else
      outf(o, "%llu", (unsigned long long)sum);
    outf(o, "\n%s_count{route=\"", name);
    out_label(o, route_label(m, (unsigned)r));
    outf(o, "\"} %llu\n", (unsigned long long)cum);
  }
}

/* The queue wait histogram, without labels. */
static void render_qwait(const struct metrics *m, struct out *o)
{
  uint64_t cum = 0, sum = load(&m->qwait_sum);

  out_family(o, "reduced_queue_wait_seconds", "histogram",
             "Time admitted requests waited for admission.");
  for (size_t i = 0; i <= NDUR; i++) {
    cum += load(&m->qwait[i]);
    outf(o, "reduced_queue_wait_seconds_bucket{le=\"%s\"} %llu\n",
         i < NDUR ? dur_buckets[i].le : "+Inf", (unsigned long long)cum);
  }
  outf(o, "reduced_queue_wait_seconds_sum ");
  out_seconds(o, sum / 1000000000u, sum % 1000000000u);
  outf(o, "\nreduced_queue_wait_seconds_count %llu\n", (unsigned long long)cum);
}

int metrics_render(const struct metrics *m, struct api_buf *b)
{
  struct out o = { b, 0 };
  struct api_tmem_stats tm;
  long v;

  render_requests(m, &o);
  render_hist(m, &o, &m->duration, dur_buckets, NDUR,
              "reduced_request_duration_seconds",
              "Time from the start of a request to its response, by route.", 1);
  render_hist(m, &o, &m->req_size, size_buckets, NSIZE,
              "reduced_request_size_bytes", "Request body sizes, by route.", 0);
  render_hist(m, &o, &m->resp_size, size_buckets, NSIZE,
              "reduced_response_size_bytes", "Response body sizes, by route.",
              0);

  out_family(&o, "reduced_bytes_received_total", "counter",
             "Request body bytes received.");
  outf(&o, "reduced_bytes_received_total %llu\n",
       (unsigned long long)load(&m->bytes_in));
  out_family(&o, "reduced_bytes_sent_total", "counter",
             "Response body bytes sent.");
  outf(&o, "reduced_bytes_sent_total %llu\n",
       (unsigned long long)load(&m->bytes_out));

  out_family(&o, "reduced_requests_in_flight", "gauge",
             "Requests received and not yet completed (a scrape counts "
             "itself).");
  v = atomic_load_explicit(&m->inflight, memory_order_relaxed);
  outf(&o, "reduced_requests_in_flight %ld\n", v);
  out_family(&o, "reduced_requests_queued", "gauge",
             "Admitted requests waiting for a worker thread.");
  v = atomic_load_explicit(&m->queued, memory_order_relaxed);
  outf(&o, "reduced_requests_queued %ld\n", v);
  out_family(&o, "reduced_requests_waiting", "gauge",
             "Requests waiting for admission (--max-inflight-bytes), their "
             "connections suspended before the body.");
  v = atomic_load_explicit(&m->waiting, memory_order_relaxed);
  outf(&o, "reduced_requests_waiting %ld\n", v);
  out_family(&o, "reduced_inflight_bytes", "gauge",
             "Memory admitted requests hold or are planned to need, bytes.");
  outf(&o, "reduced_inflight_bytes %llu\n",
       (unsigned long long)load(&m->inflight_bytes));
  render_qwait(m, &o);
  out_family(&o, "reduced_reload_failures_total", "counter",
             "SIGHUP reloads of --api-key-file or --tls-cert/--tls-key that "
             "kept the old secrets.");
  outf(&o, "reduced_reload_failures_total %llu\n",
       (unsigned long long)load(&m->reload_failures));
  out_family(&o, "reduced_worker_threads", "gauge",
             "Size of the worker thread pool (--threads).");
  outf(&o, "reduced_worker_threads %u\n", m->threads);
  out_family(&o, "reduced_max_pending", "gauge",
             "Requests admitted or waiting for admission at once before "
             "503 (--max-pending).");
  outf(&o, "reduced_max_pending %llu\n", (unsigned long long)m->max_pending);
  api_tmem_stats(&tm);
  out_family(&o, "reduced_buffer_cache_bytes", "gauge",
             "Freed buffers of 256 KiB and up kept resident for the next "
             "requests (--buffer-cache-bytes), bytes.");
  outf(&o, "reduced_buffer_cache_bytes %zu\n", tm.cached_bytes);
  out_family(&o, "reduced_buffer_cache_hits_total", "counter",
             "Buffers of 256 KiB and up taken from the cache.");
  outf(&o, "reduced_buffer_cache_hits_total %llu\n",
       (unsigned long long)tm.hits);
  out_family(&o, "reduced_buffer_cache_misses_total", "counter",
             "Buffers of 256 KiB and up that mapped fresh pages.");
  outf(&o, "reduced_buffer_cache_misses_total %llu\n",
       (unsigned long long)tm.misses);

  out_family(&o, "process_start_time_seconds", "gauge",
             "Start time of the process since the Unix epoch in seconds.");
  outf(&o, "process_start_time_seconds ");
  out_seconds(&o, (uint64_t)m->start.tv_sec, (uint64_t)m->start.tv_nsec);
  outf(&o, "\n");
  out_family(&o, "reduced_build_info", "gauge",
             "Always 1; the labels describe the build.");
  outf(&o, "reduced_build_info{version=\"");
  out_label(&o, PACKAGE_VERSION);
  outf(&o, "\"} 1\n");
  return o.err;
}
