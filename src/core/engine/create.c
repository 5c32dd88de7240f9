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
#include "core/engine/room.h"
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

static zkl_status new_prefix(zkl__acq *aq)
{
    char uuid[37];
    if (!ZKL_FAULT(aq->c, NEXT_UUID, uuid) && zkl__uuid4(uuid) != ZKL_OK)
        return zkl__fail(ZKL_ESYS, "no random numbers for the protected prefix");
    char *prefix = aq->making->prefix;
    memcpy(prefix, "_c_", 3);
    memcpy(prefix + 3, uuid, 36);
    prefix[39] = '-';
    prefix[40] = '\0';
    return ZKL_OK;
}

/* The path to ask for: path/prefix + lock name (+ the fixed suffix); NULL on no memory. */
static char *make_want(const zkl__acq *aq)
{
    const zkl__acquire_args *a = &aq->a;
    const char *suffix = a->fixed_suffix ? a->fixed_suffix : "";
    size_t n = strlen(a->path) + 1 + strlen(aq->making->prefix) + strlen(a->driver->lock_name) +
               strlen(suffix) + 1;
    char *want = malloc(n);
    if (want)
        snprintf(want, n, "%s/%s%s%s", a->path, aq->making->prefix, a->driver->lock_name, suffix);
    return want;
}

static zkl__step_result after_create(zkl__acq *aq, int rc);
static zkl__step_result step_recover(zkl__acq *aq);
static void track_create(zkl__acq *aq);

/* ---- the chroot, made by a job of its own (services/chroot.h) ---- */

static zkl__step_result chroot_done(zkl__acq *aq, zkl_status st)
{
    zkl__chroot_end(aq->making->chroot);
    aq->making->chroot = NULL;
    if (st != ZKL_OK)
        return zkl__acq_fail(aq, st);
    aq->step = zkl__step_create;
    return ZKL__STEP_AGAIN;
}

/* The job started, then looked at whenever it tells or its timer is due. */
static zkl__step_result step_chroot(zkl__acq *aq)
{
    zkl_status st;
    int64_t wake;
    if (zkl__acq_canceled(aq))
        return chroot_done(aq, zkl__acq_gave_up(aq, "making the chroot for"));
    if (!aq->making->chroot && (st = zkl__chroot_start(aq->c, aq->a.deadline, zkl__acq_notify, aq,
                                                       &aq->making->chroot)) != ZKL_OK)
        return zkl__acq_fail(aq, st);
    if (zkl__chroot_poll(aq->making->chroot, &st, &wake))
        return chroot_done(aq, st);
    (void)zkl__acq_sleep(aq, wake);
    return ZKL__STEP_YIELD;
}

/* ---- the parents: made as containers, bottom-up as Curator 5.7+ ---- */

static zkl__step_result after_parents(zkl__acq *aq, int rc)
{
    free(aq->making->mk);
    aq->making->mk = NULL;
    if (rc == ZOK) {
        aq->step = zkl__step_create;
        return ZKL__STEP_AGAIN;
    }
    if (rc == ZNONODE && zkl__chroot_of(aq->c->cfg.connect)) {
        /* the root always exists: what is missing is the chroot */
        aq->step = step_chroot;
        return ZKL__STEP_AGAIN;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY)
        return zkl__acq_backoff(aq, zkl__step_create, "creating the parents of");
    return zkl__acq_fail(aq, zkl__rc_status(rc, "create", aq->a.path));
}

static zkl__step_result step_mkdir(zkl__acq *aq);

/* aq->making->mk made (or there already): the next level down, or done. */
static zkl__step_result step_mkdir_done(zkl__acq *aq)
{
    size_t len, next;
    int rc;
    char *mk;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    zkl__acq_untrack(aq);
    if (++aq->making->mk_at > ZKL_PARENT_LEVELS_MAX) /* bounded, whatever the server answers */
        return after_parents(aq, rc == ZNODEEXISTS ? ZOK : rc);
    if (rc == ZNONODE) { /* its parent is missing too: that first */
        len = zkl__path_parent_len(aq->making->mk);
        if (len == 0)
            return after_parents(aq, rc);
        aq->making->mk[len] = '\0';
        aq->step = step_mkdir;
        return ZKL__STEP_AGAIN;
    }
    if (rc != ZOK && rc != ZNODEEXISTS)
        return after_parents(aq, rc);
    len = strlen(aq->making->mk);
    if (len >= strlen(aq->a.path))
        return after_parents(aq, ZOK);
    for (next = len + 1; aq->a.path[next] && aq->a.path[next] != '/'; next++)
        ;
    if (!(mk = strndup(aq->a.path, next)))
        return after_parents(aq, ZSYSTEMERROR);
    free(aq->making->mk);
    aq->making->mk = mk;
    aq->step = step_mkdir;
    return ZKL__STEP_AGAIN;
}

