/*
 * observe.c - zkl_leader_observe (zklock/leader.h): an election's leader,
 * pushed. Each change is seen with one listing and one watch, on the head
 * of the line only: observers add no herd when a participant joins or
 * leaves behind the head.
 *
 * DESIGN
 *
 * The observer's steps are an async operation of the engine
 * (core/engine/acq.h) that takes no place in line: it lists the path, sorts
 * it as the participants do (latch- nodes, else lock- nodes), reads the
 * head with a data watch (its id and token), tells what it saw if that
 * differs from what it told last, and sleeps until the watch fires or the
 * connection changes. An empty election is watched by its child list (or,
 * with no parent, by an exists watch on the path): the one case where an
 * observer hears of a join. A session that ends drops the watches; the
 * steps start again in the next session and tell what they then see.
 *
 * Threads: the steps run on the client's worker; what they see is posted
 * as a report (core/engine/report.h) and the callback runs in the client's
 * delivery mode (the worker, or zkl_client_dispatch), in the order posted,
 * with no lock held. State under o->mu (taken before c->mu): the flags,
 * the running engine operation, the callbacks running (calling, caller),
 * the reports on their way, and the destroys running (busy). The steps'
 * own fields (told, told_node) are the worker's alone. The observer is
 * freed by whichever of destroy, the operation's end, the last report and
 * the last callback comes last (to_free_locked decides it once).
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "core/engine/acq.h"
#include "core/engine/report.h"
#include "core/engine/room.h"
#include "core/objects/lockobj.h"
#include "requests/pending.h"
#include "requests/rc.h"
#include "session/client.h"
#include "zklock/leader.h"

enum {
    F_DESTROYED = 1u << 0, /* zkl_observer_destroy was called: no more callbacks */
    F_FREED = 1u << 1,     /* to_free_locked has taken it */
};

struct zkl_observer {
    zkl__lockobj obj; /* first: the lock-object base (the client counts it) */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* callbacks ending, the operation ending (destroy) */
    unsigned flags;
    zkl__acq *aq; /* the steps, until they end */
    zkl_observe_fn fn;
    void *ud;
    int calling; /* callbacks running */
    pthread_t caller;
    int reports; /* posted, not yet delivered */
    int busy;    /* destroys running */
    /* the steps' own (the worker's): what was told last, and what is seen */
    bool told;       /* something was told */
    char *told_node; /* the leader told (NULL: none) */
    size_t members;  /* participants in the last listing */
    bool by_kids;    /* an empty election is watched by its child list (else: exists) */
};

/* A change on its way to the callback. */
typedef struct ob_report {
    zkl__report rep; /* first */
    zkl_observer *o;
    zkl_status st; /* ZKL_OK: leader holds what was seen; else the observer stopped */
    char *msg;
    zkl_leader leader;
} ob_report;

static bool owns_nothing(void *self, uint64_t epoch)
{
    (void)self;
    (void)epoch;
    return false; /* an observer holds no node */
}

static void observer_free(zkl_observer *o)
{
    zkl__lockobj_detach(&o->obj);
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    free(o->told_node);
    zkl__lockobj_free(&o->obj);
}

/* Whether o is to be freed now (o->mu held): decided once, by the last to let go. */
static bool to_free_locked(zkl_observer *o)
{
    bool go = (o->flags & F_DESTROYED) && !(o->flags & F_FREED) && o->calling == 0 &&
              o->busy == 0 && !o->aq && o->reports == 0;
    if (go)
        o->flags |= F_FREED;
    return go;
}

/* ---- delivery ---- */

static void report_free(ob_report *r)
{
    zkl_leader_clear(&r->leader);
    free(r->msg);
    free(r);
}

