/*
 * test_sweep.c - issue 57's sweep: every public function added since turn 2
 * (zklock/guard.h, leader.h, async.h, metrics.h) through the questions the
 * older calls answer, against the real server:
 *  - NULL in each pointer argument, one at a time (sweep::null_*);
 *  - sizes and numbers at their limits and one past (sweep::limits_*);
 *  - two threads in one call on one object at once (sweep::two_threads_*).
 * The calls from inside each kind of callback are test_callbacks.c's
 * matrix. docs/RELIABILITY.md ("The sweep of the calls added since turn 2")
 * has the table, function by function.
 *
 * A refusal must come at once, with its documented status and a message
 * that names the call or the argument; nothing may crash, hang or leak
 * (the suite runs this under ASan and valgrind).
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zklock/async.h"
#include "zklock/guard.h"
#include "zklock/leader.h"
#include "zklock/metrics.h"
#include "zkt.h"

/* expr gives want, at once, with a message (a refusal) */
#define GIVES(want, expr) gives_at((expr), (want), #expr, __LINE__)

static void gives_at(zkl_status got, zkl_status want, const char *what, int line)
{
    cr_expect_eq(got, want, "line %d: %s gave %s (%s), documented: %s", line, what,
                 zkl_strerror(got), zkl_errmsg(), zkl_strerror(want));
    if (want != ZKL_OK && got == want)
        cr_expect(zkl_errmsg()[0] != '\0', "line %d: %s refused without a message", line, what);
}

/* Everything a call needs besides the argument under test: each kind of hold, taken. */
typedef struct world {
    zkl_client *c;
    char *paths[8];
    zkl_mutex *m;         /* held by the test's thread */
    zkl_rwlock *rw;       /* read side held by the test's thread */
    zkl_semaphore *sem;   /* of 2 leases */
    zkl_lease *lease;     /* one of them */
    zkl_mutex *mm;        /* the multilock's member */
    zkl_multilock *ml;    /* held by the test's thread */
    zkl_mutex *am;        /* async mode */
    zkl_op *op;           /* its hold */
    zkl_latch *latch;     /* it leads */
    zkl_write w[1];       /* a check of the latch's path */
    atomic_int op_called; /* op's callback ran */
} world;

static void op_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    world *w = ud;
    (void)op;
    cr_assert_eq(st, ZKL_OK, "the world's async hold: %s", msg);
    atomic_store(&w->op_called, 1);
}

static int op_called(void *p)
{
    return atomic_load(&((world *)p)->op_called);
}

static void world_make(world *w)
{
    int i;
    memset(w, 0, sizeof *w);
    w->c = zkt_client(0);
    for (i = 0; i < 8; i++)
        w->paths[i] = zkt_path("sweep");
    OK(zkl_mutex_create(w->c, w->paths[0], &w->m));
    OK(zkl_mutex_acquire(w->m, 10000));
    OK(zkl_rwlock_create(w->c, w->paths[1], &w->rw));
    OK(zkl_rwlock_read_acquire(w->rw, 10000));
    OK(zkl_semaphore_create(w->c, w->paths[2], 2, &w->sem));
    OK(zkl_semaphore_acquire(w->sem, 10000, &w->lease));
    OK(zkl_mutex_create(w->c, w->paths[3], &w->mm));
    OK(zkl_multilock_create(&w->ml));
    OK(zkl_multilock_add_mutex(w->ml, w->mm));
    OK(zkl_multilock_acquire(w->ml, 10000));
    OK(zkl_mutex_create(w->c, w->paths[4], &w->am));
    OK(zkl_mutex_acquire_async(w->am, 10000, op_cb, w, &w->op));
    cr_assert(zkt_wait_for(op_called, w, 20000), "the async hold never reported");
    OK(zkl_latch_create(w->c, w->paths[5], "sweep", &w->latch));
    OK(zkl_latch_start(w->latch, NULL, NULL));
    OK(zkl_latch_await(w->latch, 10000));
    w->w[0].type = ZKL_WRITE_CHECK;
    w->w[0].path = w->paths[5];
    w->w[0].version = ZKL_ANY_VERSION;
}

