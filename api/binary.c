/* binary.c - raw and .npy bodies: query-string parameters, the .npy header
 * (read by hand over a tiny fixed grammar: nothing is ever evaluated or
 * unpickled), result encoders and Accept negotiation. */
#include "config.h" /* autoconf: WORDS_BIGENDIAN */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "binary.h"
#include "jsonconv.h"

/* Bytes of a user value quoted in a message. */
#define SHOW_CUT 64
#define SHOW_MAX (SHOW_CUT + 8)

#ifdef WORDS_BIGENDIAN
#define HOST_BIG 1
#else
#define HOST_BIG 0
#endif

static const char npy_magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* ================================================================== */
/* Formats                                                            */
/* ================================================================== */

static const char *const media_types[API_NFORMATS] = {
  NULL, "application/json", "application/octet-stream", "application/x-npy"
};

const char *api_format_media_type(int fmt)
{
  return fmt > 0 && fmt < API_NFORMATS ? media_types[fmt] : NULL;
}

static int is_blank(char c)
{
  return c == ' ' || c == '\t';
}

/* Case-insensitive match of [s, s+n) against `want`. */
static int token_is(const char *s, size_t n, const char *want)
{
  return strlen(want) == n && strncasecmp(s, want, n) == 0;
}

int api_format_of_content_type(const char *ct)
{
  const char *end;
  size_t n;

  if (ct == NULL)
    return API_FMT_NONE;
  while (is_blank(*ct))
    ct++;
  end = ct + strcspn(ct, ";");
  n = (size_t)(end - ct);
  while (n > 0 && is_blank(ct[n - 1]))
    n--;
  for (int f = 1; f < API_NFORMATS; f++)
    if (token_is(ct, n, media_types[f]))
      return f;
  return API_FMT_NONE;
}

