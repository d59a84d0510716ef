/* post.c - the life of a POST body (post.h): admission, upload, submit,
 * answer.  Loop thread throughout: the access handler's calls, and the
 * job callbacks (reduce_done_cb, stream_wake_cb) that libuv runs there.
 *
 *   first call    Content-Type (or Content-Encoding), Accept,
 *                 Content-Length, for raw bodies the query and the plan (so
 *                 bad parameters and too-large tensors are refused before
 *                 the body), admission; the body buffer, the stream, or
 *                 the prefix decoder                        -> a reading state
 *   upload calls  PREFIX: api_prefix_feed() until it answers; BODY, DATA:
 *                 copy; STREAMING: job_stream_write(), and when it takes
 *                 less the connection is suspended (PAUSED) with the rest
 *                 left unprocessed until a feed finishes (backpressure);
 *                 DISCARDING: count and drop
 *   final call    answer an error, or suspend and queue the job (RUNNING;
 *                 a stream: once its last feed is done, close it)
 *   job done      resume, MHD_run() -> the handler is re-entered (DONE)
 *                 and queues the response
 * Errors found mid-upload (a bad .npy header, too many bytes) cannot be
 * answered before the final call: the rest of the body is discarded.
 */
#include "config.h" /* autoconf */

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "mem.h"
#include "metrics.h"
#include "post.h"
#include "proto.h"
#include "tmem.h"

/* First allocation for a chunked body; it doubles up to --max-body. */
#define POST_CHUNKED_START (64 * 1024)
/* Each of a stream's two buffers: bounds a streamed request's memory (with
 * the output) and sets how much work one feed hands to the pool.  A
 * sixteenth of the tensor, in 64 KiB steps, between these bounds: a 16 MiB
 * tensor streams through 2 x 1 MiB, so that 1,000 of them fit in the
 * default --max-inflight-bytes at once (fewer wait), while feeds stay
 * large enough that the pool hand-off costs nothing. */
#define POST_STREAM_BUF_MIN (256u * 1024)
#define POST_STREAM_BUF_MAX (4u << 20)

static size_t stream_buf(uint64_t tensor_bytes)
{
  uint64_t b = tensor_bytes / 16 / (64 * 1024) * (64 * 1024);

  return b < POST_STREAM_BUF_MIN   ? POST_STREAM_BUF_MIN
         : b > POST_STREAM_BUF_MAX ? POST_STREAM_BUF_MAX
                                   : (size_t)b;
}
/* /v1 JSON bodies of at least this size (and above --inline-max), chunked
 * or compressed ones of any size, are decoded as they arrive
 * (api/jsonpush.h) through two buffers of POST_JSON_STREAM_BUF bytes: the
 * text is never kept whole, and the decode overlaps the upload.  Small
 * buffers: a JSON byte costs more CPU than a binary one, so the pool
 * hand-off stays cheap, and they are most of what such a request holds
 * besides its tensor. */
#define POST_JSON_PUSH_MIN (64u * 1024)
#define POST_JSON_STREAM_BUF (128u * 1024)
/* /v2 infer: a JSON header up to this size is parsed on the loop thread as
 * soon as it has arrived, so that the data blob after it can stream; a
 * larger header means the whole body is buffered and decoded on the pool. */
#define POST_V2_HEADER_MAX (64u * 1024)

static void reduce_done_cb(struct job *j);
static void stream_wake_cb(struct job *j);

/* ------------------------------------------------------------------ */
/* Discarding                                                         */
/* ------------------------------------------------------------------ */

/* The first error found mid-upload is the answer (at the final call); the
 * rest of the body is dropped until then.  `err` NULL: more tensor bytes
 * than the plan (named at the end, with the count). */
static void discard(struct req *r, const struct rd_error *err)
{
  if (r->state == REQ_DISCARDING)
    return;
  if (err != NULL)
    r->derr = *err;
  else
    memset(&r->derr, 0, sizeof r->derr);
  req_set_state(r, REQ_DISCARDING);
}

/* A chunked body passed --max-body (MHD enforces a Content-Length).  This
 * answer replaces an earlier one of a binary body; a JSON body keeps the
 * first (an earlier out-of-memory). */
