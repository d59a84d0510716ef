/* test_exec_out.c - rd_exec_create_out() gives the bits of rd_exec_create().
 *
 * Every dtype, ReduceL2 and ReduceSumSquare (whose [kept, reduced] plans
 * write outputs in place), the Sum family, ReduceMax and ArgMin, over
 * shapes with one part, several parts, an outer reduced group, a middle
 * reduced group (each part writes its own outputs; float classes eight at
 * a time on the AVX-512 path) and empty inputs: the parts run in
 * reverse order into the caller's buffer, which must then hold the same
 * bytes as rd_exec_create() + rd_exec_finish() into another buffer.  Errors:
 * finish with another buffer (RD_E_INVALID, nothing written), a NULL
 * buffer, an overflow and a bad bool element (same code and message as
 * rd_exec_create()), and the buffer freed before rd_exec_destroy().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reduce.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1dull;
}

/* Small values: integer sums of squares stay in range (no overflow). */
static void fill(int dtype, unsigned char *p, uint64_t n)
{
  size_t esz = rd_dtype_size(dtype);
  for (uint64_t i = 0; i < n; i++, p += esz) {
    uint64_t r = next();
    switch (dtype) {
    case RD_FLOAT32: {
      float f = (float)((double)(int64_t)(r >> 11) * 0x1p-40);
      memcpy(p, &f, 4);
      break;
    }
    case RD_FLOAT64: {
      double d = (double)(int64_t)r * 0x1p-50;
      memcpy(p, &d, 8);
      break;
    }
    case RD_FLOAT16: {
      uint16_t h = (uint16_t)(r & 0x7bff); /* finite halves */
      memcpy(p, &h, 2);
      break;
    }
    case RD_BFLOAT16: {
      uint16_t h = (uint16_t)(0x3f00 + (r & 0xff) + ((r >> 8) & 0x8000));
      memcpy(p, &h, 2);
      break;
    }
    case RD_BOOL: *p = (unsigned char)(r & 1); break;
    default: {
      /* 0..15 or -8..7 in every integer width */
      uint64_t v = (dtype == RD_UINT8 || dtype == RD_UINT16 ||
                    dtype == RD_UINT32 || dtype == RD_UINT64)
                     ? (r & 15)
                     : (uint64_t)((int64_t)(r & 15) - 8);
      memcpy(p, &v, esz); /* little-endian: the low bytes */
      break;
    }
    }
  }
}

struct shape {
  size_t rank;
  int64_t dims[4];
  size_t naxes;
  int64_t axes[4];
};

static const struct shape shapes[] = {
  { 2, { 37, 5 }, 1, { 1 } },       /* direct, one part */
  { 2, { 4099, 131 }, 1, { 1 } },   /* direct, several parts */
  { 2, { 70000, 3 }, 1, { 1 } },    /* direct, short rows, several parts */
  { 2, { 600, 2500 }, 1, { 0 } },   /* outer reduced */
  { 3, { 3, 4, 5 }, 2, { 0, 2 } },  /* not direct */
  { 3, { 300, 50, 40 }, 1, { 1 } }, /* middle reduced: parts write outputs */
  { 3, { 2, 3, 4 }, 1, { 1 } },     /* middle reduced, one part */
  { 3, { 1001, 9, 13 }, 1, { 1 } }, /* middle reduced, 13 outputs a row */
  { 3, { 2, 0, 3 }, 1, { 1 } },     /* middle reduced, empty: six outputs */
  { 2, { 9, 7 }, 0, { 0 } },        /* everything */
  { 2, { 0, 3 }, 1, { 1 } },        /* empty input, empty output */
  { 2, { 4, 0 }, 1, { 1 } },        /* empty input, four outputs */
};

static int plan_of(struct rd_plan *pl, int op, int dtype, const struct shape *s,
                   int overflow)
{
  struct rd_params p;
  rd_params_init(&p);
  p.op = op;
  p.dtype = dtype;
  p.rank = s->rank;
  p.shape = s->dims;
  p.naxes = s->naxes;
  p.axes = s->axes;
  if (op == RD_OP_ARGMAX || op == RD_OP_ARGMIN) { /* one axis, no axes */
    p.naxes = 0;
    p.axes = NULL;
    p.axis = s->naxes > 0 ? s->axes[s->naxes - 1] : 0;
  }
  p.overflow = overflow;
  return rd_plan_init(pl, &p, NULL);
}

