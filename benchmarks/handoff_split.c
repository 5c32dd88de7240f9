/*
 * handoff_split.c - where a contended lock's hand-off time goes, read off a
 * packet capture of the ZooKeeper port (tcpdump -w on loopback), for any
 * library's traffic, with nothing instrumented. A hand-off is a lock node's
 * deletion; for each one it takes
 *
 *   server: the deleting request (a delete, or a multi carrying one) arriving
 *           -> the deletion's watch notification leaving for the next holder;
 *   client: that notification arriving -> the next holder's own deleting
 *           request leaving (its wake-up, any round trips it still makes,
 *           and its release).
 *
 * The next holder is the notified session whose next deleting request comes
 * first (within 50 ms); a session notified only to look ahead deletes much
 * later. Hand-offs are grouped by the lock's parent path, so one capture of
 * several workloads gives one row each, with the number of sessions seen
 * deleting under it. One JSON line per parent with at least 100 hand-offs:
 *
 *   handoff_split CAPTURE PORT [LIB]
 *
 * Only IPv4 TCP to or from PORT is read; the capture must hold whole packets
 * (tcpdump -s 0, its default). A stream whose capture starts mid-frame is
 * picked up at the first segment that starts one.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAME (1 << 20)
#define MAX_STREAMS 4096
#define NEXT_HOLDER_NS 50000000LL /* 50 ms */
#define MIN_HANDOFFS 100

enum { OP_CREATE = 1, OP_DELETE = 2, OP_SETDATA = 5, OP_CHECK = 13, OP_MULTI = 14 };
enum { OP_CREATE2 = 15, OP_CREATE_CONTAINER = 19, OP_CREATE_TTL = 21, EV_DELETED = 2 };

typedef struct event {
    int64_t t;  /* capture time, ns */
    int port;   /* the client's port: one session */
    char *path; /* the deleted node */
} event;

typedef struct evlist {
    event *v;
    size_t n, cap;
} evlist;

typedef struct stream {
    int port;
    bool to_server, synced;
    uint32_t next;
    unsigned char *buf;
    size_t len, cap;
} stream;

static evlist deletes, notes;
static stream streams[MAX_STREAMS];
static int nstreams;

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "handoff_split: out of memory\n");
        exit(2);
    }
    return p;
}

static void ev_add(evlist *l, int64_t t, int port, const char *path, size_t plen)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n].t = t;
    l->v[l->n].port = port;
    l->v[l->n].path = xrealloc(NULL, plen + 1);
    memcpy(l->v[l->n].path, path, plen);
    l->v[l->n].path[plen] = '\0';
    l->n++;
}

/* Big-endian readers over [p, end); false when the frame is too short. */
typedef struct rd {
    const unsigned char *p, *end;
} rd;

static bool get32(rd *r, int32_t *out)
{
    uint32_t v;
    if (r->end - r->p < 4)
        return false;
    v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 | r->p[3];
    *out = (int32_t)v;
    r->p += 4;
    return true;
}

static bool skip(rd *r, int64_t n)
{
    if (n < 0 || r->end - r->p < n)
        return false;
    r->p += n;
    return true;
}

/* A jute buffer or string: length, then bytes (-1: none). */
static bool get_buf(rd *r, const unsigned char **s, int32_t *len)
{
    if (!get32(r, len))
        return false;
    *s = r->p;
    return *len < 0 || skip(r, *len);
}

static bool skip_buf(rd *r)
{
    const unsigned char *s;
    int32_t len;
    return get_buf(r, &s, &len);
}

/* The body of one op of a multi request, recording a delete's path. */
static bool multi_op(rd *r, int32_t type, int64_t t, int port)
{
    const unsigned char *s;
    int32_t len, n, i, x;
    switch (type) {
    case OP_DELETE:
        if (!get_buf(r, &s, &len) || !get32(r, &x))
            return false;
        if (len > 0)
            ev_add(&deletes, t, port, (const char *)s, (size_t)len);
        return true;
    case OP_CREATE:
    case OP_CREATE2:
    case OP_CREATE_CONTAINER:
    case OP_CREATE_TTL:
        if (!skip_buf(r) || !skip_buf(r) || !get32(r, &n))
            return false;
        for (i = 0; i < n; i++) /* ACL: perms, scheme, id */
            if (!get32(r, &x) || !skip_buf(r) || !skip_buf(r))
                return false;
        return get32(r, &x) && (type != OP_CREATE_TTL || skip(r, 8));
    case OP_SETDATA: return skip_buf(r) && skip_buf(r) && get32(r, &x);
    case OP_CHECK: return skip_buf(r) && get32(r, &x);
    default: return false;
    }
}

