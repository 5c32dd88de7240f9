/*
 * client.c - zkl_client: the ZooKeeper handle, Curator's connection states,
 * session replacement after expiry, and the worker thread that runs user
 * state callbacks and background deletes.
 *
 * Why a worker thread: libzookeeper_mt runs watchers and completions on one
 * thread; a blocking call there would stall every reply (Curator's
 * CURATOR-495). The watcher below only records the event and signals; the
 * worker does everything that may block.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/client.h"
#include "base/connstr.h"
#include "services/lease.h"
#include "base/log.h"
#include "base/path.h"
#include "base/status.h"
#include "base/tsan.h"
#include "base/util.h"
#include "requests/calls.h"

const char *zkl_conn_state_name(zkl_conn_state st)
{
    switch (st) {
    case ZKL_STATE_CONNECTED: return "CONNECTED";
    case ZKL_STATE_SUSPENDED: return "SUSPENDED";
    case ZKL_STATE_RECONNECTED: return "RECONNECTED";
    case ZKL_STATE_LOST: return "LOST";
    case ZKL_STATE_LEASE_EXPIRED: return "LEASE_EXPIRED";
    }
    return "UNKNOWN";
}

void zkl_client_options_init(zkl_client_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->session_timeout_ms = 10000;
    o->connect_timeout_ms = 15000;
    o->retry_base_ms = 50;
    o->retry_max_ms = 1000;
    o->retry_max = 10;
}

/* Caller holds c->mu. */
static void push_event(zkl_client *c, zkl__session *s, zkl_conn_state st)
{
    c->state = st;
    if (c->evq_len == ZKL_EVQ_MAX) { /* callback far behind: keep the newest */
        c->evq_head = (c->evq_head + 1) % ZKL_EVQ_MAX;
        c->evq_len--;
    }
    c->evq[(c->evq_head + c->evq_len) % ZKL_EVQ_MAX].state = st;
    c->evq[(c->evq_head + c->evq_len) % ZKL_EVQ_MAX].epoch = s->epoch;
    c->evq_len++;
    if (st == ZKL_STATE_RECONNECTED || st == ZKL_STATE_CONNECTED)
        c->revs_dirty = true; /* revocation watches are armed again */
}

/* Runs on the ZooKeeper completion thread: record and signal only. */
static void session_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zkl__session *s = ctx;
    zkl_client *c;
    (void)path;
    ZKL_RECEIVED(s);
    c = s->c;
    if (type != ZOO_SESSION_EVENT)
        return;
    if (state != ZOO_CONNECTED_STATE && atomic_load(&c->faults.session_event_delay_ms) > 0)
        zkl__sleep_ms(atomic_load(&c->faults.session_event_delay_ms));
    pthread_mutex_lock(&c->mu);
    if ((s == c->sess || s == c->pending) && !s->expired) {
        if (state == ZOO_CONNECTED_STATE) {
            const clientid_t *cid = zoo_client_id(zh);
            s->id = cid ? cid->client_id : 0;
            c->granted_timeout = zoo_recv_timeout(zh);
            if (!c->connected) {
                c->connected = true;
                push_event(c, s, c->ever_connected ? ZKL_STATE_RECONNECTED : ZKL_STATE_CONNECTED);
                c->ever_connected = true;
            }
        } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
            s->expired = true;
            c->connected = false;
            if (c->ever_connected)
                push_event(c, s, ZKL_STATE_LOST);
        } else if (c->connected) { /* CONNECTING / ASSOCIATING: the link dropped */
            c->connected = false;
            c->suspended_at = zkl__now_ms();
            push_event(c, s, ZKL_STATE_SUSPENDED);
        }
    }
    c->state_gen++;
    pthread_cond_broadcast(&c->cv);
    pthread_cond_signal(&c->wcv);
    pthread_mutex_unlock(&c->mu);
}

static void auth_done(int rc, const void *data)
{
    (void)data;
    if (rc != ZOK)
        zkl__log(ZKL_LOG_ERROR, "digest authentication failed: %s", zerror(rc));
}

/*
 * Open a new session handle and make it the client's current one. Its first
 * events may arrive before zookeeper_init2 returns, so it is "pending" (its
 * events count) from before the call. Called without c->mu.
 */