/* The input, reference and result buffers of pl, each `extra` bytes
 * longer (guard bytes), or the test fails. */
static void bufs(const struct rd_plan *pl, size_t extra, unsigned char **in,
                 unsigned char **ref, unsigned char **got)
{
  *in = malloc(pl->in_bytes + extra);
  *ref = malloc(pl->out_bytes + extra);
  *got = malloc(pl->out_bytes + extra);
  assert_non_null(*in);
  assert_non_null(*ref);
  assert_non_null(*got);
}

/* Runs pl through rd_exec_create (into ref) and rd_exec_create_out (into
 * got); returns both codes and errors. */
static void run_both(const struct rd_plan *pl, const void *in, void *ref,
                     void *got, int *rc_ref, int *rc_got, struct rd_error *e1,
                     struct rd_error *e2)
{
  struct rd_exec *ex;
  assert_int_equal(rd_exec_create(pl, &ex), 0);
  for (size_t q = pl->nparts; q-- > 0;)
    assert_int_equal(rd_exec_part(ex, q, in), 0);
  *rc_ref = rd_exec_finish(ex, ref, e1);
  rd_exec_destroy(ex);

  assert_int_equal(rd_exec_create_out(pl, got, &ex), 0);
  for (size_t q = pl->nparts; q-- > 0;)
    assert_int_equal(rd_exec_part(ex, q, in), 0);
  *rc_got = rd_exec_finish(ex, got, e2);
  rd_exec_destroy(ex);
}

static void test_same_bits(void **state)
{
  static const int ops[] = { RD_OP_L2,         RD_OP_SUM_SQUARE, RD_OP_SUM,
                             RD_OP_MEAN,       RD_OP_L1,         RD_OP_LOG_SUM,
                             RD_OP_MAX,        RD_OP_ARGMIN,     RD_OP_PROD,
                             RD_OP_LOG_SUM_EXP };
  size_t checked = 0, multi = 0, errors = 0;
  (void)state;
  for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
    for (size_t di = 0; di < RD_NDTYPES; di++)
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        struct rd_plan pl;
        struct rd_error e1, e2;
        int rc1, rc2, dt = rd_dtypes[di];
        if (plan_of(&pl, ops[oi], dt, &shapes[si], RD_OVERFLOW_ERROR) != 0)
          continue; /* dtype not in the op's version */
        unsigned char *in, *ref, *got;
        bufs(&pl, 1, &in, &ref, &got);
        fill(dt, in, pl.in_count);
        memset(ref, 0xa5, pl.out_bytes + 1);
        memset(got, 0x5a, pl.out_bytes + 1);
        run_both(&pl, in, ref, got, &rc1, &rc2, &e1, &e2);
        /* undefined results (integer LogSum of a sum <= 0, the Mean,
         * Max or ArgMin of an empty set) and integer Prod overflow: the
         * same error either way */
        if (rc2 != rc1)
          fail_msg("%s %s shape %zu: codes %d and %d", rd_op_name(ops[oi]),
                   rd_dtype_name(dt), si, rc1, rc2);
        if (rc1 != 0) {
          assert_true(rc1 == RD_E_UNDEFINED ||
                      (rc1 == RD_E_OVERFLOW && ops[oi] == RD_OP_PROD));
          assert_string_equal(e2.msg, e1.msg);
          errors++;
        } else if (memcmp(ref, got, pl.out_bytes) != 0)
          fail_msg("%s %s shape %zu: outputs differ", rd_op_name(ops[oi]),
                   rd_dtype_name(dt), si);
        assert_int_equal(got[pl.out_bytes], 0x5a); /* nothing past the end */
        checked++;
        multi += pl.nparts > 1;
        free(in);
        free(ref);
        free(got);
      }
  assert_true(checked > 300);
  assert_true(multi > 30);
  assert_true(errors > 0);
}

