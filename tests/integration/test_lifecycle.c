/*
 * test_lifecycle.c - what a C program may do from where (client.h, "Lifecycle
 * and callbacks"): closing and waiting from inside callbacks, the event
 * descriptor's wake-ups, destroying what another thread is inside, releases
 * that are refused, and fork(). Each case is a way a program really uses the
 * library that once crashed, hung or left two holders.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zklock/async.h"
#include "zklock/inspect.h"
#include "waiter.h"
#include "zkt.h"

/* ---- calls from inside callbacks, on the worker and in dispatch ----
 *
 * "On LOST, shut down": each callback frees what it holds and destroys its
 * lock objects, then closes the client. The close refuses (ZKL_EBUSY); it
 * returned OK and the worker, or deliver(), then read the freed client. */

typedef struct inside {
    zkl_client *c;
    zkl_mutex *m; /* a mutex of c, for the blocking acquire and the destroy */
    zkl_op *op;   /* an async hold of m, where the test has one */
    atomic_int ran;
    zkl_status close_st, acquire_st, drain_st, drain0_st, destroy_st, release_st;
    char close_msg[256], acquire_msg[256];
    int64_t acquire_ms;
} inside;

static void on_lost_try_all(zkl_client *c, zkl_conn_state st, void *ud)
{
    inside *in = ud;
    int64_t t0;
    if (st != ZKL_STATE_LOST)
        return;
    t0 = zkt_now_ms();
    in->acquire_st = zkl_mutex_acquire(in->m, ZKL_WAIT_FOREVER); /* "take it again" */
    in->acquire_ms = zkt_now_ms() - t0;
    snprintf(in->acquire_msg, sizeof in->acquire_msg, "%s", zkl_errmsg());
    in->drain_st = zkl_client_drain(c, -1);
    in->drain0_st = zkl_client_drain(c, 0);
    in->destroy_st = zkl_mutex_destroy(in->m);
    in->close_st = zkl_client_close(c);
    snprintf(in->close_msg, sizeof in->close_msg, "%s", zkl_errmsg());
    atomic_store(&in->ran, 1);
}

static int ran(void *p)
{
    return atomic_load(&((inside *)p)->ran);
}

Test(lifecycle, state_callback_close_refuses_and_waits_refuse_at_once, .timeout = 60)
{
    inside in = {0};
    char *path = zkt_path("life-state");
    zkl_client *c = zkt_client_cb(0, on_lost_try_all, &in);
    zkl_mutex *m;
    in.c = c;
    OK(zkl_mutex_create(c, path, &in.m));
    zkt_expire(c);
    cr_assert(zkt_wait_for(ran, &in, 20000), "the LOST callback never ran, or hung");
    cr_assert_eq(in.acquire_st, ZKL_EDEADLOCK, "acquire inside on_state: %s (%s)",
                 zkl_strerror(in.acquire_st), in.acquire_msg);
    cr_assert_lt(in.acquire_ms, 1000, "refused after %lld ms", (long long)in.acquire_ms);
    cr_assert(strstr(in.acquire_msg, "worker"), "%s", in.acquire_msg);
    cr_assert_eq(in.drain_st, ZKL_EDEADLOCK, "drain(-1) inside on_state: %s",
                 zkl_strerror(in.drain_st));
    cr_assert_eq(in.drain0_st, ZKL_OK, "drain(0) only looks: %s", zkl_strerror(in.drain0_st));
    cr_assert_eq(in.destroy_st, ZKL_OK, "destroy inside on_state: %s", zkl_strerror(in.destroy_st));
    cr_assert_eq(in.close_st, ZKL_EBUSY, "close inside on_state: %s", zkl_strerror(in.close_st));
    cr_assert(strstr(in.close_msg, "inside a callback"), "%s", in.close_msg);
    /* the client lives on, and is closed from here */
    OK(zkl_mutex_create(c, path, &m));
    OK(zkl_mutex_acquire(m, 10000));
    OK(zkl_mutex_release(m));
    OK(zkl_mutex_destroy(m));
    OK(zkl_client_close(c));
    free(path);
}

/* A lock's own state callback (its hold is an async one: any thread may let it go). */
static void lock_state_close(void *lock, zkl_conn_state st, void *ud)
{
    inside *in = ud;
    (void)lock;
    if (st != ZKL_STATE_LOST)
        return;
    in->release_st = zkl_op_release(in->op);
    in->destroy_st = zkl_mutex_destroy(in->m); /* from inside its own callback */
    in->close_st = zkl_client_close(in->c);
    atomic_store(&in->ran, 1);
}

static void granted_flag(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    atomic_store((atomic_int *)ud, 1);
}

static int flag_set(void *p)
{
    return atomic_load((atomic_int *)p);
}

Test(lifecycle, lock_state_callback_close_refuses, .timeout = 60)
{
    inside in = {0};
    char *path = zkt_path("life-lockstate");
    zkl_client *c = zkt_client(0);
    atomic_int got = 0;
    in.c = c;
    OK(zkl_mutex_create(c, path, &in.m));
    OK(zkl_mutex_on_state(in.m, lock_state_close, &in));
    OK(zkl_mutex_acquire_async(in.m, 10000, granted_flag, &got, &in.op));
    cr_assert(zkt_wait_for(flag_set, &got, 20000));
    zkt_expire(c);
    cr_assert(zkt_wait_for(ran, &in, 20000), "the lock's LOST callback never ran");
    cr_assert_eq(in.release_st, ZKL_ELOST, "%s", zkl_strerror(in.release_st));
    cr_assert_eq(in.destroy_st, ZKL_OK, "%s", zkl_strerror(in.destroy_st));
    cr_assert_eq(in.close_st, ZKL_EBUSY, "%s", zkl_strerror(in.close_st));
    zkt_sleep_ms(50); /* the worker is past the callback */
    OK(zkl_client_close(c));
    free(path);
}

