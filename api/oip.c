/* oip.c - the Open Inference Protocol's gRPC messages onto the library
 * (oip.h): method names, status codes, ModelInfer decoding and encoding,
 * metadata and health messages.  Unpacking and packing are protobuf-c's
 * (the generated api/proto/inference.pb-c.h, health.pb-c.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary.h"
#include "jsonconv.h"
#include "oip.h"
#include "tmem.h"
#include "api/proto/health.pb-c.h"
#include "api/proto/inference.pb-c.h"

/* Bytes of a user string quoted in a message. */
#define SHOW_CUT 64

typedef Inference__ModelInferRequest InferRequest;
typedef Inference__ModelInferRequest__InferInputTensor InputTensor;
typedef Inference__InferTensorContents Contents;
typedef Inference__InferParameter Param;

/* ================================================================== */
/* Methods and status codes                                           */
/* ================================================================== */

#define OIP_SERVICE "/inference.GRPCInferenceService/"
#define HEALTH_SERVICE "/grpc.health.v1.Health/"

static const struct {
  const char *path;
  const char *name;
  const char *route;
} methods[API_OIP_NMETHODS] = {
  [API_OIP_UNKNOWN] = { NULL, "unknown", "grpc:none" },
  [API_OIP_SERVER_LIVE] = { OIP_SERVICE "ServerLive", "ServerLive",
                            "grpc:ServerLive" },
  [API_OIP_SERVER_READY] = { OIP_SERVICE "ServerReady", "ServerReady",
                             "grpc:ServerReady" },
  [API_OIP_MODEL_READY] = { OIP_SERVICE "ModelReady", "ModelReady",
                            "grpc:ModelReady" },
  [API_OIP_SERVER_METADATA] = { OIP_SERVICE "ServerMetadata", "ServerMetadata",
                                "grpc:ServerMetadata" },
  [API_OIP_MODEL_METADATA] = { OIP_SERVICE "ModelMetadata", "ModelMetadata",
                               "grpc:ModelMetadata" },
  [API_OIP_MODEL_INFER] = { OIP_SERVICE "ModelInfer", "ModelInfer",
                            "grpc:ModelInfer" },
  [API_OIP_HEALTH_CHECK] = { HEALTH_SERVICE "Check",
                             "grpc.health.v1.Health/Check", "grpc:Check" },
};

int api_oip_method(const char *path, size_t len)
{
  for (int m = 1; m < API_OIP_NMETHODS; m++)
    if (strlen(methods[m].path) == len &&
        memcmp(methods[m].path, path, len) == 0)
      return m;
  return API_OIP_UNKNOWN;
}

const char *api_oip_method_name(int method)
{
  if (method <= 0 || method >= API_OIP_NMETHODS)
    method = API_OIP_UNKNOWN;
  return methods[method].name;
}

const char *api_oip_method_route(int method)
{
  if (method <= 0 || method >= API_OIP_NMETHODS)
    method = API_OIP_UNKNOWN;
  return methods[method].route;
}

int api_oip_grpc_code_of_status(int http_status)
{
  switch (http_status) {
  case 200: return API_GRPC_OK;
  case 400:
  case 405:
  case 406:
  case 411:
  case 415:
  case 422: return API_GRPC_INVALID_ARGUMENT;
  case 401: return API_GRPC_UNAUTHENTICATED;
  case 404: return API_GRPC_NOT_FOUND;
  case 408: return API_GRPC_CANCELLED;
  case 413:
  case 503: return API_GRPC_RESOURCE_EXHAUSTED;
  default: return API_GRPC_INTERNAL;
  }
}

int api_oip_grpc_code(int code)
{
  if (code == API_E_DRAINING)
    return API_GRPC_UNAVAILABLE;
  return api_oip_grpc_code_of_status(api_http_status(code));
}

/* ================================================================== */
/* Helpers                                                            */
/* ================================================================== */

/* User text for a message: printable ASCII kept, the rest '?', cut. */
static void show(const char *s, char *out, size_t size)
{
  size_t i;

  for (i = 0; s[i] != '\0' && i + 4 < size && i < SHOW_CUT; i++)
    out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
  if (s[i] != '\0' && i + 4 < size) {
    memcpy(out + i, "...", 3);
    i += 3;
  }
  out[i] = '\0';
}

static int host_is_big_endian(void)
{
  const uint16_t one = 1;
  unsigned char b;

  memcpy(&b, &one, 1);
  return b == 0;
}

static int is_arg(int op)
{
  const struct rd_op_info *oi = rd_op_info(op);

  return oi != NULL && oi->is_arg;
}

