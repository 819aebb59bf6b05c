/*
 * dataset/dataset.h - the dataset layer: from the dataset string of
 * ferry_open to the manifest every rank holds (core/manifest.h).  Rank 0
 * scans (scan.c, a mix in mix.c) or loads a saved manifest (json.c),
 * checks what ferry can serve (limits.c), and every rank receives it
 * (share.c).  It sits above the backends, whose describe() it calls, and
 * below the plan and the loader; what the reads need of the manifest
 * lives below the backends, in core/manifest.h.
 */
#ifndef FERRY_DATASET_H
#define FERRY_DATASET_H

#include "core/manifest.h"

/**
 * Rank 0 only: resolve spec (directory, .npy file, glob, @list; a mix
 * string, ferry__mix_is, goes to ferry__mix_scan in dataset/mix.c) into parts,
 * describe every part with its backend, check that they agree, select the
 * variables named in vars (NULL/"": all) and fill m.  opts (NULL: defaults)
 * is handed to every describe, for the backends' own options.  Returns 0 or a
 * negative code with err set.
 */
int ferry__manifest_scan(const char *spec, const char *vars,
                         const ferry_options *opts, ferry__manifest *m,
                         ferry__err *err);
/**
 * COLLECTIVE over comm (loader/open.c, with scan=ranks): the scan of
 * ferry__manifest_scan with the parts described by every rank (pscan.c):
 * rank 0 resolves spec into parts and broadcasts them, each rank describes
 * a contiguous share, and rank 0 gathers the results, checks that they
 * agree and finishes the manifest.  m and the return code mean something on
 * rank 0 only (the others return 0 with m empty; ferry__manifest_share then
 * broadcasts rank 0's outcome).  A failure anywhere is scanned again by
 * rank 0 alone, so the error is the serial scan's, word for word; a mix, a
 * scheme, a URL or a single part is scanned by rank 0 alone.
 */
int ferry__manifest_scan_ranks(MPI_Comm comm, const char *spec,
                               const char *vars, const ferry_options *opts,
                               ferry__manifest *m, ferry__err *err);
/* The steps of ferry__manifest_scan (scan.c) that pscan.c shares out. */
/** Rank 0: spec's parts (*paths[*n], malloc'd strings in a malloc'd
 *  array), the note on a directory of parts, whether they are shards. */
int ferry__scan_resolve(const char *spec, char ***paths, size_t *n, char **note,
                        int *shards, ferry__err *err);
/** Describe paths[0..n) into m (the first part's variables; every part
 *  must agree with them); *disagree set when one does not. */
int ferry__scan_describe(const char *spec, char *const *paths, size_t n,
                         const ferry_options *opts, ferry__manifest *m,
                         int *disagree, ferry__err *err);
/** FERRY_EFORMAT/ESHAPE when sub (parts described elsewhere) is read by
 *  another backend or holds other variables than m, else 0. */
int ferry__scan_agree(const ferry__manifest *m, const ferry__manifest *sub,
                      ferry__err *err);
/** The scan's last steps on a described m: the note, the empty check, the
 *  vars selection, the names and servable checks, the hash. */
int ferry__scan_finish(const char *spec, const char *vars, const char *note,
                       ferry__manifest *m, ferry__err *err);
/**
 * Keep only m's variables named in vars (comma-separated; NULL or "": all),
 * in the order vars names them; FERRY_EINVAL naming the dataset and the
 * variables it holds when one is not there.  The scan's last step, and the
 * JSON load's (dataset/scan.c).
 */
int ferry__manifest_select_vars(ferry__manifest *m, const char *vars,
                                ferry__err *err);
/**
 * Rank 0, after the variables are selected (dataset/limits.c): FERRY_ENOTSUP
 * naming spec (the dataset or saved manifest) when a selected variable has
 * empty rows, or when the dataset holds more than FERRY__MAX_SAMPLES
 * samples or FERRY__MAX_DATASET_BYTES bytes (the count and the limit in
 * the message); else 0.
 */
int ferry__manifest_check_servable(const ferry__manifest *m, const char *spec,
                                   ferry__err *err);
/**
 * FERRY_EFORMAT when two of m's variables share a name or one has an empty
 * name (what ferry__manifest_unpack refuses), naming the dataset, the part
 * and both variables; else 0.  ferry__manifest_scan calls it after the
 * vars selection, so selecting the other variables serves them.
 * (dataset/share.c)
 */
int ferry__manifest_check_names(const ferry__manifest *m, ferry__err *err);
/**
 * COLLECTIVE.  Every rank unpacks buf (len bytes, rank 0's packed m) --
 * rank 0 into a scratch copy, checked against m's hash, the others into m
 * -- and the ranks agree: 0 everywhere, or the lowest failing rank's error
 * on every rank (m then freed on the ranks that unpacked into it).
 */
int ferry__manifest_unpack_agree(MPI_Comm comm, int rank, const void *buf,
                                 size_t len, ferry__manifest *m,
                                 ferry__err *err);
/**
 * COLLECTIVE.  Rank 0 passes rc, its result of building m (0, or a negative
 * code with err set); it packs m and broadcasts it with rc, and every rank
 * (rank 0 too) unpacks it and agrees (ferry__manifest_unpack_agree): the
 * manifest every rank holds is one every rank accepts, with one outcome
 * on one rank and on many.  The other ranks' m must be empty (zeroed).
 */
int ferry__manifest_share(MPI_Comm comm, int rank, int rc, ferry__manifest *m,
                          const char *dataset, ferry__err *err);
/** JSON save/load (jansson); load re-applies the vars selection. */
int ferry__manifest_save_json(const ferry__manifest *m, const char *path,
                              ferry__err *err);
int ferry__manifest_load_json(const char *path, const char *vars,
                              ferry__manifest *m, ferry__err *err);
/** The same from the len bytes of a saved manifest held in memory (path
 *  names it in errors); the fuzz harness's entry point. */
int ferry__manifest_load_json_text(const char *text, size_t len,
                                   const char *path, const char *vars,
                                   ferry__manifest *m, ferry__err *err);

#endif /* FERRY_DATASET_H */
