/*
 * transport.c - zklock's private copy of libzookeeper_st, driven by the
 * client's poller thread (transport.h; docs/design/transport.md).
 *
 * DESIGN
 *
 * Threads: any thread calls on a handle under its session's zmu (a leaf:
 * nothing of ours is taken under it), and the call writes its request to
 * the socket itself. The poller polls every live handle (c->pl.live) and its
 * own eventfd, calls zookeeper_process under zmu, and then runs what the
 * callbacks deferred, holding nothing, in the order they ran.
 *
 * A ZooKeeper delivery (the word the other floors use): a completion or
 * watcher of the copy, run once zookeeper_process (or a failed send) has
 * returned, holding nothing of ours, on the poller or on the thread whose
 * send failed; it records and signals (the one call one makes, the next
 * shared listing's, is asynchronous: requests/pending.c).
 *
 * Deferred deliveries: a thread-local list while the thread is inside the
 * library (zk_depth > 0). The poller runs its own; another thread's (a send
 * that found the connection lost, a close answering what was in flight) go
 * to the client's queue for the poller, except a session's close, which
 * runs its own at once (deliveries_run_mine) as libzookeeper_mt's close
 * ran every completion before it returned.
 *
 * Lock order: c->mu, then zmu, then xid_mu; dq_mu alone. A pumped handle's
 * mu, then xid_mu.
 */
#include "session/client.h"
#include "session/transport.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utlist.h>

#include "base/fault.h"
#include "base/log.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "base/wakefd.h"

/* ---- the handle mutex and deliveries ---- */

static __thread int zk_depth;
static __thread zkl__delivery *mine_head, *mine_tail;
static __thread zkl_client *mine_client; /* whose poller gets what is left over */

/* libzookeeper_st's xid counter (get_xid) is a plain static of the
 * process, read and bumped by every request made (zoo_a*, zookeeper_close).
 * Callers of zoo_a* take this inside the handle mutex; the poller's
 * zookeeper_interest and zookeeper_process make no request (pings, auth and
 * watch resets have fixed xids) and do not, nor does a close (zkl__zk_close
 * says why). */
static pthread_mutex_t xid_mu = PTHREAD_MUTEX_INITIALIZER;

/* The handle alone: the poller's. */
static void handle_lock(zkl__session *s)
{
    pthread_mutex_lock(&s->zmu);
    if (zk_depth++ == 0)
        mine_client = s->c;
}

static void handle_unlock(zkl__session *s)
{
    --zk_depth;
    pthread_mutex_unlock(&s->zmu);
}

void zkl__zk_enter(zkl__session *s)
{
    handle_lock(s);
    pthread_mutex_lock(&xid_mu);
    s->entered_state = s->zh ? zoo_state(s->zh) : 0;
}

/*
 * libzookeeper_st sends a request inside the call that makes it
 * (nonblocking_send, every zoo_a*), on the caller's thread; when that send
 * fails (the peer closed: EPIPE, ECONNRESET) it closes the socket and sets
 * NOTCONNECTED, and nothing more: no session event, and what was in flight
 * waits for the next connection (whose first reply out of order then makes
 * it drop that one properly, answering them). Without the event the client
 * believed itself connected through the whole outage, and heard nothing
 * when the link came back (test_faults_proxy: a send that finds the link
 * cut). The call's own thread raises it, as the client would have: the
 * watcher defers it like any other.
 */
static void dropped_silently(zkl__session *s)
{
    bool was_up = s->entered_state == ZOO_CONNECTED_STATE || s->entered_state == ZOO_READONLY_STATE;
    if (was_up && s->zh && zoo_state(s->zh) == ZOO_NOTCONNECTED_STATE && s->watcher) {
        zkl__log(ZKL_LOG_DEBUG, "a send found the link gone: the ZooKeeper client dropped it "
                                "without an event; raising CONNECTING");
        s->watcher(s->zh, ZOO_SESSION_EVENT, ZOO_CONNECTING_STATE, "", s);
    }
}

