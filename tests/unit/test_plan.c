/* test_plan.c - libreduce rules, errors, exact values and determinism.
 *
 * Expected values are computed here independently (exact integer sums, sqrt
 * of exact sums, values from the ONNX docs), never taken from the library.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "f16.h"
#include "reduce.h"

typedef unsigned __int128 u128;

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

struct spec {
  int op, dtype;
  int64_t opset;
  size_t rank;
  int64_t shape[RD_MAX_RANK + 2];
  size_t naxes;
  int64_t axes[RD_MAX_RANK + 2];
  int64_t keepdims, noop;
  int overflow;
};

static struct rd_params params_of(const struct spec *s)
{
  struct rd_params p;
  rd_params_init(&p);
  p.op = s->op;
  p.dtype = s->dtype;
  p.opset = s->opset;
  p.rank = s->rank;
  p.shape = s->shape;
  p.naxes = s->naxes;
  p.axes = s->axes;
  p.keepdims = s->keepdims;
  p.noop_with_empty_axes = s->noop;
  p.overflow = s->overflow;
  return p;
}

static struct spec spec0(int op, int dtype)
{
  struct spec s;
  memset(&s, 0, sizeof s);
  s.op = op;
  s.dtype = dtype;
  s.opset = 18;
  s.keepdims = 1;
  s.noop = RD_UNSET;
  return s;
}

static int plan_of(const struct spec *s, struct rd_plan *pl,
                   struct rd_error *err)
{
  struct rd_params p = params_of(s);
  return rd_plan_init(pl, &p, err);
}

/* Expects rd_plan_init to fail with `code` and a message containing `sub`. */
static void expect_plan_error(const struct spec *s, int code, const char *sub)
{
  struct rd_plan pl;
  struct rd_error err;
  int rc = plan_of(s, &pl, &err);
  if (rc != code || !strstr(err.msg, sub))
    print_error("rc %d (want %d), msg \"%s\" (want \"%s\")\n", rc, code,
                err.msg, sub);
  assert_int_equal(rc, code);
  assert_int_equal(err.code, code);
  assert_non_null(strstr(err.msg, sub));
}

static void set_shape(struct spec *s, size_t rank, ...)
{
  va_list ap;
  va_start(ap, rank);
  s->rank = rank;
  for (size_t i = 0; i < rank; i++)
    s->shape[i] = va_arg(ap, int64_t);
  va_end(ap);
}

static void set_axes(struct spec *s, size_t n, ...)
{
  va_list ap;
  va_start(ap, n);
  s->naxes = n;
  for (size_t i = 0; i < n; i++)
    s->axes[i] = va_arg(ap, int64_t);
  va_end(ap);
}

/* Runs the plan with rd_execute; returns the rc, output in a new buffer. */
static int run(const struct spec *s, const void *in, void **out,
               struct rd_plan *pl, struct rd_error *err)
{
  int rc = plan_of(s, pl, err);
  assert_int_equal(rc, 0);
  *out = calloc(1, pl->out_bytes + 1);
  assert_non_null(*out);
  return rd_execute(pl, in, *out, err);
}

static void check_shape(const struct rd_plan *pl, size_t rank, ...)
{
  va_list ap;
  uint64_t n = 1;
  assert_int_equal(pl->out_rank, rank);
  va_start(ap, rank);
  for (size_t i = 0; i < rank; i++) {
    int64_t d = va_arg(ap, int64_t);
    assert_int_equal(pl->out_shape[i], d);
    n *= (uint64_t)d;
  }
  va_end(ap);
  assert_int_equal(pl->out_count, n);
  assert_int_equal(pl->out_bytes, n * pl->elem_size);
}

static uint32_t f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t f64_bits(double d)
{
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* ------------------------------------------------------------------ */
/* Names, versions, dtypes                                            */
/* ------------------------------------------------------------------ */

static void test_version_mapping(void **state)
{
  (void)state;
  for (int64_t o = 1; o <= 30; o++) {
    int want = o >= 18 ? 18 : o >= 13 ? 13 : o >= 11 ? 11 : 1;
    assert_int_equal(rd_op_version(RD_OP_L2, o), want);
  }
  assert_int_equal(rd_op_version(RD_OP_L2, 12), 11);
  assert_int_equal(rd_op_version(RD_OP_L2, 17), 13);
  assert_int_equal(rd_op_version(RD_OP_L2, 21), 18);
  assert_int_equal(rd_op_version(RD_OP_L2, 1000000), 18);
  assert_int_equal(rd_op_version(RD_OP_L2, 0), RD_E_OPSET);
  assert_int_equal(rd_op_version(RD_OP_L2, -1), RD_E_OPSET);
  assert_int_equal(rd_op_version(RD_OP_L2, INT64_MIN), RD_E_OPSET);
  assert_int_equal(rd_op_info(RD_OP_L2)->versions[0], 1);
  assert_int_equal(rd_op_info(RD_OP_L2)->versions[3], 18);

  /* The plan records the resolved version. */
  for (int64_t o = 1; o <= 30; o++) {
    struct spec s = spec0(RD_OP_L2, RD_FLOAT32);
    struct rd_plan pl;
    s.opset = o;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    assert_int_equal(pl.version, rd_op_version(RD_OP_L2, o));
  }
}

static void test_names(void **state)
{
  enum rd_dtype d;
  enum rd_op op;
  enum rd_overflow ov;
  static const struct {
    const char *name;
    int dtype;
    size_t size;
  } t[] = { { "float32", RD_FLOAT32, 4 }, { "float64", RD_FLOAT64, 8 },
            { "float16", RD_FLOAT16, 2 }, { "bfloat16", RD_BFLOAT16, 2 },
            { "int32", RD_INT32, 4 },     { "int64", RD_INT64, 8 },
            { "uint32", RD_UINT32, 4 },   { "uint64", RD_UINT64, 8 },
            { "int8", RD_INT8, 1 },       { "uint8", RD_UINT8, 1 },
            { "int16", RD_INT16, 2 },     { "uint16", RD_UINT16, 2 },
            { "bool", RD_BOOL, 1 } };
  static const char *const opnames[RD_OP_COUNT + 1] = {
    NULL,         "ReduceL2",     "ReduceSumSquare", "ReduceSum",
    "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
    "ReduceL1",   "ReduceLogSum", "ReduceLogSumExp", "ArgMax",
    "ArgMin"
  };
  (void)state;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    assert_string_equal(rd_dtype_name(t[i].dtype), t[i].name);
    assert_int_equal(rd_dtype_size(t[i].dtype), t[i].size);
    assert_int_equal(rd_dtype_parse(t[i].name, &d), 0);
    assert_int_equal(d, t[i].dtype);
  }
  assert_int_equal(rd_dtype_parse("float", &d), 0);
  assert_int_equal(d, RD_FLOAT32);
  assert_int_equal(rd_dtype_parse("double", &d), 0);
  assert_int_equal(d, RD_FLOAT64);
  assert_int_equal(rd_dtype_parse("int4", &d), RD_E_DTYPE);
  assert_int_equal(rd_dtype_parse("Float32", &d), RD_E_DTYPE);
  assert_int_equal(rd_dtype_parse("boolean", &d), RD_E_DTYPE);
  assert_int_equal(rd_dtype_parse("", &d), RD_E_DTYPE);
  assert_null(rd_dtype_name(8)); /* ONNX string */
  assert_null(rd_dtype_name(14));
  assert_null(rd_dtype_name(0));
  assert_int_equal(rd_dtype_size(8), 0);
  /* rd_dtypes lists each supported type once, in the documented order. */
  assert_int_equal(RD_NDTYPES, sizeof t / sizeof t[0]);
  {
    static const int order[RD_NDTYPES] = { RD_FLOAT32,  RD_FLOAT64, RD_FLOAT16,
                                           RD_BFLOAT16, RD_INT8,    RD_UINT8,
                                           RD_INT16,    RD_UINT16,  RD_INT32,
                                           RD_UINT32,   RD_INT64,   RD_UINT64,
                                           RD_BOOL };
    for (size_t i = 0; i < RD_NDTYPES; i++)
      assert_int_equal(rd_dtypes[i], order[i]);
  }
  for (int o = 1; o <= RD_OP_COUNT; o++) {
    const struct rd_op_info *oi = rd_op_info(o);
    assert_non_null(oi);
    assert_int_equal(oi->op, o);
    assert_string_equal(oi->name, opnames[o]);
    assert_string_equal(rd_op_name(o), opnames[o]);
    assert_int_equal(rd_op_parse(opnames[o], &op), 0);
    assert_int_equal(op, o);
  }
  assert_null(rd_op_info(0));
  assert_null(rd_op_info(RD_OP_COUNT + 1));
  assert_null(rd_op_name(RD_OP_COUNT + 1));

  assert_string_equal(rd_op_name(RD_OP_L2), "ReduceL2");
  assert_string_equal(rd_op_name(RD_OP_SUM_SQUARE), "ReduceSumSquare");
  assert_null(rd_op_name(0));
  assert_int_equal(rd_op_parse("ReduceL2", &op), 0);
  assert_int_equal(op, RD_OP_L2);
  assert_int_equal(rd_op_parse("ReduceSumSquare", &op), 0);
  assert_int_equal(op, RD_OP_SUM_SQUARE);
  assert_int_equal(rd_op_parse("reducel2", &op), RD_E_OP);
  assert_int_equal(rd_op_parse("ReduceLogsum", &op), RD_E_OP);
  assert_int_equal(rd_op_parse("Argmax", &op), RD_E_OP);

  assert_string_equal(rd_overflow_name(RD_OVERFLOW_ERROR), "error");
  assert_string_equal(rd_overflow_name(RD_OVERFLOW_SATURATE), "saturate");
  assert_string_equal(rd_overflow_name(RD_OVERFLOW_WRAP), "wrap");
  assert_null(rd_overflow_name(3));
  assert_int_equal(rd_overflow_parse("wrap", &ov), 0);
  assert_int_equal(ov, RD_OVERFLOW_WRAP);
  assert_int_equal(rd_overflow_parse("saturate", &ov), 0);
  assert_int_equal(ov, RD_OVERFLOW_SATURATE);
  assert_int_equal(rd_overflow_parse("clamp", &ov), RD_E_POLICY);

  assert_string_equal(rd_errname(RD_E_AXIS_DUP), "DUPLICATE_AXIS");
  assert_string_equal(rd_errname(RD_E_OVERFLOW), "INTEGER_OVERFLOW");
  assert_null(rd_errname(-99));
  assert_string_equal(rd_strerror(RD_E_AXIS_RANGE), "axis out of range");
  assert_non_null(rd_strerror(-99));
}

