/*
 * holder.c - one client of the nemesis run (scripts/nemesis, issue 58): a
 * process with one zklock session that takes one kind of hold again and
 * again until it is told to stop, and writes what it believed, on
 * CLOCK_MONOTONIC (which every process of the machine shares), to its own
 * log:
 *
 *   B KIND WHO T_US TOKEN          a hold began (granted, or leadership gained)
 *   L T_US LEASE_END_US            while holding: the lease's end as last read
 *   H KIND WHO T0_US T1_US TOKEN   a hold ended: believed held from T0 to T1
 *                                  (T1: before the release, or the lease's end
 *                                  as last read, when it was found lost)
 *   C ok|amb|no WHO VALUE          a counter increment, as the caller was told
 *   Z T_US                         a heartbeat, every 250 ms whatever it does
 *
 *   holder --zk HOSTS --kind mutex|read|write|sem|latch|selector|counter|command|read-counter
 *          --path PATH --who NAME --log FILE [--session-timeout MS]
 *          [--lag MS] [--sem-max N] [--seed N] [--careless 1]
 *
 * --careless 1 is the checkers' own test (scripts/nemesis --careless): the
 * holder believes each hold to its planned end, whatever is_held says, as a
 * client without a lease would.
 *
 * "command" is the COMMAND that zklock(1) runs: it logs B at start and L
 * every 10 ms (its belief ends at its last L, as SIGTERM or SIGKILL from
 * zklock's watchdog cut it short), and H when it ends on its own after
 * 20 to 300 ms.
 *
 * A hold lasts 20 to 300 ms, checked every 5 ms; a wait gives up after
 * 20 s and tries again. SIGTERM ends the loop after the current hold; the
 * exit status is 0, or 2 for bad arguments, 3 if the client cannot open
 * for bad arguments (one that finds no server tries again until stopped).
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "faultproxy.h"
#include "zklock/zklock.h"

static FILE *out;
static const char *kind = "", *who = "", *path = "";
static volatile sig_atomic_t stop;
static int careless; /* the checkers' own test: believe a hold to its planned end */
static unsigned seed;
static int64_t last_beat;

/* --proxy 1: the session goes through the tests' TCP proxy, one per server,
 * in this process, so that the nemesis can slow the link: on SIGWINCH (by
 * default ignored, so that one that comes before the mask is set costs
 * nothing) and once at start, every chunk's delay is set to the
 * milliseconds in LOG.delay (0 or no file: none). */
#define MAX_SERVERS 8
static fp_proxy *proxies[MAX_SERVERS];
static int nproxies;
static const char *logname;

/* The connect string through a proxy per server (static), or NULL. */
static const char *proxied(const char *zk)
{
    static char hosts[MAX_SERVERS * 32];
    char buf[1024], *save = NULL, *h;
    snprintf(buf, sizeof buf, "%s", zk);
    hosts[0] = '\0';
    for (h = strtok_r(buf, ",", &save); h && nproxies < MAX_SERVERS;
         h = strtok_r(NULL, ",", &save)) {
        if (!(proxies[nproxies] = fp_start(h)))
            return NULL;
        snprintf(hosts + strlen(hosts), sizeof hosts - strlen(hosts), "%s%s", nproxies ? "," : "",
                 fp_connect_string(proxies[nproxies]));
        nproxies++;
    }
    return hosts;
}

static void set_delay(void)
{
    char name[600];
    int ms = 0, i;
    FILE *f;
    snprintf(name, sizeof name, "%s.delay", logname);
    if ((f = fopen(name, "r"))) {
        if (fscanf(f, "%d", &ms) != 1)
            ms = 0;
        fclose(f);
    }
    for (i = 0; i < nproxies; i++)
        fp_delay(proxies[i], ms);
}

static void *slow_link(void *arg)
{
    sigset_t *set = arg;
    set_delay();
    for (;;) {
        int sig = 0;
        if (sigwait(set, &sig) == 0)
            set_delay();
    }
    return NULL;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fflush(out);
}