static zkl__session *session_new(zkl_client *c, uint64_t epoch)
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
    zkl__log_init();
    pthread_mutex_lock(&c->mu);
    c->pending = s;
    c->sessions++;
    pthread_mutex_unlock(&c->mu);
    ZKL_HANDOFF(s);
    zh = zookeeper_init2(c->connect, session_watcher, c->opts.session_timeout_ms, NULL, s, 0,
                         zkl__zk_log_trampoline);
    e = errno;
    pthread_mutex_lock(&c->mu);
    c->pending = NULL;
    s->zh = zh;
    if (zh) {
        c->sess = s;
        zkl__lease_reset_locked(c); /* the new session has proved nothing yet */
    }
    pthread_mutex_unlock(&c->mu);
    if (!zh) {
        free(s);
        errno = e; /* what zkl_client_open reports */
        return NULL;
    }
    /* By default the C client resolves the connect string again every time
     * it polls its socket (getaddrinfo and a netlink dump, per request and
     * per event): most of its CPU under load. Resolve on (re)connects only,
     * as the Java client does. */
    zoo_set_servers_resolution_delay(zh, -1);
    if (c->auth_digest)
        zoo_add_auth(zh, "digest", c->auth_digest, (int)strlen(c->auth_digest), auth_done, NULL);
    return s;
}

/* Close a session nobody uses any more. Never on the completion thread. */
static void session_destroy(zkl__session *s)
{
    zkl_client *c = s->c;
    zkl__watch *w, *next;
    zookeeper_close(s->zh);
    pthread_mutex_lock(&c->mu);
    zkl__async_deletes_abandon(s);
    zkl__revs_session_gone(c, s);
    for (w = s->watches; w; w = next) { /* ZooKeeper will not call these again */
        next = w->next;
        free(w);
    }
    s->watches = NULL;
    pthread_mutex_unlock(&c->mu);
    free(s);
}

zkl_status zkl__session_get(zkl_client *c, int64_t deadline, zkl__session **out)
{
    pthread_mutex_lock(&c->mu);
    for (;;) {
        if (c->closing) {
            pthread_mutex_unlock(&c->mu);
            return zkl__fail(ZKL_ECLOSED, "client is closing");
        }
        if (c->canceled) {
            pthread_mutex_unlock(&c->mu);
            return zkl__fail(ZKL_ECANCELED, "canceled");
        }
        if (!c->sess->expired)
            break;
        /* Lost: the worker is opening the next session. */
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT) {
            pthread_mutex_unlock(&c->mu);
            return zkl__fail(ZKL_ETIMEDOUT, "no live session before the deadline");
        }
    }
    c->sess->refs++;
    *out = c->sess;
    pthread_mutex_unlock(&c->mu);
    return ZKL_OK;
}

void zkl__session_put(zkl__session *s)
{
    zkl_client *c = s->c;
    int last;
    pthread_mutex_lock(&c->mu);
    last = --s->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (last)
        session_destroy(s);
}

bool zkl__epoch_alive(zkl_client *c, uint64_t epoch)
{
    bool alive;
    pthread_mutex_lock(&c->mu);
    alive = c->sess->epoch == epoch && !c->sess->expired;
    pthread_mutex_unlock(&c->mu);
    return alive;
}

const char *zkl__conn_note(zkl_client *c)
{
    bool connected;
    pthread_mutex_lock(&c->mu);
    connected = c->connected;
    pthread_mutex_unlock(&c->mu);
    return connected ? "" : " (not connected to ZooKeeper)";
}