static void client_frame(const unsigned char *f, size_t n, int64_t t, int port)
{
    rd r = {f, f + n};
    const unsigned char *s;
    int32_t xid, type, len;
    if (!get32(&r, &xid) || !get32(&r, &type))
        return;
    if (type == OP_DELETE) {
        if (get_buf(&r, &s, &len) && len > 0)
            ev_add(&deletes, t, port, (const char *)s, (size_t)len);
    } else if (type == OP_MULTI) {
        for (;;) { /* MultiHeader: type, done (one byte), err */
            int32_t op, err;
            bool done;
            if (!get32(&r, &op) || r.p >= r.end)
                return;
            done = *r.p++ != 0;
            if (!get32(&r, &err) || done || !multi_op(&r, op, t, port))
                return;
        }
    }
}

static void server_frame(const unsigned char *f, size_t n, int64_t t, int port)
{
    rd r = {f, f + n};
    const unsigned char *s;
    int32_t xid, err, type, state, len;
    /* ReplyHeader: xid, zxid (8), err; a notification has xid -1 */
    if (!get32(&r, &xid) || xid != -1 || !skip(&r, 8) || !get32(&r, &err))
        return;
    if (get32(&r, &type) && type == EV_DELETED && get32(&r, &state) && get_buf(&r, &s, &len) &&
        len > 0)
        ev_add(&notes, t, port, (const char *)s, (size_t)len);
}

/* Whether data starts a frame: a lone length (libzookeeper sends it apart),
 * or whole frames exactly. */
static bool starts_frames(const unsigned char *d, size_t n)
{
    size_t off = 0;
    if (n == 4) {
        uint32_t len;
        memcpy(&len, d, 4);
        len = ntohl(len);
        return len >= 8 && len <= MAX_FRAME;
    }
    while (off + 4 <= n) {
        uint32_t len;
        memcpy(&len, d + off, 4);
        len = ntohl(len);
        if (len < 8 || len > MAX_FRAME)
            return false;
        off += 4 + len;
    }
    return off == n;
}

static stream *stream_of(int port, bool to_server)
{
    int i;
    for (i = 0; i < nstreams; i++)
        if (streams[i].port == port && streams[i].to_server == to_server)
            return &streams[i];
    if (nstreams == MAX_STREAMS) {
        fprintf(stderr, "handoff_split: more than %d streams\n", MAX_STREAMS);
        exit(2);
    }
    streams[nstreams].port = port;
    streams[nstreams].to_server = to_server;
    return &streams[nstreams++];
}

static void segment(stream *st, uint32_t seq, const unsigned char *d, size_t n, int64_t t)
{
    size_t off = 0;
    if (st->synced && seq != st->next) {
        if ((int32_t)(seq - st->next) < 0)
            return;         /* a retransmission */
        st->synced = false; /* a gap: pick up again at a frame start */
    }
    if (!st->synced) {
        if (!starts_frames(d, n))
            return;
        st->synced = true;
        st->len = 0;
    }
    st->next = seq + (uint32_t)n;
    if (st->len + n > st->cap) {
        st->cap = (st->len + n) * 2;
        st->buf = xrealloc(st->buf, st->cap);
    }
    memcpy(st->buf + st->len, d, n);
    st->len += n;
    while (st->len - off >= 4) {
        uint32_t len;
        memcpy(&len, st->buf + off, 4);
        len = ntohl(len);
        if (len > MAX_FRAME) {
            st->synced = false;
            st->len = 0;
            return;
        }
        if (st->len - off - 4 < len)
            break;
        if (st->to_server)
            client_frame(st->buf + off + 4, len, t, st->port);
        else
            server_frame(st->buf + off + 4, len, t, st->port);
        off += 4 + len;
    }
    memmove(st->buf, st->buf + off, st->len - off);
    st->len -= off;
}

