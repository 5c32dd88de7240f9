/*
 * test_metrics.c - zkl_client_metrics (zklock/metrics.h) on a real server:
 * a known workload, then its OpenMetrics text read back: the counts per lock
 * object and side, the histograms' shape, the client's requests by kind
 * against zkl_client_stats, lost sessions and holds, and the text's form.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zklock/zklock.h"
#include "faultproxy.h"
#include "zkt.h"

/*
 * The text of c (NULL: the whole process's), need bytes or more: read again
 * with a larger buffer while it does not fit, as zkl_client_metrics says a
 * caller should (a counter may gain a digit between two calls). *need: its
 * length.
 */
static char *read_text(zkl_client *c, size_t *need)
{
    char *buf = NULL;
    for (int tries = 0;; tries++) {
        size_t len = *need + 1 + (size_t)tries * 256;
        zkl_status st;
        buf = realloc(buf, len);
        cr_assert(buf);
        st = c ? zkl_client_metrics(c, buf, len, need) : zkl_process_metrics(buf, len, need);
        if (st == ZKL_OK)
            return buf;
        cr_assert(st == ZKL_ENOMEM && tries < 5, "metrics: %s", zkl_errmsg());
    }
}

static char *metrics(zkl_client *c)
{
    size_t need = 0;
    char small[16], *buf;
    cr_assert_eq(zkl_client_metrics(c, small, sizeof small, &need), ZKL_ENOMEM);
    cr_assert_gt(need, sizeof small);
    cr_assert(strstr(zkl_errmsg(), "bytes"), "%s", zkl_errmsg());
    buf = read_text(c, &need);
    cr_assert_eq(strlen(buf), need);
    return buf;
}

/* Whose samples sample() and bucket() read: the client named so. */
static const char *who = "main";

/* The value of sample name{client=who,path=P,side=S}, -1 if there is none. */
static long long sample(const char *text, const char *name, const char *path, const char *side)
{
    char prefix[512];
    const char *at = text;
    snprintf(prefix, sizeof prefix, "%s{client=\"%s\",path=\"%s\",side=\"%s\"} ", name, who, path,
             side);
    while ((at = strstr(at, prefix)) != NULL) {
        if (at == text || at[-1] == '\n')
            return strtoll(at + strlen(prefix), NULL, 10);
        at++;
    }
    return -1;
}

/* The count in bucket le of histogram name (its _bucket series), -1 if none. */
static long long bucket(const char *text, const char *name, const char *path, const char *side,
                        const char *le)
{
    char prefix[512], tail[64];
    const char *at = text, *eol;
    snprintf(prefix, sizeof prefix, "%s_bucket{client=\"%s\",path=\"%s\",side=\"%s\",", name, who,
             path, side);
    snprintf(tail, sizeof tail, "le=\"%s\"} ", le);
    while ((at = strstr(at, prefix)) != NULL) {
        const char *t = strstr(at, tail);
        eol = strchr(at, '\n');
        if (t && (!eol || t < eol))
            return strtoll(t + strlen(tail), NULL, 10);
        at++;
    }
    return -1;
}

/* The value of an unlabelled (or kind-labelled) client sample. */
static long long client_sample(const char *text, const char *line_prefix)
{
    const char *at = strstr(text, line_prefix);
    return at ? strtoll(at + strlen(line_prefix), NULL, 10) : -1;
}

/*
 * The text's form: every sample belongs to a family declared before it (its
 * name, or the name with _total, _bucket, _count or _sum), no series twice,
 * and "# EOF" last.
 */
static void check_form(const char *text)
{
    char family[64] = "";
    char *copy = strdup(text), *save = NULL, *line;
    size_t len = strlen(text);
    int lines = 0;
    cr_assert(len > 6 && strcmp(text + len - 6, "# EOF\n") == 0, "no # EOF at the end");
    for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lines++;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            sscanf(line + 7, "%63s", family);
            continue;
        }
        if (line[0] == '#')
            continue;
        cr_assert(family[0] && strncmp(line, family, strlen(family)) == 0,
                  "sample outside its family (%s): %s", family, line);
        cr_assert_eq(strstr(strstr(text, line) + 1, line), NULL, "a series twice: %s", line);
    }
    cr_assert_gt(lines, 20);
    free(copy);
}

