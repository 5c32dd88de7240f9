/*
 * client.c - zkl_client's public face: the constructor that builds a client
 * and wires its services to the lower layers' hooks, the destructor (which
 * tolerates a half-built client), and the state queries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/connstr.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/path.h"
#include "base/status.h"
#include "base/tuning.h"
#include "base/util.h"
#include "base/wakefd.h"
#include "client/acl.h"
#include "client/fork.h"
#include "client/worker.h"
#include "requests/pending.h"
#include "services/cleanup.h"
#include "services/lease.h"
#include "services/revoke.h"
#include "services/serverconf.h"
#include "session/transport.h"

const char *zkl_conn_state_name(zkl_conn_state st)
{
    switch (st) {
    case ZKL_STATE_CONNECTED: return "CONNECTED";
    case ZKL_STATE_SUSPENDED: return "SUSPENDED";
    case ZKL_STATE_RECONNECTED: return "RECONNECTED";
    case ZKL_STATE_LOST: return "LOST";
    case ZKL_STATE_LEASE_EXPIRED: return "LEASE_EXPIRED";
    }
    return "UNKNOWN";
}

void zkl_client_options_init(zkl_client_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->session_timeout_ms = 10000;
    o->connect_timeout_ms = 15000;
    o->retry_base_ms = 50;
    o->retry_max_ms = 1000;
    o->retry_max = 10;
    o->ensemble_lag_ms = ZKL_ENSEMBLE_LAG_FIND;
}

/* Margin and lag (given or found) in a quarter of the session timeout: the lease's room. */
static zkl_status lag_check(const zkl_client_options *opts, int lag_ms, const char *found)
{
    if ((long)opts->lease_margin_ms + lag_ms > opts->session_timeout_ms / 4)
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_open: lease_margin_ms %d and %sensemble_lag_ms %d do not fit "
                         "a session timeout of %d ms (together at most a quarter of it, so that a "
                         "renewal every third of it keeps the lease)",
                         opts->lease_margin_ms, found, lag_ms, opts->session_timeout_ms);
    return ZKL_OK;
}

static zkl_status check_options(const zkl_client_options *opts)
{
    if (opts->session_timeout_ms > 0 && (opts->session_timeout_ms < ZKL_SESSION_TIMEOUT_MIN_MS ||
                                         opts->session_timeout_ms > ZKL_SESSION_TIMEOUT_MAX_MS))
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_open: session_timeout_ms %d is out of range (%d to %d ms; "
                         "the server grants a value within its own bounds)",
                         opts->session_timeout_ms, ZKL_SESSION_TIMEOUT_MIN_MS,
                         ZKL_SESSION_TIMEOUT_MAX_MS);
    if (opts->session_timeout_ms <= 0 || opts->connect_timeout_ms < 0 || opts->retry_base_ms <= 0 ||
        opts->retry_max_ms < opts->retry_base_ms || opts->retry_max < 0)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: option out of range (timeouts and retry "
                                     "settings must be positive; use zkl_client_options_init)");
    if (opts->lease_margin_ms < 0 || opts->ensemble_lag_ms < ZKL_ENSEMBLE_LAG_FIND)
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_open: lease_margin_ms %d or ensemble_lag_ms %d is "
                         "negative (ZKL_ENSEMBLE_LAG_FIND, -1, asks the server)",
                         opts->lease_margin_ms, opts->ensemble_lag_ms);
    if (lag_check(opts, opts->ensemble_lag_ms > 0 ? opts->ensemble_lag_ms : 0, "") != ZKL_OK)
        return ZKL_EINVAL;
    if (opts->node_data_len > 0 && !opts->node_data)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: node_data_len without node_data");
    /* A bigger create packet than the server takes (jute.maxbuffer) is not
     * refused but drops the connection: every acquire would only retry. */
    if (opts->node_data_len > ZKL_NODE_DATA_MAX)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: node_data_len %zu is above %d bytes",
                         opts->node_data_len, ZKL_NODE_DATA_MAX);
    if (opts->auth_digest && !strchr(opts->auth_digest, ':'))
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: auth_digest must be \"user:password\"");
    return ZKL_OK;
}

