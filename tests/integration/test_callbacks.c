/*
 * test_callbacks.c - the callback x call matrix of client.h ("Lifecycle and
 * callbacks"): from inside each kind of callback the library runs, each of
 * close, destroy, blocking acquire, drain, dispatch, a guarded write (and
 * an async one), release and cancel, and of the calls added since (issue
 * 57's sweep): a latch's start, leave, destroy and await, an async acquire,
 * an async handle's release, the metrics, an observer's zkl_leader_get and
 * zkl_log_set, and an election observer's start and destroy (issue 56,
 * item 8: its callback is a kind too), either works or refuses at once with its documented status.
 * Run under ASan and valgrind with the other integration tests: no call
 * frees memory in use or waits for itself.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zklock/async.h"
#include "zklock/leader.h"
#include "zklock/metrics.h"
#include "zklock/revoke.h"
#include "zkt.h"

enum {
    CLOSE,
    DESTROY,
    ACQUIRE,
    DRAIN,
    DISPATCH,
    GUARDED,
    GUARDED_ASYNC,
    RELEASE,
    CANCEL,
    LATCH_START,
    LATCH_AWAIT,
    LATCH_LEAVE,
    LATCH_DESTROY,
    ASYNC_ACQUIRE,
    OP_RELEASE,
    METRICS,
    LEADER_GET,
    LOG_SET,
    OBSERVE,
    OBSERVER_DESTROY,
    NCALLS
};
static const char *const call_name[NCALLS] = {"close",
                                              "destroy",
                                              "blocking acquire",
                                              "drain",
                                              "dispatch",
                                              "guarded write",
                                              "async guarded write",
                                              "release",
                                              "cancel",
                                              "latch start",
                                              "latch await",
                                              "latch leave",
                                              "latch destroy",
                                              "async acquire",
                                              "async handle release",
                                              "metrics",
                                              "leader get",
                                              "log set",
                                              "observe",
                                              "observer destroy"};

/* The documented outcome of each call, by the callback it is made from. */
typedef struct kind {
    const char *name;
    zkl_status want[NCALLS];
} kind;

/* On the client's worker: what would wait for the worker refuses (a
 * guarded write waits for its reply's delivery by the client's poller, not
 * for the worker). */
#define ON_WORKER                                                                                  \
    {                                                                                              \
        ZKL_EBUSY, ZKL_OK, ZKL_EDEADLOCK, ZKL_EDEADLOCK, ZKL_EINVAL, ZKL_OK, ZKL_OK, ZKL_OK,       \
            ZKL_OK, ZKL_OK, ZKL_EDEADLOCK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, \
            ZKL_OK, ZKL_OK                                                                         \
    }
static const kind worker_completion = {"a completion on the worker", ON_WORKER};
static const kind client_state = {"the client's on_state", ON_WORKER};
static const kind lock_state = {"a lock's on_state", ON_WORKER};
static const kind revocation = {"a revocation callback", ON_WORKER};
static const kind write_answer = {"an async guarded write's answer on the worker", ON_WORKER};
static const kind latch_told = {"a leader latch's callback on the worker", ON_WORKER};
static const kind observer_told = {"an election observer's callback on the worker", ON_WORKER};
/* On the loop's own thread (zkl_client_dispatch): only close, and a latch's
 * await (inside any callback of the client), refuse. */
#define DISPATCHED                                                                                 \
    {                                                                                              \
        ZKL_EBUSY, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK,         \
            ZKL_EDEADLOCK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK, ZKL_OK  \
    }
static const kind dispatched = {"a completion run by zkl_client_dispatch", DISPATCHED};
static const kind write_dispatched = {"an async guarded write's answer run by zkl_client_dispatch",
                                      DISPATCHED};
static const kind observer_dispatched = {
    "an election observer's callback run by zkl_client_dispatch", DISPATCHED};
/* The log callback may run under zklock's own locks: every call refuses
 * (zkl_log_set changes nothing, and says so). */
static const kind logging = {"the log callback",
                             {ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY,
                              ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY,
                              ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY,
                              ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY, ZKL_EBUSY}};

