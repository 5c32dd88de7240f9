/*
 * multilock.c - zkl_multilock: a list of members, each a pair of functions,
 * taken in order under one deadline and given back in reverse. It composes
 * the recipes' public calls; the ZooKeeper work is theirs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "base/util.h"
#include "base/tuning.h"
#include "core/async/async.h"
#include "core/engine/guarded.h"
#include "core/objects/lockobj.h"
#include "recipes/sides.h"
#include "zklock/multilock.h"

typedef struct member {
    void *lock;
    zkl_status (*acquire)(void *lock, int timeout_ms);
    zkl_status (*release)(void *lock);
    zkl__side *side; /* its side in the core; NULL: thread mode only (semaphore mutex) */
} member;

struct zkl_multilock {
    member *v;
    size_t n, cap;
    pthread_mutex_t mu;
    int acquired; /* acquisitions not yet released */
};

static zkl_status mutex_acq(void *l, int t)
{
    return zkl_mutex_acquire(l, t);
}
static zkl_status mutex_rel(void *l)
{
    return zkl_mutex_release(l);
}
static zkl_status read_acq(void *l, int t)
{
    return zkl_rwlock_read_acquire(l, t);
}
static zkl_status read_rel(void *l)
{
    return zkl_rwlock_read_release(l);
}
static zkl_status write_acq(void *l, int t)
{
    return zkl_rwlock_write_acquire(l, t);
}
static zkl_status write_rel(void *l)
{
    return zkl_rwlock_write_release(l);
}
static zkl_status sem_acq(void *l, int t)
{
    return zkl_semaphore_mutex_acquire(l, t);
}
static zkl_status sem_rel(void *l)
{
    return zkl_semaphore_mutex_release(l);
}

zkl_status zkl_multilock_create(zkl_multilock **out)
{
    zkl_multilock *ml;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_multilock_create: out is NULL");
    ml = calloc(1, sizeof *ml);
    if (!ml)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    pthread_mutex_init(&ml->mu, NULL);
    *out = ml;
    return ZKL_OK;
}

static zkl_status add(zkl_multilock *ml, void *lock, zkl_status (*acq)(void *, int),
                      zkl_status (*rel)(void *), zkl__side *side)
{
    zkl__clear_err();
    if (!ml || !lock)
        return zkl__fail(ZKL_EINVAL, "zkl_multilock_add: NULL argument");
    pthread_mutex_lock(&ml->mu);
    if (ml->acquired) {
        pthread_mutex_unlock(&ml->mu);
        return zkl__fail(ZKL_EBUSY, "zkl_multilock_add: the set is acquired");
    }
    if (ml->n == ml->cap) {
        size_t cap = ml->cap ? ml->cap * 2 : 4;
        member *v = realloc(ml->v, cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&ml->mu);
            return zkl__fail(ZKL_ENOMEM, "out of memory");
        }
        ml->v = v;
        ml->cap = cap;
    }
    ml->v[ml->n].lock = lock;
    ml->v[ml->n].acquire = acq;
    ml->v[ml->n].release = rel;
    ml->v[ml->n].side = side;
    ml->n++;
    pthread_mutex_unlock(&ml->mu);
    return ZKL_OK;
}

zkl_status zkl_multilock_add_mutex(zkl_multilock *ml, zkl_mutex *m)
{
    ZKL__REFUSE_IN_LOG();
    return add(ml, m, mutex_acq, mutex_rel, m ? zkl__mutex_side(m) : NULL);
}

zkl_status zkl_multilock_add_read(zkl_multilock *ml, zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG();
    return add(ml, l, read_acq, read_rel, l ? zkl__rwlock_side(l, false) : NULL);
}

zkl_status zkl_multilock_add_write(zkl_multilock *ml, zkl_rwlock *l)
{
    ZKL__REFUSE_IN_LOG();
    return add(ml, l, write_acq, write_rel, l ? zkl__rwlock_side(l, true) : NULL);
}

zkl_status zkl_multilock_add_semaphore_mutex(zkl_multilock *ml, zkl_semaphore_mutex *m)
{
    ZKL__REFUSE_IN_LOG();
    return add(ml, m, sem_acq, sem_rel, NULL);
}

