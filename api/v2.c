/* v2.c - the Open Inference Protocol (KServe v2 REST) and Triton's binary
 * tensor data extension: routes, infer request decoding, response, error
 * and metadata bodies.  Parsing and string escaping are jansson's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "jsonconv.h"
#include "numfmt.h"
#include "tmem.h"
#include "v2.h"

/* Bytes of a user string quoted in a message. */
#define SHOW_CUT 64

static const struct {
  const char *name;
  int dtype;
} datatypes[] = {
  { "FP32", RD_FLOAT32 },  { "FP64", RD_FLOAT64 },  { "FP16", RD_FLOAT16 },
  { "BF16", RD_BFLOAT16 }, { "INT32", RD_INT32 },   { "INT64", RD_INT64 },
  { "UINT32", RD_UINT32 }, { "UINT64", RD_UINT64 }, { "INT8", RD_INT8 },
  { "UINT8", RD_UINT8 },   { "INT16", RD_INT16 },   { "UINT16", RD_UINT16 },
  { "BOOL", RD_BOOL },
};
#define NDATATYPES (sizeof datatypes / sizeof datatypes[0])

const char *api_v2_datatype_name(int dtype)
{
  for (size_t i = 0; i < NDATATYPES; i++)
    if (datatypes[i].dtype == dtype)
      return datatypes[i].name;
  return NULL;
}

int api_v2_datatype_parse(const char *name, int *dtype)
{
  for (size_t i = 0; i < NDATATYPES; i++)
    if (strcmp(datatypes[i].name, name) == 0) {
      *dtype = datatypes[i].dtype;
      return 0;
    }
  return RD_E_DTYPE;
}

static int host_is_big_endian(void)
{
  const uint16_t one = 1;
  unsigned char b;

  memcpy(&b, &one, 1);
  return b == 0;
}

/* Reverses each `esize`-byte element in place (little-endian <-> host on a
 * big-endian host). */
