/*
 * fail.c - the edge where an error leaves the library: every public call
 * of a loader (open.c, epoch.c, next.c, checkpoint.c, inspect.c) ends a
 * failure here, and ferry_last_error reads it back.  Their own file
 * because they were in open.c and inspect.c, which made the loader's
 * files call each other in circles (open.c and epoch.c; epoch.c,
 * sampling.c, weights.c and inspect.c) (issue 24).
 */
#include "config.h"
#include "loader/loader.h"

/* The loader's message (and the thread's) is formatted here, rank
 * included. */
int ferry__loader_fail(ferry_loader *L, const ferry__err *err) {
  ferry__err_text(err, L->errmsg, sizeof L->errmsg);
  ferry__set_thread_error(L->errmsg);
  return err->code;
}

const char *ferry_last_error(const ferry_loader *L) {
  return L ? L->errmsg : ferry__thread_error();
}
