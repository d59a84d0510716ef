/* proto.h - the daemon's two HTTP APIs, /v1 (reduced's own) and /v2 (the
 * Open Inference Protocol), as one table of what differs between them:
 * how a buffered body is decoded, how a result and an error are encoded,
 * which headers a 200 carries, and the bodies that must exist without an
 * allocation (out of memory) or are fixed (liveness, readiness).
 *
 * A request carries a `struct api_call`: its protocol and what that
 * protocol needs to know across the request's life.  The daemon calls
 * through call->proto and never asks which protocol it has.  Like the rest
 * of api/, thread-safe on distinct calls; no HTTP server code.
 */
#ifndef API_PROTO_H
#define API_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "binary.h"
#include "v2.h"

struct api_proto;

/* One request's protocol state. */
struct api_call {
  const struct api_proto *proto; /* &api_proto_v1 or &api_proto_v2 */
  struct api_accept accept;      /* v1: what the Accept header takes */
  size_t header_len;             /* v2: Inference-Header-Content-Length;
                                    * SIZE_MAX: none, the body is JSON */
  struct api_v2_info v2info;     /* v2: op and version from the route,
                                    * the rest from the body */
};

/* What a 200 needs beyond its body. */
struct api_reply {
  int fmt;                       /* enum api_format of the body */
  const char *dtype;             /* v1 binary: Tensor-Dtype */
  char shape[API_SHAPE_HDR_MAX]; /* v1 binary: Tensor-Shape */
  size_t json_len;               /* v2 binary: the JSON part's length */
};

/* Adds one response header; 0 or -1. */
typedef int (*api_header_cb)(void *arg, const char *name, const char *value);

struct api_proto {
  const char *name;       /* "v1", "v2" (logs) */
  int inline_ok;          /* a small JSON body may be decoded and
                                    * reduced on the loop thread */
  const char *live_body;  /* 200 of the liveness route */
  const char *ready_body; /* 200 of the readiness route */
  const char *nomem_body; /* 503 when no error body can be built */

  /* Appends the error body for err (code and message).  0 or RD_E_NOMEM. */
  int (*encode_error)(const struct rd_error *err, struct api_buf *b);

  /* Before the body: can a result of `dtype` be answered?  0 or
   * NOT_ACCEPTABLE (v1 by Accept; v2 answers JSON or binary as the
   * request's own "outputs" say). */
  int (*check_accept)(const struct api_call *c, int dtype,
                      struct rd_error *err);

  /* Decodes a whole buffered body into `req` (and, v2, c->v2info). */
  int (*decode)(struct api_call *c, const char *body, size_t len,
                uint64_t max_elements, struct api_request *req,
                struct rd_error *err);

  /* Appends the 200 body for `out` (plan->out_bytes in host order, in
   * Fortran order when `fortran`) and fills `reply`.  0 or an error
   * (b is then to be freed). */
  int (*encode_result)(const struct api_call *c, const struct rd_plan *plan,
                       int64_t opset, int fortran, const void *out,
                       struct api_buf *b, struct api_reply *reply,
                       struct rd_error *err);

  /* The headers of a 200 besides Content-Type (binary bodies' shape and
   * dtype, or the JSON part's length).  0 or what `add` returned. */
  int (*reply_headers)(const struct api_reply *reply, api_header_cb add,
                       void *arg);
};

extern const struct api_proto api_proto_v1;
extern const struct api_proto api_proto_v2;

/* The Content-Type of a 200 (`reply->fmt`). */
const char *api_reply_media_type(const struct api_reply *reply);

#endif /* API_PROTO_H */