static void swap_elems(unsigned char *p, size_t bytes, size_t esize)
{
  for (size_t i = 0; i + esize <= bytes; i += esize)
    for (size_t a = i, b = i + esize - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* User text for a message: printable ASCII kept, the rest '?', cut. */
static void show(const char *s, char *out, size_t size)
{
  size_t i;

  for (i = 0; s[i] != '\0' && i < SHOW_CUT && i + 4 < size; i++)
    out[i] = (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"') ? s[i] : '?';
  if (s[i] != '\0' && i + 4 <= size) {
    memcpy(out + i, "...", 3);
    i += 3;
  }
  out[i] = '\0';
}

/* "1, 11, 13, 18" (the versions of `op`) */
void api__v2_list_versions(int op, char *out, size_t size)
{
  const struct rd_op_info *oi = rd_op_info(op);
  size_t n = 0;

  out[0] = '\0';
  for (size_t i = 0; oi != NULL && i < oi->nversions && n < size; i++)
    n += (size_t)snprintf(out + n, size - n, "%s%d", i ? ", " : "",
                          oi->versions[i]);
}

/* "ReduceL2, ReduceSumSquare, ..." (every model) */
void api__v2_list_models(char *out, size_t size)
{
  size_t n = 0;

  out[0] = '\0';
  for (int op = 1; op <= RD_OP_COUNT && n < size; op++)
    if (rd_op_name(op) != NULL)
      n += (size_t)snprintf(out + n, size - n, "%s%s", n ? ", " : "",
                            rd_op_name(op));
}

/* "FP32, FP64, ..." (every datatype) */
static void list_datatypes(char *out, size_t size)
{
  size_t n = 0;

  out[0] = '\0';
  for (size_t i = 0; i < NDATATYPES && n < size; i++)
    n += (size_t)snprintf(out + n, size - n, "%s%s", i ? ", " : "",
                          datatypes[i].name);
}

/* The version a request without one takes: the op's newest. */
int api__v2_newest_version(int op)
{
  const struct rd_op_info *oi = rd_op_info(op);

  return oi != NULL ? oi->versions[oi->nversions - 1] : 0;
}

/* The first version of `op` that takes axes as an input; 0: none (ArgMax,
 * ArgMin). */
int api__v2_axes_input_version(int op)
{
  const struct rd_op_info *oi = rd_op_info(op);

  return oi != NULL && !oi->is_arg ? oi->axes_input_version : 0;
}

/* 1 when version `v` of `op` takes the "axes" input. */
int api__v2_has_axes_input(int op, int v)
{
  int a = api__v2_axes_input_version(op);

  return a != 0 && v >= a;
}

/* ================================================================== */
/* Routes                                                             */
/* ================================================================== */

/* [1-9][0-9]{0,8}: 0 and the value, else -1. */
static int parse_version(const char *s, size_t len, int *out)
{
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

/* The model segment name[0..name_len) of a /v2/models path: an operator
 * name, exact and case-sensitive (the protocol's rule). */
static int route_model(const char *name, size_t name_len, enum rd_op *op,
                       struct rd_error *err)
{
  char opname[32], nm[SHOW_CUT + 8], cut[SHOW_CUT + 1], models_list[192];
  size_t c;

  if (name_len < sizeof opname) {
    memcpy(opname, name, name_len);
    opname[name_len] = '\0';
    if (rd_op_parse(opname, op) == 0)
      return 0;
  }
  c = name_len < SHOW_CUT ? name_len : SHOW_CUT;
  memcpy(cut, name, c);
  cut[c] = '\0';
  show(cut, nm, sizeof nm);
  api__v2_list_models(models_list, sizeof models_list);
  return api_fail(err, API_E_NOT_FOUND, "unknown model \"%s%s\"; models: %s",
                  nm, name_len > SHOW_CUT ? "..." : "", models_list);
}

/* The version segment vs[0..vs_len) of model `op`: a number that is one of
 * the operator's versions. */
static int route_version(enum rd_op op, const char *vs, size_t vs_len,
                         int *version, struct rd_error *err)
{
  const struct rd_op_info *oi = rd_op_info(op);
  char vtext[SHOW_CUT + 1], vshown[SHOW_CUT + 8], vlist[64];
  size_t c = vs_len < SHOW_CUT ? vs_len : SHOW_CUT, i;
  int v;

  memcpy(vtext, vs, c);
  vtext[c] = '\0';
  show(vtext, vshown, sizeof vshown);
  api__v2_list_versions(op, vlist, sizeof vlist);
  if (parse_version(vs, vs_len, &v) != 0)
    return api_fail(err, API_E_INVALID_FIELD,
                    "model version \"%s\" is not "
                    "a version number; versions of %s: %s",
                    vshown, rd_op_name(op), vlist);
  for (i = 0; i < oi->nversions && oi->versions[i] != v; i++)
    ;
  if (i == oi->nversions)
    return api_fail(err, API_E_NOT_FOUND,
                    "model %s has no version %d; "
                    "versions: %s",
                    rd_op_name(op), v, vlist);
  *version = v;
  return 0;
}

int api_v2_route_parse(const char *path, struct api_v2_route *rt,
                       struct rd_error *err)
{
  static const char models[] = "/v2/models/", versions[] = "/versions/";
  const char *name, *rest, *vs = NULL;
  char shown[SHOW_CUT + 8];
  size_t name_len, vs_len = 0;
  enum rd_op op;
  int rc;

  memset(rt, 0, sizeof *rt);
  if (strcmp(path, "/v2") == 0) {
    rt->kind = API_V2_SERVER_META;
    return 0;
  }
  if (strcmp(path, "/v2/health/live") == 0) {
    rt->kind = API_V2_LIVE;
    return 0;
  }
  if (strcmp(path, "/v2/health/ready") == 0) {
    rt->kind = API_V2_READY;
    return 0;
  }
  show(path, shown, sizeof shown);
  if (strncmp(path, models, sizeof models - 1) != 0)
    return api_fail(err, API_E_NOT_FOUND, "no such path: %s", shown);
  name = path + sizeof models - 1;
  name_len = strcspn(name, "/");
  rest = name + name_len;
  if (strncmp(rest, versions, sizeof versions - 1) == 0) {
    vs = rest + sizeof versions - 1;
    vs_len = strcspn(vs, "/");
    rest = vs + vs_len;
  }
  if (strcmp(rest, "") == 0)
    rt->kind = API_V2_MODEL_META;
  else if (strcmp(rest, "/ready") == 0)
    rt->kind = API_V2_MODEL_READY;
  else if (strcmp(rest, "/infer") == 0)
    rt->kind = API_V2_INFER;
  else
    return api_fail(err, API_E_NOT_FOUND, "no such path: %s", shown);
  if (name_len == 0)
    return api_fail(err, API_E_NOT_FOUND, "no such path: %s", shown);
  if ((rc = route_model(name, name_len, &op, err)) != 0)
    return rc;
  rt->op = op;
  if (vs != NULL)
    return route_version(op, vs, vs_len, &rt->version, err);
  return 0;
}

/* ================================================================== */
/* Request decoding                                                   */
/* ================================================================== */

/* One known key set: UNKNOWN_FIELD for any other key of `obj`. */
static int check_keys(const json_t *obj, const char *const *known,
                      const char *what, struct rd_error *err)
{
  const char *key = api__unknown_key(obj, known);
  char shown[SHOW_CUT + 8];

  if (key == NULL)
    return 0;
  show(key, shown, sizeof shown);
  return api_fail(err, API_E_UNKNOWN_FIELD, "unknown %s \"%s\"", what, shown);
}

/* keepdims / noop_with_empty_axes: an integer or true/false. */
static int param_int(const json_t *v, const char *name, int64_t *out,
                     struct rd_error *err)
{
  if (json_is_boolean(v)) {
    *out = json_is_true(v);
    return 0;
  }
  if (api__as_int64(v, out) != 0)
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.%s must be an "
                    "integer or true/false, got %s",
                    name, api__type_name(v));
  return 0;
}

/* parameters.axes (below the axes-input version) into req. */
static int decode_param_axes(const json_t *v, struct api_request *req,
                             struct rd_error *err)
{
  struct rd_params *p = &req->params;
  size_t n;

  if (api__v2_has_axes_input(p->op, (int)p->opset))
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.axes is for "
                    "versions below %d; at version %d axes is the input "
                    "\"axes\" (INT64)",
                    api__v2_axes_input_version(p->op), (int)p->opset);
  if (!json_is_array(v))
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.axes must be a "
                    "list of integers, got %s",
                    api__type_name(v));
  n = json_array_size(v);
  if (n > RD_MAX_RANK)
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters.axes has %zu "
                    "entries; at most %d are possible",
                    n, RD_MAX_RANK);
  for (size_t i = 0; i < n; i++)
    if (api__as_int64(json_array_get(v, i), &req->axes[i]) != 0)
      return api_fail(err, API_E_INVALID_FIELD,
                      "parameters.axes[%zu] "
                      "must be an integer, got %s",
                      i, api__type_name(json_array_get(v, i)));
  p->naxes = n;
  return 0;
}

/* An integer parameter the op may not take (noop_with_empty_axes, axis,
 * select_last_index); `allow_bool`: true/false stand for 1/0. */
