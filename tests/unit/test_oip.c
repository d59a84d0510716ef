/* test_oip.c - unit tests of api/oip (the Open Inference Protocol's gRPC
 * messages): method names, status codes, model resolution, ModelInfer
 * decoding (typed and raw contents, parameters, the axes input, errors),
 * the response and the metadata/health messages.  Requests are built with
 * the generated protobuf-c code; answers are unpacked with it.  Expected
 * values are worked out by hand.  Run under ASan for leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "oip.h"
#include "api/proto/health.pb-c.h"
#include "api/proto/inference.pb-c.h"

typedef Inference__ModelInferRequest Req;
typedef Inference__ModelInferRequest__InferInputTensor Input;
typedef Inference__ModelInferRequest__ParametersEntry Entry;

/* A request: model, one input "data" of `dt` and `shape`. */
struct built {
  Req r;
  Input in[2];
  Input *ins[2];
  Inference__InferTensorContents c[2];
  Entry e[4];
  Entry *es[4];
  Inference__InferParameter p[4];
  ProtobufCBinaryData raw[2];
  int64_t shape[2][4];
};

static void build(struct built *b, const char *model, const char *dt,
                  size_t rank, const int64_t *shape)
{
  static const Req r0 = INFERENCE__MODEL_INFER_REQUEST__INIT;
  static const Input i0 =
    INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
  static const Inference__InferTensorContents c0 =
    INFERENCE__INFER_TENSOR_CONTENTS__INIT;

  memset(b, 0, sizeof *b);
  b->r = r0;
  b->r.model_name = (char *)model;
  b->in[0] = i0;
  b->in[0].name = "data";
  b->in[0].datatype = (char *)dt;
  memcpy(b->shape[0], shape, rank * sizeof *shape);
  b->in[0].n_shape = rank;
  b->in[0].shape = b->shape[0];
  b->c[0] = c0;
  b->ins[0] = &b->in[0];
  b->r.n_inputs = 1;
  b->r.inputs = b->ins;
}

static void add_param(struct built *b, const char *key, int kind, int64_t i,
                      const char *s)
{
  static const Entry e0 =
    INFERENCE__MODEL_INFER_REQUEST__PARAMETERS_ENTRY__INIT;
  static const Inference__InferParameter p0 = INFERENCE__INFER_PARAMETER__INIT;
  size_t n = b->r.n_parameters;

  b->e[n] = e0;
  b->p[n] = p0;
  b->e[n].key = (char *)key;
  b->p[n].parameter_choice_case = kind;
  if (kind == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM)
    b->p[n].string_param = (char *)s;
  else if (kind == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM)
    b->p[n].bool_param = (protobuf_c_boolean)i;
  else
    b->p[n].int64_param = i;
  b->e[n].value = &b->p[n];
  b->es[n] = &b->e[n];
  b->r.parameters = b->es;
  b->r.n_parameters = n + 1;
}

/* Packs and decodes; returns the decoder's code. */
static int decode(struct built *b, struct api_request *req,
                  struct api_v2_info *info, struct rd_error *err)
{
  size_t n = inference__model_infer_request__get_packed_size(&b->r);
  uint8_t *p = malloc(n + 1);
  int rc;

  inference__model_infer_request__pack(&b->r, p);
  memset(info, 0, sizeof *info);
  memset(err, 0, sizeof *err);
  rc = api_oip_decode_infer(p, n, 0, req, info, err);
  free(p);
  return rc;
}

