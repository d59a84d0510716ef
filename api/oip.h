/* oip.h - the Open Inference Protocol over gRPC (KServe's
 * inference.GRPCInferenceService, api/proto/inference.proto) and the gRPC
 * health protocol (grpc.health.v1.Health/Check): protobuf messages in and
 * out, with protobuf-c.  No gRPC library here, no sockets, no threads: the
 * daemon (daemon/grpc.c) moves the bytes and calls these, so the decoder is
 * unit-tested and fuzzed alone.  Thread-safe on distinct objects.
 *
 * The protocol is /v2's (docs/http-api.md, api/v2.h) in protobuf: a model
 * is an operator, model_version an operator version ("" is the newest);
 * the inputs are "data" and, from the operator's axes-input version,
 * "axes" (INT64); the one output is "reduced", answered in
 * raw_output_contents (little-endian), as Triton answers.  Request
 * parameters are InferParameter values: keepdims, noop_with_empty_axes and
 * select_last_index (int64_param or bool_param), axis (int64_param),
 * overflow (string_param), and below the axes-input version axes
 * (int64_param for one axis, or string_param "0,2" / "[0, 2]" / "").
 * Input contents are typed (fp32_contents for FP32, fp64_contents, int_contents
 * for INT8/INT16/INT32, int64_contents, uint_contents for UINT8/UINT16/
 * UINT32, uint64_contents, bool_contents) or raw_input_contents, one entry
 * per input (the only form of FP16 and BF16).
 *
 * Errors are struct rd_error with the codes and messages of /v2; a gRPC
 * status code comes from api_oip_grpc_code() (or, for an HTTP status the
 * job layer produced, api_oip_grpc_code_of_status()).
 */
#ifndef API_OIP_H
#define API_OIP_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "buf.h"
#include "proto.h"
#include "reduce.h"
#include "v2.h"

/* The RPCs served; the value indexes api_oip_method_name(). */
enum api_oip_method {
  API_OIP_UNKNOWN = 0,
  API_OIP_SERVER_LIVE,
  API_OIP_SERVER_READY,
  API_OIP_MODEL_READY,
  API_OIP_SERVER_METADATA,
  API_OIP_MODEL_METADATA,
  API_OIP_MODEL_INFER,
  API_OIP_HEALTH_CHECK, /* grpc.health.v1.Health/Check */
  API_OIP_NMETHODS
};

/* gRPC status codes (the numbers of gRPC's doc/statuscodes.md). */
enum api_grpc_code {
  API_GRPC_OK = 0,
  API_GRPC_CANCELLED = 1,
  API_GRPC_UNKNOWN = 2,
  API_GRPC_INVALID_ARGUMENT = 3,
  API_GRPC_NOT_FOUND = 5,
  API_GRPC_RESOURCE_EXHAUSTED = 8,
  API_GRPC_UNIMPLEMENTED = 12,
  API_GRPC_INTERNAL = 13,
  API_GRPC_UNAVAILABLE = 14,
  API_GRPC_UNAUTHENTICATED = 16
};

/* Health/Check's ServingStatus values. */
enum api_oip_health { API_OIP_SERVING = 1, API_OIP_NOT_SERVING = 2 };

/* The method of a gRPC path ("/inference.GRPCInferenceService/ModelInfer",
 * `len` bytes, not NUL-terminated); API_OIP_UNKNOWN for any other. */
int api_oip_method(const char *path, size_t len);
/* "ModelInfer", "grpc.health.v1.Health/Check", ...; "unknown". */
const char *api_oip_method_name(int method);
/* The metric route label of a method: "grpc:ModelInfer", "grpc:Check". */
const char *api_oip_method_route(int method);

/* The gRPC status of an error code (library or API_E_*): INVALID_ARGUMENT
 * for the 400/422 class, NOT_FOUND, RESOURCE_EXHAUSTED (too large,
 * overloaded, out of memory), UNAUTHENTICATED, UNAVAILABLE (draining),
 * INTERNAL otherwise; OK for 0. */