/* The text passes Debian's strict OpenMetrics parser (python3-prometheus-client),
 * with canonical bounds, units and _created samples (tests/support/openmetrics_check.py). */
static void check_strict(const char *text)
{
    const char *script = getenv("ZKL_OPENMETRICS_CHECK");
    char file[] = "/tmp/zklock-metrics-XXXXXX", cmd[1024];
    int fd = mkstemp(file), rc;
    cr_assert(script, "ZKL_OPENMETRICS_CHECK is not set (run through ctest)");
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' >/dev/null", script, file);
    rc = system(cmd);
    unlink(file);
    cr_assert_eq(rc, 0, "the strict parser refused the text (its reason is above):\n%s", text);
}

/* c's mutex at pa shows one lost hold (zkt_wait_for). */
static const char *lost_path;
static int lost_told(void *c)
{
    char *text = metrics(c);
    long long n = sample(text, "zklock_holds_lost_total", lost_path, "mutex");
    free(text);
    return n == 1;
}

static atomic_int async_done;

static void on_async(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)ud;
    cr_assert_eq(st, ZKL_OK, "%s", msg);
    zkl_op_release(op);
    atomic_fetch_add(&async_done, 1);
}

static int async_over(void *p)
{
    (void)p;
    return atomic_load(&async_done) == 1;
}

