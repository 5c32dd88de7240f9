/*
 * wait.c - the wait in line (acq.h), Curator's internalLockLoop: list,
 * find our view of the line (one pass, no sort: core/policy/driver.h), ask the driver, watch the
 * one node it names (or the child list), sleep until that watch fires, and again. Two changes of
 * ours: a waiter may also watch the node ahead of its own (the look-ahead), so that the hand-off to
 * it needs no listing (core/policy/drivers.c, zkl__decide), and a listing taken after our session
 * changed is never trusted (CURATOR-604).
 */
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/path.h"
#include "base/seq.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "core/engine/acq.h"
#include "core/engine/room.h"
#include "requests/rc.h"

/* A test's delay before our node is noted made (base/fault.h). */
static void note_delay(zkl_client *c)
{
    int ms = ZKL_FAULT(c, NOTE_DELAY_MS, NULL);
    if (ms > 0)
        zkl__sleep_ms(ms);
}

/* The driver grants exactly the head of the line (room.h may be used). */
static bool head_holds(const zkl__acq *aq)
{
    return (aq->a.driver->facts & ZKL__D_HEAD_HOLDS) != 0;
}

/*
 * Our own node is watched and its watch has not fired: it was there when
 * anything we have heard of since happened (a session's watch events come
 * in the order of the changes). Without this, only a listing shows it.
 */
static bool self_intact(const zkl__acq *aq)
{
    bool deleted;
    return aq->self.w && !zkl__watch_fired(aq->self.w, aq->gen, &deleted);
}

/*
 * Head-of-line hand-off: prim, watching the node just ahead of ours (name,
 * if given), has fired for its deletion, and that deletion makes us the
 * holder. Either the listing the verdict came from showed it
 * (ZKL__V_HANDOFF), or this process saw that node at the head of the line
 * (room.h): nothing was ahead of it then, nothing can be put ahead since,
 * and nothing is between it and us. Either way our own node must be watched
 * and still there (self_intact): no listing has shown it since that one,
 * and an operator may have deleted it meanwhile, letting the waiter behind
 * us list, watch the node ahead of ours and be granted beside us at its
 * going (issue 56, item 1; Curator's LeaderLatch checks its node before it
 * leads, CURATOR-696). Its watch is sent with prim's, in one batch
 * (arm_nodes), so the proof costs no round trip on the hand-off's path: the
 * session's events come in the order of the changes, so an unfired watch on
 * our node, set before prim's deletion, says our node outlived it.
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
static bool handed_over(const zkl__acq *aq, const char *name)
{
    const zkl__armed *prim = &aq->prim;
    bool deleted, intact;
    if (aq->v.watch_parent || !prim->w || !prim->name || prim->ours ||
        (name && strcmp(prim->name, name) != 0))
        return false;
    if (!zkl__watch_fired(prim->w, aq->gen, &deleted) || !deleted)
        return false;
    intact = self_intact(aq);
    if (!intact)
        return false;
    return (aq->v.flags & ZKL__V_HANDOFF) ||
           (head_holds(aq) && intact && zkl__room_seen(aq, prim->name, prim->owner));
}

/* Whether x still watches name unfired (kept); otherwise it is cleared. */
static bool armed_keep(zkl__armed *x, const char *name, uint64_t gen)
{
    bool deleted;
    if (x->w && x->name && strcmp(x->name, name) == 0 && !zkl__watch_fired(x->w, gen, &deleted))
        return true;
    zkl__armed_clear(x);
    return false;
}

/* Outcome of looking at one listing. */
enum look { LOOK_HOLDS, LOOK_GONE, LOOK_WAIT, LOOK_RELIST };

/* Our view of the line in kids (one pass, nothing sorted), the driver's verdict. Frees nothing. */
static enum look look_at(const zkl__acq *aq, zkl__names *kids, zkl__line *l, zkl__verdict *v)
{
    if (!zkl__view(aq->a.driver, kids->v, kids->n, aq->name, aq->a.ctx, l))
        return LOOK_GONE; /* our node is gone: session lost, or deleted by someone */
    *v = zkl__decide(aq->a.driver, l, aq->a.ctx);
    if (v->holds)
        return LOOK_HOLDS;
    if (!v->watch_parent && (v->watch < 0 || (size_t)v->watch + 1 >= l->m))
        return LOOK_RELIST;
    return LOOK_WAIT;
}

