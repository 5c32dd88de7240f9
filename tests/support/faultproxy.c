/*
 * faultproxy.c - see faultproxy.h.
 *
 * One thread polls the listener, a wake-up pipe and both sockets of every
 * connection. Each direction of a connection has a queue of chunks, each
 * with the time it may be written (now + delay when it was read); a queue
 * holding QUEUE_MAX bytes stops reading its source. The controls change the
 * settings under fp->mu, wake the thread and wait until it has taken them
 * (it acknowledges at the top of its loop, before any further I/O).
 */
#define _GNU_SOURCE /* accept4, pipe2, POLLRDHUP */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "faultproxy.h"

#define CHUNK_MAX 16384
#define QUEUE_MAX (256 * 1024)
#define CONNECT_WAIT_MS 1000

typedef struct chunk {
    struct chunk *next;
    int64_t due; /* ms, monotonic: may be written from then on */
    size_t len, off;
    char data[];
} chunk;

typedef struct queue {
    chunk *head, *tail;
    size_t bytes;
} queue;

/* One proxied connection: side 0 is the client, side 1 the server. */
typedef struct conn {
    int fd[2];
    queue q[2]; /* q[i]: read from fd[i], to be written to fd[1 - i] */
    bool eof[2];
    struct conn *next;
} conn;

typedef struct settings {
    bool stall, drop, drop_up, refuse;
    int delay_ms;
} settings;

