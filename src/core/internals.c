/*
 * internals.c - the lock-internals core (see internals.h).
 *
 * The loop follows Curator's LockInternals.internalLockLoop, with three
 * changes that matter under faults: the first listing rides with the create
 * (one round trip instead of two), a node found by its protected prefix after
 * a lost create reply is adopted only if its ephemeralOwner is our session
 * (CURATOR-498), and a listing taken after our session changed is never
 * trusted (CURATOR-604).
 */
#include <stdlib.h>
#include <string.h>

#include "services/chroot.h"
#include "core/internals.h"
#include "services/lease.h"
#include "base/log.h"
#include "base/path.h"
#include "services/revoke.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/util.h"
#include "requests/calls.h"

/* Internal outcome: our node is gone with its session; start over with a new one. */
#define RESTART ZKL_ELOST

zkl__verdict zkl__decide_standard(char *const *sorted, size_t n, size_t self, int max_leases)
{
    zkl__verdict v = {false, -1, false, false, false};
    (void)sorted;
    (void)n;
    if (max_leases < 1)
        max_leases = 1;
    if (self < (size_t)max_leases) {
        v.holds = true;
    } else {
        v.watch = (long)(self - (size_t)max_leases);
        v.grant_if_deleted = v.watch == 0;
    }
    return v;
}

static int64_t session_id(zkl__session *s)
{
    int64_t id;
    pthread_mutex_lock(&s->c->mu);
    id = s->id;
    pthread_mutex_unlock(&s->c->mu);
    return id;
}

static int session_error(int rc)
{
    return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZSESSIONMOVED || rc == ZCLOSING;
}

/* Create path and any missing ancestors as container nodes (bottom-up, as Curator 5.7+). */
static int mkdirs(zkl__session *s, const char *path, int depth)
{
    int rc, tries;
    for (tries = 0; tries < 5; tries++) {
        rc = zkl__zk_create(s, path, "", 0, ZOO_CONTAINER, NULL, NULL);
        if (rc == ZOK || rc == ZNODEEXISTS)
            return ZOK;
        if (rc != ZNONODE || depth > 256)
            return rc;
        {
            size_t plen = zkl__path_parent_len(path);
            char *parent;
            if (plen == 0)
                return rc;
            parent = strndup(path, plen);
            if (!parent)
                return ZSYSTEMERROR;
            rc = mkdirs(s, parent, depth + 1);
            free(parent);
            if (rc != ZOK)
                return rc;
        }
    }
    return rc;
}

/* Our node, as created or adopted. */
typedef struct own_node {
    char *node;       /* full path */
    const char *name; /* basename, inside node */
    int64_t czxid;
    zkl__names kids; /* first listing, if it came with the create */
    bool have_kids;
    bool alone;   /* the listing that granted the lock held only our node */
    bool carried; /* the create carried held-back deletes: one request saved */
} own_node;

static void own_node_free(own_node *o)
{
    free(o->node);
    zkl__names_free(&o->kids);
    memset(o, 0, sizeof *o);
}

static zkl_status new_prefix(zkl_client *c, char prefix[ZKL_PROTECTED_PREFIX_LEN + 1])
{
    char uuid[37];
    pthread_mutex_lock(&c->mu);
    if (c->faults.next_uuid[0]) {
        memcpy(uuid, c->faults.next_uuid, sizeof uuid);
        c->faults.next_uuid[0] = '\0';
        pthread_mutex_unlock(&c->mu);
    } else {
        pthread_mutex_unlock(&c->mu);
        if (zkl__uuid4(uuid) != ZKL_OK)
            return ZKL_ESYS;
    }
    memcpy(prefix, "_c_", 3);
    memcpy(prefix + 3, uuid, 36);
    prefix[39] = '-';
    prefix[40] = '\0';
    return ZKL_OK;
}

