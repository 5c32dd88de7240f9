/*
 * test_driver.c - the drivers' decisions (core/drivers.c) and the core's
 * reading of them (core/decide.c: the hand-off and the look-ahead) on
 * hand-made, sorted child lists: who holds, whom to watch, foreign names.
 * No server.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/seq.h"
#include "core/driver.h"

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
    zkl__verdict v;
    (void)names;
    v = zkl__decide_standard(1, 2);
    cr_assert(v.holds);
    v = zkl__decide_standard(2, 2);
    cr_assert_not(v.holds);
    cr_assert_eq(v.watch, 0);
}

/* ---- read/write and lease drivers ---- */

#define R0 "_c_aaaaaaaa-f501-47b0-b66a-1afeebcbeb00-__READ__0000000000"
#define W1 "_c_bbbbbbbb-f501-47b0-b66a-1afeebcbeb00-__WRIT__0000000001"
#define R2 "_c_cccccccc-f501-47b0-b66a-1afeebcbeb00-__READ__0000000002"
#define W3 "_c_dddddddd-f501-47b0-b66a-1afeebcbeb00-__WRIT__0000000003"
#define R4 "_c_eeeeeeee-f501-47b0-b66a-1afeebcbeb00-__READ__0000000004"
#define R1D "_c_ffffffff-f501-47b0-b66a-1afeebcbeb00-__READ__0000000001" /* 5.5 downgrade */

static zkl__verdict rw(const zkl__driver *d, char **names, size_t n, const char *self,
                       const void *ctx)
{
    size_t i;
    cr_assert_eq(zkl__sort_names(names, n, d->sort_markers), ZKL_OK);
    for (i = 0; i < n; i++)
        if (strcmp(names[i], self) == 0)
            return zkl__decide(d, names, n, i, ctx);
    cr_assert_fail("self not in list");
    return (zkl__verdict){false, -1, false, 0};
}

Test(driver, readers_share)
{
    char *names[] = {R2, R0, R4};
    cr_assert(rw(&zkl__read_driver, names, 3, R4, NULL).holds);
    cr_assert(rw(&zkl__read_driver, names, 3, R2, NULL).holds);
}

Test(driver, reader_watches_nearest_writer_ahead)
{
    char *names[] = {R4, W3, R2, W1, R0};
    zkl__verdict v = rw(&zkl__read_driver, names, 5, R4, NULL);
    cr_assert_not(v.holds);
    cr_assert_str_eq(names[v.watch], W3, "must watch the nearest writer, not the first");
    v = rw(&zkl__read_driver, names, 5, R2, NULL);
    cr_assert_str_eq(names[v.watch], W1);
    cr_assert(rw(&zkl__read_driver, names, 5, R0, NULL).holds, "no writer ahead");
}

Test(driver, reader_ignores_plain_mutex_nodes)
{
    char *names[] = {"_c_x-lock-0000000000", R2};
    cr_assert(rw(&zkl__read_driver, names, 2, R2, NULL).holds);
}

Test(driver, writer_needs_first_place)
{
    char *names[] = {R0, W1, R2, W3};
    zkl__verdict v = rw(&zkl__write_driver, names, 4, W1, NULL);
    cr_assert_not(v.holds);
    cr_assert_str_eq(names[v.watch], R0, "a writer watches its predecessor of any kind");
    v = rw(&zkl__write_driver, names, 4, W3, NULL);
    cr_assert_str_eq(names[v.watch], R2);
    {
        char *alone[] = {W1};
        cr_assert(rw(&zkl__write_driver, alone, 1, W1, NULL).holds);
    }
}

