/*
 * faults.c - the tests' side of the library's one fault hook (src/base/
 * fault.h): what each test asked of each client, and the hook that answers
 * the library from it. The zkt_fault_* calls of zkt.h set it.
 *
 * The hook runs on any thread, sometimes under the client's c->mu, so it
 * takes only its own mutex, a leaf; a test's function (after a listing,
 * after a settle) runs with no lock held. It never allocates: the failure
 * sweep (test_fail_each.c) fails every allocation of its binary in turn.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/fault.h"
#include "zkt.h"

typedef void (*point_fn)(zkl_client *, void *);

/* What the tests asked of one client. */
typedef struct asked {
    zkl_client *c;
    int counts[ZKL__FAULT_NSITES]; /* faults: how many times more (or how much) */
    int tune[ZKL__FAULT_NSITES];   /* tunables: the value, or -1 */
    char next_uuid[37];
    point_fn after_listing, after_settle, after_chroot_part;
    void *after_listing_arg, *after_settle_arg, *after_chroot_part_arg;
    char chroot_part[256]; /* the ancestor after_chroot_part waits for */
    _Atomic uint64_t lease_syncs;
} asked;

#define CLIENTS 512 /* open at once, at most, in one test */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static asked slots[CLIENTS];
static _Atomic int many_clients = -1;
static _Atomic unsigned long cohort_queued; /* threads queued behind a local holder, ever */

/* The faults that fire a given number of times; the others are values that stay. */
static int counted(zkl__fault_site site)
{
    return site == ZKL__FAULT_CREATE_SEND_LOST || site == ZKL__FAULT_CREATE_REPLY_LOST ||
           site == ZKL__FAULT_CREATE_LANDS_LATE || site == ZKL__FAULT_DELETE_LOST ||
           site == ZKL__FAULT_BG_DELETE_LOST;
}

/* c's record (NULL: none); mu held. */
static asked *find_locked(const zkl_client *c)
{
    int i;
    for (i = 0; i < CLIENTS; i++)
        if (slots[i].c == c)
            return &slots[i];
    return NULL;
}

/* c's record, made if need be (NULL: no slot left); mu held. */
static asked *of_locked(zkl_client *c)
{
    asked *a = find_locked(c);
    int i;
    if (a || !(a = find_locked(NULL)))
        return a;
    memset(a, 0, sizeof *a);
    a->c = c;
    for (i = 0; i < ZKL__FAULT_NSITES; i++)
        a->tune[i] = -1;
    return a;
}

/* Run a point's function once, if one is set: taken under mu, run without. */
static int run_point(asked *a, point_fn *fn, void **arg)
{
    point_fn f = *fn;
    void *x = *arg;
    *fn = NULL;
    pthread_mutex_unlock(&mu);
    if (f)
        f(a->c, x);
    return f != NULL;
}

