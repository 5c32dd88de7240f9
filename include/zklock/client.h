/*
 * client.h - zkl_client: one ZooKeeper session shared by any number of locks
 * and threads.
 *
 * A client owns the ZooKeeper handle and a worker thread. It reports Curator's
 * connection states to an optional callback, opens a new session by itself
 * after the old one expired (locks held through the old one are LOST and stay
 * lost), retries operations that failed by connection loss with a bounded
 * exponential backoff, and deletes lock nodes in the background when a delete
 * could not be done in the foreground.
 *
 * What a client costs: the ZooKeeper client's two threads, its socket and
 * wake-up pipe; the worker thread and an eventfd it sleeps on. In a process
 * with many clients (three for each chain of the process's futex hash: 48
 * with Linux 6.16's private hash on 2 CPUs, 128 without one), a blocking
 * acquire that has to wait holds one more eventfd while it waits (closed
 * when it returns). zklock's threads
 * sleep on eventfds rather than on condition variables so as to stay out of
 * the process's futex hash, which on Linux 6.16 and later is sized by CPUs,
 * not threads (docs/design/scale.md). If no eventfd can be had they sleep on
 * condition variables instead: nothing fails for want of one.
 *
 * LIFECYCLE AND CALLBACKS
 *
 * Who frees what, and from where:
 *  - a client: zkl_client_open makes it, zkl_client_close frees it, once,
 *    after every lock object made on it was destroyed (else ZKL_EBUSY), from
 *    a thread that is not inside one of its callbacks (else ZKL_EBUSY: close
 *    it from another thread once the callback has returned). No other
 *    thread may be inside a call on it then. The close waits at most 2 s
 *    for the ZooKeeper client to close the session, then lets that finish
 *    in the background (a server that is not ZooKeeper can keep it waiting).
 *  - a lock object (mutex, read/write lock, semaphore, semaphore mutex):
 *    *_create makes it, *_destroy frees it, from any thread, callbacks on
 *    the worker included. Destroy refuses (ZKL_EBUSY, nothing freed, the
 *    message says who) while a thread holds it, a lease or async handle of
 *    it is out, or a thread is inside a call on it (an acquire waiting, a
 *    query of the server). A call begun after destroy is the caller's bug.
 *  - an async handle (zklock/async.h): freed by zkl_op_release once its
 *    callback ran, from inside the callback too; a lease: zkl_lease_return,
 *    any thread; a multilock: zkl_multilock_destroy, and only the thread
 *    that acquired a set releases it (else ZKL_ENOTOWNER, nothing changed).
 *
 * Where callbacks run: the client's worker thread runs on_state, the lock
 * objects' state callbacks, revocation callbacks and async completions in
 * the default delivery; zkl_client_dispatch runs completions on its
 * caller's thread; the log callback (status.h) runs on any thread. None
 * runs with a lock of zklock held, but the log callback. A call made from
 * inside a callback works, or refuses at once; none frees memory in use or
 * waits for itself:
 *  - on the worker: zkl_client_close gives ZKL_EBUSY; a blocking acquire,
 *    or a drain with a timeout other than 0, gives ZKL_EDEADLOCK; the rest
 *    works (destroys, releases, cancels, queries, async acquires, dispatch,
 *    guarded writes: their reply comes on ZooKeeper's thread, not the worker);
 *  - in a completion run by zkl_client_dispatch: zkl_client_close gives
 *    ZKL_EBUSY; the rest works;
 *  - in the log callback: every call refuses, ZKL_EBUSY (false or 0 where
 *    a call returns no status), but the pure ones that status.h names.
 *
 * A blocking call on the worker would wait for the worker itself (only it
 * opens the next session after LOST), hence ZKL_EDEADLOCK: use the async
 * acquire there, or hand the work to another thread. Callbacks should not
 * block: every hold's lease is renewed on the worker.
 *
 * fork(): a client belongs to the process that opened it. In a child
 * forked while it was open, every hold of it reads as not held (is_held
 * false, tokens and leases ZKL_ELOST), releases return ZKL_ELOST and send
 * nothing, acquires, drain, zkl_client_event_fd and zkl_client_dispatch
 * give ZKL_ECLOSED, destroys free the objects whatever the parent held,
 * and zkl_client_close frees zklock's memory without joining threads that
 * are not there; the ZooKeeper client's handle and socket stay allocated
 * in the child, as its close would send the parent's session a close
 * request. The parent is not touched. A child that needs locks opens its
 * own client (after exec, or not). fork() waits, in zklock's atfork
 * handler, for each open client's worker to end its phase and for its
 * ZooKeeper replies in hand to be delivered, so that the child's copy is
 * whole: fork() from any thread or callback, but not from the log
 * callback, which may run while zklock holds the lock the handler waits for.
 */
