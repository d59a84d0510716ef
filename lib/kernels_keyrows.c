/* kernels_keyrows.c - float32 Max/Min/ArgMax/ArgMin in AVX-512 (see
 * kernels_ops.h): short rows written as outputs, sixteen rows per step
 * (rd__opk_key_rows_f32), columns, sixteen per vector
 * (rd__opk_key_cols_f32, the form of kernels_avx2.c's avx_cols32), and the
 * best key of a block (rd__opk_best32, of kernels_avx2.c's best32).
 *
 * The results are exact (a best element, or its index), so any grouping
 * gives the bits of the accumulator path: each row is one vector of
 * 32-bit order keys (Max/Min: ops.c's key32, -0 < +0; ArgMax/ArgMin: sign
 * and magnitude as a two's complement integer, -0 = +0, a tie), the
 * sixteen vectors of a step are folded into one vector of sixteen row
 * bests by a transposing tree (each level halves the lanes per row and
 * doubles the rows per vector), and an Arg row's index is the first
 * (last) lane whose key equals its best.  Rows holding a NaN
 * are left to the accumulator path (redo), which owns the NaN rules.
 */
#include "kernels_ops.h"

#include <stdint.h>
#include <string.h>

#include "kernels_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT5 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma,f16c")))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* kb_best()'s prefetch distance in bytes (long rows: without it the
 * reorder window, not DRAM, bounds the lines in flight).  The short rows
 * of kr_rows() have none: one address-ordered stream, which the hardware
 * prefetcher follows (with a prefetch 4 KiB ahead, case F Max took 1.1-1.2x
 * the time, ArgMax 1.2-1.35x; bench/README.md). */
#define KB_PF 4096

TGT5 ALWAYS_INLINE __m512i kr_best(__m512i a, __m512i b, int is_max)
{
  return is_max ? _mm512_max_epi32(a, b) : _mm512_min_epi32(a, b);
}

/* k[r]: the keys of row r (lanes >= n hold the identity); returns the
 * vector whose lane r is the best key of row r. */
TGT5 ALWAYS_INLINE __m512i kr_tree(const __m512i *k, int is_max)
{
  __m512i w[8], y[4], z[2], a, b, f;
  /* 256-bit halves: w[i] lanes 0-7 row 2i, lanes 8-15 row 2i + 1 */
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++) {
    a = _mm512_shuffle_i64x2(k[2 * i], k[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0));
    b = _mm512_shuffle_i64x2(k[2 * i], k[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2));
    w[i] = kr_best(a, b, is_max);
  }
  /* 128-bit quarters: y[i] quarter q is row 4i + q */
#pragma GCC unroll 8
  for (int i = 0; i < 4; i++) {
    a = _mm512_shuffle_i64x2(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0));
    b = _mm512_shuffle_i64x2(w[2 * i], w[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1));
    y[i] = kr_best(a, b, is_max);
  }
  /* 64-bit pairs: z[i] quarter q holds rows 8i + q, then 8i + 4 + q */
#pragma GCC unroll 8
  for (int i = 0; i < 2; i++) {
    a = _mm512_unpacklo_epi64(y[2 * i], y[2 * i + 1]);
    b = _mm512_unpackhi_epi64(y[2 * i], y[2 * i + 1]);
    z[i] = kr_best(a, b, is_max);
  }
  /* single lanes: lane 4q + j is row 4j + q */
  a = _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(z[0]),
                                            _mm512_castsi512_ps(z[1]),
                                            _MM_SHUFFLE(2, 0, 2, 0)));
  b = _mm512_castps_si512(_mm512_shuffle_ps(_mm512_castsi512_ps(z[0]),
                                            _mm512_castsi512_ps(z[1]),
                                            _MM_SHUFFLE(3, 1, 3, 1)));
  f = kr_best(a, b, is_max);
  /* into row order: lane r = lane 4 (r % 4) + r / 4 */
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2,
                                                    6, 10, 14, 3, 7, 11, 15),
                                  f);
}