static void test_methods(void **state)
{
  static const char infer[] = "/inference.GRPCInferenceService/ModelInfer";
  static const char health[] = "/grpc.health.v1.Health/Check";

  (void)state;
  assert_int_equal(api_oip_method(infer, sizeof infer - 1),
                   API_OIP_MODEL_INFER);
  assert_int_equal(api_oip_method(health, sizeof health - 1),
                   API_OIP_HEALTH_CHECK);
  /* A prefix is not the method. */
  assert_int_equal(api_oip_method(infer, sizeof infer - 2), API_OIP_UNKNOWN);
  assert_string_equal(api_oip_method_route(API_OIP_MODEL_INFER),
                      "grpc:ModelInfer");
  assert_int_equal(api_oip_grpc_code(API_E_NOT_FOUND), API_GRPC_NOT_FOUND);
  assert_int_equal(api_oip_grpc_code(RD_E_OVERFLOW), API_GRPC_INVALID_ARGUMENT);
  assert_int_equal(api_oip_grpc_code(RD_E_TOO_LARGE),
                   API_GRPC_RESOURCE_EXHAUSTED);
  assert_int_equal(api_oip_grpc_code(API_E_OVERLOADED),
                   API_GRPC_RESOURCE_EXHAUSTED);
  assert_int_equal(api_oip_grpc_code(API_E_DRAINING), API_GRPC_UNAVAILABLE);
  assert_int_equal(api_oip_grpc_code(API_E_UNAUTHORIZED),
                   API_GRPC_UNAUTHENTICATED);
  assert_int_equal(api_oip_grpc_code_of_status(422), API_GRPC_INVALID_ARGUMENT);
}

static void test_model(void **state)
{
  struct rd_error err;
  int op, v;

  (void)state;
  assert_int_equal(api_oip_model("ReduceL2", "", &op, &v, &err), 0);
  assert_int_equal(op, RD_OP_L2);
  assert_int_equal(v, 0);
  assert_int_equal(api_oip_model("ReduceSumSquare", "13", &op, &v, &err), 0);
  assert_int_equal(v, 13);
  assert_int_equal(api_oip_model("ReduceL2", "12", &op, &v, &err),
                   API_E_NOT_FOUND);
  assert_non_null(strstr(err.msg, "1, 11, 13, 18"));
  assert_int_equal(api_oip_model("ReduceL2", "013", &op, &v, &err),
                   API_E_INVALID_FIELD);
  assert_int_equal(api_oip_model("reducel2", NULL, &op, &v, &err),
                   API_E_NOT_FOUND);
  assert_non_null(strstr(err.msg, "\"reducel2\""));
}

static void test_decode_typed_and_params(void **state)
{
  static const int64_t shape[] = { 2, 3 };
  float v[] = { 1, 2, 3, 4, 5, 6 };
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  struct built b;

  (void)state;
  build(&b, "ReduceSumSquare", "FP32", 2, shape);
  b.r.model_version = "13";
  b.r.id = "x-1";
  b.c[0].n_fp32_contents = 6;
  b.c[0].fp32_contents = v;
  b.in[0].contents = &b.c[0];
  add_param(&b, "axes",
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM, 0,
            "[1, -2]");
  add_param(&b, "keepdims",
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM, 0, NULL);
  add_param(&b, "overflow",
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM, 0,
            "saturate");
  assert_int_equal(decode(&b, &req, &info, &err), 0);
  assert_int_equal(req.params.op, RD_OP_SUM_SQUARE);
  assert_int_equal(req.params.opset, 13);
  assert_int_equal(info.version, 13);
  assert_true(info.has_id);
  assert_string_equal(info.id, "x-1");
  assert_int_equal(req.params.dtype, RD_FLOAT32);
  assert_int_equal(req.params.rank, 2);
  assert_int_equal(req.params.naxes, 2);
  assert_int_equal(req.axes[0], 1);
  assert_int_equal(req.axes[1], -2);
  assert_int_equal(req.params.keepdims, 0);
  assert_int_equal(req.params.overflow, RD_OVERFLOW_SATURATE);
  assert_int_equal(req.data_bytes, sizeof v);
  assert_memory_equal(req.data, v, sizeof v);
  api_request_free(&req);

  /* parameters.axes at version 18 is the input's job. */
  b.r.model_version = "";
  assert_int_equal(decode(&b, &req, &info, &err), API_E_INVALID_FIELD);
  assert_non_null(strstr(err.msg, "parameters.axes"));
}

