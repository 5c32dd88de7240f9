/*
 * transport_probe.c - how fast a contended hand-off can go across processes
 * with each way of driving the ZooKeeper C client, the lock algorithm held
 * fixed (benchmarks/README.md, "Which transport";
 * scripts/bench-procs runs it beside zklock and the peers).
 *
 * Not zklock: one bare lock loop per process (one session), whose only
 * variable is how the client's threads meet the caller's:
 *
 *   mt      libzookeeper_mt, as zklock drives it: the I/O thread reads, the
 *           completion thread runs the watcher, which wakes the caller; the
 *           caller's release wakes the I/O thread to send (4 wake-ups).
 *   st      libzookeeper_st from a poller thread of our own under one mutex
 *           (zookeeper_interest/zookeeper_process): the poller reads and runs
 *           the watcher, which wakes the caller; the caller sends its release
 *           itself, non-blocking, under the mutex (2 wake-ups).
 *
 * The loop (the same for both): create an EPHEMERAL_SEQUENTIAL node, list
 * the parent, and either hold (lowest) or watch the node just ahead and
 * hold when it goes (trusting that it held: every process here is this
 * loop, so a node goes only by its holder's release). A release sends the
 * delete and the next create back to back without waiting, as zklock's
 * multi does. Built against one library or the other (-DPROBE_ST).
 *
 * Usage: transport_probe --zk HOST:PORT --path P --seconds S --start-at MS
 *                        [--samples FILE]
 * (and lockbench's --workload, --clients, --warmup-pairs and
 * --server-warmup, taken and ignored, so that scripts/bench-procs runs it as
 * a library: "probe-mt", "probe-st"). Prints one JSON line with the holds
 * within the window that starts at the wall-clock time MS (epoch ms); exit
 * 3 if the session opened after MS. --samples gets each hold's wait, from
 * its create sent to its hold, in microseconds.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "standalone.h"

static zhandle_t *zh;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* the caller's wait */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int reply_rc, replied, fired, connected;
static char created[512];
static struct String_vector kids;

#ifdef PROBE_ST
#define PROBE_LIB "probe-st"
/* the handle's mutex: every call and zookeeper_process; a leaf (completions
 * take only mu under it, and the caller never holds mu across a call) */
static pthread_mutex_t zmu = PTHREAD_MUTEX_INITIALIZER;
static int wfd, polled_fd = -1, polled_interest;
#define ZK_ENTER() pthread_mutex_lock(&zmu)
static void ZK_LEAVE(void)
{
    int fd, interest;
    struct timeval tv;
    uint64_t one = 1;
    /* something left to send, or a new socket: the poller must look again */
    if (zookeeper_interest(zh, &fd, &interest, &tv) == ZOK &&
        (fd != polled_fd || interest != polled_interest) && write(wfd, &one, 8) != 8)
        abort();
    pthread_mutex_unlock(&zmu);
}
#else
#define PROBE_LIB "probe-mt"
#define ZK_ENTER() ((void)0)
#define ZK_LEAVE() ((void)0)
#endif

static void signal_locked(int *flag)
{
    *flag = 1;
    pthread_cond_broadcast(&cv);
}

static void session_watcher(zhandle_t *h, int type, int state, const char *p, void *ctx)
{
    (void)h, (void)p, (void)ctx;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
        pthread_mutex_lock(&mu);
        signal_locked(&connected);
        pthread_mutex_unlock(&mu);
    }
}

static void node_watcher(zhandle_t *h, int type, int state, const char *p, void *ctx)
{
    (void)h, (void)state, (void)p, (void)ctx;
    if (type == ZOO_DELETED_EVENT) {
        pthread_mutex_lock(&mu);
        signal_locked(&fired);
        pthread_mutex_unlock(&mu);
    }
}

static void on_create(int rc, const char *value, const void *data)
{
    (void)data;
    pthread_mutex_lock(&mu);
    reply_rc = rc;
    if (rc == ZOK)
        snprintf(created, sizeof created, "%s", value);
    signal_locked(&replied);
    pthread_mutex_unlock(&mu);
}

static void on_kids(int rc, const struct String_vector *sv, const void *data)
{
    (void)data;
    pthread_mutex_lock(&mu);
    reply_rc = rc;
    deallocate_String_vector(&kids);
    memset(&kids, 0, sizeof kids);
    if (rc == ZOK && sv) {
        kids.count = sv->count;
        kids.data = calloc((size_t)sv->count + 1, sizeof *kids.data);
        for (int i = 0; i < sv->count; i++)
            kids.data[i] = strdup(sv->data[i]);
    }
    signal_locked(&replied);
    pthread_mutex_unlock(&mu);
}

static void on_stat(int rc, const struct Stat *st, const void *data)
{
    (void)st, (void)data;
    pthread_mutex_lock(&mu);
    reply_rc = rc;
    signal_locked(&replied);
    pthread_mutex_unlock(&mu);
}

static void on_void(int rc, const void *data)
{
    (void)rc, (void)data;
}

static int64_t end_ms = INT64_MAX; /* the window's end: no wait outlasts it */

static int wait_flag(int *flag)
{
    int rc;
    struct timespec until = {.tv_sec = end_ms / 1000, .tv_nsec = end_ms % 1000 * 1000000};
    pthread_mutex_lock(&mu);
    while (!*flag)
        if (pthread_cond_timedwait(&cv, &mu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&mu);
            return -999;
        }
    *flag = 0;
    rc = reply_rc;
    pthread_mutex_unlock(&mu);
    return rc;
}

static long seq_of(const char *name)
{
    const char *d = strrchr(name, '-');
    return d ? atol(d + 1) : -1;
}

