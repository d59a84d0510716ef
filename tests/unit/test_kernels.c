/* test_kernels.c - the SIMD kernels give the same bits as the portable ones.
 *
 * Every entry point of every kernel (run at each lane position and every
 * split point, flush, cols, rows, rd__rows_out) is run on each SIMD
 * implementation (AVX2, then AVX-512: each comparison test runs once per
 * path) and on the portable one with odd lengths and misaligned starts,
 * over data mixing ordinary values with zeros, subnormals, infinities, NaNs
 * and (float64) values in each of Blue's ranges, and the results are
 * compared bit for bit (NaN accumulators only need to be NaN in both:
 * payloads depend on the hardware's operand order, and outputs canonicalise
 * them).  Whole plans are then run under each pair of implementations and
 * must give identical bytes.  Where the CPU or build has no AVX2 path,
 * portable is compared with portable (split points, rows, cols still
 * checked); without AVX-512 its tests are skipped with a note.  The
 * operator families of ops.c are checked the same way at every split
 * point, and whole plans of every operator run under each implementation.
 * test_select checks REDUCED_KERNELS and rd__kernels_select().
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "f16.h"
#include "kernels.h"
#include "kernels_impl.h"
#include "ops.h"
#include "reduce.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

static const struct {
  int dtype, id;
  size_t esz;
} types[] = {
  { RD_FLOAT32, RD__K_F32, 4 },   { RD_FLOAT16, RD__K_F16, 2 },
  { RD_BFLOAT16, RD__K_BF16, 2 }, { RD_FLOAT64, RD__K_F64, 8 },
  { RD_INT32, RD__K_I32, 4 },     { RD_UINT32, RD__K_U32, 4 },
  { RD_INT64, RD__K_I64, 8 },     { RD_UINT64, RD__K_U64, 8 },
};
#define NTYPES (sizeof types / sizeof types[0])

/* One element of `dtype`; `rare` in 0..1000 is the per-mille chance of a
 * special value (0: ordinary values only, so fast paths are taken). */
static void gen(int dtype, unsigned char *p, unsigned rare)
{
  uint64_t r = next();
  int special = (unsigned)(r % 1000) < rare;
  unsigned kind = (unsigned)(r >> 10) % 8;
  double m = (double)(r >> 20 & 0xfffff) * 0x1p-20 + 0.5; /* [0.5, 1.5) */
  if (r >> 60 & 1)
    m = -m;
  switch (dtype) {
  case RD_FLOAT32: {
    static const uint32_t sp[8] = { 0,           0x80000000u, 1,
                                    0x7fffff,    0x7f800000u, 0x7fc00001u,
                                    0x7f7fffffu, 0xff800000u };
    float f = (float)(m * 100.0);
    if (special)
      memcpy(&f, &sp[kind], 4);
    memcpy(p, &f, 4);
    break;
  }
  case RD_FLOAT64: {
    static const double sp[8] = { 0.0,     -0.0,    0x1p-1000, 0x1p-481,
                                  0x1p480, 0x1p900, INFINITY,  NAN };
    /* Full 53-bit significands, so squares round (an FMA would show). */
    double d = ((double)(next() >> 11) * 0x1p-53 + 0.5) * (m < 0 ? -100 : 100);
    if (special)
      d = sp[kind] * (kind < 6 ? fabs(m) : 1.0);
    if (special && kind == 1)
      d = -0.0;
    memcpy(p, &d, 8);
    break;
  }
  case RD_FLOAT16:
  case RD_BFLOAT16: {
    /* Special: any bit pattern (subnormals, inf, NaN, signs). */
    uint16_t h = special ? (uint16_t)(r >> 32)
                         : (uint16_t)(dtype == RD_FLOAT16
                                        ? 0x3c00 + (r >> 32) % 0x800
                                        : 0x3f80 + (r >> 32) % 0x100);
    memcpy(p, &h, 2);
    break;
  }
  case RD_INT32:
  case RD_UINT32: {
    uint32_t u = (uint32_t)(r >> 32);
    if (special)
      u = kind < 4 ? 0x80000000u : 0xffffffffu;
    memcpy(p, &u, 4);
    break;
  }
  default: {
    uint64_t u = next();
    if (special) /* the largest squares: 2^126, (2^64 - 1)^2 */
      u = kind < 4 ? (uint64_t)1 << 63 : UINT64_MAX;
    memcpy(p, &u, 8);
    break;
  }
  }
}

static void fill(int dtype, size_t esz, unsigned char *p, size_t n,
                 unsigned rare)
{
  for (size_t i = 0; i < n; i++)
    gen(dtype, p + i * esz, rare);
}

/* Doubles equal bit for bit, or both NaN. */
static int same_d(const double *a, const double *b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], 8) != 0 && !(isnan(a[i]) && isnan(b[i])))
      return 0;
  return 1;
}

static int same_lanes(enum rd__acc_class cls, const union rd__lanes *a,
                      const union rd__lanes *b)
{
  if (cls == RD__ACC_F64)
    return same_d(a->d, b->d, RD__LANES);
  if (cls == RD__ACC_BLUE)
    return same_d(a->b.bs, b->b.bs, 7 * RD__LANES);
  return memcmp(&a->w, &b->w, sizeof a->w) == 0;
}

static int same_accs(enum rd__acc_class cls, const void *a, const void *b,
                     size_t count, size_t accsz)
{
  if (cls == RD__ACC_F64 || cls == RD__ACC_BLUE)
    return same_d(a, b, count * accsz / 8);
  return memcmp(a, b, count * accsz) == 0;
}

typedef unsigned __int128 u128_t;

static const size_t lens[] = { 0,  1,  2,  3,  5,  7,  8,  9,   15,  16,
                               17, 23, 31, 32, 33, 47, 64, 100, 257, 1001 };
#define NLENS (sizeof lens / sizeof lens[0])

/* The SIMD implementation a comparison test checks against portable: its
 * cmocka prestate (each such test runs once for AVX2, once for AVX-512). */
static const int impl_avx2 = RD__IMPL_AVX2, impl_avx512 = RD__IMPL_AVX512;

static int simd_impl(void **state)
{
  return *(const int *)*state;
}

/* Skips an AVX-512 test, with a note, where the CPU or build lacks it (the
 * AVX2 tests compare portable with portable instead, see below). */
static void skip_absent(int impl)
{
  if (impl == RD__IMPL_AVX512 && !rd__kernel_impl(RD__K_F32, impl)) {
    printf("test_kernels: no AVX-512 implementation on this build/CPU; "
           "skipping its comparisons\n");
    skip();
  }
}

/* The SIMD kernel, or where this build or CPU has none, the portable one
 * again: the comparisons then check portable against portable (which still
 * exercises every split point) instead of being skipped. */
static const struct rd__kernel *simd_or_portable(int id, int impl)
{
  const struct rd__kernel *k = rd__kernel_impl(id, impl);
  if (!k) {
    static int said;
    if (!said++)
      printf("test_kernels: no SIMD implementation on this build/CPU; "
             "comparing portable with portable\n");
    k = rd__kernel_impl(id, RD__IMPL_PORTABLE);
  }
  return k;
}

#define BUF (1001 * 8 * 12 + 64)

/* run(): every start lane, every split point, misaligned starts. */
static void test_run_flush(void **state)
{
  static unsigned char buf[BUF];
  const int impl = simd_impl(state);
  skip_absent(impl);
  for (size_t t = 0; t < NTYPES; t++) {
    const struct rd__kernel *ks = simd_or_portable(types[t].id, impl);
    const struct rd__kernel *kp = rd__kernel_impl(types[t].id,
                                                  RD__IMPL_PORTABLE);
    size_t esz = types[t].esz;
    for (size_t li = 0; li < NLENS; li++)
      for (unsigned rare = 0; rare <= 200; rare += 100) {
        size_t n = lens[li], off = (li + rare) % 8;
        unsigned char *x = buf + off;
        uint64_t pos = (uint64_t)(li * 7 + rare) % 40;
        union rd__lanes base, lp, ls;
        fill(types[t].dtype, esz, buf, n + 8, 0);
        /* A non-empty starting state: both impls from the same prefix. */
        memset(&base, 0, sizeof base);
        kp->run(&base, buf, (size_t)(pos % RD__LANES) + 3, 0);
        fill(types[t].dtype, esz, x, n, rare);
        for (size_t m = 0; m <= n; m++) {
          lp = base;
          ls = base;
          kp->run(&lp, x, n, pos);
          ks->run(&ls, x, m, pos);
          ks->run(&ls, x + m * esz, n - m, pos + m);
          if (!same_lanes(kp->acc_class, &lp, &ls))
            fail_msg("run: dtype %d n %zu split %zu pos %" PRIu64
                     " off %zu rare %u",
                     types[t].dtype, n, m, pos, off, rare);
          if (m % 5 == 0 || m == n) {
            unsigned char ap[64] = { 0 }, as[64] = { 0 };
            kp->flush(&lp, ap);
            ks->flush(&ls, as);
            assert_true(same_accs(kp->acc_class, ap, as, 1, kp->acc_size));
          }
        }
      }
  }
}

/* cols() and rows() over several rows, from a non-empty accumulator. */
static void test_cols_rows(void **state)
{
  static unsigned char buf[BUF];
  static unsigned char ap[1001 * 64], as[1001 * 64];
  static const size_t rowcounts[] = { 1, 2, 3, 4, 5, 7, 8, 9, 16, 17 };
  const int impl = simd_impl(state);
  skip_absent(impl);
  for (size_t t = 0; t < NTYPES; t++) {
    const struct rd__kernel *ks = simd_or_portable(types[t].id, impl);
    const struct rd__kernel *kp = rd__kernel_impl(types[t].id,
                                                  RD__IMPL_PORTABLE);
    size_t esz = types[t].esz;
    for (size_t li = 0; li < NLENS; li++)
      for (size_t ri = 0; ri < sizeof rowcounts / sizeof rowcounts[0]; ri++)
        for (unsigned rare = 0; rare <= 200; rare += 200) {
          size_t n = lens[li], nr = rowcounts[ri], off = (li + ri) % 8;
          unsigned char *x = buf + off;
          if (n * nr > 1001 * 12 || n == 0)
            continue;
          /* cols: n accumulators, pre-filled by one portable row. */
          memset(ap, 0, n * kp->acc_size);
          fill(types[t].dtype, esz, x, n, rare);
          kp->cols(ap, x, n, 1);
          memcpy(as, ap, n * kp->acc_size);
          fill(types[t].dtype, esz, x, n * nr, rare);
          kp->cols(ap, x, n, nr);
          ks->cols(as, x, n, nr);
          if (!same_accs(kp->acc_class, ap, as, n, kp->acc_size))
            fail_msg("cols: dtype %d n %zu rows %zu", types[t].dtype, n, nr);
          /* rows: nr accumulators. */
          memset(ap, 0, nr * kp->acc_size);
          kp->cols(ap, x, nr, 1);
          memcpy(as, ap, nr * kp->acc_size);
          kp->rows(ap, x, n, nr);
          ks->rows(as, x, n, nr);
          if (!same_accs(kp->acc_class, ap, as, nr, kp->acc_size))
            fail_msg("rows: dtype %d n %zu rows %zu", types[t].dtype, n, nr);
          /* rd__rows_out: finished outputs (NaN canonical: bytes equal). */
          if (kp->acc_class == RD__ACC_F64 || kp->acc_class == RD__ACC_BLUE)
            for (int l2 = 0; l2 <= 1; l2++) {
              unsigned char op[17 * 8], os[17 * 8];
              rd__rows_out(kp, types[t].dtype, op, x, n, nr, l2);
              rd__rows_out(ks, types[t].dtype, os, x, n, nr, l2);
              if (memcmp(op, os, nr * esz) != 0)
                fail_msg("rows_out: dtype %d n %zu rows %zu l2 %d",
                         types[t].dtype, n, nr, l2);
            }
        }
  }
}

