/*
 * clock.h - the partition rounds' two clock helpers, for partition.c and
 * counter.c: the wall clock the server's log is compared with, and a sleep
 * that signals do not cut short.
 */
#ifndef ZKL_PARTITION_CLOCK_H
#define ZKL_PARTITION_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#endif
