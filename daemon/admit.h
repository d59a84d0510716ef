/* admit.h - admission of requests by memory, with a FIFO queue: the one
 * gate every front end (HTTP POST in post.c, a gRPC endpoint) passes
 * before it reads a request's body.
 *
 * A request declares the memory it will hold while admitted (its buffered
 * body, stream buffers, decoded input, output: what it declares or is
 * planned to need).  It is admitted at once if that fits in
 * --max-inflight-bytes next to what is admitted already and nobody waits
 * before it; otherwise it waits, in arrival order, until it fits, or until
 * --queue-timeout has passed.  A request larger than the whole budget can
 * never fit and is refused (413); --max-pending bounds the admitted plus
 * the waiting (beyond it: 503 at once).
 *
 * A front end embeds one struct admit_ticket per request (zeroed), calls
 * admit_request() before reading the body, and admit_release() once the
 * request's memory is gone (it is safe on a ticket in any state, so a
 * completion callback may call it unconditionally).  A waiting request
 * whose client went away is taken out with admit_release() too.
 *
 * Threads: one gate serves every loop thread (the HTTP shards of
 * --http-threads, and gRPC on the main loop).  admit_init() makes the gate
 * and its port on the first loop; admit_join() gives each other loop a
 * port of its own on the same gate.  A ticket is asked for, resized and
 * released on its port's loop thread only; its callback runs on that loop
 * too (from the port's async handle or timer, never inside the caller's
 * admit_request, admit_release or admit_resize), whichever loop's release
 * made room.  The gate's counts are under its mutex.  Metrics
 * (reduced_requests_waiting, reduced_inflight_bytes,
 * reduced_queue_wait_seconds) are updated here.
 */
#ifndef RD_ADMIT_H
#define RD_ADMIT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct metrics;
struct admit_ticket;
struct admit;

/* How a wait ended. */
enum admit_outcome {
  ADMIT_OK = 0, /* admitted: the body may be read now */
  ADMIT_TIMEOUT /* waited --queue-timeout: answer 503 Retry-After;
                         * the ticket is released already */
};

/* Loop thread, when a waiting ticket is admitted or timed out.  Runs from
 * a libuv callback (never inside admit_request, admit_release or
 * admit_resize), so it may resume a connection and run the server. */
typedef void (*admit_cb)(struct admit_ticket *t, enum admit_outcome how);

/* What admit_request() decided. */
enum admit_result {
  ADMIT_NOW = 0,     /* admitted: go on reading */
  ADMIT_WAIT,        /* queued: suspend; `cb` runs later, once */
  ADMIT_E_TOO_LARGE, /* more than --max-inflight-bytes: 413 */
  ADMIT_E_FULL       /* --max-pending admitted plus waiting: 503 */
};

enum admit_ticket_state {
  ADMIT_T_NONE = 0, /* zeroed, released, timed out or refused */
  ADMIT_T_WAITING,
  ADMIT_T_ADMITTED
};

/* Per request, caller-owned, zeroed before first use; must stay alive and
 * unmoved while WAITING (it is linked in the queue). */
struct admit_ticket {
  enum admit_ticket_state state;
  uint64_t bytes; /* counted in inflight while ADMITTED */
  uint64_t t0_ns; /* CLOCK_MONOTONIC at admit_request */
  admit_cb cb;
  void *arg;          /* the caller's, for `cb` */
  struct admit *port; /* the loop it waits on (its callback runs there) */
  struct admit_ticket *next, *prev; /* the gate's FIFO, or the port's
                                     * list of callbacks to run */
  int ready;                        /* in the port's list (under the lock) */
  enum admit_outcome ready_how;     /* what its callback will be told */
};

/* A port: one loop's handles on a gate.  The gate's fields are those of
 * the first port (admit_init); a joined port's are unused. */
struct admit {
  uv_loop_t *loop;
  struct admit *gate; /* the first port (itself for the first) */
  /* The gate (first port only); under `lock` once a port has joined. */
  pthread_mutex_t lock;
  struct metrics *metrics; /* optional */
  uint64_t max_bytes;      /* --max-inflight-bytes */
  uint64_t max_pending;    /* --max-pending: admitted + waiting */
  uint64_t timeout_ms;     /* --queue-timeout */
  uint64_t inflight_bytes; /* sum of admitted tickets' bytes */
  size_t admitted, waiting;
  struct admit_ticket *head, *tail; /* FIFO of the waiting */
  uint64_t admitted_total, timeouts_total;
  /* This port (its loop thread; the list under the gate's lock). */
  struct admit_ticket *rhead, *rtail; /* callbacks to run on this loop */
  uv_timer_t timer;                   /* this port's oldest waiter */
  uv_async_t wake;                    /* runs the callbacks */
  int handles;                        /* timer and wake initialised */
  int closing;
};

/* Sets up the gate and its first port `a` on `loop` (two handles: close
 * them with admit_close()).  `timeout_s` is --queue-timeout in seconds.
 * 0, or a libuv error. */
int admit_init(struct admit *a, uv_loop_t *loop, struct metrics *m,
               uint64_t max_bytes, uint64_t max_pending, uint64_t timeout_s);

/* Sets up port `a` of `gate` (a port made by admit_init) on `loop`, from
 * that loop's thread.  0, or a libuv error. */
int admit_join(struct admit *a, uv_loop_t *loop, struct admit *gate);

/* Admitted plus waiting, and waiting, now (any port; for messages). */
size_t admit_pending(struct admit *a);
size_t admit_waiting(struct admit *a);

/* Asks for `bytes` for ticket `t` (state NONE).  ADMIT_NOW: admitted, `t`
 * ADMITTED.  ADMIT_WAIT: `t` WAITING; `cb(t, ...)` runs later with `arg`
 * in t->arg.  ADMIT_E_*: refused, `t` stays NONE. */
enum admit_result admit_request(struct admit *a, struct admit_ticket *t,
                                uint64_t bytes, admit_cb cb, void *arg);

/* Changes an ADMITTED ticket's count to `bytes` once the request knows
 * better (a .npy header read, a chunked body grown).  Growth is counted
 * at once, even beyond the budget (the request is reading already);
 * shrinking may admit waiters. */
void admit_resize(struct admit *a, struct admit_ticket *t, uint64_t bytes);

/* Gives back what `t` holds: an ADMITTED ticket's bytes and slot (waiters
 * that now fit are admitted, from a libuv callback), a WAITING ticket
 * leaves the queue (its `cb` never runs).  NONE: nothing. */
void admit_release(struct admit *a, struct admit_ticket *t);

/* Seconds `t` waited (or has waited so far), for logs. */
double admit_waited(const struct admit_ticket *t);

/* Closes the port's handles (no ticket of it may be waiting; the loop
 * frees nothing).  Close every joined port before the first. */
void admit_close(struct admit *a);

#endif /* RD_ADMIT_H */
