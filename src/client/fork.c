/*
 * fork.c - what a fork()ed child sees of the clients its parent had open.
 *
 * DESIGN
 *
 * A child has one thread, a copy of the parent's memory and a share of its
 * descriptors: none of the parent's workers, none of the ZooKeeper client's
 * threads, and the parent's sessions, which are the parent's alone (a
 * request sent on one would be the parent's; a hold read as held would be
 * a second holder). So every client open at the fork is marked forked in
 * the child: it holds nothing (every hold reads as lost), refuses every
 * call that would wait or send (ZKL_ECLOSED, saying why), and its close
 * frees zklock's own memory without joining threads that do not exist; the
 * ZooKeeper handle is not closed (libzookeeper_mt closes one only by
 * joining its threads) but kept reachable here, with its socket open in the
 * child. The parent is not touched.
 *
 * Consistency: the prepare handler takes every registered client's c->mu
 * (the registry's lock first, then each c->mu, in list order), so the
 * child's copy of each client is not half-updated; the child marks each one
 * and lets the locks go. No zklock thread holds one c->mu while it blocks
 * on another (a second client's is only ever tried: core/async/async.c), and no
 * user code runs under c->mu, so the handler cannot deadlock. Locks that a
 * vanished thread may hold in the child (a reentrancy table's, a
 * semaphore's, listen_mu) are never taken for a forked client: the calls
 * look at zkl__forked first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "client/fork.h"

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_client *reg; /* open clients (utlist through reg_prev, reg_next) */
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

/* The ZooKeeper handles of forked clients closed in this child (see above). */
typedef struct kept_handle {
    zhandle_t *zh;
} kept_handle;
static kept_handle *kept;
static size_t n_kept;

static void prepare(void)
{
    zkl_client *c;
    pthread_mutex_lock(&reg_mu);
    for (c = reg; c; c = c->reg_next)
        pthread_mutex_lock(&c->mu);
}

static void parent(void)
{
    zkl_client *c;
    for (c = reg; c; c = c->reg_next)
        pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&reg_mu);
}

static void child(void)
{
    zkl_client *c;
    for (c = reg; c; c = c->reg_next) {
        c->forked = true;
        c->closing = true; /* every wait and send refuses */
        c->state = ZKL_STATE_LOST;
        c->sess->expired = true; /* every hold reads as lost */
        if (c->worker_started)
            zkl__clients_count(-1); /* its worker runs in the parent only */
        c->worker_started = false;
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&reg_mu);
}

static void install_handlers(void)
{
    (void)pthread_atfork(prepare, parent, child);
}

void zkl__registry_lock(void)
{
    pthread_mutex_lock(&reg_mu);
}

zkl_client *zkl__registry_first(void)
{
    return reg;
}

void zkl__registry_unlock(void)
{
    pthread_mutex_unlock(&reg_mu);
}

bool zkl__registry_name(zkl_client *self, char *name)
{
    zkl_client *c;
    bool taken = false;
    char *old;
    pthread_mutex_lock(&reg_mu);
    DL_FOREACH2(reg, c, reg_next)
    {
        if (c == self)
            continue;
        pthread_mutex_lock(&c->mu);
        taken = taken || (c->name && !strcmp(c->name, name));
        pthread_mutex_unlock(&c->mu);
    }
    if (!taken) {
        pthread_mutex_lock(&self->mu);
        old = self->name;
        self->name = name;
        pthread_mutex_unlock(&self->mu);
        free(old);
    }
    pthread_mutex_unlock(&reg_mu);
    return !taken;
}

void zkl__fork_register(zkl_client *c)
{
    static unsigned opened;
    (void)pthread_once(&handlers_once, install_handlers);
    pthread_mutex_lock(&reg_mu);
    c->number = ++opened;
    DL_APPEND2(reg, c, reg_prev, reg_next);
    pthread_mutex_unlock(&reg_mu);
}

void zkl__fork_unregister(zkl_client *c)
{
    pthread_mutex_lock(&reg_mu);
    DL_DELETE2(reg, c, reg_prev, reg_next);
    c->reg_prev = c->reg_next = NULL;
    pthread_mutex_unlock(&reg_mu);
}

void zkl__fork_keep(zhandle_t *zh)
{
    kept_handle *v;
    if (!zh)
        return;
    pthread_mutex_lock(&reg_mu);
    v = realloc(kept, (n_kept + 1) * sizeof *v);
    if (v) { /* (else it is lost: a child out of memory) */
        kept = v;
        kept[n_kept++].zh = zh;
    }
    pthread_mutex_unlock(&reg_mu);
}
