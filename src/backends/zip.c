/*
 * zip.c - the zip central-directory reader of the npz backend (zip.h).
 *
 * Why a zip reader of our own: ferry needs the byte offset of each member's
 * data, to read stored members through MPI-IO exactly like .npy files, and
 * nothing else of zip (no writing, no names in other encodings, no
 * encryption).  libzip or minizip would read whole members through their own
 * file handles and add a dependency for the lines below: the end of
 * central directory (searched in the last 64 KiB + 22 bytes only), the Zip64
 * locator and record, the central directory entries with their Zip64 extra
 * fields (members over 4 GiB), and each member's local header, for its own
 * name and extra lengths.  Every length read from the file is bounded by the
 * file size before use and every sum is checked; a malformed archive is
 * FERRY_EFORMAT naming file, member and offset.  Methods 0 (stored) and 8
 * (deflate) are read; any other, encryption and archives split over several
 * disks are refused by name.  Split out of npz.c (issue 24), which reads
 * the members' data.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "backends/zip.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

#define ZIP_EOCD_LEN 22
#define ZIP_COMMENT_MAX 65535
#define ZIP_CDH_LEN 46
#define ZIP64_LOC_LEN 20
#define ZIP64_EOCD_LEN 56
/* A central directory larger than this is refused (an .npz has a few
 * entries of ~100 bytes each). */
#define ZIP_CD_MAX ((int64_t)256 << 20)

void ferry__zip_free(ferry__zip *za) {
  for (int i = 0; i < za->n; i++)
    free(za->m[i].name);
  free(za->m);
  za->m = NULL;
  za->n = 0;
}

/* "PATH: corrupt zip archive at offset O: WHAT" */
static int bad_zip(const ferry__zip *za, int64_t off, const char *what,
                   ferry__err *err) {
  return ferry__seterr(err, FERRY_EFORMAT,
                       "%s: corrupt zip archive at offset %lld: %s", za->path,
                       (long long)off, what);
}

/* "PATH, member NAME: corrupt zip archive at offset O: WHAT" */
static int bad_member(const ferry__zip *za, const char *name, int64_t off,
                      const char *what, ferry__err *err) {
  return ferry__seterr(err, FERRY_EFORMAT,
                       "%s, member %s: corrupt zip archive at offset %lld: %s",
                       za->path, name, (long long)off, what);
}

/* Exactly n bytes at off, which must lie inside the file. */
static int zread(const ferry__zip *za, int64_t off, void *buf, size_t n,
                 const char *what, ferry__err *err) {
  size_t got = 0;
  if (off < 0 || off > za->size || (int64_t)n > za->size - off)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: corrupt zip archive at offset %lld: the %s "
                         "(%zu bytes) lies outside the file (%lld bytes)",
                         za->path, (long long)off, what, n,
                         (long long)za->size);
  if (ferry__pread_full(za->fd, buf, n, off, &got) != 0)
    return ferry__seterr(err, FERRY_EIO, "%s: read failed at offset %lld: %s",
                         za->path, (long long)off, strerror(errno));
  if (got != n)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: truncated zip archive: the %s at offset %lld "
                         "needs %zu bytes, got %zu",
                         za->path, what, (long long)off, n, got);
  return 0;
}

/* The Zip64 end of central directory record, found through its locator
 * (the 20 bytes before the end of central directory at eocd). */
