/*
 * test_inproc.c - the in-process room (core/engine/inproc.h) without a server:
 * one record per line, freed with its last reference; nodes made by
 * sequence; the bell a grant two places ahead rings; the joiner's await;
 * and a NULL record (the room turned off) that knows nothing.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/tuning.h"
#include "core/engine/inproc.h"

/* A node name of sequence seq, as the server spells it. */
static const char *node(char *buf, size_t n, int32_t seq)
{
    snprintf(buf, n, "_c_0badc0de-0000-4000-8000-000000000001-lock-%010d", (int)seq);
    return buf;
}

struct rung {
    int n;
    void *c, *waiter;
};

static void ring(void *c, void *waiter)
{
    struct rung *r = waiter;
    r->n++;
    r->c = c;
    r->waiter = waiter;
}

/* The record of a line with two lock objects on it: its nodes are noted. */
static zkl__inproc *line_of_two(const char *chroot, const char *path)
{
    zkl__inproc *p = zkl__inproc_get(chroot, path);
    zkl__inproc_object(p, 1);
    zkl__inproc_object(p, 1);
    return p;
}

/* Sequences from..to noted in p, made by sessions 1, 2, 1, 2, ... */
static void made(zkl__inproc *p, int32_t from, int32_t to)
{
    char buf[128];
    int32_t s;
    for (s = from; s <= to; s++)
        zkl__inproc_made(p, node(buf, sizeof buf, s), s, 1 + s % 2);
}

Test(inproc, one_record_per_line_freed_with_its_last_reference)
{
    size_t before = zkl__inproc_count();
    zkl__inproc *a = line_of_two(NULL, "/r/a"), *a2 = line_of_two(NULL, "/r/a");
    zkl__inproc *b = line_of_two("/chroot", "/r/a");
    char buf[128], name[128];
    cr_assert(a && b);
    cr_assert_eq(a, a2, "two records of one line");
    cr_assert_neq(a, b, "a chroot's line taken for another's");
    cr_assert_eq(zkl__inproc_count(), before + 2);
    made(a, 10, 10);
    cr_assert_eq(zkl__inproc_made_at(b, 10, name, sizeof name), 0, "another line's note");
    zkl__inproc_put(a);
    cr_assert_eq(zkl__inproc_made_at(a2, 10, name, sizeof name), 1, "forgotten while referenced");
    zkl__inproc_put(a2);
    zkl__inproc_put(b);
    cr_assert_eq(zkl__inproc_count(), before, "a record outlived its last reference");
    a = line_of_two(NULL, "/r/a");
    cr_assert_eq(zkl__inproc_made_at(a, 10, name, sizeof name), 0,
                 "a freed record's note came back");
    cr_assert_not(zkl__inproc_seen(a, node(buf, sizeof buf, 10), 1));
    zkl__inproc_put(a);
    zkl__inproc_put(NULL);
}

Test(inproc, a_null_record_knows_nothing)
{
    char buf[128], name[128];
    struct rung r = {0};
    zkl__inproc_made(NULL, node(buf, sizeof buf, 5), 5, 1);
    zkl__inproc_granted(NULL, node(buf, sizeof buf, 5), 5, 1);
    cr_assert_eq(zkl__inproc_made_by(NULL, node(buf, sizeof buf, 5), 5), 0);
    cr_assert_eq(zkl__inproc_made_at(NULL, 5, name, sizeof name), 0);
    cr_assert_not(zkl__inproc_others_joined(NULL, 2));
    cr_assert_not(zkl__inproc_seen(NULL, node(buf, sizeof buf, 5), 1));
    cr_assert_not(zkl__inproc_bell(NULL, node(buf, sizeof buf, 7), 7, ring, NULL, &r));
    cr_assert_not(zkl__inproc_create_sent(NULL));
    cr_assert_not(zkl__inproc_await(NULL, 4, ring, NULL, &r));
    zkl__inproc_create_done(NULL);
    zkl__inproc_left(NULL, 4);
    zkl__inproc_unawait(NULL, 4, &r);
    zkl__inproc_drop(NULL, 7, &r);
    cr_assert_eq(r.n, 0);
}

Test(inproc, finds_a_node_made_here_by_its_sequence)
{
    zkl__inproc *p = line_of_two(NULL, "/h/made");
    char buf[128], name[128];
    made(p, 10, 11);
    cr_assert_eq(zkl__inproc_made_at(p, 10, name, sizeof name), 1);
    cr_assert_str_eq(name, node(buf, sizeof buf, 10));
    cr_assert_eq(zkl__inproc_made_by(p, node(buf, sizeof buf, 11), 11), 2);
    cr_assert_eq(zkl__inproc_made_by(p, node(buf, sizeof buf, 12), 11), 0, "another name");
    cr_assert_eq(zkl__inproc_made_at(p, 12, name, sizeof name), 0, "never made");
    cr_assert_eq(zkl__inproc_made_at(p, 10, name, 8), 0, "no room for the name");
    cr_assert(zkl__inproc_others_joined(p, 1), "the last noted is session 2's");
    cr_assert_not(zkl__inproc_others_joined(p, 2));
    zkl__inproc_put(p);
}

