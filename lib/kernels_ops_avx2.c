/* kernels_ops_avx2.c - vector helpers of the operator kernels (see
 * kernels_ops.h): AVX2+FMA+F16C, and AVX-512 forms of the same operations
 * where the CPU has AVX-512 F/DQ/VL (x86-64 only).
 *
 * Every helper performs, lane by lane, exactly the scalar operations of
 * the portable loop it replaces in ops.c (the library builds with
 * -ffp-contract=off, and the intrinsics name each multiply and add), so the
 * 256-bit form, the 512-bit form and the portable loop give the same bits.
 * The per-call state stays in registers across blocks, which is where these
 * differ from the one-block helpers of kernels_avx2.c.
 *
 * Which form runs is chosen once, before main() and before any thread
 * exists (a constructor): the AVX-512 one when the CPU has it and
 * REDUCED_KERNELS is not "avx2" (read as kernels.c reads it: forcing the
 * AVX2 kernels forces these too; "portable" makes ops.c call none of them).
 */
#include "kernels_ops.h"

#include <stdlib.h>
#include <string.h>

#include "kernels_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT2 __attribute__((target("avx2,fma,f16c")))
#define TGT5 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma,f16c")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Prefetch distance in bytes (as kernels_avx2.c: the loops are short, so
 * without it the reorder window limits the lines in flight). */
#define OPK_PF(p) _mm_prefetch((const char *)(p) + 2048, _MM_HINT_T0)
/* RD__LSE_K less a margin for the rounding of t = x - m (near t = 64:
 * within 2^-47): a vector check t <= LSE_KP leaves x <= m + RD__LSE_K as ops.c
 * computes it, so that it too keeps the shift. */
#define LSE_KP (RD__LSE_K - 0x1p-30)
/* lse_cols4_avx512: the same columns four rows on (the next pass) */
#define LSEC_PF(p, rs) _mm_prefetch((const char *)(p) + 4 * (rs), _MM_HINT_T0)

/* -1: follow the library's kernel path (AVX-512 forms while
 * rd__kernels_active() is RD__IMPL_AVX512); 0/1: forced by the tests. */
static int force512 = -1;

/* ------------------------------------------------------------------ */
/* float32 LogSumExp lanes                                             */
/* ------------------------------------------------------------------ */

TGT2 static size_t lse_f32_avx2(double *s, const unsigned char *x,
                                size_t nblocks, double m)
{
  const __m256d mv = _mm256_set1_pd(m), ninf = _mm256_set1_pd(-INFINITY);
  const __m256d mk = _mm256_set1_pd(m + RD__LSE_K);
  __m256d s0 = _mm256_loadu_pd(s), s1 = _mm256_loadu_pd(s + 4);
  __m256d s2 = _mm256_loadu_pd(s + 8), s3 = _mm256_loadu_pd(s + 12);
  size_t b = 0;
  for (; b < nblocks; b++, x += 64) {
    __m256 f0 = _mm256_loadu_ps((const float *)(const void *)x);
    __m256 f1 = _mm256_loadu_ps((const float *)(const void *)(x + 32));
    __m256d v0 = _mm256_cvtps_pd(_mm256_castps256_ps128(f0));
    __m256d v1 = _mm256_cvtps_pd(_mm256_extractf128_ps(f0, 1));
    __m256d v2 = _mm256_cvtps_pd(_mm256_castps256_ps128(f1));
    __m256d v3 = _mm256_cvtps_pd(_mm256_extractf128_ps(f1, 1));
    /* good: v <= m + K or v == -inf (else NaN, +inf or the shift moves) */
#define OPK_GOOD(v)                                                            \
  _mm256_or_pd(_mm256_cmp_pd(v, mk, _CMP_LE_OQ),                               \
               _mm256_cmp_pd(v, ninf, _CMP_EQ_OQ))
    __m256d g = _mm256_and_pd(_mm256_and_pd(OPK_GOOD(v0), OPK_GOOD(v1)),
                              _mm256_and_pd(OPK_GOOD(v2), OPK_GOOD(v3)));
#undef OPK_GOOD
    if (_mm256_movemask_pd(g) != 0xf)
      break;
    OPK_PF(x);
    s0 = _mm256_add_pd(s0, rd__expk4(_mm256_sub_pd(v0, mv)));
    s1 = _mm256_add_pd(s1, rd__expk4(_mm256_sub_pd(v1, mv)));
    s2 = _mm256_add_pd(s2, rd__expk4(_mm256_sub_pd(v2, mv)));
    s3 = _mm256_add_pd(s3, rd__expk4(_mm256_sub_pd(v3, mv)));
  }
  _mm256_storeu_pd(s, s0);
  _mm256_storeu_pd(s + 4, s1);
  _mm256_storeu_pd(s + 8, s2);
  _mm256_storeu_pd(s + 12, s3);
  return b;
}

size_t rd__opk_lse_f32(double *s, const unsigned char *x, size_t nblocks,
                       double m)
{
  return lse_f32_avx2(s, x, nblocks, m);
}

/* A block of 16 elements v0, v1 (none NaN or +inf) where the shift
 * moves: the shift before and after each element, in order (lsel_elem:
 * -inf is skipped, x > m + RD__LSE_K moves m to x); every term expk(x - m
 * after x) and every rescale factor expk(m before x - x) is one vector
 * expk; then the lanes take their terms and the factors in ops.c's order:
 * the terms of the elements before the first move, that move's rescale of
 * all 16 lanes, the terms up to the next one, and so on.  Leaves the
 * shift in *cur. */
TGT5 ALWAYS_INLINE void lse_rec16(const struct rd__expk_tab *tb, __m512d *s0,
                                  __m512d *s1, double *cur, __m512d v0,
                                  __m512d v1)
{
  double v[L], a[L], b[L], fac[L], c = *cur;
  __m512d t0, t1, fv;
  unsigned rec = 0, fin = 0, done = 0, seg;
  _mm512_storeu_pd(v, v0);
  _mm512_storeu_pd(v + 8, v1);
  for (int i = 0; i < L; i++) {
    b[i] = c;
    if (v[i] != -INFINITY) {
      fin |= 1u << i;
      if (v[i] > c + RD__LSE_K) {
        rec |= 1u << i;
        c = v[i];
      }
    }
    a[i] = c;
  }
  t0 = rd__expk8(tb, _mm512_sub_pd(v0, _mm512_loadu_pd(a)));
  t1 = rd__expk8(tb, _mm512_sub_pd(v1, _mm512_loadu_pd(a + 8)));
  _mm512_storeu_pd(fac, rd__expk8(tb, _mm512_sub_pd(_mm512_loadu_pd(b), v0)));
  _mm512_storeu_pd(fac + 8,
                   rd__expk8(tb, _mm512_sub_pd(_mm512_loadu_pd(b + 8), v1)));
  while (rec != 0) {
    unsigned p = (unsigned)__builtin_ctz(rec);
    rec &= rec - 1;
    seg = ((1u << p) - 1) & ~done & fin;
    *s0 = _mm512_mask_add_pd(*s0, (__mmask8)(seg & 0xff), *s0, t0);
    *s1 = _mm512_mask_add_pd(*s1, (__mmask8)(seg >> 8), *s1, t1);
    done |= (1u << p) - 1;
    fv = _mm512_set1_pd(fac[p]);
    *s0 = _mm512_mul_pd(*s0, fv);
    *s1 = _mm512_mul_pd(*s1, fv);
  }
  seg = ~done & fin;
  *s0 = _mm512_mask_add_pd(*s0, (__mmask8)(seg & 0xff), *s0, t0);
  *s1 = _mm512_mask_add_pd(*s1, (__mmask8)((seg >> 8) & 0xff), *s1, t1);
  *cur = c;
}

/* A NaN or +inf among v0, v1. */
TGT5 ALWAYS_INLINE int lse_bad16(__m512d v0, __m512d v1)
{
  const __m512d pinf = _mm512_set1_pd(INFINITY);
  return (_mm512_cmp_pd_mask(v0, pinf, _CMP_NLT_UQ) |
          _mm512_cmp_pd_mask(v1, pinf, _CMP_NLT_UQ)) != 0;
}

/* Out of line: in lse_run_avx512() it is the rare path, and inlined, its
 * registers crowd the common path's (case A 1.04-1.10x the time). */
TGT5 __attribute__((noinline)) static int lse_rec_avx512(double *s, double *m,
                                                         const unsigned char *x)
{
  const float *f = (const float *)(const void *)x;
  __m512d v0 = _mm512_cvtps_pd(_mm256_loadu_ps(f));
  __m512d v1 = _mm512_cvtps_pd(_mm256_loadu_ps(f + 8));
  __m512d s0, s1;
  struct rd__expk_tab tb;
  if (lse_bad16(v0, v1))
    return 1;
  rd__expk_tab_load(&tb);
  s0 = _mm512_loadu_pd(s);
  s1 = _mm512_loadu_pd(s + 8);
  lse_rec16(&tb, &s0, &s1, m, v0, v1);
  _mm512_storeu_pd(s, s0);
  _mm512_storeu_pd(s + 8, s1);
  return 0;
}

/* The common blocks of a float32 run (rd__opk_lse_run_f32, the rows of
 * rd__opk_lse_rowsums_f32), where the shift stays.  Such a block has every
 * u = m - x in [-K', 707] (K' = LSE_KP, just below RD__LSE_K): x <= m + K
 * however u rounds, and not so far below m that expk(-u) gives 0.  As
 * 64-bit integers the u + K' of that range are exactly the bit patterns up
 * to (707 + K')'s (a negative sum, -0, NaN and the infinities lie above),
 * so two adds, one unsigned maximum of the two vectors' bits and one
 * unsigned compare check 16 elements, and the expks need no mask
 * (rd__expk8_neg(u) gives expk(-u)'s bits for either sign of u).  Every
 * other block (the shift moves, an element 707 or more below m, -inf,
 * NaN, +inf) takes the rare path: lse_common_each() stops before it.  No
 * call in this loop, so the constants stay in registers (a call clobbers
 * them all, and they were reloaded on every block: 1.3x the time). */
TGT5 ALWAYS_INLINE size_t lse_common_each(const struct rd__expk_tab *tb,
                                          __m512d *s0, __m512d *s1, __m512d mv,
                                          const unsigned char *x,
                                          size_t nblocks)
{
  const __m512d kp = _mm512_set1_pd(LSE_KP);
  const __m512i umax = _mm512_castpd_si512(_mm512_set1_pd(707.0 + LSE_KP));
  size_t b = 0;
  for (; b < nblocks; b++, x += 64) {
    const float *f = (const float *)(const void *)x;
    __m512d u0 = _mm512_sub_pd(mv, _mm512_cvtps_pd(_mm256_loadu_ps(f)));
    __m512d u1 = _mm512_sub_pd(mv, _mm512_cvtps_pd(_mm256_loadu_ps(f + 8)));
    __m512i w = _mm512_max_epu64(_mm512_castpd_si512(_mm512_add_pd(u0, kp)),
                                 _mm512_castpd_si512(_mm512_add_pd(u1, kp)));
    if (_mm512_cmp_epu64_mask(w, umax, _MM_CMPINT_LE) != 0xff)
      break;
    OPK_PF(x);
    *s0 = _mm512_add_pd(*s0, rd__expk8_neg(tb, u0));
    *s1 = _mm512_add_pd(*s1, rd__expk8_neg(tb, u1));
  }
  return b;
}

/* Blocks checked a chunk at a time by lse_common() */
#define LSE_CHUNK 16

/* lse_common()'s bounds for the shift m: m - 706 rounded up and m + 63
 * rounded down to float32 (both sums in double are within 2^-13 of exact
 * while |m| < 2^40, so the bounds stay inside [m - 706.5, m + 63.5]);
 * empty for any other m. */
