/* test_jsonpush.c - the push decoder (api/jsonpush.c) against
 * api_json_decode() on the whole body (jpush_same() is the oracle): every
 * body below, fed whole, cut in two at every offset, byte by byte and at
 * random offsets, with and without the length known, must give the same
 * request bit for bit or the same error (code and message, line and
 * column).  The bodies cover each dtype, pretty-printed arrays, elements
 * the fast conversion leaves to jansson, and errors before, inside and
 * after the array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "jsonpush.h"
#include "../fuzz/jpush_same.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
  /* xorshift64*: deterministic, no timing. */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Du;
}

static void same_or_fail(const char *body, size_t len, const size_t *cuts,
                         size_t ncuts, int hint, const char *how)
{
  const char *why = jpush_same(body, len, cuts, ncuts, hint, len / 2 + 1);

  if (why != NULL)
    fail_msg("%s (%s, hint %d): %.*s", why, how, hint,
             (int)(len < 300 ? len : 300), body);
}

/* Whole, every single cut, byte by byte, and some random cuttings. */
static void check_body(const char *body, size_t len)
{
  size_t *cuts = malloc((len + 1) * sizeof *cuts), i, n;

  assert_non_null(cuts);
  for (int hint = 0; hint <= 1; hint++) {
    same_or_fail(body, len, NULL, 0, hint, "whole");
    for (i = 0; i <= len && len <= 4096; i++) {
      cuts[0] = i;
      same_or_fail(body, len, cuts, 1, hint, "one cut");
    }
    for (i = 0; i < len; i++)
      cuts[i] = i + 1;
    same_or_fail(body, len, cuts, len, hint, "byte by byte");
    for (int r = 0; r < 20; r++) {
      size_t at = 0;
      for (n = 0; at < len; n++) {
        at += 1 + rnd() % (r < 10 ? 8 : 300);
        cuts[n] = at < len ? at : len;
      }
      same_or_fail(body, len, cuts, n, hint, "random cuts");
    }
  }
  free(cuts);
}

static void check_str(const char *body)
{
  check_body(body, strlen(body));
}

#define HEAD(dt)                                                               \
  "{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"" dt "\",\"data\":["

static void test_valid(void **state)
{
  static const char *const dts[] = {
    "float32", "float64", "float16", "bfloat16", "int8",   "int32", "uint8",
    "int64",   "uint64",  "float",   "double",   "uint16", "int16", "uint32"
  };
  char body[512];
  (void)state;
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    snprintf(body, sizeof body,
             "{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"%s\",\"data\":"
             "[1,-2, 3 ,0,-0,127,\n  5,6 ]}}",
             dts[i]);
    check_str(body);
    snprintf(body, sizeof body,
             "{\"op\":\"ReduceMax\",\"keepdims\":0,\"axes\":[1],\"input\":"
             "{\"dtype\":\"%s\",\"data\":[1.5,-2.25e1,3.0,1e-5,0.1,"
             "-0.0,6e0,7E+0],\"shape\":[2,4]}}",
             dts[i]);
    check_str(body);
  }
  check_str(HEAD("float32") "3.4028235677973366e38,1.17549435e-38,1e-46,"
                            "0.30000001192092896,16777217,9007199254740993,"
                            "1.00000005960464477539062500001,-9.99e-39]}}");
  check_str(HEAD("float16") "65504,65520,6.1e-5,5.96e-8,2.98e-8,0.1,"
                            "1.0009765625,1.00048828125]}}");
  check_str(HEAD("int64") "9223372036854775807,-9223372036854775808,0]}}");
  check_str(HEAD("uint64") "18446744073709551615]}}"); /* jansson's error */
  check_str(HEAD("uint64") "\"18446744073709551615\",1]}}");
  check_str(HEAD("bool") "true,false]}}");
  /* Pretty-printed: newlines and tabs between every token. */
  check_str("{\n  \"op\": \"ReduceL2\",\n  \"input\": {\n    \"dtype\": "
            "\"float32\",\n    \"data\": [\n      1.25,\n\t\t2,\r\n      3\n"
            "      ,4\n    ],\n    \"shape\": [2, 2]\n  }\n}\n");
  /* Fields after the array, nested containers before it. */
  check_str("{\"axes\":[0],\"input\":{\"shape\":[3],\"dtype\":\"int32\","
            "\"data\":[1,2,3]},\"op\":\"ReduceProd\",\"overflow\":\"wrap\"}");
  check_str("{\"input\":{\"dtype\":\"float64\",\"data\":[0.1,0.2,0.3]},"
            "\"op\":\"ReduceLogSumExp\",\"opset\":13,\"keepdims\":true}");
}