/* Packs any message into `b`. 0 or RD_E_NOMEM. */
static int pack(const ProtobufCMessage *m, struct api_buf *b)
{
  size_t n = protobuf_c_message_get_packed_size(m);

  if (api_buf_reserve(b, n) != 0)
    return RD_E_NOMEM;
  protobuf_c_message_pack(m, (uint8_t *)b->data + b->len);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

/* ================================================================== */
/* Models                                                             */
/* ================================================================== */

/* [1-9][0-9]{0,8}: 0 and the value, else -1. */
static int parse_version(const char *s, int *out)
{
  size_t len = strlen(s);
  int v = 0;

  if (len == 0 || len > 9 || s[0] == '0')
    return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 0;
}

int api_oip_model(const char *name, const char *version, int *op,
                  int *version_out, struct rd_error *err)
{
  char shown[SHOW_CUT + 8], models[192], vlist[64];
  const struct rd_op_info *oi;
  enum rd_op o;
  size_t i;
  int v;

  if (name == NULL || rd_op_parse(name, &o) != 0) {
    show(name != NULL ? name : "", shown, sizeof shown);
    api__v2_list_models(models, sizeof models);
    return api_fail(err, API_E_NOT_FOUND, "unknown model \"%s\"; models: %s",
                    shown, models);
  }
  *op = o;
  *version_out = 0;
  if (version == NULL || version[0] == '\0')
    return 0;
  api__v2_list_versions(o, vlist, sizeof vlist);
  if (parse_version(version, &v) != 0) {
    show(version, shown, sizeof shown);
    return api_fail(err, API_E_INVALID_FIELD,
                    "model version \"%s\" is not "
                    "a version number; versions of %s: %s",
                    shown, rd_op_name(o), vlist);
  }
  oi = rd_op_info(o);
  for (i = 0; i < oi->nversions && oi->versions[i] != v; i++)
    ;
  if (i == oi->nversions)
    return api_fail(err, API_E_NOT_FOUND,
                    "model %s has no version %d; "
                    "versions: %s",
                    rd_op_name(o), v, vlist);
  *version_out = v;
  return 0;
}

/* ================================================================== */
/* ModelInfer: parameters                                             */
/* ================================================================== */

static const char *param_type(const Param *v)
{
  switch (v->parameter_choice_case) {
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM:
    return "bool_param";
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM:
    return "int64_param";
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM:
    return "string_param";
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM:
    return "double_param";
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
    return "uint64_param";
  default: return "no value";
  }
}

/* An integer parameter: int64_param (uint64_param up to INT64_MAX), or
 * with `allow_bool` bool_param for 1/0.  RD_UNSET is no value. */
static int param_int(const Param *v, const char *name, int allow_bool,
                     int64_t *out, struct rd_error *err)
{
  int64_t x;

  switch (v->parameter_choice_case) {
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM:
    if (!allow_bool)
      goto bad;
    x = v->bool_param != 0;
    break;
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM:
    x = v->int64_param;
    break;
  case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
    if (v->uint64_param > INT64_MAX)
      return api_fail(err, API_E_INVALID_FIELD,
                      "parameters.%s %" PRIu64 " is out of range", name,
                      v->uint64_param);
    x = (int64_t)v->uint64_param;
    break;
  default: goto bad;
  }
  if (x == RD_UNSET)
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.%s %" PRId64 " is out of range", name, x);
  *out = x;
  return 0;
bad:
  return api_fail(err, API_E_INVALID_FIELD,
                  "parameters.%s must be an "
                  "int64_param%s, got %s",
                  name, allow_bool ? " or bool_param" : "", param_type(v));
}

/* ATTRIBUTE_NOT_ALLOWED for a parameter the operator does not take. */
static int attr_allowed(int op, const char *name, struct rd_error *err)
{
  int arg = is_arg(op);
  int ok = strcmp(name, "axis") == 0 || strcmp(name, "select_last_index") == 0
             ? arg
             : !arg;

  if (ok)
    return 0;
  return api_fail(err, RD_E_ATTRIBUTE, "parameters.%s is not taken by %s", name,
                  rd_op_name(op));
}

/* parameters.axes below the axes-input version: one int64_param axis, or a
 * string_param list "0,2", "[0, 2]", "" or "[]". */
static int param_axes(const Param *v, struct api_request *req,
                      struct rd_error *err)
{
  struct rd_params *p = &req->params;
  const char *s;
  size_t n = 0;

  if (api__v2_has_axes_input(p->op, (int)p->opset))
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.axes is for "
                    "versions below %d; at version %d axes is the input "
                    "\"axes\" (INT64)",
                    api__v2_axes_input_version(p->op), (int)p->opset);
  if (v->parameter_choice_case ==
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM) {
    req->axes[0] = v->int64_param;
    p->naxes = 1;
    return 0;
  }
  if (v->parameter_choice_case !=
      INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM)
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.axes must be an "
                    "int64_param (one axis) or a string_param list such as "
                    "\"0,2\", got %s",
                    param_type(v));
  s = v->string_param;
  while (*s == ' ')
    s++;
  int bracket = *s == '[';
  if (bracket)
    s++;
  for (;;) {
    char *end;
    long long a;
    while (*s == ' ')
      s++;
    if (n == 0 && (*s == '\0' || *s == ']'))
      break;
    if (n == RD_MAX_RANK)
      return api_fail(err, API_E_INVALID_FIELD,
                      "parameters.axes has more "
                      "than %d entries",
                      RD_MAX_RANK);
    if (!(*s == '-' || (*s >= '0' && *s <= '9')))
      goto bad;
    a = strtoll(s, &end, 10);
    if (end == s || a == LLONG_MIN)
      goto bad;
    req->axes[n++] = (int64_t)a;
    s = end;
    while (*s == ' ')
      s++;
    if (*s != ',')
      break;
    s++;
  }
  if (bracket && *s++ != ']')
    goto bad;
  while (*s == ' ')
    s++;
  if (*s != '\0')
    goto bad;
  p->naxes = n;
  return 0;
