/* test_jsonfast.c - the decoder's fast path for flat input.data arrays
 * (api/jsonfast.c) against jansson's path: for every body, both paths must
 * give the same request (parameters and element bytes) or the same error
 * (code and message).  check_same() is the oracle; build with
 * -DJSONFAST_FUZZ and -fsanitize=fuzzer to drive it from libFuzzer.
 */
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

#include "api.h"
#include "f16.h"
#include "jsonfast.h"

/* Decodes with both paths and fails unless they agree.  Returns 1 if the
 * fast path took the body itself (path 3 did not give up), for coverage
 * checks. */
static int check_same(const char *body, size_t len)
{
  struct api_request a, b, c;
  struct rd_error ea, eb, ec;
  int ra, rb, rc;

  ra = api_json_decode_path(body, len, 0, &a, &ea, 0);
  rb = api_json_decode_path(body, len, 0, &b, &eb, 2);
  rc = api_json_decode_path(body, len, 0, &c, &ec, 3);
  if (rc != 1) {
    /* Taken: the same answer as path 2 (checked against path 0 below). */
    if (rc != rb)
      fail_msg("fast path rc %d vs %d for %.*s", rc, rb,
               (int)(len < 200 ? len : 200), body);
    if (rc != 0 && (ec.code != eb.code || strcmp(ec.msg, eb.msg) != 0))
      fail_msg("fast path error differs:\n  %s\n  %s", ec.msg, eb.msg);
    if (rc == 0) {
      assert_int_equal(c.data_bytes, b.data_bytes);
      assert_memory_equal(c.data, b.data, c.data_bytes);
      api_request_free(&c);
    }
  }
  if (ra != rb)
    fail_msg("paths differ: rc %d vs %d for %.*s", ra, rb,
             (int)(len < 200 ? len : 200), body);
  if (ra != 0) {
    if (ea.code != eb.code || strcmp(ea.msg, eb.msg) != 0)
      fail_msg("errors differ:\n  %s\n  %s", ea.msg, eb.msg);
  } else {
    const struct rd_params *p = &a.params, *q = &b.params;
    assert_int_equal(p->op, q->op);
    assert_int_equal(p->opset, q->opset);
    assert_int_equal(p->dtype, q->dtype);
    assert_int_equal(p->rank, q->rank);
    assert_int_equal(p->naxes, q->naxes);
    assert_int_equal(p->keepdims, q->keepdims);
    assert_int_equal(p->noop_with_empty_axes, q->noop_with_empty_axes);
    assert_int_equal(p->overflow, q->overflow);
    assert_memory_equal(a.shape, b.shape, sizeof a.shape);
    assert_memory_equal(a.axes, b.axes, sizeof a.axes);
    assert_int_equal(a.data_bytes, b.data_bytes);
    if (a.data_bytes > 0)
      assert_memory_equal(a.data, b.data, a.data_bytes);
  }
  api_request_free(&a);
  api_request_free(&b);
  return rc != 1;
}

#ifdef JSONFAST_FUZZ
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  check_same((const char *)data, size);
  return 0;
}
#endif

/* Whether jf__read_window() runs read_window() here. */
#if defined(__GNUC__) && defined(__x86_64__)
#define window_ok_for_tests __builtin_cpu_supports("ssse3")
#else
#define window_ok_for_tests 0
#endif

static int check_str(const char *body)
{
  return check_same(body, strlen(body));
}

/* The decoder converts every dtype whatever the op (the plan checks the
 * dtype against the op's version); bool refuses every number. */
static const char *const dtypes[] = {
  "float32", "float64", "float16", "bfloat16", "int32",  "uint32", "int64",
  "uint64",  "int8",    "uint8",   "int16",    "uint16", "bool"
};
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* {"op":"ReduceSumSquare","input":{"dtype":DT,"data":[ELEMS]}} */
static void with_data(char *buf, size_t size, const char *dtype,
                      const char *elems)
{
  snprintf(buf, size,
           "{\"op\":\"ReduceSumSquare\",\"input\":{\"dtype\":"
           "\"%s\",\"data\":[%s]}}",
           dtype, elems);
}

/* Number forms the fast path converts itself: same bytes as jansson's,
 * for every dtype (range errors included), and the fast path is taken. */
