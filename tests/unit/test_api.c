/* test_api.c - unit tests of api/: error mapping, byte buffer, number
 * formatting, JSON request decoding and response encoding.
 *
 * Expected values are worked out by hand (or from the IEEE formats), never
 * copied from the program's output.  Run under an ASan build for leaks. */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "api.h"
#include "f16.h"
#include "numfmt.h"

/* ================================================================== */
/* Helpers                                                            */
/* ================================================================== */

static int decode_max(const char *json, uint64_t max, struct api_request *req,
                      struct rd_error *err)
{
  return api_json_decode(json, strlen(json), max, req, err);
}

static int decode(const char *json, struct api_request *req,
                  struct rd_error *err)
{
  return decode_max(json, 0, req, err);
}

/* Decoding `json` fails with `code` and a message containing `sub`. */
static void expect_fail_max(const char *json, uint64_t max, int code,
                            const char *sub)
{
  struct api_request req;
  struct rd_error err;
  int rc = decode_max(json, max, &req, &err);

  if (rc != code || strstr(err.msg, sub) == NULL)
    print_error("body %s\n  got %d (%s) \"%s\"\n  want %d (%s) containing "
                "\"%s\"\n",
                json, rc, api_errname(rc), err.msg, code, api_errname(code),
                sub);
  assert_int_equal(rc, code);
  assert_int_equal(err.code, code);
  assert_non_null(strstr(err.msg, sub));
  assert_null(req.data);
  api_request_free(&req); /* safe after failure too */
}

static void expect_fail(const char *json, int code, const char *sub)
{
  expect_fail_max(json, 0, code, sub);
}

/* Decodes an input {"dtype":dtype,"data":data} with op ReduceL2; returns
 * rc; on success the caller frees req. */
static int decode_data(const char *dtype, const char *data,
                       struct api_request *req, struct rd_error *err)
{
  char body[4096];

  snprintf(body, sizeof body,
           "{\"op\":\"ReduceL2\",\"input\":{\"dtype\":"
           "\"%s\",\"data\":%s}}",
           dtype, data);
  return decode(body, req, err);
}

static void expect_elem_fail(const char *dtype, const char *data,
                             const char *sub)
{
  char body[4096];

  snprintf(body, sizeof body,
           "{\"op\":\"ReduceL2\",\"input\":{\"dtype\":"
           "\"%s\",\"data\":%s}}",
           dtype, data);
  expect_fail(body, API_E_INVALID_ELEMENT, sub);
}

static uint32_t f32_bits(float f)
{
  uint32_t u;

  memcpy(&u, &f, sizeof u);
  return u;
}

static float f32_from_bits(uint32_t u)
{
  float f;

  memcpy(&f, &u, sizeof f);
  return f;
}

static const char *fmt(int dtype, const void *elem)
{
  static char buf[API_NUMFMT_MAX];

  api_format_elem(buf, dtype, elem);
  return buf;
}

static const char *fmt_f32(float f)
{
  return fmt(RD_FLOAT32, &f);
}

static const char *fmt_f64(double d)
{
  return fmt(RD_FLOAT64, &d);
}

static const char *fmt_u16(int dtype, uint16_t h)
{
  return fmt(dtype, &h);
}

/* ================================================================== */
/* Errors                                                             */
/* ================================================================== */

static void test_errname_status(void **state)
{
  static const struct {
    int code;
    const char *name;
    int status;
  } api[] = {
    { API_E_BAD_JSON, "BAD_JSON", 400 },
    { API_E_MISSING_FIELD, "MISSING_FIELD", 400 },
    { API_E_INVALID_FIELD, "INVALID_FIELD", 400 },
    { API_E_UNKNOWN_FIELD, "UNKNOWN_FIELD", 400 },
    { API_E_INVALID_ELEMENT, "INVALID_ELEMENT", 400 },
    { API_E_SHAPE_MISMATCH, "SHAPE_MISMATCH", 400 },
    { API_E_NOT_FOUND, "NOT_FOUND", 404 },
    { API_E_METHOD, "METHOD_NOT_ALLOWED", 405 },
    { API_E_NOT_ACCEPTABLE, "NOT_ACCEPTABLE", 406 },
    { API_E_LENGTH_REQUIRED, "LENGTH_REQUIRED", 411 },
    { API_E_BODY_TOO_LARGE, "BODY_TOO_LARGE", 413 },
    { API_E_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", 415 },
    { API_E_OVERLOADED, "OVERLOADED", 503 },
    { API_E_DRAINING, "DRAINING", 503 },
    { API_E_INTERNAL, "INTERNAL", 500 },
    { API_E_BAD_NPY, "BAD_NPY", 400 },
    { API_E_UNAUTHORIZED, "UNAUTHORIZED", 401 },
    { API_E_BAD_ENCODING, "BAD_ENCODING", 400 },
    { RD_E_INVALID, "INVALID_ARGUMENT", 400 },
    { RD_E_OP, "UNKNOWN_OP", 400 },
    { RD_E_OPSET, "INVALID_OPSET", 400 },
    { RD_E_DTYPE, "UNSUPPORTED_DTYPE", 400 },
    { RD_E_DTYPE_VERSION, "DTYPE_NOT_IN_VERSION", 400 },
    { RD_E_RANK, "RANK_TOO_LARGE", 400 },
    { RD_E_DIM, "INVALID_DIM", 400 },
    { RD_E_TOO_LARGE, "TENSOR_TOO_LARGE", 413 },
    { RD_E_AXIS_RANGE, "AXIS_OUT_OF_RANGE", 400 },
    { RD_E_AXIS_DUP, "DUPLICATE_AXIS", 400 },
    { RD_E_KEEPDIMS, "INVALID_KEEPDIMS", 400 },
    { RD_E_NOOP, "INVALID_NOOP_WITH_EMPTY_AXES", 400 },
    { RD_E_NOOP_VERSION, "NOOP_NOT_IN_VERSION", 400 },
    { RD_E_POLICY, "INVALID_OVERFLOW_POLICY", 400 },
    { RD_E_OVERFLOW, "INTEGER_OVERFLOW", 422 },
    { RD_E_NOMEM, "OUT_OF_MEMORY", 503 },
    { RD_E_STREAM, "INPUT_LENGTH", 400 },
    { RD_E_UNDEFINED, "UNDEFINED_RESULT", 422 },
    { RD_E_SELECT_LAST, "INVALID_SELECT_LAST_INDEX", 400 },
    { RD_E_SELECT_LAST_VERSION, "SELECT_LAST_INDEX_NOT_IN_VERSION", 400 },
    { RD_E_ATTRIBUTE, "ATTRIBUTE_NOT_ALLOWED", 400 },
    { RD_E_ELEMENT, "INVALID_ELEMENT", 400 },
  };
  /* -113 was REQUEST_TIMEOUT: never raised (libmicrohttpd closes idle
   * connections itself), so removed. */
  static const int unknown[] = { -23,  -50,  -99,   -106, -109, -113,
                                 -123, -124, -1000, 1,    200 };
  size_t i;

  (void)state;
  for (i = 0; i < sizeof api / sizeof api[0]; i++) {
    assert_string_equal(api_errname(api[i].code), api[i].name);
    assert_int_equal(api_http_status(api[i].code), api[i].status);
  }
  assert_string_equal(api_errname(RD_OK), "OK");
  assert_int_equal(api_http_status(RD_OK), 200);
  for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    assert_string_equal(api_errname(unknown[i]), "INTERNAL");
    assert_int_equal(api_http_status(unknown[i]), 500);
  }
}

static void test_api_fail(void **state)
{
  struct rd_error err;
  char big[400];
  size_t i;

  (void)state;
  assert_int_equal(api_fail(&err, API_E_INVALID_FIELD, "x = %d, y = %s", 4,
                            "z"),
                   API_E_INVALID_FIELD);
  assert_int_equal(err.code, API_E_INVALID_FIELD);
  assert_string_equal(err.msg, "x = 4, y = z");
  assert_int_equal(api_fail(NULL, RD_E_DIM, "ignored"), RD_E_DIM);

  /* 2-byte characters: the cut at 255 bytes lands inside one. */
  for (i = 0; i + 2 < sizeof big; i += 2) {
    big[i] = (char)0xC3;
    big[i + 1] = (char)0xA9; /* U+00E9 */
  }
  big[i] = '\0';
  api_fail(&err, RD_E_OP, "%s", big);
  assert_int_equal(strlen(err.msg), RD_ERRMSG_MAX - 1);
  assert_int_equal((unsigned char)err.msg[RD_ERRMSG_MAX - 2], '?');
  assert_int_equal((unsigned char)err.msg[RD_ERRMSG_MAX - 3], 0xA9);
}

