/* test_opkernels.c - the vector helpers of the operator kernels
 * (lib/kernels_ops.h) give the same bits as the scalar operations they
 * replace, in their 256-bit and (where the CPU has it) 512-bit forms.
 *
 * Each helper is called directly at every stopping point (a block holding
 * a NaN, +inf or a new maximum at each block index and lane) against a
 * scalar reference written from expk.h's expk(), and the operator
 * kernels that call it are run at every split point under the SIMD
 * implementation, both forms, against the portable implementation
 * (test_kernels.c checks every operator kernel the same way, in whichever
 * form is selected).  Where
 * the CPU or build has no SIMD path the test only checks the reference
 * against the portable kernel.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kernels_impl.h"
#include "kernels_ops.h"
#include "ops.h"
#include "reduce.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

/* Uniform in [-scale, scale), with a per-mille chance `rare` of -inf, a
 * huge negative value (expk gives 0) or a subnormal. */
static float gen(double scale, unsigned rare)
{
  uint64_t r = next();
  double u = (double)(r >> 11) * 0x1p-52 - 1.0;
  if ((unsigned)(r % 1000) < rare) {
    switch ((r >> 20) % 3) {
    case 0: return -INFINITY;
    case 1: return -1e30f;
    default: return 0x1p-140f;
    }
  }
  return (float)(u * scale);
}

static int simd(void)
{
  return rd__kernels_active() == RD__IMPL_AVX2;
}

/* expk() against expl() (64-bit significand): relative error within
 * 2.5e-16 + 3.4e-17 |t| on [-708, K] (K = RD__LSE_K; the second term is
 * the one-step range reduction's: kd times the 1.45e-18 by which
 * EXPK_LN2 is below ln2/16; expk.h), swept uniformly, densely near 0
 * where the LogSumExp terms that matter lie, and on (0, K] (the terms
 * above a lazy shift); and the ends of its domain. */
static void test_expk_accuracy(void **state)
{
  double worst = 0, worst_small = 0;
  (void)state;
  for (long i = 0; i <= 4000000; i++) {
    double t = i % 4 == 3
                 ? RD__LSE_K * (double)(next() >> 11) * 0x1p-53 + 0x1p-60
               : i % 2 == 1 ? -708.0 * (double)(next() >> 11) * 0x1p-53
                            : -2.0 * (double)i / 4000000.0;
    long double e = expl((long double)t);
    double rel = (double)fabsl(((long double)expk(t) - e) / e);
    double lim = 2.5e-16 + 3.4e-17 * fabs(t);
    if (rel > lim)
      fail_msg("expk(%a) = %a: relative error %.3g above %.3g", t, expk(t), rel,
               lim);
    if (rel > worst)
      worst = rel;
    if (t > -1.0 && t <= 0.0 && rel > worst_small)
      worst_small = rel;
  }
  print_message("expk: max relative error %.3g, %.3g on (-1, 0]\n", worst,
                worst_small);
  /* within 1.2 ulp near 0: the bound above is not loose there */
  assert_true(worst_small < 2.7e-16);
  /* the table: entry j plus j << 48 is 2^(j/16) correctly rounded (a
   * one-ulp error in an entry stays inside the bound above) */
  for (unsigned j = 0; j < 16; j++) {
    uint64_t b = expk_tb[j] + ((uint64_t)j << 48);
    double d;
    memcpy(&d, &b, sizeof d);
    assert_true(d == (double)exp2l((long double)j / 16.0L));
  }
  assert_true(expk(0.0) == 1.0 && expk(-0.0) == 1.0);
  /* the bound, and libm's own error */
  assert_true(fabs(expk(RD__LSE_K) / exp(RD__LSE_K) - 1.0) <
              2.5e-16 + 3.4e-17 * RD__LSE_K + 2.3e-16);
  assert_true(expk(EXPK_MIN) >= DBL_MIN);
  assert_true(expk(nextafter(EXPK_MIN, -INFINITY)) == 0.0);
  assert_true(expk(-INFINITY) == 0.0 && expk(NAN) == 0.0);
  assert_true(expk(-1e300) == 0.0);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void expk4_of(const double *t,
                                                         double *y)
{
  _mm256_storeu_pd(y, rd__expk4(_mm256_loadu_pd(t)));
}

/* mode 0: rd__expk8; 1: rd__expk8_mask with every lane on; 2:
 * rd__expk8_neg of -t (1 and 2 only with every t in [-708, 0]). */
__attribute__((target("avx512f,avx2,fma"))) static void
expk8_of(const double *t, double *y, int mode)
{
  struct rd__expk_tab tb;
  __m512d v = _mm512_loadu_pd(t);
  rd__expk_tab_load(&tb);
  if (mode == 0)
    v = rd__expk8(&tb, v);
  else if (mode == 1)
    v = rd__expk8_mask(&tb, v, 0xff);
  else
    v = rd__expk8_neg(&tb, _mm512_sub_pd(_mm512_setzero_pd(), v));
  _mm512_storeu_pd(y, v);
}
#endif

/* rd__expk4 and rd__expk8 (and, with every lane in range, rd__expk8_mask
 * unmasked and rd__expk8_neg of -t) give expk()'s bits lane by lane:
 * random t on [-720, 0] (past the domain's end too) and on (0, RD__LSE_K]
 * (the terms above a lazy shift), the ends, -0, -inf and NaN, in every
 * lane. */
static void test_expk_forms(void **state)
{
#if defined(__x86_64__) && defined(__GNUC__)
  int has4 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  int has8 = has4 && __builtin_cpu_supports("avx512f");
  const double sp[] = { 0.0,
                        -0.0,
                        EXPK_MIN,
                        nextafter(EXPK_MIN, 0.0),
                        nextafter(EXPK_MIN, -INFINITY),
                        -INFINITY,
                        NAN,
                        -1e300,
                        -0x1p-1074,
                        -0.5 * 0.04332169878499658 };
  (void)state;
  if (!has4)
    skip();
  for (int rep = 0; rep < 200000; rep++) {
    double t[8], y[8], in[8];
    int all_in = 1;
    for (int l = 0; l < 8; l++) {
      uint64_t r = next();
      t[l] = r % 16 == 0 ? sp[(r >> 8) % (sizeof sp / sizeof sp[0])]
                         : -720.0 * (double)(r >> 11) * 0x1p-53;
      if (rep % 4 == 0)
        t[l] = -(double)(r >> 11) * 0x1p-53; /* (-1, 0] */
      if (rep % 4 == 1 && l % 2 == 0)        /* (0, RD__LSE_K] */
        t[l] = RD__LSE_K * ((double)(r >> 11) * 0x1p-53 + 0x1p-53);
      in[l] = expk(t[l]);
      all_in &= t[l] >= EXPK_MIN && t[l] <= RD__LSE_K;
    }
    expk4_of(t, y);
    expk4_of(t + 4, y + 4);
    assert_memory_equal(y, in, sizeof y);
    if (has8) {
      expk8_of(t, y, 0);
      assert_memory_equal(y, in, sizeof y);
      for (int mode = 1; all_in && mode <= 2; mode++) {
        expk8_of(t, y, mode);
        assert_memory_equal(y, in, sizeof y);
      }
    }
  }
#else
  (void)state;
  skip();
#endif
}

#define NB 24 /* blocks */

/* The scalar reference of rd__opk_lse_f32 (ops.c's lsel_block). */
static size_t ref_lse(double *s, const float *x, size_t nblocks, double m)
{
  size_t b = 0;
  for (; b < nblocks; b++) {
    for (size_t l = 0; l < L; l++) {
      double v = x[b * L + l];
      if (!(v <= m + RD__LSE_K) && v != -INFINITY)
        return b;
    }
    for (size_t l = 0; l < L; l++)
      s[l] += expk((double)x[b * L + l] - m);
  }
  return b;
}

static void check_lse(const float *x, size_t nblocks, double m)
{
  double s0[L], s1[L];
  size_t b0, b1;
  for (size_t l = 0; l < L; l++)
    s0[l] = s1[l] = (double)(l + 1) * 0.37;
  b0 = ref_lse(s0, x, nblocks, m);
  b1 = rd__opk_lse_f32(s1, (const unsigned char *)x, nblocks, m);
  assert_int_equal(b0, b1);
  assert_memory_equal(s0, s1, sizeof s0);
}

static void test_lse_f32_helper(void **state)
{
  float x[NB * L];
  (void)state;
  if (!simd())
    skip();
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form);
    for (int rep = 0; rep < 20; rep++) {
      /* elements below m = scale; expk(x - m) spans [0, 1] */
      double scale = rep % 2 ? 700.0 : 10.0;
      for (size_t i = 0; i < NB * L; i++)
        x[i] = gen(scale, rep % 3 ? 20 : 0);
      check_lse(x, NB, scale);
      check_lse(x, NB - 1, scale);
      check_lse(x, 0, scale);
      /* each stopping point: a NaN, +inf or new maximum at every index */
      for (size_t i = 0; i < NB * L; i += 7) {
        const float bad[3] = { NAN, INFINITY,
                               (float)(scale * 2 + 2 * RD__LSE_K) };
        float keep = x[i];
        x[i] = bad[i % 3];
        check_lse(x, NB, scale);
        x[i] = keep;
      }
      /* m = -inf (nothing finite yet): only all -inf blocks go */
      check_lse(x, NB, -INFINITY);
    }
    for (size_t i = 0; i < NB * L; i++)
      x[i] = -INFINITY;
    check_lse(x, NB, -INFINITY);
    check_lse(x, NB, 3.0);
    rd__opk_avx512_select(was);
  }
}