Test(inproc, a_grant_two_places_ahead_rings_the_bell_once)
{
    zkl__inproc *p = line_of_two(NULL, "/h/bell");
    char buf[128];
    struct rung r = {0};
    int c;
    made(p, 20, 23);
    zkl__inproc_granted(p, node(buf, sizeof buf, 20), 20, 1); /* 20 holds */
    cr_assert(zkl__inproc_seen(p, node(buf, sizeof buf, 20), 1));
    cr_assert_not(zkl__inproc_seen(p, node(buf, sizeof buf, 20), 2), "another owner");
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 23), 23, ring, &c, &r));
    zkl__inproc_granted(p, node(buf, sizeof buf, 20), 20, 1);
    cr_assert_eq(r.n, 0, "a grant three places ahead rang");
    zkl__inproc_granted(p, node(buf, sizeof buf, 21), 21, 2);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.c, &c);
    cr_assert_eq(r.waiter, &r);
    zkl__inproc_granted(p, node(buf, sizeof buf, 22), 22, 1);
    cr_assert_eq(r.n, 1, "rang twice");
    zkl__inproc_put(p);
}

Test(inproc, no_bell_when_the_lock_is_two_places_ahead_already)
{
    zkl__inproc *p = line_of_two(NULL, "/h/near");
    char buf[128];
    struct rung r = {0};
    made(p, 30, 33);
    zkl__inproc_granted(p, node(buf, sizeof buf, 30), 30, 1);
    cr_assert_not(zkl__inproc_bell(p, node(buf, sizeof buf, 31), 31, ring, NULL, &r),
                  "the node just ahead holds");
    cr_assert_not(zkl__inproc_bell(p, node(buf, sizeof buf, 32), 32, ring, NULL, &r),
                  "the node two ahead holds");
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 33), 33, ring, NULL, &r));
    cr_assert_not(zkl__inproc_bell(p, "_c_x-lock-0000000034", 34, ring, NULL, &r),
                  "a node not noted here");
    cr_assert_not(zkl__inproc_bell(p, node(buf, sizeof buf, 1), 1, ring, NULL, &r),
                  "no place for two nodes ahead");
    zkl__inproc_put(p);
}

Test(inproc, a_dropped_bell_does_not_ring)
{
    zkl__inproc *p = line_of_two(NULL, "/h/drop");
    char buf[128];
    struct rung r = {0}, q = {0};
    int c;
    made(p, 40, 43);
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 42), 42, ring, &c, &r));
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 43), 43, ring, &c, &q));
    zkl__inproc_drop(p, 42, &q); /* not q's: kept */
    zkl__inproc_drop(p, 42, &r);
    zkl__inproc_granted(p, node(buf, sizeof buf, 41), 41, 2);
    cr_assert_eq(r.n, 0, "a dropped bell rang");
    cr_assert_eq(q.n, 1, "the other waiter's bell did not ring");
    zkl__inproc_put(p);
}

Test(inproc, the_oldest_note_pushed_out_rings_its_bell)
{
    zkl__inproc *p = line_of_two(NULL, "/h/full");
    char buf[128], name[128];
    struct rung r = {0};
    made(p, 2, 3);
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 2), 2, ring, NULL, &r));
    made(p, 4, ZKL_INPROC_MADE + 1); /* fills the table: 2 goes first */
    cr_assert_eq(r.n, 0);
    made(p, ZKL_INPROC_MADE + 2, ZKL_INPROC_MADE + 2);
    cr_assert_eq(r.n, 1, "a waiter lost its bell with its note, untold");
    cr_assert_eq(zkl__inproc_made_at(p, 2, name, sizeof name), 0);
    cr_assert_eq(zkl__inproc_made_at(p, 3, name, sizeof name), 2);
    zkl__inproc_put(p);
}

Test(inproc, a_node_leaving_unheld_rings_the_two_bells_behind_it)
{
    zkl__inproc *p = line_of_two(NULL, "/t/left");
    char buf[128];
    struct rung r1 = {0}, r2 = {0};
    made(p, 20, 23);
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 22), 22, ring, NULL, &r1));
    cr_assert(zkl__inproc_bell(p, node(buf, sizeof buf, 23), 23, ring, NULL, &r2));
    zkl__inproc_left(p, 21); /* rings 22 and 23 */
    cr_assert_eq(r1.n, 1);
    cr_assert_eq(r2.n, 1);
    zkl__inproc_left(p, 21); /* once */
    cr_assert_eq(r1.n + r2.n, 2);
    zkl__inproc_left(p, -1);
    zkl__inproc_left(p, INT32_MAX);
    zkl__inproc_put(p);
}