/* Test hooks: how the next create should misbehave. 0 none, 1 lose before send, 2 lose reply. */
static int take_create_fault(zkl_client *c)
{
    int f = 0;
    pthread_mutex_lock(&c->mu);
    if (c->faults.create_send_lost > 0) {
        c->faults.create_send_lost--;
        f = 1;
    } else if (c->faults.create_reply_lost > 0) {
        c->faults.create_reply_lost--;
        f = 2;
    }
    pthread_mutex_unlock(&c->mu);
    return f;
}

/*
 * After an uncertain create: find a child with our prefix. Adopt it if it is
 * ours (same session), delete it otherwise. Returns ZOK with *o filled on
 * adoption, ZNONODE if there is nothing to adopt (create again), or an rc.
 */
static int recover_create(zkl__session *s, const char *path, const char *prefix, own_node *o)
{
    zkl__names kids = {0};
    struct Stat st;
    long idx;
    char *node;
    int rc = zkl__zk_children(s, path, &kids);
    if (rc != ZOK)
        return rc;
    idx = zkl__find_prefix(kids.v, kids.n, prefix);
    if (idx < 0) {
        zkl__names_free(&kids);
        return ZNONODE;
    }
    node = zkl__path_join(path, kids.v[idx]);
    if (!node) {
        zkl__names_free(&kids);
        return ZSYSTEMERROR;
    }
    rc = zkl__zk_exists(s, node, &st);
    if (rc == ZOK && st.ephemeralOwner == session_id(s)) {
        o->node = node;
        o->name = zkl__path_basename(node);
        o->czxid = st.czxid;
        o->kids = kids;
        o->have_kids = true;
        zkl__log(ZKL_LOG_INFO, "adopted %s after an uncertain create", node);
        return ZOK;
    }
    zkl__names_free(&kids);
    if (rc == ZOK) { /* a node of another (dying) session: not ours to adopt */
        zkl__log(ZKL_LOG_WARN, "%s carries our prefix but belongs to session %llx: deleting it",
                 node, (unsigned long long)st.ephemeralOwner);
        zkl__bg_delete(s->c, node, NULL);
        rc = ZNONODE;
    }
    free(node);
    return rc;
}

