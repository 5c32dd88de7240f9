/*
 * benchutil.h - pieces shared by lockbench and lock_variants: clocks, latency
 * samples, the server's mntr counters, raw libzookeeper_mt handles, and a
 * throwaway ZooKeeper server (scripts/zk-server) that is stopped on every way
 * out, SIGINT included.
 */
#ifndef ZKL_BENCHUTIL_H
#define ZKL_BENCHUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

/* Monotonic clock in nanoseconds. */
int64_t bu_now_ns(void);

/* A growable array of latencies in nanoseconds (aborts on out of memory:
 * a benchmark that cannot record is worthless). */
typedef struct bu_samples {
    int64_t *v;
    size_t n, cap;
} bu_samples;

void bu_samples_add(bu_samples *s, int64_t ns);
void bu_samples_append(bu_samples *dst, const bu_samples *src);
void bu_samples_sort(bu_samples *s);
/* Nearest-rank percentile of sorted samples in microseconds (as the peers). */
int64_t bu_pct_us(const bu_samples *sorted, double p);
void bu_samples_free(bu_samples *s);

/* A small fast PRNG per thread (xorshift64*), seeded from getrandom. */
uint64_t bu_seed(void);
double bu_rand01(uint64_t *state);

/* Resident set size of this process in kB (from /proc/self/statm). */
long bu_rss_kb(void);

/*
 * Send a four-letter word to the first host of a connect string
 * ("h:p[,h:p...][/chroot]") over TCP and return the reply (malloc'd), or NULL.
 */
char *bu_4lw(const char *cs, const char *word);

/* One value of mntr (key: "zk_max_latency", say); -1 if it cannot be had. */
int64_t bu_mntr_get(const char *connect, const char *key);
/* srst: the server's statistics from zero (its max latency, its packet
 * counts); false if the server refused (not in 4lw.commands.whitelist). */
bool bu_server_stats_reset(const char *connect);

/* zk_packets_received from mntr; -1 if it cannot be had. */
int64_t bu_packets_received(const char *connect);
/*
 * From one mntr: zk_packets_received, and the watch notifications the server
 * has sent (watchers triggered: the sum of zk_sum_node_{created,deleted,
 * changed,children}_watch_count, ZooKeeper 3.6+). Each is -1 if it cannot be
 * had (both, if the server did not answer).
 */
void bu_mntr_counts(const char *connect, int64_t *packets, int64_t *notifications);

/* A raw libzookeeper_mt session (floor, naive variants, setup and cleanup). */
typedef struct bu_raw {
    zhandle_t *zh;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
} bu_raw;

/* Open and wait until connected (or timeout_ms): 0 on success. */
int bu_raw_open(bu_raw *r, const char *connect, int session_timeout_ms);
void bu_raw_close(bu_raw *r);

/* Create every missing persistent node of an absolute path. ZOK or the error. */
int bu_mkdirs(zhandle_t *zh, const char *path);
/* Delete path and everything under it; ZNONODE along the way is fine. */
int bu_delete_tree(zhandle_t *zh, const char *path);
/* Open a raw session, delete the tree, close. Warns on stderr on failure. */
void bu_cleanup_path(const char *connect, const char *path);

/* A fresh "/lockbench/<what>-<8 hex>" into buf. */
void bu_fresh_path(char *buf, size_t n, const char *what);

/*
 * Block SIGINT, SIGTERM and SIGHUP in this thread (call first in main, before
 * any thread exists, so every thread inherits the mask) and start a thread
 * that waits for them: it stops the throwaway server, if any, and exits 130.
 */
void bu_signals_init(const char *prog);

/*
 * Start a throwaway standalone server with scripts/zk-server in a temporary
 * directory and write its connect string to connect. The script is found via
 * $ZKL_ZK_SERVER, relative to the executable (../scripts, ../../scripts, ...)
 * or in the source tree this was built from. Unless ZK_JVM_OPTS is set, the
 * server gets the C2 JIT (zk-server's own default is C1 only, for quick test
 * start-up), as a measured server should. 0 on success.
 */
int bu_server_start(char *connect, size_t n);
/* Stop it and remove its directory (no-op if none); also runs at exit. */
void bu_server_stop(void);

/*
 * Warm up a freshly started server's JIT for the given seconds: 4 sessions
 * contending on one zkl_mutex and 2 taking uncontended ones. Nothing is
 * printed; the tree is removed.
 */
void bu_server_warmup(const char *connect, double seconds);

/* Silence, or with verbose route to stderr, zklock's and the ZooKeeper
 * client's logs (process-wide; call before opening any handle). */
void bu_logging(bool verbose);

/* A number >= min given for option opt, or exit(2) with a message naming prog. */
double bench_parse_num(const char *prog, const char *opt, const char *s, double min);

/*
 * --off LIST (lockbench_tuned, asyncbench_tuned: built with LOCKBENCH_TUNED and
 * the test build's fault hook, base/fault.h): turn those parts of the
 * in-process room off alone (seen, made, join, bell: core/engine/inproc.h;
 * eventfd: blocking waits never leave the futex hash), and write the lib's
 * name saying so ("zklock-off-PART+...-VERSION") into name. 0, or -1 with a
 * message (an unknown part, or not a tuned build).
 */
int bu_tuned_off(const char *prog, const char *list, char *name, size_t cap);

#endif
