/*
 * inproc.c - see inproc.h: one record per line, in a table of the
 * process's live lines.
 *
 * DESIGN: the table (by server path) has its own mutex, held only to find,
 * make or free a record. A record has a mutex of its own, held to note, to
 * compare, and to ring a bell or an await: their functions take the
 * waiter's c->mu under it, so the lock order is table, or record, then a
 * client's (never the table and a record together). A record knows:
 *   - the last ZKL_INPROC_GRANTS grants (a ring, by name and owner);
 *   - the nodes made here and waiting, in the order noted (a list) and, past
 *     ZKL_INPROC_MADE_LISTED of them, by sequence (a hash), with the bell of
 *     each node's waiter; at most ZKL_INPROC_MADE, the oldest noted goes
 *     first (a waiter whose note went lists, or watches, as before);
 *   - who noted a node last, the last sequence granted, this process's
 *     creates in flight, and the joiners awaiting a note (a hash by the
 *     sequence awaited).
 * A name too long for an entry is not noted. After fork(), the child
 * forgets everything (its records hold the parent's nodes) but keeps the
 * records, which the forked clients' acquires still reference.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "base/hash.h" /* an add without memory loses only a hint */
#include "base/tuning.h"
#include "core/engine/inproc.h"

#define NAME_MAX_ 72 /* "_c_" UUID "-lock-" sequence is 55 */

typedef struct grant_note {
    int64_t owner; /* 0: empty */
    char name[NAME_MAX_];
} grant_note;

typedef struct made_note {
    int32_t seq; /* the key */
    bool granted;
    int64_t owner;
    zkl__bell_fn bell; /* its waiter's bell, if it asked for one */
    void *bell_c, *bell_waiter;
    UT_hash_handle hh;
    struct made_note *prev, *next; /* in the order noted */
    char name[];                   /* (as long as the name: a note a wait in a line of one) */
} made_note;

typedef struct await_note {
    int32_t seq; /* the node awaited; the key */
    zkl__bell_fn fn;
    void *c, *waiter;
    UT_hash_handle hh;
    struct await_note *next; /* forget_all's list */
} await_note;

struct zkl__inproc {
    char *key; /* the server path */
    int refs;  /* under the table's mutex */
    pthread_mutex_t mu;
    /* the ring of the last grants: made at the first, doubled as it fills
     * up to ZKL_INPROC_GRANTS (most lines have one holder at a time, and a
     * process may hold a thousand of them) */
    grant_note *grants;
    unsigned grants_cap, next_grant;
    /* the notes in the order noted, and (made: NULL until there are more
     * than ZKL_INPROC_MADE_LISTED) the same by seq */
    made_note *made, *made_order;
    size_t nmade;
    await_note *awaits;
    int64_t last_owner; /* who noted a node made last */
    int objects;        /* the process's lock objects on the line (zkl__inproc_object) */
    int creates;        /* this process's creates in flight */
    UT_hash_handle hh;
};

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl__inproc *table;
static size_t live;

/*
 * Every await of p, out of its table and on a list (by next) for the caller
 * to tell or free: the table's buckets go first, then each element, so that
 * no element is freed while the table still links it. Caller holds p->mu.
 */
static await_note *take_awaits_locked(zkl__inproc *p)
{
    await_note *a, *list = NULL;
    for (a = p->awaits; a; a = a->hh.next) {
        a->next = list;
        list = a;
    }
    HASH_CLEAR(hh, p->awaits);
    return list;
}

/* Everything p knew, forgotten (p->mu held, or not yet shared). */
static void forget_all(zkl__inproc *p)
{
    made_note *m, *mt, *order = p->made_order;
    await_note *a, *list = take_awaits_locked(p);
    HASH_CLEAR(hh, p->made); /* as the awaits: the table first, then its elements */
    DL_FOREACH_SAFE(order, m, mt)
    {
        free(m);
    }
    while ((a = list)) {
        list = a->next;
        free(a);
    }
    p->made_order = NULL;
    p->nmade = 0;
    free(p->grants);
    p->grants = NULL;
    p->grants_cap = p->next_grant = 0;
    p->last_owner = 0;
    p->creates = 0;
}

