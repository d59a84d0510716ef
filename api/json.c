/* json.c - the JSON wire format: POST /v1/reduce bodies in; result, error
 * and operator-table bodies out.  Parsing and string escaping are jansson's,
 * except the elements of a large flat input.data array of numbers, which
 * jsonfast.c reads from the text (see there); result data is written
 * straight into an api_buf (no node per element). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "f16.h"
#include "jsonconv.h"
#include "jsonfast.h"
#include "numfmt.h"
#include "tmem.h"

/* Bytes of a user string quoted in a message, and the quoted form's room. */
#define SHOW_CUT 96
#define SHOW_MAX 112

/* Enough for "input.data" plus RD_MAX_RANK indices of 20 digits. */
#define PATH_MAX_LEN (16 + RD_MAX_RANK * 22)

/* ================================================================== */
/* Message helpers                                                    */
/* ================================================================== */

/* JSON-escapes (ASCII only) the start of a UTF-8 string, without the quotes,
 * for messages: user text must not break the message or the log line. */
static void escape(const char *s, size_t len, char *out, size_t size)
{
  size_t cut = len, n;
  json_t *j;
  char *d;

  if (cut > SHOW_CUT) {
    cut = SHOW_CUT;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
      cut--; /* not inside a character */
  }
  j = json_stringn(s, cut);
  d = j != NULL ? json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
  json_decref(j);
  if (d == NULL) {
    snprintf(out, size, "?");
    return;
  }
  n = strlen(d) - 2; /* drop the quotes */
  if (n >= size - 3 || cut < len) {
    if (n > size - 4)
      n = size - 4;
    snprintf(out, size, "%.*s...", (int)n, d + 1);
  } else {
    snprintf(out, size, "%.*s", (int)n, d + 1);
  }
  free(d);
}

/* A JSON value as a message shows it: scalars as written (reals in their
 * shortest form), containers by type. */