/* Row r's NaN flag in bit r of the result: the sixteen rows of a step at
 * p (row bytes rb, lane mask lm), read again -- only for a step whose
 * elements include a NaN somewhere. */
TGT5 ALWAYS_INLINE unsigned kr_nan_rows(const unsigned char *p, size_t rb,
                                        __mmask16 lm)
{
  const __m512i absm = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  unsigned bad = 0;
  for (int r = 0; r < 16; r++) {
    __m512i u = _mm512_maskz_loadu_epi32(lm, p + (size_t)r * rb);
    bad |=
      (unsigned)(_mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absm), inf) != 0)
      << r;
  }
  return bad;
}

TGT5 ALWAYS_INLINE void kr_rows(unsigned char *out, unsigned char *redo,
                                const unsigned char *x, size_t n, size_t nrows,
                                int is_max, int arg, int last, int stream)
{
  const __mmask16 lm = (__mmask16)((1u << n) - 1);
  const __m512i absm = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  const __m512i idv = _mm512_set1_epi32(is_max ? INT32_MIN : INT32_MAX);
  const size_t rb = n * 4;
  size_t r0 = 0;
  for (; r0 + 16 <= nrows; r0 += 16) {
    const unsigned char *p = x + r0 * rb;
    __m512i k[16], best, amax = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
      __m512i u = _mm512_maskz_loadu_epi32(lm, p + (size_t)r * rb);
      __m512i a = _mm512_and_si512(u, absm);
      amax = _mm512_max_epu32(amax, a); /* a NaN anywhere: above inf */
      if (arg) /* sign and magnitude as an integer: -0 ties +0 */
        u = _mm512_mask_sub_epi32(a, _mm512_movepi32_mask(u),
                                  _mm512_setzero_si512(), a);
      else /* ops.c's key32 (-0 < +0): ~|x| for a negative x */
        u = _mm512_mask_xor_epi32(a, _mm512_movepi32_mask(u), a,
                                  _mm512_set1_epi32(-1));
      k[r] = n == 16 ? u : _mm512_mask_mov_epi32(idv, lm, u);
    }
    best = kr_tree(k, is_max);
    if (!arg) {
      /* key32 is its own inverse: the best element's bits */
      __m512i v = _mm512_xor_si512(best,
                                   _mm512_and_si512(_mm512_srai_epi32(best, 31),
                                                    absm));
      if (stream)
        _mm512_stream_si512((void *)(out + r0 * 4), v);
      else
        _mm512_storeu_si512((void *)(out + r0 * 4), v);
    } else {
      int32_t b[16];
      int64_t idx[16];
      _mm512_storeu_si512((void *)b, best);
#pragma GCC unroll 16
      for (int r = 0; r < 16; r++) {
        unsigned eq = _mm512_cmpeq_epi32_mask(k[r], _mm512_set1_epi32(b[r]));
        /* eq != 0 for a row without NaN (the identity is no number's key);
         * lanes >= n hold the identity */
        idx[r] = eq ? (last ? 31 - __builtin_clz(eq) : __builtin_ctz(eq)) : 0;
      }
      if (stream) {
        _mm512_stream_si512((void *)(out + r0 * 8), _mm512_loadu_si512(idx));
        _mm512_stream_si512((void *)(out + r0 * 8 + 64),
                            _mm512_loadu_si512(idx + 8));
      } else {
        memcpy(out + r0 * 8, idx, sizeof idx);
      }
    }
    if (_mm512_cmpgt_epu32_mask(amax, inf)) {
      unsigned bad = kr_nan_rows(p, rb, lm);
      for (int r = 0; r < 16; r++)
        redo[r0 + (size_t)r] = (unsigned char)(bad >> r & 1);
    } else {
      memset(redo + r0, 0, 16);
    }
  }
  for (; r0 < nrows; r0++)
    redo[r0] = 1;
}

/* The whole-vector rows (n 16) apart: no lane mask in the loop. */
#define KR_ROWS(out, redo, x, n, nrows, is_max, arg, last, stream)             \
  do {                                                                         \
    if ((n) == 16)                                                             \
      kr_rows(out, redo, x, 16, nrows, is_max, arg, last, stream);             \
    else                                                                       \
      kr_rows(out, redo, x, n, nrows, is_max, arg, last, stream);              \
  } while (0)

