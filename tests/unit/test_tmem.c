/* test_tmem.c - api/tmem.h: buffers keep their bytes through realloc in
 * both kinds and across them; a freed large buffer is cached (the next
 * allocation that fits gets the same pages, still resident: mincore()),
 * the smallest that fits is taken, the oldest is evicted for a new one
 * over the limit, one larger than the limit is unmapped at once, trim
 * releases by age, a shrink gives back the pages past the size; with no
 * limit (the default) nothing is kept.  A negative control shows the
 * residency check can fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmem.h"

static size_t page;

/* Resident pages among those holding bytes [a, b) of p (page-aligned
 * start rounded down). */
static size_t resident(const void *p, size_t a, size_t b)
{
  static unsigned char vec[1 << 16];
  uintptr_t s = ((uintptr_t)p + a) & ~(uintptr_t)(page - 1);
  uintptr_t e = ((uintptr_t)p + b + page - 1) & ~(uintptr_t)(page - 1);
  size_t n = 0;

  assert_true((e - s) / page <= sizeof vec);
  assert_int_equal(mincore((void *)s, e - s, vec), 0);
  for (size_t i = 0; i < (e - s) / page; i++)
    n += vec[i] & 1;
  return n;
}

/* Whether p (from this allocator) is still mapped: mincore() fails with
 * ENOMEM on an unmapped range. */
static int mapped(const void *p)
{
  unsigned char v;
  uintptr_t s = (uintptr_t)p & ~(uintptr_t)(page - 1);

  return mincore((void *)s, page, &v) == 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(i * 31 + seed);
}

static int same(const unsigned char *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(i * 31 + seed))
      return 0;
  return 1;
}

static int setup(void **state)
{
  (void)state;
  api_tmem_cache_limit(0);
  (void)api_tmem_trim(0);
  return 0;
}

static void test_small_and_zero(void **state)
{
  unsigned char *a = api_tmem_alloc(0), *b;
  (void)state;

  assert_non_null(a);
  b = api_tmem_alloc(100);
  assert_non_null(b);
  fill(b, 100, 1);
  b = api_tmem_realloc(b, 5000);
  assert_non_null(b);
  assert_true(same(b, 100, 1));
  b = api_tmem_realloc(b, 10);
  assert_true(same(b, 10, 1));
  api_tmem_free(a);
  api_tmem_free(b);
  api_tmem_free(NULL);
  assert_null(api_tmem_alloc(SIZE_MAX));
  assert_null(api_tmem_alloc(SIZE_MAX - 100));
}

/* Bytes survive growing from malloc into a mapping, growing the mapping
 * (mremap) and shrinking it. */
static void test_realloc_kinds(void **state)
{
  size_t big = 3 * (size_t)API_TMEM_MAP_MIN;
  unsigned char *p = api_tmem_alloc(1000);
  (void)state;

  fill(p, 1000, 7);
  p = api_tmem_realloc(p, API_TMEM_MAP_MIN);
  assert_non_null(p);
  assert_true(same(p, 1000, 7));
  assert_int_equal((uintptr_t)p % 64, 0); /* a mapping's data */
  fill(p, API_TMEM_MAP_MIN, 8);
  p = api_tmem_realloc(p, big);
  assert_non_null(p);
  assert_true(same(p, API_TMEM_MAP_MIN, 8));
  fill(p, big, 9);
  p = api_tmem_realloc(p, 5000);
  assert_non_null(p);
  assert_true(same(p, 5000, 9));
  api_tmem_free(p);
}

static void test_no_limit_unmaps(void **state)
{
  struct api_tmem_stats st;
  unsigned char *p = api_tmem_alloc(API_TMEM_MAP_MIN);
  (void)state;

  memset(p, 1, API_TMEM_MAP_MIN);
  assert_true(mapped(p));
  api_tmem_free(p);
  assert_false(mapped(p));
  api_tmem_stats(&st);
  assert_int_equal(st.cached, 0);
  assert_int_equal(st.cached_bytes, 0);
}

/* The point of the cache: the same pages come back, resident, no fault. */
static void test_reuse_warm(void **state)
{
  struct api_tmem_stats a, b;
  size_t n = 2 * (size_t)API_TMEM_MAP_MIN; /* a page multiple */
  unsigned char *p, *q;
  (void)state;

  api_tmem_cache_limit(1 << 24);
  api_tmem_stats(&a);
  p = api_tmem_alloc(n);
  memset(p, 3, n);
  assert_int_equal(resident(p, 0, n),
                   (n + (size_t)((uintptr_t)p % page) + page - 1) / page);
  api_tmem_free(p);
  api_tmem_stats(&b);
  assert_int_equal(b.cached, a.cached + 1);
  assert_true(mapped(p));
  q = api_tmem_alloc(n - 100); /* fits: the same buffer */
  assert_ptr_equal(q, p);
  assert_int_equal(resident(q, 0, n - 100),
                   (n - 100 + (size_t)((uintptr_t)q % page) + page - 1) / page);
  api_tmem_stats(&a);
  assert_int_equal(a.hits, b.hits + 1);
  assert_int_equal(a.cached, b.cached - 1);
  api_tmem_free(q);
  assert_int_equal(api_tmem_trim(0), n + page); /* its mapping */
  assert_false(mapped(q));
}