/* cols() on column counts around the SIMD paths' tile and strip edges
 * (64-column tiles, 512- and 1024-column strips, the switch from tiles to
 * whole rows at 16 KiB rows) and row counts around their 4-, 8-, 16- and
 * 32-row groups, from a non-empty accumulator and a misaligned start: the
 * same bits as the portable cols().  Negative control: one input element
 * changed must change the accumulators (the comparison can fail). */
static void test_cols_shapes(void **state)
{
  static const size_t ncols[] = { 1,    63,   64,   65,   511,  512,
                                  513,  1023, 1024, 1025, 2047, 2048,
                                  2049, 4096, 4097, 8193 };
  static const size_t nrows[] = { 1, 3, 4, 5, 8, 9, 17, 33 };
  enum { MAXC = 8193, MAXR = 33 };
  static unsigned char buf[MAXC * MAXR * 8 + 64];
  static unsigned char ap[MAXC * 64], as[MAXC * 64], a0[MAXC * 64];
  /* The squares kernels, then ReduceSum and ReduceL1 of the double class
   * (the same AVX-512 cols() template in its other modes). */
  static const int ops[] = { 0, RD_OP_SUM, RD_OP_L1 };
  const int impl = simd_impl(state);
  skip_absent(impl);
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
    for (size_t t = 0; t < NTYPES; t++) {
      const struct rd__kernel *ks, *kp;
      size_t esz = types[t].esz, asz;
      if (!ops[oi]) {
        ks = simd_or_portable(types[t].id, impl);
        kp = rd__kernel_impl(types[t].id, RD__IMPL_PORTABLE);
      } else {
        int id = types[t].id <= RD__K_BF16
                   ? rd__op_kernel_id(ops[oi], types[t].dtype, 0)
                   : -1;
        if (id < 0)
          continue;
        kp = id >= RD__K_OPS_BASE ? rd__op_kernel_impl(id, RD__IMPL_PORTABLE)
                                  : rd__kernel_impl(id, RD__IMPL_PORTABLE);
        ks = id >= RD__K_OPS_BASE ? rd__op_kernel_impl(id, impl)
                                  : rd__kernel_impl(id, impl);
        if (!ks)
          ks = kp;
        assert_true(kp->acc_class == RD__ACC_F64 || !kp->init);
      }
      asz = kp->acc_size;
      for (size_t ci = 0; ci < sizeof ncols / sizeof ncols[0]; ci++)
        for (size_t ri = 0; ri < sizeof nrows / sizeof nrows[0]; ri++) {
          size_t n = ncols[ci], nr = nrows[ri], off = (ci + ri) % 8;
          unsigned rare = (ci + ri) % 2 ? 50 : 0;
          unsigned char *x = buf + off;
          fill(types[t].dtype, esz, x, n, rare);
          memset(a0, 0, n * asz);
          kp->cols(a0, x, n, 1);
          fill(types[t].dtype, esz, x, n * nr, rare);
          memcpy(ap, a0, n * asz);
          memcpy(as, a0, n * asz);
          kp->cols(ap, x, n, nr);
          ks->cols(as, x, n, nr);
          if (!same_accs(kp->acc_class, ap, as, n, asz))
            fail_msg("cols shapes: op %d dtype %d impl %d n %zu rows %zu",
                     ops[oi], types[t].dtype, impl, n, nr);
          if (rare == 0 && ri >= 6) {
            /* The last column of the middle row set to another value (no
             * specials, so no NaN or inf column hides the change). */
            unsigned char *e = x + ((nr / 2) * n + n - 1) * esz;
            memcpy(as, a0, n * asz);
            memset(e, 0, esz);
            e[esz - 1] = 0x3c; /* a normal, non-zero value of every type */
            e[0] = 0x11;
            ks->cols(as, x, n, nr);
            assert_false(same_accs(kp->acc_class, ap, as, n, asz));
          }
        }
    }
}

/* One int64/uint64 element of test_cols_i64_small: magnitudes below
 * 2^32 (the AVX-512 columns' one-product path), but in one element of 24
 * a magnitude at or just past 2^32 (or the largest), either sign. */
static uint64_t i64_small_elem(int is_signed)
{
  static const uint64_t edge[] = { 0xffffffffu, (uint64_t)1 << 32,
                                   ((uint64_t)1 << 33) - 1, UINT64_MAX };
  uint64_t r = next();
  uint64_t m = r % 24 == 0 ? edge[(r >> 8) % 4] : (r >> 16) & 0xffffffffu;
  if (is_signed && m == UINT64_MAX)
    m = (uint64_t)1 << 63; /* INT64_MIN */
  else if (is_signed && (r >> 60 & 1))
    m = (uint64_t)0 - m;
  return m;
}

/* int64/uint64 cols() of the SIMD implementation against the portable
 * one, on magnitudes that mostly fit 32 bits: the AVX-512 form takes one
 * product per element for a group of four rows whose magnitudes all do
 * (kernels_avx512.c, sq8_small()) and three otherwise.  Negative control:
 * the data has groups of four rows by eight columns of both kinds. */
static void test_cols_i64_small(void **state)
{
  enum { MAXN = 64, MAXR = 17 };
  static uint64_t x[MAXN * MAXR];
  static unsigned char ap[MAXN * 64], as[MAXN * 64];
  static const size_t widths[] = { 8, 13, 64 };
  static const size_t rowcounts[] = { 1, 3, 4, 5, 8, 9, 17 };
  const int impl = simd_impl(state);
  size_t small = 0, mixed = 0;
  skip_absent(impl);
  for (size_t t = 6; t <= 7; t++) {
    const struct rd__kernel *ks = simd_or_portable(types[t].id, impl);
    const struct rd__kernel *kp = rd__kernel_impl(types[t].id,
                                                  RD__IMPL_PORTABLE);
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
      for (size_t ri = 0; ri < sizeof rowcounts / sizeof rowcounts[0]; ri++) {
        size_t n = widths[wi], nr = rowcounts[ri];
        for (size_t i = 0; i < n * nr; i++)
          x[i] = i64_small_elem(types[t].dtype == RD_INT64);
        for (size_t g = 0; g + 4 <= nr; g += 4)
          for (size_t b = 0; b + 8 <= n; b += 8) {
            int big = 0;
            for (size_t q = g; q < g + 4; q++)
              for (size_t j = b; j < b + 8; j++) {
                uint64_t v = x[q * n + j];
                if (types[t].dtype == RD_INT64 && (v >> 63))
                  v = (uint64_t)0 - v;
                big |= v > 0xffffffffu;
              }
            if (big)
              mixed++;
            else
              small++;
          }
        memset(ap, 0, n * kp->acc_size);
        memset(as, 0, n * kp->acc_size);
        kp->cols(ap, (const unsigned char *)x, n, nr);
        ks->cols(as, (const unsigned char *)x, n, nr);
        if (!same_accs(kp->acc_class, ap, as, n, kp->acc_size))
          fail_msg("cols of small magnitudes: %s n %zu rows %zu",
                   rd_dtype_name(types[t].dtype), n, nr);
      }
  }
  assert_true(small > 0 && mixed > 0);
}

/* 32-bit cols() and rows() at the extremes, against closed forms: every element
 * INT32_MIN (square 2^62) or UINT32_MAX (square 2^64 - 2^33 + 1), so the
 * per-column sums exceed 2^64 and every carry path of the blocked 64-bit
 * partial sums is exercised (rows() too); every implementation. */
static void test_cols_int32_extremes(void **state)
{
  static uint32_t x[130 * 1025];
  static u128_t acc[1025];
  static u128_t racc[130];
  /* Across the groups of 4 rows of the AVX-512 cols() and the blocks of 8
   * and 16 rows of the others; widths across the 1024-column strips. */
  static const size_t rowcounts[] = { 1,  7,  8,  9,  16,  17,
                                      63, 64, 65, 67, 128, 130 };
  static const size_t widths[] = { 1, 7, 13, 19, 25, 31, 37, 1025 };
  (void)state;
  for (int impl = 0; impl < RD__IMPL_COUNT; impl++)
    for (int u = 0; u <= 1; u++) {
      const struct rd__kernel *k = rd__kernel_impl(u ? RD__K_U32 : RD__K_I32,
                                                   impl);
      u128_t sq = u ? (((u128_t)1 << 64) - ((u128_t)1 << 33) + 1)
                    : (u128_t)1 << 62;
      if (!k)
        continue;
      for (size_t ri = 0; ri < sizeof rowcounts / sizeof rowcounts[0]; ri++)
        for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
          size_t nr = rowcounts[ri], n = widths[wi];
          for (size_t i = 0; i < n * nr; i++)
            x[i] = u ? 0xffffffffu : 0x80000000u;
          for (size_t j = 0; j < n; j++)
            acc[j] = (u128_t)j; /* a non-zero start */
          k->cols(acc, (const unsigned char *)x, n, nr);
          for (size_t j = 0; j < n; j++)
            if (acc[j] != (u128_t)j + sq * nr)
              fail_msg("cols extremes: impl %d u %d n %zu rows %zu col %zu",
                       impl, u, n, nr, j);
          /* rows(): nr runs of n into nr accumulators (nr <= 130) */
          for (size_t r = 0; r < nr; r++)
            racc[r] = (u128_t)r;
          k->rows(racc, (const unsigned char *)x, n, nr);
          for (size_t r = 0; r < nr; r++)
            if (racc[r] != (u128_t)r + sq * n)
              fail_msg("rows extremes: impl %d u %d n %zu rows %zu row %zu",
                       impl, u, n, nr, r);
        }
    }
}

/* rd__rows_out agrees with rows() into zeroed accumulators + value. */
static void test_rows_out_definition(void **state)
{
  static unsigned char buf[200 * 40 * 8];
  (void)state;
  for (size_t t = 0; t < 4; t++) {
    const struct rd__kernel *k = rd__kernel_impl(types[t].id,
                                                 RD__IMPL_PORTABLE);
    size_t esz = types[t].esz;
    for (size_t n = 1; n <= 40; n += 3) {
      double acc[200 * 8];
      unsigned char out[200 * 8];
      fill(types[t].dtype, esz, buf, n * 200, 100);
      memset(acc, 0, sizeof acc);
      k->rows(acc, buf, n, 200);
      rd__rows_out(k, types[t].dtype, out, buf, n, 200, 1);
      for (size_t r = 0; r < 200; r++) {
        double v = rd__acc_value(k->acc_class,
                                 (unsigned char *)acc + r * k->acc_size, 1);
        unsigned char e[8];
        rd__float_store(types[t].dtype, v, e);
        assert_memory_equal(out + r * esz, e, esz);
      }
    }
  }
}

