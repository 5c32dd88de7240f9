/*
 * rwlock.c - zkl_rwlock, Curator's InterProcessReadWriteLock: two reentrant
 * sides over one path, each a driver over the lock-internals core.
 *
 * Write driver: the standard one (first of all children, watch the node just
 * ahead). Read driver: granted when no writer sorts ahead; otherwise watch the
 * nearest writer ahead (not Curator's first writer: the same grants, without
 * waking readers whose own writer is still there).
 */
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "core/reentrant.h"
#include "base/status.h"
#include "zklock/rwlock.h"

#define READ_NAME "__READ__"
#define WRITE_NAME "__WRIT__"

static const char *const rw_markers[] = {READ_NAME, WRITE_NAME, NULL};

static zkl__verdict write_decide(const zkl__driver *d, char *const *sorted, size_t n, size_t self,
                                 const void *ctx)
{
    zkl__verdict v = zkl__decide_standard(sorted, n, self, 1);
    (void)d;
    (void)ctx;
    /* A downgrading writer adds a read node at its old sequence, ahead of
     * us: behind a writer we must look again before we hold. Behind a reader
     * at the head nothing can appear (no writer is left ahead to downgrade). */
    if (!v.holds && !strstr(sorted[v.watch], READ_NAME)) {
        v.grant_if_deleted = false;
        v.no_lookahead = true; /* behind a writer nothing is gained by it */
    }
    return v;
}

/* ctx: the basename of the calling thread's own write node, or NULL. */
zkl__verdict zkl__read_decide(const zkl__driver *d, char *const *sorted, size_t n, size_t self,
                              const void *ctx)
{
    const char *own_writer = ctx;
    zkl__verdict v = {true, -1, false, false, false};
    size_t i, writers = 0;
    (void)d;
    (void)n;
    for (i = 0; i < self; i++) {
        if (!strstr(sorted[i], WRITE_NAME))
            continue;
        if (own_writer && strcmp(sorted[i], own_writer) == 0)
            continue;
        v.holds = false;
        v.watch = (long)i; /* keeps the last one seen: the nearest ahead */
        writers++;
    }
    /* Only writers ahead keep a reader out, and no writer can appear ahead
     * later (a downgrade adds readers, which we share with). */
    v.grant_if_deleted = writers == 1;
    return v;
}

const zkl__driver zkl__write_driver = {WRITE_NAME, rw_markers, write_decide};
const zkl__driver zkl__read_driver = {READ_NAME, rw_markers, zkl__read_decide};

struct zkl_rwlock {
    char *path;
    zkl__side read, write;
    zkl_hold_state_fn state_fn;
    void *state_ud;
    int listener;
};