static void show_value(const json_t *v, char *out, size_t size)
{
  char esc[SHOW_MAX - 2]; /* room for the quotes */
  double r;

  switch (json_typeof(v)) {
  case JSON_STRING:
    escape(json_string_value(v), json_string_length(v), esc, sizeof esc);
    snprintf(out, size, "\"%s\"", esc);
    break;
  case JSON_INTEGER:
    snprintf(out, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    break;
  case JSON_REAL:
    r = json_real_value(v);
    if (size >= API_NUMFMT_MAX)
      api_format_elem(out, RD_FLOAT64, &r);
    else
      snprintf(out, size, "%g", r);
    break;
  case JSON_OBJECT: snprintf(out, size, "{...}"); break;
  case JSON_ARRAY: snprintf(out, size, "[...]"); break;
  default: snprintf(out, size, "%s", api__type_name(v));
  }
}

/* ================================================================== */
/* Fields                                                             */
/* ================================================================== */

static const char *const top_fields[] = { "op",
                                          "opset",
                                          "axes",
                                          "axis",
                                          "keepdims",
                                          "noop_with_empty_axes",
                                          "select_last_index",
                                          "overflow",
                                          "input",
                                          NULL };
static const char *const input_fields[] = { "dtype", "shape", "data", NULL };

static int check_fields(const json_t *obj, const char *const *known,
                        const char *prefix, struct rd_error *err)
{
  const char *key = api__unknown_key(obj, known);
  char esc[SHOW_MAX];

  if (key == NULL)
    return 0;
  escape(key, strlen(key), esc, sizeof esc);
  return api_fail(err, API_E_UNKNOWN_FIELD, "unknown field \"%s%s\"", prefix,
                  esc);
}

/* An integer attribute; with `allow_bool`, true/false stand for 1/0. */
static int attr_int(const json_t *v, const char *name, int allow_bool,
                    int64_t *out, struct rd_error *err)
{
  char shown[SHOW_MAX];

  if (allow_bool && json_is_boolean(v)) {
    *out = json_is_true(v);
    return 0;
  }
  switch (api__as_int64(v, out)) {
  case 0: return 0;
  case -2:
    show_value(v, shown, sizeof shown);
    return api_fail(err, API_E_INVALID_FIELD,
                    "%s = %s is too large to be an exact integer", name, shown);
  default:
    show_value(v, shown, sizeof shown);
    return api_fail(err, API_E_INVALID_FIELD, "%s must be an integer%s, got %s",
                    name, allow_bool ? " or true/false" : "", shown);
  }
}

/* INVALID_FIELD unless `v` is a string. */
static int expect_string(const json_t *v, const char *name,
                         struct rd_error *err)
{
  if (json_is_string(v))
    return 0;
  return api_fail(err, API_E_INVALID_FIELD, "%s must be a string, got %s", name,
                  api__type_name(v));
}

/* name = "prefix[i]" (what snprintf "%s[%zu]" wrote) for the field names
 * of error messages; built for every entry, so without printf.  `name`
 * has room for the prefix and 24 more bytes (i < RD_MAX_RANK here). */
static void index_name(char *name, const char *prefix, size_t i)
{
  char t[API_NUMFMT_MAX];
  size_t n = strlen(prefix), k = api_format_u64(t, i);

  memcpy(name, prefix, n);
  name[n++] = '[';
  memcpy(name + n, t, k);
  n += k;
  name[n++] = ']';
  name[n] = '\0';
}

/* "a, b, c" from a name table queried by index (NULLs skipped). */
static void list_names(const char *(*name_of)(int), int lo, int hi, char *out,
                       size_t size)
{
  size_t n = 0;
  const char *s;
  int i, w;

  out[0] = '\0';
  for (i = lo; i <= hi; i++) {
    if ((s = name_of(i)) == NULL)
      continue;
    w = snprintf(out + n, size - n, "%s%s", n ? ", " : "", s);
    if (w < 0 || (size_t)w >= size - n)
      break;
    n += (size_t)w;
  }
}

static int decode_op(const json_t *root, struct rd_params *p,
                     struct rd_error *err)
{
  const json_t *v = json_object_get(root, "op");
  char esc[SHOW_MAX], names[256];
  enum rd_op op;
  int rc;

  if (v == NULL)
    return api_fail(err, API_E_MISSING_FIELD, "missing required field \"op\"");
  if ((rc = expect_string(v, "op", err)) != 0)
    return rc;
  if (rd_op_parse(json_string_value(v), &op) != 0) {
    escape(json_string_value(v), json_string_length(v), esc, sizeof esc);
    list_names(rd_op_name, 1, RD_OP_COUNT, names, sizeof names);
    return api_fail(err, RD_E_OP, "unknown op \"%s\"; valid ops: %s", esc,
                    names);
  }
  p->op = op;
  return 0;
}

static int decode_overflow(const json_t *root, struct rd_params *p,
                           struct rd_error *err)
{
  const json_t *v = json_object_get(root, "overflow");
  char esc[SHOW_MAX], names[128];
  enum rd_overflow pol;
  int rc;

  if (v == NULL)
    return 0;
  if ((rc = expect_string(v, "overflow", err)) != 0)
    return rc;
  if (rd_overflow_parse(json_string_value(v), &pol) != 0) {
    escape(json_string_value(v), json_string_length(v), esc, sizeof esc);
    list_names(rd_overflow_name, 0, 15, names, sizeof names);
    return api_fail(err, RD_E_POLICY,
                    "unknown overflow policy \"%s\"; valid policies: %s", esc,
                    names);
  }
  p->overflow = pol;
  return 0;
}

static int decode_axes(const json_t *root, struct api_request *req,
                       struct rd_error *err)
{
  const json_t *v = json_object_get(root, "axes");
  char name[32];
  size_t i, n;
  int rc;

  if (v == NULL)
    return 0;
  if (!json_is_array(v))
    return api_fail(err, API_E_INVALID_FIELD,
                    "axes must be a list of integers, got %s",
                    api__type_name(v));
  n = json_array_size(v);
  if (n > RD_MAX_RANK)
    return api_fail(err, API_E_INVALID_FIELD,
                    "axes has %zu entries; at most %d are possible (one per "
                    "dimension of an input of rank <= %d, without duplicates)",
                    n, RD_MAX_RANK, RD_MAX_RANK);
  for (i = 0; i < n; i++) {
    index_name(name, "axes", i);
    if ((rc = attr_int(json_array_get(v, i), name, 0, &req->axes[i], err)))
      return rc;
  }
  req->params.naxes = n;
  return 0;
}

/* An optional integer attribute that may not be given for every op. */
static int decode_op_attr(const json_t *root, const char *name, int allow_bool,
                          int op, int64_t *out, struct rd_error *err)
{
  const json_t *v = json_object_get(root, name);
  int64_t x;
  int rc;

  if (v == NULL)
    return 0;
  if ((rc = api__attr_allowed(op, name, name, err)) != 0 ||
      (rc = attr_int(v, name, allow_bool, &x, err)) != 0)
    return rc;
  return api__guard_unset(name, name, x, out, err);
}

static int decode_attrs(const json_t *root, struct api_request *req,
                        struct rd_error *err)
{
  struct rd_params *p = &req->params;
  const json_t *v;
  int rc;

  if ((rc = decode_op(root, p, err)) != 0)
    return rc;
  if ((v = json_object_get(root, "opset")) != NULL &&
      (rc = attr_int(v, "opset", 0, &p->opset, err)) != 0)
    return rc;
  if ((v = json_object_get(root, "keepdims")) != NULL &&
      (rc = attr_int(v, "keepdims", 1, &p->keepdims, err)) != 0)
    return rc;
  if ((rc = decode_op_attr(root, "noop_with_empty_axes", 1, p->op,
                           &p->noop_with_empty_axes, err)) != 0 ||
      (rc = decode_op_attr(root, "axis", 0, p->op, &p->axis, err)) != 0 ||
      (rc = decode_op_attr(root, "select_last_index", 1, p->op,
                           &p->select_last_index, err)) != 0)
    return rc;
  if ((rc = decode_overflow(root, p, err)) != 0)
    return rc;
  if (json_object_get(root, "axes") != NULL &&
      (rc = api__attr_allowed(p->op, "axes", "axes", err)) != 0)
    return rc;
  return decode_axes(root, req, err);
}

/* The dtypes in listing order, by index (for list_names). */
static const char *dtype_at(int i)
{
  return i >= 0 && i < RD_NDTYPES ? rd_dtype_name(rd_dtypes[i]) : NULL;
}

static int decode_dtype(const json_t *input, struct rd_params *p,
                        struct rd_error *err)
{
  const json_t *v = json_object_get(input, "dtype");
  char esc[SHOW_MAX], names[192];
  enum rd_dtype dt;
  int rc;

  if (v == NULL)
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required field \"input.dtype\"");
  if ((rc = expect_string(v, "input.dtype", err)) != 0)
    return rc;
  if (rd_dtype_parse(json_string_value(v), &dt) != 0) {
    escape(json_string_value(v), json_string_length(v), esc, sizeof esc);
    list_names(dtype_at, 0, RD_NDTYPES - 1, names, sizeof names);
    return api_fail(err, RD_E_DTYPE,
                    "unsupported dtype \"%s\"; supported: %s (also \"float\", "
                    "\"double\")",
                    esc, names);
  }
  p->dtype = dt;
  return 0;
}

