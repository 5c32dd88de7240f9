/*
 * tuning.h - every tunable of the library in one place, as SQLite keeps its
 * limits: each with its unit, what it bounds, and where its value came from.
 * The public limits (ZKL_SESSION_TIMEOUT_MIN_MS and _MAX_MS, ZKL_NODE_DATA_MAX,
 * ZKL_SEMAPHORE_MANY_MAX, ZKL_CONF_WAIT_MS, ZKL_CLIENT_NAME_MAX) are in the
 * public headers, and the protocol's own sizes (ZKL_PATH_MAX, Curator's
 * sequence digits and prefix) beside the code that reads them, and uthash's
 * first table size in base/hash.h (it must follow uthash's own definition;
 * measured there).
 */
#ifndef ZKL_BASE_TUNING_H
#define ZKL_BASE_TUNING_H

/* ---- the client ---- */

/* Connection events queued for the state callback (events): past this, the
 * oldest goes; only a callback stuck for this many events is behind. */
/* Not measured: a guess. */
#define ZKL_EVQ_MAX 64
/* The worker's idle wake-up (us): a safety net, every phase saying when it is
 * next due. At 1 s, 1024 clients in one process spent 77 ms of CPU a second
 * idle (93 us a second a client; 18 with the net at 60 s). */
#define ZKL_WORKER_IDLE_US 10000000
/* How long zkl_client_close waits for the ZooKeeper handle to close (ms):
 * a round trip against ZooKeeper; a server that is not ZooKeeper can keep
 * libzookeeper_mt's I/O thread in a blocking recv (3.8.0 leaves tv_usec
 * unset), and the rest then finishes in the background. */
/* Not measured: a guess, a round trip of a loaded server and then some. */
#define ZKL_CLOSE_WAIT_MS 2000
/* Blocking waits leave the futex hash (sleep on eventfds, session/sleep.c) from
 * this many clients in the process, without a private futex hash... */
#define ZKL_MANY_CLIENTS 128
/* ... or from this many a chain of the process's private hash (Linux 6.16+):
 * three threads sleep per blocked waiter (it, its worker, and its poller).
 * Measured level at 64
 * sessions; about 8% more CPU at 16; at 1024 sessions on 4 lines, condition
 * variables instead ran 0.76 of the rate (docs/design/scale-log.md,
 * 2026-11-27). */
#define ZKL_MANY_CLIENTS_PER_SLOT 3
/* The largest request a ZooKeeper server reads (bytes, after the 4-byte
 * length): its jute.maxbuffer, a Java system property no four-letter word
 * or client call reports, 0xfffff by default (NIOServerCnxn's readLength;
 * 3.8.0). A larger one is not applied: the server closes the connection.
 * A guarded write is checked against it before it is sent
 * (core/engine/guarded.c); a single create cannot exceed it
 * (ZKL_NODE_DATA_MAX). */
#define ZKL_SERVER_REQUEST_MAX 0xfffff
/* The longest `conf` reply read (bytes): 3.8's is under 1 KiB with a
 * membership list of a few servers. */
#define ZKL_CONF_REPLY_MAX 8192
/* Times the chroot is made again from the top when an ancestor made or found
 * a moment before is gone (services/chroot.c): an empty container the
 * server reaped, or another client's delete. Each time needs a delete in a
 * window of one round trip; the acquire's deadline bounds them too. */
/* Not measured: a guess; no test has needed more than one. */
#define ZKL_CHROOT_RESTARTS 5

/* How long zkl_client_close lets released nodes' deletes land before it
 * closes the handle (ms): a round trip, or a connection-loss completion,
 * comes well within it. Not measured: a guess, two round trips of a
 * loaded ensemble and then some. */
#define ZKL_CLOSE_DRAIN_MS 2000
/* A new session that could not be made (no memory, no handle) is tried
 * again after this (ms). Not measured: a guess; the failure is rare and
 * the retry cheap. */
#define ZKL_SESSION_REOPEN_MS 500
/* The first pause of the background retries (zkl__retry_delay_ms, ms),
 * doubled per failure up to the caller's cap: the deletes of
 * services/cleanup.c. Not measured: a guess, a round trip's order. */
#define ZKL_RETRY_FIRST_MS 50

