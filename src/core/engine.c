/*
 * engine.c - what the steps of an acquire share (engine.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/util.h"
#include "core/engine.h"

void zkl__own_free(zkl__own *o)
{
    free(o->node);
    zkl__names_free(&o->kids);
    memset(o, 0, sizeof *o);
}

int64_t zkl__session_id(zkl__session *s)
{
    int64_t id;
    pthread_mutex_lock(&s->c->mu);
    id = s->id;
    pthread_mutex_unlock(&s->c->mu);
    return id;
}

zkl_status zkl__gave_up(zkl_client *c, const zkl__acquire_args *a, const char *doing)
{
    if (zkl__canceled(c))
        return zkl__fail(ZKL_ECANCELED, "%s %s was canceled", doing, a->path);
    if (zkl__now_ms() >= a->deadline)
        return zkl__fail(ZKL_ETIMEDOUT, "timed out %s %s%s", doing, a->path, zkl__conn_note(c));
    return zkl__fail(ZKL_ECONNLOSS, "connection lost %s %s", doing, a->path);
}