static zkl_status timed_out_waiting(const zkl__acq *aq)
{
    if (aq->prim.name && aq->prim.persistent) /* not a lock node: it is never deleted by one */
        return zkl__fail(ZKL_ETIMEDOUT,
                         "timed out waiting for %s: the node ahead in line, '%s', is not a lock "
                         "node (no session owns it); a child that sorts ahead of the lock nodes "
                         "blocks every acquirer until it is deleted%s",
                         aq->a.path, aq->prim.name, zkl__conn_note(aq->c));
    return zkl__fail(ZKL_ETIMEDOUT, "timed out waiting for %s%s", aq->a.path,
                     zkl__conn_note(aq->c));
}

static zkl__step_result step_round(zkl__acq *aq);

/* A listing that settled it (not LOOK_WAIT); n: its size. */
static zkl__step_result settle(zkl__acq *aq, enum look look, size_t n)
{
    switch (look) {
    case LOOK_RELIST: aq->step = step_round; return ZKL__STEP_AGAIN;
    case LOOK_HOLDS:
        zkl__acq_flag(&aq->flags, ZKL__AF_ALONE, n == 1);
        aq->step = zkl__step_grant;
        return ZKL__STEP_AGAIN;
    default: /* LOOK_GONE; the session looked alive just now */
        zkl__log(ZKL_LOG_WARN,
                 "%s/%s is gone while the session lives (deleted by someone else, or "
                 "the session is ending): queuing again",
                 aq->a.path, aq->name);
        return zkl__acq_restart(aq);
    }
}

/* After the watches (rc: arming's) and the wait (slept): stop, or list again. */
static zkl__step_result judge(zkl__acq *aq, int rc, zkl_status slept)
{
    if (zkl__acq_canceled(aq))
        return zkl__acq_fail(aq,
                             zkl__fail(ZKL_ECANCELED, "waiting for %s was canceled", aq->a.path));
    if (rc == ZOK || rc == ZNONODE) {
        aq->attempt = 0;
        if (slept == ZKL_ETIMEDOUT)
            return zkl__acq_fail(aq, timed_out_waiting(aq));
        aq->step = step_round;
        return ZKL__STEP_AGAIN;
    }
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY)
        return zkl__acq_backoff(aq, step_round, "waiting for");
    return zkl__acq_fail(aq, zkl__rc_status(rc, "watch", aq->a.path));
}

/*
 * The look-ahead's node went, and this process had seen it at the head of
 * the line (room.h): only the node we watch can be ahead of us now, so its
 * deletion hands us the lock as if a listing had shown us next (the verdict
 * gains ZKL__V_HANDOFF; handed_over still wants that deletion, on our live
 * session, of a node not ours). Not for a node of our own session: its
 * going may be our session's end.
 */
static bool ahead_was_head(const zkl__acq *aq)
{
    bool deleted;
    return head_holds(aq) && self_intact(aq) && !(aq->v.flags & ZKL__V_HANDOFF) &&
           !aq->v.watch_parent && aq->ahead.w && aq->ahead.name && !aq->ahead.ours && aq->prim.w &&
           !aq->prim.ours && zkl__watch_fired(aq->ahead.w, aq->gen, &deleted) && deleted &&
           !zkl__watch_fired(aq->prim.w, aq->gen, &deleted) &&
           zkl__room_seen(aq, aq->ahead.name, aq->ahead.owner);
}

/* The connection state changed since the round began, or the wait is to end (c->mu held). */
static bool news_locked(const zkl__acq *aq)
{
    const zkl_client *c = aq->c;
    return c->conn.state_gen != aq->gen || c->closing || c->canceled ||
           zkl__has(aq->mu_flags, ZKL__AM_CANCEL);
}

/* Whether w fired (c->mu held). */
static bool fired_locked(const zkl__armed *x)
{
    return x->w && x->w->fired;
}

static zkl__step_result arm_self(zkl__acq *aq);