/* In a fork()ed child: every note is the parent's, and a mutex may be held by a thread not here. */
static void fork_child(void)
{
    zkl__inproc *p, *t;
    pthread_mutex_init(&table_mu, NULL);
    for (p = table; p; p = t) {
        t = p->hh.next;
        pthread_mutex_init(&p->mu, NULL);
        forget_all(p);
    }
}

static void install_fork_child(void)
{
    (void)pthread_atfork(NULL, NULL, fork_child);
}

/* The record of line abs (n bytes), found or made, with a reference. */
static zkl__inproc *get(const char *abs, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    zkl__inproc *p;
    (void)pthread_once(&once, install_fork_child);
    pthread_mutex_lock(&table_mu);
    HASH_FIND(hh, table, abs, n, p);
    if (!p && (p = calloc(1, sizeof *p)) && (p->key = malloc(n + 1))) {
        memcpy(p->key, abs, n + 1);
        pthread_mutex_init(&p->mu, NULL);
        HASH_ADD_KEYPTR(hh, table, p->key, n, p);
        if (p->hh.tbl) {
            live++;
        } else { /* no memory for the table */
            pthread_mutex_destroy(&p->mu);
            free(p->key);
            p->key = NULL;
        }
    }
    if (p && !p->key) {
        free(p);
        p = NULL;
    }
    if (p)
        p->refs++;
    pthread_mutex_unlock(&table_mu);
    return p;
}

zkl__inproc *zkl__inproc_get(const char *chroot, const char *path)
{
    size_t n = chroot ? strlen(chroot) : 0, m = strlen(path);
    zkl__inproc *p;
    char *abs;
    if (!chroot)
        return get(path, m);
    if (!(abs = malloc(n + m + 1)))
        return NULL;
    memcpy(abs, chroot, n);
    memcpy(abs + n, path, m + 1);
    p = get(abs, n + m);
    free(abs);
    return p;
}

void zkl__inproc_put(zkl__inproc *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&table_mu);
    if (--p->refs > 0) {
        pthread_mutex_unlock(&table_mu);
        return;
    }
    HASH_DEL(table, p);
    live--;
    pthread_mutex_unlock(&table_mu);
    forget_all(p); /* no reference left: no one else holds p->mu */
    pthread_mutex_destroy(&p->mu);
    free(p->key);
    free(p);
}

void zkl__inproc_object(zkl__inproc *p, int delta)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->objects += delta;
    pthread_mutex_unlock(&p->mu);
}

size_t zkl__inproc_noted(zkl__inproc *p)
{
    size_t n = 0;
    if (p) {
        pthread_mutex_lock(&p->mu);
        n = p->nmade;
        pthread_mutex_unlock(&p->mu);
    }
    return n;
}

size_t zkl__inproc_count(void)
{
    size_t n;
    pthread_mutex_lock(&table_mu);
    n = live;
    pthread_mutex_unlock(&table_mu);
    return n;
}

/* The note of node seq, or NULL. Caller holds p->mu. */
static made_note *made_locked(zkl__inproc *p, int32_t seq)
{
    made_note *m = NULL;
    if (seq < 0)
        return NULL;
    if (p->made)
        HASH_FIND_INT(p->made, &seq, m);
    else
        DL_SEARCH_SCALAR(p->made_order, m, seq, seq);
    return m;
}

/*
 * The notes by seq too, once there are more than a short list's: false if
 * there was no memory for the table (the notes stay a list, found one by
 * one). Caller holds p->mu.
 */
static bool made_hashed_locked(zkl__inproc *p)
{
    made_note *m;
    DL_FOREACH(p->made_order, m)
    {
        HASH_ADD_INT(p->made, seq, m);
        if (!m->hh.tbl) {
            HASH_CLEAR(hh, p->made);
            return false;
        }
    }
    return true;
}

static void unmade_locked(zkl__inproc *p, made_note *m)
{
    if (p->made) /* (the last one out frees the table: a list again) */
        HASH_DEL(p->made, m);
    DL_DELETE(p->made_order, m);
    p->nmade--;
    free(m);
}

/* Fn of a bell or await, called once and let go of. Caller holds p->mu. */
static void ring_locked(made_note *m)
{
    zkl__bell_fn fn = m ? m->bell : NULL;
    if (!fn)
        return;
    m->bell = NULL;
    fn(m->bell_c, m->bell_waiter);
}