TGT5 ALWAYS_INLINE void lse_chunk_bounds(double m, __m512 *lov, __m512 *hiv)
{
  const __m128d md = _mm_set_sd(m);
  if (fabs(m) < 0x1p40) {
    *lov = _mm512_broadcastss_ps(
      _mm_cvt_roundsd_ss(_mm_setzero_ps(), _mm_sub_sd(md, _mm_set_sd(706.0)),
                         _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC));
    *hiv = _mm512_broadcastss_ps(
      _mm_cvt_roundsd_ss(_mm_setzero_ps(), _mm_add_sd(md, _mm_set_sd(63.0)),
                         _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
  } else {
    *lov = _mm512_set1_ps(INFINITY);
    *hiv = _mm512_set1_ps(-INFINITY);
  }
}

/* lse_common_each()'s blocks, checked LSE_CHUNK blocks at a time: the
 * float32 elements' maximum and minimum against bounds [lo, hi] inside
 * [m - 706.5, m + 63.5] (lse_chunk_bounds; every element between them
 * passes lse_common_each()'s check, u in [-63.5, 706.5] however it
 * rounds), and the lane sums against NaN (a NaN element, which
 * max and min skip, makes its term NaN).  A chunk that passes has the
 * same sums as lse_common_each() gives it, added in the same order; any
 * other goes again from its start through lse_common_each(), which stops
 * before its first uncommon block.  Two maximum/minimum operations per
 * block in place of lse_common_each()'s four checking operations, one of
 * them a compare on the multiply ports: 0.89x the time of cases A and
 * B, 0.90x of E.  For |m| >= 2^40 the bounds are left empty (a float32
 * so large has no neighbours within 706), and every chunk goes through
 * lse_common_each(). */
TGT5 ALWAYS_INLINE size_t lse_common(const struct rd__expk_tab *tb, __m512d *s0,
                                     __m512d *s1, __m512d mv,
                                     const unsigned char *x, size_t nblocks)
{
  __m512 lov, hiv;
  size_t b = 0;
  lse_chunk_bounds(_mm512_cvtsd_f64(mv), &lov, &hiv);
  while (b + LSE_CHUNK <= nblocks) {
    const unsigned char *xc = x + b * 64;
    __m512d a0 = *s0, a1 = *s1;
    __m512 mx = lov, mn = hiv;
    for (int j = 0; j < LSE_CHUNK; j++, xc += 64) {
      const float *f = (const float *)(const void *)xc;
      __m512d u0 = _mm512_sub_pd(mv, _mm512_cvtps_pd(_mm256_loadu_ps(f)));
      __m512d u1 = _mm512_sub_pd(mv, _mm512_cvtps_pd(_mm256_loadu_ps(f + 8)));
      __m512 v = _mm512_loadu_ps(f);
      /* max(), min() return their second operand when either is NaN */
      mx = _mm512_max_ps(v, mx);
      mn = _mm512_min_ps(v, mn);
      OPK_PF(xc);
      a0 = _mm512_add_pd(a0, rd__expk8_neg(tb, u0));
      a1 = _mm512_add_pd(a1, rd__expk8_neg(tb, u1));
    }
    if (__builtin_expect((_mm512_cmp_ps_mask(mx, hiv, _CMP_GT_OQ) |
                          _mm512_cmp_ps_mask(mn, lov, _CMP_LT_OQ) |
                          _mm512_cmp_pd_mask(a0, a1, _CMP_UNORD_Q)) != 0,
                         0)) {
      size_t d = lse_common_each(tb, s0, s1, mv, x + b * 64, LSE_CHUNK);
      b += d;
      if (d < LSE_CHUNK)
        return b;
    } else {
      *s0 = a0;
      *s1 = a1;
      b += LSE_CHUNK;
    }
  }
  return b + lse_common_each(tb, s0, s1, mv, x + b * 64, nblocks - b);
}

/* The blocks of a run into the lanes s0, s1 with shift *m: the common
 * ones by lse_common(), every other by lse_rec_avx512() through s and m.
 * Returns the blocks done: fewer than nblocks at a NaN or +inf. */
TGT5 ALWAYS_INLINE size_t lse_blocks(const struct rd__expk_tab *tb, __m512d *s0,
                                     __m512d *s1, double *m, double *s,
                                     const unsigned char *x, size_t nblocks)
{
  size_t b = 0;
  for (;;) {
    int bad;
    b += lse_common(tb, s0, s1, _mm512_set1_pd(*m), x + b * 64, nblocks - b);
    if (b == nblocks)
      return b;
    _mm512_storeu_pd(s, *s0);
    _mm512_storeu_pd(s + 8, *s1);
    bad = lse_rec_avx512(s, m, x + b * 64);
    *s0 = _mm512_loadu_pd(s);
    *s1 = _mm512_loadu_pd(s + 8);
    if (bad)
      return b;
    b++;
  }
}

/* The lanes, the shift and the table stay in registers in the common
 * path: the rare one passes them through s and m (with their addresses
 * taken in the loop, the lanes went through memory on every block, a
 * store-to-load forwarding on each add's chain). */
TGT5 static size_t lse_run_avx512(double *s, double *m, const unsigned char *x,
                                  size_t nblocks)
{
  __m512d s0 = _mm512_loadu_pd(s), s1 = _mm512_loadu_pd(s + 8);
  struct rd__expk_tab tb;
  size_t b;
  rd__expk_tab_load(&tb);
  b = lse_blocks(&tb, &s0, &s1, m, s, x, nblocks);
  _mm512_storeu_pd(s, s0);
  _mm512_storeu_pd(s + 8, s1);
  return b;
}

size_t rd__opk_lse_run_f32(double *s, double *m, const unsigned char *x,
                           size_t nblocks)
{
  return rd__opk_avx512() ? lse_run_avx512(s, m, x, nblocks) : 0;
}

int rd__opk_lse_rec_f32(double *s, double *m, const unsigned char *x)
{
  return rd__opk_avx512() ? lse_rec_avx512(s, m, x) : 1;
}

/* The fixed tree's last three levels (kernels_impl.h, tree()) for eight
 * rows: c[i] holds row i's lanes k + (k + 8), k = 0..7 (the first level);
 * the result is row i's sum in lane i.  Each level adds lane k to lane
 * k + w of the same row, as tree() does, the rows regrouped by shuffles:
 * (k, k + 4) for two rows per vector, (k, k + 2) for four, (k, k + 1) for
 * all eight.  The same operations as kernels_rows512.c's pair_c() and
 * rows8_tail(), kept apart on purpose: one shared inline form of them
 * (measured 2026-12-07) made GCC keep these rows' constants in memory
 * (LogSumExp F 1.27x the time) or, written as these loops, slowed the
 * sums' rows (Sum F 1.12x). */
TGT5 ALWAYS_INLINE __m512d lse_tree8(const __m512d *c)
{
  const __m512i lo2 = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
  const __m512i hi2 = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
  const __m512i ev = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i od = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  __m512d d[4], e[2];
#pragma GCC unroll 4
  for (int i = 0; i < 4; i++) /* rows 2i, 2i + 1: lanes 0-3 each */
    d[i] = _mm512_add_pd(_mm512_shuffle_f64x2(c[2 * i], c[2 * i + 1], 0x44),
                         _mm512_shuffle_f64x2(c[2 * i], c[2 * i + 1], 0xee));
#pragma GCC unroll 2
  for (int i = 0; i < 2; i++) /* rows 4i .. 4i + 3: lanes 0-1 each */
    e[i] = _mm512_add_pd(_mm512_permutex2var_pd(d[2 * i], lo2, d[2 * i + 1]),
                         _mm512_permutex2var_pd(d[2 * i], hi2, d[2 * i + 1]));
  return _mm512_add_pd(_mm512_permutex2var_pd(e[0], ev, e[1]),
                       _mm512_permutex2var_pd(e[0], od, e[1]));
}

/* lse_tree8() for the first cnt rows of c only, one at a time. */
TGT5 ALWAYS_INLINE void tree_tail(const __m512d *c, size_t cnt, double *t)
{
  for (size_t i = 0; i < cnt; i++) {
    double a[8];
    _mm512_storeu_pd(a, c[i]);
    t[i] = tree_n(a, 8);
  }
}

/* Each row as lsel_run() from the empty state: a finite first element
 * sets the shift (lsel_run's shortcut), the blocks as lse_run_avx512(),
 * the tail by lse_rec_avx512() from a copy padded with -inf.  The table,
 * the constants and the lanes stay in registers from row to row, and each
 * row's tree (kernels_impl.h, tree()) is its first level (lanes k, k + 8:
 * s0 + s1) then lse_tree8() for eight rows at a time; the rows of a
 * last group of fewer (the end, or a row with a NaN or +inf, which stops
 * it) by tree_tail(). */
TGT5 static size_t lse_rowsums_avx512(double *m, double *t,
                                      const unsigned char *x, size_t n,
                                      size_t nrows)
{
  const size_t nb = n / L, rest = n % L;
  struct rd__expk_tab tb;
  __m512d c[8];
  size_t r = 0;
  rd__expk_tab_load(&tb);
  for (; r < nrows; r++, x += n * 4) {
    double s[L], mr = -INFINITY;
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    float x0;
    memcpy(&x0, x, sizeof x0);
    if (x0 > -INFINITY && x0 < INFINITY)
      mr = x0;
    if (lse_blocks(&tb, &s0, &s1, &mr, s, x, nb) != nb)
      break;
    if (rest > 0) {
      float pad[L];
      for (size_t l = 0; l < L; l++)
        pad[l] = -INFINITY;
      memcpy(pad, x + nb * 64, rest * 4);
      /* a -inf is never a common block: lse_rec_avx512() takes it */
      if (lse_blocks(&tb, &s0, &s1, &mr, s, (const unsigned char *)pad, 1) != 1)
        break;
    }
    m[r] = mr;
    c[r % 8] = _mm512_add_pd(s0, s1);
    if (r % 8 == 7)
      _mm512_storeu_pd(t + r - 7, lse_tree8(c));
  }
  tree_tail(c, r % 8, t + (r - r % 8));
  return r;
}

size_t rd__opk_lse_rowsums_f32(double *m, double *t, const unsigned char *x,
                               size_t n, size_t nrows)
{
  return rd__opk_avx512() && n >= L ? lse_rowsums_avx512(m, t, x, n, nrows) : 0;
}

/* ------------------------------------------------------------------ */
/* float32 ArgMax/ArgMin of a run: one pass                           */
/* ------------------------------------------------------------------ */

/* Lane l sees elements l, l + W, ... in order and keeps its best key (-0
 * as +0, NaN skipped), the index where it first (with `last`: last) held
 * it, and its first (last) NaN index; the lanes then combine: the best
 * key, and among the lanes holding it the least (greatest) index, so the
 * result is the first (last) index of the best key, as ops.c's scalar
 * loops find it.  Keys never equal the identity (only NaN bit patterns
 * map to INT32_MIN and INT32_MAX).  The tail is a masked load. */
/* One step of a lane set: W elements u (masked to `act`) at indices iv. */
TGT5 ALWAYS_INLINE void arg32_step512(__m512i u, __mmask16 act, __m512i iv,
                                      int is_max, int last, __m512i none,
                                      __m512i *b, __m512i *bi, __m512i *ni)
{
  const __m512i absm = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  __mmask16 nan, upd;
  __m512i k;
  u = _mm512_mask_mov_epi32(
    u, _mm512_cmpeq_epi32_mask(u, _mm512_set1_epi32(INT32_MIN)),
    _mm512_setzero_si512()); /* -0 as +0 */
  nan = _mm512_mask_cmpgt_epi32_mask(act, _mm512_and_si512(u, absm), inf);
  k = _mm512_xor_si512(u, _mm512_and_si512(_mm512_srai_epi32(u, 31), absm));
  if (is_max)
    upd = last ? _mm512_cmpge_epi32_mask(k, *b)
               : _mm512_cmpgt_epi32_mask(k, *b);
  else
    upd = last ? _mm512_cmple_epi32_mask(k, *b)
               : _mm512_cmplt_epi32_mask(k, *b);
  upd &= act & ~nan;
  *b = _mm512_mask_mov_epi32(*b, upd, k);
  *bi = _mm512_mask_mov_epi32(*bi, upd, iv);
  if (last)
    *ni = _mm512_mask_mov_epi32(*ni, nan, iv);
  else
    *ni = _mm512_mask_mov_epi32(*ni, nan & _mm512_cmpeq_epi32_mask(*ni, none),
                                iv);
}

/* Two lane sets (even and odd vectors) for independent chains; they
 * combine like the lanes of one set. */
TGT5 ALWAYS_INLINE void arg32_512(const unsigned char *x, size_t n, int is_max,
                                  int last, int32_t *best, int64_t *bidx,
                                  int64_t *nidx)
{
  const __m512i ident = _mm512_set1_epi32(is_max ? INT32_MIN : INT32_MAX);
  const __m512i step = _mm512_set1_epi32(32);
  const __m512i none = _mm512_set1_epi32(last ? -1 : INT32_MAX);
  __m512i b0 = ident, bi0 = _mm512_set1_epi32(-1), ni0 = none;
  __m512i b1 = ident, bi1 = bi0, ni1 = none;
  __m512i iv0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                  14, 15);
  __m512i iv1 = _mm512_add_epi32(iv0, _mm512_set1_epi32(16));
  int32_t bb, ib, in;
  __mmask16 c0, c1;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    OPK_PF(x + i * 4);
    arg32_step512(_mm512_loadu_si512(x + i * 4), 0xffff, iv0, is_max, last,
                  none, &b0, &bi0, &ni0);
    arg32_step512(_mm512_loadu_si512(x + i * 4 + 64), 0xffff, iv1, is_max, last,
                  none, &b1, &bi1, &ni1);
    iv0 = _mm512_add_epi32(iv0, step);
    iv1 = _mm512_add_epi32(iv1, step);
  }
  for (; i < n; i += 16) {
    __mmask16 act = n - i >= 16 ? (__mmask16)0xffff
                                : (__mmask16)((1u << (n - i)) - 1);
    arg32_step512(_mm512_maskz_loadu_epi32(act, x + i * 4), act, iv0, is_max,
                  last, none, &b0, &bi0, &ni0);
    iv0 = _mm512_add_epi32(iv0, _mm512_set1_epi32(16));
  }
  if (is_max) {
    int32_t q0 = _mm512_reduce_max_epi32(b0), q1 = _mm512_reduce_max_epi32(b1);
    bb = q0 > q1 ? q0 : q1;
  } else {
    int32_t q0 = _mm512_reduce_min_epi32(b0), q1 = _mm512_reduce_min_epi32(b1);
    bb = q0 < q1 ? q0 : q1;
  }
  c0 = _mm512_cmpeq_epi32_mask(b0, _mm512_set1_epi32(bb)) &
       _mm512_cmpge_epi32_mask(bi0, _mm512_setzero_si512());
  c1 = _mm512_cmpeq_epi32_mask(b1, _mm512_set1_epi32(bb)) &
       _mm512_cmpge_epi32_mask(bi1, _mm512_setzero_si512());
  if (last) {
    ib = _mm512_reduce_max_epi32(
      _mm512_max_epi32(_mm512_mask_mov_epi32(_mm512_set1_epi32(-1), c0, bi0),
                       _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), c1, bi1)));
    in = _mm512_reduce_max_epi32(_mm512_max_epi32(ni0, ni1));
  } else {
    const __m512i big = _mm512_set1_epi32(INT32_MAX);
    ib = _mm512_reduce_min_epi32(
      _mm512_min_epi32(_mm512_mask_mov_epi32(big, c0, bi0),
                       _mm512_mask_mov_epi32(big, c1, bi1)));
    in = _mm512_reduce_min_epi32(_mm512_min_epi32(ni0, ni1));
  }
  *best = bb;
  *bidx = (c0 | c1) ? ib : -1;
  *nidx = in == (last ? -1 : INT32_MAX) ? -1 : in;
}

