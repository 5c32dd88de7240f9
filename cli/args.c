/*
 * args.c - see args.h. Options come before PATH; after PATH an optional "--"
 * and then COMMAND, whose own options are never read as ours.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "args.h"

const char zkl_cli_usage[] =
    "usage: zklock [--zk HOSTS] [-n | -w SECONDS] [-E CODE]\n"
    "              [-s | -x | --semaphore N | --elect [--id ID]]\n"
    "              [--session-timeout MS] [--grace MS] [--kill-after MS]\n"
    "              [--lease-margin MS] [--ensemble-lag MS] [--verbose]\n"
    "              PATH -- COMMAND [ARG...] | PATH -c 'SHELL COMMAND'\n"
    "       zklock --list [--json] [--zk HOSTS] PATH\n"
    "       zklock --leader [--watch] [--json] [--zk HOSTS] PATH\n"
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
    "      --elect           join a leader election (Curator's LeaderLatch) at PATH\n"
    "                        and run COMMAND while leader\n"
    "      --id ID           with --elect: the participant id (default HOST:PID)\n"
    "      --session-timeout MS\n"
    "                        ZooKeeper session timeout (default 10000)\n"
    "      --grace MS        SIGTERM to COMMAND this long before the lock's lease\n"
    "                        ends if renewals stop (default timeout/8)\n"
    "      --kill-after MS   then SIGKILL this long after SIGTERM (default grace/2)\n"
    "      --lease-margin MS lease ends this long before the server could expire\n"
    "                        the session (default timeout/10 + 200, at most /4)\n"
    "      --ensemble-lag MS for an ensemble: syncLimit x tickTime + tickTime/2\n"
    "  -c, --command STRING  run STRING with $SHELL -c (else /bin/sh), as flock(1)\n"
    "      --verbose         say on stderr when the lock is got and how long it took\n"
    "      --list            print the participants of PATH, holders first\n"
    "      --leader          print the leader of the election at PATH, or that there\n"
    "                        is none (exit 0 both ways)\n"
    "      --watch           with --leader: a line per change of leader, until\n"
    "                        SIGINT or SIGTERM (exit 0)\n"
    "      --json            with --list or --leader: JSON (a line each), for scripts\n"
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

/* What the options said so far that only their combination decides. */
typedef struct parsing {
    int argc;
    char **argv;
    int i; /* the argument being read */
    int modes, n_given, w_given;
    char *err;
    size_t errlen;
} parsing;

/* Stop reading options: help or version was asked for. */
#define PARSE_STOP (-1)

/* The option's name (a long one up to its '='), *eq its attached value. */
static int option_name(parsing *p, const char *arg, char name[64], const char **eq)
{
    *eq = NULL;
    if (arg[1] == '-') {
        size_t k = strcspn(arg, "=");
        if (k >= 64)
            return fail(p->err, p->errlen, "unknown option '%.40s'", arg);
        memcpy(name, arg, k);
        name[k] = '\0';
        *eq = arg[k] ? arg + k : NULL;
        return 0;
    }
    if (strlen(arg) != 2)
        return fail(p->err, p->errlen, "unknown option '%.40s' (options take no attached values)",
                    arg);
    snprintf(name, 64, "%s", arg);
    return 0;
}

/* The options that take a number of milliseconds. */
static int ms_option(parsing *p, zkl_cli_args *a, const char *name, const char *eq)
{
    int *to = !strcmp(name, "--grace")          ? &a->grace_ms
              : !strcmp(name, "--kill-after")   ? &a->kill_after_ms
              : !strcmp(name, "--lease-margin") ? &a->lease_margin_ms
              : !strcmp(name, "--ensemble-lag") ? &a->ensemble_lag_ms
                                                : &a->session_timeout_ms;
    int lo = to == &a->ensemble_lag_ms ? 0 : 1; /* --ensemble-lag 0: standalone */
    const char *v = value(p->argc, p->argv, &p->i, eq);
    if (parse_int(v, lo, 3600000, to))
        return fail(p->err, p->errlen, "%s needs MS, a whole number %d..3600000 (got '%.40s')",
                    name, lo, v ? v : "");
    return 0;
}

