/* req.c - the request context: its state edges and its responses (loop
 * thread, inside the access handler).  The diagram is in req.h. */
#include "config.h" /* autoconf */

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "encoding.h"
#include "log.h"
#include "proto.h"
#include "req.h"
#include "tmem.h"

#define HTTP_RETRY_AFTER "1"
/* A request that moved this much memory trims the heap when freed. */
#define REQ_TRIM_BYTES (1u << 20)
#define HTTP_AUTH_CHALLENGE "Bearer realm=\"reduced\""

#define S(x) (1u << REQ_##x)
#define READING (S(PREFIX) | S(BODY) | S(DATA) | S(STREAMING))

/* edges[from]: the states `from` may move to (req.h).  Any state but NEW
 * may become ORPHANED. */
static const unsigned edges[REQ_NSTATES] = {
  [REQ_NEW] = S(HEADERS),
  [REQ_HEADERS] = S(ANSWERED) | S(QUEUED) | READING,
  [REQ_QUEUED] = READING | S(DISCARDING),
  [REQ_PREFIX] = S(DATA) | S(STREAMING) | S(BODY) | S(DISCARDING) | S(ANSWERED),
  [REQ_BODY] = S(DISCARDING) | S(RUNNING) | S(DONE) | S(ANSWERED),
  [REQ_DATA] = S(DISCARDING) | S(RUNNING) | S(ANSWERED),
  [REQ_STREAMING] = S(PAUSED) | S(DISCARDING) | S(RUNNING) | S(ANSWERED),
  [REQ_PAUSED] = S(STREAMING),
  [REQ_DISCARDING] = S(DISCARDING) | S(ANSWERED),
  [REQ_RUNNING] = S(DONE),
  [REQ_DONE] = S(ANSWERED),
  [REQ_ANSWERED] = 0,
  [REQ_ORPHANED] = 0,
};

void req_set_state(struct req *r, enum req_state to)
{
  assert(r->state < REQ_NSTATES && to < REQ_NSTATES);
  assert(
    (edges[r->state] & (1u << to)) != 0 ||
    (to == REQ_ORPHANED && r->state != REQ_NEW && r->state != REQ_ORPHANED));
  r->state = to;
}

int req_reading(const struct req *r)
{
  return ((READING | S(DISCARDING)) & (1u << r->state)) != 0;
}

int req_parse_length(const char *s, uint64_t *out)
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

