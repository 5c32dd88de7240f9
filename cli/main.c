/*
 * main.c - the zklock command: flock(1) on ZooKeeper. Take the lock, run
 * COMMAND while holding it, release, exit with COMMAND's status.
 *
 * Signals: SIGINT, SIGTERM and SIGHUP are blocked in every thread and taken
 * by one thread with sigwait(), which acts by phase: while connecting it
 * exits (nothing to clean up yet); while waiting for the lock it cancels the
 * wait (the library deletes our node); while COMMAND runs it passes the
 * signal on. A session lost while COMMAND runs ends COMMAND with SIGTERM:
 * the lock no longer protects it.
 *
 * The lease (issue 18): COMMAND runs in a process group of its own, watched
 * by a separate watchdog process (watchdog.c) that a feeder thread here
 * keeps told of each renewed lease end. If the renewals stop coming (the
 * link is cut, or this process is paused or killed), the watchdog stops
 * COMMAND's group before the lease ends, without needing this process to
 * run. When the library reports LEASE_EXPIRED or LOST, COMMAND's group gets
 * SIGTERM from here too.
 *
 * DESIGN: threads here are the main thread (acquire, spawn, wait), the
 * signal thread, the feeder and the client's worker (hold-state callback);
 * `mu` guards phase, child, pending_signal and stop_signal; the feeder only
 * reads the lease and writes to the pipe; nothing is called with `mu` held
 * that could wait for another of these threads.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "json.h"
#include "watchdog.h"
#include "zklock/zklock.h"

extern char **environ;

enum phase { CONNECTING, WAITING, RUNNING, DONE };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static enum phase phase = CONNECTING;
static pid_t child;
static zkl_watchdog *watchdog; /* while COMMAND may run */
static int pending_signal;     /* arrived while COMMAND was being started */
static int stop_signal;        /* ended the wait */
static zkl_client *client;
static zkl_latch *latch; /* --elect: the signal thread leaves it to end the wait */
static atomic_int session_lost;
static atomic_int lease_expired;
static atomic_int term_lost; /* --elect: told LOST (the session gone, or the node deleted) */

static void *signal_thread(void *arg)
{
    sigset_t *set = arg;
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0)
            continue;
        pthread_mutex_lock(&mu);
        switch (phase) {
        case CONNECTING:
            /* no node exists yet: nothing to clean up */
            _exit(128 + sig);
        case WAITING:
            stop_signal = sig;
            zkl_client_cancel(client);
            if (latch) /* its await ends: ZKL_ECANCELED */
                zkl_latch_leave(latch, ZKL_LATCH_SILENT);
            break;
        case RUNNING:
            if (child > 0)
                kill(child, sig);
            else
                pending_signal = sig;
            break;
        case DONE: break;
        }
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void set_phase(enum phase p)
{
    pthread_mutex_lock(&mu);
    phase = p;
    pthread_mutex_unlock(&mu);
}

/*
 * Runs on the client's worker thread. The rule for an unasked end (zklock(1),
 * "When the lock is lost"): COMMAND's group is sent SIGTERM now, and the
 * watchdog sends SIGKILL the margin (kill_after) later, whatever lease ends
 * come after: renewals go on for a new wait or session, not for this hold.
 */
static void on_hold_state(void *lock, zkl_conn_state st, void *ud)
{
    (void)lock;
    (void)ud;
    if (st != ZKL_STATE_LOST && st != ZKL_STATE_LEASE_EXPIRED)
        return;
    atomic_store(st == ZKL_STATE_LOST ? &session_lost : &lease_expired, 1);
    pthread_mutex_lock(&mu);
    if (phase == RUNNING && child > 0)
        kill(-child, SIGTERM); /* its process group */
    if (phase == RUNNING && watchdog)
        (void)zkl_watchdog_stop_now(watchdog); /* SIGKILL after the margin */
    pthread_mutex_unlock(&mu);
}

/* What COMMAND runs under, in messages: the lock, or (--elect) the leadership. */
static const char *held_thing(const zkl_cli_args *a)
{
    return a->mode == ZKL_CLI_ELECT ? "the leadership" : "the lock";
}

