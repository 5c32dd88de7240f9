/*
 * watchdog.h - a separate process that stops COMMAND before the lock's lease
 * ends, without the zklock process having to run (issue 18): zklock feeds it
 * each renewed lease end through a pipe; when they stop coming (zklock
 * paused, stuck, or killed) it sends SIGTERM to COMMAND's process group at
 * the lease end less the grace, and SIGKILL kill_after later, still before
 * the lease end.
 */
#ifndef ZKL_CLI_WATCHDOG_H
#define ZKL_CLI_WATCHDOG_H

#include <stdint.h>
#include <sys/types.h>

typedef struct zkl_watchdog {
    pid_t pid; /* the watchdog process */
    int fd;    /* our end of the pipe, -1 once closed */
} zkl_watchdog;

/* Exit status of a watchdog that stopped COMMAND at the lease end, and of
 * one that stopped it when asked (zkl_watchdog_stop_now). */
#define ZKL_WATCHDOG_FIRED 3
#define ZKL_WATCHDOG_ASKED 4

/*
 * Fork the watchdog with the first lease end (CLOCK_BOOTTIME ms, as
 * zkl_client_lease_end gives it). It blocks the terminal's signals and
 * lives in a process group of its own, so that ^C and ^Z do not reach it.
 * 0, or -errno.
 */
int zkl_watchdog_start(zkl_watchdog *w, int64_t lease_end, int grace_ms, int kill_after_ms);

/* COMMAND's process group, once it runs (if the lease already ended, it is
 * stopped at once). 0 or -errno. */
int zkl_watchdog_target(zkl_watchdog *w, pid_t pgid);

/* A renewed lease end. 0 or -errno (the watchdog is gone). */
int zkl_watchdog_renew(zkl_watchdog *w, int64_t lease_end);

/*
 * The lock (or leadership) ended unasked: stop COMMAND's group now, as at a
 * lease end (SIGTERM, SIGKILL kill_after later), whatever lease ends come
 * after. Async-signal-safe (one write). 0 or -errno.
 */
int zkl_watchdog_stop_now(zkl_watchdog *w);

/*
 * COMMAND has ended (call before reaping it, so that its process group id
 * cannot be reused meanwhile): the watchdog exits. Returns 1 if it had
 * stopped COMMAND at the lease end, 2 if when asked, 0 if not, -errno if it
 * could not be told.
 */
int zkl_watchdog_finish(zkl_watchdog *w);

#endif