Test(inproc, a_joiner_awaits_the_note_while_a_create_is_in_flight)
{
    zkl__inproc *p = line_of_two(NULL, "/t/await");
    char buf[128];
    struct rung r = {0}, q = {0}, u = {0};
    cr_assert_not(zkl__inproc_await(p, 9, ring, NULL, &r), "nothing in flight");
    cr_assert(zkl__inproc_create_sent(p));
    cr_assert(zkl__inproc_create_sent(p));
    cr_assert(zkl__inproc_await(p, 9, ring, NULL, &r));
    cr_assert_not(zkl__inproc_await(p, 9, ring, NULL, &q), "two joiners for one node");
    cr_assert(zkl__inproc_await(p, 12, ring, NULL, &q));
    cr_assert(zkl__inproc_await(p, 13, ring, NULL, &u));
    zkl__inproc_unawait(p, 13, &r); /* not r's */
    zkl__inproc_unawait(p, 13, &u);
    zkl__inproc_made(p, node(buf, sizeof buf, 9), 9, 1);
    cr_assert_eq(r.n, 1, "the note did not tell its joiner");
    cr_assert_not(zkl__inproc_await(p, 9, ring, NULL, &r), "noted already");
    zkl__inproc_create_done(p);
    cr_assert_eq(q.n, 0, "told while a create is still in flight");
    zkl__inproc_create_done(p);
    cr_assert_eq(q.n, 1, "nothing in flight, and the joiner still awaits");
    cr_assert_eq(u.n, 0, "an unawaited joiner was told");
    cr_assert_eq(r.n, 1);
    zkl__inproc_put(p);
}

/*
 * The grants ring: made at the first grant and grown as it fills, it
 * remembers the last ZKL_INPROC_GRANTS grants (by name and owner), so the
 * first of them is seen until that many more have come, and not after.
 */
Test(inproc, the_last_grants_are_seen_and_the_older_pushed_out)
{
    zkl__inproc *p = line_of_two(NULL, "/h/grants");
    char buf[128];
    int32_t s;
    cr_assert_not(zkl__inproc_seen(p, node(buf, sizeof buf, 0), 7), "no grant yet");
    zkl__inproc_granted(p, node(buf, sizeof buf, 0), 0, 7);
    cr_assert(zkl__inproc_seen(p, node(buf, sizeof buf, 0), 7));
    cr_assert_not(zkl__inproc_seen(p, node(buf, sizeof buf, 0), 8), "another owner");
    for (s = 1; s < ZKL_INPROC_GRANTS; s++) {
        zkl__inproc_granted(p, node(buf, sizeof buf, s), s, 7);
        cr_assert(zkl__inproc_seen(p, node(buf, sizeof buf, 0), 7), "the first gone at %d", s);
        cr_assert(zkl__inproc_seen(p, node(buf, sizeof buf, s), 7));
    }
    zkl__inproc_granted(p, node(buf, sizeof buf, s), s, 7); /* one more than it keeps */
    cr_assert_not(zkl__inproc_seen(p, node(buf, sizeof buf, 0), 7), "the oldest kept");
    for (s = 1; s <= ZKL_INPROC_GRANTS; s++)
        cr_assert(zkl__inproc_seen(p, node(buf, sizeof buf, s), 7), "grant %d pushed out", s);
    zkl__inproc_put(p);
}

/* A line of one lock object notes no node made (only another session asks);
 * a second object, and it does; with that one gone, it stops. */
Test(inproc, a_line_of_one_object_notes_nothing)
{
    zkl__inproc *p = zkl__inproc_get(NULL, "/h/one");
    char buf[128], name[128];
    zkl__inproc_object(p, 1);
    made(p, 10, 10);
    cr_assert_eq(zkl__inproc_noted(p), 0, "noted with one object");
    cr_assert_eq(zkl__inproc_made_at(p, 10, name, sizeof name), 0);
    zkl__inproc_object(p, 1);
    made(p, 11, 11);
    cr_assert_eq(zkl__inproc_made_at(p, 11, name, sizeof name), 2, "not noted with two");
    cr_assert_str_eq(name, node(buf, sizeof buf, 11));
    zkl__inproc_object(p, -1);
    made(p, 12, 12);
    cr_assert_eq(zkl__inproc_noted(p), 1, "noted with one object again");
    zkl__inproc_object(NULL, 1); /* (the room off: nothing) */
    zkl__inproc_put(p);
}