static void test_dtype_version_matrix(void **state)
{
  static const int ok[] = { RD_FLOAT32, RD_FLOAT64, RD_FLOAT16, RD_INT32,
                            RD_INT64,   RD_UINT32,  RD_UINT64 };
  static const int bad[] = { 0, 8, 14, 15, 17, -1, 1000 };
  /* Types of other operators: known, but never in ReduceL2's lists. */
  static const int other[] = { RD_UINT8, RD_INT8, RD_UINT16, RD_INT16,
                               RD_BOOL };
  (void)state;
  for (int64_t opset = 1; opset <= 20; opset++) {
    int v = rd_op_version(RD_OP_L2, opset);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
      struct spec s = spec0(RD_OP_SUM_SQUARE, ok[i]);
      struct rd_plan pl;
      s.opset = opset;
      assert_int_equal(rd_dtype_in_version(RD_OP_L2, ok[i], v), 1);
      assert_int_equal(plan_of(&s, &pl, NULL), 0);
      assert_int_equal(pl.dtype, ok[i]);
    }
    {
      struct spec s = spec0(RD_OP_L2, RD_BFLOAT16);
      s.opset = opset;
      assert_int_equal(rd_dtype_in_version(RD_OP_L2, RD_BFLOAT16, v), v >= 13);
      if (v >= 13) {
        struct rd_plan pl;
        assert_int_equal(plan_of(&s, &pl, NULL), 0);
      } else {
        expect_plan_error(&s, RD_E_DTYPE_VERSION, "bfloat16");
      }
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      struct spec s = spec0(RD_OP_L2, bad[i]);
      char want[32];
      s.opset = opset;
      snprintf(want, sizeof want, "dtype %d", bad[i]);
      assert_int_equal(rd_dtype_in_version(RD_OP_L2, bad[i], v), 0);
      expect_plan_error(&s, RD_E_DTYPE, want);
    }
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
      struct spec s = spec0(RD_OP_L2, other[i]);
      char want[64];
      s.opset = opset;
      snprintf(want, sizeof want,
               "dtype %s is not allowed by ReduceL2 "
               "version %d",
               rd_dtype_name(other[i]), v);
      assert_int_equal(rd_dtype_in_version(RD_OP_L2, other[i], v), 0);
      expect_plan_error(&s, RD_E_DTYPE_VERSION, want);
    }
  }
  {
    struct spec s = spec0(RD_OP_L2, RD_BFLOAT16);
    s.opset = 12;
    expect_plan_error(&s, RD_E_DTYPE_VERSION, "version 11 (opset 12)");
  }
}

/* ------------------------------------------------------------------ */
/* Errors                                                             */
/* ------------------------------------------------------------------ */

static void test_errors(void **state)
{
  struct spec s;
  (void)state;

  s = spec0(0, RD_FLOAT32);
  expect_plan_error(&s, RD_E_OP, "op is 0");
  s = spec0(RD_OP_COUNT + 1, RD_FLOAT32);
  expect_plan_error(&s, RD_E_OP, "op is 13");

  s = spec0(RD_OP_L2, RD_FLOAT32);
  s.opset = 0;
  expect_plan_error(&s, RD_E_OPSET, "opset is 0");
  s.opset = -1;
  expect_plan_error(&s, RD_E_OPSET, "opset is -1");

  s = spec0(RD_OP_L2, RD_FLOAT32);
  s.opset = 17;
  s.noop = 0;
  expect_plan_error(&s, RD_E_NOOP_VERSION, "noop_with_empty_axes");
  s.opset = 1;
  s.noop = 1;
  expect_plan_error(&s, RD_E_NOOP_VERSION, "version 1");
  s.opset = 18;
  s.noop = 2;
  expect_plan_error(&s, RD_E_NOOP, "noop_with_empty_axes is 2");
  s.noop = -1;
  expect_plan_error(&s, RD_E_NOOP, "noop_with_empty_axes is -1");

  s = spec0(RD_OP_L2, RD_FLOAT32);
  s.keepdims = 2;
  expect_plan_error(&s, RD_E_KEEPDIMS, "keepdims is 2");
  s.keepdims = -1;
  expect_plan_error(&s, RD_E_KEEPDIMS, "keepdims is -1");

  s = spec0(RD_OP_L2, RD_INT32);
  s.overflow = 7;
  expect_plan_error(&s, RD_E_POLICY, "overflow policy is 7");

  s = spec0(RD_OP_L2, RD_FLOAT32);
  s.rank = RD_MAX_RANK + 1;
  for (size_t i = 0; i < s.rank; i++)
    s.shape[i] = 1;
  expect_plan_error(&s, RD_E_RANK, "rank is 33");
  s.rank = RD_MAX_RANK; /* the limit itself is fine */
  {
    struct rd_plan pl;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    assert_int_equal(pl.out_count, 1);
  }

  s = spec0(RD_OP_L2, RD_FLOAT32);
  set_shape(&s, 3, (int64_t)2, (int64_t)3, (int64_t)-1);
  expect_plan_error(&s, RD_E_DIM, "shape[2] is -1; dims must be >= 0");

  s = spec0(RD_OP_L2, RD_FLOAT64);
  set_shape(&s, 2, (int64_t)1 << 31, (int64_t)1 << 28); /* 2^62 bytes */
  {
    struct rd_plan pl;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    assert_int_equal(pl.in_bytes, (uint64_t)1 << 62);
  }
  set_shape(&s, 2, (int64_t)1 << 31, (int64_t)1 << 29); /* 2^63 bytes */
  expect_plan_error(&s, RD_E_TOO_LARGE, "bytes");
  set_shape(&s, 3, INT64_MAX, INT64_MAX, (int64_t)2);
  expect_plan_error(&s, RD_E_TOO_LARGE, "input");
  /* A zero dim makes the input empty, but the output can still be huge. */
  set_shape(&s, 3, (int64_t)0, INT64_MAX, INT64_MAX);
  set_axes(&s, 1, (int64_t)0);
  expect_plan_error(&s, RD_E_TOO_LARGE, "output");
  set_shape(&s, 3, INT64_MAX, INT64_MAX, (int64_t)0);
  set_axes(&s, 1, (int64_t)1);
  {
    struct rd_plan pl;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    assert_int_equal(pl.in_count, 0);
    assert_int_equal(pl.out_count, 0);
  }

  s = spec0(RD_OP_L2, RD_FLOAT32);
  set_shape(&s, 3, (int64_t)2, (int64_t)3, (int64_t)4);
  set_axes(&s, 1, (int64_t)3);
  expect_plan_error(&s, RD_E_AXIS_RANGE,
                    "axis 3 is out of range [-3, 2] for an input of rank 3");
  set_axes(&s, 2, (int64_t)0, (int64_t)-4);
  expect_plan_error(&s, RD_E_AXIS_RANGE,
                    "axis -4 is out of range [-3, 2] for an input of rank 3");
  set_axes(&s, 2, (int64_t)1, (int64_t)-2);
  expect_plan_error(&s, RD_E_AXIS_DUP, "axes[0] = 1 and axes[1] = -2");
  set_axes(&s, 3, (int64_t)0, (int64_t)2, (int64_t)2);
  expect_plan_error(&s, RD_E_AXIS_DUP, "axes[1] = 2 and axes[2] = 2");
  /* Range is checked for every axis before duplicates. */
  set_axes(&s, 3, (int64_t)1, (int64_t)1, (int64_t)9);
  expect_plan_error(&s, RD_E_AXIS_RANGE, "axis 9 is out of range");

  s = spec0(RD_OP_L2, RD_FLOAT32);
  set_axes(&s, 1, (int64_t)0);
  expect_plan_error(&s, RD_E_AXIS_RANGE,
                    "axis 0 is out of range for an input of rank 0");
  set_axes(&s, 1, (int64_t)-1);
  expect_plan_error(&s, RD_E_AXIS_RANGE, "a scalar has no axes");

  /* Validation order: op, opset, dtype, dtype-in-version, noop, keepdims,
   * sizes, axes. */
  s = spec0(99, 99);
  s.opset = 0;
  expect_plan_error(&s, RD_E_OP, "op is 99");
  s.op = RD_OP_L2;
  expect_plan_error(&s, RD_E_OPSET, "opset");
  s.opset = 11;
  expect_plan_error(&s, RD_E_DTYPE, "dtype 99");
  s.dtype = RD_BFLOAT16;
  s.noop = 5;
  s.keepdims = 7;
  expect_plan_error(&s, RD_E_DTYPE_VERSION, "bfloat16");
  s.dtype = RD_FLOAT16;
  expect_plan_error(&s, RD_E_NOOP_VERSION, "noop");
  s.opset = 18;
  expect_plan_error(&s, RD_E_NOOP, "noop_with_empty_axes is 5");
  s.noop = 1;
  set_shape(&s, 2, (int64_t)-3, (int64_t)2);
  set_axes(&s, 1, (int64_t)5);
  expect_plan_error(&s, RD_E_KEEPDIMS, "keepdims is 7");
  s.keepdims = 0;
  expect_plan_error(&s, RD_E_DIM, "shape[0] is -3");
  s.shape[0] = 3;
  expect_plan_error(&s, RD_E_AXIS_RANGE, "axis 5");

  /* Missing buffers. */
  {
    struct rd_params p;
    struct rd_plan pl;
    struct rd_error err;
    rd_params_init(&p);
    p.op = RD_OP_L2;
    p.dtype = RD_FLOAT32;
    p.rank = 2;
    assert_int_equal(rd_plan_init(&pl, &p, &err), RD_E_INVALID);
    assert_non_null(strstr(err.msg, "shape"));
  }
}

static void test_shape_count(void **state)
{
  int64_t sh[3] = { 2, 3, 4 };
  uint64_t n = 0;
  struct rd_error err;
  (void)state;
  assert_int_equal(rd_shape_count(3, sh, RD_FLOAT64, &n, &err), 0);
  assert_int_equal(n, 24);
  assert_int_equal(rd_shape_count(0, NULL, 0, &n, &err), 0);
  assert_int_equal(n, 1);
  sh[1] = -2;
  assert_int_equal(rd_shape_count(3, sh, 0, &n, &err), RD_E_DIM);
  assert_non_null(strstr(err.msg, "shape[1] is -2"));
  sh[1] = INT64_MAX;
  assert_int_equal(rd_shape_count(3, sh, 0, &n, &err), RD_E_TOO_LARGE);
  sh[0] = 1;
  sh[2] = 1;
  assert_int_equal(rd_shape_count(3, sh, 0, &n, &err), 0);
  assert_int_equal(n, (uint64_t)INT64_MAX);
  assert_int_equal(rd_shape_count(3, sh, RD_FLOAT16, &n, &err), RD_E_TOO_LARGE);
  assert_int_equal(rd_shape_count(RD_MAX_RANK + 1, sh, 0, &n, &err), RD_E_RANK);
}

/* ------------------------------------------------------------------ */
/* Shapes                                                             */
/* ------------------------------------------------------------------ */