/* ------------------------------------------------------------------ */
/* One block: ops.c's block_best32, sixteen elements per vector        */
/* ------------------------------------------------------------------ */

/* The keys of the 16 float32 bit patterns u (ops.c's key32: ~|x| for a
 * negative x, |x| otherwise; zero_tie: -0 is +0, the Arg tie), and in
 * *nan the NaN lanes (whose keys mean nothing). */
TGT5 ALWAYS_INLINE __m512i k16_key(__m512i u, int zero_tie, __mmask16 *nan)
{
  const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __mmask16 neg = _mm512_movepi32_mask(u);
  *nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7f800000));
  if (zero_tie)
    neg = _mm512_mask_test_epi32_mask(neg, a, a);
  return _mm512_mask_xor_epi32(a, neg, a, _mm512_set1_epi32(-1));
}

/* The lanes of m where key k beats b: greater (less for Min), or with
 * or_equal greater or equal (less or equal). */
TGT5 ALWAYS_INLINE __mmask16 k16_beats(__mmask16 m, __m512i k, __m512i b,
                                       int is_max, int or_equal)
{
  if (or_equal)
    return is_max ? _mm512_mask_cmpge_epi32_mask(m, k, b)
                  : _mm512_mask_cmple_epi32_mask(m, k, b);
  return is_max ? _mm512_mask_cmpgt_epi32_mask(m, k, b)
                : _mm512_mask_cmplt_epi32_mask(m, k, b);
}

/* One step: the keys of u (k16_key()), numbers only (NaN lanes and lanes
 * off m leave the best), NaN lanes into *an. */
TGT5 ALWAYS_INLINE __m512i kb_step(__m512i b, __m512i u, __mmask16 m,
                                   int is_max, int zero_tie, __mmask16 *an)
{
  __mmask16 nan;
  const __m512i k = k16_key(u, zero_tie, &nan);
  *an |= nan;
  m &= (__mmask16)~nan;
  return is_max ? _mm512_mask_max_epi32(b, m, b, k)
                : _mm512_mask_min_epi32(b, m, b, k);
}

TGT5 ALWAYS_INLINE int32_t kb_best(const unsigned char *x, size_t n, int is_max,
                                   int zero_tie, int *nan)
{
  const __m512i idv = _mm512_set1_epi32(is_max ? INT32_MIN : INT32_MAX);
  __m512i b0 = idv, b1 = idv;
  __mmask16 an = 0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm_prefetch((const char *)(x + i * 4) + KB_PF, _MM_HINT_T0);
    _mm_prefetch((const char *)(x + i * 4) + KB_PF + 64, _MM_HINT_T0);
    b0 = kb_step(b0, _mm512_loadu_si512(x + i * 4), 0xffff, is_max, zero_tie,
                 &an);
    b1 = kb_step(b1, _mm512_loadu_si512(x + i * 4 + 64), 0xffff, is_max,
                 zero_tie, &an);
  }
  for (; i < n; i += 16) { /* the tail, masked */
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff
                              : (__mmask16)((1u << (n - i)) - 1);
    b0 = kb_step(b0, _mm512_maskz_loadu_epi32(m, x + i * 4), m, is_max,
                 zero_tie, &an);
  }
  *nan = an != 0;
  b0 = is_max ? _mm512_max_epi32(b0, b1) : _mm512_min_epi32(b0, b1);
  return is_max ? _mm512_reduce_max_epi32(b0) : _mm512_reduce_min_epi32(b0);
}

TGT5 static int32_t best32_avx512(const unsigned char *x, size_t n, int mode,
                                  int *nan)
{
  switch (mode) {
  case 0: return kb_best(x, n, 0, 0, nan);
  case 1: return kb_best(x, n, 1, 0, nan);
  case 2: return kb_best(x, n, 0, 1, nan);
  default: return kb_best(x, n, 1, 1, nan);
  }
}