static void completion_close(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    inside *in = ud;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    in->release_st = zkl_op_release(op); /* from inside: freed when this returns */
    in->destroy_st = zkl_mutex_destroy(in->m);
    in->close_st = zkl_client_close(in->c);
    snprintf(in->close_msg, sizeof in->close_msg, "%s", zkl_errmsg());
    atomic_store(&in->ran, 1);
}

Test(lifecycle, worker_completion_close_refuses, .timeout = 60)
{
    inside in = {0};
    char *path = zkt_path("life-completion");
    zkl_client *c = zkt_client(0);
    zkl_op *op;
    in.c = c;
    OK(zkl_mutex_create(c, path, &in.m));
    OK(zkl_mutex_acquire_async(in.m, 10000, completion_close, &in, &op));
    cr_assert(zkt_wait_for(ran, &in, 20000), "the completion never ran");
    cr_assert_eq(in.release_st, ZKL_OK, "release inside: %s", zkl_strerror(in.release_st));
    cr_assert_eq(in.destroy_st, ZKL_OK, "destroy inside: %s", zkl_strerror(in.destroy_st));
    cr_assert_eq(in.close_st, ZKL_EBUSY, "%s", zkl_strerror(in.close_st));
    zkt_sleep_ms(50); /* the worker is past the callback */
    OK(zkl_client_close(c));
    free(path);
}

/* A completion run by zkl_client_dispatch, on this thread: the same refusal,
 * and the client is whole after it (deliver() reads it once the callback
 * has returned). */
Test(lifecycle, dispatched_completion_close_refuses, .timeout = 60)
{
    inside in = {0};
    char *path = zkt_path("life-dispatch");
    zkl_client *c = zkt_client(0);
    zkl_op *op;
    struct pollfd p = {0};
    int fd, n = 0;
    in.c = c;
    OK(zkl_client_event_fd(c, &fd));
    OK(zkl_mutex_create(c, path, &in.m));
    OK(zkl_mutex_acquire_async(in.m, 10000, completion_close, &in, &op));
    p.fd = fd;
    p.events = POLLIN;
    cr_assert_eq(poll(&p, 1, 20000), 1, "the descriptor never became readable");
    OK(zkl_client_dispatch(c, &n));
    cr_assert_eq(n, 1);
    cr_assert(atomic_load(&in.ran));
    cr_assert_eq(in.destroy_st, ZKL_OK, "destroy inside: %s", zkl_strerror(in.destroy_st));
    cr_assert_eq(in.close_st, ZKL_EBUSY, "%s", zkl_strerror(in.close_st));
    OK(zkl_client_close(c));
    free(path);
}

/* ---- the event descriptor is readable whenever a report waits ---- */

static atomic_int spin_stop;

static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load(&spin_stop))
        ;
    return NULL;
}

static void count_release(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    cr_assert_eq(zkl_op_release(op), ZKL_OK);
    atomic_fetch_add((atomic_int *)ud, 1);
}

#define BURSTS 40
#define BURST 8

Test(lifecycle, event_fd_never_swallows_a_report, .timeout = 240)
{
    zkl_client *c = zkt_client(0);
    zkl_mutex *m[BURST];
    zkl_op *op;
    pthread_t spinners[2];
    atomic_int done = 0;
    int fd, i, b, want = 0, spinning = getenv("ZKT_VALGRIND") ? 0 : 2;
    char *paths[BURST];
    OK(zkl_client_event_fd(c, &fd));
    zkt_fault_dispatch_pause(c, 2000); /* a preemption between the two steps */
    for (i = 0; i < BURST; i++) {
        paths[i] = zkt_path("life-efd");
        OK(zkl_mutex_create(c, paths[i], &m[i]));
    }
    /* two busy loops on the cores; not under valgrind, which runs one
     * thread at a time (they would starve the session) */
    atomic_store(&spin_stop, 0);
    for (i = 0; i < spinning; i++)
        pthread_create(&spinners[i], NULL, spin, NULL);
    for (b = 0; b < BURSTS; b++) {
        int64_t t0 = zkt_now_ms();
        for (i = 0; i < BURST; i++)
            OK(zkl_mutex_acquire_async(m[i], 10000, count_release, &done, &op));
        want += BURST;
        while (atomic_load(&done) < want) {
            struct pollfd p = {fd, POLLIN, 0};
            cr_assert_lt(zkt_now_ms() - t0, 60000, "burst %d: reports never came", b);
            if (poll(&p, 1, 1000) == 0 && zkt_reports_queued(c) > 0 && poll(&p, 1, 1000) == 0) {
                /* queued, and still not readable a second after (its
                 * writer writes right after it queues): stranded */
                atomic_store(&spin_stop, 1);
                cr_assert_fail("burst %d: %d report(s) wait behind a descriptor that reads "
                               "not ready",
                               b, zkt_reports_queued(c));
            }
            OK(zkl_client_dispatch(c, NULL));
        }
    }
    atomic_store(&spin_stop, 1);
    for (i = 0; i < spinning; i++)
        pthread_join(spinners[i], NULL);
    for (i = 0; i < BURST; i++) {
        OK(zkl_mutex_destroy(m[i]));
        free(paths[i]);
    }
    OK(zkl_client_close(c));
}

