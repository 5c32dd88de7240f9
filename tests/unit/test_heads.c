/*
 * test_heads.c - the process's notes of lock nodes (core/heads.h) without a
 * server: nodes made by sequence, and the bell that a grant two places
 * ahead rings.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/heads.h"

/* A node name of sequence seq, as the server spells it. */
static const char *node(char *buf, size_t n, int32_t seq)
{
    snprintf(buf, n, "_c_0badc0de-0000-4000-8000-000000000001-lock-%010d", (int)seq);
    return buf;
}

struct rung {
    int n;
    void *owner, *waiter;
};

static void ring(void *owner, void *waiter)
{
    struct rung *r = waiter;
    r->n++;
    r->owner = owner;
    r->waiter = waiter;
}

/* Sequences from..to noted under parent, made by sessions 1, 2, 1, 2, ... */
static void made(const char *parent, int32_t from, int32_t to)
{
    char buf[128];
    int32_t s;
    for (s = from; s <= to; s++)
        zkl__heads_note_made(parent, node(buf, sizeof buf, s), s, 1 + s % 2);
}

Test(heads, finds_a_node_made_here_by_its_sequence)
{
    char buf[128], name[128];
    made("/h/made", 10, 11);
    cr_assert_eq(zkl__heads_made_at("/h/made", 10, name, sizeof name), 1);
    cr_assert_str_eq(name, node(buf, sizeof buf, 10));
    cr_assert_eq(zkl__heads_made_by("/h/made", node(buf, sizeof buf, 11), 11), 2);
    cr_assert_eq(zkl__heads_made_at("/h/made", 12, name, sizeof name), 0, "never made");
    cr_assert_eq(zkl__heads_made_at("/h/other", 10, name, sizeof name), 0, "another parent");
    cr_assert_eq(zkl__heads_made_at("/h/made", 10, name, 8), 0, "no room for the name");
}

Test(heads, a_grant_two_places_ahead_rings_the_bell_once)
{
    char buf[128];
    struct rung r = {0};
    int owner;
    made("/h/bell", 20, 23);
    zkl__heads_note("/h/bell", node(buf, sizeof buf, 20), 20, 1); /* 20 holds */
    cr_assert(zkl__heads_bell("/h/bell", node(buf, sizeof buf, 23), 23, ring, &owner, &r));
    zkl__heads_note("/h/bell", node(buf, sizeof buf, 20), 20, 1);
    cr_assert_eq(r.n, 0, "a grant three places ahead rang");
    zkl__heads_note("/h/bell", node(buf, sizeof buf, 21), 21, 2);
    cr_assert_eq(r.n, 1);
    cr_assert_eq(r.owner, &owner);
    cr_assert_eq(r.waiter, &r);
    zkl__heads_note("/h/bell", node(buf, sizeof buf, 22), 22, 1);
    cr_assert_eq(r.n, 1, "rang twice");
}

Test(heads, no_bell_when_the_lock_is_two_places_ahead_already)
{
    char buf[128];
    struct rung r = {0};
    made("/h/near", 30, 33);
    zkl__heads_note("/h/near", node(buf, sizeof buf, 30), 30, 1);
    cr_assert_not(zkl__heads_bell("/h/near", node(buf, sizeof buf, 31), 31, ring, NULL, &r),
                  "the node just ahead holds");
    cr_assert_not(zkl__heads_bell("/h/near", node(buf, sizeof buf, 32), 32, ring, NULL, &r),
                  "the node two ahead holds");
    cr_assert(zkl__heads_bell("/h/near", node(buf, sizeof buf, 33), 33, ring, NULL, &r));
    cr_assert_not(zkl__heads_bell("/h/near", "_c_x-lock-0000000034", 34, ring, NULL, &r),
                  "a node not noted here");
    cr_assert_not(zkl__heads_bell("/h/near", node(buf, sizeof buf, 1), 1, ring, NULL, &r),
                  "no place for two nodes ahead");
}

Test(heads, a_forgotten_or_overwritten_bell_does_not_ring)
{
    char buf[128];
    struct rung r = {0}, q = {0};
    int owner, other;
    made("/h/forget", 40, 44);
    cr_assert(zkl__heads_bell("/h/forget", node(buf, sizeof buf, 42), 42, ring, &owner, &r));
    cr_assert(zkl__heads_bell("/h/forget", node(buf, sizeof buf, 43), 43, ring, &other, &q));
    zkl__heads_forget(&owner);
    zkl__heads_note("/h/forget", node(buf, sizeof buf, 41), 41, 2);
    cr_assert_eq(r.n, 0, "a forgotten bell rang");
    cr_assert_eq(q.n, 1, "the other client's bell did not ring");
    cr_assert(zkl__heads_bell("/h/forget", node(buf, sizeof buf, 44), 44, ring, &owner, &r));
    made("/h/forget", 44, 44); /* its slot noted anew */
    zkl__heads_note("/h/forget", node(buf, sizeof buf, 42), 42, 1);
    cr_assert_eq(r.n, 0, "a bell outlived its node's note");
}

Test(heads, a_node_leaving_unheld_rings_the_two_bells_behind_it)
{
    const char *parent = "/t/left";
    char buf[128];
    struct rung r1 = {0}, r2 = {0};
    made(parent, 20, 23);
    cr_assert(zkl__heads_bell(parent, node(buf, sizeof buf, 22), 22, ring, NULL, &r1));
    cr_assert(zkl__heads_bell(parent, node(buf, sizeof buf, 23), 23, ring, NULL, &r2));
    zkl__heads_left(parent, 21); /* rings 22 and 23 */
    cr_assert_eq(r1.n, 1);
    cr_assert_eq(r2.n, 1);
    zkl__heads_left(parent, 21); /* once */
    cr_assert_eq(r1.n + r2.n, 2);
    zkl__heads_left(parent, -1);
    zkl__heads_left(parent, INT32_MAX);
}

Test(heads, behind_counts_from_the_last_grant_noted)
{
    const char *parent = "/t/behind";
    char buf[128];
    cr_assert_eq(zkl__heads_behind(parent, 50), -1, "no grant noted under the parent");
    made(parent, 40, 50);
    zkl__heads_note(parent, node(buf, sizeof buf, 42), 42, 1);
    cr_assert_eq(zkl__heads_behind(parent, 50), 8);
    cr_assert_eq(zkl__heads_behind(parent, 42), -1, "the head itself");
    zkl__heads_note(parent, node(buf, sizeof buf, 41), 41, 2); /* an older grant: kept the newer */
    cr_assert_eq(zkl__heads_behind(parent, 50), 8);
    zkl__heads_note(parent, node(buf, sizeof buf, 45), 45, 2);
    cr_assert_eq(zkl__heads_behind(parent, 50), 5);
    cr_assert_eq(zkl__heads_behind("/t/other", 50), -1);
}
