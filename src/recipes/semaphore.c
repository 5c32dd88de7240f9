/*
 * semaphore.c - zkl_semaphore, Curator's InterProcessSemaphoreV2, composed
 * from the lock-internals core twice: the internal mutex at PATH/locks (the
 * standard mutex driver) and the lease at PATH/leases, whose driver grants
 * once the leases number at most max_leases and otherwise watches the lease
 * list. Only the internal mutex holder counts and watches leases, so waiters
 * queue one behind another with no herd (pitfalls row 12: the lease path is
 * known before any further wait, every exit returns it, leases are counted
 * only under the internal mutex, and our own lease is looked for on every
 * wake).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utlist.h>

#include "base/log.h"
#include "core/async/async.h"
#include "core/engine/guarded.h"
#include "core/engine/internals.h"
#include "core/objects/lockobj.h"
#include "services/lease.h"
#include "base/path.h"
#include "base/status.h"
#include "base/util.h"
#include "recipes/sides.h"
#include "zklock/semaphore.h"

struct zkl_semaphore {
    zkl__lockobj obj;
    char *locks, *leases;
    int max_leases;
    pthread_mutex_t mu;
    int out;               /* leases not yet returned */
    zkl_lease *out_list;   /* those leases (utlist) */
    zkl__lockstats *stats; /* the metrics' (lockobj.h) */
};

struct zkl_lease {
    zkl_semaphore *sem;
    zkl__hold hold;
    zkl_lease *prev, *next;
};

/* Whether any lease of s out now lives in session epoch (on the worker). */
static bool leases_in(void *self, uint64_t epoch)
{
    zkl_semaphore *s = self;
    const zkl_lease *l;
    bool mine = false;
    pthread_mutex_lock(&s->mu);
    DL_FOREACH(s->out_list, l)
    if (l->hold.epoch == epoch)
        mine = true;
    pthread_mutex_unlock(&s->mu);
    return mine;
}

zkl_status zkl_semaphore_create(zkl_client *c, const char *path, int max_leases,
                                zkl_semaphore **out)
{
    ZKL__REFUSE_IN_LOG();
    zkl_semaphore *s;
    zkl__lockobj *obj;
    zkl_status st;
    zkl__clear_err();
    if (out)
        *out = NULL;
    if (out && c && max_leases < 1)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_create: max_leases %d must be at least 1",
                         max_leases);
    st = zkl__lockobj_new(sizeof *s, "zkl_semaphore_create", out, c, path, leases_in, &obj);
    if (st != ZKL_OK || !out) /* (new refuses a NULL out) */
        return st;
    s = (zkl_semaphore *)obj; /* its first member */
    st = zkl__lockobj_add_part(&s->obj, "semaphore", 0, &s->stats);
    s->locks = zkl__path_join(path, "locks");
    s->leases = zkl__path_join(path, "leases");
    if (st != ZKL_OK || !s->locks || !s->leases) {
        free(s->locks);
        free(s->leases);
        zkl__lockobj_free(&s->obj);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    s->max_leases = max_leases;
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return ZKL_OK;
}

zkl_status zkl_semaphore_destroy(zkl_semaphore *s)
{
    ZKL__REFUSE_IN_LOG();
    int out;
    zkl_status st;
    zkl__clear_err();
    if (!s)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_destroy: semaphore is NULL");
    if ((st = zkl__lockobj_idle(&s->obj, "zkl_semaphore_destroy")) != ZKL_OK)
        return st;
    out = 0; /* (in a fork()ed child its leases are the parent's: it goes) */
    if (!zkl__forked(s->obj.c)) {
        pthread_mutex_lock(&s->mu);
        out = s->out;
        pthread_mutex_unlock(&s->mu);
    }
    if (out > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_semaphore_destroy: %d lease(s) of %s still out", out,
                         s->obj.path);
    zkl__lockobj_detach(&s->obj); /* the worker may be about to tell it an event */
    pthread_mutex_destroy(&s->mu);
    free(s->locks);
    free(s->leases);
    zkl__lockobj_free(&s->obj);
    return ZKL_OK;
}

