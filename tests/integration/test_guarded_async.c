/*
 * test_guarded_async.c - async guarded writes (zkl_op_guarded_write_async,
 * issue 39): the answer is delivered as the handle's acquire was (on the
 * worker, or by zkl_client_dispatch), exactly once, with the writes'
 * results in the caller's array; refusals and the lost hold as in the
 * blocking form; the handle may be released with a write in flight; the
 * client refuses to close while one has not reported; calls from inside
 * the answer work or refuse at once; bad input is refused with no answer.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writes.h"
#include "zkt.h"

/* An answer, as the callback saw it. */
typedef struct answer {
    atomic_int calls;
    zkl_status st;
    size_t failed;
    char msg[512];
    pthread_t thread;
    /* what the callback does from inside (calls_from_inside_the_answer) */
    zkl_client *c;
    zkl_op *op;
    zkl_status close_st, release_st;
} answer;

static void on_answer(zkl_status st, size_t failed, const char *msg, void *ud)
{
    answer *a = ud;
    a->st = st;
    a->failed = failed;
    snprintf(a->msg, sizeof a->msg, "%s", msg);
    a->thread = pthread_self();
    atomic_fetch_add(&a->calls, 1);
}

static int answered(void *p)
{
    return atomic_load(&((answer *)p)->calls) > 0;
}

/* An async hold of a mutex at path on c (worker delivery). */
typedef struct held {
    zkl_mutex *m;
    zkl_op *op;
    atomic_int calls;
    zkl_status st;
} held;

static void on_granted(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    held *h = ud;
    (void)op;
    (void)msg;
    h->st = st;
    atomic_fetch_add(&h->calls, 1);
}

static int granted(void *p)
{
    return atomic_load(&((held *)p)->calls) > 0;
}

/* Run c's dispatch (descriptor fd) until cond(arg), within ms. */
static int dispatch_until(zkl_client *c, int fd, int (*cond)(void *), void *arg, int ms)
{
    int64_t end = zkt_now_ms() + ms;
    while (!cond(arg) && zkt_now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ran;
        if (poll(&p, 1, 50) > 0)
            ok(zkl_client_dispatch(c, &ran), "dispatch");
    }
    return cond(arg);
}

/* Take m at path on c; fd >= 0: c delivers through it. */
static void take(zkl_client *c, int fd, const char *path, held *h)
{
    memset(h, 0, sizeof *h);
    ok(zkl_mutex_create(c, path, &h->m), "mutex create");
    ok(zkl_mutex_acquire_async(h->m, 10000, on_granted, h, &h->op), "acquire async");
    if (fd >= 0)
        cr_assert(dispatch_until(c, fd, granted, h, 15000), "no grant");
    else
        cr_assert(zkt_wait_for(granted, h, 15000), "no grant");
    ok(h->st, "the async acquire");
}

static void drop(held *h, bool lost)
{
    zkl_status st = zkl_op_release(h->op);
    cr_assert(st == ZKL_OK || (lost && st == ZKL_ELOST), "release: %s", zkl_strerror(st));
    ok(zkl_mutex_destroy(h->m), "mutex destroy");
}

/* A create of path + suffix, its path made wanted in buf. */
static zkl_write create_of(char *path, size_t cap, const char *base, const char *suffix, char *buf,
                           size_t buflen)
{
    zkl_write w;
    memset(&w, 0, sizeof w);
    snprintf(path, cap, "%s%s", base, suffix);
    w.type = ZKL_WRITE_CREATE;
    w.path = path;
    w.mode = ZKL_CREATE_PERSISTENT;
    w.created = buf;
    w.created_len = buflen;
    return w;
}

