/*
 * multilock.h - zkl_multilock, Curator's InterProcessMultiLock: take several
 * locks all or none, under one deadline for the whole set.
 *
 * Members are lock objects the caller made and still owns (mutexes, either
 * side of a read/write lock, semaphore mutexes); they must outlive the
 * multilock. Acquire goes through them in the order they were added; if one
 * cannot be had in time, those already taken are released in reverse order
 * and nothing is held. Release is in reverse order. Deadlock freedom is the
 * caller's job: add locks in one global order everywhere.
 */
#ifndef ZKLOCK_MULTILOCK_H
#define ZKLOCK_MULTILOCK_H

#include "mutex.h"
#include "rwlock.h"
#include "semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_multilock zkl_multilock;

/* An empty set, owned by the caller (zkl_multilock_destroy). */
zkl_status zkl_multilock_create(zkl_multilock **out);

/* Add a member (not taken over: the caller still owns and destroys it). */
zkl_status zkl_multilock_add_mutex(zkl_multilock *ml, zkl_mutex *m);
zkl_status zkl_multilock_add_read(zkl_multilock *ml, zkl_rwlock *l);
zkl_status zkl_multilock_add_write(zkl_multilock *ml, zkl_rwlock *l);
zkl_status zkl_multilock_add_semaphore_mutex(zkl_multilock *ml, zkl_semaphore_mutex *m);

/*
 * Acquire every member, waiting up to timeout_ms for all of them together
 * (0: each is tried once; ZKL_WAIT_FOREVER). On failure nothing is held and
 * the first member's error is returned (ZKL_ETIMEDOUT, ...).
 * Members follow their own ownership rules (mutex and rwlock sides per thread).
 */
zkl_status zkl_multilock_acquire(zkl_multilock *ml, int timeout_ms);

/*
 * Release every member in reverse order; returns the first error, after
 * trying all. Only the thread that acquired the set may: from a thread
 * that holds none of its mutex and rwlock members (or for a set an async
 * acquire took) ZKL_ENOTOWNER, and nothing changes. A member the acquiring
 * thread already released on its own is an error of its own
 * (ZKL_ENOTOWNER, naming the member), and every other member is released
 * all the same.
 */
zkl_status zkl_multilock_release(zkl_multilock *ml);

/* Free the set (not its members). ZKL_EBUSY while it is acquired. */
zkl_status zkl_multilock_destroy(zkl_multilock *ml);

#ifdef __cplusplus
}
#endif
#endif