static void discard_too_large(struct server *s, struct req *r)
{
  if (r->state == REQ_DISCARDING && r->job.in_fmt == API_FMT_JSON)
    return;
  api_tmem_free(r->body);
  r->body = NULL;
  r->body_len = r->body_cap = r->body_ready = 0;
  api_fail(&r->derr, API_E_BODY_TOO_LARGE,
           "the chunked body is above the "
           "limit of %llu bytes (--max-body)",
           (unsigned long long)s->conf->max_body);
  req_set_state(r, REQ_DISCARDING);
}

/* ------------------------------------------------------------------ */
/* First call                                                         */
/* ------------------------------------------------------------------ */

/* The checks both POST routes make before reading.  Each returns 0 to go
 * on, or 1 with *res the queued answer (in the protocol's form). */

/* Content-Length or chunked Transfer-Encoding, within --max-body; sets
 * r->expect_len. */
static int body_length(struct server *s, struct req *r, int *chunked,
                       uint64_t *len, enum MHD_Result *res)
{
  const struct conf *c = s->conf;
  const char *cl;

  *chunked = req_is_chunked(r->conn);
  cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (!*chunked) {
    if (cl == NULL) {
      *res = req_respond_error(r, NULL, API_E_LENGTH_REQUIRED,
                               "a POST body needs Content-Length or chunked "
                               "Transfer-Encoding");
      return 1;
    }
    if (req_parse_length(cl, len) != 0) {
      *res = req_respond_error(r, NULL, API_E_LENGTH_REQUIRED,
                               "invalid Content-Length '%.32s'", cl);
      return 1;
    }
    if (*len > c->max_body) {
      *res = req_respond_error(r, NULL, API_E_BODY_TOO_LARGE,
                               "Content-Length %llu is above the limit of "
                               "%llu bytes (--max-body)",
                               (unsigned long long)*len,
                               (unsigned long long)c->max_body);
      return 1;
    }
  }
  r->expect_len = *chunked ? UINT64_MAX : *len;
  return 0;
}

/* Content-Encoding: identity, or gzip / deflate decoded as the body
 * streams (zbody.h), its decoded length unknown until the end: read as if
 * chunked.  Another coding is 415 naming it. */
static int body_coding(struct server *s, struct req *r, int *chunked,
                       enum MHD_Result *res)
{
  enum api_coding coding;
  struct rd_error err;

  memset(&err, 0, sizeof err);
  if (api_coding_parse(
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_CONTENT_ENCODING),
        &coding, &err) != 0) {
    *res = req_respond_rd_error(r, &err);
    return 1;
  }
  if (coding == API_CODING_IDENTITY)
    return 0;
  if (zbody_open(r, coding, s->conf->max_body) != 0) {
    *res = req_respond_error(r, NULL, API_E_OVERLOADED,
                             "cannot allocate "
                             "the %s decoder; retry later",
                             api_coding_name(coding));
    return 1;
  }
  *chunked = 1;
  r->expect_len = UINT64_MAX;
  return 0;
}

/* What a request is planned to hold while admitted (admit.h): a buffered
 * binary tensor and its output; a stream's two buffers and its output; a
 * JSON body and what decoding it may take (8-byte elements, each at least
 * "0," in the body).  A .npy or /v2 binary body is counted from its
 * Content-Length until its header is read (then plan_ready() resizes).
 * POST_REQ_BYTES stands for the context and the answer. */
#define POST_REQ_BYTES (16u * 1024)
#define POST_JSON_FACTOR 5u

static uint64_t json_bytes(uint64_t body)
{
  return POST_REQ_BYTES + body * POST_JSON_FACTOR;
}

static uint64_t planned_bytes(struct server *s, const struct rd_plan *p,
                              int fortran)
{
  if (fortran) /* and its C-order copy (job.c) */
    return POST_REQ_BYTES + 2u * p->in_bytes + p->out_bytes;
  if (p->in_bytes <= s->conf->buffer_max)
    return POST_REQ_BYTES + p->in_bytes + p->out_bytes;
  return POST_REQ_BYTES + 2u * stream_buf(p->in_bytes) + p->out_bytes;
}

/* The first estimate, before the body: exact for raw bodies and JSON with
 * a Content-Length; chunked JSON starts at its first buffer and grows. */
static uint64_t declared_bytes(struct server *s, struct req *r)
{
  uint64_t len = r->expect_len;
  int chunked = len == UINT64_MAX;

  if (r->prefix_first) {
    if (chunked || len > s->conf->buffer_max)
      return POST_REQ_BYTES +
             2u * stream_buf(chunked ? s->conf->max_body : len);
    return POST_REQ_BYTES + len;
  }
  if (r->job.in_fmt == API_FMT_RAW)
    return planned_bytes(s, &r->job.lplan, 0);
  if (chunked)
    return json_bytes(s->conf->max_body < POST_CHUNKED_START
                        ? s->conf->max_body
                        : POST_CHUNKED_START);
  return json_bytes(len);
}