static void await_ring_locked(zkl__inproc *p, await_note *a)
{
    zkl__bell_fn fn = a->fn;
    void *c = a->c, *waiter = a->waiter;
    HASH_DEL(p->awaits, a);
    free(a);
    fn(c, waiter);
}

void zkl__inproc_made(zkl__inproc *p, const char *name, int32_t seq, int64_t owner)
{
    size_t n = strlen(name);
    made_note *m;
    await_note *a = NULL;
    if (!p || owner == 0)
        return;
    pthread_mutex_lock(&p->mu);
    p->last_owner = owner;
    /* Only another session of the process asks for a note: with one lock
     * object on the line, every node on it is one session's (inproc.h). */
    if (p->objects > 1 && seq >= 0 && n < NAME_MAX_ && !made_locked(p, seq) &&
        (m = calloc(1, sizeof *m + n + 1))) {
        m->seq = seq;
        m->owner = owner;
        memcpy(m->name, name, n + 1);
        if (p->made)
            HASH_ADD_INT(p->made, seq, m);
        if (p->made && !m->hh.tbl) { /* no memory: not noted */
            free(m);
        } else {
            DL_APPEND(p->made_order, m);
            if (++p->nmade > ZKL_INPROC_MADE_LISTED && !p->made)
                (void)made_hashed_locked(p);  /* no memory: still a list */
            if (p->nmade > ZKL_INPROC_MADE) { /* the oldest goes */
                ring_locked(p->made_order);   /* its waiter watches now, instead of a bell */
                unmade_locked(p, p->made_order);
            }
            HASH_FIND_INT(p->awaits, &seq, a);
            if (a)
                await_ring_locked(p, a); /* the node just ahead of that joiner's */
        }
    }
    pthread_mutex_unlock(&p->mu);
}

int64_t zkl__inproc_made_by(zkl__inproc *p, const char *name, int32_t seq)
{
    const made_note *m;
    int64_t by = 0;
    if (!p)
        return 0;
    pthread_mutex_lock(&p->mu);
    if ((m = made_locked(p, seq)) && strcmp(m->name, name) == 0)
        by = m->owner;
    pthread_mutex_unlock(&p->mu);
    return by;
}

int64_t zkl__inproc_made_at(zkl__inproc *p, int32_t seq, char *name, size_t cap)
{
    const made_note *m;
    int64_t by = 0;
    if (!p)
        return 0;
    pthread_mutex_lock(&p->mu);
    if ((m = made_locked(p, seq)) && strlen(m->name) < cap) {
        memcpy(name, m->name, strlen(m->name) + 1);
        by = m->owner;
    }
    pthread_mutex_unlock(&p->mu);
    return by;
}

bool zkl__inproc_others_joined(zkl__inproc *p, int64_t self)
{
    bool others;
    if (!p)
        return false;
    pthread_mutex_lock(&p->mu);
    others = p->last_owner != 0 && p->last_owner != self;
    pthread_mutex_unlock(&p->mu);
    return others;
}

/*
 * Room in the grants ring for one more (p->mu held): made (2 entries) at
 * the first grant, doubled when the next would wrap, up to
 * ZKL_INPROC_GRANTS. Doubling only at the wrap keeps the ring in the order
 * noted. false: no memory for a first ring (that grant goes unnoted).
 */
static bool grants_room_locked(zkl__inproc *p)
{
    unsigned cap = p->grants_cap ? p->grants_cap * 2 : 2;
    grant_note *g;
    if (p->grants_cap && (p->next_grant < p->grants_cap || p->grants_cap >= ZKL_INPROC_GRANTS))
        return true;
    if (cap > ZKL_INPROC_GRANTS)
        cap = ZKL_INPROC_GRANTS;
    if (!(g = realloc(p->grants, cap * sizeof *g)))
        return p->grants_cap > 0; /* the ring as it is wraps */
    memset(g + p->grants_cap, 0, (cap - p->grants_cap) * sizeof *g);
    p->grants = g;
    p->grants_cap = cap;
    return true;
}

void zkl__inproc_granted(zkl__inproc *p, const char *name, int32_t seq, int64_t owner)
{
    size_t n = strlen(name);
    made_note *m;
    if (!p || owner == 0)
        return;
    pthread_mutex_lock(&p->mu);
    if (n < NAME_MAX_ && grants_room_locked(p)) {
        grant_note *g = &p->grants[p->next_grant++ % p->grants_cap];
        g->owner = owner;
        memcpy(g->name, name, n + 1);
    }
    if (seq >= 0 && seq <= INT32_MAX - 2) {
        if ((m = made_locked(p, seq)) && strcmp(m->name, name) == 0)
            m->granted = true;
        ring_locked(made_locked(p, seq + 1));
        ring_locked(made_locked(p, seq + 2));
    }
    pthread_mutex_unlock(&p->mu);
}

