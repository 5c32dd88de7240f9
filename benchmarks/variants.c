/*
 * variants.c - lock_variants: why zklock's recipes are built the way they are.
 *
 * Two naive ZooKeeper locks, written here with raw libzookeeper_mt (they are
 * not, and should not be, in the library), run beside zklock's recipes with
 * N contending sessions:
 *
 *   naive-fixed     everyone creates one fixed ephemeral znode; the losers set
 *                   an exists-watch on it, and ALL of them retry when it is
 *                   deleted (the herd: N-1 notifications and ~2(N-1) requests
 *                   per handoff, and no fairness).
 *   naive-children  sequential ephemeral nodes, but every waiter watches the
 *                   whole child list and re-reads it on every change (each
 *                   create and delete wakes all waiters).
 *   zklock-mutex, zklock-semaphore-mutex, zklock-rwlock-write
 *                   Curator's recipes: each waiter watches only the node just
 *                   ahead of it, so one handoff wakes one waiter.
 *
 *   lock_variants [--zk HOST:PORT] [--seconds N] [--clients N[,N...]]...
 *                 [--variant NAME]... [--server-warmup S] [--verbose]
 *
 * stdout: one JSON object per (variant, N); stderr: progress and, at the end,
 * a readable table. Handoffs are acquisitions; requests per handoff come from
 * the server's mntr, notifications per handoff both from the clients (watcher
 * callbacks here, zkl_client_stats_get().watch_events for zklock) and from
 * the server's mntr (watchers it triggered), each a check on the other.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "benchutil.h"
#include "zklock/zklock.h"

#define LIB "zklock-" ZKLOCK_VERSION
#define SESSION_MS 15000
/* Long: the naive-fixed lock is unfair, and a loser may wait a whole run. */
#define ACQUIRE_TIMEOUT_MS 30000
#define MAX_NS 16

enum variant { V_FIXED, V_CHILDREN, V_MUTEX, V_SEMMUTEX, V_RWWRITE, V_COUNT };
static const char *const variant_names[V_COUNT] = {"naive-fixed", "naive-children", "zklock-mutex",
                                                   "zklock-semaphore-mutex", "zklock-rwlock-write"};

static const char *zk_connect;
static double opt_seconds = 5;

struct run;

struct vclient {
    struct run *r;
    int idx;
    bu_raw raw;
    bool raw_open;
    zkl_client *c;
    zkl_mutex *m;
    zkl_semaphore_mutex *sm;
    zkl_rwlock *rw;
    /* naive variants: watcher callbacks wake the waiting thread */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t gen, notifications, requests;
    char node[320];
    bu_samples acq;
    int errors;
    bool ready;
    pthread_t t;
};

struct run {
    enum variant v;
    int n;
    char parent[256], lock[300], queue[300];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int warm_left, done_left;
    bool go, close;
    int64_t deadline;
    atomic_int inside, violations;
};

/* ------------------------------------------------------------ helpers ---- */

static void fail(struct vclient *c, const char *what, const char *why)
{
    if (c->errors++ == 0)
        fprintf(stderr, "lock_variants: %s N=%d client %d: %s: %s\n", variant_names[c->r->v],
                c->r->n, c->idx, what, why);
}

