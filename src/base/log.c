/*
 * log.c - one process-wide log hook for zklock and the ZooKeeper C client.
 * The ZooKeeper client's level is global and its per-handle callback gets no
 * context, so the hook is global too; the default is silence.
 *
 * DESIGN
 *
 * A swap waits for the calls it replaces: emit() copies the hook and counts
 * itself in (calls) under log_mu, calls the hook holding nothing, and
 * counts itself out, waking a waiting swap (drained) when it was the last.
 * zkl_log_set installs the new hook, then waits until no call of an older
 * hook runs; a call that starts after the swap copies the new one, so the
 * wait ends. Each hook gets an era (the swap's number): only calls of an
 * older era hold a swap back. From inside the callback zkl_log_set refuses
 * (it would wait for itself, or for another thread's callback that waits
 * for it). Lock order: log_mu is a leaf; the hook runs outside it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

#include "base/log.h"
#include "base/status.h"

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drained = PTHREAD_COND_INITIALIZER; /* a call of an old era ended */
static zkl_log_fn log_fn;
static void *log_ud;
static zkl_log_level log_level = ZKL_LOG_OFF;
/* under log_mu: swaps so far (the current hook's era), the calls running
 * now, and how many of them are of an older era than the current one */
static uint64_t era, running, old_running;
static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

static void go_quiet(void)
{
    zoo_set_debug_level((ZooLogLevel)0);
}

void zkl__log_init(void)
{
    pthread_once(&quiet_once, go_quiet);
}

static _Thread_local int in_log; /* this thread runs the log callback */

void zkl_log_set(zkl_log_fn fn, zkl_log_level level, void *userdata)
{
    if (in_log) { /* (it would wait for its own call: nothing changes) */
        (void)zkl__fail(ZKL_EBUSY, "zkl_log_set: called from inside the log callback, which "
                                   "must return before its hook can be replaced; nothing changed");
        return;
    }
    zkl__log_init();
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_ud = userdata;
    log_level = fn ? level : ZKL_LOG_OFF;
    era++;
    old_running = running; /* every call running now is of an older hook */
    while (old_running > 0)
        pthread_cond_wait(&drained, &log_mu);
    pthread_mutex_unlock(&log_mu);
    zoo_set_debug_level((ZooLogLevel)(fn ? level : 0));
}

void zkl_log_stderr(zkl_log_level level, const char *message, void *userdata)
{
    static const char *names[] = {"", "ERROR", "WARN", "INFO", "DEBUG"};
    (void)userdata;
    fprintf(stderr, "zklock %s: %s\n", (level >= 1 && level <= 4) ? names[level] : "?", message);
}

bool zkl__in_log(void)
{
    return in_log > 0;
}

zkl_status zkl__log_refuse(const char *fn)
{
    return zkl__fail(ZKL_EBUSY,
                     "%s: called from inside the log callback, which may run where zklock holds "
                     "its own locks; act on the message from another thread",
                     fn);
}

static void emit(zkl_log_level level, const char *msg)
{
    zkl_log_fn fn;
    void *ud;
    uint64_t mine;
    pthread_mutex_lock(&log_mu);
    fn = level <= log_level ? log_fn : NULL;
    ud = log_ud;
    mine = era;
    if (fn)
        running++;
    pthread_mutex_unlock(&log_mu);
    if (!fn)
        return;
    in_log++;
    fn(level, msg, ud);
    in_log--;
    pthread_mutex_lock(&log_mu);
    running--;
    if (mine != era && --old_running == 0)
        pthread_cond_broadcast(&drained);
    pthread_mutex_unlock(&log_mu);
}

void zkl__log(zkl_log_level level, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    if (level > log_level) /* racy read is fine: emit() checks again */
        return;
    // NOLINTBEGIN(clang-analyzer-valist.Uninitialized): as in zkl__fail (base/status.c)
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    // NOLINTEND(clang-analyzer-valist.Uninitialized)
    emit(level, buf);
}

/* The ZooKeeper client formats "date:pid(0x..):ZOO_LEVEL@func@line: msg". */
void zkl__zk_log_trampoline(const char *message)
{
    zkl_log_level level = ZKL_LOG_DEBUG;
    size_t n;
    char buf[1024];
    if (strstr(message, "ZOO_ERROR"))
        level = ZKL_LOG_ERROR;
    else if (strstr(message, "ZOO_WARN"))
        level = ZKL_LOG_WARN;
    else if (strstr(message, "ZOO_INFO"))
        level = ZKL_LOG_INFO;
    n = strlen(message);
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, message, n);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        n--;
    buf[n] = '\0';
    emit(level, buf);
}