/* The scalar reference of rd__opk_lse_rec_f32 (ops.c's lsel_elem for the
 * 16 elements in order): 1, nothing changed, if one is NaN or +inf. */
static int ref_lse_rec(double *s, double *m, const float *x)
{
  for (size_t l = 0; l < L; l++)
    if (isnan(x[l]) || x[l] == INFINITY)
      return 1;
  for (size_t l = 0; l < L; l++) {
    double v = x[l];
    if (v == -INFINITY)
      continue;
    if (v > *m + RD__LSE_K) { /* the shift moves */
      double f = expk(*m - v);
      for (size_t k = 0; k < L; k++)
        s[k] *= f;
      *m = v;
    }
    s[l] += expk(v - *m);
  }
  return 0;
}

/* Returns 1 if the vector form took the block (and gave the same bits). */
static int check_lse_rec(const float *x, double m, unsigned seed)
{
  double s0[L], s1[L], m0 = m, m1 = m;
  int r0, r1;
  for (size_t l = 0; l < L; l++)
    s0[l] = s1[l] = m == -INFINITY ? 0.0 : (double)(l + seed % 7) * 0.37;
  r0 = ref_lse_rec(s0, &m0, x);
  r1 = rd__opk_lse_rec_f32(s1, &m1, (const unsigned char *)x);
  if (r1 != 0) {
    /* not taken: nothing changed (the caller goes element by element) */
    for (size_t l = 0; l < L; l++)
      s0[l] = (double)(l + seed % 7) * 0.37;
    assert_true(m1 == m || (isnan(m1) && isnan(m)));
    if (m != -INFINITY)
      assert_memory_equal(s1, s0, sizeof s0);
    return 0;
  }
  assert_int_equal(r0, 0);
  assert_memory_equal(&m0, &m1, sizeof m0);
  assert_memory_equal(s0, s1, sizeof s0);
  return 1;
}

/* Blocks holding new maxima: at every lane, several, rising runs, ties
 * with the maximum (not new), zeros of both signs (m keeps the first),
 * -inf lanes, m = -inf (the first block of a row) and NaN / +inf (not
 * taken); the AVX-512 form takes every block
 * without NaN or +inf, the 256-bit form none. */
static void test_lse_rec_helper(void **state)
{
  float x[L];
  unsigned taken = 0, cases = 0;
  (void)state;
  if (!simd())
    skip();
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form), on = rd__opk_avx512();
    for (unsigned rep = 0; rep < 4000; rep++) {
      double m = rep % 5 == 0 ? -INFINITY : 5.0;
      unsigned kind = rep % 7, special = 0;
      for (size_t l = 0; l < L; l++)
        x[l] = gen(rep % 2 ? 10.0 : 700.0, rep % 3 ? 60 : 0);
      switch (kind) {
      case 0: /* the shift moves once, at lane rep % 16 */
        x[rep % L] = (float)(m == -INFINITY ? 1.0
                                            : m + RD__LSE_K + 1.0 + rep % 3);
        break;
      case 1: /* a rising run: the shift moves at every lane */
        for (size_t l = 0; l < L; l++)
          x[l] = (float)(6.0 + (double)l * (RD__LSE_K + 0.25));
        break;
      case 2: /* moves at random lanes, ties with them after */
        for (size_t l = 0; l < L; l++)
          if (next() % 4 == 0)
            x[l] = (float)(6.0 + (RD__LSE_K + 1.0) * (double)(next() % 5));
        break;
      case 3: /* ties with m, and x = m + K exactly: the shift stays */
        for (size_t l = 0; l < L; l += 3)
          x[l] = (float)(m == -INFINITY ? -INFINITY
                         : l % 2        ? m + RD__LSE_K
                                        : m);
        break;
      case 4: /* a NaN or +inf somewhere: not taken */
        x[rep % L] = rep % 2 ? NAN : INFINITY;
        special = 1;
        break;
      case 5: /* zeros of both signs, the first of a tie kept as m */
        for (size_t l = 0; l < L; l++)
          x[l] = next() % 3 == 0 ? -INFINITY : next() % 2 ? 0.0f : -0.0f;
        if (m != -INFINITY)
          m = rep % 2 ? 0.0 : -0.0;
        break;
      default: /* all -inf but one */
        for (size_t l = 0; l < L; l++)
          x[l] = -INFINITY;
        x[rep % L] = 7.5f;
      }
      int t = check_lse_rec(x, m, rep);
      assert_int_equal(t, on && !special);
      taken += (unsigned)t;
      cases++;
    }
    rd__opk_avx512_select(was);
  }
  print_message("lse blocks with new maxima: %u of %u taken\n", taken, cases);
}

/* rd__opk_lse_run_f32 against ref_lse_rec() block after block (a block
 * without new maxima is 16 lane additions in both): rows of NB blocks from
 * m = -inf (every row's start) or a finite m, uniform data (new maxima
 * early and rare), rising data (every block), zeros of both signs, -inf,
 * one maximum far above the blocks after it (which must then be measured
 * from it, not from the m before it), elements 700 to 709 below the
 * maximum (expk's argument on both sides of -708: its 0 past the end,
 * which the common blocks must not compute unmasked), and a NaN or +inf
 * at every 5th position (where it must stop). */
static void check_lse_run(const float *x, size_t nblocks, double m)
{
  double s0[L], s1[L], m0 = m, m1 = m;
  size_t b0 = 0, b1;
  for (size_t l = 0; l < L; l++)
    s0[l] = s1[l] = m == -INFINITY ? 0.0 : (double)(l + 1) * 0.37;
  while (b0 < nblocks && ref_lse_rec(s0, &m0, x + b0 * L) == 0)
    b0++;
  b1 = rd__opk_lse_run_f32(s1, &m1, (const unsigned char *)x, nblocks);
  assert_int_equal(b0, b1);
  assert_memory_equal(&m0, &m1, sizeof m0);
  assert_memory_equal(s0, s1, sizeof s0);
}

static void test_lse_run_helper(void **state)
{
  float x[NB * L];
  (void)state;
  if (!simd() || !rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    skip();
  int was = rd__opk_avx512_select(1);
  for (int rep = 0; rep < 56; rep++) {
    for (size_t i = 0; i < NB * L; i++) {
      switch (rep % 7) {
      case 0: x[i] = gen(10.0, 0); break;
      case 6: /* around 3 + RD__LSE_K, steps of 1/16: from m = 3 the shift
               * moves exactly at the elements above 3 + RD__LSE_K */
        x[i] = (float)(3.0 + RD__LSE_K + (double)((int)(i % 5) - 2) * 0.0625);
        break;
      case 5: /* one maximum, the rest 700 to 709 below it: the lanes
               * without it sum terms near e^-700, where the 0 of expk's
               * -708 end (not garbage) shows in the bits */
        x[i] = i == 3 ? 0.0f : -700.0f - (float)(next() % 10);
        break;
      case 4: /* one new maximum, then blocks below the m it replaced */
        x[i] = i == 3 ? (float)(RD__LSE_K + 4.0) : gen(6.0, 0) - 4.0f;
        break;
      case 1: x[i] = gen(700.0, 30); break;
      case 2: x[i] = (float)(i * 0.01) + gen(0.5, 20); break;
      default: x[i] = next() % 4 == 0 ? -INFINITY : next() % 2 ? 0.0f : -0.0f;
      }
    }
    check_lse_run(x, NB, -INFINITY);
    check_lse_run(x, NB, 3.0);
    check_lse_run(x, NB - 3, -0.0);
    for (size_t i = 0; i < NB * L; i += 5) {
      float keep = x[i];
      x[i] = i % 2 ? NAN : INFINITY;
      check_lse_run(x, NB, -INFINITY);
      x[i] = keep;
    }
  }
  rd__opk_avx512_select(0);
  assert_int_equal(rd__opk_lse_run_f32((double[L]){ 0 }, (double[1]){ 0 },
                                       (const unsigned char *)x, NB),
                   0);
  rd__opk_avx512_select(was);
}

/* The float32 LogSumExp kernel's run() at every split point [0, m) then
 * [m, n), then flush, under the SIMD implementation (both forms of the
 * helpers) and the portable one: the same bits. */
static void run_split(const struct rd__kernel *k, const unsigned char *x,
                      size_t n, size_t m, unsigned char *out)
{
  union rd__lanes ln;
  memset(&ln, 0, sizeof ln); /* the engine's empty lanes */
  k->init(&ln, 1);
  k->init(out, 1);
  k->run(&ln, x, m, 0);
  k->run(&ln, x + m * 4, n - m, m);
  k->flush(&ln, out);
}

static void test_lse_f32_kernel(void **state)
{
  enum { N = 300 };
  float x[N];
  int id = rd__op_kernel_id(RD_OP_LOG_SUM_EXP, RD_FLOAT32, 0);
  const struct rd__kernel *kp = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  (void)state;
  assert_non_null(kp);
  if (!ks || !simd())
    skip();
  for (int rep = 0; rep < 6; rep++) {
    for (size_t i = 0; i < N; i++)
      x[i] = gen(rep < 3 ? 10.0 : 700.0, rep % 2 ? 30 : 0);
    if (rep == 5)
      x[200] = NAN;
    for (int form = 0; form < 2; form++) {
      int was = rd__opk_avx512_select(form);
      for (size_t m = 0; m <= N; m += (m < 40 ? 1 : 13)) {
        unsigned char a[sizeof(struct rd__acc_lse)],
          b[sizeof(struct rd__acc_lse)];
        /* run() tests the active implementation itself */
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        run_split(kp, (const unsigned char *)x, N, m, a);
        assert_int_equal(rd__kernels_select(RD__IMPL_AVX2), 0);
        run_split(ks, (const unsigned char *)x, N, m, b);
        assert_memory_equal(a, b, sizeof a);
      }
      rd__opk_avx512_select(was);
    }
  }
}

/* The scalar reference of rd__opk_arg32 (ops.c's arg32_fold blocks). */
static int32_t key32(uint32_t u)
{
  int32_t k = (int32_t)u;
  return k ^ (int32_t)((uint32_t)(k >> 31) & 0x7fffffffu);
}

static void ref_arg32(const uint32_t *x, size_t n, int is_max, int last,
                      int32_t *best, int64_t *bidx, int64_t *nidx)
{
  *best = is_max ? INT32_MIN : INT32_MAX;
  *bidx = -1;
  *nidx = -1;
  for (size_t i = 0; i < n; i++) {
    uint32_t u = x[i] == 0x80000000u ? 0 : x[i];
    int32_t k = key32(u);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      if (*nidx < 0 || last)
        *nidx = (int64_t)i;
      continue;
    }
    if (*bidx < 0 || (is_max ? k > *best : k < *best) || (last && k == *best)) {
      *best = k;
      *bidx = (int64_t)i;
    }
  }
}

