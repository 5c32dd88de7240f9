/*
 * benchutil.c - see benchutil.h.
 */
#define _GNU_SOURCE /* readlink, nftw, getrandom */
#include "benchutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zklock/zklock.h"

extern char **environ;

int64_t bu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------ samples ---- */

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fputs("benchmark: out of memory\n", stderr);
        abort();
    }
    return q;
}

static void reserve(bu_samples *s, size_t want)
{
    size_t cap = s->cap ? s->cap : 4096;
    if (want <= s->cap)
        return;
    while (cap < want)
        cap *= 2;
    s->v = xrealloc(s->v, cap * sizeof *s->v);
    s->cap = cap;
}

void bu_samples_add(bu_samples *s, int64_t ns)
{
    reserve(s, s->n + 1);
    s->v[s->n++] = ns;
}

void bu_samples_append(bu_samples *dst, const bu_samples *src)
{
    if (!src->n)
        return;
    reserve(dst, dst->n + src->n);
    memcpy(dst->v + dst->n, src->v, src->n * sizeof *src->v);
    dst->n += src->n;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void bu_samples_sort(bu_samples *s)
{
    if (s->n)
        qsort(s->v, s->n, sizeof *s->v, cmp_i64);
}

int64_t bu_pct_us(const bu_samples *sorted, double p)
{
    double rank;
    size_t i;
    if (!sorted->n)
        return 0;
    rank = p * (double)sorted->n;
    i = (size_t)rank;
    if ((double)i < rank) /* ceil without libm */
        i++;
    i = i ? i - 1 : 0;
    if (i >= sorted->n)
        i = sorted->n - 1;
    return sorted->v[i] / 1000;
}

void bu_samples_free(bu_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

uint64_t bu_seed(void)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof x, 0) != (ssize_t)sizeof x)
        x = (uint64_t)bu_now_ns() ^ (uint64_t)(uintptr_t)&x;
    return x ? x : 0x9e3779b97f4a7c15ULL;
}

double bu_rand01(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0; /* 2^53 */
}

