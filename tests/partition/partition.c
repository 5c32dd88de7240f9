/*
 * partition.c - exclusion on the clock under real packet loss (issue 18).
 * Rounds of: a holder (a zklock C API process, a zklock command, or a Curator
 * peer) running as a uid of its own, a waiter in this process, then a fault
 * (nftables rules that match only the connections of that uid on loopback,
 * a delay longer than the session timeout, a SIGSTOP of the holder or of the
 * server). The delay is made by the tests' TCP proxy (faultproxy.c), between
 * the holder and the server, because this kernel has no qdiscs (tc netem). Per round: when the
 * holder stopped, when the server's log says it expired the holder's session, when the waiter was
 * granted, the fencing tokens, and that no node is left. Every rule, qdisc and stopped process is
 * undone on every way out, and every round is bounded in time.
 *
 *   partition [--rounds N] [--holders lib,cli,curator,elect,elect-cli,latch-curator,
 *                                     elect-to-curator]
 *             [--faults cut,oneway,delay,
 *             pause-holder,pause-server,ens-follower-cut,ens-leader-cut,ens-pause-follower]
 *             [--session-timeout MS] [--peer CURATOR_PEER] [--zklock ZKLOCK] [--json FILE]
 *
 * ZKL_PARTITION_LOG=1 in the environment prints the waiter's client's log
 * (INFO and up) on standard error.
 *
 * The server is the suite's ($ZKL_TEST_ZK_DIR: connect, server1/pid,
 * server1/zookeeper.log). The ens- faults use the 3-server ensemble of
 * $ZKL_TEST_ZK3_DIR (tickTime 500 ms, syncLimit 2, through $ZKL_ZK_SERVER):
 * the holder talks only to one server, a follower or the leader, the waiter
 * to the other two, and that server is cut off from the other two (nftables
 * on its quorum and election ports, on its existing links to them, and on
 * the links it makes later, matched by a cgroup of the test's own) or
 * SIGSTOPped; holders use T = 10 s and the ensemble lag of 1.25 s
 * (docs/lease.md); Curator holders the same T. Needs root (nft, tc, setuid); without it, or
 * without nft, it says so and exits 77 (skipped). Prints one line per round,
 * a summary per holder and fault, and "partition: N passed, M failed".
 * A zklock holder fails its round if it overlaps the next holder, stops less
 * than 200 ms before the server's expiry, or the lock is not granted again
 * within T + 2 s of the fault; a Curator holder's figures are only reported.
 * Election holders (issue 40) run the same rounds, the ensemble's too: an
 * elected leader (a zklock latch through the C API, "elect", or zklock
 * --elect, "elect-cli", or a Curator LeaderLatch, "latch-curator") against
 * a latch waiting in this process, judged as the lock's holders are. And
 * the reverse of latch-curator (issue 56, item 6): "elect-to-curator", a
 * zklock latch leading with a Curator LeaderLatch (run as root, out of the
 * fault's reach) waiting behind it; its figures are reported, its grant
 * taken when it prints LEADING (up to a pipe's latency late).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "clock.h"
#include "counter.h"
#include "faultproxy.h"
#include "serverlog.h"
#include "zklock/zklock.h"

static char servers[512], zkdir[512], table[64], workdir[256];
static const char *zklock_bin = "zklock", *peer;
static int session_ms = 2000, uid, lag_ms;
/* the ensemble (ZKL_TEST_ZK3_DIR): a server cut off from the others */
static char zk3dir[512], zkserver[512], cgdir[300];
static int isolated = -1; /* server number whose quorum links are cut, or -1 */
static pid_t isolated_pid;
static volatile sig_atomic_t rules_on, qdisc_on;
static pid_t server_pid, stopped_pid;
static FILE *json;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Undo every fault: rules, qdisc, stopped processes. Safe to call twice. */
static void undo(void)
{
    if (stopped_pid > 0)
        kill(stopped_pid, SIGCONT);
    stopped_pid = 0;
    if (rules_on)
        sh("nft delete table inet %s 2>/dev/null", table);
    rules_on = 0;
    if (qdisc_on)
        sh("tc qdisc del dev lo root 2>/dev/null");
    qdisc_on = 0;
    if (isolated_pid > 0) { /* back to the root cgroup, then the test's own goes */
        sh("echo %d > /sys/fs/cgroup/unified/cgroup.procs 2>/dev/null", (int)isolated_pid);
        rmdir(cgdir);
    }
    isolated_pid = 0;
    isolated = -1;
}

static void on_fatal(int sig)
{
    undo();
    signal(sig, SIG_DFL);
    raise(sig);
}

static int nft(const char *rules)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "nft -f - <<'EOF'\n%s\nEOF", rules);
    return system(cmd);
}

/* The table exists from round start (it marks the holder's connections). */
static int rules_start(void)
{
    char r[512];
    snprintf(r, sizeof r,
             "table inet %s {\n chain out {\n  type filter hook output priority 0; policy accept;\n"
             "  meta skuid %d ct mark set 0x5a1\n }\n}",
             table, uid);
    rules_on = 1;
    return nft(r);
}

/* The faults that act on packets. */
static int fault_on(const char *fault)
{
    char r[512];
    if (!strcmp(fault, "cut")) /* both ways: every packet of the holder's connections */
        snprintf(r, sizeof r, "add rule inet %s out ct mark 0x5a1 drop", table);
    else if (!strcmp(fault, "oneway")) /* the server hears nothing; the holder still hears it */
        /* (by connection, not by socket owner: a socket the holder closed
         * has no owner any more, and its retransmissions would get through) */
        snprintf(r, sizeof r, "add rule inet %s out ct mark 0x5a1 ct direction original drop",
                 table);
    else
        return 0;
    return nft(r);
}

/* ---- holders ---- */

typedef struct holder {
    const char *kind; /* lib, cli, curator; counter, naive (counter.h); elect, elect-cli,
                         latch-curator */
    pid_t pid;
    int out;            /* its stdout (lib, curator, counter, naive) */
    char stopfile[300]; /* cli: COMMAND writes its SIGTERM time here */
    /* counter, naive: its increments as it was told, once it said (COUNT) */
    int ok, unknown, refused;
    bool counted;
} holder;

