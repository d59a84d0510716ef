/* grpc.h - the gRPC front end: the Open Inference Protocol's
 * inference.GRPCInferenceService (six RPCs) and grpc.health.v1.Health/Check
 * on Debian's gRPC C core, on its own port (--grpc-listen).
 *
 * Threads:
 *  - gRPC core runs its own threads (I/O, timers, executor): they read and
 *    write the sockets and queue completions; none of our code runs there.
 *  - The completion-queue thread (one, ours: cq_main) takes every
 *    completion: a new call, its request message, its last batch.  It
 *    answers Health/Check itself (no key, no loop) and hands every other
 *    call to the loop thread with uv_async_send.
 *  - The loop thread (libuv, like HTTP) checks the API keys (it owns them:
 *    SIGHUP reloads them there), answers the metadata RPCs (a few hundred
 *    bytes of protobuf each), and admits ModelInfer calls through the
 *    server's admission (admit.h: draining, --max-pending,
 *    --max-inflight-bytes, one FIFO with HTTP's requests), then submits
 *    them as jobs (job.h: decode, plan, reduce and encode on the libuv
 *    pool, exactly as /v2's infer).  Replies start from there
 *    (grpc_call_start_batch is thread-safe; each call has one owner at a
 *    time).
 *
 * Without TLS the daemon owns the gRPC port: the loop thread accepts and
 * hands each connection to gRPC core (grpc_server_add_channel_from_fd),
 * which starts at the first one, so a daemon nobody calls over gRPC does
 * not carry gRPC core's threads and pages (about 3 MB).  With TLS (gRPC
 * 1.51 takes accepted sockets only without it) gRPC core listens itself
 * and starts with the daemon.
 *
 * Caller-owned, libuv style, on the loop thread: grpcd_start() after the
 * HTTP server started (its keys, TLS material, metrics and admission are
 * shared), grpcd_drain() on SIGTERM, grpcd_close() before the HTTP server
 * closes (the metrics must outlive the completion-queue thread).
 */
#ifndef RD_GRPC_H
#define RD_GRPC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <uv.h>

#include "conf.h"
#include "oip.h"

struct server;
struct rcall;
struct grpc_server;
struct grpc_completion_queue;
struct grpc_server_credentials;

/* Loop thread, once, when a draining endpoint has no call left. */
typedef void (*grpcd_idle_cb)(void *arg);

struct grpcd {
  /* Loop thread. */
  const struct conf *conf;
  uv_loop_t *loop;
  struct server *http; /* admission (pending), auth, metrics */
  uv_async_t async;    /* CQ thread -> loop: calls to admit, idle */
  int handles;         /* async initialised */
  int inited;          /* grpc_init() called */
  int closed;
  int port; /* bound port */
  /* The daemon's own gRPC port (no TLS), -1 when gRPC core listens;
   * lpoll and lwait are initialised while it is open. */
  int lfd;
  uv_poll_t lpoll;  /* lfd readable: accept_cb */
  uv_timer_t lwait; /* accepting paused after EMFILE and the like */
  struct grpc_server_credentials *fd_creds; /* insecure, for each lfd socket */
  grpcd_idle_cb idle_cb;
  void *idle_arg;
  int idle_reported;
  unsigned routes[API_OIP_NMETHODS]; /* metric route indexes */
  /* Set before the CQ thread starts, then read-only until it is joined. */
  struct grpc_server *srv;
  struct grpc_completion_queue *cq;
  pthread_t thread;
  int started; /* grpc_server_start() called */
  int thread_started;
  int shutdown_tag; /* its address tags the shutdown event */
  /* Shared between the CQ thread and the loop thread. */
  pthread_mutex_t lock;     /* guards queue, closing, the TLS copies */
  struct rcall *queue;      /* ModelInfer calls for the loop, LIFO */
  int closing;              /* grpcd_close() began: nothing more queued */
  int tls;                  /* serving TLS (--tls-cert) */
  char *tls_cert, *tls_key; /* under lock: the PEM text in force */
  unsigned tls_gen;         /* under lock: bumped by grpcd_reload() */
  unsigned tls_served;      /* under lock: the generation handed out */
  atomic_int draining;
  atomic_size_t live; /* calls from arrival to their last batch */
};

/* Binds conf->grpc_host:grpc_port, logs "gRPC listening on HOST:PORT" and
 * writes --grpc-port-file; with the HTTP server's certificate (TLS) also
 * starts gRPC core and the CQ thread, else they start at the first
 * connection.  0, or -1 after logging why;
 * call grpcd_close() in every case.  With conf->grpc_listen NULL ("none")
 * it does nothing and returns 0. */
int grpcd_start(struct grpcd *g, uv_loop_t *loop, const struct conf *c,
                struct server *http);

/* Starts draining: ServerReady answers false, Health/Check NOT_SERVING,
 * new ModelInfer calls UNAVAILABLE; calls in flight go on.  `idle_cb`
 * runs once no call is left (possibly before this returns). */
void grpcd_drain(struct grpcd *g, grpcd_idle_cb idle_cb, void *arg);

/* SIGHUP, after server_reload(): new TLS connections get the certificate
 * and key the HTTP server holds now (the keys need nothing: the loop
 * thread checks them where they live).  Loop thread. */
void grpcd_reload(struct grpcd *g);

/* Stops the server (calls still queued get UNAVAILABLE, stragglers are
 * cancelled), joins the CQ thread, releases everything.  Safe to call
 * twice, and after a failed or skipped grpcd_start(). */
void grpcd_close(struct grpcd *g);

#endif /* RD_GRPC_H */