/* ---- destroy while another thread is inside a call on the object ---- */

typedef struct waiter {
    zkl_status (*acquire)(void *obj);
    void *obj;
    atomic_int started, done;
    zkl_status st;
} waiter;

static void *wait_in(void *arg)
{
    waiter *w = arg;
    atomic_store(&w->started, 1);
    w->st = w->acquire(w->obj);
    atomic_store(&w->done, 1);
    return NULL;
}

static zkl_status mutex_wait(void *m)
{
    zkl_status st = zkl_mutex_acquire(m, 30000);
    if (st == ZKL_OK)
        st = zkl_mutex_release(m);
    return st;
}

static zkl_status write_wait(void *l)
{
    zkl_status st = zkl_rwlock_write_acquire(l, 30000);
    if (st == ZKL_OK)
        st = zkl_rwlock_write_release(l);
    return st;
}

static zkl_status sem_wait(void *s)
{
    zkl_lease *l;
    zkl_status st = zkl_semaphore_acquire(s, 30000, &l);
    if (st == ZKL_OK)
        st = zkl_lease_return(l);
    return st;
}

static zkl_status semmutex_wait(void *m)
{
    zkl_status st = zkl_semaphore_mutex_acquire(m, 30000);
    if (st == ZKL_OK)
        st = zkl_semaphore_mutex_release(m);
    return st;
}

static int waiter_done(void *p)
{
    return atomic_load(&((waiter *)p)->done);
}

/* w waits on path (held by the other client); destroy refuses, naming the
 * waiter, and nothing is freed: the waiter gets the lock once the holder lets go. */
static void destroy_refused_while(waiter *w, zkl_status (*destroy)(void *), void (*let_go)(void *),
                                  void *held)
{
    pthread_t t;
    zkl_status st;
    pthread_create(&t, NULL, wait_in, w);
    while (!atomic_load(&w->started))
        zkt_sleep_ms(1);
    zkt_sleep_ms(300); /* in its wait */
    st = destroy(w->obj);
    cr_assert_eq(st, ZKL_EBUSY, "destroy under a waiter: %s", zkl_strerror(st));
    cr_assert(strstr(zkl_errmsg(), "inside a call"), "%s", zkl_errmsg());
    let_go(held);
    cr_assert(zkt_wait_for(waiter_done, w, 20000), "the waiter never got the lock");
    pthread_join(t, NULL);
    cr_assert_eq(w->st, ZKL_OK, "the waiter: %s", zkl_strerror(w->st));
    OK(destroy(w->obj));
}

static zkl_status mutex_destroy(void *m)
{
    return zkl_mutex_destroy(m);
}
static void mutex_let_go(void *m)
{
    OK(zkl_mutex_release(m));
}
static zkl_status rwlock_destroy(void *l)
{
    return zkl_rwlock_destroy(l);
}
static void rwlock_let_go(void *l)
{
    OK(zkl_rwlock_write_release(l));
}
static zkl_status sem_destroy(void *s)
{
    return zkl_semaphore_destroy(s);
}
static void lease_let_go(void *l)
{
    OK(zkl_lease_return(l));
}
static zkl_status semmutex_destroy(void *m)
{
    return zkl_semaphore_mutex_destroy(m);
}
static void semmutex_let_go(void *m)
{
    OK(zkl_semaphore_mutex_release(m));
}

Test(lifecycle, destroy_refuses_while_a_thread_waits_in_it, .timeout = 120)
{
    zkl_client *h = zkt_client(0), *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *p1 = zkt_path("life-destroy-m"), *p2 = zkt_path("life-destroy-rw"),
         *p3 = zkt_path("life-destroy-sem"), *p4 = zkt_path("life-destroy-smx");
    zkl_mutex *hm, *m;
    zkl_rwlock *hl, *l;
    zkl_semaphore *hs, *s;
    zkl_semaphore_mutex *hx, *x;
    zkl_lease *lease;
    waiter w1 = {.acquire = mutex_wait}, w2 = {.acquire = write_wait}, w3 = {.acquire = sem_wait},
           w4 = {.acquire = semmutex_wait};

    OK(zkl_mutex_create(h, p1, &hm));
    OK(zkl_mutex_create(c, p1, &m));
    OK(zkl_mutex_acquire(hm, 10000));
    w1.obj = m;
    destroy_refused_while(&w1, mutex_destroy, mutex_let_go, hm);

    OK(zkl_rwlock_create(h, p2, &hl));
    OK(zkl_rwlock_create(c, p2, &l));
    OK(zkl_rwlock_write_acquire(hl, 10000));
    w2.obj = l;
    destroy_refused_while(&w2, rwlock_destroy, rwlock_let_go, hl);

    OK(zkl_semaphore_create(h, p3, 1, &hs));
    OK(zkl_semaphore_create(c, p3, 1, &s));
    OK(zkl_semaphore_acquire(hs, 10000, &lease));
    w3.obj = s;
    destroy_refused_while(&w3, sem_destroy, lease_let_go, lease);

    /* the semaphore mutex refuses through its semaphore, and stays whole */
    OK(zkl_semaphore_mutex_create(h, p4, &hx));
    OK(zkl_semaphore_mutex_create(c, p4, &x));
    OK(zkl_semaphore_mutex_acquire(hx, 10000));
    w4.obj = x;
    destroy_refused_while(&w4, semmutex_destroy, semmutex_let_go, hx);

    OK(zkl_mutex_destroy(hm));
    OK(zkl_rwlock_destroy(hl));
    OK(zkl_semaphore_destroy(hs));
    OK(zkl_semaphore_mutex_destroy(hx));
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0);
    cr_assert_eq(zkt_children_settle(zh, p2, 0), 0);
    OK(zkl_client_close(c));
    OK(zkl_client_close(h));
    zookeeper_close(zh);
    free(p1);
    free(p2);
    free(p3);
    free(p4);
}