/* A user string for a message: printable ASCII, '"' and '\' as '?', cut. */
static void show(const char *s, char out[SHOW_MAX])
{
  size_t i, n = 0;

  for (i = 0; s[i] != '\0' && n < SHOW_CUT; i++) {
    unsigned char c = (unsigned char)s[i];
    out[n++] = (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? (char)c : '?';
  }
  if (s[i] != '\0') {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n] = '\0';
}

/* ================================================================== */
/* Query string                                                       */
/* ================================================================== */

enum qparam {
  QP_OP,
  QP_OPSET,
  QP_AXES,
  QP_KEEPDIMS,
  QP_NOOP,
  QP_OVERFLOW,
  QP_DTYPE,
  QP_SHAPE,
  QP_AXIS,
  QP_SELECT_LAST,
  QP_N
};

static const char *const qnames[QP_N] = {
  "op",       "opset", "axes",  "keepdims", "noop_with_empty_axes",
  "overflow", "dtype", "shape", "axis",     "select_last_index"
};

static int hexval(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Decodes [s, s+n) ('+' is a space, %XX a byte) into a new string.
 * NULL and *bad = 1 for a bad escape or %00; NULL and *bad = 0 when out of
 * memory. */
static char *url_decode(const char *s, size_t n, int *bad)
{
  char *out = malloc(n + 1);
  size_t i, k = 0;

  *bad = 0;
  if (out == NULL)
    return NULL;
  for (i = 0; i < n; i++) {
    if (s[i] == '+') {
      out[k++] = ' ';
    } else if (s[i] == '%') {
      int hi = -1, lo = -1;
      if (i + 2 < n) {
        hi = hexval(s[i + 1]);
        lo = hexval(s[i + 2]);
      }
      if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
        free(out);
        *bad = 1;
        return NULL;
      }
      out[k++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      out[k++] = s[i];
    }
  }
  out[k] = '\0';
  return out;
}

/* -?[0-9]+ into int64.  0, -1 (grammar) or -2 (out of range). */
static int parse_int(const char *s, size_t n, int64_t *out)
{
  uint64_t m = 0, lim;
  size_t i = 0;
  int neg = n > 0 && s[0] == '-';

  i = (size_t)neg;
  if (i == n)
    return -1;
  for (size_t j = i; j < n; j++)
    if (s[j] < '0' || s[j] > '9')
      return -1;
  lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; i < n; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (m > (lim - d) / 10)
      return -2;
    m = m * 10 + d;
  }
  *out = neg ? (int64_t)(0 - m) : (int64_t)m;
  return 0;
}

/* An integer parameter; `allow_bool`: "true"/"false" stand for 1/0. */
static int q_int(const char *name, const char *v, int allow_bool, int64_t *out,
                 struct rd_error *err)
{
  char shown[SHOW_MAX];

  if (allow_bool && strcmp(v, "true") == 0) {
    *out = 1;
    return 0;
  }
  if (allow_bool && strcmp(v, "false") == 0) {
    *out = 0;
    return 0;
  }
  switch (parse_int(v, strlen(v), out)) {
  case 0: return 0;
  case -2:
    show(v, shown);
    return api_fail(err, API_E_INVALID_FIELD,
                    "query parameter %s = \"%s\": "
                    "out of the 64-bit integer range",
                    name, shown);
  default:
    show(v, shown);
    return api_fail(err, API_E_INVALID_FIELD,
                    "query parameter %s = \"%s\": "
                    "must be an integer%s",
                    name, shown, allow_bool ? " or true/false" : "");
  }
}

/* A comma-separated integer list ("" is empty) into out[0..*n).  `max`
 * entries at most: `too_many` is the code used beyond that. */
static int q_list(const char *name, const char *v, int64_t *out, size_t *n,
                  int too_many, struct rd_error *err)
{
  char shown[SHOW_MAX], item[SHOW_MAX];
  const char *p = v;
  size_t k = 0;

  *n = 0;
  if (*v == '\0')
    return 0;
  for (;;) {
    size_t len = strcspn(p, ",");
    int rc;
    if (k == RD_MAX_RANK) {
      show(v, shown);
      return api_fail(err, too_many,
                      "query parameter %s = \"%s\": more "
                      "than %d entries",
                      name, shown, RD_MAX_RANK);
    }
    rc = parse_int(p, len, &out[k]);
    if (rc != 0) {
      char tmp[SHOW_CUT + 1];
      size_t c = len < SHOW_CUT ? len : SHOW_CUT;
      memcpy(tmp, p, c);
      tmp[c] = '\0';
      show(v, shown);
      show(tmp, item);
      return api_fail(err, API_E_INVALID_FIELD,
                      "query parameter %s = "
                      "\"%s\": \"%s\" is %s",
                      name, shown, item,
                      rc == -2 ? "out of the 64-bit integer range"
                               : "not an integer (write a comma-separated "
                                 "list of integers)");
    }
    k++;
    if (p[len] == '\0')
      break;
    p += len + 1;
  }
  *n = k;
  return 0;
}

/* "a, b, c" from a name table queried by index (NULLs skipped). */
static void list_names(const char *(*name_of)(int), int hi, char *out,
                       size_t size)
{
  size_t n = 0;
  const char *s;

  out[0] = '\0';
  for (int i = 0; i <= hi; i++) {
    int w;
    if ((s = name_of(i)) == NULL)
      continue;
    w = snprintf(out + n, size - n, "%s%s", n ? ", " : "", s);
    if (w < 0 || (size_t)w >= size - n)
      break;
    n += (size_t)w;
  }
}

/* The dtypes in listing order, by index (for list_names). */
static const char *dtype_at(int i)
{
  return i >= 0 && i < RD_NDTYPES ? rd_dtype_name(rd_dtypes[i]) : NULL;
}

/* After the whole query string (the op may come last): the parameters
 * given must be ones the op takes. */
static int q_check_op(unsigned seen, const struct rd_params *p,
                      struct rd_error *err)
{
  static const int which[] = { QP_AXIS, QP_SELECT_LAST, QP_AXES, QP_NOOP };
  char shown[64];
  int rc;

  for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
    if (!(seen & (1u << which[i])))
      continue;
    snprintf(shown, sizeof shown, "query parameter %s", qnames[which[i]]);
    if ((rc = api__attr_allowed(p->op, qnames[which[i]], shown, err)) != 0)
      return rc;
  }
  return 0;
}

/* One decoded parameter into `req`. */
static int q_apply(enum qparam which, const char *v, struct api_request *req,
                   struct rd_error *err)
{
  struct rd_params *p = &req->params;
  char shown[SHOW_MAX], names[256];
  enum rd_op op;
  enum rd_overflow pol;
  enum rd_dtype dt;
  int64_t x;
  int rc;

