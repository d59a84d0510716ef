/* test_numfmt.c - api_format_elem() (api/numfmt.c, with its fast path for
 * float32/float16/bfloat16) against the formatter it replaced, kept as
 * tests/unit/numfmt_oracle.c: the text must be byte-identical for every
 * float16 and bfloat16 value, for millions of float32 and float64 bit
 * patterns (random, in the usual range, consecutive) and for edge values
 * (subnormals, powers of two and ten, the largest values, the 1e16
 * boundary, integers, decimal ties).  A negative control checks that the
 * comparison notices a formatter that differs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "numfmt.h"
#include "reduce.h"

size_t oracle_format_elem(char buf[API_NUMFMT_MAX], int dtype,
                          const void *elem);

typedef size_t (*fmt_fn)(char buf[API_NUMFMT_MAX], int dtype, const void *elem);

/* Deterministic 64-bit generator (splitmix64). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng(void)
{
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);

  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static unsigned long mismatches;

/* Compares `fn` with the oracle on one element; counts (and prints the
 * first few) differences. */
static void cmp(fmt_fn fn, int dtype, const void *elem, uint64_t bits)
{
  char a[API_NUMFMT_MAX], b[API_NUMFMT_MAX];
  size_t na, nb;

  memset(a, 0x55, sizeof a);
  memset(b, 0x55, sizeof b);
  na = fn(a, dtype, elem);
  nb = oracle_format_elem(b, dtype, elem);
  if (na != nb || strcmp(a, b) != 0 || strlen(a) != na) {
    if (mismatches < 10)
      print_message("dtype %d bits 0x%llx: \"%s\" (%zu) vs oracle \"%s\" "
                    "(%zu)\n",
                    dtype, (unsigned long long)bits, a, na, b, nb);
    mismatches++;
  }
}

static void cmp_f32(fmt_fn fn, uint32_t u)
{
  float f;

  memcpy(&f, &u, sizeof f);
  cmp(fn, RD_FLOAT32, &f, u);
}

static void cmp_f32v(fmt_fn fn, float f)
{
  uint32_t u;

  memcpy(&u, &f, sizeof u);
  cmp_f32(fn, u);
  cmp_f32(fn, u ^ 0x80000000u);
}

static void cmp_f64(fmt_fn fn, uint64_t u)
{
  double d;

  memcpy(&d, &u, sizeof d);
  cmp(fn, RD_FLOAT64, &d, u);
}

static uint64_t f64_bits(double d)
{
  uint64_t u;

  memcpy(&u, &d, sizeof u);
  return u;
}

static void cmp_f64v(fmt_fn fn, double d)
{
  uint64_t u;

  memcpy(&u, &d, sizeof u);
  cmp_f64(fn, u);
  cmp_f64(fn, u ^ 0x8000000000000000ULL);
}

/* Every float16 and bfloat16 bit pattern. */
static void run_half_exhaustive(fmt_fn fn)
{
  for (uint32_t i = 0; i < 65536; i++) {
    uint16_t h = (uint16_t)i;

    cmp(fn, RD_FLOAT16, &h, h);
    cmp(fn, RD_BFLOAT16, &h, h);
  }
}

/* float32 edge values: subnormals, powers of two and ten and their
 * neighbours, the largest finite values, the 1e16 boundary, integers,
 * values with a decimal tie, NaN and infinities. */
