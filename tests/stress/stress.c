/*
 * stress.c - a plain program (no Criterion) that drives every recipe
 * through contention, reentrancy, timeouts, a lost create reply, a holder
 * session expiry, revocation and lost-lock notices. It exists for ThreadSanitizer and valgrind,
 * whose memory layouts Criterion's forking runner cannot live with; the same behaviours are
 * asserted in detail by the Criterion integration tests.
 *
 *   stress [ROUNDS]     server from ZKL_TEST_SERVERS or $ZKL_TEST_ZK_DIR/connect
 *
 * Prints "stress: N passed, M failed" and exits non-zero on any failure.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "base/fault.h"
#include "base/util.h"
#include "session/client.h"
#include "expire.h"
#include "servers.h"
#include "zklock/zklock.h"

static char servers[1024];
static int passed, failed;
static int rounds = 50;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "stress: %s:%d: ", __FILE__, __LINE__);                                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " [%s]\n", zkl_errmsg());                                              \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static zkl_client *open_client(int timeout_ms)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_client_options_init(&o);
    o.session_timeout_ms = timeout_ms;
    if (zkl_client_open(servers, &o, &c) != ZKL_OK)
        fprintf(stderr, "stress: open: %s\n", zkl_errmsg());
    return c;
}

static void path_for(char *buf, size_t n, const char *what)
{
    static atomic_int k;
    snprintf(buf, n, "/zklstress/%s-%d-%d", what, (int)getpid(), atomic_fetch_add(&k, 1));
}

struct shared {
    char path[256];
    atomic_int inside, violations, errors, next;
};

/* rounds acquires and releases of m, counting overlaps and errors in sh. */
static void contend_loop(struct shared *sh, zkl_mutex *m)
{
    int i;
    for (i = 0; i < rounds; i++) {
        if (zkl_mutex_acquire(m, 60000) != ZKL_OK) {
            atomic_fetch_add(&sh->errors, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->violations, 1);
        if (i % 3 == 0) { /* some reentrancy in the mix */
            zkl_mutex_acquire(m, 0);
            zkl_mutex_release(m);
        }
        atomic_fetch_sub(&sh->inside, 1);
        if (zkl_mutex_release(m) != ZKL_OK)
            atomic_fetch_add(&sh->errors, 1);
    }
}

static void *contender(void *arg)
{
    struct shared *sh = arg;
    zkl_client *c = open_client(10000);
    zkl_mutex *m = NULL;
    /* the contenders take turns among the look-ahead modes */
    if (!c || zkl_mutex_create(c, sh->path, &m) != ZKL_OK ||
        zkl_mutex_set_lookahead(m, (zkl_lookahead)(atomic_fetch_add(&sh->next, 1) % 3)) != ZKL_OK) {
        atomic_fetch_add(&sh->errors, 1);
        if (c)
            zkl_client_close(c);
        return NULL;
    }
    contend_loop(sh, m);
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return NULL;
}

static int contention(void)
{
    struct shared sh;
    pthread_t t[4];
    int i;
    memset(&sh, 0, sizeof sh);
    path_for(sh.path, sizeof sh.path, "contention");
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, contender, &sh);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&sh.violations) == 0, "two holders at once");
    CHECK(atomic_load(&sh.errors) == 0, "%d errors", atomic_load(&sh.errors));
    return 0;
}

/* One of two threads on a shared client, with a zkl_mutex of its own. */
struct sharer {
    struct shared *sh;
    zkl_client *c;
    pthread_t t;
};

static void *sharer_main(void *arg)
{
    struct sharer *w = arg;
    zkl_mutex *m = NULL;
    if (zkl_mutex_create(w->c, w->sh->path, &m) != ZKL_OK) {
        atomic_fetch_add(&w->sh->errors, 1);
        return NULL;
    }
    contend_loop(w->sh, m);
    zkl_mutex_destroy(m);
    return NULL;
}

/*
 * A line of 8 waits from 4 clients, two threads each: the clients have two
 * waits live, so the waiters deep in the line defer the watch on their own
 * node and are rung by the grants ahead of them (core/engine/inproc.h: another
 * client's c->mu taken under the bells' mutex); each client closes as soon
 * as its two threads are done, while the others' grants go on ringing.
 */
static int deep_line(void)
{
    struct shared sh;
    struct sharer w[8];
    zkl_client *c[4];
    int i;
    memset(&sh, 0, sizeof sh);
    path_for(sh.path, sizeof sh.path, "deep");
    for (i = 0; i < 4; i++)
        CHECK((c[i] = open_client(10000)) != NULL, "open");
    for (i = 0; i < 8; i++) {
        w[i] = (struct sharer){&sh, c[i / 2], 0};
        pthread_create(&w[i].t, NULL, sharer_main, &w[i]);
    }
    for (i = 0; i < 8; i++) {
        pthread_join(w[i].t, NULL);
        if (i % 2)
            zkl_client_close(c[i / 2]);
    }
    CHECK(atomic_load(&sh.violations) == 0, "two holders at once");
    CHECK(atomic_load(&sh.errors) == 0, "%d errors", atomic_load(&sh.errors));
    return 0;
}

