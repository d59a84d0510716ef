/* numfmt.c - elements as JSON text.
 *
 * Floats: the fewest significant digits (1..17) whose text, read back the
 * way clients do (strtod to double, then rounding to the dtype), gives the
 * same bits.  Digits come from printf, which glibc rounds correctly, and
 * the result is checked by actually reading it back, so it is right even
 * where double rounding (text -> double -> float) bites.
 * Integral values are no exception: float32 4290774016 needs 7 digits, so
 * it prints as "4290774000" (the 7 digits, then zeros).  Below 1e16 such a
 * value takes the shorter of that plain spelling and the exponent one
 * ("100", not "1e+2"; bfloat16 70330089472 as "7.03e+10"), the plain one on
 * a tie.
 * float32, float16 and bfloat16 normally take format_float_fast(), which
 * makes the same decisions with exact double arithmetic and hands any
 * case it cannot decide to that printf/strtod code (format_float_slow);
 * tests/unit/test_numfmt.c holds the two to the same bytes.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16.h"
#include "numfmt.h"
#include "reduce.h"

/* Widens an element of a float dtype to double (exact) and returns its bits
 * in the dtype's own width, for comparing read-back values. */
static double float_value(int dtype, const void *elem, uint64_t *bits)
{
  float f;
  double d;
  uint16_t h;
  uint32_t u32;

  switch (dtype) {
  case RD_FLOAT32:
    memcpy(&f, elem, sizeof f);
    memcpy(&u32, &f, sizeof u32);
    *bits = u32;
    return f;
  case RD_FLOAT16:
    memcpy(&h, elem, sizeof h);
    *bits = h;
    return rd_f16_to_f64(h);
  case RD_BFLOAT16:
    memcpy(&h, elem, sizeof h);
    *bits = h;
    return rd_bf16_to_f64(h);
  default: /* RD_FLOAT64 */
    memcpy(&d, elem, sizeof d);
    memcpy(bits, &d, sizeof *bits);
    return d;
  }
}

/* Bits of `text` read back as a value of `dtype`. */
static uint64_t read_back(int dtype, const char *text)
{
  double d = strtod(text, NULL);
  float f;
  uint32_t u32;
  uint64_t u64;

  switch (dtype) {
  case RD_FLOAT32:
    f = (float)d; /* IEEE conversion (Annex F): rounds, overflows to inf */
    memcpy(&u32, &f, sizeof u32);
    return u32;
  case RD_FLOAT16: return rd_f64_to_f16(d);
  case RD_BFLOAT16: return rd_f64_to_bf16(d);
  default: memcpy(&u64, &d, sizeof u64); return u64;
  }
}

/* The 17 significant digits of a positive finite double, correctly rounded
 * by printf, as d[0].d[1]...d[16] x 10^exp10. */
struct digits {
  char d[17];
  int exp10;
};

/* Splits printf's "%.*e" text ("d.ddde+XX", "de-XXX") into digits. */
static void split_e(const char *t, char *d, int *exp10)
{
  const char *e = strchr(t, 'e');
  size_t n = 0;

  for (; t < e; t++)
    if (*t != '.')
      d[n++] = *t;
  *exp10 = atoi(e + 1);
}

static void get_digits(double a, struct digits *g)
{
  char t[40];

  snprintf(t, sizeof t, "%.16e", a);
  split_e(t, g->d, &g->exp10);
}

/* `a` rounded to p significant digits, from the 17 digits where that is
 * exact.  The 17 digits are themselves rounded, so a tail of exactly 5000..
 * could hide a true tail just below or above one half; printf decides those
 * rare cases from the exact value. */
static void round_digits(double a, const struct digits *g, int p, char *d,
                         int *exp10)
{
  char t[40];
  int i;

  memcpy(d, g->d, (size_t)p);
  *exp10 = g->exp10;
  if (p >= 17)
    return;
  if (g->d[p] == '5') {
    for (i = p + 1; i < 17 && g->d[i] == '0'; i++)
      ;
    if (i == 17) {
      snprintf(t, sizeof t, "%.*e", p - 1, a);
      split_e(t, d, exp10);
      return;
    }
  }
  if (g->d[p] < '5')
    return;
  for (i = p - 1; i >= 0 && d[i] == '9'; i--)
    d[i] = '0';
  if (i >= 0) {
    d[i]++;
  } else { /* 99.9 -> 100 */
    d[0] = '1';
    ++*exp10;
  }
}