static void test_shapes(void **state)
{
  struct spec s;
  struct rd_plan pl;
  (void)state;

  s = spec0(RD_OP_L2, RD_FLOAT32);
  set_shape(&s, 3, (int64_t)3, (int64_t)2, (int64_t)2);
  set_axes(&s, 1, (int64_t)-1);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 3, (int64_t)3, (int64_t)2, (int64_t)1);
  assert_int_equal(pl.in_count, 12);
  assert_int_equal(pl.noop, 0);
  s.keepdims = 0;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 2, (int64_t)3, (int64_t)2);
  set_axes(&s, 2, (int64_t)2, (int64_t)0); /* order is irrelevant */
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 1, (int64_t)2);
  s.keepdims = 1;
  set_axes(&s, 2, (int64_t)-3, (int64_t)-1);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 3, (int64_t)1, (int64_t)2, (int64_t)1);

  /* Omitted axes: reduce all. */
  s.naxes = 0;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 3, (int64_t)1, (int64_t)1, (int64_t)1);
  s.keepdims = 0;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 0);
  s.noop = 0;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 0);
  assert_int_equal(pl.noop, 0);
  /* noop: shape unchanged whatever keepdims. */
  s.noop = 1;
  for (int k = 0; k <= 1; k++) {
    s.keepdims = k;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    check_shape(&pl, 3, (int64_t)3, (int64_t)2, (int64_t)2);
    assert_int_equal(pl.noop, 1);
    assert_int_equal(pl.nparts, 1);
  }
  /* noop with axes: an ordinary reduction. */
  set_axes(&s, 1, (int64_t)1);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  assert_int_equal(pl.noop, 0);
  check_shape(&pl, 3, (int64_t)3, (int64_t)1, (int64_t)2);

  /* Rank 0: rank-0 output for any keepdims and noop. */
  for (int k = 0; k <= 1; k++) {
    s = spec0(RD_OP_SUM_SQUARE, RD_INT64);
    s.keepdims = k;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    check_shape(&pl, 0);
    assert_int_equal(pl.in_count, 1);
    s.noop = 1;
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    check_shape(&pl, 0);
    assert_int_equal(pl.noop, 1);
  }

  /* Zero dims. */
  s = spec0(RD_OP_L2, RD_FLOAT32);
  set_shape(&s, 3, (int64_t)2, (int64_t)0, (int64_t)4);
  set_axes(&s, 1, (int64_t)1);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 3, (int64_t)2, (int64_t)1, (int64_t)4);
  assert_int_equal(pl.in_count, 0);
  assert_int_equal(pl.nparts, 1);
  s.keepdims = 0;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 2, (int64_t)2, (int64_t)4);
  s.keepdims = 1;
  set_axes(&s, 1, (int64_t)0);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 3, (int64_t)1, (int64_t)0, (int64_t)4);
  s.keepdims = 0;
  set_axes(&s, 2, (int64_t)0, (int64_t)2);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 1, (int64_t)0);
  s.naxes = 0;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 0);
  s.noop = 1;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  check_shape(&pl, 3, (int64_t)2, (int64_t)0, (int64_t)4);
}

static void test_canonical_groups(void **state)
{
  struct spec s = spec0(RD_OP_L2, RD_FLOAT32);
  struct rd_plan pl;
  (void)state;
  /* Part counts: a function of the plan; noop and scalars use one part. */
  set_shape(&s, 2, (int64_t)4096, (int64_t)4096); /* 64 MiB */
  s.noop = 1;
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  assert_int_equal(pl.nparts, 1);
  s.noop = RD_UNSET;
  set_axes(&s, 1, (int64_t)1); /* KR: outer kept group split */
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  assert_true(pl.nparts > 1 && pl.nparts <= RD_MAX_PARTS);
  assert_int_equal((4096 + pl.priv.part_len - 1) / pl.priv.part_len, pl.nparts);
  set_axes(&s, 1, (int64_t)0); /* RK: leading reduced group split */
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  assert_true(pl.nparts > 1 && pl.nparts <= RD_MAX_PARTS);
  /* ... but partials stay within 64 MiB: 2^23 outputs x 8 bytes. */
  set_shape(&s, 2, (int64_t)16, (int64_t)1 << 23);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  assert_true(pl.nparts * pl.out_count * 8 <= ((uint64_t)64 << 20));
  s.naxes = 0;
  /* [8192, 8192] over axis 0 (256 MiB): 64 parts where the partial sets are
   * sums, 16 for the others (PARTS_MERGED_REDUCED). */
  for (int op = 1; op <= RD_OP_COUNT; op++) {
    struct spec t = spec0(op, RD_FLOAT32);
    int sums = op == RD_OP_L2 || op == RD_OP_SUM_SQUARE || op == RD_OP_SUM ||
               op == RD_OP_MEAN || op == RD_OP_L1 || op == RD_OP_LOG_SUM;
    set_shape(&t, 2, (int64_t)8192, (int64_t)8192);
    if (op != RD_OP_ARGMAX && op != RD_OP_ARGMIN)
      set_axes(&t, 1, (int64_t)0); /* ArgMax/ArgMin: axis 0 by default */
    assert_int_equal(plan_of(&t, &pl, NULL), 0);
    assert_int_equal(pl.out_count, 8192);
    assert_int_equal(pl.nparts, sums ? 64 : 16);
  }
  /* [2,1,3,4,1,5] axes [1,2,3]: size-1 dims drop, 3*4 merge: K2 R12 K5 */
  set_shape(&s, 6, (int64_t)2, (int64_t)1, (int64_t)3, (int64_t)4, (int64_t)1,
            (int64_t)5);
  set_axes(&s, 3, (int64_t)1, (int64_t)2, (int64_t)3);
  assert_int_equal(plan_of(&s, &pl, NULL), 0);
  assert_int_equal(pl.priv.ngroups, 3);
  assert_int_equal(pl.priv.size[0], 2);
  assert_int_equal(pl.priv.reduced[0], 0);
  assert_int_equal(pl.priv.size[1], 12);
  assert_int_equal(pl.priv.reduced[1], 1);
  assert_int_equal(pl.priv.size[2], 5);
  assert_int_equal(pl.priv.reduced[2], 0);
  assert_int_equal(pl.nparts, 1);
}

/* ------------------------------------------------------------------ */
/* Values                                                             */
/* ------------------------------------------------------------------ */

static void test_onnx_example(void **state)
{
  struct spec s = spec0(RD_OP_L2, RD_FLOAT32);
  struct rd_plan pl;
  struct rd_error err;
  float in[12], *out;
  (void)state;
  for (int i = 0; i < 12; i++)
    in[i] = (float)(i + 1);
  set_shape(&s, 3, (int64_t)3, (int64_t)2, (int64_t)2);
  set_axes(&s, 1, (int64_t)2);
  for (int64_t opset = 1; opset <= 18; opset++) {
    s.opset = opset;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    check_shape(&pl, 3, (int64_t)3, (int64_t)2, (int64_t)1);
    for (int i = 0; i < 6; i++) {
      int a = 2 * i + 1, b = 2 * i + 2;
      float want = (float)sqrt((double)(a * a + b * b));
      assert_int_equal(f32_bits(out[i]), f32_bits(want));
    }
    assert_true(fabsf(out[0] - 2.236068f) < 1e-6f);
    assert_true(fabsf(out[5] - 16.278820f) < 1e-5f);
    free(out);
  }
  /* ReduceSumSquare of the same data, keepdims 0, axes [0,2]. */
  s = spec0(RD_OP_SUM_SQUARE, RD_FLOAT32);
  set_shape(&s, 3, (int64_t)3, (int64_t)2, (int64_t)2);
  set_axes(&s, 2, (int64_t)0, (int64_t)-1);
  s.keepdims = 0;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  check_shape(&pl, 1, (int64_t)2);
  /* j=0: 1,2,5,6,9,10 ; j=1: 3,4,7,8,11,12 */
  assert_true(out[0] == (float)(1 + 4 + 25 + 36 + 81 + 100));
  assert_true(out[1] == (float)(9 + 16 + 49 + 64 + 121 + 144));
  free(out);
}

static void test_float_range(void **state)
{
  struct spec s = spec0(RD_OP_L2, RD_FLOAT32);
  struct rd_plan pl;
  struct rd_error err;
  float f[2], *fo;
  double d[2], *dout;
  (void)state;
  set_shape(&s, 1, (int64_t)2);
  f[0] = f[1] = 1e20f;
  assert_int_equal(run(&s, f, (void **)&fo, &pl, &err), 0);
  /* sqrt(2)*1e20f rounded once: the square 2e40 is exact in double. */
  assert_int_equal(f32_bits(*fo),
                   f32_bits((float)sqrt(2.0 * (double)f[0] * f[0])));
  assert_true(fabsf(*fo - 1.4142135e20f) <= 1e13f);
  assert_false(isinf(*fo));
  free(fo);
  f[0] = f[1] = 1e-25f;
  assert_int_equal(run(&s, f, (void **)&fo, &pl, &err), 0);
  assert_int_equal(f32_bits(*fo),
                   f32_bits((float)sqrt(2.0 * (double)f[0] * f[0])));
  assert_true(fabsf(*fo - 1.4142135e-25f) <= 1e-31f);
  free(fo);

  s.dtype = RD_FLOAT64;
  d[0] = d[1] = 1e200;
  assert_int_equal(run(&s, d, (void **)&dout, &pl, &err), 0);
  /* Correctly rounded sqrt(2)*1e200 (exact: 1.414213562373095005997...e200). */
  assert_int_equal(f64_bits(*dout), f64_bits(1.414213562373095e200));
  free(dout);
  d[0] = d[1] = 1e-200;
  assert_int_equal(run(&s, d, (void **)&dout, &pl, &err), 0);
  /* exact: 1.414213562373095023487...e-200 */
  assert_int_equal(f64_bits(*dout), f64_bits(1.414213562373095e-200));
  free(dout);
  /* Mixed magnitudes: big dominates, tiny ones vanish. */
  {
    double m[4] = { 3e300, 4e300, 1.0, 1e-300 };
    set_shape(&s, 1, (int64_t)4);
    assert_int_equal(run(&s, m, (void **)&dout, &pl, &err), 0);
    assert_true(fabs(*dout - 5e300) <= 5e300 * 0x1p-52);
    free(dout);
    m[0] = 3e-300;
    m[1] = 4e-300;
    m[2] = 0;
    m[3] = 0;
    assert_int_equal(run(&s, m, (void **)&dout, &pl, &err), 0);
    assert_true(fabs(*dout - 5e-300) <= 5e-300 * 0x1p-52);
    free(dout);
    m[2] = 0.5; /* mid and small together */
    m[0] = 3e-200;
    assert_int_equal(run(&s, m, (void **)&dout, &pl, &err), 0);
    assert_true(*dout == 0.5);
    free(dout);
  }
  /* ReduceSumSquare float64 overflows legitimately. */
  s.op = RD_OP_SUM_SQUARE;
  set_shape(&s, 1, (int64_t)2);
  d[0] = d[1] = 1e200;
  assert_int_equal(run(&s, d, (void **)&dout, &pl, &err), 0);
  assert_true(isinf(*dout) && *dout > 0);
  free(dout);
  d[0] = 3e150;
  d[1] = 4e150; /* squares above DBL_MAX/2^... but the sum fits */
  assert_int_equal(run(&s, d, (void **)&dout, &pl, &err), 0);
  assert_true(fabs(*dout - 25e300) <= 25e300 * 0x1p-51);
  free(dout);
  /* float64 ordinary accuracy */
  d[0] = 0.3;
  d[1] = 0.4;
  s.op = RD_OP_L2;
  assert_int_equal(run(&s, d, (void **)&dout, &pl, &err), 0);
  assert_true(fabs(*dout - 0.5) <= 0x1p-53);
  free(dout);
}

