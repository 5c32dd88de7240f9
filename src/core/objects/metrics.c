/*
 * metrics.c - see metrics.h: the OpenMetrics text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <utlist.h>

#include "base/status.h"
#include "base/util.h"
#include "client/fork.h"
#include "core/objects/lockobj.h"
#include "core/objects/metrics.h"
#include "core/objects/series.h"
#include "core/objects/stats.h"
#include "services/cleanup.h"
#include "zklock/leader.h"

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
    // NOLINTBEGIN(clang-analyzer-valist.Uninitialized): as in zkl__fail (base/status.c)
    va_start(ap, fmt);
    n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    // NOLINTEND(clang-analyzer-valist.Uninitialized)
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

/* ---- the clients: one, or every open one (the registry's lock held) ---- */

typedef struct clients {
    zkl_client *one; /* NULL: every open client */
} clients;

static zkl_client *first(const clients *cl)
{
    return cl->one ? cl->one : zkl__registry_first();
}

static zkl_client *next(const clients *cl, const zkl_client *c)
{
    return cl->one ? NULL : c->reg.next;
}

#define EACH_CLIENT(cl, c) for (zkl_client *c = first(cl); c; c = next(cl, c))

/* The client label: its name, or its number among the process's opens. c->mu held. */
static void client_label(out *o, const zkl_client *c)
{
    put(o, "client=\"");
    if (c->tally.name)
        put_value(o, c->tally.name);
    else
        put(o, "%u", c->tally.number);
    put(o, "\"");
}

/* A series' labels: its client, its path and its side. */
static void labels(out *o, const zkl_client *c, const zkl__series *s)
{
    put(o, "{");
    client_label(o, c);
    put(o, ",path=\"");
    put_value(o, s->path);
    put(o, "\",side=\"%s\"", s->side);
}

/* One counter of every series; field: its offset in zkl__lockstats. */
static void lock_counter(out *o, const clients *cl, const char *name, const char *help,
                         size_t field, bool handoffs)
{
    const zkl__series *s;
    family(o, name, "counter", help);
    EACH_CLIENT(cl, c)
    {
        pthread_mutex_lock(&c->mu);
        DL_FOREACH(c->tally.series, s)
        {
            _Atomic uint64_t *v = (_Atomic uint64_t *)((char *)&s->stats + field);
            if (handoffs &&
                !(s->traits & ZKL__PART_HANDOFFS)) /* (a read side never passes one on) */
                continue;
            put(o, "%s_total", name);
            labels(o, c, s);
            put(o, "} %llu\n", (unsigned long long)GET(*v));
            put(o, "%s_created", name);
            labels(o, c, s);
            put(o, "} %.3f\n", s->created);
        }
        pthread_mutex_unlock(&c->mu);
    }
}

static void series_histogram(out *o, const zkl_client *c, const zkl__series *s, const char *name,
                             const zkl__hist *h)
{
    uint64_t cum = 0;
    int i;
    for (i = 0; i <= ZKL__BUCKETS; i++) {
        cum += GET(h->n[i]);
        put(o, "%s_bucket", name);
        labels(o, c, s);
        put(o, ",le=\"%s\"} %llu\n", i < ZKL__BUCKETS ? zkl__bucket_le[i] : "+Inf",
            (unsigned long long)cum);
    }
    put(o, "%s_count", name);
    labels(o, c, s);
    put(o, "} %llu\n", (unsigned long long)cum);
    put(o, "%s_sum", name);
    labels(o, c, s);
    put(o, "} %.6f\n", (double)GET(h->sum_us) / 1e6);
    put(o, "%s_created", name);
    labels(o, c, s);
    put(o, "} %.3f\n", s->created);
}

static void lock_histogram(out *o, const clients *cl, const char *name, const char *help, bool hold)
{
    const zkl__series *s;
    family(o, name, "histogram", help);
    EACH_CLIENT(cl, c)
    {
        pthread_mutex_lock(&c->mu);
        DL_FOREACH(c->tally.series, s)
        series_histogram(o, c, s, name, hold ? &s->stats.hold : &s->stats.wait);
        pthread_mutex_unlock(&c->mu);
    }
}

