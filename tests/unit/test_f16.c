/* test_f16.c - bit-exact tests of the float16 / bfloat16 conversions.
 *
 * Two independent oracles:
 *  - a first-principles one written here: the value of every 16-bit pattern
 *    is built with ldexp() from its fields, and a wide value is rounded by
 *    binary search for its two neighbouring patterns and an exact comparison
 *    with their midpoint (the sum of two neighbours has at most p + 2
 *    significant bits, so the midpoint is exact in double);
 *  - for float16, GCC's _Float16 conversions (libgcc soft-fp on x86-64),
 *    when the compiler has the type.
 * Every comparison is on bit patterns.  Random inputs come from a fixed-seed
 * generator, so every run tests the same values.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "f16.h"

/* ---- bits and helpers ---------------------------------------------------- */

static uint32_t f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t f64_bits(double d)
{
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static double bits_f64(uint64_t u)
{
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

static uint64_t rng_state = 0x243f6a8885a308d3u;

/* splitmix64: fixed seed, so the "random" inputs are the same every run. */
static uint64_t rng_next(void)
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Stop at the first mismatch with the input shown, instead of flooding. */
#define EXPECT16(got, want, fmt, ...)                                          \
  do {                                                                         \
    unsigned g_ = (got), w_ = (want);                                          \
    if (g_ != w_)                                                              \
      fail_msg("got 0x%04x want 0x%04x: " fmt, g_, w_, __VA_ARGS__);           \
  } while (0)

/* ---- first-principles oracle --------------------------------------------- */

struct ofmt {
  int p;    /* mantissa bits */
  int emin; /* exponent of the smallest normal */
  int emax; /* exponent of the largest finite */
};

static const struct ofmt O_HALF = { 10, -14, 15 };
static const struct ofmt O_BF16 = { 7, -126, 127 };

static unsigned o_inf(const struct ofmt *f)
{
  return (unsigned)(f->emax - f->emin + 2) << f->p;
}

/* Magnitude of a non-negative, non-NaN pattern; the infinity pattern stands
 * for 2^(emax+1), the next value with an unbounded exponent, which is what
 * IEEE 754 overflow rounds against. */
static double o_value(unsigned pat, const struct ofmt *f)
{
  unsigned ef = pat >> f->p, mant = pat & ((1u << f->p) - 1);
  if (pat >= o_inf(f))
    return ldexp(1.0, f->emax + 1);
  if (ef == 0)
    return ldexp((double)mant, f->emin - f->p);
  return ldexp((double)((1u << f->p) | mant), (int)ef - 1 + f->emin - f->p);
}

/* Signed value of any non-NaN pattern, infinities included. */
static double o_signed_value(unsigned pat, const struct ofmt *f)
{
  unsigned mag = pat & 0x7fff;
  double v = mag == o_inf(f) ? INFINITY : o_value(mag, f);
  return (pat & 0x8000) ? -v : v;
}

static int o_is_nan(unsigned pat, const struct ofmt *f)
{
  return (pat & 0x7fff) > o_inf(f);
}

/* Round a non-NaN double to format f, ties to even, by search. */
static unsigned o_narrow(double x, const struct ofmt *f)
{
  unsigned sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x), vlo, vhi, mid;
  unsigned lo = 0, hi = o_inf(f); /* value(lo) <= a < value(hi) */

  if (a >= o_value(hi, f))
    return sign | hi;
  while (hi - lo > 1) {
    unsigned m = lo + (hi - lo) / 2;
    if (o_value(m, f) <= a)
      lo = m;
    else
      hi = m;
  }
  vlo = o_value(lo, f);
  vhi = o_value(hi, f);
  mid = (vlo + vhi) / 2;
  if (a == vlo || a < mid)
    return sign | lo;
  if (a > mid)
    return sign | hi;
  return sign | ((lo & 1) ? hi : lo);
}

/* Expected NaN from a source NaN: sign, quiet bit, top payload bits. */
static unsigned o_nan_from_f32(uint32_t u, const struct ofmt *f)
{
  return ((u >> 16) & 0x8000) | o_inf(f) | (1u << (f->p - 1)) |
         ((u & 0x7fffff) >> (23 - f->p));
}

static unsigned o_nan_from_f64(uint64_t u, const struct ofmt *f)
{
  return (unsigned)((u >> 48) & 0x8000) | o_inf(f) | (1u << (f->p - 1)) |
         (unsigned)((u & 0xfffffffffffffu) >> (52 - f->p));
}

/* ---- GCC _Float16 oracle ------------------------------------------------- */

#ifdef __FLT16_MAX__
static unsigned gcc_h_bits(_Float16 h)
{
  uint16_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

static _Float16 gcc_bits_h(unsigned u)
{
  uint16_t v = (uint16_t)u;
  _Float16 h;
  memcpy(&h, &v, sizeof h);
  return h;
}

static unsigned gcc_f32_to_f16(float x)
{
  volatile float v = x; /* convert at run time, in libgcc */
  return gcc_h_bits((_Float16)v);
}

static unsigned gcc_f64_to_f16(double x)
{
  volatile double v = x;
  return gcc_h_bits((_Float16)v);
}
#endif

/* ---- checks on one input, every narrowing at once -------------------------- */

static unsigned long n_checked;

static void check_f32(float x)
{
  uint32_t u = f32_bits(x);
  unsigned wh, wb;

  if (isnan(x)) {
    wh = o_nan_from_f32(u, &O_HALF);
    wb = o_nan_from_f32(u, &O_BF16);
  } else {
    wh = o_narrow((double)x, &O_HALF);
    wb = o_narrow((double)x, &O_BF16);
  }
  EXPECT16(rd_f32_to_f16(x), wh, "f32->f16 of 0x%08x", (unsigned)u);
  EXPECT16(rd_f32_to_bf16(x), wb, "f32->bf16 of 0x%08x", (unsigned)u);
#ifdef __FLT16_MAX__
  EXPECT16(rd_f32_to_f16(x), gcc_f32_to_f16(x), "f32->f16 vs gcc of 0x%08x",
           (unsigned)u);
#endif
  n_checked++;
}

static void check_f64(double x)
{
  uint64_t u = f64_bits(x);
  unsigned wh, wb;

  if (isnan(x)) {
    wh = o_nan_from_f64(u, &O_HALF);
    wb = o_nan_from_f64(u, &O_BF16);
  } else {
    wh = o_narrow(x, &O_HALF);
    wb = o_narrow(x, &O_BF16);
  }
  EXPECT16(rd_f64_to_f16(x), wh, "f64->f16 of 0x%016llx",
           (unsigned long long)u);
  EXPECT16(rd_f64_to_bf16(x), wb, "f64->bf16 of 0x%016llx",
           (unsigned long long)u);
#ifdef __FLT16_MAX__
  EXPECT16(rd_f64_to_f16(x), gcc_f64_to_f16(x), "f64->f16 vs gcc of 0x%016llx",
           (unsigned long long)u);
#endif
  n_checked++;
}

/* x, both neighbours in float and in double, both signs; each as float and
 * double where exact. */
static void check_around(double x)
{
  int s;
  for (s = 0; s < 2; s++) {
    double d = s ? -x : x;
    float f = (float)d;
    check_f64(d);
    check_f64(nextafter(d, INFINITY));
    check_f64(nextafter(d, -INFINITY));
    check_f32(f);
    check_f32(nextafterf(f, INFINITY));
    check_f32(nextafterf(f, -INFINITY));
  }
}

/* ---- float16: exhaustive ------------------------------------------------- */

/* Every pattern widens to the oracle's value (NaN: quiet, payload kept). */
static void test_f16_widen_all(void **state)
{
  unsigned h;
  (void)state;
  for (h = 0; h <= 0xffff; h++) {
    uint32_t fb = f32_bits(rd_f16_to_f32((uint16_t)h));
    uint64_t db = f64_bits(rd_f16_to_f64((uint16_t)h));
    uint32_t wf;
    uint64_t wd;
    if (o_is_nan(h, &O_HALF)) {
      wf = ((uint32_t)(h & 0x8000) << 16) | 0x7fc00000 |
           ((uint32_t)(h & 0x3ff) << 13);
      wd = ((uint64_t)(h & 0x8000) << 48) | 0x7ff8000000000000u |
           ((uint64_t)(h & 0x3ff) << 42);
    } else {
      double v = o_signed_value(h, &O_HALF);
      wf = f32_bits((float)v); /* exact: halfs are floats */
      wd = f64_bits(v);
    }
    if (fb != wf)
      fail_msg("f16 0x%04x -> f32 0x%08x want 0x%08x", h, (unsigned)fb,
               (unsigned)wf);
    if (db != wd)
      fail_msg("f16 0x%04x -> f64 0x%016llx want 0x%016llx", h,
               (unsigned long long)db, (unsigned long long)wd);
#ifdef __FLT16_MAX__
    {
      volatile _Float16 g = gcc_bits_h(h);
      assert_int_equal(fb, f32_bits((float)g));
      assert_int_equal(db, f64_bits((double)g));
    }
#endif
  }
}

/* half -> float -> half and half -> double -> half are the identity, except
 * that a NaN comes back quiet. */
static void test_f16_roundtrip_all(void **state)
{
  unsigned h;
  (void)state;
  for (h = 0; h <= 0xffff; h++) {
    unsigned want = o_is_nan(h, &O_HALF) ? (h | 0x0200) : h;
    EXPECT16(rd_f32_to_f16(rd_f16_to_f32((uint16_t)h)), want, "via f32 0x%04x",
             h);
    EXPECT16(rd_f64_to_f16(rd_f16_to_f64((uint16_t)h)), want, "via f64 0x%04x",
             h);
  }
}

/* Every finite half, every midpoint between consecutive halfs (including
 * the one between 65504 and 65536, the overflow threshold) and one float and
 * one double ulp either side of each, both signs. */
static void test_f16_midpoints(void **state)
{
  unsigned h;
  (void)state;
  n_checked = 0;
  for (h = 0; h < 0x7c00; h++) {
    double lo = o_value(h, &O_HALF), hi = o_value(h + 1, &O_HALF);
    double mid = (lo + hi) / 2;
    check_around(lo);
    check_around(mid);
    /* The double just above/below a midpoint rounds to float exactly at
         * the midpoint: rounding via float would tie, the direct rounding
         * must not. */
    assert_true((float)nextafter(mid, INFINITY) == (float)mid);
    assert_int_equal(rd_f64_to_f16(nextafter(mid, INFINITY)), h + 1);
    assert_int_equal(rd_f64_to_f16(nextafter(mid, 0)), h);
  }
  assert_int_equal(n_checked, 0x7c00ul * 24); /* every input checked */
}

/* ---- bfloat16: exhaustive ------------------------------------------------ */

static void test_bf16_widen_all(void **state)
{
  unsigned b;
  (void)state;
  for (b = 0; b <= 0xffff; b++) {
    uint32_t fb = f32_bits(rd_bf16_to_f32((uint16_t)b));
    uint64_t db = f64_bits(rd_bf16_to_f64((uint16_t)b));
    uint32_t wf;
    uint64_t wd;
    if (o_is_nan(b, &O_BF16)) {
      /* The top half of a float, quiet bit set. */
      wf = ((uint32_t)b << 16) | 0x400000;
      wd = ((uint64_t)(b & 0x8000) << 48) | 0x7ff8000000000000u |
           ((uint64_t)(b & 0x7f) << 45);
    } else {
      double v = o_signed_value(b, &O_BF16);
      wf = f32_bits((float)v);
      wd = f64_bits(v);
      assert_int_equal(wf, (uint32_t)b << 16);
    }
    if (fb != wf)
      fail_msg("bf16 0x%04x -> f32 0x%08x want 0x%08x", b, (unsigned)fb,
               (unsigned)wf);
    if (db != wd)
      fail_msg("bf16 0x%04x -> f64 0x%016llx want 0x%016llx", b,
               (unsigned long long)db, (unsigned long long)wd);
  }
}

static void test_bf16_roundtrip_all(void **state)
{
  unsigned b;
  (void)state;
  for (b = 0; b <= 0xffff; b++) {
    unsigned want = o_is_nan(b, &O_BF16) ? (b | 0x0040) : b;
    EXPECT16(rd_f32_to_bf16(rd_bf16_to_f32((uint16_t)b)), want,
             "via f32 0x%04x", b);
    EXPECT16(rd_f64_to_bf16(rd_bf16_to_f64((uint16_t)b)), want,
             "via f64 0x%04x", b);
  }
}

/* As for half; also the double-rounding trap for rd_f64_to_bf16: the double
 * one ulp off a midpoint is a float exactly at the midpoint. */
static void test_bf16_midpoints(void **state)
{
  unsigned b;
  unsigned long traps = 0;
  (void)state;
  n_checked = 0;
  for (b = 0; b < 0x7f80; b++) {
    double lo = o_value(b, &O_BF16), hi = o_value(b + 1, &O_BF16);
    double mid = (lo + hi) / 2;
    double up = nextafter(mid, INFINITY), down = nextafter(mid, 0);
    check_around(lo);
    check_around(mid);
    assert_true((float)up == (float)mid);
    assert_true((float)down == (float)mid);
    assert_int_equal(rd_f64_to_bf16(up), b + 1);
    assert_int_equal(rd_f64_to_bf16(down), b);
    assert_int_equal(rd_f64_to_bf16(-up), 0x8000 | (b + 1));
    assert_int_equal(rd_f64_to_bf16(-down), 0x8000 | b);
    /* Count where the float route would have gone wrong. */
    if (rd_f32_to_bf16((float)up) != b + 1 || rd_f32_to_bf16((float)down) != b)
      traps++;
  }
  /* At every midpoint exactly one of the two directions is the trap. */
  assert_int_equal(traps, 0x7f80);
  assert_int_equal(n_checked, 0x7f80ul * 24);
}

/* ---- random inputs over the whole range ---------------------------------- */

/* All float bit patterns are equally likely: NaNs, subnormals, huge. */
static void test_random_f32(void **state)
{
  int i;
  (void)state;
  for (i = 0; i < 2000000; i++)
    check_f32(bits_f32((uint32_t)rng_next()));
}

/* Raw double patterns (mostly far outside both ranges), doubles with an
 * exponent inside the float range, and doubles near the half range. */
static void test_random_f64(void **state)
{
  int i;
  (void)state;
  for (i = 0; i < 1000000; i++) {
    uint64_t r = rng_next(), sm = r & 0x800fffffffffffffu;
    int e = (int)((r >> 52) & 0x7ff);
    check_f64(bits_f64(r));
    /* biased exponents 1023-160 .. 1023+129: bf16 subnormals to overflow */
    check_f64(bits_f64(sm | ((uint64_t)(863 + e % 290) << 52)));
    /* biased exponents 1023-27 .. 1023+16: half subnormals to overflow */
    check_f64(bits_f64(sm | ((uint64_t)(996 + e % 44) << 52)));
  }
}

/* Subnormal halfs and bf16s from float and double sources, densely. */
static void test_random_subnormals(void **state)
{
  int i;
  (void)state;
  for (i = 0; i < 500000; i++) {
    uint64_t r = rng_next();
    double t = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
    check_f64(ldexp(t, -13));  /* below 2^-14: half subnormals */
    check_f64(ldexp(t, -125)); /* below 2^-126: bf16 subnormals */
    check_f32(ldexpf((float)t, -13));
    check_f32(bits_f32((uint32_t)r & 0x807fffffu)); /* float subnormals */
  }
}

/* ---- named edge cases, expected bits worked out by hand ------------------- */

/* half: sign | 5-bit exponent (bias 15) | 10-bit mantissa;
 * value = 2^(e-15) * 1.m, or m * 2^-24 when e == 0. */
static void test_f16_zeros_and_subnormals(void **state)
{
  (void)state;
  assert_int_equal(rd_f32_to_f16(0.0f), 0x0000);
  assert_int_equal(rd_f32_to_f16(-0.0f), 0x8000);
  assert_int_equal(rd_f64_to_f16(0.0), 0x0000);
  assert_int_equal(rd_f64_to_f16(-0.0), 0x8000);
  /* 2^-24 = 1 * 2^-24: the smallest subnormal, mantissa 1. */
  assert_int_equal(rd_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(rd_f64_to_f16(0x1p-24), 0x0001);
  /* 2^-25 is exactly half of it: tie between 0 and 1, even is 0. */
  assert_int_equal(rd_f32_to_f16(0x1p-25f), 0x0000);
  assert_int_equal(rd_f64_to_f16(0x1p-25), 0x0000);
  assert_int_equal(rd_f32_to_f16(-0x1p-25f), 0x8000);
  assert_int_equal(rd_f64_to_f16(-0x1p-25), 0x8000);
  /* One ulp above 2^-25 is past the tie: up to the smallest subnormal. */
  assert_int_equal(rd_f32_to_f16(0x1.000002p-25f), 0x0001);
  assert_int_equal(rd_f64_to_f16(0x1.0000000000001p-25), 0x0001);
  assert_int_equal(rd_f64_to_f16(-0x1.0000000000001p-25), 0x8001);
  /* Far below: signed zero. */
  assert_int_equal(rd_f32_to_f16(0x1p-149f), 0x0000);
  assert_int_equal(rd_f64_to_f16(-0x1p-1074), 0x8000);
  /* 1.5 * 2^-24: tie between 1 and 2, even is 2; 2.5 * 2^-24: 2 again. */
  assert_int_equal(rd_f32_to_f16(0x1.8p-24f), 0x0002);
  assert_int_equal(rd_f64_to_f16(0x1.4p-23), 0x0002);
  /* Largest subnormal 1023 * 2^-24 = 0x1.ff8p-15: mantissa 0x3ff. */
  assert_int_equal(rd_f32_to_f16(0x1.ff8p-15f), 0x03ff);
  /* 2047 * 2^-25: tie between 0x03ff (odd) and 2^-14 = 0x0400: up, the
     * carry out of the subnormal mantissa giving the smallest normal. */
  assert_int_equal(rd_f64_to_f16(0x1.ffcp-15), 0x0400);
  /* 2^-14: exponent field 1, mantissa 0. */
  assert_int_equal(rd_f32_to_f16(0x1p-14f), 0x0400);
}

static void test_f16_overflow(void **state)
{
  (void)state;
  /* 65504 = 2^15 * 1.1111111111b: exponent 30, mantissa 0x3ff. */
  assert_int_equal(rd_f32_to_f16(65504.0f), 0x7bff);
  assert_int_equal(rd_f64_to_f16(65504.0), 0x7bff);
  /* The half ulp above 65504 is 16: below 65520 rounds down. */
  assert_int_equal(rd_f64_to_f16(65519.99), 0x7bff);
  assert_int_equal(rd_f32_to_f16(65519.99f), 0x7bff); /* 65519.9921875f */
  /* 65520 is the tie between 0x7bff (odd) and 2^16: to inf. */
  assert_int_equal(rd_f32_to_f16(65520.0f), 0x7c00);
  assert_int_equal(rd_f64_to_f16(65520.0), 0x7c00);
  assert_int_equal(rd_f64_to_f16(-65520.0), 0xfc00);
  assert_int_equal(rd_f32_to_f16(65536.0f), 0x7c00);
  assert_int_equal(rd_f32_to_f16(0x1.fffffep127f), 0x7c00);
  assert_int_equal(rd_f64_to_f16(1e300), 0x7c00);
  assert_int_equal(rd_f64_to_f16(-1e300), 0xfc00);
  assert_int_equal(rd_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(rd_f32_to_f16(-INFINITY), 0xfc00);
  assert_int_equal(rd_f64_to_f16(INFINITY), 0x7c00);
  assert_int_equal(rd_f64_to_f16(-INFINITY), 0xfc00);
}

static void test_f16_ties_near_one(void **state)
{
  (void)state;
  /* 1.0 = 0x3c00; the half ulp above 1 is 2^-11. */
  assert_int_equal(rd_f32_to_f16(1.0f), 0x3c00);
  /* 1 + 2^-11: tie between 0x3c00 (even) and 0x3c01: down. */
  assert_int_equal(rd_f32_to_f16(0x1.002p0f), 0x3c00);
  assert_int_equal(rd_f64_to_f16(0x1.002p0), 0x3c00);
  /* 1 + 3 * 2^-11: tie between 0x3c01 and 0x3c02 (even): up. */
  assert_int_equal(rd_f32_to_f16(0x1.006p0f), 0x3c02);
  assert_int_equal(rd_f64_to_f16(0x1.006p0), 0x3c02);
  /* One float ulp (2^-23) above the first tie: up to 0x3c01. */
  assert_int_equal(rd_f32_to_f16(0x1.002002p0f), 0x3c01);
  assert_int_equal(rd_f32_to_f16(-0x1.002002p0f), 0xbc01);
}

static void test_f16_nan(void **state)
{
  (void)state;
  /* quiet NaN 0x7fc00000: mantissa top bit is the quiet bit -> 0x7e00 */
  assert_int_equal(rd_f32_to_f16(bits_f32(0x7fc00000u)), 0x7e00);
  /* 0x7f800001: payload only in bits dropped by >> 13; quiet bit set, so
     * 0x7e00 and not inf 0x7c00. Negative: 0xfe00. */
  assert_int_equal(rd_f32_to_f16(bits_f32(0x7f800001u)), 0x7e00);
  assert_int_equal(rd_f32_to_f16(bits_f32(0xff800001u)), 0xfe00);
  /* signalling 0x7fa00000: mantissa 0x200000 >> 13 = 0x100, | 0x200 */
  assert_int_equal(rd_f32_to_f16(bits_f32(0x7fa00000u)), 0x7f00);
  /* 0xffffe000: all ten top payload bits kept -> 0xffff */
  assert_int_equal(rd_f32_to_f16(bits_f32(0xffffe000u)), 0xffff);
  /* double: 0x7ff0000000000001 -> 0x7e00; 0x7ff4000000000000 has payload
     * 0x4000000000000 >> 42 = 0x100 -> 0x7f00; 0xfff8... -> 0xfe00 */
  assert_int_equal(rd_f64_to_f16(bits_f64(0x7ff0000000000001u)), 0x7e00);
  assert_int_equal(rd_f64_to_f16(bits_f64(0x7ff4000000000000u)), 0x7f00);
  assert_int_equal(rd_f64_to_f16(bits_f64(0xfff8000000000000u)), 0xfe00);
}

static void test_f16_widen_named(void **state)
{
  (void)state;
  /* 2^-24: float exponent 127 - 24 = 103 = 0x67 -> 0x33800000 */
  assert_int_equal(f32_bits(rd_f16_to_f32(0x0001)), 0x33800000u);
  /* 1023 * 2^-24 = 1.1111111110b * 2^-15: exponent 112, mantissa
     * 0x1ff << 14 = 0x7fc000 -> 0x387fc000 */
  assert_int_equal(f32_bits(rd_f16_to_f32(0x03ff)), 0x387fc000u);
  assert_int_equal(f32_bits(rd_f16_to_f32(0x0400)), 0x38800000u); /* 2^-14 */
  assert_int_equal(f32_bits(rd_f16_to_f32(0x3c00)), 0x3f800000u); /* 1 */
  /* 65504: exponent 127 + 15 = 0x8e, mantissa 0x3ff << 13 -> 0x477fe000 */
  assert_int_equal(f32_bits(rd_f16_to_f32(0x7bff)), 0x477fe000u);
  assert_int_equal(f32_bits(rd_f16_to_f32(0x8000)), 0x80000000u);
  assert_int_equal(f32_bits(rd_f16_to_f32(0x7c00)), 0x7f800000u);
  assert_int_equal(f32_bits(rd_f16_to_f32(0xfc00)), 0xff800000u);
  assert_int_equal(f32_bits(rd_f16_to_f32(0x7e00)), 0x7fc00000u);
  /* signalling 0x7c01: payload 1 << 13, quiet bit set -> 0x7fc02000 */
  assert_int_equal(f32_bits(rd_f16_to_f32(0x7c01)), 0x7fc02000u);
  /* double: 2^-24 has exponent 1023 - 24 = 999 = 0x3e7 */
  assert_int_equal(f64_bits(rd_f16_to_f64(0x0001)), 0x3e70000000000000u);
  /* 65504: exponent 1038 = 0x40e, mantissa 0x3ff << 42 */
  assert_int_equal(f64_bits(rd_f16_to_f64(0x7bff)), 0x40effc0000000000u);
  assert_int_equal(f64_bits(rd_f16_to_f64(0x8000)), 0x8000000000000000u);
  assert_int_equal(f64_bits(rd_f16_to_f64(0x7c01)), 0x7ff8040000000000u);
}

/* Doubles that a double -> float -> half route would round twice. */
static void test_f16_double_rounding(void **state)
{
  (void)state;
  /* 1 + 2^-11 + 2^-40: as float it is the tie 1 + 2^-11 (-> 0x3c00), but
     * it is above the tie, so 0x3c01. */
  assert_true((float)(0x1.002p0 + 0x1p-40) == 0x1.002p0f);
  assert_int_equal(rd_f64_to_f16(0x1.002p0 + 0x1p-40), 0x3c01);
  /* 1 + 3 * 2^-11 - 2^-40: float gives the tie (-> 0x3c02); below it: 0x3c01 */
  assert_int_equal(rd_f64_to_f16(0x1.006p0 - 0x1p-40), 0x3c01);
  /* 2^-25 + 2^-60: float gives 2^-25 (-> 0); above the tie: 0x0001 */
  assert_int_equal(rd_f64_to_f16(0x1p-25 + 0x1p-60), 0x0001);
  /* 65520 - 2^-30: float gives 65520 (-> inf); below the tie: 65504 */
  assert_true((float)(65520.0 - 0x1p-30) == 65520.0f);
  assert_int_equal(rd_f64_to_f16(65520.0 - 0x1p-30), 0x7bff);
}

/* bfloat16: the top 16 bits of a float (8-bit exponent, 7-bit mantissa). */
static void test_bf16_named(void **state)
{
  (void)state;
  assert_int_equal(rd_f32_to_bf16(1.0f), 0x3f80);
  assert_int_equal(rd_f32_to_bf16(-0.0f), 0x8000);
  assert_int_equal(rd_f64_to_bf16(-0.0), 0x8000);
  /* 0x3f808000 = 1 + 2^-8: tie between 0x3f80 (even) and 0x3f81: down */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x3f808000u)), 0x3f80);
  /* 0x3f808001: just above the tie: up */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x3f808001u)), 0x3f81);
  /* 0x3f818000: tie between 0x3f81 and 0x3f82 (even): up */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x3f818000u)), 0x3f82);
  assert_int_equal(rd_f32_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(rd_f32_to_bf16(-INFINITY), 0xff80);
  assert_int_equal(rd_f64_to_bf16(-INFINITY), 0xff80);
}