static int read_zip64(ferry__zip *za, int64_t eocd, ferry__err *err) {
  unsigned char loc[ZIP64_LOC_LEN], rec[ZIP64_EOCD_LEN];
  int64_t lpos = eocd - ZIP64_LOC_LEN;
  int rc = zread(za, lpos, loc, sizeof loc, "Zip64 locator", err);
  if (rc < 0)
    return rc;
  if (ferry__zip_le32(loc + 4) != 0 || ferry__zip_le32(loc + 16) > 1)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: the zip archive spans %u disks (offset %lld); "
                         "multi-disk archives are not read",
                         za->path, (unsigned)ferry__zip_le32(loc + 16),
                         (long long)lpos);
  uint64_t roff = ferry__zip_le64(loc + 8);
  if (roff > (uint64_t)lpos || (uint64_t)lpos - roff < ZIP64_EOCD_LEN)
    return bad_zip(za, lpos,
                   "the Zip64 locator points outside the archive's head", err);
  if ((rc = zread(za, (int64_t)roff, rec, sizeof rec, "Zip64 end record",
                  err)) < 0)
    return rc;
  if (memcmp(rec, "PK\6\6", 4) != 0)
    return bad_zip(za, (int64_t)roff, "no Zip64 end record signature", err);
  if (ferry__zip_le32(rec + 16) != 0 || ferry__zip_le32(rec + 20) != 0 ||
      ferry__zip_le64(rec + 24) != ferry__zip_le64(rec + 32))
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: the zip archive spans several disks (Zip64 "
                         "record at offset %lld); multi-disk archives are "
                         "not read",
                         za->path, (long long)roff);
  uint64_t n = ferry__zip_le64(rec + 32), size = ferry__zip_le64(rec + 40),
           off = ferry__zip_le64(rec + 48);
  if (off > roff || size > roff - off || n > size / ZIP_CDH_LEN)
    return bad_zip(za, (int64_t)roff,
                   "the Zip64 record's central directory lies outside the "
                   "archive",
                   err);
  za->nentries = (int64_t)n;
  za->cd_size = (int64_t)size;
  za->cd_off = (int64_t)off;
  return 0;
}

/* Find the end of central directory record in the last 64 KiB + 22 bytes
 * (a comment is at most 65535 bytes), the last candidate whose comment
 * length reaches no further than the file's end. */
static int find_eocd(ferry__zip *za, ferry__err *err) {
  if (za->size < ZIP_EOCD_LEN)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: not a zip archive: %lld bytes is shorter than "
                         "an end of central directory record (22)",
                         za->path, (long long)za->size);
  int64_t tail = za->size < ZIP_EOCD_LEN + ZIP_COMMENT_MAX
                     ? za->size
                     : ZIP_EOCD_LEN + ZIP_COMMENT_MAX;
  unsigned char *t = malloc((size_t)tail);
  if (!t)
    return ferry__oom(err, -1, (size_t)tail,
                      "the tail of zip archive %s (end of central directory)",
                      za->path);
  int64_t base = za->size - tail, at = -1;
  int rc = zread(za, base, t, (size_t)tail, "archive's tail", err);
  for (int64_t p = tail - ZIP_EOCD_LEN; rc == 0 && p >= 0 && at < 0; p--)
    if (memcmp(t + p, "PK\5\6", 4) == 0 &&
        p + ZIP_EOCD_LEN + ferry__zip_le16(t + p + 20) <= tail)
      at = p;
  if (rc == 0 && at < 0)
    rc = ferry__seterr(err, FERRY_EFORMAT,
                       "%s: not a zip archive (or truncated): no end of "
                       "central directory record in its last %lld bytes",
                       za->path, (long long)tail);
  if (rc < 0) {
    free(t);
    return rc;
  }
  const unsigned char *e = t + at;
  int64_t eocd = base + at;
  unsigned disk = ferry__zip_le16(e + 4), cddisk = ferry__zip_le16(e + 6);
  uint16_t here = ferry__zip_le16(e + 8), total = ferry__zip_le16(e + 10);
  za->nentries = total;
  za->cd_size = ferry__zip_le32(e + 12);
  za->cd_off = ferry__zip_le32(e + 16);
  free(t);
  int zip64 = eocd >= ZIP64_LOC_LEN;
  if (zip64) {
    unsigned char sig[4];
    if ((rc = zread(za, eocd - ZIP64_LOC_LEN, sig, 4, "Zip64 locator", err)) <
        0)
      return rc;
    zip64 = memcmp(sig, "PK\6\7", 4) == 0;
  }
  if (zip64)
    return read_zip64(za, eocd, err);
  if ((disk != 0 && disk != 0xffff) || (cddisk != 0 && cddisk != 0xffff) ||
      here != total)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: the zip archive spans several disks (end of "
                         "central directory at offset %lld); multi-disk "
                         "archives are not read",
                         za->path, (long long)eocd);
  if (za->cd_off > eocd || za->cd_size > eocd - za->cd_off ||
      za->nentries > za->cd_size / ZIP_CDH_LEN)
    return bad_zip(za, eocd,
                   "the end of central directory points outside the archive",
                   err);
  return 0;
}

