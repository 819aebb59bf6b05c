/*
 * backends/gen.h - the synthetic values of `ferry gen` and the mem backend
 * (mem.c), shared with the tool and the tests.
 */
#ifndef FERRY_GEN_H
#define FERRY_GEN_H

#include "ferry.h"

#include <stdint.h>

/**
 * The synthetic value of element k of sample i, as `ferry gen` and the mem
 * backend write it: (i + k) mod M(dtype), M = 2^7 int8, 2^8 uint8, 2^15
 * int16, 2^16 uint16, 2^31 int32, 2^32 uint32, 2^62 (u)int64, 2^11 float16,
 * 2^24 float32, 2^53 float64, 2 bool.  Writes one native element to out.
 */
int ferry__gen_value(ferry_dtype dtype, int64_t sample, int64_t k, void *out);

#endif /* FERRY_GEN_H */