static void test_numbers_taken(void **state)
{
  static const char *const elems[] = {
    "0",
    "-0",
    "0.0",
    "-0.0",
    "1",
    "-1",
    "7",
    "1.5",
    "-2.25e3",
    "1E2",
    "1e+2",
    "1e-2",
    "0.1",
    "3.14159",
    "-1.23457e-05",
    "65504",
    "65520",
    "1e38",
    "3.4028235e38",
    "3.5e38",
    "1e-45",
    "1e-400",
    "1e307",
    "1.7976931348623157e307",
    "4.9e-324",
    "2.4703282292062328e-324",
    "9007199254740993",
    "9007199254740993.0",
    "123456789012345678",
    "9223372036854775807",
    "-9223372036854775808",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "0.30000000000000004",
    "0.1000000000000000055511151231",
    "123456789012345678901234567890e-10",
    "1.00000000000000011102230246251565",
    "0.000000000000000000000000000001",
    "100000000000000000000000.0",
    "2.5",
    "-3.5",
    "1e22",
    "1e23",
    "9007199254740992e-22",
    /* the edges of int8, uint8, int16, uint16 */
    "127",
    "128",
    "-128",
    "-129",
    "255",
    "256",
    "32767",
    "32768",
    "-32768",
    "-32769",
    "65535",
    "65536",
  };
  char body[4096];
  (void)state;
  for (size_t d = 0; d < NDTYPES; d++)
    for (size_t e = 0; e < sizeof elems / sizeof elems[0]; e++) {
      char list[256];
      snprintf(list, sizeof list, "1, %s ,\t2\n", elems[e]);
      with_data(body, sizeof body, dtypes[d], list);
      if (!check_str(body))
        fail_msg("fast path not taken for %s", elems[e]);
    }
}

/* Bodies the fast path must leave to jansson (or reject the same way). */
static void test_not_taken(void **state)
{
  static const char *const bodies[] = {
    /* elements that are not plain numbers */
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,\"NaN\",2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[[1,2],[3,4]]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,true]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,null]}}",
    "{\"input\":{\"dtype\":\"int64\",\"data\":[1,9223372036854775808]}}",
    "{\"input\":{\"dtype\":\"int64\",\"data\":[-9223372036854775809]}}",
    "{\"input\":{\"dtype\":\"float64\",\"data\":[1e400]}}",
    "{\"input\":{\"dtype\":\"float64\",\"data\":[-1e309]}}",
    /* in range, but beyond what the quick overflow bound admits */
    "{\"input\":{\"dtype\":\"float64\",\"data\":[1e308]}}",
    "{\"input\":{\"dtype\":\"float64\",\"data\":[1.7976931348623157e308]}}",
    "{\"input\":{\"dtype\":\"float64\",\"data\":[1.0000000000000000000000000000"
    "000000000000000000000000000000000001]}}",
    /* malformed arrays */
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,,2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[01]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1.]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[.5]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[-]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1e]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[+1]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1 2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[0x10]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[Infinity]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[]}}",
    /* the array elsewhere, or not where jansson sees input.data */
    "{\"input\":{\"dtype\":\"float32\",\"d\\u0061ta\":[1,2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2],\"data\":[3]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2]},\"input\":{}}",
    "{\"op\":\"ReduceL2\",\"axes\":[1,2],\"input\":{\"dtype\":\"float32\"}}",
    "{\"x\":{\"input\":{\"data\":[1]}},\"input\":{\"dtype\":\"float32\","
    "\"data\":[1]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":\"[1,2]\"}}",
    "{\"input\":{\"dtype\":\"float32\",\"note\":\"\\\"data\\\":[1]\","
    "\"data\":[1]}}",
    "[{\"input\":{\"data\":[1,2]}}]",
    "{\"input\":[{\"data\":[1,2]}]}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2]}}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2]}} x",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2]}",
    "}\"input\":{\"dtype\":\"float32\",\"data\":[1,2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,2]},\"op\":\"Nope\"}",
    "{\"input\":{\"dtype\":\"float32\",\"shape\":[3],\"data\":[1,2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"shape\":[2,1],\"data\":[1,2]}}",
    "{\"input\":{\"dtype\":\"uint32\",\"data\":[1,-2]}}",
    "{\"input\":{\"dtype\":\"int32\",\"data\":[1,2.5]}}",
    "{\"input\":{\"dtype\":\"int32\",\"data\":[1,2.0]}}",
    "{\"input\":{\"dtype\":\"int64\",\"data\":[1,1e300]}}",
    "{\"input\":{\"dtype\":\"bogus\",\"data\":[1,2]}}",
    "{\"input\":{\"data\":[1,2]}}",
    "",
    "   ",
    /* errors outside the array, but the array is malformed: jansson's
     * syntax error comes first */
    "{\"op\":\"Nope\",\"input\":{\"dtype\":\"float32\",\"data\":[1,,2]}}",
    "{\"op\":\"Nope\",\"input\":{\"dtype\":\"float32\",\"data\":[1,2}}",
    "{\"input\":{\"dtype\":\"bogus\",\"data\":[1,x]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,1e999]},\"op\":1}",
    "{\"input\":{\"dtype\":\"int8\",\"data\":[1,99999999999999999999]},"
    "\"op\":\"Nope\"}",
    /* an element error, then a shape error or a syntax error: not the
     * element's */
    "{\"input\":{\"dtype\":\"int8\",\"shape\":[3],\"data\":[1,300]}}",
    "{\"input\":{\"dtype\":\"int8\",\"shape\":[2],\"data\":[1,2,300]}}",
    "{\"input\":{\"dtype\":\"int8\",\"data\":[300,1,]}}",
    "{\"input\":{\"dtype\":\"int8\",\"data\":[300,1e999]}}",
    "{\"input\":{\"dtype\":\"int8\",\"data\":[300,2.5,-300]}}",
    "{\"input\":{\"dtype\":\"uint8\",\"data\":[1,2.5,-3]},\"op\":\"ReduceSum\"}",
    "{\"input\":{\"dtype\":\"bool\",\"data\":[1,0]}}",
    "{\"op\":\"ReduceSum\",\"input\":{\"dtype\":\"int8\",\"data\":[1,300]},"
    "\"bogus\":1}",
    /* a ']' that is not the array's end */
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,\"]\",2]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,[2],3]}}",
    "{\"input\":{\"dtype\":\"float32\",\"data\":[1,{\"a\":[]}]}}",
  };
  (void)state;
  for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
    check_str(bodies[i]);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