static void deliver(zkl__report *rep)
{
    ob_report *r = (ob_report *)rep;
    zkl_observer *o = r->o;
    zkl__cb_frame frame;
    bool go, tell;
    pthread_mutex_lock(&o->mu);
    tell = !(o->flags & F_DESTROYED) && o->fn;
    if (tell) {
        o->calling++;
        o->caller = pthread_self();
    }
    pthread_mutex_unlock(&o->mu);
    if (tell) {
        zkl__cb_enter(&frame, o->obj.c); /* zkl_client_close refuses from inside */
        o->fn(o, r->st,
              r->st == ZKL_OK ? ""
              : r->msg        ? r->msg
                              : "out of memory",
              &r->leader, o->ud);
        zkl__cb_leave(&frame);
    }
    pthread_mutex_lock(&o->mu);
    if (tell)
        o->calling--;
    o->reports--;
    pthread_cond_broadcast(&o->cv);
    go = to_free_locked(o);
    pthread_mutex_unlock(&o->mu);
    report_free(r);
    if (go)
        observer_free(o);
}

/* Post r (on the worker, no lock held). */
static void post(zkl_observer *o, ob_report *r)
{
    r->rep.deliver = deliver;
    r->o = o;
    pthread_mutex_lock(&o->mu);
    o->reports++;
    pthread_mutex_unlock(&o->mu);
    zkl__report_post(o->obj.c, &r->rep);
}

/* ---- the steps ---- */

/* The observer of aq (done_arg). */
static zkl_observer *of(const zkl__acq *aq)
{
    return aq->done_arg;
}

static zkl__step_result step_start(zkl__acq *aq);
static zkl__step_result step_list(zkl__acq *aq);

/* A new watch token in aq->prim (on the head's name, or NULL: the path) that readies aq. */
static bool arm(zkl__acq *aq, const char *name)
{
    zkl__armed_clear(&aq->prim);
    return zkl__armed_new(aq, &aq->prim, name);
}

/* Let go of the place's requests and watch (the session stays). */
static void forget(zkl__acq *aq)
{
    zkl__acq_untrack(aq);
    zkl__armed_clear(&aq->prim);
    zkl__names_free(&aq->kids);
}

/* The session went: start again in the next, after a short pause. */
static zkl__step_result restart(zkl__acq *aq)
{
    forget(aq);
    if (aq->s)
        zkl__session_put(aq->s);
    aq->s = NULL;
    /* a pause unless the session's news comes first: a dying session that
     * the client still counts alive would only fail each look at once */
    aq->until = zkl__now_ms() + zkl__retry_delay_ms(aq->restarts++, 4);
    aq->since_gen = zkl__state_gen(aq->c);
    aq->step = step_start;
    return ZKL__STEP_AGAIN;
}

/* A request's rc that was not the answer looked for: retry, start over, or stop. */
static zkl__step_result trouble(zkl__acq *aq, int rc)
{
    forget(aq);
    switch (zkl__rc_kind_of(rc)) {
    case ZKL__RC_SESSION: return restart(aq);
    case ZKL__RC_RETRY:
    case ZKL__RC_NOMEM: return zkl__acq_backoff(aq, step_list, "observing");
    default: return zkl__acq_fail(aq, zkl__rc_status(rc, "observe", aq->a.path));
    }
}

static zkl__step_result step_start(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    zkl_status st;
    if (zkl__acq_canceled(aq))
        return zkl__acq_fail(aq, zkl__fail(ZKL_ECANCELED, "observing %s was canceled", aq->a.path));
    if (aq->until && !zkl__acq_changed(aq) && !zkl__acq_sleep(aq, aq->until))
        return ZKL__STEP_YIELD;
    aq->until = 0;
    pthread_mutex_lock(&c->mu);
    st = zkl__session_try_get_locked(c, &aq->s);
    pthread_mutex_unlock(&c->mu);
    if (st == ZKL__RESTART) /* the worker opens the next session: its news readies aq */
        return ZKL__STEP_YIELD;
    if (st != ZKL_OK)
        return zkl__acq_fail(aq, st);
    aq->epoch = aq->s->epoch;
    aq->since_gen = zkl__state_gen(c);
    aq->step = step_list;
    return ZKL__STEP_AGAIN;
}