zkl_status zkl_multilock_acquire(zkl_multilock *ml, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    int64_t deadline;
    size_t i, n;
    zkl__clear_err();
    if (!ml)
        return zkl__fail(ZKL_EINVAL, "zkl_multilock_acquire: NULL set");
    if (zkl__check_timeout(timeout_ms, "zkl_multilock_acquire") != ZKL_OK)
        return ZKL_EINVAL;
    pthread_mutex_lock(&ml->mu);
    n = ml->n;
    pthread_mutex_unlock(&ml->mu);
    if (n == 0)
        return zkl__fail(ZKL_EINVAL, "zkl_multilock_acquire: the set is empty");
    deadline = zkl__deadline(timeout_ms);
    for (i = 0; i < n; i++) {
        int left = -1;
        zkl_status st;
        if (timeout_ms >= 0) {
            int64_t rem = deadline - zkl__now_ms();
            left = rem > 0 ? (int)rem : 0;
        }
        st = ml->v[i].acquire(ml->v[i].lock, left);
        if (st != ZKL_OK) {
            zkl__fail_prefix(st, "member %zu of %zu: ", i + 1, n);
            zkl__err_keep(); /* the failure's message, not the cleanup's */
            while (i-- > 0)
                ml->v[i].release(ml->v[i].lock);
            zkl__err_unkeep();
            return st;
        }
    }
    pthread_mutex_lock(&ml->mu);
    ml->acquired++;
    pthread_mutex_unlock(&ml->mu);
    return ZKL_OK;
}

/* ---- async: each member's acquire in turn, a plan of the core's async handles ---- */

/* op->at: members asked for so far; op->stage: members granted (counted in their sides). */
static bool ml_next(zkl_op *op, zkl_status st, zkl__hold *got, zkl_client **c, zkl__acquire_args *a,
                    zkl_status *final)
{
    zkl_multilock *ml = op->obj;
    zkl__side *sd;
    if (got && zkl__op_keep(op, got)) {
        zkl__side_async_granted(ml->v[op->stage].side, op->holds[op->nholds - 1].epoch);
        zkl__stats_acquired(ml->v[op->stage].side->stats, ml->v[op->stage].side->c,
                            &op->holds[op->nholds - 1], ml->v[op->stage].side,
                            zkl__now_us() - op->started_us);
        op->stage++;
    }
    if (op->at > 0 && st != ZKL_OK) {
        zkl__stats_failed(ml->v[op->at - 1].side->stats, st);
        zkl__op_let_go(op); /* all or none: those taken go, in reverse order */
        *final = st;
        return false;
    }
    if (op->at == op->want) {
        *final = ZKL_OK;
        return false;
    }
    sd = ml->v[op->at++].side;
    zkl__side_args(sd, 0, NULL, NULL, a);
    a->deadline = op->deadline;
    *c = sd->c;
    return true;
}

static void ml_end(zkl_op *op)
{
    zkl_multilock *ml = op->obj;
    int i;
    for (i = 0; i < op->want; i++) {
        if (i < op->stage) /* (a member's hold, let go now) */
            zkl__stats_released(ml->v[i].side->stats, ml->v[i].side->c, &op->holds[i],
                                op->let_go_st);
        zkl__side_async_ended(ml->v[i].side, i < op->stage, op->holds[i].epoch);
    }
    pthread_mutex_lock(&ml->mu);
    ml->acquired--;
    pthread_mutex_unlock(&ml->mu);
}

/*
 * An async set takes each member once: a handle is not reentrant, so a lock
 * added twice (or both sides of one read/write lock) would queue behind its
 * own node for ever. ZKL_EINVAL naming the two. Caller holds ml->mu.
 */
static zkl_status distinct_locked(const zkl_multilock *ml, const char *what)
{
    size_t i, j;
    for (i = 0; i < ml->n; i++)
        for (j = i + 1; j < ml->n; j++)
            if (ml->v[i].lock == ml->v[j].lock)
                return zkl__fail(ZKL_EINVAL,
                                 "%s: members %zu and %zu are the same lock; an async acquire "
                                 "takes each lock once (a thread-mode acquire re-enters it)",
                                 what, i + 1, j + 1);
    return ZKL_OK;
}