/* The one destructor: frees whatever of c was built. */
static void client_free(zkl_client *c)
{
    if (!c)
        return;
    zkl__poller_stop(c); /* (after its last session: finish_close, finish_open_failed) */
    (void)ZKL_FAULT(c, FREED, NULL);
    zkl__acl_free(&c->cfg.acl);
    if (c->hooks.engine_free)
        c->hooks.engine_free(c);
    if (c->hooks.series_free)
        c->hooks.series_free(c);
    free(c->tally.name);
    zkl__cleanup_free(c);
    zkl__revs_free(c);
    zkl__lease_free(c);
    if (c->locks_ready) {
        pthread_mutex_destroy(&c->mu);
        pthread_mutex_destroy(&c->pl.round_mu);
        pthread_cond_destroy(&c->cv);
        pthread_cond_destroy(&c->wk.cv);
        pthread_mutex_destroy(&c->lsn.mu);
    }
    free(c->lsn.v);
    free(c->cfg.connect);
    free(c->cfg.auth_digest);
    free(c->cfg.node_data);
    free(c);
}

/* The caller's strings, copied: connect, digest, node data (default: our address). */
static zkl_status copy_strings(zkl_client *c, const char *connect, const zkl_client_options *o)
{
    c->cfg.connect = strdup(connect);
    c->cfg.auth_digest = o->auth_digest ? strdup(o->auth_digest) : NULL;
    if (o->node_data) {
        c->cfg.node_data = malloc(o->node_data_len ? o->node_data_len : 1);
        if (c->cfg.node_data)
            memcpy(c->cfg.node_data, o->node_data, o->node_data_len);
        c->cfg.node_data_len = (int)o->node_data_len;
    } else {
        char ip[64];
        zkl__local_address(ip, sizeof ip);
        c->cfg.node_data = strdup(ip);
        c->cfg.node_data_len = (int)strlen(ip);
    }
    if (!c->cfg.connect || (o->auth_digest && !c->cfg.auth_digest) || !c->cfg.node_data)
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    return ZKL_OK;
}

static void init_locks(zkl_client *c)
{
    pthread_mutexattr_t ma;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->pl.round_mu, NULL);
    zkl__cond_init(&c->cv);
    zkl__cond_init(&c->wk.cv);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&c->lsn.mu, &ma);
    pthread_mutexattr_destroy(&ma);
    c->locks_ready = true;
}

/* The lower layers' calls outward, to the services (session/client.h). */
static void closed_locked(zkl_client *c, zkl__session *s)
{
    zkl__cleanup_closed_locked(c, s);
    zkl__revs_closed_locked(c, s);
}

static const zkl__hooks hooks = {
    .before_send = zkl__cleanup_before_send,
    .answered = zkl__lease_answered,
    .installed_locked = zkl__lease_installed_locked,
    .closed_locked = closed_locked,
    .lists_closing = zkl__lists_closing,
    .lists_free = zkl__lists_free,
};

/* ZKL_PROCESS_HINTS in the environment: on (the default, also "1") or off ("0"). */
static zkl_status hints_from_env(zkl_client *c)
{
    const char *v = getenv("ZKL_PROCESS_HINTS");
    bool on = !v || strcmp(v, "on") == 0 || strcmp(v, "1") == 0;
    if (!on && strcmp(v, "off") != 0 && strcmp(v, "0") != 0)
        return zkl__fail(
            ZKL_EINVAL,
            "zkl_client_open: ZKL_PROCESS_HINTS is \"%s\" in the environment: on or off", v);
    atomic_store(&c->cfg.process_hints, on);
    return ZKL_OK;
}

/* Everything but the session and the worker; NULL with *st set on failure. */
static zkl_client *client_new(const char *connect, const zkl_client_options *opts, zkl_status *st)
{
    zkl_client *c = calloc(1, sizeof *c);
    if (!c) {
        *st = zkl__fail(ZKL_ENOMEM, "out of memory");
        return NULL;
    }
    c->cfg.opts = *opts;
    c->cfg.opts.auth_digest = NULL;
    c->cfg.opts.node_data = NULL;
    c->cfg.opts.acl = NULL;
    if (opts->ensemble_lag_ms ==
        ZKL_ENSEMBLE_LAG_FIND) { /* none until the server says (find_lag) */
        c->cfg.opts.ensemble_lag_ms = 0;
        c->cfg.lag_source = ZKL_LAG_UNKNOWN;
    }
    c->hooks = hooks;
    if ((*st = hints_from_env(c)) != ZKL_OK) {
        free(c);
        return NULL;
    }
    c->conn.next_epoch = 1;
    c->tally.created = zkl__unix_s();
    c->wk.wfd = c->wk.afd = -1; /* the worker's, made when it starts */
    init_locks(c);
    *st = copy_strings(c, connect, opts);
    if (*st == ZKL_OK)
        *st = zkl__acl_copy(&c->cfg.acl, opts->acl, opts->acl_len);
    if (*st == ZKL_OK)
        *st = zkl__cleanup_init(c);
    if (*st == ZKL_OK)
        *st = zkl__revs_init(c);
    if (*st == ZKL_OK)
        *st = zkl__lease_init(c);
    if (*st != ZKL_OK) {
        client_free(c);
        return NULL;
    }
    return c;
}

