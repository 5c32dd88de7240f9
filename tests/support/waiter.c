/*
 * waiter.c - see waiter.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "waiter.h"
#include "zkt.h"

static void *waiter_main(void *arg)
{
    zkt_waiter *w = arg;
    zkl_status st = zkl_mutex_acquire(w->m, w->timeout_ms);
    w->got_at = zkt_now_ms();
    if (st != ZKL_OK)
        snprintf(w->msg, sizeof w->msg, "%s", zkl_errmsg());
    if (st == ZKL_OK) {
        if (w->order)
            w->rank = atomic_fetch_add(w->order, 1) + 1;
        if (zkl_mutex_node(w->m, &w->node) != ZKL_OK)
            w->node = NULL;
    }
    w->st = st;
    atomic_store(&w->done, 1);
    while (st == ZKL_OK && !atomic_load(&w->release_now))
        zkt_sleep_ms(5);
    if (st == ZKL_OK)
        w->release_st = zkl_mutex_release(w->m);
    atomic_store(&w->released, 1);
    return NULL;
}

void zkt_waiter_start(zkt_waiter *w, zkl_mutex *m, int timeout_ms, atomic_int *order)
{
    w->m = m;
    w->timeout_ms = timeout_ms;
    w->order = order;
    cr_assert_eq(pthread_create(&w->t, NULL, waiter_main, w), 0);
}

void zkt_waiter_until_done(zkt_waiter *w)
{
    while (!atomic_load(&w->done))
        zkt_sleep_ms(5);
}

void zkt_waiter_finish(zkt_waiter *w)
{
    atomic_store(&w->release_now, 1);
    pthread_join(w->t, NULL);
    free(w->node);
    w->node = NULL;
}

void zkt_waiter_release(zkt_waiter *w)
{
    zkt_waiter_finish(w);
    if (w->st == ZKL_OK)
        ok(w->release_st, "release on the holder's thread");
}

void zkt_in_turn(zkt_waiter *const *w, const char *names, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        zkt_waiter_until_done(w[i]);
        cr_assert_eq(w[i]->st, ZKL_OK, "%c acquires in turn: %s", names[i], zkl_strerror(w[i]->st));
        zkt_waiter_release(w[i]);
    }
}

void zkt_party_open(zkt_party *p, int n, const char *what, int session_ms)
{
    int i;
    cr_assert_leq(n, 4);
    p->n = n;
    p->zh = zkt_raw();
    p->path = zkt_path(what);
    for (i = 0; i < n; i++) {
        p->c[i] = zkt_client(session_ms);
        ok(zkl_mutex_create(p->c[i], p->path, &p->m[i]), "create");
    }
}

void zkt_party_close(zkt_party *p)
{
    int i;
    cr_assert_eq(zkt_children_settle(p->zh, p->path, 0), 0, "znodes left behind");
    for (i = 0; i < p->n; i++) {
        ok(zkl_mutex_destroy(p->m[i]), "destroy");
        ok(zkl_client_close(p->c[i]), "close");
    }
    zookeeper_close(p->zh);
    free(p->path);
}

static void *relock_main(void *arg)
{
    zkt_relock *r = arg;
    r->w.st = zkl_mutex_acquire(r->w.m, r->w.timeout_ms);
    atomic_store(&r->w.done, 1);
    if (r->w.st != ZKL_OK)
        return NULL;
    while (!atomic_load(&r->w.release_now))
        zkt_sleep_ms(5);
    r->before = zkt_lock_requests(r->c);
    r->release_st = zkl_mutex_release(r->w.m);
    r->acquire_st = zkl_mutex_acquire(r->w.m, 30000);
    r->after = zkt_lock_requests(r->c);
    atomic_store(&r->reacquired, 1);
    if (r->acquire_st == ZKL_OK)
        r->w.release_st = zkl_mutex_release(r->w.m);
    return NULL;
}

void zkt_relock_start(zkt_relock *r, zkl_client *c, zkl_mutex *m)
{
    r->c = c;
    r->w.m = m;
    r->w.timeout_ms = 30000;
    cr_assert_eq(pthread_create(&r->w.t, NULL, relock_main, r), 0);
}

void zkt_relock_join(zkt_relock *r)
{
    while (!atomic_load(&r->reacquired))
        zkt_sleep_ms(5);
    pthread_join(r->w.t, NULL);
    ok(r->release_st, "release");
    ok(r->acquire_st, "acquire again");
    ok(r->w.release_st, "release again");
}