static void give_to_poller(zkl_client *c)
{
    int late;
    if (!mine_head)
        return;
    if ((late = ZKL_FAULT(c, HANDOVER_MS, NULL)) > 0) /* this thread preempted */
        zkl__sleep_ms(late);
    pthread_mutex_lock(&c->pl.dq_mu);
    if (c->pl.dq_tail)
        c->pl.dq_tail->next = mine_head;
    else
        c->pl.dq_head = mine_head;
    c->pl.dq_tail = mine_tail;
    pthread_mutex_unlock(&c->pl.dq_mu);
    mine_head = mine_tail = NULL;
    if (c->pl.fd >= 0)
        zkl__wakefd_wake(c->pl.fd);
}

void zkl__zk_leave(zkl__session *s)
{
    zkl_client *c = s->c;
    int fd = -1, interest = 0;
    struct timeval tv;
    bool kick = false;
    dropped_silently(s);
    if (s->zh && zookeeper_interest(s->zh, &fd, &interest, &tv) == ZOK)
        kick = fd != s->polled_fd || interest != s->polled_interest;
    --zk_depth;
    pthread_mutex_unlock(&xid_mu);
    pthread_mutex_unlock(&s->zmu);
    if (kick && c->pl.fd >= 0)
        zkl__wakefd_wake(c->pl.fd);
    if (zk_depth == 0 && mine_head && !pthread_equal(pthread_self(), c->pl.thread))
        give_to_poller(c);
}

void zkl__transport_fork_lock(void)
{
    pthread_mutex_lock(&xid_mu);
}

void zkl__transport_fork_unlock(void)
{
    pthread_mutex_unlock(&xid_mu);
}

bool zkl__zk_deferring(void)
{
    return zk_depth > 0;
}

bool zkl__defer(zkl__delivery *d)
{
    if (zk_depth == 0)
        return false;
    d->next = NULL;
    if (mine_tail)
        mine_tail->next = d;
    else
        mine_head = d;
    mine_tail = d;
    return true;
}

/* A delivery zkl__deferred made: its fn runs, then it is freed. (No flag
 * in every delivery for it: a watch token embeds one, and a pending wait
 * keeps two tokens.) */
typedef struct heap_delivery {
    zkl__delivery d; /* first: d is the block */
    void (*fn)(zkl__delivery *d);
} heap_delivery;

static void heap_delivery_run(zkl__delivery *d)
{
    heap_delivery *h = (heap_delivery *)d;
    h->fn(d);
    free(h);
}

bool zkl__deferred(void (*fn)(zkl__delivery *d), void *p, int a, int b, int64_t x, int64_t y,
                   void *q)
{
    heap_delivery *h;
    if (zk_depth == 0 || !(h = calloc(1, sizeof *h)))
        return false;
    h->d = (zkl__delivery){.fn = heap_delivery_run, .p = p, .a = a, .b = b, .x = x, .y = y, .q = q};
    h->fn = fn;
    return zkl__defer(&h->d);
}

static void run_list(zkl__delivery *d)
{
    while (d) {
        zkl__delivery *next = d->next; /* (d is its owner's, which may be gone once fn returns) */
        d->fn(d);
        d = next;
    }
}

static void deliveries_run_mine(void)
{
    zkl__delivery *d = mine_head;
    mine_head = mine_tail = NULL;
    run_list(d);
}

/* (under the handle mutex: every call and callback runs inside it) */
void zkl__zk_owned_set(zkl__session *s, zkl__zk_owned *o, bool owned)
{
    if (owned)
        DL_APPEND2(s->owned, o, prev, next);
    else
        DL_DELETE2(s->owned, o, prev, next);
}

static void owned_free(zkl__session *s)
{
    while (s->owned) { /* watches that never fired: the handle dropped them */
        zkl__zk_owned *o = s->owned;
        DL_DELETE2(s->owned, o, prev, next);
        free(o);
    }
}

void zkl__zk_close(zkl__session *s)
{
    /* Not under the xid mutex: libzookeeper_st's close flushes its socket
     * with a timeout of 3 s, and the mutex held that long stalled every
     * request of the process, another client's open included (test_lifecycle
     * saw a 1 s open take 3 s). Its one get_xid may then race another
     * handle's: xids only pair a connection's replies with its requests, in
     * order, and a handle being closed makes no request after this one. */
    handle_lock(s);
    zookeeper_close(s->zh);
    s->zh = NULL;
    handle_unlock(s);
    if (zk_depth == 0)
        deliveries_run_mine();
    owned_free(s);
}