/* ---- elections: the series of latches and selectors (ZKL__PART_ELECTS) ---- */

typedef enum elect_family { TRANSITIONS, LEAD_TIME, VACANT_TIME, LEADING, TOKEN } elect_family;

/* Series s's samples of family f (a counter's with its _created). */
static void elect_samples(out *o, const zkl_client *c, const zkl__series *s, const char *name,
                          elect_family f)
{
    const zkl__electstats *e = &s->stats.elect;
    int64_t since = GET(e->since_us), token = GET(e->token);
    double lead_s = (double)GET(e->lead_us) / 1e6;
    int ev;
    switch (f) {
    case TRANSITIONS:
        for (ev = 1; ev <= ZKL__LEADER_EVENTS; ev++) {
            const char *evn = zkl_leader_event_name((zkl_leader_event)ev);
            put(o, "%s_total", name);
            labels(o, c, s);
            put(o, ",event=\"%s\"} %llu\n", evn, (unsigned long long)GET(e->events[ev - 1]));
            put(o, "%s_created", name);
            labels(o, c, s);
            put(o, ",event=\"%s\"} %.3f\n", evn, s->created);
        }
        return;
    case LEADING:
    case TOKEN:
        put(o, "%s", name);
        labels(o, c, s);
        put(o, "} %lld\n", (long long)(f == TOKEN ? token : since != 0));
        return;
    case LEAD_TIME: /* the running term to now */
        if (since)
            lead_s += (double)(zkl__now_us() - since) / 1e6;
        put(o, "%s_total", name);
        labels(o, c, s);
        put(o, "} %.6f\n", lead_s);
        break;
    default:
        put(o, "%s_total", name);
        labels(o, c, s);
        put(o, "} %.6f\n", (double)GET(e->vacant_us) / 1e6);
        break;
    }
    put(o, "%s_created", name);
    labels(o, c, s);
    put(o, "} %.3f\n", s->created);
}

static void elect_family_write(out *o, const clients *cl, const char *name, const char *type,
                               const char *help, elect_family f)
{
    const zkl__series *s;
    family(o, name, type, help);
    EACH_CLIENT(cl, c)
    {
        pthread_mutex_lock(&c->mu);
        DL_FOREACH(c->tally.series, s)
        if (s->traits & ZKL__PART_ELECTS)
            elect_samples(o, c, s, name, f);
        pthread_mutex_unlock(&c->mu);
    }
}

static void elections(out *o, const clients *cl)
{
    elect_family_write(o, cl, "zklock_leader_transitions", "counter",
                       "Leadership begun (GAINED) and ended, by how (LOST, LEASE_ENDED, LEFT), "
                       "counted as it happens.",
                       TRANSITIONS);
    elect_family_write(o, cl, "zklock_leader_seconds", "counter",
                       "Time as leader, the running term to now.", LEAD_TIME);
    elect_family_write(o, cl, "zklock_leader_vacant_seconds", "counter",
                       "Time with no leader as the next leaders saw it: per term, from the "
                       "notice that left its node first (or its first look) to its grant.",
                       VACANT_TIME);
    elect_family_write(o, cl, "zklock_leader", "gauge", "1 while a term runs here, else 0.",
                       LEADING);
    elect_family_write(
        o, cl, "zklock_leader_token", "gauge",
        "The running term's fencing token (its node's czxid), 0 when none runs here.", TOKEN);
}

/* The counters of the clients' own: which one (its arg), and its value. */
typedef enum client_count {
    WATCH_EVENTS,
    SESSIONS,
    SESSIONS_LOST,
    BACKGROUND_DELETES,
} client_count;

static uint64_t client_value(zkl_client *c, client_count which)
{
    switch (which) {
    case WATCH_EVENTS: return c->tally.watch_events;
    case SESSIONS: return c->tally.sessions;
    case SESSIONS_LOST: return GET(c->tally.sessions_lost);
    default: return zkl__cleanup_queued_locked(c);
    }
}

