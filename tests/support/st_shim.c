/*
 * st_shim.c - the tests' own ZooKeeper handles on libzookeeper_st (built
 * only with -DZKL_TRANSPORT=st; docs/design/transport.md).
 *
 * The tests open raw handles (zookeeper_init) to set up and check the
 * server's state, and call libzookeeper_mt's synchronous calls on them,
 * which libzookeeper_st does not have. Here each raw handle is driven as
 * the library drives its chroot maker's (a pumped handle, with a thread of
 * its own: session/transport.h), and each synchronous call is its async
 * call, made under the handle's mutex, plus a wait for its completion,
 * which the handle's thread runs. zookeeper_init and zookeeper_close are
 * wrapped (ld --wrap); the library's own handles (zookeeper_init2) are not
 * touched.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "session/transport.h"
#include "st_shim.h"

zhandle_t *__real_zookeeper_init(const char *host, watcher_fn fn, int recv_timeout,
                                 const clientid_t *clientid, void *context, int flags);
int __real_zookeeper_close(zhandle_t *zh);

/* The pumped handles (session/transport.h) the tests opened, by handle. */
#define PUMPS 256
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl__pumped *table[PUMPS];

static zkl__pumped *pump_of(zhandle_t *zh)
{
    zkl__pumped *p = NULL;
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < PUMPS && !p; i++)
        if (table[i] && table[i]->zh == zh)
            p = table[i];
    pthread_mutex_unlock(&table_mu);
    return p;
}

zhandle_t *__wrap_zookeeper_init(const char *host, watcher_fn fn, int recv_timeout,
                                 const clientid_t *clientid, void *context, int flags)
{
    zhandle_t *zh = __real_zookeeper_init(host, fn, recv_timeout, clientid, context, flags);
    zkl__pumped *p;
    int i;
    if (!zh)
        return NULL;
    if (!(p = zkl__pumped_drive(zh))) {
        __real_zookeeper_close(zh);
        return NULL;
    }
    pthread_mutex_lock(&table_mu);
    for (i = 0; i < PUMPS && table[i]; i++)
        ;
    if (i < PUMPS)
        table[i] = p;
    pthread_mutex_unlock(&table_mu);
    if (i == PUMPS) {
        zkl__pumped_close(p);
        return NULL;
    }
    return zh;
}

void st_shim_enter(zhandle_t *zh)
{
    zkl__pumped_enter(pump_of(zh));
}

void st_shim_leave(zhandle_t *zh)
{
    zkl__pumped_leave(pump_of(zh));
}

int __wrap_zookeeper_close(zhandle_t *zh)
{
    zkl__pumped *p = pump_of(zh);
    if (!p) /* the library's own (its close is wrapped too) */
        return __real_zookeeper_close(zh);
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < PUMPS; i++)
        if (table[i] == p)
            table[i] = NULL;
    pthread_mutex_unlock(&table_mu);
    zkl__pumped_close(p); /* (its zookeeper_close finds no pump: the real one) */
    return ZOK;
}

/* ---- a synchronous call: the async call, then a wait for its completion ---- */

typedef struct sync_call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, rc;
    char *path_buf; /* create */
    int path_len;
    struct Stat *stat;          /* exists, get, set, get_acl */
    char *buf;                  /* get */
    int *buf_len;               /* get */
    struct String_vector *kids; /* get_children */
    struct ACL_vector *acl;     /* get_acl */
} sync_call;

#define SYNC_INIT                                                                                  \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, 0, NULL, NULL, NULL,      \
            NULL, NULL                                                                             \
    }

