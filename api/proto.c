/* proto.c - the /v1 and /v2 rows of the protocol table (proto.h). */
#include <stdio.h>
#include <stdlib.h>

#include "proto.h"

/* ------------------------------------------------------------------ */
/* /v1                                                                */
/* ------------------------------------------------------------------ */

static int v1_check_accept(const struct api_call *c, int dtype,
                           struct rd_error *err)
{
  int fmt;

  return api_accept_pick(&c->accept, dtype, &fmt, err);
}

static int v1_decode(struct api_call *c, const char *body, size_t len,
                     uint64_t max_elements, struct api_request *req,
                     struct rd_error *err)
{
  (void)c;
  return api_json_decode(body, len, max_elements, req, err);
}

/* The format Accept picks; a Fortran-order output is reordered to C order
 * first (the plan ran over the reversed shape). */
static int v1_encode_result(const struct api_call *c,
                            const struct rd_plan *plan, int64_t opset,
                            int fortran, const void *out, struct api_buf *b,
                            struct api_reply *reply, struct rd_error *err)
{
  void *c_order = NULL;
  int rc, fmt;

  /* The answer is of the output dtype (int64 for ArgMax/ArgMin). */
  rc = api_accept_pick(&c->accept, plan->out_dtype, &fmt, err);
  if (rc != 0)
    return rc;
  if (fortran && plan->out_rank > 1 && plan->out_count > 1) {
    c_order = malloc((size_t)plan->out_bytes);
    if (c_order == NULL)
      return api_fail(err, RD_E_NOMEM, "out of memory");
    api_fortran_to_c(out, c_order, plan->out_rank, plan->out_shape,
                     plan->out_elem_size);
    out = c_order;
  }
  rc = api_encode_result(fmt, plan, opset, out, b, err);
  free(c_order);
  if (rc != 0)
    return rc;
  reply->fmt = fmt;
  reply->dtype = rd_dtype_name(plan->out_dtype);
  api_shape_header(plan, reply->shape);
  return 0;
}

static int v1_reply_headers(const struct api_reply *reply, api_header_cb add,
                            void *arg)
{
  int rc;

  if (reply->fmt == API_FMT_JSON)
    return 0;
  rc = add(arg, "Tensor-Dtype", reply->dtype);
  return rc != 0 ? rc : add(arg, "Tensor-Shape", reply->shape);
}

const struct api_proto api_proto_v1 = {
  .name = "v1",
  .inline_ok = 1,
  .live_body = "{\"status\":\"ok\"}",
  .ready_body = "{\"status\":\"ready\"}",
  .nomem_body =
    "{\"error\":{\"code\":\"OUT_OF_MEMORY\",\"message\":\"out of memory\"}}",
  .encode_error = api_json_encode_error,
  .check_accept = v1_check_accept,
  .decode = v1_decode,
  .encode_result = v1_encode_result,
  .reply_headers = v1_reply_headers,
};

/* ------------------------------------------------------------------ */
/* /v2                                                                */
/* ------------------------------------------------------------------ */

static int v2_check_accept(const struct api_call *c, int dtype,
                           struct rd_error *err)
{
  (void)c;
  (void)dtype;
  (void)err;
  return 0;
}

static int v2_decode(struct api_call *c, const char *body, size_t len,
                     uint64_t max_elements, struct api_request *req,
                     struct rd_error *err)
{
  return api_v2_decode(body, len, c->header_len, max_elements, req, &c->v2info,
                       err);
}

/* JSON or a binary output as the request's "outputs" say.  The plan is
 * never Fortran-ordered here (no .npy body). */
static int v2_encode_result(const struct api_call *c,
                            const struct rd_plan *plan, int64_t opset,
                            int fortran, const void *out, struct api_buf *b,
                            struct api_reply *reply, struct rd_error *err)
{
  (void)opset;
  (void)fortran;
  if (api_v2_encode_result(&c->v2info, plan, out, b, &reply->json_len) != 0)
    return api_fail(err, RD_E_NOMEM, "out of memory");
  reply->fmt = c->v2info.binary_output ? API_FMT_RAW : API_FMT_JSON;
  return 0;
}

static int v2_reply_headers(const struct api_reply *reply, api_header_cb add,
                            void *arg)
{
  char len[24];

  if (reply->fmt == API_FMT_JSON)
    return 0;
  snprintf(len, sizeof len, "%zu", reply->json_len);
  return add(arg, "Inference-Header-Content-Length", len);
}

const struct api_proto api_proto_v2 = {
  .name = "v2",
  .inline_ok = 0,
  .live_body = "{\"live\":true}",
  .ready_body = "{\"ready\":true}",
  .nomem_body = "{\"error\":\"OUT_OF_MEMORY: out of memory\"}",
  .encode_error = api_v2_encode_error,
  .check_accept = v2_check_accept,
  .decode = v2_decode,
  .encode_result = v2_encode_result,
  .reply_headers = v2_reply_headers,
};

const char *api_reply_media_type(const struct api_reply *reply)
{
  return api_format_media_type(reply->fmt);
}
