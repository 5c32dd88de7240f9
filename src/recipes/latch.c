/*
 * latch.c - zkl_latch, Curator's LeaderLatch (zklock/leader.h): leadership
 * is an async hold of the latch driver (core/policy/drivers.c: index 0
 * leads, watch the node before ours) with no deadline; its end is the
 * hold's end, told by the hold-state notices of the lock object.
 *
 * DESIGN
 *
 * One state per latch (IDLE, JOINING: a handle waits; LEADING: the handle
 * holds) and one flags word, under the latch's own mutex l->mu, taken
 * before c->mu (the handle calls take c->mu inside) and after the client's
 * lsn.mu (the notices run under it). Threads:
 *  - the caller's: start (a handle is asked for), leave (canceled or
 *    released), destroy, and the reads (is_leader, token, node, await);
 *  - the delivery (worker or zkl_client_dispatch): the handle's report
 *    (on_op: GAINED, or a failure, which joins again) and posted end
 *    reports (ev_deliver: LOST, LEASE_ENDED, LEFT);
 *  - the worker: the notices (on_notice: LOST, LEASE_EXPIRED end a
 *    leadership, release its handle, join again, and post the end report).
 * User callbacks run with no lock held, counted in l->calling; destroy waits
 * out one running on another thread, and from inside one the latch is
 * freed when it returns. The latch is freed when it is destroyed, no
 * callback runs, no handle is out and no end report is on its way
 * (maybe_free). Ordering: an end report is posted before the next handle
 * can be granted, and the delivery runs posted reports before handles'
 * (core/engine/engine.c), so GAINED and ends alternate as delivered.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "core/async/async.h"
#include "core/engine/acq.h"
#include "core/engine/guarded.h"
#include "core/engine/report.h"
#include "core/objects/lockobj.h"
#include "core/objects/reentrant.h"
#include "core/objects/stats.h"
#include "services/revoke.h"
#include "zklock/async.h"
#include "zklock/leader.h"

enum latch_state { IDLE, JOINING, LEADING };

enum {
    F_LEAVING = 1u << 0,   /* a leave canceled the waiting handle, kept (no memory for left) */
    F_DESTROYED = 1u << 1, /* zkl_latch_destroy was called: no more user callbacks */
    F_ANNOUNCED = 1u << 2, /* GAINED was told, its end not yet */
    F_FREED = 1u << 3,     /* maybe_free has taken it */
};

struct zkl_latch {
    zkl__lockobj obj; /* first: the lock-object base */
    zkl__side side;
    zkl__lockstats *stats; /* its series' (the election families: metrics.h) */
    char *id;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* state changes (await), callbacks ending (destroy) */
    enum latch_state state;
    unsigned flags;
    zkl_op *op; /* JOINING: the waiting handle (once known); LEADING: the holding one */
    int64_t token;
    zkl_leader_fn fn;
    void *ud;
    int calling; /* user callbacks running */
    pthread_t caller;
    int awaiting;          /* threads in zkl_latch_await */
    int busy;              /* deliveries (on_op, ev_deliver) and destroys running */
    uint64_t term;         /* terms led so far: the current one's number */
    struct term_watch *tw; /* LEADING: the watch on the term's node */
    int unwatching;        /* term watches being stopped (after l->mu is let go) */
    zkl_op *delivering;    /* the handle whose report on_op runs */
    zkl_op *orphan;        /* that handle, ended meanwhile: on_op releases it */
    /* why it stopped taking part on its own (a join that failed), for await */
    zkl_status why;
    char *why_msg;
    int reports; /* end reports posted, not yet delivered */
    /* handles a leave canceled while they waited, whose reports are still to
     * come (on_op releases them): the latch may start again meanwhile */
    struct left_op {
        zkl_op *op;
    } * left;
    size_t nleft, capleft;
};

/* A term's watch on its node (services/revoke.h): an operator may delete it. */
typedef struct term_watch {
    zkl_latch *l;
    uint64_t term;
    zkl__revwatch *w;
} term_watch;

/* An end of leadership on its way to the callback. */
typedef struct end_report {
    zkl__report rep; /* first */
    zkl_latch *l;
    zkl_leader_event ev;
    int64_t token;
} end_report;

