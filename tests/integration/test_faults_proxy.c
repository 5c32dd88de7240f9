/*
 * test_faults_proxy.c - the mutex when the network misbehaves, against the
 * real server through a fault proxy (tests/support/faultproxy.h): a holder's
 * connection that goes silent past the session timeout, a connection cut
 * while a create or a release is in flight, waiters across a short
 * disconnect, and contention over a slow link. First, checks of the proxy
 * itself against an echo server.
 *
 * Every test leaves no lock node behind: checked from a raw handle once the
 * clients have drained their deletes. The last tests show an acquire keeps
 * its timeout (at least 1 s, the floor its calls get) on a silent link, and
 * that a waiter cut off from the server gives up at its deadline, or at once
 * when its client is canceled, and its node goes when the link is back; and
 * that a waiter's watch, or a revocation watch, lost to a cut is made again.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "faultproxy.h"
#include "waiter.h"
#include "zkt.h"

/* ================= the proxy itself, against an echo server ================= */

struct echo {
    int lfd, stop[2];
    char addr[64];
    pthread_t t;
};

static void *echo_main(void *arg)
{
    struct echo *e = arg;
    int fds[8], n = 0, k;
    for (;;) {
        struct pollfd p[10];
        p[0].fd = e->stop[0];
        p[0].events = POLLIN;
        p[1].fd = e->lfd;
        p[1].events = POLLIN;
        for (k = 0; k < n; k++) {
            p[2 + k].fd = fds[k];
            p[2 + k].events = POLLIN;
        }
        if (poll(p, (nfds_t)n + 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents)
            break;
        for (k = n - 1; k >= 0; k--) { /* from the top: removal swaps in a done one */
            char buf[4096];
            ssize_t r;
            if (!p[2 + k].revents)
                continue;
            r = recv(fds[k], buf, sizeof buf, 0);
            if (r > 0 && send(fds[k], buf, (size_t)r, MSG_NOSIGNAL) == r)
                continue;
            close(fds[k]);
            fds[k] = fds[--n];
        }
        if (p[1].revents & POLLIN) {
            int fd = accept(e->lfd, NULL, NULL);
            if (fd >= 0 && n < 8)
                fds[n++] = fd;
            else if (fd >= 0)
                close(fd);
        }
    }
    for (k = 0; k < n; k++)
        close(fds[k]);
    return NULL;
}

static void echo_start(struct echo *e)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    e->lfd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(e->lfd, 0);
    cr_assert_eq(bind(e->lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(e->lfd, 16), 0);
    cr_assert_eq(getsockname(e->lfd, (struct sockaddr *)&a, &len), 0);
    snprintf(e->addr, sizeof e->addr, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    cr_assert_eq(pipe(e->stop), 0);
    cr_assert_eq(pthread_create(&e->t, NULL, echo_main, e), 0);
}

static void echo_stop(struct echo *e)
{
    cr_assert_eq(write(e->stop[1], "x", 1), 1);
    pthread_join(e->t, NULL);
    close(e->lfd);
    close(e->stop[0]);
    close(e->stop[1]);
}

/* A blocking socket connected to "127.0.0.1:PORT". */
static int dial(const char *hostport)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)atoi(strchr(hostport, ':') + 1));
    cr_assert_geq(fd, 0);
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
    return fd;
}

/* Read up to len bytes within ms: >0 bytes, 0 end of stream (or reset), -1 nothing in time. */
static int recv_within(int fd, char *buf, size_t len, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t r;
    if (poll(&p, 1, ms) != 1)
        return -1;
    r = recv(fd, buf, len, 0);
    return r < 0 ? 0 : (int)r;
}

