/*
 * chroot.h - the connect string's chroot, made on first use (see chroot.c),
 * by a job that never blocks its caller.
 *
 * Lifecycle: the thread that runs an acquire's steps starts the job, polls
 * it, and ends it (also when it gives up early); nothing else touches it.
 * notify(arg) comes on ZooKeeper's threads whenever a poll may have news,
 * never after zkl__chroot_end returns; it may take the client's c->mu, so
 * none of these is called with c->mu held.
 */
#ifndef ZKL_CHROOT_H
#define ZKL_CHROOT_H

#include <stdbool.h>
#include <stdint.h>

#include "session/client.h"

typedef struct zkl__chroot_job zkl__chroot_job;

/* The chroot of a connect string ("/app" of "h:1/app"), or NULL if none. */
const char *zkl__chroot_of(const char *connect);

/*
 * Start making c's chroot and its missing ancestors as persistent nodes
 * with c's ACL, through a handle without the chroot, which must connect
 * within a connect timeout (and by deadline, a zkl__now_ms() time, as must
 * every create). ZKL_OK and *out, or a failure and *out NULL.
 */
zkl_status zkl__chroot_start(struct zkl_client *c, int64_t deadline, void (*notify)(void *arg),
                             void *arg, zkl__chroot_job **out);

/*
 * Take the job as far as it goes now. true: finished, with *st ZKL_OK if
 * the chroot exists, else a status whose message names the chroot. false:
 * poll again on notify, or at *wake (a zkl__now_ms() time; INT64_MAX: none).
 */
bool zkl__chroot_poll(zkl__chroot_job *j, zkl_status *st, int64_t *wake);

/* Let go of j (NULL: nothing): no notify after this; its handle closes on a thread of its own. */
void zkl__chroot_end(zkl__chroot_job *j);

#endif