/* Whole plans: outputs under both implementations, every path of the
 * engine (execute, parts, streams in odd chunks). */
static void run_plan(const struct rd_plan *pl, const void *in,
                     unsigned char *o1, unsigned char *o2, unsigned char *o3)
{
  struct rd_error err;
  struct rd_exec *ex;
  struct rd_stream *s;
  const unsigned char *p = in;
  uint64_t done = 0, step = 1;
  assert_int_equal(rd_execute(pl, in, o1, &err), 0);
  assert_int_equal(rd_exec_create(pl, &ex), 0);
  for (size_t i = pl->nparts; i-- > 0;)
    assert_int_equal(rd_exec_part(ex, i, in), 0);
  assert_int_equal(rd_exec_finish(ex, o2, &err), 0);
  rd_exec_destroy(ex);
  assert_int_equal(rd_stream_create(pl, &s), 0);
  while (done < pl->in_bytes) {
    uint64_t k = pl->in_bytes - done < step ? pl->in_bytes - done : step;
    assert_int_equal(rd_stream_feed(s, p + done, (size_t)k, &err), 0);
    done += k;
    step = step * 3 % 1013 + 1;
  }
  assert_int_equal(rd_stream_finish(s, o3, &err), 0);
  rd_stream_destroy(s);
}

static void test_plans_both_impls(void **state)
{
  static const struct {
    size_t rank;
    int64_t shape[3];
    size_t naxes;
    int64_t axes[2];
  } shapes[] = {
    { 1, { 100003 }, 0, { 0 } },       { 2, { 513, 37 }, 1, { 1 } },
    { 2, { 37, 513 }, 1, { 0 } },      { 3, { 9, 130, 17 }, 1, { 1 } },
    { 3, { 65, 9, 33 }, 2, { 0, 2 } }, { 2, { 70001, 16 }, 1, { 1 } },
    { 2, { 30001, 5 }, 1, { 1 } },     { 2, { 2, 600000 }, 1, { 0 } },
    { 3, { 3, 5, 7 }, 0, { 0 } },
  };
  size_t cap = 1300000 * 8;
  unsigned char *in = malloc(cap), *out[6];
  const int impl = simd_impl(state);
  int other;
  skip_absent(impl);
  other = rd__kernel_impl(RD__K_F32, impl) ? impl : RD__IMPL_PORTABLE;
  assert_non_null(in);
  for (int i = 0; i < 6; i++)
    assert_non_null(out[i] = malloc(600000 * 8));
  for (size_t t = 0; t < NTYPES; t++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++) {
        struct rd_params p;
        struct rd_plan pl;
        struct rd_error err;
        rd_params_init(&p);
        p.op = op;
        p.dtype = types[t].dtype;
        p.rank = shapes[si].rank;
        p.shape = shapes[si].shape;
        p.naxes = shapes[si].naxes;
        p.axes = shapes[si].axes;
        p.overflow = RD_OVERFLOW_WRAP;
        assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
        fill(p.dtype, types[t].esz, in, pl.in_count, si % 2 ? 5 : 0);
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        run_plan(&pl, in, out[0], out[1], out[2]);
        assert_int_equal(rd__kernels_select(other), 0);
        run_plan(&pl, in, out[3], out[4], out[5]);
        for (int i = 1; i < 6; i++)
          if (memcmp(out[0], out[i], (size_t)pl.out_bytes) != 0)
            fail_msg("plan: dtype %s shape %zu op %d: result %d differs",
                     rd_dtype_name(p.dtype), si, op, i);
      }
  for (int i = 0; i < 6; i++)
    free(out[i]);
  free(in);
}

/* ------------------------------------------------------------------ */
/* Short whole rows written as outputs (rd__rows_out, n <= 16)         */
/* ------------------------------------------------------------------ */

/* The definition of rd__rows_out: portable rows() into zeroed
 * accumulators, rd__acc_value(), rd__float_store(). */
static void rows_out_expected(size_t t, unsigned char *e,
                              const unsigned char *x, size_t n, size_t nrows,
                              int l2)
{
  const struct rd__kernel *k = rd__kernel_impl(types[t].id, RD__IMPL_PORTABLE);
  unsigned char *acc = calloc(nrows ? nrows : 1, k->acc_size);
  assert_non_null(acc);
  k->rows(acc, x, n, nrows);
  for (size_t r = 0; r < nrows; r++)
    rd__float_store(types[t].dtype,
                    rd__acc_value(k->acc_class, acc + r * k->acc_size, l2),
                    e + r * types[t].esz);
  free(acc);
}

/* Both implementations against the definition, for every n <= 17 and row
 * counts around the four-row groups, with the input and the output each at
 * the very end of an exact-size heap block (a load past the input or a
 * store past the output is caught by the sanitizer builds), at several
 * densities of special values (float64: rows in each of Blue's ranges, so
 * groups of four with one non-mid row take the scalar path). */
static void test_short_rows_out(void **state)
{
  const int impl = simd_impl(state);
  skip_absent(impl);
  static const size_t rowcounts[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 63, 257 };
  static const unsigned rares[] = { 0, 20, 300 };
  for (size_t t = 0; t < 4; t++) {
    const struct rd__kernel *ks = simd_or_portable(types[t].id, impl);
    const struct rd__kernel *kp = rd__kernel_impl(types[t].id,
                                                  RD__IMPL_PORTABLE);
    size_t esz = types[t].esz;
    for (size_t n = 1; n <= 17; n++)
      for (size_t ri = 0; ri < sizeof rowcounts / sizeof rowcounts[0]; ri++)
        for (size_t qi = 0; qi < sizeof rares / sizeof rares[0]; qi++)
          for (int l2 = 0; l2 <= 1; l2++) {
            size_t nr = rowcounts[ri], ib = n * nr * esz, ob = nr * esz;
            unsigned char *x = malloc(ib), *e = malloc(ob);
            unsigned char *op = malloc(ob), *os = malloc(ob);
            assert_true(x && e && op && os);
            fill(types[t].dtype, esz, x, n * nr, rares[qi]);
            rows_out_expected(t, e, x, n, nr, l2);
            rd__rows_out(kp, types[t].dtype, op, x, n, nr, l2);
            rd__rows_out(ks, types[t].dtype, os, x, n, nr, l2);
            if (memcmp(e, op, ob) != 0 || memcmp(e, os, ob) != 0)
              fail_msg("short rows_out: dtype %d n %zu rows %zu rare %u "
                       "l2 %d: portable %s, simd %s",
                       types[t].dtype, n, nr, rares[qi], l2,
                       memcmp(e, op, ob) ? "differs" : "ok",
                       memcmp(e, os, ob) ? "differs" : "ok");
            free(x);
            free(e);
            free(op);
            free(os);
          }
  }
}

/* Long float32 outputs (the streaming-store path of the SIMD rows_out):
 * aligned and misaligned output, a row count that is not a multiple of
 * four, and row lengths 16 and 5. */
static void test_short_rows_out_long(void **state)
{
  const int impl = simd_impl(state);
  skip_absent(impl);
  const size_t nr = 40003;
  static const size_t rlens[] = { 16, 5 };
  const struct rd__kernel *ks = simd_or_portable(RD__K_F32, impl);
  for (size_t li = 0; li < 2; li++) {
    size_t n = rlens[li];
    unsigned char *x = malloc(n * nr * 4), *e = malloc(nr * 4);
    unsigned char *o = malloc(nr * 4 + 4);
    assert_true(x && e && o);
    fill(RD_FLOAT32, 4, x, n * nr, 3);
    for (int l2 = 0; l2 <= 1; l2++) {
      rows_out_expected(0, e, x, n, nr, l2);
      for (size_t off = 0; off <= 4; off += 4) {
        memset(o, 0xa5, nr * 4 + 4);
        rd__rows_out(ks, RD_FLOAT32, o + off, x, n, nr, l2);
        if (memcmp(e, o + off, nr * 4) != 0)
          fail_msg("long rows_out: n %zu l2 %d offset %zu", n, l2, off);
        if (off == 0)
          assert_int_equal(o[nr * 4], 0xa5); /* nothing written past */
        else
          assert_int_equal(o[0], 0xa5);
      }
    }
    free(x);
    free(e);
    free(o);
  }
}

/* Whole plans of short rows [R, n] of every dtype through every engine
 * path under both implementations: the parts cut the rows at part
 * boundaries, so the four-row groups start at arbitrary rows. */
static void test_short_rows_plans(void **state)
{
  const int impl = simd_impl(state);
  skip_absent(impl);
  static const int64_t shapes[][2] = {
    { 300007, 16 }, { 65539, 3 }, { 40001, 9 }, { 7, 16 }, { 1, 1 }
  };
  int other = simd_or_portable(RD__K_F32, impl) ==
                  rd__kernel_impl(RD__K_F32, RD__IMPL_PORTABLE)
                ? RD__IMPL_PORTABLE
                : impl;
  unsigned char *in = malloc(300007 * 16 * 8), *out[6];
  assert_non_null(in);
  for (int i = 0; i < 6; i++)
    assert_non_null(out[i] = malloc(300007 * 8));
  for (size_t t = 0; t < NTYPES; t++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
      for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++) {
        int64_t axes[1] = { 1 };
        struct rd_params p;
        struct rd_plan pl;
        struct rd_error err;
        rd_params_init(&p);
        p.op = op;
        p.dtype = types[t].dtype;
        p.rank = 2;
        p.shape = shapes[si];
        p.naxes = 1;
        p.axes = axes;
        p.overflow = RD_OVERFLOW_WRAP; /* integers: every output written */
        assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
        fill(p.dtype, types[t].esz, in, pl.in_count, si % 2 ? 2 : 0);
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        run_plan(&pl, in, out[0], out[1], out[2]);
        assert_int_equal(rd__kernels_select(other), 0);
        run_plan(&pl, in, out[3], out[4], out[5]);
        for (int i = 1; i < 6; i++)
          if (memcmp(out[0], out[i], (size_t)pl.out_bytes) != 0)
            fail_msg("short rows plan: dtype %s shape %zu op %d: result %d "
                     "differs",
                     rd_dtype_name(p.dtype), si, op, i);
      }
  for (int i = 0; i < 6; i++)
    free(out[i]);
  free(in);
}

/* float16/bfloat16 outputs of short rows are rounded in vectors (round to
 * odd, then to nearest even): every 16-bit input pattern as a row of one
 * (its square rounds, ties, overflows and underflows included), and random
 * rows of 2, 3 and 16, against the portable path. */