/* The library's fault hook (base/fault.h): the next create of one client loses its reply. */
static _Atomic(zkl_client *) lose_reply_of;
static int lose_one_reply(zkl_client *c, zkl__fault_site site, void *io)
{
    zkl_client *want = c;
    (void)io;
    if (site == ZKL__FAULT_CREATE_REPLY_LOST && c)
        return atomic_compare_exchange_strong(&lose_reply_of, &want, NULL);
    return site >= ZKL__FAULT_HOLD_BACK_US ? -1 : 0;
}

static int timeout_and_faults(void)
{
    zkl_client *a = open_client(4000), *b = open_client(4000);
    zkl_mutex *ma, *mb;
    char path[256];
    size_t n;
    char **v;
    CHECK(a && b, "open");
    path_for(path, sizeof path, "timeout");
    CHECK(zkl_mutex_create(a, path, &ma) == ZKL_OK, "create");
    CHECK(zkl_mutex_create(b, path, &mb) == ZKL_OK, "create");
    CHECK(zkl_mutex_acquire(ma, 5000) == ZKL_OK, "acquire");
    CHECK(zkl_mutex_acquire(mb, 300) == ZKL_ETIMEDOUT, "timeout");
    CHECK(zkl_mutex_release(ma) == ZKL_OK, "release");
    lose_reply_of = b;
    zkl__fault_set(lose_one_reply);
    CHECK(zkl_mutex_acquire(mb, 5000) == ZKL_OK, "acquire through a lost reply");
    CHECK(zkl_mutex_participants(ma, &v, &n) == ZKL_OK && n == 1, "one node");
    zkl_strings_free(v, n);
    CHECK(zkl_mutex_release(mb) == ZKL_OK, "release");
    CHECK(zkl_client_drain(b, 5000) == ZKL_OK, "drain");
    zkl_mutex_destroy(ma);
    zkl_mutex_destroy(mb);
    zkl_client_close(a);
    zkl_client_close(b);
    return 0;
}

struct waiter {
    zkl_mutex *m;
    atomic_int state; /* 0 waiting, 1 got it, 2 failed */
    atomic_int release_now;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    if (zkl_mutex_acquire(w->m, 30000) != ZKL_OK) {
        atomic_store(&w->state, 2);
        return NULL;
    }
    atomic_store(&w->state, 1);
    while (!atomic_load(&w->release_now))
        sleep_ms(10);
    zkl_mutex_release(w->m);
    return NULL;
}

static void expire(zkl_client *c)
{
    clientid_t cid = zkl__session_client_id(c);
    if (zkt_expire_session(servers, &cid) != 0)
        fprintf(stderr, "stress: could not expire a session\n");
}

static int holder_expiry(void)
{
    zkl_client *h = open_client(2000), *o = open_client(4000);
    zkl_mutex *mh, *mo;
    struct waiter w;
    pthread_t t;
    char path[256];
    int i;
    CHECK(h && o, "open");
    memset(&w, 0, sizeof w);
    path_for(path, sizeof path, "expiry");
    CHECK(zkl_mutex_create(h, path, &mh) == ZKL_OK, "create");
    CHECK(zkl_mutex_create(o, path, &mo) == ZKL_OK, "create");
    CHECK(zkl_mutex_acquire(mh, 5000) == ZKL_OK, "acquire");
    w.m = mo;
    pthread_create(&t, NULL, waiter_main, &w);
    sleep_ms(200);
    expire(h);
    for (i = 0; i < 1000 && atomic_load(&w.state) == 0; i++)
        sleep_ms(20);
    CHECK(atomic_load(&w.state) == 1, "waiter did not get the lock");
    for (i = 0; i < 500 && zkl_mutex_is_held(mh); i++)
        sleep_ms(20);
    CHECK(!zkl_mutex_is_held(mh), "holder still believes it holds");
    CHECK(zkl_mutex_release(mh) == ZKL_ELOST, "release of a lost hold");
    atomic_store(&w.release_now, 1);
    pthread_join(t, NULL);
    zkl_mutex_destroy(mh);
    zkl_mutex_destroy(mo);
    zkl_client_close(h);
    zkl_client_close(o);
    return 0;
}

struct rwshared {
    char path[256];
    atomic_int readers, writers, violations, errors;
};

