/*
 * test_anndata.c - the check of a CSR matrix's rows after a read
 * (ferry__anndata_indices_ok, src/backends/anndata.c, decision 0068),
 * shared by the hdf5 and zarr backends: its fast paths (native int32,
 * int64) and its general one (other integer types, stored byte-swapped)
 * must find the same first fault -- an index outside [0, width) (a
 * negative one, one equal to the width, one far beyond) at every
 * position, or a row whose indices do not increase (two swapped, a column
 * twice) -- in rows of 0, 1, 5, 14, 16 and 17 indices (the int32 path
 * compares 16 pairs at a time: before, inside and after a block of 16,
 * and in the tail), name its byte offset and cell, and accept canonical
 * rows; a variable that is not a matrix's integer indices is not checked.
 * The codes check (ferry__anndata_codes_ok): -1 and the categories'
 * numbers pass, others are refused naming the cell.  Long int32 rows (17
 * to 100 indices: the AVX2 loop's 16 pairs a step, its tail) at each
 * vector level (ferry__anndata_simd 0, 1, 2): a pair out of order or a
 * column twice at every place of the row is found, with its offset.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "../ferry_test.h"
#include "backends/anndata.h"

#include <stdio.h>
#include <string.h>

enum { N = 53, WIDTH = 1000, ROW0 = 2, NROWS = 6, CELL0 = 100 };

/* The matrix's offsets: rows 0-1 before the ones read (so the elements
 * read start at 10), then rows of 5, 0, 1, 17, 16 and 14 indices. */
static const int64_t roff[] = {0, 3, 10, 15, 15, 16, 33, 49, 63};

/* Element i (of the N read) as its row and place in it. */
static int row_of(int i, int *k) {
  for (int r = 0; r < NROWS; r++)
    if (10 + i < roff[ROW0 + r + 1]) {
      *k = 10 + i - (int)roff[ROW0 + r];
      return r;
    }
  return -1;
}