static void test_utf8_sanitize(void **state)
{
  char s1[] = "ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";
  char s2[] = "a\xC3"
              "b\xFF"
              "c\xC0\xAF"
              "d\xED\xA0\x80"
              "e\xF4\x90\x80\x80"
              "f\xE2\x82";

  (void)state;
  api_utf8_sanitize(s1);
  assert_string_equal(s1, "ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  api_utf8_sanitize(s2);
  /* Truncated, invalid lead, overlong, surrogate, above U+10FFFF: each
   * bad byte becomes '?' (continuation bytes then stand alone). */
  assert_string_equal(s2, "a?b?c??d???e????f??");
}

/* ================================================================== */
/* Buffer                                                             */
/* ================================================================== */

static void test_buf(void **state)
{
  struct api_buf b;
  char *s, expect[3001];
  size_t len, i;

  (void)state;
  api_buf_init(&b);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  s = api_buf_steal(&b, &len); /* nothing appended: "" */
  assert_non_null(s);
  assert_string_equal(s, "");
  assert_int_equal(len, 0);
  free(s);

  assert_int_equal(api_buf_puts(&b, "ab"), 0);
  assert_int_equal(api_buf_append(&b, "cdef", 2), 0);
  assert_int_equal(api_buf_append(&b, NULL, 0), 0);
  assert_int_equal(api_buf_printf(&b, "[%d:%s]", 42, "x"), 0);
  assert_string_equal(b.data, "abcd[42:x]");
  assert_int_equal(b.len, 10);
  /* Growth across many reallocations, through printf's second pass. */
  for (i = 0; i < 1000; i++)
    assert_int_equal(api_buf_printf(&b, "%03zu", i % 1000), 0);
  assert_int_equal(b.len, 3010);
  for (i = 0; i < 1000; i++)
    snprintf(expect + 3 * i, 4, "%03zu", i);
  assert_memory_equal(b.data + 10, expect, 3000);
  assert_int_equal(b.data[b.len], '\0');
  assert_true(b.cap > b.len);

  /* A reservation that would wrap size_t is refused, buffer intact. */
  assert_int_equal(api_buf_reserve(&b, SIZE_MAX), RD_E_NOMEM);
  assert_int_equal(api_buf_reserve(&b, SIZE_MAX - b.len), RD_E_NOMEM);
  assert_int_equal(b.len, 3010);

  s = api_buf_steal(&b, &len);
  assert_int_equal(len, 3010);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  free(s);
  api_buf_free(&b); /* safe on an empty buffer */
  api_buf_free(&b);
}

/* ================================================================== */
/* Number formatting                                                  */
/* ================================================================== */

static void test_numfmt_fixed(void **state)
{
  int32_t i32;
  int64_t i64;
  uint32_t u32;
  uint64_t u64;

  (void)state;
  /* float32: shortest text that reads back to the float */
  assert_string_equal(fmt_f32(sqrtf(10.0f)), "3.1622777");
  assert_string_equal(fmt_f32(0.1f), "0.1");
  assert_string_equal(fmt_f32(1e20f), "1e+20");
  assert_string_equal(fmt_f32(sqrtf(5.0f)), "2.236068");
  assert_string_equal(fmt_f32(5.0f), "5");
  assert_string_equal(fmt_f32(-2.5f), "-2.5");
  assert_string_equal(fmt_f32(16777216.0f), "16777216");
  assert_string_equal(fmt_f32(FLT_MIN), "1.1754944e-38");
  assert_string_equal(fmt_f32(f32_from_bits(1)), "1e-45"); /* 2^-149 */
  assert_string_equal(fmt_f32(FLT_MAX), "3.4028235e+38");
  assert_string_equal(fmt_f32(1e-5f), "1e-5");
  assert_string_equal(fmt_f32(0.0001f), "0.0001");
  /* Integral values too take their shortest digits: 1.5e15f is
   * 1500000014041088, and "1.5e+15" reads back to it (issue 13). */
  assert_string_equal(fmt_f32(1.5e15f), "1.5e+15");
  assert_string_equal(fmt_f32(0.0f), "0");
  assert_string_equal(fmt_f32(-0.0f), "-0");
  assert_string_equal(fmt_f32(NAN), "\"NaN\"");
  assert_string_equal(fmt_f32(INFINITY), "\"Infinity\"");
  assert_string_equal(fmt_f32(-INFINITY), "\"-Infinity\"");

  /* float64 */
  assert_string_equal(fmt_f64(0.1), "0.1");
  assert_string_equal(fmt_f64(1.0 / 3.0), "0.3333333333333333");
  assert_string_equal(fmt_f64(sqrt(10.0)), "3.1622776601683795");
  assert_string_equal(fmt_f64(4.9406564584124654e-324), "5e-324");
  assert_string_equal(fmt_f64(DBL_MAX), "1.7976931348623157e+308");
  assert_string_equal(fmt_f64(1e16), "1e+16");
  assert_string_equal(fmt_f64(9999999999999998.0), "9999999999999998");
  /* 1 digit: "1e+15" (5 characters) beats "1000000000000000" (16). */
  assert_string_equal(fmt_f64(1e15), "1e+15");
  assert_string_equal(fmt_f64(-1e300), "-1e+300");
  assert_string_equal(fmt_f64(-0.0), "-0");
  assert_string_equal(fmt_f64(-NAN), "\"NaN\"");

  /* float16 (bits): 65504 = 0x7BFF; three digits read back to it (65500
   * is 4 away, the neighbours 65472 and inf are farther), and the plain
   * "65500" is shorter than "6.55e+4". */
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x7BFF), "65500");
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x3C00), "1");
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x2E66), "0.1");    /* 0.09997559 */
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x3555), "0.3333"); /* 0.33325195 */
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x0001), "6e-8");   /* 2^-24 */
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x8000), "-0");
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x7C00), "\"Infinity\"");
  assert_string_equal(fmt_u16(RD_FLOAT16, 0xFC00), "\"-Infinity\"");
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x7E00), "\"NaN\"");

  /* bfloat16 (bits) */
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x3DCD), "0.1");   /* 0.10009766 */
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x3EAB), "0.334"); /* 0.33398438 */
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x4049), "3.14");  /* 3.140625 */
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x3F80), "1");
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0xFF80), "\"-Infinity\"");
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x7FC0), "\"NaN\"");

  /* integers */
  i32 = INT32_MIN;
  assert_string_equal(fmt(RD_INT32, &i32), "-2147483648");
  i32 = INT32_MAX;
  assert_string_equal(fmt(RD_INT32, &i32), "2147483647");
  i64 = INT64_MIN;
  assert_string_equal(fmt(RD_INT64, &i64), "-9223372036854775808");
  u32 = UINT32_MAX;
  assert_string_equal(fmt(RD_UINT32, &u32), "4294967295");
  u64 = INT64_MAX;
  assert_string_equal(fmt(RD_UINT64, &u64), "9223372036854775807");
  u64 = (uint64_t)INT64_MAX + 1;
  assert_string_equal(fmt(RD_UINT64, &u64), "\"9223372036854775808\"");
  u64 = UINT64_MAX;
  assert_string_equal(fmt(RD_UINT64, &u64), "\"18446744073709551615\"");
  assert_int_equal(api_format_elem((char[API_NUMFMT_MAX]){ 0 }, RD_UINT64,
                                   &u64),
                   22);
}

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t rnd(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* How a client reads the text back: strtod, then rounding to the dtype. */
static uint64_t client_bits(int dtype, const char *text)
{
  double d = strtod(text, NULL);
  uint64_t u;

  switch (dtype) {
  case RD_FLOAT32: return f32_bits((float)d);
  case RD_FLOAT16: return rd_f64_to_f16(d);
  case RD_BFLOAT16: return rd_f64_to_bf16(d);
  default: memcpy(&u, &d, sizeof u); return u;
  }
}

/* Significant digits of a decimal text ("0.00120" -> 3, "1.5e+15" -> 2). */
static int sig_digits(const char *s)
{
  int n = 0, trailing_zeros = 0, started = 0;

  for (; *s != '\0' && *s != 'e'; s++) {
    if (*s < '0' || *s > '9')
      continue;
    if (*s != '0')
      started = 1;
    if (!started)
      continue;
    n++;
    trailing_zeros = *s == '0' ? trailing_zeros + 1 : 0;
  }
  return n - trailing_zeros;
}

static void check_shortest(int dtype, const void *elem, double v, uint64_t bits)
{
  const char *text = fmt(dtype, elem);
  char shorter[320], exact[320];
  json_t *j;
  int p, q;

  if (isnan(v) || isinf(v))
    return;
  if (v == 0) {
    assert_string_equal(text, signbit(v) ? "-0" : "0");
    return;
  }
  /* valid JSON number, never "inf"/"nan"/leading '+' */
  j = json_loads(text, JSON_DECODE_ANY, NULL);
  assert_non_null(j);
  assert_true(json_is_number(j));
  json_decref(j);
  assert_true(text[0] == '-' || (text[0] >= '0' && text[0] <= '9'));
  /* reads back to the same bits */
  if (client_bits(dtype, text) != bits)
    print_error("dtype %d bits %#" PRIx64 ": \"%s\"\n", dtype, bits, text);
  assert_true(client_bits(dtype, text) == bits);
  /* an integral value below 1e16 is never longer than the exact integer
   * (integral values have no special case otherwise: issue 13) */
  if (v == trunc(v) && fabs(v) < 1e16) {
    snprintf(exact, sizeof exact, "%.0f", v);
    assert_true(strlen(text) <= strlen(exact));
  }
  /* and no text with fewer significant digits would */
  p = sig_digits(text);
  assert_true(p >= 1 && p <= 17);
  for (q = 1; q < p; q++) {
    snprintf(shorter, sizeof shorter, "%.*g", q, v);
    if (client_bits(dtype, shorter) == bits)
      print_error("dtype %d bits %#" PRIx64 ": \"%s\" but \"%s\" works\n",
                  dtype, bits, text, shorter);
    assert_true(client_bits(dtype, shorter) != bits);
  }
}

static void test_numfmt_property(void **state)
{
  uint64_t seed = 0x9E3779B97F4A7C15ULL, r, u;
  uint32_t u32;
  uint16_t h;
  double d;
  float f;
  int i;

  (void)state;
  for (i = 0; i < 20000; i++) {
    r = rnd(&seed);
    u32 = (uint32_t)r;
    f = f32_from_bits(u32);
    check_shortest(RD_FLOAT32, &f, f, u32);
    /* also values of ordinary magnitude, where most data lives */
    f = (float)((double)(r >> 11) / 9007199254740992.0 * 2000.0 - 1000.0);
    check_shortest(RD_FLOAT32, &f, f, f32_bits(f));

    u = rnd(&seed);
    memcpy(&d, &u, sizeof d);
    check_shortest(RD_FLOAT64, &d, d, u);
    d = (double)(u >> 11) / 9007199254740992.0 * 1e6;
    memcpy(&u, &d, sizeof u);
    check_shortest(RD_FLOAT64, &d, d, u);
  }
  /* powers of two: the read-back interval is lopsided there */
  for (i = -149; i <= 127; i++) {
    f = ldexpf(1.0f, i);
    check_shortest(RD_FLOAT32, &f, f, f32_bits(f));
  }
  for (i = -1074; i <= 1023; i++) {
    d = ldexp(1.0, i);
    memcpy(&u, &d, sizeof u);
    check_shortest(RD_FLOAT64, &d, d, u);
  }
  /* every float16 and bfloat16 value */
  for (i = 0; i < 65536; i++) {
    h = (uint16_t)i;
    check_shortest(RD_FLOAT16, &h, rd_f16_to_f64(h), h);
    check_shortest(RD_BFLOAT16, &h, rd_bf16_to_f64(h), h);
  }
}

/* ================================================================== */
/* Decoding: fields                                                   */
/* ================================================================== */

static void test_decode_example(void **state)
{
  static const char body[] =
    "{\"op\": \"ReduceSumSquare\", \"opset\": 13, \"axes\": [1, -1],"
    " \"keepdims\": 0, \"noop_with_empty_axes\": 1, \"overflow\": \"wrap\","
    " \"input\": {\"dtype\": \"float32\", \"shape\": [3, 2, 2],"
    " \"data\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.5]}}";
  struct api_request req;
  struct rd_error err;
  const float *x;
  int i;

  (void)state;
  assert_int_equal(decode(body, &req, &err), 0);
  assert_int_equal(req.params.op, RD_OP_SUM_SQUARE);
  assert_int_equal(req.params.opset, 13);
  assert_int_equal(req.params.dtype, RD_FLOAT32);
  assert_int_equal(req.params.rank, 3);
  assert_ptr_equal(req.params.shape, req.shape);
  assert_int_equal(req.shape[0], 3);
  assert_int_equal(req.shape[1], 2);
  assert_int_equal(req.shape[2], 2);
  assert_ptr_equal(req.params.axes, req.axes);
  assert_int_equal(req.params.naxes, 2);
  assert_int_equal(req.axes[0], 1);
  assert_int_equal(req.axes[1], -1);
  assert_int_equal(req.params.keepdims, 0);
  assert_int_equal(req.params.noop_with_empty_axes, 1);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_WRAP);
  assert_int_equal(req.data_bytes, 12 * 4);
  x = req.data;
  for (i = 0; i < 11; i++)
    assert_true(x[i] == (float)(i + 1));
  assert_true(x[11] == 12.5f);
  api_request_free(&req);
  api_request_free(&req); /* twice is fine */
  assert_null(req.data);
}