/* Asleep on the armed watches until one fires, the state changes or the deadline. */
static zkl__step_result step_sleeping(zkl__acq *aq)
{
    zkl_client *c = aq->c;
    zkl_status slept = ZKL_OK;
    bool woke, deleted, bell;
    pthread_mutex_lock(&c->mu);
    bell = zkl__has(aq->mu_flags, ZKL__AM_BELL) && !aq->self.w;
    aq->mu_flags &= ~ZKL__AM_BELL;
    woke = fired_locked(&aq->prim) || fired_locked(&aq->ahead) || fired_locked(&aq->self) ||
           news_locked(aq);
    pthread_mutex_unlock(&c->mu);
    if (bell && !woke)
        return arm_self(aq); /* then asleep again, on both */
    if (!woke && !zkl__acq_sleep(aq, aq->a.deadline))
        return ZKL__STEP_YIELD;
    if (!woke)
        slept = ZKL_ETIMEDOUT;
    else
        aq->woke_us = zkl__now_us();
    if (handed_over(aq, NULL)) {
        aq->step = zkl__step_grant; /* the hand-off: we hold it without listing again */
        return ZKL__STEP_AGAIN;
    }
    if (slept == ZKL_OK && !zkl__acq_canceled(aq) && ahead_was_head(aq)) {
        zkl__armed_clear(&aq->ahead); /* next in line, with no listing */
        aq->v.flags |= ZKL__V_HANDOFF;
        return ZKL__STEP_AGAIN; /* asleep again, on the node we watch */
    }
    /* unfired tokens are kept for the next round */
    if (aq->v.watch_parent || zkl__watch_fired(aq->prim.w, aq->gen, &deleted))
        zkl__armed_clear(&aq->prim);
    if (aq->ahead.w && zkl__watch_fired(aq->ahead.w, aq->gen, &deleted))
        zkl__armed_clear(&aq->ahead);
    if (aq->self.w && zkl__watch_fired(aq->self.w, aq->gen, &deleted))
        zkl__armed_clear(&aq->self); /* the listing tells whether our node is still there */
    return judge(aq, ZOK, slept);
}

/* The child-list watch is set; its listing is fresh, so it is decided on first. */
static zkl__step_result step_armed_children(zkl__acq *aq)
{
    zkl__line line;
    enum look look;
    int rc;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    rc = aq->rcs[0];
    if (rc == ZOK)
        zkl__req_take_kids(aq->k[0], &aq->kids);
    if (aq->k[0])
        zkl__req_settle(aq->k[0], aq->prim.w, rc);
    zkl__acq_untrack(aq);
    if (rc != ZOK) {
        zkl__armed_clear(&aq->prim);
        return judge(aq, rc, ZKL_OK);
    }
    look = look_at(aq, &aq->kids, &line, &aq->v); /* still armed; the token lives until it fires */
    zkl__names_free(&aq->kids);
    if (look != LOOK_WAIT)
        return settle(aq, look, 0);
    aq->step = step_sleeping;
    return ZKL__STEP_AGAIN;
}

/* Note what blocks the line, if a child ahead is not a lock node (c->mu taken). */
static void note_blocker(zkl__acq *aq)
{
    const char *b = aq->prim.w && aq->prim.persistent ? aq->prim.name : NULL;
    char *copy;
    if (!b && !aq->blocker)
        return;
    if (b && aq->blocker && strcmp(b, aq->blocker) == 0)
        return;
    copy = b ? strdup(b) : NULL; /* (none: no note) */
    pthread_mutex_lock(&aq->c->mu);
    free(aq->blocker);
    aq->blocker = copy;
    pthread_mutex_unlock(&aq->c->mu);
}

/* The data watches are set (or not): the watched node's rc decides, or our own node's absence. */
static zkl__step_result step_armed(zkl__acq *aq)
{
    zkl__armed *slot[3] = {&aq->prim, &aq->ahead, &aq->self};
    int64_t self;
    int i, rc = ZOK;
    if (!zkl__acq_answered(aq))
        return ZKL__STEP_YIELD;
    self = zkl__session_id(aq->s);
    for (i = 0; i < 3; i++) {
        int r = aq->rcs[i];
        zkl__req *k = aq->k[i];
        if (r == ZNOTHING) /* kept from an earlier round */
            continue;
        if (k) /* one never sent was settled when its send failed */
            zkl__req_settle(k, slot[i]->w, r);
        if (r != ZOK)
            zkl__armed_clear(slot[i]);
        else {
            slot[i]->owner = zkl__req_stat(k).ephemeralOwner;
            slot[i]->ours = slot[i]->owner != 0 && slot[i]->owner == self;
            slot[i]->persistent = slot[i]->owner == 0;
        }
        if (i == 0 || (i == 2 && r == ZNONODE && rc == ZOK))
            rc = r; /* our node gone: the listing says so (judge) */
    }
    zkl__acq_untrack(aq);
    note_blocker(aq);
    if (rc == ZOK && aq->prim.w) {
        aq->step = step_sleeping;
        return ZKL__STEP_AGAIN;
    }
    return judge(aq, rc, ZKL_OK);
}

