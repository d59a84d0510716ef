/* numfmt.c - elements as JSON text.
 *
 * Floats: the fewest significant digits (1..17) whose text, read back the
 * way clients do (strtod to double, then rounding to the dtype), gives the
 * same bits.  Digits come from printf, which glibc rounds correctly, and
 * every candidate is checked by actually reading it back, so the result is
 * right even where double rounding (text -> double -> float) bites.
 * Integral values below 1e16 print as exact integers ("65504", "5"), which
 * read back exactly and are what people expect from integer-valued data.
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
static double
float_value(int dtype, const void *elem, uint64_t *bits)
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
static uint64_t
read_back(int dtype, const char *text)
{
  double d = strtod(text, NULL);
  float f;
  uint32_t u32;
  uint64_t u64;

  switch (dtype) {
  case RD_FLOAT32:
    f = (float)d;   /* IEEE conversion (Annex F): rounds, overflows to inf */
    memcpy(&u32, &f, sizeof u32);
    return u32;
  case RD_FLOAT16:
    return rd_f64_to_f16(d);
  case RD_BFLOAT16:
    return rd_f64_to_bf16(d);
  default:
    memcpy(&u64, &d, sizeof u64);
    return u64;
  }
}

/* "1e+05" -> "1e+5", "2.5e-07" -> "2.5e-7": same value, shorter. */
static size_t
trim_exponent(char *s, size_t n)
{
  char *e = strchr(s, 'e');
  char *digits, *p;

  if (e == NULL)
    return n;
  digits = e + 2;                       /* past 'e' and its sign */
  for (p = digits; *p == '0' && p[1] != '\0'; p++)
    ;
  if (p != digits)
    memmove(digits, p, strlen(p) + 1);
  return strlen(s);
}

static size_t
format_float(char *buf, int dtype, const void *elem)
{
  uint64_t bits;
  double v = float_value(dtype, elem, &bits);
  int n, prec;

  if (isnan(v))
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "\"NaN\"");
  if (isinf(v))
    return (size_t)snprintf(buf, API_NUMFMT_MAX, v > 0 ? "\"Infinity\""
                                                       : "\"-Infinity\"");
  if (v == 0)
    return (size_t)snprintf(buf, API_NUMFMT_MAX, signbit(v) ? "-0" : "0");
  if (fabs(v) < 1e16 && v == trunc(v))
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "%.0f", v);
  /* 17 significant digits always read back exactly (a float16, bfloat16 or
   * float32 value is a double, so the final rounding is then exact too). */
  for (prec = 1; prec < 17; prec++) {
    snprintf(buf, API_NUMFMT_MAX, "%.*g", prec, v);
    if (read_back(dtype, buf) == bits)
      break;
  }
  n = snprintf(buf, API_NUMFMT_MAX, "%.*g", prec, v);
  return trim_exponent(buf, (size_t)n);
}

size_t
api_format_elem(char buf[API_NUMFMT_MAX], int dtype, const void *elem)
{
  int32_t i32;
  int64_t i64;
  uint32_t u32;
  uint64_t u64;

  switch (dtype) {
  case RD_FLOAT32:
  case RD_FLOAT64:
  case RD_FLOAT16:
  case RD_BFLOAT16:
    return format_float(buf, dtype, elem);
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
  default:
    return (size_t)snprintf(buf, API_NUMFMT_MAX, "null");
  }
}