/* --elect: leadership ended unasked (on the client's delivery: its worker). */
static void on_leadership(zkl_latch *l, zkl_leader_event ev, int64_t token, void *ud)
{
    (void)token;
    if (ev != ZKL_LEADER_LOST && ev != ZKL_LEADER_LEASE_ENDED)
        return;
    /* the latch has joined again: it leaves, so that it leads no more while
     * COMMAND, which runs once, is being stopped */
    (void)zkl_latch_leave(l, ZKL_LATCH_SILENT);
    if (ev == ZKL_LEADER_LOST) { /* its session, or its node (an operator's delete) */
        atomic_store(&term_lost, 1);
        on_hold_state(NULL, ZKL_STATE_LOST, ud);
    } else
        on_hold_state(NULL, ZKL_STATE_LEASE_EXPIRED, ud);
}

/* One lock object of any mode, behind four calls. */
typedef struct lock {
    zkl_cli_mode mode;
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semaphore *sem;
    zkl_lease *lease;
    zkl_latch *latch;
} lock;

/* --elect's participant id: --id, else HOST:PID. */
static const char *participant_id(const zkl_cli_args *a, char *buf, size_t len)
{
    char host[256];
    if (a->id)
        return a->id;
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(buf, len, "%s:%d", host, (int)getpid());
    return buf;
}

static zkl_status lock_create(lock *l, const zkl_cli_args *a)
{
    zkl_status st;
    memset(l, 0, sizeof *l);
    l->mode = a->mode;
    switch (a->mode) {
    case ZKL_CLI_MUTEX:
        st = zkl_mutex_create(client, a->path, &l->m);
        return st ? st : zkl_mutex_on_state(l->m, on_hold_state, NULL);
    case ZKL_CLI_READ:
    case ZKL_CLI_WRITE:
        st = zkl_rwlock_create(client, a->path, &l->rw);
        return st ? st : zkl_rwlock_on_state(l->rw, on_hold_state, NULL);
    case ZKL_CLI_SEMAPHORE:
        st = zkl_semaphore_create(client, a->path, a->leases, &l->sem);
        return st ? st : zkl_semaphore_on_state(l->sem, on_hold_state, NULL);
    case ZKL_CLI_ELECT: {
        char id[300];
        st = zkl_latch_create(client, a->path, participant_id(a, id, sizeof id), &l->latch);
        pthread_mutex_lock(&mu);
        latch = l->latch;
        pthread_mutex_unlock(&mu);
        return st;
    }
    }
    return ZKL_EINVAL;
}

/* Take l; its fencing token and the full path of its node (malloc'd) for COMMAND. */
static zkl_status lock_acquire(lock *l, int timeout_ms, int64_t *token, char **node)
{
    zkl_status st;
    switch (l->mode) {
    case ZKL_CLI_MUTEX:
        st = zkl_mutex_acquire(l->m, timeout_ms);
        st = st ? st : zkl_mutex_fencing_token(l->m, token);
        return st ? st : zkl_mutex_node(l->m, node);
    case ZKL_CLI_READ:
        st = zkl_rwlock_read_acquire(l->rw, timeout_ms);
        st = st ? st : zkl_rwlock_read_fencing_token(l->rw, token);
        return st ? st : zkl_rwlock_read_node(l->rw, node);
    case ZKL_CLI_WRITE:
        st = zkl_rwlock_write_acquire(l->rw, timeout_ms);
        st = st ? st : zkl_rwlock_write_fencing_token(l->rw, token);
        return st ? st : zkl_rwlock_write_node(l->rw, node);
    case ZKL_CLI_SEMAPHORE:
        st = zkl_semaphore_acquire(l->sem, timeout_ms, &l->lease);
        if (st != ZKL_OK)
            return st;
        *token = zkl_lease_fencing_token(l->lease);
        *node = strdup(zkl_lease_node(l->lease));
        return *node ? ZKL_OK : ZKL_ENOMEM;
    case ZKL_CLI_ELECT: /* the term: its token and node */
        st = zkl_latch_start(l->latch, on_leadership, NULL);
        st = st ? st : zkl_latch_await(l->latch, timeout_ms < 0 ? ZKL_WAIT_FOREVER : timeout_ms);
        st = st ? st : zkl_latch_token(l->latch, token);
        return st ? st : zkl_latch_node(l->latch, node);
    }
    return ZKL_EINVAL;
}

