/*
 * test_ensemble.c - a 3-server ensemble on loopback (the zk3 ctest fixture):
 * 8 sessions contend on a mutex, a read/write lock and a semaphore while the
 * leader is killed (SIGKILL) and later restarted. No exclusion is ever broken,
 * contention resumes after the new election (the gap is printed), and no
 * znode is left once every client has closed.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "excl_log.h"
#include "zkt.h"

#define WORKERS 8

static char servers[1024], dir[1024];

static void read_ensemble(void)
{
    const char *d = getenv("ZKL_TEST_ZK3_DIR");
    char file[1100];
    FILE *f;
    cr_assert(d, "ZKL_TEST_ZK3_DIR is not set (run through ctest)");
    snprintf(dir, sizeof dir, "%s", d);
    snprintf(file, sizeof file, "%s/connect", d);
    f = fopen(file, "r");
    cr_assert(f && fgets(servers, sizeof servers, f), "no ensemble at %s", d);
    fclose(f);
    servers[strcspn(servers, "\r\n")] = '\0';
}

/* Run scripts/zk-server with args; returns its first output line as a number. */
static int zk_server(const char *args)
{
    char cmd[2400], line[64] = "";
    FILE *p;
    snprintf(cmd, sizeof cmd, "'%s' %s --dir '%s' 2>&1", getenv("ZKL_ZK_SERVER"), args, dir);
    p = popen(cmd, "r");
    cr_assert(p);
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    cr_assert_eq(pclose(p), 0, "zk-server %s failed: %s", args, line);
    return atoi(line);
}

struct shared {
    char mpath[256], rwpath[256], spath[256];
    int fd_m, fd_rw, fd_s;
    atomic_int stop, errors, acquisitions;
    atomic_llong last_ok_ms;
};

struct worker {
    struct shared *sh;
    int id;
};

