/* server.c - libmicrohttpd driven by the libuv loop: the access handler's
 * dispatch on the request's state, the completed and URI callbacks, MHD
 * runs from the poll and timer handles, and start, drain and close.
 * Routing is in http.c, POST bodies in post.c, keys and TLS files in
 * auth.c; the request's states are drawn in req.h, the threads and the
 * request path in docs/mhd-libuv.md.
 *
 * Threads: MHD runs in external epoll mode, so MHD_run() - and with it the
 * access handler, the completed callback and the MHD logger - runs only on
 * its shard's loop thread, as do the shard's poll/timer/cmd callbacks and
 * the job's done callback ("the loop thread" in the comments below).
 * Other threads reach a shard only through shard_cmd() (bits and its
 * async handle) and its locked list of new connections (server.h).  The
 * pool threads touch only the job inside a request context, never MHD or
 * this file's state.
 */
#include "config.h" /* autoconf */

#include <assert.h>
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
#include <sys/epoll.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "server.h"
#include "sock.h"
#include "log.h"
#include "pages.h"
#include "metrics.h"
#include "post.h"
#include "proto.h"
#include "req.h"
#include "http.h"

/* Per-connection memory: bounds the request headers and each upload chunk.
 * libmicrohttpd zeroes the whole pool for every request, so a large pool
 * costs more than the copies it saves: measured with wrk on small requests,
 * 256 KiB gave 29k requests/s and 32 KiB 48k, while a 256 MiB raw upload
 * took 0.15-0.17 s either way. */
#define SERVER_CONN_MEMORY (32 * 1024)

/* ------------------------------------------------------------------ */
/* Request ids and log fields                                         */
/* ------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copies `src` for the log: printable ASCII only, bounded. */
static void copy_printable(char *dst, size_t cap, const char *src)
{
  size_t i = 0;

  for (; src != NULL && src[i] != '\0' && i + 1 < cap; i++)
    dst[i] = (src[i] > 0x20 && src[i] < 0x7f) ? src[i] : '?';
  dst[i] = '\0';
}

/* A client id is echoed only if it is 1-128 of [A-Za-z0-9._:-]. */
static int valid_request_id(const char *id)
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
static uint64_t mix64(uint64_t x)
{
  x += UINT64_C(0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static void set_request_id(struct server *s, struct req *r)
{
  const char *id = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                               "X-Request-Id");
  if (valid_request_id(id)) {
    snprintf(r->id, sizeof r->id, "%s", id);
    return;
  }
  /* Shard i numbers i, i + N, i + 2N, ...: distinct across shards. */
  snprintf(r->id, sizeof r->id, "%016llx",
           (unsigned long long)mix64(
             s->id_seed + s->id_counter++ * s->primary->nshards + s->index));
}

/* Chunked, or a Content-Length other than 0. */
static int has_body(struct MHD_Connection *conn)
{
  const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                               MHD_HTTP_HEADER_CONTENT_LENGTH);
  uint64_t len;

  if (req_is_chunked(conn))
    return 1;
  return cl != NULL && (req_parse_length(cl, &len) != 0 || len > 0);
}

/* ------------------------------------------------------------------ */
/* The access handler (loop thread, inside MHD_run)                   */
/* ------------------------------------------------------------------ */

/* The API key check, against shard 0's keys (SIGHUP replaces them there
 * under the write lock). */
static int key_allows(struct server *s, const char *url, const char *authz)
{
  struct server *p = s->primary;
  int ok;

  pthread_rwlock_rdlock(&p->auth_lock);
  ok = auth_allows(&p->auth, url, authz);
  pthread_rwlock_unlock(&p->auth_lock);
  return ok;
}

/* The first call of a request: the context's fields, the API key check,
 * then routing (at once when a body follows).  HEADERS, or ANSWERED. */
