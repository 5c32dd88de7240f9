/*
 * wait.c - the wait in line (engine.h), Curator's internalLockLoop: list,
 * sort, ask the driver, watch the one node it names (or the child list),
 * sleep until that watch fires, and again. Two changes of ours: a waiter
 * may also watch the node ahead of its own (the look-ahead), so that the
 * hand-off to it needs no listing (core/decide.c), and a listing taken after
 * our session changed is never trusted (CURATOR-604).
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/util.h"
#include "core/engine.h"
#include "requests/rc.h"

#ifdef ZKL_FAULTS
/* Test hook: run the after-listing fault once, if a test set one. */
static void after_list_fault(zkl_client *c)
{
    void (*fn)(zkl_client *, void *);
    void *arg;
    pthread_mutex_lock(&c->mu);
    fn = c->faults.after_list;
    arg = c->faults.after_list_arg;
    c->faults.after_list = NULL;
    pthread_mutex_unlock(&c->mu);
    if (fn)
        fn(c, arg);
}
#else
#define after_list_fault(c) ((void)(c))
#endif

/*
 * A data watch a waiter keeps on one child across listings: a node already
 * watched is not asked about again (one request per node watched).
 */
typedef struct armed {
    char *name; /* the child's basename */
    zkl__watch *w;
    /*
     * The child is an ephemeral of our own session (another thread's hold, or
     * another lock object's, on this client). Its deletion may be our
     * session's end, which takes our node in the same transaction: it proves
     * nothing until a listing shows the session alive (issue 17).
     */
    bool ours;
} armed;

/* One wait in line. */
typedef struct waiting {
    zkl_client *c;
    zkl__session *s;
    const zkl__acquire_args *a;
    zkl__own *o;
    armed prim, ahead; /* the watched node, and the one before it (look-ahead) */
    int attempt;
} waiting;

static void armed_clear(armed *x)
{
    if (x->w)
        zkl__watch_drop(x->w);
    free(x->name);
    x->w = NULL;
    x->name = NULL;
    x->ours = false;
}

/*
 * Head-of-line hand-off: the listing v saw the watched node where its going
 * makes us the holder (ZKL__V_HANDOFF), and prim, watching that node (name,
 * if given), has fired for its deletion since.
 *
 * Sound only if that deletion cannot have been our own session's end: the
 * server deletes all of a dying session's ephemerals in one transaction and
 * sends their notifications before it closes the connection, so a waiter
 * behind a node of its own session hears of the deletion before it hears
 * that the session is gone (and its own node with it). Such a deletion
 * proves nothing; the waiter lists again, and a listing answered after the
 * notification does prove the session alive: the server refuses every
 * request of a session it has begun to close.
 */
static bool handed_over(const armed *prim, const char *name, const zkl__verdict *v, uint64_t gen)
{
    bool deleted;
    return (v->flags & ZKL__V_HANDOFF) && !v->watch_parent && prim->w && !prim->ours &&
           (!name || (prim->name && strcmp(prim->name, name) == 0)) &&
           zkl__watch_fired(prim->w, gen, &deleted) && deleted;
}

/* Whether x still watches name unfired (kept); otherwise it is cleared. */
static bool armed_keep(armed *x, const char *name, uint64_t gen)
{
    bool deleted;
    if (x->w && x->name && strcmp(x->name, name) == 0 && !zkl__watch_fired(x->w, gen, &deleted))
        return true;
    armed_clear(x);
    return false;
}

/* New tokens and paths for the n slots; ZSYSTEMERROR (all undone) on no memory. */
static int arm_prepare(zkl__session *s, const char *parent, armed **slot, const char **names,
                       char **paths, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        slot[i]->name = strdup(names[i]);
        slot[i]->w = slot[i]->name ? zkl__watch_new(s) : NULL;
        paths[i] = zkl__path_join(parent, names[i]);
        if (!slot[i]->w || !paths[i]) {
            for (; i >= 0; i--) {
                free(paths[i]);
                paths[i] = NULL;
                if (slot[i]->w)
                    zkl__watch_unregistered(slot[i]->w);
                armed_clear(slot[i]);
            }
            return ZSYSTEMERROR;
        }
    }
    return ZOK;
}

/*
 * Arm data watches on the watched child and, if wanted, on the child just
 * ahead of it, in one round trip; children already watched are kept. Returns
 * the watched child's rc (ZNONODE: gone already, so list again). A failed
 * look-ahead only goes without.
 */