void zkl__poller_add_locked(zkl_client *c, zkl__session *s)
{
    if (!c->pl.started)
        return; /* (a forked child's: no poller) */
    DL_PREPEND2(c->pl.live, s, lprev, lnext);
    s->listed = true;
    if (c->pl.fd >= 0)
        zkl__wakefd_wake(c->pl.fd);
}

void zkl__poller_remove_locked(zkl_client *c, zkl__session *s)
{
    if (!s->listed)
        return;
    DL_DELETE2(c->pl.live, s, lprev, lnext);
    s->listed = false;
}

/* ---- a handle with a thread of its own (zkl__pumped) ---- */

static void *pump_main(void *arg)
{
    zkl__pumped *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd f[2] = {{.fd = p->wake, .events = POLLIN}};
        struct timeval tv = {0, 0};
        int fd = -1, interest = 0, events = 0, ms;
        pthread_mutex_lock(&p->mu);
        if (zookeeper_interest(p->zh, &fd, &interest, &tv) != ZOK)
            fd = -1, interest = 0;
        pthread_mutex_unlock(&p->mu);
        ms = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
        if (ms > ZKL_PUMP_MAX_SLEEP_MS || fd < 0)
            ms = ZKL_PUMP_MAX_SLEEP_MS;
        f[1].fd = fd;
        f[1].events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                              ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
        (void)poll(f, fd >= 0 ? 2 : 1, ms);
        if (f[0].revents) {
            uint64_t v;
            (void)!read(p->wake, &v, sizeof v);
        }
        if (fd >= 0 && (f[1].revents & (POLLIN | POLLHUP | POLLERR)))
            events |= ZOOKEEPER_READ;
        if (fd >= 0 && (f[1].revents & POLLOUT))
            events |= ZOOKEEPER_WRITE;
        pthread_mutex_lock(&p->mu);
        zookeeper_process(p->zh, events);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

static zkl__pumped *pumped_drive(zhandle_t *zh)
{
    zkl__pumped *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->zh = zh;
    p->wake = zkl__wakefd_new();
    if (p->wake < 0) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    if (pthread_create(&p->thread, NULL, pump_main, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        zkl__wakefd_close(p->wake);
        free(p);
        errno = EAGAIN;
        return NULL;
    }
    return p;
}

zkl__pumped *zkl__pumped_open(const char *hosts, watcher_fn fn, int recv_timeout_ms, void *ctx)
{
    zhandle_t *zh =
        zookeeper_init2(hosts, fn, recv_timeout_ms, NULL, ctx, 0, zkl__zk_log_trampoline);
    zkl__pumped *p = zh ? pumped_drive(zh) : NULL;
    if (zh && !p) {
        zookeeper_close(zh); /* (not under the xid mutex: zkl__zk_close) */
    }
    return p;
}

void zkl__pumped_enter(zkl__pumped *p)
{
    pthread_mutex_lock(&p->mu);
    pthread_mutex_lock(&xid_mu);
}

void zkl__pumped_leave(zkl__pumped *p)
{
    pthread_mutex_unlock(&xid_mu);
    pthread_mutex_unlock(&p->mu);
    zkl__wakefd_wake(p->wake); /* what the call queued is sent, or polled for */
}

void zkl__pumped_close(zkl__pumped *p)
{
    atomic_store(&p->stop, true);
    zkl__wakefd_wake(p->wake);
    pthread_join(p->thread, NULL);
    zookeeper_close(p->zh); /* (not under the xid mutex: zkl__zk_close) */
    pthread_mutex_destroy(&p->mu);
    zkl__wakefd_close(p->wake);
    free(p);
}

/* ---- the poller ---- */

static void *poller_main(void *arg)
{
    zkl_client *c = arg;
    for (;;) {
        zkl__session *ss[ZKL_POLL_HANDLES_MAX];
        struct pollfd p[ZKL_POLL_HANDLES_MAX + 1];
        int ev[ZKL_POLL_HANDLES_MAX];
        int n = 0, i, stall, timeout = ZKL_POLLER_MAX_SLEEP_MS;
        zkl__delivery *q;
        pthread_mutex_lock(&c->mu);
        if (c->pl.stop && !c->pl.live) {
            pthread_mutex_unlock(&c->mu);
            break;
        }
        for (zkl__session *s = c->pl.live; s && n < ZKL_POLL_HANDLES_MAX; s = s->lnext) {
            s->refs++;
            ss[n++] = s;
        }
        pthread_mutex_unlock(&c->mu);
        p[0].fd = c->pl.fd;
        p[0].events = POLLIN;
        for (i = 0; i < n; i++) {
            int fd = -1, interest = 0, ms;
            struct timeval tv = {0, 0};
            zkl__session *s = ss[i];
            handle_lock(s);
            if (zookeeper_interest(s->zh, &fd, &interest, &tv) != ZOK)
                fd = -1, interest = 0;
            s->polled_fd = fd;
            s->polled_interest = interest;
            handle_unlock(s); /* (interest runs no callback) */
            ms = (int)(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
            if (fd < 0 && ms > ZKL_POLLER_NO_SOCKET_MS)
                ms = ZKL_POLLER_NO_SOCKET_MS;
            if (ms < timeout)
                timeout = ms;
            p[i + 1].fd = fd;
            p[i + 1].events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                                      ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
            p[i + 1].revents = 0;
        }
        p[0].revents = 0;
        if (poll(p, (nfds_t)n + 1, timeout) < 0 && errno != EINTR)
            zkl__log(ZKL_LOG_ERROR, "the poller's poll: %s", strerror(errno));
        pthread_mutex_lock(&c->pl.round_mu); /* (a fork() waits for the round) */
        if (p[0].revents) {
            uint64_t v;
            (void)!read(c->pl.fd, &v, sizeof v);
        }
        if ((stall = ZKL_FAULT(c, POLLER_STALL_MS, NULL)) > 0) /* a loaded machine */
            zkl__sleep_ms(stall);
        for (i = 0; i < n; i++) {
            short r = p[i + 1].fd >= 0 ? p[i + 1].revents : 0;
            ev[i] = ((r & (POLLIN | POLLHUP | POLLERR)) ? ZOOKEEPER_READ : 0) |
                    ((r & POLLOUT) ? ZOOKEEPER_WRITE : 0);
            handle_lock(ss[i]);
            zookeeper_process(ss[i]->zh, ev[i]);
            handle_unlock(ss[i]);
            if (mine_head && (stall = ZKL_FAULT(c, DELIVER_STALL_MS, NULL)) > 0)
                zkl__sleep_ms(stall); /* (replies in hand: a fork() waits them out) */
            deliveries_run_mine();
        }
        pthread_mutex_lock(&c->pl.dq_mu);
        q = c->pl.dq_head;
        c->pl.dq_head = c->pl.dq_tail = NULL;
        pthread_mutex_unlock(&c->pl.dq_mu);
        run_list(q);
        for (i = 0; i < n; i++)
            c->pl.put(ss[i]); /* may close it, here: its deliveries run at once */
        pthread_mutex_unlock(&c->pl.round_mu);
    }
    return NULL;
}

int zkl__poller_start(zkl_client *c, void (*put)(zkl__session *s))
{
    c->pl.put = put;
    c->pl.fd = -1;
    pthread_mutex_init(&c->pl.dq_mu, NULL);
    c->pl.fd = zkl__wakefd_new();
    if (c->pl.fd < 0)
        return -1;
    if (pthread_create(&c->pl.thread, NULL, poller_main, c) != 0) {
        zkl__wakefd_close(c->pl.fd);
        c->pl.fd = -1;
        return -1;
    }
    c->pl.started = true;
    return 0;
}

void zkl__poller_stop(zkl_client *c)
{
    if (!c->pl.started)
        return;
    if (c->reg.forked) { /* the poller is the parent's: this process has only the descriptor */
        zkl__wakefd_close(c->pl.fd);
        c->pl.fd = -1;
        c->pl.started = false;
        return;
    }
    pthread_mutex_lock(&c->mu);
    c->pl.stop = true;
    pthread_mutex_unlock(&c->mu);
    zkl__wakefd_wake(c->pl.fd);
    if (!pthread_equal(pthread_self(), c->pl.thread))
        pthread_join(c->pl.thread, NULL);
    else
        pthread_detach(c->pl.thread);
    c->pl.started = false;
    zkl__wakefd_close(c->pl.fd);
    c->pl.fd = -1;
    pthread_mutex_destroy(&c->pl.dq_mu);
}
