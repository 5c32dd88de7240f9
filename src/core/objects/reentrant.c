/*
 * reentrant.c - see reentrant.h: first the per-thread table of holds, then
 * the side (a lock path and its driver) that stands on it.
 */
#include <stdlib.h>
#include <string.h>

#include "services/lease.h"
#include "services/revoke.h"
#include "core/objects/cohort.h"
#include "core/objects/stats.h"
#include "core/objects/reentrant.h"
#include "core/engine/guarded.h"
#include "base/status.h"
#include "base/util.h"

/* ---- the per-thread table of holds ---- */

static void holders_init(zkl__holders *h)
{
    pthread_mutex_init(&h->mu, NULL);
    h->table = NULL;
}

/* Frees the table; the caller has checked it is empty. */
static void holders_destroy(zkl__holders *h)
{
    zkl__holder *e, *tmp;
    // NOLINTBEGIN(clang-analyzer-unix.Malloc): uthash's safe-delete loop
    HASH_ITER(hh, h->table, e, tmp)
    {
        HASH_DEL(h->table, e);
        zkl__revwatch_stop(e->hold.rev);
        free(e->hold.node);
        free(e);
    }
    // NOLINTEND(clang-analyzer-unix.Malloc)
    pthread_mutex_destroy(&h->mu);
}

/*
 * If the calling thread holds: count it up and return 1 (or return -1 with
 * nothing changed if its hold was lost). Return 0 if it holds nothing.
 */
static int holders_reenter(zkl__holders *h, zkl_client *c)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    int r = 0;
    uint64_t epoch = 0;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (e)
        epoch = e->hold.epoch;
    pthread_mutex_unlock(&h->mu);
    if (!e)
        return 0;
    /* Only this thread changes its own entry, so e stays valid here. */
    if (!zkl__hold_alive(c, epoch))
        return -1;
    pthread_mutex_lock(&h->mu);
    e->count++;
    r = 1;
    pthread_mutex_unlock(&h->mu);
    return r;
}

/* Record a new hold (count 1) for the calling thread. Takes hold->node. */
static zkl_status holders_add(zkl__holders *h, zkl__hold *hold)
{
    zkl__holder *e = calloc(1, sizeof *e);
    if (!e)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    e->tid = zkl__thread_id();
    e->count = 1;
    e->hold = *hold;
    pthread_mutex_lock(&h->mu);
    HASH_ADD(hh, h->table, tid, sizeof e->tid, e);
    pthread_mutex_unlock(&h->mu);
    if (!e->hh.tbl) { /* not added (out of memory: base/hash.h): the caller still has the hold */
        free(e);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    hold->node = NULL;
    return ZKL_OK;
}

/*
 * Count down the calling thread's hold. ZKL_ENOTOWNER if it holds nothing.
 * At zero the entry is removed and its hold moved to *last (last->node set);
 * otherwise last->node is NULL.
 */
static zkl_status holders_leave(zkl__holders *h, zkl__hold *last)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    memset(last, 0, sizeof *last);
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (!e) {
        pthread_mutex_unlock(&h->mu);
        return zkl__fail(ZKL_ENOTOWNER, "the calling thread does not hold this lock");
    }
    if (--e->count == 0) {
        HASH_DEL(h->table, e);
        *last = e->hold;
        free(e);
    } else {
        last->epoch = e->hold.epoch;
    }
    pthread_mutex_unlock(&h->mu);
    return ZKL_OK;
}

/* A copy of the calling thread's hold (ZKL_ENOTOWNER if none). */
static zkl_status holders_get(zkl__holders *h, zkl__hold *out)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    zkl_status st;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    st = e ? zkl__hold_copy(&e->hold, out)
           : zkl__fail(ZKL_ENOTOWNER, "the calling thread does not hold this lock");
    pthread_mutex_unlock(&h->mu);
    return st;
}

/* Whether the calling thread has an entry, and (if epoch) its session epoch.
 * Allocates nothing, so that out of memory never reads as "not held". */
