/*
 * guarded_counter.c - a counter kept in ZooKeeper, incremented under a
 * mutex with guarded writes (zklock/guard.h).
 *
 *   zklock_example_guarded_counter HOSTS [PATH]
 *
 * When the state a lock protects lives in ZooKeeper itself, a write can be
 * made conditional on the lock in the same transaction: zklock puts a check
 * of the holder's own lock node in front of it, and ZooKeeper orders the
 * two against the session close that deletes that node. A holder that
 * stalled past its session timeout (a GC pause, a stopped VM) and wakes up
 * still believing it holds the lock gets ZKL_ELOST, and its write is not
 * applied: no clock, no lease margin and no fencing-aware resource needed
 * (compare fencing.c, for a resource outside ZooKeeper).
 *
 * Worker threads, each with its own session as separate processes would
 * have, read the counter and set it one higher, at the version they read,
 * behind the guard. A holder that stalls is played by deleting its lock
 * node, as the server does when it ends a stalled holder's session. Exits 0
 * if the counter equals the increments reported done and the stalled
 * holder's write was refused.
 *
 * Its own reads use libzookeeper_mt's synchronous API, linked beside zklock
 * in either order (cc guarded_counter.c $(pkg-config --libs zklock)
 * -lzookeeper_mt): zklock's own ZooKeeper client is a private copy under
 * names of its own, so the two never share a name (docs/design/transport.md).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include <zklock/zklock.h>

#define WORKERS 4
#define ROUNDS 5

static const char *hosts, *path = "/zklock-examples/guarded";
static char counter[512];
static zhandle_t *zh; /* the application's own ZooKeeper handle, for reads */
static atomic_int done;

/* The counter's value and data version, read with the application's handle. */
static int read_counter(long *value, int *version)
{
    char buf[32];
    int len = sizeof buf - 1, rc;
    struct Stat st;
    rc = zoo_get(zh, counter, 0, buf, &len, &st);
    if (rc != ZOK)
        return rc;
    buf[len > 0 ? len : 0] = '\0';
    *value = strtol(buf, NULL, 10);
    *version = st.version;
    return ZOK;
}

/*
 * counter := value + 1, at the version read, and only while m is held.
 * ZKL_ECONNLOSS is the one outcome that leaves it open whether the write
 * applied; the transaction is all or nothing, so its own write tells: the
 * counter at version + 1 with our value means it did.
 */
static zkl_status increment(zkl_mutex *m, long value, int version)
{
    char data[32];
    zkl_write w;
    zkl_status st;
    long now;
    int at;
    snprintf(data, sizeof data, "%ld", value + 1);
    memset(&w, 0, sizeof w);
    w.type = ZKL_WRITE_SET;
    w.path = counter;
    w.data = data;
    w.len = (int)strlen(data);
    w.version = version;
    st = zkl_mutex_guarded_write(m, &w, 1, NULL);
    if (st == ZKL_ECONNLOSS && read_counter(&now, &at) == ZOK && at == version + 1 &&
        now == value + 1)
        return ZKL_OK; /* it applied before the connection went */
    return st;
}

static void *worker(void *arg)
{
    zkl_client *c = NULL;
    zkl_mutex *m = NULL;
    const char *what = "open";
    (void)arg;
    if (zkl_client_open(hosts, NULL, &c) != ZKL_OK || zkl_mutex_create(c, path, &m) != ZKL_OK)
        goto fail;
    for (int i = 0; i < ROUNDS; i++) {
        long value;
        int version;
        zkl_status st;
        what = "acquire";
        if (zkl_mutex_acquire(m, ZKL_WAIT_FOREVER) != ZKL_OK)
            goto fail;
        if (read_counter(&value, &version) != ZOK) {
            zkl_mutex_release(m);
            what = "read";
            goto fail;
        }
        st = increment(m, value, version);
        if (st == ZKL_OK)
            atomic_fetch_add(&done, 1);
        else
            fprintf(stderr, "guarded_counter: increment: %s\n", zkl_errmsg());
        what = "release";
        if (zkl_mutex_release(m) != ZKL_OK)
            goto fail;
    }
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    return NULL;
fail:
    fprintf(stderr, "guarded_counter: %s: %s\n", what, zkl_errmsg());
    if (m)
        zkl_mutex_destroy(m);
    if (c)
        zkl_client_close(c);
    return (void *)1;
}