/* A random JSON number token (sometimes long, tiny or huge). */
static size_t random_number(char *p, size_t size)
{
  uint64_t r = next();
  int n;
  switch (r % 6) {
  case 0:
    n = snprintf(p, size, "%" PRId64, (int64_t)next() >> (next() % 64));
    break;
  case 1:
    n = snprintf(p, size, "%.*g", (int)(1 + next() % 17),
                 ((double)(next() >> 11) * 0x1p-53 - 0.5) * 1e4);
    break;
  case 2:
    n = snprintf(p, size, "%.*e", (int)(next() % 25),
                 (double)(next() >> 11) * 0x1p-53);
    break;
  case 3:
    n = snprintf(p, size, "%" PRIu64 ".%" PRIu64 "e%d", next() % 1000000,
                 next(), (int)(next() % 700) - 350);
    break;
  case 4:
    n = snprintf(p, size, "-%" PRIu64 "%" PRIu64, next(), next() % 1000);
    break;
  default:
    n = snprintf(p, size, "0.%019" PRIu64 "%" PRIu64, next() % 100, next());
  }
  return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* What the ordinary path stores for the double d in a narrow dtype. */
static void store_ref(int dtype, double d, unsigned char *dst)
{
  if (dtype == RD_FLOAT32) {
    float f = (float)d;
    memcpy(dst, &f, 4);
  } else {
    uint16_t h = dtype == RD_FLOAT16 ? rd_f64_to_f16(d) : rd_f64_to_bf16(d);
    memcpy(dst, &h, 2);
  }
}

/* jf_narrow() on the token `tok` against strtod() and a cast.  Adds to
 * counts[0] (undecided), counts[1] (same) or counts[2] (different). */
static void narrow_case(int dtype, const char *tok, unsigned margin,
                        unsigned long *counts)
{
  char buf[160];
  unsigned char got[4], want[4];
  struct jf_num n;
  size_t pos = 0, len;
  int last;

  len = (size_t)snprintf(buf, sizeof buf, "%s]", tok);
  if (len >= sizeof buf || jf_read(buf, len - 1, &pos, &n, &last) != 0 || !last)
    return; /* not a token the fast path reads */
  store_ref(dtype, strtod(tok, NULL), want);
  if (!jf_narrow(dtype, &n, margin, got))
    counts[0]++;
  else if (memcmp(got, want, dtype == RD_FLOAT32 ? 4 : 2) == 0)
    counts[1]++;
  else
    counts[2]++;
}

/* A value of the dtype from random bits (finite), and the next one up. */
static void random_pair(int dtype, double *lo, double *hi)
{
  for (;;) {
    uint64_t r = next();
    if (dtype == RD_FLOAT32) {
      uint32_t b = (uint32_t)r & 0x7fffffffu, c = b + 1;
      float f, g;
      memcpy(&f, &b, 4);
      memcpy(&g, &c, 4);
      if (!isfinite(f) || !isfinite(g))
        continue;
      *lo = f;
      *hi = g;
    } else {
      uint16_t b = (uint16_t)(r & 0x7fff);
      *lo = dtype == RD_FLOAT16 ? rd_f16_to_f64(b) : rd_bf16_to_f64(b);
      *hi = dtype == RD_FLOAT16 ? rd_f16_to_f64((uint16_t)(b + 1))
                                : rd_bf16_to_f64((uint16_t)(b + 1));
      if (!isfinite(*lo) || !isfinite(*hi))
        continue;
    }
    return;
  }
}

/* The fast conversion to float32, float16 and bfloat16 against strtod()
 * and a cast: random decimals of every form, and decimals within a few
 * double ulps of the dtype's rounding midpoints (the hard cases).  With
 * the margin 0 the check is void and the midpoints must catch it. */
static void test_narrow_exact(void **state)
{
  static const int narrow[] = { RD_FLOAT32, RD_FLOAT16, RD_BFLOAT16 };
  static const int prec[] = { 6, 9, 12, 15, 16, 17, 18, 19, 20 };
  unsigned long rnd[3] = { 0, 0, 0 }, mid[3] = { 0, 0, 0 };
  unsigned long ctl[3] = { 0, 0, 0 };
  char tok[128];
  (void)state;
  for (int t = 0; t < 3; t++) {
    int dt = narrow[t];
    for (int i = 0; i < 100000; i++) {
      if (random_number(tok, sizeof tok) > 0)
        narrow_case(dt, tok, JF_MARGIN, rnd);
      snprintf(tok, sizeof tok, "%.*g", (int)(1 + next() % 19),
               ldexp((double)(next() >> 11) * 0x1p-53,
                     (int)(next() % 300) - 150) *
                 (next() % 2 ? 1 : -1));
      narrow_case(dt, tok, JF_MARGIN, rnd);
    }
    for (int i = 0; i < 8000; i++) {
      double lo, hi, m, v;
      random_pair(dt, &lo, &hi);
      m = lo + (hi - lo) / 2; /* exact: one more bit than the dtype */
      for (int k = -4; k <= 4; k++) {
        v = m;
        for (int s = 0; s < (k < 0 ? -k : k); s++)
          v = nextafter(v, k < 0 ? 0.0 : INFINITY);
        for (size_t p = 0; p < sizeof prec / sizeof prec[0]; p++) {
          snprintf(tok, sizeof tok, "%s%.*e", next() % 2 ? "-" : "",
                   prec[p] - 1, v);
          narrow_case(dt, tok, JF_MARGIN, mid);
          narrow_case(dt, tok, 0, ctl);
        }
      }
    }
  }
  print_message("narrow: random %lu same, %lu undecided; midpoints %lu same, "
                "%lu undecided; margin 0: %lu wrong\n",
                rnd[1], rnd[0], mid[1], mid[0], ctl[2]);
  assert_int_equal(rnd[2], 0);
  assert_int_equal(mid[2], 0);
  /* Most random decimals are decided by the fast check (the others have
   * more than 19 digits or exponents beyond 80). */
  assert_true(rnd[1] > 2 * rnd[0]);
  assert_true(mid[1] > 0 && mid[0] > 0);
  /* Negative control: without the margin, some midpoint cases are wrong. */
  assert_true(ctl[2] > 0);
}

/* Random numbers of every form, each dtype: same bytes or same error. */
static void test_random_numbers(void **state)
{
  static char body[1 << 16], list[1 << 15];
  (void)state;
  for (int round = 0; round < 400; round++) {
    size_t len = 0;
    for (int k = 0; k < 20; k++) {
      if (k)
        list[len++] = ',';
      len += random_number(list + len, sizeof list - len);
    }
    list[len] = '\0';
    with_data(body, sizeof body, dtypes[round % NDTYPES], list);
    check_str(body);
  }
}

/* Mutated bodies (bytes inserted, deleted, replaced from JSON's own
 * alphabet): whatever the body, both paths agree. */
static void test_mutations(void **state)
{
  static const char alphabet[] = "[]{},:\"\\ -+.eE0123456789x\n";
  static const char *const bases[] = {
    "{\"op\":\"ReduceL2\",\"axes\":[0],\"keepdims\":0,\"input\":{\"dtype\":"
    "\"float32\",\"shape\":[2,3],\"data\":[1.5,-2,3e2,0.25,-0,7]}}",
    "{\"input\":{\"dtype\":\"int32\",\"data\":[1,-2147483648,3,2147483647]},"
    "\"op\":\"ReduceSumSquare\",\"overflow\":\"wrap\"}",
    "{\"input\":{\"data\":[1e-5,2E+3,-0.0],\"dtype\":\"float64\"}}",
  };
  char buf[512];
  size_t taken = 0;
  (void)state;
  for (int it = 0; it < 30000; it++) {
    const char *base = bases[it % 3];
    size_t len = strlen(base);
    int muts = 1 + (int)(next() % 3);
    memcpy(buf, base, len);
    for (int m = 0; m < muts; m++) {
      size_t at = (size_t)(next() % (len + 1));
      char c = alphabet[next() % (sizeof alphabet - 1)];
      switch (next() % 3) {
      case 0: /* insert */
        if (len + 1 < sizeof buf) {
          memmove(buf + at + 1, buf + at, len - at);
          buf[at] = c;
          len++;
        }
        break;
      case 1: /* delete */
        if (at < len) {
          memmove(buf + at, buf + at + 1, len - at - 1);
          len--;
        }
        break;
      default:
        if (at < len)
          buf[at] = c;
      }
    }
    taken += (size_t)check_same(buf, len);
  }
  /* Many mutants keep a valid flat array: the fast path was exercised. */
  assert_true(taken > 1000);
}

/* A large body: the fast path is what api_json_decode() takes. */
static void test_large_body(void **state)
{
  size_t cap = 200000 * 16, len = 0;
  char *body = malloc(cap);
  struct api_request req;
  struct rd_error err;
  (void)state;
  assert_non_null(body);
  len += (size_t)snprintf(body, cap,
                          "{\"op\":\"ReduceL2\",\"input\":{"
                          "\"dtype\":\"float32\",\"data\":[");
  for (int i = 0; i < 200000; i++)
    len += (size_t)snprintf(body + len, cap - len, "%s-%d.5", i ? "," : "", i);
  len += (size_t)snprintf(body + len, cap - len, "]}}");
  assert_true(len >= JF_MIN_BODY);
  assert_true(check_same(body, len));
  assert_int_equal(api_json_decode(body, len, 0, &req, &err), 0);
  assert_int_equal(req.data_bytes, 200000 * 4);
  for (int i = 0; i < 200000; i += 997) {
    float f;
    memcpy(&f, (char *)req.data + i * 4, 4);
    assert_true(f == -((float)i + 0.5f));
  }
  api_request_free(&req);
  free(body);
}

/* Whether two reads of one element agree: the same return, position and
 * end flag and, for an element read, the same fields (those its kind
 * defines). */
static int same_elem(int ra, size_t pa, int la, const struct jf_num *a, int rb,
                     size_t pb, int lb, const struct jf_num *b)
{
  if (ra != rb || pa != pb)
    return 0;
  if (ra != 0)
    return 1;
  return la == lb && a->kind == b->kind && a->neg == b->neg &&
         a->simple == b->simple && a->m == b->m && a->tok == b->tok &&
         a->toklen == b->toklen &&
         (a->kind == JF_INT ? a->i == b->i : a->e10 == b->e10);
}

/* Reads the element at s[0] with both token readers, and read_window()
 * alone; fails unless the readers agree, and unless read_window() takes
 * exactly the tokens it is documented to take (`plain`: a sign, digits,
 * at most one '.' between digits, no leading zero, no exponent, at most
 * 16 bytes after the sign).  Returns 1 if read_window() took it. */
static int window_case(const char *s, size_t end, size_t toklen, int plain)
{
  struct jf_num a, b, w;
  size_t pa = 0, pb = 0, wend;
  int ra, rb, la = -1, lb = -1, neg = s[0] == '-';

  memset(&a, 0x55, sizeof a);
  memset(&b, 0x55, sizeof b);
  ra = jf_read_path(s, end, &pa, &a, &la, 1);
  rb = jf_read_path(s, end, &pb, &b, &lb, 0);
  if (!same_elem(ra, pa, la, &a, rb, pb, lb, &b))
    fail_msg("window %d at %zu, bytes %d at %zu: %.*s", ra, pa, rb, pb,
             (int)end + 1, s);
  wend = jf__read_window(s, 0, end, &w);
  if (!window_ok_for_tests)
    return 0;
  /* It needs the 16 bytes after the sign before s[end], and a byte after
   * the token within them. */
  plain = plain && toklen - (size_t)neg < 16 && (size_t)neg + 16 <= end;
  if ((wend != 0) != plain)
    fail_msg("read_window() %s %.*s", wend ? "took" : "left", (int)end + 1, s);
  if (wend != 0) {
    assert_int_equal(wend, toklen);
    if (rb == 0 && !same_elem(0, 0, 0, &w, 0, 0, 0, &b))
      fail_msg("read_window() differs on %.*s", (int)end + 1, s);
  }
  return wend != 0;
}

/* Every token shape, from one to twenty digits with the '.' at each place
 * or none, signs, leading zeros, exponents and separators, at each
 * distance from the array's ']': the window reader gives what the byte
 * reader gives, and takes the tokens it should.  The case sits at the end
 * of its allocation, so a read beyond s[end] is a sanitizer error. */
static void test_window_tokens(void **state)
{
  static const char *const exps[] = { "", "e5", "E-3", "e" };
  static const char *const terms[] = { ",", "]", " ,", "\t]", "x", ".", "-" };
  enum { CAP = 128 };
  char *block = malloc(CAP);
  char tok[64], cs[CAP];
  size_t taken = 0, cases = 0;
  (void)state;
  assert_non_null(block);
  for (int neg = 0; neg < 2; neg++)
    for (int nd = 0; nd <= 20; nd++)
      for (int dot = -1; dot <= nd; dot++)
        for (int zero = 0; zero < 2; zero++)
          for (size_t e = 0; e < sizeof exps / sizeof exps[0]; e++) {
            size_t tl = 0;
            if (neg)
              tok[tl++] = '-';
            for (int d = 0; d < nd; d++) {
              if (d == dot)
                tok[tl++] = '.';
              tok[tl++] = (char)('0' + (d == 0 && zero ? 0 : 1 + next() % 9));
              if (d > 0 && next() % 4 == 0)
                tok[tl - 1] = '0';
            }
            if (dot == nd)
              tok[tl++] = '.';
            /* Digits before and after any '.', no leading zero (a lone
             * "0" before the '.' or alone is one). */
            int ip = dot < 0 ? nd : dot;
            int plain = nd > 0 && ip > 0 && dot != nd && exps[e][0] == '\0' &&
                        !(zero && ip > 1);
            memcpy(tok + tl, exps[e], strlen(exps[e]));
            tl += strlen(exps[e]);
            for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++)
              for (size_t fill = 0; fill < 20; fill++) {
                size_t len = 0, end;
                memcpy(cs, tok, tl);
                len = tl;
                memcpy(cs + len, terms[t], strlen(terms[t]));
                len += strlen(terms[t]);
                for (size_t f = 0; f < fill; f++)
                  cs[len++] = f % 2 ? '7' : ',';
                cs[len++] = ']';
                end = (size_t)((char *)memchr(cs, ']', len) - cs);
                memcpy(block + CAP - (end + 1), cs, end + 1);
                taken += (size_t)window_case(block + CAP - (end + 1), end, tl,
                                             plain && terms[t][0] != '.');
                cases++;
              }
          }
  free(block);
  if (window_ok_for_tests)
    assert_true(taken > 10000);
  print_message("read_window() took %zu of %zu cases\n", taken, cases);
}