static void naive_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct vclient *c = ctx;
    (void)zh;
    (void)state;
    (void)path;
    /* The C client hands session events to every registered watcher too:
     * those are not lock notifications. */
    if (type == ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&c->mu);
    c->gen++;
    c->notifications++;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static uint64_t gen_of(struct vclient *c)
{
    uint64_t g;
    pthread_mutex_lock(&c->mu);
    g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

/* Wait until a notification after generation g, or the deadline (false). */
static bool wait_change(struct vclient *c, uint64_t g, int64_t deadline)
{
    bool changed;
    pthread_mutex_lock(&c->mu);
    while (c->gen == g) {
        int64_t now = bu_now_ns();
        struct timespec ts;
        if (now >= deadline)
            break;
        ts.tv_sec = (time_t)(deadline / 1000000000);
        ts.tv_nsec = (long)(deadline % 1000000000);
        pthread_cond_timedwait(&c->cv, &c->mu, &ts); /* cv on CLOCK_MONOTONIC */
    }
    changed = c->gen != g;
    pthread_mutex_unlock(&c->mu);
    return changed;
}

/* ------------------------------------------------------- naive-fixed ---- */

static int fixed_acquire(struct vclient *c)
{
    int64_t deadline = bu_now_ns() + (int64_t)ACQUIRE_TIMEOUT_MS * 1000000;
    for (;;) {
        struct Stat st;
        uint64_t g;
        int rc;
        c->requests++;
        rc = zoo_create(c->raw.zh, c->r->lock, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL,
                        0);
        if (rc != ZNODEEXISTS)
            return rc; /* ZOK: ours */
        g = gen_of(c);
        c->requests++;
        rc = zoo_wexists(c->raw.zh, c->r->lock, naive_watch, c, &st);
        if (rc == ZNONODE)
            continue; /* gone meanwhile: try again at once */
        if (rc != ZOK)
            return rc;
        if (!wait_change(c, g, deadline))
            return ZOPERATIONTIMEOUT;
    }
}

static int fixed_release(struct vclient *c)
{
    c->requests++;
    return zoo_delete(c->raw.zh, c->r->lock, -1);
}

/* ---------------------------------------------------- naive-children ---- */

static int children_acquire(struct vclient *c)
{
    int64_t deadline = bu_now_ns() + (int64_t)ACQUIRE_TIMEOUT_MS * 1000000;
    char prefix[320];
    const char *mine;
    int rc;
    snprintf(prefix, sizeof prefix, "%s/n-", c->r->queue);
    c->requests++;
    rc = zoo_create(c->raw.zh, prefix, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
                    c->node, sizeof c->node);
    if (rc != ZOK)
        return rc;
    mine = strrchr(c->node, '/') + 1;
    for (;;) {
        struct String_vector kids = {0, NULL};
        const char *lowest = NULL;
        bool first;
        uint64_t g = gen_of(c);
        int i;
        c->requests++;
        rc = zoo_wget_children(c->raw.zh, c->r->queue, naive_watch, c, &kids);
        if (rc != ZOK)
            break;
        /* one prefix, zero-padded sequence numbers: text order is queue order */
        for (i = 0; i < kids.count; i++)
            if (!lowest || strcmp(kids.data[i], lowest) < 0)
                lowest = kids.data[i];
        first = lowest && strcmp(lowest, mine) == 0;
        deallocate_String_vector(&kids);
        if (first)
            return ZOK;
        if (!wait_change(c, g, deadline)) {
            rc = ZOPERATIONTIMEOUT;
            break;
        }
    }
    c->requests++;
    zoo_delete(c->raw.zh, c->node, -1);
    return rc;
}

static int children_release(struct vclient *c)
{
    c->requests++;
    return zoo_delete(c->raw.zh, c->node, -1);
}

/* ------------------------------------------------------------- client ---- */

static bool acquire(struct vclient *c)
{
    zkl_status st;
    int rc;
    switch (c->r->v) {
    case V_FIXED:
    case V_CHILDREN:
        rc = c->r->v == V_FIXED ? fixed_acquire(c) : children_acquire(c);
        if (rc != ZOK)
            fail(c, "acquire", zerror(rc));
        return rc == ZOK;
    case V_MUTEX: st = zkl_mutex_acquire(c->m, ACQUIRE_TIMEOUT_MS); break;
    case V_SEMMUTEX: st = zkl_semaphore_mutex_acquire(c->sm, ACQUIRE_TIMEOUT_MS); break;
    default: st = zkl_rwlock_write_acquire(c->rw, ACQUIRE_TIMEOUT_MS); break;
    }
    if (st != ZKL_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s (%s)", zkl_strerror(st), zkl_errmsg());
        fail(c, "acquire", why);
    }
    return st == ZKL_OK;
}

static bool release(struct vclient *c)
{
    zkl_status st;
    int rc;
    switch (c->r->v) {
    case V_FIXED:
    case V_CHILDREN:
        rc = c->r->v == V_FIXED ? fixed_release(c) : children_release(c);
        if (rc != ZOK)
            fail(c, "release", zerror(rc));
        return rc == ZOK;
    case V_MUTEX: st = zkl_mutex_release(c->m); break;
    case V_SEMMUTEX: st = zkl_semaphore_mutex_release(c->sm); break;
    default: st = zkl_rwlock_write_release(c->rw); break;
    }
    if (st != ZKL_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s (%s)", zkl_strerror(st), zkl_errmsg());
        fail(c, "release", why);
    }
    return st == ZKL_OK;
}

/* Open this client's own session and lock object (in its own thread, so 64
 * sessions open in parallel). */
static bool setup(struct vclient *c)
{
    struct run *r = c->r;
    zkl_client_options o;
    zkl_status st;
    if (r->v == V_FIXED || r->v == V_CHILDREN) {
        if (bu_raw_open(&c->raw, zk_connect, SESSION_MS) != 0)
            return false;
        c->raw_open = true;
        return true;
    }
    zkl_client_options_init(&o);
    o.session_timeout_ms = SESSION_MS;
    st = zkl_client_open(zk_connect, &o, &c->c);
    if (st == ZKL_OK) {
        if (r->v == V_MUTEX)
            st = zkl_mutex_create(c->c, r->lock, &c->m);
        else if (r->v == V_SEMMUTEX)
            st = zkl_semaphore_mutex_create(c->c, r->lock, &c->sm);
        else
            st = zkl_rwlock_create(c->c, r->lock, &c->rw);
    }
    if (st != ZKL_OK) {
        fprintf(stderr, "lock_variants: client %d: %s (%s)\n", c->idx, zkl_strerror(st),
                zkl_errmsg());
        return false;
    }
    return true;
}

static void teardown(struct vclient *c)
{
    if (c->m)
        zkl_mutex_destroy(c->m);
    if (c->sm)
        zkl_semaphore_mutex_destroy(c->sm);
    if (c->rw)
        zkl_rwlock_destroy(c->rw);
    if (c->c)
        zkl_client_close(c->c);
    if (c->raw_open)
        bu_raw_close(&c->raw);
    c->m = NULL;
    c->sm = NULL;
    c->rw = NULL;
    c->c = NULL;
    c->raw_open = false;
}

static void *client_main(void *arg)
{
    struct vclient *c = arg;
    struct run *r = c->r;
    c->ready = setup(c);
    if (!c->ready)
        c->errors++;
    pthread_mutex_lock(&r->mu);
    r->warm_left--;
    pthread_cond_broadcast(&r->cv);
    while (!r->go)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    while (c->ready && bu_now_ns() < r->deadline) {
        int64_t t0 = bu_now_ns(), t1;
        if (!acquire(c))
            continue;
        t1 = bu_now_ns();
        if (atomic_fetch_add(&r->inside, 1) != 0) /* the holder check */
            atomic_fetch_add(&r->violations, 1);
        atomic_fetch_sub(&r->inside, 1);
        if (release(c))
            bu_samples_add(&c->acq, t1 - t0);
    }
    /* Keep the session until the server's counters have been read. */
    pthread_mutex_lock(&r->mu);
    r->done_left--;
    pthread_cond_broadcast(&r->cv);
    while (!r->close)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    teardown(c);
    return NULL;
}

/* Client-side notifications and requests summed over the clients. */
static void counters(struct vclient *cs, int n, uint64_t *notes, uint64_t *reqs)
{
    int i;
    *notes = *reqs = 0;
    for (i = 0; i < n; i++) {
        zkl_client_stats s;
        if (cs[i].c && zkl_client_stats_get(cs[i].c, &s) == ZKL_OK) {
            *notes += s.watch_events;
            *reqs += s.requests;
        }
        pthread_mutex_lock(&cs[i].mu);
        *notes += cs[i].notifications;
        *reqs += cs[i].requests;
        pthread_mutex_unlock(&cs[i].mu);
    }
}

struct result {
    enum variant v;
    int n;
    double secs, handoffs_per_s, req_per, notes_per, sent_per, creq_per;
    size_t handoffs, min_ops, max_ops;
    int64_t p50, p99;
    int errors;
};

static struct result run_one(enum variant v, int n)
{
    struct run r;
    struct vclient *cs = calloc((size_t)n, sizeof *cs);
    struct result res;
    pthread_condattr_t ca;
    bu_samples acq = {0};
    bu_raw admin;
    uint64_t notes0, reqs0, notes1, reqs1;
    int64_t before, after, sent0, sent1, sent, t0, requests;
    int i, started = 0;
    char what[64];

    memset(&res, 0, sizeof res);
    res.v = v;
    res.n = n;
    if (!cs) {
        fputs("lock_variants: out of memory\n", stderr);
        exit(1);
    }
    memset(&r, 0, sizeof r);
    r.v = v;
    r.n = n;
    snprintf(what, sizeof what, "variants-%s-%d", variant_names[v], n);
    bu_fresh_path(r.parent, sizeof r.parent, what);
    snprintf(r.lock, sizeof r.lock, "%s/lock", r.parent);
    snprintf(r.queue, sizeof r.queue, "%s/queue", r.parent);
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    if (bu_raw_open(&admin, zk_connect, SESSION_MS) != 0) {
        res.errors = 1;
        free(cs);
        return res;
    }
    if (bu_mkdirs(admin.zh, v == V_CHILDREN ? r.queue : r.parent) != ZOK)
        res.errors = 1;
    bu_raw_close(&admin);

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    r.warm_left = r.done_left = n;
    for (i = 0; i < n; i++) {
        cs[i].r = &r;
        cs[i].idx = i;
        pthread_mutex_init(&cs[i].mu, NULL);
        pthread_cond_init(&cs[i].cv, &ca);
    }
    for (i = 0; i < n; i++) {
        if (pthread_create(&cs[i].t, NULL, client_main, &cs[i]) != 0) {
            fprintf(stderr, "lock_variants: cannot start thread %d\n", i);
            res.errors++;
            break;
        }
        started++;
    }
    pthread_mutex_lock(&r.mu);
    r.warm_left -= n - started;
    r.done_left -= n - started;
    while (r.warm_left > 0)
        pthread_cond_wait(&r.cv, &r.mu);
    pthread_mutex_unlock(&r.mu);

    counters(cs, n, &notes0, &reqs0);
    bu_mntr_counts(zk_connect, &before, &sent0);
    t0 = bu_now_ns();
    pthread_mutex_lock(&r.mu);
    r.deadline = t0 + (int64_t)(opt_seconds * 1e9);
    r.go = true;
    pthread_cond_broadcast(&r.cv);
    while (r.done_left > 0)
        pthread_cond_wait(&r.cv, &r.mu);
    pthread_mutex_unlock(&r.mu);
    res.secs = (double)(bu_now_ns() - t0) / 1e9;
    bu_mntr_counts(zk_connect, &after, &sent1);
    counters(cs, n, &notes1, &reqs1);
    requests = before >= 0 && after >= 0 ? after - before - 1 : -1; /* minus the mntr */
    sent = sent0 >= 0 && sent1 >= 0 ? sent1 - sent0 : -1;

    pthread_mutex_lock(&r.mu);
    r.close = true;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
    res.min_ops = (size_t)-1;
    for (i = 0; i < started; i++)
        pthread_join(cs[i].t, NULL);
    for (i = 0; i < n; i++) {
        bu_samples_append(&acq, &cs[i].acq);
        if (cs[i].acq.n < res.min_ops)
            res.min_ops = cs[i].acq.n;
        if (cs[i].acq.n > res.max_ops)
            res.max_ops = cs[i].acq.n;
        res.errors += cs[i].errors;
        bu_samples_free(&cs[i].acq);
        pthread_cond_destroy(&cs[i].cv);
        pthread_mutex_destroy(&cs[i].mu);
    }
    if (atomic_load(&r.violations)) {
        fprintf(stderr, "lock_variants: %s N=%d: %d holder-slot violations (two holders at once)\n",
                variant_names[v], n, atomic_load(&r.violations));
        res.errors += atomic_load(&r.violations);
    }
    bu_cleanup_path(zk_connect, r.parent);
    pthread_condattr_destroy(&ca);
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
    free(cs);

    bu_samples_sort(&acq);
    res.handoffs = acq.n;
    res.handoffs_per_s = (double)acq.n / res.secs;
    {
        double h = acq.n ? (double)acq.n : 1.0;
        res.req_per = requests >= 0 ? (double)requests / h : -1;
        res.notes_per = (double)(notes1 - notes0) / h;
        res.sent_per = sent >= 0 ? (double)sent / h : -1;
        res.creq_per = (double)(reqs1 - reqs0) / h;
    }
    res.p50 = bu_pct_us(&acq, 0.50);
    res.p99 = bu_pct_us(&acq, 0.99);
    printf("{\"lib\":\"%s\",\"variant\":\"%s\",\"clients\":%d,\"seconds\":%.3f,\"handoffs\":%zu,"
           "\"handoffs_per_s\":%.1f,\"zk_requests\":%lld,\"requests_per_handoff\":%.2f,"
           "\"notifications\":%llu,\"notifications_per_handoff\":%.2f,"
           "\"server_notifications\":%lld,\"server_notifications_per_handoff\":%.2f,"
           "\"client_requests_per_handoff\":%.2f,\"acquire_p50_us\":%lld,\"acquire_p99_us\":%lld,"
           "\"min_client_ops\":%zu,\"max_client_ops\":%zu,\"errors\":%d}\n",
           LIB, variant_names[v], n, res.secs, res.handoffs, res.handoffs_per_s,
           (long long)requests, res.req_per, (unsigned long long)(notes1 - notes0), res.notes_per,
           (long long)sent, res.sent_per, res.creq_per, (long long)res.p50, (long long)res.p99,
           res.min_ops, res.max_ops, res.errors);
    fflush(stdout);
    fprintf(stderr,
            "lock_variants: %-22s N=%-3d %8.1f handoffs/s %7.2f req/handoff %7.2f notif/handoff "
            "(server %.2f)\n",
            variant_names[v], n, res.handoffs_per_s, res.req_per, res.notes_per, res.sent_per);
    bu_samples_free(&acq);
    return res;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: lock_variants [--zk HOST:PORT] [--seconds N] [--clients N[,N...]]...\n"
               "                     [--variant NAME]... [--server-warmup S] [--verbose]\n"
               "Variants: naive-fixed naive-children zklock-mutex zklock-semaphore-mutex\n"
               "zklock-rwlock-write (default: all). --clients: contending sessions (default\n"
               "2,8,32,64); --seconds: length of each run (default 5). Without --zk a\n"
               "throwaway server is started (and warmed up for --server-warmup s, default 3).\n");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"zk", required_argument, NULL, 'z'},
                                         {"seconds", required_argument, NULL, 's'},
                                         {"clients", required_argument, NULL, 'c'},
                                         {"variant", required_argument, NULL, 'V'},
                                         {"server-warmup", required_argument, NULL, 'W'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const int default_ns[] = {2, 8, 32, 64};
    int ns[MAX_NS], nn = 0, opt, i, j, errors = 0, nres = 0;
    bool selected[V_COUNT] = {false}, any = false, verbose = false;
    struct result *res;
    double warmup = -1;
    char own_connect[1024];

    bu_signals_init("lock_variants");
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'z': zk_connect = optarg; break;
        case 's': opt_seconds = bench_parse_num("lock_variants", "--seconds", optarg, 0.001); break;
        case 'c': {
            char *save = NULL, *tok, *copy = strdup(optarg);
            for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (nn == MAX_NS) {
                    fprintf(stderr, "lock_variants: at most %d client counts\n", MAX_NS);
                    return 2;
                }
                ns[nn++] = (int)bench_parse_num("lock_variants", "--clients", tok, 1);
            }
            free(copy);
            break;
        }
        case 'V':
            for (i = 0; i < V_COUNT && strcmp(variant_names[i], optarg) != 0; i++)
                ;
            if (i == V_COUNT) {
                fprintf(stderr, "lock_variants: unknown variant '%s'\n", optarg);
                usage(stderr);
                return 2;
            }
            selected[i] = any = true;
            break;
        case 'W': warmup = bench_parse_num("lock_variants", "--server-warmup", optarg, 0); break;
        case 'v': verbose = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "lock_variants: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!nn)
        for (nn = 0; nn < (int)(sizeof default_ns / sizeof *default_ns); nn++)
            ns[nn] = default_ns[nn];
    if (!any)
        for (i = 0; i < V_COUNT; i++)
            selected[i] = true;
    bu_logging(verbose);
    if (!zk_connect) {
        if (bu_server_start(own_connect, sizeof own_connect) != 0)
            return 1;
        zk_connect = own_connect;
        if (warmup < 0)
            warmup = 3;
    }
    if (warmup > 0)
        bu_server_warmup(zk_connect, warmup);

    res = calloc((size_t)(V_COUNT * nn), sizeof *res);
    if (!res)
        return 1;
    for (i = 0; i < V_COUNT; i++) {
        if (!selected[i])
            continue;
        for (j = 0; j < nn; j++) {
            res[nres] = run_one((enum variant)i, ns[j]);
            errors += res[nres].errors;
            nres++;
        }
    }
    bu_server_stop();

    fprintf(stderr, "\n%-22s %4s %11s %12s %13s %13s %12s %10s %10s %11s %6s\n", "variant", "N",
            "handoffs/s", "zk req/hoff", "notif/hoff", "srv notif/ho", "cli req/hoff", "acq p50us",
            "acq p99us", "min/max ops", "errors");
    for (i = 0; i < nres; i++) {
        char mm[32];
        snprintf(mm, sizeof mm, "%zu/%zu", res[i].min_ops, res[i].max_ops);
        fprintf(stderr, "%-22s %4d %11.1f %12.2f %13.2f %13.2f %12.2f %10lld %10lld %11s %6d\n",
                variant_names[res[i].v], res[i].n, res[i].handoffs_per_s, res[i].req_per,
                res[i].notes_per, res[i].sent_per, res[i].creq_per, (long long)res[i].p50,
                (long long)res[i].p99, mm, res[i].errors);
    }
    free(res);
    return errors ? 1 : 0;
}
