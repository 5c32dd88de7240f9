/*
 * stats.c - see stats.h: the counting.
 */
#include "base/status.h"
#include "base/util.h"
#include "core/stats.h"

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

void zkl__stats_acquired(zkl__lockstats *s, int64_t wait_us)
{
    if (!s)
        return;
    ADD(s->acquisitions, 1);
    observe(&s->wait, wait_us);
}

void zkl__stats_failed(zkl__lockstats *s, zkl_status st)
{
    if (s && st == ZKL_ETIMEDOUT)
        ADD(s->timeouts, 1);
}

void zkl__stats_released(zkl__lockstats *s, zkl_client *c, const zkl__hold *h, zkl_status st)
{
    if (!s)
        return;
    if (h->granted_us)
        observe(&s->hold, zkl__now_us() - h->granted_us);
    if (st != ZKL_ELOST)
        return;
    ADD(s->lost, 1);
    if (atomic_load(&c->lease_expired_epoch) == h->epoch)
        ADD(s->lease_expiries, 1);
}
