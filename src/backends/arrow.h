/*
 * arrow.h - the Arrow IPC backend's own declarations (arrow.c reads the
 * messages and record batches, arrow_schema.c the Schema's fields).
 */
#ifndef FERRY_BACKENDS_ARROW_H
#define FERRY_BACKENDS_ARROW_H

#include "backends/toolkit.h"
#include "util/flatbuf.h"

/* Arrow's Type union (Schema.fbs) and MessageHeader (Message.fbs). */
enum {
  T_INT = 2,
  T_FLOAT = 3,
  T_BINARY = 4,
  T_UTF8 = 5,
  T_BOOL = 6,
  T_DECIMAL = 7,
  T_DATE = 8,
  T_TIME = 9,
  T_TIMESTAMP = 10,
  T_INTERVAL = 11,
  T_LIST = 12,
  T_STRUCT = 13,
  T_FIXED_BINARY = 15,
  T_FIXED_LIST = 16,
  T_MAP = 17,
  T_DURATION = 18,
  T_LARGE_BINARY = 19,
  T_LARGE_UTF8 = 20,
  T_LARGE_LIST = 21,
  H_SCHEMA = 1,
  H_DICTIONARY = 2,
  H_RECORD_BATCH = 3
};

#define ARROW_MAX_META ((int64_t)64 << 20) /* one message's metadata */
#define ARROW_MAX_FIELDS 4096              /* columns, nested ones too */
#define ARROW_REC_VERSION 1

/* ---- The schema: one entry per field, depth first ---------------------- */

/* What a variable of a column is (kind), and how to find its values among
 * the field's buffers. */
enum { K_SKIP = 0, K_DENSE, K_RAGGED };

typedef struct afield {
  char *name;    /* top-level fields only            */
  int type, top; /* Type union id; 1: a top-level one */
  int nbuf;      /* buffers of this field alone       */
  int nchild;    /* direct children (depth first)     */
  int kind;      /* K_* (top-level fields)            */
  int off64;     /* ragged: 64-bit offsets            */
  ferry_dtype dtype;
  int64_t k;       /* FixedSizeList: listSize           */
  const char *why; /* K_SKIP: why, for the note        */
} afield;

typedef struct aschema {
  afield f[ARROW_MAX_FIELDS];
  int n;
} aschema;

/* The ferry dtype of an Int or FloatingPoint type table; -1: other. */
/** A Schema table into s (its fields depth first, each top-level one
 *  classified); -1 with *why on a table out of bounds or a big-endian
 *  file.  Free with ferry__arrow_schema_free. */
int ferry__arrow_parse_schema(const ferry__fb *b, int64_t schema, aschema *s,
                              const char **why);
void ferry__arrow_schema_free(aschema *s);

#endif /* FERRY_BACKENDS_ARROW_H */