static void test_bf16_nan(void **state)
{
  (void)state;
  /* 0x7f800001: the payload is only in the low 16 bits; plain RNE on the
     * bits would give 0x7f80 = inf.  Quiet bit 0x40 set: 0x7fc0. */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7f800001u)), 0x7fc0);
  assert_int_equal(rd_f32_to_bf16(bits_f32(0xff800001u)), 0xffc0);
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7fc00000u)), 0x7fc0);
  /* 0x7f810000 (signalling, payload bit 16) -> 0x01 | 0x40 -> 0x7fc1 */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7f810000u)), 0x7fc1);
  /* 0xffffffff: must not carry into the sign: 0xffff */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0xffffffffu)), 0xffff);
  /* double 0x7ff0000000000001 -> 0x7fc0; 0x7ff0200000000000 has payload
     * 1 << 45, the lowest bit kept -> 0x7fc1 */
  assert_int_equal(rd_f64_to_bf16(bits_f64(0x7ff0000000000001u)), 0x7fc0);
  assert_int_equal(rd_f64_to_bf16(bits_f64(0x7ff0200000000000u)), 0x7fc1);
  /* widening a signalling bf16 NaN sets the quiet bit */
  assert_int_equal(f32_bits(rd_bf16_to_f32(0x7f81)), 0x7fc10000u);
  assert_int_equal(f32_bits(rd_bf16_to_f32(0xffff)), 0xffff0000u);
}