static int answer(zkl_client *c, zkl__fault_site site, void *io)
{
    asked *a;
    int v = site >= ZKL__FAULT_HOLD_BACK_US ? -1 : 0;
    if (site == ZKL__FAULT_MANY_CLIENTS)
        return atomic_load(&many_clients);
    if (site == ZKL__FAULT_COHORT_QUEUED) {
        atomic_fetch_add(&cohort_queued, 1);
        return 0;
    }
    pthread_mutex_lock(&mu);
    if (site == ZKL__FAULT_FREED) { /* its address may come again, with nothing asked */
        if ((a = find_locked(c)) != NULL)
            a->c = NULL;
        pthread_mutex_unlock(&mu);
        return 0;
    }
    if (site == ZKL__FAULT_LEASE_SYNC) { /* counted for every client */
        if ((a = of_locked(c)) != NULL)
            atomic_fetch_add(&a->lease_syncs, 1);
        pthread_mutex_unlock(&mu);
        return 0;
    }
    if (!(a = find_locked(c))) {
        pthread_mutex_unlock(&mu);
        return v;
    }
    switch (site) {
    case ZKL__FAULT_NEXT_UUID:
        v = a->next_uuid[0] != '\0';
        if (v)
            memcpy(io, a->next_uuid, 37);
        a->next_uuid[0] = '\0';
        break;
    case ZKL__FAULT_LISTING_WANTED: v = a->after_listing != NULL; break;
    case ZKL__FAULT_AFTER_LISTING: return run_point(a, &a->after_listing, &a->after_listing_arg);
    case ZKL__FAULT_AFTER_SETTLE: return run_point(a, &a->after_settle, &a->after_settle_arg);
    case ZKL__FAULT_CHROOT_PART:
        if (a->after_chroot_part && strcmp(io, a->chroot_part) == 0)
            return run_point(a, &a->after_chroot_part, &a->after_chroot_part_arg);
        break;
    default:
        if (site >= ZKL__FAULT_HOLD_BACK_US) {
            v = a->tune[site];
        } else {
            v = a->counts[site];
            if (counted(site) && v > 0)
                a->counts[site]--;
        }
    }
    pthread_mutex_unlock(&mu);
    return counted(site) ? v > 0 : v;
}

/* The hook is in place from the start: the lease's syncs are counted for every client. */
__attribute__((constructor)) static void install(void)
{
    zkl__fault_set(answer);
}

/* c's record; returned with mu held. */
static asked *lock_of(zkl_client *c)
{
    asked *a;
    pthread_mutex_lock(&mu);
    a = of_locked(c);
    if (!a)
        pthread_mutex_unlock(&mu);
    cr_assert(a, "more than %d clients asked for faults", CLIENTS);
    return a;
}

void zkt_fault_set(zkl_client *c, zkl__fault_site site, int value)
{
    asked *a = lock_of(c);
    if (site >= ZKL__FAULT_HOLD_BACK_US)
        a->tune[site] = value;
    else
        a->counts[site] = value;
    pthread_mutex_unlock(&mu);
}

void zkt_fault_next_uuid(zkl_client *c, const char *uuid)
{
    asked *a = lock_of(c);
    snprintf(a->next_uuid, sizeof a->next_uuid, "%s", uuid);
    pthread_mutex_unlock(&mu);
}

void zkt_fault_after_list(zkl_client *c, void (*fn)(zkl_client *, void *), void *arg)
{
    asked *a = lock_of(c);
    a->after_listing = fn;
    a->after_listing_arg = arg;
    pthread_mutex_unlock(&mu);
}

void zkt_fault_after_settle(zkl_client *c, void (*fn)(zkl_client *, void *), void *arg)
{
    asked *a = lock_of(c);
    a->after_settle = fn;
    a->after_settle_arg = arg;
    pthread_mutex_unlock(&mu);
}

void zkt_fault_after_chroot_part(zkl_client *c, const char *part, void (*fn)(zkl_client *, void *),
                                 void *arg)
{
    asked *a = lock_of(c);
    snprintf(a->chroot_part, sizeof a->chroot_part, "%s", part);
    a->after_chroot_part = fn;
    a->after_chroot_part_arg = arg;
    pthread_mutex_unlock(&mu);
}

uint64_t zkt_lease_syncs(zkl_client *c)
{
    asked *a = lock_of(c);
    uint64_t n = atomic_load(&a->lease_syncs);
    pthread_mutex_unlock(&mu);
    return n;
}

void zkt_many_clients_from(int n)
{
    atomic_store(&many_clients, n < 0 ? -1 : n);
}

unsigned long zkt_cohort_queued(void)
{
    return atomic_load(&cohort_queued);
}

bool zkt_wait_cohort_queued(unsigned long more_than, int timeout_ms)
{
    int64_t end = zkt_now_ms() + timeout_ms;
    while (atomic_load(&cohort_queued) <= more_than) {
        if (zkt_now_ms() >= end)
            return false;
        zkt_sleep_ms(5);
    }
    return true;
}