/* Elements the fast conversion leaves to jansson: the rest is decoded
 * from the rebuilt body, and the first elements are still the push
 * decoder's. */
static void test_taken_over(void **state)
{
  (void)state;
  check_str(HEAD("float32") "1,2,\"NaN\",\"Infinity\",4]}}");
  check_str(HEAD(
    "float32") "1.5,2.5,3,"
               "1.00000000000000000000000000000000000000000000000000000000000000001"
               ",5]}}");
  check_str(HEAD("float64") "1,2,3e-400,4]}}");
  check_str(HEAD("int32") "1,2,3.0,4]}}");
  check_str(HEAD("int32") "1,2,\"-7\",4]}}");
  check_str(HEAD("uint8") "1,2,256,4]}}"); /* out of range */
  check_str(HEAD("uint8") "1,2,-1,4]}}");
  check_str(HEAD("int8") "1,2,2.5,4]}}");
  check_str(HEAD("float32") "[1,2],[3,4]]}}");
  check_str(HEAD("float32") "1,[2],3]}}");
  check_str(HEAD("float32") "]}}");
  /* The dtype after the data, or written with an escape. */
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"data\":[1,2,3],\"dtype\":"
            "\"float32\"}}");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float\\u0033"
            "2\",\"data\":[1,2,3]}}");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\",\"d\\u"
            "0061ta\":[1,2,3]}}");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\",\"data\":"
            "1.5}}");
}

static void test_errors(void **state)
{
  (void)state;
  /* Syntax errors inside the array, after converted elements. */
  check_str(HEAD("float32") "1,2,3,x,5]}}");
  check_str(HEAD("float32") "1,\n2,\n 3,\n  4 5]}}");
  check_str(HEAD("float32") "1,\n2\n,\n 3\n,4,,5]}}");
  check_str(HEAD("float32") "1,2,-,5]}}");
  check_str(HEAD("float32") "1,2,01,5]}}");
  check_str(HEAD("float32") "1,2,1.e5,5]}}");
  check_str(HEAD("float32") "1,2,3 4]}}");
  /* ",," with a batch's worth after it: a cut between the two starts a
   * chunk at its second ',' (test_jsonfast's test_batch_comma_at_start). */
  check_str(HEAD("float32") "1.25,1.25,1.25,1.25,1.25,,1.25,1.25,1.25,1.25,"
                            "1.25,1.25,1.25,1.25,1.25,1.25,1.25,1.25,1.25,"
                            "1.25,1.25,1.25,1.25,1.25,1.25,1.25,1.25,1.25,"
                            "1.25,1.25,1.25,1.25,1.25,1.25,1.25,1.25]}}");
  check_str(HEAD("float64") "1,2,3e999]}}");
  check_str(HEAD("int64") "1,2,99999999999999999999]}}");
  /* Truncated bodies. */
  check_str(HEAD("float32") "1,2,3");
  check_str(HEAD("float32") "1,2,3,");
  check_str(HEAD("float32") "1,2,3]");
  check_str(HEAD("float32") "1,2,3]}");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\",\"da");
  check_str("");
  check_str("[]");
  check_str("{}");
  /* Errors after the array: syntax, fields, shape, duplicates. */
  check_str(HEAD("float32") "1,2,\n3]}}x");
  check_str(HEAD("float32") "1,2,\n3]},}");
  check_str(HEAD("float32") "1,2,3],\"bogus\":1}}");
  check_str(HEAD("float32") "1,2,3],\"shape\":[2]}}");
  check_str(HEAD("float32") "1,2,3],\"shape\":[2,\"x\"]}}");
  check_str(HEAD("float32") "1,2,3],\"dtype\":\"int8\"}}");
  check_str(HEAD("float32") "1,2,3],\"data\":[4]}}");
  check_str(HEAD("float32") "1,2,3]},\"op\":\"ReduceMin\"}");
  check_str(HEAD("float32") "1,2,3]},\"axis\":0}");
  check_str("{\"op\":\"ReduceNope\",\"input\":{\"dtype\":\"float32\","
            "\"data\":[1,2,3]}}");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float99\","
            "\"data\":[1,2,3]}}");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\","
            "\"data\":[1,2,3]}}   \n\n   [");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\","
            "\"data\":[1,2,3]}}\xff");
  check_str("{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"float32\","
            "\"data\":[1,2,3\x00,4]}}");
}