static enum MHD_Result first_call(struct server *s, struct req *r,
                                  struct MHD_Connection *conn, const char *url,
                                  const char *method)
{
  r->srv = s;
  r->conn = conn;
  r->t0_ns = now_ns();
  r->route = METRICS_ROUTE_NONE;
  copy_printable(r->method, sizeof r->method, method);
  copy_printable(r->path, sizeof r->path, url);
  set_request_id(s, r);
  atomic_fetch_add_explicit(&s->inflight, 1, memory_order_relaxed);
  s->told_idle = 0;
  metrics_inflight_add(s->metrics, 1);
  req_set_state(r, REQ_HEADERS);
  /* The static pages are public (pages.h); the API calls they make carry
   * the key the user typed. */
  if (pages_find(url) == NULL &&
      !key_allows(s, url,
                  MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_AUTHORIZATION)))
    return req_respond_error(r, NULL, API_E_UNAUTHORIZED,
                             "this route needs 'Authorization: Bearer <key>' "
                             "with a valid API key");
  /* MHD 0.9.75 closes the connection after a response queued at this
   * first call (it discards the rest of the request), which is right for
   * refusing a body but would end keep-alive for every GET: requests
   * without a body are answered at their final call instead. */
  if (!has_body(conn))
    return MHD_YES;
  return http_dispatch(s, r, url, method);
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *conn,
                                 const char *url, const char *method,
                                 const char *version, const char *upload_data,
                                 size_t *upload_data_size, void **con_cls)
{
  struct server *s = cls;
  struct req *r = *con_cls;

  (void)version;
  if (r == NULL) {
    /* uri_log_cb ran out of memory: the query string is lost. */
    if ((r = calloc(1, sizeof *r)) == NULL)
      return MHD_NO;
    r->query_lost = 1;
    r->job.call.proto = &api_proto_v1;
    *con_cls = r;
  }
  switch (r->state) {
  case REQ_NEW: return first_call(s, r, conn, url, method);
  case REQ_HEADERS:
    /* The final call of a request without a body. */
    if (http_dispatch(s, r, url, method) != MHD_YES)
      return MHD_NO;
    if (req_reading(r)) /* an admitted empty POST body */
      return post_submit(s, r);
    return MHD_YES;
  case REQ_PREFIX:
  case REQ_BODY:
  case REQ_DATA:
  case REQ_STREAMING:
  case REQ_DISCARDING:
    if (r->recall) {
      /* The first call again, after waiting in the queue (QUEUED): the
       * body follows, unless the wait ended in an error, answered now so
       * that the body is never read (MHD then closes the connection). */
      r->recall = 0;
      assert(*upload_data_size == 0);
      if (r->state != REQ_DISCARDING)
        return MHD_YES;
    }
    if (*upload_data_size == 0)
      return post_submit(s, r);
    post_upload(s, r, upload_data, upload_data_size);
    return MHD_YES; /* suspended if it left bytes unprocessed */
  case REQ_PAUSED:
    /* MHD may call again in the same pass after the call that suspended
     * (a compressed body's decoder paused having consumed every byte, and
     * a chunk boundary followed): leave the bytes for after the resume,
     * never drop them. */
    if (*upload_data_size > 0)
      return MHD_YES;
    break;
  case REQ_DONE: return post_answer(r);
  default: break;
  }
  /* Answered early (or not expecting data): drop whatever still arrives. */
  r->in_bytes += *upload_data_size;
  *upload_data_size = 0;
  return MHD_YES;
}

/* Loop thread (inside MHD_run): the request is over; log it, free it. */
static void completed_cb(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
  struct server *s = cls;
  struct req *r = *con_cls;
  struct metrics_obs obs;
  uint64_t ns;

  (void)conn;
  if (r == NULL)
    return;
  *con_cls = NULL;
  req_watch_stop(r); /* before MHD closes the socket */
  if (r->state == REQ_NEW) {
    /* Refused by MHD before the handler ran (its own error page): never
     * counted in flight, never logged. */
    free(r->query);
    free(r);
    return;
  }
  ns = now_ns() - r->t0_ns;
  obs.route = r->route;
  /* A /v2 model path names the operator whatever the body says; a
   * running job may still write job.op: not read then. */
  obs.op = r->v2rt.op != 0           ? r->v2rt.op
           : r->state == REQ_RUNNING ? 0
                                     : r->job.op;
  obs.format = r->format;
  obs.status = r->status;
  obs.duration_ns = ns;
  obs.in_bytes = r->in_bytes;
  obs.out_bytes = r->out_bytes;
  metrics_observe(s->metrics, &obs);
  metrics_inflight_add(s->metrics, -1);
  LOG_INFO("request id=%s method=%s path=%s status=%d in=%llu out=%zu "
           "ms=%.3f",
           r->id, r->method, r->path, r->status,
           (unsigned long long)r->in_bytes, r->out_bytes, (double)ns / 1e6);
  if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
    LOG_DEBUG("request id=%s ended early (MHD reason %d)", r->id, (int)toe);
  admit_release(&s->admit, &r->ticket);
  atomic_fetch_sub_explicit(&s->inflight, 1, memory_order_relaxed);
  if (r->state == REQ_RUNNING || job_busy(&r->job)) {
    /* A pool work still uses it (a client gone mid-stream): the job's
     * callback frees it. */
    req_set_state(r, REQ_ORPHANED);
    return;
  }
  req_free(r);
}

static void shard_cmd(struct server *s, unsigned bits);

/* Any shard's thread: one count of open_conns is gone (server.h: each
 * connection counts once from its accept to the return of its
 * MHD_add_connection(), and once from MHD's start notification to its
 * close notification).  At --max-connections shard 0 stopped accepting:
 * wake it. */
static void conn_gone(struct server *p)
{
  unsigned was = atomic_fetch_sub(&p->open_conns, 1);

  if (was == (unsigned)p->conf->max_connections)
    shard_cmd(p, SERVER_CMD_ACCEPT);
}

/* Loop thread (inside MHD_run): a connection starts or closes; its
 * socket is watched for the client's close meanwhile (req.h). */
