/*
 * leader.h - leader election: a latch in one election with Curator's
 * LeaderLatch, leadership bound by the lease, a token per term, and an
 * observer for processes that only watch.
 *
 * A latch joins the election at path with a participant id (its node's
 * data, UTF-8, may be empty): a protected ephemeral-sequential node
 * path/_c_<uuid>-latch-<seq> under container parents, as Curator's
 * LeaderLatch makes it, so C and Java processes take part in one election.
 * The node that sorts first (by the text after its last "latch-") leads;
 * every other watches the node just before its own.
 *
 * Leadership is a hold of the lock core (zklock/async.h's handles), and
 * ends as a hold does:
 *  - zkl_latch_is_leader reads true only while the hold's lease is valid
 *    (zkl_mutex_lease_remaining): it turns false before the server could
 *    expire the session, and a disconnect shorter than the lease does not
 *    end leadership (no flapping on every SUSPENDED);
 *  - the leader watches its own node: a delete of it (an operator's)
 *    ends leadership as soon as the delete is seen; after a reconnect the
 *    server answers for the watch again (ZooKeeper sets it again, and
 *    tells a delete made meanwhile), so a node deleted while the leader
 *    was cut off ends its term as soon as it is connected again, never
 *    later. (Its node intact, no node can sort before it: sequence
 *    numbers only rise, and a container parent goes only when empty.)
 *  - a participant is made leader only with its node proven there: by a
 *    listing, or, when the node ahead goes, by the watch it keeps on its
 *    own node from the moment it is next (set in one batch with the watch
 *    on the node ahead; the session's events come in the order of the
 *    changes). A waiter whose node an operator deleted joins again behind
 *    the others rather than lead beside the next (Curator's LeaderLatch
 *    lists and checks its node's owner, CURATOR-696). Deleting the
 *    leader's own node still makes two leaders, for as long as the delete
 *    takes to reach it: nobody deletes the nodes, is the assumption;
 *  - when leadership ends unasked, the callback is told
 *    ZKL_LEADER_LEASE_ENDED (the lease ran out: the server may not have
 *    expired the session yet, but another participant may lead as soon as
 *    it does) or ZKL_LEADER_LOST (the session is gone, or the node was
 *    deleted), and the latch joins again at once with a new node.
 *
 * The token of a term is the czxid of the leader's node: it rises strictly
 * from term to term (a new term is a new node), and stays the same for the
 * whole term. Give it to a resource that can check fencing tokens; for state
 * in ZooKeeper, zkl_latch_guarded_write writes only while the term lasts.
 * Caveat of Curator's sort: nodes sort by their 10-digit sequence as text,
 * so after the parent's sequence counter wraps at 2^31 the order breaks
 * (in Curator's latches too); the token (a zxid) does not wrap.
 *
 * What is guaranteed, and on what it rests: at most one participant of
 * zklock reads zkl_latch_is_leader true at any moment of this machine's
 * clock (CLOCK_BOOTTIME; across machines, of each one's), and a guarded
 * write lands only while its term's node exists in ZooKeeper's history.
 * The first rests on three assumptions: clock rates that differ by less
 * than 0.1% between client and server (the lease's margin covers that
 * much: docs/lease.md); the ensemble lag (ensemble_lag_ms, read from the
 * server or given, 0 for a standalone server) at least as long as a
 * follower may take to report a session's touches to the leader
 * (syncLimit x tickTime + tickTime / 2); and nobody deleting the election's
 * nodes by hand (a leader's node deleted lets the next lead before the old
 * one hears of it; a waiter's node deleted no longer matters). A Curator
 * LeaderLatch beside zklock's is judged by its own rules (it drops
 * leadership on SUSPENDED, and keeps no lease).
 *
 * Threads and callbacks: the callback is delivered as async acquires'
 * completions are (zklock/async.h: on the client's worker, or by
 * zkl_client_dispatch after zkl_client_event_fd), with no lock held, and
 * GAINED and an end of leadership strictly alternate, starting with
 * GAINED. It may call any function of the latch (zkl_latch_leave,
 * zkl_latch_destroy: the latch is freed when the callback returns) but not
 * zkl_latch_await (ZKL_EDEADLOCK) or zkl_client_close (ZKL_EBUSY). No
 * callback runs after zkl_latch_destroy returns: one running on another
 * thread is waited out.
 *
 * Metrics (zklock/metrics.h): per client, path and side ("latch" or
 * "selector"), terms begun and ended by how, time as leader, the vacancy
 * each new leader saw, and the running term and its token.
 */
#ifndef ZKLOCK_LEADER_H
#define ZKLOCK_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "guard.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zkl_latch zkl_latch;

typedef enum zkl_leader_event {
    ZKL_LEADER_GAINED = 1,      /* this participant leads; token is the term's */
    ZKL_LEADER_LOST = 2,        /* leadership ended: the session is gone, or the node deleted */
    ZKL_LEADER_LEASE_ENDED = 3, /* leadership ended: the lease ran out, before any expiry */
    ZKL_LEADER_LEFT = 4,        /* ended as asked: zkl_latch_leave(NOTIFY), zkl_latch_yield */
} zkl_leader_event;