/* ---- a refused release changes nothing ---- */

static void *release_set(void *ml)
{
    return (void *)(intptr_t)zkl_multilock_release(ml);
}

Test(lifecycle, multilock_release_by_another_thread_changes_nothing, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *p1 = zkt_path("life-ml-a"), *p2 = zkt_path("life-ml-b");
    zkl_mutex *a, *b;
    zkl_multilock *ml;
    pthread_t t;
    void *ret;
    OK(zkl_mutex_create(c, p1, &a));
    OK(zkl_mutex_create(c, p2, &b));
    OK(zkl_multilock_create(&ml));
    OK(zkl_multilock_add_mutex(ml, a));
    OK(zkl_multilock_add_mutex(ml, b));
    OK(zkl_multilock_acquire(ml, 10000));
    pthread_create(&t, NULL, release_set, ml);
    pthread_join(t, &ret);
    cr_assert_eq((zkl_status)(intptr_t)ret, ZKL_ENOTOWNER);
    cr_assert(zkl_mutex_is_held(a) && zkl_mutex_is_held(b), "a refused release let go");
    cr_assert_eq(zkl_multilock_destroy(ml), ZKL_EBUSY, "destroyed under its holder");
    OK(zkl_multilock_release(ml)); /* the owner's own release still works */
    cr_assert(!zkl_mutex_is_held(a) && !zkl_mutex_is_held(b));
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0);
    cr_assert_eq(zkt_children_settle(zh, p2, 0), 0);
    OK(zkl_multilock_destroy(ml));
    OK(zkl_mutex_destroy(a));
    OK(zkl_mutex_destroy(b));
    OK(zkl_client_close(c));
    zookeeper_close(zh);
    free(p1);
    free(p2);
}

static void never(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    (void)ud;
    cr_assert_fail("a refused acquire called back: %s (%s)", zkl_strerror(st), msg);
}

Test(lifecycle, async_multilock_refuses_a_lock_added_twice, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *p1 = zkt_path("life-ml-twice"), *p2 = zkt_path("life-ml-rw");
    zkl_mutex *a;
    zkl_rwlock *rw;
    zkl_multilock *ml, *ml2;
    zkl_op *op = (zkl_op *)&op;
    OK(zkl_mutex_create(c, p1, &a));
    OK(zkl_rwlock_create(c, p2, &rw));
    OK(zkl_multilock_create(&ml));
    OK(zkl_multilock_add_mutex(ml, a));
    OK(zkl_multilock_add_mutex(ml, a));
    cr_assert_eq(zkl_multilock_acquire_async(ml, ZKL_WAIT_FOREVER, never, NULL, &op), ZKL_EINVAL);
    cr_assert_null(op);
    cr_assert(strstr(zkl_errmsg(), "same lock"), "%s", zkl_errmsg());
    OK(zkl_multilock_create(&ml2));
    OK(zkl_multilock_add_read(ml2, rw));
    OK(zkl_multilock_add_write(ml2, rw));
    cr_assert_eq(zkl_multilock_acquire_async(ml2, 1000, never, NULL, &op), ZKL_EINVAL);
    /* thread mode re-enters the mutex */
    OK(zkl_multilock_acquire(ml, 10000));
    OK(zkl_multilock_release(ml));
    OK(zkl_multilock_destroy(ml));
    OK(zkl_multilock_destroy(ml2));
    OK(zkl_mutex_destroy(a));
    OK(zkl_rwlock_destroy(rw));
    OK(zkl_client_close(c));
    free(p1);
    free(p2);
}

/* ---- acquire_many: one deadline, a cap ---- */

Test(lifecycle, semaphore_acquire_many_keeps_one_deadline, .timeout = 120)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("life-many");
    zkl_semaphore *s;
    zkl_lease **v = calloc(2000, sizeof *v);
    zkl_op *op = (zkl_op *)&op;
    int64_t t0, took;
    char leases[512];
    OK(zkl_semaphore_create(c, path, 100000, &s));
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_semaphore_acquire_many(s, 200, 0, v), ZKL_ETIMEDOUT);
    took = zkt_now_ms() - t0;
    /* one try, whose calls get at least ZKL_CALL_MIN_MS, 1000 ms
     * (src/base/tuning.h), and 500 ms more: a fresh clone's plain run,
     * beside two builds, took 695 ms */
    cr_assert_lt(took, 1500, "timeout 0 took %lld ms", (long long)took);
    cr_assert_null(v[0]);
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_semaphore_acquire_many(s, 1000, 300, v), ZKL_ETIMEDOUT);
    took = zkt_now_ms() - t0;
    cr_assert_lt(took, 1500, "a 300 ms timeout took %lld ms", (long long)took);
    cr_assert(strstr(zkl_errmsg(), "by the deadline"), "%s", zkl_errmsg());
    cr_assert_eq(zkl_semaphore_acquire_many(s, 2000, 1000, v), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_acquire_async(s, 0x7fffffff, 1000, never, NULL, &op), ZKL_EINVAL);
    cr_assert_null(op);
    OK(zkl_semaphore_acquire_many(s, 3, 10000, v));
    OK(zkl_lease_return(v[0]));
    OK(zkl_lease_return(v[1]));
    OK(zkl_lease_return(v[2]));
    snprintf(leases, sizeof leases, "%s/leases", path);
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0, "a lease left behind");
    OK(zkl_semaphore_destroy(s));
    OK(zkl_client_close(c));
    zookeeper_close(zh);
    free(v);
    free(path);
}

