/*
 * args.c - see args.h. Options come before PATH; after PATH an optional "--"
 * and then COMMAND, whose own options are never read as ours.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "args.h"

const char zkl_cli_usage[] =
    "usage: zklock [--zk HOSTS] [-n | -w SECONDS] [-E CODE] [-s | -x | --semaphore N]\n"
    "              [--session-timeout MS] [--grace MS] [--kill-after MS]\n"
    "              [--lease-margin MS] [--ensemble-lag MS] PATH -- COMMAND [ARG...]\n"
    "       zklock --list [--zk HOSTS] PATH\n"
    "       zklock --help | --version\n"
    "\n"
    "Run COMMAND while holding a ZooKeeper lock at PATH (Curator-compatible).\n"
    "  --zk HOSTS            servers (default $ZKLOCK_SERVERS, else 127.0.0.1:2181)\n"
    "  -n, --nonblock        fail at once if the lock is not free\n"
    "  -w, --wait SECONDS    give up after SECONDS (fractions allowed)\n"
    "  -E, --conflict-exit-code CODE\n"
    "                        exit with CODE if not acquired (default 1)\n"
    "  -s, --shared          read side of a read/write lock\n"
    "  -x, --exclusive       write side of a read/write lock\n"
    "      --semaphore N     one of N leases of a semaphore\n"
    "      --session-timeout MS\n"
    "                        ZooKeeper session timeout (default 10000)\n"
    "      --grace MS        SIGTERM to COMMAND this long before the lock's lease\n"
    "                        ends if renewals stop (default timeout/8)\n"
    "      --kill-after MS   then SIGKILL this long after SIGTERM (default grace/2)\n"
    "      --lease-margin MS lease ends this long before the server could expire\n"
    "                        the session (default timeout/10 + 200, at most /4)\n"
    "      --ensemble-lag MS for an ensemble: syncLimit x tickTime + tickTime/2\n"
    "      --list            print the participants of PATH, holders first\n"
    "COMMAND sees ZKLOCK_FENCING_TOKEN and ZKLOCK_PATH. Exit status: COMMAND's;\n"
    "CODE if not acquired; 64 usage; 69 ZooKeeper unreachable; 75 session lost or\n"
    "lease ran out while COMMAND ran; 126/127 COMMAND not runnable/found; 128+N on\n"
    "signal N.\n"
    "See zklock(1).\n";

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return ZKL_CLI_EXIT_USAGE;
}

/* A whole decimal integer in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;
    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Seconds, fractions allowed, to whole ms (rounded up so 0.0001 still waits). */
static int parse_seconds(const char *s, int *ms)
{
    char *end;
    double v;
    if (!s || !*s || strchr(s, 'x') || strchr(s, 'X') || strchr(s, 'n') || strchr(s, 'N') ||
        strchr(s, 'i') || strchr(s, 'I'))
        return -1; /* no hex floats, nan, inf */
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > 2000000.0)
        return -1;
    *ms = (int)ceil(v * 1000.0);
    return 0;
}