/* Tell what was seen if it differs from what was told (leader taken over). */
static zkl__step_result tell(zkl__acq *aq, zkl_leader *seen)
{
    zkl_observer *o = of(aq);
    ob_report *r;
    char *node = NULL;
    bool same;
    aq->attempt = 0; /* a look came through: the back-off starts afresh */
    same = o->told && ((!seen->node && !o->told_node) ||
                       (seen->node && o->told_node && strcmp(seen->node, o->told_node) == 0));
    if (same) {
        zkl_leader_clear(seen);
        return ZKL__STEP_AGAIN;
    }
    r = calloc(1, sizeof *r);
    if (!r || (seen->node && !(node = strdup(seen->node)))) {
        free(r);
        zkl_leader_clear(seen);
        forget(aq); /* told nothing: the next look tells it */
        return zkl__acq_backoff(aq, step_list, "observing");
    }
    r->leader = *seen;
    free(o->told_node);
    o->told_node = node;
    o->told = true;
    post(o, r);
    return ZKL__STEP_AGAIN;
}

/* Asleep until the watch fires, the session goes, or the connection comes back. */
static zkl__step_result step_watching(zkl__acq *aq)
{
    bool deleted;
    if (zkl__acq_canceled(aq))
        return zkl__acq_fail(aq, zkl__fail(ZKL_ECANCELED, "observing %s was canceled", aq->a.path));
    if (!zkl__epoch_alive(aq->c, aq->epoch))
        return restart(aq);
    if (aq->prim.w && !zkl__watch_fired(aq->prim.w, aq->gen, &deleted) &&
        (zkl__state_gen(aq->c) == aq->gen || !zkl__connected(aq->c)))
        return ZKL__STEP_YIELD; /* (back in the same session, the server answers for the watch;
                                   a look costs one listing, and misses nothing meanwhile) */
    forget(aq);
    aq->step = step_list;
    return ZKL__STEP_AGAIN;
}

/* The empty election's watch is answered: kids (ZOK) or the path's absence (ZNONODE). */
static zkl__step_result step_empty_armed(zkl__acq *aq)
{
    zkl_leader none;
    int rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    if (aq->k[0])
        zkl__req_settle(aq->k[0], aq->prim.w, rc);
    if (rc == ZOK && of(aq)->by_kids) {
        zkl__req_take_kids(aq->k[0], &aq->kids);
        if (aq->kids.n > 0) { /* one joined meanwhile: look again */
            forget(aq);
            aq->step = step_list;
            return ZKL__STEP_AGAIN;
        }
        zkl__names_free(&aq->kids);
    } else if (rc == ZOK) { /* the path came back (exists): look again */
        forget(aq);
        aq->step = step_list;
        return ZKL__STEP_AGAIN;
    } else if (rc != ZNONODE) {
        return trouble(aq, rc);
    } else if (of(aq)->by_kids) { /* the parent went meanwhile */
        forget(aq);
        aq->step = step_list;
        return ZKL__STEP_AGAIN;
    }
    zkl__acq_untrack(aq);
    memset(&none, 0, sizeof none);
    aq->step = step_watching;
    return tell(aq, &none);
}

