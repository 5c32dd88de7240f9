/*
 * session.c - ZooKeeper sessions of a client: opening one, Curator's
 * connection states from the session watcher, reference counts, epochs,
 * and the worker's session phase (a long suspension is a loss;
 * a lost session is replaced as a whole); last, the watch tokens its
 * waiters set.
 *
 * Why the watcher only records: libzookeeper_mt runs watchers and completions
 * on one thread; a blocking call there would stall every reply (Curator's
 * CURATOR-495). The worker does everything that may block.
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/log.h"
#include "base/status.h"
#include "base/fault.h"
#include "base/tsan.h"
#include "base/util.h"
#include "base/wakefd.h"
#include "base/tuning.h"
#include "session/client.h"
#include "session/transport.h"

/* A loaded poller (a test's fault): the watcher records a loss this much later. */
static void event_delay_fault(zkl_client *c, int state)
{
    int ms = ZKL_FAULT(c, EVENT_DELAY_MS, NULL);
    if (state != ZOO_CONNECTED_STATE && ms > 0)
        zkl__sleep_ms(ms);
}

/* The session connected (again): id and timeout as the handle has them.
 * Caller holds c->mu. */
static void connected_locked(zkl_client *c, zkl__session *s, int64_t id, int timeout)
{
    s->id = id;
    c->conn.granted_timeout = timeout;
    if (c->conn.connected)
        return;
    c->conn.connected = true;
    c->conn.connects++;
    zkl__event_push_locked(c, s,
                           c->conn.ever_connected ? ZKL_STATE_RECONNECTED : ZKL_STATE_CONNECTED);
    c->conn.ever_connected = true;
}

static void session_event(zkl__session *s, int state, int64_t id, int timeout, unsigned n);

/* A deferred event's y: its number (high half) and the handle's timeout. */
static int64_t event_y(unsigned n, int timeout)
{
    return (int64_t)(((uint64_t)n << 32) | (uint32_t)timeout);
}

static void session_event_later(zkl__delivery *d)
{
    zkl__session *s = d->p;
    int state = d->a;
    int64_t id = d->x;
    int timeout = (int)(uint32_t)((uint64_t)d->y & 0xffffffffu);
    unsigned n = (unsigned)((uint64_t)d->y >> 32);
    if (d->b >= 0)
        atomic_store(&s->event_held[d->b], false); /* the slot is free again (-1: no slot) */
    session_event(s, state, id, timeout, n);
}

/* Inside the ZooKeeper client: the event queued, in a slot of s's if one is
 * free. (One watcher runs at a time: the handle's mutex is held.) */
static bool session_event_defer(zkl__session *s, int state, int64_t id, int timeout, unsigned n)
{
    if (!zkl__zk_deferring())
        return false;
    for (int i = 0; i < ZKL_SESSION_EVENTS_HELD; i++)
        if (!atomic_load(&s->event_held[i])) {
            s->events[i] = (zkl__delivery){.fn = session_event_later,
                                           .p = s,
                                           .a = state,
                                           .b = i,
                                           .x = id,
                                           .y = event_y(n, timeout)};
            atomic_store(&s->event_held[i], true);
            if (zkl__defer(&s->events[i]))
                return true;
            atomic_store(&s->event_held[i], false);
            return false;
        }
    return zkl__deferred(session_event_later, s, state, -1, id, event_y(n, timeout), NULL);
}

/* Runs where the ZooKeeper client runs callbacks: record and signal only
 * (session_event), after the handle is let go where it must be. */
static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zkl__session *s = ctx;
    const clientid_t *cid;
    int64_t id = 0;
    int timeout = 0;
    unsigned n;
    (void)path;
    ZKL_RECEIVED(s);
    if (type != ZOO_SESSION_EVENT)
        return;
    if (state == ZOO_CONNECTED_STATE) {
        cid = zoo_client_id(zh);
        id = cid ? cid->client_id : 0;
        timeout = zoo_recv_timeout(zh);
    }
    n = atomic_fetch_add(&s->events_made, 1) + 1;
    if (!session_event_defer(s, state, id, timeout, n))
        session_event(s, state, id, timeout, n);
}

