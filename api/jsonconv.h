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
void api__shape_text(const int64_t *shape, size_t rank, char *out,
                     size_t size);

/* The element of a float dtype for a double (IEEE rounding; overflow to
 * inf). */
void api__store_float(int dtype, double d, unsigned char *dst);

/* Converting JSON elements into a flat buffer of one dtype. */
struct api__conv {
  int dtype;
  size_t esize;
  unsigned char *out;   /* NULL: count the elements only */
  uint64_t idx;         /* flat index of the next element */
  /* Fails element c->idx, `v`, with INVALID_ELEMENT: the caller's message
   * naming it, with `why` ("is not a number", ...).  Returns the code. */
  int (*bad)(const struct api__conv *c, const json_t *v, const char *why,
             struct rd_error *err);
  const void *ctx;      /* the caller's, for bad() */
};

/* Converts `v` into element c->idx of c->out (if c->out) and advances
 * c->idx: numbers, and for float dtypes "NaN"/"Infinity"/"-Infinity", for
 * integer dtypes decimal strings; anything else, inexact or out of range
 * goes to c->bad(). */
int api__put_elem(struct api__conv *c, const json_t *v, struct rd_error *err);

/* Appends plan->out_count elements of `out` as comma-separated JSON numbers
 * (api_format_elem), without brackets.  0 or RD_E_NOMEM (then `b` may hold
 * part of them: the caller rolls back). */
int api__append_elems(struct api_buf *b, const struct rd_plan *plan,
                      const void *out);

/* Appends the compact text of `j` and drops the reference (NULL: out of
 * memory).  0 or RD_E_NOMEM. */
int api__append_json(struct api_buf *b, json_t *j);

#endif
