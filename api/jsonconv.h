/* jsonconv.h - internal to api/: the JSON value and element conversions
 * shared by the v1 format (json.c) and the v2 format (v2.c).  Each caller
 * keeps its own messages; what differs between them (the element's name in
 * an INVALID_ELEMENT message, the prefix of an unknown field) is left to
 * the caller.  Not a public contract. */
#ifndef API_JSONCONV_H
#define API_JSONCONV_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api.h"

/* 0 and the value; -1 if `v` is not an integer (type or fraction); -2 for
 * an integral real too large to be exact (beyond 2^53). */
int api__as_int64(const json_t *v, int64_t *out);

/* "an object", "a list", "a string", "a number", "true", "false", "null". */
const char *api__type_name(const json_t *v);

/* The first key of `obj` not in the NULL-terminated `known`, or NULL. */
const char *api__unknown_key(const json_t *obj, const char *const *known);

/* "[3,2,2]", truncated to `size` if need be. */
void api__shape_text(const int64_t *shape, size_t rank, char *out, size_t size);

/* The element of a float dtype for a double (IEEE rounding; overflow to
 * inf). */
void api__store_float(int dtype, double d, unsigned char *dst);

/* ATTRIBUTE_NOT_ALLOWED when `op` does not take the attribute `attr`:
 * axis and select_last_index are ArgMax/ArgMin's only, axes and
 * noop_with_empty_axes the Reduce ops' only.  `shown` is how the message
 * names it ("axis", "query parameter axis", "parameters.axis").  0 if
 * allowed (or `op` is unknown). */
int api__attr_allowed(int op, const char *attr, const char *shown,
                      struct rd_error *err);

/* Stores `v` in *out unless it is RD_UNSET (INT64_MIN, the library's "not
 * given"), which is refused with the code of attribute `attr`
 * (noop_with_empty_axes, select_last_index, else axis out of range); the
 * message names it as `shown`. */
int api__guard_unset(const char *attr, const char *shown, int64_t v,
                     int64_t *out, struct rd_error *err);

/* 1 for float32, float64, float16 and bfloat16. */
int api__is_float(int dtype);

/* The range of an integer dtype as magnitudes: values in
 * [-max_neg, max_pos] (max_neg 0 for unsigned types). */
void api__int_range(int dtype, uint64_t *max_neg, uint64_t *max_pos);

/* Stores the in-range integer (sign `neg`, magnitude `mag`) as an element
 * of integer dtype `dtype`. */
void api__store_int(int dtype, int neg, uint64_t mag, unsigned char *dst);

/* Converting JSON elements into a flat buffer of one dtype. */
struct api__conv {
  int dtype;
  size_t esize;
  unsigned char *out; /* NULL: count the elements only */
  uint64_t idx;       /* flat index of the next element */
  /* Fails element c->idx, `v`, with INVALID_ELEMENT: the caller's message
   * naming it, with `why` ("is not a number", ...).  Returns the code. */
  int (*bad)(const struct api__conv *c, const json_t *v, const char *why,
             struct rd_error *err);
  const void *ctx; /* the caller's, for bad() */
};

/* Converts `v` into element c->idx of c->out (if c->out) and advances
 * c->idx: numbers, and for float dtypes "NaN"/"Infinity"/"-Infinity", for
 * integer dtypes decimal strings; for bool true and false only.  Anything
 * else, inexact or out of range goes to c->bad(). */
int api__put_elem(struct api__conv *c, const json_t *v, struct rd_error *err);

/* Appends plan->out_count elements of `out` (of plan->out_dtype) as
 * comma-separated JSON values (api_format_elem), without brackets.  0 or
 * RD_E_NOMEM (then `b` may hold part of them: the caller rolls back). */
int api__append_elems(struct api_buf *b, const struct rd_plan *plan,
                      const void *out);

/* Appends the compact text of `j` and drops the reference (NULL: out of
 * memory).  0 or RD_E_NOMEM. */
int api__append_json(struct api_buf *b, json_t *j);

#endif