static void test_other_buffer(void **state)
{
  static const struct shape direct = { 2, { 4099, 131 }, 1, { 1 } };
  static const struct shape outer = { 2, { 600, 2500 }, 1, { 0 } };
  const struct shape *sh[] = { &direct, &outer };
  (void)state;
  for (size_t i = 0; i < 2; i++) {
    struct rd_plan pl;
    struct rd_exec *ex;
    struct rd_error err;
    assert_int_equal(plan_of(&pl, RD_OP_L2, RD_FLOAT32, sh[i], 0), 0);
    unsigned char *in = calloc(1, pl.in_bytes);
    unsigned char *out = malloc(pl.out_bytes);
    unsigned char *other = malloc(pl.out_bytes);
    assert_non_null(in);
    assert_non_null(out);
    assert_non_null(other);
    fill(RD_FLOAT32, in, pl.in_count);
    memset(other, 0x77, pl.out_bytes);
    assert_int_equal(rd_exec_create_out(&pl, out, &ex), 0);
    for (size_t q = 0; q < pl.nparts; q++)
      assert_int_equal(rd_exec_part(ex, q, in), 0);
    assert_int_equal(rd_exec_finish(ex, other, &err), RD_E_INVALID);
    assert_int_equal(err.code, RD_E_INVALID);
    assert_non_null(strstr(err.msg, "rd_exec_create_out"));
    for (uint64_t b = 0; b < pl.out_bytes; b++)
      assert_int_equal(other[b], 0x77); /* untouched */
    assert_int_equal(rd_exec_finish(ex, NULL, &err), RD_E_INVALID);
    /* The right buffer still works after the refusals. */
    assert_int_equal(rd_exec_finish(ex, out, &err), 0);
    rd_exec_destroy(ex);
    free(in);
    free(out);
    free(other);
  }
}

static void test_bad_args(void **state)
{
  static const struct shape s = { 2, { 37, 5 }, 1, { 1 } };
  static const struct shape empty = { 2, { 0, 3 }, 1, { 1 } };
  struct rd_plan pl;
  struct rd_exec *ex = (struct rd_exec *)&pl; /* set to NULL on failure */
  unsigned char out[64];
  (void)state;
  assert_int_equal(plan_of(&pl, RD_OP_L2, RD_INT32, &s, 0), 0);
  assert_int_equal(rd_exec_create_out(&pl, NULL, &ex), RD_E_INVALID);
  assert_null(ex);
  assert_int_equal(rd_exec_create_out(NULL, out, &ex), RD_E_INVALID);
  assert_null(ex);
  assert_int_equal(rd_exec_create_out(&pl, out, NULL), RD_E_INVALID);
  /* No output bytes: a NULL buffer is allowed, and finish takes it. */
  assert_int_equal(plan_of(&pl, RD_OP_L2, RD_INT32, &empty, 0), 0);
  assert_int_equal(pl.out_bytes, 0);
  assert_int_equal(rd_exec_create_out(&pl, NULL, &ex), 0);
  assert_int_equal(rd_exec_part(ex, 0, NULL), 0);
  assert_int_equal(rd_exec_finish(ex, NULL, NULL), 0);
  rd_exec_destroy(ex);
}

/* Errors found while the parts run: the same code and message.  Two
 * outputs overflow, in different parts (the first is reported, though the
 * parts run last to first): [kept, reduced] outputs written as the rows
 * end, and [kept, reduced, kept] outputs written by each part at its end
 * (ReduceSum accumulates those too). */