TGT2 ALWAYS_INLINE void arg32_256(const unsigned char *x, size_t n, int is_max,
                                  int last, int32_t *best, int64_t *bidx,
                                  int64_t *nidx)
{
  const __m256i ident = _mm256_set1_epi32(is_max ? INT32_MIN : INT32_MAX);
  const __m256i absm = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  const __m256i nz = _mm256_set1_epi32(INT32_MIN);
  const __m256i step = _mm256_set1_epi32(8);
  const __m256i none = _mm256_set1_epi32(last ? -1 : INT32_MAX);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i b = ident, bi = _mm256_set1_epi32(-1), ni = none, iv = iota;
  int32_t lb[8], lbi[8], lni[8], bb, ib = -1, in;
  for (size_t i = 0; i < n; i += 8, iv = _mm256_add_epi32(iv, step)) {
    __m256i act = n - i >= 8
                    ? _mm256_set1_epi32(-1)
                    : _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)(n - i)),
                                         iota);
    __m256i u = _mm256_maskload_epi32((const int *)(const void *)(x + i * 4),
                                      act),
            k, nan, upd, ok;
    if (n - i >= 8)
      OPK_PF(x + i * 4);
    u = _mm256_andnot_si256(_mm256_cmpeq_epi32(u, nz), u);
    nan = _mm256_and_si256(act,
                           _mm256_cmpgt_epi32(_mm256_and_si256(u, absm), inf));
    k = _mm256_xor_si256(u, _mm256_and_si256(_mm256_srai_epi32(u, 31), absm));
    if (is_max)
      upd = _mm256_cmpgt_epi32(k, b);
    else
      upd = _mm256_cmpgt_epi32(b, k);
    if (last)
      upd = _mm256_or_si256(upd, _mm256_cmpeq_epi32(k, b));
    ok = _mm256_andnot_si256(nan, act);
    upd = _mm256_and_si256(upd, ok);
    b = _mm256_blendv_epi8(b, k, upd);
    bi = _mm256_blendv_epi8(bi, iv, upd);
    if (last)
      ni = _mm256_blendv_epi8(ni, iv, nan);
    else
      ni = _mm256_blendv_epi8(ni, iv,
                              _mm256_and_si256(nan,
                                               _mm256_cmpeq_epi32(ni, none)));
  }
  _mm256_storeu_si256((__m256i *)(void *)lb, b);
  _mm256_storeu_si256((__m256i *)(void *)lbi, bi);
  _mm256_storeu_si256((__m256i *)(void *)lni, ni);
  bb = lb[0];
  in = lni[0];
  for (int l = 1; l < 8; l++) {
    bb = is_max ? (lb[l] > bb ? lb[l] : bb) : (lb[l] < bb ? lb[l] : bb);
    in = last ? (lni[l] > in ? lni[l] : in) : (lni[l] < in ? lni[l] : in);
  }
  for (int l = 0; l < 8; l++)
    if (lb[l] == bb && lbi[l] >= 0 &&
        (ib < 0 || (last ? lbi[l] > ib : lbi[l] < ib)))
      ib = lbi[l];
  *best = bb;
  *bidx = ib;
  *nidx = in == (last ? -1 : INT32_MAX) ? -1 : in;
}

TGT5 static void arg32_avx512(const unsigned char *x, size_t n, int mode,
                              int32_t *best, int64_t *bidx, int64_t *nidx)
{
  switch (mode) {
  case 0: arg32_512(x, n, 0, 0, best, bidx, nidx); break;
  case 1: arg32_512(x, n, 0, 1, best, bidx, nidx); break;
  case 2: arg32_512(x, n, 1, 0, best, bidx, nidx); break;
  default: arg32_512(x, n, 1, 1, best, bidx, nidx); break;
  }
}

TGT2 static void arg32_avx2(const unsigned char *x, size_t n, int mode,
                            int32_t *best, int64_t *bidx, int64_t *nidx)
{
  switch (mode) {
  case 0: arg32_256(x, n, 0, 0, best, bidx, nidx); break;
  case 1: arg32_256(x, n, 0, 1, best, bidx, nidx); break;
  case 2: arg32_256(x, n, 1, 0, best, bidx, nidx); break;
  default: arg32_256(x, n, 1, 1, best, bidx, nidx); break;
  }
}

void rd__opk_arg32(const unsigned char *x, size_t n, int is_max, int last,
                   int32_t *best, int64_t *bidx, int64_t *nidx)
{
  int mode = 2 * (is_max != 0) + (last != 0);
  if (rd__opk_avx512())
    arg32_avx512(x, n, mode, best, bidx, nidx);
  else
    arg32_avx2(x, n, mode, best, bidx, nidx);
}

/* ------------------------------------------------------------------ */
/* float32 Prod columns                                                */
/* ------------------------------------------------------------------ */

/* kernels_avx2.c's rd__avx2_prod_cols_f32 on 8 columns at a time: the
 * same operations (ops.c's prod_add for an ordinary x: frexp by bits, the
 * double-double multiply with its FMA error term, prod_norm), lane by
 * lane. */
TGT5 static size_t prod_cols_avx512(double *hi, double *lo, int64_t *e,
                                    int64_t *neg, const unsigned char *x,
                                    size_t nvec)
{
  const __m512i emask = _mm512_set1_epi64((int64_t)0x7ff << 52);
  const __m512i ebias = _mm512_set1_epi64((int64_t)1022 << 52);
  const __m512i b1022 = _mm512_set1_epi64(1022);
  const __m512i b1023 = _mm512_set1_epi64(1023);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lim = _mm256_set1_epi32(0x7f7ffffe);
  const __m256i absm = _mm256_set1_epi32(0x7fffffff);
  size_t g = 0;
  for (; g + 2 <= nvec; g += 2) {
    const size_t j = 4 * g;
    __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(x + j * 4));
    __m256i a = _mm256_sub_epi32(_mm256_and_si256(u, absm), one);
    __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi32(a, lim),
                                  _mm256_srai_epi32(a, 31));
    __m512d h, l, fm, p, er, t, sc;
    __m512i ab, ex, E, hb;
    if (!_mm256_testz_si256(bad, bad))
      break;
    ab = _mm512_castpd_si512(
      _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_and_si256(u, absm))));
    ex = _mm512_sub_epi64(_mm512_srli_epi64(_mm512_and_si512(ab, emask), 52),
                          b1022);
    fm = _mm512_castsi512_pd(
      _mm512_or_si512(_mm512_andnot_si512(emask, ab), ebias));
    h = _mm512_loadu_pd(hi + j);
    l = _mm512_loadu_pd(lo + j);
    E = _mm512_add_epi64(_mm512_loadu_si512(e + j), ex);
    p = _mm512_mul_pd(h, fm);
    er = _mm512_fmsub_pd(h, fm, p);
    er = _mm512_add_pd(er, _mm512_mul_pd(l, fm));
    t = _mm512_add_pd(p, er);
    l = _mm512_sub_pd(er, _mm512_sub_pd(t, p));
    hb = _mm512_castpd_si512(t);
    ex = _mm512_sub_epi64(_mm512_srli_epi64(_mm512_and_si512(hb, emask), 52),
                          b1022);
    h = _mm512_castsi512_pd(
      _mm512_or_si512(_mm512_andnot_si512(emask, hb), ebias));
    sc = _mm512_castsi512_pd(
      _mm512_slli_epi64(_mm512_sub_epi64(b1023, ex), 52));
    l = _mm512_mul_pd(l, sc);
    E = _mm512_add_epi64(E, ex);
    _mm512_storeu_pd(hi + j, h);
    _mm512_storeu_pd(lo + j, l);
    _mm512_storeu_si512(e + j, E);
    _mm512_storeu_si512(neg + j, _mm512_xor_si512(_mm512_loadu_si512(neg + j),
                                                  _mm512_cvtepu32_epi64(
                                                    _mm256_srli_epi32(u, 31))));
  }
  /* the last group, or the pair holding a special value: 4 at a time */
  return g + rd__avx2_prod_cols_f32(hi + 4 * g, lo + 4 * g, e + 4 * g,
                                    neg + 4 * g, x + 16 * g, nvec - g);
}

size_t rd__opk_prod_cols_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                             const unsigned char *x, size_t nvec)
{
  if (rd__opk_avx512())
    return prod_cols_avx512(hi, lo, e, neg, x, nvec);
  return rd__avx2_prod_cols_f32(hi, lo, e, neg, x, nvec);
}

/* ------------------------------------------------------------------ */
/* float32 LogSumExp columns                                           */
/* ------------------------------------------------------------------ */

/* One row of 8 columns (every x finite): ops.c's lsec_add lane by lane.
 * Where x > m + RD__LSE_K, hi = hi e + 1 and lo = lo e with
 * e = expk(m - x) (an empty column, m = -inf: e = 0), and m = x; elsewhere
 * hi += expk(x - m). */
TGT5 ALWAYS_INLINE void lsec_step8(const struct rd__expk_tab *tb, __m512d v,
                                   __m512d *mv, __m512d *h, __m512d *l)
{
  __mmask8 up = _mm512_cmp_pd_mask(
    v, _mm512_add_pd(*mv, _mm512_set1_pd(RD__LSE_K)), _CMP_GT_OQ);
  __m512d e = rd__expk8(tb, _mm512_mask_blend_pd(up, _mm512_sub_pd(v, *mv),
                                                 _mm512_sub_pd(*mv, v)));
  *h = _mm512_mask_add_pd(_mm512_add_pd(*h, e), up, _mm512_mul_pd(*h, e),
                          _mm512_set1_pd(1.0));
  *l = _mm512_mask_mul_pd(*l, up, *l, e);
  *mv = _mm512_mask_mov_pd(*mv, up, v);
}

/* kernels_avx2.c's rd__avx2_lse_cols_f32 on 8 columns at a time, the same
 * operations lane by lane (lsec_step8). */
TGT5 static size_t lse_cols_avx512(double *m, double *hi, double *lo,
                                   const unsigned char *x, size_t nvec)
{
  struct rd__expk_tab tb;
  size_t g = 0;
  rd__expk_tab_load(&tb);
  for (; g + 2 <= nvec; g += 2) {
    const size_t j = 4 * g;
    __m512d v = _mm512_cvtps_pd(
      _mm256_loadu_ps((const float *)(const void *)(x + j * 4)));
    __m512d mv = _mm512_loadu_pd(m + j), h = _mm512_loadu_pd(hi + j),
            l = _mm512_loadu_pd(lo + j);
    if (_mm512_fpclass_pd_mask(v, 0x99) != 0)
      break;
    lsec_step8(&tb, v, &mv, &h, &l);
    _mm512_storeu_pd(m + j, mv);
    _mm512_storeu_pd(hi + j, h);
    _mm512_storeu_pd(lo + j, l);
  }
  /* the last group, or the pair holding a NaN or infinity: 4 at a time */
  return g + rd__avx2_lse_cols_f32(m + 4 * g, hi + 4 * g, lo + 4 * g,
                                   x + 16 * g, nvec - g);
}

size_t rd__opk_lse_cols_f32(double *m, double *hi, double *lo,
                            const unsigned char *x, size_t nvec)
{
  if (rd__opk_avx512())
    return lse_cols_avx512(m, hi, lo, x, nvec);
  return rd__avx2_lse_cols_f32(m, hi, lo, x, nvec);
}

/* The terms of four rows of 8 columns (stride rs) at p against the shifts
 * mv: f[q] = expk(x - m) without a mask, and in *ok the lanes where every
 * row's shift stays and the terms need none: t = x - m in [-708,
 * RD__LSE_K), with room for t's rounding (near t = 64: within 2^-47), so
 * that x <= m + RD__LSE_K as lsec_add computes it.  In any other lane f is
 * unused. */
TGT5 ALWAYS_INLINE void lsec4_terms(const struct rd__expk_tab *tb,
                                    const unsigned char *p, size_t rs,
                                    __m512d mv, __m512d *f, __mmask8 *ok)
{
  const __m512d tmax = _mm512_set1_pd(LSE_KP);
  const __m512d tmin = _mm512_set1_pd(EXPK_MIN);
  __mmask8 k = 0xff;
#pragma GCC unroll 4
  for (int q = 0; q < 4; q++) {
    __m512d t = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(
                                (const float *)(const void *)(p + q * rs))),
                              mv);
    LSEC_PF(p + q * rs, rs);
    k &= _mm512_cmp_pd_mask(t, tmax, _CMP_LE_OQ) &
         _mm512_cmp_pd_mask(t, tmin, _CMP_GE_OQ);
    f[q] = rd__expk8_mask(tb, t, 0xff);
  }
  *ok = k;
}

/* lse_cols_avx512 over four rows (stride rs) at once, 8 columns per step:
 * each column takes its four rows in order with (m, hi, lo) in registers.
 * Where every shift stays (lsec4_terms' ok), that is hi += f[q], row by
 * row.  The next step's terms are computed before this step's sums
 * (software pipelining), so that the sums find them ready: one row at a
 * time, each step waited on its own exp. */
TGT5 static size_t lse_cols4_avx512(double *m, double *hi, double *lo,
                                    const unsigned char *x, size_t rs,
                                    size_t nvec)
{
  struct rd__expk_tab tb;
  __m512d f[4], mv;
  __mmask8 ok;
  size_t g = 0;
  if (nvec < 2)
    return 0;
  rd__expk_tab_load(&tb);
  mv = _mm512_loadu_pd(m);
  lsec4_terms(&tb, x, rs, mv, f, &ok);
  for (; g + 2 <= nvec; g += 2) {
    const size_t j = 4 * g;
    __m512d fn[4], mn = mv, h = _mm512_loadu_pd(hi + j);
    __mmask8 okn = 0;
    if (g + 4 <= nvec) { /* the next step's terms */
      mn = _mm512_loadu_pd(m + j + 8);
      lsec4_terms(&tb, x + (j + 8) * 4, rs, mn, fn, &okn);
    }
    if (ok == 0xff) {
      h = _mm512_add_pd(_mm512_add_pd(h, f[0]), f[1]);
      h = _mm512_add_pd(_mm512_add_pd(h, f[2]), f[3]);
    } else {
      const unsigned char *p = x + j * 4;
      __m512d v[4], l = _mm512_loadu_pd(lo + j);
      __mmask8 sp = 0;
      for (int q = 0; q < 4; q++) {
        v[q] = _mm512_cvtps_pd(
          _mm256_loadu_ps((const float *)(const void *)(p + q * rs)));
        sp |= _mm512_fpclass_pd_mask(v[q], 0x99);
      }
      if (sp)
        break; /* a NaN or an infinity: the caller's */
      for (int q = 0; q < 4; q++)
        lsec_step8(&tb, v[q], &mv, &h, &l);
      _mm512_storeu_pd(m + j, mv);
      _mm512_storeu_pd(lo + j, l);
    }
    _mm512_storeu_pd(hi + j, h);
    mv = mn;
    ok = okn;
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
      f[q] = fn[q];
  }
  return g;
}

