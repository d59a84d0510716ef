/* admit.c - admission by memory with a FIFO queue (admit.h).
 *
 * The queue is a doubly linked list of the waiting tickets in arrival
 * order.  Every ticket waits the same --queue-timeout, so the head always
 * has the earliest deadline and one timer (armed for the head) suffices.
 * Admission is strictly in order: a ticket that fits waits while an
 * earlier one does not (no small request overtakes a large one, so a
 * large one is never starved).  Callbacks run from a port's timer or its
 * async handle (woken by whichever loop made room), on the ticket's own
 * loop, never inside the caller's own call.
 *
 * Each port's timer follows the deadline of the oldest of its own
 * waiters; it may fire for a waiter admitted meanwhile (then it only
 * re-arms).  The lock is held for every change of the gate or of a port's
 * list of callbacks to run, never while a callback runs.
 */
#include "config.h" /* autoconf */

#include <assert.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "admit.h"
#include "log.h"
#include "metrics.h"

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void gauges(struct admit *g)
{
  if (g->metrics != NULL)
    metrics_admit_set(g->metrics, (long)g->waiting, g->inflight_bytes);
}

/* Fits next to what is admitted (an empty gate takes anything that is
 * within the budget: admit_request refused the rest). */
static int fits(const struct admit *g, uint64_t bytes)
{
  return g->admitted == 0 || bytes <= g->max_bytes - g->inflight_bytes;
}

static void take(struct admit *g, struct admit_ticket *t)
{
  t->state = ADMIT_T_ADMITTED;
  g->admitted++;
  g->inflight_bytes += t->bytes;
  g->admitted_total++;
  if (g->metrics != NULL)
    metrics_queue_wait(g->metrics, now_ns() - t->t0_ns);
}

static void unlink_waiter(struct admit *g, struct admit_ticket *t)
{
  assert(t->state == ADMIT_T_WAITING && g->waiting > 0);
  if (t->prev != NULL)
    t->prev->next = t->next;
  else
    g->head = t->next;
  if (t->next != NULL)
    t->next->prev = t->prev;
  else
    g->tail = t->prev;
  t->next = t->prev = NULL;
  g->waiting--;
}

/* Under the lock: `t` (out of the FIFO) gets its callback on its loop. */
static void make_ready(struct admit_ticket *t, enum admit_outcome how)
{
  struct admit *p = t->port;

  t->ready = 1;
  t->ready_how = how;
  t->next = NULL;
  t->prev = p->rtail;
  if (p->rtail != NULL)
    p->rtail->next = t;
  else
    p->rhead = t;
  p->rtail = t;
  if (p->handles && !p->closing)
    uv_async_send(&p->wake);
}

/* Under the lock: takes `t` out of its port's list (it will not run). */
static void unready(struct admit_ticket *t)
{
  struct admit *p = t->port;

  if (t->prev != NULL)
    t->prev->next = t->next;
  else
    p->rhead = t->next;
  if (t->next != NULL)
    t->next->prev = t->prev;
  else
    p->rtail = t->prev;
  t->next = t->prev = NULL;
  t->ready = 0;
}

/* Under the lock: admits waiters from the head while they fit. */
static void pump(struct admit *g)
{
  struct admit_ticket *t;

  while ((t = g->head) != NULL && fits(g, t->bytes)) {
    unlink_waiter(g, t);
    take(g, t);
    make_ready(t, ADMIT_OK);
  }
  gauges(g);
}

/* Port's loop: runs the callbacks of its list, one at a time (a callback
 * may release another ticket of the list: it then leaves the list). */
static void run_ready(struct admit *p)
{
  struct admit *g = p->gate;

  for (;;) {
    struct admit_ticket *t;
    enum admit_outcome how;

    pthread_mutex_lock(&g->lock);
    t = p->rhead;
    if (t != NULL) {
      how = t->ready_how;
      unready(t);
    }
    pthread_mutex_unlock(&g->lock);
    if (t == NULL)
      return;
    t->cb(t, how);
  }
}

static void wake_cb(uv_async_t *h)
{
  run_ready((struct admit *)h->data);
}

static void timer_cb(uv_timer_t *h);

/* Port's loop, under the lock: the timer follows the deadline of this
 * port's oldest waiter. */
static void arm(struct admit *p)
{
  struct admit *g = p->gate;
  struct admit_ticket *t;
  uint64_t now, due;

  if (!p->handles || p->closing)
    return;
  for (t = g->head; t != NULL && t->port != p; t = t->next)
    ;
  if (t == NULL) {
    uv_timer_stop(&p->timer);
    return;
  }
  now = now_ns();
  due = t->t0_ns + g->timeout_ms * 1000000u;
  uv_timer_start(&p->timer, timer_cb,
                 due > now ? (due - now + 999999u) / 1000000u : 0, 0);
}

/* Port's loop: its waiters past --queue-timeout time out, in order. */
static void timer_cb(uv_timer_t *h)
{
  struct admit *p = h->data, *g = p->gate;
  uint64_t now = now_ns(), tmo = g->timeout_ms * 1000000u;
  struct admit_ticket *t, *next;

  pthread_mutex_lock(&g->lock);
  for (t = g->head; t != NULL && now - t->t0_ns >= tmo; t = next) {
    next = t->next;
    if (t->port != p)
      continue; /* its own port's timer is due too */
    unlink_waiter(g, t);
    t->state = ADMIT_T_NONE;
    g->timeouts_total++;
    make_ready(t, ADMIT_TIMEOUT);
  }
  pump(g); /* a large head gone may let the next ones in */
  arm(p);
  pthread_mutex_unlock(&g->lock);
  run_ready(p);
}

