/*
 * create.c - our node in line (acq.h): Curator's protected
 * ephemeral-sequential create, with the first listing in the same round
 * trip, held-back deletes of this client riding in one multi, missing
 * parents made as containers, and recovery by the protected prefix after a
 * create whose reply was lost (CURATOR-498: adopted only if its
 * ephemeralOwner is our session).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/util.h"
#include "base/tuning.h"
#include "core/engine/acq.h"
#include "core/engine/inproc.h"
#include "requests/rc.h"
#include "services/chroot.h"
#include "services/cleanup.h"

/* How a test wants this create to misbehave (base/fault.h): 0 not, 1 lost before it is sent,
 * 2 its reply lost, 3 pending at the leader until a sync goes through (LATE). */
enum { CREATE_LATE = 3 };
static int create_fault(zkl_client *c)
{
    if (ZKL_FAULT(c, CREATE_SEND_LOST, NULL))
        return 1;
    if (ZKL_FAULT(c, CREATE_LANDS_LATE, NULL))
        return CREATE_LATE;
    return ZKL_FAULT(c, CREATE_REPLY_LOST, NULL) ? 2 : 0;
}

static zkl_status new_prefix(zkl__acq *op)
{
    char uuid[37];
    if (!ZKL_FAULT(op->c, NEXT_UUID, uuid) && zkl__uuid4(uuid) != ZKL_OK)
        return zkl__fail(ZKL_ESYS, "no random numbers for the protected prefix");
    memcpy(op->prefix, "_c_", 3);
    memcpy(op->prefix + 3, uuid, 36);
    op->prefix[39] = '-';
    op->prefix[40] = '\0';
    return ZKL_OK;
}

/* The path to ask for: path/prefix + lock name (+ the fixed suffix); NULL on no memory. */
static char *make_want(const zkl__acq *op)
{
    const zkl__acquire_args *a = &op->a;
    const char *suffix = a->fixed_suffix ? a->fixed_suffix : "";
    size_t n = strlen(a->path) + 1 + strlen(op->prefix) + strlen(a->driver->lock_name) +
               strlen(suffix) + 1;
    char *want = malloc(n);
    if (want)
        snprintf(want, n, "%s/%s%s%s", a->path, op->prefix, a->driver->lock_name, suffix);
    return want;
}

static zkl__step_result after_create(zkl__acq *op, int rc);
static zkl__step_result step_recover(zkl__acq *op);
static void track_create(zkl__acq *op);

/* ---- the chroot, made by a job of its own (services/chroot.h) ---- */

static zkl__step_result chroot_done(zkl__acq *op, zkl_status st)
{
    zkl__chroot_end(op->chroot);
    op->chroot = NULL;
    if (st != ZKL_OK)
        return zkl__acq_fail(op, st);
    op->step = zkl__step_create;
    return ZKL__STEP_AGAIN;
}

/* The job started, then looked at whenever it tells or its timer is due. */
static zkl__step_result step_chroot(zkl__acq *op)
{
    zkl_status st;
    int64_t wake;
    if (zkl__acq_canceled(op))
        return chroot_done(op, zkl__acq_gave_up(op, "making the chroot for"));
    if (!op->chroot &&
        (st = zkl__chroot_start(op->c, op->a.deadline, zkl__acq_notify, op, &op->chroot)) != ZKL_OK)
        return zkl__acq_fail(op, st);
    if (zkl__chroot_poll(op->chroot, &st, &wake))
        return chroot_done(op, st);
    (void)zkl__acq_sleep(op, wake);
    return ZKL__STEP_YIELD;
}

/* ---- the parents: made as containers, bottom-up as Curator 5.7+ ---- */

static zkl__step_result after_parents(zkl__acq *op, int rc)
{
    free(op->mk);
    op->mk = NULL;
    if (rc == ZOK) {
        op->step = zkl__step_create;
        return ZKL__STEP_AGAIN;
    }
    if (rc == ZNONODE && zkl__chroot_of(op->c->cfg.connect)) {
        /* the root always exists: what is missing is the chroot */
        op->step = step_chroot;
        return ZKL__STEP_AGAIN;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY)
        return zkl__acq_backoff(op, zkl__step_create, "creating the parents of");
    return zkl__acq_fail(op, zkl__rc_status(rc, "create", op->a.path));
}

static zkl__step_result step_mkdir(zkl__acq *op);

