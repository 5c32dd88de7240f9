/*
 * test_driver.c - the drivers' decisions (core/policy/drivers.c) and the core's
 * reading of them (core/policy/drivers.c, zkl__decide: the hand-off and the look-ahead) on
 * hand-made child lists: who holds, whom to watch, foreign names. Each view
 * is found in one pass over the listing as given (zkl__line_of) and checked
 * against the view from the full sort (zkl__line_at). No server.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/seq.h"
#include "core/policy/driver.h"

#define N0 "_c_aaaaaaaa-f501-47b0-b66a-1afeebcbeb00-lock-0000000000"
#define N1 "_c_bbbbbbbb-f501-47b0-b66a-1afeebcbeb00-lock-0000000001"
#define N2 "_c_cccccccc-f501-47b0-b66a-1afeebcbeb00-lock-0000000002"

#define R0 "_c_aaaaaaaa-f501-47b0-b66a-1afeebcbeb00-__READ__0000000000"
#define W1 "_c_bbbbbbbb-f501-47b0-b66a-1afeebcbeb00-__WRIT__0000000001"
#define R2 "_c_cccccccc-f501-47b0-b66a-1afeebcbeb00-__READ__0000000002"
#define W3 "_c_dddddddd-f501-47b0-b66a-1afeebcbeb00-__WRIT__0000000003"
#define R4 "_c_eeeeeeee-f501-47b0-b66a-1afeebcbeb00-__READ__0000000004"
#define R1D "_c_ffffffff-f501-47b0-b66a-1afeebcbeb00-__READ__0000000001" /* 5.5 downgrade */

typedef struct seen {
    zkl__line l;
    zkl__verdict v;
} seen;

/* The name a verdict watches, in its view. */
#define WATCHED(s) ((s).l.v[(s).v.watch])

/* d's verdict (with the core's flags) for self in names, as listed. */
static seen look(const zkl__driver *d, char **names, size_t n, const char *self, const void *ctx)
{
    char *sorted[16];
    zkl__line full;
    seen s;
    size_t i;
    cr_assert(n <= 16);
    cr_assert(zkl__view(d, names, n, self, ctx, &s.l), "self not in list");
    memcpy(sorted, names, n * sizeof *names);
    cr_assert_eq(zkl__sort_names(sorted, n, d->sort_markers), ZKL_OK);
    for (i = 0; i < n && strcmp(sorted[i], self) != 0; i++)
        ;
    zkl__line_at(sorted, n, i, d->counts, ctx, &full);
    cr_assert_eq(s.l.n, n);
    cr_assert_eq(s.l.rank, full.rank, "rank %zu, the full sort says %zu", s.l.rank, full.rank);
    cr_assert_eq(s.l.m, full.m);
    for (i = 0; i < full.m; i++)
        cr_assert_eq(s.l.v[i], full.v[i], "view %zu: %s, the full sort says %s", i, s.l.v[i],
                     full.v[i]);
    s.v = zkl__decide(d, &s.l, ctx);
    return s;
}

static seen mutex(char **names, size_t n, const char *self)
{
    return look(&zkl__mutex_driver, names, n, self, NULL);
}

Test(driver, first_holds)
{
    char *names[] = {N1, N2, N0};
    cr_assert(mutex(names, 3, N0).v.holds);
}

Test(driver, others_watch_predecessor)
{
    char *names[] = {N2, N0, N1}; /* in line: N0 N1 N2 */
    seen s = mutex(names, 3, N2);
    cr_assert_not(s.v.holds);
    cr_assert_str_eq(WATCHED(s), N1);
    cr_assert_eq(s.l.rank, 2);
    s = mutex(names, 3, N1);
    cr_assert_str_eq(WATCHED(s), N0);
}

Test(driver, view_keeps_the_nearest_two_ahead)
{
    char *names[] = {N2, "_c_x-lock-0000000005", N0, "_c_y-lock-0000000004",
                     N1, "_c_z-lock-0000000003"};
    seen s = mutex(names, 6, "_c_x-lock-0000000005");
    cr_assert_eq(s.l.rank, 5);
    cr_assert_eq(s.l.m, 3);
    cr_assert_str_eq(s.l.v[0], "_c_z-lock-0000000003");
    cr_assert_str_eq(WATCHED(s), "_c_y-lock-0000000004");
}

