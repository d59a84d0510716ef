/* kernels_avx2.c - AVX2+FMA+F16C kernels (x86-64 only; chosen at run time
 * by kernels.c when the CPU has all three features).
 *
 * Each kernel keeps the summation order of kernels.h exactly: the 16 lanes
 * of a run are four __m256d registers (lane l is element l of a block of
 * 16), columns are accumulated row by row, and heads, tails and rare cases
 * use the scalar helpers of kernels_impl.h.  FMA appears only where the
 * product is exact (squares of float32/float16/bfloat16 in double), so it
 * rounds like the portable multiply-then-add.  The float64 Kahan steps use
 * separate multiply and subtract (the library builds with -ffp-contract=off
 * so the compiler does not fuse them either).
 */
#include "kernels_impl.h"

#include "f16.h"
#include "reduce.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma,f16c")))

/* Software prefetch distance in bytes.  The loops are short, so without it
 * the reorder window, not DRAM, limits how many lines are in flight on one
 * core (seen as float16 reaching half the bytes/s of float32).  Prefetches
 * never fault, so running past the end of the input is harmless. */
#define PF_DIST 2048
#define PF(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T0)
/* Columns (several rows read side by side): into L2 only, as the AVX-512
 * column kernels (kernels_avx512.c), whose L1 prefetches evicted lines
 * still to be read. */
#define PF_COLS(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T1)

/* ------------------------------------------------------------------ */
/* Widening loads: 8 elements -> two vectors of 4 doubles (exact)      */
/* ------------------------------------------------------------------ */

TGT static inline void w8_f32(const unsigned char *p, __m256d *lo, __m256d *hi)
{
  *lo = _mm256_cvtps_pd(_mm_loadu_ps((const float *)(const void *)p));
  *hi = _mm256_cvtps_pd(_mm_loadu_ps((const float *)(const void *)(p + 16)));
}

/* F16C conversion is exact for every half, subnormals included. */
TGT static inline void w8_f16(const unsigned char *p, __m256d *lo, __m256d *hi)
{
  __m256 f = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
  *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
  *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}

TGT static inline void w8_bf16(const unsigned char *p, __m256d *lo, __m256d *hi)
{
  __m256i u = _mm256_cvtepu16_epi32(
    _mm_loadu_si128((const __m128i *)(const void *)p));
  __m256 f = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  *lo = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
  *hi = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}

/* ------------------------------------------------------------------ */
/* double accumulators: float32, float16, bfloat16                    */
/* ------------------------------------------------------------------ */

/* The fixed tree of kernels.h on lanes q0..q3 (lanes 0-3, 4-7, 8-11,
 * 12-15): (k, k+8), (k, k+4), (k, k+2), (k, k+1). */
TGT static inline double tree4(__m256d q0, __m256d q1, __m256d q2, __m256d q3)
{
  __m256d c = _mm256_add_pd(_mm256_add_pd(q0, q2), _mm256_add_pd(q1, q3));
  __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c),
                         _mm256_extractf128_pd(c, 1));
  return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

/* The squares kernels of the double class: templates with the widening
 * load (w8) and scalar load as parameters, instantiated per type below. */
typedef void (*w8_fn)(const unsigned char *p, __m256d *lo, __m256d *hi);
typedef double (*ld_fn)(const unsigned char *p);
#define ALWAYS_INLINE static inline __attribute__((always_inline))

TGT ALWAYS_INLINE void avx_d_run(union rd__lanes *ln, const unsigned char *x,
                                 size_t n, uint64_t pos, size_t esz, w8_fn w8,
                                 ld_fn load)
{
  size_t k = (size_t)(pos % L), i = 0;
  for (; k != 0 && i < n; i++, k = (k + 1) % L) {
    double v = load(x + i * esz);
    ln->d[k] += v * v;
  }
  if (i + L <= n) {
    __m256d a0 = _mm256_loadu_pd(ln->d), a1 = _mm256_loadu_pd(ln->d + 4);
    __m256d a2 = _mm256_loadu_pd(ln->d + 8);
    __m256d a3 = _mm256_loadu_pd(ln->d + 12);
    for (; i + L <= n; i += L) {
      __m256d v0, v1, v2, v3;
      PF(x + i * esz);
      w8(x + i * esz, &v0, &v1);
      w8(x + (i + 8) * esz, &v2, &v3);
      a0 = _mm256_fmadd_pd(v0, v0, a0);
      a1 = _mm256_fmadd_pd(v1, v1, a1);
      a2 = _mm256_fmadd_pd(v2, v2, a2);
      a3 = _mm256_fmadd_pd(v3, v3, a3);
    }
    _mm256_storeu_pd(ln->d, a0);
    _mm256_storeu_pd(ln->d + 4, a1);
    _mm256_storeu_pd(ln->d + 8, a2);
    _mm256_storeu_pd(ln->d + 12, a3);
  }
  for (size_t l = 0; i < n; i++, l++) {
    double v = load(x + i * esz);
    ln->d[l] += v * v;
  }
}
/* Four rows at a time: each accumulator is loaded and stored once per
 * four rows, and still takes its rows in order. */
TGT ALWAYS_INLINE void avx_d_cols(void *acc, const unsigned char *x, size_t n,
                                  size_t nrows, size_t esz, w8_fn w8,
                                  ld_fn load)
{
  double *o = acc;
  const size_t rs = n * esz;
  size_t r = 0;
  while (r < nrows) {
    size_t nr = nrows - r < 4 ? nrows - r : 4, j = 0;
    if (nr == 4) {
      for (; j + 8 <= n; j += 8) {
        __m256d s0 = _mm256_loadu_pd(o + j);
        __m256d s1 = _mm256_loadu_pd(o + j + 4), v0, v1;
        for (size_t q = 0; q < 4; q++) {
          PF_COLS(x + q * rs + j * esz);
          w8(x + q * rs + j * esz, &v0, &v1);
          s0 = _mm256_fmadd_pd(v0, v0, s0);
          s1 = _mm256_fmadd_pd(v1, v1, s1);
        }
        _mm256_storeu_pd(o + j, s0);
        _mm256_storeu_pd(o + j + 4, s1);
      }
    } else {
      for (; j + 8 <= n; j += 8) {
        __m256d s0 = _mm256_loadu_pd(o + j);
        __m256d s1 = _mm256_loadu_pd(o + j + 4), v0, v1;
        for (size_t q = 0; q < nr; q++) {
          w8(x + q * rs + j * esz, &v0, &v1);
          s0 = _mm256_fmadd_pd(v0, v0, s0);
          s1 = _mm256_fmadd_pd(v1, v1, s1);
        }
        _mm256_storeu_pd(o + j, s0);
        _mm256_storeu_pd(o + j + 4, s1);
      }
    }
    for (; j < n; j++) {
      double s = o[j];
      for (size_t q = 0; q < nr; q++) {
        double v = load(x + q * rs + j * esz);
        s += v * v;
      }
      o[j] = s;
    }
    r += nr;
    x += nr * rs;
  }
}
/* Short rows: zero lanes beyond n add +0, an exact no-op (lane values
 * are never -0), so the full tree equals the truncated one. */
TGT ALWAYS_INLINE void avx_d_rows(void *acc, const unsigned char *x, size_t n,
                                  size_t nrows, size_t esz, w8_fn w8,
                                  ld_fn load)
{
  double *o = acc;
  if (n == L) {
    for (size_t r = 0; r < nrows; r++, x += L * esz) {
      __m256d v0, v1, v2, v3;
      PF(x);
      w8(x, &v0, &v1);
      w8(x + 8 * esz, &v2, &v3);
      o[r] += tree4(_mm256_mul_pd(v0, v0), _mm256_mul_pd(v1, v1),
                    _mm256_mul_pd(v2, v2), _mm256_mul_pd(v3, v3));
    }
  } else if (n < L) {
    unsigned char buf[L * 4]; /* esz <= 4 */
    memset(buf, 0, sizeof buf);
    for (size_t r = 0; r < nrows; r++, x += n * esz) {
      __m256d v0, v1, v2, v3;
      PF(x);
      memcpy(buf, x, n * esz);
      w8(buf, &v0, &v1);
      w8(buf + 8 * esz, &v2, &v3);
      o[r] += tree4(_mm256_mul_pd(v0, v0), _mm256_mul_pd(v1, v1),
                    _mm256_mul_pd(v2, v2), _mm256_mul_pd(v3, v3));
    }
  } else {
    /* run() from empty lanes and flush(), with the lanes in registers. */
    for (size_t r = 0; r < nrows; r++, x += n * esz) {
      __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
      size_t i = 0;
      for (; i + L <= n; i += L) {
        __m256d v0, v1, v2, v3;
        PF(x + i * esz);
        w8(x + i * esz, &v0, &v1);
        w8(x + (i + 8) * esz, &v2, &v3);
        a0 = _mm256_fmadd_pd(v0, v0, a0);
        a1 = _mm256_fmadd_pd(v1, v1, a1);
        a2 = _mm256_fmadd_pd(v2, v2, a2);
        a3 = _mm256_fmadd_pd(v3, v3, a3);
      }
      if (i < n) {
        double d[L];
        _mm256_storeu_pd(d, a0);
        _mm256_storeu_pd(d + 4, a1);
        _mm256_storeu_pd(d + 8, a2);
        _mm256_storeu_pd(d + 12, a3);
        for (size_t l = 0; i < n; i++, l++) {
          double v = load(x + i * esz);
          d[l] += v * v;
        }
        a0 = _mm256_loadu_pd(d);
        a1 = _mm256_loadu_pd(d + 4);
        a2 = _mm256_loadu_pd(d + 8);
        a3 = _mm256_loadu_pd(d + 12);
      }
      o[r] += tree4(a0, a1, a2, a3);
    }
  }
}

#define AVX_D_INSTANCE(name, esz, w8, load)                                    \
  TGT static void run_##name(union rd__lanes *ln, const unsigned char *x,      \
                             size_t n, uint64_t pos)                           \
  {                                                                            \
    avx_d_run(ln, x, n, pos, esz, w8, load);                                   \
  }                                                                            \
  TGT static void cols_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    avx_d_cols(acc, x, n, nrows, esz, w8, load);                               \
  }                                                                            \
  TGT static void rows_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    avx_d_rows(acc, x, n, nrows, esz, w8, load);                               \
  }