  switch (which) {
  case QP_OP:
    if (rd_op_parse(v, &op) != 0) {
      show(v, shown);
      list_names(rd_op_name, RD_OP_COUNT, names, sizeof names);
      return api_fail(err, RD_E_OP,
                      "query parameter op = \"%s\": unknown "
                      "op; valid ops: %s",
                      shown, names);
    }
    p->op = op;
    return 0;
  case QP_OPSET: return q_int("opset", v, 0, &p->opset, err);
  case QP_AXES:
    return q_list("axes", v, req->axes, &p->naxes, API_E_INVALID_FIELD, err);
  case QP_KEEPDIMS: return q_int("keepdims", v, 1, &p->keepdims, err);
  case QP_NOOP:
    if ((rc = q_int("noop_with_empty_axes", v, 1, &x, err)) != 0)
      return rc;
    return api__guard_unset("noop_with_empty_axes",
                            "query parameter noop_with_empty_axes", x,
                            &p->noop_with_empty_axes, err);
  case QP_AXIS:
    if ((rc = q_int("axis", v, 0, &x, err)) != 0)
      return rc;
    return api__guard_unset("axis", "query parameter axis", x, &p->axis, err);
  case QP_SELECT_LAST:
    if ((rc = q_int("select_last_index", v, 1, &x, err)) != 0)
      return rc;
    return api__guard_unset("select_last_index",
                            "query parameter select_last_index", x,
                            &p->select_last_index, err);
  case QP_OVERFLOW:
    if (rd_overflow_parse(v, &pol) != 0) {
      show(v, shown);
      list_names(rd_overflow_name, 15, names, sizeof names);
      return api_fail(err, RD_E_POLICY,
                      "query parameter overflow = \"%s\": "
                      "unknown overflow policy; valid policies: %s",
                      shown, names);
    }
    p->overflow = pol;
    return 0;
  case QP_DTYPE:
    if (rd_dtype_parse(v, &dt) != 0) {
      show(v, shown);
      list_names(dtype_at, RD_NDTYPES - 1, names, sizeof names);
      return api_fail(err, RD_E_DTYPE,
                      "query parameter dtype = \"%s\": "
                      "unsupported dtype; supported: %s (also \"float\", "
                      "\"double\")",
                      shown, names);
    }
    p->dtype = dt;
    return 0;
  case QP_SHAPE:
    return q_list("shape", v, req->shape, &p->rank, RD_E_RANK, err);
  default:
    return api_fail(err, API_E_INTERNAL, "query parameter %d", (int)which);
  }
}

/* The parameter named `key` for a body of format `fmt`: 0 and *which, or
 * UNKNOWN_FIELD (no such name, or dtype/shape with .npy). */
static int q_lookup(const char *key, int fmt, int *which, struct rd_error *err)
{
  char shown[SHOW_MAX];

  *which = -1;
  for (int i = 0; i < QP_N; i++)
    if (strcmp(key, qnames[i]) == 0)
      *which = i;
  if (*which >= 0 &&
      (fmt == API_FMT_RAW || (*which != QP_DTYPE && *which != QP_SHAPE)))
    return 0;
  show(key, shown);
  if (*which < 0)
    return api_fail(err, API_E_UNKNOWN_FIELD,
                    "unknown query parameter "
                    "\"%s\"; known: op, opset, axes, axis, keepdims, "
                    "noop_with_empty_axes, select_last_index, overflow%s",
                    shown, fmt == API_FMT_RAW ? ", dtype, shape" : "");
  return api_fail(err, API_E_UNKNOWN_FIELD,
                  "query parameter %s is not "
                  "taken with application/x-npy: the .npy header gives the "
                  "dtype and the shape",
                  key);
}

int api_query_parse(const char *qs, int fmt, struct api_request *req,
                    struct rd_error *err)
{
  unsigned seen = 0;
  const char *p = qs != NULL ? qs : "";

  memset(req, 0, sizeof *req);
  rd_params_init(&req->params);
  req->params.shape = req->shape;
  req->params.axes = req->axes;
  if (err != NULL) {
    err->code = RD_OK;
    err->msg[0] = '\0';
  }

  while (*p != '\0') {
    size_t len = strcspn(p, "&"), klen;
    const char *eq;
    char *key, *val;
    int bad, which = -1, rc;

    if (len == 0) { /* "a=1&&b=2", a trailing '&' */
      p++;
      continue;
    }
    eq = memchr(p, '=', len);
    klen = eq != NULL ? (size_t)(eq - p) : len;
    key = url_decode(p, klen, &bad);
    val = key == NULL  ? NULL
          : eq != NULL ? url_decode(eq + 1, len - klen - 1, &bad)
                       : url_decode("", 0, &bad);
    if (val == NULL) {
      free(key);
      if (!bad)
        return api_fail(err, RD_E_NOMEM, "out of memory");
      return api_fail(err, API_E_INVALID_FIELD,
                      "query string: bad "
                      "percent-escape in \"%.*s\"",
                      (int)(len < SHOW_CUT ? len : SHOW_CUT), p);
    }
    rc = q_lookup(key, fmt, &which, err);
    if (rc == 0 && (seen & (1u << which)))
      rc = api_fail(err, API_E_INVALID_FIELD,
                    "query parameter %s is given "
                    "more than once",
                    key);
    if (rc == 0) {
      seen |= 1u << which;
      rc = q_apply((enum qparam)which, val, req, err);
    }
    free(key);
    free(val);
    if (rc != 0)
      return rc;
    p += len;
    if (*p == '&')
      p++;
  }
  if (!(seen & (1u << QP_OP)))
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required query parameter op");
  if (fmt == API_FMT_RAW && !(seen & (1u << QP_DTYPE)))
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required query parameter dtype");
  if (fmt == API_FMT_RAW && !(seen & (1u << QP_SHAPE)))
    return api_fail(err, API_E_MISSING_FIELD,
                    "missing required query "
                    "parameter shape (comma-separated dims; \"shape=\" for "
                    "rank 0)");
  return q_check_op(seen, &req->params, err);
}