/* The holders that lead an election (a latch waits for them). */
static bool electing(const char *kind)
{
    return !strcmp(kind, "elect") || !strcmp(kind, "elect-cli") || !strcmp(kind, "latch-curator") ||
           !strcmp(kind, "elect-to-curator");
}

/* A zklock latch leads, and a Curator LeaderLatch waits for it (issue 56, item 6). */
static bool curator_waits(const char *kind)
{
    return !strcmp(kind, "elect-to-curator");
}

/* The holders whose figures are only reported (Curator's). */
static bool reported_only(const char *kind)
{
    return !strcmp(kind, "curator") || !strcmp(kind, "latch-curator") || curator_waits(kind);
}

/* The holders run by the zklock command (their COMMAND writes its SIGTERM time). */
static bool commanded(const char *kind)
{
    return !strcmp(kind, "cli") || !strcmp(kind, "elect-cli");
}

/* The holders of the counter workload (counter.h), judged by their counter. */
static bool counting(const char *kind)
{
    return !strcmp(kind, "counter") || !strcmp(kind, "naive");
}

static void drop_privileges(void)
{
    if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
        perror("partition: setuid");
        _exit(70);
    }
}

/* The C API leader: leads, prints HELD, then STOP <ms> the first time is_leader is false. */
static void elect_holder(const char *path)
{
    zkl_client_options o;
    zkl_client *c;
    zkl_latch *l;
    int64_t token = 0;
    zkl_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.ensemble_lag_ms = lag_ms;
    if (zkl_client_open(servers, &o, &c) || zkl_latch_create(c, path, "holder", &l) ||
        zkl_latch_start(l, NULL, NULL) || zkl_latch_await(l, 20000) || zkl_latch_token(l, &token)) {
        fprintf(stderr, "partition: elect holder: %s\n", zkl_errmsg());
        _exit(1);
    }
    printf("HELD %lld\n", (long long)token);
    fflush(stdout);
    while (zkl_latch_is_leader(l))
        sleep_ms(1);
    printf("STOP %lld\n", (long long)wall_ms());
    fflush(stdout);
    _exit(0);
}

/* The C API holder: acquires, prints HELD, then STOP <ms> the first time is_held is false. */
static void lib_holder(const char *path)
{
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m;
    int64_t token = 0;
    zkl_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.ensemble_lag_ms = lag_ms;
    if (zkl_client_open(servers, &o, &c) || zkl_mutex_create(c, path, &m) ||
        zkl_mutex_acquire(m, 20000) || zkl_mutex_fencing_token(m, &token)) {
        fprintf(stderr, "partition: lib holder: %s\n", zkl_errmsg());
        _exit(1);
    }
    printf("HELD %lld\n", (long long)token);
    fflush(stdout);
    while (zkl_mutex_is_held(m))
        sleep_ms(1);
    printf("STOP %lld\n", (long long)wall_ms());
    fflush(stdout);
    _exit(0);
}

static int holder_start(holder *h, const char *kind, const char *path, const char *connect)
{
    int p[2];
    memset(h, 0, sizeof *h);
    h->kind = kind;
    snprintf(h->stopfile, sizeof h->stopfile, "%s/stop-%d", workdir, (int)getpid());
    unlink(h->stopfile);
    if (pipe(p))
        return -1;
    h->pid = fork();
    if (h->pid < 0)
        return -1;
    if (h->pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        drop_privileges();
        if (counting(kind)) { /* a fresh process too */
            char st[32], lag[32];
            snprintf(st, sizeof st, "%d", session_ms);
            snprintf(lag, sizeof lag, "%d", lag_ms);
            execl("/proc/self/exe", "partition", "--counter-holder", connect, st, path, lag,
                  strcmp(kind, "counter") ? "naive" : "guard", (char *)NULL);
            _exit(127);
        }
        if (!strcmp(kind, "lib") || !strcmp(kind, "elect") || curator_waits(kind)) {
            /* a fresh process */
            char st[32], lag[32];
            snprintf(st, sizeof st, "%d", session_ms);
            snprintf(lag, sizeof lag, "%d", lag_ms);
            execl("/proc/self/exe", "partition",
                  !strcmp(kind, "lib") ? "--lib-holder" : "--elect-holder", connect, st, path, lag,
                  (char *)NULL);
            _exit(127);
        }
        if (commanded(kind)) {
            char script[512], st[32], lag[32];
            const char *argv[20];
            int k = 0;
            snprintf(st, sizeof st, "%d", session_ms);
            snprintf(lag, sizeof lag, "%d", lag_ms);
            /* The SIGTERM's time is written by bash's builtins alone, at
             * once: `wait` ends when a trapped signal comes (a foreground
             * `sleep` would hold the trap back), and EPOCHREALTIME needs
             * no `date` process. Under load a forked `date` could still be
             * starting when zklock's SIGKILL came, and the stop went
             * unrecorded (seen in CI, counted as an overlap). */
            snprintf(script, sizeof script,
                     "trap 'echo $(( ${EPOCHREALTIME/./} / 1000 )) >%s; kill $! 2>/dev/null; "
                     "exit 0' TERM; echo HELD $ZKLOCK_FENCING_TOKEN; while :; do sleep 1 & wait "
                     "$!; done",
                     h->stopfile);
            argv[k++] = "zklock";
            argv[k++] = "--zk";
            argv[k++] = connect;
            argv[k++] = "--session-timeout";
            argv[k++] = st;
            if (lag_ms) { /* an ensemble */
                argv[k++] = "--ensemble-lag";
                argv[k++] = lag;
            }
            if (!strcmp(kind, "elect-cli"))
                argv[k++] = "--elect";
            argv[k++] = path;
            argv[k++] = "--";
            argv[k++] = "bash";
            argv[k++] = "-c";
            argv[k++] = script;
            argv[k] = NULL;
            execvp(zklock_bin, (char *const *)argv);
        } else {
            char st[32];
            snprintf(st, sizeof st, "%d", session_ms);
            execlp(peer, "curator-peer", "--zk", connect,
                   !strcmp(kind, "curator") ? "hold-until-lost" : "latch-until-lost", path, st,
                   (char *)NULL);
        }
        _exit(127);
    }
    close(p[1]);
    h->out = p[0];
    return 0;
}