Test(metrics, a_known_workload, .timeout = 90)
{
    zkl_client *c = zkt_client(0), *other = zkt_client(0);
    char *base = zkt_path("metrics"), pa[256], pb[256], pc[256], pd[256], *text;
    ok(zkl_client_set_name(c, "main"), "name");
    long long holds_before;
    zkl_mutex *m, *mo, *ma;
    zkl_rwlock *rw;
    zkl_semaphore *s;
    zkl_lease *leases[2];
    zkl_op *op;
    zkl_client_stats stats;
    long long kinds = 0;
    const char *k;
    int i;
    snprintf(pa, sizeof pa, "%s/a", base);
    snprintf(pb, sizeof pb, "%s/b", base);
    snprintf(pc, sizeof pc, "%s/c", base);
    snprintf(pd, sizeof pd, "%s/d", base);
    ok(zkl_mutex_create(c, pa, &m), "create");
    for (i = 0; i < 3; i++) { /* 3 holds, the last taken twice (reentrant) */
        ok(zkl_mutex_acquire(m, 5000), "acquire");
        if (i == 2) {
            ok(zkl_mutex_acquire(m, 5000), "acquire again");
            ok(zkl_mutex_release(m), "release once");
        }
        ok(zkl_mutex_release(m), "release");
    }
    ok(zkl_mutex_create(other, pa, &mo), "create other");
    ok(zkl_mutex_acquire(mo, 5000), "other acquires");
    cr_assert_eq(zkl_mutex_acquire(m, 200), ZKL_ETIMEDOUT);
    ok(zkl_mutex_release(mo), "other releases");
    ok(zkl_rwlock_create(c, pb, &rw), "rwlock");
    ok(zkl_rwlock_read_acquire(rw, 5000), "read");
    ok(zkl_rwlock_read_release(rw), "read release");
    ok(zkl_rwlock_write_acquire(rw, 5000), "write");
    usleep(30 * 1000); /* a hold of 30 ms: in the bucket up to 50 ms, not below */
    ok(zkl_rwlock_write_release(rw), "write release");
    ok(zkl_semaphore_create(c, pc, 3, &s), "semaphore");
    ok(zkl_semaphore_acquire_many(s, 2, 5000, leases), "two leases");
    ok(zkl_lease_return(leases[0]), "return");
    ok(zkl_lease_return(leases[1]), "return");
    atomic_store(&async_done, 0);
    ok(zkl_mutex_create(c, pd, &ma), "async mutex");
    ok(zkl_mutex_acquire_async(ma, 5000, on_async, NULL, &op), "acquire_async");
    cr_assert(zkt_wait_for(async_over, NULL, 10000));
    ok(zkl_client_drain(c, 10000), "drain");

    text = metrics(c);
    check_form(text);
    check_strict(text);
    cr_assert(strstr(text, "le=\"1.0\"}") && strstr(text, "le=\"10.0\"}") &&
                  !strstr(text, "le=\"1\"}"),
              "bounds not canonical");
    cr_assert(strstr(text, "# UNIT zklock_hold_seconds seconds\n"));
    cr_assert_eq(sample(text, "zklock_local_handoffs_total", pb, "read"), -1,
                 "a read side, which never hands off, has a hand-off series");
    cr_assert_eq(sample(text, "zklock_local_handoffs_total", pb, "write"), 0);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pa, "mutex"), 4, "%s", text);
    cr_assert_eq(sample(text, "zklock_timeouts_total", pa, "mutex"), 1);
    cr_assert_eq(sample(text, "zklock_wait_seconds_count", pa, "mutex"), 4);
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", pa, "mutex"), 3);
    cr_assert_eq(sample(text, "zklock_holds_lost_total", pa, "mutex"), 0);
    cr_assert_eq(sample(text, "zklock_local_handoffs_total", pa, "mutex"), 0);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pb, "read"), 1);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pb, "write"), 1);
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", pb, "write"), 1);
    cr_assert_eq(bucket(text, "zklock_hold_seconds", pb, "write", "0.025"), 0, "%s", text);
    cr_assert_eq(bucket(text, "zklock_hold_seconds", pb, "write", "+Inf"), 1);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pc, "semaphore"), 2);
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", pc, "semaphore"), 2);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pd, "mutex"), 1);
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", pd, "mutex"), 1);
    /* a histogram: cumulative, its +Inf bucket its count */
    {
        char prefix[400];
        snprintf(prefix, sizeof prefix,
                 "zklock_wait_seconds_bucket{client=\"main\",path=\"%s\",side=\"mutex\"", pa);
        cr_assert(strstr(text, prefix), "no buckets for %s", pa);
        cr_assert(strstr(strstr(text, prefix), "le=\"+Inf\"} 4\n"), "the +Inf bucket is not 4");
    }
    /* the client: requests by kind add up to the stats' count */
    ok(zkl_client_stats_get(c, &stats), "stats");
    for (k = strstr(text, "\nzklock_requests_total{client=\"main\",kind="); k;
         k = strstr(k + 1, "\nzklock_requests_total{client=\"main\",kind="))
        kinds += strtoll(strstr(k, "} ") + 2, NULL, 10);
    cr_assert_eq((uint64_t)kinds, stats.requests, "requests by kind %lld, in all %llu", kinds,
                 (unsigned long long)stats.requests);
    cr_assert_gt(client_sample(text, "zklock_requests_total{client=\"main\",kind=\"create\"} "), 0);
    cr_assert_eq(client_sample(text, "zklock_sessions_total{client=\"main\"} "), 1);
    cr_assert_eq(client_sample(text, "zklock_sessions_lost_total{client=\"main\"} "), 0);
    free(text);

    /* a destroyed object's series stays, and a new object of its path counts on in it */
    ok(zkl_mutex_destroy(ma), "destroy");
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pd, "mutex"), 1);
    free(text);
    ok(zkl_mutex_create(c, pd, &ma), "the same path again");
    ok(zkl_mutex_acquire(ma, 5000), "acquire");
    ok(zkl_mutex_release(ma), "release");
    ok(zkl_mutex_destroy(ma), "destroy");
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pd, "mutex"), 2, "%s", text);
    free(text);

    /* a hold lost with its session: a loss, and a lost session, counted when
     * LOST is told (before the program releases), and once */
    text = metrics(c);
    holds_before = sample(text, "zklock_hold_seconds_count", pa, "mutex");
    free(text);
    lost_path = pa;
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    zkt_expire_seen(c);
    cr_assert(zkt_wait_for(lost_told, c, 10000), "the loss was not counted before the release");
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_lease_expiries_total", pa, "mutex"), 0);
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", pa, "mutex"), holds_before + 1,
                 "the lost hold's time ends at its loss");
    free(text);
    cr_assert_eq(zkl_mutex_release(m), ZKL_ELOST);
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_holds_lost_total", pa, "mutex"), 1, "counted once");
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", pa, "mutex"), holds_before + 1);
    cr_assert_eq(client_sample(text, "zklock_sessions_lost_total{client=\"main\"} "), 1);
    free(text);

    cr_assert_eq(zkl_client_metrics(NULL, (char[8]){0}, 8, NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_client_metrics(c, NULL, 8, NULL), ZKL_EINVAL);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(mo), "destroy");
    ok(zkl_rwlock_destroy(rw), "destroy");
    ok(zkl_semaphore_destroy(s), "destroy");
    ok(zkl_client_close(other), "close");
    ok(zkl_client_close(c), "close");
    free(base);
}

