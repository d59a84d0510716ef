/* kernels_avx512.c - AVX-512 kernels (x86-64 only; chosen at run time by
 * kernels.c when the CPU and the OS have AVX-512 F, BW, VL and DQ besides
 * the AVX2 path's features).
 *
 * The 16 lanes of a run of kernels.h are two __m512d registers (lanes 0-7
 * and 8-15), so the summation order, and therefore every bit, is that of
 * the portable and the AVX2 paths: each lane in element order, the fixed
 * combining tree, columns row by row.  FMA only where the product is exact
 * (squares of float32/float16/bfloat16 in double); the float64 Kahan steps
 * multiply and subtract separately.
 *
 * The table starts as a copy of the AVX2 table: entries where a wider
 * vector does not help stay AVX2 (short rows n <= 16, which rows() hands
 * to the AVX2 rows() it was given).
 */
#include "kernels_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT                                                                    \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The prefetch distance of kernels_avx2.c (see there). */
#define PF_DIST 2048
#define PF(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T0)
/* Columns (several rows read side by side): into L2 only, as
 * kernels_avx2.c's PF_COLS (into L1 they evicted lines still to be
 * read). */
#define PF_COLS(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T1)

/* The AVX2 rows() of each kernel id, for rows of n <= L (set by fill). */
static void (*avx2_rows[RD__K_COUNT])(void *acc, const unsigned char *x,
                                      size_t n, size_t nrows);

/* ------------------------------------------------------------------ */
/* Widening loads: 16 elements -> two vectors of 8 doubles (exact)     */
/* ------------------------------------------------------------------ */

TGT ALWAYS_INLINE void split16(__m512 f, __m512d *lo, __m512d *hi)
{
  *lo = _mm512_cvtps_pd(_mm512_castps512_ps256(f));
  *hi = _mm512_cvtps_pd(
    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
}

TGT ALWAYS_INLINE void w16_f32(const unsigned char *p, __m512d *lo, __m512d *hi)
{
  split16(_mm512_loadu_ps((const void *)p), lo, hi);
}

/* 8 elements -> one vector of 8 doubles (for 8-column steps). */
TGT ALWAYS_INLINE __m512d w8_f32(const unsigned char *p)
{
  return _mm512_cvtps_pd(_mm256_loadu_ps((const float *)(const void *)p));
}

/* The conversion is exact for every half, subnormals included; the sign
 * is kept (ld_f16() drops it, which only matters for sums). */
TGT ALWAYS_INLINE __m512d w8_f16(const unsigned char *p)
{
  return _mm512_cvtps_pd(
    _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p)));
}

TGT ALWAYS_INLINE __m512d w8_bf16(const unsigned char *p)
{
  __m256i u = _mm256_cvtepu16_epi32(
    _mm_loadu_si128((const __m128i *)(const void *)p));
  return _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(u, 16)));
}

/* 16 float16/bfloat16 elements as two halves of 8, each widened from
 * memory: no 512-bit widening and extract of its upper half, which took
 * the shuffle port (case C one thread: float16 0.85x the time, bfloat16
 * 0.90-0.95x; case D 0.95x).  float32 keeps one load and the extract:
 * two halves took its case C 1.05x the time. */
TGT ALWAYS_INLINE void w16_f16(const unsigned char *p, __m512d *lo, __m512d *hi)
{
  *lo = w8_f16(p);
  *hi = w8_f16(p + 16);
}

TGT ALWAYS_INLINE void w16_bf16(const unsigned char *p, __m512d *lo,
                                __m512d *hi)
{
  *lo = w8_bf16(p);
  *hi = w8_bf16(p + 16);
}

/* The element type: 1 float32, 2 float16, 3 bfloat16 (constants in each
 * instance, so the branches fold). */
TGT ALWAYS_INLINE void w16(int dt, const unsigned char *p, __m512d *lo,
                           __m512d *hi)
{
  if (dt == 1)
    w16_f32(p, lo, hi);
  else if (dt == 2)
    w16_f16(p, lo, hi);
  else
    w16_bf16(p, lo, hi);
}

TGT ALWAYS_INLINE __m512d w8(int dt, const unsigned char *p)
{
  return dt == 1 ? w8_f32(p) : dt == 2 ? w8_f16(p) : w8_bf16(p);
}

/* Signed float16 widening for scalar heads and tails of sums. */
static inline double ld_f16_signed(const unsigned char *p)
{
  uint16_t h;
  double a = ld_f16(p);
  memcpy(&h, p, sizeof h);
  return (h & 0x8000) ? -a : a;
}

/* ------------------------------------------------------------------ */
/* The fixed tree on lanes 0-7 (a) and 8-15 (b)                        */
/* ------------------------------------------------------------------ */