int api_oip_grpc_code(int code);
/* The same from the HTTP status such a code maps to (api_http_status()):
 * what a finished job reports.  503 is RESOURCE_EXHAUSTED there (a job's
 * only 503 is out of memory; DRAINING is refused before any job). */
int api_oip_grpc_code_of_status(int http_status);

/* Resolves a model name and version text ("" or NULL: the newest) as /v2
 * does: 0 and *op, *version (0 when none was given), or API_E_NOT_FOUND
 * (unknown model, or a version it does not have; the message lists them)
 * or API_E_INVALID_FIELD (a version that is not a decimal number). */
int api_oip_model(const char *name, const char *version, int *op,
                  int *version_out, struct rd_error *err);

/* ModelInferRequest (`len` bytes at `msg`) into `req` (params, shape,
 * axes, and the data in host order, malloc'ed) and `info` (op, version as
 * given, id).  Everything rd_plan_init() checks is left to it.
 * `max_elements`: as api_json_decode() (0: none).  On error nothing needs
 * freeing (api_request_free() is still safe). */
int api_oip_decode_infer(const void *msg, size_t len, uint64_t max_elements,
                         struct api_request *req, struct api_v2_info *info,
                         struct rd_error *err);

/* Appends the ModelInferResponse of a result: model_name, model_version
 * (the plan's), id (if the request had one), output "reduced" with its
 * datatype and shape, its plan->out_bytes bytes of `out` (host order) in
 * raw_output_contents, little-endian.  0 or RD_E_NOMEM. */
int api_oip_encode_infer(const struct api_v2_info *info,
                         const struct rd_plan *plan, const void *out,
                         struct api_buf *b);

/* ModelReadyRequest / ModelMetadataRequest (same fields: name, version)
 * resolved with api_oip_model().  0 or an error (API_E_BAD_JSON for bytes
 * that are no such message: the "undecodable body" code of the API). */
int api_oip_decode_model_ref(int method, const void *msg, size_t len, int *op,
                             int *version, struct rd_error *err);

/* The messages of one bool field 1 (ServerLiveResponse.live,
 * ServerReadyResponse.ready, ModelReadyResponse.ready).  0 or RD_E_NOMEM. */
int api_oip_encode_flag(int value, struct api_buf *b);

/* ServerMetadataResponse: name "reduced", `version`, extensions (none over
 * gRPC: raw contents are the protocol's own). 0 or RD_E_NOMEM. */
int api_oip_encode_server_meta(const char *version, struct api_buf *b);

/* ModelMetadataResponse as /v2's model metadata: name, versions, platform
 * "onnx_reduce", inputs data (FP32 shown, shape [-1]) and, from the
 * axes-input version, axes (INT64); output reduced (INT64 for ArgMax and
 * ArgMin); properties "data_datatypes" (the version's datatypes, comma
 * separated) and "axes_optional".  Version 0: the newest.  0, RD_E_INVALID
 * (unknown op) or RD_E_NOMEM. */
int api_oip_encode_model_meta(int op, int version, struct api_buf *b);

/* HealthCheckRequest: 0 when its service is "" (the server) or
 * inference.GRPCInferenceService; API_E_NOT_FOUND for another service,
 * API_E_BAD_JSON for bytes that are no such message. */
int api_oip_decode_health(const void *msg, size_t len, struct rd_error *err);
/* HealthCheckResponse with `status` (enum api_oip_health). 0 or
 * RD_E_NOMEM. */
int api_oip_encode_health(int status, struct api_buf *b);

/* The status message of an error: "CODE: message" (/v2's error text).
 * 0 or RD_E_NOMEM. */
int api_oip_encode_error(const struct rd_error *err, struct api_buf *b);

/* The protocol table's row (proto.h) for ModelInfer over gRPC: the daemon
 * hands the message to a job like an HTTP body; the reply is the packed
 * ModelInferResponse, or the error text of api_oip_encode_error(). */
extern const struct api_proto api_proto_grpc;

#endif /* API_OIP_H */
