/*
 * test_process_hints.c - the in-process room's off switch (core/engine/inproc.h,
 * zkl_client_set_process_hints, ZKL_PROCESS_HINTS) and the life of its
 * records, against the real server. What the hints save, with them on, is
 * tested with each mechanism (test_mutex.c); here, that turning them off
 * gives what a waiter of another process would do, and nothing leaks.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/inproc.h"
#include "waiter.h"
#include "zkt.h"

Test(process_hints, the_switch_refuses_null_and_other_values)
{
    zkl_client *c = zkt_client(0);
    cr_assert_eq(zkl_client_process_hints(c), 1, "on by default");
    cr_assert_eq(zkl_client_set_process_hints(NULL, 0), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "client is NULL"), "message: %s", zkl_errmsg());
    cr_assert_eq(zkl_client_set_process_hints(c, 2), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "on is 2, not 0 or 1"), "message: %s", zkl_errmsg());
    cr_assert_eq(zkl_client_process_hints(c), 1, "a refused value changed it");
    cr_assert_eq(zkl_client_process_hints(NULL), -1);
    ok(zkl_client_set_process_hints(c, 0), "off");
    cr_assert_eq(zkl_client_process_hints(c), 0);
    ok(zkl_client_set_process_hints(c, 1), "on");
    cr_assert_eq(zkl_client_process_hints(c), 1);
    ok(zkl_client_close(c), "close");
}

Test(process_hints, the_environment_turns_them_off_and_a_bad_value_fails_the_open)
{
    zkl_client *c = NULL;
    cr_assert_eq(setenv("ZKL_PROCESS_HINTS", "off", 1), 0);
    c = zkt_client(0);
    cr_assert_eq(zkl_client_process_hints(c), 0);
    ok(zkl_client_close(c), "close");
    cr_assert_eq(setenv("ZKL_PROCESS_HINTS", "maybe", 1), 0);
    cr_assert_eq(zkl_client_open(zkt_servers(), NULL, &c), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "ZKL_PROCESS_HINTS is \"maybe\""), "message: %s", zkl_errmsg());
    cr_assert_eq(setenv("ZKL_PROCESS_HINTS", "1", 1), 0);
    c = zkt_client(0);
    cr_assert_eq(zkl_client_process_hints(c), 1);
    ok(zkl_client_close(c), "close");
    unsetenv("ZKL_PROCESS_HINTS");
}

/*
 * A holds, B and C wait, C looking ahead (watching B, and A). With the
 * hints on, A's going after it held leaves only B ahead of C and C needs no
 * listing (test_mutex.c); with C's off, C does not know A held, and lists
 * when A goes, as a waiter of another process must.
 */
Test(process_hints, off_a_waiter_lists_as_one_of_another_process_would)
{
    zkt_party p;
    zkt_waiter b = {0}, w = {0};
    uint64_t before;
    zkt_party_open(&p, 3, "hints-off", 0);
    ok(zkl_client_set_process_hints(p.c[2], 0), "c's off");
    ok(zkl_mutex_set_lookahead(p.m[2], ZKL_LOOKAHEAD_ON), "lookahead");
    ok(zkl_mutex_acquire(p.m[0], 5000), "a acquires");
    zkt_waiter_start(&b, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    zkt_waiter_start(&w, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3);
    before = zkt_requests_settle(p.c[2]);
    ok(zkl_mutex_release(p.m[0]), "a releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after a");
    zkt_sleep_ms(300);
    cr_assert_not(atomic_load(&w.done), "c must wait: b holds");
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&w);
    ok(w.st, "c acquires after b");
    cr_assert_gt(zkt_lock_requests(p.c[2]), before, "c used what a and b's client knew");
    zkt_waiter_release(&w);
    zkt_party_close(&p);
}