AVX_D_INSTANCE(f32, 4, w8_f32, ld_f32)
AVX_D_INSTANCE(f16, 2, w8_f16, ld_f16)
AVX_D_INSTANCE(bf16, 2, w8_bf16, ld_bf16)

/* ------------------------------------------------------------------ */
/* float64: vector check that a block is mid-range, vector Kahan       */
/* ------------------------------------------------------------------ */

/* All-ones in each lane whose |v| is mid-range (is_mid()); NaN is not. */
TGT static inline __m256d mid_mask(__m256d v)
{
  const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
  __m256d a = _mm256_and_pd(v, absm);
  __m256d in =
    _mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(BLUE_SMALL), _CMP_GE_OQ),
                  _mm256_cmp_pd(a, _mm256_set1_pd(BLUE_BIG), _CMP_LE_OQ));
  return _mm256_or_pd(in, _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_EQ_OQ));
}

/* kahan() on four lanes: the same operations, unfused. */
TGT static inline void kahan4(__m256d *s, __m256d *c, __m256d v)
{
  __m256d u = _mm256_sub_pd(_mm256_mul_pd(v, v), *c);
  __m256d t = _mm256_add_pd(*s, u);
  *c = _mm256_sub_pd(_mm256_sub_pd(t, *s), u);
  *s = t;
}

/* Cheap sufficient test that four vectors of |x| are all mid-range and
 * nonzero: their sum is <= 2^480 (an ordered compare, so false for NaN and
 * inf; rounding is monotone, so any |x| > 2^480 makes the sum > 2^480) and
 * their minimum is >= 2^-480.  A miss is only a slower path: blocks with
 * zeros or values near the thresholds fall back to mid_mask(). */
TGT static inline int all_mid_fast(__m256d a0, __m256d a1, __m256d a2,
                                   __m256d a3)
{
  __m256d sum = _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3));
  __m256d mn = _mm256_min_pd(_mm256_min_pd(a0, a1), _mm256_min_pd(a2, a3));
  __m256d ok =
    _mm256_and_pd(_mm256_cmp_pd(sum, _mm256_set1_pd(BLUE_BIG), _CMP_LE_OQ),
                  _mm256_cmp_pd(mn, _mm256_set1_pd(BLUE_SMALL), _CMP_GE_OQ));
  return _mm256_movemask_pd(ok) == 0xf;
}

/* The exact test (zeros count as mid), on values already made absolute. */
TGT static inline __m256d mid_mask_abs(__m256d a)
{
  __m256d in =
    _mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(BLUE_SMALL), _CMP_GE_OQ),
                  _mm256_cmp_pd(a, _mm256_set1_pd(BLUE_BIG), _CMP_LE_OQ));
  return _mm256_or_pd(in, _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_EQ_OQ));
}

TGT static inline __m256d abs4(__m256d v)
{
  return _mm256_and_pd(v, _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX)));
}

/* The 16 lanes live in named registers (s0..s3, c0..c3): arrays of vectors
 * indexed in loops were kept on the stack by GCC at -O2, which put store
 * forwarding into every Kahan step. */
TGT static void run_f64(union rd__lanes *ln, const unsigned char *x, size_t n,
                        uint64_t pos)
{
  size_t k = (size_t)(pos % L), i = 0;
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    lane_blue_add(ln, k, ld_f64(x + i * 8));
  if (i + L <= n) {
    __m256d s0 = _mm256_loadu_pd(ln->b.ms), c0 = _mm256_loadu_pd(ln->b.mc);
    __m256d s1 = _mm256_loadu_pd(ln->b.ms + 4);
    __m256d c1 = _mm256_loadu_pd(ln->b.mc + 4);
    __m256d s2 = _mm256_loadu_pd(ln->b.ms + 8);
    __m256d c2 = _mm256_loadu_pd(ln->b.mc + 8);
    __m256d s3 = _mm256_loadu_pd(ln->b.ms + 12);
    __m256d c3 = _mm256_loadu_pd(ln->b.mc + 12);
    for (; i + L <= n; i += L) {
      const double *p = (const double *)(const void *)(x + i * 8);
      __m256d v0 = _mm256_loadu_pd(p), v1 = _mm256_loadu_pd(p + 4);
      __m256d v2 = _mm256_loadu_pd(p + 8), v3 = _mm256_loadu_pd(p + 12);
      __m256d a0 = abs4(v0), a1 = abs4(v1), a2 = abs4(v2), a3 = abs4(v3);
      PF(p);
      PF(p + 8);
      if (all_mid_fast(a0, a1, a2, a3) ||
          _mm256_movemask_pd(
            _mm256_and_pd(_mm256_and_pd(mid_mask_abs(a0), mid_mask_abs(a1)),
                          _mm256_and_pd(mid_mask_abs(a2), mid_mask_abs(a3)))) ==
            0xf) {
        kahan4(&s0, &c0, v0);
        kahan4(&s1, &c1, v1);
        kahan4(&s2, &c2, v2);
        kahan4(&s3, &c3, v3);
      } else {
        /* Rare: the scalar classification, lanes in order. */
        _mm256_storeu_pd(ln->b.ms, s0);
        _mm256_storeu_pd(ln->b.mc, c0);
        _mm256_storeu_pd(ln->b.ms + 4, s1);
        _mm256_storeu_pd(ln->b.mc + 4, c1);
        _mm256_storeu_pd(ln->b.ms + 8, s2);
        _mm256_storeu_pd(ln->b.mc + 8, c2);
        _mm256_storeu_pd(ln->b.ms + 12, s3);
        _mm256_storeu_pd(ln->b.mc + 12, c3);
        for (size_t l = 0; l < L; l++)
          lane_blue_add(ln, l, ld_f64(x + (i + l) * 8));
        s0 = _mm256_loadu_pd(ln->b.ms);
        c0 = _mm256_loadu_pd(ln->b.mc);
        s1 = _mm256_loadu_pd(ln->b.ms + 4);
        c1 = _mm256_loadu_pd(ln->b.mc + 4);
        s2 = _mm256_loadu_pd(ln->b.ms + 8);
        c2 = _mm256_loadu_pd(ln->b.mc + 8);
        s3 = _mm256_loadu_pd(ln->b.ms + 12);
        c3 = _mm256_loadu_pd(ln->b.mc + 12);
      }
    }
    _mm256_storeu_pd(ln->b.ms, s0);
    _mm256_storeu_pd(ln->b.mc, c0);
    _mm256_storeu_pd(ln->b.ms + 4, s1);
    _mm256_storeu_pd(ln->b.mc + 4, c1);
    _mm256_storeu_pd(ln->b.ms + 8, s2);
    _mm256_storeu_pd(ln->b.mc + 8, c2);
    _mm256_storeu_pd(ln->b.ms + 12, s3);
    _mm256_storeu_pd(ln->b.mc + 12, c3);
  }
  for (size_t l = 0; i < n; i++, l++)
    lane_blue_add(ln, l, ld_f64(x + i * 8));
}

/* (ms, mc) of accumulator o: adjacent doubles of struct rd__blue. */
static inline double *blue_mid(struct rd__blue *o)
{
  return (double *)(void *)((unsigned char *)o + offsetof(struct rd__blue, ms));
}

/* Rows per block of cols_f64: each accumulator is read and written once per
 * block, so a longer block means less cache traffic on the accumulators
 * (64 bytes each) per input byte. */
#define COLS_F64_ROWS 8

/* Columns j..j+3 (accumulators o[0..3]) over nr <= COLS_F64_ROWS rows at p,
 * row stride rs.  The four (ms, mc) pairs are transposed into two vectors
 * and updated row by row, speculatively: the result is stored only if every
 * value was mid-range (the cheap test, then the exact one); otherwise the
 * scalar path runs from the untouched accumulators, each column's rows in
 * order. */
TGT static inline void cols4_f64(struct rd__blue *o, const unsigned char *p,
                                 size_t rs, size_t nr)
{
  __m256d a = _mm256_set_m128d(_mm_loadu_pd(blue_mid(&o[2])),
                               _mm_loadu_pd(blue_mid(&o[0])));
  __m256d b = _mm256_set_m128d(_mm_loadu_pd(blue_mid(&o[3])),
                               _mm_loadu_pd(blue_mid(&o[1])));
  __m256d s = _mm256_unpacklo_pd(a, b), c = _mm256_unpackhi_pd(a, b);
  __m256d sum = _mm256_setzero_pd(), mn = _mm256_set1_pd(BLUE_BIG);
  int ok;
  for (size_t q = 0; q < nr; q++) {
    __m256d v = _mm256_loadu_pd((const double *)(const void *)(p + q * rs));
    __m256d av = abs4(v);
    sum = _mm256_add_pd(sum, av);
    mn = _mm256_min_pd(mn, av);
    kahan4(&s, &c, v);
  }
  /* The sum/min test of all_mid_fast(), over the rows of the block. */
  ok = _mm256_movemask_pd(
         _mm256_and_pd(_mm256_cmp_pd(sum, _mm256_set1_pd(BLUE_BIG), _CMP_LE_OQ),
                       _mm256_cmp_pd(mn, _mm256_set1_pd(BLUE_SMALL),
                                     _CMP_GE_OQ))) == 0xf;
  if (!ok) {
    __m256d m = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    for (size_t q = 0; q < nr; q++)
      m = _mm256_and_pd(m, mid_mask_abs(abs4(_mm256_loadu_pd(
                             (const double *)(const void *)(p + q * rs)))));
    ok = _mm256_movemask_pd(m) == 0xf;
  }
  if (ok) {
    a = _mm256_unpacklo_pd(s, c);
    b = _mm256_unpackhi_pd(s, c);
    _mm_storeu_pd(blue_mid(&o[0]), _mm256_castpd256_pd128(a));
    _mm_storeu_pd(blue_mid(&o[2]), _mm256_extractf128_pd(a, 1));
    _mm_storeu_pd(blue_mid(&o[1]), _mm256_castpd256_pd128(b));
    _mm_storeu_pd(blue_mid(&o[3]), _mm256_extractf128_pd(b, 1));
  } else {
    for (size_t jj = 0; jj < 4; jj++)
      for (size_t q = 0; q < nr; q++)
        acc_blue_add(&o[jj], ld_f64(p + q * rs + jj * 8));
  }
}

