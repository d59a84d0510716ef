/* binary.h - the binary wire formats of POST /v1/reduce: raw little-endian
 * elements (application/octet-stream) and NumPy .npy files
 * (application/x-npy), their query-string parameters, and Accept
 * negotiation between those two and JSON.  No HTTP, no threads: pure
 * functions on caller-owned objects (thread-safe on distinct objects).
 *
 * A binary request is described by its query string (op, opset, axes,
 * keepdims, noop_with_empty_axes, overflow; for raw also dtype and shape)
 * and, for .npy, by the file's header (dtype, byte order, order, shape).
 * api_binary_plan() turns that into two plans: the logical one (what the
 * client asked: output shape, headers, errors) and the physical one that the
 * library runs over the bytes in the order they arrive (for a Fortran-order
 * .npy: the C-order view with the shape reversed and the axes mapped).
 */
#ifndef API_BINARY_H
#define API_BINARY_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "buf.h"
#include "reduce.h"

/* Wire formats; the values index api_accept.q. */
enum api_format {
  API_FMT_NONE = 0,
  API_FMT_JSON = 1, /* application/json */
  API_FMT_RAW = 2,  /* application/octet-stream */
  API_FMT_NPY = 3   /* application/x-npy */
};
#define API_NFORMATS 4

/* The media type of a format ("application/x-npy"); NULL for NONE. */
const char *api_format_media_type(int fmt);

/* The format named by a Content-Type value (case-insensitive, parameters
 * such as "; charset=utf-8" ignored, surrounding blanks allowed);
 * API_FMT_NONE for anything else or NULL. */
int api_format_of_content_type(const char *ct);

/* ------------------------------------------------------------------ */
/* Query string                                                       */
/* ------------------------------------------------------------------ */

/* Parses a raw query string (the part after '?', not yet percent-decoded;
 * NULL or "" for none) into req->params for a request body of format
 * `fmt` (RAW or NPY).  Resets `req` first (as api_json_decode does) and
 * applies the JSON API's defaults, names and checks; messages name the
 * parameter and its value: `query parameter axes = "0,x": ...`.
 * Names: op (required), opset, axes (comma-separated; "axes=" is an empty
 * list), axis, keepdims, noop_with_empty_axes and select_last_index
 * (integers; all but axis also true/false), overflow, and for RAW only dtype (required) and shape (required,
 * comma-separated; "shape=" is rank 0).  '+' is a space and %XX is decoded.
 * Errors: UNKNOWN_FIELD (unknown name, or dtype/shape with .npy),
 * INVALID_FIELD (bad value, a name given twice, bad escape),
 * MISSING_FIELD, and the library's UNKNOWN_OP, UNSUPPORTED_DTYPE,
 * INVALID_OVERFLOW_POLICY, RANK_TOO_LARGE, INVALID_NOOP_WITH_EMPTY_AXES,
 * and ATTRIBUTE_NOT_ALLOWED (axis/select_last_index for an op other than
 * ArgMax/ArgMin, axes/noop_with_empty_axes for those two).
 * Like api_json_decode, it leaves to rd_plan_init() what the plan checks. */
int api_query_parse(const char *qs, int fmt, struct api_request *req,
                    struct rd_error *err);

/* ------------------------------------------------------------------ */
/* .npy                                                               */
/* ------------------------------------------------------------------ */

/* Largest .npy header accepted (magic through the '\n'). */
#define API_NPY_HEADER_MAX 65536
/* Bytes needed before the header length is known. */
#define API_NPY_PREFIX 12

/* What a .npy header says. */
struct api_npy {
  int dtype;   /* enum rd_dtype */
  int swap;    /* elements are not in host byte order */
  int fortran; /* fortran_order: True */
  size_t rank;
  int64_t shape[RD_MAX_RANK];
  size_t header_len; /* bytes before the data (magic included) */
  int major, minor;  /* format version */
};

/* Parses the header at the start of `buf` (`len` bytes available).
 * Returns 0 (header complete and valid: `npy` filled), a positive number
 * of bytes the whole header needs when `len` is less than that (call again
 * with more), or a negative error: API_E_BAD_NPY (bad magic, version other
 * than 1.0/2.0/3.0, header length beyond API_NPY_HEADER_MAX or without the
 * '\n', text outside the tiny dict grammar, a key missing, repeated or
 * unknown, non-ASCII text in a 1.x/2.x header, invalid UTF-8 in 3.0),
 * RD_E_DTYPE (a descr that is not one of <f4 <f8 <f2 <i4 <i8 <u4 <u8 <i2
 * <u2 |i1 |u1 |b1, their '>' forms, or '|'/'=' forms meaning the host's order: object arrays,
 * structured dtypes, strings... are refused, never evaluated), RD_E_RANK,
 * RD_E_DIM.  The grammar is a Python dict literal with exactly the keys
 * 'descr' (a string), 'fortran_order' (True/False) and 'shape' (a tuple of
 * non-negative integers), in any order, either quote style, optional
 * trailing commas; nothing is evaluated. */