static void session_event(zkl__session *s, int state, int64_t id, int timeout, unsigned n)
{
    zkl_client *c = s->c;
    event_delay_fault(c, state);
    pthread_mutex_lock(&c->mu);
    if ((int)(n - s->events_applied) <= 0) { /* a later event was applied: this one is stale */
        zkl__log(ZKL_LOG_DEBUG, "session event %u (state %d) came after event %u: dropped", n,
                 state, s->events_applied);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    s->events_applied = n;
    if ((s == c->conn.sess || s == c->conn.pending) && !s->expired) {
        if (state == ZOO_CONNECTED_STATE) {
            connected_locked(c, s, id, timeout);
        } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
            s->expired = true;
            c->conn.connected = false;
            if (c->conn.ever_connected)
                zkl__event_push_locked(c, s, ZKL_STATE_LOST);
        } else if (c->conn.connected) { /* CONNECTING / ASSOCIATING: the link dropped */
            c->conn.connected = false;
            c->conn.suspended_at = zkl__now_ms();
            zkl__event_push_locked(c, s, ZKL_STATE_SUSPENDED);
        }
    }
    c->conn.state_gen++;
    zkl__changed_locked(c);
    zkl__worker_kick_locked(c);
    pthread_mutex_unlock(&c->mu);
}

static void auth_done(int rc, const void *data)
{
    (void)data;
    if (rc != ZOK)
        zkl__log(ZKL_LOG_ERROR, "digest authentication failed: %s", zerror(rc));
}

/* Its first events may arrive before zookeeper_init2 returns, so a new
 * session is "pending" (its events count) from before the call. */
zkl__session *zkl__session_open(zkl_client *c, uint64_t epoch)
{
    zkl__session *s = calloc(1, sizeof *s);
    zhandle_t *zh;
    int e;
    if (!s) {
        errno = ENOMEM;
        return NULL;
    }
    s->c = c;
    s->epoch = epoch;
    s->refs = 1; /* the client's */
    s->polled_fd = -1;
    s->watcher = session_watcher;
    pthread_mutex_init(&s->zmu, NULL);
    zkl__log_init();
    pthread_mutex_lock(&c->mu);
    c->conn.pending = s;
    c->tally.sessions++;
    pthread_mutex_unlock(&c->mu);
    ZKL_PUBLISH(s);
    zh = zookeeper_init2(c->cfg.connect, s->watcher, c->cfg.opts.session_timeout_ms, NULL, s, 0,
                         zkl__zk_log_trampoline);
    e = errno;
    pthread_mutex_lock(&c->mu);
    c->conn.pending = NULL;
    s->zh = zh;
    if (zh) {
        c->conn.sess = s;
        if (c->hooks.installed_locked)
            c->hooks.installed_locked(c); /* e.g. the new session has proved nothing yet */
    }
    pthread_mutex_unlock(&c->mu);
    if (!zh) {
        pthread_mutex_destroy(&s->zmu);
        free(s);
        errno = e; /* what zkl_client_open reports */
        return NULL;
    }
    /* By default the C client resolves the connect string again every time
     * it polls its socket (getaddrinfo and a netlink dump, per request and
     * per event): most of its CPU under load. Resolve on (re)connects only,
     * as the Java client does. */
    zkl__zk_enter(s);
    zoo_set_servers_resolution_delay(zh, -1);
    if (c->cfg.auth_digest)
        zoo_add_auth(zh, "digest", c->cfg.auth_digest, (int)strlen(c->cfg.auth_digest), auth_done,
                     NULL);
    zkl__zk_leave(s);
    pthread_mutex_lock(&c->mu);
    zkl__poller_add_locked(c, s); /* (st: nothing connects before the poller polls it) */
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* Close a session nobody uses any more. Never in a ZooKeeper delivery. */
static void session_destroy(zkl__session *s)
{
    zkl_client *c = s->c;
    if (c->hooks.lists_closing) /* shared listings answered from here on are not renewed */
        c->hooks.lists_closing(s);
    zkl__zk_close(s); /* answers every request in flight: no shared listing is left */
    if (c->hooks.lists_free)
        c->hooks.lists_free(s);
    pthread_mutex_lock(&c->mu);
    if (c->hooks.closed_locked)
        c->hooks.closed_locked(c, s);
    zkl__watches_free_locked(s);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_destroy(&s->zmu);
    free(s);
}

zkl_status zkl__session_get(zkl_client *c, int64_t deadline, zkl__session **out)
{
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (c->closing) {
            pthread_mutex_unlock(&c->mu);
            return zkl__closed_fail(c, NULL);
        }
        if (c->canceled) {
            pthread_mutex_unlock(&c->mu);
            return zkl__fail(ZKL_ECANCELED, "canceled");
        }
        if (!c->conn.sess->expired)
            break;
        if (zkl__on_worker(c)) { /* the worker opens the next one: not while it waits here */
            pthread_mutex_unlock(&c->mu);
            return zkl__fail(ZKL_EDEADLOCK, "the session is lost and only this thread, the "
                                            "client's worker, can open the next");
        }
        /* Lost: the worker is opening the next session. */
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&c->mu);
            return zkl__fail(ZKL_ETIMEDOUT, "no live session before the deadline");
        }
    }
    c->conn.sess->refs++;
    *out = c->conn.sess;
    pthread_mutex_unlock(&c->mu);
    return ZKL_OK;
}

