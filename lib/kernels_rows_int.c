/* kernels_rows_int.c - integer ReduceL2 / ReduceSumSquare of short rows in
 * 64 bits (see kernels_rows_int.h).  Runs on the thread that runs the part
 * (reduce.c's rows_out_int()); no state.
 *
 * The portable path is plain C; the AVX2 path takes 4 rows per step and the
 * AVX-512 path 8 rows of 64-bit elements (32-bit ones: the AVX2 form, see
 * there) (function attributes, chosen through the kernel the plan was
 * created with, so REDUCED_KERNELS applies as to every kernel).  Each
 * row's squares are summed in 64-bit lanes, the lanes of 4 (8) rows are
 * folded into one vector of row sums, and ReduceL2 takes the integer square
 * root of each.  The sums are exact, so no order is involved.
 */
#include "kernels_rows_int.h"

#include <math.h>
#include <string.h>

#include "reduce.h"

/* Elements at or above (unsigned) / outside [-BOUND, BOUND) (signed) send
 * their row to the caller: 16 * 2^58 = 2^62 keeps every sum below 2^63. */
#define BOUND ((uint64_t)1 << 29)

struct ty {
  int sgn;      /* int32 / int64 */
  int w64;      /* int64 / uint64 elements and outputs */
  uint64_t max; /* largest output */
};

static struct ty ty_of(int dtype)
{
  struct ty t;
  t.sgn = dtype == RD_INT32 || dtype == RD_INT64;
  t.w64 = dtype == RD_INT64 || dtype == RD_UINT64;
  t.max = t.w64 ? UINT64_MAX : UINT32_MAX;
  if (t.sgn)
    t.max >>= 1;
  return t;
}

/* ------------------------------------------------------------------ */
/* Portable                                                           */
/* ------------------------------------------------------------------ */

/* floor(sqrt(s)) for s < 2^63: the estimate is within one (see the AVX2
 * isqrt4()), the loops make it exact. */
static uint64_t isqrt64(uint64_t s)
{
  uint64_t r = (uint64_t)sqrt((double)s);
  while (r * r > s)
    r--;
  while ((r + 1) * (r + 1) <= s)
    r++;
  return r;
}

/* One row: 1 and its output written, or 0 (left to the caller). */
static int row_out(struct ty t, int l2, unsigned char *dst,
                   const unsigned char *x, size_t n)
{
  uint64_t s = 0, mag = 0, v;
  for (size_t j = 0; j < n; j++) {
    if (t.w64) {
      memcpy(&v, x + j * 8, 8);
    } else {
      uint32_t u;
      memcpy(&u, x + j * 4, 4);
      v = t.sgn ? (uint64_t)(int64_t)(int32_t)u : u;
    }
    mag |= t.sgn ? v ^ (uint64_t)((int64_t)v >> 63) : v;
    s += v * v; /* mod 2^64: the square while the bound holds */
  }
  if (mag >= BOUND)
    return 0;
  if (l2)
    s = isqrt64(s);
  if (s > t.max)
    return 0;
  if (t.w64) {
    memcpy(dst, &s, 8);
  } else {
    uint32_t u = (uint32_t)s;
    memcpy(dst, &u, 4);
  }
  return 1;
}

static uint64_t rows_portable(struct ty t, int l2, unsigned char *out,
                              const unsigned char *x, size_t n, size_t r0,
                              size_t nrows)
{
  size_t esz = t.w64 ? 8 : 4;
  uint64_t left = 0;
  for (size_t r = r0; r < nrows; r++)
    if (!row_out(t, l2, out + r * esz, x + r * n * esz, n))
      left |= (uint64_t)1 << r;
  return left;
}

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT2 __attribute__((target("avx2")))
#define TGT512                                                                 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The prefetch distance of kernels_avx2.c: the loads wait on memory, not
 * on the arithmetic, and the prefetcher alone leaves the read bandwidth
 * short of the probe's. */
#define PF_DIST 2048
#define PF(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T0)
/* Into L2 only, for the AVX-512 64-bit rows: eight rows of up to 128
 * bytes per step, prefetched into L1 they held the fill buffers the
 * demand loads need (case F int64 SumSquare 0.70x the time on 1 thread,
 * 0.78x on 2, alternating medians). */