static int decode_op_param(const json_t *ps, const char *name, int allow_bool,
                           int op, int64_t *out, struct rd_error *err)
{
  const json_t *v = json_object_get(ps, name);
  char shown[48];
  int64_t x;
  int rc;

  if (v == NULL)
    return 0;
  snprintf(shown, sizeof shown, "parameters.%s", name);
  if ((rc = api__attr_allowed(op, name, shown, err)) != 0)
    return rc;
  if (allow_bool && json_is_boolean(v))
    x = json_is_true(v);
  else if (api__as_int64(v, &x) != 0)
    return api_fail(err, API_E_INVALID_FIELD,
                    "%s must be an integer%s, got "
                    "%s",
                    shown, allow_bool ? " or true/false" : "",
                    api__type_name(v));
  return api__guard_unset(name, shown, x, out, err);
}

static int decode_parameters(const json_t *ps, struct api_request *req,
                             int *bdo, struct rd_error *err)
{
  static const char *const known[] = {
    "keepdims", "noop_with_empty_axes", "overflow",           "axes",
    "axis",     "select_last_index",    "binary_data_output", NULL
  };
  struct rd_params *p = &req->params;
  const json_t *v;
  char shown[SHOW_CUT + 8];
  enum rd_overflow pol;
  int rc;

  if (ps == NULL)
    return 0;
  if (!json_is_object(ps))
    return api_fail(err, API_E_INVALID_FIELD,
                    "parameters must be an object, "
                    "got %s",
                    api__type_name(ps));
  if ((rc = check_keys(ps, known, "parameter", err)) != 0)
    return rc;
  if ((v = json_object_get(ps, "keepdims")) != NULL &&
      (rc = param_int(v, "keepdims", &p->keepdims, err)) != 0)
    return rc;
  if ((rc = decode_op_param(ps, "noop_with_empty_axes", 1, p->op,
                            &p->noop_with_empty_axes, err)) != 0 ||
      (rc = decode_op_param(ps, "axis", 0, p->op, &p->axis, err)) != 0 ||
      (rc = decode_op_param(ps, "select_last_index", 1, p->op,
                            &p->select_last_index, err)) != 0)
    return rc;
  if ((v = json_object_get(ps, "overflow")) != NULL) {
    if (!json_is_string(v))
      return api_fail(err, API_E_INVALID_FIELD,
                      "parameters.overflow must "
                      "be a string, got %s",
                      api__type_name(v));
    if (rd_overflow_parse(json_string_value(v), &pol) != 0) {
      show(json_string_value(v), shown, sizeof shown);
      return api_fail(err, RD_E_POLICY,
                      "unknown overflow policy \"%s\"; "
                      "valid policies: error, saturate, wrap",
                      shown);
    }
    p->overflow = pol;
  }
  if ((v = json_object_get(ps, "binary_data_output")) != NULL) {
    if (!json_is_boolean(v))
      return api_fail(err, API_E_INVALID_FIELD,
                      "parameters."
                      "binary_data_output must be true or false, got %s",
                      api__type_name(v));
    *bdo = json_is_true(v);
  }
  if ((v = json_object_get(ps, "axes")) != NULL &&
      ((rc = api__attr_allowed(p->op, "axes", "parameters.axes", err)) != 0 ||
       (rc = decode_param_axes(v, req, err)) != 0))
    return rc;
  return 0;
}

/* Converting JSON elements. */
struct conv {
  struct api__conv c; /* c.ctx is this conv */
  const char *input;  /* "data" or "axes" */
  const char *dtname; /* "FP32" */
  size_t rank;
  const int64_t *shape;
};

/* api__conv's bad(): names the element input "x": data[i] (v2's form). */
static int bad_elem(const struct api__conv *ac, const json_t *v,
                    const char *why, struct rd_error *err)
{
  const struct conv *c = ac->ctx;
  char shown[SHOW_CUT + 16];

  if (json_is_string(v)) {
    char q[SHOW_CUT + 8];
    show(json_string_value(v), q, sizeof q);
    snprintf(shown, sizeof shown, "\"%s\"", q);
  } else if (json_is_integer(v)) {
    snprintf(shown, sizeof shown, "%" JSON_INTEGER_FORMAT,
             json_integer_value(v));
  } else if (json_is_real(v)) {
    double d = json_real_value(v);
    api_format_elem(shown, RD_FLOAT64, &d);
  } else {
    snprintf(shown, sizeof shown, "%s", api__type_name(v));
  }
  return api_fail(err, API_E_INVALID_ELEMENT,
                  "input \"%s\": data[%" PRIu64 "] = %s %s (datatype %s)",
                  c->input, ac->idx, shown, why, c->dtname);
}

/* Nested data: every list at depth d has shape[d] entries and elements sit
 * exactly at depth rank.  Lengths are checked before descending, so at most
 * prod(shape) elements are written.  Depth <= RD_MAX_RANK. */
static int walk_nested(struct conv *c, const json_t *v, size_t depth,
                       struct rd_error *err)
{
  char s[RD_MAX_RANK * 21 + 3];
  size_t n;
  int rc;

  if (depth == c->rank) {
    if (json_is_array(v)) {
      api__shape_text(c->shape, c->rank, s, sizeof s);
      return api_fail(err, API_E_SHAPE_MISMATCH,
                      "input \"%s\": data is "
                      "nested deeper than its shape %s",
                      c->input, s);
    }
    return api__put_elem(&c->c, v, err);
  }
  n = json_is_array(v) ? json_array_size(v) : 0;
  if (!json_is_array(v) || (int64_t)n != c->shape[depth]) {
    api__shape_text(c->shape, c->rank, s, sizeof s);
    return api_fail(err, API_E_SHAPE_MISMATCH,
                    "input \"%s\": nested data "
                    "does not match its shape %s (at depth %zu: %s of %zu, "
                    "expected a list of %" PRId64 ")",
                    c->input, s, depth,
                    json_is_array(v) ? "a list" : "an element", n,
                    c->shape[depth]);
  }
  for (size_t i = 0; i < n; i++)
    if ((rc = walk_nested(c, json_array_get(v, i), depth + 1, err)) != 0)
      return rc;
  return 0;
}