bad : {
  char shown[SHOW_CUT + 8];
  show(v->string_param, shown, sizeof shown);
  return api_fail(err, API_E_INVALID_FIELD,
                  "parameters.axes \"%s\" is not "
                  "a list of integers such as \"0,2\"",
                  shown);
}
}

static int decode_parameters(const InferRequest *m, struct api_request *req,
                             struct rd_error *err)
{
  struct rd_params *p = &req->params;
  char shown[SHOW_CUT + 8];
  enum rd_overflow pol;
  int rc;

  for (size_t i = 0; i < m->n_parameters; i++) {
    const char *k = m->parameters[i]->key;
    const Param *v = m->parameters[i]->value;
    static const Param none = INFERENCE__INFER_PARAMETER__INIT;

    if (v == NULL)
      v = &none;
    if (strcmp(k, "keepdims") == 0) {
      rc = param_int(v, k, 1, &p->keepdims, err);
    } else if (strcmp(k, "noop_with_empty_axes") == 0) {
      if ((rc = attr_allowed(p->op, k, err)) == 0)
        rc = param_int(v, k, 1, &p->noop_with_empty_axes, err);
    } else if (strcmp(k, "select_last_index") == 0) {
      if ((rc = attr_allowed(p->op, k, err)) == 0)
        rc = param_int(v, k, 1, &p->select_last_index, err);
    } else if (strcmp(k, "axis") == 0) {
      if ((rc = attr_allowed(p->op, k, err)) == 0)
        rc = param_int(v, k, 0, &p->axis, err);
    } else if (strcmp(k, "axes") == 0) {
      if ((rc = attr_allowed(p->op, k, err)) == 0)
        rc = param_axes(v, req, err);
    } else if (strcmp(k, "overflow") == 0) {
      if (v->parameter_choice_case !=
          INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM)
        return api_fail(err, API_E_INVALID_FIELD,
                        "parameters.overflow must "
                        "be a string_param, got %s",
                        param_type(v));
      if (rd_overflow_parse(v->string_param, &pol) != 0) {
        show(v->string_param, shown, sizeof shown);
        return api_fail(err, RD_E_POLICY,
                        "unknown overflow policy \"%s\"; "
                        "valid policies: error, saturate, wrap",
                        shown);
      }
      p->overflow = pol;
      rc = 0;
    } else {
      show(k, shown, sizeof shown);
      return api_fail(err, API_E_UNKNOWN_FIELD,
                      "unknown parameter \"%s\"; "
                      "parameters: keepdims, noop_with_empty_axes, overflow, "
                      "axes, axis, select_last_index",
                      shown);
    }
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* ================================================================== */
/* ModelInfer: inputs                                                 */
/* ================================================================== */

/* Which typed contents field a datatype takes, and how many elements the
 * message carries in each. */
struct typed {
  const char *field; /* "fp32_contents"; NULL: raw only */
  size_t n;          /* elements in that field */
  size_t total;      /* elements in every typed field together */
};

static void typed_of(const Contents *c, int dtype, struct typed *t)
{
  memset(t, 0, sizeof *t);
  if (c != NULL)
    t->total = c->n_bool_contents + c->n_int_contents + c->n_int64_contents +
               c->n_uint_contents + c->n_uint64_contents + c->n_fp32_contents +
               c->n_fp64_contents + c->n_bytes_contents;
  switch (dtype) {
  case RD_FLOAT32:
    t->field = "fp32_contents";
    t->n = c != NULL ? c->n_fp32_contents : 0;
    break;
  case RD_FLOAT64:
    t->field = "fp64_contents";
    t->n = c != NULL ? c->n_fp64_contents : 0;
    break;
  case RD_INT8:
  case RD_INT16:
  case RD_INT32:
    t->field = "int_contents";
    t->n = c != NULL ? c->n_int_contents : 0;
    break;
  case RD_INT64:
    t->field = "int64_contents";
    t->n = c != NULL ? c->n_int64_contents : 0;
    break;
  case RD_UINT8:
  case RD_UINT16:
  case RD_UINT32:
    t->field = "uint_contents";
    t->n = c != NULL ? c->n_uint_contents : 0;
    break;
  case RD_UINT64:
    t->field = "uint64_contents";
    t->n = c != NULL ? c->n_uint64_contents : 0;
    break;
  case RD_BOOL:
    t->field = "bool_contents";
    t->n = c != NULL ? c->n_bool_contents : 0;
    break;
  default:
    t->field = NULL; /* FP16, BF16 */
    break;
  }
}

/* One input, read but not converted. */
struct oip_input {
  const InputTensor *t;
  int dtype;
  size_t rank;
  int64_t shape[RD_MAX_RANK];
  uint64_t count;
  const ProtobufCBinaryData *raw; /* NULL: typed contents */
};

/* Checks one input's datatype, shape and contents against each other. */
static int read_input(const InferRequest *m, size_t idx, const char *name,
                      uint64_t max_elements, struct oip_input *in,
                      struct rd_error *err)
{
  const InputTensor *t = m->inputs[idx];
  char shape_text[API_SHAPE_HDR_MAX], shown[SHOW_CUT + 8];
  struct typed ty;
  uint64_t need;
  int rc;

  in->t = t;
  if (api_v2_datatype_parse(t->datatype, &in->dtype) != 0) {
    show(t->datatype, shown, sizeof shown);
    return api_fail(err, RD_E_DTYPE,
                    "input \"%s\": unsupported datatype "
                    "\"%s\"",
                    name, shown);
  }
  if (t->n_parameters > 0) {
    show(t->parameters[0]->key, shown, sizeof shown);
    return api_fail(err, API_E_UNKNOWN_FIELD,
                    "input \"%s\": unknown "
                    "parameter \"%s\"; inputs take no parameters",
                    name, shown);
  }
  rc = rd_shape_count(t->n_shape, t->shape, in->dtype, &in->count, err);
  if (rc != 0)
    return rc;
  in->rank = t->n_shape;
  if (in->rank > 0) /* a scalar's shape may be NULL */
    memcpy(in->shape, t->shape, in->rank * sizeof *in->shape);
  api__shape_text(in->shape, in->rank, shape_text, sizeof shape_text);
  if (max_elements != 0 && in->count > max_elements)
    return api_fail(err, RD_E_TOO_LARGE,
                    "input \"%s\" has %" PRIu64 " elements; at most %" PRIu64
                    " are accepted",
                    name, in->count, max_elements);
  typed_of(t->contents, in->dtype, &ty);
  if (m->n_raw_input_contents > 0) {
    if (ty.total > 0)
      return api_fail(err, API_E_INVALID_FIELD,
                      "input \"%s\" has typed "
                      "contents but the request uses raw_input_contents; "
                      "use one or the other",
                      name);
    in->raw = &m->raw_input_contents[idx];
    need = in->count * rd_dtype_size(in->dtype);
    if (in->raw->len != need)
      return api_fail(err, API_E_SHAPE_MISMATCH,
                      "raw_input_contents[%zu] "
                      "(input \"%s\") has %zu bytes; shape %s of %s needs "
                      "%" PRIu64,
                      idx, name, in->raw->len, shape_text, t->datatype, need);
    return 0;
  }
  in->raw = NULL;
  if (ty.field == NULL && in->count > 0)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\": %s data must "
                    "be sent in raw_input_contents (the protocol has no "
                    "typed contents for it)",
                    name, t->datatype);
  if (ty.total != ty.n)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\" (%s) has "
                    "contents other than %s",
                    name, t->datatype, ty.field);
  if (ty.n != in->count)
    return api_fail(err, API_E_SHAPE_MISMATCH,
                    "input \"%s\": %s has %zu "
                    "elements; shape %s needs %" PRIu64,
                    name, ty.field != NULL ? ty.field : "contents", ty.n,
                    shape_text, in->count);
  return 0;
}

