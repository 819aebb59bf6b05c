/*
 * backends/zip.h - the zip central-directory reader of the npz backend
 * (zip.c): the members of a zip archive, their methods, sizes, CRC-32 and
 * the offset of each member's data, and the first bytes of a member.
 * Rank 0, POSIX I/O.  Reading only; npz.c turns the members into .npy
 * variables and reads their data.
 */
#ifndef FERRY_ZIP_H
#define FERRY_ZIP_H

#include "backends/toolkit.h"

#include <stddef.h>
#include <stdint.h>

/* A local file header's fixed part (its signature "PK\3\4" included). */
#define FERRY__ZIP_LFH_LEN 30

/* One member as the central directory and its local header give it. */
typedef struct ferry__zip_member {
  char *name; /* NUL-terminated; a NUL inside the stored name is refused */
  int method;
  unsigned flags;
  uint32_t crc;
  int64_t csize, usize, lho; /* lho: local header offset */
  int64_t data;              /* the member's (compressed) data */
} ferry__zip_member;

/* An open archive: the caller sets path, fd and size (of the file), and
 * ferry__zip_read_members fills the rest. */
typedef struct ferry__zip {
  const char *path;
  int fd;
  int64_t size;
  int64_t cd_off, cd_size, nentries;
  ferry__zip_member *m;
  int n;
} ferry__zip;

/* The little-endian fields of zip (and of npz's manifest record). */
static inline uint16_t ferry__zip_le16(const unsigned char *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t ferry__zip_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}
static inline uint64_t ferry__zip_le64(const unsigned char *p) {
  return (uint64_t)ferry__zip_le32(p) | (uint64_t)ferry__zip_le32(p + 4) << 32;
}

/** Read the end of central directory (Zip64 too) and every entry with its
 * local header into za->m[0..n); each length read is bounded by the file,
 * a malformed archive is FERRY_EFORMAT naming file, member and offset;
 * methods other than stored (0) and deflate (8), encryption and split
 * archives are refused by name.  0 or a negative FERRY_E* code (za->m may
 * then hold the members read so far: ferry__zip_free it). */
int ferry__zip_read_members(ferry__zip *za, ferry__err *err);
/** Free the members of za (not its descriptor). */
void ferry__zip_free(ferry__zip *za);
/** The first want bytes of member m (fewer when it is shorter: *got),
 * inflated from its start when it is deflated (FERRY_ENOTSUP without
 * zlib). */
int ferry__zip_member_head(const ferry__zip *za, const ferry__zip_member *m,
                           unsigned char *buf, size_t want, size_t *got,
                           ferry__err *err);

#endif /* FERRY_ZIP_H */