static void test_smallest_fit(void **state)
{
  unsigned char *s = api_tmem_alloc(API_TMEM_MAP_MIN);
  unsigned char *m = api_tmem_alloc(4 * (size_t)API_TMEM_MAP_MIN);
  unsigned char *l = api_tmem_alloc(16 * (size_t)API_TMEM_MAP_MIN), *p;
  (void)state;

  api_tmem_cache_limit(1 << 26);
  api_tmem_free(l);
  api_tmem_free(s);
  api_tmem_free(m);
  p = api_tmem_alloc(2 * (size_t)API_TMEM_MAP_MIN);
  assert_ptr_equal(p, m);
  api_tmem_free(p);
  p = api_tmem_alloc(API_TMEM_MAP_MIN + page);
  assert_ptr_equal(p, m); /* s is a page short (with the header) */
  api_tmem_free(p);
  p = api_tmem_alloc(API_TMEM_MAP_MIN - 64);
  assert_ptr_equal(p, s);
  api_tmem_free(p);
  /* Larger than any: a fresh mapping, the others stay. */
  p = api_tmem_alloc(32 * (size_t)API_TMEM_MAP_MIN);
  assert_true(p != s && p != m && p != l);
  api_tmem_free(p);
  (void)api_tmem_trim(0);
  assert_false(mapped(s) || mapped(m) || mapped(l) || mapped(p));
}

/* Over the limit the oldest go first; one above the limit is not kept. */
static void test_limit_evicts_oldest(void **state)
{
  struct api_tmem_stats st;
  size_t n = API_TMEM_MAP_MIN; /* each maps n + a page */
  unsigned char *a = api_tmem_alloc(n), *b = api_tmem_alloc(n),
                *c = api_tmem_alloc(n), *d;
  struct timespec ms = { 0, 2000000 };
  (void)state;

  api_tmem_cache_limit(2 * (n + page));
  api_tmem_free(a);
  nanosleep(&ms, NULL);
  api_tmem_free(b);
  nanosleep(&ms, NULL);
  api_tmem_free(c); /* a goes */
  assert_false(mapped(a));
  assert_true(mapped(b) && mapped(c));
  api_tmem_stats(&st);
  assert_int_equal(st.cached, 2);
  assert_int_equal(st.cached_bytes, 2 * (n + page));
  d = api_tmem_alloc(3 * n);
  api_tmem_free(d); /* larger than the limit: unmapped, the rest stays */
  assert_false(mapped(d));
  assert_true(mapped(b) && mapped(c));
  /* Lowering the limit evicts at once, the oldest first. */
  api_tmem_cache_limit(n + page);
  assert_false(mapped(b));
  assert_true(mapped(c));
  api_tmem_cache_limit(0);
  assert_false(mapped(c));
  api_tmem_stats(&st);
  assert_int_equal(st.cached, 0);
}

static void test_trim_by_age(void **state)
{
  unsigned char *a = api_tmem_alloc(API_TMEM_MAP_MIN),
                *b = api_tmem_alloc(API_TMEM_MAP_MIN);
  struct timespec t = { 0, 60000000 };
  (void)state;

  api_tmem_cache_limit(1 << 24);
  api_tmem_free(a);
  nanosleep(&t, NULL);
  api_tmem_free(b);
  /* a was freed at least 60 ms ago, b just now. */
  assert_int_equal(api_tmem_trim(50), API_TMEM_MAP_MIN + page);
  assert_false(mapped(a));
  assert_true(mapped(b));
  assert_int_equal(api_tmem_trim(0), API_TMEM_MAP_MIN + page);
  assert_false(mapped(b));
}

/* A shrink keeps the address space (a later large request fits) but not
 * the pages past the new size. */
static void test_shrink_gives_pages_back(void **state)
{
  size_t n = 128 * page, small = 8 * page;
  unsigned char *p = api_tmem_alloc(n), *q;
  (void)state;

  api_tmem_cache_limit(1 << 24);
  memset(p, 5, n);
  assert_true(resident(p, small + page, n) > 100);
  q = api_tmem_realloc(p, small);
  assert_ptr_equal(q, p);
  assert_int_equal(resident(q, small + page, n), 0);
  api_tmem_free(q);
  q = api_tmem_alloc(n); /* the same mapping */
  assert_ptr_equal(q, p);
  api_tmem_free(q);
  (void)api_tmem_trim(0);
}

/* Negative control: a written page of a fresh mapping is resident, an
 * untouched one is not, so the residency assertions above can fail. */
static void test_control(void **state)
{
  unsigned char *b = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  (void)state;
  assert_true(b != MAP_FAILED);
  (void)madvise(b, 4 * page, MADV_NOHUGEPAGE);
  b[page] = 1;
  assert_int_equal(resident(b, 0, page), 0);
  assert_int_equal(resident(b, page, 2 * page), 1);
  munmap(b, 4 * page);
  assert_false(mapped(b));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup(test_small_and_zero, setup),
    cmocka_unit_test_setup(test_realloc_kinds, setup),
    cmocka_unit_test_setup(test_no_limit_unmaps, setup),
    cmocka_unit_test_setup(test_reuse_warm, setup),
    cmocka_unit_test_setup(test_smallest_fit, setup),
    cmocka_unit_test_setup(test_limit_evicts_oldest, setup),
    cmocka_unit_test_setup(test_trim_by_age, setup),
    cmocka_unit_test_setup(test_shrink_gives_pages_back, setup),
    cmocka_unit_test_setup(test_control, setup),
  };
  page = (size_t)sysconf(_SC_PAGESIZE);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