static void *rw_worker(void *arg)
{
    struct rwshared *sh = arg;
    zkl_client *c = open_client(10000);
    zkl_rwlock *l = NULL;
    int i;
    if (!c || zkl_rwlock_create(c, sh->path, &l) != ZKL_OK) {
        atomic_fetch_add(&sh->errors, 1);
        if (c)
            zkl_client_close(c);
        return NULL;
    }
    for (i = 0; i < rounds; i++) {
        if (i % 4 == 0) {
            if (zkl_rwlock_write_acquire(l, 60000) != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            if (atomic_fetch_add(&sh->writers, 1) != 0 || atomic_load(&sh->readers))
                atomic_fetch_add(&sh->violations, 1);
            atomic_fetch_sub(&sh->writers, 1);
            if (i % 8 == 0) { /* downgrade */
                zkl_rwlock_read_acquire(l, 0);
                zkl_rwlock_write_release(l);
                zkl_rwlock_read_release(l);
            } else {
                zkl_rwlock_write_release(l);
            }
        } else {
            if (zkl_rwlock_read_acquire(l, 60000) != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            atomic_fetch_add(&sh->readers, 1);
            if (atomic_load(&sh->writers))
                atomic_fetch_add(&sh->violations, 1);
            atomic_fetch_sub(&sh->readers, 1);
            zkl_rwlock_read_release(l);
        }
    }
    zkl_rwlock_destroy(l);
    zkl_client_close(c);
    return NULL;
}

static int rwlock_mix(void)
{
    struct rwshared sh;
    pthread_t t[4];
    int i;
    memset(&sh, 0, sizeof sh);
    path_for(sh.path, sizeof sh.path, "rw");
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, rw_worker, &sh);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&sh.violations) == 0, "read/write rules broken");
    CHECK(atomic_load(&sh.errors) == 0, "%d errors", atomic_load(&sh.errors));
    return 0;
}

struct semshared {
    char path[256];
    atomic_int inside, over, errors;
};

static void *sem_worker(void *arg)
{
    struct semshared *sh = arg;
    zkl_client *c = open_client(10000);
    zkl_semaphore *s = NULL;
    int i;
    if (!c || zkl_semaphore_create(c, sh->path, 2, &s) != ZKL_OK) {
        atomic_fetch_add(&sh->errors, 1);
        if (c)
            zkl_client_close(c);
        return NULL;
    }
    for (i = 0; i < rounds / 2; i++) {
        zkl_lease *l;
        if (zkl_semaphore_acquire(s, 60000, &l) != ZKL_OK) {
            atomic_fetch_add(&sh->errors, 1);
            continue;
        }
        if (atomic_fetch_add(&sh->inside, 1) >= 2)
            atomic_fetch_add(&sh->over, 1);
        atomic_fetch_sub(&sh->inside, 1);
        zkl_lease_return(l);
    }
    zkl_semaphore_destroy(s);
    zkl_client_close(c);
    return NULL;
}

static int semaphore_mix(void)
{
    struct semshared sh;
    pthread_t t[4];
    int i;
    memset(&sh, 0, sizeof sh);
    path_for(sh.path, sizeof sh.path, "sem");
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, sem_worker, &sh);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&sh.over) == 0, "more holders than leases");
    CHECK(atomic_load(&sh.errors) == 0, "%d errors", atomic_load(&sh.errors));
    return 0;
}

static atomic_int revoke_seen, lost_seen;
static void on_revoke(void *lock, void *ud)
{
    (void)lock;
    (void)ud;
    atomic_store(&revoke_seen, 1);
}
static void on_hold(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    (void)ud;
    if (st == ZKL_STATE_LOST)
        atomic_store(&lost_seen, 1);
}

static int revoke_and_notice(void)
{
    zkl_client *h = open_client(2000), *o = open_client(4000);
    zkl_mutex *m;
    char path[256], *node = NULL;
    int i;
    CHECK(h && o, "open");
    path_for(path, sizeof path, "revoke");
    CHECK(zkl_mutex_create(h, path, &m) == ZKL_OK, "create");
    CHECK(zkl_mutex_make_revocable(m, on_revoke, NULL) == ZKL_OK, "revocable");
    CHECK(zkl_mutex_on_state(m, on_hold, NULL) == ZKL_OK, "on_state");
    CHECK(zkl_mutex_acquire(m, 5000) == ZKL_OK, "acquire");
    CHECK(zkl_mutex_node(m, &node) == ZKL_OK, "node");
    CHECK(zkl_revoke(o, node) == ZKL_OK, "revoke");
    for (i = 0; i < 500 && !atomic_load(&revoke_seen); i++)
        sleep_ms(10);
    CHECK(atomic_load(&revoke_seen), "no revocation callback");
    expire(h);
    for (i = 0; i < 1000 && !atomic_load(&lost_seen); i++)
        sleep_ms(10);
    CHECK(atomic_load(&lost_seen), "no lost notice");
    CHECK(zkl_mutex_release(m) == ZKL_ELOST, "release of a lost hold");
    free(node);
    zkl_mutex_destroy(m);
    zkl_client_close(h);
    zkl_client_close(o);
    return 0;
}