/* (k, k+8), (k, k+4), (k, k+2), (k, k+1): the tree of kernels.h. */
TGT ALWAYS_INLINE double tree2(__m512d a, __m512d b)
{
  __m512d s = _mm512_add_pd(a, b);
  __m256d c = _mm256_add_pd(_mm512_castpd512_pd256(s),
                            _mm512_extractf64x4_pd(s, 1));
  __m128d d = _mm_add_pd(_mm256_castpd256_pd128(c),
                         _mm256_extractf128_pd(c, 1));
  return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

/* ------------------------------------------------------------------ */
/* One template for squares (sq), sums and L1 (abs) of the double class */
/* ------------------------------------------------------------------ */

/* The term of element v: mode 0 v*v (added by FMA: exact product), 1 v,
 * 2 |v|. */
enum { M_SQ, M_SUM, M_ABS };

TGT ALWAYS_INLINE __m512d term_add(__m512d acc, __m512d v, int mode)
{
  if (mode == M_SQ)
    return _mm512_fmadd_pd(v, v, acc);
  if (mode == M_ABS)
    v = _mm512_abs_pd(v);
  return _mm512_add_pd(acc, v);
}

static inline double ld1(int dt, int mode, const unsigned char *p)
{
  double v;
  if (mode == M_SQ) {
    v = dt == 1 ? ld_f32(p) : dt == 2 ? ld_f16(p) : ld_bf16(p);
    return v * v;
  }
  v = dt == 1 ? ld_f32(p) : dt == 2 ? ld_f16_signed(p) : ld_bf16(p);
  return mode == M_ABS ? fabs(v) : v;
}

/* Head up to lane 0, blocks of 16 in two registers, tail into the lanes. */
TGT ALWAYS_INLINE void z_run(union rd__lanes *ln, const unsigned char *x,
                             size_t n, uint64_t pos, size_t esz, int dt,
                             int mode)
{
  size_t k = (size_t)(pos % L), i = 0;
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    ln->d[k] += ld1(dt, mode, x + i * esz);
  if (i + L <= n) {
    __m512d a0 = _mm512_loadu_pd(ln->d), a1 = _mm512_loadu_pd(ln->d + 8);
    for (; i + L <= n; i += L) {
      __m512d v0, v1;
      PF(x + i * esz);
      w16(dt, x + i * esz, &v0, &v1);
      a0 = term_add(a0, v0, mode);
      a1 = term_add(a1, v1, mode);
    }
    _mm512_storeu_pd(ln->d, a0);
    _mm512_storeu_pd(ln->d + 8, a1);
  }
  for (size_t l = 0; i < n; i++, l++)
    ln->d[l] += ld1(dt, mode, x + i * esz);
}

/* w columns at x (accumulators o) over nr rows: 16, 8, then 1 at a time.
 * The rows are read side by side, so their prefetches go into L2 only
 * (into L1 they evicted lines still to be read): case C float32 Sum 0.80x
 * the time on 1 thread, 0.93x on 2, L2 0.82x and 0.92x, Mean 0.79x and
 * 0.92x (alternating medians). */
TGT ALWAYS_INLINE void z_cols_rest(double *o, const unsigned char *x, size_t rs,
                                   size_t nr, size_t w, size_t esz, int dt,
                                   int mode)
{
  size_t j = 0;
  for (; j + 16 <= w; j += 16) {
    __m512d s0 = _mm512_loadu_pd(o + j), s1 = _mm512_loadu_pd(o + j + 8);
    for (size_t q = 0; q < nr; q++) {
      __m512d v0, v1;
      PF_COLS(x + q * rs + j * esz);
      w16(dt, x + q * rs + j * esz, &v0, &v1);
      s0 = term_add(s0, v0, mode);
      s1 = term_add(s1, v1, mode);
    }
    _mm512_storeu_pd(o + j, s0);
    _mm512_storeu_pd(o + j + 8, s1);
  }
  for (; j + 8 <= w; j += 8) {
    __m512d s = _mm512_loadu_pd(o + j);
    for (size_t q = 0; q < nr; q++)
      s = term_add(s, w8(dt, x + q * rs + j * esz), mode);
    _mm512_storeu_pd(o + j, s);
  }
  for (; j < w; j++) {
    double s = o[j];
    for (size_t q = 0; q < nr; q++)
      s += ld1(dt, mode, x + q * rs + j * esz);
    o[j] = s;
  }
}

/* Four rows at a time, 16 columns per step (z_cols_rest over the whole
 * row): each accumulator is loaded and stored once per four rows and takes
 * its rows in order. */
TGT ALWAYS_INLINE void z_cols4(void *acc, const unsigned char *x, size_t n,
                               size_t nrows, size_t esz, int dt, int mode)
{
  const size_t rs = n * esz;
  for (size_t r = 0; r < nrows; r += 4, x += 4 * rs)
    z_cols_rest(acc, x, rs, nrows - r < 4 ? nrows - r : 4, n, esz, dt, mode);
}

/* cols() of the double class for rows of up to ZC_PF / ZC_R bytes (16 KiB:
 * float32 up to 4096 columns, float16/bfloat16 up to 8192): blocks of
 * ZC_R rows; in a
 * block, tiles of 64 columns keep eight accumulators in registers across
 * the rows (eight independent chains) while the same columns ZC_R rows
 * further on (the next block) are prefetched.  Every column still takes
 * its rows in order, so the tiling is bit-identical. */
#define ZC_PF 262144 /* most bytes of a block: the prefetch distance */
#define ZC_R 16
/* (Measured on case C/D shapes: 16-row blocks beat 8; 2-byte rows of
 * 16 KiB run faster tiled than in z_cols4(), float32 rows of 32 KiB not.) */
/* Blocks farther ahead than this are prefetched into L2 only: L1 (32-48
 * KiB) would evict them before their turn.  (Case C float16/bfloat16,
 * 256 KiB ahead: 0.75-0.96x the time against L1 prefetches; case D,
 * 16 KiB (float16) or 32 KiB (float32) ahead, no gain, so it keeps them;
 * alternating medians.) */
#define ZC_PF_L1 32768

/* Prefetches the line at a into L2 only (far) or into L1 too. */
TGT ALWAYS_INLINE void zc_pf(const unsigned char *a, int far)
{
  if (far)
    _mm_prefetch((const char *)a, _MM_HINT_T1);
  else
    _mm_prefetch((const char *)a, _MM_HINT_T0);
}

/* 64 columns at p (accumulators o) over nr rows of stride rs, prefetching
 * pf bytes ahead (into L2 only when `far`, see ZC_PF_L1); the accumulators
 * are named so that they stay in registers. */
TGT ALWAYS_INLINE void z_cols64(double *o, const unsigned char *p, size_t rs,
                                size_t nr, size_t pf, int far, size_t esz,
                                int dt, int mode)
{
  __m512d s0 = _mm512_loadu_pd(o), s1 = _mm512_loadu_pd(o + 8);
  __m512d s2 = _mm512_loadu_pd(o + 16), s3 = _mm512_loadu_pd(o + 24);
  __m512d s4 = _mm512_loadu_pd(o + 32), s5 = _mm512_loadu_pd(o + 40);
  __m512d s6 = _mm512_loadu_pd(o + 48), s7 = _mm512_loadu_pd(o + 56);
  for (size_t q = 0; q < nr; q++, p += rs) {
    __m512d v0, v1, v2, v3, v4, v5, v6, v7;
    zc_pf(p + pf, far);
    zc_pf(p + pf + 64, far);
    if (esz == 4) {
      zc_pf(p + pf + 128, far);
      zc_pf(p + pf + 192, far);
    }
    w16(dt, p, &v0, &v1);
    w16(dt, p + 16 * esz, &v2, &v3);
    w16(dt, p + 32 * esz, &v4, &v5);
    w16(dt, p + 48 * esz, &v6, &v7);
    s0 = term_add(s0, v0, mode);
    s1 = term_add(s1, v1, mode);
    s2 = term_add(s2, v2, mode);
    s3 = term_add(s3, v3, mode);
    s4 = term_add(s4, v4, mode);
    s5 = term_add(s5, v5, mode);
    s6 = term_add(s6, v6, mode);
    s7 = term_add(s7, v7, mode);
  }
  _mm512_storeu_pd(o, s0);
  _mm512_storeu_pd(o + 8, s1);
  _mm512_storeu_pd(o + 16, s2);
  _mm512_storeu_pd(o + 24, s3);
  _mm512_storeu_pd(o + 32, s4);
  _mm512_storeu_pd(o + 40, s5);
  _mm512_storeu_pd(o + 48, s6);
  _mm512_storeu_pd(o + 56, s7);
}

/* Rows of up to ZC_ONE_N columns: one whole row after another, 16 columns
 * per step, the accumulators (at most 16 KiB: they stay in L1) loaded and
 * stored once per row, no software prefetch.  The reads are then a single
 * stream in address order, which the hardware prefetcher follows as fast
 * as the probe's; rows read side by side (tiles, z_cols4) are several
 * streams 1-2 KiB apart, which it follows slower, prefetched or not. */
#define ZC_ONE_N 2048
TGT ALWAYS_INLINE void z_cols1(double *o, const unsigned char *x, size_t n,
                               size_t nrows, size_t esz, int dt, int mode)
{
  const size_t rs = n * esz;
  for (size_t r = 0; r < nrows; r++, x += rs) {
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
      __m512d s0 = _mm512_loadu_pd(o + j), s1 = _mm512_loadu_pd(o + j + 8);
      __m512d v0, v1;
      w16(dt, x + j * esz, &v0, &v1);
      _mm512_storeu_pd(o + j, term_add(s0, v0, mode));
      _mm512_storeu_pd(o + j + 8, term_add(s1, v1, mode));
    }
    if (j < n)
      z_cols_rest(o + j, x + j * esz, rs, 1, n - j, esz, dt, mode);
  }
}

