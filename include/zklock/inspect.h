/*
 * inspect.h - who is in line for a lock path, whatever recipe (or library:
 * Curator too) made it: mutex, read/write lock or semaphore layouts.
 */
#ifndef ZKLOCK_INSPECT_H
#define ZKLOCK_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_participant {
    char *node; /* full path of the lock node */
    char *data; /* its data (NUL-terminated copy; may hold binary) */
    size_t data_len;
    int64_t token; /* its creation zxid: the fencing token of that hold */
    int64_t owner; /* the session that owns it */
    /* 'M' mutex, 'R' read, 'W' write, 'S' semaphore lease, 'L' a leader
     * latch's participant (zklock/leader.h: the first holds); 'X' a child that
     * is not a lock node (persistent: no session owns it), listed where it
     * sorts */
    char kind;
    /* holds the lock now (else waits); for 'X', is in the way: it sorts
     * ahead of a lock node here or of the next one made, which then waits
     * for it until it is deleted */
    bool holds;
} zkl_participant;

/*
 * The participants of the lock at path in queue order, holders first. A path
 * with Curator's semaphore layout (locks/, leases/) lists its leases, oldest
 * first, and then the waiters on its internal lock, none of which holds.
 * Every lease node reads as a holder, that of an acquirer still waiting for
 * the count to drop too (it heads the internal lock meanwhile): the lease
 * limit is not kept in ZooKeeper, so the two cannot be told apart. *out is
 * the caller's: zkl_participants_free(*out, *n). A path that does not exist
 * has none.
 */
zkl_status zkl_inspect(zkl_client *c, const char *path, zkl_participant **out, size_t *n);
void zkl_participants_free(zkl_participant *v, size_t n);

#ifdef __cplusplus
}
#endif
#endif