size_t rd__opk_lse_cols4_f32(double *m, double *hi, double *lo,
                             const unsigned char *x, size_t rs, size_t nvec)
{
  return rd__opk_avx512() ? lse_cols4_avx512(m, hi, lo, x, rs, nvec) : 0;
}

/* ------------------------------------------------------------------ */
/* float32/16/bfloat16 Prod lanes: the first two levels of the tree     */
/* ------------------------------------------------------------------ */

/* ops.c's prod_merge(d, s) of the states (hi, lo, e), lane by lane,
 * without its prod_norm: e += e2; p = hi * hi2; er = fma(hi, hi2, -p) +
 * (hi * lo2 + lo * hi2); fast two-sum (p, er).  Each of these rounds the
 * same at any power-of-two scale while the values stay normal, so a
 * state left unnormalised, (hi 2^k, lo 2^k, e - k), merges into the same
 * state once normalised, for any k that keeps them normal. */
TGT5 ALWAYS_INLINE void prod_mul8(__m512d *h, __m512d *l, __m512i *e,
                                  __m512d h2, __m512d l2, __m512i e2)
{
  __m512d p = _mm512_mul_pd(*h, h2), er, t;
  er = _mm512_fmsub_pd(*h, h2, p);
  er = _mm512_add_pd(er, _mm512_add_pd(_mm512_mul_pd(*h, l2),
                                       _mm512_mul_pd(*l, h2)));
  t = _mm512_add_pd(p, er);
  *l = _mm512_sub_pd(er, _mm512_sub_pd(t, p));
  *h = t;
  *e = _mm512_add_epi64(*e, e2);
}

/* prod_norm on 8 lanes: hi's exponent moved into e (hi to [0.5, 1)) and
 * lo scaled by the same power of two (bit operations). */
TGT5 ALWAYS_INLINE void prod_norm8(__m512d *h, __m512d *l, __m512i *e)
{
  const __m512i emask = _mm512_set1_epi64((int64_t)0x7ff << 52);
  __m512i hb = _mm512_castpd_si512(*h);
  __m512i ex = _mm512_sub_epi64(_mm512_srli_epi64(_mm512_and_si512(hb, emask),
                                                  52),
                                _mm512_set1_epi64(1022));
  *h = _mm512_castsi512_pd(
    _mm512_or_si512(_mm512_andnot_si512(emask, hb),
                    _mm512_set1_epi64((int64_t)1022 << 52)));
  *l = _mm512_mul_pd(*l, _mm512_castsi512_pd(_mm512_slli_epi64(
                           _mm512_sub_epi64(_mm512_set1_epi64(1023), ex), 52)));
  *e = _mm512_add_epi64(*e, ex);
}

/* ops.c's prod_merge(d, s): prod_mul8, then prod_norm8. */
TGT5 ALWAYS_INLINE void prod_merge8(__m512d *h, __m512d *l, __m512i *e,
                                    __m512d h2, __m512d l2, __m512i e2)
{
  prod_mul8(h, l, e, h2, l2, e2);
  prod_norm8(h, l, e);
}

/* The tree of prodl_flush() on lanes (h, l, E) = lanes 0-7 and (h2, 0,
 * E2) = lanes 8-15; the result in lane 0 of h, l, E. */
TGT5 ALWAYS_INLINE void prod_tree8(__m512d *h, __m512d *l, __m512i *E,
                                   __m512d h2, __m512i E2)
{
  /* level 1: lanes k and k + 8 */
  prod_merge8(h, l, E, h2, _mm512_setzero_pd(), E2);
  /* levels 2-4: lane k with k + 4, then k + 2, then k + 1 (only lane
   * 0's result is used) */
  prod_merge8(h, l, E, _mm512_shuffle_f64x2(*h, *h, 0xee),
              _mm512_shuffle_f64x2(*l, *l, 0xee),
              _mm512_shuffle_i64x2(*E, *E, 0xee));
  {
    const __m512i i2 = _mm512_setr_epi64(2, 3, 2, 3, 6, 7, 6, 7);
    const __m512i i1 = _mm512_setr_epi64(1, 1, 3, 3, 5, 5, 7, 7);
    prod_merge8(h, l, E, _mm512_permutexvar_pd(i2, *h),
                _mm512_permutexvar_pd(i2, *l),
                _mm512_permutexvar_epi64(i2, *E));
    prod_merge8(h, l, E, _mm512_permutexvar_pd(i1, *h),
                _mm512_permutexvar_pd(i1, *l),
                _mm512_permutexvar_epi64(i1, *E));
  }
}

TGT5 static void prod_tree_avx512(const double *m, const int64_t *e, double *hi,
                                  double *lo, int64_t *eo)
{
  __m512d h = _mm512_loadu_pd(m), l = _mm512_setzero_pd();
  __m512i E = _mm512_loadu_si512(e);
  prod_tree8(&h, &l, &E, _mm512_loadu_pd(m + 8), _mm512_loadu_si512(e + 8));
  *hi = _mm512_cvtsd_f64(h);
  *lo = _mm512_cvtsd_f64(l);
  *eo = _mm_cvtsi128_si64(_mm512_castsi512_si128(E));
}

int rd__opk_prod_tree(const double *m, const int64_t *e, double *hi, double *lo,
                      int64_t *eo)
{
  if (!rd__opk_avx512())
    return -1;
  prod_tree_avx512(m, e, hi, lo, eo);
  return 0;
}

/* ------------------------------------------------------------------ */
/* float32 Prod of short rows                                          */
/* ------------------------------------------------------------------ */

/* The rows' lanes in vectors: lane l of a row holds element l, whose state
 * from prodl_reset() and prodl_mul() is frexp(|x|) by bits (0.5 |x| is
 * exact, so it has |x|'s mantissa), and lanes beyond n keep the reset state
 * (0.5, 1), which is frexp(1): rows are loaded padded with 1.0f.  The tree
 * (k, k + 8), (k, k + 4), (k, k + 2), (k, k + 1) is prod_merge lane by lane:
 * level 1 and 2 inside a row's vectors, levels 3 and 4 (and, AVX-512,
 * level 2) on vectors packing the surviving lanes of several rows, so every
 * merge vector is full. */

/* prod_out() of ordinary states: ldexp(hi + lo, e) with the sign, rounded
 * to float32.  e is clamped to [-300, 300]: hi + lo is in [0.5, 1], so a
 * larger e gives +-inf and a smaller one +-0 in float32 either way, and
 * inside the range the scaling by 2^e is exact, as ldexp's. */
#define PROD_ECLAMP 300

/* The first two tree levels, (k, k + 8) and (k, k + 4), from the elements
 * (prod_mul8's scaling argument, at the first level's ends).
 * Lanes k and k + 8 hold two float32 magnitudes, whose product P, taken
 * as is (prod_lvl1_8), is exact: 48 significant bits at most, in [2^-298,
 * 2^256].  The definition instead merges frexp(|x|) states and keeps the
 * result as frexp(P) with lo +0; P is that state's h scaled by 2^e.  Level
 * (k, k + 4) is then prod_merge8 of two such states, both lo +0: products
 * with them are +0 and er + +0 is er (an exact FMA residual, never -0).
 * Its p = h h2, er, t and lo round the same at any power-of-two scale
 * while every value stays normal, and P P2 is within [2^-596, 2^512], lo
 * (0 or above 2^-106 of it) too; so prod_merge8_lvl2 takes P and P2 as
 * they are, and normalising t leaves the same h, the same lo and the
 * exponent sum e + e2 + ex in one.  Bit for bit prod_merge8's state,
 * without normalising the first level. */
TGT5 ALWAYS_INLINE __m512d prod_lvl1_8(__m512 a)
{
  return _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)),
                       _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1)));
}

TGT5 ALWAYS_INLINE void prod_merge8_lvl2(__m512d *h, __m512d *l, __m512i *e,
                                         __m512d h2)
{
  __m512d p = _mm512_mul_pd(*h, h2), er = _mm512_fmsub_pd(*h, h2, p), t;
  t = _mm512_add_pd(p, er);
  *l = _mm512_sub_pd(er, _mm512_sub_pd(t, p));
  *h = t;
  *e = _mm512_setzero_si512();
  prod_norm8(h, l, e);
}

/* G groups of 8 rows (G constant: 2 in the loop, 1 for the rest), their
 * tree levels interleaved so that the short last levels of one group
 * overlap the other's. */
TGT5 ALWAYS_INLINE void prod_rows8(int G, unsigned char *out,
                                   unsigned char *redo, const unsigned char *x,
                                   size_t n, __mmask16 lm)
{
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i absm = _mm512_set1_epi32(0x7fffffff);
  const __m512i i3a = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
  const __m512i i3b = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
  const __m512i i4a = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
  const __m512i i4b = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
  __m512d h[16], l[8];
  __m512i E[8];
  unsigned bad = 0, neg = 0;
  for (int i = 0; i < 8 * G; i++) {
    const unsigned char *p = x + (size_t)i * n * 4;
    __m512i u = _mm512_castps_si512(_mm512_mask_loadu_ps(one, lm, p));
    __m512 a = _mm512_castsi512_ps(_mm512_and_si512(u, absm));
    _mm_prefetch((const char *)p + 6144, _MM_HINT_T0);
    /* a zero, inf or NaN (lanes off lm are 1.0) */
    bad |= (unsigned)(_mm512_fpclass_ps_mask(a, 0x9f) != 0) << i;
    neg |= (unsigned)(__builtin_popcount(_mm512_movepi32_mask(u)) & 1) << i;
    h[i] = prod_lvl1_8(a); /* (k, k + 8), not normalised */
  }
  /* (k, k + 4): lanes 0-3 of rows 2i and 2i + 1 in one vector */
  for (int i = 0; i < 4 * G; i++) {
    __m512d ha = _mm512_shuffle_f64x2(h[2 * i], h[2 * i + 1], 0x44);
    __m512d hb = _mm512_shuffle_f64x2(h[2 * i], h[2 * i + 1], 0xee);
    __m512d la;
    __m512i ea;
    prod_merge8_lvl2(&ha, &la, &ea, hb);
    h[i] = ha;
    l[i] = la;
    E[i] = ea;
  }
  /* (k, k + 2): lanes 0-1 of rows 4i .. 4i + 3.  This level and the next
   * are left unnormalised (prod_mul8): from states with hi in [0.5, 1)
   * their hi stay in [1/16, 1), so every value stays normal, and the
   * flush's prod_merge8 below normalises to prod_merge's state. */
  for (int i = 0; i < 2 * G; i++) {
    __m512d ha = _mm512_permutex2var_pd(h[2 * i], i3a, h[2 * i + 1]);
    __m512d hb = _mm512_permutex2var_pd(h[2 * i], i3b, h[2 * i + 1]);
    __m512d la = _mm512_permutex2var_pd(l[2 * i], i3a, l[2 * i + 1]);
    __m512d lb = _mm512_permutex2var_pd(l[2 * i], i3b, l[2 * i + 1]);
    __m512i ea = _mm512_permutex2var_epi64(E[2 * i], i3a, E[2 * i + 1]);
    __m512i eb = _mm512_permutex2var_epi64(E[2 * i], i3b, E[2 * i + 1]);
    prod_mul8(&ha, &la, &ea, hb, lb, eb);
    h[i] = ha;
    l[i] = la;
    E[i] = ea;
  }
  for (int g = 0; g < G; g++) {
    /* (k, k + 1): lane 0 of the 8 rows, in row order (unnormalised) */
    __m512d ha = _mm512_permutex2var_pd(h[2 * g], i4a, h[2 * g + 1]);
    __m512d hb = _mm512_permutex2var_pd(h[2 * g], i4b, h[2 * g + 1]);
    __m512d la = _mm512_permutex2var_pd(l[2 * g], i4a, l[2 * g + 1]);
    __m512d lb = _mm512_permutex2var_pd(l[2 * g], i4b, l[2 * g + 1]);
    __m512i ea = _mm512_permutex2var_epi64(E[2 * g], i4a, E[2 * g + 1]);
    __m512i eb = _mm512_permutex2var_epi64(E[2 * g], i4b, E[2 * g + 1]);
    __m512d dh = _mm512_set1_pd(0.5), dl = _mm512_setzero_pd(), s, v;
    __m512i de = _mm512_set1_epi64(1), ec;
    prod_mul8(&ha, &la, &ea, hb, lb, eb);
    /* prodl_flush's prod_merge into the empty accumulator (0.5, 0, 1) */
    prod_merge8(&dh, &dl, &de, ha, la, ea);
    s = _mm512_add_pd(dh, dl);
    ec = _mm512_min_epi64(_mm512_max_epi64(de, _mm512_set1_epi64(-PROD_ECLAMP)),
                          _mm512_set1_epi64(PROD_ECLAMP));
    v = _mm512_mul_pd(s, _mm512_castsi512_pd(_mm512_slli_epi64(
                           _mm512_add_epi64(ec, _mm512_set1_epi64(1023)), 52)));
    v = _mm512_castsi512_pd(
      _mm512_xor_si512(_mm512_castpd_si512(v),
                       _mm512_maskz_mov_epi64((__mmask8)(neg >> (8 * g)),
                                              _mm512_set1_epi64(INT64_MIN))));
    _mm256_storeu_ps((float *)(void *)(out + (size_t)g * 32),
                     _mm512_cvtpd_ps(v));
  }
  for (int i = 0; i < 8 * G; i++)
    redo[i] = (unsigned char)((bad >> i) & 1);
}

