/*
 * test_mutex_faults.c - the mutex when things break: session expiry of a
 * holder and of a waiter, a create whose reply is lost, a create that never
 * left, a node with our prefix that belongs to another session, a waiter's
 * node or its lock's parent deleted by someone else, and a listing read just
 * before the session ended.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "zkt.h"

struct watcher_state {
    atomic_int lost;
    atomic_int reconnected;
};

static void on_state(zkl_client *c, zkl_conn_state st, void *ud)
{
    struct watcher_state *w = ud;
    (void)c;
    if (st == ZKL_STATE_LOST)
        atomic_store(&w->lost, 1);
    if (st == ZKL_STATE_RECONNECTED && atomic_load(&w->lost))
        atomic_store(&w->reconnected, 1);
}

/* A waiter thread: acquires, reports, holds until told to release. */
struct waiter {
    zkl_mutex *m;
    zkl_status st, release_st;
    int64_t token;
    bool held;
    atomic_int got, release_now;
};

static void *wait_for_lock(void *arg)
{
    struct waiter *w = arg;
    w->st = zkl_mutex_acquire(w->m, 30000);
    if (w->st == ZKL_OK) {
        zkl_mutex_fencing_token(w->m, &w->token);
        w->held = zkl_mutex_is_held(w->m);
    }
    atomic_store(&w->got, 1);
    while (w->st == ZKL_OK && !atomic_load(&w->release_now))
        zkt_sleep_ms(10);
    if (w->st == ZKL_OK)
        w->release_st = zkl_mutex_release(w->m);
    return NULL;
}

static int flag_set(void *arg)
{
    return atomic_load((atomic_int *)arg);
}