/* Few distinct values (ties), both zeros, NaNs of both signs, infinities,
 * at a per-mille rate `rare`. */
static uint32_t gen_bits(unsigned rare)
{
  static const uint32_t sp[] = { 0x7fc00000u, 0xffc00001u, 0x7f800000u,
                                 0xff800000u, 0x80000000u, 0x00000000u,
                                 0x7f800001u, 0xffffffffu, 0x00000001u };
  uint64_t r = next();
  float f;
  uint32_t u;
  if ((unsigned)(r % 1000) < rare)
    return sp[(r >> 16) % (sizeof sp / sizeof sp[0])];
  f = (float)((int)((r >> 24) % 9) - 4);
  memcpy(&u, &f, sizeof u);
  return u;
}

/* rd__opk_arg32 against ref_arg32 on the n elements at x, in all four
 * modes (ArgMin/ArgMax, first/last): the indices, and the key when there
 * is a best; and rd__opk_arg_row_f32 (the one-pass row of the AVX-512
 * form): the same index, or -1 exactly when it cannot answer (a NaN, no
 * element, or the form not selected). */
static void check_arg32(const uint32_t *x, size_t n)
{
  for (int mode = 0; mode < 4; mode++) {
    int32_t b0, b1;
    int64_t i0, i1, n0, n1, ir = -2;
    int is_max = mode >> 1, last = mode & 1, rc;
    ref_arg32(x, n, is_max, last, &b0, &i0, &n0);
    rd__opk_arg32((const unsigned char *)x, n, is_max, last, &b1, &i1, &n1);
    assert_int_equal(i0, i1);
    assert_int_equal(n0, n1);
    if (i0 >= 0)
      assert_int_equal(b0, b1);
    rc = rd__opk_arg_row_f32((const unsigned char *)x, n,
                             is_max ? RD__C32_ARGMAX + last
                                    : RD__C32_ARGMIN + last,
                             &ir);
    if (rc == 0) {
      assert_true(n0 < 0 && n > 0);
      assert_int_equal(ir, i0);
    } else {
      assert_true(n == 0 || n0 >= 0 || !rd__opk_avx512());
    }
  }
}

static void test_arg32_helper(void **state)
{
  enum { N = 200 };
  uint32_t x[N + 16];
  (void)state;
  if (!simd())
    skip();
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form);
    for (int rep = 0; rep < 12; rep++) {
      unsigned rare = rep < 4 ? 0 : rep < 8 ? 100 : 1000;
      for (size_t i = 0; i < N + 16; i++)
        x[i] = gen_bits(rare);
      for (size_t off = 0; off < 3; off++)
        for (size_t n = 0; n <= N; n += n < 70 ? 1 : 11)
          check_arg32(x + off, n);
    }
    rd__opk_avx512_select(was);
  }
}

/* Runs of thousands of elements (the test above stops at 200): the best
 * late in the run, ties thousands apart, a lone NaN far in, all NaN, a
 * rising run; n at and near powers of two. */
static void test_arg32_helper_long(void **state)
{
  enum { N = 6200 };
  static const size_t ns[] = { 2047, 2048, 2049, 4095, 4113, N };
  static uint32_t x[N];
  (void)state;
  if (!simd())
    skip();
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form);
    for (int pat = 0; pat < 6; pat++) {
      for (size_t i = 0; i < N; i++) {
        float f;
        switch (pat) {
        case 0: x[i] = gen_bits(0); break;    /* ties throughout */
        case 1: x[i] = gen_bits(1); break;    /* rare NaNs */
        case 2: x[i] = gen_bits(1000); break; /* all special */
        case 3: x[i] = 0x7fc00000u; break;    /* all NaN */
        case 4:                               /* rising: best last */
          f = (float)i - 3000.0f;
          memcpy(&x[i], &f, sizeof f);
          break;
        default: /* random, NaN-free */
          f = (float)((int64_t)(next() >> 40) - (1 << 23)) * 0x1p-20f;
          memcpy(&x[i], &f, sizeof f);
          break;
        }
      }
      if (pat == 1)
        x[2048 + 5] = 0xffc00001u; /* a NaN far in */
      for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        check_arg32(x, ns[k]);
    }
    rd__opk_avx512_select(was);
  }
}

/* A float32 of magnitude at either end of the range or near 1, random
 * sign: the Prod column kernels renormalise once per four rows, which is
 * exact only while four such factors stay inside the double range. */
static float extreme_f32(uint64_t r)
{
  double m = (double)(r >> 40) * 0x1p-24 + 1.0; /* [1, 2) */
  float f;
  switch ((r >> 4) % 4) {
  case 0:
    f = (float)ldexp(m, -149 + (int)((r >> 8) % 23)); /* subnormal */
    break;
  case 1:
    f = (float)ldexp(m, 100 + (int)((r >> 8) % 27)); /* to 2^127 */
    break;
  case 2: f = (r >> 8) % 2 ? FLT_MAX : 0x1p-149f; break;
  default: f = (float)m; break;
  }
  return r % 2 ? -f : f;
}

/* cols() of float32 Prod and LogSumExp (tiles calling the helpers) under
 * the SIMD implementation, both forms, against the portable cols(): the
 * same accumulators, over column counts around the vector widths and rows
 * with zeros, infinities and NaNs in some columns; with `extreme`, Prod
 * factors at the ends of the float32 range (extreme_f32()). */
static void cols_both(int op, size_t accsz, int extreme)
{
  enum { NC = 45, NR = 9 };
  float x[NC * NR];
  unsigned char a[NC * 64], b[NC * 64];
  int id = rd__op_kernel_id(op, RD_FLOAT32, 0);
  const struct rd__kernel *kp = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  assert_non_null(kp);
  assert_true(accsz <= 64);
  if (!ks || !simd())
    skip();
  for (int rep = 0; rep < 8; rep++) {
    for (size_t i = 0; i < NC * NR; i++) {
      uint64_t r = next();
      double u = (double)(r >> 11) * 0x1p-53 + 0.5; /* [0.5, 1.5) */
      x[i] = extreme ? extreme_f32(r)
                     : (float)(op == RD_OP_PROD ? u : (u - 1.0) * 50.0);
      if (rep >= 4 && r % 40 == 0) {
        static const float sp[4] = { 0.0f, INFINITY, -INFINITY, NAN };
        x[i] = sp[(r >> 8) % 4];
      }
    }
    for (int form = 0; form < 2; form++) {
      int was = rd__opk_avx512_select(form);
      for (size_t nc = 1; nc <= NC; nc++) {
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        kp->init(a, nc);
        ks->init(b, nc);
        /* two calls: a non-empty start for the second */
        kp->cols(a, (const unsigned char *)x, nc, 3);
        kp->cols(a, (const unsigned char *)(x + 3 * nc), nc, NR - 3);
        ks->cols(b, (const unsigned char *)x, nc, 3);
        ks->cols(b, (const unsigned char *)(x + 3 * nc), nc, NR - 3);
        assert_memory_equal(a, b, nc * accsz);
      }
      rd__opk_avx512_select(was);
    }
  }
}

