/*
 * semaphore.h - zkl_semaphore (Curator's InterProcessSemaphoreV2) and
 * zkl_semaphore_mutex (Curator's InterProcessSemaphoreMutex).
 *
 * A counting semaphore shared across processes: at most max_leases leases
 * are out at once. Same znode layout as Curator (PATH/locks holds an internal
 * mutex, PATH/leases one _c_<uuid>-lease-<seq> node per lease), so C and
 * Curator processes share one lease count. As in Curator, max_leases lives in
 * each process: every user of a path must pass the same number.
 *
 * Waiters for the internal mutex use the look-ahead (see
 * zkl_mutex_set_lookahead): its hand-offs are the semaphore's critical path,
 * and a lease still costs fewer requests than Curator's nine.
 *
 * A lease is an object the caller owns; it may be returned from any thread.
 * A lease is tied to its session: once that is lost, zkl_lease_is_valid() is
 * false and returning it gives ZKL_ELOST.
 */
#ifndef ZKLOCK_SEMAPHORE_H
#define ZKLOCK_SEMAPHORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "revoke.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_semaphore zkl_semaphore;
typedef struct zkl_lease zkl_lease;

/* Make a semaphore object with max_leases >= 1 on an absolute path (copied). */
zkl_status zkl_semaphore_create(zkl_client *c, const char *path, int max_leases,
                                zkl_semaphore **out);

/* Free it; ZKL_EBUSY (nothing freed) while leases of it are still out, or a
 * thread is inside a call on it (an acquire waiting). */
zkl_status zkl_semaphore_destroy(zkl_semaphore *s);

/*
 * Acquire one lease, waiting up to timeout_ms (0: try once,
 * ZKL_WAIT_FOREVER). On success *lease is the caller's (zkl_lease_return).
 */
zkl_status zkl_semaphore_acquire(zkl_semaphore *s, int timeout_ms, zkl_lease **lease);

/* The most leases one acquire may ask for (as a multilock's members). */
#define ZKL_SEMAPHORE_MANY_MAX 1024

/*
 * Acquire n leases (1 to max_leases, at most ZKL_SEMAPHORE_MANY_MAX), all
 * or none, with one deadline for all of them: each lease is taken in turn
 * (Curator's order), and once the deadline has passed no further lease is
 * tried, even one that would need no wait: timeout 0 tries one lease, so
 * with n > 1 it gives ZKL_ETIMEDOUT (give the round trips a timeout). The
 * cost is linear in n: under the internal lock, the first lease lists the
 * leases (and waits if the count is full), the count is read once, and the
 * leases it leaves room for are made with no listing (the count can only
 * fall meanwhile: leases are made under that lock). On success leases[0..n-1] are
 * the caller's; on failure every lease taken so far has been returned and
 * leases[] is all NULL.
 */
zkl_status zkl_semaphore_acquire_many(zkl_semaphore *s, int n, int timeout_ms, zkl_lease **leases);

/*
 * Return a lease (from any thread) and free it; its node is deleted (the call
 * does not wait for the reply, as zkl_mutex_release; in the background if
 * need be). ZKL_ELOST if its session had been lost (the lease is
 * freed all the same). NULL gives ZKL_EINVAL.
 */
zkl_status zkl_lease_return(zkl_lease *lease);

/* True while the lease's session is not lost and its (session) lease has
 * not run out (see zkl_client_lease_end). */
bool zkl_lease_is_valid(const zkl_lease *lease);

/* Milliseconds left on the session lease behind this semaphore lease; as
 * zkl_mutex_lease_remaining (ZKL_ELOST once it ran out). */
zkl_status zkl_lease_remaining(const zkl_lease *lease, int64_t *ms);

/* The creation zxid of the lease node (0 for NULL). */
int64_t zkl_lease_fencing_token(const zkl_lease *lease);

/* Full path of the lease node (owned by the lease). */
const char *zkl_lease_node(const zkl_lease *lease);

/* Lease node paths (every child of PATH/leases); free with zkl_strings_free. */
zkl_status zkl_semaphore_participants(zkl_semaphore *s, char ***paths, size_t *n);

/* Lost-lock notice for the semaphore's outstanding leases (see zkl_mutex_on_state). */
zkl_status zkl_semaphore_on_state(zkl_semaphore *s, zkl_hold_state_fn fn, void *userdata);

/* ---- zkl_semaphore_mutex: a non-reentrant mutex on a one-lease semaphore ---- */

typedef struct zkl_semaphore_mutex zkl_semaphore_mutex;

zkl_status zkl_semaphore_mutex_create(zkl_client *c, const char *path, zkl_semaphore_mutex **out);
/* ZKL_EBUSY while it is held. */
zkl_status zkl_semaphore_mutex_destroy(zkl_semaphore_mutex *m);
/*
 * Acquire; not reentrant: a holder that acquires again waits like anyone else
 * (and times out), as Curator's InterProcessSemaphoreMutex does.
 */
zkl_status zkl_semaphore_mutex_acquire(zkl_semaphore_mutex *m, int timeout_ms);
/* Release from any thread. ZKL_ENOTOWNER if it is not held through this object. */
zkl_status zkl_semaphore_mutex_release(zkl_semaphore_mutex *m);
/* Held through this object (by any thread) in a session that is not lost. */
bool zkl_semaphore_mutex_is_held(zkl_semaphore_mutex *m);

#ifdef __cplusplus
}
#endif
#endif