Test(driver, self_missing_is_no_view)
{
    char *names[] = {N0, N1};
    zkl__line l;
    cr_assert_not(zkl__view(&zkl__mutex_driver, names, 2, N2, NULL, &l));
    cr_assert_not(zkl__view(&zkl__mutex_driver, names, 0, N2, NULL, &l));
}

Test(driver, foreign_lock_name_orders_by_sequence)
{
    char *names[] = {N1, "plain-lock-0000000000"};
    seen s = mutex(names, 2, N1);
    cr_assert_not(s.v.holds, "a foreign ...lock-<seq> node ahead of us blocks, as in Curator");
    cr_assert_str_eq(WATCHED(s), "plain-lock-0000000000");
}

Test(driver, foreign_name_without_marker_sorts_last)
{
    char *names[] = {"x-010000065e5d0004-0000000000", N1};
    cr_assert(mutex(names, 2, N1).v.holds);
    cr_assert_not(mutex(names, 2, "x-010000065e5d0004-0000000000").v.holds);
}

Test(driver, equal_keys_go_by_listing_order)
{
    /* two names of one sequence (a foreign writer of equal text): the first listed is ahead */
    char *names[] = {"_c_b-lock-0000000007", "_c_a-lock-0000000007"};
    cr_assert(mutex(names, 2, "_c_b-lock-0000000007").v.holds);
    cr_assert_not(mutex(names, 2, "_c_a-lock-0000000007").v.holds);
}

/* ---- read/write and lease drivers ---- */

static seen rw(const zkl__driver *d, char **names, size_t n, const char *self, const void *ctx)
{
    return look(d, names, n, self, ctx);
}

Test(driver, readers_share)
{
    char *names[] = {R2, R0, R4};
    cr_assert(rw(&zkl__read_driver, names, 3, R4, NULL).v.holds);
    cr_assert(rw(&zkl__read_driver, names, 3, R2, NULL).v.holds);
}

Test(driver, reader_watches_nearest_writer_ahead)
{
    char *names[] = {R4, W3, R2, W1, R0};
    seen s = rw(&zkl__read_driver, names, 5, R4, NULL);
    cr_assert_not(s.v.holds);
    cr_assert_str_eq(WATCHED(s), W3, "must watch the nearest writer, not the first");
    cr_assert_str_eq(s.l.v[0], W1, "a reader's view holds writers only");
    s = rw(&zkl__read_driver, names, 5, R2, NULL);
    cr_assert_str_eq(WATCHED(s), W1);
    cr_assert(rw(&zkl__read_driver, names, 5, R0, NULL).v.holds, "no writer ahead");
}

Test(driver, reader_ignores_plain_mutex_nodes)
{
    char *names[] = {"_c_x-lock-0000000000", R2};
    cr_assert(rw(&zkl__read_driver, names, 2, R2, NULL).v.holds);
}

Test(driver, writer_needs_first_place)
{
    char *names[] = {R0, W1, R2, W3};
    seen s = rw(&zkl__write_driver, names, 4, W1, NULL);
    cr_assert_not(s.v.holds);
    cr_assert_str_eq(WATCHED(s), R0, "a writer watches its predecessor of any kind");
    s = rw(&zkl__write_driver, names, 4, W3, NULL);
    cr_assert_str_eq(WATCHED(s), R2);
    {
        char *alone[] = {W1};
        cr_assert(rw(&zkl__write_driver, alone, 1, W1, NULL).v.holds);
    }
}