static void test_decode_raw_and_axes_input(void **state)
{
  static const int64_t shape[] = { 2, 2 }, ashape[] = { 1 };
  /* FP16 1, 2, 3, 4 little-endian. */
  static const uint8_t half[] = {
    0x00, 0x3c, 0x00, 0x40, 0x00, 0x42, 0x00, 0x44
  };
  static const uint8_t axes[] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
  }; /* INT64 -1 */
  static const Input i0 =
    INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  struct built b;
  uint16_t h0;

  (void)state;
  build(&b, "ReduceL2", "FP16", 2, shape);
  b.in[1] = i0;
  b.in[1].name = "axes";
  b.in[1].datatype = "INT64";
  b.in[1].n_shape = 1;
  b.in[1].shape = (int64_t *)ashape;
  b.ins[1] = &b.in[1];
  b.r.n_inputs = 2;
  b.raw[0].data = (uint8_t *)half;
  b.raw[0].len = sizeof half;
  b.raw[1].data = (uint8_t *)axes;
  b.raw[1].len = sizeof axes;
  b.r.raw_input_contents = b.raw;
  b.r.n_raw_input_contents = 2;
  assert_int_equal(decode(&b, &req, &info, &err), 0);
  assert_int_equal(req.params.dtype, RD_FLOAT16);
  assert_int_equal(req.params.naxes, 1);
  assert_int_equal(req.axes[0], -1);
  memcpy(&h0, req.data, 2);
  assert_int_equal(h0, 0x3c00);
  api_request_free(&req);

  /* One raw entry for two inputs. */
  b.r.n_raw_input_contents = 1;
  assert_int_equal(decode(&b, &req, &info, &err), API_E_INVALID_FIELD);
  assert_non_null(strstr(err.msg, "raw_input_contents has 1 entries for 2"));
  /* A byte short. */
  b.r.n_raw_input_contents = 2;
  b.raw[0].len = sizeof half - 1;
  assert_int_equal(decode(&b, &req, &info, &err), API_E_SHAPE_MISMATCH);
  assert_non_null(strstr(err.msg, "has 7 bytes"));
  /* FP16 cannot be typed. */
  b.r.n_raw_input_contents = 0;
  b.r.n_inputs = 1;
  assert_int_equal(decode(&b, &req, &info, &err), API_E_INVALID_FIELD);
  assert_non_null(strstr(err.msg, "raw_input_contents"));
}

static void test_decode_errors(void **state)
{
  static const int64_t shape[] = { 3 }, neg[] = { -1 };
  int32_t iv[] = { 1, 2, 3 };
  double dv[] = { 1, 2, 3 };
  struct api_request req;
  struct api_v2_info info;
  struct rd_error err;
  struct built b;

  (void)state;
  build(&b, "ReduceL2", "INT32", 1, shape);
  b.c[0].n_int_contents = 2;
  b.c[0].int_contents = iv;
  b.in[0].contents = &b.c[0];
  assert_int_equal(decode(&b, &req, &info, &err), API_E_SHAPE_MISMATCH);
  b.c[0].n_int_contents = 3;
  b.c[0].n_fp64_contents = 3;
  b.c[0].fp64_contents = dv;
  assert_int_equal(decode(&b, &req, &info, &err), API_E_INVALID_FIELD);
  assert_non_null(strstr(err.msg, "int_contents"));
  b.c[0].n_fp64_contents = 0;
  add_param(&b, "axis",
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM, 0, NULL);
  assert_int_equal(decode(&b, &req, &info, &err), RD_E_ATTRIBUTE);
  b.r.n_parameters = 0;
  add_param(&b, "keepdims",
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM, 0, "1");
  assert_int_equal(decode(&b, &req, &info, &err), API_E_INVALID_FIELD);
  assert_non_null(strstr(err.msg, "string_param"));
  b.r.n_parameters = 0;
  add_param(&b, "frobnicate",
            INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM, 1, NULL);
  assert_int_equal(decode(&b, &req, &info, &err), API_E_UNKNOWN_FIELD);
  b.r.n_parameters = 0;
  b.in[0].shape = (int64_t *)neg;
  assert_int_equal(decode(&b, &req, &info, &err), RD_E_DIM);
  b.in[0].shape = b.shape[0];
  b.in[0].name = "input";
  assert_int_equal(decode(&b, &req, &info, &err), API_E_UNKNOWN_FIELD);
  b.in[0].name = "data";
  b.r.model_name = "Nope";
  assert_int_equal(decode(&b, &req, &info, &err), API_E_NOT_FOUND);
  /* Bytes that are no message. */
  assert_int_equal(api_oip_decode_infer("\xff\xff\xff", 3, 0, &req, &info,
                                        &err),
                   API_E_BAD_JSON);
}