static void run_f32_edges(fmt_fn fn)
{
  uint32_t u;
  int e, i;
  float f, g;

  for (u = 0; u < 70000; u++) /* the smallest subnormals, and zero */
    cmp_f32(fn, u);
  for (u = 0x007FFFFFu - 70000; u <= 0x00800000u + 70000; u++)
    cmp_f32(fn, u); /* both sides of the smallest normal */
  for (u = 0x7F7FFFFFu - 70000; u <= 0x7F800001u; u++)
    cmp_f32(fn, u); /* the largest values, inf, a NaN */
  cmp_f32(fn, 0xFFC00000u);
  for (e = -149; e <= 127; e++) { /* powers of two, +- a few ulps */
    f = ldexpf(1.0f, e);
    memcpy(&u, &f, sizeof u);
    for (i = -3; i <= 3; i++)
      cmp_f32(fn, u + (uint32_t)i);
  }
  for (e = -45; e <= 38; e++) { /* powers of ten, +- 200 ulps */
    f = (float)pow(10.0, e);
    memcpy(&u, &f, sizeof u);
    for (i = -200; i <= 200; i++) {
      cmp_f32(fn, u + (uint32_t)i);
      cmp_f32(fn, (u + (uint32_t)i) ^ 0x80000000u);
    }
  }
  f = 1e16f; /* the plain/exponent boundary */
  for (i = 0; i < 2000; i++) {
    cmp_f32v(fn, f);
    f = nextafterf(f, 0);
  }
  f = 1e16f;
  for (i = 0; i < 2000; i++) {
    cmp_f32v(fn, f);
    f = nextafterf(f, INFINITY);
  }
  for (i = 0; i <= 200000; i++) /* small integers */
    cmp_f32v(fn, (float)i);
  for (i = 0; i < 200000; i++) /* integers of every size */
    cmp_f32v(fn, (float)(rng() >> (rng() % 64)));
  for (i = 0; i < 200000; i++) { /* k / 2^j: decimal ties like 2.5, 0.125 */
    g = ldexpf((float)(rng() % 100000), -(int)(rng() % 30));
    cmp_f32v(fn, g);
  }
  cmp_f32v(fn, 4290774016.0f);
  cmp_f32v(fn, 3.1622777f);
}

/* Random float32 bit patterns, random values in the usual range (where
 * the fast path works) and a run of consecutive values. */
static void run_f32_random(fmt_fn fn, long n)
{
  uint32_t u;
  float f;

  for (long i = 0; i < n; i++)
    cmp_f32(fn, (uint32_t)rng());
  for (long i = 0; i < n; i++) {
    f = (float)(ldexp((double)(rng() >> 11), -53) *
                pow(10.0, (double)(rng() % 40) - 20));
    cmp_f32v(fn, f);
  }
  f = 0.7f;
  memcpy(&u, &f, sizeof u);
  for (long i = 0; i < n; i++)
    cmp_f32(fn, u + (uint32_t)i);
}

static void run_f64(fmt_fn fn, long n)
{
  int e, i;

  for (long k = 0; k < n; k++)
    cmp_f64(fn, rng());
  for (long k = 0; k < n / 4; k++)
    cmp_f64v(fn, ldexp((double)(rng() >> 11), -53) *
                   pow(10.0, (double)(rng() % 40) - 20));
  for (uint64_t u = 0; u < 1000; u++) {
    cmp_f64(fn, u);
    cmp_f64(fn, 0x7FEFFFFFFFFFFFFFULL - u);
    cmp_f64(fn, 0x0010000000000000ULL - 500 + u);
  }
  cmp_f64(fn, 0x7FF0000000000000ULL);
  cmp_f64(fn, 0xFFF0000000000000ULL);
  cmp_f64(fn, 0x7FF8000000000000ULL);
  for (e = -1074; e <= 1023; e++)
    cmp_f64v(fn, ldexp(1.0, e));
  for (e = -20; e <= 20; e++)
    for (i = -5; i <= 5; i++)
      cmp_f64(fn, f64_bits(pow(10.0, e)) + (uint64_t)(int64_t)i);
  for (i = 0; i < 100000; i++)
    cmp_f64v(fn, (double)i);
}

static void test_half_exhaustive(void **state)
{
  (void)state;
  mismatches = 0;
  run_half_exhaustive(api_format_elem);
  assert_int_equal(mismatches, 0);
}

static void test_f32_edges(void **state)
{
  (void)state;
  mismatches = 0;
  run_f32_edges(api_format_elem);
  assert_int_equal(mismatches, 0);
}

static void test_f32_random(void **state)
{
  (void)state;
  mismatches = 0;
  run_f32_random(api_format_elem, 1000000);
  assert_int_equal(mismatches, 0);
}

