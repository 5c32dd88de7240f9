/*
 * create.c - our node in line (engine.h): Curator's protected
 * ephemeral-sequential create, with the first listing in the same round
 * trip, held-back deletes of this client riding in one multi, missing
 * parents made as containers, and recovery by the protected prefix after a
 * create whose reply was lost (CURATOR-498: adopted only if its
 * ephemeralOwner is our session).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/util.h"
#include "core/engine.h"
#include "requests/rc.h"
#include "services/chroot.h"
#include "services/cleanup.h"

#ifdef ZKL_FAULTS
/* Test hook: the UUID a test chose for the next protected create. */
static bool uuid_fault(zkl_client *c, char uuid[37])
{
    bool set;
    pthread_mutex_lock(&c->mu);
    set = c->faults.next_uuid[0] != '\0';
    if (set) {
        memcpy(uuid, c->faults.next_uuid, 37);
        c->faults.next_uuid[0] = '\0';
    }
    pthread_mutex_unlock(&c->mu);
    return set;
}

/* Test hook: how the next create should misbehave. 0 none, 1 lose before send, 2 lose reply. */
static int create_fault(zkl_client *c)
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
#else
#define uuid_fault(c, uuid) ((void)(c), (void)(uuid), false)
#define create_fault(c) ((void)(c), 0)
#endif

/* One create in the making. */
typedef struct creating {
    zkl_client *c;
    zkl__session *s;
    const zkl__acquire_args *a;
    char prefix[ZKL_PROTECTED_PREFIX_LEN + 1];
    char *want; /* the path asked for */
    int attempt, parents;
    bool uncertain; /* a try may have reached the server: recover by prefix first */
} creating;

static zkl_status new_prefix(creating *t)
{
    char uuid[37];
    if (!uuid_fault(t->c, uuid) && zkl__uuid4(uuid) != ZKL_OK)
        return ZKL_ESYS;
    memcpy(t->prefix, "_c_", 3);
    memcpy(t->prefix + 3, uuid, 36);
    t->prefix[39] = '-';
    t->prefix[40] = '\0';
    return ZKL_OK;
}

/* The path to ask for: path/prefix + lock name (+ the fixed suffix); NULL on no memory. */
static char *make_want(const creating *t)
{
    const zkl__acquire_args *a = t->a;
    const char *suffix = a->fixed_suffix ? a->fixed_suffix : "";
    size_t n =
        strlen(a->path) + 1 + strlen(t->prefix) + strlen(a->driver->lock_name) + strlen(suffix) + 1;
    char *want = malloc(n);
    if (want)
        snprintf(want, n, "%s/%s%s%s", a->path, t->prefix, a->driver->lock_name, suffix);
    return want;
}

/* Create path and any missing ancestors as container nodes (bottom-up, as Curator 5.7+). */
static int mkdirs(zkl__session *s, const char *path, int depth)
{
    int rc = ZNONODE, tries;
    for (tries = 0; tries < 5; tries++) {
        size_t plen;
        char *parent;
        rc = zkl__zk_create(s, path, "", 0, ZOO_CONTAINER, NULL, NULL);
        if (rc == ZOK || rc == ZNODEEXISTS)
            return ZOK;
        if (rc != ZNONODE || depth > 256 || (plen = zkl__path_parent_len(path)) == 0)
            return rc;
        if (!(parent = strndup(path, plen)))
            return ZSYSTEMERROR;
        rc = mkdirs(s, parent, depth + 1);
        free(parent);
        if (rc != ZOK)
            return rc;
    }
    return rc;
}

