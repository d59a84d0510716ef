/* test_prefix.c - unit tests of api/prefix: the push decoder of the bytes
 * before a binary body's tensor data (.npy header, /v2 JSON header and
 * axes blob).  Every body is fed whole, byte by byte, and cut in two at
 * every position; all must give the same answer, the same bytes taken and
 * the same plan inputs or error.  Expected values are worked out by hand
 * from the .npy format and the /v2 binary extension.  Run under ASan for
 * leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "api.h"
#include "binary.h"
#include "prefix.h"
#include "v2.h"

#ifdef WORDS_BIGENDIAN
#define HOST_BIG 1
#else
#define HOST_BIG 0
#endif

/* How to start the decoder for one body. */
struct tcase {
  int kind;          /* enum api_prefix_kind */
  size_t header_len; /* /v2 */
  int op, version;   /* /v2 route */
  uint64_t body_len; /* Content-Length or UINT64_MAX */
};

/* Everything an answer says, to compare runs. */
struct outcome {
  int status;
  size_t taken; /* bytes consumed by all feeds */
  int code;
  char msg[RD_ERRMSG_MAX];
  uint64_t data_offset;
  int swap, fortran;
  int dtype;
  size_t rank, naxes;
  int64_t shape[RD_MAX_RANK], axes[RD_MAX_RANK];
  size_t prefix_len; /* api_prefix_bytes() */
  uint64_t blob_total;
};

static void start(const struct tcase *c, struct api_prefix *p,
                  struct api_v2_info *info)
{
  struct api_request q;
  struct rd_error err;

  memset(&q, 0, sizeof q);
  rd_params_init(&q.params); /* axis, select_last_index: RD_UNSET */
  q.params.op = RD_OP_SUM_SQUARE;
  q.params.opset = 18;
  q.params.keepdims = 1;
  memset(info, 0, sizeof *info);
  info->op = c->op;
  info->version = c->version;
  switch (c->kind) {
  case API_PREFIX_RAW:
    q.params.dtype = RD_FLOAT32;
    q.params.rank = 1;
    q.shape[0] = 4;
    api_prefix_init_raw(p, &q, c->body_len);
    break;
  case API_PREFIX_NPY: api_prefix_init_npy(p, &q, c->body_len); break;
  default:
    assert_int_equal(api_prefix_init_v2(p, c->header_len, c->body_len, info,
                                        &err),
                     0);
  }
}

/* Feeds `body` in the pieces ending at cuts[0..ncuts-1] (the last one is
 * len), stopping at the first answer other than MORE. */
static void run(const struct tcase *c, const unsigned char *body, size_t len,
                const size_t *cuts, size_t ncuts, struct outcome *o)
{
  struct api_prefix p;
  struct api_v2_info info;
  struct rd_error err;
  size_t at = 0, taken;
  int st = API_PREFIX_MORE;

  memset(o, 0, sizeof *o);
  memset(&err, 0, sizeof err);
  start(c, &p, &info);
  for (size_t i = 0; i < ncuts && st == API_PREFIX_MORE; i++) {
    st = api_prefix_feed(&p, body + at, cuts[i] - at, &taken, &err);
    assert_true(taken <= cuts[i] - at);
    if (st == API_PREFIX_MORE)
      assert_int_equal(taken, cuts[i] - at);
    o->taken += taken;
    at = cuts[i];
  }
  o->status = st;
  if (st == API_PREFIX_ERROR) {
    o->code = err.code;
    snprintf(o->msg, sizeof o->msg, "%s", err.msg);
  }
  if (st == API_PREFIX_READY) {
    o->data_offset = p.data_offset;
    o->swap = p.swap;
    o->fortran = p.fortran;
    o->dtype = p.req.params.dtype;
    o->rank = p.req.params.rank;
    memcpy(o->shape, p.req.shape, sizeof o->shape);
    o->naxes = p.req.params.naxes;
    memcpy(o->axes, p.req.axes, sizeof o->axes);
    /* Answers stick and take nothing more. */
    assert_int_equal(api_prefix_feed(&p, body, len, &taken, &err),
                     API_PREFIX_READY);
    assert_int_equal(taken, 0);
  }
  api_prefix_bytes(&p, &o->prefix_len);
  o->blob_total = info.blob_total;
  api_prefix_free(&p);
  api_prefix_free(&p); /* safe twice */
}

