/* http.h - the HTTP front end: libmicrohttpd in external epoll mode, driven
 * by the libuv loop (design B of docs/mhd-libuv.md).
 *
 * Every function here and every callback behind it runs on the loop thread;
 * only the reduce computation (job.h) runs on the libuv pool.  The server
 * is caller-owned, libuv style: http_start(), then http_drain() on SIGTERM,
 * then http_close(); the struct must stay alive until uv_run() returns.
 */
#ifndef RD_HTTP_H
#define RD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "conf.h"

struct MHD_Daemon;
struct metrics;

/* Called on the loop thread, once, when a draining server has no request
 * left in flight.  Outside any MHD call, so it may call http_close(). */
typedef void (*http_idle_cb)(void *arg);

struct http_server {
  const struct conf *conf;
  uv_loop_t *loop;
  struct MHD_Daemon *mhd;
  uv_poll_t poll;            /* MHD's epoll fd */
  uv_timer_t timer;          /* re-armed from MHD_get_timeout() */
  uint16_t port;             /* bound port */
  size_t inflight;           /* requests between first call and completion */
  size_t pending;            /* reduce requests admitted (<= max_pending) */
  int draining;
  int closed;
  int handles;               /* poll and timer initialised */
  int at_limit;              /* --max-connections open after the last run */
  http_idle_cb idle_cb;
  void *idle_arg;
  char *ops_body;            /* GET /v1/ops, built once */
  size_t ops_len;
  uint64_t id_seed;          /* request id generator */
  uint64_t id_counter;
  char **keys;               /* --api-key-file; nkeys == 0: no auth */
  size_t *key_lens;
  size_t nkeys;
  char *tls_cert;            /* PEM text of --tls-cert / --tls-key */
  char *tls_key;
  struct metrics *metrics;   /* GET /metrics (metrics.h) */
};

/* Binds conf->host:conf->port, starts MHD and watches it on `loop`, logs
 * "listening on HOST:PORT" and writes --port-file.  Returns 0, or after
 * logging why -1 (runtime failure) or HTTP_E_CONFIG (an unreadable or empty
 * --api-key-file, --tls-cert/--tls-key, or TLS without TLS support in
 * libmicrohttpd); call http_close() in every case. */
#define HTTP_E_CONFIG (-2)
int http_start(struct http_server *s, uv_loop_t *loop, const struct conf *c);

/* Starts draining: stop accepting connections, /readyz and new reduce
 * requests answer 503 DRAINING, requests in flight go on.  `idle_cb` runs
 * once nothing is in flight (possibly before this returns). */
void http_drain(struct http_server *s, http_idle_cb idle_cb, void *arg);

/* Stops MHD (no connection may be suspended: call once idle) and closes the
 * libuv handles; memory is released when uv_run() returns. */
void http_close(struct http_server *s);

#endif /* RD_HTTP_H */