int req_is_chunked(struct MHD_Connection *conn)
{
  const char *te = MHD_lookup_connection_value(
    conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  return te != NULL && strcasestr(te, "chunked") != NULL;
}

/* The watch of one connection's socket (req.h): a libuv poll for
 * EPOLLRDHUP from the connection's start to its close (server.c calls
 * req_conn_open/close from MHD's connection notifications), and the
 * request it is serving, if admitted or QUEUED.  Its own allocation,
 * freed by the poll's close callback. */
struct req_watch {
  uv_poll_t poll;
  uv_timer_t later; /* re-looks while the kernel holds data */
  struct server *srv;
  struct req *r; /* admitted or QUEUED request, or NULL */
  int fd;
  int open_handles; /* freed when both are closed */
};

/* Request bytes libmicrohttpd may hold in its connection buffer. */
#define REQ_MHD_BUFFERED (32u * 1024)
/* How long to wait before looking again at a closed connection whose
 * unread bytes MHD is still to take. */
#define REQ_WATCH_LATER_MS 250

static void watch_closed(uv_handle_t *h)
{
  struct req_watch *w = h->data;

  if (--w->open_handles == 0)
    free(w);
}

static void watch_cb(uv_poll_t *h, int status, int events);

static void later_cb(uv_timer_t *t)
{
  struct req_watch *w = t->data;

  uv_poll_start(&w->poll, UV_DISCONNECT, watch_cb); /* fires again if
                                                         * still closed */
}

/* The client shut its side down (EPOLLRDHUP): it closed, or only stopped
 * sending (a half-close after a whole request, which must be answered).
 * Decides from what is still unread:
 *   QUEUED: if the rest of the body cannot be in the kernel's buffer (and
 *     MHD's), the body can never complete: leave the queue and resume to
 *     DISCARDING; else wait on, admitted or timed out as usual;
 *   suspended (PAUSED, RUNNING) or answering (DONE, ANSWERED): nothing;
 *     MHD reads the end once resumed, or fails to write to a closed peer;
 *   otherwise (no request yet or between requests, headers or body being
 *     read): with nothing unread, MHD (epoll, edge-triggered) has missed
 *     the end that came with the last bytes it read and would keep the
 *     connection until --timeout: shut the socket down, which wakes MHD,
 *     whose next read or write fails, and it closes the connection; with
 *     bytes unread, look again a little later. */
static void watch_cb(uv_poll_t *h, int status, int events)
{
  struct req_watch *w = h->data;
  struct req *r = w->r;
  struct server *s = w->srv;
  int unread = 0;

  (void)status;
  (void)events;
  uv_poll_stop(h); /* level-triggered: looked at once */
  if (ioctl(w->fd, FIONREAD, &unread) != 0)
    unread = 0;
  if (r != NULL && r->state == REQ_QUEUED) {
    if (r->expect_len != UINT64_MAX &&
        (uint64_t)unread + REQ_MHD_BUFFERED >= r->expect_len)
      return; /* the whole body may be here: a half-close */
    LOG_DEBUG("request id=%s: the client closed while waiting %.3f s", r->id,
              admit_waited(&r->ticket));
    req_watch_stop(r);
    admit_release(&s->admit, &r->ticket);
    api_fail(&r->derr, API_E_OVERLOADED,
             "the client closed the "
             "connection");
    req_set_state(r, REQ_DISCARDING);
    MHD_resume_connection(r->conn);
    server_run(s); /* MHD reads the close and completes the request */
    return;
  }
  if (r != NULL && (r->state == REQ_PAUSED || r->state == REQ_RUNNING ||
                    r->state == REQ_DONE || r->state == REQ_ANSWERED ||
                    r->state == REQ_ORPHANED))
    return;
  if (unread > 0) {
    uv_timer_start(&w->later, later_cb, REQ_WATCH_LATER_MS, 0);
    return;
  }
  LOG_DEBUG("request id=%s: the client closed the connection",
            r != NULL ? r->id : "-");
  shutdown(w->fd, SHUT_RDWR);
  server_run(s);
}

void *req_conn_open(struct server *s, struct MHD_Connection *conn)
{
  const union MHD_ConnectionInfo *ci;
  struct req_watch *w;

  ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (ci == NULL || (w = calloc(1, sizeof *w)) == NULL)
    return NULL; /* unwatched: MHD's own detection, or --timeout */
  w->srv = s;
  w->fd = ci->connect_fd;
  w->poll.data = w;
  w->later.data = w;
  if (uv_poll_init_socket(s->loop, &w->poll, w->fd) != 0) {
    free(w);
    return NULL;
  }
  uv_timer_init(s->loop, &w->later);
  w->open_handles = 2;
  if (uv_poll_start(&w->poll, UV_DISCONNECT, watch_cb) != 0) {
    req_conn_close(w);
    return NULL;
  }
  return w;
}

void req_conn_close(void *watch)
{
  struct req_watch *w = watch;

  if (w == NULL)
    return;
  if (w->r != NULL)
    w->r->watch = NULL;
  uv_close((uv_handle_t *)&w->poll, watch_closed);
  uv_close((uv_handle_t *)&w->later, watch_closed);
}

void req_watch_start(struct req *r)
{
  const union MHD_ConnectionInfo *ci;
  struct req_watch *w;

  ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  w = ci != NULL ? ci->socket_context : NULL;
  if (w == NULL || r->watch != NULL)
    return;
  w->r = r;
  r->watch = w;
}

void req_watch_stop(struct req *r)
{
  if (r->watch == NULL)
    return;
  r->watch->r = NULL;
  r->watch = NULL;
}

void req_free(struct req *r)
{
  /* Give a large request's memory back to the system (the pool threads'
   * arenas too): the daemon's size returns to idle after large bodies. */
  int large = r->in_bytes + r->out_bytes >= REQ_TRIM_BYTES ||
              r->ticket.bytes >= REQ_TRIM_BYTES;

  assert(!job_busy(&r->job)); /* a pool thread would use freed memory */
  req_watch_stop(r);
  admit_release(&r->srv->admit, &r->ticket);
  job_release(&r->job);
  api_prefix_free(&r->prefix);
  zbody_free(r->zbody);
  api_tmem_free(r->body);
  free(r->query);
  free(r);
  if (large)
    malloc_trim(0);
}

/* api_header_cb over an MHD response. */
static int add_header(void *arg, const char *name, const char *value)
{
  return MHD_add_response_header(arg, name, value) == MHD_YES ? 0 : -1;
}

/* Every response's headers; a job's 200 adds its protocol's. */
static int add_headers(struct req *r, struct MHD_Response *resp, int status,
                       const char *allow, const struct job *result)
{
  const char *ctype = result != NULL ? api_reply_media_type(&result->reply_info)
                      : r->ctype != NULL ? r->ctype
                                         : "application/json";

  if (add_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) != 0 ||
      (result != NULL &&
       result->call.proto->reply_headers(&result->reply_info, add_header,
                                         resp) != 0) ||
      add_header(resp, "X-Request-Id", r->id) != 0 ||
      (allow != NULL && add_header(resp, MHD_HTTP_HEADER_ALLOW, allow) != 0) ||
      (status == MHD_HTTP_SERVICE_UNAVAILABLE &&
       add_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, HTTP_RETRY_AFTER) != 0) ||
      (status == MHD_HTTP_UNAUTHORIZED &&
       add_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                  HTTP_AUTH_CHALLENGE) != 0) ||
      /* While draining, do not invite more requests on this connection. */
      (r->srv->draining &&
       add_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") != 0) ||
      add_header(resp, MHD_HTTP_HEADER_VARY, "Accept-Encoding") != 0 ||
      (r->encoded &&
       add_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip") != 0) ||
      (r->page != NULL &&
       (add_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, PAGES_CACHE) != 0 ||
        add_header(resp, MHD_HTTP_HEADER_ETAG, pages_etag(r->page)) != 0 ||
        add_header(resp, "Content-Security-Policy", PAGES_CSP) != 0 ||
        add_header(resp, "X-Content-Type-Options", "nosniff") != 0 ||
        add_header(resp, "Referrer-Policy", "no-referrer") != 0)))
    return -1;
  return 0;
}

