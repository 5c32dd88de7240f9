/*
 * async.h - the core's async handles (zklock/async.h). A handle runs one or
 * more acquires of the engine, one after another, as its recipe's plan says
 * (a mutex: one; a semaphore: its internal lock, then a lease, n times; a
 * multilock: each member), and reports once at the end.
 */
#ifndef ZKL_CORE_ASYNC_H
#define ZKL_CORE_ASYNC_H

#include <pthread.h>
#include <stdbool.h>

#include "core/engine/hold.h"
#include "core/engine/report.h"
#include "core/objects/reentrant.h"
#include "zklock/async.h"

typedef struct zkl__plan zkl__plan;

struct zkl_op {
    zkl__report rep; /* its report, once it is done (first: async.c's op_of) */
    zkl_client *c;   /* its home: the delivery mode, the lock of the fields below */
    const zkl__plan *plan;
    const char *what;     /* the public function, for messages */
    void *obj;            /* the recipe's object */
    const char *path;     /* for messages */
    int64_t deadline;     /* zkl__now_ms() based, for the whole handle */
    int64_t started_us;   /* zkl__now_us() when it was asked for (metrics) */
    zkl_status let_go_st; /* what its release found (metrics: a lost hold) */
    /* the plan's own, touched only by the plan (on the worker running it) */
    int stage, want, at;
    /* a hold the plan takes on the way (the semaphore's lock): holds[want],
     * for a plan with inner set; NULL for the others */
    zkl__hold *inner;
    /* what it holds: holds[0..nholds) (holds_one when want is 1 and there
     * is no inner hold: a pending mutex wait carries one hold, not three) */
    zkl__hold *holds, holds_one;
    int nholds;
    /* the outcome, written before delivery */
    zkl_status st;
    char *msg;
    /* under c->mu */
    struct zkl__acq *acq; /* the acquire running now, if any */
    bool cancel_req, finished;
    bool free_after; /* released from inside its callback: freed when it returns */
    enum { ZKL__OP_WAITING, ZKL__OP_DELIVERING, ZKL__OP_REPORTED } state;
    pthread_t deliverer;
    zkl_op_fn fn;
    void *ud;
};

struct zkl__plan {
    /*
     * The next acquire of op: the first (st ZKL_OK, got NULL), or after one
     * ended with st (got: its hold if ZKL_OK, the plan's to keep or let go).
     * true: *a (and *c, preset to the last client) is the next acquire;
     * false: op is done with *final, holding op->holds if ZKL_OK (on a
     * failure the plan has let go of everything). Runs on a worker.
     */
    bool (*next)(zkl_op *op, zkl_status st, zkl__hold *got, zkl_client **c, zkl__acquire_args *a,
                 zkl_status *final);
    /* The handle ends, released (its holds are let go by the core). */
    void (*end)(zkl_op *op);
    /* It takes a hold on the way (op->inner), as the semaphore its internal lock. */
    bool inner;
};

/*
 * Start a handle of plan over obj (path for messages) on home client c:
 * ZKL_OK with *out, or the failure of function what. want: the holds it may
 * gather. The plan's first acquire is asked for here, on the caller's thread.
 */
zkl_status zkl__async_start(zkl_client *c, const zkl__plan *plan, const char *what, void *obj,
                            const char *path, int want, int timeout_ms, zkl_op_fn fn, void *ud,
                            zkl_op **out);

/* Keep a granted hold in op (true), or false if it has no room (the caller lets it go). */
bool zkl__op_keep(zkl_op *op, zkl__hold *h);
/* Let go of every hold of op, its inner one too; ZKL_ELOST if one of op->holds was lost. */
zkl_status zkl__op_let_go(zkl_op *op);
/* The name of a child ahead of op's wait that is not a lock node, copied
 * into buf (len > 0), or "" if none is known. */
void zkl__op_blocker(zkl_op *op, char *buf, size_t len);

/* The mutex's and the read/write lock's sides (one hold, per side). */
zkl_status zkl__async_side_acquire(zkl__side *sd, int timeout_ms, zkl_op_fn fn, void *ud,
                                   const char *what, zkl_op **out);
/* A handle on sd begins (its mode, revocation, count), or the failure of what. */
zkl_status zkl__side_async_begin(zkl__side *sd, const char *what);
/* A handle's hold of sd in session epoch was granted; a handle ends (granted: it was). */
void zkl__side_async_granted(zkl__side *sd, uint64_t epoch);
void zkl__side_async_ended(zkl__side *sd, bool granted, uint64_t epoch);
/* Whether sd has async holds granted in session epoch (its hold-state notices). */
bool zkl__side_async_in(zkl__side *sd, uint64_t epoch);

#endif