long bu_rss_kb(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ---------------------------------------------------------------- 4lw ---- */

char *bu_4lw(const char *cs, const char *word)
{
    char host[256], *port, *buf = NULL;
    size_t len = strcspn(cs, ",/"), n = 0, cap = 0;
    struct addrinfo hints, *res = NULL, *ai;
    struct timeval tv = {5, 0};
    int fd = -1;
    if (len == 0 || len >= sizeof host)
        return NULL;
    memcpy(host, cs, len);
    host[len] = '\0';
    port = strrchr(host, ':');
    if (!port)
        return NULL;
    *port++ = '\0';
    if (host[0] == '[' && port - host >= 3 && port[-2] == ']') { /* [v6]:port */
        port[-2] = '\0';
        memmove(host, host + 1, strlen(host + 1) + 1);
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return NULL;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        /* Timeouts so a hung server cannot hang the benchmark (connect
         * honours SO_SNDTIMEO on Linux). */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return NULL;
    if (write(fd, word, strlen(word)) != (ssize_t)strlen(word)) {
        close(fd);
        return NULL;
    }
    for (;;) { /* the server answers and closes */
        ssize_t r;
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 8192;
            buf = xrealloc(buf, cap);
        }
        r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf || n == 0) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* The value of key in a mntr reply, or -1. */
static int64_t mntr_value(const char *reply, const char *key)
{
    const char *line;
    size_t n = strlen(key);
    for (line = reply; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, key, n) == 0 && line[n] == '\t')
            return strtoll(line + n + 1, NULL, 10);
    return -1;
}

void bu_mntr_counts(const char *connect, int64_t *packets, int64_t *notifications)
{
    /* watchers triggered, by the kind of event (ZooKeeper 3.6+) */
    static const char *const sent[] = {
        "zk_sum_node_created_watch_count", "zk_sum_node_deleted_watch_count",
        "zk_sum_node_changed_watch_count", "zk_sum_node_children_watch_count"};
    char *reply = bu_4lw(connect, "mntr");
    int64_t sum = 0;
    size_t i;
    *packets = *notifications = -1;
    if (!reply)
        return;
    *packets = mntr_value(reply, "zk_packets_received");
    for (i = 0; i < sizeof sent / sizeof *sent && sum >= 0; i++) {
        int64_t v = mntr_value(reply, sent[i]);
        sum = v < 0 ? -1 : sum + v;
    }
    *notifications = sum;
    free(reply);
}

int64_t bu_mntr_get(const char *connect, const char *key)
{
    char *reply = bu_4lw(connect, "mntr");
    int64_t v = reply ? mntr_value(reply, key) : -1;
    free(reply);
    return v;
}

bool bu_server_stats_reset(const char *connect)
{
    char *reply = bu_4lw(connect, "srst");
    bool ok = reply && strstr(reply, "reset") != NULL;
    free(reply);
    return ok;
}

int64_t bu_packets_received(const char *connect)
{
    int64_t packets, notifications;
    bu_mntr_counts(connect, &packets, &notifications);
    return packets;
}

/* ---------------------------------------------------------------- raw ---- */

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    bu_raw *r = ctx;
    (void)zh;
    (void)path;
    if (type != ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&r->mu);
    r->state = state;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int bu_raw_open(bu_raw *r, const char *connect, int session_timeout_ms)
{
    struct timespec until;
    int rc = 0;
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    /* (the system's libzookeeper_mt logs INFO lines by default; zklock's own
     * client is a private copy, so zkl_log_set no longer quiets this one) */
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    r->zh = zookeeper_init(connect, raw_watcher, session_timeout_ms, NULL, r, 0);
    if (!r->zh) {
        fprintf(stderr, "zookeeper_init(%s): %s\n", connect, strerror(errno));
        return -1;
    }
    /* The client setting zklock uses (src/session/client.c): no DNS lookup on
     * every poll, so the raw floor and the naive variants pay the same
     * per-request client cost as zklock does. */
    zoo_set_servers_resolution_delay(r->zh, -1);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 15;
    pthread_mutex_lock(&r->mu);
    while (r->state != ZOO_CONNECTED_STATE && rc == 0)
        rc = pthread_cond_timedwait(&r->cv, &r->mu, &until);
    pthread_mutex_unlock(&r->mu);
    if (r->state != ZOO_CONNECTED_STATE) {
        fprintf(stderr, "cannot connect to %s\n", connect);
        bu_raw_close(r);
        return -1;
    }
    return 0;
}

void bu_raw_close(bu_raw *r)
{
    if (r->zh)
        zookeeper_close(r->zh);
    r->zh = NULL;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

int bu_mkdirs(zhandle_t *zh, const char *path)
{
    char buf[1024];
    size_t i, len = strlen(path);
    int rc = ZOK;
    if (len == 0 || len >= sizeof buf || path[0] != '/')
        return ZBADARGUMENTS;
    memcpy(buf, path, len + 1);
    for (i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        buf[i] = '\0';
        rc = zoo_create(zh, buf, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        buf[i] = path[i];
        if (rc != ZOK && rc != ZNODEEXISTS)
            return rc;
    }
    return ZOK;
}

int bu_delete_tree(zhandle_t *zh, const char *path)
{
    int attempt, rc = ZOK;
    /* A few rounds: a background delete or a lagging close may add or drop
     * children while this walks. */
    for (attempt = 0; attempt < 5; attempt++) {
        struct String_vector kids = {0, NULL};
        int i;
        rc = zoo_get_children(zh, path, 0, &kids);
        if (rc == ZNONODE)
            return ZOK;
        if (rc != ZOK)
            return rc;
        for (i = 0; i < kids.count; i++) {
            char child[1024];
            snprintf(child, sizeof child, "%s/%s", path, kids.data[i]);
            bu_delete_tree(zh, child);
        }
        deallocate_String_vector(&kids);
        rc = zoo_delete(zh, path, -1);
        if (rc == ZOK || rc == ZNONODE)
            return ZOK;
        if (rc != ZNOTEMPTY)
            return rc;
    }
    return rc;
}

void bu_cleanup_path(const char *connect, const char *path)
{
    bu_raw r;
    int rc;
    if (bu_raw_open(&r, connect, 15000) != 0)
        return;
    rc = bu_delete_tree(r.zh, path);
    if (rc != ZOK)
        fprintf(stderr, "cleanup of %s: %s\n", path, zerror(rc));
    bu_raw_close(&r);
}

void bu_fresh_path(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "/lockbench/%s-%08x", what, (unsigned)(bu_seed() & 0xffffffffu));
}

/* ------------------------------------------------------------- server ---- */

static pthread_mutex_t srv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t srv_cv = PTHREAD_COND_INITIALIZER;
static bool srv_starting; /* zk-server start is running */
static char srv_script[PATH_MAX];
static char srv_dir[PATH_MAX];
static bool srv_running;
static const char *prog_name = "benchmark";

/* Run argv with signals unblocked, stdin from /dev/null; capture up to n-1
 * bytes of its stdout into out if out is not NULL. Returns its exit status,
 * or -1 if it could not be run or died of a signal. */
static int run_cmd(char *const argv[], char *out, size_t n)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none;
    int pipefd[2] = {-1, -1}, status, rc;
    size_t got = 0;
    pid_t pid;
    if (out && pipe2(pipefd, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (out)
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    rc = posix_spawn(&pid, argv[0], &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (out)
        close(pipefd[1]);
    if (rc != 0) {
        if (out)
            close(pipefd[0]);
        fprintf(stderr, "%s: cannot run %s: %s\n", prog_name, argv[0], strerror(rc));
        return -1;
    }
    if (out) {
        for (;;) {
            ssize_t r = read(pipefd[0], out + got, n - 1 - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
            if (got == n - 1) { /* full: drain the rest, so the child never blocks */
                char sink[512];
                while (read(pipefd[0], sink, sizeof sink) > 0)
                    ;
                break;
            }
        }
        out[got] = '\0';
        close(pipefd[0]);
    }
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void bu_server_stop(void)
{
    pthread_mutex_lock(&srv_mu);
    /* A stop while zk-server start still runs would find nothing to stop and
     * leave what start then launches: wait for the start to end. */
    while (srv_starting)
        pthread_cond_wait(&srv_cv, &srv_mu);
    if (srv_running) {
        char *argv[] = {srv_script, "stop", "--dir", srv_dir, NULL};
        srv_running = false;
        if (run_cmd(argv, NULL, 0) != 0)
            fprintf(stderr, "%s: zk-server stop --dir %s failed; the directory is kept\n",
                    prog_name, srv_dir);
        else
            nftw(srv_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    pthread_mutex_unlock(&srv_mu);
}

static bool executable(const char *p)
{
    return access(p, X_OK) == 0;
}

static bool find_script(void)
{
    const char *env = getenv("ZKL_ZK_SERVER");
    char exe[PATH_MAX], *slash;
    ssize_t len;
    int up;
    if (env && *env) {
        snprintf(srv_script, sizeof srv_script, "%s", env);
        return executable(srv_script);
    }
    /* Beside the executable: build/benchmarks/x, build/bench/benchmarks/x, bin/x. */
    len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        if ((slash = strrchr(exe, '/')))
            *slash = '\0';
        for (up = 1; up <= 4; up++) {
            char cand[PATH_MAX + 64];
            size_t off = 0;
            int k;
            off += (size_t)snprintf(cand, sizeof cand, "%s", exe);
            for (k = 0; k < up && off < sizeof cand; k++)
                off += (size_t)snprintf(cand + off, sizeof cand - off, "/..");
            snprintf(cand + off, sizeof cand - off, "/scripts/zk-server");
            if (executable(cand) && realpath(cand, srv_script))
                return true;
        }
    }
#ifdef ZKL_SOURCE_DIR
    snprintf(srv_script, sizeof srv_script, "%s/scripts/zk-server", ZKL_SOURCE_DIR);
    if (executable(srv_script))
        return true;
#endif
    return false;
}

int bu_server_start(char *connect, size_t n)
{
    const char *tmp = getenv("TMPDIR");
    char out[4096];
    char *argv[] = {srv_script, "start", "--dir", srv_dir, NULL};
    int rc;
    if (!find_script()) {
        fprintf(stderr, "%s: scripts/zk-server not found (set ZKL_ZK_SERVER, or pass --zk)\n",
                prog_name);
        return -1;
    }
    pthread_mutex_lock(&srv_mu);
    snprintf(srv_dir, sizeof srv_dir, "%s/lockbench-zk.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(srv_dir)) {
        pthread_mutex_unlock(&srv_mu);
        fprintf(stderr, "%s: mkdtemp: %s\n", prog_name, strerror(errno));
        return -1;
    }
    /* Mark it running before it is: a signal during start must still stop
     * what has started (zk-server stop is idempotent). */
    srv_running = srv_starting = true;
    setenv("ZK_JVM_OPTS", "-XX:TieredStopAtLevel=4", 0);
    pthread_mutex_unlock(&srv_mu);
    atexit(bu_server_stop);
    fprintf(stderr, "%s: starting a throwaway ZooKeeper in %s\n", prog_name, srv_dir);
    rc = run_cmd(argv, out, sizeof out);
    pthread_mutex_lock(&srv_mu);
    srv_starting = false;
    pthread_cond_broadcast(&srv_cv);
    pthread_mutex_unlock(&srv_mu);
    out[strcspn(out, "\r\n")] = '\0';
    if (rc != 0 || !out[0]) {
        fprintf(stderr, "%s: zk-server start failed (status %d)\n", prog_name, rc);
        bu_server_stop();
        return -1;
    }
    snprintf(connect, n, "%s", out);
    return 0;
}

static void *signal_thread(void *arg)
{
    sigset_t *set = arg;
    int sig = 0;
    while (sigwait(set, &sig) != 0)
        ;
    fprintf(stderr, "%s: %s, stopping\n", prog_name, strsignal(sig));
    bu_server_stop();
    _exit(128 + sig);
}

void bu_signals_init(const char *prog)
{
    static sigset_t set;
    pthread_t t;
    prog_name = prog;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (pthread_create(&t, NULL, signal_thread, &set) == 0)
        pthread_detach(t);
}

/* ------------------------------------------------------------- warm-up ---- */

struct warm {
    zkl_client *c;
    zkl_mutex *m;
    int64_t deadline;
};

static void *warm_worker(void *arg)
{
    struct warm *w = arg;
    while (bu_now_ns() < w->deadline) {
        if (zkl_mutex_acquire(w->m, 10000) != ZKL_OK)
            break;
        zkl_mutex_release(w->m);
    }
    return NULL;
}

/* Four sessions contend on one lock (creates, listings, watches, deletes) and
 * two more each take a lock of their own (the multi that carries a release's
 * delete with the next create), so that the server's JIT has compiled every
 * path a workload takes before the first library is measured. */
void bu_server_warmup(const char *connect, double seconds)
{
    enum { CONTENDING = 4, N = 6 };
    struct warm w[N];
    pthread_t t[N];
    char path[256], lock[300];
    int i, started = 0;
    if (seconds <= 0)
        return;
    bu_fresh_path(path, sizeof path, "warmup");
    memset(w, 0, sizeof w);
    for (i = 0; i < N; i++) {
        zkl_client_options o;
        zkl_client_options_init(&o);
        o.session_timeout_ms = 15000;
        snprintf(lock, sizeof lock, "%s/lock-%d", path, i < CONTENDING ? 0 : i);
        if (zkl_client_open(connect, &o, &w[i].c) != ZKL_OK ||
            zkl_mutex_create(w[i].c, lock, &w[i].m) != ZKL_OK)
            break;
        w[i].deadline = bu_now_ns() + (int64_t)(seconds * 1e9);
    }
    for (i = 0; i < N && w[i].m; i++) {
        if (pthread_create(&t[i], NULL, warm_worker, &w[i]) != 0)
            break;
        started = i + 1;
    }
    for (i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < N; i++) {
        if (w[i].m)
            zkl_mutex_destroy(w[i].m);
        if (w[i].c)
            zkl_client_close(w[i].c);
    }
    bu_cleanup_path(connect, path);
}

void bu_logging(bool verbose)
{
    zkl_log_set(verbose ? zkl_log_stderr : NULL, ZKL_LOG_WARN, NULL);
}

double bench_parse_num(const char *prog, const char *opt, const char *s, double min)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || v < min) {
        fprintf(stderr, "%s: bad value for %s: '%s'\n", prog, opt, s);
        exit(2);
    }
    return v;
}

#ifdef LOCKBENCH_TUNED
#include "base/fault.h"
#include "core/engine/inproc.h"

static const struct {
    const char *name;
    unsigned part; /* ZKL__HINT_*, 0: eventfd */
} parts[] = {{"seen", ZKL__HINT_SEEN},
             {"made", ZKL__HINT_MADE},
             {"join", ZKL__HINT_JOIN},
             {"bell", ZKL__HINT_BELL},
             {"eventfd", 0}};
static atomic_uint hints_on = ZKL__HINTS_ALL;
static atomic_bool eventfd_off;

/* The fault hook of the tuned builds: no fault, the room's parts as asked. */
static int tuned_answer(zkl_client *c, zkl__fault_site site, void *io)
{
    (void)c;
    (void)io;
    if (site == ZKL__FAULT_HINTS)
        return (int)atomic_load(&hints_on);
    if (site == ZKL__FAULT_MANY_CLIENTS)
        return atomic_load(&eventfd_off) ? INT_MAX : -1;
    return site >= ZKL__FAULT_HOLD_BACK_US ? -1 : 0;
}

int bu_tuned_off(const char *prog, const char *list, char *name, size_t cap)
{
    char buf[128], *save = NULL, *t;
    size_t i, n;
    snprintf(buf, sizeof buf, "%s", list);
    snprintf(name, cap, "zklock-off");
    for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < sizeof parts / sizeof *parts && strcmp(parts[i].name, t) != 0; i++)
            ;
        if (i == sizeof parts / sizeof *parts) {
            fprintf(stderr, "%s: --off: unknown part '%s'\n", prog, t);
            return -1;
        }
        if (parts[i].part)
            atomic_fetch_and(&hints_on, ~parts[i].part);
        else
            atomic_store(&eventfd_off, true);
        n = strlen(name);
        snprintf(name + n, cap - n, "%c%s", n == strlen("zklock-off") ? '-' : '+', t);
    }
    n = strlen(name);
    snprintf(name + n, cap - n, "-%s", ZKLOCK_VERSION);
    zkl__fault_set(tuned_answer);
    return 0;
}
#else
int bu_tuned_off(const char *prog, const char *list, char *name, size_t cap)
{
    (void)list;
    (void)name;
    (void)cap;
    fprintf(stderr, "%s: --off needs the tuned build (%s_tuned, with the fault hook)\n", prog,
            prog);
    return -1;
}
#endif
