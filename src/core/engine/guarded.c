/*
 * guarded.c - a guarded write of holds (guarded.h; zklock/guard.h says what
 * the caller sees): the writes checked, the holds' session found, the one
 * multi sent (requests/guarded.c), and its answer read as a status.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/guarded.h"
#include "base/path.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "requests/calls.h"
#include "requests/guarded.h"
#include "requests/rc.h"
#include "services/lease.h"

static const char *type_name(zkl_write_type t)
{
    switch (t) {
    case ZKL_WRITE_CREATE: return "create";
    case ZKL_WRITE_DELETE: return "delete";
    case ZKL_WRITE_SET: return "set";
    case ZKL_WRITE_CHECK: return "check";
    default: return "write";
    }
}

/* w's own check: ZKL_OK, or why not (the message names write i). */
static zkl_status check_write(const zkl_write *w, size_t i, const char *fn)
{
    zkl_status st;
    if (w->type < ZKL_WRITE_CREATE || w->type > ZKL_WRITE_CHECK)
        return zkl__fail(ZKL_EINVAL, "%s: write %zu: unknown type %d", fn, i, (int)w->type);
    if (!w->path)
        return zkl__fail(ZKL_EINVAL, "%s: write %zu: NULL path", fn, i);
    if (w->version < -1)
        return zkl__fail(ZKL_EINVAL, "%s: write %zu: version %d (-1 for any, or 0 and up)", fn, i,
                         w->version);
    if (w->type == ZKL_WRITE_CREATE &&
        (w->mode < ZKL_CREATE_PERSISTENT || w->mode > ZKL_CREATE_CONTAINER))
        return zkl__fail(ZKL_EINVAL, "%s: write %zu: unknown create mode %d", fn, i, w->mode);
    if ((w->type == ZKL_WRITE_CREATE || w->type == ZKL_WRITE_SET) &&
        (w->len < 0 || w->len > ZKL_NODE_DATA_MAX || (w->len > 0 && !w->data)))
        return zkl__fail(ZKL_EINVAL, "%s: write %zu: data length %d (0 to %d, with data)", fn, i,
                         w->len, ZKL_NODE_DATA_MAX);
    if ((w->type == ZKL_WRITE_CREATE) && w->created && w->created_len == 0)
        return zkl__fail(ZKL_EINVAL, "%s: write %zu: a created-path buffer of size 0", fn, i);
    /* a sequential create's path gets a number: ZooKeeper checks it so
     * (PathUtils.validatePath), and "/queue/" is a good one */
    if (w->type == ZKL_WRITE_CREATE && (w->mode & ZKL_CREATE_PERSISTENT_SEQUENTIAL)) {
        size_t len = strlen(w->path);
        char *p = malloc(len + 2);
        if (!p)
            return zkl__fail(ZKL_ENOMEM, "out of memory");
        memcpy(p, w->path, len);
        memcpy(p + len, "1", 2);
        st = zkl__path_validate(p);
        free(p);
    } else {
        st = zkl__path_validate(w->path);
    }
    if (st != ZKL_OK)
        return zkl__fail_prefix(st, "%s: write %zu (%s %s): ", fn, i, type_name(w->type), w->path);
    return ZKL_OK;
}

zkl_status zkl__guard_check_writes(const zkl_write *w, size_t n, size_t *failed, const char *fn)
{
    size_t i, unused;
    zkl_status st;
    if (!failed)
        failed = &unused;
    if (!w || n == 0)
        return zkl__fail(ZKL_EINVAL, "%s: no writes", fn);
    if (n > ZKL_GUARDED_MAX)
        return zkl__fail(ZKL_EINVAL, "%s: %zu writes (at most %d in one transaction)", fn, n,
                         ZKL_GUARDED_MAX);
    for (i = 0; i < n; i++)
        if ((st = check_write(&w[i], i, fn)) != ZKL_OK) {
            *failed = i;
            return st;
        }
    return ZKL_OK;
}