/* The client's hold-state reports, as the state callback sees them. */
static atomic_int lease_told;
static void note_state(zkl_client *c, zkl_conn_state st, void *ud)
{
    (void)c;
    (void)ud;
    if (st == ZKL_STATE_LEASE_EXPIRED)
        atomic_store(&lease_told, 1);
}

static int flag(void *p)
{
    return atomic_load((atomic_int *)p) != 0;
}

static _Atomic zkl_status async_st = ZKL_ETIMEDOUT;
static atomic_int async_got;
static void on_async_keep(zkl_op *op, zkl_status st, const char *msg, void *ud)
{
    (void)op;
    (void)msg;
    (void)ud;
    async_st = st;
    atomic_store(&async_got, 1);
}

/*
 * Every kind of hold whose lease runs out (the server stops hearing from
 * the client) is counted lost, with a lease expiry, and its hold time ends,
 * when LEASE_EXPIRED is told: before the program releases it, and only once.
 */
Test(metrics, holds_whose_lease_ran_out_are_counted_when_told, .timeout = 90)
{
    fp_proxy *fp = fp_start(zkt_servers());
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m, *ma;
    zkl_rwlock *rw;
    zkl_semaphore *s;
    zkl_lease *lease;
    zkl_op *op;
    char *base = zkt_path("lostmetrics"), p[4][256], *text;
    const char *side[4] = {"mutex", "read", "semaphore", "mutex"};
    int i, pass;
    cr_assert(fp, "fp_start");
    for (i = 0; i < 4; i++)
        snprintf(p[i], sizeof p[i], "%s/%d", base, i);
    zkl_client_options_init(&o);
    o.session_timeout_ms = 2000;
    o.on_state = note_state;
    ok(zkl_client_open(fp_connect_string(fp), &o, &c), "open through the proxy");
    ok(zkl_client_set_name(c, "main"), "name");
    ok(zkl_mutex_create(c, p[0], &m), "mutex");
    ok(zkl_rwlock_create(c, p[1], &rw), "rwlock");
    ok(zkl_semaphore_create(c, p[2], 2, &s), "semaphore");
    ok(zkl_mutex_create(c, p[3], &ma), "mutex for the async handle");
    ok(zkl_mutex_acquire(m, 5000), "mutex acquire");
    ok(zkl_rwlock_read_acquire(rw, 5000), "read acquire");
    ok(zkl_semaphore_acquire(s, 5000, &lease), "lease");
    ok(zkl_mutex_acquire_async(ma, 5000, on_async_keep, NULL, &op), "async acquire");
    cr_assert(zkt_wait_for(flag, &async_got, 10000));
    ok(async_st, "async acquire granted");

    fp_drop_requests(fp, true);
    cr_assert(zkt_wait_for(flag, &lease_told, 15000), "no LEASE_EXPIRED");
    for (pass = 0; pass < 2; pass++) { /* told, not released; then released */
        text = metrics(c);
        for (i = 0; i < 4; i++) {
            cr_assert_eq(sample(text, "zklock_holds_lost_total", p[i], side[i]), 1, "%s (%s), %s",
                         p[i], side[i], pass ? "after release" : "once told");
            cr_assert_eq(sample(text, "zklock_lease_expiries_total", p[i], side[i]), 1, "%s",
                         side[i]);
            cr_assert_eq(sample(text, "zklock_hold_seconds_count", p[i], side[i]), 1, "%s",
                         side[i]);
        }
        free(text);
        if (pass)
            break;
        cr_assert_eq(zkl_mutex_release(m), ZKL_ELOST);
        cr_assert_eq(zkl_rwlock_read_release(rw), ZKL_ELOST);
        cr_assert_eq(zkl_lease_return(lease), ZKL_ELOST);
        cr_assert_eq(zkl_op_release(op), ZKL_ELOST);
    }
    fp_drop_requests(fp, false);
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_mutex_destroy(ma), "destroy");
    ok(zkl_rwlock_destroy(rw), "destroy");
    ok(zkl_semaphore_destroy(s), "destroy");
    ok(zkl_client_close(c), "close");
    fp_stop(fp);
    free(base);
}

