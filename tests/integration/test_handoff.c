/*
 * test_handoff.c - local hand-off (lock cohorting, core/objects/cohort.c): threads
 * of one client pass the node among themselves while remote clients wait.
 * Exclusion with the checker, fencing tokens across streaks, both bounds
 * (a remote waiter waits at most one streak), session loss, lease expiry and
 * revocation ending a streak, the write side of a rwlock, and bad input.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "excl_log.h"
#include "faultproxy.h"
#include "zkt.h"

/* ---- a run of local and remote contenders ---- */

#define MAX_ENTERS 100000

struct run {
    int fd; /* the checker's log */
    atomic_bool stop;
    pthread_mutex_t mu; /* the order of holds, as the holders saw it (they exclude each other) */
    int n;
    int64_t token[MAX_ENTERS];
    int who[MAX_ENTERS]; /* 0: the local client, 1.. the remote ones */
    int64_t at_ms[MAX_ENTERS];
    int64_t worst_remote_wait_ms;
    int remote_holds, errors;
};

struct contender {
    struct run *r;
    zkl_mutex *m;
    int who;
    char name[32];
};

static void *contend(void *arg)
{
    struct contender *k = arg;
    struct run *r = k->r;
    while (!atomic_load(&r->stop)) {
        int64_t t0 = zkt_now_ms(), waited, token = 0;
        zkl_status st = zkl_mutex_acquire(k->m, 30000);
        waited = zkt_now_ms() - t0;
        if (st != ZKL_OK) {
            pthread_mutex_lock(&r->mu);
            r->errors++;
            pthread_mutex_unlock(&r->mu);
            fprintf(stderr, "%s: %s\n", k->name, zkl_errmsg());
            continue;
        }
        if (zkl_mutex_fencing_token(k->m, &token) != ZKL_OK)
            token = -1;
        excl_log(r->fd, 'M', "enter", k->name, 0);
        pthread_mutex_lock(&r->mu);
        if (r->n < MAX_ENTERS) {
            r->token[r->n] = token;
            r->who[r->n] = k->who;
            r->at_ms[r->n] = zkt_now_ms();
            r->n++;
        }
        if (k->who > 0) {
            r->remote_holds++;
            if (waited > r->worst_remote_wait_ms)
                r->worst_remote_wait_ms = waited;
        }
        pthread_mutex_unlock(&r->mu);
        usleep(300);
        excl_log(r->fd, 'M', "exit", k->name, 0);
        if (zkl_mutex_release(k->m) != ZKL_OK) {
            pthread_mutex_lock(&r->mu);
            r->errors++;
            pthread_mutex_unlock(&r->mu);
        }
        if (k->who > 0)
            usleep(1000); /* a remote client comes back after a while */
    }
    return NULL;
}

/* What the run showed about streaks: the longest (holds, and ms from its
 * first hold to its last), and whether the tokens only grew. */
struct streaks {
    int longest, local_holds, streaks;
    int64_t longest_ms;
};

static struct streaks check_tokens(const struct run *r)
{
    struct streaks s = {0, 0, 0, 0};
    int i, len = 0;
    int64_t first = 0;
    for (i = 0; i < r->n; i++) {
        cr_assert_gt(r->token[i], 0, "hold %d had no token", i);
        if (r->who[i] == 0)
            s.local_holds++;
        if (i > 0) {
            cr_assert_geq(r->token[i], r->token[i - 1], "token %lld after %lld (hold %d)",
                          (long long)r->token[i], (long long)r->token[i - 1], i);
            if (r->token[i] == r->token[i - 1]) { /* a streak: local holders only */
                cr_assert(r->who[i] == 0 && r->who[i - 1] == 0,
                          "hold %d shares a token with another client's", i);
                len++;
                if (len > s.longest)
                    s.longest = len;
                if (r->at_ms[i] - first > s.longest_ms)
                    s.longest_ms = r->at_ms[i] - first;
                continue;
            }
        }
        len = 1;
        first = r->at_ms[i];
        s.streaks++;
        if (s.longest < 1)
            s.longest = 1;
    }
    return s;
}

/* locals threads share one mutex with local hand-off (max_streak, max_ms)
 * on one client; remotes clients contend, each with its own. */