static void sync_done(sync_call *s, int rc)
{
    pthread_mutex_lock(&s->mu);
    s->rc = rc;
    s->done = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Send (under the handle's mutex), wake the pump, wait. */
#define SYNC_RUN(zh, s, send)                                                                      \
    do {                                                                                           \
        zkl__pumped *p_ = pump_of(zh);                                                             \
        int rc_;                                                                                   \
        if (!p_)                                                                                   \
            return ZBADARGUMENTS;                                                                  \
        zkl__pumped_enter(p_);                                                                     \
        rc_ = (send);                                                                              \
        zkl__pumped_leave(p_); /* (wakes its thread) */                                            \
        if (rc_ != ZOK)                                                                            \
            return rc_;                                                                            \
        pthread_mutex_lock(&(s)->mu);                                                              \
        while (!(s)->done)                                                                         \
            pthread_cond_wait(&(s)->cv, &(s)->mu);                                                 \
        pthread_mutex_unlock(&(s)->mu);                                                            \
        return (s)->rc;                                                                            \
    } while (0)

static void on_void(int rc, const void *data)
{
    sync_done((sync_call *)data, rc);
}

static void on_string(int rc, const char *value, const void *data)
{
    sync_call *s = (sync_call *)data;
    if (rc == ZOK && value && s->path_buf && s->path_len > 0) {
        strncpy(s->path_buf, value, (size_t)s->path_len - 1);
        s->path_buf[s->path_len - 1] = '\0';
    }
    sync_done(s, rc);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
    sync_call *s = (sync_call *)data;
    if (rc == ZOK && stat && s->stat)
        *s->stat = *stat;
    sync_done(s, rc);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    sync_call *s = (sync_call *)data;
    if (rc == ZOK) {
        if (stat && s->stat)
            *s->stat = *stat;
        if (s->buf_len) {
            int n = len < 0 ? -1 : (len < *s->buf_len ? len : *s->buf_len);
            if (n > 0 && value)
                memcpy(s->buf, value, (size_t)n);
            *s->buf_len = n;
        }
    }
    sync_done(s, rc);
}

static void on_strings(int rc, const struct String_vector *sv, const void *data)
{
    sync_call *s = (sync_call *)data;
    if (rc == ZOK && s->kids) {
        int n = sv ? sv->count : 0;
        s->kids->count = n;
        s->kids->data = n ? calloc((size_t)n, sizeof(char *)) : NULL;
        for (int i = 0; i < n; i++)
            s->kids->data[i] = strdup(sv->data[i]);
    }
    sync_done(s, rc);
}

static void on_acl(int rc, struct ACL_vector *acl, struct Stat *stat, const void *data)
{
    sync_call *s = (sync_call *)data;
    if (rc == ZOK && s->acl) {
        int n = acl ? acl->count : 0;
        s->acl->count = n;
        s->acl->data = n ? calloc((size_t)n, sizeof(struct ACL)) : NULL;
        for (int i = 0; i < n; i++) {
            s->acl->data[i].perms = acl->data[i].perms;
            s->acl->data[i].id.scheme = strdup(acl->data[i].id.scheme);
            s->acl->data[i].id.id = strdup(acl->data[i].id.id);
        }
        if (stat && s->stat)
            *s->stat = *stat;
    }
    sync_done(s, rc);
}

int zoo_create(zhandle_t *zh, const char *path, const char *value, int valuelen,
               const struct ACL_vector *acl, int mode, char *path_buffer, int path_buffer_len)
{
    sync_call s = SYNC_INIT;
    s.path_buf = path_buffer;
    s.path_len = path_buffer_len;
    SYNC_RUN(zh, &s, zoo_acreate(zh, path, value, valuelen, acl, mode, on_string, &s));
}

int zoo_delete(zhandle_t *zh, const char *path, int version)
{
    sync_call s = SYNC_INIT;
    SYNC_RUN(zh, &s, zoo_adelete(zh, path, version, on_void, &s));
}

int zoo_exists(zhandle_t *zh, const char *path, int watch, struct Stat *stat)
{
    sync_call s = SYNC_INIT;
    s.stat = stat;
    SYNC_RUN(zh, &s, zoo_aexists(zh, path, watch, on_stat, &s));
}

int zoo_wexists(zhandle_t *zh, const char *path, watcher_fn watcher, void *ctx, struct Stat *stat)
{
    sync_call s = SYNC_INIT;
    s.stat = stat;
    SYNC_RUN(zh, &s, zoo_awexists(zh, path, watcher, ctx, on_stat, &s));
}

int zoo_get(zhandle_t *zh, const char *path, int watch, char *buffer, int *buffer_len,
            struct Stat *stat)
{
    sync_call s = SYNC_INIT;
    s.buf = buffer;
    s.buf_len = buffer_len;
    s.stat = stat;
    SYNC_RUN(zh, &s, zoo_aget(zh, path, watch, on_data, &s));
}

int zoo_set(zhandle_t *zh, const char *path, const char *buffer, int buflen, int version)
{
    sync_call s = SYNC_INIT;
    SYNC_RUN(zh, &s, zoo_aset(zh, path, buffer, buflen, version, on_stat, &s));
}

int zoo_get_children(zhandle_t *zh, const char *path, int watch, struct String_vector *strings)
{
    sync_call s = SYNC_INIT;
    s.kids = strings;
    SYNC_RUN(zh, &s, zoo_aget_children(zh, path, watch, on_strings, &s));
}

int zoo_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results)
{
    sync_call s = SYNC_INIT;
    SYNC_RUN(zh, &s, zoo_amulti(zh, count, ops, results, on_void, &s));
}

int zoo_set_acl(zhandle_t *zh, const char *path, int version, const struct ACL_vector *acl)
{
    sync_call s = SYNC_INIT;
    SYNC_RUN(zh, &s, zoo_aset_acl(zh, path, version, (struct ACL_vector *)acl, on_void, &s));
}

int zoo_get_acl(zhandle_t *zh, const char *path, struct ACL_vector *acl, struct Stat *stat)
{
    sync_call s = SYNC_INIT;
    s.acl = acl;
    s.stat = stat;
    SYNC_RUN(zh, &s, zoo_aget_acl(zh, path, on_acl, &s));
}

int zoo_wget_children(zhandle_t *zh, const char *path, watcher_fn watcher, void *ctx,
                      struct String_vector *strings)
{
    sync_call s = SYNC_INIT;
    s.kids = strings;
    SYNC_RUN(zh, &s, zoo_awget_children(zh, path, watcher, ctx, on_strings, &s));
}
