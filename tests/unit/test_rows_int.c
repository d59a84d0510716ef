/* test_rows_int.c - kernels_rows_int.c gives the bits of the general path.
 *
 * The reference of every row is the existing exact path: the plan's
 * rows() into a zeroed 128/192-bit accumulator (portable table) and
 * rd__finalize() as reduce.c calls it.  Each of the three paths (portable,
 * AVX2, AVX-512: skipped with a note where the CPU lacks one) runs on
 * int32, uint32, int64 and uint64, ReduceL2 and ReduceSumSquare, n = 1..16,
 * 1..64 rows (counts that are not multiples of 4 or 8), misaligned starts,
 * over values at the bound (2^29 - 1, 2^29, -2^29, -2^29 - 1), the type's
 * extremes (INT_MIN, UINT_MAX), perfect squares and their neighbours and
 * small random values: every row the kernel says it wrote must hold the
 * reference's bytes, and every row with an element beyond the bound, or
 * whose result does not fit, must be left to the caller.  A negative
 * control checks the comparison catches a wrong output.  Whole plans then
 * run under each path against the portable one with rd_execute.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels.h"
#include "kernels_rows_int.h"
#include "ops.h"
#include "reduce.h"

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

static const int dtypes[] = { RD_INT32, RD_UINT32, RD_INT64, RD_UINT64 };

static int is_signed(int dt)
{
  return dt == RD_INT32 || dt == RD_INT64;
}

/* One element: mostly small, sometimes a boundary or an extreme. */
static int64_t pick(int dt, unsigned rare)
{
  static const int64_t edge[] = {
    (1 << 29) - 1, 1 << 29, -(1 << 29), -(1 << 29) - 1,
    46340,         46341,   65535,      65536,
    3037000499LL,  0,       1,          -1,
  };
  uint64_t r = next();
  int64_t v;
  if (r % 1000 < rare) {
    size_t k = (size_t)(r >> 32) % (sizeof edge / sizeof edge[0] + 4);
    if (k < sizeof edge / sizeof edge[0])
      v = edge[k];
    else if (k == sizeof edge / sizeof edge[0])
      v = dt == RD_INT32 ? INT32_MIN : dt == RD_INT64 ? INT64_MIN : -1;
    else if (k == sizeof edge / sizeof edge[0] + 1)
      v = dt == RD_INT32 ? INT32_MAX : dt == RD_INT64 ? INT64_MAX : -1;
    else
      v = (int64_t)(next() >> (r % 40)); /* any magnitude */
  } else {
    v = (int64_t)(r >> 40) % 20000; /* below 2^29 either way */
    if (r & 1 && is_signed(dt))
      v = -v;
  }
  if (!is_signed(dt) && v < 0 && dt == RD_UINT32)
    v = (int64_t)(uint32_t)v;
  return v;
}

