/*
 * stats.c - see stats.h: the counting.
 */
#include <stdlib.h>
#include <utlist.h>

#include "base/status.h"
#include "base/util.h"
#include "core/objects/stats.h"
#include "zklock/leader.h"

const char *const zkl__bucket_le[ZKL__BUCKETS] = {"0.001", "0.0025", "0.005", "0.01",
                                                  "0.025", "0.05",   "0.1",   "0.25",
                                                  "0.5",   "1.0",    "2.5",   "10.0"};
static const int64_t bucket_us[ZKL__BUCKETS] = {1000,   2500,   5000,   10000,   25000,   50000,
                                                100000, 250000, 500000, 1000000, 2500000, 10000000};

#define ADD(x, v) atomic_fetch_add_explicit(&(x), (v), memory_order_relaxed)

static void observe(zkl__hist *h, int64_t us)
{
    int i = 0;
    if (us < 0)
        us = 0;
    while (i < ZKL__BUCKETS && us > bucket_us[i])
        i++;
    ADD(h->n[i], 1);
    ADD(h->sum_us, (uint64_t)us);
}

/* A live hold's tally: in c->tally.marks, under c->mu. */
typedef struct zkl__holdmark {
    zkl__lockstats *stats;
    const char *owner; /* where its hold is kept: inside a lock object */
    uint64_t epoch;
    int64_t granted_us;
    bool counted; /* its loss and hold time are counted: its release adds nothing */
    struct zkl__holdmark *prev, *next;
} zkl__holdmark;

void zkl__stats_mark(zkl__lockstats *s, zkl_client *c, zkl__hold *h, const void *owner)
{
    zkl__holdmark *m;
    h->mark = NULL; /* (a hold passed on locally carries its old holder's) */
    if (!s || !(m = calloc(1, sizeof *m)))
        return; /* (counted at its release) */
    m->stats = s;
    m->owner = owner;
    m->epoch = h->epoch;
    m->granted_us = h->granted_us;
    h->mark = m;
    pthread_mutex_lock(&c->mu);
    DL_APPEND2(c->tally.marks, m, prev, next);
    pthread_mutex_unlock(&c->mu);
}

/* Drop h's tally; whether its loss was counted already. */
static bool unmark(zkl_client *c, zkl__hold *h)
{
    bool counted;
    if (!h->mark)
        return false;
    pthread_mutex_lock(&c->mu);
    counted = h->mark->counted;
    DL_DELETE2(c->tally.marks, h->mark, prev, next);
    pthread_mutex_unlock(&c->mu);
    free(h->mark);
    h->mark = NULL;
    return counted;
}

void zkl__stats_unmark(zkl_client *c, zkl__hold *h)
{
    (void)unmark(c, h);
}

void zkl__stats_acquired(zkl__lockstats *s, zkl_client *c, zkl__hold *h, const void *owner,
                         int64_t wait_us)
{
    if (!s)
        return;
    ADD(s->acquisitions, 1);
    observe(&s->wait, wait_us);
    if (h)
        zkl__stats_mark(s, c, h, owner);
}

void zkl__stats_passed(zkl__lockstats *s)
{
    if (s)
        ADD(s->handoffs, 1);
}

void zkl__stats_failed(zkl__lockstats *s, zkl_status st)
{
    if (s && st == ZKL_ETIMEDOUT)
        ADD(s->timeouts, 1);
}

/* Hold of stats s, granted at granted_us, ends now: lost or not. */
static void hold_ended(zkl__lockstats *s, int64_t granted_us, bool lost, bool lease_expired)
{
    if (granted_us)
        observe(&s->hold, zkl__now_us() - granted_us);
    if (!lost)
        return;
    ADD(s->lost, 1);
    if (lease_expired)
        ADD(s->lease_expiries, 1);
}

void zkl__stats_released(zkl__lockstats *s, zkl_client *c, zkl__hold *h, zkl_status st)
{
    if (unmark(c, h) || !s) /* (its loss was counted when told) */
        return;
    hold_ended(s, h->granted_us, st == ZKL_ELOST,
               atomic_load(&c->conn.lease_expired_epoch) == h->epoch);
}

void zkl__stats_lost_locked(zkl_client *c, uint64_t epoch, bool lease_expired)
{
    zkl__holdmark *m;
    DL_FOREACH2(c->tally.marks, m, next)
    {
        if (m->epoch != epoch || m->counted)
            continue;
        m->counted = true;
        hold_ended(m->stats, m->granted_us, true, lease_expired);
    }
}

/* (here, where the events are counted: the metrics label them with these names) */
const char *zkl_leader_event_name(zkl_leader_event ev)
{
    switch (ev) {
    case ZKL_LEADER_GAINED: return "GAINED";
    case ZKL_LEADER_LOST: return "LOST";
    case ZKL_LEADER_LEASE_ENDED: return "LEASE_ENDED";
    case ZKL_LEADER_LEFT: return "LEFT";
    default: return "UNKNOWN";
    }
}

void zkl__stats_term_began(zkl__lockstats *s, const zkl__hold *h, int64_t token)
{
    zkl__electstats *e;
    if (!s)
        return;
    e = &s->elect;
    ADD(e->events[0], 1); /* ZKL_LEADER_GAINED */
    if (h->woke_us && h->granted_us > h->woke_us)
        ADD(e->vacant_us, (uint64_t)(h->granted_us - h->woke_us));
    atomic_store_explicit(&e->token, token, memory_order_relaxed);
    atomic_store_explicit(&e->since_us, h->granted_us ? h->granted_us : zkl__now_us(),
                          memory_order_relaxed);
}

void zkl__stats_term_ended(zkl__lockstats *s, int ev)
{
    zkl__electstats *e;
    int64_t since;
    if (!s || ev < 2 || ev > ZKL__LEADER_EVENTS)
        return;
    e = &s->elect;
    ADD(e->events[ev - 1], 1);
    since = atomic_exchange_explicit(&e->since_us, 0, memory_order_relaxed);
    atomic_store_explicit(&e->token, 0, memory_order_relaxed);
    if (since)
        ADD(e->lead_us, (uint64_t)(zkl__now_us() - since));
}

void zkl__stats_forget(zkl_client *c, const void *obj, size_t size)
{
    const char *lo = obj, *hi = lo + size;
    zkl__holdmark *m, *tmp;
    pthread_mutex_lock(&c->mu);
    DL_FOREACH_SAFE2(c->tally.marks, m, tmp, next)
    {
        if (m->owner >= lo && m->owner < hi) {
            /* (m is in the list it walks: c->tally.marks is not NULL) */
            // NOLINTNEXTLINE(clang-analyzer-core.NullDereference)
            DL_DELETE2(c->tally.marks, m, prev, next);
            free(m);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

void zkl__stats_free_all(zkl_client *c)
{
    zkl__holdmark *m, *tmp;
    DL_FOREACH_SAFE2(c->tally.marks, m, tmp, next)
    {
        DL_DELETE2(c->tally.marks, m, prev, next); // NOLINT(clang-analyzer-core.NullDereference)
        free(m);
    }
}
