/* kernels.c - accumulation kernels (see kernels.h for the contract).
 *
 * Portable C with explicit independent lanes so GCC vectorises them at -O2
 * without -ffast-math; no reassociation is left to the compiler.  Loads go
 * through memcpy because stream chunks can be arbitrarily aligned.
 */
#include "kernels_impl.h"

#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "f16.h"
#include "reduce.h"

/* ------------------------------------------------------------------ */
/* double accumulators: float32, float16, bfloat16                    */
/* ------------------------------------------------------------------ */

void rd__flush_d(union rd__lanes *ln, void *acc)
{
  double *o = acc;
  *o += tree(ln->d);
  memset(ln->d, 0, sizeof ln->d);
}

/* The squares kernels of the double class, one template per entry point,
 * instantiated per element type below (esz and load are constants there,
 * so the compiler specialises each instance).  Head up to lane 0, whole
 * blocks of L elements with the lanes in registers, tail. */
typedef double (*ld_fn)(const unsigned char *p);

#define ALWAYS_INLINE static inline __attribute__((always_inline))

ALWAYS_INLINE void d_run(union rd__lanes *ln, const unsigned char *x, size_t n,
                         uint64_t pos, size_t esz, ld_fn load)
{
  size_t k = (size_t)(pos % L), i = 0;
  double a[L];
  for (; k != 0 && i < n; i++, k = (k + 1) % L) {
    double v = load(x + i * esz);
    ln->d[k] += v * v;
  }
  memcpy(a, ln->d, sizeof a);
  for (; i + L <= n; i += L) {
    for (size_t l = 0; l < L; l++) {
      double v = load(x + (i + l) * esz);
      a[l] += v * v;
    }
  }
  for (size_t l = 0; i < n; i++, l++) {
    double v = load(x + i * esz);
    a[l] += v * v;
  }
  memcpy(ln->d, a, sizeof a);
}

ALWAYS_INLINE void d_cols(void *acc, const unsigned char *x, size_t n,
                          size_t nrows, size_t esz, ld_fn load)
{
  double *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * esz)
    for (size_t i = 0; i < n; i++) {
      double v = load(x + i * esz);
      o[i] += v * v;
    }
}

ALWAYS_INLINE void d_rows(void *acc, const unsigned char *x, size_t n,
                          size_t nrows, size_t esz, ld_fn load)
{
  double *o = acc;
  size_t w = 1;
  while (w < n)
    w *= 2;
  /* Fixed-width trees so short rows unroll; see tree_n(). */
  if (w <= 4) {
    for (size_t r = 0; r < nrows; r++, x += n * esz) {
      double a[4] = { 0, 0, 0, 0 };
      for (size_t i = 0; i < n; i++) {
        double v = load(x + i * esz);
        a[i] = v * v;
      }
      o[r] += w == 4 ? (a[0] + a[2]) + (a[1] + a[3]) : a[0] + a[1];
    }
    return;
  }
  if (w == 8) {
    for (size_t r = 0; r < nrows; r++, x += n * esz) {
      double a[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
      for (size_t i = 0; i < n; i++) {
        double v = load(x + i * esz);
        a[i] = v * v;
      }
      o[r] += ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
    }
    return;
  }
  if (n == L) {
    for (size_t r = 0; r < nrows; r++, x += L * esz) {
      double a[L];
      for (size_t i = 0; i < L; i++) {
        double v = load(x + i * esz);
        a[i] = v * v;
      }
      o[r] += tree(a);
    }
    return;
  }
  for (size_t r = 0; r < nrows; r++, x += n * esz) {
    if (n <= L) {
      double a[L] = { 0 };
      for (size_t i = 0; i < n; i++) {
        double v = load(x + i * esz);
        a[i] = v * v;
      }
      o[r] += tree(a);
    } else {
      union rd__lanes ln;
      memset(ln.d, 0, sizeof ln.d);
      d_run(&ln, x, n, 0, esz, load);
      rd__flush_d(&ln, &o[r]);
    }
  }
}

/* One instance per element type: thin functions a debugger can see. */
#define D_INSTANCE(name, esz, load)                                            \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    d_run(ln, x, n, pos, esz, load);                                           \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    d_cols(acc, x, n, nrows, esz, load);                                       \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    d_rows(acc, x, n, nrows, esz, load);                                       \
  }

