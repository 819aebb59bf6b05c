/*
 * util/dtype.h - the library's one place for dtypes (dtype.c): names and
 * sizes (ferry_dtype_name, ferry_dtype_size of ferry.h and
 * ferry__dtype_from_name of util.h are defined there) and the IEEE half
 * (float16) conversions every backend and the loader share.  The tool
 * (src/tool/common.c) and the tests keep their own half conversions: they
 * see only include/ferry.h.
 */
#ifndef FERRY_UTIL_DTYPE_H
#define FERRY_UTIL_DTYPE_H

#include <stdint.h>

#include "ferry.h"

/** The value of IEEE half h: normals, subnormals, signed zeros, +-inf and
 * NaN (any mantissa with the exponent all ones). */
double ferry__half_to_double(uint16_t h);

/** The IEEE half that is exactly x (normal, subnormal or signed zero, and
 * +-inf), as 0..0xffff; -1 when x has no exact half (too large, too many
 * significant bits, below the smallest subnormal, or NaN, whose payload no
 * text names). */
int32_t ferry__half_of_double(double x);

/** A float as bfloat16 (its upper 16 bits), rounded to nearest, ties to
 *  even; a NaN stays a NaN, infinities and overflow to infinity stay so. */
uint16_t ferry__bfloat16_of_float(float f);
/** A bfloat16 as the float it is (exact). */
float ferry__bfloat16_to_float(uint16_t b);

/** The IEEE half of the integer n, exact for n < 2048 (11 significant bits:
 * the implicit one and the 10-bit mantissa); larger n are rounded towards
 * zero.  The generator's float16 values (gen.h). */
uint16_t ferry__half_of_int(uint32_t n);

/** 1 when dt is one of the eight integer dtypes (not bool, not a float,
 *  not an invalid value). */
int ferry__dtype_is_int(ferry_dtype dt);
/** Element p (native byte order, possibly unaligned) of dtype dt as a
 *  double (weights, a sparse matrix's values). */
double ferry__dtype_as_double(const unsigned char *p, ferry_dtype dt);
/** Element p of integer dtype dt as an int64 (labels, column indices): 0,
 *  or -1 when a uint64 does not fit. */
int ferry__dtype_as_int64(const unsigned char *p, ferry_dtype dt, int64_t *out);
/** The same for an element stored in the other byte order when swapped
 *  (a file's, before the loader swaps it). */
int ferry__dtype_as_int64_stored(const unsigned char *p, ferry_dtype dt,
                                 int swapped, int64_t *out);

/** The number TEXT as one element of dtype dt, exactly, in native byte
 *  order into out (at most 8 bytes): 0, or -1 when it is not a number or
 *  dt cannot hold it exactly (a fraction for an integer dtype, out of
 *  range, too many digits for a float).  Parquet's null_fill and the
 *  loader's pad_value. */
int ferry__value_of_text(const char *text, ferry_dtype dt, unsigned char *out);

#endif /* FERRY_UTIL_DTYPE_H */