static void test_decode_defaults(void **state)
{
  struct api_request req;
  struct rd_error err;

  (void)state;
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":"
                          "\"double\",\"data\":[1,2]}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.op, RD_OP_L2);
  assert_int_equal(req.params.opset, 18);
  assert_int_equal(req.params.keepdims, 1);
  assert_true(req.params.noop_with_empty_axes == RD_UNSET);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_ERROR);
  assert_int_equal(req.params.naxes, 0);
  assert_int_equal(req.params.dtype, RD_FLOAT64);
  assert_int_equal(req.params.rank, 1);
  assert_int_equal(req.shape[0], 2);
  api_request_free(&req);

  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"opset\":11.0,\"keepdims\":"
                          "true,\"noop_with_empty_axes\":false,\"axes\":[],"
                          "\"overflow\":\"saturate\",\"input\":{\"dtype\":"
                          "\"float\",\"data\":[1]}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.opset, 11);
  assert_int_equal(req.params.keepdims, 1);
  assert_int_equal(req.params.noop_with_empty_axes, 0);
  assert_int_equal(req.params.naxes, 0);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_SATURATE);
  assert_int_equal(req.params.dtype, RD_FLOAT32);
  api_request_free(&req);

  /* Integers other than 0/1 are the library's to reject. */
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"keepdims\":7,"
                          "\"noop_with_empty_axes\":-3,\"opset\":0,"
                          "\"axes\":[5,5],\"input\":{\"dtype\":\"int32\","
                          "\"data\":[1]}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.keepdims, 7);
  assert_int_equal(req.params.noop_with_empty_axes, -3);
  assert_int_equal(req.params.opset, 0);
  assert_int_equal(req.params.naxes, 2);
  api_request_free(&req);
}

static void test_decode_bad_json(void **state)
{
  struct api_request req;
  struct rd_error err;

  (void)state;
  expect_fail("{", API_E_BAD_JSON, "line 1");
  expect_fail("{\"op\":\"ReduceL2\",\n \"op\":\"ReduceL2\"}", API_E_BAD_JSON,
              "duplicate");
  expect_fail("{\"op\":\"ReduceL2\",\n\n  x}", API_E_BAD_JSON, "line 3");
  expect_fail("", API_E_BAD_JSON, "invalid JSON");
  expect_fail("{} {}", API_E_BAD_JSON, "invalid JSON");
  expect_fail("[1]", API_E_BAD_JSON, "must be a JSON object, got a list");
  expect_fail("42", API_E_BAD_JSON, "must be a JSON object, got a number");
  expect_fail("{\"op\":\"a\\u0000b\"}", API_E_BAD_JSON, "invalid JSON");
  /* Integer literals beyond int64 fail in the parser. */
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"uint64\",\"data\":"
              "[18446744073709551615]}}",
              API_E_BAD_JSON, "too big");
  assert_int_equal(api_json_decode(NULL, 0, 0, &req, &err), API_E_BAD_JSON);
  /* Invalid UTF-8 is the parser's error too. */
  expect_fail("{\"op\":\"\xFF\"}", API_E_BAD_JSON, "invalid JSON");
}

static void test_decode_fields(void **state)
{
  (void)state;
  /* unknown fields, top level and in input */
  /* axis is ArgMax/ArgMin's (issue 11): a Reduce op refuses it by name. */
  expect_fail("{\"op\":\"ReduceL2\",\"axis\":[1],\"input\":{}}", RD_E_ATTRIBUTE,
              "axis is not an attribute of ReduceL2");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"float32\",\"data\":"
              "[1],\"strides\":[1]}}",
              API_E_UNKNOWN_FIELD, "unknown field \"input.strides\"");
  expect_fail("{\"op\":\"ReduceL2\",\"\\u00e9\\n\":1}", API_E_UNKNOWN_FIELD,
              "unknown field \"\\u00E9\\n\"");

  /* missing required fields */
  expect_fail("{}", API_E_MISSING_FIELD, "\"op\"");
  expect_fail("{\"op\":\"ReduceL2\"}", API_E_MISSING_FIELD, "\"input\"");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"data\":[1]}}",
              API_E_MISSING_FIELD, "\"input.dtype\"");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\"}}",
              API_E_MISSING_FIELD, "\"input.data\"");

  /* op */
  expect_fail("{\"op\":\"ReduceMaximum\",\"input\":{}}", RD_E_OP,
              "unknown op \"ReduceMaximum\"; valid ops: ReduceL2, "
              "ReduceSumSquare, ReduceSum");
  expect_fail("{\"op\":\"reducel2\",\"input\":{}}", RD_E_OP, "\"reducel2\"");
  expect_fail("{\"op\":2,\"input\":{}}", API_E_INVALID_FIELD,
              "op must be a string, got a number");

  /* opset */
  expect_fail("{\"op\":\"ReduceL2\",\"opset\":1.5,\"input\":{}}",
              API_E_INVALID_FIELD, "opset must be an integer, got 1.5");
  expect_fail("{\"op\":\"ReduceL2\",\"opset\":\"18\",\"input\":{}}",
              API_E_INVALID_FIELD, "opset must be an integer, got \"18\"");
  expect_fail("{\"op\":\"ReduceL2\",\"opset\":true,\"input\":{}}",
              API_E_INVALID_FIELD, "opset must be an integer, got true");
  expect_fail("{\"op\":\"ReduceL2\",\"opset\":1e30,\"input\":{}}",
              API_E_INVALID_FIELD, "opset = 1e+30 is too large");
  expect_fail("{\"op\":\"ReduceL2\",\"opset\":null,\"input\":{}}",
              API_E_INVALID_FIELD, "got null");

  /* keepdims / noop_with_empty_axes */
  expect_fail("{\"op\":\"ReduceL2\",\"keepdims\":\"1\",\"input\":{}}",
              API_E_INVALID_FIELD,
              "keepdims must be an integer or true/false, got \"1\"");
  expect_fail("{\"op\":\"ReduceL2\",\"keepdims\":0.5,\"input\":{}}",
              API_E_INVALID_FIELD, "keepdims must be an integer");
  expect_fail("{\"op\":\"ReduceL2\",\"noop_with_empty_axes\":[],\"input\":{}}",
              API_E_INVALID_FIELD,
              "noop_with_empty_axes must be an integer "
              "or true/false, got [...]");
  expect_fail("{\"op\":\"ReduceL2\",\"noop_with_empty_axes\":"
              "-9223372036854775808,\"input\":{}}",
              RD_E_NOOP, "-9223372036854775808");

  /* overflow */
  expect_fail("{\"op\":\"ReduceL2\",\"overflow\":\"clamp\",\"input\":{}}",
              RD_E_POLICY, "\"clamp\"; valid policies: error, saturate, wrap");
  expect_fail("{\"op\":\"ReduceL2\",\"overflow\":1,\"input\":{}}",
              API_E_INVALID_FIELD, "overflow must be a string");

  /* axes */
  expect_fail("{\"op\":\"ReduceL2\",\"axes\":1,\"input\":{}}",
              API_E_INVALID_FIELD,
              "axes must be a list of integers, got a "
              "number");
  expect_fail("{\"op\":\"ReduceL2\",\"axes\":null,\"input\":{}}",
              API_E_INVALID_FIELD, "axes must be a list");
  expect_fail("{\"op\":\"ReduceL2\",\"axes\":[0,1.5],\"input\":{}}",
              API_E_INVALID_FIELD, "axes[1] must be an integer, got 1.5");
  expect_fail("{\"op\":\"ReduceL2\",\"axes\":[0,false],\"input\":{}}",
              API_E_INVALID_FIELD, "axes[1] must be an integer, got false");
  expect_fail("{\"op\":\"ReduceL2\",\"axes\":[0,1,2,3,4,5,6,7,8,9,10,11,12,"
              "13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,0],"
              "\"input\":{}}",
              API_E_INVALID_FIELD, "axes has 33 entries; at most 32");

  /* input */
  expect_fail("{\"op\":\"ReduceL2\",\"input\":[1]}", API_E_INVALID_FIELD,
              "input must be an object, got a list");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int4\","
              "\"data\":[1]}}",
              RD_E_DTYPE,
              "unsupported dtype \"int4\"; "
              "supported: float32, float64, float16, bfloat16, int8, uint8, ");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":1,\"data\":[1]}}",
              API_E_INVALID_FIELD, "input.dtype must be a string");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":{\"a\":1}}}",
              API_E_INVALID_FIELD,
              "input.data must be a list or a single element, got an object");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"shape\":2,\"data\":[1,2]}}",
              API_E_INVALID_FIELD,
              "input.shape must be a list of integers, got a number");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"shape\":[2,\"1\"],\"data\":[1,2]}}",
              API_E_INVALID_FIELD,
              "input.shape[1] must be an integer, got \"1\"");
}

/* ================================================================== */
/* Decoding: shapes and data layout                                   */
/* ================================================================== */