/* One record per line, kept while an object of that path lives, and freed with the last. */
Test(process_hints, a_line_record_lives_while_its_objects_do)
{
    zkl_client *c = zkt_client(0), *d = zkt_client(0);
    zkl_mutex *m1, *m2, *m3;
    size_t base = zkl__inproc_count();
    ok(zkl_mutex_create(c, "/zkltest/inproc/a", &m1), "create");
    cr_assert_eq(zkl__inproc_count(), base + 1);
    ok(zkl_mutex_create(d, "/zkltest/inproc/a", &m2), "create");
    ok(zkl_mutex_create(c, "/zkltest/inproc/b", &m3), "create");
    cr_assert_eq(zkl__inproc_count(), base + 2, "two clients' objects of a path: one line");
    ok(zkl_mutex_acquire(m1, 5000), "acquire");
    ok(zkl_mutex_release(m1), "release");
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_mutex_destroy(m3), "destroy");
    cr_assert_eq(zkl__inproc_count(), base + 1);
    ok(zkl_mutex_destroy(m2), "destroy");
    cr_assert_eq(zkl__inproc_count(), base, "a record outlived its line's objects");
    ok(zkl_client_close(c), "close");
    ok(zkl_client_close(d), "close");
}

/* With the room off, nothing registers: no record for an object, nor for its acquire (room.h). */
Test(process_hints, with_the_room_off_nothing_registers)
{
    zkl_client *c = zkt_client(0);
    zkl_mutex *m;
    size_t base = zkl__inproc_count();
    ok(zkl_client_set_process_hints(c, 0), "off");
    ok(zkl_mutex_create(c, "/zkltest/inproc/off", &m), "create");
    cr_assert_eq(zkl__inproc_count(), base, "a lock object registered with the room off");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    cr_assert_eq(zkl__inproc_count(), base, "an acquire registered with the room off");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
}

/* ---- what the hints save (on) ---- */

/* ---- behind a holder of this process (core/engine/inproc.h) ---- */

/*
 * A holds, B and C wait, C watching B (and, looking ahead, A). A's going
 * after it held leaves only B ahead of C; B's going, B having held here,
 * makes C the holder. C needs no listing, then or at the hand-off.
 */
static void behind_a_holder_no_listing(const char *what, zkl_lookahead mode)
{
    zkt_party p;
    zkt_waiter b = {0}, w = {0};
    uint64_t before;
    zkt_party_open(&p, 3, what, 0);
    ok(zkl_mutex_set_lookahead(p.m[2], mode), "lookahead");
    ok(zkl_mutex_acquire(p.m[0], 5000), "a acquires");
    zkt_waiter_start(&b, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    zkt_waiter_start(&w, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3);
    before = zkt_requests_settle(p.c[2]);
    ok(zkl_mutex_release(p.m[0]), "a releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after a");
    zkt_sleep_ms(300);
    cr_assert_not(atomic_load(&w.done), "c must wait: b holds");
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&w);
    ok(w.st, "c acquires after b");
    cr_assert_eq(zkt_lock_requests(p.c[2]), before, "c listed again: %llu requests, not %llu",
                 (unsigned long long)zkt_lock_requests(p.c[2]), (unsigned long long)before);
    zkt_waiter_release(&w);
    zkt_party_close(&p);
}

Test(process_hints, lookahead_behind_a_holder_needs_no_listing, .timeout = 60)
{
    behind_a_holder_no_listing("lookahead-holder", ZKL_LOOKAHEAD_ON);
}

Test(process_hints, behind_a_holder_of_this_process_the_hand_off_needs_no_listing, .timeout = 60)
{
    behind_a_holder_no_listing("heads-handoff", ZKL_LOOKAHEAD_OFF);
}

/*
 * A holds; quitters (1 or 2) wait and give up in turn; C waits behind them,
 * watching the last and, looking ahead, the one before. None of them held,
 * so their going must not hand C the lock while A holds.
 */
