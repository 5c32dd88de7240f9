/*
 * acq.h - one acquire as a state machine (docs/design/async.md), private to
 * the core. Its steps are functions that send the next request, or look at
 * what came back, and name the step that comes next; none of them blocks.
 * Replies, watch events, state changes and timers only make an operation
 * ready; whoever runs it (the blocking caller's own thread, or the worker's
 * engine phase for async operations) calls its step until it yields.
 *
 * create.c: our node (protected create, recovery, parents); wait.c: the wait
 * in line; grant.c: the lease, the hold, the cleanup and the restart;
 * engine.c: readiness, timers, and who runs what.
 */
#ifndef ZKL_CORE_ACQ_H
#define ZKL_CORE_ACQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/fault.h"
#include "base/seq.h"
#include "core/policy/driver.h"
#include "core/engine/hold.h"
#include "requests/pending.h"
#include "session/client.h"

typedef struct zkl__acq zkl__acq;

/*
 * A report to deliver in the client's mode (zklock/async.h): an async
 * acquire's end (core/async/async.c) or an async guarded write's answer
 * (core/async/write.c). deliver runs it (its callback), with no lock held,
 * on the worker or in zkl_client_dispatch; it may free r.
 */
typedef struct zkl__report {
    struct zkl__report *next;
    void (*deliver)(struct zkl__report *r);
} zkl__report;

/* The client's engine (c->engine), made with its first operation; under c->mu. */
struct zkl__engine {
    zkl__acq *live;              /* every operation not yet freed (utlist, prev/next) */
    size_t nlive;                /* how many */
    zkl__acq *ready, *ready_end; /* async operations to run (rnext) */
    zkl__acq **heap;             /* async operations' timers, by wake_ms */
    size_t heap_n, heap_cap;
    /* descriptor delivery (zkl_client_event_fd): reports wait here for
     * zkl_client_dispatch (core/async/async.c) */
    int efd; /* -1: callbacks on the worker */
    zkl__report *reports, *reports_end;
    /* the one thread in zkl_client_dispatch, while dispatching is set (c->mu) */
    bool dispatching;
    pthread_t dispatcher;
    /* worker delivery: reports posted from another thread (a guarded
     * write's answer, in a ZooKeeper delivery) wait here for the engine
     * phase */
    zkl__report *posted, *posted_end;
    /* the worker's delivery of posted reports in progress: the one in hand
     * and the rest, reachable from here and not only from the worker's
     * stack, which a fork()'s child does not have (so that the child holds
     * nothing it cannot reach: valgrind found an observer's report lost in
     * test_observe's forked child). Written by the worker only. */
    zkl__report *in_hand, *delivering;
};

/* What a step did: go on with the next step at once, or wait to be readied. */
typedef enum zkl__step_result { ZKL__STEP_AGAIN, ZKL__STEP_YIELD } zkl__step_result;
typedef zkl__step_result (*zkl__step)(zkl__acq *aq);

/* A data or child watch the acquire keeps (the watched node, the one before it). */
typedef struct zkl__armed {
    char *name; /* the child's basename (NULL: the child list) */
    zkl__watch *w;
    int64_t owner; /* the child's ephemeral owner, as its watch's reply said (0: unknown) */
    /* the child is an ephemeral of our own session: its deletion proves
     * nothing until a listing shows the session alive (issue 17) */
    bool ours;
    /* the watch's reply said the child is persistent (no owner): not a lock
     * node, and in the way of every acquirer behind it (wait.c names it) */
    bool persistent;
    /* name is the acquire's own (aq->name, the self slot): not a copy, and
     * not freed with the slot */
    bool borrowed;
} zkl__armed;

/*
 * What only the create needs (create.c): made by its first step, freed once
 * the node is ours for sure (created, or adopted after a lost reply) or the
 * place is left (zkl__making_free). A pending wait keeps none of it.
 */
typedef struct zkl__making {
    char prefix[ZKL_PROTECTED_PREFIX_LEN + 1]; /* Curator's protected prefix ("": none yet) */
    char *want;                                /* the path asked for: path/prefix + lock name */
    char *mk;                                  /* mkdirs: the path being made */
    size_t mk_at;                              /* how much of a->path it is */
    struct zkl__chroot_job *chroot; /* making the connect string's chroot (services/chroot.h) */
    struct zkl__heldback *merged;   /* held-back deletes riding in our multi (until freed) */
} zkl__making;

/* Reported when an acquire is done (engine.c's owner: blocking waiter or async handle). */
typedef void (*zkl__acq_done_fn)(zkl__acq *aq, void *arg);

/* Where an async operation is in the engine (a blocking one stays IDLE until DONE). */
typedef enum zkl__run {
    ZKL__RUN_IDLE,    /* waiting for something to ready it */
    ZKL__RUN_QUEUED,  /* on the engine's ready list */
    ZKL__RUN_RUNNING, /* its steps run on the worker */
    ZKL__RUN_DONE,    /* its last step ran */
} zkl__run;

