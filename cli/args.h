/*
 * args.h - the zklock command's argument parser: pure, so it is unit-tested
 * and fuzzed without a server.
 */
#ifndef ZKL_CLI_ARGS_H
#define ZKL_CLI_ARGS_H

#include <stddef.h>

#define ZKL_CLI_DEFAULT_SERVERS "127.0.0.1:2181"
#define ZKL_CLI_EXIT_USAGE 64
#define ZKL_CLI_EXIT_UNAVAILABLE 69
#define ZKL_CLI_EXIT_LOST 75

typedef enum zkl_cli_mode {
    ZKL_CLI_MUTEX,
    ZKL_CLI_READ,
    ZKL_CLI_WRITE,
    ZKL_CLI_SEMAPHORE,
    ZKL_CLI_ELECT, /* --elect: a LeaderLatch participant; COMMAND runs while it leads */
} zkl_cli_mode;

typedef struct zkl_cli_args {
    const char *hosts;
    int timeout_ms;    /* -1: wait as long as it takes; 0: -n */
    int conflict_code; /* -E, default 1 */
    zkl_cli_mode mode;
    int leases; /* --semaphore N */
    int session_timeout_ms;
    /* the lease (see zklock(1)): 0 means the default, worked out by zkl_cli_lease_fit */
    int lease_margin_ms;
    /* --ensemble-lag: syncLimit x tickTime + tickTime/2 (0: standalone); -1 when not
     * given: the server's, found at open (ZKL_ENSEMBLE_LAG_FIND) */
    int ensemble_lag_ms;
    int grace_ms;      /* COMMAND gets SIGTERM this long before the lease ends */
    int kill_after_ms; /* ... and SIGKILL this long after SIGTERM */
    const char *path;
    char **command; /* NULL-terminated: into argv, or shell_argv */
    /* -c STRING (flock(1)'s): run by the shell, "/bin/sh -c STRING" here;
     * the command puts $SHELL in shell_argv[0] if it is set */
    const char *shell_string;
    char *shell_argv[4];
    int list, json, help, version; /* json: --list or --leader --json */
    int leader;                    /* --leader: print the election's leader */
    int watch;                     /* --leader --watch: a line per change until a signal */
    const char *id;                /* --elect --id ID (NULL: HOST:PID) */
    int verbose;                   /* --verbose: say on stderr when the lock is got */
} zkl_cli_args;

/*
 * Parse argv. env_servers is $ZKLOCK_SERVERS (may be NULL). Returns 0, or
 * ZKL_CLI_EXIT_USAGE with a one-line reason in err.
 */
int zkl_cli_parse(int argc, char **argv, const char *env_servers, zkl_cli_args *out, char *err,
                  size_t errlen);

/*
 * The grace and kill-after in force for a session timeout of timeout_ms (the
 * one asked for, or the one the server granted): the options, or their
 * defaults. Checks that they fit: the margin at most a quarter of it, the
 * grace and the margin together at most half of it (a renewal every third
 * must keep the watchdog quiet), --kill-after shorter than --grace.
 * Returns 0, or ZKL_CLI_EXIT_USAGE with a reason.
 */
int zkl_cli_lease_fit(const zkl_cli_args *a, int timeout_ms, int *grace_ms, int *kill_after_ms,
                      char *err, size_t errlen);

/* The --help text. */
extern const char zkl_cli_usage[];

#endif