#ifndef ZKLOCK_CLIENT_H
#define ZKLOCK_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_client zkl_client;

/* Pass as any acquire's timeout_ms to wait as long as it takes. */
#define ZKL_WAIT_FOREVER (-1)

/* Curator's connection states. */
typedef enum zkl_conn_state {
    ZKL_STATE_CONNECTED = 1,   /* the first session is connected */
    ZKL_STATE_SUSPENDED = 2,   /* connection lost; the session may still live */
    ZKL_STATE_RECONNECTED = 3, /* connected again (same session, or a new one after LOST) */
    ZKL_STATE_LOST = 4,        /* the session is gone: every lock held through it is lost */
    /*
     * The lease of the session's holds ran out unrenewed (the server may
     * expire the session soon, and nothing has shown it will not): every
     * hold through it reads as not held from that moment, before the server
     * could have expired the session. The client then ends that session
     * (LOST follows) so that its nodes go when the server hears of it.
     */
    ZKL_STATE_LEASE_EXPIRED = 5,
} zkl_conn_state;

/* Name of a state ("CONNECTED", ...); never NULL. */
const char *zkl_conn_state_name(zkl_conn_state st);

/*
 * Called on the client's own worker thread (never the ZooKeeper I/O thread),
 * once per transition, in order. What it may call: "Lifecycle and
 * callbacks" above (zkl_client_close refuses there, and so does any call
 * that would wait for the worker); it should not block long.
 */
typedef void (*zkl_state_fn)(zkl_client *c, zkl_conn_state st, void *userdata);

/* ZooKeeper permission bits, for zkl_acl.perms. */
#define ZKL_PERM_READ 1
#define ZKL_PERM_WRITE 2
#define ZKL_PERM_CREATE 4
#define ZKL_PERM_DELETE 8
#define ZKL_PERM_ADMIN 16
#define ZKL_PERM_ALL 31

/*
 * One ACL entry, as ZooKeeper has them: scheme "world" id "anyone"; scheme
 * "auth" id "" (the identities this session authenticated as, e.g. by
 * auth_digest); scheme "digest" id "user:base64(sha1(user:password))";
 * scheme "ip" id "10.0.0.0/8".
 */
typedef struct zkl_acl {
    int perms;
    const char *scheme;
    const char *id;
} zkl_acl;

/* Most node_data zkl_client_open takes: a server's default jute.maxbuffer
 * (1 MiB) bounds a whole create request, path and ACL included. */
#define ZKL_NODE_DATA_MAX (1024 * 1024 - 4096)

/*
 * The session timeouts zkl_client_open takes (ZKL_EINVAL outside): at 1 ms
 * the ZooKeeper C client 3.8 never connects, and from 2^30 ms on it overflows; a
 * server grants no less than 2 ticks anyway. The server grants a value
 * within its own bounds (by default 2 and 20 ticks; see
 * zkl_client_session_timeout).
 */
#define ZKL_SESSION_TIMEOUT_MIN_MS 100
#define ZKL_SESSION_TIMEOUT_MAX_MS (24 * 3600 * 1000)