/* n leases asked of s by fn: 1 to max_leases, and at most ZKL_SEMAPHORE_MANY_MAX. */
static zkl_status check_n(const zkl_semaphore *s, int n, const char *fn)
{
    if (n < 1 || n > s->max_leases)
        return zkl__fail(ZKL_EINVAL, "%s: %d leases asked of a semaphore of %d", fn, n,
                         s->max_leases);
    if (n > ZKL_SEMAPHORE_MANY_MAX)
        return zkl__fail(ZKL_EINVAL, "%s: %d leases asked at once, above %d", fn, n,
                         ZKL_SEMAPHORE_MANY_MAX);
    return ZKL_OK;
}

/* The internal mutex's arguments. */
static void inner_args(const zkl_semaphore *s, int64_t deadline, zkl__acquire_args *a)
{
    memset(a, 0, sizeof *a);
    a->path = s->locks;
    a->driver = &zkl__mutex_driver;
    a->deadline = deadline;
    a->token_lazy = true; /* nobody asks for the internal lock's token */
    /* Its hand-offs are the semaphore's critical path; the look-ahead's
     * request still leaves a lease below Curator's nine. */
    a->lookahead = ZKL__LOOKAHEAD_ON;
}

/* A lease's; known: the count leaves room for it (no listing, no wait). */
static void lease_args(zkl_semaphore *s, int64_t deadline, bool known, zkl__acquire_args *a)
{
    memset(a, 0, sizeof *a);
    a->path = s->leases;
    a->driver = &zkl__lease_driver;
    a->ctx = &s->max_leases;
    a->deadline = deadline;
    a->no_restart = true;
    a->known_granted = known;
}

