/*
 * guarded.c - the multi transaction of a guarded write (guarded.h): checks
 * of the guard nodes, then the caller's writes, sent on one session and
 * either waited for on the calling thread (blocking) or told to its
 * requester when answered (pending.h's way, for the async form).
 *
 * The ZooKeeper client writes a multi's results (the per-op codes, a set's
 * stat, a create's path) when the reply comes, which may be after the
 * caller gave up at its call deadline: those buffers live in one block
 * owned by the call (its results), and are copied out only once answered.
 */
#include <stdlib.h>
#include <string.h>

#include "requests/guarded.h"
#include "base/path.h"
#include "base/util.h"
#include "requests/call.h"
#include "session/transport.h"
#include "requests/calls.h"
#include "requests/pending.h"

/* A create's path buffer in the block: room for the path and a sequence suffix. */
#define CREATED_ROOM (ZKL_PATH_MAX + 16)

/* The block's parts, for nops ops of which n are the caller's writes. */
typedef struct layout {
    zoo_op_result_t *results; /* nops */
    struct Stat *stats;       /* n: the writes' (a set's) */
    char *paths;              /* n * CREATED_ROOM: the writes' (a create's) */
} layout;

static size_t block_size(int nops, int n)
{
    return sizeof(zoo_op_result_t) * (size_t)nops + sizeof(struct Stat) * (size_t)n +
           (size_t)CREATED_ROOM * (size_t)n;
}

static layout layout_of(void *block, int nops, int n)
{
    layout l;
    l.results = block;
    l.stats = (struct Stat *)(l.results + nops);
    l.paths = (char *)(l.stats + n);
    return l;
}

static void op_of(zoo_op_t *op, const zkl_write *w, const struct ACL_vector *acl, char *path,
                  struct Stat *stat)
{
    const char *data = w->data ? (const char *)w->data : NULL;
    int len = w->data ? w->len : -1;
    switch (w->type) {
    case ZKL_WRITE_CREATE:
        zoo_create_op_init(op, w->path, data, len, acl, w->mode, path, CREATED_ROOM);
        break;
    case ZKL_WRITE_DELETE: zoo_delete_op_init(op, w->path, w->version); break;
    case ZKL_WRITE_SET: zoo_set_op_init(op, w->path, data, len, w->version, stat); break;
    default: zoo_check_op_init(op, w->path, w->version); break;
    }
}

static void stat_copy(zkl_stat *to, const struct Stat *from)
{
    to->czxid = from->czxid;
    to->mzxid = from->mzxid;
    to->pzxid = from->pzxid;
    to->ctime = from->ctime;
    to->mtime = from->mtime;
    to->ephemeral_owner = from->ephemeralOwner;
    to->version = from->version;
    to->cversion = from->cversion;
    to->aversion = from->aversion;
    to->data_length = from->dataLength;
    to->num_children = from->numChildren;
}

/*
 * Whether the server processed the multi (its answer, or a refusal with a
 * result per op): a refused multi has at least two ops (a check and a
 * write), and its results differ (0 before the refused op, its error, then
 * ZRUNTIMEINCONSISTENCY). A failure the ZooKeeper client made up itself (a
 * connection loss, an expiry, closing: ZOOKEEPER-1636's cleanup) gives
 * every op the same rc as the multi.
 */
static bool processed(const zoo_op_result_t *results, int nops, int rc)
{
    int i;
    if (rc == ZOK)
        return true;
    for (i = 0; i < nops; i++)
        if (results[i].err != rc)
            return true;
    return false;
}

/*
 * The answered call's results (its rc) into w, and *bad: the op the server
 * refused, -1: none. Ops' results the client made up must not read as a
 * refused check: that would say "nothing applied" of a transaction that
 * may have applied before its reply was lost.
 */
static void results_out(const call *k, int rc, int ng, zkl_write *w, int n, int *bad)
{
    int nops = ng + n, i;
    layout l = layout_of(k->results, nops, n);
    bool server = processed(l.results, nops, rc);
    *bad = -1;
    for (i = 0; server && i < nops; i++)
        if (l.results[i].err != ZOK && *bad < 0)
            *bad = i;
    for (i = 0; i < n; i++) {
        w[i].rc = !server || (rc != ZOK && *bad < 0) ? rc : l.results[ng + i].err;
        memset(&w[i].stat, 0, sizeof w[i].stat);
        if (w[i].rc != ZOK)
            continue;
        if (w[i].type == ZKL_WRITE_SET)
            stat_copy(&w[i].stat, &l.stats[i]);
        if (w[i].type == ZKL_WRITE_CREATE && w[i].created && w[i].created_len > 0) {
            const char *made = l.paths + (size_t)i * CREATED_ROOM;
            size_t m = strnlen(made, CREATED_ROOM - 1);
            if (m >= w[i].created_len)
                m = w[i].created_len - 1;
            memcpy(w[i].created, made, m);
            w[i].created[m] = '\0';
        }
    }
}

zkl__req *zkl__req_guarded(zkl__session *s, char *const *guard, int ng, zkl_write *w, int n,
                           zkl__req_fn fn, void *arg, int *rc)
{
    const struct ACL_vector *acl = s->c->cfg.acl.count ? &s->c->cfg.acl : &ZOO_OPEN_ACL_UNSAFE;
    int nops = ng + n, i;
    zoo_op_t *ops;
    call *k;
    layout l;
    ops = calloc((size_t)nops, sizeof *ops);
    k = ops ? zkl__call_new(s) : NULL;
    if (k && !(k->results = calloc(1, block_size(nops, n)))) {
        zkl__call_free(k);
        k = NULL;
    }
    if (!k) {
        free(ops);
        *rc = ZSYSTEMERROR;
        return NULL;
    }
    pthread_mutex_lock(&k->mu);
    k->notify = fn;
    k->arg = arg;
    pthread_mutex_unlock(&k->mu);
    l = layout_of(k->results, nops, n);
    for (i = 0; i < ng; i++)
        zoo_check_op_init(&ops[i], guard[i], -1);
    for (i = 0; i < n; i++)
        op_of(&ops[ng + i], &w[i], acl, l.paths + (size_t)i * CREATED_ROOM, &l.stats[i]);
    zkl__call_proves(k);
    zkl__count_request(s->c, ZKL__REQ_MULTI);
    *rc = ZKL_ZK(s, zkl__zk_amulti(s->zh, nops, ops, k->results, zkl__on_void, k));
    free(ops); /* the client serialised them */
    if (*rc != ZOK) {
        zkl__call_free(k);
        return NULL;
    }
    return k;
}

void zkl__req_guarded_results(const zkl__req *k, int rc, int ng, zkl_write *w, int n, int *bad)
{
    results_out(k, rc, ng, w, n, bad);
}

/* Every write's rc is rc: the multi was not sent, or not answered. */
static void all_rc(zkl_write *w, int n, int rc)
{
    int i;
    for (i = 0; i < n; i++)
        w[i].rc = rc;
}

int zkl__zk_guarded(zkl__session *s, char *const *guard, int ng, zkl_write *w, int n, int *bad)
{
    bool answered;
    int rc;
    call *k = zkl__req_guarded(s, guard, ng, w, n, NULL, NULL, &rc);
    *bad = -1;
    if (!k) {
        all_rc(w, n, rc);
        return rc;
    }
    rc = zkl__call_wait(k, &answered);
    if (answered)
        results_out(k, rc, ng, w, n, bad);
    else
        all_rc(w, n, rc);
    zkl__call_put(k);
    return rc;
}