/* ================================================================== */
/* .npy header                                                        */
/* ================================================================== */

struct npy_descr {
  const char *code; /* without the byte-order character */
  int dtype;
};

static const struct npy_descr npy_types[] = {
  { "f4", RD_FLOAT32 }, { "f8", RD_FLOAT64 }, { "f2", RD_FLOAT16 },
  { "i4", RD_INT32 },   { "i8", RD_INT64 },   { "u4", RD_UINT32 },
  { "u8", RD_UINT64 },  { "i1", RD_INT8 },    { "u1", RD_UINT8 },
  { "i2", RD_INT16 },   { "u2", RD_UINT16 },  { "b1", RD_BOOL },
};
#define NPY_NTYPES (sizeof npy_types / sizeof npy_types[0])

const char *api_npy_descr(int dtype)
{
  /* numpy writes '|' for one-byte types (no byte order). */
  static const char *const le[NPY_NTYPES] = { "<f4", "<f8", "<f2", "<i4",
                                              "<i8", "<u4", "<u8", "|i1",
                                              "|u1", "<i2", "<u2", "|b1" };
  for (size_t i = 0; i < NPY_NTYPES; i++)
    if (npy_types[i].dtype == dtype)
      return le[i];
  return NULL;
}

/* A cursor over the dict text (between the length field and the '\n'). */
struct lex {
  const char *s, *end;
};

static void skip_ws(struct lex *x)
{
  while (x->s < x->end && (*x->s == ' ' || *x->s == '\t'))
    x->s++;
}

static int npy_bad(struct rd_error *err, const struct lex *x, const char *base,
                   const char *what)
{
  return api_fail(err, API_E_BAD_NPY,
                  ".npy header: %s at byte %zu of the "
                  "dict",
                  what, (size_t)(x->s - base));
}

/* A quoted string without escapes: 'abc' or "abc" (printable ASCII). */
static int lex_string(struct lex *x, const char **start, size_t *len)
{
  char q;
  const char *p;

  if (x->s >= x->end || (*x->s != '\'' && *x->s != '"'))
    return -1;
  q = *x->s;
  for (p = x->s + 1; p < x->end && *p != q; p++)
    if (*p == '\\')
      return -1;
  if (p >= x->end)
    return -1;
  *start = x->s + 1;
  *len = (size_t)(p - *start);
  x->s = p + 1;
  return 0;
}

static int lex_word(struct lex *x, const char *w)
{
  size_t n = strlen(w);
  if ((size_t)(x->end - x->s) < n || memcmp(x->s, w, n) != 0)
    return -1;
  /* "Trueish" is not True. */
  if ((size_t)(x->end - x->s) > n &&
      ((x->s[n] >= 'a' && x->s[n] <= 'z') ||
       (x->s[n] >= 'A' && x->s[n] <= 'Z') ||
       (x->s[n] >= '0' && x->s[n] <= '9') || x->s[n] == '_'))
    return -1;
  x->s += n;
  return 0;
}

static int npy_descr_parse(const char *s, size_t n, struct api_npy *npy,
                           struct rd_error *err)
{
  char shown[SHOW_MAX], tmp[SHOW_CUT + 1];
  size_t c = n < SHOW_CUT ? n : SHOW_CUT;

  memcpy(tmp, s, c);
  tmp[c] = '\0';
  show(tmp, shown);
  if (n == 3 && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    for (size_t i = 0; i < NPY_NTYPES; i++) {
      if (memcmp(s + 1, npy_types[i].code, 2) != 0)
        continue;
      npy->dtype = npy_types[i].dtype;
      /* '|' (no order) and '=' (native) mean the host's order. */
      npy->swap = (s[0] == '<' && HOST_BIG) || (s[0] == '>' && !HOST_BIG);
      return 0;
    }
  }
  if (n >= 1 && (s[n - 1] == 'O' && (n == 1 || n == 2)))
    return api_fail(err, RD_E_DTYPE,
                    ".npy descr '%s': object arrays are "
                    "not supported (nothing is unpickled)",
                    shown);
  return api_fail(err, RD_E_DTYPE,
                  ".npy descr '%s' is not supported; "
                  "supported: <f4 <f8 <f2 <i4 <i8 <u4 <u8 <i2 <u2 |i1 |u1 "
                  "|b1 (also with > for big-endian, | or = for native "
                  "order)",
                  shown);
}

