/* http.c - routes, request checks, body accumulation and responses, with
 * libmicrohttpd driven by the libuv loop.
 *
 * Threads: MHD runs in external epoll mode, so MHD_run() - and with it the
 * access handler, the completed callback and the MHD logger - runs only on
 * the loop thread, as do the poll/timer callbacks and the job's done
 * callback.  The pool threads touch only the job inside a request context,
 * never MHD or this file's state.
 *
 * Life of POST /v1/reduce:
 *   URI logged    (before the headers) keep the raw query string
 *   first call    route, method, Content-Type, Accept, Content-Length,
 *                 for raw bodies the query and the plan (so bad parameters
 *                 and too-large tensors are refused before the body),
 *                 admission; allocate the body buffer or open the stream
 *   upload calls  copy (or, over --max-body when chunked, discard); .npy:
 *                 the header first, then plan as for raw; streamed bodies
 *                 go to job_stream_write(), and when it takes less the
 *                 connection is suspended with the rest left unprocessed
 *                 until a feed finishes (backpressure)
 *   final call    suspend the connection and queue the job (a stream:
 *                 once its last feed is done, close it)
 *   job done      resume, MHD_run() -> the handler is re-entered and queues
 *                 the response
 *   completed     log the request line, free the context (or leave that
 *                 to the pool job's callback while one is in flight)
 * Errors found mid-upload (a bad .npy header, too many bytes) cannot be
 * answered before the final call: the rest of the body is discarded.
 */
#include "config.h"   /* autoconf */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "binary.h"
#include "http.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "openapi.h"
#include "v2.h"

/* Per-connection memory: bounds the request headers and each upload chunk.
 * libmicrohttpd zeroes the whole pool for every request, so a large pool
 * costs more than the copies it saves: measured with wrk on small requests,
 * 256 KiB gave 29k requests/s and 32 KiB 48k, while a 256 MiB raw upload
 * took 0.15-0.17 s either way. */
#define HTTP_CONN_MEMORY (32 * 1024)
/* First allocation for a chunked body; it doubles up to --max-body. */
#define HTTP_CHUNKED_START (64 * 1024)
#define HTTP_RETRY_AFTER "1"
#define HTTP_AUTH_CHALLENGE "Bearer realm=\"reduced\""
/* Largest --api-key-file, --tls-cert or --tls-key read into memory. */
#define HTTP_FILE_MAX (1024 * 1024)
#define HTTP_ID_MAX 128
#define HTTP_LOG_PATH_MAX 200
/* Each of a stream's two buffers: bounds a streamed request's memory (with
 * the output) and sets how much work one feed hands to the pool. */
#define HTTP_STREAM_BUF (4u << 20)
/* /v2 infer: a JSON header up to this size is parsed on the loop thread as
 * soon as it has arrived, so that the data blob after it can stream; a
 * larger header means the whole body is buffered and decoded on the pool. */
#define HTTP_V2_HEADER_MAX (64u * 1024)

#ifdef WORDS_BIGENDIAN
#define HOST_BIG 1
#else
#define HOST_BIG 0
#endif

#define container_of(ptr, type, member) \
  ((type *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* Request context                                                    */
/* ------------------------------------------------------------------ */

enum req_state {
  RS_NEW,         /* first call not finished */
  RS_READING,     /* accumulating a reduce body */
  RS_RUNNING,     /* suspended; the job owns the CPU work */
  RS_DONE,        /* job finished, connection resumed, response not queued */
  RS_ANSWERED     /* response queued */
};

struct req {
  struct job job;                  /* embedded; see job.h for its lifetime */
  struct http_server *srv;
  struct MHD_Connection *conn;
  enum req_state state;
  int admitted;                    /* counted in srv->pending */
  int orphaned;                    /* completed while running: done_cb frees */
  int status;                      /* queued status; 0 = none */
  size_t out_bytes;                /* queued body length */
  uint64_t in_bytes;               /* body bytes received, kept or not */
  uint64_t t0_ns;
  char *body;
  size_t body_len, body_cap;
  uint64_t expect_len;             /* Content-Length, or UINT64_MAX: chunked */
  int too_large;                   /* chunked body passed --max-body */
  int fresh;                       /* from uri_log_cb, handler not called */
  char *query;                     /* raw query string, or NULL */
  int query_lost;                  /* out of memory copying it */
  int in_fmt;                      /* enum api_format of the body */
  /* Binary bodies. */
  struct api_request qreq;         /* query parameters */
  int planned;                     /* the job is set up (npy: header read) */
  int streaming;                   /* body goes to job_stream_write() */
  int suspended;                   /* waiting for a feed to finish */
  uint64_t data_need;              /* tensor bytes the plan expects */
  uint64_t data_bytes;             /* tensor bytes received */
  unsigned char *npy_hdr;          /* .npy header bytes so far */
  size_t npy_len, npy_want;
  struct api_npy npy;
  int deferred;                    /* an error to answer at the final call */
  struct rd_error derr;
  /* /v2 (Open Inference Protocol): errors in its form. */
  int v2;
  struct api_v2_route v2rt;
  size_t v2_hdr_len;               /* Inference-Header-Content-Length */
  int v2_parsed;                   /* the JSON header is decoded */
  uint64_t v2_prefix;              /* bytes before the data blob */
  unsigned char *v2_buf;           /* the header (and a leading axes blob) */
  size_t v2_len;
  char id[HTTP_ID_MAX + 1];
  char method[16];
  char path[HTTP_LOG_PATH_MAX + 1];
  const char *ctype;               /* Content-Type; NULL: application/json */
  unsigned route;                  /* index in routes[], METRICS_ROUTE_NONE */
  int format;                      /* enum metrics_format of the body */
  int route_op;                    /* enum rd_op a /v2 model path names */
};

enum route_kind {
  RT_REDUCE, RT_OPS, RT_HEALTHZ, RT_READYZ, RT_METRICS, RT_OPENAPI, RT_V2
};

/* Every route the daemon serves, as its path or (/v2) path template: the
 * metrics' route label values, and the list tests/integration/t_openapi.sh
 * checks against api/openapi.yaml both ways. */
struct route {
  const char *path;
  enum route_kind kind;
  const char *allow;               /* the Allow header of a 405 */
  int v2kind;                      /* RT_V2: enum api_v2_kind */
  int v2versioned;                 /* RT_V2: has /versions/{version} */
};

static const struct route routes[] = {
  { "/v1/reduce", RT_REDUCE, "POST", 0, 0 },
  { "/v1/ops", RT_OPS, "GET, HEAD", 0, 0 },
  { "/healthz", RT_HEALTHZ, "GET, HEAD", 0, 0 },
  { "/readyz", RT_READYZ, "GET, HEAD", 0, 0 },
  { "/metrics", RT_METRICS, "GET, HEAD", 0, 0 },
  { "/openapi.yaml", RT_OPENAPI, "GET, HEAD", 0, 0 },
  /* Matched by api_v2_route_parse(), then found here by kind. */
  { "/v2", RT_V2, "GET, HEAD", API_V2_SERVER_META, 0 },
  { "/v2/health/live", RT_V2, "GET, HEAD", API_V2_LIVE, 0 },
  { "/v2/health/ready", RT_V2, "GET, HEAD", API_V2_READY, 0 },
  { "/v2/models/{model}", RT_V2, "GET, HEAD", API_V2_MODEL_META, 0 },
  { "/v2/models/{model}/versions/{version}", RT_V2, "GET, HEAD",
    API_V2_MODEL_META, 1 },
  { "/v2/models/{model}/ready", RT_V2, "GET, HEAD", API_V2_MODEL_READY, 0 },
  { "/v2/models/{model}/versions/{version}/ready", RT_V2, "GET, HEAD",
    API_V2_MODEL_READY, 1 },
  { "/v2/models/{model}/infer", RT_V2, "POST", API_V2_INFER, 0 },
  { "/v2/models/{model}/versions/{version}/infer", RT_V2, "POST",
    API_V2_INFER, 1 },
};

static const char body_health[] = "{\"status\":\"ok\"}";
static const char body_ready[] = "{\"status\":\"ready\"}";
static const char body_draining[] =
  "{\"error\":{\"code\":\"DRAINING\",\"message\":\"the server is shutting "
  "down\"}}";

static const char body_v2_live[] = "{\"live\":true}";
static const char body_v2_ready[] = "{\"ready\":true}";
static const char body_v2_draining[] =
  "{\"error\":\"DRAINING: the server is shutting down\"}";
static const char body_v2_nomem[] =
  "{\"error\":\"OUT_OF_MEMORY: out of memory\"}";

static void run_mhd(struct http_server *s);

static uint64_t
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copies `src` for the log: printable ASCII only, bounded. */
static void
copy_printable(char *dst, size_t cap, const char *src)
{
  size_t i = 0;

  for (; src != NULL && src[i] != '\0' && i + 1 < cap; i++)
    dst[i] = (src[i] > 0x20 && src[i] < 0x7f) ? src[i] : '?';
  dst[i] = '\0';
}

/* A client id is echoed only if it is 1-128 of [A-Za-z0-9._:-]. */
static int
valid_request_id(const char *id)
{
  size_t n = 0;

  if (id == NULL)
    return 0;
  for (; id[n] != '\0'; n++) {
    char ch = id[n];
    if (n >= HTTP_ID_MAX)
      return 0;
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
          (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' ||
          ch == '-'))
      return 0;
  }
  return n > 0;
}

/* splitmix64: distinct counters give distinct, unguessable-looking ids. */
static uint64_t
mix64(uint64_t x)
{
  x += UINT64_C(0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static void
set_request_id(struct http_server *s, struct req *r)
{
  const char *id = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                               "X-Request-Id");
  if (valid_request_id(id)) {
    snprintf(r->id, sizeof r->id, "%s", id);
    return;
  }
  snprintf(r->id, sizeof r->id, "%016llx",
           (unsigned long long)mix64(s->id_seed + s->id_counter++));
}

/* ------------------------------------------------------------------ */
/* Responses (loop thread, inside the access handler)                 */
/* ------------------------------------------------------------------ */

/* Queues `body` with the headers every response carries.  `must_free`:
 * `body` is malloc'ed and now belongs to MHD (or is freed here). */
static enum MHD_Result
respond_as(struct req *r, int status, const char *body, size_t len,
           int must_free, const char *allow, const struct job *result)
{
  struct MHD_Response *resp;
  enum MHD_Result ret;
  int binary = result != NULL && result->reply_fmt != API_FMT_JSON &&
               !result->v2;
  int v2bin = result != NULL && result->reply_fmt != API_FMT_JSON &&
              result->v2;
  const char *ctype = result != NULL
                      ? api_format_media_type(result->reply_fmt) : NULL;
  char ihcl[24];

  resp = MHD_create_response_from_buffer(len, (void *)body,
                                         must_free ? MHD_RESPMEM_MUST_FREE
                                                   : MHD_RESPMEM_PERSISTENT);
  if (resp == NULL) {
    if (must_free)
      free((void *)body);
    LOG_ERROR("request id=%s: cannot create a response", r->id);
    return MHD_NO;   /* closes the connection */
  }
  snprintf(ihcl, sizeof ihcl, "%zu", v2bin ? result->reply_json_len : 0);
  if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                              ctype != NULL ? ctype
                              : r->ctype != NULL ? r->ctype
                                                 : "application/json")
      != MHD_YES ||
      (v2bin && MHD_add_response_header(resp, "Inference-Header-Content-"
                                        "Length", ihcl) != MHD_YES) ||
      (binary &&
       (MHD_add_response_header(resp, "Tensor-Dtype",
                                result->reply_dtype) != MHD_YES ||
        MHD_add_response_header(resp, "Tensor-Shape",
                                result->reply_shape) != MHD_YES)) ||
      MHD_add_response_header(resp, "X-Request-Id", r->id) != MHD_YES ||
      (allow != NULL &&
       MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES) ||
      (status == MHD_HTTP_SERVICE_UNAVAILABLE &&
       MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER,
                               HTTP_RETRY_AFTER) != MHD_YES) ||
      (status == MHD_HTTP_UNAUTHORIZED &&
       MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                               HTTP_AUTH_CHALLENGE) != MHD_YES) ||
      /* While draining, do not invite more requests on this connection. */
      (r->srv->draining &&
       MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
                               "close") != MHD_YES)) {
    MHD_destroy_response(resp);
    LOG_ERROR("request id=%s: cannot add response headers", r->id);
    return MHD_NO;
  }
  ret = MHD_queue_response(r->conn, (unsigned int)status, resp);
  MHD_destroy_response(resp);
  r->state = RS_ANSWERED;
  if (ret == MHD_YES) {
    r->status = status;
    r->out_bytes = len;
  }
  return ret;
}