static struct run *run_mix(int locals, int remotes, int max_streak, int max_ms, int seconds,
                           uint64_t *passes)
{
    static char log[256];
    struct run *r = calloc(1, sizeof *r);
    zkl_client *lc = zkt_client(0), *rc[4];
    char *path = zkt_path("handoff");
    struct contender ks[16];
    pthread_t t[16];
    zkl_mutex *shared;
    excl_report rep;
    int i, n = locals + remotes;
    cr_assert(r && n <= 16 && remotes <= 4);
    snprintf(log, sizeof log, "/tmp/zkl-handoff-%d.log", (int)getpid());
    r->fd = excl_open(log);
    pthread_mutex_init(&r->mu, NULL);
    ok(zkl_mutex_create(lc, path, &shared), "create");
    ok(zkl_mutex_set_local_handoff(shared, max_streak, max_ms), "local hand-off");
    for (i = 0; i < n; i++) {
        ks[i].r = r;
        ks[i].who = i < locals ? 0 : i - locals + 1;
        snprintf(ks[i].name, sizeof ks[i].name, "%s-%d", i < locals ? "local" : "remote", i);
        if (i < locals) {
            ks[i].m = shared;
        } else {
            rc[i - locals] = zkt_client(0);
            ok(zkl_mutex_create(rc[i - locals], path, &ks[i].m), "create remote");
        }
    }
    for (i = 0; i < n; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, contend, &ks[i]), 0);
    zkt_sleep_ms(seconds * 1000);
    atomic_store(&r->stop, true);
    for (i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    *passes = zkl_mutex_local_handoffs(shared);
    rep = excl_check(log, 0);
    cr_assert_eq(rep.violations, 0, "exclusion: %s", rep.first_error);
    cr_assert_eq(rep.malformed, 0);
    cr_assert_eq(r->errors, 0, "%d failed acquires or releases", r->errors);
    /* every node went: the streaks' last releases and every remote one */
    ok(zkl_client_drain(lc, 10000), "drain");
    for (i = locals; i < n; i++)
        ok(zkl_client_drain(rc[i - locals], 10000), "drain remote");
    {
        zhandle_t *zh = zkt_raw();
        cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "nodes left under %s", path);
        zookeeper_close(zh);
    }
    for (i = locals; i < n; i++) {
        ok(zkl_mutex_destroy(ks[i].m), "destroy remote");
        ok(zkl_client_close(rc[i - locals]), "close remote");
    }
    ok(zkl_mutex_destroy(shared), "destroy");
    ok(zkl_client_close(lc), "close");
    close(r->fd);
    unlink(log);
    free(path);
    return r;
}

Test(handoff, count_bound_exclusion_and_tokens, .timeout = 120)
{
    uint64_t passes;
    struct run *r = run_mix(4, 2, 4, 60000, 3, &passes);
    struct streaks s = check_tokens(r);
    cr_log_info("holds %d (local %d, remote %d), passes %llu, streaks %d, longest %d, worst "
                "remote wait %lld ms",
                r->n, s.local_holds, r->remote_holds, (unsigned long long)passes, s.streaks,
                s.longest, (long long)r->worst_remote_wait_ms);
    cr_assert_gt(passes, 0, "no hold was passed on locally");
    cr_assert_leq(s.longest, 4, "a streak of %d holds; the bound is 4", s.longest);
    cr_assert_gt(r->remote_holds, 4, "the remote clients were starved (%d holds)", r->remote_holds);
    free(r);
}

Test(handoff, time_bound_is_one_streak_for_remote_waiters, .timeout = 120)
{
    uint64_t passes;
    struct run *r = run_mix(3, 1, 1000000, 150, 3, &passes);
    struct streaks s = check_tokens(r);
    cr_log_info("holds %d, passes %llu, streaks %d, longest %d holds over %lld ms, worst remote "
                "wait %lld ms",
                r->n, (unsigned long long)passes, s.streaks, s.longest, (long long)s.longest_ms,
                (long long)r->worst_remote_wait_ms);
    cr_assert_gt(passes, 0);
    /* the last hold of a streak begins less than max_ms after its first was
     * granted (plus the scheduler's delay in waking its thread) */
    cr_assert_lt(s.longest_ms, 150 + 250, "a streak ran %lld ms; the bound is 150",
                 (long long)s.longest_ms);
    /* a remote waiter waits for at most one streak and the hold in progress */
    cr_assert_lt(r->worst_remote_wait_ms, 150 + 1500, "a remote waiter waited %lld ms",
                 (long long)r->worst_remote_wait_ms);
    cr_assert_gt(r->remote_holds, 4, "the remote client was starved");
    free(r);
}

/* ---- streaks that must end ---- */

struct second {
    zkl_mutex *m;
    int timeout_ms;
    zkl_status st;
    int64_t token;
    atomic_bool done;
};