/* input.shape into shape[]; *rank = its length. */
static int decode_shape(const json_t *v, int64_t *shape, size_t *rank,
                        struct rd_error *err)
{
  char name[40];
  size_t i, n;
  int rc;

  if (!json_is_array(v))
    return api_fail(err, API_E_INVALID_FIELD,
                    "input.shape must be a list of integers, got %s",
                    api__type_name(v));
  n = json_array_size(v);
  if (n > RD_MAX_RANK)
    return api_fail(err, RD_E_RANK,
                    "input.shape has %zu dimensions; at most %d are supported",
                    n, RD_MAX_RANK);
  for (i = 0; i < n; i++) {
    index_name(name, "input.shape", i);
    if ((rc = attr_int(json_array_get(v, i), name, 0, &shape[i], err)))
      return rc;
  }
  *rank = n;
  return 0;
}

static int input_shape(const json_t *shape_v, const int64_t *nest, size_t nrank,
                       uint64_t max_elements, struct api_request *req,
                       uint64_t *count, struct rd_error *err);

/* ================================================================== */
/* Elements                                                           */
/* ================================================================== */

struct fill {
  struct api__conv c; /* c.ctx is this fill */
  const char *dtname;
  size_t rank;         /* nesting depth of the elements */
  const int64_t *dims; /* expected length at each depth */
  int scalar;          /* data is a bare element */
};

/* api__conv's bad(): names the element input.data[i] (v1's form). */
static int bad_elem(const struct api__conv *c, const json_t *v, const char *why,
                    struct rd_error *err)
{
  const struct fill *f = c->ctx;
  char shown[SHOW_MAX], where[48];

  show_value(v, shown, sizeof shown);
  if (f->scalar)
    snprintf(where, sizeof where, "input.data");
  else
    snprintf(where, sizeof where, "input.data[%" PRIu64 "]", c->idx);
  return api_fail(err, API_E_INVALID_ELEMENT, "%s = %s %s (dtype %s)", where,
                  shown, why, f->dtname);
}

/* Walks `v` at nesting `depth` in row-major order: checks that every list
 * has the length dims[depth] and that elements sit exactly at depth
 * `rank`, and (if f->c.out) converts the elements.  Recursion depth is at
 * most RD_MAX_RANK. */
