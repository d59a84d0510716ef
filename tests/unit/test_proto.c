/* test_proto.c - unit tests of api/proto: the /v1 and /v2 rows of the
 * protocol table.  The fixed bodies and the DRAINING error are the exact
 * bytes the daemon answered before the table existed (docs/http-api.md,
 * docs/inference-protocol.md); results and headers are worked out by hand.
 * Run under ASan for leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "binary.h"
#include "proto.h"
#include "v2.h"

/* Collects headers as "Name: value\n" lines. */
static int collect(void *arg, const char *name, const char *value)
{
  char *buf = arg;
  size_t n = strlen(buf);

  snprintf(buf + n, 256 - n, "%s: %s\n", name, value);
  return 0;
}

static void expect_error(const struct api_proto *p, int code, const char *msg,
                         const char *want)
{
  struct rd_error err;
  struct api_buf b;

  err.code = code;
  snprintf(err.msg, sizeof err.msg, "%s", msg);
  api_buf_init(&b);
  assert_int_equal(p->encode_error(&err, &b), 0);
  assert_string_equal(b.data, want);
  api_buf_free(&b);
}

static void test_fixed_bodies(void **state)
{
  (void)state;
  assert_string_equal(api_proto_v1.live_body, "{\"status\":\"ok\"}");
  assert_string_equal(api_proto_v1.ready_body, "{\"status\":\"ready\"}");
  assert_string_equal(api_proto_v1.nomem_body,
                      "{\"error\":{\"code\":"
                      "\"OUT_OF_MEMORY\",\"message\":\"out of memory\"}}");
  assert_string_equal(api_proto_v2.live_body, "{\"live\":true}");
  assert_string_equal(api_proto_v2.ready_body, "{\"ready\":true}");
  assert_string_equal(api_proto_v2.nomem_body,
                      "{\"error\":\"OUT_OF_MEMORY: out of memory\"}");
  assert_int_equal(api_proto_v1.inline_ok, 1);
  assert_int_equal(api_proto_v2.inline_ok, 0);
}

static void test_draining_and_errors(void **state)
{
  (void)state;
  expect_error(&api_proto_v1, API_E_DRAINING, "the server is shutting down",
               "{\"error\":{\"code\":\"DRAINING\",\"message\":\"the server "
               "is shutting down\"}}");
  expect_error(&api_proto_v2, API_E_DRAINING, "the server is shutting down",
               "{\"error\":\"DRAINING: the server is shutting down\"}");
  assert_int_equal(api_http_status(API_E_DRAINING), 503);
  expect_error(&api_proto_v1, API_E_NOT_FOUND, "no such path: /x",
               "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no such "
               "path: /x\"}}");
  expect_error(&api_proto_v2, API_E_NOT_FOUND, "no such path: /x",
               "{\"error\":\"NOT_FOUND: no such path: /x\"}");
}

/* ReduceSumSquare over axis 1 of a [2,2] float32: the plan and its output
 * [5, 25] (from 1,2 and 3,4). */
static void sample_plan(struct rd_plan *plan)
{
  struct rd_params p;
  struct rd_error err;
  int64_t shape[2] = { 2, 2 }, axes[1] = { 1 };

  rd_params_init(&p); /* axis, select_last_index: RD_UNSET */
  p.op = RD_OP_SUM_SQUARE;
  p.opset = 18;
  p.dtype = RD_FLOAT32;
  p.rank = 2;
  p.shape = shape;
  p.naxes = 1;
  p.axes = axes;
  p.keepdims = 0;
  assert_int_equal(rd_plan_init(plan, &p, &err), 0);
}

static void test_v1_result_by_accept(void **state)
{
  static const float out[2] = { 5.0f, 25.0f };
  struct api_call call;
  struct api_reply reply;
  struct rd_plan plan;
  struct rd_error err;
  struct api_buf b;
  char hdrs[256] = "";

  (void)state;
  sample_plan(&plan);
  memset(&call, 0, sizeof call);
  call.proto = &api_proto_v1;
  assert_int_equal(api_accept_parse("application/octet-stream", API_FMT_JSON,
                                    &call.accept, &err),
                   0);
  assert_int_equal(call.proto->check_accept(&call, RD_FLOAT32, &err), 0);
  memset(&reply, 0, sizeof reply);
  api_buf_init(&b);
  assert_int_equal(call.proto->encode_result(&call, &plan, 18, 0, out, &b,
                                             &reply, &err),
                   0);
  assert_int_equal(reply.fmt, API_FMT_RAW);
  assert_int_equal(b.len, sizeof out);
  assert_memory_equal(b.data, out, sizeof out);
  assert_string_equal(api_reply_media_type(&reply), "application/octet-stream");
  assert_int_equal(call.proto->reply_headers(&reply, collect, hdrs), 0);
  assert_string_equal(hdrs, "Tensor-Dtype: float32\nTensor-Shape: [2]\n");
  api_buf_free(&b);

  /* Only .npy accepted, which cannot carry bfloat16: refused before the
   * body. */
  assert_int_equal(api_accept_parse("application/x-npy", API_FMT_JSON,
                                    &call.accept, &err),
                   0);
  assert_int_equal(call.proto->check_accept(&call, RD_FLOAT32, &err), 0);
  assert_int_equal(call.proto->check_accept(&call, RD_BFLOAT16, &err),
                   API_E_NOT_ACCEPTABLE);
}

