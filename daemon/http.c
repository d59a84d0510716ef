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
 *   first call    route, method, Content-Type, Content-Length, admission;
 *                 allocate the body buffer
 *   upload calls  copy (or, over --max-body when chunked, discard)
 *   final call    suspend the connection and queue the job
 *   job done      resume, MHD_run() -> the handler is re-entered and queues
 *                 the response
 *   completed     log the request line, free the context
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
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "http.h"
#include "job.h"
#include "log.h"
#include "metrics.h"
#include "openapi.h"

/* Per-connection memory: MHD reads at most this much at once, so it bounds
 * the size of each upload chunk (the default 32 KiB means many small
 * copies for big bodies) and of the request headers. */
#define HTTP_CONN_MEMORY (256 * 1024)
/* First allocation for a chunked body; it doubles up to --max-body. */
#define HTTP_CHUNKED_START (64 * 1024)
#define HTTP_RETRY_AFTER "1"
#define HTTP_AUTH_CHALLENGE "Bearer realm=\"reduced\""
/* Largest --api-key-file, --tls-cert or --tls-key read into memory. */
#define HTTP_FILE_MAX (1024 * 1024)
#define HTTP_ID_MAX 128
#define HTTP_LOG_PATH_MAX 200

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
  char id[HTTP_ID_MAX + 1];
  char method[16];
  char path[HTTP_LOG_PATH_MAX + 1];
  const char *ctype;               /* Content-Type; NULL: application/json */
  unsigned route;                  /* index in routes[], METRICS_ROUTE_NONE */
  int format;                      /* enum metrics_format of the body */
};

enum route_kind {
  RT_REDUCE, RT_OPS, RT_HEALTHZ, RT_READYZ, RT_METRICS, RT_OPENAPI
};

struct route {
  const char *path;
  enum route_kind kind;
  const char *allow;               /* the Allow header of a 405 */
};

static const struct route routes[] = {
  { "/v1/reduce", RT_REDUCE, "POST" },
  { "/v1/ops", RT_OPS, "GET, HEAD" },
  { "/healthz", RT_HEALTHZ, "GET, HEAD" },
  { "/readyz", RT_READYZ, "GET, HEAD" },
  { "/metrics", RT_METRICS, "GET, HEAD" },
  { "/openapi.yaml", RT_OPENAPI, "GET, HEAD" },
};

static const char body_health[] = "{\"status\":\"ok\"}";
static const char body_ready[] = "{\"status\":\"ready\"}";
static const char body_draining[] =
  "{\"error\":{\"code\":\"DRAINING\",\"message\":\"the server is shutting "
  "down\"}}";

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
respond(struct req *r, int status, const char *body, size_t len,
        int must_free, const char *allow)
{
  struct MHD_Response *resp;
  enum MHD_Result ret;

  resp = MHD_create_response_from_buffer(len, (void *)body,
                                         must_free ? MHD_RESPMEM_MUST_FREE
                                                   : MHD_RESPMEM_PERSISTENT);
  if (resp == NULL) {
    if (must_free)
      free((void *)body);
    LOG_ERROR("request id=%s: cannot create a response", r->id);
    return MHD_NO;   /* closes the connection */
  }
  if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                              r->ctype != NULL ? r->ctype
                                               : "application/json") != MHD_YES ||
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
  if (api_json_encode_error(&err, &b) != 0) {
    const char *fallback;
    api_buf_free(&b);
    fallback = job_nomem_body(&len);
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, fallback, len, 0, NULL);
  }
  body = api_buf_steal(&b, &len);
  return respond(r, api_http_status(code), body, len, 1, allow);
}

/* ------------------------------------------------------------------ */
/* Header checks                                                      */
/* ------------------------------------------------------------------ */

/* Media type "application/json", any case, parameters allowed. */
static int
is_json_media_type(const char *ct)
{
  static const char want[] = "application/json";
  size_t n = sizeof want - 1;

  if (ct == NULL)
    return 0;
  while (*ct == ' ' || *ct == '\t')
    ct++;
  if (strncasecmp(ct, want, n) != 0)
    return 0;
  ct += n;
  while (*ct == ' ' || *ct == '\t')
    ct++;
  return *ct == '\0' || *ct == ';';
}

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