static int walk(struct fill *f, const json_t *v, size_t depth, char *path,
                size_t plen, struct rd_error *err)
{
  char shape[PATH_MAX_LEN];
  size_t i, n;
  int rc;

  if (depth == f->rank) {
    if (json_is_array(v)) {
      api__shape_text(f->dims, f->rank, shape, sizeof shape);
      return api_fail(err, API_E_SHAPE_MISMATCH,
                      "%s is a list, but the data is nested as shape %s "
                      "(from the first elements)",
                      path, shape);
    }
    return api__put_elem(&f->c, v, err);
  }
  if (!json_is_array(v)) {
    api__shape_text(f->dims, f->rank, shape, sizeof shape);
    return api_fail(err, API_E_SHAPE_MISMATCH,
                    "%s is not a list, but the data is nested as shape %s "
                    "(from the first elements)",
                    path, shape);
  }
  n = json_array_size(v);
  if ((int64_t)n != f->dims[depth]) {
    api__shape_text(f->dims, f->rank, shape, sizeof shape);
    return api_fail(err, API_E_SHAPE_MISMATCH,
                    "%s has %zu elements; expected %" PRId64 " (the data is "
                    "nested as shape %s from the first elements)",
                    path, n, f->dims[depth], shape);
  }
  for (i = 0; i < n; i++) {
    const json_t *e = json_array_get(v, i);
    if (depth + 1 == f->rank && !json_is_array(e)) {
      /* An element: its message names the flat index, not the path, so
       * the path is only formatted for lists (per element it cost more
       * than the conversion). */
      if ((rc = api__put_elem(&f->c, e, err)) != 0)
        return rc;
      continue;
    }
    snprintf(path + plen, PATH_MAX_LEN - plen, "[%zu]", i);
    rc = walk(f, e, depth + 1, path, plen + strlen(path + plen), err);
    if (rc != 0)
      return rc;
  }
  path[plen] = '\0';
  return 0;
}

/* Converts the elements of the flat array `fl` of `body` (jf_locate())
 * into f->c.out, sized for fl->count elements, in one pass that also
 * checks their syntax; sets fl->count to the elements read and
 * fl->checked.  The common elements are stored directly; any other (a
 * real for an integer dtype, a value out of the dtype's range) goes
 * through put_elem() on a jansson value of what the parser would have
 * made, for the same checks and messages: the first such error is left
 * in *elem_rc and `err` (it is reported only if the shape checks, which
 * come first, pass), and nothing more is stored after it.  1 means the
 * fast path cannot take the array: the caller decodes again with
 * jansson. */
static int fill_flat(struct fill *f, const char *body, struct jf_flat *fl,
                     int *elem_rc, struct rd_error *err)
{
  size_t pos = fl->open + 1;
  int dt = f->c.dtype, is_float = api__is_float(dt), last = 0, rc;
  int narrow = is_float && dt != RD_FLOAT64;
  uint64_t max_neg = 0, max_pos = 0, k = 0;
  struct jf_num n;
  double d;
  json_t *v;

  *elem_rc = 0;
  /* bool takes true/false only: every number goes to put_elem() (which
   * refuses it), as with an empty range. */
  if (!is_float && dt != RD_BOOL)
    api__int_range(dt, &max_neg, &max_pos);
  while (!last) {
    unsigned char *dst;
    if (narrow && *elem_rc == 0) {
      /* Until the end or an element the fast conversion leaves open. */
      rc = jf_fill_narrow(body, fl->close, &pos, dt, f->c.out, fl->count, &k,
                          &n, &last);
      if (rc < 0)
        return 1;
      if (rc == 0)
        break;
    } else if (k == fl->count ||
               jf_read(body, fl->close, &pos, &n, &last) != 0) {
      return 1;
    }
    dst = f->c.out + k * f->c.esize;
    k++;
    if (*elem_rc != 0)
      continue; /* syntax still checked to the end */
    if (is_float) {
      /* float64, or undecided by jf_fill_narrow(): exactly. */
      if (jf_exact(&n, &d) != 0)
        return 1;
      api__store_float(dt, d, dst);
      continue;
    }
    if (n.kind == JF_INT && max_pos != 0 &&
        (n.i >= 0 ? (uint64_t)n.i <= max_pos
                  : (uint64_t)0 - (uint64_t)n.i <= max_neg)) {
      api__store_int(dt, n.i < 0,
                     n.i < 0 ? (uint64_t)0 - (uint64_t)n.i : (uint64_t)n.i,
                     dst);
      continue;
    }
    if (n.kind == JF_REAL && jf_exact(&n, &d) != 0)
      return 1;
    v = n.kind == JF_INT ? json_integer(n.i) : json_real(d);
    if (v == NULL)
      return 1;
    f->c.idx = k - 1;
    rc = api__put_elem(&f->c, v, err);
    json_decref(v);
    if (rc != 0)
      *elem_rc = rc;
  }
  fl->count = k;
  fl->checked = 1;
  return 0;
}

/* The fast path's input.data (decode_input() with `fl`): the elements are
 * read first, into a buffer for the bound jf_locate() gave (pages not
 * written are never resident), then counted against the shape as the
 * ordinary path does before converting, then the first element error, if
 * any, is reported.  1: not taken. */
static int fast_input(struct fill *f, const json_t *shape_v, uint64_t max_el,
                      struct api_request *req, const char *body,
                      struct jf_flat *fl, struct rd_error *err)
{
  struct rd_error eerr;
  uint64_t count;
  int64_t nest[1];
  int rc, elem_rc;
  void *p;

