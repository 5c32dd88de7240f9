/*
 * zkcall.c - see zkcall.h. The completion functions run on the ZooKeeper
 * completion thread: they copy the reply into the waiting call and signal,
 * nothing more. A call lives on the heap with two references, the waiter's
 * and the completion's, so that a waiter may give up at its deadline (a
 * silent link can hold a reply back for most of a session timeout) while the
 * completion still has somewhere to write when it comes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "base/tsan.h"
#include "base/util.h"
#include "requests/calls.h"

typedef struct call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int refs;
    int rc;
    int reply_rc; /* the server's, before a copy of the reply failed for memory */
    char *created;
    struct Stat stat;
    zkl__names kids;
    char *data;
    int datalen;
    zoo_op_result_t *results; /* a multi's, filled by the client at completion */
    /* the lease: a write or sync (through the leader) answered proves the
     * session alive until sent + T on the server's side */
    zkl_client *c;
    uint64_t epoch;
    int64_t sent; /* zkl__boot_ms() */
    bool proves;
} call;

static _Thread_local int64_t call_deadline = INT64_MAX;

int64_t zkl__call_deadline(int64_t deadline)
{
    int64_t prev = call_deadline;
    call_deadline = deadline;
    return prev;
}

/*
 * One call is one request sent on session s (counted for zkl_client_stats_get).
 * The before-send hook goes first: a delete held back by a release goes out
 * in the same batch.
 */
static call *call_new(zkl__session *s)
{
    call *k;
    if (s->c->hooks.before_send)
        s->c->hooks.before_send(s->c);
    k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    atomic_fetch_add(&s->c->requests, 1);
    pthread_mutex_init(&k->mu, NULL);
    zkl__cond_init(&k->cv);
    k->refs = 2;
    k->c = s->c;
    k->epoch = s->epoch;
    k->sent = zkl__boot_ms();
    ZKL_HANDOFF(k);
    return k;
}

/*
 * The call's answer will renew the lease (a write or a sync). Marked after
 * call_new handed the call over, so handed over again: the completion thread
 * reads the mark (ThreadSanitizer cannot see through the ZooKeeper client).
 */
static void call_proves(call *k)
{
    k->proves = true;
    ZKL_HANDOFF(k);
}

static void call_free(call *k)
{
    free(k->results);
    free(k->created);
    zkl__names_free(&k->kids);
    free(k->data);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}

/* Drop one reference (the waiter's after it took its results, or the completion's). */
static void call_put(call *k)
{
    int last;
    pthread_mutex_lock(&k->mu);
    last = --k->refs == 0;
    pthread_mutex_unlock(&k->mu);
    if (last)
        call_free(k);
}

/*
 * Wait for the reply, or until this thread's call deadline: then
 * ZOPERATIONTIMEOUT (retryable: the request may still be applied). The
 * waiter still holds its reference: call_put after taking the results.
 */
static int call_wait(call *k)
{
    int rc;
    pthread_mutex_lock(&k->mu);
    while (!k->done)
        if (zkl__cond_wait_until(&k->cv, &k->mu, call_deadline) == ETIMEDOUT)
            break;
    rc = k->done ? k->rc : ZOPERATIONTIMEOUT;
    pthread_mutex_unlock(&k->mu);
    return rc;
}

/* Unsent call: the completion will never run. */
static int call_abandon(call *k, int rc)
{
    call_free(k);
    return rc;
}

static void call_done(call *k, int rc)
{
    int last;
    if (k->proves && k->c->hooks.answered)
        k->c->hooks.answered(k->c, k->epoch, k->sent, rc);
    pthread_mutex_lock(&k->mu);
    k->rc = rc;
    k->done = 1;
    pthread_cond_signal(&k->cv);
    last = --k->refs == 0;
    pthread_mutex_unlock(&k->mu);
    if (last) /* the waiter gave up: nobody will read the results */
        call_free(k);
}

static void on_void(int rc, const void *data)
{
    ZKL_RECEIVED(data);
    call_done((call *)data, rc);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    if (rc == ZOK && stat)
        k->stat = *stat;
    call_done(k, rc);
}

