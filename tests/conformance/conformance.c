/* conformance.c - runs the vendored ONNX backend node cases against reduced.
 *
 *   conformance URL DIR...
 *
 * Each DIR holds index.json and the case directories.  For each case: reads
 * input_0.pb (data), input_1.pb (axes) and output_0.pb with the small
 * TensorProto reader below, builds the JSON request (op, opset, axes from
 * input_1.pb, and every attribute of attributes_effective: keepdims,
 * noop_with_empty_axes, or for ArgMax/ArgMin axis and select_last_index),
 * POSTs it to URL/v1/reduce and checks the ONNX runner's rule: exact shape,
 * exact dtype, |actual - expected| <= 1e-7 + 1e-3 * |expected| per element,
 * NaN == NaN, infinities exact; bool answers (JSON true/false) and int64
 * answers (ArgMax/ArgMin) must be equal.  Prints one line per case and "N
 * passed, N failed"; exits 1 on any failure, 2 on a usage or setup error.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#define CONF_ATOL 1e-7
#define CONF_RTOL 1e-3
#define CONF_MAX_DIMS 32

/* ------------------------------------------------------------------ */
/* TensorProto (onnx.proto3), just the fields the cases use           */
/* ------------------------------------------------------------------ */

struct tensor {
  int data_type; /* TensorProto.DataType: 1 float, 2 uint8, 3 int8,
                               * 4 uint16, 5 int16, 6 int32, 7 int64, 9 bool,
                               * 11 double, 12 uint32 */
  size_t ndims;
  int64_t dims[CONF_MAX_DIMS];
  size_t n;   /* elements read */
  double *f;  /* values of a float/double tensor */
  int64_t *i; /* values of an integer or bool tensor */
  char name[128];
};

struct reader {
  const unsigned char *p, *end;
};

static int rd_varint(struct reader *r, uint64_t *v)
{
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end)
      return -1;
    unsigned char b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

static int rd_bytes(struct reader *r, size_t n, const unsigned char **out)
{
  if ((size_t)(r->end - r->p) < n)
    return -1;
  *out = r->p;
  r->p += n;
  return 0;
}

static int push_f(struct tensor *t, double v)
{
  double *g = realloc(t->f, (t->n + 1) * sizeof *g);
  if (!g)
    return -1;
  t->f = g;
  t->f[t->n++] = v;
  return 0;
}

static int push_i(struct tensor *t, int64_t v)
{
  int64_t *g = realloc(t->i, (t->n + 1) * sizeof *g);
  if (!g)
    return -1;
  t->i = g;
  t->i[t->n++] = v;
  return 0;
}

