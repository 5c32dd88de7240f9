/*
 * sleep.c - where zklock's threads sleep: on condition variables, or, in a
 * process of many clients, on eventfds (base/wakefd.h), out of the futex
 * hash. How many is "many" is read from the kernel (client.h).
 */
#include <limits.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#include "base/fault.h"
#include "base/tuning.h"
#include "session/client.h"

static _Atomic int clients_running;
static _Atomic int many_measured = ZKL_MANY_CLIENTS;

#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_GET_SLOTS 2
#endif

/*
 * Where a condition variable stops being the cheaper sleep (client.h).
 * lockbench contended, eventfd sleeps against condition variables,
 * alternating, 2026-11-26 (16 slots on 2 CPUs): at 64 sessions 11 rounds,
 * level (rate 0.98 to 1.15 by round, median 1.01; p99/p50 lower in 7); at
 * 32 sessions 4 rounds, behind in 3. So chains of 4 blocked threads favour
 * the futex, and from 8 the eventfd is no worse: from 3 clients a slot (48
 * here; docs/design/scale.md). A kernel
 * without a private hash (the prctl fails, or reads 0: the global one,
 * sized by the machine) keeps ZKL_MANY_CLIENTS.
 */
static int measure_many(void)
{
    int slots = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);
    if (slots <= 0 || slots > INT_MAX / ZKL_MANY_CLIENTS_PER_SLOT)
        return ZKL_MANY_CLIENTS;
    return slots * ZKL_MANY_CLIENTS_PER_SLOT;
}

void zkl__clients_count(int delta)
{
    if (delta > 0)
        atomic_store(&many_measured, measure_many());
    atomic_fetch_add(&clients_running, delta);
}

int zkl__many_clients_threshold(void)
{
    return (int)ZKL_TUNE(NULL, MANY_CLIENTS, atomic_load(&many_measured));
}

bool zkl__many_clients(void)
{
    return atomic_load(&clients_running) >= zkl__many_clients_threshold();
}