typedef struct zkl_client_options {
    int session_timeout_ms; /* asked of the server, 100 ms to 24 h; default 10000 */
    int connect_timeout_ms; /* zkl_client_open waits this long; default 15000 */
    /*
     * Connection losses, and requests a busy server throttled (ZooKeeper's
     * ZTHROTTLEDOP: not applied, try later), are retried with an
     * exponential backoff, at most retry_max_ms apart. A wait (an acquire,
     * blocking or async, of any timeout) retries until its own timeout, for
     * as many tries as that takes: retry_max does not bound it, and if its
     * session is lost it queues again in the next one; ZKL_WAIT_FOREVER
     * ends only with a cancel or a close. retry_max bounds the calls that
     * have no timeout of their own, the queries (zkl_inspect_*,
     * zkl_leader_get) and a revocation request (zkl_revoke_*): within the
     * connect timeout, after retry_max retries, they give ZKL_ECONNLOSS.
     * No option stretches a timeout.
     */
    int retry_base_ms;     /* first backoff after a loss or throttle; default 50 */
    int retry_max_ms;      /* backoff cap; default 1000 */
    int retry_max;         /* retries of one operation before ZKL_ECONNLOSS; default 10 */
    zkl_state_fn on_state; /* optional connection-state callback */
    void *state_userdata;
    const char *auth_digest; /* optional "user:password" sent as digest auth */
    /* Data of lock nodes (copied; at most ZKL_NODE_DATA_MAX bytes); NULL means
     * Curator's default, the local IPv4 address as text. */
    const void *node_data;
    size_t node_data_len;
    /*
     * ACL of every node zklock creates (lock nodes and the parents it makes),
     * like Curator's ACLProvider; NULL means open to all. Deleting a node
     * needs DELETE on its parent and revoking needs WRITE on the node, so
     * e.g. {ALL, "auth", ""} + {READ, "world", "anyone"} with auth_digest
     * lets only that identity take part, steal or revoke. Copied.
     */
    const zkl_acl *acl;
    size_t acl_len;
    /*
     * How long before the earliest moment the server could expire the
     * session a hold's lease ends (see zkl_client_lease_end): covers
     * clock-rate drift and the time to stop. 0 (the default) means a tenth
     * of the granted session timeout plus 200 ms. At most a quarter of
     * session_timeout_ms.
     */
    int lease_margin_ms;
    /*
     * For an ensemble: syncLimit x tickTime + tickTime/2 of its servers, in
     * ms; 0 for a standalone server. A follower tells the leader of a
     * session's activity only in its answers to the leader's pings, so the
     * leader's view can lag the client's proof by this much plus one
     * renewal interval, which the lease then gives up (docs/lease.md).
     * margin + lag must fit in a quarter of session_timeout_ms.
     *
     * ZKL_ENSEMBLE_LAG_FIND (the default) asks the server the session first
     * connects to, at open, with the `conf` four-letter word (a connection
     * of its own, at most ZKL_CONF_WAIT_MS): a member of an ensemble gives
     * its lag, a standalone server 0. A found lag that does not fit is
     * refused with ZKL_EINVAL, as a given one is. A server whose
     * 4lw.commands.whitelist leaves conf out (the default since ZooKeeper
     * 3.5.3, which allows only srvr) is asked `srvr`: one that says it is
     * standalone has a lag of 0. One that says it is a member of an
     * ensemble, or answers neither, leaves the lag unknown: the client
     * opens (queries and observers work), but every acquire refuses with
     * ZKL_EINVAL and a message saying how to set the lag, since no lease
     * could be bounded (safe by default: docs/lease.md, "When the server
     * will not say"); zklock logs that once per process (ZKL_LOG_WARN).
     * zkl_client_ensemble_lag tells which of these happened.
     */
    int ensemble_lag_ms;
} zkl_client_options;

/* ensemble_lag_ms: ask the server at open (see above). */
#define ZKL_ENSEMBLE_LAG_FIND (-1)
/* The longest the open waits for the server's `conf` answer, in ms. */
#define ZKL_CONF_WAIT_MS 2000

/* Fill opts with the defaults above. */
void zkl_client_options_init(zkl_client_options *opts);

/*
 * Open a client on a connect string "host:port[,host:port...][/chroot]" and
 * wait until the session is connected or connect_timeout_ms has passed.
 * opts may be NULL for the defaults; its strings are copied.
 * On success *out is a new client the caller owns (zkl_client_close).
 * Errors: ZKL_EINVAL (NULL or malformed arguments, including a connect
 * string the ZooKeeper client cannot parse or with a port above 65535, and
 * node_data above ZKL_NODE_DATA_MAX), ZKL_ECONNECT (no server answered in
 * time), ZKL_EAUTH, ZKL_ENOMEM, ZKL_ESYS.
 */
zkl_status zkl_client_open(const char *connect, const zkl_client_options *opts, zkl_client **out);

/*
 * Close the session (the server deletes its lock nodes at once) and free the
 * client. Every lock object made on it must have been destroyed first:
 * otherwise ZKL_EBUSY and nothing is closed; so too from inside a callback
 * of this client. No other thread may be inside a call on this client.
 * NULL gives ZKL_EINVAL. Waits at most 2 s for the ZooKeeper client's own
 * close (see "Lifecycle and callbacks").
 */
zkl_status zkl_client_close(zkl_client *c);

/* Last state reported (ZKL_STATE_CONNECTED after a successful open). */
zkl_conn_state zkl_client_state(zkl_client *c);

/* The current session id (0 while none is established, or c is NULL). */
int64_t zkl_client_session_id(zkl_client *c);

/* The session timeout the server granted, in ms (0 if unknown). */
int zkl_client_session_timeout(zkl_client *c);

/* The longest name zkl_client_set_name takes, in bytes. */
#define ZKL_CLIENT_NAME_MAX 64