static void test_bf16_overflow(void **state)
{
  (void)state;
  /* bf16 max is 0x7f7f = 0x1.fep127; the tie with 2^128 is 0x7f7f8000. */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7f7fffffu)), 0x7f80); /* FLT_MAX */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0xff7fffffu)), 0xff80);
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7f7f7fffu)), 0x7f7f);
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7f7f8000u)), 0x7f80); /* odd: up */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x7f7e8000u)), 0x7f7e); /* even */
  assert_int_equal(rd_f64_to_bf16(0x1.ffp127), 0x7f80);
  assert_int_equal(rd_f64_to_bf16(1e39), 0x7f80);
  assert_int_equal(rd_f64_to_bf16(-1.7976931348623157e308), 0xff80);
}

static void test_bf16_subnormals(void **state)
{
  (void)state;
  /* bf16 subnormal quantum is 2^-133 = float bits 0x00010000. */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x00000001u)), 0x0000);
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x00008000u)), 0x0000); /* tie */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x00008001u)), 0x0001);
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x00018000u)), 0x0002); /* tie */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x00028000u)), 0x0002); /* tie */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x80008001u)), 0x8001);
  /* the largest float subnormal rounds up into the smallest normal */
  assert_int_equal(rd_f32_to_bf16(bits_f32(0x007fffffu)), 0x0080);
  assert_int_equal(rd_f64_to_bf16(0x1p-133), 0x0001);
  assert_int_equal(rd_f64_to_bf16(0x1.8p-133), 0x0002); /* tie: even */
  assert_int_equal(rd_f64_to_bf16(0x1p-200), 0x0000);
  assert_int_equal(rd_f64_to_bf16(-0x1p-200), 0x8000);
  /* widening: 0x0001 is 2^-133; double exponent 1023 - 133 = 0x37a */
  assert_int_equal(f32_bits(rd_bf16_to_f32(0x0001)), 0x00010000u);
  assert_int_equal(f64_bits(rd_bf16_to_f64(0x0001)), 0x37a0000000000000u);
  assert_int_equal(f64_bits(rd_bf16_to_f64(0x3f80)), 0x3ff0000000000000u);
}