static void latch_free(zkl_latch *l)
{
    zkl__lockobj_detach(&l->obj);
    zkl__side_destroy(&l->side);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l->id);
    free(l->why_msg);
    free(l->left);
    zkl__lockobj_free(&l->obj);
}

/*
 * Whether l is to be freed now (l->mu held): destroyed, and nothing of it
 * left running or on its way. Decided in the same critical section that
 * ends the last of those, so exactly one thread frees it.
 */
static bool to_free_locked(zkl_latch *l)
{
    bool go = (l->flags & F_DESTROYED) && !(l->flags & F_FREED) && l->calling == 0 &&
              l->busy == 0 && !l->op && l->nleft == 0 && l->reports == 0 && l->state == IDLE &&
              !l->tw && l->unwatching == 0;
    if (go)
        l->flags |= F_FREED;
    return go;
}

/* End a delivery of l (busy, l->mu held): let go of the lock, and free l if it is the last. */
static void done_unlock(zkl_latch *l)
{
    bool go;
    l->busy--;
    pthread_cond_broadcast(&l->cv); /* a destroy may wait for the last delivery */
    go = to_free_locked(l);
    pthread_mutex_unlock(&l->mu);
    if (go)
        latch_free(l);
}

/* Tell the user of ev (l->mu held, let go meanwhile), unless destroyed. */
static void tell_locked(zkl_latch *l, zkl_leader_event ev, int64_t token)
{
    zkl_leader_fn fn = (l->flags & F_DESTROYED) ? NULL : l->fn;
    void *ud = l->ud;
    if (!fn)
        return;
    l->calling++;
    l->caller = pthread_self();
    pthread_mutex_unlock(&l->mu);
    fn(l, ev, token, ud);
    pthread_mutex_lock(&l->mu);
    l->calling--;
    pthread_cond_broadcast(&l->cv);
}

static void on_op(zkl_op *op, zkl_status st, const char *msg, void *ud);
static void watch_term_locked(zkl_latch *l, const zkl__hold *h);

/*
 * Ask for a new handle (l->mu held), its create made no sooner than
 * not_before (zkl__now_ms(); 0: at once): JOINING, or IDLE (and why) if it
 * cannot be.
 */
static zkl_status join_at_locked(zkl_latch *l, const char *what, int64_t not_before)
{
    zkl_op *op = NULL;
    zkl_status st;
    l->side.not_before = not_before; /* read by the plan's first step, in this call */
    st = zkl__async_side_acquire(&l->side, ZKL_WAIT_FOREVER, on_op, l, what, &op);
    l->side.not_before = 0;
    if (st != ZKL_OK) {
        l->state = IDLE;
        l->why = st;
        free(l->why_msg);
        l->why_msg = strdup(zkl_errmsg()); /* NULL without memory: said so */
        zkl__log(ZKL_LOG_WARN, "latch %s: no longer taking part: %s", l->obj.path,
                 l->why_msg ? l->why_msg : "out of memory");
        pthread_cond_broadcast(&l->cv);
        return st;
    }
    l->state = JOINING;
    l->op = op; /* its report takes l->mu first: it cannot have run */
    return ZKL_OK;
}

static zkl_status join_locked(zkl_latch *l, const char *what)
{
    return join_at_locked(l, what, 0);
}

/* Whether op is a handle left while it waited (l->mu held); it is forgotten. */
static bool was_left_locked(zkl_latch *l, zkl_op *op)
{
    size_t i;
    for (i = 0; i < l->nleft; i++)
        if (l->left[i].op == op) {
            l->left[i] = l->left[--l->nleft];
            pthread_cond_broadcast(&l->cv); /* a destroy may wait for it */
            return true;
        }
    return false;
}

