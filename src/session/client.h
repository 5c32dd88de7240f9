/*
 * client.h - the session layer: struct zkl_client as every layer above sees
 * it (the lock, the conditions, the current ZooKeeper session), sessions with
 * reference counts and epochs, Curator's connection events, and watch tokens.
 *
 * What the services above keep (cleanup, revocation, lease) is theirs: the
 * client only points at it, and the session layer reaches it through the
 * hooks, which zkl_client_open sets (the calls outward of hiredis's adapters).
 *
 * Threading: c->mu guards every field below and the services' state. A
 * ZooKeeper delivery (session/transport.c) only takes c->mu briefly to record an event and
 * broadcast c->cv; it runs no user code, and makes no ZooKeeper call but
 * one: the asynchronous send of a session's next shared listing
 * (requests/pending.c). User
 * callbacks and session replacement run on the client's worker thread.
 */
#ifndef ZKL_SESSION_CLIENT_H
#define ZKL_SESSION_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <zookeeper/zookeeper.h>

#include "base/tuning.h"
#include "session/delivery.h"
#include "zklock/client.h"

typedef struct zkl__watch zkl__watch;

/* The kinds of ZooKeeper request zklock sends (counted per client, for metrics). */
#define ZKL__REQ_KIND_NAMES(X)                                                                     \
    X(CREATE, "create")                                                                            \
    X(MULTI, "multi")                                                                              \
    X(DELETE, "delete")                                                                            \
    X(LIST, "list")                                                                                \
    X(EXISTS, "exists")                                                                            \
    X(GET, "get")                                                                                  \
    X(SET, "set")                                                                                  \
    X(SYNC, "sync")
typedef enum zkl__req_kind {
#define ZKL__REQ_KIND_ENUM(k, name) ZKL__REQ_##k,
    ZKL__REQ_KIND_NAMES(ZKL__REQ_KIND_ENUM)
#undef ZKL__REQ_KIND_ENUM
        ZKL__REQ_KINDS
} zkl__req_kind;

/* One ZooKeeper session (one zhandle). Replaced as a whole after expiry. */
typedef struct zkl__session {
    zhandle_t *zh;
    struct zkl_client *c;
    uint64_t epoch;      /* 1, 2, ... : which session of this client */
    int64_t id;          /* server session id, once connected */
    int refs;            /* the client's own reference + callers inside a call */
    bool expired;        /* the server said so, or it was lost locally */
    bool retired;        /* no longer the client's current session */
    zkl__watch *watches; /* tokens the ZooKeeper client may still call (utlist) */
    /* the requests layer's shared listings (requests/pending.c): made at the
     * session's first, closed and freed through the hooks lists_closing and
     * lists_free when the session is destroyed */
    struct zkl__lists *_Atomic lists;
    /* the transport's (session/transport.h): the handle's mutex, and the
     * poller's list of live handles and what it last polled for */
    pthread_mutex_t zmu;
    struct zkl__session *lnext, *lprev;
    bool listed;
    int polled_fd, polled_interest;
    int entered_state; /* the handle's state when the call inside enter began (under zmu) */
    /* the handle's watcher (session.c's): told of a link the client dropped silently */
    watcher_fn watcher;
    /* its watcher's events, deferred (session.c): a slot is taken while
     * its flag is set, from the watcher to the delivery's first line.
     * Numbered in the watcher, in the handle's order (events_made); one
     * delivered after a later one was applied (events_applied, under c->mu)
     * is stale and dropped: deliveries from different threads can pass. */
    zkl__delivery events[ZKL_SESSION_EVENTS_HELD];
    atomic_bool event_held[ZKL_SESSION_EVENTS_HELD];
    atomic_uint events_made;
    unsigned events_applied;
    zkl__zk_owned *owned; /* what unfired watches own (zkl__zk_owned_set), under zmu */
} zkl__session;

/* A watch registration: shared by the waiter and the ZooKeeper client. */
struct zkl__watch {
    zkl__session *s; /* (its client: s->c; the session frees its tokens) */
    int refs;
    bool fired;
    bool deleted; /* the event was the watched node's deletion */
    /* told when it fires (c->mu held): the engine readies the op it wakes */
    void (*notify_locked)(void *arg);
    void *notify_arg;
    zkl__delivery fire; /* its firing, deferred (session/transport.h) */
    zkl__watch *prev, *next;
};

typedef struct zkl__event {
    zkl_conn_state state;
    uint64_t epoch; /* the session it is about */
} zkl__event;

