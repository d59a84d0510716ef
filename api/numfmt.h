/* numfmt.h - numbers as JSON text: shortest round-trip floats per dtype.
 * Pure functions; thread-safe. */
#ifndef API_NUMFMT_H
#define API_NUMFMT_H

#include <stddef.h>

/* Longest text api_format_elem() writes, including the NUL. */
#define API_NUMFMT_MAX 32

/* Writes element `elem` (host order, of `dtype`) as JSON into `buf`:
 * floats in the shortest decimal that reads back (strtod, then rounding to
 * the dtype) to the same value (float32 3.1622777, not 3.16227766016838);
 * integral floats without exponent up to 1e16 ("2", not "2.0"... see README);
 * NaN/inf as the strings "NaN", "Infinity", "-Infinity" (with quotes);
 * integers in decimal; uint64 above 2^63-1 as a quoted decimal string.
 * Returns the length written. */
size_t api_format_elem(char buf[API_NUMFMT_MAX], int dtype, const void *elem);

#endif /* API_NUMFMT_H */