static int npy_shape_parse(struct lex *x, const char *base, struct api_npy *npy,
                           struct rd_error *err)
{
  size_t k = 0;
  int trailing = 0;

  if (x->s >= x->end || *x->s != '(')
    return npy_bad(err, x, base, "'shape' must be a tuple of integers");
  x->s++;
  for (;;) {
    const char *d;
    uint64_t v = 0;

    skip_ws(x);
    if (x->s < x->end && *x->s == ')')
      break;
    if (k == RD_MAX_RANK)
      return api_fail(err, RD_E_RANK,
                      ".npy header: the shape has more "
                      "than %d dimensions",
                      RD_MAX_RANK);
    d = x->s;
    while (x->s < x->end && *x->s >= '0' && *x->s <= '9') {
      unsigned dig = (unsigned)(*x->s - '0');
      if (v > ((uint64_t)INT64_MAX - dig) / 10)
        return api_fail(err, RD_E_DIM,
                        ".npy header: shape[%zu] is too "
                        "large",
                        k);
      v = v * 10 + dig;
      x->s++;
    }
    if (x->s == d)
      return npy_bad(err, x, base,
                     "'shape' must be a tuple of non-negative "
                     "integers");
    npy->shape[k++] = (int64_t)v;
    skip_ws(x);
    trailing = 0;
    if (x->s < x->end && *x->s == ',') {
      x->s++;
      trailing = 1;
      continue;
    }
    if (x->s < x->end && *x->s == ')')
      break;
    return npy_bad(err, x, base, "expected ',' or ')' in 'shape'");
  }
  /* "(3)" is the integer 3 in Python, not a tuple. */
  if (k == 1 && !trailing)
    return npy_bad(err, x, base, "'shape' (n) needs a trailing comma: (n,)");
  x->s++; /* ')' */
  npy->rank = k;
  return 0;
}

/* The dict literal [s, end). */
static int npy_dict_parse(const char *s, const char *end, struct api_npy *npy,
                          struct rd_error *err)
{
  struct lex x = { s, end };
  unsigned seen = 0;
  int rc;

  skip_ws(&x);
  if (x.s >= x.end || *x.s != '{')
    return npy_bad(err, &x, s, "expected '{'");
  x.s++;
  for (;;) {
    const char *k, *v;
    size_t klen, vlen;
    unsigned bit;

    skip_ws(&x);
    if (x.s < x.end && *x.s == '}')
      break;
    if (lex_string(&x, &k, &klen) != 0)
      return npy_bad(err, &x, s, "expected a quoted key");
    if (klen == 5 && memcmp(k, "descr", 5) == 0)
      bit = 1;
    else if (klen == 13 && memcmp(k, "fortran_order", 13) == 0)
      bit = 2;
    else if (klen == 5 && memcmp(k, "shape", 5) == 0)
      bit = 4;
    else
      return npy_bad(err, &x, s,
                     "unknown key (only 'descr', "
                     "'fortran_order' and 'shape' are allowed)");
    if (seen & bit)
      return npy_bad(err, &x, s, "repeated key");
    seen |= bit;
    skip_ws(&x);
    if (x.s >= x.end || *x.s != ':')
      return npy_bad(err, &x, s, "expected ':'");
    x.s++;
    skip_ws(&x);
    if (bit == 1) {
      if (x.s < x.end && (*x.s == '[' || *x.s == '('))
        return api_fail(err, RD_E_DTYPE,
                        ".npy descr: structured dtypes "
                        "are not supported");
      if (lex_string(&x, &v, &vlen) != 0)
        return npy_bad(err, &x, s, "'descr' must be a quoted string");
      if ((rc = npy_descr_parse(v, vlen, npy, err)) != 0)
        return rc;
    } else if (bit == 2) {
      if (lex_word(&x, "True") == 0)
        npy->fortran = 1;
      else if (lex_word(&x, "False") == 0)
        npy->fortran = 0;
      else
        return npy_bad(err, &x, s, "'fortran_order' must be True or False");
    } else if ((rc = npy_shape_parse(&x, s, npy, err)) != 0) {
      return rc;
    }
    skip_ws(&x);
    if (x.s < x.end && *x.s == ',') {
      x.s++;
      continue;
    }
    if (x.s < x.end && *x.s == '}')
      break;
    return npy_bad(err, &x, s, "expected ',' or '}'");
  }
  x.s++; /* '}' */
  skip_ws(&x);
  if (x.s != x.end)
    return npy_bad(err, &x, s, "text after the dict");
  if (seen != 7)
    return api_fail(err, API_E_BAD_NPY, ".npy header: missing key '%s'",
                    !(seen & 1)   ? "descr"
                    : !(seen & 2) ? "fortran_order"
                                  : "shape");
  return 0;
}