static char *process_metrics(void)
{
    size_t need = 0;
    cr_assert_eq(zkl_process_metrics((char[8]){0}, 8, &need), ZKL_ENOMEM);
    return read_text(NULL, &need);
}

/* How many lines of text start with prefix. */
static int lines_with(const char *text, const char *prefix)
{
    int n = 0;
    const char *at = text;
    while ((at = strstr(at, prefix)) != NULL) {
        if (at == text || at[-1] == '\n')
            n++;
        at++;
    }
    return n;
}

/*
 * One scrape for a process with several clients: every open client's
 * families in one text (each family's samples together), told apart by a
 * client label the program may set; series keyed by what the program
 * knows (path and side), so objects made per request add to one series,
 * and the series of gone objects are bounded.
 */
Test(metrics, one_text_for_a_process_of_several_clients, .timeout = 120)
{
    zkl_client *c[3] = {zkt_client(0), zkt_client(0), zkt_client(0)};
    char *path = zkt_path("process"), other[300], label[64], *text, longname[80];
    zkl_mutex *m;
    int i;
    ok(zkl_client_set_name(c[0], "orders"), "name");
    ok(zkl_client_set_name(c[1], "billing \"eu\""), "a name with a quote");
    for (i = 0; i < 3; i++) {
        ok(zkl_mutex_create(c[i], path, &m), "create");
        ok(zkl_mutex_acquire(m, 5000), "acquire");
        ok(zkl_mutex_release(m), "release");
        ok(zkl_mutex_destroy(m), "destroy");
    }
    for (i = 0; i < 50; i++) { /* an object per request, on one path */
        ok(zkl_mutex_create(c[0], path, &m), "create");
        ok(zkl_mutex_acquire(m, 5000), "acquire");
        ok(zkl_mutex_release(m), "release");
        ok(zkl_mutex_destroy(m), "destroy");
    }
    text = process_metrics();
    check_form(text);
    check_strict(text);
    who = "orders";
    cr_assert_eq(sample(text, "zklock_acquisitions_total", path, "mutex"), 51, "one series");
    who = "billing \\\"eu\\\"";
    cr_assert_eq(sample(text, "zklock_acquisitions_total", path, "mutex"), 1, "%s", text);
    who = label; /* the unnamed one: its number among the process's opens */
    cr_assert(strstr(text, "zklock_sessions_total{client=\""), "%s", text);
    for (i = 1; i < 100; i++) {
        snprintf(label, sizeof label, "%d", i);
        if (sample(text, "zklock_acquisitions_total", path, "mutex") == 1)
            break;
    }
    cr_assert_lt(i, 100, "no series of the unnamed client: %s", text);
    cr_assert_eq(lines_with(text, "zklock_sessions_total{"), 3);
    cr_assert_eq(lines_with(text, "# EOF"), 1);
    free(text);

    /* names: checked, and unique among the open clients */
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *bad[] = {"", "123", "tab\there", "über", longname, "orders"};
    for (i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++)
        cr_assert_eq(zkl_client_set_name(c[1], bad[i]), ZKL_EINVAL, "'%s' taken", bad[i]);
    cr_assert_eq(zkl_client_set_name(NULL, "x"), ZKL_EINVAL);
    cr_assert_eq(zkl_client_set_name(c[1], NULL), ZKL_EINVAL);
    cr_assert_eq(zkl_process_metrics(NULL, 8, NULL), ZKL_EINVAL);
    ok(zkl_client_set_name(c[0], "orders"), "its own name again");

    /* objects gone from many paths: their series are kept up to a bound */
    for (i = 0; i < 300; i++) {
        snprintf(other, sizeof other, "%s/p%d", path, i);
        ok(zkl_mutex_create(c[2], other, &m), "create");
        ok(zkl_mutex_destroy(m), "destroy");
    }
    text = process_metrics();
    snprintf(other, sizeof other, "zklock_acquisitions_total{client=\"%s\",", label);
    cr_assert_eq(lines_with(text, other), 256, "the kept series of gone objects");
    free(text);

    /* a closed client leaves the text */
    ok(zkl_client_close(c[1]), "close");
    text = process_metrics();
    cr_assert_eq(lines_with(text, "zklock_sessions_total{"), 2);
    cr_assert_eq(strstr(text, "billing"), NULL);
    free(text);
    ok(zkl_client_close(c[0]), "close");
    ok(zkl_client_close(c[2]), "close");
    free(path);
}