struct fp_proxy {
    pthread_t thread;
    int lfd;
    int wake[2];
    struct sockaddr_storage up;
    socklen_t uplen;
    char connect[64];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* guarded by mu */
    settings set;
    bool stop;
    uint64_t gen_req, gen_done; /* control changes asked for / taken by the thread */
    uint64_t cut_req, cut_done;
    fp_stats st;
    /* the thread's own */
    conn *conns;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void queue_clear(queue *q)
{
    chunk *c, *n;
    for (c = q->head; c; c = n) {
        n = c->next;
        free(c);
    }
    q->head = q->tail = NULL;
    q->bytes = 0;
}

static void count(fp_proxy *fp, uint64_t *field, uint64_t n)
{
    pthread_mutex_lock(&fp->mu);
    *field += n;
    pthread_mutex_unlock(&fp->mu);
}

static void conn_close(fp_proxy *fp, conn *c)
{
    conn **pp;
    for (pp = &fp->conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    close(c->fd[0]);
    close(c->fd[1]);
    queue_clear(&c->q[0]);
    queue_clear(&c->q[1]);
    free(c);
    pthread_mutex_lock(&fp->mu);
    fp->st.open--;
    pthread_mutex_unlock(&fp->mu);
}

/* A socket connected to upstream, or -1 (waits up to CONNECT_WAIT_MS). */
static int connect_upstream(fp_proxy *fp)
{
    int fd = socket(fp->up.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&fp->up, fp->uplen) != 0) {
        struct pollfd p = {fd, POLLOUT, 0};
        int err = 0;
        socklen_t len = sizeof err;
        if (errno != EINPROGRESS || poll(&p, 1, CONNECT_WAIT_MS) != 1 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
            close(fd);
            return -1;
        }
    }
    set_nodelay(fd);
    return fd;
}

static void accept_all(fp_proxy *fp, const settings *s)
{
    for (;;) {
        int cfd = accept4(fp->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), ufd;
        conn *c;
        if (cfd < 0)
            return; /* EAGAIN, or an aborted connection: nothing to do */
        ufd = s->refuse ? -1 : connect_upstream(fp);
        c = ufd >= 0 ? calloc(1, sizeof *c) : NULL;
        if (!c) {
            count(fp, &fp->st.refused, 1); /* counted before the client can see it */
            if (ufd >= 0)
                close(ufd);
            close(cfd);
            continue;
        }
        set_nodelay(cfd);
        c->fd[0] = cfd;
        c->fd[1] = ufd;
        c->next = fp->conns;
        fp->conns = c;
        pthread_mutex_lock(&fp->mu);
        fp->st.accepted++;
        fp->st.open++;
        pthread_mutex_unlock(&fp->mu);
    }
}

/* Read from side i into q[i]. false: the pair must close. */
static bool read_side(fp_proxy *fp, conn *c, int i, const settings *s, int64_t now)
{
    char buf[CHUNK_MAX];
    ssize_t n = recv(c->fd[i], buf, sizeof buf, MSG_DONTWAIT);
    chunk *k;
    if (n == 0) {
        c->eof[i] = true;
        return true;
    }
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if ((i == 1 && s->drop) || (i == 0 && s->drop_up)) {
        count(fp, &fp->st.dropped, (uint64_t)n);
        return true;
    }
    k = malloc(sizeof *k + (size_t)n);
    if (!k)
        return false;
    k->next = NULL;
    k->due = now + s->delay_ms;
    k->len = (size_t)n;
    k->off = 0;
    memcpy(k->data, buf, (size_t)n);
    if (c->q[i].tail)
        c->q[i].tail->next = k;
    else
        c->q[i].head = k;
    c->q[i].tail = k;
    c->q[i].bytes += (size_t)n;
    return true;
}

/* Write what is due of q[1 - i] to side i. false: the pair must close. */
static bool write_side(fp_proxy *fp, conn *c, int i, int64_t now)
{
    queue *q = &c->q[1 - i];
    uint64_t sent = 0;
    bool ok = true;
    while (q->head && q->head->due <= now) {
        chunk *k = q->head;
        ssize_t n = send(c->fd[i], k->data + k->off, k->len - k->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            ok = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
            break;
        }
        sent += (uint64_t)n;
        k->off += (size_t)n;
        q->bytes -= (size_t)n;
        if (k->off < k->len)
            break;
        q->head = k->next;
        if (!q->head)
            q->tail = NULL;
        free(k);
    }
    if (sent)
        count(fp, i == 1 ? &fp->st.up_bytes : &fp->st.down_bytes, sent);
    return ok;
}

static short side_events(const conn *c, int i, const settings *s, int64_t now)
{
    short ev = 0;
    if (s->stall)
        return c->eof[i] ? 0 : POLLRDHUP; /* only to notice a side that closes */
    if (!c->eof[i] && c->q[i].bytes < QUEUE_MAX)
        ev |= POLLIN;
    if (c->q[1 - i].head && c->q[1 - i].head->due <= now)
        ev |= POLLOUT;
    return ev;
}

static void *proxy_main(void *arg)
{
    fp_proxy *fp = arg;
    struct pollfd *pfd = NULL;
    conn **pconn = NULL;
    size_t cap = 0;
    for (;;) {
        settings s;
        bool cut, stop;
        size_t n = 0, i;
        int timeout = -1;
        int64_t now;
        conn *c;

        pthread_mutex_lock(&fp->mu);
        s = fp->set;
        stop = fp->stop;
        cut = fp->cut_req != fp->cut_done;
        fp->cut_done = fp->cut_req;
        pthread_mutex_unlock(&fp->mu);
        if (cut) {
            uint64_t k = 0;
            while (fp->conns) {
                conn_close(fp, fp->conns);
                k++;
            }
            count(fp, &fp->st.cut, k);
        }
        /* Taken: from here on every byte moves by the new settings. */
        pthread_mutex_lock(&fp->mu);
        fp->gen_done = fp->gen_req;
        pthread_cond_broadcast(&fp->cv);
        pthread_mutex_unlock(&fp->mu);
        if (stop)
            break;

        for (c = fp->conns; c; c = c->next)
            n++;
        if (2 + 2 * n > cap) {
            size_t ncap = 2 + 2 * n + 16;
            struct pollfd *np = realloc(pfd, ncap * sizeof *np);
            conn **nc;
            if (np)
                pfd = np;
            nc = np ? realloc(pconn, ncap * sizeof pconn[0]) : NULL; // NOLINT: pointers
            if (!nc) { /* out of memory: try again shortly */
                struct timespec ts = {0, 10000000L};
                nanosleep(&ts, NULL);
                continue;
            }
            pconn = nc;
            cap = ncap;
        }
        now = now_ms();
        pfd[0].fd = fp->wake[0];
        pfd[0].events = POLLIN;
        pfd[1].fd = fp->lfd;
        pfd[1].events = POLLIN;
        n = 2;
        for (c = fp->conns; c; c = c->next) {
            for (i = 0; i < 2; i++) {
                queue *out = &c->q[1 - i];
                pfd[n].fd = c->fd[i];
                pfd[n].events = side_events(c, (int)i, &s, now);
                pconn[n] = c;
                n++;
                if (!s.stall && out->head && out->head->due > now) {
                    int64_t wait = out->head->due - now;
                    if (timeout < 0 || wait < timeout)
                        timeout = (int)wait;
                }
            }
        }
        if (poll(pfd, n, timeout) < 0) {
            if (errno == EINTR)
                continue;
            break; /* cannot happen with valid arguments */
        }
        if (pfd[0].revents & POLLIN) {
            char drain[64];
            while (read(fp->wake[0], drain, sizeof drain) > 0)
                ;
        }
        now = now_ms();
        /* pconn[k], pconn[k + 1] are the two sides of one connection, in list order. */
        for (i = 2; i < n; i += 2) {
            bool ok = true;
            int side;
            c = pconn[i];
            for (side = 0; side < 2 && ok; side++) {
                short rev = pfd[i + (size_t)side].revents;
                if (rev & (POLLERR | POLLNVAL))
                    ok = false;
                else if (s.stall && (rev & (POLLRDHUP | POLLHUP)))
                    ok = false;
                else if (rev & POLLIN) /* before a hang-up: what it sent last still goes on */
                    ok = read_side(fp, c, side, &s, now);
                else if ((rev & POLLHUP) && (pfd[i + (size_t)side].events & POLLIN))
                    c->eof[side] = true; /* nothing left to read */
                else if (rev & POLLHUP)
                    ok = false;
            }
            for (side = 0; side < 2 && ok; side++)
                if (pfd[i + (size_t)side].revents & POLLOUT)
                    ok = write_side(fp, c, side, now);
            /* A side that ended, with all it sent forwarded: the pair is done. */
            if (ok && ((c->eof[0] && !c->q[0].head) || (c->eof[1] && !c->q[1].head)))
                ok = false;
            if (!ok)
                conn_close(fp, c);
        }
        if (pfd[1].revents & POLLIN)
            accept_all(fp, &s);
    }
    while (fp->conns)
        conn_close(fp, fp->conns);
    free(pfd);
    free(pconn);
    return NULL;
}

/* Apply a change made under fp->mu (held) and wait until the thread has taken it. */
static void commit_locked(fp_proxy *fp)
{
    uint64_t mine = ++fp->gen_req;
    char b = 1;
    ssize_t w = write(fp->wake[1], &b, 1); /* a full pipe is already a wake-up */
    (void)w;
    while (fp->gen_done < mine)
        pthread_cond_wait(&fp->cv, &fp->mu);
}

static int parse_upstream(const char *hostport, struct sockaddr_storage *ss, socklen_t *len)
{
    char buf[256], *host = buf, *port;
    struct addrinfo hints, *res = NULL;
    size_t n = strcspn(hostport, ",");
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, hostport, n);
    buf[n] = '\0';
    buf[strcspn(buf, "/")] = '\0'; /* a chroot */
    if (buf[0] == '[') {           /* [v6]:port */
        char *end = strchr(buf, ']');
        if (!end || end[1] != ':')
            return -1;
        *end = '\0';
        host = buf + 1;
        port = end + 2;
    } else {
        port = strrchr(buf, ':');
        if (!port)
            return -1;
        *port++ = '\0';
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return -1;
    if (res->ai_addrlen > sizeof *ss) {
        freeaddrinfo(res);
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = (socklen_t)res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

fp_proxy *fp_start(const char *upstream_hostport)
{
    fp_proxy *fp;
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    if (!upstream_hostport)
        return NULL;
    fp = calloc(1, sizeof *fp);
    if (!fp)
        return NULL;
    fp->lfd = fp->wake[0] = fp->wake[1] = -1;
    if (parse_upstream(upstream_hostport, &fp->up, &fp->uplen) != 0)
        goto fail;
    if (pipe2(fp->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        goto fail;
    fp->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fp->lfd < 0)
        goto fail;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fp->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fp->lfd, 64) != 0 ||
        getsockname(fp->lfd, (struct sockaddr *)&a, &alen) != 0)
        goto fail;
    snprintf(fp->connect, sizeof fp->connect, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    pthread_mutex_init(&fp->mu, NULL);
    pthread_cond_init(&fp->cv, NULL);
    if (pthread_create(&fp->thread, NULL, proxy_main, fp) != 0) {
        pthread_mutex_destroy(&fp->mu);
        pthread_cond_destroy(&fp->cv);
        goto fail;
    }
    return fp;
fail:
    if (fp->lfd >= 0)
        close(fp->lfd);
    if (fp->wake[0] >= 0) {
        close(fp->wake[0]);
        close(fp->wake[1]);
    }
    free(fp);
    return NULL;
}

const char *fp_connect_string(fp_proxy *fp)
{
    return fp ? fp->connect : NULL;
}

void fp_cut(fp_proxy *fp)
{
    pthread_mutex_lock(&fp->mu);
    fp->cut_req++;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
}

void fp_stall(fp_proxy *fp, bool on)
{
    pthread_mutex_lock(&fp->mu);
    fp->set.stall = on;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
}

void fp_drop_replies(fp_proxy *fp, bool on)
{
    pthread_mutex_lock(&fp->mu);
    fp->set.drop = on;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
}

void fp_drop_requests(fp_proxy *fp, bool on)
{
    pthread_mutex_lock(&fp->mu);
    fp->set.drop_up = on;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
}

void fp_delay(fp_proxy *fp, int ms)
{
    pthread_mutex_lock(&fp->mu);
    fp->set.delay_ms = ms > 0 ? ms : 0;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
}

void fp_refuse(fp_proxy *fp, bool on)
{
    pthread_mutex_lock(&fp->mu);
    fp->set.refuse = on;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
}

void fp_stats_get(fp_proxy *fp, fp_stats *out)
{
    pthread_mutex_lock(&fp->mu);
    *out = fp->st;
    pthread_mutex_unlock(&fp->mu);
}

void fp_stop(fp_proxy *fp)
{
    if (!fp)
        return;
    pthread_mutex_lock(&fp->mu);
    fp->stop = true;
    commit_locked(fp);
    pthread_mutex_unlock(&fp->mu);
    pthread_join(fp->thread, NULL);
    close(fp->lfd);
    close(fp->wake[0]);
    close(fp->wake[1]);
    pthread_mutex_destroy(&fp->mu);
    pthread_cond_destroy(&fp->cv);
    free(fp);
}