/* The steps' flags (zkl__acq.flags), no lock. */
enum {
    ZKL__AF_HAVE_KIDS = 1u << 0, /* kids holds a listing to look at */
    ZKL__AF_ALONE = 1u << 1,     /* ours was the only node (the hold's alone) */
    ZKL__AF_CARRIED = 1u << 2,   /* our create carried held-back deletes */
    /* our create went without the listing: the node just ahead may be known
     * in the room (room.h), else the first round lists (wait.c) */
    ZKL__AF_UNLISTED = 1u << 3,
    ZKL__AF_IN_FLIGHT = 1u << 4, /* our create counts in flight (room.c's alone) */
    ZKL__AF_AWAITING = 1u << 5,  /* the note of node await_seq awaited (room.c's alone) */
    ZKL__AF_UNCERTAIN = 1u << 6, /* a try may have reached the server: recover by prefix first */
    ZKL__AF_NO_CARRY = 1u << 7,  /* the next create goes alone (a multi failed unapplied) */
};

/* What the operation has been told, and how its owner waits (zkl__acq.mu_flags), under c->mu. */
enum {
    ZKL__AM_READY = 1u << 0,    /* something happened: its steps look again */
    ZKL__AM_CANCEL = 1u << 1,   /* zkl__acq_cancel_locked asked it to stop */
    ZKL__AM_GRANTED = 1u << 2,  /* it holds: a cancel comes too late */
    ZKL__AM_BLOCKING = 1u << 3, /* its owner runs it on its own thread */
    ZKL__AM_ASLEEP = 1u << 4,   /* the blocking owner sleeps on wfd: wake it there */
    ZKL__AM_BELL = 1u << 5,     /* the bell rang: the lock is two places ahead (room.h) */
    ZKL__AM_NOTED = 1u << 6,    /* the awaited note came, or no create is in flight */
};

/* Whether word w has flag f; set or clear f in *w as on says (returns on). */
static inline bool zkl__has(unsigned w, unsigned f)
{
    return (w & f) != 0;
}

static inline bool zkl__acq_flag(unsigned *w, unsigned f, bool on)
{
    if (on)
        *w |= f;
    else
        *w &= ~f;
    return on;
}

struct zkl__acq {
    zkl_client *c;
    zkl__acquire_args a;
    zkl__step step;   /* what runs next (a step of the acquire's steps: create, wait, grant) */
    zkl__step resume; /* after a backoff */
    int64_t wake_ms;  /* the step's timer (zkl__now_ms), INT64_MAX: none */
    int64_t woke_us;  /* zkl__now_us() of the last round's wake-up (zkl__hold.woke_us) */
    int64_t call_until;
    /* the place in line */
    zkl__session *s; /* with a reference, while we have a place */
    uint64_t epoch;
    char *node; /* full path of our node */
    const char *name;
    int64_t czxid;
    /* a child ahead that is not a lock node (no session owns it), which
     * blocks the line until deleted; for a wait's message (c->mu; written
     * only by the steps' thread) */
    char *blocker;
    zkl__names kids; /* a listing to look at (ZKL__AF_HAVE_KIDS) */
    /* the acquire's seat in the room (room.c's alone; NULL: a driver that
     * does not grant the head, or the client's in-process hints are off) */
    struct zkl__inproc *inproc;
    int32_t bell_seq; /* the node whose bell we set there (-1: none) */
    /* the steps' own flags (ZKL__AF_*): read and written only by the thread
     * that runs the operation's steps, without a lock */
    unsigned flags;
    /* creating */
    int attempt, parents, restarts, fault;
    int32_t await_seq;   /* the note awaited (ZKL__AF_AWAITING), until await_until */
    zkl__making *making; /* (NULL: not creating) */
    /* requests in flight (at most three: a write and its listing, or the watches) */
    zkl__req *k[3];
    int rcs[3];
    int nk;
    /* waiting: the node just ahead, the one before it, and (mutex) our own */
    zkl__armed prim, ahead, self;
    zkl__verdict v;
    uint64_t gen; /* the connection state a listing was taken in */
    /* a backoff or a wait for session news: until when, since which state */
    int64_t until;
    int64_t await_until;
    uint64_t since_gen;
    const char *doing;
    /* the outcome: a failure's message (malloc'd; NULL: none, or no
     * memory), or the grant, which zkl__acq_take_hold hands its owner as a
     * hold: the node (held, taken from node at the grant), czxid, epoch,
     * woke_us, the revocation watch (rev), the time granted and the ALONE
     * flag (no hold of its own: a pending wait does not carry one) */
    char *msg;
    char *held;
    struct zkl__revwatch *rev;
    int64_t granted_us;
    zkl_status st;
    /* the engine's, under c->mu: where the operation is, and what it has
     * been told (ZKL__AM_*; a word of its own, since other threads write it) */
    zkl__run state;
    unsigned mu_flags;
    /* a blocking owner sleeps on wfd, an eventfd made at its first sleep
     * (-1: none), or on cv (its own, on its stack) */
    int wfd;
    pthread_cond_t *cv;
    size_t heap_at; /* 1 + index in the timer heap, 0: not in it */
    zkl__acq_done_fn done_fn;
    void *done_arg;
    zkl__acq *prev, *next; /* the engine's live list */
    zkl__acq *rnext;       /* the ready list */
};