/* hold, a lease of s, is out: counted and listed, the caller's as *out. */
static zkl_status keep_lease(zkl_semaphore *s, zkl__hold *hold, zkl_lease **out)
{
    zkl_lease *l = calloc(1, sizeof *l);
    if (!l) {
        zkl__lock_release(s->obj.c, hold);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    l->sem = s;
    l->hold = *hold;
    pthread_mutex_lock(&s->mu);
    s->out++;
    DL_PREPEND(s->out_list, l);
    pthread_mutex_unlock(&s->mu);
    *out = l;
    return ZKL_OK;
}

/*
 * One round under the internal mutex, released on every path: a lease as
 * Curator takes one (listing the leases, waiting for the count to drop if
 * need be), then, while the count leaves room, more leases with no listing
 * and no wait. The count is read once (the parent's stat, O(1)) and can
 * only fall while we hold the internal mutex, since every lease is made
 * under it (Curator's rule too). So n leases cost two listings, not n
 * listings of up to n names. Up to want leases go to out[]; *got counts
 * them, on failure too.
 */
static zkl_status lease_round(zkl_semaphore *s, int want, int64_t deadline, zkl_lease **out,
                              int *got)
{
    zkl_client *c = s->obj.c;
    zkl__acquire_args a;
    zkl__hold inner = {0}, lease = {0};
    int count = 0;
    zkl_status st;
    *got = 0;
    inner_args(s, deadline, &a);
    if ((st = zkl__lock_acquire(c, &a, &inner)) != ZKL_OK)
        return st;
    lease_args(s, deadline, false, &a);
    if ((st = zkl__lock_acquire(c, &a, &lease)) == ZKL_OK &&
        (st = keep_lease(s, &lease, &out[0])) == ZKL_OK)
        (*got)++;
    if (st == ZKL_OK && want > 1)
        st = zkl__child_count(c, s->leases, &count);
    lease_args(s, deadline, true, &a);
    while (st == ZKL_OK && *got < want && count < s->max_leases && zkl__now_ms() < deadline) {
        memset(&lease, 0, sizeof lease);
        if ((st = zkl__lock_acquire(c, &a, &lease)) == ZKL_OK &&
            (st = keep_lease(s, &lease, &out[*got])) == ZKL_OK) {
            (*got)++;
            count++;
        }
    }
    zkl__err_keep(); /* a failure's message, not the release's */
    zkl__lock_release(c, &inner);
    zkl__err_unkeep();
    return st;
}

/* Return the leases v[0..n-1] and clear them, keeping the failure's message. */
static void return_all(zkl_lease **v, int n)
{
    zkl__err_keep();
    while (n-- > 0) {
        zkl_lease_return(v[n]);
        v[n] = NULL;
    }
    zkl__err_unkeep();
}

zkl_status zkl_semaphore_acquire_many(zkl_semaphore *s, int n, int timeout_ms, zkl_lease **leases)
{
    ZKL__REFUSE_IN_LOG();
    int64_t deadline, t0 = zkl__now_us();
    int i, k, got;
    zkl_status st;
    zkl__clear_err();
    if (!s || !leases)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_acquire: NULL argument");
    if ((st = check_n(s, n, "zkl_semaphore_acquire")) != ZKL_OK)
        return st;
    st = zkl__check_timeout(timeout_ms, "zkl_semaphore_acquire");
    if (st != ZKL_OK)
        return st;
    for (i = 0; i < n; i++)
        leases[i] = NULL;
    deadline = zkl__deadline(timeout_ms);
    zkl__lockobj_enter(&s->obj); /* zkl_semaphore_destroy refuses meanwhile */
    for (i = 0; i < n && st == ZKL_OK; i += got) {
        /* one deadline for all: a lease that needs no wait still takes its
         * round trips, and n of them may outlast the timeout */
        got = 0;
        if (i > 0 && zkl__now_ms() >= deadline)
            st = zkl__fail(ZKL_ETIMEDOUT,
                           "timed out acquiring %d leases of %s: %d taken by the deadline", n,
                           s->obj.path, i);
        else
            st = lease_round(s, n - i, deadline, &leases[i], &got);
        for (k = 0; k < got; k++)
            zkl__stats_acquired(s->stats, s->obj.c, &leases[i + k]->hold, s, zkl__now_us() - t0);
        if (st == ZKL_ELOST && zkl__now_ms() < deadline) {
            return_all(&leases[i], got); /* lost while counting: queue again */
            got = 0;
            st = ZKL_OK;
        }
    }
    if (st != ZKL_OK) {
        zkl__stats_failed(s->stats, st);
        return_all(leases, i);
    }
    zkl__lockobj_leave(&s->obj);
    return st;
}

/* ---- async: the steps of a lease round one lease at a time, as a plan of the core's async handles
 * ---- */

enum { SEM_START, SEM_INNER, SEM_LEASE };

/* The next step: the internal lock, or (after it) a lease. */
static void sem_args(zkl_op *op, int stage, zkl__acquire_args *a)
{
    zkl_semaphore *s = op->obj;
    memset(a, 0, sizeof *a);
    a->deadline = op->deadline;
    if (stage == SEM_INNER) {
        a->path = s->locks;
        a->driver = &zkl__mutex_driver;
        a->token_lazy = true;
        a->lookahead = ZKL__LOOKAHEAD_ON;
    } else {
        a->path = s->leases;
        a->driver = &zkl__lease_driver;
        a->ctx = &s->max_leases;
        a->no_restart = true;
    }
    op->stage = stage;
}

/* The metrics of a finished async acquire: each lease granted, or the timeout. */
static void sem_counted(zkl_op *op, zkl_status st)
{
    zkl__lockstats *stats = ((zkl_semaphore *)op->obj)->stats;
    int i;
    if (st != ZKL_OK) {
        zkl__stats_failed(stats, st);
        return;
    }
    op->at = 1; /* granted: its leases' hold times count at release (sem_end) */
    for (i = 0; i < op->nholds; i++)
        zkl__stats_acquired(stats, op->c, &op->holds[i], op->obj, zkl__now_us() - op->started_us);
}

static bool sem_next(zkl_op *op, zkl_status st, zkl__hold *got, zkl_client **c,
                     zkl__acquire_args *a, zkl_status *final)
{
    (void)c;
    if (op->stage == SEM_START || (op->stage == SEM_INNER && st == ZKL_OK)) {
        if (got) { /* the internal lock: now count the leases */
            *op->inner = *got;
            got->node = NULL;
        }
        sem_args(op, op->stage == SEM_START ? SEM_INNER : SEM_LEASE, a);
        return true;
    }
    if (op->stage == SEM_LEASE) {
        zkl__err_keep();
        zkl__lock_release(op->c, op->inner); /* on every path, as acquire_one */
        zkl__err_unkeep();
        if (st == ZKL_OK && zkl__op_keep(op, got) && op->nholds < op->want) {
            sem_args(op, SEM_INNER, a); /* the next lease */
            return true;
        }
        if (st == ZKL_ELOST && zkl__now_ms() < op->deadline) {
            sem_args(op, SEM_INNER, a); /* session lost while counting: queue again */
            return true;
        }
    }
    if (st != ZKL_OK)
        zkl__op_let_go(op); /* all or none */
    sem_counted(op, st);
    *final = st;
    return false;
}

static void sem_end(zkl_op *op)
{
    zkl_semaphore *s = op->obj;
    int i;
    for (i = 0; op->at && i < op->want; i++) /* granted, and let go now */
        zkl__stats_released(s->stats, s->obj.c, &op->holds[i], op->let_go_st);
    pthread_mutex_lock(&s->mu);
    s->out--;
    pthread_mutex_unlock(&s->mu);
}

zkl_status zkl_semaphore_acquire_async(zkl_semaphore *s, int n, int timeout_ms, zkl_op_fn fn,
                                       void *userdata, zkl_op **op)
{
    ZKL__REFUSE_IN_LOG();
    static const zkl__plan plan = {sem_next, sem_end, true};
    static const char *const what = "zkl_semaphore_acquire_async";
    zkl_status st;
    zkl__clear_err();
    if (op)
        *op = NULL;
    if (!s || !fn || !op)
        return zkl__fail(ZKL_EINVAL, "%s: NULL argument", what);
    if ((st = check_n(s, n, what)) != ZKL_OK)
        return st;
    if ((st = zkl__check_timeout(timeout_ms, what)) != ZKL_OK)
        return st;
    pthread_mutex_lock(&s->mu);
    s->out++; /* the handle counts as out until released */
    pthread_mutex_unlock(&s->mu);
    st = zkl__async_start(s->obj.c, &plan, what, s, s->obj.path, n, timeout_ms, fn, userdata, op);
    if (st != ZKL_OK) {
        pthread_mutex_lock(&s->mu);
        s->out--;
        pthread_mutex_unlock(&s->mu);
    }
    return st;
}

zkl_status zkl_semaphore_acquire(zkl_semaphore *s, int timeout_ms, zkl_lease **lease)
{
    ZKL__REFUSE_IN_LOG();
    return zkl_semaphore_acquire_many(s, 1, timeout_ms, lease);
}

zkl_status zkl_lease_return(zkl_lease *l)
{
    ZKL__REFUSE_IN_LOG();
    zkl_semaphore *s;
    zkl__hold hold;
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_lease_return: lease is NULL");
    s = l->sem;
    if (zkl__forked(s->obj.c)) { /* the parent's lease: nothing sent, s->mu not taken */
        st = zkl__lock_release(s->obj.c, &l->hold);
        free(l);
        return st;
    }
    hold = l->hold; /* (the release frees its node) */
    st = zkl__lock_release(s->obj.c, &l->hold);
    zkl__stats_released(s->stats, s->obj.c, &hold, st);
    pthread_mutex_lock(&s->mu);
    s->out--;
    DL_DELETE(s->out_list, l);
    pthread_mutex_unlock(&s->mu);
    free(l);
    return st;
}

bool zkl_lease_is_valid(const zkl_lease *l)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    return l && !zkl__forked(l->sem->obj.c) && zkl__hold_alive(l->sem->obj.c, l->hold.epoch);
}