/* The options that take a value other than milliseconds. */
static int value_option(parsing *p, zkl_cli_args *a, const char *name, const char *eq)
{
    const char *v = value(p->argc, p->argv, &p->i, eq);
    if (!strcmp(name, "--zk")) {
        if (!v || !*v)
            return fail(p->err, p->errlen, "--zk needs HOSTS (host:port[,host:port...][/chroot])");
        a->hosts = v;
    } else if (!strcmp(name, "-w") || !strcmp(name, "--wait")) {
        if (parse_seconds(v, &a->timeout_ms))
            return fail(p->err, p->errlen, "-w needs SECONDS, a number >= 0 (got '%.40s')",
                        v ? v : "");
        p->w_given = 1;
    } else if (!strcmp(name, "--id")) {
        if (!v || strlen(v) > 1024)
            return fail(p->err, p->errlen, "--id needs ID, up to 1024 bytes");
        a->id = v;
    } else if (!strcmp(name, "-E") || !strcmp(name, "--conflict-exit-code")) {
        if (parse_int(v, 0, 255, &a->conflict_code))
            return fail(p->err, p->errlen, "-E needs CODE, a whole number 0..255 (got '%.40s')",
                        v ? v : "");
    } else { /* --semaphore */
        if (parse_int(v, 1, 1000000, &a->leases))
            return fail(p->err, p->errlen,
                        "--semaphore needs N, a whole number 1..1000000 (got '%.40s')", v ? v : "");
        p->modes++;
        a->mode = ZKL_CLI_SEMAPHORE;
    }
    return 0;
}

static bool is(const char *name, const char *s, const char *l)
{
    return (s && !strcmp(name, s)) || !strcmp(name, l);
}

/* One option: 0, PARSE_STOP, or the usage error's exit status. */
static int one_option(parsing *p, zkl_cli_args *a, const char *arg)
{
    char name[64];
    const char *eq;
    int rc = option_name(p, arg, name, &eq);
    if (rc)
        return rc;
    if (is(name, "-h", "--help") || is(name, "-V", "--version")) {
        a->help = is(name, "-h", "--help");
        a->version = !a->help;
        return PARSE_STOP;
    }
    if (is(name, NULL, "--list") || is(name, NULL, "--json") || is(name, "-n", "--nonblock") ||
        is(name, "-s", "--shared") || is(name, "-x", "--exclusive") ||
        is(name, NULL, "--verbose") || is(name, NULL, "--elect") || is(name, NULL, "--leader") ||
        is(name, NULL, "--watch")) {
        if (eq)
            return fail(p->err, p->errlen, "option '%.40s' takes no value", name);
        if (is(name, NULL, "--list")) {
            a->list = 1;
        } else if (is(name, NULL, "--leader")) {
            a->leader = 1;
        } else if (is(name, NULL, "--watch")) {
            a->watch = 1;
        } else if (is(name, NULL, "--elect")) {
            p->modes++;
            a->mode = ZKL_CLI_ELECT;
        } else if (is(name, NULL, "--verbose")) {
            a->verbose = 1;
        } else if (is(name, NULL, "--json")) {
            a->json = 1;
        } else if (is(name, "-n", "--nonblock")) {
            p->n_given = 1;
            a->timeout_ms = 0;
        } else {
            p->modes++;
            a->mode = is(name, "-s", "--shared") ? ZKL_CLI_READ : ZKL_CLI_WRITE;
        }
        return 0;
    }
    if (is(name, NULL, "--zk") || is(name, "-w", "--wait") || is(name, NULL, "--id") ||
        is(name, "-E", "--conflict-exit-code") || is(name, NULL, "--semaphore"))
        return value_option(p, a, name, eq);
    if (is(name, NULL, "--grace") || is(name, NULL, "--kill-after") ||
        is(name, NULL, "--lease-margin") || is(name, NULL, "--ensemble-lag") ||
        is(name, NULL, "--session-timeout"))
        return ms_option(p, a, name, eq);
    return fail(p->err, p->errlen, "unknown option '%.40s'", arg);
}

/* PATH -c STRING: one string for the shell, and nothing after it (flock(1)). */
static int shell_command(parsing *p, zkl_cli_args *a, int i)
{
    if (i + 1 >= p->argc)
        return fail(p->err, p->errlen, "-c needs a shell command (zklock PATH -c 'COMMAND')");
    if (i + 2 < p->argc)
        return fail(p->err, p->errlen,
                    "-c takes one string: quote the whole shell command (got '%.40s' after it)",
                    p->argv[i + 2]);
    if (p->argv[i + 1][0] == '\0')
        return fail(p->err, p->errlen, "COMMAND is empty");
    a->shell_string = p->argv[i + 1];
    a->shell_argv[0] = (char *)"/bin/sh";
    a->shell_argv[1] = (char *)"-c";
    a->shell_argv[2] = p->argv[i + 1];
    a->shell_argv[3] = NULL;
    a->command = a->shell_argv;
    return 0;
}

