/*
 * asyncbench.c - the async acquires of zklock/async.h measured: how much a
 * pending wait costs, how a long line drains, and the async contended
 * hand-off rate beside the blocking one in the same run (issue 20).
 *
 *   asyncbench [--zk HOST:PORT] [--workload NAME]... [--seconds N] [--rounds N]
 *              [--paths N] [--waiters N] [--sessions N] [--clients N]
 *
 * Workloads (JSON lines on stdout, as lockbench's):
 *   pending     --paths (10000) lock paths, each held by another session; one
 *               thread starts an async acquire on each: RSS per pending wait
 *               and the process's threads before and after;
 *   pending_raw the same waits made by raw libzookeeper_mt sessions (create,
 *               list, watch the node ahead): the ZooKeeper client's own share
 *               of async_pending's memory per wait;
 *   line        --waiters (1000) async waits on one path over --sessions (64)
 *               sessions, behind one holder: RSS per wait, then the rate at
 *               which the line drains when each grant releases at once;
 *   line_raw    the same line waited in by raw libzookeeper_mt sessions
 *               (create, list, watch the node ahead): the ZooKeeper client's
 *               own share of the line's RSS per wait. Both line workloads
 *               first put one wait per session through another path, so
 *               that a session's one-time costs are not counted per wait;
 *   contended   --clients (16) sessions on one path, each releasing and
 *               acquiring again at once: async (from the completion callback)
 *               and blocking (a thread each), --rounds (3) rounds of
 *               --seconds (5) each, alternating which goes first.
 * Without --zk a throwaway server is started.
 */
#include <getopt.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "benchutil.h"
#include "zklock/zklock.h"

/* The rows' lib: zklock-VERSION, or (asyncbench_tuned --off) zklock-off-PART+...-VERSION. */
static const char *lib = "zklock-" ZKLOCK_VERSION;
static char lib_buf[128];

#define SESSION_MS 30000
#define WAIT_LIMIT_MS 120000

static const char *zk_connect;
static int opt_paths = 10000, opt_waiters = 1000, opt_sessions = 64, opt_clients = 16;
static int opt_rounds = 3;
static double opt_seconds = 5;

static zkl_client *open_client(void)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    if (zkl_client_open(zk_connect, &o, &c) != ZKL_OK) {
        fprintf(stderr, "asyncbench: open %s: %s\n", zk_connect, zkl_errmsg());
        return NULL;
    }
    return c;
}

static int threads_now(void)
{
    char line[256];
    int n = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = atoi(line + 8);
    if (f)
        fclose(f);
    return n;
}

/*
 * Memory now: the heap in use (every arena) and the RSS, after giving back
 * what the allocator keeps free (a listing copied on a completion thread
 * and freed is not a pending wait's).
 */
static void memory_now(size_t *heap, long *rss_kb)
{
    struct mallinfo2 mi;
    malloc_trim(0);
    mi = mallinfo2();
    *heap = mi.uordblks + mi.hblkhd;
    *rss_kb = bu_rss_kb();
}

/* How often, and how many times at most, memory_settled reads (100 ms, 5 s), and the least
 * change it reads as one still going on (a session's own pings and timers, beside a few
 * hundred waits of the suite's short form). */
#define SETTLE_STEP_US 100000
#define SETTLE_READINGS 50
#define SETTLE_MIN_BYTES 4096

/* A reading of memory_settled: the first one, and the settled one. */
typedef struct settled {
    size_t heap, first_heap;
    long rss_kb;
    int ms; /* from the first reading to the settled one */
} settled;

/*
 * Memory once the heap has stopped changing: memory_now every
 * SETTLE_STEP_US until two readings in a row differ by less than a byte a
 * wait (n waits), or SETTLE_MIN_BYTES if more. A library's answers can still be on their way
 * through its threads after its last request has gone out: zklock's 10,000 pending waits read 2462
 * heap bytes a wait at once, 1871 from 400 ms on, then no change (2026-11-30). The settled reading
 * is what the waits hold; the first, what was in transit too (the JSON lines keep both).
 */