static void test_short_rows_16bit_all(void **state)
{
  const int impl = simd_impl(state);
  skip_absent(impl);
  enum { NP = 65536 };
  uint16_t *x = malloc(NP * 16 * 2);
  unsigned char *op = malloc(NP * 2), *os = malloc(NP * 2);
  static const size_t rl[] = { 1, 2, 3, 16 };
  assert_true(x && op && os);
  for (size_t t = 1; t <= 2; t++) {
    const struct rd__kernel *ks = simd_or_portable(types[t].id, impl);
    const struct rd__kernel *kp = rd__kernel_impl(types[t].id,
                                                  RD__IMPL_PORTABLE);
    for (size_t li = 0; li < 4; li++) {
      size_t n = rl[li];
      for (size_t i = 0; i < NP * n; i++)
        x[i] = n == 1 ? (uint16_t)i : (uint16_t)(next() >> 48);
      for (int l2 = 0; l2 <= 1; l2++) {
        rd__rows_out(kp, types[t].dtype, op, (const unsigned char *)x, n, NP,
                     l2);
        rd__rows_out(ks, types[t].dtype, os, (const unsigned char *)x, n, NP,
                     l2);
        for (size_t r = 0; r < NP; r++)
          if (memcmp(op + 2 * r, os + 2 * r, 2) != 0)
            fail_msg("16-bit rows_out: dtype %d n %zu l2 %d row %zu "
                     "(first 0x%04x): portable %02x%02x simd %02x%02x",
                     types[t].dtype, n, l2, r, x[r * n], op[2 * r + 1],
                     op[2 * r], os[2 * r + 1], os[2 * r]);
      }
    }
  }
  free(x);
  free(op);
  free(os);
}

/* Integer short rows are finalised in the parts: with policy "error" the
 * first overflowing output (not the first part's, nor a later one) is
 * reported by every engine path, and the outputs before it are written. */
static void test_short_rows_int_error(void **state)
{
  enum { R = 300000, N = 16 };
  int32_t *in = malloc((size_t)R * N * 4), *out = malloc((size_t)R * 4);
  int32_t *ref = malloc((size_t)R * 4);
  (void)state;
  assert_true(in && out && ref);
  for (size_t i = 0; i < (size_t)R * N; i++)
    in[i] = (int32_t)(next() % 2001) - 1000;
  /* Rows 200001 and 250000 overflow int32 for SumSquare (and L2 for the
   * second): 16 * 2^62 > 2^31. */
  for (size_t j = 0; j < N; j++) {
    in[200001u * N + j] = 70000;
    in[250000u * N + j] = INT32_MIN;
  }
  for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++) {
    int64_t shape[2] = { R, N }, axes[1] = { 1 };
    uint64_t bad = op == RD_OP_L2 ? 250000 : 200001;
    struct rd_params p;
    struct rd_plan pl;
    struct rd_error err;
    char want[64];
    rd_params_init(&p);
    p.op = op;
    p.dtype = RD_INT32;
    p.rank = 2;
    p.shape = shape;
    p.naxes = 1;
    p.axes = axes;
    p.overflow = RD_OVERFLOW_SATURATE;
    assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
    assert_true(pl.nparts > 1);
    assert_int_equal(rd_execute(&pl, in, ref, &err), 0);
    assert_int_equal(ref[bad], INT32_MAX);
    p.overflow = RD_OVERFLOW_ERROR;
    assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
    snprintf(want, sizeof want, "output[%" PRIu64 "] = ", bad);
    for (int path = 0; path < 3; path++) {
      int rc;
      memset(out, 0, (size_t)R * 4);
      if (path == 0) {
        rc = rd_execute(&pl, in, out, &err);
      } else if (path == 1) {
        struct rd_exec *ex;
        assert_int_equal(rd_exec_create(&pl, &ex), 0);
        for (size_t i = pl.nparts; i-- > 0;)
          assert_int_equal(rd_exec_part(ex, i, in), 0);
        rc = rd_exec_finish(ex, out, &err);
        rd_exec_destroy(ex);
      } else {
        struct rd_stream *st;
        const unsigned char *b = (const unsigned char *)in;
        assert_int_equal(rd_stream_create(&pl, &st), 0);
        for (uint64_t d = 0; d < pl.in_bytes; d += 4099)
          assert_int_equal(rd_stream_feed(st, b + d,
                                          (size_t)(pl.in_bytes - d < 4099
                                                     ? pl.in_bytes - d
                                                     : 4099),
                                          &err),
                           0);
        rc = rd_stream_finish(st, out, &err);
        rd_stream_destroy(st);
      }
      assert_int_equal(rc, RD_E_OVERFLOW);
      assert_int_equal(err.code, RD_E_OVERFLOW);
      if (strncmp(err.msg, want, strlen(want)) != 0)
        fail_msg("op %d path %d: message '%s', want '%s...'", op, path, err.msg,
                 want);
      assert_memory_equal(out, ref, (size_t)bad * 4);
    }
  }
  free(in);
  free(out);
  free(ref);
}

/* ------------------------------------------------------------------ */
/* The operator families: split points, rows, cols, every op          */
/* ------------------------------------------------------------------ */

static void gen_any(int dtype, size_t esz, unsigned char *p, uint64_t n)
{
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = next();
    unsigned char *e = p + i * esz;
    int ordinary = (r & 3) != 0;
    double v = (double)((int64_t)(r >> 8) % 9 - 4) * ((r >> 20) & 1 ? 0.75 : 1);
    switch (dtype) {
    case RD_BOOL: *e = (unsigned char)(r >> 5 & 1); break;
    case RD_FLOAT32: {
      float f = (float)v;
      if (ordinary)
        memcpy(e, &f, 4);
      else
        memcpy(e, &r, 4);
      break;
    }
    case RD_FLOAT64:
      if (ordinary)
        memcpy(e, &v, 8);
      else
        memcpy(e, &r, 8);
      break;
    case RD_FLOAT16:
    case RD_BFLOAT16: {
      uint16_t h = dtype == RD_FLOAT16 ? rd_f64_to_f16(v) : rd_f64_to_bf16(v);
      if (!ordinary)
        h = (uint16_t)r;
      memcpy(e, &h, 2);
      break;
    }
    default: {
      uint64_t u = ordinary ? (uint64_t)(int64_t)((int64_t)(r >> 8) % 9 - 4)
                            : r;
      memcpy(e, &u, esz);
      break;
    }
    }
  }
}

/* Accumulators equal bit for bit; a double accumulator that is NaN only
 * needs to be NaN in both (payloads depend on the hardware). */
static int same_acc(const void *a, const void *b, size_t as)
{
  if (as == sizeof(double)) {
    double x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    if (isnan(x) && isnan(y))
      return 1;
  }
  return memcmp(a, b, as) == 0;
}

/* An empty accumulator of kernel k. */
static void acc_empty_k(const struct rd__kernel *k, void *acc, size_t n)
{
  if (k->init)
    k->init(acc, n);
  else
    memset(acc, 0, n * k->acc_size);
}

static void lanes_empty(const struct rd__kernel *k, union rd__lanes *ln)
{
  memset(ln, 0, sizeof *ln);
  if (k->init)
    k->init(ln, 1);
}

/* Element i of a float32/float16/bfloat16 buffer as a double. */
static double float_elem(int dt, const unsigned char *x, size_t i)
{
  uint16_t h;
  float f;
  if (dt == RD_FLOAT32) {
    memcpy(&f, x + i * 4, 4);
    return f;
  }
  memcpy(&h, x + i * 2, 2);
  return dt == RD_FLOAT16 ? rd_f16_to_f64(h) : rd_bf16_to_f64(h);
}

/* The column step of float32/float16/bfloat16 LogSumExp as documented
 * (ops.c's lsec_add, kernels_impl.h's RD__LSE_K), written here from that
 * description: the oracle for their cols().  The shift m moves only to an
 * x > m + K (hi = hi e + 1, lo = lo e, e = expk(m - x)); otherwise
 * hi += expk(x - m).  `k` is K (0 for the negative control: the exact
 * running maximum). */
static void lsec_model(struct rd__acc_lse *a, double v, double k)
{
  if (isnan(v)) {
    a->nan = 1;
  } else if (v == INFINITY) {
    a->posinf = 1;
  } else if (v != -INFINITY) {
    if (v > a->m + k) {
      double e = expk(a->m - v);
      a->hi = a->hi * e + 1.0;
      a->lo *= e;
      a->m = v;
    } else {
      a->hi += expk(v - a->m);
    }
  }
}

/* 1 for the kernels whose cols() has its own element step (lsec_model)
 * instead of run()+flush() of each element. */
static int lazy_cols(int op, int dt)
{
  return op == RD_OP_LOG_SUM_EXP &&
         (dt == RD_FLOAT32 || dt == RD_FLOAT16 || dt == RD_BFLOAT16);
}

/* Every family kernel (ops.c) of every op, dtype and variant: run() split
 * at every point equals run() whole, rows() equals run()+flush(), cols()
 * equals per-element run()+flush() (float LogSumExp: lsec_model(), its
 * own element step); from an empty and from a non-empty accumulator. */
