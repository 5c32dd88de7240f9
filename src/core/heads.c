/*
 * heads.c - see heads.h: the rings of this process's nodes in lock lines.
 *
 * DESIGN: two rings for the process (nodes made, nodes seen at the head),
 * under one mutex, held only to copy an entry in or to compare entries; no
 * other lock is taken under it, and callers may hold their client's c->mu
 * or not. Fixed size and no heap: a name too long for an entry is not
 * noted (its waiter lists, as before).
 */
#include <pthread.h>
#include <string.h>

#include "core/heads.h"

#define RING 128     /* about a fifth of a second of grants at 600 a second */
#define NAME_MAX_ 72 /* "_c_" UUID "-lock-" sequence is 55 */

typedef struct entry {
    uint64_t parent; /* FNV-1a of the parent path */
    int64_t owner;   /* the node's session */
    char name[NAME_MAX_];
} entry;

typedef struct ring {
    entry e[RING];
    unsigned next;
} ring;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ring made, held;

static uint64_t fnv(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void note(ring *r, const char *parent, const char *name, int64_t owner)
{
    size_t n = strlen(name);
    entry *e;
    if (n >= NAME_MAX_)
        return;
    pthread_mutex_lock(&mu);
    e = &r->e[r->next++ % RING];
    e->parent = fnv(parent);
    e->owner = owner;
    memcpy(e->name, name, n + 1);
    pthread_mutex_unlock(&mu);
}

/* The owner of the entry for name under parent (with that owner, unless any), 0: none. */
static int64_t seen(const ring *r, const char *parent, const char *name, int64_t owner, bool any)
{
    uint64_t h = fnv(parent);
    int64_t found = 0;
    int i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < RING && !found; i++)
        if ((any || r->e[i].owner == owner) && r->e[i].parent == h &&
            strcmp(r->e[i].name, name) == 0)
            found = r->e[i].owner;
    pthread_mutex_unlock(&mu);
    return found;
}

void zkl__heads_note(const char *parent, const char *name, int64_t owner)
{
    if (owner != 0)
        note(&held, parent, name, owner);
}

bool zkl__heads_seen(const char *parent, const char *name, int64_t owner)
{
    return owner != 0 && seen(&held, parent, name, owner, false) != 0;
}

void zkl__heads_note_made(const char *parent, const char *name, int64_t owner)
{
    if (owner != 0)
        note(&made, parent, name, owner);
}

int64_t zkl__heads_made_by(const char *parent, const char *name)
{
    return seen(&made, parent, name, 0, true);
}