zkl_status zkl_lease_remaining(const zkl_lease *l, int64_t *ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_lease_remaining: NULL argument");
    return zkl__lease_remaining(l->sem->obj.c, l->hold.epoch, l->hold.node, ms);
}

int64_t zkl_lease_fencing_token(const zkl_lease *l)
{
    return l ? l->hold.czxid : 0;
}

const char *zkl_lease_node(const zkl_lease *l)
{
    return l ? l->hold.node : NULL;
}

zkl_status zkl_lease_guarded_write(zkl_lease *l, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (failed)
        *failed = SIZE_MAX;
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_lease_guarded_write: lease is NULL");
    return zkl__guarded_write(&l->hold, 1, w, n, failed, "zkl_lease_guarded_write");
}

const zkl__hold *zkl__lease_hold(const zkl_lease *l)
{
    return &l->hold;
}

zkl_status zkl_semaphore_participants(zkl_semaphore *s, char ***paths, size_t *n)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!s || !paths || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_participants: NULL argument");
    zkl__lockobj_enter(&s->obj);
    st = zkl__participants(s->obj.c, s->leases, zkl__lease_driver.sort_markers, paths, n);
    zkl__lockobj_leave(&s->obj);
    return st;
}

zkl_status zkl_semaphore_on_state(zkl_semaphore *s, zkl_hold_state_fn fn, void *userdata)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!s)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_on_state: semaphore is NULL");
    return zkl__lockobj_on_state(&s->obj, fn, userdata);
}
