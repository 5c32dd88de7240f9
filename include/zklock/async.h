/*
 * async.h - acquires that do not block, for event loops (epoll, libuv,
 * libevent): one thread may have thousands of waits outstanding, and no
 * thread is parked per waiter.
 *
 * An async acquire returns at once with an operation handle (zkl_op). The
 * wait itself runs on the client's worker thread, driven by ZooKeeper's
 * replies and watch events (the same engine the blocking calls wait on).
 * When it ends, the completion callback runs once with the outcome: ZKL_OK
 * (the handle now holds the lock), ZKL_ETIMEDOUT, ZKL_ECANCELED, ZKL_ELOST,
 * ZKL_ECONNLOSS, ZKL_ENOMEM or another error, with its message.
 *
 * Who runs the callback (the client's delivery mode):
 *  - by default, the client's worker thread, with no lock of the library
 *    held; it must not block for long (renewals of every hold's lease run
 *    on that thread too);
 *  - after zkl_client_event_fd(), the thread that calls
 *    zkl_client_dispatch() when the descriptor is readable (the loop's own
 *    thread, as with libuv's uv_poll or hiredis's adapters).
 *
 * Ownership: an async hold belongs to its handle, not to a thread; any
 * thread may release it, once. Every handle ends with exactly one
 * zkl_op_release(), called after its callback ran (from inside the
 * callback is fine): it releases the hold if there is one and frees the
 * handle. A lock object is in one mode for its life: its first acquire
 * makes it a thread-mode object (zkl_mutex_acquire: per-thread, reentrant
 * holds) or an async one (handles; no reentrancy), and a call of the other
 * mode fails with ZKL_EBUSY saying so. zkl_mutex_destroy() refuses
 * (ZKL_EBUSY) while any of its handles is not released.
 *
 * Order: the line is the order in which the server made the nodes. Async
 * acquires of one client send their creates in the order they were called
 * when the lock's parent exists; when it does not, each makes it and
 * creates again, in whatever order their steps run, so the first called is
 * not always the first in line (as across processes).
 */
#ifndef ZKLOCK_ASYNC_H
#define ZKLOCK_ASYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "client.h"
#include "mutex.h"
#include "rwlock.h"
#include "multilock.h"
#include "semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_op zkl_op;

/*
 * The completion: st and msg (a message owned by the library, valid during
 * the call) say how the acquire ended; userdata is the acquire's. Runs once
 * per handle, on the thread the delivery mode names.
 */
typedef void (*zkl_op_fn)(zkl_op *op, zkl_status st, const char *msg, void *userdata);

/*
 * Start acquiring m, waiting up to timeout_ms (0: try once, ZKL_WAIT_FOREVER:
 * no limit). Returns at once: ZKL_OK with *op the handle, and fn will run
 * once; or an error (ZKL_EINVAL, ZKL_EBUSY: m is in thread mode, ZKL_ENOMEM,
 * ZKL_ECLOSED) with no handle and no callback. Any thread may call it.
 * Revocable mutexes (zkl_mutex_make_revocable) are thread mode only.
 */
zkl_status zkl_mutex_acquire_async(zkl_mutex *m, int timeout_ms, zkl_op_fn fn, void *userdata,
                                   zkl_op **op);

/* The same for the read side and the write side of a read/write lock. */
zkl_status zkl_rwlock_read_acquire_async(zkl_rwlock *rw, int timeout_ms, zkl_op_fn fn,
                                         void *userdata, zkl_op **op);
zkl_status zkl_rwlock_write_acquire_async(zkl_rwlock *rw, int timeout_ms, zkl_op_fn fn,
                                          void *userdata, zkl_op **op);

/*
 * Start acquiring n leases (1..max) of s, all or none, within timeout_ms.
 * The handle holds them all once the callback says ZKL_OK; its fencing
 * token and lease are the first lease's; zkl_op_release returns them all.
 * zkl_semaphore_destroy refuses while the handle is not released. Blocking
 * and async acquires may share a semaphore (its leases are never per
 * thread). Errors as zkl_mutex_acquire_async, and ZKL_EINVAL for n (above
 * max_leases or ZKL_SEMAPHORE_MANY_MAX). Unlike the blocking form, it lists
 * the leases once for each lease it takes (Curator's order).
 */
