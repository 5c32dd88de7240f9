/*
 * holders.h - the per-thread table behind reentrancy: who holds a lock object
 * in this process, how many times, and through which node. Keyed by
 * zkl__thread_id(); a uthash table guarded by its own mutex, never held across
 * a ZooKeeper call.
 */
#ifndef ZKL_HOLDERS_H
#define ZKL_HOLDERS_H

#include <pthread.h>

#include "base/hash.h"

#include "core/engine/internals.h"

typedef struct zkl__holder {
    uint64_t tid;
    int count;
    zkl__hold hold;
    UT_hash_handle hh;
} zkl__holder;

typedef struct zkl__holders {
    pthread_mutex_t mu;
    zkl__holder *table;
} zkl__holders;

void zkl__holders_init(zkl__holders *h);
/* Frees the table; the caller has checked it is empty. */
void zkl__holders_destroy(zkl__holders *h);

/*
 * If the calling thread holds: count it up and return 1 (or return -1 with
 * nothing changed if its hold was lost). Return 0 if it holds nothing.
 */
int zkl__holders_reenter(zkl__holders *h, zkl_client *c);

/* Record a new hold (count 1) for the calling thread. Takes hold->node. */
zkl_status zkl__holders_add(zkl__holders *h, zkl__hold *hold);

/*
 * Count down the calling thread's hold. ZKL_ENOTOWNER if it holds nothing.
 * At zero the entry is removed and its hold moved to *last (last->node set);
 * otherwise last->node is NULL.
 */
zkl_status zkl__holders_leave(zkl__holders *h, zkl__hold *last);

/* A copy of the calling thread's hold (ZKL_ENOTOWNER if none). */
zkl_status zkl__holders_get(zkl__holders *h, zkl__hold *out);

/* Whether the calling thread has an entry, and (if epoch) its session epoch.
 * Allocates nothing, so that out of memory never reads as "not held". */
bool zkl__holders_has(zkl__holders *h, uint64_t *epoch);

/* True if any thread holds through session epoch. */
bool zkl__holders_in_epoch(zkl__holders *h, uint64_t epoch);

/* Remember the calling thread's token once it was fetched. */
void zkl__holders_set_token(zkl__holders *h, int64_t czxid);

/* Number of threads holding. */
unsigned zkl__holders_count(zkl__holders *h);

#endif