D_INSTANCE(f32, 4, ld_f32)
D_INSTANCE(f16, 2, ld_f16)
D_INSTANCE(bf16, 2, ld_bf16)

/* ------------------------------------------------------------------ */
/* float64: Kahan sums in three ranges (Blue)                         */
/* ------------------------------------------------------------------ */

static void run_f64(union rd__lanes *ln, const unsigned char *x, size_t n,
                    uint64_t pos)
{
  size_t k = (size_t)(pos % L), i = 0;
#define LANE_ADD(k, v) lane_blue_add(ln, (k), (v))
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    LANE_ADD(k, ld_f64(x + i * 8));
  for (; i + L <= n; i += L) {
    double v[L];
    int mid = 1;
    memcpy(v, x + i * 8, sizeof v);
    for (size_t l = 0; l < L; l++) {
      double a = fabs(v[l]);
      mid &= is_mid(a);
    }
    if (mid) {
      /* Same operations as blue_add() for mid-range values, vectorisable. */
      double s[L], c[L];
      memcpy(s, ln->b.ms, sizeof s);
      memcpy(c, ln->b.mc, sizeof c);
      for (size_t l = 0; l < L; l++) {
        double u = v[l] * v[l] - c[l];
        double t = s[l] + u;
        c[l] = (t - s[l]) - u;
        s[l] = t;
      }
      memcpy(ln->b.ms, s, sizeof s);
      memcpy(ln->b.mc, c, sizeof c);
    } else {
      for (size_t l = 0; l < L; l++)
        LANE_ADD(l, v[l]);
    }
  }
  for (size_t l = 0; i < n; i++, l++)
    LANE_ADD(l, ld_f64(x + i * 8));
#undef LANE_ADD
}

/* Compensated lane values s - c, combined in the fixed tree. */
static double tree_kahan(const double *s, const double *c)
{
  double a[L];
  for (size_t l = 0; l < L; l++)
    a[l] = s[l] - c[l];
  return tree(a);
}

void rd__flush_f64(union rd__lanes *ln, void *acc)
{
  struct rd__blue *o = acc;
  double sp[L];
  kahan(&o->bs, &o->bc, tree_kahan(ln->b.bs, ln->b.bc));
  kahan(&o->ms, &o->mc, tree_kahan(ln->b.ms, ln->b.mc));
  kahan(&o->ss, &o->sc, tree_kahan(ln->b.ss, ln->b.sc));
  memcpy(sp, ln->b.sp, sizeof sp);
  o->sp += tree(sp);
  memset(&ln->b, 0, sizeof ln->b);
}

static void cols_f64(void *acc, const unsigned char *x, size_t n, size_t nrows)
{
  struct rd__blue *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 8)
    for (size_t i = 0; i < n; i++) {
      acc_blue_add(&o[i], ld_f64(x + i * 8));
    }
}

/* A short run has at most one element per lane, and a lane holding one
 * term v has s - c = v exactly, so the lane values are just the terms. */