static void admitted_cb(struct admit_ticket *t, enum admit_outcome how);
static int begin_body(struct server *s, struct req *r, struct rd_error *err);

/* Not while draining (503 DRAINING), nor beyond --max-pending (503), nor
 * above --max-inflight-bytes (413).  A request that does not fit yet
 * waits: its connection is suspended before the body (QUEUED), and
 * admitted_cb() goes on.  Otherwise the body's buffer or stream is set up
 * at once.  Returns the handler's result. */
static enum MHD_Result admission(struct server *s, struct req *r)
{
  const struct conf *c = s->conf;
  struct rd_error err;
  uint64_t bytes;

  if (s->draining)
    return req_respond_error(r, NULL, API_E_DRAINING,
                             "the server is shutting down");
  bytes = declared_bytes(s, r);
  switch (admit_request(&s->admit, &r->ticket, bytes, admitted_cb, r)) {
  case ADMIT_E_TOO_LARGE:
    return req_respond_error(r, NULL, API_E_BODY_TOO_LARGE,
                             "the request needs %llu bytes of memory, above "
                             "--max-inflight-bytes %llu",
                             (unsigned long long)bytes,
                             (unsigned long long)c->max_inflight_bytes);
  case ADMIT_E_FULL:
    return req_respond_error(r, NULL, API_E_OVERLOADED,
                             "%zu requests are already admitted or waiting "
                             "(--max-pending %llu); retry later",
                             admit_pending(&s->admit),
                             (unsigned long long)c->max_pending);
  case ADMIT_WAIT:
    LOG_DEBUG("request id=%s: waits for %llu bytes (%zu waiting)", r->id,
              (unsigned long long)bytes, admit_waiting(&s->admit));
    req_set_state(r, REQ_QUEUED);
    /* Suspended at the first call of a body: MHD repeats that call after
     * the resume (server.c skips it, or answers there). */
    r->recall = r->expect_len != 0;
    MHD_suspend_connection(r->conn);
    req_watch_start(r); /* a client closing while it waits */
    return MHD_YES;
  case ADMIT_NOW: break;
  }
  memset(&err, 0, sizeof err);
  if (begin_body(s, r, &err) != 0)
    return req_respond_rd_error(r, &err);
  req_watch_start(r); /* a client closing mid-body or while it runs */
  return MHD_YES;
}

/* Loop thread (admit.c's timer or idle callback): a QUEUED request was
 * admitted, timed out, or (watch) lost its client.  Sets up its body, or
 * the 503 answered at the final call, and resumes the connection. */
static void admitted_cb(struct admit_ticket *t, enum admit_outcome how)
{
  struct req *r = t->arg;
  struct server *s = r->srv;
  struct rd_error err;

  assert(r->state == REQ_QUEUED);
  memset(&err, 0, sizeof err);
  if (how == ADMIT_TIMEOUT) {
    api_fail(&err, API_E_OVERLOADED,
             "waited %.1f s for admission "
             "(--queue-timeout %llu, --max-inflight-bytes %llu); retry "
             "later",
             admit_waited(t), (unsigned long long)s->conf->queue_timeout,
             (unsigned long long)s->conf->max_inflight_bytes);
    discard(r, &err);
  } else if (begin_body(s, r, &err) != 0) {
    discard(r, &err);
  }
  MHD_resume_connection(r->conn);
  server_run(s); /* required in external mode after a resume */
}

/* The buffer of a JSON body: allocated once when the length is known;
 * chunked grows geometrically from POST_CHUNKED_START.  BODY.  Or, for a
 * large, chunked or compressed /v1 body, the push decoder's stream
 * (STREAMING; body_cap then only tracks what admission counts). */