static int bad_elem(const char *name, size_t i, const char *dt, long long v,
                    struct rd_error *err)
{
  return api_fail(err, API_E_INVALID_ELEMENT,
                  "%s[%zu]: %lld is out of "
                  "range for %s",
                  name, i, v, dt);
}

/* The typed contents of `in` into `dst` (count elements of dtype). */
static int convert_typed(const struct oip_input *in, const char *name,
                         unsigned char *dst, struct rd_error *err)
{
  const Contents *c = in->t->contents;
  const char *dt = in->t->datatype;
  size_t n = (size_t)in->count;

  if (n == 0)
    return 0;
  switch (in->dtype) {
  case RD_FLOAT32: memcpy(dst, c->fp32_contents, n * sizeof(float)); return 0;
  case RD_FLOAT64: memcpy(dst, c->fp64_contents, n * sizeof(double)); return 0;
  case RD_INT32: memcpy(dst, c->int_contents, n * sizeof(int32_t)); return 0;
  case RD_INT64: memcpy(dst, c->int64_contents, n * sizeof(int64_t)); return 0;
  case RD_UINT32: memcpy(dst, c->uint_contents, n * sizeof(uint32_t)); return 0;
  case RD_UINT64:
    memcpy(dst, c->uint64_contents, n * sizeof(uint64_t));
    return 0;
  case RD_INT8:
    for (size_t i = 0; i < n; i++) {
      int32_t v = c->int_contents[i];
      if (v < INT8_MIN || v > INT8_MAX)
        return bad_elem(name, i, dt, v, err);
      ((int8_t *)dst)[i] = (int8_t)v;
    }
    return 0;
  case RD_INT16:
    for (size_t i = 0; i < n; i++) {
      int32_t v = c->int_contents[i];
      if (v < INT16_MIN || v > INT16_MAX)
        return bad_elem(name, i, dt, v, err);
      int16_t w = (int16_t)v;
      memcpy(dst + i * 2, &w, 2);
    }
    return 0;
  case RD_UINT8:
    for (size_t i = 0; i < n; i++) {
      uint32_t v = c->uint_contents[i];
      if (v > UINT8_MAX)
        return bad_elem(name, i, dt, v, err);
      dst[i] = (unsigned char)v;
    }
    return 0;
  case RD_UINT16:
    for (size_t i = 0; i < n; i++) {
      uint32_t v = c->uint_contents[i];
      if (v > UINT16_MAX)
        return bad_elem(name, i, dt, v, err);
      uint16_t w = (uint16_t)v;
      memcpy(dst + i * 2, &w, 2);
    }
    return 0;
  case RD_BOOL:
    for (size_t i = 0; i < n; i++)
      dst[i] = c->bool_contents[i] != 0;
    return 0;
  default: return api_fail(err, API_E_INTERNAL, "no typed contents for %s", dt);
  }
}

