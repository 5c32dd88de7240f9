/*
 * procs_harness.c - zklock's mutex as one process of an across-process run
 * (one session; lockbench's --zk --path --seconds --start-at), built against
 * either transport by scripts/bench-procs (zklock-h-mt, zklock-h-st;
 * docs/design/transport.md) and by tests/transport/test_other.sh.
 *
 * Prints one JSON line: the holds within the window, the holds that found
 * another process inside (HARNESS_SHM=FILE: a holder word in a file every
 * process maps, set while holding; 0 without it) and the client's CPU per
 * hold. Exit 3 if the session opened after --start-at, 1 on an error.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zklock/zklock.h>

#include "standalone.h"

/* the shared holder word (HARNESS_SHM), or NULL */
static _Atomic int *map_holder(void)
{
    const char *shm = getenv("HARNESS_SHM");
    void *p;
    int fd;
    if (!shm)
        return NULL;
    if ((fd = open(shm, O_RDWR | O_CREAT, 0600)) < 0 || ftruncate(fd, 4096) != 0)
        exit(1);
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        exit(1);
    return p;
}

/* Whether nobody else was inside; takes the word and gives it back. */
static bool alone(_Atomic int *holder)
{
    int none = 0, me = (int)getpid();
    bool ok = atomic_compare_exchange_strong(holder, &none, me);
    usleep(0); /* (a moment for another holder to show) */
    atomic_compare_exchange_strong(holder, &me, 0);
    return ok;
}

int main(int argc, char **argv)
{
    window_opts o = {.path = "/h", .seconds = 5};
    const char *lib = getenv("HARNESS_LIB");
    _Atomic int *holder = map_holder();
    int64_t end, cpu0 = -1;
    long pairs = 0, errors = 0;
    zkl_client *c;
    zkl_mutex *m;
    char lp[600];
    window_opts_parse(argc, argv, &o);
    snprintf(lp, sizeof lp, "%s/lock", o.path);
    if (zkl_client_open(o.zk, NULL, &c) != ZKL_OK || zkl_mutex_create(c, lp, &m) != ZKL_OK) {
        fprintf(stderr, "procs_harness: %s\n", zkl_errmsg());
        return 1;
    }
    for (int i = 0; i < 50; i++) { /* warm-up */
        if (zkl_mutex_acquire(m, -1) == ZKL_OK)
            zkl_mutex_release(m);
    }
    if (o.start_at && now_ms() > o.start_at)
        return 3; /* late: its window would be short */
    if (!o.start_at)
        o.start_at = now_ms();
    end = o.start_at + (int64_t)o.seconds * 1000;
    for (;;) {
        int64_t t;
        if (zkl_mutex_acquire(m, (int)(end + 1000 - now_ms())) != ZKL_OK)
            break;
        t = now_ms();
        if (holder && !alone(holder))
            errors++;
        zkl_mutex_release(m);
        if (t >= end)
            break;
        if (t >= o.start_at) {
            if (cpu0 < 0)
                cpu0 = cpu_us();
            pairs++;
        }
    }
    printf("{\"lib\":\"%s\",\"ops\":%ld,\"errors\":%ld,\"client_cpu_us_per_op\":%lld}\n",
           lib ? lib : "zklock", pairs, errors,
           (long long)(pairs && cpu0 >= 0 ? (cpu_us() - cpu0) / pairs : 0));
    fflush(stdout);
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return 0;
}