static void test_ops_split_points(void **state)
{
  static const size_t ol[] = { 0,  1,  2,  3,  5,  8,  15,  16,
                               17, 24, 32, 33, 48, 64, 100, 257 };
  unsigned char *x = malloc(257 * 8 + 8), *a = malloc(1024), *b = malloc(1024),
                *c = malloc(2 * 257 * 1024);
  size_t kernels = 0;
  const int impl = simd_impl(state);
  skip_absent(impl);
  assert_non_null(x);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  for (int op = RD_OP_SUM; op <= RD_OP_ARGMIN; op++)
    for (size_t d = 0; d < RD_NDTYPES; d++)
      for (int last = 0; last <= 1; last++) {
        int dt = rd_dtypes[d], id, any = 0;
        const struct rd__kernel *k, *ks;
        size_t esz = rd_dtype_size(dt), as;
        for (int v = 1; v <= 20; v++)
          any |= rd_dtype_in_version(op, dt, v);
        if (!any || (last && !rd_op_info(op)->is_arg))
          continue;
        id = rd__op_kernel_id(op, dt, last);
        assert_true(id >= 0);
        k = id >= RD__K_OPS_BASE ? rd__op_kernel_impl(id, RD__IMPL_PORTABLE)
                                 : rd__kernel_impl(id, RD__IMPL_PORTABLE);
        ks = id >= RD__K_OPS_BASE ? rd__op_kernel_impl(id, impl)
                                  : rd__kernel_impl(id, impl);
        if (!ks)
          ks = k; /* no SIMD: portable against portable */
        assert_non_null(k);
        as = k->acc_size;
        assert_true(as <= 1024 && as <= sizeof(union rd__lanes));
        kernels++;
        for (size_t li = 0; li < sizeof ol / sizeof ol[0]; li++)
          for (int pre = 0; pre <= 1; pre++) {
            size_t n = ol[li];
            union rd__lanes ln;
            gen_any(dt, esz, x, n);
            /* whole */
            acc_empty_k(k, a, 1);
            if (pre) { /* a non-empty start: two elements of its own */
              lanes_empty(k, &ln);
              k->run(&ln, x + (n > 2 ? n - 2 : 0) * esz, n >= 2 ? 2 : n, 0);
              k->flush(&ln, a);
            }
            memcpy(c, a, as); /* the start state, for the others */
            lanes_empty(k, &ln);
            k->run(&ln, x, n, 0);
            k->flush(&ln, a);
            /* split at every point (every 7th beyond 40), both impls */
            for (size_t m = 0; m <= n; m += n > 40 ? 7 : 1)
              for (int im = 0; im < 2; im++) {
                const struct rd__kernel *kk = im ? ks : k;
                memcpy(b, c, as);
                lanes_empty(kk, &ln);
                kk->run(&ln, x, m, 0);
                kk->run(&ln, x + m * esz, n - m, m);
                kk->flush(&ln, b);
                if (!same_acc(a, b, as))
                  fail_msg("%s %s last %d impl %d: n %zu split at %zu "
                           "differs",
                           rd_op_name(op), rd_dtype_name(dt), last, im, n, m);
              }
            /* rows() of one run, both impls */
            for (int im = 0; im < 2; im++) {
              memcpy(b, c, as);
              (im ? ks : k)->rows(b, x, n, 1);
              if (!same_acc(a, b, as))
                fail_msg("%s %s impl %d: rows() n %zu differs from "
                         "run()+flush()",
                         rd_op_name(op), rd_dtype_name(dt), im, n);
            }
            /* cols() of the SIMD impl against the portable one */
            if (n > 0) {
              unsigned char *c2 = c + 257 * 1024;
              acc_empty_k(k, c, n);
              acc_empty_k(k, c2, n);
              k->cols(c, x, n, 1);
              ks->cols(c2, x, n, 1);
              k->cols(c, x, n, 1);
              ks->cols(c2, x, n, 1);
              for (size_t j = 0; j < n; j++)
                if (!same_acc(c + j * as, c2 + j * as, as))
                  fail_msg("%s %s: SIMD cols() element %zu differs",
                           rd_op_name(op), rd_dtype_name(dt), j);
            }
            /* cols() over several rows (the SIMD impls take rows in
             * groups): column j gets its elements one by one, each as
             * run()+flush() of one element, both impls */
            for (size_t nr = 2; nr <= 11 && n > 0; nr += 3) {
              size_t w = n / nr;
              if (w == 0)
                break;
              if (dt == RD_FLOAT32) /* some -0 next to the +0 ties */
                for (size_t i = 1; i < n; i += 2)
                  if (!memcmp(x + i * 4, "\0\0\0\0", 4))
                    memcpy(x + i * 4, "\0\0\0\x80", 4);
              for (int im = 0; im < 2; im++) {
                acc_empty_k(k, c, w);
                (im ? ks : k)->cols(c, x, w, nr);
                for (size_t j = 0; j < w; j++) {
                  acc_empty_k(k, b, 1);
                  for (size_t r = 0; r < nr; r++) {
                    if (lazy_cols(op, dt)) {
                      lsec_model((struct rd__acc_lse *)(void *)b,
                                 float_elem(dt, x, r * w + j), RD__LSE_K);
                      continue;
                    }
                    lanes_empty(k, &ln);
                    k->run(&ln, x + (r * w + j) * esz, 1, 0);
                    k->flush(&ln, b);
                  }
                  if (!same_acc(c + j * as, b, as))
                    fail_msg("%s %s last %d impl %d: cols() of %zu rows, "
                             "column %zu of %zu differs",
                             rd_op_name(op), rd_dtype_name(dt), last, im, nr, j,
                             w);
                }
                /* rows() over nr runs of w: each as run()+flush() */
                acc_empty_k(k, c, nr);
                (im ? ks : k)->rows(c, x, w, nr);
                for (size_t r = 0; r < nr; r++) {
                  acc_empty_k(k, b, 1);
                  lanes_empty(k, &ln);
                  k->run(&ln, x + r * w * esz, w, 0);
                  k->flush(&ln, b);
                  if (!same_acc(c + r * as, b, as))
                    fail_msg("%s %s last %d impl %d: rows() of %zu runs of "
                             "%zu, run %zu differs",
                             rd_op_name(op), rd_dtype_name(dt), last, im, nr, w,
                             r);
                }
              }
            }
            /* cols(): acc[j] gets x[j] as run()+flush() of one element */
            if (n > 0) {
              acc_empty_k(k, c, n);
              k->cols(c, x, n, 1);
              for (size_t j = 0; j < n; j++) {
                acc_empty_k(k, b, 1);
                lanes_empty(k, &ln);
                k->run(&ln, x + j * esz, 1, 0);
                k->flush(&ln, b);
                if (memcmp(c + j * as, b, as) != 0)
                  fail_msg("%s %s: cols() element %zu of %zu differs",
                           rd_op_name(op), rd_dtype_name(dt), j, n);
              }
            }
          }
      }
  printf("test_kernels: %zu operator kernels checked at every split point\n",
         kernels);
  assert_true(kernels >= 60);
  free(x);
  free(a);
  free(b);
  free(c);
}

/* float32 Prod and Max/Min/Arg lanes with one special value (the edges
 * of the vector paths' "ordinary" tests) at every position of 48
 * elements: run()+flush(), cols() and rows() give the same bytes with the
 * portable and the SIMD implementation active. */
static void test_ops_f32_specials(void **state)
{
  static const uint32_t sp[] = {
    0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,
    0x7fc00000u, 0xffc00001u, 0x7f7fffffu, 0xff7fffffu,
    0x00000001u, 0x80000001u, 0x00800000u, 0x3f800000u,
  };
  static const int ops[] = { RD_OP_PROD, RD_OP_MAX, RD_OP_MIN, RD_OP_ARGMAX,
                             RD_OP_ARGMIN };
  const int saved = rd__kernels_active(), impl = simd_impl(state);
  int have = rd__kernels_select(impl) == 0;
  unsigned char x[48 * 4], acc[2][48 * 64];
  if (!have) {
    printf("test_kernels: no %s implementation on this build/CPU; skipping "
           "the specials test\n",
           rd__kernels_name(impl));
    rd__kernels_select(saved);
    skip();
  }
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
    for (int last = 0; last <= (ops[o] >= RD_OP_ARGMAX); last++) {
      int id = rd__op_kernel_id(ops[o], RD_FLOAT32, last);
      for (size_t si = 0; si < sizeof sp / sizeof sp[0]; si++)
        for (size_t pos = 0; pos < 48; pos++) {
          for (size_t i = 0; i < 48; i++) {
            float f = (float)((int)(i * 7 % 11) - 5) * 0.375f;
            if (f == 0)
              f = 1.25f;
            memcpy(x + i * 4, &f, 4);
          }
          memcpy(x + pos * 4, &sp[si], 4);
          for (int im = 0; im < 2; im++) {
            const struct rd__kernel *k;
            union rd__lanes ln;
            assert_int_equal(rd__kernels_select(im ? impl : RD__IMPL_PORTABLE),
                             0);
            k = rd__op_kernel(id);
            assert_non_null(k);
            memset(acc[im], 0, sizeof acc[im]);
            acc_empty_k(k, acc[im], 1 + 16 + 3);
            lanes_empty(k, &ln);
            k->run(&ln, x, 48, 0);
            k->flush(&ln, acc[im]);
            k->cols(acc[im] + k->acc_size, x, 16, 3);
            k->rows(acc[im] + 17 * k->acc_size, x, 16, 3);
          }
          if (memcmp(acc[0], acc[1], sizeof acc[0]) != 0)
            fail_msg("%s last %d: special 0x%08x at %zu differs between "
                     "implementations",
                     rd_op_name(ops[o]), last, (unsigned)sp[si], pos);
        }
    }
  rd__kernels_select(saved);
}

/* Whole plans of every op under both implementations (or portable twice
 * without SIMD): identical bytes every way. */
static void test_ops_plans_both_impls(void **state)
{
  static const struct {
    size_t rank;
    int64_t shape[3];
    size_t naxes;
    int64_t axes[2];
    int64_t axis;
  } shapes[] = {
    { 1, { 100003 }, 0, { 0 }, 0 },       { 2, { 513, 37 }, 1, { 1 }, 1 },
    { 2, { 37, 513 }, 1, { 0 }, 0 },      { 3, { 9, 130, 17 }, 1, { 1 }, 1 },
    { 3, { 65, 9, 33 }, 2, { 0, 2 }, 2 }, { 2, { 300001, 2 }, 1, { 0 }, 0 },
    { 3, { 3, 5, 7 }, 0, { 0 }, -1 },
  };
  unsigned char *in = malloc(700000 * 8), *out[6];
  const int impl = simd_impl(state);
  int other;
  skip_absent(impl);
  other = rd__kernel_impl(RD__K_F32, impl) ? impl : RD__IMPL_PORTABLE;
  assert_non_null(in);
  for (int i = 0; i < 6; i++)
    assert_non_null(out[i] = malloc(700000 * 8));
  for (int op = RD_OP_SUM; op <= RD_OP_ARGMIN; op++)
    for (size_t d = 0; d < RD_NDTYPES; d++)
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        struct rd_params p;
        struct rd_plan pl;
        struct rd_error err;
        int dt = rd_dtypes[d];
        rd_params_init(&p);
        p.op = op;
        p.dtype = dt;
        p.opset = rd_op_info(op)->is_arg ? 13 : 20;
        if (!rd_dtype_in_version(op, dt, rd_op_version(op, p.opset)))
          continue;
        if ((si + d) % 3 != 0 &&
            shapes[si].shape[0] * shapes[si].shape[1] > 1000)
          continue; /* the big shapes for a third of the types */
        p.rank = shapes[si].rank;
        p.shape = shapes[si].shape;
        if (rd_op_info(op)->is_arg) {
          p.axis = shapes[si].axis;
        } else {
          p.naxes = shapes[si].naxes;
          p.axes = shapes[si].axes;
        }
        p.overflow = RD_OVERFLOW_WRAP;
        assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
        gen_any(dt, pl.elem_size, in, pl.in_count);
        if (op == RD_OP_MEAN || op == RD_OP_LOG_SUM || op == RD_OP_LOG_SUM_EXP)
          if (!(dt == RD_FLOAT32 || dt == RD_FLOAT64 || dt == RD_FLOAT16 ||
                dt == RD_BFLOAT16))
            memset(in, 1, (size_t)pl.in_bytes); /* defined integer results */
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        run_plan(&pl, in, out[0], out[1], out[2]);
        assert_int_equal(rd__kernels_select(other), 0);
        run_plan(&pl, in, out[3], out[4], out[5]);
        for (int i = 1; i < 6; i++)
          if (memcmp(out[0], out[i], (size_t)pl.out_bytes) != 0)
            fail_msg("plan: %s %s shape %zu: result %d differs", rd_op_name(op),
                     rd_dtype_name(dt), si, i);
      }
  rd__kernels_select(other);
  for (int i = 0; i < 6; i++)
    free(out[i]);
  free(in);
}

/* ------------------------------------------------------------------ */
/* rd__rows_out() with a finalisation: the float Sum family, squares   */
/* ------------------------------------------------------------------ */

/* Each operator whose [kept, reduced] plans write outputs per row, and
 * its finalisation. */
static const struct {
  int op, fin;
} fin_ops[] = {
  { RD_OP_SUM, RD__OUT_SUM }, { RD_OP_MEAN, RD__OUT_MEAN },
  { RD_OP_L1, RD__OUT_SUM },  { RD_OP_LOG_SUM, RD__OUT_LOG },
  { RD_OP_L2, RD__OUT_SQRT }, { RD_OP_SUM_SQUARE, RD__OUT_SUM },
};
#define NFIN_OPS (sizeof fin_ops / sizeof fin_ops[0])

/* The kernel of (op, dtype) in implementation impl; NULL if absent. */
static const struct rd__kernel *op_kernel(int op, int dtype, int impl)
{
  int id = rd__op_kernel_id(op, dtype, 0);
  if (id < 0)
    return NULL;
  return id >= RD__K_OPS_BASE ? rd__op_kernel_impl(id, impl)
                              : rd__kernel_impl(id, impl);
}

