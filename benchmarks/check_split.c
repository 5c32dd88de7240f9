/*
 * check_split.c - handoff_split on a capture written here, with known times:
 * 4 sessions hand a lock round (each release a multi of delete and create,
 * its length sent apart as libzookeeper_mt does), every deletion notified to
 * the next holder 400 us after the multi and, as a look-ahead, to the one
 * after it; the next holder's multi leaves 150 us after its notification.
 * Other replies, a stream picked up mid-frame and a foreign port are mixed
 * in. handoff_split must report 150 hand-offs by 4 sessions, 400 us of
 * server and 150 us of client time.
 *
 *   check_split HANDOFF_SPLIT
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZK_PORT 2181
#define SESSIONS 4
#define HANDOFFS 150

static FILE *out;
static uint32_t seq_c2s[SESSIONS], seq_s2c[SESSIONS];

static void put32le(uint32_t v)
{
    fwrite(&v, 4, 1, out);
}

/* One Ethernet/IPv4/TCP packet carrying payload, at t microseconds. */
static void packet(int64_t t_us, int sport, int dport, uint32_t seq, const unsigned char *p,
                   size_t n)
{
    unsigned char h[54];
    size_t tot = 20 + 20 + n;
    memset(h, 0, sizeof h);
    h[12] = 0x08; /* IPv4 */
    h[14] = 0x45;
    h[16] = (unsigned char)(tot >> 8);
    h[17] = (unsigned char)tot;
    h[23] = 6; /* TCP */
    h[34] = (unsigned char)(sport >> 8);
    h[35] = (unsigned char)sport;
    h[36] = (unsigned char)(dport >> 8);
    h[37] = (unsigned char)dport;
    h[38] = (unsigned char)(seq >> 24);
    h[39] = (unsigned char)(seq >> 16);
    h[40] = (unsigned char)(seq >> 8);
    h[41] = (unsigned char)seq;
    h[46] = 0x50; /* data offset: 5 words */
    put32le((uint32_t)(t_us / 1000000));
    put32le((uint32_t)(t_us % 1000000));
    put32le((uint32_t)(sizeof h + n));
    put32le((uint32_t)(sizeof h + n));
    fwrite(h, 1, sizeof h, out);
    fwrite(p, 1, n, out);
}

typedef struct buf {
    unsigned char b[1024];
    size_t n;
} buf;

static void b32(buf *b, int32_t v)
{
    uint32_t x = htonl((uint32_t)v);
    memcpy(b->b + b->n, &x, 4);
    b->n += 4;
}

static void bstr(buf *b, const char *s)
{
    b32(b, (int32_t)strlen(s));
    memcpy(b->b + b->n, s, strlen(s));
    b->n += strlen(s);
}

static void node(char *to, size_t len, int k)
{
    snprintf(to, len, "/lockbench/contended-check/lock/_c_%08d-lock-%010d", k, k);
}

/* Session i's release of node k: a multi (delete k, create), length sent apart. */
static void multi(int64_t t, int i, int k)
{
    buf b = {.n = 0};
    char path[128];
    unsigned char len[4];
    uint32_t nlen;
    b32(&b, k + 1); /* xid */
    b32(&b, 14);    /* multi */
    b32(&b, 2);     /* delete */
    b.b[b.n++] = 0;
    b32(&b, -1);
    node(path, sizeof path, k);
    bstr(&b, path);
    b32(&b, -1);
    b32(&b, 1); /* create */
    b.b[b.n++] = 0;
    b32(&b, -1);
    bstr(&b, "/lockbench/contended-check/lock/_c_x-lock-");
    bstr(&b, "10.0.0.1");
    b32(&b, 1); /* ACL: world:anyone, all */
    b32(&b, 31);
    bstr(&b, "world");
    bstr(&b, "anyone");
    b32(&b, 3);  /* ephemeral sequential */
    b32(&b, -1); /* the end */
    b.b[b.n++] = 1;
    b32(&b, -1);
    nlen = htonl((uint32_t)b.n);
    memcpy(len, &nlen, 4);
    packet(t, 40001 + i, ZK_PORT, seq_c2s[i], len, 4);
    seq_c2s[i] += 4;
    packet(t, 40001 + i, ZK_PORT, seq_c2s[i], b.b, b.n);
    seq_c2s[i] += (uint32_t)b.n;
}