static void test_decode_layout(void **state)
{
  struct api_request req;
  struct rd_error err;
  const int32_t *x;
  int i;

  (void)state;
  /* nested: shape from the nesting, row-major */
  assert_int_equal(decode_data("int32", "[[[1,2,3],[4,5,6]]]", &req, &err), 0);
  assert_int_equal(req.params.rank, 3);
  assert_int_equal(req.shape[0], 1);
  assert_int_equal(req.shape[1], 2);
  assert_int_equal(req.shape[2], 3);
  assert_int_equal(req.data_bytes, 24);
  x = req.data;
  for (i = 0; i < 6; i++)
    assert_int_equal(x[i], i + 1);
  api_request_free(&req);

  /* nested with an agreeing shape */
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
                          "\"shape\":[2,2],\"data\":[[1,2],[3,4]]}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.rank, 2);
  x = req.data;
  assert_int_equal(x[3], 4);
  api_request_free(&req);

  /* flat with a shape */
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
                          "\"shape\":[2,1,3],\"data\":[6,5,4,3,2,1]}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.rank, 3);
  assert_int_equal(req.shape[2], 3);
  x = req.data;
  assert_int_equal(x[0], 6);
  assert_int_equal(x[5], 1);
  api_request_free(&req);

  /* scalar: rank 0, with or without "shape": [] */
  assert_int_equal(decode_data("int64", "-7", &req, &err), 0);
  assert_int_equal(req.params.rank, 0);
  assert_int_equal(req.data_bytes, 8);
  assert_int_equal(*(const int64_t *)req.data, -7);
  api_request_free(&req);
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":"
                          "\"float32\",\"shape\":[],\"data\":\"NaN\"}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.rank, 0);
  assert_true(isnan(*(const float *)req.data));
  api_request_free(&req);

  /* empty tensors */
  assert_int_equal(decode_data("float32", "[]", &req, &err), 0);
  assert_int_equal(req.params.rank, 1);
  assert_int_equal(req.shape[0], 0);
  assert_int_equal(req.data_bytes, 0);
  assert_non_null(req.data);
  api_request_free(&req);
  assert_int_equal(decode_data("float32", "[[],[]]", &req, &err), 0);
  assert_int_equal(req.params.rank, 2);
  assert_int_equal(req.shape[0], 2);
  assert_int_equal(req.shape[1], 0);
  assert_int_equal(req.data_bytes, 0);
  api_request_free(&req);
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
                          "\"shape\":[0,3,1000000000000],\"data\":[]}}",
                          &req, &err),
                   0);
  assert_int_equal(req.params.rank, 3);
  assert_int_equal(req.data_bytes, 0);
  api_request_free(&req);

  /* max_elements */
  assert_int_equal(decode_max("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":"
                              "\"int32\",\"data\":[1,2,3,4]}}",
                              4, &req, &err),
                   0);
  api_request_free(&req);
}

static void test_decode_shape_errors(void **state)
{
  (void)state;
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[3,2,2],\"data\":[1,2,3,4,5,6,7,8,9,10,11]}}",
              API_E_SHAPE_MISMATCH,
              "input.data has 11 elements; shape [3,2,2] needs 12");
  /* a huge shape with tiny data: an error, not an allocation */
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[1000000000,1000000000],\"data\":[1]}}",
              API_E_SHAPE_MISMATCH,
              "input.data has 1 elements; shape [1000000000,1000000000] needs "
              "1000000000000000000");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[4611686018427387904,4],\"data\":[1]}}",
              RD_E_TOO_LARGE, "");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[2,-1],\"data\":[1]}}",
              RD_E_DIM, "shape[1] is -1");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
              "1,1],\"data\":[1]}}",
              RD_E_RANK, "33");
  expect_fail(
    "{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"data\":"
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
    "}}",
    RD_E_RANK, "deeper than 32");
  expect_fail_max("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
                  "\"data\":[1,2,3,4]}}",
                  3, RD_E_TOO_LARGE, "input has 4 elements; the limit is 3");
  expect_fail_max("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
                  "\"shape\":[1000,1000],\"data\":[1]}}",
                  1000, RD_E_TOO_LARGE,
                  "input has 1000000 elements; the limit is 1000");

  /* ragged nesting, named by path */
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":[[1,2],[3]]}}",
              API_E_SHAPE_MISMATCH, "input.data[1] has 1 elements; expected 2");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":[[1,2],3]}}",
              API_E_SHAPE_MISMATCH, "input.data[1] is not a list");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":[[1,[2]],[3,4]]}}",
              API_E_SHAPE_MISMATCH, "input.data[0][1] is a list");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":[[[1],[2]],[[3],[4,5]]]}}",
              API_E_SHAPE_MISMATCH,
              "input.data[1][1] has 2 elements; expected 1 (the data is "
              "nested as shape [2,2,1]");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":[1,[2]]}}",
              API_E_SHAPE_MISMATCH, "input.data[1] is a list");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\","
              "\"data\":[[],[1]]}}",
              API_E_SHAPE_MISMATCH, "input.data[1] has 1 elements; expected 0");

  /* nesting and shape disagree */
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[3,2],\"data\":[[1,2,3],[4,5,6]]}}",
              API_E_SHAPE_MISMATCH,
              "input.data is nested as shape [2,3] but input.shape is [3,2]");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[4],\"data\":[[1,2],[3,4]]}}",
              API_E_SHAPE_MISMATCH,
              "nested as shape [2,2] but input.shape is [4]");
  expect_fail("{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"int32\",\"shape\":"
              "[1],\"data\":5}}",
              API_E_SHAPE_MISMATCH,
              "input.data is a single element (rank 0) but input.shape is "
              "[1]");
}

/* ================================================================== */
/* Decoding: elements per dtype                                       */
/* ================================================================== */

static void test_elems_float(void **state)
{
  struct api_request req;
  struct rd_error err;
  const float *f;
  const double *d;
  const uint16_t *h;

  (void)state;
  assert_int_equal(decode_data("float32",
                               "[1, 2.5, \"NaN\", \"Infinity\", "
                               "\"-Infinity\", -0.0, 1e39, 16777217, 0.1]",
                               &req, &err),
                   0);
  f = req.data;
  assert_true(f[0] == 1.0f);
  assert_true(f[1] == 2.5f);
  assert_true(isnan(f[2]));
  assert_true(isinf(f[3]) && f[3] > 0);
  assert_true(isinf(f[4]) && f[4] < 0);
  assert_int_equal(f32_bits(f[5]), 0x80000000u);
  assert_true(isinf(f[6]) && f[6] > 0); /* beyond FLT_MAX */
  assert_true(f[7] == 16777216.0f);     /* tie to even */
  assert_int_equal(f32_bits(f[8]), 0x3DCCCCCDu);
  api_request_free(&req);

  assert_int_equal(decode_data("float64",
                               "[0.1, -3, \"-Infinity\", "
                               "9007199254740993]",
                               &req, &err),
                   0);
  d = req.data;
  assert_true(d[0] == 0.1);
  assert_true(d[1] == -3.0);
  assert_true(isinf(d[2]) && d[2] < 0);
  assert_true(d[3] == 9007199254740992.0);
  api_request_free(&req);

  /* float16: 300000 is inf (as numpy); 65519 rounds down to 65504,
   * 65520 (the halfway point to 2^16) up to inf; 2^-24 is subnormal 1. */
  assert_int_equal(decode_data("float16",
                               "[300000, 65504, 65519, 65520, 1, "
                               "5.960464477539063e-08, 0.1, -2, \"NaN\"]",
                               &req, &err),
                   0);
  h = req.data;
  assert_int_equal(h[0], 0x7C00);
  assert_int_equal(h[1], 0x7BFF);
  assert_int_equal(h[2], 0x7BFF);
  assert_int_equal(h[3], 0x7C00);
  assert_int_equal(h[4], 0x3C00);
  assert_int_equal(h[5], 0x0001);
  assert_int_equal(h[6], 0x2E66);
  assert_int_equal(h[7], 0xC000);
  assert_true((h[8] & 0x7C00) == 0x7C00 && (h[8] & 0x03FF) != 0);
  assert_int_equal(req.data_bytes, 18);
  api_request_free(&req);

  /* bfloat16: 1 + 2^-8 is halfway between 0x3F80 and 0x3F81 (even: 0x3F80);
   * 1 + 3*2^-8 halfway between 0x3F81 and 0x3F82 (even: 0x3F82). */
  assert_int_equal(decode_data("bfloat16",
                               "[1, 1.00390625, 1.01171875, 0.1, "
                               "3.14159, 1e39, \"-Infinity\"]",
                               &req, &err),
                   0);
  h = req.data;
  assert_int_equal(h[0], 0x3F80);
  assert_int_equal(h[1], 0x3F80);
  assert_int_equal(h[2], 0x3F82);
  assert_int_equal(h[3], 0x3DCD);
  assert_int_equal(h[4], 0x4049);
  assert_int_equal(h[5], 0x7F80);
  assert_int_equal(h[6], 0xFF80);
  api_request_free(&req);

  expect_elem_fail("float32", "[1, \"inf\"]",
                   "input.data[1] = \"inf\" is not "
                   "a number (the strings allowed are \"NaN\", \"Infinity\" "
                   "and \"-Infinity\") (dtype float32)");
  expect_elem_fail("float32", "[\"nan\"]", "input.data[0] = \"nan\"");
  expect_elem_fail("float64", "[\"+Infinity\"]",
                   "input.data[0] = "
                   "\"+Infinity\"");
  expect_elem_fail("float16", "[\"1.5\"]", "input.data[0] = \"1.5\"");
  expect_elem_fail("bfloat16", "[1, 2, true]",
                   "input.data[2] = true is not "
                   "a number (dtype bfloat16)");
  expect_elem_fail("float32", "[null]",
                   "input.data[0] = null is not a "
                   "number (dtype float32)");
  expect_elem_fail("float32", "false", "input.data = false is not a number");
}