static void on_create(int rc, const char *value, const struct Stat *stat, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    if (rc == ZOK) {
        if (value) {
            k->created = strdup(value);
            if (!k->created)
                rc = ZSYSTEMERROR; /* the node exists; recovery by prefix finds it */
        }
        if (stat)
            k->stat = *stat;
    }
    call_done(k, rc);
}

static void on_strings(int rc, const struct String_vector *sv, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    k->reply_rc = rc;
    if (rc == ZOK && sv && sv->count > 0) {
        int i;
        k->kids.v = calloc((size_t)sv->count, sizeof(char *));
        if (!k->kids.v) {
            rc = ZSYSTEMERROR;
        } else {
            for (i = 0; i < sv->count; i++) {
                k->kids.v[i] = strdup(sv->data[i]);
                if (!k->kids.v[i]) {
                    rc = ZSYSTEMERROR;
                    break;
                }
                k->kids.n++;
            }
        }
    }
    call_done(k, rc);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    if (rc == ZOK) {
        if (stat)
            k->stat = *stat;
        if (len > 0 && value) {
            k->data = malloc((size_t)len);
            if (k->data) {
                memcpy(k->data, value, (size_t)len);
                k->datalen = len;
            } else {
                rc = ZSYSTEMERROR;
            }
        }
    }
    call_done(k, rc);
}

/* getData for its watch alone: the data is not wanted, so nothing can fail
 * after the server set the watch. */
static void on_data_watch(int rc, const char *value, int len, const struct Stat *stat,
                          const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    (void)value;
    (void)len;
    k->reply_rc = rc;
    if (rc == ZOK && stat)
        k->stat = *stat; /* whose node it is: its ephemeralOwner */
    call_done(k, rc);
}

/*
 * A watch request that came to nothing gives back the ZooKeeper side's
 * reference to w: not sent, or refused by the server. One answered ZOK (the
 * watch is set, even if copying the reply failed) or not answered in time
 * (it may still be set) keeps it: the watch fires, or the session frees it.
 */
static void watch_settle(zkl__watch *w, call *k, int rc)
{
    if (!w || rc == ZOK || rc == ZOPERATIONTIMEOUT || (k && k->reply_rc == ZOK))
        return;
    zkl__watch_unregistered(w);
}

void zkl__names_free(zkl__names *k)
{
    size_t i;
    for (i = 0; i < k->n; i++)
        free(k->v[i]);
    free(k->v);
    k->v = NULL;
    k->n = 0;
}

static int send_create(zkl__session *s, call *k, const char *path, const void *data, int len,
                       int mode)
{
    call_proves(k);
    const struct ACL_vector *acl = s->c->acl.count ? &s->c->acl : &ZOO_OPEN_ACL_UNSAFE;
    return zoo_acreate2(s->zh, path, (const char *)data, data ? len : -1, acl, mode, on_create, k);
}

/* The waiter's share of a finished create: the path (if wanted) and Stat. */
static void take_created(call *k, char **created, struct Stat *stat)
{
    if (created) {
        *created = k->created;
        k->created = NULL;
    }
    if (stat)
        *stat = k->stat;
}

static void take_kids(call *k, zkl__names *out)
{
    *out = k->kids;
    k->kids.v = NULL;
    k->kids.n = 0;
}

/* Two calls for a pipelined pair; both or neither. */
static int call_pair(zkl__session *s, call **a, call **b)
{
    *a = call_new(s);
    *b = call_new(s);
    if (*a && *b)
        return 0;
    if (*a)
        call_free(*a);
    if (*b)
        call_free(*b);
    return -1;
}

int zkl__zk_create(zkl__session *s, const char *path, const void *data, int len, int mode,
                   char **created, struct Stat *stat)
{
    call *k;
    int rc;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    rc = send_create(s, k, path, data, len, mode);
    if (rc != ZOK)
        return call_abandon(k, rc);
    rc = call_wait(k);
    if (rc == ZOK)
        take_created(k, created, stat);
    call_put(k);
    return rc;
}

