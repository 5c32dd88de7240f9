/*
 * test_rwlock.c - zkl_rwlock against a real server: readers share, writers
 * exclude, downgrade leaves no window, upgrade is refused at once, a mixed
 * contention run never breaks the rules, and destroy refuses while held.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

Test(rwlock, readers_share_writers_exclude)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("rw");
    zkl_rwlock *la, *lb;
    char **v;
    size_t n;
    ok(zkl_rwlock_create(a, path, &la), "create");
    ok(zkl_rwlock_create(b, path, &lb), "create");
    ok(zkl_rwlock_read_acquire(la, 5000), "a reads");
    ok(zkl_rwlock_read_acquire(lb, 0), "b reads at the same time");
    cr_assert(zkl_rwlock_read_is_held(la) && zkl_rwlock_read_is_held(lb));
    ok(zkl_rwlock_participants(la, &v, &n), "participants");
    cr_assert_eq(n, 2);
    cr_assert(strstr(v[0], "-__READ__") && strstr(v[1], "-__READ__"), "layout: %s", v[0]);
    cr_assert(strstr(v[0], "/_c_"), "protected name: %s", v[0]);
    zkl_strings_free(v, n);
    ok(zkl_rwlock_read_release(lb), "b stops reading");
    cr_assert_eq(zkl_rwlock_write_acquire(lb, 300), ZKL_ETIMEDOUT, "a reader excludes a writer");
    ok(zkl_rwlock_read_release(la), "a stops reading");
    ok(zkl_rwlock_write_acquire(lb, 5000), "b writes");
    cr_assert(zkl_rwlock_write_is_held(lb));
    cr_assert_eq(zkl_rwlock_read_acquire(la, 300), ZKL_ETIMEDOUT, "a writer excludes readers");
    cr_assert_eq(zkl_rwlock_write_acquire(la, 0), ZKL_ETIMEDOUT, "and writers");
    ok(zkl_rwlock_write_release(lb), "release");
    ok(zkl_client_drain(a, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_rwlock_destroy(la), "destroy");
    ok(zkl_rwlock_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    free(path);
}

Test(rwlock, upgrade_is_refused_at_once)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("upgrade");
    zkl_rwlock *l;
    int64_t t0;
    ok(zkl_rwlock_create(c, path, &l), "create");
    ok(zkl_rwlock_read_acquire(l, 5000), "read");
    t0 = zkt_now_ms();
    cr_assert_eq(zkl_rwlock_write_acquire(l, ZKL_WAIT_FOREVER), ZKL_EDEADLOCK);
    cr_assert_lt(zkt_now_ms() - t0, 200, "must not wait");
    cr_assert(strstr(zkl_errmsg(), "read lock"), "message: %s", zkl_errmsg());
    ok(zkl_rwlock_read_release(l), "release");
    ok(zkl_rwlock_write_acquire(l, 5000), "write after releasing the read lock");
    ok(zkl_rwlock_write_acquire(l, 0), "write is reentrant");
    ok(zkl_rwlock_read_acquire(l, 0), "a writer may read");
    ok(zkl_rwlock_write_acquire(l, 0), "a writer that also reads may write again");
    ok(zkl_rwlock_write_release(l), "release");
    ok(zkl_rwlock_write_release(l), "release");
    ok(zkl_rwlock_read_release(l), "release");
    ok(zkl_rwlock_write_release(l), "release");
    cr_assert_eq(zkl_rwlock_write_release(l), ZKL_ENOTOWNER);
    cr_assert_eq(zkl_rwlock_destroy(NULL), ZKL_EINVAL);
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

struct writer {
    zkl_rwlock *l;
    zkl_status st;
    atomic_int got, release_now;
};

static void *queued_writer(void *arg)
{
    struct writer *w = arg;
    w->st = zkl_rwlock_write_acquire(w->l, 30000);
    atomic_store(&w->got, 1);
    while (w->st == ZKL_OK && !atomic_load(&w->release_now))
        zkt_sleep_ms(10);
    if (w->st == ZKL_OK)
        zkl_rwlock_write_release(w->l);
    return NULL;
}

static int flag(void *p)
{
    return atomic_load((atomic_int *)p);
}

Test(rwlock, downgrade_leaves_no_window, .timeout = 60)
{
    zkl_client *a = zkt_client(0), *b = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("downgrade");
    zkl_rwlock *la, *lb;
    struct writer w = {0};
    pthread_t t;
    char **v;
    size_t n;
    ok(zkl_rwlock_create(a, path, &la), "create");
    ok(zkl_rwlock_create(b, path, &lb), "create");
    ok(zkl_rwlock_write_acquire(la, 5000), "a writes");
    w.l = lb;
    pthread_create(&t, NULL, queued_writer, &w);
    /* b's writer is queued behind a */
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "b's writer never queued");
    zkt_requests_settle(b);
    ok(zkl_rwlock_read_acquire(la, 5000), "a takes the read lock while writing");
    ok(zkl_rwlock_participants(la, &v, &n), "participants");
    cr_assert_eq(n, 3);
    {
        /* the downgrade read node carries a's write sequence */
        const char *wseq = NULL, *rseq = NULL;
        size_t i;
        for (i = 0; i < n; i++) {
            if (strstr(v[i], "__READ__"))
                rseq = strstr(v[i], "__READ__") + 8;
        }
        for (i = 0; i < n && !wseq; i++)
            if (strstr(v[i], "__WRIT__"))
                wseq = strstr(v[i], "__WRIT__") + 8;
        cr_assert(rseq && wseq);
        cr_assert_str_eq(rseq, wseq, "Curator 5.5 downgrade node");
    }
    zkl_strings_free(v, n);
    ok(zkl_rwlock_write_release(la), "a releases the write lock, still reading");
    zkt_sleep_ms(1000);
    cr_assert_not(atomic_load(&w.got), "a queued writer got in while the downgrader reads");
    cr_assert(zkl_rwlock_read_is_held(la));
    ok(zkl_rwlock_read_release(la), "a stops reading");
    cr_assert(zkt_wait_for(flag, &w.got, 10000), "the writer never got the lock");
    ok(w.st, "writer");
    atomic_store(&w.release_now, 1);
    pthread_join(t, NULL);
    ok(zkl_client_drain(a, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_rwlock_destroy(la), "destroy");
    ok(zkl_rwlock_destroy(lb), "destroy");
    ok(zkl_client_close(a), "close");
    ok(zkl_client_close(b), "close");
    zookeeper_close(zh);
    free(path);
}