static settled memory_settled(int n)
{
    settled m = {0};
    size_t last, least = (size_t)n > SETTLE_MIN_BYTES ? (size_t)n : SETTLE_MIN_BYTES;
    int i;
    memory_now(&m.heap, &m.rss_kb);
    m.first_heap = m.heap;
    for (i = 1; i < SETTLE_READINGS; i++) {
        last = m.heap;
        usleep(SETTLE_STEP_US);
        memory_now(&m.heap, &m.rss_kb);
        if ((m.heap > last ? m.heap - last : last - m.heap) < least)
            break;
        m.ms = i * (SETTLE_STEP_US / 1000);
    }
    return m;
}

/* The heap bytes a wait between two readings (the first of after, or its settled one). */
static double heap_per_wait(const settled *before, const settled *after, bool first, int n)
{
    return ((double)(first ? after->first_heap : after->heap) - (double)before->heap) / n;
}

static uint64_t requests_of(zkl_client **cs, int n)
{
    uint64_t sum = 0;
    int i;
    for (i = 0; i < n; i++) {
        zkl_client_stats s;
        if (zkl_client_stats_get(cs[i], &s) == ZKL_OK)
            sum += s.requests;
    }
    return sum;
}

/* Wait until *count reaches want, or the limit: false then. */
static bool wait_count(atomic_int *count, int want)
{
    int64_t end = bu_now_ns() + (int64_t)WAIT_LIMIT_MS * 1000000;
    while (atomic_load(count) < want && bu_now_ns() < end)
        usleep(2000);
    return atomic_load(count) >= want;
}

/* Wait until the clients have sent at least want requests, and no more come for a moment. */
static void wait_requests(zkl_client **cs, int n, uint64_t want)
{
    int64_t end = bu_now_ns() + (int64_t)WAIT_LIMIT_MS * 1000000;
    uint64_t last = 0, now;
    while ((now = requests_of(cs, n)) < want && bu_now_ns() < end)
        usleep(10000);
    do { /* settled: nothing new for 200 ms */
        last = now;
        usleep(200000);
        now = requests_of(cs, n);
    } while (now != last && bu_now_ns() < end);
}

static atomic_int granted, ended, errors;

static void count_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    (void)ud;
    if (st == ZKL_OK)
        atomic_fetch_add(&granted, 1);
    else if (st != ZKL_ECANCELED && atomic_fetch_add(&errors, 1) == 0)
        fprintf(stderr, "asyncbench: %s\n", msg);
    atomic_fetch_add(&ended, 1);
}

static void release_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    count_cb(op, st, msg, ud);
    zkl_op_release(op);
}

static zkl_mutex **make_mutexes(zkl_client **cs, int ncs, const char *parent, int n, bool one)
{
    zkl_mutex **ms = calloc((size_t)n, sizeof *ms);
    char path[320];
    int i;
    for (i = 0; ms && i < n; i++) {
        if (one)
            snprintf(path, sizeof path, "%s/lock", parent);
        else
            snprintf(path, sizeof path, "%s/lock-%d", parent, i);
        if (zkl_mutex_create(cs[i % ncs], path, &ms[i]) != ZKL_OK) {
            fprintf(stderr, "asyncbench: %s\n", zkl_errmsg());
            exit(1);
        }
    }
    return ms;
}

static void free_mutexes(zkl_mutex **ms, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (zkl_mutex_destroy(ms[i]) != ZKL_OK)
            fprintf(stderr, "asyncbench: destroy: %s\n", zkl_errmsg());
    free(ms);
}

/* Released before it counts, so that the mutexes are free once all ended. */
static void warm_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    if (st != ZKL_OK) /* msg is op's */
        count_cb(op, st, msg, ud);
    zkl_op_release(op);
    if (st == ZKL_OK)
        count_cb(op, st, NULL, ud);
}

/*
 * Warm-up for the line workloads: one wait per session on a path of its
 * own, drained, so that what each session's threads touch once (stack
 * pages, a malloc arena) is not counted per wait of the measured line.
 */
