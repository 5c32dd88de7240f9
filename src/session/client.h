/*
 * client_internal.h - what the lock core sees of a client: sessions with
 * reference counts, watch tokens, the background delete queue and the
 * test-only fault hooks.
 *
 * Threading: c->mu guards every field below. The ZooKeeper completion thread
 * only takes c->mu briefly to record an event and broadcast c->cv; it never
 * makes a ZooKeeper call or runs user code. User callbacks and session
 * replacement run on the client's worker thread.
 */
#ifndef ZKL_CLIENT_INTERNAL_H
#define ZKL_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <zookeeper/zookeeper.h>

#include "zklock/client.h"

typedef struct zkl__watch zkl__watch;
typedef struct zkl__async_delete zkl__async_delete;

/* One ZooKeeper session (one zhandle). Replaced as a whole after expiry. */
typedef struct zkl__session {
    zhandle_t *zh;
    struct zkl_client *c;
    uint64_t epoch;             /* 1, 2, ... : which session of this client */
    int64_t id;                 /* server session id, once connected */
    int refs;                   /* the client's own reference + callers inside a call */
    bool expired;               /* the server said so, or it was lost locally */
    bool retired;               /* no longer the client's current session */
    zkl__watch *watches;        /* tokens the ZooKeeper client may still call */
    zkl__async_delete *deletes; /* releases whose delete reply is still due */
} zkl__session;

/* A watch registration: shared by the waiter and the ZooKeeper client. */
struct zkl__watch {
    struct zkl_client *c;
    zkl__session *s;
    int refs;
    bool fired;
    bool deleted; /* the event was the watched node's deletion */
    zkl__watch *prev, *next;
};

/* Test-only faults, set through tests/support (never by the library itself). */
typedef struct zkl__faults {
    int create_reply_lost; /* drop the reply of the next N successful creates */
    int create_send_lost;  /* fail the next N creates with connection loss before sending */
    char next_uuid[37];    /* use this UUID for the next protected create */
    int delete_lost;       /* fail the next N foreground lock-node deletes with connection loss */
    int bg_delete_lost;    /* fail the next N background delete tries with connection loss */
    int defer_us;          /* > 0: hold a contended release's delete back this long */
    /* run once, on the acquiring thread, after the next listing of a wait */
    void (*after_list)(struct zkl_client *c, void *arg);
    void *after_list_arg;
    /* > 0: the session watcher sleeps this long before it records a
     * disconnect or an expiry (a loaded completion thread) */
    _Atomic int session_event_delay_ms;
} zkl__faults;

typedef struct zkl__bgdel {
    char *path;   /* node to delete, or the parent when prefix is set */
    char *prefix; /* delete every child of path whose name starts with it */
    struct zkl__bgdel *next;
} zkl__bgdel;

#define ZKL_EVQ_MAX 64

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

typedef struct zkl__revwatch zkl__revwatch;

/* A release's delete held back a moment (zkcall.c: zkl__defer_delete). */
typedef struct zkl__deferred {
    struct zkl__session *s; /* with a reference, until sent */
    int64_t due_us;         /* zkl__now_us() by which the worker sends it */
    struct zkl__deferred *next;
    char path[];
} zkl__deferred;

struct zkl_client {
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* waiters: state change, watch event, cancel, drained */
    pthread_cond_t wcv; /* the worker's own: work queued for it, state change, closing */
    char *connect;
    zkl_client_options opts;
    char *auth_digest;
    char *node_data;
    struct ACL_vector acl; /* for every create; ZOO_OPEN_ACL_UNSAFE when empty */
    zkl__session *sess;
    zkl__session *pending; /* being opened: its events count before it is installed */
    uint64_t next_epoch;
    uint64_t state_gen; /* bumped on every connection event */
    int64_t suspended_at;
    zkl__event evq[ZKL_EVQ_MAX];
    zkl__bgdel *bg_head, *bg_tail;
    zkl__deferred *deferred; /* deletes held back a moment (zkcall.c) */
    /* counters; requests is atomic as calls are sent without c->mu */
    _Atomic uint64_t requests;
    uint64_t watch_events, sessions, bg_deletes;
    pthread_t worker;
    zkl__faults faults;
    /* listeners: their own recursive mutex, held while the worker calls them */
    pthread_mutex_t listen_mu;
    zkl__listener *listeners;
    /* revocation watches (revoke.c), guarded by mu */
    zkl__revwatch *revs;
    int64_t revs_retry_at; /* ms: a watch that could not be sent is tried again then (0: none) */
    /* the small fields, packed together */
    int n_listeners, cap_listeners, next_listener_id;
    zkl_conn_state state;
    int node_data_len;
    int evq_head, evq_len;
    int bg_busy;            /* a delete is being tried by the worker */
    int async_deletes;      /* released nodes whose delete is still in flight */
    _Atomic int n_deferred; /* the number of deferred deletes, read without c->mu */
    int handles;            /* live lock objects made on this client */
    int granted_timeout;
    int drainers;      /* threads waiting for async deletes to finish (on cv) */
    int revs_failures; /* revocation watches not sent in a row (the retry's back-off) */
    bool connected;
    bool ever_connected;
    bool closing;
    bool canceled; /* zkl_client_cancel: every wait ends with ZKL_ECANCELED */
    bool revs_dirty;
    /* the lease (lease.c) */
    int64_t lease_end;    /* zkl__boot_ms() before which the server cannot expire c->sess; 0 none */
    int64_t renew_at;     /* zkl__now_ms() of the next renewal */
    int lease_holds;      /* holds that need the lease */
    int lease_acquires;   /* acquires in progress (their grant needs it too) */
    bool lease_lapsed;    /* c->sess's lease ran out with holds: acted on */
    bool renewing;        /* a renewal is in flight */
    bool lease_lapse_due; /* a hold released after its lease ran out: tell it all the same */
};

