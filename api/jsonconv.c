/* jsonconv.c - JSON value and element conversions shared by json.c (v1)
 * and v2.c (see jsonconv.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f16.h"
#include "jsonconv.h"
#include "numfmt.h"

/* Integral reals beyond this may have been rounded by the parser. */
#define EXACT_REAL_MAX 9007199254740992.0 /* 2^53 */

int api__as_int64(const json_t *v, int64_t *out)
{
  double r;

  if (json_is_integer(v)) {
    *out = json_integer_value(v);
    return 0;
  }
  if (!json_is_real(v))
    return -1;
  r = json_real_value(v);
  if (r != trunc(r))
    return -1;
  if (fabs(r) > EXACT_REAL_MAX)
    return -2;
  *out = (int64_t)r;
  return 0;
}

const char *api__type_name(const json_t *v)
{
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "a list";
  case JSON_STRING: return "a string";
  case JSON_INTEGER:
  case JSON_REAL: return "a number";
  case JSON_TRUE: return "true";
  case JSON_FALSE: return "false";
  default: return "null";
  }
}

const char *api__unknown_key(const json_t *obj, const char *const *known)
{
  const char *key;
  const json_t *val;
  size_t i;

  json_object_foreach((json_t *)obj, key, val)
  {
    for (i = 0; known[i] != NULL && strcmp(known[i], key) != 0; i++)
      ;
    if (known[i] == NULL)
      return key;
  }
  return NULL;
}

void api__shape_text(const int64_t *shape, size_t rank, char *out, size_t size)
{
  size_t i, n;

  n = (size_t)snprintf(out, size, "[");
  for (i = 0; i < rank && n < size; i++)
    n += (size_t)snprintf(out + n, size - n, "%s%" PRId64, i ? "," : "",
                          shape[i]);
  if (n < size)
    snprintf(out + n, size - n, "]");
}

void api__store_float(int dtype, double d, unsigned char *dst)
{
  float x;
  uint16_t h;

  switch (dtype) {
  case RD_FLOAT32:
    x = (float)d; /* IEEE conversion (Annex F): rounds, overflows to inf */
    memcpy(dst, &x, sizeof x);
    break;
  case RD_FLOAT16:
    h = rd_f64_to_f16(d);
    memcpy(dst, &h, sizeof h);
    break;
  case RD_BFLOAT16:
    h = rd_f64_to_bf16(d);
    memcpy(dst, &h, sizeof h);
    break;
  default: memcpy(dst, &d, sizeof d);
  }
}

/* Parses -?(0|[1-9][0-9]*) (JSON's integer grammar) into sign and
 * magnitude; nothing else, no whitespace, no '+', no NUL.  0, -1 (not that
 * grammar) or -2 (magnitude above 2^64-1). */
static int parse_decimal(const char *s, size_t len, int *neg, uint64_t *mag)
{
  uint64_t m = 0;
  size_t i = 0;
  unsigned d;

  *neg = len > 0 && s[0] == '-';
  i = (size_t)*neg;
  if (i == len || (s[i] == '0' && len - i > 1))
    return -1;
  for (size_t j = i; j < len; j++) /* grammar first, then overflow */
    if (s[j] < '0' || s[j] > '9')
      return -1;
  for (; i < len; i++) {
    d = (unsigned)(s[i] - '0');
    if (m > (UINT64_MAX - d) / 10)
      return -2;
    m = m * 10 + d;
  }
  *mag = m;
  return 0;
}

static int put_float(const struct api__conv *c, const json_t *v,
                     unsigned char *dst, struct rd_error *err)
{
  const char *s;
  double d;

  if (json_is_integer(v)) {
    d = (double)json_integer_value(v);
  } else if (json_is_real(v)) {
    d = json_real_value(v);
  } else if (json_is_string(v)) {
    s = json_string_value(v);
    if (strcmp(s, "NaN") == 0)
      d = NAN;
    else if (strcmp(s, "Infinity") == 0)
      d = INFINITY;
    else if (strcmp(s, "-Infinity") == 0)
      d = -INFINITY;
    else
      return c->bad(c, v,
                    "is not a number (the strings allowed are "
                    "\"NaN\", \"Infinity\" and \"-Infinity\")",
                    err);
  } else {
    return c->bad(c, v, "is not a number", err);
  }
  api__store_float(c->dtype, d, dst);
  return 0;
}