void rd__rows_f64_short(void *acc, const unsigned char *x, size_t n,
                        size_t nrows)
{
  struct rd__blue *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 8) {
    {
      double b[L] = { 0 }, m[L] = { 0 }, s[L] = { 0 }, sp[L] = { 0 }, v0[L];
      int mid = 1;
      for (size_t i = 0; i < n; i++) {
        double a;
        v0[i] = ld_f64(x + i * 8);
        a = fabs(v0[i]);
        mid &= is_mid(a);
      }
      if (mid) {
        /* Only mid-range terms: the other trees would be exactly +0. */
        for (size_t i = 0; i < n; i++)
          m[i] = v0[i] * v0[i];
        kahan(&o[r].bs, &o[r].bc, 0.0);
        kahan(&o[r].ms, &o[r].mc, tree_n(m, n));
        kahan(&o[r].ss, &o[r].sc, 0.0);
        continue;
      }
      for (size_t i = 0; i < n; i++) {
        double v = v0[i], a = fabs(v);
        if (is_mid(a)) {
          m[i] = v * v;
        } else if (a < BLUE_SMALL) {
          double y = v * BLUE_UP;
          s[i] = y * y;
        } else if (a <= DBL_MAX) {
          double y = v * BLUE_DOWN;
          b[i] = y * y;
        } else {
          sp[i] = a;
        }
      }
      kahan(&o[r].bs, &o[r].bc, tree_n(b, n));
      kahan(&o[r].ms, &o[r].mc, tree_n(m, n));
      kahan(&o[r].ss, &o[r].sc, tree_n(s, n));
      o[r].sp += tree_n(sp, n);
    }
  }
}

static void rows_f64(void *acc, const unsigned char *x, size_t n, size_t nrows)
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
/* 32-bit integers: exact, squares < 2^64 split into 32-bit halves     */
/* ------------------------------------------------------------------ */

I32_RUN(i32, sq_i32)
I32_COLS(i32, sq_i32)
I32_ROWS(i32, sq_i32)
I32_RUN(u32, sq_u32)
I32_COLS(u32, sq_u32)
I32_ROWS(u32, sq_u32)

/* The u128 fits any int32 sum: count < 2^62 elements, squares <= 2^64. */
void rd__flush_u128(union rd__lanes *ln, void *acc)
{
  u128 *o = acc;
  *o += ln->w.lo;
  memset(&ln->w, 0, sizeof ln->w);
}

/* ------------------------------------------------------------------ */
/* 64-bit integers: u128 squares, 192-bit sums                         */
/* ------------------------------------------------------------------ */

static inline u128 sq_i64(const unsigned char *p)
{
  int64_t v;
  uint64_t a;
  memcpy(&v, p, sizeof v);
  a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  return (u128)a * a;
}

static inline u128 sq_u64(const unsigned char *p)
{
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return (u128)v * v;
}

static inline void add192(struct rd__u192 *a, u128 v)
{
  a->lo += v;
  a->hi += a->lo < v;
}

typedef u128 (*sq64_fn)(const unsigned char *p);

ALWAYS_INLINE void i64_run(union rd__lanes *ln, const unsigned char *x,
                           size_t n, sq64_fn sq)
{
  struct rd__u192 a = ln->w;
  for (size_t i = 0; i < n; i++)
    add192(&a, sq(x + i * 8));
  ln->w = a;
}

ALWAYS_INLINE void i64_cols(void *acc, const unsigned char *x, size_t n,
                            size_t nrows, sq64_fn sq)
{
  struct rd__u192 *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 8)
    for (size_t i = 0; i < n; i++)
      add192(&o[i], sq(x + i * 8));
}

ALWAYS_INLINE void i64_rows(void *acc, const unsigned char *x, size_t n,
                            size_t nrows, sq64_fn sq)
{
  struct rd__u192 *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 8)
    for (size_t i = 0; i < n; i++)
      add192(&o[r], sq(x + i * 8));
}

#define I64_INSTANCE(name, sq)                                                 \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    (void)pos;                                                                 \
    i64_run(ln, x, n, sq);                                                     \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    i64_cols(acc, x, n, nrows, sq);                                            \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    i64_rows(acc, x, n, nrows, sq);                                            \
  }

I64_INSTANCE(i64, sq_i64)
I64_INSTANCE(u64, sq_u64)