/* One client c whose callback makes the calls, on objects of c. */
#define NPATHS 10
typedef struct fixture {
    zkl_client *c, *h;     /* h holds the path the pending acquire waits on */
    zkl_mutex *idle;       /* destroy */
    zkl_mutex *free_m;     /* blocking acquire (nobody holds it) */
    zkl_semaphore *sem;    /* release: a lease of it */
    zkl_lease *lease;      /* (taken by the test's thread) */
    zkl_mutex *hm, *wm;    /* cancel: wm's acquire waits behind hm */
    zkl_op *pending;       /* that acquire */
    atomic_int pend_calls; /* its callback ran */
    zkl_mutex *am;         /* async guarded write: a handle's hold of it */
    zkl_op *aop;
    atomic_int aop_calls;
    zkl_write aw[2]; /* the write (the caller's until answered) */
    char aitem[300];
    atomic_int answers;
    zkl_status answer_st;
    zkl_status got[NCALLS];
    char msg[NCALLS][256];
    atomic_int started, ran;
    int fd;                /* descriptor delivery, or -1 */
    zkl_latch *lat_idle;   /* latch start: made, not started */
    zkl_latch *lat_run;    /* latch await and leave: it leads */
    zkl_latch *lat_doomed; /* latch destroy: it leads */
    zkl_mutex *async_m;    /* async acquire (nobody holds it) */
    zkl_op *op2;           /* that acquire */
    atomic_int op2_calls;
    zkl_status op2_st;
    zkl_mutex *done_m; /* async handle release: a hold of it, reported */
    zkl_op *done_op;
    atomic_int done_calls;
    zkl_observer *obs_doomed; /* observer destroy: one of paths[6] */
    zkl_observer *obs_new;    /* observe: made inside, of paths[5] */
    zkl_log_fn log_fn;        /* the hook zkl_log_set sets again (NULL: none) */
    zkl_log_level log_level;
    char *paths[NPATHS];
} fixture;

static void pend_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    fixture *f = ud;
    (void)op;
    cr_assert_eq(st, ZKL_ECANCELED, "the pending acquire: %s (%s)", zkl_strerror(st), msg);
    atomic_store(&f->pend_calls, 1);
}

static void note(fixture *f, int i, zkl_status st)
{
    f->got[i] = st;
    snprintf(f->msg[i], sizeof f->msg[i], "%s", st == ZKL_OK ? "" : zkl_errmsg());
}

/* A guarded write of the lease: a node beside the semaphore made and
 * deleted in one transaction (nothing is left either way). */
static zkl_status guarded(fixture *f)
{
    char item[300];
    zkl_write w[2];
    snprintf(item, sizeof item, "%s-g", f->paths[2]);
    memset(w, 0, sizeof w);
    w[0].type = ZKL_WRITE_CREATE;
    w[0].path = item;
    w[1].type = ZKL_WRITE_DELETE;
    w[1].path = item;
    w[1].version = ZKL_ANY_VERSION;
    return zkl_lease_guarded_write(f->lease, w, 2, NULL);
}

static void answer_cb(zkl_status st, size_t failed, const char *msg, void *ud)
{
    fixture *f = ud;
    (void)failed;
    (void)msg;
    f->answer_st = st;
    atomic_fetch_add(&f->answers, 1);
}

/* The same made and deleted through the handle's hold, without waiting. */
static zkl_status guarded_async(fixture *f)
{
    snprintf(f->aitem, sizeof f->aitem, "%s-ga", f->paths[4]);
    memset(f->aw, 0, sizeof f->aw);
    f->aw[0].type = ZKL_WRITE_CREATE;
    f->aw[0].path = f->aitem;
    f->aw[1].type = ZKL_WRITE_DELETE;
    f->aw[1].path = f->aitem;
    f->aw[1].version = ZKL_ANY_VERSION;
    return zkl_op_guarded_write_async(f->aop, f->aw, 2, NULL, answer_cb, f);
}

static void quiet_latch_cb(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    (void)l;
    (void)ev;
    (void)token;
    (void)ud;
}

static void op2_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    fixture *f = ud;
    (void)op;
    (void)msg;
    f->op2_st = st;
    atomic_store(&f->op2_calls, 1);
}

