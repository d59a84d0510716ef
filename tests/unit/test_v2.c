/* test_v2.c - unit tests of api/v2: routes, infer request decoding (JSON
 * and the binary tensor extension), response, error and metadata bodies.
 * The protocol's own examples (docs/inference-protocol.md, OIP
 * inference_rest.md) are adapted to our models.  Expected values are
 * worked out by hand or from the IEEE formats.  Run under ASan for leaks. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api.h"
#include "v2.h"

/* ------------------------------------------------------------------ */
/* Routes                                                             */
/* ------------------------------------------------------------------ */

static void expect_route(const char *path, int kind, int op, int version)
{
  struct api_v2_route rt;
  struct rd_error err;

  memset(&err, 0, sizeof err);
  if (api_v2_route_parse(path, &rt, &err) != 0)
    print_error("%s: %s\n", path, err.msg);
  assert_int_equal(api_v2_route_parse(path, &rt, &err), 0);
  assert_int_equal(rt.kind, kind);
  assert_int_equal(rt.op, op);
  assert_int_equal(rt.version, version);
}

static void expect_route_fail(const char *path, int code, const char *sub)
{
  struct api_v2_route rt;
  struct rd_error err;

  memset(&err, 0, sizeof err);
  assert_int_equal(api_v2_route_parse(path, &rt, &err), code);
  if (strstr(err.msg, sub) == NULL)
    print_error("%s: \"%s\" lacks \"%s\"\n", path, err.msg, sub);
  assert_non_null(strstr(err.msg, sub));
}

static void test_routes(void **state)
{
  (void)state;
  expect_route("/v2", API_V2_SERVER_META, 0, 0);
  expect_route("/v2/health/live", API_V2_LIVE, 0, 0);
  expect_route("/v2/health/ready", API_V2_READY, 0, 0);
  expect_route("/v2/models/ReduceL2", API_V2_MODEL_META, RD_OP_L2, 0);
  expect_route("/v2/models/ReduceSumSquare/ready", API_V2_MODEL_READY,
               RD_OP_SUM_SQUARE, 0);
  expect_route("/v2/models/ReduceL2/infer", API_V2_INFER, RD_OP_L2, 0);
  expect_route("/v2/models/ReduceL2/versions/13", API_V2_MODEL_META, RD_OP_L2,
               13);
  expect_route("/v2/models/ReduceL2/versions/1/ready", API_V2_MODEL_READY,
               RD_OP_L2, 1);
  expect_route("/v2/models/ReduceSumSquare/versions/11/infer", API_V2_INFER,
               RD_OP_SUM_SQUARE, 11);

  expect_route_fail("/v2/", API_E_NOT_FOUND, "no such path");
  expect_route_fail("/v2/models", API_E_NOT_FOUND, "no such path");
  expect_route_fail("/v2/models/", API_E_NOT_FOUND, "no such path");
  expect_route_fail("/v2/models/ReduceL2/", API_E_NOT_FOUND, "no such path");
  expect_route_fail("/v2/models/ReduceL2/infer/x", API_E_NOT_FOUND,
                    "no such path");
  expect_route_fail("/v2/health", API_E_NOT_FOUND, "no such path");
  expect_route_fail("/v2/models/reducel2/infer", API_E_NOT_FOUND,
                    "unknown model \"reducel2\"");
  expect_route_fail("/v2/models/ReduceMaximum", API_E_NOT_FOUND,
                    "models: ReduceL2, ReduceSumSquare, ReduceSum, ReduceMean");
  /* every operator is a model, with its own versions (issue 11) */
  expect_route("/v2/models/ReduceMax/versions/20/infer", API_V2_INFER,
               RD_OP_MAX, 20);
  expect_route("/v2/models/ReduceMin/versions/12", API_V2_MODEL_META, RD_OP_MIN,
               12);
  expect_route("/v2/models/ArgMin/versions/12/ready", API_V2_MODEL_READY,
               RD_OP_ARGMIN, 12);
  expect_route("/v2/models/ReduceLogSumExp/infer", API_V2_INFER,
               RD_OP_LOG_SUM_EXP, 0);
  expect_route_fail("/v2/models/ReduceSum/versions/18", API_E_NOT_FOUND,
                    "model ReduceSum has no version 18; versions: 1, 11, 13");
  expect_route_fail("/v2/models/ArgMax/versions/18/infer", API_E_NOT_FOUND,
                    "versions: 1, 11, 12, 13");
  expect_route_fail("/v2/models/ReduceMax/versions/19", API_E_NOT_FOUND,
                    "versions: 1, 11, 12, 13, 18, 20");
  expect_route_fail("/v2/models/ReduceL2/versions/12/infer", API_E_NOT_FOUND,
                    "no version 12; versions: 1, 11, 13, 18");
  expect_route_fail("/v2/models/ReduceL2/versions/018", API_E_INVALID_FIELD,
                    "\"018\" is not a version number");
  expect_route_fail("/v2/models/ReduceL2/versions/-1", API_E_INVALID_FIELD,
                    "not a version number");
  expect_route_fail("/v2/models/ReduceL2/versions/1x/ready",
                    API_E_INVALID_FIELD, "\"1x\"");
  expect_route_fail("/v2/models/ReduceL2/versions//infer", API_E_INVALID_FIELD,
                    "\"\"");
  expect_route_fail("/v2/models/ReduceL2/versions/99999999999",
                    API_E_INVALID_FIELD, "not a version number");
}

/* ------------------------------------------------------------------ */
/* Decoding                                                           */
/* ------------------------------------------------------------------ */

