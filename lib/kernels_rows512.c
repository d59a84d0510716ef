/* kernels_rows512.c - AVX-512 rd__rows_out() of short rows (n <= 16),
 * eight rows per vector step (x86-64 only; kernels.c calls it only for a
 * kernel of the AVX-512 table, so the CPU and the OS have AVX-512 F, BW,
 * VL and DQ besides the AVX2 path's features).
 *
 * The definition is kernels_avx2.c's four-row form (see there): a row of
 * n <= 16 elements is its 16 lanes, lanes >= n +0 (masked loads, so no
 * byte past the row is read and no tail needs a copy); the tree's level
 * (k, k+8) is one vector add per row (skipped for n <= 8: it would add
 * +0, an exact no-op), and levels (k, k+4), (k, k+2), (k, k+1) run on
 * eight rows at once after shuffles that only move lanes.  Every add has
 * the operands flush() adds (a + b = b + a bitwise), so each row is
 * combined in exactly the fixed tree of kernels.h.  FMA only for squares
 * of float32/float16/bfloat16 (exact in double); float64 squares are
 * multiplied and added separately (-ffp-contract=off for the library).
 * The last nrows % 8 rows go to the AVX2 form.
 */
#include "kernels_impl.h"

#include "f16.h"
#include "reduce.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT                                                                    \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Element types (constants in each instance, so the branches fold). */
enum { DT_F32, DT_F16, DT_BF16, DT_F64 };

/* Short rows of float32, float16 and bfloat16 are one address-ordered
 * stream, which the hardware prefetcher follows: with a software prefetch
 * 4 KiB ahead (into L2), case F took up to 1.4x the time (bench/README.md,
 * "Short rows without software prefetch").  float64 rows, twice the bytes,
 * still gain from it (without: 1.06-1.13x the time on one thread). */
#define PF_F64(p) _mm_prefetch((const char *)(p) + 4096, _MM_HINT_T1)

/* Outputs of at least this many float32 rows are written with streaming
 * stores when 16-byte aligned (kernels_avx2.c's NT_ROWS). */
#define NT_ROWS ((size_t)1 << 15)

/* The 16 lanes of the row at p as doubles, lo (lanes 0-7) and hi (8-15),
 * lanes >= n (mask m: bit l for lane l < n) zero; `wide`: n > 8 (else hi
 * is not needed and not loaded). */