static void *second_main(void *arg)
{
    struct second *s = arg;
    s->st = zkl_mutex_acquire(s->m, s->timeout_ms);
    if (s->st == ZKL_OK) {
        s->st = zkl_mutex_fencing_token(s->m, &s->token);
        zkl_mutex_release(s->m);
    }
    atomic_store(&s->done, true);
    return NULL;
}

static int done(void *p)
{
    return atomic_load(&((struct second *)p)->done);
}

/* A second thread queued locally behind the holder of m. */
static void start_second(struct second *s, zkl_mutex *m, pthread_t *t)
{
    unsigned long queued = zkt_cohort_queued();
    memset(s, 0, sizeof *s);
    s->m = m;
    s->timeout_ms = 30000;
    cr_assert_eq(pthread_create(t, NULL, second_main, s), 0);
    cr_assert(zkt_wait_cohort_queued(queued, 20000), "the second thread never queued");
    cr_assert_not(atomic_load(&s->done), "the second thread did not wait");
}

Test(handoff, a_passed_hold_keeps_its_node_and_token, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("handoff-pass");
    zkl_mutex *m;
    struct second s;
    pthread_t t;
    int64_t token;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_set_local_handoff(m, 10, 10000), "local hand-off");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_fencing_token(m, &token), "token");
    start_second(&s, m, &t);
    ok(zkl_mutex_release(m), "release: passed on");
    pthread_join(t, NULL);
    ok(s.st, "the second thread");
    cr_assert_eq(s.token, token, "a streak shares its node's token");
    cr_assert_eq(zkl_mutex_local_handoffs(m), 1);
    {
        /* the metrics say so too */
        char buf[16384], line[600];
        size_t need = 0;
        ok(zkl_client_metrics(c, buf, sizeof buf, &need), "metrics");
        snprintf(line, sizeof line, ",path=\"%s\",side=\"mutex\"", path);
        cr_assert(strstr(buf, "zklock_local_handoffs_total{"), "%s", buf);
        cr_assert(
            strstr(strstr(buf, "zklock_local_handoffs_total{"), line) &&
                !strncmp(strstr(strstr(buf, "zklock_local_handoffs_total{"), line) + strlen(line),
                         "} 1\n", 4),
            "%s", buf);
    }
    ok(zkl_client_drain(c, 10000), "drain");
    {
        zhandle_t *zh = zkt_raw();
        cr_assert_eq(zkt_children_settle(zh, path, 0), 0, "the streak's node was left");
        zookeeper_close(zh);
    }
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

struct stranger {
    zkl_mutex *m;
    zkl_status st;
    bool held;
};

static void *stranger_main(void *arg)
{
    struct stranger *s = arg;
    s->held = zkl_mutex_is_held(s->m);
    s->st = zkl_mutex_release(s->m);
    return NULL;
}

/* Ownership stays per thread with local hand-off: a thread that holds nothing
 * cannot release (nor pass on) another thread's hold. */
Test(handoff, release_by_another_thread_is_refused, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    zhandle_t *zh = zkt_raw();
    char *path = zkt_path("handoff-stranger");
    zkl_mutex *m;
    struct stranger st = {0};
    struct second s;
    pthread_t t, w;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_set_local_handoff(m, 10, 10000), "local hand-off");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    start_second(&s, m, &w); /* a local waiter a wrong release could hand it to */
    st.m = m;
    cr_assert_eq(pthread_create(&t, NULL, stranger_main, &st), 0);
    pthread_join(t, NULL);
    cr_assert_not(st.held, "another thread reads the hold as its own");
    cr_assert_eq(st.st, ZKL_ENOTOWNER, "another thread's release gave %s", zkl_strerror(st.st));
    cr_assert(zkl_mutex_is_held(m), "the holder lost its hold to another thread's release");
    zkt_sleep_ms(100);
    cr_assert_not(atomic_load(&s.done), "the local waiter got in while the holder held");
    cr_assert_eq(zkt_children(zh, path), 1);
    ok(zkl_mutex_release(m), "release");
    pthread_join(w, NULL);
    ok(s.st, "the local waiter");
    ok(zkl_client_drain(c, 10000), "drain");
    cr_assert_eq(zkt_children_settle(zh, path, 0), 0);
    ok(zkl_mutex_destroy(m), "destroy");
    zookeeper_close(zh);
    ok(zkl_client_close(c), "close");
    free(path);
}