TGT static void cols_f64(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  struct rd__blue *o = acc;
  const size_t rs = n * 8;
  size_t r = 0;
  while (r < nrows) {
    size_t nr = nrows - r < COLS_F64_ROWS ? nrows - r : COLS_F64_ROWS, j = 0;
    for (; j + 8 <= n; j += 8) {
      for (size_t q = 0; q < nr; q++)
        PF_COLS(x + q * rs + j * 8);
      cols4_f64(&o[j], x + j * 8, rs, nr);
      cols4_f64(&o[j + 4], x + (j + 4) * 8, rs, nr);
    }
    if (j + 4 <= n) {
      cols4_f64(&o[j], x + j * 8, rs, nr);
      j += 4;
    }
    for (; j < n; j++)
      for (size_t q = 0; q < nr; q++)
        acc_blue_add(&o[j], ld_f64(x + q * rs + j * 8));
    r += nr;
    x += nr * rs;
  }
}

TGT static void rows_f64(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  struct rd__blue *o = acc;
  if (n <= L) {
    rd__rows_f64_short(acc, x, n, nrows);
    return;
  }
  for (size_t r = 0; r < nrows; r++, x += n * 8) {
    union rd__lanes ln;
    memset(&ln.b, 0, sizeof ln.b);
    run_f64(&ln, x, n, 0);
    rd__flush_f64(&ln, &o[r]);
  }
}

/* ------------------------------------------------------------------ */
/* Short whole rows written as outputs (rows_out), four rows at a time */
/* ------------------------------------------------------------------ */

/* A row of n <= 16 elements is loaded as W = 4, 8 or 16 lanes (the
 * smallest W >= n), lanes >= n set to +0; each row is reduced to its four
 * level-2 sums c (lanes 0-3 after the tree's (k, k+8) and (k, k+4) levels;
 * for W < 16 the skipped levels add +0, an exact no-op), and the last two
 * levels, (k, k+2) then (k, k+1), run on four rows at once after a
 * transpose.  Each row sees exactly flush()'s operations (a + b = b + a
 * bitwise), so the bits are those of rows() + rd__acc_value().
 *
 * Sums (term x): rows() adds each element to a zero lane, which turns -0
 * into +0, and adds the tree to a zeroed accumulator; a lane loaded as -0
 * here can only change the sign of a zero sum (x + -0 = x + +0 = x for
 * x != 0), so adding +0 to the row sum at the end gives rows()'s bits.
 * For |x| and x^2 no lane is ever -0. */

/* The short rows have no software prefetch: one address-ordered stream,
 * which the hardware prefetcher follows.  With a prefetch 4 KiB ahead,
 * case F took 1.08-1.15x the time (REDUCED_KERNELS=avx2: float32 Sum and
 * L2, float64 L2; bench/README.md, "Short rows without software
 * prefetch"). */

/* Four elements widened to doubles (exact). */
typedef __m256d (*w4_fn)(const unsigned char *p);

TGT static inline __m256d w4_f32(const unsigned char *p)
{
  return _mm256_cvtps_pd(_mm_loadu_ps((const float *)(const void *)p));
}

TGT static inline __m256d w4_f16(const unsigned char *p)
{
  return _mm256_cvtps_pd(
    _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}

TGT static inline __m256d w4_bf16(const unsigned char *p)
{
  __m128i u = _mm_cvtepu16_epi32(
    _mm_loadl_epi64((const __m128i *)(const void *)p));
  return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(u, 16)));
}

TGT static inline __m256d w4_f64(const unsigned char *p)
{
  return _mm256_loadu_pd((const double *)(const void *)p);
}

/* Lane masks of a row of n elements in W lanes: all ones below n. */
struct row_masks {
  __m256d m0, m1, m2, m3;
};

TGT static inline struct row_masks row_masks(size_t n)
{
  int64_t b[16];
  struct row_masks mk;
  for (size_t l = 0; l < 16; l++)
    b[l] = l < n ? -1 : 0;
  mk.m0 = _mm256_castsi256_pd(_mm256_loadu_si256((const __m256i *)(void *)b));
  mk.m1 = _mm256_castsi256_pd(
    _mm256_loadu_si256((const __m256i *)(void *)(b + 4)));
  mk.m2 = _mm256_castsi256_pd(
    _mm256_loadu_si256((const __m256i *)(void *)(b + 8)));
  mk.m3 = _mm256_castsi256_pd(
    _mm256_loadu_si256((const __m256i *)(void *)(b + 12)));
  return mk;
}

/* The W/4 vectors of a row (lanes >= n zero when `masked`); named
 * variables, not an array: GCC -O2 kept small arrays of vectors on the
 * stack. */
struct row_v {
  __m256d v0, v1, v2, v3;
};

TGT ALWAYS_INLINE struct row_v row_load(const unsigned char *p, size_t esz,
                                        size_t W, int masked,
                                        const struct row_masks *mk, w4_fn w4)
{
  struct row_v r;
  r.v0 = w4(p);
  r.v1 = r.v2 = r.v3 = _mm256_setzero_pd();
  if (W >= 8)
    r.v1 = w4(p + 4 * esz);
  if (W == 16) {
    r.v2 = w4(p + 8 * esz);
    r.v3 = w4(p + 12 * esz);
  }
  if (masked) {
    r.v0 = _mm256_and_pd(r.v0, mk->m0);
    r.v1 = _mm256_and_pd(r.v1, mk->m1);
    r.v2 = _mm256_and_pd(r.v2, mk->m2);
    r.v3 = _mm256_and_pd(r.v3, mk->m3);
  }
  return r;
}

/* Levels (k, k+8) and (k, k+4) of the terms of a row's vectors.  With
 * `exact` (float32/16/bfloat16: squares exact in double) fma(v, v, q)
 * rounds like q + v * v; float64 squares round, so no FMA there. */
TGT ALWAYS_INLINE __m256d row_c(struct row_v r, size_t W, int exact, int term)
{
  __m256d q0, q1;
  if (term != RD__TERM_SQ) {
    if (term == RD__TERM_ABS) {
      const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
      r.v0 = _mm256_and_pd(r.v0, absm);
      r.v1 = _mm256_and_pd(r.v1, absm);
      r.v2 = _mm256_and_pd(r.v2, absm);
      r.v3 = _mm256_and_pd(r.v3, absm);
    }
    if (W == 4)
      return r.v0;
    if (W == 8)
      return _mm256_add_pd(r.v0, r.v1);
    return _mm256_add_pd(_mm256_add_pd(r.v0, r.v2), _mm256_add_pd(r.v1, r.v3));
  }
  q0 = _mm256_mul_pd(r.v0, r.v0);
  if (W == 4)
    return q0;
  q1 = _mm256_mul_pd(r.v1, r.v1);
  if (W == 8)
    return _mm256_add_pd(q0, q1);
  if (!exact)
    return _mm256_add_pd(_mm256_add_pd(q0, _mm256_mul_pd(r.v2, r.v2)),
                         _mm256_add_pd(q1, _mm256_mul_pd(r.v3, r.v3)));
  return _mm256_add_pd(_mm256_fmadd_pd(r.v2, r.v2, q0),
                       _mm256_fmadd_pd(r.v3, r.v3, q1));
}

/* Levels (k, k+2) and (k, k+1) of four rows' c: the four row sums in
 * row order (rows 0 and 2 share one vector, 1 and 3 the other, so the
 * horizontal add leaves them in order). */
TGT static inline __m256d rows4_tail(__m256d c0, __m256d c1, __m256d c2,
                                     __m256d c3)
{
  __m256d s02 = _mm256_add_pd(_mm256_permute2f128_pd(c0, c2, 0x20),
                              _mm256_permute2f128_pd(c0, c2, 0x31));
  __m256d s13 = _mm256_add_pd(_mm256_permute2f128_pd(c1, c3, 0x20),
                              _mm256_permute2f128_pd(c1, c3, 0x31));
  return _mm256_hadd_pd(s02, s13);
}

/* The same two levels for one row. */
TGT static inline double row1_tail(__m256d c)
{
  __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c),
                         _mm256_extractf128_pd(c, 1));
  return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

/* The final values of four row sums of n elements: rd__fin_value() of
 * each (sums: +0 added first, see above). */
TGT ALWAYS_INLINE __m256d fin4(__m256d s, int term, int fin, size_t n)
{
  if (term == RD__TERM_X)
    s = _mm256_add_pd(s, _mm256_setzero_pd());
  if (fin == RD__OUT_SQRT) {
    s = _mm256_sqrt_pd(s);
  } else if (fin == RD__OUT_MEAN) {
    s = _mm256_div_pd(s, _mm256_set1_pd((double)n));
  } else if (fin == RD__OUT_LOG) {
    double d[4];
    _mm256_storeu_pd(d, s);
    for (int i = 0; i < 4; i++)
      d[i] = log(d[i]); /* libm's, as finalize.c */
    s = _mm256_loadu_pd(d);
  }
  return s;
}

/* The same for one row sum. */
static inline double fin1(double s, int term, int fin, size_t n)
{
  if (term == RD__TERM_X)
    s += 0.0;
  return rd__fin_value(s, fin, n);
}

/* Four final values stored as outputs. */
/* Outputs of at least this many float32 rows are written with streaming
 * stores (when 16-byte aligned): they would not stay in cache anyway, and
 * streaming saves reading each line before writing it. */
#define NT_ROWS ((size_t)1 << 15)