static float le_f32(const unsigned char *b)
{
  uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
               (uint32_t)b[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t le_u64(const unsigned char *b)
{
  uint64_t u = 0;
  for (int k = 7; k >= 0; k--)
    u = u << 8 | b[k];
  return u;
}

static int is_int_type(int data_type)
{
  return (data_type >= 2 && data_type <= 7) || data_type == 9 ||
         data_type == 12;
}

/* Bytes per element of an integer or bool type; 0 otherwise. */
static size_t int_size(int data_type)
{
  switch (data_type) {
  case 2:
  case 3:
  case 9: return 1;
  case 4:
  case 5: return 2;
  case 6:
  case 12: return 4;
  case 7: return 8;
  default: return 0;
  }
}

/* A little-endian integer element of `size` bytes, sign-extended when
 * `is_signed`. */
static int64_t le_int(const unsigned char *b, size_t size, int is_signed)
{
  uint64_t u = 0;
  for (size_t k = size; k-- > 0;)
    u = u << 8 | b[k];
  if (is_signed && size < 8 && (u >> (size * 8 - 1)) & 1)
    u |= ~(uint64_t)0 << (size * 8);
  return (int64_t)u;
}

/* Decodes raw_data (little-endian) by data_type. */
static int decode_raw(struct tensor *t, const unsigned char *b, size_t len)
{
  size_t isz = int_size(t->data_type);
  int is_signed = t->data_type == 3 || t->data_type == 5 || t->data_type == 6 ||
                  t->data_type == 7;

  if (isz != 0) {
    for (size_t k = 0; k + isz <= len; k += isz)
      if (push_i(t, le_int(b + k, isz, is_signed)))
        return -1;
    return len % isz ? -1 : 0;
  }
  switch (t->data_type) {
  case 1:
    for (size_t k = 0; k + 4 <= len; k += 4)
      if (push_f(t, le_f32(b + k)))
        return -1;
    return len % 4 ? -1 : 0;
  case 11:
    for (size_t k = 0; k + 8 <= len; k += 8) {
      uint64_t u = le_u64(b + k);
      double d;
      memcpy(&d, &u, sizeof d);
      if (push_f(t, d))
        return -1;
    }
    return len % 8 ? -1 : 0;
  case 7:
    for (size_t k = 0; k + 8 <= len; k += 8)
      if (push_i(t, (int64_t)le_u64(b + k)))
        return -1;
    return len % 8 ? -1 : 0;
  default: return -1;
  }
}

static int tensor_parse(const unsigned char *buf, size_t len, struct tensor *t)
{
  struct reader r = { buf, buf + len };
  const unsigned char *raw = NULL;
  size_t raw_len = 0;
  memset(t, 0, sizeof *t);
  while (r.p < r.end) {
    uint64_t key, v;
    const unsigned char *b;
    if (rd_varint(&r, &key))
      return -1;
    unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
    if (wire == 2) {
      if (rd_varint(&r, &v) || rd_bytes(&r, (size_t)v, &b))
        return -1;
      struct reader sub = { b, b + v };
      if (field == 1) { /* dims, packed */
        while (sub.p < sub.end) {
          uint64_t d;
          if (rd_varint(&sub, &d) || t->ndims >= CONF_MAX_DIMS)
            return -1;
          t->dims[t->ndims++] = (int64_t)d;
        }
      } else if (field == 4) { /* float_data, packed fixed32 */
        if (v % 4)
          return -1;
        for (size_t k = 0; k < v; k += 4)
          if (push_f(t, le_f32(b + k)))
            return -1;
      } else if (field == 10) { /* double_data, packed fixed64 */
        if (v % 8)
          return -1;
        for (size_t k = 0; k < v; k += 8) {
          uint64_t u = le_u64(b + k);
          double d;
          memcpy(&d, &u, sizeof d);
          if (push_f(t, d))
            return -1;
        }
      } else if (field == 5) { /* int32_data (int8..int32, bool) */
        while (sub.p < sub.end) {
          uint64_t d;
          if (rd_varint(&sub, &d) || push_i(t, (int64_t)(int32_t)d))
            return -1;
        }
      } else if (field == 7) { /* int64_data, packed varint */
        while (sub.p < sub.end) {
          uint64_t d;
          if (rd_varint(&sub, &d) || push_i(t, (int64_t)d))
            return -1;
        }
      } else if (field == 8) { /* name */
        size_t n = v < sizeof t->name - 1 ? (size_t)v : sizeof t->name - 1;
        memcpy(t->name, b, n);
        t->name[n] = '\0';
      } else if (field == 9) { /* raw_data */
        raw = b;
        raw_len = (size_t)v;
      } /* others: skipped */
    } else if (wire == 0) {
      if (rd_varint(&r, &v))
        return -1;
      if (field == 1) { /* dims, not packed */
        if (t->ndims >= CONF_MAX_DIMS)
          return -1;
        t->dims[t->ndims++] = (int64_t)v;
      } else if (field == 2) {
        t->data_type = (int)v;
      } else if (field == 7) { /* int64_data, not packed */
        if (push_i(t, (int64_t)v))
          return -1;
      } else if (field == 5) { /* int32_data, not packed */
        if (push_i(t, (int64_t)(int32_t)v))
          return -1;
      }
    } else if (wire == 5) {
      if (rd_bytes(&r, 4, &b))
        return -1;
      if (field == 4 && push_f(t, le_f32(b))) /* float_data, not packed */
        return -1;
    } else if (wire == 1) {
      if (rd_bytes(&r, 8, &b))
        return -1;
      if (field == 10) { /* double_data, not packed */
        uint64_t u = le_u64(b);
        double d;
        memcpy(&d, &u, sizeof d);
        if (push_f(t, d))
          return -1;
      }
    } else {
      return -1; /* groups (3, 4) and 6, 7: invalid */
    }
  }
  if (raw && decode_raw(t, raw, raw_len))
    return -1;
  uint64_t count = 1;
  for (size_t k = 0; k < t->ndims; k++)
    count *= (uint64_t)t->dims[k];
  return count == t->n ? 0 : -1;
}

static void tensor_free(struct tensor *t)
{
  free(t->f);
  free(t->i);
  t->f = NULL;
  t->i = NULL;
}

static int tensor_load(const char *path, struct tensor *t)
{
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return -1;
  unsigned char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 4096;
      unsigned char *g = realloc(buf, cap);
      if (!g) {
        free(buf);
        fclose(fp);
        return -1;
      }
      buf = g;
    }
    size_t got = fread(buf + len, 1, cap - len, fp);
    if (got == 0)
      break;
    len += got;
  }
  int bad = ferror(fp);
  fclose(fp);
  int rc = bad ? -1 : tensor_parse(buf, len, t);
  free(buf);
  return rc;
}