static void test_nan_inf(void **state)
{
  static const int dts[] = { RD_FLOAT32, RD_FLOAT64 };
  (void)state;
  for (size_t t = 0; t < 2; t++)
    for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++) {
      /* [2, 20]: row 0 has a NaN and an inf, row 1 a -inf, plain rows */
      struct spec s = spec0(op, dts[t]);
      struct rd_plan pl;
      struct rd_error err;
      double vals[3][20];
      unsigned char in[3 * 20 * 8];
      void *out;
      size_t esz = dts[t] == RD_FLOAT32 ? 4 : 8;
      for (int r = 0; r < 3; r++)
        for (int j = 0; j < 20; j++)
          vals[r][j] = 1.0;
      vals[0][3] = NAN;
      vals[0][17] = INFINITY;
      vals[1][19] = -INFINITY;
      for (int i = 0; i < 60; i++) {
        double v = vals[i / 20][i % 20];
        if (esz == 4) {
          float f = (float)v;
          memcpy(in + i * 4, &f, 4);
        } else {
          memcpy(in + i * 8, &v, 8);
        }
      }
      set_shape(&s, 2, (int64_t)3, (int64_t)20);
      set_axes(&s, 1, (int64_t)1);
      assert_int_equal(run(&s, in, &out, &pl, &err), 0);
      for (int r = 0; r < 3; r++) {
        double v = esz == 4 ? ((float *)out)[r] : ((double *)out)[r];
        if (r == 0)
          assert_true(isnan(v));
        else if (r == 1)
          assert_true(isinf(v) && v > 0);
        else
          assert_true(v == (op == RD_OP_L2 ? sqrt(20.0) : 20.0) ||
                      (esz == 4 && v == (float)sqrt(20.0)));
      }
      free(out);
      /* Column-wise (reduce axis 0): column 3 NaN, 17 inf, 19 inf. */
      set_axes(&s, 1, (int64_t)0);
      assert_int_equal(run(&s, in, &out, &pl, &err), 0);
      for (int j = 0; j < 20; j++) {
        double v = esz == 4 ? ((float *)out)[j] : ((double *)out)[j];
        if (j == 3)
          assert_true(isnan(v));
        else if (j == 17 || j == 19)
          assert_true(isinf(v) && v > 0);
        else
          assert_true(
            v ==
            (op == RD_OP_L2 ? (esz == 4 ? (float)sqrt(3.0) : sqrt(3.0)) : 3.0));
      }
      free(out);
    }
}

static void test_noop_values(void **state)
{
  struct spec s = spec0(RD_OP_L2, RD_FLOAT32);
  struct rd_plan pl;
  struct rd_error err;
  float in[6] = { -3.0f, 1.5f, -0.0f, 1e20f, -1e-25f, 0.1f }, *out;
  double din[4] = { 0.1, -1e200, -1e-310, -0.0 }, *dout;
  (void)state;
  set_shape(&s, 2, (int64_t)2, (int64_t)3);
  s.noop = 1;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  check_shape(&pl, 2, (int64_t)2, (int64_t)3);
  for (int i = 0; i < 6; i++)
    assert_int_equal(f32_bits(out[i]), f32_bits(fabsf(in[i])));
  free(out);
  s.op = RD_OP_SUM_SQUARE;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  for (int i = 0; i < 6; i++)
    assert_int_equal(f32_bits(out[i]),
                     f32_bits((float)((double)in[i] * in[i])));
  free(out);

  s = spec0(RD_OP_L2, RD_FLOAT64);
  set_shape(&s, 1, (int64_t)4);
  s.noop = 1;
  assert_int_equal(run(&s, din, (void **)&dout, &pl, &err), 0);
  for (int i = 0; i < 4; i++)
    assert_int_equal(f64_bits(dout[i]), f64_bits(fabs(din[i])));
  free(dout);

  /* Integers: x^2 and |x| exactly, then the policy. */
  {
    int32_t iin[4] = { -3, 5, -50000, INT32_MIN }, *iout;
    s = spec0(RD_OP_L2, RD_INT32);
    set_shape(&s, 1, (int64_t)4);
    s.noop = 1;
    assert_int_equal(run(&s, iin, (void **)&iout, &pl, &err), RD_E_OVERFLOW);
    assert_string_equal(err.msg,
                        "output[3] = 2147483648 does not fit int32 "
                        "(overflow policy \"error\"; use \"saturate\" or "
                        "\"wrap\")");
    free(iout);
    s.overflow = RD_OVERFLOW_SATURATE;
    assert_int_equal(run(&s, iin, (void **)&iout, &pl, &err), 0);
    assert_int_equal(iout[0], 3);
    assert_int_equal(iout[1], 5);
    assert_int_equal(iout[2], 50000);
    assert_int_equal(iout[3], INT32_MAX);
    free(iout);
    s.overflow = RD_OVERFLOW_WRAP;
    assert_int_equal(run(&s, iin, (void **)&iout, &pl, &err), 0);
    assert_int_equal(iout[3], INT32_MIN);
    free(iout);
    s.op = RD_OP_SUM_SQUARE;
    assert_int_equal(run(&s, iin, (void **)&iout, &pl, &err), 0);
    assert_int_equal(iout[0], 9);
    assert_int_equal(iout[1], 25);
    assert_int_equal(iout[2], (int32_t)(uint32_t)(2500000000u));
    assert_int_equal(iout[3], 0); /* 2^62 mod 2^32 */
    free(iout);
  }
}

static void test_scalar_and_empty(void **state)
{
  struct spec s;
  struct rd_plan pl;
  struct rd_error err;
  (void)state;
  for (int k = 0; k <= 1; k++) {
    float x = -3.0f, *out;
    s = spec0(RD_OP_L2, RD_FLOAT32);
    s.keepdims = k;
    assert_int_equal(run(&s, &x, (void **)&out, &pl, &err), 0);
    assert_true(*out == 3.0f);
    free(out);
    s.op = RD_OP_SUM_SQUARE;
    assert_int_equal(run(&s, &x, (void **)&out, &pl, &err), 0);
    assert_true(*out == 9.0f);
    free(out);
  }
  /* Reduced empty dim: zeros. */
  {
    int64_t *out;
    s = spec0(RD_OP_SUM_SQUARE, RD_INT64);
    set_shape(&s, 3, (int64_t)2, (int64_t)0, (int64_t)4);
    set_axes(&s, 1, (int64_t)1);
    assert_int_equal(run(&s, NULL, (void **)&out, &pl, &err), 0);
    assert_int_equal(pl.out_count, 8);
    for (int i = 0; i < 8; i++)
      assert_int_equal(out[i], 0);
    free(out);
  }
  {
    float *out;
    s = spec0(RD_OP_L2, RD_FLOAT32);
    set_shape(&s, 1, (int64_t)0);
    assert_int_equal(run(&s, NULL, (void **)&out, &pl, &err), 0);
    check_shape(&pl, 1, (int64_t)1);
    assert_true(out[0] == 0.0f && !signbit(out[0]));
    free(out);
    /* Kept empty dim: empty output. */
    set_shape(&s, 3, (int64_t)2, (int64_t)0, (int64_t)4);
    set_axes(&s, 1, (int64_t)0);
    assert_int_equal(run(&s, NULL, (void **)&out, &pl, &err), 0);
    check_shape(&pl, 3, (int64_t)1, (int64_t)0, (int64_t)4);
    free(out);
  }
  /* A dim of size 1 reduced alone: per-element x^2 / |x|. */
  {
    double in[3] = { -2.0, 0.5, -0.0 }, *out;
    s = spec0(RD_OP_L2, RD_FLOAT64);
    set_shape(&s, 2, (int64_t)3, (int64_t)1);
    set_axes(&s, 1, (int64_t)1);
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_true(out[0] == 2.0 && out[1] == 0.5);
    assert_int_equal(f64_bits(out[2]), 0);
    free(out);
  }
}

static void test_half_types(void **state)
{
  struct spec s = spec0(RD_OP_L2, RD_FLOAT16);
  struct rd_plan pl;
  struct rd_error err;
  uint16_t in[2] = { 0x5CB0, 0x5E40 }; /* 300, 400 */
  uint16_t *out, tenth[1000];
  (void)state;
  set_shape(&s, 1, (int64_t)2);
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 0x5FD0); /* 500 */
  free(out);
  s.op = RD_OP_SUM_SQUARE; /* 250000 > 65504 */
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 0x7C00);
  free(out);
  /* 1000 x half(0.1): 9.99511..., rounded once to half: 9.9921875. */
  for (int i = 0; i < 1000; i++)
    tenth[i] = 0x2E66;
  set_shape(&s, 1, (int64_t)1000);
  assert_int_equal(run(&s, tenth, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 0x48FF);
  free(out);

  s = spec0(RD_OP_L2, RD_BFLOAT16);
  s.opset = 13;
  in[0] = 0x4040; /* 3 */
  in[1] = 0x4080; /* 4 */
  set_shape(&s, 1, (int64_t)2);
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 0x40A0); /* 5 */
  free(out);
  s.op = RD_OP_SUM_SQUARE;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 0x41C8); /* 25 */
  free(out);
}

