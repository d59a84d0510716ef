/* f16.c - float16 (IEEE binary16) and bfloat16 conversions, bit-exact.
 *
 * Everything works on the integer bit patterns (memcpy for punning), so the
 * results do not depend on the FPU, FLT_EVAL_METHOD, the rounding mode,
 * F16C or _Float16 support.
 *
 * Narrowing goes through one routine, f16_round(): a finite non-zero source
 * value is split into an integer significand m and an exponent e
 * (value = m * 2^e, exact for both float and double), and is rounded once,
 * to nearest with ties to even, to the quantum of the target format.  Since
 * the double is rounded directly, there is no double rounding through float.
 *
 * Widening is exact.  Every conversion, widening too, delivers a quiet NaN
 * (IEEE 754 convertFormat; also what F16C and GCC's _Float16 do), with the
 * sign and payload bits shifted up unchanged.
 */
#include "f16.h"

#include <string.h>

/* A binary interchange format narrower than the source. */
struct f16_fmt {
  int p;    /* stored mantissa bits */
  int emin; /* exponent of the smallest normal */
  int emax; /* exponent of the largest finite */
};

static const struct f16_fmt F16_HALF = { 10, -14, 15 };
static const struct f16_fmt F16_BF16 = { 7, -126, 127 };

static uint32_t f16_f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t f16_f64_bits(double d)
{
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static float f16_bits_f32(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static double f16_bits_f64(uint64_t u)
{
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* The +infinity pattern of format f (exponent field all ones). */
static uint32_t f16_inf(const struct f16_fmt *f)
{
  return (uint32_t)(f->emax - f->emin + 2) << f->p;
}

/* Index of the highest set bit; m != 0.  (The builtin where there is one:
 * the branches below depend on the value and mispredict on varied data.) */
static int f16_msb(uint64_t m)
{
#if defined(__GNUC__) || defined(__clang__)
  return 63 - __builtin_clzll(m);
#else
  int n = 0;
  if (m >> 32) {
    m >>= 32;
    n += 32;
  }
  if (m >> 16) {
    m >>= 16;
    n += 16;
  }
  if (m >> 8) {
    m >>= 8;
    n += 8;
  }
  if (m >> 4) {
    m >>= 4;
    n += 4;
  }
  if (m >> 2) {
    m >>= 2;
    n += 2;
  }
  if (m >> 1) {
    n += 1;
  }
  return n;
#endif
}

/* Round m * 2^e (m != 0, at most 53 significant bits) to format f; returns
 * the bit pattern without the sign.  With qmin the quantum of the subnormals,
 * a value rounded to the integer r at quantum q is encoded as
 * ((q - qmin) << p) + r: for subnormals q == qmin, for normals r carries the
 * hidden bit into the exponent field, and a carry out of the significand
 * (r == 2^(p+1)) becomes the next exponent, up to the infinity pattern. */
static uint16_t f16_round(uint64_t m, int e, const struct f16_fmt *f)
{
  const uint32_t inf = f16_inf(f);
  const int qmin = f->emin - f->p;
  int msb = f16_msb(m);
  int E = msb + e; /* 2^E <= value < 2^(E+1) */
  int q, shift;
  uint64_t r;

  if (E > f->emax)
    return (uint16_t)inf;
  q = (E < f->emin ? f->emin : E) - f->p;
  shift = q - e;
  if (shift <= 0) {
    r = m << -shift; /* exact; not reached from float or double sources */
  } else if (shift > msb + 1) {
    return 0; /* below half the smallest subnormal */
  } else {
    /* shift <= msb + 1 <= 53, so the masks below are defined. */
    uint64_t half = (uint64_t)1 << (shift - 1);
    uint64_t rest = m & ((half << 1) - 1);
    r = m >> shift;
    r += (uint64_t)(rest > half) | ((uint64_t)(rest == half) & r); /* RNE */
  }
  r += (uint64_t)(q - qmin) << f->p;
  return (uint16_t)(r >= inf ? inf : r);
}

/* NaN in format f from the top mantissa bits `top` (already shifted to the
 * target width): quiet bit forced, so a payload held only in dropped bits
 * still gives a NaN and never infinity. */
static uint16_t f16_nan(uint32_t top, const struct f16_fmt *f)
{
  uint32_t quiet = (uint32_t)1 << (f->p - 1);
  return (uint16_t)(f16_inf(f) | quiet | top);
}

static uint16_t f16_from_f32(float x, const struct f16_fmt *f)
{
  uint32_t u = f16_f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 31) << 15);
  uint32_t ef = (u >> 23) & 0xff;
  uint32_t mant = u & 0x7fffff;

  if (ef == 0xff) {
    if (mant == 0)
      return (uint16_t)(sign | f16_inf(f));
    return (uint16_t)(sign | f16_nan(mant >> (23 - f->p), f));
  }
  if (ef == 0) {
    if (mant == 0)
      return sign;
    return (uint16_t)(sign | f16_round(mant, -149, f));
  }
  return (uint16_t)(sign | f16_round(mant | 0x800000, (int)ef - 150, f));
}

static uint16_t f16_from_f64(double x, const struct f16_fmt *f)
{
  const uint64_t mmask = ((uint64_t)1 << 52) - 1;
  uint64_t u = f16_f64_bits(x);
  uint16_t sign = (uint16_t)((u >> 63) << 15);
  uint32_t ef = (uint32_t)(u >> 52) & 0x7ff;
  uint64_t mant = u & mmask;

  if (ef == 0x7ff) {
    if (mant == 0)
      return (uint16_t)(sign | f16_inf(f));
    return (uint16_t)(sign | f16_nan((uint32_t)(mant >> (52 - f->p)), f));
  }
  if (ef == 0) {
    if (mant == 0)
      return sign;
    return (uint16_t)(sign | f16_round(mant, -1074, f));
  }
  return (uint16_t)(sign | f16_round(mant | (mmask + 1), (int)ef - 1075, f));
}

/* Half bits -> float bits, exact. */
static uint32_t f16_half_to_f32_bits(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t ef = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;

  if (ef == 0x1f)
    return sign | 0x7f800000 | (mant << 13) | (mant ? 0x400000u : 0);
  if (ef == 0) {
    int msb;
    if (mant == 0)
      return sign;
    /* mant * 2^-24 = 2^(msb-24) * 1.xxx: renormalise; 127 - 24 = 103. */
    msb = f16_msb(mant);
    return sign | ((uint32_t)(msb + 103) << 23) |
           ((mant << (23 - msb)) & 0x7fffff);
  }
  return sign | ((ef + 112) << 23) | (mant << 13); /* re-bias 15 -> 127 */
}

/* Float bits -> double bits, exact; NaN payloads are kept bit for bit (the
 * callers pass quiet NaNs only), independent of the FPU. */
static uint64_t f16_f32_to_f64_bits(uint32_t u)
{
  uint64_t sign = (uint64_t)(u >> 31) << 63;
  uint32_t ef = (u >> 23) & 0xff;
  uint64_t mant = u & 0x7fffff;

  if (ef == 0xff)
    return sign | ((uint64_t)0x7ff << 52) | (mant << 29);
  if (ef == 0) {
    int msb;
    if (mant == 0)
      return sign;
    /* mant * 2^-149 = 2^(msb-149) * 1.xxx; 1023 - 149 = 874. */
    msb = f16_msb(mant);
    return sign | ((uint64_t)(msb + 874) << 52) |
           ((mant << (52 - msb)) & (((uint64_t)1 << 52) - 1));
  }
  return sign | ((uint64_t)(ef + 896) << 52) | (mant << 29); /* 127 -> 1023 */
}

float rd_f16_to_f32(uint16_t h)
{
  return f16_bits_f32(f16_half_to_f32_bits(h));
}

double rd_f16_to_f64(uint16_t h)
{
  return f16_bits_f64(f16_f32_to_f64_bits(f16_half_to_f32_bits(h)));
}

uint16_t rd_f32_to_f16(float f)
{
  return f16_from_f32(f, &F16_HALF);
}

uint16_t rd_f64_to_f16(double d)
{
  return f16_from_f64(d, &F16_HALF);
}

/* bfloat16 bits -> float bits: the top half of a float, NaN quietened. */
static uint32_t f16_bf16_to_f32_bits(uint16_t b)
{
  uint32_t u = (uint32_t)b << 16;
  if ((b & 0x7fff) > 0x7f80)
    u |= 0x400000;
  return u;
}

float rd_bf16_to_f32(uint16_t b)
{
  return f16_bits_f32(f16_bf16_to_f32_bits(b));
}

double rd_bf16_to_f64(uint16_t b)
{
  return f16_bits_f64(f16_f32_to_f64_bits(f16_bf16_to_f32_bits(b)));
}

uint16_t rd_f32_to_bf16(float f)
{
  return f16_from_f32(f, &F16_BF16);
}

uint16_t rd_f64_to_bf16(double d)
{
  return f16_from_f64(d, &F16_BF16);
}