static int decode(const char *json, int op, int version,
                  struct api_request *req, struct api_v2_info *info,
                  struct rd_error *err)
{
  memset(info, 0x5a, sizeof *info); /* decode must reset it */
  info->op = op;
  info->version = version;
  return api_v2_decode(json, strlen(json), SIZE_MAX, 0, req, info, err);
}

static void expect_fail(const char *json, int version, int code,
                        const char *sub)
{
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  int rc = decode(json, RD_OP_L2, version, &req, &info, &err);

  if (rc != code || strstr(err.msg, sub) == NULL)
    print_error("%s\n  got %s \"%s\"\n  want %s with \"%s\"\n", json,
                api_errname(rc), err.msg, api_errname(code), sub);
  assert_int_equal(rc, code);
  assert_int_equal(err.code, code);
  assert_non_null(strstr(err.msg, sub));
  assert_null(req.data);
  api_request_free(&req);
}

/* The OIP's request example ("input0", [2,2] UINT32, "output0"),
 * adapted: the input is "data", the output "reduced". */
static void test_decode_protocol_example(void **state)
{
  static const char body[] =
    "{\"id\" : \"42\", \"inputs\" : [ { \"name\" : \"data\", "
    "\"shape\" : [ 2, 2 ], \"datatype\" : \"UINT32\", "
    "\"data\" : [ 1, 2, 3, 4 ] } ], "
    "\"outputs\" : [ { \"name\" : \"reduced\" } ] }";
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  const uint32_t want[4] = { 1, 2, 3, 4 };

  (void)state;
  assert_int_equal(decode(body, RD_OP_SUM_SQUARE, 0, &req, &info, &err), 0);
  assert_int_equal(req.params.op, RD_OP_SUM_SQUARE);
  assert_int_equal(req.params.opset, 18);
  assert_int_equal(req.params.dtype, RD_UINT32);
  assert_int_equal(req.params.rank, 2);
  assert_int_equal(req.shape[0], 2);
  assert_int_equal(req.shape[1], 2);
  assert_int_equal(req.params.naxes, 0);
  assert_int_equal(req.params.keepdims, 1);
  assert_int_equal(req.data_bytes, 16);
  assert_memory_equal(req.data, want, 16);
  assert_int_equal(info.has_id, 1);
  assert_string_equal(info.id, "42");
  assert_int_equal(info.binary_output, 0);
  assert_int_equal(info.data_blob, 0);
  assert_int_equal(info.blob_total, 0);
  api_request_free(&req);
}

static void test_decode_nested_params_axes_input(void **state)
{
  static const char body[] =
    "{\"inputs\":[{\"name\":\"axes\",\"shape\":[2],\"datatype\":\"INT64\","
    "\"data\":[-1,0]},{\"name\":\"data\",\"shape\":[2,1,3],\"datatype\":"
    "\"FP64\",\"data\":[[[1.5,-2,\"Infinity\"]],[[0,1e300,\"NaN\"]]]}],"
    "\"parameters\":{\"keepdims\":false,\"noop_with_empty_axes\":1,"
    "\"overflow\":\"wrap\",\"binary_data_output\":true}}";
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  const double *d;

  (void)state;
  assert_int_equal(decode(body, RD_OP_L2, 18, &req, &info, &err), 0);
  assert_int_equal(req.params.dtype, RD_FLOAT64);
  assert_int_equal(req.params.rank, 3);
  assert_int_equal(req.params.naxes, 2);
  assert_int_equal(req.axes[0], -1);
  assert_int_equal(req.axes[1], 0);
  assert_int_equal(req.params.keepdims, 0);
  assert_int_equal(req.params.noop_with_empty_axes, 1);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_WRAP);
  assert_int_equal(info.binary_output, 1);
  assert_int_equal(info.has_id, 0);
  d = req.data;
  assert_true(d[0] == 1.5 && d[1] == -2.0 && d[2] > 1e308 && d[3] == 0.0 &&
              d[4] == 1e300 && d[5] != d[5]);
  api_request_free(&req);
}

static void test_decode_versions_and_16bit(void **state)
{
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  uint16_t h[3];

  (void)state;
  /* Below 18 axes are a parameter; FP16 in JSON rounds to nearest even. */
  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[3],"
                          "\"datatype\":\"FP16\",\"data\":[1,65504,"
                          "1.00048828125]}],\"parameters\":{\"axes\":[0]}}",
                          RD_OP_L2, 13, &req, &info, &err),
                   0);
  assert_int_equal(req.params.opset, 13);
  assert_int_equal(req.params.naxes, 1);
  assert_int_equal(req.axes[0], 0);
  memcpy(h, req.data, sizeof h);
  /* 1 = 0x3c00, 65504 = 0x7bff, 1+2^-11 is halfway: ties to even 0x3c00. */
  assert_int_equal(h[0], 0x3c00);
  assert_int_equal(h[1], 0x7bff);
  assert_int_equal(h[2], 0x3c00);
  api_request_free(&req);

  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[2],"
                          "\"datatype\":\"BF16\",\"data\":[1,-2]}]}",
                          RD_OP_L2, 0, &req, &info, &err),
                   0);
  memcpy(h, req.data, 4);
  assert_int_equal(h[0], 0x3f80);
  assert_int_equal(h[1], 0xc000);
  api_request_free(&req);

  /* Integers: int64 extremes, uint64 above 2^63 as a decimal string. */
  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[2],"
                          "\"datatype\":\"UINT64\",\"data\":[0,"
                          "\"18446744073709551615\"]}]}",
                          RD_OP_L2, 0, &req, &info, &err),
                   0);
  assert_true(((uint64_t *)req.data)[1] == UINT64_MAX);
  api_request_free(&req);
  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[2],"
                          "\"datatype\":\"INT64\",\"data\":["
                          "-9223372036854775808,9223372036854775807]}]}",
                          RD_OP_L2, 0, &req, &info, &err),
                   0);
  assert_true(((int64_t *)req.data)[0] == INT64_MIN);
  assert_true(((int64_t *)req.data)[1] == INT64_MAX);
  api_request_free(&req);
}