static const char *dtype_name(int data_type)
{
  switch (data_type) {
  case 1: return "float32";
  case 2: return "uint8";
  case 3: return "int8";
  case 4: return "uint16";
  case 5: return "int16";
  case 6: return "int32";
  case 7: return "int64";
  case 9: return "bool";
  case 11: return "float64";
  case 12: return "uint32";
  default: return NULL;
  }
}

/* ------------------------------------------------------------------ */
/* HTTP                                                               */
/* ------------------------------------------------------------------ */

struct sink {
  char *p;
  size_t n;
};

static size_t sink_write(char *data, size_t size, size_t nmemb, void *user)
{
  struct sink *s = user;
  size_t add = size * nmemb;
  char *g = realloc(s->p, s->n + add + 1);
  if (!g)
    return 0;
  memcpy(g + s->n, data, add);
  s->n += add;
  g[s->n] = '\0';
  s->p = g;
  return add;
}

static long post_json(CURL *c, const char *url, const char *body,
                      struct sink *resp)
{
  struct curl_slist *h = curl_slist_append(NULL,
                                           "Content-Type: application/json");
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
  long status = 0;
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  else
    fprintf(stderr, "curl: %s\n", curl_easy_strerror(rc));
  curl_slist_free_all(h);
  return status;
}

/* ------------------------------------------------------------------ */
/* One case                                                           */
/* ------------------------------------------------------------------ */

/* An element of the answer: a number or "NaN"/"Infinity"/"-Infinity". */
static int elem_value(json_t *v, double *out)
{
  if (json_is_number(v)) {
    *out = json_number_value(v);
    return 0;
  }
  const char *s = json_string_value(v);
  if (!s)
    return -1;
  if (strcmp(s, "NaN") == 0)
    *out = NAN;
  else if (strcmp(s, "Infinity") == 0)
    *out = INFINITY;
  else if (strcmp(s, "-Infinity") == 0)
    *out = -INFINITY;
  else
    return -1;
  return 0;
}

static int close_enough(double a, double e)
{
  if (isnan(e))
    return isnan(a);
  if (isinf(e))
    return a == e;
  return fabs(a - e) <= CONF_ATOL + CONF_RTOL * fabs(e);
}

/* The JSON request of a case: op, opset, every effective attribute (axis,
 * keepdims, noop_with_empty_axes, select_last_index: whichever the case
 * has), axes when the case feeds an axes input, and the input. */
static json_t *build_request(const char *op, json_int_t opset, json_t *attrs,
                             const struct tensor *data,
                             const struct tensor *axes, const char *in_dt)
{
  json_t *shape = json_array(), *vals = json_array();
  const char *key;
  json_t *val;
  int is_bool = data->data_type == 9, is_int = is_int_type(data->data_type);

  for (size_t k = 0; k < data->ndims; k++)
    json_array_append_new(shape, json_integer(data->dims[k]));
  for (size_t k = 0; k < data->n; k++) {
    if (is_bool) {
      json_array_append_new(vals, json_boolean(data->i[k] != 0));
      continue;
    }
    if (is_int) {
      json_array_append_new(vals, json_integer(data->i[k]));
      continue;
    }
    double v = data->f[k];
    json_array_append_new(vals, isnan(v)   ? json_string("NaN")
                                : isinf(v) ? json_string(v > 0 ? "Infinity"
                                                               : "-Infinity")
                                           : json_real(v));
  }
  json_t *req = json_pack("{s:s, s:I, s:{s:s, s:o, s:o}}", "op", op, "opset",
                          (json_int_t)opset, "input", "dtype", in_dt, "shape",
                          shape, "data", vals);
  if (!req)
    return NULL;
  json_object_foreach(attrs, key, val) json_object_set(req, key, val);
  if (axes) {
    json_t *jaxes = json_array();
    for (size_t k = 0; k < axes->n; k++)
      json_array_append_new(jaxes, json_integer(axes->i[k]));
    json_object_set_new(req, "axes", jaxes);
  }
  return req;
}