static void test_prod_cols(void **state)
{
  (void)state;
  cols_both(RD_OP_PROD, sizeof(struct rd__acc_prod), 0);
}

/* Regression (Prod columns renormalised per four rows): subnormal and
 * huge factors, four in a row in one column, give the per-element bits. */
static void test_prod_cols_extremes(void **state)
{
  (void)state;
  cols_both(RD_OP_PROD, sizeof(struct rd__acc_prod), 1);
}

static void test_lse_cols(void **state)
{
  (void)state;
  cols_both(RD_OP_LOG_SUM_EXP, sizeof(struct rd__acc_lse), 0);
}

/* float32 Prod run() at every split point and flush() (the lane tree's
 * first levels in vectors) under the SIMD implementation, both forms,
 * against the portable one; data near 1, some runs with zeros, infinities
 * or NaNs, and a wide range of magnitudes. */
static void test_prod_run_flush(void **state)
{
  enum { N = 150 };
  float x[N];
  int id = rd__op_kernel_id(RD_OP_PROD, RD_FLOAT32, 0);
  const struct rd__kernel *kp = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  (void)state;
  assert_non_null(kp);
  if (!ks || !simd())
    skip();
  for (int rep = 0; rep < 6; rep++) {
    for (size_t i = 0; i < N; i++) {
      uint64_t r = next();
      double u = (double)(r >> 11) * 0x1p-53 + 0.5;
      x[i] = (float)(rep < 2 ? u : ldexp(u, (int)(r % 200) - 100));
      if (r % 7 == 0)
        x[i] = -x[i];
      if (rep >= 4 && r % 50 == 0) {
        static const float sp[4] = { 0.0f, -INFINITY, NAN, -0.0f };
        x[i] = sp[(r >> 8) % 4];
      }
    }
    for (int form = 0; form < 2; form++) {
      int was = rd__opk_avx512_select(form);
      for (size_t n = 1; n <= N; n += n < 40 ? 1 : 17)
        for (size_t m = 0; m <= n; m += n < 20 ? 1 : 9) {
          unsigned char a[sizeof(struct rd__acc_prod)],
            b[sizeof(struct rd__acc_prod)];
          assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
          run_split(kp, (const unsigned char *)x, n, m, a);
          assert_int_equal(rd__kernels_select(RD__IMPL_AVX2), 0);
          run_split(ks, (const unsigned char *)x, n, m, b);
          assert_memory_equal(a, b, sizeof a);
        }
      rd__opk_avx512_select(was);
    }
  }
}

/* ------------------------------------------------------------------ */
/* Direct output of short rows (ops.c's rd__ops_rows_out)              */
/* ------------------------------------------------------------------ */

static struct rd__final final_of(int op, int dtype)
{
  struct rd__final f;
  int id = rd__op_kernel_id(op, dtype, 0);
  memset(&f, 0, sizeof f);
  f.op = op;
  f.dtype = dtype;
  f.out_dtype = dtype;
  f.row = rd__op_row(op);
  f.family = dtype == RD_FLOAT64 ? f.row->f64_family : f.row->float_family;
  f.acc_class = rd__op_kernel_impl(id, RD__IMPL_PORTABLE)->acc_class;
  return f;
}

/* The accumulator path (what the engine wrote before the direct mode) of
 * op with select_last_index `last`: per row the empty state, rows() and
 * rd__finalize(), portable; out_dtype elements at out. */
static void ref_rows_out_l(int op, int last, const float *x, size_t n,
                           size_t nrows, unsigned char *out)
{
  int id = rd__op_kernel_id(op, RD_FLOAT32, last), was = rd__kernels_active();
  const struct rd__kernel *k = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  struct rd__final f = final_of(op, RD_FLOAT32);
  f.out_dtype = rd_op_out_dtype(op, RD_FLOAT32);
  assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
  for (size_t r = 0; r < nrows; r++) {
    union {
      struct rd__acc_prod p;
      struct rd__acc_lse l;
      struct rd__acc_arg a;
    } acc;
    k->init(&acc, 1);
    k->rows(&acc, (const unsigned char *)(x + r * n), n, 1);
    assert_int_equal(
      rd__finalize(&f, &acc, out + r * rd_dtype_size(f.out_dtype), r, NULL), 0);
  }
  assert_int_equal(rd__kernels_select(was), 0);
}

/* rd__ops_rows_out of every implementation the machine has (both forms of
 * the helpers), and the engine (rd_execute, and a stream fed in pieces of
 * 29 bytes, which splits rows and elements) on shape [nrows, n], axis 1:
 * the bits of ref_rows_out_l. */
static void check_rows_out_l(int op, int last, const float *x, size_t n,
                             size_t nrows)
{
  enum { MAXR = 160 };
  unsigned char a[MAXR * 8], b[MAXR * 8];
  int id = rd__op_kernel_id(op, RD_FLOAT32, last), was = rd__kernels_active();
  struct rd__final f = final_of(op, RD_FLOAT32);
  struct rd_params p;
  struct rd_plan pl;
  struct rd_stream *s;
  int64_t shape[2] = { (int64_t)nrows, (int64_t)n }, axes[1] = { 1 };
  size_t bytes = nrows * n * 4, osz;
  f.out_dtype = rd_op_out_dtype(op, RD_FLOAT32);
  osz = rd_dtype_size(f.out_dtype);
  assert_true(nrows <= MAXR);
  ref_rows_out_l(op, last, x, n, nrows, a);
  for (int impl = RD__IMPL_PORTABLE; impl < RD__IMPL_COUNT; impl++) {
    const struct rd__kernel *k = rd__op_kernel_impl(id, impl);
    if (!k || rd__kernels_select(impl) != 0)
      continue;
    for (int form = 0; form < 2; form++) {
      int w = rd__opk_avx512_select(form);
      memset(b, 0x5a, sizeof b);
      rd__ops_rows_out(k, &f, b, (const unsigned char *)x, n, nrows);
      assert_memory_equal(a, b, nrows * osz);
      rd__opk_avx512_select(w);
    }
  }
  assert_int_equal(rd__kernels_select(was), 0);
  rd_params_init(&p);
  p.op = op;
  p.dtype = RD_FLOAT32;
  p.rank = 2;
  p.shape = shape;
  if (op == RD_OP_ARGMAX || op == RD_OP_ARGMIN) {
    p.axis = 1;
    p.select_last_index = last;
  } else {
    p.axes = axes;
    p.naxes = 1;
  }
  assert_int_equal(rd_plan_init(&pl, &p, NULL), 0);
  memset(b, 0x5a, sizeof b);
  assert_int_equal(rd_execute(&pl, x, b, NULL), 0);
  assert_memory_equal(a, b, nrows * osz);
  memset(b, 0x5a, sizeof b);
  assert_int_equal(rd_stream_create(&pl, &s), 0);
  for (size_t at = 0; at < bytes; at += 29)
    assert_int_equal(rd_stream_feed(s, (const unsigned char *)x + at,
                                    bytes - at < 29 ? bytes - at : 29, NULL),
                     0);
  assert_int_equal(rd_stream_finish(s, b, NULL), 0);
  rd_stream_destroy(s);
  assert_memory_equal(a, b, nrows * osz);
}

/* The float32 outputs of ops with one output type (Prod, LogSumExp). */
static void ref_rows_out(int op, const float *x, size_t n, size_t nrows,
                         float *out)
{
  ref_rows_out_l(op, 0, x, n, nrows, (unsigned char *)out);
}

static void check_rows_out(int op, const float *x, size_t n, size_t nrows)
{
  check_rows_out_l(op, 0, x, n, nrows);
}

/* Prod data: mode 0 near 1 (the benchmark's), 1 magnitudes 2^-20 .. 2^20
 * per element, 2 every element of a row near 2^b for a row exponent b
 * (products near and beyond the float32 range, the result's exponent
 * around the vector path's clamp), 3 the same with zeros, -0, infinities,
 * NaNs and subnormals, 4 one zero in each row of magnitudes near 2^100
 * (the others' product far above 2^1022: a zero not seen as one would
 * leave a finite nonzero result). */
