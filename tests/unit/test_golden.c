/* test_golden.c - ReduceL2 and ReduceSumSquare answers do not change by a
 * single bit.
 *
 * A fixed, seeded random set of cases (every version, the eight original
 * dtypes, shapes up to rank 5 with size-0 and size-1 dims, rank 0, axes
 * subsets with negative axes, keepdims 0/1, noop_with_empty_axes, overflow
 * policies, values with NaN, +-inf, +-0, subnormals and extremes) is run
 * through rd_execute, through rd_exec_* (parts in reverse order) and through
 * rd_stream_* with odd chunk sizes.  The three must agree byte for byte, and
 * a FNV-1a 64 hash of every output (and every return code) must equal the
 * constants below.
 *
 * This is the one test whose expected values come from the program: they
 * were recorded from the library as it was before the operator table
 * redesign (commit 8fa6f80), so that any later change to these two
 * operators' bits is caught.  The other tests check values independently.
 * A negative control flips one output bit and checks the hash changes.
 *
 * RD_TEST_GOLDEN_PRINT=1 prints the hashes instead of failing (only for
 * re-recording after a deliberate, documented change).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

/* Recorded from commit 8fa6f80 (see the file comment). */
#define GOLD_SMALL_L2 UINT64_C(0x6589034fc7302bf3)
#define GOLD_SMALL_SSQ UINT64_C(0xd14c07ae8ff70b76)
#define GOLD_BIG UINT64_C(0xc59d2652030c0d23)

#define NCASES 3000
#define MAX_ELEMS 3000

static uint64_t rng_state;

static uint64_t rnd(void)
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static uint64_t below(uint64_t n)
{
  return n ? rnd() % n : 0;
}

static void fnv(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= UINT64_C(0x100000001b3);
  }
}

static const int dtypes8[8] = { RD_FLOAT32, RD_FLOAT64, RD_FLOAT16, RD_BFLOAT16,
                                RD_INT32,   RD_INT64,   RD_UINT32,  RD_UINT64 };
static const int64_t opsets[] = { 1, 5, 11, 12, 13, 17, 18, 21 };

/* One element: ordinary, special or extreme bit patterns. */
static void gen_elem(int dtype, unsigned char *p, int profile)
{
  uint64_t r = rnd(), k = below(16);
  int special = profile == 1 ? (k < 6) : (k == 0);
  switch (dtype) {
  case RD_FLOAT32: {
    static const uint32_t sp[8] = { 0,           0x80000000u, 1,
                                    0x807fffffu, 0x7f800000u, 0xff800000u,
                                    0x7fc00001u, 0x7f7fffffu };
    uint32_t u;
    if (special) {
      u = sp[r % 8];
    } else {
      float f = (float)((double)(int64_t)(r >> 11) * 0x1p-50);
      if (profile == 2)
        f *= 1e30f;
      memcpy(&u, &f, 4);
    }
    memcpy(p, &u, 4);
    break;
  }
  case RD_FLOAT64: {
    static const uint64_t sp[10] = { 0,
                                     0x8000000000000000u,
                                     1,
                                     0x000fffffffffffffu,
                                     0x7ff0000000000000u,
                                     0xfff0000000000000u,
                                     0x7ff8000000000001u,
                                     0x7fefffffffffffffu,
                                     0x5fe0000000000000u /* 2^511 */,
                                     0x1ff0000000000000u /* 2^-512 */ };
    uint64_t u;
    if (special) {
      u = sp[r % 10];
    } else {
      double d = (double)(int64_t)r * 0x1p-60;
      if (profile == 2)
        d *= (r & 1) ? 1e200 : 1e-200;
      memcpy(&u, &d, 8);
    }
    memcpy(p, &u, 8);
    break;
  }
  case RD_FLOAT16:
  case RD_BFLOAT16: {
    static const uint16_t sph[8] = { 0,      0x8000, 1,      0x83ff,
                                     0x7c00, 0xfc00, 0x7e01, 0x7bff };
    static const uint16_t spb[8] = { 0,      0x8000, 1,      0x807f,
                                     0x7f80, 0xff80, 0x7fc1, 0x7f7f };
    uint16_t u;
    if (special)
      u = (dtype == RD_FLOAT16 ? sph : spb)[r % 8];
    else
      u = (uint16_t)(r >> 7);
    /* Keep ordinary values finite. */
    if (!special && dtype == RD_FLOAT16 && (u & 0x7c00) == 0x7c00)
      u &= 0xbfff;
    if (!special && dtype == RD_BFLOAT16 && (u & 0x7f80) == 0x7f80)
      u &= 0xbfff;
    memcpy(p, &u, 2);
    break;
  }
  case RD_INT32:
  case RD_UINT32: {
    static const uint32_t sp[6] = { 0,           1,           0x7fffffffu,
                                    0x80000000u, 0xffffffffu, 46341 };
    uint32_t u = special        ? sp[r % 6]
                 : profile == 2 ? (uint32_t)r
                                : (uint32_t)(r % 2001) - 1000u;
    memcpy(p, &u, 4);
    break;
  }
  default: {
    static const uint64_t sp[6] = { 0,
                                    1,
                                    0x7fffffffffffffffu,
                                    0x8000000000000000u,
                                    0xffffffffffffffffu,
                                    3037000500u };
    uint64_t u = special ? sp[r % 6] : profile == 2 ? r : (r % 2001) - 1000u;
    memcpy(p, &u, 8);
    break;
  }
  }
}