static void client_counter(out *o, const clients *cl, const char *name, const char *help,
                           client_count which)
{
    family(o, name, "counter", help);
    EACH_CLIENT(cl, c)
    {
        pthread_mutex_lock(&c->mu);
        put(o, "%s_total{", name);
        client_label(o, c);
        put(o, "} %llu\n%s_created{", (unsigned long long)client_value(c, which), name);
        client_label(o, c);
        put(o, "} %.3f\n", c->tally.created);
        pthread_mutex_unlock(&c->mu);
    }
}

static void client_requests(out *o, const clients *cl)
{
    static const char *const kinds[] = {
#define ZKL__REQ_KIND_STR(k, name) name,
        ZKL__REQ_KIND_NAMES(ZKL__REQ_KIND_STR)
#undef ZKL__REQ_KIND_STR
    };
    int k;
    family(o, "zklock_requests", "counter", "ZooKeeper requests sent, by kind.");
    EACH_CLIENT(cl, c)
    {
        pthread_mutex_lock(&c->mu);
        for (k = 0; k < ZKL__REQ_KINDS; k++) {
            put(o, "zklock_requests_total{");
            client_label(o, c);
            put(o, ",kind=\"%s\"} %llu\n", kinds[k], (unsigned long long)GET(c->tally.req_kind[k]));
            put(o, "zklock_requests_created{");
            client_label(o, c);
            put(o, ",kind=\"%s\"} %.3f\n", kinds[k], c->tally.created);
        }
        pthread_mutex_unlock(&c->mu);
    }
}

static void write_all(out *o, const clients *cl)
{
    client_requests(o, cl);
    client_counter(o, cl, "zklock_watch_events", "Watch notifications received.", WATCH_EVENTS);
    client_counter(o, cl, "zklock_sessions", "ZooKeeper sessions opened.", SESSIONS);
    client_counter(o, cl, "zklock_sessions_lost",
                   "Sessions lost (expired, ended, or ended after their lease ran out).",
                   SESSIONS_LOST);
    client_counter(o, cl, "zklock_background_deletes",
                   "Lock node deletes handed to the background (a foreground delete that "
                   "failed or could not be sent), counted as they are queued.",
                   BACKGROUND_DELETES);
    lock_counter(o, cl, "zklock_acquisitions", "Acquires granted (reentrant ones included).",
                 offsetof(zkl__lockstats, acquisitions), false);
    lock_counter(o, cl, "zklock_timeouts", "Acquires that timed out.",
                 offsetof(zkl__lockstats, timeouts), false);
    lock_counter(o, cl, "zklock_holds_lost",
                 "Holds lost with their session or lease, counted when the loss is told.",
                 offsetof(zkl__lockstats, lost), false);
    lock_counter(o, cl, "zklock_lease_expiries",
                 "Holds lost because their session's lease ran out.",
                 offsetof(zkl__lockstats, lease_expiries), false);
    lock_histogram(o, cl, "zklock_wait_seconds", "Time from an acquire's call to its grant.",
                   false);
    lock_histogram(o, cl, "zklock_hold_seconds",
                   "Time from a grant to its last release, or to the loss of the hold.", true);
    lock_counter(o, cl, "zklock_local_handoffs",
                 "Holds passed from one thread of this process to another (local hand-off).",
                 offsetof(zkl__lockstats, handoffs), true);
    elections(o, cl);
    put(o, "# EOF\n");
}

static zkl_status finish(const out *o, const char *fn, size_t len, size_t *needed)
{
    if (needed)
        *needed = o->at;
    if (o->at >= len)
        return zkl__fail(ZKL_ENOMEM, "%s: the text takes %zu bytes and a NUL; the buffer has %zu",
                         fn, o->at, len);
    return ZKL_OK;
}

zkl_status zkl__metrics_write(zkl_client *c, char *buf, size_t len, size_t *needed)
{
    out o = {buf, len, 0};
    clients cl = {c};
    write_all(&o, &cl);
    return finish(&o, "zkl_client_metrics", len, needed);
}

zkl_status zkl__metrics_write_process(char *buf, size_t len, size_t *needed)
{
    out o = {buf, len, 0};
    clients cl = {NULL};
    zkl__registry_lock();
    write_all(&o, &cl);
    zkl__registry_unlock();
    return finish(&o, "zkl_process_metrics", len, needed);
}
