/*
 * status.h - the one status enum of zklock, its messages, and the process-wide
 * log hook.
 *
 * Every public zkl_ call returns a zkl_status (or reports one through an out
 * parameter). zkl_strerror() gives the fixed text of a code; zkl_errmsg() gives
 * the detail of the last failure on the calling thread ("path must be absolute:
 * 'foo'"), which is what a program should print.
 */
#ifndef ZKLOCK_STATUS_H
#define ZKLOCK_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zkl_status {
    ZKL_OK = 0,
    ZKL_EINVAL = -1,     /* a NULL handle or argument, or a value out of range */
    ZKL_EBADPATH = -2,   /* a lock path that is relative, empty or malformed */
    ZKL_ENOMEM = -3,     /* out of memory */
    ZKL_ETIMEDOUT = -4,  /* the lock was not acquired within the timeout */
    ZKL_ECONNECT = -5,   /* no server answered within the connect timeout */
    ZKL_ECONNLOSS = -6,  /* the connection was lost and retries ran out */
    ZKL_ELOST = -7,      /* the session a hold belonged to is gone: the lock is lost */
    ZKL_ENOTOWNER = -8,  /* the calling thread does not hold this lock */
    ZKL_EDEADLOCK = -9,  /* could never be granted (a read-to-write upgrade), or would wait for
                          * the calling thread itself (a blocking call on the client's worker) */
    ZKL_ECLOSED = -10,   /* the client is closing or closed, or its process is a fork() child */
    ZKL_EBUSY = -11,     /* the object is still in use (held locks, open handles, threads inside
                          * a call), or the call cannot be made from inside this callback */
    ZKL_ENOAUTH = -12,   /* the server refused: not authorised by the node's ACL */
    ZKL_EAUTH = -13,     /* authentication with the server failed */
    ZKL_EZK = -14,       /* another ZooKeeper error; zkl_errmsg() names it */
    ZKL_ESYS = -15,      /* a system call failed (threads, randomness) */
    ZKL_ECANCELED = -16, /* the wait was canceled by zkl_client_cancel */
} zkl_status;

/* Fixed English text for a status; never NULL (unknown codes get a generic text). */
const char *zkl_strerror(zkl_status st);

/*
 * Detail of the most recent failure reported to the calling thread, or "" if
 * none. The string is thread-local and valid until the thread's next zkl_ call.
 */
const char *zkl_errmsg(void);

/* Levels for zkl_log_set, the same order as the ZooKeeper client's. */
typedef enum zkl_log_level {
    ZKL_LOG_OFF = 0,
    ZKL_LOG_ERROR = 1,
    ZKL_LOG_WARN = 2,
    ZKL_LOG_INFO = 3,
    ZKL_LOG_DEBUG = 4,
} zkl_log_level;

typedef void (*zkl_log_fn)(zkl_log_level level, const char *message, void *userdata);

/*
 * Route zklock's own diagnostics and the ZooKeeper C client's log to fn, for
 * messages at or above level. Process-wide, because the ZooKeeper client's
 * log level is. Default: nothing is logged anywhere. fn may be called from any
 * thread, including the ZooKeeper I/O thread, and where zklock holds its own
 * locks, so it must not block; a zklock call from inside it refuses at once
 * (ZKL_EBUSY, or false/0 where a call returns no status), but for
 * zkl_strerror, zkl_errmsg, the path getters and the frees. zkl_log_set
 * itself, called from inside the callback, changes nothing (zkl_errmsg
 * says why: it would wait for its own call).
 * Pass fn = NULL to go quiet again. Set it before opening
 * clients: handles opened earlier keep their callback but follow the level.
 *
 * When zkl_log_set returns, no call of the hook it replaced is running on
 * any thread, and none starts later: it waits for the calls already
 * running (which must not block), so the old hook's userdata may be freed
 * as soon as it returns.
 */
void zkl_log_set(zkl_log_fn fn, zkl_log_level level, void *userdata);

/* A ready-made zkl_log_fn that writes one line per message to stderr. */
void zkl_log_stderr(zkl_log_level level, const char *message, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