static enum MHD_Result
respond(struct req *r, int status, const char *body, size_t len,
        int must_free, const char *allow)
{
  return respond_as(r, status, body, len, must_free, allow, NULL);
}

/* Queues {"error":{...}} with the status api_http_status() gives `code`. */
static enum MHD_Result
respond_error(struct req *r, const char *allow, int code, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

static enum MHD_Result
respond_error(struct req *r, const char *allow, int code, const char *fmt, ...)
{
  struct rd_error err;
  struct api_buf b;
  char *body;
  size_t len;
  va_list ap;

  err.code = code;
  va_start(ap, fmt);
  vsnprintf(err.msg, sizeof err.msg, fmt, ap);
  va_end(ap);

  api_buf_init(&b);
  if ((r->v2 ? api_v2_encode_error(&err, &b)
             : api_json_encode_error(&err, &b)) != 0) {
    const char *fallback;
    api_buf_free(&b);
    if (r->v2)
      return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_v2_nomem,
                     sizeof body_v2_nomem - 1, 0, NULL);
    fallback = job_nomem_body(&len);
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, fallback, len, 0, NULL);
  }
  body = api_buf_steal(&b, &len);
  return respond(r, api_http_status(code), body, len, 1, allow);
}

/* ------------------------------------------------------------------ */
/* Header checks                                                      */
/* ------------------------------------------------------------------ */

/* Strict Content-Length: digits only, no overflow. */
static int
parse_length(const char *s, uint64_t *out)
{
  uint64_t v = 0;

  if (s == NULL || *s == '\0')
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 0;
}

static int
is_chunked(struct MHD_Connection *conn)
{
  const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_TRANSFER_ENCODING);
  return te != NULL && strcasestr(te, "chunked") != NULL;
}

/* Chunked, or a Content-Length other than 0. */
static int
has_body(struct MHD_Connection *conn)
{
  const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_LENGTH);
  uint64_t len;

  if (is_chunked(conn))
    return 1;
  return cl != NULL && (parse_length(cl, &len) != 0 || len > 0);
}

/* ------------------------------------------------------------------ */
/* POST /v1/reduce                                                    */
/* ------------------------------------------------------------------ */

/* Loop thread: frees a request context (no pool work may hold it). */
static void
req_free(struct req *r)
{
  job_release(&r->job);
  free(r->body);
  free(r->query);
  free(r->npy_hdr);
  free(r->v2_buf);
  free(r);
}

/* "[3,2]" for the input shape of a plan (messages). */
static void
in_shape_text(const struct rd_plan *p, char *buf, size_t cap)
{
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < p->in_rank && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? "," : "",
                          (long long)p->in_shape[i]);
  if (n < cap)
    snprintf(buf + n, cap - n, "]");
}

static enum MHD_Result
respond_rd_error(struct req *r, const struct rd_error *err)
{
  return respond_error(r, NULL, err->code, "%s", err->msg);
}

/* Remembers the first error found mid-upload (answered at the final call,
 * the rest of the body is discarded until then). */
static void
defer_error(struct req *r, const struct rd_error *err)
{
  if (r->deferred)
    return;
  r->deferred = 1;
  r->derr = *err;
}

static void stream_wake_cb(struct job *j);

/* The plan is known: check the declared size and the response format,
 * then allocate the whole body (up to --buffer-max) or open a stream. */