/* Converts `data` (flat, or nested as the shape) into a new buffer. */
static int convert_data(struct conv *c, const json_t *data, uint64_t count,
                        struct rd_error *err)
{
  char s[RD_MAX_RANK * 21 + 3];
  uint64_t bytes = count * c->c.esize; /* rd_shape_count checked it */
  size_t n;
  int rc;

  if (!json_is_array(data))
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\": data must be a "
                    "list, got %s",
                    c->input, api__type_name(data));
  n = json_array_size(data);
  if (bytes > SIZE_MAX - 1)
    return api_fail(err, RD_E_TOO_LARGE,
                    "input \"%s\" of %" PRIu64 " bytes "
                    "does not fit in memory",
                    c->input, bytes);
  c->c.out = api_tmem_alloc((size_t)bytes);
  if (c->c.out == NULL)
    return api_fail(err, RD_E_NOMEM,
                    "out of memory for %" PRIu64 " bytes "
                    "of input \"%s\"",
                    bytes, c->input);
  c->c.idx = 0;
  if (n > 0 && json_is_array(json_array_get(data, 0)) && c->rank > 1) {
    rc = walk_nested(c, data, 0, err);
  } else if ((uint64_t)n != count) {
    api__shape_text(c->shape, c->rank, s, sizeof s);
    rc = api_fail(err, API_E_SHAPE_MISMATCH,
                  "input \"%s\": data has %zu "
                  "elements; shape %s needs %" PRIu64,
                  c->input, n, s, count);
  } else {
    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
      if (json_is_array(json_array_get(data, i))) {
        api__shape_text(c->shape, c->rank, s, sizeof s);
        rc = api_fail(err, API_E_SHAPE_MISMATCH,
                      "input \"%s\": data[%zu] "
                      "is a list, but flat data was expected for shape %s",
                      c->input, i, s);
      } else {
        rc = api__put_elem(&c->c, json_array_get(data, i), err);
      }
    }
  }
  if (rc != 0) {
    api_tmem_free(c->c.out);
    c->c.out = NULL;
  }
  return rc;
}

/* One entry of "inputs": name, shape, datatype, parameters, data. */
struct v2_input {
  const json_t *obj;
  const json_t *data;
  int dtype;
  size_t rank;
  int64_t shape[RD_MAX_RANK];
  uint64_t count;
  int blob;
  uint64_t blob_size;
};

/* An input's "datatype" into t->dtype. */
static int input_datatype(const json_t *in, size_t idx, const char *name,
                          struct v2_input *t, struct rd_error *err)
{
  const json_t *v = json_object_get(in, "datatype");
  char shown[SHOW_CUT + 8], dts[128];

  if (v == NULL)
    return api_fail(err, API_E_MISSING_FIELD,
                    "inputs[%zu] (\"%s\"): missing "
                    "\"datatype\"",
                    idx, name);
  if (!json_is_string(v))
    return api_fail(err, API_E_INVALID_FIELD,
                    "inputs[%zu] (\"%s\"): "
                    "datatype must be a string, got %s",
                    idx, name, api__type_name(v));
  if (api_v2_datatype_parse(json_string_value(v), &t->dtype) != 0) {
    show(json_string_value(v), shown, sizeof shown);
    list_datatypes(dts, sizeof dts);
    return api_fail(err, RD_E_DTYPE,
                    "input \"%s\": unsupported datatype "
                    "\"%s\"; supported: %s",
                    name, shown, dts);
  }
  return 0;
}

/* An input's "shape" into t->rank, t->shape and t->count. */
static int input_shape(const json_t *in, size_t idx, const char *name,
                       struct v2_input *t, struct rd_error *err)
{
  const json_t *v = json_object_get(in, "shape");

  if (v == NULL)
    return api_fail(err, API_E_MISSING_FIELD,
                    "inputs[%zu] (\"%s\"): missing "
                    "\"shape\"",
                    idx, name);
  if (!json_is_array(v))
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\": shape must be a "
                    "list of integers, got %s",
                    name, api__type_name(v));
  if (json_array_size(v) > RD_MAX_RANK)
    return api_fail(err, RD_E_RANK,
                    "input \"%s\": shape has %zu dimensions; "
                    "at most %d are supported",
                    name, json_array_size(v), RD_MAX_RANK);
  t->rank = json_array_size(v);
  for (size_t i = 0; i < t->rank; i++)
    if (api__as_int64(json_array_get(v, i), &t->shape[i]) != 0)
      return api_fail(err, API_E_INVALID_FIELD,
                      "input \"%s\": shape[%zu] "
                      "must be an integer, got %s",
                      name, i, api__type_name(json_array_get(v, i)));
  return rd_shape_count(t->rank, t->shape, t->dtype, &t->count, err);
}

/* An input's "data" or parameters.binary_data_size (exactly one). */
static int input_payload(const json_t *in, const char *name, int blobs,
                         struct v2_input *t, struct rd_error *err)
{
  static const char *const pknown[] = { "binary_data_size", NULL };
  const json_t *ps = json_object_get(in, "parameters"), *v;
  char what[64];
  int64_t size;
  int rc;

