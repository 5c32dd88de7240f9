/*
 * oom_env.c - out-of-memory injection for a whole program (the zklock
 * command, in tests/cli/test_cli_oom.sh): ZKL_OOM_FAIL_AT=N arms oom.c to
 * fail the program's Nth allocation from its start, and at exit the file
 * named by ZKL_OOM_REPORT gets "failed" or "not reached" (the run made
 * fewer than N allocations: the loop that raises N is done).
 */
#include <stdio.h>
#include <stdlib.h>

#include "oom.h"

__attribute__((constructor)) static void oom_from_env(void)
{
    const char *at = getenv("ZKL_OOM_FAIL_AT");
    if (at && *at)
        zkt_countdown_arm(&zkt_oom, strtol(at, NULL, 10));
}

__attribute__((destructor)) static void oom_report(void)
{
    const char *file = getenv("ZKL_OOM_REPORT");
    FILE *f;
    zkt_countdown_arm(&zkt_oom, 0); /* stdio's own buffer must not fail */
    if (!file || !*file || !(f = fopen(file, "w")))
        return;
    fprintf(f, "%s\n", zkt_countdown_failed(&zkt_oom) ? "failed" : "not reached");
    fclose(f);
}
