/*
 * chroot.c - the connect string's chroot made on first use, as Curator makes
 * its namespace node: a client on "host:port/app" whose /app does not exist
 * yet gets it (and any missing ancestors) as plain persistent nodes the
 * first time a lock needs it, through a short-lived handle without the
 * chroot. If that is refused, the error names the chroot, not the lock path
 * (issue 17).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

#include "services/chroot.h"
#include "base/log.h"
#include "base/status.h"
#include "base/util.h"

const char *zkl__chroot_of(const char *connect)
{
    const char *slash = strchr(connect, '/');
    return slash && slash[1] ? slash : NULL;
}

/* A handle on the servers of connect without its chroot, connected by deadline, or NULL. */
static zhandle_t *open_unrooted(zkl_client *c, const char *chroot, int64_t deadline)
{
    size_t n = (size_t)(chroot - c->connect);
    char *hosts = strndup(c->connect, n);
    zhandle_t *zh;
    if (!hosts)
        return NULL;
    zh = zookeeper_init2(hosts, NULL, c->opts.session_timeout_ms, NULL, NULL, 0,
                         zkl__zk_log_trampoline);
    free(hosts);
    if (!zh)
        return NULL;
    while (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        if (zkl__now_ms() >= deadline || zoo_state(zh) == ZOO_EXPIRED_SESSION_STATE ||
            zoo_state(zh) == ZOO_AUTH_FAILED_STATE) {
            zookeeper_close(zh);
            return NULL;
        }
        zkl__sleep_ms(5);
    }
    if (c->auth_digest && zoo_add_auth(zh, "digest", c->auth_digest, (int)strlen(c->auth_digest),
                                       NULL, NULL) != ZOK) {
        zookeeper_close(zh);
        return NULL;
    }
    return zh;
}

zkl_status zkl__chroot_make(zkl_client *c, int64_t deadline)
{
    const char *chroot = zkl__chroot_of(c->connect);
    const struct ACL_vector *acl = c->acl.count ? &c->acl : &ZOO_OPEN_ACL_UNSAFE;
    int64_t cap = zkl__now_ms() + c->opts.connect_timeout_ms;
    zhandle_t *zh;
    char *part;
    size_t i, len;
    int rc = ZOK;
    if (!chroot)
        return zkl__fail(ZKL_EZK, "no chroot to create");
    len = strlen(chroot);
    part = malloc(len + 1);
    if (!part)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    zh = open_unrooted(c, chroot, deadline < cap ? deadline : cap);
    if (!zh) {
        free(part);
        return zkl__fail(ZKL_ECONNECT,
                         "the chroot %s of the connect string does not exist, and no server "
                         "answered in time to create it",
                         chroot);
    }
    /* each ancestor, top down: "/a", "/a/b", ... */
    for (i = 1; i <= len && (rc == ZOK || rc == ZNODEEXISTS); i++) {
        if (i < len && chroot[i] != '/')
            continue;
        memcpy(part, chroot, i);
        part[i] = '\0';
        rc = zoo_create(zh, part, "", 0, acl, ZOO_PERSISTENT, NULL, 0);
        if (rc == ZOK)
            zkl__log(ZKL_LOG_INFO, "created %s (the connect string's chroot)", part);
    }
    zookeeper_close(zh);
    if (rc == ZOK || rc == ZNODEEXISTS) {
        free(part);
        return ZKL_OK;
    }
    {
        zkl_status st = zkl__fail(rc == ZNOAUTH ? ZKL_ENOAUTH : ZKL_EZK,
                                  "the chroot %s of the connect string does not exist, and "
                                  "creating %s failed: %s",
                                  chroot, part, zerror(rc));
        free(part);
        return st;
    }
}