int rd__opk_best32(const unsigned char *x, size_t n, int is_max, int zero_tie,
                   int32_t *best, int *nan)
{
  if (!rd__opk_avx512())
    return -1;
  *best = best32_avx512(x, n, (is_max ? 1 : 0) + (zero_tie ? 2 : 0), nan);
  return 0;
}

/* ------------------------------------------------------------------ */
/* One ArgMax/ArgMin row: the best key and where it first (last) is    */
/* ------------------------------------------------------------------ */

/* kb_step() that also keeps, per lane, the index (iv) of the lane's best:
 * the first of equal keys (strictly better replaces), or with `last` the
 * latest (better or equal replaces). */
TGT5 ALWAYS_INLINE void ka_step(__m512i *b, __m512i *bi, __m512i u, __m512i iv,
                                __mmask16 m, int is_max, int last,
                                __mmask16 *an)
{
  __mmask16 nan, upd;
  const __m512i k = k16_key(u, 1, &nan);
  *an |= nan;
  upd = k16_beats(m & (__mmask16)~nan, k, *b, is_max, last);
  *b = _mm512_mask_mov_epi32(*b, upd, k);
  *bi = _mm512_mask_mov_epi32(*bi, upd, iv);
}

/* One pass over a row of n < 2^31 elements: per lane the best key and its
 * index, in two interleaved sets of lanes; then the best key of all lanes
 * and, among the lanes holding it, the lowest index (the highest with
 * `last`).  No branch depends on the data, so rows do not wait on a
 * mispredicted search as a second pass for the best key's index did. */
TGT5 ALWAYS_INLINE int ka_row(const unsigned char *x, size_t n, int is_max,
                              int last, int64_t *idx)
{
  const __m512i idv = _mm512_set1_epi32(is_max ? INT32_MIN : INT32_MAX);
  const __m512i step = _mm512_set1_epi32(32);
  __m512i b0 = idv, b1 = idv, i0 = _mm512_setzero_si512(), i1 = i0;
  __m512i iv = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                 14, 15);
  __mmask16 an = 0, c0, c1;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    _mm_prefetch((const char *)(x + i * 4) + KB_PF, _MM_HINT_T0);
    _mm_prefetch((const char *)(x + i * 4) + KB_PF + 64, _MM_HINT_T0);
    ka_step(&b0, &i0, _mm512_loadu_si512(x + i * 4), iv, 0xffff, is_max, last,
            &an);
    ka_step(&b1, &i1, _mm512_loadu_si512(x + i * 4 + 64),
            _mm512_add_epi32(iv, _mm512_set1_epi32(16)), 0xffff, is_max, last,
            &an);
    iv = _mm512_add_epi32(iv, step);
  }
  for (; i < n; i += 16, iv = _mm512_add_epi32(iv, _mm512_set1_epi32(16))) {
    __mmask16 m = n - i >= 16 ? (__mmask16)0xffff
                              : (__mmask16)((1u << (n - i)) - 1);
    ka_step(&b0, &i0, _mm512_maskz_loadu_epi32(m, x + i * 4), iv, m, is_max,
            last, &an);
  }
  if (an != 0)
    return -1;
  {
    const int32_t best = is_max
                           ? _mm512_reduce_max_epi32(_mm512_max_epi32(b0, b1))
                           : _mm512_reduce_min_epi32(_mm512_min_epi32(b0, b1));
    const __m512i bv = _mm512_set1_epi32(best);
    c0 = _mm512_cmpeq_epi32_mask(b0, bv);
    c1 = _mm512_cmpeq_epi32_mask(b1, bv);
    /* lanes without the best: an index no lane holding it can lose to */
    if (last)
      *idx = _mm512_reduce_max_epi32(
        _mm512_max_epi32(_mm512_maskz_mov_epi32(c0, i0),
                         _mm512_maskz_mov_epi32(c1, i1)));
    else
      *idx = _mm512_reduce_min_epi32(_mm512_min_epi32(
        _mm512_mask_mov_epi32(_mm512_set1_epi32(INT32_MAX), c0, i0),
        _mm512_mask_mov_epi32(_mm512_set1_epi32(INT32_MAX), c1, i1)));
  }
  return 0;
}

