/* expk.h - exp(t) for t in [-708, 64] with the same bits in C (expk), on
 * four AVX2 lanes (rd__expk4) and on eight AVX-512 lanes (rd__expk8);
 * private to the library's kernels.  The float32/float16/bfloat16
 * ReduceLogSumExp lanes, columns and short rows take every term and every
 * rescale factor from these, so all their paths agree bit for bit.
 *
 * Method: t = k ln2/16 + r with k = t 16/ln2 rounded to nearest (one fma
 * against 1.5 * 2^52, which leaves k in z's low bits) and r = t - k ln2/16
 * by one more fma (|r| <= ln2/32); e^r - 1 = r g(r) with g of degree 5
 * (Horner, fmas), within 1.4e-17 on that interval; 2^(k/16) = 2^(k >> 4)
 * T[k & 15] with T the correctly rounded 2^(j/16) and the power of two
 * added into T's exponent bits; exp(t) = fma(S, r g(r), S) with S that
 * scaled entry.  The constants come from scripts/gen-expk.py.
 *
 * Error: within 2.5e-16 + 3.4e-17 |t| of e^t, relative (test_opkernels
 * checks it against expl).  The second term is the one-step reduction's:
 * EXPK_LN2 is 1.45e-18 below ln2/16, and |k| reaches 16342.  LogSumExp's
 * terms are e^t with t = x - m and a lazy shift m (kernels_impl.h,
 * RD__LSE_K = 64), so t <= 64, and each sum is at least 1 (the shift's own
 * term) and at least each of its terms.  For t <= 0, e^t |t| <= 1/e, so
 * relative to the sum a term's error stays below 2.5e-16 e^t + 1.3e-17;
 * for 0 < t <= 64, below 2.4e-15.  A rescale factor e^t multiplies a sum of
 * at most n terms, which then matters beside the new shift's 1 only while
 * n e^t is not small, for |t| up to about ln n: at most 3.4e-17 ln n
 * relative to the sum (1e-15 for n = 2^40).  A second fma with the low
 * part of ln2/16 would bring back 2.5e-16 flat at 1.07x the time of case
 * A.
 *
 * Every step is one IEEE operation (fma() in C, the fused intrinsics in
 * the vector forms; the library builds with -ffp-contract=off, so nothing
 * else is fused), which is why the three forms give the same bits.  For
 * t < -708, -inf or NaN the result is +0: below 2^-1021 of any sum (>= 1)
 * it is added to.
 */
#ifndef EXPK_H
#define EXPK_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define EXPK_SHIFT 0x1.8p52
#define EXPK_INV 0x1.71547652b82fep+4 /* 16 / ln2 */
#define EXPK_LN2 0x1.62e42fefa39efp-5 /* ln2/16 rounded, 1.5e-18 low */
#define EXPK_MIN (-708.0)

/* g(r) = (e^r - 1) / r: coefficients of r^0 .. r^5. */
static const double expk_c[6] = {
  0x1.0000000000003p+0, 0x1.0000000000001p-1, 0x1.555555547c59ep-3,
  0x1.55555554e8d7bp-5, 0x1.11123d8b7933cp-7, 0x1.6c17ede661f5cp-10,
};

/* The bits of 2^(j/16) minus j << 48: z's bits shifted left by 48 hold
 * (k >> 4) << 52 plus (k & 15) << 48, so one 64-bit add of them to entry
 * k & 15 gives 2^(k >> 4) 2^(j/16), modulo 2^64 (for t >= -708,
 * k >> 4 >= -1022: a normal number). */
static const uint64_t expk_tb[16] = {
  UINT64_C(0x3ff0000000000000), /* 2^(0/16) = 0x1.0000000000000p+0 */
  UINT64_C(0x3fefb5586cf9890f), /* 2^(1/16) = 0x1.0b5586cf9890fp+0 */
  UINT64_C(0x3fef72b83c7d517b), /* 2^(2/16) = 0x1.172b83c7d517bp+0 */
  UINT64_C(0x3fef387a6e756238), /* 2^(3/16) = 0x1.2387a6e756238p+0 */
  UINT64_C(0x3fef06fe0a31b715), /* 2^(4/16) = 0x1.306fe0a31b715p+0 */
  UINT64_C(0x3feedea64c123422), /* 2^(5/16) = 0x1.3dea64c123422p+0 */
  UINT64_C(0x3feebfdad5362a27), /* 2^(6/16) = 0x1.4bfdad5362a27p+0 */
  UINT64_C(0x3feeab07dd485429), /* 2^(7/16) = 0x1.5ab07dd485429p+0 */
  UINT64_C(0x3feea09e667f3bcd), /* 2^(8/16) = 0x1.6a09e667f3bcdp+0 */
  UINT64_C(0x3feea11473eb0187), /* 2^(9/16) = 0x1.7a11473eb0187p+0 */
  UINT64_C(0x3feeace5422aa0db), /* 2^(10/16) = 0x1.8ace5422aa0dbp+0 */
  UINT64_C(0x3feec49182a3f090), /* 2^(11/16) = 0x1.9c49182a3f090p+0 */
  UINT64_C(0x3feee89f995ad3ad), /* 2^(12/16) = 0x1.ae89f995ad3adp+0 */
  UINT64_C(0x3fef199bdd85529c), /* 2^(13/16) = 0x1.c199bdd85529cp+0 */
  UINT64_C(0x3fef5818dcfba487), /* 2^(14/16) = 0x1.d5818dcfba487p+0 */
  UINT64_C(0x3fefa4afa2a490da), /* 2^(15/16) = 0x1.ea4afa2a490dap+0 */
};

