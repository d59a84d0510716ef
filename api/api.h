/* api.h - the wire formats of reduced: decode requests, encode results and
 * errors.  Knows JSON (jansson) and the library; knows nothing of HTTP
 * servers, sockets or threads.  Every function is thread-safe on distinct
 * objects, so the daemon runs them on its worker pool.
 *
 * Errors use struct rd_error from the library.  Codes are either library
 * codes (RD_E_*, -1..-99) or the API_E_* codes below (-100..); api_errname()
 * and api_http_status() cover both ranges, so an error from anywhere maps to
 * a wire name and an HTTP status in exactly one place.
 */
#ifndef API_H
#define API_H

#include <stddef.h>
#include <stdint.h>

#include "reduce.h"
#include "buf.h"

/* The table is aligned by hand. */
/* clang-format off */
/* X(symbol, value, wire name, HTTP status) */
#define API_ERROR_MAP(X)                                                \
  X(API_E_BAD_JSON,        -100, "BAD_JSON",               400)         \
  X(API_E_MISSING_FIELD,   -101, "MISSING_FIELD",          400)         \
  X(API_E_INVALID_FIELD,   -102, "INVALID_FIELD",          400)         \
  X(API_E_UNKNOWN_FIELD,   -103, "UNKNOWN_FIELD",          400)         \
  X(API_E_INVALID_ELEMENT, -104, "INVALID_ELEMENT",        400)         \
  X(API_E_SHAPE_MISMATCH,  -105, "SHAPE_MISMATCH",         400)         \
  X(API_E_NOT_FOUND,       -110, "NOT_FOUND",              404)         \
  X(API_E_METHOD,          -111, "METHOD_NOT_ALLOWED",     405)         \
  X(API_E_NOT_ACCEPTABLE,  -112, "NOT_ACCEPTABLE",         406)         \
  X(API_E_LENGTH_REQUIRED, -114, "LENGTH_REQUIRED",        411)         \
  X(API_E_BODY_TOO_LARGE,  -115, "BODY_TOO_LARGE",         413)         \
  X(API_E_MEDIA_TYPE,      -116, "UNSUPPORTED_MEDIA_TYPE", 415)         \
  X(API_E_OVERLOADED,      -117, "OVERLOADED",             503)         \
  X(API_E_DRAINING,        -118, "DRAINING",               503)         \
  X(API_E_INTERNAL,        -119, "INTERNAL",               500)         \
  X(API_E_BAD_NPY,         -120, "BAD_NPY",                400)         \
  X(API_E_UNAUTHORIZED,    -121, "UNAUTHORIZED",           401)         \
  X(API_E_BAD_ENCODING,    -122, "BAD_ENCODING",           400)

enum api_errcode {
#define API__ENUM(sym, val, name, status) sym = val,
  API_ERROR_MAP(API__ENUM)
#undef API__ENUM
  API_E__LAST = -123
};
/* clang-format on */

/* Wire name for a library or API code ("AXIS_OUT_OF_RANGE"); "OK" for 0;
 * "INTERNAL" for anything unknown. */
const char *api_errname(int code);

/* The one mapping from error codes to HTTP status.  Library codes: 422 for
 * RD_E_OVERFLOW and RD_E_UNDEFINED, 413 for RD_E_TOO_LARGE, 503 for
 * RD_E_NOMEM, 400 otherwise;
 * API codes: the status in API_ERROR_MAP; 0 (RD_OK) -> 200; a code that is
 * in neither table -> 500 (it is a bug, and api_errname says INTERNAL). */
int api_http_status(int code);

/* Fills `err` (if not NULL) with `code` and a printf-style message (made
 * valid UTF-8 if truncation cut a character); returns `code`, so callers
 * can `return api_fail(err, CODE, "...", ...)`. */