static int body_alloc(struct server *s, struct req *r, int chunked,
                      uint64_t len, struct rd_error *err)
{
  const struct conf *c = s->conf;

  if (r->job.call.proto == &api_proto_v1 &&
      (chunked || (len >= POST_JSON_PUSH_MIN && len > c->inline_max))) {
    LOG_DEBUG("request id=%s: decoding the JSON body as it arrives", r->id);
    r->job.in_fmt = API_FMT_JSON;
    r->body_cap = chunked ? POST_CHUNKED_START : (size_t)len;
    if (job_json_stream_open(&r->job, chunked ? 0 : len, POST_JSON_STREAM_BUF,
                             s->loop, stream_wake_cb) != 0)
      return api_fail(err, API_E_OVERLOADED,
                      "cannot allocate the JSON decoder; retry later");
    req_set_state(r, REQ_STREAMING);
    return 0;
  }

  r->body_cap = chunked ? (size_t)(c->max_body < POST_CHUNKED_START
                                     ? c->max_body
                                     : POST_CHUNKED_START)
                        : (size_t)len;
  r->body = api_tmem_alloc(r->body_cap);
  r->body_ready = 0;
  if (r->body == NULL)
    return api_fail(err, API_E_OVERLOADED,
                    "cannot allocate %zu bytes for "
                    "the body; retry later",
                    r->body_cap);
  r->job.in_fmt = API_FMT_JSON;
  req_set_state(r, REQ_BODY);
  return 0;
}

/* The plan of a binary body is set up (job_binary_setup()): check the
 * declared size and the response format, then allocate the whole tensor
 * (up to --buffer-max: DATA) or open a stream (STREAMING). */
static int plan_ready(struct server *s, struct req *r, struct rd_error *err)
{
  const struct conf *c = s->conf;
  const struct rd_plan *p = &r->job.lplan;
  int rc;

  if ((rc = api_prefix_check_size(&r->prefix, p, c->max_body, err)) != 0 ||
      (rc = r->job.call.proto->check_accept(&r->job.call, p->out_dtype, err)) !=
        0 ||
      (rc = api_prefix_check_length(&r->prefix, p, err)) != 0)
    return rc;
  /* Now the exact need (a raw body was admitted with it already). */
  admit_resize(&s->admit, &r->ticket, planned_bytes(s, p, r->job.fortran));
  /* Fortran order is transposed to C order before reducing (job.c), so
   * that the sum runs in the same order as for C order: the whole tensor
   * is buffered, also above --buffer-max. */
  if (r->job.fortran && p->in_bytes > c->buffer_max)
    LOG_DEBUG("request id=%s: Fortran order: buffering %llu tensor bytes "
              "to reorder them",
              r->id, (unsigned long long)p->in_bytes);
  if (p->in_bytes <= c->buffer_max || r->job.fortran) {
    r->body_cap = (size_t)p->in_bytes;
    r->body = api_tmem_alloc(r->body_cap);
    r->body_ready = 0;
    if (r->body == NULL)
      return api_fail(err, API_E_OVERLOADED,
                      "cannot allocate %zu bytes for "
                      "the body; retry later",
                      r->body_cap);
    req_set_state(r, REQ_DATA);
    return 0;
  }
  LOG_DEBUG("request id=%s: streaming %llu tensor bytes", r->id,
            (unsigned long long)p->in_bytes);
  if (job_stream_open(&r->job, s->loop, stream_buf(p->in_bytes),
                      stream_wake_cb) != 0)
    return api_fail(err, API_E_OVERLOADED,
                    "cannot allocate the stream "
                    "buffers and the output; retry later");
  req_set_state(r, REQ_STREAMING);
  return 0;
}

/* The query string of a raw or .npy body, and a raw body's plan. */
static int binary_begin(struct req *r, struct rd_error *err)
{
  struct api_request q;
  size_t taken;
  int rc;

  if (r->query_lost)
    return api_fail(err, API_E_OVERLOADED,
                    "out of memory while reading "
                    "the query string; retry later");
  memset(&q, 0, sizeof q);
  if ((rc = api_query_parse(r->query, r->job.in_fmt, &q, err)) != 0)
    return rc;
  if (r->job.in_fmt == API_FMT_NPY) {
    api_prefix_init_npy(&r->prefix, &q, r->expect_len);
    return 0;
  }
  api_prefix_init_raw(&r->prefix, &q, r->expect_len);
  /* The query string was the whole prefix: READY at once. */
  (void)api_prefix_feed(&r->prefix, NULL, 0, &taken, err);
  return job_binary_setup(&r->job, &r->prefix.req, r->prefix.fortran,
                          r->prefix.swap, err);
}