zkl_status zkl__guard_outcome(char *const *nodes, int nh, const zkl_write *w, int rc, int bad,
                              size_t *failed, const char *fn)
{
    if (rc == ZOK)
        return ZKL_OK;
    if (bad >= 0 && bad < nh)
        return zkl__fail(ZKL_ELOST,
                         "%s: the hold's node %s is gone (the lock was lost): nothing "
                         "was applied",
                         fn, nodes[bad]);
    if (bad >= nh) {
        *failed = (size_t)(bad - nh);
        return zkl__fail(w[*failed].rc == ZNOAUTH ? ZKL_ENOAUTH : ZKL_EZK,
                         "%s: write %zu (%s %s) was refused: %s; nothing was applied", fn, *failed,
                         type_name(w[*failed].type), w[*failed].path, zerror(w[*failed].rc));
    }
    switch (rc) {
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZAUTHFAILED:
        return zkl__fail(ZKL_ELOST, "%s: the hold's session is gone (%s): nothing was applied", fn,
                         zerror(rc));
    case ZSYSTEMERROR: return zkl__fail(ZKL_ENOMEM, "%s: out of memory: nothing was sent", fn);
    case ZBADARGUMENTS:
    case ZMARSHALLINGERROR:
        return zkl__fail(ZKL_EINVAL,
                         "%s: the transaction could not be sent (%s): nothing was "
                         "applied",
                         fn, zerror(rc));
    default:
        return zkl__fail(ZKL_ECONNLOSS,
                         "%s: %s with the transaction in flight: it may or may not have been "
                         "applied (read back one of its writes to tell)",
                         fn, rc == ZOPERATIONTIMEOUT ? "no reply in time" : zerror(rc));
    }
}

/* The session of holds' epoch, with a reference; ZKL_ELOST if it is not the current one. */
static zkl_status session_of(zkl_client *c, uint64_t epoch, zkl__session **s, const char *fn)
{
    zkl_status st = zkl__session_get(c, zkl__now_ms() + c->cfg.opts.connect_timeout_ms, s);
    if (st != ZKL_OK)
        return st;
    if ((*s)->epoch != epoch) {
        zkl__session_put(*s);
        *s = NULL;
        return zkl__fail(ZKL_ELOST, "%s: the hold's session is gone: nothing was sent", fn);
    }
    return ZKL_OK;
}

/* Bytes of an ACL vector as jute writes it: the count, then each entry's
 * perms and id (two strings, each a length and its bytes). */
static size_t acl_bytes(const struct ACL_vector *acl)
{
    size_t b = 4;
    for (int i = 0; i < acl->count; i++)
        b += 4 + 4 + strlen(acl->data[i].id.scheme) + 4 + strlen(acl->data[i].id.id);
    return b;
}

/*
 * The bytes of the multi as the server reads them (ZKL_SERVER_REQUEST_MAX):
 * the request header (xid, type), each part's header (type, done, err: 9)
 * and request, the closing header. Strings and buffers are a 4-byte length
 * and their bytes.
 */
static size_t request_bytes(const zkl__guard *g, const zkl_write *w, size_t n)
{
    const struct ACL_vector *acl = g->c->cfg.acl.count ? &g->c->cfg.acl : &ZOO_OPEN_ACL_UNSAFE;
    size_t b = 8 + 9;
    for (int k = 0; k < g->n; k++)
        b += 9 + 4 + strlen(g->nodes[k]) + 4; /* a check: path, version */
    for (size_t i = 0; i < n; i++) {
        size_t data = w[i].len > 0 ? (size_t)w[i].len : 0;
        b += 9 + 4 + strlen(w[i].path);
        switch (w[i].type) {
        case ZKL_WRITE_CREATE: b += 4 + data + acl_bytes(acl) + 4; break; /* data, acl, flags */
        case ZKL_WRITE_SET: b += 4 + data + 4; break;                     /* data, version */
        default: b += 4; break;                                           /* version */
        }
    }
    return b;
}