TGT5 static int arg_row_avx512(const unsigned char *x, size_t n, int is_max,
                               int last, int64_t *idx)
{
  if (is_max)
    return last ? ka_row(x, n, 1, 1, idx) : ka_row(x, n, 1, 0, idx);
  return last ? ka_row(x, n, 0, 1, idx) : ka_row(x, n, 0, 0, idx);
}

int rd__opk_arg_row_f32(const unsigned char *x, size_t n, int mode,
                        int64_t *idx)
{
  if (!rd__opk_avx512() || n == 0)
    return -1;
  return arg_row_avx512(x, n, mode == RD__C32_ARGMAX || mode == RD__C32_ARGMAXL,
                        mode == RD__C32_ARGMAXL || mode == RD__C32_ARGMINL,
                        idx);
}

/* ------------------------------------------------------------------ */
/* Columns: ops.c's cols32_tile, sixteen columns per vector            */
/* ------------------------------------------------------------------ */

/* The NaN row state nn after NaN lanes isn of row rv: set where it is -1,
 * or always with `last`; Max/Min keep only whether nn >= 0, so any NaN
 * row will do there. */
TGT5 ALWAYS_INLINE __m512i kc_nan(__m512i nn, __mmask16 isn, __m512i rv,
                                  int arg, int last)
{
  if (!arg || last)
    return _mm512_mask_mov_epi32(nn, isn, rv);
  return _mm512_mask_mov_epi32(
    nn, isn & _mm512_cmpeq_epi32_mask(nn, _mm512_set1_epi32(-1)), rv);
}

/* One element row u of 16 columns into the state (b, bi, nn) as row rv:
 * lane by lane what kernels_avx2.c's avx_col8 does (a NaN leaves b and bi
 * and goes to nn, kc_nan()).  The keys are k16_key()'s (the state's
 * encoding), -0 made +0 for Arg; the NaN lanes' update is a branch, as a
 * NaN is rare. */
TGT5 ALWAYS_INLINE void kc_col16(__m512i u, __m512i rv, int is_max, int arg,
                                 int last, __m512i *b, __m512i *bi, __m512i *nn)
{
  __mmask16 isn, upd;
  const __m512i k = k16_key(u, arg, &isn);

  if (__builtin_expect(isn != 0, 0))
    *nn = kc_nan(*nn, isn, rv, arg, last);
  if (!arg) {
    *b = is_max ? _mm512_mask_max_epi32(*b, (__mmask16)~isn, *b, k)
                : _mm512_mask_min_epi32(*b, (__mmask16)~isn, *b, k);
    return;
  }
  upd = k16_beats((__mmask16)~isn, k, *b, is_max, last);
  *b = _mm512_mask_mov_epi32(*b, upd, k);
  *bi = _mm512_mask_mov_epi32(*bi, upd, rv);
}

#define KLD(p) _mm512_loadu_si512((const void *)(p))
#define KST(p, v) _mm512_storeu_si512((void *)(p), v)

/* kc_col16() on a state left in memory at j (best, bidx, nidx + j): the
 * same lanes change, but only the changed lanes are stored (Max/Min store
 * best; Arg stores best and bidx under the update mask, which is mostly
 * empty after the first rows), and nidx is read only when a lane is NaN.
 * One load and at most two stores per 16 elements, for rows taken one at
 * a time. */
TGT5 ALWAYS_INLINE void kc_mem16(__m512i u, __m512i rv, int is_max, int arg,
                                 int last, int32_t *best, int32_t *bidx,
                                 int32_t *nidx)
{
  __mmask16 isn, upd;
  const __m512i k = k16_key(u, arg, &isn);

  if (__builtin_expect(isn != 0, 0))
    KST(nidx, kc_nan(KLD(nidx), isn, rv, arg, last));
  /* Max/Min: a greater (lesser) key, as kc_col16()'s max (min) */
  upd = k16_beats((__mmask16)~isn, k, KLD(best), is_max, arg && last);
  _mm512_mask_storeu_epi32(best, upd, k);
  if (arg)
    _mm512_mask_storeu_epi32(bidx, upd, rv);
}