#define PF2(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T1)

/* ------------------------------------------------------------------ */
/* AVX2: 4 rows per step                                              */
/* ------------------------------------------------------------------ */

/* The squares of a vector's 64-bit lanes' low 32 bits (the element itself
 * while the bound holds: 32-bit elements are squared even and odd lanes
 * apart). */
TGT2 ALWAYS_INLINE __m256i sq2(__m256i v, int sgn)
{
  return sgn ? _mm256_mul_epi32(v, v) : _mm256_mul_epu32(v, v);
}

/* Magnitude bits of signed lanes: v, or ~v for v < 0. */
TGT2 ALWAYS_INLINE __m256i mag2_32(__m256i v, int sgn)
{
  return sgn ? _mm256_xor_si256(v, _mm256_srai_epi32(v, 31)) : v;
}

TGT2 ALWAYS_INLINE __m256i mag2_64(__m256i v, int sgn)
{
  return sgn
           ? _mm256_xor_si256(v, _mm256_cmpgt_epi64(_mm256_setzero_si256(), v))
           : v;
}

/* One row of 32-bit elements: 4 partial sums; *ok: within the bound.
 * full: n is 16 (plain loads). */
TGT2 ALWAYS_INLINE __m256i row2_32(const unsigned char *x, size_t n, __m256i k0,
                                   __m256i k1, int sgn, int full, int *ok)
{
  const int *p = (const int *)(const void *)x;
  const __m256i hib = _mm256_set1_epi32(~(int32_t)(BOUND - 1));
  __m256i v0 = full ? _mm256_loadu_si256((const __m256i *)(const void *)p)
                    : _mm256_maskload_epi32(p, k0);
  __m256i v1 = _mm256_setzero_si256(), q, m;
  if (full)
    v1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 8));
  else if (n > 8)
    v1 = _mm256_maskload_epi32(p + 8, k1);
  m = _mm256_or_si256(mag2_32(v0, sgn), mag2_32(v1, sgn));
  *ok = _mm256_testz_si256(m, hib);
  q = _mm256_add_epi64(sq2(v0, sgn), sq2(_mm256_srli_epi64(v0, 32), sgn));
  return _mm256_add_epi64(
    q, _mm256_add_epi64(sq2(v1, sgn), sq2(_mm256_srli_epi64(v1, 32), sgn)));
}

/* One row of 64-bit elements (up to four quarters of 4). */
TGT2 ALWAYS_INLINE __m256i row2_64(const unsigned char *x, size_t n,
                                   const __m256i *kq, int sgn, int full,
                                   int *ok)
{
  const long long *p = (const long long *)(const void *)x;
  const __m256i hib = _mm256_set1_epi64x(~(int64_t)(BOUND - 1));
  __m256i q = _mm256_setzero_si256(), m = q;
  for (size_t i = 0; i < 4; i++) {
    __m256i v;
    if (!full && 4 * i >= n)
      break;
    v = full ? _mm256_loadu_si256((const __m256i *)(const void *)(p + 4 * i))
             : _mm256_maskload_epi64(p + 4 * i, kq[i]);
    m = _mm256_or_si256(m, mag2_64(v, sgn));
    q = _mm256_add_epi64(q, sq2(v, sgn));
  }
  *ok = _mm256_testz_si256(m, hib);
  return q;
}

/* [sum a, sum b, sum c, sum d] of four vectors of partial sums. */
TGT2 ALWAYS_INLINE __m256i hsum4(__m256i a, __m256i b, __m256i c, __m256i d)
{
  __m256i ab = _mm256_add_epi64(_mm256_unpacklo_epi64(a, b),
                                _mm256_unpackhi_epi64(a, b));
  __m256i cd = _mm256_add_epi64(_mm256_unpacklo_epi64(c, d),
                                _mm256_unpackhi_epi64(c, d));
  return _mm256_add_epi64(_mm256_permute2x128_si256(ab, cd, 0x20),
                          _mm256_permute2x128_si256(ab, cd, 0x31));
}

