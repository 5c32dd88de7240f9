/*
 * test_cli_args.c - the zklock command's parser, without a server.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
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