static zkl_status create_node(zkl_client *c, zkl__session *s, const zkl__acquire_args *a,
                              own_node *o)
{
    char prefix[ZKL_PROTECTED_PREFIX_LEN + 1];
    char *want = NULL;
    int attempt = 0, parents = 0, rc, list_rc;
    bool uncertain = false;
    const void *data = a->data ? a->data : c->node_data;
    int len = a->data ? a->data_len : c->node_data_len;
    int mode = a->fixed_suffix ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL;
    zkl_status st = ZKL_OK;

    memset(o, 0, sizeof *o);
    if (new_prefix(c, prefix) != ZKL_OK)
        return ZKL_ESYS;
    for (;;) {
        if (uncertain) {
            rc = recover_create(s, a->path, prefix, o);
            if (rc == ZOK)
                goto out;
            if (rc == ZNONODE) {
                uncertain = false; /* nothing reached the server: create again */
                if (new_prefix(c, prefix) != ZKL_OK) {
                    st = ZKL_ESYS;
                    goto out;
                }
            } else if (zkl__zk_retryable(rc)) {
                if (!zkl__backoff(c, &attempt, a->deadline))
                    goto give_up;
                continue;
            } else {
                st = session_error(rc) ? RESTART : zkl__from_zk(rc, "list", a->path);
                goto give_up_with;
            }
        }
        free(want);
        want = malloc(strlen(a->path) + 1 + sizeof prefix + strlen(a->driver->lock_name));
        if (!want) {
            st = zkl__fail(ZKL_ENOMEM, "out of memory");
            goto out;
        }
        strcpy(want, a->path);
        strcat(want, "/");
        strcat(want, prefix);
        strcat(want, a->driver->lock_name);
        if (a->fixed_suffix) {
            char *longer = realloc(want, strlen(want) + strlen(a->fixed_suffix) + 1);
            if (!longer) {
                st = zkl__fail(ZKL_ENOMEM, "out of memory");
                goto out;
            }
            want = longer;
            strcat(want, a->fixed_suffix);
        }

        switch (take_create_fault(c)) {
        case 1: rc = ZCONNECTIONLOSS; break;
        case 2:
            rc = zkl__zk_create(s, want, data, len, mode, NULL, NULL);
            if (rc == ZOK)
                rc = ZCONNECTIONLOSS; /* the reply "never arrived" */
            break;
        default: {
            struct Stat stat;
            zkl__deferred *merged = a->token_lazy ? zkl__take_deferred(s) : NULL;
            if (merged) {
                /* our own held-back deletes commit with this create */
                char *del[8];
                int ndel = 0;
                zkl__deferred *d;
                for (d = merged; d && ndel < 8; d = d->next)
                    del[ndel++] = d->path;
                rc = zkl__zk_multi_create_list(s, del, ndel, want, data, len, mode, a->path,
                                               &o->node, &o->kids, &list_rc);
                if (zkl__zk_retryable(rc)) { /* applied or not, they must go */
                    for (d = merged; d; d = d->next)
                        zkl__bg_delete(c, d->path, NULL);
                    zkl__deferred_done(merged, true);
                } else {
                    zkl__deferred_done(merged, rc == ZOK);
                }
                if (rc == ZOK) {
                    o->name = zkl__path_basename(o->node);
                    o->czxid = 0; /* fetched if asked for (zkl__hold_token) */
                    o->have_kids = list_rc == ZOK;
                    o->carried = true;
                    goto out;
                }
                if (rc != ZNONODE && !zkl__zk_retryable(rc) && !session_error(rc))
                    continue; /* a delete failed, so nothing applied: plain create next */
                break;
            }
            rc = zkl__zk_create_list(s, want, data, len, mode, a->path, &o->node, &stat, &o->kids,
                                     &list_rc);
            if (rc == ZOK) {
                o->name = zkl__path_basename(o->node);
                o->czxid = stat.czxid;
                o->have_kids = list_rc == ZOK;
                goto out;
            }
        }
        }
        if (rc == ZNONODE) {
            if (++parents > 10) {
                st = zkl__from_zk(rc, "create parents of", a->path);
                goto out;
            }
            rc = mkdirs(s, a->path, 0);
            if (rc == ZOK)
                continue;
            if (rc == ZNONODE && zkl__chroot_of(c->connect)) {
                /* the root always exists: what is missing is the chroot */
                st = zkl__chroot_make(c, a->deadline);
                if (st == ZKL_OK)
                    continue;
                goto out;
            }
            if (zkl__zk_retryable(rc)) {
                if (!zkl__backoff(c, &attempt, a->deadline))
                    goto out_timeout;
                continue;
            }
            st = session_error(rc) ? RESTART : zkl__from_zk(rc, "create", a->path);
            goto out;
        }
        if (zkl__zk_retryable(rc)) {
            uncertain = true;
            if (!zkl__backoff(c, &attempt, a->deadline))
                goto give_up;
            continue;
        }
        if (rc == ZSYSTEMERROR) {
            /* no memory for the reply's results: the node may well exist */
            st = zkl__fail(ZKL_ENOMEM, "out of memory creating the lock node under %s", a->path);
            goto give_up_with;
        }
        st = session_error(rc) ? RESTART : zkl__from_zk(rc, "create", want);
        if (session_error(rc))
            goto give_up_with;
        goto out;
    }
give_up:
    st = zkl__canceled(c) ? zkl__fail(ZKL_ECANCELED, "canceled creating the lock node")
         : zkl__now_ms() >= a->deadline
             ? zkl__fail(ZKL_ETIMEDOUT, "timed out creating the lock node under %s%s", a->path,
                         zkl__conn_note(c))
             : zkl__fail(ZKL_ECONNLOSS, "connection lost creating the lock node under %s", a->path);
give_up_with:
    /* An earlier try may have reached the server: have the worker remove it. */
    zkl__bg_delete(c, a->path, prefix);
    goto out;
out_timeout:
    st = zkl__fail(ZKL_ETIMEDOUT, "timed out creating the parents of %s%s", a->path,
                   zkl__conn_note(c));
out:
    free(want);
    return st;
}