/* Rows of up to ZC_ONE_N columns: z_cols1(); rows of ZC_R * rs <= ZC_PF
 * bytes: tiles of 64 columns over blocks of ZC_R rows, prefetching the
 * next block; longer rows: z_cols4(), whose prefetch 2 KiB ahead in the
 * same row suits them. */
TGT ALWAYS_INLINE void z_cols(void *acc, const unsigned char *x, size_t n,
                              size_t nrows, size_t esz, int dt, int mode)
{
  double *o = acc;
  const size_t rs = n * esz, pf = ZC_R * rs;
  const int far = pf > ZC_PF_L1;
  if (n <= ZC_ONE_N) {
    z_cols1(o, x, n, nrows, esz, dt, mode);
    return;
  }
  if (pf > ZC_PF || nrows < ZC_R) {
    z_cols4(acc, x, n, nrows, esz, dt, mode);
    return;
  }
  for (size_t r = 0; r < nrows; r += ZC_R) {
    size_t nr = nrows - r < ZC_R ? nrows - r : ZC_R, j = 0;
    const unsigned char *xb = x + r * rs;
    for (; j + 64 <= n; j += 64) {
      if (far) /* two loops: the hint a constant in each */
        z_cols64(o + j, xb + j * esz, rs, nr, pf, 1, esz, dt, mode);
      else
        z_cols64(o + j, xb + j * esz, rs, nr, pf, 0, esz, dt, mode);
    }
    if (j < n)
      z_cols_rest(o + j, xb + j * esz, rs, nr, n - j, esz, dt, mode);
  }
}

/* Rows longer than L: run() from empty lanes and flush(), the lanes in
 * registers.  Shorter rows go to `short_rows` (the AVX2 rows()). */
TGT ALWAYS_INLINE void z_rows(void *acc, const unsigned char *x, size_t n,
                              size_t nrows, size_t esz, int dt, int mode)
{
  double *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * esz) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0;
    size_t i = 0;
    for (; i + L <= n; i += L) {
      __m512d v0, v1;
      PF(x + i * esz);
      w16(dt, x + i * esz, &v0, &v1);
      a0 = term_add(a0, v0, mode);
      a1 = term_add(a1, v1, mode);
    }
    if (i < n) {
      double d[L];
      _mm512_storeu_pd(d, a0);
      _mm512_storeu_pd(d + 8, a1);
      for (size_t l = 0; i < n; i++, l++)
        d[l] += ld1(dt, mode, x + i * esz);
      a0 = _mm512_loadu_pd(d);
      a1 = _mm512_loadu_pd(d + 8);
    }
    o[r] += tree2(a0, a1);
  }
}

/* Squares: run, cols, and rows with the short rows of the AVX2 path. */
#define Z_SQ(name, id, esz, dt)                                                \
  TGT static void run_##name(union rd__lanes *ln, const unsigned char *x,      \
                             size_t n, uint64_t pos)                           \
  {                                                                            \
    z_run(ln, x, n, pos, esz, dt, M_SQ);                                       \
  }                                                                            \
  TGT static void cols_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    z_cols(acc, x, n, nrows, esz, dt, M_SQ);                                   \
  }                                                                            \
  TGT static void rows_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    if (n <= L)                                                                \
      avx2_rows[id](acc, x, n, nrows);                                         \
    else                                                                       \
      z_rows(acc, x, n, nrows, esz, dt, M_SQ);                                 \
  }

Z_SQ(f32, RD__K_F32, 4, 1)
Z_SQ(f16, RD__K_F16, 2, 2)
Z_SQ(bf16, RD__K_BF16, 2, 3)

/* Sums and L1 (ops.c's RD__F_SUMD): every rows() length here, since the
 * AVX2 sum rows() is not reachable from a table; the same order. */
#define Z_SUM(name, esz, dt, mode)                                             \
  TGT static void run_##name(union rd__lanes *ln, const unsigned char *x,      \
                             size_t n, uint64_t pos)                           \
  {                                                                            \
    z_run(ln, x, n, pos, esz, dt, mode);                                       \
  }                                                                            \
  TGT static void cols_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    z_cols(acc, x, n, nrows, esz, dt, mode);                                   \
  }                                                                            \
  TGT static void rows_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    z_rows(acc, x, n, nrows, esz, dt, mode);                                   \
  }

Z_SUM(sum_f32, 4, 1, M_SUM)
Z_SUM(sum_f16, 2, 2, M_SUM)
Z_SUM(sum_bf16, 2, 3, M_SUM)
Z_SUM(abs_f32, 4, 1, M_ABS)
Z_SUM(abs_f16, 2, 2, M_ABS)
Z_SUM(abs_bf16, 2, 3, M_ABS)

/* ------------------------------------------------------------------ */
/* float64: vector check that a block is mid-range, vector Kahan       */
/* ------------------------------------------------------------------ */

/* kahan() on eight lanes: the same operations, unfused. */
TGT ALWAYS_INLINE void kahan8(__m512d *s, __m512d *c, __m512d v)
{
  __m512d u = _mm512_sub_pd(_mm512_mul_pd(v, v), *c);
  __m512d t = _mm512_add_pd(*s, u);
  *c = _mm512_sub_pd(_mm512_sub_pd(t, *s), u);
  *s = t;
}

/* is_mid() on eight |x|: a bit per lane (NaN is not mid). */
TGT ALWAYS_INLINE __mmask8 mid8(__m512d a)
{
  return (
    __mmask8)((_mm512_cmp_pd_mask(a, _mm512_set1_pd(BLUE_SMALL), _CMP_GE_OQ) &
               _mm512_cmp_pd_mask(a, _mm512_set1_pd(BLUE_BIG), _CMP_LE_OQ)) |
              _mm512_cmp_pd_mask(a, _mm512_setzero_pd(), _CMP_EQ_OQ));
}

/* The cheap sufficient test of kernels_avx2.c's all_mid_fast() on a sum
 * and a minimum of |x| (ordered compares: false for NaN and inf). */
TGT ALWAYS_INLINE int sum_min_ok(__m512d sum, __m512d mn)
{
  return (__mmask8)(_mm512_cmp_pd_mask(sum, _mm512_set1_pd(BLUE_BIG),
                                       _CMP_LE_OQ) &
                    _mm512_cmp_pd_mask(mn, _mm512_set1_pd(BLUE_SMALL),
                                       _CMP_GE_OQ)) == 0xff;
}