static void test_decode_errors(void **state)
{
  static const char *const in =
    "{\"name\":\"data\",\"shape\":[2],\"datatype\":\"FP32\",\"data\":[1,2]}";
  char body[512];

  (void)state;
  expect_fail("{", 0, API_E_BAD_JSON, "invalid JSON");
  expect_fail("[]", 0, API_E_BAD_JSON, "must be a JSON object");
  expect_fail("{}", 0, API_E_MISSING_FIELD, "\"inputs\"");
  expect_fail("{\"inputs\":[]}", 0, API_E_MISSING_FIELD, "input \"data\"");
  snprintf(body, sizeof body, "{\"inputs\":[%s],\"foo\":1}", in);
  expect_fail(body, 0, API_E_UNKNOWN_FIELD, "unknown field \"foo\"");
  snprintf(body, sizeof body, "{\"inputs\":[%s],\"parameters\":{\"axis\":1}}",
           in);
  /* axis is ArgMax/ArgMin's (issue 11) */
  expect_fail(body, 0, RD_E_ATTRIBUTE,
              "parameters.axis is not an attribute "
              "of ReduceL2");
  snprintf(body, sizeof body, "{\"inputs\":[%s],\"parameters\":{\"axiz\":1}}",
           in);
  expect_fail(body, 0, API_E_UNKNOWN_FIELD, "unknown parameter \"axiz\"");
  snprintf(body, sizeof body, "{\"inputs\":[%s,%s]}", in, in);
  expect_fail(body, 0, API_E_INVALID_FIELD, "given twice");
  expect_fail("{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":"
              "\"FP32\",\"data\":[1]}]}",
              0, API_E_UNKNOWN_FIELD, "unknown input \"x\"");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"FP32\",\"data\":[1]},{\"name\":\"axes\",\"shape\":[1],"
              "\"datatype\":\"INT64\",\"data\":[0]}]}",
              13, API_E_UNKNOWN_FIELD, "exists from version 18 of ReduceL2");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":{\"axes\":"
           "[0]}}",
           in);
  expect_fail(body, 18, API_E_INVALID_FIELD, "the input \"axes\"");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"INT4\",\"data\":[1]}]}",
              0, RD_E_DTYPE, "unsupported datatype \"INT4\"");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"fp32\",\"data\":[1]}]}",
              0, RD_E_DTYPE, "\"fp32\"");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"datatype\":\"FP32\","
              "\"data\":[1]}]}",
              0, API_E_MISSING_FIELD, "\"shape\"");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[-1],\"datatype\":"
              "\"FP32\",\"data\":[1]}]}",
              0, RD_E_DIM, "-1");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[3],\"datatype\":"
              "\"FP32\",\"data\":[1,2]}]}",
              0, API_E_SHAPE_MISMATCH,
              "data has 2 elements; shape [3] needs 3");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[2,2],\"datatype\":"
              "\"FP32\",\"data\":[[1,2],[3]]}]}",
              0, API_E_SHAPE_MISMATCH, "does not match its shape [2,2]");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[2],\"datatype\":"
              "\"INT32\",\"data\":[1,2147483648]}]}",
              0, API_E_INVALID_ELEMENT,
              "data[1] = 2147483648 is out of range "
              "[-2147483648, 2147483647]");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"UINT32\",\"data\":[1.5]}]}",
              0, API_E_INVALID_ELEMENT, "is not an integer");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"FP32\",\"data\":[\"x\"]}]}",
              0, API_E_INVALID_ELEMENT, "data[0] = \"x\" is not a number");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"FP32\"}]}",
              0, API_E_MISSING_FIELD,
              "neither \"data\" nor parameters.binary_data_size");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"FP32\",\"parameters\":{\"binary_data_size\":4}}]}",
              0, API_E_INVALID_FIELD, "no Inference-Header-Content-Length");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"outputs\":[{\"name\":"
           "\"output0\"}]}",
           in);
  expect_fail(body, 0, API_E_UNKNOWN_FIELD, "unknown output \"output0\"");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"outputs\":[{\"name\":"
           "\"reduced\",\"parameters\":{\"classification\":2}}]}",
           in);
  expect_fail(body, 0, API_E_UNKNOWN_FIELD, "\"classification\"");
  snprintf(body, sizeof body, "{\"id\":7,\"inputs\":[%s]}", in);
  expect_fail(body, 0, API_E_INVALID_FIELD, "id must be a string");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":{\"keepdims\":"
           "\"1\"}}",
           in);
  expect_fail(body, 0, API_E_INVALID_FIELD, "parameters.keepdims");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":{\"overflow\":"
           "\"clamp\"}}",
           in);
  expect_fail(body, 0, RD_E_POLICY, "\"clamp\"");
  expect_fail("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],\"datatype\":"
              "\"FP32\",\"data\":[1]},{\"name\":\"axes\",\"shape\":[1],"
              "\"datatype\":\"INT32\",\"data\":[0]}]}",
              18, API_E_INVALID_FIELD, "datatype INT64");
}