/* The metrics, into a buffer of 256 KiB. */
static zkl_status metrics(fixture *f)
{
    size_t len = 256 * 1024, needed = 0;
    char *buf = malloc(len);
    zkl_status st;
    cr_assert(buf);
    st = zkl_client_metrics(f->c, buf, len, &needed);
    if (st == ZKL_OK)
        cr_assert(strstr(buf, "# EOF\n"), "the metrics end in # EOF");
    free(buf);
    return st;
}

static zkl_status leader_get(fixture *f)
{
    zkl_leader ld;
    zkl_status st = zkl_leader_get(f->c, f->paths[5], &ld);
    if (st == ZKL_OK) {
        cr_assert(ld.present, "the latch that leads there is seen");
        zkl_leader_clear(&ld);
    }
    return st;
}

/* zkl_log_set returns nothing: inside the log callback it changes nothing
 * and says why in zkl_errmsg. It sets again the hook the test runs with. */
static zkl_status log_set(fixture *f)
{
    zkl_log_set(f->log_fn, f->log_level, f->log_fn ? f : NULL);
    return strncmp(zkl_errmsg(), "zkl_log_set", 11) == 0 ? ZKL_EBUSY : ZKL_OK;
}

static void quiet_observe_cb(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld,
                             void *ud)
{
    (void)o;
    (void)st;
    (void)msg;
    (void)ld;
    (void)ud;
}

/* The calls, once, from inside whatever callback runs this. */
static void run_calls(fixture *f)
{
    zkl_status st;
    if (atomic_exchange(&f->started, 1))
        return;
    note(f, CLOSE, zkl_client_close(f->c));
    note(f, DESTROY, st = zkl_mutex_destroy(f->idle));
    if (st == ZKL_OK)
        f->idle = NULL;
    note(f, ACQUIRE, st = zkl_mutex_acquire(f->free_m, 5000));
    if (st == ZKL_OK)
        cr_assert_eq(zkl_mutex_release(f->free_m), ZKL_OK);
    note(f, DRAIN, zkl_client_drain(f->c, 1000));
    note(f, DISPATCH, zkl_client_dispatch(f->c, NULL));
    note(f, GUARDED, guarded(f));
    note(f, GUARDED_ASYNC, guarded_async(f));
    note(f, RELEASE, st = zkl_lease_return(f->lease));
    if (st == ZKL_OK)
        f->lease = NULL;
    note(f, CANCEL, zkl_op_cancel(f->pending));
    note(f, LATCH_START, zkl_latch_start(f->lat_idle, quiet_latch_cb, NULL));
    note(f, LATCH_AWAIT, zkl_latch_await(f->lat_run, 0));
    note(f, LEADER_GET, leader_get(f)); /* (before lat_run leaves) */
    note(f, LATCH_LEAVE, zkl_latch_leave(f->lat_run, ZKL_LATCH_NOTIFY));
    note(f, LATCH_DESTROY, st = zkl_latch_destroy(f->lat_doomed));
    if (st == ZKL_OK)
        f->lat_doomed = NULL;
    note(f, ASYNC_ACQUIRE, zkl_mutex_acquire_async(f->async_m, 10000, op2_cb, f, &f->op2));
    note(f, OP_RELEASE, st = zkl_op_release(f->done_op));
    if (st == ZKL_OK)
        f->done_op = NULL;
    note(f, METRICS, metrics(f));
    note(f, LOG_SET, log_set(f));
    note(f, OBSERVE, zkl_leader_observe(f->c, f->paths[5], quiet_observe_cb, NULL, &f->obs_new));
    note(f, OBSERVER_DESTROY, st = zkl_observer_destroy(f->obs_doomed));
    if (st == ZKL_OK)
        f->obs_doomed = NULL;
    atomic_store(&f->ran, 1);
}

static int has_run(void *p)
{
    return atomic_load(&((fixture *)p)->ran);
}

static int pend_reported(void *p)
{
    fixture *f = p;
    if (f->fd >= 0)
        (void)zkl_client_dispatch(f->c, NULL);
    return atomic_load(&f->pend_calls);
}