/* First call: every check that can refuse the request before its body. */
static enum MHD_Result
reduce_begin(struct http_server *s, struct req *r)
{
  const struct conf *c = s->conf;
  const char *ct, *cl;
  uint64_t len = 0;
  int chunked;

  ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_TYPE);
  if (!is_json_media_type(ct))
    return respond_error(r, NULL, API_E_MEDIA_TYPE,
                         "Content-Type must be application/json, not '%.64s'",
                         ct ? ct : "(none)");
  r->format = METRICS_FMT_JSON;

  chunked = is_chunked(r->conn);
  cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                   MHD_HTTP_HEADER_CONTENT_LENGTH);
  if (!chunked) {
    if (cl == NULL)
      return respond_error(r, NULL, API_E_LENGTH_REQUIRED,
                           "a POST body needs Content-Length or chunked "
                           "Transfer-Encoding");
    if (parse_length(cl, &len) != 0)
      return respond_error(r, NULL, API_E_LENGTH_REQUIRED,
                           "invalid Content-Length '%.32s'", cl);
    if (len > c->max_body)
      return respond_error(r, NULL, API_E_BODY_TOO_LARGE,
                           "Content-Length %llu is above the limit of %llu "
                           "bytes (--max-body)", (unsigned long long)len,
                           (unsigned long long)c->max_body);
  }

  if (s->draining)
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, body_draining,
                   sizeof body_draining - 1, 0, NULL);
  if (s->pending >= c->max_pending)
    return respond_error(r, NULL, API_E_OVERLOADED,
                         "%zu requests are already in progress "
                         "(--max-pending %llu); retry later", s->pending,
                         (unsigned long long)c->max_pending);

  /* Allocate once when the length is known; chunked grows geometrically. */
  r->expect_len = chunked ? UINT64_MAX : len;
  r->body_cap = chunked ? (size_t)(c->max_body < HTTP_CHUNKED_START
                                   ? c->max_body : HTTP_CHUNKED_START)
                        : (size_t)len;
  r->body = malloc(r->body_cap > 0 ? r->body_cap : 1);
  if (r->body == NULL)
    return respond_error(r, NULL, API_E_OVERLOADED,
                         "cannot allocate %zu bytes for the body; retry later",
                         r->body_cap);
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
    job_release(&r->job);
    free(r->body);
    free(r);
    return;
  }
  /* The body is no longer needed; free it before the response goes out. */
  free(r->body);
  r->body = NULL;
  r->state = RS_DONE;
  MHD_resume_connection(r->conn);
  run_mhd(s);   /* required in external mode after a resume */
}

/* Final call: the body is complete. */
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

  r->job.body = r->body;
  r->job.body_len = r->body_len;
  /* Every element takes at least two bytes of JSON ("0,"). */
  r->job.max_elements = (uint64_t)r->body_len / 2 + 1;
  r->job.max_tasks = (unsigned)s->conf->threads;
  r->job.metrics = s->metrics;
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

  if (body == NULL) {
    const char *fallback = job_nomem_body(&len);
    return respond(r, MHD_HTTP_SERVICE_UNAVAILABLE, fallback, len, 0, NULL);
  }
  j->reply = NULL;   /* MHD owns it now */
  return respond(r, j->status, body, j->reply_len, 1, NULL);
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

  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    if (strcmp(url, routes[i].path) == 0) {
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
  if (r == NULL) {
    r = calloc(1, sizeof *r);
    if (r == NULL)
      return MHD_NO;
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
  ns = now_ns() - r->t0_ns;
  obs.route = r->route;
  /* A running job may still write job.op: not read then. */
  obs.op = r->state == RS_RUNNING ? 0 : r->job.op;
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
  if (r->state == RS_RUNNING) {
    r->orphaned = 1;   /* the job still uses it: reduce_done_cb frees */
    return;
  }
  job_release(&r->job);
  free(r->body);
  free(r);
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

void
http_drain(struct http_server *s, http_idle_cb idle_cb, void *arg)
{
  int fd;

  if (s->closed || s->draining)
    return;
  s->draining = 1;
  s->idle_cb = idle_cb;
  s->idle_arg = arg;
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
