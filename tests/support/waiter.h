/*
 * waiter.h - the integration tests' shared fixtures for a line of waiters:
 * a thread that takes a mutex and holds it until told, and a party of
 * sessions each with a mutex on one path.
 */
#ifndef ZKT_WAITER_H
#define ZKT_WAITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "zklock/zklock.h"

/* A thread that acquires a mutex, reports, holds until told, and releases. */
typedef struct zkt_waiter {
    zkl_mutex *m;
    int timeout_ms;
    atomic_int *order; /* optional: rank of this grant among the waiters sharing it */
    zkl_status st, release_st;
    char msg[256];  /* zkl_errmsg() of a failed acquire */
    int64_t got_at; /* zkt_now_ms() when the acquire returned */
    int rank;
    char *node; /* its lock node, once granted */
    pthread_t t;
    atomic_int done, release_now, released;
} zkt_waiter;

/* Start w acquiring m with timeout_ms (order: NULL, or a counter of grants to rank it by). */
void zkt_waiter_start(zkt_waiter *w, zkl_mutex *m, int timeout_ms, atomic_int *order);
/* Wait until w's acquire returned. */
void zkt_waiter_until_done(zkt_waiter *w);
/* Tell w to release (if it holds) and join it. */
void zkt_waiter_finish(zkt_waiter *w);
/* The same, and a release it made must have succeeded. */
void zkt_waiter_release(zkt_waiter *w);
/* Waiters w[0..n-1] (named by the letters of names) are granted in that order, each released
 * in turn. */
void zkt_in_turn(zkt_waiter *const *w, const char *names, int n);

/*
 * A waiter that, told to release (w.release_now), releases and at once
 * acquires again, counting the lock's requests of c around the two
 * (before, after); zkt_relock_join waits for it and checks every call.
 */
typedef struct zkt_relock {
    zkt_waiter w;
    zkl_client *c;
    uint64_t before, after;
    zkl_status release_st, acquire_st;
    atomic_int reacquired;
} zkt_relock;

void zkt_relock_start(zkt_relock *r, zkl_client *c, zkl_mutex *m);
void zkt_relock_join(zkt_relock *r);

/* n sessions (at most 4), each with a zkl_mutex on one path (zkt_path(what)). */
typedef struct zkt_party {
    int n;
    zkl_client *c[4];
    zkl_mutex *m[4];
    zhandle_t *zh;
    char *path;
} zkt_party;

/* session_ms: the clients' session timeout (0: zkt's 4 s). */
void zkt_party_open(zkt_party *p, int n, const char *what, int session_ms);
/* No node is left; every mutex destroyed and client closed. */
void zkt_party_close(zkt_party *p);

#endif
