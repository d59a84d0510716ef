/* admit.c - admission by memory with a FIFO queue (admit.h).
 *
 * The queue is a doubly linked list of the waiting tickets in arrival
 * order.  Every ticket waits the same --queue-timeout, so the head always
 * has the earliest deadline and one timer (armed for the head) suffices.
 * Admission is strictly in order: a ticket that fits waits while an
 * earlier one does not (no small request overtakes a large one, so a
 * large one is never starved).  Callbacks run from the timer or from an
 * idle handle started by admit_release()/admit_resize(), never inside the
 * caller's own call.
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

static void gauges(struct admit *a)
{
  if (a->metrics != NULL)
    metrics_admit_set(a->metrics, (long)a->waiting, a->inflight_bytes);
}

/* Fits next to what is admitted (an empty gate takes anything that is
 * within the budget: admit_request refused the rest). */
static int fits(const struct admit *a, uint64_t bytes)
{
  return a->admitted == 0 || bytes <= a->max_bytes - a->inflight_bytes;
}

static void take(struct admit *a, struct admit_ticket *t)
{
  t->state = ADMIT_T_ADMITTED;
  a->admitted++;
  a->inflight_bytes += t->bytes;
  a->admitted_total++;
  if (a->metrics != NULL)
    metrics_queue_wait(a->metrics, now_ns() - t->t0_ns);
}

static void unlink_waiter(struct admit *a, struct admit_ticket *t)
{
  assert(t->state == ADMIT_T_WAITING && a->waiting > 0);
  if (t->prev != NULL)
    t->prev->next = t->next;
  else
    a->head = t->next;
  if (t->next != NULL)
    t->next->prev = t->prev;
  else
    a->tail = t->prev;
  t->next = t->prev = NULL;
  a->waiting--;
}

static void timer_cb(uv_timer_t *h);

/* The timer follows the head's deadline. */
static void arm(struct admit *a)
{
  uint64_t now, due;

  if (!a->handles)
    return;
  if (a->head == NULL) {
    uv_timer_stop(&a->timer);
    return;
  }
  now = now_ns();
  due = a->head->t0_ns + a->timeout_ms * 1000000u;
  uv_timer_start(&a->timer, timer_cb,
                 due > now ? (due - now + 999999u) / 1000000u : 0, 0);
}

/* Admits waiters from the head while they fit; their callbacks run. */
static void pump(struct admit *a)
{
  struct admit_ticket *t;

  while ((t = a->head) != NULL && fits(a, t->bytes)) {
    unlink_waiter(a, t);
    take(a, t);
    gauges(a);
    t->cb(t, ADMIT_OK); /* may release or request: re-read the head */
  }
  gauges(a);
  arm(a);
}

static void kick_cb(uv_idle_t *h)
{
  struct admit *a = (struct admit *)((char *)h - offsetof(struct admit, kick));

  uv_idle_stop(h);
  pump(a);
}

static void timer_cb(uv_timer_t *h)
{
  struct admit *a = (struct admit *)((char *)h - offsetof(struct admit, timer));
  uint64_t now = now_ns(), tmo = a->timeout_ms * 1000000u;
  struct admit_ticket *t;

  while ((t = a->head) != NULL && now - t->t0_ns >= tmo) {
    unlink_waiter(a, t);
    t->state = ADMIT_T_NONE;
    a->timeouts_total++;
    gauges(a);
    t->cb(t, ADMIT_TIMEOUT);
  }
  pump(a); /* a large head gone may let the next ones in */
}

/* Later, from the loop: waiters that may fit now. */
static void kick(struct admit *a)
{
  if (a->handles && a->head != NULL && !a->closing)
    uv_idle_start(&a->kick, kick_cb);
}

int admit_init(struct admit *a, uv_loop_t *loop, struct metrics *m,
               uint64_t max_bytes, uint64_t max_pending, uint64_t timeout_s)
{
  int rc;

  memset(a, 0, sizeof *a);
  a->loop = loop;
  a->metrics = m;
  a->max_bytes = max_bytes;
  a->max_pending = max_pending;
  a->timeout_ms = timeout_s * 1000u;
  if ((rc = uv_timer_init(loop, &a->timer)) != 0)
    return rc;
  if ((rc = uv_idle_init(loop, &a->kick)) != 0) {
    uv_close((uv_handle_t *)&a->timer, NULL);
    return rc;
  }
  a->handles = 1;
  gauges(a);
  return 0;
}

enum admit_result admit_request(struct admit *a, struct admit_ticket *t,
                                uint64_t bytes, admit_cb cb, void *arg)
{
  assert(t->state == ADMIT_T_NONE);
  if (bytes > a->max_bytes)
    return ADMIT_E_TOO_LARGE;
  if (a->admitted + a->waiting >= a->max_pending)
    return ADMIT_E_FULL;
  t->bytes = bytes;
  t->t0_ns = now_ns();
  t->cb = cb;
  t->arg = arg;
  t->next = t->prev = NULL;
  if (a->head == NULL && fits(a, bytes)) {
    take(a, t);
    gauges(a);
    return ADMIT_NOW;
  }
  t->state = ADMIT_T_WAITING;
  t->prev = a->tail;
  if (a->tail != NULL)
    a->tail->next = t;
  else
    a->head = t;
  a->tail = t;
  a->waiting++;
  gauges(a);
  if (a->head == t)
    arm(a);
  return ADMIT_WAIT;
}

void admit_resize(struct admit *a, struct admit_ticket *t, uint64_t bytes)
{
  if (t->state != ADMIT_T_ADMITTED || bytes == t->bytes)
    return;
  a->inflight_bytes = a->inflight_bytes - t->bytes + bytes;
  if (bytes < t->bytes)
    kick(a);
  t->bytes = bytes;
  gauges(a);
}

void admit_release(struct admit *a, struct admit_ticket *t)
{
  switch (t->state) {
  case ADMIT_T_ADMITTED:
    assert(a->admitted > 0 && a->inflight_bytes >= t->bytes);
    a->admitted--;
    a->inflight_bytes -= t->bytes;
    kick(a);
    break;
  case ADMIT_T_WAITING: {
    int was_head = a->head == t;
    unlink_waiter(a, t);
    if (was_head) {
      arm(a);
      kick(a); /* the next one may fit where the head did not */
    }
    break;
  }
  default: return;
  }
  t->state = ADMIT_T_NONE;
  t->bytes = 0;
  gauges(a);
}

double admit_waited(const struct admit_ticket *t)
{
  return (double)(now_ns() - t->t0_ns) / 1e9;
}

void admit_close(struct admit *a)
{
  if (!a->handles)
    return;
  a->closing = 1;
  uv_close((uv_handle_t *)&a->timer, NULL);
  uv_close((uv_handle_t *)&a->kick, NULL);
  a->handles = 0;
}