  if (ps != NULL) {
    if (!json_is_object(ps))
      return api_fail(err, API_E_INVALID_FIELD,
                      "input \"%s\": parameters "
                      "must be an object, got %s",
                      name, api__type_name(ps));
    snprintf(what, sizeof what, "parameter of input \"%s\":", name);
    if ((rc = check_keys(ps, pknown, what, err)) != 0)
      return rc;
  }
  t->data = json_object_get(in, "data");
  v = ps != NULL ? json_object_get(ps, "binary_data_size") : NULL;
  if (v == NULL) {
    if (t->data == NULL)
      return api_fail(err, API_E_MISSING_FIELD,
                      "input \"%s\" has neither "
                      "\"data\" nor parameters.binary_data_size",
                      name);
    return 0;
  }
  if (api__as_int64(v, &size) != 0 || size < 0)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\": "
                    "binary_data_size must be an integer >= 0",
                    name);
  if (t->data != NULL)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\" has both "
                    "\"data\" and parameters.binary_data_size; send one",
                    name);
  if (!blobs)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"%s\" has "
                    "binary_data_size but the request has no "
                    "Inference-Header-Content-Length header; set both",
                    name);
  if ((uint64_t)size != t->count * rd_dtype_size(t->dtype))
    return api_fail(err, RD_E_STREAM,
                    "input \"%s\": binary_data_size is "
                    "%" PRId64 " but shape and datatype %s need %" PRIu64
                    " bytes",
                    name, size, api_v2_datatype_name(t->dtype),
                    t->count * rd_dtype_size(t->dtype));
  t->blob = 1;
  t->blob_size = (uint64_t)size;
  return 0;
}

/* One entry of "inputs": its keys, datatype, shape, then data or blob. */
static int decode_input(const json_t *in, size_t idx, const char *name,
                        int blobs, struct v2_input *t, struct rd_error *err)
{
  static const char *const known[] = { "name",       "shape", "datatype",
                                       "parameters", "data",  NULL };
  char what[64];
  int rc;

  snprintf(what, sizeof what, "field of input \"%s\":", name);
  if ((rc = check_keys(in, known, what, err)) != 0)
    return rc;
  t->obj = in;
  if ((rc = input_datatype(in, idx, name, t, err)) != 0 ||
      (rc = input_shape(in, idx, name, t, err)) != 0)
    return rc;
  return input_payload(in, name, blobs, t, err);
}

static int decode_outputs(const json_t *outs, int *bd, struct rd_error *err)
{
  static const char *const known[] = { "name", "parameters", NULL };
  static const char *const pknown[] = { "binary_data", NULL };
  const json_t *o, *v, *ps;
  char shown[SHOW_CUT + 8];
  size_t i;
  int rc;

  if (outs == NULL)
    return 0;
  if (!json_is_array(outs))
    return api_fail(err, API_E_INVALID_FIELD,
                    "outputs must be a list, got "
                    "%s",
                    api__type_name(outs));
  if (json_array_size(outs) > 1)
    return api_fail(err, API_E_INVALID_FIELD,
                    "outputs has %zu entries; the "
                    "model has one output, \"reduced\"",
                    json_array_size(outs));
  json_array_foreach(outs, i, o)
  {
    if (!json_is_object(o))
      return api_fail(err, API_E_INVALID_FIELD,
                      "outputs[%zu] must be an "
                      "object, got %s",
                      i, api__type_name(o));
    if ((rc = check_keys(o, known, "field of outputs[0]:", err)) != 0)
      return rc;
    v = json_object_get(o, "name");
    if (v == NULL)
      return api_fail(err, API_E_MISSING_FIELD,
                      "outputs[%zu]: missing "
                      "\"name\"",
                      i);
    if (!json_is_string(v))
      return api_fail(err, API_E_INVALID_FIELD,
                      "outputs[%zu]: name must be "
                      "a string, got %s",
                      i, api__type_name(v));
    if (strcmp(json_string_value(v), "reduced") != 0) {
      show(json_string_value(v), shown, sizeof shown);
      return api_fail(err, API_E_UNKNOWN_FIELD,
                      "unknown output \"%s\"; the "
                      "model's output is \"reduced\"",
                      shown);
    }
    ps = json_object_get(o, "parameters");
    if (ps == NULL)
      continue;
    if (!json_is_object(ps))
      return api_fail(err, API_E_INVALID_FIELD,
                      "output \"reduced\": "
                      "parameters must be an object, got %s",
                      api__type_name(ps));
    if ((rc = check_keys(ps, pknown,
                         "parameter of output \"reduced\":", err)) != 0)
      return rc;
    v = json_object_get(ps, "binary_data");
    if (v != NULL) {
      if (!json_is_boolean(v))
        return api_fail(err, API_E_INVALID_FIELD,
                        "output \"reduced\": "
                        "binary_data must be true or false, got %s",
                        api__type_name(v));
      *bd = json_is_true(v);
    }
  }
  return 0;
}

/* The axes input: rank 1, INT64, at most RD_MAX_RANK entries. */
static int check_axes_input(const struct v2_input *t, struct rd_error *err)
{
  if (t->dtype != RD_INT64)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"axes\" must have "
                    "datatype INT64, got %s",
                    api_v2_datatype_name(t->dtype));
  if (t->rank != 1)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"axes\" must have "
                    "rank 1, got rank %zu",
                    t->rank);
  if (t->count > RD_MAX_RANK)
    return api_fail(err, API_E_INVALID_FIELD,
                    "input \"axes\" has %" PRIu64
                    " entries; at most %d are possible",
                    t->count, RD_MAX_RANK);
  return 0;
}

/* "id": a string of at most API_V2_ID_MAX bytes, echoed. */
static int decode_id(const json_t *v, struct api_v2_info *info,
                     struct rd_error *err)
{
  if (v == NULL)
    return 0;
  if (!json_is_string(v))
    return api_fail(err, API_E_INVALID_FIELD, "id must be a string, got %s",
                    api__type_name(v));
  if (json_string_length(v) > API_V2_ID_MAX ||
      strlen(json_string_value(v)) != json_string_length(v))
    return api_fail(err, API_E_INVALID_FIELD,
                    "id must be at most %d "
                    "bytes, without NUL",
                    API_V2_ID_MAX);
  memcpy(info->id, json_string_value(v), json_string_length(v) + 1);
  info->has_id = 1;
  return 0;
}