/* A recipe's interest in state changes (lost-lock notices). */
typedef void (*zkl__listener_fn)(zkl_conn_state st, uint64_t epoch, void *ctx);
typedef struct zkl__listener {
    zkl__listener_fn fn;
    void *ctx;
    int id;
    bool removed;
} zkl__listener;

/*
 * Calls outward from the lower layers to the services, set once by
 * zkl_client_open before the first session opens. A NULL hook is skipped.
 */
typedef struct zkl__hooks {
    /* requests: a request is about to go out (held-back deletes ride first) */
    void (*before_send)(struct zkl_client *c);
    /* requests: a request routed through the leader, sent at sent_boot_ms
     * (zkl__boot_ms) on session epoch, was answered with rc; takes c->mu */
    void (*answered)(struct zkl_client *c, uint64_t epoch, int64_t sent_boot_ms, int rc);
    /* session: a new session became c->conn.sess (c->mu held) */
    void (*installed_locked)(struct zkl_client *c);
    /* session: s's handle is closed: the ZooKeeper client will call nothing
     * of it again (c->mu held) */
    void (*closed_locked)(struct zkl_client *c, zkl__session *s);
    /* session, client: the connection state changed, or the client was
     * canceled or is closing: waits must look again (c->mu held) */
    void (*changed_locked)(struct zkl_client *c);
    /* client: the engine's worker phase (core/engine/engine.c), set by the core
     * with its first operation (c->mu held; as the phases of worker.c) */
    int64_t (*engine_turn)(struct zkl_client *c, int64_t now_us);
    /* client: free the engine's state at close (nothing outstanding) */
    void (*engine_free)(struct zkl_client *c);
    /* session: LOST or LEASE_EXPIRED of session epoch is being told: the
     * holds of that session end now in the metrics (c->mu held) */
    void (*holds_lost_locked)(struct zkl_client *c, uint64_t epoch, bool lease_expired);
    /* client: free the metrics' series and tallies at close (core/objects/series.h, stats.h) */
    void (*series_free)(struct zkl_client *c);
    /* session: s is being destroyed and its handle is about to close: the
     * requests layer sends no more on it (no lock held) */
    void (*lists_closing)(zkl__session *s);
    /* session: s's handle is closed (every request answered): free what the
     * requests layer kept for it (no lock held) */
    void (*lists_free)(zkl__session *s);
} zkl__hooks;

struct zkl__cleanup; /* services/cleanup.h */
struct zkl__revs;    /* services/revoke.h */
struct zkl__lease;   /* services/lease.h */
struct zkl__engine;  /* core/engine/engine.c */

/*
 * The client is the parts below, each kept by one owner, and the few
 * fields that tie them together. DESIGN: which lock guards what.
 *  - c->mu guards every part but the poller's queue and the listeners
 *    (below, each with its own mutex), and the set-up, which is written
 *    at open before any other thread runs and only read after (but
 *    process_hints, an atomic); the counters of requests are atomics,
 *    counted without any lock.
 *  - The lock order of the library is in docs/ARCHITECTURE.md ("Lock
 *    order"); a part's mutex says where it sits there.
 */

/* What zkl_client_open was given and found (client/client.c): read-only
 * once open returns. */
typedef struct zkl__setup {
    char *connect;
    zkl_client_options opts;
    char *auth_digest;
    char *node_data;
    int node_data_len;
    struct ACL_vector acl;     /* for every create; ZOO_OPEN_ACL_UNSAFE when empty */
    zkl_lag_source lag_source; /* opts.ensemble_lag_ms: given, found or unknown (set at open) */
    char lag_note[160];        /* unknown: why, for the acquires' refusal */
    /* acquires started from now on use the in-process room (core/engine/room.h):
     * zkl_client_set_process_hints, ZKL_PROCESS_HINTS (the one field set later) */
    _Atomic bool process_hints;
} zkl__setup;

/* The session and the connection's state (session/session.c, session/events.c),
 * under c->mu. */
typedef struct zkl__conn {
    zkl__session *sess;
    zkl__session *pending; /* being opened: its events count before it is installed */
    uint64_t next_epoch;
    uint64_t state_gen; /* bumped on every connection event */
    uint64_t connects;  /* bumped on every CONNECTED and RECONNECTED */
    int64_t suspended_at;
    int granted_timeout;  /* the session timeout the server granted (ms), 0 before */
    zkl_conn_state state; /* the last told */
    zkl__event evq[ZKL_EVQ_MAX];
    int evq_head, evq_len;
    bool connected;
    bool ever_connected;
    _Atomic uint64_t lease_expired_epoch; /* the last session whose lease ran out */
} zkl__conn;

/* The worker thread (client/worker.c; its kick and alarm: session/worker_link.c),
 * under c->mu. */