/*
 * A lock object destroyed while the worker tells the client's listeners of
 * an event: A's notice is slow, and B, made after A, is destroyed meanwhile.
 * B's listener must be gone before B's holders are torn down (TSan saw the
 * worker lock B's destroyed holders mutex when destroy removed it last).
 */
static atomic_int slow_notice_in;
static void on_hold_slowly(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    (void)ud;
    if (st != ZKL_STATE_CONNECTED && !atomic_exchange(&slow_notice_in, 1))
        sleep_ms(300);
}

static int destroy_during_notice(void)
{
    zkl_client *h = open_client(2000);
    zkl_mutex *a, *b;
    char pa[256], pb[256];
    int i;
    CHECK(h, "open");
    path_for(pa, sizeof pa, "notice-a");
    path_for(pb, sizeof pb, "notice-b");
    CHECK(zkl_mutex_create(h, pa, &a) == ZKL_OK, "create");
    CHECK(zkl_mutex_create(h, pb, &b) == ZKL_OK, "create");
    CHECK(zkl_mutex_on_state(a, on_hold_slowly, NULL) == ZKL_OK, "on_state");
    CHECK(zkl_mutex_on_state(b, on_hold, NULL) == ZKL_OK, "on_state");
    CHECK(zkl_mutex_acquire(a, 5000) == ZKL_OK, "acquire");
    expire(h);
    for (i = 0; i < 1000 && !atomic_load(&slow_notice_in); i++)
        sleep_ms(5);
    CHECK(atomic_load(&slow_notice_in), "no notice");
    CHECK(zkl_mutex_destroy(b) == ZKL_OK, "destroy during the notice");
    zkl_mutex_release(a); /* lost: ZKL_ELOST */
    CHECK(zkl_mutex_destroy(a) == ZKL_OK, "destroy");
    zkl_client_close(h);
    return 0;
}

/* ---- async: worker delivery, descriptor delivery, cancels from another thread ---- */

struct async_shared {
    struct shared sh;
    atomic_int granted, ended, canceled_ok;
};

/* The grant or the end, counted; keep: the handle is released by whoever cancels it. */
static void async_end(zkl_op *op, zkl_status st, const char *msg, struct async_shared *as,
                      bool keep)
{
    if (st == ZKL_OK) {
        if (atomic_fetch_add(&as->sh.inside, 1) != 0)
            atomic_fetch_add(&as->sh.violations, 1);
        atomic_fetch_sub(&as->sh.inside, 1);
        atomic_fetch_add(&as->granted, 1);
    } else if (st != ZKL_ECANCELED) {
        fprintf(stderr, "stress: async: %s\n", msg);
        atomic_fetch_add(&as->sh.errors, 1);
    }
    if (!keep && zkl_op_release(op) != ZKL_OK)
        atomic_fetch_add(&as->sh.errors, 1);
    atomic_fetch_add(&as->ended, 1);
}

static void async_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    async_end(op, st, msg, ud, false);
}

/* For the handles main cancels: it releases them once everything ended. A
 * kept grant still holds: exclusion is checked at release time instead. */
static void async_cb_keep(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    struct async_shared *as = ud;
    if (st != ZKL_OK) {
        async_end(op, st, msg, as, true);
        return;
    }
    atomic_fetch_add(&as->granted, 1);
    atomic_fetch_add(&as->ended, 1);
}

/* Cancel every step-th of ops[0..n) (kept handles: async_cb_keep), counting
 * the cancels that won; a grant that came first is awaited; then release each. */
static void cancel_every(zkl_op **ops, int n, int step, struct async_shared *as)
{
    int i;
    for (i = 0; i < n; i += step) {
        if (zkl_op_cancel(ops[i]) == ZKL_OK)
            atomic_fetch_add(&as->canceled_ok, 1);
        else
            while (!zkl_op_is_held(ops[i]) && atomic_load(&as->ended) < n)
                sleep_ms(1);
        while (zkl_op_release(ops[i]) == ZKL_EBUSY) /* not reported yet */
            sleep_ms(1);
    }
}

struct loop_arg {
    zkl_client *c;
    struct async_shared *as;
    int want;
};

/* The loop thread of the descriptor client: poll, dispatch. */
static void *loop_main(void *arg)
{
    struct loop_arg *la = arg;
    int fd, ran;
    if (zkl_client_event_fd(la->c, &fd) != ZKL_OK)
        return NULL;
    while (atomic_load(&la->as->ended) < la->want) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 50) > 0)
            zkl_client_dispatch(la->c, &ran);
    }
    return NULL;
}