/* The float Sum family has a direct form for float32/16/bfloat16 only
 * (float64 sums are double-double, RD__F_SUMDD). */
static int fin_op_dtype(int op, int dtype)
{
  return dtype != RD_FLOAT64 || op == RD_OP_L2 || op == RD_OP_SUM_SQUARE;
}

/* The staged path's outputs (what the engine wrote before rows were
 * direct): portable rows() into zeroed accumulators, then finalize.c. */
static void fin_expected(int op, int dtype, unsigned char *e,
                         const unsigned char *x, size_t n, size_t nrows)
{
  const struct rd__kernel *k = op_kernel(op, dtype, RD__IMPL_PORTABLE);
  size_t esz = rd_dtype_size(dtype);
  struct rd__final f;
  unsigned char *acc;
  assert_non_null(k);
  acc = calloc(nrows ? nrows : 1, k->acc_size);
  assert_non_null(acc);
  memset(&f, 0, sizeof f);
  f.op = op;
  f.dtype = dtype;
  f.out_dtype = rd_op_out_dtype(op, dtype);
  f.row = rd__op_row(op);
  f.family = dtype == RD_FLOAT64 ? f.row->f64_family : f.row->float_family;
  f.acc_class = k->acc_class;
  f.count = n;
  k->rows(acc, x, n, nrows);
  for (size_t r = 0; r < nrows; r++)
    assert_int_equal(rd__finalize(&f, acc + r * k->acc_size, e + r * esz, r,
                                  NULL),
                     0);
  free(acc);
}

/* Clears the sign bit of n elements (LogSum of positive sums). */
static void make_positive(int dtype, unsigned char *x, size_t n)
{
  size_t esz = rd_dtype_size(dtype);
  for (size_t i = 0; i < n; i++)
    x[i * esz + esz - 1] &= 0x7f;
}

/* Every operator with a direct form, every float dtype, n = 1..20 (above
 * 16: the generic path), row counts that are not multiples of four or
 * eight, special values at several densities, signed and positive data,
 * input and output at the end of exact-size heap blocks: the portable
 * and the SIMD rd__rows_out() against the staged definition. */
static void test_rows_out_fin(void **state)
{
  static const size_t rowcounts[] = { 1, 2, 3, 5, 7, 9, 13, 15, 17, 63, 101 };
  static const unsigned rares[] = { 0, 30, 300 };
  const int impl = simd_impl(state);
  size_t checked = 0;
  skip_absent(impl);
  for (size_t oi = 0; oi < NFIN_OPS; oi++)
    for (size_t t = 0; t < 4; t++) {
      int op = fin_ops[oi].op, dt = types[t].dtype;
      const struct rd__kernel *kp, *ks;
      size_t esz = types[t].esz;
      if (!fin_op_dtype(op, dt))
        continue;
      kp = op_kernel(op, dt, RD__IMPL_PORTABLE);
      ks = op_kernel(op, dt, impl);
      if (!ks)
        ks = kp; /* no SIMD: portable against the definition */
      for (size_t n = 1; n <= 20; n++)
        for (size_t ri = 0; ri < sizeof rowcounts / sizeof rowcounts[0]; ri++)
          for (size_t qi = 0; qi < sizeof rares / sizeof rares[0]; qi++)
            for (int pos = 0; pos <= 1; pos++) {
              size_t nr = rowcounts[ri], ib = n * nr * esz, ob = nr * esz;
              unsigned char *x = malloc(ib), *e = malloc(ob);
              unsigned char *op_ = malloc(ob), *os = malloc(ob);
              assert_true(x && e && op_ && os);
              fill(dt, esz, x, n * nr, rares[qi]);
              if (pos)
                make_positive(dt, x, n * nr);
              fin_expected(op, dt, e, x, n, nr);
              rd__rows_out(kp, dt, op_, x, n, nr, fin_ops[oi].fin);
              rd__rows_out(ks, dt, os, x, n, nr, fin_ops[oi].fin);
              if (memcmp(e, op_, ob) != 0 || memcmp(e, os, ob) != 0)
                fail_msg("rows_out fin: %s %s n %zu rows %zu rare %u pos %d: "
                         "portable %s, %s %s",
                         rd_op_name(op), rd_dtype_name(dt), n, nr, rares[qi],
                         pos, memcmp(e, op_, ob) ? "differs" : "ok",
                         rd__kernels_name(impl),
                         memcmp(e, os, ob) ? "differs" : "ok");
              checked++;
              free(x);
              free(e);
              free(op_);
              free(os);
            }
    }
  printf("test_kernels: %zu rows_out cases with a finalisation\n", checked);
}

/* float16/bfloat16 outputs of the Sum family (signed values, so the
 * vector round-to-odd meets negative numbers): every 16-bit pattern as a
 * row of one (Sum and Mean give the element back, LogSum its log, L1 its
 * magnitude), and random rows of 2, 3, 9 and 16, against the definition. */
static void test_rows_out_fin_16bit_all(void **state)
{
  enum { NP = 65536 };
  static const size_t rl[] = { 1, 2, 3, 9, 16 };
  const int impl = simd_impl(state);
  uint16_t *x = malloc(NP * 16 * 2);
  unsigned char *e = malloc(NP * 2), *op_ = malloc(NP * 2),
                *os = malloc(NP * 2);
  skip_absent(impl);
  assert_true(x && e && op_ && os);
  for (size_t t = 1; t <= 2; t++)
    for (size_t oi = 0; oi < 4; oi++) {
      int op = fin_ops[oi].op, dt = types[t].dtype;
      const struct rd__kernel *kp = op_kernel(op, dt, RD__IMPL_PORTABLE);
      const struct rd__kernel *ks = op_kernel(op, dt, impl);
      if (!ks)
        ks = kp;
      for (size_t li = 0; li < sizeof rl / sizeof rl[0]; li++) {
        size_t n = rl[li];
        for (size_t i = 0; i < NP * n; i++)
          x[i] = n == 1 ? (uint16_t)i : (uint16_t)(next() >> 48);
        fin_expected(op, dt, e, (const unsigned char *)x, n, NP);
        rd__rows_out(kp, dt, op_, (const unsigned char *)x, n, NP,
                     fin_ops[oi].fin);
        rd__rows_out(ks, dt, os, (const unsigned char *)x, n, NP,
                     fin_ops[oi].fin);
        for (size_t r = 0; r < NP; r++)
          if (memcmp(e + 2 * r, op_ + 2 * r, 2) != 0 ||
              memcmp(e + 2 * r, os + 2 * r, 2) != 0)
            fail_msg("16-bit rows_out: %s %s n %zu row %zu (first 0x%04x): "
                     "expected %02x%02x portable %02x%02x simd %02x%02x",
                     rd_op_name(op), rd_dtype_name(dt), n, r, x[r * n],
                     e[2 * r + 1], e[2 * r], op_[2 * r + 1], op_[2 * r],
                     os[2 * r + 1], os[2 * r]);
      }
    }
  free(x);
  free(e);
  free(op_);
  free(os);
}

/* One element of test_rows16_screen's data set `set` (see there). */
static uint16_t screen_elem(int dt, int set, size_t row)
{
  double v;
  uint64_t z = next();
  int sh;
  switch (set) {
  case 0: /* small integers, a third zeros: sums exactly on midpoints */
    v = z % 3 == 0 ? 0.0 : (double)((z >> 8) % 64);
    break;
  case 1: /* larger integers: ties in higher binades */
    v = z % 3 == 0 ? 0.0 : (double)((z >> 8) % 512);
    break;
  case 2: /* any bits: NaN, infinities, subnormals, every binade */
    return (uint16_t)(z >> 48);
  case 3: /* an 11-bit integer times 2^-40 .. 2^-1, either sign: up to
             1023.5, float16 subnormals, values that round to zero */
    v = ldexp((double)((z >> 8) % 2048), (int)((z >> 24) % 40) - 40);
    v = (z >> 40) & 1 ? -v : v;
    break;
  default: /* bfloat16's screen limits, in groups of eight rows: squares
              below 2^-126 (they underflow), row sums around 2^-100, and
              around 2^127; float16: its extremes */
    sh = dt == RD_BFLOAT16 ? (int)(row / 8 % 3) : 0;
    v = ldexp(1.0 + (double)((z >> 16) % 256) / 256.0,
              dt == RD_BFLOAT16 ? (sh == 0   ? -68 - (int)((z >> 32) % 6)
                                   : sh == 1 ? -52 - (int)((z >> 32) % 4)
                                             : 61 + (int)((z >> 32) % 4))
              : (z >> 32) % 2   ? -24
                                : 14);
    if (z % 7 == 0)
      v = 0.0;
  }
  return dt == RD_FLOAT16 ? rd_f64_to_f16(v) : rd_f64_to_bf16(v);
}

/* The output a float32 sum of the row would give, with no bracket: the
 * negative control (data that never makes it differ would not test the
 * bracket). */
static uint16_t screen_naive(int dt, int op, const uint16_t *row)
{
  float s = 0.0f;
  for (int i = 0; i < 16; i++) {
    float f = dt == RD_FLOAT16 ? rd_f16_to_f32(row[i]) : rd_bf16_to_f32(row[i]);
    s += op == RD_OP_L1 ? fabsf(f) : f * f;
  }
  if (op == RD_OP_L2)
    s = sqrtf(s);
  return dt == RD_FLOAT16 ? rd_f32_to_f16(s) : rd_f32_to_bf16(s);
}

/* float16/bfloat16 rows of 16 squares (L2, SumSquare) or magnitudes (L1),
 * which AVX-512 sums in float32 and screens (kernels_rows512.c), against
 * the staged definition: integer rows whose sums lie exactly on midpoints
 * of the output type, random bits, wide scales, bfloat16 squares and sums
 * at the screen's limits, zero rows; row counts not multiples of eight.
 * Negative control: a float32 sum without the bracket differs from the
 * definition on some rows of this data. */
static void test_rows16_screen(void **state)
{
  enum { NR = 40003, NSETS = 5 };
  static const int ops[] = { RD_OP_L2, RD_OP_SUM_SQUARE, RD_OP_L1 };
  static const int fins[] = { RD__OUT_SQRT, RD__OUT_SUM, RD__OUT_SUM };
  const int impl = simd_impl(state);
  uint16_t *x = malloc(NR * 16 * 2);
  unsigned char *e = malloc(NR * 2), *o = malloc(NR * 2);
  size_t control = 0;
  skip_absent(impl);
  assert_true(x && e && o);
  for (int di = 0; di < 2; di++)
    for (int set = 0; set < NSETS; set++) {
      const int dt = di == 0 ? RD_FLOAT16 : RD_BFLOAT16;
      for (size_t i = 0; i < NR * 16; i++)
        x[i] = screen_elem(dt, set, i / 16);
      for (size_t r = 0; r < NR; r += 97) /* some rows all zeros */
        memset(x + 16 * r, 0, 32);
      for (size_t oi = 0; oi < 3; oi++) {
        const struct rd__kernel *ks = op_kernel(ops[oi], dt, impl);
        if (!ks)
          ks = op_kernel(ops[oi], dt, RD__IMPL_PORTABLE);
        fin_expected(ops[oi], dt, e, (const unsigned char *)x, 16, NR);
        rd__rows_out(ks, dt, o, (const unsigned char *)x, 16, NR, fins[oi]);
        for (size_t r = 0; r < NR; r++) {
          uint16_t want, got;
          memcpy(&want, e + 2 * r, 2);
          memcpy(&got, o + 2 * r, 2);
          if (want != got)
            fail_msg("rows of 16: %s %s set %d row %zu: 0x%04x, "
                     "definition 0x%04x",
                     rd_op_name(ops[oi]), rd_dtype_name(dt), set, r, got, want);
          if (set == 3 && screen_naive(dt, ops[oi], x + 16 * r) != want)
            control++;
        }
      }
    }
  printf("test_kernels: rows of 16 screened; %zu rows where a float32 sum "
         "alone would differ\n",
         control);
  assert_true(control > 0);
  free(x);
  free(e);
  free(o);
}

