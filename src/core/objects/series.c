/*
 * series.c - see series.h.
 */
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/util.h"
#include "core/objects/series.h"

static void series_free(zkl__series *s)
{
    free(s->path);
    free(s);
}

/* The series of (path, side) on c with one more reference, or NULL if there is none; c->mu held. */
static zkl__series *take_locked(zkl_client *c, const char *path, const char *side)
{
    zkl__series *s;
    DL_FOREACH(c->tally.series, s)
    if (s->side == side && !strcmp(s->path, path)) {
        if (s->refs++ == 0)
            c->tally.series_idle--;
        return s;
    }
    return NULL;
}

zkl__series *zkl__series_get(zkl_client *c, const char *path, const char *side, unsigned traits)
{
    zkl__series *s, *made;
    pthread_mutex_lock(&c->mu);
    s = take_locked(c, path, side);
    pthread_mutex_unlock(&c->mu);
    if (s)
        return s;
    made = calloc(1, sizeof *made); /* (not under c->mu) */
    if (!made || !(made->path = strdup(path))) {
        free(made);
        return NULL;
    }
    made->side = side;
    made->traits = traits;
    made->created = zkl__unix_s();
    made->refs = 1;
    pthread_mutex_lock(&c->mu);
    if (!(s = take_locked(c, path, side))) { /* (or made meanwhile by another thread) */
        DL_APPEND(c->tally.series, made);
        c->hooks.series_free = zkl__series_free_all;
    }
    pthread_mutex_unlock(&c->mu);
    if (!s)
        return made;
    series_free(made);
    return s;
}

void zkl__series_put(zkl_client *c, zkl__series *s)
{
    zkl__series *it, *oldest = NULL;
    if (!s)
        return;
    pthread_mutex_lock(&c->mu);
    if (--s->refs == 0) {
        s->idle_since = ++c->tally.series_clock;
        c->tally.series_idle++;
    }
    if (c->tally.series_idle > ZKL_SERIES_KEPT) {
        DL_FOREACH(c->tally.series, it)
        if (it->refs == 0 && (!oldest || it->idle_since < oldest->idle_since))
            oldest = it;
    }
    if (oldest) {
        DL_DELETE(c->tally.series, oldest);
        c->tally.series_idle--;
    }
    pthread_mutex_unlock(&c->mu);
    if (oldest)
        series_free(oldest);
}

void zkl__series_free_all(zkl_client *c)
{
    zkl__stats_free_all(c); /* (tallies left by a fork()ed child's holds) */
    zkl__series *s, *tmp;
    DL_FOREACH_SAFE(c->tally.series, s, tmp)
    {
        DL_DELETE(c->tally.series, s);
        series_free(s);
    }
}
