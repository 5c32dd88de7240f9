/*
 * pending.c - requests that do not block (pending.h), on the call object of
 * call.h. A requester that blocks is the same requester waiting on the
 * call's condition instead of being told (calls.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "base/util.h"
#include "requests/call.h"
#include "session/transport.h"
#include "requests/pending.h"

/* The request, if the send worked; else NULL with *rc (the completion will never run). */
static zkl__req *sent(call *k, int send_rc, int *rc)
{
    *rc = send_rc;
    if (send_rc == ZOK)
        return k;
    zkl__call_free(k);
    return NULL;
}

#define NEW_OR_FAIL(k, s, fn, arg, rc)                                                             \
    do {                                                                                           \
        if (!((k) = zkl__call_new_told((s), (fn), (arg)))) {                                       \
            *(rc) = ZSYSTEMERROR;                                                                  \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

zkl__req *zkl__req_create(zkl__session *s, const char *path, const void *data, int len, int mode,
                          zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    return sent(k, zkl__send_create(s, k, path, data, len, mode), rc);
}

zkl__req *zkl__req_multi_create(zkl__session *s, char *const *del, int ndel, const char *path,
                                const void *data, int len, int mode, zkl__req_fn fn, void *arg,
                                int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    return sent(k, zkl__send_multi_create(s, k, del, ndel, path, data, len, mode), rc);
}

/* A new request of kind that sets watch w: NULL on no memory (w given back, *rc set). */
static call *watched_new(zkl__session *s, zkl__watch *w, int kind, zkl__req_fn fn, void *arg,
                         int *rc)
{
    call *k = zkl__call_new_told(s, fn, arg);
    if (!k) {
        zkl__watch_settle(w, NULL, ZSYSTEMERROR);
        *rc = ZSYSTEMERROR;
        return NULL;
    }
    zkl__count_request(s->c, kind);
    return k;
}

/* The send of a request that sets watch w: w given back if it failed. */
static zkl__req *watched_sent(call *k, zkl__watch *w, int send_rc, int *rc)
{
    if (send_rc != ZOK)
        zkl__watch_settle(w, NULL, send_rc);
    return sent(k, send_rc, rc);
}

zkl__req *zkl__req_children(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                            void *arg, int *rc)
{
    call *k = watched_new(s, w, ZKL__REQ_LIST, fn, arg, rc);
    if (!k)
        return NULL;
    return watched_sent(
        k, w,
        ZKL_ZK(s, w ? zoo_awget_children(s->zh, path, zkl__watch_fn, w, zkl__on_strings, k)
                    : zoo_aget_children(s->zh, path, 0, zkl__on_strings, k)),
        rc);
}

/* getData with watch w, its reply to done (the data dropped or kept). */
static zkl__req *wget(zkl__session *s, const char *path, zkl__watch *w, data_completion_t done,
                      zkl__req_fn fn, void *arg, int *rc)
{
    call *k = watched_new(s, w, ZKL__REQ_GET, fn, arg, rc);
    if (!k)
        return NULL;
    return watched_sent(k, w, ZKL_ZK(s, zoo_awget(s->zh, path, zkl__watch_fn, w, done, k)), rc);
}

zkl__req *zkl__req_wget(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn, void *arg,
                        int *rc)
{
    return wget(s, path, w, zkl__on_data_watch, fn, arg, rc);
}

zkl__req *zkl__req_wget_data(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                             void *arg, int *rc)
{
    return wget(s, path, w, zkl__on_data_watch_keep, fn, arg, rc);
}

zkl__req *zkl__req_wexists(zkl__session *s, const char *path, zkl__watch *w, zkl__req_fn fn,
                           void *arg, int *rc)
{
    call *k = watched_new(s, w, ZKL__REQ_EXISTS, fn, arg, rc);
    if (!k)
        return NULL;
    return watched_sent(
        k, w, ZKL_ZK(s, zoo_awexists(s->zh, path, zkl__watch_fn, w, zkl__on_stat_watch, k)), rc);
}

zkl__req *zkl__req_exists(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    zkl__count_request(s->c, ZKL__REQ_EXISTS);
    return sent(k, ZKL_ZK(s, zoo_aexists(s->zh, path, 0, zkl__on_stat, k)), rc);
}

zkl__req *zkl__req_delete(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_DELETE);
    return sent(k, ZKL_ZK(s, zoo_adelete(s->zh, path, -1, zkl__on_void, k)), rc);
}

zkl__req *zkl__req_sync(zkl__session *s, const char *path, zkl__req_fn fn, void *arg, int *rc)
{
    call *k;
    NEW_OR_FAIL(k, s, fn, arg, rc);
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_SYNC);
    return sent(k, ZKL_ZK(s, zoo_async(s->zh, path, zkl__on_string, k)), rc);
}

bool zkl__req_done(zkl__req *k, int *rc)
{
    bool done;
    pthread_mutex_lock(&k->mu);
    done = k->done;
    *rc = k->rc;
    pthread_mutex_unlock(&k->mu);
    return done;
}

/* Results are read only once the call is done (zkl__req_done, under k->mu). */
void zkl__req_take_created(zkl__req *k, char **created, struct Stat *stat)
{
    if (created) {
        *created = k->created;
        k->created = NULL;
    }
    if (stat)
        *stat = k->stat;
}

void zkl__req_take_kids(zkl__req *k, zkl__names *out)
{
    *out = k->kids;
    k->kids.v = NULL;
    k->kids.n = 0;
}

struct Stat zkl__req_stat(const zkl__req *k)
{
    return k->stat;
}

void zkl__req_take_data(zkl__req *k, char **data, int *len)
{
    *data = k->data;
    *len = k->datalen;
    k->data = NULL;
    k->datalen = 0;
}

void zkl__req_settle(const zkl__req *k, zkl__watch *w, int rc)
{
    zkl__watch_settle(w, k, rc);
}

void zkl__req_drop(zkl__req *k)
{
    pthread_mutex_lock(&k->mu);
    k->notify = NULL;
    while (k->notifying)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    zkl__call_put(k);
}