/* The elements of `in` in host order into a new buffer (*out). */
static int convert_input(const struct oip_input *in, const char *name,
                         void **out, size_t *bytes, struct rd_error *err)
{
  size_t esize = rd_dtype_size(in->dtype), n = (size_t)in->count * esize;
  unsigned char *p = api_tmem_alloc(n);
  int rc;

  if (p == NULL)
    return api_fail(err, RD_E_NOMEM,
                    "out of memory for input \"%s\" (%zu "
                    "bytes)",
                    name, n);
  if (in->raw != NULL) {
    if (n > 0)
      memcpy(p, in->raw->data, n);
    if (host_is_big_endian())
      api_swap_bytes(p, n, esize);
  } else if ((rc = convert_typed(in, name, p, err)) != 0) {
    api_tmem_free(p);
    return rc;
  }
  *out = p;
  *bytes = n;
  return 0;
}

/* The axes input: rank 1, INT64, at most RD_MAX_RANK entries. */
static int apply_axes(const struct oip_input *in, struct api_request *req,
                      struct rd_error *err)
{
  void *p;
  size_t n;
  int rc;

  if (in->dtype != RD_INT64)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"axes\" must have "
                    "datatype INT64, got %s",
                    in->t->datatype);
  if (in->rank != 1)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"axes\" must have "
                    "rank 1, got rank %zu",
                    in->rank);
  if (in->count > RD_MAX_RANK)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"axes\" has %" PRIu64
                    " entries; at most %d are possible",
                    in->count, RD_MAX_RANK);
  if ((rc = convert_input(in, "axes", &p, &n, err)) != 0)
    return rc;
  memcpy(req->axes, p, n);
  api_tmem_free(p);
  req->params.naxes = (size_t)in->count;
  return 0;
}