static void aop_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    fixture *f = ud;
    (void)op;
    cr_assert_eq(st, ZKL_OK, "the async hold: %s (%s)", zkl_strerror(st), msg);
    atomic_store(&f->aop_calls, 1);
}

static int aop_reported(void *p)
{
    fixture *f = p;
    if (f->fd >= 0)
        (void)zkl_client_dispatch(f->c, NULL);
    return atomic_load(&f->aop_calls);
}

static void done_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    fixture *f = ud;
    (void)op;
    cr_assert_eq(st, ZKL_OK, "the hold to release: %s (%s)", zkl_strerror(st), msg);
    atomic_store(&f->done_calls, 1);
}

static int done_reported(void *p)
{
    fixture *f = p;
    if (f->fd >= 0)
        (void)zkl_client_dispatch(f->c, NULL);
    return atomic_load(&f->done_calls);
}

static int op2_reported(void *p)
{
    fixture *f = p;
    if (f->fd >= 0)
        (void)zkl_client_dispatch(f->c, NULL);
    return atomic_load(&f->op2_calls);
}

static int both_lead(void *p)
{
    fixture *f = p;
    if (f->fd >= 0)
        (void)zkl_client_dispatch(f->c, NULL);
    return zkl_latch_is_leader(f->lat_run) && zkl_latch_is_leader(f->lat_doomed);
}

/* Dispatch until nothing was run for a moment. */
static int dispatched_all(void *p)
{
    fixture *f = p;
    int ran = 0;
    OK(zkl_client_dispatch(f->c, &ran));
    if (ran)
        return 0;
    zkt_sleep_ms(100);
    OK(zkl_client_dispatch(f->c, &ran));
    return ran == 0;
}

static int write_answered(void *p)
{
    fixture *f = p;
    if (f->fd >= 0)
        (void)zkl_client_dispatch(f->c, NULL);
    return atomic_load(&f->answers);
}

static void setup(fixture *f, zkl_state_fn on_state, bool descriptor)
{
    zhandle_t *zh = zkt_raw();
    int i;
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->c = zkt_client_cb(0, on_state, f);
    f->h = zkt_client(0);
    if (descriptor)
        OK(zkl_client_event_fd(f->c, &f->fd));
    for (i = 0; i < NPATHS; i++)
        f->paths[i] = zkt_path("matrix");
    OK(zkl_mutex_create(f->c, f->paths[0], &f->idle));
    OK(zkl_mutex_create(f->c, f->paths[1], &f->free_m));
    OK(zkl_semaphore_create(f->c, f->paths[2], 1, &f->sem));
    OK(zkl_semaphore_acquire(f->sem, 10000, &f->lease));
    OK(zkl_mutex_create(f->h, f->paths[3], &f->hm));
    OK(zkl_mutex_create(f->c, f->paths[3], &f->wm));
    OK(zkl_mutex_acquire(f->hm, 10000));
    OK(zkl_mutex_acquire_async(f->wm, ZKL_WAIT_FOREVER, pend_cb, f, &f->pending));
    cr_assert_eq(zkt_children_settle(zh, f->paths[3], 2), 2, "the pending acquire is in line");
    OK(zkl_mutex_create(f->c, f->paths[4], &f->am));
    OK(zkl_mutex_acquire_async(f->am, 10000, aop_cb, f, &f->aop));
    cr_assert(zkt_wait_for(aop_reported, f, 20000), "the async hold never reported");
    OK(zkl_latch_create(f->c, f->paths[5], "run", &f->lat_run));
    OK(zkl_latch_create(f->c, f->paths[6], "doomed", &f->lat_doomed));
    OK(zkl_latch_create(f->c, f->paths[7], "idle", &f->lat_idle));
    OK(zkl_latch_start(f->lat_run, quiet_latch_cb, NULL));
    OK(zkl_latch_start(f->lat_doomed, quiet_latch_cb, NULL));
    cr_assert(zkt_wait_for(both_lead, f, 20000), "the latches never led");
    OK(zkl_mutex_create(f->c, f->paths[8], &f->async_m));
    OK(zkl_mutex_create(f->c, f->paths[9], &f->done_m));
    OK(zkl_mutex_acquire_async(f->done_m, 10000, done_cb, f, &f->done_op));
    cr_assert(zkt_wait_for(done_reported, f, 20000), "the hold to release never reported");
    OK(zkl_leader_observe(f->c, f->paths[6], quiet_observe_cb, NULL, &f->obs_doomed));
    zookeeper_close(zh);
}