/* n leases cost linear work: two listings a round, not one of up to n names
 * per lease (n = 5000 took 91 s). And the count is kept: a round never takes
 * more than the semaphore has. */
Test(lifecycle, semaphore_acquire_many_is_linear_in_n, .timeout = 240)
{
    zkl_client *c = zkt_client(0), *o = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("life-many-linear"), leases[512];
    zkl_semaphore *s, *so;
    zkl_lease **v = calloc(ZKL_SEMAPHORE_MANY_MAX, sizeof *v), *other[5];
    uint64_t lists;
    int64_t t0, took;
    int i;
    OK(zkl_semaphore_create(c, path, 100000, &s));
    lists = zkt_list_requests(c);
    t0 = zkt_now_ms();
    OK(zkl_semaphore_acquire_many(s, ZKL_SEMAPHORE_MANY_MAX, 120000, v));
    took = zkt_now_ms() - t0;
    cr_assert_leq(zkt_list_requests(c) - lists, 4, "%llu listings for %d leases",
                  (unsigned long long)(zkt_list_requests(c) - lists), ZKL_SEMAPHORE_MANY_MAX);
    snprintf(leases, sizeof leases, "%s/leases", path);
    cr_assert_eq(zkt_children(zh, leases), ZKL_SEMAPHORE_MANY_MAX);
    cr_log_info("%d leases in %lld ms", ZKL_SEMAPHORE_MANY_MAX, (long long)took);
    for (i = 0; i < ZKL_SEMAPHORE_MANY_MAX; i++)
        OK(zkl_lease_return(v[i]));
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0, "a lease left behind");
    OK(zkl_semaphore_destroy(s));
    /* another process's leases count: 5 of 8 out, 3 more fit, 4 wait */
    OK(zkl_semaphore_create(c, path, 8, &s));
    OK(zkl_semaphore_create(o, path, 8, &so));
    OK(zkl_semaphore_acquire_many(so, 5, 10000, other));
    OK(zkl_semaphore_acquire_many(s, 3, 10000, v));
    cr_assert_eq(zkt_children(zh, leases), 8);
    cr_assert_eq(zkl_semaphore_acquire_many(s, 4, 500, v + 3), ZKL_ETIMEDOUT);
    cr_assert_eq(zkt_children_settle(zh, leases, 8), 8, "the refused leases went");
    for (i = 0; i < 5; i++)
        OK(zkl_lease_return(other[i]));
    OK(zkl_semaphore_acquire_many(s, 4, 10000, v + 3)); /* now they fit */
    for (i = 0; i < 7; i++)
        OK(zkl_lease_return(v[i]));
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0);
    OK(zkl_semaphore_destroy(so));
    OK(zkl_semaphore_destroy(s));
    OK(zkl_client_close(o));
    OK(zkl_client_close(c));
    zookeeper_close(zh);
    free(v);
    free(path);
}

/* ---- options out of range are refused at once ---- */

Test(lifecycle, session_timeout_out_of_range_is_refused, .timeout = 60)
{
    static const int bad[] = {1, 99, 24 * 3600 * 1000 + 1, 1 << 30, 0x7fffffff};
    zkl_client_options o;
    zkl_client *c = NULL;
    int64_t t0;
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zkl_client_options_init(&o);
        o.session_timeout_ms = bad[i];
        t0 = zkt_now_ms();
        cr_assert_eq(zkl_client_open(zkt_servers(), &o, &c), ZKL_EINVAL, "%d accepted", bad[i]);
        cr_assert_lt(zkt_now_ms() - t0, 1000);
        cr_assert(strstr(zkl_errmsg(), "session_timeout_ms"), "%s", zkl_errmsg());
        cr_assert_null(c);
    }
    zkl_client_options_init(&o);
    o.session_timeout_ms = ZKL_SESSION_TIMEOUT_MIN_MS;
    OK(zkl_client_open(zkt_servers(), &o, &c));
    cr_assert_gt(zkl_client_session_timeout(c), 0);
    OK(zkl_client_close(c));
}

/* ---- fork(): the child never believes it holds what the parent holds ---- */

/* What the child checks, one exit code per check (0: all held). */
static int child_checks(zkl_client *c, zkl_mutex *m, zkl_mutex *am, zkl_op *op, zkl_semaphore *s,
                        zkl_lease *l)
{
    int64_t v;
    int fd;
    if (zkl_mutex_is_held(m) || zkl_op_is_held(op) || zkl_lease_is_valid(l))
        return 10; /* a second holder */
    if (zkl_mutex_fencing_token(m, &v) != ZKL_ELOST ||
        zkl_mutex_lease_remaining(m, &v) != ZKL_ELOST)
        return 11;
    if (zkl_client_lease_end(c, &v) != ZKL_ELOST || zkl_client_session_id(c) != 0)
        return 12;
    if (zkl_mutex_acquire(m, 1000) != ZKL_ECLOSED || !strstr(zkl_errmsg(), "fork"))
        return 13;
    if (zkl_client_drain(c, 1000) != ZKL_ECLOSED || zkl_client_event_fd(c, &fd) != ZKL_ECLOSED)
        return 14;
    if (zkl_mutex_release(m) != ZKL_ELOST || zkl_op_release(op) != ZKL_ELOST ||
        zkl_lease_return(l) != ZKL_ELOST)
        return 15; /* a release "OK" that sent nothing */
    if (zkl_mutex_destroy(m) != ZKL_OK || zkl_mutex_destroy(am) != ZKL_OK ||
        zkl_semaphore_destroy(s) != ZKL_OK)
        return 16;
    if (zkl_client_close(c) != ZKL_OK) /* no thread to join here */
        return 17;
    return 0;
}

