/*
 * series.h - what the metrics count into: one series per client, lock path
 * and side (core/objects/metrics.c writes them with those labels). Every lock object
 * of the same path and side on a client counts into the same series, so a
 * program that makes an object per request adds to one series, not one per
 * object; and a series outlives its objects, so its counters only grow.
 *
 * A series no live object counts into is kept, up to ZKL_SERIES_KEPT per
 * client; past that the one left longest goes (its counters start again,
 * with a new _created, if its path is used again). So a client's series are
 * at most its live objects' plus ZKL_SERIES_KEPT.
 *
 * Threading: the client's list is under c->mu; the counters are atomics
 * (stats.h), added to without a lock.
 */
#ifndef ZKL_CORE_SERIES_H
#define ZKL_CORE_SERIES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/objects/stats.h"
#include "session/client.h"
#include "base/tuning.h"

typedef struct zkl__series {
    char *path;
    const char *side; /* static: "mutex", "read", "write", "semaphore" */
    unsigned traits;  /* ZKL__PART_*: which families beyond the common ones it has */
    zkl__lockstats stats;
    double created;      /* Unix seconds: the series' _created */
    int refs;            /* live lock objects counting into it */
    uint64_t idle_since; /* c->tally.series_clock when refs fell to 0 (the eviction order) */
    struct zkl__series *prev, *next; /* c->tally.series (utlist), under c->mu */
} zkl__series;

/* The series of (path, side) on c, with one more reference: found or made
 * (NULL: out of memory). Takes c->mu. */
zkl__series *zkl__series_get(zkl_client *c, const char *path, const char *side, unsigned traits);
/* One reference less; a series past the kept bound goes. Takes c->mu. */
void zkl__series_put(zkl_client *c, zkl__series *s);
/* Free every series of c (its close; hooks.series_free). */
void zkl__series_free_all(zkl_client *c);

#endif