TGT5 static void prod_rows_avx512(unsigned char *out, unsigned char *redo,
                                  const unsigned char *x, size_t n,
                                  size_t nrows)
{
  const __mmask16 lm = (__mmask16)((1u << n) - 1);
  size_t r0 = 0;
  for (; r0 + 16 <= nrows; r0 += 16)
    prod_rows8(2, out + r0 * 4, redo + r0, x + r0 * n * 4, n, lm);
  if (r0 + 8 <= nrows) {
    prod_rows8(1, out + r0 * 4, redo + r0, x + r0 * n * 4, n, lm);
    r0 += 8;
  }
  for (; r0 < nrows; r0++)
    redo[r0] = 1;
}

/* prod_merge8 on 4 lanes. */
TGT2 ALWAYS_INLINE void prod_merge4(__m256d *h, __m256d *l, __m256i *e,
                                    __m256d h2, __m256d l2, __m256i e2)
{
  const __m256i emask = _mm256_set1_epi64x((int64_t)0x7ff << 52);
  const __m256i ebias = _mm256_set1_epi64x((int64_t)1022 << 52);
  __m256d p = _mm256_mul_pd(*h, h2), er, t, lo;
  __m256i hb, ex, E = _mm256_add_epi64(*e, e2);
  er = _mm256_fmsub_pd(*h, h2, p);
  er = _mm256_add_pd(er, _mm256_add_pd(_mm256_mul_pd(*h, l2),
                                       _mm256_mul_pd(*l, h2)));
  t = _mm256_add_pd(p, er);
  lo = _mm256_sub_pd(er, _mm256_sub_pd(t, p));
  hb = _mm256_castpd_si256(t);
  ex = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_and_si256(hb, emask), 52),
                        _mm256_set1_epi64x(1022));
  *h = _mm256_castsi256_pd(
    _mm256_or_si256(_mm256_andnot_si256(emask, hb), ebias));
  *l = _mm256_mul_pd(lo,
                     _mm256_castsi256_pd(_mm256_slli_epi64(
                       _mm256_sub_epi64(_mm256_set1_epi64x(1023), ex), 52)));
  *e = _mm256_add_epi64(E, ex);
}

TGT2 ALWAYS_INLINE void frexp4(__m128 a, __m256d *m, __m256i *e)
{
  const __m256i emask = _mm256_set1_epi64x((int64_t)0x7ff << 52);
  __m256i ab = _mm256_castpd_si256(_mm256_cvtps_pd(a));
  *e = _mm256_sub_epi64(_mm256_srli_epi64(_mm256_and_si256(ab, emask), 52),
                        _mm256_set1_epi64x(1022));
  *m = _mm256_castsi256_pd(
    _mm256_or_si256(_mm256_andnot_si256(emask, ab),
                    _mm256_set1_epi64x((int64_t)1022 << 52)));
}

/* A row's 8-element half, lanes at or beyond n set to 1.0f; *bad |= a
 * zero, inf or NaN among them. */
TGT2 ALWAYS_INLINE __m256 prod_half8(const unsigned char *p, __m256i mk,
                                     int *bad)
{
  const __m256i onei = _mm256_set1_epi32(1);
  __m256 v = _mm256_blendv_ps(_mm256_set1_ps(1.0f),
                              _mm256_maskload_ps((const float *)(const void *)p,
                                                 mk),
                              _mm256_castsi256_ps(mk));
  __m256i a = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v),
                                                _mm256_set1_epi32(0x7fffffff)),
                               onei);
  __m256i b = _mm256_or_si256(_mm256_cmpgt_epi32(a,
                                                 _mm256_set1_epi32(0x7f7ffffe)),
                              _mm256_srai_epi32(a, 31));
  *bad |= !_mm256_testz_si256(b, b);
  return v;
}

TGT2 static void prod_rows_avx2(unsigned char *out, unsigned char *redo,
                                const unsigned char *x, size_t n, size_t nrows)
{
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mk0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
  const __m256i mk1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - 8), lane);
  const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256d zero = _mm256_setzero_pd();
  size_t r0 = 0;
  for (; r0 + 4 <= nrows; r0 += 4) {
    __m256d h[4], l[4], P, Q, PL, QL, dh, dl, s, v;
    __m256i E[4], PE, QE, de, ec, sg;
    int bad[4];
    int64_t neg[4];
    for (int i = 0; i < 4; i++) {
      const unsigned char *p = x + (r0 + (size_t)i) * n * 4;
      __m256 v0, v1, a0, a1;
      __m256d q[4], lb = zero;
      __m256i qe[4];
      bad[i] = 0;
      v0 = prod_half8(p, mk0, &bad[i]);
      v1 = prod_half8(p + 32, mk1, &bad[i]);
      OPK_PF(p);
      neg[i] = (__builtin_popcount((unsigned)_mm256_movemask_ps(v0) |
                                   ((unsigned)_mm256_movemask_ps(v1) << 8)) &
                1)
                 ? INT64_MIN
                 : 0;
      a0 = _mm256_and_ps(v0, absm);
      a1 = _mm256_and_ps(v1, absm);
      frexp4(_mm256_castps256_ps128(a0), &q[0], &qe[0]);
      frexp4(_mm256_extractf128_ps(a0, 1), &q[1], &qe[1]);
      frexp4(_mm256_castps256_ps128(a1), &q[2], &qe[2]);
      frexp4(_mm256_extractf128_ps(a1, 1), &q[3], &qe[3]);
      /* (k, k + 8) for lanes 0-3 and 4-7, then (k, k + 4) */
      l[i] = zero;
      prod_merge4(&q[0], &l[i], &qe[0], q[2], zero, qe[2]);
      prod_merge4(&q[1], &lb, &qe[1], q[3], zero, qe[3]);
      prod_merge4(&q[0], &l[i], &qe[0], q[1], lb, qe[1]);
      h[i] = q[0];
      E[i] = qe[0];
    }
    /* (k, k + 2): lanes 0-1 of rows 0, 1 (P) and of rows 2, 3 (Q) */
    {
      __m256d ha = _mm256_permute2f128_pd(h[0], h[1], 0x20);
      __m256d hb = _mm256_permute2f128_pd(h[0], h[1], 0x31);
      __m256d la = _mm256_permute2f128_pd(l[0], l[1], 0x20);
      __m256d lb = _mm256_permute2f128_pd(l[0], l[1], 0x31);
      __m256i ea = _mm256_permute2x128_si256(E[0], E[1], 0x20);
      __m256i eb = _mm256_permute2x128_si256(E[0], E[1], 0x31);
      prod_merge4(&ha, &la, &ea, hb, lb, eb);
      P = ha;
      PL = la;
      PE = ea;
      ha = _mm256_permute2f128_pd(h[2], h[3], 0x20);
      hb = _mm256_permute2f128_pd(h[2], h[3], 0x31);
      la = _mm256_permute2f128_pd(l[2], l[3], 0x20);
      lb = _mm256_permute2f128_pd(l[2], l[3], 0x31);
      ea = _mm256_permute2x128_si256(E[2], E[3], 0x20);
      eb = _mm256_permute2x128_si256(E[2], E[3], 0x31);
      prod_merge4(&ha, &la, &ea, hb, lb, eb);
      Q = ha;
      QL = la;
      QE = ea;
    }
    /* (k, k + 1): lane 0 of rows 0, 2, 1, 3 */
    {
      __m256d ha = _mm256_unpacklo_pd(P, Q), hb = _mm256_unpackhi_pd(P, Q);
      __m256d la = _mm256_unpacklo_pd(PL, QL), lb = _mm256_unpackhi_pd(PL, QL);
      __m256i ea = _mm256_unpacklo_epi64(PE, QE);
      __m256i eb = _mm256_unpackhi_epi64(PE, QE);
      prod_merge4(&ha, &la, &ea, hb, lb, eb);
      dh = _mm256_set1_pd(0.5);
      dl = zero;
      de = _mm256_set1_epi64x(1);
      prod_merge4(&dh, &dl, &de, ha, la, ea);
    }
    s = _mm256_add_pd(dh, dl);
    ec = _mm256_blendv_epi8(de, _mm256_set1_epi64x(PROD_ECLAMP),
                            _mm256_cmpgt_epi64(de, _mm256_set1_epi64x(
                                                     PROD_ECLAMP)));
    ec = _mm256_blendv_epi8(ec, _mm256_set1_epi64x(-PROD_ECLAMP),
                            _mm256_cmpgt_epi64(_mm256_set1_epi64x(-PROD_ECLAMP),
                                               ec));
    v = _mm256_mul_pd(s,
                      _mm256_castsi256_pd(_mm256_slli_epi64(
                        _mm256_add_epi64(ec, _mm256_set1_epi64x(1023)), 52)));
    v = _mm256_permute4x64_pd(v, 0xd8); /* rows 0, 2, 1, 3 -> 0, 1, 2, 3 */
    sg = _mm256_setr_epi64x(neg[0], neg[1], neg[2], neg[3]);
    v = _mm256_castsi256_pd(_mm256_xor_si256(_mm256_castpd_si256(v), sg));
    _mm_storeu_ps((float *)(void *)(out + r0 * 4), _mm256_cvtpd_ps(v));
    for (int i = 0; i < 4; i++)
      redo[r0 + (size_t)i] = (unsigned char)bad[i];
  }
  for (; r0 < nrows; r0++)
    redo[r0] = 1;
}

void rd__opk_prod_rows_f32(void *out, unsigned char *redo,
                           const unsigned char *x, size_t n, size_t nrows)
{
  if (rd__opk_avx512())
    prod_rows_avx512(out, redo, x, n, nrows);
  else
    prod_rows_avx2(out, redo, x, n, nrows);
}

/* ------------------------------------------------------------------ */
/* float32 LogSumExp of short rows                                     */
/* ------------------------------------------------------------------ */

/* Rows of n <= 16 elements, one lane sum per element.  In the AVX2 form
 * (lse_rows_avx2) a vector lane is a row; the AVX-512 form
 * (lse_rows_avx512) holds a row per vector instead, which needs no
 * transpose and looks for moves of the shift a row at a time.  Both give
 * the same lane sums.  Element j does what lsel_elem() does: if x > m +
 * RD__LSE_K (a move of the shift), every lane sum is multiplied by
 * expk(m - x), m becomes x and lane j adds expk(x - x) = expk(+0) = E0;
 * else lane j adds expk(x - m).  Lane j is +0 before element j, and +0
 * times a factor in [0, 1] is +0, so only lanes below j are rescaled and
 * lane j becomes E0 or expk(x - m); one expk per element serves both
 * cases (the argument m - x where x moves the shift, else x - m).  Lanes
 * at or beyond n stay +0, which the tree adds exactly.  The first element
 * starts every row: m = x, lane 0 = E0 (lsel_elem from m = -inf scales +0
 * lanes by 0).
 *
 * The output m + log1p(y), y = sum - 1 (lse_out, with lo = +0 as
 * lse_fold_e leaves it from the empty state), uses a vector log1p L with
 * a relative error below 2^-44 (1 + y = uh + ul exactly, uh = 2^k f with f
 * in [sqrt(1/2), sqrt(2)), log f = 2 atanh(s), s = (f - 1)/(f + 1), by its
 * series to s^15, |s| < 0.1716, whose remainder is below 2^-44; the
 * roundings add a few 2^-53; the AVX-512 form takes its series by fmas
 * and leaves out ul, lse_log1p8).
 * m + (L -+ d) with d = |L| 2^-40, far beyond
 * that error and libm's (a few ulp), bound m + log1p(y) in double, and
 * both rounding is monotonic: when the two ends give the same float32, so
 * does libm's result, and it is written; else the row is redone by the
 * accumulator path, with libm. */
#define LSE_D 0x1p-40
/* lse_row_fast's clamp of t (its expk, above 2^144, well above
 * LSE_YMAX) and the sum above which lse_rows_avx512 takes a row again */
#define LSE_TCLAMP 100.0
#define LSE_YMAX 0x1p90

static const double lse_c[8] = {
  2.0,       2.0 / 3.0,  2.0 / 5.0,  2.0 / 7.0,
  2.0 / 9.0, 2.0 / 11.0, 2.0 / 13.0, 2.0 / 15.0,
};

#define LSE_SQRT2 0x1.6a09e667f3bcdp+0
#define LSE_LN2 0x1.62e42fefa39efp-1

/* The AVX-512 form leaves out ul / uh: its y is a sum less 1 and the sum
 * at least 1, so while the sum is below 2^53 y is exact and 1 + y is the
 * sum (ul = 0); beyond, |ul / uh| <= 2^-53 against L > 36. */
TGT5 ALWAYS_INLINE __m512d lse_log1p8(__m512d y)
{
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512i mmask = _mm512_set1_epi64(((int64_t)1 << 52) - 1);
  __m512d uh = _mm512_add_pd(one, y);
  __m512i b = _mm512_castpd_si512(uh);
  __m512i k = _mm512_sub_epi64(_mm512_srli_epi64(b, 52),
                               _mm512_set1_epi64(1023));
  __m512d f = _mm512_castsi512_pd(
    _mm512_or_si512(_mm512_and_si512(b, mmask),
                    _mm512_set1_epi64((int64_t)1023 << 52)));
  __mmask8 big = _mm512_cmp_pd_mask(f, _mm512_set1_pd(LSE_SQRT2), _CMP_GT_OQ);
  __m512d s, z, p;
  f = _mm512_mask_mul_pd(f, big, f, _mm512_set1_pd(0.5));
  k = _mm512_mask_add_epi64(k, big, k, _mm512_set1_epi64(1));
  s = _mm512_div_pd(_mm512_sub_pd(f, one), _mm512_add_pd(f, one));
  z = _mm512_mul_pd(s, s);
  p = _mm512_set1_pd(lse_c[7]);
#pragma GCC unroll 8
  for (int i = 6; i >= 0; i--)
    p = _mm512_fmadd_pd(p, z, _mm512_set1_pd(lse_c[i]));
  return _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi64_pd(k),
                                     _mm512_set1_pd(LSE_LN2)),
                       _mm512_mul_pd(s, p));
}