/* The application's handle, connected within 10 s. */
static zhandle_t *connect_raw(void)
{
    struct timespec tick = {0, 10 * 1000000L};
    zhandle_t *h = zookeeper_init(hosts, NULL, 10000, NULL, NULL, 0);
    for (int i = 0; h && zoo_state(h) != ZOO_CONNECTED_STATE && i < 1000; i++)
        nanosleep(&tick, NULL);
    return h && zoo_state(h) == ZOO_CONNECTED_STATE ? h : NULL;
}

int main(int argc, char **argv)
{
    zkl_client *c;
    zkl_mutex *m;
    pthread_t t[WORKERS];
    char *node = NULL;
    long start, stale, end;
    int version, failed = 0;
    zkl_status st;
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s HOSTS [PATH]\n", argv[0]);
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    hosts = argv[1];
    if (argc == 3)
        path = argv[2];
    snprintf(counter, sizeof counter, "%s-counter", path);
    if (!(zh = connect_raw())) {
        fprintf(stderr, "guarded_counter: no server at %s\n", hosts);
        return 1;
    }
    /* the counter, under the lock path's parent */
    {
        char parent[512];
        snprintf(parent, sizeof parent, "%s", counter);
        for (char *s = strchr(parent + 1, '/'); s; s = strchr(s + 1, '/')) {
            *s = '\0';
            zoo_create(zh, parent, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            *s = '/';
        }
        zoo_create(zh, counter, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    }

    /* The holder that will stall: it takes the lock and reads the counter. */
    if (zkl_client_open(hosts, NULL, &c) != ZKL_OK || zkl_mutex_create(c, path, &m) != ZKL_OK ||
        zkl_mutex_acquire(m, ZKL_WAIT_FOREVER) != ZKL_OK || zkl_mutex_node(m, &node) != ZKL_OK ||
        read_counter(&stale, &version) != ZOK) {
        fprintf(stderr, "guarded_counter: %s\n", zkl_errmsg());
        return 1;
    }
    start = stale;
    /* Now it stalls past its session timeout: the server ends the session
     * and deletes its node, and the lock passes on. Deleting the node here
     * stands in for that. */
    if (zoo_delete(zh, node, -1) != ZOK) {
        fprintf(stderr, "guarded_counter: could not delete %s\n", node);
        return 1;
    }

    for (int i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < WORKERS; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }

    /* The stalled holder wakes up and writes what it read, plus one. */
    st = increment(m, stale, version);
    if (st != ZKL_ELOST) {
        fprintf(stderr, "guarded_counter: the stalled holder's write gave %s, not ZKL_ELOST\n",
                zkl_strerror(st));
        failed = 1;
    }
    zkl_mutex_release(m); /* ZKL_ELOST too: its hold is gone */
    if (read_counter(&end, &version) != ZOK || end - start != atomic_load(&done) ||
        atomic_load(&done) != WORKERS * ROUNDS) {
        fprintf(stderr, "guarded_counter: counter went from %ld to %ld, %d increments done\n",
                start, end, atomic_load(&done));
        failed = 1;
    } else {
        printf("guarded_counter: %d increments, counter %ld to %ld; the stalled holder's write "
               "refused (ZKL_ELOST)\n",
               atomic_load(&done), start, end);
    }
    free(node);
    zkl_mutex_destroy(m);
    zkl_client_close(c);
    zookeeper_close(zh);
    return failed;
}