int api_npy_parse(const void *buf, size_t len, struct api_npy *npy,
                  struct rd_error *err)
{
  const unsigned char *b = buf;
  size_t prefix, hlen, total;
  const char *dict, *end;

  memset(npy, 0, sizeof *npy);
  if (len < 8)
    return API_NPY_PREFIX;
  if (memcmp(b, npy_magic, sizeof npy_magic) != 0)
    return api_fail(err, API_E_BAD_NPY,
                    "not a .npy file: the body does not "
                    "start with \\x93NUMPY");
  npy->major = b[6];
  npy->minor = b[7];
  if ((b[6] != 1 && b[6] != 2 && b[6] != 3) || b[7] != 0)
    return api_fail(err, API_E_BAD_NPY,
                    ".npy format version %u.%u is not "
                    "supported (1.0, 2.0, 3.0 are)",
                    b[6], b[7]);
  prefix = b[6] == 1 ? 10 : 12;
  if (len < prefix)
    return (int)prefix;
  if (b[6] == 1)
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
  else
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
           (size_t)b[11] << 24;
  if (hlen > API_NPY_HEADER_MAX - prefix)
    return api_fail(err, API_E_BAD_NPY,
                    ".npy header length %zu is above "
                    "the limit of %d bytes",
                    hlen, API_NPY_HEADER_MAX - (int)prefix);
  total = prefix + hlen;
  if (len < total)
    return (int)total;
  if (hlen == 0 || b[total - 1] != '\n')
    return api_fail(err, API_E_BAD_NPY,
                    ".npy header does not end with a "
                    "newline within its declared length %zu",
                    hlen);
  dict = (const char *)b + prefix;
  end = (const char *)b + total - 1;
  for (const char *p = dict; p < end; p++) {
    unsigned char c = (unsigned char)*p;
    if (c >= 0x80)
      return api_fail(err, API_E_BAD_NPY,
                      ".npy header: non-ASCII byte "
                      "0x%02x at byte %zu of the dict",
                      c, (size_t)(p - dict));
    if (c < 0x20 && c != '\t')
      return api_fail(err, API_E_BAD_NPY,
                      ".npy header: control byte 0x%02x "
                      "at byte %zu of the dict",
                      c, (size_t)(p - dict));
  }
  {
    int rc = npy_dict_parse(dict, end, npy, err);
    if (rc != 0)
      return rc;
  }
  npy->header_len = total;
  return 0;
}

int api_npy_write_header(int dtype, size_t rank, const int64_t *shape,
                         struct api_buf *b, struct rd_error *err)
{
  const char *descr = api_npy_descr(dtype);
  char dict[64 + RD_MAX_RANK * 22];
  size_t n, total, start = b->len;
  unsigned char pre[10];

  if (descr == NULL)
    return api_fail(err, API_E_NOT_ACCEPTABLE,
                    "dtype %s has no .npy "
                    "descriptor; ask for application/octet-stream or "
                    "application/json instead",
                    rd_dtype_name(dtype) ? rd_dtype_name(dtype) : "?");
  n = (size_t)snprintf(dict, sizeof dict,
                       "{'descr': '%s', 'fortran_order': "
                       "False, 'shape': (",
                       descr);
  for (size_t i = 0; i < rank; i++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%s%" PRId64,
                          i ? ", " : "", shape[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }",
                        rank == 1 ? "," : "");
  /* magic(6) version(2) length(2) dict, spaces, '\n': a multiple of 64. */
  total = (10 + n + 1 + 63) / 64 * 64;
  memcpy(pre, npy_magic, 6);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = (unsigned char)((total - 10) & 0xff);
  pre[9] = (unsigned char)((total - 10) >> 8);
  if (api_buf_reserve(b, total) != 0)
    return api_fail(err, RD_E_NOMEM, "out of memory");
  api_buf_append(b, pre, sizeof pre);
  api_buf_append(b, dict, n);
  while (b->len - start < total - 1)
    api_buf_append(b, " ", 1);
  api_buf_append(b, "\n", 1);
  return 0;
}

/* ================================================================== */
/* Plans and layout                                                   */
/* ================================================================== */

int api_binary_plan(const struct rd_params *p, int fortran,
                    struct rd_plan *logical, struct rd_plan *physical,
                    struct rd_error *err)
{
  struct rd_params q;
  int64_t shape[RD_MAX_RANK], axes[RD_MAX_RANK];
  int rc;

