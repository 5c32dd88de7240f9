/*
 * counter.c - the counter workload of the partition rounds (counter.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "counter.h"

/* The work between reading the counter and writing it back (ms): long
 * enough that a pause of the holder most often lands inside it. */
#define WORK_MS 40

/* The round's node names; entry: the holder's log entries (h-), else the waiter's (w-). */
static void names(const char *path, char *counter, char *incs, char *entry, size_t n)
{
    snprintf(counter, n, "%s-counter", path);
    snprintf(incs, n, "%s-incs", path);
    snprintf(entry, n, "%s-incs/h-", path);
}

/* A handle on connect, connected within 10 s, or NULL. */
static zhandle_t *raw_open(const char *connect, int session_ms)
{
    zhandle_t *zh = zookeeper_init(connect, NULL, session_ms, NULL, NULL, 0);
    int i;
    for (i = 0; zh && zoo_state(zh) != ZOO_CONNECTED_STATE && i < 1000; i++)
        sleep_ms(10);
    if (zh && zoo_state(zh) != ZOO_CONNECTED_STATE) {
        zookeeper_close(zh);
        zh = NULL;
    }
    return zh;
}

static int read_counter(zhandle_t *zh, const char *counter, long *value)
{
    char buf[32];
    int len = sizeof buf - 1, rc = zoo_get(zh, counter, 0, buf, &len, NULL);
    if (rc == ZOK) {
        buf[len > 0 ? len : 0] = '\0';
        *value = strtol(buf, NULL, 10);
    }
    return rc;
}

int pc_setup(zhandle_t *zh, const char *path)
{
    char counter[512], incs[512], entry[512], parent[512];
    char *slash;
    names(path, counter, incs, entry, sizeof counter);
    snprintf(parent, sizeof parent, "%s", path);
    if ((slash = strrchr(parent, '/')) && slash != parent) {
        *slash = '\0'; /* a container, as zklock makes a lock's parents */
        (void)zoo_create(zh, parent, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0);
    }
    if (zoo_create(zh, counter, "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) != ZOK ||
        zoo_create(zh, incs, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0) != ZOK)
        return -1;
    return 0;
}

/* The increment to value + 1, as zklock writes (the log entry, then the counter). */
static void writes_of(zkl_write w[2], const char *counter, const char *entry, char *data, size_t n,
                      long value)
{
    snprintf(data, n, "%ld", value + 1);
    memset(w, 0, 2 * sizeof *w);
    w[0].type = ZKL_WRITE_CREATE;
    w[0].path = entry;
    w[0].mode = ZKL_CREATE_PERSISTENT_SEQUENTIAL;
    w[1].type = ZKL_WRITE_SET;
    w[1].path = counter;
    w[1].data = data;
    w[1].len = (int)strlen(data);
    w[1].version = ZKL_ANY_VERSION;
}

/* The same as a plain multi on zh: its rc. */
static int naive_increment(zhandle_t *zh, const char *counter, const char *entry, long value)
{
    char data[32], made[600];
    zoo_op_t ops[2];
    zoo_op_result_t results[2];
    snprintf(data, sizeof data, "%ld", value + 1);
    zoo_create_op_init(&ops[0], entry, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, made,
                       sizeof made);
    zoo_set_op_init(&ops[1], counter, data, (int)strlen(data), -1, NULL);
    if (zoo_state(zh) ==
        ZOO_EXPIRED_SESSION_STATE) /* zoo_multi would crash (src/requests/call.h) */
        return ZINVALIDSTATE;
    return zoo_multi(zh, 2, ops, results);
}

void pc_holder_main(const char *connect, int session_ms, int lag_ms, const char *path, bool guard)
{
    char counter[512], incs[512], entry[512], data[32];
    zkl_client_options o;
    zkl_client *c;
    zkl_mutex *m;
    zhandle_t *zh;
    int64_t token = 0;
    int ok = 0, unknown = 0, refused = 0;
    names(path, counter, incs, entry, sizeof counter);
    zoo_set_debug_level((ZooLogLevel)0);
    zkl_client_options_init(&o);
    o.session_timeout_ms = session_ms;
    o.ensemble_lag_ms = lag_ms;
    if (zkl_client_open(connect, &o, &c) || zkl_mutex_create(c, path, &m) ||
        zkl_mutex_acquire(m, 20000) || zkl_mutex_fencing_token(m, &token) ||
        !(zh = raw_open(connect, session_ms))) {
        fprintf(stderr, "partition: counter holder: %s\n", zkl_errmsg());
        _exit(1);
    }
    printf("HELD %lld\n", (long long)token);
    fflush(stdout);
    while (zkl_mutex_is_held(m)) {
        long value;
        if (zoo_state(zh) == ZOO_EXPIRED_SESSION_STATE) { /* a new session, as Curator's */
            zookeeper_close(zh);
            if (!(zh = raw_open(connect, session_ms)))
                break;
        }
        if (read_counter(zh, counter, &value) != ZOK) {
            sleep_ms(10);
            continue;
        }
        sleep_ms(WORK_MS);
        if (guard) {
            zkl_write w[2];
            zkl_status st;
            writes_of(w, counter, entry, data, sizeof data, value);
            st = zkl_mutex_guarded_write(m, w, 2, NULL);
            if (st != ZKL_OK) /* (on the round's stderr) */
                fprintf(stderr, "partition: counter holder: %lld %s\n", (long long)wall_ms(),
                        zkl_errmsg());
            ok += st == ZKL_OK;
            unknown += st == ZKL_ECONNLOSS;
            refused += st != ZKL_OK && st != ZKL_ECONNLOSS;
        } else {
            int rc = naive_increment(zh, counter, entry, value), tries;
            /* retried as Curator's retry loop does: after a connection loss
             * on the same handle, after an expiry on a new session */
            for (tries = 0; tries < 5 && zh; tries++) {
                if (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE) {
                    zookeeper_close(zh);
                    zh = raw_open(connect, session_ms);
                } else if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) {
                    sleep_ms(200);
                } else {
                    break;
                }
                if (zh)
                    rc = naive_increment(zh, counter, entry, value);
            }
            if (!zh)
                break;
            ok += rc == ZOK;
            unknown += rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT;
            refused += rc != ZOK && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT;
        }
    }
    printf("COUNT %d %d %d\n", ok, unknown, refused);
    printf("STOP %lld\n", (long long)wall_ms());
    fflush(stdout);
    _exit(0);
}