int api__attr_allowed(int op, const char *attr, const char *shown,
                      struct rd_error *err)
{
  const struct rd_op_info *oi = rd_op_info(op);
  int arg_only = strcmp(attr, "axis") == 0 ||
                 strcmp(attr, "select_last_index") == 0;
  int reduce_only = strcmp(attr, "axes") == 0 ||
                    strcmp(attr, "noop_with_empty_axes") == 0;

  if (oi == NULL)
    return 0; /* an unknown op is reported elsewhere */
  if (arg_only && !oi->is_arg)
    return api_fail(err, RD_E_ATTRIBUTE,
                    "%s is not an attribute of %s "
                    "(only ArgMax and ArgMin take %s%s)",
                    shown, oi->name, attr,
                    strcmp(attr, "axis") == 0 ? "; use axes" : "");
  if (reduce_only && oi->is_arg)
    return api_fail(err, RD_E_ATTRIBUTE,
                    "%s is not an attribute of %s "
                    "(it reduces one axis, given as axis)",
                    shown, oi->name);
  return 0;
}

int api__guard_unset(const char *attr, const char *shown, int64_t v,
                     int64_t *out, struct rd_error *err)
{
  /* INT64_MIN is the library's "not given"; it must not pass as that. */
  if (v != RD_UNSET) {
    *out = v;
    return 0;
  }
  if (strcmp(attr, "noop_with_empty_axes") == 0)
    return api_fail(err, RD_E_NOOP, "%s must be 0 or 1, got %" PRId64, shown,
                    v);
  if (strcmp(attr, "select_last_index") == 0)
    return api_fail(err, RD_E_SELECT_LAST, "%s must be 0 or 1, got %" PRId64,
                    shown, v);
  return api_fail(err, RD_E_AXIS_RANGE,
                  "%s = %" PRId64 " is out of range "
                  "for any rank",
                  shown, v);
}

int api__is_float(int dtype)
{
  return dtype == RD_FLOAT32 || dtype == RD_FLOAT64 || dtype == RD_FLOAT16 ||
         dtype == RD_BFLOAT16;
}

void api__int_range(int dtype, uint64_t *max_neg, uint64_t *max_pos)
{
  switch (dtype) {
  case RD_INT8:
    *max_neg = 128;
    *max_pos = INT8_MAX;
    break;
  case RD_INT16:
    *max_neg = (uint64_t)INT16_MAX + 1;
    *max_pos = INT16_MAX;
    break;
  case RD_INT32:
    *max_neg = (uint64_t)INT32_MAX + 1;
    *max_pos = INT32_MAX;
    break;
  case RD_INT64:
    *max_neg = (uint64_t)INT64_MAX + 1;
    *max_pos = INT64_MAX;
    break;
  case RD_UINT8:
    *max_neg = 0;
    *max_pos = UINT8_MAX;
    break;
  case RD_UINT16:
    *max_neg = 0;
    *max_pos = UINT16_MAX;
    break;
  case RD_UINT32:
    *max_neg = 0;
    *max_pos = UINT32_MAX;
    break;
  default: /* RD_UINT64 */ *max_neg = 0; *max_pos = UINT64_MAX;
  }
}