  if ((rc = rd_plan_init(logical, p, err)) != 0)
    return rc;
  if (!fortran || p->rank < 2) {
    *physical = *logical;
    return 0;
  }
  /* Fortran order is C order of the reversed shape: axis a is r-1-a. */
  q = *p;
  for (size_t i = 0; i < p->rank; i++)
    shape[i] = p->shape[p->rank - 1 - i];
  for (size_t i = 0; i < p->naxes; i++) {
    int64_t a = p->axes[i] < 0 ? p->axes[i] + (int64_t)p->rank : p->axes[i];
    axes[i] = (int64_t)p->rank - 1 - a;
  }
  /* ArgMax/ArgMin: the one axis, mapped the same way (the logical plan
   * resolved it, default included). */
  if (rd_op_info(p->op) != NULL && rd_op_info(p->op)->is_arg)
    q.axis = (int64_t)p->rank - 1 - logical->axis;
  q.shape = shape;
  q.axes = axes;
  return rd_plan_init(physical, &q, err);
}

void api_swap_bytes(void *p, size_t bytes, size_t esize)
{
  unsigned char *b = p, t;

  if (esize < 2)
    return;
  for (size_t i = 0; i + esize <= bytes; i += esize)
    for (size_t lo = 0, hi = esize - 1; lo < hi; lo++, hi--) {
      t = b[i + lo];
      b[i + lo] = b[i + hi];
      b[i + hi] = t;
    }
}

void api_fortran_to_c(const void *src, void *dst, size_t rank,
                      const int64_t *shape, size_t esize)
{
  const unsigned char *s = src;
  unsigned char *d = dst;
  uint64_t stride[RD_MAX_RANK], idx[RD_MAX_RANK], count = 1, off = 0;

  for (size_t i = 0; i < rank; i++) {
    stride[i] = count; /* Fortran strides, in elements */
    count *= (uint64_t)shape[i];
    idx[i] = 0;
  }
  if (count == 0)
    return;
  /* Walk the C order (last index fastest), tracking the Fortran offset. */
  for (uint64_t k = 0; k < count; k++) {
    memcpy(d + k * esize, s + off * esize, esize);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < (uint64_t)shape[i]) {
        off += stride[i];
        break;
      }
      off -= stride[i] * (idx[i] - 1);
      idx[i] = 0;
    }
  }
}

/* ================================================================== */
/* Results                                                            */
/* ================================================================== */

/* Appends `n` bytes of host-order elements as little-endian. */
static int append_le(struct api_buf *b, const void *p, size_t n, size_t esize)
{
  if (api_buf_append(b, p, n) != 0)
    return RD_E_NOMEM;
  if (HOST_BIG)
    api_swap_bytes(b->data + b->len - n, n, esize);
  return 0;
}

int api_encode_result(int fmt, const struct rd_plan *plan, int64_t opset,
                      const void *out, struct api_buf *b, struct rd_error *err)
{
  size_t start = b->len;
  int rc;

  switch (fmt) {
  case API_FMT_JSON:
    rc = api_json_encode_result(plan, opset, out, b);
    return rc != 0 ? api_fail(err, rc, "out of memory") : 0;
  case API_FMT_RAW:
    if (plan->out_bytes > SIZE_MAX - 1 ||
        append_le(b, out, (size_t)plan->out_bytes, plan->out_elem_size) != 0)
      return api_fail(err, RD_E_NOMEM, "out of memory");
    return 0;
  case API_FMT_NPY:
    if ((rc = api_npy_write_header(plan->out_dtype, plan->out_rank,
                                   plan->out_shape, b, err)) != 0)
      return rc;
    if (plan->out_bytes > SIZE_MAX - b->len - 1 ||
        append_le(b, out, (size_t)plan->out_bytes, plan->out_elem_size) != 0) {
      b->len = start;
      if (b->data != NULL)
        b->data[start] = '\0';
      return api_fail(err, RD_E_NOMEM, "out of memory");
    }
    return 0;
  default: return api_fail(err, API_E_INTERNAL, "unknown format %d", fmt);
  }
}

void api_shape_header(const struct rd_plan *plan, char buf[API_SHAPE_HDR_MAX])
{
  size_t n = 0;

  buf[n++] = '[';
  for (size_t i = 0; i < plan->out_rank; i++)
    n += (size_t)snprintf(buf + n, API_SHAPE_HDR_MAX - n, "%s%" PRId64,
                          i ? "," : "", plan->out_shape[i]);
  snprintf(buf + n, API_SHAPE_HDR_MAX - n, "]");
}

/* ================================================================== */
/* Accept                                                             */
/* ================================================================== */

/* q = 0 ["." 0*3DIGIT] / 1 ["." 0*3("0")] in thousandths; -1 if malformed. */
static int parse_q(const char *s, size_t n)
{
  int v, scale = 100;
  size_t i;

  if (n == 0 || (s[0] != '0' && s[0] != '1'))
    return -1;
  v = (s[0] - '0') * 1000;
  if (n == 1)
    return v;
  if (s[1] != '.' || n > 5)
    return -1;
  for (i = 2; i < n; i++, scale /= 10) {
    if (s[i] < '0' || s[i] > '9' || (v == 1000 && s[i] != '0'))
      return -1;
    v += (s[i] - '0') * scale;
  }
  return v;
}

