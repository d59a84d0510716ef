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

int
api__as_int64(const json_t *v, int64_t *out)
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

const char *
api__type_name(const json_t *v)
{
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "a list";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
    return "true";
  case JSON_FALSE:
    return "false";
  default:
    return "null";
  }
}

const char *
api__unknown_key(const json_t *obj, const char *const *known)
{
  const char *key;
  const json_t *val;
  size_t i;

  json_object_foreach((json_t *)obj, key, val) {
    for (i = 0; known[i] != NULL && strcmp(known[i], key) != 0; i++)
      ;
    if (known[i] == NULL)
      return key;
  }
  return NULL;
}

void
api__shape_text(const int64_t *shape, size_t rank, char *out, size_t size)
{
  size_t i, n;

  n = (size_t)snprintf(out, size, "[");
  for (i = 0; i < rank && n < size; i++)
    n += (size_t)snprintf(out + n, size - n, "%s%" PRId64, i ? "," : "",
                          shape[i]);
  if (n < size)
    snprintf(out + n, size - n, "]");
}

void
api__store_float(int dtype, double d, unsigned char *dst)
{
  float x;
  uint16_t h;

  switch (dtype) {
  case RD_FLOAT32:
    x = (float)d;     /* IEEE conversion (Annex F): rounds, overflows to inf */
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
  default:
    memcpy(dst, &d, sizeof d);
  }
}

/* Parses -?(0|[1-9][0-9]*) (JSON's integer grammar) into sign and
 * magnitude; nothing else, no whitespace, no '+', no NUL.  0, -1 (not that
 * grammar) or -2 (magnitude above 2^64-1). */
static int
parse_decimal(const char *s, size_t len, int *neg, uint64_t *mag)
{
  uint64_t m = 0;
  size_t i = 0;
  unsigned d;

  *neg = len > 0 && s[0] == '-';
  i = (size_t)*neg;
  if (i == len || (s[i] == '0' && len - i > 1))
    return -1;
  for (size_t j = i; j < len; j++)       /* grammar first, then overflow */
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

static int
put_float(const struct api__conv *c, const json_t *v, unsigned char *dst,
          struct rd_error *err)
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
      return c->bad(c, v, "is not a number (the strings allowed are "
                    "\"NaN\", \"Infinity\" and \"-Infinity\")", err);
  } else {
    return c->bad(c, v, "is not a number", err);
  }
  api__store_float(c->dtype, d, dst);
  return 0;
}

static int
put_int(const struct api__conv *c, const json_t *v, unsigned char *dst,
        struct rd_error *err)
{
  char range[96];
  int64_t s = 0;
  uint64_t mag = 0, max_pos, max_neg;
  int neg = 0, rc;
  int32_t i32;
  uint32_t u32;

  switch (c->dtype) {
  case RD_INT32:
    max_pos = INT32_MAX;
    max_neg = (uint64_t)INT32_MAX + 1;
    break;
  case RD_INT64:
    max_pos = INT64_MAX;
    max_neg = (uint64_t)INT64_MAX + 1;
    break;
  case RD_UINT32:
    max_pos = UINT32_MAX;
    max_neg = 0;
    break;
  default:
    max_pos = UINT64_MAX;
    max_neg = 0;
  }
  snprintf(range, sizeof range, "is out of range [%s%" PRIu64 ", %" PRIu64
           "]", max_neg ? "-" : "", max_neg, max_pos);

  if (json_is_string(v)) {
    rc = parse_decimal(json_string_value(v), json_string_length(v), &neg,
                       &mag);
    if (rc == -1)
      return c->bad(c, v, "is not a decimal integer", err);
    if (rc == -2)
      return c->bad(c, v, range, err);
  } else {
    switch (api__as_int64(v, &s)) {
    case 0:
      break;
    case -2:
      return c->bad(c, v, "is not exact as a JSON real; write it as an "
                    "integer or a decimal string", err);
    default:
      return c->bad(c, v, json_is_number(v) ? "is not an integer"
                                            : "is not a number", err);
    }
    neg = s < 0;
    mag = neg ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
  }
  if (mag > (neg ? max_neg : max_pos))
    return c->bad(c, v, range, err);

  switch (c->dtype) {
  case RD_INT32:
    i32 = neg ? (int32_t)(-(int64_t)mag) : (int32_t)mag;
    memcpy(dst, &i32, sizeof i32);
    break;
  case RD_UINT32:
    u32 = (uint32_t)mag;
    memcpy(dst, &u32, sizeof u32);
    break;
  case RD_INT64:
    /* -(2^63) has no positive int64 counterpart to negate. */
    s = !neg ? (int64_t)mag : mag == max_neg ? INT64_MIN : -(int64_t)mag;
    memcpy(dst, &s, sizeof s);
    break;
  default:
    memcpy(dst, &mag, sizeof mag);
  }
  return 0;
}

int
api__put_elem(struct api__conv *c, const json_t *v, struct rd_error *err)
{
  unsigned char *dst;
  int rc;

  if (c->out == NULL) {
    c->idx++;
    return 0;
  }
  dst = c->out + c->idx * c->esize;
  switch (c->dtype) {
  case RD_FLOAT32:
  case RD_FLOAT64:
  case RD_FLOAT16:
  case RD_BFLOAT16:
    rc = put_float(c, v, dst, err);
    break;
  default:
    rc = put_int(c, v, dst, err);
  }
  c->idx++;
  return rc;
}

int
api__append_elems(struct api_buf *b, const struct rd_plan *plan,
                  const void *out)
{
  const unsigned char *p = out;

  for (uint64_t k = 0; k < plan->out_count; k++) {
    /* Formats in place: room for a comma and the longest number. */
    if (api_buf_reserve(b, API_NUMFMT_MAX + 1) != 0)
      return RD_E_NOMEM;
    if (k != 0)
      b->data[b->len++] = ',';
    b->len += api_format_elem(b->data + b->len, plan->dtype,
                              p + k * plan->elem_size);
  }
  return 0;
}

int
api__append_json(struct api_buf *b, json_t *j)
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