/* The requested outputs: only "reduced", without parameters. */
static int check_outputs(const InferRequest *m, struct rd_error *err)
{
  char shown[SHOW_CUT + 8];

  for (size_t i = 0; i < m->n_outputs; i++) {
    const Inference__ModelInferRequest__InferRequestedOutputTensor *o =
      m->outputs[i];
    if (strcmp(o->name, "reduced") != 0) {
      show(o->name, shown, sizeof shown);
      return api_fail(err, API_E_INVALID_FIELD,
                      "unknown output \"%s\"; the "
                      "one output is \"reduced\"",
                      shown);
    }
    if (o->n_parameters > 0) {
      show(o->parameters[0]->key, shown, sizeof shown);
      return api_fail(err, API_E_UNKNOWN_FIELD,
                      "output \"reduced\": unknown "
                      "parameter \"%s\"; outputs take no parameters",
                      shown);
    }
  }
  return 0;
}

static int decode_message(const InferRequest *m, uint64_t max_elements,
                          struct api_request *req, struct api_v2_info *info,
                          struct rd_error *err)
{
  struct rd_params *p = &req->params;
  struct oip_input ins[2];
  int have[2] = { 0, 0 }, op, version, rc, slot = 0;

  if ((rc = api_oip_model(m->model_name, m->model_version, &op, &version,
                          err)) != 0)
    return rc;
  info->op = op;
  info->version = version;
  p->op = op;
  p->opset = version != 0 ? version : api__v2_newest_version(op);
  if (strlen(m->id) > API_V2_ID_MAX)
    return api_fail(err, API_E_INVALID_FIELD, "id must be at most %d bytes",
                    API_V2_ID_MAX);
  if (m->id[0] != '\0') {
    memcpy(info->id, m->id, strlen(m->id) + 1);
    info->has_id = 1;
  }
  if ((rc = decode_parameters(m, req, err)) != 0 ||
      (rc = check_outputs(m, err)) != 0)
    return rc;
  if (m->n_raw_input_contents > 0 && m->n_raw_input_contents != m->n_inputs)
    return api_fail(err, API_E_INVALID_FIELD,
                    "raw_input_contents has %zu "
                    "entries for %zu inputs; give one per input, in input "
                    "order",
                    m->n_raw_input_contents, m->n_inputs);
  for (size_t i = 0; i < m->n_inputs; i++) {
    const char *name = m->inputs[i]->name;
    if ((rc = api_v2_input_slot(name, op, (int)p->opset, &slot, err)) != 0)
      return rc;
    if (have[slot])
      return api_fail(err, API_E_INVALID_FIELD, "input \"%s\" is given twice",
                      name);
    if ((rc = read_input(m, i, name, max_elements, &ins[slot], err)) != 0)
      return rc;
    have[slot] = 1;
  }
  if (!have[0])
    return api_fail(err, API_E_MISSING_FIELD, "missing input \"data\"");
  if (have[1] && p->naxes > 0)
    return api_fail(err, API_E_INVALID_FIELD,
                    "axes are given twice (input "
                    "\"axes\" and parameters.axes)");
  if (have[1] && (rc = apply_axes(&ins[1], req, err)) != 0)
    return rc;
  p->dtype = ins[0].dtype;
  p->rank = ins[0].rank;
  memcpy(req->shape, ins[0].shape, p->rank * sizeof *req->shape);
  p->shape = req->shape;
  p->axes = req->axes;
  return convert_input(&ins[0], "data", &req->data, &req->data_bytes, err);
}

int api_oip_decode_infer(const void *msg, size_t len, uint64_t max_elements,
                         struct api_request *req, struct api_v2_info *info,
                         struct rd_error *err)
{
  InferRequest *m;
  int rc;

  memset(req, 0, sizeof *req);
  rd_params_init(&req->params);
  req->params.shape = req->shape;
  req->params.axes = req->axes;
  info->has_id = 0;
  info->id[0] = '\0';
  m = inference__model_infer_request__unpack(NULL, len, msg);
  if (m == NULL)
    return api_fail(err, API_E_BAD_JSON,
                    "the request is not a "
                    "ModelInferRequest message (%zu bytes)",
                    len);
  rc = decode_message(m, max_elements, req, info, err);
  inference__model_infer_request__free_unpacked(m, NULL);
  if (rc != 0)
    api_request_free(req);
  return rc;
}

/* ================================================================== */
/* ModelInfer: response                                               */
/* ================================================================== */