Test(driver, writer_handoff_without_listing_only_behind_a_reader)
{
    /* behind a reader at the head: nothing can come ahead, its going grants */
    char *r[] = {R0, W1};
    char *w[] = {W1, W3};
    cr_assert(rw(&zkl__write_driver, r, 2, W1, NULL).v.flags & ZKL__V_HANDOFF);
    /* behind a writer at the head: it may downgrade (a read node at its
     * sequence), so we must list again */
    cr_assert_not(rw(&zkl__write_driver, w, 2, W3, NULL).v.flags & ZKL__V_HANDOFF);
    cr_assert(rw(&zkl__write_driver, w, 2, W3, NULL).v.flags & ZKL__V_NO_LOOKAHEAD,
              "behind a writer a look-ahead could never pay");
    cr_assert_not(rw(&zkl__write_driver, r, 2, W1, NULL).v.flags & ZKL__V_NO_LOOKAHEAD);
    {
        char *deep[] = {R0, R2, W3};
        cr_assert_not(rw(&zkl__write_driver, deep, 3, W3, NULL).v.flags & ZKL__V_HANDOFF,
                      "a reader not at the head: others ahead may still hold");
    }
}

Test(driver, downgrade_read_node_skips_own_writer)
{
    /* W1 and its downgrade read node R1D share a sequence; tie order is arbitrary */
    char *a[] = {W1, R1D, W3};
    char *b[] = {R1D, W1, W3};
    cr_assert(rw(&zkl__read_driver, a, 3, R1D, W1).v.holds);
    cr_assert(rw(&zkl__read_driver, b, 3, R1D, W1).v.holds);
    cr_assert_not(rw(&zkl__read_driver, a, 3, R1D, NULL).v.holds, "another's writer blocks");
    cr_assert_not(rw(&zkl__write_driver, a, 3, W3, NULL).v.holds,
                  "a queued writer waits behind the downgraded reader");
}

Test(driver, lease_count)
{
    char *names[] = {"_c_a-lease-0000000000", "_c_b-lease-0000000001", "_c_c-lease-0000000002"};
    int max = 3;
    seen s = rw(&zkl__lease_driver, names, 3, names[2], &max);
    cr_assert(s.v.holds);
    cr_assert_eq(s.l.m, 1, "the lease count needs no names ahead");
    max = 2;
    s = rw(&zkl__lease_driver, names, 3, names[0], &max);
    cr_assert_not(s.v.holds);
    cr_assert(s.v.watch_parent, "the lease count is watched on the list itself");
}

/* The core's hand-off on the mutex: only the one just behind the holder. */
Test(driver, mutex_handoff_only_second_in_line)
{
    char *names[] = {N2, N1, N0};
    seen s = mutex(names, 3, N1);
    cr_assert(s.v.flags & ZKL__V_HANDOFF, "second in line: the holder's going grants");
    s = mutex(names, 3, N2);
    cr_assert_not(s.v.flags & ZKL__V_HANDOFF, "third: the second is still ahead");
    cr_assert_not(s.v.flags & ZKL__V_NO_LOOKAHEAD);
    cr_assert_str_eq(s.l.v[s.v.watch - 1], N0, "the look-ahead: the one before the watched");
}

/* A reader's hand-off: only if the watched writer is the last one ahead. */
Test(driver, reader_handoff_only_behind_the_last_writer)
{
    char *one[] = {W1, R2};
    char *two[] = {W1, W3, R4};
    char *three[] = {W1, R0, W3, R2, R4}; /* W1's read node... and more writers */
    seen s;
    cr_assert(rw(&zkl__read_driver, one, 2, R2, NULL).v.flags & ZKL__V_HANDOFF);
    cr_assert_not(rw(&zkl__read_driver, two, 3, R4, NULL).v.flags & ZKL__V_HANDOFF,
                  "another writer is still ahead");
    s = rw(&zkl__read_driver, three, 5, R4, NULL);
    cr_assert_not(s.v.flags & ZKL__V_HANDOFF);
    cr_assert_str_eq(s.l.v[s.v.watch - 1], W1, "a reader looks ahead at the writer before");
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
    seen s = rw(&zkl__lease_driver, names, 3, names[2], &max);
    cr_assert(s.v.watch_parent);
    cr_assert_eq(s.v.flags, 0u);
}
