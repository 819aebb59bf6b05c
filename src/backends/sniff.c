/*
 * sniff.c - what a part that no backend reads looks like.
 *
 * "no backend reads FILE" left a user guessing: was the file truncated, a
 * format ferry does not know, or a format it knows in a build without its
 * library?  When every probe declined, the manifest asks this file for the
 * message instead: the file's size and first bytes (hex and printable), the
 * format those bytes are the signature of when it is a known one (Parquet,
 * zip/.npz, netCDF classic, HDF4, gzip, tar, ...), and the backends that
 * were tried with what each one reads (ferry__backend.accepts).  For a
 * directory: what it holds, counted by file extension, so that a directory
 * of Arrow shards is not called "empty".  (Parquet files are read by the
 * parquet backend, which names what is wrong with a bad one; the PAR1
 * signature stays for a build whose probe declined one.)
 *
 * An N5 container (attributes.json and chunk directories, the format
 * zarr_implementations tests beside Zarr) is named as such: issue 30 found
 * it called a directory that holds nothing ferry reads.
 *
 * The probes stay simple yes/no functions; this runs only on the error
 * path, on rank 0 (the manifest is scanned there), and reads at most 512
 * bytes of the file.
 */
#include "config.h"
#include "backends/backend.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Formats recognised by their first bytes (or by tar's at 257). */
typedef struct {
  size_t off;
  const char *magic;
  size_t len;
  const char *what;
} sig;

static const sig signatures[] = {
    {0, "PAR1", 4, "a Parquet file"},
    {0, "PK\x03\x04", 4,
     "a zip archive (NumPy .npz, PyTorch .pt and .zip are zip archives)"},
    {0, "PK\x05\x06", 4, "an empty zip archive"},
    {0, "CDF\x01", 4, "a netCDF classic file (CDF-1)"},
    {0, "CDF\x02", 4, "a netCDF 64-bit offset file (CDF-2)"},
    {0, "CDF\x05", 4, "a netCDF 64-bit data file (CDF-5)"},
    {0, "\x89HDF\r\n\x1a\n", 8, "an HDF5 file (netCDF-4 files are HDF5 files)"},
    {0, "\x0e\x03\x13\x01", 4,
     "an HDF4 file (HDF4 is not HDF5: convert it with h4toh5)"},
    {0, "\x93NUMPY", 6, "a .npy file"},
    {0, "ARROW1", 6, "an Arrow IPC (Feather v2) file"},
    {0, "MMIDIDX\0\0", 9,
     "a Megatron-LM index (PREFIX.idx: its PREFIX.bin must be beside it)"},
    {0, "\x1f\x8b", 2, "a gzip-compressed file (decompress it first)"},
    {0, "\x28\xb5\x2f\xfd", 4, "a zstd-compressed file (decompress it first)"},
    {0, "BZh", 3, "a bzip2-compressed file (decompress it first)"},
    {0,
     "\xfd"
     "7zXZ",
     6, "an xz-compressed file (decompress it first)"},
    {257, "ustar", 5, "a tar archive (a WebDataset shard is one: extract it)"},
    {0, "\x89PNG", 4, "a PNG image"},
    {0, "\xff\xd8\xff", 3, "a JPEG image"},
    {0, "\x80\x02", 2, "a Python pickle"},
    {0, "\x80\x04", 2, "a Python pickle"},
    {0, "\x80\x05", 2, "a Python pickle"},
};

/* Append printf-style text to msg (cap bytes, always terminated). */
static void add(char *msg, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(char *msg, size_t cap, const char *fmt, ...) {
  size_t n = strlen(msg);
  if (n + 1 >= cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, cap - n, fmt, ap);
  va_end(ap);
}

static void add_tried(char *msg, size_t cap) {
  add(msg, cap, "; tried:");
  int first = 1;
  for (int k = 0; ferry__backends[k]; k++) {
    const ferry__backend *b = ferry__backends[k];
    if (!b->probe)
      continue;
    add(msg, cap, "%s %s (%s)", first ? "" : ",", b->name,
        b->accepts ? b->accepts : "its own files");
    first = 0;
  }
}

static const char *signature_of(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < sizeof signatures / sizeof signatures[0]; i++) {
    const sig *s = &signatures[i];
    if (s->off + s->len <= n && memcmp(p + s->off, s->magic, s->len) == 0)
      return s->what;
  }
  return NULL;
}

static int looks_textual(const unsigned char *p, size_t n) {
  if (n == 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isprint(p[i]) && !isspace(p[i]))
      return 0;
  return 1;
}

static void describe_file(const char *path, const struct stat *st, char *msg,
                          size_t cap) {
  unsigned char head[512];
  ssize_t got = -1;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    got = pread(fd, head, sizeof head, 0);
    close(fd);
  }
  if (got < 0) {
    add(msg, cap, ": it cannot be read (%s)", strerror(errno));
    return;
  }
  if (got == 0) {
    add(msg, cap, ": it is empty (0 bytes)");
    return;
  }
  size_t n = (size_t)got, show = n < 8 ? n : 8;
  add(msg, cap, ": %lld bytes, starting", (long long)st->st_size);
  for (size_t i = 0; i < show; i++)
    add(msg, cap, " %02x", head[i]);
  add(msg, cap, " (\"");
  for (size_t i = 0; i < show; i++)
    add(msg, cap, "%c", isprint(head[i]) ? head[i] : '.');
  add(msg, cap, "\")");
  const char *what = signature_of(head, n);
  if (what)
    add(msg, cap, "; it looks like %s, which no backend of this build reads",
        what);
  else if (head[0] == '{' && looks_textual(head, n))
    add(msg, cap,
        "; it looks like JSON text (a Zarr store is read through "
        "its directory, not its metadata file)");
  else if (looks_textual(head, n))
    add(msg, cap,
        "; it looks like text (a list of parts is given as "
        "@FILE)");
}