int api_oip_encode_infer(const struct api_v2_info *info,
                         const struct rd_plan *plan, const void *out,
                         struct api_buf *b)
{
  Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  Inference__ModelInferResponse__InferOutputTensor t =
    INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
  Inference__ModelInferResponse__InferOutputTensor *outs[1] = { &t };
  int64_t shape[RD_MAX_RANK];
  ProtobufCBinaryData raw;
  unsigned char *swapped = NULL;
  char version[16], id[API_V2_ID_MAX + 1];
  int rc;

  snprintf(version, sizeof version, "%d", plan->version);
  snprintf(id, sizeof id, "%s", info->has_id ? info->id : "");
  memcpy(shape, plan->out_shape, plan->out_rank * sizeof *shape);
  r.model_name = (char *)rd_op_name(plan->op);
  r.model_version = version;
  r.id = id;
  t.name = "reduced";
  t.datatype = (char *)api_v2_datatype_name(plan->out_dtype);
  t.n_shape = plan->out_rank;
  t.shape = shape;
  r.n_outputs = 1;
  r.outputs = outs;
  raw.len = (size_t)plan->out_bytes;
  raw.data = (uint8_t *)out;
  if (host_is_big_endian() && raw.len > 0) {
    swapped = malloc(raw.len);
    if (swapped == NULL)
      return RD_E_NOMEM;
    memcpy(swapped, out, raw.len);
    api_swap_bytes(swapped, raw.len, plan->out_elem_size);
    raw.data = swapped;
  }
  r.n_raw_output_contents = 1;
  r.raw_output_contents = &raw;
  rc = pack(&r.base, b);
  free(swapped);
  return rc;
}

/* ================================================================== */
/* Metadata, health, errors                                           */
/* ================================================================== */

int api_oip_decode_model_ref(int method, const void *msg, size_t len, int *op,
                             int *version, struct rd_error *err)
{
  int rc;

  if (method == API_OIP_MODEL_READY) {
    Inference__ModelReadyRequest *m =
      inference__model_ready_request__unpack(NULL, len, msg);
    if (m == NULL)
      return api_fail(err, API_E_BAD_JSON,
                      "the request is not a "
                      "ModelReadyRequest message (%zu bytes)",
                      len);
    rc = api_oip_model(m->name, m->version, op, version, err);
    inference__model_ready_request__free_unpacked(m, NULL);
  } else {
    Inference__ModelMetadataRequest *m =
      inference__model_metadata_request__unpack(NULL, len, msg);
    if (m == NULL)
      return api_fail(err, API_E_BAD_JSON,
                      "the request is not a "
                      "ModelMetadataRequest message (%zu bytes)",
                      len);
    rc = api_oip_model(m->name, m->version, op, version, err);
    inference__model_metadata_request__free_unpacked(m, NULL);
  }
  return rc;
}

int api_oip_encode_flag(int value, struct api_buf *b)
{
  /* ServerLiveResponse, ServerReadyResponse and ModelReadyResponse share
   * this encoding: field 1, varint. */
  Inference__ServerLiveResponse r = INFERENCE__SERVER_LIVE_RESPONSE__INIT;

  r.live = value != 0;
  return pack(&r.base, b);
}

int api_oip_encode_server_meta(const char *version, struct api_buf *b)
{
  Inference__ServerMetadataResponse r =
    INFERENCE__SERVER_METADATA_RESPONSE__INIT;

  r.name = "reduced";
  r.version = (char *)version;
  return pack(&r.base, b);
}

