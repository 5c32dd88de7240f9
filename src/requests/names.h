/*
 * names.h - what every kind of request shares: a listing's names, and how
 * many deletes one multi transaction may carry.
 */
#ifndef ZKL_REQUESTS_NAMES_H
#define ZKL_REQUESTS_NAMES_H

#include <stddef.h>

#include "base/tuning.h"

/*
 * A listing: v and its names are one reference-counted block, shared by the
 * waiters a listing answered (requests/pending.c). Read-only, except that the
 * holder of the only reference (a listing of a blocking call) may reorder v.
 */
typedef struct zkl__names {
    char **v;
    size_t n;
} zkl__names;

/* Let go of k's reference (k is empty after). */
void zkl__names_free(zkl__names *k);
/* *to: another reference to from's block. */
void zkl__names_share(const zkl__names *from, zkl__names *to);

#endif