int pc_increments(zkl_mutex *m, zhandle_t *zh, const char *path, int n)
{
    char counter[512], incs[512], entry[512], data[32];
    int i, ok = 0;
    names(path, counter, incs, entry, sizeof counter);
    entry[strlen(entry) - 2] = 'w';
    for (i = 0; i < n; i++) {
        zkl_write w[2];
        long value;
        if (read_counter(zh, counter, &value) != ZOK)
            continue;
        writes_of(w, counter, entry, data, sizeof data, value);
        ok += zkl_mutex_guarded_write(m, w, 2, NULL) == ZKL_OK;
    }
    return ok;
}

int pc_read(zhandle_t *zh, const char *path, pc_result *r)
{
    char counter[512], incs[512], entry[512];
    names(path, counter, incs, entry, sizeof counter);
    struct String_vector kids = {0, NULL};
    int i;
    if (read_counter(zh, counter, &r->counter) != ZOK ||
        zoo_get_children(zh, incs, 0, &kids) != ZOK)
        return -1;
    r->applied = kids.count;
    r->applied_holder = 0;
    for (i = 0; i < kids.count; i++)
        r->applied_holder += kids.data[i][0] == 'h';
    deallocate_String_vector(&kids);
    return 0;
}

void pc_cleanup(zhandle_t *zh, const char *path)
{
    char counter[512], incs[512], entry[512];
    struct String_vector kids = {0, NULL};
    int i;
    names(path, counter, incs, entry, sizeof counter);
    if (zoo_get_children(zh, incs, 0, &kids) == ZOK) {
        for (i = 0; i < kids.count; i++) {
            char full[700];
            snprintf(full, sizeof full, "%s/%s", incs, kids.data[i]);
            (void)zoo_delete(zh, full, -1);
        }
        deallocate_String_vector(&kids);
    }
    (void)zoo_delete(zh, incs, -1);
    (void)zoo_delete(zh, counter, -1);
}