/* Test's own exact integer square root (binary search). */
static u128 t_isqrt(u128 n)
{
  u128 lo = 0, hi = (u128)1 << 64; /* answer < 2^64 for n < 2^128 */
  while (lo + 1 < hi) {
    u128 mid = (lo + hi) / 2;
    if (mid * mid <= n)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Greedy decomposition of n into squares (values < 2^64), padding with 1s. */
static size_t squares_of(u128 n, uint64_t *v, size_t max)
{
  size_t k = 0;
  while (n > 0) {
    u128 r = t_isqrt(n);
    assert_true(k < max);
    v[k++] = (uint64_t)r;
    n -= r * r;
  }
  return k;
}

static void test_integers_exact(void **state)
{
  struct spec s;
  struct rd_plan pl;
  struct rd_error err;
  (void)state;
  {
    int64_t in[2] = { 3037000499, 1 }, *out;
    s = spec0(RD_OP_L2, RD_INT64);
    set_shape(&s, 1, (int64_t)2);
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_int_equal(out[0], 3037000499);
    free(out);
    s.op = RD_OP_SUM_SQUARE;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_int_equal(out[0], INT64_C(9223372030926249002));
    free(out);
    /* 2^53 + 1 survives exactly (a double sum would lose it). */
    in[0] = 94906265; /* 94906265^2 = 9007199136250225 */
    in[1] = 1;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_int_equal(out[0], INT64_C(9007199136250226));
    free(out);
    in[0] = -16777217;
    in[1] = 0;
    s.op = RD_OP_L2;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_int_equal(out[0], 16777217);
    free(out);
  }
  /* isqrt boundaries k^2-1 and k^2 for several k, int64 and uint64. */
  {
    static const uint64_t ks[] = { 2,
                                   3,
                                   46341,
                                   3037000499,
                                   3037000500,
                                   UINT64_C(4294967296),
                                   UINT64_C(94906267),
                                   UINT64_C(1) << 62,
                                   UINT64_MAX };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
      for (int d = 1; d >= 0; d--) {
        u128 k = ks[i], n = k * k - (u128)d;
        uint64_t v[64], *out;
        size_t cnt = squares_of(n, v, 64);
        s = spec0(RD_OP_L2, RD_UINT64);
        set_shape(&s, 1, (int64_t)cnt);
        assert_int_equal(run(&s, v, (void **)&out, &pl, &err), 0);
        assert_true(out[0] == (uint64_t)(k - (u128)d));
        free(out);
        if (k - (u128)d <= INT64_MAX && v[0] <= INT64_MAX) {
          int64_t sv[64], *so;
          for (size_t j = 0; j < cnt; j++)
            sv[j] = (j % 2) ? -(int64_t)v[j] : (int64_t)v[j];
          s.dtype = RD_INT64;
          assert_int_equal(run(&s, sv, (void **)&so, &pl, &err), 0);
          assert_true((u128)so[0] == k - (u128)d);
          free(so);
        }
      }
  }
  /* int32 ReduceL2 truncates: [2,2] -> 2, [2,3] -> 3, [5,5] -> 7. */
  {
    int32_t in[6] = { 2, 2, 2, 3, 5, 5 }, *out;
    s = spec0(RD_OP_L2, RD_INT32);
    set_shape(&s, 2, (int64_t)3, (int64_t)2);
    set_axes(&s, 1, (int64_t)1);
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], 7);
    free(out);
  }
  /* Sums beyond 2^128 (uint64): exact 192-bit. */
  {
    uint64_t in[8], *out;
    for (int i = 0; i < 8; i++)
      in[i] = UINT64_MAX;
    s = spec0(RD_OP_L2, RD_UINT64);
    set_shape(&s, 1, (int64_t)4);
    s.overflow = RD_OVERFLOW_WRAP;
    /* sqrt(4 (2^64-1)^2) = 2^65 - 2, mod 2^64 = 2^64 - 2 */
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_true(out[0] == UINT64_MAX - 1);
    free(out);
    s.overflow = RD_OVERFLOW_ERROR;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), RD_E_OVERFLOW);
    assert_non_null(strstr(err.msg, "output[0] = 36893488147419103230 does "
                                    "not fit uint64"));
    free(out);
    set_shape(&s, 1, (int64_t)2);
    s.op = RD_OP_SUM_SQUARE;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), RD_E_OVERFLOW);
    /* 2 (2^64-1)^2 */
    assert_non_null(strstr(err.msg,
                           "output[0] = "
                           "680564733841876926852962238568698216450 does "
                           "not fit uint64"));
    free(out);
    s.overflow = RD_OVERFLOW_WRAP;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_true(out[0] == 2);
    free(out);
    s.overflow = RD_OVERFLOW_SATURATE;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_true(out[0] == UINT64_MAX);
    free(out);
    /* L2 of 2 x (2^64-1): floor((2^64-1) sqrt 2) = 26087635650665564423. */
    s.op = RD_OP_L2;
    s.overflow = RD_OVERFLOW_WRAP;
    assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
    assert_true(out[0] ==
                (uint64_t)((u128)UINT64_C(2608763565066556442) * 10 + 3));
    free(out);
    /* 192-bit isqrt boundary: 3 (2^64-1)^2 + (2^64-1)^2 - 1 = (2^65-2)^2 - 1 */
    {
      uint64_t v[80];
      size_t cnt = squares_of((u128)UINT64_MAX * UINT64_MAX - 1, v + 3, 77);
      v[0] = v[1] = v[2] = UINT64_MAX;
      set_shape(&s, 1, (int64_t)(cnt + 3));
      assert_int_equal(run(&s, v, (void **)&out, &pl, &err), 0);
      assert_true(out[0] == UINT64_MAX - 2); /* 2^65 - 3 mod 2^64 */
      free(out);
    }
  }
}

static void test_overflow_policies(void **state)
{
  struct spec s = spec0(RD_OP_SUM_SQUARE, RD_INT32);
  struct rd_plan pl;
  struct rd_error err;
  /* rows: [3,4] [40000,40000] [50000,3] [65536,0] */
  int32_t in[8] = { 3, 4, 40000, 40000, 50000, 3, 65536, 0 }, *out;
  (void)state;
  set_shape(&s, 2, (int64_t)4, (int64_t)2);
  set_axes(&s, 1, (int64_t)1);
  s.keepdims = 0;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), RD_E_OVERFLOW);
  assert_int_equal(err.code, RD_E_OVERFLOW);
  assert_string_equal(err.msg,
                      "output[1] = 3200000000 does not fit int32 "
                      "(overflow policy \"error\"; use \"saturate\" or "
                      "\"wrap\")");
  free(out);
  in[2] = in[3] = 0;
  in[4] = 0;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), RD_E_OVERFLOW);
  assert_string_equal(err.msg,
                      "output[3] = 4294967296 does not fit int32 "
                      "(overflow policy \"error\"; use \"saturate\" or "
                      "\"wrap\")");
  free(out);
  in[2] = in[3] = 40000;
  in[4] = 50000;
  s.overflow = RD_OVERFLOW_SATURATE;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 25);
  assert_int_equal(out[1], INT32_MAX);
  assert_int_equal(out[2], INT32_MAX);
  assert_int_equal(out[3], INT32_MAX);
  free(out);
  s.overflow = RD_OVERFLOW_WRAP;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 25);
  assert_int_equal(out[1], (int32_t)(3200000000u - 4294967296u));
  assert_int_equal(out[1], -1094967296);
  assert_int_equal(out[2], -1794967287);
  assert_int_equal(out[3], 0);
  free(out);
  /* ReduceL2 int32 never overflows for these. */
  s.op = RD_OP_L2;
  s.overflow = RD_OVERFLOW_ERROR;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_int_equal(out[0], 5);
  assert_int_equal(out[1], 56568);
  assert_int_equal(out[2], 50000);
  assert_int_equal(out[3], 65536);
  free(out);

  /* int64 */
  {
    int64_t x[2] = { 3037000500, 1 }, *o;
    s = spec0(RD_OP_SUM_SQUARE, RD_INT64);
    set_shape(&s, 1, (int64_t)2);
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), RD_E_OVERFLOW);
    assert_string_equal(err.msg, "output[0] = 9223372037000250001 does not "
                                 "fit int64 (overflow policy \"error\"; use "
                                 "\"saturate\" or \"wrap\")");
    free(o);
    s.overflow = RD_OVERFLOW_SATURATE;
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), 0);
    assert_true(o[0] == INT64_MAX);
    free(o);
    s.overflow = RD_OVERFLOW_WRAP;
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), 0);
    assert_true(o[0] == INT64_C(-9223372036709301615));
    free(o);
  }
  /* uint32 */
  {
    uint32_t x[2] = { 70000, 1 }, *o;
    s = spec0(RD_OP_SUM_SQUARE, RD_UINT32);
    set_shape(&s, 1, (int64_t)2);
    s.overflow = RD_OVERFLOW_WRAP;
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), 0);
    assert_int_equal(o[0], 605032705u);
    free(o);
    s.overflow = RD_OVERFLOW_SATURATE;
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), 0);
    assert_int_equal(o[0], UINT32_MAX);
    free(o);
    s.overflow = RD_OVERFLOW_ERROR;
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), RD_E_OVERFLOW);
    assert_non_null(strstr(err.msg, "output[0] = 4900000001 does not fit "
                                    "uint32"));
    free(o);
    s.op = RD_OP_L2;
    assert_int_equal(run(&s, x, (void **)&o, &pl, &err), 0);
    assert_int_equal(o[0], 70000u);
    free(o);
  }
}

/* ------------------------------------------------------------------ */
/* Streaming and parts: errors                                        */
/* ------------------------------------------------------------------ */

static void test_stream_errors(void **state)
{
  struct spec s = spec0(RD_OP_L2, RD_FLOAT32);
  struct rd_plan pl;
  struct rd_error err;
  struct rd_stream *st;
  struct rd_exec *ex;
  float in[4] = { 3, 4, 0, 0 }, out[1];
  (void)state;
  set_shape(&s, 1, (int64_t)4);
  assert_int_equal(plan_of(&s, &pl, &err), 0);
  assert_int_equal(rd_stream_create(&pl, &st), 0);
  assert_int_equal(rd_stream_feed(st, in, 5, &err), 0);
  assert_int_equal(rd_stream_consumed(st), 5);
  assert_int_equal(rd_stream_finish(st, out, &err), RD_E_STREAM);
  assert_non_null(strstr(err.msg, "16"));
  assert_int_equal(rd_stream_feed(st, (char *)in + 5, 12, &err), RD_E_STREAM);
  assert_int_equal(rd_stream_consumed(st), 5); /* nothing consumed */
  assert_int_equal(rd_stream_feed(st, (char *)in + 5, 11, &err), 0);
  assert_int_equal(rd_stream_feed(st, in, 1, &err), RD_E_STREAM);
  assert_int_equal(rd_stream_finish(st, out, &err), 0);
  assert_true(out[0] == 5.0f);
  rd_stream_destroy(st);
  rd_stream_destroy(NULL);

  assert_int_equal(rd_exec_create(&pl, &ex), 0);
  assert_int_equal(rd_exec_part(ex, pl.nparts, in), RD_E_INVALID);
  assert_int_equal(rd_exec_finish(ex, out, &err), RD_E_INVALID);
  assert_non_null(strstr(err.msg, "part 0"));
  assert_int_equal(rd_exec_part(ex, 0, in), 0);
  assert_int_equal(rd_exec_part(ex, 0, in), RD_E_INVALID); /* only once */
  assert_int_equal(rd_exec_finish(ex, out, &err), 0);
  assert_true(out[0] == 5.0f);
  rd_exec_destroy(ex);
  rd_exec_destroy(NULL);
}