/* Writes "e+X" / "e-X" (X unpadded, at most 3 digits: |exp10| <= 324) and
 * a NUL, as snprintf("e%c%d") did. */
static size_t put_exp(char *buf, int exp10)
{
  unsigned x = (unsigned)(exp10 < 0 ? -exp10 : exp10);
  size_t n = 0;

  buf[n++] = 'e';
  buf[n++] = exp10 < 0 ? '-' : '+';
  if (x >= 100)
    buf[n++] = (char)('0' + x / 100);
  if (x >= 10)
    buf[n++] = (char)('0' + x / 10 % 10);
  buf[n++] = (char)('0' + x % 10);
  buf[n] = '\0';
  return n;
}

/* Writes p digits as printf's "%.{p}g" would (exponent form when
 * exp10 < -4 or exp10 >= p, trailing zeros dropped), but with the exponent
 * unpadded ("1e+20", "1e-5"). */
static size_t compose(char *buf, int neg, const char *d, int p, int exp10)
{
  size_t n = 0;
  int nd = p, i;

  while (nd > 1 && d[nd - 1] == '0')
    nd--;
  if (neg)
    buf[n++] = '-';
  if (exp10 < -4 || exp10 >= p) {
    buf[n++] = d[0];
    if (nd > 1) {
      buf[n++] = '.';
      memcpy(buf + n, d + 1, (size_t)nd - 1);
      n += (size_t)nd - 1;
    }
    n += put_exp(buf + n, exp10);
    return n;
  }
  if (exp10 < 0) { /* 0.000ddd */
    buf[n++] = '0';
    buf[n++] = '.';
    for (i = -1; i > exp10; i--)
      buf[n++] = '0';
    memcpy(buf + n, d, (size_t)nd);
    n += (size_t)nd;
  } else { /* ddd.ddd or ddd00 */
    for (i = 0; i <= exp10; i++)
      buf[n++] = i < nd ? d[i] : '0';
    if (nd > exp10 + 1) {
      buf[n++] = '.';
      memcpy(buf + n, d + exp10 + 1, (size_t)(nd - exp10 - 1));
      n += (size_t)(nd - exp10 - 1);
    }
  }
  buf[n] = '\0';
  return n;
}

/* Writes d[0..p) x 10^exp10 (exp10 >= p - 1: an integer) as digits padded
 * with zeros ("4290774000"). */
static size_t compose_plain(char *buf, int neg, const char *d, int p, int exp10)
{
  size_t n = 0;

  if (neg)
    buf[n++] = '-';
  for (int i = 0; i <= exp10; i++)
    buf[n++] = i < p ? d[i] : '0';
  buf[n] = '\0';
  return n;
}

/* Writes v with p significant digits; 1 if it reads back as `bits`.  An
 * integral value below 1e16 whose p digits leave only zeros after the point
 * is spelled plain when that is not longer than compose()'s form. */
static int round_trips(char *buf, size_t *len, int dtype, double v,
                       const struct digits *g, int p, uint64_t bits)
{
  char d[17], plain[API_NUMFMT_MAX];
  size_t n;
  int exp10;

  round_digits(fabs(v), g, p, d, &exp10);
  *len = compose(buf, signbit(v) != 0, d, p, exp10);
  if (fabs(v) < 1e16 && exp10 >= p - 1 && exp10 < 17) {
    n = compose_plain(plain, signbit(v) != 0, d, p, exp10);
    if (n <= *len) {
      memcpy(buf, plain, n + 1);
      *len = n;
    }
  }
  return read_back(dtype, buf) == bits;
}

/* The digits that always suffice for dtype (max_digits10 of the format)
 * and whether the value is a power of two (its mantissa bits are 0). */