static void test_encode(void **state)
{
  struct rd_params p;
  struct rd_plan plan;
  struct rd_error err;
  struct api_v2_info info;
  struct api_buf b;
  int64_t shape[] = { 2, 2 }, axes[] = { 1 };
  float out[] = { 5.0f, 25.0f };
  Inference__ModelInferResponse *r;
  Inference__ModelMetadataResponse *mm;
  Grpc__Health__V1__HealthCheckResponse *hr;

  (void)state;
  rd_params_init(&p);
  p.op = RD_OP_SUM_SQUARE;
  p.dtype = RD_FLOAT32;
  p.rank = 2;
  p.shape = shape;
  p.axes = axes;
  p.naxes = 1;
  p.keepdims = 0;
  assert_int_equal(rd_plan_init(&plan, &p, &err), 0);
  memset(&info, 0, sizeof info);
  info.has_id = 1;
  strcpy(info.id, "abc");
  api_buf_init(&b);
  assert_int_equal(api_oip_encode_infer(&info, &plan, out, &b), 0);
  r = inference__model_infer_response__unpack(NULL, b.len, (uint8_t *)b.data);
  assert_non_null(r);
  assert_string_equal(r->model_name, "ReduceSumSquare");
  assert_string_equal(r->model_version, "18");
  assert_string_equal(r->id, "abc");
  assert_int_equal(r->n_outputs, 1);
  assert_string_equal(r->outputs[0]->name, "reduced");
  assert_string_equal(r->outputs[0]->datatype, "FP32");
  assert_int_equal(r->outputs[0]->n_shape, 1);
  assert_int_equal(r->outputs[0]->shape[0], 2);
  assert_int_equal(r->n_raw_output_contents, 1);
  /* 5.0f = 0x40a00000, 25.0f = 0x41c80000, little-endian. */
  assert_memory_equal(r->raw_output_contents[0].data,
                      "\x00\x00\xa0\x40\x00\x00\xc8\x41", 8);
  inference__model_infer_response__free_unpacked(r, NULL);
  api_buf_free(&b);

  assert_int_equal(api_oip_encode_model_meta(RD_OP_L2, 13, &b), 0);
  mm = inference__model_metadata_response__unpack(NULL, b.len,
                                                  (uint8_t *)b.data);
  assert_non_null(mm);
  assert_string_equal(mm->name, "ReduceL2");
  assert_int_equal(mm->n_versions, 4);
  assert_string_equal(mm->versions[3], "18");
  assert_int_equal(mm->n_inputs, 1); /* no axes input at 13 */
  assert_string_equal(mm->properties[0]->key, "data_datatypes");
  assert_non_null(strstr(mm->properties[0]->value, "BF16"));
  inference__model_metadata_response__free_unpacked(mm, NULL);
  api_buf_free(&b);

  assert_int_equal(api_oip_encode_health(API_OIP_NOT_SERVING, &b), 0);
  hr = grpc__health__v1__health_check_response__unpack(NULL, b.len,
                                                       (uint8_t *)b.data);
  assert_non_null(hr);
  assert_int_equal(hr->status, 2);
  grpc__health__v1__health_check_response__free_unpacked(hr, NULL);
  api_buf_free(&b);

  /* ServerLiveResponse{live: true} is 08 01. */
  assert_int_equal(api_oip_encode_flag(1, &b), 0);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, "\x08\x01", 2);
  api_buf_free(&b);
  assert_int_equal(api_oip_decode_health("\x0a\x03xyz", 5, &err),
                   API_E_NOT_FOUND);
  assert_int_equal(api_oip_decode_health("", 0, &err), 0);
  err.code = RD_E_AXIS_RANGE;
  strcpy(err.msg, "axis 5");
  assert_int_equal(api_oip_encode_error(&err, &b), 0);
  assert_string_equal(b.data, "AXIS_OUT_OF_RANGE: axis 5");
  api_buf_free(&b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_methods),
    cmocka_unit_test(test_model),
    cmocka_unit_test(test_decode_typed_and_params),
    cmocka_unit_test(test_decode_raw_and_axes_input),
    cmocka_unit_test(test_decode_errors),
    cmocka_unit_test(test_encode),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
