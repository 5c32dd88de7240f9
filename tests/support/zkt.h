/*
 * zkt.h - helpers for the integration tests: where the test server is, fresh
 * lock paths, a raw ZooKeeper handle to inspect znodes, forced session
 * expiry, and the core's test-only fault hooks.
 */
#ifndef ZKT_H
#define ZKT_H

#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "base/fault.h"
#include "zklock/zklock.h"

/*
 * The check of a zklock call that must succeed: ok(call, "what it does"),
 * or OK(call), which names the call itself. A failure names it, the status
 * and the thread's message, at the caller's file and line.
 */
#define ok(st, what) zkt_ok_at((st), (what), __FILE__, __LINE__)
#define OK(expr) zkt_ok_at((expr), #expr, __FILE__, __LINE__)
void zkt_ok_at(zkl_status st, const char *what, const char *file, int line);

/* Connect string of the test server (ZKL_TEST_SERVERS, else $ZKL_TEST_ZK_DIR/connect). */
const char *zkt_servers(void);

/* A client with the given session timeout (0: 4000 ms); asserts on failure. */
zkl_client *zkt_client(int session_timeout_ms);
zkl_client *zkt_client_cb(int session_timeout_ms, zkl_state_fn fn, void *ud);

/* A unique lock path "/zkltest/<what>-<pid>-<counter>-<random>" (malloc'd). */
char *zkt_path(const char *what);

/*
 * Create path (from zkt_path) with the given mode, and /zkltest above it if
 * need be. /zkltest may be a container the library made, which the server's
 * reaper removes once empty, even between the two creates: then both are
 * made again. Returns the zoo_create rc of path.
 */
int zkt_make_path(zhandle_t *zh, const char *path, int mode);

/* A raw, connected ZooKeeper handle for checks from outside zklock. */
zhandle_t *zkt_raw(void);
/* Number of children of path (0 if it does not exist). */
int zkt_children(zhandle_t *zh, const char *path);
/*
 * The same, after waiting up to 10 s for it to become `want`: a release
 * returns before the server has applied its delete, so another handle may
 * still see the node for a moment. A count that never settles is returned
 * as it is, and the assertion fails.
 */
int zkt_children_settle(zhandle_t *zh, const char *path, int want);
/* The full path of the lock node i-th in line under path (0: the head), by
 * the sequence at its name's end (malloc'd); fails the test if there is none. */
char *zkt_child_in_line(zhandle_t *zh, const char *path, int i);
/*
 * Wait until c has sent no request for 300 ms (it has listed and armed its
 * watches: a fixed sleep is too short under valgrind) and return its request
 * count. Fails the test if it never goes quiet within 15 s.
 */
/* The client's requests less the lease's own syncs (renewals come every T/3
 * while anything is held or wanted: not requests of the lock). */
uint64_t zkt_lock_requests(zkl_client *c);
/* The syncs c's lease has sent (renewals, and checks before a grant). */
uint64_t zkt_lease_syncs(zkl_client *c);
/* The listings c has sent (its requests of kind "list"). */
uint64_t zkt_list_requests(zkl_client *c);
/* The exists requests c has sent (a token asked for after a create that rode in a multi). */
uint64_t zkt_exists_requests(zkl_client *c);
/* Wait until c sends no lock request for 300 ms; its zkt_lock_requests then. */
uint64_t zkt_requests_settle(zkl_client *c);

/*
 * A path the server will not hold lock nodes under: a mutex acquire on path,
 * and on path/sub/lock below it, fails with want well within its 20 s
 * timeout, its message naming path (and saying why, if why is not NULL);
 * nothing is held, and no node is left under path.
 */
void zkt_refused_at_once(zkl_client *c, zhandle_t *zh, const char *path, zkl_status want,
                         const char *why);

/* Expire c's current session on the server (open a second handle on it, close it). */
void zkt_expire(zkl_client *c);
/* The same, then wait until c itself has seen that session end. */
void zkt_expire_seen(zkl_client *c);

/* The library's fault hook (src/base/fault.h), answered by tests/support/faults.c:
 * set site of c to value (a fault's count or amount; a tunable's value, -1: as built). */
