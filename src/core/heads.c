/*
 * heads.c - see heads.h: the ring of nodes seen at the head of their line.
 *
 * DESIGN: one ring for the process, under its own mutex, held only to copy
 * an entry in or to compare entries; no other lock is taken under it, and
 * callers may hold their client's c->mu or not. Fixed size and no heap: a
 * name too long for an entry is not noted (its waiter lists, as before).
 */
#include <pthread.h>
#include <string.h>

#include "core/heads.h"

#define RING 128     /* about a fifth of a second of grants at 600 a second */
#define NAME_MAX_ 72 /* "_c_" UUID "-lock-" sequence is 55 */

typedef struct entry {
    uint64_t parent; /* FNV-1a of the parent path */
    int64_t owner;
    char name[NAME_MAX_];
} entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry ring[RING];
static unsigned next;

static uint64_t fnv(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void zkl__heads_note(const char *parent, const char *name, int64_t owner)
{
    size_t n = strlen(name);
    entry *e;
    if (n >= NAME_MAX_ || owner == 0)
        return;
    pthread_mutex_lock(&mu);
    e = &ring[next++ % RING];
    e->parent = fnv(parent);
    e->owner = owner;
    memcpy(e->name, name, n + 1);
    pthread_mutex_unlock(&mu);
}

bool zkl__heads_seen(const char *parent, const char *name, int64_t owner)
{
    uint64_t h = fnv(parent);
    bool seen = false;
    int i;
    if (owner == 0)
        return false;
    pthread_mutex_lock(&mu);
    for (i = 0; i < RING && !seen; i++)
        seen = ring[i].owner == owner && ring[i].parent == h && strcmp(ring[i].name, name) == 0;
    pthread_mutex_unlock(&mu);
    return seen;
}