/* The handle's report, on the delivery. */
static void on_op(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    zkl_latch *l = ud;
    int64_t token = 0;
    bool leaving, left;
    pthread_mutex_lock(&l->mu);
    l->busy++;
    l->delivering = op;
    left = was_left_locked(l, op); /* the latch may have started again since */
    if (!left)
        l->op = NULL;
    leaving = left || (l->flags & (F_LEAVING | F_DESTROYED)) || l->state != JOINING;
    if (st == ZKL_OK && !leaving && (st = zkl_op_fencing_token(op, &token)) == ZKL_OK) {
        l->state = LEADING;
        l->op = op;
        l->token = token;
        zkl__stats_term_began(l->stats, &op->holds[0], token);
        watch_term_locked(l, &op->holds[0]);
        if (l->flags & F_ANNOUNCED)
            zkl__log(ZKL_LOG_ERROR, "latch %s: a term began before the last one's end was told",
                     l->obj.path);
        l->flags |= F_ANNOUNCED;
        pthread_cond_broadcast(&l->cv);
        tell_locked(l, ZKL_LEADER_GAINED, token);
        if (l->orphan == op)          /* its leadership ended while GAINED was told */
            (void)zkl_op_release(op); /* from inside: freed on return */
        l->orphan = l->delivering = NULL;
        done_unlock(l);
        return;
    }
    (void)zkl_op_release(op); /* from inside: freed on return */
    if (left) {
        /* nothing of the latch's state is this handle's any more */
    } else if (leaving || st == ZKL_ECANCELED) {
        l->flags &= ~F_LEAVING;
        l->state = IDLE;
        pthread_cond_broadcast(&l->cv);
    } else if (st == ZKL_EINVAL) { /* refused as set up (no lease can be bounded): no retry */
        l->state = IDLE;
        l->why = st;
        free(l->why_msg);
        l->why_msg = msg ? strdup(msg) : NULL;
        zkl__log(ZKL_LOG_ERROR, "latch %s: stops taking part: %s", l->obj.path,
                 msg ? msg : "out of memory");
        pthread_cond_broadcast(&l->cv);
    } else { /* the wait failed (its session, memory): take part again */
        zkl__log(ZKL_LOG_WARN, "latch %s: joining again after: %s", l->obj.path,
                 st == ZKL_OK ? zkl_errmsg() : msg);
        (void)join_locked(l, "zkl_latch_start");
    }
    l->delivering = NULL;
    done_unlock(l);
}

static void ev_deliver(zkl__report *r)
{
    end_report *e = (end_report *)r;
    zkl_latch *l = e->l;
    zkl_leader_event ev = e->ev;
    int64_t token = e->token;
    free(e);
    pthread_mutex_lock(&l->mu);
    l->busy++;
    l->reports--;
    l->flags &= ~F_ANNOUNCED;
    tell_locked(l, ev, token);
    done_unlock(l);
}

/*
 * Release a granted handle (l->mu held; ZKL_ELOST for a lost hold: it goes
 * all the same). Its report made the latch LEADING, but on another thread
 * it may not have returned yet, and zkl_op_release refuses (ZKL_EBUSY)
 * until it has: while the report is still in on_op (telling GAINED, l->mu
 * let go), it is left to on_op, which releases it from inside; past on_op,
 * the report takes no lock of the latch's, and returns at once.
 */
static void let_go(zkl_latch *l, zkl_op *op)
{
    while (zkl_op_release(op) == ZKL_EBUSY) {
        if (l->delivering == op) {
            l->orphan = op;
            return;
        }
        sched_yield();
    }
}

/*
 * Leadership ends with ev (l->mu held, LEADING): its handle goes, and the
 * end is posted. Returns the term's watch, for unwatch once l->mu is let go.
 */
static term_watch *end_locked(zkl_latch *l, zkl_leader_event ev, bool tell)
{
    end_report *e = tell && (l->flags & F_ANNOUNCED) ? calloc(1, sizeof *e) : NULL;
    zkl_op *op = l->op;
    term_watch *tw = l->tw;
    l->tw = NULL;
    if (tw)
        l->unwatching++;
    l->op = NULL;
    l->state = IDLE;
    zkl__stats_term_ended(l->stats, (int)ev); /* before its node goes (let_go) */
    if (!e) {
        l->flags &= ~F_ANNOUNCED;
        if (tell && (l->flags & F_ANNOUNCED))
            zkl__log(ZKL_LOG_ERROR, "latch %s: out of memory: the end of leadership untold",
                     l->obj.path);
    }
    let_go(l, op);
    pthread_cond_broadcast(&l->cv);
    if (e) {
        e->rep.deliver = ev_deliver;
        e->l = l;
        e->ev = ev;
        e->token = l->token;
        l->reports++;
        zkl__report_post(l->obj.c, &e->rep);
    }
    return tw;
}

/*
 * Stop an ended term's watch, with no lock held (a stop waits out its
 * callback, which takes l->mu), and free l if that was the last of it.
 */