static int async_mix(void)
{
    struct async_shared as;
    zkl_client *a = open_client(10000), *b = open_client(10000);
    zkl_mutex *ma = NULL, *mb = NULL;
    zkl_op *ops[40];
    struct loop_arg la;
    pthread_t loop;
    int i, n = rounds < 20 ? 20 : 40, fd;
    memset(&as, 0, sizeof as);
    path_for(as.sh.path, sizeof as.sh.path, "async");
    CHECK(a && b, "open");
    CHECK(zkl_client_event_fd(b, &fd) == ZKL_OK, "event_fd");
    CHECK(zkl_mutex_create(a, as.sh.path, &ma) == ZKL_OK, "create");
    CHECK(zkl_mutex_create(b, as.sh.path, &mb) == ZKL_OK, "create");
    la.c = b;
    la.as = &as;
    la.want = n;
    pthread_create(&loop, NULL, loop_main, &la);
    for (i = 0; i < n; i++)
        CHECK(zkl_mutex_acquire_async(i % 2 ? mb : ma, 60000, i % 5 ? async_cb : async_cb_keep, &as,
                                      &ops[i]) == ZKL_OK,
              "acquire_async");
    cancel_every(ops, n, 5, &as); /* some cancels, racing grants; a kept grant lets go at once */
    pthread_join(loop, NULL);
    CHECK(atomic_load(&as.ended) == n, "%d of %d ended", atomic_load(&as.ended), n);
    CHECK(atomic_load(&as.sh.violations) == 0, "two holders at once");
    CHECK(atomic_load(&as.sh.errors) == 0, "%d errors", atomic_load(&as.sh.errors));
    CHECK(atomic_load(&as.granted) + atomic_load(&as.canceled_ok) == n, "granted %d, canceled %d",
          atomic_load(&as.granted), atomic_load(&as.canceled_ok));
    CHECK(zkl_mutex_destroy(ma) == ZKL_OK && zkl_mutex_destroy(mb) == ZKL_OK, "destroy");
    zkl_client_close(a);
    zkl_client_close(b);
    return 0;
}

/* ---- async guarded writes: sent from grants, answered on the worker and
 * through the descriptor, some with their handle released in flight ---- */

struct write_slot {
    struct async_shared *as;
    zkl_op *op;
    zkl_write w[2];
    char item[300];
    bool early; /* the handle is released right after the send */
};

/* The answer: the handle, if still held, goes from inside it. */
static void on_written(zkl_status st, size_t bad, const char *msg, void *ud)
{
    struct write_slot *ws = ud;
    (void)bad;
    if (st != ZKL_OK) {
        fprintf(stderr, "stress: async guarded write: %s\n", msg);
        atomic_fetch_add(&ws->as->sh.errors, 1);
    }
    if (!ws->early) {
        atomic_fetch_sub(&ws->as->sh.inside, 1);
        if (zkl_op_release(ws->op) != ZKL_OK)
            atomic_fetch_add(&ws->as->sh.errors, 1);
    }
    atomic_fetch_add(&ws->as->ended, 1);
}

/* The grant: a guarded create and delete of the slot's item, sent from inside. */
static void on_write_grant(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    struct write_slot *ws = ud;
    struct async_shared *as = ws->as;
    if (st != ZKL_OK) {
        fprintf(stderr, "stress: async guarded acquire: %s\n", msg);
        atomic_fetch_add(&as->sh.errors, 1);
        zkl_op_release(op);
        atomic_fetch_add(&as->ended, 1);
        return;
    }
    if (atomic_fetch_add(&as->sh.inside, 1) != 0)
        atomic_fetch_add(&as->sh.violations, 1);
    ws->op = op;
    if (zkl_op_guarded_write_async(op, ws->w, 2, NULL, on_written, ws) != ZKL_OK) {
        fprintf(stderr, "stress: async guarded write not sent: %s\n", zkl_errmsg());
        atomic_fetch_add(&as->sh.errors, 1);
        ws->early = false;
        on_written(ZKL_OK, SIZE_MAX, "", ws); /* lets the handle go */
        return;
    }
    if (ws->early) {
        atomic_fetch_sub(&as->sh.inside, 1);
        if (zkl_op_release(op) != ZKL_OK)
            atomic_fetch_add(&as->sh.errors, 1);
    }
}