/*
 * A write that deletes, or sets the data of, a node the transaction checks
 * is refused before anything is sent: the check passes (the node is there
 * when the multi runs), the write then ends the hold, and the lock would be
 * granted to the next waiter while this holder still reads it as held
 * (issue 57, item 3). A check of the node, or a create under it, is fine.
 */
static zkl_status spares_the_holds(const zkl__guard *g, const zkl_write *w, size_t n,
                                   size_t *failed, const char *fn)
{
    for (size_t i = 0; i < n; i++) {
        if (w[i].type != ZKL_WRITE_DELETE && w[i].type != ZKL_WRITE_SET)
            continue;
        for (int k = 0; k < g->n; k++)
            if (strcmp(w[i].path, g->nodes[k]) == 0) {
                *failed = i;
                return zkl__fail(ZKL_EINVAL,
                                 "%s: write %zu (%s %s) would %s the hold's own lock node, "
                                 "which ends the hold while it reads as held: nothing was sent",
                                 fn, i, type_name(w[i].type), w[i].path,
                                 w[i].type == ZKL_WRITE_DELETE ? "delete" : "change");
            }
    }
    return ZKL_OK;
}

zkl_status zkl__guard_prepare(const zkl__hold *holds, int nh, const zkl_write *w, size_t n,
                              size_t *failed, const char *fn, zkl__guard *g)
{
    zkl_client *c;
    zkl_status st;
    int i;
    *failed = SIZE_MAX;
    memset(g, 0, sizeof *g);
    if ((st = zkl__guard_check_writes(w, n, failed, fn)) != ZKL_OK)
        return st;
    if (nh < 1 || nh > ZKL_GUARD_CHECKS_MAX)
        return zkl__fail(ZKL_EINVAL, "%s: %d lock nodes to check (1 to %d)", fn, nh,
                         ZKL_GUARD_CHECKS_MAX);
    c = g->c = holds[0].c;
    if (zkl__forked(c)) /* the parent's session: never this process's to write in */
        return zkl__fail(ZKL_ELOST,
                         "%s: the hold belongs to the parent of this fork()ed process: nothing "
                         "was sent",
                         fn);
    for (i = 0; i < nh; i++) {
        if (holds[i].c != c)
            return zkl__fail(ZKL_EINVAL,
                             "%s: the holds are on more than one client (one transaction runs "
                             "on one session)",
                             fn);
        if (holds[i].epoch != holds[0].epoch || !zkl__hold_alive(c, holds[i].epoch))
            return zkl__fail(
                ZKL_ELOST, "%s: the hold was lost with its session or lease: nothing was sent", fn);
        g->nodes[i] = holds[i].node;
    }
    g->n = nh;
    if ((st = spares_the_holds(g, w, n, failed, fn)) != ZKL_OK)
        return st;
    if (request_bytes(g, w, n) > ZKL_SERVER_REQUEST_MAX) /* (issue 57, item 2) */
        return zkl__fail(ZKL_EINVAL,
                         "%s: the transaction is %zu bytes, over the %d a ZooKeeper server "
                         "reads by default (its jute.maxbuffer): nothing was sent",
                         fn, request_bytes(g, w, n), ZKL_SERVER_REQUEST_MAX);
    return session_of(c, holds[0].epoch, &g->s, fn);
}

zkl_status zkl__guarded_write(const zkl__hold *holds, int nh, zkl_write *w, size_t n,
                              size_t *failed, const char *fn)
{
    zkl__guard g;
    size_t unused;
    zkl_status st;
    int64_t prev;
    int rc, bad;
    if (!failed)
        failed = &unused;
    if ((st = zkl__guard_prepare(holds, nh, w, n, failed, fn, &g)) != ZKL_OK)
        return st;
    prev = zkl__call_deadline(zkl__now_ms() + holds[0].c->cfg.opts.connect_timeout_ms);
    rc = zkl__zk_guarded(g.s, g.nodes, g.n, w, (int)n, &bad);
    zkl__call_deadline(prev);
    zkl__session_put(g.s);
    return zkl__guard_outcome(g.nodes, g.n, w, rc, bad, failed, fn);
}
