/*
 * fuzz_cli_args.c - libFuzzer target for zkl_cli_parse (cli/args.c), the
 * zklock command's parser. The input is split into arguments at NUL bytes
 * (each its own allocation, so ASan sees a read past any one); argv[0] is
 * "zklock"; in an input ending in NUL the last argument is $ZKLOCK_SERVERS
 * instead. Besides "no crash" it checks what main.c relies on:
 *  - a failure is ZKL_CLI_EXIT_USAGE with a one-line message (an argument it
 *    quotes may bring a newline of its own);
 *  - a success without --help/--version has a PATH that zkl__path_validate
 *    accepts, taken from argv; with --list no COMMAND, else a non-empty
 *    COMMAND whose NULL-terminated array is the tail of argv;
 *  - the numbers are in the ranges the help text promises.
 */
#include "args.h"
#include "fuzz_check.h"
#include "base/path.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 2], err[160], *env = NULL;
    int argc = 0, rc, i;
    size_t start = 0, k;
    zkl_cli_args a;

    argv[argc++] = fuzz_cstr((const uint8_t *)"zklock", 6);
    for (k = 0; k < size && argc <= MAX_ARGS; k++) {
        if (data[k] == '\0') {
            argv[argc++] = fuzz_cstr(data + start, k - start);
            start = k + 1;
        }
    }
    if (start < size && argc <= MAX_ARGS)
        argv[argc++] = fuzz_cstr(data + start, size - start);
    if (size && data[size - 1] == '\0' && argc > 1)
        env = argv[--argc];
    argv[argc] = NULL;

    rc = zkl_cli_parse(argc, argv, env, &a, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == ZKL_CLI_EXIT_USAGE, "returned %d", rc);
        /* One line, unless it quotes an argument that has a newline itself. */
        FUZZ_CHECK(err[0] && memchr(err, '\0', sizeof err) &&
                       (!strchr(err, '\n') || memchr(data, '\n', size)),
                   "error '%s'", err);
    } else if (!a.help && !a.version) {
        FUZZ_CHECK(a.hosts && a.hosts[0], "no hosts");
        FUZZ_CHECK(a.path && zkl__path_validate(a.path) == ZKL_OK, "bad PATH accepted");
        for (i = 1; i < argc && argv[i] != a.path; i++)
            ;
        FUZZ_CHECK(i < argc, "PATH is not one of the arguments");
        if (a.list || a.leader) { /* they only read */
            FUZZ_CHECK(!a.command, "--list or --leader with a COMMAND");
            FUZZ_CHECK(!(a.list && a.leader), "--list and --leader both");
        } else if (a.shell_string) { /* PATH -c STRING: the shell runs STRING, the last argument */
            FUZZ_CHECK(a.command == a.shell_argv && a.shell_argv[2] == a.shell_string &&
                           a.shell_string == argv[argc - 1] && argc - 1 > i + 1,
                       "-c STRING is not the shell's, or not after PATH");
            FUZZ_CHECK(a.shell_string[0], "empty -c STRING");
        } else {
            FUZZ_CHECK(a.command && a.command > argv + i && a.command < argv + argc,
                       "COMMAND is not after PATH in argv");
            FUZZ_CHECK(a.command[0] && a.command[0][0], "empty COMMAND");
        }
        FUZZ_CHECK(a.timeout_ms >= -1 && a.timeout_ms <= 2000000000, "timeout %d", a.timeout_ms);
        FUZZ_CHECK(a.conflict_code >= 0 && a.conflict_code <= 255, "-E %d", a.conflict_code);
        FUZZ_CHECK(a.session_timeout_ms >= 1 && a.session_timeout_ms <= 3600000,
                   "session timeout %d", a.session_timeout_ms);
        FUZZ_CHECK(a.mode != ZKL_CLI_SEMAPHORE || (a.leases >= 1 && a.leases <= 1000000),
                   "%d leases", a.leases);
        FUZZ_CHECK(!a.id || a.mode == ZKL_CLI_ELECT, "--id without --elect");
    }
    for (i = 0; i < argc; i++)
        free(argv[i]);
    free(env);
    return 0;
}
