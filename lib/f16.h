/* f16.h - float16 (IEEE binary16) and bfloat16 conversions, bit-exact.
 *
 * Every narrowing conversion rounds to nearest, ties to even, directly from
 * the source value (no double rounding through float).  NaN stays NaN (sign
 * and the top payload bits kept, quiet bit set), signed zeros and subnormals
 * are preserved, and values beyond the largest finite value round to +-inf
 * exactly as IEEE 754 says.  Widening conversions are exact.
 * Pure functions; thread-safe.
 */
#ifndef F16_H
#define F16_H

#include <stdint.h>

float rd_f16_to_f32(uint16_t h);
double rd_f16_to_f64(uint16_t h);
uint16_t rd_f32_to_f16(float f);
uint16_t rd_f64_to_f16(double d);

float rd_bf16_to_f32(uint16_t b);
double rd_bf16_to_f64(uint16_t b);
uint16_t rd_f32_to_bf16(float f);
uint16_t rd_f64_to_bf16(double d);

#endif /* F16_H */