/* Put every member in async mode and count the handle on it; undone on failure. */
static zkl_status ml_begin(zkl_multilock *ml, const char *what)
{
    size_t i;
    zkl_status st = ZKL_OK;
    for (i = 0; i < ml->n && st == ZKL_OK; i++) {
        if (!ml->v[i].side)
            st = zkl__fail(ZKL_EINVAL,
                           "%s: member %zu of %zu is a semaphore mutex, which is "
                           "thread mode only",
                           what, i + 1, ml->n);
        else if ((st = zkl__side_async_begin(ml->v[i].side, what)) != ZKL_OK)
            zkl__fail_prefix(st, "member %zu of %zu: ", i + 1, ml->n);
        else
            continue;
        while (i-- > 0)
            zkl__side_async_ended(ml->v[i].side, false, 0);
        break;
    }
    return st;
}

zkl_status zkl_multilock_acquire_async(zkl_multilock *ml, int timeout_ms, zkl_op_fn fn,
                                       void *userdata, zkl_op **op)
{
    ZKL__REFUSE_IN_LOG();
    static const zkl__plan plan = {ml_next, ml_end, false};
    static const char *const what = "zkl_multilock_acquire_async";
    zkl__side *first;
    zkl_status st;
    size_t i;
    zkl__clear_err();
    if (op)
        *op = NULL;
    if (!ml || !fn || !op)
        return zkl__fail(ZKL_EINVAL, "%s: NULL argument", what);
    if ((st = zkl__check_timeout(timeout_ms, what)) != ZKL_OK)
        return st;
    pthread_mutex_lock(&ml->mu);
    if (ml->n == 0 || ml->n > ZKL_MULTILOCK_MAX) {
        pthread_mutex_unlock(&ml->mu);
        return zkl__fail(ZKL_EINVAL, "%s: the set is empty (or has over %d members)", what,
                         ZKL_MULTILOCK_MAX);
    }
    if ((st = distinct_locked(ml, what)) != ZKL_OK) {
        pthread_mutex_unlock(&ml->mu);
        return st;
    }
    ml->acquired++; /* no member added meanwhile: the plan reads ml->v */
    pthread_mutex_unlock(&ml->mu);
    st = ml_begin(ml, what);
    first = st == ZKL_OK ? ml->v[0].side : NULL;
    if (st == ZKL_OK)
        st = zkl__async_start(first->c, &plan, what, ml, first->path, (int)ml->n, timeout_ms, fn,
                              userdata, op);
    if (st != ZKL_OK && first)
        for (i = 0; i < ml->n; i++)
            zkl__side_async_ended(ml->v[i].side, false, 0);
    if (st != ZKL_OK) {
        pthread_mutex_lock(&ml->mu);
        ml->acquired--;
        pthread_mutex_unlock(&ml->mu);
    }
    return st;
}