TGT ALWAYS_INLINE void store4(int dt, __m256d s, int nt, uint16_t nan16,
                              unsigned char *o)
{
  if (dt == RD__K_F32) {
    /* NaN -> the default quiet NaN, then one RNE rounding, as (float)v */
    s = _mm256_blendv_pd(s, _mm256_set1_pd(NAN),
                         _mm256_cmp_pd(s, s, _CMP_UNORD_Q));
    if (nt)
      _mm_stream_ps((float *)(void *)o, _mm256_cvtpd_ps(s));
    else
      _mm_storeu_ps((float *)(void *)o, _mm256_cvtpd_ps(s));
  } else {
    /* One rounding to nearest even, as rd_f64_to_f16/_bf16: first to
     * float rounding to odd (toward zero, the last bit set if inexact),
     * which keeps more than two extra bits for either target, then to
     * nearest even; NaN -> nan16.  Toward zero: one step down in the
     * magnitude bits where the nearest float is larger in magnitude. */
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    __m128 f = _mm256_cvtpd_ps(s);
    __m256d b = _mm256_cvtps_pd(f);
    __m128i up = _mm_castps_si128(
      _mm256_cvtpd_ps(_mm256_cmp_pd(_mm256_and_pd(b, absm),
                                    _mm256_and_pd(s, absm), _CMP_GT_OQ)));
    __m128i inexact = _mm_castps_si128(
      _mm256_cvtpd_ps(_mm256_cmp_pd(b, s, _CMP_NEQ_OQ)));
    __m128i isnan = _mm_castps_si128(
      _mm256_cvtpd_ps(_mm256_cmp_pd(s, s, _CMP_UNORD_Q)));
    __m128i u = _mm_add_epi32(_mm_castps_si128(f), up); /* -1 if up */
    __m128i h;
    u = _mm_or_si128(u, _mm_and_si128(inexact, _mm_set1_epi32(1)));
    if (dt == RD__K_F16) {
      h = _mm_cvtps_ph(_mm_castsi128_ps(u), _MM_FROUND_TO_NEAREST_INT);
    } else {
      __m128i odd = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
      h = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7fff)),
                                       odd),
                         16);
      h = _mm_packus_epi32(h, h);
    }
    h = _mm_blendv_epi8(h, _mm_set1_epi16((short)nan16),
                        _mm_packs_epi32(isnan, isnan));
    _mm_storel_epi64((__m128i *)(void *)o, h);
  }
}

/* Rows r < `safe` may be loaded in W lanes straight from x; the last few
 * (whose W lanes would run past the input) go through a zeroed copy. */
static inline size_t rows_safe(size_t n, size_t nrows, size_t W)
{
  if (n == W)
    return nrows;
  return nrows * n >= W ? (nrows * n - W) / n + 1 : 0;
}

TGT ALWAYS_INLINE void avx_d_rows_out(void *out, const unsigned char *x,
                                      size_t n, size_t nrows, int fin, int term,
                                      size_t esz, int dt, w4_fn w4, size_t W)
{
  unsigned char *o = out;
  const size_t rs = n * esz, ob = dt == RD__K_F32 ? 4 : 2;
  const size_t safe = rows_safe(n, nrows, W);
  const int masked = n != W;
  const int nt = dt == RD__K_F32 && nrows >= NT_ROWS &&
                 ((uintptr_t)out & 15) == 0;
  const struct row_masks mk = row_masks(n);
  const uint16_t nan16 = dt == RD__K_F16    ? rd_f64_to_f16(NAN)
                         : dt == RD__K_BF16 ? rd_f64_to_bf16(NAN)
                                            : 0;
  size_t r = 0;
  for (; r + 4 <= safe; r += 4, x += 4 * rs, o += 4 * ob) {
    __m256d c0, c1, c2, c3;
    c0 = row_c(row_load(x, esz, W, masked, &mk, w4), W, 1, term);
    c1 = row_c(row_load(x + rs, esz, W, masked, &mk, w4), W, 1, term);
    c2 = row_c(row_load(x + 2 * rs, esz, W, masked, &mk, w4), W, 1, term);
    c3 = row_c(row_load(x + 3 * rs, esz, W, masked, &mk, w4), W, 1, term);
    store4(dt, fin4(rows4_tail(c0, c1, c2, c3), term, fin, n), nt, nan16, o);
  }
  if (nt)
    _mm_sfence(); /* order the streaming stores before what follows */
  for (; r < nrows; r++, x += rs, o += ob) {
    unsigned char buf[16 * 4] = { 0 }; /* esz <= 4 */
    const unsigned char *p = x;
    double s;
    if (r >= safe) {
      memcpy(buf, x, rs);
      p = buf;
    }
    s = row1_tail(row_c(row_load(p, esz, W, masked, &mk, w4), W, 1, term));
    rd__float_store(dt == RD__K_F32   ? RD_FLOAT32
                    : dt == RD__K_F16 ? RD_FLOAT16
                                      : RD_BFLOAT16,
                    fin1(s, term, fin, n), o);
  }
}

/* The three widths, n a constant in the common case of 16. */
TGT ALWAYS_INLINE void avx_d_rows_out_n(void *out, const unsigned char *x,
                                        size_t n, size_t nrows, int fin,
                                        int term, size_t esz, int dt, w4_fn w4)
{
  if (n == 16)
    avx_d_rows_out(out, x, 16, nrows, fin, term, esz, dt, w4, 16);
  else if (n > 8)
    avx_d_rows_out(out, x, n, nrows, fin, term, esz, dt, w4, 16);
  else if (n > 4)
    avx_d_rows_out(out, x, n, nrows, fin, term, esz, dt, w4, 8);
  else
    avx_d_rows_out(out, x, n, nrows, fin, term, esz, dt, w4, 4);
}

/* One instance per type and term, `fin` a run-time argument (the
 * finalisation costs little next to the loads). */
#define ROWS_OUT(name, esz, dt, w4, term)                                      \
  TGT static void rows_out_##name(void *out, const unsigned char *x, size_t n, \
                                  size_t nrows, int fin)                       \
  {                                                                            \
    avx_d_rows_out_n(out, x, n, nrows, fin, term, esz, dt, w4);                \
  }
ROWS_OUT(f32, 4, RD__K_F32, w4_f32, RD__TERM_SQ)
ROWS_OUT(f16, 2, RD__K_F16, w4_f16, RD__TERM_SQ)
ROWS_OUT(bf16, 2, RD__K_BF16, w4_bf16, RD__TERM_SQ)
ROWS_OUT(sum_f32, 4, RD__K_F32, w4_f32, RD__TERM_X)
ROWS_OUT(sum_f16, 2, RD__K_F16, w4_f16, RD__TERM_X)
ROWS_OUT(sum_bf16, 2, RD__K_BF16, w4_bf16, RD__TERM_X)
ROWS_OUT(abs_f32, 4, RD__K_F32, w4_f32, RD__TERM_ABS)
ROWS_OUT(abs_f16, 2, RD__K_F16, w4_f16, RD__TERM_ABS)
ROWS_OUT(abs_bf16, 2, RD__K_BF16, w4_bf16, RD__TERM_ABS)

/* float64 (Blue): a row whose terms are all mid-range (zeros included)
 * has, from a zeroed accumulator, ms = the lane tree of the squares and
 * every other field 0 (rd__rows_f64_short's mid path), so its value is that
 * tree (or its square root): the same four-row tree as above.  Groups with
 * any other term take the scalar definition row by row. */
TGT ALWAYS_INLINE int mid4(struct row_v r, size_t W, int masked)
{
  __m256d m;
  if (!masked && W == 16 &&
      all_mid_fast(abs4(r.v0), abs4(r.v1), abs4(r.v2), abs4(r.v3)))
    return 1;
  /* lanes beyond W are zero: mid */
  m = _mm256_and_pd(_mm256_and_pd(mid_mask(r.v0), mid_mask(r.v1)),
                    _mm256_and_pd(mid_mask(r.v2), mid_mask(r.v3)));
  return _mm256_movemask_pd(m) == 0xf;
}

/* One row by the scalar definition (zeroed accumulator, value, store). */
static void row_f64_scalar(unsigned char *o, const unsigned char *x, size_t n,
                           int l2)
{
  struct rd__blue a;
  memset(&a, 0, sizeof a);
  rd__rows_f64_short(&a, x, n, 1);
  rd__float_store(RD_FLOAT64, rd__acc_value(RD__ACC_BLUE, &a, l2), o);
}

TGT ALWAYS_INLINE void avx_f64_rows_out(void *out, const unsigned char *x,
                                        size_t n, size_t nrows, int l2,
                                        size_t W)
{
  unsigned char *o = out;
  const size_t rs = n * 8, safe = rows_safe(n, nrows, W);
  const int masked = n != W;
  const struct row_masks mk = row_masks(n);
  size_t r = 0;
  for (; r + 4 <= safe; r += 4, x += 4 * rs, o += 32) {
    struct row_v v0, v1, v2, v3;
    __m256d s;
    v0 = row_load(x, 8, W, masked, &mk, w4_f64);
    v1 = row_load(x + rs, 8, W, masked, &mk, w4_f64);
    v2 = row_load(x + 2 * rs, 8, W, masked, &mk, w4_f64);
    v3 = row_load(x + 3 * rs, 8, W, masked, &mk, w4_f64);
    if (!(mid4(v0, W, masked) & mid4(v1, W, masked) & mid4(v2, W, masked) &
          mid4(v3, W, masked))) {
      for (size_t q = 0; q < 4; q++)
        row_f64_scalar(o + 8 * q, x + q * rs, n, l2);
      continue;
    }
    s = rows4_tail(row_c(v0, W, 0, RD__TERM_SQ), row_c(v1, W, 0, RD__TERM_SQ),
                   row_c(v2, W, 0, RD__TERM_SQ), row_c(v3, W, 0, RD__TERM_SQ));
    if (l2)
      s = _mm256_sqrt_pd(s);
    _mm256_storeu_pd((double *)(void *)o, s); /* finite: no NaN to clean */
  }
  for (; r < nrows; r++, x += rs, o += 8)
    row_f64_scalar(o, x, n, l2);
}

TGT static void rows_out_f64(void *out, const unsigned char *x, size_t n,
                             size_t nrows, int l2)
{
  if (n == 16)
    avx_f64_rows_out(out, x, 16, nrows, l2, 16);
  else if (n > 8)
    avx_f64_rows_out(out, x, n, nrows, l2, 16);
  else if (n > 4)
    avx_f64_rows_out(out, x, n, nrows, l2, 8);
  else
    avx_f64_rows_out(out, x, n, nrows, l2, 4);
}

int rd__avx2_rows_out(int dtype, int term, void *out, const unsigned char *x,
                      size_t n, size_t nrows, int fin)
{
  static void (*const tab[3][3])(void *, const unsigned char *, size_t, size_t,
                                 int) = {
    { rows_out_f32, rows_out_f16, rows_out_bf16 },
    { rows_out_sum_f32, rows_out_sum_f16, rows_out_sum_bf16 },
    { rows_out_abs_f32, rows_out_abs_f16, rows_out_abs_bf16 },
  };
  int t = dtype == RD_FLOAT32 ? 0 : dtype == RD_FLOAT16 ? 1 : 2;
  if (n > L || term < RD__TERM_SQ || term > RD__TERM_ABS || fin < RD__OUT_SUM ||
      fin > RD__OUT_LOG)
    return -1;
  if (dtype == RD_FLOAT64) {
    if (term != RD__TERM_SQ || fin > RD__OUT_SQRT)
      return -1;
    rows_out_f64(out, x, n, nrows, fin == RD__OUT_SQRT);
    return 0;
  }
  if (dtype != RD_FLOAT32 && dtype != RD_FLOAT16 && dtype != RD_BFLOAT16)
    return -1;
  tab[term][t](out, x, n, nrows, fin);
  return 0;
}