/* Too many elements for the bound. */
static void test_max_elements(void **state)
{
  static const char body[] = HEAD("float32") "1,2,3,4,5,6]}}";
  size_t cut = 60;
  (void)state;
  for (uint64_t max = 0; max < 8; max++)
    if (jpush_same(body, sizeof body - 1, &cut, 1, 1, max) != NULL)
      fail_msg("max_elements %u", (unsigned)max);
}

/* Random bodies: numbers in every form, random whitespace and newlines,
 * then the same bodies with one byte changed (errors anywhere). */
static size_t random_body(char *b, size_t size, int dtype_i)
{
  static const char *const dts[] = { "float32", "float64", "float16",
                                     "int32",   "uint8",   "bfloat16" };
  static const char *const ws[] = { "", "", "", " ", "\n", " \n\t", "\r\n" };
  size_t n = 0, count = 1 + rnd() % 200;

  n += (size_t)snprintf(b + n, size - n,
                        "{\"op\":\"ReduceSumSquare\",\"input\":{\"dtype\":"
                        "\"%s\",\"data\":[%s",
                        dts[dtype_i % 6], ws[rnd() % 7]);
  for (size_t i = 0; i < count && n + 100 < size; i++) {
    uint64_t r = rnd();
    switch (r % 6) {
    case 0:
      n += (size_t)snprintf(b + n, size - n, "%d", (int)(r >> 40) % 300 - 150);
      break;
    case 1:
      n += (size_t)snprintf(b + n, size - n, "%.9g",
                            (double)(int64_t)(r >> 8) / 1e12);
      break;
    case 2:
      n += (size_t)snprintf(b + n, size - n, "%.17g",
                            (double)(r >> 11) / 9007199254740992.0 * 20 - 10);
      break;
    case 3:
      n += (size_t)snprintf(b + n, size - n, "%de%d", (int)(r >> 50),
                            (int)(r >> 20) % 90 - 45);
      break;
    case 4:
      n += (size_t)snprintf(b + n, size - n, "-0.%019llu",
                            (unsigned long long)(r >> 1) %
                              10000000000000000000ull);
      break;
    default:
      n += (size_t)snprintf(b + n, size - n, "%u", (unsigned)(r >> 58));
      break;
    }
    n += (size_t)snprintf(b + n, size - n, "%s%s%s", ws[rnd() % 7],
                          i + 1 < count ? "," : "]", ws[rnd() % 7]);
  }
  n += (size_t)snprintf(b + n, size - n, "}}");
  return n;
}

static void test_random(void **state)
{
  static const char junk[] = "x,]}[{\"0-.e\n ";
  char b[16384];
  (void)state;
  for (int i = 0; i < 120; i++) {
    size_t n = random_body(b, sizeof b, i);
    check_body(b, n);
    b[rnd() % n] = junk[rnd() % (sizeof junk - 1)];
    check_body(b, n);
  }
}

/* Negative control: the oracle sees a body that decodes differently
 * (one element changed by one unit in the last place) and a different
 * error. */