/* ---- engine.c: who runs what ---- */

/*
 * A new aq for args a (copied: a's strings must outlive the acquire). blocking:
 * run by the caller (zkl__lock_acquire), else by the worker, which calls
 * done_fn(aq, arg) on its thread when it is done. NULL on no memory.
 */
zkl__acq *zkl__acq_new(zkl_client *c, const zkl__acquire_args *a, bool blocking,
                       zkl__acq_done_fn done_fn, void *arg);
/* The client's engine, made if need be (NULL: no memory). Caller holds c->mu. */
struct zkl__engine *zkl__engine_locked(zkl_client *c);
/* Start an async aq: it goes to the worker. (A blocking one is run by
 * zkl__lock_acquire, internals.h, on its caller's thread.) */
void zkl__acq_start_async(zkl__acq *aq);
/* Free a done aq (nothing of it is in flight any more). */
void zkl__acq_free(zkl__acq *aq);
/* Ask a live aq to stop with ZKL_ECANCELED; false if it is done or granted already. Caller holds
 * c->mu. */
bool zkl__acq_cancel_locked(zkl__acq *aq);

/* ---- acq.c: what steps share ---- */

/* Readies aq (a reply came, a watch fired): c->mu held / not held. */
void zkl__acq_ready_locked(zkl__acq *aq);
/* For a watch token: it fired (c->mu held); arg is the acquire. */
void zkl__acq_ready_locked_fn(void *aq);
/* For zkl__req: a reply came (a ZooKeeper delivery, no lock held). */
void zkl__acq_notify(void *aq);
/* The sequence of node name in aq's line (by its driver's markers), -1 if it has none. */
int32_t zkl__acq_seq(const zkl__acq *aq, const char *name);
/* Whether aq is its client's only live operation. */
bool zkl__acq_alone(zkl__acq *aq);

/* Requests of the acquire: track what was sent (k may be NULL: its rc was a send failure). */
void zkl__acq_track(zkl__acq *aq, zkl__req *k, int send_rc);
/*
 * Whether every tracked request is answered (or the call deadline passed:
 * those not answered read ZOPERATIONTIMEOUT); aq->rcs then has each rc.
 * Not yet: the step's timer is set to the call deadline.
 */
bool zkl__acq_answered(zkl__acq *aq);
/* The one tracked listing is in (false: not yet): its rc, and its names in aq->kids if ZOK. */
bool zkl__acq_listing(zkl__acq *aq, int *rc);
/* Let go of the tracked requests (after reading them). */
void zkl__acq_untrack(zkl__acq *aq);
/* Wait until the zkl__now_ms() time at (or the connection state changes): true once due. */
bool zkl__acq_sleep(zkl__acq *aq, int64_t at);
/* The connection state, cancel flag or closing changed since aq->gen. */
bool zkl__acq_changed(zkl__acq *aq);

/* ---- the steps: where each part begins ---- */
zkl__step_result zkl__step_start(zkl__acq *aq);  /* grant.c: a session, a place */
zkl__step_result zkl__step_create(zkl__acq *aq); /* create.c: our node */
zkl__step_result zkl__step_wait(zkl__acq *aq);   /* wait.c: the line, from the listing */
zkl__step_result zkl__step_grant(zkl__acq *aq);  /* grant.c: the lease, the hold */
/* Let go of what only the create needed (aq->making; NULL: nothing). */
void zkl__making_free(zkl__acq *aq);
/* Finish with st: cleanup of our node (if any), then done. */
zkl__step_result zkl__acq_fail(zkl__acq *aq, zkl_status st);
/* A granted aq's hold, handed to its owner (*out; aq keeps nothing of it). */
void zkl__acq_take_hold(zkl__acq *aq, zkl__hold *out);
/* The place is lost (ZKL__RESTART): start again, or give up. */
zkl__step_result zkl__acq_restart(zkl__acq *aq);
/* Retry after a backoff: resume at step, or give up with "doing". */
zkl__step_result zkl__acq_backoff(zkl__acq *aq, zkl__step step, const char *doing);
/* The session's server id (0 before it connected). */
int64_t zkl__session_id(zkl__session *s);
/* zkl_client_cancel, or this acquire's cancel. */
bool zkl__acq_canceled(zkl__acq *aq);
/* The acquire stopped retrying: canceled (ZKL_ECANCELED) or past its deadline (ZKL_ETIMEDOUT). */
zkl_status zkl__acq_gave_up(zkl__acq *aq, const char *doing);
void zkl__armed_clear(zkl__armed *x);
/* A new watch token in slot x (clear; name: the child's, NULL: the child list) that readies aq. */
bool zkl__armed_new(zkl__acq *aq, zkl__armed *x, const char *name);

#endif
