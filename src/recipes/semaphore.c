/*
 * semaphore.c - zkl_semaphore, Curator's InterProcessSemaphoreV2, composed
 * from the lock-internals core twice: the internal mutex at PATH/locks (the
 * standard mutex driver) and the lease at PATH/leases, whose driver grants
 * once the leases number at most max_leases and otherwise watches the lease
 * list. Only the internal mutex holder counts and watches leases, so waiters
 * queue one behind another with no herd (pitfalls row 12: the lease path is
 * known before any further wait, every exit returns it, leases are counted
 * only under the internal mutex, and our own lease is looked for on every
 * wake).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internals.h"
#include "services/lease.h"
#include "base/path.h"
#include "base/status.h"
#include "base/util.h"
#include "zklock/semaphore.h"

extern const zkl__driver zkl__mutex_driver;

static const char *const lease_markers[] = {"lease-", NULL};

static zkl__verdict lease_decide(const zkl__driver *d, char *const *sorted, size_t n, size_t self,
                                 const void *ctx)
{
    zkl__verdict v = {false, -1, false, false, false};
    (void)d;
    (void)sorted;
    (void)self;
    if (n <= (size_t) * (const int *)ctx)
        v.holds = true;
    else
        v.watch_parent = true;
    return v;
}

const zkl__driver zkl__lease_driver = {"lease-", lease_markers, lease_decide};

struct zkl_semaphore {
    zkl_client *c;
    char *path, *locks, *leases;
    int max_leases;
    pthread_mutex_t mu;
    int out;             /* leases not yet returned */
    zkl_lease *out_list; /* those leases */
    zkl_hold_state_fn state_fn;
    void *state_ud;
    int listener;
};

struct zkl_lease {
    zkl_semaphore *sem;
    zkl__hold hold;
    zkl_lease *prev, *next;
};

zkl_status zkl_semaphore_create(zkl_client *c, const char *path, int max_leases,
                                zkl_semaphore **out)
{
    zkl_semaphore *s;
    zkl_status st;
    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_create: out is NULL");
    *out = NULL;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_create: client is NULL");
    if (max_leases < 1)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_create: max_leases %d must be at least 1",
                         max_leases);
    st = zkl__path_validate(path);
    if (st != ZKL_OK)
        return st;
    s = calloc(1, sizeof *s);
    if (!s)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    s->path = strdup(path);
    s->locks = zkl__path_join(path, "locks");
    s->leases = zkl__path_join(path, "leases");
    if (!s->path || !s->locks || !s->leases) {
        free(s->path);
        free(s->locks);
        free(s->leases);
        free(s);
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    }
    s->c = c;
    s->max_leases = max_leases;
    pthread_mutex_init(&s->mu, NULL);
    zkl__client_ref(c);
    *out = s;
    return ZKL_OK;
}

zkl_status zkl_semaphore_destroy(zkl_semaphore *s)
{
    int out;
    if (!s)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_destroy: semaphore is NULL");
    pthread_mutex_lock(&s->mu);
    out = s->out;
    pthread_mutex_unlock(&s->mu);
    if (out > 0)
        return zkl__fail(ZKL_EBUSY, "zkl_semaphore_destroy: %d lease(s) of %s still out", out,
                         s->path);
    if (s->listener)
        zkl__listener_remove(s->c, s->listener);
    zkl__client_unref(s->c);
    pthread_mutex_destroy(&s->mu);
    free(s->path);
    free(s->locks);
    free(s->leases);
    free(s);
    return ZKL_OK;
}

/* One lease: internal mutex, lease, internal mutex released on every path. */
static zkl_status acquire_one(zkl_semaphore *s, int64_t deadline, zkl_lease **out)
{
    for (;;) {
        zkl__acquire_args a;
        zkl__hold inner = {0}, lease = {0};
        zkl_status st;
        memset(&a, 0, sizeof a);
        a.path = s->locks;
        a.driver = &zkl__mutex_driver;
        a.deadline = deadline;
        a.token_lazy = true; /* nobody asks for the internal lock's token */
        /* Its hand-offs are the semaphore's critical path; the look-ahead's
         * request still leaves a lease below Curator's nine. */
        a.lookahead = ZKL__LOOKAHEAD_ON;
        st = zkl__lock_acquire(s->c, &a, &inner);
        if (st != ZKL_OK)
            return st;
        memset(&a, 0, sizeof a);
        a.path = s->leases;
        a.driver = &zkl__lease_driver;
        a.ctx = &s->max_leases;
        a.deadline = deadline;
        a.no_restart = true;
        st = zkl__lock_acquire(s->c, &a, &lease);
        zkl__lock_release(s->c, &inner);
        if (st == ZKL_OK) {
            zkl_lease *l = calloc(1, sizeof *l);
            if (!l) {
                zkl__lock_release(s->c, &lease);
                return zkl__fail(ZKL_ENOMEM, "out of memory");
            }
            l->sem = s;
            l->hold = lease;
            pthread_mutex_lock(&s->mu);
            s->out++;
            l->next = s->out_list;
            if (s->out_list)
                s->out_list->prev = l;
            s->out_list = l;
            pthread_mutex_unlock(&s->mu);
            *out = l;
            return ZKL_OK;
        }
        if (st != ZKL_ELOST || zkl__now_ms() >= deadline)
            return st;
        /* Session lost while counting: queue again for the internal lock. */
    }
}