/* Rows of -0 only: the staged path adds them to +0 lanes and a zeroed
 * accumulator, so ReduceSum is +0; a vector form that summed the loaded
 * lanes alone would give -0 (the negative control below shows that such
 * a sum really is -0, so the check can fail).  Every n <= 17, every
 * path, float32/16/bfloat16, and the Mean (+0 / n = +0). */
static void test_rows_out_negzero(void **state)
{
  const int impl = simd_impl(state);
  unsigned char x[17 * 64 * 4], out[64 * 4], e[64 * 4];
  volatile double nz = -0.0;
  skip_absent(impl);
  assert_true(signbit(nz + nz)); /* negative control: -0 + -0 = -0 */
  for (size_t t = 0; t < 3; t++) {
    int dt = types[t].dtype;
    size_t esz = types[t].esz;
    for (size_t i = 0; i < 17 * 64; i++) {
      memset(x + i * esz, 0, esz);
      x[i * esz + esz - 1] = 0x80;
    }
    for (int mean = 0; mean <= 1; mean++) {
      int op = mean ? RD_OP_MEAN : RD_OP_SUM;
      for (int im = 0; im < 2; im++) {
        const struct rd__kernel *k = op_kernel(op, dt,
                                               im ? impl : RD__IMPL_PORTABLE);
        if (!k)
          continue;
        for (size_t n = 1; n <= 17; n++) {
          fin_expected(op, dt, e, x, n, 61);
          memset(out, 0x5a, sizeof out);
          rd__rows_out(k, dt, out, x, n, 61, mean ? RD__OUT_MEAN : RD__OUT_SUM);
          for (size_t r = 0; r < 61 * esz; r++)
            if (out[r] != 0 || e[r] != 0)
              fail_msg("-0 rows: %s %s impl %d n %zu: byte %zu is 0x%02x "
                       "(expected 0x%02x), want +0",
                       rd_op_name(op), rd_dtype_name(dt), im, n, r, out[r],
                       e[r]);
        }
      }
    }
  }
}

/* Whole plans [R, n] reduced over axis 1 of the float Sum family (direct
 * now) through every engine path (execute, parts, odd stream chunks, so
 * rows split between feeds end in flush_segment()) under portable and
 * the SIMD path, against the staged definition row by row. */
static void test_sum_rows_plans(void **state)
{
  static const int64_t shapes[][2] = { { 300007, 16 }, { 65539, 3 },
                                       { 40001, 9 },   { 4099, 13 },
                                       { 7, 16 },      { 1, 1 },
                                       { 2001, 21 } };
  const int impl = simd_impl(state);
  unsigned char *in = malloc(300007 * 16 * 4), *e = malloc(300007 * 4), *out[6];
  int other;
  skip_absent(impl);
  other = rd__kernel_impl(RD__K_F32, impl) ? impl : RD__IMPL_PORTABLE;
  assert_true(in && e);
  for (int i = 0; i < 6; i++)
    assert_non_null(out[i] = malloc(300007 * 4));
  for (size_t oi = 0; oi < 4; oi++)
    for (size_t t = 0; t < 3; t++)
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int64_t axes[1] = { 1 };
        struct rd_params p;
        struct rd_plan pl;
        struct rd_error err;
        rd_params_init(&p);
        p.op = fin_ops[oi].op;
        p.dtype = types[t].dtype;
        p.rank = 2;
        p.shape = shapes[si];
        p.naxes = 1;
        p.axes = axes;
        assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
        fill(p.dtype, types[t].esz, in, pl.in_count, si % 2 ? 20 : 0);
        if (p.op == RD_OP_LOG_SUM && si % 3 != 2)
          make_positive(p.dtype, in, pl.in_count);
        fin_expected(p.op, p.dtype, e, in, (size_t)shapes[si][1],
                     (size_t)shapes[si][0]);
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        run_plan(&pl, in, out[0], out[1], out[2]);
        assert_int_equal(rd__kernels_select(other), 0);
        run_plan(&pl, in, out[3], out[4], out[5]);
        for (int i = 0; i < 6; i++)
          if (memcmp(e, out[i], (size_t)pl.out_bytes) != 0)
            fail_msg("sum rows plan: %s %s shape %zu: result %d differs from "
                     "the staged definition",
                     rd_op_name(p.op), rd_dtype_name(p.dtype), si, i);
      }
  rd__kernels_select(other);
  for (int i = 0; i < 6; i++)
    free(out[i]);
  free(in);
  free(e);
}

/* The implementation chosen at load time (main() records it before any
 * test switches): REDUCED_KERNELS names the widest path allowed, and one
 * the CPU lacks falls back to the best available below it. */
static int initial_impl;

static void test_select(void **state)
{
  const char *env = getenv("REDUCED_KERNELS");
  const int saved = rd__kernels_active();
  int want = RD__IMPL_AVX512, expect;
  (void)state;
  if (env && strcmp(env, "portable") == 0)
    want = RD__IMPL_PORTABLE;
  else if (env && strcmp(env, "avx2") == 0)
    want = RD__IMPL_AVX2;
  for (expect = want; expect > RD__IMPL_PORTABLE; expect--)
    if (rd__kernel_impl(RD__K_F32, expect))
      break;
  if (initial_impl != expect)
    fail_msg("REDUCED_KERNELS=%s: active %s at load, expected %s",
             env ? env : "(unset)", rd__kernels_name(initial_impl),
             rd__kernels_name(expect));
  /* portable always exists; AVX-512 implies AVX2 */
  assert_non_null(rd__kernel_impl(RD__K_F32, RD__IMPL_PORTABLE));
  if (rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    assert_non_null(rd__kernel_impl(RD__K_F32, RD__IMPL_AVX2));
  for (int impl = 0; impl < RD__IMPL_COUNT; impl++) {
    int have = rd__kernel_impl(RD__K_F32, impl) != NULL;
    int before = rd__kernels_active();
    assert_int_equal(rd__kernels_select(impl), have ? 0 : -1);
    assert_int_equal(rd__kernels_active(), have ? impl : before);
    if (!have)
      continue;
    for (int id = 0; id < RD__K_COUNT; id++) {
      assert_ptr_equal(rd__kernel_for(id), rd__kernel_impl(id, impl));
      assert_non_null(rd__kernel_for(id)->run);
    }
    /* the operator families follow the same switch */
    assert_ptr_equal(
      rd__op_kernel(rd__op_kernel_id(RD_OP_SUM, RD_FLOAT32, 0)),
      rd__op_kernel_impl(rd__op_kernel_id(RD_OP_SUM, RD_FLOAT32, 0), impl));
  }
  assert_int_equal(rd__kernels_select(-1), -1);
  assert_int_equal(rd__kernels_select(RD__IMPL_COUNT), -1);
  assert_string_equal(rd__kernels_name(RD__IMPL_PORTABLE), "portable");
  assert_string_equal(rd__kernels_name(RD__IMPL_AVX2), "avx2");
  assert_string_equal(rd__kernels_name(RD__IMPL_AVX512), "avx512");
  assert_int_equal(rd__kernels_select(saved), 0);
}

/* ------------------------------------------------------------------ */
/* LogSum's vector log for narrow outputs (rd__rows512_log_narrow)     */
/* ------------------------------------------------------------------ */

/* The vector log's error bound as the kernel assumes it (LOG_ULPS in
 * kernels_rows512.c) and the most this test allows it to be measured at. */
#define LOG_ULPS 16
#define LOG_MEASURED 2

static uint64_t dbits(double v)
{
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b;
}

/* Units in the last place between two finite doubles of one sign. */
static uint64_t ulps_apart(double a, double b)
{
  uint64_t x = dbits(a), y = dbits(b);
  return x > y ? x - y : y - x;
}

/* Distance of v from the nearest number of 25 significant bits, in units
 * of v's last place (the kernel's own test, computed here apart). */
static uint64_t dist25(double v)
{
  uint64_t low = dbits(v) & ((UINT64_C(1) << 28) - 1);
  return low < (UINT64_C(1) << 27) ? low : (UINT64_C(1) << 28) - low;
}

/* A positive double of a random order of magnitude: 2^-1022 .. 2^1023. */
static double any_positive(void)
{
  return ldexp(1.0 + (double)(next() >> 11) * 0x1p-53,
               (int)(next() % 2046) - 1022);
}

/* Inputs whose log lies next to a float32 midpoint: x = exp(y), y a
 * number of 25 significant bits (a float32 plus half its last place) in
 * [-40, 40]; libm's log x comes back within a unit or two of y. */
static double at_midpoint(void)
{
  float f;
  do
    f = (float)((double)(next() >> 11) * 0x1p-53 * 80.0 - 40.0);
  while (f == 0.0f);
  return exp((double)f + ldexp(1.0, ilogb(f) - 24));
}

/* Against libm's log: (1) as float32, float16 and bfloat16, every input:
 * random magnitudes, sums next to 1, float32 row sums, inputs next to
 * float32 midpoints, and every special input (which must be libm's double
 * itself); (2) the vector log's own error, where the kernel kept it,
 * within LOG_MEASURED ulps of libm, so LOG_ULPS bounds it with room;
 * (3) inputs whose log lies within the bound of a midpoint are libm's
 * double exactly (the fallback ran).  Negative control: with a bound of 0
 * the midpoint inputs do not all come back as libm's doubles, so (3)
 * tells the fallback from the vector log. */
static void test_log_narrow(void **state)
{
  enum { N = 1 << 20, ROUNDS = 8 };
  static const double specials[] = {
    0.0,
    -0.0,
    -1.0,
    -DBL_MAX,
    INFINITY,
    -INFINITY,
    NAN,
    -NAN,
    DBL_MIN,
    DBL_MAX,
    0x1p-1074,
    0x1p-1030,
    1.0,
    2.0,
    0.5,
    1.41421356237309504880,
    0.70710678118654752440,
    0x1.6a09e667f3bcdp+0,
    0x1.6a09e667f3bccp+0,
    0x1.0000000000001p+0,
    0x1.fffffffffffffp-1,
  };
  double *x = malloc(N * sizeof *x), *d = malloc(N * sizeof *d);
  uint64_t worst = 0;
  size_t kept = 0, redone = 0, near = 0, control = 0;
  (void)state;
  assert_true(x && d);
  if (!rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512)) {
    printf("test_kernels: no AVX-512 on this build/CPU; skipping\n");
    free(x);
    free(d);
    skip();
  }
  for (int round = 0; round < ROUNDS; round++) {
    for (size_t i = 0; i < N; i++) {
      switch ((i + (size_t)round) % 5) {
      case 0: x[i] = any_positive(); break;
      case 1: /* next to 1: logs near 0 */
        x[i] = 1.0 + ((double)(next() >> 11) * 0x1p-53 - 0.5) *
                       ldexp(1.0, -(int)(next() % 50));
        break;
      case 2: /* a row sum of float32 values */
        x[i] = (double)(float)((double)(next() >> 11) * 0x1p-53 * 1e6);
        break;
      default: x[i] = at_midpoint(); break;
      }
      if (i < sizeof specials / sizeof specials[0] && round == 0)
        x[i] = specials[i];
    }
    memcpy(d, x, N * sizeof *d);
    rd__rows512_log_narrow(d, N - (size_t)round, LOG_ULPS); /* tails too */
    for (size_t i = 0; i < N - (size_t)round; i++) {
      double g = log(x[i]);
      if ((float)g != (float)d[i] && !(isnan(g) && isnan(d[i])))
        fail_msg("log_narrow(%a) = %a, libm %a: float32 %a vs %a", x[i], d[i],
                 g, (double)(float)d[i], (double)(float)g);
      if (rd_f64_to_f16(g) != rd_f64_to_f16(d[i]) ||
          rd_f64_to_bf16(g) != rd_f64_to_bf16(d[i]))
        fail_msg("log_narrow(%a) = %a, libm %a: 16-bit roundings differ", x[i],
                 d[i], g);
      if (!(x[i] >= DBL_MIN && x[i] <= DBL_MAX)) {
        if (dbits(g) != dbits(d[i]) && !(isnan(g) && isnan(d[i])))
          fail_msg("log_narrow(%a) = %a: a special input, not libm's %a", x[i],
                   d[i], g);
        continue;
      }
      if (dist25(g) + LOG_MEASURED + 1 <= LOG_ULPS) {
        near++;
        if (dbits(g) != dbits(d[i]))
          fail_msg("log_narrow(%a) = %a: %" PRIu64 " ulps from a float32 "
                   "midpoint, not libm's %a",
                   x[i], d[i], dist25(g), g);
      }
      if (dbits(g) == dbits(d[i])) {
        redone++; /* or the vector log gave libm's double */
      } else {
        uint64_t u = ulps_apart(g, d[i]);
        kept++;
        worst = u > worst ? u : worst;
      }
    }
    /* the negative control, on the midpoint inputs */
    for (size_t i = 0; i < N; i++)
      d[i] = x[i];
    rd__rows512_log_narrow(d, N, 0);
    for (size_t i = 3; i < N; i += 5)
      if (x[i] >= DBL_MIN && dist25(log(x[i])) <= LOG_ULPS &&
          dbits(d[i]) != dbits(log(x[i])))
        control++;
  }
  printf("test_kernels: log_narrow: %zu logs not libm's double (at most "
         "%" PRIu64 " ulps from it), %zu equal to it, %zu next to a "
         "midpoint; control (bound 0): %zu of those not libm's\n",
         kept, worst, redone, near, control);
  assert_true(worst <= LOG_MEASURED);
  assert_true(near > 1000); /* the midpoint inputs got there */
  assert_true(control > 0); /* and (3) could have failed */
  free(x);
  free(d);
}

