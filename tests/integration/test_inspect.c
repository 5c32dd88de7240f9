/*
 * test_inspect.c - zkl_inspect and the recipes' participant lists against a
 * real server: a mutex line (holder, then waiters in queue order, with
 * tokens, owners and data), a read/write line (readers behind a waiting
 * writer wait too), Curator's semaphore layout (leases, then the waiters on
 * its internal lock, none of which holds), a path that does not exist, and
 * bad arguments.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

/* A contender on its own session and thread: acquire (waiting in line), then release. */
enum what { MUTEX, READ, WRITE, SEMAPHORE };

struct contender {
    enum what what;
    const char *path;
    zkl_client *c;
    zkl_status st;
    pthread_t t;
};

static void *contend(void *arg)
{
    struct contender *k = arg;
    zkl_mutex *m = NULL;
    zkl_rwlock *rw = NULL;
    zkl_semaphore *s = NULL;
    zkl_lease *l = NULL;
    switch (k->what) {
    case MUTEX:
        ok(zkl_mutex_create(k->c, k->path, &m), "create");
        if ((k->st = zkl_mutex_acquire(m, 30000)) == ZKL_OK)
            ok(zkl_mutex_release(m), "release");
        ok(zkl_mutex_destroy(m), "destroy");
        break;
    case READ:
    case WRITE:
        ok(zkl_rwlock_create(k->c, k->path, &rw), "create");
        if (k->what == READ) {
            if ((k->st = zkl_rwlock_read_acquire(rw, 30000)) == ZKL_OK)
                ok(zkl_rwlock_read_release(rw), "release");
        } else if ((k->st = zkl_rwlock_write_acquire(rw, 30000)) == ZKL_OK) {
            ok(zkl_rwlock_write_release(rw), "release");
        }
        ok(zkl_rwlock_destroy(rw), "destroy");
        break;
    case SEMAPHORE:
        ok(zkl_semaphore_create(k->c, k->path, 3, &s), "create");
        if ((k->st = zkl_semaphore_acquire(s, 30000, &l)) == ZKL_OK)
            ok(zkl_lease_return(l), "return");
        ok(zkl_semaphore_destroy(s), "destroy");
        break;
    }
    return NULL;
}

static void start(struct contender *k, enum what what, const char *path)
{
    k->what = what;
    k->path = path;
    k->c = zkt_client(0);
    k->st = ZKL_EINVAL;
    pthread_create(&k->t, NULL, contend, k);
}

static void finish(struct contender *k, const char *what)
{
    pthread_join(k->t, NULL);
    ok(k->st, what);
    ok(zkl_client_close(k->c), "close");
}

static zkl_participant *inspect(zkl_client *c, const char *path, size_t *n)
{
    zkl_participant *v = NULL;
    ok(zkl_inspect(c, path, &v, n), "inspect");
    return v;
}

Test(inspect, mutex_line_in_queue_order)
{
    zkl_client *a = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("inspmutex");
    zkl_mutex *m;
    struct contender b, c;
    zkl_participant *v;
    size_t n, i;
    int64_t token;
    ok(zkl_mutex_create(a, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "a holds");
    ok(zkl_mutex_fencing_token(m, &token), "token");
    start(&b, MUTEX, path);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b queues");
    start(&c, MUTEX, path);
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3, "c queues behind b");

    v = inspect(a, path, &n);
    cr_assert_eq(n, 3);
    for (i = 0; i < n; i++) {
        cr_assert_eq(v[i].kind, 'M', "%zu: kind %c", i, v[i].kind);
        cr_assert_eq(v[i].holds, i == 0, "%zu: only the head holds", i);
        cr_assert(strstr(v[i].node, "-lock-"), "%s", v[i].node);
        cr_assert_eq(strncmp(v[i].node, path, strlen(path)), 0, "full path: %s", v[i].node);
        cr_assert_gt(v[i].data_len, 0, "the client's default node data");
        cr_assert_eq(strlen(v[i].data), v[i].data_len);
        if (i > 0)
            cr_assert_gt(v[i].token, v[i - 1].token, "queue order is creation order");
    }
    cr_assert_eq(v[0].token, token, "the holder's token is its fencing token");
    cr_assert_eq(v[0].owner, zkl_client_session_id(a));
    cr_assert_eq(v[1].owner, zkl_client_session_id(b.c));
    cr_assert_eq(v[2].owner, zkl_client_session_id(c.c));
    zkl_participants_free(v, n);

    ok(zkl_mutex_release(m), "a releases");
    finish(&b, "b");
    finish(&c, "c");
    v = inspect(a, path, &n);
    cr_assert_eq(n, 0, "nobody left in line");
    zkl_participants_free(v, n);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(a), "close");
    zookeeper_close(zh);
    free(path);
}