static void quitters_hand_nothing_over(const char *what, zkl_lookahead mode, int quitters)
{
    zkt_party p;
    zkt_waiter q[2] = {{0}}, w = {0};
    int i, c = quitters + 1;
    zkt_party_open(&p, quitters + 2, what, 0);
    ok(zkl_mutex_set_lookahead(p.m[c], mode), "lookahead");
    ok(zkl_mutex_acquire(p.m[0], 5000), "a acquires");
    for (i = 0; i < quitters; i++) {
        zkt_waiter_start(&q[i], p.m[i + 1], 1000 + 1500 * i, NULL);
        cr_assert_eq(zkt_children_settle(p.zh, p.path, i + 2), i + 2);
    }
    zkt_waiter_start(&w, p.m[c], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, c + 1), c + 1);
    for (i = 0; i < quitters; i++) {
        pthread_join(q[i].t, NULL);
        cr_assert_eq(q[i].st, ZKL_ETIMEDOUT);
    }
    zkt_sleep_ms(500);
    cr_assert_not(atomic_load(&w.done), "c was granted while a holds");
    ok(zkl_mutex_release(p.m[0]), "a releases");
    zkt_waiter_until_done(&w);
    ok(w.st, "c acquires after a");
    zkt_waiter_release(&w);
    zkt_party_close(&p);
}

Test(process_hints, lookahead_trusts_only_a_node_that_held, .timeout = 60)
{
    quitters_hand_nothing_over("lookahead-gave-up", ZKL_LOOKAHEAD_ON, 2);
}

Test(process_hints, a_node_that_never_held_hands_nothing_over, .timeout = 60)
{
    quitters_hand_nothing_over("heads-gave-up", ZKL_LOOKAHEAD_OFF, 1);
}

/* A lock node of "another process": a raw session's, in Curator's form. */
static char *foreign_node(zhandle_t *zh, const char *path)
{
    char want[512], *got = malloc(512);
    snprintf(want, sizeof want, "%s/_c_00000000-0000-4000-8000-000000000001-lock-", path);
    cr_assert_eq(
        zoo_create(zh, want, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, got, 512), ZOK);
    return got;
}

/* m waits behind a node of another process, which then goes: how many
 * nodes m's line had noted made while it waited. */
static size_t noted_while_waiting(zhandle_t *zh, zkl_client *c, const char *path, zkl_mutex *m)
{
    zkt_waiter w = {0};
    zkl__inproc *p = zkl__inproc_get(NULL, path);
    char *other = foreign_node(zh, path);
    size_t n;
    cr_assert_not_null(p);
    zkt_waiter_start(&w, m, 30000, NULL);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2);
    zkt_requests_settle(c); /* m waits: its node is noted, if it is */
    n = zkl__inproc_noted(p);
    cr_assert_eq(zoo_delete(zh, other, -1), ZOK);
    zkt_waiter_until_done(&w);
    ok(w.st, "acquires once the other process's node goes");
    zkt_waiter_release(&w);
    zkl__inproc_put(p);
    free(other);
    return n;
}

/*
 * Only another session of the process asks what was noted of a node
 * (inproc.h): a line that one lock object of the process uses notes
 * nothing, as across processes; with a second object on it, nodes are
 * noted again.
 */
Test(process_hints, a_line_of_one_object_notes_nothing, .timeout = 60)
{
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("one-object");
    zkl_client *c = zkt_client(0);
    zkl_mutex *m, *m2;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_acquire(m, 5000), "acquire"); /* (the path made) */
    ok(zkl_mutex_release(m), "release");
    cr_assert_eq(noted_while_waiting(zh, c, path, m), 0, "a node of the only object was noted");
    ok(zkl_mutex_create(c, path, &m2), "create a second");
    cr_assert_eq(noted_while_waiting(zh, c, path, m), 1, "with two objects, not noted");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/*
 * ZKL_LOOKAHEAD_AUTO, the default, looks ahead only in an acquire whose
 * create carried the client's held-back delete, and whose node just ahead
 * was not made in this process. (a) A first acquire, third in line, watches
 * only the node just ahead: the head's going costs it nothing, and that
 * node's going, having held here, hands it the lock. (b) Released and
 * acquired again at once, behind a node of another process (a raw
 * session's), it looks ahead: the node two ahead held here, so its going
 * says a is next with no listing, and the other node's going hands it the
 * lock with no request.
 */