/* The inputs of a request (0: "data", 1: "axes") and their positions. */
struct v2_inputs {
  struct v2_input t[2];
  int have[2];
  int pos[2];
};

int api_v2_input_slot(const char *name, int op, int v, int *slot,
                      struct rd_error *err)
{
  char shown[SHOW_CUT + 8];

  if (strcmp(name, "data") == 0) {
    *slot = 0;
    return 0;
  }
  if (strcmp(name, "axes") == 0 && api__v2_has_axes_input(op, v)) {
    *slot = 1;
    return 0;
  }
  if (strcmp(name, "axes") == 0 && api__v2_axes_input_version(op) != 0)
    return api_fail(err, API_E_UNKNOWN_FIELD,
                    "input \"axes\" exists from "
                    "version %d of %s; at version %d use parameters.axes",
                    api__v2_axes_input_version(op), rd_op_name(op), v);
  if (strcmp(name, "axes") == 0)
    return api_fail(err, RD_E_ATTRIBUTE,
                    "input \"axes\" is not taken by "
                    "%s (it reduces one axis, given as parameters.axis)",
                    rd_op_name(op));
  show(name, shown, sizeof shown);
  return api_fail(err, API_E_UNKNOWN_FIELD,
                  "unknown input \"%s\"; the "
                  "inputs are \"data\"%s",
                  shown, api__v2_has_axes_input(op, v) ? " and \"axes\"" : "");
}

/* Reads the "inputs" list into `ins`. */
static int decode_inputs(const json_t *inputs, int blobs, int op, int v,
                         struct v2_inputs *ins, struct rd_error *err)
{
  const json_t *in, *name;
  size_t i;
  int rc, ti = 0;

  if (inputs == NULL)
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required field "
                    "\"inputs\"");
  if (!json_is_array(inputs))
    return api_fail(err, API_E_INVALID_FIELD, "inputs must be a list, got %s",
                    api__type_name(inputs));
  json_array_foreach(inputs, i, in)
  {
    if (!json_is_object(in))
      return api_fail(err, API_E_INVALID_FIELD,
                      "inputs[%zu] must be an "
                      "object, got %s",
                      i, api__type_name(in));
    name = json_object_get(in, "name");
    if (name == NULL)
      return api_fail(err, API_E_MISSING_FIELD,
                      "inputs[%zu]: missing "
                      "\"name\"",
                      i);
    if (!json_is_string(name))
      return api_fail(err, API_E_INVALID_FIELD,
                      "inputs[%zu]: name must be a "
                      "string, got %s",
                      i, api__type_name(name));
    if ((rc = api_v2_input_slot(json_string_value(name), op, v, &ti, err)) != 0)
      return rc;
    if (ins->have[ti])
      return api_fail(err, API_E_INVALID_FIELD, "input \"%s\" is given twice",
                      json_string_value(name));
    memset(&ins->t[ti], 0, sizeof ins->t[ti]);
    if ((rc = decode_input(in, i, json_string_value(name), blobs, &ins->t[ti],
                           err)) != 0)
      return rc;
    ins->have[ti] = 1;
    ins->pos[ti] = (int)i;
  }
  if (!ins->have[0])
    return api_fail(err, API_E_MISSING_FIELD, "missing input \"data\"");
  return 0;
}

/* A JSON input's elements into a new buffer (c->c.out). */
static int convert_input(struct conv *c, const struct v2_input *t,
                         const char *input, const int64_t *shape,
                         struct rd_error *err)
{
  memset(c, 0, sizeof *c);
  c->c.bad = bad_elem;
  c->c.ctx = c;
  c->c.dtype = t->dtype;
  c->c.esize = rd_dtype_size(t->dtype);
  c->input = input;
  c->dtname = api_v2_datatype_name(t->dtype);
  c->rank = t->rank;
  c->shape = shape;
  return convert_data(c, t->data, t->count, err);
}

/* The "axes" input into req and info. */
static int apply_axes(const struct v2_inputs *ins, struct api_request *req,
                      struct api_v2_info *info, struct rd_error *err)
{
  const struct v2_input *t = &ins->t[1];
  struct conv c;
  int rc;

  if ((rc = check_axes_input(t, err)) != 0)
    return rc;
  req->params.naxes = (size_t)t->count;
  info->axes_blob = t->blob;
  info->axes_size = t->blob_size;
  info->axes_first = ins->pos[1] < ins->pos[0];
  info->blob_total += t->blob_size;
  if (t->blob)
    return 0;
  if ((rc = convert_input(&c, t, "axes", t->shape, err)) != 0)
    return rc;
  memcpy(req->axes, c.c.out, (size_t)t->count * 8);
  api_tmem_free(c.c.out);
  return 0;
}

/* The "data" input into req and info (its elements if JSON). */
static int apply_data(const struct v2_inputs *ins, uint64_t max_elements,
                      struct api_request *req, struct api_v2_info *info,
                      struct rd_error *err)
{
  const struct v2_input *t = &ins->t[0];
  struct rd_params *p = &req->params;
  struct conv c;
  int rc;

  p->dtype = t->dtype;
  p->rank = t->rank;
  memcpy(req->shape, t->shape, sizeof t->shape);
  info->data_blob = t->blob;
  info->data_size = t->blob_size;
  info->blob_total += t->blob_size;
  if (t->blob)
    return 0;
  if (max_elements != 0 && t->count > max_elements)
    return api_fail(err, RD_E_TOO_LARGE,
                    "input \"data\" has %" PRIu64
                    " elements; the limit is %" PRIu64,
                    t->count, max_elements);
  if ((rc = convert_input(&c, t, "data", req->shape, err)) != 0)
    return rc;
  req->data = c.c.out;
  req->data_bytes = (size_t)(t->count * c.c.esize);
  return 0;
}

