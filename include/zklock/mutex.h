/*
 * mutex.h - zkl_mutex, Curator's InterProcessMutex in C.
 *
 * A reentrant, fair (first come, first served) mutex shared across processes
 * and machines through ZooKeeper, znode-compatible with Curator: a C process
 * and a Java process locking the same path exclude each other.
 *
 * Ownership is per thread, as with Curator: the thread that acquired must
 * release, and a thread that acquires again only counts up (no ZooKeeper
 * call). Different threads sharing one zkl_mutex contend through ZooKeeper,
 * each with a node of its own. A hold is tied to the session it was taken in:
 * once that session is lost, zkl_mutex_is_held() is false and the hold must
 * be released by the caller (which then returns ZKL_ELOST).
 *
 * The nodes under a lock path belong to the lock. One deleted by someone else
 * breaks exclusion if it was the holder's: the holder does not notice, and
 * the next in line is granted beside it. A waiter whose node is deleted is
 * never granted on it: the waiter next in line watches its own node (with
 * the node ahead, in one batch), every other finds it gone at its next
 * listing; it logs a warning and queues again with a new node (README: "How
 * it behaves when things break").
 */
#ifndef ZKLOCK_MUTEX_H
#define ZKLOCK_MUTEX_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "revoke.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_mutex zkl_mutex;

/*
 * Make a mutex object for the absolute lock path `path` on client c (no
 * ZooKeeper call yet). The path is copied. *out is owned by the caller
 * (zkl_mutex_destroy). Errors: ZKL_EINVAL, ZKL_EBADPATH, ZKL_ENOMEM.
 * Nothing else may live under a lock path: a child that is not a lock node
 * and sorts ahead of them blocks every acquirer until it is deleted.
 */
zkl_status zkl_mutex_create(zkl_client *c, const char *path, zkl_mutex **out);

/*
 * Free the object. ZKL_EBUSY (and nothing freed) while any thread holds it,
 * an async handle of it is not released, or a thread is inside a call on
 * it (an acquire waiting): client.h, "Lifecycle and callbacks".
 */
zkl_status zkl_mutex_destroy(zkl_mutex *m);

/*
 * Acquire for the calling thread, waiting up to timeout_ms (0: try once,
 * ZKL_WAIT_FOREVER: no limit). If the server stops answering, the call
 * returns after max(timeout_ms, 1000) ms rather than hang on the link. Reentrant: if this thread
 * holds it already the count goes up and nothing is sent. On any failure no node of this attempt is
 * left behind: it is deleted before the call returns, or in the background when the client is cut
 * off from the servers or the delete is not answered within 2 s (the call does not wait for the
 * link to come back: the node never held, and holds only a place in line until it goes).
 * Errors: ZKL_ETIMEDOUT (its message names a child in the way that is not
 * a lock node, if one is just ahead), ZKL_ELOST (this thread's existing
 * hold was lost), ZKL_ECONNLOSS, ZKL_ECLOSED, ZKL_ENOAUTH, ZKL_EINVAL,
 * ZKL_EDEADLOCK (called on the client's worker, inside a callback),
 * ZKL_ENOMEM (also when a revocable hold's watch could not be set up: no
 * hold is handed out that cannot be revoked as asked).
 * If the session is lost while waiting, the wait goes on in the new session
 * with a new node (the place in line is lost, as with Curator).
 */
zkl_status zkl_mutex_acquire(zkl_mutex *m, int timeout_ms);

/*
 * Release one level of the calling thread's hold; the last level deletes the
 * lock node. It does not wait for the server's reply (that saves a round trip
 * per hold): the lock stays exclusive, because others get it only once the
 * server has applied the delete, and this client's later requests are ordered
 * after it. The delete is held back briefly so that it rides with this
 * client's next request: a following acquire sends it and its create as one
 * transaction, one request and one disk sync for both. The window is 1 ms if
 * nobody else was in line when this hold was granted, and 0.1 ms if others
 * were (they all wait it out, so it is only long enough for a caller that
 * re-acquires at once); after it the client's worker thread sends the delete.
 * Another client that looks at once may still see the node for a moment
 * (zkl_client_drain sends held-back deletes and waits for their replies). A
 * delete that fails is retried in the background; the node goes either way,
 * deleted or with its session.
 * Errors: ZKL_ENOTOWNER (this thread holds nothing: the lock is unchanged),
 * ZKL_ELOST (the hold had been lost with its session; it is now released).
 */