Test(process_hints, auto_lookahead_only_when_a_release_was_carried, .timeout = 60)
{
    zkt_party p;
    zkt_relock r = {0};
    zkt_waiter d = {0}, e = {0};
    uint64_t before;
    char *other;
    zkt_party_open(&p, 4, "autolook", 0); /* x, a, d, e */
    zkt_defer_window(p.c[1], 5 * 1000 * 1000);

    /* (a) line: x holds, d, then a (third) */
    ok(zkl_mutex_acquire(p.m[0], 5000), "x acquires");
    zkt_waiter_start(&d, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    zkt_relock_start(&r, p.c[1], p.m[1]);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3);
    before = zkt_requests_settle(p.c[1]); /* a has listed and armed its watch */
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&d);
    ok(d.st, "d acquires after x");
    cr_assert_eq(zkt_requests_settle(p.c[1]), before, "a first acquire does not look ahead");
    cr_assert_not(atomic_load(&r.w.done), "a waits: d holds");

    /* (b) e queues behind a; d's release gives a the lock with e in line */
    zkt_waiter_start(&e, p.m[3], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3);
    zkt_waiter_release(&d);
    zkt_waiter_until_done(&r.w);
    ok(r.w.st, "a acquires after d, e in line");
    cr_assert_eq(zkt_lock_requests(p.c[1]), before,
                 "d's release handed a the lock with no request");
    other = foreign_node(p.zh, p.path);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3); /* a, e, other */
    atomic_store(&r.w.release_now, 1); /* a releases and acquires at once: e, other, a */
    zkt_waiter_until_done(&e);
    ok(e.st, "e acquires after a");
    zkt_requests_settle(p.c[1]);
    zkt_waiter_release(&e); /* a, which watches e too, is next: e held here */
    before = zkt_requests_settle(p.c[1]);
    cr_assert_not(atomic_load(&r.reacquired), "a waits: the other process holds");
    cr_assert_eq(zoo_delete(p.zh, other, -1), ZOK);
    zkt_relock_join(&r);
    cr_assert_eq(zkt_lock_requests(p.c[1]), before,
                 "the other's release handed a the lock, no request");
    /* the multi, the listing, two watches, and one on a's own node (e is of this process) */
    cr_assert_eq(r.after - r.before, 5, "requests for a's release and acquire: %llu",
                 (unsigned long long)(r.after - r.before));
    ok(zkl_client_drain(p.c[1], 5000), "drain");
    free(other);
    zkt_party_close(&p);
}

/*
 * Behind a node made in this process, a carried acquire does not look
 * ahead (core/engine/inproc.h): that node's going, once it held here, hands the
 * lock over anyway, while a's own node is there (a watch on it). A pair in a
 * line of this process's clients: 4 requests.
 */
