/* procs_harness.c - zklock's mutex, one session per process, with the probe's CLI (--zk --path
 * --seconds --start-at; HARNESS_SHM=FILE checks exclusion across processes): built
 * against either transport by scripts/bench-procs (zklock-h-mt, zklock-h-st). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <zklock/zklock.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}
int main(int argc, char **argv)
{
    const char *zk = NULL, *path = "/h", *lib = getenv("HARNESS_LIB");
    int seconds = 5, i;
    int64_t start_at = 0, end, cpu0 = -1;
    long pairs = 0, errors = 0;
    /* exclusion across processes: a holder word in a file every process maps */
    _Atomic int *holder = NULL;
    const char *shm = getenv("HARNESS_SHM");
    if (shm) {
        int fd = open(shm, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || ftruncate(fd, 4096) != 0)
            return 1;
        holder = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    }
    zkl_client *c;
    zkl_mutex *m;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--zk"))
            zk = argv[i + 1];
        else if (!strcmp(argv[i], "--path"))
            path = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--start-at"))
            start_at = atoll(argv[i + 1]);
    }
    if (zkl_client_open(zk, NULL, &c) != ZKL_OK) {
        fprintf(stderr, "open: %s\n", zkl_errmsg());
        return 1;
    }
    char lp[600];
    snprintf(lp, sizeof lp, "%s/lock", path);
    if (zkl_mutex_create(c, lp, &m) != ZKL_OK) {
        fprintf(stderr, "create: %s\n", zkl_errmsg());
        return 1;
    }
    for (i = 0; i < 50; i++) {
        zkl_mutex_acquire(m, -1);
        zkl_mutex_release(m);
    }
    if (start_at && now_ms() > start_at)
        return 3;
    if (!start_at)
        start_at = now_ms();
    end = start_at + (int64_t)seconds * 1000;
    for (;;) {
        zkl_status st = zkl_mutex_acquire(m, (int)(end + 1000 - now_ms()));
        int64_t t = now_ms();
        if (st != ZKL_OK)
            break;
        if (holder) {
            int none = 0;
            if (!atomic_compare_exchange_strong(holder, &none, (int)getpid()))
                errors++;
            usleep(0);
            int me = (int)getpid();
            atomic_compare_exchange_strong(holder, &me, 0);
        }
        zkl_mutex_release(m);
        if (t >= end)
            break;
        if (t >= start_at) {
            if (cpu0 < 0)
                cpu0 = cpu_us();
            pairs++;
        }
    }
    printf("{\"lib\":\"%s\",\"ops\":%ld,\"errors\":%ld,\"client_cpu_us_per_op\":%lld}\n",
           lib ? lib : "h", pairs, errors,
           (long long)(pairs && cpu0 >= 0 ? (cpu_us() - cpu0) / pairs : 0));
    fflush(stdout);
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return 0;
}
