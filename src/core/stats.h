/*
 * stats.h - the counters and histograms of a lock object (acquisitions,
 * timeouts, wait and hold times, holds lost, lease expiries), counted on the
 * object's own acquire and release paths with relaxed atomic adds: no lock
 * and no ZooKeeper request. metrics.c writes them out.
 */
#ifndef ZKL_CORE_STATS_H
#define ZKL_CORE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/hold.h"
#include "session/client.h"

#define ZKL__BUCKETS 12 /* bounds in stats.c's bucket_us, then +Inf */

typedef struct zkl__hist {
    _Atomic uint64_t n[ZKL__BUCKETS + 1]; /* per bucket (not cumulative) */
    _Atomic uint64_t sum_us;
} zkl__hist;

typedef struct zkl__lockstats {
    _Atomic uint64_t acquisitions, timeouts, lost, lease_expiries;
    zkl__hist wait, hold;
} zkl__lockstats;

/* The bucket bounds as OpenMetrics "le" texts (seconds), canonical: "1.0", not "1". */
extern const char *const zkl__bucket_le[ZKL__BUCKETS];

/* Each stats may be NULL (nothing counted). */
/* An acquire that succeeded after waiting wait_us. */
void zkl__stats_acquired(zkl__lockstats *s, int64_t wait_us);
/* An acquire that ended with st (ZKL_ETIMEDOUT counts; others not). */
void zkl__stats_failed(zkl__lockstats *s, zkl_status st);
/*
 * The last release of hold h ended with st: its hold time, and if the hold
 * was lost (ZKL_ELOST) a loss, a lease expiry too if its session's lease
 * ran out.
 */
void zkl__stats_released(zkl__lockstats *s, zkl_client *c, const zkl__hold *h, zkl_status st);

#endif
