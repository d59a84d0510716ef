/* numfmt_oracle.c - api/numfmt.c as it was before the fast path (printf
 * digits, strtod read-back), kept verbatim as the oracle of test_numfmt;
 * only the entry point is renamed oracle_format_elem().
 *
 * numfmt.c - elements as JSON text.
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
    n += (size_t)snprintf(buf + n, API_NUMFMT_MAX - n, "e%c%d",
                          exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
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

static size_t format_float(char *buf, int dtype, const void *elem)
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
  /* Digits that always suffice (max_digits10 of the format). */
  switch (dtype) {
  case RD_FLOAT32:
    maxd = 9;
    pow2 = (bits & 0x7FFFFF) == 0;
    break;
  case RD_FLOAT16:
    maxd = 5;
    pow2 = (bits & 0x3FF) == 0;
    break;
  case RD_BFLOAT16:
    maxd = 4;
    pow2 = (bits & 0x7F) == 0;
    break;
  default: maxd = 17; pow2 = (bits & 0xFFFFFFFFFFFFFULL) == 0;
  }
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

size_t oracle_format_elem(char buf[API_NUMFMT_MAX], int dtype,
                          const void *elem);
size_t oracle_format_elem(char buf[API_NUMFMT_MAX], int dtype, const void *elem)
{
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;

  switch (dtype) {
  case RD_FLOAT32:
  case RD_FLOAT64:
  case RD_FLOAT16:
  case RD_BFLOAT16: return format_float(buf, dtype, elem);
  case RD_BOOL:
    memcpy(&u8, elem, sizeof u8);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, u8 ? "true" : "false");
  case RD_INT8:
    memcpy(&i8, elem, sizeof i8);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%d", (int)i8);
  case RD_UINT8:
    memcpy(&u8, elem, sizeof u8);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%u", (unsigned)u8);
  case RD_INT16:
    memcpy(&i16, elem, sizeof i16);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%d", (int)i16);
  case RD_UINT16:
    memcpy(&u16, elem, sizeof u16);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%u", (unsigned)u16);
  case RD_INT32:
    memcpy(&i32, elem, sizeof i32);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%" PRId32, i32);
  case RD_INT64:
    memcpy(&i64, elem, sizeof i64);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%" PRId64, i64);
  case RD_UINT32:
    memcpy(&u32, elem, sizeof u32);
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%" PRIu32, u32);
  case RD_UINT64:
    memcpy(&u64, elem, sizeof u64);
    /* Quoted above 2^63-1: many JSON readers lose such integers. */
    return (size_t)snprintf(buf, API_NUMFMT_MAX,
                            u64 > INT64_MAX ? "\"%" PRIu64 "\"" : "%" PRIu64,
                            u64);
  default: return (size_t)snprintf(buf, API_NUMFMT_MAX, "null");
  }
}
