/*
 * guard.h - guarded writes: ZooKeeper writes that land only while a hold is
 * held.
 *
 * A guarded write is one ZooKeeper multi transaction: zklock puts a check
 * of each of the hold's own lock nodes (at any version: a revocation request
 * writes a node's data) in front of the caller's writes. ZooKeeper's leader
 * orders the transaction against the session close that deletes those
 * nodes, so the writes land only if the hold still existed at that point of
 * ZooKeeper's history, however long the holder was paused and whatever the
 * clocks did. This is the exact protection for state kept in ZooKeeper
 * itself (a counter, a config node, a queue item); the lease
 * (zkl_mutex_lease_remaining) bounds side effects outside ZooKeeper, and a
 * fencing token protects a resource that can check one.
 *
 * The transaction is all or nothing. Its outcome:
 *  - ZKL_OK: every write applied; each w[i].rc is 0, w[i].created and
 *    w[i].stat are filled where the write has them;
 *  - ZKL_ELOST: the hold is gone (its node, or its session, as this client
 *    knows it or as the server answered): nothing was applied. When the
 *    client already knows, nothing is sent;
 *  - ZKL_EZK (ZKL_ENOAUTH for an ACL refusal): write *failed was refused,
 *    with ZooKeeper's error in w[*failed].rc (ZNODEEXISTS, ZNONODE,
 *    ZBADVERSION, ZNOTEMPTY, ...): nothing was applied; the writes before
 *    it read 0 (they would have applied), those after it
 *    ZRUNTIMEINCONSISTENCY;
 *  - ZKL_ECONNLOSS: the connection was lost with the transaction in flight,
 *    or no reply came within the client's connect timeout. This is the one
 *    ambiguous outcome: the transaction may or may not have been applied,
 *    and zklock does not send it again (writes are not idempotent). Since
 *    it is all or nothing, any one of its writes tells for all of it: read
 *    back a node it sets with an expected version (applied if and only if
 *    the node's version is one more, with your data), or a node it creates
 *    or deletes (see examples/guarded_counter.c);
 *  - ZKL_ENOTOWNER: the hold is not held by the caller (the calling thread
 *    for a thread-mode mutex or read/write side; a handle whose acquire was
 *    not granted), and nothing was sent;
 *  - ZKL_EINVAL (NULL, no writes, more than ZKL_GUARDED_MAX, an unknown
 *    type or mode, a version below -1, a negative length or data over
 *    ZKL_NODE_DATA_MAX, a delete or set of one of the hold's own lock
 *    nodes, which would end the hold while it still reads as held and let
 *    the next waiter in beside it, or a transaction over 0xfffff bytes as
 *    the server reads it, ZooKeeper's default jute.maxbuffer, which it
 *    would refuse by closing the connection; the message gives the size),
 *    ZKL_EBADPATH (a write's path is not an absolute,
 *    well-formed ZooKeeper path), ZKL_ENOMEM, ZKL_ECLOSED: nothing was sent.
 *    The writes are checked first, before the hold: a bad write is
 *    ZKL_EINVAL or ZKL_EBADPATH whether or not the hold is held.
 * *failed (may be NULL) is the index of the refused write for ZKL_EZK and
 * ZKL_ENOAUTH, or of the write an argument error names, else SIZE_MAX.
 *
 * Paths are the client's own: under its connect string's chroot, as lock
 * paths are. A guarded write blocks for one round trip, on the calling
 * thread; zkl_op_guarded_write_async sends it without waiting, for event
 * loops, and delivers the answer as async acquires are delivered. None may
 * be called from the client's log callback.
 */
#ifndef ZKLOCK_GUARD_H
#define ZKLOCK_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "mutex.h"
#include "rwlock.h"
#include "semaphore.h"
#include "multilock.h"
#include "async.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes in one guarded transaction, at most (the hold's checks come on top:
 * one per lock node, a multilock's one per member). */
#define ZKL_GUARDED_MAX 64
/* Any version, for zkl_write.version. */
#define ZKL_ANY_VERSION (-1)

typedef enum zkl_write_type {
    ZKL_WRITE_CREATE = 1, /* create path with data, in mode */
    ZKL_WRITE_DELETE,     /* delete path, at version */
    ZKL_WRITE_SET,        /* set path's data, at version */
    ZKL_WRITE_CHECK,      /* path exists, at version */
} zkl_write_type;

