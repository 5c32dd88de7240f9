/*
 * call.c - the call object (call.h): its life, the completions that fill it
 * on a ZooKeeper delivery (copy the reply and signal or notify,
 * nothing more), and the senders both kinds of requester share.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/path.h"
#include "base/tsan.h"
#include "base/util.h"
#include "requests/call.h"
#include "session/transport.h"

void zkl__count_request(zkl_client *c, int kind)
{
    atomic_fetch_add_explicit(&c->tally.requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->tally.req_kind[kind], 1, memory_order_relaxed);
}

/*
 * One call is one request sent on session s (its sender counts it, by kind:
 * zkl__count_request).
 * The before-send hook goes first: a delete held back by a release goes out
 * in the same batch.
 */
call *zkl__call_new(zkl__session *s)
{
    call *k;
    if (s->c->hooks.before_send)
        s->c->hooks.before_send(s->c);
    k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    pthread_mutex_init(&k->mu, NULL);
    zkl__cond_init(&k->cv);
    k->refs = 2;
    k->c = s->c;
    k->epoch = s->epoch;
    k->sent = zkl__boot_ms();
    ZKL_PUBLISH(k);
    return k;
}

/* A new call whose requester is told by fn(arg) when it is done (pending.c). */
call *zkl__call_new_told(zkl__session *s, void (*fn)(void *arg), void *arg)
{
    call *k = zkl__call_new(s);
    if (!k)
        return NULL;
    pthread_mutex_lock(&k->mu);
    k->notify = fn;
    k->arg = arg;
    pthread_mutex_unlock(&k->mu);
    return k;
}

/*
 * Marked after zkl__call_new handed the call over, so handed over again: the
 * delivery reads the mark (ThreadSanitizer cannot see through the
 * ZooKeeper client).
 */
void zkl__call_proves(call *k)
{
    k->proves = true;
    ZKL_PUBLISH(k);
}

void zkl__call_free(call *k)
{
    free(k->results);
    free(k->created);
    zkl__names_free(&k->kids);
    free(k->data);
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}

void zkl__call_put(call *k)
{
    int last;
    pthread_mutex_lock(&k->mu);
    last = --k->refs == 0;
    pthread_mutex_unlock(&k->mu);
    if (last)
        zkl__call_free(k);
}

static void call_done_later(zkl__delivery *d)
{
    zkl__call_done(d->p, d->a);
}

void zkl__call_done(call *k, int rc)
{
    void (*notify)(void *);
    void *arg;
    k->answer = (zkl__delivery){.fn = call_done_later, .p = k, .a = rc};
    if (zkl__defer(&k->answer))
        return; /* inside the ZooKeeper client: after it lets go */
    if (k->proves && k->c->hooks.answered)
        k->c->hooks.answered(k->c, k->epoch, k->sent, rc);
    pthread_mutex_lock(&k->mu);
    k->rc = rc;
    k->done = 1;
    pthread_cond_broadcast(&k->cv);
    notify = k->notify;
    arg = k->arg;
    k->notifying = notify != NULL;
    pthread_mutex_unlock(&k->mu);
    if (notify) {
        notify(arg); /* takes c->mu: never under the call's own */
        pthread_mutex_lock(&k->mu);
        k->notifying = false;
        pthread_cond_broadcast(&k->cv);
        pthread_mutex_unlock(&k->mu);
    }
    zkl__call_put(k); /* if the requester gave up, nobody reads the results */
}

void zkl__on_void(int rc, const void *data)
{
    ZKL_RECEIVED(data);
    zkl__call_done((call *)data, rc);
}

void zkl__on_stat(int rc, const struct Stat *stat, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    if (rc == ZOK && stat)
        k->stat = *stat;
    zkl__call_done(k, rc);
}

void zkl__on_create(int rc, const char *value, const struct Stat *stat, const void *data)
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
    zkl__call_done(k, rc);
}

/*
 * A listing's names copied into one block: a header, the pointers, then the
 * strings. One allocation per listing, not one per name: a long line's
 * listings, taken by every waiter that joins it, would otherwise leave the
 * heap in small pieces (a line of 1000 waits held 5 KB of RSS each, not
 * 1.3). The waiters that share one listing (pending.c) share the block.
 *
 * A block of ZKL_NAMES_MAP_MIN (base/tuning.h) or more is mapped on its
 * own instead of taken from malloc: such blocks come and go with every
 * listing of a long line, on the delivering threads, whose malloc arenas
 * also hold the small objects of each wait; a freed block's pages stayed
 * pinned by those.
 */
typedef struct names_hdr {
    _Atomic size_t refs;
    size_t mapped; /* the mapping's length; 0: from malloc (the pointers stay aligned) */
} names_hdr;

static names_hdr *names_alloc(size_t bytes)
{
    names_hdr *h;
    if (bytes < ZKL_NAMES_MAP_MIN) {
        if ((h = malloc(bytes)))
            h->mapped = 0;
        return h;
    }
    h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (h == MAP_FAILED)
        return NULL;
    h->mapped = bytes;
    return h;
}

static int copy_names(const struct String_vector *sv, zkl__names *out)
{
    size_t i, n = (size_t)sv->count, bytes = sizeof(names_hdr) + n * sizeof(char *);
    names_hdr *h;
    char *at;
    for (i = 0; i < n; i++)
        bytes += strlen(sv->data[i]) + 1;
    if (!(h = names_alloc(bytes)))
        return -1;
    atomic_init(&h->refs, 1);
    out->v = (char **)(h + 1);
    at = (char *)(out->v + n);
    for (i = 0; i < n; i++) {
        size_t len = strlen(sv->data[i]) + 1;
        memcpy(at, sv->data[i], len);
        out->v[i] = at;
        at += len;
    }
    out->n = n;
    return 0;
}