/* Doubles that a double -> float -> bf16 route would round twice. */
static void test_bf16_double_rounding(void **state)
{
  (void)state;
  /* 1 + 2^-8 + 2^-30: the float is the tie 0x3f808000 (-> 0x3f80); above
     * it: 0x3f81 */
  assert_int_equal(f32_bits((float)(0x1.01p0 + 0x1p-30)), 0x3f808000u);
  assert_int_equal(rd_f64_to_bf16(0x1.01p0 + 0x1p-30), 0x3f81);
  /* 1 + 3 * 2^-8 - 2^-30: float tie 0x3f818000 (-> 0x3f82); below: 0x3f81 */
  assert_int_equal(f32_bits((float)(0x1.03p0 - 0x1p-30)), 0x3f818000u);
  assert_int_equal(rd_f64_to_bf16(0x1.03p0 - 0x1p-30), 0x3f81);
  /* 2^-134 + 2^-160: the float is 2^-134, the tie with 0 (-> 0); above: 1 */
  assert_int_equal(f32_bits((float)(0x1p-134 + 0x1p-160)), 0x00008000u);
  assert_int_equal(rd_f64_to_bf16(0x1p-134 + 0x1p-160), 0x0001);
  /* 0x1.ffp127 - 2^90: the float is the overflow tie 0x7f7f8000 (-> inf);
     * below it: the largest finite 0x7f7f */
  assert_int_equal(f32_bits((float)(0x1.ffp127 - 0x1p90)), 0x7f7f8000u);
  assert_int_equal(rd_f64_to_bf16(0x1.ffp127 - 0x1p90), 0x7f7f);
  assert_int_equal(rd_f64_to_bf16(-(0x1.ffp127 - 0x1p90)), 0xff7f);
}