/* Current session with a reference, or ZKL_ECLOSED / ZKL_ETIMEDOUT (none usable by deadline). */
zkl_status zkl__session_get(struct zkl_client *c, int64_t deadline, zkl__session **out);
void zkl__session_put(zkl__session *s);

/* True if epoch is the current session's and it is not lost. */
bool zkl__epoch_alive(struct zkl_client *c, uint64_t epoch);
/* "" while connected, else a note for a timeout's message saying it is not. */
const char *zkl__conn_note(struct zkl_client *c);

/* Queue a delete for the worker: an exact path, or (prefix != NULL) every child of path with that
 * prefix. */
void zkl__bg_delete(struct zkl_client *c, const char *path, const char *prefix);
/* The same, for a caller that holds c->mu. */
void zkl__bg_delete_locked(struct zkl_client *c, const char *path, const char *prefix);

/*
 * After a retryable failure: wait out the backoff for try number *attempt
 * (waking early when the connection state changes). false when the retries
 * are spent or the deadline has passed.
 */
bool zkl__backoff(struct zkl_client *c, int *attempt, int64_t deadline);

/* Lock-object accounting, so zkl_client_close can refuse while objects live. */
void zkl__client_ref(struct zkl_client *c);
void zkl__client_unref(struct zkl_client *c);

/* Watch tokens: new (refs: caller + ZooKeeper), and the caller's drop. */
zkl__watch *zkl__watch_new(zkl__session *s);
void zkl__watch_drop(zkl__watch *w);
/* The ZooKeeper side's reference, when a watch was not registered after all. */
void zkl__watch_unregistered(zkl__watch *w);
/*
 * After zookeeper_close: free the deletes whose completion will never run
 * (zookeeper_close does not call every pending one) and queue their nodes for
 * the background in case the session lives on. Caller holds c->mu.
 */
void zkl__async_deletes_abandon(zkl__session *s);

/* ZooKeeper watcher function for tokens. */
void zkl__watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx);

/*
 * Wait until a token fired (w2 may be NULL), the connection state changed
 * since gen, the client closes or is canceled, or the deadline passes.
 * Returns ZKL_ETIMEDOUT only for the deadline.
 */
zkl_status zkl__watch_wait(zkl__watch *w1, zkl__watch *w2, uint64_t gen, int64_t deadline);
/*
 * Whether w fired. *deleted_only: it fired for the watched node's deletion,
 * and the connection state (gen), session and cancel flag are unchanged.
 */
bool zkl__watch_fired(zkl__watch *w, uint64_t gen, bool *deleted_only);

uint64_t zkl__state_gen(struct zkl_client *c);
/*
 * A request of session epoch failed as if the session were gone, but the
 * client has not heard so yet (its event is still on the completion thread):
 * wait until the connection state changes, the client closes or is
 * canceled, or until (zkl__now_ms based), instead of trying again at once.
 * Returns at once if epoch is no longer the live session.
 */
void zkl__await_session_news(struct zkl_client *c, uint64_t epoch, int64_t until);

/* zkl_client_cancel was called. */
bool zkl__canceled(struct zkl_client *c);

/* Lost-lock notices: add returns an id (> 0), or 0 on no memory. Remove waits
 * out a running call of the listener, unless called from inside one. */
int zkl__listener_add(struct zkl_client *c, zkl__listener_fn fn, void *ctx);
void zkl__listener_remove(struct zkl_client *c, int id);

/* revoke.c, driven by the worker (c->mu held; may unlock while calling out). */
void zkl__revs_work(struct zkl_client *c);
void zkl__revs_session_gone(struct zkl_client *c, zkl__session *s);
void zkl__revs_free_all(struct zkl_client *c);

#endif