void zkl__session_put(zkl__session *s)
{
    zkl_client *c = s->c;
    int last;
    pthread_mutex_lock(&c->mu);
    last = --s->refs == 0;
    if (last)
        zkl__poller_remove_locked(c, s); /* (it holds a reference while it polls) */
    pthread_mutex_unlock(&c->mu);
    if (last)
        session_destroy(s);
}

zkl_status zkl__session_try_get_locked(zkl_client *c, zkl__session **out)
{
    if (c->closing)
        return zkl__closed_fail(c, NULL);
    if (c->canceled)
        return zkl__fail(ZKL_ECANCELED, "canceled");
    if (c->conn.sess->expired)
        return ZKL__RESTART;
    c->conn.sess->refs++;
    *out = c->conn.sess;
    return ZKL_OK;
}

void zkl__changed_locked(zkl_client *c)
{
    pthread_cond_broadcast(&c->cv);
    if (c->hooks.changed_locked)
        c->hooks.changed_locked(c);
}

clientid_t zkl__session_client_id(zkl_client *c)
{
    clientid_t cid = {0};
    pthread_mutex_lock(&c->mu);
    zkl__session *s = c->conn.sess;
    if (s && s->zh)
        cid = *ZKL_ZK(s, zoo_client_id(s->zh));
    pthread_mutex_unlock(&c->mu);
    return cid;
}

zkl__session *zkl__session_live_locked(zkl_client *c, uint64_t epoch)
{
    zkl__session *s = c->conn.sess;
    return c->conn.connected && s->epoch == epoch && !s->expired ? s : NULL;
}

void zkl__session_lose_locked(zkl_client *c, zkl_conn_state first)
{
    if (first)
        zkl__event_push_locked(c, c->conn.sess, first);
    c->conn.sess->expired = true;
    c->conn.connected = false;
    zkl__event_push_locked(c, c->conn.sess, ZKL_STATE_LOST);
    c->conn.state_gen++;
    zkl__changed_locked(c);
    zkl__worker_kick_locked(c);
}

/* Open the next session in place of the lost one. Caller holds c->mu. */
static void replace_locked(zkl_client *c)
{
    zkl__session *old = c->conn.sess, *s;
    uint64_t epoch = ++c->conn.next_epoch;
    c->conn.connected = false;
    pthread_mutex_unlock(&c->mu);
    s = zkl__session_open(c, epoch); /* installs itself as c->conn.sess */
    pthread_mutex_lock(&c->mu);
    if (!s) {
        zkl__log(ZKL_LOG_ERROR, "could not open a new session; retrying");
        zkl__cond_wait_until(&c->wk.cv, &c->mu, zkl__now_ms() + ZKL_SESSION_REOPEN_MS);
        return;
    }
    old->retired = true;
    c->conn.state_gen++;
    zkl__changed_locked(c);
    pthread_mutex_unlock(&c->mu);
    zkl__session_put(old);
    pthread_mutex_lock(&c->mu);
}

int64_t zkl__session_turn(zkl_client *c, int64_t now_us)
{
    /* A session that never connected has nothing to lose: the ZooKeeper
     * client keeps trying, and it is fresh when it gets through. */
    if (!c->conn.sess->expired && !c->conn.connected && c->conn.sess->id != 0) {
        /* Curator's rule: suspended for a whole session timeout means lost. */
        int64_t limit =
            c->conn.suspended_at + (c->conn.granted_timeout > 0 ? c->conn.granted_timeout
                                                                : c->cfg.opts.session_timeout_ms);
        if (now_us < limit * 1000)
            return limit * 1000;
        zkl__log(ZKL_LOG_WARN, "suspended for a session timeout: session lost");
        zkl__session_lose_locked(c, 0);
        return 0;
    }
    if (!c->conn.sess->expired)
        return INT64_MAX;
    replace_locked(c);
    return 0;
}

bool zkl__epoch_alive(zkl_client *c, uint64_t epoch)
{
    bool alive;
    pthread_mutex_lock(&c->mu);
    alive = c->conn.sess->epoch == epoch && !c->conn.sess->expired;
    pthread_mutex_unlock(&c->mu);
    return alive;
}

bool zkl__connected(zkl_client *c)
{
    bool connected;
    pthread_mutex_lock(&c->mu);
    connected = c->conn.connected;
    pthread_mutex_unlock(&c->mu);
    return connected;
}