static bool holders_has(zkl__holders *h, uint64_t *epoch)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (e && epoch)
        *epoch = e->hold.epoch;
    pthread_mutex_unlock(&h->mu);
    return e != NULL;
}

/* True if any thread holds through session epoch. */
bool zkl__holders_in_epoch(zkl__holders *h, uint64_t epoch)
{
    zkl__holder *e, *tmp;
    bool found = false;
    pthread_mutex_lock(&h->mu);
    HASH_ITER(hh, h->table, e, tmp)
    {
        // cppcheck-suppress uninitvar ; HASH_ITER sets e before the body runs
        if (e->hold.epoch == epoch)
            found = true;
    }
    pthread_mutex_unlock(&h->mu);
    return found;
}

/* Remember the calling thread's token once it was fetched. */
static void holders_set_token(zkl__holders *h, int64_t czxid)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (e)
        e->hold.czxid = czxid;
    pthread_mutex_unlock(&h->mu);
}

/* Number of threads holding. */
unsigned zkl__holders_count(zkl__holders *h)
{
    unsigned n;
    pthread_mutex_lock(&h->mu);
    n = HASH_COUNT(h->table);
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* ---- the side ---- */

void zkl__side_init(zkl__side *sd, zkl_client *c, const char *path, const zkl__driver *d)
{
    memset(sd, 0, sizeof *sd);
    sd->c = c;
    sd->path = path;
    sd->driver = d;
    holders_init(&sd->holders);
}

void zkl__side_destroy(zkl__side *sd)
{
    holders_destroy(&sd->holders);
    zkl__cohort_free(sd->cohort);
    sd->cohort = NULL;
}

zkl_status zkl__side_local_handoff(zkl__side *sd, int max_streak, int max_ms, const char *what)
{
    zkl__cohort *k;
    bool fresh;
    if (max_streak < 1 || max_ms < 1)
        return zkl__fail(ZKL_EINVAL, "%s: max_streak (%d) and max_ms (%d) must be at least 1", what,
                         max_streak, max_ms);
    if (!(k = zkl__cohort_new(max_streak, max_ms)))
        return zkl__fail(ZKL_ENOMEM, "%s: out of memory", what);
    pthread_mutex_lock(&sd->c->mu);
    fresh = sd->mode == ZKL__MODE_NONE && !sd->cohort;
    if (fresh) {
        sd->mode = ZKL__MODE_THREAD;
        sd->cohort = k;
    }
    pthread_mutex_unlock(&sd->c->mu);
    if (fresh)
        return ZKL_OK;
    zkl__cohort_free(k);
    return zkl__fail(ZKL_EBUSY,
                     "%s: %s was acquired already, or has local hand-off on: turn it on once, "
                     "before the first acquire",
                     what, sd->path);
}

void zkl__side_end_streak(zkl__side *sd)
{
    if (sd->cohort)
        zkl__cohort_end_streak(sd->cohort);
}

uint64_t zkl__side_local_handoffs(zkl__side *sd)
{
    return sd->cohort ? zkl__cohort_passes(sd->cohort) : 0;
}

/* Let go of a hold nobody in this thread counts any more: to a local waiter
 * if the cohort passes it on, else through the core. */
static zkl_status let_go(zkl__side *sd, zkl__hold *last, bool may_pass)
{
    zkl_status st;
    if (sd->cohort && may_pass && zkl__cohort_pass(sd->cohort, sd->c, last)) {
        zkl__stats_passed(sd->stats);
        return ZKL_OK;
    }
    st = zkl__lock_release(sd->c, last);
    if (sd->cohort)
        zkl__cohort_released(sd->cohort);
    return st;
}

/* A hold through the core, or from the cohort. */
static zkl_status take(zkl__side *sd, int timeout_ms, const void *ctx, const char *fixed_suffix,
                       zkl__hold *hold)
{
    zkl__acquire_args a;
    zkl_status st;
    zkl__side_args(sd, timeout_ms, ctx, fixed_suffix, &a);
    if (sd->cohort) {
        switch (zkl__cohort_enter(sd->cohort, a.deadline, hold)) {
        case ZKL__COHORT_TIMEDOUT:
            return zkl__fail(ZKL_ETIMEDOUT,
                             "timed out waiting for %s behind this process's own threads "
                             "(local hand-off)",
                             sd->path);
        case ZKL__COHORT_GRANTED:
            hold->granted_us = zkl__now_us(); /* this thread's hold begins */
            if (zkl__hold_alive(sd->c, hold->epoch))
                return ZKL_OK; /* passed on: the node stays at the head */
            /* lost since it was passed on: we keep the baton and take a new place */
            (void)zkl__lock_release(sd->c, hold);
            break;
        default: break;
        }
    }
    st = zkl__lock_acquire(sd->c, &a, hold);
    if (sd->cohort)
        zkl__cohort_acquired(sd->cohort, st == ZKL_OK);
    return st;
}

void zkl__side_args(const zkl__side *sd, int timeout_ms, const void *ctx, const char *fixed_suffix,
                    zkl__acquire_args *a)
{
    memset(a, 0, sizeof *a);
    a->path = sd->path;
    a->driver = sd->driver;
    a->ctx = ctx;
    a->data = sd->data;
    a->data_len = sd->data_len;
    a->deadline = zkl__deadline(timeout_ms);
    a->fixed_suffix = fixed_suffix;
    a->token_lazy = !sd->token_at_grant;
    a->lookahead = sd->lookahead;
    a->revoke_cb = sd->revoke_cb;
    a->revoke_ctx = sd->revoke_ctx;
}

zkl_status zkl__side_mode(zkl__side *sd, int mode, const char *fn)
{
    int was;
    pthread_mutex_lock(&sd->c->mu);
    was = sd->mode;
    if (was == ZKL__MODE_NONE)
        sd->mode = mode;
    pthread_mutex_unlock(&sd->c->mu);
    if (was == ZKL__MODE_NONE || was == mode)
        return ZKL_OK;
    return zkl__fail(ZKL_EBUSY,
                     "%s: %s is in %s mode (its first acquire was %s); a lock object is "
                     "in one mode for its life",
                     fn, sd->path, was == ZKL__MODE_ASYNC ? "async" : "thread",
                     was == ZKL__MODE_ASYNC ? "async: holds belong to zkl_op handles"
                                            : "blocking: holds belong to threads");
}

int zkl__side_async_ops(zkl__side *sd)
{
    int n;
    pthread_mutex_lock(&sd->c->mu);
    n = sd->async_ops;
    pthread_mutex_unlock(&sd->c->mu);
    return n;
}

zkl_status zkl__side_acquire(zkl__side *sd, int timeout_ms, const void *ctx,
                             const char *fixed_suffix)
{
    zkl__hold hold = {0};
    zkl_status st;
    int re;
    int64_t t0 = zkl__now_us();
    if (zkl__forked(sd->c))
        return zkl__closed_fail(sd->c, sd->path);
    if ((st = zkl__refuse_on_worker(sd->c, "a blocking acquire")) != ZKL_OK)
        return zkl__fail_prefix(st, "%s: ", sd->path);
    st = zkl__side_mode(sd, ZKL__MODE_THREAD, "acquire");
    if (st != ZKL_OK)
        return st;
    re = holders_reenter(&sd->holders, sd->c);
    if (re > 0) {
        zkl__stats_acquired(sd->stats, sd->c, NULL, NULL, zkl__now_us() - t0);
        return ZKL_OK;
    }
    if (re < 0)
        return zkl__fail(ZKL_ELOST, "%s: this thread's hold was lost with its session; release it",
                         sd->path);
    st = take(sd, timeout_ms, ctx, fixed_suffix, &hold);
    if (st != ZKL_OK) {
        zkl__stats_failed(sd->stats, st);
        return st;
    }
    zkl__stats_mark(sd->stats, sd->c, &hold, sd); /* the table's copy carries the tally */
    st = holders_add(&sd->holders, &hold);
    if (st != ZKL_OK) {
        zkl__stats_unmark(sd->c, &hold);
        (void)let_go(sd, &hold, true);
    } else {
        zkl__stats_acquired(sd->stats, sd->c, NULL, NULL, zkl__now_us() - t0);
    }
    return st;
}

/*
 * In a fork()ed child a side holds nothing (client/fork.c): its table is the
 * parent's threads', and its lock may be held by a thread that is not here,
 * so it is not looked at.
 */
static zkl_status forked_lost(const zkl__side *sd)
{
    return zkl__fail(ZKL_ELOST,
                     "%s: the hold is the parent's: this process is a fork() child of the one "
                     "that holds it, and holds nothing",
                     sd->path);
}

zkl_status zkl__side_release_ex(zkl__side *sd, bool may_pass)
{
    zkl__hold last, last_copy;
    zkl_status st;
    if (zkl__forked(sd->c))
        return forked_lost(sd);
    st = holders_leave(&sd->holders, &last);
    if (st != ZKL_OK)
        return st;
    if (!last.node) /* still held at a lower level */
        return zkl__hold_alive(sd->c, last.epoch)
                   ? ZKL_OK
                   : zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", sd->path);
    last_copy = last; /* (let_go frees its node) */
    st = let_go(sd, &last, may_pass);
    zkl__stats_released(sd->stats, sd->c, &last_copy, st);
    return st;
}

zkl_status zkl__side_release(zkl__side *sd)
{
    return zkl__side_release_ex(sd, true);
}

bool zkl__side_has_entry(zkl__side *sd)
{
    return !zkl__forked(sd->c) && holders_has(&sd->holders, NULL);
}

bool zkl__side_is_held(zkl__side *sd)
{
    uint64_t epoch;
    return !zkl__forked(sd->c) && holders_has(&sd->holders, &epoch) &&
           zkl__hold_alive(sd->c, epoch);
}

zkl_status zkl__side_current(zkl__side *sd, zkl__hold *h)
{
    zkl_status st;
    memset(h, 0, sizeof *h);
    if (zkl__forked(sd->c))
        return forked_lost(sd);
    st = holders_get(&sd->holders, h);
    if (st != ZKL_OK)
        return st;
    if (!zkl__hold_alive(sd->c, h->epoch)) {
        free(h->node);
        h->node = NULL;
        return zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", sd->path);
    }
    return ZKL_OK;
}

zkl_status zkl__side_token(zkl__side *sd, int64_t *token)
{
    zkl__hold h;
    zkl_status st = zkl__side_current(sd, &h);
    if (st != ZKL_OK)
        return st;
    if (h.czxid == 0) { /* the create rode in a multi: ask once, remember */
        st = zkl__hold_token(sd->c, &h, &h.czxid);
        if (st == ZKL_OK)
            holders_set_token(&sd->holders, h.czxid);
    }
    *token = h.czxid;
    free(h.node);
    return st;
}

zkl_status zkl__side_node(zkl__side *sd, char **node)
{
    zkl__hold h;
    zkl_status st = zkl__side_current(sd, &h);
    if (st != ZKL_OK)
        return st;
    *node = h.node;
    return ZKL_OK;
}

zkl_status zkl__side_guarded(zkl__side *sd, zkl_write *w, size_t n, size_t *failed, const char *fn)
{
    zkl__hold h;
    zkl_status st;
    if ((st = zkl__guard_check_writes(w, n, failed, fn)) != ZKL_OK)
        return st;
    if ((st = zkl__side_current(sd, &h)) != ZKL_OK)
        return zkl__fail_prefix(st, "%s: ", fn);
    st = zkl__guarded_write(&h, 1, w, n, failed, fn);
    free(h.node);
    return st;
}

zkl_status zkl__side_lease_remaining(zkl__side *sd, int64_t *ms)
{
    uint64_t epoch;
    if (zkl__forked(sd->c))
        return forked_lost(sd);
    if (!holders_has(&sd->holders, &epoch))
        return zkl__fail(ZKL_ENOTOWNER, "%s: this thread does not hold it", sd->path);
    return zkl__lease_remaining(sd->c, epoch, sd->path, ms);
}