static void test_v2_result_json_and_binary(void **state)
{
  static const float out[2] = { 5.0f, 25.0f };
  struct api_call call;
  struct api_reply reply;
  struct rd_plan plan;
  struct rd_error err;
  struct api_buf b;
  char hdrs[256] = "";

  (void)state;
  sample_plan(&plan);
  memset(&call, 0, sizeof call);
  call.proto = &api_proto_v2;
  call.v2info.op = RD_OP_SUM_SQUARE;
  /* /v2 never refuses by Accept. */
  assert_int_equal(call.proto->check_accept(&call, RD_BFLOAT16, &err), 0);
  memset(&reply, 0, sizeof reply);
  api_buf_init(&b);
  assert_int_equal(call.proto->encode_result(&call, &plan, 18, 0, out, &b,
                                             &reply, &err),
                   0);
  assert_int_equal(reply.fmt, API_FMT_JSON);
  assert_non_null(strstr(b.data, "\"data\":[5,25]"));
  assert_int_equal(call.proto->reply_headers(&reply, collect, hdrs), 0);
  assert_string_equal(hdrs, "");
  api_buf_free(&b);

  call.v2info.binary_output = 1;
  memset(&reply, 0, sizeof reply);
  api_buf_init(&b);
  assert_int_equal(call.proto->encode_result(&call, &plan, 18, 0, out, &b,
                                             &reply, &err),
                   0);
  assert_int_equal(reply.fmt, API_FMT_RAW);
  assert_true(reply.json_len > 0 && reply.json_len + sizeof out == b.len);
  assert_memory_equal(b.data + reply.json_len, out, sizeof out);
  assert_int_equal(call.proto->reply_headers(&reply, collect, hdrs), 0);
  {
    char want[64];
    snprintf(want, sizeof want, "Inference-Header-Content-Length: %zu\n",
             reply.json_len);
    assert_string_equal(hdrs, want);
  }
  api_buf_free(&b);
}

static void test_decode_through_table(void **state)
{
  static const char v1[] =
    "{\"op\":\"ReduceL2\",\"input\":{\"dtype\":\"float32\",\"shape\":[2],"
    "\"data\":[3,4]}}";
  static const char v2[] =
    "{\"inputs\":[{\"name\":\"data\",\"shape\":[2],\"datatype\":\"FP32\","
    "\"data\":[3,4]}]}";
  struct api_call call;
  struct api_request req;
  struct rd_error err;

  (void)state;
  memset(&call, 0, sizeof call);
  call.proto = &api_proto_v1;
  assert_int_equal(call.proto->decode(&call, v1, sizeof v1 - 1, 100, &req,
                                      &err),
                   0);
  assert_int_equal(req.params.op, RD_OP_L2);
  assert_int_equal(req.params.rank, 1);
  assert_int_equal(req.shape[0], 2);
  api_request_free(&req);

  memset(&call, 0, sizeof call);
  call.proto = &api_proto_v2;
  call.header_len = SIZE_MAX;
  call.v2info.op = RD_OP_L2;
  assert_int_equal(call.proto->decode(&call, v2, sizeof v2 - 1, 100, &req,
                                      &err),
                   0);
  assert_int_equal(req.params.op, RD_OP_L2);
  assert_int_equal(req.params.dtype, RD_FLOAT32);
  assert_int_equal(req.shape[0], 2);
  assert_int_equal(req.data_bytes, 8);
  api_request_free(&req);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fixed_bodies),
    cmocka_unit_test(test_draining_and_errors),
    cmocka_unit_test(test_v1_result_by_accept),
    cmocka_unit_test(test_v2_result_json_and_binary),
    cmocka_unit_test(test_decode_through_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
