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
#include <errno.h>
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
#include "watchdog.h"
#include "zklock/zklock.h"

extern char **environ;

enum phase { CONNECTING, WAITING, RUNNING, DONE };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static enum phase phase = CONNECTING;
static pid_t child;
static int pending_signal; /* arrived while COMMAND was being started */
static int stop_signal;    /* ended the wait */
static zkl_client *client;
static atomic_int session_lost;
static atomic_int lease_expired;

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

/* Runs on the client's worker thread. */
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
    pthread_mutex_unlock(&mu);
}

/* One lock object of any mode, behind four calls. */
typedef struct lock {
    zkl_cli_mode mode;
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semaphore *sem;
    zkl_lease *lease;
} lock;

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
    }
    return ZKL_EINVAL;
}

static zkl_status lock_acquire(lock *l, int timeout_ms, int64_t *token)
{
    zkl_status st;
    switch (l->mode) {
    case ZKL_CLI_MUTEX:
        st = zkl_mutex_acquire(l->m, timeout_ms);
        return st ? st : zkl_mutex_fencing_token(l->m, token);
    case ZKL_CLI_READ:
        st = zkl_rwlock_read_acquire(l->rw, timeout_ms);
        return st ? st : zkl_rwlock_read_fencing_token(l->rw, token);
    case ZKL_CLI_WRITE:
        st = zkl_rwlock_write_acquire(l->rw, timeout_ms);
        return st ? st : zkl_rwlock_write_fencing_token(l->rw, token);
    case ZKL_CLI_SEMAPHORE:
        st = zkl_semaphore_acquire(l->sem, timeout_ms, &l->lease);
        if (st == ZKL_OK)
            *token = zkl_lease_fencing_token(l->lease);
        return st;
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
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int list_participants(const zkl_cli_args *a)
{
    zkl_participant *v;
    size_t n, i;
    zkl_status st = zkl_inspect(client, a->path, &v, &n);
    if (st != ZKL_OK) {
        fprintf(stderr, "zklock: --list %s: %s\n", a->path, zkl_errmsg());
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    for (i = 0; i < n; i++) {
        const char *kind = v[i].kind == 'R'   ? "read"
                           : v[i].kind == 'W' ? "write"
                           : v[i].kind == 'S' ? "lease"
                                              : "mutex";
        size_t k;
        printf("%s %s %lld %s ", v[i].holds ? "HOLDS" : "WAITS", kind, (long long)v[i].token,
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
    zkl_participants_free(v, n);
    return 0;
}

/* Start COMMAND with the lock's variables; returns its pid, or -errno. */
static pid_t spawn_command(char **command, const char *path, int64_t token)
{
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    size_t n = 0, i;
    char **env, tokvar[64], *pathvar;
    pid_t pid;
    int rc;
    while (environ[n])
        n++;
    env = calloc(n + 3, sizeof *env);
    pathvar = malloc(strlen(path) + sizeof "ZKLOCK_PATH=");
    if (!env || !pathvar) {
        free(env);
        free(pathvar);
        return -ENOMEM;
    }
    snprintf(tokvar, sizeof tokvar, "ZKLOCK_FENCING_TOKEN=%lld", (long long)token);
    sprintf(pathvar, "ZKLOCK_PATH=%s", path);
    for (i = n = 0; environ[i]; i++)
        if (strncmp(environ[i], "ZKLOCK_FENCING_TOKEN=", 21) != 0 &&
            strncmp(environ[i], "ZKLOCK_PATH=", 12) != 0)
            env[n++] = environ[i];
    env[n++] = tokvar;
    env[n++] = pathvar;
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

int main(int argc, char **argv)
{
    zkl_cli_args a;
    zkl_client_options o;
    char err[256];
    sigset_t set;
    pthread_t sigthread;
    lock l;
    int64_t start = now_ms(), token = 0;
    int rc, timeout, status, code, grace = 0, kill_after = 0, fired = 0;
    bool foreground;
    zkl_status st;
    pid_t pid;
    zkl_watchdog wd = {-1, -1};
    feeder fd = {&wd, 50, 0};
    pthread_t feeder_thread;
    bool feeding = false;
    int64_t lease_end = 0;

    rc = zkl_cli_parse(argc, argv, getenv("ZKLOCK_SERVERS"), &a, err, sizeof err);
    if (rc) {
        fprintf(stderr, "zklock: %s (see 'zklock --help')\n", err);
        return rc;
    }
    if (a.help) {
        fputs(zkl_cli_usage, stdout);
        return 0;
    }
    if (a.version) {
        printf("zklock %s\n", ZKLOCK_VERSION);
        return 0;
    }

    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread made from here on inherits it */
    signal(SIGPIPE, SIG_IGN);
    if (pthread_create(&sigthread, NULL, signal_thread, &set) != 0) {
        fprintf(stderr, "zklock: cannot start the signal thread\n");
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }

    zkl_client_options_init(&o);
    o.session_timeout_ms = a.session_timeout_ms;
    o.lease_margin_ms = a.lease_margin_ms;
    o.ensemble_lag_ms = a.ensemble_lag_ms;
    o.connect_timeout_ms = 15000;
    if (a.timeout_ms > 0 && a.timeout_ms < o.connect_timeout_ms)
        o.connect_timeout_ms = a.timeout_ms;
    st = zkl_client_open(a.hosts, &o, &client);
    if (st != ZKL_OK) {
        fprintf(stderr, "zklock: %s\n", zkl_errmsg());
        return st == ZKL_EINVAL ? ZKL_CLI_EXIT_USAGE : ZKL_CLI_EXIT_UNAVAILABLE;
    }
    if (a.list) {
        code = list_participants(&a);
        zkl_client_close(client);
        return code;
    }
    /* the server may grant less than was asked: the lease must still fit */
    if (zkl_cli_lease_fit(&a, zkl_client_session_timeout(client), &grace, &kill_after, err,
                          sizeof err)) {
        fprintf(stderr, "zklock: the server granted a session timeout of %d ms: %s\n",
                zkl_client_session_timeout(client), err);
        zkl_client_close(client);
        return ZKL_CLI_EXIT_USAGE;
    }
    /* tell the watchdog of renewals well inside its grace */
    fd.period_ms = grace / 4 < 50 ? (grace / 4 > 1 ? grace / 4 : 1) : 50;

    st = lock_create(&l, &a);
    if (st != ZKL_OK) {
        fprintf(stderr, "zklock: %s\n", zkl_errmsg());
        lock_destroy(&l);
        zkl_client_close(client);
        return st == ZKL_EINVAL ? ZKL_CLI_EXIT_USAGE : ZKL_CLI_EXIT_UNAVAILABLE;
    }
    set_phase(WAITING);
    timeout = a.timeout_ms;
    if (timeout > 0) {
        int64_t left = a.timeout_ms - (now_ms() - start);
        timeout = left > 0 ? (int)left : 0;
    }
    st = lock_acquire(&l, timeout, &token);
    if (st != ZKL_OK) {
        int sig;
        pthread_mutex_lock(&mu);
        phase = DONE;
        sig = stop_signal;
        pthread_mutex_unlock(&mu);
        if (st == ZKL_ETIMEDOUT)
            fprintf(stderr, "zklock: %s: lock not acquired%s\n", a.path,
                    a.timeout_ms == 0 ? " (it is held)" : " in time");
        else if (st != ZKL_ECANCELED)
            fprintf(stderr, "zklock: %s: %s\n", a.path, zkl_errmsg());
        zkl_client_drain(client, 5000); /* make sure our node is gone */
        lock_destroy(&l);
        zkl_client_close(client);
        if (st == ZKL_ECANCELED && sig)
            return 128 + sig;
        return st == ZKL_ETIMEDOUT ? a.conflict_code : ZKL_CLI_EXIT_UNAVAILABLE;
    }

    /* COMMAND starts only with time left on the lease, under the watchdog */
    if (zkl_client_lease_end(client, &lease_end) != ZKL_OK ||
        lease_end - grace - kill_after <= boot_ms()) {
        set_phase(DONE);
        fprintf(stderr, "zklock: %s: the lease of the lock ran out before COMMAND could start\n",
                a.path);
        lock_release(&l);
        lock_destroy(&l);
        zkl_client_close(client);
        return ZKL_CLI_EXIT_LOST;
    }
    rc = zkl_watchdog_start(&wd, lease_end, grace, kill_after);
    if (rc < 0) {
        set_phase(DONE);
        fprintf(stderr, "zklock: cannot start the lease watchdog: %s\n", strerror(-rc));
        lock_release(&l);
        lock_destroy(&l);
        zkl_client_close(client);
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    feeding = pthread_create(&feeder_thread, NULL, feed, &fd) == 0;
    if (!feeding) { /* unfed, the watchdog would stop COMMAND at the first lease end */
        set_phase(DONE);
        zkl_watchdog_finish(&wd);
        fprintf(stderr, "zklock: cannot start the lease feeder thread\n");
        lock_release(&l);
        lock_destroy(&l);
        zkl_client_close(client);
        return ZKL_CLI_EXIT_UNAVAILABLE;
    }
    foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();

    set_phase(RUNNING);
    pid = spawn_command(a.command, a.path, token);
    pthread_mutex_lock(&mu);
    child = pid > 0 ? pid : 0;
    if (pid > 0) {
        zkl_watchdog_target(&wd, pid);
        if (foreground)
            terminal_to(pid);
    }
    if (pid > 0 && pending_signal)
        kill(pid, pending_signal);
    if (pid > 0 && (atomic_load(&session_lost) || atomic_load(&lease_expired)))
        kill(-pid, SIGTERM);
    pthread_mutex_unlock(&mu);
    if (pid < 0) {
        fprintf(stderr, "zklock: %s: %s\n", a.command[0], strerror(-pid));
        code = -pid == ENOENT ? 127 : 126;
        fired = zkl_watchdog_finish(&wd) == 1;
    } else {
        siginfo_t info;
        /* ended, not yet reaped: its group id cannot be reused before the
         * watchdog has let go of it */
        while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR)
            ;
        fired = zkl_watchdog_finish(&wd) == 1;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (foreground)
            terminal_to(getpgrp());
    }
    set_phase(DONE);
    if (feeding) {
        atomic_store(&fd.stop, 1);
        pthread_join(feeder_thread, NULL);
    }
    lock_release(&l);
    lock_destroy(&l);
    zkl_client_close(client);
    if (fired || atomic_load(&lease_expired)) {
        fprintf(stderr,
                "zklock: %s: the lease of the lock ran out while COMMAND ran; the lock no longer "
                "protected it (COMMAND was sent SIGTERM, and SIGKILL if it ran %d ms more)\n",
                a.path, kill_after);
        return ZKL_CLI_EXIT_LOST;
    }
    if (atomic_load(&session_lost)) {
        fprintf(stderr,
                "zklock: %s: the ZooKeeper session was lost while COMMAND ran; the lock "
                "no longer protected it (COMMAND was sent SIGTERM)\n",
                a.path);
        return ZKL_CLI_EXIT_LOST;
    }
    return code;
}
