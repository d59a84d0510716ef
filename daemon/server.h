/* server.h - the HTTP front end: libmicrohttpd in external epoll mode,
 * driven by libuv loops (docs/mhd-libuv.md).  Routes are in http.h, POST
 * bodies in post.h, a request's states in req.h.
 *
 * Shards (--http-threads N): shard 0 is the struct the caller owns, on the
 * caller's loop; shards 1..N-1 each run their own loop on a thread of
 * their own, with their own MHD daemon (no listen socket of its own).
 * Shard 0 owns the listen socket: it accepts, counts the open connections
 * against --max-connections (at the limit it stops accepting, so clients
 * wait in the backlog), and hands each connection to a shard (by client
 * address with --max-connections-per-ip, so that MHD's per-address count
 * is whole; round robin otherwise).  A request lives on its shard's loop
 * thread from its first byte to its free: every MHD callback, the job's
 * done callback and the admission callback run there.  Shared: the
 * configuration, the metrics (atomics), the admission gate (admit.h: one
 * mutex), the API keys (a read-write lock: SIGHUP writes on shard 0), the
 * built bodies.  SIGTERM, SIGHUP and the close reach the other shards
 * through their async handle.  Only the reduce computation (job.h) runs on
 * the libuv pool, which every loop shares.
 *
 * The server is caller-owned, libuv style: server_start(), then
 * server_start_shards() once every metrics route is registered, then
 * server_drain() on SIGTERM, then server_close(); the struct must stay
 * alive until uv_run() returns.  These run on the caller's loop thread.
 */
#ifndef RD_SERVER_H
#define RD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
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

struct server_conn;

/* One shard; the fields are its loop thread's unless marked. */
struct server {
  const struct conf *conf;
  uv_loop_t *loop;
  struct MHD_Daemon *mhd;
  int epfd;               /* epoll set of the MHD daemons' epoll fds */
  uv_poll_t poll;         /* epfd */
  struct server_old *old; /* daemons retired by a TLS reload */
  uv_timer_t timer;       /* re-armed from MHD_get_timeout() */
  uint16_t port;          /* bound port */
  atomic_size_t inflight; /* requests between first call and completion
                           * (shard 0 sums every shard's) */
  struct admit admit;     /* this loop's port of the gate (admit.h) */
  int draining;
  int closed;
  int handles; /* poll, timer and cmd initialised */
  server_idle_cb idle_cb;
  void *idle_arg;
  char *ops_body; /* GET /v1/ops, built once (shard 0's) */
  size_t ops_len;
  uint64_t id_seed; /* request id generator (shard 0's seed) */
  uint64_t id_counter;
  struct metrics *metrics; /* GET /metrics (metrics.h), shared */

  /* Shards. */
  struct server *primary; /* shard 0 (itself there) */
  unsigned index;         /* 0..nshards-1 */
  unsigned nshards;       /* --http-threads (shard 0 only) */
  uv_async_t cmd;         /* wakes the loop for `cmds` */
  atomic_uint cmds;       /* SERVER_CMD_* bits, any thread sets */
  pthread_mutex_t conn_lock;
  struct server_conn *conns; /* accepted, to add to MHD (under conn_lock) */
  int told_idle;             /* other shards: idle reported to shard 0 */
  atomic_int drained;        /* other shards: draining has begun here */

  /* Shard 0 only. */
  struct auth auth; /* API keys, TLS material (auth.h): written under
                     * auth_lock by this thread, read under it by the
                     * other shards */
  pthread_rwlock_t auth_lock;
  int auth_lock_init;
  struct server *shards; /* shards 1..nshards-1 */
  unsigned nstarted;     /* of them, with a running thread */
  unsigned next_shard;   /* round robin */
  int listen_fd;         /* ours; -1 once closed */
  uv_poll_t listen_poll;
  uv_timer_t listen_wait; /* accepting paused after EMFILE and the like */
  int accepting;          /* listen_poll started */
  atomic_uint open_conns; /* in every shard (--max-connections): accepted
                           * and not yet given to MHD, plus MHD's open
                           * ones (started, not closed) */

  /* Other shards only. */
  uv_loop_t own_loop;
  pthread_t thread;
};

/* Bits of server.cmds. */
#define SERVER_CMD_CONNS 1u   /* connections queued in conns */
#define SERVER_CMD_DRAIN 2u   /* server_drain() */
#define SERVER_CMD_RELOAD 4u  /* the TLS files were re-read */
#define SERVER_CMD_CLOSE 8u   /* stop: close everything, leave uv_run */
#define SERVER_CMD_ACCEPT 16u /* shard 0: a connection closed below the limit */
#define SERVER_CMD_IDLE 32u   /* shard 0: a draining shard has none in flight */

/* Binds conf->host:conf->port, starts MHD and watches it on `loop`, logs
 * "listening on HOST:PORT" and writes --port-file.  Returns 0, or after
 * logging why -1 (runtime failure) or SERVER_E_CONFIG (an unreadable or empty
 * --api-key-file, --tls-cert/--tls-key, or TLS without TLS support in
 * libmicrohttpd); call server_close() in every case. */
#define SERVER_E_CONFIG (-2)
int server_start(struct server *s, uv_loop_t *loop, const struct conf *c);

/* Starts the threads of shards 1..N-1 (after the gRPC front end has
 * registered its metrics routes).  0, or -1 after logging why (call
 * server_close()). */
int server_start_shards(struct server *s);

/* Requests in flight in every shard (any thread; for logs). */
size_t server_inflight(struct server *s);

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
