/* fuzz_oip.c - libFuzzer target: a gRPC request message through the
 * daemon's pipeline minus gRPC: api_oip_decode_infer() (the ModelInfer
 * decoder, protobuf-c's unpacking under it), rd_plan_init(), rd_execute()
 * and api_oip_encode_infer() (or api_oip_encode_error() for a refusal);
 * the same bytes as ModelReady/ModelMetadata and Health/Check requests.
 *
 * Checks beyond "no crash, no sanitizer report": decode and plan agree on
 * the input size, every error has a wire name and a 4xx/5xx status and a
 * gRPC status other than OK, and every answer unpacks as a
 * ModelInferResponse whose raw output has the plan's size.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oip.h"
#include "api/proto/inference.pb-c.h"

/* As JOB_MAX_EMPTY_OUTPUT: the fuzzer keeps allocations small. */
#define FZ_MAX_OUT_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(const struct rd_error *err)
{
  struct api_buf b;
  int status = api_http_status(err->code);

  if (err->code >= 0 || status < 400 || status > 599 ||
      strcmp(api_errname(err->code), "INTERNAL") == 0 ||
      api_oip_grpc_code(err->code) == API_GRPC_OK)
    __builtin_trap();
  api_buf_init(&b);
  if (api_oip_encode_error(err, &b) == 0 && b.len == 0)
    __builtin_trap();
  api_buf_free(&b);
}

static void check_answer(const struct rd_plan *plan, const struct api_buf *b)
{
  Inference__ModelInferResponse *r = inference__model_infer_response__unpack(
    NULL, b->len, (const uint8_t *)b->data);

  if (r == NULL || r->n_raw_output_contents != 1 ||
      r->raw_output_contents[0].len != plan->out_bytes || r->n_outputs != 1 ||
      r->outputs[0]->n_shape != plan->out_rank)
    __builtin_trap(); /* we produced an answer clients cannot read */
  inference__model_infer_response__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct api_request req;
  struct api_v2_info info;
  struct rd_plan plan;
  struct rd_error err;
  struct api_buf b;
  void *out;
  int rc, op, version;

  memset(&err, 0, sizeof err);
  if (api_oip_decode_model_ref(API_OIP_MODEL_METADATA, data, size, &op,
                               &version, &err) == 0) {
    api_buf_init(&b);
    if (api_oip_encode_model_meta(op, version, &b) != 0)
      __builtin_trap();
    api_buf_free(&b);
  }
  (void)api_oip_decode_health(data, size, &err);

  memset(&err, 0, sizeof err);
  memset(&info, 0, sizeof info);
  rc = api_oip_decode_infer(data, size, 0, &req, &info, &err);
  if (rc != 0) {
    check_error(&err);
    api_request_free(&req);
    return 0;
  }
  rc = rd_plan_init(&plan, &req.params, &err);
  if (rc != 0) {
    check_error(&err);
    api_request_free(&req);
    return 0;
  }
  if (plan.in_bytes != req.data_bytes)
    __builtin_trap(); /* decode and plan disagree on the input size */
  if (plan.out_bytes > FZ_MAX_OUT_BYTES) {
    api_request_free(&req);
    return 0;
  }
  out = malloc(plan.out_bytes > 0 ? plan.out_bytes : 1);
  if (out != NULL) {
    rc = rd_execute(&plan, req.data, out, &err);
    if (rc != 0) {
      check_error(&err);
    } else {
      api_buf_init(&b);
      if (api_oip_encode_infer(&info, &plan, out, &b) == 0)
        check_answer(&plan, &b);
      api_buf_free(&b);
    }
    free(out);
  }
  api_request_free(&req);
  return 0;
}