struct gcase {
  struct rd_params p;
  int64_t shape[RD_MAX_RANK];
  int64_t axes[RD_MAX_RANK];
  int profile;
};

static void gen_case(struct gcase *c, int op)
{
  static const int64_t dims[] = { 0, 1, 1, 2, 3, 4, 5, 7, 16, 17, 33 };
  uint64_t n;
  rd_params_init(&c->p);
  c->p.op = op;
  c->p.dtype = dtypes8[below(8)];
  c->p.opset = opsets[below(sizeof opsets / sizeof opsets[0])];
  do {
    c->p.rank = (size_t)below(6);
    n = 1;
    for (size_t i = 0; i < c->p.rank; i++) {
      c->shape[i] = dims[below(sizeof dims / sizeof dims[0])];
      n *= (uint64_t)c->shape[i];
    }
  } while (n > MAX_ELEMS);
  c->p.shape = c->shape;
  c->p.naxes = 0;
  if (c->p.rank > 0 && below(4) != 0) {
    for (size_t i = 0; i < c->p.rank; i++)
      if (below(2)) {
        int64_t a = (int64_t)i;
        if (below(2))
          a -= (int64_t)c->p.rank;
        c->axes[c->p.naxes++] = a;
      }
    /* shuffle */
    for (size_t i = c->p.naxes; i > 1; i--) {
      size_t j = (size_t)below(i);
      int64_t t = c->axes[i - 1];
      c->axes[i - 1] = c->axes[j];
      c->axes[j] = t;
    }
  }
  c->p.axes = c->axes;
  c->p.keepdims = (int64_t)below(2);
  if (c->p.opset >= 18 && below(3) == 0)
    c->p.noop_with_empty_axes = (int64_t)below(2);
  c->p.overflow = (int)below(3);
  c->profile = (int)below(3);
}

/* Runs one plan the three ways; they must agree.  Adds rc and output to h. */
static void run_three(const struct rd_plan *pl, const unsigned char *in,
                      uint64_t *h, unsigned char **out_keep)
{
  struct rd_error err;
  size_t ob = (size_t)pl->out_bytes;
  unsigned char *o1 = malloc(ob + 1), *o2 = malloc(ob + 1),
                *o3 = malloc(ob + 1);
  int rc1, rc2, rc3;
  struct rd_exec *ex;
  struct rd_stream *s;
  assert_non_null(o1);
  assert_non_null(o2);
  assert_non_null(o3);
  memset(o1, 0xa5, ob + 1);
  memset(o2, 0xa5, ob + 1);
  memset(o3, 0xa5, ob + 1);

  rc1 = rd_execute(pl, in, o1, &err);

  assert_int_equal(rd_exec_create(pl, &ex), 0);
  for (size_t q = pl->nparts; q-- > 0;)
    assert_int_equal(rd_exec_part(ex, q, in), 0);
  rc2 = rd_exec_finish(ex, o2, &err);
  rd_exec_destroy(ex);

  assert_int_equal(rd_stream_create(pl, &s), 0);
  {
    uint64_t off = 0;
    size_t chunk = 1 + (size_t)below(13);
    while (off < pl->in_bytes) {
      size_t m = (size_t)(pl->in_bytes - off < chunk ? pl->in_bytes - off
                                                     : chunk);
      assert_int_equal(rd_stream_feed(s, in + off, m, &err), 0);
      off += m;
      chunk = chunk * 3 + 1;
      if (chunk > 1000003)
        chunk = 7;
    }
  }
  rc3 = rd_stream_finish(s, o3, &err);
  rd_stream_destroy(s);

  assert_int_equal(rc1, rc2);
  assert_int_equal(rc1, rc3);
  {
    int32_t rc = rc1;
    fnv(h, &rc, sizeof rc);
  }
  if (rc1 == 0) {
    assert_memory_equal(o1, o2, ob);
    assert_memory_equal(o1, o3, ob);
    fnv(h, o1, ob);
  }
  assert_int_equal(o1[ob], 0xa5);
  assert_int_equal(o2[ob], 0xa5);
  assert_int_equal(o3[ob], 0xa5);
  if (out_keep && rc1 == 0 && ob > 0)
    *out_keep = o1;
  else
    free(o1);
  free(o2);
  free(o3);
}

/* The hash of the small set of one op.  With `control`, the first
 * successful non-empty output has one bit flipped before hashing. */
