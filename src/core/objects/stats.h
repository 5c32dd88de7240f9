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

#include "core/engine/hold.h"
#include "session/client.h"

#define ZKL__BUCKETS 12 /* bounds in stats.c's bucket_us, then +Inf */

typedef struct zkl__hist {
    _Atomic uint64_t n[ZKL__BUCKETS + 1]; /* per bucket (not cumulative) */
    _Atomic uint64_t sum_us;
} zkl__hist;

/* What a part's side has beyond the common families (zkl__lockobj_add_part). */
enum {
    ZKL__PART_HANDOFFS = 1u << 0, /* it can pass a hold on locally: the local hand-offs */
    ZKL__PART_ELECTS = 1u << 1, /* an election's side (a latch, a selector): the leader families */
};

#define ZKL__LEADER_EVENTS 4 /* zkl_leader_event's values, 1 to 4 */

/*
 * An election side's counts (ZKL__PART_ELECTS). The terms of a series do
 * not overlap (one election, one leader at a time; a term's end is counted
 * before its node goes), so one running term is enough.
 */
typedef struct zkl__electstats {
    _Atomic uint64_t events[ZKL__LEADER_EVENTS]; /* by zkl_leader_event - 1 */
    _Atomic uint64_t lead_us;                    /* the ended terms' time */
    _Atomic uint64_t vacant_us; /* per term: from the wake-up of its last round to its grant */
    _Atomic int64_t since_us;   /* the running term's start (zkl__now_us), 0: none */
    _Atomic int64_t token;      /* the running term's token, 0: none */
} zkl__electstats;

typedef struct zkl__lockstats {
    _Atomic uint64_t acquisitions, timeouts, lost, lease_expiries;
    _Atomic uint64_t handoffs; /* holds passed to another thread of the process */
    zkl__hist wait, hold;
    zkl__electstats elect; /* (ZKL__PART_ELECTS only) */
} zkl__lockstats;

/* The bucket bounds as OpenMetrics "le" texts (seconds), canonical: "1.0", not "1". */
extern const char *const zkl__bucket_le[ZKL__BUCKETS];

/* Each stats may be NULL (nothing counted). */
/*
 * An acquire that succeeded after waiting wait_us. h: the new hold it gave
 * (NULL for a re-entry), which gets a tally (h->mark) in c's list, so that
 * its loss is counted when it is told (zkl__stats_lost_locked), not when
 * the program gets round to releasing it. Without memory for the tally the
 * hold is counted at its release, as it ends.
 */
void zkl__stats_acquired(zkl__lockstats *s, zkl_client *c, zkl__hold *h, const void *owner,
                         int64_t wait_us);
/* Only the tally of new hold h (the acquire is counted apart), and its undoing, uncounted.
 * owner: where the hold is kept (a side, a semaphore: inside its lock object). */
void zkl__stats_mark(zkl__lockstats *s, zkl_client *c, zkl__hold *h, const void *owner);
void zkl__stats_unmark(zkl_client *c, zkl__hold *h);
/* A hold passed on locally, to another thread of the process. */
void zkl__stats_passed(zkl__lockstats *s);
/* An acquire that ended with st (ZKL_ETIMEDOUT counts; others not). */
void zkl__stats_failed(zkl__lockstats *s, zkl_status st);
/*
 * The last release of hold h ended with st: its hold time, and if the hold
 * was lost (ZKL_ELOST) a loss, a lease expiry too if its session's lease
 * ran out; nothing more if its loss was counted when told. Frees h's tally.
 */
void zkl__stats_released(zkl__lockstats *s, zkl_client *c, zkl__hold *h, zkl_status st);
/*
 * Session epoch of c is lost (its lease ran out, if lease_expired): every
 * hold of that session ends now, in the counts and the hold times, once.
 * The hook client.h's holds_lost_locked; c->mu held.
 */
void zkl__stats_lost_locked(zkl_client *c, uint64_t epoch, bool lease_expired);
/* A term of leadership began with the grant of hold h, and its token (s: an election side's). */
void zkl__stats_term_began(zkl__lockstats *s, const zkl__hold *h, int64_t token);
/* The running term ended with ev (a zkl_leader_event: LOST, LEASE_ENDED or LEFT). */
void zkl__stats_term_ended(zkl__lockstats *s, int ev);
/* The lock object at [obj, obj + size) is going: the tallies of holds kept in it are dropped
 * (holds never released: lost, or a fork's). Several objects count into one series' stats. */
void zkl__stats_forget(zkl_client *c, const void *obj, size_t size);
/* Free every tally left on c (its close). c->mu not needed. */
void zkl__stats_free_all(zkl_client *c);

#endif