/* The value of an option: "--opt=VALUE" or the next argument. */
static const char *value(int argc, char **argv, int *i, const char *eq)
{
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

int zkl_cli_parse(int argc, char **argv, const char *env_servers, zkl_cli_args *a, char *err,
                  size_t errlen)
{
    int i, modes = 0, n_given = 0, w_given = 0;
    memset(a, 0, sizeof *a);
    a->hosts = env_servers && *env_servers ? env_servers : ZKL_CLI_DEFAULT_SERVERS;
    a->timeout_ms = -1;
    a->conflict_code = 1;
    a->mode = ZKL_CLI_MUTEX;
    a->session_timeout_ms = 10000;
    err[0] = '\0';
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq = NULL, *v;
        char name[64];
        if (strcmp(arg, "--") == 0)
            return fail(err, errlen, "PATH is missing before '--'");
        if (arg[0] != '-' || arg[1] == '\0')
            break; /* PATH */
        if (arg[1] == '-') {
            size_t k = strcspn(arg, "=");
            if (k >= sizeof name)
                return fail(err, errlen, "unknown option '%.40s'", arg);
            memcpy(name, arg, k);
            name[k] = '\0';
            eq = arg[k] ? arg + k : NULL;
        } else {
            if (strlen(arg) != 2)
                return fail(err, errlen, "unknown option '%.40s' (options take no attached values)",
                            arg);
            snprintf(name, sizeof name, "%s", arg);
        }
        if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
            a->help = 1;
            return 0;
        } else if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
            a->version = 1;
            return 0;
        } else if (!strcmp(name, "--list")) {
            a->list = 1;
        } else if (!strcmp(name, "-n") || !strcmp(name, "--nonblock")) {
            n_given = 1;
            a->timeout_ms = 0;
        } else if (!strcmp(name, "-s") || !strcmp(name, "--shared")) {
            modes++;
            a->mode = ZKL_CLI_READ;
        } else if (!strcmp(name, "-x") || !strcmp(name, "--exclusive")) {
            modes++;
            a->mode = ZKL_CLI_WRITE;
        } else if (!strcmp(name, "--zk")) {
            if (!(v = value(argc, argv, &i, eq)) || !*v)
                return fail(err, errlen, "--zk needs HOSTS (host:port[,host:port...][/chroot])");
            a->hosts = v;
        } else if (!strcmp(name, "-w") || !strcmp(name, "--wait")) {
            v = value(argc, argv, &i, eq);
            if (parse_seconds(v, &a->timeout_ms))
                return fail(err, errlen, "-w needs SECONDS, a number >= 0 (got '%.40s')",
                            v ? v : "");
            w_given = 1;
        } else if (!strcmp(name, "-E") || !strcmp(name, "--conflict-exit-code")) {
            v = value(argc, argv, &i, eq);
            if (parse_int(v, 0, 255, &a->conflict_code))
                return fail(err, errlen, "-E needs CODE, a whole number 0..255 (got '%.40s')",
                            v ? v : "");
        } else if (!strcmp(name, "--semaphore")) {
            v = value(argc, argv, &i, eq);
            if (parse_int(v, 1, 1000000, &a->leases))
                return fail(err, errlen,
                            "--semaphore needs N, a whole number 1..1000000 (got '%.40s')",
                            v ? v : "");
            modes++;
            a->mode = ZKL_CLI_SEMAPHORE;
        } else if (!strcmp(name, "--grace") || !strcmp(name, "--kill-after") ||
                   !strcmp(name, "--lease-margin") || !strcmp(name, "--ensemble-lag")) {
            int *to = !strcmp(name, "--grace")          ? &a->grace_ms
                      : !strcmp(name, "--kill-after")   ? &a->kill_after_ms
                      : !strcmp(name, "--lease-margin") ? &a->lease_margin_ms
                                                        : &a->ensemble_lag_ms;
            int lo = to == &a->ensemble_lag_ms ? 0 : 1; /* --ensemble-lag 0: standalone */
            v = value(argc, argv, &i, eq);
            if (parse_int(v, lo, 3600000, to))
                return fail(err, errlen, "%s needs MS, a whole number %d..3600000 (got '%.40s')",
                            name, lo, v ? v : "");
        } else if (!strcmp(name, "--session-timeout")) {
            v = value(argc, argv, &i, eq);
            if (parse_int(v, 1, 3600000, &a->session_timeout_ms))
                return fail(err, errlen,
                            "--session-timeout needs MS, a whole number 1..3600000 (got '%.40s')",
                            v ? v : "");
        } else {
            return fail(err, errlen, "unknown option '%.40s'", arg);
        }
        if (eq && (!strcmp(name, "--list") || !strcmp(name, "--nonblock") ||
                   !strcmp(name, "--shared") || !strcmp(name, "--exclusive")))
            return fail(err, errlen, "option '%.40s' takes no value", name);
    }
    if (n_given && w_given)
        return fail(err, errlen, "-n and -w cannot be used together");
    if (modes > 1)
        return fail(err, errlen, "-s, -x and --semaphore cannot be combined");
    if (!a->list) {
        int grace, kill_after;
        if (zkl_cli_lease_fit(a, a->session_timeout_ms, &grace, &kill_after, err, errlen))
            return ZKL_CLI_EXIT_USAGE;
    }
    if (i >= argc)
        return fail(err, errlen, "PATH is missing");
    a->path = argv[i++];
    if (zkl__path_validate(a->path) != ZKL_OK)
        return fail(err, errlen, "%s", zkl_errmsg());
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    if (a->list) {
        if (i < argc)
            return fail(err, errlen, "--list takes no COMMAND");
        return 0;
    }
    if (i >= argc)
        return fail(err, errlen, "COMMAND is missing (zklock PATH -- COMMAND [ARG...])");
    if (argv[i][0] == '\0')
        return fail(err, errlen, "COMMAND is empty");
    a->command = argv + i;
    return 0;
}

int zkl_cli_lease_fit(const zkl_cli_args *a, int timeout_ms, int *grace_ms, int *kill_after_ms,
                      char *err, size_t errlen)
{
    int margin = a->lease_margin_ms, grace = a->grace_ms, kill_after = a->kill_after_ms;
    if (!margin) /* the library's default */
        margin = timeout_ms / 10 + 200 < timeout_ms / 4 ? timeout_ms / 10 + 200 : timeout_ms / 4;
    if (!grace) {
        grace = timeout_ms / 8 > 0 ? timeout_ms / 8 : 1;
        if (a->ensemble_lag_ms && grace > timeout_ms / 4 - margin - a->ensemble_lag_ms)
            grace = timeout_ms / 4 - margin - a->ensemble_lag_ms; /* what is left of a quarter */
        if (grace < 2)
            grace = 2;
    }
    if (!kill_after)
        kill_after = grace / 2 > 0 ? grace / 2 : 1;
    if ((long)margin + a->ensemble_lag_ms > timeout_ms / 4)
        return fail(err, errlen,
                    "--lease-margin %d%s does not fit a session timeout of %d ms (at most a "
                    "quarter of it)",
                    margin, a->ensemble_lag_ms ? " with --ensemble-lag" : "", timeout_ms);
    if (kill_after >= grace)
        return fail(err, errlen,
                    "--kill-after %d must be shorter than --grace %d (SIGKILL must come before "
                    "the lease ends)",
                    kill_after, grace);
    if (!a->ensemble_lag_ms && (long)grace + margin > timeout_ms / 2)
        return fail(err, errlen,
                    "a session timeout of %d ms is too short for --grace %d and a lease margin "
                    "of %d ms (together at most half of it)",
                    timeout_ms, grace, margin);
    if (a->ensemble_lag_ms && (long)grace + margin + a->ensemble_lag_ms > timeout_ms / 4)
        return fail(err, errlen,
                    "a session timeout of %d ms is too short for --grace %d, a lease margin of "
                    "%d ms and --ensemble-lag %d (together at most a quarter of it)",
                    timeout_ms, grace, margin, a->ensemble_lag_ms);
    *grace_ms = grace;
    *kill_after_ms = kill_after;
    return 0;
}