static void trim(const char **s, size_t *n)
{
  while (*n > 0 && is_blank(**s)) {
    (*s)++;
    (*n)--;
  }
  while (*n > 0 && is_blank((*s)[*n - 1]))
    (*n)--;
}

/* One media range [s, s+n): its q, and what it matches. */
static void accept_range(const char *s, size_t n, struct api_accept *acc,
                         int spec_seen[API_NFORMATS])
{
  const char *semi = memchr(s, ';', n), *slash;
  size_t tlen = semi != NULL ? (size_t)(semi - s) : n;
  const char *type = s;
  int q = 1000;

  trim(&type, &tlen);
  /* Parameters: only q matters. */
  while (semi != NULL) {
    const char *ps = semi + 1;
    size_t rest = n - (size_t)(ps - s), plen;
    const char *next = memchr(ps, ';', rest);
    plen = next != NULL ? (size_t)(next - ps) : rest;
    trim(&ps, &plen);
    if (plen >= 2 && (ps[0] == 'q' || ps[0] == 'Q') && ps[1] == '=') {
      const char *qv = ps + 2;
      size_t qn = plen - 2;
      trim(&qv, &qn);
      q = parse_q(qv, qn);
      if (q < 0)
        q = 0; /* malformed: this range accepts nothing */
    }
    semi = next;
  }
  slash = memchr(type, '/', tlen);
  if (slash == NULL)
    return;
  for (int f = 1; f < API_NFORMATS; f++) {
    const char *mt = media_types[f];
    size_t mtype = (size_t)(strchr(mt, '/') - mt);
    int spec;
    if (token_is(type, tlen, "*/*"))
      spec = 0;
    else if ((size_t)(slash - type) == mtype &&
             strncasecmp(type, mt, mtype) == 0 &&
             token_is(slash + 1, tlen - mtype - 1, "*"))
      spec = 1;
    else if (token_is(type, tlen, mt))
      spec = 2;
    else
      continue;
    /* The most specific range wins; among equals, the first. */
    if (spec > spec_seen[f]) {
      spec_seen[f] = spec;
      acc->q[f] = q;
      acc->specificity[f] = spec;
    }
  }
}

int api_accept_parse(const char *accept, int request_fmt,
                     struct api_accept *acc, struct rd_error *err)
{
  int spec_seen[API_NFORMATS], any = 0;
  const char *p = accept;

  memset(acc, 0, sizeof *acc);
  acc->request_fmt = request_fmt;
  for (int f = 0; f < API_NFORMATS; f++)
    spec_seen[f] = -1;
  if (p != NULL)
    while (is_blank(*p))
      p++;
  if (p == NULL || *p == '\0') {
    for (int f = 1; f < API_NFORMATS; f++)
      acc->q[f] = 1000;
    return 0;
  }
  while (*p != '\0') {
    size_t n = strcspn(p, ",");
    if (n > 0)
      accept_range(p, n, acc, spec_seen);
    p += n;
    if (*p == ',')
      p++;
  }
  for (int f = 1; f < API_NFORMATS; f++)
    any |= acc->q[f] > 0;
  if (!any) {
    char shown[SHOW_MAX];
    show(accept, shown);
    return api_fail(err, API_E_NOT_ACCEPTABLE,
                    "Accept \"%s\" matches none "
                    "of application/json, application/octet-stream, "
                    "application/x-npy",
                    shown);
  }
  return 0;
}

int api_accept_pick(const struct api_accept *acc, int dtype, int *fmt,
                    struct rd_error *err)
{
  int best = API_FMT_NONE;

  for (int f = 1; f < API_NFORMATS; f++) {
    if (acc->q[f] <= 0 || (f == API_FMT_NPY && api_npy_descr(dtype) == NULL))
      continue;
    if (best == API_FMT_NONE || acc->q[f] > acc->q[best]) {
      best = f;
      continue;
    }
    if (acc->q[f] < acc->q[best] || best == acc->request_fmt)
      continue;
    if (f == acc->request_fmt || acc->specificity[f] > acc->specificity[best])
      best = f;
  }
  if (best != API_FMT_NONE) {
    *fmt = best;
    return 0;
  }
  if (acc->q[API_FMT_NPY] > 0)
    return api_fail(err, API_E_NOT_ACCEPTABLE,
                    "dtype %s has no .npy "
                    "descriptor; ask for application/octet-stream (raw "
                    "little-endian) or application/json instead",
                    rd_dtype_name(dtype) ? rd_dtype_name(dtype) : "?");
  return api_fail(err, API_E_NOT_ACCEPTABLE,
                  "no acceptable response format "
                  "(offered: application/json, application/octet-stream, "
                  "application/x-npy)");
}