/* Read the capture; false on a format it cannot read. */
static bool read_capture(FILE *f, int zkport)
{
    uint32_t gh[6], rh[4];
    unsigned char *pkt = NULL;
    size_t pcap = 0, link;
    bool nano;
    if (fread(gh, 4, 6, f) != 6)
        return false;
    if (gh[0] != 0xa1b2c3d4 && gh[0] != 0xa1b23c4d)
        return false; /* not a pcap file written on this machine */
    nano = gh[0] == 0xa1b23c4d;
    switch (gh[5]) {
    case 1: link = 14; break;   /* Ethernet, as tcpdump writes loopback */
    case 113: link = 16; break; /* Linux cooked (-i any) */
    case 276: link = 20; break; /* Linux cooked v2 */
    case 101: link = 0; break;  /* raw IP */
    default: return false;
    }
    while (fread(rh, 4, 4, f) == 4) {
        int64_t t = (int64_t)rh[0] * 1000000000LL + (int64_t)rh[1] * (nano ? 1 : 1000);
        const unsigned char *ip, *tcp;
        size_t ihl, tot, doff;
        int sport, dport;
        if (rh[2] > pcap) {
            pcap = rh[2];
            pkt = xrealloc(pkt, pcap);
        }
        if (fread(pkt, 1, rh[2], f) != rh[2])
            break;
        if (rh[2] < link + 40)
            continue;
        ip = pkt + link;
        if ((ip[0] >> 4) != 4 || ip[9] != 6)
            continue;
        ihl = (size_t)(ip[0] & 15) * 4;
        tot = (size_t)ip[2] << 8 | ip[3];
        if (tot > rh[2] - link || ihl + 20 > tot)
            continue; /* truncated: the capture must hold whole packets */
        tcp = ip + ihl;
        doff = (size_t)(tcp[12] >> 4) * 4;
        if (ihl + doff > tot)
            continue;
        sport = tcp[0] << 8 | tcp[1];
        dport = tcp[2] << 8 | tcp[3];
        if (tot == ihl + doff || (sport != zkport && dport != zkport))
            continue;
        segment(stream_of(dport == zkport ? sport : dport, dport == zkport),
                (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 | (uint32_t)tcp[6] << 8 | tcp[7],
                tcp + doff, tot - ihl - doff, t);
    }
    free(pkt);
    return true;
}

static int by_path_time(const void *a, const void *b)
{
    const event *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : (x->t > y->t) - (x->t < y->t);
}

static int by_port_time(const void *a, const void *b)
{
    const event *x = a, *y = b;
    if (x->port != y->port)
        return x->port - y->port;
    return (x->t > y->t) - (x->t < y->t);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The first deleting request of port after t (deletes sorted by port, time). */
static const event *next_delete(const event *byport, size_t n, int port, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (byport[mid].port < port || (byport[mid].port == port && byport[mid].t <= t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && byport[lo].port == port ? &byport[lo] : NULL;
}

/* The deleting request of path (deletes sorted by path, time): the first. */
static const event *delete_of(const event *bypath, size_t n, const char *path)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(bypath[mid].path, path) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(bypath[lo].path, path) == 0 ? &bypath[lo] : NULL;
}

typedef struct handoff {
    const char *parent; /* inside the deleted path */
    size_t parent_len;
    int64_t server, client;
    int deleter; /* port of the session that deleted */
} handoff;

static int by_parent(const void *a, const void *b)
{
    const handoff *x = a, *y = b;
    size_t n = x->parent_len < y->parent_len ? x->parent_len : y->parent_len;
    int c = memcmp(x->parent, y->parent, n);
    return c ? c : (x->parent_len > y->parent_len) - (x->parent_len < y->parent_len);
}

static void stats(const char *name, int64_t *v, size_t n)
{
    int64_t sum = 0;
    size_t i;
    if (n == 0)
        return;
    qsort(v, n, sizeof *v, cmp_i64);
    for (i = 0; i < n; i++)
        sum += v[i];
    printf(",\"%s_p50_us\":%lld,\"%s_p90_us\":%lld,\"%s_mean_us\":%lld", name,
           (long long)(v[n / 2] / 1000), name, (long long)(v[n * 9 / 10] / 1000), name,
           (long long)(sum / (int64_t)n / 1000));
}

static void report(const char *lib, handoff *h, size_t n)
{
    int64_t *srv = xrealloc(NULL, n * sizeof *srv), *cli = xrealloc(NULL, n * sizeof *cli),
            *sum = xrealloc(NULL, n * sizeof *sum);
    int ports[256];
    int np = 0, j;
    size_t i;
    for (i = 0; i < n; i++) {
        srv[i] = h[i].server;
        cli[i] = h[i].client;
        sum[i] = h[i].server + h[i].client;
        for (j = 0; j < np && ports[j] != h[i].deleter; j++)
            ;
        if (j == np && np < 256)
            ports[np++] = h[i].deleter;
    }
    printf("{\"lib\":\"%s\",\"parent\":\"%.*s\",\"sessions\":%d,\"handoffs\":%zu", lib,
           (int)h[0].parent_len, h[0].parent, np, n);
    stats("server", srv, n);
    stats("client", cli, n);
    stats("handoff", sum, n);
    printf("}\n");
    free(srv);
    free(cli);
    free(sum);
}

int main(int argc, char **argv)
{
    FILE *f;
    event *bypath, *byport;
    handoff *h;
    size_t i, nh = 0, start;
    const char *lib = argc > 3 ? argv[3] : "capture";
    int port = argc > 2 ? atoi(argv[2]) : 0;
    if (argc < 3 || port <= 0 || port > 65535) {
        fprintf(stderr, "usage: handoff_split CAPTURE PORT [LIB]\n");
        return 2;
    }
    if (!(f = fopen(argv[1], "rb"))) {
        perror(argv[1]);
        return 2;
    }
    if (!read_capture(f, port)) {
        fprintf(stderr, "handoff_split: %s: not a pcap capture (Ethernet, cooked or raw IP)\n",
                argv[1]);
        fclose(f);
        return 2;
    }
    fclose(f);
    bypath = xrealloc(NULL, (deletes.n + 1) * sizeof *bypath);
    byport = xrealloc(NULL, (deletes.n + 1) * sizeof *byport);
    memcpy(bypath, deletes.v, deletes.n * sizeof *bypath);
    memcpy(byport, deletes.v, deletes.n * sizeof *byport);
    qsort(bypath, deletes.n, sizeof *bypath, by_path_time);
    qsort(byport, deletes.n, sizeof *byport, by_port_time);
    /* per deleted node, its notification to the next holder */
    qsort(notes.v, notes.n, sizeof *notes.v, by_path_time);
    h = xrealloc(NULL, (notes.n + 1) * sizeof *h);
    for (i = 0; i < notes.n;) {
        const char *path = notes.v[i].path, *slash = strrchr(path, '/');
        const event *del = delete_of(bypath, deletes.n, path);
        int64_t best = -1, at = 0;
        for (; i < notes.n && strcmp(notes.v[i].path, path) == 0; i++) {
            const event *next = next_delete(byport, deletes.n, notes.v[i].port, notes.v[i].t);
            int64_t react = next ? next->t - notes.v[i].t : -1;
            if (react >= 0 && react < NEXT_HOLDER_NS && (best < 0 || react < best)) {
                best = react;
                at = notes.v[i].t;
            }
        }
        if (!del || best < 0 || at < del->t || !slash)
            continue;
        h[nh].parent = path;
        h[nh].parent_len = (size_t)(slash - path);
        h[nh].server = at - del->t;
        h[nh].client = best;
        h[nh].deleter = del->port;
        nh++;
    }
    qsort(h, nh, sizeof *h, by_parent);
    for (start = 0, i = 1; i <= nh; i++)
        if (i == nh || by_parent(&h[start], &h[i]) != 0) {
            if (i - start >= MIN_HANDOFFS)
                report(lib, h + start, i - start);
            start = i;
        }
    if (nh == 0)
        fprintf(stderr, "handoff_split: no hand-offs found on port %d\n", port);
    for (i = 0; i < deletes.n; i++)
        free(deletes.v[i].path);
    for (i = 0; i < notes.n; i++)
        free(notes.v[i].path);
    for (i = 0; i < (size_t)nstreams; i++)
        free(streams[i].buf);
    free(deletes.v);
    free(notes.v);
    free(bypath);
    free(byport);
    free(h);
    return 0;
}