/* ---- the st transport (session/transport.c) ---- */

/* Handles the poller polls in one round (a client's live sessions: one,
 * two while a new session replaces the old); the rest wait a round. */
#define ZKL_POLL_HANDLES_MAX 8

/* The poller's longest sleep (ms) when no handle asks for sooner: a safety
 * net, every handle's zookeeper_interest saying when it is next due. */
/* Not measured: a guess. */
#define ZKL_POLLER_MAX_SLEEP_MS 1000
/* ... and while a handle has no socket yet (connecting between servers). */
/* Not measured: a guess, shorter than any connect. */
#define ZKL_POLLER_NO_SOCKET_MS 50
/* A session's events deferred at once without allocating: the poller
 * delivers after every zookeeper_process, which reports one or two; past
 * this an event's delivery is allocated. */
/* Not measured: a guess, four times what one round reports. */
#define ZKL_SESSION_EVENTS_HELD 8
/* A data reply copied without allocating (bytes), for a completion run
 * after the handle is let go (requests/calls.c): at least the revocation
 * marker's length. */
/* Not measured: the revocation marker fits (a static assert in services/revoke.c). */
#define ZKL_TRAMP_VALUE_INLINE 32
/* A pumped handle's (the chroot maker's) longest sleep (ms). */
/* Not measured: a guess. */
#define ZKL_PUMP_MAX_SLEEP_MS 50

/* ---- requests ---- */

/* Slots of a session's shared-listing table (requests/pending.c), by path hash. */
/* Not measured: a guess; a session waits on a few paths at once. */
#define ZKL_LIST_SLOTS 16
/* A listing's block from this size (bytes) is mapped on its own, not taken
 * from malloc: the delivering threads' arenas pinned freed blocks' pages, and a
 * line of 1000 waits over 64 sessions kept about 1.5 KB of RSS a wait more. */
#define ZKL_NAMES_MAP_MIN (16 * 1024)
/* Held-back deletes one create's multi may carry. */
/* Not measured: a guess; a release is held back at most a millisecond, so
 * more than a few rarely wait. */
#define ZKL_MULTI_MAX 8
/* The least time an acquire's calls get (ms), whatever its timeout. */
/* Not measured: a guess, a round trip of a loaded server and then some. */
#define ZKL_CALL_MIN_MS 1000
/* How long an acquire that gives up waits for its own node's delete (ms)
 * before the worker takes it over (core/engine/grant.c). Not measured: a
 * guess, a round trip of a loaded server and then some. */
#define ZKL_GIVE_UP_DELETE_MS 2000
/* Parents an acquire makes (as containers) before it gives up: levels of
 * one path (a path has at most ZKL_PATH_MAX / 2)... */
#define ZKL_PARENT_LEVELS_MAX 1024
/* ... and times the parents are made again because an acquire's create
 * still found one missing (a container reaped, another client's delete). */
#define ZKL_PARENT_TRIES 10

/* Lock nodes one guarded write checks, at most (a multilock's members):
 * each check is an op of one multi. Not measured: a guess. */
#define ZKL_GUARD_CHECKS_MAX 64

/* ---- the engine (core/engine/engine.c) ---- */

/* Operations run in one turn of the worker's engine phase: the rest are
 * left for the next turn, so a burst of ready operations does not hold off
 * the worker's other phases (the lease's renewal). Not measured: a guess. */
#define ZKL_ENGINE_TURN_OPS 64
/* The deadline heap's first size (entries), doubled as it fills. */
#define ZKL_ENGINE_HEAP_FIRST 64

/* ---- releases ---- */

/* How long a release may hold its delete back for a next create of this
 * client to carry (us): an uncontended hold's... */
#define ZKL_HOLD_BACK_ALONE_US 1000
/* ... and a hold with others in line, whom every microsecond keeps waiting. */
/* Not measured as values: a guess each. That the hold-back pays is measured
 * in benchmarks/README.md (lockbench's hand-off rows, the hold-back on and
 * off). */
#define ZKL_HOLD_BACK_CONTENDED_US 100

/* ---- the in-process room (core/engine/inproc.c, core/engine/wait.c) ---- */