/* Name of an event ("GAINED", ...); never NULL. */
const char *zkl_leader_event_name(zkl_leader_event ev);

/* Told of leadership gained and ended; token: the term's (of the term that ends, for an end). */
typedef void (*zkl_leader_fn)(zkl_latch *l, zkl_leader_event ev, int64_t token, void *userdata);

/*
 * A latch for the election at path (validated as lock paths are), with
 * participant id (NULL: empty; at most ZKL_NODE_DATA_MAX bytes). It does
 * not take part until zkl_latch_start. ZKL_EINVAL, ZKL_EBADPATH,
 * ZKL_ENOMEM, ZKL_ECLOSED.
 */
zkl_status zkl_latch_create(zkl_client *c, const char *path, const char *id, zkl_latch **out);

/*
 * Join the election (Curator's start): returns at once; fn (may be NULL)
 * is told of leadership as it comes and goes, until zkl_latch_leave.
 * ZKL_EBUSY if the latch already takes part; ZKL_ENOMEM, ZKL_ECLOSED.
 */
zkl_status zkl_latch_start(zkl_latch *l, zkl_leader_fn fn, void *userdata);

/*
 * Wait until this latch leads, up to timeout_ms (ZKL_WAIT_FOREVER: no
 * limit): ZKL_OK (it leads now), ZKL_ETIMEDOUT (its message names a child
 * ahead in line that is not a participant's, if one blocks the election),
 * ZKL_ECANCELED (it left, or
 * never started), or the failure that made it stop taking part on its own
 * (joining again after a lost leadership or a failed wait could not start:
 * ZKL_ENOMEM, ZKL_ECLOSED; or its wait was refused as set up, ZKL_EINVAL:
 * no lease can be bounded, zklock/client.h's ensemble_lag_ms), with its
 * message. ZKL_EDEADLOCK from the client's worker or inside any
 * callback of the client; with descriptor delivery, leadership is noted
 * when zkl_client_dispatch runs the report, so wait on another thread than
 * the loop's.
 */
zkl_status zkl_latch_await(zkl_latch *l, int timeout_ms);

/*
 * A participant of Curator's LeaderSelector election at path: the same
 * latch over the mutex's layout (LeaderSelector is an InterProcessMutex
 * whose nodes, path/_c_<uuid>-lock-<seq>, carry the id), so C processes and
 * Curator's LeaderSelectors share one election. Every zkl_latch_ call
 * applies. The leader's work runs while it leads, as takeLeadership does:
 * told GAINED, it works; zkl_latch_leave ends the work as takeLeadership's
 * return does, zkl_latch_yield(l, 0) as its return under autoRequeue (join
 * again at the back of the line). An end it did not ask for is told as for
 * a latch (LEASE_ENDED, LOST), and the work must stop then: its flag is
 * zkl_latch_is_leader, which turns false before the server could expire
 * the session. Errors as zkl_latch_create.
 */
zkl_status zkl_selector_create(zkl_client *c, const char *path, const char *id, zkl_latch **out);

/*
 * Give up leadership and join again after backoff_ms (0 to 3600000; druid's
 * "artificial pause"): the node is deleted, the callback told
 * ZKL_LEADER_LEFT, and a new node made at the back of the line once the
 * back-off is over (a leave meanwhile cancels it). ZKL_ENOTOWNER if the
 * latch does not lead; ZKL_EINVAL.
 */
zkl_status zkl_latch_yield(zkl_latch *l, int backoff_ms);

/* Whether this latch leads now: its hold is granted, and its lease valid. */
bool zkl_latch_is_leader(zkl_latch *l);

/* The current term's token (the czxid of the node): ZKL_ENOTOWNER if it does not lead. */
zkl_status zkl_latch_token(zkl_latch *l, int64_t *token);

/* The full path of this latch's node while it leads (malloc'd): ZKL_ENOTOWNER if it does not. */
zkl_status zkl_latch_node(zkl_latch *l, char **node);

/*
 * A guarded write (zklock/guard.h) of the current term: ZKL_ENOTOWNER if it
 * does not lead. ZKL_ELOST (the term's node is gone, as the server or the
 * client knows) ends the term before the call returns: the latch no longer
 * leads, the callback is told ZKL_LEADER_LOST, and it joins again.
 */
zkl_status zkl_latch_guarded_write(zkl_latch *l, zkl_write *w, size_t n, size_t *failed);

/* How zkl_latch_leave ends a leadership (Curator's CloseMode). */
enum {
    ZKL_LATCH_SILENT = 0, /* the callback is not told */
    ZKL_LATCH_NOTIFY = 1, /* the callback is told ZKL_LEADER_LEFT, if it led */
};

/*
 * Leave the election (Curator's close): a wait is canceled, a leadership
 * ends (its node deleted, as a release deletes it); mode says whether the
 * callback hears of it. The latch may start again, at once (a canceled
 * wait's report, still on its way, is set aside). ZKL_OK also if it took
 * no part; ZKL_EINVAL for a NULL latch or an unknown mode.
 */
zkl_status zkl_latch_leave(zkl_latch *l, int mode);

