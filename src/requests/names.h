/*
 * names.h - what every kind of request shares: a listing's names, and how
 * many deletes one multi transaction may carry.
 */
#ifndef ZKL_REQUESTS_NAMES_H
#define ZKL_REQUESTS_NAMES_H

#include <stddef.h>

/* A listing: v and its names are one allocation (free v alone), read-only. */
typedef struct zkl__names {
    char **v;
    size_t n;
} zkl__names;

void zkl__names_free(zkl__names *k);

#define ZKL_MULTI_MAX 8 /* deletes one multi may carry */

#endif