/* op->mk made (or there already): the next level down, or done. */
static zkl__step_result step_mkdir_done(zkl__acq *op)
{
    size_t len, next;
    int rc;
    char *mk;
    if (!zkl__acq_answered(op))
        return ZKL__STEP_YIELD;
    rc = op->rcs[0];
    zkl__acq_untrack(op);
    if (++op->mk_at > ZKL_PARENT_LEVELS_MAX) /* bounded, whatever the server answers */
        return after_parents(op, rc == ZNODEEXISTS ? ZOK : rc);
    if (rc == ZNONODE) { /* its parent is missing too: that first */
        len = zkl__path_parent_len(op->mk);
        if (len == 0)
            return after_parents(op, rc);
        op->mk[len] = '\0';
        op->step = step_mkdir;
        return ZKL__STEP_AGAIN;
    }
    if (rc != ZOK && rc != ZNODEEXISTS)
        return after_parents(op, rc);
    len = strlen(op->mk);
    if (len >= strlen(op->a.path))
        return after_parents(op, ZOK);
    for (next = len + 1; op->a.path[next] && op->a.path[next] != '/'; next++)
        ;
    if (!(mk = strndup(op->a.path, next)))
        return after_parents(op, ZSYSTEMERROR);
    free(op->mk);
    op->mk = mk;
    op->step = step_mkdir;
    return ZKL__STEP_AGAIN;
}