typedef struct zkl__worker_state {
    pthread_t thread;
    bool started;
    pthread_cond_t cv; /* the worker's own: work queued for it, state change, closing */
    /* the zkl__now_us() time the sleeping worker wakes at; 0 while it runs
     * (a phase that lets go of mu starts the loop over when it is back) */
    int64_t wake_us;
    int wfd; /* the eventfd the worker sleeps on in ppoll (-1: on cv) */
    int afd; /* its alarm, a timerfd beside wfd (-1: none; base/wakefd.h) */
    /* the time afd is set to while the worker sleeps on it, else 0: its own
     * wake-up, or earlier for a held-back delete (zkl__worker_alarm_locked) */
    int64_t alarm_us;
    bool kicked;    /* wfd written since the worker went to sleep */
    uint64_t wakes; /* sleeps it woke from, for whatever reason (tests count them) */
} zkl__worker_state;

/* The poller (session/transport.c). */
typedef struct zkl__poller_state {
    pthread_t thread;
    bool started, stop;           /* stop: under c->mu */
    int fd;                       /* its eventfd */
    void (*put)(zkl__session *s); /* lets go of a session it polled */
    zkl__session *live;           /* the handles it polls, under c->mu */
    pthread_mutex_t dq_mu;        /* guards dq_head, dq_tail: a leaf */
    struct zkl__delivery *dq_head, *dq_tail;
    /* held by the poller from its poll's end through the deliveries it runs;
     * a fork() waits a round out (client/fork.c). Made and freed with c->mu,
     * taken above it. */
    pthread_mutex_t round_mu;
} zkl__poller_state;

/* What the metrics and zkl_client_stats_get count (core/objects/series.c,
 * stats.c, metrics.c), under c->mu but the atomics. */
typedef struct zkl__tally {
    /* requests is atomic as calls are sent without c->mu, and so are its
     * split by kind (zkl__count_request) and the lost sessions */
    _Atomic uint64_t requests;
    _Atomic uint64_t req_kind[ZKL__REQ_KINDS];
    _Atomic uint64_t sessions_lost;
    uint64_t watch_events, sessions;
    double created;              /* when it was opened, Unix seconds (the metrics' _created) */
    struct zkl__holdmark *marks; /* the live holds' tallies (core/objects/stats.c) */
    struct zkl__series *series;  /* what the metrics count into (core/objects/series.h) */
    int series_idle;             /* of them, those no live object counts into */
    uint64_t series_clock;       /* counts series going idle: their eviction order */
    char *name;                  /* the metrics' client label (zkl_client_set_name) */
    unsigned number;             /* 1, 2, ...: its place among the process's opens */
} zkl__tally;

/* The hold-state listeners (session/events.c): their own recursive mutex,
 * held while the worker calls them, taken above c->mu. */
typedef struct zkl__listeners {
    pthread_mutex_t mu;
    zkl__listener *v;
    int n, cap, next_id;
} zkl__listeners;

/* Its place in the registry of open clients (client/fork.c), under the
 * registry's mutex. */
typedef struct zkl__reg_entry {
    struct zkl_client *prev, *next;
    /* this process is a fork() child of the one that opened it: set by the
     * fork handler before the child runs anything else */
    bool forked;
} zkl__reg_entry;

struct zkl_client {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* waiters: state change, watch event, cancel, drained */
    zkl__setup cfg;
    zkl__conn conn;
    zkl__worker_state wk;
    zkl__poller_state pl;
    zkl__tally tally;
    zkl__listeners lsn;
    zkl__reg_entry reg;
    zkl__hooks hooks;
    /* the services' and the core's parts, each its own file's */
    struct zkl__cleanup *cleanup;
    struct zkl__revs *revs;
    struct zkl__lease *lease;
    struct zkl__engine *engine; /* the core's, once it has run an operation */
    struct zkl__lockobj *objs;  /* the lock objects made on it (core/objects/lockobj.c), under mu */
    int handles;                /* live lock objects made on this client */
    int writes_out;   /* async guarded writes sent, not yet reported (core/async/write.c) */
    bool locks_ready; /* mu, cv, wk.cv, lsn.mu and pl's mutexes are initialised */
    bool closing;
    bool canceled; /* zkl_client_cancel: every wait ends with ZKL_ECANCELED */
};

/*
 * c was open in the parent of this fork()ed process (client/fork.c): it
 * holds nothing here and can only be closed. Read without a lock: the fork
 * handler sets it before the child runs anything else.
 */
static inline bool zkl__forked(const struct zkl_client *c)
{
    return c->reg.forked;
}
/* Whether c's acquires use what other clients of the process know (core/engine/room.h). */
static inline bool zkl__process_hints(struct zkl_client *c)
{
    return atomic_load(&c->cfg.process_hints);
}