/* Wait for the first session to connect; its handle is closed if it does not. */
static zkl_status await_connected(zkl_client *c, zkl__session *s, const char *connect)
{
    int64_t deadline = zkl__now_ms() + c->cfg.opts.connect_timeout_ms;
    bool connected, refused;
    pthread_mutex_lock(&c->mu);
    while (!c->conn.connected && !s->expired) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, deadline) == ETIMEDOUT)
            break;
    }
    connected = c->conn.connected;
    refused = s->expired;
    zkl__events_clear_locked(c); /* CONNECTED is the caller's to see through the return value */
    pthread_mutex_unlock(&c->mu);
    if (connected)
        return ZKL_OK;
    if (refused)
        return zkl__fail(ZKL_EAUTH, "server refused the session on '%.200s'", connect);
    return zkl__fail(ZKL_ECONNECT, "no ZooKeeper server at '%.200s' answered within %d ms", connect,
                     c->cfg.opts.connect_timeout_ms);
}

/* "host:port" of addr, for a message. */
static void addr_text(const struct sockaddr_storage *ss, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        port = ntohs(in->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, len, "%s:%d", ip, port);
}

/*
 * The lease's ensemble lag: as given, or asked of the server the session is
 * on (ZKL_ENSEMBLE_LAG_FIND): `conf` gives it; else `srvr`'s mode proves a
 * standalone server (0). A member of an ensemble that will not tell its
 * settings, or a server that answers neither, leaves it unknown: the client
 * opens, and every acquire refuses (zkl__lag_unknown), since no lease can be
 * bounded. That is said once per process, as it happens.
 */
static zkl_status find_lag(zkl_client *c, zkl__session *s)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    zkl__conf_answer a = ZKL__CONF_NO_ANSWER;
    zkl__srvr_mode mode = ZKL__MODE_UNKNOWN;
    char where[INET6_ADDRSTRLEN + 8] = "?";
    int lag = 0;
    if (c->cfg.lag_source == ZKL_LAG_GIVEN)
        return ZKL_OK;
    memset(&ss, 0, sizeof ss);
    if (ZKL_ZK(s, zookeeper_get_connected_host(s->zh, (struct sockaddr *)&ss, &len) != NULL)) {
        addr_text(&ss, where, sizeof where);
        a = zkl__conf_lag((struct sockaddr *)&ss, len, ZKL_CONF_WAIT_MS, &lag);
        if (a != ZKL__CONF_ENSEMBLE && a != ZKL__CONF_STANDALONE)
            mode = zkl__srvr_mode_of((struct sockaddr *)&ss, len, ZKL_CONF_WAIT_MS);
    }
    pthread_mutex_lock(&c->mu);
    c->cfg.opts.ensemble_lag_ms = lag;
    c->cfg.lag_source =
        a == ZKL__CONF_ENSEMBLE || a == ZKL__CONF_STANDALONE || mode == ZKL__MODE_STANDALONE
            ? ZKL_LAG_FOUND
            : ZKL_LAG_UNKNOWN;
    if (c->cfg.lag_source == ZKL_LAG_UNKNOWN)
        snprintf(c->cfg.lag_note, sizeof c->cfg.lag_note, "the server at %s %s and %s", where,
                 mode == ZKL__MODE_ENSEMBLE ? "is one of an ensemble (srvr)"
                                            : "did not say what it is (srvr)",
                 a == ZKL__CONF_REFUSED ? "does not allow the conf four-letter word"
                                        : "did not answer the conf four-letter word in time");
    pthread_mutex_unlock(&c->mu);
    if (a == ZKL__CONF_ENSEMBLE)
        return lag_check(&c->cfg.opts, lag, "the ensemble's ");
    if (c->cfg.lag_source == ZKL_LAG_UNKNOWN && !atomic_flag_test_and_set(&warned))
        zkl__log(ZKL_LOG_WARN,
                 "no lease can be bounded, so acquires will refuse: %s. Set ensemble_lag_ms "
                 "(the command's --ensemble-lag) to its syncLimit x tickTime + tickTime/2 in ms "
                 "(0 for a standalone server), or add conf to its 4lw.commands.whitelist",
                 c->cfg.lag_note);
    return ZKL_OK;
}