static void flush_u192(union rd__lanes *ln, void *acc)
{
  struct rd__u192 *o = acc;
  add192(o, ln->w.lo);
  o->hi += ln->w.hi;
  memset(&ln->w, 0, sizeof ln->w);
}

/* ------------------------------------------------------------------ */
/* Table, merge, value                                                */
/* ------------------------------------------------------------------ */

static const struct rd__kernel portable[RD__K_COUNT] = {
  [RD__K_F32] = { RD__ACC_F64, 8, run_f32, rd__flush_d, cols_f32, rows_f32 },
  [RD__K_F16] = { RD__ACC_F64, 8, run_f16, rd__flush_d, cols_f16, rows_f16 },
  [RD__K_BF16] = { RD__ACC_F64, 8, run_bf16, rd__flush_d, cols_bf16,
                   rows_bf16 },
  [RD__K_F64] = { RD__ACC_BLUE, sizeof(struct rd__blue), run_f64, rd__flush_f64,
                  cols_f64, rows_f64 },
  [RD__K_I32] = { RD__ACC_U128, 16, run_i32, rd__flush_u128, cols_i32,
                  rows_i32 },
  [RD__K_U32] = { RD__ACC_U128, 16, run_u32, rd__flush_u128, cols_u32,
                  rows_u32 },
  [RD__K_I64] = { RD__ACC_U192, sizeof(struct rd__u192), run_i64, flush_u192,
                  cols_i64, rows_i64 },
  [RD__K_U64] = { RD__ACC_U192, sizeof(struct rd__u192), run_u64, flush_u192,
                  cols_u64, rows_u64 },
};

/* Filled once before main() (single-threaded), read-only afterwards. */
static struct rd__kernel simd[RD__K_COUNT], simd512[RD__K_COUNT];
static int simd_ok, simd512_ok;
static int active = RD__IMPL_PORTABLE;

/* The rows() of every SIMD kernel that rd__rows_out() has a vector form
 * for (squares of kernels.c's tables, ops.c's Sum and L1 kernels as
 * rd__kernels_avx2_sum()/_avx512_sum() hand them out), with its dtype,
 * term and implementation: a kernel is recognised by its rows() pointer,
 * so the portable kernels never take a vector form.  Filled before
 * main(), read-only afterwards. */
typedef void (*rows_fn)(void *acc, const unsigned char *x, size_t n,
                        size_t nrows);
static struct vec_rows {
  rows_fn rows;
  int dtype, term, impl;
} vec_rows[2 * (4 + 6)];
static size_t nvec_rows;

static void vec_rows_add(rows_fn rows, int dtype, int term, int impl)
{
  if (rows && nvec_rows < sizeof vec_rows / sizeof vec_rows[0])
    vec_rows[nvec_rows++] = (struct vec_rows){ rows, dtype, term, impl };
}

/* The vector form registered for kernel k (a SIMD path's) and dtype, or
 * NULL (a portable kernel, or another kind). */
static const struct vec_rows *vec_rows_of(const struct rd__kernel *k, int dtype)
{
  for (size_t i = 0; i < nvec_rows; i++)
    if (vec_rows[i].rows == k->rows && vec_rows[i].dtype == dtype)
      return &vec_rows[i];
  return NULL;
}

/* Registers the vector forms of one SIMD implementation whose table is
 * `tab` and whose Sum/L1 kernels come from `sum`. */
static void vec_rows_fill(const struct rd__kernel *tab, int impl,
                          int (*sum)(int, int, struct rd__kernel *))
{
  static const int sq[4][2] = { { RD__K_F32, RD_FLOAT32 },
                                { RD__K_F16, RD_FLOAT16 },
                                { RD__K_BF16, RD_BFLOAT16 },
                                { RD__K_F64, RD_FLOAT64 } };
  for (size_t i = 0; i < 4; i++)
    vec_rows_add(tab[sq[i][0]].rows, sq[i][1], RD__TERM_SQ, impl);
  for (size_t i = 0; i < 3; i++)
    for (int absval = 0; absval <= 1; absval++) {
      struct rd__kernel k;
      memset(&k, 0, sizeof k);
      if (sum(sq[i][1], absval, &k) == 0)
        vec_rows_add(k.rows, sq[i][1], absval ? RD__TERM_ABS : RD__TERM_X,
                     impl);
    }
}