#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline double
expk(double t)
{
  double z, kd, r, p, s;
  uint64_t zb, sb;
  if (!(t >= EXPK_MIN))
    return 0.0;
  z = fma(t, EXPK_INV, EXPK_SHIFT);
  kd = z - EXPK_SHIFT;
  r = fma(-kd, EXPK_LN2, t);
  p = expk_c[5];
  for (int i = 4; i >= 0; i--)
    p = fma(p, r, expk_c[i]);
  p = p * r;
  memcpy(&zb, &z, sizeof zb);
  sb = expk_tb[zb & 15] + (zb << 48);
  memcpy(&s, &sb, sizeof s);
  return fma(s, p, s);
}

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define EXPK_TGT2 __attribute__((target("avx2,fma")))
#define EXPK_TGT5 __attribute__((target("avx512f,avx2,fma")))

/* expk() on four lanes.  Lanes with t < -708, -inf or NaN compute garbage
 * (the table index is masked to 0..15, so the gather stays in bounds) and
 * are cleared at the end. */
EXPK_TGT2 static inline __attribute__((always_inline)) __m256d
rd__expk4(__m256d t)
{
  const __m256d shift = _mm256_set1_pd(EXPK_SHIFT);
  __m256d ok = _mm256_cmp_pd(t, _mm256_set1_pd(EXPK_MIN), _CMP_GE_OQ);
  __m256d z = _mm256_fmadd_pd(t, _mm256_set1_pd(EXPK_INV), shift);
  __m256d kd = _mm256_sub_pd(z, shift);
  __m256d r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(EXPK_LN2), t);
  __m256d p = _mm256_set1_pd(expk_c[5]), s;
  __m256i zb = _mm256_castpd_si256(z);
  for (int i = 4; i >= 0; i--)
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(expk_c[i]));
  p = _mm256_mul_pd(p, r);
  s = _mm256_castsi256_pd(_mm256_add_epi64(
    _mm256_i64gather_epi64((const long long *)expk_tb,
                           _mm256_and_si256(zb, _mm256_set1_epi64x(15)), 8),
    _mm256_slli_epi64(zb, 48)));
  return _mm256_and_pd(_mm256_fmadd_pd(s, p, s), ok);
}

/* expk_tb in two registers, loaded once per loop (rd__expk8's table). */
struct rd__expk_tab {
  __m512i lo, hi;
};

EXPK_TGT5 static inline __attribute__((always_inline)) void
rd__expk_tab_load(struct rd__expk_tab *tb)
{
  tb->lo = _mm512_loadu_si512(expk_tb);
  tb->hi = _mm512_loadu_si512(expk_tb + 8);
}

/* expk()'s steps after the reduction, on eight lanes: the polynomial at
 * r, the table entry that z's low four bits pick (any index is in
 * bounds: one of the two registers' 16 entries) scaled by z's k >> 4,
 * and the final fma, whose mask clears the lanes outside `ok`. */
EXPK_TGT5 static inline __attribute__((always_inline)) __m512d
rd__expk8_tail(const struct rd__expk_tab *tb, __m512d z, __m512d r, __mmask8 ok)
{
  __m512d p = _mm512_set1_pd(expk_c[5]), s;
  __m512i zb = _mm512_castpd_si512(z);
  for (int i = 4; i >= 0; i--)
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(expk_c[i]));
  p = _mm512_mul_pd(p, r);
  s = _mm512_castsi512_pd(
    _mm512_add_epi64(_mm512_permutex2var_epi64(tb->lo, zb, tb->hi),
                     _mm512_slli_epi64(zb, 48)));
  return _mm512_maskz_fmadd_pd(ok, s, p, s);
}

/* expk() on eight lanes, those outside `ok` cleared (a lane outside
 * [-708, 64], -inf or NaN computes garbage first). */
EXPK_TGT5 static inline __attribute__((always_inline)) __m512d
rd__expk8_mask(const struct rd__expk_tab *tb, __m512d t, __mmask8 ok)
{
  const __m512d shift = _mm512_set1_pd(EXPK_SHIFT);
  __m512d z = _mm512_fmadd_pd(t, _mm512_set1_pd(EXPK_INV), shift);
  __m512d kd = _mm512_sub_pd(z, shift);
  return rd__expk8_tail(tb, z,
                        _mm512_fnmadd_pd(kd, _mm512_set1_pd(EXPK_LN2), t), ok);
}

/* expk(-u) on eight lanes, every u in [-64, 708] (the caller has checked
 * them all): the sign folded into the reduction's fmas (z = -u 16/ln2 +
 * shift, r = -(k ln2/16) - u), each the same single rounding as
 * expk()'s with t = -u, so the same bits. */
EXPK_TGT5 static inline __attribute__((always_inline)) __m512d
rd__expk8_neg(const struct rd__expk_tab *tb, __m512d u)
{
  const __m512d shift = _mm512_set1_pd(EXPK_SHIFT);
  __m512d z = _mm512_fnmadd_pd(u, _mm512_set1_pd(EXPK_INV), shift);
  __m512d kd = _mm512_sub_pd(z, shift);
  return rd__expk8_tail(tb, z,
                        _mm512_fnmsub_pd(kd, _mm512_set1_pd(EXPK_LN2), u),
                        0xff);
}

/* expk() on eight lanes. */
EXPK_TGT5 static inline __attribute__((always_inline)) __m512d
rd__expk8(const struct rd__expk_tab *tb, __m512d t)
{
  return rd__expk8_mask(tb, t,
                        _mm512_cmp_pd_mask(t, _mm512_set1_pd(EXPK_MIN),
                                           _CMP_GE_OQ));
}

#endif /* x86-64 */

#endif /* EXPK_H */