TGT static void run_f64(union rd__lanes *ln, const unsigned char *x, size_t n,
                        uint64_t pos)
{
  size_t k = (size_t)(pos % L), i = 0;
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    lane_blue_add(ln, k, ld_f64(x + i * 8));
  if (i + L <= n) {
    __m512d s0 = _mm512_loadu_pd(ln->b.ms), c0 = _mm512_loadu_pd(ln->b.mc);
    __m512d s1 = _mm512_loadu_pd(ln->b.ms + 8);
    __m512d c1 = _mm512_loadu_pd(ln->b.mc + 8);
    for (; i + L <= n; i += L) {
      const double *p = (const double *)(const void *)(x + i * 8);
      __m512d v0 = _mm512_loadu_pd(p), v1 = _mm512_loadu_pd(p + 8);
      __m512d a0 = _mm512_abs_pd(v0), a1 = _mm512_abs_pd(v1);
      PF(p);
      PF(p + 8);
      if (sum_min_ok(_mm512_add_pd(a0, a1), _mm512_min_pd(a0, a1)) ||
          (mid8(a0) & mid8(a1)) == 0xff) {
        kahan8(&s0, &c0, v0);
        kahan8(&s1, &c1, v1);
      } else {
        /* Rare: the scalar classification, lanes in order. */
        _mm512_storeu_pd(ln->b.ms, s0);
        _mm512_storeu_pd(ln->b.mc, c0);
        _mm512_storeu_pd(ln->b.ms + 8, s1);
        _mm512_storeu_pd(ln->b.mc + 8, c1);
        for (size_t l = 0; l < L; l++)
          lane_blue_add(ln, l, ld_f64(x + (i + l) * 8));
        s0 = _mm512_loadu_pd(ln->b.ms);
        c0 = _mm512_loadu_pd(ln->b.mc);
        s1 = _mm512_loadu_pd(ln->b.ms + 8);
        c1 = _mm512_loadu_pd(ln->b.mc + 8);
      }
    }
    _mm512_storeu_pd(ln->b.ms, s0);
    _mm512_storeu_pd(ln->b.mc, c0);
    _mm512_storeu_pd(ln->b.ms + 8, s1);
    _mm512_storeu_pd(ln->b.mc + 8, c1);
  }
  for (size_t l = 0; i < n; i++, l++)
    lane_blue_add(ln, l, ld_f64(x + i * 8));
}

/* (ms, mc) of accumulator o: adjacent doubles of struct rd__blue. */
static inline double *blue_mid(struct rd__blue *o)
{
  return (double *)(void *)((unsigned char *)o + offsetof(struct rd__blue, ms));
}

/* Rows per block of cols_f64 (each accumulator, 64 bytes, is read and
 * written once per block).  8 rather than 16: fewer rows read side by side
 * (measured faster on both long and short rows).  Rows short enough that
 * COLS_F64_ROWS of them fit COLS_F64_PF bytes take COLS_F64_SHORT at a
 * time, the next block prefetched: case D ([256,512,512] over axis 1)
 * 0.81-0.87x the time of blocks of 8 (1 and 2 threads, alternating
 * medians); 2 or 1 rows were slower (the accumulators' transposes then
 * cost more than the data), and case C (rows of 64 KiB) was 1.1-1.3x
 * slower with 4. */
/* Its prefetches go into L2 only (_MM_HINT_T1; into L1 they evicted the
 * block's lines and accumulators before their turn): case C float64
 * SumSquare 0.66x the time (1 thread) and 0.64x (2), case D 0.81x and
 * 0.89x. */
#define COLS_F64_ROWS 8
#define COLS_F64_PF 65536
#define COLS_F64_SHORT 4

/* The (ms, mc) pairs of o[0..7] transposed into s and c. */
TGT ALWAYS_INLINE void blue_load8(struct rd__blue *o, __m512d *s, __m512d *c)
{
  __m512d a = _mm512_castpd256_pd512(
    _mm256_set_m128d(_mm_loadu_pd(blue_mid(&o[2])),
                     _mm_loadu_pd(blue_mid(&o[0]))));
  __m512d b = _mm512_castpd256_pd512(
    _mm256_set_m128d(_mm_loadu_pd(blue_mid(&o[3])),
                     _mm_loadu_pd(blue_mid(&o[1]))));
  a = _mm512_insertf64x4(a,
                         _mm256_set_m128d(_mm_loadu_pd(blue_mid(&o[6])),
                                          _mm_loadu_pd(blue_mid(&o[4]))),
                         1);
  b = _mm512_insertf64x4(b,
                         _mm256_set_m128d(_mm_loadu_pd(blue_mid(&o[7])),
                                          _mm_loadu_pd(blue_mid(&o[5]))),
                         1);
  *s = _mm512_unpacklo_pd(a, b);
  *c = _mm512_unpackhi_pd(a, b);
}

/* The inverse of blue_load8(). */
TGT ALWAYS_INLINE void blue_store8(struct rd__blue *o, __m512d s, __m512d c)
{
  __m512d a = _mm512_unpacklo_pd(s, c); /* pairs of o[0], o[2], o[4], o[6] */
  __m512d b = _mm512_unpackhi_pd(s, c); /* pairs of o[1], o[3], o[5], o[7] */
  _mm_storeu_pd(blue_mid(&o[0]), _mm512_castpd512_pd128(a));
  _mm_storeu_pd(blue_mid(&o[2]), _mm512_extractf64x2_pd(a, 1));
  _mm_storeu_pd(blue_mid(&o[4]), _mm512_extractf64x2_pd(a, 2));
  _mm_storeu_pd(blue_mid(&o[6]), _mm512_extractf64x2_pd(a, 3));
  _mm_storeu_pd(blue_mid(&o[1]), _mm512_castpd512_pd128(b));
  _mm_storeu_pd(blue_mid(&o[3]), _mm512_extractf64x2_pd(b, 1));
  _mm_storeu_pd(blue_mid(&o[5]), _mm512_extractf64x2_pd(b, 2));
  _mm_storeu_pd(blue_mid(&o[7]), _mm512_extractf64x2_pd(b, 3));
}

/* After a speculative block of columns j..j+7 (accumulators o) over nr
 * rows at p: the new (s, c) are stored if every value was mid-range (sum
 * and mn of |x| as in sum_min_ok(), else the exact test); otherwise the
 * scalar path runs from the untouched accumulators, each column's rows in
 * order. */
TGT ALWAYS_INLINE void cols8_f64_end(struct rd__blue *o, const unsigned char *p,
                                     size_t rs, size_t nr, __m512d s, __m512d c,
                                     __m512d sum, __m512d mn)
{
  int ok = sum_min_ok(sum, mn);
  if (!ok) {
    __mmask8 m = 0xff;
    for (size_t q = 0; q < nr; q++)
      m &= mid8(_mm512_abs_pd(
        _mm512_loadu_pd((const double *)(const void *)(p + q * rs))));
    ok = m == 0xff;
  }
  if (ok) {
    blue_store8(o, s, c);
  } else {
    for (size_t jj = 0; jj < 8; jj++)
      for (size_t q = 0; q < nr; q++)
        acc_blue_add(&o[jj], ld_f64(p + q * rs + jj * 8));
  }
}

/* Columns j..j+7 (accumulators o[0..7]) over nr rows at p, row stride rs:
 * the eight (ms, mc) pairs transposed into s and c, updated row by row
 * speculatively (see cols8_f64_end()). */
TGT static inline void cols8_f64(struct rd__blue *o, const unsigned char *p,
                                 size_t rs, size_t nr)
{
  __m512d s, c, sum = _mm512_setzero_pd(), mn = _mm512_set1_pd(BLUE_BIG);
  blue_load8(o, &s, &c);
  for (size_t q = 0; q < nr; q++) {
    __m512d v = _mm512_loadu_pd((const double *)(const void *)(p + q * rs));
    __m512d av = _mm512_abs_pd(v);
    sum = _mm512_add_pd(sum, av);
    mn = _mm512_min_pd(mn, av);
    kahan8(&s, &c, v);
  }
  cols8_f64_end(o, p, rs, nr, s, c, sum, mn);
}

/* cols8_f64() on columns j..j+15 as two independent groups of eight (two
 * Kahan chains at once: a chain is latency-bound). */