int zkl__names_copy(const struct String_vector *sv, zkl__names *out)
{
    out->v = NULL;
    out->n = 0;
    return sv && sv->count > 0 ? copy_names(sv, out) : 0;
}

void zkl__names_share(const zkl__names *from, zkl__names *to)
{
    if (from->v)
        atomic_fetch_add(&((names_hdr *)from->v - 1)->refs, 1);
    *to = *from;
}

void zkl__on_strings(int rc, const struct String_vector *sv, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    k->reply_rc = rc;
    if (rc == ZOK && sv && sv->count > 0 && copy_names(sv, &k->kids) != 0)
        rc = ZSYSTEMERROR;
    zkl__call_done(k, rc);
}

/* A getData's reply kept in k: its rc, ZSYSTEMERROR if the copy failed for memory. */
static int keep_data(call *k, int rc, const char *value, int len, const struct Stat *stat)
{
    if (rc != ZOK)
        return rc;
    if (stat)
        k->stat = *stat;
    if (len > 0 && value) {
        k->data = malloc((size_t)len);
        if (!k->data)
            return ZSYSTEMERROR;
        memcpy(k->data, value, (size_t)len);
        k->datalen = len;
    }
    return ZOK;
}

void zkl__on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    zkl__call_done(k, keep_data(k, rc, value, len, stat));
}

/* getData for its watch alone: the data is not wanted, so nothing can fail
 * after the server set the watch. */
void zkl__on_data_watch(int rc, const char *value, int len, const struct Stat *stat,
                        const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    (void)value;
    (void)len;
    k->reply_rc = rc;
    if (rc == ZOK && stat)
        k->stat = *stat; /* whose node it is: its ephemeralOwner */
    zkl__call_done(k, rc);
}

/* getData for its watch and its data: the watch is set whatever the copy does. */
void zkl__on_data_watch_keep(int rc, const char *value, int len, const struct Stat *stat,
                             const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    k->reply_rc = rc;
    zkl__call_done(k, keep_data(k, rc, value, len, stat));
}

/* exists with a watch: ZNONODE sets it too (a create fires it). */
void zkl__on_stat_watch(int rc, const struct Stat *stat, const void *data)
{
    ZKL_RECEIVED(data);
    call *k = (call *)data;
    k->reply_rc = rc == ZNONODE ? ZOK : rc;
    if (rc == ZOK && stat)
        k->stat = *stat;
    zkl__call_done(k, rc);
}

void zkl__on_string(int rc, const char *value, const void *data)
{
    ZKL_RECEIVED(data);
    (void)value;
    zkl__call_done((call *)data, rc);
}

void zkl__watch_settle(zkl__watch *w, const call *k, int rc)
{
    if (!w || rc == ZOK || rc == ZOPERATIONTIMEOUT || (k && k->reply_rc == ZOK))
        return;
    zkl__watch_unregistered(w);
}

void zkl__names_free(zkl__names *k)
{
    names_hdr *h = k->v ? (names_hdr *)k->v - 1 : NULL;
    if (h && atomic_fetch_sub(&h->refs, 1) == 1) {
        if (h->mapped)
            munmap(h, h->mapped);
        else
            free(h);
    }
    k->v = NULL;
    k->n = 0;
}

int zkl__send_create(zkl__session *s, call *k, const char *path, const void *data, int len,
                     int mode)
{
    const struct ACL_vector *acl = s->c->cfg.acl.count ? &s->c->cfg.acl : &ZOO_OPEN_ACL_UNSAFE;
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_CREATE);
    return ZKL_ZK(s, zoo_acreate2(s->zh, path, (const char *)data, data ? len : -1, acl, mode,
                                  zkl__on_create, k));
}

int zkl__send_multi_create(zkl__session *s, call *km, char *const *del, int ndel, const char *path,
                           const void *data, int len, int mode)
{
    zoo_op_t ops[ZKL_MULTI_MAX + 1];
    const struct ACL_vector *acl = s->c->cfg.acl.count ? &s->c->cfg.acl : &ZOO_OPEN_ACL_UNSAFE;
    int i;
    if (ndel < 1 || ndel > ZKL_MULTI_MAX)
        return ZBADARGUMENTS;
    /* the client fills results and the path buffer when the reply comes,
     * which may be after we gave up: they live with the call */
    km->results = calloc(ZKL_MULTI_MAX + 1, sizeof *km->results);
    km->created = calloc(1, ZKL_PATH_MAX + 128);
    if (!km->results || !km->created)
        return ZSYSTEMERROR;
    for (i = 0; i < ndel; i++)
        zoo_delete_op_init(&ops[i], del[i], -1);
    zoo_create_op_init(&ops[ndel], path, (const char *)data, data ? len : -1, acl, mode,
                       km->created, ZKL_PATH_MAX + 128);
    zkl__call_proves(km);
    zkl__count_request(s->c, ZKL__REQ_MULTI);
    return ZKL_ZK(s, zkl__zk_amulti(s->zh, ndel + 1, ops, km->results, zkl__on_void, km));
}

int zkl__zk_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                   void_completion_t done, const void *data)
{
    int state = zoo_state(zh);
    if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
        return ZINVALIDSTATE;
    return zoo_amulti(zh, count, ops, results, done, data);
}
