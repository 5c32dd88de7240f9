/*
 * test_cli_args.c - the zklock command's parser, without a server.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

static int parse(zkl_cli_args *a, const char *env, ...)
{
    static char *argv[32]; /* a.command points into it after we return */
    char err[256];
    int argc = 0;
    va_list ap;
    const char *s;
    argv[argc++] = "zklock";
    va_start(ap, env);
    while ((s = va_arg(ap, const char *)) != NULL)
        argv[argc++] = (char *)s;
    va_end(ap);
    argv[argc] = NULL;
    return zkl_cli_parse(argc, argv, env, a, err, sizeof err);
}

Test(cli_args, defaults)
{
    zkl_cli_args a;
    cr_assert_eq(parse(&a, NULL, "/p", "--", "echo", "hi", NULL), 0);
    cr_assert_str_eq(a.hosts, "127.0.0.1:2181");
    cr_assert_eq(a.timeout_ms, -1);
    cr_assert_eq(a.conflict_code, 1);
    cr_assert_eq(a.mode, ZKL_CLI_MUTEX);
    cr_assert_eq(a.session_timeout_ms, 10000);
    cr_assert_str_eq(a.path, "/p");
    cr_assert_str_eq(a.command[0], "echo");
    cr_assert_str_eq(a.command[1], "hi");
    cr_assert_null(a.command[2]);
}

Test(cli_args, env_and_flags)
{
    zkl_cli_args a;
    cr_assert_eq(
        parse(&a, "zk1:2181,zk2:2181", "-w", "1.5", "-E", "9", "-s", "/p", "--", "x", NULL), 0);
    cr_assert_str_eq(a.hosts, "zk1:2181,zk2:2181");
    cr_assert_eq(a.timeout_ms, 1500);
    cr_assert_eq(a.conflict_code, 9);
    cr_assert_eq(a.mode, ZKL_CLI_READ);
    cr_assert_eq(parse(&a, "env:1", "--zk", "h:1", "-x", "-n", "/p", "--", "x", NULL), 0);
    cr_assert_str_eq(a.hosts, "h:1");
    cr_assert_eq(a.timeout_ms, 0);
    cr_assert_eq(a.mode, ZKL_CLI_WRITE);
    cr_assert_eq(
        parse(&a, NULL, "--semaphore=3", "--session-timeout", "4000", "/p", "--", "x", NULL), 0);
    cr_assert_eq(a.mode, ZKL_CLI_SEMAPHORE);
    cr_assert_eq(a.leases, 3);
    cr_assert_eq(a.session_timeout_ms, 4000);
    cr_assert_eq(parse(&a, NULL, "-w", "0.0001", "/p", "x", NULL), 0, "'--' is optional");
    cr_assert_eq(a.timeout_ms, 1, "fractions round up");
    cr_assert_str_eq(a.command[0], "x");
}

Test(cli_args, command_options_are_not_ours)
{
    zkl_cli_args a;
    cr_assert_eq(parse(&a, NULL, "/p", "--", "ls", "-n", "--zk", NULL), 0);
    cr_assert_eq(a.timeout_ms, -1);
    cr_assert_str_eq(a.command[1], "-n");
}