static void test_elems_int(void **state)
{
  struct api_request req;
  struct rd_error err;
  const int32_t *i32;
  const int64_t *i64;
  const uint32_t *u32;
  const uint64_t *u64;

  (void)state;
  assert_int_equal(decode_data("int32",
                               "[2147483647, -2147483648, 2.0, "
                               "\"123\", \"-0\", -5, \"-2147483648\", 1e3]",
                               &req, &err),
                   0);
  i32 = req.data;
  assert_int_equal(i32[0], INT32_MAX);
  assert_int_equal(i32[1], INT32_MIN);
  assert_int_equal(i32[2], 2);
  assert_int_equal(i32[3], 123);
  assert_int_equal(i32[4], 0);
  assert_int_equal(i32[5], -5);
  assert_int_equal(i32[6], INT32_MIN);
  assert_int_equal(i32[7], 1000);
  api_request_free(&req);

  expect_elem_fail("int32", "[2147483648]",
                   "input.data[0] = 2147483648 is "
                   "out of range [-2147483648, 2147483647] (dtype int32)");
  expect_elem_fail("int32", "[0, -2147483649]",
                   "input.data[1] = -2147483649 "
                   "is out of range");
  expect_elem_fail("int32", "[1099511627776]",
                   "1099511627776 is out of "
                   "range");
  expect_elem_fail("int32", "[\"2147483648\"]",
                   "\"2147483648\" is out of "
                   "range");
  expect_elem_fail("int64", "[1, 2, 3, 4, 1.5]",
                   "input.data[4] = 1.5 is not an integer (dtype int64)");
  expect_elem_fail("int32", "[[1, 2], [3, \"abc\"]]",
                   "input.data[3] = \"abc\" "
                   "is not a decimal integer (dtype int32)");
  expect_elem_fail("int32", "[true]",
                   "input.data[0] = true is not a number "
                   "(dtype int32)");
  expect_elem_fail("uint32", "[null]", "input.data[0] = null is not a number");
  expect_elem_fail("int64", "[\"\"]", "is not a decimal integer");
  expect_elem_fail("int64", "[\"+1\"]", "\"+1\" is not a decimal integer");
  expect_elem_fail("int64", "[\" 1\"]", "\" 1\" is not a decimal integer");
  expect_elem_fail("int64", "[\"1 \"]", "\"1 \" is not a decimal integer");
  expect_elem_fail("int64", "[\"01\"]", "\"01\" is not a decimal integer");
  expect_elem_fail("int64", "[\"-\"]", "\"-\" is not a decimal integer");
  expect_elem_fail("int64", "[\"1e3\"]", "\"1e3\" is not a decimal integer");
  expect_elem_fail("int64", "[\"0x10\"]", "is not a decimal integer");
  expect_elem_fail("int64", "[\"1.0\"]", "is not a decimal integer");

  assert_int_equal(decode_data("int64",
                               "[9223372036854775807, "
                               "-9223372036854775808, \"-9223372036854775808\","
                               " 1e15, -9007199254740992.0]",
                               &req, &err),
                   0);
  i64 = req.data;
  assert_true(i64[0] == INT64_MAX);
  assert_true(i64[1] == INT64_MIN);
  assert_true(i64[2] == INT64_MIN);
  assert_true(i64[3] == 1000000000000000);
  assert_true(i64[4] == -9007199254740992);
  api_request_free(&req);
  expect_elem_fail("int64", "[\"9223372036854775808\"]",
                   "input.data[0] = \"9223372036854775808\" is out of range "
                   "[-9223372036854775808, 9223372036854775807] (dtype int64)");
  expect_elem_fail("int64", "[\"-9223372036854775809\"]", "is out of range");
  /* Integral reals above 2^53 may have been rounded by the parser. */
  expect_elem_fail("int64", "[9007199254740994.0]",
                   "is not exact as a JSON "
                   "real");
  expect_elem_fail("int64", "[1e19]", "input.data[0] = 1e+19 is not exact");

  assert_int_equal(decode_data("uint32", "[4294967295, 0, \"4294967295\"]",
                               &req, &err),
                   0);
  u32 = req.data;
  assert_int_equal(u32[0], UINT32_MAX);
  assert_int_equal(u32[1], 0);
  assert_int_equal(u32[2], UINT32_MAX);
  api_request_free(&req);
  expect_elem_fail("uint32", "[4294967296]",
                   "4294967296 is out of range "
                   "[0, 4294967295] (dtype uint32)");
  expect_elem_fail("uint32", "[-1]", "input.data[0] = -1 is out of range");

  assert_int_equal(decode_data("uint64",
                               "[\"18446744073709551615\", "
                               "9223372036854775807, \"9223372036854775808\", "
                               "\"0\"]",
                               &req, &err),
                   0);
  u64 = req.data;
  assert_true(u64[0] == UINT64_MAX);
  assert_true(u64[1] == (uint64_t)INT64_MAX);
  assert_true(u64[2] == (uint64_t)INT64_MAX + 1);
  assert_true(u64[3] == 0);
  api_request_free(&req);
  expect_elem_fail("uint64", "[\"18446744073709551616\"]",
                   "\"18446744073709551616\" is out of range [0, "
                   "18446744073709551615] (dtype uint64)");
  expect_elem_fail("uint64", "[\"99999999999999999999999\"]",
                   "is out of range");
  expect_elem_fail("uint64", "[\"-1\"]", "\"-1\" is out of range");
  expect_elem_fail("uint64", "[-1]", "-1 is out of range");
}

/* ================================================================== */
/* Encoding                                                           */
/* ================================================================== */

/* A plan as rd_plan_init() would leave it, for the fields the encoder
 * reads. */
static void make_plan(struct rd_plan *plan, int op, int version, int dtype,
                      size_t rank, const int64_t *shape)
{
  size_t i;

  memset(plan, 0, sizeof *plan);
  plan->op = op;
  plan->version = version;
  plan->dtype = dtype;
  plan->elem_size = rd_dtype_size(dtype);
  plan->out_dtype = rd_op_out_dtype(op, dtype);
  plan->out_elem_size = rd_dtype_size(plan->out_dtype);
  plan->out_rank = rank;
  plan->out_count = 1;
  for (i = 0; i < rank; i++) {
    plan->out_shape[i] = shape[i];
    plan->out_count *= (uint64_t)shape[i];
  }
  plan->out_bytes = plan->out_count * plan->out_elem_size;
}

static json_t *parse_buf(const struct api_buf *b)
{
  json_error_t jerr;
  json_t *j = json_loadb(b->data, b->len, JSON_REJECT_DUPLICATES, &jerr);

  if (j == NULL)
    print_error("not JSON (%s): %s\n", jerr.text, b->data);
  assert_non_null(j);
  return j;
}

static void test_encode_result_f32(void **state)
{
  static const int64_t shape[] = { 3, 2 };
  float out[6];
  struct rd_plan plan;
  struct api_buf b;
  json_t *j, *o, *data;
  size_t i;

  (void)state;
  out[0] = sqrtf(10.0f);
  out[1] = 5.0f;
  out[2] = NAN;
  out[3] = -INFINITY;
  out[4] = -0.0f;
  out[5] = 1e20f;
  make_plan(&plan, RD_OP_L2, 18, RD_FLOAT32, 2, shape);
  api_buf_init(&b);
  assert_int_equal(api_buf_puts(&b, "prefix:"), 0); /* appends */
  assert_int_equal(api_json_encode_result(&plan, 21, out, &b), 0);
  assert_string_equal(b.data,
                      "prefix:{\"op\":\"ReduceL2\",\"opset\":21,"
                      "\"op_version\":18,\"output\":{\"dtype\":\"float32\","
                      "\"shape\":[3,2],\"data\":[3.1622777,5,\"NaN\","
                      "\"-Infinity\",-0,1e+20]}}");
  memmove(b.data, b.data + 7, b.len - 7 + 1);
  b.len -= 7;

  j = parse_buf(&b);
  assert_string_equal(json_string_value(json_object_get(j, "op")), "ReduceL2");
  assert_int_equal(json_integer_value(json_object_get(j, "opset")), 21);
  assert_int_equal(json_integer_value(json_object_get(j, "op_version")), 18);
  o = json_object_get(j, "output");
  assert_string_equal(json_string_value(json_object_get(o, "dtype")),
                      "float32");
  assert_int_equal(json_array_size(json_object_get(o, "shape")), 2);
  assert_int_equal(json_integer_value(
                     json_array_get(json_object_get(o, "shape"), 0)),
                   3);
  assert_int_equal(json_integer_value(
                     json_array_get(json_object_get(o, "shape"), 1)),
                   2);
  data = json_object_get(o, "data");
  assert_int_equal(json_array_size(data), 6);
  for (i = 0; i < 6; i++) {
    json_t *e = json_array_get(data, i);
    if (i == 2) {
      assert_string_equal(json_string_value(e), "NaN");
    } else if (i == 3) {
      assert_string_equal(json_string_value(e), "-Infinity");
    } else if (i == 4) {
      /* jansson reads -0 as the integer 0; the text was checked above */
      assert_true(json_number_value(e) == 0);
    } else {
      assert_true(json_is_number(e));
      assert_int_equal(f32_bits((float)json_number_value(e)), f32_bits(out[i]));
    }
  }
  json_decref(j);
  api_buf_free(&b);
}

static void test_encode_result_types(void **state)
{
  static const int64_t shape3[] = { 3 };
  static const int64_t shape0[] = { 0, 4 };
  uint64_t u64[3] = { 0, (uint64_t)INT64_MAX, UINT64_MAX };
  int32_t i32[3] = { INT32_MIN, -1, 7 };
  uint16_t h[3] = { 0x7BFF, 0x3555, 0xFC00 };
  struct rd_plan plan;
  struct api_buf b;
  json_t *j, *data;

  (void)state;
  api_buf_init(&b);
  make_plan(&plan, RD_OP_SUM_SQUARE, 13, RD_UINT64, 1, shape3);
  assert_int_equal(api_json_encode_result(&plan, 17, u64, &b), 0);
  assert_string_equal(b.data,
                      "{\"op\":\"ReduceSumSquare\",\"opset\":17,"
                      "\"op_version\":13,\"output\":{\"dtype\":\"uint64\","
                      "\"shape\":[3],\"data\":[0,9223372036854775807,"
                      "\"18446744073709551615\"]}}");
  j = parse_buf(&b);
  data = json_object_get(json_object_get(j, "output"), "data");
  assert_true(json_integer_value(json_array_get(data, 1)) == INT64_MAX);
  json_decref(j);
  api_buf_free(&b);

  make_plan(&plan, RD_OP_SUM_SQUARE, 1, RD_INT32, 1, shape3);
  assert_int_equal(api_json_encode_result(&plan, 1, i32, &b), 0);
  assert_non_null(strstr(b.data, "\"data\":[-2147483648,-1,7]}}"));
  api_buf_free(&b);

  make_plan(&plan, RD_OP_L2, 18, RD_FLOAT16, 1, shape3);
  assert_int_equal(api_json_encode_result(&plan, 18, h, &b), 0);
  assert_non_null(strstr(b.data, "\"dtype\":\"float16\",\"shape\":[3],"
                                 "\"data\":[65500,0.3333,\"-Infinity\"]}}"));
  api_buf_free(&b);

  /* empty output; rank 0 output */
  make_plan(&plan, RD_OP_L2, 18, RD_BFLOAT16, 2, shape0);
  assert_int_equal(api_json_encode_result(&plan, 18, h, &b), 0);
  assert_non_null(strstr(b.data, "\"dtype\":\"bfloat16\",\"shape\":[0,4],"
                                 "\"data\":[]}}"));
  api_buf_free(&b);
  make_plan(&plan, RD_OP_L2, 11, RD_INT32, 0, NULL);
  assert_int_equal(api_json_encode_result(&plan, 12, i32 + 2, &b), 0);
  assert_string_equal(b.data,
                      "{\"op\":\"ReduceL2\",\"opset\":12,"
                      "\"op_version\":11,\"output\":{\"dtype\":\"int32\","
                      "\"shape\":[],\"data\":[7]}}");
  api_buf_free(&b);
}