/* The oracle itself, on values worked out by hand, so that a broken oracle
 * cannot agree with a broken library. */
static void test_oracle_sanity(void **state)
{
  (void)state;
  assert_true(o_value(0x7bff, &O_HALF) == 65504.0);
  assert_true(o_value(0x0001, &O_HALF) == 0x1p-24);
  assert_true(o_value(0x7f7f, &O_BF16) == 0x1.fep127);
  assert_true(o_value(0x0001, &O_BF16) == 0x1p-133);
  assert_int_equal(o_narrow(65520.0, &O_HALF), 0x7c00);
  assert_int_equal(o_narrow(65519.99, &O_HALF), 0x7bff);
  assert_int_equal(o_narrow(0x1p-25, &O_HALF), 0x0000);
  assert_int_equal(o_narrow(0x1.8p-24, &O_HALF), 0x0002);
  assert_int_equal(o_narrow(-0x1.01p0, &O_BF16), 0xbf80);
  assert_int_equal(o_narrow(0x1.03p0, &O_BF16), 0x3f82);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_oracle_sanity),
    cmocka_unit_test(test_f16_zeros_and_subnormals),
    cmocka_unit_test(test_f16_overflow),
    cmocka_unit_test(test_f16_ties_near_one),
    cmocka_unit_test(test_f16_nan),
    cmocka_unit_test(test_f16_widen_named),
    cmocka_unit_test(test_f16_double_rounding),
    cmocka_unit_test(test_bf16_named),
    cmocka_unit_test(test_bf16_nan),
    cmocka_unit_test(test_bf16_overflow),
    cmocka_unit_test(test_bf16_subnormals),
    cmocka_unit_test(test_bf16_double_rounding),
    cmocka_unit_test(test_f16_widen_all),
    cmocka_unit_test(test_f16_roundtrip_all),
    cmocka_unit_test(test_f16_midpoints),
    cmocka_unit_test(test_bf16_widen_all),
    cmocka_unit_test(test_bf16_roundtrip_all),
    cmocka_unit_test(test_bf16_midpoints),
    cmocka_unit_test(test_random_f32),
    cmocka_unit_test(test_random_f64),
    cmocka_unit_test(test_random_subnormals),
  };
#ifndef __FLT16_MAX__
  fprintf(stderr, "test_f16: no _Float16; the GCC oracle is skipped\n");
#endif
  return cmocka_run_group_tests(tests, NULL, NULL);
}