/* The test's own allocations, reachable from here in the child, which
 * exits without freeing them (it cannot close the raw handle: its threads
 * are the parent's). */
zhandle_t *zkt_fork_zh; /* (not static: the compiler keeps what others may read) */
char *zkt_fork_paths[3];

Test(lifecycle, a_forked_child_holds_nothing_and_sends_nothing, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_fork_zh = zkt_raw();
    char *p1 = zkt_fork_paths[0] = zkt_path("life-fork-m"),
         *p2 = zkt_fork_paths[1] = zkt_path("life-fork-a"),
         *p3 = zkt_fork_paths[2] = zkt_path("life-fork-s"), leases[512];
    zkl_mutex *m, *am;
    zkl_semaphore *s;
    zkl_lease *l;
    zkl_op *op;
    atomic_int got = 0;
    int64_t token, token_after, sid = zkl_client_session_id(c);
    int status;
    pid_t pid;
    OK(zkl_mutex_create(c, p1, &m));
    OK(zkl_mutex_create(c, p2, &am));
    OK(zkl_semaphore_create(c, p3, 2, &s));
    OK(zkl_mutex_acquire(m, 10000));
    OK(zkl_mutex_fencing_token(m, &token));
    OK(zkl_mutex_acquire_async(am, 10000, granted_flag, &got, &op));
    cr_assert(zkt_wait_for(flag_set, &got, 20000));
    OK(zkl_semaphore_acquire(s, 10000, &l));
    pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(child_checks(c, m, am, op, s, l));
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child crashed (status %d)", status);
    cr_assert_eq(WEXITSTATUS(status), 0, "the child's check %d failed", WEXITSTATUS(status));
    /* the parent is untouched: same session, same holds, their nodes still there */
    cr_assert_eq(zkl_client_session_id(c), sid);
    cr_assert(zkl_mutex_is_held(m) && zkl_op_is_held(op) && zkl_lease_is_valid(l));
    OK(zkl_mutex_fencing_token(m, &token_after));
    cr_assert_eq(token_after, token);
    cr_assert_eq(zkt_children(zh, p1), 1);
    cr_assert_eq(zkt_children(zh, p2), 1);
    snprintf(leases, sizeof leases, "%s/leases", p3);
    cr_assert_eq(zkt_children(zh, leases), 1);
    OK(zkl_mutex_release(m));
    OK(zkl_op_release(op));
    OK(zkl_lease_return(l));
    cr_assert_eq(zkt_children_settle(zh, p1, 0), 0);
    cr_assert_eq(zkt_children_settle(zh, p2, 0), 0);
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0);
    OK(zkl_mutex_destroy(m));
    OK(zkl_mutex_destroy(am));
    OK(zkl_semaphore_destroy(s));
    OK(zkl_client_close(c));
    zookeeper_close(zh);
    free(p1);
    free(p2);
    free(p3);
}

/* A fork-in-a-window test's parts: a client, a raw handle and a path (the
 * last two kept reachable for the child: above), and a mutex on the path. */
typedef struct fork_case {
    zkl_client *c;
    zhandle_t *zh;
    char *p;
    zkl_mutex *m;
} fork_case;

/* The parts, with the mutex held. */
static fork_case fork_case_begin(const char *name)
{
    fork_case f;
    f.c = zkt_client(0);
    f.zh = zkt_fork_zh = zkt_raw();
    f.p = zkt_fork_paths[0] = zkt_path(name);
    OK(zkl_mutex_create(f.c, f.p, &f.m));
    OK(zkl_mutex_acquire(f.m, 10000));
    return f;
}

/* Fork a child that destroys the mutex (and the n more) and closes its copy
 * of the client; it exits 0. */
static void fork_child_closes(const fork_case *f, zkl_mutex *const *more, int n)
{
    int status, i;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int bad = zkl_mutex_destroy(f->m) != ZKL_OK;
        for (i = 0; i < n; i++)
            bad |= zkl_mutex_destroy(more[i]) != ZKL_OK;
        _exit(bad || zkl_client_close(f->c) != ZKL_OK);
    }
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status %d", status);
}

/* The parent's end: fault site off, the deletes drained, all of it let go. */
static void fork_case_end(fork_case *f, zkl__fault_site site)
{
    zkt_fault_set(f->c, site, 0);
    OK(zkl_client_drain(f->c, 10000));
    OK(zkl_mutex_destroy(f->m));
    OK(zkl_client_close(f->c));
    zookeeper_close(f->zh);
    free(f->p);
}

/*
 * A fork() while the worker tries a queued delete: the try, off the queue,
 * and its request, answered while the worker is not yet back from it, are
 * kept where the child reaches them from the client (services/cleanup.c),
 * not only on the worker's stack, of which the child has no copy. The child
 * closes its copy of the client, which frees them: under valgrind, nothing
 * of the child is definitely lost. (zklock(1)'s lease watchdog is such a
 * child, forked as the lock comes: a fresh clone's test_restart, its wait
 * riding out a server crash, found it losing both, 2026-11-30.) The worker
 * stays in the window by a fault (KEPT_CALL_MS); a fork that misses it
 * proves nothing, and fails nothing.
 */