static void test_f64(void **state)
{
  (void)state;
  mismatches = 0;
  run_f64(api_format_elem, 1000000);
  assert_int_equal(mismatches, 0);
}

/* Every value of the 8- and 16-bit integer dtypes and bool (every byte),
 * random and edge values of the 32- and 64-bit ones, an unknown dtype. */
static void run_ints(fmt_fn fn)
{
  static const int small[] = { RD_BOOL, RD_INT8, RD_UINT8, RD_INT16,
                               RD_UINT16 };
  static const uint64_t edge[] = { 0,
                                   1,
                                   9,
                                   10,
                                   99,
                                   100,
                                   0x7FFFFFFFULL,
                                   0x80000000ULL,
                                   0xFFFFFFFFULL,
                                   0x100000000ULL,
                                   999999999999999999ULL,
                                   1000000000000000000ULL,
                                   9999999999999999999ULL,
                                   10000000000000000000ULL,
                                   0x7FFFFFFFFFFFFFFFULL,
                                   0x8000000000000000ULL,
                                   0xFFFFFFFFFFFFFFFFULL };
  uint64_t u64;
  uint32_t u32;
  size_t i;

  for (i = 0; i < sizeof small / sizeof small[0]; i++)
    for (uint32_t v = 0; v < 65536; v++) {
      uint16_t h = (uint16_t)v;

      cmp(fn, small[i], &h, v); /* host order: a byte dtype sees the low one */
    }
  for (i = 0; i < 400000 + sizeof edge / sizeof edge[0]; i++) {
    u64 = i < sizeof edge / sizeof edge[0] ? edge[i] : rng() >> (rng() % 64);
    if (i % 2)
      u64 = 0 - u64;
    u32 = (uint32_t)u64;
    cmp(fn, RD_INT32, &u32, u32);
    cmp(fn, RD_UINT32, &u32, u32);
    cmp(fn, RD_INT64, &u64, u64);
    cmp(fn, RD_UINT64, &u64, u64);
  }
  cmp(fn, 999, &u64, 0);
}

static void test_ints(void **state)
{
  char a[API_NUMFMT_MAX], b[API_NUMFMT_MAX];
  int64_t v;

  (void)state;
  mismatches = 0;
  run_ints(api_format_elem);
  assert_int_equal(mismatches, 0);
  for (int i = 0; i < 100000; i++) { /* the helpers the encoder uses */
    v = (int64_t)(rng() >> (rng() % 64)) * (i % 2 ? -1 : 1);
    if (i == 0)
      v = INT64_MIN;
    assert_int_equal(api_format_i64(a, v),
                     snprintf(b, sizeof b, "%lld", (long long)v));
    assert_string_equal(a, b);
    assert_int_equal(api_format_u64(a, (uint64_t)v),
                     snprintf(b, sizeof b, "%llu", (unsigned long long)v));
    assert_string_equal(a, b);
  }
}

/* A formatter that is right almost everywhere: 9 significant digits for
 * float32 where the oracle would write fewer, from one value in 4096. */
static size_t mutant_format_elem(char buf[API_NUMFMT_MAX], int dtype,
                                 const void *elem)
{
  float f;
  uint32_t u;

  if (dtype == RD_FLOAT32) {
    memcpy(&f, elem, sizeof f);
    memcpy(&u, &f, sizeof u);
    if (isfinite(f) && f != 0 && (u & 0xFFF) == 0x123)
      return (size_t)snprintf(buf, API_NUMFMT_MAX, "%.9g", (double)f);
  }
  return api_format_elem(buf, dtype, elem);
}

/* The negative control: the comparison above notices the mutant. */
static void test_negative_control(void **state)
{
  (void)state;
  mismatches = 0;
  run_f32_random(mutant_format_elem, 100000);
  assert_true(mismatches > 0);
  mismatches = 0;
  run_half_exhaustive(mutant_format_elem);
  assert_int_equal(mismatches, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_half_exhaustive),
    cmocka_unit_test(test_f32_edges),
    cmocka_unit_test(test_f32_random),
    cmocka_unit_test(test_f64),
    cmocka_unit_test(test_ints),
    cmocka_unit_test(test_negative_control),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