/* The end of an open that failed, or of a close: the handle, then the
 * client. On a thread of its own (zkl__run_bounded): it may take long. */
static void finish_open_failed(void *arg)
{
    zkl__session *s = arg;
    zkl_client *c = s->c;
    pthread_mutex_lock(&c->mu);
    zkl__poller_remove_locked(c, s);
    pthread_mutex_unlock(&c->mu);
    zkl__poller_stop(c); /* nothing polls the handle while it closes */
    zkl__zk_close(s);
    free(s);
    client_free(c);
}

static void finish_close(void *arg)
{
    zkl__session *s = arg;
    zkl_client *c = s->c;
    s->retired = true;
    zkl__session_put(s); /* the last reference: closes the handle, ephemerals go */
    client_free(c);
}

zkl_status zkl_client_open(const char *connect, const zkl_client_options *opts, zkl_client **out)
{
    ZKL__REFUSE_IN_LOG();
    zkl_client *c;
    zkl_client_options defaults;
    zkl__session *s;
    zkl_status st;

    zkl__clear_err();
    if (!out)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: out is NULL");
    *out = NULL;
    if (!connect || !*connect)
        return zkl__fail(ZKL_EINVAL, "zkl_client_open: empty connect string");
    if ((st = zkl__connect_check(connect)) != ZKL_OK)
        return st;
    if (!opts) {
        zkl_client_options_init(&defaults);
        opts = &defaults;
    }
    if ((st = check_options(opts)) != ZKL_OK || !(c = client_new(connect, opts, &st)))
        return st;
    if (zkl__poller_start(c, zkl__session_put) != 0) {
        client_free(c);
        return zkl__fail(ZKL_ESYS, "could not start the client's I/O thread");
    }
    s = zkl__session_open(c, 1); /* installs itself as c->conn.sess */
    if (!s) {
        /* Past running out of memory, zookeeper_init's errno says little
         * ("Success" for ","): the string is what it could not take. */
        bool nomem = errno == ENOMEM;
        client_free(c);
        if (nomem)
            return zkl__fail(ZKL_ENOMEM, "out of memory opening a session");
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_open: bad connect string '%.200s' (want "
                         "host:port[,host:port...][/chroot])",
                         connect);
    }
    st = await_connected(c, s, connect);
    if (st == ZKL_OK)
        st = find_lag(c, s);
    if (st == ZKL_OK)
        st = zkl__worker_start(c);
    if (st != ZKL_OK) {
        /* not waited for: the open's bound is connect_timeout_ms */
        (void)zkl__run_bounded(finish_open_failed, s, 0);
        return st;
    }
    zkl__fork_register(c);
    *out = c;
    return ZKL_OK;
}

/*
 * Close in a fork()ed child (client/fork.c): zklock's own memory is freed;
 * no thread is joined (the worker and the ZooKeeper client's run in the
 * parent only), nothing is sent, and the session's handle is kept, as the
 * parent's session is the parent's.
 */
static zkl_status close_forked(zkl_client *c)
{
    zkl__session *s[2];
    int i;
    zkl__fork_unregister(c);
    pthread_mutex_lock(&c->mu);
    s[0] = c->conn.sess;
    s[1] = c->conn.pending != c->conn.sess ? c->conn.pending : NULL;
    for (i = 0; i < 2; i++) {
        if (!s[i])
            continue;
        zkl__fork_keep(s[i]->zh);
        if (c->hooks.closed_locked)
            c->hooks.closed_locked(c, s[i]);
        zkl__watches_free_locked(s[i]);
    }
    pthread_mutex_unlock(&c->mu);
    for (i = 0; i < 2; i++) {
        if (s[i] && c->hooks.lists_free) /* its table of shared listings (requests/pending.c) */
            c->hooks.lists_free(s[i]);
        free(s[i]);
    }
    zkl__wakefd_close(c->wk.wfd); /* this process's copies; the parent's stay open */
    zkl__wakefd_close(c->wk.afd);
    client_free(c);
    return ZKL_OK;
}