enum MHD_Result post_begin_v1(struct server *s, struct req *r)
{
  enum MHD_Result res;
  struct rd_error err;
  const char *ct;
  uint64_t len = 0;
  int chunked, fmt;

  ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_TYPE);
  fmt = api_format_of_content_type(ct);
  if (fmt == API_FMT_NONE)
    return req_respond_error(r, NULL, API_E_MEDIA_TYPE,
                             "Content-Type must be application/json, "
                             "application/octet-stream or application/x-npy, "
                             "not '%.64s'",
                             ct ? ct : "(none)");
  r->job.in_fmt = fmt;
  r->format = fmt == API_FMT_RAW   ? METRICS_FMT_RAW
              : fmt == API_FMT_NPY ? METRICS_FMT_NPY
                                   : METRICS_FMT_JSON;
  memset(&err, 0, sizeof err);
  if (api_accept_parse(MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_ACCEPT),
                       fmt, &r->job.call.accept, &err) != 0)
    return req_respond_rd_error(r, &err);
  if (body_length(s, r, &chunked, &len, &res) != 0 ||
      body_coding(s, r, &chunked, &res) != 0)
    return res;
  if (fmt != API_FMT_JSON && binary_begin(r, &err) != 0)
    return req_respond_rd_error(r, &err);
  r->prefix_first = fmt == API_FMT_NPY;
  return admission(s, r);
}

/* Inference-Header-Content-Length: absent (SIZE_MAX), or within the body
 * and --max-body.  0, or 1 with *res the queued answer. */
static int v2_header_length(struct server *s, struct req *r, const char *ih,
                            int chunked, uint64_t len, size_t *hlen,
                            enum MHD_Result *res)
{
  const struct conf *c = s->conf;
  uint64_t hl;

  *hlen = SIZE_MAX;
  if (ih == NULL)
    return 0;
  if (req_parse_length(ih, &hl) != 0)
    *res = req_respond_error(r, NULL, API_E_INVALID_FIELD,
                             "invalid "
                             "Inference-Header-Content-Length '%.32s'",
                             ih);
  else if (hl == 0)
    *res = req_respond_error(r, NULL, API_E_INVALID_FIELD,
                             "Inference-Header-"
                             "Content-Length 0 (a raw binary request) is not "
                             "supported: the shape of input \"data\" must "
                             "come in a JSON header");
  else if (!chunked && hl > len)
    *res = req_respond_error(r, NULL, API_E_INVALID_FIELD,
                             "Inference-Header-"
                             "Content-Length %llu is larger than the body "
                             "(Content-Length %llu)",
                             (unsigned long long)hl, (unsigned long long)len);
  else if (hl > c->max_body)
    *res = req_respond_error(r, NULL, API_E_BODY_TOO_LARGE,
                             "Inference-"
                             "Header-Content-Length %llu is above the limit "
                             "of %llu bytes (--max-body)",
                             (unsigned long long)hl,
                             (unsigned long long)c->max_body);
  else {
    *hlen = (size_t)hl;
    return 0;
  }
  return 1;
}

/* The checks of post_begin_v1, plus the binary extension's
 * Inference-Header-Content-Length.  The body's Content-Type is not
 * consulted (tritonclient sends none); Content-Encoding as on /v1
 * (body_coding). */
enum MHD_Result post_begin_v2(struct server *s, struct req *r)
{
  struct api_call *call = &r->job.call;
  const char *ih;
  uint64_t len = 0;
  enum MHD_Result res;
  size_t hl;
  int chunked;

  ih = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   "Inference-Header-Content-Length");
  /* Like /v1's Content-Type: the body format is known from here on. */
  r->format = ih != NULL ? METRICS_FMT_BINARY : METRICS_FMT_JSON;
  if (body_length(s, r, &chunked, &len, &res) != 0 ||
      body_coding(s, r, &chunked, &res) != 0 ||
      v2_header_length(s, r, ih, chunked, len, &hl, &res) != 0)
    return res;

  call->header_len = hl;
  call->v2info.op = r->v2rt.op;
  call->v2info.version = r->v2rt.version;
  /* Blobs follow: read the header first, maybe stream the data. */
  r->prefix_first = hl != SIZE_MAX && hl <= POST_V2_HEADER_MAX &&
                    (chunked || hl < len);
  return admission(s, r);
}

/* Admitted: the body's buffer (BODY, DATA), stream (STREAMING) or prefix
 * decoder (PREFIX).  0, or an error to answer. */
