/*
 * cohort.c - local hand-off between the threads of one lock object: see
 * cohort.h (DESIGN there).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <utlist.h>

#include "base/fault.h"
#include "base/util.h"
#include "core/objects/cohort.h"
#include "services/lease.h"

enum { W_WAITING, W_ACQUIRE, W_GRANTED };

/* A local waiter, on its own thread's stack. */
typedef struct waiter {
    struct waiter *prev, *next; /* utlist's DL: the cohort's FIFO */
    pthread_cond_t cv;
    int state;      /* W_* */
    zkl__hold hold; /* W_GRANTED: the hold passed on */
} waiter;

struct zkl__cohort {
    pthread_mutex_t mu;
    int max_streak;
    int64_t max_ms;
    bool busy;          /* the baton is taken */
    waiter *queue;      /* FIFO (utlist DL) */
    int streak;         /* holds in the current streak */
    int64_t started_ms; /* when its first hold was granted */
    atomic_bool ended;  /* a revoke: no passing on at the next release */
    uint64_t passes;
};

zkl__cohort *zkl__cohort_new(int max_streak, int max_ms)
{
    zkl__cohort *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    if (pthread_mutex_init(&k->mu, NULL) != 0) {
        free(k);
        return NULL;
    }
    k->max_streak = max_streak;
    k->max_ms = max_ms;
    atomic_init(&k->ended, false);
    return k;
}

void zkl__cohort_free(zkl__cohort *k)
{
    if (!k)
        return;
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* The first waiter, taken off the queue (NULL: none). Caller holds mu. */
static waiter *pop_locked(zkl__cohort *k)
{
    waiter *w = k->queue;
    if (w)
        DL_DELETE(k->queue, w);
    return w;
}

/* The baton to the first waiter, or down if nobody waits. Caller holds mu. */
static void baton_on_locked(zkl__cohort *k)
{
    waiter *w = pop_locked(k);
    if (!w) {
        k->busy = false;
        return;
    }
    w->state = W_ACQUIRE;
    atomic_store(&k->ended, false);
    pthread_cond_signal(&w->cv);
}

zkl__cohort_turn zkl__cohort_enter(zkl__cohort *k, int64_t deadline, zkl__hold *got)
{
    waiter w = {0};
    zkl__cohort_turn turn;
    pthread_mutex_lock(&k->mu);
    if (!k->busy) {
        k->busy = true;
        atomic_store(&k->ended, false); /* a revoke from here on is for the node to come */
        pthread_mutex_unlock(&k->mu);
        return ZKL__COHORT_ACQUIRE;
    }
    if (zkl__cond_init(&w.cv) != 0) { /* no condition to sleep on: stand in ZooKeeper's line */
        pthread_mutex_unlock(&k->mu);
        return ZKL__COHORT_ACQUIRE;
    }
    w.state = W_WAITING;
    /* w lives on this stack while queued: it is off the queue before we
     * return (taken by a pass or the baton, or by us on the timeout) */
    // cppcheck-suppress autoVariables
    DL_APPEND(k->queue, &w);
    (void)ZKL_FAULT(NULL, COHORT_QUEUED, NULL);
    while (w.state == W_WAITING)
        if (zkl__cond_wait_until(&w.cv, &k->mu, deadline) == ETIMEDOUT && w.state == W_WAITING) {
            DL_DELETE(k->queue, &w);
            break;
        }
    turn = w.state == W_GRANTED   ? ZKL__COHORT_GRANTED
           : w.state == W_ACQUIRE ? ZKL__COHORT_ACQUIRE
                                  : ZKL__COHORT_TIMEDOUT;
    if (turn == ZKL__COHORT_GRANTED)
        *got = w.hold;
    pthread_mutex_unlock(&k->mu);
    pthread_cond_destroy(&w.cv);
    return turn;
}

void zkl__cohort_acquired(zkl__cohort *k, bool ok)
{
    pthread_mutex_lock(&k->mu);
    if (ok) {
        k->streak = 1;
        k->started_ms = zkl__now_ms();
    } else {
        baton_on_locked(k);
    }
    pthread_mutex_unlock(&k->mu);
}

bool zkl__cohort_pass(zkl__cohort *k, zkl_client *c, zkl__hold *last)
{
    waiter *w;
    pthread_mutex_lock(&k->mu);
    if (!k->queue || k->streak >= k->max_streak || atomic_load(&k->ended) ||
        zkl__now_ms() - k->started_ms >= k->max_ms || !zkl__lease_fresh(c, last->epoch)) {
        pthread_mutex_unlock(&k->mu);
        return false;
    }
    w = pop_locked(k);
    w->hold = *last;
    w->state = W_GRANTED;
    k->streak++;
    k->passes++;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&k->mu);
    return true;
}

void zkl__cohort_released(zkl__cohort *k)
{
    pthread_mutex_lock(&k->mu);
    baton_on_locked(k);
    pthread_mutex_unlock(&k->mu);
}

void zkl__cohort_end_streak(zkl__cohort *k)
{
    atomic_store(&k->ended, true);
}

uint64_t zkl__cohort_passes(zkl__cohort *k)
{
    uint64_t n;
    pthread_mutex_lock(&k->mu);
    n = k->passes;
    pthread_mutex_unlock(&k->mu);
    return n;
}