/* ZKL_ECLOSED for fn (NULL: no prefix): the client is closing, or is a forked
 * child's copy (saying so). */
zkl_status zkl__closed_fail(const struct zkl_client *c, const char *fn);

/* ---- sessions (session.c) ---- */

/*
 * Open a new session handle and make it the client's current one (epoch:
 * which session of the client). NULL with errno set if the ZooKeeper client
 * refused. Called without c->mu.
 */
zkl__session *zkl__session_open(struct zkl_client *c, uint64_t epoch);
/* Current session with a reference, or ZKL_ECLOSED / ZKL_ETIMEDOUT (none usable by deadline). */
zkl_status zkl__session_get(struct zkl_client *c, int64_t deadline, zkl__session **out);
void zkl__session_put(zkl__session *s);
/*
 * The same without waiting: ZKL__RESTART (no message) while the lost
 * session is being replaced. Caller holds c->mu.
 */
zkl_status zkl__session_try_get_locked(struct zkl_client *c, zkl__session **out);
/* Tell waits to look again (the changed_locked hook). Caller holds c->mu. */
void zkl__changed_locked(struct zkl_client *c);
/* c->conn.sess if it is session epoch, connected and not lost; else NULL. Caller holds c->mu. */
zkl__session *zkl__session_live_locked(struct zkl_client *c, uint64_t epoch);
/* The current session's id and password, as the private ZooKeeper client has
 * them (the tests' expiries open a handle of their own on it). Takes c->mu. */
clientid_t zkl__session_client_id(struct zkl_client *c);
/*
 * The current session is lost (locally, or its lease ran out): mark it
 * expired and tell the worker, which opens the next. first: an event to
 * report before LOST (ZKL_STATE_LEASE_EXPIRED), or 0. Caller holds c->mu.
 */
void zkl__session_lose_locked(struct zkl_client *c, zkl_conn_state first);
/*
 * The worker's session phase: a session suspended for a whole timeout is
 * lost (Curator's rule), a lost one is replaced. Returns 0 if it did
 * something, else the zkl__now_us() time it wants to run again (INT64_MAX:
 * none). Caller holds c->mu; released while a session opens.
 */
int64_t zkl__session_turn(struct zkl_client *c, int64_t now_us);

/* ---- the worker, as the lower floors see it (worker_link.c) ---- */

/*
 * Whether work due at the zkl__now_us() time at needs the worker woken: it
 * sleeps past then. Caller holds c->mu.
 */
bool zkl__worker_sleeps_past_locked(const struct zkl_client *c, int64_t at);
/*
 * Wake the worker: work is queued for it, or the state changed. Caller holds
 * c->mu. Cheap while the worker runs (it looks around before it sleeps).
 */
void zkl__worker_kick_locked(struct zkl_client *c);
/*
 * Work is due at the zkl__now_us() time at: a sleeping worker is to wake by
 * then, but not now. Its alarm is moved (no thread switch), or it is kicked
 * where it has none (no timerfd, or asleep on wk.cv). One user: held-back
 * deletes (services/cleanup.c), so zkl__worker_alarm_back_locked can put the
 * alarm back once none is left. Caller holds c->mu.
 */
void zkl__worker_alarm_locked(struct zkl_client *c, int64_t at);
/* The work the alarm was moved for is gone: back to the worker's own time. */
void zkl__worker_alarm_back_locked(struct zkl_client *c);

/* ---- where threads sleep (sleep.c) ---- */

/*
 * Clients whose worker runs in this process: counted as workers start and
 * stop (client/worker.c). With many, zklock's blocking waits sleep on
 * eventfds, out of the futex hash (base/wakefd.h, core/engine/engine.c); with few,
 * a condition variable is cheaper. "Many" is where the hash's chains grow
 * long: each client keeps about two threads blocked on futexes (a blocking
 * waiter and the client's poller), so from
 * ZKL_MANY_CLIENTS_PER_SLOT clients a chain of the process's private hash
 * (Linux 6.16+, read once a worker starts), or ZKL_MANY_CLIENTS without one.
 */
void zkl__clients_count(int delta);
bool zkl__many_clients(void);
/* The count that is "many" now (a test's, if it tuned MANY_CLIENTS: base/fault.h). */
int zkl__many_clients_threshold(void);