Test(faults, holder_expiry_hands_the_lock_on, .timeout = 60)
{
    struct watcher_state ws = {0};
    zkl_client *holder = zkt_client_cb(2000, on_state, &ws);
    zkl_client *other = zkt_client(4000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("expiry");
    zkl_mutex *mh, *mo;
    struct waiter w = {0};
    pthread_t t;
    int64_t t1;
    ok(zkl_mutex_create(holder, path, &mh), "create");
    ok(zkl_mutex_create(other, path, &mo), "create");
    ok(zkl_mutex_acquire(mh, 5000), "holder acquires");
    ok(zkl_mutex_fencing_token(mh, &t1), "token");
    w.m = mo;
    pthread_create(&t, NULL, wait_for_lock, &w);
    zkt_sleep_ms(300);
    cr_assert_not(atomic_load(&w.got), "the waiter must wait while the holder lives");

    zkt_expire(holder);
    cr_assert(zkt_wait_for(flag_set, &w.got, 20000), "waiter never got the lock");
    ok(w.st, "waiter acquire");
    cr_assert(w.held);
    cr_assert_gt(w.token, t1, "fencing tokens must increase across holders");
    cr_assert(zkt_wait_for(flag_set, &ws.lost, 10000), "holder's callback never saw LOST");
    cr_assert_not(zkl_mutex_is_held(mh), "is_held must turn false after LOST");
    {
        int64_t tok;
        cr_assert_eq(zkl_mutex_fencing_token(mh, &tok), ZKL_ELOST);
    }
    cr_assert_eq(zkl_mutex_acquire(mh, 0), ZKL_ELOST, "re-entering a lost hold is refused");
    cr_assert_eq(zkl_mutex_release(mh), ZKL_ELOST, "release of a lost hold reports it");
    cr_assert_eq(zkl_mutex_release(mh), ZKL_ENOTOWNER, "and the hold is gone");
    /* the client lives on in a new session and can lock again after the waiter */
    cr_assert(zkt_wait_for(flag_set, &ws.reconnected, 10000), "no new session");
    atomic_store(&w.release_now, 1);
    pthread_join(t, NULL);
    ok(w.release_st, "waiter releases");
    ok(zkl_mutex_acquire(mh, 5000), "old holder locks again in its new session");
    {
        int64_t t3;
        ok(zkl_mutex_fencing_token(mh, &t3), "token");
        cr_assert_gt(t3, w.token);
    }
    ok(zkl_mutex_release(mh), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(mh), "destroy");
    ok(zkl_mutex_destroy(mo), "destroy");
    ok(zkl_client_close(holder), "close");
    ok(zkl_client_close(other), "close");
    zookeeper_close(zh);
    free(path);
}

Test(faults, waiter_expiry_waits_on_in_new_session, .timeout = 60)
{
    zkl_client *holder = zkt_client(4000);
    zkl_client *waiter = zkt_client(2000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("waiterexpiry");
    zkl_mutex *mh, *mw;
    struct waiter w = {0};
    pthread_t t;
    ok(zkl_mutex_create(holder, path, &mh), "create");
    ok(zkl_mutex_create(waiter, path, &mw), "create");
    ok(zkl_mutex_acquire(mh, 5000), "holder acquires");
    w.m = mw;
    pthread_create(&t, NULL, wait_for_lock, &w);
    zkt_sleep_ms(300);
    zkt_expire(waiter);
    zkt_sleep_ms(2000); /* the waiter re-queues in its new session */
    cr_assert_not(atomic_load(&w.got), "must not get the lock while it is held");
    ok(zkl_mutex_release(mh), "holder releases");
    cr_assert(zkt_wait_for(flag_set, &w.got, 15000), "waiter never got the lock");
    atomic_store(&w.release_now, 1);
    pthread_join(t, NULL);
    ok(w.st, "waiter acquire");
    cr_assert(w.held);
    ok(w.release_st, "release");
    ok(zkl_client_drain(waiter, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node of the expired attempt was left");
    ok(zkl_mutex_destroy(mh), "destroy");
    ok(zkl_mutex_destroy(mw), "destroy");
    ok(zkl_client_close(holder), "close");
    ok(zkl_client_close(waiter), "close");
    zookeeper_close(zh);
    free(path);
}

Test(faults, lost_create_reply_is_adopted_once)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("lostreply");
    zkl_mutex *m;
    /* the parent first: else the fault is spent on a create that finds none */
    cr_assert_eq(zkt_make_path(zh, path, 0), ZOK);
    ok(zkl_mutex_create(c, path, &m), "create");
    zkt_fault_create_reply_lost(c, 1);
    ok(zkl_mutex_acquire(m, 10000), "acquire through a lost reply");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "exactly one node for one attempt");
    cr_assert(zkl_mutex_is_held(m));
    ok(zkl_mutex_release(m), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

/*
 * The nemesis run of seed 202 (docs/RELIABILITY.md): a create proposed just
 * before the ensemble's leader stepped down lost its reply; the listing
 * that looked for it came from a follower that had logged the proposal but
 * not applied it, so it said "never landed"; the new leader then applied
 * it. The session's orphan node stood at the head of the election for
 * eight minutes. CREATE_LANDS_LATE is that server: the create shows only
 * once a sync has gone through the leader.
 */
Test(faults, a_create_that_lands_after_a_listing_missed_it_is_not_orphaned)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("lateland");
    zkl_mutex *m;
    cr_assert_eq(zkt_make_path(zh, path, 0), ZOK);
    ok(zkl_mutex_create(c, path, &m), "create");
    zkt_fault_create_lands_late(c, 1);
    ok(zkl_mutex_acquire(m, 8000), "acquire through a create that landed late");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1, "an orphan of the late create was left");
    ok(zkl_mutex_release(m), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left after the release");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

Test(faults, lost_create_reply_twice_still_one_node)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("lostreply2");
    zkl_mutex *m;
    ok(zkl_mutex_create(c, path, &m), "create");
    zkt_fault_create_send_lost(c, 2);
    ok(zkl_mutex_acquire(m, 10000), "acquire through unsent creates");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(m), "release");
    zkt_fault_create_reply_lost(c, 3);
    ok(zkl_mutex_acquire(m, 10000), "acquire through lost replies");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(m), "release");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}

Test(faults, prefix_of_another_session_is_not_adopted)
{
    static const char *uuid = "0badc0de-0000-4000-8000-000000000001";
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw(), *intruder = zkt_raw();
    char *path = zkt_path("foreign");
    char node[512], made[512];
    zkl_mutex *m;
    char *mine = NULL;
    ok(zkl_mutex_create(c, path, &m), "create");
    /* make the parent, then a node with "our" prefix from another session */
    cr_assert_eq(zkt_make_path(zh, path, ZOO_CONTAINER), ZOK);
    snprintf(node, sizeof node, "%s/_c_%s-lock-", path, uuid);
    cr_assert_eq(zoo_create(intruder, node, "x", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                            made, sizeof made),
                 ZOK);
    zkt_fault_next_uuid(c, uuid);
    zkt_fault_create_send_lost(c, 1);
    /* The intruder's node sorts first, so ours must not be it: we wait
     * behind it only if recovery wrongly adopted nothing... it is deleted. */
    ok(zkl_mutex_acquire(m, 10000), "acquire");
    ok(zkl_mutex_node(m, &mine), "node");
    cr_assert_str_neq(mine, made, "adopted a node of another session");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zoo_exists(zh, made, 0, NULL), ZNONODE, "the stray node must be deleted");
    cr_assert_eq(zkt_children_settle(zh, path, 1), 1);
    ok(zkl_mutex_release(m), "release");
    free(mine);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(intruder);
    zookeeper_close(zh);
    free(path);
}

