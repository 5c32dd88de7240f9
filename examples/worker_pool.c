/*
 * worker_pool.c - zkl_semaphore: at most LEASES of WORKERS run a job at once.
 *
 *   zklock_example_worker_pool HOSTS [PATH]
 *
 * The workers here are threads sharing one client (one session), which a
 * client allows; workers in other processes or on other machines that use the
 * same PATH with the same LEASES share the same limit. Each job counts itself
 * while it runs. Exits 0 if the count never went above LEASES and reached it.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <zklock/zklock.h>

#define LEASES 3
#define WORKERS 8
#define JOBS 3

static zkl_semaphore *sem;
static pthread_barrier_t start;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t full = PTHREAD_COND_INITIALIZER;
static int running, peak, violations;

static void job(void)
{
    struct timespec work = {0, 50 * 1000000L}, until;
    pthread_mutex_lock(&mu);
    if (++running > LEASES) {
        fprintf(stderr, "worker_pool: %d jobs running with %d leases\n", running, LEASES);
        violations++;
    }
    if (running > peak)
        peak = running;
    /* Until the pool has been full once, a job waits (up to 2 s) for the
     * others: on a loaded machine the leases can come slower than a job
     * ends, and the pool would never be seen full (an ASan run, 2 of 3). */
    if (peak == LEASES) {
        pthread_cond_broadcast(&full);
    } else {
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 2;
        while (peak < LEASES && pthread_cond_timedwait(&full, &mu, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&mu);
    nanosleep(&work, NULL);
    pthread_mutex_lock(&mu);
    running--;
    pthread_mutex_unlock(&mu);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start); /* all contend from the start */
    for (int i = 0; i < JOBS; i++) {
        zkl_lease *lease;
        if (zkl_semaphore_acquire(sem, ZKL_WAIT_FOREVER, &lease) != ZKL_OK) {
            fprintf(stderr, "worker_pool: acquire: %s\n", zkl_errmsg());
            return (void *)1;
        }
        job();
        /* A lease may be returned from any thread; this one returns its own. */
        if (zkl_lease_return(lease) != ZKL_OK) {
            fprintf(stderr, "worker_pool: return: %s\n", zkl_errmsg());
            return (void *)1;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *path = argc == 3 ? argv[2] : "/zklock-examples/worker-pool";
    zkl_client *c;
    pthread_t t[WORKERS];
    int failed = 0;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s HOSTS [PATH]\n", argv[0]);
        return 2;
    }
    if (zkl_client_open(argv[1], NULL, &c) != ZKL_OK) {
        fprintf(stderr, "worker_pool: %s\n", zkl_errmsg());
        return 1;
    }
    /* Every user of path must pass the same number of leases. */
    if (zkl_semaphore_create(c, path, LEASES, &sem) != ZKL_OK) {
        fprintf(stderr, "worker_pool: %s\n", zkl_errmsg());
        zkl_client_close(c);
        return 1;
    }
    pthread_barrier_init(&start, NULL, WORKERS);
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < WORKERS; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }
    pthread_barrier_destroy(&start);
    zkl_semaphore_destroy(sem);
    zkl_client_close(c);
    if (failed || violations || peak != LEASES) {
        fprintf(stderr, "worker_pool: FAILED (peak %d of %d leases, %d violations)\n", peak, LEASES,
                violations);
        return 1;
    }
    printf("worker_pool: %d jobs by %d workers, at most %d at once\n", WORKERS * JOBS, WORKERS,
           peak);
    return 0;
}