Test(driver, writer_handoff_without_listing_only_behind_a_reader)
{
    /* behind a reader at the head: nothing can come ahead, its going grants */
    char *r[] = {R0, W1};
    char *w[] = {W1, W3};
    cr_assert(rw(&zkl__write_driver, r, 2, W1, NULL).flags & ZKL__V_HANDOFF);
    /* behind a writer at the head: it may downgrade (a read node at its
     * sequence), so we must list again */
    cr_assert_not(rw(&zkl__write_driver, w, 2, W3, NULL).flags & ZKL__V_HANDOFF);
    cr_assert(rw(&zkl__write_driver, w, 2, W3, NULL).flags & ZKL__V_NO_LOOKAHEAD,
              "behind a writer a look-ahead could never pay");
    cr_assert_not(rw(&zkl__write_driver, r, 2, W1, NULL).flags & ZKL__V_NO_LOOKAHEAD);
    {
        char *deep[] = {R0, R2, W3};
        cr_assert_not(rw(&zkl__write_driver, deep, 3, W3, NULL).flags & ZKL__V_HANDOFF,
                      "a reader not at the head: others ahead may still hold");
    }
}

Test(driver, downgrade_read_node_skips_own_writer)
{
    /* W1 and its downgrade read node R1D share a sequence; tie order is arbitrary */
    char *a[] = {W1, R1D, W3};
    char *b[] = {R1D, W1, W3};
    cr_assert(rw(&zkl__read_driver, a, 3, R1D, W1).holds);
    cr_assert(rw(&zkl__read_driver, b, 3, R1D, W1).holds);
    cr_assert_not(rw(&zkl__read_driver, a, 3, R1D, NULL).holds, "another's writer blocks");
    {
        zkl__verdict v = rw(&zkl__write_driver, a, 3, W3, NULL);
        cr_assert_not(v.holds, "a queued writer waits behind the downgraded reader");
    }
}

Test(driver, lease_count)
{
    char *names[] = {"_c_a-lease-0000000000", "_c_b-lease-0000000001", "_c_c-lease-0000000002"};
    int max = 3;
    zkl__verdict v = zkl__lease_driver.decide(&zkl__lease_driver, names, 3, 2, &max);
    cr_assert(v.holds);
    max = 2;
    v = zkl__lease_driver.decide(&zkl__lease_driver, names, 3, 0, &max);
    cr_assert_not(v.holds);
    cr_assert(v.watch_parent, "the lease count is watched on the list itself");
}

/* The core's hand-off on the mutex: only the one just behind the holder. */
Test(driver, mutex_handoff_only_second_in_line)
{
    char *names[] = {N0, N1, N2};
    zkl__verdict v;
    cr_assert_eq(zkl__sort_names(names, 3, zkl__mutex_driver.sort_markers), ZKL_OK);
    v = zkl__decide(&zkl__mutex_driver, names, 3, 1, NULL);
    cr_assert(v.flags & ZKL__V_HANDOFF, "second in line: the holder's going grants");
    v = zkl__decide(&zkl__mutex_driver, names, 3, 2, NULL);
    cr_assert_not(v.flags & ZKL__V_HANDOFF, "third: the second is still ahead");
    cr_assert_not(v.flags & ZKL__V_NO_LOOKAHEAD);
    cr_assert_str_eq(names[0], N0, "the listing is given back as it was");
    cr_assert_str_eq(names[1], N1);
    cr_assert_str_eq(names[2], N2);
}

/* A reader's hand-off: only if the watched writer is the last one ahead. */
Test(driver, reader_handoff_only_behind_the_last_writer)
{
    char *one[] = {W1, R2};
    char *two[] = {W1, W3, R4};
    cr_assert(rw(&zkl__read_driver, one, 2, R2, NULL).flags & ZKL__V_HANDOFF);
    cr_assert_not(rw(&zkl__read_driver, two, 3, R4, NULL).flags & ZKL__V_HANDOFF,
                  "another writer is still ahead");
}

Test(driver, driver_of_a_node_name)
{
    cr_assert_eq(zkl__driver_of(R0), &zkl__read_driver);
    cr_assert_eq(zkl__driver_of(W1), &zkl__write_driver);
    cr_assert_eq(zkl__driver_of(N0), &zkl__mutex_driver);
}

Test(driver, lease_count_is_never_a_handoff)
{
    char *names[] = {"_c_a-lease-0000000000", "_c_b-lease-0000000001", "_c_c-lease-0000000002"};
    int max = 2;
    zkl__verdict v = zkl__decide(&zkl__lease_driver, names, 3, 2, &max);
    cr_assert(v.watch_parent);
    cr_assert_eq(v.flags, 0u);
}