void zkt_fault_set(zkl_client *c, zkl__fault_site site, int value);
/* Shorthands of it. */
void zkt_fault_create_reply_lost(zkl_client *c, int n);
void zkt_fault_create_send_lost(zkl_client *c, int n);
void zkt_fault_create_lands_late(zkl_client *c, int n);
/* Threads queued behind a local holder in this process so far (any cohort), and
 * a wait (bounded) until more than more_than have: in place of a sleep that a
 * loaded machine outlasts. */
unsigned long zkt_cohort_queued(void);
bool zkt_wait_cohort_queued(unsigned long more_than, int timeout_ms);
void zkt_fault_next_uuid(zkl_client *c, const char *uuid);
void zkt_fault_delete_lost(zkl_client *c, int n);
void zkt_fault_bg_delete_lost(zkl_client *c, int n);
/* c's waits never hear their bells (core/engine/inproc.h): a deferred watch on a waiter's own node
 * is never set. */
void zkt_fault_deaf_bells(zkl_client *c);
/* A joiner of c awaits the note of the node ahead (core/engine/wait.c, await_note) at most ms. */
void zkt_fault_await_ms(zkl_client *c, int ms);
/* A waiter of c sleeps ms, on its acquiring thread, before its node is noted made (inproc.h). */
void zkt_fault_note_delay(zkl_client *c, int ms);
/* zkl_client_dispatch on c pauses us microseconds between reading the descriptor and taking
 * the queue of reports (the window of a lost wake-up). */
void zkt_fault_dispatch_pause(zkl_client *c, int us);
/* Tell c's callbacks a connection event st of its current session, as if the session watcher
 * had seen it (the session itself is untouched): the worker runs on_state and the listeners. */
void zkt_state_event(zkl_client *c, zkl_conn_state st);
/* Reports queued on c for zkl_client_dispatch (descriptor delivery), not yet taken. */
int zkt_reports_queued(zkl_client *c);
/* c's worker and blocking acquires sleep on condition variables, as when no eventfd can be made. */
void zkt_fault_sleep_on_cv(zkl_client *c);
/* Blocking waits sleep on eventfds from n clients in the process on (0: always; -1: the
 * library's own threshold: 3 clients a slot of the futex hash, session/client.h). */
void zkt_many_clients_from(int n);
/* The client count from which blocking waits sleep on eventfds now. */
int zkt_many_clients_threshold(void);
/* Run fn(c, arg) once, on c's worker, right after an async handle's outcome is settled
 * (before it is delivered). */
void zkt_fault_after_settle(zkl_client *c, void (*fn)(zkl_client *, void *), void *arg);
/* Run fn(c, arg) once, on the acquiring thread, right after the next listing of a wait. */
void zkt_fault_after_list(zkl_client *c, void (*fn)(zkl_client *, void *), void *arg);
/* Run fn(c, arg) once, on the thread making c's chroot, right after its ancestor part was
 * made or found, before the next is sent. */
void zkt_fault_after_chroot_part(zkl_client *c, const char *part, void (*fn)(zkl_client *, void *),
                                 void *arg);
/* Delay c's session watcher by ms before it records a disconnect or expiry (0: none). */
void zkt_fault_session_event_delay(zkl_client *c, int ms);
/* Hold a release's delete back us microseconds, contended or alone (0: the defaults). */
void zkt_defer_window(zkl_client *c, int us);
/* How many times c's worker has woken from a sleep, for any reason. */
uint64_t zkt_worker_wakes(zkl_client *c);

/* Freeze (SIGSTOP) or thaw (SIGCONT) the test server, by the pid its script recorded. */
void zkt_server_freeze(void);
void zkt_server_thaw(void);

/* Wait until cond() is true or ms pass; returns its last value. */
int zkt_wait_for(int (*cond)(void *), void *arg, int ms);
int64_t zkt_now_ms(void);
void zkt_sleep_ms(int ms);
/* ZKT_LOG=N (a zkl_log_level): the library's and the C client's log on stderr. */
void zkt_log_from_env(void);

#endif