static void test_errors(void **state)
{
  static const struct shape direct = { 2, { 4099, 131 }, 1, { 1 } };
  static const struct shape middle = { 3, { 300, 50, 40 }, 1, { 1 } };
  static const int dts[] = { RD_INT32, RD_UINT32, RD_INT64, RD_UINT64 };
  static const int ops[] = { RD_OP_L2, RD_OP_SUM_SQUARE, RD_OP_SUM };
  (void)state;
  for (int mid = 0; mid < 2; mid++)
    for (size_t d = 0; d < 4; d++)
      for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
        for (int pol = 0; pol <= RD_OVERFLOW_WRAP; pol++) {
          struct rd_plan pl;
          struct rd_error e1, e2;
          int rc1, rc2, op = ops[oi];
          if (!mid && op == RD_OP_SUM)
            continue;
          assert_int_equal(plan_of(&pl, op, dts[d], mid ? &middle : &direct,
                                   pol),
                           0);
          assert_true(pl.nparts > 1);
          unsigned char *in, *ref, *got;
          bufs(&pl, 0, &in, &ref, &got);
          fill(dts[d], in, pl.in_count);
          /* direct: rows 1000 and 3000 overflow; middle: column 7 of
           * outer indices 100 and 250 (two elements each, e and f,
           * adjacent in the row or in the column).  The first is
           * reported. */
          for (int k = 0; k < 2; k++) {
            uint64_t e = mid ? ((k ? 250 : 100) * 50 + 3) * 40 + 7
                             : (k ? 3000 : 1000) * 131 + 7;
            uint64_t f = mid ? e + 40 : e + 1;
            if (pl.elem_size == 4) {
              uint32_t v = dts[d] == RD_INT32 ? 0x80000000u : 0xffffffffu;
              memcpy(in + e * 4, &v, 4);
              memcpy(in + f * 4, &v, 4);
            } else {
              uint64_t v = dts[d] == RD_INT64 ? 0x8000000000000000ull
                                              : 0xffffffffffffffffull;
              memcpy(in + e * 8, &v, 8);
              memcpy(in + f * 8, &v, 8);
            }
          }
          run_both(&pl, in, ref, got, &rc1, &rc2, &e1, &e2);
          assert_int_equal(rc1, pol == RD_OVERFLOW_ERROR ? RD_E_OVERFLOW : 0);
          assert_int_equal(rc2, rc1);
          assert_int_equal(e2.code, e1.code);
          assert_string_equal(e2.msg, e1.msg);
          if (rc1 != 0) /* the first output: row 1000, or 100 * 40 + 7 */
            assert_non_null(strstr(e1.msg, mid ? "4007" : "1000"));
          if (rc1 == 0)
            assert_memory_equal(ref, got, pl.out_bytes);
          free(in);
          free(ref);
          free(got);
        }
}

static void test_bad_bool(void **state)
{
  static const struct shape s = { 2, { 3000, 700 }, 1, { 1 } };
  struct rd_plan pl;
  struct rd_error e1, e2;
  int rc1, rc2;
  (void)state;
  struct rd_params p;
  rd_params_init(&p);
  p.op = RD_OP_MAX; /* bool from ReduceMax 20 */
  p.opset = 20;
  p.dtype = RD_BOOL;
  p.rank = s.rank;
  p.shape = s.dims;
  p.naxes = s.naxes;
  p.axes = s.axes;
  assert_int_equal(rd_plan_init(&pl, &p, NULL), 0);
  unsigned char *in, *ref, *got;
  bufs(&pl, 0, &in, &ref, &got);
  fill(RD_BOOL, in, pl.in_count);
  in[1234567] = 2;
  run_both(&pl, in, ref, got, &rc1, &rc2, &e1, &e2);
  assert_int_equal(rc1, RD_E_ELEMENT);
  assert_int_equal(rc2, RD_E_ELEMENT);
  assert_string_equal(e2.msg, e1.msg);
  free(in);
  free(ref);
  free(got);
}

/* rd_exec_destroy() never touches the borrowed buffer (the daemon frees its
 * result before destroying the execution); run under ASan/valgrind this
 * is a use-after-free check. */
static void test_free_before_destroy(void **state)
{
  static const struct shape s = { 2, { 4099, 131 }, 1, { 1 } };
  struct rd_plan pl;
  struct rd_exec *ex;
  (void)state;
  assert_int_equal(plan_of(&pl, RD_OP_SUM_SQUARE, RD_INT64, &s, 0), 0);
  unsigned char *in = malloc(pl.in_bytes);
  unsigned char *out = malloc(pl.out_bytes);
  assert_non_null(in);
  assert_non_null(out);
  fill(RD_INT64, in, pl.in_count);
  assert_int_equal(rd_exec_create_out(&pl, out, &ex), 0);
  for (size_t q = 0; q < pl.nparts; q++)
    assert_int_equal(rd_exec_part(ex, q, in), 0);
  assert_int_equal(rd_exec_finish(ex, out, NULL), 0);
  free(out);
  rd_exec_destroy(ex);
  free(in);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_same_bits),
    cmocka_unit_test(test_other_buffer),
    cmocka_unit_test(test_bad_args),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_bad_bool),
    cmocka_unit_test(test_free_before_destroy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