/* floor(sqrt(s)) of lanes s <= 2^62.  The double of s is within a relative
 * 2^-52 and its rounded square root within 2^-20 of sqrt(s) (< 2^31), so
 * the truncation is within one of the result; one exact check each way
 * (squares of r < 2^32 by pmuludq, below 2^63) corrects it. */
TGT2 ALWAYS_INLINE __m256i isqrt4(__m256i s)
{
  const __m256i magic = _mm256_set1_epi64x(0x4330000000000000); /* 2^52 */
  const __m256d magicd = _mm256_set1_pd(0x1p52);
  const __m256i one = _mm256_set1_epi64x(1);
  __m256i hi = _mm256_srli_epi64(s, 32);
  __m256i lo = _mm256_and_si256(s, _mm256_set1_epi64x(0xffffffff));
  __m256d dh = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(hi, magic)),
                             magicd);
  __m256d dl = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(lo, magic)),
                             magicd);
  __m256d d = _mm256_add_pd(_mm256_mul_pd(dh, _mm256_set1_pd(0x1p32)), dl);
  __m256d rd = _mm256_round_pd(_mm256_sqrt_pd(d),
                               _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __m256i r = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(rd, magicd)),
                               magic);
  __m256i r1;
  r = _mm256_add_epi64(r, _mm256_cmpgt_epi64(_mm256_mul_epu32(r, r), s));
  r1 = _mm256_add_epi64(r, one);
  return _mm256_add_epi64(
    r,
    _mm256_andnot_si256(_mm256_cmpgt_epi64(_mm256_mul_epu32(r1, r1), s), one));
}

/* floor(sqrt(s)) of lanes s < 2^52 as four 32-bit integers.  The double
 * of s is exact, and its correctly rounded square root cannot reach the
 * next integer k + 1 above the root: (k + 1) - sqrt(s) >= (k + 1) -
 * sqrt((k + 1)^2 - 1) > 1 / (2 (k + 1)) >= 2^-27 (k + 1 <= 2^26), more
 * than half the spacing of doubles below k + 1 (2^-28); it is at least k,
 * which is a double.  So truncation gives k, with no correction. */
TGT2 ALWAYS_INLINE __m128i isqrt52(__m256i s)
{
  const __m256i magic = _mm256_set1_epi64x(0x4330000000000000); /* 2^52 */
  __m256d d = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(s, magic)),
                            _mm256_set1_pd(0x1p52));
  return _mm256_cvttpd_epi32(_mm256_sqrt_pd(d));
}