/* One element for test_window_fill(): mostly the short plain tokens the
 * window takes, with the other forms among them; `dense`: almost only
 * those, so that most runs of 8 are read as one batch (read_batch()),
 * with "-0" (the integer 0, stored as +0) among them, and a space before
 * a quarter of them (such a batch is read element by element). */
static size_t window_elem(char *p, size_t size, int dense)
{
  uint64_t r = next() % 17;
  int n;
  if (dense && next() % 12 != 0)
    r = next() % 11;
  if (dense && next() % 4 == 0 && size > 1) { /* ", " */
    *p = ' ';
    return 1 + window_elem(p + 1, size - 1, dense);
  }
  if (dense && next() % 50 == 0)
    n = snprintf(p, size, "%s", next() % 2 ? "-0" : "0");
  else if (r == 16) /* at or next to a float32 midpoint (2^24 + odd) */
    n = snprintf(p, size, "%s%" PRIu64 "%s", next() % 2 ? "-" : "",
                 ((uint64_t)1 << 24) + 2 * (next() % 1000) + 1,
                 (const char *[]){ "", ".0", ".5", ".0000001", ".9999999",
                                   ".00000000001" }[next() % 6]);
  else if (r < 9)
    n = snprintf(p, size, "%s%" PRIu64 ".%0*" PRIu64, next() % 2 ? "-" : "",
                 next() % 1000, (int)(1 + next() % 7), next() % 10000000);
  else if (r < 11)
    n = snprintf(p, size, "%" PRId64, (int64_t)(next() >> (next() % 64)));
  else if (r < 13)
    return random_number(p, size);
  else if (r == 13)
    n = snprintf(p, size, " %.9g\n", (double)(next() >> 11) * 0x1p-40);
  else if (r == 14)
    n = snprintf(p, size, "%.17g", (double)(next() >> 11) * 0x1p-60);
  else /* not JSON: the fast path gives up */
    n = snprintf(p, size, "%s", next() % 2 ? "01.5" : "2.");
  return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* jf_fill_narrow_path() with the window (1) and with float32 batches (2,
 * where the CPU has AVX-512; else the same as 1) against the byte reader
 * (0) over random arrays, in lock step as json.c calls it (an undecided
 * element is converted exactly and counted): the same returns, positions,
 * counts, undecided elements and stored bytes.  Arrays stopped early
 * (max) and broken ones (bad) end batches in their middle; dense ones
 * are read mostly 8 elements at once. */
static void test_window_fill(void **state)
{
  static const int narrow[] = { RD_FLOAT32, RD_FLOAT16, RD_BFLOAT16 };
  enum { N = 300 };
  static char s[N * 48 + 2];
  static unsigned char oa[N * 4 + 32], ob[N * 4 + 32];
  (void)state;
  for (int round = 0; round < 900; round++) {
    int dt = narrow[round % 3], bad = round % 4 == 0, dense = round % 2;
    size_t len = 0, es = dt == RD_FLOAT32 ? 4 : 2;
    uint64_t count = 1 + next() % N, max;
    s[len++] = '[';
    for (uint64_t e = 0; e < count; e++) {
      size_t at = len;
      if (e)
        s[len++] = ',';
      do
        len = at + (e ? 1 : 0) + window_elem(s + at + (e ? 1 : 0), 40, dense);
      while (!bad && (s[len - 1] == '.' || s[at + (e ? 1 : 0)] == '0'));
    }
    s[len] = ']';
    max = round % 5 == 0 ? next() % (count + 1) : count;
    for (int w = 1; w <= 2; w++) {
      size_t pa = 1, pb = 1;
      uint64_t ka = 0, kb = 0;
      for (;;) {
        struct jf_num na, nb;
        int la = -1, lb = -1, ra, rb;
        double d;
        ra = jf_fill_narrow_path(s, len, &pa, dt, oa, max, &ka, &na, &la, w);
        rb = jf_fill_narrow_path(s, len, &pb, dt, ob, max, &kb, &nb, &lb, 0);
        if (ra != rb || pa != pb || ka != kb || (ra == 1 && la != lb))
          fail_msg("round %d: path %d: %d at %zu (%" PRIu64 "), bytes %d at "
                   "%zu (%" PRIu64 ")",
                   round, w, ra, pa, ka, rb, pb, kb);
        if (ra != 1)
          break;
        assert_true(same_elem(0, 0, la, &na, 0, 0, lb, &nb));
        assert_int_equal(jf_exact(&na, &d), 0);
        store_ref(dt, d, oa + ka * es);
        store_ref(dt, d, ob + kb * es);
        ka++, kb++;
        if (la)
          break;
      }
      assert_memory_equal(oa, ob, ka * es);
    }
  }
}

/* Negative control: same_elem() tells elements apart that differ only in
 * the place of the '.' or in being an integer. */
static void test_window_control(void **state)
{
  static const char *const pairs[][2] = {
    { "12.5,", "1.25," },
    { "125,", "125.0," },
    { "-7,", "7," },
  };
  (void)state;
  for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
    struct jf_num a, b;
    size_t pa = 0, pb = 0;
    int la, lb, ra, rb;
    ra = jf_read_path(pairs[p][0], strlen(pairs[p][0]) - 1, &pa, &a, &la, 0);
    rb = jf_read_path(pairs[p][1], strlen(pairs[p][1]) - 1, &pb, &b, &lb, 0);
    b.tok = a.tok;
    b.toklen = a.toklen;
    pb = pa;
    assert_int_equal(ra, 0);
    assert_int_equal(rb, 0);
    assert_false(same_elem(ra, pa, la, &a, rb, pb, lb, &b));
    assert_true(same_elem(ra, pa, la, &a, ra, pa, la, &a));
  }
}