/* Read one line from the holder with a deadline; 0 or -1. */
static int holder_line(holder *h, char *buf, size_t len, int timeout_ms)
{
    size_t n = 0;
    int64_t end = wall_ms() + timeout_ms;
    while (n + 1 < len) {
        fd_set r;
        struct timeval tv;
        int64_t left = end - wall_ms();
        if (left < 0)
            left = 0;
        FD_ZERO(&r);
        FD_SET(h->out, &r);
        tv.tv_sec = left / 1000;
        tv.tv_usec = (left % 1000) * 1000;
        if (select(h->out + 1, &r, NULL, NULL, &tv) <= 0) {
            if (left == 0)
                return -1;
            continue;
        }
        if (read(h->out, buf + n, 1) != 1)
            return -1;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 0;
        }
        n++;
    }
    return -1;
}

/* The holder's stop time (wall ms), 0 if not (yet) known. Curator: its LOST. */
static int64_t holder_stop(holder *h, int64_t *suspended)
{
    char line[256];
    if (commanded(h->kind)) {
        FILE *f = fopen(h->stopfile, "r");
        long long v = 0;
        if (f) {
            if (fscanf(f, "%lld", &v) != 1)
                v = 0;
            fclose(f);
        }
        return v;
    }
    while (holder_line(h, line, sizeof line, 0) == 0) {
        long long v;
        if (sscanf(line, "SUSPENDED %lld", &v) == 1 && suspended)
            *suspended = v;
        if (sscanf(line, "COUNT %d %d %d", &h->ok, &h->unknown, &h->refused) == 3)
            h->counted = true;
        if (sscanf(line, "STOP %lld", &v) == 1 || sscanf(line, "LOST %lld", &v) == 1)
            return v;
    }
    return 0;
}

static void holder_end(holder *h)
{
    int i, status;
    for (i = 0; i < 200; i++) { /* 10 s to finish by itself (zklock exits 75) */
        if (waitpid(h->pid, &status, WNOHANG) == h->pid)
            goto done;
        sleep_ms(50);
    }
    kill(h->pid, SIGKILL);
    waitpid(h->pid, &status, 0);
done:
    if (commanded(h->kind)) /* its COMMAND, should it be left */
        sh("pkill -9 -u %d -f 'sleep 0.01' 2>/dev/null", uid);
    close(h->out);
}

/* ---- the server ---- */

static int64_t expiry_of(int64_t sid, int64_t since)
{
    return zkt_log_expiry_ms(zkdir, sid, since);
}

/* ---- the waiter ---- */

typedef struct waiter {
    zkl_mutex *m;
    zkl_latch *l;      /* an election round's: the waiter is a latch */
    const char *jpath; /* or a Curator LeaderLatch on this path (curator_waits) */
    zhandle_t *jzh;    /* (its node's token is read through this handle) */
    zkl_status st;
    int64_t token;
    zhandle_t *zh; /* counter rounds: its increments once granted (else NULL) */
    const char *path;
    int incs;
    _Atomic int64_t granted_at;
    atomic_int done, release;
} waiter;

static int holder_line(holder *h, char *buf, size_t len, int timeout_ms);