TGT2 ALWAYS_INLINE uint64_t avx2_body(struct ty t, int l2, unsigned char *out,
                                      const unsigned char *x, size_t n,
                                      size_t nrows, int full)
{
  size_t esz = t.w64 ? 8 : 4, r = 0;
  uint64_t left = 0;
  int32_t b[16];
  int64_t bq[16];
  __m256i k0, k1, kq[4];
  const __m256i maxv = _mm256_set1_epi64x((int64_t)t.max);
  const __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 0, 0, 0);
  const __m256i big52 = _mm256_set1_epi64x(~(((int64_t)1 << 52) - 1));
  for (size_t l = 0; l < 16; l++) {
    b[l] = l < n ? -1 : 0;
    bq[l] = l < n ? -1 : 0;
  }
  k0 = _mm256_loadu_si256((const __m256i *)(void *)b);
  k1 = _mm256_loadu_si256((const __m256i *)(void *)(b + 8));
  for (size_t i = 0; i < 4; i++)
    kq[i] = _mm256_loadu_si256((const __m256i *)(void *)(bq + 4 * i));
  for (; r + 4 <= nrows; r += 4) {
    const unsigned char *p = x + r * n * esz;
    size_t rs = n * esz;
    int ok0, ok1, ok2, ok3;
    __m256i a, bb, c, d, s, bad;
    for (size_t l = 0; l < 4 * rs; l += 64)
      PF(p + l);
    if (t.w64) {
      a = row2_64(p, n, kq, t.sgn, full, &ok0);
      bb = row2_64(p + rs, n, kq, t.sgn, full, &ok1);
      c = row2_64(p + 2 * rs, n, kq, t.sgn, full, &ok2);
      d = row2_64(p + 3 * rs, n, kq, t.sgn, full, &ok3);
    } else {
      a = row2_32(p, n, k0, k1, t.sgn, full, &ok0);
      bb = row2_32(p + rs, n, k0, k1, t.sgn, full, &ok1);
      c = row2_32(p + 2 * rs, n, k0, k1, t.sgn, full, &ok2);
      d = row2_32(p + 3 * rs, n, k0, k1, t.sgn, full, &ok3);
    }
    s = hsum4(a, bb, c, d);
    left |= (uint64_t)((unsigned)!ok0 | (unsigned)!ok1 << 1 |
                       (unsigned)!ok2 << 2 | (unsigned)!ok3 << 3)
            << r;
    if (l2 && !t.w64 && _mm256_testz_si256(s, big52)) {
      /* Every sum below 2^52: the truncated double root is the integer
       * one (isqrt52()), below 2^26, so it fits the output. */
      _mm_storeu_si128((__m128i *)(void *)(out + r * 4), isqrt52(s));
      continue;
    }
    if (l2)
      s = isqrt4(s);
    /* 64-bit outputs hold every in-bound result (< 2^63). */
    bad = t.w64 ? _mm256_setzero_si256() : _mm256_cmpgt_epi64(s, maxv);
    left |= (uint64_t)(unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(bad))
            << r;
    if (t.w64)
      _mm256_storeu_si256((__m256i *)(void *)(out + r * 8), s);
    else
      _mm_storeu_si128((__m128i *)(void *)(out + r * 4),
                       _mm256_castsi256_si128(
                         _mm256_permutevar8x32_epi32(s, idx)));
  }
  return left | rows_portable(t, l2, out, x, n, r, nrows);
}

/* One specialisation per element kind and full (n == 16) rows. */
#define AVX2_FN(name, sgn_, w64_, full_)                                       \
  TGT2 static uint64_t name(struct ty t, int l2, unsigned char *out,           \
                            const unsigned char *x, size_t n, size_t nrows)    \
  {                                                                            \
    t.sgn = sgn_;                                                              \
    t.w64 = w64_;                                                              \
    return avx2_body(t, l2, out, x, full_ ? 16 : n, nrows, full_);             \
  }
AVX2_FN(avx2_u32, 0, 0, 0)
AVX2_FN(avx2_i32, 1, 0, 0)
AVX2_FN(avx2_u64, 0, 1, 0)
AVX2_FN(avx2_i64, 1, 1, 0)
AVX2_FN(avx2_u32f, 0, 0, 1)
AVX2_FN(avx2_i32f, 1, 0, 1)
AVX2_FN(avx2_u64f, 0, 1, 1)
AVX2_FN(avx2_i64f, 1, 1, 1)

static uint64_t rows_avx2(struct ty t, int l2, unsigned char *out,
                          const unsigned char *x, size_t n, size_t nrows)
{
  static uint64_t (*const fn[8])(struct ty, int, unsigned char *,
                                 const unsigned char *, size_t, size_t) = {
    avx2_u32,  avx2_i32,  avx2_u64,  avx2_i64,
    avx2_u32f, avx2_i32f, avx2_u64f, avx2_i64f,
  };
  return fn[t.sgn + 2 * t.w64 + 4 * (n == 16)](t, l2, out, x, n, nrows);
}

/* ------------------------------------------------------------------ */
/* AVX-512: 8 rows per step, 64-bit elements                          */
/* ------------------------------------------------------------------ */

/* 32-bit elements keep the AVX2 form on the AVX-512 path.  An eight-row
 * AVX-512 form of them (one 64-byte load per row of 16) was faster from
 * cache (52 against 44 GB/s) but slower from memory: case F int32 took
 * 1.2-1.45 times the AVX2 form's time on one thread (13-15 ms against
 * 11), with any prefetch distance or hint, and with or without software
 * prefetch the two were equal, so its prefetches were of no use.
 * 64-bit rows (two loads of 64 bytes) are faster in AVX-512 (0.78 times
 * the AVX2 form's time), so they keep it. */