zkl_status zkl_multilock_release(zkl_multilock *ml)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status first = ZKL_OK;
    size_t i;
    zkl__clear_err();
    if (!ml)
        return zkl__fail(ZKL_EINVAL, "zkl_multilock_release: NULL set");
    pthread_mutex_lock(&ml->mu);
    if (ml->acquired == 0) {
        pthread_mutex_unlock(&ml->mu);
        return zkl__fail(ZKL_ENOTOWNER, "zkl_multilock_release: not acquired");
    }
    pthread_mutex_unlock(&ml->mu);
    /* The set is the acquiring thread's (its mutex and rwlock members are
     * held per thread), and a set taken by an async acquire is its
     * handle's (zkl_op_release). A thread that holds none of the per-thread
     * members never acquired it: refused, nothing changed. The acquiring
     * thread releases every member it still holds, in reverse order, even
     * when it let one go by hand (Curator's testSomeReleasesFail), and the
     * first failure, such a member's included, is what it returns. */
    size_t sides = 0, held = 0, missing = 0;
    for (i = 0; i < ml->n; i++)
        if (ml->v[i].side && !zkl__forked(ml->v[i].side->c)) { /* (a child's is ELOST) */
            sides++;
            if (zkl__side_has_entry(ml->v[i].side))
                held++;
            else if (!missing)
                missing = i + 1;
        }
    if (sides > 0 && held == 0)
        return zkl__fail(ZKL_ENOTOWNER,
                         "zkl_multilock_release: the calling thread does not hold member "
                         "%zu of %zu (a set is released by the thread that acquired it, "
                         "or, if an async acquire took it, by zkl_op_release)",
                         missing, ml->n);
    for (i = ml->n; i-- > 0;) {
        bool gone =
            ml->v[i].side && !zkl__forked(ml->v[i].side->c) && !zkl__side_has_entry(ml->v[i].side);
        zkl_status st = gone ? zkl__fail(ZKL_ENOTOWNER,
                                         "member %zu: the calling thread no longer holds it "
                                         "(released on its own?); the others were released",
                                         i + 1)
                             : ml->v[i].release(ml->v[i].lock);
        if (st != ZKL_OK && first == ZKL_OK) {
            first = gone ? st : zkl__fail_prefix(st, "member %zu: ", i + 1);
            zkl__err_keep(); /* the first failure's message */
        }
    }
    if (first != ZKL_OK)
        zkl__err_unkeep();
    pthread_mutex_lock(&ml->mu);
    ml->acquired--;
    pthread_mutex_unlock(&ml->mu);
    return first;
}

/* The calling thread's hold of member m, copied into h (h->node the caller's). */
static zkl_status member_hold(const member *m, zkl__hold *h)
{
    if (m->side)
        return zkl__side_current(m->side, h);
    return zkl__semaphore_mutex_hold(m->lock, h);
}

zkl_status zkl_multilock_guarded_write(zkl_multilock *ml, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    const char *fn = "zkl_multilock_guarded_write";
    zkl__hold *holds;
    zkl_status st = ZKL_OK;
    size_t i, got = 0;
    int acquired;
    zkl__clear_err();
    if (failed)
        *failed = SIZE_MAX;
    if (!ml)
        return zkl__fail(ZKL_EINVAL, "%s: NULL set", fn);
    if ((st = zkl__guard_check_writes(w, n, failed, fn)) != ZKL_OK)
        return st;
    pthread_mutex_lock(&ml->mu);
    acquired = ml->acquired;
    pthread_mutex_unlock(&ml->mu);
    if (acquired == 0 || ml->n == 0)
        return zkl__fail(ZKL_ENOTOWNER, "%s: not acquired", fn);
    if (ml->n > ZKL_GUARD_CHECKS_MAX)
        return zkl__fail(ZKL_EINVAL, "%s: %zu members (at most %d in one transaction)", fn, ml->n,
                         ZKL_GUARD_CHECKS_MAX);
    if (!(holds = calloc(ml->n, sizeof *holds)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    for (got = 0; got < ml->n && st == ZKL_OK; got++)
        if ((st = member_hold(&ml->v[got], &holds[got])) != ZKL_OK)
            st = zkl__fail_prefix(st, "%s: member %zu: ", fn, got + 1);
    if (st == ZKL_OK)
        st = zkl__guarded_write(holds, (int)ml->n, w, n, failed, fn);
    for (i = 0; i < got; i++)
        free(holds[i].node);
    free(holds);
    return st;
}

zkl_status zkl_multilock_destroy(zkl_multilock *ml)
{
    ZKL__REFUSE_IN_LOG();
    if (!ml)
        return zkl__fail(ZKL_EINVAL, "zkl_multilock_destroy: NULL set");
    pthread_mutex_lock(&ml->mu);
    if (ml->acquired) {
        pthread_mutex_unlock(&ml->mu);
        return zkl__fail(ZKL_EBUSY, "zkl_multilock_destroy: the set is acquired");
    }
    pthread_mutex_unlock(&ml->mu);
    pthread_mutex_destroy(&ml->mu);
    free(ml->v);
    free(ml);
    return ZKL_OK;
}