/* Regression: a batch read from s[0] when s[0] is ',' (a push decoder's
 * chunk that starts with the second ',' of ",,") took the empty element
 * as read, because the first ',' is at 0 and read_window()'s "not taken"
 * is 0 too.  Every path must refuse it at 0, as the byte reader does. */
static void test_batch_comma_at_start(void **state)
{
  char s[256];
  size_t len = 0;
  (void)state;
  s[len++] = ',';
  while (len < 200)
    len += (size_t)snprintf(s + len, sizeof s - len, "1.25,");
  s[len - 1] = ']';
  for (int w = 0; w <= 2; w++) {
    unsigned char out[64 * 4];
    size_t pos = 0;
    uint64_t k = 0;
    struct jf_num n;
    int last = 0;
    assert_int_equal(jf_fill_narrow_path(s, len - 1, &pos, RD_FLOAT32, out, 64,
                                         &k, &n, &last, w),
                     -1);
    assert_int_equal(pos, 0);
    assert_int_equal(k, 0);
  }
}

/* The last batch before the array's end: eight tokens of up to 17 bytes
 * with their ',' put the eighth token's 16-byte window up to 8 bytes past
 * s[end], which read_four() must not load (read_window() does not either).
 * The buffer is exactly the text, so ASan (make check-asan) sees such a
 * load; every path gives the same elements. */