TGT ALWAYS_INLINE void row_ld(const unsigned char *p, int dt, int wide,
                              __mmask16 m, __m512d *lo, __m512d *hi)
{
  if (dt == DT_F64) {
    *lo = _mm512_maskz_loadu_pd((__mmask8)m, p);
    *hi = wide ? _mm512_maskz_loadu_pd((__mmask8)(m >> 8), p + 64)
               : _mm512_setzero_pd();
    return;
  }
  if (m == 0xffff) {
    /* A whole row of 16 (n a constant here): two half-row conversions
     * straight from memory, which spares the shuffle unit the extract of
     * the upper half (the bits are the same conversions). */
    if (dt == DT_F32) {
      *lo = _mm512_cvtps_pd(_mm256_loadu_ps((const float *)(const void *)p));
      *hi = _mm512_cvtps_pd(
        _mm256_loadu_ps((const float *)(const void *)(p + 32)));
      return;
    }
    if (dt == DT_F16) {
      *lo = _mm512_cvtps_pd(
        _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p)));
      *hi = _mm512_cvtps_pd(_mm256_cvtph_ps(
        _mm_loadu_si128((const __m128i *)(const void *)(p + 16))));
      return;
    }
    {
      /* bfloat16: the 16 floats through a stack buffer, widened to
       * doubles straight from it (the register form of that widening
       * needs the shuffle port, which the tree's shuffles keep busy;
       * measured faster here, not for float16). */
      float buf[16] __attribute__((aligned(64)));
      __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
      _mm512_store_ps(buf, _mm512_castsi512_ps(
                             _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
      __asm__ volatile("" : : : "memory"); /* keep the store and reloads */
      *lo = _mm512_cvtps_pd(_mm256_load_ps(buf));
      *hi = _mm512_cvtps_pd(_mm256_load_ps(buf + 8));
      return;
    }
  }
  if (!wide) {
    __m256 f;
    if (dt == DT_F32) {
      f = _mm256_maskz_loadu_ps((__mmask8)m, p);
    } else {
      __m128i h = _mm_maskz_loadu_epi16((__mmask8)m, p);
      f = dt == DT_F16 ? _mm256_cvtph_ps(h)
                       : _mm256_castsi256_ps(
                           _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    *lo = _mm512_cvtps_pd(f);
    *hi = _mm512_setzero_pd();
  } else {
    __m512 f;
    if (dt == DT_F32) {
      f = _mm512_maskz_loadu_ps(m, p);
    } else {
      __m256i h = _mm256_maskz_loadu_epi16(m, p);
      f = dt == DT_F16 ? _mm512_cvtph_ps(h)
                       : _mm512_castsi512_ps(
                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    *lo = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
    *hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1));
  }
}

/* Level (k, k+8) of a row's terms: lane k of the result is lane k plus
 * lane k + 8 (for n <= 8 just the terms of lanes 0-7). */
TGT ALWAYS_INLINE __m512d row_p(__m512d lo, __m512d hi, int wide, int dt,
                                int term)
{
  if (term == RD__TERM_SQ) {
    __m512d q = _mm512_mul_pd(lo, lo);
    if (!wide)
      return q;
    /* exact squares: fma(hi, hi, q) rounds like q + hi * hi */
    return dt == DT_F64 ? _mm512_add_pd(q, _mm512_mul_pd(hi, hi))
                        : _mm512_fmadd_pd(hi, hi, q);
  }
  if (term == RD__TERM_ABS) {
    lo = _mm512_abs_pd(lo);
    hi = _mm512_abs_pd(hi);
  }
  return wide ? _mm512_add_pd(lo, hi) : lo;
}

/* Level (k, k+4) of two rows: lanes 0-3 row a's c, lanes 4-7 row b's. */
TGT ALWAYS_INLINE __m512d pair_c(__m512d a, __m512d b)
{
  return _mm512_add_pd(_mm512_shuffle_f64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                       _mm512_shuffle_f64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* Levels (k, k+2) and (k, k+1) of eight rows (their c in pairs c01, c23,
 * c45, c67): the eight row sums in row order.  kernels_ops_avx2.c's
 * lse_tree8() is the same tree, written apart (see there for why). */
TGT ALWAYS_INLINE __m512d rows8_tail(__m512d c01, __m512d c23, __m512d c45,
                                     __m512d c67)
{
  const __m512i ia = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
  const __m512i ib = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
  const __m512i ie = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i io = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  __m512d d03 = _mm512_add_pd(_mm512_permutex2var_pd(c01, ia, c23),
                              _mm512_permutex2var_pd(c01, ib, c23));
  __m512d d47 = _mm512_add_pd(_mm512_permutex2var_pd(c45, ia, c67),
                              _mm512_permutex2var_pd(c45, ib, c67));
  return _mm512_add_pd(_mm512_permutex2var_pd(d03, ie, d47),
                       _mm512_permutex2var_pd(d03, io, d47));
}

/* rd__fin_value() of eight row sums of n elements (sums: +0 added first,
 * see kernels_avx2.c). */
TGT ALWAYS_INLINE __m512d fin8(__m512d s, int term, int fin, size_t n)
{
  if (term == RD__TERM_X)
    s = _mm512_add_pd(s, _mm512_setzero_pd());
  if (fin == RD__OUT_SQRT) {
    s = _mm512_sqrt_pd(s);
  } else if (fin == RD__OUT_MEAN) {
    s = _mm512_div_pd(s, _mm512_set1_pd((double)n));
  } else if (fin == RD__OUT_LOG) {
    double d[8];
    _mm512_storeu_pd(d, s);
    for (int i = 0; i < 8; i++)
      d[i] = log(d[i]); /* libm's, as finalize.c */
    s = _mm512_loadu_pd(d);
  }
  return s;
}

/* Eight floats (bits u) rounded to nearest even as float16/bfloat16
 * outputs (a NaN lane is left to the caller). */
TGT ALWAYS_INLINE __m128i round16(int dt, __m256i u)
{
  if (dt == DT_F16)
    return _mm256_cvtps_ph(_mm256_castsi256_ps(u), _MM_FROUND_TO_NEAREST_INT);
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16),
                                 _mm256_set1_epi32(1));
  return _mm256_cvtepi32_epi16(_mm256_srli_epi32(
    _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd), 16));
}

/* Eight final values stored as outputs of dt (not float64), rounded as
 * kernels_avx2.c's store4 (the same operations per lane). */
TGT ALWAYS_INLINE void store8(int dt, __m512d s, int nt, uint16_t nan16,
                              unsigned char *o)
{
  __mmask8 isnan = _mm512_cmp_pd_mask(s, s, _CMP_UNORD_Q);
  if (dt == DT_F32) {
    __m256 f = _mm512_cvtpd_ps(
      _mm512_mask_blend_pd(isnan, s, _mm512_set1_pd(NAN)));
    if (nt) {
      _mm_stream_ps((float *)(void *)o, _mm256_castps256_ps128(f));
      _mm_stream_ps((float *)(void *)(o + 16), _mm256_extractf128_ps(f, 1));
    } else {
      _mm256_storeu_ps((float *)(void *)o, f);
    }
  } else {
    /* To float rounding to odd (toward zero, the last bit set if
     * inexact: kernels_avx2.c's store4 gets the same float from the
     * nearest one stepped toward zero), then to nearest even. */
    __m256 f = _mm512_cvt_roundpd_ps(s, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 inexact = _mm512_cmp_pd_mask(_mm512_cvtps_pd(f), s, _CMP_NEQ_OQ);
    __m256i u = _mm256_castps_si256(f);
    u = _mm256_mask_or_epi32(u, inexact, u, _mm256_set1_epi32(1));
    _mm_storeu_si128((__m128i *)(void *)o,
                     _mm_mask_blend_epi16(isnan, round16(dt, u),
                                          _mm_set1_epi16((short)nan16)));
  }
}

/* A row of float64 terms all mid-range (zeros included, so the zero
 * lanes beyond n are too): Blue's value is then the lane tree of the
 * squares (kernels_avx2.c's mid4). */
TGT ALWAYS_INLINE int mid_row(__m512d lo, __m512d hi)
{
  const __m512d big = _mm512_set1_pd(BLUE_BIG),
                small = _mm512_set1_pd(BLUE_SMALL);
  __m512d a = _mm512_abs_pd(lo), b = _mm512_abs_pd(hi);
  __mmask8 ma = _mm512_cmp_pd_mask(a, big, _CMP_LE_OQ) &
                (_mm512_cmp_pd_mask(a, small, _CMP_GE_OQ) |
                 _mm512_cmp_pd_mask(a, _mm512_setzero_pd(), _CMP_EQ_OQ));
  __mmask8 mb = _mm512_cmp_pd_mask(b, big, _CMP_LE_OQ) &
                (_mm512_cmp_pd_mask(b, small, _CMP_GE_OQ) |
                 _mm512_cmp_pd_mask(b, _mm512_setzero_pd(), _CMP_EQ_OQ));
  return (ma & mb) == 0xff;
}

/* One float64 row by the scalar definition (zeroed accumulator, value,
 * store), as kernels_avx2.c's row_f64_scalar. */
static void row_f64_scalar(unsigned char *o, const unsigned char *x, size_t n,
                           int l2)
{
  struct rd__blue a;
  memset(&a, 0, sizeof a);
  rd__rows_f64_short(&a, x, n, 1);
  rd__float_store(RD_FLOAT64, rd__acc_value(RD__ACC_BLUE, &a, l2), o);
}

/* The eight row sums (before fin8) of the rows at x (stride rs); float64:
 * bit q of *bad set for a row q with a non-mid term. */
TGT ALWAYS_INLINE __m512d sums8(const unsigned char *x, size_t rs, __mmask16 m,
                                int term, int dt, int wide, unsigned *bad)
{
  __m512d lo, hi, p0, p1, p2, p3, p4, p5, p6, p7;
  if (dt == DT_F64)
    for (size_t b = 0; b < 8 * rs; b += 64)
      PF_F64(x + b);
#define ROW(q, pq)                                                             \
  do {                                                                         \
    row_ld(x + (q)*rs, dt, wide, m, &lo, &hi);                                 \
    if (dt == DT_F64 && !mid_row(lo, hi))                                      \
      *bad |= 1u << (q);                                                       \
    pq = row_p(lo, hi, wide, dt, term);                                        \
  } while (0)
  ROW(0, p0);
  ROW(1, p1);
  ROW(2, p2);
  ROW(3, p3);
  ROW(4, p4);
  ROW(5, p5);
  ROW(6, p6);
  ROW(7, p7);
#undef ROW
  return rows8_tail(pair_c(p0, p1), pair_c(p2, p3), pair_c(p4, p5),
                    pair_c(p6, p7));
}

/* Groups of eight rows per LOG block: the block's sums, then their logs
 * (log_narrow), then the stores. */
#define LOG_GROUPS 8

/* ---- LogSum's log, for outputs narrower than float64 ----
 * libm's log of every row sum cost as much as the sums (case F: 16
 * elements per output).  What the output keeps of it is its rounding to
 * float32 (or to float16/bfloat16 through float32 rounded to odd, which
 * is decided by the same float32 neighbours), and that rounding is the
 * same for every value between two numbers of 25 significant bits (a
 * float32 or the midpoint of two).  So a vector log with a bounded error
 * is enough wherever it lies farther than that bound from such a number;
 * the other lanes, and every input that is not a positive normal number,
 * get libm's log.  The outputs are libm's, bit for bit. */

/* The error bound of vlog8 in units in the last place of its result,
 * with room to spare: fdlibm's analysis gives under 1; test_kernels
 * (test_log_narrow) finds it within 1 of libm's over millions of inputs
 * (and fails above 2); the check adds one more for libm's own error
 * (glibc: under 1). */
#define LOG_ULPS 16

/* log x for positive normal x: fdlibm's e_log.c method, in its order of
 * operations (no FMA: -ffp-contract=off): x = 2^k m, m in (sqrt(1/2),
 * sqrt(2)], f = m - 1 (exact), s = f / (2 + f), log m = f - hfsq +
 * s (hfsq + R(s^2)) with its degree-14 minimax R, k ln 2 in two parts. */
TGT ALWAYS_INLINE __m512d vlog8(__m512d x)
{
  const __m512d ln2_hi = _mm512_set1_pd(6.93147180369123816490e-01);
  const __m512d ln2_lo = _mm512_set1_pd(1.90821492927058770002e-10);
  const __m512d one = _mm512_set1_pd(1.0), half = _mm512_set1_pd(0.5);
  __m512d k = _mm512_getexp_pd(x);
  __m512d m = _mm512_getmant_pd(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  __mmask8 big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.41421356237309504880),
                                    _CMP_GT_OQ);
  m = _mm512_mask_mul_pd(m, big, m, half);
  k = _mm512_mask_add_pd(k, big, k, one);
  __m512d f = _mm512_sub_pd(m, one);
  __m512d s = _mm512_div_pd(f, _mm512_add_pd(_mm512_set1_pd(2.0), f));
  __m512d z = _mm512_mul_pd(s, s), w = _mm512_mul_pd(z, z);
#define C(v) _mm512_set1_pd(v)
#define MA(a, b, c) _mm512_add_pd(a, _mm512_mul_pd(b, c))
  __m512d t1 = _mm512_mul_pd(w, MA(C(3.999999999940941908e-01), w,
                                   MA(C(2.222219843214978396e-01), w,
                                      C(1.531383769920937332e-01))));
  __m512d t2 = _mm512_mul_pd(z, MA(C(6.666666666666735130e-01), w,
                                   MA(C(2.857142874366239149e-01), w,
                                      MA(C(1.818357216161805012e-01), w,
                                         C(1.479819860511658591e-01)))));
#undef MA
#undef C
  __m512d r = _mm512_add_pd(t2, t1);
  __m512d hfsq = _mm512_mul_pd(_mm512_mul_pd(half, f), f);
  __m512d t = _mm512_add_pd(_mm512_mul_pd(s, _mm512_add_pd(hfsq, r)),
                            _mm512_mul_pd(k, ln2_lo));
  return _mm512_sub_pd(_mm512_mul_pd(k, ln2_hi),
                       _mm512_sub_pd(_mm512_sub_pd(hfsq, t), f));
}

TGT void rd__rows512_log_narrow(double *d, size_t n, unsigned ulps)
{
  /* 2^28 units of a double's last place: one unit of the 25th bit */
  const __m512i low = _mm512_set1_epi64(((int64_t)1 << 28) - 1);
  const __m512i unit = _mm512_set1_epi64((int64_t)1 << 28);
  const __m512i near = _mm512_set1_epi64((int64_t)ulps + 1);
  size_t i;
  for (i = 0; i + 8 <= n; i += 8) {
    __m512d x = _mm512_loadu_pd(d + i), v = vlog8(x);
    /* not positive normal: NaN, +-0, +-inf, subnormal, negative */
    __mmask8 redo = _mm512_fpclass_pd_mask(x, 0xff);
    __m512i b = _mm512_and_si512(_mm512_castpd_si512(v), low);
    __m512i dist = _mm512_min_epu64(b, _mm512_sub_epi64(unit, b));
    redo |= _mm512_cmp_epu64_mask(dist, near, _MM_CMPINT_LE);
    _mm512_storeu_pd(d + i, v);
    if (redo != 0) {
      double xs[8];
      _mm512_storeu_pd(xs, x);
      for (; redo != 0; redo &= (__mmask8)(redo - 1)) {
        int q = __builtin_ctz(redo);
        d[i + q] = log(xs[q]); /* libm's, as finalize.c */
      }
    }
  }
  for (; i < n; i++)
    d[i] = log(d[i]);
}

/* Eight rows at a time from x (stride rs), outputs at o; returns the rows
 * done (a multiple of 8). */
TGT ALWAYS_INLINE size_t z_rows_out(unsigned char *o, const unsigned char *x,
                                    size_t n, size_t nrows, int fin, int term,
                                    int dt, int wide)
{
  const size_t esz = dt == DT_F64 ? 8 : dt == DT_F32 ? 4 : 2;
  const size_t rs = n * esz, ob = dt == DT_F64 ? 8 : dt == DT_F32 ? 4 : 2;
  const __mmask16 m = (__mmask16)((1u << n) - 1);
  const int nt = dt == DT_F32 && nrows >= NT_ROWS && ((uintptr_t)o & 15) == 0;
  const uint16_t nan16 = dt == DT_F16    ? rd_f64_to_f16(NAN)
                         : dt == DT_BF16 ? rd_f64_to_bf16(NAN)
                                         : 0;
  size_t r = 0;
  if (fin == RD__OUT_LOG && dt != DT_F64) {
    while (r + 8 <= nrows) {
      double d[8 * LOG_GROUPS];
      size_t g = (nrows - r) / 8, i;
      unsigned bad = 0;
      if (g > LOG_GROUPS)
        g = LOG_GROUPS;
      for (i = 0; i < g; i++)
        _mm512_storeu_pd(d + 8 * i, fin8(sums8(x + 8 * i * rs, rs, m, term, dt,
                                               wide, &bad),
                                         term, RD__OUT_SUM, n));
      rd__rows512_log_narrow(d, 8 * g, LOG_ULPS);
      for (i = 0; i < g; i++)
        store8(dt, _mm512_loadu_pd(d + 8 * i), nt, nan16, o + 8 * i * ob);
      r += 8 * g;
      x += 8 * g * rs;
      o += 8 * g * ob;
    }
  }
  for (; r + 8 <= nrows; r += 8, x += 8 * rs, o += 8 * ob) {
    unsigned bad = 0;
    __m512d s = fin8(sums8(x, rs, m, term, dt, wide, &bad), term, fin, n);
    if (dt == DT_F64) {
      _mm512_storeu_pd((double *)(void *)o, s);
      for (unsigned q = 0; bad != 0; q++, bad >>= 1)
        if (bad & 1) /* a non-mid term: the scalar definition */
          row_f64_scalar(o + 8 * q, x + q * rs, n, fin == RD__OUT_SQRT);
    } else {
      store8(dt, s, nt, nan16, o);
    }
  }
  if (nt)
    _mm_sfence(); /* order the streaming stores before what follows */
  return r;
}

/* ---- Rows of 16 float16/bfloat16 squares or magnitudes: a float32 sum,
 * screened ----
 * Widening every element to double took most of case F's time for these
 * types (two conversions per eight elements), and the tree's shuffles
 * most of the rest.  The output keeps 11 (float16) or 8 (bfloat16)
 * significant bits of the row's value, so a float32 sum close enough to
 * it decides the output wherever it lies far enough from a rounding
 * boundary.  A group of eight rows with one it does not decide is done by
 * the definition's form above (sums8(), fin8(), store8()).  As with
 * rd__rows512_log_narrow(), the outputs are the definition's, bit for bit.
 *
 * Why the float32 sum v is close enough (u = 2^-24):
 * - Each term is exact in float32: |x| of any element; x^2 of a float16
 *   (22 significant bits, from 2^-48 to 2^32); x^2 of a bfloat16 (16 bits)
 *   unless it overflows (then v is >= 2^127 or not finite: not screened)
 *   or falls below 2^-126 (an absolute error of at most 2^-150 each, and
 *   a sum below 2^-126 is exact: nothing next to a v of at least 2^-100,
 *   and smaller ones are not screened).
 * - The terms are not negative, and each passes four rounded additions
 *   (eight columns pairwise, then the two halves), so v is within 4.0001u
 *   of the exact sum in relative terms; sqrtf() halves that and adds u.
 *   The definition's double is within 2^-50 of the exact value.
 * - v < 2^(e+1) in its binade e, so v is within 4.0003 units in the last
 *   place of the binade, 2^(e-23), of the definition's value.  v's bits
 *   minus and plus 16 (as integers: 16 steps down cover 8 units even
 *   where they cross into the binade below; both ends finite, v being
 *   below 2^127) bracket that value.  Rounding is monotonic, and the
 *   definition's rounding (to float32 to odd, then to nearest even) is
 *   that of its double to nearest even; so where both ends of the bracket
 *   round to the same output, so does the definition.
 * Data uniform in [-1, 1) leaves about 0.4% of float16 rows undecided (3%
 * of the groups of eight) and 0.05% of bfloat16 rows.  The order of the
 * float32 sum is free, so the eight rows are transposed (word permutes)
 * and summed column by column: no shuffles of doubles. */

/* Words of rows 0-3 (two loads of two rows, 16 words each) into
 * columns 0-7, word 4c + r holding row r's element c (+8: columns 8-15). */
static const short scr_rows4[32]
  __attribute__((aligned(64))) = { 0,  16, 32, 48, 1,  17, 33, 49, 2,  18, 34,
                                   50, 3,  19, 35, 51, 4,  20, 36, 52, 5,  21,
                                   37, 53, 6,  22, 38, 54, 7,  23, 39, 55 };
/* From those of rows 0-3 (a) and of rows 4-7 (b, +32): columns 0 and 1
 * of the eight rows in words 0-15 (+8, +16, +24: columns 2-3, 4-5,
 * 6-7).  float16: the words themselves; bfloat16: each the upper half of
 * a float32 (odd words; the even ones are zeroed by the mask). */
static const short scr_cols_f16[32]
  __attribute__((aligned(64))) = { 0, 1, 2, 3, 32, 33, 34, 35,
                                   4, 5, 6, 7, 36, 37, 38, 39 };
static const short scr_cols_bf16[32]
  __attribute__((aligned(64))) = { 0,  0, 0,  1,  0,  2,  0, 3,  0, 32, 0,
                                   33, 0, 34, 0,  35, 0,  4, 0,  5, 0,  6,
                                   0,  7, 0,  36, 0,  37, 0, 38, 0, 39 };

/* The terms of two columns of eight rows as 16 floats (see above). */
TGT ALWAYS_INLINE __m512 scr_terms(int dt, int term, __m512i a, __m512i ix,
                                   __m512i b)
{
  __m512 f;
  if (dt == DT_F16)
    f = _mm512_cvtph_ps(
      _mm512_castsi512_si256(_mm512_permutex2var_epi16(a, ix, b)));
  else
    f = _mm512_castsi512_ps(
      _mm512_maskz_permutex2var_epi16(0xAAAAAAAAu, a, ix, b));
  return term == RD__TERM_SQ ? _mm512_mul_ps(f, f) : _mm512_abs_ps(f);
}

/* Eight rows of 16 at a time (fin RD__OUT_SUM or RD__OUT_SQRT); returns the
 * rows done (a multiple of 8). */
TGT ALWAYS_INLINE size_t z_rows16_screen(unsigned char *o,
                                         const unsigned char *x, size_t nrows,
                                         int fin, int term, int dt)
{
  const uint16_t nan16 = dt == DT_F16 ? rd_f64_to_f16(NAN)
                                      : rd_f64_to_bf16(NAN);
  const __m512i t4 = _mm512_load_si512(scr_rows4);
  const __m512i t4b = _mm512_add_epi16(t4, _mm512_set1_epi16(8));
  const __m512i c0 = _mm512_load_si512(dt == DT_F16 ? scr_cols_f16
                                                    : scr_cols_bf16);
  const __m512i c1 = _mm512_add_epi16(c0, _mm512_set1_epi16(8));
  const __m512i c2 = _mm512_add_epi16(c0, _mm512_set1_epi16(16));
  const __m512i c3 = _mm512_add_epi16(c0, _mm512_set1_epi16(24));
  /* screened sums: at least lo (bfloat16 squares: see above), below hi */
  const __m256 lo = _mm256_set1_ps(
    dt == DT_BF16 && term == RD__TERM_SQ ? 0x1p-100f : 0.0f);
  const __m256 hi = _mm256_set1_ps(0x1p127f);
  const __m256i step = _mm256_set1_epi32(16);
  size_t r = 0;
  for (; r + 8 <= nrows; r += 8, x += 256, o += 16) {
    __m512i r01 = _mm512_loadu_si512(x), r23 = _mm512_loadu_si512(x + 64);
    __m512i r45 = _mm512_loadu_si512(x + 128),
            r67 = _mm512_loadu_si512(x + 192);
    __m512i a = _mm512_permutex2var_epi16(r01, t4, r23),
            a8 = _mm512_permutex2var_epi16(r01, t4b, r23);
    __m512i b = _mm512_permutex2var_epi16(r45, t4, r67),
            b8 = _mm512_permutex2var_epi16(r45, t4b, r67);
    __m512 s = _mm512_add_ps(
      _mm512_add_ps(_mm512_add_ps(scr_terms(dt, term, a, c0, b),
                                  scr_terms(dt, term, a, c1, b)),
                    _mm512_add_ps(scr_terms(dt, term, a, c2, b),
                                  scr_terms(dt, term, a, c3, b))),
      _mm512_add_ps(_mm512_add_ps(scr_terms(dt, term, a8, c0, b8),
                                  scr_terms(dt, term, a8, c1, b8)),
                    _mm512_add_ps(scr_terms(dt, term, a8, c2, b8),
                                  scr_terms(dt, term, a8, c3, b8))));
    __m256 v = _mm256_add_ps(_mm512_castps512_ps256(s),
                             _mm512_extractf32x8_ps(s, 1));
    unsigned bad = (unsigned)_mm256_cmp_ps_mask(v, lo, _CMP_NGE_UQ) |
                   (unsigned)_mm256_cmp_ps_mask(v, hi, _CMP_NLT_UQ);
    if (fin == RD__OUT_SQRT)
      v = _mm256_sqrt_ps(v);
    __m256i u = _mm256_castps_si256(v);
    __m128i h = round16(dt, _mm256_max_epi32(_mm256_sub_epi32(u, step),
                                             _mm256_setzero_si256()));
    bad |= _mm_cmpneq_epi16_mask(h, round16(dt, _mm256_add_epi32(u, step)));
    if (__builtin_expect(bad != 0, 0)) {
      /* a row the screen leaves undecided: the eight by the definition */
      unsigned none = 0;
      store8(dt, fin8(sums8(x, 32, 0xffff, term, dt, 1, &none), term, fin, 16),
             0, nan16, o);
    } else {
      _mm_storeu_si128((__m128i *)(void *)o, h);
    }
  }
  return r;
}

/* The two row widths, n a constant in the common case of 16. */
TGT ALWAYS_INLINE size_t z_rows_out_n(unsigned char *o, const unsigned char *x,
                                      size_t n, size_t nrows, int fin, int term,
                                      int dt)
{
  if (n == 16 && (dt == DT_F16 || dt == DT_BF16) && term != RD__TERM_X &&
      (fin == RD__OUT_SUM || fin == RD__OUT_SQRT))
    return z_rows16_screen(o, x, nrows, fin, term, dt);
  if (n == 16)
    return z_rows_out(o, x, 16, nrows, fin, term, dt, 1);
  if (n > 8)
    return z_rows_out(o, x, n, nrows, fin, term, dt, 1);
  return z_rows_out(o, x, n, nrows, fin, term, dt, 0);
}

#define Z_ROWS_OUT(name, dt, term)                                             \
  TGT static size_t zro_##name(unsigned char *o, const unsigned char *x,       \
                               size_t n, size_t nrows, int fin)                \
  {                                                                            \
    return z_rows_out_n(o, x, n, nrows, fin, term, dt);                        \
  }
