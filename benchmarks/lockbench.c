/*
 * lockbench.c - zklock's lockbench: the workloads of shared/docs/lockbench.md
 * (uncontended, contended, independent, rwlock, semaphore, floor; threads
 * when asked for), measured
 * the way the peer harnesses (Curator, kazoo, go-zookeeper) measure them, and
 * printed as the same JSON lines, so one server's results for every library
 * can be put side by side. Plus a `memory` workload of our own.
 *
 *   lockbench [--zk HOST:PORT] [--workload NAME]... [--seconds N] [--clients N]
 *             [--pairs N] [--server-warmup S] [--lookahead[=on|off|auto]] [--verbose]
 *             [--remote N] [--local-handoff STREAK,MS|off] [--warmup-pairs K]
 *
 * --lookahead sets ZKL_LOOKAHEAD_ON (or the mode named) for the mutex
 * workloads (the default is ZKL_LOOKAHEAD_AUTO); the rows then say lib
 * "zklock-lookahead-<version>" ("zklock-lookahead-off-<version>", ...).
 *
 * Built as lockbench_tuned (LOCKBENCH_TUNED, linked with the test build's
 * fault hook, base/fault.h), it also takes --off PART,...: each of the
 * in-process room's heuristics turned off alone (seen, made, join, bell:
 * core/engine/inproc.h; eventfd: blocking waits never leave the futex hash),
 * for benchmarks/README.md's "Each heuristic, on and off". The rows then say
 * lib "zklock-off-PART+...-<version>".
 *
 * Without --zk a throwaway server is started (scripts/zk-server) and always
 * stopped. stdout: one JSON object per row. stderr: one "lockbench: done ..."
 * line per row with figures that are not part of the row (resident memory,
 * client-side requests and watch events), and errors.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "benchutil.h"
#include "zklock/zklock.h"

#define LIB "zklock-" ZKLOCK_VERSION
#define WARMUP 100               /* pairs before the counted workloads, as the peers */
#define ACQUIRE_TIMEOUT_MS 10000 /* an acquire slower than this is a hang: an error */
#define SESSION_MS 15000         /* the peers' session timeout */
#define MEMORY_LOCKS 1000

static const char *zk_connect;
static double opt_seconds = 10;
static int opt_clients; /* 0: each workload's own count */
static int opt_pairs = 2000;
static int opt_lookahead = -1; /* -1: the default mode */
static int opt_warmup_pairs;   /* timed workloads: pairs before the window */
static int opt_remote = 2;     /* threads: other clients on the path */
static int opt_handoff_streak = 100, opt_handoff_ms = 50; /* threads: 0: no local hand-off */
static const char *lib = LIB;
static char lib_buf[128];
/* Across processes (lockbench.md): contended's shared parent (kept), the
 * wall-clock start of its window (ms since the epoch, -1: at once), and a file
 * for the window's acquire latencies (us, one a line). */
static const char *opt_path;
static int64_t opt_start_at = -1;
static const char *opt_samples;
/* contended on this many paths at once (the clients dealt round), 1: one;
 * given: the row says lines and the longest acquire */
static int opt_lines = 1;
static bool opt_lines_given;

enum kind { K_MUTEX, K_RWLOCK, K_SEMAPHORE, K_FLOOR };

/* The in-process holder slot, as the peers keep it: an exclusive hold must be
 * alone, shared holds at most max_shared. */
struct holders {
    atomic_int exclusive, shared, violations;
    int max_shared;
};

static void holders_enter(struct holders *h, bool excl)
{
    bool ok = excl ? atomic_fetch_add(&h->exclusive, 1) + 1 == 1 && atomic_load(&h->shared) == 0
                   : atomic_fetch_add(&h->shared, 1) + 1 <= h->max_shared &&
                         atomic_load(&h->exclusive) == 0;
    if (!ok)
        atomic_fetch_add(&h->violations, 1);
}

static void holders_exit(struct holders *h, bool excl)
{
    atomic_fetch_sub(excl ? &h->exclusive : &h->shared, 1);
}

struct bench;

struct worker {
    struct bench *b;
    int idx;
    zkl_client *c;
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semaphore *sem;
    zkl_lease *lease;
    bool write;  /* rwlock: the side taken by this pair */
    bool remote; /* threads: another client on the path, not one of the threads */
    bool shares; /* threads: uses worker 0's client and mutex */
    bu_raw raw;  /* floor */
    bool raw_open;
    char node[320]; /* floor: this round's node */
    uint64_t raw_requests;
    struct holders *h;
    bu_samples acq, rel;
    /* threads, counted pairs: when each hold began (a thread of the
     * process), or when each wait began and ended (another client) */
    bu_samples held_at, wait_from, wait_to;
    int errors;
    uint64_t rng;
    pthread_t t;
};