uint64_t zkl__state_gen(zkl_client *c)
{
    uint64_t g;
    pthread_mutex_lock(&c->mu);
    g = c->state_gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

void zkl__await_session_news(zkl_client *c, uint64_t epoch, int64_t until)
{
    uint64_t gen;
    pthread_mutex_lock(&c->mu);
    gen = c->state_gen;
    while (c->sess->epoch == epoch && !c->sess->expired && c->state_gen == gen && !c->closing &&
           !c->canceled)
        if (zkl__cond_wait_until(&c->cv, &c->mu, until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&c->mu);
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

bool zkl__backoff(zkl_client *c, int *attempt, int64_t deadline)
{
    int64_t delay, until;
    uint64_t gen;
    if (*attempt >= c->opts.retry_max)
        return false;
    delay = (int64_t)c->opts.retry_base_ms << (*attempt < 20 ? *attempt : 20);
    if (delay > c->opts.retry_max_ms)
        delay = c->opts.retry_max_ms;
    (*attempt)++;
    until = zkl__now_ms() + delay;
    if (until > deadline)
        until = deadline;
    pthread_mutex_lock(&c->mu);
    gen = c->state_gen;
    while (!c->closing && !c->canceled && c->state_gen == gen) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, until) == ETIMEDOUT)
            break;
    }
    gen = c->canceled;
    pthread_mutex_unlock(&c->mu);
    return !gen && zkl__now_ms() < deadline;
}

/* ---- watch tokens ---- */

zkl__watch *zkl__watch_new(zkl__session *s)
{
    zkl__watch *w = calloc(1, sizeof *w);
    zkl_client *c = s->c;
    if (!w)
        return NULL;
    w->c = c;
    w->s = s;
    w->refs = 2;
    pthread_mutex_lock(&c->mu);
    w->next = s->watches;
    if (s->watches)
        s->watches->prev = w;
    s->watches = w;
    pthread_mutex_unlock(&c->mu);
    ZKL_HANDOFF(w);
    return w;
}

/* Caller holds c->mu. */
static void watch_unref_locked(zkl__watch *w)
{
    if (--w->refs > 0)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        w->s->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    free(w);
}