#ifdef PROBE_ST
static void *poller(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[2];
        struct timeval tv;
        int fd, interest, n, events = 0;
        pthread_mutex_lock(&zmu);
        if (zookeeper_interest(zh, &fd, &interest, &tv) != ZOK)
            fd = -1, interest = 0, tv.tv_sec = 0, tv.tv_usec = 100000;
        polled_fd = fd;
        polled_interest = interest;
        pthread_mutex_unlock(&zmu);
        p[0].fd = wfd;
        p[0].events = POLLIN;
        p[1].fd = fd;
        p[1].events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
                              ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0));
        p[0].revents = p[1].revents = 0;
        n = poll(p, fd >= 0 ? 2 : 1, (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000));
        if (n < 0 && errno != EINTR)
            abort();
        if (p[0].revents) {
            uint64_t v;
            if (read(wfd, &v, 8) != 8)
                abort();
        }
        if (fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
            events |= ZOOKEEPER_READ;
        if (fd >= 0 && (p[1].revents & POLLOUT))
            events |= ZOOKEEPER_WRITE;
        pthread_mutex_lock(&zmu);
        zookeeper_process(zh, events);
        pthread_mutex_unlock(&zmu);
    }
    return NULL;
}
#endif

int main(int argc, char **argv)
{
    const char *zk = NULL, *path = "/probe", *samples = NULL;
    static int64_t waits[1 << 20];
    size_t nwaits = 0;
    int64_t cpu_at_start = -1, cpu_used;
    window_opts o = {0};
    int seconds = 5, i, rc;
    int64_t start_at = 0, end;
    long pairs = 0;
    char node[600] = "", prefix[520];
    window_opts_parse(argc, argv, &o);
    zk = o.zk;
    path = o.path ? o.path : path;
    seconds = o.seconds ? o.seconds : seconds;
    start_at = o.start_at;
    samples = o.samples;
    if (!zk) {
        fprintf(stderr, "usage: transport_probe --zk HOST:PORT [--path P] [--seconds S] "
                        "[--start-at MS]\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
#ifdef PROBE_ST
    pthread_t pt;
    wfd = eventfd(0, EFD_CLOEXEC);
#endif
    zh = zookeeper_init(zk, session_watcher, 10000, NULL, NULL, 0);
    if (!zh)
        return 1;
    zoo_set_servers_resolution_delay(zh, -1);
#ifdef PROBE_ST
    pthread_create(&pt, NULL, poller, NULL);
#endif
    wait_flag(&connected);
    for (i = 1; path[i - 1]; i++) { /* the path and its parents: ZOK or ZNODEEXISTS */
        char part[512];
        if (path[i] != '/' && path[i] != '\0')
            continue;
        snprintf(part, sizeof part, "%.*s", i, path);
        ZK_ENTER();
        zoo_acreate(zh, part, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, on_create, NULL);
        ZK_LEAVE();
        wait_flag(&replied);
    }
    snprintf(prefix, sizeof prefix, "%s/lock-", path);
    if (start_at == 0)
        start_at = now_ms();
    else if (now_ms() > start_at)
        return 3; /* late: its window would be short */
    end = start_at + (int64_t)seconds * 1000;
    end_ms = end + 1000; /* then report: the others are done too */
    for (;;) {
        long mine, best = -1;
        const char *ahead = NULL;
        int64_t t, sent = now_us();
        ZK_ENTER();
        if (node[0]) /* the release, and the next create, back to back */
            zoo_adelete(zh, node, -1, on_void, NULL);
        zoo_acreate(zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, on_create,
                    NULL);
        ZK_LEAVE();
        if ((rc = wait_flag(&replied)) == -999)
            break;
        if (rc != ZOK)
            return fprintf(stderr, "create: %s\n", zerror(rc)), 1;
        snprintf(node, sizeof node, "%s", created);
        mine = seq_of(node);
    relist:
        ZK_ENTER();
        zoo_aget_children(zh, path, 0, on_kids, NULL);
        ZK_LEAVE();
        if ((rc = wait_flag(&replied)) == -999)
            break;
        if (rc != ZOK)
            return fprintf(stderr, "list: %s\n", zerror(rc)), 1;
        for (i = 0; i < kids.count; i++) {
            long s = seq_of(kids.data[i]);
            if (s < mine && s > best)
                best = s, ahead = kids.data[i];
        }
        if (ahead) {
            char p[600];
            snprintf(p, sizeof p, "%s/%s", path, ahead);
            ZK_ENTER();
            zoo_awexists(zh, p, node_watcher, NULL, on_stat, NULL);
            ZK_LEAVE();
            if ((rc = wait_flag(&replied)) == -999)
                break;
            if (rc == ZNONODE) {
                best = -1;
                ahead = NULL;
                goto relist;
            }
            if (wait_flag(&fired) == -999)
                break;
        }
        t = now_ms();
        if (t >= end)
            break;
        if (t >= start_at) {
            if (cpu_at_start < 0)
                cpu_at_start = cpu_us();
            pairs++;
            if (nwaits < sizeof waits / sizeof waits[0])
                waits[nwaits++] = now_us() - sent;
        }
    }
    cpu_used = cpu_at_start < 0 ? 0 : cpu_us() - cpu_at_start;
    if (samples) {
        FILE *f = fopen(samples, "w");
        for (i = 0; f && (size_t)i < nwaits; i++)
            fprintf(f, "%lld\n", (long long)waits[i]);
        if (f)
            fclose(f);
    }
    printf("{\"lib\":\"%s\",\"ops\":%ld,\"errors\":0,\"client_cpu_us_per_op\":%lld}\n", PROBE_LIB,
           pairs, (long long)(pairs ? cpu_used / pairs : 0));
    fflush(stdout);
    _exit(0); /* the session's end deletes the last node */
}