static void beat(void)
{
    int64_t t = now_us();
    if (t - last_beat >= 250000) {
        say("Z %lld\n", (long long)t);
        last_beat = t;
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

/* One kind of hold, behind four calls. */
typedef struct hold_ops {
    zkl_status (*acquire)(void *obj, int timeout_ms);
    bool (*held)(void *obj);
    zkl_status (*remaining)(void *obj, int64_t *ms);
    zkl_status (*token)(void *obj, int64_t *token);
    zkl_status (*release)(void *obj);
} hold_ops;

static zkl_status m_acq(void *o, int t)
{
    return zkl_mutex_acquire(o, t);
}
static bool m_held(void *o)
{
    return zkl_mutex_is_held(o);
}
static zkl_status m_rem(void *o, int64_t *ms)
{
    return zkl_mutex_lease_remaining(o, ms);
}
static zkl_status m_tok(void *o, int64_t *t)
{
    return zkl_mutex_fencing_token(o, t);
}
static zkl_status m_rel(void *o)
{
    return zkl_mutex_release(o);
}
static const hold_ops mutex_ops = {m_acq, m_held, m_rem, m_tok, m_rel};

static zkl_status r_acq(void *o, int t)
{
    return zkl_rwlock_read_acquire(o, t);
}
static bool r_held(void *o)
{
    return zkl_rwlock_read_is_held(o);
}
static zkl_status r_rem(void *o, int64_t *ms)
{
    return zkl_rwlock_read_lease_remaining(o, ms);
}
static zkl_status r_tok(void *o, int64_t *t)
{
    return zkl_rwlock_read_fencing_token(o, t);
}
static zkl_status r_rel(void *o)
{
    return zkl_rwlock_read_release(o);
}
static const hold_ops read_ops = {r_acq, r_held, r_rem, r_tok, r_rel};

static zkl_status w_acq(void *o, int t)
{
    return zkl_rwlock_write_acquire(o, t);
}
static bool w_held(void *o)
{
    return zkl_rwlock_write_is_held(o);
}
static zkl_status w_rem(void *o, int64_t *ms)
{
    return zkl_rwlock_write_lease_remaining(o, ms);
}
static zkl_status w_tok(void *o, int64_t *t)
{
    return zkl_rwlock_write_fencing_token(o, t);
}
static zkl_status w_rel(void *o)
{
    return zkl_rwlock_write_release(o);
}
static const hold_ops write_ops = {w_acq, w_held, w_rem, w_tok, w_rel};

/* A semaphore's one lease, kept beside its semaphore. */
typedef struct sem_hold {
    zkl_semaphore *s;
    zkl_lease *lease;
} sem_hold;

static zkl_status s_acq(void *o, int t)
{
    sem_hold *h = o;
    return zkl_semaphore_acquire(h->s, t, &h->lease);
}
static bool s_held(void *o)
{
    return zkl_lease_is_valid(((sem_hold *)o)->lease);
}
static zkl_status s_rem(void *o, int64_t *ms)
{
    return zkl_lease_remaining(((sem_hold *)o)->lease, ms);
}
static zkl_status s_tok(void *o, int64_t *t)
{
    (void)o;
    *t = 0; /* leases are not ordered: no token to check */
    return ZKL_OK;
}
static zkl_status s_rel(void *o)
{
    sem_hold *h = o;
    zkl_status st = zkl_lease_return(h->lease);
    h->lease = NULL;
    return st;
}
static const hold_ops sem_ops = {s_acq, s_held, s_rem, s_tok, s_rel};

/* A latch: acquire is await after a start; release is leave. */
static zkl_status l_acq(void *o, int t)
{
    zkl_status st = zkl_latch_start(o, NULL, NULL);
    if (st != ZKL_OK && st != ZKL_EBUSY)
        return st;
    st = zkl_latch_await(o, t);
    if (st != ZKL_OK)
        (void)zkl_latch_leave(o, ZKL_LATCH_SILENT);
    return st;
}
static bool l_held(void *o)
{
    return zkl_latch_is_leader(o);
}
static zkl_status l_rem(void *o, int64_t *ms)
{
    (void)o;
    *ms = -1; /* the latch's lease is not read out: is_leader is its flag */
    return ZKL_OK;
}
static zkl_status l_tok(void *o, int64_t *t)
{
    return zkl_latch_token(o, t);
}
static zkl_status l_rel(void *o)
{
    return zkl_latch_leave(o, ZKL_LATCH_SILENT);
}
static const hold_ops latch_ops = {l_acq, l_held, l_rem, l_tok, l_rel};

/* The counter: read PATH-counter, then set it to value + 1 at the version read, guarded. */
static void increment(zkl_mutex *m, zhandle_t *zh)
{
    char counter[600], buf[32], val[32];
    int len = sizeof buf - 1;
    struct Stat st;
    long v;
    zkl_write w;
    size_t failed;
    zkl_status s;
    snprintf(counter, sizeof counter, "%s-counter", path);
    if (zoo_get(zh, counter, 0, buf, &len, &st) != ZOK)
        return;
    buf[len > 0 ? len : 0] = '\0';
    v = atol(buf) + 1;
    snprintf(val, sizeof val, "%ld", v);
    memset(&w, 0, sizeof w);
    w.type = ZKL_WRITE_SET;
    w.path = counter;
    w.data = val;
    w.len = (int)strlen(val);
    w.version = st.version;
    s = zkl_mutex_guarded_write(m, &w, 1, &failed);
    /* ok: applied; no: not applied (lost, or the version moved); amb: maybe */
    say("C %s %s %ld\n",
        s == ZKL_OK                                                           ? "ok"
        : s == ZKL_ELOST || s == ZKL_ENOTOWNER || (s == ZKL_EZK && w.rc != 0) ? "no"
                                                                              : "amb",
        who, v);
}

/* Hold once: B, L while held, H at the end. */
static void hold_once(const hold_ops *ops, void *obj, zkl_mutex *m, zhandle_t *zh)
{
    int64_t t0, t1, lease_end = INT64_MAX, token = 0, ms, until;
    zkl_status st = ops->acquire(obj, 20000);
    beat();
    if (st != ZKL_OK) {
        if (st != ZKL_ETIMEDOUT && st != ZKL_ECONNLOSS && st != ZKL_ELOST)
            sleep_ms(200); /* (the run's faults: try again, not too fast) */
        return;
    }
    t0 = now_us();
    (void)ops->token(obj, &token);
    say("B %s %s %lld %lld\n", kind, who, (long long)t0, (long long)token);
    until = t0 + (20 + (int64_t)(rand_r(&seed) % 281)) * 1000;
    for (;;) {
        int64_t t = now_us();
        if (!careless && !ops->held(obj))
            break;
        if (ops->remaining(obj, &ms) == ZKL_OK && ms >= 0) {
            lease_end = t + ms * 1000;
            say("L %lld %lld\n", (long long)t, (long long)lease_end);
        } else {
            say("L %lld 0\n", (long long)t); /* (a latch: held as of t) */
        }
        if (m && zh && t < until)
            increment(m, zh);
        if (t >= until || stop)
            break;
        sleep_ms(5);
        beat();
    }
    t1 = now_us();
    if (!careless && !ops->held(obj) && lease_end < t1)
        t1 = lease_end; /* found lost: the belief ended with the lease as last read */
    (void)ops->release(obj);
    say("H %s %s %lld %lld %lld\n", kind, who, (long long)t0, (long long)t1, (long long)token);
}

/* zklock's COMMAND: believed held from its start to its last L. */
static int command_main(void)
{
    int64_t t0 = now_us(), until = t0 + (20 + (int64_t)(rand_r(&seed) % 281)) * 1000;
    say("B command %s %lld %s\n", who, (long long)t0,
        getenv("ZKLOCK_FENCING_TOKEN") ? getenv("ZKLOCK_FENCING_TOKEN") : "0");
    while (now_us() < until) {
        say("L %lld 0\n", (long long)now_us());
        sleep_ms(10);
    }
    say("H command %s %lld %lld %s\n", who, (long long)t0, (long long)now_us(),
        getenv("ZKLOCK_FENCING_TOKEN") ? getenv("ZKLOCK_FENCING_TOKEN") : "0");
    return 0;
}

int main(int argc, char **argv)
{
    const char *zk = NULL;
    zkl_client_options o;
    zkl_client *c;
    zhandle_t *zh = NULL;
    const hold_ops *ops = NULL;
    void *obj = NULL;
    zkl_mutex *m = NULL;
    sem_hold sh = {NULL, NULL};
    int i, sem_max = 2, proxy = 0;
    zkl_status st = ZKL_OK;
    sigset_t usr;
    pthread_t slow;
    zkl_client_options_init(&o);
    o.session_timeout_ms = 10000;
    seed = (unsigned)getpid();
    for (i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--zk"))
            zk = v;
        else if (!strcmp(k, "--kind"))
            kind = v;
        else if (!strcmp(k, "--path"))
            path = v;
        else if (!strcmp(k, "--who"))
            who = v;
        else if (!strcmp(k, "--log"))
            logname = v;
        else if (!strcmp(k, "--session-timeout"))
            o.session_timeout_ms = atoi(v);
        else if (!strcmp(k, "--lag"))
            o.ensemble_lag_ms = atoi(v);
        else if (!strcmp(k, "--sem-max"))
            sem_max = atoi(v);
        else if (!strcmp(k, "--seed"))
            seed = (unsigned)atoi(v);
        else if (!strcmp(k, "--careless"))
            careless = atoi(v);
        else if (!strcmp(k, "--proxy"))
            proxy = atoi(v);
        else
            return fprintf(stderr, "holder: unknown option %s\n", k), 2;
    }
    if (!logname || !*kind || !*who || !*path)
        return fprintf(stderr, "holder: --kind, --path, --who and --log are needed\n"), 2;
    if (!(out = fopen(logname, "a")))
        return perror(logname), 2;
    if (!strcmp(kind, "command"))
        return command_main();
    if (!zk)
        return fprintf(stderr, "holder: --zk is needed\n"), 2;
    if (!strcmp(kind, "read-counter")) { /* print PATH-counter's value, for the checker */
        char counter[600], buf[32];
        int len = sizeof buf - 1;
        zoo_set_debug_level(0);
        zh = zookeeper_init(zk, NULL, 10000, NULL, NULL, 0);
        for (i = 0; zh && i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
            sleep_ms(50);
        snprintf(counter, sizeof counter, "%s-counter", path);
        if (!zh || zoo_get(zh, counter, 0, buf, &len, NULL) != ZOK)
            return 3;
        buf[len > 0 ? len : 0] = '\0';
        printf("%s\n", buf);
        zookeeper_close(zh);
        return 0;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    signal(SIGPIPE, SIG_IGN);
    zkl_log_set(NULL, ZKL_LOG_ERROR, NULL);
    beat(); /* its life begins: a restarted client's gap ends here */
    sigemptyset(&usr);
    sigaddset(&usr, SIGWINCH);
    pthread_sigmask(SIG_BLOCK, &usr, NULL); /* (before any thread: slow_link takes it) */
    if (proxy) {
        const char *via = proxied(zk);
        if (!via || pthread_create(&slow, NULL, slow_link, &usr) != 0)
            return fprintf(stderr, "holder %s: no proxy\n", who), 3;
        zk = via;
    }
    /* A client that starts while no quorum is in reach (a restart during
     * other faults) tries again, as a program would: only bad arguments end it. */
    while ((st = zkl_client_open(zk, &o, &c)) != ZKL_OK) {
        fprintf(stderr, "holder %s: %s\n", who, zkl_errmsg());
        if (st == ZKL_EINVAL || stop)
            return 3;
        sleep_ms(500);
        beat();
    }
    if (!strcmp(kind, "mutex") || !strcmp(kind, "counter")) {
        st = zkl_mutex_create(c, path, &m);
        ops = &mutex_ops;
        obj = m;
        if (!strcmp(kind, "counter")) {
            zoo_set_debug_level(0);
            zh = zookeeper_init(zk, NULL, o.session_timeout_ms, NULL, NULL, 0);
            if (!zh)
                return 3;
            for (i = 0; i < 200 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
                sleep_ms(50);
            {
                char counter[600], *p;
                snprintf(counter, sizeof counter, "%s-counter", path);
                for (p = strchr(counter + 1, '/'); p; p = strchr(p + 1, '/')) { /* parents */
                    *p = '\0';
                    (void)zoo_create(zh, counter, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
                    *p = '/';
                }
                (void)zoo_create(zh, counter, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            }
        } else {
            m = NULL; /* (m is for the counter's writes only) */
        }
    } else if (!strcmp(kind, "read") || !strcmp(kind, "write")) {
        zkl_rwlock *rw;
        st = zkl_rwlock_create(c, path, &rw);
        ops = !strcmp(kind, "read") ? &read_ops : &write_ops;
        obj = rw;
    } else if (!strcmp(kind, "sem")) {
        st = zkl_semaphore_create(c, path, sem_max, &sh.s);
        ops = &sem_ops;
        obj = &sh;
    } else if (!strcmp(kind, "latch") || !strcmp(kind, "selector")) {
        zkl_latch *l;
        st = !strcmp(kind, "latch") ? zkl_latch_create(c, path, who, &l)
                                    : zkl_selector_create(c, path, who, &l);
        ops = &latch_ops;
        obj = l;
    } else {
        return fprintf(stderr, "holder: unknown kind %s\n", kind), 2;
    }
    if (st != ZKL_OK)
        return fprintf(stderr, "holder %s: %s\n", who, zkl_errmsg()), 3;
    while (!stop) {
        hold_once(ops, obj, m, zh);
        sleep_ms((int)(rand_r(&seed) % 50));
        beat();
    }
    if (!strcmp(kind, "latch") || !strcmp(kind, "selector"))
        (void)zkl_latch_destroy(obj);
    else if (!strcmp(kind, "sem"))
        (void)zkl_semaphore_destroy(sh.s);
    else if (ops == &mutex_ops)
        (void)zkl_mutex_destroy(obj);
    else
        (void)zkl_rwlock_destroy(obj);
    (void)zkl_client_close(c);
    if (zh)
        zookeeper_close(zh);
    say("Z %lld end\n", (long long)now_us());
    fclose(out);
    return 0;
}