/* The Zip64 extended information extra field (id 1) of a central directory
 * entry: the 64-bit values of the fields that hold 0xffffffff, in the order
 * uncompressed size, compressed size, local header offset. */
static int zip64_extra(const ferry__zip *za, ferry__zip_member *m,
                       const unsigned char *x, size_t xlen, int64_t off,
                       ferry__err *err) {
  int need_u = m->usize == 0xffffffff, need_c = m->csize == 0xffffffff,
      need_o = m->lho == 0xffffffff;
  size_t i = 0;
  while (i + 4 <= xlen) {
    unsigned id = ferry__zip_le16(x + i), len = ferry__zip_le16(x + i + 2);
    if (len > xlen - i - 4)
      return bad_member(za, m->name, off, "an extra field overruns its entry",
                        err);
    if (id == 1) {
      const unsigned char *f = x + i + 4;
      size_t k = 0, want = 8u * (size_t)(need_u + need_c + need_o);
      if (len < want)
        return bad_member(za, m->name, off,
                          "the Zip64 extra field is too short", err);
      if (need_u)
        m->usize = (int64_t)ferry__zip_le64(f + 8 * k++);
      if (need_c)
        m->csize = (int64_t)ferry__zip_le64(f + 8 * k++);
      if (need_o)
        m->lho = (int64_t)ferry__zip_le64(f + 8 * k++);
      need_u = need_c = need_o = 0;
    }
    i += 4 + len;
  }
  if (need_u || need_c || need_o)
    return bad_member(za, m->name, off,
                      "a size or offset is 0xffffffff but there is no "
                      "Zip64 extra field",
                      err);
  if (m->usize < 0 || m->csize < 0 || m->lho < 0)
    return bad_member(za, m->name, off, "a Zip64 size or offset overflows",
                      err);
  return 0;
}

/* One central directory entry at cd[pos] (pos + 46 <= len checked). */
static int parse_entry(ferry__zip *za, const unsigned char *cd, size_t len,
                       size_t *pos, ferry__zip_member *m, ferry__err *err) {
  const unsigned char *h = cd + *pos;
  int64_t off = za->cd_off + (int64_t)*pos;
  if (memcmp(h, "PK\1\2", 4) != 0)
    return bad_zip(za, off, "no central directory entry signature", err);
  size_t nlen = ferry__zip_le16(h + 28), xlen = ferry__zip_le16(h + 30),
         clen = ferry__zip_le16(h + 32);
  if (nlen + xlen + clen > len - *pos - ZIP_CDH_LEN)
    return bad_zip(za, off, "a central directory entry overruns the directory",
                   err);
  const unsigned char *name = h + ZIP_CDH_LEN;
  if (nlen == 0 || memchr(name, 0, nlen))
    return bad_zip(za, off, "a member name is empty or holds a NUL byte", err);
  if (!(m->name = malloc(nlen + 1)))
    return ferry__oom(err, -1, nlen + 1,
                      "a member name in zip archive %s (offset %lld)", za->path,
                      (long long)off);
  memcpy(m->name, name, nlen);
  m->name[nlen] = '\0';
  m->flags = ferry__zip_le16(h + 8);
  m->method = ferry__zip_le16(h + 10);
  m->crc = ferry__zip_le32(h + 16);
  m->csize = ferry__zip_le32(h + 20);
  m->usize = ferry__zip_le32(h + 24);
  m->lho = ferry__zip_le32(h + 42);
  int rc = zip64_extra(za, m, name + nlen, xlen, off, err);
  if (rc < 0)
    return rc;
  if (ferry__zip_le16(h + 34) != 0 && ferry__zip_le16(h + 34) != 0xffff)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s, member %s: starts on disk %u (offset %lld); "
                         "multi-disk archives are not read",
                         za->path, m->name, (unsigned)ferry__zip_le16(h + 34),
                         (long long)off);
  *pos += ZIP_CDH_LEN + nlen + xlen + clen;
  return 0;
}