static void test_encode_result_large(void **state)
{
  static const int64_t shape[] = { 100, 1000 };
  struct rd_plan plan;
  struct api_buf b;
  double *out;
  json_t *j, *data;
  size_t i, n = 100000;
  uint64_t seed = 12345, u;

  (void)state;
  out = malloc(n * sizeof *out);
  assert_non_null(out);
  for (i = 0; i < n; i++) {
    u = rnd(&seed);
    out[i] = (double)(int64_t)u / 1e9;
  }
  make_plan(&plan, RD_OP_L2, 18, RD_FLOAT64, 2, shape);
  api_buf_init(&b);
  assert_int_equal(api_json_encode_result(&plan, 18, out, &b), 0);
  j = parse_buf(&b);
  data = json_object_get(json_object_get(j, "output"), "data");
  assert_int_equal(json_array_size(data), n);
  for (i = 0; i < n; i++)
    assert_true(json_number_value(json_array_get(data, i)) == out[i]);
  json_decref(j);
  api_buf_free(&b);
  free(out);
}

/* Decode -> library plan and execution -> encode, for the documented
 * request (reducing the last axis of 1..12 shaped [3,2,2]). */
static void test_end_to_end(void **state)
{
  static const char body[] =
    "{\"op\": \"ReduceL2\", \"opset\": 18, \"axes\": [-1], \"keepdims\": 0,"
    " \"input\": {\"dtype\": \"float32\", \"shape\": [3, 2, 2],"
    " \"data\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}}";
  struct api_request req;
  struct rd_error err;
  struct rd_plan plan;
  struct api_buf b;
  void *out;

  (void)state;
  assert_int_equal(decode(body, &req, &err), 0);
  assert_int_equal(rd_plan_init(&plan, &req.params, &err), 0);
  assert_int_equal(plan.in_bytes, req.data_bytes);
  out = malloc(plan.out_bytes);
  assert_non_null(out);
  assert_int_equal(rd_execute(&plan, req.data, out, &err), 0);
  api_buf_init(&b);
  assert_int_equal(api_json_encode_result(&plan, req.params.opset, out, &b), 0);
  /* sqrt(1+4), sqrt(9+16), sqrt(25+36), ... as float32, shortest */
  assert_string_equal(b.data,
                      "{\"op\":\"ReduceL2\",\"opset\":18,"
                      "\"op_version\":18,\"output\":{\"dtype\":\"float32\","
                      "\"shape\":[3,2],\"data\":[2.236068,5,7.81025,10.630146,"
                      "13.453624,16.27882]}}");
  api_buf_free(&b);
  free(out);
  api_request_free(&req);

  /* A library validation error travels the same way. */
  assert_int_equal(decode("{\"op\":\"ReduceL2\",\"axes\":[3],\"input\":"
                          "{\"dtype\":\"int32\",\"data\":[[1,2]]}}",
                          &req, &err),
                   0);
  assert_int_equal(rd_plan_init(&plan, &req.params, &err), RD_E_AXIS_RANGE);
  assert_int_equal(api_http_status(err.code), 400);
  assert_int_equal(api_json_encode_error(&err, &b), 0);
  assert_non_null(strstr(b.data, "{\"error\":{\"code\":\"AXIS_OUT_OF_RANGE\","
                                 "\"message\":\""));
  api_buf_free(&b);
  api_request_free(&req);
}

static void test_encode_error(void **state)
{
  struct rd_error err;
  struct api_buf b;
  json_t *j, *e;

  (void)state;
  api_buf_init(&b);
  api_fail(&err, RD_E_AXIS_RANGE, "axis 3 is out of range [-3, 2]");
  assert_int_equal(api_json_encode_error(&err, &b), 0);
  assert_string_equal(b.data,
                      "{\"error\":{\"code\":\"AXIS_OUT_OF_RANGE\","
                      "\"message\":\"axis 3 is out of range [-3, 2]\"}}");
  api_buf_free(&b);

  /* quotes, backslashes, control characters and non-ASCII survive */
  api_fail(&err, API_E_UNKNOWN_FIELD, "a \"b\" \\ \n\t\x01 \xC3\xA9");
  assert_int_equal(api_json_encode_error(&err, &b), 0);
  j = parse_buf(&b);
  e = json_object_get(j, "error");
  assert_int_equal(json_object_size(j), 1);
  assert_int_equal(json_object_size(e), 2);
  assert_string_equal(json_string_value(json_object_get(e, "code")),
                      "UNKNOWN_FIELD");
  assert_string_equal(json_string_value(json_object_get(e, "message")),
                      "a \"b\" \\ \n\t\x01 \xC3\xA9");
  json_decref(j);
  api_buf_free(&b);

  /* invalid UTF-8 (a library message) is repaired, not dropped */
  err.code = RD_E_OP;
  snprintf(err.msg, sizeof err.msg, "bad \xFF op");
  assert_int_equal(api_json_encode_error(&err, &b), 0);
  assert_string_equal(b.data, "{\"error\":{\"code\":\"UNKNOWN_OP\","
                              "\"message\":\"bad ? op\"}}");
  api_buf_free(&b);

  /* empty message: the generic description */
  err.code = RD_E_NOMEM;
  err.msg[0] = '\0';
  assert_int_equal(api_json_encode_error(&err, &b), 0);
  assert_string_equal(b.data, "{\"error\":{\"code\":\"OUT_OF_MEMORY\","
                              "\"message\":\"out of memory\"}}");
  api_buf_free(&b);
  err.code = API_E_DRAINING;
  assert_int_equal(api_json_encode_error(&err, &b), 0);
  assert_string_equal(b.data, "{\"error\":{\"code\":\"DRAINING\","
                              "\"message\":\"DRAINING\"}}");
  api_buf_free(&b);
}