/* Binary extension: header, then blobs in input order. */
static void test_decode_binary(void **state)
{
  static const char hdr[] =
    "{\"inputs\":[{\"name\":\"data\",\"shape\":[2],\"datatype\":\"FP16\","
    "\"parameters\":{\"binary_data_size\":4}},{\"name\":\"axes\",\"shape\":"
    "[1],\"datatype\":\"INT64\",\"parameters\":{\"binary_data_size\":8}}],"
    "\"outputs\":[{\"name\":\"reduced\",\"parameters\":{\"binary_data\":"
    "true}}]}";
  /* 1.0 and -2.0 as little-endian FP16, then axis -1 as INT64. */
  static const unsigned char blobs[12] = { 0x00, 0x3c, 0x00, 0xc0, 0xff, 0xff,
                                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
  char body[512];
  size_t hl = sizeof hdr - 1;
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  uint16_t h[2];

  (void)state;
  memcpy(body, hdr, hl);
  memcpy(body + hl, blobs, sizeof blobs);
  info.op = RD_OP_L2;
  info.version = 0;
  assert_int_equal(api_v2_decode(body, hl + sizeof blobs, hl, 0, &req, &info,
                                 &err),
                   0);
  assert_int_equal(req.params.dtype, RD_FLOAT16);
  assert_int_equal(req.params.naxes, 1);
  assert_int_equal(req.axes[0], -1);
  assert_int_equal(req.data_bytes, 4);
  memcpy(h, req.data, 4);
  assert_int_equal(h[0], 0x3c00);
  assert_int_equal(h[1], 0xc000);
  assert_int_equal(info.data_blob, 1);
  assert_int_equal(info.axes_blob, 1);
  assert_int_equal(info.axes_first, 0);
  assert_int_equal(info.blob_total, 12);
  assert_int_equal(info.binary_output, 1);
  /* The data blob is not last: it cannot stream. */
  assert_int_equal(api_v2_streamable(&info), 0);
  api_request_free(&req);

  /* One byte short, one too many. */
  assert_int_equal(api_v2_decode(body, hl + sizeof blobs - 1, hl, 0, &req,
                                 &info, &err),
                   RD_E_STREAM);
  assert_non_null(strstr(err.msg, "add up to 12"));
  body[hl + sizeof blobs] = 0;
  assert_int_equal(api_v2_decode(body, hl + sizeof blobs + 1, hl, 0, &req,
                                 &info, &err),
                   RD_E_STREAM);
  /* A header length beyond the body. */
  assert_int_equal(api_v2_decode(body, 10, 11, 0, &req, &info, &err),
                   API_E_INVALID_FIELD);
  assert_null(req.data);
}

static void test_decode_binary_size_mismatch(void **state)
{
  static const char hdr[] =
    "{\"inputs\":[{\"name\":\"data\",\"shape\":[2,3],\"datatype\":\"FP32\","
    "\"parameters\":{\"binary_data_size\":20}}]}";
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;

  (void)state;
  info.op = RD_OP_L2;
  info.version = 0;
  assert_int_equal(api_v2_decode_header(hdr, sizeof hdr - 1, 1, 0, &req, &info,
                                        &err),
                   RD_E_STREAM);
  assert_non_null(strstr(err.msg, "binary_data_size is 20 but shape and "
                                  "datatype FP32 need 24 bytes"));
}

static void test_streamable_and_set_axes(void **state)
{
  static const char hdr[] =
    "{\"inputs\":[{\"name\":\"axes\",\"shape\":[2],\"datatype\":\"INT64\","
    "\"parameters\":{\"binary_data_size\":16}},{\"name\":\"data\",\"shape\":"
    "[2,2],\"datatype\":\"INT32\",\"parameters\":{\"binary_data_size\":16}}]}";
  static const unsigned char axes[16] = { 1, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0, 0, 0, 0, 0, 0, 0 };
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;

  (void)state;
  info.op = RD_OP_SUM_SQUARE;
  info.version = 18;
  assert_int_equal(api_v2_decode_header(hdr, sizeof hdr - 1, 1, 0, &req, &info,
                                        &err),
                   0);
  assert_int_equal(api_v2_streamable(&info), 1);
  assert_int_equal(info.axes_first, 1);
  assert_int_equal(info.blob_total, 32);
  assert_null(req.data);
  assert_int_equal(api_v2_set_axes(&req, &info, axes, &err), 0);
  assert_int_equal(req.axes[0], 1);
  assert_int_equal(req.axes[1], 0);
}

/* ------------------------------------------------------------------ */
/* Encoding                                                           */
/* ------------------------------------------------------------------ */

static void plan_of(struct rd_plan *plan, int op, int dtype, size_t rank,
                    const int64_t *shape, size_t naxes, const int64_t *axes,
                    int keepdims)
{
  struct rd_params p;
  struct rd_error err;

  rd_params_init(&p);
  p.op = op;
  p.dtype = dtype;
  p.rank = rank;
  p.shape = shape;
  p.naxes = naxes;
  p.axes = axes;
  p.keepdims = keepdims;
  assert_int_equal(rd_plan_init(plan, &p, &err), 0);
}

/* The OIP's response example, adapted: id echoed, one output. */
static void test_encode_result_json(void **state)
{
  static const int64_t shape[2] = { 3, 2 }, axes[1] = { 1 };
  static const float out[3] = { 2.236068f, 5.0f, 7.81025f };
  struct api_v2_info info;
  struct rd_plan plan;
  struct api_buf b;
  size_t jl = 0;

  (void)state;
  plan_of(&plan, RD_OP_L2, RD_FLOAT32, 2, shape, 1, axes, 0);
  memset(&info, 0, sizeof info);
  info.has_id = 1;
  strcpy(info.id, "42\"x");
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_result(&info, &plan, out, &b, &jl), 0);
  assert_string_equal(
    b.data,
    "{\"model_name\":\"ReduceL2\",\"model_version\":\"18\",\"id\":"
    "\"42\\\"x\",\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"FP32\","
    "\"shape\":[3],\"data\":[2.236068,5,7.81025]}]}");
  assert_int_equal(jl, b.len);
  api_buf_free(&b);
}