/* Test hook: the next foreground delete "loses its connection". */
static bool take_delete_fault(zkl_client *c)
{
    bool fault;
    pthread_mutex_lock(&c->mu);
    fault = c->faults.delete_lost > 0;
    if (fault)
        c->faults.delete_lost--;
    pthread_mutex_unlock(&c->mu);
    return fault;
}

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

/* How long a release holds its delete back (a test may set the contended window). */
static int defer_window_us(zkl_client *c, bool alone)
{
    int us;
    if (alone)
        return ZKL_DEFER_ALONE_US;
    pthread_mutex_lock(&c->mu);
    us = c->faults.defer_us > 0 ? c->faults.defer_us : ZKL_DEFER_CONTENDED_US;
    pthread_mutex_unlock(&c->mu);
    return us;
}

/* Delete our node now if we can, else in the background. */
static void delete_guaranteed(zkl_client *c, zkl__session *s, const char *node)
{
    int rc = ZCONNECTIONLOSS;
    /* the caller's deadline may be spent: cleanup gets a moment of its own,
     * then the worker takes over */
    int64_t prev = zkl__call_deadline(zkl__now_ms() + 2000);
    if (s && !take_delete_fault(c))
        rc = zkl__zk_delete(s, node);
    zkl__call_deadline(prev);
    if (rc != ZOK && rc != ZNONODE)
        zkl__bg_delete(c, node, NULL);
}

/* Outcome of looking at one listing. */
enum look { LOOK_HOLDS, LOOK_GONE, LOOK_WAIT, LOOK_RELIST, LOOK_NOMEM };

/* Sort kids, find our node, ask the driver. Frees nothing. */
static enum look look_at(const zkl__acquire_args *a, const own_node *o, zkl__names *kids,
                         zkl__verdict *v)
{
    long self;
    if (zkl__sort_names(kids->v, kids->n, a->driver->sort_markers) != ZKL_OK)
        return LOOK_NOMEM;
    self = zkl__find_name(kids->v, kids->n, o->name);
    if (self < 0) /* our node is gone: session lost, or deleted by someone */
        return LOOK_GONE;
    *v = a->driver->decide(a->driver, kids->v, kids->n, (size_t)self, a->ctx);
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
           : look == LOOK_GONE ? RESTART
                               : zkl__fail(ZKL_ENOMEM, "out of memory");
}

/* The wait for a->path ran out of time (saying so if not connected). */
static zkl_status timed_out_waiting(zkl_client *c, const zkl__acquire_args *a)
{
    return zkl__fail(ZKL_ETIMEDOUT, "timed out waiting for %s%s", a->path, zkl__conn_note(c));
}

static zkl_status wait_timeout_or_loss(zkl_client *c, int *attempt, const zkl__acquire_args *a)
{
    if (zkl__backoff(c, attempt, a->deadline))
        return ZKL_OK;
    if (zkl__canceled(c))
        return zkl__fail(ZKL_ECANCELED, "waiting for %s was canceled", a->path);
    return zkl__now_ms() >= a->deadline
               ? timed_out_waiting(c, a)
               : zkl__fail(ZKL_ECONNLOSS, "connection lost waiting for %s", a->path);
}

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
 * Head-of-line hand-off: the listing v saw the watched node at the head
 * (grant_if_deleted), and prim, watching that node (name, if given), has
 * fired for its deletion since. Nothing can have appeared ahead of us.
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
    return v->grant_if_deleted && !v->watch_parent && prim->w && !prim->ours &&
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

/*
 * Arm data watches on the watched child and, if wanted, on the child just
 * ahead of it, in one round trip; children already watched are kept. Returns
 * the watched child's rc (ZNONODE: gone already, so list again). A failed
 * look-ahead only goes without.
 */