static void unwatch(zkl_latch *l, term_watch *tw)
{
    bool go;
    if (!tw)
        return;
    zkl__revwatch_stop(tw->w);
    free(tw);
    pthread_mutex_lock(&l->mu);
    l->unwatching--;
    pthread_cond_broadcast(&l->cv);
    go = to_free_locked(l);
    pthread_mutex_unlock(&l->mu);
    if (go)
        latch_free(l);
}

/* The term is lost, as why says (l->mu held, LEADING): it ends, told LOST,
 * and the latch joins again. Returns the term's watch, for unwatch. */
static term_watch *lost_locked(zkl_latch *l, const char *why)
{
    term_watch *tw;
    zkl__log(ZKL_LOG_WARN, "latch %s: %s: leadership lost", l->obj.path, why);
    tw = end_locked(l, ZKL_LEADER_LOST, true);
    if (!(l->flags & F_DESTROYED))
        (void)join_locked(l, "zkl_latch_start");
    return tw;
}

/* The term's node was deleted (an operator's delete): leadership is lost (on the worker). */
static void on_gone(void *ctx)
{
    term_watch *mine = ctx, *tw = NULL;
    zkl_latch *l = mine->l;
    pthread_mutex_lock(&l->mu);
    if (l->state == LEADING && l->tw == mine)
        tw = lost_locked(l, "the leader's node was deleted");
    pthread_mutex_unlock(&l->mu);
    unwatch(l, tw); /* from inside its own callback: no wait */
}

/* Watch the new term's node (l->mu held): a delete of it ends the term. */
static void watch_term_locked(zkl_latch *l, const zkl__hold *h)
{
    term_watch *tw = calloc(1, sizeof *tw);
    if (tw) {
        tw->l = l;
        tw->term = ++l->term;
        tw->w = zkl__nodewatch_start(l->obj.c, h->node, h->epoch, NULL, on_gone, tw);
    }
    if (!tw || !tw->w) {
        free(tw);
        zkl__log(ZKL_LOG_WARN,
                 "latch %s: out of memory: a delete of the leader's node will not be noticed",
                 l->obj.path);
        return;
    }
    l->tw = tw;
}

/* A connection event of a session the latch holds in (on the worker). */
static void on_notice(void *lock, zkl_conn_state st, void *ud)
{
    zkl_latch *l = ud;
    (void)lock;
    if (st != ZKL_STATE_LOST && st != ZKL_STATE_LEASE_EXPIRED)
        return; /* a disconnect within the lease: still leading */
    term_watch *tw = NULL;
    pthread_mutex_lock(&l->mu);
    if (l->state == LEADING) {
        tw = end_locked(l, st == ZKL_STATE_LOST ? ZKL_LEADER_LOST : ZKL_LEADER_LEASE_ENDED, true);
        if (!(l->flags & F_DESTROYED))
            (void)join_locked(l, "zkl_latch_start");
    }
    pthread_mutex_unlock(&l->mu);
    unwatch(l, tw); /* on the worker: no wait */
}

static bool holds_in(void *self, uint64_t epoch)
{
    zkl_latch *l = self;
    return zkl__side_async_in(&l->side, epoch);
}