Test(inspect, rwlock_readers_behind_a_writer_wait)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("insprw");
    zkl_rwlock *la, *lb;
    struct contender w, r;
    zkl_participant *v;
    size_t n, i;
    ok(zkl_rwlock_create(a, path, &la), "create");
    ok(zkl_rwlock_create(b, path, &lb), "create");
    ok(zkl_rwlock_read_acquire(la, 5000), "a reads");
    ok(zkl_rwlock_read_acquire(la, 0), "a reads again: reentrant, no second node");
    cr_assert_eq(zkt_children(zh, path), 1);
    ok(zkl_rwlock_read_acquire(lb, 0), "b reads beside a");
    start(&w, WRITE, path);
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3, "the writer queues");
    start(&r, READ, path);
    cr_assert_eq(zkt_children_settle(zh, path, 4), 4, "a reader queues behind it");

    v = inspect(a, path, &n);
    cr_assert_eq(n, 4);
    for (i = 0; i < 2; i++) {
        cr_assert_eq(v[i].kind, 'R', "%zu: %s", i, v[i].node);
        cr_assert(v[i].holds, "%zu: readers ahead of any writer hold", i);
    }
    cr_assert_eq(v[0].owner, zkl_client_session_id(a));
    cr_assert_eq(v[1].owner, zkl_client_session_id(b));
    cr_assert_eq(v[2].kind, 'W', "%s", v[2].node);
    cr_assert_not(v[2].holds, "a writer behind readers waits");
    cr_assert_eq(v[2].owner, zkl_client_session_id(w.c));
    cr_assert_eq(v[3].kind, 'R', "%s", v[3].node);
    cr_assert_not(v[3].holds, "a reader behind a waiting writer waits");
    zkl_participants_free(v, n);

    ok(zkl_rwlock_read_release(la), "a lets go once");
    cr_assert(zkl_rwlock_read_is_held(la), "and still reads");
    ok(zkl_rwlock_read_release(la), "a lets go");
    ok(zkl_rwlock_read_release(lb), "b lets go");
    finish(&w, "the writer");
    finish(&r, "the reader behind it");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_rwlock_destroy(la), "destroy");
    ok(zkl_rwlock_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    free(path);
}