static int arm_watches(zkl__session *s, const char *parent, armed *prim, const char *pname,
                       armed *ahead, const char *aname, uint64_t gen)
{
    armed *slot[ZKL_WGETS_MAX];
    const char *names[ZKL_WGETS_MAX];
    char *paths[ZKL_WGETS_MAX] = {NULL};
    zkl__watch *ws[ZKL_WGETS_MAX];
    int rcs[ZKL_WGETS_MAX], n = 0, i, rc = ZOK;
    int64_t owners[ZKL_WGETS_MAX], self;
    if (!armed_keep(prim, pname, gen)) {
        slot[n] = prim;
        names[n++] = pname;
    }
    if (!aname)
        armed_clear(ahead);
    else if (!armed_keep(ahead, aname, gen)) {
        slot[n] = ahead;
        names[n++] = aname;
    }
    for (i = 0; i < n; i++) {
        slot[i]->name = strdup(names[i]);
        slot[i]->w = slot[i]->name ? zkl__watch_new(s) : NULL;
        paths[i] = zkl__path_join(parent, names[i]);
        if (!slot[i]->w || !paths[i]) {
            for (; i >= 0; i--) {
                free(paths[i]);
                if (slot[i]->w)
                    zkl__watch_unregistered(slot[i]->w);
                armed_clear(slot[i]);
            }
            return ZSYSTEMERROR;
        }
    }
    for (i = 0; i < n; i++)
        ws[i] = slot[i]->w;
    zkl__zk_wgets(s, n, (const char *const *)paths, ws, rcs, owners);
    self = session_id(s);
    for (i = 0; i < n; i++) {
        free(paths[i]);
        if (rcs[i] != ZOK) /* zkcall gave back the ZooKeeper side's reference if need be */
            armed_clear(slot[i]);
        else
            slot[i]->ours = owners[i] != 0 && owners[i] == self;
        if (slot[i] == prim)
            rc = rcs[i];
    }
    return rc;
}

