/*
 * internals.h - the lock-internals core every recipe stands on (Curator's
 * LockInternals): protected ephemeral-sequential create, listing and sorting
 * the children, asking a driver whether we hold the lock and whom to watch,
 * watching that one node, timed waits, and guaranteed cleanup.
 *
 * A recipe is a driver (policy) over this core (mechanism): the mutex, the
 * read and the write side of the rwlock and the semaphore's internal lock
 * differ only in their driver.
 */
#ifndef ZKL_INTERNALS_H
#define ZKL_INTERNALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session/client.h"

/* When a waiter looks ahead (zkl__acquire_args.lookahead). */
typedef enum zkl__lookahead {
    ZKL__LOOKAHEAD_OFF,
    ZKL__LOOKAHEAD_ON,
    ZKL__LOOKAHEAD_IF_CARRIED,
} zkl__lookahead;

/* What a driver decides from the sorted children. */
typedef struct zkl__verdict {
    bool holds;        /* our node holds the lock */
    long watch;        /* if not: index of the one child to watch (>= 0), or -1 to re-list */
    bool watch_parent; /* if not: watch the child list itself (the semaphore's lease count) */
    /*
     * The deletion of the watched node alone makes us the holder, so the
     * waiter need not list again. Sound only where nothing can appear ahead
     * of us: sequences only grow, except Curator 5.5's downgrade read node,
     * which takes its writer's old sequence, so a writer must never use it.
     */
    bool grant_if_deleted;
    /*
     * A fresh listing could never make the watched node's deletion grant
     * (a writer behind a writer): no look-ahead, it would only cost requests.
     */
    bool no_lookahead;
} zkl__verdict;

typedef struct zkl__driver {
    /* The node name after the protected prefix: "lock-", "__READ__", "__WRIT__", "lease-". */
    const char *lock_name;
    /* Markers for Curator's sort key, NULL-terminated (e.g. {"lock-", NULL}). */
    const char *const *sort_markers;
    /*
     * Decide from children sorted by Curator's order, our own index self.
     * ctx is the recipe's (e.g. a lease count); may be NULL.
     */
    zkl__verdict (*decide)(const struct zkl__driver *d, char *const *sorted, size_t n, size_t self,
                           const void *ctx);
} zkl__driver;

/* The standard driver decision (Curator's StandardLockInternalsDriver). */
zkl__verdict zkl__decide_standard(char *const *sorted, size_t n, size_t self, int max_leases);

/* A lock node we hold: what every recipe keeps per hold. */
typedef struct zkl__hold {
    char *node;                /* full path of our lock node */
    int64_t czxid;             /* creation zxid: the fencing token */
    uint64_t epoch;            /* which session of the client it lives in */
    struct zkl__revwatch *rev; /* revocation watch on node, if revocable */
    bool alone;                /* ours was the only node when we got the lock */
} zkl__hold;

typedef struct zkl__acquire_args {
    const char *path; /* the lock path (parent of the nodes) */
    const zkl__driver *driver;
    const void *ctx;  /* passed to driver->decide */
    const void *data; /* node data (NULL: the client's default) */
    int data_len;
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
     * Also watch the node ahead of the one we wait for, and list again when
     * it goes: one more request per acquire in a long line, but the hand-off
     * to us then needs no listing (lower latency under contention). ON:
     * always; IF_CARRIED: only if our create carried held-back deletes,
     * which saved the request that the look-ahead spends.
     */
    zkl__lookahead lookahead;
    /* Revocable: watch our node for Curator's revoke marker, call this on the worker. */
    void (*revoke_cb)(void *ctx);
    void *revoke_ctx;
} zkl__acquire_args;

/*
 * Create our node and wait until the driver says we hold the lock.
 * ZKL_OK with *hold filled, or an error with nothing of ours left behind
 * (deletes that fail are retried in the background). If the session is lost
 * while waiting, starts again with a new node in the next session.
 */
zkl_status zkl__lock_acquire(zkl_client *c, const zkl__acquire_args *a, zkl__hold *hold);

/*
 * Delete the node of a hold, guaranteed: in the foreground once, then in the
 * background until done. Frees hold->node. Returns ZKL_ELOST if the hold's
 * session was already lost (the node is gone with it), else ZKL_OK.
 */
zkl_status zkl__lock_release(zkl_client *c, zkl__hold *hold);

/* The hold's creation zxid, fetched from the server if the create did not give it. */
zkl_status zkl__hold_token(zkl_client *c, const zkl__hold *hold, int64_t *token);

/* Copy of the hold (node string duplicated). */
zkl_status zkl__hold_copy(const zkl__hold *from, zkl__hold *to);

/* The children of path sorted by the driver's markers, as full paths. */
zkl_status zkl__participants(zkl_client *c, const char *path, const char *const *markers,
                             char ***out, size_t *n);

#endif