static int
binary_ready(struct http_server *s, struct req *r, struct rd_error *err)
{
  const struct conf *c = s->conf;
  const struct rd_plan *p = &r->job.lplan;
  char shape[RD_MAX_RANK * 21 + 3];
  int rc, fmt;

  in_shape_text(p, shape, sizeof shape);
  r->data_need = p->in_bytes;
  if (p->in_bytes > c->max_body)
    return api_fail(err, API_E_BODY_TOO_LARGE, "shape %s of %s needs %llu "
                    "bytes, above the limit of %llu bytes (--max-body)",
                    shape, rd_dtype_name(p->dtype),
                    (unsigned long long)p->in_bytes,
                    (unsigned long long)c->max_body);
  /* /v2 answers JSON or binary as the request says, not by Accept. */
  if (!r->v2 && (rc = api_accept_pick(&r->job.accept, p->out_dtype, &fmt, err)))
    return rc;
  if (r->expect_len != UINT64_MAX) {
    uint64_t hdr = r->in_fmt == API_FMT_NPY ? r->npy.header_len
                   : r->v2 ? r->v2_prefix : 0;
    if (r->expect_len - hdr != p->in_bytes) {
      if (r->in_fmt == API_FMT_NPY)
        return api_fail(err, RD_E_STREAM, "the .npy header declares shape %s "
                        "of %s: %llu data bytes; Content-Length %llu leaves "
                        "%llu after the %llu-byte header", shape,
                        rd_dtype_name(p->dtype),
                        (unsigned long long)p->in_bytes,
                        (unsigned long long)r->expect_len,
                        (unsigned long long)(r->expect_len - hdr),
                        (unsigned long long)hdr);
      return api_fail(err, RD_E_STREAM, "shape %s of %s needs exactly %llu "
                      "bytes; Content-Length is %llu", shape,
                      rd_dtype_name(p->dtype),
                      (unsigned long long)p->in_bytes,
                      (unsigned long long)r->expect_len);
    }
  }
  r->planned = 1;
  r->job.in_fmt = r->in_fmt;
  if (p->in_bytes <= c->buffer_max) {
    r->body_cap = (size_t)p->in_bytes;
    r->body = malloc(r->body_cap > 0 ? r->body_cap : 1);
    if (r->body == NULL)
      return api_fail(err, API_E_OVERLOADED, "cannot allocate %zu bytes for "
                      "the body; retry later", r->body_cap);
    return 0;
  }
  r->streaming = 1;
  LOG_DEBUG("request id=%s: streaming %llu tensor bytes", r->id,
            (unsigned long long)p->in_bytes);
  if (job_stream_open(&r->job, s->loop, HTTP_STREAM_BUF, stream_wake_cb) != 0)
    return api_fail(err, API_E_OVERLOADED, "cannot allocate the stream "
                    "buffers and the output; retry later");
  return 0;
}

/* The body checks both POST routes make before reading (MHD thread).
 * Each returns 0 to go on, or 1 with *res the queued answer; errors take
 * the route's form (respond_error() follows r->v2). */

/* Content-Length or chunked Transfer-Encoding, within --max-body; sets
 * r->expect_len. */
static int
body_length(struct http_server *s, struct req *r, int *chunked,
            uint64_t *len, enum MHD_Result *res)
{
  const struct conf *c = s->conf;
  const char *cl;

  *chunked = is_chunked(r->conn);
  cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (!*chunked) {
    if (cl == NULL) {
      *res = respond_error(r, NULL, API_E_LENGTH_REQUIRED,
                           "a POST body needs Content-Length or chunked "
                           "Transfer-Encoding");
      return 1;
    }
    if (parse_length(cl, len) != 0) {
      *res = respond_error(r, NULL, API_E_LENGTH_REQUIRED,
                           "invalid Content-Length '%.32s'", cl);
      return 1;
    }
    if (*len > c->max_body) {
      *res = respond_error(r, NULL, API_E_BODY_TOO_LARGE,
                           "Content-Length %llu is above the limit of %llu "
                           "bytes (--max-body)", (unsigned long long)*len,
                           (unsigned long long)c->max_body);
      return 1;
    }
  }
  r->expect_len = *chunked ? UINT64_MAX : *len;
  return 0;
}

/* Not while draining (503 DRAINING in the route's form), nor beyond
 * --max-pending. */
static int
admission(struct http_server *s, struct req *r, enum MHD_Result *res)
{
  const struct conf *c = s->conf;

  if (s->draining) {
    *res = r->v2 ? respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_v2_draining,
                           sizeof body_v2_draining - 1, 0, NULL)
                 : respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_draining,
                           sizeof body_draining - 1, 0, NULL);
    return 1;
  }
  if (s->pending >= c->max_pending) {
    *res = respond_error(r, NULL, API_E_OVERLOADED,
                         "%zu requests are already in progress "
                         "(--max-pending %llu); retry later", s->pending,
                         (unsigned long long)c->max_pending);
    return 1;
  }
  return 0;
}

/* The buffer of a JSON body: allocated once when the length is known;
 * chunked grows geometrically from HTTP_CHUNKED_START. */
static int
body_alloc(struct http_server *s, struct req *r, int chunked, uint64_t len,
           enum MHD_Result *res)
{
  const struct conf *c = s->conf;

  r->body_cap = chunked ? (size_t)(c->max_body < HTTP_CHUNKED_START
                                   ? c->max_body : HTTP_CHUNKED_START)
                        : (size_t)len;
  r->body = malloc(r->body_cap > 0 ? r->body_cap : 1);
  if (r->body == NULL) {
    *res = respond_error(r, NULL, API_E_OVERLOADED,
                         "cannot allocate %zu bytes for the body; retry "
                         "later", r->body_cap);
    return 1;
  }
  return 0;
}

/* First call: every check that can refuse the request before its body. */
static enum MHD_Result
reduce_begin(struct http_server *s, struct req *r)
{
  enum MHD_Result res;
  struct rd_error err;
  const char *ct;
  uint64_t len = 0;
  int chunked;

  ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_TYPE);
  r->in_fmt = api_format_of_content_type(ct);
  if (r->in_fmt == API_FMT_NONE)
    return respond_error(r, NULL, API_E_MEDIA_TYPE,
                         "Content-Type must be application/json, "
                         "application/octet-stream or application/x-npy, "
                         "not '%.64s'", ct ? ct : "(none)");
  r->format = r->in_fmt == API_FMT_RAW   ? METRICS_FMT_RAW
              : r->in_fmt == API_FMT_NPY ? METRICS_FMT_NPY
                                         : METRICS_FMT_JSON;
  memset(&err, 0, sizeof err);
  if (api_accept_parse(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_ACCEPT),
                       r->in_fmt, &r->job.accept, &err) != 0)
    return respond_rd_error(r, &err);

  if (body_length(s, r, &chunked, &len, &res) != 0)
    return res;

  if (r->in_fmt != API_FMT_JSON) {
    if (r->query_lost)
      return respond_error(r, NULL, API_E_OVERLOADED, "out of memory while "
                           "reading the query string; retry later");
    if (api_query_parse(r->query, r->in_fmt, &r->qreq, &err) != 0)
      return respond_rd_error(r, &err);
    if (r->in_fmt == API_FMT_RAW &&
        job_binary_setup(&r->job, &r->qreq, 0, HOST_BIG, &err) != 0)
      return respond_rd_error(r, &err);
  }

  if (admission(s, r, &res) != 0)
    return res;

  if (r->in_fmt == API_FMT_RAW) {
    if (binary_ready(s, r, &err) != 0)
      return respond_rd_error(r, &err);
  } else if (r->in_fmt == API_FMT_JSON) {
    if (body_alloc(s, r, chunked, len, &res) != 0)
      return res;
  }
  /* .npy: planned once its header has arrived. */
  r->admitted = 1;
  s->pending++;
  r->state = RS_READING;
  return MHD_YES;
}

/* Upload call: keep the bytes, or count and drop them once over the cap. */
static void
reduce_upload(struct http_server *s, struct req *r, const char *data,
              size_t n)
{
  uint64_t max = s->conf->max_body;

  r->in_bytes += n;
  if (r->too_large)
    return;
  if ((uint64_t)r->body_len + n > max) {
    /* Only possible when chunked (MHD enforces Content-Length). */
    r->too_large = 1;
    free(r->body);
    r->body = NULL;
    r->body_len = r->body_cap = 0;
    return;
  }
  if (r->body_len + n > r->body_cap) {
    size_t cap = r->body_cap;
    char *p;
    while (cap < r->body_len + n)
      cap = cap > (size_t)max / 2 ? (size_t)max : cap * 2;
    p = realloc(r->body, cap);
    if (p == NULL) {
      /* Answered at the final call as out of memory. */
      r->too_large = -1;
      free(r->body);
      r->body = NULL;
      r->body_len = r->body_cap = 0;
      return;
    }
    r->body = p;
    r->body_cap = cap;
  }
  memcpy(r->body + r->body_len, data, n);
  r->body_len += n;
}

/* Upload call, .npy before its data: collects the header, then plans.
 * Returns the bytes it took from `data`. */