/* A Curator LeaderLatch waits (as root: no fault rule matches it), says when it leads. */
static void curator_waiter(waiter *w)
{
    holder j = {0};
    char line[512];
    int p[2];
    struct Stat st;
    w->st = ZKL_ETIMEDOUT;
    if (pipe(p))
        goto done;
    if ((j.pid = fork()) == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execlp(peer, "curator-peer", "--zk", servers, "latch-hold", w->jpath, "j-waiter", "60",
               (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    j.out = p[0];
    if (j.pid > 0 && holder_line(&j, line, sizeof line, 60000) == 0 &&
        strncmp(line, "LEADING ", 8) == 0) {
        atomic_store(&w->granted_at, wall_ms()); /* (a pipe's latency after its leadership began) */
        if (zoo_exists(w->jzh, line + 8, 0, &st) == ZOK)
            w->token = st.czxid;
        w->st = ZKL_OK;
    }
    atomic_store(&w->done, 1);
    while (w->st == ZKL_OK && !atomic_load(&w->release))
        sleep_ms(5);
    if (j.pid > 0) {
        kill(j.pid, SIGTERM); /* the JVM closes its session: its node goes */
        waitpid(j.pid, NULL, 0);
    }
    close(j.out);
done:
    atomic_store(&w->done, 1);
}

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    if (w->jpath) {
        curator_waiter(w);
        return NULL;
    }
    if (w->l) { /* leads once the holder's term is over */
        w->st = zkl_latch_start(w->l, NULL, NULL);
        w->st = w->st ? w->st : zkl_latch_await(w->l, 30000);
        if (w->st == ZKL_OK) {
            atomic_store(&w->granted_at, wall_ms());
            zkl_latch_token(w->l, &w->token);
        }
        atomic_store(&w->done, 1);
        while (w->st == ZKL_OK && !atomic_load(&w->release))
            sleep_ms(5);
        zkl_latch_leave(w->l, ZKL_LATCH_SILENT);
        return NULL;
    }
    w->st = zkl_mutex_acquire(w->m, 30000);
    if (w->st == ZKL_OK) {
        atomic_store(&w->granted_at, wall_ms());
        zkl_mutex_fencing_token(w->m, &w->token);
        if (w->zh)
            w->incs = pc_increments(w->m, w->zh, w->path, 5);
    }
    atomic_store(&w->done, 1);
    while (w->st == ZKL_OK && !atomic_load(&w->release))
        sleep_ms(5);
    if (w->st == ZKL_OK)
        zkl_mutex_release(w->m);
    return NULL;
}

/* The waiter's lock object goes. */
static void waiter_destroy(waiter *w)
{
    if (w->m)
        zkl_mutex_destroy(w->m);
    if (w->l)
        zkl_latch_destroy(w->l);
    w->m = NULL;
    w->l = NULL;
}

/* ---- rounds ---- */

typedef struct figures {
    int rounds, failed, overlaps, unstopped;
    /* counter rounds: increments applied, lost (overwritten), rounds that lost any */
    int applied, lost, lost_rounds, refused;
    int64_t overlap_max; /* ms both held, among rounds where the holder did stop */
    int64_t slack[512], handoff[512], live[512];
} figures;

/*
 * Count one finished round in fig: its slack, hand-off and liveness, and
 * whether the next holder was granted before the holder stopped (stop 0:
 * it had not stopped). Returns that overlap.
 */
static int figures_add(figures *fig, int64_t cut_at, int64_t stop, int64_t expiry, int64_t granted)
{
    int overlap = !stop || granted <= stop;
    if (fig->rounds < 512) {
        fig->slack[fig->rounds] = expiry && stop ? expiry - stop : -1;
        fig->handoff[fig->rounds] = stop ? granted - stop : -1;
        fig->live[fig->rounds] = granted - cut_at;
    }
    fig->rounds++;
    fig->overlaps += overlap;
    fig->unstopped += !stop;
    if (stop && stop - granted > fig->overlap_max)
        fig->overlap_max = stop - granted;
    return overlap;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t pct(int64_t *v, int n, int p)
{
    int64_t s[512];
    if (!n)
        return 0;
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp64);
    return s[(n - 1) * p / 100];
}

/* Children of path with their owners; the holder's session is the one that is not ours. */
static int64_t other_owner(zhandle_t *zh, const char *path, int64_t ours, int *count)
{
    struct String_vector kids = {0, NULL};
    int64_t owner = 0;
    int i;
    *count = 0;
    if (zoo_get_children(zh, path, 0, &kids) != ZOK)
        return 0;
    *count = kids.count;
    for (i = 0; i < kids.count; i++) {
        char full[600];
        struct Stat st;
        snprintf(full, sizeof full, "%s/%s", path, kids.data[i]);
        if (zoo_exists(zh, full, 0, &st) == ZOK && st.ephemeralOwner != ours)
            owner = st.ephemeralOwner;
    }
    deallocate_String_vector(&kids);
    return owner;
}

/*
 * A counter round's verdict (counter.h), once the holder said what it was
 * told: guarded, the counter equals the increments applied (none lost, none
 * doubled), and those are the ones reported done (give or take the ones
 * whose outcome was unknown); naive, the figures are only reported.
 */
static int counter_verdict(zhandle_t *zh, const char *kind, const char *fault, int n,
                           const char *path, holder *h, const waiter *w, figures *fig,
                           const char **why)
{
    pc_result r;
    int64_t end = wall_ms() + 15000;
    int lost, told;
    while (!h->counted && wall_ms() < end) {
        holder_stop(h, NULL);
        sleep_ms(20);
    }
    if (!h->counted)
        return *why = "the holder never reported its increments", 0;
    if (pc_read(zh, path, &r))
        return *why = "could not read the counter", 0;
    lost = r.applied - (int)r.counter;
    told = h->ok + w->incs;
    fig->rounds++;
    fig->applied += r.applied;
    fig->lost += lost > 0 ? lost : -lost;
    fig->lost_rounds += lost != 0;
    fig->refused += h->refused;
    printf("round %-8s %-12s %3d: counter %ld, increments applied %d (holder %d applied, %d done, "
           "%d unknown, %d refused; waiter %d done), lost %d\n",
           kind, fault, n, r.counter, r.applied, r.applied_holder, h->ok, h->unknown, h->refused,
           w->incs, lost);
    if (json)
        fprintf(json,
                "{\"holder\":\"%s\",\"fault\":\"%s\",\"round\":%d,\"counter\":%ld,\"applied\":%d,"
                "\"done\":%d,\"unknown\":%d,\"refused\":%d,\"lost\":%d}\n",
                kind, fault, n, r.counter, r.applied, told, h->unknown, h->refused, lost);
    if (strcmp(kind, "counter") != 0)
        return 1; /* naive: what the guard prevents, reported */
    if (lost != 0)
        return *why = "an increment was lost or doubled", 0;
    if (r.applied < told || r.applied > told + h->unknown)
        return *why = "the increments applied are not the ones reported done", 0;
    if (w->incs != 5)
        return *why = "the waiter's increments did not all apply", 0;
    return 1;
}

static int round_run(zkl_client *c, zhandle_t *zh, const char *kind, const char *fault, int n,
                     figures *fig)
{
    char path[256], line[256];
    holder h;
    waiter w;
    pthread_t t;
    int64_t cut_at, hsid = 0, expiry = 0, stop = 0, suspended = 0, htoken = 0, end;
    int count = 0, ok = 1, i, curator = reported_only(kind);
    const char *why = "";

    fp_proxy *fp = NULL;

    memset(&w, 0, sizeof w);
    snprintf(path, sizeof path, "/zklpart/%d-%s-%s-%d", (int)getpid(), kind, fault, n);
    if (curator_waits(kind)) {
        w.jpath = path;
        w.jzh = zh;
    } else if (electing(kind) ? zkl_latch_create(c, path, "waiter", &w.l)
                              : zkl_mutex_create(c, path, &w.m))
        return fprintf(stderr, "partition: %s\n", zkl_errmsg()), 0;
    if (!strcmp(fault, "delay") && !(fp = fp_start(servers))) {
        fprintf(stderr, "partition: could not start the proxy\n");
        waiter_destroy(&w);
        return 0;
    }
    if (counting(kind)) {
        w.zh = zh;
        w.path = path;
    }
    if ((counting(kind) && pc_setup(zh, path)) || rules_start() ||
        holder_start(&h, kind, path, fp ? fp_connect_string(fp) : servers)) {
        fprintf(stderr, "partition: could not set up the round\n");
        undo();
        waiter_destroy(&w);
        return 0;
    }
    if (holder_line(&h, line, sizeof line, 30000) || strncmp(line, "HELD ", 5) != 0) {
        ok = 0;
        why = "the holder never held";
        goto out;
    }
    if (!curator || curator_waits(kind))
        htoken = atoll(line + 5);
    if (curator_waits(kind)) /* the leader's session, before the waiter's node is there */
        hsid = other_owner(zh, path, 0, &count);
    pthread_create(&t, NULL, waiter_main, &w);
    for (i = 0; i < (curator_waits(kind) ? 800 : 200) && count < 2; i++) {
        if (curator_waits(kind)) /* (a JVM to start) */
            other_owner(zh, path, 0, &count);
        else
            hsid = other_owner(zh, path, zkl_client_session_id(c), &count);
        sleep_ms(25);
    }
    sleep_ms(300 + rand() % (session_ms / 3)); /* anywhere in the renewal cycle */

    cut_at = wall_ms();
    if (!strcmp(fault, "pause-holder")) {
        stopped_pid = h.pid;
        kill(h.pid, SIGSTOP);
    } else if (!strcmp(fault, "pause-server")) {
        stopped_pid = server_pid;
        kill(server_pid, SIGSTOP);
    } else if (fp) {
        fp_delay(fp, 2 * session_ms); /* every packet, both ways, late by 2 T */
    } else if (fault_on(fault)) {
        ok = 0;
        why = "could not apply the fault";
    }
    end = wall_ms() + session_ms * 3 + 15000;
    while (ok && wall_ms() < end) {
        if (!strcmp(fault, "pause-server") && stopped_pid &&
            wall_ms() - cut_at > session_ms * 3 / 2)
            undo(); /* thaw after 1.5 T: it expires the session then */
        if (!stop)
            stop = holder_stop(&h, &suspended);
        if (!expiry)
            expiry = expiry_of(hsid, cut_at);
        if (atomic_load(&w.done) && expiry &&
            (stop || wall_ms() - atomic_load(&w.granted_at) > 3000))
            break;
        sleep_ms(10);
    }
    undo();
    if (fp)
        fp_delay(fp, 0);
    if (!stop)
        stop = holder_stop(&h, &suspended);
    if (ok && (w.st != ZKL_OK || !atomic_load(&w.done))) {
        ok = 0;
        why = "the waiter was not granted";
    }
    if (ok && counting(kind)) {
        ok = counter_verdict(zh, kind, fault, n, path, &h, &w, fig, &why);
    } else if (ok) {
        int64_t granted = atomic_load(&w.granted_at);
        int64_t slack = expiry && stop ? expiry - stop : -1;
        int64_t handoff = stop ? granted - stop : -1;
        int overlap = figures_add(fig, cut_at, stop, expiry, granted);
        printf("round %-8s %-12s %3d: stop %+6lld ms, server expiry %+6lld, next grant %+6lld "
               "(slack %lld, hand-off %lld)%s%s\n",
               kind, fault, n, (long long)(stop ? stop - cut_at : -1),
               (long long)(expiry ? expiry - cut_at : -1), (long long)(granted - cut_at),
               (long long)slack, (long long)handoff,
               !overlap ? ""
               : stop   ? " OVERLAP"
                        : " OVERLAP (had not stopped when the round ended)",
               curator && suspended ? " (Curator said SUSPENDED before)" : "");
        if (json)
            fprintf(json,
                    "{\"holder\":\"%s\",\"fault\":\"%s\",\"round\":%d,\"stop_ms\":%lld,"
                    "\"expiry_ms\":%lld,\"grant_ms\":%lld,\"overlap\":%s}\n",
                    kind, fault, n, (long long)(stop ? stop - cut_at : -1),
                    (long long)(expiry ? expiry - cut_at : -1), (long long)(granted - cut_at),
                    overlap ? "true" : "false");
        if (!curator) {
            if (overlap) {
                ok = 0;
                why = "two holders at once";
            } else if (slack < 200) {
                ok = 0;
                why = "stopped less than 200 ms before the server's expiry";
            } else if (granted - cut_at >
                       session_ms + 2000 +
                           (!strcmp(fault, "pause-server") ? session_ms * 3 / 2 : 0)) {
                ok = 0;
                why = "not granted again within T + 2 s";
            } else if (w.token <= htoken) {
                ok = 0;
                why = "fencing tokens did not increase";
            }
        }
    }
    atomic_store(&w.release, 1);
    pthread_join(t, NULL);
out:
    undo();
    holder_end(&h);
    zkl_client_drain(c, 5000);
    for (i = 0; i < 100; i++) { /* the holder's node goes with its session */
        other_owner(zh, path, 0, &count);
        if (!count)
            break;
        sleep_ms(100);
    }
    if (count && ok) {
        ok = 0;
        why = "a node was left";
    }
    waiter_destroy(&w);
    fp_stop(fp);
    if (counting(kind))
        pc_cleanup(zh, path);
    if (!ok) {
        fig->failed++;
        printf("round %-8s %-12s %3d: FAILED: %s\n", kind, fault, n, why);
    }
    return ok;
}

/* ---- the ensemble: one server cut off from the others ---- */

typedef struct srv {
    int client, quorum, election;
    pid_t pid;
    char mode[32];
} srv;

/* The three servers of zk3dir: ports from zoo.cfg, pid and mode from zk-server status. */
static int ens_servers(srv s[3])
{
    char cmd[1200], line[512];
    FILE *f;
    int n = 0;
    memset(s, 0, 3 * sizeof *s);
    snprintf(cmd, sizeof cmd, "%s/server1/zoo.cfg", zk3dir);
    if (!(f = fopen(cmd, "r")))
        return -1;
    while (fgets(line, sizeof line, f)) {
        int i, q, e;
        if (sscanf(line, "server.%d=127.0.0.1:%d:%d", &i, &q, &e) == 3 && i >= 1 && i <= 3) {
            s[i - 1].quorum = q;
            s[i - 1].election = e;
        }
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s status --dir %s", zkserver, zk3dir);
    if (!(f = popen(cmd, "r")))
        return -1;
    while (fgets(line, sizeof line, f)) {
        int i, port, pid;
        char mode[32];
        if (sscanf(line, "%d %d %d %31s", &i, &port, &pid, mode) == 4 && i >= 1 && i <= 3) {
            s[i - 1].client = port;
            s[i - 1].pid = pid;
            snprintf(s[i - 1].mode, sizeof s[i - 1].mode, "%s", mode);
            n++;
        }
    }
    pclose(f);
    return n == 3 ? 0 : -1;
}

/* Wait (up to 60 s) until all three serve again, one leader. */
static int ens_healthy(srv s[3])
{
    int i, t;
    for (t = 0; t < 600; t++) {
        int leaders = 0, followers = 0;
        if (ens_servers(s) == 0)
            for (i = 0; i < 3; i++) {
                leaders += !strcmp(s[i].mode, "leader");
                followers += !strcmp(s[i].mode, "follower");
            }
        if (leaders == 1 && followers == 2)
            return 0;
        sleep_ms(100);
    }
    return -1;
}

/*
 * Cut server x off from the other two, keeping its clients: drop the
 * quorum and election traffic on x's own ports, on its existing connections
 * to the others (found with ss by its pid), and on the connections it makes
 * from now on (it is moved into a cgroup of the test's own; nft matches it).
 */
static int ens_isolate(srv s[3], int x)
{
    char r[4096], line[512], cmd[64];
    size_t len;
    FILE *f;
    int i;
    snprintf(cgdir, sizeof cgdir, "/sys/fs/cgroup/unified/zklpart-%d", (int)getpid());
    if (mkdir(cgdir, 0755) != 0 && errno != EEXIST)
        return -1;
    isolated_pid = s[x].pid;
    isolated = x;
    if (sh("echo %d > %s/cgroup.procs", (int)s[x].pid, cgdir))
        return -1;
    len = (size_t)snprintf(r, sizeof r,
                           "add rule inet %s out tcp dport { %d, %d } drop\n"
                           "add rule inet %s out tcp sport { %d, %d } drop\n",
                           table, s[x].quorum, s[x].election, table, s[x].quorum, s[x].election);
    for (i = 0; i < 3; i++)
        if (i != x)
            len += (size_t)snprintf(r + len, sizeof r - len,
                                    "add rule inet %s out socket cgroupv2 level 1 "
                                    "\"unified/zklpart-%d\" tcp dport { %d, %d } drop\n",
                                    table, (int)getpid(), s[i].quorum, s[i].election);
    snprintf(cmd, sizeof cmd, "ss -tnpH");
    if ((f = popen(cmd, "r"))) {
        char want[32];
        snprintf(want, sizeof want, "pid=%d,", (int)s[x].pid);
        while (fgets(line, sizeof line, f) && len + 200 < sizeof r) {
            char st[32], local[64], remote[64];
            int lp, pp, q1, q2;
            const char *colon;
            if (!strstr(line, want) ||
                sscanf(line, "%31s %d %d %63s %63s", st, &q1, &q2, local, remote) != 5)
                continue;
            colon = strrchr(local, ':');
            lp = colon ? atoi(colon + 1) : 0;
            colon = strrchr(remote, ':');
            pp = colon ? atoi(colon + 1) : 0;
            for (i = 0; i < 3; i++)
                if (i != x && (pp == s[i].quorum || pp == s[i].election))
                    len += (size_t)snprintf(r + len, sizeof r - len,
                                            "add rule inet %s out tcp sport %d tcp dport %d drop\n"
                                            "add rule inet %s out tcp sport %d tcp dport %d drop\n",
                                            table, lp, pp, table, pp, lp);
        }
        pclose(f);
    }
    return nft(r);
}

/*
 * One ensemble round: the holder talks only to server x (a follower or the
 * leader), the waiter to the other two; then x is cut off from the others
 * (or SIGSTOPped). The leader that expires the holder's session logs it.
 */
static int ens_round_run(const char *kind, const char *fault, int n, figures *fig)
{
    char path[256], line[256], hconn[64], wconn[128];
    srv s[3];
    holder h;
    waiter w;
    pthread_t t;
    zkl_client *c = NULL;
    zhandle_t *zh = NULL;
    zkl_client_options o;
    int64_t cut_at, hsid = 0, expiry = 0, stop = 0, htoken = 0, end;
    int count = 0, ok = 1, i, x = -1, started = 0, waiting = 0, curator = reported_only(kind);
    const char *why = "";

    memset(&w, 0, sizeof w);
    if (ens_healthy(s))
        return printf("round %-8s %-12s %3d: FAILED: the ensemble is not healthy\n", kind, fault,
                      n),
               fig->failed++, 0;
    for (i = 0; i < 3; i++)
        if (!strcmp(s[i].mode, !strcmp(fault, "ens-leader-cut") ? "leader" : "follower")) {
            x = i;
            break;
        }
    snprintf(hconn, sizeof hconn, "127.0.0.1:%d", s[x].client);
    wconn[0] = '\0';
    for (i = 0; i < 3; i++)
        if (i != x)
            snprintf(wconn + strlen(wconn), sizeof wconn - strlen(wconn), "%s127.0.0.1:%d",
                     wconn[0] ? "," : "", s[i].client);
    snprintf(path, sizeof path, "/zklpart/%d-%s-%s-%d", (int)getpid(), kind, fault, n);
    zkl_client_options_init(&o);
    o.session_timeout_ms = 20000;
    if (zkl_client_open(wconn, &o, &c) ||
        (electing(kind) ? zkl_latch_create(c, path, "waiter", &w.l)
                        : zkl_mutex_create(c, path, &w.m))) {
        ok = 0;
        why = "the waiter could not open";
        goto out;
    }
    zh = zookeeper_init(wconn, NULL, 20000, NULL, NULL, 0);
    for (i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 500; i++)
        sleep_ms(10);
    if (rules_start() || holder_start(&h, kind, path, hconn)) {
        ok = 0;
        why = "could not set up the round";
        goto out;
    }
    started = 1;
    if (holder_line(&h, line, sizeof line, 30000) || strncmp(line, "HELD ", 5) != 0) {
        ok = 0;
        why = "the holder never held";
        goto out;
    }
    if (!curator)
        htoken = atoll(line + 5);
    waiting = pthread_create(&t, NULL, waiter_main, &w) == 0;
    for (i = 0; i < 200 && count < 2; i++) {
        hsid = other_owner(zh, path, zkl_client_session_id(c), &count);
        sleep_ms(25);
    }
    sleep_ms(300 + rand() % (session_ms / 3));

    cut_at = wall_ms();
    if (!strcmp(fault, "ens-pause-follower")) {
        stopped_pid = s[x].pid;
        kill(s[x].pid, SIGSTOP);
    } else if (ens_isolate(s, x)) {
        ok = 0;
        why = "could not cut the server off";
    }
    end = wall_ms() + session_ms * 3 + 20000;
    while (ok && wall_ms() < end) {
        if (!stop)
            stop = holder_stop(&h, NULL);
        for (i = 0; i < 3 && !expiry; i++)
            expiry = zkt_log_expiry_ms_in(zk3dir, i + 1, hsid, cut_at);
        if (atomic_load(&w.done) && expiry &&
            (stop || wall_ms() - atomic_load(&w.granted_at) > 3000))
            break;
        sleep_ms(10);
    }
    undo();
    if (!stop)
        stop = holder_stop(&h, NULL);
    if (ok && (w.st != ZKL_OK || !atomic_load(&w.done))) {
        ok = 0;
        why = "the waiter was not granted";
    }
    if (ok) {
        int64_t granted = atomic_load(&w.granted_at);
        int64_t slack = expiry && stop ? expiry - stop : -1;
        int overlap = figures_add(fig, cut_at, stop, expiry, granted);
        printf("round %-8s %-18s %3d: server %d (%s) stop %+6lld ms, expiry %+6lld, next grant "
               "%+6lld (slack %lld)%s\n",
               kind, fault, n, x + 1, s[x].mode, (long long)(stop ? stop - cut_at : -1),
               (long long)(expiry ? expiry - cut_at : -1), (long long)(granted - cut_at),
               (long long)slack, overlap ? " OVERLAP" : "");
        if (curator) {
            /* reported, never failed */
        } else if (overlap) {
            ok = 0;
            why = "two holders at once";
        } else if (slack < 200) {
            ok = 0;
            why = "stopped less than 200 ms before the leader's expiry";
        } else if (w.token <= htoken) {
            ok = 0;
            why = "fencing tokens did not increase";
        }
    }
    atomic_store(&w.release, 1);
    if (waiting)
        pthread_join(t, NULL);
out:
    undo();
    if (started)
        holder_end(&h);
    if (c) {
        zkl_client_drain(c, 5000);
        for (i = 0; zh && i < 150; i++) {
            other_owner(zh, path, 0, &count);
            if (!count)
                break;
            sleep_ms(100);
        }
        if (count && ok) {
            ok = 0;
            why = "a node was left";
        }
        waiter_destroy(&w);
        zkl_client_close(c);
    }
    if (zh)
        zookeeper_close(zh);
    if (!ok) {
        fig->failed++;
        printf("round %-8s %-18s %3d: FAILED: %s\n", kind, fault, n, why);
    }
    return ok;
}

static int read_file(const char *file, char *buf, size_t len)
{
    FILE *f = fopen(file, "r");
    if (!f || !fgets(buf, (int)len, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

int main(int argc, char **argv)
{
    char holders[256] = "lib,cli",
         faults[256] = "cut,oneway,delay,pause-holder,pause-server,ens-follower-cut,ens-leader-cut,"
                       "ens-pause-follower",
         buf[700];
    int rounds = 1, i, passed = 0, failed = 0;
    zkl_client *c;
    zhandle_t *zh;
    const char *dir = getenv("ZKL_TEST_ZK_DIR"), *dir3 = getenv("ZKL_TEST_ZK3_DIR"),
               *zks = getenv("ZKL_ZK_SERVER");
    if (getenv("ZKL_PARTITION_LOG")) /* the waiter's client's log, on stderr (INFO and up) */
        zkl_log_set(zkl_log_stderr, ZKL_LOG_INFO, NULL);
    if (argc == 7 && !strcmp(argv[1], "--counter-holder")) { /* CONNECT T PATH LAG guard|naive */
        snprintf(servers, sizeof servers, "%s", argv[2]);
        pc_holder_main(argv[2], atoi(argv[3]), atoi(argv[5]), argv[4], !strcmp(argv[6], "guard"));
    }
    if (argc == 6 && (!strcmp(argv[1], "--lib-holder") || !strcmp(argv[1], "--elect-holder"))) {
        snprintf(servers, sizeof servers, "%s", argv[2]); /* CONNECT T PATH LAG */
        session_ms = atoi(argv[3]);
        lag_ms = atoi(argv[5]);
        if (!strcmp(argv[1], "--lib-holder"))
            lib_holder(argv[4]);
        elect_holder(argv[4]);
    }
    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(v), i++;
        else if (!strcmp(argv[i], "--holders"))
            snprintf(holders, sizeof holders, "%s", v), i++;
        else if (!strcmp(argv[i], "--faults"))
            snprintf(faults, sizeof faults, "%s", v), i++;
        else if (!strcmp(argv[i], "--session-timeout"))
            session_ms = atoi(v), i++;
        else if (!strcmp(argv[i], "--peer"))
            peer = v, i++;
        else if (!strcmp(argv[i], "--zklock"))
            zklock_bin = v, i++;
        else if (!strcmp(argv[i], "--json")) {
            json = fopen(v, "w");
            i++;
        } else {
            fprintf(stderr, "partition: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!dir || snprintf(zkdir, sizeof zkdir, "%s", dir) < 0)
        return fprintf(stderr, "partition: ZKL_TEST_ZK_DIR is not set\n"), 2;
    if (geteuid() != 0 || sh("command -v nft >/dev/null && command -v tc >/dev/null") != 0) {
        printf("partition: skipped: needs root, nft and tc (scripts/deps nftables iproute2)\n");
        return 77;
    }
    snprintf(buf, sizeof buf, "%s/connect", zkdir);
    if (read_file(buf, servers, sizeof servers))
        return fprintf(stderr, "partition: no %s\n", buf), 2;
    {
        char pidf[700], p[32];
        snprintf(pidf, sizeof pidf, "%s/server1/pid", zkdir);
        if (read_file(pidf, p, sizeof p) == 0)
            server_pid = atoi(p);
    }
    if (dir3 && zks) {
        snprintf(zk3dir, sizeof zk3dir, "%s", dir3);
        snprintf(zkserver, sizeof zkserver, "%s", zks);
    }
    uid = 60000 + (int)(getpid() % 5000);
    snprintf(table, sizeof table, "zklpart_%d", (int)getpid());
    snprintf(workdir, sizeof workdir, "/tmp/zklpart-%d", (int)getpid());
    mkdir(workdir, 0777);
    chmod(workdir, 0777);
    if (strchr(zklock_bin, '/')) {
        /* the cli holder runs as another uid (drop_privileges), which may
         * not reach the build tree (a checkout under a 0700 directory, such
         * as mktemp -d makes): it runs a copy, here */
        static char copy[300];
        snprintf(copy, sizeof copy, "%s/zklock", workdir);
        if (sh("cp '%s' '%s' && chmod 755 '%s'", zklock_bin, copy, copy) != 0) {
            fprintf(stderr, "partition: cannot copy %s to %s\n", zklock_bin, copy);
            sh("rm -rf %s", workdir);
            return 2;
        }
        zklock_bin = copy;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* a round's line shows even if a later one hangs */
    signal(SIGINT, on_fatal);
    signal(SIGTERM, on_fatal);
    signal(SIGHUP, on_fatal);
    signal(SIGALRM, on_fatal);
    alarm((unsigned)(rounds * 60 * 6 + 120)); /* bounded, whatever happens */
    atexit(undo);
    srand((unsigned)getpid());
    zoo_set_debug_level((ZooLogLevel)0);
    if (zkl_client_open(servers, NULL, &c))
        return fprintf(stderr, "partition: %s\n", zkl_errmsg()), 1;
    zh = zookeeper_init(servers, NULL, 10000, NULL, NULL, 0);
    for (i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 500; i++)
        sleep_ms(10);

    {
        char *hs, *hsave = NULL, hl[256];
        snprintf(hl, sizeof hl, "%s", holders);
        for (hs = strtok_r(hl, ",", &hsave); hs; hs = strtok_r(NULL, ",", &hsave)) {
            char *fs, *fsave = NULL, fl[256];
            if (reported_only(hs) && !peer) {
                printf("partition: no --peer: Curator rounds skipped\n");
                continue;
            }
            snprintf(fl, sizeof fl, "%s", faults);
            for (fs = strtok_r(fl, ",", &fsave); fs; fs = strtok_r(NULL, ",", &fsave)) {
                figures fig;
                int r;
                if (!strcmp(fs, "pause-holder") && (!strcmp(hs, "lib") || !strcmp(hs, "elect")))
                    continue; /* a paused C program cannot stop itself: the command's watchdog can
                               */
                memset(&fig, 0, sizeof fig);
                if (!strncmp(fs, "ens-", 4) && counting(hs))
                    continue; /* the counter runs on the standalone server's faults */
                if (!strncmp(fs, "ens-", 4) && !zk3dir[0]) {
                    printf("partition: no ZKL_TEST_ZK3_DIR and ZKL_ZK_SERVER: %s skipped\n", fs);
                    continue;
                }
                for (r = 0; r < rounds; r++) {
                    int good;
                    if (!strncmp(fs, "ens-", 4)) { /* T = 10 s, lag of tick 500 x syncLimit 2 */
                        int t0 = session_ms;
                        session_ms = 10000;
                        lag_ms = 1250;
                        good = ens_round_run(hs, fs, r, &fig);
                        session_ms = t0;
                        lag_ms = 0;
                    } else {
                        good = round_run(c, zh, hs, fs, r, &fig);
                    }
                    if (good)
                        passed++;
                    else
                        failed++;
                }
                if (counting(hs)) {
                    printf(
                        "summary %-8s %-12s rounds %d, failed %d; increments applied %d, lost %d "
                        "in %d rounds; holder writes refused %d\n",
                        hs, fs, fig.rounds, fig.failed, fig.applied, fig.lost, fig.lost_rounds,
                        fig.refused);
                    if (!strcmp(hs, "naive")) /* reported, never failed */
                        failed -= fig.failed, passed += fig.failed;
                    continue;
                }
                printf("summary %-8s %-12s rounds %d, overlaps %d (longest %lld ms, %d never "
                       "stopped), failed %d; slack p0 %lld p50 %lld p100 %lld ms; next grant "
                       "after stop p0 %lld p50 %lld ms; granted again after the fault p100 %lld "
                       "ms\n",
                       hs, fs, fig.rounds, fig.overlaps, (long long)fig.overlap_max, fig.unstopped,
                       fig.failed, (long long)pct(fig.slack, fig.rounds, 0),
                       (long long)pct(fig.slack, fig.rounds, 50),
                       (long long)pct(fig.slack, fig.rounds, 100),
                       (long long)pct(fig.handoff, fig.rounds, 0),
                       (long long)pct(fig.handoff, fig.rounds, 50),
                       (long long)pct(fig.live, fig.rounds, 100));
                if (reported_only(hs)) /* reported, never failed */
                    failed -= fig.failed, passed += fig.failed;
            }
        }
    }
    undo();
    zookeeper_close(zh);
    zkl_client_close(c);
    sh("rm -rf %s", workdir);
    if (json)
        fclose(json);
    printf("partition: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
