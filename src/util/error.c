/*
 * error.c - the small, stateless services every other file leans on: error
 * codes and their messages, the per-thread "last error" used by calls that
 * have no loader yet, dtype sizes and names.  (Version queries and the
 * build report are in loader/version.c.)
 */
#include "config.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Why thread-local: ferry_open and ferry_options_set fail before any loader
 * exists, and two threads may open loaders at the same time. */
static _Thread_local char thread_error[FERRY__MSG_MAX];

void ferry__set_thread_error(const char *msg) {
  snprintf(thread_error, sizeof thread_error, "%s", msg ? msg : "");
}

static int set_va(ferry__err *err, int has_rank, int rank, int code,
                  const char *fmt, va_list ap) {
  char buf[FERRY__MSG_MAX];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (err) {
    err->code = code;
    err->has_rank = has_rank;
    err->rank = rank;
    memcpy(err->msg, buf, sizeof buf);
    ferry__err_text(err, thread_error, sizeof thread_error);
  } else if (has_rank)
    snprintf(thread_error, sizeof thread_error, "rank %d: %.1000s", rank, buf);
  else
    ferry__set_thread_error(buf);
  return code;
}

int ferry__seterr(ferry__err *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_va(err, 0, 0, code, fmt, ap);
  va_end(ap);
  return code;
}

int ferry__seterr_on(ferry__err *err, int rank, int code, const char *fmt,
                     ...) {
  va_list ap;
  va_start(ap, fmt);
  set_va(err, 1, rank, code, fmt, ap);
  va_end(ap);
  return code;
}

int ferry__oom(ferry__err *err, int rank, size_t bytes, const char *fmt, ...) {
  char what[FERRY__MSG_MAX - 64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (rank < 0)
    return ferry__seterr(err, FERRY_ENOMEM, "out of memory: %zu bytes for %s",
                         bytes, what);
  return ferry__seterr_on(err, rank, FERRY_ENOMEM,
                          "out of memory: %zu bytes for %s", bytes, what);
}

void ferry__err_text(const ferry__err *err, char *out, size_t len) {
  if (err->has_rank)
    snprintf(out, len, "rank %d: %.1000s", err->rank, err->msg);
  else
    snprintf(out, len, "%s", err->msg);
}

const char *ferry_strerror(int code) {
  switch (code) {
  case FERRY_OK: return "success";
  case FERRY_END: return "end of epoch";
  case FERRY_EINVAL: return "invalid argument or option";
  case FERRY_ENOMEM: return "out of memory";
  case FERRY_EIO: return "I/O error";
  case FERRY_ENOENT: return "no such file or directory";
  case FERRY_EFORMAT: return "invalid file format";
  case FERRY_ENOTSUP: return "not supported";
  case FERRY_EMISMATCH: return "ranks disagree";
  case FERRY_EMPI: return "MPI error";
  case FERRY_ESTATE: return "call out of order";
  case FERRY_ESHAPE: return "variables of different lengths or shapes";
  case FERRY_EEMPTY: return "no samples";
  case FERRY_ECALLBACK: return "transform callback failed";
  case FERRY_EACCES: return "permission denied";
  case FERRY_ENODEV: return "no usable device";
  case FERRY_EINTERNAL: return "internal error";
  case FERRY_EPEER: return "another rank left or stopped answering";
  default: return "unknown error code";
  }
}

const char *ferry__thread_error(void) { return thread_error; }

int ferry__errno_code(int e) {
  if (e == ENOENT || e == ENOTDIR)
    return FERRY_ENOENT;
  if (e == EACCES || e == EPERM)
    return FERRY_EACCES;
  if (e == ENOMEM)
    return FERRY_ENOMEM;
  return FERRY_EIO;
}