static void notify_conn_cb(void *cls, struct MHD_Connection *conn,
                           void **socket_context,
                           enum MHD_ConnectionNotificationCode toe)
{
  struct server *s = cls;

  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    atomic_fetch_add(&s->primary->open_conns, 1);
    *socket_context = req_conn_open(s, conn);
  } else {
    req_conn_close(*socket_context);
    *socket_context = NULL;
    conn_gone(s->primary);
  }
}

/* Loop thread (inside MHD_run), before the headers are parsed: the only
 * place MHD 0.9.75 shows the raw request target, so keep its query string
 * (api_query_parse() decodes it).  The context starts here; the access
 * handler completes it. */
static void *uri_log_cb(void *cls, const char *uri, struct MHD_Connection *conn)
{
  struct req *r = calloc(1, sizeof *r);
  const char *q = uri != NULL ? strchr(uri, '?') : NULL;

  (void)cls;
  (void)conn;
  if (r == NULL)
    return NULL;
  r->state = REQ_NEW;
  r->job.call.proto = &api_proto_v1; /* a /v2 path switches it */
  if (q != NULL) {
    r->query = strdup(q + 1);
    r->query_lost = r->query == NULL;
  }
  return r;
}

/* MHD's own diagnostics (loop thread). */
static void mhd_log_cb(void *cls, const char *fmt, va_list ap)
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

/* A daemon replaced by a reload of the TLS files (server_reload): it no
 * longer listens, and serves the connections it has (keep-alive ones
 * included, with the old certificate) until the last one closes.  Its
 * epoll fd is in s->epfd next to the current daemon's. */
struct server_old {
  struct MHD_Daemon *mhd;
  int epoll_fd;
  struct server_old *next;
};

/* Stops a retired daemon without connections.  1 if it was stopped. */
static int old_stop_if_idle(struct server *s, struct server_old *o)
{
  const union MHD_DaemonInfo *info;
  struct server_old **pp;

  info = MHD_get_daemon_info(o->mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
  if (info == NULL || info->num_connections > 0)
    return 0;
  for (pp = &s->old; *pp != o; pp = &(*pp)->next)
    ;
  *pp = o->next;
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, o->epoll_fd, NULL);
  MHD_stop_daemon(o->mhd);
  free(o);
  LOG_INFO("reload: the daemon of the old certificate closed its last "
           "connection");
  return 1;
}

/* Runs a retired daemon; 1 if it is gone. */
static int old_run(struct server *s, struct server_old *o)
{
  MHD_run(o->mhd);
  return old_stop_if_idle(s, o);
}

/* Runs MHD, re-arms the timer, and tells a draining owner when idle
 * (server.h).  Nothing may touch `s` after the idle callback. */
void server_run(struct server *s)
{
  MHD_UNSIGNED_LONG_LONG ms;
  int have;

  if (s->closed)
    return;
  MHD_run(s->mhd);
  have = MHD_get_timeout(s->mhd, &ms) == MHD_YES;
  for (struct server_old *o = s->old, *next; o != NULL; o = next) {
    MHD_UNSIGNED_LONG_LONG oms;
    next = o->next;
    if (old_run(s, o) == 0 && MHD_get_timeout(o->mhd, &oms) == MHD_YES &&
        (!have || oms < ms)) {
      ms = oms;
      have = 1;
    }
  }
  if (have)
    uv_timer_start(&s->timer, timer_cb, (uint64_t)ms, 0);
  else
    uv_timer_stop(&s->timer);
  if (!s->draining ||
      atomic_load_explicit(&s->inflight, memory_order_relaxed) != 0)
    return;
  if (s->primary != s) {
    /* Shard 0 decides when every shard is idle. */
    if (!s->told_idle) {
      s->told_idle = 1;
      shard_cmd(s->primary, SERVER_CMD_IDLE);
    }
    return;
  }
  for (unsigned i = 0; i < s->nstarted; i++)
    if (!atomic_load(&s->shards[i].drained) ||
        atomic_load(&s->shards[i].inflight) != 0)
      return;
  if (s->idle_cb != NULL) {
    server_idle_cb cb = s->idle_cb;
    s->idle_cb = NULL;
    cb(s->idle_arg);
  }
}

size_t server_inflight(struct server *s)
{
  struct server *p = s->primary;
  size_t n = atomic_load(&p->inflight);

  for (unsigned i = 0; i < p->nstarted; i++)
    n += atomic_load(&p->shards[i].inflight);
  return n;
}

static void poll_cb(uv_poll_t *p, int status, int events)
{
  (void)events;
  if (status < 0)
    LOG_WARN("poll on the MHD epoll fd: %s", uv_strerror(status));
  server_run(container_of(p, struct server, poll));
}

static void timer_cb(uv_timer_t *t)
{
  server_run(container_of(t, struct server, timer));
}

/* ------------------------------------------------------------------ */
/* Start, drain, close                                                */
/* ------------------------------------------------------------------ */

static void seed_ids(struct server *s)
{
  uint64_t seed;

  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
    seed = now_ns() ^ ((uint64_t)getpid() << 32);
  s->id_seed = seed;
  s->id_counter = 0;
}

/* Writes the port to `path` atomically: a temp file renamed over it. */
static int write_port_file(const char *path, unsigned port)
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