zkl_status zkl_mutex_release(zkl_mutex *m);

/*
 * True if the calling thread holds m in a session that is not lost and
 * whose lease has not run out (zkl_client_lease_end): it turns false on the
 * clock, before the server could have expired the session.
 */
bool zkl_mutex_is_held(zkl_mutex *m);

/*
 * Milliseconds left on the lease of the calling thread's hold: check it
 * before a side effect that must not outlive the lock (and pass the fencing
 * token along for what may still outlive it). Errors: ZKL_EINVAL,
 * ZKL_ENOTOWNER (not held by this thread), ZKL_ELOST (the lease ran out or
 * the session ended).
 */
zkl_status zkl_mutex_lease_remaining(zkl_mutex *m, int64_t *ms);

/*
 * The fencing token of the calling thread's hold: the creation zxid of its
 * lock node, strictly increasing across successive holders of one lock path.
 * (When the create rode in a transaction the first call asks the server once.)
 * Pass it to the resource the lock protects, which refuses any token lower
 * than the highest it has seen. Errors: ZKL_ENOTOWNER, ZKL_ELOST, ZKL_EINVAL.
 */
zkl_status zkl_mutex_fencing_token(zkl_mutex *m, int64_t *token);

/*
 * Full path of the calling thread's lock node (for an exists/check in a
 * zoo_multi). *node is malloc'd; the caller frees it. Errors as above.
 */
zkl_status zkl_mutex_node(zkl_mutex *m, char **node);

/*
 * Every participant in queue order (the holder first), as full node paths.
 * *paths is owned by the caller: zkl_strings_free(*paths, *n).
 */
zkl_status zkl_mutex_participants(zkl_mutex *m, char ***paths, size_t *n);

/*
 * Make later acquisitions revocable (Curator's makeRevocable): their nodes
 * get empty data and a watch for Curator's revoke marker; fn(m, userdata)
 * runs on the client's worker thread when a revoke arrives (zkl_revoke, or
 * Curator's Revoker). Call before acquiring; fn NULL turns it off.
 */
zkl_status zkl_mutex_make_revocable(zkl_mutex *m, zkl_revoke_fn fn, void *userdata);

/*
 * Look-ahead waiting: a waiter also watches the node two places ahead of its
 * own and, when that one goes, knows that it is next: the node just ahead
 * holds, and its release then hands the lock over with no listing on the
 * hand-off's path. To know it, the waiter lists the line again, unless a
 * client of this process held the lock with that node and the waiter's own
 * node is watched: then nothing else can be ahead, and the listing is
 * skipped. It costs one more request per contended acquire and one more
 * watch notification per hand-off.
 * Without it, a waiter lists the line again when the node just ahead goes,
 * again unless that node held the lock in this process and the waiter's
 * own node is watched (then the going itself hands the lock over).
 *   ZKL_LOOKAHEAD_AUTO (the default): only in an acquire whose create carried
 *     this client's held-back delete (see zkl_mutex_release), which saved the
 *     request the look-ahead spends, and whose node just ahead was not made
 *     in this process. Behind a node of another client of this process a
 *     waiter watches its own node instead: that node will most likely hold
 *     here, and its going then hands the lock over with no listing, if the
 *     waiter's own node is still there. A loop of release and acquire at
 *     once costs 5 requests per contended pair, as Curator's, with no
 *     listing on the hand-off's path; other callers wait without it, also
 *     at 5. In a line of this process's clients a pair costs 3 and no
 *     listing: the node just ahead is known here by its sequence.
 *   ZKL_LOOKAHEAD_ON: always (6 requests per contended pair where the
 *     release is not carried); pays where hand-off latency matters more than
 *     server load.
 *   ZKL_LOOKAHEAD_OFF: never (4 requests per contended pair in a loop; 3
 *     in a line of this process's clients).
 * Call before acquiring, as with zkl_mutex_make_revocable.
 * Errors: ZKL_EINVAL (m NULL, or mode not one of these).
 */