static size_t
npy_header_upload(struct http_server *s, struct req *r, const char *data,
                  size_t n)
{
  struct rd_error err;
  size_t taken = 0;

  memset(&err, 0, sizeof err);
  while (taken < n && !r->planned && !r->deferred) {
    size_t c;
    int rc;
    if (r->npy_len == r->npy_want) {
      /* The buffer always holds npy_want bytes: API_NPY_PREFIX first,
       * then what the header length field says (bounded by the parser). */
      size_t want = r->npy_want == 0 ? API_NPY_PREFIX : r->npy_want;
      unsigned char *p = realloc(r->npy_hdr, want);
      if (p == NULL) {
        api_fail(&err, API_E_OVERLOADED, "out of memory while reading the "
                 ".npy header; retry later");
        defer_error(r, &err);
        break;
      }
      r->npy_hdr = p;
      r->npy_want = want;
    }
    c = r->npy_want - r->npy_len;
    if (c > n - taken)
      c = n - taken;
    memcpy(r->npy_hdr + r->npy_len, data + taken, c);
    r->npy_len += c;
    taken += c;
    if (r->npy_len < r->npy_want)
      break;
    rc = api_npy_parse(r->npy_hdr, r->npy_len, &r->npy, &err);
    if (rc > 0) {
      unsigned char *p = realloc(r->npy_hdr, (size_t)rc);
      if (p == NULL) {
        api_fail(&err, API_E_OVERLOADED, "out of memory while reading the "
                 ".npy header; retry later");
        defer_error(r, &err);
        break;
      }
      r->npy_hdr = p;
      r->npy_want = (size_t)rc;
      continue;
    }
    if (rc < 0) {
      defer_error(r, &err);
      break;
    }
    r->qreq.params.dtype = r->npy.dtype;
    r->qreq.params.rank = r->npy.rank;
    memcpy(r->qreq.shape, r->npy.shape, sizeof r->npy.shape);
    if (job_binary_setup(&r->job, &r->qreq, r->npy.fortran, r->npy.swap,
                         &err) != 0 ||
        binary_ready(s, r, &err) != 0)
      defer_error(r, &err);
  }
  return taken;
}

/* Upload call of a /v2 body with blobs, before its data blob: collects the
 * JSON header (and an axes blob that precedes the data), decodes it here
 * on the loop thread (it is at most HTTP_V2_HEADER_MAX bytes), then plans
 * as for raw.  A body whose data blob is not last cannot stream: it is
 * switched to whole-body buffering (in_fmt JSON) and decoded on the pool.
 * Returns the bytes it took from `data`. */
static size_t
v2_header_upload(struct http_server *s, struct req *r, const char *data,
                 size_t n)
{
  struct api_v2_info *info = &r->job.v2info;
  struct rd_error err;
  size_t taken = 0, want, c;

  memset(&err, 0, sizeof err);
  want = r->v2_hdr_len + (r->v2_parsed && info->axes_blob
                          ? (size_t)info->axes_size : 0);
  c = want - r->v2_len < n ? want - r->v2_len : n;
  memcpy(r->v2_buf + r->v2_len, data, c);
  r->v2_len += c;
  taken = c;
  if (r->v2_len < want)
    return taken;

  if (!r->v2_parsed) {
    if (api_v2_decode_header((const char *)r->v2_buf, r->v2_hdr_len, 1,
                             r->v2_hdr_len / 2 + 1, &r->qreq, info,
                             &err) != 0) {
      defer_error(r, &err);
      return taken;
    }
    r->v2_parsed = 1;
    if (r->expect_len != UINT64_MAX &&
        r->expect_len - r->v2_hdr_len != info->blob_total) {
      api_fail(&err, RD_E_STREAM, "Content-Length %llu leaves %llu bytes "
               "after the %zu-byte JSON header; the inputs' "
               "binary_data_size add up to %llu",
               (unsigned long long)r->expect_len,
               (unsigned long long)(r->expect_len - r->v2_hdr_len),
               r->v2_hdr_len, (unsigned long long)info->blob_total);
      defer_error(r, &err);
      return taken;
    }
    if (!api_v2_streamable(info)) {
      size_t cap = r->expect_len != UINT64_MAX
                   ? (size_t)r->expect_len
                   : (size_t)(s->conf->max_body < HTTP_CHUNKED_START
                              ? s->conf->max_body : HTTP_CHUNKED_START);
      if (cap < r->v2_hdr_len)
        cap = r->v2_hdr_len;
      api_request_free(&r->qreq);
      r->body = malloc(cap > 0 ? cap : 1);
      if (r->body == NULL) {
        api_fail(&err, API_E_OVERLOADED, "cannot allocate %zu bytes for the "
                 "body; retry later", cap);
        defer_error(r, &err);
        return taken;
      }
      memcpy(r->body, r->v2_buf, r->v2_hdr_len);
      r->body_len = r->v2_hdr_len;
      r->body_cap = cap;
      r->in_fmt = API_FMT_JSON;
      return taken;
    }
    if (info->axes_blob) {
      unsigned char *p = realloc(r->v2_buf, r->v2_hdr_len +
                                 (size_t)info->axes_size + 1);
      if (p == NULL) {
        api_fail(&err, API_E_OVERLOADED, "out of memory while reading the "
                 "axes blob; retry later");
        defer_error(r, &err);
        return taken;
      }
      r->v2_buf = p;
      /* The axes blob may already be here. */
      return taken + v2_header_upload(s, r, data + taken, n - taken);
    }
  } else if (api_v2_set_axes(&r->qreq, info, r->v2_buf + r->v2_hdr_len,
                             &err) != 0) {
    defer_error(r, &err);
    return taken;
  }
  r->v2_prefix = r->v2_len;
  if (job_binary_setup(&r->job, &r->qreq, 0, HOST_BIG, &err) != 0 ||
      binary_ready(s, r, &err) != 0)
    defer_error(r, &err);
  return taken;
}

/* Upload call of a binary body.  Leaves in *n what it did not take; then
 * the connection is suspended until a feed frees a buffer. */
static void
binary_upload(struct http_server *s, struct req *r, const char *data,
              size_t *n)
{
  size_t left = *n, taken;

  *n = 0;
  if (!r->too_large && r->in_bytes + left > s->conf->max_body) {
    r->too_large = 1;   /* only when chunked */
  }
  if (!r->planned && !r->deferred && !r->too_large) {
    taken = r->v2 ? v2_header_upload(s, r, data, left)
                  : npy_header_upload(s, r, data, left);
    r->in_bytes += taken;
    data += taken;
    left -= taken;
    if (r->in_fmt == API_FMT_JSON) {
      /* A /v2 body that cannot stream: buffered whole from here on. */
      if (left > 0)
        reduce_upload(s, r, data, left);
      return;
    }
  }
  if (r->deferred || r->too_large || !r->planned ||
      r->data_bytes + left > r->data_need) {
    /* Discarded; a length error is answered at the final call. */
    r->in_bytes += left;
    r->data_bytes += left;
    return;
  }
  if (!r->streaming) {
    memcpy(r->body + r->data_bytes, data, left);
    taken = left;
  } else {
    taken = job_stream_write(&r->job, data, left);
  }
  r->in_bytes += taken;
  r->data_bytes += taken;
  if (taken < left) {
    *n = left - taken;
    r->suspended = 1;
    MHD_suspend_connection(r->conn);
  }
}

/* Loop thread: the job finished; wake the connection so that MHD re-enters
 * the handler, which queues the response. */
static void
reduce_done_cb(struct job *j)
{
  struct req *r = container_of(j, struct req, job);
  struct http_server *s = r->srv;

  if (r->orphaned) {
    /* Defensive: MHD never completes a suspended request, but if it did,
     * the context outlived it only for the job; free it now. */
    req_free(r);
    return;
  }
  /* The body is no longer needed; free it before the response goes out. */
  free(r->body);
  r->body = NULL;
  r->state = RS_DONE;
  MHD_resume_connection(r->conn);
  run_mhd(s);   /* required in external mode after a resume */
}

/* Loop thread: a feed of a streamed body finished. */
static void
stream_wake_cb(struct job *j)
{
  struct req *r = container_of(j, struct req, job);

  if (r->orphaned) {
    /* The client went away mid-body; the last pool work frees. */
    if (!job_busy(j))
      req_free(r);
    return;
  }
  if (r->suspended) {
    r->suspended = 0;
    MHD_resume_connection(r->conn);
    run_mhd(r->srv);
  }
}