/* The metrics, with every route pattern of the route table as a label
 * value (the route index of a request is its index there). */
static int metrics_setup(struct server *s)
{
  struct timespec start;

  clock_gettime(CLOCK_REALTIME, &start);
  s->metrics = metrics_create((unsigned)s->conf->threads,
                              (uint64_t)s->conf->max_pending, &start);
  if (s->metrics == NULL) {
    LOG_ERROR("cannot allocate the metrics: out of memory");
    return -1;
  }
  for (size_t i = 0; i < http_route_count(); i++)
    if (metrics_route_add(s->metrics, http_route_path(i)) != (int)i) {
      LOG_ERROR("more routes than METRICS_MAX_ROUTES");
      return -1;
    }
  return 0;
}

/* --api-key-file, --tls-cert and --tls-key.  0 or SERVER_E_CONFIG. */
static int secrets_load(struct server *s, const struct conf *c)
{
  if (c->api_key_file != NULL && auth_load_keys(&s->auth, c->api_key_file))
    return SERVER_E_CONFIG;
  if (c->tls_cert == NULL)
    return 0;
  if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    LOG_ERROR("--tls-cert: this libmicrohttpd has no TLS support");
    return SERVER_E_CONFIG;
  }
  return auth_load_tls(&s->auth, c->tls_cert, c->tls_key) != 0 ? SERVER_E_CONFIG
                                                               : 0;
}

/* The bodies built once: GET /v1/ops. */
static int bodies_build(struct server *s)
{
  struct api_buf b;

  api_buf_init(&b);
  if (api_json_encode_ops(&b) != 0) {
    api_buf_free(&b);
    LOG_ERROR("cannot build the /v1/ops body: out of memory");
    return -1;
  }
  s->ops_body = api_buf_steal(&b, &s->ops_len);
  return 0;
}

/* Starts MHD in external epoll mode without a listen socket of its own
 * (shard 0 accepts and adds the connections), with the TLS PEM texts
 * `cert`/`key` (NULL: plain HTTP).  NULL after logging why. */
static struct MHD_Daemon *mhd_open(struct server *s, const struct conf *c,
                                   const char *cert, const char *key)
{
  struct MHD_Daemon *d;
  unsigned int flags;

  flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
          MHD_USE_NO_LISTEN_SOCKET;
  if (cert != NULL)
    flags |= MHD_USE_TLS;
  /* --max-connections is counted across the shards by accept_cb(); MHD's
   * own limit is the same number, never reached first.  Options that may
   * be absent go last, ending the list when unused (MHD stops at the
   * first MHD_OPTION_END). */
  d = MHD_start_daemon(
    flags, 0, NULL, NULL, access_cb, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log_cb,
    s, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)c->max_connections,
    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)c->max_conn_per_ip,
    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)c->timeout,
    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVER_CONN_MEMORY,
    MHD_OPTION_NOTIFY_COMPLETED, completed_cb, s, MHD_OPTION_NOTIFY_CONNECTION,
    notify_conn_cb, s, MHD_OPTION_URI_LOG_CALLBACK, uri_log_cb, s,
    MHD_OPTION_SIGPIPE_HANDLED_BY_APP, (int)1,
    cert != NULL ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, cert,
    MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
  if (d == NULL)
    LOG_ERROR("cannot start libmicrohttpd%s", cert != NULL
                                                ? " (a bad TLS certificate "
                                                  "or key?)"
                                                : "");
  return d;
}

/* Binds conf->host:conf->port and listens (shard 0).  0 or -1. */
static int listen_open(struct server *s, const struct conf *c)
{
  unsigned port;
  int fd = sock_listen("--listen", c->listen, c->host, (unsigned)c->port,
                       &port);

  if (fd < 0)
    return -1;
  s->listen_fd = fd;
  uv_poll_init(s->loop, &s->listen_poll, fd);
  uv_timer_init(s->loop, &s->listen_wait);
  s->port = (uint16_t)port;
  return 0;
}