zkl_status zkl_semaphore_acquire_async(zkl_semaphore *s, int n, int timeout_ms, zkl_op_fn fn,
                                       void *userdata, zkl_op **op);

/*
 * Start acquiring every member of ml in turn, all or none, within
 * timeout_ms for the whole set (zklock/multilock.h). The callback reports
 * once; on a failure the members taken are released in reverse order and
 * the handle holds nothing. Members may live on different clients: the
 * callback is delivered in the first member's client's mode (by default on
 * a worker thread: that of the client whose member finished); each member
 * mutex or rwlock side goes into async mode; semaphore mutexes are thread
 * mode only (ZKL_EINVAL). The token and lease read from the handle are the
 * first member's. A handle takes each lock once: a lock added twice, or
 * both sides of one read/write lock, gives ZKL_EINVAL (the thread-mode
 * acquire re-enters such a member instead). zkl_multilock_destroy refuses
 * while the handle is out.
 */
zkl_status zkl_multilock_acquire_async(zkl_multilock *ml, int timeout_ms, zkl_op_fn fn,
                                       void *userdata, zkl_op **op);

/*
 * Stop a wait: its node is deleted and the callback reports ZKL_ECANCELED.
 * Exactly once, even against a grant that comes at the same moment: the
 * first of the two to reach the operation wins. ZKL_OK: the cancel won (the
 * callback will say ZKL_ECANCELED). ZKL_EBUSY: too late, the acquire had
 * already ended (granted: the callback says ZKL_OK and the hold must be
 * released; or failed). ZKL_EINVAL for NULL. Any thread; not after
 * zkl_op_release().
 */
zkl_status zkl_op_cancel(zkl_op *op);

/*
 * The end of every handle, once its callback ran: releases the hold if the
 * acquire was granted (as zkl_mutex_release: the delete is not waited for)
 * and frees the handle. ZKL_OK; ZKL_ELOST if the hold had been lost with its
 * session or lease (the handle is freed all the same); ZKL_EBUSY (nothing
 * done) if the callback has not run yet: cancel first, and release from the
 * callback. Any thread, including from inside the callback.
 */
zkl_status zkl_op_release(zkl_op *op);

/* True if the handle holds its lock, in a session that lives, within its lease. */
bool zkl_op_is_held(zkl_op *op);
/*
 * The hold's fencing token (its node's creation zxid). ZKL_ENOTOWNER if not
 * granted, ZKL_ELOST if lost. When the create rode in a transaction with a
 * held-back delete, the first call asks the server once (one round trip,
 * blocking); later calls do not. Any thread, two at once included (each
 * may then ask once).
 */
zkl_status zkl_op_fencing_token(zkl_op *op, int64_t *token);
/* Milliseconds left on the hold's lease (ZKL_ENOTOWNER, ZKL_ELOST). */
zkl_status zkl_op_lease_remaining(zkl_op *op, int64_t *ms);
/*
 * Full path of the hold's node (a semaphore's n leases: the first; a
 * multilock: its first member's), malloc'd for the caller to free.
 * ZKL_EINVAL, ZKL_ENOTOWNER if not granted, ZKL_ELOST if lost, ZKL_ENOMEM.
 */
zkl_status zkl_op_node(zkl_op *op, char **node);

/*
 * Switch c to descriptor delivery: from now on completions are queued, and
 * *fd (an eventfd owned by the client, closed by zkl_client_close) becomes
 * readable when some are ready. Call it before the first async acquire.
 * Calling it again returns the same descriptor.
 */
zkl_status zkl_client_event_fd(zkl_client *c, int *fd);

/*
 * Run the completions that are ready (async acquires' callbacks, and async
 * guarded writes' answers: zklock/guard.h), on the calling thread; *ran
 * (may be NULL) says how many. Call it when the event descriptor is readable (it
 * also clears its readiness). ZKL_EINVAL before zkl_client_event_fd.
 * One thread dispatches a client's completions, one at a time (a latch's
 * callbacks alternate, leader.h): while one is in zkl_client_dispatch,
 * another thread's call gives ZKL_EBUSY at once and runs nothing; a call
 * from inside a completion it runs gives ZKL_OK and runs nothing (*ran
 * 0): the outer call runs those it took, and the descriptor stays
 * readable for any queued since.
 */
zkl_status zkl_client_dispatch(zkl_client *c, int *ran);

#ifdef __cplusplus
}
#endif

#endif