/* The session of this process that made node name (a mutex's: room.h), 0: none noted. */
static int64_t made_here(zkl__acq *aq, const char *name)
{
    return head_holds(aq) ? zkl__room_ask(ZKL__ASK_MADE_BY, aq, name, NULL, 0) : 0;
}

/* Whether another session of this process made node name. */
static bool made_by_another(zkl__acq *aq, const char *name)
{
    int64_t by = made_here(aq, name);
    return by != 0 && by != zkl__session_id(aq->s);
}

/* A getData with a watch on child name of slot x, tracked at index i (kept: nothing sent). */
static void arm_one(zkl__acq *aq, zkl__armed *x, const char *name, int i)
{
    zkl__req *k = NULL;
    char *path;
    int rc = ZSYSTEMERROR;
    if (armed_keep(x, name, aq->gen)) {
        aq->k[i] = NULL;
        aq->rcs[i] = ZNOTHING;
        return;
    }
    if (zkl__armed_new(aq, x, name) && (path = zkl__path_join(aq->a.path, name))) {
        k = zkl__req_wget(aq->s, path, x->w, zkl__acq_notify, aq, &rc);
        free(path);
    } else if (x->w) {
        zkl__watch_unregistered(x->w); /* never sent */
    }
    aq->k[i] = k;
    aq->rcs[i] = rc;
}

/* Slot i (1: ahead, 2: self) has nothing to send this round. */
static void arm_none(zkl__acq *aq, zkl__armed *x, int i)
{
    zkl__armed_clear(x);
    aq->k[i] = NULL;
    aq->rcs[i] = ZNOTHING;
}

/* The bell rang (room.h): our own node is watched now, the node ahead still. */
static zkl__step_result arm_self(zkl__acq *aq)
{
    aq->k[0] = aq->k[1] = NULL;
    aq->rcs[0] = aq->rcs[1] = ZNOTHING;
    arm_one(aq, &aq->self, aq->name, 2);
    aq->nk = 3;
    aq->step = step_armed;
    return ZKL__STEP_AGAIN;
}

/*
 * The watch on our own node, left to its bell. Behind a node of another session of
 * this process, our own node's watch serves only the hand-off from that
 * node, once it held (handed_over); deep in a line it would be one more
 * watch a waiter keeps, on the server and in both clients, for nothing
 * until then. So a waiter right behind such a node (its sequence just
 * below ours) rings a bell instead (room.h): when the lock is granted two
 * places ahead, or one, this process's grant readies us, and we watch our
 * node then, about a hand-off before it is needed. A bell that comes too
 * late, or never, only costs the listing at the hand-off (handed_over
 * wants our node watched). true: left to the bell.
 *
 * Only where waits add up: when the client has other operations live (an
 * event loop's thousand waits, or threads sharing a client). The watch sent
 * later goes alone, a round trip and a few thread wake-ups more than in the
 * batch with the watch on the node ahead (docs/design/scale-log.md: measured),
 * for a watch's few hundred bytes beside a session's 38 KiB.
 */
static bool self_by_bell(zkl__acq *aq, const char *prim)
{
    int32_t seq = zkl__acq_seq(aq, aq->name);
    return seq > 0 && zkl__acq_seq(aq, prim) == seq - 1 && !zkl__acq_alone(aq) &&
           zkl__room_ask(ZKL__ASK_BELL, aq, NULL, NULL, 0);
}

/*
 * Watch the node the driver named and, if it pays, the one before it, in
 * one round trip; children already watched are kept. l: the view the
 * verdict came from, pointers into aq->kids (freed here).
 */
static zkl__step_result arm_nodes(zkl__acq *aq, const zkl__line *l)
{
    const zkl__acquire_args *a = &aq->a;
    const zkl__verdict *v = &aq->v;
    /* Look-ahead: its going usually means ours heads the line, and the
     * listing it prompts (made while that node holds) lets its deletion hand
     * us the lock with no listing on the hand-off's path. */
    /* Behind a node of another session of this process, our own node is
     * watched instead: that node's going, once it held here, hands the lock
     * over (handed_over), provided our node is still there. So too for the
     * look-ahead's node (ahead_was_head). */
    int64_t by = made_here(aq, l->v[v->watch]);
    bool mine = by != 0 && by != zkl__session_id(aq->s);
    bool la = a->lookahead == ZKL__LOOKAHEAD_ON || (a->lookahead == ZKL__LOOKAHEAD_IF_CARRIED &&
                                                    zkl__has(aq->flags, ZKL__AF_CARRIED) && !by);
    const char *aname = la && !(v->flags & (ZKL__V_HANDOFF | ZKL__V_NO_LOOKAHEAD)) && v->watch >= 1
                            ? l->v[v->watch - 1]
                            : NULL;
    arm_one(aq, &aq->prim, l->v[v->watch], 0);
    if (aname)
        arm_one(aq, &aq->ahead, aname, 1);
    else
        arm_none(aq, &aq->ahead, 1);
    if ((v->flags & ZKL__V_HANDOFF) || (aname && made_by_another(aq, aname)) ||
        (mine && (aq->self.w || !self_by_bell(aq, l->v[v->watch]))))
        arm_one(aq, &aq->self, aq->name, 2);
    else
        arm_none(aq, &aq->self, 2);
    aq->nk = 3;
    zkl__names_free(&aq->kids);
    aq->step = step_armed;
    return ZKL__STEP_AGAIN;
}