/* Wait for the listing sent after a write, and hand it over if both worked. */
static int finish_list(call *kl, int lrc, int rc, zkl__names *kids)
{
    if (!kl)
        return lrc; /* not sent: abandoned by the caller */
    lrc = call_wait(kl);
    if (rc == ZOK && lrc == ZOK)
        take_kids(kl, kids);
    call_put(kl);
    return lrc;
}

int zkl__zk_create_list(zkl__session *s, const char *path, const void *data, int len, int mode,
                        const char *parent, char **created, struct Stat *stat, zkl__names *kids,
                        int *list_rc)
{
    call *kc, *kl;
    int rc, lrc;
    if (call_pair(s, &kc, &kl))
        return ZSYSTEMERROR;
    rc = send_create(s, kc, path, data, len, mode);
    if (rc != ZOK) {
        call_abandon(kl, rc);
        *list_rc = rc;
        return call_abandon(kc, rc);
    }
    lrc = zoo_aget_children(s->zh, parent, 0, on_strings, kl);
    if (lrc != ZOK) {
        call_abandon(kl, lrc);
        kl = NULL;
    }
    rc = call_wait(kc);
    if (rc == ZOK)
        take_created(kc, created, stat);
    call_put(kc);
    *list_rc = finish_list(kl, lrc, rc, kids);
    return rc;
}

int zkl__zk_multi_create_list(zkl__session *s, char *const *del, int ndel, const char *path,
                              const void *data, int len, int mode, const char *parent,
                              char **created, zkl__names *kids, int *list_rc)
{
    call *km, *kl;
    zoo_op_t ops[ZKL_MULTI_MAX + 1];
    const struct ACL_vector *acl = s->c->acl.count ? &s->c->acl : &ZOO_OPEN_ACL_UNSAFE;
    int i, rc, lrc;
    if (ndel < 1 || ndel > ZKL_MULTI_MAX)
        return ZBADARGUMENTS;
    if (call_pair(s, &km, &kl))
        return ZSYSTEMERROR;
    /* the client fills results and the path buffer when the reply comes,
     * which may be after we gave up: they live with the call */
    km->results = calloc(ZKL_MULTI_MAX + 1, sizeof *km->results);
    km->created = calloc(1, ZKL_PATH_MAX + 128);
    if (!km->results || !km->created) {
        call_abandon(kl, ZSYSTEMERROR);
        return call_abandon(km, ZSYSTEMERROR);
    }
    for (i = 0; i < ndel; i++)
        zoo_delete_op_init(&ops[i], del[i], -1);
    zoo_create_op_init(&ops[ndel], path, (const char *)data, data ? len : -1, acl, mode,
                       km->created, ZKL_PATH_MAX + 128);
    call_proves(km);
    rc = zoo_amulti(s->zh, ndel + 1, ops, km->results, on_void, km);
    if (rc != ZOK) {
        call_abandon(kl, rc);
        *list_rc = rc;
        return call_abandon(km, rc);
    }
    lrc = zoo_aget_children(s->zh, parent, 0, on_strings, kl);
    if (lrc != ZOK) {
        call_abandon(kl, lrc);
        kl = NULL;
    }
    rc = call_wait(km);
    if (rc == ZOK)
        take_created(km, created, NULL);
    call_put(km);
    *list_rc = finish_list(kl, lrc, rc, kids);
    return rc;
}

int zkl__zk_children(zkl__session *s, const char *path, zkl__names *out)
{
    return zkl__zk_wchildren(s, path, NULL, out);
}

int zkl__zk_wchildren(zkl__session *s, const char *path, zkl__watch *w, zkl__names *out)
{
    call *k;
    int rc;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    rc = w ? zoo_awget_children(s->zh, path, zkl__watch_fn, w, on_strings, k)
           : zoo_aget_children(s->zh, path, 0, on_strings, k);
    if (rc != ZOK) {
        watch_settle(w, NULL, rc);
        return call_abandon(k, rc);
    }
    rc = call_wait(k);
    if (rc == ZOK)
        take_kids(k, out);
    watch_settle(w, k, rc);
    call_put(k);
    return rc;
}

