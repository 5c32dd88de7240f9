/*
 * test_driver.c - the standard driver's decision on hand-made, sorted child
 * lists: who holds, whom to watch, foreign names. No server.
 */
#include <criterion/criterion.h>

#include "internals.h"
#include "seq.h"

extern const zkl__driver zkl__mutex_driver;

#define N0 "_c_aaaaaaaa-f501-47b0-b66a-1afeebcbeb00-lock-0000000000"
#define N1 "_c_bbbbbbbb-f501-47b0-b66a-1afeebcbeb00-lock-0000000001"
#define N2 "_c_cccccccc-f501-47b0-b66a-1afeebcbeb00-lock-0000000002"

static zkl__verdict decide(char **names, size_t n, size_t self)
{
    cr_assert_eq(zkl__sort_names(names, n, zkl__mutex_driver.sort_markers), ZKL_OK);
    return zkl__mutex_driver.decide(&zkl__mutex_driver, names, n, self, NULL);
}

Test(driver, first_holds)
{
    char *names[] = {N0, N1, N2};
    zkl__verdict v = decide(names, 3, 0);
    cr_assert(v.holds);
}

Test(driver, others_watch_predecessor)
{
    char *names[] = {N2, N0, N1}; /* sorted to N0 N1 N2 */
    zkl__verdict v = decide(names, 3, 2);
    cr_assert_not(v.holds);
    cr_assert_eq(v.watch, 1);
    cr_assert_str_eq(names[v.watch], N1);
    v = decide(names, 3, 1);
    cr_assert_eq(v.watch, 0);
}

Test(driver, foreign_lock_name_orders_by_sequence)
{
    char *names[] = {N1, "plain-lock-0000000000"};
    zkl__verdict v;
    cr_assert_eq(zkl__sort_names(names, 2, zkl__mutex_driver.sort_markers), ZKL_OK);
    cr_assert_str_eq(names[0], "plain-lock-0000000000");
    v = zkl__mutex_driver.decide(&zkl__mutex_driver, names, 2, 1, NULL);
    cr_assert_not(v.holds, "a foreign ...lock-<seq> node ahead of us blocks, as in Curator");
}

Test(driver, foreign_name_without_marker_sorts_last)
{
    char *names[] = {"x-010000065e5d0004-0000000000", N1};
    zkl__verdict v;
    cr_assert_eq(zkl__sort_names(names, 2, zkl__mutex_driver.sort_markers), ZKL_OK);
    cr_assert_str_eq(names[0], N1);
    v = zkl__mutex_driver.decide(&zkl__mutex_driver, names, 2, 0, NULL);
    cr_assert(v.holds);
}

Test(driver, standard_with_leases)
{
    char *names[] = {N0, N1, N2};
    zkl__verdict v = zkl__decide_standard(names, 3, 1, 2);
    cr_assert(v.holds);
    v = zkl__decide_standard(names, 3, 2, 2);
    cr_assert_not(v.holds);
    cr_assert_eq(v.watch, 0);
}
