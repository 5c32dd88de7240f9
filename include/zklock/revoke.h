/*
 * revoke.h - Curator's cooperative revocation, usable across C and Java.
 *
 * A holder that made its lock revocable (zkl_mutex_make_revocable) is told
 * when someone asks for the lock: its callback runs on the client's worker
 * thread, and the holder decides whether to release. Asking is done by
 * writing Curator's marker "__REVOKE__" into the holder's lock node, which
 * is what zkl_revoke does and what Curator's Revoker.attemptRevoke does.
 */
#ifndef ZKLOCK_REVOKE_H
#define ZKLOCK_REVOKE_H

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A revocation request for lock (the zkl_mutex * it was registered on).
 * Runs on the client's worker thread: it may not release a per-thread lock
 * itself (only the holding thread can); it should tell that thread.
 */
typedef void (*zkl_revoke_fn)(void *lock, void *userdata);

/*
 * Ask the holder of lock node node_path (a full path, e.g. from
 * zkl_mutex_participants) to release. ZKL_OK also if the node is already gone.
 * ZKL_EINVAL for a leader latch's node ("latch-" in its name): latches are
 * not revocable, and writing a latch node's data would use up the one-shot
 * watch of a Curator LeaderLatch waiting behind it (it would never see the
 * node go). ZKL_EBADPATH for a path that is not absolute.
 */
zkl_status zkl_revoke(zkl_client *c, const char *node_path);

/* Called on the client's worker thread when the session a hold of lock belongs
 * to is SUSPENDED, RECONNECTED (the same session) or LOST. */
typedef void (*zkl_hold_state_fn)(void *lock, zkl_conn_state st, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
