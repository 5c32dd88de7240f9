/*
 * hold.h - the core's two records: the arguments of one acquire (path,
 * driver, deadline, options) and the hold it yields (our node, its fencing
 * token, its session).
 */
#ifndef ZKL_CORE_HOLD_H
#define ZKL_CORE_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/policy/driver.h"

/* When a waiter looks ahead (zkl__acquire_args.lookahead). */
typedef enum zkl__lookahead {
    ZKL__LOOKAHEAD_OFF,
    ZKL__LOOKAHEAD_ON,
    ZKL__LOOKAHEAD_IF_CARRIED,
} zkl__lookahead;

/* A lock node we hold: what every recipe keeps per hold. */
typedef struct zkl__hold {
    struct zkl_client *c;      /* the client it was taken on */
    char *node;                /* full path of our lock node */
    int64_t czxid;             /* creation zxid: the fencing token */
    uint64_t epoch;            /* which session of the client it lives in */
    struct zkl__revwatch *rev; /* revocation watch on node, if revocable */
    bool alone;                /* ours was the only node when we got the lock */
    int64_t granted_us;        /* zkl__now_us() of the grant to its holder (metrics) */
    /* zkl__now_us() of the wake-up that began the grant's last round: the
     * notice that the node watched went, or the first round's start (an
     * election's vacancy, seen by its next leader: core/objects/stats.h) */
    int64_t woke_us;
    struct zkl__holdmark *mark; /* its tally in the metrics (core/objects/stats.h), or NULL */
} zkl__hold;

typedef struct zkl__acquire_args {
    const char *path; /* the lock path (parent of the nodes) */
    const zkl__driver *driver;
    const void *ctx;  /* passed to driver->decide */
    const void *data; /* node data (NULL: the client's default), of data_len bytes */
    int64_t deadline; /* zkl__now_ms() based; INT64_MAX: forever */
    /*
     * Non-NULL: create a plain EPHEMERAL node named prefix + lock_name +
     * fixed_suffix instead of a sequential one (Curator 5.5's downgrade read
     * node, which takes its writer's sequence).
     */
    const char *fixed_suffix;
    /*
     * If the session is lost while waiting, give up with ZKL_ELOST instead of
     * queueing again (the semaphore must first let go of its internal lock).
     */
    bool no_restart;
    /*
     * The caller can do without the czxid at once (hold->czxid 0 then; fetch
     * it with zkl__hold_token): lets the create carry this client's held-back
     * deletes in one multi transaction.
     */
    bool token_lazy;
    /*
     * The caller knows the driver grants our node once it is made (the
     * semaphore's leases while it holds the internal lock and has counted
     * them: the count can only fall): the create goes without its listing,
     * and the grant follows it with no wait. O(1) where a listing is
     * O(nodes).
     */
    bool known_granted;
    /*
     * Also watch the node ahead of the one we wait for, and list again when
     * it goes: one more request per acquire in a long line, but the hand-off
     * to us then needs no listing (lower latency under contention). ON:
     * always; IF_CARRIED: only if our create carried held-back deletes,
     * which saved the request that the look-ahead spends.
     */
    zkl__lookahead lookahead;
    int data_len;
    /* Revocable: watch our node for Curator's revoke marker, call this on the worker. */
    void (*revoke_cb)(void *ctx);
    void *revoke_ctx;
    /* zkl__now_ms() time before which the acquire does not begin (0: at
     * once): a leader latch joining again after a back-off (its yield) */
    int64_t not_before;
} zkl__acquire_args;

#endif