static int begin_body(struct server *s, struct req *r, struct rd_error *err)
{
  struct api_call *call = &r->job.call;
  int chunked = r->expect_len == UINT64_MAX;

  if (r->prefix_first && call->proto != &api_proto_v1) {
    r->job.in_fmt = API_FMT_RAW;
    if (api_prefix_init_v2(&r->prefix, call->header_len, r->expect_len,
                           &call->v2info, err) != 0)
      return -1;
    req_set_state(r, REQ_PREFIX);
    return 0;
  }
  if (r->prefix_first) {
    req_set_state(r, REQ_PREFIX); /* planned once the header is here */
    return 0;
  }
  if (r->job.in_fmt == API_FMT_RAW)
    return plan_ready(s, r, err);
  return body_alloc(s, r, chunked, chunked ? 0 : r->expect_len, err);
}

/* ------------------------------------------------------------------ */
/* Upload calls                                                       */
/* ------------------------------------------------------------------ */

/* BODY: keep the bytes (the buffer grows up to --max-body). */
static void body_append(struct server *s, struct req *r, const char *data,
                        size_t n)
{
  uint64_t max = s->conf->max_body;

  r->in_bytes += n;
  if (r->body_len + n > r->body_cap) {
    size_t cap = r->body_cap;
    char *p;
    while (cap < r->body_len + n)
      cap = cap > (size_t)max / 2 ? (size_t)max : cap * 2;
    p = api_tmem_realloc(r->body, cap);
    if (p == NULL) {
      struct rd_error err;
      api_tmem_free(r->body);
      r->body = NULL;
      r->body_len = r->body_cap = 0;
      api_fail(&err, API_E_OVERLOADED,
               "out of memory while reading the "
               "body; retry later");
      discard(r, &err);
      return;
    }
    r->body = p;
    r->body_cap = cap;
    r->body_ready = r->body_len; /* it may have moved */
    admit_resize(&s->admit, &r->ticket, json_bytes(cap)); /* chunked */
  }
  api_mem_ahead(r->body, r->body_cap, &r->body_ready, r->body_len, n);
  memcpy(r->body + r->body_len, data, n);
  r->body_len += n;
}

/* A /v2 body that cannot stream: buffered whole from here on, starting
 * with the JSON header the decoder holds.  BODY (JSON, decoded on the
 * pool). */
static void body_from_prefix(struct server *s, struct req *r)
{
  const unsigned char *hdr;
  struct rd_error err;
  size_t hl, cap;

  hdr = api_prefix_bytes(&r->prefix, &hl);
  cap = r->expect_len != UINT64_MAX
          ? (size_t)r->expect_len
          : (size_t)(s->conf->max_body < POST_CHUNKED_START
                       ? s->conf->max_body
                       : POST_CHUNKED_START);
  if (cap < hl)
    cap = hl;
  r->body = api_tmem_alloc(cap);
  r->body_ready = 0;
  if (r->body == NULL) {
    api_fail(&err, API_E_OVERLOADED,
             "cannot allocate %zu bytes for the "
             "body; retry later",
             cap);
    discard(r, &err);
    return;
  }
  memcpy(r->body, hdr, hl);
  r->body_len = hl;
  r->body_cap = cap;
  admit_resize(&s->admit, &r->ticket, json_bytes(cap));
  r->job.in_fmt = API_FMT_JSON;
  req_set_state(r, REQ_BODY);
}

/* PREFIX: offers the bytes to the decoder; once it answers, plans (DATA or
 * STREAMING), or buffers whole (BODY), or discards.  Returns the bytes
 * taken. */
static size_t prefix_upload(struct server *s, struct req *r, const char *data,
                            size_t n)
{
  struct rd_error err;
  size_t taken;

  memset(&err, 0, sizeof err);
  switch (api_prefix_feed(&r->prefix, data, n, &taken, &err)) {
  case API_PREFIX_MORE: break;
  case API_PREFIX_READY:
    if (job_binary_setup(&r->job, &r->prefix.req, r->prefix.fortran,
                         r->prefix.swap, &err) != 0 ||
        plan_ready(s, r, &err) != 0)
      discard(r, &err);
    break;
  case API_PREFIX_WHOLE: body_from_prefix(s, r); break;
  default: discard(r, &err);
  }
  return taken;
}

/* DATA, STREAMING: the tensor bytes.  Leaves in *n what the stream did not
 * take; the connection is then suspended until a feed frees a buffer. */
