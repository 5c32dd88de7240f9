/*
 * st_shim.c - the tests' own ZooKeeper handles on libzookeeper_st (built
 * only with -DZKL_TRANSPORT=st; docs/design/transport.md).
 *
 * The tests open raw handles (zookeeper_init) to set up and check the
 * server's state, and call libzookeeper_mt's synchronous calls on them,
 * which libzookeeper_st does not have. Here each raw handle gets a pump
 * thread (zookeeper_interest, poll, zookeeper_process under the handle's
 * mutex), and each synchronous call is its async call plus a wait for its
 * completion, which the pump runs. zookeeper_init and zookeeper_close are
 * wrapped (ld --wrap); the library's own handles (zookeeper_init2) are the
 * poller's and are not touched.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

/* (this file is built with THREADED, for the synchronous calls' declarations,
 * which hides the two calls a single-threaded program drives the handle with) */
int zookeeper_interest(zhandle_t *zh, int *fd, int *interest, struct timeval *tv);
int zookeeper_process(zhandle_t *zh, int events);
zhandle_t *__real_zookeeper_init(const char *host, watcher_fn fn, int recv_timeout,
                                 const clientid_t *clientid, void *context, int flags);
int __real_zookeeper_close(zhandle_t *zh);

typedef struct pump {
    zhandle_t *zh;
    pthread_t thread;
    pthread_mutex_t mu; /* the handle's */
    int efd;
    volatile int stop;
} pump;

#define PUMPS 256
static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static pump *table[PUMPS];

static pump *pump_of(zhandle_t *zh)
{
    pump *p = NULL;
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < PUMPS && !p; i++)
        if (table[i] && table[i]->zh == zh)
            p = table[i];
    pthread_mutex_unlock(&table_mu);
    return p;
}

static void *pump_main(void *arg)
{
    pump *p = arg;
    while (!p->stop) {
        struct pollfd f[2] = {{.fd = p->efd, .events = POLLIN}};
        struct timeval tv = {0, 0};
        int fd = -1, interest = 0, events = 0, ms;
        pthread_mutex_lock(&p->mu);
        if (zookeeper_interest(p->zh, &fd, &interest, &tv) != ZOK)
            fd = -1;
        pthread_mutex_unlock(&p->mu);
        ms = (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
        if (fd < 0 || ms > 50)
            ms = fd < 0 ? 20 : 50;
        f[1].fd = fd;
        f[1].events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                              ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
        (void)poll(f, fd >= 0 ? 2 : 1, ms);
        if (f[0].revents) {
            uint64_t v;
            (void)!read(p->efd, &v, sizeof v);
        }
        if (fd >= 0 && (f[1].revents & (POLLIN | POLLHUP | POLLERR)))
            events |= ZOOKEEPER_READ;
        if (fd >= 0 && (f[1].revents & POLLOUT))
            events |= ZOOKEEPER_WRITE;
        pthread_mutex_lock(&p->mu);
        zookeeper_process(p->zh, events);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

zhandle_t *__wrap_zookeeper_init(const char *host, watcher_fn fn, int recv_timeout,
                                 const clientid_t *clientid, void *context, int flags)
{
    zhandle_t *zh = __real_zookeeper_init(host, fn, recv_timeout, clientid, context, flags);
    pump *p;
    if (!zh)
        return NULL;
    p = calloc(1, sizeof *p);
    p->zh = zh;
    pthread_mutex_init(&p->mu, NULL);
    p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < PUMPS; i++)
        if (!table[i]) {
            table[i] = p;
            break;
        }
    pthread_mutex_unlock(&table_mu);
    pthread_create(&p->thread, NULL, pump_main, p);
    return zh;
}

int __wrap_zookeeper_close(zhandle_t *zh)
{
    pump *p = pump_of(zh);
    int rc;
    if (!p)
        return __real_zookeeper_close(zh);
    p->stop = 1;
    {
        uint64_t one = 1;
        (void)!write(p->efd, &one, sizeof one);
    }
    pthread_join(p->thread, NULL);
    pthread_mutex_lock(&table_mu);
    for (int i = 0; i < PUMPS; i++)
        if (table[i] == p)
            table[i] = NULL;
    pthread_mutex_unlock(&table_mu);
    rc = __real_zookeeper_close(zh);
    close(p->efd);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return rc;
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
        pump *p_ = pump_of(zh);                                                                    \
        uint64_t one_ = 1;                                                                         \
        int rc_;                                                                                   \
        if (!p_)                                                                                   \
            return ZBADARGUMENTS;                                                                  \
        pthread_mutex_lock(&p_->mu);                                                               \
        rc_ = (send);                                                                              \
        pthread_mutex_unlock(&p_->mu);                                                             \
        if (rc_ != ZOK)                                                                            \
            return rc_;                                                                            \
        (void)!write(p_->efd, &one_, sizeof one_);                                                 \
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