/* ------------------------------------------------------------------ */
/* Determinism: rd_execute == rd_exec_* (any order) == rd_stream_*     */
/* ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void)
{
  /* xorshift64*: deterministic, so a failure reproduces. */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Du;
}

static double rnd_unit(void)
{
  return (double)(rnd() >> 11) * 0x1p-53;
}

static void fill(unsigned char *buf, uint64_t n, int dtype)
{
  for (uint64_t i = 0; i < n; i++) {
    double v = (rnd_unit() * 2 - 1) * 100;
    switch (dtype) {
    case RD_FLOAT32: {
      float f = (float)v;
      memcpy(buf + i * 4, &f, 4);
      break;
    }
    case RD_FLOAT64: {
      /* A few extreme magnitudes exercise every Blue accumulator. */
      uint64_t r = rnd() % 64;
      if (r == 0)
        v *= 1e250;
      else if (r == 1)
        v *= 1e-250;
      memcpy(buf + i * 8, &v, 8);
      break;
    }
    case RD_FLOAT16:
    case RD_BFLOAT16: {
      /* Finite 16-bit patterns: exponent field not all ones. */
      uint16_t h = (uint16_t)rnd();
      if (dtype == RD_FLOAT16 && (h & 0x7C00) == 0x7C00)
        h &= 0xBFFF;
      if (dtype == RD_BFLOAT16 && (h & 0x7F80) == 0x7F80)
        h &= 0xBFFF;
      memcpy(buf + i * 2, &h, 2);
      break;
    }
    case RD_INT32:
    case RD_UINT32: {
      uint32_t u = (uint32_t)rnd();
      memcpy(buf + i * 4, &u, 4);
      break;
    }
    default: {
      uint64_t u = rnd();
      memcpy(buf + i * 8, &u, 8);
      break;
    }
    }
  }
}

static void *run_exec_reverse(const struct rd_plan *pl, const void *in)
{
  struct rd_exec *ex;
  struct rd_error err;
  void *out = malloc(pl->out_bytes + 1);
  assert_non_null(out);
  assert_int_equal(rd_exec_create(pl, &ex), 0);
  for (size_t p = pl->nparts; p-- > 0;)
    assert_int_equal(rd_exec_part(ex, p, in), 0);
  assert_int_equal(rd_exec_finish(ex, out, &err), 0);
  rd_exec_destroy(ex);
  return out;
}

/* chunk 0: random sizes (0 .. 2*avg); otherwise fixed size. */
static void *run_stream(const struct rd_plan *pl, const unsigned char *in,
                        size_t chunk, size_t avg)
{
  struct rd_stream *st;
  struct rd_error err;
  uint64_t pos = 0;
  void *out = malloc(pl->out_bytes + 1);
  assert_non_null(out);
  assert_int_equal(rd_stream_create(pl, &st), 0);
  while (pos < pl->in_bytes) {
    uint64_t n = chunk ? chunk : rnd() % (2 * avg + 1);
    if (n > pl->in_bytes - pos)
      n = pl->in_bytes - pos;
    assert_int_equal(rd_stream_feed(st, in + pos, (size_t)n, &err), 0);
    pos += n;
  }
  assert_int_equal(rd_stream_consumed(st), pl->in_bytes);
  assert_int_equal(rd_stream_finish(st, out, &err), 0);
  rd_stream_destroy(st);
  return out;
}

struct det_case {
  const char *pattern;
  size_t rank;
  int64_t shape[4];
  size_t naxes;
  int64_t axes[4];
};

static void check_deterministic(const struct det_case *c, int dtype, int op,
                                int small_chunks)
{
  struct spec s = spec0(op, dtype);
  struct rd_plan pl;
  struct rd_error err;
  unsigned char *in;
  void *ref, *o;
  s.opset = 18;
  s.overflow = RD_OVERFLOW_WRAP;
  s.rank = c->rank;
  memcpy(s.shape, c->shape, sizeof c->shape);
  s.naxes = c->naxes;
  memcpy(s.axes, c->axes, sizeof c->axes);
  assert_int_equal(plan_of(&s, &pl, &err), 0);
  in = malloc(pl.in_bytes);
  assert_non_null(in);
  fill(in, pl.in_count, dtype);
  ref = malloc(pl.out_bytes + 1);
  assert_non_null(ref);
  assert_int_equal(rd_execute(&pl, in, ref, &err), 0);

  o = run_exec_reverse(&pl, in);
  assert_memory_equal(ref, o, pl.out_bytes);
  free(o);
  if (small_chunks) {
    o = run_stream(&pl, in, 1, 0);
    assert_memory_equal(ref, o, pl.out_bytes);
    free(o);
    o = run_stream(&pl, in, 3, 0);
    assert_memory_equal(ref, o, pl.out_bytes);
    free(o);
  }
  o = run_stream(&pl, in, 0, 37);
  assert_memory_equal(ref, o, pl.out_bytes);
  free(o);
  o = run_stream(&pl, in, 0, 5000);
  assert_memory_equal(ref, o, pl.out_bytes);
  free(o);
  free(ref);
  free(in);
}

static const int all_dtypes[] = { RD_FLOAT32,  RD_FLOAT64, RD_FLOAT16,
                                  RD_BFLOAT16, RD_INT32,   RD_INT64,
                                  RD_UINT32,   RD_UINT64 };

static void test_deterministic_small(void **state)
{
  static const struct det_case cases[] = {
    { "R", 1, { 1001 }, 0, { 0 } },
    { "KR", 2, { 7, 133 }, 1, { 1 } },
    { "RK", 2, { 133, 7 }, 1, { 0 } },
    { "KRK", 3, { 5, 37, 9 }, 1, { 1 } },
    { "RKR", 3, { 6, 5, 41 }, 2, { 0, 2 } },
    { "KRKR", 4, { 3, 7, 4, 19 }, 2, { 1, 3 } },
    { "RKRK", 4, { 3, 7, 4, 19 }, 2, { 0, 2 } },
    { "K (noop-like)", 2, { 1, 50 }, 1, { 0 } },
    { "KR short", 2, { 50, 2 }, 1, { 1 } },
    { "KR short", 2, { 50, 3 }, 1, { 1 } },
    { "KR short", 2, { 40, 5 }, 1, { 1 } },
    { "KR short", 2, { 40, 8 }, 1, { 1 } },
    { "KR short", 2, { 30, 13 }, 1, { 1 } },
    { "KR short", 2, { 30, 16 }, 1, { 1 } },
    { "KR short", 2, { 30, 17 }, 1, { 1 } },
    { "KRKR short", 4, { 3, 5, 4, 6 }, 2, { 1, 3 } },
    { "RK short", 2, { 50, 3 }, 1, { 0 } },
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t t = 0; t < sizeof all_dtypes / sizeof all_dtypes[0]; t++)
      for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++)
        check_deterministic(&cases[i], all_dtypes[t], op, 1);
}

/* Large enough that plans split into several parts. */
static void test_deterministic_parts(void **state)
{
  static const struct det_case cases[] = {
    { "R", 1, { (int64_t)5 << 20 }, 0, { 0 } },
    { "KR", 2, { 600, 4099 }, 1, { 1 } },
    { "RK", 2, { 4099, 600 }, 1, { 0 } },
    { "KRK", 3, { 70, 300, 130 }, 1, { 1 } },
    { "RKR", 3, { 300, 3, 5000 }, 2, { 0, 2 } },
    { "KRKR", 4, { 65, 200, 3, 50 }, 2, { 1, 3 } },
  };
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t t = 0; t < sizeof all_dtypes / sizeof all_dtypes[0]; t++) {
      struct spec s = spec0(RD_OP_L2, all_dtypes[t]);
      struct rd_plan pl;
      s.rank = cases[i].rank;
      memcpy(s.shape, cases[i].shape, sizeof cases[i].shape);
      s.naxes = cases[i].naxes;
      memcpy(s.axes, cases[i].axes, sizeof cases[i].axes);
      assert_int_equal(plan_of(&s, &pl, NULL), 0);
      if (pl.in_bytes >= ((uint64_t)8 << 20))
        assert_true(pl.nparts > 1);
      check_deterministic(&cases[i], all_dtypes[t], RD_OP_L2, 0);
    }
}

/* Multi-part results are right, not only consistent: exact integer sums
 * and a long double reference for float32. */
static void test_parts_values(void **state)
{
  struct spec s = spec0(RD_OP_SUM_SQUARE, RD_INT32);
  struct rd_plan pl;
  struct rd_error err;
  const int64_t rows = 3 << 20, cols = 3;
  int32_t *in = malloc((size_t)(rows * cols) * 4);
  int64_t *out;
  u128 want[3] = { 0, 0, 0 };
  (void)state;
  assert_non_null(in);
  for (int64_t i = 0; i < rows * cols; i++) {
    in[i] = (int32_t)(rnd() % 2001) - 1000;
    want[i % 3] += (u128)((int64_t)in[i] * in[i]);
  }
  /* RK with int32 -> values fit int32? 3M * 1e6 = 3e12: use int64 out via
   * wrap and compare modulo 2^32. */
  set_shape(&s, 2, rows, cols);
  set_axes(&s, 1, (int64_t)0);
  s.overflow = RD_OVERFLOW_WRAP;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  assert_true(pl.nparts > 1);
  for (int j = 0; j < 3; j++)
    assert_int_equal(((uint32_t *)out)[j], (uint32_t)want[j]);
  free(out);
  free(in);

  {
    const int64_t n = 3 << 20;
    float *f = malloc((size_t)n * 4), *fo;
    long double acc = 0;
    s = spec0(RD_OP_L2, RD_FLOAT32);
    assert_non_null(f);
    for (int64_t i = 0; i < n; i++) {
      f[i] = (float)(rnd_unit() * 20 - 10);
      acc += (long double)f[i] * f[i];
    }
    set_shape(&s, 1, n);
    assert_int_equal(run(&s, f, (void **)&fo, &pl, &err), 0);
    assert_true(pl.nparts > 1);
    assert_true(fabsl((long double)fo[0] - sqrtl(acc)) <=
                sqrtl(acc) * 0x1p-23L);
    free(fo);
    free(f);
  }
}

/* The documented summation order, made visible.  4097^2 = 16785409 lies
 * exactly halfway between the float32 values 16785408 and 16785410 (ties go
 * to 16785408, the even one).  A term t^2 = 2^-40 vanishes when added to it
 * in double (half an ulp there is 2^-29), but 2^14 such terms summed on
 * their own first are 2^-26 and push the sum above the midpoint.  So the
 * float32 result tells whether tiny terms met the big one one by one. */
static float order_probe(const struct spec *s, const float *in,
                         struct rd_plan *pl)
{
  struct rd_error err;
  float *out, v, *o2;
  assert_int_equal(run(s, in, (void **)&out, pl, &err), 0);
  v = out[0];
  o2 = run_exec_reverse(pl, in);
  assert_int_equal(f32_bits(o2[0]), f32_bits(v));
  free(o2);
  o2 = run_stream(pl, (const unsigned char *)in, 0, 4000);
  assert_int_equal(f32_bits(o2[0]), f32_bits(v));
  free(o2);
  free(out);
  return v;
}