static void put(int dt, unsigned char *p, int64_t v)
{
  if (dt == RD_INT32 || dt == RD_UINT32) {
    uint32_t u = (uint32_t)v;
    memcpy(p, &u, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

/* 1: every element of the row lies in the kernel's bound. */
static int in_bound(int dt, const unsigned char *x, size_t n)
{
  for (size_t j = 0; j < n; j++) {
    int64_t v;
    if (dt == RD_INT32) {
      int32_t u;
      memcpy(&u, x + j * 4, 4);
      v = u;
    } else if (dt == RD_UINT32) {
      uint32_t u;
      memcpy(&u, x + j * 4, 4);
      v = u;
    } else {
      memcpy(&v, x + j * 8, 8);
      if (dt == RD_UINT64 && v < 0)
        return 0;
    }
    if (v >= (1 << 29) || v < -(1 << 29) || (!is_signed(dt) && v < 0))
      return 0;
  }
  return 1;
}

/* The existing path: rows() into a zeroed accumulator, then finalize
 * output o with policy `pol`; returns its code (0: the output was
 * written). */
static int reference_pol(int dt, int l2, const unsigned char *x, size_t n,
                         unsigned char *dst, int pol, uint64_t o,
                         struct rd_error *err)
{
  const struct rd__kernel *k = rd__kernel_impl(rd__kernel_id(dt),
                                               RD__IMPL_PORTABLE);
  struct rd__u192 acc;
  struct rd__final f;
  int op = l2 ? RD_OP_L2 : RD_OP_SUM_SQUARE;
  memset(&acc, 0, sizeof acc);
  k->rows(&acc, x, n, 1);
  memset(&f, 0, sizeof f);
  f.op = op;
  f.dtype = dt;
  f.out_dtype = dt;
  f.overflow = pol;
  f.row = rd__op_row(op);
  f.family = f.row->int_family;
  f.count = n;
  f.acc_class = k->acc_class;
  return rd__finalize(&f, &acc, dst, o, err);
}

static int reference(int dt, int l2, const unsigned char *x, size_t n,
                     unsigned char *dst)
{
  struct rd_error err;
  return reference_pol(dt, l2, x, n, dst, RD_OVERFLOW_ERROR, 0, &err);
}

static int impl_ok(int impl)
{
  return rd__kernel_impl(RD__K_I32, impl) != NULL;
}

static size_t checked_fast, checked_left;

/* One call on nrows rows of n elements; returns the rows that differ. */
static size_t check_block(int impl, int dt, int l2, size_t n, size_t nrows,
                          unsigned rare, size_t mis, int corrupt)
{
  size_t esz = rd_dtype_size(dt), bad = 0;
  unsigned char *buf = malloc(64 * 16 * 8 + 64);
  unsigned char *x = buf + mis * esz % 64;
  unsigned char out[64 * 8], ref[8];
  uint64_t left;
  assert_non_null(buf);
  for (size_t i = 0; i < nrows * n; i++)
    put(dt, x + i * esz, pick(dt, rare));
  memset(out, 0xcc, sizeof out);
  left = rd__rows_int_impl(impl, dt, l2, out, x, n, nrows);
  if (nrows < 64)
    assert_int_equal(left >> nrows, 0); /* no bits past the rows */
  if (corrupt && (~left & 1))
    out[0] ^= 1; /* negative control */
  for (size_t r = 0; r < nrows; r++) {
    const unsigned char *row = x + r * n * esz;
    int rc = reference(dt, l2, row, n, ref);
    int fits = rc == 0, inb = in_bound(dt, row, n);
    if (left >> r & 1) {
      /* left to the caller: only rows out of bound or not fitting */
      if (inb && fits)
        bad++;
      checked_left++;
      continue;
    }
    if (!inb || !fits || memcmp(out + r * esz, ref, esz) != 0)
      bad++;
    checked_fast++;
  }
  free(buf);
  return bad;
}

static void run_impl(int impl)
{
  if (!impl_ok(impl)) {
    print_message("    (%s path not available on this CPU: skipped)\n",
                  rd__kernels_name(impl));
    return;
  }
  checked_fast = checked_left = 0;
  for (size_t d = 0; d < 4; d++)
    for (int l2 = 0; l2 <= 1; l2++)
      for (size_t n = 1; n <= RD__ROWS_INT_MAX_N; n++)
        for (size_t nrows = 1; nrows <= 64; nrows += nrows < 20 ? 1 : 7)
          for (unsigned rare = 0; rare <= 200; rare += 40) {
            size_t b = check_block(impl, dtypes[d], l2, n, nrows, rare,
                                   nrows + n, 0);
            if (b)
              fail_msg("%s %s %s n=%zu rows=%zu rare=%u: %zu bad rows",
                       rd__kernels_name(impl), rd_dtype_name(dtypes[d]),
                       l2 ? "L2" : "SumSquare", n, nrows, rare, b);
          }
  assert_true(checked_fast > 10000);
  assert_true(checked_left > 1000);
}

static void test_portable(void **state)
{
  (void)state;
  run_impl(RD__IMPL_PORTABLE);
}

static void test_avx2(void **state)
{
  (void)state;
  run_impl(RD__IMPL_AVX2);
}

static void test_avx512(void **state)
{
  (void)state;
  run_impl(RD__IMPL_AVX512);
}

/* Exact boundaries, one row each: which rows are left, and the values. */
static void test_bounds(void **state)
{
  static const int64_t vals[] = { (1 << 29) - 1, 1 << 29, -(1 << 29),
                                  -(1 << 29) - 1 };
  (void)state;
  for (int impl = 0; impl < RD__IMPL_COUNT; impl++) {
    if (!impl_ok(impl))
      continue;
    for (size_t d = 0; d < 4; d++)
      for (size_t vi = 0; vi < 4; vi++)
        for (size_t n = 1; n <= 16; n++)
          for (int l2 = 0; l2 <= 1; l2++) {
            int dt = dtypes[d];
            size_t esz = rd_dtype_size(dt);
            unsigned char x[16 * 8 * 9], out[9 * 8], ref[8];
            int64_t v = vals[vi];
            uint64_t left;
            if (!is_signed(dt) && v < 0)
              continue;
            /* 9 rows: all v (row 0..7), row 8 ends with INT_MIN / max */
            for (size_t i = 0; i < 9 * n; i++)
              put(dt, x + i * esz, v);
            put(dt, x + (9 * n - 1) * esz,
                dt == RD_INT32   ? INT32_MIN
                : dt == RD_INT64 ? INT64_MIN
                                 : -1);
            left = rd__rows_int_impl(impl, dt, l2, out, x, n, 9);
            for (size_t r = 0; r < 9; r++) {
              int rc = reference(dt, l2, x + r * n * esz, n, ref);
              int want_left = r == 8 || v >= (1 << 29) || v < -(1 << 29) ||
                              rc != 0;
              assert_int_equal(left >> r & 1, want_left);
              if (!want_left)
                assert_memory_equal(out + r * esz, ref, esz);
            }
          }
  }
}

/* Integer square roots next to perfect squares: rows whose sum of squares
 * is m^2 or m^2 - 1 for m = q*v, q = 1..3, where the double estimate of
 * the root rounds up (m^2 - 1).  Two scales: v in [2^28, 2^29) (sums up
 * to 2^61: the exact correction matters), and m up to 2^26 (sums up to
 * 2^52: the AVX2 form takes the truncated double root, with no
 * correction, when a step's four sums are all below 2^52, and m^2 - 1
 * comes closest to m there). */
static size_t near_square_row(int64_t *row, size_t q, int64_t v, int minus)
{
  size_t k = 0;
  int64_t rem;
  for (; k < q * q - (size_t)minus; k++)
    row[k] = v;
  if (!minus)
    return k;
  row[k++] = v - 1; /* q^2 v^2 - 1 = (q^2-1) v^2 + (v-1)^2 + 2v - 2 */
  rem = 2 * v - 2;
  while (rem > 0 && k < 16) {
    int64_t t = (int64_t)sqrt((double)rem);
    while (t * t > rem)
      t--;
    while ((t + 1) * (t + 1) <= rem)
      t++;
    row[k++] = t;
    rem -= t * t;
  }
  return rem == 0 ? k : 0; /* 0: no decomposition within 16 */
}

static void test_near_squares(void **state)
{
  (void)state;
  for (int impl = 0; impl < RD__IMPL_COUNT; impl++) {
    size_t rows_checked = 0;
    if (!impl_ok(impl))
      continue;
    for (size_t d = 0; d < 4; d++)
      for (size_t q = 1; q <= 3; q++)
        for (int minus = 0; minus <= 1; minus++)
          for (size_t n = q * q; n <= 16; n++)
            for (int trial = 0; trial < 80; trial++) {
              int below52 = trial % 2;
              int dt = dtypes[d];
              size_t esz = rd_dtype_size(dt), nr = 0;
              unsigned char x[16 * 8 * 8], out[8 * 8], ref[8];
              uint64_t left;
              memset(x, 0, sizeof x);
              /* 8 rows (one AVX-512 step); rows no decomposition fits
               * stay zero */
              for (int tries = 0; nr < 8 && tries < 64; tries++) {
                int64_t row[16] = { 0 };
                /* below52: m up to 2^26 (2^52 - 1 = m^2 - 1 the
                 * closest; m^2 = 2^52 takes the corrected path) */
                int64_t v = below52 ? (int64_t)(((uint64_t)1 << 26) / q -
                                                (tries ? next() % 4096 : 0))
                                    : (int64_t)((uint64_t)1 << 28) +
                                        (int64_t)(next() % ((uint64_t)1 << 28));
                size_t len = near_square_row(row, q, v, minus);
                if (len == 0 || len > n)
                  continue;
                for (size_t j = 0; j < n; j++)
                  put(dt, x + (nr * n + j) * esz, row[j]);
                nr++;
              }
              left = rd__rows_int_impl(impl, dt, 1, out, x, n, 8);
              for (size_t r = 0; r < 8; r++) {
                int rc = reference(dt, 1, x + r * n * esz, n, ref);
                if (rc != 0) {
                  assert_true(left >> r & 1);
                  continue;
                }
                assert_false(left >> r & 1);
                assert_memory_equal(out + r * esz, ref, esz);
                rows_checked++;
              }
            }
    assert_true(rows_checked > 10000);
  }
}

/* The comparison catches a wrong output (one flipped bit). */
static void test_negative_control(void **state)
{
  (void)state;
  assert_true(check_block(RD__IMPL_PORTABLE, RD_INT32, 1, 16, 8, 0, 0, 1) > 0);
}

/* Whole plans: rd_execute under each path (portable included) equals the
 * existing path row by row, with every overflow policy (rows beyond the
 * bound or not fitting go the general way inside reduce.c): the same
 * outputs, or the same first error and message. */
static void test_plans(void **state)
{
  static const int64_t shapes[][2] = {
    { 1000, 16 }, { 999, 7 }, { 301, 1 }, { 77, 13 }
  };
  (void)state;
  for (size_t d = 0; d < 4; d++)
    for (size_t s = 0; s < 4; s++)
      for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++)
        for (int pol = 0; pol <= RD_OVERFLOW_WRAP; pol++) {
          struct rd_params p;
          struct rd_plan pl;
          struct rd_error e0, e1;
          int64_t axes[1] = { 1 };
          int dt = dtypes[d], rc0 = 0;
          rd_params_init(&p);
          p.op = op;
          p.dtype = dt;
          p.rank = 2;
          p.shape = shapes[s];
          p.axes = axes;
          p.naxes = 1;
          p.overflow = pol;
          assert_int_equal(rd_plan_init(&pl, &p, NULL), 0);
          unsigned char *in = malloc(pl.in_bytes);
          unsigned char *o0 = malloc(pl.out_bytes);
          unsigned char *o1 = malloc(pl.out_bytes);
          size_t n = (size_t)shapes[s][1];
          assert_non_null(in);
          assert_non_null(o0);
          assert_non_null(o1);
          for (uint64_t i = 0; i < pl.in_count; i++)
            put(dt, in + i * pl.elem_size, pick(dt, s == 0 ? 1 : 30));
          for (uint64_t r = 0; r < pl.out_count && rc0 == 0; r++)
            rc0 = reference_pol(dt, op == RD_OP_L2, in + r * n * pl.elem_size,
                                n, o0 + r * pl.elem_size, pol, r, &e0);
          for (int impl = 0; impl < RD__IMPL_COUNT; impl++) {
            if (!impl_ok(impl))
              continue;
            assert_int_equal(rd__kernels_select(impl), 0);
            int rc1 = rd_execute(&pl, in, o1, &e1);
            assert_int_equal(rc1, rc0);
            if (rc0 == 0)
              assert_memory_equal(o0, o1, pl.out_bytes);
            else
              assert_string_equal(e0.msg, e1.msg);
          }
          free(in);
          free(o0);
          free(o1);
        }
  /* back to the widest path */
  for (int impl = RD__IMPL_COUNT; impl-- > 0;)
    if (rd__kernels_select(impl) == 0)
      break;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_portable),
    cmocka_unit_test(test_avx2),
    cmocka_unit_test(test_avx512),
    cmocka_unit_test(test_bounds),
    cmocka_unit_test(test_near_squares),
    cmocka_unit_test(test_negative_control),
    cmocka_unit_test(test_plans),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