TGT512 ALWAYS_INLINE __m512i sq5(__m512i v, int sgn)
{
  return sgn ? _mm512_mul_epi32(v, v) : _mm512_mul_epu32(v, v);
}

/* The bound's test of a lane, cheap enough to OR over 8 rows and test
 * once: v + 2^29 below 2^30 (signed) or v below 2^29 (unsigned).  Lanes
 * masked off load as 0, which passes. */
#define HI_S (~(int64_t)(2 * BOUND - 1))
#define HI_U (~(int64_t)(BOUND - 1))

TGT512 ALWAYS_INLINE __m512i key5(__m512i v, int sgn)
{
  return sgn ? _mm512_add_epi64(v, _mm512_set1_epi64((int64_t)BOUND)) : v;
}

/* One row of 64-bit elements (two masked loads of 8): 8 partial sums;
 * the row's bound keys are ORed into *keys. */
TGT512 ALWAYS_INLINE __m512i row5(const unsigned char *x, size_t n, __mmask8 k0,
                                  __mmask8 k1, int sgn, __m512i *keys)
{
  __m512i v0 = _mm512_maskz_loadu_epi64(k0, x), v1 = _mm512_setzero_si512();
  if (n > 8)
    v1 = _mm512_maskz_loadu_epi64(k1, x + 64);
  *keys = _mm512_or_si512(*keys, _mm512_or_si512(key5(v0, sgn), key5(v1, sgn)));
  return _mm512_add_epi64(sq5(v0, sgn), sq5(v1, sgn));
}

/* 1: every element of the row passes the bound (the slow test, only after
 * the ORed keys of a step failed). */
TGT512 ALWAYS_INLINE int row5_ok(const unsigned char *x, size_t n, __mmask8 k0,
                                 __mmask8 k1, int sgn)
{
  __m512i keys = _mm512_setzero_si512();
  (void)row5(x, n, k0, k1, sgn, &keys);
  return _mm512_test_epi64_mask(keys, _mm512_set1_epi64(sgn ? HI_S : HI_U)) ==
         0;
}

/* The eight row sums of eight vectors of partial sums, in row order. */
TGT512 ALWAYS_INLINE __m512i hsum8(const __m512i *q)
{
  __m512i t[4], u0, u1;
  for (int i = 0; i < 4; i++) /* 128-bit lane l: [row 2i, row 2i+1] part l */
    t[i] = _mm512_add_epi64(_mm512_unpacklo_epi64(q[2 * i], q[2 * i + 1]),
                            _mm512_unpackhi_epi64(q[2 * i], q[2 * i + 1]));
  /* lanes: rows 01 (parts 0+1, 2+3), rows 23 (parts 0+1, 2+3) */
  u0 = _mm512_add_epi64(_mm512_shuffle_i64x2(t[0], t[1], 0x88),
                        _mm512_shuffle_i64x2(t[0], t[1], 0xdd));
  u1 = _mm512_add_epi64(_mm512_shuffle_i64x2(t[2], t[3], 0x88),
                        _mm512_shuffle_i64x2(t[2], t[3], 0xdd));
  return _mm512_add_epi64(_mm512_shuffle_i64x2(u0, u1, 0x88),
                          _mm512_shuffle_i64x2(u0, u1, 0xdd));
}

/* floor(sqrt(s)), s <= 2^62: as isqrt4(), with the DQ conversions. */
TGT512 ALWAYS_INLINE __m512i isqrt8(__m512i s)
{
  const __m512i one = _mm512_set1_epi64(1);
  __m512d d = _mm512_sqrt_pd(_mm512_cvtepu64_pd(s));
  __m512i r = _mm512_cvttpd_epu64(d), r1;
  r = _mm512_mask_sub_epi64(r,
                            _mm512_cmpgt_epu64_mask(_mm512_mul_epu32(r, r), s),
                            r, one);
  r1 = _mm512_add_epi64(r, one);
  return _mm512_mask_add_epi64(
    r, _mm512_cmple_epu64_mask(_mm512_mul_epu32(r1, r1), s), r, one);
}

/* int64 (sgn) or uint64 rows; 64-bit outputs hold every in-bound result
 * (< 2^63), so only the bound sends a row back. */
