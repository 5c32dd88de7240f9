/*
 * engine.h - the steps of one acquire, private to the core: our node's
 * protected create (create.c) and the wait until the driver says we hold
 * (wait.c); internals.c strings them together with the lease and cleanup.
 */
#ifndef ZKL_CORE_ENGINE_H
#define ZKL_CORE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hold.h"
#include "session/client.h"
#include "requests/calls.h"

/* Our node, as created or adopted. */
typedef struct zkl__own {
    char *node;       /* full path */
    const char *name; /* basename, inside node */
    int64_t czxid;
    zkl__names kids; /* first listing, if it came with the create */
    bool have_kids;
    bool alone;   /* the listing that granted the lock held only our node */
    bool carried; /* the create carried held-back deletes: one request saved */
} zkl__own;

void zkl__own_free(zkl__own *o);

/*
 * Create our node under a->path (Curator's protected mode: a node found by
 * its prefix after a lost reply is adopted only if it is our session's).
 * ZKL_OK with *o filled, ZKL__RESTART if the session went, or an error with
 * its message; on failure whatever may have reached the server is queued
 * for deletion.
 */
zkl_status zkl__create_node(zkl_client *c, zkl__session *s, const zkl__acquire_args *a,
                            zkl__own *o);

/*
 * Wait until the driver says our node o holds: ZKL_OK, ZKL__RESTART (our
 * node or session went), or an error with its message (timeout, cancel,
 * connection loss past the retries). The node is the caller's to delete.
 */
zkl_status zkl__wait_for_lock(zkl_client *c, zkl__session *s, const zkl__acquire_args *a,
                              zkl__own *o);

/* The session's server id (0 before it connected). */
int64_t zkl__session_id(zkl__session *s);

/* The acquire ran out of retries at a->path: canceled, timed out or connection lost. */
zkl_status zkl__gave_up(zkl_client *c, const zkl__acquire_args *a, const char *doing);

#endif