/* After the options: their combination, PATH, and COMMAND. */
static int parse_rest(parsing *p, zkl_cli_args *a)
{
    int i = p->i, argc = p->argc;
    char **argv = p->argv;
    if (p->n_given && p->w_given)
        return fail(p->err, p->errlen, "-n and -w cannot be used together");
    if (p->modes > 1)
        return fail(p->err, p->errlen, "-s, -x, --semaphore and --elect cannot be combined");
    if (a->list && a->leader)
        return fail(p->err, p->errlen, "--list and --leader cannot be combined");
    if (a->json && !a->list && !a->leader)
        return fail(p->err, p->errlen, "--json goes with --list or --leader");
    if (a->watch && !a->leader)
        return fail(p->err, p->errlen, "--watch goes with --leader");
    if (a->id && a->mode != ZKL_CLI_ELECT)
        return fail(p->err, p->errlen, "--id goes with --elect");
    if (p->n_given && a->mode == ZKL_CLI_ELECT)
        return fail(p->err, p->errlen,
                    "-n does not go with --elect (an election has no free or taken: use -w)");
    if (!a->list && !a->leader) { /* they only read: no lease to fit */
        int grace, kill_after;
        if (zkl_cli_lease_fit(a, a->session_timeout_ms, &grace, &kill_after, p->err, p->errlen))
            return ZKL_CLI_EXIT_USAGE;
    }
    if (i >= argc)
        return fail(p->err, p->errlen, "PATH is missing");
    a->path = argv[i++];
    if (zkl__path_validate(a->path) != ZKL_OK)
        return fail(p->err, p->errlen, "%s", zkl_errmsg());
    if (i < argc && !a->list && !a->leader &&
        (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--command")))
        return shell_command(p, a, i);
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    if (a->list || a->leader)
        return i < argc
                   ? fail(p->err, p->errlen, "%s takes no COMMAND", a->list ? "--list" : "--leader")
                   : 0;
    if (i >= argc)
        return fail(p->err, p->errlen, "COMMAND is missing (zklock PATH -- COMMAND [ARG...])");
    if (argv[i][0] == '\0')
        return fail(p->err, p->errlen, "COMMAND is empty");
    a->command = argv + i;
    return 0;
}

int zkl_cli_parse(int argc, char **argv, const char *env_servers, zkl_cli_args *a, char *err,
                  size_t errlen)
{
    parsing p = {argc, argv, 1, 0, 0, 0, err, errlen};
    memset(a, 0, sizeof *a);
    a->hosts = env_servers && *env_servers ? env_servers : ZKL_CLI_DEFAULT_SERVERS;
    a->timeout_ms = -1;
    a->conflict_code = 1;
    a->mode = ZKL_CLI_MUTEX;
    a->session_timeout_ms = 10000;
    a->ensemble_lag_ms = -1; /* not given: the library asks the server (ZKL_ENSEMBLE_LAG_FIND) */
    err[0] = '\0';
    for (; p.i < argc; p.i++) {
        const char *arg = argv[p.i];
        int rc;
        if (strcmp(arg, "--") == 0)
            return fail(err, errlen, "PATH is missing before '--'");
        if (arg[0] != '-' || arg[1] == '\0')
            break; /* PATH */
        rc = one_option(&p, a, arg);
        if (rc == PARSE_STOP)
            return 0;
        if (rc)
            return rc;
    }
    return parse_rest(&p, a);
}

int zkl_cli_lease_fit(const zkl_cli_args *a, int timeout_ms, int *grace_ms, int *kill_after_ms,
                      char *err, size_t errlen)
{
    int margin = a->lease_margin_ms, grace = a->grace_ms, kill_after = a->kill_after_ms;
    int lag = a->ensemble_lag_ms > 0 ? a->ensemble_lag_ms : 0; /* -1: the server's, not known yet */
    if (!margin)                                               /* the library's default */
        margin = timeout_ms / 10 + 200 < timeout_ms / 4 ? timeout_ms / 10 + 200 : timeout_ms / 4;
    if (!grace) {
        grace = timeout_ms / 8 > 0 ? timeout_ms / 8 : 1;
        if (lag && grace > timeout_ms / 4 - margin - lag)
            grace = timeout_ms / 4 - margin - lag; /* what is left of a quarter */
        if (grace < 2)
            grace = 2;
    }
    if (!kill_after)
        kill_after = grace / 2 > 0 ? grace / 2 : 1;
    if ((long)margin + lag > timeout_ms / 4)
        return fail(err, errlen,
                    "--lease-margin %d%s does not fit a session timeout of %d ms (at most a "
                    "quarter of it)",
                    margin, lag ? " with the ensemble lag" : "", timeout_ms);
    if (kill_after >= grace)
        return fail(err, errlen,
                    "--kill-after %d must be shorter than --grace %d (SIGKILL must come before "
                    "the lease ends)",
                    kill_after, grace);
    if (!lag && (long)grace + margin > timeout_ms / 2)
        return fail(err, errlen,
                    "a session timeout of %d ms is too short for --grace %d and a lease margin "
                    "of %d ms (together at most half of it)",
                    timeout_ms, grace, margin);
    if (lag && (long)grace + margin + lag > timeout_ms / 4)
        return fail(err, errlen,
                    "a session timeout of %d ms is too short for --grace %d, a lease margin of "
                    "%d ms and an ensemble lag of %d ms (together at most a quarter of it)",
                    timeout_ms, grace, margin, lag);
    *grace_ms = grace;
    *kill_after_ms = kill_after;
    return 0;
}
