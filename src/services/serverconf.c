/*
 * serverconf.c - see serverconf.h. A server answers a four-letter word with
 * its text and closes the connection; one that does not allow `conf` says
 * "conf is not executed because it is not in the whitelist."
 */
#include "services/serverconf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tuning.h"
#include "base/util.h"

/* The value of "key=N" at the start of a line of reply; -1 if none. */
static long line_value(const char *reply, const char *key)
{
    size_t n = strlen(key);
    const char *p = reply;
    while (p && *p) {
        if (!strncmp(p, key, n) && p[n] == '=') {
            char *end;
            long v;
            errno = 0;
            v = strtol(p + n + 1, &end, 10);
            if (errno || end == p + n + 1 || v < 0 || v > INT_MAX / 4)
                return -1;
            return v;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return -1;
}

zkl__conf_answer zkl__conf_parse(const char *reply, int *lag_ms)
{
    long tick = line_value(reply, "tickTime"), sync = line_value(reply, "syncLimit");
    *lag_ms = 0;
    if (strstr(reply, "not in the whitelist"))
        return ZKL__CONF_REFUSED;
    if (tick <= 0)
        return ZKL__CONF_NO_ANSWER;
    if (sync < 0)
        return ZKL__CONF_STANDALONE;
    if (sync > (INT_MAX - tick / 2) / tick)
        return ZKL__CONF_NO_ANSWER;
    *lag_ms = (int)(sync * tick + tick / 2);
    return ZKL__CONF_ENSEMBLE;
}

/* Wait for events on fd until deadline (zkl__now_ms); false on timeout or error. */
static int wait_for(int fd, short events, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int64_t left = deadline - zkl__now_ms();
        int rc;
        if (left <= 0)
            return 0;
        rc = poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left));
        if (rc > 0)
            return 1;
        if (rc == 0 || errno != EINTR)
            return 0;
    }
}

static int connect_by(int fd, const struct sockaddr *addr, socklen_t len, int64_t deadline)
{
    int err = 0;
    socklen_t elen = sizeof err;
    if (connect(fd, addr, len) == 0)
        return 1;
    if (errno != EINPROGRESS || !wait_for(fd, POLLOUT, deadline))
        return 0;
    return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 && err == 0;
}

/* Read until the server closes (or the buffer is full, or the deadline); bytes read, or -1. */
static ssize_t read_all(int fd, char *buf, size_t cap, int64_t deadline)
{
    size_t got = 0;
    while (got < cap) {
        ssize_t n;
        if (!wait_for(fd, POLLIN, deadline))
            return -1;
        n = read(fd, buf + got, cap - got);
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
        if (n > 0)
            got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Ask the server at addr four-letter word (4 bytes); its reply in reply (NUL-terminated), or -1. */
static ssize_t ask(const struct sockaddr *addr, socklen_t len, const char *word, char *reply,
                   size_t cap, int timeout_ms)
{
    int64_t deadline = zkl__now_ms() + timeout_ms;
    ssize_t n = -1;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && connect_by(fd, addr, len, deadline) &&
        send(fd, word, 4, MSG_NOSIGNAL) == 4) /* a fresh socket's buffer takes 4 bytes */
        n = read_all(fd, reply, cap - 1, deadline);
    if (fd >= 0)
        close(fd);
    if (n >= 0)
        reply[n] = '\0';
    return n;
}

zkl__conf_answer zkl__conf_lag(const struct sockaddr *addr, socklen_t len, int timeout_ms,
                               int *lag_ms)
{
    char reply[ZKL_CONF_REPLY_MAX + 1];
    *lag_ms = 0;
    if (ask(addr, len, "conf", reply, sizeof reply, timeout_ms) <= 0)
        return ZKL__CONF_NO_ANSWER;
    return zkl__conf_parse(reply, lag_ms);
}

zkl__srvr_mode zkl__srvr_parse(const char *reply)
{
    const char *m = strstr(reply, "Mode: ");
    if (!m || (m != reply && m[-1] != '\n'))
        return ZKL__MODE_UNKNOWN;
    m += 6;
    if (!strncmp(m, "standalone", 10))
        return ZKL__MODE_STANDALONE;
    if (!strncmp(m, "leader", 6) || !strncmp(m, "follower", 8) || !strncmp(m, "observer", 8))
        return ZKL__MODE_ENSEMBLE;
    return ZKL__MODE_UNKNOWN; /* read-only, or a word of a later version */
}

zkl__srvr_mode zkl__srvr_mode_of(const struct sockaddr *addr, socklen_t len, int timeout_ms)
{
    char reply[ZKL_CONF_REPLY_MAX + 1];
    if (ask(addr, len, "srvr", reply, sizeof reply, timeout_ms) <= 0)
        return ZKL__MODE_UNKNOWN;
    return zkl__srvr_parse(reply);
}