void zkl__watch_drop(zkl__watch *w)
{
    zkl_client *c = w->c;
    pthread_mutex_lock(&c->mu);
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

void zkl__watch_unregistered(zkl__watch *w)
{
    zkl__watch_drop(w);
}

void zkl__watch_fn(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    zkl__watch *w = ctx;
    zkl_client *c;
    ZKL_RECEIVED(w);
    c = w->c;
    (void)zh;
    (void)state;
    (void)path;
    /* Session events reach every watcher but leave it registered; the
     * session watcher already bumped state_gen for those. */
    if (type == ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&c->mu);
    c->watch_events++;
    w->fired = true;
    w->deleted = type == ZOO_DELETED_EVENT;
    pthread_cond_broadcast(&c->cv);
    watch_unref_locked(w);
    pthread_mutex_unlock(&c->mu);
}

/* Under c->mu. */
static bool either_fired(const zkl__watch *w1, const zkl__watch *w2)
{
    return w1->fired || (w2 && w2->fired);
}

zkl_status zkl__watch_wait(zkl__watch *w1, zkl__watch *w2, uint64_t gen, int64_t deadline)
{
    zkl_client *c = w1->c;
    zkl_status st = ZKL_OK;
    pthread_mutex_lock(&c->mu);
    while (!either_fired(w1, w2) && c->state_gen == gen && !c->closing && !c->canceled) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT) {
            if (!either_fired(w1, w2))
                st = ZKL_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

bool zkl__watch_fired(zkl__watch *w, uint64_t gen, bool *deleted_only)
{
    zkl_client *c = w->c;
    bool fired;
    pthread_mutex_lock(&c->mu);
    fired = w->fired;
    *deleted_only = fired && w->deleted && c->state_gen == gen && !c->sess->expired &&
                    !c->canceled && w->s == c->sess;
    pthread_mutex_unlock(&c->mu);
    return fired;
}

/* ---- background deletes ---- */

void zkl__bg_delete_locked(zkl_client *c, const char *path, const char *prefix)
{
    zkl__bgdel *d = calloc(1, sizeof *d);
    if (d) {
        d->path = strdup(path);
        d->prefix = prefix ? strdup(prefix) : NULL;
    }
    if (!d || !d->path || (prefix && !d->prefix)) {
        /* Cannot queue: the node still goes with the session. */
        zkl__log(ZKL_LOG_ERROR, "out of memory queueing the delete of %s", path);
        if (d) {
            free(d->path);
            free(d->prefix);
            free(d);
        }
        return;
    }
    c->bg_deletes++;
    if (c->bg_tail)
        c->bg_tail->next = d;
    else
        c->bg_head = d;
    c->bg_tail = d;
    pthread_cond_signal(&c->wcv);
}

void zkl__bg_delete(zkl_client *c, const char *path, const char *prefix)
{
    pthread_mutex_lock(&c->mu);
    zkl__bg_delete_locked(c, path, prefix);
    pthread_mutex_unlock(&c->mu);
}

/* One try at a queued delete; ZOK when it is done for good. */
static int bg_try(zkl__session *s, const zkl__bgdel *d)
{
    int rc;
    if (!d->prefix) {
        rc = zkl__zk_delete(s, d->path);
        return rc == ZNONODE ? ZOK : rc;
    } else {
        zkl__names kids = {0};
        size_t i;
        rc = zkl__zk_children(s, d->path, &kids);
        if (rc == ZNONODE)
            return ZOK;
        if (rc != ZOK)
            return rc;
        for (i = 0; i < kids.n && rc == ZOK; i++) {
            if (strncmp(kids.v[i], d->prefix, strlen(d->prefix)) == 0) {
                char *p = zkl__path_join(d->path, kids.v[i]);
                rc = p ? zkl__zk_delete(s, p) : ZSYSTEMERROR;
                if (rc == ZNONODE)
                    rc = ZOK;
                free(p);
            }
        }
        zkl__names_free(&kids);
        return rc;
    }
}

static void bg_free(zkl__bgdel *d)
{
    free(d->path);
    free(d->prefix);
    free(d);
}

/* Caller holds c->mu; releases it while calling. Returns true if work was done. */
static bool worker_bg_step(zkl_client *c, int *failures)
{
    zkl__bgdel *d = c->bg_head;
    zkl__session *s = c->sess;
    bool fault;
    int rc;
    if (!d || !c->connected || s->expired)
        return false;
    fault = c->faults.bg_delete_lost > 0;
    if (fault)
        c->faults.bg_delete_lost--;
    c->bg_head = d->next;
    if (!c->bg_head)
        c->bg_tail = NULL;
    d->next = NULL;
    c->bg_busy = 1;
    s->refs++;
    pthread_mutex_unlock(&c->mu);
    rc = fault ? ZCONNECTIONLOSS : bg_try(s, d);
    zkl__session_put(s);
    pthread_mutex_lock(&c->mu);
    c->bg_busy = 0;
    if (rc == ZOK || !(zkl__zk_retryable(rc) || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE)) {
        if (rc != ZOK)
            zkl__log(ZKL_LOG_ERROR, "giving up deleting %s: %s", d->path, zerror(rc));
        bg_free(d);
        *failures = 0;
    } else { /* back to the front; retried after a pause */
        d->next = c->bg_head;
        c->bg_head = d;
        if (!c->bg_tail)
            c->bg_tail = d;
        (*failures)++;
    }
    pthread_cond_broadcast(&c->cv);
    return rc == ZOK;
}

static void dispatch_listeners(zkl_client *c, zkl__event ev)
{
    int i, j;
    pthread_mutex_lock(&c->listen_mu);
    for (i = 0; i < c->n_listeners; i++) {
        zkl__listener l = c->listeners[i];
        if (!l.removed)
            l.fn(ev.state, ev.epoch, l.ctx);
    }
    for (i = j = 0; i < c->n_listeners; i++) /* drop those removed meanwhile */
        if (!c->listeners[i].removed)
            c->listeners[j++] = c->listeners[i];
    c->n_listeners = j;
    pthread_mutex_unlock(&c->listen_mu);
}

int zkl__listener_add(zkl_client *c, zkl__listener_fn fn, void *ctx)
{
    int id = 0;
    pthread_mutex_lock(&c->listen_mu);
    if (c->n_listeners == c->cap_listeners) {
        int cap = c->cap_listeners ? c->cap_listeners * 2 : 8;
        zkl__listener *v = realloc(c->listeners, (size_t)cap * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&c->listen_mu);
            return 0;
        }
        c->listeners = v;
        c->cap_listeners = cap;
    }
    id = ++c->next_listener_id;
    c->listeners[c->n_listeners].fn = fn;
    c->listeners[c->n_listeners].ctx = ctx;
    c->listeners[c->n_listeners].id = id;
    c->listeners[c->n_listeners].removed = false;
    c->n_listeners++;
    pthread_mutex_unlock(&c->listen_mu);
    return id;
}

void zkl__listener_remove(zkl_client *c, int id)
{
    int i;
    pthread_mutex_lock(&c->listen_mu); /* recursive: fine from inside a listener */
    for (i = 0; i < c->n_listeners; i++)
        if (c->listeners[i].id == id)
            c->listeners[i].removed = true;
    pthread_mutex_unlock(&c->listen_mu);
}

static void *worker_main(void *arg)
{
    zkl_client *c = arg;
    int bg_failures = 0;
    int64_t bg_retry_at = 0;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        int64_t now = zkl__now_ms(), wake = now + 1000, wake_us = INT64_MAX;
        if (c->evq_len > 0) {
            zkl__event ev = c->evq[c->evq_head];
            c->evq_head = (c->evq_head + 1) % ZKL_EVQ_MAX;
            c->evq_len--;
            pthread_mutex_unlock(&c->mu);
            if (c->opts.on_state)
                c->opts.on_state(c, ev.state, c->opts.state_userdata);
            dispatch_listeners(c, ev);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        if (c->revs_dirty) {
            zkl__revs_work(c);
            continue;
        }
        if (zkl__lease_lapsed_locked(c)) {
            /* Strictly before the server could expire the session; is_held
             * already reads false. End the session: its nodes go as soon as
             * the server hears of it, and a hold whose lease ran out is never
             * silently given back. */
            zkl__log(ZKL_LOG_WARN, "the lease of this client's holds ran out: ending the session");
            push_event(c, c->sess, ZKL_STATE_LEASE_EXPIRED);
            c->sess->expired = true;
            c->connected = false;
            push_event(c, c->sess, ZKL_STATE_LOST);
            c->state_gen++;
            pthread_cond_broadcast(&c->cv);
            continue;
        }
        if (zkl__lease_renew_work(c, &wake))
            continue;
        if (c->revs_retry_at > 0) { /* a revocation watch that could not be sent */
            if (now >= c->revs_retry_at) {
                c->revs_retry_at = 0;
                c->revs_dirty = true;
                continue;
            }
            if (c->revs_retry_at < wake)
                wake = c->revs_retry_at;
        }
        if (c->deferred) { /* held-back deletes whose moment is up */
            const zkl__deferred *d;
            int64_t now_us = zkl__now_us();
            for (d = c->deferred; d; d = d->next)
                if (d->due_us < wake_us)
                    wake_us = d->due_us;
            if (wake_us <= now_us) {
                pthread_mutex_unlock(&c->mu);
                zkl__flush_deferred(c, true);
                pthread_mutex_lock(&c->mu);
                continue;
            }
        }
        /* A session that never connected has nothing to lose: the ZooKeeper
         * client keeps trying, and it is fresh when it gets through. */
        if (!c->sess->expired && !c->connected && c->sess->id != 0) {
            /* Curator's rule: suspended for a whole session timeout means lost. */
            int64_t limit = c->suspended_at + (c->granted_timeout > 0 ? c->granted_timeout
                                                                      : c->opts.session_timeout_ms);
            if (now >= limit) {
                zkl__log(ZKL_LOG_WARN, "suspended for a session timeout: session lost");
                c->sess->expired = true;
                push_event(c, c->sess, ZKL_STATE_LOST);
                c->state_gen++;
                pthread_cond_broadcast(&c->cv);
                continue;
            }
            if (limit < wake)
                wake = limit;
        }
        if (c->sess->expired) {
            zkl__session *old = c->sess, *s;
            uint64_t epoch = ++c->next_epoch;
            c->connected = false;
            pthread_mutex_unlock(&c->mu);
            s = session_new(c, epoch); /* installs itself as c->sess */
            pthread_mutex_lock(&c->mu);
            if (!s) {
                zkl__log(ZKL_LOG_ERROR, "could not open a new session; retrying");
                zkl__cond_wait_until(&c->wcv, &c->mu, zkl__now_ms() + 500);
                continue;
            }
            old->retired = true;
            c->state_gen++;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
            zkl__session_put(old);
            pthread_mutex_lock(&c->mu);
            continue;
        }
        if (c->bg_head && c->connected) {
            if (now >= bg_retry_at) {
                worker_bg_step(c, &bg_failures);
                if (bg_failures > 0)
                    bg_retry_at = zkl__now_ms() + zkl__retry_delay_ms(bg_failures, 5);
                continue;
            }
            if (bg_retry_at < wake)
                wake = bg_retry_at;
        }
        /* its own condition: watch events and call ends do not wake it */
        zkl__cond_wait_until_us(&c->wcv, &c->mu, wake_us < wake * 1000 ? wake_us : wake * 1000);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void acl_free(struct ACL_vector *v)
{
    int i;
    for (i = 0; i < v->count; i++) {
        free(v->data[i].id.scheme);
        free(v->data[i].id.id);
    }
    free(v->data);
    v->data = NULL;
    v->count = 0;
}

static zkl_status acl_copy(struct ACL_vector *to, const zkl_acl *from, size_t n)
{
    size_t i;
    memset(to, 0, sizeof *to);
    if (n == 0)
        return ZKL_OK;
    if (!from || n > 1000)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: acl is NULL or too long");
    for (i = 0; i < n; i++)
        if (!from[i].scheme || !from[i].id || from[i].perms <= 0 || from[i].perms > ZKL_PERM_ALL)
            return zkl__fail(ZKL_EINVAL,
                             "zkl_client_open: acl entry %zu needs a scheme, an id "
                             "and perms of 1..ZKL_PERM_ALL",
                             i);
    to->data = calloc(n, sizeof *to->data);
    if (!to->data)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        to->data[i].perms = from[i].perms;
        to->data[i].id.scheme = strdup(from[i].scheme);
        to->data[i].id.id = strdup(from[i].id);
        to->count = (int32_t)(i + 1);
        if (!to->data[i].id.scheme || !to->data[i].id.id) {
            acl_free(to);
            return zkl__fail(ZKL_ENOMEM, "out of memory");
        }
    }
    return ZKL_OK;
}

static void client_free(zkl_client *c)
{
    zkl__bgdel *d, *n;
    acl_free(&c->acl);
    for (d = c->bg_head; d; d = n) {
        n = d->next;
        bg_free(d);
    }
    zkl__revs_free_all(c);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_cond_destroy(&c->wcv);
    pthread_mutex_destroy(&c->listen_mu);
    free(c->listeners);
    free(c->connect);
    free(c->auth_digest);
    free(c->node_data);
    free(c);
}

zkl_status zkl_client_open(const char *connect, const zkl_client_options *opts, zkl_client **out)
{
    zkl_client *c;
    zkl_client_options defaults;
    int64_t deadline;
    zkl__session *s;
    int rc;
    zkl_status st;

    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: out is NULL");
    *out = NULL;
    if (!connect || !*connect)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: empty connect string");
    st = zkl__connect_check(connect);
    if (st != ZKL_OK)
        return st;
    if (!opts) {
        zkl_client_options_init(&defaults);
        opts = &defaults;
    }
    if (opts->session_timeout_ms <= 0 || opts->connect_timeout_ms < 0 || opts->retry_base_ms <= 0 ||
        opts->retry_max_ms < opts->retry_base_ms || opts->retry_max < 0)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: option out of range (timeouts and retry "
                                     "settings must be positive; use zkl_client_options_init)");
    if (opts->lease_margin_ms < 0 || opts->ensemble_lag_ms < 0 ||
        (long)opts->lease_margin_ms + opts->ensemble_lag_ms > opts->session_timeout_ms / 4)
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_open: lease_margin_ms %d and ensemble_lag_ms %d do not fit a "
                         "session timeout of %d ms (together at most a quarter of it, so that a "
                         "renewal every third of it keeps the lease)",
                         opts->lease_margin_ms, opts->ensemble_lag_ms, opts->session_timeout_ms);
    if (opts->node_data_len > 0 && !opts->node_data)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: node_data_len without node_data");
    /* A bigger create packet than the server takes (jute.maxbuffer) is not
     * refused but drops the connection: every acquire would only retry. */
    if (opts->node_data_len > ZKL_NODE_DATA_MAX)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: node_data_len %zu is above %d bytes",
                         opts->node_data_len, ZKL_NODE_DATA_MAX);
    if (opts->auth_digest && !strchr(opts->auth_digest, ':'))
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: auth_digest must be \"user:password\"");

    c = calloc(1, sizeof *c);
    if (!c)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    c->opts = *opts;
    c->connect = strdup(connect);
    c->auth_digest = opts->auth_digest ? strdup(opts->auth_digest) : NULL;
    if (opts->node_data) {
        c->node_data = malloc(opts->node_data_len ? opts->node_data_len : 1);
        if (c->node_data)
            memcpy(c->node_data, opts->node_data, opts->node_data_len);
        c->node_data_len = (int)opts->node_data_len;
    } else {
        char ip[64];
        zkl__local_address(ip, sizeof ip);
        c->node_data = strdup(ip);
        c->node_data_len = (int)strlen(ip);
    }
    c->opts.auth_digest = NULL;
    c->opts.node_data = NULL;
    c->opts.acl = NULL;
    if (!c->connect || (opts->auth_digest && !c->auth_digest) || !c->node_data) {
        free(c->connect);
        free(c->auth_digest);
        free(c->node_data);
        free(c);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&c->mu, NULL);
    zkl__cond_init(&c->cv);
    zkl__cond_init(&c->wcv);
    {
        zkl_status ast = acl_copy(&c->acl, opts->acl, opts->acl_len);
        if (ast != ZKL_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", zkl_errmsg());
            pthread_mutex_destroy(&c->mu);
            pthread_cond_destroy(&c->cv);
            pthread_cond_destroy(&c->wcv);
            free(c->connect);
            free(c->auth_digest);
            free(c->node_data);
            free(c);
            return zkl__fail(ast, "%s", msg);
        }
    }
    {
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&c->listen_mu, &ma);
        pthread_mutexattr_destroy(&ma);
    }

    c->next_epoch = 1;
    s = session_new(c, 1); /* installs itself as c->sess */
    if (!s) {
        /* Past running out of memory, zookeeper_init's errno says little
         * ("Success" for ","): the string is what it could not take. */
        bool nomem = errno == ENOMEM;
        client_free(c);
        if (nomem)
            return zkl__fail(ZKL_ENOMEM, "out of memory opening a session");
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_open: bad connect string '%.200s' (want "
                         "host:port[,host:port...][/chroot])",
                         connect);
    }

    deadline = zkl__now_ms() + opts->connect_timeout_ms;
    pthread_mutex_lock(&c->mu);
    while (!c->connected && !s->expired) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT)
            break;
    }
    rc = c->connected ? ZOK : (s->expired ? ZAUTHFAILED : ZCONNECTIONLOSS);
    c->evq_len = 0; /* CONNECTED is the caller's to see through the return value */
    c->evq_head = 0;
    pthread_mutex_unlock(&c->mu);
    if (rc != ZOK) {
        zookeeper_close(s->zh);
        free(s);
        client_free(c);
        if (rc == ZAUTHFAILED)
            return zkl__fail(ZKL_EAUTH, "server refused the session on '%.200s'", connect);
        return zkl__fail(ZKL_ECONNECT, "no ZooKeeper server at '%.200s' answered within %d ms",
                         connect, opts->connect_timeout_ms);
    }
    if (pthread_create(&c->worker, NULL, worker_main, c) != 0) {
        zookeeper_close(s->zh);
        free(s);
        client_free(c);
        return zkl__fail(ZKL_ESYS, "could not start the client thread");
    }
    *out = c;
    return ZKL_OK;
}