static int has_string(const json_t *arr, const char *s)
{
  size_t i;

  for (i = 0; i < json_array_size(arr); i++)
    if (strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
      return 1;
  return 0;
}

/* The versions of each op (ONNX operator schemas), in enum order. */
static const struct {
  const char *name;
  int n;
  int v[6];
} op_versions[] = {
  { "ReduceL2", 4, { 1, 11, 13, 18 } },
  { "ReduceSumSquare", 4, { 1, 11, 13, 18 } },
  { "ReduceSum", 3, { 1, 11, 13 } },
  { "ReduceMean", 4, { 1, 11, 13, 18 } },
  { "ReduceMax", 6, { 1, 11, 12, 13, 18, 20 } },
  { "ReduceMin", 6, { 1, 11, 12, 13, 18, 20 } },
  { "ReduceProd", 4, { 1, 11, 13, 18 } },
  { "ReduceL1", 4, { 1, 11, 13, 18 } },
  { "ReduceLogSum", 4, { 1, 11, 13, 18 } },
  { "ReduceLogSumExp", 4, { 1, 11, 13, 18 } },
  { "ArgMax", 4, { 1, 11, 12, 13 } },
  { "ArgMin", 4, { 1, 11, 12, 13 } },
};

/* Version `v` of the op at index `i` of the /v1/ops body `ops`. */
static json_t *ops_version(json_t *ops, size_t i, int v)
{
  json_t *vs = json_object_get(json_array_get(ops, i), "versions"), *x;
  size_t k;

  json_array_foreach(vs, k,
                     x) if (json_integer_value(json_object_get(x, "version")) ==
                            v) return x;
  return NULL;
}

static void test_encode_ops(void **state)
{
  static const char *const base[] = { "float32", "float64", "float16", "int32",
                                      "int64",   "uint32",  "uint64" };
  struct api_buf b;
  json_t *j, *ops, *op, *vs, *v, *opsets, *dtypes;
  size_t i, d;
  int k, ver, next, arg, axes_in;

  (void)state;
  api_buf_init(&b);
  assert_int_equal(api_json_encode_ops(&b), 0);
  j = parse_buf(&b);
  ops = json_object_get(j, "ops");
  assert_int_equal(json_array_size(ops), 12);
  for (i = 0; i < 12; i++) {
    op = json_array_get(ops, i);
    assert_string_equal(json_string_value(json_object_get(op, "op")),
                        op_versions[i].name);
    arg = i >= 10;
    /* ReduceSum took axes as an input at 13, the other Reduce ops at 18 */
    axes_in = i == 2 ? 13 : 18;
    vs = json_object_get(op, "versions");
    assert_int_equal(json_array_size(vs), (size_t)op_versions[i].n);
    for (k = 0; k < op_versions[i].n; k++) {
      v = json_array_get(vs, (size_t)k);
      ver = op_versions[i].v[k];
      next = k + 1 < op_versions[i].n ? op_versions[i].v[k + 1] : 0;
      assert_int_equal(json_object_size(v), 7);
      assert_int_equal(json_integer_value(json_object_get(v, "version")), ver);
      opsets = json_object_get(v, "opsets");
      assert_int_equal(json_array_size(opsets), 2);
      assert_int_equal(json_integer_value(json_array_get(opsets, 0)), ver);
      if (next == 0)
        assert_true(json_is_null(json_array_get(opsets, 1)));
      else
        assert_int_equal(json_integer_value(json_array_get(opsets, 1)),
                         next - 1);
      assert_string_equal(json_string_value(json_object_get(v, "axes")),
                          arg              ? "axis"
                          : ver >= axes_in ? "input"
                                           : "attribute");
      assert_true(json_is_boolean(json_object_get(v, "noop_with_empty_axes")));
      assert_int_equal(json_is_true(json_object_get(v, "noop_with_empty_axes")),
                       !arg && ver >= axes_in);
      assert_int_equal(json_is_true(json_object_get(v, "select_last_index")),
                       arg && ver >= 12);
      assert_string_equal(json_string_value(json_object_get(v, "output_dtype")),
                          arg ? "int64" : "input");
      dtypes = json_object_get(v, "dtypes");
      for (d = 0; d < 7; d++)
        assert_true(has_string(dtypes, base[d]));
      /* bfloat16 arrived in version 13 */
      assert_int_equal(has_string(dtypes, "bfloat16"), ver >= 13);
      /* int8/uint8: ReduceMax/ReduceMin from 12, ArgMax/ArgMin always */
      assert_int_equal(has_string(dtypes, "int8"),
                       arg || ((i == 4 || i == 5) && ver >= 12));
      assert_int_equal(has_string(dtypes, "uint8"),
                       arg || ((i == 4 || i == 5) && ver >= 12));
      /* int16/uint16: ArgMax/ArgMin only; bool: ReduceMax/ReduceMin 20 */
      assert_int_equal(has_string(dtypes, "int16"), arg);
      assert_int_equal(has_string(dtypes, "uint16"), arg);
      assert_int_equal(has_string(dtypes, "bool"),
                       (i == 4 || i == 5) && ver == 20);
    }
  }
  /* the listing order of the dtypes (rd_dtypes): floats, integers by
   * width (signed first), bool */
  dtypes = json_object_get(ops_version(ops, 4, 20), "dtypes");
  assert_non_null(dtypes);
  {
    static const char *const order[] = { "float32",  "float64", "float16",
                                         "bfloat16", "int8",    "uint8",
                                         "int32",    "uint32",  "int64",
                                         "uint64",   "bool" };
    assert_int_equal(json_array_size(dtypes), 11);
    for (d = 0; d < 11; d++)
      assert_string_equal(json_string_value(json_array_get(dtypes, d)),
                          order[d]);
  }
  json_decref(j);
  api_buf_free(&b);
}

/* ================================================================== */
/* The twelve operators (issue 11)                                    */
/* ================================================================== */

/* Decodes `json`; 0 expected. */
static void decode_ok(const char *json, struct api_request *req)
{
  struct rd_error err;
  int rc = decode(json, req, &err);

  if (rc != 0)
    print_error("body %s\n  got %d (%s) \"%s\"\n", json, rc, api_errname(rc),
                err.msg);
  assert_int_equal(rc, 0);
}

static void test_decode_arg_fields(void **state)
{
  struct api_request req;

  (void)state;
  /* axis and select_last_index for ArgMax; omitted: RD_UNSET */
  decode_ok("{\"op\":\"ArgMax\",\"axis\":-1,\"select_last_index\":1,"
            "\"keepdims\":0,\"input\":{\"dtype\":\"float32\","
            "\"data\":[1,2]}}",
            &req);
  assert_int_equal(req.params.op, RD_OP_ARGMAX);
  assert_int_equal(req.params.axis, -1);
  assert_int_equal(req.params.select_last_index, 1);
  assert_int_equal(req.params.keepdims, 0);
  assert_int_equal(req.params.naxes, 0);
  api_request_free(&req);
  decode_ok("{\"op\":\"ArgMin\",\"select_last_index\":true,\"input\":"
            "{\"dtype\":\"int16\",\"data\":[1,2]}}",
            &req);
  assert_int_equal(req.params.op, RD_OP_ARGMIN);
  assert_true(req.params.axis == RD_UNSET);
  assert_int_equal(req.params.select_last_index, 1);
  api_request_free(&req);
  decode_ok("{\"op\":\"ReduceMax\",\"input\":{\"dtype\":\"int8\","
            "\"data\":[1]}}",
            &req);
  assert_true(req.params.axis == RD_UNSET);
  assert_true(req.params.select_last_index == RD_UNSET);
  api_request_free(&req);
  /* the values are the library's to check (2 is INVALID_SELECT_LAST_INDEX
   * there), but the type is the decoder's */
  decode_ok("{\"op\":\"ArgMax\",\"select_last_index\":2,\"input\":"
            "{\"dtype\":\"float32\",\"data\":[1]}}",
            &req);
  assert_int_equal(req.params.select_last_index, 2);
  api_request_free(&req);
  expect_fail("{\"op\":\"ArgMax\",\"axis\":1.5,\"input\":{}}",
              API_E_INVALID_FIELD, "axis must be an integer, got 1.5");
  expect_fail("{\"op\":\"ArgMax\",\"axis\":true,\"input\":{}}",
              API_E_INVALID_FIELD, "axis must be an integer, got true");
  expect_fail("{\"op\":\"ArgMax\",\"select_last_index\":\"1\",\"input\":{}}",
              API_E_INVALID_FIELD,
              "select_last_index must be an integer "
              "or true/false");
  /* INT64_MIN would pass as "not given": refused */
  expect_fail("{\"op\":\"ArgMax\",\"axis\":-9223372036854775808,"
              "\"input\":{}}",
              RD_E_AXIS_RANGE,
              "axis = "
              "-9223372036854775808 is out of range");
  expect_fail("{\"op\":\"ArgMax\",\"select_last_index\":"
              "-9223372036854775808,\"input\":{}}",
              RD_E_SELECT_LAST, "select_last_index must be 0 or 1");
  /* fields an op does not take: ATTRIBUTE_NOT_ALLOWED naming field and op */
  expect_fail("{\"op\":\"ReduceSum\",\"axis\":0,\"input\":{}}", RD_E_ATTRIBUTE,
              "axis is not an attribute of ReduceSum");
  expect_fail("{\"op\":\"ReduceMax\",\"select_last_index\":0,\"input\":{}}",
              RD_E_ATTRIBUTE,
              "select_last_index is not an attribute of "
              "ReduceMax");
  expect_fail("{\"op\":\"ArgMax\",\"axes\":[0],\"input\":{}}", RD_E_ATTRIBUTE,
              "axes is not an attribute of ArgMax");
  expect_fail("{\"op\":\"ArgMin\",\"axes\":[],\"input\":{}}", RD_E_ATTRIBUTE,
              "axes is not an attribute of ArgMin");
  expect_fail("{\"op\":\"ArgMin\",\"noop_with_empty_axes\":0,\"input\":{}}",
              RD_E_ATTRIBUTE,
              "noop_with_empty_axes is not an attribute of "
              "ArgMin");
  /* every op name parses; the list of valid ops names all twelve */
  expect_fail("{\"op\":\"ReduceFoo\",\"input\":{}}", RD_E_OP,
              "valid ops: ReduceL2, ReduceSumSquare, ReduceSum, ReduceMean, "
              "ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceLogSum,");
  decode_ok("{\"op\":\"ReduceLogSumExp\",\"input\":{\"dtype\":\"float64\","
            "\"data\":[1]}}",
            &req);
  assert_int_equal(req.params.op, RD_OP_LOG_SUM_EXP);
  api_request_free(&req);
}

static void test_elems_small_int_bool(void **state)
{
  struct api_request req;
  struct rd_error err;
  const int8_t *i8;
  const uint8_t *u8;
  const int16_t *i16;
  const uint16_t *u16;

  (void)state;
  assert_int_equal(decode_data("int8", "[-128, 127, \"-5\", 0]", &req, &err),
                   0);
  i8 = req.data;
  assert_int_equal(req.data_bytes, 4);
  assert_int_equal(i8[0], -128);
  assert_int_equal(i8[1], 127);
  assert_int_equal(i8[2], -5);
  assert_int_equal(i8[3], 0);
  api_request_free(&req);
  assert_int_equal(decode_data("uint8", "[[0, 255], [\"200\", 1.0]]", &req,
                               &err),
                   0);
  u8 = req.data;
  assert_int_equal(req.data_bytes, 4);
  assert_int_equal(u8[0], 0);
  assert_int_equal(u8[1], 255);
  assert_int_equal(u8[2], 200);
  assert_int_equal(u8[3], 1);
  api_request_free(&req);
  assert_int_equal(decode_data("int16", "[-32768, 32767]", &req, &err), 0);
  i16 = req.data;
  assert_int_equal(req.data_bytes, 4);
  assert_int_equal(i16[0], -32768);
  assert_int_equal(i16[1], 32767);
  api_request_free(&req);
  assert_int_equal(decode_data("uint16", "[65535, 0, 7]", &req, &err), 0);
  u16 = req.data;
  assert_int_equal(req.data_bytes, 6);
  assert_int_equal(u16[0], 65535);
  assert_int_equal(u16[2], 7);
  api_request_free(&req);
  /* ranges, by dtype, naming the element */
  expect_elem_fail("int8", "[1, 128]",
                   "input.data[1] = 128 is out of range "
                   "[-128, 127] (dtype int8)");
  expect_elem_fail("int8", "[-129]",
                   "input.data[0] = -129 is out of range "
                   "[-128, 127]");
  expect_elem_fail("uint8", "[256]",
                   "input.data[0] = 256 is out of range "
                   "[0, 255] (dtype uint8)");
  expect_elem_fail("uint8", "[-1]", "out of range [0, 255]");
  expect_elem_fail("int16", "[0, 0, 32768]",
                   "input.data[2] = 32768 is out "
                   "of range [-32768, 32767]");
  expect_elem_fail("uint16", "[65536]",
                   "out of range [0, 65535] (dtype "
                   "uint16)");
  expect_elem_fail("int8", "[0.5]", "input.data[0] = 0.5 is not an integer");

  /* bool: true/false only */
  assert_int_equal(decode_data("bool", "[[true, false], [false, true]]", &req,
                               &err),
                   0);
  u8 = req.data;
  assert_int_equal(req.data_bytes, 4);
  assert_int_equal(req.params.rank, 2);
  assert_int_equal(u8[0], 1);
  assert_int_equal(u8[1], 0);
  assert_int_equal(u8[2], 0);
  assert_int_equal(u8[3], 1);
  api_request_free(&req);
  assert_int_equal(decode_data("bool", "true", &req, &err), 0);
  assert_int_equal(req.params.rank, 0);
  assert_int_equal(*(const uint8_t *)req.data, 1);
  api_request_free(&req);
  expect_elem_fail("bool", "[true, 1]",
                   "input.data[1] = 1 is not true or "
                   "false (dtype bool)");
  expect_elem_fail("bool", "[0]", "input.data[0] = 0 is not true or false");
  expect_elem_fail("bool", "[false, \"true\"]",
                   "input.data[1] = \"true\" is "
                   "not true or false");
  expect_elem_fail("bool", "[null]",
                   "input.data[0] = null is not true or "
                   "false");
  expect_elem_fail("bool", "1", "input.data = 1 is not true or false");
  /* the new names are in the dtype list of the error */
  expect_fail("{\"op\":\"ReduceMax\",\"input\":{\"dtype\":\"int4\","
              "\"data\":[1]}}",
              RD_E_DTYPE,
              "bfloat16, int8, uint8, int16, "
              "uint16, int32, uint32, int64, uint64, bool");
}

/* A flat array of numbers takes the fast path (jsonfast.c): the small
 * integer dtypes and bool give the same values and errors there. */
static void test_elems_fast_path(void **state)
{
  char body[70000];
  struct api_request req;
  struct rd_error err;
  size_t n = 0;
  int i;

  (void)state;
  n += (size_t)snprintf(body + n, sizeof body - n,
                        "{\"op\":\"ArgMax\","
                        "\"input\":{\"dtype\":\"int8\",\"data\":[");
  for (i = 0; i < 5000; i++)
    n += (size_t)snprintf(body + n, sizeof body - n, "%s%d", i ? "," : "",
                          i % 256 - 128);
  snprintf(body + n, sizeof body - n, "]}}");
  assert_int_equal(decode(body, &req, &err), 0);
  assert_int_equal(req.data_bytes, 5000);
  assert_int_equal(((const int8_t *)req.data)[0], -128);
  assert_int_equal(((const int8_t *)req.data)[255], 127);
  assert_int_equal(((const int8_t *)req.data)[4999], 4999 % 256 - 128);
  api_request_free(&req);
  /* an out-of-range element deep in a long array: the same message */
  n = (size_t)snprintf(body, sizeof body,
                       "{\"op\":\"ArgMax\",\"input\":{"
                       "\"dtype\":\"uint16\",\"data\":[");
  for (i = 0; i < 5000; i++)
    n += (size_t)snprintf(body + n, sizeof body - n, "%s%d", i ? "," : "",
                          i == 4321 ? 65536 : i);
  snprintf(body + n, sizeof body - n, "]}}");
  expect_fail(body, API_E_INVALID_ELEMENT,
              "input.data[4321] = 65536 is out "
              "of range [0, 65535]");
  /* numbers for bool, in a long flat array: refused at index 0 */
  n = (size_t)snprintf(body, sizeof body,
                       "{\"op\":\"ReduceMax\",\"input\":{"
                       "\"dtype\":\"bool\",\"data\":[");
  for (i = 0; i < 5000; i++)
    n += (size_t)snprintf(body + n, sizeof body - n, "%s1", i ? "," : "");
  snprintf(body + n, sizeof body - n, "]}}");
  expect_fail(body, API_E_INVALID_ELEMENT,
              "input.data[0] = 1 is not true "
              "or false");
}

static void test_numfmt_new_types(void **state)
{
  int8_t i8;
  uint8_t u8;
  int16_t i16;
  uint16_t u16;

  (void)state;
  u8 = 1;
  assert_string_equal(fmt(RD_BOOL, &u8), "true");
  u8 = 0;
  assert_string_equal(fmt(RD_BOOL, &u8), "false");
  i8 = -128;
  assert_string_equal(fmt(RD_INT8, &i8), "-128");
  i8 = 127;
  assert_string_equal(fmt(RD_INT8, &i8), "127");
  u8 = 255;
  assert_string_equal(fmt(RD_UINT8, &u8), "255");
  i16 = -32768;
  assert_string_equal(fmt(RD_INT16, &i16), "-32768");
  u16 = 65535;
  assert_string_equal(fmt(RD_UINT16, &u16), "65535");
}

/* Issue 13: integral floats were printed as exact integers even when fewer
 * digits read back to the value. */
static void test_numfmt_float32_4290774016_shortest(void **state)
{
  /* 4290774016 = 16760836 * 256 (a float32: the spacing there is 256).
   * 7 digits: 4290774000 is 16 away, nearer than half the spacing; 6
   * digits (4290770000) are 4016 away.  The plain spelling of the 7
   * digits (10 characters) beats "4.290774e+9" (11). */
  (void)state;
  assert_true((double)4290774016.0f == 4290774016.0);
  assert_string_equal(fmt_f32(4290774016.0f), "4290774000");
  assert_string_equal(fmt_f32(-4290774016.0f), "-4290774000");
  /* 2^32 = 4294967296: one digit too few (4e+9 is far), "4294967300"
   * (8 digits) reads back (4 away; spacing 512 above, 256 below). */
  assert_string_equal(fmt_f32(4294967296.0f), "4294967300");
  /* 1e10f is 10000000000 exactly: "1e+10" (5 characters, not 11) */
  assert_string_equal(fmt_f32(1e10f), "1e+10");
}

static void test_numfmt_bfloat16_70330089472_shortest(void **state)
{
  /* bfloat16 0x5183: exponent 0xA3 = 127 + 36, mantissa 3:
   * 2^36 * (1 + 3/128) = 68719476736 + 1610612736 = 70330089472.
   * The spacing is 2^29 = 536870912; 7.03e10 is 30089472 away (read back
   * to 0x5183), 7e10 is 330089472 away (more than half the spacing). */
  (void)state;
  assert_true(rd_bf16_to_f64(0x5183) == 70330089472.0);
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x5183), "7.03e+10");
}