Test(process_hints, auto_lookahead_not_behind_a_node_of_this_process, .timeout = 60)
{
    zkt_party p;
    zkt_relock r = {0};
    zkt_waiter d = {0}, e = {0};
    zkt_party_open(&p, 3, "autolook-here", 0); /* a, d, e */
    /* a held alone: its window is 1 ms unless the test sets one (under
     * valgrind the delete then went out on its own: 4 requests) */
    zkt_defer_window(p.c[0], 5 * 1000 * 1000);
    zkt_relock_start(&r, p.c[0], p.m[0]);
    zkt_waiter_until_done(&r.w);
    ok(r.w.st, "a acquires");
    zkt_waiter_start(&e, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    zkt_waiter_start(&d, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3); /* a, e, d */
    atomic_store(&r.w.release_now, 1);                     /* e, d, a */
    zkt_waiter_until_done(&e);
    ok(e.st, "e acquires after a");
    zkt_requests_settle(p.c[0]); /* a waits behind d, its watches set */
    zkt_waiter_release(&e);
    zkt_waiter_until_done(&d);
    ok(d.st, "d acquires after e");
    zkt_waiter_release(&d);
    zkt_relock_join(&r);
    /* the multi and the watches on d and on a's own node: none on e, and no
     * listing (d's sequence is just below a's: wait.c, known predecessor) */
    cr_assert_eq(r.after - r.before, 3, "requests for a's release and acquire: %llu",
                 (unsigned long long)(r.after - r.before));
    ok(zkl_client_drain(p.c[0], 5000), "drain");
    zkt_party_close(&p);
}

/*
 * Known predecessor (wait.c): a create goes without the listing when the
 * last node this process made on the path is another session's, and the
 * node just ahead is taken from this process's notes only if its sequence
 * is just below ours. Here another process's node lands between b's and
 * a's: a lists, and waits for that node too, not only for b.
 */
Test(process_hints, a_foreign_node_between_is_waited_for, .timeout = 60)
{
    zkt_party p;
    zkt_waiter b = {0}, a = {0};
    char *other;
    zkt_party_open(&p, 3, "known-pred-foreign", 0); /* x, b, a */
    ok(zkl_mutex_acquire(p.m[0], 5000), "x acquires");
    zkt_waiter_start(&b, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    zkt_requests_settle(p.c[1]); /* b waits: its node is noted */
    other = foreign_node(p.zh, p.path);
    zkt_waiter_start(&a, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 4), 4); /* x, b, other, a */
    zkt_requests_settle(p.c[2]);
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after x");
    zkt_waiter_release(&b);
    zkt_sleep_ms(500);
    cr_assert_not(atomic_load(&a.done), "a was granted while the other process's node is ahead");
    cr_assert_eq(zoo_delete(p.zh, other, -1), ZOK);
    zkt_waiter_until_done(&a);
    ok(a.st, "a acquires after the other");
    zkt_waiter_release(&a);
    free(other);
    zkt_party_close(&p);
}

/*
 * The note awaited (wait.c, await_note): creates of this process complete
 * on many threads, so a joiner may learn its own node before the node just
 * ahead, made here too, is noted. Here b's node is noted late (a delay on
 * its thread, as on a loaded machine), and a's create is answered in
 * between: a waits for b's note instead of listing, then takes b as the
 * node ahead with no listing at all. c, which joins behind a and is noted
 * later still, keeps a create of this process in flight after b's note:
 * the note itself wakes a. Without the await, a lists once.
 */
Test(process_hints, a_joiner_awaits_the_note_of_the_node_ahead, .timeout = 60)
{
    zkt_party p;
    zkt_waiter b = {0}, a = {0}, c = {0};
    int64_t t0;
    zkt_party_open(&p, 4, "await-note", 0); /* x, b, a, c */
    ok(zkl_mutex_acquire(p.m[0], 5000), "x acquires");
    zkt_fault_note_delay(p.c[1], 1000);
    zkt_fault_note_delay(p.c[3], 6000);
    zkt_fault_await_ms(p.c[2], 10000); /* (a slow run's note still in time) */
    zkt_waiter_start(&b, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2); /* b's create is answered */
    t0 = zkt_now_ms();
    zkt_waiter_start(&a, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 3), 3);
    zkt_waiter_start(&c, p.m[3], 30000, NULL);
    /* b's note rings a: it watches b (and its own node) well before c's note */
    while (zkt_lock_requests(p.c[2]) < 2 && zkt_now_ms() - t0 < 3000)
        zkt_sleep_ms(5);
    cr_assert_geq(zkt_lock_requests(p.c[2]), 2, "a was not woken by b's note");
    zkt_requests_settle(p.c[2]);
    cr_assert_eq(zkt_list_requests(p.c[2]), 0, "a listed %llu times instead of awaiting b's note",
                 (unsigned long long)zkt_list_requests(p.c[2]));
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after x");
    cr_assert_not(atomic_load(&a.done), "a was granted while b holds");
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&a);
    ok(a.st, "a acquires after b");
    cr_assert_not(atomic_load(&c.done), "c was granted while a holds");
    zkt_waiter_release(&a);
    zkt_waiter_until_done(&c);
    ok(c.st, "c acquires after a");
    zkt_waiter_release(&c);
    zkt_party_close(&p);
}