/*
 * Leave silently and free the latch. From inside its own callback, it is
 * freed when the callback returns; a callback running on another thread is
 * waited out. A wait whose cancel is still on its way keeps the object
 * until its report is in: zkl_client_close refuses (ZKL_EBUSY) until then
 * (with descriptor delivery, dispatch). ZKL_EBUSY while a thread is in
 * zkl_latch_await on it.
 */
zkl_status zkl_latch_destroy(zkl_latch *l);

/* The current leader of the election at path, as one listing shows it. */
typedef struct zkl_leader {
    bool present;   /* false: no leader (nobody takes part) */
    char *id;       /* its participant id (NUL-terminated copy of the node's data) */
    size_t id_len;  /* the data's length */
    int64_t token;  /* its node's czxid: the term's token */
    char *node;     /* its node's full path */
    size_t members; /* participants in the listing, the leader included */
} zkl_leader;

/*
 * Observe the election at path without taking part: its leader, or
 * present false. Works for zklock's latches and Curator's LeaderLatch
 * (latch- nodes), and for Curator's LeaderSelector and zklock's mutex
 * (lock- nodes with the id as data). The first node is the leader as the
 * participants judge it; a Curator LeaderLatch that dropped leadership on
 * SUSPENDED (its default) keeps its node, so it is observed as leader
 * while not acting as one, until its session ends or it rejoins. Where
 * latch- nodes are, the election is theirs: other recipes' nodes under the
 * path (a mutex held there) are neither leader nor members. Each node is
 * judged as its own recipe sorts the line. A listing whose head went before
 * it was read (a hand-off) is taken again, so that participants with no
 * leader are not reported mid hand-off (a child in the way that is not a
 * participant's still gives no leader). zkl_leader_clear frees what *out
 * holds.
 */
zkl_status zkl_leader_get(zkl_client *c, const char *path, zkl_leader *out);
void zkl_leader_clear(zkl_leader *leader);

typedef struct zkl_observer zkl_observer;

/*
 * Told of the election's leader: st ZKL_OK with leader the one now
 * (present false: none, a vacancy), valid during the call only; or the
 * observer stopped on its own (st the reason, msg its message: ZKL_ECANCELED
 * after zkl_client_cancel, or a server's refusal), the last call, after
 * which it must still be destroyed. msg is "" for ZKL_OK.
 */
typedef void (*zkl_observe_fn)(zkl_observer *o, zkl_status st, const char *msg,
                               const zkl_leader *leader, void *userdata);

/*
 * Observe the election at path as it changes (Curator's listeners, etcd's
 * Observe): fn is told the leader as zkl_leader_get judges it (the same
 * elections: zklock's and Curator's latches, selectors, a mutex's holder),
 * first what is there now, then each new leader (a new node heads the
 * line: id, token and node) and each vacancy, until zkl_observer_destroy.
 * Two leaders in a row are never the same node; a term that begins and
 * ends between two looks is not told.
 *
 * Cost: each change costs the observer one listing and one watch, on the
 * head of the line only (no herd: joins and leaves behind the head wake no
 * observer); an empty election is watched by its child list, or, with its
 * parent gone (a container parent goes when empty), by an exists watch on
 * the path. While the client is cut off, nothing is told (the last told
 * stands); when it is back, the observer looks again and tells any change;
 * a session that ends takes the watch with it, and the observer looks
 * again in the next.
 *
 * Threads and callbacks: fn runs as async completions do (zklock/async.h:
 * on the client's worker, or by zkl_client_dispatch after
 * zkl_client_event_fd), one call at a time, in the order seen, with no
 * lock held. It may call zkl_observer_destroy on its own observer (freed
 * when the callback returns), and the rest as from an async completion
 * (zklock/client.h, "Lifecycle and callbacks": on the worker a blocking
 * acquire gives ZKL_EDEADLOCK; zkl_client_close gives ZKL_EBUSY everywhere
 * inside). The observer counts as a lock object:
 * zkl_client_close refuses while it lives. In a fork()ed child it tells
 * nothing; destroy frees it.
 *
 * ZKL_EINVAL (a NULL argument), ZKL_EBADPATH, ZKL_ENOMEM, ZKL_ECLOSED (the
 * client of a parent process).
 */
zkl_status zkl_leader_observe(zkl_client *c, const char *path, zkl_observe_fn fn, void *userdata,
                              zkl_observer **out);

/*
 * Stop observing and free the observer: no callback runs after it returns
 * (one running on another thread is waited out); from inside its own
 * callback, it is freed when the callback returns. Off the worker, outside
 * callbacks and without descriptor delivery, it also waits (a round trip,
 * at most 10 s) for the observer's steps to end, so that
 * the client can close at once; elsewhere the observer goes when they end,
 * on the worker (with descriptor delivery, a telling still queued is
 * dropped at the next zkl_client_dispatch, and zkl_client_close refuses,
 * ZKL_EBUSY, until then). ZKL_EINVAL for NULL.
 */
zkl_status zkl_observer_destroy(zkl_observer *o);

#ifdef __cplusplus
}
#endif

#endif