static int warm_line(zkl_client **cs, int ncs, const char *parent)
{
    char path[320];
    zkl_mutex **wm;
    zkl_op **ops = calloc((size_t)ncs, sizeof *ops);
    int i, bad = 0;
    snprintf(path, sizeof path, "%s/warm", parent);
    wm = make_mutexes(cs, ncs, path, ncs, true);
    atomic_store(&granted, 0);
    atomic_store(&ended, 0);
    for (i = 0; i < ncs; i++)
        zkl_mutex_acquire_async(wm[i], WAIT_LIMIT_MS, warm_cb, NULL, &ops[i]);
    if (!wait_count(&ended, ncs) || atomic_load(&granted) != ncs) {
        fprintf(stderr, "asyncbench: warm-up: %d of %d granted\n", atomic_load(&granted), ncs);
        bad = 1;
    }
    free_mutexes(wm, ncs);
    free(ops);
    atomic_store(&granted, 0);
    atomic_store(&ended, 0);
    return bad;
}

static int bench_pending(void)
{
    char parent[256];
    zkl_client *holder = open_client(), *c = open_client();
    zkl_mutex **hm, **wm;
    zkl_op **hops, **wops;
    settled objects, pending;
    int i, n = opt_paths, threads_before, threads_after;
    uint64_t req0;
    if (!holder || !c)
        return 1;
    bu_fresh_path(parent, sizeof parent, "async-pending");
    atomic_store(&granted, 0);
    atomic_store(&ended, 0);
    /* the holder takes every path (async too: it is quick) */
    hm = make_mutexes(&holder, 1, parent, n, false);
    hops = calloc((size_t)n, sizeof *hops);
    for (i = 0; i < n; i++)
        zkl_mutex_acquire_async(hm[i], WAIT_LIMIT_MS, count_cb, NULL, &hops[i]);
    if (!wait_count(&granted, n)) {
        fprintf(stderr, "asyncbench: pending: the holder got %d of %d\n", atomic_load(&granted), n);
        return 1;
    }
    wm = make_mutexes(&c, 1, parent, n, false);
    wops = calloc((size_t)n, sizeof *wops);
    usleep(200000); /* the holder's last acquires are freed (as pending_raw's settle) */
    objects = memory_settled(n);
    threads_before = threads_now();
    req0 = requests_of(&c, 1);
    for (i = 0; i < n; i++)
        zkl_mutex_acquire_async(wm[i], ZKL_WAIT_FOREVER, count_cb, NULL, &wops[i]);
    /* each wait: its create and listing, then the watch on the holder's node
     * (and, next in line, the one on its own: 4 in all) */
    wait_requests(&c, 1, req0 + 3 * (uint64_t)n);
    usleep(200000); /* the last completions return (as pending_raw's) */
    pending = memory_settled(n);
    threads_after = threads_now();
    printf("{\"lib\":\"%s\",\"workload\":\"async_pending\",\"waits\":%d,"
           "\"sessions\":1,\"rss_kb_before\":%ld,\"rss_kb_pending\":%ld,\"bytes_per_wait\":%.0f,"
           "\"heap_bytes_per_wait\":%.0f,\"heap_bytes_per_wait_unsettled\":%.0f,\"settle_ms\":%d,"
           "\"threads_before\":%d,\"threads_after\":%d,\"requests_per_wait\":%.2f,\"errors\":%d}\n",
           lib, n, objects.rss_kb, pending.rss_kb,
           (double)(pending.rss_kb - objects.rss_kb) * 1024 / n,
           heap_per_wait(&objects, &pending, false, n), heap_per_wait(&objects, &pending, true, n),
           pending.ms, threads_before, threads_after, (double)(requests_of(&c, 1) - req0) / n,
           atomic_load(&errors));
    fflush(stdout);
    atomic_store(&ended, 0);
    for (i = 0; i < n; i++)
        zkl_op_cancel(wops[i]);
    wait_count(&ended, n);
    for (i = 0; i < n; i++) {
        zkl_op_release(wops[i]);
        zkl_op_release(hops[i]);
    }
    free_mutexes(wm, n);
    free_mutexes(hm, n);
    free(wops);
    free(hops);
    zkl_client_close(c);
    zkl_client_close(holder);
    bu_cleanup_path(zk_connect, parent);
    return atomic_load(&errors) > 0;
}