static void test_summation_order(void **state)
{
  const float big = 4097.0f, tiny = 0x1p-20f;
  const float down = 16785408.0f, up = 16785410.0f;
  struct spec s = spec0(RD_OP_SUM_SQUARE, RD_FLOAT32);
  struct rd_plan pl;
  float *in;
  (void)state;
  assert_true((double)big * big == 16785409.0);
  assert_true((float)16785409.0 == down);

  /* RK: column accumulators add rows in order: tiny terms meet the big one
   * one at a time and vanish. */
  in = calloc(((size_t)1 << 14) + 1, 3 * sizeof *in);
  assert_non_null(in);
  in[0] = big;
  for (size_t i = 1; i <= (size_t)1 << 14; i++)
    in[3 * i] = tiny;
  set_shape(&s, 2, ((int64_t)1 << 14) + 1, (int64_t)3);
  set_axes(&s, 1, (int64_t)0);
  assert_true(order_probe(&s, in, &pl) == down);
  free(in);

  /* R (one part): lane j % 16.  Tiny terms in lanes 1..15 are summed apart
   * and survive; the same count in lane 0 (with the big one) vanishes. */
  in = calloc((size_t)1 << 16, sizeof *in);
  assert_non_null(in);
  in[0] = big;
  for (size_t i = 16; i < (size_t)1 << 16; i += 16)
    in[i] = tiny; /* 4095 terms in lane 0 */
  set_shape(&s, 1, (int64_t)1 << 16);
  s.naxes = 0;
  assert_true(order_probe(&s, in, &pl) == down);
  assert_int_equal(pl.nparts, 1);
  for (size_t i = 16; i < (size_t)1 << 16; i += 16) {
    in[i] = 0;
    in[i + 5] = tiny; /* 4095 terms in lane 5 */
  }
  assert_true(order_probe(&s, in, &pl) == up);
  free(in);

  /* KR with rows of 8: lanes 0..7 combine as ((0+4)+(2+6))+((1+5)+(3+7)).
   * With t^2 = 2^-30, lanes 4..7 reach 2^-28 (one ulp of the big square)
   * before they meet it; added one by one, each t^2 would vanish. */
  in = calloc(3 * 8, sizeof *in);
  assert_non_null(in);
  for (size_t r = 0; r < 3; r++) {
    in[8 * r] = big;
    for (size_t j = 1; j < 8; j++)
      in[8 * r + j] = 0x1p-15f;
  }
  set_shape(&s, 2, (int64_t)3, (int64_t)8);
  set_axes(&s, 1, (int64_t)1);
  assert_true(order_probe(&s, in, &pl) == up);
  free(in);
  s.naxes = 0;

  /* R over several parts: each part's segment starts at lane 0 with its own
   * partial, so lane-0 terms of later parts are summed apart and survive. */
  {
    const size_t n = (size_t)5 << 20;
    in = calloc(n, sizeof *in);
    assert_non_null(in);
    in[0] = big;
    for (size_t i = 16; i < n; i += 16)
      in[i] = tiny;
    set_shape(&s, 1, (int64_t)n);
    assert_int_equal(plan_of(&s, &pl, NULL), 0);
    assert_true(pl.nparts > 1);
    /* Every part start is a multiple of 16, so all tiny terms are lane 0. */
    assert_true(pl.priv.part_len % 16 == 0);
    assert_true(order_probe(&s, in, &pl) == up);
    free(in);
  }
}

/* Every float16 pattern through the elementwise path: x^2 rounded once and
 * |x|, against the f16 module's own conversions. */
static void test_f16_all_patterns(void **state)
{
  struct spec s = spec0(RD_OP_SUM_SQUARE, RD_FLOAT16);
  struct rd_plan pl;
  struct rd_error err;
  uint16_t *in = malloc(65536 * sizeof *in), *out;
  (void)state;
  assert_non_null(in);
  for (uint32_t i = 0; i < 65536; i++)
    in[i] = (uint16_t)i;
  set_shape(&s, 1, (int64_t)65536);
  s.noop = 1;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  for (uint32_t i = 0; i < 65536; i++) {
    double v = rd_f16_to_f64((uint16_t)i);
    if (isnan(v))
      assert_true(isnan(rd_f16_to_f64(out[i])));
    else
      assert_int_equal(out[i], rd_f64_to_f16(v * v));
  }
  free(out);
  s.op = RD_OP_L2;
  assert_int_equal(run(&s, in, (void **)&out, &pl, &err), 0);
  for (uint32_t i = 0; i < 65536; i++) {
    if (isnan(rd_f16_to_f64((uint16_t)i)))
      assert_true(isnan(rd_f16_to_f64(out[i])));
    else
      assert_int_equal(out[i], i & 0x7fff);
  }
  free(out);
  free(in);
}

/* ------------------------------------------------------------------ */
/* The operator table: versions, dtype lists, attributes              */
/* ------------------------------------------------------------------ */

/* The version lists of the issue (onnx-reduce-family.md section 1.1). */
static void test_op_versions(void **state)
{
  static const struct {
    int op;
    size_t n;
    int v[6];
    int axes_input, select_last, is_arg;
  } want[] = {
    { RD_OP_L2, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_SUM_SQUARE, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_SUM, 3, { 1, 11, 13 }, 13, 0, 0 },
    { RD_OP_MEAN, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_MAX, 6, { 1, 11, 12, 13, 18, 20 }, 18, 0, 0 },
    { RD_OP_MIN, 6, { 1, 11, 12, 13, 18, 20 }, 18, 0, 0 },
    { RD_OP_PROD, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_L1, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_LOG_SUM, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_LOG_SUM_EXP, 4, { 1, 11, 13, 18 }, 18, 0, 0 },
    { RD_OP_ARGMAX, 4, { 1, 11, 12, 13 }, 0, 12, 1 },
    { RD_OP_ARGMIN, 4, { 1, 11, 12, 13 }, 0, 12, 1 },
  };
  (void)state;
  assert_int_equal(sizeof want / sizeof want[0], RD_OP_COUNT);
  for (size_t i = 0; i < RD_OP_COUNT; i++) {
    const struct rd_op_info *oi = rd_op_info(want[i].op);
    assert_non_null(oi);
    assert_int_equal(oi->nversions, want[i].n);
    for (size_t k = 0; k < want[i].n; k++)
      assert_int_equal(oi->versions[k], want[i].v[k]);
    assert_int_equal(oi->axes_input_version, want[i].axes_input);
    assert_int_equal(oi->select_last_version, want[i].select_last);
    assert_int_equal(oi->is_arg, want[i].is_arg);
    /* newest version <= opset, for opsets 1..40 and beyond */
    for (int64_t o = 1; o <= 40; o++) {
      int w = 1;
      for (size_t k = 0; k < want[i].n; k++)
        if (want[i].v[k] <= o)
          w = want[i].v[k];
      assert_int_equal(rd_op_version(want[i].op, o), w);
    }
    assert_int_equal(rd_op_version(want[i].op, INT64_MAX),
                     want[i].v[want[i].n - 1]);
    assert_int_equal(rd_op_version(want[i].op, 0), RD_E_OPSET);
    assert_int_equal(rd_op_version(want[i].op, -5), RD_E_OPSET);
  }
  /* the issue's examples */
  assert_int_equal(rd_op_version(RD_OP_SUM, 12), 11);
  assert_int_equal(rd_op_version(RD_OP_SUM, 20), 13);
  assert_int_equal(rd_op_version(RD_OP_MAX, 12), 12);
  assert_int_equal(rd_op_version(RD_OP_MAX, 20), 20);
  assert_int_equal(rd_op_version(RD_OP_MEAN, 17), 13);
  assert_int_equal(rd_op_version(RD_OP_ARGMIN, 19), 13);
  assert_int_equal(rd_op_version(0, 18), RD_E_OP);
  assert_int_equal(rd_op_version(RD_OP_COUNT + 1, 18), RD_E_OP);
}