/* A latch over driver d's nodes (fn: the public call, for messages). */
static zkl_status latch_new(zkl_client *c, const char *path, const char *id, const zkl__driver *d,
                            const char *fn, zkl_latch **out)
{
    zkl__lockobj *obj;
    zkl__lockstats *stats;
    zkl_latch *l;
    size_t len = id ? strlen(id) : 0;
    zkl_status st;
    zkl__clear_err();
    if (out)
        *out = NULL;
    if (len > ZKL_NODE_DATA_MAX)
        return zkl__fail(ZKL_EINVAL, "%s: the id has %zu bytes (at most %d)", fn, len,
                         ZKL_NODE_DATA_MAX);
    st = zkl__lockobj_new(sizeof *l, fn, out, c, path, holds_in, &obj);
    if (st != ZKL_OK || !out)
        return st;
    l = (zkl_latch *)obj;
    pthread_mutex_init(&l->mu, NULL);
    zkl__cond_init(&l->cv);
    zkl__side_init(&l->side, c, l->obj.path, d);
    l->id = strdup(id ? id : "");
    if (!l->id ||
        (st = zkl__lockobj_add_part(&l->obj, d == &zkl__latch_driver ? "latch" : "selector",
                                    ZKL__PART_ELECTS, &stats)) != ZKL_OK ||
        (st = zkl__lockobj_on_state(&l->obj, on_notice, l)) != ZKL_OK) {
        latch_free(l);
        return st != ZKL_OK ? st : zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    l->side.stats = l->stats = stats;
    l->side.token_at_grant = true; /* on_op reads it, on the delivery thread */
    l->side.data = l->id;          /* the participant id, as Curator's nodes carry it */
    l->side.data_len = (int)len;
    *out = l;
    return ZKL_OK;
}

zkl_status zkl_latch_create(zkl_client *c, const char *path, const char *id, zkl_latch **out)
{
    ZKL__REFUSE_IN_LOG();
    return latch_new(c, path, id, &zkl__latch_driver, "zkl_latch_create", out);
}

zkl_status zkl_selector_create(zkl_client *c, const char *path, const char *id, zkl_latch **out)
{
    ZKL__REFUSE_IN_LOG();
    return latch_new(c, path, id, &zkl__mutex_driver, "zkl_selector_create", out);
}

zkl_status zkl_latch_yield(zkl_latch *l, int backoff_ms)
{
    ZKL__REFUSE_IN_LOG();
    term_watch *tw;
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_yield: latch is NULL");
    if (backoff_ms < 0 || backoff_ms > ZKL_LATCH_BACKOFF_MAX_MS)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_yield: back-off %d ms (0 to %d)", backoff_ms,
                         ZKL_LATCH_BACKOFF_MAX_MS);
    pthread_mutex_lock(&l->mu);
    if (l->state != LEADING || (l->flags & F_DESTROYED)) {
        pthread_mutex_unlock(&l->mu);
        return zkl__fail(ZKL_ENOTOWNER, "zkl_latch_yield: %s: this latch does not lead",
                         l->obj.path);
    }
    tw = end_locked(l, ZKL_LEADER_LEFT, true);
    st = join_at_locked(l, "zkl_latch_yield", zkl__now_ms() + backoff_ms);
    pthread_mutex_unlock(&l->mu);
    unwatch(l, tw);
    return st;
}

zkl_status zkl_latch_start(zkl_latch *l, zkl_leader_fn fn, void *userdata)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_start: latch is NULL");
    pthread_mutex_lock(&l->mu);
    if (l->state != IDLE || (l->flags & F_DESTROYED)) {
        pthread_mutex_unlock(&l->mu);
        return zkl__fail(ZKL_EBUSY,
                         "zkl_latch_start: %s: the latch already takes part (leave first)",
                         l->obj.path);
    }
    l->fn = fn;
    l->ud = userdata;
    l->why = ZKL_OK;
    st = join_locked(l, "zkl_latch_start");
    pthread_mutex_unlock(&l->mu);
    return st;
}

/* Leads now: LEADING, and the hold alive (its lease valid). l->mu held. */
static bool leads_locked(zkl_latch *l)
{
    return l->state == LEADING && l->op && zkl_op_is_held(l->op);
}

zkl_status zkl_latch_await(zkl_latch *l, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    int64_t deadline;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_await: latch is NULL");
    if ((st = zkl__check_timeout(timeout_ms, "zkl_latch_await")) != ZKL_OK)
        return st;
    if ((st = zkl__refuse_on_worker(l->obj.c, "zkl_latch_await")) != ZKL_OK)
        return st;
    if (zkl__in_callback(l->obj.c))
        return zkl__fail(ZKL_EDEADLOCK,
                         "zkl_latch_await: called from inside a callback of the client, which "
                         "would wait for its own delivery");
    deadline = zkl__deadline(timeout_ms);
    pthread_mutex_lock(&l->mu);
    l->awaiting++;
    for (;;) {
        if (leads_locked(l)) {
            st = ZKL_OK;
            break;
        }
        if (l->state == IDLE && l->why != ZKL_OK) {
            st = zkl__fail(l->why, "zkl_latch_await: %s: the latch stopped taking part: %s",
                           l->obj.path, l->why_msg ? l->why_msg : "out of memory");
            break;
        }
        if (l->state == IDLE) {
            st = zkl__fail(ZKL_ECANCELED, "zkl_latch_await: %s: the latch takes no part",
                           l->obj.path);
            break;
        }
        if (zkl__now_ms() >= deadline) {
            char b[256] = "";
            if (l->op)
                zkl__op_blocker(l->op, b, sizeof b);
            if (b[0])
                st = zkl__fail(ZKL_ETIMEDOUT,
                               "zkl_latch_await: %s: not leader within %d ms: the node ahead in "
                               "line, '%s', is not a participant's (no session owns it); a "
                               "child that sorts ahead blocks the election until it is deleted",
                               l->obj.path, timeout_ms, b);
            else
                st = zkl__fail(ZKL_ETIMEDOUT, "zkl_latch_await: %s: not leader within %d ms",
                               l->obj.path, timeout_ms);
            break;
        }
        /* a lease that ran out turns leads_locked false with no signal: look again */
        zkl__cond_wait_until(&l->cv, &l->mu,
                             deadline < zkl__now_ms() + ZKL_LATCH_LOOK_MS
                                 ? deadline
                                 : zkl__now_ms() + ZKL_LATCH_LOOK_MS);
    }
    l->awaiting--;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    return st;
}