zkl_status zkl_rwlock_create(zkl_client *c, const char *path, zkl_rwlock **out)
{
    zkl_rwlock *l;
    zkl_status st;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_create: out is NULL");
    *out = NULL;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_create: client is NULL");
    st = zkl__path_validate(path);
    if (st != ZKL_OK)
        return st;
    l = calloc(1, sizeof *l);
    if (!l || !(l->path = strdup(path))) {
        free(l);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    zkl__side_init(&l->read, c, l->path, &zkl__read_driver);
    zkl__side_init(&l->write, c, l->path, &zkl__write_driver);
    /* Hand-offs between writers and readers need no listing on their path;
     * the look-ahead's request keeps a pair below Curator's count. */
    l->read.lookahead = ZKL__LOOKAHEAD_ON;
    l->write.lookahead = ZKL__LOOKAHEAD_ON;
    zkl__client_ref(c);
    *out = l;
    return ZKL_OK;
}

zkl_status zkl_rwlock_destroy(zkl_rwlock *l)
{
    unsigned n;
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_destroy: lock is NULL");
    n = zkl__holders_count(&l->read.holders) + zkl__holders_count(&l->write.holders);
    if (n > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_rwlock_destroy: %s has %u hold(s)", l->path, n);
    if (l->listener)
        zkl__listener_remove(l->read.c, l->listener);
    zkl__client_unref(l->read.c);
    zkl__side_destroy(&l->read);
    zkl__side_destroy(&l->write);
    free(l->path);
    free(l);
    return ZKL_OK;
}

zkl_status zkl_rwlock_read_acquire(zkl_rwlock *l, int timeout_ms)
{
    zkl__hold w;
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_acquire: lock is NULL");
    st = zkl__check_timeout(timeout_ms, "zkl_rwlock_read_acquire");
    if (st != ZKL_OK)
        return st;
    if (zkl__side_has_entry(&l->read))
        return zkl__side_acquire(&l->read, timeout_ms, NULL, NULL);
    st = zkl__side_current(&l->write, &w);
    if (st == ZKL_ENOMEM) /* not "no write hold": a plain read would queue behind our own writer */
        return st;
    if (st != ZKL_OK) /* no write hold, or one lost with its session (its node is gone) */
        return zkl__side_acquire(&l->read, timeout_ms, NULL, NULL);
    /* Downgrade path (Curator 5.5, CURATOR-621): a plain ephemeral read node
     * named after our write node's sequence, so it takes the writer's place
     * in line and no queued writer can get in when the write side goes. */
    {
        const char *name = zkl__path_basename(w.node);
        const char *seq = strstr(name, WRITE_NAME);
        st = seq ? zkl__side_acquire(&l->read, timeout_ms, name, seq + strlen(WRITE_NAME))
                 : zkl__fail(ZKL_EZK, "own write node '%s' has no sequence", name);
    }
    free(w.node);
    return st;
}

zkl_status zkl_rwlock_read_release(zkl_rwlock *l)
{
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_release: lock is NULL");
    return zkl__side_release(&l->read);
}

zkl_status zkl_rwlock_write_acquire(zkl_rwlock *l, int timeout_ms)
{
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_acquire: lock is NULL");
    st = zkl__check_timeout(timeout_ms, "zkl_rwlock_write_acquire");
    if (st != ZKL_OK)
        return st;
    if (zkl__side_has_entry(&l->read) && !zkl__side_has_entry(&l->write))
        return zkl__fail(ZKL_EDEADLOCK,
                         "%s: this thread holds the read lock; a write acquire would wait for "
                         "itself forever (release the read lock first)",
                         l->path);
    return zkl__side_acquire(&l->write, timeout_ms, NULL, NULL);
}

zkl_status zkl_rwlock_write_release(zkl_rwlock *l)
{
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_release: lock is NULL");
    return zkl__side_release(&l->write);
}

bool zkl_rwlock_read_is_held(zkl_rwlock *l)
{
    return l && zkl__side_is_held(&l->read);
}

bool zkl_rwlock_write_is_held(zkl_rwlock *l)
{
    return l && zkl__side_is_held(&l->write);
}

zkl_status zkl_rwlock_write_fencing_token(zkl_rwlock *l, int64_t *token)
{
    zkl__clear_err();
    if (!l || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_fencing_token: NULL argument");
    return zkl__side_token(&l->write, token);
}

zkl_status zkl_rwlock_read_fencing_token(zkl_rwlock *l, int64_t *token)
{
    zkl__clear_err();
    if (!l || !token)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_fencing_token: NULL argument");
    return zkl__side_token(&l->read, token);
}

zkl_status zkl_rwlock_participants(zkl_rwlock *l, char ***paths, size_t *n)
{
    zkl__clear_err();
    if (!l || !paths || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_participants: NULL argument");
    return zkl__participants(l->read.c, l->path, rw_markers, paths, n);
}

const char *zkl_rwlock_path(const zkl_rwlock *l)
{
    return l ? l->path : NULL;
}

static void on_state(zkl_conn_state st, uint64_t epoch, void *ctx)
{
    zkl_rwlock *l = ctx;
    if (st != ZKL_STATE_CONNECTED && l->state_fn &&
        (zkl__holders_in_epoch(&l->read.holders, epoch) ||
         zkl__holders_in_epoch(&l->write.holders, epoch)))
        l->state_fn(l, st, l->state_ud);
}

zkl_status zkl_rwlock_on_state(zkl_rwlock *l, zkl_hold_state_fn fn, void *userdata)
{
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_on_state: lock is NULL");
    if (l->listener)
        zkl__listener_remove(l->read.c, l->listener);
    l->listener = 0;
    l->state_fn = fn;
    l->state_ud = userdata;
    if (fn && !(l->listener = zkl__listener_add(l->read.c, on_state, l)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}

zkl_status zkl_rwlock_write_lease_remaining(zkl_rwlock *l, int64_t *ms)
{
    zkl__clear_err();
    if (!l || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_write_lease_remaining: NULL argument");
    return zkl__side_lease_remaining(&l->write, ms);
}

zkl_status zkl_rwlock_read_lease_remaining(zkl_rwlock *l, int64_t *ms)
{
    zkl__clear_err();
    if (!l || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_rwlock_read_lease_remaining: NULL argument");
    return zkl__side_lease_remaining(&l->read, ms);
}