/* Final call of a binary body. */
static enum MHD_Result
binary_submit(struct http_server *s, struct req *r)
{
  char shape[RD_MAX_RANK * 21 + 3];
  int rc;

  if (r->deferred)
    return respond_rd_error(r, &r->derr);
  if (!r->planned && r->v2)
    return respond_error(r, NULL, RD_E_STREAM, "the body ended after %llu "
                         "bytes, before the JSON header "
                         "(Inference-Header-Content-Length %zu) and the "
                         "blobs before the data", (unsigned long long)
                         r->in_bytes, r->v2_hdr_len);
  if (!r->planned)
    return respond_error(r, NULL, API_E_BAD_NPY, "the body ended after "
                         "%llu bytes, inside the .npy header (truncated)",
                         (unsigned long long)r->in_bytes);
  if (r->data_bytes != r->data_need) {
    in_shape_text(&r->job.lplan, shape, sizeof shape);
    return respond_error(r, NULL, RD_E_STREAM, "shape %s of %s needs %llu "
                         "bytes%s; received %llu",
                         shape, rd_dtype_name(r->job.lplan.dtype),
                         (unsigned long long)r->data_need,
                         r->in_fmt == API_FMT_NPY ? " after the .npy header"
                                                  : "",
                         (unsigned long long)r->data_bytes);
  }
  if (r->streaming) {
    if (job_busy(&r->job)) {
      /* Wait for the last feed; stream_wake_cb resumes. */
      r->suspended = 1;
      MHD_suspend_connection(r->conn);
      return MHD_YES;
    }
    rc = job_stream_close(&r->job, reduce_done_cb);
  } else {
    r->job.req.data = r->body;   /* the job owns it now */
    r->job.req.data_bytes = (size_t)r->data_need;
    r->body = NULL;
    r->job.max_tasks = (unsigned)s->conf->threads;
    rc = job_submit(s->loop, &r->job, reduce_done_cb);
  }
  if (rc != 0)
    return respond_error(r, NULL, API_E_OVERLOADED,
                         "cannot queue the work (%s); retry later",
                         uv_strerror(rc));
  r->state = RS_RUNNING;
  MHD_suspend_connection(r->conn);
  return MHD_YES;   /* never MHD_NO after suspending */
}

/* Final call: the body is complete. */
static enum MHD_Result reduce_answer(struct req *r);

static enum MHD_Result
reduce_submit(struct http_server *s, struct req *r)
{
  int rc;

  if (r->too_large < 0)
    return respond_error(r, NULL, API_E_OVERLOADED,
                         "out of memory while reading the body; retry later");
  if (r->too_large)
    return respond_error(r, NULL, API_E_BODY_TOO_LARGE,
                         "the chunked body is above the limit of %llu bytes "
                         "(--max-body)",
                         (unsigned long long)s->conf->max_body);
  if (r->in_fmt != API_FMT_JSON)
    return binary_submit(s, r);

  r->job.in_fmt = API_FMT_JSON;
  r->job.body = r->body;
  r->job.body_len = r->body_len;
  /* Every element takes at least two bytes of JSON ("0,"). */
  r->job.max_elements = (uint64_t)r->body_len / 2 + 1;
  r->job.max_tasks = (unsigned)s->conf->threads;
  r->job.metrics = s->metrics;
  if (!r->v2 && r->body_len <= s->conf->inline_max) {
    job_run_inline(s->loop, &r->job);
    free(r->body);
    r->body = NULL;
    r->state = RS_DONE;
    return reduce_answer(r);
  }
  rc = job_submit(s->loop, &r->job, reduce_done_cb);
  if (rc != 0)
    return respond_error(r, NULL, API_E_OVERLOADED,
                         "cannot queue the work (%s); retry later",
                         uv_strerror(rc));
  r->state = RS_RUNNING;
  MHD_suspend_connection(r->conn);
  return MHD_YES;   /* never MHD_NO after suspending */
}

/* Re-entered after the resume: queue what the job produced. */
static enum MHD_Result
reduce_answer(struct req *r)
{
  struct job *j = &r->job;
  char *body = j->reply;
  size_t len;

  if (body == NULL && r->v2)
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_v2_nomem,
                   sizeof body_v2_nomem - 1, 0, NULL);
  if (body == NULL) {
    const char *fallback = job_nomem_body(&len);
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, fallback, len, 0, NULL);
  }
  j->reply = NULL;   /* MHD owns it now */
  return respond_as(r, j->status, body, j->reply_len, 1, NULL,
                    j->status == MHD_HTTP_OK ? j : NULL);
}

/* GET /metrics: the exposition text (metrics.h). */
static enum MHD_Result
metrics_answer(struct http_server *s, struct req *r)
{
  struct api_buf b;
  char *body;
  size_t len;

  api_buf_init(&b);
  if (metrics_render(s->metrics, &b) != 0) {
    api_buf_free(&b);
    return respond_error(r, NULL, API_E_OVERLOADED,
                         "out of memory while rendering the metrics; retry "
                         "later");
  }
  body = api_buf_steal(&b, &len);
  r->ctype = METRICS_CONTENT_TYPE;
  return respond(r, MHD_HTTP_OK, body, len, 1, NULL);
}

/* ------------------------------------------------------------------ */
/* /v2: the Open Inference Protocol (loop thread)                     */
/* ------------------------------------------------------------------ */

/* Queues a built body, or 503 if building it ran out of memory. */
static enum MHD_Result
respond_built(struct req *r, int rc, struct api_buf *b)
{
  char *body;
  size_t len;

  if (rc != 0) {
    api_buf_free(b);
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_v2_nomem,
                   sizeof body_v2_nomem - 1, 0, NULL);
  }
  body = api_buf_steal(b, &len);
  if (body == NULL)
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_v2_nomem,
                   sizeof body_v2_nomem - 1, 0, NULL);
  return respond(r, MHD_HTTP_OK, body, len, 1, NULL);
}

/* First call of POST .../infer: the checks of reduce_begin, plus the
 * binary extension's Inference-Header-Content-Length.  The body's
 * Content-Type is not consulted (tritonclient sends none); a
 * Content-Encoding other than identity is 415. */
static enum MHD_Result
v2_infer_begin(struct http_server *s, struct req *r)
{
  const struct conf *c = s->conf;
  const char *ce, *ih;
  uint64_t len = 0, hl;
  enum MHD_Result res;
  struct rd_error err;
  int chunked;

  ce = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_ENCODING);
  if (ce != NULL && strcasecmp(ce, "identity") != 0)
    return respond_error(r, NULL, API_E_MEDIA_TYPE, "Content-Encoding "
                         "'%.64s' is not supported; send the body "
                         "uncompressed", ce);
  ih = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   "Inference-Header-Content-Length");
  /* Like /v1's Content-Type: the body format is known from here on. */
  r->format = ih != NULL ? METRICS_FMT_BINARY : METRICS_FMT_JSON;
  if (body_length(s, r, &chunked, &len, &res) != 0)
    return res;

  r->v2_hdr_len = SIZE_MAX;
  if (ih != NULL) {
    if (parse_length(ih, &hl) != 0)
      return respond_error(r, NULL, API_E_INVALID_FIELD, "invalid "
                           "Inference-Header-Content-Length '%.32s'", ih);
    if (hl == 0)
      return respond_error(r, NULL, API_E_INVALID_FIELD, "Inference-Header-"
                           "Content-Length 0 (a raw binary request) is not "
                           "supported: the shape of input \"data\" must come "
                           "in a JSON header");
    if (!chunked && hl > len)
      return respond_error(r, NULL, API_E_INVALID_FIELD, "Inference-Header-"
                           "Content-Length %llu is larger than the body "
                           "(Content-Length %llu)", (unsigned long long)hl,
                           (unsigned long long)len);
    if (hl > c->max_body)
      return respond_error(r, NULL, API_E_BODY_TOO_LARGE, "Inference-Header-"
                           "Content-Length %llu is above the limit of %llu "
                           "bytes (--max-body)", (unsigned long long)hl,
                           (unsigned long long)c->max_body);
    r->v2_hdr_len = (size_t)hl;
  }

  if (admission(s, r, &res) != 0)
    return res;

  r->job.v2 = 1;
  r->job.v2_header_len = r->v2_hdr_len;
  r->job.v2info.op = r->v2rt.op;
  r->job.v2info.version = r->v2rt.version;
  memset(&err, 0, sizeof err);
  if (r->v2_hdr_len != SIZE_MAX && r->v2_hdr_len <= HTTP_V2_HEADER_MAX &&
      (chunked || r->v2_hdr_len < len)) {
    /* Blobs follow: read the header first, maybe stream the data. */
    r->in_fmt = API_FMT_RAW;
    r->v2_buf = malloc(r->v2_hdr_len);
    if (r->v2_buf == NULL)
      return respond_error(r, NULL, API_E_OVERLOADED, "cannot allocate %zu "
                           "bytes for the JSON header; retry later",
                           r->v2_hdr_len);
  } else {
    r->in_fmt = API_FMT_JSON;
    if (body_alloc(s, r, chunked, len, &res) != 0)
      return res;
  }
  r->admitted = 1;
  s->pending++;
  r->state = RS_READING;
  return MHD_YES;
}