/* ---- mixed contention: 6 sessions, 1 in 5 acquisitions a write ---- */

struct rwshared {
    const char *path;
    atomic_int readers, writers, violations, max_readers, errors;
};

static void *rw_worker(void *arg)
{
    struct rwshared *sh = arg;
    zkl_client *c = zkt_client(10000);
    zkl_rwlock *l;
    int i;
    unsigned seed = (unsigned)(uintptr_t)&l;
    ok(zkl_rwlock_create(c, sh->path, &l), "create");
    for (i = 0; i < 40; i++) {
        int write = rand_r(&seed) % 5 == 0;
        if (write) {
            if (zkl_rwlock_write_acquire(l, 60000) != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            if (atomic_fetch_add(&sh->writers, 1) != 0 || atomic_load(&sh->readers) != 0)
                atomic_fetch_add(&sh->violations, 1);
            zkt_sleep_ms(2);
            atomic_fetch_sub(&sh->writers, 1);
            zkl_rwlock_write_release(l);
        } else {
            int r, m;
            if (zkl_rwlock_read_acquire(l, 60000) != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            r = atomic_fetch_add(&sh->readers, 1) + 1;
            if (atomic_load(&sh->writers) != 0)
                atomic_fetch_add(&sh->violations, 1);
            while ((m = atomic_load(&sh->max_readers)) < r &&
                   !atomic_compare_exchange_weak(&sh->max_readers, &m, r))
                ;
            zkt_sleep_ms(5);
            atomic_fetch_sub(&sh->readers, 1);
            zkl_rwlock_read_release(l);
        }
    }
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    return NULL;
}

Test(rwlock, mixed_contention_keeps_the_rules, .timeout = 300)
{
    struct rwshared sh = {0};
    pthread_t t[6];
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("rwmix");
    int i;
    sh.path = path;
    for (i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, rw_worker, &sh);
    for (i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(atomic_load(&sh.errors), 0);
    cr_assert_eq(atomic_load(&sh.violations), 0, "a reader and a writer, or two writers, at once");
    cr_assert_geq(atomic_load(&sh.max_readers), 2, "readers never shared");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    zookeeper_close(zh);
    free(path);
}

/* A lock object with holds on either side is not destroyed under them. */
Test(rwlock, destroy_refuses_while_held)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("rwdestroy");
    zkl_rwlock *l;
    ok(zkl_rwlock_create(c, path, &l), "create");
    ok(zkl_rwlock_read_acquire(l, 5000), "read");
    cr_assert_eq(zkl_rwlock_destroy(l), ZKL_EBUSY);
    cr_assert(strstr(zkl_errmsg(), "1 hold"), "%s", zkl_errmsg());
    ok(zkl_rwlock_read_release(l), "read release");
    ok(zkl_rwlock_write_acquire(l, 5000), "write");
    cr_assert_eq(zkl_rwlock_destroy(l), ZKL_EBUSY);
    cr_assert(zkl_rwlock_write_is_held(l), "a refused destroy leaves the hold");
    ok(zkl_rwlock_write_release(l), "write release");
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* Bad arguments are refused with a message, on either side. */
Test(rwlock, refuses_bad_arguments)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("rwbad");
    zkl_rwlock *l;
    int64_t token;
    char **v;
    size_t n;
    cr_assert_eq(zkl_rwlock_create(c, path, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_create(NULL, path, &l), ZKL_EINVAL);
    cr_assert_null(l);
    cr_assert_eq(zkl_rwlock_create(c, "relative", &l), ZKL_EBADPATH);
    ok(zkl_rwlock_create(c, path, &l), "create");
    cr_assert_eq(zkl_rwlock_read_acquire(l, -5), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "zkl_rwlock_read_acquire: timeout -5 ms is negative"), "%s",
              zkl_errmsg());
    cr_assert_eq(zkl_rwlock_write_acquire(l, -5), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "zkl_rwlock_write_acquire: timeout -5 ms is negative"), "%s",
              zkl_errmsg());
    cr_assert_not(zkl_rwlock_read_is_held(l) || zkl_rwlock_write_is_held(l),
                  "a refused acquire holds nothing");
    cr_assert_eq(zkl_rwlock_read_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_write_acquire(NULL, 0), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_read_release(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_write_release(NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_read_release(l), ZKL_ENOTOWNER);
    cr_assert_not(zkl_rwlock_read_is_held(NULL) || zkl_rwlock_write_is_held(NULL));
    cr_assert_eq(zkl_rwlock_read_fencing_token(l, &token), ZKL_ENOTOWNER);
    cr_assert_eq(zkl_rwlock_write_fencing_token(l, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_participants(NULL, &v, &n), ZKL_EINVAL);
    cr_assert_null(zkl_rwlock_path(NULL));
    cr_assert_str_eq(zkl_rwlock_path(l), path);
    ok(zkl_rwlock_read_acquire(l, ZKL_WAIT_FOREVER), "a refused call leaves the lock usable");
    ok(zkl_rwlock_read_release(l), "release");
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}
