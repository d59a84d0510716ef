/* test_mem.c - api/mem.h: api_mem_ahead() moves the resident frontier of a
 * buffer ahead of the writes (as far as written, a page to a step), never
 * past the buffer, never back, leaves buffers below API_MEM_MIN alone,
 * and the pages it reports resident are resident (mincore()) while the
 * ones beyond the frontier are not; a negative control shows mincore()
 * sees the difference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static size_t page;

/* A fresh anonymous mapping of `len` bytes: no page resident yet. */
static unsigned char *fresh(size_t len)
{
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  assert_true(p != MAP_FAILED);
  /* Small pages only: a huge page would make untouched bytes resident. */
  (void)madvise(p, len, MADV_NOHUGEPAGE);
  return p;
}

/* Resident pages among those holding bytes [a, b) of base. */
static size_t resident(const unsigned char *base, size_t a, size_t b)
{
  unsigned char vec[4096];
  size_t first = a / page, last = (b + page - 1) / page, n = 0;

  assert_true(last - first <= sizeof vec);
  assert_int_equal(mincore((void *)(base + first * page), (last - first) * page,
                           vec),
                   0);
  for (size_t i = 0; i < last - first; i++)
    n += vec[i] & 1;
  return n;
}

/* This kernel has the advice (Linux 5.14): otherwise api_mem_ahead() only
 * moves the frontier, and residency is not asserted. */
static int kernel_populates(void)
{
  unsigned char *p = fresh(page);
  int ok = madvise(p, page, MADV_POPULATE_WRITE) == 0;
  munmap(p, page);
  return ok;
}

static void test_frontier(void **state)
{
  size_t cap = 64 * page + 100, ready = 0;
  unsigned char *b = fresh(cap);
  (void)state;

  /* The first write, small: its bytes plus a page. */
  api_mem_ahead(b, cap, &ready, 0, 10);
  assert_int_equal(ready, 10 + page);
  /* Writes inside the frontier leave it. */
  api_mem_ahead(b, cap, &ready, 10, page - 10);
  assert_int_equal(ready, 10 + page);
  /* One byte past it: as far again as has been written. */
  api_mem_ahead(b, cap, &ready, page, 11);
  assert_int_equal(ready, 2 * (page + 11));
  /* Far in: a step ahead, no more. */
  api_mem_ahead(b, cap, &ready, 40 * page, 1);
  assert_int_equal(ready, 40 * page + 1 + API_MEM_STEP);
  /* Near the end: the frontier stops at cap, and stays there. */
  api_mem_ahead(b, cap, &ready, cap - 200, 200);
  assert_int_equal(ready, cap);
  api_mem_ahead(b, cap, &ready, cap, 0);
  assert_int_equal(ready, cap);
  /* Never back: an earlier write does not lower it. */
  api_mem_ahead(b, cap, &ready, 0, 1);
  assert_int_equal(ready, cap);
  munmap(b, cap);
}

static void test_resident(void **state)
{
  size_t cap = 256 * page, ready = 0, at;
  unsigned char *b = fresh(cap);
  (void)state;

  if (!kernel_populates()) {
    munmap(b, cap);
    skip(); /* a kernel before 5.14: nothing to see */
  }
  assert_int_equal(resident(b, 0, cap), 0);
  api_mem_ahead(b, cap, &ready, 0, 3 * page);
  /* Everything up to the frontier is resident, nothing past it. */
  assert_int_equal(resident(b, 0, ready), (ready + page - 1) / page);
  at = (ready + page - 1) / page * page;
  assert_int_equal(resident(b, at, cap), 0);
  /* Writing sequentially in small pieces keeps it so. */
  for (size_t w = 3 * page; w < 100 * page; w += 1000) {
    api_mem_ahead(b, cap, &ready, w, 1000);
    memset(b + w, 1, 1000);
  }
  assert_int_equal(resident(b, 0, ready), (ready + page - 1) / page);
  at = (ready + page - 1) / page * page;
  assert_true(ready <= 100 * page + 1000 + API_MEM_STEP);
  assert_int_equal(resident(b, at, cap), 0);
  munmap(b, cap);
}

/* A buffer below API_MEM_MIN is never advised: its frontier goes to its
 * end at the first write, and no page of it becomes resident. */
static void test_small_not_advised(void **state)
{
  size_t cap = API_MEM_MIN - 1, ready = 0;
  unsigned char *b = fresh(cap);
  (void)state;

  api_mem_ahead(b, cap, &ready, 0, 10);
  assert_int_equal(ready, cap);
  assert_int_equal(resident(b, 0, cap), 0);
  /* At API_MEM_MIN it is (where the kernel has the advice). */
  munmap(b, cap);
  cap = API_MEM_MIN;
  ready = 0;
  b = fresh(cap);
  api_mem_ahead(b, cap, &ready, 0, 10);
  assert_int_equal(ready, 10 + page);
  if (kernel_populates())
    assert_int_equal(resident(b, 0, cap), (ready + page - 1) / page);
  munmap(b, cap);
}

/* Negative control: a page only written is resident, one never touched is
 * not: mincore() tells them apart, so the test above can fail. */
static void test_control(void **state)
{
  unsigned char *b = fresh(4 * page);
  (void)state;
  b[page] = 1;
  assert_int_equal(resident(b, 0, page), 0);
  assert_int_equal(resident(b, page, 2 * page), 1);
  munmap(b, 4 * page);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_frontier),
    cmocka_unit_test(test_resident),
    cmocka_unit_test(test_small_not_advised),
    cmocka_unit_test(test_control),
  };
  page = (size_t)sysconf(_SC_PAGESIZE);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