static void put(unsigned char *buf, ferry_dtype dt, int swapped, int i,
                int64_t x) {
  size_t el = ferry_dtype_size(dt);
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

/* N indices of dtype dt (swapped: stored the other byte order) in buf:
 * canonical rows inside [0, WIDTH) (place k of row r: r + 37 k). */
static void fill(unsigned char *buf, ferry_dtype dt, int swapped) {
  for (int i = 0; i < N; i++) {
    int k, r = row_of(i, &k);
    put(buf, dt, swapped, i, r + 37 * k);
  }
}

static int check(const ferry__var *v, const unsigned char *buf,
                 ferry__err *err) {
  memset(err, 0, sizeof *err);
  return ferry__anndata_indices_ok(v, "f", "dataset", 2, roff, CELL0, ROW0,
                                   NROWS, buf, err);
}

/* Rows of len int32 indices, one read of one row (roff {0, len}), at
 * each vector level: canonical passes, a pair swapped or a column twice
 * at each place is refused naming that place's offset. */
static void long_rows(void) {
  static const int lens[] = {17, 18, 31, 32, 33, 47, 48, 49, 100};
  int32_t row[100];
  ferry__var v;
  memset(&v, 0, sizeof v);
  v.name = "X/indices";
  v.ragged = 1;
  v.width = 100000;
  v.dtype = FERRY_INT32;
  v.row_bytes = 4;
  int tried = 0;
  for (int level = 0; level <= 2; level++) {
    ferry__anndata_simd = level;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
      const int len = lens[l];
      const int64_t ro[] = {0, len};
      ferry__err err;
      for (int i = 0; i < len; i++)
        row[i] = 3 * i + 1;
      memset(&err, 0, sizeof err);
      CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 0, ro, 7, 0, 1, row,
                                      &err) == 0,
            "level %d, a canonical row of %d refused: %s", level, len, err.msg);
      for (int at = 1; at < len; at++)
        for (int twice = 0; twice < 2; twice++) {
          for (int i = 0; i < len; i++)
            row[i] = 3 * i + 1;
          row[at] = row[at - 1];
          if (!twice) { /* swapped with the one before */
            row[at - 1] = 3 * at + 1;
            row[at] = 3 * (at - 1) + 1;
          }
          memset(&err, 0, sizeof err);
          int rc = ferry__anndata_indices_ok(&v, "f", "dataset", 0, ro, 7, 0, 1,
                                             row, &err);
          char want[64];
          snprintf(want, sizeof want, "offset %d: cell 7 names column", 4 * at);
          CHECK(rc == FERRY_EFORMAT && strstr(err.msg, want),
                "level %d, row of %d, %s at %d: rc %d '%s'", level, len,
                twice ? "a column twice" : "a pair swapped", at, rc, err.msg);
          tried++;
        }
    }
  }
  ferry__anndata_simd = 2;
  CHECK(tried == 3 * 2 * (16 + 17 + 30 + 31 + 32 + 46 + 47 + 48 + 99),
        "%d faults tried", tried);
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
  int nfaults = 0;
  for (int t = 0; t < 4; t++)
    for (int sw = 0; sw < 2; sw++) {
      ferry_dtype dt = types[t];
      v.dtype = dt;
      v.swapped = sw;
      v.row_bytes = ferry_dtype_size(dt);
      ferry__err err;
      fill(buf, dt, sw);
      int rc = check(&v, buf, &err);
      CHECK(rc == 0, "dtype %d swapped %d: canonical rows refused: %s", (int)dt,
            sw, err.msg);
      static const int at[] = {0, 5, 6, 7, 15, 16, 22, 23, 24, 38, 39, 52};
      const int64_t bads[] = {-1, WIDTH, 65000};
      for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        int place = 0, r = row_of(at[k], &place);
        for (int b = 0; b < 3; b++) {
          int64_t bad = bads[b];
          if (dt == FERRY_UINT16 && bad < 0)
            continue; /* no negative uint16 */
          if (dt == FERRY_INT16 && bad > 32767)
            bad = -300;
          fill(buf, dt, sw);
          put(buf, dt, sw, at[k], bad);
          rc = check(&v, buf, &err);
          char want[160];
          snprintf(want, sizeof want,
                   "offset %lld: column index %lld outside [0, %d) (the "
                   "matrix's shape), cell %d",
                   (long long)((10 + at[k]) * (int)v.row_bytes), (long long)bad,
                   WIDTH, CELL0 + ROW0 + r);
          CHECK(rc == FERRY_EFORMAT && strstr(err.msg, want) &&
                    strstr(err.msg, "dataset /X/indices, rank 2"),
                "dtype %d swapped %d: index %lld at %d: rc %d '%s', want "
                "'%s'",
                (int)dt, sw, (long long)bad, at[k], rc, err.msg, want);
          nfaults++;
        }
        if (place == 0)
          continue; /* the first of its row: no order to break */
        /* the one before it swapped with it, then a column twice */
        for (int twice = 0; twice < 2; twice++) {
          fill(buf, dt, sw);
          int64_t x = r + 37 * place, before = r + 37 * (place - 1);
          put(buf, dt, sw, at[k] - 1, twice ? before : x);
          put(buf, dt, sw, at[k], before);
          rc = check(&v, buf, &err);
          char want[160];
          snprintf(want, sizeof want,
                   "offset %lld: cell %d names column %lld after column %lld",
                   (long long)((10 + at[k]) * (int)v.row_bytes),
                   CELL0 + ROW0 + r, (long long)before,
                   (long long)(twice ? before : x));
          CHECK(rc == FERRY_EFORMAT && strstr(err.msg, want) &&
                    strstr(err.msg, "sum_duplicates"),
                "dtype %d swapped %d: %s at %d: rc %d '%s', want '%s'", (int)dt,
                sw, twice ? "a column twice" : "swapped", at[k], rc, err.msg,
                want);
          nfaults++;
        }
      }
    }
  CHECK(nfaults > 300, "only %d faults tried", nfaults);
  /* rows read from another first row: their elements start at its
   * offset (roff[5] = 16, the buffer's element 6) */
  fill(buf, FERRY_INT32, 0);
  v.dtype = FERRY_INT32;
  v.swapped = 0;
  v.row_bytes = 4;
  {
    ferry__err err;
    memset(&err, 0, sizeof err);
    CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 0, roff, CELL0,
                                    ROW0 + 3, 3, buf + (size_t)(16 - 10) * 4,
                                    &err) == 0,
          "rows 5-7 alone refused: %s", err.msg);
  }
  /* not a matrix's indices: not checked */
  put(buf, FERRY_INT32, 0, 3, -5);
  v.name = "X/data";
  CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 0, roff, 0, ROW0, NROWS,
                                  buf, NULL) == 0,
        "X/data checked as indices");
  v.name = "X/indices";
  v.width = 0;
  CHECK(ferry__anndata_indices_ok(&v, "f", "dataset", 0, roff, 0, ROW0, NROWS,
                                  buf, NULL) == 0,
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
  long_rows();
  return ft_summary("test_anndata");
}