static void data_upload(struct req *r, const char *data, size_t left, size_t *n)
{
  size_t taken;

  assert(r->state == REQ_DATA || r->state == REQ_STREAMING);
  if (r->data_bytes + left > r->job.lplan.in_bytes) {
    discard(r, NULL); /* more than the plan: answered at the end */
    r->in_bytes += left;
    r->data_bytes += left;
    return;
  }
  if (r->state == REQ_DATA) {
    api_mem_ahead(r->body, r->body_cap, &r->body_ready, r->data_bytes, left);
    memcpy(r->body + r->data_bytes, data, left);
    taken = left;
  } else {
    taken = job_stream_write(&r->job, data, left);
  }
  r->in_bytes += taken;
  r->data_bytes += taken;
  if (taken < left) {
    *n = left - taken;
    req_set_state(r, REQ_PAUSED);
    MHD_suspend_connection(r->conn);
  }
}

/* STREAMING, a JSON body: to the push decoder's stream.  A chunked body
 * is counted for admission as BODY counts its buffer. */
static void json_upload(struct server *s, struct req *r, const char *data,
                        size_t left, size_t *n)
{
  size_t taken = job_stream_write(&r->job, data, left);

  r->in_bytes += taken;
  if (r->expect_len == UINT64_MAX && r->in_bytes > r->body_cap) {
    while (r->body_cap < r->in_bytes)
      r->body_cap *= 2;
    admit_resize(&s->admit, &r->ticket, json_bytes(r->body_cap));
  }
  if (taken < left) {
    *n = left - taken;
    req_set_state(r, REQ_PAUSED);
    MHD_suspend_connection(r->conn);
  }
}

/* The plain (decoded) body's bytes. */
static void plain_upload(struct server *s, struct req *r, const char *data,
                         size_t *n)
{
  size_t left = *n, taken;

  assert(req_reading(r));
  *n = 0;
  if (r->in_bytes + left > s->conf->max_body)
    discard_too_large(s, r); /* only when chunked */
  if (r->state == REQ_PREFIX) {
    taken = prefix_upload(s, r, data, left);
    r->in_bytes += taken;
    data += taken;
    left -= taken;
  }
  switch (r->state) {
  case REQ_BODY:
    if (left > 0)
      body_append(s, r, data, left);
    return;
  case REQ_STREAMING:
    if (r->job.in_fmt == API_FMT_JSON) {
      json_upload(s, r, data, left, n);
      return;
    }
    /* fall through */
  case REQ_DATA: data_upload(r, data, left, n); return;
  default:
    /* DISCARDING (or PREFIX with nothing left): count and drop. */
    r->in_bytes += left;
    r->data_bytes += left;
  }
}

void post_upload(struct server *s, struct req *r, const char *data, size_t *n)
{
  if (r->zbody != NULL)
    zbody_upload(s, r, data, n, plain_upload, discard);
  else
    plain_upload(s, r, data, n);
}

/* ------------------------------------------------------------------ */
/* Final call, job callbacks, answer                                  */
/* ------------------------------------------------------------------ */

/* Loop thread: the job finished; wake the connection so that MHD re-enters
 * the handler, which queues the response. */
static void reduce_done_cb(struct job *j)
{
  struct req *r = container_of(j, struct req, job);
  struct server *s = r->srv;

  assert(r->state == REQ_RUNNING || r->state == REQ_ORPHANED);
  if (r->state == REQ_ORPHANED) {
    /* Defensive: MHD never completes a suspended request, but if it did,
     * the context outlived it only for the job; free it now. */
    req_free(r);
    return;
  }
  /* The body is no longer needed; free it before the response goes out. */
  api_tmem_free(r->body);
  r->body = NULL;
  req_set_state(r, REQ_DONE);
  MHD_resume_connection(r->conn);
  server_run(s); /* required in external mode after a resume */
}

/* Loop thread: a feed of a streamed body finished. */
static void stream_wake_cb(struct job *j)
{
  struct req *r = container_of(j, struct req, job);

  if (r->state == REQ_ORPHANED) {
    /* The client went away mid-body; the last pool work frees. */
    if (!job_busy(j))
      req_free(r);
    return;
  }
  if (r->state == REQ_PAUSED) {
    req_set_state(r, REQ_STREAMING);
    MHD_resume_connection(r->conn);
    server_run(r->srv);
  }
}

/* Queues the job (or the stream's close) and suspends: RUNNING. */
static enum MHD_Result run_job(struct req *r, int rc)
{
  if (rc != 0)
    return req_respond_error(r, NULL, API_E_OVERLOADED,
                             "cannot queue the work (%s); retry later",
                             uv_strerror(rc));
  req_set_state(r, REQ_RUNNING);
  MHD_suspend_connection(r->conn);
  return MHD_YES; /* never MHD_NO after suspending */
}