/* ------------------------------------------------------------------ */
/* 32-bit integers                                                    */
/* ------------------------------------------------------------------ */

/* cols() for 32-bit integers.  Sums are exact, so only overflow matters:
 * each square (< 2^64) is split into 32-bit halves, which are summed in
 * 64-bit lanes over a block of COLS_I32_ROWS rows (< 2^36, far from
 * overflow), and only then folded into the 128-bit accumulators, once per
 * column per block instead of once per element. */
#define COLS_I32_ROWS 8

TGT static inline __m256i abs_i32(__m256i v)
{
  return _mm256_abs_epi32(v); /* |INT32_MIN| = 0x80000000 read unsigned */
}

TGT static inline __m256i id_u32(__m256i v)
{
  return v;
}

/* Eight columns at p over nr rows (stride rs) into o[0..7]: pmuludq
 * squares the even 32-bit lanes, so the odd columns are shifted down. */
/* Templates: the per-lane absolute value (absf) and the scalar square (sq)
 * are parameters, instantiated per type below. */
typedef __m256i (*vabs_fn)(__m256i v);

TGT ALWAYS_INLINE void avx_cols8_i32(u128 *o, const unsigned char *p, size_t rs,
                                     size_t nr, vabs_fn absf)
{
  const __m256i m32 = _mm256_set1_epi64x(0xffffffff);
  __m256i le = _mm256_setzero_si256(), he = le, lo = le, ho = le;
  uint64_t t[16];
  for (size_t q = 0; q < nr; q++) {
    __m256i v = absf(
      _mm256_loadu_si256((const __m256i *)(const void *)(p + q * rs)));
    __m256i e = _mm256_mul_epu32(v, v);
    __m256i d = _mm256_srli_epi64(v, 32);
    d = _mm256_mul_epu32(d, d);
    le = _mm256_add_epi64(le, _mm256_and_si256(e, m32));
    he = _mm256_add_epi64(he, _mm256_srli_epi64(e, 32));
    lo = _mm256_add_epi64(lo, _mm256_and_si256(d, m32));
    ho = _mm256_add_epi64(ho, _mm256_srli_epi64(d, 32));
  }
  _mm256_storeu_si256((__m256i *)(void *)t, le);
  _mm256_storeu_si256((__m256i *)(void *)(t + 4), he);
  _mm256_storeu_si256((__m256i *)(void *)(t + 8), lo);
  _mm256_storeu_si256((__m256i *)(void *)(t + 12), ho);
  for (size_t k = 0; k < 4; k++) {
    o[2 * k] += ((u128)t[4 + k] << 32) + t[k];
    o[2 * k + 1] += ((u128)t[12 + k] << 32) + t[8 + k];
  }
}
TGT ALWAYS_INLINE void avx_cols_i32(void *acc, const unsigned char *x, size_t n,
                                    size_t nrows, vabs_fn absf, sq32_fn sq)
{
  u128 *o = acc;
  const size_t rs = n * 4;
  size_t r = 0;
  while (r < nrows) {
    size_t nr = nrows - r < COLS_I32_ROWS ? nrows - r : COLS_I32_ROWS;
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
      for (size_t q = 0; q < nr; q++)
        PF_COLS(x + q * rs + j * 4);
      avx_cols8_i32(o + j, x + j * 4, rs, nr, absf);
      avx_cols8_i32(o + j + 8, x + (j + 8) * 4, rs, nr, absf);
    }
    if (j + 8 <= n) {
      avx_cols8_i32(o + j, x + j * 4, rs, nr, absf);
      j += 8;
    }
    for (; j < n; j++) {
      u128 s = 0;
      for (size_t q = 0; q < nr; q++)
        s += sq(x + q * rs + j * 4);
      o[j] += s;
    }
    r += nr;
    x += nr * rs;
  }
}

#define AVX_I32_COLS(name, absf, sq)                                           \
  TGT static void cols_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    avx_cols_i32(acc, x, n, nrows, absf, sq);                                  \
  }

AVX_I32_COLS(i32, abs_i32, sq_i32)
AVX_I32_COLS(u32, id_u32, sq_u32)

/* ------------------------------------------------------------------ */
/* 32-bit integers: the portable loops, vectorised with AVX2           */
/* ------------------------------------------------------------------ */

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
I32_RUN(i32, sq_i32)
I32_RUN(u32, sq_u32)
#pragma GCC pop_options

/* rows() of 32-bit integers for n <= 16: a row is two masked loads of 8
 * lanes (lanes >= n read as 0, nothing past the row is touched); pmuludq
 * squares the even and the odd lanes, and the 32-bit halves of the squares
 * are summed in 64-bit lanes (< 2^37) and joined in 128 bits once per row.
 * Exact, so the grouping does not matter. */
TGT ALWAYS_INLINE void avx_rows_i32(void *acc, const unsigned char *x, size_t n,
                                    size_t nrows, vabs_fn absf, sq32_fn sq)
{
  const __m256i m32 = _mm256_set1_epi64x(0xffffffff);
  u128 *o = acc;
  int32_t b[16];
  __m256i k0, k1;
  if (n > L) {
    i32_rows(acc, x, n, nrows, sq);
    return;
  }
  for (size_t l = 0; l < 16; l++)
    b[l] = l < n ? -1 : 0;
  k0 = _mm256_loadu_si256((const __m256i *)(void *)b);
  k1 = _mm256_loadu_si256((const __m256i *)(void *)(b + 8));
  for (size_t r = 0; r < nrows; r++, x += n * 4) {
    const int *p = (const int *)(const void *)x;
    __m256i v0 = absf(_mm256_maskload_epi32(p, k0));
    __m256i v1 = absf(_mm256_maskload_epi32(p + 8, k1));
    __m256i e0 = _mm256_mul_epu32(v0, v0), e1 = _mm256_mul_epu32(v1, v1);
    __m256i d0 = _mm256_srli_epi64(v0, 32), d1 = _mm256_srli_epi64(v1, 32);
    __m256i lo, hi;
    uint64_t t[8];
    if (r % 4 == 0)
      PF(x);
    d0 = _mm256_mul_epu32(d0, d0);
    d1 = _mm256_mul_epu32(d1, d1);
    lo = _mm256_add_epi64(_mm256_add_epi64(_mm256_and_si256(e0, m32),
                                           _mm256_and_si256(e1, m32)),
                          _mm256_add_epi64(_mm256_and_si256(d0, m32),
                                           _mm256_and_si256(d1, m32)));
    hi = _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(e0, 32),
                                           _mm256_srli_epi64(e1, 32)),
                          _mm256_add_epi64(_mm256_srli_epi64(d0, 32),
                                           _mm256_srli_epi64(d1, 32)));
    _mm256_storeu_si256((__m256i *)(void *)t, lo);
    _mm256_storeu_si256((__m256i *)(void *)(t + 4), hi);
    o[r] += ((u128)((t[4] + t[5]) + (t[6] + t[7])) << 32) +
            ((t[0] + t[1]) + (t[2] + t[3]));
  }
}

TGT static void rows_i32(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  avx_rows_i32(acc, x, n, nrows, abs_i32, sq_i32);
}

TGT static void rows_u32(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  avx_rows_i32(acc, x, n, nrows, id_u32, sq_u32);
}

/* ------------------------------------------------------------------ */
/* Sum and L1 of float32/float16/bfloat16 (RD__F_SUMD, see ops.c)      */
/* ------------------------------------------------------------------ */

/* The element map: x, or |x| (the sign bit cleared, as fabs()). */
TGT static inline __m256d sum_term4(__m256d v, int absval)
{
  const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
  return absval ? _mm256_and_pd(v, absm) : v;
}

static inline double sum_term1(double v, int absval)
{
  return absval ? fabs(v) : v;
}

/* Signed float16 widening for the scalar heads and tails (ld_f16() drops
 * the sign). */
static inline double ld_f16_signed(const unsigned char *p)
{
  uint16_t h;
  double a = ld_f16(p);
  memcpy(&h, p, sizeof h);
  return (h & 0x8000) ? -a : a;
}

/* The lane order of sumd_run() in ops.c: head up to lane 0, blocks of 16
 * in four registers, tail into the lanes. */
TGT static inline void avx_sum_run(union rd__lanes *ln, const unsigned char *x,
                                   size_t n, uint64_t pos, size_t esz, int dt,
                                   int absval)
{
  size_t k = (size_t)(pos % L), i = 0;
#define LD1(p)                                                                 \
  sum_term1(dt == 1   ? ld_f32(p)                                              \
            : dt == 2 ? ld_f16_signed(p)                                       \
                      : ld_bf16(p),                                            \
            absval)
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    ln->d[k] += LD1(x + i * esz);
  if (i + L <= n) {
    __m256d a0 = _mm256_loadu_pd(ln->d), a1 = _mm256_loadu_pd(ln->d + 4);
    __m256d a2 = _mm256_loadu_pd(ln->d + 8), a3 = _mm256_loadu_pd(ln->d + 12);
    for (; i + L <= n; i += L) {
      __m256d v0, v1, v2, v3;
      PF(x + i * esz);
      if (dt == 1) {
        w8_f32(x + i * esz, &v0, &v1);
        w8_f32(x + (i + 8) * esz, &v2, &v3);
      } else if (dt == 2) {
        w8_f16(x + i * esz, &v0, &v1);
        w8_f16(x + (i + 8) * esz, &v2, &v3);
      } else {
        w8_bf16(x + i * esz, &v0, &v1);
        w8_bf16(x + (i + 8) * esz, &v2, &v3);
      }
      a0 = _mm256_add_pd(a0, sum_term4(v0, absval));
      a1 = _mm256_add_pd(a1, sum_term4(v1, absval));
      a2 = _mm256_add_pd(a2, sum_term4(v2, absval));
      a3 = _mm256_add_pd(a3, sum_term4(v3, absval));
    }
    _mm256_storeu_pd(ln->d, a0);
    _mm256_storeu_pd(ln->d + 4, a1);
    _mm256_storeu_pd(ln->d + 8, a2);
    _mm256_storeu_pd(ln->d + 12, a3);
  }
  for (size_t l = 0; i < n; i++, l++)
    ln->d[l] += LD1(x + i * esz);
}