TGT static inline void cols16_f64(struct rd__blue *o, const unsigned char *p,
                                  size_t rs, size_t nr)
{
  __m512d s0, c0, sum0 = _mm512_setzero_pd(), mn0 = _mm512_set1_pd(BLUE_BIG);
  __m512d s1, c1, sum1 = sum0, mn1 = mn0;
  blue_load8(o, &s0, &c0);
  blue_load8(o + 8, &s1, &c1);
  for (size_t q = 0; q < nr; q++) {
    const double *d = (const double *)(const void *)(p + q * rs);
    __m512d v0 = _mm512_loadu_pd(d), v1 = _mm512_loadu_pd(d + 8);
    __m512d av0 = _mm512_abs_pd(v0), av1 = _mm512_abs_pd(v1);
    sum0 = _mm512_add_pd(sum0, av0);
    sum1 = _mm512_add_pd(sum1, av1);
    mn0 = _mm512_min_pd(mn0, av0);
    mn1 = _mm512_min_pd(mn1, av1);
    kahan8(&s0, &c0, v0);
    kahan8(&s1, &c1, v1);
  }
  cols8_f64_end(o, p, rs, nr, s0, c0, sum0, mn0);
  cols8_f64_end(o + 8, p + 64, rs, nr, s1, c1, sum1, mn1);
}

TGT static void cols_f64(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  struct rd__blue *o = acc;
  const size_t rs = n * 8;
  size_t r = 0;
  /* The prefetch distance: the same columns one block on when a block is
   * at most COLS_F64_PF bytes (short rows: a block's rows are read side by
   * side, so a distance inside the row would miss its first part), else
   * PF_DIST ahead in the same row. */
  const int shortr = COLS_F64_ROWS * rs <= COLS_F64_PF;
  const size_t R = shortr ? COLS_F64_SHORT : COLS_F64_ROWS;
  const size_t pf = shortr ? R * rs : PF_DIST;
  while (r < nrows) {
    size_t nr = nrows - r < R ? nrows - r : R, j = 0;
    for (; j + 16 <= n; j += 16) {
      for (size_t q = 0; q < nr; q++) {
        const char *a = (const char *)(x + q * rs + j * 8) + pf;
        _mm_prefetch(a, _MM_HINT_T1);
        _mm_prefetch(a + 64, _MM_HINT_T1);
      }
      cols16_f64(&o[j], x + j * 8, rs, nr);
    }
    for (; j + 8 <= n; j += 8) {
      for (size_t q = 0; q < nr; q++)
        _mm_prefetch((const char *)(x + q * rs + j * 8) + pf, _MM_HINT_T1);
      cols8_f64(&o[j], x + j * 8, rs, nr);
    }
    for (; j < n; j++)
      for (size_t q = 0; q < nr; q++)
        acc_blue_add(&o[j], ld_f64(x + q * rs + j * 8));
    r += nr;
    x += nr * rs;
  }
}

/* One run of n > L elements from empty lanes into accumulator o, the
 * lanes in registers while every value is mid-range: then the big, small
 * and non-finite lanes stay zero and their trees are exactly +0, so only
 * the mid tree of rd__flush_f64() needs computing.  Returns 0, or -1 (o
 * untouched) at the first value out of the mid range. */
TGT static inline int row_f64_mid(struct rd__blue *o, const unsigned char *x,
                                  size_t n)
{
  __m512d s0 = _mm512_setzero_pd(), c0 = s0, s1 = s0, c1 = s0;
  size_t i = 0;
  for (; i + L <= n; i += L) {
    const double *p = (const double *)(const void *)(x + i * 8);
    __m512d v0 = _mm512_loadu_pd(p), v1 = _mm512_loadu_pd(p + 8);
    __m512d a0 = _mm512_abs_pd(v0), a1 = _mm512_abs_pd(v1);
    PF(p);
    PF(p + 8);
    if (!sum_min_ok(_mm512_add_pd(a0, a1), _mm512_min_pd(a0, a1)) &&
        (mid8(a0) & mid8(a1)) != 0xff)
      return -1;
    kahan8(&s0, &c0, v0);
    kahan8(&s1, &c1, v1);
  }
  if (i < n) {
    double ms[L], mc[L];
    _mm512_storeu_pd(ms, s0);
    _mm512_storeu_pd(mc, c0);
    _mm512_storeu_pd(ms + 8, s1);
    _mm512_storeu_pd(mc + 8, c1);
    for (size_t l = 0; i < n; i++, l++) {
      double v = ld_f64(x + i * 8);
      if (!is_mid(fabs(v)))
        return -1;
      kahan(&ms[l], &mc[l], v * v);
    }
    s0 = _mm512_loadu_pd(ms);
    c0 = _mm512_loadu_pd(mc);
    s1 = _mm512_loadu_pd(ms + 8);
    c1 = _mm512_loadu_pd(mc + 8);
  }
  kahan(&o->bs, &o->bc, 0.0);
  kahan(&o->ms, &o->mc, tree2(_mm512_sub_pd(s0, c0), _mm512_sub_pd(s1, c1)));
  kahan(&o->ss, &o->sc, 0.0);
  o->sp += 0.0;
  return 0;
}

TGT static void rows_f64(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  struct rd__blue *o = acc;
  if (n <= L) {
    avx2_rows[RD__K_F64](acc, x, n, nrows);
    return;
  }
  for (size_t r = 0; r < nrows; r++, x += n * 8) {
    union rd__lanes ln;
    if (row_f64_mid(&o[r], x, n) == 0)
      continue;
    memset(&ln.b, 0, sizeof ln.b);
    run_f64(&ln, x, n, 0);
    rd__flush_f64(&ln, &o[r]);
  }
}

/* ------------------------------------------------------------------ */
/* 32-bit integers                                                    */
/* ------------------------------------------------------------------ */

/* Squares of 16 32-bit values (|v| for int32) split into 32-bit halves
 * and added into four vectors of 64-bit lanes: le/he the low/high halves
 * of the even elements' squares, lo/ho of the odd ones'. */
TGT ALWAYS_INLINE void sq16_add(__m512i v, int sgn, __m512i *le, __m512i *he,
                                __m512i *lo, __m512i *ho)
{
  const __m512i m32 = _mm512_set1_epi64(0xffffffff);
  __m512i e, d;
  if (sgn)
    v = _mm512_abs_epi32(v); /* |INT32_MIN| = 0x80000000 read unsigned */
  e = _mm512_mul_epu32(v, v);
  d = _mm512_srli_epi64(v, 32);
  d = _mm512_mul_epu32(d, d);
  *le = _mm512_add_epi64(*le, _mm512_and_si512(e, m32));
  *he = _mm512_add_epi64(*he, _mm512_srli_epi64(e, 32));
  *lo = _mm512_add_epi64(*lo, _mm512_and_si512(d, m32));
  *ho = _mm512_add_epi64(*ho, _mm512_srli_epi64(d, 32));
}

/* The exact sum of a block's four half-sum vectors. */
TGT ALWAYS_INLINE u128 halves_sum(__m512i le, __m512i he, __m512i lo,
                                  __m512i ho)
{
  uint64_t t[32];
  u128 s = 0;
  _mm512_storeu_si512((void *)t, le);
  _mm512_storeu_si512((void *)(t + 8), he);
  _mm512_storeu_si512((void *)(t + 16), lo);
  _mm512_storeu_si512((void *)(t + 24), ho);
  for (size_t k = 0; k < 8; k++)
    s += ((u128)t[8 + k] << 32) + t[k] + ((u128)t[24 + k] << 32) + t[16 + k];
  return s;
}

