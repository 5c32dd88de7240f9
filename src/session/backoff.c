/*
 * backoff.c - the retry backoff every retry shares: exponential from
 * retry_base_ms to retry_max_ms. A wait (an acquire) retries until its own
 * deadline; a call without a deadline of its own (a request, whose deadline
 * is the client's connect timeout) at most retry_max times (client.h says
 * what the options bound).
 */
#include <errno.h>
#include <pthread.h>

#include "base/util.h"
#include "session/client.h"

/* The next backoff's end: exponential, at most retry_max_ms, at most deadline. */
static int64_t backoff_end(zkl_client *c, int *attempt, int64_t deadline)
{
    int64_t delay, until;
    delay = (int64_t)c->cfg.opts.retry_base_ms << (*attempt < 20 ? *attempt : 20);
    if (delay > c->cfg.opts.retry_max_ms)
        delay = c->cfg.opts.retry_max_ms;
    (*attempt)++;
    until = zkl__now_ms() + delay;
    return until > deadline ? deadline : until;
}

/* A wait rides out an outage until its deadline (for ever: as long as its
 * session may live; a lost one is replaced, and the wait queues again
 * there), at retry_max_ms apart at most (issue 57, item 6: a finite wait
 * stopped at retry_max, long before its deadline). */
bool zkl__backoff_until(zkl_client *c, int *attempt, int64_t deadline, int64_t *until)
{
    if (zkl__now_ms() >= deadline)
        return false;
    *until = backoff_end(c, attempt, deadline);
    return true;
}

bool zkl__backoff(zkl_client *c, int *attempt, int64_t deadline)
{
    int64_t until;
    uint64_t gen;
    bool canceled;
    /* a request: at most retry_max tries, unless it waits for ever */
    if (*attempt >= c->cfg.opts.retry_max && deadline != INT64_MAX)
        return false;
    until = backoff_end(c, attempt, deadline);
    pthread_mutex_lock(&c->mu);
    gen = c->conn.state_gen;
    while (!c->closing && !c->canceled && c->conn.state_gen == gen) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, until) == ETIMEDOUT)
            break;
    }
    canceled = c->canceled;
    pthread_mutex_unlock(&c->mu);
    return !canceled && zkl__now_ms() < deadline;
}