bool zkl_latch_is_leader(zkl_latch *l)
{
    ZKL__REFUSE_IN_LOG_AS(false);
    bool leads;
    if (!l)
        return false;
    pthread_mutex_lock(&l->mu);
    leads = leads_locked(l);
    pthread_mutex_unlock(&l->mu);
    return leads;
}

/* The current term's hold (its node copied into *node_copy), or ZKL_ENOTOWNER. */
static zkl_status term_of(zkl_latch *l, const char *fn, zkl__hold *h, int64_t *token)
{
    zkl_status st = ZKL_OK;
    memset(h, 0, sizeof *h);
    *token = 0;
    pthread_mutex_lock(&l->mu);
    if (!leads_locked(l))
        st = zkl__fail(ZKL_ENOTOWNER, "%s: %s: this latch does not lead", fn, l->obj.path);
    else {
        *h = l->op->holds[0];
        if (!(h->node = strdup(h->node)))
            st = zkl__fail(ZKL_ENOMEM, "out of memory");
        *token = l->token;
    }
    pthread_mutex_unlock(&l->mu);
    return st;
}

zkl_status zkl_latch_token(zkl_latch *l, int64_t *token)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold h;
    zkl_status st;
    zkl__clear_err();
    if (!l || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_token: NULL argument");
    if ((st = term_of(l, "zkl_latch_token", &h, token)) == ZKL_OK)
        free(h.node);
    return st;
}

zkl_status zkl_latch_node(zkl_latch *l, char **node)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold h;
    int64_t token;
    zkl_status st;
    zkl__clear_err();
    if (!l || !node)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_node: NULL argument");
    if ((st = term_of(l, "zkl_latch_node", &h, &token)) == ZKL_OK)
        *node = h.node;
    return st;
}

/* End term token, if it still runs, as lost (a guarded write was refused for it). */
static void end_term(zkl_latch *l, int64_t token)
{
    term_watch *tw = NULL;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", zkl_errmsg()); /* the write's, kept for its caller */
    pthread_mutex_lock(&l->mu);
    if (l->state == LEADING && l->token == token)
        tw = lost_locked(l, "a guarded write found the term's node gone");
    pthread_mutex_unlock(&l->mu);
    unwatch(l, tw);
    (void)zkl__fail(ZKL_ELOST, "%s", msg);
}

zkl_status zkl_latch_guarded_write(zkl_latch *l, zkl_write *w, size_t n, size_t *failed)
{
    ZKL__REFUSE_IN_LOG();
    zkl__hold h;
    int64_t token;
    zkl_status st;
    zkl__clear_err();
    if (failed)
        *failed = SIZE_MAX;
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_guarded_write: latch is NULL");
    if ((st = zkl__guard_check_writes(w, n, failed, "zkl_latch_guarded_write")) != ZKL_OK ||
        (st = term_of(l, "zkl_latch_guarded_write", &h, &token)) != ZKL_OK)
        return st;
    /* a copy of the hold: the term may end meanwhile, and the server then refuses */
    st = zkl__guarded_write(&h, 1, w, n, failed, "zkl_latch_guarded_write");
    free(h.node);
    if (st == ZKL_ELOST) /* the server (or the client) says the term's node is gone: it ends now,
                            not when the node's watch answers (issue 56, item 2) */
        end_term(l, token);
    return st;
}