/* Whole rows of at most this many columns are read one after another
 * (kc_cols()): their state (best, bidx, nidx: 12 bytes a column, 24 KiB)
 * stays in L1.  Wider ones go by tiles like rows that are not whole. */
#define KC_ONE_N 2048

/* ncols (a multiple of 16) columns over nrows rows, the state in the
 * caller's arrays.  Whole rows of up to KC_ONE_N columns (ncols ==
 * stride): one row after another, a single stream in address order that
 * the hardware prefetcher follows best (kernels_avx512.c's z_cols1).
 * Tiles of other rows: eight rows (in order) per load of the state, the
 * eight rows after them prefetched into L2 only (into L1 they evicted the
 * tile's lines and state: case C Max 0.75x the time on 1 thread, 0.90x on
 * 2, ArgMax 0.89x and 0.89x, alternating medians).  Eight rows rather
 * than four per load of the state, and tiles for whole rows wider than
 * KC_ONE_N (whose state lived in L2 and was read for every row): case C
 * on 1 thread ArgMax 0.89-0.93x the time, ArgMin 0.89-0.94x, Max 0.90x,
 * Min 0.83-0.88x (2 threads: 0.85-1.07x, within the noise); sixteen rows
 * were slower (1.03-1.17x). */
TGT5 ALWAYS_INLINE void kc_cols(const unsigned char *x, size_t stride,
                                size_t ncols, size_t nrows, int is_max, int arg,
                                int last, int32_t *best, int32_t *bidx,
                                int32_t *nidx)
{
  const size_t rs = stride * 4;
  const int whole = ncols == stride && ncols <= KC_ONE_N;
  size_t r = 0;
  for (; !whole && r + 8 <= nrows; r += 8, x += 8 * rs) {
    __m512i rv[8];
#pragma GCC unroll 8
    for (int q = 0; q < 8; q++)
      rv[q] = _mm512_set1_epi32((int32_t)(r + (size_t)q));
    for (size_t j = 0; j < ncols; j += 16) {
      const unsigned char *p = x + j * 4;
      __m512i b = KLD(best + j), nn = KLD(nidx + j);
      __m512i bi = arg ? KLD(bidx + j) : _mm512_setzero_si512();
      if (r + 16 <= nrows) {
#pragma GCC unroll 8
        for (int q = 8; q < 16; q++)
          _mm_prefetch((const char *)(p + q * rs), _MM_HINT_T1);
      }
#pragma GCC unroll 8
      for (int q = 0; q < 8; q++)
        kc_col16(KLD(p + q * rs), rv[q], is_max, arg, last, &b, &bi, &nn);
      KST(best + j, b);
      KST(nidx + j, nn);
      if (arg)
        KST(bidx + j, bi);
    }
  }
  for (; whole && r < nrows; r++, x += rs) {
    const __m512i rv = _mm512_set1_epi32((int32_t)r);
    for (size_t j = 0; j < ncols; j += 16)
      kc_mem16(KLD(x + j * 4), rv, is_max, arg, last, best + j, bidx + j,
               nidx + j);
  }
  for (; r < nrows; r++, x += rs) {
    const __m512i rv = _mm512_set1_epi32((int32_t)r);
    for (size_t j = 0; j < ncols; j += 16) {
      __m512i b = KLD(best + j), nn = KLD(nidx + j);
      __m512i bi = arg ? KLD(bidx + j) : _mm512_setzero_si512();
      kc_col16(KLD(x + j * 4), rv, is_max, arg, last, &b, &bi, &nn);
      KST(best + j, b);
      KST(nidx + j, nn);
      if (arg)
        KST(bidx + j, bi);
    }
  }
}