/* run(): blocks of BLOCK32 elements (a 64-bit lane takes at most
 * BLOCK32 / 8 halves < 2^32 each, so it cannot overflow), 16 per step. */
TGT ALWAYS_INLINE void z_run_i32(union rd__lanes *ln, const unsigned char *x,
                                 size_t n, int sgn, sq32_fn sq)
{
  while (n > 0) {
    size_t m = n < BLOCK32 ? n : BLOCK32, i = 0;
    __m512i le = _mm512_setzero_si512(), he = le, lo = le, ho = le;
    u128 t = 0;
    for (; i + 32 <= m; i += 32) {
      PF(x + i * 4);
      PF(x + i * 4 + 64);
      sq16_add(_mm512_loadu_si512((const void *)(x + i * 4)), sgn, &le, &he,
               &lo, &ho);
      sq16_add(_mm512_loadu_si512((const void *)(x + i * 4 + 64)), sgn, &le,
               &he, &lo, &ho);
    }
    for (; i < m; i++)
      t += sq(x + i * 4);
    ln->w.lo += t + halves_sum(le, he, lo, ho);
    x += m * 4;
    n -= m;
  }
}

/* cols(): strips of up to COLS_I32_STRIP columns.  A strip's sums and
 * carry counts (sq16_addc()'s four vectors per 16 columns, 16 KiB) stay in
 * L1 while the rows stream past COLS_I32_GROUP at a time in memory order
 * (a short row is read whole, a long one in 4 KiB pieces), the next group
 * prefetched, and are folded into the 128-bit accumulators once per strip
 * (blocks of BLOCK32 rows: the counts stay far below 2^64).  The last
 * vector of a strip is a masked load (absent columns read as 0, whose
 * square adds 0).  Integer sums are exact: any grouping gives the same
 * result. */
/* The next group's lines are prefetched into L2 only (_MM_HINT_T1): a
 * group is 16 KiB of rows and the strip's sums another 16, so lines
 * fetched into L1 a group ahead evicted the ones in use.  Case C int32
 * SumSquare 0.70x the time (1 thread) and 0.79x (2), case D 0.46x and
 * 0.72x against L1 prefetches; alternating medians. */
#define COLS_I32_STRIP 1024
/* (Groups of 4 rows against 8: case C uint32 SumSquare 0.80x (one
 * thread) and 0.87x (two) the time, int32 L2 0.90x and 0.96x, case D
 * unchanged; alternating medians.  Strips of 2048 or 4096 columns were
 * no better.) */
#define COLS_I32_GROUP 4

/* Squares of 16 32-bit values (|v| for int32) added into 64-bit lanes with
 * a count of the carries out of each: se/ce the sums and carries of the
 * even elements' squares, so/co of the odd ones' (fewer operations than
 * sq16_add()'s halves: this loop runs at memory speed only if lean). */
TGT ALWAYS_INLINE void sq16_addc(__m512i v, int sgn, __m512i *se, __m512i *ce,
                                 __m512i *so, __m512i *co)
{
  const __m512i one = _mm512_set1_epi64(1);
  __m512i e, d;
  if (sgn)
    v = _mm512_abs_epi32(v); /* |INT32_MIN| = 0x80000000 read unsigned */
  e = _mm512_mul_epu32(v, v);
  d = _mm512_srli_epi64(v, 32);
  d = _mm512_mul_epu32(d, d);
  *se = _mm512_add_epi64(*se, e);
  *ce = _mm512_mask_add_epi64(*ce, _mm512_cmplt_epu64_mask(*se, e), *ce, one);
  *so = _mm512_add_epi64(*so, d);
  *co = _mm512_mask_add_epi64(*co, _mm512_cmplt_epu64_mask(*so, d), *co, one);
}

/* Rows q..q+nq-1 of one 16-column vector of a strip at p into hs[0..3]
 * (sq16_addc()'s four vectors); m masks the columns present.  pf: bytes
 * to the same columns one group on (prefetched), or 0. */
TGT ALWAYS_INLINE void z_strip16_i32(__m512i *hs, const unsigned char *p,
                                     size_t rs, size_t nq, __mmask16 m,
                                     size_t pf, int sgn)
{
  __m512i se = hs[0], ce = hs[1], so = hs[2], co = hs[3];
  for (size_t q = 0; q < nq; q++) {
    if (pf)
      _mm_prefetch((const char *)p + q * rs + pf, _MM_HINT_T1);
    sq16_addc(_mm512_maskz_loadu_epi32(m, (const void *)(p + q * rs)), sgn, &se,
              &ce, &so, &co);
  }
  hs[0] = se;
  hs[1] = ce;
  hs[2] = so;
  hs[3] = co;
}

TGT ALWAYS_INLINE void z_cols_i32(void *acc, const unsigned char *x, size_t n,
                                  size_t nrows, int sgn, sq32_fn sq)
{
  u128 *o = acc;
  const size_t rs = n * 4;
  __m512i hs[COLS_I32_STRIP / 16 * 4];
  (void)sq;
  for (size_t j0 = 0; j0 < n; j0 += COLS_I32_STRIP) {
    const size_t w = n - j0 < COLS_I32_STRIP ? n - j0 : COLS_I32_STRIP;
    const size_t nv = (w + 15) / 16;
    const __mmask16 mlast = (__mmask16)(0xffffu >> (16 * nv - w));
    const unsigned char *xs = x + j0 * 4;
    size_t r = 0;
    while (r < nrows) {
      size_t nr = nrows - r < BLOCK32 ? nrows - r : BLOCK32;
      uint64_t t[32];
      for (size_t v = 0; v < 4 * nv; v++)
        hs[v] = _mm512_setzero_si512();
      for (size_t q = 0; q < nr; q += COLS_I32_GROUP) {
        const unsigned char *p = xs + (r + q) * rs;
        size_t nq = nr - q < COLS_I32_GROUP ? nr - q : COLS_I32_GROUP;
        /* Prefetch the next group unless this is the last. */
        size_t pf = q + COLS_I32_GROUP < nr ? COLS_I32_GROUP * rs : 0;
        for (size_t v = 0; v + 1 < nv; v++)
          z_strip16_i32(hs + 4 * v, p + v * 64, rs, nq, 0xffff, pf, sgn);
        z_strip16_i32(hs + 4 * (nv - 1), p + (nv - 1) * 64, rs, nq, mlast, pf,
                      sgn);
      }
      for (size_t v = 0; v < nv; v++) {
        u128 *ov = o + j0 + 16 * v;
        size_t nc = v + 1 < nv ? 16 : w - 16 * v;
        _mm512_storeu_si512((void *)t, hs[4 * v]);
        _mm512_storeu_si512((void *)(t + 8), hs[4 * v + 1]);
        _mm512_storeu_si512((void *)(t + 16), hs[4 * v + 2]);
        _mm512_storeu_si512((void *)(t + 24), hs[4 * v + 3]);
        for (size_t k = 0; k < 8; k++) {
          if (2 * k < nc)
            ov[2 * k] += ((u128)t[8 + k] << 64) + t[k];
          if (2 * k + 1 < nc)
            ov[2 * k + 1] += ((u128)t[24 + k] << 64) + t[16 + k];
        }
      }
      r += nr;
    }
  }
}

/* The sum of squares of one row: short enough rows (each half sum below
 * n * 2^32 < 2^64) add their half vectors lane-wise and reduce them with
 * vector adds; longer ones take run(). */
