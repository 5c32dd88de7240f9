/*
 * metrics.c - see metrics.h: the OpenMetrics text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <utlist.h>

#include "base/status.h"
#include "core/lockobj.h"
#include "core/metrics.h"
#include "core/stats.h"
#include "services/cleanup.h"

#define GET(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* ---- the text ---- */

/* Where the text goes: up to len bytes of buf; at counts all of it. */
typedef struct out {
    char *buf;
    size_t len, at;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(out *o, const char *fmt, ...)
{
    char *dst = o->at < o->len ? o->buf + o->at : NULL;
    size_t room = o->at < o->len ? o->len - o->at : 0;
    va_list ap;
    int n;
    va_start(ap, fmt);
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start is just above
    n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->at += (size_t)n;
}

/* A label value: \, " and newline escaped. */
static void put_value(out *o, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            put(o, "\\%c", *v);
        else if (*v == '\n')
            put(o, "\\n");
        else
            put(o, "%c", *v);
    }
}

static void family(out *o, const char *name, const char *type, const char *help)
{
    size_t n = strlen(name);
    put(o, "# TYPE %s %s\n", name, type);
    if (n > 8 && !strcmp(name + n - 8, "_seconds")) /* the unit its name ends in */
        put(o, "# UNIT %s seconds\n", name);
    put(o, "# HELP %s %s\n", name, help);
}

/* A lock object's labels: its path, its side, and its number on the client
 * (two objects may share a path, and a series must be unique). */
static void labels(out *o, const zkl__lockobj *obj, int part)
{
    put(o, "{path=\"");
    put_value(o, obj->path);
    put(o, "\",side=\"%s\",id=\"%llu\"", obj->part[part].side, (unsigned long long)obj->id);
}

/* One counter of every lock object's parts; field: its offset in zkl__lockstats. */
static void lock_counter(out *o, zkl_client *c, const char *name, const char *help, size_t field)
{
    const zkl__lockobj *obj;
    int p;
    family(o, name, "counter", help);
    DL_FOREACH(c->objs, obj)
    for (p = 0; p < obj->nparts; p++) {
        _Atomic uint64_t *v = (_Atomic uint64_t *)((char *)&obj->part[p].stats + field);
        put(o, "%s_total", name);
        labels(o, obj, p);
        put(o, "} %llu\n", (unsigned long long)GET(*v));
        put(o, "%s_created", name);
        labels(o, obj, p);
        put(o, "} %.3f\n", obj->created);
    }
}

static void lock_histogram(out *o, zkl_client *c, const char *name, const char *help, bool hold)
{
    const zkl__lockobj *obj;
    int p, i;
    family(o, name, "histogram", help);
    DL_FOREACH(c->objs, obj)
    for (p = 0; p < obj->nparts; p++) {
        const zkl__hist *h = hold ? &obj->part[p].stats.hold : &obj->part[p].stats.wait;
        uint64_t cum = 0;
        for (i = 0; i <= ZKL__BUCKETS; i++) {
            cum += GET(h->n[i]);
            put(o, "%s_bucket", name);
            labels(o, obj, p);
            put(o, ",le=\"%s\"} %llu\n", i < ZKL__BUCKETS ? zkl__bucket_le[i] : "+Inf",
                (unsigned long long)cum);
        }
        put(o, "%s_count", name);
        labels(o, obj, p);
        put(o, "} %llu\n", (unsigned long long)cum);
        put(o, "%s_sum", name);
        labels(o, obj, p);
        put(o, "} %.6f\n", (double)GET(h->sum_us) / 1e6);
        put(o, "%s_created", name);
        labels(o, obj, p);
        put(o, "} %.3f\n", obj->created);
    }
}

static void lock_handoffs(out *o, zkl_client *c)
{
    const zkl__lockobj *obj;
    int p;
    family(o, "zklock_local_handoffs", "counter",
           "Holds passed from one thread of this process to another (local hand-off).");
    DL_FOREACH(c->objs, obj)
    for (p = 0; p < obj->nparts; p++)
        if (obj->handoffs && obj->part[p].hands_off) { /* (a read side never does) */
            put(o, "zklock_local_handoffs_total");
            labels(o, obj, p);
            put(o, "} %llu\n", (unsigned long long)obj->handoffs(obj->self, p));
            put(o, "zklock_local_handoffs_created");
            labels(o, obj, p);
            put(o, "} %.3f\n", obj->created);
        }
}

/* A counter of the client's own, with its creation time. */
static void client_counter(out *o, const zkl_client *c, const char *name, const char *help,
                           uint64_t v)
{
    family(o, name, "counter", help);
    put(o, "%s_total %llu\n%s_created %.3f\n", name, (unsigned long long)v, name, c->created);
}

static void client_part(out *o, zkl_client *c)
{
    static const char *const kinds[] = {
#define ZKL__REQ_KIND_STR(k, name) name,
        ZKL__REQ_KIND_NAMES(ZKL__REQ_KIND_STR)
#undef ZKL__REQ_KIND_STR
    };
    int k;
    family(o, "zklock_requests", "counter", "ZooKeeper requests sent, by kind.");
    for (k = 0; k < ZKL__REQ_KINDS; k++) {
        put(o, "zklock_requests_total{kind=\"%s\"} %llu\n", kinds[k],
            (unsigned long long)GET(c->req_kind[k]));
        put(o, "zklock_requests_created{kind=\"%s\"} %.3f\n", kinds[k], c->created);
    }
    client_counter(o, c, "zklock_watch_events", "Watch notifications received.", c->watch_events);
    client_counter(o, c, "zklock_sessions", "ZooKeeper sessions opened.", c->sessions);
    client_counter(o, c, "zklock_sessions_lost",
                   "Sessions lost (expired, ended, or ended after their lease ran out).",
                   GET(c->sessions_lost));
    client_counter(o, c, "zklock_background_deletes",
                   "Lock node deletes handed to the background (a foreground delete that "
                   "failed or could not be sent), counted as they are queued.",
                   zkl__cleanup_queued_locked(c));
}

zkl_status zkl__metrics_write(zkl_client *c, char *buf, size_t len, size_t *needed)
{
    out o = {buf, len, 0};
    pthread_mutex_lock(&c->mu);
    client_part(&o, c);
    lock_counter(&o, c, "zklock_acquisitions", "Acquires granted (reentrant ones included).",
                 offsetof(zkl__lockstats, acquisitions));
    lock_counter(&o, c, "zklock_timeouts", "Acquires that timed out.",
                 offsetof(zkl__lockstats, timeouts));
    lock_counter(&o, c, "zklock_holds_lost",
                 "Holds found lost at their release (session or lease gone).",
                 offsetof(zkl__lockstats, lost));
    lock_counter(&o, c, "zklock_lease_expiries",
                 "Holds lost because their session's lease ran out.",
                 offsetof(zkl__lockstats, lease_expiries));
    lock_histogram(&o, c, "zklock_wait_seconds", "Time from an acquire's call to its grant.",
                   false);
    lock_histogram(&o, c, "zklock_hold_seconds", "Time from a grant to its last release.", true);
    lock_handoffs(&o, c);
    put(&o, "# EOF\n");
    pthread_mutex_unlock(&c->mu);
    if (needed)
        *needed = o.at;
    if (o.at >= len)
        return zkl__fail(ZKL_ENOMEM,
                         "zkl_client_metrics: the text takes %zu bytes and a NUL; "
                         "the buffer has %zu",
                         o.at, len);
    return ZKL_OK;
}