Test(lifecycle, a_fork_while_a_background_delete_is_tried_loses_nothing, .timeout = 60)
{
    fork_case f = fork_case_begin("life-fork-bg");
    zkt_fault_delete_lost(f.c, 1); /* the release's delete goes to the background queue */
    zkt_fault_set(f.c, ZKL__FAULT_KEPT_CALL_MS, 3000);
    OK(zkl_mutex_release(f.m));
    cr_assert_eq(zkt_children_settle(f.zh, f.p, 0), 0, "the background delete never landed");
    zkt_sleep_ms(300); /* its answer delivered: the worker is in the fault's sleep */
    fork_child_closes(&f, NULL, 0);
    fork_case_end(&f, ZKL__FAULT_KEPT_CALL_MS);
}

/*
 * A fork() while a flush sends a held-back delete (the release's delete,
 * held back a moment for the next create to carry, then sent by the
 * worker): the delete, off the held-back list, stays on the flushing list
 * until it is sent (services/cleanup.c), where the child reaches it. A
 * fresh clone under two busy loops found valgrind's child of
 * a_forked_child_holds_nothing_and_sends_nothing losing it (123 bytes,
 * from the semaphore's internal lock, released just before the fork),
 * 2026-11-30. The worker stays in the window by a fault (HELD_BACK_SEND_MS).
 */
Test(lifecycle, a_fork_while_a_held_back_delete_is_flushed_loses_nothing, .timeout = 60)
{
    fork_case f = fork_case_begin("life-fork-flush");
    zkt_fault_set(f.c, ZKL__FAULT_HELD_BACK_SEND_MS, 3000);
    OK(zkl_mutex_release(f.m)); /* held back a millisecond, then the worker's flush takes it */
    zkt_sleep_ms(100);          /* the worker is in the fault's sleep, the delete not sent */
    cr_assert_eq(zkt_children(f.zh, f.p), 1, "the held-back delete went early");
    zkt_sleep_ms(300); /* that listing's answer is through the raw handle's threads */
    fork_child_closes(&f, NULL, 0);
    cr_assert_eq(zkt_children_settle(f.zh, f.p, 0), 0, "the held-back delete never landed");
    fork_case_end(&f, ZKL__FAULT_HELD_BACK_SEND_MS);
}

/*
 * A fork() while the deletes a create carried are sent apart, its multi
 * having failed: each stays on the acquire's list until it is freed
 * (services/cleanup.c, zkl__held_back_done), where the child reaches it
 * through the operation its close keeps (core/engine/engine.c). Freed from
 * a list on the stack, the second was reachable only from the first, freed
 * already (valgrind's child lost it). Two releases are held back (a long
 * window); an operator deletes the second's node, so the multi that carries
 * both with the next create fails on it; the first delete then lands apart,
 * and the acquire waits in the fault (HELD_BACK_SEND_MS) before the second.
 */
Test(lifecycle, a_fork_while_a_failed_multi_sends_its_deletes_apart_loses_nothing, .timeout = 60)
{
    fork_case f = fork_case_begin("life-fork-multi");
    char *p2 = zkt_path("life-fork-multi-2"), *gone;
    zkl_mutex *m2, *m3;
    zkt_waiter w = {0};
    zkt_defer_window(f.c, 20 * 1000 * 1000); /* held back until the next create takes them */
    OK(zkl_mutex_create(f.c, p2, &m2));
    OK(zkl_mutex_create(f.c, f.p, &m3));
    OK(zkl_mutex_acquire(m2, 10000));
    OK(zkl_mutex_release(m2)); /* held back first: sent apart first */
    gone = zkt_child_in_line(f.zh, f.p, 0);
    OK(zkl_mutex_release(f.m));
    cr_assert_eq(zoo_delete(f.zh, gone, -1), ZOK, "the operator's delete");
    zkt_fault_set(f.c, ZKL__FAULT_HELD_BACK_SEND_MS, 3000);
    zkt_waiter_start(&w, m3, 30000, NULL); /* its create carries both; the multi fails */
    cr_assert_eq(zkt_children_settle(f.zh, p2, 0), 0, "the first delete sent apart never landed");
    zkt_sleep_ms(300); /* that listing's answer is through the raw handle's threads */
    fork_child_closes(&f, (zkl_mutex *[]){m2, m3}, 2);
    zkt_waiter_until_done(&w);
    OK(w.st);
    zkt_waiter_release(&w);
    OK(zkl_mutex_destroy(m2));
    OK(zkl_mutex_destroy(m3));
    zkt_fault_set(f.c, ZKL__FAULT_HELD_BACK_SEND_MS, 0);
    OK(zkl_client_drain(f.c, 10000));
    cr_assert_eq(zkt_children(f.zh, f.p), 0, "a delete was lost");
    cr_assert_eq(zkt_children(f.zh, p2), 0, "a delete was lost");
    fork_case_end(&f, ZKL__FAULT_HELD_BACK_SEND_MS);
    free(gone);
    free(p2);
}

/* ---- a server address where something else answers ---- */

/* An HTTP server of a kind: it answers anything with a 400 and keeps the
 * connection open (as keep-alive servers do). */
typedef struct http_fake {
    int lfd, port;
    int conns[64];
    atomic_int n;
    pthread_t t;
} http_fake;