Z_ROWS_OUT(sq_f32, DT_F32, RD__TERM_SQ)
Z_ROWS_OUT(sq_f16, DT_F16, RD__TERM_SQ)
Z_ROWS_OUT(sq_bf16, DT_BF16, RD__TERM_SQ)
Z_ROWS_OUT(sum_f32, DT_F32, RD__TERM_X)
Z_ROWS_OUT(sum_f16, DT_F16, RD__TERM_X)
Z_ROWS_OUT(sum_bf16, DT_BF16, RD__TERM_X)
Z_ROWS_OUT(abs_f32, DT_F32, RD__TERM_ABS)
Z_ROWS_OUT(abs_f16, DT_F16, RD__TERM_ABS)
Z_ROWS_OUT(abs_bf16, DT_BF16, RD__TERM_ABS)
Z_ROWS_OUT(sq_f64, DT_F64, RD__TERM_SQ)

int rd__rows512_out(int dtype, int term, void *out, const unsigned char *x,
                    size_t n, size_t nrows, int fin)
{
  static size_t (*const tab[3][3])(unsigned char *, const unsigned char *,
                                   size_t, size_t, int) = {
    { zro_sq_f32, zro_sq_f16, zro_sq_bf16 },
    { zro_sum_f32, zro_sum_f16, zro_sum_bf16 },
    { zro_abs_f32, zro_abs_f16, zro_abs_bf16 },
  };
  unsigned char *o = out;
  size_t done, esz = rd_dtype_size(dtype);
  if (n == 0 || n > L || term < RD__TERM_SQ || term > RD__TERM_ABS ||
      fin < RD__OUT_SUM || fin > RD__OUT_LOG)
    return -1;
  if (dtype == RD_FLOAT64) {
    if (term != RD__TERM_SQ || fin > RD__OUT_SQRT)
      return -1;
    done = zro_sq_f64(o, x, n, nrows, fin);
  } else if (dtype == RD_FLOAT32 || dtype == RD_FLOAT16 ||
             dtype == RD_BFLOAT16) {
    int t = dtype == RD_FLOAT32 ? 0 : dtype == RD_FLOAT16 ? 1 : 2;
    done = tab[term][t](o, x, n, nrows, fin);
  } else {
    return -1;
  }
  /* the last nrows % 8 rows: the AVX2 form (the same bits) */
  if (done < nrows &&
      rd__avx2_rows_out(dtype, term, o + done * esz, x + done * n * esz, n,
                        nrows - done, fin) != 0)
    return -1; /* not reached: the AVX2 form takes every case above */
  return 0;
}