/* Compares answer element `v` with expected element k of `e`. */
static int elem_matches(json_t *v, const struct tensor *e, size_t k, char *why,
                        size_t whylen)
{
  double a;

  if (e->data_type == 9) {
    if (!json_is_boolean(v) || json_is_true(v) != (e->i[k] != 0)) {
      snprintf(why, whylen, "element %zu: %s, expected %s", k,
               json_is_true(v)    ? "true"
               : json_is_false(v) ? "false"
                                  : "not a bool",
               e->i[k] ? "true" : "false");
      return 0;
    }
    return 1;
  }
  if (is_int_type(e->data_type)) {
    if (!json_is_integer(v) || json_integer_value(v) != e->i[k]) {
      snprintf(why, whylen, "element %zu: not the integer %lld", k,
               (long long)e->i[k]);
      return 0;
    }
    return 1;
  }
  if (elem_value(v, &a)) {
    snprintf(why, whylen, "element %zu is not a number", k);
    return 0;
  }
  if (!close_enough(a, e->f[k])) {
    snprintf(why, whylen, "element %zu: %.9g, expected %.9g", k, a, e->f[k]);
    return 0;
  }
  return 1;
}

/* Runs one case; fills `why` on failure.  Returns 1 pass, 0 fail. */
static int run_case(CURL *c, const char *url, const char *dir, json_t *cs,
                    char *why, size_t whylen)
{
  const char *op = json_string_value(json_object_get(cs, "op"));
  json_t *attrs = json_object_get(cs, "attributes_effective");
  json_t *ds = json_object_get(json_object_get(cs, "test_data_sets"),
                               "test_data_set_0");
  json_t *ins = json_object_get(ds, "inputs"),
         *outs = json_object_get(ds, "outputs");
  json_int_t opset = json_integer_value(json_object_get(cs, "opset"));
  if (!op || !json_is_object(attrs) || json_array_size(ins) < 1 ||
      json_array_size(outs) != 1 || opset < 1) {
    snprintf(why, whylen, "index.json entry incomplete");
    return 0;
  }
  char path[4096];
  struct tensor data, axes, expect;
  int have_axes = json_array_size(ins) > 1;
  memset(&axes, 0, sizeof axes);
  snprintf(path, sizeof path, "%s/%s", dir,
           json_string_value(json_array_get(ins, 0)));
  if (tensor_load(path, &data)) {
    snprintf(why, whylen, "cannot read %.400s", path);
    return 0;
  }
  int ok = 0;
  json_t *req = NULL;
  char *body = NULL;
  struct sink resp = { NULL, 0 };
  json_t *ans = NULL;
  memset(&expect, 0, sizeof expect);
  if (have_axes) {
    snprintf(path, sizeof path, "%s/%s", dir,
             json_string_value(json_array_get(ins, 1)));
    if (tensor_load(path, &axes) || axes.data_type != 7) {
      snprintf(why, whylen, "cannot read int64 axes from %.400s", path);
      goto out;
    }
  }
  snprintf(path, sizeof path, "%s/%s", dir,
           json_string_value(json_array_get(outs, 0)));
  if (tensor_load(path, &expect)) {
    snprintf(why, whylen, "cannot read %.400s", path);
    goto out;
  }
  const char *in_dt = dtype_name(data.data_type),
             *out_dt = dtype_name(expect.data_type);
  if (!in_dt || !out_dt) {
    snprintf(why, whylen, "unexpected data types %d -> %d", data.data_type,
             expect.data_type);
    goto out;
  }

  /* The request.  Floats as %.17g read back to the same double, hence to
   * the same float32; bools as true/false; integers exact. */
  req = build_request(op, opset, attrs, &data, have_axes ? &axes : NULL, in_dt);
  if (!req ||
      !(body = json_dumps(req, JSON_COMPACT | JSON_REAL_PRECISION(17)))) {
    snprintf(why, whylen, "cannot build the request");
    goto out;
  }
  long status = post_json(c, url, body, &resp);
  if (status != 200) {
    snprintf(why, whylen, "status %ld: %.300s", status, resp.p ? resp.p : "");
    goto out;
  }
  json_error_t jerr;
  ans = json_loads(resp.p, 0, &jerr);
  json_t *output = json_object_get(ans, "output");
  json_t *oshape = json_object_get(output, "shape"),
         *odata = json_object_get(output, "data");
  const char *odt = json_string_value(json_object_get(output, "dtype"));
  if (!json_is_array(oshape) || !json_is_array(odata) || !odt) {
    snprintf(why, whylen, "answer lacks output.dtype/shape/data: %.300s",
             resp.p);
    goto out;
  }
  if (strcmp(odt, out_dt) != 0) {
    snprintf(why, whylen, "dtype %s, expected %s", odt, out_dt);
    goto out;
  }
  int shape_ok = json_array_size(oshape) == expect.ndims;
  for (size_t k = 0; shape_ok && k < expect.ndims; k++)
    shape_ok = json_is_integer(json_array_get(oshape, k)) &&
               json_integer_value(json_array_get(oshape, k)) == expect.dims[k];
  if (!shape_ok) {
    char *s = json_dumps(oshape, JSON_COMPACT);
    snprintf(why, whylen, "shape %s, expected rank %zu", s ? s : "?",
             expect.ndims);
    free(s);
    goto out;
  }
  if (json_array_size(odata) != expect.n) {
    snprintf(why, whylen, "%zu elements, expected %zu", json_array_size(odata),
             expect.n);
    goto out;
  }
  for (size_t k = 0; k < expect.n; k++)
    if (!elem_matches(json_array_get(odata, k), &expect, k, why, whylen))
      goto out;
  ok = 1;
out:
  json_decref(ans);
  free(resp.p);
  free(body);
  json_decref(req);
  tensor_free(&data);
  tensor_free(&axes);
  tensor_free(&expect);
  return ok;
}