/*
 * Name c in its metrics (zklock/metrics.h): the value of their client
 * label, which is otherwise c's number among the process's opens (1, 2,
 * ...). 1 to ZKL_CLIENT_NAME_MAX printable ASCII characters, not all
 * digits, and no other open client's; the name is copied, and may be set
 * again. Errors: ZKL_EINVAL (NULL, a bad name, or one in use), ZKL_ENOMEM,
 * ZKL_ECLOSED (in a fork()ed child). Any thread.
 */
zkl_status zkl_client_set_name(zkl_client *c, const char *name);

/*
 * In-process hints. When several clients of one process wait for one mutex
 * (threads with a client each, or an event loop's), what one of them
 * learns spares the others requests: a node granted here hands the lock to
 * the waiter behind it without a listing, a joiner finds the node just
 * ahead of its own without one, and the joiners of one burst await the
 * note of the node ahead rather than list (docs/design/scale.md). Across
 * processes there is nothing to share and nothing changes. Only requests
 * are spared: what a grant rests on is the same either way.
 *
 * On by default; ZKL_PROCESS_HINTS=off (or 0) in the environment at open
 * turns them off for that client (a value other than on, off, 1 or 0 fails
 * the open with ZKL_EINVAL). zkl_client_set_process_hints turns them on (1)
 * or off (0) for the acquires c starts from then on; it gives ZKL_EINVAL
 * for NULL or another value. zkl_client_process_hints says which (-1 for
 * NULL). Any thread, any time.
 */
zkl_status zkl_client_set_process_hints(zkl_client *c, int on);
int zkl_client_process_hints(zkl_client *c);

/* Where the lease's ensemble lag came from (zkl_client_ensemble_lag). */
typedef enum zkl_lag_source {
    ZKL_LAG_GIVEN = 0,   /* ensemble_lag_ms as the caller gave it (0: standalone) */
    ZKL_LAG_FOUND = 1,   /* read from the server's `conf`, or its `srvr` said standalone (0) */
    ZKL_LAG_UNKNOWN = 2, /* the server would not say: acquires refuse (ZKL_EINVAL) */
    /* the name of 0.1.0, when an unknown lag was taken as 0 (a standalone
     * server) with a warning; kept so that old sources build */
    ZKL_LAG_ASSUMED = ZKL_LAG_UNKNOWN,
} zkl_lag_source;

/*
 * The ensemble lag c's lease gives up, in ms, and in *source (may be NULL)
 * where it came from. -1 if c is NULL.
 */
int zkl_client_ensemble_lag(zkl_client *c, zkl_lag_source *source);

/*
 * Wait until every lock node delete this client started is done: releases
 * (which return before the server confirms) and deletes queued for
 * background retry; or timeout_ms passes (ZKL_ETIMEDOUT). For tests, tools
 * and orderly shutdown. On the client's worker (inside a callback) a
 * timeout other than 0 gives ZKL_EDEADLOCK: the worker does those deletes.
 */
zkl_status zkl_client_drain(zkl_client *c, int timeout_ms);

/*
 * Cancel every wait on this client, now and from now on: acquires in progress
 * or started later return ZKL_ECANCELED, deleting their nodes first. Held
 * locks stay held and can still be released. For orderly shutdown (a signal
 * handler's thread, a service stopping); callable from any thread, but not
 * from an async signal handler.
 */
zkl_status zkl_client_cancel(zkl_client *c);

/*
 * The lease of the client's holds: *boot_ms is the CLOCK_BOOTTIME time (ms,
 * as clock_gettime(CLOCK_BOOTTIME) gives it) before which the server cannot
 * have expired the current session, less the lease margin. Renewed every
 * third of the session timeout while anything is held or being acquired.
 * ZKL_ELOST if the session has no good lease (none yet, ran out, or lost).
 * Before a side effect that must not outlive the lock, check the time left
 * (or a hold's own query, e.g. zkl_mutex_lease_remaining).
 */
zkl_status zkl_client_lease_end(zkl_client *c, int64_t *boot_ms);

/* Counters since the client was opened (for benchmarks and monitoring). */
typedef struct zkl_client_stats {
    uint64_t requests;     /* ZooKeeper requests sent by zklock */
    uint64_t watch_events; /* watch notifications received (not session events) */
    uint64_t sessions;     /* sessions opened (1 + replacements after LOST) */
    uint64_t bg_deletes;   /* deletes that had to be finished in the background */
} zkl_client_stats;

zkl_status zkl_client_stats_get(zkl_client *c, zkl_client_stats *out);

/* Free a string array returned by zklock (participant lists). NULL is fine. */
void zkl_strings_free(char **v, size_t n);

#ifdef __cplusplus
}
#endif
#endif