static int bench_line(void)
{
    char parent[256];
    zkl_client *holder = open_client(), **cs = calloc((size_t)opt_sessions, sizeof *cs);
    zkl_mutex *hm, **wm;
    zkl_op **wops;
    settled before, pending;
    int i, n = opt_waiters, threads_before, threads_after;
    int64_t t0;
    double secs;
    uint64_t req0, requests;
    if (!holder || !cs)
        return 1;
    for (i = 0; i < opt_sessions; i++)
        if (!(cs[i] = open_client()))
            return 1;
    bu_fresh_path(parent, sizeof parent, "async-line");
    if (warm_line(cs, opt_sessions, parent))
        return 1;
    {
        char path[320];
        snprintf(path, sizeof path, "%s/lock", parent);
        if (zkl_mutex_create(holder, path, &hm) != ZKL_OK ||
            zkl_mutex_acquire(hm, WAIT_LIMIT_MS) != ZKL_OK) {
            fprintf(stderr, "asyncbench: line: holder: %s\n", zkl_errmsg());
            return 1;
        }
    }
    wm = make_mutexes(cs, opt_sessions, parent, n, true);
    wops = calloc((size_t)n, sizeof *wops);
    before = memory_settled(n);
    threads_before = threads_now();
    req0 = requests_of(cs, opt_sessions);
    for (i = 0; i < n; i++)
        zkl_mutex_acquire_async(wm[i], ZKL_WAIT_FOREVER, release_cb, NULL, &wops[i]);
    /* each wait: its create and its watch at least (the session's waits share listings) */
    wait_requests(cs, opt_sessions, req0 + 2 * (uint64_t)n);
    pending = memory_settled(n);
    threads_after = threads_now();
    requests = requests_of(cs, opt_sessions) - req0;
    t0 = bu_now_ns();
    zkl_mutex_release(hm);
    wait_count(&ended, n);
    secs = (double)(bu_now_ns() - t0) / 1e9;
    printf("{\"lib\":\"%s\",\"workload\":\"async_line\",\"waits\":%d,"
           "\"sessions\":%d,\"rss_kb_before\":%ld,\"rss_kb_pending\":%ld,\"bytes_per_wait\":%.0f,"
           "\"heap_bytes_per_wait\":%.0f,\"heap_bytes_per_wait_unsettled\":%.0f,\"settle_ms\":%d,"
           "\"threads_before\":%d,\"threads_after\":%d,"
           "\"requests_per_wait\":%.2f,\"drain_seconds\":%.3f,\"handoffs_per_s\":%.1f,"
           "\"errors\":%d}\n",
           lib, n, opt_sessions, before.rss_kb, pending.rss_kb,
           (double)(pending.rss_kb - before.rss_kb) * 1024 / n,
           heap_per_wait(&before, &pending, false, n), heap_per_wait(&before, &pending, true, n),
           pending.ms, threads_before, threads_after, (double)requests / n, secs,
           atomic_load(&granted) / secs, atomic_load(&errors));
    fflush(stdout);
    free_mutexes(wm, n);
    zkl_mutex_destroy(hm);
    free(wops);
    for (i = 0; i < opt_sessions; i++)
        zkl_client_close(cs[i]);
    free(cs);
    zkl_client_close(holder);
    bu_cleanup_path(zk_connect, parent);
    return atomic_load(&errors) > 0 || atomic_load(&granted) != n;
}

/* ---- line_raw: the same line, waited in by the ZooKeeper client alone ---- */

/*
 * The floor for async_line's memory: the waits a lock recipe makes (create
 * an ephemeral-sequential node, list, watch the node ahead), made on raw
 * libzookeeper_mt sessions from completions, with nothing of zklock's. What
 * async_line's RSS per wait has beyond this is zklock's own.
 */
typedef struct raw_wait {
    zhandle_t *zh;
    const char *dir;
    char node[64]; /* our name under dir */
} raw_wait;

static atomic_int raw_ready;

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

static void raw_watched(int rc, const struct Stat *st, const void *data)
{
    (void)st, (void)data;
    if (rc != ZOK && rc != ZNONODE && atomic_fetch_add(&errors, 1) == 0)
        fprintf(stderr, "asyncbench: line_raw: exists: %s\n", zerror(rc));
    atomic_fetch_add(&raw_ready, 1);
}

