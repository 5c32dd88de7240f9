/*
 * backoff.c - the retry backoff every retry shares: exponential from
 * retry_base_ms to retry_max_ms, at most retry_max tries for a wait with a
 * deadline (client.h says what the options bound).
 */
#include <errno.h>
#include <pthread.h>

#include "base/util.h"
#include "session/client.h"

bool zkl__backoff_until(zkl_client *c, int *attempt, int64_t deadline, int64_t *until)
{
    int64_t delay;
    /* A wait for ever is not bounded by the retries: it rides out an outage
     * as long as its session may live (a lost one is replaced, and the wait
     * queues again there), at retry_max_ms apart at most. */
    if (*attempt >= c->opts.retry_max && deadline != INT64_MAX)
        return false;
    delay = (int64_t)c->opts.retry_base_ms << (*attempt < 20 ? *attempt : 20);
    if (delay > c->opts.retry_max_ms)
        delay = c->opts.retry_max_ms;
    (*attempt)++;
    *until = zkl__now_ms() + delay;
    if (*until > deadline)
        *until = deadline;
    return true;
}

bool zkl__backoff(zkl_client *c, int *attempt, int64_t deadline)
{
    int64_t until;
    uint64_t gen;
    bool canceled;
    if (!zkl__backoff_until(c, attempt, deadline, &until))
        return false;
    pthread_mutex_lock(&c->mu);
    gen = c->state_gen;
    while (!c->closing && !c->canceled && c->state_gen == gen) {
        if (zkl__cond_wait_until(&c->cv, &c->mu, until) == ETIMEDOUT)
            break;
    }
    canceled = c->canceled;
    pthread_mutex_unlock(&c->mu);
    return !canceled && zkl__now_ms() < deadline;
}