/* zkl_write.mode of a create: ZooKeeper's create modes. */
enum {
    ZKL_CREATE_PERSISTENT = 0,
    ZKL_CREATE_EPHEMERAL = 1,
    ZKL_CREATE_PERSISTENT_SEQUENTIAL = 2,
    ZKL_CREATE_EPHEMERAL_SEQUENTIAL = 3,
    ZKL_CREATE_CONTAINER = 4,
};

/* A node's stat, as ZooKeeper keeps it. */
typedef struct zkl_stat {
    int64_t czxid, mzxid, pzxid;         /* created, last modified, children last modified */
    int64_t ctime, mtime;                /* ms since the epoch, by the server's clock */
    int64_t ephemeral_owner;             /* the owning session of an ephemeral node, else 0 */
    int32_t version, cversion, aversion; /* of its data, children and ACL */
    int32_t data_length, num_children;
} zkl_stat;

/* One write of a guarded transaction: the caller fills the first part. */
typedef struct zkl_write {
    zkl_write_type type;
    const char *path;   /* absolute, under the client's chroot */
    const void *data;   /* create and set: the data (NULL: none) */
    int len;            /* its length in bytes (0 to ZKL_NODE_DATA_MAX) */
    int version;        /* delete, set and check: the version expected, or ZKL_ANY_VERSION */
    int mode;           /* create: ZKL_CREATE_* */
    char *created;      /* create: where to put the path made (NULL: not wanted) */
    size_t created_len; /* its size, the final NUL included (the path is cut to fit) */
    /* zklock fills these */
    int rc;        /* ZooKeeper's result: 0 (ZOK), or its error code (zerror names it) */
    zkl_stat stat; /* set: the node's stat after the write */
} zkl_write;

/* The calling thread's hold of m. */
zkl_status zkl_mutex_guarded_write(zkl_mutex *m, zkl_write *w, size_t n, size_t *failed);
/* The calling thread's read or write hold of l. */
zkl_status zkl_rwlock_read_guarded_write(zkl_rwlock *l, zkl_write *w, size_t n, size_t *failed);
zkl_status zkl_rwlock_write_guarded_write(zkl_rwlock *l, zkl_write *w, size_t n, size_t *failed);
/* A semaphore lease (any thread). */
zkl_status zkl_lease_guarded_write(zkl_lease *lease, zkl_write *w, size_t n, size_t *failed);
/* The calling thread's hold of every member of ml: a check of each member's node. */
zkl_status zkl_multilock_guarded_write(zkl_multilock *ml, zkl_write *w, size_t n, size_t *failed);
/* An async handle's hold (any thread): a check of each of its nodes. */
zkl_status zkl_op_guarded_write(zkl_op *op, zkl_write *w, size_t n, size_t *failed);

/*
 * The answer of an async guarded write: st and failed as the blocking call
 * gives them (failed: SIZE_MAX unless ZKL_EZK or ZKL_ENOAUTH), msg its
 * message (owned by the library, valid during the call; "" for ZKL_OK),
 * userdata the call's. The writes' results (rc, created, stat) are in the
 * caller's w when it runs.
 */
typedef void (*zkl_write_fn)(zkl_status st, size_t failed, const char *msg, void *userdata);

/*
 * zkl_op_guarded_write without waiting, for event loops: ZKL_OK, the
 * transaction is sent, and fn runs once with its answer, delivered as the
 * handle's acquire was (zklock/async.h: on the home client's worker, or by
 * zkl_client_dispatch after zkl_client_event_fd). Or a failure found before
 * anything was sent (the statuses and *failed of the blocking call: bad
 * input, ZKL_ENOTOWNER, ZKL_ELOST when the client already knows the hold
 * is gone, ZKL_ENOMEM, ZKL_ECLOSED), and fn never runs.
 *
 * w[0..n) stays the caller's, unchanged, until fn runs: zklock writes the
 * results into it then (the paths and data are read at the call). The
 * answer comes when ZooKeeper answers, or when the ZooKeeper client gives up
 * on the connection (ZKL_ECONNLOSS, ambiguous as in the blocking call),
 * within about two thirds of the session timeout; there is no cancel (a
 * sent transaction is the server's to apply). The handle may be released
 * with the write in flight: ZooKeeper applies the write or refuses it
 * before the release's delete. zkl_client_close refuses (ZKL_EBUSY) while a
 * write has not reported. Any thread; from inside a callback too.
 */
zkl_status zkl_op_guarded_write_async(zkl_op *op, zkl_write *w, size_t n, size_t *failed,
                                      zkl_write_fn fn, void *userdata);

#ifdef __cplusplus
}
#endif

#endif
