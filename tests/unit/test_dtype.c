/*
 * test_dtype.c - the dtype module (src/util/dtype.c, issue 24: half-float
 * conversions were written three times in the library, names twice):
 *  - every dtype's name and size, against a table written here, and back
 *    from its name; an unknown name or dtype refused;
 *  - every one of the 65,536 halves converted to a double and back gives
 *    the same bits (signed zeros, subnormals, normals, +-inf), NaNs give a
 *    NaN and no half back;
 *  - hand-picked values: 1, 65504, the smallest subnormal and normal;
 *    doubles with no exact half (65520, 2^-25, 1 + 2^-11, 1/3) refused;
 *  - +-inf as a null_fill text gave an undefined shift in Parquet's old
 *    half_of (frexp leaves the exponent of inf unspecified): now 0x7c00;
 *  - the generator's halves of the integers 0..2047 are exact.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "../ferry_test.h"
#include "util/dtype.h"
#include "util/util.h"

#include <math.h>
#include <string.h>

static void test_names(void) {
  static const struct {
    const char *name;
    size_t size;
  } want[FERRY_DTYPE_COUNT] = {
      [FERRY_BOOL] = {"bool", 1},         [FERRY_INT8] = {"int8", 1},
      [FERRY_INT16] = {"int16", 2},       [FERRY_INT32] = {"int32", 4},
      [FERRY_INT64] = {"int64", 8},       [FERRY_UINT8] = {"uint8", 1},
      [FERRY_UINT16] = {"uint16", 2},     [FERRY_UINT32] = {"uint32", 4},
      [FERRY_UINT64] = {"uint64", 8},     [FERRY_FLOAT16] = {"float16", 2},
      [FERRY_FLOAT32] = {"float32", 4},   [FERRY_FLOAT64] = {"float64", 8},
      [FERRY_BFLOAT16] = {"bfloat16", 2},
  };
  for (int i = 0; i < FERRY_DTYPE_COUNT; i++) {
    ferry_dtype t = (ferry_dtype)i, back = FERRY_DTYPE_COUNT;
    CHECK(want[i].name && strcmp(ferry_dtype_name(t), want[i].name) == 0,
          "dtype %d is named %s", i, ferry_dtype_name(t));
    CHECK(ferry_dtype_size(t) == want[i].size, "%s: size %zu", want[i].name,
          ferry_dtype_size(t));
    CHECK(ferry__dtype_from_name(want[i].name, &back) == 0 && back == t,
          "%s does not name dtype %d", want[i].name, i);
  }
  ferry_dtype back = FERRY_INT8;
  CHECK(ferry__dtype_from_name("float128", &back) == FERRY_EINVAL &&
            back == FERRY_INT8,
        "float128 taken for a dtype");
  CHECK(strcmp(ferry_dtype_name(FERRY_DTYPE_COUNT), "?") == 0 &&
            ferry_dtype_size(FERRY_DTYPE_COUNT) == 0 &&
            ferry_dtype_size((ferry_dtype)-1) == 0,
        "a dtype past the table has a name or size");
}

/* bfloat16 (sparse=dense's sparse_dtype=bfloat16): every one of the
 * 65,536 to a float and back gives the same bits (NaNs stay NaNs); floats
 * rounded to nearest, ties to even, overflow to infinity. */