const char *zkl__conn_note(zkl_client *c)
{
    return zkl__connected(c) ? "" : " (not connected to ZooKeeper)";
}

uint64_t zkl__state_gen(zkl_client *c)
{
    uint64_t g;
    pthread_mutex_lock(&c->mu);
    g = c->conn.state_gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

uint64_t zkl__epoch(zkl_client *c)
{
    uint64_t e;
    pthread_mutex_lock(&c->mu);
    e = c->conn.sess->epoch;
    pthread_mutex_unlock(&c->mu);
    return e;
}

bool zkl__canceled(zkl_client *c)
{
    bool v;
    pthread_mutex_lock(&c->mu);
    v = c->canceled;
    pthread_mutex_unlock(&c->mu);
    return v;
}

zkl_status zkl__closed_fail(const zkl_client *c, const char *fn)
{
    const char *sep = fn ? ": " : "";
    if (!fn)
        fn = "";
    if (c->reg.forked)
        return zkl__fail(ZKL_ECLOSED,
                         "%s%sthe client was opened by the parent of this fork()ed process: "
                         "here it holds nothing and can only be closed (open a new client)",
                         fn, sep);
    return zkl__fail(ZKL_ECLOSED, "%s%sclient is closing", fn, sep);
}

void zkl__client_ref(zkl_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->handles++;
    pthread_mutex_unlock(&c->mu);
}

void zkl__client_unref(zkl_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->handles--;
    pthread_mutex_unlock(&c->mu);
}

/* ---- watch tokens ---- */

/*
 * Watch tokens: one per data or child watch a waiter sets, shared
 * by the waiter and the ZooKeeper client (two references), kept on their
 * session's list so that a closed session's tokens are freed with it.
 */
zkl__watch *zkl__watch_new(zkl__session *s)
{
    zkl__watch *w = calloc(1, sizeof *w);
    zkl_client *c = s->c;
    if (!w)
        return NULL;
    w->s = s;
    w->refs = 2;
    pthread_mutex_lock(&c->mu);
    DL_PREPEND(s->watches, w);
    pthread_mutex_unlock(&c->mu);
    ZKL_PUBLISH(w);
    return w;
}

/* Caller holds c->mu. */
static void watch_unref_locked(zkl__watch *w)
{
    if (--w->refs > 0)
        return;
    DL_DELETE(w->s->watches, w);
    free(w);
}

void zkl__watch_notify(zkl__watch *w, void (*fn)(void *arg), void *arg)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    w->notify_locked = fn;
    w->notify_arg = arg;
    pthread_mutex_unlock(&c->mu);
}

void zkl__watch_drop(zkl__watch *w)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    w->notify_locked = NULL; /* its owner is going: a late event tells nobody */
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

void zkl__watch_unregistered(zkl__watch *w)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

void zkl__watches_free_locked(zkl__session *s)
{
    zkl__watch *w, *next;
    DL_FOREACH_SAFE(s->watches, w, next)
    {
        DL_DELETE(s->watches, w); // NOLINT(clang-analyzer-core.NullDereference): utlist's safe loop
        free(w);
    }
}

static void watch_fire(zkl__watch *w, int type);

static void watch_fire_later(zkl__delivery *d)
{
    watch_fire(d->p, d->a);
}

void zkl__watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zkl__watch *w = ctx;
    ZKL_RECEIVED(w);
    (void)zh;
    (void)state;
    (void)path;
    /* Session events reach every watcher but leave it registered; the
     * session watcher already bumped state_gen for those. */
    if (type == ZOO_SESSION_EVENT)
        return;
    w->fire = (zkl__delivery){.fn = watch_fire_later, .p = w, .a = type};
    if (!zkl__defer(&w->fire))
        watch_fire(w, type);
}

static void watch_fire(zkl__watch *w, int type)
{
    zkl_client *c = w->s->c;
    pthread_mutex_lock(&c->mu);
    c->tally.watch_events++;
    w->fired = true;
    w->deleted = type == ZOO_DELETED_EVENT;
    pthread_cond_broadcast(&c->cv);
    if (w->notify_locked)
        w->notify_locked(w->notify_arg);
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

bool zkl__watch_fired(zkl__watch *w, uint64_t gen, bool *deleted_only)
{
    zkl_client *c = w->s->c;
    bool fired;
    pthread_mutex_lock(&c->mu);
    fired = w->fired;
    *deleted_only = fired && w->deleted && c->conn.state_gen == gen && !c->conn.sess->expired &&
                    !c->canceled && w->s == c->conn.sess;
    pthread_mutex_unlock(&c->mu);
    return fired;
}