static int async_guarded(void)
{
    struct async_shared as;
    zkl_client *a = open_client(10000), *b = open_client(10000);
    zkl_mutex *ma = NULL, *mb = NULL;
    struct write_slot ws[24];
    struct loop_arg la;
    pthread_t loop;
    zkl_op *op;
    int i, n = 24, fd;
    memset(&as, 0, sizeof as);
    memset(ws, 0, sizeof ws);
    path_for(as.sh.path, sizeof as.sh.path, "async-guarded");
    CHECK(a && b, "open");
    CHECK(zkl_client_event_fd(b, &fd) == ZKL_OK, "event_fd");
    CHECK(zkl_mutex_create(a, as.sh.path, &ma) == ZKL_OK, "create");
    CHECK(zkl_mutex_create(b, as.sh.path, &mb) == ZKL_OK, "create");
    la.c = b;
    la.as = &as;
    la.want = n;
    pthread_create(&loop, NULL, loop_main, &la);
    for (i = 0; i < n; i++) {
        ws[i].as = &as;
        ws[i].early = i % 4 == 3;
        snprintf(ws[i].item, sizeof ws[i].item, "%s-item-%d", as.sh.path, i);
        ws[i].w[0].type = ZKL_WRITE_CREATE;
        ws[i].w[0].path = ws[i].item;
        ws[i].w[1].type = ZKL_WRITE_DELETE;
        ws[i].w[1].path = ws[i].item;
        ws[i].w[1].version = ZKL_ANY_VERSION;
        CHECK(zkl_mutex_acquire_async(i % 2 ? mb : ma, 60000, on_write_grant, &ws[i], &op) ==
                  ZKL_OK,
              "acquire_async");
    }
    for (i = 0; i < 6000 && atomic_load(&as.ended) < n; i++)
        sleep_ms(10);
    atomic_store(&as.ended, n); /* the loop thread stops either way */
    pthread_join(loop, NULL);
    CHECK(i < 6000, "not every write was answered in 60 s");
    CHECK(atomic_load(&as.sh.violations) == 0, "two holders at once");
    CHECK(atomic_load(&as.sh.errors) == 0, "%d errors", atomic_load(&as.sh.errors));
    CHECK(zkl_mutex_destroy(ma) == ZKL_OK && zkl_mutex_destroy(mb) == ZKL_OK, "destroy");
    CHECK(zkl_client_close(a) == ZKL_OK && zkl_client_close(b) == ZKL_OK, "close: %s",
          zkl_errmsg());
    return 0;
}

/* ---- leader latches: terms taken in turn by three clients, one of them
 * delivering through its descriptor; destroys while waiting and from inside
 * GAINED; an election observer on each client, destroyed and made again
 * while it is told, sometimes from inside its own callback ---- */

struct latch_arg {
    struct shared *sh;
    int index;
    atomic_int *done;
};

static void on_term(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    atomic_int *events = ud;
    (void)token;
    (void)zkl_latch_is_leader(l);
    atomic_fetch_add(events, ev == ZKL_LEADER_GAINED ? 1 : -1);
}

static void on_term_destroy(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    (void)token;
    (void)ud;
    if (ev == ZKL_LEADER_GAINED)
        zkl_latch_destroy(l);
}

/* One observer: told counts its tellings; self_destroy: its first telling destroys it. */
struct observed {
    atomic_int told;
    bool self_destroy;
};

static void on_observed(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld,
                        void *ud)
{
    struct observed *ob = ud;
    (void)msg;
    if (st == ZKL_OK && ld->present && strlen(ld->id) != ld->id_len)
        fprintf(stderr, "stress: observer: the id's length is wrong\n");
    if (ob->self_destroy && atomic_load(&ob->told) == 0)
        zkl_observer_destroy(o); /* from inside: freed when this returns */
    atomic_fetch_add(&ob->told, 1);
}

/* End the observer in ob (by destroy, or wait for its own from inside), and start the next. */
static zkl_observer *observe_again(zkl_client *c, const char *path, int fd, zkl_observer *o,
                                   struct observed *ob, atomic_int *errors)
{
    int64_t end = zkl__now_ms() + 30000;
    if (o && !ob->self_destroy && zkl_observer_destroy(o) != ZKL_OK)
        atomic_fetch_add(errors, 1);
    while (o && ob->self_destroy && atomic_load(&ob->told) == 0 && zkl__now_ms() < end) {
        if (fd >= 0)
            zkl_client_dispatch(c, NULL);
        sleep_ms(2);
    }
    if (o && atomic_load(&ob->told) == 0) {
        fprintf(stderr, "stress: observer: never told\n");
        atomic_fetch_add(errors, 1);
    }
    ob->self_destroy = o ? !ob->self_destroy : false;
    atomic_store(&ob->told, 0);
    if (zkl_leader_observe(c, path, on_observed, ob, &o) != ZKL_OK) {
        atomic_fetch_add(errors, 1);
        return NULL;
    }
    return o;
}