void api__store_int(int dtype, int neg, uint64_t mag, unsigned char *dst)
{
  /* In range, the magnitude fits the type's positive range, or is one
   * more for the most negative value: negate in the wider int64 (uint64
   * for int64 itself: two's complement, -(2^63) included). */
  int64_t low = (int64_t)(mag & 0xFFFFFFFFu), s = neg ? -low : low;
  uint64_t u = neg ? (uint64_t)0 - mag : mag;

  switch (dtype) {
  case RD_INT8: {
    int8_t x = (int8_t)s;
    memcpy(dst, &x, sizeof x);
    break;
  }
  case RD_UINT8: {
    uint8_t x = (uint8_t)mag;
    memcpy(dst, &x, sizeof x);
    break;
  }
  case RD_INT16: {
    int16_t x = (int16_t)s;
    memcpy(dst, &x, sizeof x);
    break;
  }
  case RD_UINT16: {
    uint16_t x = (uint16_t)mag;
    memcpy(dst, &x, sizeof x);
    break;
  }
  case RD_INT32: {
    int32_t x = (int32_t)s;
    memcpy(dst, &x, sizeof x);
    break;
  }
  case RD_UINT32: {
    uint32_t x = (uint32_t)mag;
    memcpy(dst, &x, sizeof x);
    break;
  }
  default: /* int64, uint64 */ memcpy(dst, &u, sizeof u);
  }
}

static int put_int(const struct api__conv *c, const json_t *v,
                   unsigned char *dst, struct rd_error *err)
{
  char range[96];
  int64_t s = 0;
  uint64_t mag = 0, max_pos, max_neg;
  int neg = 0, rc;

  api__int_range(c->dtype, &max_neg, &max_pos);
  snprintf(range, sizeof range, "is out of range [%s%" PRIu64 ", %" PRIu64 "]",
           max_neg ? "-" : "", max_neg, max_pos);

  if (json_is_string(v)) {
    rc = parse_decimal(json_string_value(v), json_string_length(v), &neg, &mag);
    if (rc == -1)
      return c->bad(c, v, "is not a decimal integer", err);
    if (rc == -2)
      return c->bad(c, v, range, err);
  } else {
    switch (api__as_int64(v, &s)) {
    case 0: break;
    case -2:
      return c->bad(c, v,
                    "is not exact as a JSON real; write it as an "
                    "integer or a decimal string",
                    err);
    default:
      return c->bad(c, v,
                    json_is_number(v) ? "is not an integer" : "is not a number",
                    err);
    }
    neg = s < 0;
    mag = neg ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
  }
  if (mag > (neg ? max_neg : max_pos))
    return c->bad(c, v, range, err);
  api__store_int(c->dtype, neg, mag, dst);
  return 0;
}

/* bool: JSON true and false only (a number is refused, even 0 or 1: the
 * wire form of a bool is true/false, as answers write it). */
static int put_bool(const struct api__conv *c, const json_t *v,
                    unsigned char *dst, struct rd_error *err)
{
  if (!json_is_boolean(v))
    return c->bad(c, v, "is not true or false", err);
  *dst = json_is_true(v) ? 1 : 0;
  return 0;
}

int api__put_elem(struct api__conv *c, const json_t *v, struct rd_error *err)
{
  unsigned char *dst;
  int rc;

  if (c->out == NULL) {
    c->idx++;
    return 0;
  }
  dst = c->out + c->idx * c->esize;
  if (api__is_float(c->dtype))
    rc = put_float(c, v, dst, err);
  else if (c->dtype == RD_BOOL)
    rc = put_bool(c, v, dst, err);
  else
    rc = put_int(c, v, dst, err);
  c->idx++;
  return rc;
}

int api__append_elems(struct api_buf *b, const struct rd_plan *plan,
                      const void *out)
{
  const unsigned char *p = out;

  for (uint64_t k = 0; k < plan->out_count; k++) {
    /* Formats in place: room for a comma and the longest number. */
    if (api_buf_reserve(b, API_NUMFMT_MAX + 1) != 0)
      return RD_E_NOMEM;
    if (k != 0)
      b->data[b->len++] = ',';
    b->len += api_format_elem(b->data + b->len, plan->out_dtype,
                              p + k * plan->out_elem_size);
  }
  return 0;
}

int api__append_json(struct api_buf *b, json_t *j)
{
  char *s;
  int rc;

  if (j == NULL)
    return RD_E_NOMEM;
  s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (s == NULL)
    return RD_E_NOMEM;
  rc = api_buf_puts(b, s);
  free(s);
  return rc;
}