/* Count a directory's entries by extension, the three most common shown. */
static void describe_dir(const char *path, char *msg, size_t cap) {
  enum { K = 16 };
  char ext[K][24];
  long cnt[K] = {0};
  int next = 0;
  long files = 0, dirs = 0;
  DIR *d = opendir(path);
  if (!d) {
    add(msg, cap, ": it cannot be listed (%s)", strerror(errno));
    return;
  }
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' &&
        (e->d_name[1] == 0 || (e->d_name[1] == '.' && e->d_name[2] == 0)))
      continue;
    if (e->d_type == DT_DIR) {
      dirs++;
      continue;
    }
    files++;
    const char *dot = strrchr(e->d_name, '.');
    const char *x = dot && dot != e->d_name ? dot : "without extension";
    int k = 0;
    while (k < next && strcmp(ext[k], x) != 0)
      k++;
    if (k == next && next < K)
      snprintf(ext[next++], sizeof ext[0], "%.23s", x);
    if (k < next)
      cnt[k]++;
  }
  closedir(d);
  if (files == 0 && dirs == 0) {
    add(msg, cap, " is empty");
    return;
  }
  add(msg, cap, " holds nothing ferry reads: %ld file%s", files,
      files == 1 ? "" : "s");
  int shown = 0;
  for (; shown < 3; shown++) {
    int best = -1;
    for (int k = 0; k < next; k++)
      if (cnt[k] > 0 && (best < 0 || cnt[k] > cnt[best]))
        best = k;
    if (best < 0)
      break;
    add(msg, cap, "%s%ld %s", shown ? ", " : " (", cnt[best], ext[best]);
    cnt[best] = -cnt[best];
  }
  if (shown)
    add(msg, cap, ")");
  if (dirs)
    add(msg, cap, " and %ld subdirector%s", dirs, dirs == 1 ? "y" : "ies");
}

/* What an N5 attributes.json (file) says: 1 the root of a container (an
 * "n5" version), 2 a dataset (dimensions, blockSize and dataType), 0
 * neither or unreadable.  A file above 1 MiB is not looked into. */
#define N5_ATTRS_MAX ((off_t)1 << 20)
static int n5_kind(const char *file) {
  struct stat st;
  if (stat(file, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > N5_ATTRS_MAX)
    return 0;
  json_t *j = json_load_file(file, 0, NULL);
  int kind = 0;
  if (json_is_object(j)) {
    if (json_object_get(j, "n5"))
      kind = 1;
    else if (json_is_array(json_object_get(j, "dimensions")) &&
             json_is_array(json_object_get(j, "blockSize")) &&
             json_is_string(json_object_get(j, "dataType")))
      kind = 2;
  }
  json_decref(j);
  return kind;
}

/* FERRY_ENOTSUP naming an N5 container or dataset at path (a directory,
 * or its attributes.json); 0 when it is not one. */
static int refuse_n5(const char *path, int is_dir, ferry__err *err) {
  char file[4096];
  if (is_dir)
    snprintf(file, sizeof file, "%s/attributes.json", path);
  else if (strcmp(strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
                  "attributes.json") == 0)
    snprintf(file, sizeof file, "%s", path);
  else
    return 0;
  int kind = n5_kind(file);
  if (!kind)
    return 0;
  return ferry__seterr(err, FERRY_ENOTSUP,
                       "%s is an N5 %s (%s in attributes.json): N5 is not a "
                       "format ferry reads; convert it to Zarr (e.g. "
                       "zarr.copy_all(zarr.N5Store(PATH), zarr.open(OUT, "
                       "'w')) with zarr-python 2) or to HDF5",
                       path, kind == 1 ? "container" : "dataset",
                       kind == 1 ? "an \"n5\" version"
                                 : "dimensions, blockSize and dataType");
}

int ferry__sniff_unread(const char *path, ferry__err *err) {
  char msg[1024];
  struct stat st;
  msg[0] = 0;
  if (stat(path, &st) != 0)
    return ferry__seterr(err, ferry__errno_code(errno), "part %s: %s", path,
                         strerror(errno));
  int rc = refuse_n5(path, S_ISDIR(st.st_mode), err);
  if (rc < 0)
    return rc;
  if (S_ISDIR(st.st_mode)) {
    snprintf(msg, sizeof msg, "directory %s", path);
    describe_dir(path, msg, sizeof msg);
    add(msg, sizeof msg,
        " (a dataset is a directory of .npy files, one per "
        "variable, a Zarr store, a file, a glob or an "
        "@list)");
    add_tried(msg, sizeof msg);
    return ferry__seterr(
        err, strstr(msg, " is empty") ? FERRY_EEMPTY : FERRY_EFORMAT, "%s",
        msg);
  }
  snprintf(msg, sizeof msg, "no backend reads %s", path);
  if (S_ISREG(st.st_mode))
    describe_file(path, &st, msg, sizeof msg);
  else
    add(msg, sizeof msg, ": not a regular file");
  add_tried(msg, sizeof msg);
  return ferry__seterr(err, FERRY_EFORMAT, "%s", msg);
}