/* Check the outcomes against k, then end everything the calls left. */
static void check_and_teardown(fixture *f, const kind *k)
{
    int i;
    cr_assert(zkt_wait_for(has_run, f, 30000), "%s: the callback never ran, or a call hung",
              k->name);
    for (i = 0; i < NCALLS; i++)
        cr_expect_eq(f->got[i], k->want[i], "%s, %s: %s (%s), documented: %s", k->name,
                     call_name[i], zkl_strerror(f->got[i]), f->msg[i], zkl_strerror(k->want[i]));
    if (f->got[CANCEL] != ZKL_OK)
        OK(zkl_op_cancel(f->pending));
    cr_assert(zkt_wait_for(pend_reported, f, 20000), "the canceled acquire never reported");
    if (f->got[GUARDED_ASYNC] == ZKL_OK) {
        cr_assert(zkt_wait_for(write_answered, f, 20000), "the async write never answered");
        cr_assert_eq(f->answer_st, ZKL_OK, "the async write: %s", zkl_strerror(f->answer_st));
    }
    if (f->got[ASYNC_ACQUIRE] == ZKL_OK) {
        cr_assert(zkt_wait_for(op2_reported, f, 20000), "the async acquire never reported");
        cr_assert_eq(f->op2_st, ZKL_OK, "the async acquire: %s", zkl_strerror(f->op2_st));
        OK(zkl_op_release(f->op2));
    }
    if (f->done_op)
        OK(zkl_op_release(f->done_op));
    if (f->obs_new)
        OK(zkl_observer_destroy(f->obs_new));
    if (f->obs_doomed)
        OK(zkl_observer_destroy(f->obs_doomed));
    OK(zkl_mutex_destroy(f->done_m));
    OK(zkl_mutex_destroy(f->async_m));
    OK(zkl_latch_destroy(f->lat_idle));
    OK(zkl_latch_destroy(f->lat_run));
    if (f->lat_doomed)
        OK(zkl_latch_destroy(f->lat_doomed));
    OK(zkl_op_release(f->aop));
    OK(zkl_mutex_destroy(f->am));
    OK(zkl_op_release(f->pending));
    OK(zkl_mutex_release(f->hm));
    if (f->idle)
        OK(zkl_mutex_destroy(f->idle));
    if (f->lease)
        OK(zkl_lease_return(f->lease));
    OK(zkl_mutex_destroy(f->free_m));
    OK(zkl_semaphore_destroy(f->sem));
    OK(zkl_mutex_destroy(f->wm));
    OK(zkl_mutex_destroy(f->hm));
    OK(zkl_client_close(f->h));
    if (f->fd >= 0) /* a destroyed latch's last report may wait in descriptor delivery */
        cr_assert(zkt_wait_for(dispatched_all, f, 20000), "the reports never came");
    OK(zkl_client_close(f->c)); /* still whole after all of it */
    for (i = 0; i < NPATHS; i++)
        free(f->paths[i]);
}

/* ---- the kinds ---- */

static void trigger_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    run_calls(ud);
    cr_assert_eq(zkl_op_release(op), ZKL_OK); /* from inside: freed on return */
}

/* An async acquire of a free path on c, whose completion makes the calls. */
static zkl_mutex *trigger(fixture *f, char **path)
{
    zkl_mutex *t;
    zkl_op *op;
    *path = zkt_path("matrix-trigger");
    OK(zkl_mutex_create(f->c, *path, &t));
    OK(zkl_mutex_acquire_async(t, 10000, trigger_cb, f, &op));
    return t;
}

