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
#include "zkt.h"

static void ok(zkl_status st, const char *what)
{
    cr_assert_eq(st, ZKL_OK, "%s: %s (%s)", what, zkl_strerror(st), zkl_errmsg());
}

static char *metrics(zkl_client *c)
{
    size_t need = 0;
    char small[16], *buf;
    cr_assert_eq(zkl_client_metrics(c, small, sizeof small, &need), ZKL_ENOMEM);
    cr_assert_gt(need, sizeof small);
    cr_assert(strstr(zkl_errmsg(), "bytes"), "%s", zkl_errmsg());
    buf = malloc(need + 1);
    ok(zkl_client_metrics(c, buf, need + 1, &need), "metrics");
    cr_assert_eq(strlen(buf), need);
    return buf;
}

/* The value of sample name{path=P,side=S,...}, -1 if there is none. */
static long long sample(const char *text, const char *name, const char *path, const char *side)
{
    char prefix[512];
    const char *at = text;
    snprintf(prefix, sizeof prefix, "%s{path=\"%s\",side=\"%s\",id=\"", name, path, side);
    while ((at = strstr(at, prefix)) != NULL) {
        if (at == text || at[-1] == '\n') {
            const char *v = strstr(at, "} ");
            return v ? strtoll(v + 2, NULL, 10) : -1;
        }
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
    snprintf(prefix, sizeof prefix, "%s_bucket{path=\"%s\",side=\"%s\",", name, path, side);
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
        snprintf(prefix, sizeof prefix, "zklock_wait_seconds_bucket{path=\"%s\",side=\"mutex\"",
                 pa);
        cr_assert(strstr(text, prefix), "no buckets for %s", pa);
        cr_assert(strstr(strstr(text, prefix), "le=\"+Inf\"} 4\n"), "the +Inf bucket is not 4");
    }
    /* the client: requests by kind add up to the stats' count */
    ok(zkl_client_stats_get(c, &stats), "stats");
    for (k = strstr(text, "\nzklock_requests_total{kind="); k;
         k = strstr(k + 1, "\nzklock_requests_total{kind="))
        kinds += strtoll(strstr(k, "} ") + 2, NULL, 10);
    cr_assert_eq((uint64_t)kinds, stats.requests, "requests by kind %lld, in all %llu", kinds,
                 (unsigned long long)stats.requests);
    cr_assert_gt(client_sample(text, "zklock_requests_total{kind=\"create\"} "), 0);
    cr_assert_eq(client_sample(text, "zklock_sessions_total "), 1);
    cr_assert_eq(client_sample(text, "zklock_sessions_lost_total "), 0);
    free(text);

    /* a destroyed object is gone from the text */
    ok(zkl_mutex_destroy(ma), "destroy");
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_acquisitions_total", pd, "mutex"), -1);
    free(text);

    /* a hold lost with its session: a loss, and a lost session */
    ok(zkl_mutex_acquire(m, 5000), "acquire");
    zkt_expire_seen(c);
    cr_assert_eq(zkl_mutex_release(m), ZKL_ELOST);
    text = metrics(c);
    cr_assert_eq(sample(text, "zklock_holds_lost_total", pa, "mutex"), 1);
    cr_assert_eq(sample(text, "zklock_lease_expiries_total", pa, "mutex"), 0);
    cr_assert_eq(client_sample(text, "zklock_sessions_lost_total "), 1);
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