static void test_encode_result_binary(void **state)
{
  static const int64_t shape[1] = { 2 };
  /* 30 as BF16 is 0x41f0. */
  static const uint16_t out[1] = { 0x41f0 };
  static const char json[] =
    "{\"model_name\":\"ReduceSumSquare\",\"model_version\":\"18\","
    "\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"BF16\",\"shape\":[],"
    "\"parameters\":{\"binary_data_size\":2}}]}";
  struct api_v2_info info;
  struct rd_plan plan;
  struct api_buf b;
  size_t jl = 0;

  (void)state;
  plan_of(&plan, RD_OP_SUM_SQUARE, RD_BFLOAT16, 1, shape, 0, NULL, 0);
  memset(&info, 0, sizeof info);
  info.binary_output = 1;
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_result(&info, &plan, out, &b, &jl), 0);
  assert_int_equal(jl, sizeof json - 1);
  assert_int_equal(b.len, jl + 2);
  assert_memory_equal(b.data, json, jl);
  assert_int_equal((unsigned char)b.data[jl], 0xf0);
  assert_int_equal((unsigned char)b.data[jl + 1], 0x41);
  api_buf_free(&b);
}

static void test_encode_error_and_meta(void **state)
{
  struct rd_error err;
  struct api_buf b;

  (void)state;
  err.code = RD_E_AXIS_RANGE;
  snprintf(err.msg, sizeof err.msg, "axis 3 is out of range [-3, 2]");
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_error(&err, &b), 0);
  assert_string_equal(b.data, "{\"error\":\"AXIS_OUT_OF_RANGE: axis 3 is out "
                              "of range [-3, 2]\"}");
  api_buf_free(&b);

  api_buf_init(&b);
  assert_int_equal(api_v2_encode_server_meta("1.2.3", &b), 0);
  assert_string_equal(b.data, "{\"name\":\"reduced\",\"version\":\"1.2.3\","
                              "\"extensions\":[\"binary_tensor_data\"]}");
  api_buf_free(&b);

  api_buf_init(&b);
  assert_int_equal(api_v2_encode_model_ready(RD_OP_L2, &b), 0);
  assert_string_equal(b.data, "{\"name\":\"ReduceL2\",\"ready\":true}");
  api_buf_free(&b);

  /* Version 11: no axes input, no BF16. */
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_model_meta(RD_OP_L2, 11, &b), 0);
  assert_string_equal(
    b.data,
    "{\"name\":\"ReduceL2\",\"versions\":[\"1\",\"11\",\"13\",\"18\"],"
    "\"platform\":\"onnx_reduce\",\"inputs\":[{\"name\":\"data\","
    "\"datatype\":\"FP32\",\"shape\":[-1],\"datatypes\":[\"FP32\",\"FP64\","
    "\"FP16\",\"INT32\",\"INT64\",\"UINT32\",\"UINT64\"]}],\"outputs\":[{"
    "\"name\":\"reduced\",\"datatype\":\"FP32\",\"shape\":[-1],"
    "\"datatypes\":[\"FP32\",\"FP64\",\"FP16\",\"INT32\",\"INT64\","
    "\"UINT32\",\"UINT64\"]}]}");
  api_buf_free(&b);

  /* Default (18): the optional axes input. */
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_model_meta(RD_OP_SUM_SQUARE, 0, &b), 0);
  assert_non_null(strstr(b.data, "{\"name\":\"axes\",\"datatype\":\"INT64\","
                                 "\"shape\":[-1],\"datatypes\":[\"INT64\"],"
                                 "\"optional\":true}"));
  assert_non_null(strstr(b.data, "\"BF16\""));
  api_buf_free(&b);
}

static void test_datatype_names(void **state)
{
  static const struct {
    const char *n;
    int d;
  } t[] = {
    { "FP32", RD_FLOAT32 },  { "FP64", RD_FLOAT64 },  { "FP16", RD_FLOAT16 },
    { "BF16", RD_BFLOAT16 }, { "INT32", RD_INT32 },   { "INT64", RD_INT64 },
    { "UINT32", RD_UINT32 }, { "UINT64", RD_UINT64 }, { "INT8", RD_INT8 },
    { "UINT8", RD_UINT8 },   { "INT16", RD_INT16 },   { "UINT16", RD_UINT16 },
    { "BOOL", RD_BOOL },
  };
  int d;

  (void)state;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    assert_string_equal(api_v2_datatype_name(t[i].d), t[i].n);
    assert_int_equal(api_v2_datatype_parse(t[i].n, &d), 0);
    assert_int_equal(d, t[i].d);
  }
  assert_int_equal(api_v2_datatype_parse("bool", &d), RD_E_DTYPE);
  assert_int_equal(api_v2_datatype_parse("INT4", &d), RD_E_DTYPE);
  assert_int_equal(api_v2_datatype_parse("BYTES", &d), RD_E_DTYPE);
  assert_null(api_v2_datatype_name(0));
}