Test(callbacks, worker_completion, .timeout = 120)
{
    fixture f;
    char *path;
    zkl_mutex *t;
    setup(&f, NULL, false);
    t = trigger(&f, &path);
    cr_assert(zkt_wait_for(has_run, &f, 30000));
    zkt_sleep_ms(50); /* the worker is past the callback */
    OK(zkl_mutex_destroy(t));
    check_and_teardown(&f, &worker_completion);
    free(path);
}

Test(callbacks, dispatched_completion, .timeout = 120)
{
    fixture f;
    char *path;
    zkl_mutex *t;
    int64_t t0 = zkt_now_ms();
    setup(&f, NULL, true);
    t = trigger(&f, &path);
    while (!atomic_load(&f.ran) && zkt_now_ms() - t0 < 30000) {
        struct pollfd p = {f.fd, POLLIN, 0};
        if (poll(&p, 1, 1000) > 0)
            OK(zkl_client_dispatch(f.c, NULL));
    }
    OK(zkl_mutex_destroy(t));
    check_and_teardown(&f, &dispatched);
    free(path);
}

static void on_trigger_answer(zkl_status st, size_t failed, const char *msg, void *ud)
{
    (void)failed;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    run_calls(ud);
}

/* The trigger's write: a check of the trigger path (the caller's until answered). */
static zkl_write trigger_write;

static void write_trigger_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    cr_assert_eq(zkl_op_guarded_write_async(op, &trigger_write, 1, NULL, on_trigger_answer, ud),
                 ZKL_OK, "%s", zkl_errmsg());
}

/* An async hold whose guarded write's answer makes the calls (then the hold goes). */
static void write_answer_kind(bool descriptor, const kind *k)
{
    fixture f;
    char *path = zkt_path("matrix-write");
    zkl_mutex *t;
    zkl_op *op;
    int64_t t0 = zkt_now_ms();
    setup(&f, NULL, descriptor);
    memset(&trigger_write, 0, sizeof trigger_write);
    trigger_write.type = ZKL_WRITE_CHECK;
    trigger_write.path = path;
    trigger_write.version = ZKL_ANY_VERSION;
    OK(zkl_mutex_create(f.c, path, &t));
    OK(zkl_mutex_acquire_async(t, 10000, write_trigger_cb, &f, &op));
    while (!atomic_load(&f.ran) && zkt_now_ms() - t0 < 30000) {
        struct pollfd p = {f.fd, POLLIN, 0};
        if (!descriptor)
            zkt_sleep_ms(20);
        else if (poll(&p, 1, 1000) > 0)
            OK(zkl_client_dispatch(f.c, NULL));
    }
    zkt_sleep_ms(50); /* the worker is past the callback */
    OK(zkl_op_release(op));
    OK(zkl_mutex_destroy(t));
    check_and_teardown(&f, k);
    free(path);
}

Test(callbacks, write_answer_on_the_worker, .timeout = 120)
{
    write_answer_kind(false, &write_answer);
}

Test(callbacks, write_answer_dispatched, .timeout = 120)
{
    write_answer_kind(true, &write_dispatched);
}

static void latch_cb(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    (void)l;
    (void)token;
    if (ev == ZKL_LEADER_GAINED)
        run_calls(ud);
}

Test(callbacks, latch_gained, .timeout = 120)
{
    fixture f;
    zkl_latch *l;
    char *path = zkt_path("matrix-latch");
    setup(&f, NULL, false);
    OK(zkl_latch_create(f.c, path, "matrix", &l));
    OK(zkl_latch_start(l, latch_cb, &f));
    cr_assert(zkt_wait_for(has_run, &f, 30000));
    zkt_sleep_ms(50); /* the worker is past the callback */
    OK(zkl_latch_destroy(l));
    check_and_teardown(&f, &latch_told);
    free(path);
}

/* An observer of a path where nobody takes part: its first telling (a vacancy) makes the calls. */
static void observe_cb(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld,
                       void *ud)
{
    (void)o;
    (void)ld;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    run_calls(ud);
}