static int decode_root(const json_t *root, int blobs, uint64_t max_elements,
                       struct api_request *req, struct api_v2_info *info,
                       struct rd_error *err)
{
  static const char *const known[] = { "id", "parameters", "inputs", "outputs",
                                       NULL };
  struct v2_inputs ins;
  int bdo = -1, bd = -1, rc;

  if (!json_is_object(root))
    return api_fail(err, API_E_BAD_JSON,
                    "the request must be a JSON object, "
                    "got %s",
                    api__type_name(root));
  if ((rc = check_keys(root, known, "field", err)) != 0 ||
      (rc = decode_id(json_object_get(root, "id"), info, err)) != 0 ||
      (rc = decode_parameters(json_object_get(root, "parameters"), req, &bdo,
                              err)) != 0 ||
      (rc = decode_outputs(json_object_get(root, "outputs"), &bd, err)) != 0)
    return rc;
  info->binary_output = bd >= 0 ? bd : bdo > 0;
  memset(&ins, 0, sizeof ins);
  if ((rc = decode_inputs(json_object_get(root, "inputs"), blobs,
                          req->params.op, (int)req->params.opset, &ins, err)) !=
      0)
    return rc;
  /* The axes first: their errors come before the data's conversion. */
  if (ins.have[1] && (rc = apply_axes(&ins, req, info, err)) != 0)
    return rc;
  return apply_data(&ins, max_elements, req, info, err);
}

/* Empties `req` and `info` (keeping the route's op and version). */
static void reset(struct api_request *req, struct api_v2_info *info,
                  struct rd_error *err)
{
  int op = info->op, version = info->version;

  memset(req, 0, sizeof *req);
  rd_params_init(&req->params);
  req->params.shape = req->shape;
  req->params.axes = req->axes;
  req->params.op = op;
  req->params.opset = version != 0 ? version : api__v2_newest_version(op);
  memset(info, 0, sizeof *info);
  info->op = op;
  info->version = version;
  if (err != NULL) {
    err->code = RD_OK;
    err->msg[0] = '\0';
  }
}

int api_v2_decode_header(const char *json, size_t len, int blobs,
                         uint64_t max_elements, struct api_request *req,
                         struct api_v2_info *info, struct rd_error *err)
{
  json_error_t jerr;
  json_t *root;
  int rc;

  reset(req, info, err);
  root = json_loadb(json != NULL ? json : "", json != NULL ? len : 0,
                    JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL)
    return api_fail(err, API_E_BAD_JSON,
                    "invalid JSON%s at line %d, column "
                    "%d: %s",
                    blobs ? " header" : "", jerr.line, jerr.column, jerr.text);
  rc = decode_root(root, blobs, max_elements, req, info, err);
  json_decref(root);
  if (rc != 0)
    api_request_free(req);
  return rc;
}

int api_v2_set_axes(struct api_request *req, const struct api_v2_info *info,
                    const void *p, struct rd_error *err)
{
  const unsigned char *b = p;
  size_t n = (size_t)(info->axes_size / 8);

  if (n != req->params.naxes || n > RD_MAX_RANK)
    return api_fail(err, API_E_INTERNAL,
                    "axes blob of %zu entries for %zu "
                    "axes",
                    n, req->params.naxes);
  for (size_t i = 0; i < n; i++) {
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--)
      u = (u << 8) | b[i * 8 + (size_t)k];
    req->axes[i] = (int64_t)u;
  }
  return 0;
}

int api_v2_streamable(const struct api_v2_info *info)
{
  return info->data_blob && (!info->axes_blob || info->axes_first);
}

int api_v2_decode(const char *body, size_t len, size_t header_len,
                  uint64_t max_elements, struct api_request *req,
                  struct api_v2_info *info, struct rd_error *err)
{
  const unsigned char *blob;
  uint64_t rest, data_off, axes_off;
  int blobs = header_len != SIZE_MAX;
  int rc;

  if (!blobs)
    header_len = len;
  if (header_len > len) {
    reset(req, info, err);
    return api_fail(err, API_E_INVALID_FIELD,
                    "Inference-Header-Content-"
                    "Length %zu is larger than the body (%zu bytes)",
                    header_len, len);
  }
  rc = api_v2_decode_header(body, header_len, blobs, max_elements, req, info,
                            err);
  if (rc != 0)
    return rc;
  rest = (uint64_t)(len - header_len);
  if (rest != info->blob_total) {
    api_request_free(req);
    return api_fail(err, RD_E_STREAM,
                    "the body has %" PRIu64 " bytes after "
                    "the %zu-byte JSON header; the inputs' binary_data_size "
                    "add up to %" PRIu64,
                    rest, header_len, info->blob_total);
  }
  blob = (const unsigned char *)body + header_len;
  data_off = info->axes_blob && info->axes_first ? info->axes_size : 0;
  axes_off = info->data_blob && !info->axes_first ? info->data_size : 0;
  if (info->axes_blob &&
      (rc = api_v2_set_axes(req, info, blob + axes_off, err)) != 0) {
    api_request_free(req);
    return rc;
  }
  if (info->data_blob) {
    req->data = api_tmem_alloc((size_t)info->data_size);
    if (req->data == NULL)
      return api_fail(err, RD_E_NOMEM,
                      "out of memory for %" PRIu64 " bytes "
                      "of input \"data\"",
                      info->data_size);
    memcpy(req->data, blob + data_off, (size_t)info->data_size);
    req->data_bytes = (size_t)info->data_size;
    if (host_is_big_endian())
      swap_elems(req->data, req->data_bytes, rd_dtype_size(req->params.dtype));
  }
  return 0;
}

/* ================================================================== */
/* Responses                                                          */
/* ================================================================== */