/* The node just ahead of ours by sequence: its name, or NULL if we are first. */
static const char *raw_ahead(const raw_wait *w, const struct String_vector *sv)
{
    const char *mine = w->node + strlen(w->node) - 10, *best = NULL;
    int i;
    for (i = 0; i < sv->count; i++) {
        const char *seq = sv->data[i] + strlen(sv->data[i]) - 10;
        if (strcmp(seq, mine) < 0 && (!best || strcmp(seq, best + strlen(best) - 10) > 0))
            best = sv->data[i];
    }
    return best;
}

static void raw_listed(int rc, const struct String_vector *sv, const void *data)
{
    raw_wait *w = (raw_wait *)data;
    const char *ahead = rc == ZOK ? raw_ahead(w, sv) : NULL;
    char path[320];
    if (ahead) {
        snprintf(path, sizeof path, "%s/%s", w->dir, ahead);
        rc = zoo_awexists(w->zh, path, raw_watcher, NULL, raw_watched, w);
    }
    if (rc != ZOK || !ahead)
        raw_watched(rc == ZOK ? ZNONODE : rc, NULL, w);
}

static void raw_created(int rc, const char *value, const void *data)
{
    raw_wait *w = (raw_wait *)data;
    if (rc == ZOK) {
        snprintf(w->node, sizeof w->node, "%s", value + strlen(w->dir) + 1);
        rc = zoo_aget_children(w->zh, w->dir, 0, raw_listed, w);
    }
    if (rc != ZOK)
        raw_watched(rc, NULL, w);
}

/*
 * n raw waits on dir over the sessions rs: each creates its node, lists,
 * and watches the node ahead. The first node (the holder's) is made here.
 * ws must hold n. False if they did not all get that far.
 */
static bool raw_line(bu_raw *rs, raw_wait *ws, int n, const char *dir)
{
    char node[340];
    int i;
    snprintf(node, sizeof node, "%s/lock-", dir);
    atomic_store(&raw_ready, 0);
    if (bu_mkdirs(rs[0].zh, dir) != ZOK || zoo_create(rs[0].zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE,
                                                      ZOO_EPHEMERAL_SEQUENTIAL, NULL, 0) != ZOK) {
        fprintf(stderr, "asyncbench: line_raw: cannot make %s\n", dir);
        return false;
    }
    for (i = 0; i < n; i++) {
        ws[i].zh = rs[i % opt_sessions].zh;
        ws[i].dir = dir;
        int rc = zoo_acreate(ws[i].zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                             raw_created, &ws[i]);
        if (rc != ZOK)
            raw_watched(ZSYSTEMERROR, NULL, &ws[i]);
    }
    if (!wait_count(&raw_ready, n))
        return false;
    usleep(200000); /* the last completions return */
    return true;
}

static int bench_line_raw(void)
{
    char parent[256], dir[320], warm[320];
    bu_raw *rs = calloc((size_t)opt_sessions, sizeof *rs);
    raw_wait *ws = calloc((size_t)(opt_waiters + opt_sessions), sizeof *ws);
    settled before, pending;
    int i, n = opt_waiters, threads_before, threads_after, bad = 0;
    if (!rs || !ws)
        return 1;
    for (i = 0; i < opt_sessions; i++)
        if (bu_raw_open(&rs[i], zk_connect, SESSION_MS) != 0)
            return 1;
    bu_fresh_path(parent, sizeof parent, "async-line-raw");
    snprintf(dir, sizeof dir, "%s/lock", parent);
    snprintf(warm, sizeof warm, "%s/warm", parent);
    /* warm-up, as the zklock line's: one wait per session (left waiting:
     * these raw waits have no release) */
    if (!raw_line(rs, ws + n, opt_sessions, warm))
        return 1;
    before = memory_settled(n);
    threads_before = threads_now();
    bad = !raw_line(rs, ws, n, dir);
    pending = memory_settled(n);
    threads_after = threads_now();
    printf("{\"lib\":\"libzookeeper_mt\",\"workload\":\"async_line_raw\",\"waits\":%d,"
           "\"sessions\":%d,\"rss_kb_before\":%ld,\"rss_kb_pending\":%ld,\"bytes_per_wait\":%.0f,"
           "\"heap_bytes_per_wait\":%.0f,\"heap_bytes_per_wait_unsettled\":%.0f,\"settle_ms\":%d,"
           "\"threads_before\":%d,\"threads_after\":%d,\"requests_per_wait\":3.00,\"errors\":%d}\n",
           n, opt_sessions, before.rss_kb, pending.rss_kb,
           (double)(pending.rss_kb - before.rss_kb) * 1024 / n,
           heap_per_wait(&before, &pending, false, n), heap_per_wait(&before, &pending, true, n),
           pending.ms, threads_before, threads_after, atomic_load(&errors));
    fflush(stdout);
    for (i = 0; i < opt_sessions; i++)
        bu_raw_close(&rs[i]);
    free(rs);
    free(ws);
    bu_cleanup_path(zk_connect, parent);
    return bad || atomic_load(&errors) > 0;
}