int api_fail(struct rd_error *err, int code, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* Replaces, in place, every byte of `s` that is not part of a well-formed
 * UTF-8 sequence with '?' (JSON strings must be valid UTF-8). */
void api_utf8_sanitize(char *s);

/* ------------------------------------------------------------------ */
/* Requests                                                           */
/* ------------------------------------------------------------------ */

/* A decoded request.  `params.shape` and `params.axes` point into this
 * struct, so it must not be copied or moved after decoding. */
struct api_request {
  struct rd_params params;
  int64_t shape[RD_MAX_RANK];
  int64_t axes[RD_MAX_RANK];
  void *data;        /* elements, host byte order; owned (tmem.h) */
  size_t data_bytes; /* = count(shape) * element size */
};

/* Decodes a POST /v1/reduce JSON body (schema: docs/http-api.md) into
 * `req`, converting the elements to the dtype.  Unknown fields are
 * rejected.  On error nothing needs freeing (api_request_free() is still
 * safe).  `max_elements` bounds the element count accepted (0: no bound
 * beyond the library's; above it: RD_E_TOO_LARGE).  Fills req->params
 * (op, opset, dtype, rank, shape, axes, axis, keepdims,
 * noop_with_empty_axes, select_last_index, overflow) but does not validate
 * what rd_plan_init() checks (axes range, dtype per version, keepdims
 * values...).  Fields an op does not take are ATTRIBUTE_NOT_ALLOWED: axis
 * and select_last_index for any op but ArgMax/ArgMin, axes and
 * noop_with_empty_axes for ArgMax/ArgMin.
 *
 * Elements: float dtypes take numbers and the strings "NaN", "Infinity",
 * "-Infinity" (exactly these), read as double and rounded to the dtype
 * (300000 as float16 is inf).  Integer dtypes take JSON integers, integral
 * reals of magnitude <= 2^53 (beyond that a real may already have been
 * rounded by the parser), and decimal strings -?(0|[1-9][0-9]*), all range
 * checked.  bool takes true and false only (a number, even 0 or 1, is
 * INVALID_ELEMENT naming its index).  Integer literals outside int64 are a BAD_JSON error of the
 * parser, so uint64 values above 2^63-1 must be strings. */
int api_json_decode(const char *body, size_t len, uint64_t max_elements,
                    struct api_request *req, struct rd_error *err);

/* Frees what a successful decode allocated; safe to call twice. */
void api_request_free(struct api_request *req);

/* ------------------------------------------------------------------ */
/* Responses                                                          */
/* ------------------------------------------------------------------ */

/* Appends the 200 body (on error `b` is left as it was):
 *   {"op":"ReduceL2","opset":18,"op_version":18,
 *    "output":{"dtype":"float32","shape":[3,2],"data":[...]}}
 * `out` holds plan->out_bytes bytes in host order, of plan->out_dtype
 * (int64 for ArgMax/ArgMin); data is flat row-major, bool as true/false,
 * floats in the shortest form that reads back to the same value of the
 * dtype, non-finite floats as "NaN"/"Infinity"/"-Infinity", uint64 above
 * 2^63-1 as decimal strings.  0 or RD_E_NOMEM. */
int api_json_encode_result(const struct rd_plan *plan, int64_t opset,
                           const void *out, struct api_buf *b);

/* Appends {"error":{"code":"NAME","message":"..."}}. 0 or RD_E_NOMEM. */
int api_json_encode_error(const struct rd_error *err, struct api_buf *b);

/* Appends the GET /v1/ops body: every operator, its versions, and for each
 * version the dtypes it accepts and how it takes axes:
 *   {"ops":[{"op":"ReduceL2","versions":[{"version":1,"opsets":[1,10],
 *     "axes":"attribute","noop_with_empty_axes":false,
 *     "select_last_index":false,"dtypes":[...],"output_dtype":"input"},
 *     ...]}]}
 * "opsets" is the inclusive opset range mapping to the version (upper bound
 * null for the newest); "axes" is "attribute", "input" (from the op's
 * axes-input version) or "axis" (ArgMax/ArgMin: one axis attribute);
 * "output_dtype" is "input" (the input's dtype) or "int64".  0 or
 * RD_E_NOMEM. */
int api_json_encode_ops(struct api_buf *b);

#endif /* API_H */