static void assert_same(const struct outcome *a, const struct outcome *b,
                        size_t cut)
{
  if (a->status != b->status || a->taken != b->taken || a->code != b->code ||
      strcmp(a->msg, b->msg) != 0)
    print_error("cut at %zu: status %d/%d taken %zu/%zu code %d/%d "
                "'%s'/'%s'\n",
                cut, a->status, b->status, a->taken, b->taken, a->code, b->code,
                a->msg, b->msg);
  assert_int_equal(a->status, b->status);
  assert_int_equal(a->taken, b->taken);
  assert_int_equal(a->code, b->code);
  assert_string_equal(a->msg, b->msg);
  assert_int_equal(a->data_offset, b->data_offset);
  assert_int_equal(a->swap, b->swap);
  assert_int_equal(a->fortran, b->fortran);
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->rank, b->rank);
  assert_memory_equal(a->shape, b->shape, sizeof a->shape);
  assert_int_equal(a->naxes, b->naxes);
  assert_memory_equal(a->axes, b->axes, sizeof a->axes);
  assert_int_equal(a->prefix_len, b->prefix_len);
  assert_int_equal(a->blob_total, b->blob_total);
}

/* The whole body in one feed, then every other split: all equal. */
static void decode_all_ways(const struct tcase *c, const unsigned char *body,
                            size_t len, struct outcome *whole)
{
  struct outcome o;
  size_t cuts[2], *bytes;

  cuts[0] = len;
  run(c, body, len, cuts, 1, whole);
  for (size_t k = 0; k <= len; k++) {
    cuts[0] = k;
    cuts[1] = len;
    run(c, body, len, cuts, 2, &o);
    assert_same(whole, &o, k);
  }
  bytes = malloc((len + 1) * sizeof *bytes);
  assert_non_null(bytes);
  for (size_t k = 0; k < len; k++)
    bytes[k] = k + 1;
  run(c, body, len, bytes, len, &o);
  assert_same(whole, &o, 1);
  free(bytes);
}

/* A .npy v1.0 file: `dict` padded with blanks so that magic + 2 + 2 +
 * header ends at a multiple of 64 with '\n', then `data_len` bytes. */
static size_t make_npy(unsigned char *buf, const char *dict, size_t data_len)
{
  size_t dl = strlen(dict), hl = 10 + dl + 1, pad = (64 - hl % 64) % 64;
  size_t total_hdr = hl + pad;

  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)((total_hdr - 10) & 0xff);
  buf[9] = (unsigned char)((total_hdr - 10) >> 8);
  memcpy(buf + 10, dict, dl);
  memset(buf + 10 + dl, ' ', pad);
  buf[total_hdr - 1] = '\n';
  for (size_t i = 0; i < data_len; i++)
    buf[total_hdr + i] = (unsigned char)i;
  return total_hdr + data_len;
}

/* ------------------------------------------------------------------ */
/* Raw                                                                */
/* ------------------------------------------------------------------ */

static void test_raw_ready_at_once(void **state)
{
  static const unsigned char body[16] = { 0 };
  struct tcase c = { API_PREFIX_RAW, 0, 0, 0, 16 };
  struct outcome o;

  (void)state;
  decode_all_ways(&c, body, sizeof body, &o);
  assert_int_equal(o.status, API_PREFIX_READY);
  assert_int_equal(o.taken, 0);
  assert_int_equal(o.data_offset, 0);
  assert_int_equal(o.swap, HOST_BIG);
  assert_int_equal(o.dtype, RD_FLOAT32);
  assert_int_equal(o.rank, 1);
  assert_int_equal(o.shape[0], 4);
}

/* ------------------------------------------------------------------ */
/* .npy                                                               */
/* ------------------------------------------------------------------ */

static void test_npy_little_endian_c_order(void **state)
{
  unsigned char body[256];
  size_t len = make_npy(body,
                        "{'descr':'<f4','fortran_order':False,"
                        "'shape':(3,2)}",
                        24);
  struct tcase c = { API_PREFIX_NPY, 0, 0, 0, UINT64_MAX };
  struct outcome o;

  (void)state;
  assert_int_equal(len, 64 + 24);
  decode_all_ways(&c, body, len, &o);
  assert_int_equal(o.status, API_PREFIX_READY);
  assert_int_equal(o.taken, 64); /* the header, no data byte */
  assert_int_equal(o.data_offset, 64);
  assert_int_equal(o.swap, HOST_BIG);
  assert_int_equal(o.fortran, 0);
  assert_int_equal(o.dtype, RD_FLOAT32);
  assert_int_equal(o.rank, 2);
  assert_int_equal(o.shape[0], 3);
  assert_int_equal(o.shape[1], 2);
}

