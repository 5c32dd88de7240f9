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