/* ---- pending_raw: the pending waits, made by the ZooKeeper client alone ---- */

static atomic_int raw_made;

static void raw_made_cb(int rc, const char *value, const void *data)
{
    (void)value, (void)data;
    if (rc != ZOK && rc != ZNODEEXISTS && atomic_fetch_add(&errors, 1) == 0)
        fprintf(stderr, "asyncbench: pending_raw: create: %s\n", zerror(rc));
    atomic_fetch_add(&raw_made, 1);
}

/* Each of dirs[0..n) made (persistent), or its node (ephemeral-sequential), on session zh. */
static bool raw_make_all(zhandle_t *zh, char **dirs, int n, bool node)
{
    char path[340];
    int i;
    atomic_store(&raw_made, 0);
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s%s", dirs[i], node ? "/lock-" : "");
        if (zoo_acreate(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE,
                        node ? ZOO_EPHEMERAL_SEQUENTIAL : ZOO_PERSISTENT, raw_made_cb, NULL) != ZOK)
            raw_made_cb(ZSYSTEMERROR, NULL, NULL);
    }
    return wait_count(&raw_made, n) && atomic_load(&errors) == 0;
}

/*
 * The floor for async_pending's memory: --paths lock paths, each held by a
 * node of another raw session, and one raw session that waits on each as a
 * lock recipe does (create, list, watch the node ahead: raw_line's steps),
 * all from completions. What async_pending's heap and RSS per wait have
 * beyond this is zklock's own (issue 59: the goal is under 2 KiB).
 */