/* A server frame to session i: a notification of k's deletion, or (k < 0) a reply. */
static void to_session(int64_t t, int i, int k)
{
    buf b = {.n = 0};
    char path[128];
    unsigned char frame[1100];
    uint32_t nlen;
    b32(&b, k < 0 ? 7 : -1); /* xid */
    b32(&b, 0);              /* zxid */
    b32(&b, k < 0 ? 99 : -1);
    b32(&b, 0); /* err */
    if (k >= 0) {
        b32(&b, 2); /* NodeDeleted */
        b32(&b, 3); /* connected */
        node(path, sizeof path, k);
        bstr(&b, path);
    }
    nlen = htonl((uint32_t)b.n);
    memcpy(frame, &nlen, 4);
    memcpy(frame + 4, b.b, b.n);
    packet(t, ZK_PORT, 40001 + i, seq_s2c[i], frame, b.n + 4);
    seq_s2c[i] += (uint32_t)(b.n + 4);
}

int main(int argc, char **argv)
{
    char file[] = "/tmp/check_split.XXXXXX", cmd[512], line[2048];
    unsigned char junk[7] = {1, 2, 3, 4, 5, 6, 7};
    int64_t t = 1000000;
    int k, fd, fails = 0;
    FILE *p;
    const char *want[] = {
        "\"sessions\":4,",         "\"handoffs\":150,",
        "\"server_p50_us\":400,",  "\"server_mean_us\":400,",
        "\"client_p50_us\":150,",  "\"client_mean_us\":150,",
        "\"handoff_p50_us\":550,", "\"parent\":\"/lockbench/contended-check/lock\""};
    size_t i;
    if (argc != 2) {
        fprintf(stderr, "usage: check_split HANDOFF_SPLIT\n");
        return 2;
    }
    if ((fd = mkstemp(file)) < 0 || !(out = fdopen(fd, "wb"))) {
        perror("check_split: temporary file");
        return 2;
    }
    put32le(0xa1b2c3d4); /* pcap, microseconds, Ethernet */
    put32le(0x00040002);
    put32le(0);
    put32le(0);
    put32le(65535);
    put32le(1);
    /* session 0's server stream starts mid-frame; a foreign port talks too */
    packet(t - 10, ZK_PORT, 40001, 77, junk, sizeof junk);
    packet(t - 5, 5000, 6000, 1, junk, sizeof junk);
    for (i = 0; i < SESSIONS; i++) {
        seq_c2s[i] = 1000u * (uint32_t)(i + 1);
        seq_s2c[i] = 0xfffffff0u - (uint32_t)i; /* wraps */
    }
    for (k = 0; k <= HANDOFFS; k++) {
        int holder = k % SESSIONS, next = (k + 1) % SESSIONS, ahead = (k + 2) % SESSIONS;
        multi(t, holder, k);
        if (k == HANDOFFS)
            break; /* no one takes the last one: not a hand-off */
        to_session(t + 400, next, k);
        to_session(t + 400, ahead, k);   /* look-ahead: this one deletes much later */
        to_session(t + 410, holder, -1); /* the multi's reply */
        t += 400 + 150;
    }
    fclose(out);
    snprintf(cmd, sizeof cmd, "'%s' '%s' %d check", argv[1], file, ZK_PORT);
    if (!(p = popen(cmd, "r")) || !fgets(line, sizeof line, p)) {
        fprintf(stderr, "check_split: no row from %s\n", cmd);
        remove(file);
        return 1;
    }
    pclose(p);
    remove(file);
    for (i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(line, want[i])) {
            fprintf(stderr, "check_split: no %s in %s", want[i], line);
            fails++;
        }
    if (fails == 0)
        printf("check_split: passed: %s", line);
    return fails ? 1 : 0;
}