/* The gzip form of an answer the client accepts gzipped: 1 with *body,
 * *len the new (malloc'ed) body, or 0 to send it as it is (small, not
 * accepted, no smaller gzipped, out of memory). */
static int gzip_answer(struct req *r, const char **body, size_t *len)
{
  struct api_buf b;

  if (r->encoded || *len < API_GZIP_MIN ||
      !api_accept_gzip(
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_ACCEPT_ENCODING)))
    return 0;
  api_buf_init(&b);
  /* zlib's level 1 for large answers: the loop thread does this work. */
  if (api_gzip(*body, *len, *len > (1u << 20) ? 1 : -1, &b) != 0 ||
      b.len >= *len) {
    api_buf_free(&b);
    return 0;
  }
  *body = api_buf_steal(&b, len);
  return *body != NULL;
}

enum MHD_Result req_respond_as(struct req *r, int status, const char *body,
                               size_t len, int must_free, const char *allow,
                               const struct job *result)
{
  struct MHD_Response *resp;
  enum MHD_Result ret;
  const char *plain = body;

  if (gzip_answer(r, &body, &len)) {
    if (must_free)
      free((void *)plain);
    must_free = 1;
    r->encoded = 1;
  }
  resp = MHD_create_response_from_buffer(len, (void *)body,
                                         must_free ? MHD_RESPMEM_MUST_FREE
                                                   : MHD_RESPMEM_PERSISTENT);
  if (resp == NULL) {
    if (must_free)
      free((void *)body);
    LOG_ERROR("request id=%s: cannot create a response", r->id);
    return MHD_NO; /* closes the connection */
  }
  if (add_headers(r, resp, status, allow, result) != 0) {
    MHD_destroy_response(resp);
    LOG_ERROR("request id=%s: cannot add response headers", r->id);
    return MHD_NO;
  }
  ret = MHD_queue_response(r->conn, (unsigned int)status, resp);
  MHD_destroy_response(resp);
  r->encoded = 0; /* said of this body only */
  req_set_state(r, REQ_ANSWERED);
  if (ret == MHD_YES) {
    r->status = status;
    r->out_bytes = len;
  }
  return ret;
}

enum MHD_Result req_respond_static(struct req *r, int status, const char *body)
{
  return req_respond_as(r, status, body, strlen(body), 0, NULL, NULL);
}

static enum MHD_Result respond_nomem(struct req *r)
{
  return req_respond_static(r, MHD_HTTP_SERVICE_UNAVAILABLE,
                            r->job.call.proto->nomem_body);
}

enum MHD_Result req_respond_error(struct req *r, const char *allow, int code,
                                  const char *fmt, ...)
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
  if (r->job.call.proto->encode_error(&err, &b) != 0) {
    api_buf_free(&b);
    return respond_nomem(r);
  }
  body = api_buf_steal(&b, &len);
  return req_respond_as(r, api_http_status(code), body, len, 1, allow, NULL);
}

enum MHD_Result req_respond_rd_error(struct req *r, const struct rd_error *err)
{
  return req_respond_error(r, NULL, err->code, "%s", err->msg);
}

enum MHD_Result req_respond_built(struct req *r, int rc, struct api_buf *b)
{
  char *body;
  size_t len;

  if (rc != 0) {
    api_buf_free(b);
    return respond_nomem(r);
  }
  body = api_buf_steal(b, &len);
  if (body == NULL)
    return respond_nomem(r);
  return req_respond_as(r, MHD_HTTP_OK, body, len, 1, NULL, NULL);
}