static int bench_pending_raw(void)
{
    char parent[256];
    bu_raw rs[2];
    int i, n = opt_paths, threads_before, threads_after, bad = 0;
    char **dirs = calloc((size_t)n, sizeof *dirs);
    raw_wait *ws = calloc((size_t)n, sizeof *ws);
    settled before, pending;
    if (!dirs || !ws || bu_raw_open(&rs[0], zk_connect, SESSION_MS) != 0 ||
        bu_raw_open(&rs[1], zk_connect, SESSION_MS) != 0)
        return 1;
    bu_fresh_path(parent, sizeof parent, "async-pending-raw");
    if (bu_mkdirs(rs[0].zh, parent) != ZOK)
        return 1;
    for (i = 0; i < n; i++) {
        char d[300];
        snprintf(d, sizeof d, "%s/%d", parent, i);
        if (!(dirs[i] = strdup(d)))
            return 1;
    }
    /* the holder's node on each path */
    if (!raw_make_all(rs[0].zh, dirs, n, false) || !raw_make_all(rs[0].zh, dirs, n, true)) {
        fprintf(stderr, "asyncbench: pending_raw: the holder made %d of %d\n",
                atomic_load(&raw_made), n);
        return 1;
    }
    usleep(200000); /* the last completions return */
    before = memory_settled(n);
    threads_before = threads_now();
    atomic_store(&raw_ready, 0);
    for (i = 0; i < n; i++) {
        char node[340];
        ws[i].zh = rs[1].zh;
        ws[i].dir = dirs[i];
        snprintf(node, sizeof node, "%s/lock-", dirs[i]);
        if (zoo_acreate(ws[i].zh, node, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                        raw_created, &ws[i]) != ZOK)
            raw_watched(ZSYSTEMERROR, NULL, &ws[i]);
    }
    bad = !wait_count(&raw_ready, n);
    usleep(200000); /* the last completions return */
    pending = memory_settled(n);
    threads_after = threads_now();
    printf("{\"lib\":\"libzookeeper_mt\",\"workload\":\"async_pending_raw\",\"waits\":%d,"
           "\"sessions\":1,\"rss_kb_before\":%ld,\"rss_kb_pending\":%ld,\"bytes_per_wait\":%.0f,"
           "\"heap_bytes_per_wait\":%.0f,\"heap_bytes_per_wait_unsettled\":%.0f,\"settle_ms\":%d,"
           "\"threads_before\":%d,\"threads_after\":%d,\"requests_per_wait\":3.00,\"errors\":%d}\n",
           n, before.rss_kb, pending.rss_kb, (double)(pending.rss_kb - before.rss_kb) * 1024 / n,
           heap_per_wait(&before, &pending, false, n), heap_per_wait(&before, &pending, true, n),
           pending.ms, threads_before, threads_after, atomic_load(&errors));
    fflush(stdout);
    bu_raw_close(&rs[1]);
    bu_raw_close(&rs[0]);
    for (i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
    free(ws);
    bu_cleanup_path(zk_connect, parent);
    return bad || atomic_load(&errors) > 0;
}

/* ---- contended: async beside blocking ---- */

static atomic_int inside, violations, pairs;
static atomic_bool stop;

static void again_cb(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    zkl_mutex *m = ud;
    zkl_op *next;
    if (st != ZKL_OK) {
        if (atomic_fetch_add(&errors, 1) == 0)
            fprintf(stderr, "asyncbench: contended: %s\n", msg);
        zkl_op_release(op);
        atomic_fetch_add(&ended, 1);
        return;
    }
    if (atomic_fetch_add(&inside, 1) != 0)
        atomic_fetch_add(&violations, 1);
    atomic_fetch_sub(&inside, 1);
    atomic_fetch_add(&pairs, 1);
    zkl_op_release(op);
    if (atomic_load(&stop) ||
        zkl_mutex_acquire_async(m, WAIT_LIMIT_MS, again_cb, m, &next) != ZKL_OK)
        atomic_fetch_add(&ended, 1);
}

static void *blocking_main(void *arg)
{
    zkl_mutex *m = arg;
    while (!atomic_load(&stop)) {
        if (zkl_mutex_acquire(m, WAIT_LIMIT_MS) != ZKL_OK) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        if (atomic_fetch_add(&inside, 1) != 0)
            atomic_fetch_add(&violations, 1);
        atomic_fetch_sub(&inside, 1);
        atomic_fetch_add(&pairs, 1);
        zkl_mutex_release(m);
    }
    return NULL;
}

static int contended_once(bool async, int round)
{
    char parent[256];
    int n = opt_clients, i, got;
    zkl_client **cs = calloc((size_t)n, sizeof *cs);
    zkl_mutex **ms;
    pthread_t *ts = calloc((size_t)n, sizeof *ts);
    zkl_op *op;
    int64_t t0;
    double secs;
    for (i = 0; i < n; i++)
        if (!(cs[i] = open_client()))
            return 1;
    bu_fresh_path(parent, sizeof parent, async ? "async-contended" : "blocking-contended");
    ms = make_mutexes(cs, n, parent, n, true);
    atomic_store(&stop, false);
    atomic_store(&ended, 0);
    atomic_store(&violations, 0);
    for (i = 0; i < n; i++) {
        if (async)
            zkl_mutex_acquire_async(ms[i], WAIT_LIMIT_MS, again_cb, ms[i], &op);
        else
            pthread_create(&ts[i], NULL, blocking_main, ms[i]);
    }
    usleep(500000); /* into the steady state */
    atomic_store(&pairs, 0);
    t0 = bu_now_ns();
    usleep((useconds_t)(opt_seconds * 1e6));
    got = atomic_load(&pairs);
    secs = (double)(bu_now_ns() - t0) / 1e9;
    atomic_store(&stop, true);
    if (async)
        wait_count(&ended, n);
    else
        for (i = 0; i < n; i++)
            pthread_join(ts[i], NULL);
    printf("{\"lib\":\"%s\",\"workload\":\"%s\",\"round\":%d,"
           "\"clients\":%d,\"seconds\":%.3f,\"ops\":%d,\"ops_per_s\":%.1f,\"violations\":%d,"
           "\"errors\":%d}\n",
           lib, async ? "async_contended" : "blocking_contended", round, n, secs, got, got / secs,
           atomic_load(&violations), atomic_load(&errors));
    fflush(stdout);
    zkl_client_drain(cs[0], 5000);
    free_mutexes(ms, n);
    for (i = 0; i < n; i++)
        zkl_client_close(cs[i]);
    free(cs);
    free(ts);
    bu_cleanup_path(zk_connect, parent);
    return atomic_load(&violations) > 0;
}

static int bench_contended(void)
{
    int r, bad = 0;
    for (r = 0; r < opt_rounds; r++) { /* alternating which goes first */
        bad += contended_once(r % 2 == 0, r);
        bad += contended_once(r % 2 != 0, r);
    }
    return bad;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"zk", required_argument, NULL, 'z'},
                                         {"workload", required_argument, NULL, 'w'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"rounds", required_argument, NULL, 'r'},
                                         {"paths", required_argument, NULL, 'p'},
                                         {"waiters", required_argument, NULL, 'W'},
                                         {"sessions", required_argument, NULL, 'S'},
                                         {"clients", required_argument, NULL, 'c'},
                                         {"off", required_argument, NULL, 'O'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool pending = false, pending_raw = false, line = false, line_raw = false, contended = false,
         any = false;
    char own[1024];
    int opt, bad = 0;
    bu_signals_init("asyncbench");
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'z': zk_connect = optarg; break;
        case 'w':
            any = true;
            if (strcmp(optarg, "pending") == 0)
                pending = true;
            else if (strcmp(optarg, "pending_raw") == 0)
                pending_raw = true;
            else if (strcmp(optarg, "line") == 0)
                line = true;
            else if (strcmp(optarg, "line_raw") == 0)
                line_raw = true;
            else if (strcmp(optarg, "contended") == 0)
                contended = true;
            else {
                fprintf(stderr,
                        "asyncbench: unknown workload '%s' (pending, pending_raw, line, "
                        "line_raw, contended)\n",
                        optarg);
                return 2;
            }
            break;
        case 's': opt_seconds = bench_parse_num("asyncbench", "--seconds", optarg, 0.001); break;
        case 'r': opt_rounds = (int)bench_parse_num("asyncbench", "--rounds", optarg, 1); break;
        case 'p': opt_paths = (int)bench_parse_num("asyncbench", "--paths", optarg, 1); break;
        case 'W': opt_waiters = (int)bench_parse_num("asyncbench", "--waiters", optarg, 1); break;
        case 'S': opt_sessions = (int)bench_parse_num("asyncbench", "--sessions", optarg, 1); break;
        case 'c': opt_clients = (int)bench_parse_num("asyncbench", "--clients", optarg, 1); break;
        case 'O':
            if (bu_tuned_off("asyncbench", optarg, lib_buf, sizeof lib_buf) != 0)
                return 2;
            lib = lib_buf;
            break;
        case 'h':
            puts("usage: asyncbench [--zk HOST:PORT] [--workload "
                 "pending|pending_raw|line|line_raw|contended]... "
                 "[--seconds N] [--rounds N] [--paths N] [--waiters N] [--sessions N] "
                 "[--clients N] [--off PART,...: asyncbench_tuned only, benchutil.h]");
            return 0;
        default: return 2;
        }
    }
    if (!any)
        pending = pending_raw = line = line_raw = contended = true;
    bu_logging(false);
    if (!zk_connect) {
        if (bu_server_start(own, sizeof own) != 0)
            return 1;
        zk_connect = own;
    }
    if (pending) /* first, on a heap no other workload has grown */
        bad += bench_pending();
    if (pending_raw)
        bad += bench_pending_raw();
    if (line)
        bad += bench_line();
    if (line_raw)
        bad += bench_line_raw();
    if (contended)
        bad += bench_contended();
    bu_server_stop();
    return bad ? 1 : 0;
}