/* acc[j] += term, rows in order (8 columns per vector step). */
TGT static inline void avx_sum_cols(void *acc, const unsigned char *x, size_t n,
                                    size_t nrows, size_t esz, int dt,
                                    int absval)
{
  double *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * esz) {
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
      __m256d v0, v1;
      PF(x + j * esz);
      if (dt == 1)
        w8_f32(x + j * esz, &v0, &v1);
      else if (dt == 2)
        w8_f16(x + j * esz, &v0, &v1);
      else
        w8_bf16(x + j * esz, &v0, &v1);
      _mm256_storeu_pd(o + j, _mm256_add_pd(_mm256_loadu_pd(o + j),
                                            sum_term4(v0, absval)));
      _mm256_storeu_pd(o + j + 4, _mm256_add_pd(_mm256_loadu_pd(o + j + 4),
                                                sum_term4(v1, absval)));
    }
    for (; j < n; j++)
      o[j] += LD1(x + j * esz);
  }
}

/* Each run from zero lanes, then the fixed tree: rd__flush_d(). */
TGT static inline void avx_sum_rows(void *acc, const unsigned char *x, size_t n,
                                    size_t nrows, size_t esz, int dt,
                                    int absval)
{
  double *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * esz) {
    union rd__lanes ln;
    memset(ln.d, 0, sizeof ln.d);
    avx_sum_run(&ln, x, n, 0, esz, dt, absval);
    o[r] += tree4(_mm256_loadu_pd(ln.d), _mm256_loadu_pd(ln.d + 4),
                  _mm256_loadu_pd(ln.d + 8), _mm256_loadu_pd(ln.d + 12));
  }
#undef LD1
}

#define AVX_SUM(nm, esz, dt, absval)                                           \
  TGT static void run_##nm(union rd__lanes *ln, const unsigned char *x,        \
                           size_t n, uint64_t pos)                             \
  {                                                                            \
    avx_sum_run(ln, x, n, pos, esz, dt, absval);                               \
  }                                                                            \
  TGT static void cols_##nm(void *acc, const unsigned char *x, size_t n,       \
                            size_t nrows)                                      \
  {                                                                            \
    avx_sum_cols(acc, x, n, nrows, esz, dt, absval);                           \
  }                                                                            \
  TGT static void rows_##nm(void *acc, const unsigned char *x, size_t n,       \
                            size_t nrows)                                      \
  {                                                                            \
    avx_sum_rows(acc, x, n, nrows, esz, dt, absval);                           \
  }
AVX_SUM(sum_f32, 4, 1, 0)
AVX_SUM(sum_f16, 2, 2, 0)
AVX_SUM(sum_bf16, 2, 3, 0)
AVX_SUM(abs_f32, 4, 1, 1)
AVX_SUM(abs_f16, 2, 2, 1)
AVX_SUM(abs_bf16, 2, 3, 1)

/* ------------------------------------------------------------------ */
/* float32 Max/Min/ArgMax/ArgMin: best 32-bit key of a block (ops.c)   */
/* ------------------------------------------------------------------ */

/* Exact: the same result as ops.c's block_best32() for any grouping. */
TGT int32_t rd__avx2_best32(const unsigned char *x, size_t n, int is_max,
                            int zero_tie, int *nan)
{
  const int32_t ident = is_max ? INT32_MIN : INT32_MAX;
  const __m256i absm = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i negz = _mm256_set1_epi32((int32_t)0x80000000u);
  const __m256i idv = _mm256_set1_epi32(ident);
  __m256i b0 = idv, b1 = idv, an = _mm256_setzero_si256();
  int32_t best[16], r;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i u0 = _mm256_loadu_si256((const __m256i *)(const void *)(x + i * 4));
    __m256i u1 = _mm256_loadu_si256(
      (const __m256i *)(const void *)(x + i * 4 + 32));
    __m256i k0, k1, n0, n1;
    PF(x + i * 4);
    if (zero_tie) {
      u0 = _mm256_andnot_si256(_mm256_cmpeq_epi32(u0, negz), u0);
      u1 = _mm256_andnot_si256(_mm256_cmpeq_epi32(u1, negz), u1);
    }
    k0 = _mm256_xor_si256(u0,
                          _mm256_and_si256(_mm256_srai_epi32(u0, 31), absm));
    k1 = _mm256_xor_si256(u1,
                          _mm256_and_si256(_mm256_srai_epi32(u1, 31), absm));
    n0 = _mm256_cmpgt_epi32(_mm256_and_si256(u0, absm), inf);
    n1 = _mm256_cmpgt_epi32(_mm256_and_si256(u1, absm), inf);
    an = _mm256_or_si256(an, _mm256_or_si256(n0, n1));
    k0 = _mm256_blendv_epi8(k0, idv, n0);
    k1 = _mm256_blendv_epi8(k1, idv, n1);
    if (is_max) {
      b0 = _mm256_max_epi32(b0, k0);
      b1 = _mm256_max_epi32(b1, k1);
    } else {
      b0 = _mm256_min_epi32(b0, k0);
      b1 = _mm256_min_epi32(b1, k1);
    }
  }
  _mm256_storeu_si256((__m256i *)(void *)best, b0);
  _mm256_storeu_si256((__m256i *)(void *)(best + 8), b1);
  *nan = !_mm256_testz_si256(an, an);
  r = ident;
  for (size_t l = 0; l < 16; l++)
    r = is_max ? (best[l] > r ? best[l] : r) : (best[l] < r ? best[l] : r);
  for (; i < n; i++) {
    uint32_t u;
    int32_t k;
    memcpy(&u, x + i * 4, 4);
    if (zero_tie && u == 0x80000000u)
      u = 0;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      *nan = 1;
      continue;
    }
    k = (int32_t)u ^ (int32_t)((uint32_t)((int32_t)u >> 31) & 0x7fffffffu);
    r = is_max ? (k > r ? k : r) : (k < r ? k : r);
  }
  return r;
}

/* ------------------------------------------------------------------ */
/* float32 Max/Min/ArgMax/ArgMin columns (ops.c's cols32_tile)         */
/* ------------------------------------------------------------------ */

/* One element row of 8 columns into the state (b, bi, nn) of row rv. */
TGT ALWAYS_INLINE void avx_col8(__m256i u, __m256i rv, int is_max, int arg,
                                int last, __m256i *b, __m256i *bi, __m256i *nn)
{
  const __m256i absm = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i negz = _mm256_set1_epi32((int32_t)0x80000000u);
  const __m256i none = _mm256_set1_epi32(-1);
  __m256i k, isn, upd;
  if (arg)
    u = _mm256_andnot_si256(_mm256_cmpeq_epi32(u, negz), u);
  k = _mm256_xor_si256(u, _mm256_and_si256(_mm256_srai_epi32(u, 31), absm));
  isn = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
  /* NaN row: the first (nn still -1) or, with last, the latest */
  if (last)
    *nn = _mm256_blendv_epi8(*nn, rv, isn);
  else
    *nn = _mm256_blendv_epi8(*nn, rv,
                             _mm256_and_si256(isn,
                                              _mm256_cmpeq_epi32(*nn, none)));
  if (!arg) {
    k = _mm256_blendv_epi8(k, *b, isn);
    *b = is_max ? _mm256_max_epi32(*b, k) : _mm256_min_epi32(*b, k);
    return;
  }
  if (last) /* k >= b (k <= b): not (b > k) */
    upd = _mm256_xor_si256(is_max ? _mm256_cmpgt_epi32(*b, k)
                                  : _mm256_cmpgt_epi32(k, *b),
                           none);
  else
    upd = is_max ? _mm256_cmpgt_epi32(k, *b) : _mm256_cmpgt_epi32(*b, k);
  upd = _mm256_andnot_si256(isn, upd);
  *b = _mm256_blendv_epi8(*b, k, upd);
  *bi = _mm256_blendv_epi8(*bi, rv, upd);
}

#define LDI(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define STI(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)

/* One tile of ncols (a multiple of 8) columns over nrows rows, the state
 * in the caller's arrays: the same exact result as ops.c's cols32_tile, 8
 * columns per vector and four rows (in order) per load of the state. */
TGT ALWAYS_INLINE void avx_cols32(const unsigned char *x, size_t stride,
                                  size_t ncols, size_t nrows, int is_max,
                                  int arg, int last, int32_t *best,
                                  int32_t *bidx, int32_t *nidx)
{
  const size_t rs = stride * 4;
  size_t r = 0;
  for (; r + 4 <= nrows; r += 4, x += 4 * rs) {
    const __m256i r0 = _mm256_set1_epi32((int32_t)r);
    const __m256i r1 = _mm256_set1_epi32((int32_t)r + 1);
    const __m256i r2 = _mm256_set1_epi32((int32_t)r + 2);
    const __m256i r3 = _mm256_set1_epi32((int32_t)r + 3);
    for (size_t j = 0; j < ncols; j += 8) {
      const unsigned char *p = x + j * 4;
      __m256i b = LDI(best + j), nn = LDI(nidx + j);
      __m256i bi = arg ? LDI(bidx + j) : _mm256_setzero_si256();
      if (j % 16 == 0 && r + 8 <= nrows) { /* the next four rows */
        _mm_prefetch((const char *)(p + 4 * rs), _MM_HINT_T1);
        _mm_prefetch((const char *)(p + 5 * rs), _MM_HINT_T1);
        _mm_prefetch((const char *)(p + 6 * rs), _MM_HINT_T1);
        _mm_prefetch((const char *)(p + 7 * rs), _MM_HINT_T1);
      }
      avx_col8(LDI(p), r0, is_max, arg, last, &b, &bi, &nn);
      avx_col8(LDI(p + rs), r1, is_max, arg, last, &b, &bi, &nn);
      avx_col8(LDI(p + 2 * rs), r2, is_max, arg, last, &b, &bi, &nn);
      avx_col8(LDI(p + 3 * rs), r3, is_max, arg, last, &b, &bi, &nn);
      STI(best + j, b);
      STI(nidx + j, nn);
      if (arg)
        STI(bidx + j, bi);
    }
  }
  for (; r < nrows; r++, x += rs) {
    const __m256i rv = _mm256_set1_epi32((int32_t)r);
    for (size_t j = 0; j < ncols; j += 8) {
      __m256i b = LDI(best + j), nn = LDI(nidx + j);
      __m256i bi = arg ? LDI(bidx + j) : _mm256_setzero_si256();
      avx_col8(LDI(x + j * 4), rv, is_max, arg, last, &b, &bi, &nn);
      STI(best + j, b);
      STI(nidx + j, nn);
      if (arg)
        STI(bidx + j, bi);
    }
  }
}