/* A row whose shift moves (some element above m + RD__LSE_K, m the shift
 * so far): lane j's term is expk(x_j - m_j), m_j the shift in force after
 * element j (so a lane that moves it adds expk(+0) = E0), and each move at
 * lane p, in order, multiplies the lanes below p by expk(m - x_p), the old
 * shift less the new: lsel_elem()'s steps, whose rescale of a lane not yet
 * reached multiplies +0.  `mv` is the lanes above x_0 + RD__LSE_K; returns
 * the final shift, the two halves' terms in *lo, *hi. */
TGT5 static double lse_row_moves(const struct rd__expk_tab *tb, __m512d *lo,
                                 __m512d *hi, unsigned mv)
{
  const __m512d kk = _mm512_set1_pd(RD__LSE_K);
  double xs[L], f[L], m;
  unsigned at[L], nm = 0;
  __m512d ml, mh;
  _mm512_storeu_pd(xs, *lo);
  _mm512_storeu_pd(xs + 8, *hi);
  m = xs[0];
  ml = mh = _mm512_set1_pd(m);
  while (mv) {
    unsigned p = (unsigned)__builtin_ctz(mv), from = 0xffffu << p;
    __m512d nb = _mm512_set1_pd(xs[p]), th;
    f[nm] = expk(m - xs[p]);
    at[nm++] = p;
    m = xs[p];
    ml = _mm512_mask_mov_pd(ml, (__mmask8)from, nb);
    mh = _mm512_mask_mov_pd(mh, (__mmask8)(from >> 8), nb);
    th = _mm512_add_pd(nb, kk);
    mv = ((unsigned)_mm512_cmp_pd_mask(*lo, th, _CMP_GT_OQ) |
          (unsigned)_mm512_cmp_pd_mask(*hi, th, _CMP_GT_OQ) << 8) &
         (0xfffeu << p);
  }
  *lo = rd__expk8(tb, _mm512_sub_pd(*lo, ml));
  *hi = rd__expk8(tb, _mm512_sub_pd(*hi, mh));
  for (unsigned q = 0; q < nm; q++) { /* lanes below the move, in order */
    unsigned below = (1u << at[q]) - 1;
    __m512d fb = _mm512_set1_pd(f[q]);
    *lo = _mm512_mask_mul_pd(*lo, (__mmask8)below, *lo, fb);
    *hi = _mm512_mask_mul_pd(*hi, (__mmask8)(below >> 8), *hi, fb);
  }
  return m;
}

/* One row exactly as lsel_elem() would take it (lse_rows_avx512 leaves
 * it the rows its fast step cannot vouch for): its up to 16 elements,
 * padded with -inf (a -inf element is not above m and adds expk(-inf) =
 * +0 to a +0 lane, which changes nothing: lsel_elem skips it), as two
 * halves of eight doubles.  The first element is the shift (lsel_elem
 * from m = -inf scales +0 lanes by 0) and lane j adds expk(x_j - x_0),
 * lane 0 E0; a row with an element above x_0 + RD__LSE_K takes
 * lse_row_moves().  Returns the lane sums of halves k, k + 8 (the tree's
 * first level), the shift in every lane of *m0 and, in *bad, whether the
 * row holds a NaN or an infinity (the accumulator path redoes it). */
TGT5 __attribute__((noinline, cold)) static __m512d
lse_row_exact(const struct rd__expk_tab *tb, const unsigned char *p,
              __mmask16 lm, __m512d *m0, int *bad)
{
  const __m512d kk = _mm512_set1_pd(RD__LSE_K);
  __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), lm, p);
  __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(v)),
          b = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)),
          m = _mm512_broadcastsd_pd(_mm512_castpd512_pd128(a)),
          th = _mm512_add_pd(m, kk);
  unsigned mv = (unsigned)_mm512_cmp_pd_mask(a, th, _CMP_GT_OQ) |
                (unsigned)_mm512_cmp_pd_mask(b, th, _CMP_GT_OQ) << 8;
  *bad = _mm512_mask_fpclass_ps_mask(lm, v, 0x99) != 0; /* NaN, +-inf */
  if (mv) {
    m = _mm512_set1_pd(lse_row_moves(tb, &a, &b, mv));
  } else {
    a = rd__expk8(tb, _mm512_sub_pd(a, m));
    b = rd__expk8(tb, _mm512_sub_pd(b, m));
  }
  *m0 = m;
  return _mm512_add_pd(a, b);
}

/* The fast step of lse_rows_avx512 on one row at p: lane j's argument t =
 * x_j - x_0 clamped to [EXPK_MIN, LSE_TCLAMP], expk8 of both halves with
 * the lanes at or beyond n cleared, and their sum (the tree's first
 * level); the shift x_0 in every lane of *m0.  For a row with x_0
 * finite and without NaN, +inf or a move, the bits of the sum lsel_elem()
 * gives: no t is above LSE_KP, and a t below EXPK_MIN (a -inf element
 * among them), whose expk() is +0, becomes expk(EXPK_MIN) < 2^-1020,
 * which cannot change the row's sum (at lse_rows_avx512).  Any other row
 * shows in the sum: NaN (a NaN element, or x_0 infinite, which makes lane
 * 0's t NaN) or above LSE_YMAX (a move, a +inf, or an element more than
 * LSE_TCLAMP above x_0). */
TGT5 ALWAYS_INLINE __m512d lse_row_fast(const struct rd__expk_tab *tb,
                                        const float *p, __mmask8 ml,
                                        __mmask8 mh, __m512d *m0)
{
  const __m512d shift = _mm512_set1_pd(EXPK_SHIFT);
  const __m512d tlo = _mm512_set1_pd(EXPK_MIN);
  const __m512d thi = _mm512_set1_pd(LSE_TCLAMP);
  __m512d a = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(ml, p));
  __m512d b = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mh, p + 8));
  __m512d m = _mm512_broadcastsd_pd(_mm512_castpd512_pd128(a)), za, zb;
  /* max(), min() return their second operand if either is NaN: a NaN t
   * stays NaN */
  a = _mm512_min_pd(thi, _mm512_max_pd(tlo, _mm512_sub_pd(a, m)));
  b = _mm512_min_pd(thi, _mm512_max_pd(tlo, _mm512_sub_pd(b, m)));
  za = _mm512_fmadd_pd(a, _mm512_set1_pd(EXPK_INV), shift);
  zb = _mm512_fmadd_pd(b, _mm512_set1_pd(EXPK_INV), shift);
  *m0 = m;
  return _mm512_add_pd(
    rd__expk8_tail(tb, za,
                   _mm512_fnmadd_pd(_mm512_sub_pd(za, shift),
                                    _mm512_set1_pd(EXPK_LN2), a),
                   ml),
    rd__expk8_tail(tb, zb,
                   _mm512_fnmadd_pd(_mm512_sub_pd(zb, shift),
                                    _mm512_set1_pd(EXPK_LN2), b),
                   mh));
}

/* Eight rows' outputs from y = sum - 1 and the shifts m (lse_out's m +
 * log1p(y) within the bound at LSE_D), bad the rows to redo. */
TGT5 ALWAYS_INLINE void lse_out8(unsigned char *out, unsigned char *redo,
                                 __m512d y, __m512d m, __mmask8 bad)
{
  __m512d lg = lse_log1p8(y), d, lo, hi;
  __m256 flo, fhi;
  d = _mm512_mul_pd(_mm512_abs_pd(lg), _mm512_set1_pd(LSE_D));
  lo = _mm512_add_pd(m, _mm512_sub_pd(lg, d));
  hi = _mm512_add_pd(m, _mm512_add_pd(lg, d));
  flo = _mm512_cvtpd_ps(lo);
  fhi = _mm512_cvtpd_ps(hi);
  bad |= (__mmask8)~_mm256_cmpeq_epi32_mask(_mm256_castps_si256(flo),
                                            _mm256_castps_si256(fhi));
  _mm256_storeu_ps((float *)(void *)out, flo);
  _mm_storel_epi64((__m128i *)(void *)redo,
                   _mm256_cvtepi32_epi8(
                     _mm256_maskz_mov_epi32(bad, _mm256_set1_epi32(1))));
}

/* A row per vector, eight rows at a time, each row by lse_row_fast();
 * their sums then share one vector for the tree's last levels and the
 * log.  A row whose sum y + 1 is NaN or above LSE_YMAX is taken again by
 * lse_row_exact() and the tree redone: a sum at most 2^90 has no term
 * above 2^90 (all are positive), so no t above 62.4, and the clamp at
 * LSE_TCLAMP, whose term is above 2^144, cannot hide one above it.
 *
 * Why a clamped t cannot change the sum: the tree (fixed, lanes k, k + w)
 * keeps lane 0's path at least 1 (its E0); a term changed by less than
 * 2^-1020 can change a node only if the node's other operand is below
 * 2^-967 (else both values round to that operand), and each level can
 * carry a change up only below 2^55 times the last bound, so after the
 * four levels it is below 2^-747, where lane 0's path, at least 1,
 * rounds it away.
 *
 * The output of a group is computed in the middle of the next group's
 * rows (at row 4), so that its log's dependent chain overlaps their
 * exps, and the last group's after the loop. */
TGT5 ALWAYS_INLINE void lse_rows_avx512_n(unsigned char *out,
                                          unsigned char *redo,
                                          const unsigned char *x, size_t n,
                                          size_t nrows)
{
  const __mmask16 lm = (__mmask16)((1u << n) - 1);
  const __mmask8 ml = (__mmask8)lm, mh = (__mmask8)(lm >> 8);
  const __m512d one = _mm512_set1_pd(1.0);
  struct rd__expk_tab tb;
  __m512d yp = _mm512_setzero_pd(), mp = _mm512_setzero_pd();
  __mmask8 badp = 0;
  size_t r0 = 0;
  rd__expk_tab_load(&tb);
  for (; r0 + 8 <= nrows; r0 += 8) {
    const float *p0 = (const float *)(const void *)(x + r0 * n * 4);
    __m512d c[8], m = _mm512_setzero_pd(), y;
    __mmask8 bad = 0, again;
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
      __m512d m0;
      if (i == 4 && r0 > 0)
        lse_out8(out + (r0 - 8) * 4, redo + r0 - 8, yp, mp, badp);
      c[i] = lse_row_fast(&tb, p0 + (size_t)i * n, ml, mh, &m0);
      m = _mm512_mask_mov_pd(m, (__mmask8)(1u << i), m0);
    }
    /* + 0 turns a -0 (no element but the first) into +0, as lse_out */
    y = _mm512_add_pd(_mm512_sub_pd(lse_tree8(c), one), _mm512_setzero_pd());
    again = _mm512_cmp_pd_mask(y, _mm512_set1_pd(LSE_YMAX), _CMP_NLE_UQ);
    if (__builtin_expect(again != 0, 0)) {
#pragma GCC unroll 8
      for (int i = 0; i < 8; i++)
        if (again >> i & 1) {
          __m512d m0;
          int bd;
          c[i] = lse_row_exact(&tb, (const unsigned char *)(p0 + (size_t)i * n),
                               lm, &m0, &bd);
          bad |= (__mmask8)(bd << i);
          m = _mm512_mask_mov_pd(m, (__mmask8)(1u << i), m0);
        }
      y = _mm512_add_pd(_mm512_sub_pd(lse_tree8(c), one), _mm512_setzero_pd());
    }
    yp = y;
    mp = m;
    badp = bad;
  }
  if (r0 > 0)
    lse_out8(out + (r0 - 8) * 4, redo + r0 - 8, yp, mp, badp);
  for (; r0 < nrows; r0++)
    redo[r0] = 1;
}

/* Rows of 16 (the common width) get their own copy, with constant lane
 * masks: 0.96x the time of the general form on case F. */
TGT5 static void lse_rows_avx512(unsigned char *out, unsigned char *redo,
                                 const unsigned char *x, size_t n, size_t nrows)
{
  if (n == 16)
    lse_rows_avx512_n(out, redo, x, 16, nrows);
  else
    lse_rows_avx512_n(out, redo, x, n, nrows);
}

TGT2 ALWAYS_INLINE __m256d lse_log1p4(__m256d y)
{
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256i mmask = _mm256_set1_epi64x(((int64_t)1 << 52) - 1);
  __m256d uh = _mm256_add_pd(one, y), bb = _mm256_sub_pd(uh, one);
  __m256d ul = _mm256_add_pd(_mm256_sub_pd(one, _mm256_sub_pd(uh, bb)),
                             _mm256_sub_pd(y, bb));
  __m256i b = _mm256_castpd_si256(uh);
  /* k + 1023, the biased exponent (uh > 0), as a double by the 2^52 trick;
   * both subtractions are exact */
  __m256d kd =
    _mm256_sub_pd(_mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(
                                  _mm256_srli_epi64(b, 52),
                                  _mm256_castpd_si256(_mm256_set1_pd(0x1p52)))),
                                _mm256_set1_pd(0x1p52)),
                  _mm256_set1_pd(1023.0));
  __m256d f = _mm256_castsi256_pd(
    _mm256_or_si256(_mm256_and_si256(b, mmask),
                    _mm256_set1_epi64x((int64_t)1023 << 52)));
  __m256d big = _mm256_cmp_pd(f, _mm256_set1_pd(LSE_SQRT2), _CMP_GT_OQ);
  __m256d s, z, p;
  f = _mm256_blendv_pd(f, _mm256_mul_pd(f, _mm256_set1_pd(0.5)), big);
  kd = _mm256_add_pd(kd, _mm256_and_pd(big, one));
  s = _mm256_div_pd(_mm256_sub_pd(f, one), _mm256_add_pd(f, one));
  z = _mm256_mul_pd(s, s);
  p = _mm256_set1_pd(lse_c[7]);
  for (int i = 6; i >= 0; i--)
    p = _mm256_add_pd(_mm256_mul_pd(p, z), _mm256_set1_pd(lse_c[i]));
  return _mm256_add_pd(_mm256_mul_pd(kd, _mm256_set1_pd(LSE_LN2)),
                       _mm256_add_pd(_mm256_mul_pd(s, p),
                                     _mm256_div_pd(ul, uh)));
}