/*
 * The await is bounded: b's note comes far too late (3 s), and a, which
 * awaits it at most 300 ms here, lists then, long before b's note; it waits
 * for b in line all the same, as a listing shows it.
 */
Test(process_hints, a_note_that_comes_too_late_costs_the_bound, .timeout = 60)
{
    zkt_party p;
    zkt_waiter b = {0}, a = {0};
    int64_t t0;
    zkt_party_open(&p, 3, "await-bound", 0); /* x, b, a */
    ok(zkl_mutex_acquire(p.m[0], 5000), "x acquires");
    zkt_fault_note_delay(p.c[1], 3000);
    zkt_fault_await_ms(p.c[2], 300);
    zkt_waiter_start(&b, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    t0 = zkt_now_ms();
    zkt_waiter_start(&a, p.m[2], 30000, NULL);
    while (zkt_list_requests(p.c[2]) == 0 && zkt_now_ms() - t0 < 2500)
        zkt_sleep_ms(5);
    cr_assert_eq(zkt_list_requests(p.c[2]), 1, "a did not list within 2.5 s");
    cr_assert_geq(zkt_now_ms() - t0, 250, "a listed before its bound (%lld ms)",
                  (long long)(zkt_now_ms() - t0));
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after x");
    cr_assert_not(atomic_load(&a.done), "a was granted while b holds");
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&a);
    ok(a.st, "a acquires after b");
    zkt_waiter_release(&a);
    zkt_party_close(&p);
}

/*
 * An await ends when no create of this process is in flight on the path:
 * then the node just ahead cannot be of this process. Here another
 * process's node lands between b's and a's while b's note is late (1 s):
 * a awaits (its bound is 20 s here) until b is noted, then lists, and
 * waits for that node too.
 */
Test(process_hints, an_await_ends_when_no_create_of_this_process_is_in_flight, .timeout = 60)
{
    zkt_party p;
    zkt_waiter b = {0}, a = {0};
    char *other;
    int64_t t0;
    zkt_party_open(&p, 3, "await-none", 0); /* x, b, other, a */
    ok(zkl_mutex_acquire(p.m[0], 5000), "x acquires");
    zkt_fault_note_delay(p.c[1], 1000);
    zkt_fault_await_ms(p.c[2], 20000);
    t0 = zkt_now_ms();
    zkt_waiter_start(&b, p.m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 2), 2);
    other = foreign_node(p.zh, p.path);
    zkt_waiter_start(&a, p.m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p.zh, p.path, 4), 4);
    zkt_sleep_ms(300);
    if (zkt_now_ms() - t0 < 900) /* (else too slow a run to tell) */
        cr_assert_eq(zkt_list_requests(p.c[2]), 0, "a listed before b's note");
    while (zkt_list_requests(p.c[2]) == 0 && zkt_now_ms() - t0 < 5000)
        zkt_sleep_ms(5);
    cr_assert_eq(zkt_list_requests(p.c[2]), 1, "a did not list when b's create was noted");
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after x");
    zkt_waiter_release(&b);
    zkt_sleep_ms(300);
    cr_assert_not(atomic_load(&a.done), "a was granted while the other process's node is ahead");
    cr_assert_eq(zoo_delete(p.zh, other, -1), ZOK);
    zkt_waiter_until_done(&a);
    ok(a.st, "a acquires after the other");
    zkt_waiter_release(&a);
    free(other);
    zkt_party_close(&p);
}

/*
 * A second wait of e's client, pending on another path that x holds: a
 * waiter defers the watch on its own node only where waits add up, when its
 * client has another live (wait.c, self_by_bell).
 */
struct parked {
    char *path;
    zkl_mutex *held, *waiting;
    zkl_op *op;
    zkl_status st;
    atomic_int ended;
};

static void parked_end(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    struct parked *k = ud;
    (void)op;
    (void)msg;
    k->st = st;
    atomic_store(&k->ended, 1);
}

