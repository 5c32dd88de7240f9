/*
 * readers_writers.c - zkl_rwlock: readers share the lock, a writer has it alone.
 *
 *   zklock_example_readers_writers HOSTS [PATH]
 *
 * Each thread has its own ZooKeeper session, as separate processes would.
 * Phase one: the readers take the read lock and each waits inside until all
 * of them are in at once, which can only happen if read holds overlap. Phase
 * two: readers and writers take turns, and whoever gets in checks that no one
 * it must exclude is inside. Exits 0 if both hold.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <zklock/zklock.h>

#define READERS 3
#define WRITERS 2
#define ROUNDS 4

static const char *hosts, *path = "/zklock-examples/readers-writers";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_in = PTHREAD_COND_INITIALIZER;
static int readers_in, writers_in, peak_readers, violations;
static bool phase_two;

/* Count ourselves in; a writer must be alone, a reader must see no writer. */
static void enter(bool writer)
{
    pthread_mutex_lock(&mu);
    if (writers_in > 0 || (writer && readers_in > 0)) {
        fprintf(stderr, "readers_writers: a %s got in with %d readers, %d writers inside\n",
                writer ? "writer" : "reader", readers_in, writers_in);
        violations++;
    }
    if (writer)
        writers_in++;
    else
        readers_in++;
    if (readers_in > peak_readers)
        peak_readers = readers_in;
    pthread_cond_broadcast(&all_in);
    pthread_mutex_unlock(&mu);
}

static void leave(bool writer)
{
    pthread_mutex_lock(&mu);
    if (writer)
        writers_in--;
    else
        readers_in--;
    pthread_mutex_unlock(&mu);
}

/* Phase one: wait (10 s at most) until every reader is inside with us. */
static void wait_for_all_readers(void)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&mu);
    while (peak_readers < READERS) {
        if (pthread_cond_timedwait(&all_in, &mu, &until) != 0) {
            fprintf(stderr, "readers_writers: readers did not overlap\n");
            violations++;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
}

static void *run(void *arg)
{
    bool writer = arg != NULL;
    zkl_client *c = NULL;
    zkl_rwlock *l = NULL;
    zkl_status st = zkl_client_open(hosts, NULL, &c);
    if (st == ZKL_OK)
        st = zkl_rwlock_create(c, path, &l);
    for (int i = 0; st == ZKL_OK && i < (phase_two ? ROUNDS : 1); i++) {
        struct timespec work = {0, 5 * 1000000L};
        st = writer ? zkl_rwlock_write_acquire(l, ZKL_WAIT_FOREVER)
                    : zkl_rwlock_read_acquire(l, ZKL_WAIT_FOREVER);
        if (st != ZKL_OK)
            break;
        enter(writer);
        if (phase_two)
            nanosleep(&work, NULL);
        else
            wait_for_all_readers();
        leave(writer);
        st = writer ? zkl_rwlock_write_release(l) : zkl_rwlock_read_release(l);
    }
    if (st != ZKL_OK)
        fprintf(stderr, "readers_writers: %s\n", zkl_errmsg());
    if (l)
        zkl_rwlock_destroy(l);
    if (c)
        zkl_client_close(c);
    return st == ZKL_OK ? NULL : (void *)1;
}

/* Start the threads (writers get a non-NULL argument) and wait for them. */
static int run_all(int readers, int writers)
{
    pthread_t t[READERS + WRITERS];
    int failed = 0;
    for (int i = 0; i < readers + writers; i++)
        pthread_create(&t[i], NULL, run, (void *)(intptr_t)(i >= readers));
    for (int i = 0; i < readers + writers; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }
    return failed;
}

int main(int argc, char **argv)
{
    int failed;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s HOSTS [PATH]\n", argv[0]);
        return 2;
    }
    hosts = argv[1];
    if (argc == 3)
        path = argv[2];
    failed = run_all(READERS, 0);
    phase_two = true;
    failed |= run_all(READERS, WRITERS);
    if (failed || violations) {
        fprintf(stderr, "readers_writers: FAILED (%d violations)\n", violations);
        return 1;
    }
    printf("readers_writers: %d readers held the lock at once; writers were always alone\n",
           peak_readers);
    return 0;
}