zkl_status zkl_semaphore_acquire_many(zkl_semaphore *s, int n, int timeout_ms, zkl_lease **leases)
{
    int64_t deadline;
    int i;
    zkl__clear_err();
    if (!s || !leases)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_acquire: NULL argument");
    if (n < 1 || n > s->max_leases)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_acquire: %d leases asked of a semaphore of %d",
                         n, s->max_leases);
    if (timeout_ms < -1)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_acquire: timeout %d ms is negative",
                         timeout_ms);
    for (i = 0; i < n; i++)
        leases[i] = NULL;
    deadline = zkl__deadline(timeout_ms);
    for (i = 0; i < n; i++) {
        zkl_status st = acquire_one(s, deadline, &leases[i]);
        if (st != ZKL_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", zkl_errmsg());
            while (i-- > 0) {
                zkl_lease_return(leases[i]);
                leases[i] = NULL;
            }
            return zkl__fail(st, "%s", msg);
        }
    }
    return ZKL_OK;
}

zkl_status zkl_semaphore_acquire(zkl_semaphore *s, int timeout_ms, zkl_lease **lease)
{
    return zkl_semaphore_acquire_many(s, 1, timeout_ms, lease);
}

zkl_status zkl_lease_return(zkl_lease *l)
{
    zkl_semaphore *s;
    zkl_status st;
    zkl__clear_err();
    if (!l)
        return zkl__fail(ZKL_EINVAL, "zkl_lease_return: lease is NULL");
    s = l->sem;
    st = zkl__lock_release(s->c, &l->hold);
    pthread_mutex_lock(&s->mu);
    s->out--;
    if (l->prev)
        l->prev->next = l->next;
    else
        s->out_list = l->next;
    if (l->next)
        l->next->prev = l->prev;
    pthread_mutex_unlock(&s->mu);
    free(l);
    return st;
}

bool zkl_lease_is_valid(const zkl_lease *l)
{
    return l && zkl__hold_alive(l->sem->c, l->hold.epoch);
}

zkl_status zkl_lease_remaining(const zkl_lease *l, int64_t *ms)
{
    zkl__clear_err();
    if (!l || !ms)
        return zkl__fail(ZKL_EINVAL, "zkl_lease_remaining: NULL argument");
    return zkl__lease_remaining(l->sem->c, l->hold.epoch, l->hold.node, ms);
}

int64_t zkl_lease_fencing_token(const zkl_lease *l)
{
    return l ? l->hold.czxid : 0;
}

const char *zkl_lease_node(const zkl_lease *l)
{
    return l ? l->hold.node : NULL;
}

zkl_status zkl_semaphore_participants(zkl_semaphore *s, char ***paths, size_t *n)
{
    zkl__clear_err();
    if (!s || !paths || !n)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_participants: NULL argument");
    return zkl__participants(s->c, s->leases, lease_markers, paths, n);
}

static void on_state(zkl_conn_state st, uint64_t epoch, void *ctx)
{
    zkl_semaphore *s = ctx;
    zkl_lease *l;
    bool mine = false;
    pthread_mutex_lock(&s->mu);
    for (l = s->out_list; l; l = l->next)
        if (l->hold.epoch == epoch)
            mine = true;
    pthread_mutex_unlock(&s->mu);
    if (st != ZKL_STATE_CONNECTED && s->state_fn && mine)
        s->state_fn(s, st, s->state_ud);
}

zkl_status zkl_semaphore_on_state(zkl_semaphore *s, zkl_hold_state_fn fn, void *userdata)
{
    zkl__clear_err();
    if (!s)
        return zkl__fail(ZKL_EINVAL, "zkl_semaphore_on_state: semaphore is NULL");
    if (s->listener)
        zkl__listener_remove(s->c, s->listener);
    s->listener = 0;
    s->state_fn = fn;
    s->state_ud = userdata;
    if (fn && !(s->listener = zkl__listener_add(s->c, on_state, s)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}
