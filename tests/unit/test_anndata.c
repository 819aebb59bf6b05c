/*
 * test_anndata.c - the column-index check of a CSR matrix's rows after a
 * read (ferry__anndata_indices_ok, src/backends/anndata.c), shared by the
 * hdf5 and zarr backends: its fast paths (native int32, int64) and its
 * general one (other integer types, stored byte-swapped) must find the
 * same first index outside [0, width) -- a negative one, one equal to the
 * width, one far beyond -- at every position (the int32 path works on 16
 * at a time, so before, inside and after a block of 16, and in the tail),
 * name its byte offset, and accept every index inside; a variable that is
 * not a matrix's integer indices is not checked.  The codes check
 * (ferry__anndata_codes_ok): -1 and the categories' numbers pass, others
 * are refused naming the cell.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "../ferry_test.h"
#include "backends/anndata.h"

#include <stdio.h>
#include <string.h>

enum { N = 53, WIDTH = 1000 };

/* n indices of dtype dt (swapped: stored the other byte order) in buf,
 * all inside [0, WIDTH), but index bad_at (if >= 0) set to bad. */
static void fill(unsigned char *buf, ferry_dtype dt, int swapped, int bad_at,
                 int64_t bad) {
  size_t el = ferry_dtype_size(dt);
  for (int i = 0; i < N; i++) {
    int64_t x = i == bad_at ? bad : (int64_t)(i * 37 % WIDTH);
    unsigned char e[8];
    if (dt == FERRY_INT32) {
      int32_t y = (int32_t)x;
      memcpy(e, &y, 4);
    } else if (dt == FERRY_INT64) {
      memcpy(e, &x, 8);
    } else if (dt == FERRY_UINT16) {
      uint16_t y = (uint16_t)x;
      memcpy(e, &y, 2);
    } else {
      int16_t y = (int16_t)x;
      memcpy(e, &y, 2);
    }
    for (size_t b = 0; b < el; b++)
      buf[(size_t)i * el + b] = swapped ? e[el - 1 - b] : e[b];
  }
}

int main(void) {
  static const ferry_dtype types[] = {FERRY_INT32, FERRY_INT64, FERRY_UINT16,
                                      FERRY_INT16};
  unsigned char buf[N * 8];
  ferry__var v;
  memset(&v, 0, sizeof v);
  v.name = "X/indices";
  v.ragged = 1;
  v.width = WIDTH;
  for (int t = 0; t < 4; t++)
    for (int sw = 0; sw < 2; sw++) {
      ferry_dtype dt = types[t];
      v.dtype = dt;
      v.swapped = sw;
      v.row_bytes = ferry_dtype_size(dt);
      ferry__err err;
      fill(buf, dt, sw, -1, 0);
      memset(&err, 0, sizeof err);
      CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 2, 100, N, buf,
                                      &err) == 0,
            "dtype %d swapped %d: valid indices refused: %s", (int)dt, sw,
            err.msg);
      static const int at[] = {0, 7, 15, 16, 31, 47, 48, 52};
      const int64_t bads[] = {-1, WIDTH, 65000};
      for (size_t k = 0; k < sizeof at / sizeof at[0]; k++)
        for (int b = 0; b < 3; b++) {
          int64_t bad = bads[b];
          if (dt == FERRY_UINT16 && bad < 0)
            continue; /* no negative uint16 */
          if (dt == FERRY_INT16 && bad > 32767)
            bad = -300;
          fill(buf, dt, sw, at[k], bad);
          memset(&err, 0, sizeof err);
          int rc = ferry__anndata_indices_ok(&v, "f", "dataset", 2, 100, N, buf,
                                             &err);
          char want[160];
          snprintf(want, sizeof want,
                   "offset %lld: column index %lld outside [0, %d)",
                   (long long)((100 + at[k]) * (int)v.row_bytes),
                   (long long)bad, WIDTH);
          CHECK(rc == FERRY_EFORMAT && strstr(err.msg, want) &&
                    strstr(err.msg, "dataset /X/indices, rank 2"),
                "dtype %d swapped %d: index %lld at %d: rc %d '%s', want "
                "'%s'",
                (int)dt, sw, (long long)bad, at[k], rc, err.msg, want);
        }
    }
  /* not a matrix's indices: not checked */
  fill(buf, FERRY_INT32, 0, 3, -5);
  v.dtype = FERRY_INT32;
  v.swapped = 0;
  v.row_bytes = 4;
  v.name = "X/data";
  CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 0, 0, N, buf, NULL) == 0,
        "X/data checked as indices");
  v.name = "X/indices";
  v.width = 0;
  CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 0, 0, N, buf, NULL) == 0,
        "a variable without a width checked");
  /* a categorical column's codes: -1 and 0..K-1 pass; -2 and K refused,
   * naming the cell; int8 as anndata writes them, int16 byte-swapped */
  ferry__var c;
  memset(&c, 0, sizeof c);
  c.name = "obs/cell_type/codes";
  c.categories = "B\nNK\nT";
  for (int t = 0; t < 2; t++) {
    c.dtype = t ? FERRY_INT16 : FERRY_INT8;
    c.swapped = t;
    c.row_bytes = ferry_dtype_size(c.dtype);
    unsigned char cb[2 * N];
    for (int bad = -3; bad <= 3; bad++) {
      for (int i = 0; i < N; i++) {
        int16_t x = i == 20 ? (int16_t)bad : (int16_t)(i % 4 - 1);
        unsigned char e[2];
        memcpy(e, &x, 2);
        if (t) {
          cb[2 * i] = e[1];
          cb[2 * i + 1] = e[0];
        } else {
          cb[i] = (unsigned char)(int8_t)x;
        }
      }
      ferry__err err;
      memset(&err, 0, sizeof err);
      int rc = ferry__anndata_codes_ok(&c, "f", "array", 1, 40, N, cb, &err);
      int want_bad = bad < -1 || bad >= 3;
      char want[96];
      snprintf(want, sizeof want, "code %d of cell 60 outside [-1, 3)", bad);
      CHECK(want_bad ? rc == FERRY_EFORMAT && strstr(err.msg, want) != NULL
                     : rc == 0,
            "codes dtype %d: code %d at cell 60: rc %d '%s'", (int)c.dtype, bad,
            rc, err.msg);
    }
  }
  c.categories = NULL; /* no categories: not codes, not checked */
  CHECK(ferry__anndata_codes_ok(&c, "f", "array", 1, 0, 1,
                                (const unsigned char *)"\x09", NULL) == 0,
        "a column without categories checked");
  return ft_summary("test_anndata");
}