/* The routes[] entry of a parsed /v2 path (its template). */
static const struct route *
v2_route_find(const struct api_v2_route *v)
{
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
    if (routes[i].kind == RT_V2 && routes[i].v2kind == v->kind &&
        routes[i].v2versioned == (v->version != 0))
      return &routes[i];
  return NULL;
}

/* Every /v2 path: route, method, then answer or start an infer. */
static enum MHD_Result
v2_call(struct http_server *s, struct req *r, const char *url,
        const char *method)
{
  const struct route *rt;
  struct rd_error err;
  struct api_buf b;
  const char *allow;
  int is_get;

  r->v2 = 1;
  memset(&err, 0, sizeof err);
  if (api_v2_route_parse(url, &r->v2rt, &err) != 0)
    return respond_rd_error(r, &err);   /* route label "none" */
  rt = v2_route_find(&r->v2rt);
  if (rt == NULL)   /* routes[] lacks a kind api_v2_route_parse() knows */
    return respond_error(r, NULL, API_E_NOT_FOUND, "no such path: %.200s",
                         r->path);
  r->route = (unsigned)(rt - routes);
  /* The model is the operator: counted under it whatever the body says. */
  r->route_op = r->v2rt.op;
  allow = rt->allow;
  is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
           strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
  if (r->v2rt.kind == API_V2_INFER
      ? strcmp(method, MHD_HTTP_METHOD_POST) != 0 : !is_get)
    return respond_error(r, allow, API_E_METHOD,
                         "method %s is not allowed for %s (allowed: %s)",
                         r->method, r->path, allow);
  api_buf_init(&b);
  switch (r->v2rt.kind) {
  case API_V2_SERVER_META:
    return respond_built(r, api_v2_encode_server_meta(PACKAGE_VERSION, &b),
                         &b);
  case API_V2_LIVE:
    return respond(r, MHD_HTTP_OK, body_v2_live, sizeof body_v2_live - 1, 0,
                   NULL);
  case API_V2_READY:
  case API_V2_MODEL_READY:
    if (s->draining)
      return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_v2_draining,
                     sizeof body_v2_draining - 1, 0, NULL);
    if (r->v2rt.kind == API_V2_READY)
      return respond(r, MHD_HTTP_OK, body_v2_ready, sizeof body_v2_ready - 1,
                     0, NULL);
    return respond_built(r, api_v2_encode_model_ready(r->v2rt.op, &b), &b);
  case API_V2_MODEL_META:
    return respond_built(r, api_v2_encode_model_meta(r->v2rt.op,
                                                     r->v2rt.version, &b),
                         &b);
  default:
    return v2_infer_begin(s, r);
  }
}

/* ------------------------------------------------------------------ */
/* API keys                                                           */
/* ------------------------------------------------------------------ */

/* 1 if `tok` (length `n`) equals one of the keys.  Every key is compared
 * in full whatever matched before, and each comparison runs over the key's
 * length only, so the time depends on the key file, not on how much of a
 * key the client guessed. */
static int
key_matches(const struct http_server *s, const char *tok, size_t n)
{
  unsigned found = 0;

  for (size_t k = 0; k < s->nkeys; k++) {
    const unsigned char *key = (const unsigned char *)s->keys[k];
    size_t len = s->key_lens[k];
    volatile unsigned diff = (unsigned)(len != n);

    for (size_t i = 0; i < len; i++)
      diff |= key[i] ^ (n > 0 ? (unsigned char)tok[i < n ? i : 0] : 0u);
    found |= (unsigned)(diff == 0);
  }
  return found != 0;
}

/* 1 if the request may go on: no keys configured, a probe route, or
 * "Authorization: Bearer <key>" with a known key. */
static int
authorized(const struct http_server *s, struct MHD_Connection *conn,
           const char *url)
{
  const char *h, *end;

  if (s->nkeys == 0 || strcmp(url, "/healthz") == 0 ||
      strcmp(url, "/readyz") == 0)
    return 1;
  h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                  MHD_HTTP_HEADER_AUTHORIZATION);
  if (h == NULL || strncasecmp(h, "Bearer", 6) != 0 ||
      (h[6] != ' ' && h[6] != '\t'))
    return 0;
  h += 6;
  while (*h == ' ' || *h == '\t')
    h++;
  end = h + strlen(h);
  while (end > h && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  return end > h && key_matches(s, h, (size_t)(end - h));
}

/* Reads `path` (at most HTTP_FILE_MAX bytes) into a NUL-terminated buffer;
 * `what` names the option in the messages, which never quote the content. */
static char *
read_small_file(const char *path, const char *what, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  size_t n;

  if (f == NULL) {
    LOG_ERROR("%s %s: %s", what, path, strerror(errno));
    return NULL;
  }
  buf = malloc(HTTP_FILE_MAX + 1);
  if (buf == NULL) {
    fclose(f);
    LOG_ERROR("%s %s: out of memory", what, path);
    return NULL;
  }
  n = fread(buf, 1, HTTP_FILE_MAX + 1, f);
  if (ferror(f) || n > HTTP_FILE_MAX) {
    LOG_ERROR("%s %s: %s", what, path,
              ferror(f) ? "read error" : "larger than 1 MiB");
    fclose(f);
    free(buf);
    return NULL;
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* One key a line; surrounding blanks and a CR are dropped, and empty lines
 * and lines starting with '#' are skipped.  Keys are never logged. */
static int
load_keys(struct http_server *s, const char *path)
{
  size_t len, n = 0, cap = 0;
  char *text = read_small_file(path, "--api-key-file", &len);
  char *line, *next;

  if (text == NULL)
    return -1;
  if (memchr(text, '\0', len) != NULL) {
    LOG_ERROR("--api-key-file %s: contains a NUL byte", path);
    goto fail;
  }
  for (line = text; line != NULL; line = next) {
    char *end;
    next = strchr(line, '\n');
    if (next != NULL)
      *next++ = '\0';
    while (*line == ' ' || *line == '\t')
      line++;
    end = line + strlen(line);
    while (end > line && (end[-1] == ' ' || end[-1] == '\t' ||
                          end[-1] == '\r'))
      *--end = '\0';
    if (*line == '\0' || *line == '#')
      continue;
    if (strpbrk(line, " \t") != NULL) {
      LOG_ERROR("--api-key-file %s: key %zu contains a blank", path, n + 1);
      goto fail;
    }
    if (n == cap) {
      size_t c2 = cap ? cap * 2 : 8;
      char **k2 = realloc(s->keys, c2 * sizeof *k2);
      size_t *l2;
      if (k2 == NULL)
        goto nomem;
      s->keys = k2;
      l2 = realloc(s->key_lens, c2 * sizeof *l2);
      if (l2 == NULL)
        goto nomem;
      s->key_lens = l2;
      cap = c2;
    }
    s->keys[n] = strdup(line);
    if (s->keys[n] == NULL)
      goto nomem;
    s->key_lens[n] = (size_t)(end - line);
    s->nkeys = ++n;
  }
  explicit_bzero(text, len);
  free(text);
  if (n == 0) {
    LOG_ERROR("--api-key-file %s: no key in the file", path);
    return -1;
  }
  LOG_INFO("API keys: %zu loaded from %s", n, path);
  return 0;
nomem:
  LOG_ERROR("--api-key-file %s: out of memory", path);
fail:
  explicit_bzero(text, len);
  free(text);
  return -1;
}

static void
free_secrets(struct http_server *s)
{
  for (size_t k = 0; k < s->nkeys; k++) {
    explicit_bzero(s->keys[k], s->key_lens[k]);
    free(s->keys[k]);
  }
  free(s->keys);
  free(s->key_lens);
  s->keys = NULL;
  s->key_lens = NULL;
  s->nkeys = 0;
  if (s->tls_key != NULL) {
    explicit_bzero(s->tls_key, strlen(s->tls_key));
    free(s->tls_key);
    s->tls_key = NULL;
  }
  free(s->tls_cert);
  s->tls_cert = NULL;
}

/* ------------------------------------------------------------------ */
/* The access handler (loop thread, inside MHD_run)                   */
/* ------------------------------------------------------------------ */

static enum MHD_Result
first_call(struct http_server *s, struct req *r, const char *url,
           const char *method)
{
  const struct route *rt = NULL;
  int is_get;

  if (strncmp(url, "/v2", 3) == 0 && (url[3] == '\0' || url[3] == '/'))
    return v2_call(s, r, url, method);
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    if (routes[i].kind != RT_V2 && strcmp(url, routes[i].path) == 0) {
      rt = &routes[i];
      break;
    }
  }
  if (rt == NULL)
    return respond_error(r, NULL, API_E_NOT_FOUND, "no such path: %.200s",
                         r->path);
  r->route = (unsigned)(rt - routes);

  if (rt->kind == RT_REDUCE) {
    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
      return respond_error(r, rt->allow, API_E_METHOD,
                           "method %s is not allowed for %s (allowed: %s)",
                           r->method, rt->path, rt->allow);
    return reduce_begin(s, r);
  }

  /* MHD sends no body for HEAD, so HEAD is GET here. */
  is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
           strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
  if (!is_get)
    return respond_error(r, rt->allow, API_E_METHOD,
                         "method %s is not allowed for %s (allowed: %s)",
                         r->method, rt->path, rt->allow);
  switch (rt->kind) {
  case RT_OPS:
    return respond(r, MHD_HTTP_OK, s->ops_body, s->ops_len, 0, NULL);
  case RT_HEALTHZ:
    return respond(r, MHD_HTTP_OK, body_health, sizeof body_health - 1, 0,
                   NULL);
  case RT_READYZ:
    if (s->draining)
      return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_draining,
                     sizeof body_draining - 1, 0, NULL);
    return respond(r, MHD_HTTP_OK, body_ready, sizeof body_ready - 1, 0, NULL);
  case RT_METRICS:
    return metrics_answer(s, r);
  case RT_OPENAPI:
    r->ctype = OPENAPI_CONTENT_TYPE;
    return respond(r, MHD_HTTP_OK, openapi_yaml, openapi_yaml_len, 0, NULL);
  case RT_REDUCE:
  case RT_V2:
    break;
  }
  return MHD_NO;
}

