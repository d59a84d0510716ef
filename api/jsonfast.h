/* jsonfast.h - fast path of the JSON decoder for a large flat `input.data`
 * array of numbers (private to api/; see jsonfast.c for why it exists and
 * what it leaves to jansson).  Prefix jf_.
 */
#ifndef JSONFAST_H
#define JSONFAST_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

/* Bodies shorter than this always take jansson's path: the fast path only
 * pays off where the per-element tree dominates. */
#define JF_MIN_BODY 65536

/* A flat array of numbers found at root.input.data. */
struct jf_flat {
  size_t open, close; /* offsets of its '[' and ']' in the body */
  uint64_t count;     /* elements, all valid JSON numbers */
};

/* Finds root.input.data in `s` when it is a non-empty array whose elements
 * are all JSON numbers that jansson would accept and jf_next() converts
 * exactly (integers within int64, reals that cannot overflow a double,
 * tokens of at most 63 bytes).  Keys must be written without escapes.
 * Returns 1 and fills `fl`, or 0 (use jansson's path).  Validates the
 * array's syntax completely; says nothing about the rest of the body,
 * which jansson must still parse. */
int jf_find(const char *s, size_t len, struct jf_flat *fl);

/* One element converted as jansson would: an integer token as int64
 * (JF_INT, in `i`), any other number as the correctly rounded double
 * (JF_REAL, in `d`). */
enum jf_kind { JF_INT, JF_REAL };
struct jf_num {
  enum jf_kind kind;
  int64_t i;
  double d;
};

/* Reads the element at *pos (an offset inside an array jf_find() accepted,
 * at or before the element: whitespace and one comma are skipped) and
 * advances *pos past it.  Returns 0, or -1 if the conversion could not be
 * done exactly here (the caller falls back to jansson's path). */
int jf_next(const char *s, size_t *pos, struct jf_num *n);

/* Defined in json.c: api_json_decode() with the path chosen.  `fast` 0
 * never takes the fast path, 1 takes it for bodies of at least JF_MIN_BODY
 * bytes (what api_json_decode() does), 2 whenever jf_find() accepts the
 * body (tests).  Every path gives the same request or the same error. */
int api_json_decode_path(const char *body, size_t len, uint64_t max_elements,
                         struct api_request *req, struct rd_error *err,
                         int fast);

#endif /* JSONFAST_H */