TGT5 static void key_cols_avx512(const unsigned char *x, size_t stride,
                                 size_t ncols, size_t nrows, int mode,
                                 int32_t *best, int32_t *bidx, int32_t *nidx)
{
  switch (mode) {
  case RD__C32_MAX:
    kc_cols(x, stride, ncols, nrows, 1, 0, 0, best, bidx, nidx);
    break;
  case RD__C32_MIN:
    kc_cols(x, stride, ncols, nrows, 0, 0, 0, best, bidx, nidx);
    break;
  case RD__C32_ARGMAX:
    kc_cols(x, stride, ncols, nrows, 1, 1, 0, best, bidx, nidx);
    break;
  case RD__C32_ARGMAXL:
    kc_cols(x, stride, ncols, nrows, 1, 1, 1, best, bidx, nidx);
    break;
  case RD__C32_ARGMIN:
    kc_cols(x, stride, ncols, nrows, 0, 1, 0, best, bidx, nidx);
    break;
  default: kc_cols(x, stride, ncols, nrows, 0, 1, 1, best, bidx, nidx); break;
  }
}

size_t rd__opk_key_cols_f32(const unsigned char *x, size_t stride, size_t ncols,
                            size_t nrows, int mode, int32_t *best,
                            int32_t *bidx, int32_t *nidx)
{
  ncols &= ~(size_t)15;
  if (!rd__opk_avx512() || ncols == 0)
    return 0;
  key_cols_avx512(x, stride, ncols, nrows, mode, best, bidx, nidx);
  return ncols;
}

TGT5 static void key_rows_avx512(unsigned char *out, unsigned char *redo,
                                 const unsigned char *x, size_t n, size_t nrows,
                                 int mode, int stream)
{
  switch (mode) {
  case RD__C32_MAX: KR_ROWS(out, redo, x, n, nrows, 1, 0, 0, stream); break;
  case RD__C32_MIN: KR_ROWS(out, redo, x, n, nrows, 0, 0, 0, stream); break;
  case RD__C32_ARGMAX: KR_ROWS(out, redo, x, n, nrows, 1, 1, 0, stream); break;
  case RD__C32_ARGMAXL: KR_ROWS(out, redo, x, n, nrows, 1, 1, 1, stream); break;
  case RD__C32_ARGMIN: KR_ROWS(out, redo, x, n, nrows, 0, 1, 0, stream); break;
  default: KR_ROWS(out, redo, x, n, nrows, 0, 1, 1, stream); break;
  }
  if (stream)
    _mm_sfence(); /* the streamed lines before any later store */
}

void rd__opk_key_rows_f32(void *out, unsigned char *redo,
                          const unsigned char *x, size_t n, size_t nrows,
                          int mode, int stream)
{
  if (rd__opk_avx512() && n >= 1 && n <= 16)
    key_rows_avx512(out, redo, x, n, nrows, mode,
                    stream && ((uintptr_t)out & 63) == 0);
  else
    memset(redo, 1, nrows);
}

#else /* no x86-64 SIMD path in this build: every row to the caller */

int rd__opk_arg_row_f32(const unsigned char *x, size_t n, int mode,
                        int64_t *idx)
{
  (void)x;
  (void)n;
  (void)mode;
  (void)idx;
  return -1;
}

int rd__opk_best32(const unsigned char *x, size_t n, int is_max, int zero_tie,
                   int32_t *best, int *nan)
{
  (void)x;
  (void)n;
  (void)is_max;
  (void)zero_tie;
  (void)best;
  (void)nan;
  return -1;
}

size_t rd__opk_key_cols_f32(const unsigned char *x, size_t stride, size_t ncols,
                            size_t nrows, int mode, int32_t *best,
                            int32_t *bidx, int32_t *nidx)
{
  (void)x;
  (void)stride;
  (void)ncols;
  (void)nrows;
  (void)mode;
  (void)best;
  (void)bidx;
  (void)nidx;
  return 0;
}

void rd__opk_key_rows_f32(void *out, unsigned char *redo,
                          const unsigned char *x, size_t n, size_t nrows,
                          int mode, int stream)
{
  (void)out;
  (void)x;
  (void)n;
  (void)mode;
  (void)stream;
  memset(redo, 1, nrows);
}

#endif