Test(cli_args, list_help_version)
{
    zkl_cli_args a;
    cr_assert_eq(parse(&a, NULL, "--list", "/p", NULL), 0);
    cr_assert(a.list);
    cr_assert_eq(parse(&a, NULL, "--list", "/p", "--", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--help", NULL), 0);
    cr_assert(a.help);
    cr_assert_eq(parse(&a, NULL, "-V", NULL), 0);
    cr_assert(a.version);
    cr_assert_eq(parse(&a, NULL, "--list", "--json", "/p", NULL), 0);
    cr_assert(a.list && a.json);
    cr_assert_eq(parse(&a, NULL, "--json", "/p", "--", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--list", "--json=1", "/p", NULL), ZKL_CLI_EXIT_USAGE);
}

/* PATH -c STRING: flock(1)'s shell command; --verbose. */
Test(cli_args, shell_command_and_verbose)
{
    zkl_cli_args a;
    cr_assert_eq(parse(&a, NULL, "--verbose", "/p", "-c", "echo $X; exit 3", NULL), 0);
    cr_assert(a.verbose);
    cr_assert_str_eq(a.shell_string, "echo $X; exit 3");
    cr_assert_str_eq(a.command[0], "/bin/sh");
    cr_assert_str_eq(a.command[1], "-c");
    cr_assert_str_eq(a.command[2], "echo $X; exit 3");
    cr_assert_null(a.command[3]);
    cr_assert_eq(parse(&a, NULL, "/p", "--command", "true", NULL), 0);
    cr_assert_str_eq(a.command[2], "true");
    cr_assert_eq(parse(&a, NULL, "/p", "--", "-c", "x", NULL), 0, "after --, -c is COMMAND's");
    cr_assert_str_eq(a.command[0], "-c");
    cr_assert_null(a.shell_string);
    cr_assert_eq(parse(&a, NULL, "/p", "-c", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "/p", "-c", "", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "/p", "-c", "echo", "hi", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--verbose=1", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "/p", "x", NULL), 0);
    cr_assert(!a.verbose);
}

Test(cli_args, bad_input)
{
    zkl_cli_args a;
    cr_assert_eq(parse(&a, NULL, NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "rel", "--", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "/p", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "/p", "--", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "/p", "--", "", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-w", "nan", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-w", "inf", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-w", "0x10", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-w", "1e99", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-w", "", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-E", "-1", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-E", "12abc", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--semaphore", "99999999999", "/p", "x", NULL),
                 ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-wx", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--zk", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--zk=", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--shared=1", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "-s", "--semaphore", "2", "/p", "x", NULL), ZKL_CLI_EXIT_USAGE);
}

/* The lease options: defaults scale with the session timeout, and what cannot
 * work (SIGKILL after the lease end, grace and margin over half the timeout)
 * is refused before anything is locked. */
Test(cli_args, lease_options)
{
    zkl_cli_args a;
    char err[256];
    int grace, kill_after;
    cr_assert_eq(parse(&a, NULL, "/p", "--", "x", NULL), 0);
    cr_assert_eq(zkl_cli_lease_fit(&a, 10000, &grace, &kill_after, err, sizeof err), 0);
    cr_assert_eq(grace, 1250);
    cr_assert_eq(kill_after, 625);
    cr_assert_eq(zkl_cli_lease_fit(&a, 2000, &grace, &kill_after, err, sizeof err), 0);
    cr_assert_eq(grace, 250);
    cr_assert_eq(kill_after, 125);
    cr_assert_eq(parse(&a, NULL, "--grace", "900", "--kill-after=300", "--lease-margin", "700",
                       "--session-timeout", "4000", "/p", "--", "x", NULL),
                 0);
    cr_assert_eq(a.grace_ms, 900);
    cr_assert_eq(a.kill_after_ms, 300);
    cr_assert_eq(a.lease_margin_ms, 700);
    /* granted less than asked: no longer fits */
    cr_assert_eq(zkl_cli_lease_fit(&a, 2000, &grace, &kill_after, err, sizeof err),
                 ZKL_CLI_EXIT_USAGE);
    cr_assert(strstr(err, "too short") || strstr(err, "--lease-margin"), "%s", err);
    cr_assert_eq(parse(&a, NULL, "--grace", "400", "--kill-after", "400", "/p", "--", "x", NULL),
                 ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(
        parse(&a, NULL, "--session-timeout", "1000", "--grace", "600", "/p", "--", "x", NULL),
        ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--lease-margin", "2600", "/p", "--", "x", NULL),
                 ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--grace", "0", "/p", "--", "x", NULL), ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--kill-after", NULL), ZKL_CLI_EXIT_USAGE);
    /* --list needs none of it */
    cr_assert_eq(parse(&a, NULL, "--list", "--grace", "9000", "/p", NULL), 0);
}

Test(cli_args, ensemble_lag)
{
    zkl_cli_args a;
    char err[256];
    int grace, kill_after;
    cr_assert_eq(parse(&a, NULL, "--ensemble-lag", "0", "/p", "--", "x", NULL), 0);
    cr_assert_eq(a.ensemble_lag_ms, 0, "0 is a standalone server");
    cr_assert_eq(parse(&a, NULL, "--ensemble-lag", "-1", "/p", "--", "x", NULL),
                 ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--ensemble-lag", "1250", "/p", "--", "x", NULL), 0);
    cr_assert_eq(a.ensemble_lag_ms, 1250);
    /* the grace shrinks to what is left of a quarter: 2500 - 1200 - 1250 */
    cr_assert_eq(zkl_cli_lease_fit(&a, 10000, &grace, &kill_after, err, sizeof err), 0);
    cr_assert_eq(grace, 50);
    cr_assert_eq(kill_after, 25);
    cr_assert_eq(parse(&a, NULL, "--ensemble-lag", "1250", "--session-timeout", "4000", "/p", "--",
                       "x", NULL),
                 ZKL_CLI_EXIT_USAGE);
    cr_assert_eq(parse(&a, NULL, "--ensemble-lag", "1250", "--grace", "900", "/p", "--", "x", NULL),
                 ZKL_CLI_EXIT_USAGE);
}