/* LogSum float32 rows (n = 3 and 16) whose sums' logs lie next to float32
 * midpoints, through rd__rows_out() on AVX-512, against the staged
 * definition (libm's log): the kernel's own bound (LOG_ULPS) at work.
 * Each row is exp(y), y a midpoint, split into three float32 parts (the
 * row sum in double comes within a unit of it), the rest zeros. */
static void test_rows_out_log_midpoints(void **state)
{
  enum { NR = 200003 };
  static const size_t rl[] = { 3, 16 };
  const struct rd__kernel *ks = op_kernel(RD_OP_LOG_SUM, RD_FLOAT32,
                                          RD__IMPL_AVX512);
  float *x = malloc(NR * 16 * sizeof *x);
  unsigned char *e = malloc(NR * 4), *o = malloc(NR * 4);
  (void)state;
  assert_true(x && e && o);
  if (!ks || !rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512)) {
    printf("test_kernels: no AVX-512 on this build/CPU; skipping\n");
    free(x);
    free(e);
    free(o);
    skip();
  }
  for (size_t li = 0; li < 2; li++) {
    size_t n = rl[li];
    for (size_t r = 0; r < NR; r++) {
      double v = at_midpoint();
      float *row = x + r * n;
      for (size_t i = 0; i < n; i++)
        row[i] = 0.0f;
      row[0] = (float)v;
      row[1] = (float)(v - row[0]);
      row[2] = (float)(v - row[0] - row[1]);
    }
    fin_expected(RD_OP_LOG_SUM, RD_FLOAT32, e, (const unsigned char *)x, n, NR);
    rd__rows_out(ks, RD_FLOAT32, o, (const unsigned char *)x, n, NR,
                 RD__OUT_LOG);
    for (size_t r = 0; r < NR; r++)
      if (memcmp(e + 4 * r, o + 4 * r, 4) != 0)
        fail_msg("LogSum rows n %zu: row %zu differs from libm's log", n, r);
  }
  free(x);
  free(e);
  free(o);
}

/* float32 LogSumExp cols(), portable and SIMD, against lsec_model() on
 * columns made for its cases: a later element within K above the first
 * (no rescale; a rescale with the exact maximum), one more than K above
 * (a rescale), an empty start with -inf first, a NaN, a +inf, spreads
 * below -708, and rows in several calls.  Each column's finished value
 * (m + log1p((hi - 1) + lo)) is within 4e-15 (1 + |LSE|) of the long
 * double LogSumExp.  Some columns start from a state with lo not 0 (which
 * a rescale scales).  Negative control: the model with K = 0 (the exact
 * running maximum) differs in some column. */
static void test_lse_cols_lazy(void **state)
{
  enum { W = 24, NR = 37 };
  float x[NR * W];
  struct rd__acc_lse a[W], b;
  const int impl = simd_impl(state);
  int id = rd__op_kernel_id(RD_OP_LOG_SUM_EXP, RD_FLOAT32, 0), control = 0;
  const struct rd__kernel *ks[2];
  skip_absent(impl);
  ks[0] = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  ks[1] = rd__op_kernel_impl(id, impl);
  assert_non_null(ks[0]);
  if (!ks[1])
    ks[1] = ks[0];
  for (size_t r = 0; r < NR; r++)
    for (size_t j = 0; j < W; j++) {
      double u = (double)(next() >> 11) * 0x1p-53; /* [0, 1) */
      float v = (float)(u * 20.0 - 10.0);
      if (r == 0)
        v = (float)(j % 4 == 1 ? -8.0 : -3.0 + 0.25 * (double)j);
      if (r == 17 && j % 4 == 1)
        v = (float)(-8.0 + RD__LSE_K + 1.5); /* > -8 + K: the shift moves */
      if (j == 5 && r < 3)
        v = -INFINITY; /* starts empty */
      if (j == 6 && r == 20)
        v = NAN;
      if (j == 7 && r == 30)
        v = INFINITY;
      if (j == 8 && r % 5 == 2)
        v = -750.0f; /* below expk's range: a term of +0 */
      if (j == 9 && r == 25)
        v = (float)(RD__LSE_K + 24.0); /* the next rows are far below it */
      x[r * W + j] = v;
    }
  for (int im = 0; im < 2; im++) {
    struct rd__acc_lse a0[W];
    ks[im]->init(a0, W);
    for (size_t j = 2; j < W; j++) { /* some start from a state, lo not 0 */
      if (j % 3 != 2 && j != 9)      /* 9: then a rescale (row 25) */
        continue;
      a0[j].m = -2.0 + (double)j / 8;
      a0[j].hi = 1.25;
      a0[j].lo = (double)j * 0x1p-56;
    }
    memcpy(a, a0, sizeof a);
    /* rows in three calls: 5, 1, then the rest */
    ks[im]->cols(a, (const unsigned char *)x, W, 5);
    ks[im]->cols(a, (const unsigned char *)(x + 5 * W), W, 1);
    ks[im]->cols(a, (const unsigned char *)(x + 6 * W), W, NR - 6);
    for (size_t j = 0; j < W; j++) {
      long double sum = 0, mx = -INFINITY;
      double got, want;
      b = a0[j];
      for (size_t r = 0; r < NR; r++)
        lsec_model(&b, x[r * W + j], RD__LSE_K);
      if (memcmp(&a[j], &b, sizeof b) != 0)
        fail_msg("impl %d: column %zu differs from lsec_model", im, j);
      if (im == 0) {
        struct rd__acc_lse c = a0[j];
        for (size_t r = 0; r < NR; r++)
          lsec_model(&c, x[r * W + j], 0.0);
        control |= memcmp(&c, &b, sizeof b) != 0;
      }
      if (a[j].nan || a[j].posinf) {
        assert_true(j == 6 || j == 7);
        continue;
      }
      if (a0[j].m != -INFINITY)
        mx = a0[j].m;
      for (size_t r = 0; r < NR; r++)
        if (x[r * W + j] > mx)
          mx = x[r * W + j];
      if (a0[j].m != -INFINITY)
        sum = ((long double)a0[j].hi + a0[j].lo) * expl(a0[j].m - mx);
      for (size_t r = 0; r < NR; r++)
        sum += expl((long double)x[r * W + j] - mx);
      want = (double)(mx + logl(sum));
      got = a[j].m + log1p((a[j].hi - 1.0) + a[j].lo);
      if (fabs(got - want) > 4e-15 * (1.0 + fabs(want)))
        fail_msg("impl %d: column %zu: %.17g, LogSumExp %.17g", im, j, got,
                 want);
    }
  }
  assert_true(control); /* the K = 0 model would have told them apart */
}

int main(void)
{
#define BOTH(f)                                                                \
  cmocka_unit_test_prestate(f, (void *)&impl_avx2),                            \
    cmocka_unit_test_prestate(f, (void *)&impl_avx512)
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_select),
    BOTH(test_run_flush),
    BOTH(test_cols_rows),
    BOTH(test_cols_shapes),
    cmocka_unit_test(test_cols_int32_extremes),
    BOTH(test_cols_i64_small),
    cmocka_unit_test(test_rows_out_definition),
    BOTH(test_plans_both_impls),
    BOTH(test_short_rows_out),
    BOTH(test_short_rows_out_long),
    BOTH(test_short_rows_plans),
    cmocka_unit_test(test_short_rows_int_error),
    BOTH(test_short_rows_16bit_all),
    BOTH(test_ops_split_points),
    BOTH(test_lse_cols_lazy),
    BOTH(test_ops_f32_specials),
    BOTH(test_ops_plans_both_impls),
    BOTH(test_rows_out_fin),
    BOTH(test_rows_out_fin_16bit_all),
    BOTH(test_rows16_screen),
    BOTH(test_rows_out_negzero),
    BOTH(test_sum_rows_plans),
    cmocka_unit_test(test_log_narrow),
    cmocka_unit_test(test_rows_out_log_midpoints),
  };
#undef BOTH
  initial_impl = rd__kernels_active();
  printf("test_kernels: active implementation %s\n",
         rd__kernels_name(initial_impl));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