static int cpu_has_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  unsigned a, b, c, d;

  __builtin_cpu_init(); /* needed when called from a constructor */
  /* F16C through cpuid: clang 14's __builtin_cpu_supports lacks "f16c"
   * (the fuzz targets are built with clang).  The AVX2 check already
   * covers the OS saving the YMM state. */
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
#else
  return 0;
#endif
}

/* AVX-512 F, BW, VL and DQ, and the OS saving the opmask and ZMM state
 * (XCR0 bits 1, 2, 5, 6, 7).  libgcc and compiler-rt check XCR0 before
 * reporting "avx512f" too; the explicit XGETBV keeps this honest on any
 * compiler. */
static int cpu_has_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
  unsigned a, b, c, d, lo, hi;

  __builtin_cpu_init();
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0)
    return 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  (void)hi;
  return (lo & 0xe6) == 0xe6 && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
#else
  return 0;
#endif
}

/* The best available implementation at or below `want`. */
static int best_at_most(int want)
{
  if (want >= RD__IMPL_AVX512 && simd512_ok)
    return RD__IMPL_AVX512;
  if (want >= RD__IMPL_AVX2 && simd_ok)
    return RD__IMPL_AVX2;
  return RD__IMPL_PORTABLE;
}

/* Runs before main() and before any thread exists, so the choice is made
 * exactly once without locking.  REDUCED_KERNELS names the widest path
 * allowed (see kernels.h). */
__attribute__((constructor)) static void kernels_init(void)
{
  const char *env = getenv("REDUCED_KERNELS");
  int want = RD__IMPL_AVX512;
  memcpy(simd, portable, sizeof simd);
  simd_ok = cpu_has_avx2() && rd__kernels_avx2_fill(simd) == 0;
  memcpy(simd512, simd, sizeof simd512);
  simd512_ok = simd_ok && cpu_has_avx512() &&
               rd__kernels_avx512_fill(simd512) == 0;
  if (simd_ok)
    vec_rows_fill(simd, RD__IMPL_AVX2, rd__kernels_avx2_sum);
  if (simd512_ok)
    vec_rows_fill(simd512, RD__IMPL_AVX512, rd__kernels_avx512_sum);
  if (env && strcmp(env, "portable") == 0)
    want = RD__IMPL_PORTABLE;
  else if (env && strcmp(env, "avx2") == 0)
    want = RD__IMPL_AVX2;
  active = best_at_most(want);
}

const struct rd__kernel *rd__kernel_impl(int kernel_id, int impl)
{
  if (kernel_id < 0 || kernel_id >= RD__K_COUNT)
    return NULL;
  if (impl == RD__IMPL_PORTABLE)
    return &portable[kernel_id];
  if (impl == RD__IMPL_AVX2 && simd_ok)
    return &simd[kernel_id];
  if (impl == RD__IMPL_AVX512 && simd512_ok)
    return &simd512[kernel_id];
  return NULL;
}

const struct rd__kernel *rd__kernel_for(int kernel_id)
{
  return rd__kernel_impl(kernel_id, active);
}

int rd__kernels_active(void)
{
  return active;
}

const char *rd__kernels_name(int impl)
{
  switch (impl) {
  case RD__IMPL_PORTABLE: return "portable";
  case RD__IMPL_AVX2: return "avx2";
  case RD__IMPL_AVX512: return "avx512";
  default: return "?";
  }
}