static void park(struct parked *k, zkl_client *holder, zkl_client *c)
{
    k->path = zkt_path("parked");
    ok(zkl_mutex_create(holder, k->path, &k->held), "create");
    ok(zkl_mutex_create(c, k->path, &k->waiting), "create");
    ok(zkl_mutex_acquire(k->held, 5000), "acquire");
    ok(zkl_mutex_acquire_async(k->waiting, 30000, parked_end, k, &k->op), "acquire_async");
    zkt_requests_settle(c);
}

static void unpark(struct parked *k)
{
    ok(zkl_op_cancel(k->op), "cancel");
    while (!atomic_load(&k->ended))
        zkt_sleep_ms(5);
    cr_assert_eq(k->st, ZKL_ECANCELED, "the parked wait ended with %s", zkl_strerror(k->st));
    ok(zkl_op_release(k->op), "op release");
    ok(zkl_mutex_release(k->held), "release");
    ok(zkl_mutex_destroy(k->waiting), "destroy");
    ok(zkl_mutex_destroy(k->held), "destroy");
    free(k->path);
}

/* x holds; b, d and e (sessions of this process) queue behind in that order. */
static void line_of_four(zkt_party *p, zkt_waiter *b, zkt_waiter *d, zkt_waiter *e)
{
    ok(zkl_mutex_acquire(p->m[0], 5000), "x acquires");
    zkt_waiter_start(b, p->m[1], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p->zh, p->path, 2), 2);
    zkt_requests_settle(p->c[1]);
    zkt_waiter_start(d, p->m[2], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p->zh, p->path, 3), 3);
    zkt_requests_settle(p->c[2]);
    zkt_waiter_start(e, p->m[3], 30000, NULL);
    cr_assert_eq(zkt_children_settle(p->zh, p->path, 4), 4);
}

/*
 * The watch on a waiter's own node, deferred (wait.c; core/engine/inproc.h, the
 * bell). In a line of this process's sessions x holds and b, d, e wait: b
 * and d, within two places of the holder, watch their own nodes at once; e,
 * three places behind, watches only d until the lock is granted two places
 * ahead of it (to b), and then its own node too. No hand-off lists.
 */
Test(process_hints, a_deep_waiter_watches_its_own_node_late, .timeout = 60)
{
    zkt_party p;
    struct parked k = {0};
    zkt_waiter b = {0}, d = {0}, e = {0};
    uint64_t n0, n;
    zkt_party_open(&p, 4, "self-late", 0); /* x, b, d, e */
    park(&k, p.c[0], p.c[3]);
    n0 = zkt_requests_settle(p.c[3]);
    line_of_four(&p, &b, &d, &e);
    n = zkt_requests_settle(p.c[3]) - n0;
    cr_assert_eq(n, 2, "e's requests before b holds (its create, its watch on d): %llu",
                 (unsigned long long)n);
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after x");
    n = zkt_requests_settle(p.c[3]) - n0;
    cr_assert_eq(n, 3, "e's requests once b holds (and the watch on its own node): %llu",
                 (unsigned long long)n);
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&d);
    ok(d.st, "d acquires after b");
    zkt_waiter_release(&d);
    zkt_waiter_until_done(&e);
    ok(e.st, "e acquires after d");
    cr_assert_eq(zkt_list_requests(p.c[3]), 0, "e listed");
    zkt_waiter_release(&e);
    unpark(&k);
    zkt_party_close(&p);
}

/*
 * A deferred waiter whose bell never rings (zkt_fault_deaf_bells) has no
 * watch on its own node when the node ahead goes, so that deletion does not
 * hand it the lock: it lists. Here an operator deleted its node meanwhile:
 * it finds that, and queues again; it never holds with no node.
 */