/* BODY: the whole JSON body is here. */
static enum MHD_Result submit_body(struct server *s, struct req *r)
{
  struct job *j = &r->job;

  j->body = r->body;
  j->body_len = r->body_len;
  /* Every element takes at least two bytes of JSON ("0,"). */
  j->max_elements = (uint64_t)r->body_len / 2 + 1;
  j->max_tasks = (unsigned)s->conf->threads;
  j->metrics = s->metrics;
  if (j->call.proto->inline_ok && r->body_len <= s->conf->inline_max) {
    job_run_inline(s->loop, j);
    api_tmem_free(r->body);
    r->body = NULL;
    req_set_state(r, REQ_DONE);
    return post_answer(r);
  }
  return run_job(r, job_submit(s->loop, j, reduce_done_cb));
}

/* STREAMING, a JSON body: once the last feed is done, the close finishes
 * the decode and runs the job. */
static enum MHD_Result submit_json_stream(struct server *s, struct req *r)
{
  struct job *j = &r->job;

  if (job_busy(j)) {
    /* Wait for the last feed; stream_wake_cb resumes. */
    req_set_state(r, REQ_PAUSED);
    MHD_suspend_connection(r->conn);
    return MHD_YES;
  }
  /* As submit_body(): every element takes at least two bytes ("0,"). */
  j->max_elements = r->in_bytes / 2 + 1;
  j->max_tasks = (unsigned)s->conf->threads;
  return run_job(r, job_stream_close(j, reduce_done_cb));
}

/* DATA, STREAMING: exactly the plan's bytes must have come. */
static enum MHD_Result submit_data(struct server *s, struct req *r)
{
  struct rd_error err;

  if (r->job.in_fmt == API_FMT_JSON)
    return submit_json_stream(s, r);
  memset(&err, 0, sizeof err);
  if (api_prefix_check_end(&r->prefix, &r->job.lplan, r->in_bytes,
                           r->data_bytes, &err) != 0)
    return req_respond_rd_error(r, &err);
  if (r->state == REQ_STREAMING) {
    if (job_busy(&r->job)) {
      /* Wait for the last feed; stream_wake_cb resumes. */
      req_set_state(r, REQ_PAUSED);
      MHD_suspend_connection(r->conn);
      return MHD_YES;
    }
    return run_job(r, job_stream_close(&r->job, reduce_done_cb));
  }
  r->job.req.data = r->body; /* the job owns it now */
  r->job.req.data_bytes = (size_t)r->job.lplan.in_bytes;
  r->body = NULL;
  r->job.max_tasks = (unsigned)s->conf->threads;
  return run_job(r, job_submit(s->loop, &r->job, reduce_done_cb));
}

enum MHD_Result post_submit(struct server *s, struct req *r)
{
  struct rd_error err;

  assert(req_reading(r));
  /* A compressed body: the decoded bytes still pending, and its end. */
  if (r->zbody != NULL && zbody_finish(s, r, plain_upload, discard))
    return MHD_YES; /* PAUSED: the final call comes again */
  memset(&err, 0, sizeof err);
  switch (r->state) {
  case REQ_BODY: return submit_body(s, r);
  case REQ_DATA:
  case REQ_STREAMING: return submit_data(s, r);
  case REQ_PREFIX:
    /* The body ended inside the header. */
    api_prefix_check_end(&r->prefix, NULL, r->in_bytes, 0, &err);
    return req_respond_rd_error(r, &err);
  default:
    if (r->derr.code != 0)
      return req_respond_rd_error(r, &r->derr);
    /* More tensor bytes than the plan. */
    api_prefix_check_end(&r->prefix, &r->job.lplan, r->in_bytes, r->data_bytes,
                         &err);
    return req_respond_rd_error(r, &err);
  }
}

enum MHD_Result post_answer(struct req *r)
{
  struct job *j = &r->job;
  char *body = j->reply;

  assert(r->state == REQ_DONE && !job_busy(j));
  if (body == NULL)
    return req_respond_static(r, MHD_HTTP_SERVICE_UNAVAILABLE,
                              j->call.proto->nomem_body);
  j->reply = NULL; /* MHD owns it now */
  return req_respond_as(r, j->status, body, j->reply_len, 1, NULL,
                        j->status == MHD_HTTP_OK ? j : NULL);
}
