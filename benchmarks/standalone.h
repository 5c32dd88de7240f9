/*
 * standalone.h - clocks and options of the single-file benchmark programs
 * that build without benchutil.c (transport_probe.c: benchutil makes
 * libzookeeper_mt's synchronous calls, which libzookeeper_st lacks).
 */
#ifndef ZKL_BENCH_STANDALONE_H
#define ZKL_BENCH_STANDALONE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* wall clock, epoch milliseconds (--start-at is one) */
static inline int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* monotonic microseconds */
static inline int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* the process's CPU time (all its threads, user and system), microseconds */
static inline int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

/* lockbench's options for one process of an across-process run
 * (lockbench.md, "Across processes"); the others are taken and ignored */
typedef struct window_opts {
    const char *zk, *path, *samples;
    int seconds;
    int64_t start_at; /* epoch ms; 0: now */
} window_opts;

static inline void window_opts_parse(int argc, char **argv, window_opts *o)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--zk"))
            o->zk = argv[i + 1];
        else if (!strcmp(argv[i], "--path"))
            o->path = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            o->seconds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--start-at"))
            o->start_at = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--samples"))
            o->samples = argv[i + 1];
    }
}

#endif