static uint64_t small_hash(int op, int control)
{
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  int flipped = 0, planned = 0;
  rng_state = 0x60dd5eedu + (uint64_t)op;
  for (int i = 0; i < NCASES; i++) {
    struct gcase c;
    struct rd_plan pl;
    struct rd_error err;
    int rc;
    unsigned char *in;
    gen_case(&c, op);
    rc = rd_plan_init(&pl, &c.p, &err);
    {
      int32_t r32 = rc;
      fnv(&h, &r32, sizeof r32);
    }
    if (rc != 0)
      continue;
    planned++;
    in = malloc((size_t)pl.in_bytes + 1);
    assert_non_null(in);
    for (uint64_t e = 0; e < pl.in_count; e++)
      gen_elem(pl.dtype, in + e * pl.elem_size, c.profile);
    if (control && !flipped) {
      uint64_t h2 = h;
      unsigned char *keep = NULL;
      run_three(&pl, in, &h2, &keep);
      if (keep) {
        /* Recompute with one bit flipped in the output. */
        int32_t r32 = 0;
        keep[pl.out_bytes / 2] ^= 0x10;
        fnv(&h, &r32, sizeof r32);
        fnv(&h, keep, (size_t)pl.out_bytes);
        free(keep);
        flipped = 1;
      } else {
        h = h2;
      }
    } else {
      run_three(&pl, in, &h, NULL);
    }
    free(in);
  }
  if (control)
    assert_true(flipped);
  assert_true(planned > NCASES / 2); /* the set is mostly valid plans */
  return h;
}

/* Plans big enough to be cut into several parts (outer group kept and
 * reduced), for both ops and several dtypes. */
static uint64_t big_hash(void)
{
  static const struct {
    int dtype;
    int64_t shape[3];
    size_t rank;
    int64_t axes[2];
    size_t naxes;
  } bc[] = {
    { RD_FLOAT32, { 3, 700001, 0 }, 2, { 0 }, 1 },
    { RD_FLOAT32, { 1100003, 2, 0 }, 2, { 1 }, 1 },
    { RD_FLOAT32, { 2100001, 0, 0 }, 1, { 0 }, 0 },
    { RD_FLOAT64, { 5, 3, 100003 }, 3, { 0, -1 }, 2 },
    { RD_FLOAT16, { 4, 1300001, 0 }, 2, { 0 }, 1 },
    { RD_BFLOAT16, { 1300001, 3, 0 }, 2, { -2 }, 1 },
    { RD_INT32, { 2, 1000003, 0 }, 2, { 0 }, 1 },
    { RD_INT64, { 600001, 3, 0 }, 2, { 0 }, 1 },
    { RD_UINT64, { 3, 400003, 0 }, 2, { 1 }, 1 },
  };
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  int multi = 0;
  rng_state = 0xb16b16u;
  for (int op = RD_OP_L2; op <= RD_OP_SUM_SQUARE; op++)
    for (size_t i = 0; i < sizeof bc / sizeof bc[0]; i++) {
      struct rd_params p;
      struct rd_plan pl;
      struct rd_error err;
      unsigned char *in;
      rd_params_init(&p);
      p.op = op;
      p.dtype = bc[i].dtype;
      p.rank = bc[i].rank;
      p.shape = bc[i].shape;
      p.axes = bc[i].axes;
      p.naxes = bc[i].naxes;
      p.overflow = RD_OVERFLOW_WRAP;
      assert_int_equal(rd_plan_init(&pl, &p, &err), 0);
      multi += pl.nparts > 1;
      in = malloc((size_t)pl.in_bytes);
      assert_non_null(in);
      for (uint64_t e = 0; e < pl.in_count; e++)
        gen_elem(pl.dtype, in + e * pl.elem_size, (int)(e % 97 == 0));
      run_three(&pl, in, &h, NULL);
      free(in);
    }
  assert_true(multi >= 12); /* most of them really are cut into parts */
  return h;
}

static int printing(void)
{
  const char *e = getenv("RD_TEST_GOLDEN_PRINT");
  return e && strcmp(e, "1") == 0;
}

static void test_golden_small(void **state)
{
  uint64_t l2 = small_hash(RD_OP_L2, 0), ssq = small_hash(RD_OP_SUM_SQUARE, 0);
  (void)state;
  if (printing()) {
    printf("GOLD_SMALL_L2 0x%016" PRIx64 "\nGOLD_SMALL_SSQ 0x%016" PRIx64 "\n",
           l2, ssq);
    return;
  }
  assert_true(l2 == GOLD_SMALL_L2);
  assert_true(ssq == GOLD_SMALL_SSQ);
}

static void test_golden_big(void **state)
{
  uint64_t b = big_hash();
  (void)state;
  if (printing()) {
    printf("GOLD_BIG 0x%016" PRIx64 "\n", b);
    return;
  }
  assert_true(b == GOLD_BIG);
}

/* Negative control: one flipped output bit changes the hash. */
static void test_golden_control(void **state)
{
  (void)state;
  assert_true(small_hash(RD_OP_L2, 1) != small_hash(RD_OP_L2, 0));
  assert_true(small_hash(RD_OP_SUM_SQUARE, 1) != GOLD_SMALL_SSQ || printing());
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_golden_small),
    cmocka_unit_test(test_golden_big),
    cmocka_unit_test(test_golden_control),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