/* Adopt the node at index idx of kids if our session owns it, else queue its delete. */
static int adopt(zkl__session *s, const char *path, zkl__names *kids, long idx, zkl__own *o)
{
    struct Stat st;
    char *node = zkl__path_join(path, kids->v[idx]);
    int rc = node ? zkl__zk_exists(s, node, &st) : ZSYSTEMERROR;
    if (rc == ZOK && st.ephemeralOwner == zkl__session_id(s)) {
        o->node = node;
        o->name = zkl__path_basename(node);
        o->czxid = st.czxid;
        o->kids = *kids;
        o->have_kids = true;
        kids->v = NULL;
        kids->n = 0;
        zkl__log(ZKL_LOG_INFO, "adopted %s after an uncertain create", node);
        return ZOK;
    }
    if (rc == ZOK) { /* a node of another (dying) session: not ours to adopt */
        zkl__log(ZKL_LOG_WARN, "%s carries our prefix but belongs to session %llx: deleting it",
                 node, (unsigned long long)st.ephemeralOwner);
        zkl__bg_delete(s->c, node, NULL);
        rc = ZNONODE;
    }
    free(node);
    return rc;
}

/*
 * After an uncertain create: find a child with our prefix. Adopt it if it is
 * ours (same session), delete it otherwise. Returns ZOK with *o filled on
 * adoption, ZNONODE if there is nothing to adopt (create again), or an rc.
 */
static int recover(zkl__session *s, const char *path, const char *prefix, zkl__own *o)
{
    zkl__names kids = {0};
    long idx;
    int rc = zkl__zk_children(s, path, &kids);
    if (rc != ZOK)
        return rc;
    idx = zkl__find_prefix(kids.v, kids.n, prefix);
    rc = idx < 0 ? ZNONODE : adopt(s, path, &kids, idx, o);
    zkl__names_free(&kids);
    return rc;
}

/* The create, carrying this client's held-back deletes in one multi. ZNOTHING: none to carry. */
static int create_carrying(creating *t, const void *data, int len, int mode, zkl__own *o)
{
    zkl__deferred *merged = t->a->token_lazy ? zkl__take_deferred(t->s) : NULL, *d;
    char *del[ZKL_MULTI_MAX];
    int ndel = 0, rc, list_rc;
    if (!merged)
        return ZNOTHING;
    for (d = merged; d && ndel < ZKL_MULTI_MAX; d = d->next)
        del[ndel++] = d->path;
    rc = zkl__zk_multi_create_list(t->s, del, ndel, t->want, data, len, mode, t->a->path, &o->node,
                                   &o->kids, &list_rc);
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) { /* applied or not, they must go */
        for (d = merged; d; d = d->next)
            zkl__bg_delete(t->c, d->path, NULL);
        zkl__deferred_done(merged, true);
    } else {
        zkl__deferred_done(merged, rc == ZOK);
    }
    if (rc == ZOK) {
        o->name = zkl__path_basename(o->node);
        o->czxid = 0; /* fetched if asked for (zkl__hold_token) */
        o->have_kids = list_rc == ZOK;
        o->carried = true;
    } else if (rc != ZNONODE && zkl__rc_kind_of(rc) != ZKL__RC_RETRY &&
               zkl__rc_kind_of(rc) != ZKL__RC_SESSION) {
        rc = ZNOTHING; /* nothing applied (a delete failed, or no memory): a plain create next */
    }
    return rc;
}

/* One try: the create and the first listing in one round trip. */
static int create_once(creating *t, zkl__own *o)
{
    zkl_client *c = t->c;
    const void *data = t->a->data ? t->a->data : c->node_data;
    int len = t->a->data ? t->a->data_len : c->node_data_len, rc, list_rc;
    int mode = t->a->fixed_suffix ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL;
    struct Stat stat;
    switch (create_fault(c)) {
    case 1: return ZCONNECTIONLOSS;
    case 2:
        rc = zkl__zk_create(t->s, t->want, data, len, mode, NULL, NULL);
        return rc == ZOK ? ZCONNECTIONLOSS : rc; /* the reply "never arrived" */
    default: break;
    }
    rc = create_carrying(t, data, len, mode, o);
    if (rc != ZNOTHING)
        return rc;
    rc = zkl__zk_create_list(t->s, t->want, data, len, mode, t->a->path, &o->node, &stat, &o->kids,
                             &list_rc);
    if (rc == ZOK) {
        o->name = zkl__path_basename(o->node);
        o->czxid = stat.czxid;
        o->have_kids = list_rc == ZOK;
    }
    return rc;
}