/* Grants remembered per line: a waiter asks about the node two places ahead
 * of its own when that node goes, a grant or two later. The ring starts at
 * 2 and doubles up to this (80 bytes an entry): a process that holds a
 * thousand locks on as many paths pays for one or two each (lockbench's
 * memory workload: 5.4 kB a held lock with 32 each, 2.1 with the ring and
 * uthash's tables grown on demand, 2026-11-27). */
#define ZKL_INPROC_GRANTS 32
/* Nodes made remembered per line (about 200 bytes each, freed with the
 * line's last acquire): a line of a thousand waiters of this process, and
 * some. The oldest noted goes first, ringing its waiter's bell. */
/* Not measured: a guess, sized for lockbench's lines of 1000. */
#define ZKL_INPROC_MADE 4096
/* Nodes made that a line keeps in a list, searched one by one, before it
 * makes them a hash by sequence: a hash's table and buckets are 128 bytes
 * more for a line (asyncbench pending: a wait on each of 10,000 paths, one
 * note each, 2026-11-29), and a search of this many is a few compares. */
/* Not measured: a guess (the compares). */
#define ZKL_INPROC_MADE_LISTED 8
/* How long a joiner awaits the note of the node ahead of it (ms): in a burst
 * of 1024 sessions on 2 CPUs notes came a few hundred ms late; at 100 ms, 38
 * to 168 joiners a burst still listed, at 500 none. It pays in the burst's
 * p99: 1.21 of the p50 at 1024 sessions, 1.35 without it (2026-11-27). */
#define ZKL_JOIN_AWAIT_MS 500

/* ---- the observer (recipes/inspect.c) ---- */

/* Listings zkl_leader_get takes when one shows participants but no leader:
 * its head was deleted between the listing and the read of it (a hand-off;
 * 2 of 600 samples in a busy election came so), or a child not a
 * participant's is in the way (then every listing says so, and the answer is
 * no leader after these). */
#define ZKL_OBSERVE_RELISTS 5

/* ---- the lease (services/lease.c, docs/lease.md) ---- */

/* The default lease margin is T / ZKL_LEASE_MARGIN_DIV + ZKL_LEASE_MARGIN_MS,
 * at most T / 4 (option lease_margin_ms overrides it): room for the
 * clock's and the scheduler's lateness between a reply and the holder's
 * stop. At T = 2 s the holder stopped 679 to 875 ms before its expiry in
 * the partition rounds (docs/RELIABILITY.md, "Partitions: exclusion on the
 * clock"). */
#define ZKL_LEASE_MARGIN_DIV 10
#define ZKL_LEASE_MARGIN_MS 200
/* A renewal still in flight, or not sent, is looked at again after this
 * (ms). Not measured: a guess, well under any lease's room. */
#define ZKL_LEASE_RETRY_MS 100

/* ---- metrics ---- */

/* Series of gone lock objects kept per client (core/objects/series.h). */
/* Not measured: a guess. */
#define ZKL_SERIES_KEPT 256

/* ---- recipes ---- */

/* How long zkl_latch_destroy waits for the report of the wait it canceled
 * (ms), so that the latch is freed before it returns: a delete on the way,
 * answered within a round trip, or the connection's loss. Past it, the last
 * report frees the latch (recipes/latch.c). */
/* Not measured: a guess, the default session timeout. */
#define ZKL_LATCH_SETTLE_MS 10000
/* The same for zkl_observer_destroy (ms): its steps end within a round trip
 * of the cancel, or at the connection's loss (recipes/observe.c). Not
 * measured: the latch's bound, for the same reason. */
#define ZKL_OBSERVER_SETTLE_MS 10000
/* The longest back-off zkl_latch_yield takes (ms): an hour, past which a
 * leader that means to stay out should leave instead. */
#define ZKL_LATCH_BACKOFF_MAX_MS 3600000
/* How often a blocked zkl_latch_await looks at its lease (ms): a lease
 * that runs out turns leadership off with no signal. Not measured: a
 * guess; it bounds how late await notices, not the leader's stop. */
#define ZKL_LATCH_LOOK_MS 100
/* Locks one multilock takes at most. Not measured: a bound on the
 * caller's array, far above any use seen. */
#define ZKL_MULTILOCK_MAX 1024

#endif