/*
 * Objects of one path on one client count into one series, but each keeps
 * its own holds' tallies: destroying one object drops only the tallies of
 * holds kept in it (a use after free, under ASan, when it dropped them all).
 */
Test(metrics, destroying_an_object_of_a_path_leaves_the_others_holds, .timeout = 60)
{
    zkl_client *c = zkt_client(0);
    char *path = zkt_path("sharedseries"), *text;
    zkl_mutex *m1, *m2;
    ok(zkl_client_set_name(c, "main"), "name");
    ok(zkl_mutex_create(c, path, &m1), "create");
    ok(zkl_mutex_acquire(m1, 5000), "acquire");
    ok(zkl_mutex_create(c, path, &m2), "a second object of the path");
    ok(zkl_mutex_destroy(m2), "destroyed while the first holds");
    lost_path = path;
    zkt_expire_seen(c);
    cr_assert(zkt_wait_for(lost_told, c, 10000), "the first object's loss was not counted");
    cr_assert_eq(zkl_mutex_release(m1), ZKL_ELOST);
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_holds_lost_total", path, "mutex"), 1);
    cr_assert_eq(sample(text, "zklock_hold_seconds_count", path, "mutex"), 1);
    free(text);
    ok(zkl_mutex_destroy(m1), "destroy");
    ok(zkl_client_close(c), "close");
    free(path);
}

/* The value of family name's sample of (who, path, side) as a double, -1 if none; event: its
 * event label (NULL: none). */
static double sample_f(const char *text, const char *name, const char *path, const char *side,
                       const char *event)
{
    char prefix[512];
    const char *at = text;
    if (event)
        snprintf(prefix, sizeof prefix, "%s{client=\"%s\",path=\"%s\",side=\"%s\",event=\"%s\"} ",
                 name, who, path, side, event);
    else
        snprintf(prefix, sizeof prefix, "%s{client=\"%s\",path=\"%s\",side=\"%s\"} ", name, who,
                 path, side);
    while ((at = strstr(at, prefix)) != NULL) {
        if (at == text || at[-1] == '\n')
            return strtod(at + strlen(prefix), NULL);
        at++;
    }
    return -1;
}

/* Latch l leads (zkt_wait_for). */
static int leads(void *l)
{
    return zkl_latch_is_leader(l);
}

/*
 * An election in figures (issue 40): terms begun and ended by how, time as
 * leader (the running term's too), the vacancy its next leader saw, and the
 * running term's token, per client, path and side ("latch" or "selector");
 * other sides have none of these families.
 */