static zkl__step_result step_mkdir(zkl__acq *aq)
{
    int rc;
    zkl__req *k =
        zkl__req_create(aq->s, aq->making->mk, "", 0, ZOO_CONTAINER, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_mkdir_done;
    return ZKL__STEP_AGAIN;
}

/* The parent is missing: make it (and the chroot, if that is what is missing). */
static zkl__step_result make_parents(zkl__acq *aq)
{
    if (++aq->parents > ZKL_PARENT_TRIES)
        return zkl__acq_fail(aq, zkl__from_zk(ZNONODE, "create parents of", aq->a.path));
    free(aq->making->mk);
    if (!(aq->making->mk = strdup(aq->a.path)))
        return zkl__acq_fail(aq, zkl__fail(ZKL_ENOMEM, "out of memory"));
    aq->making->mk_at = 0;
    aq->step = step_mkdir;
    return ZKL__STEP_AGAIN;
}

/* ---- recovery after a create whose reply was lost ---- */

static zkl__step_result after_recover(zkl__acq *aq, int rc)
{
    zkl_status st;
    if (rc == ZOK) { /* adopted */
        zkl__making_free(aq);
        aq->step = zkl__step_wait;
        return ZKL__STEP_AGAIN;
    }
    if (rc == ZNONODE) { /* nothing reached the server: create again */
        aq->flags &= ~ZKL__AF_UNCERTAIN;
        if ((st = new_prefix(aq)) != ZKL_OK)
            return zkl__acq_fail(aq, st);
        aq->step = zkl__step_create;
        return ZKL__STEP_AGAIN;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY)
        return zkl__acq_backoff(aq, zkl__step_create, "creating the lock node under");
    return zkl__acq_fail(aq, zkl__rc_status(rc, "list", aq->a.path));
}

/* The node with our prefix: adopted if our session owns it, else deleted. */
static zkl__step_result step_adopting(zkl__acq *aq)
{
    struct Stat st;
    int rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    if (rc == ZOK)
        st = zkl__req_stat(aq->k[0]);
    zkl__acq_untrack(aq);
    if (rc == ZOK && st.ephemeralOwner == zkl__session_id(aq->s)) {
        aq->name = zkl__path_basename(aq->node);
        aq->czxid = st.czxid;
        aq->flags |= ZKL__AF_HAVE_KIDS;
        aq->flags &= ~ZKL__AF_UNCERTAIN;
        zkl__log(ZKL_LOG_INFO, "adopted %s after an uncertain create", aq->node);
        return after_recover(aq, ZOK);
    }
    if (rc == ZOK) { /* a node of another (dying) session: not ours to adopt */
        zkl__log(ZKL_LOG_WARN, "%s carries our prefix but belongs to session %llx: deleting it",
                 aq->node, (unsigned long long)st.ephemeralOwner);
        zkl__bg_delete(aq->c, aq->node, NULL);
        rc = ZNONODE;
    }
    free(aq->node);
    aq->node = NULL;
    zkl__names_free(&aq->kids);
    aq->flags &= ~ZKL__AF_HAVE_KIDS;
    return after_recover(aq, rc);
}

/* The listing by our prefix: a node to look at, or nothing reached the server. */
/* The listing by our prefix, after the sync: a node to look at, or nothing reached the server. */
static zkl__step_result step_recovering(zkl__acq *aq)
{
    zkl__req *k;
    long idx;
    int rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[aq->nk - 2]; /* the sync: without it, the listing proves nothing */
    if (rc == ZOK && (rc = aq->rcs[aq->nk - 1]) == ZOK)
        zkl__req_take_kids(aq->k[aq->nk - 1], &aq->kids);
    zkl__acq_untrack(aq);
    if (rc != ZOK)
        return after_recover(aq, rc);
    idx = zkl__find_prefix(aq->kids.v, aq->kids.n, aq->making->prefix);
    if (idx < 0 || !(aq->node = zkl__path_join(aq->a.path, aq->kids.v[idx]))) {
        zkl__names_free(&aq->kids);
        return after_recover(aq, idx < 0 ? ZNONODE : ZSYSTEMERROR);
    }
    k = zkl__req_exists(aq->s, aq->node, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_adopting;
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
static zkl__step_result step_recover(zkl__acq *aq)
{
    int rc;
    zkl__req *k;
    if (aq->fault == CREATE_LATE) { /* the test's pending create, decided by the sync */
        aq->fault = 0;
        track_create(aq);
    }
    k = zkl__req_sync(aq->s, aq->a.path, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    k = zkl__req_children(aq->s, aq->a.path, NULL, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_recovering;
    return ZKL__STEP_AGAIN;
}

/* ---- the create ---- */

/* The create and its listing are answered. */
static zkl__step_result step_created(zkl__acq *aq)
{
    struct Stat stat;
    int rc, list_rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    list_rc = aq->nk > 1 ? aq->rcs[1] : ZNOTHING;
    if (aq->fault == 2 && rc == ZOK)
        rc = ZCONNECTIONLOSS; /* the reply "never arrived" */
    else if (rc == ZOK) {
        zkl__req_take_created(aq->k[0], &aq->node, &stat);
        aq->czxid =
            aq->making->merged ? 0 : stat.czxid; /* fetched if asked for (zkl__hold_token) */
        aq->name = zkl__path_basename(aq->node);
        if (list_rc == ZOK)
            zkl__req_take_kids(aq->k[1], &aq->kids);
        zkl__acq_flag(&aq->flags, ZKL__AF_HAVE_KIDS, list_rc == ZOK);
    }
    zkl__acq_untrack(aq);
    if (aq->making->merged) {
        if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY) { /* applied or not, they must go */
            zkl__heldback *d;
            for (d = aq->making->merged; d; d = d->next)
                zkl__bg_delete(aq->c, d->path, NULL);
            zkl__held_back_done(aq->c, &aq->making->merged, true);
        } else {
            zkl__held_back_done(aq->c, &aq->making->merged, rc == ZOK);
        }
        zkl__acq_flag(&aq->flags, ZKL__AF_CARRIED, rc == ZOK);
        if (rc != ZOK && rc != ZNONODE && zkl__rc_kind_of(rc) != ZKL__RC_RETRY &&
            zkl__rc_kind_of(rc) != ZKL__RC_SESSION) {
            /* nothing applied (a delete failed, or no memory): a plain create next */
            aq->flags |= ZKL__AF_NO_CARRY;
            aq->step = zkl__step_create;
            return ZKL__STEP_AGAIN;
        }
    }
    return after_create(aq, rc);
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
static bool unlisted_join(zkl__acq *aq, int mode)
{
    return (aq->a.driver->facts & ZKL__D_HEAD_HOLDS) && mode == ZOO_EPHEMERAL_SEQUENTIAL &&
           aq->a.lookahead != ZKL__LOOKAHEAD_ON && !list_fault_set(aq->c) &&
           zkl__room_ask(ZKL__ASK_JOIN, aq, NULL, NULL, 0);
}

static int create_mode(const zkl__acq *aq)
{
    return aq->a.fixed_suffix ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL;
}

/* The create of aq->making->want alone, tracked. */
static void track_create(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    const void *data = aq->a.data ? aq->a.data : c->cfg.node_data;
    int len = aq->a.data ? aq->a.data_len : c->cfg.node_data_len, rc;
    zkl__req *k = zkl__req_create(aq->s, aq->making->want, data, len, create_mode(aq),
                                  zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
}

/* Send the create with the first listing behind it (one round trip). */
static void send_create(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    const void *data = aq->a.data ? aq->a.data : c->cfg.node_data;
    int len = aq->a.data ? aq->a.data_len : c->cfg.node_data_len, rc;
    int mode = create_mode(aq);
    zkl__req *k;
    zkl__heldback *d;
    char *del[ZKL_MULTI_MAX];
    int ndel = 0;
    aq->fault = create_fault(c);
    if (aq->fault == 1 || aq->fault == CREATE_LATE) { /* "lost before it was sent" (LATE: later) */
        zkl__acq_track(aq, NULL, ZCONNECTIONLOSS);
        return;
    }
    /* this client's held-back deletes ride in one multi with the create */
    aq->making->merged = NULL;
    if (aq->a.token_lazy && !zkl__has(aq->flags, ZKL__AF_NO_CARRY) && !aq->fault)
        zkl__take_held_back(aq->s, &aq->making->merged);
    aq->flags &= ~ZKL__AF_NO_CARRY;
    for (d = aq->making->merged; d && ndel < ZKL_MULTI_MAX; d = d->next)
        del[ndel++] = d->path;
    if (aq->making->merged) {
        k = zkl__req_multi_create(aq->s, del, ndel, aq->making->want, data, len, mode,
                                  zkl__acq_notify, aq, &rc);
        zkl__acq_track(aq, k, rc);
    } else {
        track_create(aq);
        k = aq->k[aq->nk - 1];
    }
    if (!k || aq->fault)
        return;
    if ((aq->a.driver->facts & ZKL__D_HEAD_HOLDS) && mode == ZOO_EPHEMERAL_SEQUENTIAL)
        zkl__room_note(ZKL__NOTE_SENT, aq, NULL); /* in flight until noted (room.h) */
    if (aq->a.known_granted || zkl__acq_flag(&aq->flags, ZKL__AF_UNLISTED, unlisted_join(aq, mode)))
        return;
    k = zkl__req_children_shared(aq->s, aq->a.path, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
}

void zkl__making_free(zkl__acq *aq)
{
    zkl__making *mk = aq->making;
    if (!mk)
        return;
    zkl__chroot_end(mk->chroot); /* (an acquire freed, or failed, as it made the chroot) */
    zkl__held_back_done(aq->c, &mk->merged, false); /* (none: a multi's answer took them) */
    free(mk->want);
    free(mk->mk);
    free(mk);
    aq->making = NULL;
}

zkl__step_result zkl__step_create(zkl__acq *aq)
{
    zkl_status st;
    if (!aq->making && !(aq->making = calloc(1, sizeof *aq->making)))
        return zkl__acq_fail(aq, zkl__fail(ZKL_ENOMEM, "out of memory"));
    if (!aq->making->prefix[0] && (st = new_prefix(aq)) != ZKL_OK)
        return zkl__acq_fail(aq, st);
    if (zkl__has(aq->flags, ZKL__AF_UNCERTAIN)) {
        aq->step = step_recover;
        return ZKL__STEP_AGAIN;
    }
    free(aq->making->want);
    if (!(aq->making->want = make_want(aq)))
        return zkl__acq_fail(aq, zkl__fail(ZKL_ENOMEM, "out of memory"));
    send_create(aq);
    aq->step = step_created;
    return ZKL__STEP_AGAIN;
}

static zkl__step_result after_create(zkl__acq *aq, int rc)
{
    switch (zkl__rc_kind_of(rc)) {
    case ZKL__RC_OK:
        zkl__making_free(aq); /* a pending wait keeps only what it needs */
        aq->step = aq->a.known_granted ? zkl__step_grant : zkl__step_wait;
        return ZKL__STEP_AGAIN;
    case ZKL__RC_RETRY:
        aq->flags |= ZKL__AF_UNCERTAIN;
        return zkl__acq_backoff(aq, zkl__step_create, "creating the lock node under");
    case ZKL__RC_NOMEM: /* no memory for the reply's results: the node may well exist */
        aq->flags |= ZKL__AF_UNCERTAIN;
        return zkl__acq_fail(
            aq, zkl__fail(ZKL_ENOMEM, "out of memory creating the lock node under %s", aq->a.path));
    case ZKL__RC_SESSION: aq->flags |= ZKL__AF_UNCERTAIN; return zkl__acq_restart(aq);
    default:
        if (rc == ZNONODE)
            return make_parents(aq);
        return zkl__acq_fail(aq, zkl__from_zk(rc, "create", aq->making->want));
    }
}