static void test_oracle_control(void **state)
{
  static const char a[] = HEAD("float32") "1,2,3.0000002]}}";
  static const char b[] = HEAD("float32") "1,2,3.0000005]}}";
  struct api_request ra, rb;
  struct rd_error ea, eb;
  (void)state;
  assert_int_equal(api_json_decode(a, sizeof a - 1, 0, &ra, &ea), 0);
  assert_int_equal(api_json_decode(b, sizeof b - 1, 0, &rb, &eb), 0);
  assert_int_equal(ra.data_bytes, rb.data_bytes);
  assert_true(memcmp(ra.data, rb.data, ra.data_bytes) != 0);
  api_request_free(&ra);
  api_request_free(&rb);
  /* A line/column differs if the zeros did not keep the newlines. */
  {
    static const char c[] = HEAD("float32") "1,\n2,x]}}";
    static const char d[] = HEAD("float32") "0,2,x]}}";
    assert_int_not_equal(api_json_decode(c, sizeof c - 1, 0, &ra, &ea), 0);
    assert_int_not_equal(api_json_decode(d, sizeof d - 1, 0, &rb, &eb), 0);
    assert_true(strcmp(ea.msg, eb.msg) != 0);
  }
}

/* A large body (above JF_MIN_BODY, where api_json_decode takes its own
 * fast path), in chunks of a few sizes, with an error at the end. */
/* A body of `dt` elements of about `size` bytes: float32/float64 reals
 * (%.9g) or int64 integers; *count is how many. */
static char *large_body(const char *dt, size_t size, size_t *len,
                        uint64_t *count)
{
  char *b = malloc(size);
  size_t n = 0;
  int ints = strcmp(dt, "int64") == 0;

  assert_non_null(b);
  n += (size_t)snprintf(b, size,
                        "{\"op\":\"ReduceSum\",\"input\":"
                        "{\"dtype\":\"%s\",\"data\":[",
                        dt);
  *count = 0;
  for (int i = 0; n + 40 < size - 20; i++, ++*count)
    n += ints ? (size_t)snprintf(b + n, size - n, "%d,", i * 7919 % 10007 - 99)
              : (size_t)snprintf(b + n, size - n, "%.9g,",
                                 (double)(i * 7919 % 10007) / 97.0 - 50);
  n--;
  n += (size_t)snprintf(b + n, size - n, "]}}");
  *len = n;
  return b;
}

/* Every element of a large clean body is converted as it arrives, for
 * each class of the element loop (narrow floats, float64, integers),
 * across the element buffer's populated-page steps (64 KiB) and, without
 * the length, its growth: an element stopped at a step's end must not be
 * left to jansson (which would give the same request, only slowly, so
 * jpush_same() alone cannot see it). */
static void test_large_all_taken(void **state)
{
  static const char *const dts[] = { "float32", "float64", "int64" };
  size_t len, chunk = 128 * 1024;
  uint64_t count;
  (void)state;
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    char *b = large_body(dts[d], 1200000, &len, &count);
    assert_true(count > 65536 || strcmp(dts[d], "int64") != 0);
    for (int hint = 0; hint <= 1; hint++) {
      struct api_jpush *p;
      struct api_request req;
      struct rd_error err;
      assert_int_equal(api_jpush_create(hint ? len : 0, &p), 0);
      for (size_t at = 0; at < len; at += chunk) {
        size_t n = len - at < chunk ? len - at : chunk;
        char *c = malloc(n);
        assert_non_null(c);
        memcpy(c, b + at, n);
        assert_int_equal(api_jpush_feed(p, c, n), 0);
        free(c);
      }
      if (api_jpush_taken(p) != count)
        fail_msg("%s, hint %d: %llu of %llu elements taken as they came",
                 dts[d], hint, (unsigned long long)api_jpush_taken(p),
                 (unsigned long long)count);
      assert_int_equal(api_jpush_finish(p, len, &req, &err), 0);
      assert_int_equal(req.params.shape[0], (int64_t)count);
      api_request_free(&req);
      api_jpush_destroy(p);
    }
    free(b);
  }
}

static void test_large(void **state)
{
  size_t n, cuts[4096], nc, step;
  uint64_t count;
  char *b = large_body("float32", 400000, &n, &count);
  (void)state;
  for (step = 997; step < 200000; step *= 7) {
    nc = 0;
    for (size_t at = step; at < n && nc < 4096; at += step)
      cuts[nc++] = at;
    for (int hint = 0; hint <= 1; hint++) {
      assert_null(jpush_same(b, n, cuts, nc, hint, n / 2 + 1));
      b[n - 3] = ',';
      assert_null(jpush_same(b, n, cuts, nc, hint, n / 2 + 1));
      b[n - 3] = ']';
    }
  }
  free(b);
}