/* ------------------------------------------------------------------ */
/* The twelve operators (issue 11)                                    */
/* ------------------------------------------------------------------ */

/* Decoding `json` for `op` at `version` fails with `code` and `sub`. */
static void expect_fail_op(const char *json, int op, int version, int code,
                           const char *sub)
{
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  int rc = decode(json, op, version, &req, &info, &err);

  if (rc != code || strstr(err.msg, sub) == NULL)
    print_error("%s\n  got %s \"%s\"\n  want %s with \"%s\"\n", json,
                api_errname(rc), err.msg, api_errname(code), sub);
  assert_int_equal(rc, code);
  assert_non_null(strstr(err.msg, sub));
  assert_null(req.data);
  api_request_free(&req);
}

static void test_decode_ops(void **state)
{
  static const char d3[] =
    "{\"name\":\"data\",\"shape\":[3],\"datatype\":\"FP32\",\"data\":[1,2,3]}";
  static const char ax[] =
    "{\"name\":\"axes\",\"shape\":[1],\"datatype\":\"INT64\",\"data\":[0]}";
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  char body[512];

  (void)state;
  /* no version: the op's newest (ReduceMax 20, ReduceSum 13, ArgMax 13) */
  snprintf(body, sizeof body, "{\"inputs\":[%s]}", d3);
  assert_int_equal(decode(body, RD_OP_MAX, 0, &req, &info, &err), 0);
  assert_int_equal(req.params.opset, 20);
  assert_int_equal(req.params.op, RD_OP_MAX);
  api_request_free(&req);
  assert_int_equal(decode(body, RD_OP_SUM, 0, &req, &info, &err), 0);
  assert_int_equal(req.params.opset, 13);
  api_request_free(&req);
  assert_int_equal(decode(body, RD_OP_ARGMAX, 0, &req, &info, &err), 0);
  assert_int_equal(req.params.opset, 13);
  api_request_free(&req);
  assert_int_equal(decode(body, RD_OP_MEAN, 11, &req, &info, &err), 0);
  assert_int_equal(req.params.opset, 11);
  api_request_free(&req);

  /* the axes input from the axes-input version: ReduceSum 13, others 18 */
  snprintf(body, sizeof body, "{\"inputs\":[%s,%s]}", d3, ax);
  assert_int_equal(decode(body, RD_OP_SUM, 13, &req, &info, &err), 0);
  assert_int_equal(req.params.naxes, 1);
  assert_int_equal(req.axes[0], 0);
  api_request_free(&req);
  assert_int_equal(decode(body, RD_OP_MAX, 20, &req, &info, &err), 0);
  assert_int_equal(req.params.naxes, 1);
  api_request_free(&req);
  expect_fail_op(body, RD_OP_SUM, 11, API_E_UNKNOWN_FIELD,
                 "input \"axes\" "
                 "exists from version 13 of ReduceSum; at version 11 use "
                 "parameters.axes");
  expect_fail_op(body, RD_OP_MAX, 13, API_E_UNKNOWN_FIELD,
                 "from version 18 "
                 "of ReduceMax");
  expect_fail_op(body, RD_OP_ARGMAX, 13, RD_E_ATTRIBUTE,
                 "input \"axes\" is "
                 "not taken by ArgMax");
  /* parameters.axes below it */
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":{\"axes\":"
           "[0]}}",
           d3);
  assert_int_equal(decode(body, RD_OP_SUM, 11, &req, &info, &err), 0);
  assert_int_equal(req.params.naxes, 1);
  api_request_free(&req);
  assert_int_equal(decode(body, RD_OP_PROD, 13, &req, &info, &err), 0);
  assert_int_equal(req.params.naxes, 1);
  api_request_free(&req);
  expect_fail_op(body, RD_OP_SUM, 13, API_E_INVALID_FIELD,
                 "parameters.axes "
                 "is for versions below 13; at version 13 axes is the input");
  expect_fail_op(body, RD_OP_ARGMIN, 12, RD_E_ATTRIBUTE,
                 "parameters.axes is "
                 "not an attribute of ArgMin");

  /* ArgMax/ArgMin: axis and select_last_index */
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":{\"axis\":-1,"
           "\"select_last_index\":true,\"keepdims\":0}}",
           d3);
  assert_int_equal(decode(body, RD_OP_ARGMIN, 12, &req, &info, &err), 0);
  assert_int_equal(req.params.axis, -1);
  assert_int_equal(req.params.select_last_index, 1);
  assert_int_equal(req.params.keepdims, 0);
  api_request_free(&req);
  expect_fail_op(body, RD_OP_MIN, 18, RD_E_ATTRIBUTE,
                 "parameters.axis is "
                 "not an attribute of ReduceMin");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":"
           "{\"select_last_index\":0}}",
           d3);
  expect_fail_op(body, RD_OP_L1, 18, RD_E_ATTRIBUTE,
                 "parameters.select_last_index is not an attribute of "
                 "ReduceL1");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":"
           "{\"noop_with_empty_axes\":1}}",
           d3);
  expect_fail_op(body, RD_OP_ARGMAX, 13, RD_E_ATTRIBUTE,
                 "parameters.noop_with_empty_axes is not an attribute of "
                 "ArgMax");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":"
           "{\"axis\":\"0\"}}",
           d3);
  expect_fail_op(body, RD_OP_ARGMAX, 13, API_E_INVALID_FIELD,
                 "parameters.axis must be an integer, got a string");
  snprintf(body, sizeof body,
           "{\"inputs\":[%s],\"parameters\":"
           "{\"axis\":false}}",
           d3);
  expect_fail_op(body, RD_OP_ARGMAX, 13, API_E_INVALID_FIELD,
                 "parameters.axis must be an integer, got false");

  /* the new datatypes, JSON data */
  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[2,2],"
                          "\"datatype\":\"BOOL\",\"data\":[[true,false],"
                          "[false,true]]}]}",
                          RD_OP_MAX, 20, &req, &info, &err),
                   0);
  assert_int_equal(req.params.dtype, RD_BOOL);
  assert_int_equal(req.data_bytes, 4);
  assert_memory_equal(req.data, "\x01\x00\x00\x01", 4);
  api_request_free(&req);
  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[3],"
                          "\"datatype\":\"INT8\",\"data\":[-128,0,127]}]}",
                          RD_OP_ARGMAX, 0, &req, &info, &err),
                   0);
  assert_int_equal(req.data_bytes, 3);
  assert_int_equal(((const int8_t *)req.data)[0], -128);
  assert_int_equal(((const int8_t *)req.data)[2], 127);
  api_request_free(&req);
  assert_int_equal(decode("{\"inputs\":[{\"name\":\"data\",\"shape\":[2],"
                          "\"datatype\":\"UINT16\",\"data\":[65535,1]}]}",
                          RD_OP_ARGMIN, 0, &req, &info, &err),
                   0);
  assert_int_equal(((const uint16_t *)req.data)[0], 65535);
  api_request_free(&req);
  expect_fail_op("{\"inputs\":[{\"name\":\"data\",\"shape\":[2],"
                 "\"datatype\":\"BOOL\",\"data\":[true,0]}]}",
                 RD_OP_MAX, 20, API_E_INVALID_ELEMENT,
                 "input \"data\": data[1] = 0 is not "
                 "true or false (datatype BOOL)");
  expect_fail_op("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],"
                 "\"datatype\":\"UINT8\",\"data\":[256]}]}",
                 RD_OP_MAX, 20, API_E_INVALID_ELEMENT,
                 "data[0] = 256 is out of range "
                 "[0, 255] (datatype UINT8)");
  expect_fail_op("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],"
                 "\"datatype\":\"INT16\",\"data\":[-32769]}]}",
                 RD_OP_ARGMAX, 0, API_E_INVALID_ELEMENT,
                 "out of range [-32768, 32767]");
  expect_fail_op("{\"inputs\":[{\"name\":\"data\",\"shape\":[1],"
                 "\"datatype\":\"INT4\",\"data\":[1]}]}",
                 RD_OP_MAX, 0, RD_E_DTYPE, "INT8, UINT8, INT16, UINT16, BOOL");
  /* a BOOL blob: one byte per element */
  {
    static const char hdr[] =
      "{\"inputs\":[{\"name\":\"data\",\"shape\":[3],"
      "\"datatype\":\"BOOL\",\"parameters\":{\"binary_data_size\":3}}]}";
    char bodyb[sizeof hdr + 3];
    memcpy(bodyb, hdr, sizeof hdr - 1);
    memcpy(bodyb + sizeof hdr - 1, "\x01\x00\x01", 3);
    memset(&info, 0, sizeof info);
    info.op = RD_OP_MIN;
    assert_int_equal(api_v2_decode(bodyb, sizeof hdr + 2, sizeof hdr - 1, 0,
                                   &req, &info, &err),
                     0);
    assert_int_equal(req.params.dtype, RD_BOOL);
    assert_int_equal(req.data_bytes, 3);
    assert_memory_equal(req.data, "\x01\x00\x01", 3);
    api_request_free(&req);
    /* a size that is not one byte per element */
    static const char hdr4[] =
      "{\"inputs\":[{\"name\":\"data\",\"shape\":"
      "[3],\"datatype\":\"BOOL\",\"parameters\":{\"binary_data_size\":4}}]}";
    memset(&info, 0, sizeof info);
    info.op = RD_OP_MIN;
    assert_int_equal(api_v2_decode_header(hdr4, sizeof hdr4 - 1, 1, 0, &req,
                                          &info, &err),
                     RD_E_STREAM);
    assert_non_null(strstr(err.msg, "binary_data_size is 4 but shape and "
                                    "datatype BOOL need 3 bytes"));
    api_request_free(&req);
  }
}