Test(inspect, semaphore_leases_then_waiters)
{
    zkl_client *a = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("inspsem"), leases[300], locks[300];
    zkl_semaphore *s;
    zkl_lease *l[3];
    struct contender b, c;
    zkl_participant *v;
    char **paths;
    size_t n, i;
    snprintf(leases, sizeof leases, "%s/leases", path);
    snprintf(locks, sizeof locks, "%s/locks", path);
    ok(zkl_semaphore_create(a, path, 3, &s), "create");
    ok(zkl_semaphore_acquire_many(s, 3, 5000, l), "a takes all three leases");

    ok(zkl_semaphore_participants(s, &paths, &n), "participants");
    cr_assert_eq(n, 3);
    for (i = 0; i < 3; i++)
        cr_assert_str_eq(paths[i], zkl_lease_node(l[i]), "in the order taken");
    zkl_strings_free(paths, n);

    /* b takes the internal lock, adds its lease and waits for the count;
     * c waits for the internal lock behind b */
    start(&b, SEMAPHORE, path);
    cr_assert_eq(zkt_children_settle(zh, leases, 4), 4);
    start(&c, SEMAPHORE, path);
    cr_assert_eq(zkt_children_settle(zh, locks, 2), 2);

    v = inspect(a, path, &n);
    cr_assert_eq(n, 6, "four leases, then two waiters on the internal lock");
    for (i = 0; i < 4; i++) {
        cr_assert_eq(v[i].kind, 'S', "%zu: %s", i, v[i].node);
        cr_assert(v[i].holds, "%zu: every lease reads as held (see inspect.h)", i);
        if (i > 0)
            cr_assert_gt(v[i].token, v[i - 1].token, "%zu: oldest lease first", i);
    }
    for (i = 0; i < 3; i++) {
        cr_assert_str_eq(v[i].node, zkl_lease_node(l[i]), "%zu", i);
        cr_assert_eq(v[i].owner, zkl_client_session_id(a));
    }
    /* b's lease, though b still waits for the count */
    cr_assert_eq(v[3].owner, zkl_client_session_id(b.c));
    for (i = 4; i < 6; i++) {
        cr_assert_eq(v[i].kind, 'M', "%zu: %s", i, v[i].node);
        cr_assert_not(v[i].holds, "%zu: waits for a lease, though it heads the internal lock", i);
        cr_assert_eq(strncmp(v[i].node, locks, strlen(locks)), 0, "%s", v[i].node);
    }
    cr_assert_eq(v[4].owner, zkl_client_session_id(b.c));
    cr_assert_eq(v[5].owner, zkl_client_session_id(c.c));
    zkl_participants_free(v, n);

    for (i = 0; i < 3; i++)
        ok(zkl_lease_return(l[i]), "a returns its leases");
    finish(&b, "b");
    finish(&c, "c");
    cr_assert_eq(zkt_children_settle(zh, leases, 0), 0, "no lease left");
    ok(zkl_semaphore_participants(s, &paths, &n), "participants");
    cr_assert_eq(n, 0);
    zkl_strings_free(paths, n);
    ok(zkl_semaphore_destroy(s), "destroy");
    ok(zkl_client_close(a), "close");
    zookeeper_close(zh);
    free(path);
}

Test(inspect, missing_path_and_bad_arguments)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("inspnone");
    zkl_participant *v = (zkl_participant *)0x1;
    size_t n = 7;
    zkl_semaphore *s;
    char **paths;
    v = inspect(c, path, &n);
    cr_assert_eq(n, 0, "a path that does not exist has no participants");
    zkl_participants_free(v, n);
    cr_assert_eq(zkl_inspect(NULL, path, &v, &n), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "NULL"), "%s", zkl_errmsg());
    cr_assert_eq(zkl_inspect(c, path, NULL, &n), ZKL_EINVAL);
    cr_assert_eq(zkl_inspect(c, path, &v, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_inspect(c, "relative/path", &v, &n), ZKL_EBADPATH);
    cr_assert_eq(zkl_inspect(c, NULL, &v, &n), ZKL_EINVAL);
    ok(zkl_semaphore_create(c, path, 2, &s), "create");
    cr_assert_eq(zkl_semaphore_participants(NULL, &paths, &n), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_participants(s, NULL, &n), ZKL_EINVAL);
    cr_assert_eq(zkl_semaphore_participants(s, &paths, NULL), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "NULL"), "%s", zkl_errmsg());
    ok(zkl_semaphore_participants(s, &paths, &n), "participants of a semaphore never used");
    cr_assert_eq(n, 0);
    zkl_strings_free(paths, n);
    ok(zkl_semaphore_destroy(s), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}
