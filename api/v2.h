/* v2.h - the KServe v2 / Open Inference Protocol (REST) wire format, with
 * Triton's binary tensor data extension (docs/http-api.md, "/v2").  Pure
 * functions on caller-owned objects: no HTTP, no threads (thread-safe on
 * distinct objects).
 *
 * Models are the operators ("ReduceL2", ..., "ArgMin"); a model version is
 * an operator version (ReduceMax: 1, 11, 12, 13, 18, 20; none given: the
 * newest).  Inputs: "data" (the version's dtypes) and, from the operator's
 * axes-input version (ReduceSum 13, the other Reduce ops 18), "axes"
 * (INT64); below it axes are the request parameter "axes" (a list).
 * ArgMax/ArgMin take parameters.axis and parameters.select_last_index and
 * answer INT64.  Request parameters: keepdims, noop_with_empty_axes,
 * overflow, axes, axis, select_last_index, binary_data_output.  The one
 * output is "reduced".
 *
 * Binary extension: a body is a JSON header of Inference-Header-Content-
 * Length bytes, then the blobs of the inputs that carry
 * parameters.binary_data_size, in input order, little-endian, unpadded.
 */
#ifndef API_V2_H
#define API_V2_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "buf.h"
#include "reduce.h"

/* Longest request id echoed (bytes of UTF-8). */
#define API_V2_ID_MAX 256

/* What the routes of /v2 are. */
enum api_v2_kind {
  API_V2_SERVER_META = 1, /* GET /v2 */
  API_V2_LIVE,            /* GET /v2/health/live */
  API_V2_READY,           /* GET /v2/health/ready */
  API_V2_MODEL_META,      /* GET /v2/models/M[/versions/V] */
  API_V2_MODEL_READY,     /* GET /v2/models/M[/versions/V]/ready */
  API_V2_INFER            /* POST /v2/models/M[/versions/V]/infer */
};

struct api_v2_route {
  int kind;    /* enum api_v2_kind */
  int op;      /* enum rd_op (model routes) */
  int version; /* operator version; 0: not in the path */
};

/* Parses a decoded request path that starts with "/v2".  0 and `rt`, or:
 * API_E_NOT_FOUND for a path that is no route, an unknown model, or a
 * well-formed version the model does not have (message lists the models or
 * versions); API_E_INVALID_FIELD for a version that is not a decimal
 * number without sign or leading zero ("01", "x", ""). */
int api_v2_route_parse(const char *path, struct api_v2_route *rt,
                       struct rd_error *err);

/* What an infer request says beyond the reduction itself. */
struct api_v2_info {
  /* Set by the caller before decoding (from the route). */
  int op;      /* enum rd_op */
  int version; /* 0: none given (the op's newest) */
  /* Filled by the decoders. */
  int has_id;
  char id[API_V2_ID_MAX + 1];
  int binary_output;  /* answer "reduced" as a blob */
  int data_blob;      /* "data" comes as a blob */
  int axes_blob;      /* "axes" comes as a blob */
  int axes_first;     /* the axes blob precedes the data blob */
  uint64_t data_size; /* their binary_data_size */
  uint64_t axes_size;
  uint64_t blob_total; /* sum of every binary_data_size */
};

/* Decodes the JSON part of an infer request (`len` bytes of `json`) into
 * `req` (params incl. op and opset from `info`, shape, axes and, when the
 * data is JSON, the elements as api_json_decode() converts them) and the
 * rest of `info`.  `blobs`: the body has a binary part (Inference-Header-
 * Content-Length was given); without it binary_data_size is an error.
 * Blob sizes are checked against the shapes; the blobs themselves are not
 * read (the data blob: api_v2_decode() or a stream; an axes blob:
 * api_v2_set_axes()).  `max_elements` bounds JSON data as in
 * api_json_decode.  Like that function, it leaves to rd_plan_init() what
 * the plan checks.  On error nothing needs freeing. */