static int arm_watches(waiting *w, const char *pname, const char *aname, uint64_t gen)
{
    armed *slot[ZKL_WGETS_MAX];
    const char *names[ZKL_WGETS_MAX];
    char *paths[ZKL_WGETS_MAX] = {NULL};
    zkl__watch *ws[ZKL_WGETS_MAX];
    int rcs[ZKL_WGETS_MAX], n = 0, i, rc = ZOK;
    int64_t owners[ZKL_WGETS_MAX], self;
    if (!armed_keep(&w->prim, pname, gen)) {
        slot[n] = &w->prim;
        names[n++] = pname;
    }
    if (!aname)
        armed_clear(&w->ahead);
    else if (!armed_keep(&w->ahead, aname, gen)) {
        slot[n] = &w->ahead;
        names[n++] = aname;
    }
    if (arm_prepare(w->s, w->a->path, slot, names, paths, n) != ZOK)
        return ZSYSTEMERROR;
    for (i = 0; i < n; i++)
        ws[i] = slot[i]->w;
    zkl__zk_wgets(w->s, n, (const char *const *)paths, ws, rcs, owners);
    self = zkl__session_id(w->s);
    for (i = 0; i < n; i++) {
        free(paths[i]);
        if (rcs[i] != ZOK) /* zkcall gave back the ZooKeeper side's reference if need be */
            armed_clear(slot[i]);
        else
            slot[i]->ours = owners[i] != 0 && owners[i] == self;
        if (slot[i] == &w->prim)
            rc = rcs[i];
    }
    return rc;
}

/* Outcome of looking at one listing. */
enum look { LOOK_HOLDS, LOOK_GONE, LOOK_WAIT, LOOK_RELIST, LOOK_NOMEM };

/* Sort kids, find our node, ask the driver. Frees nothing. */
static enum look look_at(const waiting *w, zkl__names *kids, zkl__verdict *v)
{
    long self;
    if (zkl__sort_names(kids->v, kids->n, w->a->driver->sort_markers) != ZKL_OK)
        return LOOK_NOMEM;
    self = zkl__find_name(kids->v, kids->n, w->o->name);
    if (self < 0) /* our node is gone: session lost, or deleted by someone */
        return LOOK_GONE;
    *v = zkl__decide(w->a->driver, kids->v, kids->n, (size_t)self, w->a->ctx);
    if (v->holds)
        return LOOK_HOLDS;
    if (!v->watch_parent && (v->watch < 0 || (size_t)v->watch >= kids->n))
        return LOOK_RELIST;
    return LOOK_WAIT;
}

/* The outcome of a listing that settled it (not LOOK_WAIT or LOOK_RELIST). */
static zkl_status look_status(enum look look)
{
    return look == LOOK_HOLDS  ? ZKL_OK
           : look == LOOK_GONE ? ZKL__RESTART
                               : zkl__fail(ZKL_ENOMEM, "out of memory sorting a listing");
}

static zkl_status timed_out_waiting(const waiting *w)
{
    return zkl__fail(ZKL_ETIMEDOUT, "timed out waiting for %s%s", w->a->path, zkl__conn_note(w->c));
}

/* A connection loss while waiting: back off (ZKL_OK: try again) or give up. */
static zkl_status backoff(waiting *w)
{
    if (zkl__backoff(w->c, &w->attempt, w->a->deadline))
        return ZKL_OK;
    return zkl__gave_up(w->c, w->a, "waiting for");
}

/* A fresh listing into kids (nothing gone: none), or *again after a backoff. */
static zkl_status take_listing(waiting *w, zkl__names *kids, bool *again)
{
    int rc = zkl__zk_children(w->s, w->a->path, kids);
    *again = false;
    if (rc == ZNONODE) { /* parent gone, so our node too */
        kids->n = 0;
        return ZKL_OK;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) {
        zkl_status st = backoff(w);
        *again = st == ZKL_OK;
        return st;
    }
    return rc == ZOK ? ZKL_OK : zkl__rc_status(rc, "list", w->a->path);
}

/*
 * Watch the child list (the lease count); the listing that arms it is fresh,
 * so it is decided on before sleeping: *look is that decision.
 */
static int arm_children(waiting *w, zkl__verdict *v, enum look *look)
{
    zkl__names kids = {0};
    int rc;
    armed_clear(&w->prim);
    armed_clear(&w->ahead);
    if (!(w->prim.w = zkl__watch_new(w->s)))
        return ZSYSTEMERROR;
    rc = zkl__zk_wchildren(w->s, w->a->path, w->prim.w, &kids);
    if (rc != ZOK) {
        armed_clear(&w->prim); /* as in arm_watches */
        return rc;
    }
    *look = look_at(w, &kids, v); /* still armed; the token lives until it fires */
    zkl__names_free(&kids);
    return ZOK;
}

/* Watch the node the driver named and, if it pays, the one before it. */
static int arm_nodes(waiting *w, zkl__names *kids, const zkl__verdict *v, uint64_t gen)
{
    const zkl__acquire_args *a = w->a;
    /* Look-ahead: its going usually means ours heads the line, and the
     * listing it prompts (made while that node holds) lets its deletion hand
     * us the lock with no listing on the hand-off's path. */
    bool la = a->lookahead == ZKL__LOOKAHEAD_ON ||
              (a->lookahead == ZKL__LOOKAHEAD_IF_CARRIED && w->o->carried);
    const char *aname = la && !(v->flags & (ZKL__V_HANDOFF | ZKL__V_NO_LOOKAHEAD)) && v->watch >= 1
                            ? kids->v[v->watch - 1]
                            : NULL;
    return arm_watches(w, kids->v[v->watch], aname, gen);
}