/* Watch for a join: the child list, or (no parent) the path's creation. */
static zkl__step_result watch_empty(zkl__acq *aq, bool parent)
{
    zkl__req *k = NULL;
    int rc = ZSYSTEMERROR;
    forget(aq);
    aq->gen = zkl__state_gen(aq->c);
    if (arm(aq, NULL))
        k = parent ? zkl__req_children(aq->s, aq->a.path, aq->prim.w, zkl__acq_notify, aq, &rc)
                   : zkl__req_wexists(aq->s, aq->a.path, aq->prim.w, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    of(aq)->by_kids = parent;
    aq->step = step_empty_armed;
    return ZKL__STEP_AGAIN;
}

/* The head's data and watch are answered. */
static zkl__step_result step_head(zkl__acq *aq)
{
    zkl_leader seen;
    struct Stat st;
    char *data = NULL;
    int len = 0, rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    if (aq->k[0])
        zkl__req_settle(aq->k[0], aq->prim.w, rc);
    if (rc == ZNONODE) { /* it went after the listing (a hand-off): look again */
        forget(aq);
        aq->step = step_list;
        return ZKL__STEP_AGAIN;
    }
    if (rc != ZOK)
        return trouble(aq, rc);
    st = zkl__req_stat(aq->k[0]);
    zkl__req_take_data(aq->k[0], &data, &len);
    zkl__acq_untrack(aq);
    memset(&seen, 0, sizeof seen);
    seen.members = of(aq)->members;
    if (st.ephemeralOwner != 0 && zkl__acq_seq(aq, aq->prim.name) >= 0) {
        seen.present = true;
        seen.token = st.czxid;
        seen.id_len = (size_t)len;
        seen.id = malloc((size_t)len + 1);
        seen.node = zkl__path_join(aq->a.path, aq->prim.name);
        if (seen.id) {
            if (len > 0)
                memcpy(seen.id, data, (size_t)len);
            seen.id[len] = '\0';
        }
    } /* else a child in the way that is no participant's: no leader until it goes */
    free(data);
    if (seen.present && (!seen.id || !seen.node)) {
        zkl_leader_clear(&seen);
        return trouble(aq, ZSYSTEMERROR);
    }
    aq->step = step_watching;
    return tell(aq, &seen);
}

/*
 * A listing to look at: the election is of its latch- nodes if there are
 * any, else of its lock- nodes (a selector's); the head as they sort it.
 */
static zkl__step_result step_look(zkl__acq *aq)
{
    const zkl__driver *d = &zkl__mutex_driver;
    zkl__req *k = NULL;
    size_t i, members = 0;
    int32_t seq;
    int rc = ZSYSTEMERROR;
    char *head, *node;
    for (i = 0; i < aq->kids.n; i++)
        if (zkl__seq_of(aq->kids.v[i], zkl__latch_driver.sort_markers, &seq) == ZKL_OK)
            d = &zkl__latch_driver;
    aq->a.driver = d;
    for (i = 0; i < aq->kids.n; i++)
        if (zkl__seq_of(aq->kids.v[i], d->sort_markers, &seq) == ZKL_OK)
            members++;
    if (zkl__sort_names(aq->kids.v, aq->kids.n, d->sort_markers) != ZKL_OK)
        return trouble(aq, ZSYSTEMERROR);
    head = aq->kids.v[0];
    if (!(node = zkl__path_join(aq->a.path, head)) || !arm(aq, head)) {
        free(node);
        return trouble(aq, ZSYSTEMERROR);
    }
    of(aq)->members = members;
    aq->gen = zkl__state_gen(aq->c);
    k = zkl__req_wget_data(aq->s, node, aq->prim.w, zkl__acq_notify, aq, &rc);
    free(node);
    zkl__names_free(&aq->kids);
    zkl__acq_track(aq, k, rc);
    aq->step = step_head;
    return ZKL__STEP_AGAIN;
}

static zkl__step_result step_listed(zkl__acq *aq)
{
    int rc;
    if (!zkl__acq_listing(aq, &rc))
        return ZKL__STEP_YIELD;
    if (rc == ZNONODE)
        return watch_empty(aq, false);
    if (rc != ZOK)
        return trouble(aq, rc);
    if (!zkl__epoch_alive(aq->c, aq->epoch)) /* a listing read as the session ended */
        return restart(aq);
    if (aq->kids.n == 0)
        return watch_empty(aq, true);
    aq->step = step_look;
    return ZKL__STEP_AGAIN;
}

static zkl__step_result step_list(zkl__acq *aq)
{
    zkl__req *k;
    int rc;
    if (zkl__acq_canceled(aq))
        return zkl__acq_fail(aq, zkl__fail(ZKL_ECANCELED, "observing %s was canceled", aq->a.path));
    k = zkl__req_children(aq->s, aq->a.path, NULL, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_listed;
    return ZKL__STEP_AGAIN;
}

/* The steps ended (on the worker): canceled by destroy, or stopped on their own. */
static void ob_done(zkl__acq *aq, void *arg)
{
    zkl_observer *o = arg;
    zkl_status st = aq->st;
    ob_report *r = NULL;
    bool go;
    pthread_mutex_lock(&o->mu);
    if (!(o->flags & F_DESTROYED) && (r = calloc(1, sizeof *r)) != NULL) {
        r->st = st != ZKL_OK ? st : ZKL_ECANCELED;
        r->msg = aq->msg;
        aq->msg = NULL;
    }
    pthread_mutex_unlock(&o->mu);
    if (r)
        post(o, r); /* its last (no memory: it stops untold, and destroy still frees it) */
    zkl__acq_free(aq);
    pthread_mutex_lock(&o->mu);
    o->aq = NULL;
    pthread_cond_broadcast(&o->cv);
    go = to_free_locked(o);
    pthread_mutex_unlock(&o->mu);
    if (go)
        observer_free(o);
}

/* ---- the calls ---- */

zkl_status zkl_leader_observe(zkl_client *c, const char *path, zkl_observe_fn fn, void *userdata,
                              zkl_observer **out)
{
    ZKL__REFUSE_IN_LOG();
    zkl__lockobj *base;
    zkl_observer *o;
    zkl__acquire_args a;
    zkl_status st;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_leader_observe: out is NULL");
    *out = NULL;
    if (!fn)
        return zkl__fail(ZKL_EINVAL, "zkl_leader_observe: fn is NULL");
    if (c && zkl__forked(c))
        return zkl__fail(ZKL_ECLOSED, "zkl_leader_observe: the client belongs to the parent "
                                      "process (fork)");
    st = zkl__lockobj_new(sizeof *o, "zkl_leader_observe", out, c, path, owns_nothing, &base);
    if (st != ZKL_OK)
        return st;
    o = (zkl_observer *)base;
    pthread_mutex_init(&o->mu, NULL);
    zkl__cond_init(&o->cv);
    o->fn = fn;
    o->ud = userdata;
    memset(&a, 0, sizeof a);
    a.path = o->obj.path;
    a.driver = &zkl__mutex_driver; /* until a listing says which */
    a.deadline = INT64_MAX;
    o->aq = zkl__acq_new(c, &a, false, ob_done, o);
    if (!o->aq) {
        o->flags |= F_DESTROYED | F_FREED;
        observer_free(o);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    zkl__room_note(ZKL__NOTE_UNSEATED, o->aq, NULL); /* an observer takes no place in line */
    o->aq->step = step_start;
    *out = o;
    zkl__acq_start_async(o->aq);
    return ZKL_OK;
}

zkl_status zkl_observer_destroy(zkl_observer *o)
{
    ZKL__REFUSE_IN_LOG();
    zkl_client *c;
    bool inside, go;
    int64_t end;
    zkl__clear_err();
    if (!o)
        return zkl__fail(ZKL_EINVAL, "zkl_observer_destroy: observer is NULL");
    c = o->obj.c;
    if (zkl__forked(c)) { /* its steps are the parent's: nothing runs them here */
        if (o->aq) {      /* (its requests and watch are the session's, freed at close) */
            free(o->aq->prim.name);
            zkl__names_free(&o->aq->kids);
            zkl__acq_free(o->aq);
        }
        observer_free(o);
        return ZKL_OK;
    }
    pthread_mutex_lock(&o->mu);
    o->flags |= F_DESTROYED;
    o->busy++; /* this destroy: nothing frees o while it waits */
    if (o->aq) {
        pthread_mutex_lock(&c->mu);
        (void)zkl__acq_cancel_locked(o->aq);
        pthread_mutex_unlock(&c->mu);
    }
    inside = o->calling > 0 && pthread_equal(o->caller, pthread_self());
    while (o->calling > 0 && !inside) /* one running on another thread */
        pthread_cond_wait(&o->cv, &o->mu);
    /* Wait for the steps to end, so that the client may close on return:
     * not where they or the reports run (the worker, a callback, a loop
     * that dispatches), bounded all the same. */
    end = zkl__now_ms() + ZKL_OBSERVER_SETTLE_MS;
    if (!zkl__on_worker(c) && !zkl__in_callback(c) && !zkl__reports_by_dispatch(c))
        while ((o->aq || o->reports) && zkl__now_ms() < end)
            zkl__cond_wait_until(&o->cv, &o->mu, end);
    o->busy--;
    go = to_free_locked(o);
    pthread_mutex_unlock(&o->mu);
    if (go)
        observer_free(o);
    return ZKL_OK;
}