static zkl_status wait_for_lock(zkl_client *c, zkl__session *s, const zkl__acquire_args *a,
                                own_node *o)
{
    int attempt = 0, rc;
    zkl__names kids = {0};
    armed prim = {0}, ahead = {0};
    zkl_status st;
    bool have = o->have_kids;
    if (have) {
        kids = o->kids;
        o->kids.v = NULL;
        o->kids.n = 0;
    }
    for (;;) {
        zkl__verdict v;
        enum look look;
        uint64_t gen;
        bool deleted;
        st = ZKL_OK;

        gen = zkl__state_gen(c);
        if (!have) {
            rc = zkl__zk_children(s, a->path, &kids);
            if (rc == ZNONODE) {
                rc = ZOK; /* parent gone, so our node too */
                kids.n = 0;
            }
            if (zkl__zk_retryable(rc)) {
                st = wait_timeout_or_loss(c, &attempt, a);
                if (st != ZKL_OK)
                    goto out;
                continue;
            }
            if (rc != ZOK) {
                st = session_error(rc) ? RESTART : zkl__from_zk(rc, "list", a->path);
                goto out;
            }
        }
        have = false;
        after_list_fault(c);
        /* A listing read after our session ended may still show our node (CURATOR-604). */
        if (!zkl__epoch_alive(c, s->epoch)) {
            zkl__names_free(&kids);
            st = RESTART;
            goto out;
        }
        look = look_at(a, o, &kids, &v);
        if (look != LOOK_WAIT) {
            o->alone = look == LOOK_HOLDS && kids.n == 1;
            zkl__names_free(&kids);
            if (look == LOOK_RELIST)
                continue;
            if (look == LOOK_GONE) /* the session looked alive just now */
                zkl__log(ZKL_LOG_WARN,
                         "%s/%s is gone while the session lives (deleted by someone else, or "
                         "the session is ending): queuing again",
                         a->path, o->name);
            st = look_status(look);
            goto out;
        }
        if (zkl__now_ms() >= a->deadline) {
            zkl__names_free(&kids);
            st = timed_out_waiting(c, a);
            goto out;
        }
        if (!v.watch_parent && handed_over(&prim, kids.v[v.watch], &v, gen)) {
            /* The node we wait for went while we listed, after the listing
             * saw it at the head: the hand-off below, come early. */
            zkl__names_free(&kids);
            goto out;
        }
        if (v.watch_parent) {
            /* Watch the child list; the listing that arms it is fresh, so
             * decide on it before sleeping. */
            armed_clear(&prim);
            armed_clear(&ahead);
            zkl__names_free(&kids);
            if (!(prim.w = zkl__watch_new(s))) {
                st = zkl__fail(ZKL_ENOMEM, "out of memory");
                goto out;
            }
            rc = zkl__zk_wchildren(s, a->path, prim.w, &kids);
            if (rc == ZOK) {
                look = look_at(a, o, &kids, &v);
                zkl__names_free(&kids);
                if (look != LOOK_WAIT) {
                    /* still armed; the token lives until it fires */
                    if (look == LOOK_RELIST)
                        continue;
                    st = look_status(look);
                    goto out;
                }
            } else {
                armed_clear(&prim); /* as in arm_watches */
            }
        } else {
            /*
             * Look-ahead: also watch the node just ahead of ours. Its going
             * usually means ours heads the line, and the listing it prompts
             * (made while that node holds) lets its deletion hand us the lock
             * with no listing on the hand-off's path.
             */
            bool la = a->lookahead == ZKL__LOOKAHEAD_ON ||
                      (a->lookahead == ZKL__LOOKAHEAD_IF_CARRIED && o->carried);
            const char *aname = la && !v.grant_if_deleted && !v.no_lookahead && v.watch >= 1
                                    ? kids.v[v.watch - 1]
                                    : NULL;
            rc = arm_watches(s, a->path, &prim, kids.v[v.watch], &ahead, aname, gen);
            zkl__names_free(&kids);
        }
        if (rc == ZOK && prim.w) {
            st = zkl__watch_wait(prim.w, ahead.w, gen, a->deadline);
            if (handed_over(&prim, NULL, &v, gen)) { /* we hold it without listing again */
                st = ZKL_OK;
                goto out;
            }
            /* fired tokens are spent; unfired ones are kept for the next round */
            if (v.watch_parent || zkl__watch_fired(prim.w, gen, &deleted))
                armed_clear(&prim);
            if (ahead.w && zkl__watch_fired(ahead.w, gen, &deleted))
                armed_clear(&ahead);
        }
        if (zkl__canceled(c)) {
            st = zkl__fail(ZKL_ECANCELED, "waiting for %s was canceled", a->path);
            goto out;
        }
        if (rc == ZOK || rc == ZNONODE) {
            attempt = 0;
            if (st == ZKL_ETIMEDOUT) {
                st = timed_out_waiting(c, a);
                goto out;
            }
            continue;
        }
        if (zkl__zk_retryable(rc)) {
            st = wait_timeout_or_loss(c, &attempt, a);
            if (st != ZKL_OK)
                goto out;
            continue;
        }
        if (rc == ZSYSTEMERROR)
            st = zkl__fail(ZKL_ENOMEM, "out of memory");
        else
            st = session_error(rc) ? RESTART : zkl__from_zk(rc, "watch", a->path);
        goto out;
    }
out:
    armed_clear(&prim);
    armed_clear(&ahead);
    return st;
}

static zkl_status lock_acquire(zkl_client *c, const zkl__acquire_args *a, zkl__hold *hold);

/*
 * A grant needs a lease with at least a renewal interval left: usually the
 * renewals made while we waited (or the create) give it; after a long
 * silence a sync does. Connection trouble is retried until the deadline.
 */
static zkl_status lease_for_grant(zkl_client *c, zkl__session *s, const zkl__acquire_args *a)
{
    int attempt = 0;
    for (;;) {
        int rc = zkl__lease_fresh(c, s);
        zkl_status st;
        if (rc == ZOK)
            return ZKL_OK;
        if (session_error(rc))
            return RESTART;
        if (!zkl__zk_retryable(rc))
            return rc == ZSYSTEMERROR ? zkl__fail(ZKL_ENOMEM, "out of memory")
                                      : zkl__from_zk(rc, "sync", a->path);
        st = wait_timeout_or_loss(c, &attempt, a);
        if (st != ZKL_OK)
            return st;
    }
}