static enum MHD_Result
access_cb(void *cls, struct MHD_Connection *conn, const char *url,
          const char *method, const char *version, const char *upload_data,
          size_t *upload_data_size, void **con_cls)
{
  struct http_server *s = cls;
  struct req *r = *con_cls;

  (void)version;
  if (r == NULL || r->fresh) {
    if (r == NULL) {
      /* uri_log_cb ran out of memory: the query string is lost. */
      if ((r = calloc(1, sizeof *r)) == NULL)
        return MHD_NO;
      r->query_lost = 1;
    }
    r->fresh = 0;
    r->srv = s;
    r->conn = conn;
    r->t0_ns = now_ns();
    r->route = METRICS_ROUTE_NONE;
    copy_printable(r->method, sizeof r->method, method);
    copy_printable(r->path, sizeof r->path, url);
    set_request_id(s, r);
    *con_cls = r;
    s->inflight++;
    metrics_inflight_add(s->metrics, 1);
    if (!authorized(s, conn, url))
      return respond_error(r, NULL, API_E_UNAUTHORIZED,
                           "this route needs 'Authorization: Bearer <key>' "
                           "with a valid API key");
    /* MHD 0.9.75 closes the connection after a response queued at this
     * first call (it discards the rest of the request), which is right for
     * refusing a body but would end keep-alive for every GET: requests
     * without a body are answered at their final call instead. */
    if (!has_body(conn))
      return MHD_YES;
    return first_call(s, r, url, method);
  }

  switch (r->state) {
  case RS_NEW:
    /* The final call of a request without a body. */
    if (first_call(s, r, url, method) != MHD_YES)
      return MHD_NO;
    if (r->state == RS_READING)   /* an admitted empty reduce body */
      return reduce_submit(s, r);
    return MHD_YES;
  case RS_READING:
    if (*upload_data_size > 0 && r->in_fmt != API_FMT_JSON) {
      binary_upload(s, r, upload_data, upload_data_size);
      return MHD_YES;   /* suspended if it left bytes unprocessed */
    }
    if (*upload_data_size > 0) {
      reduce_upload(s, r, upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    return reduce_submit(s, r);
  case RS_DONE:
    return reduce_answer(r);
  case RS_RUNNING:
  case RS_ANSWERED:
    break;
  }
  /* Answered early (or not expecting data): drop whatever still arrives. */
  r->in_bytes += *upload_data_size;
  *upload_data_size = 0;
  return MHD_YES;
}

/* Loop thread (inside MHD_run): the request is over; log it, free it. */
static void
completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
  struct http_server *s = cls;
  struct req *r = *con_cls;
  struct metrics_obs obs;
  uint64_t ns;

  (void)conn;
  if (r == NULL)
    return;
  *con_cls = NULL;
  if (r->fresh) {
    /* Refused by MHD before the handler ran (its own error page): never
     * counted in flight, never logged. */
    free(r->query);
    free(r);
    return;
  }
  ns = now_ns() - r->t0_ns;
  obs.route = r->route;
  /* A running job may still write job.op: not read then. */
  obs.op = r->route_op != 0          ? r->route_op
           : r->state == RS_RUNNING ? 0
                                    : r->job.op;
  obs.format = r->format;
  obs.status = r->status;
  obs.duration_ns = ns;
  obs.in_bytes = r->in_bytes;
  obs.out_bytes = r->out_bytes;
  metrics_observe(s->metrics, &obs);
  metrics_inflight_add(s->metrics, -1);
  LOG_INFO("request id=%s method=%s path=%s status=%d in=%llu out=%zu "
           "ms=%.3f", r->id, r->method, r->path, r->status,
           (unsigned long long)r->in_bytes, r->out_bytes,
           (double)ns / 1e6);
  if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
    LOG_DEBUG("request id=%s ended early (MHD reason %d)", r->id, (int)toe);
  if (r->admitted)
    s->pending--;
  s->inflight--;
  if (r->state == RS_RUNNING || job_busy(&r->job)) {
    /* A pool work still uses it (a client gone mid-stream): the job's
     * callback frees it. */
    r->orphaned = 1;
    return;
  }
  req_free(r);
}

/* Loop thread (inside MHD_run), before the headers are parsed: the only
 * place MHD 0.9.75 shows the raw request target, so keep its query string
 * (api_query_parse() decodes it).  The context starts here; the access
 * handler completes it. */
static void *
uri_log_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
  struct req *r = calloc(1, sizeof *r);
  const char *q = uri != NULL ? strchr(uri, '?') : NULL;

  (void)cls;
  (void)conn;
  if (r == NULL)
    return NULL;
  r->fresh = 1;
  if (q != NULL) {
    r->query = strdup(q + 1);
    r->query_lost = r->query == NULL;
  }
  return r;
}

/* MHD's own diagnostics (loop thread). */
static void
mhd_log_cb(void *cls, const char *fmt, va_list ap)
{
  char msg[512];
  size_t n;

  (void)cls;
  if (LOG_LVL_WARN > log_threshold)
    return;
  vsnprintf(msg, sizeof msg, fmt, ap);
  n = strlen(msg);
  while (n > 0 && msg[n - 1] == '\n')
    msg[--n] = '\0';
  LOG_WARN("mhd: %s", msg);
}

/* ------------------------------------------------------------------ */
/* Driving MHD from libuv (loop thread)                               */
/* ------------------------------------------------------------------ */

static void timer_cb(uv_timer_t *t);

/* Runs MHD, re-arms the timer, and tells a draining owner when idle.
 * Nothing may touch `s` after the idle callback. */
static void
run_mhd(struct http_server *s)
{
  MHD_UNSIGNED_LONG_LONG ms;

  const union MHD_DaemonInfo *info;

  if (s->closed)
    return;
  MHD_run(s->mhd);
  /* At --max-connections MHD stops watching the listen socket, and only
   * watches it again at the start of a later MHD_run().  When a run freed
   * a slot, run again at once, or a client waiting in the backlog would
   * wait for an unrelated event (up to --timeout). */
  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  if (info != NULL) {
    unsigned int now = info->num_connections;
    if (s->at_limit && now < s->conf->max_connections)
      MHD_run(s->mhd);
    s->at_limit = now >= s->conf->max_connections;
  }
  if (MHD_get_timeout(s->mhd, &ms) == MHD_YES)
    uv_timer_start(&s->timer, timer_cb, (uint64_t)ms, 0);
  else
    uv_timer_stop(&s->timer);
  if (s->draining && s->inflight == 0 && s->idle_cb != NULL) {
    http_idle_cb cb = s->idle_cb;
    s->idle_cb = NULL;
    cb(s->idle_arg);
  }
}

static void
poll_cb(uv_poll_t *p, int status, int events)
{
  (void)events;
  if (status < 0)
    LOG_WARN("poll on the MHD epoll fd: %s", uv_strerror(status));
  run_mhd(container_of(p, struct http_server, poll));
}

static void
timer_cb(uv_timer_t *t)
{
  run_mhd(container_of(t, struct http_server, timer));
}