zkl_status zkl_client_close(zkl_client *c)
{
    zkl__session *s;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_close: client is NULL");
    pthread_mutex_lock(&c->mu);
    if (c->handles > 0) {
        int n = c->handles;
        pthread_mutex_unlock(&c->mu);
        return zkl__fail(ZKL_EBUSY, "zkl_client_close: %d lock object(s) still exist", n);
    }
    pthread_mutex_unlock(&c->mu);
    zkl__flush_deferred(c, false);
    pthread_mutex_lock(&c->mu);
    /* Let released nodes' deletes land first: zookeeper_close would drop
     * their replies and leak its own record of them (the server deletes the
     * nodes with the session anyway). Also while reconnecting: the reply, or
     * a connection-loss completion, comes within the bound. */
    {
        int64_t until = zkl__now_ms() + 2000;
        c->drainers++;
        while (c->async_deletes > 0)
            if (zkl__cond_wait_until(&c->cv, &c->mu, until) == ETIMEDOUT)
                break;
        c->drainers--;
    }
    c->closing = true;
    pthread_cond_broadcast(&c->cv);
    pthread_cond_signal(&c->wcv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->worker, NULL);
    s = c->sess;
    s->retired = true;
    zkl__session_put(s); /* the last reference: closes the handle, ephemerals go */
    client_free(c);
    return ZKL_OK;
}