/* The local header of m: its own name and extra lengths place the data. */
static int read_local(const ferry__zip *za, ferry__zip_member *m,
                      ferry__err *err) {
  unsigned char h[FERRY__ZIP_LFH_LEN];
  if (m->lho > za->cd_off || za->cd_off - m->lho < FERRY__ZIP_LFH_LEN)
    return bad_member(za, m->name, m->lho,
                      "the local header lies outside the archive's data", err);
  int rc = zread(za, m->lho, h, sizeof h, "local header", err);
  if (rc < 0)
    return rc;
  if (memcmp(h, "PK\3\4", 4) != 0)
    return bad_member(za, m->name, m->lho, "no local header signature", err);
  int64_t data = m->lho + FERRY__ZIP_LFH_LEN + ferry__zip_le16(h + 26) +
                 ferry__zip_le16(h + 28);
  if (data > za->cd_off || m->csize > za->cd_off - data)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s, member %s: corrupt zip archive at offset %lld: "
                         "the member's %lld bytes of data run past the end "
                         "of its data (offset %lld)",
                         za->path, m->name, (long long)data,
                         (long long)m->csize, (long long)za->cd_off);
  m->data = data;
  return 0;
}

static int check_member(const ferry__zip *za, const ferry__zip_member *m,
                        ferry__err *err) {
  if (m->flags & 0x41u)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s, member %s: is encrypted (offset %lld); "
                         "encrypted archives are not read",
                         za->path, m->name, (long long)m->lho);
  if (m->method != 0 && m->method != 8)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s, member %s: compression method %d is not read "
                         "(offset %lld); ferry reads stored (0) and deflated "
                         "(8) members, as numpy.savez and savez_compressed "
                         "write them",
                         za->path, m->name, m->method, (long long)m->lho);
  if (m->method == 0 && m->csize != m->usize)
    return bad_member(za, m->name, m->lho,
                      "a stored member's compressed and uncompressed sizes "
                      "differ",
                      err);
  size_t n = strlen(m->name);
  if (n <= 4 || strcmp(m->name + n - 4, ".npy") != 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s, member %s: is not a .npy array (offset %lld); "
                         "an .npz archive holds NAME.npy members only",
                         za->path, m->name, (long long)m->lho);
  for (const ferry__zip_member *o = za->m; o < m; o++)
    if (strcmp(o->name, m->name) == 0)
      return bad_member(za, m->name, m->lho, "the member name appears twice",
                        err);
  return 0;
}

