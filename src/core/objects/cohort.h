/*
 * cohort.h - local hand-off (lock cohorting, Dice, Marathe and Shavit,
 * PPoPP 2012) for one side of a lock object: the threads of this process
 * that share the object pass its node among themselves, and only one of
 * them at a time stands in ZooKeeper's line.
 *
 * DESIGN. A cohort has a FIFO of local waiters and a baton (busy): the
 * thread with the baton holds the node or is acquiring one through the
 * core. A thread that finds the baton taken queues and sleeps on its own
 * condition. The holder's release then either passes its hold to the first
 * waiter (no ZooKeeper call: the node stays at the head, so no other process
 * can be granted), or, when a bound is reached, the hold's session or lease
 * is no longer good, or a revoke came, lets the node go in ZooKeeper and
 * hands the baton to the first waiter, which queues again behind everyone
 * who came meanwhile. So a remote waiter waits at most one streak: at most
 * max_streak holds, the last one begun less than max_ms after the first.
 *
 * Lock order: the cohort's mu, then c->mu (the lease check); nothing that
 * holds c->mu takes the cohort's mu (a revoke only sets an atomic flag).
 */
#ifndef ZKL_CORE_COHORT_H
#define ZKL_CORE_COHORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine/hold.h"
#include "session/client.h"

typedef struct zkl__cohort zkl__cohort;

/* A cohort with these bounds (max_streak >= 1, max_ms >= 1); NULL on no memory. */
zkl__cohort *zkl__cohort_new(int max_streak, int max_ms);
/* Free it (NULL is fine); nobody may wait in it. */
void zkl__cohort_free(zkl__cohort *k);

/* What zkl__cohort_enter gave the caller. */
typedef enum zkl__cohort_turn {
    ZKL__COHORT_ACQUIRE, /* the baton: acquire through the core, then zkl__cohort_acquired */
    ZKL__COHORT_GRANTED, /* a hold passed on by the last local holder: *got */
    ZKL__COHORT_TIMEDOUT /* the deadline (zkl__now_ms) came first */
} zkl__cohort_turn;

/* Wait for the baton or a passed hold, until deadline (INT64_MAX: none). */
zkl__cohort_turn zkl__cohort_enter(zkl__cohort *k, int64_t deadline, zkl__hold *got);

/* The baton's owner acquired (ok: a new streak begins) or gave up (the
 * baton goes to the next waiter, or is put down). */
void zkl__cohort_acquired(zkl__cohort *k, bool ok);

/*
 * The holder lets go of *last: pass it to the first local waiter if the
 * bounds allow and its lease is still good (true: *last is theirs now, the
 * caller does nothing more), else false: the caller releases it through the
 * core and then calls zkl__cohort_released.
 */
bool zkl__cohort_pass(zkl__cohort *k, zkl_client *c, zkl__hold *last);
void zkl__cohort_released(zkl__cohort *k);

/* End the current streak at its holder's release (a revoke): any thread. */
void zkl__cohort_end_streak(zkl__cohort *k);

/* Holds passed on so far. */
uint64_t zkl__cohort_passes(zkl__cohort *k);

#endif