/* Runs the cases of one directory; adds to *pass / *fail (numbering goes
 * on from *num).  0, or 2 if its index cannot be read. */
static int run_dir(CURL *c, const char *url, const char *dir, int *num,
                   int *pass, int *fail)
{
  char path[4096];
  snprintf(path, sizeof path, "%s/index.json", dir);
  json_error_t jerr;
  json_t *index = json_load_file(path, 0, &jerr);
  json_t *cases = json_object_get(index, "cases");
  if (!json_is_array(cases) || json_array_size(cases) == 0) {
    fprintf(stderr, "conformance: cannot read cases from %s: %s\n", path,
            jerr.text);
    json_decref(index);
    return 2;
  }
  size_t k;
  json_t *cs;
  json_array_foreach(cases, k, cs)
  {
    char why[512] = "";
    const char *name = json_string_value(json_object_get(cs, "name"));
    ++*num;
    if (run_case(c, url, dir, cs, why, sizeof why)) {
      ++*pass;
      printf("ok %d - %s\n", *num, name ? name : "?");
    } else {
      ++*fail;
      printf("not ok %d - %s: %s\n", *num, name ? name : "?", why);
    }
  }
  json_decref(index);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: conformance URL DIR...\n");
    return 2;
  }
  char url[2048];
  snprintf(url, sizeof url, "%s/v1/reduce", argv[1]);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return 2;
  CURL *c = curl_easy_init();
  if (!c)
    return 2;
  int num = 0, pass = 0, fail = 0, rc = 0;
  for (int d = 2; d < argc && rc == 0; d++)
    rc = run_dir(c, url, argv[d], &num, &pass, &fail);
  printf("%d passed, %d failed\n", pass, fail);
  curl_easy_cleanup(c);
  curl_global_cleanup();
  return rc ? rc : fail ? 1 : 0;
}