/* The 4 x 4 transpose: c[j] = (r[0][j], ..., r[3][j]). */
TGT2 ALWAYS_INLINE void lse_tr4(__m256d r0, __m256d r1, __m256d r2, __m256d r3,
                                __m256d *c)
{
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  c[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  c[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  c[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  c[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

TGT2 static void lse_rows_avx2(unsigned char *out, unsigned char *redo,
                               const unsigned char *x, size_t n, size_t nrows)
{
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mk0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
  const __m256i mk1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - 8), lane);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  const __m256i emask = _mm256_set1_epi32(0x7f800000);
  const __m256d e0 = _mm256_set1_pd(expk(0.0));
  size_t r0 = 0;
  for (; r0 + 4 <= nrows; r0 += 4) {
    __m256d c[L], s[L], m, y, lg, d, lo, hi;
    __m128 flo, fhi;
    __m128i ne;
    int bad = 0;
    {
      __m256d q[4][4];
      for (int i = 0; i < 4; i++) {
        const unsigned char *p = x + (r0 + (size_t)i) * n * 4;
        const float *pf = (const float *)(const void *)p;
        __m256 v0 = _mm256_maskload_ps(pf, mk0),
               v1 = _mm256_maskload_ps(pf + 8, mk1);
        /* NaN, +-inf among the elements (masked-off lanes load +0) */
        __m256i nf = _mm256_or_si256(
          _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v0), emask),
                             emask),
          _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v1), emask),
                             emask));
        OPK_PF(p);
        bad |= (!_mm256_testz_si256(nf, nf)) << i;
        v0 = _mm256_blendv_ps(ninf, v0, _mm256_castsi256_ps(mk0));
        v1 = _mm256_blendv_ps(ninf, v1, _mm256_castsi256_ps(mk1));
        q[0][i] = _mm256_cvtps_pd(_mm256_castps256_ps128(v0));
        q[1][i] = _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1));
        q[2][i] = _mm256_cvtps_pd(_mm256_castps256_ps128(v1));
        q[3][i] = _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1));
      }
      for (int g = 0; g < 4; g++)
        lse_tr4(q[g][0], q[g][1], q[g][2], q[g][3], c + 4 * g);
    }
    m = c[0];
    s[0] = e0;
#pragma GCC unroll 16
    for (int j = 1; j < L; j++) {
      __m256d up = _mm256_cmp_pd(c[j],
                                 _mm256_add_pd(m, _mm256_set1_pd(RD__LSE_K)),
                                 _CMP_GT_OQ);
      __m256d ef = rd__expk4(
        _mm256_blendv_pd(_mm256_sub_pd(c[j], m), _mm256_sub_pd(m, c[j]), up));
      if (_mm256_movemask_pd(up)) /* rows whose shift moves */
#pragma GCC unroll 16
        for (int l = 0; l < j; l++)
          s[l] = _mm256_blendv_pd(s[l], _mm256_mul_pd(s[l], ef), up);
      s[j] = _mm256_blendv_pd(ef, e0, up);
      m = _mm256_blendv_pd(m, c[j], up);
    }
#pragma GCC unroll 8
    for (int w = L / 2; w >= 1; w /= 2)
#pragma GCC unroll 8
      for (int k = 0; k < w; k++)
        s[k] = _mm256_add_pd(s[k], s[k + w]);
    y = _mm256_add_pd(_mm256_sub_pd(s[0], _mm256_set1_pd(1.0)),
                      _mm256_setzero_pd());
    lg = lse_log1p4(y);
    d = _mm256_mul_pd(_mm256_and_pd(lg, _mm256_castsi256_pd(
                                          _mm256_set1_epi64x(INT64_MAX))),
                      _mm256_set1_pd(LSE_D));
    lo = _mm256_add_pd(m, _mm256_sub_pd(lg, d));
    hi = _mm256_add_pd(m, _mm256_add_pd(lg, d));
    flo = _mm256_cvtpd_ps(lo);
    fhi = _mm256_cvtpd_ps(hi);
    ne = _mm_xor_si128(_mm_cmpeq_epi32(_mm_castps_si128(flo),
                                       _mm_castps_si128(fhi)),
                       _mm_set1_epi32(-1));
    bad |= _mm_movemask_ps(_mm_castsi128_ps(ne));
    _mm_storeu_ps((float *)(void *)(out + r0 * 4), flo);
    for (int i = 0; i < 4; i++)
      redo[r0 + (size_t)i] = (unsigned char)((bad >> i) & 1);
  }
  for (; r0 < nrows; r0++)
    redo[r0] = 1;
}

void rd__opk_lse_rows_f32(void *out, unsigned char *redo,
                          const unsigned char *x, size_t n, size_t nrows)
{
  if (rd__opk_avx512())
    lse_rows_avx512(out, redo, x, n, nrows);
  else
    lse_rows_avx2(out, redo, x, n, nrows);
}

/* ------------------------------------------------------------------ */
/* float32 Prod columns, four rows at a time                           */
/* ------------------------------------------------------------------ */

/* Four rows of columns in registers: ops.c's prod_add of an ordinary x,
 * row by row, renormalised once after the four (pc4_norm()) instead of
 * after each element (prod_norm()).  The same bits: the double-double
 * multiply is exact scaling by powers of two away from overflow and
 * underflow, so multiplying by |x| rather than its mantissa, and h kept
 * where it falls rather than in [0.5, 1), scale every rounded value by the
 * same power of two.  Four factors of |x| in [2^-149, 2^128] keep h, and
 * lo (0 or at least 2^-110 h), far inside the normal range. */
TGT2 ALWAYS_INLINE void pc4_mul(__m256d *h, __m256d *l, __m128i u)
{
  __m256d ax = _mm256_cvtps_pd(
    _mm_castsi128_ps(_mm_and_si128(u, _mm_set1_epi32(0x7fffffff))));
  __m256d p = _mm256_mul_pd(*h, ax), er, t;
  er = _mm256_fmsub_pd(*h, ax, p);
  er = _mm256_add_pd(er, _mm256_mul_pd(*l, ax));
  t = _mm256_add_pd(p, er);
  *l = _mm256_sub_pd(er, _mm256_sub_pd(t, p));
  *h = t;
}

/* prod_norm() on 4 lanes of positive h: h to [0.5, 1) by its exponent
 * field, lo scaled by the same power of two, the power added to E. */
TGT2 ALWAYS_INLINE void pc4_norm(__m256d *h, __m256d *l, __m256i *E)
{
  const __m256i emask = _mm256_set1_epi64x((int64_t)0x7ff << 52);
  __m256i hb = _mm256_castpd_si256(*h);
  __m256i ex = _mm256_sub_epi64(_mm256_srli_epi64(hb, 52),
                                _mm256_set1_epi64x(1022));
  *h = _mm256_castsi256_pd(
    _mm256_or_si256(_mm256_andnot_si256(emask, hb),
                    _mm256_set1_epi64x((int64_t)1022 << 52)));
  *l = _mm256_mul_pd(*l,
                     _mm256_castsi256_pd(_mm256_slli_epi64(
                       _mm256_sub_epi64(_mm256_set1_epi64x(1023), ex), 52)));
  *E = _mm256_add_epi64(*E, ex);
}

/* A zero, inf or NaN among the 4 lanes of u. */
TGT2 ALWAYS_INLINE __m128i pc4_bad(__m128i u)
{
  __m128i a = _mm_sub_epi32(_mm_and_si128(u, _mm_set1_epi32(0x7fffffff)),
                            _mm_set1_epi32(1));
  return _mm_or_si128(_mm_cmpgt_epi32(a, _mm_set1_epi32(0x7f7ffffe)),
                      _mm_srai_epi32(a, 31));
}

TGT2 static size_t prod_cols4_avx2(double *hi, double *lo, int64_t *e,
                                   int64_t *neg, const unsigned char *x,
                                   size_t stride, size_t nvec)
{
  size_t g = 0;
  for (; g < nvec; g++) {
    const unsigned char *p = x + g * 16;
    __m128i u[4], bad;
    __m256d h, l;
    __m256i E, N;
    for (int k = 0; k < 4; k++)
      u[k] = _mm_loadu_si128(
        (const __m128i *)(const void *)(p + (size_t)k * stride));
    bad = _mm_or_si128(_mm_or_si128(pc4_bad(u[0]), pc4_bad(u[1])),
                       _mm_or_si128(pc4_bad(u[2]), pc4_bad(u[3])));
    if (!_mm_testz_si128(bad, bad))
      break;
    if (g % 4 == 0) /* as prod_cols4_avx512 */
      for (int k = 4; k < 8; k++)
        _mm_prefetch((const char *)(p + (size_t)k * stride), _MM_HINT_T0);
    h = _mm256_loadu_pd(hi + 4 * g);
    l = _mm256_loadu_pd(lo + 4 * g);
    E = _mm256_loadu_si256((const __m256i *)(const void *)(e + 4 * g));
    N = _mm256_loadu_si256((const __m256i *)(const void *)(neg + 4 * g));
    for (int k = 0; k < 4; k++) {
      pc4_mul(&h, &l, u[k]);
      N = _mm256_xor_si256(N, _mm256_cvtepu32_epi64(_mm_srli_epi32(u[k], 31)));
    }
    pc4_norm(&h, &l, &E);
    _mm256_storeu_pd(hi + 4 * g, h);
    _mm256_storeu_pd(lo + 4 * g, l);
    _mm256_storeu_si256((__m256i *)(void *)(e + 4 * g), E);
    _mm256_storeu_si256((__m256i *)(void *)(neg + 4 * g), N);
  }
  return g;
}

/* pc4_mul() and pc4_norm() on 8 columns. */
TGT5 ALWAYS_INLINE void pc8_mul(__m512d *h, __m512d *l, __m256i u)
{
  __m512d ax = _mm512_cvtps_pd(
    _mm256_castsi256_ps(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff))));
  __m512d p = _mm512_mul_pd(*h, ax), er, t;
  er = _mm512_fmsub_pd(*h, ax, p);
  er = _mm512_add_pd(er, _mm512_mul_pd(*l, ax));
  t = _mm512_add_pd(p, er);
  *l = _mm512_sub_pd(er, _mm512_sub_pd(t, p));
  *h = t;
}

TGT5 ALWAYS_INLINE void pc8_norm(__m512d *h, __m512d *l, __m512i *E)
{
  const __m512i emask = _mm512_set1_epi64((int64_t)0x7ff << 52);
  __m512i hb = _mm512_castpd_si512(*h);
  __m512i ex = _mm512_sub_epi64(_mm512_srli_epi64(hb, 52),
                                _mm512_set1_epi64(1022));
  *h = _mm512_castsi512_pd(
    _mm512_or_si512(_mm512_andnot_si512(emask, hb),
                    _mm512_set1_epi64((int64_t)1022 << 52)));
  *l = _mm512_mul_pd(*l, _mm512_castsi512_pd(_mm512_slli_epi64(
                           _mm512_sub_epi64(_mm512_set1_epi64(1023), ex), 52)));
  *E = _mm512_add_epi64(*E, ex);
}

/* Eight columns' state (hi, lo, e, neg) at column c of the arrays. */
struct pc8 {
  __m512d h, l;
  __m512i E, N;
};

TGT5 ALWAYS_INLINE void pc8_load(struct pc8 *s, const double *hi,
                                 const double *lo, const int64_t *e,
                                 const int64_t *neg)
{
  s->h = _mm512_loadu_pd(hi);
  s->l = _mm512_loadu_pd(lo);
  s->E = _mm512_loadu_si512(e);
  s->N = _mm512_loadu_si512(neg);
}

TGT5 ALWAYS_INLINE void pc8_store(const struct pc8 *s, double *hi, double *lo,
                                  int64_t *e, int64_t *neg)
{
  _mm512_storeu_pd(hi, s->h);
  _mm512_storeu_pd(lo, s->l);
  _mm512_storeu_si512(e, s->E);
  _mm512_storeu_si512(neg, s->N);
}

/* Four rows u[0..3] of eight columns into s: the products, one
 * renormalisation, and the sign parity of the four rows at once. */
TGT5 ALWAYS_INLINE void pc8_rows4(struct pc8 *s, const __m256i *u)
{
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    pc8_mul(&s->h, &s->l, u[k]);
  pc8_norm(&s->h, &s->l, &s->E);
  s->N = _mm512_xor_si512(
    s->N, _mm512_cvtepu32_epi64(
            _mm256_srli_epi32(_mm256_xor_si256(_mm256_xor_si256(u[0], u[1]),
                                               _mm256_xor_si256(u[2], u[3])),
                              31)));
}

/* Four rows of eight columns at p (row stride `stride`) into u; returns
 * a nonzero mask if any is pc4_bad()'s zero, inf or NaN (QNaN, +-0, +-inf,
 * SNaN). */
TGT5 ALWAYS_INLINE __mmask8 pc8_ld4(__m256i *u, const unsigned char *p,
                                    size_t stride)
{
  __mmask8 bad = 0;
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++) {
    u[k] = _mm256_loadu_si256(
      (const __m256i *)(const void *)(p + (size_t)k * stride));
    bad |= _mm256_fpclass_ps_mask(_mm256_castsi256_ps(u[k]), 0x9f);
  }
  return bad;
}