/* Horizontal best of the 8 lanes of b, broadcast to every lane. */
TGT ALWAYS_INLINE __m256i avx_hbest(__m256i b, int is_max)
{
  __m256i t = _mm256_permute2x128_si256(b, b, 1);
  b = is_max ? _mm256_max_epi32(b, t) : _mm256_min_epi32(b, t);
  t = _mm256_shuffle_epi32(b, 0x4e);
  b = is_max ? _mm256_max_epi32(b, t) : _mm256_min_epi32(b, t);
  t = _mm256_shuffle_epi32(b, 0xb1);
  return is_max ? _mm256_max_epi32(b, t) : _mm256_min_epi32(b, t);
}

/* Short rows of nv * 8 (nv 1..4) elements, one result per row: the
 * definition is ops.c's rows32_short (first or last index of the best key
 * and of a NaN, -1 if none). */
TGT ALWAYS_INLINE void avx_rows32(const unsigned char *x, size_t nv,
                                  size_t nrows, int is_max, int arg, int last,
                                  int32_t *best, int32_t *bidx, int32_t *nidx)
{
  const __m256i absm = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i negz = _mm256_set1_epi32((int32_t)0x80000000u);
  const __m256i idv = _mm256_set1_epi32(is_max ? INT32_MIN : INT32_MAX);
  for (size_t r = 0; r < nrows; r++, x += nv * 32) {
    __m256i k[4], b = idv;
    unsigned nm = 0, em = 0;
    if (r % 2 == 0)
      PF(x);
    for (size_t v = 0; v < nv; v++) {
      __m256i u = LDI(x + v * 32), isn;
      if (arg)
        u = _mm256_andnot_si256(_mm256_cmpeq_epi32(u, negz), u);
      k[v] = _mm256_xor_si256(u,
                              _mm256_and_si256(_mm256_srai_epi32(u, 31), absm));
      isn = _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf);
      nm |= (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(isn)) << (8 * v);
      k[v] = _mm256_blendv_epi8(k[v], idv, isn);
      b = is_max ? _mm256_max_epi32(b, k[v]) : _mm256_min_epi32(b, k[v]);
    }
    b = avx_hbest(b, is_max);
    best[r] = _mm256_cvtsi256_si32(b);
    if (!arg) {
      nidx[r] = nm ? 0 : -1;
      continue;
    }
    nidx[r] = !nm ? -1 : last ? 31 - __builtin_clz(nm) : __builtin_ctz(nm);
    for (size_t v = 0; v < nv; v++)
      em |= (unsigned)_mm256_movemask_ps(
              _mm256_castsi256_ps(_mm256_cmpeq_epi32(k[v], b)))
            << (8 * v);
    em &= ~nm; /* a NaN lane holds the identity, never a number's key */
    bidx[r] = !em ? -1 : last ? 31 - __builtin_clz(em) : __builtin_ctz(em);
  }
}

TGT void rd__avx2_rows32(const unsigned char *x, size_t n, size_t nrows,
                         int mode, int32_t *best, int32_t *bidx, int32_t *nidx)
{
  const size_t nv = n / 8;
  switch (mode) {
  case RD__C32_MAX: avx_rows32(x, nv, nrows, 1, 0, 0, best, bidx, nidx); break;
  case RD__C32_MIN: avx_rows32(x, nv, nrows, 0, 0, 0, best, bidx, nidx); break;
  case RD__C32_ARGMAX:
    avx_rows32(x, nv, nrows, 1, 1, 0, best, bidx, nidx);
    break;
  case RD__C32_ARGMAXL:
    avx_rows32(x, nv, nrows, 1, 1, 1, best, bidx, nidx);
    break;
  case RD__C32_ARGMIN:
    avx_rows32(x, nv, nrows, 0, 1, 0, best, bidx, nidx);
    break;
  default: avx_rows32(x, nv, nrows, 0, 1, 1, best, bidx, nidx); break;
  }
}

TGT void rd__avx2_cols32(const unsigned char *x, size_t stride, size_t ncols,
                         size_t nrows, int mode, int32_t *best, int32_t *bidx,
                         int32_t *nidx)
{
  switch (mode) {
  case RD__C32_MAX:
    avx_cols32(x, stride, ncols, nrows, 1, 0, 0, best, bidx, nidx);
    break;
  case RD__C32_MIN:
    avx_cols32(x, stride, ncols, nrows, 0, 0, 0, best, bidx, nidx);
    break;
  case RD__C32_ARGMAX:
    avx_cols32(x, stride, ncols, nrows, 1, 1, 0, best, bidx, nidx);
    break;
  case RD__C32_ARGMAXL:
    avx_cols32(x, stride, ncols, nrows, 1, 1, 1, best, bidx, nidx);
    break;
  case RD__C32_ARGMIN:
    avx_cols32(x, stride, ncols, nrows, 0, 1, 0, best, bidx, nidx);
    break;
  default:
    avx_cols32(x, stride, ncols, nrows, 0, 1, 1, best, bidx, nidx);
    break;
  }
}

/* ------------------------------------------------------------------ */
/* float32 ReduceProd blocks (ops.c's prodl_run)                       */
/* ------------------------------------------------------------------ */

/* One lane step of ops.c's prodl_mul on four lanes: the same multiply,
 * then the exponent moved into e by the same bit operations. */
TGT ALWAYS_INLINE void avx_prod4(__m256d *m, __m256i *e, __m128 f)
{
  const __m256i emask = _mm256_set1_epi64x((int64_t)0x7ff << 52);
  const __m256i ebias = _mm256_set1_epi64x((int64_t)1022 << 52);
  const __m256i b1022 = _mm256_set1_epi64x(1022);
  const __m128 absm = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  __m256d p = _mm256_mul_pd(*m, _mm256_cvtps_pd(_mm_and_ps(f, absm)));
  __m256i b = _mm256_castpd_si256(p);
  *e = _mm256_add_epi64(
    *e,
    _mm256_sub_epi64(_mm256_srli_epi64(_mm256_and_si256(b, emask), 52), b1022));
  *m = _mm256_castsi256_pd(
    _mm256_or_si256(_mm256_andnot_si256(emask, b), ebias));
}

TGT size_t rd__avx2_prod_f32(double *m, int64_t *e, const unsigned char *x,
                             size_t nblocks, uint32_t *neg)
{
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lim = _mm256_set1_epi32(0x7f7ffffe); /* FLT_MAX bits - 1 */
  const __m256i absm = _mm256_set1_epi32(0x7fffffff);
  __m256d m0 = _mm256_loadu_pd(m), m1 = _mm256_loadu_pd(m + 4);
  __m256d m2 = _mm256_loadu_pd(m + 8), m3 = _mm256_loadu_pd(m + 12);
  __m256i e0 = LDI(e), e1 = LDI(e + 4), e2 = LDI(e + 8), e3 = LDI(e + 12);
  uint32_t ng = 0;
  size_t b = 0;
  for (; b < nblocks; b++, x += 64) {
    __m256i u0 = LDI(x), u1 = LDI(x + 32);
    /* ordinary: 0 < |x| < inf, i.e. |u| - 1 in [0, 0x7f7ffffe]; as
     * signed 32-bit, |u| - 1 is -1 for zero and > lim for inf or NaN */
    __m256i a0 = _mm256_sub_epi32(_mm256_and_si256(u0, absm), one);
    __m256i a1 = _mm256_sub_epi32(_mm256_and_si256(u1, absm), one);
    __m256i bad = _mm256_or_si256(_mm256_or_si256(_mm256_cmpgt_epi32(a0, lim),
                                                  _mm256_cmpgt_epi32(a1, lim)),
                                  _mm256_or_si256(_mm256_srai_epi32(a0, 31),
                                                  _mm256_srai_epi32(a1, 31)));
    if (!_mm256_testz_si256(bad, bad))
      break;
    PF(x);
    ng ^= (uint32_t)__builtin_popcount(
      (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(u0)) |
      ((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(u1)) << 8));
    avx_prod4(&m0, &e0, _mm256_castps256_ps128(_mm256_castsi256_ps(u0)));
    avx_prod4(&m1, &e1, _mm256_extractf128_ps(_mm256_castsi256_ps(u0), 1));
    avx_prod4(&m2, &e2, _mm256_castps256_ps128(_mm256_castsi256_ps(u1)));
    avx_prod4(&m3, &e3, _mm256_extractf128_ps(_mm256_castsi256_ps(u1), 1));
  }
  _mm256_storeu_pd(m, m0);
  _mm256_storeu_pd(m + 4, m1);
  _mm256_storeu_pd(m + 8, m2);
  _mm256_storeu_pd(m + 12, m3);
  STI(e, e0);
  STI(e + 4, e1);
  STI(e + 8, e2);
  STI(e + 12, e3);
  *neg ^= ng & 1;
  return b;
}

/* Columns of float32 Prod (ops.c's cols32s_prod): one row segment of
 * nvec groups of 4 columns, column state in arrays (mantissa hi + lo,
 * exponent e, sign parity neg).  Each element is ops.c's prod_add for an
 * ordinary x: f = frexp(|x|) by bits, e += its exponent, the double-double
 * multiply (hi * f, its exact error by FMA, + lo * f, fast two-sum) and the
 * renormalisation of prod_norm, all in the same operations.  Stops before
 * the first group holding a zero, inf or NaN; returns the groups done. */
