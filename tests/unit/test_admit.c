/* test_admit.c - admission by memory with a FIFO queue (daemon/admit.c):
 * admitted at once when it fits and nobody waits, waiting in arrival order
 * otherwise (no overtaking), admitted from a loop callback when memory is
 * released or a count shrinks, refused when larger than the budget (413)
 * or beyond --max-pending admitted plus waiting (503), timed out after
 * --queue-timeout, and taken out of the queue by a release while waiting.
 * Expected values follow admit.h and docs/http-api.md ("Admission"). */
#include "config.h" /* autoconf */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "admit.h"

/* The callbacks' record: which ticket, how, in order. */
static struct admit_ticket *seen[16];
static enum admit_outcome seen_how[16];
static int nseen;

static void record(struct admit_ticket *t, enum admit_outcome how)
{
  assert_true(nseen < 16);
  seen[nseen] = t;
  seen_how[nseen++] = how;
}

/* Runs the loop until nothing is pending (the idle handle fires once). */
static void spin(uv_loop_t *loop)
{
  uv_run(loop, UV_RUN_NOWAIT);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void finish(uv_loop_t *loop, struct admit *a)
{
  admit_close(a);
  uv_run(loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(loop), 0);
}

static void test_fifo(void **state)
{
  uv_loop_t loop;
  struct admit a;
  struct admit_ticket t1, t2, t3, t4;

  (void)state;
  nseen = 0;
  memset(&t1, 0, sizeof t1);
  memset(&t2, 0, sizeof t2);
  memset(&t3, 0, sizeof t3);
  memset(&t4, 0, sizeof t4);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(admit_init(&a, &loop, NULL, 100, 10, 10), 0);

  assert_int_equal(admit_request(&a, &t1, 60, record, NULL), ADMIT_NOW);
  assert_int_equal(t1.state, ADMIT_T_ADMITTED);
  assert_int_equal(a.inflight_bytes, 60);
  /* 50 does not fit next to 60: it waits. */
  assert_int_equal(admit_request(&a, &t2, 50, record, NULL), ADMIT_WAIT);
  /* 10 would fit, but waits behind 50: no overtaking. */
  assert_int_equal(admit_request(&a, &t3, 10, record, NULL), ADMIT_WAIT);
  assert_int_equal(a.waiting, 2);
  spin(&loop);
  assert_int_equal(nseen, 0);

  /* Releasing 60 admits both, in order, from a loop callback. */
  admit_release(&a, &t1);
  assert_int_equal(nseen, 0); /* not inside the release */
  assert_int_equal(t1.state, ADMIT_T_NONE);
  spin(&loop);
  assert_int_equal(nseen, 2);
  assert_ptr_equal(seen[0], &t2);
  assert_ptr_equal(seen[1], &t3);
  assert_int_equal(seen_how[0], ADMIT_OK);
  assert_int_equal(t2.state, ADMIT_T_ADMITTED);
  assert_int_equal(a.inflight_bytes, 60);
  assert_int_equal(a.waiting, 0);

  /* Shrinking a count admits a waiter that now fits. */
  assert_int_equal(admit_request(&a, &t4, 90, record, NULL), ADMIT_WAIT);
  admit_resize(&a, &t2, 5);
  spin(&loop);
  assert_int_equal(nseen, 2); /* 5 + 10 + 90 > 100 */
  admit_resize(&a, &t3, 2);
  spin(&loop);
  assert_int_equal(nseen, 3); /* 5 + 2 + 90 <= 100 */
  assert_ptr_equal(seen[2], &t4);
  assert_int_equal(a.inflight_bytes, 97);
  /* Growth is counted even beyond the budget. */
  admit_resize(&a, &t4, 200);
  assert_int_equal(a.inflight_bytes, 207);
  admit_release(&a, &t2);
  admit_release(&a, &t3);
  admit_release(&a, &t4);
  admit_release(&a, &t4); /* twice: nothing */
  assert_int_equal(a.inflight_bytes, 0);
  assert_int_equal(a.admitted, 0);
  finish(&loop, &a);
}

static void test_refusals(void **state)
{
  uv_loop_t loop;
  struct admit a;
  struct admit_ticket t[4];

  (void)state;
  memset(t, 0, sizeof t);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(admit_init(&a, &loop, NULL, 100, 3, 10), 0);
  /* Larger than the whole budget: never fits (413). */
  assert_int_equal(admit_request(&a, &t[0], 101, record, NULL),
                   ADMIT_E_TOO_LARGE);
  assert_int_equal(t[0].state, ADMIT_T_NONE);
  /* Exactly the budget fits an empty gate. */
  assert_int_equal(admit_request(&a, &t[0], 100, record, NULL), ADMIT_NOW);
  assert_int_equal(admit_request(&a, &t[1], 1, record, NULL), ADMIT_WAIT);
  assert_int_equal(admit_request(&a, &t[2], 1, record, NULL), ADMIT_WAIT);
  /* --max-pending 3 counts the admitted and the waiting: full (503). */
  assert_int_equal(admit_request(&a, &t[3], 1, record, NULL), ADMIT_E_FULL);
  assert_int_equal(t[3].state, ADMIT_T_NONE);
  /* A waiter whose client left: out of the queue, its callback never
   * runs; the next one is admitted when memory frees. */
  nseen = 0;
  admit_release(&a, &t[1]);
  assert_int_equal(a.waiting, 1);
  admit_release(&a, &t[0]);
  spin(&loop);
  assert_int_equal(nseen, 1);
  assert_ptr_equal(seen[0], &t[2]);
  admit_release(&a, &t[2]);
  finish(&loop, &a);
}

static void test_timeout(void **state)
{
  uv_loop_t loop;
  struct admit a;
  struct admit_ticket t1, t2, t3;

  (void)state;
  nseen = 0;
  memset(&t1, 0, sizeof t1);
  memset(&t2, 0, sizeof t2);
  memset(&t3, 0, sizeof t3);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(admit_init(&a, &loop, NULL, 100, 10, 1), 0);
  assert_int_equal(admit_request(&a, &t1, 100, record, NULL), ADMIT_NOW);
  assert_int_equal(admit_request(&a, &t2, 60, record, NULL), ADMIT_WAIT);
  assert_int_equal(admit_request(&a, &t3, 70, record, NULL), ADMIT_WAIT);
  /* Both wait --queue-timeout 1 s, then time out in order. */
  uv_run(&loop, UV_RUN_ONCE);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(nseen, 2);
  assert_ptr_equal(seen[0], &t2);
  assert_int_equal(seen_how[0], ADMIT_TIMEOUT);
  assert_ptr_equal(seen[1], &t3);
  assert_int_equal(seen_how[1], ADMIT_TIMEOUT);
  assert_int_equal(t2.state, ADMIT_T_NONE);
  assert_true(admit_waited(&t2) >= 0.99);
  assert_int_equal(a.timeouts_total, 2);
  assert_int_equal(a.waiting, 0);
  assert_int_equal(a.inflight_bytes, 100);
  admit_release(&a, &t2); /* timed out: nothing to give back */
  admit_release(&a, &t1);
  assert_int_equal(a.inflight_bytes, 0);
  finish(&loop, &a);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fifo),
    cmocka_unit_test(test_refusals),
    cmocka_unit_test(test_timeout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
