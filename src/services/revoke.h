/*
 * revoke.h - Curator's revocation protocol: a holder that is revocable keeps a
 * data watch on its own lock node; anyone may write the ten bytes
 * "__REVOKE__" into it; the holder's callback then runs on the client's
 * worker thread and decides whether to release.
 */
#ifndef ZKL_SERVICES_REVOKE_H
#define ZKL_SERVICES_REVOKE_H

#include <stdint.h>

#include "session/client.h"

#define ZKL_REVOKE_MARKER "__REVOKE__"

typedef struct zkl__revwatch zkl__revwatch;
typedef void (*zkl__revoke_cb)(void *ctx);

/* Give c its revocation state (c->revs); ZKL_ENOMEM. Free tolerates none. */
zkl_status zkl__revs_init(zkl_client *c);
void zkl__revs_free(zkl_client *c);

/* Start watching node (a lock node of session epoch) for the marker. NULL on no memory. */
zkl__revwatch *zkl__revwatch_start(zkl_client *c, const char *node, uint64_t epoch,
                                   zkl__revoke_cb cb, void *ctx);
/*
 * The same watch for other owners: revoked (may be NULL: the marker is not
 * looked for) runs when the marker is written, gone (may be NULL) when the
 * node is deleted while watched, or found gone when the watch is armed; one
 * of the two, once, on the worker. A leader latch's term watches its node
 * so (recipes/latch.c).
 */
zkl__revwatch *zkl__nodewatch_start(zkl_client *c, const char *node, uint64_t epoch,
                                    zkl__revoke_cb revoked, zkl__revoke_cb gone, void *ctx);
/* Stop; cb will not be called after this returns (unless it is running now on the worker). */
void zkl__revwatch_stop(zkl__revwatch *r);

/*
 * The worker's revocation phase (c->mu held; released while a callback
 * runs): run the callbacks of revoked holds, arm the watches to arm (new
 * holds, after a change, after a reconnect). Returns 0 if it did something,
 * else the zkl__now_us() time it wants to run again (INT64_MAX: none).
 */
int64_t zkl__revs_turn(zkl_client *c, int64_t now_us);

/* Hook (session/client.h): the ZooKeeper client lets go of s's watches. */
void zkl__revs_closed_locked(zkl_client *c, zkl__session *s);

#endif