TGT5 static size_t prod_cols4_avx512(double *hi, double *lo, int64_t *e,
                                     int64_t *neg, const unsigned char *x,
                                     size_t stride, size_t nvec)
{
  size_t g = 0;
  /* 16 columns per step: two independent chains of products in flight
   * (each row's product waits on the one before it in its column) */
  for (; g + 4 <= nvec; g += 4) {
    const unsigned char *p = x + g * 16;
    __m256i u[4], w[4];
    struct pc8 s0, s1;
    if ((pc8_ld4(u, p, stride) | pc8_ld4(w, p + 32, stride)) != 0)
      break;
    for (int k = 4; k < 8; k++)
      _mm_prefetch((const char *)(p + (size_t)k * stride), _MM_HINT_T0);
    pc8_load(&s0, hi + 4 * g, lo + 4 * g, e + 4 * g, neg + 4 * g);
    pc8_load(&s1, hi + 4 * g + 8, lo + 4 * g + 8, e + 4 * g + 8,
             neg + 4 * g + 8);
    pc8_rows4(&s0, u);
    pc8_rows4(&s1, w);
    pc8_store(&s0, hi + 4 * g, lo + 4 * g, e + 4 * g, neg + 4 * g);
    pc8_store(&s1, hi + 4 * g + 8, lo + 4 * g + 8, e + 4 * g + 8,
              neg + 4 * g + 8);
  }
  for (; g + 2 <= nvec; g += 2) {
    const unsigned char *p = x + g * 16;
    __m256i u[4];
    struct pc8 s0;
    if (pc8_ld4(u, p, stride) != 0)
      break;
    /* the next four rows at these columns: the caller's tiles read short
     * pieces of rows far apart, which the hardware prefetchers do not
     * follow (once per 64-byte line) */
    if (g % 4 == 0)
      for (int k = 4; k < 8; k++)
        _mm_prefetch((const char *)(p + (size_t)k * stride), _MM_HINT_T0);
    pc8_load(&s0, hi + 4 * g, lo + 4 * g, e + 4 * g, neg + 4 * g);
    pc8_rows4(&s0, u);
    pc8_store(&s0, hi + 4 * g, lo + 4 * g, e + 4 * g, neg + 4 * g);
  }
  /* the last group, or the pair holding a special value: 4 at a time */
  return g + prod_cols4_avx2(hi + 4 * g, lo + 4 * g, e + 4 * g, neg + 4 * g,
                             x + 16 * g, stride, nvec - g);
}

size_t rd__opk_prod_cols4_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                              const unsigned char *x, size_t stride,
                              size_t nvec)
{
  if (rd__opk_avx512())
    return prod_cols4_avx512(hi, lo, e, neg, x, stride, nvec);
  return prod_cols4_avx2(hi, lo, e, neg, x, stride, nvec);
}

/* ------------------------------------------------------------------ */
/* float32 Prod lanes (ops.c's prodl_run)                             */
/* ------------------------------------------------------------------ */

/* The Prod lane state of 16 float32 lanes: the mantissas m0, m1 in
 * [0.5, 1), the sums d0, d1 of the exponents their renormalisations took
 * out (getexp, exact in double), the renormalisations' count nr (each
 * takes out getexp + 1) and the sign bits' parity in ng's bit 0. */
struct pl16 {
  __m512d m0, m1, d0, d1;
  unsigned ng;
  int64_t nr;
};

/* x's 16 float32 (bits u) less their signs, widened, into the products
 * *p0 (lanes 0-7) and *p1 (8-15). */
TGT5 ALWAYS_INLINE void pl16_mul(__m512d *p0, __m512d *p1, __m512i u)
{
  __m512 f = _mm512_castsi512_ps(
    _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)));
  *p0 = _mm512_mul_pd(*p0, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
  *p1 = _mm512_mul_pd(*p1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(f, 1)));
}

/* The products p0, p1 back into st: m = p's mantissa in [0.5, 1) by bits,
 * d += p's exponent (getexp: the bits' field - 1023, exact in double). */
TGT5 ALWAYS_INLINE void pl16_norm(struct pl16 *st, __m512d p0, __m512d p1)
{
  const __m512i emask = _mm512_set1_epi64((int64_t)0x7ff << 52);
  const __m512i ebias = _mm512_set1_epi64((int64_t)1022 << 52);
  /* (bits & ~emask) | ebias */
  st->m0 = _mm512_castsi512_pd(
    _mm512_ternarylogic_epi64(_mm512_castpd_si512(p0), emask, ebias, 0xba));
  st->m1 = _mm512_castsi512_pd(
    _mm512_ternarylogic_epi64(_mm512_castpd_si512(p1), emask, ebias, 0xba));
  st->d0 = _mm512_add_pd(st->d0, _mm512_getexp_pd(p0));
  st->d1 = _mm512_add_pd(st->d1, _mm512_getexp_pd(p1));
  st->nr++;
}

/* One block of 16 elements at x into st; 0 (st untouched) for a block
 * that is not ordinary: a NaN, a zero or an infinity. */
TGT5 ALWAYS_INLINE int pl16_block(struct pl16 *st, const unsigned char *x)
{
  __m512i u = _mm512_loadu_si512((const void *)x);
  __m512d p0 = st->m0, p1 = st->m1;
  /* not ordinary: QNaN, +-0, +-inf, SNaN */
  if (_mm512_fpclass_ps_mask(_mm512_castsi512_ps(u), 0x9f))
    return 0;
  OPK_PF(x);
  st->ng ^= (unsigned)__builtin_popcount((unsigned)_mm512_movepi32_mask(u));
  pl16_mul(&p0, &p1, u);
  pl16_norm(st, p0, p1);
  return 1;
}

/* Four blocks at x into st with one renormalisation, or 0 (st untouched)
 * if one of them is not ordinary.  The same bits as four pl16_block()s:
 * a product rounds the same at any power-of-two scale while it stays a
 * normal double, and four ordinary factors take m in [0.5, 1) to within
 * [2^-597, 2^512).  So the mantissas are the fourth block's, and the one
 * getexp + 1 taken out is the sum of the four blocks' getexp + 1. */
TGT5 ALWAYS_INLINE int pl16_block4(struct pl16 *st, const unsigned char *x)
{
  __m512i u[4];
  __m512d p0 = st->m0, p1 = st->m1;
  __mmask16 odd = 0, sg = 0;
  for (int q = 0; q < 4; q++) {
    u[q] = _mm512_loadu_si512((const void *)(x + 64 * q));
    odd |= _mm512_fpclass_ps_mask(_mm512_castsi512_ps(u[q]), 0x9f);
    sg ^= _mm512_movepi32_mask(u[q]);
  }
  if (odd)
    return 0;
  for (int q = 0; q < 4; q++) {
    OPK_PF(x + 64 * q);
    pl16_mul(&p0, &p1, u[q]);
  }
  st->ng ^= (unsigned)__builtin_popcount((unsigned)sg);
  pl16_norm(st, p0, p1);
  return 1;
}

/* The blocks at x into st: four at a time while they are ordinary, then
 * one at a time up to the first that is not.  Returns the blocks done. */
TGT5 ALWAYS_INLINE size_t pl16_blocks(struct pl16 *st, const unsigned char *x,
                                      size_t nblocks)
{
  size_t b = 0;
  for (; b + 4 <= nblocks && pl16_block4(st, x); b += 4, x += 256)
    ;
  for (; b < nblocks && pl16_block(st, x); b++, x += 64)
    ;
  return b;
}

/* kernels_avx2.c's rd__avx2_prod_f32 on 16 lanes in two registers: per
 * lane p = m * |x| (exact operands: m in [0.5, 1), |x| a float32, so p is
 * a normal double), m = p's mantissa in [0.5, 1) by bits, e += p's
 * exponent + 1 (getexp: the same integer as the bits' field - 1022,
 * summed in double lanes, exact, and added to e at the end). */
TGT5 static size_t prod_run_avx512(double *m, int64_t *e,
                                   const unsigned char *x, size_t nblocks,
                                   uint32_t *neg)
{
  struct pl16 st = { .m0 = _mm512_loadu_pd(m), .m1 = _mm512_loadu_pd(m + 8) };
  size_t b = pl16_blocks(&st, x, nblocks);
  _mm512_storeu_pd(m, st.m0);
  _mm512_storeu_pd(m + 8, st.m1);
  {
    const __m512i nb = _mm512_set1_epi64(st.nr); /* the + 1s */
    _mm512_storeu_si512(
      e, _mm512_add_epi64(_mm512_loadu_si512(e),
                          _mm512_add_epi64(_mm512_cvtpd_epi64(st.d0), nb)));
    _mm512_storeu_si512(
      e + 8, _mm512_add_epi64(_mm512_loadu_si512(e + 8),
                              _mm512_add_epi64(_mm512_cvtpd_epi64(st.d1), nb)));
  }
  *neg ^= st.ng & 1;
  return b;
}

/* Whole rows of nblocks blocks into (hi, lo, e, neg) (kernels_ops.h): the
 * lanes of prod_run_avx512() from prodl_reset()'s 0.5 and 1, and the tree
 * of prod_tree_avx512(), in registers; no lane state goes through memory
 * and nothing is cleared between rows. */
TGT5 static size_t prod_rows_acc_avx512(double *hi, double *lo, int64_t *eo,
                                        uint32_t *neg, const unsigned char *x,
                                        size_t nblocks, size_t nrows)
{
  size_t r = 0;
  for (; r < nrows; r++, x += nblocks * 64) {
    struct pl16 st = { .m0 = _mm512_set1_pd(0.5), .m1 = _mm512_set1_pd(0.5) };
    __m512d l = _mm512_setzero_pd();
    __m512i e0, e1, nb;
    if (pl16_blocks(&st, x, nblocks) != nblocks)
      return r;
    nb = _mm512_set1_epi64(st.nr + 1); /* the + 1s, and e's 1 */
    e0 = _mm512_add_epi64(_mm512_cvtpd_epi64(st.d0), nb);
    e1 = _mm512_add_epi64(_mm512_cvtpd_epi64(st.d1), nb);
    prod_tree8(&st.m0, &l, &e0, st.m1, e1);
    hi[r] = _mm512_cvtsd_f64(st.m0);
    lo[r] = _mm512_cvtsd_f64(l);
    eo[r] = _mm_cvtsi128_si64(_mm512_castsi512_si128(e0));
    neg[r] = st.ng & 1;
  }
  return r;
}

size_t rd__opk_prod_rows_acc_f32(double *hi, double *lo, int64_t *e,
                                 uint32_t *neg, const unsigned char *x,
                                 size_t nblocks, size_t nrows)
{
  if (!rd__opk_avx512())
    return 0;
  return prod_rows_acc_avx512(hi, lo, e, neg, x, nblocks, nrows);
}

size_t rd__opk_prod_run_f32(double *m, int64_t *e, const unsigned char *x,
                            size_t nblocks, uint32_t *neg)
{
  if (rd__opk_avx512())
    return prod_run_avx512(m, e, x, nblocks, neg);
  return rd__avx2_prod_f32(m, e, x, nblocks, neg);
}

/* ------------------------------------------------------------------ */
/* Selection                                                           */
/* ------------------------------------------------------------------ */

/* The AVX-512 forms need F, DQ and VL; RD__IMPL_AVX512 is chosen only on a
 * CPU with those (kernels.c), so following it needs no CPU check here, and
 * REDUCED_KERNELS=avx2|portable reaches these helpers through it. */
int rd__opk_avx512(void)
{
  return force512 >= 0 ? force512 : rd__kernels_active() == RD__IMPL_AVX512;
}

int rd__opk_avx512_select(int on)
{
  int was = rd__opk_avx512();
  force512 = on && rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512) != NULL;
  return was;
}

#else /* no x86-64 SIMD path in this build: ops.c never calls these */

size_t rd__opk_prod_run_f32(double *m, int64_t *e, const unsigned char *x,
                            size_t nblocks, uint32_t *neg)
{
  (void)m;
  (void)e;
  (void)x;
  (void)nblocks;
  (void)neg;
  return 0;
}

size_t rd__opk_prod_rows_acc_f32(double *hi, double *lo, int64_t *e,
                                 uint32_t *neg, const unsigned char *x,
                                 size_t nblocks, size_t nrows)
{
  (void)hi;
  (void)lo;
  (void)e;
  (void)neg;
  (void)x;
  (void)nblocks;
  (void)nrows;
  return 0;
}

size_t rd__opk_lse_run_f32(double *s, double *m, const unsigned char *x,
                           size_t nblocks)
{
  (void)s;
  (void)m;
  (void)x;
  (void)nblocks;
  return 0;
}

size_t rd__opk_lse_f32(double *s, const unsigned char *x, size_t nblocks,
                       double m)
{
  (void)s;
  (void)x;
  (void)nblocks;
  (void)m;
  return 0;
}

void rd__opk_arg32(const unsigned char *x, size_t n, int is_max, int last,
                   int32_t *best, int64_t *bidx, int64_t *nidx)
{
  (void)x;
  (void)n;
  (void)is_max;
  (void)last;
  *best = 0;
  *bidx = -1;
  *nidx = -1;
}

size_t rd__opk_prod_cols_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                             const unsigned char *x, size_t nvec)
{
  (void)hi;
  (void)lo;
  (void)e;
  (void)neg;
  (void)x;
  (void)nvec;
  return 0;
}

size_t rd__opk_lse_cols4_f32(double *m, double *hi, double *lo,
                             const unsigned char *x, size_t rs, size_t nvec)
{
  (void)m;
  (void)hi;
  (void)lo;
  (void)x;
  (void)rs;
  (void)nvec;
  return 0;
}

size_t rd__opk_lse_cols_f32(double *m, double *hi, double *lo,
                            const unsigned char *x, size_t nvec)
{
  (void)m;
  (void)hi;
  (void)lo;
  (void)x;
  (void)nvec;
  return 0;
}

int rd__opk_lse_rec_f32(double *s, double *m, const unsigned char *x)
{
  (void)s;
  (void)m;
  (void)x;
  return 1;
}

int rd__opk_prod_tree(const double *m, const int64_t *e, double *hi, double *lo,
                      int64_t *eo)
{
  (void)m;
  (void)e;
  (void)hi;
  (void)lo;
  (void)eo;
  return -1;
}

void rd__opk_prod_rows_f32(void *out, unsigned char *redo,
                           const unsigned char *x, size_t n, size_t nrows)
{
  (void)out;
  (void)x;
  (void)n;
  memset(redo, 1, nrows);
}

void rd__opk_lse_rows_f32(void *out, unsigned char *redo,
                          const unsigned char *x, size_t n, size_t nrows)
{
  (void)out;
  (void)x;
  (void)n;
  memset(redo, 1, nrows);
}

size_t rd__opk_prod_cols4_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                              const unsigned char *x, size_t stride,
                              size_t nvec)
{
  (void)hi;
  (void)lo;
  (void)e;
  (void)neg;
  (void)x;
  (void)stride;
  (void)nvec;
  return 0;
}

int rd__opk_avx512(void)
{
  return 0;
}

int rd__opk_avx512_select(int on)
{
  (void)on;
  return 0;
}

#endif