int rd__kernels_select(int impl)
{
  if (impl < 0 || impl >= RD__IMPL_COUNT || best_at_most(impl) != impl)
    return -1;
  active = impl;
  return 0;
}

int rd__kernel_id(int dtype)
{
  switch (dtype) {
  case RD_FLOAT32: return RD__K_F32;
  case RD_FLOAT16: return RD__K_F16;
  case RD_BFLOAT16: return RD__K_BF16;
  case RD_FLOAT64: return RD__K_F64;
  case RD_INT32: return RD__K_I32;
  case RD_UINT32: return RD__K_U32;
  case RD_INT64: return RD__K_I64;
  case RD_UINT64: return RD__K_U64;
  default: return -1;
  }
}

void rd__acc_merge(enum rd__acc_class cls, void *dst, const void *src)
{
  switch (cls) {
  case RD__ACC_F64: {
    double a, b;
    memcpy(&a, dst, sizeof a);
    memcpy(&b, src, sizeof b);
    a += b;
    memcpy(dst, &a, sizeof a);
    break;
  }
  case RD__ACC_BLUE: {
    struct rd__blue *d = dst;
    const struct rd__blue *s = src;
    kahan(&d->bs, &d->bc, s->bs - s->bc);
    kahan(&d->ms, &d->mc, s->ms - s->mc);
    kahan(&d->ss, &d->sc, s->ss - s->sc);
    d->sp += s->sp;
    break;
  }
  case RD__ACC_U128: {
    u128 a, b;
    memcpy(&a, dst, sizeof a);
    memcpy(&b, src, sizeof b);
    a += b;
    memcpy(dst, &a, sizeof a);
    break;
  }
  case RD__ACC_U192: {
    struct rd__u192 *d = dst;
    const struct rd__u192 *s = src;
    add192(d, s->lo);
    d->hi += s->hi;
    break;
  }
  case RD__ACC_OP: /* merged by the kernel's own merge() */ break;
  }
}

void rd__acc_merge_n(enum rd__acc_class cls, void *dst, const void *src,
                     size_t count)
{
  size_t sz = cls == RD__ACC_F64    ? 8
              : cls == RD__ACC_U128 ? 16
              : cls == RD__ACC_BLUE ? sizeof(struct rd__blue)
                                    : sizeof(struct rd__u192);
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (cls == RD__ACC_BLUE) {
    /* Inlined so the independent accumulators overlap in the pipeline. */
    for (size_t i = 0; i < count; i++) {
      struct rd__blue *a = (struct rd__blue *)(void *)(d + i * sz);
      const struct rd__blue *b =
        (const struct rd__blue *)(const void *)(s + i * sz);
      kahan(&a->bs, &a->bc, b->bs - b->bc);
      kahan(&a->ms, &a->mc, b->ms - b->mc);
      kahan(&a->ss, &a->sc, b->ss - b->sc);
      a->sp += b->sp;
    }
    return;
  }
  for (size_t i = 0; i < count; i++)
    rd__acc_merge(cls, d + i * sz, s + i * sz);
}

/* Sum B*2^1200 + M + S*2^-1200 (or its square root) without overflow or
 * underflow in an intermediate; only the final result may overflow (sum of
 * squares) or round into the subnormal range. */
static double blue_value(const struct rd__blue *a, int l2)
{
  double b = a->bs - a->bc, m = a->ms - a->mc, s = a->ss - a->sc;
  if (a->sp != 0)
    return a->sp; /* NaN if any NaN, else +inf */
  if (b > 0) {
    /* Every big term is > 2^-240 here, so mid and small terms that vanish
     * in the scaling are far below one ulp of b. */
    double t = b + ldexp(m, -1200);
    return l2 ? ldexp(sqrt(t), 600) : ldexp(t, 1200);
  }
  if (!l2)
    return m + ldexp(s, -1200);
  if (s == 0)
    return sqrt(m);
  if (m >= 1)
    return sqrt(m + ldexp(s, -1200));
  if (m > 0)
    return ldexp(sqrt(ldexp(m, 600) + ldexp(s, -600)), -300);
  return ldexp(sqrt(s), -600);
}