/* What a step left to do: go on, or stop with *st (cleanup: queue the prefix's delete). */
enum next { NEXT_AGAIN, NEXT_DONE, NEXT_CLEANUP };

static enum next after_recover(creating *t, int rc, zkl_status *st)
{
    if (rc == ZOK)
        return NEXT_DONE;
    if (rc == ZNONODE) { /* nothing reached the server: create again */
        t->uncertain = false;
        *st = new_prefix(t);
        return *st == ZKL_OK ? NEXT_AGAIN : NEXT_DONE;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) {
        if (zkl__backoff(t->c, &t->attempt, t->a->deadline))
            return NEXT_AGAIN;
        *st = zkl__gave_up(t->c, t->a, "creating the lock node under");
        return NEXT_CLEANUP;
    }
    *st = zkl__rc_status(rc, "list", t->a->path);
    return NEXT_CLEANUP;
}

/* The parent is missing: make it (and the chroot, if that is what is missing). */
static enum next make_parents(creating *t, zkl_status *st)
{
    int rc;
    if (++t->parents > 10) {
        *st = zkl__from_zk(ZNONODE, "create parents of", t->a->path);
        return NEXT_DONE;
    }
    rc = mkdirs(t->s, t->a->path, 0);
    if (rc == ZOK)
        return NEXT_AGAIN;
    if (rc == ZNONODE && zkl__chroot_of(t->c->connect)) {
        /* the root always exists: what is missing is the chroot */
        *st = zkl__chroot_make(t->c, t->a->deadline);
        return *st == ZKL_OK ? NEXT_AGAIN : NEXT_DONE;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) {
        if (zkl__backoff(t->c, &t->attempt, t->a->deadline))
            return NEXT_AGAIN;
        *st = zkl__fail(ZKL_ETIMEDOUT, "timed out creating the parents of %s%s", t->a->path,
                        zkl__conn_note(t->c));
        return NEXT_DONE;
    }
    *st = zkl__rc_status(rc, "create", t->a->path);
    return NEXT_DONE;
}

static enum next after_create(creating *t, int rc, zkl_status *st)
{
    switch (zkl__rc_kind_of(rc)) {
    case ZKL__RC_OK: return NEXT_DONE;
    case ZKL__RC_RETRY:
        t->uncertain = true;
        if (zkl__backoff(t->c, &t->attempt, t->a->deadline))
            return NEXT_AGAIN;
        *st = zkl__gave_up(t->c, t->a, "creating the lock node under");
        return NEXT_CLEANUP;
    case ZKL__RC_NOMEM: /* no memory for the reply's results: the node may well exist */
        *st = zkl__fail(ZKL_ENOMEM, "out of memory creating the lock node under %s", t->a->path);
        return NEXT_CLEANUP;
    case ZKL__RC_SESSION: *st = ZKL__RESTART; return NEXT_CLEANUP;
    default:
        if (rc == ZNONODE)
            return make_parents(t, st);
        *st = zkl__from_zk(rc, "create", t->want);
        return NEXT_DONE;
    }
}

zkl_status zkl__create_node(zkl_client *c, zkl__session *s, const zkl__acquire_args *a, zkl__own *o)
{
    creating t = {c, s, a, {0}, NULL, 0, 0, false};
    zkl_status st = ZKL_OK;
    enum next next = NEXT_AGAIN;
    memset(o, 0, sizeof *o);
    if (new_prefix(&t) != ZKL_OK)
        return ZKL_ESYS;
    while (next == NEXT_AGAIN) {
        if (t.uncertain) {
            next = after_recover(&t, recover(s, a->path, t.prefix, o), &st);
            continue;
        }
        free(t.want);
        if (!(t.want = make_want(&t))) {
            st = zkl__fail(ZKL_ENOMEM, "out of memory");
            break;
        }
        next = after_create(&t, create_once(&t, o), &st);
    }
    if (next == NEXT_CLEANUP) /* an earlier try may have reached the server */
        zkl__bg_delete(c, a->path, t.prefix);
    free(t.want);
    return st;
}
