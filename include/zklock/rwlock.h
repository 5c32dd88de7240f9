/*
 * rwlock.h - zkl_rwlock, Curator's InterProcessReadWriteLock in C.
 *
 * Readers share, writers exclude everyone, in arrival order, under one path
 * with Curator's layout (_c_<uuid>-__READ__<seq>, _c_<uuid>-__WRIT__<seq>), so
 * C and Curator readers and writers on one path work together.
 *
 * Both sides are reentrant per thread and released by the thread that
 * acquired. A thread holding the write lock may take the read lock; the
 * downgrade (write, read, release write) is done the Curator 5.5 way, so no
 * queued writer can slip in between. A thread that holds only the read lock
 * and asks for the write lock gets ZKL_EDEADLOCK at once (in Curator it would
 * wait forever behind its own read node).
 *
 * Readers watch only the nearest writer ahead of them, so readers queued
 * behind a later writer do not wake when an earlier writer leaves. Waiters
 * also watch the node just ahead of the one they wait for and list the line
 * again when it goes (zkl_mutex_set_lookahead's look-ahead, always on here):
 * a hand-off then needs no listing, at one more request per waiting acquire
 * (still fewer per pair than Curator).
 */
#ifndef ZKLOCK_RWLOCK_H
#define ZKLOCK_RWLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "revoke.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_rwlock zkl_rwlock;

/* Make a read/write lock object on an absolute path (copied). Owned by the caller. */
zkl_status zkl_rwlock_create(zkl_client *c, const char *path, zkl_rwlock **out);

/* Free it; ZKL_EBUSY (nothing freed) while any thread holds either side, an
 * async handle is out, or a thread is inside a call on it (an acquire). */
zkl_status zkl_rwlock_destroy(zkl_rwlock *l);

/*
 * Acquire the read side for the calling thread, waiting up to timeout_ms (0:
 * try once, ZKL_WAIT_FOREVER). Errors as zkl_mutex_acquire.
 */
zkl_status zkl_rwlock_read_acquire(zkl_rwlock *l, int timeout_ms);
/* Releases do not wait for the delete's reply, as zkl_mutex_release. */
zkl_status zkl_rwlock_read_release(zkl_rwlock *l);

/*
 * Acquire the write side. ZKL_EDEADLOCK at once if the calling thread holds
 * the read side without the write side (release the read lock first).
 */
zkl_status zkl_rwlock_write_acquire(zkl_rwlock *l, int timeout_ms);
zkl_status zkl_rwlock_write_release(zkl_rwlock *l);

/* The calling thread holds that side in a session that is not lost. */
bool zkl_rwlock_read_is_held(zkl_rwlock *l);
bool zkl_rwlock_write_is_held(zkl_rwlock *l);

/* Milliseconds left on the lease of the calling thread's write (read) hold;
 * as zkl_mutex_lease_remaining. */
zkl_status zkl_rwlock_write_lease_remaining(zkl_rwlock *l, int64_t *ms);
zkl_status zkl_rwlock_read_lease_remaining(zkl_rwlock *l, int64_t *ms);

/* Fencing token (czxid) of the calling thread's write hold. */
zkl_status zkl_rwlock_write_fencing_token(zkl_rwlock *l, int64_t *token);
/* The czxid of the calling thread's read node (readers share, so it orders
 * reads after the writes before them, not reads among themselves). */
zkl_status zkl_rwlock_read_fencing_token(zkl_rwlock *l, int64_t *token);

/*
 * Full path of the calling thread's write (read) node, for a check of it in
 * a transaction of the caller's own (zklock/guard.h does that for you).
 * *node is malloc'd; the caller frees it. Errors: ZKL_EINVAL, ZKL_ENOTOWNER,
 * ZKL_ELOST.
 */
zkl_status zkl_rwlock_write_node(zkl_rwlock *l, char **node);
zkl_status zkl_rwlock_read_node(zkl_rwlock *l, char **node);

/* All participants, readers and writers, in queue order; free with zkl_strings_free. */
zkl_status zkl_rwlock_participants(zkl_rwlock *l, char ***paths, size_t *n);

const char *zkl_rwlock_path(const zkl_rwlock *l);

/*
 * Local hand-off for the write side: the threads that share l pass the
 * write hold among themselves, as zkl_mutex_set_local_handoff (mutex.h)
 * describes, with the same bounds, guarantees and fencing tokens. Readers
 * are not affected: they queue in ZooKeeper as always, and wait for the
 * streak like any other waiter. A writer that downgraded (holds the read
 * side too) never passes its write hold on: its read node would share the
 * writer's place with another thread's write hold. Call once, before the
 * first write acquire. Errors: ZKL_EINVAL, ZKL_EBUSY, ZKL_ENOMEM.
 */
zkl_status zkl_rwlock_set_write_local_handoff(zkl_rwlock *l, int max_streak, int max_ms);

/* Write holds passed from one local thread to another (0 without it or for NULL). */
uint64_t zkl_rwlock_write_local_handoffs(zkl_rwlock *l);

/* Lost-lock notice for holds of either side (see zkl_mutex_on_state). */
zkl_status zkl_rwlock_on_state(zkl_rwlock *l, zkl_hold_state_fn fn, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
