/*
 * test_grant_table.c - truth tables of the grant predicates (core/policy):
 * every line of up to LEN_MAX nodes of each recipe, with our node at every
 * place and the listing in three orders, against Curator's rules written
 * out by hand here:
 *   - mutex, writer: our node holds when it is first; else it watches the
 *     node just ahead, of any kind;
 *   - reader: holds when no writer is ahead; else it watches a writer ahead
 *     (the nearest: drivers.c);
 *   - semaphore lease: holds when the leases number at most the count; else
 *     it watches the child list.
 * And the core's reading (zkl__decide): the hand-off flag is set exactly
 * when the watched node's deletion alone would make our node hold and
 * nothing can take that node's place (a writer may downgrade in place), and
 * the look-ahead is refused behind such a node. No server.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/seq.h"
#include "core/policy/driver.h"

#define LEN_MAX 8

/* Node i of a line (sequence i) of kind 'R', 'W', 'L' (mutex) or 'S' (lease). */
static void name_of(char *buf, size_t n, char kind, int i)
{
    const char *marker = kind == 'R'   ? ZKL_READ_MARKER
                         : kind == 'W' ? ZKL_WRITE_MARKER
                         : kind == 'S' ? ZKL_LEASE_MARKER
                                       : ZKL_MUTEX_MARKER;
    snprintf(buf, n, "_c_%08x-f501-47b0-b66a-1afeebcbeb00-%s%010d", 0x10u * (unsigned)(7 - i % 8),
             marker, i);
}

typedef struct table_line {
    char buf[LEN_MAX][96];
    char *sorted[LEN_MAX];
    char *listed[LEN_MAX];
    size_t n;
} table_line;

/* The line of kinds (one letter a node, in sequence order), listed in order o. */
static void line_make(table_line *t, const char *kinds, int o)
{
    size_t i;
    t->n = strlen(kinds);
    for (i = 0; i < t->n; i++) {
        name_of(t->buf[i], sizeof t->buf[i], kinds[i], (int)i);
        t->sorted[i] = t->buf[i];
    }
    for (i = 0; i < t->n; i++) /* 0: as sorted; 1: reversed; 2: odd places first */
        t->listed[i] = o == 0   ? t->sorted[i]
                       : o == 1 ? t->sorted[t->n - 1 - i]
                                : t->sorted[(2 * i + 1 < t->n ? 2 * i + 1 : 2 * (i - t->n / 2))];
}

/* Curator's answer for our node at place self of kinds: holds, and the place to watch (-1: none).
 */
static bool rule(const char *kinds, size_t self, int leases, int *watch)
{
    size_t i;
    *watch = -1;
    switch (kinds[self]) {
    case 'R':
        for (i = self; i-- > 0;)
            if (kinds[i] == 'W') {
                *watch = (int)i;
                return false;
            }
        return true;
    case 'S': return (int)strlen(kinds) <= leases;
    default:
        if (self > 0)
            *watch = (int)self - 1;
        return self == 0;
    }
}

/* kinds less the node at place gone. */
static void without(char *out, const char *kinds, int gone)
{
    size_t n = strlen(kinds), j = 0, i;
    for (i = 0; i < n; i++)
        if ((int)i != gone)
            out[j++] = kinds[i];
    out[j] = 0;
}

static const zkl__driver *driver_of_kind(char k)
{
    return k == 'R'   ? &zkl__read_driver
           : k == 'W' ? &zkl__write_driver
           : k == 'S' ? &zkl__lease_driver
                      : &zkl__mutex_driver;
}

/* One row of the table: every listing order, checked. Returns the rows checked. */
static int check_row(const char *kinds, size_t self, int leases)
{
    const zkl__driver *d = driver_of_kind(kinds[self]);
    const void *ctx = kinds[self] == 'S' ? (const void *)&leases : NULL;
    int want_watch, rows = 0, o;
    bool want = rule(kinds, self, leases, &want_watch);
    for (o = 0; o < 3; o++) {
        table_line t;
        zkl__line l;
        zkl__verdict v;
        char less[LEN_MAX + 1];
        int w;
        line_make(&t, kinds, o);
        cr_assert(zkl__view(d, t.listed, t.n, t.sorted[self], ctx, &l), "%s @%zu: no view", kinds,
                  self);
        v = zkl__decide(d, &l, ctx);
        cr_assert_eq(v.holds, want, "%s @%zu (order %d): holds %d, Curator says %d", kinds, self, o,
                     v.holds, want);
        rows++;
        if (want)
            continue;
        if (kinds[self] == 'S') {
            cr_assert(v.watch_parent, "%s @%zu: a lease waits on the child list", kinds, self);
            cr_assert_eq(v.flags & ZKL__V_HANDOFF, 0u, "%s @%zu: a lease count hands nothing over",
                         kinds, self);
            continue;
        }
        cr_assert(!v.watch_parent && v.watch >= 0, "%s @%zu: watches nothing", kinds, self);
        cr_assert_str_eq(l.v[v.watch], t.sorted[want_watch],
                         "%s @%zu (order %d): watches the wrong node", kinds, self, o);
        /* the hand-off: the watched node's deletion alone makes us hold, and
         * nothing can be put in its place (a writer's downgrade) */
        without(less, kinds, want_watch);
        {
            bool after = rule(less, self - 1, leases, &w);
            bool in_place = kinds[want_watch] == 'W' && (d->facts & ZKL__D_REPLACED_IN_PLACE);
            cr_assert_eq((v.flags & ZKL__V_HANDOFF) != 0, after && !in_place,
                         "%s @%zu (order %d): hand-off %d, the rule says %d", kinds, self, o,
                         (v.flags & ZKL__V_HANDOFF) != 0, after && !in_place);
            cr_assert_eq((v.flags & ZKL__V_NO_LOOKAHEAD) != 0, in_place,
                         "%s @%zu: look-ahead refused %d", kinds, self,
                         (v.flags & ZKL__V_NO_LOOKAHEAD) != 0);
        }
    }
    return rows;
}

/* Every line over the letters of alphabet, of 1 to LEN_MAX nodes, our node at every place. */
static int check_all(const char *alphabet, int leases)
{
    size_t a = strlen(alphabet), len, self;
    unsigned long code, codes;
    int rows = 0;
    char kinds[LEN_MAX + 1];
    for (len = 1; len <= LEN_MAX; len++) {
        for (codes = 1, self = 0; self < len; self++)
            codes *= a;
        for (code = 0; code < codes; code++) {
            unsigned long c = code;
            for (self = 0; self < len; self++, c /= a)
                kinds[self] = alphabet[c % a];
            kinds[len] = 0;
            for (self = 0; self < len; self++)
                rows += check_row(kinds, self, leases);
        }
    }
    return rows;
}

Test(grant_table, mutex)
{
    cr_assert_eq(check_all("L", 0), 3 * (LEN_MAX * (LEN_MAX + 1) / 2));
}

Test(grant_table, read_write_lock)
{
    int rows = check_all("RW", 0);
    cr_assert_gt(rows, 10000, "%d rows", rows);
    cr_log_info("read/write lock: %d rows", rows);
}

Test(grant_table, semaphore_leases)
{
    int k;
    for (k = 1; k <= 3; k++)
        cr_assert_gt(check_all("S", k), 0);
}