Test(metrics, an_election_in_figures, .timeout = 90)
{
    zkl_client *c = zkt_client(0), *d = zkt_client(0);
    char *path = zkt_path("election"), *spath = zkt_path("selection"), *text;
    zkl_latch *la, *lb, *sel;
    zkl_mutex *m;
    int64_t token = 0, tb = 0;
    ok(zkl_client_set_name(c, "main"), "name");
    ok(zkl_client_set_name(d, "other"), "name");
    ok(zkl_latch_create(c, path, "a", &la), "latch a");
    ok(zkl_latch_create(d, path, "b", &lb), "latch b");
    ok(zkl_mutex_create(c, spath, &m), "a mutex beside");
    ok(zkl_selector_create(c, spath, "s", &sel), "selector");

    text = metrics(c); /* nothing led yet: the families, with zeros */
    check_strict(text);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", path, "latch", "GAINED"), 0);
    cr_assert_eq(sample_f(text, "zklock_leader", path, "latch", NULL), 0);
    cr_assert_eq(sample_f(text, "zklock_leader_token", path, "latch", NULL), 0);
    cr_assert(strstr(text, "# UNIT zklock_leader_seconds seconds\n"));
    free(text);

    ok(zkl_latch_start(la, NULL, NULL), "start a");
    ok(zkl_latch_await(la, 10000), "a leads");
    ok(zkl_latch_start(lb, NULL, NULL), "start b");
    ok(zkl_latch_token(la, &token), "token");
    usleep(200 * 1000);
    text = metrics(c);
    check_form(text);
    check_strict(text);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", path, "latch", "GAINED"), 1);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", path, "latch", "LEFT"), 0);
    cr_assert_eq(sample_f(text, "zklock_leader", path, "latch", NULL), 1);
    cr_assert_eq((int64_t)sample_f(text, "zklock_leader_token", path, "latch", NULL), token);
    cr_assert_geq(sample_f(text, "zklock_leader_seconds_total", path, "latch", NULL), 0.2,
                  "the running term counts to now:\n%s", text);
    cr_assert_eq(sample_f(text, "zklock_leader", spath, "mutex", NULL), -1, "a mutex's series");
    cr_assert_eq(sample_f(text, "zklock_leader", spath, "selector", NULL), 0);
    free(text);

    ok(zkl_latch_yield(la, 500), "a yields"); /* b leads; a back in line after 500 ms */
    cr_assert(zkt_wait_for(leads, lb, 10000), "b did not lead");
    ok(zkl_latch_token(lb, &tb), "b's token");
    text = metrics(c);
    double led = sample_f(text, "zklock_leader_seconds_total", path, "latch", NULL);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", path, "latch", "LEFT"), 1);
    cr_assert_eq(sample_f(text, "zklock_leader", path, "latch", NULL), 0);
    cr_assert_eq(sample_f(text, "zklock_leader_token", path, "latch", NULL), 0);
    cr_assert(led >= 0.2 && led < 30, "time as leader %f", led);
    free(text);
    usleep(100 * 1000);
    text = metrics(c); /* an ended term's time stands still */
    cr_assert_eq(sample_f(text, "zklock_leader_seconds_total", path, "latch", NULL), led);
    free(text);

    who = "other";
    text = metrics(d);
    check_strict(text);
    double vacant = sample_f(text, "zklock_leader_vacant_seconds_total", path, "latch", NULL);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", path, "latch", "GAINED"), 1);
    cr_assert_eq((int64_t)sample_f(text, "zklock_leader_token", path, "latch", NULL), tb);
    cr_assert(vacant > 0 && vacant < 5, "the vacancy b saw: %f s", vacant);
    free(text);
    who = "main";

    /* the selector's side counts as the latch's; a lost term is told apart */
    ok(zkl_latch_start(sel, NULL, NULL), "selector");
    ok(zkl_latch_await(sel, 10000), "selector leads");
    zkt_expire_seen(c); /* the selector's term is lost; a joins again, behind b */
    ok(zkl_latch_leave(lb, ZKL_LATCH_NOTIFY), "b leaves");
    cr_assert(zkt_wait_for(leads, la, 20000), "a did not lead again");
    cr_assert(zkt_wait_for(leads, sel, 20000), "the selector did not lead again");
    text = metrics(c);
    check_strict(text);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", spath, "selector", "GAINED"), 2);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", spath, "selector", "LOST"), 1,
                 "%s", text);
    cr_assert_eq(sample_f(text, "zklock_leader_transitions_total", path, "latch", "GAINED"), 2);
    free(text);
    ok(zkl_latch_destroy(la), "destroy");
    ok(zkl_latch_destroy(lb), "destroy");
    ok(zkl_latch_destroy(sel), "destroy");
    ok(zkl_mutex_destroy(m), "destroy");
    ok(zkl_client_close(c), "close");
    ok(zkl_client_close(d), "close");
    free(path);
    free(spath);
}