Test(process_hints, a_deep_waiter_never_rung_lists_at_the_hand_off, .timeout = 60)
{
    zkt_party p;
    struct parked k = {0};
    zkt_waiter b = {0}, d = {0}, e = {0};
    char victim[512], **v;
    uint64_t n0;
    size_t n;
    zkt_party_open(&p, 4, "self-never", 0); /* x, b, d, e */
    zkt_fault_deaf_bells(p.c[3]);
    park(&k, p.c[0], p.c[3]);
    n0 = zkt_requests_settle(p.c[3]);
    line_of_four(&p, &b, &d, &e);
    cr_assert_eq(zkt_requests_settle(p.c[3]) - n0, 2, "e watches its own node");
    ok(zkl_mutex_participants(p.m[0], &v, &n), "participants");
    cr_assert_eq(n, 4);
    snprintf(victim, sizeof victim, "%s", v[3]); /* e's */
    zkl_strings_free(v, n);
    cr_assert_eq(zoo_delete(p.zh, victim, -1), ZOK);
    ok(zkl_mutex_release(p.m[0]), "x releases");
    zkt_waiter_until_done(&b);
    ok(b.st, "b acquires after x");
    zkt_waiter_release(&b);
    zkt_waiter_until_done(&d);
    ok(d.st, "d acquires after b");
    zkt_sleep_ms(300);
    cr_assert_not(atomic_load(&e.done), "e was granted while d holds");
    zkt_waiter_release(&d);
    zkt_waiter_until_done(&e);
    ok(e.st, "e acquires after d");
    ok(zkl_mutex_participants(p.m[0], &v, &n), "participants");
    cr_assert_eq(n, 1, "e holds, and its node is not in line");
    cr_assert_str_neq(v[0], victim, "e must hold with a new node");
    zkl_strings_free(v, n);
    zkt_waiter_release(&e);
    unpark(&k);
    zkt_party_close(&p);
}

/*
 * The line of one process's sessions, as lockbench's contended workload
 * runs it: each releases and asks again at once, and no acquire lists once
 * the line has formed (each finds the node just ahead among this process's
 * notes); exclusion holds throughout.
 */
struct cycler {
    zkl_mutex *m;
    zkl_client *c;
    atomic_int *inside, *overlaps;
    int rounds;
    zkl_status st;
    pthread_t t;
};

static void *cycle_main(void *arg)
{
    struct cycler *y = arg;
    int i;
    for (i = 0; i < y->rounds && y->st == ZKL_OK; i++) {
        if ((y->st = zkl_mutex_acquire(y->m, 30000)) != ZKL_OK)
            break;
        if (atomic_fetch_add(y->inside, 1) != 0)
            atomic_fetch_add(y->overlaps, 1);
        zkt_sleep_ms(1);
        atomic_fetch_sub(y->inside, 1);
        y->st = zkl_mutex_release(y->m);
    }
    return NULL;
}

Test(process_hints, a_line_of_this_process_lists_only_to_form, .timeout = 120)
{
    zkt_party p;
    struct cycler y[4];
    atomic_int inside = 0, overlaps = 0;
    uint64_t lists = 0, acquires = 0;
    int i;
    zkt_party_open(&p, 4, "known-pred-line", 0);
    for (i = 0; i < 4; i++) {
        y[i] = (struct cycler){p.m[i], p.c[i], &inside, &overlaps, 50, ZKL_OK, 0};
        pthread_create(&y[i].t, NULL, cycle_main, &y[i]);
    }
    for (i = 0; i < 4; i++) {
        pthread_join(y[i].t, NULL);
        ok(y[i].st, "cycles");
        lists += zkt_list_requests(p.c[i]);
        acquires += 50;
    }
    cr_assert_eq(atomic_load(&overlaps), 0, "two holders at once");
    /* each session's first acquire lists (nothing of the others noted yet, or
     * a hand-off whose node ahead never held here), and a few more when a
     * note came late; not one a pair */
    cr_assert_lt(lists, acquires / 4, "%llu listings for %llu acquires", (unsigned long long)lists,
                 (unsigned long long)acquires);
    for (i = 0; i < 4; i++)
        ok(zkl_client_drain(p.c[i], 5000), "drain");
    zkt_party_close(&p);
}