double rd__acc_value(enum rd__acc_class cls, const void *acc, int l2)
{
  double v;
  if (cls == RD__ACC_BLUE)
    return blue_value(acc, l2);
  memcpy(&v, acc, sizeof v);
  return l2 ? sqrt(v) : v;
}

void rd__float_store(int dtype, double v, void *dst)
{
  if (isnan(v))
    v = NAN; /* default quiet NaN: payloads depend on operand order */
  if (dtype == RD_FLOAT64) {
    memcpy(dst, &v, sizeof v);
  } else if (dtype == RD_FLOAT32) {
    float f = (float)v; /* one RNE rounding */
    memcpy(dst, &f, sizeof f);
  } else {
    uint16_t h = dtype == RD_FLOAT16 ? rd_f64_to_f16(v) : rd_f64_to_bf16(v);
    memcpy(dst, &h, sizeof h);
  }
}

void rd__accs_out(const struct rd__kernel *k, int dtype, int fin, size_t n,
                  const double *acc, void *out, size_t count)
{
  unsigned char *o = out;
  size_t esz = rd_dtype_size(dtype);
  const struct vec_rows *vf = vec_rows_of(k, dtype);
  /* an AVX-512 kernel: its CPU has the vector form */
  if (vf && vf->impl == RD__IMPL_AVX512 &&
      rd__rows512_store(dtype, fin, n, acc, out, count) == 0)
    return;
  for (size_t i = 0; i < count; i++)
    rd__float_store(dtype, rd__fin_value(acc[i], fin, n), o + i * esz);
}

/* Rows per block: the accumulators of a block stay in L1. */
#define OUT_BLOCK 64

void rd__rows_out(const struct rd__kernel *k, int dtype, void *out,
                  const unsigned char *x, size_t n, size_t nrows, int fin)
{
  unsigned char *o = out;
  size_t esz = rd_dtype_size(dtype);
  union {
    double d[OUT_BLOCK];
    struct rd__blue b[OUT_BLOCK];
  } acc;
  /* A SIMD path's kernel: its vector form (the same bits); the AVX-512
   * one where it has it, else the AVX2 one. */
  const struct vec_rows *vf = n <= L ? vec_rows_of(k, dtype) : NULL;
  if (vf && vf->impl == RD__IMPL_AVX512 &&
      rd__rows512_out(dtype, vf->term, out, x, n, nrows, fin) == 0)
    return;
  if (vf && rd__avx2_rows_out(dtype, vf->term, out, x, n, nrows, fin) == 0)
    return;
  while (nrows > 0) {
    size_t m = nrows < OUT_BLOCK ? nrows : OUT_BLOCK;
    memset(&acc, 0,
           k->acc_class == RD__ACC_BLUE ? m * sizeof acc.b[0]
                                        : m * sizeof acc.d[0]);
    k->rows(&acc, x, n, m);
    if (k->acc_class == RD__ACC_F64 && dtype == RD_FLOAT32) {
      /* The common case, in a loop the compiler can keep simple. */
      for (size_t r = 0; r < m; r++) {
        double v = rd__fin_value(acc.d[r], fin, n);
        float f = isnan(v) ? NAN : (float)v;
        memcpy(o + r * 4, &f, sizeof f);
      }
    } else {
      for (size_t r = 0; r < m; r++)
        rd__float_store(dtype,
                        k->acc_class == RD__ACC_BLUE
                          ? rd__acc_value(k->acc_class, &acc.b[r],
                                          fin == RD__OUT_SQRT)
                          : rd__fin_value(acc.d[r], fin, n),
                        o + r * esz);
    }
    o += m * esz;
    x += m * n * esz;
    nrows -= m;
  }
}