Test(callbacks, observer_told, .timeout = 120)
{
    fixture f;
    zkl_observer *o;
    char *path = zkt_path("matrix-observe");
    setup(&f, NULL, false);
    OK(zkl_leader_observe(f.c, path, observe_cb, &f, &o));
    cr_assert(zkt_wait_for(has_run, &f, 30000));
    zkt_sleep_ms(50); /* the worker is past the callback */
    OK(zkl_observer_destroy(o));
    check_and_teardown(&f, &observer_told);
    free(path);
}

Test(callbacks, observer_dispatched, .timeout = 120)
{
    fixture f;
    zkl_observer *o;
    char *path = zkt_path("matrix-observe");
    int64_t t0 = zkt_now_ms();
    setup(&f, NULL, true);
    OK(zkl_leader_observe(f.c, path, observe_cb, &f, &o));
    while (!atomic_load(&f.ran) && zkt_now_ms() - t0 < 30000) {
        struct pollfd p = {f.fd, POLLIN, 0};
        if (poll(&p, 1, 1000) > 0)
            OK(zkl_client_dispatch(f.c, NULL));
    }
    OK(zkl_observer_destroy(o));
    check_and_teardown(&f, &observer_dispatched);
    free(path);
}

static void state_cb(zkl_client *c, zkl_conn_state st, void *ud)
{
    (void)c;
    if (st == ZKL_STATE_SUSPENDED)
        run_calls(ud);
}

Test(callbacks, client_state, .timeout = 120)
{
    fixture f;
    setup(&f, state_cb, false);
    zkt_state_event(f.c, ZKL_STATE_SUSPENDED);
    cr_assert(zkt_wait_for(has_run, &f, 30000));
    zkt_state_event(f.c, ZKL_STATE_RECONNECTED);
    check_and_teardown(&f, &client_state);
}

static void lock_state_cb(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    if (st == ZKL_STATE_SUSPENDED)
        run_calls(ud);
}

Test(callbacks, lock_state, .timeout = 120)
{
    fixture f;
    zkl_mutex *m;
    char *path = zkt_path("matrix-held");
    setup(&f, NULL, false);
    OK(zkl_mutex_create(f.c, path, &m));
    OK(zkl_mutex_on_state(m, lock_state_cb, &f));
    OK(zkl_mutex_acquire(m, 10000)); /* told only while it holds */
    zkt_state_event(f.c, ZKL_STATE_SUSPENDED);
    cr_assert(zkt_wait_for(has_run, &f, 30000));
    zkt_state_event(f.c, ZKL_STATE_RECONNECTED);
    OK(zkl_mutex_release(m));
    OK(zkl_mutex_destroy(m));
    check_and_teardown(&f, &lock_state);
    free(path);
}

static void revoke_cb(void *lock, void *ud)
{
    (void)lock;
    run_calls(ud);
}

Test(callbacks, revocation, .timeout = 120)
{
    fixture f;
    zkl_mutex *m;
    char *path = zkt_path("matrix-revocable"), *node;
    setup(&f, NULL, false);
    OK(zkl_mutex_create(f.c, path, &m));
    OK(zkl_mutex_make_revocable(m, revoke_cb, &f));
    OK(zkl_mutex_acquire(m, 10000));
    OK(zkl_mutex_node(m, &node));
    OK(zkl_revoke(f.h, node));
    cr_assert(zkt_wait_for(has_run, &f, 30000));
    OK(zkl_mutex_release(m));
    OK(zkl_mutex_destroy(m));
    check_and_teardown(&f, &revocation);
    free(node);
    free(path);
}

static void log_cb(zkl_log_level level, const char *message, void *ud)
{
    (void)level;
    (void)message;
    run_calls(ud);
}

Test(callbacks, log, .timeout = 120)
{
    fixture f;
    char **v;
    size_t n;
    setup(&f, NULL, false);
    f.log_fn = log_cb;
    f.log_level = ZKL_LOG_DEBUG;
    zkl_log_set(log_cb, ZKL_LOG_DEBUG, &f);
    OK(zkl_mutex_participants(f.idle, &v, &n)); /* a request: the ZooKeeper client logs it */
    cr_assert(zkt_wait_for(has_run, &f, 30000), "nothing was logged");
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    zkl_strings_free(v, n);
    check_and_teardown(&f, &logging);
}