static void test_numfmt_integral_still_plain(void **state)
{
  /* where the plain integer is the shortest spelling it stays */
  (void)state;
  assert_string_equal(fmt_f32(5.0f), "5");
  assert_string_equal(fmt_f32(100.0f), "100");     /* not "1e+2" */
  assert_string_equal(fmt_f32(-1000.0f), "-1000"); /* not "-1e+3" */
  assert_string_equal(fmt_f32(1000.0f), "1000");   /* tie with "1e+3" */
  assert_string_equal(fmt_f32(10000.0f), "1e+4");  /* 4 characters, not 5 */
  assert_string_equal(fmt_f32(100000.0f), "1e+5"); /* 6 vs 4: exponent */
  assert_string_equal(fmt_f32(123456.0f), "123456");
  assert_string_equal(fmt_f64(12345678901.0), "12345678901");
  assert_string_equal(fmt_u16(RD_FLOAT16, 0x5640), "100");  /* 100 */
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x42C8), "100"); /* 100 */
  /* bfloat16 256 = 0x4380; "256" (3 digits) and 2 digits "260" is 4 away
   * with spacing 2 there: so "256" */
  assert_string_equal(fmt_u16(RD_BFLOAT16, 0x4380), "256");
}

static void test_encode_arg_bool(void **state)
{
  static const int64_t shape2[] = { 2 };
  const int64_t idx[] = { 2, 0 };
  const uint8_t flags[] = { 1, 0 };
  struct rd_plan plan;
  struct api_buf b;

  (void)state;
  api_buf_init(&b);
  /* ArgMax of a bfloat16 input: the answer is int64 */
  make_plan(&plan, RD_OP_ARGMAX, 13, RD_BFLOAT16, 1, shape2);
  assert_int_equal(plan.out_dtype, RD_INT64);
  assert_int_equal(api_json_encode_result(&plan, 18, idx, &b), 0);
  assert_string_equal(b.data,
                      "{\"op\":\"ArgMax\",\"opset\":18,"
                      "\"op_version\":13,\"output\":{\"dtype\":\"int64\","
                      "\"shape\":[2],\"data\":[2,0]}}");
  api_buf_free(&b);
  /* bool answers are true/false */
  make_plan(&plan, RD_OP_MAX, 20, RD_BOOL, 1, shape2);
  assert_int_equal(api_json_encode_result(&plan, 20, flags, &b), 0);
  assert_string_equal(b.data,
                      "{\"op\":\"ReduceMax\",\"opset\":20,"
                      "\"op_version\":20,\"output\":{\"dtype\":\"bool\","
                      "\"shape\":[2],\"data\":[true,false]}}");
  api_buf_free(&b);
}

/* Decode, plan, execute, encode: ArgMax with select_last_index and
 * ReduceMin of bool through the real library. */
static void test_end_to_end_arg(void **state)
{
  struct api_request req;
  struct rd_error err;
  struct rd_plan plan;
  struct api_buf b;
  void *out;

  (void)state;
  /* rows [1,3,3] and [7,7,2]: last maxima at 2 and 1 */
  decode_ok("{\"op\":\"ArgMax\",\"axis\":1,\"keepdims\":0,"
            "\"select_last_index\":1,\"input\":{\"dtype\":\"int16\","
            "\"shape\":[2,3],\"data\":[1,3,3,7,7,2]}}",
            &req);
  if (rd_plan_init(&plan, &req.params, &err) != 0)
    print_error("plan: %s\n", err.msg);
  assert_int_equal(rd_plan_init(&plan, &req.params, &err), 0);
  out = malloc(plan.out_bytes);
  assert_non_null(out);
  assert_int_equal(rd_execute(&plan, req.data, out, &err), 0);
  api_buf_init(&b);
  assert_int_equal(api_json_encode_result(&plan, 18, out, &b), 0);
  assert_string_equal(b.data,
                      "{\"op\":\"ArgMax\",\"opset\":18,"
                      "\"op_version\":13,\"output\":{\"dtype\":\"int64\","
                      "\"shape\":[2],\"data\":[2,1]}}");
  api_buf_free(&b);
  free(out);
  api_request_free(&req);
  /* [[true,true],[true,false]] AND over axis 1: [true,false] */
  decode_ok("{\"op\":\"ReduceMin\",\"opset\":20,\"axes\":[1],\"keepdims\":0,"
            "\"input\":{\"dtype\":\"bool\",\"data\":[[true,true],"
            "[true,false]]}}",
            &req);
  assert_int_equal(rd_plan_init(&plan, &req.params, &err), 0);
  out = malloc(plan.out_bytes);
  assert_non_null(out);
  assert_int_equal(rd_execute(&plan, req.data, out, &err), 0);
  assert_int_equal(api_json_encode_result(&plan, 20, out, &b), 0);
  assert_non_null(strstr(b.data, "\"dtype\":\"bool\",\"shape\":[2],"
                                 "\"data\":[true,false]}}"));
  api_buf_free(&b);
  free(out);
  api_request_free(&req);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_errname_status),
    cmocka_unit_test(test_api_fail),
    cmocka_unit_test(test_utf8_sanitize),
    cmocka_unit_test(test_buf),
    cmocka_unit_test(test_numfmt_fixed),
    cmocka_unit_test(test_numfmt_property),
    cmocka_unit_test(test_decode_example),
    cmocka_unit_test(test_decode_defaults),
    cmocka_unit_test(test_decode_bad_json),
    cmocka_unit_test(test_decode_fields),
    cmocka_unit_test(test_decode_layout),
    cmocka_unit_test(test_decode_shape_errors),
    cmocka_unit_test(test_elems_float),
    cmocka_unit_test(test_elems_int),
    cmocka_unit_test(test_encode_result_f32),
    cmocka_unit_test(test_encode_result_types),
    cmocka_unit_test(test_encode_result_large),
    cmocka_unit_test(test_end_to_end),
    cmocka_unit_test(test_encode_error),
    cmocka_unit_test(test_encode_ops),
    cmocka_unit_test(test_decode_arg_fields),
    cmocka_unit_test(test_elems_small_int_bool),
    cmocka_unit_test(test_elems_fast_path),
    cmocka_unit_test(test_numfmt_new_types),
    cmocka_unit_test(test_numfmt_float32_4290774016_shortest),
    cmocka_unit_test(test_numfmt_bfloat16_70330089472_shortest),
    cmocka_unit_test(test_numfmt_integral_still_plain),
    cmocka_unit_test(test_encode_arg_bool),
    cmocka_unit_test(test_end_to_end_arg),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
