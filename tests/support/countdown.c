/*
 * countdown.c - see countdown.h. Lock-free, since the calls it counts come
 * from any thread, the ZooKeeper client's included.
 */
#include "countdown.h"

long zkt_countdown_arm(zkt_countdown *d, long nth)
{
    return atomic_exchange(&d->left, nth);
}

long zkt_countdown_seen(zkt_countdown *d)
{
    return atomic_load(&d->seen);
}

int zkt_countdown_failed(zkt_countdown *d)
{
    return atomic_load(&d->failed);
}

void zkt_countdown_reset(zkt_countdown *d)
{
    atomic_store(&d->seen, 0);
    atomic_store(&d->failed, 0);
}

int zkt_countdown_fire(zkt_countdown *d)
{
    long left;
    if (atomic_load(&d->left) == 0)
        return 0;
    atomic_fetch_add(&d->seen, 1);
    left = atomic_fetch_sub(&d->left, 1);
    if (left == 1) {
        atomic_store(&d->failed, 1);
        return 1;
    }
    if (left <= 0)
        atomic_store(&d->left, 0);
    return 0;
}
