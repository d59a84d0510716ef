/* numfmt.h - numbers as JSON text: shortest round-trip floats per dtype.
 * Pure functions; thread-safe. */
#ifndef API_NUMFMT_H
#define API_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* Longest text api_format_elem() writes, including the NUL. */
#define API_NUMFMT_MAX 32

/* Writes element `elem` (host order, of `dtype`) as JSON into `buf`
 * (NUL-terminated) and returns the length:
 *  - floats: the fewest significant digits that read back (strtod, then
 *    rounding to the dtype) to the same bits (float32 3.1622777, not
 *    3.16227766016838), laid out as printf's %g does (exponent when it is
 *    < -4 or >= the digit count) with an unpadded exponent ("1e+20",
 *    "1e-5"); an integral value below 1e16 whose shortest digits are
 *    all before the point takes the shorter of that and the plain form,
 *    digits padded with zeros ("5", "100", float32 4290774016 as
 *    "4290774000", bfloat16 70330089472 as "7.03e+10"), plain on a tie;
 *  - -0 as "-0"; NaN/inf as the strings "NaN", "Infinity", "-Infinity"
 *    (with quotes);
 *  - bool as true / false (a byte other than 0 is true);
 *  - integers in decimal; uint64 above 2^63-1 as a quoted decimal string;
 *  - an unknown dtype as "null". */
size_t api_format_elem(char buf[API_NUMFMT_MAX], int dtype, const void *elem);

/* Writes v in decimal (as printf's %lld / %llu would) into `buf`
 * (NUL-terminated) and returns the length; no printf, for the hot path. */
size_t api_format_i64(char buf[API_NUMFMT_MAX], int64_t v);
size_t api_format_u64(char buf[API_NUMFMT_MAX], uint64_t v);

#endif /* API_NUMFMT_H */