Test(handoff, session_loss_ends_the_streak, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("handoff-loss");
    zkl_mutex *m;
    struct second s;
    pthread_t t;
    int64_t token;
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_set_local_handoff(m, 10, 10000), "local hand-off");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_fencing_token(m, &token), "token");
    start_second(&s, m, &t);
    zkt_expire_seen(c); /* the session ends while the streak holds */
    cr_assert_not(zkl_mutex_is_held(m), "held after its session ended");
    cr_assert_eq(zkl_mutex_release(m), ZKL_ELOST);
    cr_assert(zkt_wait_for(done, &s, 20000), "the second thread never got the lock");
    pthread_join(t, NULL);
    ok(s.st, "the second thread: a new place in the new session");
    cr_assert_gt(s.token, token, "the second thread got the lost node's token");
    cr_assert_eq(zkl_mutex_local_handoffs(m), 0, "a lost hold was passed on");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

Test(handoff, lease_expiry_ends_the_streak, .timeout = 90)
{
    fp_proxy *fp = fp_start(zkt_servers());
    zkl_client_options o;
    zkl_client *c = NULL;
    char *path = zkt_path("handoff-lease");
    zkl_mutex *m;
    struct second s;
    pthread_t t;
    int64_t token, left;
    cr_assert(fp);
    zkl_client_options_init(&o);
    o.session_timeout_ms = 4000;
    ok(zkl_client_open(fp_connect_string(fp), &o, &c), "open through the proxy");
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_set_local_handoff(m, 10, 60000), "local hand-off");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_fencing_token(m, &token), "token");
    start_second(&s, m, &t);
    fp_drop_replies(fp, true); /* cut off: renewals go unanswered */
    while (zkl_mutex_lease_remaining(m, &left) == ZKL_OK)
        zkt_sleep_ms(20);
    cr_assert_not(zkl_mutex_is_held(m), "held after its lease ran out");
    zkl_mutex_release(m); /* ELOST, or OK if it is still counted: either way no pass */
    cr_assert_eq(zkl_mutex_local_handoffs(m), 0, "a lapsed hold was passed on");
    fp_drop_replies(fp, false);
    cr_assert(zkt_wait_for(done, &s, 40000), "the second thread never got the lock");
    pthread_join(t, NULL);
    ok(s.st, "the second thread: a new place in line");
    cr_assert_neq(s.token, token, "the second thread got the lapsed node's token");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    fp_stop(fp);
    free(path);
}

static atomic_int revoked;

static void on_revoke(void *lock, void *ud)
{
    (void)lock;
    (void)ud;
    atomic_store(&revoked, 1);
}

static int flag(void *p)
{
    return atomic_load((atomic_int *)p);
}

Test(handoff, a_revoke_ends_the_streak, .timeout = 60)
{
    zkl_client *c = zkt_client(0), *asker = zkt_client(0);
    char *path = zkt_path("handoff-revoke"), *node;
    zkl_mutex *m;
    struct second s;
    pthread_t t;
    int64_t token;
    atomic_store(&revoked, 0);
    ok(zkl_mutex_create(c, path, &m), "create");
    ok(zkl_mutex_make_revocable(m, on_revoke, NULL), "revocable");
    ok(zkl_mutex_set_local_handoff(m, 10, 60000), "local hand-off");
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    ok(zkl_mutex_fencing_token(m, &token), "token");
    ok(zkl_mutex_node(m, &node), "node");
    start_second(&s, m, &t);
    ok(zkl_revoke(asker, node), "revoke");
    cr_assert(zkt_wait_for(flag, &revoked, 10000), "the revoke never came");
    ok(zkl_mutex_release(m), "release after the revoke");
    pthread_join(t, NULL);
    ok(s.st, "the second thread");
    cr_assert_gt(s.token, token, "the revoked node was passed on");
    cr_assert_eq(zkl_mutex_local_handoffs(m), 0);
    free(node);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    ok(zkl_client_close(asker), "close");
    free(path);
}

/* ---- the write side ---- */

struct writer {
    zkl_rwlock *l;
    zkl_status st;
    int64_t token;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    w->st = zkl_rwlock_write_acquire(w->l, 30000);
    if (w->st == ZKL_OK) {
        w->st = zkl_rwlock_write_fencing_token(w->l, &w->token);
        zkl_rwlock_write_release(w->l);
    }
    return NULL;
}