/* count double class accumulators to outputs, eight per step: fin8() and
 * store8() as z_rows_out() does for row sums (LogSum's log through
 * rd__rows512_log_narrow()); the last count % 8 by the scalar definition. */
TGT ALWAYS_INLINE void store_accs(int dt, int fin, size_t n, const double *acc,
                                  unsigned char *o, size_t count)
{
  const size_t ob = dt == DT_F32 ? 4 : 2;
  const uint16_t nan16 = dt == DT_F16    ? rd_f64_to_f16(NAN)
                         : dt == DT_BF16 ? rd_f64_to_bf16(NAN)
                                         : 0;
  const int dtype = dt == DT_F32   ? RD_FLOAT32
                    : dt == DT_F16 ? RD_FLOAT16
                                   : RD_BFLOAT16;
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    if (fin == RD__OUT_LOG) {
      double d[8];
      _mm512_storeu_pd(d, _mm512_loadu_pd(acc + i));
      rd__rows512_log_narrow(d, 8, LOG_ULPS);
      store8(dt, _mm512_loadu_pd(d), 0, nan16, o + i * ob);
    } else {
      store8(dt, fin8(_mm512_loadu_pd(acc + i), RD__TERM_SQ, fin, n), 0, nan16,
             o + i * ob);
    }
  }
  for (; i < count; i++)
    rd__float_store(dtype, rd__fin_value(acc[i], fin, n), o + i * ob);
}