int api_npy_parse(const void *buf, size_t len, struct api_npy *npy,
                  struct rd_error *err);

/* The .npy descr of a dtype in little-endian form ("<f4"; one-byte types
 * as numpy writes them: "|i1", "|u1", "|b1"); NULL when there is none
 * (bfloat16). */
const char *api_npy_descr(int dtype);

/* Appends a version 1.0 .npy header (little-endian descr, C order, `shape`),
 * padded to a multiple of 64 bytes.  0, RD_E_NOMEM, or API_E_NOT_ACCEPTABLE
 * for a dtype without a descr. */
int api_npy_write_header(int dtype, size_t rank, const int64_t *shape,
                         struct api_buf *b, struct rd_error *err);

/* ------------------------------------------------------------------ */
/* Plans                                                              */
/* ------------------------------------------------------------------ */

/* Validates `p` (the logical request) into `logical`, and fills
 * `physical` with the plan that runs over the bytes as sent: the same
 * plan, or for `fortran` the C-order view (shape reversed, axes mapped to
 * r-1-a, and ArgMax/ArgMin's axis likewise).  0 or the first error of rd_plan_init() on the logical request
 * (so messages name the axes as the client wrote them). */
int api_binary_plan(const struct rd_params *p, int fortran,
                    struct rd_plan *logical, struct rd_plan *physical,
                    struct rd_error *err);

/* Reverses the byte order of each `esize`-byte element of `p` (`bytes` a
 * multiple of esize; esize 1 is a no-op). */
void api_swap_bytes(void *p, size_t bytes, size_t esize);

/* Writes to `dst` the C-order layout of the array whose Fortran-order
 * layout is `src` (shape `shape`, rank `rank`, `esize`-byte elements).
 * `src` and `dst` must not overlap. */
void api_fortran_to_c(const void *src, void *dst, size_t rank,
                      const int64_t *shape, size_t esize);

/* ------------------------------------------------------------------ */
/* Results                                                            */
/* ------------------------------------------------------------------ */

/* Appends the 200 body of `fmt`: JSON (api_json_encode_result), RAW (the
 * plan->out_bytes of `out` as little-endian elements), or NPY (a header
 * and the little-endian elements).  `out` is in host order, C order of
 * plan->out_shape, of plan->out_dtype.  0, RD_E_NOMEM, or API_E_NOT_ACCEPTABLE (.npy of
 * bfloat16); on error `b` is unchanged. */
int api_encode_result(int fmt, const struct rd_plan *plan, int64_t opset,
                      const void *out, struct api_buf *b, struct rd_error *err);

/* The Tensor-Shape header value of an output: "[3,2]", "[]" for rank 0.
 * Room for RD_MAX_RANK 20-digit dims. */
#define API_SHAPE_HDR_MAX (2 + RD_MAX_RANK * 21 + 1)
void api_shape_header(const struct rd_plan *plan, char buf[API_SHAPE_HDR_MAX]);

/* ------------------------------------------------------------------ */
/* Accept                                                             */
/* ------------------------------------------------------------------ */

/* The client's preferences: q[fmt] in thousandths (0: not acceptable) and
 * how specific the best matching range was (2: exact type, 1:
 * application/wildcard, 0: wildcard-wildcard or no Accept). */
struct api_accept {
  int request_fmt;
  int q[API_NFORMATS];
  int specificity[API_NFORMATS];
};

/* Parses an Accept header value (NULL or blank: "*" "/" "*").  Media ranges
 * are compared case-insensitively, parameters other than q are ignored,
 * the most specific range that matches a format gives its q.  A range
 * whose q is malformed counts as q=0.  Returns 0, or API_E_NOT_ACCEPTABLE
 * (message lists what the server offers) when no format has q > 0. */
int api_accept_parse(const char *accept, int request_fmt,
                     struct api_accept *acc, struct rd_error *err);

/* Picks the response format for an output of `dtype`: the highest q; ties
 * go to the request's own format, then to the more specific match, then to
 * JSON, raw, .npy in that order.  A format that cannot carry the dtype
 * (.npy of bfloat16) is left out.  0 and *fmt, or API_E_NOT_ACCEPTABLE
 * (for bfloat16 the message points to raw and JSON). */
int api_accept_pick(const struct api_accept *acc, int dtype, int *fmt,
                    struct rd_error *err);

#endif /* API_BINARY_H */
