/*
 * loader/cache.h - the node cache (cache=node|cluster, loader/cache.c,
 * docs/cache.md): the chunks a job reads kept in shared memory on its
 * nodes, served from there in later epochs.
 */
#ifndef FERRY_LOADER_CACHE_H
#define FERRY_LOADER_CACHE_H

#include "backends/backend.h"
#include "ferry.h"
#include "util/util.h"

typedef struct ferry__cache ferry__cache;
struct ferry_loader;

/** Before the I/O mode is resolved (every rank, the same options): the
 *  combinations the cache refuses (io=mmap or collective).
 *  0 or FERRY_EINVAL / FERRY_ENOTSUP with err set.  LOCAL. */
int ferry__cache_check(const struct ferry_loader *L, ferry__err *err);
/** COLLECTIVE, at the end of ferry_open (after the chunk index): the node
 *  communicator, the capacity every node can give, the placement of the
 *  chunks, the region of each node and, with cache=cluster, the server
 *  threads; then L->be is the cache, wrapping the loader's backend.  The
 *  same outcome on every rank; nothing is left behind on failure.  No-op
 *  with cache=none. */
int ferry__cache_open(struct ferry_loader *L, ferry__err *err);
/** COLLECTIVE with cache=cluster (the servers stop once every rank's reads
 *  are over; a rank gone past collective_timeout leaves it allocated).
 *  NULL: nothing. */
void ferry__cache_close(ferry__cache *c);
/** The cache's counters into s (bytes_read becomes the bytes read from
 *  storage).  Any thread. */
void ferry__cache_stats(const ferry__cache *c, ferry_stats *s);
/** What the cache holds and expects per epoch (zeros when c is NULL). */
int ferry__cache_info(const ferry__cache *c, ferry_cache_info *out);

extern const ferry__backend ferry__cache_backend;

#endif