/* True if epoch is the current session's and it is not lost. */
bool zkl__epoch_alive(struct zkl_client *c, uint64_t epoch);
/* The client has a connection to a server now. */
bool zkl__connected(struct zkl_client *c);
/* "" while connected, else a note for a timeout's message saying it is not. */
const char *zkl__conn_note(struct zkl_client *c);
uint64_t zkl__state_gen(struct zkl_client *c);
/* The current session's epoch. */
uint64_t zkl__epoch(struct zkl_client *c);
/* zkl_client_cancel was called. */
bool zkl__canceled(struct zkl_client *c);
/* The calling thread is the client's worker (worker_link.c). */
bool zkl__on_worker(struct zkl_client *c);

/* ---- the retry backoff (backoff.c) ---- */

/*
 * After a retryable failure: wait out the backoff for try number *attempt
 * (waking early when the connection state changes). false when the retries
 * are spent or the deadline has passed; with no deadline (INT64_MAX: a wait
 * for ever) the retries are never spent.
 */
bool zkl__backoff(struct zkl_client *c, int *attempt, int64_t deadline);
/*
 * The same without waiting, for a wait (an acquire): false only when the
 * deadline has passed (a wait of any length is bounded by its deadline,
 * not by retry_max), else the zkl__now_ms() time (at most deadline) the
 * backoff lasts until, which a change of the connection state cuts short.
 */
bool zkl__backoff_until(struct zkl_client *c, int *attempt, int64_t deadline, int64_t *until);

/* ---- the client's queries (session.c) ---- */

/* Lock-object accounting, so zkl_client_close can refuse while objects live. */
void zkl__client_ref(struct zkl_client *c);
void zkl__client_unref(struct zkl_client *c);

/* ---- events and listeners (events.c) ---- */

/* Record a connection event of session s for the worker. Caller holds c->mu. */
void zkl__event_push_locked(struct zkl_client *c, const zkl__session *s, zkl_conn_state st);
/* Forget queued events (zkl_client_open: CONNECTED is told by its return). Caller holds c->mu. */
void zkl__events_clear_locked(struct zkl_client *c);
/*
 * The worker's event phase: tell the oldest queued event to the user's
 * state callback and the listeners. Returns 0 if it told one, else
 * INT64_MAX. Caller holds c->mu; released while calling out.
 */
int64_t zkl__events_turn(struct zkl_client *c);

/*
 * Callbacks on the calling thread (libuv's and hiredis's rule: a call from
 * inside a callback works, or refuses at once). A frame is pushed, on the
 * stack of the thread that runs a user callback of client c, for as long as
 * the callback runs; zkl__in_callback(c) says whether the calling thread is
 * inside one. Callbacks run on c's worker are inside one by being there
 * (zkl__on_worker); the frames are for the others (zkl_client_dispatch's).
 */
typedef struct zkl__cb_frame {
    struct zkl_client *c;
    struct zkl__cb_frame *up;
} zkl__cb_frame;
void zkl__cb_enter(zkl__cb_frame *f, struct zkl_client *c);
void zkl__cb_leave(zkl__cb_frame *f);
bool zkl__in_callback(const struct zkl_client *c);
/*
 * A call that would wait for c's worker (a blocking acquire, a drain), made
 * on the worker: ZKL_EDEADLOCK with a message naming fn, at once, instead of
 * a wait for itself. ZKL_OK elsewhere.
 */
zkl_status zkl__refuse_on_worker(struct zkl_client *c, const char *fn);

/* Lost-lock notices: add returns an id (> 0), or 0 on no memory. Remove waits
 * out a running call of the listener, unless called from inside one. */
int zkl__listener_add(struct zkl_client *c, zkl__listener_fn fn, void *ctx);
void zkl__listener_remove(struct zkl_client *c, int id);

/* ---- watch tokens (session.c, last) ---- */

/* A new token (refs: caller + ZooKeeper), and the caller's drop (no notice after it). */
zkl__watch *zkl__watch_new(zkl__session *s);
void zkl__watch_drop(zkl__watch *w);
/* Call fn(arg) with c->mu held when w fires (before the request that sets it is sent). */
void zkl__watch_notify(zkl__watch *w, void (*fn)(void *arg), void *arg);
/* The ZooKeeper side's reference, when a watch was not registered after all. */
void zkl__watch_unregistered(zkl__watch *w);
/* Free the tokens of a closed session (ZooKeeper will not call them). Caller holds c->mu. */
void zkl__watches_free_locked(zkl__session *s);
/* ZooKeeper watcher function for tokens. */
void zkl__watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx);
/*
 * Whether w fired. *deleted_only: it fired for the watched node's deletion,
 * and the connection state (gen), session and cancel flag are unchanged.
 */
bool zkl__watch_fired(zkl__watch *w, uint64_t gen, bool *deleted_only);

#endif
