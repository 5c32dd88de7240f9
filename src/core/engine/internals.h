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

#include "core/engine/hold.h"
#include "session/client.h"

/*
 * Create our node and wait until the driver says we hold the lock.
 * ZKL_OK with *hold filled, or an error with nothing of ours left behind
 * (deletes that fail are retried in the background). If the session is lost
 * while waiting, starts again with a new node in the next session.
 * (engine.c, where the operation runs; the rest here: internals.c)
 */
zkl_status zkl__lock_acquire(zkl_client *c, const zkl__acquire_args *a, zkl__hold *hold);
/* The number of children of path (its stat's, one request of O(1) size; 0 if it is gone). */
zkl_status zkl__child_count(zkl_client *c, const char *path, int *n);

/*
 * Delete the node of a hold, guaranteed: in the foreground once, then in the
 * background until done. Frees hold->node. Returns ZKL_ELOST if the hold's
 * session was already lost (the node is gone with it), else ZKL_OK.
 */
zkl_status zkl__lock_release(zkl_client *c, zkl__hold *hold);

/* The hold's creation zxid, fetched from the server if the create did not give it. */
zkl_status zkl__hold_token(zkl_client *c, const zkl__hold *hold, int64_t *token);

/* A copy of the hold to read (node string duplicated; no metrics tally: stats.h). */
zkl_status zkl__hold_copy(const zkl__hold *from, zkl__hold *to);

/* The children of path sorted by the driver's markers, as full paths. */
zkl_status zkl__participants(zkl_client *c, const char *path, const char *const *markers,
                             char ***out, size_t *n);

#endif