/* On the worker: a set and a create apply, their results in the array. */
Test(guarded_async, answer_on_the_worker, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-worker"), *counter = zkt_counter_for(zh, path);
    char made_path[300], made[300] = "", kid[320];
    zkl_client *c = zkt_client(0);
    zkl_write w[2];
    answer a = {0};
    held h;
    take(c, -1, path, &h);
    w[0] = zkt_set_to(counter, "1");
    w[1] = create_of(made_path, sizeof made_path, counter, "-made", made, sizeof made);
    ok(zkl_op_guarded_write_async(h.op, w, 2, NULL, on_answer, &a), "write async");
    cr_assert(zkt_wait_for(answered, &a, 15000), "no answer");
    ok(a.st, a.msg);
    cr_assert_eq(a.failed, SIZE_MAX);
    cr_assert_not(pthread_equal(a.thread, pthread_self()), "not on the worker");
    cr_assert_eq(w[0].rc, ZOK);
    cr_assert_eq(w[0].stat.version, 2, "the set's stat");
    cr_assert_eq(w[1].rc, ZOK);
    cr_assert_str_eq(made, made_path);
    cr_assert_eq(zkt_number_at(zh, counter), 1);
    zkt_sleep_ms(200);
    cr_assert_eq(atomic_load(&a.calls), 1, "answered more than once");
    drop(&h, false);
    snprintf(kid, sizeof kid, "%s", made_path);
    zoo_delete(zh, kid, -1);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* The answer is in before the sender has noted its request: delivered once, after both. */
Test(guarded_async, answer_before_the_sender_is_back, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-race"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(0);
    zkl_write w = zkt_set_to(counter, "2");
    answer a = {0};
    held h;
    int64_t t0;
    take(c, -1, path, &h);
    zkt_fault_set(c, ZKL__FAULT_WRITE_SENT_MS, 500);
    t0 = zkt_now_ms();
    ok(zkl_op_guarded_write_async(h.op, &w, 1, NULL, on_answer, &a), "write async");
    cr_assert_geq(zkt_now_ms() - t0, 500, "the sender did not pause");
    cr_assert(zkt_wait_for(answered, &a, 15000), "no answer");
    ok(a.st, a.msg);
    cr_assert_eq(zkt_number_at(zh, counter), 2);
    zkt_fault_set(c, ZKL__FAULT_WRITE_SENT_MS, 0);
    zkt_sleep_ms(200);
    cr_assert_eq(atomic_load(&a.calls), 1, "answered more than once");
    drop(&h, false);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* Through the descriptor: on the dispatching thread; a refused write is named, nothing applies. */
Test(guarded_async, refusal_through_the_descriptor, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-fd"), *counter = zkt_counter_for(zh, path);
    char taken[300];
    zkl_client *c = zkt_client(0);
    zkl_write w[2];
    answer a = {0};
    held h;
    int fd;
    ok(zkl_client_event_fd(c, &fd), "event_fd");
    take(c, fd, path, &h);
    w[0] = zkt_set_to(counter, "5");
    w[1] = create_of(taken, sizeof taken, counter, "", NULL, 0); /* exists */
    ok(zkl_op_guarded_write_async(h.op, w, 2, NULL, on_answer, &a), "write async");
    zkt_sleep_ms(300);
    cr_assert_eq(atomic_load(&a.calls), 0, "answered before dispatch");
    cr_assert(dispatch_until(c, fd, answered, &a, 15000), "no answer");
    cr_assert_eq(a.st, ZKL_EZK, "%s: %s", zkl_strerror(a.st), a.msg);
    cr_assert_eq(a.failed, 1);
    cr_assert_eq(w[1].rc, ZNODEEXISTS);
    cr_assert_eq(w[0].rc, ZOK, "the write before the refused one reads 0");
    cr_assert(strstr(a.msg, "write 1") && strstr(a.msg, "nothing was applied"), "%s", a.msg);
    cr_assert(pthread_equal(a.thread, pthread_self()), "not on the dispatching thread");
    cr_assert_eq(zkt_number_at(zh, counter), 0, "applied");
    drop(&h, false);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* Writes in flight apply in the order sent: each sets the version the one before made. */
Test(guarded_async, many_in_flight_apply_in_order, .timeout = 60)
{
    enum { N = 40 };
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-many"), *counter = zkt_counter_for(zh, path);
    char values[N][8];
    zkl_client *c = zkt_client(0);
    zkl_write w[N];
    answer a[N];
    held h;
    int i;
    memset(a, 0, sizeof a);
    take(c, -1, path, &h);
    for (i = 0; i < N; i++) {
        snprintf(values[i], sizeof values[i], "%d", i + 1);
        w[i] = zkt_set_to(counter, values[i]);
        w[i].version = i + 1; /* counter_for left it at 1 */
        ok(zkl_op_guarded_write_async(h.op, &w[i], 1, NULL, on_answer, &a[i]), "write async");
    }
    for (i = 0; i < N; i++) {
        cr_assert(zkt_wait_for(answered, &a[i], 15000), "no answer %d", i);
        cr_assert_eq(a[i].st, ZKL_OK, "write %d: %s", i, a[i].msg);
        cr_assert_eq(w[i].stat.version, i + 2);
    }
    cr_assert_eq(zkt_number_at(zh, counter), N);
    drop(&h, false);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* Released with a write in flight: the write is answered, applied before the delete. */
Test(guarded_async, release_with_a_write_in_flight, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-release"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(0);
    zkl_write w = zkt_set_to(counter, "7");
    answer a = {0};
    held h;
    take(c, -1, path, &h);
    ok(zkl_op_guarded_write_async(h.op, &w, 1, NULL, on_answer, &a), "write async");
    drop(&h, false);
    cr_assert(zkt_wait_for(answered, &a, 15000), "no answer");
    ok(a.st, a.msg);
    cr_assert_eq(zkt_number_at(zh, counter), 7);
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a lock node left");
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* Close refuses while a write has not reported; after its dispatch, it closes. */
Test(guarded_async, close_refuses_until_reported, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-close"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(0);
    zkl_write w = zkt_set_to(counter, "3");
    struct pollfd p;
    answer a = {0};
    held h;
    int fd;
    ok(zkl_client_event_fd(c, &fd), "event_fd");
    take(c, fd, path, &h);
    ok(zkl_op_guarded_write_async(h.op, &w, 1, NULL, on_answer, &a), "write async");
    drop(&h, false);
    p.fd = fd;
    p.events = POLLIN;
    cr_assert_eq(poll(&p, 1, 15000), 1, "no report queued");
    cr_assert_eq(zkl_client_close(c), ZKL_EBUSY);
    cr_assert(strstr(zkl_errmsg(), "guarded write"), "%s", zkl_errmsg());
    cr_assert_eq(atomic_load(&a.calls), 0);
    cr_assert(dispatch_until(c, fd, answered, &a, 15000), "no answer");
    ok(a.st, a.msg);
    ok(zkl_client_close(c), "close");
    cr_assert_eq(zkt_number_at(zh, counter), 3);
    zkt_scene_end(zh, counter, path);
}

static void inside(zkl_status st, size_t failed, const char *msg, void *ud)
{
    answer *a = ud;
    a->close_st = zkl_client_close(a->c); /* refuses: its callback is running */
    a->release_st = zkl_op_release(a->op);
    on_answer(st, failed, msg, ud);
}

/* From inside the answer: close refuses at once, a release works. */
Test(guarded_async, calls_from_inside_the_answer, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-inside"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(0);
    zkl_write w = zkt_set_to(counter, "4");
    answer a = {0};
    held h;
    int fd, round;
    for (round = 0; round < 2; round++) { /* on the worker, then through the descriptor */
        memset(&a, 0, sizeof a);
        if (round == 1)
            ok(zkl_client_event_fd(c, &fd), "event_fd");
        take(c, round ? fd : -1, path, &h);
        a.c = c;
        a.op = h.op;
        ok(zkl_op_guarded_write_async(h.op, &w, 1, NULL, inside, &a), "write async");
        if (round)
            cr_assert(dispatch_until(c, fd, answered, &a, 15000), "no answer");
        else
            cr_assert(zkt_wait_for(answered, &a, 15000), "no answer");
        ok(a.st, a.msg);
        cr_assert_eq(a.close_st, ZKL_EBUSY, "close from inside: %s", zkl_strerror(a.close_st));
        ok(a.release_st, "release from inside");
        ok(zkl_mutex_destroy(h.m), "mutex destroy");
    }
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

static void write_in_grant(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    answer *a = ud;
    zkl_write *w = (zkl_write *)a->c; /* the test's write, passed through c */
    (void)msg;
    a->release_st = st == ZKL_OK ? zkl_op_guarded_write_async(op, w, 1, NULL, on_answer, a) : st;
}

/* From inside the acquire's own callback, a write is sent and answered. */
Test(guarded_async, write_from_the_grant, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-grant"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(0);
    zkl_write w = zkt_set_to(counter, "6");
    answer a = {0};
    zkl_mutex *m;
    zkl_op *op;
    a.c = (zkl_client *)&w;
    ok(zkl_mutex_create(c, path, &m), "mutex create");
    ok(zkl_mutex_acquire_async(m, 10000, write_in_grant, &a, &op), "acquire async");
    cr_assert(zkt_wait_for(answered, &a, 15000), "no answer");
    ok(a.release_st, "write from the grant");
    ok(a.st, a.msg);
    cr_assert_eq(zkt_number_at(zh, counter), 6);
    ok(zkl_op_release(op), "release");
    ok(zkl_mutex_destroy(m), "mutex destroy");
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* Once the client knows the session is gone: refused at once, nothing sent, no answer. */
Test(guarded_async, lost_hold_refused_at_once, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-lost"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(4000);
    zkl_write w = zkt_set_to(counter, "8");
    answer a = {0};
    held h;
    take(c, -1, path, &h);
    zkt_expire_seen(c);
    cr_assert_eq(zkl_op_guarded_write_async(h.op, &w, 1, NULL, on_answer, &a), ZKL_ELOST, "%s",
                 zkl_errmsg());
    zkt_sleep_ms(300);
    cr_assert_eq(atomic_load(&a.calls), 0, "answered a write never sent");
    cr_assert_eq(zkt_number_at(zh, counter), 0);
    drop(&h, true);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/*
 * The session expired on the server while the client does not know yet:
 * each write sent is answered ZKL_ELOST (or ZKL_ECONNLOSS while the client
 * finds out), or refused at once once it knows; none applies.
 */
Test(guarded_async, expired_on_the_server, .timeout = 90)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-expired"), *counter = zkt_counter_for(zh, path);
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_write w = zkt_set_to(counter, "9");
    int64_t end;
    int lost = 0, tries = 0;
    held h;
    zkl_client_options_init(&o);
    o.session_timeout_ms = 4000;
    ok(zkl_client_open(zkt_servers(), &o, &c), "open");
    take(c, -1, path, &h);
    zkt_expire(c);
    end = zkt_now_ms() + 30000;
    while (lost == 0 && zkt_now_ms() < end) {
        answer a = {0};
        zkl_status st = zkl_op_guarded_write_async(h.op, &w, 1, NULL, on_answer, &a);
        tries++;
        if (st == ZKL_OK) {
            cr_assert(zkt_wait_for(answered, &a, 15000), "no answer");
            st = a.st;
        }
        cr_assert(st == ZKL_ELOST || st == ZKL_ECONNLOSS, "got %s", zkl_strerror(st));
        lost += st == ZKL_ELOST;
    }
    cr_assert_gt(lost, 0, "no write refused as lost in %d tries", tries);
    cr_assert_eq(zkt_number_at(zh, counter), 0, "applied after the session expired");
    drop(&h, true);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}

/* Misuse and bad input: refused before anything is sent, and no answer comes. */
Test(guarded_async, bad_input_is_refused, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("gwa-bad"), *counter = zkt_counter_for(zh, path);
    zkl_client *c = zkt_client(0);
    zkl_write w[ZKL_GUARDED_MAX + 1], bad;
    answer a = {0};
    held h, waiting;
    size_t failed = 0;
    int i;
    take(c, -1, path, &h);
    for (i = 0; i <= ZKL_GUARDED_MAX; i++)
        w[i] = zkt_set_to(counter, "1");
    cr_assert_eq(zkl_op_guarded_write_async(NULL, w, 1, &failed, on_answer, &a), ZKL_EINVAL);
    cr_assert_eq(failed, SIZE_MAX);
    cr_assert_eq(zkl_op_guarded_write_async(h.op, w, 1, &failed, NULL, &a), ZKL_EINVAL);
    cr_assert_eq(zkl_op_guarded_write_async(h.op, NULL, 1, &failed, on_answer, &a), ZKL_EINVAL);
    cr_assert_eq(zkl_op_guarded_write_async(h.op, w, 0, &failed, on_answer, &a), ZKL_EINVAL);
    cr_assert_eq(zkl_op_guarded_write_async(h.op, w, ZKL_GUARDED_MAX + 1, &failed, on_answer, &a),
                 ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "at most 64"), "%s", zkl_errmsg());
    bad = zkt_set_to("not/absolute", "1");
    w[1] = bad;
    cr_assert_eq(zkl_op_guarded_write_async(h.op, w, 2, &failed, on_answer, &a), ZKL_EBADPATH);
    cr_assert_eq(failed, 1, "the bad write is named");
    /* a handle that holds nothing yet */
    memset(&waiting, 0, sizeof waiting);
    ok(zkl_mutex_create(c, path, &waiting.m), "mutex create");
    ok(zkl_mutex_acquire_async(waiting.m, 500, on_granted, &waiting, &waiting.op), "acquire");
    cr_assert_eq(zkl_op_guarded_write_async(waiting.op, w, 1, &failed, on_answer, &a),
                 ZKL_ENOTOWNER);
    cr_assert(zkt_wait_for(granted, &waiting, 15000), "no outcome");
    cr_assert_eq(waiting.st, ZKL_ETIMEDOUT);
    cr_assert_eq(zkl_op_guarded_write_async(waiting.op, w, 1, &failed, on_answer, &a),
                 ZKL_ENOTOWNER, "a handle that timed out");
    drop(&waiting, false);
    zkt_sleep_ms(200);
    cr_assert_eq(atomic_load(&a.calls), 0, "an answer came for a write never sent");
    cr_assert_eq(zkt_number_at(zh, counter), 0, "applied");
    drop(&h, false);
    ok(zkl_client_close(c), "close");
    zkt_scene_end(zh, counter, path);
}