zkl_status zkl_client_close(zkl_client *c)
{
    ZKL__REFUSE_IN_LOG();
    zkl__session *s;
    int handles, writes;
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_close: client is NULL");
    /* libuv's rule (uv_loop_close): refuse, never free what the caller runs on */
    if (zkl__on_worker(c) || zkl__in_callback(c))
        return zkl__fail(ZKL_EBUSY,
                         "zkl_client_close: called from inside a callback of this client (its "
                         "worker thread, or zkl_client_dispatch): close it from another thread "
                         "once the callback has returned");
    pthread_mutex_lock(&c->mu);
    handles = c->handles;
    writes = c->writes_out;
    pthread_mutex_unlock(&c->mu);
    if (handles > 0) /* (issue 57, item 7: a destroyed one may wait for a dispatch) */
        return zkl__fail(ZKL_EBUSY,
                         "zkl_client_close: %d lock object(s) still exist: destroy each first; "
                         "a destroyed one is freed once its last callback is delivered (with "
                         "zkl_client_event_fd, by zkl_client_dispatch: call it, then close)",
                         handles);
    if (zkl__forked(c)) /* the parent's writes are never answered here */
        return close_forked(c);
    if (writes > 0)
        return zkl__fail(ZKL_EBUSY,
                         "zkl_client_close: %d async guarded write(s) have not reported yet "
                         "(let their callbacks run first: with an event descriptor, "
                         "zkl_client_dispatch runs them)",
                         writes);
    zkl__fork_unregister(c);
    /* Let released nodes' deletes land first: zookeeper_close would drop
     * their replies and leak its own record of them (the server deletes the
     * nodes with the session anyway). Also while reconnecting: the reply, or
     * a connection-loss completion, comes within the bound. */
    (void)zkl__cleanup_drain(c, zkl__now_ms() + ZKL_CLOSE_DRAIN_MS, false);
    zkl__clear_err();
    zkl__worker_stop(c);
    s = c->conn.sess;
    if (!zkl__run_bounded(finish_close, s, ZKL_CLOSE_WAIT_MS))
        zkl__log(ZKL_LOG_WARN,
                 "zkl_client_close: the ZooKeeper client did not close its session within %d "
                 "ms; it goes on closing in the background",
                 ZKL_CLOSE_WAIT_MS);
    return ZKL_OK;
}

zkl_conn_state zkl_client_state(zkl_client *c)
{
    ZKL__REFUSE_IN_LOG_AS(ZKL_STATE_LOST);
    zkl_conn_state st;
    if (!c)
        return ZKL_STATE_LOST;
    pthread_mutex_lock(&c->mu);
    st = c->conn.state ? c->conn.state : ZKL_STATE_CONNECTED;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int64_t zkl_client_session_id(zkl_client *c)
{
    ZKL__REFUSE_IN_LOG_AS(0);
    int64_t id;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    id = c->conn.sess->expired ? 0 : c->conn.sess->id;
    pthread_mutex_unlock(&c->mu);
    return id;
}

zkl_status zkl_client_set_name(zkl_client *c, const char *name)
{
    ZKL__REFUSE_IN_LOG();
    size_t i, n;
    bool digits = true;
    char *copy;
    zkl__clear_err();
    if (!c || !name)
        return zkl__fail(ZKL_EINVAL, "zkl_client_set_name: %s is NULL", c ? "name" : "client");
    n = strlen(name);
    for (i = 0; i < n; i++) {
        if (name[i] < 0x20 || name[i] > 0x7e)
            return zkl__fail(ZKL_EINVAL,
                             "zkl_client_set_name: byte %zu of the name is not printable ASCII", i);
        digits = digits && name[i] >= '0' && name[i] <= '9';
    }
    if (n == 0 || n > ZKL_CLIENT_NAME_MAX || digits)
        return zkl__fail(ZKL_EINVAL,
                         "zkl_client_set_name: a name has 1 to %d characters, not all digits "
                         "(numbers name the clients that have no name)",
                         ZKL_CLIENT_NAME_MAX);
    if (zkl__forked(c))
        return zkl__closed_fail(c, "zkl_client_set_name");
    if (!(copy = strdup(name)))
        return zkl__fail(ZKL_ENOMEM, "out of memory");
    if (!zkl__registry_name(c, copy)) {
        free(copy);
        return zkl__fail(ZKL_EINVAL, "zkl_client_set_name: another open client is named \"%s\"",
                         name);
    }
    return ZKL_OK;
}

zkl_status zkl_client_set_process_hints(zkl_client *c, int on)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_set_process_hints: client is NULL");
    if (on != 0 && on != 1)
        return zkl__fail(ZKL_EINVAL, "zkl_client_set_process_hints: on is %d, not 0 or 1", on);
    atomic_store(&c->cfg.process_hints, on == 1);
    return ZKL_OK;
}