TGT size_t rd__avx2_prod_cols_f32(double *hi, double *lo, int64_t *e,
                                  int64_t *neg, const unsigned char *x,
                                  size_t nvec)
{
  const __m256i emask = _mm256_set1_epi64x((int64_t)0x7ff << 52);
  const __m256i ebias = _mm256_set1_epi64x((int64_t)1022 << 52);
  const __m256i b1022 = _mm256_set1_epi64x(1022);
  const __m256i b1023 = _mm256_set1_epi64x(1023);
  const __m128i one = _mm_set1_epi32(1);
  const __m128i lim = _mm_set1_epi32(0x7f7ffffe);
  const __m128i absm = _mm_set1_epi32(0x7fffffff);
  size_t g = 0;
  for (; g < nvec; g++) {
    __m128i u = _mm_loadu_si128((const __m128i *)(const void *)(x + g * 16));
    __m128i a = _mm_sub_epi32(_mm_and_si128(u, absm), one);
    __m128i bad = _mm_or_si128(_mm_cmpgt_epi32(a, lim), _mm_srai_epi32(a, 31));
    __m256d h, l, fm, p, er, t, sc;
    __m256i ab, ex, E, hb;
    if (!_mm_testz_si128(bad, bad))
      break;
    ab = _mm256_castpd_si256(
      _mm256_cvtps_pd(_mm_castsi128_ps(_mm_and_si128(u, absm))));
    ex = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_and_si256(ab, emask), 52),
                          b1022);
    fm = _mm256_castsi256_pd(
      _mm256_or_si256(_mm256_andnot_si256(emask, ab), ebias));
    h = _mm256_loadu_pd(hi + 4 * g);
    l = _mm256_loadu_pd(lo + 4 * g);
    E = _mm256_add_epi64(LDI(e + 4 * g), ex);
    p = _mm256_mul_pd(h, fm);
    er = _mm256_fmsub_pd(h, fm, p);
    er = _mm256_add_pd(er, _mm256_mul_pd(l, fm));
    t = _mm256_add_pd(p, er);
    l = _mm256_sub_pd(er, _mm256_sub_pd(t, p));
    hb = _mm256_castpd_si256(t);
    ex = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_and_si256(hb, emask), 52),
                          b1022);
    h = _mm256_castsi256_pd(
      _mm256_or_si256(_mm256_andnot_si256(emask, hb), ebias));
    sc = _mm256_castsi256_pd(
      _mm256_slli_epi64(_mm256_sub_epi64(b1023, ex), 52));
    l = _mm256_mul_pd(l, sc);
    E = _mm256_add_epi64(E, ex);
    _mm256_storeu_pd(hi + 4 * g, h);
    _mm256_storeu_pd(lo + 4 * g, l);
    STI(e + 4 * g, E);
    STI(neg + 4 * g,
        _mm256_xor_si256(LDI(neg + 4 * g),
                         _mm256_cvtepu32_epi64(_mm_srli_epi32(u, 31))));
  }
  return g;
}

/* ------------------------------------------------------------------ */
/* float32/16/bfloat16 ReduceLogSumExp blocks (ops.c's lsel_block)     */
/* ------------------------------------------------------------------ */

/* Columns of float32 LogSumExp (ops.c's colsks_lse_f32): one row segment
 * of nvec groups of 4 columns, column state (m, hi, lo) in arrays.  For a
 * finite x, ops.c's lsec_add is: if x > m + RD__LSE_K, hi = hi e + 1 and
 * lo = lo e with e = expk(m - x) (an empty column, m = -inf: e = 0), and
 * m = x; else hi += expk(x - m).  The same operations here, both cases
 * computed and blended per lane.  Stops before the first group holding a
 * NaN or an infinity; returns the groups done. */
TGT size_t rd__avx2_lse_cols_f32(double *m, double *hi, double *lo,
                                 const unsigned char *x, size_t nvec)
{
  const __m256d ninf = _mm256_set1_pd(-INFINITY);
  const __m256d pinf = _mm256_set1_pd(INFINITY);
  const __m256d onev = _mm256_set1_pd(1.0);
  const __m256d kv = _mm256_set1_pd(RD__LSE_K);
  size_t g = 0;
  for (; g < nvec; g++) {
    __m256d v = _mm256_cvtps_pd(
      _mm_loadu_ps((const float *)(const void *)(x + g * 16)));
    __m256d mv = _mm256_loadu_pd(m + 4 * g), h = _mm256_loadu_pd(hi + 4 * g);
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(v, ninf, _CMP_GT_OQ),
                               _mm256_cmp_pd(v, pinf, _CMP_LT_OQ));
    __m256d up, e;
    if (_mm256_movemask_pd(ok) != 0xf)
      break;
    up = _mm256_cmp_pd(v, _mm256_add_pd(mv, kv), _CMP_GT_OQ);
    e = rd__expk4(
      _mm256_blendv_pd(_mm256_sub_pd(v, mv), _mm256_sub_pd(mv, v), up));
    if (_mm256_movemask_pd(up)) { /* the lanes whose shift moves */
      __m256d l = _mm256_loadu_pd(lo + 4 * g);
      _mm256_storeu_pd(lo + 4 * g,
                       _mm256_blendv_pd(l, _mm256_mul_pd(l, e), up));
      _mm256_storeu_pd(m + 4 * g, _mm256_blendv_pd(mv, v, up));
    }
    _mm256_storeu_pd(hi + 4 * g,
                     _mm256_blendv_pd(_mm256_add_pd(h, e),
                                      _mm256_add_pd(_mm256_mul_pd(h, e), onev),
                                      up));
  }
  return g;
}

TGT int rd__avx2_lse16(double *s, const unsigned char *x, int dt, double m)
{
  __m256d v[4], mv = _mm256_set1_pd(m), bad = _mm256_setzero_pd();
  const __m256d mk = _mm256_set1_pd(m + RD__LSE_K);
  const __m256d ninf = _mm256_set1_pd(-INFINITY);
  if (dt == 1) {
    w8_f32(x, &v[0], &v[1]);
    w8_f32(x + 32, &v[2], &v[3]);
  } else if (dt == 2) {
    /* signed: F16C keeps the sign (ld_f16() is only for squares) */
    w8_f16(x, &v[0], &v[1]);
    w8_f16(x + 16, &v[2], &v[3]);
  } else {
    w8_bf16(x, &v[0], &v[1]);
    w8_bf16(x + 16, &v[2], &v[3]);
  }
  for (int q = 0; q < 4; q++) {
    /* not (v <= m + K) and not -inf: NaN, +inf or the shift moves */
    __m256d le = _mm256_cmp_pd(v[q], mk, _CMP_LE_OQ);
    __m256d mi = _mm256_cmp_pd(v[q], ninf, _CMP_EQ_OQ);
    bad = _mm256_or_pd(bad, _mm256_andnot_pd(_mm256_or_pd(le, mi),
                                             _mm256_castsi256_pd(
                                               _mm256_set1_epi64x(-1))));
  }
  if (_mm256_movemask_pd(bad))
    return 1;
  for (int q = 0; q < 4; q++)
    _mm256_storeu_pd(s + 4 * q,
                     _mm256_add_pd(_mm256_loadu_pd(s + 4 * q),
                                   rd__expk4(_mm256_sub_pd(v[q], mv))));
  return 0;
}

int rd__kernels_avx2_sum(int dtype, int absval, struct rd__kernel *k)
{
#define SETS(nm)                                                               \
  do {                                                                         \
    k->run = run_##nm;                                                         \
    k->cols = cols_##nm;                                                       \
    k->rows = rows_##nm;                                                       \
  } while (0)
  switch (dtype) {
  case 1:
    if (absval)
      SETS(abs_f32);
    else
      SETS(sum_f32);
    return 0;
  case 10:
    if (absval)
      SETS(abs_f16);
    else
      SETS(sum_f16);
    return 0;
  case 16:
    if (absval)
      SETS(abs_bf16);
    else
      SETS(sum_bf16);
    return 0;
  default: return -1;
  }
#undef SETS
}

int rd__kernels_avx2_fill(struct rd__kernel *tab)
{
#define SET(id, nm)                                                            \
  do {                                                                         \
    tab[id].run = run_##nm;                                                    \
    tab[id].cols = cols_##nm;                                                  \
    tab[id].rows = rows_##nm;                                                  \
  } while (0)
  SET(RD__K_F32, f32);
  SET(RD__K_F16, f16);
  SET(RD__K_BF16, bf16);
  SET(RD__K_F64, f64);
  SET(RD__K_I32, i32);
  SET(RD__K_U32, u32);
#undef SET
  return 0;
}

#else /* no x86-64 SIMD path in this build */

int rd__avx2_rows_out(int dtype, int term, void *out, const unsigned char *x,
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

int rd__kernels_avx2_fill(struct rd__kernel *tab)
{
  (void)tab;
  return -1;
}

int rd__kernels_avx2_sum(int dtype, int absval, struct rd__kernel *k)
{
  (void)dtype;
  (void)absval;
  (void)k;
  return -1;
}

int32_t rd__avx2_best32(const unsigned char *x, size_t n, int is_max,
                        int zero_tie, int *nan)
{
  (void)x;
  (void)n;
  (void)is_max;
  (void)zero_tie;
  (void)nan;
  return 0; /* never called: no SIMD implementation in this build */
}

int rd__avx2_lse16(double *s, const unsigned char *x, int dt, double m)
{
  (void)s;
  (void)x;
  (void)dt;
  (void)m;
  return 1; /* never called */
}

size_t rd__avx2_lse_cols_f32(double *m, double *hi, double *lo,
                             const unsigned char *x, size_t nvec)
{
  (void)m;
  (void)hi;
  (void)lo;
  (void)x;
  (void)nvec;
  return 0; /* never called */
}

size_t rd__avx2_prod_cols_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                              const unsigned char *x, size_t nvec)
{
  (void)hi;
  (void)lo;
  (void)e;
  (void)neg;
  (void)x;
  (void)nvec;
  return 0; /* never called */
}

size_t rd__avx2_prod_f32(double *m, int64_t *e, const unsigned char *x,
                         size_t nblocks, uint32_t *neg)
{
  (void)m;
  (void)e;
  (void)x;
  (void)nblocks;
  (void)neg;
  return 0; /* never called */
}

void rd__avx2_rows32(const unsigned char *x, size_t n, size_t nrows, int mode,
                     int32_t *best, int32_t *bidx, int32_t *nidx)
{
  (void)x;
  (void)n;
  (void)nrows;
  (void)mode;
  (void)best;
  (void)bidx;
  (void)nidx; /* never called */
}

void rd__avx2_cols32(const unsigned char *x, size_t stride, size_t ncols,
                     size_t nrows, int mode, int32_t *best, int32_t *bidx,
                     int32_t *nidx)
{
  (void)x;
  (void)stride;
  (void)ncols;
  (void)nrows;
  (void)mode;
  (void)best;
  (void)bidx;
  (void)nidx; /* never called */
}

#endif