int api_v2_decode_header(const char *json, size_t len, int blobs,
                         uint64_t max_elements, struct api_request *req,
                         struct api_v2_info *info, struct rd_error *err);

/* Sets the axes of `req` from the little-endian INT64 blob of the "axes"
 * input (info->axes_size bytes at `p`). 0 or an error. */
int api_v2_set_axes(struct api_request *req, const struct api_v2_info *info,
                    const void *p, struct rd_error *err);

/* 1 when the data blob can be streamed: it is the last blob and any axes
 * blob precedes it (then the bytes before the data are the header and the
 * axes blob). */
int api_v2_streamable(const struct api_v2_info *info);

/* Shared with gRPC (api/oip.c), not part of the interface: the newest
 * version of `op` (what a request without one takes); the first version
 * taking axes as an input (0: ArgMax/ArgMin); whether version `v` does;
 * "1, 11, 13, 18" and "ReduceL2, ReduceSumSquare, ..." for messages. */
int api__v2_newest_version(int op);
int api__v2_axes_input_version(int op);
int api__v2_has_axes_input(int op, int v);
void api__v2_list_versions(int op, char *out, size_t size);
void api__v2_list_models(char *out, size_t size);

/* Which inference input `name` is at version `v` of `op`: 0 "data", 1
 * "axes" (at the op's axes-input versions).  An "axes" input below them, an
 * "axes" input of ArgMax/ArgMin or another name is an error naming it.
 * Shared by /v2 over HTTP and gRPC. */
int api_v2_input_slot(const char *name, int op, int v, int *slot,
                      struct rd_error *err);

/* Decodes a whole body: `header_len` bytes of JSON (SIZE_MAX: no
 * Inference-Header-Content-Length, all of it is JSON), then the blobs,
 * which must add up to exactly the rest.  The data (JSON or blob) is
 * copied into req->data in host order. */
int api_v2_decode(const char *body, size_t len, size_t header_len,
                  uint64_t max_elements, struct api_request *req,
                  struct api_v2_info *info, struct rd_error *err);

/* Appends the 200 body: {"model_name":..,"model_version":"18","id":..,
 * "outputs":[{"name":"reduced","datatype":"FP32","shape":[..],"data":[..]}]}
 * (data as /v1 writes it), or with info->binary_output the output has
 * "parameters":{"binary_data_size":N} instead of data and the N
 * little-endian bytes follow the JSON; *json_len is then the JSON part's
 * length (for Inference-Header-Content-Length), else the whole length.
 * 0 or RD_E_NOMEM (b unchanged). */
int api_v2_encode_result(const struct api_v2_info *info,
                         const struct rd_plan *plan, const void *out,
                         struct api_buf *b, size_t *json_len);

/* Appends {"error":"CODE: message"}. 0 or RD_E_NOMEM. */
int api_v2_encode_error(const struct rd_error *err, struct api_buf *b);

/* GET /v2: {"name":"reduced","version":<version>,"extensions":
 * ["binary_tensor_data"]}. 0 or RD_E_NOMEM. */
int api_v2_encode_server_meta(const char *version, struct api_buf *b);

/* GET /v2/models/M[/versions/V] (version 0: the default, the newest):
 * name, versions, platform, inputs (data; axes from the axes-input
 * version), outputs (reduced: INT64 for ArgMax/ArgMin).  0, RD_E_INVALID
 * (unknown op) or RD_E_NOMEM. */
int api_v2_encode_model_meta(int op, int version, struct api_buf *b);

/* GET .../ready: {"name":M,"ready":true}. 0 or RD_E_NOMEM. */
int api_v2_encode_model_ready(int op, struct api_buf *b);

/* The protocol's datatype name of a dtype ("FP32"); NULL if none. */
const char *api_v2_datatype_name(int dtype);
/* Parses a datatype name (exact); 0 or RD_E_DTYPE. */
int api_v2_datatype_parse(const char *name, int *dtype);

#endif /* API_V2_H */