int api_oip_encode_model_meta(int op, int version, struct api_buf *b)
{
  typedef Inference__ModelMetadataResponse__TensorMetadata Meta;
  typedef Inference__ModelMetadataResponse__PropertiesEntry Prop;
  Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
  const struct rd_op_info *oi = rd_op_info(op);
  Meta data = INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
  Meta axes = INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
  Meta red = INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
  Prop p_dt = INFERENCE__MODEL_METADATA_RESPONSE__PROPERTIES_ENTRY__INIT;
  Prop p_ax = INFERENCE__MODEL_METADATA_RESPONSE__PROPERTIES_ENTRY__INIT;
  Meta *inputs[2] = { &data, &axes }, *outputs[1] = { &red };
  Prop *props[2] = { &p_dt, &p_ax };
  char vtext[RD_MAX_VERSIONS][12], *vptr[RD_MAX_VERSIONS], dts[160];
  int64_t any = -1;
  size_t n = 0;
  int v;

  if (oi == NULL)
    return RD_E_INVALID;
  v = version != 0 ? version : api__v2_newest_version(op);
  for (size_t i = 0; i < oi->nversions; i++) {
    snprintf(vtext[i], sizeof vtext[i], "%d", oi->versions[i]);
    vptr[i] = vtext[i];
  }
  dts[0] = '\0';
  for (size_t i = 0; i < RD_NDTYPES && n < sizeof dts; i++) {
    const char *name = api_v2_datatype_name(rd_dtypes[i]);
    if (name != NULL && rd_dtype_in_version(op, rd_dtypes[i], v))
      n += (size_t)snprintf(dts + n, sizeof dts - n, "%s%s", n ? "," : "",
                            name);
  }
  data.name = "data";
  data.datatype = "FP32";
  data.n_shape = 1;
  data.shape = &any;
  axes.name = "axes";
  axes.datatype = "INT64";
  axes.n_shape = 1;
  axes.shape = &any;
  red.name = "reduced";
  red.datatype = oi->is_arg ? "INT64" : "FP32";
  red.n_shape = 1;
  red.shape = &any;
  p_dt.key = "data_datatypes";
  p_dt.value = dts;
  p_ax.key = "axes_optional";
  p_ax.value = "true";
  r.name = (char *)oi->name;
  r.n_versions = oi->nversions;
  r.versions = vptr;
  r.platform = "onnx_reduce";
  r.n_inputs = api__v2_has_axes_input(op, v) ? 2 : 1;
  r.inputs = inputs;
  r.n_outputs = 1;
  r.outputs = outputs;
  r.n_properties = api__v2_has_axes_input(op, v) ? 2 : 1;
  r.properties = props;
  return pack(&r.base, b);
}

int api_oip_decode_health(const void *msg, size_t len, struct rd_error *err)
{
  Grpc__Health__V1__HealthCheckRequest *m =
    grpc__health__v1__health_check_request__unpack(NULL, len, msg);
  char shown[SHOW_CUT + 8];
  int rc = 0;

  if (m == NULL)
    return api_fail(err, API_E_BAD_JSON,
                    "the request is not a "
                    "HealthCheckRequest message (%zu bytes)",
                    len);
  if (m->service[0] != '\0' &&
      strcmp(m->service, "inference.GRPCInferenceService") != 0) {
    show(m->service, shown, sizeof shown);
    rc = api_fail(err, API_E_NOT_FOUND,
                  "unknown service \"%s\"; services: "
                  "\"\" (the server), inference.GRPCInferenceService",
                  shown);
  }
  grpc__health__v1__health_check_request__free_unpacked(m, NULL);
  return rc;
}

int api_oip_encode_health(int status, struct api_buf *b)
{
  Grpc__Health__V1__HealthCheckResponse r =
    GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;

  r.status =
    status == API_OIP_SERVING
      ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
      : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
  return pack(&r.base, b);
}

int api_oip_encode_error(const struct rd_error *err, struct api_buf *b)
{
  return api_buf_printf(b, "%s: %s", api_errname(err->code), err->msg);
}

/* ================================================================== */
/* The protocol table's row                                           */
/* ================================================================== */

static int grpc_check_accept(const struct api_call *c, int dtype,
                             struct rd_error *err)
{
  (void)c;
  (void)dtype;
  (void)err;
  return 0;
}

static int grpc_decode(struct api_call *c, const char *body, size_t len,
                       uint64_t max_elements, struct api_request *req,
                       struct rd_error *err)
{
  return api_oip_decode_infer(body, len, max_elements, req, &c->v2info, err);
}

static int grpc_encode_result(const struct api_call *c,
                              const struct rd_plan *plan, int64_t opset,
                              int fortran, const void *out, struct api_buf *b,
                              struct api_reply *reply, struct rd_error *err)
{
  (void)opset;
  (void)fortran; /* never: no .npy over gRPC */
  if (api_oip_encode_infer(&c->v2info, plan, out, b) != 0)
    return api_fail(err, RD_E_NOMEM, "out of memory");
  reply->fmt = API_FMT_RAW;
  return 0;
}

static int grpc_reply_headers(const struct api_reply *reply, api_header_cb add,
                              void *arg)
{
  (void)reply;
  (void)add;
  (void)arg;
  return 0;
}

const struct api_proto api_proto_grpc = {
  .name = "grpc",
  .inline_ok = 0,
  .live_body = "",
  .ready_body = "",
  .nomem_body = "OUT_OF_MEMORY: out of memory",
  .encode_error = api_oip_encode_error,
  .check_accept = grpc_check_accept,
  .decode = grpc_decode,
  .encode_result = grpc_encode_result,
  .reply_headers = grpc_reply_headers,
};