Test(handoff, write_side_passes_but_not_after_a_downgrade, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("handoff-rw");
    zkl_rwlock *l;
    struct writer w = {0};
    pthread_t t;
    int64_t token;
    unsigned long queued;
    ok(zkl_rwlock_create(c, path, &l), "create");
    ok(zkl_rwlock_set_write_local_handoff(l, 10, 10000), "local hand-off");
    /* a plain pass */
    ok(zkl_rwlock_write_acquire(l, 5000), "write");
    ok(zkl_rwlock_write_fencing_token(l, &token), "token");
    w.l = l;
    queued = zkt_cohort_queued();
    cr_assert_eq(pthread_create(&t, NULL, writer_main, &w), 0);
    cr_assert(zkt_wait_cohort_queued(queued, 20000), "the second writer never queued");
    ok(zkl_rwlock_write_release(l), "release: passed on");
    pthread_join(t, NULL);
    ok(w.st, "the second writer");
    cr_assert_eq(w.token, token);
    cr_assert_eq(zkl_rwlock_write_local_handoffs(l), 1);
    /* a downgrade: the write hold is not passed while our read node stands */
    ok(zkl_rwlock_write_acquire(l, 5000), "write again");
    ok(zkl_rwlock_write_fencing_token(l, &token), "token");
    ok(zkl_rwlock_read_acquire(l, 5000), "downgrade");
    memset(&w, 0, sizeof w);
    w.l = l;
    queued = zkt_cohort_queued();
    cr_assert_eq(pthread_create(&t, NULL, writer_main, &w), 0);
    cr_assert(zkt_wait_cohort_queued(queued, 20000), "the second writer never queued");
    ok(zkl_rwlock_write_release(l), "release the write side, keep reading");
    zkt_sleep_ms(300);
    cr_assert_eq(w.st, ZKL_OK, "(still waiting)");
    cr_assert_eq(w.token, 0, "a writer got in while we read");
    ok(zkl_rwlock_read_release(l), "release the read side");
    pthread_join(t, NULL);
    ok(w.st, "the second writer, after the reader");
    cr_assert_gt(w.token, token, "the downgraded writer's node was passed on");
    cr_assert_eq(zkl_rwlock_write_local_handoffs(l), 1);
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* ---- bad input and options that cannot go together ---- */

static void nop(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    (void)st;
    (void)msg;
    (void)ud;
}

Test(handoff, bad_input, .timeout = 30)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("handoff-bad");
    zkl_mutex *m, *m2;
    zkl_rwlock *l;
    zkl_op *op = (zkl_op *)1;
    cr_assert_eq(zkl_mutex_set_local_handoff(NULL, 1, 1), ZKL_EINVAL);
    cr_assert_eq(zkl_rwlock_set_write_local_handoff(NULL, 1, 1), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_local_handoffs(NULL), 0);
    cr_assert_eq(zkl_rwlock_write_local_handoffs(NULL), 0);
    ok(zkl_mutex_create(c, path, &m), "create");
    cr_assert_eq(zkl_mutex_set_local_handoff(m, 0, 100), ZKL_EINVAL);
    cr_assert_eq(zkl_mutex_set_local_handoff(m, 4, 0), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "at least 1"), "%s", zkl_errmsg());
    cr_assert_eq(zkl_mutex_local_handoffs(m), 0);
    ok(zkl_mutex_set_local_handoff(m, 4, 100), "on");
    cr_assert_eq(zkl_mutex_set_local_handoff(m, 4, 100), ZKL_EBUSY, "twice");
    cr_assert_eq(zkl_mutex_acquire_async(m, 1000, nop, NULL, &op), ZKL_EINVAL);
    cr_assert_null(op);
    cr_assert(strstr(zkl_errmsg(), "local hand-off"), "%s", zkl_errmsg());
    ok(zkl_mutex_create(c, path, &m2), "create");
    ok(zkl_mutex_acquire(m2, 5000), "acquire");
    cr_assert_eq(zkl_mutex_set_local_handoff(m2, 4, 100), ZKL_EBUSY, "after an acquire");
    cr_assert(strstr(zkl_errmsg(), "before the first acquire"), "%s", zkl_errmsg());
    ok(zkl_mutex_release(m2), "release");
    /* a timeout in the local queue says so */
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    {
        struct second s;
        pthread_t t;
        memset(&s, 0, sizeof s);
        s.m = m; /* from another thread, with no time to wait: try once */
        cr_assert_eq(pthread_create(&t, NULL, second_main, &s), 0);
        pthread_join(t, NULL);
        cr_assert_eq(s.st, ZKL_ETIMEDOUT);
    }
    cr_assert_eq(zkl_mutex_release(m2), ZKL_ENOTOWNER, "not this thread's");
    ok(zkl_mutex_release(m), "release");
    ok(zkl_rwlock_create(c, path, &l), "create");
    ok(zkl_rwlock_set_write_local_handoff(l, 2, 50), "write side on");
    cr_assert_eq(zkl_rwlock_write_acquire_async(l, 1000, nop, NULL, &op), ZKL_EINVAL);
    ok(zkl_rwlock_destroy(l), "destroy");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(m2), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}