/* Read exactly len bytes within ms overall; true if they came. */
static bool recv_all(int fd, char *buf, size_t len, int ms)
{
    int64_t end = zkt_now_ms() + ms;
    size_t got = 0;
    while (got < len) {
        int left = (int)(end - zkt_now_ms()), r;
        if (left <= 0)
            return false;
        r = recv_within(fd, buf + got, len - got, left);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static fp_stats stats(fp_proxy *fp)
{
    fp_stats s;
    fp_stats_get(fp, &s);
    return s;
}

/* Wait up to 3 s for a counter to reach want: the proxy counts bytes once
 * they are sent, so the peer may see them a moment before the counter does. */
#define STAT_IS(fp, field, want) stat_is(fp, offsetof(fp_stats, field), want)

static bool stat_is(fp_proxy *fp, size_t off, uint64_t want)
{
    int64_t end = zkt_now_ms() + 3000;
    for (;;) {
        fp_stats s = stats(fp);
        uint64_t v;
        memcpy(&v, (const char *)&s + off, sizeof v);
        if (v == want)
            return true;
        if (zkt_now_ms() >= end)
            return false;
        zkt_sleep_ms(5);
    }
}

struct open_arg {
    fp_proxy *fp;
    int want;
};

static int open_is(void *arg)
{
    struct open_arg *a = arg;
    return stats(a->fp).open == a->want;
}

Test(proxy, forwards_stalls_drops_delays_cuts_refuses, .timeout = 60)
{
    struct echo e;
    fp_proxy *fp;
    char buf[64];
    int fd;
    int64_t t0, rtt;
    struct open_arg none;
    echo_start(&e);
    fp = fp_start(e.addr);
    cr_assert(fp, "fp_start");
    cr_assert(strncmp(fp_connect_string(fp), "127.0.0.1:", 10) == 0);
    none.fp = fp;
    none.want = 0;

    /* bytes flow both ways and are counted */
    fd = dial(fp_connect_string(fp));
    cr_assert_eq(send(fd, "hello", 5, 0), 5);
    cr_assert(recv_all(fd, buf, 5, 3000), "no echo through the proxy");
    cr_assert(memcmp(buf, "hello", 5) == 0);
    cr_assert(STAT_IS(fp, accepted, 1));
    cr_assert(STAT_IS(fp, up_bytes, 5));
    cr_assert(STAT_IS(fp, down_bytes, 5));
    cr_assert_eq(stats(fp).open, 1);

    /* stall: nothing moves, then everything does */
    fp_stall(fp, true);
    cr_assert_eq(send(fd, "abc", 3, 0), 3);
    cr_assert_eq(recv_within(fd, buf, sizeof buf, 300), -1, "bytes moved while stalled");
    cr_assert_eq(stats(fp).up_bytes, 5, "forwarded upstream while stalled");
    fp_stall(fp, false);
    cr_assert(recv_all(fd, buf, 3, 3000), "nothing after the stall ended");
    cr_assert(memcmp(buf, "abc", 3) == 0);

    /* dropped replies: the request goes up, the answer is swallowed */
    fp_drop_replies(fp, true);
    cr_assert_eq(send(fd, "xyz", 3, 0), 3);
    cr_assert_eq(recv_within(fd, buf, sizeof buf, 300), -1, "a reply got through");
    cr_assert(STAT_IS(fp, up_bytes, 11));
    cr_assert(STAT_IS(fp, dropped, 3));
    fp_drop_replies(fp, false);
    cr_assert_eq(send(fd, "q", 1, 0), 1);
    cr_assert(recv_all(fd, buf, 1, 3000) && buf[0] == 'q');

    /* delay: 100 ms each way */
    fp_delay(fp, 100);
    t0 = zkt_now_ms();
    cr_assert_eq(send(fd, "d", 1, 0), 1);
    cr_assert(recv_all(fd, buf, 1, 3000) && buf[0] == 'd');
    rtt = zkt_now_ms() - t0;
    cr_assert_geq(rtt, 195, "round trip %lld ms with 2 x 100 ms of delay", (long long)rtt);
    fp_delay(fp, 0);

    /* cut: the client's side ends at once */
    fp_cut(fp);
    cr_assert_eq(recv_within(fd, buf, sizeof buf, 3000), 0, "the connection survived a cut");
    close(fd);
    cr_assert_eq(stats(fp).cut, 1);
    cr_assert_eq(stats(fp).open, 0);

    /* refuse: accepted and closed; then served again */
    fp_refuse(fp, true);
    fd = dial(fp_connect_string(fp));
    cr_assert_eq(recv_within(fd, buf, sizeof buf, 3000), 0, "a refused connection stayed open");
    close(fd);
    cr_assert(STAT_IS(fp, refused, 1));
    fp_refuse(fp, false);
    fd = dial(fp_connect_string(fp));
    cr_assert_eq(send(fd, "again", 5, 0), 5);
    cr_assert(recv_all(fd, buf, 5, 3000) && memcmp(buf, "again", 5) == 0);
    cr_assert(STAT_IS(fp, accepted, 2));

    /* a client that goes away while stalled takes its pair with it */
    fp_stall(fp, true);
    close(fd);
    cr_assert(zkt_wait_for(open_is, &none, 3000), "a closed connection lingers while stalled");
    fp_stall(fp, false);

    fp_stop(fp);
    echo_stop(&e);
}

Test(proxy, upstream_down_closes_the_client, .timeout = 30)
{
    fp_proxy *fp = fp_start("127.0.0.1:1"); /* nothing listens there */
    char buf[8];
    int fd;
    cr_assert(fp);
    fd = dial(fp_connect_string(fp));
    cr_assert_eq(recv_within(fd, buf, sizeof buf, 3000), 0);
    close(fd);
    cr_assert(STAT_IS(fp, refused, 1));
    cr_assert_eq(stats(fp).accepted, 0);
    fp_stop(fp);
    cr_assert_null(fp_start("no-port-here"));
}

/* ================= the mutex through the proxy ================= */

#define MAX_EV 64

/* Connection states as they were reported, with the time of each. */
struct timeline {
    pthread_mutex_t mu;
    int n;
    zkl_conn_state ev[MAX_EV];
    int64_t at[MAX_EV];
};

static void tl_add(struct timeline *t, zkl_conn_state st)
{
    int64_t now = zkt_now_ms();
    pthread_mutex_lock(&t->mu);
    if (t->n < MAX_EV) {
        t->ev[t->n] = st;
        t->at[t->n] = now;
        t->n++;
    }
    pthread_mutex_unlock(&t->mu);
}

static void on_client_state(zkl_client *c, zkl_conn_state st, void *ud)
{
    (void)c;
    tl_add(ud, st);
}

static void on_hold_state(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    tl_add(ud, st);
}

/* Time of the first st at or after index from (-1 if none); *idx its index. */
static int64_t tl_find(struct timeline *t, zkl_conn_state st, int from, int *idx)
{
    int64_t at = -1;
    int i;
    pthread_mutex_lock(&t->mu);
    for (i = from; i < t->n; i++) {
        if (t->ev[i] == st) {
            at = t->at[i];
            if (idx)
                *idx = i;
            break;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return at;
}

static int64_t tl_first(struct timeline *t, zkl_conn_state st)
{
    return tl_find(t, st, 0, NULL);
}

static int tl_count(struct timeline *t, zkl_conn_state st)
{
    int i, k = 0;
    pthread_mutex_lock(&t->mu);
    for (i = 0; i < t->n; i++)
        k += t->ev[i] == st;
    pthread_mutex_unlock(&t->mu);
    return k;
}

static int saw_lost(void *arg)
{
    return tl_first(arg, ZKL_STATE_LOST) >= 0;
}

static int saw_suspended(void *arg)
{
    return tl_first(arg, ZKL_STATE_SUSPENDED) >= 0;
}

/* RECONNECTED after the last SUSPENDED or LOST: connected again now. */
static int back_again(void *arg)
{
    struct timeline *t = arg;
    int i, r = 0;
    pthread_mutex_lock(&t->mu);
    for (i = 0; i < t->n; i++) {
        if (t->ev[i] == ZKL_STATE_SUSPENDED || t->ev[i] == ZKL_STATE_LOST)
            r = 0;
        else if (t->ev[i] == ZKL_STATE_RECONNECTED)
            r = 1;
    }
    pthread_mutex_unlock(&t->mu);
    return r;
}

static int reconnected_after_lost(void *arg)
{
    int i = -1;
    return tl_find(arg, ZKL_STATE_LOST, 0, &i) >= 0 &&
           tl_find(arg, ZKL_STATE_RECONNECTED, i + 1, NULL) >= 0;
}

static zkl_client *proxied_client(fp_proxy *fp, int session_ms, struct timeline *t)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_status st;
    zkl_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.connect_timeout_ms = 10000;
    o.on_state = t ? on_client_state : NULL;
    o.state_userdata = t;
    st = zkl_client_open(fp_connect_string(fp), &o, &c);
    cr_assert_eq(st, ZKL_OK, "open through the proxy: %s (%s)", zkl_strerror(st), zkl_errmsg());
    return c;
}

static fp_proxy *proxy(void)
{
    fp_proxy *fp = fp_start(zkt_servers());
    cr_assert(fp, "could not start the fault proxy to %s", zkt_servers());
    return fp;
}

/* The lock path as an empty container (not reaped before it has had a child). */
static void make_parent(zhandle_t *zh, const char *path)
{
    int rc = zkt_make_path(zh, path, ZOO_CONTAINER);
    cr_assert_eq(rc, ZOK, "%s: %s", path, zerror(rc));
}

/* The one child of path as a full path (asserts there is exactly one). */
static char *only_child(zhandle_t *zh, const char *path)
{
    struct String_vector sv;
    char *full;
    cr_assert_eq(zoo_get_children(zh, path, 0, &sv), ZOK);
    cr_assert_eq(sv.count, 1, "%d nodes under %s, want exactly one", sv.count, path);
    full = malloc(strlen(path) + strlen(sv.data[0]) + 2);
    sprintf(full, "%s/%s", path, sv.data[0]);
    deallocate_String_vector(&sv);
    return full;
}

/* Lock participants (full paths), through the given mutex. */
static char **participants(zkl_mutex *m, size_t *n)
{
    char **v = NULL;
    ok(zkl_mutex_participants(m, &v, n), "participants");
    return v;
}

static int flag_set(void *arg)
{
    return atomic_load((atomic_int *)arg);
}

struct count_arg {
    zhandle_t *zh;
    const char *path;
    int want;
};

static int children_are(void *arg)
{
    struct count_arg *a = arg;
    return zkt_children(a->zh, a->path) == a->want;
}

/* Wait (up to ms) until path has want children. */
static bool children_reach(zhandle_t *zh, const char *path, int want, int ms)
{
    struct count_arg a = {zh, path, want};
    return zkt_wait_for(children_are, &a, ms);
}

static zkl_client_stats client_stats(zkl_client *c)
{
    zkl_client_stats s;
    ok(zkl_client_stats_get(c, &s), "stats");
    return s;
}

/* Swap the link for a fresh one: nothing in flight survives, and a stream
 * whose replies were being swallowed does not leak half a reply. */
static void cut_clean(fp_proxy *fp)
{
    fp_stall(fp, true);
    fp_drop_replies(fp, false);
    fp_cut(fp);
    fp_stall(fp, false);
}

/*
 * Two sessions on one lock path, one through the proxy (its state changes in
 * ct) and one straight to the server, each with a mutex on the path; and a
 * raw handle to look at the nodes.
 */
struct duo {
    struct timeline ct;
    fp_proxy *fp;
    zkl_client *px, *direct;
    zkl_mutex *mpx, *mdirect;
    zhandle_t *zh;
    char *path;
};

static void duo_open(struct duo *d, const char *name, int px_session_ms)
{
    memset(d, 0, sizeof *d);
    zkt_log_from_env();
    pthread_mutex_init(&d->ct.mu, NULL);
    d->fp = proxy();
    d->px = proxied_client(d->fp, px_session_ms, &d->ct);
    d->direct = zkt_client(4000);
    d->zh = zkt_raw();
    d->path = zkt_path(name);
    ok(zkl_mutex_create(d->px, d->path, &d->mpx), "create");
    ok(zkl_mutex_create(d->direct, d->path, &d->mdirect), "create");
}

/* Both clients drained, no lock node left behind, everything closed. */
static void duo_close(struct duo *d)
{
    ok(zkl_client_drain(d->px, 5000), "drain");
    ok(zkl_client_drain(d->direct, 5000), "drain");
    cr_assert_eq(zkt_children_settle(d->zh, d->path, 0), 0, "a lock node was left behind");
    ok(zkl_mutex_destroy(d->mpx), "destroy");
    ok(zkl_mutex_destroy(d->mdirect), "destroy");
    ok(zkl_client_close(d->px), "close");
    ok(zkl_client_close(d->direct), "close");
    fp_stop(d->fp);
    zookeeper_close(d->zh);
    pthread_mutex_destroy(&d->ct.mu);
    free(d->path);
}

/*
 * (a) The holder's link goes silent past the session timeout. The holder must
 * hear SUSPENDED (client and lock callbacks), then LEASE_EXPIRED, both
 * before the server expires its session and hands the lock to the other
 * session: its hold reads as not held by then. LOST follows (the client ends
 * the session whose lease ran out).
 */
Test(proxy_faults, holder_stall_suspends_before_another_gets_the_lock, .timeout = 90)
{
    struct duo d;
    struct timeline mt = {.mu = PTHREAD_MUTEX_INITIALIZER};
    zkt_waiter w = {0};
    int64_t stall_at, sus_c, sus_m, lost_c, lost_m, lease_c, lease_m;
    int granted;
    bool held_at_grant;
    duo_open(&d, "pxstall", 4000);
    granted = zkl_client_session_timeout(d.px);
    ok(zkl_mutex_on_state(d.mpx, on_hold_state, &mt), "on_state");
    ok(zkl_mutex_acquire(d.mpx, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mdirect, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the other session never queued");
    zkt_sleep_ms(100);
    cr_assert_not(atomic_load(&w.done), "the other session got a held lock");

    stall_at = zkt_now_ms();
    fp_stall(d.fp, true);
    cr_assert(zkt_wait_for(flag_set, &w.done, 20000), "the other session never got the lock");
    ok(w.st, "the other session acquires");
    /* Unlike Curator, where a SUSPENDED hold counts as held until LOST, the
     * lease ended the hold before the server could expire the session. */
    held_at_grant = zkl_mutex_is_held(d.mpx);
    cr_assert(zkt_wait_for(saw_lost, &d.ct, 20000), "the holder never saw LOST");
    cr_assert(zkt_wait_for(saw_lost, &mt, 5000), "the holder's lock never heard LOST");
    sus_c = tl_first(&d.ct, ZKL_STATE_SUSPENDED);
    sus_m = tl_first(&mt, ZKL_STATE_SUSPENDED);
    lost_c = tl_first(&d.ct, ZKL_STATE_LOST);
    lost_m = tl_first(&mt, ZKL_STATE_LOST);
    lease_c = tl_first(&d.ct, ZKL_STATE_LEASE_EXPIRED);
    lease_m = tl_first(&mt, ZKL_STATE_LEASE_EXPIRED);
    cr_log_info("stall: suspended +%lld ms, lease expired +%lld ms, other acquired +%lld ms, lost "
                "+%lld ms (granted %d); holder's is_held at the other's grant: %d",
                (long long)(sus_c - stall_at), (long long)(lease_c - stall_at),
                (long long)(w.got_at - stall_at), (long long)(lost_c - stall_at), granted,
                (int)held_at_grant);
    cr_assert_geq(sus_c, 0, "no SUSPENDED on the client");
    cr_assert_geq(sus_m, 0, "no SUSPENDED on the lock");
    cr_assert_lt(sus_c, w.got_at, "SUSPENDED (+%lld) must come before the other's grant (+%lld)",
                 (long long)(sus_c - stall_at), (long long)(w.got_at - stall_at));
    cr_assert_lt(sus_m, w.got_at, "the lock's SUSPENDED must come before the other's grant");
    cr_assert_gt(lost_c, sus_c);
    cr_assert_geq(lost_m, sus_m);
    cr_assert_geq(lease_c, 0, "no LEASE_EXPIRED on the client");
    cr_assert_geq(lease_m, 0, "no LEASE_EXPIRED on the lock");
    cr_assert_lt(lease_c, w.got_at,
                 "LEASE_EXPIRED (+%lld) must come before the other's grant (+%lld)",
                 (long long)(lease_c - stall_at), (long long)(w.got_at - stall_at));
    cr_assert_lt(lease_m, w.got_at, "the lock's LEASE_EXPIRED must come before the other's grant");
    cr_assert_geq(lost_c, lease_c, "LOST comes after LEASE_EXPIRED");
    cr_assert_not(held_at_grant, "the holder still read its hold as held at the other's grant");
    cr_assert_not(zkl_mutex_is_held(d.mpx), "a hold must not outlive LOST");

    fp_stall(d.fp, false);
    cr_assert(zkt_wait_for(reconnected_after_lost, &d.ct, 20000), "no new session after the stall");
    cr_assert_eq(zkl_mutex_release(d.mpx), ZKL_ELOST);
    zkt_waiter_finish(&w);
    ok(w.release_st, "the other releases");
    duo_close(&d);
}

/*
 * (a') The same stall, but the link comes back once the server has expired
 * the session: the server's "expired" reaches the holder, which hears LOST
 * then, without waiting out its own session timeout.
 */
Test(proxy_faults, holder_back_after_expiry_hears_lost_from_server, .timeout = 90)
{
    struct duo d;
    zkt_waiter w = {0};
    int64_t stall_at, sus_c, lost_c, back_at;
    int granted;
    duo_open(&d, "pxexpire", 4000);
    granted = zkl_client_session_timeout(d.px);
    ok(zkl_mutex_acquire(d.mpx, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mdirect, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the other session never queued");

    stall_at = zkt_now_ms();
    fp_stall(d.fp, true);
    cr_assert(zkt_wait_for(flag_set, &w.done, 20000), "the other session never got the lock");
    ok(w.st, "the other session acquires");
    back_at = zkt_now_ms();
    fp_stall(d.fp, false);
    cr_assert(zkt_wait_for(saw_lost, &d.ct, 20000), "the holder never saw LOST");
    sus_c = tl_first(&d.ct, ZKL_STATE_SUSPENDED);
    lost_c = tl_first(&d.ct, ZKL_STATE_LOST);
    cr_log_info("stall: suspended +%lld, other +%lld, back +%lld, lost +%lld ms (granted %d)",
                (long long)(sus_c - stall_at), (long long)(w.got_at - stall_at),
                (long long)(back_at - stall_at), (long long)(lost_c - stall_at), granted);
    cr_assert(sus_c >= 0 && sus_c < w.got_at, "SUSPENDED must come before the other's grant");
    cr_assert_lt(lost_c - sus_c, granted,
                 "LOST came only by the local rule (%lld ms after SUSPENDED): the server's "
                 "expiry was not reported",
                 (long long)(lost_c - sus_c));
    cr_assert_not(zkl_mutex_is_held(d.mpx));
    cr_assert(zkt_wait_for(reconnected_after_lost, &d.ct, 20000), "no new session");
    cr_assert_eq(zkl_mutex_release(d.mpx), ZKL_ELOST);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    /* the holder's client works again in its new session, through the proxy */
    ok(zkl_mutex_acquire(d.mpx, 10000), "lock again in the new session");
    ok(zkl_mutex_release(d.mpx), "release");
    duo_close(&d);
}

/*
 * (a'') Asymmetric partition: the server hears the holder (its pings and
 * reconnect attempts keep the session alive) but the holder hears nothing.
 * The holder must declare LOST by its own rule and let go of the session;
 * only then may the other session get the lock, and it must get it.
 */
Test(proxy_faults, holder_deaf_past_session_timeout_loses_before_another_gets_it, .timeout = 90)
{
    struct duo d;
    zkt_waiter w = {0};
    int64_t t0, sus_c, lost_c;
    duo_open(&d, "pxdeaf", 4000);
    ok(zkl_mutex_acquire(d.mpx, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mdirect, 40000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the other session never queued");

    t0 = zkt_now_ms();
    fp_drop_replies(d.fp, true);
    cr_assert(zkt_wait_for(flag_set, &w.done, 30000), "the other session never got the lock");
    ok(w.st, "the other session acquires");
    cr_assert(zkt_wait_for(saw_lost, &d.ct, 10000), "the holder never saw LOST");
    sus_c = tl_first(&d.ct, ZKL_STATE_SUSPENDED);
    lost_c = tl_first(&d.ct, ZKL_STATE_LOST);
    cr_log_info("deaf: suspended +%lld, lost +%lld, other acquired +%lld ms",
                (long long)(sus_c - t0), (long long)(lost_c - t0), (long long)(w.got_at - t0));
    cr_assert(sus_c >= 0 && sus_c < lost_c, "SUSPENDED must come before LOST");
    cr_assert_lt(lost_c, w.got_at, "another session got the lock (+%lld) before LOST (+%lld)",
                 (long long)(w.got_at - t0), (long long)(lost_c - t0));
    cr_assert_not(zkl_mutex_is_held(d.mpx));
    cut_clean(d.fp);
    cr_assert(zkt_wait_for(reconnected_after_lost, &d.ct, 20000), "no new session afterwards");
    cr_assert_eq(zkl_mutex_release(d.mpx), ZKL_ELOST);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    duo_close(&d);
}

/*
 * A hiccup: the link stalls for well under 2/3 of the session timeout, with a
 * release sent into it. Nothing is suspended, the delete arrives late but
 * arrives (no background retry), and only then does the waiter get the lock.
 */
Test(proxy_faults, short_stall_is_harmless, .timeout = 60)
{
    struct duo d;
    zkt_waiter w = {0};
    int64_t resumed;
    duo_open(&d, "pxhiccup", 6000);
    ok(zkl_mutex_acquire(d.mpx, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mdirect, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the waiter never queued");
    fp_stall(d.fp, true);
    zkt_sleep_ms(500);
    cr_assert(zkl_mutex_is_held(d.mpx), "a short stall must not end a hold");
    ok(zkl_mutex_release(d.mpx), "release into the stalled link");
    zkt_sleep_ms(500);
    cr_assert_not(atomic_load(&w.done), "the waiter got the lock before the delete arrived");
    resumed = zkt_now_ms();
    fp_stall(d.fp, false);
    cr_assert(zkt_wait_for(flag_set, &w.done, 10000), "the waiter never got the lock");
    ok(w.st, "the waiter acquires");
    cr_assert_geq(w.got_at, resumed);
    ok(zkl_client_drain(d.px, 5000), "drain");
    cr_assert_eq(client_stats(d.px).bg_deletes, 0, "the late delete was retried in the background");
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_SUSPENDED), 0, "a 1 s stall of a 6 s session suspended");
    cr_assert_eq(stats(d.fp).cut, 0);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    duo_close(&d);
}

/*
 * (b) The create reaches the server, its reply does not come back, and the
 * connection is cut: the client reconnects in the same session, finds its
 * node by its protected prefix and adopts it. Exactly one node, the one the
 * server made, and nothing deleted in the background.
 */
Test(proxy_faults, cut_with_create_reply_in_flight_adopts_the_node, .timeout = 60)
{
    struct timeline ct = {.mu = PTHREAD_MUTEX_INITIALIZER};
    fp_proxy *fp = proxy();
    zkl_client *c = proxied_client(fp, 4000, &ct);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("pxadopt"), *made;
    zkl_mutex *m;
    zkt_waiter w = {0};
    int64_t sid = zkl_client_session_id(c);
    make_parent(zh, path);
    ok(zkl_mutex_create(c, path, &m), "create");

    fp_drop_replies(fp, true);
    zkt_waiter_start(&w, m, 20000, NULL);
    cr_assert(children_reach(zh, path, 1, 5000), "the create never reached the server");
    made = only_child(zh, path);
    zkt_sleep_ms(50);
    cr_assert_not(atomic_load(&w.done), "acquired without a reply");
    cut_clean(fp);

    cr_assert(zkt_wait_for(flag_set, &w.done, 15000), "the acquire never finished");
    ok(w.st, "acquire across the cut");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "exactly one node for one attempt");
    cr_assert(w.node);
    cr_assert_str_eq(w.node, made, "the node the server made was not adopted");
    cr_assert_eq(zkl_client_session_id(c), sid, "the session changed");
    cr_assert_eq(tl_count(&ct, ZKL_STATE_LOST), 0, "a short cut must not lose the session");
    cr_assert_geq(tl_count(&ct, ZKL_STATE_SUSPENDED), 1, "the cut went unnoticed");
    cr_assert_eq(client_stats(c).bg_deletes, 0, "something was deleted in the background");
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left behind");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(made);
    free(path);
}

/*
 * (b') The create never reaches the server (the link is stalled, then cut):
 * recovery finds nothing with its prefix and creates once more. Exactly one
 * node.
 */
Test(proxy_faults, cut_with_create_unsent_creates_once, .timeout = 60)
{
    struct timeline ct = {.mu = PTHREAD_MUTEX_INITIALIZER};
    fp_proxy *fp = proxy();
    zkl_client *c = proxied_client(fp, 4000, &ct);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("pxunsent"), *made;
    zkl_mutex *m;
    zkt_waiter w = {0};
    make_parent(zh, path);
    ok(zkl_mutex_create(c, path, &m), "create");

    fp_stall(fp, true);
    zkt_waiter_start(&w, m, 20000, NULL);
    zkt_sleep_ms(300);
    cr_assert_eq(zkt_children(zh, path), 0, "a request went through a stalled link");
    cr_assert_not(atomic_load(&w.done));
    fp_cut(fp);
    fp_stall(fp, false);

    cr_assert(zkt_wait_for(flag_set, &w.done, 15000), "the acquire never finished");
    ok(w.st, "acquire across the cut");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "exactly one node for one attempt");
    made = only_child(zh, path);
    cr_assert(w.node);
    cr_assert_str_eq(w.node, made);
    cr_assert_eq(tl_count(&ct, ZKL_STATE_LOST), 0);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left behind");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(made);
    free(path);
}

struct more_arg {
    struct timeline *t;
    zkl_conn_state st;
    int than;
};

static int count_above(void *arg)
{
    struct more_arg *a = arg;
    return tl_count(a->t, a->st) > a->than;
}

/*
 * (b'') A waiter whose create went up with its reply swallowed, then cut
 * again and again while it waits (replies swallowed between the cuts, so
 * its relists and watches are uncertain too): it keeps the one node the
 * server made, never makes a second, and gets the lock with it.
 */
Test(proxy_faults, repeated_cuts_while_waiting_keep_one_node, .timeout = 90)
{
    struct duo d;
    zkt_waiter w = {0};
    char **line;
    size_t n;
    int i;
    duo_open(&d, "pxcuts", 4000);
    ok(zkl_mutex_acquire(d.mdirect, 5000), "holder acquires");
    fp_drop_replies(d.fp, true);
    zkt_waiter_start(&w, d.mpx, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000),
              "the waiter's create never reached the server");
    line = participants(d.mdirect, &n);
    cr_assert_eq(n, 2);
    for (i = 0; i < 4; i++) {
        struct more_arg sus = {&d.ct, ZKL_STATE_SUSPENDED, tl_count(&d.ct, ZKL_STATE_SUSPENDED)};
        zkt_sleep_ms(150);
        cut_clean(d.fp);
        cr_assert(zkt_wait_for(count_above, &sus, 5000), "cut %d went unnoticed", i);
        cr_assert(zkt_wait_for(back_again, &d.ct, 10000), "no reconnect after cut %d", i);
        cr_assert_eq(zkt_children_settle(d.zh, d.path, 2), 2,
                     "after cut %d: one node per contender", i);
        fp_drop_replies(d.fp, true);
    }
    cut_clean(d.fp);
    cr_assert(zkt_wait_for(back_again, &d.ct, 10000), "no reconnect after the last cut");
    zkt_sleep_ms(300);
    cr_assert_eq(zkt_children(d.zh, d.path), 2, "a second node appeared");
    cr_assert_not(atomic_load(&w.done), "the waiter got a held lock");
    ok(zkl_mutex_release(d.mdirect), "holder releases");
    cr_assert(zkt_wait_for(flag_set, &w.done, 10000), "the waiter never got the lock");
    ok(w.st, "acquire across repeated cuts");
    cr_assert(w.node);
    cr_assert_str_eq(w.node, line[1], "the waiter holds with another node than it queued with");
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_LOST), 0);
    cr_assert_eq(client_stats(d.px).bg_deletes, 0, "something was deleted in the background");
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    ok(zkl_client_drain(d.px, 5000), "drain");
    ok(zkl_client_drain(d.direct, 5000), "drain");
    cr_assert_eq(zkt_children_settle(d.zh, d.path, 0), 0, "a lock node was left behind");
    zkl_strings_free(line, n);
    duo_close(&d);
}

/*
 * (c) Release while the link is stalled, then cut: the delete never reached
 * the server, so it fails with connection loss and goes to the background
 * queue; once the link is back the node goes and the waiter in another
 * session gets the lock.
 */
Test(proxy_faults, cut_while_release_unsent_deletes_in_background, .timeout = 60)
{
    struct duo d;
    zkt_waiter w = {0};
    int64_t back_at;
    duo_open(&d, "pxrelease", 4000);
    ok(zkl_mutex_acquire(d.mpx, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mdirect, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the waiter never queued");

    fp_stall(d.fp, true);
    ok(zkl_mutex_release(d.mpx), "release (its delete is stuck in the link)");
    cr_assert_not(zkl_mutex_is_held(d.mpx));
    zkt_sleep_ms(300);
    cr_assert_eq(zkt_children(d.zh, d.path), 2, "the delete went through a stalled link");
    cr_assert_not(atomic_load(&w.done), "the waiter got a lock still held on the server");
    fp_cut(d.fp);
    back_at = zkt_now_ms();
    fp_stall(d.fp, false);

    cr_assert(zkt_wait_for(flag_set, &w.done, 15000), "the waiter hangs: the node never went");
    ok(w.st, "the waiter acquires");
    cr_log_info("waiter got the lock %lld ms after the link came back",
                (long long)(w.got_at - back_at));
    ok(zkl_client_drain(d.px, 10000), "drain");
    cr_assert_geq(client_stats(d.px).bg_deletes, 1, "the failed delete was not retried");
    cr_assert_eq(zkt_children_settle(d.zh, d.path, 1), 1, "only the waiter's node is left");
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_LOST), 0);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    duo_close(&d);
}

/*
 * (c') The delete reaches the server but its reply is swallowed, then the
 * link is cut: the waiter gets the lock at once (the server applied it), and
 * the holder's client settles its uncertain delete (retried: already gone).
 */
Test(proxy_faults, cut_while_release_reply_in_flight, .timeout = 60)
{
    struct duo d;
    zkt_waiter w = {0};
    duo_open(&d, "pxrelreply", 4000);
    ok(zkl_mutex_acquire(d.mpx, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mdirect, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the waiter never queued");

    fp_drop_replies(d.fp, true);
    ok(zkl_mutex_release(d.mpx), "release");
    cr_assert(zkt_wait_for(flag_set, &w.done, 10000), "the waiter never got the lock");
    ok(w.st, "the waiter acquires");
    cut_clean(d.fp);
    ok(zkl_client_drain(d.px, 10000), "the holder's uncertain delete never settled");
    cr_assert_geq(client_stats(d.px).bg_deletes, 1, "a delete without a reply was not retried");
    cr_assert_eq(zkt_children_settle(d.zh, d.path, 1), 1);
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_LOST), 0);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    /* the holder's client is still good for locking */
    ok(zkl_mutex_acquire(d.mpx, 10000), "lock again");
    ok(zkl_mutex_release(d.mpx), "release");
    duo_close(&d);
}

/*
 * (d) A holder (direct) and two waiters queued in order through the proxy,
 * each in its own session. Their links are cut and refused for a while
 * (well under the session timeout); if release_during_outage, the holder
 * lets go meanwhile. The waiters keep their nodes (same participants), and
 * the first in line gets the lock first; nobody is LOST.
 */
static void waiters_keep_their_place(bool release_during_outage)
{
    struct timeline t1 = {.mu = PTHREAD_MUTEX_INITIALIZER}, t2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
    fp_proxy *fp = proxy();
    zkl_client *h = zkt_client(4000);
    zkl_client *c1 = proxied_client(fp, 4000, &t1);
    zkl_client *c2 = proxied_client(fp, 4000, &t2);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path(release_during_outage ? "pxplace2" : "pxplace");
    zkl_mutex *mh, *m1, *m2;
    zkt_waiter w1 = {0}, w2 = {0};
    atomic_int order = 0;
    char **before, **after;
    size_t nb, na, i;
    ok(zkl_mutex_create(h, path, &mh), "create");
    ok(zkl_mutex_create(c1, path, &m1), "create");
    ok(zkl_mutex_create(c2, path, &m2), "create");
    ok(zkl_mutex_acquire(mh, 5000), "holder acquires");
    zkt_waiter_start(&w1, m1, 30000, &order);
    cr_assert(children_reach(zh, path, 2, 5000), "W1 never queued");
    zkt_waiter_start(&w2, m2, 30000, &order);
    cr_assert(children_reach(zh, path, 3, 5000), "W2 never queued");
    before = participants(mh, &nb);
    cr_assert_eq(nb, 3);

    fp_refuse(fp, true);
    fp_cut(fp);
    cr_assert_eq(stats(fp).open, 0);
    if (release_during_outage) {
        zkt_sleep_ms(200);
        ok(zkl_mutex_release(mh), "holder releases while the waiters are away");
        ok(zkl_client_drain(h, 5000), "drain");
    }
    /* (how soon a cut is seen is the machine's: under valgrind, with other
     * tests beside it, it has taken over a second) */
    cr_assert(zkt_wait_for(saw_suspended, &t1, 10000), "W1 did not notice the cut");
    cr_assert(zkt_wait_for(saw_suspended, &t2, 10000), "W2 did not notice the cut");
    zkt_sleep_ms(1000);
    cr_assert_not(atomic_load(&w1.done) || atomic_load(&w2.done), "a lock granted while away");
    fp_refuse(fp, false);
    cr_assert(zkt_wait_for(back_again, &t1, 10000), "W1 never reconnected");
    cr_assert(zkt_wait_for(back_again, &t2, 10000), "W2 never reconnected");

    if (!release_during_outage) {
        after = participants(mh, &na);
        cr_assert_eq(na, nb, "the line changed across the disconnect");
        for (i = 0; i < nb; i++)
            cr_assert_str_eq(after[i], before[i], "place %zu changed across the disconnect", i);
        zkl_strings_free(after, na);
        ok(zkl_mutex_release(mh), "holder releases");
    }
    cr_assert(zkt_wait_for(flag_set, &w1.done, 10000), "W1 never got the lock");
    ok(w1.st, "W1 acquires");
    cr_assert_eq(w1.rank, 1, "W1 was first in line but got the lock second");
    cr_assert(w1.node);
    cr_assert_str_eq(w1.node, before[1], "W1 holds with another node than it queued with");
    zkt_sleep_ms(200);
    cr_assert_not(atomic_load(&w2.done), "W2 got the lock while W1 held it");
    atomic_store(&w1.release_now, 1);
    cr_assert(zkt_wait_for(flag_set, &w2.done, 10000), "W2 never got the lock");
    ok(w2.st, "W2 acquires");
    cr_assert_eq(w2.rank, 2);
    cr_assert(w2.node);
    cr_assert_str_eq(w2.node, before[2], "W2 holds with another node than it queued with");
    cr_assert_eq(tl_count(&t1, ZKL_STATE_LOST), 0, "W1 lost its session");
    cr_assert_eq(tl_count(&t2, ZKL_STATE_LOST), 0, "W2 lost its session");
    zkt_waiter_finish(&w1);
    zkt_waiter_finish(&w2);
    ok(w1.release_st, "release");
    ok(w2.release_st, "release");
    ok(zkl_client_drain(c1, 5000), "drain");
    ok(zkl_client_drain(c2, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left behind");
    zkl_strings_free(before, nb);
    ok(zkl_mutex_destroy(mh), "destroy");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(h), "close");
    ok(zkl_client_close(c1), "close");
    ok(zkl_client_close(c2), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(path);
}

Test(proxy_faults, waiters_keep_their_place_across_a_short_disconnect, .timeout = 60)
{
    waiters_keep_their_place(false);
}

Test(proxy_faults, release_during_disconnect_goes_to_the_first_waiter, .timeout = 60)
{
    waiters_keep_their_place(true);
}

/*
 * (e) Four sessions through a link with 50 ms of latency each way contend
 * 20 times each: never two holders at once (a shared slot), fencing tokens
 * strictly increasing, and every acquire finishes.
 */
#define SLOW_CLIENTS 4
#define SLOW_ROUNDS 20

struct slow_shared {
    atomic_int inside, violations, done, failures;
    _Atomic int64_t last_token;
    atomic_int token_regressions;
};

struct slow_worker {
    struct slow_shared *sh;
    zkl_client *c;
    zkl_mutex *m;
    zkl_status first_error;
    pthread_t t;
};

static void *slow_main(void *arg)
{
    struct slow_worker *w = arg;
    struct slow_shared *sh = w->sh;
    int i;
    for (i = 0; i < SLOW_ROUNDS; i++) {
        int64_t tok = 0;
        zkl_status st = zkl_mutex_acquire(w->m, 60000);
        if (st != ZKL_OK) {
            if (w->first_error == ZKL_OK)
                w->first_error = st;
            atomic_fetch_add(&sh->failures, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->violations, 1);
        if (zkl_mutex_fencing_token(w->m, &tok) != ZKL_OK || tok <= atomic_load(&sh->last_token))
            atomic_fetch_add(&sh->token_regressions, 1);
        atomic_store(&sh->last_token, tok);
        zkt_sleep_ms(2);
        atomic_fetch_sub(&sh->inside, 1);
        st = zkl_mutex_release(w->m);
        if (st != ZKL_OK && w->first_error == ZKL_OK)
            w->first_error = st;
        atomic_fetch_add(&sh->done, 1);
    }
    return NULL;
}

Test(proxy_faults, slow_link_contention_stays_exclusive, .timeout = 180)
{
    fp_proxy *fp = proxy();
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("pxslow");
    struct slow_shared sh;
    struct slow_worker w[SLOW_CLIENTS];
    int64_t t0, rtt_t0;
    int i;
    memset(&sh, 0, sizeof sh);
    memset(w, 0, sizeof w);
    fp_delay(fp, 50);
    rtt_t0 = zkt_now_ms();
    for (i = 0; i < SLOW_CLIENTS; i++) {
        w[i].sh = &sh;
        w[i].c = proxied_client(fp, 6000, NULL);
        ok(zkl_mutex_create(w[i].c, path, &w[i].m), "create");
    }
    /* a session's handshake through the link takes at least one round trip */
    cr_assert_geq(zkt_now_ms() - rtt_t0, SLOW_CLIENTS * 100, "the delay did not apply");
    t0 = zkt_now_ms();
    for (i = 0; i < SLOW_CLIENTS; i++)
        cr_assert_eq(pthread_create(&w[i].t, NULL, slow_main, &w[i]), 0);
    for (i = 0; i < SLOW_CLIENTS; i++)
        pthread_join(w[i].t, NULL);
    cr_log_info("%d acquisitions over a 2 x 50 ms link in %lld ms", SLOW_CLIENTS * SLOW_ROUNDS,
                (long long)(zkt_now_ms() - t0));
    for (i = 0; i < SLOW_CLIENTS; i++)
        cr_assert_eq(w[i].first_error, ZKL_OK, "client %d: %s", i, zkl_strerror(w[i].first_error));
    cr_assert_eq(atomic_load(&sh.failures), 0);
    cr_assert_eq(atomic_load(&sh.violations), 0, "two holders at once");
    cr_assert_eq(atomic_load(&sh.token_regressions), 0, "fencing tokens went backwards");
    cr_assert_eq(atomic_load(&sh.done), SLOW_CLIENTS * SLOW_ROUNDS);
    for (i = 0; i < SLOW_CLIENTS; i++)
        ok(zkl_client_drain(w[i].c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left behind");
    for (i = 0; i < SLOW_CLIENTS; i++) {
        ok(zkl_mutex_destroy(w[i].m), "destroy");
        ok(zkl_client_close(w[i].c), "close");
    }
    fp_stop(fp);
    zookeeper_close(zh);
    free(path);
}

/*
 * On a silent link an acquire with a short timeout (or 0, "try once") must not
 * block until the ZooKeeper client gives the connection up (2/3 of the session
 * timeout: 4 s here, 6.7 s with the default 10 s session): its calls give up
 * at max(timeout, 1 s). Found by this proxy; fixed in requests/calls.c.
 */
Test(proxy_faults, acquire_keeps_its_timeout_on_a_silent_link, .timeout = 60)
{
    fp_proxy *fp = proxy();
    zkl_client *c = proxied_client(fp, 6000, NULL);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("pxsilent");
    zkl_mutex *m;
    int64_t t0, took_500, took_0;
    zkl_status st_500, st_0;
    ok(zkl_mutex_create(c, path, &m), "create");
    fp_stall(fp, true);
    t0 = zkt_now_ms();
    st_500 = zkl_mutex_acquire(m, 500);
    took_500 = zkt_now_ms() - t0;
    t0 = zkt_now_ms();
    st_0 = zkl_mutex_acquire(m, 0);
    took_0 = zkt_now_ms() - t0;
    fp_stall(fp, false);
    cr_log_info("silent link: acquire(500) %s after %lld ms, acquire(0) %s after %lld ms",
                zkl_strerror(st_500), (long long)took_500, zkl_strerror(st_0), (long long)took_0);
    if (st_500 == ZKL_OK)
        ok(zkl_mutex_release(m), "release");
    if (st_0 == ZKL_OK)
        ok(zkl_mutex_release(m), "release");
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left behind");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(path);
    cr_assert_eq(st_500, ZKL_ETIMEDOUT);
    cr_assert_lt(took_500, 2000, "acquire(500) took %lld ms", (long long)took_500);
    cr_assert_lt(took_0, 2000, "acquire(0) took %lld ms", (long long)took_0);
}

/*
 * A waiter queued behind a holder in another session has its link cut and
 * its reconnects refused; with cancel_after_ms >= 0 its client is canceled
 * that long after the cut. Returns once the acquire has returned, the link
 * is back and everything is cleaned up: the waiter's node, which it could
 * not delete while cut off, must go then, and the session must survive.
 */
struct cut_off {
    zkl_status st;
    char msg[256];
    char *path;
    int64_t took_ms; /* from the cut to the acquire's return */
};

static void waiter_cut_off(const char *name, int timeout_ms, int cancel_after_ms,
                           struct cut_off *out)
{
    struct duo d;
    zkt_waiter w = {0};
    int64_t t0;
    duo_open(&d, name, 10000);
    out->path = strdup(d.path);
    ok(zkl_mutex_acquire(d.mdirect, 5000), "holder acquires");
    zkt_waiter_start(&w, d.mpx, timeout_ms, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 2000), "the waiter never queued");
    fp_refuse(d.fp, true);
    fp_cut(d.fp);
    t0 = zkt_now_ms();
    if (cancel_after_ms >= 0) {
        zkt_sleep_ms(cancel_after_ms);
        cr_assert_not(atomic_load(&w.done), "the waiter gave up before it was canceled");
        ok(zkl_client_cancel(d.px), "cancel");
    }
    cr_assert(zkt_wait_for(flag_set, &w.done, timeout_ms + 10000), "the waiter hangs");
    out->st = w.st;
    out->took_ms = w.got_at - t0;
    memcpy(out->msg, w.msg, sizeof out->msg);
    fp_refuse(d.fp, false);
    cr_log_info("cut-off waiter: %s (%s) %lld ms after the cut", zkl_strerror(w.st), w.msg,
                (long long)out->took_ms);
    cr_assert(zkt_wait_for(back_again, &d.ct, 10000), "no reconnect once the link was back");
    ok(zkl_client_drain(d.px, 10000), "drain");
    cr_assert_eq(zkt_children_settle(d.zh, d.path, 1), 1, "the waiter's node outlived its acquire");
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_LOST), 0, "the session was lost");
    zkt_waiter_finish(&w);
    ok(zkl_mutex_release(d.mdirect), "release");
    duo_close(&d);
}

/*
 * Cut off past its deadline, the waiter's listings fail with connection
 * loss; it retries until the deadline, then gives up with ZKL_ETIMEDOUT
 * saying it is not connected, without waiting for the session to end.
 */
Test(proxy_faults, waiter_cut_off_past_its_deadline_times_out, .timeout = 60)
{
    struct cut_off r;
    waiter_cut_off("pxdeadline", 2500, -1, &r);
    cr_assert_eq(r.st, ZKL_ETIMEDOUT, "%s: %s", zkl_strerror(r.st), r.msg);
    cr_assert(strstr(r.msg, r.path) && strstr(r.msg, "not connected"),
              "the message names neither the lock nor the lost link: %s", r.msg);
    cr_assert_lt(r.took_ms, 2500 + 2000, "gave up %lld ms after the cut", (long long)r.took_ms);
    free(r.path);
}

/*
 * Issue 57, item 6: a finite wait retries a lost connection until its
 * deadline, however few retries the client's options allow (they bound
 * calls without a timeout of their own). The waiter is cut off for 3 s,
 * ten times longer than its 3 retries of at most 100 ms last; the holder
 * lets go meanwhile, and the waiter is granted once the link is back. On
 * 65709ca it gave up "after 4 tries" (ZKL_ECONNLOSS) a few hundred ms into
 * the outage.
 */
Test(proxy_faults, a_finite_wait_outlasts_its_retries, .timeout = 90)
{
    fp_proxy *fp = proxy();
    zkl_client_options o;
    zkl_client *px, *direct = zkt_client(4000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("pxretries");
    zkl_mutex *mpx, *mdirect;
    zkt_waiter w = {0};
    zkt_log_from_env();
    zkl_client_options_init(&o);
    o.session_timeout_ms = 10000;
    o.connect_timeout_ms = 10000;
    o.retry_base_ms = 20;
    o.retry_max_ms = 100;
    o.retry_max = 3;
    ok(zkl_client_open(fp_connect_string(fp), &o, &px), "open through the proxy");
    ok(zkl_mutex_create(px, path, &mpx), "create");
    ok(zkl_mutex_create(direct, path, &mdirect), "create");
    ok(zkl_mutex_acquire(mdirect, 5000), "holder acquires");
    zkt_waiter_start(&w, mpx, 20000, NULL);
    cr_assert(children_reach(zh, path, 2, 2000), "the waiter never queued");
    fp_refuse(fp, true);
    fp_cut(fp);
    zkt_sleep_ms(3000);
    cr_assert_not(atomic_load(&w.done), "the wait gave up in the outage: %s (%s)",
                  zkl_strerror(w.st), w.msg);
    ok(zkl_mutex_release(mdirect), "the holder lets go");
    fp_refuse(fp, false);
    cr_assert(zkt_wait_for(flag_set, &w.done, 15000), "the waiter hangs");
    cr_assert_eq(w.st, ZKL_OK, "%s (%s)", zkl_strerror(w.st), w.msg);
    zkt_waiter_release(&w);
    ok(zkl_client_drain(px, 10000), "drain");
    ok(zkl_client_drain(direct, 10000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node was left behind");
    ok(zkl_mutex_destroy(mpx), "destroy");
    ok(zkl_mutex_destroy(mdirect), "destroy");
    ok(zkl_client_close(px), "close");
    ok(zkl_client_close(direct), "close");
    fp_stop(fp);
    zookeeper_close(zh);
    free(path);
}

/* Cut off and retrying, the waiter hears zkl_client_cancel at once. */
Test(proxy_faults, waiter_cut_off_hears_cancel, .timeout = 60)
{
    struct cut_off r;
    waiter_cut_off("pxcancel", 20000, 700, &r);
    cr_assert_eq(r.st, ZKL_ECANCELED, "%s: %s", zkl_strerror(r.st), r.msg);
    cr_assert(strstr(r.msg, r.path) && strstr(r.msg, "canceled"),
              "the message names neither the lock nor the cancel: %s", r.msg);
    cr_assert_lt(r.took_ms, 700 + 1500, "canceled, it still took %lld ms", (long long)r.took_ms);
    free(r.path);
}

/*
 * A send that finds the link cut. libzookeeper_st sends a request inside
 * the call that makes it, on the caller's thread; when that send fails it
 * closes the socket without a session event (session/transport.c,
 * dropped_silently). The poller stalls stall_ms after each poll (a loaded
 * machine, as when this was found in full suite runs) so that the waiters'
 * sends, not the poller's read, meet the cut. The client must hear
 * SUSPENDED while the link is down, RECONNECTED once it is back and nothing
 * after (checked a second past handover_ms, when a thread's deferred events
 * reach the poller: HANDOVER_MS), and every acquire in flight must end with
 * the lock. refuse_ms: reconnects are refused this long after the cut.
 */
static void sends_into_a_cut(const char *name, int stall_ms, int handover_ms, int refuse_ms)
{
    enum { SENDERS = 3 };
    struct duo d;
    zkt_waiter w[SENDERS];
    zkl_mutex *m[SENDERS];
    char *path[SENDERS];
    int i;
    memset(w, 0, sizeof w);
    duo_open(&d, name, 10000);
    for (i = 0; i < SENDERS; i++) {
        path[i] = zkt_path(name);
        ok(zkl_mutex_create(d.px, path[i], &m[i]), "create");
    }
    zkt_fault_set(d.px, ZKL__FAULT_POLLER_STALL_MS, stall_ms);
    zkt_fault_set(d.px, ZKL__FAULT_HANDOVER_MS, handover_ms);
    fp_refuse(d.fp, refuse_ms > 0);
    fp_cut(d.fp);
    for (i = 0; i < SENDERS; i++) {
        zkt_waiter_start(&w[i], m[i], 30000, NULL);
        zkt_sleep_ms(50);
    }
    cr_assert(zkt_wait_for(saw_suspended, &d.ct, refuse_ms + stall_ms + 3000),
              "cut off, the client never heard SUSPENDED");
    if (refuse_ms > 0) {
        zkt_sleep_ms(refuse_ms);
        fp_refuse(d.fp, false);
    }
    zkt_fault_set(d.px, ZKL__FAULT_POLLER_STALL_MS, 0);
    cr_assert(zkt_wait_for(back_again, &d.ct, 10000), "no reconnect once the link was back");
    zkt_sleep_ms(handover_ms + 1000);
    cr_assert(back_again(&d.ct), "a late event undid the reconnect");
    zkt_fault_set(d.px, ZKL__FAULT_HANDOVER_MS, 0);
    for (i = 0; i < SENDERS; i++) {
        cr_assert(zkt_wait_for(flag_set, &w[i].done, 20000), "acquire %d never ended", i);
        cr_assert_eq(w[i].st, ZKL_OK, "acquire %d: %s (%s)", i, zkl_strerror(w[i].st), w[i].msg);
        zkt_waiter_release(&w[i]);
    }
    ok(zkl_client_drain(d.px, 10000), "drain");
    for (i = 0; i < SENDERS; i++) {
        cr_assert_eq(zkt_children_settle(d.zh, path[i], 0), 0, "a lock node was left behind");
        ok(zkl_mutex_destroy(m[i]), "destroy");
        free(path[i]);
    }
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_LOST), 0, "the session was lost");
    duo_close(&d);
}

/* Cut off, and its reconnects refused for a while: SUSPENDED all that time. */
Test(proxy_faults, send_into_a_cut_link_suspends, .timeout = 60)
{
    sends_into_a_cut("pxsendcut", 1500, 0, 1000);
}

/*
 * The link comes back at once, while the thread whose send found it gone
 * has not yet handed its CONNECTING to the poller: the poller applies the
 * reconnect first. The late event is stale (session.c numbers them) and the
 * reconnect is heard as SUSPENDED then RECONNECTED.
 */
Test(proxy_faults, late_link_event_does_not_undo_the_reconnect, .timeout = 60)
{
    sends_into_a_cut("pxlate", 300, 2000, 0);
}

static void on_revoke_flag(void *lock, void *ud)
{
    (void)lock;
    atomic_store((atomic_int *)ud, 1);
}

struct sent_arg {
    zkl_client *c;
    uint64_t want;
};

static int requests_reach(void *arg)
{
    struct sent_arg *a = arg;
    return client_stats(a->c).requests >= a->want;
}

/*
 * A revocable hold whose revocation watch is still on its way (a slow link)
 * when the link is cut: the request fails with connection loss, so no watch
 * was left, and it must be armed again once the client is back, or revokes
 * would go unheard for as long as the lock is held.
 */
Test(proxy_faults, revocation_watch_lost_to_a_cut_is_armed_again, .timeout = 60)
{
    struct duo d; /* the holder through the proxy; the direct client asks for the lock */
    char *node = NULL;
    atomic_int revoked = 0;
    struct sent_arg sent;
    duo_open(&d, "pxrevoke", 10000);
    sent.c = d.px;
    /* once round first, so that the acquire below makes no parents */
    ok(zkl_mutex_acquire(d.mpx, 5000), "acquire");
    ok(zkl_mutex_release(d.mpx), "release");
    ok(zkl_client_drain(d.px, 5000), "drain");
    ok(zkl_mutex_make_revocable(d.mpx, on_revoke_flag, &revoked), "revocable");
    sent.want = client_stats(d.px).requests + 3; /* create, listing, then the watch's getData */
    fp_delay(d.fp, 300);
    ok(zkl_mutex_acquire(d.mpx, 10000), "acquire over a slow link");
    ok(zkl_mutex_node(d.mpx, &node), "node");
    cr_assert(zkt_wait_for(requests_reach, &sent, 5000), "the revocation watch was not sent");
    cut_clean(d.fp); /* its reply is 600 ms away */
    fp_delay(d.fp, 0);
    cr_assert(zkt_wait_for(back_again, &d.ct, 10000), "no reconnect after the cut");
    cr_assert(zkl_mutex_is_held(d.mpx), "the hold did not survive a short cut");
    zkt_sleep_ms(300);
    ok(zkl_revoke(d.direct, node), "revoke");
    cr_assert(zkt_wait_for(flag_set, &revoked, 10000),
              "the revoke went unheard: the watch was not armed again");
    ok(zkl_mutex_release(d.mpx), "release");
    free(node);
    duo_close(&d);
}

/*
 * A waiter on a slow link whose watch request is on its way when the link is
 * cut: the request fails with connection loss, so it has no watch. It must
 * list again once back (not sleep on a watch that was never set), keep its
 * one node, and get the lock when the holder lets go.
 */
Test(proxy_faults, watch_request_lost_to_a_cut_is_made_again, .timeout = 60)
{
    struct duo d;
    zkt_waiter w = {0};
    duo_open(&d, "pxarm", 10000);
    ok(zkl_mutex_acquire(d.mdirect, 5000), "holder acquires");
    fp_delay(d.fp, 300);
    zkt_waiter_start(&w, d.mpx, 30000, NULL);
    cr_assert(children_reach(d.zh, d.path, 2, 5000), "the waiter never queued");
    /* its listing is back after ~300 ms more; the watch request then takes 600 */
    zkt_sleep_ms(500);
    cut_clean(d.fp);
    fp_delay(d.fp, 0);
    cr_assert(zkt_wait_for(back_again, &d.ct, 10000), "no reconnect after the cut");
    zkt_sleep_ms(300);
    cr_assert_eq(zkt_children(d.zh, d.path), 2, "one node per contender");
    cr_assert_not(atomic_load(&w.done), "the waiter got a held lock: %s", zkl_strerror(w.st));
    ok(zkl_mutex_release(d.mdirect), "holder releases");
    cr_assert(zkt_wait_for(flag_set, &w.done, 10000),
              "the waiter never got the lock: it sleeps on a watch that was never set");
    ok(w.st, "acquire across the cut");
    cr_assert_eq(tl_count(&d.ct, ZKL_STATE_LOST), 0);
    zkt_waiter_finish(&w);
    ok(w.release_st, "release");
    duo_close(&d);
}