static void test_bfloat16(void) {
  int nans = 0;
  for (uint32_t b = 0; b <= 0xffff; b++) {
    float f = ferry__bfloat16_to_float((uint16_t)b);
    uint16_t back = ferry__bfloat16_of_float(f);
    if (isnan(f)) {
      nans++;
      CHECK(isnan(ferry__bfloat16_to_float(back)), "NaN %04x lost", b);
    } else {
      CHECK(back == b, "bfloat16 %04x -> %g -> %04x", b, (double)f, back);
    }
  }
  CHECK(nans == 2 * 127, "%d bfloat16 NaNs", nans);
  static const struct {
    float f;
    uint16_t want;
  } r[] = {
      {1.0f + 0x1p-8f, 0x3f80},            /* a tie: to even (down)    */
      {1.0f + 0x1p-7f + 0x1p-8f, 0x3f82},  /* a tie: to even (up)      */
      {1.0f + 0x1p-8f + 0x1p-20f, 0x3f81}, /* past the tie: up        */
      {-1.0f - 0x1p-8f, 0xbf80},
      {3.4028235e38f, 0x7f80}, /* FLT_MAX: past bfloat16's max, infinity */
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {0x1p-133f, 0x0001}, /* the smallest subnormal */
  };
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
    CHECK(ferry__bfloat16_of_float(r[i].f) == r[i].want,
          "%a -> %04x, want %04x", (double)r[i].f,
          ferry__bfloat16_of_float(r[i].f), r[i].want);
  unsigned char out[2];
  CHECK(ferry__value_of_text("1.5", FERRY_BFLOAT16, out) == 0 &&
            ferry__dtype_as_double(out, FERRY_BFLOAT16) == 1.5,
        "1.5 as bfloat16");
  CHECK(ferry__value_of_text("1.001", FERRY_BFLOAT16, out) == -1,
        "1.001 has no exact bfloat16");
}

static void test_all_halves(void) {
  int nans = 0;
  for (uint32_t h = 0; h <= 0xffff; h++) {
    double x = ferry__half_to_double((uint16_t)h);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      nans++;
      CHECK(isnan(x), "half %04x is a NaN, got %g", h, x);
      CHECK(ferry__half_of_double(x) == -1, "NaN %04x has a half", h);
      continue;
    }
    int32_t back = ferry__half_of_double(x);
    CHECK(back == (int32_t)h, "half %04x -> %.17g -> %04x", h, x, back);
  }
  CHECK(nans == 2 * 1023, "%d NaN halves", nans);
}

static void test_values(void) {
  static const struct {
    uint16_t h;
    double x;
  } v[] = {{0x0000, 0.0},      {0x3c00, 1.0},        {0xc000, -2.0},
           {0x7bff, 65504.0},  {0x0001, 0x1p-24},    {0x03ff, 1023 * 0x1p-24},
           {0x0400, 0x1p-14},  {0x3555, 0x1.554p-2}, {0x7c00, INFINITY},
           {0xfc00, -INFINITY}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    CHECK(ferry__half_to_double(v[i].h) == v[i].x, "%04x: %.17g, not %.17g",
          v[i].h, ferry__half_to_double(v[i].h), v[i].x);
    CHECK(ferry__half_of_double(v[i].x) == v[i].h, "%.17g: %04x, not %04x",
          v[i].x, ferry__half_of_double(v[i].x), v[i].h);
  }
  CHECK(ferry__half_of_double(-0.0) == 0x8000, "-0: %04x",
        ferry__half_of_double(-0.0));
  static const double none[] = {65520.0,     1e6,     0x1p-25, 1.5 * 0x1p-24,
                                1 + 0x1p-11, 1.0 / 3, -65505.0};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
    CHECK(ferry__half_of_double(none[i]) == -1, "%.17g has no half, got %04x",
          none[i], ferry__half_of_double(none[i]));
  CHECK(ferry__half_of_double(NAN) == -1, "NaN got a half");
}

static void test_ints(void) {
  for (uint32_t n = 0; n < 2048; n++) {
    uint16_t h = ferry__half_of_int(n);
    CHECK(ferry__half_to_double(h) == (double)n &&
              ferry__half_of_double((double)n) == h,
          "%u: half %04x is %.17g", n, h, ferry__half_to_double(h));
  }
  CHECK(ferry__half_of_int(70000) == 0x7c00, "70000 is past the halves: %04x",
        ferry__half_of_int(70000));
  CHECK(ferry__half_of_int(4097) == 0x6c00, "4097 rounds down to 4096: %04x",
        ferry__half_of_int(4097));
}

int main(void) {
  test_names();
  test_all_halves();
  test_bfloat16();
  test_values();
  test_ints();
  return ft_summary("test_dtype");
}