static zkl__step_result step_mkdir(zkl__acq *op)
{
    int rc;
    zkl__req *k = zkl__req_create(op->s, op->mk, "", 0, ZOO_CONTAINER, zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
    op->step = step_mkdir_done;
    return ZKL__STEP_AGAIN;
}

/* The parent is missing: make it (and the chroot, if that is what is missing). */
static zkl__step_result make_parents(zkl__acq *op)
{
    if (++op->parents > ZKL_PARENT_TRIES)
        return zkl__acq_fail(op, zkl__from_zk(ZNONODE, "create parents of", op->a.path));
    free(op->mk);
    if (!(op->mk = strdup(op->a.path)))
        return zkl__acq_fail(op, zkl__fail(ZKL_ENOMEM, "out of memory"));
    op->mk_at = 0;
    op->step = step_mkdir;
    return ZKL__STEP_AGAIN;
}

/* ---- recovery after a create whose reply was lost ---- */

static zkl__step_result after_recover(zkl__acq *op, int rc)
{
    zkl_status st;
    if (rc == ZOK) {
        op->step = zkl__step_wait;
        return ZKL__STEP_AGAIN;
    }
    if (rc == ZNONODE) { /* nothing reached the server: create again */
        op->flags &= ~ZKL__AF_UNCERTAIN;
        if ((st = new_prefix(op)) != ZKL_OK)
            return zkl__acq_fail(op, st);
        op->step = zkl__step_create;
        return ZKL__STEP_AGAIN;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY)
        return zkl__acq_backoff(op, zkl__step_create, "creating the lock node under");
    return zkl__acq_fail(op, zkl__rc_status(rc, "list", op->a.path));
}

/* The node with our prefix: adopted if our session owns it, else deleted. */
static zkl__step_result step_adopting(zkl__acq *op)
{
    struct Stat st;
    int rc;
    if (!zkl__acq_answered(op))
        return ZKL__STEP_YIELD;
    rc = op->rcs[0];
    if (rc == ZOK)
        st = zkl__req_stat(op->k[0]);
    zkl__acq_untrack(op);
    if (rc == ZOK && st.ephemeralOwner == zkl__session_id(op->s)) {
        op->name = zkl__path_basename(op->node);
        op->czxid = st.czxid;
        op->flags |= ZKL__AF_HAVE_KIDS;
        op->flags &= ~ZKL__AF_UNCERTAIN;
        zkl__log(ZKL_LOG_INFO, "adopted %s after an uncertain create", op->node);
        return after_recover(op, ZOK);
    }
    if (rc == ZOK) { /* a node of another (dying) session: not ours to adopt */
        zkl__log(ZKL_LOG_WARN, "%s carries our prefix but belongs to session %llx: deleting it",
                 op->node, (unsigned long long)st.ephemeralOwner);
        zkl__bg_delete(op->c, op->node, NULL);
        rc = ZNONODE;
    }
    free(op->node);
    op->node = NULL;
    zkl__names_free(&op->kids);
    op->flags &= ~ZKL__AF_HAVE_KIDS;
    return after_recover(op, rc);
}

/* The listing by our prefix: a node to look at, or nothing reached the server. */
/* The listing by our prefix, after the sync: a node to look at, or nothing reached the server. */
static zkl__step_result step_recovering(zkl__acq *op)
{
    zkl__req *k;
    long idx;
    int rc;
    if (!zkl__acq_answered(op))
        return ZKL__STEP_YIELD;
    rc = op->rcs[op->nk - 2]; /* the sync: without it, the listing proves nothing */
    if (rc == ZOK && (rc = op->rcs[op->nk - 1]) == ZOK)
        zkl__req_take_kids(op->k[op->nk - 1], &op->kids);
    zkl__acq_untrack(op);
    if (rc != ZOK)
        return after_recover(op, rc);
    idx = zkl__find_prefix(op->kids.v, op->kids.n, op->prefix);
    if (idx < 0 || !(op->node = zkl__path_join(op->a.path, op->kids.v[idx]))) {
        zkl__names_free(&op->kids);
        return after_recover(op, idx < 0 ? ZNONODE : ZSYSTEMERROR);
    }
    k = zkl__req_exists(op->s, op->node, zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
    op->step = step_adopting;
    return ZKL__STEP_AGAIN;
}

/*
 * A create whose reply was lost may be a proposal the ensemble's leader has
 * not committed yet, and a follower that logged it shows it only once it
 * is applied: when the leader steps down, a new leader may commit it after
 * a listing on that follower said "not there" (the nemesis run of seed
 * 202). So the listing goes behind a sync, which the server answers only
 * after everything the leader committed before it, and which a leader
 * with our create still pending holds back until the create is decided.
 * One more request, pipelined, on this rare path only.
 */
static zkl__step_result step_recover(zkl__acq *op)
{
    int rc;
    zkl__req *k;
    if (op->fault == CREATE_LATE) { /* the test's pending create, decided by the sync */
        op->fault = 0;
        track_create(op);
    }
    k = zkl__req_sync(op->s, op->a.path, zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
    k = zkl__req_children(op->s, op->a.path, NULL, zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
    op->step = step_recovering;
    return ZKL__STEP_AGAIN;
}

/* ---- the create ---- */

/* The create and its listing are answered. */
static zkl__step_result step_created(zkl__acq *op)
{
    struct Stat stat;
    int rc, list_rc;
    if (!zkl__acq_answered(op))
        return ZKL__STEP_YIELD;
    rc = op->rcs[0];
    list_rc = op->nk > 1 ? op->rcs[1] : ZNOTHING;
    if (op->fault == 2 && rc == ZOK)
        rc = ZCONNECTIONLOSS; /* the reply "never arrived" */
    else if (rc == ZOK) {
        zkl__req_take_created(op->k[0], &op->node, &stat);
        op->czxid = op->merged ? 0 : stat.czxid; /* fetched if asked for (zkl__hold_token) */
        op->name = zkl__path_basename(op->node);
        if (list_rc == ZOK)
            zkl__req_take_kids(op->k[1], &op->kids);
        zkl__acq_flag(&op->flags, ZKL__AF_HAVE_KIDS, list_rc == ZOK);
    }
    zkl__acq_untrack(op);
    if (op->merged) {
        if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) { /* applied or not, they must go */
            zkl__heldback *d;
            for (d = op->merged; d; d = d->next)
                zkl__bg_delete(op->c, d->path, NULL);
            zkl__held_back_done(op->merged, true);
        } else {
            zkl__held_back_done(op->merged, rc == ZOK);
        }
        op->merged = NULL;
        zkl__acq_flag(&op->flags, ZKL__AF_CARRIED, rc == ZOK);
        if (rc != ZOK && rc != ZNONODE && zkl__rc_kind_of(rc) != ZKL__RC_RETRY &&
            zkl__rc_kind_of(rc) != ZKL__RC_SESSION) {
            /* nothing applied (a delete failed, or no memory): a plain create next */
            op->flags |= ZKL__AF_NO_CARRY;
            op->step = zkl__step_create;
            return ZKL__STEP_AGAIN;
        }
    }
    return after_create(op, rc);
}

/* A test that runs something after the next listing gets one (base/fault.h). */
#define list_fault_set(c) (ZKL_FAULT((c), LISTING_WANTED, NULL) != 0)

/*
 * Whether the create goes without the listing: a mutex's sequential node,
 * not looking ahead in every acquire, on a path where the last node this
 * process made is another session's. The new node most likely lands right
 * behind that one, which the wait then finds with no listing (wait.c,
 * "known predecessor"); if not, its first round lists, one round trip
 * later.
 */
static bool unlisted_join(const zkl__acq *op, int mode)
{
    return (op->a.driver->facts & ZKL__D_HEAD_HOLDS) && mode == ZOO_EPHEMERAL_SEQUENTIAL &&
           op->a.lookahead != ZKL__LOOKAHEAD_ON && !list_fault_set(op->c) &&
           zkl__hint(op, ZKL__HINT_MADE) &&
           zkl__inproc_others_joined(op->inproc, zkl__session_id(op->s));
}

static int create_mode(const zkl__acq *op)
{
    return op->a.fixed_suffix ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL;
}

/* The create of op->want alone, tracked. */
static void track_create(zkl__acq *op)
{
    zkl_client *c = op->c;
    const void *data = op->a.data ? op->a.data : c->cfg.node_data;
    int len = op->a.data ? op->a.data_len : c->cfg.node_data_len, rc;
    zkl__req *k =
        zkl__req_create(op->s, op->want, data, len, create_mode(op), zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
}

/* Send the create with the first listing behind it (one round trip). */
static void send_create(zkl__acq *op)
{
    zkl_client *c = op->c;
    const void *data = op->a.data ? op->a.data : c->cfg.node_data;
    int len = op->a.data ? op->a.data_len : c->cfg.node_data_len, rc;
    int mode = create_mode(op);
    zkl__req *k;
    zkl__heldback *d;
    char *del[ZKL_MULTI_MAX];
    int ndel = 0;
    op->fault = create_fault(c);
    if (op->fault == 1 || op->fault == CREATE_LATE) { /* "lost before it was sent" (LATE: later) */
        zkl__acq_track(op, NULL, ZCONNECTIONLOSS);
        return;
    }
    /* this client's held-back deletes ride in one multi with the create */
    op->merged = op->a.token_lazy && !zkl__has(op->flags, ZKL__AF_NO_CARRY) && !op->fault
                     ? zkl__take_held_back(op->s)
                     : NULL;
    op->flags &= ~ZKL__AF_NO_CARRY;
    for (d = op->merged; d && ndel < ZKL_MULTI_MAX; d = d->next)
        del[ndel++] = d->path;
    if (op->merged) {
        k = zkl__req_multi_create(op->s, del, ndel, op->want, data, len, mode, zkl__acq_notify, op,
                                  &rc);
        zkl__acq_track(op, k, rc);
    } else {
        track_create(op);
        k = op->k[op->nk - 1];
    }
    if (!k || op->fault)
        return;
    if (!zkl__has(op->flags, ZKL__AF_IN_FLIGHT) && (op->a.driver->facts & ZKL__D_HEAD_HOLDS) &&
        mode == ZOO_EPHEMERAL_SEQUENTIAL)
        zkl__acq_flag(&op->flags, ZKL__AF_IN_FLIGHT, zkl__inproc_create_sent(op->inproc));
    if (op->a.known_granted || zkl__acq_flag(&op->flags, ZKL__AF_UNLISTED, unlisted_join(op, mode)))
        return;
    k = zkl__req_children_shared(op->s, op->a.path, zkl__acq_notify, op, &rc);
    zkl__acq_track(op, k, rc);
}

zkl__step_result zkl__step_create(zkl__acq *op)
{
    zkl_status st;
    if (!op->prefix[0] && (st = new_prefix(op)) != ZKL_OK)
        return zkl__acq_fail(op, st);
    if (zkl__has(op->flags, ZKL__AF_UNCERTAIN)) {
        op->step = step_recover;
        return ZKL__STEP_AGAIN;
    }
    free(op->want);
    if (!(op->want = make_want(op)))
        return zkl__acq_fail(op, zkl__fail(ZKL_ENOMEM, "out of memory"));
    send_create(op);
    op->step = step_created;
    return ZKL__STEP_AGAIN;
}

static zkl__step_result after_create(zkl__acq *op, int rc)
{
    switch (zkl__rc_kind_of(rc)) {
    case ZKL__RC_OK:
        free(op->want); /* a pending wait keeps only what it needs */
        op->want = NULL;
        op->step = op->a.known_granted ? zkl__step_grant : zkl__step_wait;
        return ZKL__STEP_AGAIN;
    case ZKL__RC_RETRY:
        op->flags |= ZKL__AF_UNCERTAIN;
        return zkl__acq_backoff(op, zkl__step_create, "creating the lock node under");
    case ZKL__RC_NOMEM: /* no memory for the reply's results: the node may well exist */
        op->flags |= ZKL__AF_UNCERTAIN;
        return zkl__acq_fail(
            op, zkl__fail(ZKL_ENOMEM, "out of memory creating the lock node under %s", op->a.path));
    case ZKL__RC_SESSION: op->flags |= ZKL__AF_UNCERTAIN; return zkl__acq_restart(op);
    default:
        if (rc == ZNONODE)
            return make_parents(op);
        return zkl__acq_fail(op, zkl__from_zk(rc, "create", op->want));
    }
}