int zkl_client_process_hints(zkl_client *c)
{
    ZKL__REFUSE_IN_LOG_AS(-1);
    if (!c) {
        (void)zkl__fail(ZKL_EINVAL, "zkl_client_process_hints: client is NULL");
        return -1;
    }
    return zkl__process_hints(c) ? 1 : 0;
}

int zkl_client_ensemble_lag(zkl_client *c, zkl_lag_source *source)
{
    ZKL__REFUSE_IN_LOG_AS(-1);
    int lag;
    if (!c) {
        (void)zkl__fail(ZKL_EINVAL, "zkl_client_ensemble_lag: client is NULL");
        return -1;
    }
    pthread_mutex_lock(&c->mu);
    lag = c->cfg.opts.ensemble_lag_ms;
    if (source)
        *source = c->cfg.lag_source;
    pthread_mutex_unlock(&c->mu);
    return lag;
}

int zkl_client_session_timeout(zkl_client *c)
{
    ZKL__REFUSE_IN_LOG_AS(0);
    int t;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->mu);
    t = c->conn.granted_timeout;
    pthread_mutex_unlock(&c->mu);
    return t;
}

zkl_status zkl_client_drain(zkl_client *c, int timeout_ms)
{
    ZKL__REFUSE_IN_LOG();
    zkl_status st;
    zkl__clear_err();
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_drain: client is NULL");
    if (zkl__forked(c)) /* its deletes are the parent's */
        return zkl__closed_fail(c, "zkl_client_drain");
    if (timeout_ms != 0 && (st = zkl__refuse_on_worker(c, "zkl_client_drain")) != ZKL_OK)
        return st;
    return zkl__cleanup_drain(c, zkl__deadline(timeout_ms), true);
}

zkl_status zkl_client_lease_end(zkl_client *c, int64_t *boot_ms)
{
    ZKL__REFUSE_IN_LOG();
    int64_t end;
    zkl__clear_err();
    if (!c || !boot_ms)
        return zkl__fail(ZKL_EINVAL, "zkl_client_lease_end: NULL argument");
    end = zkl__lease_end(c, zkl__epoch(c));
    if (!end)
        return zkl__fail(ZKL_ELOST, "no lease: nothing renewed it yet, or it ran out");
    *boot_ms = end;
    return ZKL_OK;
}

zkl_status zkl_client_stats_get(zkl_client *c, zkl_client_stats *out)
{
    ZKL__REFUSE_IN_LOG();
    if (!c || !out)
        return zkl__fail(ZKL_EINVAL, "zkl_client_stats_get: NULL argument");
    pthread_mutex_lock(&c->mu);
    out->requests = atomic_load(&c->tally.requests);
    out->watch_events = c->tally.watch_events;
    out->sessions = c->tally.sessions;
    out->bg_deletes = zkl__cleanup_queued_locked(c);
    pthread_mutex_unlock(&c->mu);
    return ZKL_OK;
}

zkl_status zkl_client_cancel(zkl_client *c)
{
    ZKL__REFUSE_IN_LOG();
    if (!c)
        return zkl__fail(ZKL_EINVAL, "zkl_client_cancel: client is NULL");
    pthread_mutex_lock(&c->mu);
    c->canceled = true;
    zkl__changed_locked(c);
    pthread_mutex_unlock(&c->mu);
    return ZKL_OK;
}

void zkl_strings_free(char **v, size_t n)
{
    size_t i;
    if (!v)
        return;
    for (i = 0; i < n; i++)
        free(v[i]);
    free(v);
}