int zkl__zk_exists(zkl__session *s, const char *path, struct Stat *stat)
{
    call *k;
    int rc;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    rc = zoo_aexists(s->zh, path, 0, on_stat, k);
    if (rc != ZOK)
        return call_abandon(k, rc);
    rc = call_wait(k);
    if (rc == ZOK && stat)
        *stat = k->stat;
    call_put(k);
    return rc;
}

void zkl__zk_wgets(zkl__session *s, int n, const char *const *paths, zkl__watch *const *ws,
                   int *rcs, int64_t *owners)
{
    call *k[ZKL_WGETS_MAX] = {NULL};
    int i;
    /* send them all, then wait for each: one round trip for the lot */
    for (i = 0; i < n && i < ZKL_WGETS_MAX; i++) {
        if (!(k[i] = call_new(s))) {
            rcs[i] = ZSYSTEMERROR;
            watch_settle(ws[i], NULL, rcs[i]);
            continue;
        }
        rcs[i] = zoo_awget(s->zh, paths[i], zkl__watch_fn, ws[i], on_data_watch, k[i]);
        if (rcs[i] != ZOK) {
            watch_settle(ws[i], NULL, rcs[i]);
            call_abandon(k[i], rcs[i]);
            k[i] = NULL;
        }
    }
    for (i = 0; i < n && i < ZKL_WGETS_MAX; i++) {
        if (!k[i])
            continue;
        rcs[i] = call_wait(k[i]);
        owners[i] = rcs[i] == ZOK ? k[i]->stat.ephemeralOwner : 0;
        watch_settle(ws[i], k[i], rcs[i]);
        call_put(k[i]);
    }
}

int zkl__zk_get(zkl__session *s, const char *path, char **data, int *len, struct Stat *stat)
{
    call *k;
    int rc;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    rc = zoo_aget(s->zh, path, 0, on_data, k);
    if (rc != ZOK)
        return call_abandon(k, rc);
    rc = call_wait(k);
    if (rc == ZOK) {
        *data = k->data;
        *len = k->datalen;
        k->data = NULL;
        if (stat)
            *stat = k->stat;
    }
    call_put(k);
    return rc;
}

/* A call whose reply carries nothing but its rc. */
static int wait_void(call *k, int sent)
{
    int rc;
    if (sent != ZOK)
        return call_abandon(k, sent);
    rc = call_wait(k);
    call_put(k);
    return rc;
}

int zkl__zk_delete(zkl__session *s, const char *path)
{
    call *k;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    call_proves(k);
    return wait_void(k, zoo_adelete(s->zh, path, -1, on_void, k));
}

static void on_string(int rc, const char *value, const void *data)
{
    ZKL_RECEIVED(data);
    (void)value;
    call_done((call *)data, rc);
}

int zkl__zk_sync(zkl__session *s, const char *path)
{
    call *k;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    call_proves(k);
    return wait_void(k, zoo_async(s->zh, path, on_string, k));
}

int zkl__zk_set(zkl__session *s, const char *path, const void *data, int len)
{
    call *k;
    if (!(k = call_new(s)))
        return ZSYSTEMERROR;
    call_proves(k);
    return wait_void(k, zoo_aset(s->zh, path, (const char *)data, len, -1, on_stat, k));
}

/* ---- requests whose reply goes to the caller's own completion ---- */

int zkl__zk_send_delete(zkl__session *s, const char *path, void_completion_t done, const void *ctx)
{
    atomic_fetch_add(&s->c->requests, 1);
    return zoo_adelete(s->zh, path, -1, done, ctx);
}

int zkl__zk_send_sync(zkl__session *s, string_completion_t done, const void *ctx)
{
    atomic_fetch_add(&s->c->requests, 1);
    return zoo_async(s->zh, "/", done, ctx);
}

int zkl__zk_send_wget(zkl__session *s, const char *path, watcher_fn watcher, void *wctx,
                      data_completion_t done, const void *ctx)
{
    atomic_fetch_add(&s->c->requests, 1);
    return zoo_awget(s->zh, path, watcher, wctx, done, ctx);
}
