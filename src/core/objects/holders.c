/*
 * holders.c - see holders.h.
 */
#include <stdlib.h>
#include <string.h>

#include "core/objects/holders.h"
#include "services/lease.h"
#include "services/revoke.h"
#include "base/status.h"
#include "base/util.h"

void zkl__holders_init(zkl__holders *h)
{
    pthread_mutex_init(&h->mu, NULL);
    h->table = NULL;
}

void zkl__holders_destroy(zkl__holders *h)
{
    zkl__holder *e, *tmp;
    HASH_ITER(hh, h->table, e, tmp) // NOLINT(clang-analyzer-unix.Malloc): uthash's safe-delete loop
    {
        HASH_DEL(h->table, e);
        zkl__revwatch_stop(e->hold.rev);
        free(e->hold.node);
        free(e);
    }
    pthread_mutex_destroy(&h->mu);
}

int zkl__holders_reenter(zkl__holders *h, zkl_client *c)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    int r = 0;
    uint64_t epoch = 0;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (e)
        epoch = e->hold.epoch;
    pthread_mutex_unlock(&h->mu);
    if (!e)
        return 0;
    /* Only this thread changes its own entry, so e stays valid here. */
    if (!zkl__hold_alive(c, epoch))
        return -1;
    pthread_mutex_lock(&h->mu);
    e->count++;
    r = 1;
    pthread_mutex_unlock(&h->mu);
    return r;
}

zkl_status zkl__holders_add(zkl__holders *h, zkl__hold *hold)
{
    zkl__holder *e = calloc(1, sizeof *e);
    if (!e)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    e->tid = zkl__thread_id();
    e->count = 1;
    e->hold = *hold;
    pthread_mutex_lock(&h->mu);
    HASH_ADD(hh, h->table, tid, sizeof e->tid, e);
    pthread_mutex_unlock(&h->mu);
    if (!e->hh.tbl) { /* not added (holders.h): the caller still has the hold to release */
        free(e);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    hold->node = NULL;
    return ZKL_OK;
}

zkl_status zkl__holders_leave(zkl__holders *h, zkl__hold *last)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    memset(last, 0, sizeof *last);
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (!e) {
        pthread_mutex_unlock(&h->mu);
        return zkl__fail(ZKL_ENOTOWNER, "the calling thread does not hold this lock");
    }
    if (--e->count == 0) {
        HASH_DEL(h->table, e);
        *last = e->hold;
        free(e);
    } else {
        last->epoch = e->hold.epoch;
    }
    pthread_mutex_unlock(&h->mu);
    return ZKL_OK;
}

zkl_status zkl__holders_get(zkl__holders *h, zkl__hold *out)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    zkl_status st;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    st = e ? zkl__hold_copy(&e->hold, out)
           : zkl__fail(ZKL_ENOTOWNER, "the calling thread does not hold this lock");
    pthread_mutex_unlock(&h->mu);
    return st;
}

bool zkl__holders_has(zkl__holders *h, uint64_t *epoch)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (e && epoch)
        *epoch = e->hold.epoch;
    pthread_mutex_unlock(&h->mu);
    return e != NULL;
}

bool zkl__holders_in_epoch(zkl__holders *h, uint64_t epoch)
{
    zkl__holder *e, *tmp;
    bool found = false;
    pthread_mutex_lock(&h->mu);
    HASH_ITER(hh, h->table, e, tmp)
    {
        // cppcheck-suppress uninitvar ; HASH_ITER sets e before the body runs
        if (e->hold.epoch == epoch)
            found = true;
    }
    pthread_mutex_unlock(&h->mu);
    return found;
}

void zkl__holders_set_token(zkl__holders *h, int64_t czxid)
{
    uint64_t tid = zkl__thread_id();
    zkl__holder *e;
    pthread_mutex_lock(&h->mu);
    HASH_FIND(hh, h->table, &tid, sizeof tid, e);
    if (e)
        e->hold.czxid = czxid;
    pthread_mutex_unlock(&h->mu);
}

unsigned zkl__holders_count(zkl__holders *h)
{
    unsigned n;
    pthread_mutex_lock(&h->mu);
    n = HASH_COUNT(h->table);
    pthread_mutex_unlock(&h->mu);
    return n;
}