/* The exact lists of section 2, spelled out per operator and version. */
static void test_op_dtype_lists(void **state)
{
  static const char *const A = "uint32 uint64 int32 int64 float16 float32 "
                               "float64";
  static const char *const B = "uint32 uint64 int32 int64 float16 float32 "
                               "float64 bfloat16";
  static const char *const A8 = "uint32 uint64 int32 int64 float16 float32 "
                                "float64 uint8 int8";
  static const char *const B8 = "uint32 uint64 int32 int64 float16 float32 "
                                "float64 bfloat16 uint8 int8";
  static const char *const B8b = "uint32 uint64 int32 int64 float16 float32 "
                                 "float64 bfloat16 uint8 int8 bool";
  static const char *const C = "uint8 uint16 uint32 uint64 int8 int16 int32 "
                               "int64 float16 float32 float64";
  static const char *const D = "uint8 uint16 uint32 uint64 int8 int16 int32 "
                               "int64 float16 float32 float64 bfloat16";
  static const struct {
    int op, version;
    const char *const *list;
  } rows[] = {
    { RD_OP_SUM, 1, &A },          { RD_OP_SUM, 11, &A },
    { RD_OP_SUM, 13, &B },         { RD_OP_MEAN, 1, &A },
    { RD_OP_MEAN, 11, &A },        { RD_OP_MEAN, 13, &B },
    { RD_OP_MEAN, 18, &B },        { RD_OP_PROD, 1, &A },
    { RD_OP_PROD, 11, &A },        { RD_OP_PROD, 13, &B },
    { RD_OP_PROD, 18, &B },        { RD_OP_L1, 1, &A },
    { RD_OP_L1, 11, &A },          { RD_OP_L1, 13, &B },
    { RD_OP_L1, 18, &B },          { RD_OP_LOG_SUM, 1, &A },
    { RD_OP_LOG_SUM, 11, &A },     { RD_OP_LOG_SUM, 13, &B },
    { RD_OP_LOG_SUM, 18, &B },     { RD_OP_LOG_SUM_EXP, 1, &A },
    { RD_OP_LOG_SUM_EXP, 11, &A }, { RD_OP_LOG_SUM_EXP, 13, &B },
    { RD_OP_LOG_SUM_EXP, 18, &B }, { RD_OP_L2, 1, &A },
    { RD_OP_L2, 11, &A },          { RD_OP_L2, 13, &B },
    { RD_OP_L2, 18, &B },          { RD_OP_SUM_SQUARE, 1, &A },
    { RD_OP_SUM_SQUARE, 11, &A },  { RD_OP_SUM_SQUARE, 13, &B },
    { RD_OP_SUM_SQUARE, 18, &B },  { RD_OP_MAX, 1, &A },
    { RD_OP_MAX, 11, &A },         { RD_OP_MAX, 12, &A8 },
    { RD_OP_MAX, 13, &B8 },        { RD_OP_MAX, 18, &B8 },
    { RD_OP_MAX, 20, &B8b },       { RD_OP_MIN, 1, &A },
    { RD_OP_MIN, 11, &A },         { RD_OP_MIN, 12, &A8 },
    { RD_OP_MIN, 13, &B8 },        { RD_OP_MIN, 18, &B8 },
    { RD_OP_MIN, 20, &B8b },       { RD_OP_ARGMAX, 1, &C },
    { RD_OP_ARGMAX, 11, &C },      { RD_OP_ARGMAX, 12, &C },
    { RD_OP_ARGMAX, 13, &D },      { RD_OP_ARGMIN, 1, &C },
    { RD_OP_ARGMIN, 11, &C },      { RD_OP_ARGMIN, 12, &C },
    { RD_OP_ARGMIN, 13, &D },
  };
  size_t nrows = sizeof rows / sizeof rows[0], total = 0;
  (void)state;
  for (size_t i = 0; i < nrows; i++) {
    for (size_t d = 0; d < RD_NDTYPES; d++) {
      int dt = rd_dtypes[d];
      char word[24];
      const char *l = *rows[i].list, *hit;
      int in;
      snprintf(word, sizeof word, "%s", rd_dtype_name(dt));
      /* whole-word membership */
      in = 0;
      for (hit = strstr(l, word); hit; hit = strstr(hit + 1, word))
        if ((hit == l || hit[-1] == ' ') &&
            (hit[strlen(word)] == ' ' || hit[strlen(word)] == '\0'))
          in = 1;
      total += (size_t)in;
      assert_int_equal(rd_dtype_in_version(rows[i].op, dt, rows[i].version),
                       in);
      {
        struct rd_params p;
        struct rd_plan pl;
        struct rd_error err;
        int64_t shape[1] = { 3 };
        rd_params_init(&p);
        p.op = rows[i].op;
        p.dtype = dt;
        p.opset = rows[i].version;
        p.rank = 1;
        p.shape = shape;
        if (in) {
          assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
          assert_int_equal(pl.version, rows[i].version);
          assert_int_equal(pl.out_dtype,
                           rd_op_info(p.op)->is_arg ? RD_INT64 : dt);
          assert_int_equal(rd_op_out_dtype(p.op, dt), pl.out_dtype);
          assert_int_equal(pl.out_elem_size, rd_dtype_size(pl.out_dtype));
          assert_int_equal(pl.out_bytes, pl.out_count * pl.out_elem_size);
        } else {
          char v[16];
          assert_int_equal(rd_plan_init(&pl, &p, &err), RD_E_DTYPE_VERSION);
          assert_non_null(strstr(err.msg, rd_op_name(p.op)));
          assert_non_null(strstr(err.msg, rd_dtype_name(dt)));
          snprintf(v, sizeof v, "version %d", rows[i].version);
          assert_non_null(strstr(err.msg, v));
        }
      }
    }
    /* versions that do not exist and unknown dtypes are never allowed */
    assert_int_equal(rd_dtype_in_version(rows[i].op, RD_FLOAT32, 2), 0);
    assert_int_equal(rd_dtype_in_version(rows[i].op, 8, rows[i].version), 0);
    assert_int_equal(rd_dtype_in_version(rows[i].op, 0, rows[i].version), 0);
  }
  assert_int_equal(rd_dtype_in_version(RD_OP_SUM, RD_FLOAT32, 18), 0);
  assert_int_equal(rd_dtype_in_version(0, RD_FLOAT32, 1), 0);
  assert_int_equal(rd_dtype_in_version(RD_OP_ARGMAX, RD_BOOL, 13), 0);
  /* every op has all its versions in the table */
  {
    size_t nv = 0;
    for (int op = 1; op <= RD_OP_COUNT; op++)
      nv += rd_op_info(op)->nversions;
    assert_int_equal(nv, nrows);
  }
  assert_true(total > 400);
}

static int plan_p(struct rd_params *p, struct rd_plan *pl, struct rd_error *err,
                  int code, const char *sub)
{
  int rc = rd_plan_init(pl, p, err);
  if (rc != code || (sub && !strstr(err->msg, sub)))
    print_error("rc %d (want %d), msg \"%s\" (want \"%s\")\n", rc, code,
                err->msg, sub ? sub : "");
  assert_int_equal(rc, code);
  if (sub)
    assert_non_null(strstr(err->msg, sub));
  return rc;
}

static void test_op_attributes(void **state)
{
  struct rd_params p;
  struct rd_plan pl;
  struct rd_error err;
  int64_t shape[3] = { 2, 3, 4 }, axes[1] = { 0 };
  (void)state;
#define RESET(o, os)                                                           \
  do {                                                                         \
    rd_params_init(&p);                                                        \
    p.op = (o);                                                                \
    p.opset = (os);                                                            \
    p.dtype = RD_FLOAT32;                                                      \
    p.rank = 3;                                                                \
    p.shape = shape;                                                           \
  } while (0)
  /* axis and select_last_index only for ArgMax/ArgMin */
  for (int op = 1; op <= RD_OP_COUNT; op++) {
    if (rd_op_info(op)->is_arg)
      continue;
    RESET(op, 18);
    p.axis = 1;
    plan_p(&p, &pl, &err, RD_E_ATTRIBUTE, "axis is 1");
    RESET(op, 18);
    p.select_last_index = 0;
    plan_p(&p, &pl, &err, RD_E_ATTRIBUTE, "select_last_index");
  }
  for (int op = RD_OP_ARGMAX; op <= RD_OP_ARGMIN; op++) {
    RESET(op, 13);
    p.axes = axes;
    p.naxes = 1;
    plan_p(&p, &pl, &err, RD_E_ATTRIBUTE, "axes");
    RESET(op, 13);
    p.noop_with_empty_axes = 0;
    plan_p(&p, &pl, &err, RD_E_ATTRIBUTE, "noop_with_empty_axes");
    RESET(op, 11);
    p.select_last_index = 1;
    plan_p(&p, &pl, &err, RD_E_SELECT_LAST_VERSION, "version 12");
    RESET(op, 12);
    p.select_last_index = 2;
    plan_p(&p, &pl, &err, RD_E_SELECT_LAST, "select_last_index is 2");
    RESET(op, 12);
    p.select_last_index = -1;
    plan_p(&p, &pl, &err, RD_E_SELECT_LAST, "must be 0 or 1");
    RESET(op, 13);
    p.select_last_index = 1;
    p.axis = -1;
    plan_p(&p, &pl, &err, 0, NULL);
    assert_int_equal(pl.axis, 2);
    assert_int_equal(pl.select_last_index, 1);
    assert_int_equal(pl.out_rank, 3);
    assert_int_equal(pl.out_shape[2], 1);
    assert_int_equal(pl.out_count, 6);
    assert_int_equal(pl.out_bytes, 48);
    RESET(op, 13);
    p.keepdims = 0;
    plan_p(&p, &pl, &err, 0, NULL); /* default axis 0 */
    assert_int_equal(pl.axis, 0);
    assert_int_equal(pl.select_last_index, 0);
    assert_int_equal(pl.out_rank, 2);
    assert_int_equal(pl.out_shape[0], 3);
    assert_int_equal(pl.out_shape[1], 4);
    RESET(op, 13);
    p.axis = 3;
    plan_p(&p, &pl, &err, RD_E_AXIS_RANGE, "axis 3 is out of range [-3, 2]");
    RESET(op, 13);
    p.axis = -4;
    plan_p(&p, &pl, &err, RD_E_AXIS_RANGE, "axis -4");
    RESET(op, 13);
    p.rank = 0;
    plan_p(&p, &pl, &err, RD_E_AXIS_RANGE, "rank 0");
    RESET(op, 13);
    p.keepdims = 2;
    plan_p(&p, &pl, &err, RD_E_KEEPDIMS, "keepdims is 2");
  }
  /* noop_with_empty_axes only from the op's axes-input version */
  RESET(RD_OP_SUM, 12);
  p.noop_with_empty_axes = 1;
  plan_p(&p, &pl, &err, RD_E_NOOP_VERSION, "needs version 13");
  RESET(RD_OP_SUM, 13);
  p.noop_with_empty_axes = 1;
  plan_p(&p, &pl, &err, 0, NULL);
  assert_int_equal(pl.noop, 1);
  for (int op = RD_OP_MEAN; op <= RD_OP_LOG_SUM_EXP; op++) {
    RESET(op, 17);
    p.noop_with_empty_axes = 0;
    plan_p(&p, &pl, &err, RD_E_NOOP_VERSION, "needs version 18");
    RESET(op, 18);
    p.noop_with_empty_axes = 3;
    plan_p(&p, &pl, &err, RD_E_NOOP, "noop_with_empty_axes is 3");
    RESET(op, 18);
    p.noop_with_empty_axes = 1;
    plan_p(&p, &pl, &err, 0, NULL);
    assert_int_equal(pl.noop, 1);
    assert_int_equal(pl.out_count, 24);
    /* duplicate axes refused */
    {
      int64_t dup[2] = { 1, -2 };
      RESET(op, 18);
      p.axes = dup;
      p.naxes = 2;
      plan_p(&p, &pl, &err, RD_E_AXIS_DUP, "both name axis 1");
    }
  }
  /* rank 0: a rank-0 output for every reduce op */
  for (int op = 1; op <= RD_OP_COUNT; op++) {
    if (rd_op_info(op)->is_arg)
      continue;
    for (int keep = 0; keep <= 1; keep++) {
      RESET(op, 18);
      p.rank = 0;
      p.keepdims = keep;
      plan_p(&p, &pl, &err, 0, NULL);
      assert_int_equal(pl.out_rank, 0);
      assert_int_equal(pl.out_count, 1);
      assert_int_equal(pl.in_count, 1);
    }
  }
#undef RESET
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_version_mapping),
    cmocka_unit_test(test_names),
    cmocka_unit_test(test_dtype_version_matrix),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_shape_count),
    cmocka_unit_test(test_shapes),
    cmocka_unit_test(test_canonical_groups),
    cmocka_unit_test(test_onnx_example),
    cmocka_unit_test(test_float_range),
    cmocka_unit_test(test_nan_inf),
    cmocka_unit_test(test_noop_values),
    cmocka_unit_test(test_scalar_and_empty),
    cmocka_unit_test(test_half_types),
    cmocka_unit_test(test_integers_exact),
    cmocka_unit_test(test_overflow_policies),
    cmocka_unit_test(test_stream_errors),
    cmocka_unit_test(test_deterministic_small),
    cmocka_unit_test(test_deterministic_parts),
    cmocka_unit_test(test_parts_values),
    cmocka_unit_test(test_summation_order),
    cmocka_unit_test(test_f16_all_patterns),
    cmocka_unit_test(test_op_versions),
    cmocka_unit_test(test_op_dtype_lists),
    cmocka_unit_test(test_op_attributes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