#define STORE_ACCS(name, dt)                                                   \
  TGT static void store_accs_##name(int fin, size_t n, const double *acc,      \
                                    unsigned char *o, size_t count)            \
  {                                                                            \
    store_accs(dt, fin, n, acc, o, count);                                     \
  }
STORE_ACCS(f32, DT_F32)
STORE_ACCS(f16, DT_F16)
STORE_ACCS(bf16, DT_BF16)

int rd__rows512_store(int dtype, int fin, size_t n, const double *acc,
                      void *out, size_t count)
{
  if (fin < RD__OUT_SUM || fin > RD__OUT_LOG)
    return -1;
  switch (dtype) {
  case RD_FLOAT32: store_accs_f32(fin, n, acc, out, count); return 0;
  case RD_FLOAT16: store_accs_f16(fin, n, acc, out, count); return 0;
  case RD_BFLOAT16: store_accs_bf16(fin, n, acc, out, count); return 0;
  default: return -1;
  }
}

#else /* no x86-64 SIMD path in this build */

int rd__rows512_store(int dtype, int fin, size_t n, const double *acc,
                      void *out, size_t count)
{
  (void)dtype;
  (void)fin;
  (void)n;
  (void)acc;
  (void)out;
  (void)count;
  return -1;
}

int rd__rows512_out(int dtype, int term, void *out, const unsigned char *x,
                    size_t n, size_t nrows, int fin)
{
  (void)dtype;
  (void)term;
  (void)out;
  (void)x;
  (void)n;
  (void)nrows;
  (void)fin;
  return -1;
}

void rd__rows512_log_narrow(double *d, size_t n, unsigned ulps)
{
  (void)ulps;
  for (size_t i = 0; i < n; i++)
    d[i] = log(d[i]);
}

#endif