/* Leave (l->mu held): a waiting handle canceled, a leadership ended (its watch returned). */
static term_watch *leave_locked(zkl_latch *l, bool notify)
{
    if (l->state == LEADING)
        return end_locked(l, ZKL_LEADER_LEFT, notify);
    if (l->state == JOINING && l->op) {
        (void)zkl_op_cancel(l->op); /* its report ends it: canceled, or granted too late */
        if (l->nleft == l->capleft) {
            size_t cap = l->capleft ? 2 * l->capleft : 2;
            struct left_op *v = realloc(l->left, cap * sizeof *v);
            if (!v) { /* kept until its report: a start meanwhile is refused (EBUSY) */
                l->flags |= F_LEAVING;
                return NULL;
            }
            l->left = v;
            l->capleft = cap;
        }
        l->left[l->nleft++].op = l->op; /* its report comes later: the latch is free now */
        l->op = NULL;
        l->state = IDLE;
        pthread_cond_broadcast(&l->cv);
    }
    return NULL;
}

zkl_status zkl_latch_leave(zkl_latch *l, int mode)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_leave: latch is NULL");
    if (mode != ZKL_LATCH_SILENT && mode != ZKL_LATCH_NOTIFY)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_leave: unknown mode %d", mode);
    term_watch *tw;
    pthread_mutex_lock(&l->mu);
    tw = leave_locked(l, mode == ZKL_LATCH_NOTIFY);
    pthread_mutex_unlock(&l->mu);
    unwatch(l, tw);
    return ZKL_OK;
}

/*
 * A destroy on a thread that may wait (l->mu held): for the report of a
 * canceled wait, so that the latch goes now and the client can close. Not
 * on the worker or inside a callback (the report runs there), nor with
 * descriptor delivery (it waits for a dispatch); bounded all the same.
 */
static void settle_locked(zkl_latch *l)
{
    zkl_client *c = l->obj.c;
    int64_t end = zkl__now_ms() + ZKL_LATCH_SETTLE_MS;
    if (zkl__on_worker(c) || zkl__in_callback(c) || zkl__forked(c) || zkl__reports_by_dispatch(c))
        return;
    while ((l->op || l->nleft || l->busy > 1 || l->reports || l->state != IDLE) &&
           zkl__now_ms() < end)
        zkl__cond_wait_until(&l->cv, &l->mu, end);
}

zkl_status zkl_latch_destroy(zkl_latch *l)
{
    ZKL__REFUSE_IN_LOG();
    term_watch *tw;
    bool inside, go;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_latch_destroy: latch is NULL");
    if (zkl__forked(l->obj.c)) { /* its handle and term are the parent's: they go */
        if (l->op)
            (void)zkl_op_release(l->op); /* ZKL_ELOST: nothing sent, the handle freed */
        while (l->nleft > 0)
            (void)zkl_op_release(l->left[--l->nleft].op);
        free(l->tw); /* (its watch goes with the client's close) */
        latch_free(l);
        return ZKL_OK;
    }
    pthread_mutex_lock(&l->mu);
    if (l->awaiting > 0) {
        pthread_mutex_unlock(&l->mu);
        return zkl__fail(ZKL_EBUSY, "zkl_latch_destroy: %s: %d thread(s) wait in zkl_latch_await",
                         l->obj.path, l->awaiting);
    }
    l->flags |= F_DESTROYED;
    tw = leave_locked(l, false);
    l->busy++; /* this destroy: nothing frees l while it waits */
    if (tw) {  /* stopped first: its callback takes l->mu */
        pthread_mutex_unlock(&l->mu);
        unwatch(l, tw);
        pthread_mutex_lock(&l->mu);
    }
    inside = l->calling > 0 && pthread_equal(l->caller, pthread_self());
    while (l->calling > 0 && !inside) /* one running on another thread */
        pthread_cond_wait(&l->cv, &l->mu);
    if (!inside)
        settle_locked(l);
    l->busy--;
    go = to_free_locked(l); /* or the last delivery does */
    pthread_mutex_unlock(&l->mu);
    if (go)
        latch_free(l);
    return ZKL_OK;
}