static int float_limits(int dtype, uint64_t bits, int *pow2)
{
  switch (dtype) {
  case RD_FLOAT32: *pow2 = (bits & 0x7FFFFF) == 0; return 9;
  case RD_FLOAT16: *pow2 = (bits & 0x3FF) == 0; return 5;
  case RD_BFLOAT16: *pow2 = (bits & 0x7F) == 0; return 4;
  default: *pow2 = (bits & 0xFFFFFFFFFFFFFULL) == 0; return 17;
  }
}

static size_t format_float_slow(char *buf, int dtype, const void *elem)
{
  uint64_t bits;
  double v = float_value(dtype, elem, &bits);
  struct digits g;
  int lo, hi, mid, maxd, pow2;
  size_t len;

  if (isnan(v))
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "\"NaN\"");
  if (isinf(v))
    return (size_t)snprintf(buf, API_NUMFMT_MAX,
                            v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  if (v == 0)
    return (size_t)snprintf(buf, API_NUMFMT_MAX, signbit(v) ? "-0" : "0");
  maxd = float_limits(dtype, bits, &pow2);
  get_digits(fabs(v), &g);
  /* Where the read-back interval around v is symmetric, the correctly
   * rounded p-digit decimal is never farther from v than any shorter one,
   * so "p digits round-trip" is monotone in p and a binary search finds
   * the fewest.  At a power of two the interval below is half as wide and
   * that can fail, so those few values are searched one by one. */
  if (pow2) {
    for (lo = 1; lo < maxd; lo++)
      if (round_trips(buf, &len, dtype, v, &g, lo, bits))
        break;
  } else {
    lo = 1;
    hi = maxd;
    while (lo < hi) {
      mid = lo + (hi - lo) / 2;
      if (round_trips(buf, &len, dtype, v, &g, mid, bits))
        hi = mid;
      else
        lo = mid + 1;
    }
  }
  /* 17 digits always read back exactly (every float16, bfloat16 and
   * float32 value is a double, so the final rounding is exact too). */
  if (!round_trips(buf, &len, dtype, v, &g, lo, bits))
    round_trips(buf, &len, dtype, v, &g, 17, bits);
  return len;
}

/* The fast path (float32, float16, bfloat16): the same search as
 * format_float_slow(), probe for probe, but each probe in a few double
 * operations instead of printf and strtod.  Any probe it cannot decide
 * exactly sends the whole value to the slow path, so the text is the same.
 *
 * Such a value is a double with at most 24 significant bits, so for
 * |q| <= 22 (10^q exact) s = |v| * 10^q is one correctly rounded operation,
 * off by at most 2^-53 relative: for s < 10^9 that is < 1.2e-7, so unless
 * s is within 1e-6 of a half-integer its nearest integer is that of the
 * exact value (exact ties, left to printf before, go to the slow path).
 * Reading D * 10^k back (D < 2^53, |k| <= 22) is one correctly rounded
 * multiply or divide, which is what strtod returns for that text. */