static void test_batch_window_at_end(void **state)
{
  (void)state;
  for (int d = 0; d < 8; d++) {
    size_t len = 0, size = 1 + 7 * 17 + 5 + 4 + (size_t)d + 1;
    char *s = malloc(size);
    unsigned char oa[64 * 4], ob[64 * 4];
    assert_non_null(s);
    s[len++] = '[';
    for (int q = 0; q < 7; q++) {
      memcpy(s + len, "-1.2345678901234,", 17);
      len += 17;
    }
    memcpy(s + len, "-1.5,", 5);
    len += 5;
    memset(s + len, '1', 4 + (size_t)d); /* one integer up to the ']' */
    len += 4 + (size_t)d;
    s[len++] = ']';
    assert_int_equal(len, size);
    for (int w = 1; w <= 2; w++) {
      size_t pa = 1, pb = 1;
      uint64_t ka = 0, kb = 0;
      struct jf_num na, nb;
      int la = 0, lb = 0;
      assert_int_equal(jf_fill_narrow_path(s, len - 1, &pa, RD_FLOAT32, oa, 64,
                                           &ka, &na, &la, w),
                       jf_fill_narrow_path(s, len - 1, &pb, RD_FLOAT32, ob, 64,
                                           &kb, &nb, &lb, 0));
      assert_int_equal(pa, pb);
      assert_int_equal(ka, 9);
      assert_int_equal(kb, 9);
      assert_memory_equal(oa, ob, 9 * 4);
    }
    free(s);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_numbers_taken),
    cmocka_unit_test(test_not_taken),
    cmocka_unit_test(test_random_numbers),
    cmocka_unit_test(test_mutations),
    cmocka_unit_test(test_large_body),
    cmocka_unit_test(test_narrow_exact),
    cmocka_unit_test(test_window_tokens),
    cmocka_unit_test(test_window_fill),
    cmocka_unit_test(test_window_control),
    cmocka_unit_test(test_batch_comma_at_start),
    cmocka_unit_test(test_batch_window_at_end),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