zkl_status zkl__lock_acquire(zkl_client *c, const zkl__acquire_args *a, zkl__hold *hold)
{
    /* Every call on the way gives up at the caller's deadline, but gets at
     * least ZKL_CALL_MIN_MS: "try once" must be able to make its round trips. */
    int64_t floor = zkl__now_ms() + ZKL_CALL_MIN_MS;
    int64_t prev = zkl__call_deadline(a->deadline > floor ? a->deadline : floor);
    zkl_status st;
    zkl__lease_users(c, 0, 1); /* renewed while we wait: a hand-off then needs no sync */
    st = lock_acquire(c, a, hold);
    zkl__lease_users(c, st == ZKL_OK ? 1 : 0, -1);
    zkl__call_deadline(prev);
    return st;
}

static zkl_status lock_acquire(zkl_client *c, const zkl__acquire_args *a, zkl__hold *hold)
{
    int restarts = 0;
    for (;;) {
        zkl__session *s;
        own_node o;
        uint64_t epoch;
        zkl_status st = zkl__session_get(c, a->deadline, &s);
        if (st != ZKL_OK)
            return st;
        st = create_node(c, s, a, &o);
        if (st == ZKL_OK) {
            zkl__revwatch *rev = NULL;
            st = wait_for_lock(c, s, a, &o);
            if (st == ZKL_OK)
                st = lease_for_grant(c, s, a);
            if (st == ZKL_OK && a->revoke_cb &&
                !(rev = zkl__revwatch_start(c, o.node, s->epoch, a->revoke_cb, a->revoke_ctx)))
                /* a hold that cannot be revoked as asked is not handed out */
                st = zkl__fail(ZKL_ENOMEM, "out of memory");
            if (st == ZKL_OK) {
                hold->node = o.node;
                hold->czxid = o.czxid;
                hold->epoch = s->epoch;
                hold->alone = o.alone;
                hold->rev = rev;
                o.node = NULL;
                own_node_free(&o);
                zkl__session_put(s);
                return ZKL_OK;
            }
            /* Timeout, error, no memory or lost session: our node must go,
             * whatever happens. */
            delete_guaranteed(c, st == RESTART ? NULL : s, o.node);
            own_node_free(&o);
        }
        epoch = s->epoch;
        zkl__session_put(s);
        if (st != RESTART)
            return st;
        if (a->no_restart)
            return zkl__fail(ZKL_ELOST,
                             "lost our place in line for %s (session lost, or node deleted)",
                             a->path);
        if (zkl__now_ms() >= a->deadline)
            return zkl__fail(ZKL_ETIMEDOUT, "lost our place in line for %s, and out of time",
                             a->path);
        zkl__log(ZKL_LOG_INFO, "lost our place in line for %s: trying again", a->path);
        /* The server refused the session, or our node went, while the client
         * still counts the session alive: its end is usually on the way.
         * Trying again at once would only spin on the dying session (and
         * queue a cleanup each time) until the client hears of it. */
        {
            int64_t until = zkl__now_ms() + zkl__retry_delay_ms(restarts++, 4);
            zkl__await_session_news(c, epoch, until < a->deadline ? until : a->deadline);
        }
    }
}