static void test_encode_ops(void **state)
{
  const int64_t idx[2] = { 3, 0 };
  const uint8_t flags[2] = { 0, 1 };
  struct api_v2_info info;
  struct rd_plan plan;
  struct api_buf b;
  size_t jl = 0;

  (void)state;
  memset(&info, 0, sizeof info);
  memset(&plan, 0, sizeof plan);
  plan.op = RD_OP_ARGMAX;
  plan.version = 13;
  plan.dtype = RD_UINT16;
  plan.elem_size = 2;
  plan.out_dtype = RD_INT64;
  plan.out_elem_size = 8;
  plan.out_rank = 1;
  plan.out_shape[0] = 2;
  plan.out_count = 2;
  plan.out_bytes = 16;
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_result(&info, &plan, idx, &b, &jl), 0);
  assert_string_equal(b.data,
                      "{\"model_name\":\"ArgMax\",\"model_version\":"
                      "\"13\",\"outputs\":[{\"name\":\"reduced\",\"datatype\":"
                      "\"INT64\",\"shape\":[2],\"data\":[3,0]}]}");
  api_buf_free(&b);
  info.binary_output = 1;
  assert_int_equal(api_v2_encode_result(&info, &plan, idx, &b, &jl), 0);
  assert_int_equal(b.len, jl + 16);
  assert_non_null(strstr(b.data, "\"datatype\":\"INT64\",\"shape\":[2],"
                                 "\"parameters\":{\"binary_data_size\":16}"));
  assert_memory_equal(b.data + jl, "\x03\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
  api_buf_free(&b);

  info.binary_output = 0;
  plan.op = RD_OP_MIN;
  plan.version = 20;
  plan.dtype = plan.out_dtype = RD_BOOL;
  plan.elem_size = plan.out_elem_size = 1;
  plan.out_bytes = 2;
  assert_int_equal(api_v2_encode_result(&info, &plan, flags, &b, &jl), 0);
  assert_string_equal(b.data,
                      "{\"model_name\":\"ReduceMin\",\"model_version\""
                      ":\"20\",\"outputs\":[{\"name\":\"reduced\",\"datatype\""
                      ":\"BOOL\",\"shape\":[2],\"data\":[false,true]}]}");
  api_buf_free(&b);
}