static void test_npy_big_endian_fortran_long_header(void **state)
{
  /* A header past the first 64 bytes: the second length the parser asks
   * for is 128. */
  unsigned char body[512];
  size_t len = make_npy(body,
                        "{'shape': (2, 3, 4, 5, 6, 7, 8, 9, 10, 11),   "
                        "'fortran_order': True, 'descr': '>i4', }",
                        8);
  struct tcase c = { API_PREFIX_NPY, 0, 0, 0, UINT64_MAX };
  struct outcome o;

  (void)state;
  assert_int_equal(len, 128 + 8);
  decode_all_ways(&c, body, len, &o);
  assert_int_equal(o.status, API_PREFIX_READY);
  assert_int_equal(o.taken, 128);
  assert_int_equal(o.data_offset, 128);
  assert_int_equal(o.swap, !HOST_BIG);
  assert_int_equal(o.fortran, 1);
  assert_int_equal(o.dtype, RD_INT32);
  assert_int_equal(o.rank, 10);
  assert_int_equal(o.shape[0], 2);
  assert_int_equal(o.shape[9], 11);
}

static void test_npy_bad_magic(void **state)
{
  unsigned char body[256];
  size_t len = make_npy(body,
                        "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (1,), }",
                        4);
  struct tcase c = { API_PREFIX_NPY, 0, 0, 0, UINT64_MAX };
  struct outcome o;

  (void)state;
  body[1] = 'X';
  decode_all_ways(&c, body, len, &o);
  assert_int_equal(o.status, API_PREFIX_ERROR);
  assert_int_equal(o.code, API_E_BAD_NPY);
  assert_int_equal(o.taken, API_NPY_PREFIX); /* refused at the prefix */
  assert_true(o.msg[0] != '\0');
}

static void test_npy_bad_dtype(void **state)
{
  unsigned char body[256];
  size_t len = make_npy(body,
                        "{'descr':'|O','fortran_order':False,"
                        "'shape':(1,)}",
                        4);
  struct tcase c = { API_PREFIX_NPY, 0, 0, 0, UINT64_MAX };
  struct outcome o;

  (void)state;
  decode_all_ways(&c, body, len, &o);
  assert_int_equal(o.status, API_PREFIX_ERROR);
  assert_int_equal(o.code, RD_E_DTYPE);
  assert_int_equal(o.taken, 64);
}

static void test_npy_truncated_header(void **state)
{
  unsigned char body[256];
  size_t len = make_npy(body,
                        "{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (1,), }",
                        0);
  struct tcase c = { API_PREFIX_NPY, 0, 0, 0, UINT64_MAX };
  struct api_prefix p;
  struct api_v2_info info;
  struct outcome o;
  struct rd_error err;

  (void)state;
  decode_all_ways(&c, body, len - 1, &o);
  assert_int_equal(o.status, API_PREFIX_MORE);
  assert_int_equal(o.taken, len - 1);
  /* At the end of the body: named as a truncated header. */
  start(&c, &p, &info);
  assert_int_equal(api_prefix_check_end(&p, NULL, 63, 0, &err), API_E_BAD_NPY);
  assert_string_equal(err.msg, "the body ended after 63 bytes, inside the "
                               ".npy header (truncated)");
  api_prefix_free(&p);
}

/* ------------------------------------------------------------------ */
/* /v2                                                                */
/* ------------------------------------------------------------------ */

static const char v2_data_only[] =
  "{\"inputs\":[{\"name\":\"data\",\"shape\":[2,3],\"datatype\":\"FP32\","
  "\"parameters\":{\"binary_data_size\":24}}]}";

static void test_v2_data_blob(void **state)
{
  unsigned char body[512];
  size_t hl = sizeof v2_data_only - 1;
  struct tcase c = { API_PREFIX_V2, hl, RD_OP_L2, 0, hl + 24 };
  struct outcome o;

  (void)state;
  memcpy(body, v2_data_only, hl);
  memset(body + hl, 0, 24);
  decode_all_ways(&c, body, hl + 24, &o);
  assert_int_equal(o.status, API_PREFIX_READY);
  assert_int_equal(o.taken, hl);
  assert_int_equal(o.data_offset, hl);
  assert_int_equal(o.swap, HOST_BIG);
  assert_int_equal(o.dtype, RD_FLOAT32);
  assert_int_equal(o.rank, 2);
  assert_int_equal(o.shape[0], 2);
  assert_int_equal(o.shape[1], 3);
  assert_int_equal(o.blob_total, 24);
}

