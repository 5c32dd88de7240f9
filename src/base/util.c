/*
 * util.c - see util.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/status.h"
#include "base/util.h"
#include "base/tuning.h"

zkl_status zkl__uuid4(char out[37])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return zkl__fail(ZKL_ESYS, "getrandom: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return ZKL_OK;
}

void zkl__local_address(char *out, size_t len)
{
    struct ifaddrs *list = NULL, *it;
    snprintf(out, len, "127.0.0.1");
    if (getifaddrs(&list) != 0)
        return;
    for (it = list; it; it = it->ifa_next) {
        if (!it->ifa_addr || it->ifa_addr->sa_family != AF_INET)
            continue;
        if ((it->ifa_flags & IFF_LOOPBACK) || !(it->ifa_flags & IFF_UP))
            continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)it->ifa_addr)->sin_addr, out,
                  (socklen_t)len);
        break;
    }
    freeifaddrs(list);
}

int64_t zkl__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t zkl__boot_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t zkl__now_ms(void)
{
    return zkl__now_us() / 1000;
}

void zkl__sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

double zkl__unix_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t zkl__deadline(int timeout_ms)
{
    return timeout_ms < 0 ? INT64_MAX : zkl__now_ms() + timeout_ms;
}

int zkl__cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    int rc;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

int zkl__cond_wait_until_us(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_us)
{
    struct timespec ts;
    if (deadline_us == INT64_MAX)
        return pthread_cond_wait(cv, mu);
    ts.tv_sec = deadline_us / 1000000;
    ts.tv_nsec = (deadline_us % 1000000) * 1000;
    return pthread_cond_timedwait(cv, mu, &ts);
}

int zkl__cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    return zkl__cond_wait_until_us(cv, mu,
                                   deadline_ms == INT64_MAX ? INT64_MAX : deadline_ms * 1000);
}

uint64_t zkl__thread_id(void)
{
    static atomic_uint_fast64_t next = 1;
    static _Thread_local uint64_t mine;
    if (mine == 0)
        mine = atomic_fetch_add(&next, 1);
    return mine;
}

int64_t zkl__retry_delay_ms(int failures, int max_doublings)
{
    return (int64_t)ZKL_RETRY_FIRST_MS << (failures < max_doublings ? failures : max_doublings);
}

/* A bounded run: shared by the waiter and the thread, freed by the last. */
typedef struct bounded {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *arg);
    void *arg;
    int refs;
    bool done;
} bounded;

static void bounded_unref(bounded *b)
{
    bool last;
    pthread_mutex_lock(&b->mu);
    last = --b->refs == 0;
    pthread_mutex_unlock(&b->mu);
    if (last) {
        pthread_mutex_destroy(&b->mu);
        pthread_cond_destroy(&b->cv);
        free(b);
    }
}

static void *bounded_main(void *p)
{
    bounded *b = p;
    b->fn(b->arg);
    pthread_mutex_lock(&b->mu);
    b->done = true;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    bounded_unref(b);
    return NULL;
}

bool zkl__run_bounded(void (*fn)(void *arg), void *arg, int wait_ms)
{
    bounded *b = calloc(1, sizeof *b);
    pthread_attr_t attr;
    pthread_t t;
    int64_t deadline = zkl__now_ms() + wait_ms;
    bool done;
    int rc = -1;
    if (b) {
        pthread_mutex_init(&b->mu, NULL);
        zkl__cond_init(&b->cv);
        b->fn = fn;
        b->arg = arg;
        b->refs = 2;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&t, &attr, bounded_main, b);
        pthread_attr_destroy(&attr);
    }
    if (rc != 0) { /* no thread: here, unbounded */
        if (b) {
            pthread_mutex_destroy(&b->mu);
            pthread_cond_destroy(&b->cv);
            free(b);
        }
        fn(arg);
        return true;
    }
    pthread_mutex_lock(&b->mu);
    while (!b->done && wait_ms > 0)
        if (zkl__cond_wait_until(&b->cv, &b->mu, deadline) == ETIMEDOUT)
            break;
    done = b->done;
    pthread_mutex_unlock(&b->mu);
    bounded_unref(b);
    return done;
}