zkl_conn_state zkl_client_state(zkl_client *c)
{
    zkl_conn_state st;
    if (!c)
        return ZKL_STATE_LOST;
    pthread_mutex_lock(&c->mu);
    st = c->state ? c->state : ZKL_STATE_CONNECTED;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int64_t zkl_client_session_id(zkl_client *c)
{
    int64_t id;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    id = c->sess->expired ? 0 : c->sess->id;
    pthread_mutex_unlock(&c->mu);
    return id;
}

int zkl_client_session_timeout(zkl_client *c)
{
    int t;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    t = c->granted_timeout;
    pthread_mutex_unlock(&c->mu);
    return t;
}

zkl_status zkl_client_drain(zkl_client *c, int timeout_ms)
{
    int64_t deadline = zkl__deadline(timeout_ms);
    zkl_status st = ZKL_OK;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_drain: client is NULL");
    zkl__flush_deferred(c, false);
    pthread_mutex_lock(&c->mu);
    c->drainers++;
    while (c->bg_head || c->bg_busy || c->async_deletes) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT) {
            st = zkl__fail(ZKL_ETIMEDOUT, "background deletes still pending");
            break;
        }
    }
    c->drainers--;
    pthread_mutex_unlock(&c->mu);
    return st;
}

zkl_status zkl_client_lease_end(zkl_client *c, int64_t *boot_ms)
{
    uint64_t epoch;
    int64_t end;
    zkl__clear_err();
    if (!c || !boot_ms)
        return zkl__fail(ZKL_EINVAL, "zkl_client_lease_end: NULL argument");
    pthread_mutex_lock(&c->mu);
    epoch = c->sess->epoch;
    pthread_mutex_unlock(&c->mu);
    end = zkl__lease_end(c, epoch);
    if (!end)
        return zkl__fail(ZKL_ELOST, "no lease: nothing renewed it yet, or it ran out");
    *boot_ms = end;
    return ZKL_OK;
}

zkl_status zkl_client_stats_get(zkl_client *c, zkl_client_stats *out)
{
    if (!c || !out)
        return zkl__fail(ZKL_EINVAL, "zkl_client_stats_get: NULL argument");
    pthread_mutex_lock(&c->mu);
    out->requests = atomic_load(&c->requests);
    out->watch_events = c->watch_events;
    out->sessions = c->sessions;
    out->bg_deletes = c->bg_deletes;
    pthread_mutex_unlock(&c->mu);
    return ZKL_OK;
}

zkl_status zkl_client_cancel(zkl_client *c)
{
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_cancel: client is NULL");
    pthread_mutex_lock(&c->mu);
    c->canceled = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return ZKL_OK;
}

bool zkl__canceled(zkl_client *c)
{
    bool v;
    pthread_mutex_lock(&c->mu);
    v = c->canceled;
    pthread_mutex_unlock(&c->mu);
    return v;
}

void zkl_strings_free(char **v, size_t n)
{
    size_t i;
    if (!v)
        return;
    for (i = 0; i < n; i++)
        free(v[i]);
    free(v);
}
