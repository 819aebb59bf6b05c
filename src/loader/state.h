/*
 * loader/state.h - the checkpoint state (encode, decode, files) and the
 * checkpoint signal (loader/state.c).
 */
#ifndef FERRY_STATE_H
#define FERRY_STATE_H

#include "plan/draw.h"
#include "plan/plan.h"

#define FERRY__STATE_VERSION 1

/** A decoded state file. */
typedef struct ferry__state {
  int version;
  char *dataset;         /* dataset string (for messages)          */
  uint64_t dataset_hash; /* ferry__manifest_hash                   */
  int64_t num_samples;
  int nopts;
  char **opt_name, **opt_value; /* the plan-shaping options, canonical   */
  int64_t epoch;
  int world_size;         /* ranks that saved it                    */
  int64_t batches;        /* batches every rank served this epoch   */
  int64_t samples_served; /* real samples served this epoch, all ranks */
  int nsteps;
  ferry__resume_step *steps;
  char *library;
  /* A mix (0 otherwise): the hash of its sources (paths and sizes, not
   * proportions), and the changes of its proportions at resumes in this
   * epoch (mix_resume=new_mix), by position */
  uint64_t mix_sources;
  int nmix_changes;
  ferry__draw_change *mix_changes;
} ferry__state;

/** Free the arrays of n changes (and the array). */
void ferry__mix_changes_free(ferry__draw_change *c, int n);

/** NULL-terminated names of the options a resume must not change. */
const char *const *ferry__state_plan_options(void);
uint64_t ferry__state_options_hash(const ferry__state *s);
/** Header line + JSON body (malloc'd). */
int ferry__state_encode(const ferry__state *s, char **out, size_t *len,
                        ferry__err *err);
/** Check magic, version, length and checksum, then parse.  Errors name path:
 *  FERRY_EFORMAT (not a state file, truncated, corrupt), FERRY_ENOTSUP
 *  (newer version), FERRY_ENOMEM. */
int ferry__state_decode(const char *buf, size_t len, const char *path,
                        ferry__state *s, ferry__err *err);
void ferry__state_free(ferry__state *s);
/** Whole file (at most 1 MiB).  FERRY_ENOENT, FERRY_EACCES, FERRY_EIO... */
int ferry__state_read_file(const char *path, char **out, size_t *len,
                           ferry__err *err);
/** PATH.tmp.PID, fsync, rename to PATH, fsync the directory. */
int ferry__state_write_file(const char *path, const char *buf, size_t len,
                            ferry__err *err);
/** Install (reference-counted) the handler that sets the checkpoint flag;
 *  release restores the previous disposition with the last reference. */
int ferry__signal_install(int sig, ferry__err *err);
void ferry__signal_release(int sig);
/** 1 once the checkpoint signal arrived in this process. */
int ferry__signal_pending(void);
/** 1 while ferry's handler is still the one installed for sig (a framework
 *  may have replaced it after ferry_open). */
int ferry__signal_ours(int sig);
/** Forget a request (after a successful save, on every rank). */
void ferry__signal_clear(void);

#endif /* FERRY_STATE_H */