zkl_status zkl__lock_release(zkl_client *c, zkl__hold *hold)
{
    bool alive = zkl__hold_alive(c, hold->epoch);
    zkl__session *s = NULL;
    zkl__revwatch_stop(hold->rev);
    hold->rev = NULL;
    if (hold->node) {
        /* A lost hold's node is gone with its session, or (lost locally) goes
         * when the server expires it; the worker deletes it sooner if it can.
         * Either way the caller is not kept waiting. */
        if (!alive || zkl__session_get(c, zkl__now_ms(), &s) != ZKL_OK)
            s = NULL;
        /* Not waiting for the reply: others get the lock only once the
         * server has applied the delete, and this session's next request
         * is ordered after it. A delete that fails goes to the background. */
        if (!s || take_delete_fault(c))
            zkl__bg_delete(c, hold->node, NULL);
        else
            /* Hold the delete back a moment, so that our next request
             * (typically the next acquire's create) carries it: one request
             * and one disk sync for both. Sent apart, the server syncs them
             * one after the other, and the next holder's delete queues
             * behind the second sync. If we were alone when we got it, only
             * whoever queued since can be kept waiting, and for longer; with
             * others in line, every one of them waits the window, so it is
             * short: a caller that re-acquires at once fits in it. */
            zkl__defer_delete(s, hold->node, defer_window_us(c, hold->alone));
        if (s)
            zkl__session_put(s);
        free(hold->node);
        hold->node = NULL;
    }
    zkl__lease_users(c, -1, 0);
    if (!alive)
        return zkl__fail(ZKL_ELOST, "the hold was lost before release (its session ended, or "
                                    "its lease ran out)");
    return ZKL_OK;
}

zkl_status zkl__hold_token(zkl_client *c, const zkl__hold *hold, int64_t *token)
{
    zkl__session *s;
    struct Stat st;
    int rc, attempt = 0;
    int64_t deadline = zkl__now_ms() + c->opts.connect_timeout_ms, prev;
    zkl_status status;
    if (hold->czxid) {
        *token = hold->czxid;
        return ZKL_OK;
    }
    status = zkl__session_get(c, deadline, &s);
    if (status != ZKL_OK)
        return status;
    prev = zkl__call_deadline(deadline);
    do {
        rc = zkl__zk_exists(s, hold->node, &st);
    } while (zkl__zk_retryable(rc) && zkl__backoff(c, &attempt, deadline));
    zkl__call_deadline(prev);
    zkl__session_put(s);
    if (rc == ZNONODE || !zkl__hold_alive(c, hold->epoch))
        return zkl__fail(ZKL_ELOST, "%s: the hold was lost with its session", hold->node);
    if (rc != ZOK)
        return zkl__from_zk(rc, "exists", hold->node);
    *token = st.czxid;
    return ZKL_OK;
}

zkl_status zkl__hold_copy(const zkl__hold *from, zkl__hold *to)
{
    *to = *from;
    to->node = from->node ? strdup(from->node) : NULL;
    if (from->node && !to->node)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}

zkl_status zkl__participants(zkl_client *c, const char *path, const char *const *markers,
                             char ***out, size_t *n)
{
    zkl__session *s;
    zkl__names kids = {0};
    int rc, attempt = 0;
    size_t i;
    int64_t deadline = zkl__now_ms() + c->opts.connect_timeout_ms;
    zkl_status st = zkl__session_get(c, deadline, &s);
    int64_t prev;
    if (st != ZKL_OK)
        return st;
    prev = zkl__call_deadline(deadline);
    for (;;) {
        rc = zkl__zk_children(s, path, &kids);
        if (!zkl__zk_retryable(rc) || !zkl__backoff(c, &attempt, deadline))
            break;
    }
    zkl__call_deadline(prev);
    zkl__session_put(s);
    if (rc == ZNONODE) {
        rc = ZOK;
        kids.n = 0;
    }
    if (rc != ZOK)
        return zkl__from_zk(rc, "list", path);
    if (zkl__sort_names(kids.v, kids.n, markers) != ZKL_OK) {
        zkl__names_free(&kids);
        return ZKL_ENOMEM;
    }
    for (i = 0; i < kids.n; i++) {
        char *full = zkl__path_join(path, kids.v[i]);
        if (!full) {
            zkl__names_free(&kids);
            return zkl__fail(ZKL_ENOMEM, "out of memory");
        }
        free(kids.v[i]);
        kids.v[i] = full;
    }
    *out = kids.v;
    *n = kids.n;
    if (!kids.v) { /* callers may free what they get: give them an empty array */
        *out = calloc(1, sizeof(char *));
        if (!*out)
            return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    return ZKL_OK;
}
