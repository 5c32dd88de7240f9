/*
 * test_excl_log.c - the exclusion checker itself: it must catch every kind of
 * overlap it exists for, or the tests built on it prove nothing.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "excl_log.h"

static excl_report check(const char *text, int max_shared)
{
    char file[] = "/tmp/excl-test-XXXXXX";
    int fd = mkstemp(file);
    excl_report r;
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    r = excl_check(file, max_shared);
    unlink(file);
    return r;
}

Test(excl_log, clean_alternation)
{
    excl_report r = check("M enter c-1 5\nM exit c-1 5\nM enter j-2 0\nM exit j-2 0\n"
                          "M enter c-1 9\nM exit c-1 9\n",
                          0);
    cr_assert_eq(r.violations, 0);
    cr_assert_eq(r.enters, 3);
    cr_assert_eq(r.handoffs_c_to_j, 1);
    cr_assert_eq(r.handoffs_j_to_c, 1);
    cr_assert_eq(r.token_regressions, 0);
}

Test(excl_log, catches_overlaps)
{
    cr_assert_eq(check("M enter c-1 0\nM enter j-2 0\nM exit j-2 0\nM exit c-1 0\n", 0).violations,
                 1);
    cr_assert_eq(check("R enter c-1 0\nW enter j-2 0\n", 0).violations, 1);
    cr_assert_eq(check("W enter c-1 0\nR enter j-2 0\n", 0).violations, 1);
    cr_assert_eq(check("S enter a 0\nS enter b 0\nS enter c 0\n", 2).violations, 1);
    cr_assert_eq(
        check("M enter c-1 7\nM exit c-1 7\nM enter c-1 7\nM exit c-1 7\n", 0).token_regressions,
        1);
    cr_assert_eq(check("garbage\n", 0).malformed, 1);
}

Test(excl_log, readers_share_and_downgrade_is_allowed)
{
    excl_report r = check("R enter a 0\nR enter b 0\nR exit a 0\nR exit b 0\n"
                          "W enter a 0\nR enter a 0\nW exit a 0\nR enter b 0\nR exit a 0\n"
                          "R exit b 0\n",
                          0);
    cr_assert_eq(r.violations, 0, "%s", r.first_error);
    cr_assert_eq(r.max_readers, 2);
}