static void gen_prod(float *x, size_t n, size_t nrows, int mode)
{
  static const int base[] = {
    -20, -19, -10, -9, -8, -1, 0, 1, 8, 9, 10, 19, 20
  };
  static const float sp[] = { 0.0f, -0.0f,     INFINITY,  -INFINITY,
                              NAN,  0x1p-140f, -0x1p-149f };
  for (size_t r = 0; r < nrows; r++) {
    int b = base[next() % (sizeof base / sizeof base[0])];
    for (size_t i = 0; i < n; i++) {
      uint64_t q = next();
      double u = (double)(q >> 11) * 0x1p-53 + 0.5; /* [0.5, 1.5) */
      if (mode == 1)
        u = ldexp(u, (int)(q % 41) - 20);
      else if (mode >= 2)
        u = ldexp(u, b);
      if (q % 3 == 0)
        u = -u;
      x[r * n + i] = (float)u;
      if (mode == 3 && q % 61 == 0)
        x[r * n + i] = sp[(q >> 8) % (sizeof sp / sizeof sp[0])];
      if (mode == 4)
        x[r * n + i] = (float)ldexp(u, 100);
    }
    if (mode == 4)
      x[r * n + next() % n] = r % 2 ? -0.0f : 0.0f;
  }
}

static void test_prod_rows_out(void **state)
{
  enum { NR = 75 };
  float x[NR * 40], a[NR], c[NR];
  (void)state;
  for (int mode = 0; mode < 5; mode++)
    for (size_t n = 1; n <= 40; n += n < 18 ? 1 : 11) {
      gen_prod(x, n, NR, mode);
      check_rows_out(RD_OP_PROD, x, n, NR);
      check_rows_out(RD_OP_PROD, x, n, 8);
      check_rows_out(RD_OP_PROD, x, n, 3);
    }
  /* The first tree levels at their ends (prod_merge8_lvl2 takes level 1
   * unnormalised): lanes 0, 4, 8, 12 near 2^-126 with full mantissas (so
   * level 2 has a nonzero lo, near 2^-504 - 2^-106), or in odd rows
   * 2^-149 or 2^-148 (their level-2 product near 2^-596); lanes 1, 5, 9,
   * 13 near 2^127 (2^508); the others near 2^100 and 2^-101 or 2^-78.
   * A row's product is near 1, inside the float32 range, so its output
   * shows the exponent and the high part at these ends (an error in lo,
   * 2^-53 of the product, would rarely cross a float32 rounding). */
  for (size_t r = 0; r < NR; r++)
    for (size_t i = 0; i < 16; i++) {
      static const int ex4[2][4] = { { -126, 127, 100, -101 },
                                     { -149, 127, 100, -78 } };
      uint64_t q = next();
      double u = 1.0 + (double)(q >> 11) * 0x1p-53; /* [1, 2) */
      x[r * 16 + i] = (float)ldexp(q % 2 ? -u : u, ex4[r % 2][i % 4]);
    }
  check_rows_out(RD_OP_PROD, x, 16, NR);
  ref_rows_out(RD_OP_PROD, x, 16, NR, a);
  for (size_t r = 0; r < NR; r++)
    assert_true(isnormal(a[r]));
  /* negative control: one element one ulp up changes some row's bits, so
   * the comparisons above see single-ulp differences */
  gen_prod(x, 16, NR, 0);
  ref_rows_out(RD_OP_PROD, x, 16, NR, a);
  for (size_t r = 0; r < NR; r++) {
    uint32_t u;
    memcpy(&u, &x[r * 16 + 5], 4);
    u++;
    memcpy(&x[r * 16 + 5], &u, 4);
  }
  ref_rows_out(RD_OP_PROD, x, 16, NR, c);
  assert_true(memcmp(a, c, sizeof a) != 0);
}

/* float32 Prod rows() into accumulators (ops.c's prodl_rows, whose rows
 * of whole blocks go through rd__opk_prod_rows_acc_f32 in the AVX-512
 * form): 75 rows (two whole chunks of 32 and a part) of 16, 32 and 256
 * elements in every gen_prod() mode, so rows holding a zero, inf or NaN
 * fall anywhere in a chunk, from accumulators already holding a row
 * (their exponent and sign carried), against the portable kernel; then
 * the helper itself: the rows it reports done and where it stops. */
static void test_prod_rows_acc(void **state)
{
  enum { NR = 75, NMAX = 256 };
  static const size_t ns[] = { 16, 32, 256 };
  static float x[NR * NMAX], y[NR * NMAX];
  static struct rd__acc_prod ap[NR], as[NR];
  int id = rd__op_kernel_id(RD_OP_PROD, RD_FLOAT32, 0);
  const struct rd__kernel *kp = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  (void)state;
  if (!ks || !simd() || !rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    skip();
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form);
    for (int mode = 0; mode < 5; mode++)
      for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        size_t n = ns[k];
        gen_prod(x, n, NR, mode);
        gen_prod(y, n, NR, mode == 3 ? 3 : 1);
        kp->init(ap, NR);
        ks->init(as, NR);
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        kp->rows(ap, (const unsigned char *)y, n, NR);
        kp->rows(ap, (const unsigned char *)x, n, NR);
        assert_int_equal(rd__kernels_select(RD__IMPL_AVX2), 0);
        ks->rows(as, (const unsigned char *)y, n, NR);
        ks->rows(as, (const unsigned char *)x, n, NR);
        assert_memory_equal(ap, as, sizeof ap);
      }
    rd__opk_avx512_select(was);
  }
  /* the helper stops before the first row holding a zero, inf or NaN and
   * reports the rows before it; subnormals are ordinary */
  {
    static const float sp[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN };
    double hi[8], lo[8];
    int64_t e[8];
    uint32_t neg[8];
    int was = rd__opk_avx512_select(1);
    gen_prod(x, 32, 8, 1);
    x[5 * 32 + 31] = 0x1p-149f;
    assert_int_equal(rd__opk_prod_rows_acc_f32(hi, lo, e, neg,
                                               (const unsigned char *)x, 2, 8),
                     8);
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
      size_t at = 3 * 32 + 7 * i;
      float keep = x[at];
      x[at] = sp[i];
      assert_int_equal(rd__opk_prod_rows_acc_f32(hi, lo, e, neg,
                                                 (const unsigned char *)x, 2,
                                                 8),
                       3);
      x[at] = keep;
    }
    rd__opk_avx512_select(was);
  }
}

/* LogSumExp data: mode 0 uniform in [-10, 10) (the benchmark's), 1 in
 * [-700, 700) with some elements 1000 below the rest (expk's argument
 * below -708), 2 the same as 0 with NaNs, infinities of both signs, -0,
 * subnormals and some rows all -inf, 3 as 0 with moves of the shift
 * (elements 17 above the shift) at one position or at random ones, or at
 * every element, and an element exactly RD__LSE_K above the shift (no
 * move). */
static void gen_lse(float *x, size_t n, size_t nrows, int mode)
{
  static const float sp[] = { NAN, INFINITY, -INFINITY, -0.0f, 0x1p-149f };
  for (size_t r = 0; r < nrows; r++) {
    int allninf = mode == 2 && next() % 9 == 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t q = next();
      double u = (double)(q >> 11) * 0x1p-52 - 1.0; /* [-1, 1) */
      x[r * n + i] = (float)(u * (mode == 1 ? 700.0 : 10.0));
      if (mode == 1 && q % 5 == 0)
        x[r * n + i] -= 1000.0f;
      if (mode == 2 && q % 29 == 0)
        x[r * n + i] = sp[(q >> 8) % (sizeof sp / sizeof sp[0])];
      if (allninf)
        x[r * n + i] = -INFINITY;
    }
    if (mode == 3) { /* an integer x_0, so that m + RD__LSE_K is exact */
      uint64_t at = r % 3 ? next() : (uint64_t)1 << (r / 3 % n);
      float m = x[r * n] = floorf(x[r * n]);
      for (size_t i = 1; i < n; i++)
        if (r % 7 == 6 || (at >> i & 1))
          x[r * n + i] = m = m + (float)(RD__LSE_K + 1.0);
        else if (i == r % 5 + 1)
          x[r * n + i] = m + (float)RD__LSE_K;
    }
  }
}

static void test_lse_rows_out(void **state)
{
  enum { NR = 75 };
  float x[NR * 40];
  (void)state;
  for (int mode = 0; mode < 4; mode++)
    for (int rep = 0; rep < 3; rep++)
      for (size_t n = 1; n <= 40; n += n < 18 ? 1 : 11) {
        gen_lse(x, n, NR, mode);
        check_rows_out(RD_OP_LOG_SUM_EXP, x, n, NR);
        check_rows_out(RD_OP_LOG_SUM_EXP, x, n, 9);
      }
}

/* Ties: rows of few distinct values (the maximum repeated, equal to m
 * exactly: no rescaling), all-equal rows, and rows whose result is near 0
 * (every element -log(n) rounded to float32: m + log1p(sum - 1) cancels,
 * so the vector bound cannot pin the float32 and libm's log1p decides):
 * the same bits, and (negative control) the vector helper does leave the
 * cancelling rows to the accumulator path while it keeps ordinary rows. */