static int port_handles(struct admit *a, uv_loop_t *loop)
{
  int rc;

  a->loop = loop;
  a->timer.data = a;
  a->wake.data = a;
  if ((rc = uv_timer_init(loop, &a->timer)) != 0)
    return rc;
  if ((rc = uv_async_init(loop, &a->wake, wake_cb)) != 0) {
    uv_close((uv_handle_t *)&a->timer, NULL);
    return rc;
  }
  a->timer.data = a;
  a->wake.data = a;
  a->handles = 1;
  return 0;
}

int admit_init(struct admit *a, uv_loop_t *loop, struct metrics *m,
               uint64_t max_bytes, uint64_t max_pending, uint64_t timeout_s)
{
  int rc;

  memset(a, 0, sizeof *a);
  a->gate = a;
  a->metrics = m;
  a->max_bytes = max_bytes;
  a->max_pending = max_pending;
  a->timeout_ms = timeout_s * 1000u;
  if ((rc = pthread_mutex_init(&a->lock, NULL)) != 0)
    return -rc;
  if ((rc = port_handles(a, loop)) != 0) {
    pthread_mutex_destroy(&a->lock);
    return rc;
  }
  gauges(a);
  return 0;
}

int admit_join(struct admit *a, uv_loop_t *loop, struct admit *gate)
{
  memset(a, 0, sizeof *a);
  a->gate = gate;
  return port_handles(a, loop);
}

size_t admit_pending(struct admit *a)
{
  struct admit *g = a->gate;
  size_t n;

  pthread_mutex_lock(&g->lock);
  n = g->admitted + g->waiting;
  pthread_mutex_unlock(&g->lock);
  return n;
}

size_t admit_waiting(struct admit *a)
{
  struct admit *g = a->gate;
  size_t n;

  pthread_mutex_lock(&g->lock);
  n = g->waiting;
  pthread_mutex_unlock(&g->lock);
  return n;
}

enum admit_result admit_request(struct admit *a, struct admit_ticket *t,
                                uint64_t bytes, admit_cb cb, void *arg)
{
  struct admit *g = a->gate;
  enum admit_result res = ADMIT_WAIT;

  assert(t->state == ADMIT_T_NONE && !t->ready);
  t->bytes = bytes;
  t->t0_ns = now_ns();
  t->cb = cb;
  t->arg = arg;
  t->port = a;
  t->next = t->prev = NULL;
  pthread_mutex_lock(&g->lock);
  if (bytes > g->max_bytes) {
    res = ADMIT_E_TOO_LARGE;
  } else if (g->admitted + g->waiting >= g->max_pending) {
    res = ADMIT_E_FULL;
  } else if (g->head == NULL && fits(g, bytes)) {
    take(g, t);
    gauges(g);
    res = ADMIT_NOW;
  } else {
    t->state = ADMIT_T_WAITING;
    t->prev = g->tail;
    if (g->tail != NULL)
      g->tail->next = t;
    else
      g->head = t;
    g->tail = t;
    g->waiting++;
    gauges(g);
    if (a->handles && !uv_is_active((uv_handle_t *)&a->timer))
      arm(a);
  }
  pthread_mutex_unlock(&g->lock);
  if (res == ADMIT_E_TOO_LARGE || res == ADMIT_E_FULL)
    t->bytes = 0;
  return res;
}

void admit_resize(struct admit *a, struct admit_ticket *t, uint64_t bytes)
{
  struct admit *g = a->gate;

  pthread_mutex_lock(&g->lock);
  if (t->state != ADMIT_T_ADMITTED || bytes == t->bytes) {
    pthread_mutex_unlock(&g->lock);
    return;
  }
  g->inflight_bytes = g->inflight_bytes - t->bytes + bytes;
  if (bytes < t->bytes) {
    t->bytes = bytes;
    pump(g);
  } else {
    t->bytes = bytes;
    gauges(g);
  }
  pthread_mutex_unlock(&g->lock);
}

void admit_release(struct admit *a, struct admit_ticket *t)
{
  struct admit *g = a->gate;

  /* Locked even for a ticket that holds nothing: another loop may be
   * admitting it right now. */
  pthread_mutex_lock(&g->lock);
  if (t->state == ADMIT_T_NONE && !t->ready) {
    pthread_mutex_unlock(&g->lock);
    return;
  }
  if (t->ready)
    unready(t); /* admitted or timed out, its callback not run yet */
  switch (t->state) {
  case ADMIT_T_ADMITTED:
    assert(g->admitted > 0 && g->inflight_bytes >= t->bytes);
    g->admitted--;
    g->inflight_bytes -= t->bytes;
    pump(g);
    break;
  case ADMIT_T_WAITING: {
    int was_head = g->head == t;
    unlink_waiter(g, t);
    if (was_head)
      pump(g); /* the next one may fit where the head did not */
    break;
  }
  default: break;
  }
  t->state = ADMIT_T_NONE;
  t->bytes = 0;
  gauges(g);
  pthread_mutex_unlock(&g->lock);
}

double admit_waited(const struct admit_ticket *t)
{
  return (double)(now_ns() - t->t0_ns) / 1e9;
}

void admit_close(struct admit *a)
{
  struct admit *g = a->gate;

  if (!a->handles)
    return;
  pthread_mutex_lock(&g->lock); /* other loops read them (make_ready) */
  a->closing = 1;
  a->handles = 0;
  pthread_mutex_unlock(&g->lock);
  uv_close((uv_handle_t *)&a->timer, NULL);
  uv_close((uv_handle_t *)&a->wake, NULL);
}