static void *latch_main(void *arg)
{
    struct latch_arg *la = arg;
    struct shared *sh = la->sh;
    zkl_client *c = open_client(10000);
    zkl_latch *l = NULL, *spare = NULL;
    zkl_observer *obs = NULL;
    struct observed ob = {0, false};
    atomic_int events = 0;
    int i, fd = -1;
    if (!c || (la->index == 2 && zkl_client_event_fd(c, &fd) != ZKL_OK) ||
        zkl_latch_create(c, sh->path, "stress", &l) != ZKL_OK) {
        atomic_fetch_add(&sh->errors, 1);
        goto out;
    }
    for (i = 0; i < rounds / 2 + 2; i++) {
        int64_t end = zkl__now_ms() + 60000;
        zkl_status st = ZKL_ETIMEDOUT;
        if (zkl_latch_start(l, on_term, &events) != ZKL_OK) {
            atomic_fetch_add(&sh->errors, 1);
            break;
        }
        while (st == ZKL_ETIMEDOUT && zkl__now_ms() < end) { /* the loop's own thread dispatches */
            if (fd >= 0)
                zkl_client_dispatch(c, NULL);
            st = zkl_latch_await(l, fd >= 0 ? 5 : 60000);
        }
        if (st != ZKL_OK) {
            fprintf(stderr, "stress: latch: %s\n", zkl_errmsg());
            atomic_fetch_add(&sh->errors, 1);
            break;
        }
        if (atomic_fetch_add(&sh->inside, 1) != 0)
            atomic_fetch_add(&sh->violations, 1);
        sleep_ms(1);
        atomic_fetch_sub(&sh->inside, 1);
        if (i % 3 == 0) /* the next observer (the last one ended here, or from inside) */
            obs = observe_again(c, sh->path, fd, obs, &ob, &sh->errors);
        zkl_latch_leave(l, i % 2 ? ZKL_LATCH_NOTIFY : ZKL_LATCH_SILENT);
        if (i % 3 == 1 && zkl_latch_create(c, sh->path, "spare", &spare) == ZKL_OK) {
            /* one that waits and goes, or leads and goes from inside its GAINED */
            zkl_latch_start(spare, i % 2 ? on_term_destroy : NULL, NULL);
            if (!(i % 2))
                zkl_latch_destroy(spare);
        }
    }
out:
    atomic_fetch_add(la->done, 1);
    while (c && atomic_load(la->done) < 3) { /* the others may still need our spares gone */
        if (fd >= 0)
            zkl_client_dispatch(c, NULL);
        sleep_ms(5);
    }
    if (obs && !ob.self_destroy && zkl_observer_destroy(obs) != ZKL_OK)
        atomic_fetch_add(&sh->errors, 1);
    if (l && zkl_latch_destroy(l) != ZKL_OK)
        atomic_fetch_add(&sh->errors, 1);
    for (i = 0; c && zkl_client_close(c) == ZKL_EBUSY; i++) { /* a spare leads, and goes */
        if (i == 6000) {
            fprintf(stderr, "stress: latch: the client would not close: %s\n", zkl_errmsg());
            atomic_fetch_add(&sh->errors, 1);
            break;
        }
        if (fd >= 0)
            zkl_client_dispatch(c, NULL);
        sleep_ms(5);
    }
    return NULL;
}

static int latch_turns(void)
{
    struct shared sh;
    struct latch_arg la[3];
    pthread_t t[3];
    atomic_int done = 0;
    int i;
    memset(&sh, 0, sizeof sh);
    path_for(sh.path, sizeof sh.path, "latch");
    for (i = 0; i < 3; i++) {
        la[i].sh = &sh;
        la[i].index = i;
        la[i].done = &done;
        pthread_create(&t[i], NULL, latch_main, &la[i]);
    }
    for (i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&sh.violations) == 0, "two leaders at once");
    CHECK(atomic_load(&sh.errors) == 0, "%d errors", atomic_load(&sh.errors));
    return 0;
}

/* ---- the chroot, made by async acquires of two clients at once, some canceled ---- */

/* Delete path (a node the library leaves by design, such as a chroot) through a handle of our own.
 */
static void remove_node(const char *path)
{
    zhandle_t *zh = zookeeper_init(servers, NULL, 10000, NULL, NULL, 0);
    int i;
    for (i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 1000; i++)
        sleep_ms(10);
    if (zh) {
        (void)zoo_delete(zh, path, -1);
        zookeeper_close(zh);
    }
}

