/*
 * reentrant.h - the thin reentrancy layer of Curator's InterProcessMutex,
 * shared by zkl_mutex and both sides of zkl_rwlock: a lock path, a driver,
 * and a per-thread table of holds (its functions first in reentrant.c).
 * Everything that talks to ZooKeeper is in the core (engine.c, internals.c).
 */
#ifndef ZKL_REENTRANT_H
#define ZKL_REENTRANT_H

#include <pthread.h>
#include <stdbool.h>

#include "base/hash.h"
#include "core/engine/internals.h"
#include "zklock/guard.h"

/*
 * The per-thread table behind reentrancy: who holds a lock object in this
 * process, how many times, and through which node. Keyed by
 * zkl__thread_id(); a uthash table guarded by its own mutex, never held
 * across a ZooKeeper call (reentrant.c, first).
 */
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

/* True if any thread holds through session epoch. */
bool zkl__holders_in_epoch(zkl__holders *h, uint64_t epoch);

/* Number of threads holding. */
unsigned zkl__holders_count(zkl__holders *h);

typedef struct zkl__side {
    zkl_client *c;
    const char *path; /* owned by the recipe */
    const zkl__driver *driver;
    zkl__holders holders;
    const void *data; /* node data (NULL: the client's default) */
    int data_len;
    void (*revoke_cb)(void *ctx); /* revocable holds (Curator's makeRevocable) */
    void *revoke_ctx;
    zkl__lookahead lookahead; /* see zkl__acquire_args */
    /* under c->mu: thread mode (holders) or async mode (handles), for life */
    int mode;
    int async_ops;        /* handles not yet released */
    uint64_t async_epoch; /* the session of the granted handles counted in async_held */
    int async_held;
    struct zkl__cohort *cohort;   /* local hand-off between threads (cohort.h), or NULL */
    struct zkl__lockstats *stats; /* its metrics (metrics.h), or NULL: set by the recipe */
    /* the next async acquire begins no sooner (zkl__acquire_args.not_before;
     * set by the recipe for the one call) */
    int64_t not_before;
    /* the recipe reads the token at every grant (a leader latch's GAINED):
     * the create never rides in a multi, whose reply has no czxid, so that
     * no grant waits for a request to learn it (zkl__acquire_args.token_lazy) */
    bool token_at_grant;
} zkl__side;

enum { ZKL__MODE_NONE, ZKL__MODE_THREAD, ZKL__MODE_ASYNC };

/* The core's arguments for an acquire of sd (as a thread-mode acquire makes them). */
void zkl__side_args(const zkl__side *sd, int timeout_ms, const void *ctx, const char *fixed_suffix,
                    zkl__acquire_args *a);
/* Put sd in mode for fn (ZKL__MODE_*), or ZKL_EBUSY if it is in the other one. */
zkl_status zkl__side_mode(zkl__side *sd, int mode, const char *fn);
/* Handles of sd not yet released (zkl_mutex_destroy refuses while any). */
int zkl__side_async_ops(zkl__side *sd);

void zkl__side_init(zkl__side *sd, zkl_client *c, const char *path, const zkl__driver *d);
void zkl__side_destroy(zkl__side *sd);

/* Re-enter if this thread holds; else acquire through the core. */
zkl_status zkl__side_acquire(zkl__side *sd, int timeout_ms, const void *ctx,
                             const char *fixed_suffix);
zkl_status zkl__side_release(zkl__side *sd);
/* The same; may_pass false: never hand the hold to a local waiter (a writer
 * that keeps a downgraded read node must not). */
zkl_status zkl__side_release_ex(zkl__side *sd, bool may_pass);
/*
 * Turn on local hand-off (cohort.h) between the threads that share sd:
 * before its first acquire only (ZKL_EBUSY after; it puts sd in thread
 * mode). ZKL_EINVAL for bounds below 1. what: the public call, for errors.
 */
zkl_status zkl__side_local_handoff(zkl__side *sd, int max_streak, int max_ms, const char *what);
/* A revoke came: the side's streak ends at its holder's release (no-op without a cohort). */
void zkl__side_end_streak(zkl__side *sd);
/* Holds passed on between local threads so far (0 without a cohort). */
uint64_t zkl__side_local_handoffs(zkl__side *sd);
bool zkl__side_is_held(zkl__side *sd);
/* True if the calling thread has an entry (held, or lost and not yet released). */
bool zkl__side_has_entry(zkl__side *sd);
/* The calling thread's live hold (copy; the caller frees h->node). */
zkl_status zkl__side_current(zkl__side *sd, zkl__hold *h);
zkl_status zkl__side_token(zkl__side *sd, int64_t *token);
/* Time left on the calling thread's hold's lease (ZKL_ENOTOWNER, ZKL_ELOST). */
zkl_status zkl__side_lease_remaining(zkl__side *sd, int64_t *ms);
zkl_status zkl__side_node(zkl__side *sd, char **node);
/* A guarded write (zklock/guard.h) behind the calling thread's hold of sd; fn: the public call. */
zkl_status zkl__side_guarded(zkl__side *sd, zkl_write *w, size_t n, size_t *failed, const char *fn);

#endif