bool zkl__inproc_seen(zkl__inproc *p, const char *name, int64_t owner)
{
    bool found = false;
    int i;
    if (!p || owner == 0)
        return false;
    pthread_mutex_lock(&p->mu);
    for (i = 0; i < (int)p->grants_cap && !found; i++)
        found = p->grants[i].owner == owner && strcmp(p->grants[i].name, name) == 0;
    pthread_mutex_unlock(&p->mu);
    return found;
}

/* Whether node seq is noted granted. Caller holds p->mu. */
static bool granted_locked(zkl__inproc *p, int32_t seq)
{
    const made_note *m = made_locked(p, seq);
    return m && m->granted;
}

bool zkl__inproc_bell(zkl__inproc *p, const char *name, int32_t seq, zkl__bell_fn fn, void *c,
                      void *waiter)
{
    made_note *m;
    bool set = false;
    if (!p || seq < 2)
        return false;
    pthread_mutex_lock(&p->mu);
    m = made_locked(p, seq);
    if (m && strcmp(m->name, name) == 0 && !granted_locked(p, seq - 1) &&
        !granted_locked(p, seq - 2)) {
        m->bell = fn;
        m->bell_c = c;
        m->bell_waiter = waiter;
        set = true;
    }
    pthread_mutex_unlock(&p->mu);
    return set;
}

void zkl__inproc_left(zkl__inproc *p, int32_t seq)
{
    if (!p || seq < 0 || seq > INT32_MAX - 2)
        return;
    pthread_mutex_lock(&p->mu);
    ring_locked(made_locked(p, seq + 1));
    ring_locked(made_locked(p, seq + 2));
    pthread_mutex_unlock(&p->mu);
}

bool zkl__inproc_create_sent(zkl__inproc *p)
{
    if (!p)
        return false;
    pthread_mutex_lock(&p->mu);
    p->creates++;
    pthread_mutex_unlock(&p->mu);
    return true;
}

void zkl__inproc_create_done(zkl__inproc *p)
{
    await_note *a, *list = NULL;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->creates > 0 && --p->creates == 0) {
        /* nothing in flight: every joiner lists */
        list = take_awaits_locked(p);
        while ((a = list)) {
            list = a->next;
            a->fn(a->c, a->waiter);
            free(a);
        }
    }
    pthread_mutex_unlock(&p->mu);
}

bool zkl__inproc_await(zkl__inproc *p, int32_t seq, zkl__bell_fn fn, void *c, void *waiter)
{
    await_note *a = NULL;
    bool set = false, open;
    if (!p || seq < 0)
        return false;
    pthread_mutex_lock(&p->mu);
    open = p->creates > 0 && !made_locked(p, seq); /* else nothing to await */
    if (open)
        HASH_FIND_INT(p->awaits, &seq, a);
    if (open && !a && (a = calloc(1, sizeof *a))) {
        a->seq = seq;
        a->fn = fn;
        a->c = c;
        a->waiter = waiter;
        HASH_ADD_INT(p->awaits, seq, a);
        set = a->hh.tbl != NULL;
        if (!set)
            free(a); /* no memory: the joiner lists */
    }
    pthread_mutex_unlock(&p->mu);
    return set;
}

void zkl__inproc_unawait(zkl__inproc *p, int32_t seq, const void *waiter)
{
    await_note *a = NULL;
    if (!p || seq < 0)
        return;
    pthread_mutex_lock(&p->mu);
    HASH_FIND_INT(p->awaits, &seq, a);
    if (a && a->waiter == waiter) {
        HASH_DEL(p->awaits, a);
        free(a);
    }
    pthread_mutex_unlock(&p->mu);
}

void zkl__inproc_drop(zkl__inproc *p, int32_t seq, const void *waiter)
{
    made_note *m;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if ((m = made_locked(p, seq)) && m->bell && m->bell_waiter == waiter)
        m->bell = NULL;
    pthread_mutex_unlock(&p->mu);
}