/* Central directory, then every member's local header. */
int ferry__zip_read_members(ferry__zip *za, ferry__err *err) {
  int rc = find_eocd(za, err);
  if (rc < 0)
    return rc;
  if (za->nentries == 0)
    return ferry__seterr(err, FERRY_EFORMAT,
                         "%s: the zip archive holds no member", za->path);
  if (za->cd_size > ZIP_CD_MAX || za->nentries > INT_MAX)
    return ferry__seterr(err, FERRY_ENOTSUP,
                         "%s: a central directory of %lld bytes (%lld "
                         "members, offset %lld) is larger than ferry reads",
                         za->path, (long long)za->cd_size,
                         (long long)za->nentries, (long long)za->cd_off);
  unsigned char *cd = malloc((size_t)za->cd_size);
  za->m = calloc((size_t)za->nentries, sizeof *za->m);
  if (!cd || !za->m) {
    free(cd);
    return ferry__oom(err, -1,
                      !cd ? (size_t)za->cd_size
                          : (size_t)za->nentries * sizeof *za->m,
                      "the central directory of zip archive %s (%lld members)",
                      za->path, (long long)za->nentries);
  }
  rc = zread(za, za->cd_off, cd, (size_t)za->cd_size, "central directory", err);
  size_t pos = 0, len = (size_t)za->cd_size;
  for (int64_t i = 0; rc == 0 && i < za->nentries; i++) {
    if (len - pos < ZIP_CDH_LEN) {
      rc = bad_zip(za, za->cd_off + (int64_t)pos,
                   "the central directory ends before its last entry", err);
      break;
    }
    ferry__zip_member *m = &za->m[za->n];
    rc = parse_entry(za, cd, len, &pos, m, err);
    if (m->name)
      za->n++;
    if (rc == 0 && (rc = check_member(za, m, err)) == 0)
      rc = read_local(za, m, err);
  }
  free(cd);
  return rc;
}

#ifdef HAVE_ZLIB
/* The first want bytes of deflated member m, inflated from its start. */
static int inflate_head(const ferry__zip *za, const ferry__zip_member *m,
                        unsigned char *buf, size_t want, size_t *got,
                        ferry__err *err) {
  unsigned char in[1 << 14];
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  /* zlib sizes its own state and does not say how much it wanted: the
   * message cannot name the bytes (nor is every failure here a lack of
   * memory). */
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return ferry__seterr(err, FERRY_ENOMEM, "%s, member %s: zlib cannot start",
                         za->path, m->name);
  int64_t fed = 0;
  int rc = 0, zrc = Z_OK;
  zs.next_out = buf;
  zs.avail_out = (uInt)want;
  while (rc == 0 && zs.avail_out > 0 && zrc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      size_t n = m->csize - fed < (int64_t)sizeof in ? (size_t)(m->csize - fed)
                                                     : sizeof in;
      if (n == 0) {
        rc = bad_member(za, m->name, m->data + fed,
                        "the deflate stream ends before the .npy header", err);
        break;
      }
      if ((rc = zread(za, m->data + fed, in, n, "member data", err)) < 0)
        break;
      fed += (int64_t)n;
      zs.next_in = in;
      zs.avail_in = (uInt)n;
    }
    zrc = inflate(&zs, Z_NO_FLUSH);
    if (zrc != Z_OK && zrc != Z_STREAM_END)
      rc = ferry__seterr(err, FERRY_EFORMAT,
                         "%s, member %s: corrupt deflate data near offset "
                         "%lld: %s",
                         za->path, m->name, (long long)(m->data + fed),
                         zs.msg ? zs.msg : "inflate failed");
  }
  *got = want - zs.avail_out;
  inflateEnd(&zs);
  return rc;
}
#endif

/* The first want bytes of member m (fewer when it is shorter). */
int ferry__zip_member_head(const ferry__zip *za, const ferry__zip_member *m,
                           unsigned char *buf, size_t want, size_t *got,
                           ferry__err *err) {
  if (m->usize < (int64_t)want)
    want = (size_t)m->usize;
  *got = 0;
  if (want == 0)
    return 0;
  if (m->method == 0) {
    *got = want;
    return zread(za, m->data, buf, want, "member data", err);
  }
#ifdef HAVE_ZLIB
  return inflate_head(za, m, buf, want, got, err);
#else
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "%s, member %s: is deflated (offset %lld) and this "
                       "build of ferry has no zlib (configure --with-zlib)",
                       za->path, m->name, (long long)m->lho);
#endif
}
