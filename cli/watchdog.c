/*
 * watchdog.c - see watchdog.h. The child of fork() in a threaded process may
 * only make async-signal-safe calls: the watchdog loop uses nothing but
 * poll, read, kill, clock_gettime and _exit.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "watchdog.h"

/* One message on the pipe. */
enum { MSG_LEASE = 1, MSG_TARGET = 2, MSG_DONE = 3, MSG_STOP = 4 };
typedef struct msg {
    int32_t type;
    int32_t pad;
    int64_t value;
} msg;

static int64_t boot_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait up to ms for messages (fd < 0: just wait) and apply them. Returns
 * MSG_DONE when told to finish; sets *fd to -1 when zklock is gone.
 */
static int take_messages(int *fd, int ms, int64_t *lease_end, pid_t *pgid)
{
    struct pollfd p;
    msg m;
    ssize_t n;
    if (ms < 0)
        ms = 0;
    if (*fd < 0) {
        poll(NULL, 0, ms);
        return 0;
    }
    p.fd = *fd;
    p.events = POLLIN;
    if (poll(&p, 1, ms) <= 0)
        return 0;
    n = read(*fd, &m, sizeof m);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        /* zklock is gone: nobody renews any more, the last lease end holds */
        close(*fd);
        *fd = -1;
        return 0;
    }
    if (n != (ssize_t)sizeof m) /* writes of one message are atomic on a pipe */
        return 0;
    if (m.type == MSG_LEASE && m.value > *lease_end)
        *lease_end = m.value;
    else if (m.type == MSG_TARGET)
        *pgid = (pid_t)m.value;
    else if (m.type == MSG_DONE)
        return MSG_DONE;
    else if (m.type == MSG_STOP)
        return MSG_STOP;
    return 0;
}

static void stop_group(pid_t pgid, int sig)
{
    if (pgid > 0)
        kill(-pgid, sig);
}

static void watchdog_main(int fd, int64_t lease_end, int grace_ms, int kill_after_ms)
{
    pid_t pgid = 0;
    int64_t kill_at;
    int fired = ZKL_WATCHDOG_FIRED;
    for (;;) { /* until the lease end less the grace, or a stop asked for */
        int64_t left = lease_end - grace_ms - boot_ms();
        int got;
        if (left <= 0)
            break;
        got = take_messages(&fd, left > 1000 ? 1000 : (int)left, &lease_end, &pgid);
        if (got == MSG_DONE)
            _exit(0);
        if (got == MSG_STOP) {
            fired = ZKL_WATCHDOG_ASKED;
            break;
        }
    }
    stop_group(pgid, SIGTERM);
    kill_at = boot_ms() + kill_after_ms;
    for (;;) { /* then SIGKILL, unless COMMAND ends first */
        int64_t left = kill_at - boot_ms();
        pid_t had = pgid;
        if (left <= 0)
            break;
        if (take_messages(&fd, (int)left, &lease_end, &pgid) == MSG_DONE)
            _exit(fired);
        if (!had && pgid) /* COMMAND started after the lease ended */
            stop_group(pgid, SIGTERM);
    }
    stop_group(pgid, SIGKILL);
    while (fd >= 0 && !pgid) /* not started yet: stop it when it is */
        if (take_messages(&fd, 1000, &lease_end, &pgid) == MSG_DONE)
            _exit(fired);
    stop_group(pgid, SIGKILL);
    _exit(fired);
}

int zkl_watchdog_start(zkl_watchdog *w, int64_t lease_end, int grace_ms, int kill_after_ms)
{
    int fds[2];
    pid_t pid;
    w->pid = -1;
    w->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -errno;
    pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (pid == 0) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL); /* only SIGKILL and SIGSTOP reach it */
        setpgid(0, 0);
        for (int fd = 3; fd < 1024; fd++) /* not zklock's ZooKeeper socket, not its end */
            if (fd != fds[0])
                close(fd);
        watchdog_main(fds[0], lease_end, grace_ms, kill_after_ms);
    }
    close(fds[0]);
    w->pid = pid;
    w->fd = fds[1];
    return 0;
}

static int send_msg(zkl_watchdog *w, int type, int64_t value)
{
    msg m = {type, 0, value};
    ssize_t n;
    if (w->fd < 0)
        return -EPIPE;
    do
        n = write(w->fd, &m, sizeof m);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof m ? 0 : -(n < 0 ? errno : EIO);
}

int zkl_watchdog_target(zkl_watchdog *w, pid_t pgid)
{
    return send_msg(w, MSG_TARGET, pgid);
}

int zkl_watchdog_renew(zkl_watchdog *w, int64_t lease_end)
{
    return send_msg(w, MSG_LEASE, lease_end);
}

int zkl_watchdog_stop_now(zkl_watchdog *w)
{
    return send_msg(w, MSG_STOP, 0);
}

int zkl_watchdog_finish(zkl_watchdog *w)
{
    int rc = send_msg(w, MSG_DONE, 0), status;
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (w->pid <= 0)
        return rc;
    while (waitpid(w->pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    w->pid = -1;
    if (!WIFEXITED(status))
        return 0;
    return WEXITSTATUS(status) == ZKL_WATCHDOG_FIRED   ? 1
           : WEXITSTATUS(status) == ZKL_WATCHDOG_ASKED ? 2
                                                       : 0;
}