/* Sleep on the armed watches; *held if the hand-off came. Fired tokens are spent. */
static zkl_status sleep_on(waiting *w, const zkl__verdict *v, uint64_t gen, bool *held)
{
    bool deleted;
    zkl_status st = zkl__watch_wait(w->prim.w, w->ahead.w, gen, w->a->deadline);
    *held = handed_over(&w->prim, NULL, v, gen);
    if (*held)
        return ZKL_OK;
    /* unfired tokens are kept for the next round */
    if (v->watch_parent || zkl__watch_fired(w->prim.w, gen, &deleted))
        armed_clear(&w->prim);
    if (w->ahead.w && zkl__watch_fired(w->ahead.w, gen, &deleted))
        armed_clear(&w->ahead);
    return st;
}

/* A listing that settled it (not LOOK_WAIT), or *again for LOOK_RELIST; n: its size. */
static zkl_status settle(waiting *w, enum look look, size_t n, bool *again)
{
    *again = look == LOOK_RELIST;
    if (*again)
        return ZKL_OK;
    w->o->alone = look == LOOK_HOLDS && n == 1;
    if (look == LOOK_GONE) /* the session looked alive just now */
        zkl__log(ZKL_LOG_WARN,
                 "%s/%s is gone while the session lives (deleted by someone else, or "
                 "the session is ending): queuing again",
                 w->a->path, w->o->name);
    return look_status(look);
}

/* After the watches (rc: arming's) and the sleep (slept): stop, or *again. */
static zkl_status judge(waiting *w, int rc, zkl_status slept, bool *again)
{
    zkl_status st;
    *again = false;
    if (zkl__canceled(w->c))
        return zkl__fail(ZKL_ECANCELED, "waiting for %s was canceled", w->a->path);
    if (rc == ZOK || rc == ZNONODE) {
        w->attempt = 0;
        if (slept == ZKL_ETIMEDOUT)
            return timed_out_waiting(w);
        *again = true;
        return ZKL_OK;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) {
        st = backoff(w);
        *again = st == ZKL_OK;
        return st;
    }
    return zkl__rc_status(rc, "watch", w->a->path);
}

/* One round: a listing (the one given, or a fresh one), a decision, a sleep. */
static zkl_status one_round(waiting *w, zkl__names *kids, bool *have, bool *again)
{
    uint64_t gen = zkl__state_gen(w->c);
    zkl__verdict v;
    enum look look;
    zkl_status st = ZKL_OK;
    bool held = false, late;
    int rc;
    if (!*have && ((st = take_listing(w, kids, again)) != ZKL_OK || *again))
        return st;
    *have = false;
    *again = false;
    after_list_fault(w->c);
    /* A listing read after our session ended may still show our node (CURATOR-604). */
    if (!zkl__epoch_alive(w->c, w->s->epoch)) {
        zkl__names_free(kids);
        return ZKL__RESTART;
    }
    look = look_at(w, kids, &v);
    if (look != LOOK_WAIT) {
        size_t n = kids->n;
        zkl__names_free(kids);
        return settle(w, look, n, again);
    }
    late = zkl__now_ms() >= w->a->deadline;
    if (late || (!v.watch_parent && handed_over(&w->prim, kids->v[v.watch], &v, gen))) {
        /* out of time, or the node we wait for went while we listed, after
         * the listing saw it where its going grants: the hand-off below,
         * come early */
        zkl__names_free(kids);
        return late ? timed_out_waiting(w) : ZKL_OK;
    }
    if (v.watch_parent) {
        zkl__names_free(kids);
        rc = arm_children(w, &v, &look);
        if (rc == ZOK && look != LOOK_WAIT)
            return settle(w, look, 0, again);
    } else {
        rc = arm_nodes(w, kids, &v, gen);
        zkl__names_free(kids);
    }
    if (rc == ZOK && w->prim.w) {
        st = sleep_on(w, &v, gen, &held);
        if (held)
            return ZKL_OK; /* the hand-off: we hold it without listing again */
    }
    return judge(w, rc, st, again);
}

zkl_status zkl__wait_for_lock(zkl_client *c, zkl__session *s, const zkl__acquire_args *a,
                              zkl__own *o)
{
    waiting w = {c, s, a, o, {NULL, NULL, false}, {NULL, NULL, false}, 0};
    zkl__names kids = o->kids;
    bool have = o->have_kids, again = true;
    zkl_status st = ZKL_OK;
    o->kids.v = NULL;
    o->kids.n = 0;
    while (again)
        st = one_round(&w, &kids, &have, &again);
    zkl__names_free(&kids);
    armed_clear(&w.prim);
    armed_clear(&w.ahead);
    return st;
}