TGT512 ALWAYS_INLINE uint64_t avx512_body(struct ty t, int l2,
                                          unsigned char *out,
                                          const unsigned char *x, size_t n,
                                          size_t nrows)
{
  size_t r = 0, rs = n * 8;
  uint64_t left = 0;
  const __mmask8 k0 = (__mmask8)(n >= 8 ? 0xff : (1u << n) - 1);
  const __mmask8 k1 = (__mmask8)(n > 8 ? (1u << (n - 8)) - 1 : 0);
  const __m512i hi = _mm512_set1_epi64(t.sgn ? HI_S : HI_U);
  for (; r + 8 <= nrows; r += 8) {
    const unsigned char *p = x + r * rs;
    __m512i q[8], s, keys = _mm512_setzero_si512();
    unsigned bad = 0;
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
      PF2(p + i * rs);
      PF2(p + i * rs + 64);
      q[i] = row5(p + i * rs, n, k0, k1, t.sgn, &keys);
    }
    if (_mm512_test_epi64_mask(keys, hi) != 0)
      for (int i = 0; i < 8; i++) /* some row is beyond the bound */
        bad |= (unsigned)!row5_ok(p + i * rs, n, k0, k1, t.sgn) << i;
    s = hsum8(q);
    if (l2)
      s = isqrt8(s);
    left |= (uint64_t)bad << r;
    _mm512_storeu_si512(out + r * 8, s);
  }
  if (r < nrows) /* the last rows, 4 at a time */
    left |= rows_avx2(t, l2, out + r * 8, x + r * rs, n, nrows - r) << r;
  return left;
}

#define AVX512_FN(name, sgn_, full_)                                           \
  TGT512 static uint64_t name(struct ty t, int l2, unsigned char *out,         \
                              const unsigned char *x, size_t n, size_t nrows)  \
  {                                                                            \
    t.sgn = sgn_;                                                              \
    return avx512_body(t, l2, out, x, full_ ? 16 : n, nrows);                  \
  }
AVX512_FN(avx512_u64, 0, 0)
AVX512_FN(avx512_i64, 1, 0)
AVX512_FN(avx512_u64f, 0, 1)
AVX512_FN(avx512_i64f, 1, 1)

static uint64_t rows_avx512(struct ty t, int l2, unsigned char *out,
                            const unsigned char *x, size_t n, size_t nrows)
{
  static uint64_t (*const fn[4])(struct ty, int, unsigned char *,
                                 const unsigned char *, size_t, size_t) = {
    avx512_u64,
    avx512_i64,
    avx512_u64f,
    avx512_i64f,
  };
  if (!t.w64)
    return rows_avx2(t, l2, out, x, n, nrows);
  return fn[t.sgn + 2 * (n == 16)](t, l2, out, x, n, nrows);
}

#endif /* x86-64 */

/* ------------------------------------------------------------------ */
/* Entry points                                                       */
/* ------------------------------------------------------------------ */

uint64_t rd__rows_int_impl(int impl, int dtype, int l2, void *out,
                           const unsigned char *x, size_t n, size_t nrows)
{
  struct ty t = ty_of(dtype);
#if defined(__x86_64__) && defined(__GNUC__)
  if (impl == RD__IMPL_AVX512)
    return rows_avx512(t, l2, out, x, n, nrows);
  if (impl == RD__IMPL_AVX2)
    return rows_avx2(t, l2, out, x, n, nrows);
#endif
  (void)impl;
  return rows_portable(t, l2, out, x, n, 0, nrows);
}

uint64_t rd__rows_int(const struct rd__kernel *k, int dtype, int l2, void *out,
                      const unsigned char *x, size_t n, size_t nrows)
{
  int id = rd__kernel_id(dtype), impl = RD__IMPL_PORTABLE;
  if (k == rd__kernel_impl(id, RD__IMPL_AVX512))
    impl = RD__IMPL_AVX512;
  else if (k == rd__kernel_impl(id, RD__IMPL_AVX2))
    impl = RD__IMPL_AVX2;
  return rd__rows_int_impl(impl, dtype, l2, out, x, n, nrows);
}