static zkl_status lock_release(lock *l)
{
    switch (l->mode) {
    case ZKL_CLI_MUTEX: return zkl_mutex_release(l->m);
    case ZKL_CLI_READ: return zkl_rwlock_read_release(l->rw);
    case ZKL_CLI_WRITE: return zkl_rwlock_write_release(l->rw);
    case ZKL_CLI_SEMAPHORE: return zkl_lease_return(l->lease);
    case ZKL_CLI_ELECT: return zkl_latch_leave(l->latch, ZKL_LATCH_SILENT);
    }
    return ZKL_EINVAL;
}

static void lock_destroy(lock *l)
{
    if (l->m)
        zkl_mutex_destroy(l->m);
    if (l->rw)
        zkl_rwlock_destroy(l->rw);
    if (l->sem)
        zkl_semaphore_destroy(l->sem);
    if (l->latch) {
        pthread_mutex_lock(&mu);
        latch = NULL;
        pthread_mutex_unlock(&mu);
        zkl_latch_destroy(l->latch);
    }
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *kind_name(char kind)
{
    return kind == 'R'   ? "read"
           : kind == 'W' ? "write"
           : kind == 'S' ? "lease"
           : kind == 'X' ? "other"
                         : "mutex";
}

/* Whether v[i] is a child that is not a lock node, in the way of lock nodes
 * (zkl_participant.holds says so for those). */
static bool blocks(const zkl_participant *p)
{
    return p->kind == 'X' && p->holds;
}

static const char *status_word(const zkl_participant *p)
{
    if (p->kind == 'X')
        return blocks(p) ? "BLOCKS" : "OTHER";
    return p->holds ? "HOLDS" : "WAITS";
}

/* One line per participant: HOLDS|WAITS|BLOCKS|OTHER KIND TOKEN NODE DATA (data escaped). */
static void list_text(const zkl_participant *v, size_t n)
{
    size_t i, k;
    for (i = 0; i < n; i++) {
        printf("%s %s %lld %s ", status_word(&v[i]), kind_name(v[i].kind), (long long)v[i].token,
               v[i].node);
        for (k = 0; k < v[i].data_len; k++) { /* data may be binary: print it safely */
            unsigned char ch = (unsigned char)v[i].data[k];
            if (ch >= 0x20 && ch < 0x7f && ch != '\\')
                putchar(ch);
            else
                printf("\\x%02x", ch);
        }
        putchar('\n');
    }
}

/*
 * One JSON document: {"path": P, "participants": [{"node", "kind", "holds",
 * "blocks", "token", "owner", "data", "data_encoding"}, ...]} in queue order (kind "other",
 * blocks true: a child that is not a lock node, in the way of those after it). owner is the session
 * id in hex, as a string (64 bits do not fit a JSON number's exact range).
 */
static void list_json(const char *path, const zkl_participant *v, size_t n)
{
    size_t i;
    fputs("{\"path\":", stdout);
    zkl_cli_json_string(stdout, path, strlen(path));
    fputs(",\"participants\":[", stdout);
    for (i = 0; i < n; i++) {
        printf("%s{\"node\":", i ? "," : "");
        zkl_cli_json_string(stdout, v[i].node, strlen(v[i].node));
        printf(",\"kind\":\"%s\",\"holds\":%s,\"blocks\":%s,\"token\":%lld,\"owner\":"
               "\"0x%llx\",",
               kind_name(v[i].kind), v[i].holds && v[i].kind != 'X' ? "true" : "false",
               blocks(&v[i]) ? "true" : "false", (long long)v[i].token,
               (unsigned long long)v[i].owner);
        zkl_cli_json_data(stdout, v[i].data ? v[i].data : "", v[i].data ? v[i].data_len : 0);
        putchar('}');
    }
    fputs("]}\n", stdout);
}

static int list_participants(const zkl_cli_args *a)
{
    zkl_participant *v;
    size_t n;
    zkl_status st = zkl_inspect(client, a->path, &v, &n);
    if (st != ZKL_OK) {
        fprintf(stderr, "zklock: --list %s: %s\n", a->path, zkl_errmsg());
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    if (a->json)
        list_json(a->path, v, n);
    else
        list_text(v, n);
    zkl_participants_free(v, n);
    return 0;
}

/* One leader as --leader prints it: "LEADER ID TOKEN NODE" (the id escaped
 * as --list's data), or "NONE"; with --json {"path", "leader": {"id",
 * "token", "node"} or null, "participants"}. */
static void show_leader(const zkl_cli_args *a, const zkl_leader *ld)
{
    size_t k;
    if (a->json) {
        fputs("{\"path\":", stdout);
        zkl_cli_json_string(stdout, a->path, strlen(a->path));
        fputs(",\"leader\":", stdout);
        if (ld->present) {
            fputs("{\"node\":", stdout);
            zkl_cli_json_string(stdout, ld->node, strlen(ld->node));
            printf(",\"token\":%lld,", (long long)ld->token);
            zkl_cli_json_data(stdout, ld->id, ld->id_len);
            putchar('}');
        } else {
            fputs("null", stdout);
        }
        printf(",\"participants\":%zu}\n", ld->members);
    } else if (ld->present) {
        fputs("LEADER ", stdout);
        for (k = 0; k < ld->id_len; k++) { /* the id may hold anything: print it safely */
            unsigned char ch = (unsigned char)ld->id[k];
            if (ch > 0x20 && ch < 0x7f && ch != '\\')
                putchar(ch);
            else
                printf("\\x%02x", ch);
        }
        printf(" %lld %s\n", (long long)ld->token, ld->node);
    } else {
        puts("NONE");
    }
    fflush(stdout);
}

static int print_leader(const zkl_cli_args *a)
{
    zkl_leader ld;
    if (zkl_leader_get(client, a->path, &ld) != ZKL_OK) {
        fprintf(stderr, "zklock: --leader %s: %s\n", a->path, zkl_errmsg());
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    show_leader(a, &ld);
    zkl_leader_clear(&ld);
    return 0;
}

/* --leader --watch: the observer's end, under mu (its message, if not a signal's). */
static bool watch_ended;
static char watch_why[512];
static pthread_cond_t watch_cv = PTHREAD_COND_INITIALIZER;

static void on_observed(zkl_observer *o, zkl_status st, const char *msg, const zkl_leader *ld,
                        void *ud)
{
    const zkl_cli_args *a = ud;
    (void)o;
    if (st == ZKL_OK) {
        show_leader(a, ld);
        return;
    }
    pthread_mutex_lock(&mu);
    watch_ended = true;
    snprintf(watch_why, sizeof watch_why, "%s", msg);
    pthread_cond_signal(&watch_cv);
    pthread_mutex_unlock(&mu);
}

/* A line per change until SIGINT or SIGTERM (exit 0; the observer stops
 * with the client's cancel), or the observer's own end (69). */
static int watch_leader(const zkl_cli_args *a)
{
    zkl_observer *o;
    int sig;
    set_phase(WAITING); /* a signal cancels: the observer's last word ends the wait */
    if (zkl_leader_observe(client, a->path, on_observed, (void *)a, &o) != ZKL_OK) {
        fprintf(stderr, "zklock: --leader --watch %s: %s\n", a->path, zkl_errmsg());
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    pthread_mutex_lock(&mu);
    while (!watch_ended)
        pthread_cond_wait(&watch_cv, &mu);
    phase = DONE;
    sig = stop_signal;
    pthread_mutex_unlock(&mu);
    zkl_observer_destroy(o);
    if (sig == SIGINT || sig == SIGTERM)
        return 0;
    if (sig)
        return 128 + sig;
    fprintf(stderr, "zklock: --leader --watch %s: %s\n", a->path, watch_why);
    return ZKL_CLI_EXIT_UNAVAILABLE;
}

/* "NAME=value", malloc'd (NULL: no memory). */
static char *env_var(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *v = malloc(n);
    if (v)
        snprintf(v, n, "%s=%s", name, value);
    return v;
}

/* Whether environment entry e sets one of the variables zklock gives COMMAND. */
static bool ours(const char *e)
{
    return strncmp(e, "ZKLOCK_FENCING_TOKEN=", 21) == 0 || strncmp(e, "ZKLOCK_PATH=", 12) == 0 ||
           strncmp(e, "ZKLOCK_NODE=", 12) == 0;
}

/* Start COMMAND with the lock's variables; returns its pid, or -errno. */
static pid_t spawn_command(char **command, const char *path, int64_t token, const char *node)
{
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    size_t n = 0, i;
    char **env, tokvar[64], *pathvar, *nodevar;
    pid_t pid;
    int rc;
    while (environ[n])
        n++;
    env = calloc(n + 4, sizeof *env);
    pathvar = env_var("ZKLOCK_PATH", path);
    nodevar = env_var("ZKLOCK_NODE", node ? node : "");
    if (!env || !pathvar || !nodevar) {
        free(env);
        free(pathvar);
        free(nodevar);
        return -ENOMEM;
    }
    snprintf(tokvar, sizeof tokvar, "ZKLOCK_FENCING_TOKEN=%lld", (long long)token);
    for (i = n = 0; environ[i]; i++)
        if (!ours(environ[i]))
            env[n++] = environ[i];
    env[n++] = tokvar;
    env[n++] = pathvar;
    env[n++] = nodevar;
    env[n] = NULL;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0); /* a group of its own, for the watchdog */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    rc = posix_spawnp(&pid, command[0], NULL, &attr, command, env);
    posix_spawnattr_destroy(&attr);
    free(env);
    free(pathvar);
    free(nodevar);
    return rc ? -rc : pid;
}

/* The feeder: tells the watchdog each renewed lease end, until stopped. */
typedef struct feeder {
    zkl_watchdog *wd;
    int period_ms;
    atomic_int stop;
} feeder;

static void *feed(void *arg)
{
    feeder *f = arg;
    int64_t sent = 0, end;
    struct timespec ts = {f->period_ms / 1000, (long)(f->period_ms % 1000) * 1000000L};
    while (!atomic_load(&f->stop)) {
        if (zkl_client_lease_end(client, &end) == ZKL_OK && end != sent &&
            zkl_watchdog_renew(f->wd, end) == 0)
            sent = end;
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int64_t boot_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Give the terminal to pgid if we are its foreground (SIGTTOU blocked meanwhile). */
static void terminal_to(pid_t pgid)
{
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(STDIN_FILENO, pgid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* One run of the command, from the lock to COMMAND's end. */
typedef struct run {
    zkl_cli_args a;
    lock l;
    bool have_lock; /* l was created (and must be destroyed) */
    int64_t start, token;
    char *node; /* our lock node's full path (ZKLOCK_NODE) */
    int grace, kill_after;
    zkl_watchdog wd;
    feeder fd;
    pthread_t feeder_thread;
    bool feeding;
} run;

/* Exit status "go on" of the steps below; any other value ends the run with it. */
#define GO_ON (-1)

/* SIGINT, SIGTERM and SIGHUP go to the signal thread alone. */
static int start_signals(sigset_t *set)
{
    pthread_t t;
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL); /* every thread made from here on inherits it */
    signal(SIGPIPE, SIG_IGN);
    if (pthread_create(&t, NULL, signal_thread, set) != 0) {
        fprintf(stderr, "zklock: cannot start the signal thread\n");
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    return GO_ON;
}

/* Let go of what the run holds: the lock (released if held), the client. */
static void teardown(run *r, bool release)
{
    if (release)
        lock_release(&r->l);
    if (r->have_lock)
        lock_destroy(&r->l);
    free(r->node);
    r->node = NULL;
    zkl_client_close(client);
}

/* The lag the lease gives up, as given or found at open; GO_ON, or 64 if the server would not say.
 */
static int lag_found(run *r)
{
    zkl_lag_source source;
    int lag = zkl_client_ensemble_lag(client, &source);
    if (lag >= 0)
        r->a.ensemble_lag_ms = lag;
    if (source != ZKL_LAG_UNKNOWN)
        return GO_ON;
    fprintf(stderr,
            "zklock: no lease can be bounded: the server does not tell its settings (it is one "
            "of an ensemble, or answers neither srvr nor conf, which its "
            "4lw.commands.whitelist leaves out). Give --ensemble-lag MS, its syncLimit x "
            "tickTime + tickTime/2 (0 for a standalone server), or allow conf\n");
    return ZKL_CLI_EXIT_USAGE;
}

/* Open the client (--list ends here), check the lease fits, make the lock. */
static int open_client(run *r)
{
    zkl_client_options o;
    zkl_status st;
    char err[256];
    int code;
    zkl_client_options_init(&o);
    o.session_timeout_ms = r->a.session_timeout_ms;
    o.lease_margin_ms = r->a.lease_margin_ms;
    o.ensemble_lag_ms = r->a.ensemble_lag_ms;
    o.connect_timeout_ms = 15000;
    if (r->a.timeout_ms > 0 && r->a.timeout_ms < o.connect_timeout_ms)
        o.connect_timeout_ms = r->a.timeout_ms;
    st = zkl_client_open(r->a.hosts, &o, &client);
    if (st != ZKL_OK) {
        fprintf(stderr, "zklock: %s\n", zkl_errmsg());
        return st == ZKL_EINVAL ? ZKL_CLI_EXIT_USAGE : ZKL_CLI_EXIT_UNAVAILABLE;
    }
    if (r->a.list || r->a.leader) {
        code = r->a.list    ? list_participants(&r->a)
               : r->a.watch ? watch_leader(&r->a)
                            : print_leader(&r->a);
        teardown(r, false);
        return code;
    }
    if ((code = lag_found(r)) != GO_ON) {
        teardown(r, false);
        return code;
    }
    /* the server may grant less than was asked: the lease must still fit */
    if (zkl_cli_lease_fit(&r->a, zkl_client_session_timeout(client), &r->grace, &r->kill_after, err,
                          sizeof err)) {
        fprintf(stderr, "zklock: the server granted a session timeout of %d ms: %s\n",
                zkl_client_session_timeout(client), err);
        teardown(r, false);
        return ZKL_CLI_EXIT_USAGE;
    }
    /* tell the watchdog of renewals well inside its grace */
    r->fd.period_ms = r->grace / 4 < 50 ? (r->grace / 4 > 1 ? r->grace / 4 : 1) : 50;
    st = lock_create(&r->l, &r->a);
    r->have_lock = true;
    if (st != ZKL_OK) {
        fprintf(stderr, "zklock: %s\n", zkl_errmsg());
        teardown(r, false);
        return st == ZKL_EINVAL ? ZKL_CLI_EXIT_USAGE : ZKL_CLI_EXIT_UNAVAILABLE;
    }
    return GO_ON;
}

/* Wait for the lock within what is left of the timeout. */
static int take_lock(run *r)
{
    int timeout = r->a.timeout_ms, sig;
    int64_t t0;
    zkl_status st;
    set_phase(WAITING);
    if (timeout > 0) {
        int64_t left = r->a.timeout_ms - (now_ms() - r->start);
        timeout = left > 0 ? (int)left : 0;
    }
    t0 = now_ms();
    st = lock_acquire(&r->l, timeout, &r->token, &r->node);
    if (st == ZKL_OK) {
        if (r->a.verbose) /* as util-linux's flock --verbose */
            fprintf(stderr, "zklock: getting lock took %.6f seconds\n",
                    (double)(now_ms() - t0) / 1000.0);
        return GO_ON;
    }
    pthread_mutex_lock(&mu);
    phase = DONE;
    sig = stop_signal;
    pthread_mutex_unlock(&mu);
    if (st == ZKL_ETIMEDOUT) {
        /* the library names a child that is not a lock node in the way */
        const char *why = strstr(zkl_errmsg(), ": the node ahead in line");
        if (r->a.mode == ZKL_CLI_ELECT)
            fprintf(stderr, "zklock: %s: not leader in time\n", r->a.path);
        else
            fprintf(stderr, "zklock: %s: lock not acquired%s%s\n", r->a.path,
                    r->a.timeout_ms == 0 ? " (it is held)" : " in time", why ? why : "");
    } else if (st != ZKL_ECANCELED)
        fprintf(stderr, "zklock: %s: %s\n", r->a.path, zkl_errmsg());
    zkl_client_drain(client, 5000); /* make sure our node is gone */
    teardown(r, false);
    if (st == ZKL_ECANCELED && sig)
        return 128 + sig;
    return st == ZKL_ETIMEDOUT ? r->a.conflict_code : ZKL_CLI_EXIT_UNAVAILABLE;
}

/* The watchdog exits (1: it had stopped COMMAND); no one tells it anything after. */
static int end_watchdog(run *r)
{
    pthread_mutex_lock(&mu);
    watchdog = NULL;
    pthread_mutex_unlock(&mu);
    return zkl_watchdog_finish(&r->wd);
}

/* COMMAND starts only with time left on the lease, under the watchdog and its feeder. */
static int start_watch(run *r)
{
    int64_t lease_end = 0;
    int rc;
    if (zkl_client_lease_end(client, &lease_end) != ZKL_OK ||
        lease_end - r->grace - r->kill_after <= boot_ms()) {
        set_phase(DONE);
        fprintf(stderr, "zklock: %s: the lease of %s ran out before COMMAND could start\n",
                r->a.path, held_thing(&r->a));
        teardown(r, true);
        return ZKL_CLI_EXIT_LOST;
    }
    rc = zkl_watchdog_start(&r->wd, lease_end, r->grace, r->kill_after);
    if (rc < 0) {
        set_phase(DONE);
        fprintf(stderr, "zklock: cannot start the lease watchdog: %s\n", strerror(-rc));
        teardown(r, true);
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    pthread_mutex_lock(&mu);
    watchdog = &r->wd;
    pthread_mutex_unlock(&mu);
    r->feeding = pthread_create(&r->feeder_thread, NULL, feed, &r->fd) == 0;
    if (!r->feeding) { /* unfed, the watchdog would stop COMMAND at the first lease end */
        set_phase(DONE);
        end_watchdog(r);
        fprintf(stderr, "zklock: cannot start the lease feeder thread\n");
        teardown(r, true);
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    return GO_ON;
}

/*
 * Start COMMAND in its own group, under the watchdog, passing on what came
 * meanwhile; 0 and *sig if a terminating signal ended the wait first. The
 * rule (zklock(1), SIGNALS): a signal is never lost, and COMMAND never
 * starts after one arrived. The signal thread records a signal in the wait
 * (stop_signal) even when the lock was granted at that moment, and the
 * phase becomes RUNNING here, under mu, only if none came: any later one
 * goes to COMMAND (pending_signal until it is spawned).
 */
static pid_t spawn_watched(run *r, bool foreground, int *sig)
{
    pid_t pid;
    pthread_mutex_lock(&mu);
    *sig = stop_signal;
    if (!*sig)
        phase = RUNNING;
    pthread_mutex_unlock(&mu);
    if (*sig)
        return 0;
    if (r->a.verbose)
        fprintf(stderr, "zklock: executing %s\n", r->a.command[0]);
    pid = spawn_command(r->a.command, r->a.path, r->token, r->node);
    pthread_mutex_lock(&mu);
    child = pid > 0 ? pid : 0;
    if (pid > 0) {
        zkl_watchdog_target(&r->wd, pid);
        if (foreground)
            terminal_to(pid);
    }
    if (pid > 0 && pending_signal)
        kill(pid, pending_signal);
    if (pid > 0 && (atomic_load(&session_lost) || atomic_load(&lease_expired))) {
        kill(-pid, SIGTERM);
        (void)zkl_watchdog_stop_now(&r->wd);
    }
    pthread_mutex_unlock(&mu);
    return pid;
}

/* How many processes of group pgid there are besides its leader (from /proc). */
static int group_others(pid_t pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[512], *rp;
        long pid = strtol(e->d_name, &rp, 10), grp = 0;
        char state = '?';
        FILE *f;
        size_t got;
        if (*rp || pid <= 0 || pid == pgid)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        if (!(f = fopen(path, "r")))
            continue;
        got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        /* pid (comm) state ppid pgrp: comm may hold anything, up to the last ')';
         * a zombie (Z, X) runs nothing: it waits only for its reaper */
        if ((rp = strrchr(buf, ')')) != NULL && sscanf(rp + 1, " %c %*d %ld", &state, &grp) == 2 &&
            grp == pgid && state != 'Z' && state != 'X')
            n++;
    }
    closedir(d);
    return n;
}

/*
 * COMMAND has ended (not yet reaped, so its group id stays its own): what
 * it left running in its group (a shell's `daemon &`) would go on with the
 * lock released, so it is stopped first: SIGTERM, then SIGKILL after the
 * margin. A process that left the group (setsid) is out of reach
 * (zklock(1), "Processes COMMAND leaves behind").
 */
static void stop_left_behind(pid_t pgid, int kill_after_ms)
{
    int64_t end = now_ms() + kill_after_ms;
    if (group_others(pgid) == 0)
        return;
    kill(-pgid, SIGTERM);
    while (group_others(pgid) > 0 && now_ms() < end)
        poll(NULL, 0, 20);
    if (group_others(pgid) > 0)
        kill(-pgid, SIGKILL);
    while (group_others(pgid) > 0 && now_ms() < end + 1000) /* gone, as far as a kill goes */
        poll(NULL, 0, 20);
}

/* Run COMMAND to its end: its exit status; *fired: zkl_watchdog_finish's (1, 2: it stopped
 * COMMAND). */
static int run_command(run *r, int *fired)
{
    bool foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
    int sig = 0;
    pid_t pid = spawn_watched(r, foreground, &sig);
    siginfo_t info;
    int status;
    if (sig) { /* the wait ended by a signal as the lock came: COMMAND never starts */
        *fired = end_watchdog(r);
        return 128 + sig;
    }
    if (pid < 0) {
        fprintf(stderr, "zklock: %s: %s\n", r->a.command[0], strerror(-pid));
        *fired = end_watchdog(r);
        return -pid == ENOENT ? 127 : 126;
    }
    /* ended, not yet reaped: its group id cannot be reused before the
     * watchdog has let go of it */
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    stop_left_behind(pid, r->kill_after);
    *fired = end_watchdog(r);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (foreground)
        terminal_to(getpgrp());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* After COMMAND: stop the feeder, release, and say whether the lock held throughout. */
static int finish(run *r, int code, int fired)
{
    set_phase(DONE);
    if (r->feeding) {
        atomic_store(&r->fd.stop, 1);
        pthread_join(r->feeder_thread, NULL);
    }
    teardown(r, true);
    if (fired != 1 && !atomic_load(&lease_expired) && atomic_load(&session_lost)) {
        fprintf(stderr,
                "zklock: %s: %s while COMMAND ran; %s no longer protected it (COMMAND was sent "
                "SIGTERM, and SIGKILL if it ran %d ms more)\n",
                r->a.path,
                atomic_load(&term_lost)
                    ? "leadership was lost (the session is gone, or the node was deleted)"
                    : "the ZooKeeper session was lost",
                held_thing(&r->a), r->kill_after);
        return ZKL_CLI_EXIT_LOST;
    }
    if (fired > 0 || atomic_load(&lease_expired)) { /* the lease ran out first */
        fprintf(stderr,
                "zklock: %s: the lease of %s ran out while COMMAND ran; %s no longer "
                "protected it (COMMAND was sent SIGTERM, and SIGKILL if it ran %d ms more)\n",
                r->a.path, held_thing(&r->a), held_thing(&r->a), r->kill_after);
        return ZKL_CLI_EXIT_LOST;
    }
    return code;
}

int main(int argc, char **argv)
{
    static run r; /* zeroed; the signal thread's set below lives as long */
    static sigset_t set;
    char err[256], *shell;
    int code, fired = 0;

    r.start = now_ms();
    r.wd.pid = -1;
    r.wd.fd = -1;
    r.fd.wd = &r.wd;
    r.fd.period_ms = 50;
    code = zkl_cli_parse(argc, argv, getenv("ZKLOCK_SERVERS"), &r.a, err, sizeof err);
    if (code) {
        fprintf(stderr, "zklock: %s (see 'zklock --help')\n", err);
        return code;
    }
    shell = getenv("SHELL");
    if (r.a.shell_string && shell && *shell)
        r.a.shell_argv[0] = shell; /* flock(1)'s choice of shell */
    if (r.a.help) {
        fputs(zkl_cli_usage, stdout);
        return 0;
    }
    if (r.a.version) {
        printf("zklock %s\n", ZKLOCK_VERSION);
        return 0;
    }
    if ((code = start_signals(&set)) != GO_ON || (code = open_client(&r)) != GO_ON ||
        (code = take_lock(&r)) != GO_ON || (code = start_watch(&r)) != GO_ON)
        return code;
    code = run_command(&r, &fired);
    return finish(&r, code, fired);
}