static void test_lse_rows_out_ties(void **state)
{
  enum { NR = 64 };
  float x[NR * 16], out[NR];
  unsigned char redo[NR];
  (void)state;
  for (size_t n = 1; n <= 16; n++) {
    for (size_t i = 0; i < NR * n; i++)
      x[i] = (float)((int)(next() % 5) - 2) * 0.75f;
    check_rows_out(RD_OP_LOG_SUM_EXP, x, n, NR);
    for (size_t r = 0; r < NR; r++)
      for (size_t i = 0; i < n; i++)
        x[r * n + i] = r % 2 ? (float)-log((double)n) : (float)r - 30.0f;
    check_rows_out(RD_OP_LOG_SUM_EXP, x, n, NR);
  }
  if (!rd__kernel_impl(RD__K_F32, RD__IMPL_AVX2))
    return;
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form);
    size_t nredo[2] = { 0, 0 };
    for (size_t r = 0; r < NR; r++)
      for (size_t i = 0; i < 16; i++)
        x[r * 16 + i] = r % 2 ? (float)-log(16.0)
                              : (float)((double)(next() >> 11) * 0x1p-50 - 4.0);
    rd__opk_lse_rows_f32(out, redo, (const unsigned char *)x, 16, NR);
    for (size_t r = 0; r < NR; r++)
      nredo[r % 2] += redo[r];
    assert_int_equal(nredo[1], NR / 2);
    assert_true(nredo[0] <= 2);
    rd__opk_avx512_select(was);
  }
}

/* The AVX-512 form's fast step clamps t = x - x_0 to [EXPK_MIN, 100] and
 * takes a row again exactly only when its sum is NaN or above 2^90: rows
 * with an element 1000 below x_0 or a -inf (not first), whose terms the
 * clamp makes expk(-708) instead of +0, stay on the fast path (few rows
 * redone) and give the accumulator path's bits; rows of 16 elements all
 * 62 above x_0 but the first (no move, a sum near 2^93) and rows with one
 * element 1000 or 1e30 above x_0 (clamped, then taken again) too. */
static void test_lse_rows_out_clamp(void **state)
{
  enum { NR = 64 };
  float x[NR * 16], out[NR];
  unsigned char redo[NR];
  size_t nredo = 0;
  (void)state;
  gen_lse(x, 16, NR, 0);
  for (size_t r = 0; r < NR; r++) {
    x[r * 16 + 1 + r % 15] = x[r * 16] - 1000.0f;
    x[r * 16 + 1 + (r + 7) % 15] = -INFINITY;
  }
  check_rows_out(RD_OP_LOG_SUM_EXP, x, 16, NR);
  if (simd() && rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512)) {
    int was = rd__opk_avx512_select(1);
    rd__opk_lse_rows_f32(out, redo, (const unsigned char *)x, 16, NR);
    for (size_t r = 0; r < NR; r++)
      nredo += redo[r];
    assert_true(nredo <= 2);
    rd__opk_avx512_select(was);
  }
  for (size_t r = 0; r < NR; r++)
    for (size_t i = 1; i < 16; i++)
      x[r * 16 + i] = r % 3 == 0    ? x[r * 16] + 62.0f
                      : i == r % 15 ? x[r * 16] + (r % 3 == 1 ? 1000.0f : 1e30f)
                                    : x[r * 16 + i];
  check_rows_out(RD_OP_LOG_SUM_EXP, x, 16, NR);
}

/* ------------------------------------------------------------------ */
/* float32 Max/Min/ArgMax/ArgMin of short rows (kernels_keyrows.c)     */
/* ------------------------------------------------------------------ */

static const struct {
  int op, last;
} key_rows_ops[] = {
  { RD_OP_MAX, 0 },    { RD_OP_MIN, 0 },    { RD_OP_ARGMAX, 0 },
  { RD_OP_ARGMAX, 1 }, { RD_OP_ARGMIN, 0 }, { RD_OP_ARGMIN, 1 },
};

/* Key data: mode 0 uniform in [-10, 10) (the benchmark's); 1 few distinct
 * values (ties: first and last index differ) with -0 and +0 among them;
 * 2 the same as 0 with NaNs of both signs, infinities, -0, +0 and
 * subnormals, some rows all -inf or all +inf, some all NaN. */
static void gen_key(float *x, size_t n, size_t nrows, int mode)
{
  static const float sp[] = {
    NAN,  -NAN,      INFINITY,   -INFINITY, -0.0f,
    0.0f, 0x1p-149f, -0x1p-149f, FLT_MAX,   -FLT_MAX
  };
  static const float few[] = { -0.0f, 0.0f, 1.5f, -1.5f, -0.0f };
  for (size_t r = 0; r < nrows; r++) {
    uint64_t rq = next();
    for (size_t i = 0; i < n; i++) {
      uint64_t q = next();
      float v = (float)((double)(q >> 11) * 0x1p-52 - 1.0) * 10.0f;
      if (mode == 1)
        v = few[q % 5];
      if (mode == 2 && q % 23 == 0)
        v = sp[(q >> 8) % (sizeof sp / sizeof sp[0])];
      if (mode == 2 && rq % 11 < 3)
        v = rq % 11 == 0 ? -INFINITY : rq % 11 == 1 ? INFINITY : NAN;
      x[r * n + i] = v;
    }
  }
}

static void test_key_rows_out(void **state)
{
  enum { NR = 150 };
  static float x[NR * 40];
  static const size_t longn[] = { 63, 64, 65, 96, 112, 127, 256, 257, 1030 };
  (void)state;
  /* longer rows (one at a time in the AVX-512 form): whole steps of 32
   * then none, one or two steps of 16, the last masked; first and last
   * ties far apart */
  for (size_t o = 0; o < sizeof key_rows_ops / sizeof key_rows_ops[0]; o++)
    for (int mode = 0; mode < 3; mode++)
      for (size_t i = 0; i < sizeof longn / sizeof longn[0]; i++) {
        gen_key(x, longn[i], 5, mode);
        check_rows_out_l(key_rows_ops[o].op, key_rows_ops[o].last, x, longn[i],
                         5);
      }
  for (size_t o = 0; o < sizeof key_rows_ops / sizeof key_rows_ops[0]; o++)
    for (int mode = 0; mode < 3; mode++)
      for (size_t n = 1; n <= 40; n += n < 17 ? 1 : 11) {
        gen_key(x, n, NR, mode);
        check_rows_out_l(key_rows_ops[o].op, key_rows_ops[o].last, x, n, NR);
        check_rows_out_l(key_rows_ops[o].op, key_rows_ops[o].last, x, n, 17);
        check_rows_out_l(key_rows_ops[o].op, key_rows_ops[o].last, x, n, 5);
      }
}

/* Outputs of one call past DOUT_STREAM_BYTES (ops.c, 256 KiB) go out by
 * streaming stores: 70,000 rows of n (16, 5) with NaN rows and special
 * values (280,000 bytes of Max/Min outputs, 560,000 of Arg ones), the
 * output 64-byte aligned (streamed) and not (stored as before), through
 * rd__ops_rows_out with the AVX-512 helpers: the bits of the accumulator
 * path. */