struct bench {
    const char *workload;
    int clients;
    bool threads; /* the threads workload: clients are threads sharing worker 0's client */
    int remote;   /* threads: workers after the clients that are other clients */
    enum kind kind;
    bool counted; /* a fixed number of pairs after a warm-up, not a time */
    char parent[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int warm_left;
    bool go;
    int64_t deadline;
};

static void fail(struct worker *w, const char *what, const char *why)
{
    if (w->errors++ == 0)
        fprintf(stderr, "lockbench: %s client %d: %s: %s\n", w->b->workload, w->idx, what, why);
}

static bool lock_acquire(struct worker *w, bool *excl)
{
    zkl_status st = ZKL_OK;
    switch (w->b->kind) {
    case K_MUTEX:
        st = zkl_mutex_acquire(w->m, ACQUIRE_TIMEOUT_MS);
        *excl = true;
        break;
    case K_RWLOCK:
        w->write = bu_rand01(&w->rng) < 0.1;
        st = w->write ? zkl_rwlock_write_acquire(w->rw, ACQUIRE_TIMEOUT_MS)
                      : zkl_rwlock_read_acquire(w->rw, ACQUIRE_TIMEOUT_MS);
        *excl = w->write;
        break;
    case K_SEMAPHORE:
        st = zkl_semaphore_acquire(w->sem, ACQUIRE_TIMEOUT_MS, &w->lease);
        *excl = false;
        break;
    case K_FLOOR: {
        /* The floor: what any correct lock must at least do, no recipe. */
        char prefix[300];
        struct String_vector kids = {0, NULL};
        int rc;
        snprintf(prefix, sizeof prefix, "%s/n-", w->b->parent);
        w->raw_requests += 2;
        rc = zoo_create(w->raw.zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                        ZOO_EPHEMERAL | ZOO_SEQUENCE, w->node, sizeof w->node);
        if (rc == ZOK) {
            rc = zoo_get_children(w->raw.zh, w->b->parent, 0, &kids);
            deallocate_String_vector(&kids);
        }
        *excl = true;
        if (rc != ZOK) {
            fail(w, "floor acquire", zerror(rc));
            return false;
        }
        return true;
    }
    }
    if (st != ZKL_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s (%s)", zkl_strerror(st), zkl_errmsg());
        fail(w, "acquire", why);
        return false;
    }
    return true;
}

static bool lock_release(struct worker *w)
{
    zkl_status st = ZKL_OK;
    switch (w->b->kind) {
    case K_MUTEX: st = zkl_mutex_release(w->m); break;
    case K_RWLOCK:
        st = w->write ? zkl_rwlock_write_release(w->rw) : zkl_rwlock_read_release(w->rw);
        break;
    case K_SEMAPHORE:
        st = zkl_lease_return(w->lease);
        w->lease = NULL;
        break;
    case K_FLOOR: {
        int rc;
        w->raw_requests++;
        rc = zoo_delete(w->raw.zh, w->node, -1);
        if (rc != ZOK) {
            fail(w, "floor release", zerror(rc));
            return false;
        }
        return true;
    }
    }
    if (st != ZKL_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s (%s)", zkl_strerror(st), zkl_errmsg());
        fail(w, "release", why);
        return false;
    }
    return true;
}

/* One acquire+release; latencies are taken around the library calls only. */
static void pair(struct worker *w, bool record)
{
    bool excl = false;
    int64_t t0, t1, t2, t3;
    t0 = bu_now_ns();
    if (!lock_acquire(w, &excl))
        return;
    t1 = bu_now_ns();
    holders_enter(w->h, excl);
    holders_exit(w->h, excl);
    t2 = bu_now_ns();
    if (!lock_release(w))
        return;
    t3 = bu_now_ns();
    if (record) {
        bu_samples_add(&w->acq, t1 - t0);
        bu_samples_add(&w->rel, t3 - t2);
        if (w->b->threads && w->remote) {
            bu_samples_add(&w->wait_from, t0);
            bu_samples_add(&w->wait_to, t1);
        } else if (w->b->threads) {
            bu_samples_add(&w->held_at, t1);
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct bench *b = w->b;
    int n;
    for (n = 0; b->counted && n < WARMUP; n++)
        pair(w, false);
    for (n = 0; !b->counted && n < opt_warmup_pairs; n++) /* every session through the line */
        pair(w, false);
    pthread_mutex_lock(&b->mu);
    b->warm_left--;
    pthread_cond_broadcast(&b->cv);
    while (!b->go)
        pthread_cond_wait(&b->cv, &b->mu);
    pthread_mutex_unlock(&b->mu);
    if (b->counted)
        for (n = 0; n < opt_pairs; n++)
            pair(w, true);
    else
        while (bu_now_ns() < b->deadline)
            pair(w, true);
    return NULL;
}

static zkl_client *open_client(void)
{
    zkl_client_options o;
    zkl_client *c = NULL;
    zkl_status st;
    zkl_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    st = zkl_client_open(zk_connect, &o, &c);
    if (st != ZKL_OK) {
        fprintf(stderr, "lockbench: cannot open a client on %s: %s (%s)\n", zk_connect,
                zkl_strerror(st), zkl_errmsg());
        return NULL;
    }
    return c;
}

/* Client-side counters summed over the workers' clients (floor: calls made). */
static void client_counters(struct worker *ws, int n, uint64_t *requests, uint64_t *watches)
{
    int i;
    *requests = *watches = 0;
    for (i = 0; i < n; i++) {
        zkl_client_stats s;
        if (ws[i].c && zkl_client_stats_get(ws[i].c, &s) == ZKL_OK) {
            *requests += s.requests;
            *watches += s.watch_events;
        }
        *requests += ws[i].raw_requests;
    }
}

static bool make_parent(const char *parent)
{
    bu_raw admin;
    int rc;
    if (bu_raw_open(&admin, zk_connect, SESSION_MS) != 0)
        return false;
    rc = bu_mkdirs(admin.zh, parent);
    bu_raw_close(&admin);
    if (rc != ZOK) {
        fprintf(stderr, "lockbench: create %s: %s\n", parent, zerror(rc));
        return false;
    }
    return true;
}

/* Set up client i's lock for the workload (first: worker 0, whose client
 * and mutex the threads workload's threads share). */
static bool setup_worker(struct bench *b, struct worker *w, const struct worker *first)
{
    char path[320];
    zkl_status st = ZKL_OK;
    if (b->threads && !w->remote && w->idx > 0) {
        w->c = first->c;
        w->m = first->m;
        w->shares = true;
        return true;
    }
    if (b->kind == K_FLOOR) {
        if (bu_raw_open(&w->raw, zk_connect, SESSION_MS) != 0)
            return false;
        w->raw_open = true;
        return true;
    }
    if (!(w->c = open_client()))
        return false;
    switch (b->kind) {
    case K_MUTEX:
        if (strcmp(b->workload, "independent") == 0)
            snprintf(path, sizeof path, "%s/lock-%d", b->parent, w->idx);
        else if (strcmp(b->workload, "contended") == 0 && opt_lines > 1)
            snprintf(path, sizeof path, "%s/lock-%d", b->parent, w->idx % opt_lines);
        else
            snprintf(path, sizeof path, "%s/lock", b->parent);
        st = zkl_mutex_create(w->c, path, &w->m);
        if (st == ZKL_OK && opt_lookahead >= 0)
            st = zkl_mutex_set_lookahead(w->m, (zkl_lookahead)opt_lookahead);
        if (st == ZKL_OK && b->threads && !w->remote && opt_handoff_streak > 0)
            st = zkl_mutex_set_local_handoff(w->m, opt_handoff_streak, opt_handoff_ms);
        break;
    case K_RWLOCK:
        snprintf(path, sizeof path, "%s/rw", b->parent);
        st = zkl_rwlock_create(w->c, path, &w->rw);
        break;
    case K_SEMAPHORE:
        snprintf(path, sizeof path, "%s/sem", b->parent);
        st = zkl_semaphore_create(w->c, path, 4, &w->sem);
        break;
    case K_FLOOR: break;
    }
    if (st != ZKL_OK) {
        fprintf(stderr, "lockbench: %s: %s (%s)\n", path, zkl_strerror(st), zkl_errmsg());
        return false;
    }
    return true;
}

static void teardown_worker(struct worker *w)
{
    if (w->shares) /* worker 0's: it closes them */
        w->m = NULL, w->c = NULL;
    if (w->m)
        zkl_mutex_destroy(w->m);
    if (w->rw)
        zkl_rwlock_destroy(w->rw);
    if (w->sem)
        zkl_semaphore_destroy(w->sem);
    if (w->c)
        zkl_client_close(w->c);
    if (w->raw_open)
        bu_raw_close(&w->raw);
    bu_samples_free(&w->acq);
    bu_samples_free(&w->rel);
    bu_samples_free(&w->held_at);
    bu_samples_free(&w->wait_from);
    bu_samples_free(&w->wait_to);
}

/* The first index of sorted s whose value is >= t. */
static size_t first_at(const bu_samples *s, int64_t t)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * threads: the process's share of the other clients' waits. For each wait of
 * another client, the holds the process's threads began during it, and the
 * time from the first of them to the last. The local hand-off bound says that
 * one wait sees at most one streak (plus the end of a streak under way while
 * the waiter's create was on its way); the rest of a wait is ZooKeeper's own
 * hand-offs and the other clients' holds.
 */
struct local_share {
    size_t worst_holds;
    int64_t worst_span_ns;
};

static struct local_share local_share(const struct worker *ws, int n)
{
    struct local_share r = {0, 0};
    bu_samples held = {0};
    int i;
    for (i = 0; i < n; i++)
        if (!ws[i].remote)
            bu_samples_append(&held, &ws[i].held_at);
    bu_samples_sort(&held);
    for (i = 0; i < n; i++) {
        size_t j;
        if (!ws[i].remote)
            continue;
        for (j = 0; j < ws[i].wait_from.n; j++) {
            size_t a = first_at(&held, ws[i].wait_from.v[j]);
            size_t z = first_at(&held, ws[i].wait_to.v[j]);
            if (z <= a)
                continue;
            if (z - a > r.worst_holds)
                r.worst_holds = z - a;
            if (held.v[z - 1] - held.v[a] > r.worst_span_ns)
                r.worst_span_ns = held.v[z - 1] - held.v[a];
        }
    }
    bu_samples_free(&held);
    return r;
}

/* CPU time (user and system) this process has used, in microseconds: every
 * client's threads, the ZooKeeper client's included. */
static int64_t cpu_us(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

/* Wall-clock milliseconds since the epoch. */
static int64_t epoch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * --start-at: sleep until the shared window opens (true, with how long this
 * process waited), or say it is too late (false): lockbench.md's stderr lines.
 */
static bool wait_for_start(int64_t *waited_ms)
{
    int64_t ready = epoch_ms();
    struct timespec at;
    if (ready > opt_start_at) {
        fprintf(stderr,
                "start-at: ready_ms=%lld late_ms=%lld: the start time passed before the warm-up "
                "ended; no row\n",
                (long long)ready, (long long)(ready - opt_start_at));
        return false;
    }
    *waited_ms = opt_start_at - ready;
    fprintf(stderr, "start-at: ready_ms=%lld wait_ms=%lld\n", (long long)ready,
            (long long)*waited_ms);
    at.tv_sec = (time_t)(opt_start_at / 1000);
    at.tv_nsec = (long)(opt_start_at % 1000) * 1000000;
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR)
        ;
    return true;
}

/* --samples: every acquire of the window, in microseconds, one a line. */
static void write_samples(const char *file, const bu_samples *acq)
{
    FILE *f = fopen(file, "w");
    size_t i;
    if (!f) {
        fprintf(stderr, "lockbench: --samples %s: %s\n", file, strerror(errno));
        return;
    }
    for (i = 0; i < acq->n; i++)
        fprintf(f, "%lld\n", (long long)(acq->v[i] / 1000));
    if (fclose(f) != 0)
        fprintf(stderr, "lockbench: --samples %s: %s\n", file, strerror(errno));
}

/* Run one row and print its JSON line; returns its error count. */
static int bench(const char *workload, int clients, enum kind kind)
{
    struct bench b;
    struct worker *ws;
    struct holders shared;
    struct holders *own = NULL;
    bu_samples acq = {0}, rel = {0}, racq = {0};
    int64_t before, after, t0, elapsed, requests, cpu0, cpu1;
    uint64_t creq0 = 0, cw0 = 0, creq1 = 0, cw1 = 0;
    int i, n, started = 0, errors = 0, violations = 0;
    uint64_t handoffs = 0;
    struct local_share share = {0, 0};
    int64_t server_max_ms = -1;
    bool reset = false, contended = false, late = false;
    int64_t start_wait_ms = 0;
    char extra[768] = "";
    size_t min_ops = SIZE_MAX, max_ops = 0;
    double secs;
    bool ok = true;

    memset(&b, 0, sizeof b);
    b.workload = workload;
    b.clients = clients;
    b.kind = kind;
    b.counted = strcmp(workload, "uncontended") == 0 || strcmp(workload, "floor") == 0;
    b.threads = strcmp(workload, "threads") == 0;
    b.remote = b.threads ? opt_remote : 0;
    n = clients + b.remote;
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    contended = strcmp(workload, "contended") == 0;
    if (contended && opt_path)
        snprintf(b.parent, sizeof b.parent, "%s", opt_path);
    else
        bu_fresh_path(b.parent, sizeof b.parent, workload);
    if (!make_parent(b.parent))
        return 1;

    memset(&shared, 0, sizeof shared);
    shared.max_shared = kind == K_RWLOCK ? INT_MAX : kind == K_SEMAPHORE ? 4 : 0;
    ws = calloc((size_t)n, sizeof *ws);
    own = calloc((size_t)n, sizeof *own); /* `independent`: one slot per lock */
    if (!ws || !own) {
        fputs("lockbench: out of memory\n", stderr);
        exit(1);
    }
    for (i = 0; i < n && ok; i++) {
        ws[i].b = &b;
        ws[i].idx = i;
        ws[i].remote = i >= clients;
        ws[i].rng = bu_seed();
        ws[i].h = strcmp(workload, "independent") == 0 ? &own[i]
                  : contended && opt_lines > 1         ? &own[i % opt_lines]
                                                       : &shared;
        ok = setup_worker(&b, &ws[i], &ws[0]);
    }
    b.warm_left = n;
    for (i = 0; i < n && ok; i++) {
        if (pthread_create(&ws[i].t, NULL, worker_main, &ws[i]) != 0) {
            ok = false;
            break;
        }
        started++;
    }
    if (!ok) { /* let those started run out at once, then give up */
        pthread_mutex_lock(&b.mu);
        b.go = true;
        b.deadline = 0;
        pthread_cond_broadcast(&b.cv);
        pthread_mutex_unlock(&b.mu);
        for (i = 0; i < started; i++)
            pthread_join(ws[i].t, NULL);
        for (i = n - 1; i >= 0; i--)
            if (ws[i].b)
                teardown_worker(&ws[i]);
        free(ws);
        free(own);
        bu_cleanup_path(zk_connect, b.parent);
        fprintf(stderr, "lockbench: %s: setup failed\n", workload);
        return 1;
    }

    pthread_mutex_lock(&b.mu);
    while (b.warm_left > 0)
        pthread_cond_wait(&b.cv, &b.mu);
    pthread_mutex_unlock(&b.mu);
    client_counters(ws, n, &creq0, &cw0);
    if (contended && opt_start_at >= 0 && !wait_for_start(&start_wait_ms)) {
        late = true;
        opt_seconds = 0; /* the workers run out at once */
    }
    /* threads and contended: the server's worst request latency in the row,
     * beside the other clients' worst wait or the acquires' p99 (before the
     * first count: srst zeroes it) */
    reset = (b.threads || contended) && bu_server_stats_reset(zk_connect);
    before = bu_packets_received(zk_connect);
    cpu0 = cpu_us();
    t0 = bu_now_ns();
    pthread_mutex_lock(&b.mu);
    b.deadline = t0 + (int64_t)(opt_seconds * 1e9);
    b.go = true;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    for (i = 0; i < n; i++)
        pthread_join(ws[i].t, NULL);
    elapsed = bu_now_ns() - t0;
    cpu1 = cpu_us();
    after = bu_packets_received(zk_connect);
    server_max_ms = reset ? bu_mntr_get(zk_connect, "zk_max_latency") : -1;
    client_counters(ws, n, &creq1, &cw1);
    /* minus the second mntr itself, as the peers count */
    requests = before >= 0 && after >= 0 ? after - before - 1 : -1;
    if (requests < 0)
        fprintf(stderr, "lockbench: no zk_packets_received from mntr on %s\n", zk_connect);

    for (i = 0; i < n; i++) {
        if (ws[i].remote) {
            bu_samples_append(&racq, &ws[i].acq);
            continue;
        }
        bu_samples_append(&acq, &ws[i].acq);
        bu_samples_append(&rel, &ws[i].rel);
        if (ws[i].acq.n < min_ops)
            min_ops = ws[i].acq.n;
        if (ws[i].acq.n > max_ops)
            max_ops = ws[i].acq.n;
        errors += ws[i].errors;
        violations += atomic_load(&own[i].violations);
    }
    violations += atomic_load(&shared.violations);
    if (violations)
        fprintf(stderr, "lockbench: %s: %d holder-slot violations (two holders at once)\n",
                workload, violations);
    errors += violations;
    for (i = 0; i < n; i++)
        if (ws[i].remote)
            errors += ws[i].errors;
    if (b.threads) {
        handoffs = zkl_mutex_local_handoffs(ws[0].m);
        share = local_share(ws, n);
    }
    for (i = n - 1; i >= 0; i--) /* worker 0 last: the threads share its client */
        teardown_worker(&ws[i]);
    if (!(contended && opt_path)) /* a given path: others may still use it */
        bu_cleanup_path(zk_connect, b.parent);
    if (late)
        exit(3); /* no row (lockbench.md): its window would be short and less contended */
    if (contended && opt_samples)
        write_samples(opt_samples, &acq);

    bu_samples_sort(&acq);
    bu_samples_sort(&rel);
    bu_samples_sort(&racq);
    secs = (double)elapsed / 1e9;
    if (b.threads) /* the threads' own row, plus what the other clients saw meanwhile */
        snprintf(extra, sizeof extra,
                 "\"sessions\":1,\"local_handoff_max_streak\":%d,\"local_handoff_max_ms\":%d,"
                 "\"local_handoffs\":%llu,\"remote_clients\":%d,\"remote_ops\":%zu,"
                 "\"remote_acquire_p50_us\":%lld,\"remote_worst_wait_us\":%lld,"
                 "\"remote_worst_local_holds\":%zu,\"remote_worst_local_span_us\":%lld,"
                 "\"server_max_latency_ms\":%lld,",
                 opt_handoff_streak, opt_handoff_ms, (unsigned long long)handoffs, b.remote, racq.n,
                 (long long)bu_pct_us(&racq, 0.50), (long long)bu_pct_us(&racq, 1.0),
                 share.worst_holds, (long long)(share.worst_span_ns / 1000),
                 (long long)server_max_ms);
    else if (contended && opt_start_at >= 0) /* across processes */
        snprintf(extra, sizeof extra,
                 "\"server_max_latency_ms\":%lld,\"start_at_ms\":%lld,\"start_wait_ms\":%lld,",
                 (long long)server_max_ms, (long long)opt_start_at, (long long)start_wait_ms);
    else if (contended && opt_lines_given) /* --lines: the longest acquire of all */
        snprintf(extra, sizeof extra,
                 "\"server_max_latency_ms\":%lld,\"lines\":%d,\"acquire_max_us\":%lld,",
                 (long long)server_max_ms, opt_lines, (long long)bu_pct_us(&acq, 1.0));
    else if (contended) /* a slow p99 beside a server stall, or not */
        snprintf(extra, sizeof extra, "\"server_max_latency_ms\":%lld,", (long long)server_max_ms);
    printf("{\"lib\":\"%s\",\"workload\":\"%s\",\"clients\":%d,\"seconds\":%.3f,"
           "\"ops\":%zu,\"ops_per_s\":%.1f,\"acquire_p50_us\":%lld,\"acquire_p99_us\":%lld,"
           "\"release_p50_us\":%lld,\"release_p99_us\":%lld,\"min_client_ops\":%zu,"
           "\"max_client_ops\":%zu,\"zk_requests\":%lld,\"client_cpu_us_per_op\":%.1f,"
           "%s\"errors\":%d}\n",
           lib, workload, clients, secs, acq.n, (double)acq.n / secs,
           (long long)bu_pct_us(&acq, 0.50), (long long)bu_pct_us(&acq, 0.99),
           (long long)bu_pct_us(&rel, 0.50), (long long)bu_pct_us(&rel, 0.99), min_ops, max_ops,
           (long long)requests, (double)(cpu1 - cpu0) / (double)(acq.n ? acq.n : 1), extra, errors);
    fflush(stdout);
    {
        double ops = acq.n ? (double)acq.n : 1.0;
        fprintf(stderr,
                "lockbench: done workload=%s clients=%d ops_per_s=%.1f requests_per_op=%.2f "
                "client_requests_per_op=%.2f watch_events_per_op=%.2f rss_kb=%ld\n",
                workload, clients, (double)acq.n / secs, (double)requests / ops,
                (double)(creq1 - creq0) / ops, (double)(cw1 - cw0) / ops, bu_rss_kb());
    }
    bu_samples_free(&acq);
    bu_samples_free(&rel);
    bu_samples_free(&racq);
    free(ws);
    free(own);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    return errors;
}

/*
 * memory: the resident cost of held locks. One client, MEMORY_LOCKS mutexes on
 * distinct paths, each acquired and held; RSS after opening the client and
 * after holding them all. Run first, on a heap no other workload has grown
 * (freed memory that malloc keeps would hide the locks' cost).
 */
static int bench_memory(void)
{
    char parent[256], path[320];
    zkl_client *c;
    zkl_mutex **ms;
    long rss_client, rss_held;
    int i, held = 0, errors = 0;
    int64_t t0;
    double secs;
    bu_fresh_path(parent, sizeof parent, "memory");
    if (!make_parent(parent))
        return 1;
    if (!(c = open_client()))
        return 1;
    ms = calloc(MEMORY_LOCKS, sizeof *ms);
    if (!ms) {
        fputs("lockbench: out of memory\n", stderr);
        exit(1);
    }
    rss_client = bu_rss_kb();
    t0 = bu_now_ns();
    for (i = 0; i < MEMORY_LOCKS; i++) {
        zkl_status st;
        snprintf(path, sizeof path, "%s/lock-%d", parent, i);
        st = zkl_mutex_create(c, path, &ms[i]);
        if (st == ZKL_OK)
            st = zkl_mutex_acquire(ms[i], ACQUIRE_TIMEOUT_MS);
        if (st != ZKL_OK) {
            if (errors++ == 0)
                fprintf(stderr, "lockbench: memory: %s: %s (%s)\n", path, zkl_strerror(st),
                        zkl_errmsg());
            continue;
        }
        held++;
    }
    secs = (double)(bu_now_ns() - t0) / 1e9;
    rss_held = bu_rss_kb();
    for (i = 0; i < MEMORY_LOCKS; i++) {
        if (!ms[i])
            continue;
        if (zkl_mutex_is_held(ms[i]) && zkl_mutex_release(ms[i]) != ZKL_OK)
            errors++;
        zkl_mutex_destroy(ms[i]);
    }
    free(ms);
    zkl_client_close(c);
    bu_cleanup_path(zk_connect, parent);
    printf("{\"lib\":\"%s\",\"workload\":\"memory\",\"locks\":%d,\"rss_kb_before\":%ld,"
           "\"rss_kb_after\":%ld,\"kb_per_lock\":%.2f,\"seconds\":%.3f,\"errors\":%d}\n",
           lib, held, rss_client, rss_held, held ? (double)(rss_held - rss_client) / held : 0.0,
           secs, errors);
    fflush(stdout);
    fprintf(stderr, "lockbench: done workload=memory locks=%d rss_kb=%ld\n", held, bu_rss_kb());
    return errors;
}

static const char *const all_workloads[] = {"memory",      "uncontended", "contended",
                                            "independent", "rwlock",      "semaphore",
                                            "floor",       "threads",     NULL};

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: lockbench [--zk HOST:PORT] [--workload NAME]... [--seconds N] [--clients N]\n"
        "                 [--pairs N] [--server-warmup S] [--lookahead[=MODE]] [--verbose]\n"
        "Workloads: uncontended contended independent rwlock semaphore floor memory threads\n"
        "(default: all). --seconds: length of the timed workloads (default 10);\n"
        "--clients: client count of the timed workloads (default: contended 4 and 16,\n"
        "the others 16); --pairs: measured pairs of uncontended and floor (default 2000);\n"
        "--server-warmup: seconds of load before measuring (default 3 on a server\n"
        "started here, 0 with --zk). Without --zk a throwaway server is started.\n"
        "--lookahead[=on|off|auto]: the mutexes' look-ahead mode (default auto; --lookahead:\n"
        "on, lib zklock-lookahead; off: lib zklock-lookahead-off).\n"
        "threads (asked for by name): --clients threads (16) share one client and one\n"
        "mutex with --local-handoff STREAK,MS (100,50; off: none), while --remote (2)\n"
        "other clients contend on the same path; their waits are in the row.\n"
        "--warmup-pairs K: in a timed workload each client first does K pairs, then all\n"
        "wait for each other, then the window starts (lockbench.md).\n"
        "Across processes (contended only, lockbench.md): --path P shares the parent P\n"
        "(made if missing, kept); --start-at EPOCH_MS opens the window at that wall-clock\n"
        "time (too late: exit 3, no row); --samples FILE writes the window's acquires (us).\n"
        "ZKL_PROCESS_HINTS=off in the environment: lib zklock-hints-off (core/engine/inproc.h).\n"
#ifdef LOCKBENCH_TUNED
        "--off PART,...: turn off the room's parts alone: seen made join bell eventfd\n"
        "(lib zklock-off-PART+...).\n"
#endif
    );
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"zk", required_argument, NULL, 'z'},
                                         {"workload", required_argument, NULL, 'w'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"clients", required_argument, NULL, 'c'},
                                         {"pairs", required_argument, NULL, 'p'},
                                         {"server-warmup", required_argument, NULL, 'W'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"lookahead", optional_argument, NULL, 'L'},
                                         {"off", required_argument, NULL, 'O'},
                                         {"remote", required_argument, NULL, 'R'},
                                         {"local-handoff", required_argument, NULL, 'H'},
                                         {"warmup-pairs", required_argument, NULL, 'K'},
                                         {"path", required_argument, NULL, 'P'},
                                         {"start-at", required_argument, NULL, 'T'},
                                         {"samples", required_argument, NULL, 'S'},
                                         {"lines", required_argument, NULL, 'N'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool selected[sizeof all_workloads / sizeof *all_workloads] = {false};
    bool any = false, verbose = false;
    double warmup = -1;
    char own_connect[1024];
    int opt, i, errors = 0;

    bu_signals_init("lockbench");
    {
        const char *h = getenv("ZKL_PROCESS_HINTS");
        if (h && (strcmp(h, "off") == 0 || strcmp(h, "0") == 0))
            lib = "zklock-hints-off-" ZKLOCK_VERSION;
    }
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'z': zk_connect = optarg; break;
        case 'w':
            for (i = 0; all_workloads[i] && strcmp(all_workloads[i], optarg) != 0; i++)
                ;
            if (!all_workloads[i]) {
                fprintf(stderr, "lockbench: unknown workload '%s'\n", optarg);
                usage(stderr);
                return 2;
            }
            selected[i] = any = true;
            break;
        case 's': opt_seconds = bench_parse_num("lockbench", "--seconds", optarg, 0.001); break;
        case 'c': opt_clients = (int)bench_parse_num("lockbench", "--clients", optarg, 1); break;
        case 'p': opt_pairs = (int)bench_parse_num("lockbench", "--pairs", optarg, 1); break;
        case 'W': warmup = bench_parse_num("lockbench", "--server-warmup", optarg, 0); break;
        case 'v': verbose = true; break;
        case 'L':
            if (!optarg || strcmp(optarg, "on") == 0) {
                opt_lookahead = ZKL_LOOKAHEAD_ON;
                lib = "zklock-lookahead-" ZKLOCK_VERSION;
            } else if (strcmp(optarg, "off") == 0) {
                opt_lookahead = ZKL_LOOKAHEAD_OFF;
                lib = "zklock-lookahead-off-" ZKLOCK_VERSION;
            } else if (strcmp(optarg, "auto") == 0) {
                opt_lookahead = ZKL_LOOKAHEAD_AUTO;
            } else {
                fprintf(stderr, "lockbench: --lookahead wants on, off or auto\n");
                return 2;
            }
            break;
        case 'O':
            if (bu_tuned_off("lockbench", optarg, lib_buf, sizeof lib_buf) != 0)
                return 2;
            lib = lib_buf;
            break;
        case 'K':
            opt_warmup_pairs = (int)bench_parse_num("lockbench", "--warmup-pairs", optarg, 0);
            break;
        case 'R': opt_remote = (int)bench_parse_num("lockbench", "--remote", optarg, 0); break;
        case 'H':
            if (strcmp(optarg, "off") == 0) {
                opt_handoff_streak = 0;
            } else if (sscanf(optarg, "%d,%d", &opt_handoff_streak, &opt_handoff_ms) != 2 ||
                       opt_handoff_streak < 1 || opt_handoff_ms < 1) {
                fprintf(stderr, "lockbench: --local-handoff wants STREAK,MS (both >= 1) or off\n");
                return 2;
            }
            break;
        case 'P':
            if (optarg[0] != '/' || strlen(optarg) > 200) {
                fprintf(stderr, "lockbench: --path wants an absolute path (at most 200 bytes)\n");
                return 2;
            }
            opt_path = optarg;
            break;
        case 'T':
            opt_start_at = (int64_t)bench_parse_num("lockbench", "--start-at", optarg, 0);
            break;
        case 'S': opt_samples = optarg; break;
        case 'N':
            opt_lines = (int)bench_parse_num("lockbench", "--lines", optarg, 1);
            opt_lines_given = true;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "lockbench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!any) /* threads is a study of its own, asked for by name (lockbench.md) */
        for (i = 0; all_workloads[i]; i++)
            selected[i] = strcmp(all_workloads[i], "threads") != 0;
    bu_logging(verbose);

    if (!zk_connect) {
        if (bu_server_start(own_connect, sizeof own_connect) != 0)
            return 1;
        zk_connect = own_connect;
        if (warmup < 0)
            warmup = 3;
    }
    if (bu_packets_received(zk_connect) < 0)
        fprintf(stderr, "lockbench: warning: no mntr from %s (zk_requests will be -1)\n",
                zk_connect);

    /* memory first, on a fresh heap; then warm the server up for the timed ones */
    if (selected[0])
        errors += bench_memory();
    for (i = 1; all_workloads[i] && !selected[i]; i++)
        ;
    if (all_workloads[i] && warmup > 0)
        bu_server_warmup(zk_connect, warmup);

    for (i = 1; all_workloads[i]; i++) {
        const char *w = all_workloads[i];
        if (!selected[i])
            continue;
        if (strcmp(w, "uncontended") == 0)
            errors += bench(w, 1, K_MUTEX);
        else if (strcmp(w, "contended") == 0) {
            if (opt_clients) {
                errors += bench(w, opt_clients, K_MUTEX);
            } else {
                errors += bench(w, 4, K_MUTEX);
                errors += bench(w, 16, K_MUTEX);
            }
        } else if (strcmp(w, "independent") == 0)
            errors += bench(w, opt_clients ? opt_clients : 16, K_MUTEX);
        else if (strcmp(w, "rwlock") == 0)
            errors += bench(w, opt_clients ? opt_clients : 16, K_RWLOCK);
        else if (strcmp(w, "semaphore") == 0)
            errors += bench(w, opt_clients ? opt_clients : 16, K_SEMAPHORE);
        else if (strcmp(w, "floor") == 0)
            errors += bench(w, 1, K_FLOOR);
        else if (strcmp(w, "threads") == 0)
            errors += bench(w, opt_clients ? opt_clients : 16, K_MUTEX);
    }
    bu_server_stop();
    return errors ? 1 : 0;
}