static int async_chroot(void)
{
    struct async_shared as;
    char root[256], connect[1400];
    zkl_client_options o;
    zkl_client *c[2] = {NULL, NULL};
    zkl_mutex *m[2] = {NULL, NULL};
    zkl_op *ops[8];
    int i, n = 8, waited = 0;
    memset(&as, 0, sizeof as);
    path_for(root, sizeof root, "chroot");
    snprintf(connect, sizeof connect, "%s%s", servers, root);
    zkl_client_options_init(&o);
    for (i = 0; i < 2; i++) {
        CHECK(zkl_client_open(connect, &o, &c[i]) == ZKL_OK, "open: %s", zkl_errmsg());
        CHECK(zkl_mutex_create(c[i], "/m", &m[i]) == ZKL_OK, "create");
    }
    for (i = 0; i < n; i++)
        CHECK(zkl_mutex_acquire_async(m[i % 2], 60000, i % 4 ? async_cb : async_cb_keep, &as,
                                      &ops[i]) == ZKL_OK,
              "acquire_async");
    cancel_every(ops, n, 4, &as); /* canceled as their chroot jobs run, or granted */
    while (atomic_load(&as.ended) < n && waited++ < 6000)
        sleep_ms(10);
    CHECK(atomic_load(&as.ended) == n, "%d of %d ended", atomic_load(&as.ended), n);
    CHECK(atomic_load(&as.sh.violations) == 0, "two holders at once");
    CHECK(atomic_load(&as.sh.errors) == 0, "%d errors", atomic_load(&as.sh.errors));
    CHECK(atomic_load(&as.granted) + atomic_load(&as.canceled_ok) == n, "granted %d, canceled %d",
          atomic_load(&as.granted), atomic_load(&as.canceled_ok));
    for (i = 0; i < 2; i++) {
        CHECK(zkl_mutex_destroy(m[i]) == ZKL_OK, "destroy");
        zkl_client_close(c[i]);
    }
    snprintf(connect, sizeof connect, "%s/m", root);
    remove_node(connect); /* the lock's container, if not reaped yet */
    remove_node(root);
    return 0;
}

/* ---- local hand-off: threads of one client pass one node, a remote client contends ---- */

struct cohort_run {
    struct shared sh;
    zkl_mutex *m; /* shared by the local threads */
    atomic_int holds;
};

static void *cohort_local(void *arg)
{
    struct cohort_run *r = arg;
    int i;
    for (i = 0; i < rounds; i++) {
        if (zkl_mutex_acquire(r->m, 60000) != ZKL_OK) {
            atomic_fetch_add(&r->sh.errors, 1);
            continue;
        }
        if (atomic_fetch_add(&r->sh.inside, 1) != 0)
            atomic_fetch_add(&r->sh.violations, 1);
        if (i % 4 == 0) { /* reentrancy stays per thread */
            zkl_mutex_acquire(r->m, 0);
            zkl_mutex_release(r->m);
        }
        atomic_fetch_add(&r->holds, 1);
        atomic_fetch_sub(&r->sh.inside, 1);
        if (zkl_mutex_release(r->m) != ZKL_OK)
            atomic_fetch_add(&r->sh.errors, 1);
    }
    return NULL;
}

static int local_handoff(void)
{
    struct cohort_run r;
    zkl_client *c = open_client(10000);
    pthread_t t[5];
    int i;
    memset(&r, 0, sizeof r);
    CHECK(c, "open");
    path_for(r.sh.path, sizeof r.sh.path, "cohort");
    CHECK(zkl_mutex_create(c, r.sh.path, &r.m) == ZKL_OK, "create");
    CHECK(zkl_mutex_set_local_handoff(r.m, 4, 50) == ZKL_OK, "local hand-off");
    for (i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, cohort_local, &r);
    pthread_create(&t[4], NULL, contender, &r.sh); /* another client, as in contention */
    for (i = 0; i < 5; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&r.sh.violations) == 0, "two holders at once");
    CHECK(atomic_load(&r.sh.errors) == 0, "%d errors", atomic_load(&r.sh.errors));
    CHECK(atomic_load(&r.holds) == 4 * rounds, "%d local holds", atomic_load(&r.holds));
    CHECK(zkl_mutex_local_handoffs(r.m) > 0, "no hold was passed on locally");
    CHECK(zkl_mutex_destroy(r.m) == ZKL_OK, "destroy");
    zkl_client_close(c);
    return 0;
}

static void run(const char *name, int (*fn)(void))
{
    if (fn() == 0) {
        passed++;
        printf("stress: %s ok\n", name);
    } else {
        failed++;
        printf("stress: %s FAILED\n", name);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (zkt_servers_plain(servers, sizeof servers) != 0)
        return 2;
    run("contention", contention);
    run("deep_line", deep_line);
    run("timeout_and_faults", timeout_and_faults);
    run("holder_expiry", holder_expiry);
    run("rwlock_mix", rwlock_mix);
    run("semaphore_mix", semaphore_mix);
    run("revoke_and_notice", revoke_and_notice);
    run("destroy_during_notice", destroy_during_notice);
    run("async_mix", async_mix);
    run("async_chroot", async_chroot);
    run("async_guarded", async_guarded);
    run("latch_turns", latch_turns);
    run("local_handoff", local_handoff);
    printf("stress: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