static void test_v2_axes_blob_first(void **state)
{
  static const char hdr[] =
    "{\"inputs\":[{\"name\":\"axes\",\"shape\":[2],\"datatype\":\"INT64\","
    "\"parameters\":{\"binary_data_size\":16}},{\"name\":\"data\",\"shape\":"
    "[2,2],\"datatype\":\"INT32\",\"parameters\":{\"binary_data_size\":16}}]}";
  unsigned char body[512];
  size_t hl = sizeof hdr - 1;
  struct tcase c = { API_PREFIX_V2, hl, RD_OP_SUM_SQUARE, 18, hl + 16 + 16 };
  struct outcome o;

  (void)state;
  memcpy(body, hdr, hl);
  memset(body + hl, 0, 32);
  body[hl] = 1;         /* axes = [1, 0], little-endian INT64 */
  body[hl + 16] = 0x7f; /* data: never read by the decoder */
  decode_all_ways(&c, body, hl + 32, &o);
  assert_int_equal(o.status, API_PREFIX_READY);
  assert_int_equal(o.taken, hl + 16);
  assert_int_equal(o.data_offset, hl + 16);
  assert_int_equal(o.dtype, RD_INT32);
  assert_int_equal(o.naxes, 2);
  assert_int_equal(o.axes[0], 1);
  assert_int_equal(o.axes[1], 0);
  assert_int_equal(o.blob_total, 32);
}

static void test_v2_data_blob_not_last_is_whole(void **state)
{
  static const char hdr[] =
    "{\"inputs\":[{\"name\":\"data\",\"shape\":[2],\"datatype\":\"INT64\","
    "\"parameters\":{\"binary_data_size\":16}},{\"name\":\"axes\",\"shape\":"
    "[1],\"datatype\":\"INT64\",\"parameters\":{\"binary_data_size\":8}}]}";
  unsigned char body[512];
  size_t hl = sizeof hdr - 1;
  struct tcase c = { API_PREFIX_V2, hl, RD_OP_SUM_SQUARE, 0, UINT64_MAX };
  struct outcome o;

  (void)state;
  memcpy(body, hdr, hl);
  memset(body + hl, 0, 24);
  decode_all_ways(&c, body, hl + 24, &o);
  assert_int_equal(o.status, API_PREFIX_WHOLE);
  assert_int_equal(o.taken, hl);      /* the header only */
  assert_int_equal(o.prefix_len, hl); /* which the caller keeps */
  assert_int_equal(o.blob_total, 24);
}

static void test_v2_content_length_mismatch(void **state)
{
  unsigned char body[512];
  size_t hl = sizeof v2_data_only - 1;
  struct tcase c = { API_PREFIX_V2, hl, RD_OP_L2, 0, hl + 20 };
  struct outcome o;
  char want[200];

  (void)state;
  memcpy(body, v2_data_only, hl);
  memset(body + hl, 0, 20);
  decode_all_ways(&c, body, hl + 20, &o);
  assert_int_equal(o.status, API_PREFIX_ERROR);
  assert_int_equal(o.code, RD_E_STREAM);
  snprintf(want, sizeof want,
           "Content-Length %zu leaves 20 bytes after the "
           "%zu-byte JSON header; the inputs' binary_data_size add up to 24",
           hl + 20, hl);
  assert_string_equal(o.msg, want);
}

static void test_v2_bad_json_header(void **state)
{
  static const char hdr[] = "{\"inputs\":[{\"name\":\"data\",";
  size_t hl = sizeof hdr - 1;
  struct tcase c = { API_PREFIX_V2, hl, RD_OP_L2, 0, UINT64_MAX };
  struct outcome o;

  (void)state;
  decode_all_ways(&c, (const unsigned char *)hdr, hl, &o);
  assert_int_equal(o.status, API_PREFIX_ERROR);
  assert_int_equal(o.code, API_E_BAD_JSON);
  assert_int_equal(o.taken, hl);
}

/* ------------------------------------------------------------------ */
/* The checks around a plan                                           */
/* ------------------------------------------------------------------ */

static void plan_of(const struct api_prefix *p, struct rd_plan *plan)
{
  struct rd_plan physical;
  struct rd_error err;

  assert_int_equal(api_binary_plan(&p->req.params, p->fortran, plan, &physical,
                                   &err),
                   0);
}