/* Whole, cut once around the 4 KiB steps of head_feed(), and at random. */
static void check_long(const char *body, size_t len)
{
  size_t cuts[1024], n;

  for (int hint = 0; hint <= 1; hint++) {
    same_or_fail(body, len, NULL, 0, hint, "whole");
    for (size_t at = 4094; at < len && at < 12300;
         at += at % 4096 < 4 ? 1 : 4093) {
      cuts[0] = at;
      same_or_fail(body, len, cuts, 1, hint, "one cut");
    }
    for (int r = 0; r < 10; r++) {
      size_t at = 0;
      for (n = 0; at < len && n < 1024; n++) {
        at += 1 + rnd() % (r < 5 ? 300 : 9000);
        cuts[n] = at < len ? at : len;
      }
      same_or_fail(body, len, cuts, n, hint, "random cuts");
    }
  }
}

/* Heads longer than the steps head_feed() appends the text in (4 KiB),
 * the '[' or the walk's end beyond the first step: each body whole (one
 * chunk through several steps) and cut. */
static void test_long_head(void **state)
{
  size_t size = 40000, n;
  char *b = malloc(size), *pad = malloc(9001);
  (void)state;
  assert_non_null(b);
  assert_non_null(pad);
  memset(pad, ' ', 9000);
  pad[9000] = '\0';
  for (int form = 0; form < 6; form++) {
    switch (form) {
    case 0: /* the '[' after 9 KiB of an unknown key */
      n = (size_t)snprintf(b, size,
                           "{\"x\":\"%s\",\"op\":\"ReduceSum\","
                           "\"input\":{\"dtype\":\"float32\",\"data\":[",
                           pad);
      break;
    case 1: /* white space between the keys */
      n = (size_t)snprintf(b, size,
                           "{\"op\":\"ReduceSum\",%s\"input\":{%s"
                           "\"dtype\":\"float32\",%s\"data\":%s[",
                           pad + 6000, pad + 5000, pad + 7000, pad + 8000);
      break;
    case 2: /* bool: not taken, jansson's (the rest of the text kept) */
      n = (size_t)snprintf(b, size,
                           "{%s\"op\":\"ReduceSum\",\"input\":{"
                           "\"dtype\":\"bool\",\"data\":[",
                           pad + 4000);
      break;
    case 3: /* no dtype before the data */
      n = (size_t)snprintf(b, size,
                           "{%s\"op\":\"ReduceSum\",\"input\":{"
                           "\"data\":[",
                           pad + 3000);
      break;
    case 4: /* the walk ends (a '}' too many) after the first step */
      n = (size_t)snprintf(b, size,
                           "{%s}}\"op\":\"ReduceSum\",\"input\":{"
                           "\"dtype\":\"float32\",\"data\":[",
                           pad + 2000);
      break;
    default: /* no data at all */
      n = (size_t)snprintf(b, size,
                           "{\"op\":\"ReduceSum\",%s\"input\":{"
                           "\"dtype\":\"float32\",\"shape\":[0],\"data\":",
                           pad);
      n += (size_t)snprintf(b + n, size - n, "%s", "null}}");
      check_long(b, n);
      continue;
    }
    for (int i = 0; i < 3000; i++)
      n += (size_t)snprintf(b + n, size - n, "%s,",
                            form == 2 ? (i % 3 ? "true" : "false")
                                      : (i % 3 ? "1.5" : "-2"));
    n--;
    n += (size_t)snprintf(b + n, size - n, "]}}");
    check_long(b, n);
  }
  free(pad);
  free(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_valid),
    cmocka_unit_test(test_taken_over),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_max_elements),
    cmocka_unit_test(test_random),
    cmocka_unit_test(test_oracle_control),
    cmocka_unit_test(test_large),
    cmocka_unit_test(test_long_head),
    cmocka_unit_test(test_large_all_taken),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