static void test_model_meta_ops(void **state)
{
  struct api_buf b;

  (void)state;
  /* ReduceMax, default version 20: every version listed; BOOL, INT8 and
   * UINT8 among the datatypes (the table's order); the axes input */
  api_buf_init(&b);
  assert_int_equal(api_v2_encode_model_meta(RD_OP_MAX, 0, &b), 0);
  assert_string_equal(
    b.data,
    "{\"name\":\"ReduceMax\",\"versions\":[\"1\",\"11\",\"12\",\"13\",\"18\","
    "\"20\"],\"platform\":\"onnx_reduce\",\"inputs\":[{\"name\":\"data\","
    "\"datatype\":\"FP32\",\"shape\":[-1],\"datatypes\":[\"FP32\",\"FP64\","
    "\"FP16\",\"BF16\",\"INT32\",\"INT64\",\"UINT32\",\"UINT64\",\"INT8\","
    "\"UINT8\",\"BOOL\"]},{\"name\":\"axes\",\"datatype\":\"INT64\","
    "\"shape\":[-1],\"datatypes\":[\"INT64\"],\"optional\":true}],"
    "\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"FP32\",\"shape\":[-1],"
    "\"datatypes\":[\"FP32\",\"FP64\",\"FP16\",\"BF16\",\"INT32\",\"INT64\","
    "\"UINT32\",\"UINT64\",\"INT8\",\"UINT8\",\"BOOL\"]}]}");
  api_buf_free(&b);
  /* ReduceMax 12: INT8/UINT8, no BF16 or BOOL, no axes input */
  assert_int_equal(api_v2_encode_model_meta(RD_OP_MAX, 12, &b), 0);
  assert_non_null(strstr(b.data,
                         "\"datatypes\":[\"FP32\",\"FP64\",\"FP16\","
                         "\"INT32\",\"INT64\",\"UINT32\",\"UINT64\",\"INT8\","
                         "\"UINT8\"]}],\"outputs\""));
  assert_null(strstr(b.data, "\"axes\""));
  api_buf_free(&b);
  /* ReduceSum 13 has the axes input; ReduceSum 11 not */
  assert_int_equal(api_v2_encode_model_meta(RD_OP_SUM, 13, &b), 0);
  assert_non_null(strstr(b.data, "\"versions\":[\"1\",\"11\",\"13\"]"));
  assert_non_null(strstr(b.data, "{\"name\":\"axes\""));
  api_buf_free(&b);
  assert_int_equal(api_v2_encode_model_meta(RD_OP_SUM, 11, &b), 0);
  assert_null(strstr(b.data, "\"axes\""));
  api_buf_free(&b);
  /* ArgMax: no axes input; its output is INT64 only */
  assert_int_equal(api_v2_encode_model_meta(RD_OP_ARGMAX, 0, &b), 0);
  assert_non_null(strstr(b.data, "\"versions\":[\"1\",\"11\",\"12\",\"13\"]"));
  assert_null(strstr(b.data, "\"axes\""));
  assert_non_null(strstr(b.data, "\"outputs\":[{\"name\":\"reduced\","
                                 "\"datatype\":\"INT64\",\"shape\":[-1],"
                                 "\"datatypes\":[\"INT64\"]}]}"));
  assert_non_null(strstr(b.data, "\"INT16\",\"UINT16\"]}],"));
  api_buf_free(&b);
  assert_int_equal(api_v2_encode_model_meta(0, 0, &b), RD_E_INVALID);
  assert_int_equal(api_v2_encode_model_meta(RD_OP_COUNT + 1, 0, &b),
                   RD_E_INVALID);
  api_buf_free(&b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_routes),
    cmocka_unit_test(test_decode_protocol_example),
    cmocka_unit_test(test_decode_nested_params_axes_input),
    cmocka_unit_test(test_decode_versions_and_16bit),
    cmocka_unit_test(test_decode_errors),
    cmocka_unit_test(test_decode_binary),
    cmocka_unit_test(test_decode_binary_size_mismatch),
    cmocka_unit_test(test_streamable_and_set_axes),
    cmocka_unit_test(test_encode_result_json),
    cmocka_unit_test(test_encode_result_binary),
    cmocka_unit_test(test_encode_error_and_meta),
    cmocka_unit_test(test_datatype_names),
    cmocka_unit_test(test_decode_ops),
    cmocka_unit_test(test_encode_ops),
    cmocka_unit_test(test_model_meta_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