  if (fl->count > SIZE_MAX / 8)
    return 1;
  f->c.out = api_tmem_alloc((size_t)fl->count * f->c.esize);
  if (f->c.out == NULL)
    return 1; /* the ordinary path says what it says */
  memset(&eerr, 0, sizeof eerr);
  if ((rc = fill_flat(f, body, fl, &elem_rc, &eerr)) == 0) {
    nest[0] = (int64_t)fl->count;
    f->rank = 1;
    f->dims = nest;
    rc = input_shape(shape_v, nest, 1, max_el, req, &count, err);
    if (rc == 0 && elem_rc != 0) {
      if (err != NULL)
        *err = eerr;
      rc = elem_rc;
    }
  }
  if (rc != 0) {
    api_tmem_free(f->c.out);
    f->c.out = NULL;
    return rc;
  }
  /* Give back the pages of the bound's unused tail. */
  if ((p = api_tmem_realloc(f->c.out, (size_t)count * f->c.esize)) != NULL)
    f->c.out = p;
  req->data = f->c.out;
  req->data_bytes = (size_t)count * f->c.esize;
  return 0;
}

/* The shape the nesting of `data` implies, following first elements. */
static int nesting(const json_t *data, int64_t *dims, size_t *rank,
                   struct rd_error *err)
{
  const json_t *v = data;
  size_t r = 0;

  while (json_is_array(v)) {
    if (r == RD_MAX_RANK)
      return api_fail(err, RD_E_RANK,
                      "input.data is nested deeper than %d levels",
                      RD_MAX_RANK);
    dims[r++] = (int64_t)json_array_size(v);
    if (json_array_size(v) == 0)
      break;
    v = json_array_get(v, 0);
  }
  *rank = r;
  return 0;
}

/* input.dtype and input.data of the object `input` (checked). */
static int input_fields_get(const json_t *root, struct rd_params *p,
                            const json_t **input, const json_t **data,
                            struct rd_error *err)
{
  int rc;

  *input = json_object_get(root, "input");
  if (*input == NULL)
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required field \"input\"");
  if (!json_is_object(*input))
    return api_fail(err, API_E_INVALID_FIELD, "input must be an object, got %s",
                    api__type_name(*input));
  if ((rc = check_fields(*input, input_fields, "input.", err)) != 0)
    return rc;
  if ((rc = decode_dtype(*input, p, err)) != 0)
    return rc;
  *data = json_object_get(*input, "data");
  if (*data == NULL)
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required field \"input.data\"");
  if (json_is_object(*data))
    return api_fail(err, API_E_INVALID_FIELD,
                    "input.data must be a list or a single element, got an "
                    "object");
  return 0;
}

/* input.shape (`shape_v`, NULL if absent) against the nesting of the data
 * (rank `nrank`, dims `nest`).  Reads the shape into req (or takes the
 * nesting's), counts it against `max_elements`, and checks that the data
 * fits it. */
static int input_shape(const json_t *shape_v, const int64_t *nest, size_t nrank,
                       uint64_t max_elements, struct api_request *req,
                       uint64_t *count, struct rd_error *err)
{
  struct rd_params *p = &req->params;
  char s1[PATH_MAX_LEN], s2[PATH_MAX_LEN];
  size_t i;
  int rc;

  if (shape_v != NULL) {
    if ((rc = decode_shape(shape_v, req->shape, &p->rank, err)) != 0)
      return rc;
  } else {
    memcpy(req->shape, nest, nrank * sizeof nest[0]);
    p->rank = nrank;
  }
  /* Counted first: a huge shape with tiny data is an error, not a huge
   * allocation. */
  if ((rc = rd_shape_count(p->rank, req->shape, p->dtype, count, err)))
    return rc;
  if (max_elements != 0 && *count > max_elements)
    return api_fail(err, RD_E_TOO_LARGE,
                    "input has %" PRIu64 " elements; the limit is %" PRIu64,
                    *count, max_elements);
  if (shape_v == NULL)
    return 0;
  /* s1 (the shape as text) only for the errors: printf is not free. */
  if (nrank == 0 && p->rank != 0) {
    api__shape_text(req->shape, p->rank, s1, sizeof s1);
    return api_fail(err, API_E_SHAPE_MISMATCH,
                    "input.data is a single element (rank 0) but "
                    "input.shape is %s; write the data as a list",
                    s1);
  }
  if (nrank == 1) {
    /* Flat data: any shape with the same element count. */
    if ((uint64_t)nest[0] != *count) {
      api__shape_text(req->shape, p->rank, s1, sizeof s1);
      return api_fail(err, API_E_SHAPE_MISMATCH,
                      "input.data has %" PRId64 " elements; shape %s "
                      "needs %" PRIu64,
                      nest[0], s1, *count);
    }
  } else if (nrank > 1) {
    for (i = 0; i < nrank && nrank == p->rank; i++)
      if (nest[i] != req->shape[i])
        break;
    if (nrank != p->rank || i < nrank) {
      api__shape_text(req->shape, p->rank, s1, sizeof s1);
      api__shape_text(nest, nrank, s2, sizeof s2);
      return api_fail(err, API_E_SHAPE_MISMATCH,
                      "input.data is nested as shape %s but input.shape "
                      "is %s",
                      s2, s1);
    }
  }
  return 0;
}