/* ------------------------------------------------------------------ */
/* Start, drain, close                                                */
/* ------------------------------------------------------------------ */

static void
seed_ids(struct http_server *s)
{
  uint64_t seed;

  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
    seed = now_ns() ^ ((uint64_t)getpid() << 32);
  s->id_seed = seed;
  s->id_counter = 0;
}

/* Writes the port to `path` atomically: a temp file renamed over it. */
static int
write_port_file(const char *path, unsigned port)
{
  char tmp[4096];
  FILE *f;
  int n;

  n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp) {
    LOG_ERROR("--port-file %s: name too long", path);
    return -1;
  }
  f = fopen(tmp, "w");
  if (f == NULL) {
    LOG_ERROR("--port-file %s: %s", tmp, strerror(errno));
    return -1;
  }
  if (fprintf(f, "%u\n", port) < 0 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
    LOG_ERROR("--port-file %s: %s", tmp, strerror(errno));
    fclose(f);
    unlink(tmp);
    return -1;
  }
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    LOG_ERROR("--port-file %s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* The metrics, with every route pattern of routes[] as a label value (the
 * route index of a request is its index there). */
static int
metrics_setup(struct http_server *s)
{
  struct timespec start;

  clock_gettime(CLOCK_REALTIME, &start);
  s->metrics = metrics_create((unsigned)s->conf->threads,
                              (uint64_t)s->conf->max_pending, &start);
  if (s->metrics == NULL) {
    LOG_ERROR("cannot allocate the metrics: out of memory");
    return -1;
  }
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
    if (metrics_route_add(s->metrics, routes[i].path) != (int)i) {
      LOG_ERROR("more routes than METRICS_MAX_ROUTES");
      return -1;
    }
  return 0;
}

int
http_start(struct http_server *s, uv_loop_t *loop, const struct conf *c)
{
  struct addrinfo hints, *ai = NULL;
  const union MHD_DaemonInfo *info;
  struct api_buf b;
  char portstr[8];
  unsigned int flags;
  int rc = -1, fd;

  memset(s, 0, sizeof *s);
  s->conf = c;
  s->loop = loop;
  seed_ids(s);

  if (c->api_key_file != NULL && load_keys(s, c->api_key_file) != 0) {
    rc = HTTP_E_CONFIG;
    goto fail;
  }
  if (c->tls_cert != NULL) {
    size_t n;
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      LOG_ERROR("--tls-cert: this libmicrohttpd has no TLS support");
      rc = HTTP_E_CONFIG;
      goto fail;
    }
    s->tls_cert = read_small_file(c->tls_cert, "--tls-cert", &n);
    s->tls_key = s->tls_cert ? read_small_file(c->tls_key, "--tls-key", &n)
                             : NULL;
    if (s->tls_key == NULL) {
      rc = HTTP_E_CONFIG;
      goto fail;
    }
  }

  api_buf_init(&b);
  if (api_json_encode_ops(&b) != 0) {
    api_buf_free(&b);
    LOG_ERROR("cannot build the /v1/ops body: out of memory");
    goto fail;
  }
  s->ops_body = api_buf_steal(&b, &s->ops_len);

  if (metrics_setup(s) != 0) {
    rc = -1;
    goto fail;
  }

  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  snprintf(portstr, sizeof portstr, "%u", (unsigned)c->port);
  rc = getaddrinfo(c->host, portstr, &hints, &ai);
  if (rc != 0) {
    LOG_ERROR("--listen %s: %s", c->listen, gai_strerror(rc));
    rc = -1;
    goto fail;
  }

  flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  if (ai->ai_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  if (s->tls_cert != NULL)
    flags |= MHD_USE_TLS;
  /* Options that may be absent go last, each ending the list when unused
   * (MHD stops at the first MHD_OPTION_END). */
  s->mhd = MHD_start_daemon(
    flags, (uint16_t)c->port, NULL, NULL, access_cb, s,
    MHD_OPTION_EXTERNAL_LOGGER, mhd_log_cb, s,
    MHD_OPTION_SOCK_ADDR, ai->ai_addr,
    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)c->max_connections,
    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)c->max_conn_per_ip,
    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)c->timeout,
    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
    MHD_OPTION_NOTIFY_COMPLETED, completed_cb, s,
    MHD_OPTION_URI_LOG_CALLBACK, uri_log_cb, s,
    MHD_OPTION_SIGPIPE_HANDLED_BY_APP, (int)1,
    s->tls_cert != NULL ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
    s->tls_cert,
    MHD_OPTION_HTTPS_MEM_KEY, s->tls_key,
    MHD_OPTION_END);
  freeaddrinfo(ai);
  if (s->mhd == NULL) {
    LOG_ERROR("cannot listen on %s (address in use or not available%s?)",
              c->listen, s->tls_cert != NULL ? ", or a bad TLS certificate "
              "or key" : "");
    rc = -1;
    goto fail;
  }

  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
  s->port = info != NULL ? info->port : 0;
  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  fd = info != NULL ? info->epoll_fd : -1;
  if (s->port == 0 || fd < 0) {
    LOG_ERROR("cannot read the bound port or the epoll fd from MHD");
    rc = -1;
    goto fail_mhd;
  }

  rc = uv_poll_init(loop, &s->poll, fd);
  if (rc != 0) {
    LOG_ERROR("cannot watch the MHD epoll fd: %s", uv_strerror(rc));
    rc = -1;
    goto fail_mhd;
  }
  uv_timer_init(loop, &s->timer);
  s->handles = 1;
  rc = uv_poll_start(&s->poll, UV_READABLE, poll_cb);
  if (rc != 0) {
    LOG_ERROR("cannot watch the MHD epoll fd: %s", uv_strerror(rc));
    return -1;   /* the caller runs http_close() */
  }

  if (strchr(c->host, ':') != NULL)
    LOG_INFO("listening on [%s]:%u", c->host, (unsigned)s->port);
  else
    LOG_INFO("listening on %s:%u", c->host, (unsigned)s->port);
  if (c->port_file != NULL && write_port_file(c->port_file, s->port) != 0)
    return -1;
  run_mhd(s);
  return 0;

fail_mhd:
  MHD_stop_daemon(s->mhd);
  s->mhd = NULL;
fail:
  free(s->ops_body);
  s->ops_body = NULL;
  free_secrets(s);
  metrics_destroy(s->metrics);
  s->metrics = NULL;
  s->closed = 1;   /* nothing left for http_close() */
  return rc;
}

/* Loop thread, at the start of draining: connections the kernel already
 * completed but MHD has not accepted would be reset when the listen socket
 * closes.  Let MHD accept them first; being draining, they are answered 503
 * DRAINING with Retry-After, a clean refusal the client can retry. */
static void
accept_backlog(struct http_server *s)
{
  const union MHD_DaemonInfo *info;
  struct pollfd p;

  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_LISTEN_FD);
  if (info == NULL || info->listen_fd == MHD_INVALID_SOCKET)
    return;
  p.fd = info->listen_fd;
  p.events = POLLIN;
  /* Bounded: a flood of new connections must not stall the drain. */
  for (int i = 0; i < 256; i++) {
    p.revents = 0;
    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
      break;
    MHD_run(s->mhd);
  }
}

void
http_drain(struct http_server *s, http_idle_cb idle_cb, void *arg)
{
  int fd;

  if (s->closed || s->draining)
    return;
  s->draining = 1;
  s->idle_cb = idle_cb;
  s->idle_arg = arg;
  accept_backlog(s);
  /* Stop accepting.  The listen fd is now ours; in external polling mode
   * no MHD thread can still use it, so close it at once and let new
   * connections be refused instead of waiting in the backlog. */
  fd = (int)MHD_quiesce_daemon(s->mhd);
  if (fd >= 0)
    close(fd);
  LOG_INFO("draining: %zu request(s) in flight", s->inflight);
  run_mhd(s);   /* also reports idle at once if nothing is in flight */
}

void
http_close(struct http_server *s)
{
  if (s->closed)
    return;
  s->closed = 1;
  /* Close the poll handle before MHD closes the fd it watches. */
  if (s->handles) {
    uv_close((uv_handle_t *)&s->poll, NULL);
    uv_close((uv_handle_t *)&s->timer, NULL);
    s->handles = 0;
  }
  if (s->mhd != NULL) {
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
  }
  free(s->ops_body);
  s->ops_body = NULL;
  free_secrets(s);
  /* After MHD_stop_daemon: its completion callbacks still count requests. */
  metrics_destroy(s->metrics);
  s->metrics = NULL;
}
