/* jsonfast.h - fast path of the JSON decoder for a large flat `input.data`
 * array of numbers (private to api/; see jsonfast.c for why it exists and
 * what it leaves to jansson).  Prefix jf_.
 */
#ifndef JSONFAST_H
#define JSONFAST_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

/* Bodies shorter than this always take jansson's path.  The fast path
 * pays off even on small requests (its second jansson parse sees a
 * shorter document with no number nodes): the 110-byte ReduceL2 body of
 * bench/daemon.sh decodes in ~2.9 us against ~3.9 us by jansson alone. */
#define JF_MIN_BODY 64

/* A flat array of numbers found at root.input.data. */
struct jf_flat {
  size_t open, close; /* offsets of its '[' and ']' in the body */
  uint64_t count;     /* elements (jf_locate(): at most that many) */
  int checked;        /* the whole array was read by jf_read() */
};

/* Finds root.input.data in `s` when it is a non-empty array whose elements
 * are all JSON numbers that jansson would accept and jf_read() takes
 * (integers within int64, reals that cannot overflow a double, tokens of
 * at most 63 bytes).  Keys must be written without escapes.  Returns 1
 * and fills `fl`, or 0 (use jansson's path).  Validates the array's syntax
 * completely; says nothing about the rest of the body, which jansson must
 * still parse. */
int jf_find(const char *s, size_t len, struct jf_flat *fl);

/* The cheap form of jf_find(): finds the '[' of root.input.data and takes
 * the first ']' after it as its end when no '"', '[' or '{' lies between
 * (then it is the matching one).  Sets fl->count to a bound on the
 * elements; says nothing about their syntax (jf_read() checks it). */
int jf_locate(const char *s, size_t len, struct jf_flat *fl);

/* One element as jansson would read it: an integer token as int64 (JF_INT,
 * in `i`), any other number as a real (JF_REAL) of value m * 10^e10 when
 * `simple` (m holds every nonzero digit), to be converted by jf_exact()
 * or jf_narrow().  `tok` is the token in the body. */
enum jf_kind { JF_INT, JF_REAL };
struct jf_num {
  enum jf_kind kind;
  int neg, simple;
  int64_t i;
  uint64_t m;
  long e10;
  const char *tok;
  size_t toklen;
};

/* Reads the element at *pos (after the array's '[' or an element's ',')
 * and the separator after it, in strict JSON syntax and the limits of
 * jf_find(); advances *pos past the separator and sets *last when it was
 * the array's ']'.  Returns 0, or -1 (not such an element: the caller
 * falls back to jansson's path).  Reads nothing beyond s[end], which must
 * be a ']' at or after the element (the array's, from jf_locate()). */
int jf_read(const char *s, size_t end, size_t *pos, struct jf_num *n,
            int *last);

/* The correctly rounded double of a JF_REAL (an int64's conversion for
 * JF_INT): Clinger's exact case, else strtod().  0, or -1 if the C
 * library's locale does not read '.' as the decimal point. */
int jf_exact(const struct jf_num *n, double *d);

/* For RD_FLOAT32, RD_FLOAT16 and RD_BFLOAT16: stores into dst what
 * api__store_float(dtype, jf_exact()) would, from a fast approximation of
 * the double, and returns 1 when that is provably the same (see the proof
 * in jsonfast.c); 0: undecided, dst is garbage, use jf_exact().  `margin`
 * is JF_MARGIN (tests pass 0 to show that the check matters). */
#define JF_MARGIN 16u
int jf_narrow(int dtype, const struct jf_num *n, unsigned margin,
              unsigned char *dst);

/* jf_read() and jf_narrow() over the elements from *pos for a narrow
 * dtype, stored from out[*k] on (*k counts them, at most `max`): returns
 * 0 at the array's end, 1 when the element just read (in *n, not
 * counted) is undecided (*last says whether it was the last), -1 as
 * jf_read().  The loop of the common case, in one place for speed. */
int jf_fill_narrow(const char *s, size_t end, size_t *pos, int dtype,
                   unsigned char *out, uint64_t max, uint64_t *k,
                   struct jf_num *n, int *last);

/* jf_read() and jf_fill_narrow() with the token reader chosen: `window`
 * 1: read_window() first where the CPU has SSSE3, 0: only the
 * byte-by-byte read_number(); jf_fill_narrow_path() also takes 2 (what
 * jf_fill_narrow() does): for float32 on CPUs with AVX-512 F, DQ and BW,
 * elements read in batches of 8 and converted in vector lanes, else as 1.
 * All give the same elements, errors and positions (tests compare them). */
int jf_read_path(const char *s, size_t end, size_t *pos, struct jf_num *n,
                 int *last, int window);
int jf_fill_narrow_path(const char *s, size_t end, size_t *pos, int dtype,
                        unsigned char *out, uint64_t max, uint64_t *k,
                        struct jf_num *n, int *last, int window);

/* For tests: read_window() on the token at s[i] where the CPU has SSSE3
 * (the token's end, or 0 where it leaves the token to read_number()), 0
 * elsewhere. */
size_t jf__read_window(const char *s, size_t i, size_t end, struct jf_num *n);

/* Defined in json.c: api_json_decode() with the path chosen.  `fast` 0
 * never takes the fast path, 1 takes it for bodies of at least JF_MIN_BODY
 * bytes (what api_json_decode() does), 2 whenever jf_locate() accepts the
 * body (tests), 3 only the fast path: 1 if it does not take the body
 * (tests).  Every path gives the same request or the same error. */
int api_json_decode_path(const char *body, size_t len, uint64_t max_elements,
                         struct api_request *req, struct rd_error *err,
                         int fast);

/* Defined in json.c, for jsonpush.c: decodes `doc`, a body whose
 * root.input.data was cut to "[]", with the elements already converted:
 * `count` of them of `dtype` in *data (a malloc'ed block of at least that
 * many).  0: decoded, *data is req->data now (and NULL); an error as the
 * whole body would give it (the elements were valid and convert without
 * error); 1: not taken (the cut document does not parse, or names
 * another dtype): decode the body otherwise.  *data stays the caller's
 * unless 0. */
int api__json_decode_pushed(const char *doc, size_t len, uint64_t max_elements,
                            int dtype, void **data, uint64_t count,
                            struct api_request *req, struct rd_error *err);

#endif /* JSONFAST_H */