/* Checks the structure of `data`, then allocates and converts the `count` elements into req->data. */
static int input_convert(struct fill *f, const json_t *data, uint64_t count,
                         struct api_request *req, struct rd_error *err)
{
  char path[PATH_MAX_LEN];
  uint64_t bytes;
  int rc;

  /* Structure first, then allocate, then convert: the first elements of
   * ragged data must not size an allocation. */
  snprintf(path, sizeof path, "input.data");
  if ((rc = walk(f, data, 0, path, strlen(path), err)) != 0)
    return rc;
  bytes = count * f->c.esize; /* rd_shape_count checked it fits in int64 */
  if (bytes > SIZE_MAX - 1)
    return api_fail(err, RD_E_TOO_LARGE,
                    "input of %" PRIu64 " bytes does "
                    "not fit in memory",
                    bytes);
  /* Never NULL, even for an empty tensor. */
  f->c.out = api_tmem_alloc((size_t)bytes);
  if (f->c.out == NULL)
    return api_fail(err, RD_E_NOMEM,
                    "out of memory for %" PRIu64 " bytes of input", bytes);
  f->c.idx = 0;
  rc = walk(f, data, 0, path, strlen(path), err);
  if (rc != 0) {
    api_tmem_free(f->c.out);
    f->c.out = NULL;
    return rc;
  }
  req->data = f->c.out;
  req->data_bytes = (size_t)bytes;
  return 0;
}

/* `fl`: input.data was parsed as "[]" and its elements are the flat array
 * `fl` of `body` (the fast path); NULL: jansson's tree has them.  Returns
 * 1 if the fast path gives up (nothing is left allocated). */
/* The elements jsonpush.c converted (api__json_decode_pushed()). */
struct pushed {
  int dtype;
  void **data;
  uint64_t count;
};

/* input.data was parsed as "[]" and `pu` has its elements: the shape
 * checks of fast_input(), then the data is taken.  1: not taken. */
static int pushed_input(struct fill *f, const json_t *shape_v, uint64_t max_el,
                        struct api_request *req, struct pushed *pu,
                        struct rd_error *err)
{
  int64_t nest[1];
  uint64_t count;
  void *p;
  int rc;

  if (req->params.dtype != pu->dtype)
    return 1;
  nest[0] = (int64_t)pu->count;
  f->rank = 1;
  f->dims = nest;
  if ((rc = input_shape(shape_v, nest, 1, max_el, req, &count, err)) != 0)
    return rc;
  /* Give back the pages of the bound's unused tail. */
  p = api_tmem_realloc(*pu->data, (size_t)count * f->c.esize);
  req->data = p != NULL ? p : *pu->data;
  req->data_bytes = (size_t)count * f->c.esize;
  *pu->data = NULL;
  return 0;
}

static int decode_input(const json_t *root, uint64_t max_elements,
                        struct api_request *req, struct rd_error *err,
                        const char *body, struct jf_flat *fl, struct pushed *pu)
{
  struct rd_params *p = &req->params;
  const json_t *input = NULL, *data = NULL;
  int64_t nest[RD_MAX_RANK];
  size_t nrank = 0;
  uint64_t count;
  struct fill f;
  int rc;

  if ((rc = input_fields_get(root, p, &input, &data, err)) != 0)
    return rc;
  memset(&f, 0, sizeof f);
  f.c.dtype = p->dtype;
  f.c.bad = bad_elem;
  f.c.ctx = &f;
  f.dtname = rd_dtype_name(p->dtype);
  f.c.esize = rd_dtype_size(p->dtype);
  if (pu != NULL) {
    if (!json_is_array(data) || json_array_size(data) != 0)
      return 1;
    return pushed_input(&f, json_object_get(input, "shape"), max_elements, req,
                        pu, err);
  }
  if (fl != NULL) {
    if (!json_is_array(data) || json_array_size(data) != 0)
      return 1; /* cannot happen when jf_locate() found it; be safe */
    return fast_input(&f, json_object_get(input, "shape"), max_elements, req,
                      body, fl, err);
  }
  if ((rc = nesting(data, nest, &nrank, err)) != 0)
    return rc;
  if ((rc = input_shape(json_object_get(input, "shape"), nest, nrank,
                        max_elements, req, &count, err)) != 0)
    return rc;
  f.scalar = nrank == 0;
  f.rank = nrank;
  f.dims = nest;
  return input_convert(&f, data, count, req, err);
}