static void test_key_rows_streamed(void **state)
{
  enum { NR = 70000 };
  static float x[NR * 16];
  static unsigned char a[NR * 8 + 64],
    b[NR * 8 + 64] __attribute__((aligned(64)));
  (void)state;
  if (!rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    skip();
  int was = rd__kernels_active(), w = rd__opk_avx512_select(1);
  assert_int_equal(rd__kernels_select(RD__IMPL_AVX512), 0);
  for (size_t o = 0; o < sizeof key_rows_ops / sizeof key_rows_ops[0]; o++) {
    int op = key_rows_ops[o].op, last = key_rows_ops[o].last;
    int id = rd__op_kernel_id(op, RD_FLOAT32, last);
    const struct rd__kernel *k = rd__op_kernel_impl(id, RD__IMPL_AVX512);
    struct rd__final f = final_of(op, RD_FLOAT32);
    size_t osz;
    f.out_dtype = rd_op_out_dtype(op, RD_FLOAT32);
    osz = rd_dtype_size(f.out_dtype);
    for (size_t n = 5; n <= 16; n += 11) {
      gen_key(x, n, NR, 2);
      ref_rows_out_l(op, last, x, n, NR, a);
      for (size_t off = 0; off <= 8; off += 8) {
        memset(b, 0x5a, sizeof b);
        rd__ops_rows_out(k, &f, b + off, (const unsigned char *)x, n, NR);
        assert_memory_equal(a, b + off, NR * osz);
      }
    }
  }
  rd__opk_avx512_select(w);
  assert_int_equal(rd__kernels_select(was), 0);
}

/* The helper itself, AVX-512 form: rows without NaN are written (redo 0)
 * and hold the reference bits, rows with one NaN anywhere are left
 * (redo 1), and so are the rows after the last whole group of 16; and a
 * negative control: -0 and +0 swapped in a Max row changes its output
 * bits, so the comparison sees the sign of zero. */
static void test_key_rows_helper(void **state)
{
  enum { NR = 37 };
  float x[NR * 16];
  unsigned char out[NR * 8] __attribute__((aligned(64))), ref[NR * 8], redo[NR];
  (void)state;
  if (!rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    skip();
  int was = rd__opk_avx512_select(1);
  for (size_t o = 0; o < sizeof key_rows_ops / sizeof key_rows_ops[0]; o++) {
    int op = key_rows_ops[o].op, last = key_rows_ops[o].last;
    int mode = op == RD_OP_MAX      ? RD__C32_MAX
               : op == RD_OP_MIN    ? RD__C32_MIN
               : op == RD_OP_ARGMAX ? RD__C32_ARGMAX + last
                                    : RD__C32_ARGMIN + last;
    size_t osz = rd_dtype_size(rd_op_out_dtype(op, RD_FLOAT32));
    gen_key(x, 16, NR, 1);
    x[3 * 16 + 7] = NAN;    /* row 3 */
    x[20 * 16 + 15] = -NAN; /* row 20, the last lane */
    ref_rows_out_l(op, last, x, 16, NR, ref);
    for (int stream = 0; stream < 2; stream++) {
      memset(out, 0x5a, sizeof out);
      rd__opk_key_rows_f32(out, redo, (const unsigned char *)x, 16, NR, mode,
                           stream);
      for (size_t r = 0; r < NR; r++) {
        int want = r == 3 || r == 20 || r >= 32;
        assert_int_equal(redo[r], want);
        if (!want)
          assert_memory_equal(out + r * osz, ref + r * osz, osz);
      }
    }
  }
  for (size_t i = 0; i < 16; i++)
    x[i] = i == 4 ? -0.0f : i == 9 ? 0.0f : -1.0f;
  ref_rows_out_l(RD_OP_MAX, 0, x, 16, 1, ref);
  x[4] = 0.0f;
  x[9] = -0.0f;
  ref_rows_out_l(RD_OP_MAX, 0, x, 16, 1, out);
  assert_memory_equal(ref, out, 4); /* Max of {-0, +0} is +0 either way */
  x[9] = -0.0f;
  x[4] = -0.0f;
  ref_rows_out_l(RD_OP_MAX, 0, x, 16, 1, out);
  assert_true(memcmp(ref, out, 4) != 0);
  rd__opk_avx512_select(was);
}

/* The float32 Max/Min/Arg cols() of the active implementation (AVX-512
 * columns 16 per vector, then AVX2 8, then scalar; both helper forms)
 * against the portable one: the same accumulator bytes, over column counts
 * around the vector widths, the 1024-column tile and the widest whole rows
 * read one at a time (KC_ONE_N, 2048), and row counts 1-5, 9, 13, 17 (the
 * eight-row steps and the rows after them), with ties, -0/+0 and NaNs
 * (first and last NaN rows differ). */
static void test_key_cols(void **state)
{
  static const size_t ncs[] = { 1,    15,   16,   17,   24,   31,  40,
                                1023, 1024, 1040, 2048, 2064, 2065 };
  enum { MAXC = 2065, MAXR = 17 };
  static float x[MAXC * MAXR];
  static struct rd__acc_arg a[MAXC], b[MAXC];
  const int was = rd__kernels_active();
  (void)state;
  for (size_t o = 0; o < sizeof key_rows_ops / sizeof key_rows_ops[0]; o++) {
    int op = key_rows_ops[o].op, last = key_rows_ops[o].last;
    int id = rd__op_kernel_id(op, RD_FLOAT32, last);
    const struct rd__kernel *kp = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
    const struct rd__kernel *ks = rd__op_kernel_impl(id, was);
    assert_non_null(kp);
    assert_non_null(ks);
    for (int mode = 0; mode < 3; mode++)
      for (size_t c = 0; c < sizeof ncs / sizeof ncs[0]; c++)
        for (size_t nr = 1; nr <= MAXR; nr += nr < 5 ? 1 : 4) {
          size_t nc = ncs[c];
          gen_key(x, nc, nr, mode);
          assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
          kp->init(a, nc);
          kp->cols(a, (const unsigned char *)x, nc, nr);
          assert_int_equal(rd__kernels_select(was), 0);
          for (int form = 0; form < 2; form++) {
            int w = rd__opk_avx512_select(form);
            ks->init(b, nc);
            ks->cols(b, (const unsigned char *)x, nc, nr);
            if (memcmp(a, b, nc * ks->acc_size) != 0)
              fail_msg("%s last %d: cols() of %zu x %zu (mode %d, form %d) "
                       "differs from the portable kernel",
                       rd_op_name(op), last, nr, nc, mode, form);
            rd__opk_avx512_select(w);
          }
        }
  }
}

/* rd__opk_prod_run_f32 (both forms) against kernels_avx2.c's
 * rd__avx2_prod_f32: the same lanes, exponents, sign parity and stopping
 * block, over runs of 0..40 blocks with magnitudes 2^-60 .. 2^60 (the
 * exponent sums), and with one zero, -0, inf, NaN or subnormal placed at
 * every position of a 12-block run (the stop at its block; subnormals are
 * ordinary). */
static void test_prod_run(void **state)
{
  enum { RB = 40 };
  static const float sp[] = {
    0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f
  };
  float x[RB * 16];
  (void)state;
  if (!simd() && !rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    skip();
  for (int form = 0; form < 2; form++) {
    int was = rd__opk_avx512_select(form);
    for (int rep = 0; rep < 3 * 7; rep++) {
      size_t nb = (size_t)rep * 6 < RB ? (size_t)rep * 6 : RB, at = SIZE_MAX;
      double m0[16], m1[16];
      int64_t e0[16], e1[16];
      uint32_t n0 = (uint32_t)rep & 1, n1 = n0;
      for (size_t i = 0; i < RB * 16; i++) {
        uint64_t q = next();
        double u = ldexp((double)(q >> 11) * 0x1p-53 + 0.5,
                         (int)(q % 121) - 60);
        x[i] = (float)(q & 1 ? -u : u);
      }
      if (rep >= 7) { /* a special value somewhere in the first 12 blocks */
        at = next() % (12 * 16);
        x[at] = sp[rep % 6];
        nb = 12;
      }
      for (int l = 0; l < 16; l++) {
        m0[l] = m1[l] = 0.5 + (double)l / 64;
        e0[l] = e1[l] = (int64_t)l * 3 - 20;
      }
      size_t b0 = rd__avx2_prod_f32(m0, e0, (const unsigned char *)x, nb, &n0);
      size_t b1 = rd__opk_prod_run_f32(m1, e1, (const unsigned char *)x, nb,
                                       &n1);
      assert_int_equal(b0, b1);
      if (at != SIZE_MAX && x[at] != 0x1p-149f)
        assert_int_equal(b1, at / 16);
      assert_memory_equal(m0, m1, sizeof m0);
      assert_memory_equal(e0, e1, sizeof e0);
      assert_int_equal(n0, n1);
    }
    /* the ends of the float32 range, four blocks to a renormalisation in
     * the AVX-512 form (pl16_block4): all 2^-149, all FLT_MAX, and either
     * at random, from mantissas near 0.5 and near 1 */
    for (int mode = 0; mode < 3; mode++) {
      double m0[16], m1[16];
      int64_t e0[16], e1[16];
      uint32_t n0 = 0, n1 = 0;
      for (size_t i = 0; i < RB * 16; i++) {
        uint64_t q = next();
        int big = mode == 2 ? (int)(q & 1) : mode;
        x[i] = big ? (q & 2 ? -FLT_MAX : FLT_MAX) : 0x1p-149f;
      }
      for (int l = 0; l < 16; l++) {
        m0[l] = m1[l] = l % 2 ? 0.5 : 1.0 - 0x1p-53;
        e0[l] = e1[l] = 0;
      }
      assert_int_equal(rd__avx2_prod_f32(m0, e0, (const unsigned char *)x, RB,
                                         &n0),
                       RB);
      assert_int_equal(rd__opk_prod_run_f32(m1, e1, (const unsigned char *)x,
                                            RB, &n1),
                       RB);
      assert_memory_equal(m0, m1, sizeof m0);
      assert_memory_equal(e0, e1, sizeof e0);
      assert_int_equal(n0, n1);
    }
    rd__opk_avx512_select(was);
  }
}

/* rd__opk_prod_cols4_f32 against four rows of rd__opk_prod_cols_f32 up to
 * the first group with a special value in any of the four rows (a zero,
 * -0, inf or NaN at every position in turn), both forms; then the float32
 * Prod cols() of the SIMD implementation (four rows at a time, then row by
 * row) against the portable one over row counts 1-13 and column counts
 * around the vector widths and across a tile. */
static void prod_cols_data(float *x, size_t count)
{
  for (size_t i = 0; i < count; i++) {
    uint64_t r = next();
    double u = (double)(r >> 11) * 0x1p-53 + 0.5;
    x[i] = (float)(r % 3 ? u : -ldexp(u, (int)(r % 60) - 30));
  }
}

/* cols() of op's float32 kernel under the SIMD implementation, both forms,
 * against the portable one, over column counts 1..45 and 1100 and 1..13
 * rows, taken twice (the second time from a started state): data from
 * fill,
 * a special value sp[nc % nsp] amid every third shape, and (start) the
 * same accumulators changed before the rows in both. */
static void cols_shapes(int op, size_t accsz, void (*fill)(float *, size_t),
                        const float *sp, size_t nsp,
                        void (*start)(unsigned char *, size_t))
{
  enum { BIG = 1100 };
  static float x[13 * BIG];
  static unsigned char a[BIG * 64], b[BIG * 64];
  int id = rd__op_kernel_id(op, RD_FLOAT32, 0), was = rd__kernels_active();
  const struct rd__kernel *kp = rd__op_kernel_impl(id, RD__IMPL_PORTABLE);
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  assert_true(accsz <= 64 && kp && ks);
  for (int form = 0; form < 2; form++) {
    int w = rd__opk_avx512_select(form);
    for (size_t nc = 1; nc <= BIG; nc += nc < 45 ? 1 : 1055)
      for (size_t nr = 1; nr <= 13; nr += nc < 45 ? 1 : 4) {
        fill(x, nr * nc);
        if (nc % 3 == 0)
          x[(nr * nc) / 2] = sp[nc % nsp];
        memset(a, 0, nc * accsz);
        memset(b, 0, nc * accsz);
        kp->init(a, nc);
        ks->init(b, nc);
        if (start) {
          start(a, nc);
          start(b, nc);
        }
        assert_int_equal(rd__kernels_select(RD__IMPL_PORTABLE), 0);
        kp->cols(a, (const unsigned char *)x, nc, nr);
        kp->cols(a, (const unsigned char *)x, nc, nr);
        assert_int_equal(rd__kernels_select(RD__IMPL_AVX2), 0);
        ks->cols(b, (const unsigned char *)x, nc, nr);
        ks->cols(b, (const unsigned char *)x, nc, nr);
        assert_memory_equal(a, b, nc * accsz);
      }
    rd__opk_avx512_select(w);
  }
  assert_int_equal(rd__kernels_select(was), 0);
}

static void test_prod_cols4(void **state)
{
  enum { NV = 11, NC = 4 * NV };
  static float x[4 * NC];
  static const float sp[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN };
  int id = rd__op_kernel_id(RD_OP_PROD, RD_FLOAT32, 0), was;
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  (void)state;
  if (!ks)
    skip();
  for (int form = 0; form < 2; form++) {
    was = rd__opk_avx512_select(form);
    for (size_t at = 0; at <= 4 * NC; at += 3) {
      double h0[NC], l0[NC], h1[NC], l1[NC];
      int64_t e0[NC], n0[NC], e1[NC], n1[NC];
      size_t stop = NV, g0, g1;
      prod_cols_data(x, 4 * NC);
      if (at < 4 * NC)
        x[at] = sp[at % 5];
      for (size_t j = 0; j < NC; j++) {
        h0[j] = h1[j] = 0.5 + (double)j / 128;
        l0[j] = l1[j] = (double)j * 0x1p-60;
        e0[j] = e1[j] = (int64_t)j - 20;
        n0[j] = n1[j] = (int64_t)(j & 1);
      }
      if (at < 4 * NC)
        stop = (at % NC) / 4;
      for (size_t k = 0; k < 4; k++)
        assert_int_equal(
          rd__opk_prod_cols_f32(h0, l0, e0, n0,
                                (const unsigned char *)(x + k * NC), stop),
          stop);
      g0 = stop;
      g1 = rd__opk_prod_cols4_f32(h1, l1, e1, n1, (const unsigned char *)x,
                                  NC * 4, NV);
      assert_int_equal(g0, g1);
      assert_memory_equal(h0, h1, sizeof h0);
      assert_memory_equal(l0, l1, sizeof l0);
      assert_memory_equal(e0, e1, sizeof e0);
      assert_memory_equal(n0, n1, sizeof n0);
    }
    rd__opk_avx512_select(was);
  }
  cols_shapes(RD_OP_PROD, sizeof(struct rd__acc_prod), prod_cols_data, sp, 5,
              NULL);
}

/* float32 LogSumExp column data: mostly uniform in [-10, 10) (the shift
 * stays), some elements 20 to 40 higher (the shift moves, also inside a
 * block of four rows), some 750 lower (a term of +0). */
static void lse_cols_data(float *x, size_t count)
{
  for (size_t i = 0; i < count; i++) {
    uint64_t r = next();
    double u = (double)(r >> 11) * 0x1p-53 * 20.0 - 10.0;
    x[i] = (float)(r % 23 == 0 ? u + 30.0 : r % 29 == 0 ? u - 750.0 : u);
  }
}

/* Every third column of n from a started state whose lo is not 0. */
static void lse_cols_start(unsigned char *acc, size_t n)
{
  for (size_t j = 1; j < n; j += 3) {
    struct rd__acc_lse st = { (double)(j % 11) - 5.0, 1.5, (double)j * 0x1p-60,
                              0, 0 };
    memcpy(acc + j * sizeof st, &st, sizeof st);
  }
}

/* float32 LogSumExp columns four rows at a time (rd__opk_lse_cols4_f32)
 * against the one-row form four times over the groups it did, with a NaN
 * or an infinity at every position of four rows of 11 pairs of groups
 * (it stops at the pair holding it), from states with empty columns,
 * shifts far below and above the data, and lo not 0; then cols() of the
 * SIMD implementation (tiles of four rows, the rest one at a time)
 * against the portable one over column counts 1..45 and 1100 and 1..13
 * rows, some columns starting from a state whose lo is not 0. */
static void test_lse_cols4(void **state)
{
  enum { NV = 22, NC = 4 * NV };
  static float x[4 * NC];
  static const float sp[] = { INFINITY, -INFINITY, NAN };
  int id = rd__op_kernel_id(RD_OP_LOG_SUM_EXP, RD_FLOAT32, 0), was;
  const struct rd__kernel *ks = rd__op_kernel_impl(id, RD__IMPL_AVX2);
  (void)state;
  if (!ks)
    skip();
  was = rd__opk_avx512_select(1);
  if (rd__opk_avx512()) {
    for (size_t at = 0; at <= 4 * NC; at += 3) {
      double m0[NC], h0[NC], l0[NC], m1[NC], h1[NC], l1[NC];
      size_t stop = NV, g1;
      lse_cols_data(x, 4 * NC);
      if (at < 4 * NC)
        x[at] = sp[at % 3];
      for (size_t j = 0; j < NC; j++) {
        m0[j] = m1[j] = j % 7 == 0   ? -INFINITY
                        : j % 7 == 1 ? -30.0
                        : j % 7 == 2 ? 25.0
                                     : (double)j / 8 - 5;
        h0[j] = h1[j] = m0[j] == -INFINITY ? 0.0 : 1.0 + (double)j / 16;
        l0[j] = l1[j] = m0[j] == -INFINITY ? 0.0 : (double)j * 0x1p-60;
      }
      if (at < 4 * NC)
        stop = (at % NC) / 8 * 2; /* the pair of groups holding it */
      for (size_t k = 0; k < 4; k++)
        assert_int_equal(
          rd__opk_lse_cols_f32(m0, h0, l0, (const unsigned char *)(x + k * NC),
                               stop),
          stop);
      g1 = rd__opk_lse_cols4_f32(m1, h1, l1, (const unsigned char *)x, NC * 4,
                                 NV);
      assert_int_equal(g1, stop);
      assert_memory_equal(m0, m1, sizeof m0);
      assert_memory_equal(h0, h1, sizeof h0);
      assert_memory_equal(l0, l1, sizeof l0);
    }
  } else {
    printf("test_opkernels: no AVX-512 form: the four-row columns skipped\n");
  }
  rd__opk_avx512_select(was);
  cols_shapes(RD_OP_LOG_SUM_EXP, sizeof(struct rd__acc_lse), lse_cols_data, sp,
              3, lse_cols_start);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_expk_accuracy),
    cmocka_unit_test(test_expk_forms),
    cmocka_unit_test(test_lse_f32_helper),
    cmocka_unit_test(test_lse_rec_helper),
    cmocka_unit_test(test_lse_run_helper),
    cmocka_unit_test(test_lse_f32_kernel),
    cmocka_unit_test(test_arg32_helper),
    cmocka_unit_test(test_arg32_helper_long),
    cmocka_unit_test(test_prod_cols),
    cmocka_unit_test(test_prod_cols_extremes),
    cmocka_unit_test(test_lse_cols),
    cmocka_unit_test(test_prod_run_flush),
    cmocka_unit_test(test_prod_rows_acc),
    cmocka_unit_test(test_prod_rows_out),
    cmocka_unit_test(test_lse_rows_out),
    cmocka_unit_test(test_lse_rows_out_ties),
    cmocka_unit_test(test_lse_rows_out_clamp),
    cmocka_unit_test(test_key_rows_out),
    cmocka_unit_test(test_key_rows_helper),
    cmocka_unit_test(test_key_rows_streamed),
    cmocka_unit_test(test_key_cols),
    cmocka_unit_test(test_prod_run),
    cmocka_unit_test(test_prod_cols4),
    cmocka_unit_test(test_lse_cols4),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