int api_v2_encode_result(const struct api_v2_info *info,
                         const struct rd_plan *plan, const void *out,
                         struct api_buf *b, size_t *json_len)
{
  const char *op = rd_op_name(plan->op);
  const char *dt = api_v2_datatype_name(plan->out_dtype);
  size_t start = b->len, i;
  char *id = NULL;

  if (op == NULL || dt == NULL)
    return RD_E_INVALID;
  if (info->has_id) {
    json_t *s = json_string(info->id);
    id = s != NULL ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    if (id == NULL)
      return RD_E_NOMEM;
  }
  if (api_buf_printf(b,
                     "{\"model_name\":\"%s\",\"model_version\":\"%d\"%s%s"
                     ",\"outputs\":[{\"name\":\"reduced\",\"datatype\":\"%s\","
                     "\"shape\":[",
                     op, plan->version, id ? ",\"id\":" : "", id ? id : "",
                     dt) != 0)
    goto nomem;
  for (i = 0; i < plan->out_rank; i++)
    if (api_buf_printf(b, "%s%" PRId64, i ? "," : "", plan->out_shape[i]))
      goto nomem;
  if (info->binary_output) {
    size_t at;
    if (api_buf_printf(b,
                       "],\"parameters\":{\"binary_data_size\":%" PRIu64 "}}]}",
                       plan->out_bytes) != 0)
      goto nomem;
    *json_len = b->len - start;
    at = b->len;
    if (api_buf_append(b, out, (size_t)plan->out_bytes) != 0)
      goto nomem;
    if (host_is_big_endian())
      swap_elems((unsigned char *)b->data + at, (size_t)plan->out_bytes,
                 plan->out_elem_size);
  } else {
    if (api_buf_puts(b, "],\"data\":[") != 0)
      goto nomem;
    if (api__append_elems(b, plan, out) != 0)
      goto nomem;
    if (api_buf_puts(b, "]}]}") != 0)
      goto nomem;
    *json_len = b->len - start;
  }
  free(id);
  return 0;

nomem:
  free(id);
  b->len = start;
  if (b->data != NULL)
    b->data[start] = '\0';
  return RD_E_NOMEM;
}

int api_v2_encode_error(const struct rd_error *err, struct api_buf *b)
{
  char msg[RD_ERRMSG_MAX], text[RD_ERRMSG_MAX + 40];
  int code = err != NULL ? err->code : API_E_INTERNAL;

  if (err != NULL)
    memcpy(msg, err->msg, sizeof msg);
  else
    msg[0] = '\0';
  msg[sizeof msg - 1] = '\0';
  api_utf8_sanitize(msg);
  if (msg[0] == '\0')
    snprintf(msg, sizeof msg, "%s",
             code > API_E_BAD_JSON ? rd_strerror(code) : api_errname(code));
  snprintf(text, sizeof text, "%s: %s", api_errname(code), msg);
  return api__append_json(b, json_pack("{s:s}", "error", text));
}

int api_v2_encode_server_meta(const char *version, struct api_buf *b)
{
  return api__append_json(b, json_pack("{s:s,s:s,s:[s]}", "name", "reduced",
                                       "version", version, "extensions",
                                       "binary_tensor_data"));
}

/* {"name":..,"datatype":..,"shape":[-1]} plus the datatypes of version
 * `version` of `op` (any rank: the protocol has no way to say it, -1 is
 * the closest).  `kind`: 0 data, 1 axes (INT64, optional), 2 the output
 * (the data's datatypes, or INT64 for ArgMax/ArgMin). */
static json_t *tensor_meta(const char *name, int op, int version, int kind)
{
  const struct rd_op_info *oi = rd_op_info(op);
  int int64_only = kind == 1 || (kind == 2 && oi != NULL && oi->is_arg);
  json_t *o, *dts = json_array();
  int failed = 0;

  for (size_t i = 0; i < NDATATYPES && dts != NULL; i++)
    if (int64_only ? datatypes[i].dtype == RD_INT64
                   : rd_dtype_in_version(op, datatypes[i].dtype, version))
      failed |= json_array_append_new(dts, json_string(datatypes[i].name));
  o = json_pack("{s:s,s:s,s:[i],s:o}", "name", name, "datatype",
                int64_only ? "INT64" : "FP32", "shape", -1, "datatypes", dts);
  if (o != NULL && kind == 1)
    failed |= json_object_set_new(o, "optional", json_true());
  if (failed) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int api_v2_encode_model_meta(int op, int version, struct api_buf *b)
{
  const struct rd_op_info *oi = rd_op_info(op);
  int v = version != 0 ? version : api__v2_newest_version(op), failed = 0;
  json_t *root, *versions, *inputs;
  char num[16];

  if (oi == NULL)
    return RD_E_INVALID;
  versions = json_array();
  inputs = json_array();
  for (size_t i = 0; i < oi->nversions; i++) {
    snprintf(num, sizeof num, "%d", oi->versions[i]);
    failed |= json_array_append_new(versions, json_string(num));
  }
  failed |= json_array_append_new(inputs, tensor_meta("data", op, v, 0));
  if (api__v2_has_axes_input(op, v))
    failed |= json_array_append_new(inputs, tensor_meta("axes", op, v, 1));
  if (failed) {
    json_decref(versions);
    json_decref(inputs);
    return RD_E_NOMEM;
  }
  root = json_pack("{s:s,s:o,s:s,s:o,s:[o]}", "name", oi->name, "versions",
                   versions, "platform", "onnx_reduce", "inputs", inputs,
                   "outputs", tensor_meta("reduced", op, v, 2));
  return api__append_json(b, root);
}

int api_v2_encode_model_ready(int op, struct api_buf *b)
{
  if (rd_op_name(op) == NULL)
    return RD_E_INVALID;
  return api__append_json(b, json_pack("{s:s,s:b}", "name", rd_op_name(op),
                                       "ready", 1));
}