/* Parses `text` and decodes the request; `fl` as in decode_input().  1:
 * the fast path gave up (or its document did not parse): decode again. */
static int decode_doc(const char *text, size_t len, uint64_t max_elements,
                      struct api_request *req, struct rd_error *err,
                      const char *body, struct jf_flat *fl, struct pushed *pu)
{
  json_error_t jerr;
  json_t *root;
  int rc;

  memset(req, 0, sizeof *req);
  rd_params_init(&req->params);
  req->params.shape = req->shape;
  req->params.axes = req->axes;
  if (err != NULL) {
    err->code = RD_OK;
    err->msg[0] = '\0';
  }

  root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
  if (root == NULL) {
    if (fl != NULL || pu != NULL)
      return 1; /* the ordinary path reports it, positions in the body */
    return api_fail(err, API_E_BAD_JSON,
                    "invalid JSON at line %d, column "
                    "%d: %s",
                    jerr.line, jerr.column, jerr.text);
  }
  if (!json_is_object(root))
    rc = api_fail(err, API_E_BAD_JSON,
                  "the body must be a JSON object, got "
                  "%s",
                  api__type_name(root));
  else if ((rc = check_fields(root, top_fields, "", err)) == 0 &&
           (rc = decode_attrs(root, req, err)) == 0)
    rc = decode_input(root, max_elements, req, err, body, fl, pu);
  json_decref(root);
  return rc;
}

/* The fast path (jsonfast.c): jansson parses the body with the flat
 * input.data array cut out as "[]", and the elements are converted from
 * the text.  1: not taken. */
static int decode_fast(const char *body, size_t len, uint64_t max_elements,
                       struct api_request *req, struct rd_error *err)
{
  struct jf_flat fl;
  char *doc;
  size_t head, tail;
  int rc;

  if (!jf_locate(body, len, &fl))
    return 1;
  fl.checked = 0;
  head = fl.open;
  tail = len - fl.close - 1;
  if ((doc = malloc(head + 2 + tail)) == NULL)
    return 1;
  memcpy(doc, body, head);
  memcpy(doc + head, "[]", 2);
  memcpy(doc + head + 2, body + fl.close + 1, tail);
  rc = decode_doc(doc, head + 2 + tail, max_elements, req, err, body, &fl,
                  NULL);
  free(doc);
  /* An error found before the elements were read stands only if the
   * array is valid (jansson would have reported its syntax first). */
  if (rc < 0 && !fl.checked && !jf_find(body, len, &fl))
    return 1;
  return rc;
}

int api_json_decode_path(const char *body, size_t len, uint64_t max_elements,
                         struct api_request *req, struct rd_error *err,
                         int fast)
{
  int rc;

  /* An error of the fast path is final: it saw the same document and made
   * the same checks in the same order (element errors go through
   * put_elem() on the value jansson would have made). */
  if (fast == 3)
    return body != NULL ? decode_fast(body, len, max_elements, req, err) : 1;
  if (body != NULL && (fast == 2 || (fast == 1 && len >= JF_MIN_BODY)) &&
      (rc = decode_fast(body, len, max_elements, req, err)) != 1)
    return rc;
  return decode_doc(body != NULL ? body : "", body != NULL ? len : 0,
                    max_elements, req, err, NULL, NULL, NULL);
}

int api__json_decode_pushed(const char *doc, size_t len, uint64_t max_elements,
                            int dtype, void **data, uint64_t count,
                            struct api_request *req, struct rd_error *err)
{
  struct pushed pu = { dtype, data, count };
  int rc = decode_doc(doc, len, max_elements, req, err, NULL, NULL, &pu);

  if (rc == 1)
    memset(req, 0, sizeof *req);
  return rc;
}

int api_json_decode(const char *body, size_t len, uint64_t max_elements,
                    struct api_request *req, struct rd_error *err)
{
  return api_json_decode_path(body, len, max_elements, req, err, 1);
}

void api_request_free(struct api_request *req)
{
  api_tmem_free(req->data);
  req->data = NULL;
  req->data_bytes = 0;
}

/* ================================================================== */
/* Responses                                                          */
/* ================================================================== */

/* Appends v in decimal.  0 or RD_E_NOMEM. */
static int put_i64(struct api_buf *b, int64_t v)
{
  char t[API_NUMFMT_MAX];
  size_t n = api_format_i64(t, v);

  return api_buf_append(b, t, n);
}