static const double p10[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

/* a * 10^q in one rounding; 0 when |q| > 22 (not exact). */
static int scale10(double a, int q, double *s)
{
  if (q >= 0 && q <= 22) {
    *s = a * p10[q];
    return 1;
  }
  if (q < 0 && q >= -22) {
    *s = a / p10[-q];
    return 1;
  }
  return 0;
}

enum { PROBE_FAIL = 0, PROBE_OK = 1, PROBE_UNSURE = -1 };

/* p-digit probe of a = |v| (p <= 9): the correctly rounded digits as the
 * integer *dig in [10^(p-1), 10^p) and exponent *exp10 (a ~ dig.ddd x
 * 10^exp10), and whether they read back as `bits`.  *e10 is the running
 * estimate of floor(log10 a), corrected here. */
static int probe(int dtype, double a, int neg, int p, uint64_t bits, int *e10,
                 uint64_t *dig, int *exp10)
{
  double s, fl, fr, r;
  uint64_t dd, lo = (uint64_t)p10[p - 1], hi = (uint64_t)p10[p];
  int k, tries;
  float f;
  uint32_t u32;
  uint64_t got;

  /* Near a power of ten the estimate may be one off either way; the
   * rounded digits are the same whichever side s lands on, so only the
   * range check matters. */
  for (tries = 0;; tries++) {
    if (tries > 2 || !scale10(a, p - 1 - *e10, &s))
      return PROBE_UNSURE;
    if (s < (double)lo)
      --*e10;
    else if (s >= (double)hi)
      ++*e10;
    else
      break;
  }
  fl = floor(s);
  fr = s - fl;
  if (fabs(fr - 0.5) <= 1e-6)
    return PROBE_UNSURE;
  dd = (uint64_t)fl + (fr > 0.5);
  *exp10 = *e10;
  if (dd == hi) { /* 99.9 -> 100 */
    dd = lo;
    ++*exp10;
  }
  *dig = dd;
  k = *exp10 - (p - 1);
  if (k >= 0 && k <= 22)
    r = (double)dd * p10[k];
  else if (k < 0 && k >= -22)
    r = (double)dd / p10[-k];
  else
    return PROBE_UNSURE;
  if (neg)
    r = -r;
  switch (dtype) {
  case RD_FLOAT32:
    f = (float)r;
    memcpy(&u32, &f, sizeof u32);
    got = u32;
    break;
  case RD_FLOAT16: got = rd_f64_to_f16(r); break;
  default: got = rd_f64_to_bf16(r); break; /* RD_BFLOAT16 */
  }
  return got == bits ? PROBE_OK : PROBE_FAIL;
}

/* The text for a probe that read back, as round_trips() writes it. */
static size_t fast_text(char *buf, double v, int p, uint64_t dig, int exp10)
{
  char d[17], plain[API_NUMFMT_MAX];
  size_t len, n;
  int i;

  for (i = p - 1; i >= 0; i--) {
    d[i] = (char)('0' + dig % 10);
    dig /= 10;
  }
  len = compose(buf, signbit(v) != 0, d, p, exp10);
  if (fabs(v) < 1e16 && exp10 >= p - 1 && exp10 < 17) {
    n = compose_plain(plain, signbit(v) != 0, d, p, exp10);
    if (n <= len) {
      memcpy(buf, plain, n + 1);
      len = n;
    }
  }
  return len;
}

/* floor(log10 a) for a finite a > 0, or one off (probe() corrects that),
 * without libm: log10() was the only libm function a JSON answer called,
 * and that one call made 192 KiB of libm resident (its code and tables,
 * mapped 64 KiB at a time by the kernel's fault-around), a quarter of
 * what a 1M-element JSON request held besides its tensor.  From the binary
 * exponent e (a in [2^e, 2^(e+1)), so log10 a in [e lg 2, (e+1) lg 2),
 * less than 1 wide): floor(e lg 2) (78913 / 2^18 is lg 2 to within 1e-6,
 * close enough for |e| < 1100), plus one if a reaches the next power of
 * ten. */
static int log10_floor(double a)
{
  uint64_t u;
  int e, k;
  double s;

  memcpy(&u, &a, sizeof u);
  e = (int)((u >> 52) & 0x7ff) - 1023;
  if (e == -1023) /* subnormal (not one of the narrow dtypes'): rare */
    return (int)floor(log10(a));
  k = e >= 0 ? e * 78913 / (1 << 18)
             : -((-e * 78913 + (1 << 18) - 1) / (1 << 18));
  if (scale10(a, -(k + 1), &s) && s >= 1.0)
    k++;
  return k;
}

/* Mirrors the search in format_float_slow(); 0 when it cannot decide. */
static size_t format_float_fast(char *buf, int dtype, double v, uint64_t bits,
                                int maxd, int pow2)
{
  double a = fabs(v);
  int neg = signbit(v) != 0, lo, hi, mid, e10, exp10, rc;
  uint64_t dig;

  e10 = log10_floor(a);
  if (pow2) {
    for (lo = 1; lo < maxd; lo++) {
      rc = probe(dtype, a, neg, lo, bits, &e10, &dig, &exp10);
      if (rc == PROBE_UNSURE)
        return 0;
      if (rc == PROBE_OK)
        break;
    }
  } else {
    lo = 1;
    hi = maxd;
    while (lo < hi) {
      mid = lo + (hi - lo) / 2;
      rc = probe(dtype, a, neg, mid, bits, &e10, &dig, &exp10);
      if (rc == PROBE_UNSURE)
        return 0;
      if (rc == PROBE_OK)
        hi = mid;
      else
        lo = mid + 1;
    }
  }
  /* The slow path writes 17 digits when lo fails; leave that to it. */
  if (probe(dtype, a, neg, lo, bits, &e10, &dig, &exp10) != PROBE_OK)
    return 0;
  return fast_text(buf, v, lo, dig, exp10);
}

static size_t format_float(char *buf, int dtype, const void *elem)
{
  uint64_t bits;
  double v = float_value(dtype, elem, &bits);
  size_t n;
  int maxd, pow2;

  if (isnan(v)) {
    memcpy(buf, "\"NaN\"", 6);
    return 5;
  }
  if (isinf(v)) {
    if (v > 0) {
      memcpy(buf, "\"Infinity\"", 11);
      return 10;
    }
    memcpy(buf, "\"-Infinity\"", 12);
    return 11;
  }
  if (v == 0) {
    if (signbit(v)) {
      memcpy(buf, "-0", 3);
      return 2;
    }
    memcpy(buf, "0", 2);
    return 1;
  }
  if (dtype == RD_FLOAT64)
    return format_float_slow(buf, dtype, elem);
  maxd = float_limits(dtype, bits, &pow2);
  n = format_float_fast(buf, dtype, v, bits, maxd, pow2);
  return n ? n : format_float_slow(buf, dtype, elem);
}

/* v in decimal and a NUL at buf (at most 21 bytes). */
static size_t put_u64(char *buf, uint64_t v)
{
  char t[20];
  size_t n = 0, i;

  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (i = 0; i < n; i++)
    buf[i] = t[n - 1 - i];
  buf[n] = '\0';
  return n;
}

size_t api_format_u64(char buf[API_NUMFMT_MAX], uint64_t v)
{
  return put_u64(buf, v);
}

size_t api_format_i64(char buf[API_NUMFMT_MAX], int64_t v)
{
  if (v >= 0)
    return put_u64(buf, (uint64_t)v);
  buf[0] = '-';
  /* 0 - (uint64_t)v: |INT64_MIN| without overflow. */
  return 1 + put_u64(buf + 1, 0 - (uint64_t)v);
}

size_t api_format_elem(char buf[API_NUMFMT_MAX], int dtype, const void *elem)
{
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  size_t n;

  switch (dtype) {
  case RD_FLOAT32:
  case RD_FLOAT64:
  case RD_FLOAT16:
  case RD_BFLOAT16: return format_float(buf, dtype, elem);
  case RD_BOOL:
    memcpy(&u8, elem, sizeof u8);
    if (u8) {
      memcpy(buf, "true", 5);
      return 4;
    }
    memcpy(buf, "false", 6);
    return 5;
  case RD_INT8: memcpy(&i8, elem, sizeof i8); return api_format_i64(buf, i8);
  case RD_UINT8: memcpy(&u8, elem, sizeof u8); return api_format_u64(buf, u8);
  case RD_INT16:
    memcpy(&i16, elem, sizeof i16);
    return api_format_i64(buf, i16);
  case RD_UINT16:
    memcpy(&u16, elem, sizeof u16);
    return api_format_u64(buf, u16);
  case RD_INT32:
    memcpy(&i32, elem, sizeof i32);
    return api_format_i64(buf, i32);
  case RD_INT64:
    memcpy(&i64, elem, sizeof i64);
    return api_format_i64(buf, i64);
  case RD_UINT32:
    memcpy(&u32, elem, sizeof u32);
    return api_format_u64(buf, u32);
  case RD_UINT64:
    memcpy(&u64, elem, sizeof u64);
    if (u64 <= INT64_MAX)
      return api_format_u64(buf, u64);
    /* Quoted above 2^63-1: many JSON readers lose such integers. */
    buf[0] = '"';
    n = 1 + put_u64(buf + 1, u64);
    buf[n++] = '"';
    buf[n] = '\0';
    return n;
  default: memcpy(buf, "null", 5); return 4;
  }
}