typedef enum zkl_lookahead {
    ZKL_LOOKAHEAD_OFF = 0,
    ZKL_LOOKAHEAD_ON = 1,
    ZKL_LOOKAHEAD_AUTO = 2,
} zkl_lookahead;

zkl_status zkl_mutex_set_lookahead(zkl_mutex *m, zkl_lookahead mode);

/*
 * Lost-lock notice: fn(m, state, userdata) runs on the client's worker thread
 * when the session that a hold of m belongs to is SUSPENDED, RECONNECTED or
 * LOST (Curator leaves this to a connection listener; here it is on the
 * lock). fn NULL removes it. What it may call: client.h, "Lifecycle and
 * callbacks".
 */
zkl_status zkl_mutex_on_state(zkl_mutex *m, zkl_hold_state_fn fn, void *userdata);

/*
 * Local hand-off (lock cohorting): the threads of this process that share m
 * pass the lock among themselves without a ZooKeeper call, while this
 * client's node stays at the head of the line. Off by default. Call once,
 * before m's first acquire; m is then in thread mode for life.
 *
 * How it works: only one thread of the object stands in ZooKeeper's line at
 * a time; the others wait in a local first-come, first-served queue. A
 * release with a local thread waiting hands it the hold (a hand-off takes
 * microseconds, not a server write and a notification) unless it ends the
 * streak, which it does when:
 *   - the streak has had max_streak holds, or max_ms have passed since its
 *     first hold was granted (counted whether or not anyone else waits);
 *   - the hold's session is lost, or its lease has less than a renewal
 *     interval left (zkl_client_lease_end);
 *   - a revoke arrived for the node (zkl_mutex_make_revocable).
 * At the end of a streak the node is deleted and the next local thread
 * queues in ZooKeeper again, behind every other process that came meanwhile.
 *
 * What it guarantees:
 *   - across processes, nothing changes: the node stays at the head through
 *     the streak, so no other process is granted, and a hold that is passed
 *     on is checked for its session and lease first (a receiver that finds
 *     it lost takes a new place in line itself);
 *   - a waiter of another process waits at most one streak for this
 *     process: at most max_streak holds, the last one begun less than
 *     max_ms after the first;
 *   - within the process: one holder at a time, and ownership, reentrancy
 *     and zkl_mutex_is_held stay per thread, as without it.
 * What it gives up: fairness between processes. A remote waiter that came
 * before a local one may wait for the local one's hold (up to the bounds).
 *
 * Fencing tokens: one per node, so the holds of one streak share it (they
 * are threads of one process, which trust each other). Every other
 * process's holds, before and after the streak, have other nodes, created
 * earlier (lower tokens) or later (higher), so a resource that refuses
 * tokens lower than the highest it has seen still refuses every other
 * process's stale holder; it does not fence this process's threads from
 * each other within a streak.
 *
 * Errors: ZKL_EINVAL (m NULL, max_streak or max_ms below 1), ZKL_EBUSY (m
 * was acquired already, or it is on already), ZKL_ENOMEM. Async acquires of
 * an object with local hand-off are refused (ZKL_EINVAL).
 */
zkl_status zkl_mutex_set_local_handoff(zkl_mutex *m, int max_streak, int max_ms);

/* Holds passed from one local thread to another (0 without local hand-off or for NULL). */
uint64_t zkl_mutex_local_handoffs(zkl_mutex *m);

/* The lock path (owned by m). NULL for NULL. */
const char *zkl_mutex_path(const zkl_mutex *m);

#ifdef __cplusplus
}
#endif
#endif