static int epoll_add(int epfd, int fd)
{
  struct epoll_event ev;

  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void cmd_cb(uv_async_t *h);

/* Watches MHD's epoll fd from the shard's loop.  0; -1 before the handles
 * exist (the caller stops MHD); -2 after (server_close() closes them). */
static int mhd_watch(struct server *s, uv_loop_t *loop)
{
  const union MHD_DaemonInfo *info;
  int rc, fd;

  info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  fd = info != NULL ? info->epoll_fd : -1;
  if (fd < 0) {
    LOG_ERROR("cannot read the epoll fd from MHD");
    return -1;
  }
  /* libuv watches an epoll set of our own that holds MHD's epoll fd (and,
   * after a TLS reload, the old daemon's until it is done): a reload
   * changes that set, never the libuv handle. */
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (s->epfd < 0 || epoll_add(s->epfd, fd) != 0) {
    LOG_ERROR("cannot create an epoll set: %s", strerror(errno));
    return -1;
  }
  rc = uv_poll_init(loop, &s->poll, s->epfd);
  if (rc != 0) {
    LOG_ERROR("cannot watch the MHD epoll fd: %s", uv_strerror(rc));
    return -1;
  }
  uv_timer_init(loop, &s->timer);
  uv_async_init(loop, &s->cmd, cmd_cb);
  s->cmd.data = s;
  s->handles = 1;
  rc = uv_poll_start(&s->poll, UV_READABLE, poll_cb);
  if (rc != 0) {
    LOG_ERROR("cannot watch the MHD epoll fd: %s", uv_strerror(rc));
    return -2;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* Accepting (shard 0) and handing connections to the shards          */
/* ------------------------------------------------------------------ */

/* An accepted connection on its way to a shard's MHD daemon. */
struct server_conn {
  int fd;
  socklen_t len;
  struct sockaddr_storage addr;
  struct server_conn *next;
};

/* Any thread: sets command bits of shard `s` and wakes its loop. */
static void shard_cmd(struct server *s, unsigned bits)
{
  atomic_fetch_or(&s->cmds, bits);
  uv_async_send(&s->cmd);
}

/* The shard's loop thread: gives a connection to MHD (which closes it on
 * failure: the per-address limit, out of memory).  The accept's count
 * ends here; MHD's notifications count the connection from now on. */
static void conn_add(struct server *s, int fd, const struct sockaddr *sa,
                     socklen_t len)
{
  if (s->closed)
    close(fd);
  else
    (void)MHD_add_connection(s->mhd, fd, sa, len);
  conn_gone(s->primary);
}

/* The shard's loop thread: the connections shard 0 queued for it. */
static void conns_take(struct server *s)
{
  struct server_conn *c, *next;

  pthread_mutex_lock(&s->conn_lock);
  c = s->conns;
  s->conns = NULL;
  pthread_mutex_unlock(&s->conn_lock);
  for (; c != NULL; c = next) {
    next = c->next;
    conn_add(s, c->fd, (struct sockaddr *)&c->addr, c->len);
    free(c);
  }
}

/* The shard of a new connection: by client address when MHD counts
 * connections per address (all of one address on one daemon), else in
 * turn. */
static struct server *shard_for(struct server *p,
                                const struct sockaddr_storage *sa)
{
  unsigned i;

  if (p->nstarted == 0)
    return p;
  if (p->conf->max_conn_per_ip != 0) {
    const unsigned char *b;
    size_t n;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    if (sa->ss_family == AF_INET6) {
      b = (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
      n = 16;
    } else {
      b = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
      n = 4;
    }
    for (size_t k = 0; k < n; k++)
      h = (h ^ b[k]) * UINT64_C(0x100000001b3);
    i = (unsigned)(h % (p->nstarted + 1));
  } else {
    i = p->next_shard++ % (p->nstarted + 1);
  }
  return i == 0 ? p : &p->shards[i - 1];
}

/* Shard 0's loop: hands one accepted connection to its shard. */
static void conn_dispatch(struct server *p, int fd,
                          const struct sockaddr_storage *sa, socklen_t len)
{
  struct server *t = shard_for(p, sa);
  struct server_conn *c;

  if (t == p) {
    conn_add(p, fd, (const struct sockaddr *)sa, len);
    return;
  }
  c = malloc(sizeof *c);
  if (c == NULL) {
    close(fd);
    conn_gone(p);
    return;
  }
  c->fd = fd;
  c->len = len;
  memcpy(&c->addr, sa, sizeof c->addr);
  pthread_mutex_lock(&t->conn_lock);
  c->next = t->conns;
  t->conns = c;
  pthread_mutex_unlock(&t->conn_lock);
  shard_cmd(t, SERVER_CMD_CONNS);
}

static void accept_resume(struct server *p);

/* Shard 0's loop: SOCK_ACCEPT_WAIT_MS after EMFILE and the like (a
 * connection closing meanwhile resumes sooner: conn_gone). */
static void accept_again_cb(uv_timer_t *t)
{
  accept_resume(container_of(t, struct server, listen_wait));
}

/* Shard 0's loop: accepts up to `max` connections while below
 * --max-connections; at the limit stops watching the listen socket (the
 * clients wait in the backlog) until a close wakes it (conn_gone). */
static void accept_some(struct server *p, int max)
{
  int added = 0;

  for (int i = 0; i < max && p->listen_fd >= 0; i++) {
    struct sockaddr_storage sa;
    socklen_t len = sizeof sa;
    int fd;

    if (atomic_load(&p->open_conns) >= (unsigned)p->conf->max_connections) {
      if (p->accepting) {
        uv_poll_stop(&p->listen_poll);
        p->accepting = 0;
      }
      break;
    }
    fd = accept4(p->listen_fd, (struct sockaddr *)&sa, &len,
                 SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (sock_accept_failed(errno, "", &p->listen_poll, &p->listen_wait,
                             accept_again_cb))
        p->accepting = 0;
      break;
    }
    atomic_fetch_add(&p->open_conns, 1);
    conn_dispatch(p, fd, &sa, len);
    added = 1;
  }
  if (added)
    server_run(p);
}

static void listen_cb(uv_poll_t *h, int status, int events)
{
  struct server *p = container_of(h, struct server, listen_poll);

  (void)status;
  (void)events;
  accept_some(p, 64);
}

/* Shard 0's loop: watches the listen socket again below the limit. */
static void accept_resume(struct server *p)
{
  if (p->listen_fd < 0 || p->accepting || p->closed)
    return;
  if (atomic_load(&p->open_conns) >= (unsigned)p->conf->max_connections)
    return;
  if (uv_poll_start(&p->listen_poll, UV_READABLE, listen_cb) == 0)
    p->accepting = 1;
}

/* Shard 0's loop: closes the listen socket (drain, close). */
static void listen_close(struct server *p)
{
  if (p->listen_fd < 0)
    return;
  uv_close((uv_handle_t *)&p->listen_poll, NULL);
  uv_close((uv_handle_t *)&p->listen_wait, NULL);
  p->accepting = 0;
  close(p->listen_fd);
  p->listen_fd = -1;
}

/* ------------------------------------------------------------------ */
/* Start, drain, close                                                */
/* ------------------------------------------------------------------ */

static void reload_tls_shard(struct server *s);
static void shard_close(struct server *s);

/* A shard's loop thread: what other threads asked for (shard_cmd). */
static void cmd_cb(uv_async_t *h)
{
  struct server *s = h->data;
  unsigned bits = atomic_exchange(&s->cmds, 0);

  if (bits & SERVER_CMD_DRAIN) {
    s->draining = 1;
    atomic_store(&s->drained, 1);
  }
  if (bits & SERVER_CMD_RELOAD)
    reload_tls_shard(s);
  if (bits & SERVER_CMD_CONNS)
    conns_take(s);
  if (bits & SERVER_CMD_ACCEPT)
    accept_resume(s);
  if (bits & SERVER_CMD_CLOSE) {
    shard_close(s);
    return;
  }
  server_run(s); /* runs MHD, and reports idle (IDLE: shard 0 checks) */
}

/* Fields every shard has, from shard 0. */
static void shard_init(struct server *x, struct server *p, unsigned index)
{
  memset(x, 0, sizeof *x);
  x->conf = p->conf;
  x->epfd = -1;
  x->listen_fd = -1;
  x->primary = p;
  x->index = index;
  x->metrics = p->metrics;
  x->ops_body = p->ops_body;
  x->ops_len = p->ops_len;
  x->id_seed = p->id_seed;
  pthread_mutex_init(&x->conn_lock, NULL);
}

/* Shard 0's thread, before the shard's own thread: its loop, its admission
 * port, its MHD daemon and handles.  0 or -1 (after logging why; what was
 * made is closed). */
static int shard_open(struct server *x)
{
  struct server *p = x->primary;
  int rc;

  if ((rc = uv_loop_init(&x->own_loop)) != 0) {
    LOG_ERROR("cannot create a loop for HTTP thread %u: %s", x->index,
              uv_strerror(rc));
    return -1;
  }
  x->loop = &x->own_loop;
  if ((rc = admit_join(&x->admit, x->loop, &p->admit)) != 0) {
    LOG_ERROR("cannot join the admission queue: %s", uv_strerror(rc));
    goto fail;
  }
  x->mhd = mhd_open(x, x->conf, p->auth.tls_cert, p->auth.tls_key);
  if (x->mhd == NULL)
    goto fail;
  rc = mhd_watch(x, x->loop);
  if (rc == -1) {
    MHD_stop_daemon(x->mhd);
    x->mhd = NULL;
  }
  if (rc != 0)
    goto fail;
  return 0;
fail:
  shard_close(x);
  uv_run(x->loop, UV_RUN_DEFAULT);
  uv_loop_close(x->loop);
  return -1;
}

static void *shard_main(void *arg)
{
  struct server *x = arg;

  uv_run(x->loop, UV_RUN_DEFAULT);
  return NULL;
}

int server_start_shards(struct server *s)
{
  unsigned n = s->nshards;

  if (n <= 1)
    return 0;
  s->shards = calloc(n - 1, sizeof *s->shards);
  if (s->shards == NULL) {
    LOG_ERROR("cannot allocate %u HTTP threads: out of memory", n);
    return -1;
  }
  for (unsigned i = 1; i < n; i++) {
    struct server *x = &s->shards[i - 1];
    int rc;
    shard_init(x, s, i);
    if (shard_open(x) != 0)
      return -1;
    rc = pthread_create(&x->thread, NULL, shard_main, x);
    if (rc != 0) {
      LOG_ERROR("cannot start HTTP thread %u: %s", i, strerror(rc));
      shard_close(x);
      uv_run(x->loop, UV_RUN_DEFAULT);
      uv_loop_close(x->loop);
      return -1;
    }
    s->nstarted++;
  }
  LOG_DEBUG("%u HTTP threads", n);
  return 0;
}

int server_start(struct server *s, uv_loop_t *loop, const struct conf *c)
{
  int rc;

  memset(s, 0, sizeof *s);
  s->epfd = -1;
  s->listen_fd = -1;
  s->conf = c;
  s->loop = loop;
  s->primary = s;
  s->nshards = c->http_threads > 0 ? (unsigned)c->http_threads : 1;
  pthread_mutex_init(&s->conn_lock, NULL);
  pthread_rwlock_init(&s->auth_lock, NULL);
  s->auth_lock_init = 1;
  seed_ids(s);

  if ((rc = secrets_load(s, c)) != 0 || (rc = bodies_build(s)) != 0 ||
      (rc = metrics_setup(s)) != 0)
    goto fail;
  if ((rc = admit_init(&s->admit, loop, s->metrics, c->max_inflight_bytes,
                       c->max_pending, c->queue_timeout)) != 0) {
    LOG_ERROR("cannot start the admission queue: %s", uv_strerror(rc));
    rc = -1;
    goto fail;
  }
  if ((rc = listen_open(s, c)) != 0)
    goto fail;
  s->mhd = mhd_open(s, c, s->auth.tls_cert, s->auth.tls_key);
  if (s->mhd == NULL) {
    rc = -1;
    goto fail;
  }
  rc = mhd_watch(s, loop);
  if (rc == -2)
    return -1; /* the caller runs server_close() */
  if (rc != 0) {
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
    goto fail;
  }
  accept_resume(s);

  if (strchr(c->host, ':') != NULL)
    LOG_INFO("listening on [%s]:%u", c->host, (unsigned)s->port);
  else
    LOG_INFO("listening on %s:%u", c->host, (unsigned)s->port);
  if (c->port_file != NULL && write_port_file(c->port_file, s->port) != 0)
    return -1;
  server_run(s);
  return 0;

fail:
  listen_close(s);
  if (s->epfd >= 0)
    close(s->epfd);
  s->epfd = -1;
  admit_close(&s->admit);
  free(s->ops_body);
  s->ops_body = NULL;
  auth_free(&s->auth);
  metrics_destroy(s->metrics);
  s->metrics = NULL;
  s->closed = 1; /* nothing left for server_close() */
  return rc;
}

/* SIGHUP, --api-key-file: the new keys replace the old ones, or nothing
 * changes.  Shard 0, under the write lock while swapping. */
static void reload_keys(struct server *s, const char *path)
{
  struct auth na;
  char *cert, *key;

  memset(&na, 0, sizeof na);
  if (auth_load_keys(&na, path) != 0) {
    auth_free(&na);
    LOG_ERROR("reload: --api-key-file %s is missing or invalid (see above): "
              "keeping the old keys",
              path);
    metrics_reload_failure(s->metrics);
    return;
  }
  pthread_rwlock_wrlock(&s->auth_lock);
  cert = s->auth.tls_cert;
  key = s->auth.tls_key;
  s->auth.tls_cert = s->auth.tls_key = NULL;
  auth_free(&s->auth); /* wipes the old keys */
  s->auth = na;
  s->auth.tls_cert = cert;
  s->auth.tls_key = key;
  pthread_rwlock_unlock(&s->auth_lock);
  LOG_INFO("reload: %zu API key(s) from %s", na.nkeys, path);
}

/* A shard's loop: a new MHD daemon with the PEM texts `cert`/`key` takes
 * the shard's new connections; the old one is retired (server_old): it
 * serves the connections it has until they close.  0 or -1. */
static int swap_daemon(struct server *s, const char *cert, const char *key)
{
  const union MHD_DaemonInfo *info;
  struct server_old *o;
  struct MHD_Daemon *d;
  int efd;

  if ((o = calloc(1, sizeof *o)) == NULL)
    return -1;
  d = mhd_open(s, s->conf, cert, key);
  if (d == NULL) {
    free(o);
    return -1;
  }
  info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
  efd = info != NULL ? info->epoll_fd : -1;
  if (efd < 0 || epoll_add(s->epfd, efd) != 0) {
    LOG_ERROR("reload: cannot watch the new daemon: %s", strerror(errno));
    MHD_stop_daemon(d);
    free(o);
    return -1;
  }
  o->mhd = s->mhd;
  info = MHD_get_daemon_info(o->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  o->epoll_fd = info != NULL ? info->epoll_fd : -1;
  o->next = s->old;
  s->old = o;
  s->mhd = d;
  return 0;
}

/* Another shard's loop (SERVER_CMD_RELOAD): the certificate shard 0 holds
 * now serves this shard's new connections. */
static void reload_tls_shard(struct server *s)
{
  struct server *p = s->primary;
  int rc;

  if (s->closed)
    return;
  pthread_rwlock_rdlock(&p->auth_lock);
  rc = p->auth.tls_cert != NULL
         ? swap_daemon(s, p->auth.tls_cert, p->auth.tls_key)
         : 0;
  pthread_rwlock_unlock(&p->auth_lock);
  if (rc != 0)
    LOG_ERROR("reload: HTTP thread %u keeps the old certificate", s->index);
}

/* SIGHUP, --tls-cert/--tls-key.  libmicrohttpd 0.9.75 cannot change the
 * certificate of a running daemon, so each shard starts a new daemon with
 * the new PEM texts (shard 0's validates them first) and retires the old
 * one, which serves the connections it has until they close (server_old).
 * New connections get the new certificate; none is dropped. */
static void reload_tls(struct server *s, const char *cert, const char *key)
{
  struct auth na;

  memset(&na, 0, sizeof na);
  if (auth_load_tls(&na, cert, key) != 0) {
    LOG_ERROR("reload: --tls-cert %s or --tls-key %s is missing or invalid "
              "(see above): keeping the old certificate",
              cert, key);
    goto fail;
  }
  if (swap_daemon(s, na.tls_cert, na.tls_key) != 0) {
    LOG_ERROR("reload: libmicrohttpd refused --tls-cert %s with --tls-key "
              "%s (not a certificate and its key?): keeping the old "
              "certificate",
              cert, key);
    goto fail;
  }
  /* Wipe the old PEM texts (MHD copied them), keep the new ones. */
  pthread_rwlock_wrlock(&s->auth_lock);
  free(s->auth.tls_cert);
  s->auth.tls_cert = na.tls_cert;
  if (s->auth.tls_key != NULL)
    explicit_bzero(s->auth.tls_key, strlen(s->auth.tls_key));
  free(s->auth.tls_key);
  s->auth.tls_key = na.tls_key;
  pthread_rwlock_unlock(&s->auth_lock);
  for (unsigned i = 0; i < s->nstarted; i++)
    shard_cmd(&s->shards[i], SERVER_CMD_RELOAD);
  LOG_INFO("reload: new certificate from %s; the old one serves its "
           "connections until they close",
           cert);
  return;

fail:
  auth_free(&na);
  metrics_reload_failure(s->metrics);
}

void server_reload(struct server *s)
{
  const struct conf *c = s->conf;

  if (s->closed || s->draining)
    return;
  if (c->api_key_file == NULL && c->tls_cert == NULL) {
    LOG_INFO("reload: no --api-key-file nor --tls-cert: nothing to re-read");
    return;
  }
  if (c->api_key_file != NULL)
    reload_keys(s, c->api_key_file);
  if (c->tls_cert != NULL)
    reload_tls(s, c->tls_cert, c->tls_key);
  server_run(s);
}

void server_drain(struct server *s, server_idle_cb idle_cb, void *arg)
{
  if (s->closed || s->draining)
    return;
  s->draining = 1;
  s->idle_cb = idle_cb;
  s->idle_arg = arg;
  /* Every shard drains before it takes the connections below. */
  for (unsigned i = 0; i < s->nstarted; i++)
    shard_cmd(&s->shards[i], SERVER_CMD_DRAIN);
  /* Connections the kernel already completed would be reset when the
   * listen socket closes: accept them first (bounded: a flood of new
   * connections must not stall the drain); being draining, they are
   * answered 503 DRAINING with Retry-After, a clean refusal the client
   * can retry.  Then stop accepting: new connections are refused instead
   * of waiting in the backlog. */
  accept_some(s, 256);
  listen_close(s);
  LOG_INFO("draining: %zu request(s) in flight", server_inflight(s));
  server_run(s); /* also reports idle at once if nothing is in flight */
}

/* A shard's own loop thread: closes its handles and stops its daemons (no
 * connection may be suspended: once idle); its uv_run() then returns. */
static void shard_close(struct server *s)
{
  if (s->closed)
    return;
  s->closed = 1;
  /* Close the poll handle before MHD closes the fd it watches. */
  if (s->handles) {
    uv_close((uv_handle_t *)&s->poll, NULL);
    uv_close((uv_handle_t *)&s->timer, NULL);
    uv_close((uv_handle_t *)&s->cmd, NULL);
    s->handles = 0;
  }
  conns_take(s); /* closed: each is closed and uncounted */
  while (s->old != NULL) {
    struct server_old *o = s->old;
    s->old = o->next;
    MHD_stop_daemon(o->mhd);
    free(o);
  }
  if (s->mhd != NULL) {
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
  }
  if (s->epfd >= 0) {
    close(s->epfd);
    s->epfd = -1;
  }
  admit_close(&s->admit); /* after MHD_stop_daemon: completions release */
}

void server_close(struct server *s)
{
  if (s->closed)
    return;
  /* The other shards first: each closes on its own thread, then ends. */
  for (unsigned i = 0; i < s->nstarted; i++) {
    struct server *x = &s->shards[i];
    shard_cmd(x, SERVER_CMD_CLOSE);
    pthread_join(x->thread, NULL);
    uv_loop_close(x->loop);
    pthread_mutex_destroy(&x->conn_lock);
  }
  s->nstarted = 0;
  free(s->shards);
  s->shards = NULL;
  listen_close(s);
  shard_close(s);
  pages_free();
  free(s->ops_body);
  s->ops_body = NULL;
  auth_free(&s->auth);
  /* After MHD_stop_daemon: its completion callbacks still count requests. */
  metrics_destroy(s->metrics);
  s->metrics = NULL;
}