static void note_ok(struct shared *sh)
{
    atomic_fetch_add(&sh->acquisitions, 1);
    atomic_store(&sh->last_ok_ms, zkt_now_ms());
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m;
    zkl_rwlock *rw;
    zkl_semaphore *s;
    char who[32];
    int round = 0;
    zkl_client_options_init(&o);
    o.session_timeout_ms = 10000;
    o.retry_max = 20;
    cr_assert_eq(zkl_client_open(servers, &o, &c), ZKL_OK, "%s", zkl_errmsg());
    cr_assert_eq(zkl_mutex_create(c, sh->mpath, &m), ZKL_OK);
    cr_assert_eq(zkl_rwlock_create(c, sh->rwpath, &rw), ZKL_OK);
    cr_assert_eq(zkl_semaphore_create(c, sh->spath, 3, &s), ZKL_OK);
    snprintf(who, sizeof who, "c-%d", w->id);
    while (!atomic_load(&sh->stop)) {
        int kind = (round++ + w->id) % 3;
        if (kind == 0) {
            int64_t tok;
            if (zkl_mutex_acquire(m, 15000) != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            zkl_mutex_fencing_token(m, &tok);
            excl_log(sh->fd_m, 'M', "enter", who, tok);
            zkt_sleep_ms(2);
            excl_log(sh->fd_m, 'M', "exit", who, tok);
            zkl_mutex_release(m);
        } else if (kind == 1) {
            bool write = round % 4 == 0;
            zkl_status st =
                write ? zkl_rwlock_write_acquire(rw, 15000) : zkl_rwlock_read_acquire(rw, 15000);
            if (st != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            excl_log(sh->fd_rw, write ? 'W' : 'R', "enter", who, 0);
            zkt_sleep_ms(2);
            excl_log(sh->fd_rw, write ? 'W' : 'R', "exit", who, 0);
            if (write)
                zkl_rwlock_write_release(rw);
            else
                zkl_rwlock_read_release(rw);
        } else {
            zkl_lease *l;
            if (zkl_semaphore_acquire(s, 15000, &l) != ZKL_OK) {
                atomic_fetch_add(&sh->errors, 1);
                continue;
            }
            excl_log(sh->fd_s, 'S', "enter", who, 0);
            zkt_sleep_ms(2);
            excl_log(sh->fd_s, 'S', "exit", who, 0);
            zkl_lease_return(l);
        }
        note_ok(sh);
    }
    cr_assert_eq(zkl_mutex_destroy(m), ZKL_OK);
    cr_assert_eq(zkl_rwlock_destroy(rw), ZKL_OK);
    cr_assert_eq(zkl_semaphore_destroy(s), ZKL_OK);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
    return NULL;
}

static void check_log(const char *file, int max_shared, const char *what)
{
    excl_report r = excl_check(file, max_shared);
    printf("ensemble: %s: %d holds, %d violations, %d token regressions\n", what, r.enters,
           r.violations, r.token_regressions);
    cr_assert_eq(r.malformed, 0);
    cr_assert_gt(r.enters, 0, "%s: nobody ever held it", what);
    cr_assert_eq(r.violations, 0, "%s: %s", what, r.first_error);
    cr_assert_eq(r.token_regressions, 0, "%s: fencing tokens went back", what);
}

/*
 * Told nothing of the lag, the client reads it from the server's `conf` at
 * open: syncLimit 2 x tickTime 500 + 250 = 1250 ms (tests/CMakeLists.txt).
 * A session timeout the found lag cannot fit is refused as a given one is.
 */
Test(ensemble, the_lease_lag_is_read_from_the_servers, .timeout = 60)
{
    zkl_client_options o;
    zkl_client *c;
    zkl_lag_source source = ZKL_LAG_GIVEN;
    read_ensemble();
    zkl_client_options_init(&o);
    cr_assert_eq(zkl_client_open(servers, &o, &c), ZKL_OK, "%s", zkl_errmsg());
    cr_assert_eq(zkl_client_ensemble_lag(c, &source), 1250);
    cr_assert_eq(source, ZKL_LAG_FOUND);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
    o.session_timeout_ms = 4000; /* a quarter, 1000 ms, cannot hold 1250 */
    cr_assert_eq(zkl_client_open(servers, &o, &c), ZKL_EINVAL);
    cr_assert(strstr(zkl_errmsg(), "the ensemble's ensemble_lag_ms 1250"), "%s", zkl_errmsg());
    o.ensemble_lag_ms = 0; /* given: taken as it is */
    cr_assert_eq(zkl_client_open(servers, &o, &c), ZKL_OK, "%s", zkl_errmsg());
    cr_assert_eq(zkl_client_ensemble_lag(c, &source), 0);
    cr_assert_eq(source, ZKL_LAG_GIVEN);
    cr_assert_eq(zkl_client_close(c), ZKL_OK);
}

Test(ensemble, leader_killed_and_restarted_under_contention, .timeout = 240)
{
    struct shared sh;
    struct worker w[WORKERS];
    pthread_t t[WORKERS];
    char base[1100], files[3][1200];
    int i, leader, before;
    int64_t killed_at, resumed_ms;
    read_ensemble();
    memset(&sh, 0, sizeof sh);
    snprintf(base, sizeof base, "%s/ensemble-%d", dir, (int)getpid());
    snprintf(files[0], sizeof files[0], "%s-mutex.log", base);
    snprintf(files[1], sizeof files[1], "%s-rw.log", base);
    snprintf(files[2], sizeof files[2], "%s-sem.log", base);
    sh.fd_m = excl_open(files[0]);
    sh.fd_rw = excl_open(files[1]);
    sh.fd_s = excl_open(files[2]);
    snprintf(sh.mpath, sizeof sh.mpath, "/zklens/m-%d", (int)getpid());
    snprintf(sh.rwpath, sizeof sh.rwpath, "/zklens/rw-%d", (int)getpid());
    snprintf(sh.spath, sizeof sh.spath, "/zklens/s-%d", (int)getpid());
    for (i = 0; i < WORKERS; i++) {
        w[i].sh = &sh;
        w[i].id = i;
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    zkt_sleep_ms(3000);
    leader = zk_server("leader");
    cr_assert(leader >= 1 && leader <= 3, "no leader");
    before = atomic_load(&sh.acquisitions);
    killed_at = zkt_now_ms();
    {
        char args[64];
        snprintf(args, sizeof args, "stop-one %d", leader);
        zk_server(args);
    }
    /* contention must resume once the rest elect a new leader */
    while (atomic_load(&sh.last_ok_ms) < killed_at + 50 && zkt_now_ms() < killed_at + 60000)
        zkt_sleep_ms(20);
    resumed_ms = atomic_load(&sh.last_ok_ms) - killed_at;
    cr_assert_lt(resumed_ms, 60000, "contention never resumed after the leader died");
    printf("ensemble: leader %d killed; contention resumed after %lld ms\n", leader,
           (long long)resumed_ms);
    zkt_sleep_ms(2000);
    {
        char args[64];
        snprintf(args, sizeof args, "start-one %d", leader);
        zk_server(args);
    }
    zkt_sleep_ms(3000);
    atomic_store(&sh.stop, 1);
    for (i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    printf("ensemble: %d acquisitions (%d before the kill), %d failed acquires during failover\n",
           atomic_load(&sh.acquisitions), before, atomic_load(&sh.errors));
    cr_assert_gt(atomic_load(&sh.acquisitions), before + 10);
    check_log(files[0], 0, "mutex");
    check_log(files[1], 0, "rwlock");
    check_log(files[2], 3, "semaphore");
    {
        zkl_client_options o;
        zkl_client *c;
        zkl_participant *v;
        size_t n;
        zkl_client_options_init(&o);
        cr_assert_eq(zkl_client_open(servers, &o, &c), ZKL_OK);
        cr_assert_eq(zkl_inspect(c, sh.mpath, &v, &n), ZKL_OK);
        zkl_participants_free(v, n);
        cr_assert_eq(n, 0, "mutex nodes left: %zu", n);
        cr_assert_eq(zkl_inspect(c, sh.rwpath, &v, &n), ZKL_OK);
        zkl_participants_free(v, n);
        cr_assert_eq(n, 0, "rwlock nodes left: %zu", n);
        cr_assert_eq(zkl_inspect(c, sh.spath, &v, &n), ZKL_OK);
        zkl_participants_free(v, n);
        cr_assert_eq(n, 0, "semaphore nodes left: %zu", n);
        zkl_client_close(c);
    }
    for (i = 0; i < 3; i++)
        unlink(files[i]);
}