/* Watch the child list (the lease count). */
static zkl__step_result arm_children(zkl__acq *aq)
{
    zkl__req *k = NULL;
    int rc = ZSYSTEMERROR;
    zkl__names_free(&aq->kids);
    zkl__armed_clear(&aq->prim);
    zkl__armed_clear(&aq->ahead);
    zkl__armed_clear(&aq->self);
    if (zkl__armed_new(aq, &aq->prim, NULL))
        k = zkl__req_children(aq->s, aq->a.path, aq->prim.w, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_armed_children;
    return ZKL__STEP_AGAIN;
}

/* A listing to look at: decide, then watch what the driver named. */
static zkl__step_result step_look(zkl__acq *aq)
{
    zkl__line line;
    enum look look;
    (void)ZKL_FAULT(aq->c, AFTER_LISTING, NULL);
    /* A listing read after our session ended may still show our node (CURATOR-604). */
    if (!zkl__epoch_alive(aq->c, aq->epoch)) {
        zkl__names_free(&aq->kids);
        return zkl__acq_restart(aq);
    }
    look = look_at(aq, &aq->kids, &line, &aq->v);
    if (look != LOOK_WAIT) {
        size_t n = aq->kids.n;
        zkl__names_free(&aq->kids);
        return settle(aq, look, n);
    }
    if (zkl__now_ms() >= aq->a.deadline) {
        zkl__names_free(&aq->kids);
        return zkl__acq_fail(aq, timed_out_waiting(aq));
    }
    if (!aq->v.watch_parent && handed_over(aq, line.v[aq->v.watch])) {
        /* the node we wait for went while we listed, after the listing saw
         * it where its going grants: the hand-off, come early */
        zkl__names_free(&aq->kids);
        aq->step = zkl__step_grant;
        return ZKL__STEP_AGAIN;
    }
    return aq->v.watch_parent ? arm_children(aq) : arm_nodes(aq, &line);
}

/* The listing is answered. */
static zkl__step_result step_listing(zkl__acq *aq)
{
    int rc;
    if (!zkl__acq_listing(aq, &rc))
        return ZKL__STEP_YIELD;
    if (rc == ZNONODE) /* parent gone, so our node too */
        rc = ZOK;
    if (zkl__rc_kind_of(rc) == ZKL__RC_RETRY)
        return zkl__acq_backoff(aq, step_round, "waiting for");
    if (rc != ZOK)
        return zkl__acq_fail(aq, zkl__rc_status(rc, "list", aq->a.path));
    aq->step = step_look;
    return ZKL__STEP_AGAIN;
}

/* Watch the node name, just ahead of ours, as a listing would have shown it (and our own). */
static void arm_behind(zkl__acq *aq, const char *name)
{
    zkl__line l;
    memset(&l, 0, sizeof l);
    l.n = l.m = 2; /* the two names known: that node, then ours */
    l.rank = 1;
    l.v[0] = (char *)name;
    l.v[1] = (char *)aq->name;
    memset(&aq->v, 0, sizeof aq->v);
    aq->v.watch = 0;
    aq->v.flags = ZKL__V_NO_LOOKAHEAD;
    arm_nodes(aq, &l);
}

/*
 * Known predecessor: our create went without the listing (create.c), and a
 * node made in this process by another session has the sequence just below
 * ours. Sequences under a parent are unique and only grow, so nothing sorts
 * between that node and ours, ever: if the server still has it (its watch
 * says so, or else the round lists after all), it is the node just ahead,
 * as a listing would show. Nothing else is known: not whether it heads the
 * line (no ZKL__V_HANDOFF), nor the node before it (no look-ahead). Being
 * of this process, it is watched with our own node (arm_nodes), and its
 * going hands us the lock once it held here (handed_over), as behind any
 * such node. As everywhere (room.h), every child of the path is taken to be
 * a lock node with a server-made sequence.
 */
static bool known_predecessor(zkl__acq *aq)
{
    char name[128];
    if (!zkl__epoch_alive(aq->c, aq->epoch) ||
        !zkl__room_ask(ZKL__ASK_AHEAD, aq, NULL, name, sizeof name))
        return false;
    arm_behind(aq, name);
    return true;
}

/* List the line (the round's listing). */
static zkl__step_result list_now(zkl__acq *aq)
{
    zkl__req *k;
    int rc;
    k = zkl__req_children_shared(aq->s, aq->a.path, zkl__acq_notify, aq, &rc);
    zkl__acq_track(aq, k, rc);
    aq->step = step_listing;
    return ZKL__STEP_AGAIN;
}

/* Asleep until the awaited note, the bound, or news: then known, or listed. */
static zkl__step_result step_await(zkl__acq *aq)
{
    bool rung;
    pthread_mutex_lock(&aq->c->mu);
    rung = zkl__has(aq->mu_flags, ZKL__AM_NOTED);
    aq->mu_flags &= ~ZKL__AM_NOTED;
    pthread_mutex_unlock(&aq->c->mu);
    if (!rung && !zkl__acq_changed(aq) && !zkl__acq_sleep(aq, aq->await_until))
        return ZKL__STEP_YIELD;
    zkl__room_note(ZKL__NOTE_UNAWAITED, aq, NULL);
    if (known_predecessor(aq))
        return ZKL__STEP_AGAIN;
    return list_now(aq);
}

/*
 * The note awaited. Creates of this process complete on many threads (one
 * per session), noted in the order those are scheduled, not in sequence
 * order: when a thousand sessions join at once, most joiners learn their
 * own node before the node just ahead, made here too, is noted, and each
 * listed a line of up to a thousand names (docs/design/scale-log.md, "the join
 * burst"). So while a create of this process under the path is in flight,
 * a joiner whose node s - 1 is not known waits for its note (room.h),
 * bounded by ZKL_JOIN_AWAIT_MS and the deadline. With none in flight it lists at
 * once, so a line of separate processes pays nothing; a joiner behind
 * another process's node, while this process's own creates are in flight,
 * lists when the last of them is noted (a round trip, most often). The
 * bound: in the burst of 1024 sessions on 2 CPUs, notes come up to a few
 * hundred ms late; at 100 ms, 38 to 168 joiners a burst still listed, at
 * 500 none (lockbench contended, 1024 sessions). true: awaiting.
 */
static bool await_note(zkl__acq *aq)
{
    int64_t until = zkl__now_ms() + ZKL_TUNE(aq->c, JOIN_AWAIT_MS, ZKL_JOIN_AWAIT_MS);
    if (!head_holds(aq) || !zkl__room_ask(ZKL__ASK_AWAIT, aq, NULL, NULL, 0))
        return false;
    aq->since_gen = aq->gen; /* zkl__acq_changed: news since the round began */
    aq->await_until = until < aq->a.deadline ? until : aq->a.deadline;
    aq->step = step_await;
    return true;
}

/* One round: a listing (the one the create brought, or a fresh one), a decision, a sleep. */
static zkl__step_result step_round(zkl__acq *aq)
{
    aq->gen = zkl__state_gen(aq->c);
    if (zkl__has(aq->flags, ZKL__AF_HAVE_KIDS)) {
        aq->flags &= ~ZKL__AF_HAVE_KIDS;
        aq->flags &= ~ZKL__AF_UNLISTED;
        aq->step = step_look;
        return ZKL__STEP_AGAIN;
    }
    if (zkl__has(aq->flags, ZKL__AF_UNLISTED)) { /* the first round of a create that went alone */
        aq->flags &= ~ZKL__AF_UNLISTED;
        /* known now; else awaited; else maybe noted between the two looks */
        if (known_predecessor(aq) || await_note(aq) || known_predecessor(aq))
            return ZKL__STEP_AGAIN;
    }
    return list_now(aq);
}

zkl__step_result zkl__step_wait(zkl__acq *aq)
{
    note_delay(aq->c);
    zkl__room_note(ZKL__NOTE_MADE, aq, NULL); /* joiners behind it may go on (room.h) */
    aq->attempt = 0;
    aq->woke_us = zkl__now_us(); /* the first round's start */
    aq->step = step_round;
    return ZKL__STEP_AGAIN;
}