int api_json_encode_result(const struct rd_plan *plan, int64_t opset,
                           const void *out, struct api_buf *b)
{
  const char *op = rd_op_name(plan->op);
  const char *dt = rd_dtype_name(plan->out_dtype);
  size_t start = b->len, i;

  if (op == NULL || dt == NULL)
    return RD_E_INVALID;
  /* Pieces and api_format_i64() rather than printf: this runs for every
   * small request. */
  if (api_buf_puts(b, "{\"op\":\"") != 0 || api_buf_puts(b, op) != 0 ||
      api_buf_puts(b, "\",\"opset\":") != 0 || put_i64(b, opset) != 0 ||
      api_buf_puts(b, ",\"op_version\":") != 0 ||
      put_i64(b, plan->version) != 0 ||
      api_buf_puts(b, ",\"output\":{\"dtype\":\"") != 0 ||
      api_buf_puts(b, dt) != 0 || api_buf_puts(b, "\",\"shape\":[") != 0)
    goto nomem;
  for (i = 0; i < plan->out_rank; i++)
    if ((i != 0 && api_buf_puts(b, ",") != 0) ||
        put_i64(b, plan->out_shape[i]) != 0)
      goto nomem;
  if (api_buf_puts(b, "],\"data\":[") != 0)
    goto nomem;
  if (api__append_elems(b, plan, out) != 0)
    goto nomem;
  if (api_buf_puts(b, "]}}") != 0)
    goto nomem;
  return 0;

nomem:
  b->len = start;
  if (b->data != NULL)
    b->data[start] = '\0';
  return RD_E_NOMEM;
}

int api_json_encode_error(const struct rd_error *err, struct api_buf *b)
{
  char msg[RD_ERRMSG_MAX];
  int code = err != NULL ? err->code : API_E_INTERNAL;

  if (err != NULL)
    memcpy(msg, err->msg, sizeof msg);
  else
    msg[0] = '\0';
  msg[sizeof msg - 1] = '\0';
  /* The library's messages quote user text and may have cut a character. */
  api_utf8_sanitize(msg);
  if (msg[0] == '\0')
    snprintf(msg, sizeof msg, "%s",
             code > API_E_BAD_JSON ? rd_strerror(code) : api_errname(code));
  return api__append_json(b, json_pack("{s:{s:s,s:s}}", "error", "code",
                                       api_errname(code), "message", msg));
}

/* json_object_set_new() drops `value` on every failure, so one check at the
 * end covers a whole object; `o` is freed on failure. */
static json_t *finish_object(json_t *o, int failed)
{
  if (failed) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* The axes form of a version: "axis" (ArgMax/ArgMin: one attribute),
 * "input" (from the axes-input version), else "attribute". */
static const char *axes_form(const struct rd_op_info *oi, int v)
{
  if (oi->is_arg)
    return "axis";
  return v >= oi->axes_input_version ? "input" : "attribute";
}

/* One element of "versions". */
static json_t *version_json(const struct rd_op_info *oi, size_t vi)
{
  int v = oi->versions[vi], failed = 0;
  json_t *o = json_object(), *dtypes = json_array(), *opsets = json_array();

  for (int d = 0; d < RD_NDTYPES; d++)
    if (rd_dtype_in_version(oi->op, rd_dtypes[d], v))
      failed |= json_array_append_new(dtypes,
                                      json_string(rd_dtype_name(rd_dtypes[d])));
  failed |= json_array_append_new(opsets, json_integer(v));
  /* The newest version is open-ended: every later opset maps to it. */
  failed |= json_array_append_new(opsets,
                                  vi + 1 < oi->nversions
                                    ? json_integer(oi->versions[vi + 1] - 1)
                                    : json_null());
  failed |= json_object_set_new(o, "version", json_integer(v));
  failed |= json_object_set_new(o, "opsets", opsets);
  failed |= json_object_set_new(o, "axes", json_string(axes_form(oi, v)));
  failed |= json_object_set_new(o, "noop_with_empty_axes",
                                json_boolean(!oi->is_arg &&
                                             v >= oi->axes_input_version));
  failed |= json_object_set_new(o, "select_last_index",
                                json_boolean(oi->is_arg &&
                                             v >= oi->select_last_version));
  failed |= json_object_set_new(o, "dtypes", dtypes);
  failed |= json_object_set_new(o, "output_dtype",
                                json_string(oi->is_arg ? "int64" : "input"));
  return finish_object(o, failed);
}

int api_json_encode_ops(struct api_buf *b)
{
  json_t *root = json_object(), *ops = json_array(), *op_o, *versions;
  const struct rd_op_info *oi;
  int failed = 0;

  for (int op = 1; op <= RD_OP_COUNT; op++) {
    if ((oi = rd_op_info(op)) == NULL)
      continue;
    op_o = json_object();
    versions = json_array();
    for (size_t vi = 0; vi < oi->nversions; vi++)
      failed |= json_array_append_new(versions, version_json(oi, vi));
    failed |= json_object_set_new(op_o, "op", json_string(oi->name));
    failed |= json_object_set_new(op_o, "versions", versions);
    failed |= json_array_append_new(ops, op_o);
  }
  failed |= json_object_set_new(root, "ops", ops);
  root = finish_object(root, failed);
  return api__append_json(b, root);
}