static void world_end(world *w)
{
    int i;
    OK(zkl_latch_destroy(w->latch));
    OK(zkl_op_release(w->op));
    OK(zkl_mutex_destroy(w->am));
    OK(zkl_multilock_release(w->ml));
    OK(zkl_multilock_destroy(w->ml));
    OK(zkl_mutex_destroy(w->mm));
    OK(zkl_lease_return(w->lease));
    OK(zkl_semaphore_destroy(w->sem));
    OK(zkl_rwlock_read_release(w->rw));
    OK(zkl_rwlock_destroy(w->rw));
    OK(zkl_mutex_release(w->m));
    OK(zkl_mutex_destroy(w->m));
    OK(zkl_client_drain(w->c, 10000));
    OK(zkl_client_close(w->c));
    for (i = 0; i < 8; i++)
        free(w->paths[i]);
}

static void never_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    (void)st;
    (void)ud;
    cr_assert_fail("a refused acquire's callback ran: %s", msg);
}

static void never_answer(zkl_status st, size_t failed, const char *msg, void *ud)
{
    (void)st;
    (void)failed;
    (void)ud;
    cr_assert_fail("a refused write's answer ran: %s", msg);
}

/* ---- NULL, one pointer argument at a time ---- */

Test(sweep, null_in_the_guarded_writes, .timeout = 60)
{
    world w;
    zkl_write bad = {.type = ZKL_WRITE_CHECK, .path = NULL, .version = ZKL_ANY_VERSION};
    world_make(&w);
    GIVES(ZKL_EINVAL, zkl_mutex_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_mutex_guarded_write(w.m, NULL, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_mutex_guarded_write(w.m, &bad, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_rwlock_read_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_rwlock_read_guarded_write(w.rw, NULL, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_rwlock_write_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_rwlock_write_guarded_write(w.rw, NULL, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(w.lease, NULL, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_multilock_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_multilock_guarded_write(w.ml, NULL, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write(w.op, NULL, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write(w.op, &bad, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write_async(NULL, w.w, 1, NULL, never_answer, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write_async(w.op, NULL, 1, NULL, never_answer, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write_async(w.op, w.w, 1, NULL, NULL, NULL));
    GIVES(ZKL_EINVAL, zkl_op_guarded_write_async(w.op, &bad, 1, NULL, never_answer, NULL));
    GIVES(ZKL_EINVAL, zkl_latch_guarded_write(NULL, w.w, 1, NULL));
    GIVES(ZKL_EINVAL, zkl_latch_guarded_write(w.latch, NULL, 1, NULL));
    /* and failed may be NULL: each kind writes with it so */
    GIVES(ZKL_OK, zkl_mutex_guarded_write(w.m, w.w, 1, NULL));
    GIVES(ZKL_OK, zkl_rwlock_read_guarded_write(w.rw, w.w, 1, NULL));
    GIVES(ZKL_OK, zkl_lease_guarded_write(w.lease, w.w, 1, NULL));
    GIVES(ZKL_OK, zkl_multilock_guarded_write(w.ml, w.w, 1, NULL));
    GIVES(ZKL_OK, zkl_op_guarded_write(w.op, w.w, 1, NULL));
    GIVES(ZKL_OK, zkl_latch_guarded_write(w.latch, w.w, 1, NULL));
    world_end(&w);
}

Test(sweep, null_in_the_latch_calls, .timeout = 60)
{
    world w;
    zkl_latch *l = (zkl_latch *)&l;
    zkl_leader ld;
    int64_t token;
    char *node;
    world_make(&w);
    GIVES(ZKL_EINVAL, zkl_latch_create(NULL, w.paths[6], "a", &l));
    cr_expect_null(l, "*out is cleared on a refusal");
    GIVES(ZKL_EINVAL, zkl_latch_create(w.c, NULL, "a", &l));
    GIVES(ZKL_EINVAL, zkl_latch_create(w.c, w.paths[6], "a", NULL));
    l = (zkl_latch *)&l;
    GIVES(ZKL_EINVAL, zkl_selector_create(NULL, w.paths[6], "a", &l));
    cr_expect_null(l, "*out is cleared on a refusal");
    GIVES(ZKL_EINVAL, zkl_selector_create(w.c, NULL, "a", &l));
    GIVES(ZKL_EINVAL, zkl_selector_create(w.c, w.paths[6], "a", NULL));
    GIVES(ZKL_EINVAL, zkl_latch_start(NULL, NULL, NULL));
    GIVES(ZKL_EINVAL, zkl_latch_await(NULL, 0));
    GIVES(ZKL_EINVAL, zkl_latch_yield(NULL, 0));
    cr_expect_not(zkl_latch_is_leader(NULL));
    GIVES(ZKL_EINVAL, zkl_latch_token(NULL, &token));
    GIVES(ZKL_EINVAL, zkl_latch_token(w.latch, NULL));
    GIVES(ZKL_EINVAL, zkl_latch_node(NULL, &node));
    GIVES(ZKL_EINVAL, zkl_latch_node(w.latch, NULL));
    GIVES(ZKL_EINVAL, zkl_latch_leave(NULL, ZKL_LATCH_SILENT));
    GIVES(ZKL_EINVAL, zkl_latch_destroy(NULL));
    GIVES(ZKL_EINVAL, zkl_leader_get(NULL, w.paths[5], &ld));
    GIVES(ZKL_EINVAL, zkl_leader_get(w.c, NULL, &ld));
    GIVES(ZKL_EINVAL, zkl_leader_get(w.c, w.paths[5], NULL));
    zkl_leader_clear(NULL);
    cr_expect_str_eq(zkl_leader_event_name((zkl_leader_event)0), "UNKNOWN");
    /* a NULL id is an empty one; a NULL callback, none */
    OK(zkl_latch_create(w.c, w.paths[6], NULL, &l));
    OK(zkl_latch_destroy(l));
    world_end(&w);
}

Test(sweep, null_in_the_async_calls, .timeout = 60)
{
    world w;
    zkl_op *op = (zkl_op *)&op;
    zkl_semaphore *s2;
    int64_t v;
    char *node;
    int fd;
    world_make(&w);
    OK(zkl_semaphore_create(w.c, w.paths[2], 2, &s2));
    GIVES(ZKL_EINVAL, zkl_mutex_acquire_async(NULL, 0, never_cb, NULL, &op));
    cr_expect_null(op, "*op is cleared on a refusal");
    GIVES(ZKL_EINVAL, zkl_mutex_acquire_async(w.am, 0, NULL, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_mutex_acquire_async(w.am, 0, never_cb, NULL, NULL));
    GIVES(ZKL_EINVAL, zkl_rwlock_read_acquire_async(NULL, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_rwlock_read_acquire_async(w.rw, 0, NULL, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_rwlock_read_acquire_async(w.rw, 0, never_cb, NULL, NULL));
    GIVES(ZKL_EINVAL, zkl_rwlock_write_acquire_async(NULL, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_rwlock_write_acquire_async(w.rw, 0, NULL, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_rwlock_write_acquire_async(w.rw, 0, never_cb, NULL, NULL));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(NULL, 1, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(s2, 1, 0, NULL, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(s2, 1, 0, never_cb, NULL, NULL));
    GIVES(ZKL_EINVAL, zkl_multilock_acquire_async(NULL, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_op_cancel(NULL));
    GIVES(ZKL_EINVAL, zkl_op_release(NULL));
    cr_expect_not(zkl_op_is_held(NULL));
    GIVES(ZKL_EINVAL, zkl_op_fencing_token(NULL, &v));
    GIVES(ZKL_EINVAL, zkl_op_fencing_token(w.op, NULL));
    GIVES(ZKL_EINVAL, zkl_op_lease_remaining(NULL, &v));
    GIVES(ZKL_EINVAL, zkl_op_lease_remaining(w.op, NULL));
    GIVES(ZKL_EINVAL, zkl_op_node(NULL, &node));
    GIVES(ZKL_EINVAL, zkl_op_node(w.op, NULL));
    GIVES(ZKL_EINVAL, zkl_client_event_fd(NULL, &fd));
    GIVES(ZKL_EINVAL, zkl_client_event_fd(w.c, NULL));
    GIVES(ZKL_EINVAL, zkl_client_dispatch(NULL, NULL));
    OK(zkl_semaphore_destroy(s2));
    world_end(&w);
}

Test(sweep, null_in_the_metrics, .timeout = 60)
{
    world w;
    char buf[64];
    size_t needed;
    world_make(&w);
    GIVES(ZKL_EINVAL, zkl_client_metrics(NULL, buf, sizeof buf, &needed));
    GIVES(ZKL_EINVAL, zkl_client_metrics(w.c, NULL, sizeof buf, &needed));
    GIVES(ZKL_EINVAL, zkl_process_metrics(NULL, sizeof buf, &needed));
    /* needed may be NULL */
    GIVES(ZKL_ENOMEM, zkl_client_metrics(w.c, buf, sizeof buf, NULL));
    GIVES(ZKL_ENOMEM, zkl_process_metrics(buf, sizeof buf, NULL));
    world_end(&w);
}

/* ---- sizes and numbers at their limits, and one past ---- */

/* n checks of path (n may be past ZKL_GUARDED_MAX). */
static zkl_write *checks(const char *path, size_t n)
{
    zkl_write *v = calloc(n, sizeof *v);
    size_t i;
    cr_assert(v);
    for (i = 0; i < n; i++) {
        v[i].type = ZKL_WRITE_CHECK;
        v[i].path = path;
        v[i].version = ZKL_ANY_VERSION;
    }
    return v;
}

Test(sweep, limits_of_the_guarded_writes, .timeout = 60)
{
    world w;
    zkl_write *v, one[2];
    char item[300], made[8];
    char *data = malloc(ZKL_NODE_DATA_MAX + 1);
    size_t failed;
    cr_assert(data);
    memset(data, 'd', ZKL_NODE_DATA_MAX + 1);
    world_make(&w);
    v = checks(w.paths[5], ZKL_GUARDED_MAX + 1);
    GIVES(ZKL_OK, zkl_mutex_guarded_write(w.m, v, ZKL_GUARDED_MAX, NULL));
    GIVES(ZKL_EINVAL, zkl_mutex_guarded_write(w.m, v, ZKL_GUARDED_MAX + 1, NULL));
    GIVES(ZKL_EINVAL,
          zkl_op_guarded_write_async(w.op, v, ZKL_GUARDED_MAX + 1, NULL, never_answer, NULL));
    GIVES(ZKL_EINVAL, zkl_latch_guarded_write(w.latch, v, ZKL_GUARDED_MAX + 1, NULL));
    GIVES(ZKL_EINVAL, zkl_mutex_guarded_write(w.m, v, 0, NULL));
    free(v);
    /* a create of ZKL_NODE_DATA_MAX bytes, deleted in the same transaction */
    snprintf(item, sizeof item, "%s/item", w.paths[2]);
    memset(one, 0, sizeof one);
    one[0].type = ZKL_WRITE_CREATE;
    one[0].path = item;
    one[0].data = data;
    one[0].len = ZKL_NODE_DATA_MAX;
    one[0].created = made;
    one[0].created_len = sizeof made; /* cut to fit */
    one[1].type = ZKL_WRITE_DELETE;
    one[1].path = item;
    one[1].version = ZKL_ANY_VERSION;
    GIVES(ZKL_OK, zkl_lease_guarded_write(w.lease, one, 2, NULL));
    cr_expect_eq(strlen(made), sizeof made - 1, "the path made is cut to fit: %s", made);
    one[0].len = ZKL_NODE_DATA_MAX + 1;
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(w.lease, one, 2, &failed));
    cr_expect_eq(failed, 0, "the write past the limit is named");
    one[0].len = -1;
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(w.lease, one, 2, NULL));
    one[0].len = 0;
    one[0].mode = 99;
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(w.lease, one, 2, NULL));
    one[0].mode = ZKL_CREATE_PERSISTENT;
    one[0].type = (zkl_write_type)99;
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(w.lease, one, 2, NULL));
    one[0].type = ZKL_WRITE_CREATE;
    one[1].version = -2;
    GIVES(ZKL_EINVAL, zkl_lease_guarded_write(w.lease, one, 2, &failed));
    cr_expect_eq(failed, 1, "the bad version is named");
    one[1].version = ZKL_ANY_VERSION;
    one[1].path = "no-slash";
    GIVES(ZKL_EBADPATH, zkl_lease_guarded_write(w.lease, one, 2, NULL));
    world_end(&w);
    free(data);
}

Test(sweep, limits_of_the_latch_calls, .timeout = 60)
{
    world w;
    zkl_latch *l;
    char *id = malloc(ZKL_NODE_DATA_MAX + 2);
    cr_assert(id);
    memset(id, 'i', ZKL_NODE_DATA_MAX + 1);
    id[ZKL_NODE_DATA_MAX + 1] = '\0';
    world_make(&w);
    GIVES(ZKL_EINVAL, zkl_latch_create(w.c, w.paths[6], id, &l));
    GIVES(ZKL_EINVAL, zkl_selector_create(w.c, w.paths[6], id, &l));
    id[ZKL_NODE_DATA_MAX] = '\0';
    OK(zkl_latch_create(w.c, w.paths[6], id, &l));
    GIVES(ZKL_EINVAL, zkl_latch_await(l, -2));
    GIVES(ZKL_EINVAL, zkl_latch_leave(l, 2));
    GIVES(ZKL_EINVAL, zkl_latch_leave(l, -1));
    GIVES(ZKL_EINVAL, zkl_latch_yield(l, -1));
    GIVES(ZKL_EINVAL, zkl_latch_yield(l, 3600001));
    GIVES(ZKL_ENOTOWNER, zkl_latch_yield(l, 3600000)); /* in range: it does not lead */
    GIVES(ZKL_ECANCELED, zkl_latch_await(l, 0));       /* never started */
    OK(zkl_latch_destroy(l));
    GIVES(ZKL_EINVAL, zkl_latch_yield(w.latch, 3600001));
    cr_expect(zkl_latch_is_leader(w.latch), "a refused yield changes nothing");
    world_end(&w);
    free(id);
}

Test(sweep, limits_of_the_async_calls, .timeout = 60)
{
    world w;
    zkl_op *op;
    zkl_semaphore *s2;
    int fd, fd2, ran;
    world_make(&w);
    OK(zkl_semaphore_create(w.c, w.paths[7], 2, &s2));
    GIVES(ZKL_EINVAL, zkl_mutex_acquire_async(w.am, -2, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_rwlock_write_acquire_async(w.rw, -2, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(s2, 1, -2, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(s2, 0, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(s2, -1, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_semaphore_acquire_async(s2, 3, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_multilock_acquire_async(w.ml, -2, never_cb, NULL, &op));
    /* thread mode and async mode do not mix */
    GIVES(ZKL_EBUSY, zkl_mutex_acquire_async(w.m, 0, never_cb, NULL, &op));
    GIVES(ZKL_EINVAL, zkl_client_dispatch(w.c, &ran)); /* before zkl_client_event_fd */
    OK(zkl_client_event_fd(w.c, &fd));
    OK(zkl_client_event_fd(w.c, &fd2));
    cr_expect_eq(fd, fd2, "the same descriptor again");
    OK(zkl_client_dispatch(w.c, &ran));
    OK(zkl_semaphore_destroy(s2));
    world_end(&w);
}

/* The metrics into len bytes: ZKL_ENOMEM up to *needed, ZKL_OK past it. */
static void metrics_fit(zkl_client *c)
{
    size_t needed = 0, again = 0;
    char *buf;
    if (c)
        GIVES(ZKL_ENOMEM, zkl_client_metrics(c, (char[1]){0}, 0, &needed));
    else
        GIVES(ZKL_ENOMEM, zkl_process_metrics((char[1]){0}, 0, &needed));
    cr_assert_gt(needed, 0, "needed is told however small the buffer");
    buf = malloc(needed + 256);
    cr_assert(buf);
    if (c)
        GIVES(ZKL_ENOMEM, zkl_client_metrics(c, buf, needed, &again));
    else
        GIVES(ZKL_ENOMEM, zkl_process_metrics(buf, needed, &again));
    cr_expect_eq(buf[needed - 1], '\0', "a cut text ends in a NUL within len");
    if (c)
        GIVES(ZKL_OK, zkl_client_metrics(c, buf, needed + 256, &again));
    else
        GIVES(ZKL_OK, zkl_process_metrics(buf, needed + 256, &again));
    cr_expect_eq(strlen(buf), again, "needed is the text's length");
    cr_expect(strstr(buf, "# EOF\n"), "the text ends in # EOF");
    free(buf);
}

Test(sweep, limits_of_the_metrics, .timeout = 60)
{
    world w;
    world_make(&w);
    metrics_fit(w.c);
    metrics_fit(NULL);
    world_end(&w);
}

/* ---- two threads in one call on one object at once ---- */

/* rounds of a two-thread test; fewer under valgrind, which runs one thread at a time */
#define ROUNDS (getenv("ZKT_VALGRIND") ? 6 : 20)

/* Two threads run fn(arg, i) at once (a barrier between them), for ROUNDS rounds each. */
typedef struct pair {
    void (*fn)(void *arg, int who);
    void *arg;
    int who;
    pthread_barrier_t *b;
} pair;

static void *pair_main(void *p)
{
    pair *x = p;
    pthread_barrier_wait(x->b);
    x->fn(x->arg, x->who);
    return NULL;
}

static void at_once(void (*fn)(void *, int), void *arg)
{
    pthread_barrier_t b;
    pthread_t t[2];
    pair x[2];
    int i;
    pthread_barrier_init(&b, NULL, 2);
    for (i = 0; i < 2; i++) {
        x[i] = (pair){fn, arg, i, &b};
        pthread_create(&t[i], NULL, pair_main, &x[i]);
    }
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&b);
}

/* Dispatch: async holds on one client whose callbacks note any overlap. */
typedef struct dispatching {
    zkl_client *c;
    atomic_int inside, overlaps, ran, busy, done;
    int want, fd;
} dispatching;

static void slow_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    dispatching *d = ud;
    int n;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    if (atomic_fetch_add(&d->inside, 1) != 0)
        atomic_fetch_add(&d->overlaps, 1);
    zkt_sleep_ms(2);
    n = -1;
    cr_assert_eq(zkl_client_dispatch(d->c, &n), ZKL_OK, "%s", zkl_errmsg());
    cr_assert_eq(n, 0, "a dispatch inside a completion ran %d", n);
    atomic_fetch_sub(&d->inside, 1);
    atomic_fetch_add(&d->ran, 1);
    cr_assert_eq(zkl_op_release(op), ZKL_OK);
}

static void dispatch_loop(void *arg, int who)
{
    dispatching *d = arg;
    int64_t t0 = zkt_now_ms();
    zkl_status st;
    (void)who;
    while (atomic_load(&d->ran) < d->want && zkt_now_ms() - t0 < 30000) {
        struct pollfd p = {d->fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) /* both threads wake when it is readable */
            continue;
        st = zkl_client_dispatch(d->c, NULL);
        if (st == ZKL_EBUSY) {
            cr_assert(strstr(zkl_errmsg(), "another thread"), "%s", zkl_errmsg());
            atomic_fetch_add(&d->busy, 1);
        } else
            cr_assert_eq(st, ZKL_OK, "%s", zkl_errmsg());
    }
}

/*
 * Two threads in zkl_client_dispatch on one client (issue 56, item 6): on
 * 65709ca both ran completions at once (20 to 27 of 40 latch callbacks
 * overlapped). One thread dispatches at a time; the other is told
 * ZKL_EBUSY, and every completion runs once; a dispatch from inside a
 * completion runs nothing.
 */
Test(sweep, two_threads_dispatch_one_client, .timeout = 90)
{
    dispatching d = {0};
    zkl_mutex *m[40];
    char *paths[40];
    zkl_op *op;
    int i;
    d.c = zkt_client(0);
    d.want = 40;
    OK(zkl_client_event_fd(d.c, &d.fd));
    for (i = 0; i < d.want; i++) {
        paths[i] = zkt_path("sweep-dispatch");
        OK(zkl_mutex_create(d.c, paths[i], &m[i]));
        OK(zkl_mutex_acquire_async(m[i], 10000, slow_cb, &d, &op));
    }
    at_once(dispatch_loop, &d);
    cr_assert_eq(atomic_load(&d.ran), d.want, "%d of %d completions ran", atomic_load(&d.ran),
                 d.want);
    cr_assert_eq(atomic_load(&d.overlaps), 0, "%d completions ran beside another",
                 atomic_load(&d.overlaps));
    for (i = 0; i < d.want; i++) {
        OK(zkl_mutex_destroy(m[i]));
        free(paths[i]);
    }
    OK(zkl_client_drain(d.c, 10000));
    OK(zkl_client_close(d.c));
}

/* A latch's calls from two threads: start (one takes part), await, guarded writes, leave. */
typedef struct latching {
    world *w;
    zkl_latch *l;
    atomic_int started, busy;
    zkl_status got[2][4];
} latching;

static void latch_pair(void *arg, int who)
{
    latching *x = arg;
    zkl_status st = zkl_latch_start(x->l, NULL, NULL);
    if (st == ZKL_OK)
        atomic_fetch_add(&x->started, 1);
    else if (st == ZKL_EBUSY)
        atomic_fetch_add(&x->busy, 1);
    x->got[who][0] = st;
    x->got[who][1] = zkl_latch_await(x->l, 10000);
    x->got[who][2] = zkl_latch_guarded_write(x->l, x->w->w, 1, NULL);
    x->got[who][3] = zkl_latch_leave(x->l, ZKL_LATCH_NOTIFY);
}

Test(sweep, two_threads_on_one_latch, .timeout = 120)
{
    world w;
    latching x = {0};
    int r, who;
    zhandle_t *zh = zkt_raw();
    world_make(&w);
    x.w = &w;
    for (r = 0; r < ROUNDS; r++) {
        OK(zkl_latch_create(w.c, w.paths[6], "pair", &x.l));
        atomic_store(&x.started, 0);
        atomic_store(&x.busy, 0);
        at_once(latch_pair, &x);
        cr_assert_eq(atomic_load(&x.started), 1, "round %d: %d starts took part", r,
                     atomic_load(&x.started));
        cr_assert_eq(atomic_load(&x.busy), 1, "round %d: the other start was not EBUSY", r);
        for (who = 0; who < 2; who++) {
            /* the await of a thread that comes after the other's leave is canceled */
            cr_expect(x.got[who][1] == ZKL_OK || x.got[who][1] == ZKL_ECANCELED,
                      "round %d: await: %s", r, zkl_strerror(x.got[who][1]));
            cr_expect(x.got[who][2] == ZKL_OK || x.got[who][2] == ZKL_ENOTOWNER,
                      "round %d: guarded write: %s", r, zkl_strerror(x.got[who][2]));
            cr_expect(x.got[who][1] != ZKL_OK || x.got[who][2] != ZKL_ENOTOWNER ||
                          x.got[!who][3] == ZKL_OK,
                      "round %d: led, then could not write with no leave between", r);
            cr_expect_eq(x.got[who][3], ZKL_OK, "round %d: leave: %s", r,
                         zkl_strerror(x.got[who][3]));
        }
        OK(zkl_latch_destroy(x.l));
        cr_assert_eq(zkt_children_settle(zh, w.paths[6], 0), 0, "round %d: a node was left", r);
    }
    zookeeper_close(zh);
    world_end(&w);
}

/* An async handle from two threads: its readers and guarded writes at once. */
static void op_pair(void *arg, int who)
{
    world *w = arg;
    int i;
    int64_t v, token0 = 0;
    char *node;
    (void)who;
    for (i = 0; i < ROUNDS; i++) {
        cr_assert(zkl_op_is_held(w->op));
        OK(zkl_op_fencing_token(w->op, &v));
        cr_assert(token0 == 0 || v == token0, "the token changed");
        token0 = v;
        OK(zkl_op_lease_remaining(w->op, &v));
        OK(zkl_op_node(w->op, &node));
        free(node);
        OK(zkl_op_guarded_write(w->op, w->w, 1, NULL));
    }
}

Test(sweep, two_threads_on_one_async_hold, .timeout = 90)
{
    world w;
    world_make(&w);
    at_once(op_pair, &w);
    world_end(&w);
}

/* A wait canceled from two threads at once: the callback reports once, ZKL_ECANCELED. */
typedef struct canceling {
    zkl_op *op;
    zkl_status got[2];
    atomic_int calls;
    zkl_status st;
} canceling;

static void canceled_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    canceling *x = ud;
    (void)op;
    (void)msg;
    x->st = st;
    atomic_fetch_add(&x->calls, 1);
}

static void cancel_pair(void *arg, int who)
{
    canceling *x = arg;
    x->got[who] = zkl_op_cancel(x->op);
}

static int cancel_reported(void *p)
{
    return atomic_load(&((canceling *)p)->calls) > 0;
}

Test(sweep, two_threads_cancel_one_wait, .timeout = 90)
{
    world w;
    zkl_client *c2;
    zkl_mutex *m2;
    canceling x;
    int r;
    world_make(&w);
    c2 = zkt_client(0);
    OK(zkl_mutex_create(c2, w.paths[4], &m2)); /* w.am's path, held by w.op */
    for (r = 0; r < ROUNDS; r++) {
        memset(&x, 0, sizeof x);
        OK(zkl_mutex_acquire_async(m2, ZKL_WAIT_FOREVER, canceled_cb, &x, &x.op));
        at_once(cancel_pair, &x);
        cr_assert(x.got[0] == ZKL_OK || x.got[1] == ZKL_OK, "round %d: no cancel won", r);
        cr_assert(zkt_wait_for(cancel_reported, &x, 20000), "round %d: never reported", r);
        zkt_sleep_ms(20);
        cr_assert_eq(atomic_load(&x.calls), 1, "round %d: reported %d times", r,
                     atomic_load(&x.calls));
        cr_assert_eq(x.st, ZKL_ECANCELED, "round %d: %s", r, zkl_strerror(x.st));
        OK(zkl_op_release(x.op));
    }
    OK(zkl_mutex_destroy(m2));
    OK(zkl_client_drain(c2, 10000));
    OK(zkl_client_close(c2));
    world_end(&w);
}

/* Async acquires of one mutex from two threads: granted in turn, never two at once. */
typedef struct turns {
    zkl_mutex *m;
    atomic_int holding, overlaps, granted;
} turns;

static void turn_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    turns *x = ud;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    if (atomic_fetch_add(&x->holding, 1) != 0)
        atomic_fetch_add(&x->overlaps, 1);
    atomic_fetch_sub(&x->holding, 1);
    atomic_fetch_add(&x->granted, 1);
    cr_assert_eq(zkl_op_release(op), ZKL_OK);
}

static void acquire_pair(void *arg, int who)
{
    turns *x = arg;
    zkl_op *op;
    int i;
    (void)who;
    for (i = 0; i < ROUNDS; i++)
        OK(zkl_mutex_acquire_async(x->m, 30000, turn_cb, x, &op));
}

static int all_granted(void *p)
{
    return atomic_load(&((turns *)p)->granted) == 2 * ROUNDS;
}

Test(sweep, two_threads_acquire_one_async_mutex, .timeout = 90)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("sweep-turns");
    turns x = {0};
    OK(zkl_mutex_create(c, path, &x.m));
    at_once(acquire_pair, &x);
    cr_assert(zkt_wait_for(all_granted, &x, 60000), "%d of %d granted", atomic_load(&x.granted),
              2 * ROUNDS);
    cr_assert_eq(atomic_load(&x.overlaps), 0, "two handles held at once");
    OK(zkl_mutex_destroy(x.m));
    OK(zkl_client_drain(c, 10000));
    OK(zkl_client_close(c));
    free(path);
}

/* The metrics from two threads while objects come and go. */
static void metrics_pair(void *arg, int who)
{
    world *w = arg;
    size_t len = 256 * 1024, needed;
    char *buf = malloc(len);
    zkl_mutex *m;
    int i;
    cr_assert(buf);
    for (i = 0; i < ROUNDS; i++) {
        if (who == 0) {
            OK(zkl_client_metrics(w->c, buf, len, &needed));
            OK(zkl_process_metrics(buf, len, &needed));
            cr_assert(strstr(buf, "# EOF\n"));
        } else {
            OK(zkl_mutex_create(w->c, w->paths[7], &m));
            OK(zkl_mutex_acquire(m, 10000));
            OK(zkl_mutex_release(m));
            OK(zkl_mutex_destroy(m));
        }
    }
    free(buf);
}

Test(sweep, two_threads_metrics_while_objects_come_and_go, .timeout = 90)
{
    world w;
    world_make(&w);
    at_once(metrics_pair, &w);
    world_end(&w);
}

/* The observer from two threads while the leader changes. */
static void observe_pair(void *arg, int who)
{
    world *w = arg;
    zkl_leader ld;
    int i;
    for (i = 0; i < ROUNDS; i++) {
        if (who == 0) {
            OK(zkl_leader_get(w->c, w->paths[5], &ld));
            zkl_leader_clear(&ld);
        } else {
            OK(zkl_latch_destroy(w->latch));
            OK(zkl_latch_create(w->c, w->paths[5], "again", &w->latch));
            OK(zkl_latch_start(w->latch, NULL, NULL));
        }
    }
}

Test(sweep, two_threads_observe_while_the_leader_changes, .timeout = 90)
{
    world w;
    world_make(&w);
    at_once(observe_pair, &w);
    OK(zkl_latch_await(w.latch, 10000));
    world_end(&w);
}
