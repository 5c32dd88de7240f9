/*
 * excl_check_main.c - the exclusion checker as a command, for shell tests:
 *   excl_check FILE [MAX_SHARED]
 * prints the report and exits 1 on any violation or token regression.
 */
#include <stdio.h>
#include <stdlib.h>

#include "excl_log.h"

int main(int argc, char **argv)
{
    excl_report r;
    if (argc < 2) {
        fprintf(stderr, "usage: excl_check FILE [MAX_SHARED]\n");
        return 2;
    }
    r = excl_check(argv[1], argc > 2 ? atoi(argv[2]) : 0);
    printf("lines=%d enters=%d violations=%d token_regressions=%d max_readers=%d max_shared=%d "
           "malformed=%d%s%s\n",
           r.lines, r.enters, r.violations, r.token_regressions, r.max_readers, r.max_shared,
           r.malformed, r.first_error[0] ? " first_error=" : "", r.first_error);
    return r.violations || r.token_regressions || r.malformed ? 1 : 0;
}