#define ROW_I32_MAX ((size_t)1 << 31)

TGT ALWAYS_INLINE u128 z_row_i32(const unsigned char *x, size_t n, int sgn,
                                 sq32_fn sq)
{
  __m512i le = _mm512_setzero_si512(), he = le, lo = le, ho = le;
  u128 t = 0;
  size_t i = 0;
  if (n >= ROW_I32_MAX) {
    union rd__lanes ln;
    memset(&ln.w, 0, sizeof ln.w);
    z_run_i32(&ln, x, n, sgn, sq);
    return ln.w.lo;
  }
  for (; i + 32 <= n; i += 32) {
    PF(x + i * 4);
    PF(x + i * 4 + 64);
    sq16_add(_mm512_loadu_si512((const void *)(x + i * 4)), sgn, &le, &he, &lo,
             &ho);
    sq16_add(_mm512_loadu_si512((const void *)(x + i * 4 + 64)), sgn, &le, &he,
             &lo, &ho);
  }
  if (i + 16 <= n) {
    sq16_add(_mm512_loadu_si512((const void *)(x + i * 4)), sgn, &le, &he, &lo,
             &ho);
    i += 16;
  }
  for (; i < n; i++)
    t += sq(x + i * 4);
  return t + (u128)(uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(le, lo)) +
         ((u128)(uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(he, ho))
          << 32);
}

#define Z_I32(name, id, sgn, sq)                                               \
  TGT static void run_##name(union rd__lanes *ln, const unsigned char *x,      \
                             size_t n, uint64_t pos)                           \
  {                                                                            \
    (void)pos;                                                                 \
    z_run_i32(ln, x, n, sgn, sq);                                              \
  }                                                                            \
  TGT static void cols_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    z_cols_i32(acc, x, n, nrows, sgn, sq);                                     \
  }                                                                            \
  TGT static void rows_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    u128 *o = acc;                                                             \
    if (n <= L) {                                                              \
      avx2_rows[id](acc, x, n, nrows);                                         \
      return;                                                                  \
    }                                                                          \
    for (size_t r = 0; r < nrows; r++, x += n * 4)                             \
      o[r] += z_row_i32(x, n, sgn, sq);                                        \
  }

Z_I32(i32, RD__K_I32, 1, sq_i32)
Z_I32(u32, RD__K_U32, 0, sq_u32)

/* ------------------------------------------------------------------ */
/* 64-bit integers: 32-bit partial products, exact 192-bit sums        */
/* ------------------------------------------------------------------ */

/* a = |x| (int64; |INT64_MIN| = 2^63 read unsigned) = h 2^32 + l, so
 * a^2 = l^2 + 2 h l 2^32 + h^2 2^64, three 32x32->64 products (vpmuludq),
 * each split into 32-bit halves summed in 64-bit lanes: p0, p1 the
 * low/high halves of l^2, p2, p3 of h l, p4, p5 of h^2.  A lane
 * takes one half (< 2^32) per 8 elements, so blocks of BLOCK32 elements
 * keep every lane sum, and every sum over lanes, below 2^63. */
struct h6 {
  __m512i p0, p1, p2, p3, p4, p5; /* named: GCC keeps arrays on the stack */
};

TGT ALWAYS_INLINE void h6_zero(struct h6 *h)
{
  h->p0 = h->p1 = h->p2 = h->p3 = h->p4 = h->p5 = _mm512_setzero_si512();
}

TGT ALWAYS_INLINE void sq8_add(struct h6 *h, __m512i v, int sgn)
{
  const __m512i m32 = _mm512_set1_epi64(0xffffffff);
  __m512i hi, q0, q1, q2;
  if (sgn)
    v = _mm512_abs_epi64(v);
  hi = _mm512_srli_epi64(v, 32);
  q0 = _mm512_mul_epu32(v, v);
  q1 = _mm512_mul_epu32(hi, v);
  q2 = _mm512_mul_epu32(hi, hi);
  h->p0 = _mm512_add_epi64(h->p0, _mm512_and_si512(q0, m32));
  h->p1 = _mm512_add_epi64(h->p1, _mm512_srli_epi64(q0, 32));
  h->p2 = _mm512_add_epi64(h->p2, _mm512_and_si512(q1, m32));
  h->p3 = _mm512_add_epi64(h->p3, _mm512_srli_epi64(q1, 32));
  h->p4 = _mm512_add_epi64(h->p4, _mm512_and_si512(q2, m32));
  h->p5 = _mm512_add_epi64(h->p5, _mm512_srli_epi64(q2, 32));
}

/* Adds sum_k t[k] * 2^(0, 32, 33, 65, 64, 96) to the 192-bit a: the part
 * below 2^64 units and the part in units of 2^64 as two u128s. */
static inline void add6(struct rd__u192 *a, const uint64_t t[6])
{
  u128 lo = (u128)t[0] + ((u128)t[1] << 32) + ((u128)t[2] << 33);
  u128 hi = (u128)t[4] + ((u128)t[3] << 1) + ((u128)t[5] << 32);
  u128 h64 = (u128)(uint64_t)hi << 64;
  a->lo += lo;
  a->hi += a->lo < lo;
  a->lo += h64;
  a->hi += a->lo < h64;
  a->hi += (uint64_t)(hi >> 64);
}

/* The scalar square of one element into a, as kernels.c's add192(). */
static inline void add_sq64(struct rd__u192 *a, const unsigned char *p, int sgn)
{
  uint64_t v;
  u128 q;
  memcpy(&v, p, sizeof v);
  if (sgn && (int64_t)v < 0)
    v = 0 - v;
  q = (u128)v * v;
  a->lo += q;
  a->hi += a->lo < q;
}

TGT ALWAYS_INLINE void h6_fold(struct rd__u192 *a, const struct h6 *h)
{
  uint64_t t[6] = {
    (uint64_t)_mm512_reduce_add_epi64(h->p0),
    (uint64_t)_mm512_reduce_add_epi64(h->p1),
    (uint64_t)_mm512_reduce_add_epi64(h->p2),
    (uint64_t)_mm512_reduce_add_epi64(h->p3),
    (uint64_t)_mm512_reduce_add_epi64(h->p4),
    (uint64_t)_mm512_reduce_add_epi64(h->p5),
  };
  add6(a, t);
}

TGT ALWAYS_INLINE void z_run_i64(struct rd__u192 *a, const unsigned char *x,
                                 size_t n, int sgn)
{
  while (n > 0) {
    size_t m = n < BLOCK32 ? n : BLOCK32, i = 0;
    struct h6 h;
    h6_zero(&h);
    for (; i + 16 <= m; i += 16) {
      PF(x + i * 8);
      PF(x + i * 8 + 64);
      sq8_add(&h, _mm512_loadu_si512((const void *)(x + i * 8)), sgn);
      sq8_add(&h, _mm512_loadu_si512((const void *)(x + i * 8 + 64)), sgn);
    }
    for (; i < m; i++)
      add_sq64(a, x + i * 8, sgn);
    h6_fold(a, &h);
    x += m * 8;
    n -= m;
  }
}

/* cols(): strips of up to COLS_I64_STRIP columns, as z_cols_i32(): a
 * strip's half sums (struct h6 per 8 columns, 24 KiB) stay in L1 while the
 * rows stream past COLS_I64_GROUP at a time in memory order, the next
 * group prefetched, and are folded into the 192-bit accumulators once per
 * strip (blocks of BLOCK32 rows: a lane takes one half < 2^32 per row).
 * The last vector of a strip is a masked load (absent columns read as 0). */