static atomic_int gone_warnings;

static void count_gone(zkl_log_level level, const char *msg, void *ud)
{
    (void)ud;
    if (level == ZKL_LOG_WARN && strstr(msg, "is gone while the session lives"))
        atomic_fetch_add(&gone_warnings, 1);
}

/* m[0] (of c[0]) holds; w1 (m[1]) and then w2 (m[2]) wait behind it, their watches set. */
static void line_of_three(zkl_client **c, zkl_mutex **m, zhandle_t *zh, const char *path,
                          struct waiter *w1, pthread_t *t1, struct waiter *w2, pthread_t *t2)
{
    ok(zkl_mutex_acquire(m[0], 5000), "holder acquires");
    w1->m = m[1];
    pthread_create(t1, NULL, wait_for_lock, w1);
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "the first waiter never queued");
    zkt_requests_settle(c[1]);
    w2->m = m[2];
    pthread_create(t2, NULL, wait_for_lock, w2);
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3, "the second waiter never queued");
    zkt_requests_settle(c[2]);
}

/*
 * A waiter's node deleted by someone else (here: an operator's raw delete)
 * while it waits behind two others. It must neither hold the lock early nor
 * wait forever: it finds its node gone at its next listing, says so in the
 * log, and queues again with a new node. (Deleting a holder's node breaks
 * the lock, as with Curator: mutex.h; the next waiter's is the test below.)
 */
