/* server.h - the HTTP front end: libmicrohttpd in external epoll mode,
 * driven by the libuv loop (docs/mhd-libuv.md).  Routes are in http.h,
 * POST bodies in post.h, a request's states in req.h.
 *
 * Every function here and every callback behind it runs on the loop thread;
 * only the reduce computation (job.h) runs on the libuv pool.  The server
 * is caller-owned, libuv style: server_start(), then server_drain() on
 * SIGTERM, then server_close(); the struct must stay alive until uv_run()
 * returns.
 */
#ifndef RD_SERVER_H
#define RD_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "admit.h"
#include "auth.h"
#include "conf.h"

struct MHD_Daemon;
struct metrics;
struct server_old;

/* Called on the loop thread, once, when a draining server has no request
 * left in flight.  Outside any MHD call, so it may call server_close(). */
typedef void (*server_idle_cb)(void *arg);

struct server {
  const struct conf *conf;
  uv_loop_t *loop;
  struct MHD_Daemon *mhd;
  int epfd;               /* epoll set of the MHD daemons' epoll fds */
  uv_poll_t poll;         /* epfd */
  struct server_old *old; /* daemons retired by a TLS reload */
  uv_timer_t timer;       /* re-armed from MHD_get_timeout() */
  uint16_t port;          /* bound port */
  size_t inflight;        /* requests between first call and completion */
  struct admit admit;     /* --max-inflight-bytes, --max-pending */
  int draining;
  int closed;
  int handles;  /* poll and timer initialised */
  int at_limit; /* --max-connections open after the last run */
  server_idle_cb idle_cb;
  void *idle_arg;
  char *ops_body; /* GET /v1/ops, built once */
  size_t ops_len;
  uint64_t id_seed; /* request id generator */
  uint64_t id_counter;
  struct auth auth;        /* API keys, TLS material (auth.h) */
  struct metrics *metrics; /* GET /metrics (metrics.h) */
};

/* Binds conf->host:conf->port, starts MHD and watches it on `loop`, logs
 * "listening on HOST:PORT" and writes --port-file.  Returns 0, or after
 * logging why -1 (runtime failure) or SERVER_E_CONFIG (an unreadable or empty
 * --api-key-file, --tls-cert/--tls-key, or TLS without TLS support in
 * libmicrohttpd); call server_close() in every case. */
#define SERVER_E_CONFIG (-2)
int server_start(struct server *s, uv_loop_t *loop, const struct conf *c);

/* Starts draining: stop accepting connections, /readyz and new reduce
 * requests answer 503 DRAINING, requests in flight go on.  `idle_cb` runs
 * once nothing is in flight (possibly before this returns). */
void server_drain(struct server *s, server_idle_cb idle_cb, void *arg);

/* Runs MHD once, re-arms the timer, and tells a draining owner when idle
 * (nothing may touch `s` after the idle callback).  The poll and timer
 * handles call it; so must whoever resumes a connection (external mode). */
void server_run(struct server *s);

/* SIGHUP: re-reads --api-key-file and --tls-cert/--tls-key.  New
 * requests check the new keys; with TLS a new MHD daemon takes over the
 * listen socket with the new certificate while the old one serves its
 * connections until they close (none is dropped).  A missing or invalid
 * file keeps the old secrets, logs an error naming it and counts
 * reduced_reload_failures_total.  Loop thread, outside MHD. */
void server_reload(struct server *s);

/* Stops MHD (no connection may be suspended: call once idle) and closes the
 * libuv handles; memory is released when uv_run() returns. */
void server_close(struct server *s);

#endif /* RD_SERVER_H */