/* (Its prefetches into L2 only, as z_cols_i32's: case C int64
 * SumSquare 0.76x the time (1 thread) and 0.80x (2), case D 0.64x and
 * 0.69x.) */
#define COLS_I64_STRIP 512
/* (With L1 prefetches, groups of 2 rows beat 8: case D int64 L2 0.65x
 * the time on one and on two threads, case C int64 SumSquare 0.54x and
 * 0.81x, uint64 L2 0.83x and 0.95x; 4 was between, 1 slower than 2.  With
 * L2 prefetches 4 beats 2: case C int64 SumSquare 0.89x and 0.92x, case D
 * 0.96x and 1.00x; 8 was no better than 4; alternating medians.) */
#define COLS_I64_GROUP 4

/* The rows of a group whose magnitudes all fit 32 bits: one product each
 * (sq8_add's q0; q1 and q2 are 0), which adds nothing to p2-p5.  Integer
 * sums: the same result either way, so only the speed depends on it.
 * One check per group of rows: case C one thread, int64 0.85x the time,
 * uint64 0.93-0.95x.  A group with one larger magnitude takes the three
 * products. */
TGT ALWAYS_INLINE int sq8_small(struct h6 *h, const __m512i *v, size_t nq)
{
  const __m512i m32 = _mm512_set1_epi64(0xffffffff);
  __m512i any = _mm512_setzero_si512();
  for (size_t q = 0; q < nq; q++)
    any = _mm512_or_si512(any, v[q]);
  if (_mm512_test_epi64_mask(any, _mm512_set1_epi64(~0xffffffffLL)) != 0)
    return 0;
  for (size_t q = 0; q < nq; q++) {
    __m512i q0 = _mm512_mul_epu32(v[q], v[q]);
    h->p0 = _mm512_add_epi64(h->p0, _mm512_and_si512(q0, m32));
    h->p1 = _mm512_add_epi64(h->p1, _mm512_srli_epi64(q0, 32));
  }
  return 1;
}

TGT ALWAYS_INLINE void z_strip8_i64(struct h6 *hp, const unsigned char *p,
                                    size_t rs, size_t nq, __mmask8 m, size_t pf,
                                    int sgn)
{
  struct h6 h = *hp;
  __m512i v[COLS_I64_GROUP];
  for (size_t q = 0; q < nq; q++) {
    if (pf)
      _mm_prefetch((const char *)p + q * rs + pf, _MM_HINT_T1);
    v[q] = _mm512_maskz_loadu_epi64(m, (const void *)(p + q * rs));
    if (sgn)
      v[q] = _mm512_abs_epi64(v[q]);
  }
  if (!sq8_small(&h, v, nq))
    for (size_t q = 0; q < nq; q++)
      sq8_add(&h, v[q], 0);
  *hp = h;
}

TGT ALWAYS_INLINE void z_cols_i64(void *acc, const unsigned char *x, size_t n,
                                  size_t nrows, int sgn)
{
  struct rd__u192 *o = acc;
  const size_t rs = n * 8;
  struct h6 hs[COLS_I64_STRIP / 8];
  for (size_t j0 = 0; j0 < n; j0 += COLS_I64_STRIP) {
    const size_t w = n - j0 < COLS_I64_STRIP ? n - j0 : COLS_I64_STRIP;
    const size_t nv = (w + 7) / 8;
    const __mmask8 mlast = (__mmask8)(0xffu >> (8 * nv - w));
    const unsigned char *xs = x + j0 * 8;
    size_t r = 0;
    while (r < nrows) {
      size_t nr = nrows - r < BLOCK32 ? nrows - r : BLOCK32;
      for (size_t v = 0; v < nv; v++)
        h6_zero(&hs[v]);
      for (size_t q = 0; q < nr; q += COLS_I64_GROUP) {
        const unsigned char *p = xs + (r + q) * rs;
        size_t nq = nr - q < COLS_I64_GROUP ? nr - q : COLS_I64_GROUP;
        size_t pf = q + COLS_I64_GROUP < nr ? COLS_I64_GROUP * rs : 0;
        for (size_t v = 0; v + 1 < nv; v++)
          z_strip8_i64(&hs[v], p + v * 64, rs, nq, 0xff, pf, sgn);
        z_strip8_i64(&hs[nv - 1], p + (nv - 1) * 64, rs, nq, mlast, pf, sgn);
      }
      for (size_t v = 0; v < nv; v++) {
        uint64_t t[6][8];
        size_t nc = v + 1 < nv ? 8 : w - 8 * v;
        _mm512_storeu_si512((void *)t[0], hs[v].p0);
        _mm512_storeu_si512((void *)t[1], hs[v].p1);
        _mm512_storeu_si512((void *)t[2], hs[v].p2);
        _mm512_storeu_si512((void *)t[3], hs[v].p3);
        _mm512_storeu_si512((void *)t[4], hs[v].p4);
        _mm512_storeu_si512((void *)t[5], hs[v].p5);
        for (size_t c = 0; c < nc; c++) {
          uint64_t u[6] = {
            t[0][c], t[1][c], t[2][c], t[3][c], t[4][c], t[5][c]
          };
          add6(&o[j0 + 8 * v + c], u);
        }
      }
      r += nr;
    }
  }
}

#define Z_I64(name, id, sgn)                                                   \
  TGT static void run_##name(union rd__lanes *ln, const unsigned char *x,      \
                             size_t n, uint64_t pos)                           \
  {                                                                            \
    (void)pos;                                                                 \
    z_run_i64(&ln->w, x, n, sgn);                                              \
  }                                                                            \
  TGT static void cols_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    z_cols_i64(acc, x, n, nrows, sgn);                                         \
  }                                                                            \
  TGT static void rows_##name(void *acc, const unsigned char *x, size_t n,     \
                              size_t nrows)                                    \
  {                                                                            \
    struct rd__u192 *o = acc;                                                  \
    if (n <= L) {                                                              \
      avx2_rows[id](acc, x, n, nrows);                                         \
      return;                                                                  \
    }                                                                          \
    for (size_t r = 0; r < nrows; r++, x += n * 8)                             \
      z_run_i64(&o[r], x, n, sgn);                                             \
  }

Z_I64(i64, RD__K_I64, 1)
Z_I64(u64, RD__K_U64, 0)

/* ------------------------------------------------------------------ */
/* Tables                                                             */
/* ------------------------------------------------------------------ */

int rd__kernels_avx512_fill(struct rd__kernel *tab)
{
#define SET(id, nm)                                                            \
  do {                                                                         \
    avx2_rows[id] = tab[id].rows;                                              \
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
  SET(RD__K_I64, i64);
  SET(RD__K_U64, u64);
#undef SET
  return 0;
}

int rd__kernels_avx512_sum(int dtype, int absval, struct rd__kernel *k)
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

#else /* no x86-64 SIMD path in this build */

int rd__kernels_avx512_fill(struct rd__kernel *tab)
{
  (void)tab;
  return -1;
}

int rd__kernels_avx512_sum(int dtype, int absval, struct rd__kernel *k)
{
  (void)dtype;
  (void)absval;
  (void)k;
  return -1;
}

#endif