Test(faults, waiter_whose_node_is_deleted_queues_again, .timeout = 60)
{
    zkl_client *c[3] = {zkt_client(0), zkt_client(0), zkt_client(0)};
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("nodedeleted"), **v, victim[512];
    zkl_mutex *m[3];
    struct waiter w1 = {0}, w2 = {0};
    pthread_t t1, t2;
    size_t n;
    int i;
    for (i = 0; i < 3; i++)
        ok(zkl_mutex_create(c[i], path, &m[i]), "create");
    line_of_three(c, m, zh, path, &w1, &t1, &w2, &t2);
    ok(zkl_mutex_participants(m[0], &v, &n), "participants");
    cr_assert_eq(n, 3);
    snprintf(victim, sizeof victim, "%s", v[2]); /* the last in line: w2's */
    zkl_strings_free(v, n);
    atomic_store(&gone_warnings, 0);
    zkl_log_set(count_gone, ZKL_LOG_WARN, NULL);
    cr_assert_eq(zoo_delete(zh, victim, -1), ZOK);

    ok(zkl_mutex_release(m[0]), "holder releases");
    cr_assert(zkt_wait_for(flag_set, &w1.got, 10000), "the first waiter never got the lock");
    ok(w1.st, "first waiter");
    zkt_sleep_ms(300);
    cr_assert_not(atomic_load(&w2.got), "the waiter without a node got the lock while it was held");

    /* it watches the node just ahead; once that goes, it lists and finds its own gone */
    atomic_store(&w1.release_now, 1);
    pthread_join(t1, NULL);
    ok(w1.release_st, "first waiter releases");
    cr_assert(zkt_wait_for(flag_set, &w2.got, 10000), "the requeued waiter never got the lock");
    cr_assert_geq(atomic_load(&gone_warnings), 1, "no word of the deleted node");
    ok(w2.st, "requeued waiter");
    cr_assert(w2.held);
    ok(zkl_mutex_participants(m[0], &v, &n), "participants");
    cr_assert_eq(n, 1);
    cr_assert_str_neq(v[0], victim, "it must hold with a new node");
    zkl_strings_free(v, n);
    atomic_store(&w2.release_now, 1);
    pthread_join(t2, NULL);
    ok(w2.release_st, "requeued waiter releases");
    zkl_log_set(NULL, ZKL_LOG_OFF, NULL);
    ok(zkl_client_drain(c[2], 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left");
    for (i = 0; i < 3; i++) {
        ok(zkl_mutex_destroy(m[i]), "destroy");
        ok(zkl_client_close(c[i]), "close");
    }
    zookeeper_close(zh);
    free(path);
}

/*
 * Issue 56, item 1, for the mutex: the node of the waiter next in line is
 * deleted (an operator, a clean-up script). The waiter behind it lists and
 * watches the holder; when the holder lets go, it is granted, and the
 * waiter whose node went is not: it heard of its delete first (its node is
 * watched from the moment it is next) and queued again behind. On e5a0a8b
 * (as on 65709ca) both were granted: two holders.
 */
Test(faults, next_waiter_whose_node_is_deleted_is_not_granted, .timeout = 60)
{
    zkl_client *c[3] = {zkt_client(0), zkt_client(0), zkt_client(0)};
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("nextdeleted"), *victim;
    zkl_mutex *m[3];
    struct waiter w1 = {0}, w2 = {0};
    pthread_t t1, t2;
    int i;
    for (i = 0; i < 3; i++) { /* as across processes: nothing learned in-process */
        ok(zkl_client_set_process_hints(c[i], 0), "hints off");
        ok(zkl_mutex_create(c[i], path, &m[i]), "create");
    }
    line_of_three(c, m, zh, path, &w1, &t1, &w2, &t2);
    victim = zkt_child_in_line(zh, path, 1); /* w1's, next in line */
    cr_assert_eq(zoo_delete(zh, victim, -1), ZOK, "the operator's delete");
    zkt_requests_settle(c[2]); /* w2 listed again, and watches the holder */
    ok(zkl_mutex_release(m[0]), "holder releases");
    cr_assert(zkt_wait_for(flag_set, &w2.got, 10000), "the waiter behind never got the lock");
    ok(w2.st, "the waiter behind");
    zkt_sleep_ms(500);
    cr_assert_not(atomic_load(&w1.got), "the waiter whose node was deleted holds beside it: %s",
                  zkl_strerror(w1.st));
    cr_assert_eq(zkt_children_settle(zh, path, 2), 2, "the first waiter queued again");
    atomic_store(&w2.release_now, 1);
    pthread_join(t2, NULL);
    ok(w2.release_st, "release");
    cr_assert(zkt_wait_for(flag_set, &w1.got, 10000), "the requeued waiter never got the lock");
    ok(w1.st, "the requeued waiter");
    atomic_store(&w1.release_now, 1);
    pthread_join(t1, NULL);
    ok(w1.release_st, "release");
    for (i = 0; i < 3; i++)
        ok(zkl_client_drain(c[i], 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left");
    for (i = 0; i < 3; i++) {
        ok(zkl_mutex_destroy(m[i]), "destroy");
        ok(zkl_client_close(c[i]), "close");
    }
    zookeeper_close(zh);
    free(victim);
    free(path);
}

/*
 * The whole line and the lock's parent deleted at once by an operator (one
 * multi) while a waiter waits behind two nodes of another session: the
 * waiter's listing finds no parent. Its node went with it, so it queues
 * again, making the parent anew, and holds, the only one in line.
 */
Test(faults, waiter_whose_lock_parent_is_deleted_queues_again, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw(), *other = zkt_raw();
    char *path = zkt_path("parentgone"), name[512], ahead[2][512], full[3][512], **line;
    struct String_vector sv;
    size_t n;
    zkl_mutex *m;
    struct waiter w = {0};
    pthread_t t;
    zoo_op_t ops[4];
    zoo_op_result_t res[4];
    int i;
    ok(zkl_mutex_create(c, path, &m), "create");
    cr_assert_eq(zkt_make_path(zh, path, ZOO_CONTAINER), ZOK);
    /* two nodes of another session, named as Curator's, hold the head of the line */
    for (i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "%s/_c_0badc0de-0000-4000-8000-00000000000%d-lock-", path, i);
        cr_assert_eq(zoo_create(other, name, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                                ZOO_EPHEMERAL_SEQUENTIAL, ahead[i], sizeof ahead[i]),
                     ZOK);
    }
    w.m = m;
    pthread_create(&t, NULL, wait_for_lock, &w);
    cr_assert_eq(zkt_children_settle(zh, path, 3), 3, "the waiter never queued");
    zkt_requests_settle(c);
    /* one multi: the three nodes in line, then their parent */
    cr_assert_eq(zoo_get_children(zh, path, 0, &sv), ZOK);
    cr_assert_eq(sv.count, 3);
    for (i = 0; i < 3; i++) {
        snprintf(full[i], sizeof full[i], "%s/%s", path, sv.data[i]);
        zoo_delete_op_init(&ops[i], full[i], -1);
    }
    deallocate_String_vector(&sv);
    zoo_delete_op_init(&ops[3], path, -1);
    cr_assert_eq(zoo_multi(zh, 4, ops, res), ZOK, "the operator's multi failed");
    cr_assert(zkt_wait_for(flag_set, &w.got, 10000), "the waiter never got the lock");
    ok(w.st, "the waiter queues again and holds");
    cr_assert(w.held);
    ok(zkl_mutex_participants(m, &line, &n), "participants");
    cr_assert_eq(n, 1, "one node, under the parent made anew");
    cr_assert_eq(zkt_children(zh, path), 1, "one node, under the parent made anew");
    zkl_strings_free(line, n);
    atomic_store(&w.release_now, 1);
    pthread_join(t, NULL);
    ok(w.release_st, "release");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(other);
    zookeeper_close(zh);
    free(path);
}

static void expire_now(zkl_client *c, void *arg)
{
    (void)arg;
    zkt_expire_seen(c);
}

/*
 * CURATOR-604: a listing read just before our session ended still shows our
 * node, first in line. Believing it would hand out a lock whose node the
 * server is about to delete with the session. The acquire must start over in
 * the new session and hold through a node of that session.
 */
Test(faults, listing_from_an_ended_session_is_not_trusted, .timeout = 60)
{
    zkl_client *c = zkt_client(2000);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("stalelisting");
    char *node = NULL;
    zkl_mutex *m;
    struct Stat st;
    int64_t first = zkl_client_session_id(c);
    ok(zkl_mutex_create(c, path, &m), "create");
    zkt_fault_after_list(c, expire_now, NULL);
    ok(zkl_mutex_acquire(m, 20000), "acquire across the session's end");
    cr_assert(zkl_mutex_is_held(m), "the lock must be held in the live session");
    cr_assert_neq(zkl_client_session_id(c), first, "the acquire must have used a new session");
    ok(zkl_mutex_node(m, &node), "node");
    cr_assert_eq(zoo_exists(zh, node, 0, &st), ZOK, "the held node must exist: %s", node);
    cr_assert_eq(st.ephemeralOwner, zkl_client_session_id(c),
                 "the held node must belong to the live session");
    free(node);
    ok(zkl_mutex_release(m), "release");
    ok(zkl_client_drain(c, 5000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "a node was left");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    zookeeper_close(zh);
    free(path);
}