static void test_checks_messages(void **state)
{
  unsigned char body[256];
  size_t len = make_npy(body,
                        "{'descr':'<f4','fortran_order':False,"
                        "'shape':(3,2)}",
                        24);
  struct api_prefix p;
  struct api_request q;
  struct rd_plan plan;
  struct rd_error err;
  size_t taken;

  (void)state;
  memset(&q, 0, sizeof q);
  rd_params_init(&q.params); /* axis, select_last_index: RD_UNSET */
  q.params.op = RD_OP_SUM_SQUARE;
  q.params.opset = 18;
  q.params.keepdims = 1;
  api_prefix_init_npy(&p, &q, len + 4); /* 4 bytes too many */
  assert_int_equal(api_prefix_feed(&p, body, len, &taken, &err),
                   API_PREFIX_READY);
  plan_of(&p, &plan);
  assert_int_equal(plan.in_bytes, 24);
  assert_int_equal(api_prefix_check_size(&p, &plan, 24, &err), 0);
  assert_int_equal(api_prefix_check_size(&p, &plan, 23, &err),
                   API_E_BODY_TOO_LARGE);
  assert_string_equal(err.msg, "shape [3,2] of float32 needs 24 bytes, "
                               "above the limit of 23 bytes (--max-body)");
  assert_int_equal(api_prefix_check_length(&p, &plan, &err), RD_E_STREAM);
  assert_string_equal(err.msg,
                      "the .npy header declares shape [3,2] of "
                      "float32: 24 data bytes; Content-Length 92 leaves 28 "
                      "after the 64-byte header");
  assert_int_equal(api_prefix_check_end(&p, &plan, 64 + 24, 24, &err), 0);
  assert_int_equal(api_prefix_check_end(&p, &plan, 64 + 20, 20, &err),
                   RD_E_STREAM);
  assert_string_equal(err.msg, "shape [3,2] of float32 needs 24 bytes after "
                               "the .npy header; received 20");
  api_prefix_free(&p);

  q.params.dtype = RD_INT64;
  q.params.rank = 1;
  q.shape[0] = 5;
  api_prefix_init_raw(&p, &q, 41);
  assert_int_equal(api_prefix_feed(&p, NULL, 0, &taken, &err),
                   API_PREFIX_READY);
  plan_of(&p, &plan);
  assert_int_equal(api_prefix_check_length(&p, &plan, &err), RD_E_STREAM);
  assert_string_equal(err.msg, "shape [5] of int64 needs exactly 40 bytes; "
                               "Content-Length is 41");
  api_prefix_free(&p);
  api_prefix_init_raw(&p, &q, UINT64_MAX); /* chunked: no check */
  assert_int_equal(api_prefix_feed(&p, NULL, 0, &taken, &err),
                   API_PREFIX_READY);
  assert_int_equal(api_prefix_check_length(&p, &plan, &err), 0);
  api_prefix_free(&p);
}

static void test_check_end_v2_truncated(void **state)
{
  struct api_prefix p;
  struct api_v2_info info;
  struct rd_error err;

  (void)state;
  memset(&info, 0, sizeof info);
  info.op = RD_OP_L2;
  assert_int_equal(api_prefix_init_v2(&p, 100, UINT64_MAX, &info, &err), 0);
  assert_int_equal(api_prefix_check_end(&p, NULL, 40, 0, &err), RD_E_STREAM);
  assert_string_equal(err.msg,
                      "the body ended after 40 bytes, before the "
                      "JSON header (Inference-Header-Content-Length 100) and "
                      "the blobs before the data");
  api_prefix_free(&p);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_raw_ready_at_once),
    cmocka_unit_test(test_npy_little_endian_c_order),
    cmocka_unit_test(test_npy_big_endian_fortran_long_header),
    cmocka_unit_test(test_npy_bad_magic),
    cmocka_unit_test(test_npy_bad_dtype),
    cmocka_unit_test(test_npy_truncated_header),
    cmocka_unit_test(test_v2_data_blob),
    cmocka_unit_test(test_v2_axes_blob_first),
    cmocka_unit_test(test_v2_data_blob_not_last_is_whole),
    cmocka_unit_test(test_v2_content_length_mismatch),
    cmocka_unit_test(test_v2_bad_json_header),
    cmocka_unit_test(test_checks_messages),
    cmocka_unit_test(test_check_end_v2_truncated),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
