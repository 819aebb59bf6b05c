/*
 * plan/pack.h - packed rows of a token corpus (issue 26), the pure part:
 * which spans of which documents make each row, and the document-boundary
 * outputs of a row, from the documents' lengths only.  No MPI, no I/O.
 *
 * The epoch's token stream is the corpus's chunks (runs of consecutive
 * documents of a part: the loader's chunks) in a seeded order, each
 * chunk's documents in their stored order, concatenated.  Row r is the
 * stream's tokens [r L, r L + L + overlap): L tokens, and with overlap=1
 * the next row's first token too (the shifted labels of Megatron-LM's
 * GPTDataset).  A chunk's documents lie in one part, one after the other:
 * a row's tokens inside one chunk are one contiguous run of the part's
 * values, so a row is a few spans, each one read.
 */
#ifndef FERRY_PLAN_PACK_H
#define FERRY_PLAN_PACK_H

#include "util/util.h"

#include <stdint.h>

enum { FERRY__STREAM_PACK = 13 /* (seed, epoch): the chunks' order */ };

typedef struct ferry__pack {
  int64_t L;       /* tokens of a row, the overlap aside          */
  int overlap;     /* 0, or 1: a row also holds the next's first  */
  int64_t nchunks; /* chunks of the corpus                        */
  int64_t *order;  /* [nchunks] chunk ids in stream order          */
  int64_t *start;  /* [nchunks + 1] stream position of ordered chunk k */
  int64_t tokens;  /* T: the stream's tokens                       */
  int64_t full;    /* rows all of whose L + overlap tokens exist   */
  int64_t rows;    /* rows of the epoch: full, or with tail pad or
                    * partial one more when tokens are left (its
                    * missing tokens are padding)                  */
} ferry__pack;

/**
 * The stream of chunk_tokens[c] tokens per chunk c (nchunks of them), in
 * the order of key (ferry__shuffle; key 0: stored order), cut into rows of
 * L tokens (L >= 1) and `overlap` (0 or 1) more.  tail: FERRY__TAIL_DROP
 * keeps the full rows only, the others a last row padded when tokens are
 * left.  Returns 0, FERRY_EINVAL (a length out of range: its message names
 * the chunk), FERRY_ENOMEM.
 */
int ferry__pack_make(ferry__pack *pk, const int64_t *chunk_tokens,
                     int64_t nchunks, int64_t L, int overlap, int tail,
                     uint64_t key, ferry__err *err);
void ferry__pack_free(ferry__pack *pk);

/** Tokens [first, first + count) of chunk `chunk`'s values at position
 *  `at` of the row. */
typedef struct ferry__pack_span {
  int64_t chunk, first, count, at;
} ferry__pack_span;

/**
 * Row r's tokens (0 <= r < rows) as spans, in row order, into out (room
 * for max): chunks without tokens give none.  Returns how many spans the
 * row has (more than max: only max written; L + overlap is always enough),
 * or -1 when r is out of range.  O(log nchunks + spans).
 */
int64_t ferry__pack_spans(const ferry__pack *pk, int64_t r,
                          ferry__pack_span *out, int64_t max);

/** A chunk's documents: o[0..*ndocs] the offsets of their bounds, in any
 *  origin: document d of the chunk is its tokens [o[d] - o[0],
 *  o[d + 1] - o[0]) (never decreasing). */
typedef const int64_t *(*ferry__pack_docs_fn)(void *ctx, int64_t chunk,
                                              int64_t *ndocs);

/**
 * The document-boundary outputs of row r, its spans sp[0..nsp) from
 * ferry__pack_spans.  ws and wp (room for L + overlap each) receive, for
 * each of the row's L + overlap positions, the piece of a document the
 * token belongs to (1, 2, ... in the row; 0: padding) and its index in
 * its document (a document begun in an earlier row goes on counting; 0
 * for padding).  Then, each skipped when NULL, over the row's first L
 * positions (the inputs):
 *   seg[i] = ws[i], pos[i] = wp[i];
 *   mask[i] = 1 when position i predicts a token: i + 1 is a token of the
 *     row (its L + overlap positions), i is not padding and, with
 *     mask_first, token i + 1 is in i's piece (not a prediction across
 *     documents: in a cut stream, a new piece inside a row is a
 *     document's first token); else 0;
 *   cu[0..L]: 0, the end of each piece in the row, then L (the padding's
 *     end when the row has padding), repeated to fill L + 1 entries: the
 *     row's part of a varlen attention's cu_seqlens, padding as one piece.
 * Returns 0, or FERRY_EINVAL when a chunk's offsets disagree with its
 * tokens.  O(L + overlap) plus a search in each span's chunk.
 */
int ferry__pack_bounds(const ferry__pack *pk, const ferry__pack_span *sp,
                       int64_t nsp, ferry__pack_docs_fn docs, void *ctx,
                       int mask_first, int32_t *ws, int32_t *wp, int32_t *seg,
                       int32_t *pos, uint8_t *mask, int32_t *cu);

/**
 * pack=first_fit: items of len[0..n) tokens (each 1 <= len <= L) put, in
 * order, into the first row (bin of L tokens) with room, a new row when
 * none has: bin_of[i] receives item i's row (0, 1, ... in the order rows
 * are opened; the leftmost row with room is the first opened, so rows
 * open in order).  tree is scratch of 2 m words, m the power of two at or
 * above n (a segment tree of the rows' room: each item placed in
 * O(log n)).  Returns the rows.
 */
int64_t ferry__pack_fit(const int64_t *len, int64_t n, int64_t L,
                        int64_t *bin_of, int64_t *tree);

/**
 * pack=best_fit: the same, each item into the row with the least room
 * that holds it (among rows of equal room, the last to reach that room),
 * a new row when none does.  scratch: 2 (L + 2) + 2 n words (a Fenwick
 * tree of the rows' rooms and a list of rows per room: O(log L) an
 * item).  Returns the rows.
 */
int64_t ferry__pack_best_fit(const int64_t *len, int64_t n, int64_t L,
                             int64_t *bin_of, int64_t *scratch);

/** The documents the rows cut: those whose tokens lie in two rows' inputs
 *  or more (a walk over every chunk's documents in stream order). */
int64_t ferry__pack_split(const ferry__pack *pk, ferry__pack_docs_fn docs,
                          void *ctx);

#endif /* FERRY_PLAN_PACK_H */