static void *http_serve(void *arg)
{
    static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n"
                                "Connection: keep-alive\r\n\r\nBad Request";
    http_fake *h = arg;
    for (;;) {
        char buf[512];
        int fd = accept(h->lfd, NULL, NULL);
        if (fd < 0)
            return NULL; /* closed: the test is over */
        (void)!read(fd, buf, sizeof buf);
        (void)!write(fd, reply, sizeof reply - 1);
        if (atomic_load(&h->n) < 64)
            h->conns[atomic_fetch_add(&h->n, 1)] = fd;
        else
            close(fd);
    }
}

static void http_start(http_fake *h)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    h->lfd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(h->lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(h->lfd, 16), 0);
    getsockname(h->lfd, (struct sockaddr *)&a, &len);
    h->port = ntohs(a.sin_port);
    pthread_create(&h->t, NULL, http_serve, h);
}

static void http_stop(http_fake *h)
{
    int i;
    shutdown(h->lfd, SHUT_RDWR);
    close(h->lfd);
    pthread_join(h->t, NULL);
    for (i = 0; i < atomic_load(&h->n); i++)
        close(h->conns[i]);
}

/* How long a failed open takes here where nothing listens (the machine's
 * own overhead, large under valgrind), with a connect timeout of 1 s. */
static int64_t refused_open_ms(void)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char where[64];
    zkl_client_options o;
    zkl_client *c = NULL;
    int64_t t0;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd); /* nothing listens there now */
    snprintf(where, sizeof where, "127.0.0.1:%d", ntohs(a.sin_port));
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 1000;
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_client_open(where, &o, &c), ZKL_ECONNECT);
    return zkt_now_ms() - t0;
}

Test(lifecycle, opens_and_closes_keep_their_bounds_against_a_wrong_server, .timeout = 120)
{
    http_fake h = {0};
    char alone[64], list[256];
    zkl_client_options o;
    int i;
    int64_t base = refused_open_ms();
    http_start(&h);
    snprintf(alone, sizeof alone, "127.0.0.1:%d", h.port);
    snprintf(list, sizeof list, "127.0.0.1:%d,%s", h.port, zkt_servers());
    zkl_client_options_init(&o);
    o.connect_timeout_ms = 1000;
    for (i = 0; i < 6; i++) {
        const char *where = i % 2 ? list : alone;
        zkl_client *c = NULL;
        int64_t t0 = zkt_now_ms(), took;
        zkl_status st = zkl_client_open(where, &o, &c);
        took = zkt_now_ms() - t0;
        /* (the list's open may spend its connect timeout on the wrong host:
         * the ZooKeeper client reads its HTTP reply as a length of 1 GiB or
         * so, and under valgrind that allocation alone stalls every thread,
         * the lone wrong host's open too: 1001 to 2238 ms there on
         * libzookeeper_mt, against 1000 to 1130 where nothing listens; on
         * libzookeeper_st the poller makes it holding the handle's mutex,
         * which the failed open's end waits for: 3925 ms seen once; 2110
         * to 2818 ms alone on a quiet machine, and 5180 ms on a fresh
         * clone beside another valgrind test, 2026-11-30. Under valgrind
         * the bound says the open ends, in 8 s more than where nothing
         * listens; the native bounds are plain's and ASan's) */
        cr_assert_lt(took,
                     base + (getenv("ZKT_VALGRIND") ? 8000
                             : where == alone       ? 1200
                                                    : 2000),
                     "open %d on %s took %lld ms (connect timeout 1000; %lld where nothing "
                     "listens)",
                     i, where, (long long)took, (long long)base);
        if (where == alone)
            cr_assert_eq(st, ZKL_ECONNECT, "open %d: %s", i, zkl_strerror(st));
        else
            cr_assert(st == ZKL_OK || st == ZKL_ECONNECT, "open %d: %s", i, zkl_strerror(st));
        if (st != ZKL_OK)
            continue;
        t0 = zkt_now_ms();
        OK(zkl_client_close(c));
        took = zkt_now_ms() - t0;
        cr_assert_lt(took, 2800, "close %d took %lld ms", i, (long long)took);
    }
    http_stop(&h);
}

/* ---- a child that is not a lock node, in the way, is named ---- */

Test(lifecycle, a_child_in_the_way_is_named, .timeout = 60)
{
    static const char *const in_way[] = {"0", "lock-", "x-lock-0000000000"};
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    size_t i, n;
    for (i = 0; i < sizeof in_way / sizeof in_way[0]; i++) {
        char *path = zkt_path("life-inway"), child[512], quoted[64];
        zkl_mutex *m;
        zkl_participant *v;
        cr_assert_eq(zkt_make_path(zh, path, 0), ZOK);
        snprintf(child, sizeof child, "%s/%s", path, in_way[i]);
        cr_assert_eq(zoo_create(zh, child, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0), ZOK);
        OK(zkl_mutex_create(c, path, &m));
        cr_assert_eq(zkl_mutex_acquire(m, 500), ZKL_ETIMEDOUT);
        snprintf(quoted, sizeof quoted, "'%s', is not a lock node", in_way[i]);
        cr_assert(strstr(zkl_errmsg(), quoted), "%s", zkl_errmsg());
        OK(zkl_inspect(c, path, &v, &n));
        cr_assert_eq(n, 1, "our node is gone, the child stays");
        cr_assert_eq(v[0].kind, 'X');
        cr_assert(v[0].holds, "%s is in the way of the next lock node", in_way[i]);
        zkl_participants_free(v, n);
        OK(zkl_mutex_destroy(m));
        zoo_delete(zh, child, -1);
        free(path);
    }
    OK(zkl_client_close(c));
    zookeeper_close(zh);
}
