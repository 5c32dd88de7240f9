/*
 * heads.c - see heads.h: the rings of this process's nodes in lock lines.
 *
 * DESIGN: for the process, a ring of the nodes seen at the head and a table
 * of the nodes made (by parent and sequence, room for a line of a
 * thousand), under one mutex, held to copy an entry in, to compare
 * entries, and to ring a bell. A bell's function takes its waiter's client
 * c->mu under this mutex, so the lock order is this mutex, then a client's:
 * no caller holds a c->mu (steps run without it: engine.c), and a client
 * forgets its bells before it is freed (zkl__heads_forget, under this
 * mutex, so never while one of its bells rings). Fixed size and no heap: a
 * name too long for an entry is not noted (its waiter lists, as before).
 * The grants are kept by name, since a waiter's hand-off rests on them; the
 * nodes made are a hint, checked by name and by the server. So is the count
 * of creates in flight per parent, with the joiners awaiting a note: their
 * functions are called under this mutex too, as a bell's.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "core/heads.h"
#include "base/tuning.h"

#define NAME_MAX_ 72 /* "_c_" UUID "-lock-" sequence is 55 */

typedef struct entry {
    uint64_t parent; /* FNV-1a of the parent path */
    int64_t owner;   /* the node's session */
    char name[NAME_MAX_];
} entry;

typedef struct ring {
    entry e[ZKL_HEADS_GRANTS];
    unsigned next;
} ring;

/*
 * A node made here, by its sequence: where a joiner finds the node just
 * ahead of its own (zkl__heads_made_at). Direct-mapped by parent and
 * sequence; a newer node takes an older one's slot. Only a hint: the
 * waiter checks the name's sequence and the server the node's existence.
 */
typedef struct seq_entry {
    uint64_t parent; /* FNV-1a of the parent path */
    int64_t owner;   /* 0: empty */
    int32_t seq;
    bool granted; /* noted at the head of its line (zkl__heads_note) */
    char name[NAME_MAX_];
    /* its waiter's bell, if it asked for one (zkl__heads_bell) */
    zkl__bell_fn bell;
    void *bell_owner, *bell_waiter;
} seq_entry;

typedef struct last_entry {
    uint64_t parent;
    int64_t owner;
} last_entry;

/*
 * Per parent (direct-mapped, like last): this process's creates in flight
 * there (sent, their node not yet noted made), and the joiners awaiting a
 * note (zkl__heads_await). A parent whose entry another parent holds, while
 * that one has creates in flight, is not counted: its joiners list.
 */
typedef struct flight_entry {
    uint64_t parent;
    int creates, waiting;
} flight_entry;

/* A joiner awaiting the note of node seq under parent (by seq_slot). */
typedef struct await_entry {
    uint64_t parent;
    int32_t seq;
    zkl__bell_fn fn; /* NULL: empty */
    void *owner, *waiter;
} await_entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ring held;
static seq_entry by_seq[ZKL_HEADS_MADE];
static last_entry last[ZKL_HEADS_PARENTS];
/* Per parent (direct-mapped, like last): the sequence last noted at the head. */
typedef struct head_entry {
    uint64_t parent;
    int32_t seq;
} head_entry;
static head_entry head_at[ZKL_HEADS_PARENTS];
static flight_entry flight[ZKL_HEADS_PARENTS];
static await_entry awaits[ZKL_HEADS_MADE];

static uint64_t fnv_on(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t fnv(const char *s)
{
    return fnv_on(14695981039346656037ull, s);
}

static void note(ring *r, const char *parent, const char *name, int64_t owner)
{
    size_t n = strlen(name);
    entry *e;
    if (n >= NAME_MAX_)
        return;
    pthread_mutex_lock(&mu);
    e = &r->e[r->next++ % ZKL_HEADS_GRANTS];
    e->parent = fnv(parent);
    e->owner = owner;
    memcpy(e->name, name, n + 1);
    pthread_mutex_unlock(&mu);
}

static bool seen(const ring *r, const char *parent, const char *name, int64_t owner)
{
    uint64_t h = fnv(parent);
    bool found = false;
    int i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < ZKL_HEADS_GRANTS && !found; i++)
        found = r->e[i].owner == owner && r->e[i].parent == h && strcmp(r->e[i].name, name) == 0;
    pthread_mutex_unlock(&mu);
    return found;
}

/*
 * In a fork()ed child every note is of the parent's operations (and mu may
 * be held by a thread that is not here): all of it is forgotten.
 */
static void fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    memset(&held, 0, sizeof held);
    memset(by_seq, 0, sizeof by_seq);
    memset(last, 0, sizeof last);
    memset(head_at, 0, sizeof head_at);
    memset(flight, 0, sizeof flight);
    memset(awaits, 0, sizeof awaits);
}

static void install_fork_child(void)
{
    (void)pthread_atfork(NULL, NULL, fork_child);
}

void zkl__heads_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    (void)pthread_once(&once, install_fork_child);
}

bool zkl__heads_seen(const char *parent, const char *name, int64_t owner)
{
    return owner != 0 && seen(&held, parent, name, owner);
}

static size_t seq_slot(uint64_t parent, int32_t seq)
{
    /* consecutive sequences of one parent take consecutive slots */
    return (size_t)((parent + (uint32_t)seq) % ZKL_HEADS_MADE);
}

/* The entry noted with sequence seq under parent hash ph, or NULL. Caller holds mu. */
static seq_entry *noted_locked(uint64_t ph, int32_t seq)
{
    seq_entry *e = &by_seq[seq_slot(ph, seq)];
    return seq >= 0 && e->owner != 0 && e->parent == ph && e->seq == seq ? e : NULL;
}

/* Slot a let go of (it held a joiner). Caller holds mu. */
static void await_clear_locked(await_entry *a)
{
    flight_entry *f = &flight[a->parent % ZKL_HEADS_PARENTS];
    a->fn = NULL;
    if (f->parent == a->parent && f->waiting > 0)
        f->waiting--;
}

/* The joiner awaiting slot a, told (once) and let go of. Caller holds mu. */
static void await_ring_locked(await_entry *a)
{
    zkl__bell_fn fn = a->fn;
    await_clear_locked(a);
    fn(a->owner, a->waiter);
}

/* Every joiner awaiting a note under parent ph, told: no create is in flight there. */
static void await_ring_all_locked(uint64_t ph)
{
    size_t i;
    for (i = 0; i < ZKL_HEADS_MADE && flight[ph % ZKL_HEADS_PARENTS].waiting > 0; i++)
        if (awaits[i].fn && awaits[i].parent == ph)
            await_ring_locked(&awaits[i]);
}

bool zkl__heads_create_sent(const char *parent)
{
    uint64_t ph = fnv(parent);
    flight_entry *f = &flight[ph % ZKL_HEADS_PARENTS];
    bool counted = false;
    pthread_mutex_lock(&mu);
    if (f->parent != ph && f->creates == 0 && f->waiting == 0) {
        f->parent = ph; /* a free entry, taken */
    }
    if (f->parent == ph) {
        f->creates++;
        counted = true;
    }
    pthread_mutex_unlock(&mu);
    return counted;
}

void zkl__heads_create_done(const char *parent)
{
    uint64_t ph = fnv(parent);
    flight_entry *f = &flight[ph % ZKL_HEADS_PARENTS];
    pthread_mutex_lock(&mu);
    if (f->parent == ph && f->creates > 0 && --f->creates == 0)
        await_ring_all_locked(ph);
    pthread_mutex_unlock(&mu);
}

bool zkl__heads_await(const char *parent, int32_t seq, zkl__bell_fn fn, void *owner, void *waiter)
{
    uint64_t ph = fnv(parent);
    flight_entry *f = &flight[ph % ZKL_HEADS_PARENTS];
    await_entry *a;
    bool set = false;
    if (seq < 0)
        return false;
    pthread_mutex_lock(&mu);
    a = &awaits[seq_slot(ph, seq)];
    if (f->parent == ph && f->creates > 0 && !noted_locked(ph, seq) && !a->fn) {
        a->parent = ph;
        a->seq = seq;
        a->fn = fn;
        a->owner = owner;
        a->waiter = waiter;
        f->waiting++;
        set = true;
    }
    pthread_mutex_unlock(&mu);
    return set;
}

void zkl__heads_unawait(const char *parent, int32_t seq, const void *waiter)
{
    uint64_t ph = fnv(parent);
    await_entry *a;
    if (seq < 0)
        return;
    pthread_mutex_lock(&mu);
    a = &awaits[seq_slot(ph, seq)];
    if (a->fn && a->waiter == waiter && a->parent == ph && a->seq == seq)
        await_clear_locked(a);
    pthread_mutex_unlock(&mu);
}

void zkl__heads_note_made(const char *parent, const char *name, int32_t seq, int64_t owner)
{
    uint64_t ph = fnv(parent);
    size_t n = strlen(name);
    await_entry *a;
    if (owner == 0)
        return;
    pthread_mutex_lock(&mu);
    last[ph % ZKL_HEADS_PARENTS].parent = ph;
    last[ph % ZKL_HEADS_PARENTS].owner = owner;
    if (seq >= 0 && n < NAME_MAX_) {
        seq_entry *e = &by_seq[seq_slot(ph, seq)];
        e->parent = ph;
        e->owner = owner;
        e->seq = seq;
        e->granted = false;
        e->bell = NULL;
        memcpy(e->name, name, n + 1);
        a = &awaits[seq_slot(ph, seq)];
        if (a->fn && a->parent == ph && a->seq == seq)
            await_ring_locked(a); /* the node just ahead of that joiner's */
    }
    pthread_mutex_unlock(&mu);
}

bool zkl__heads_others_joined(const char *parent, int64_t self)
{
    uint64_t ph = fnv(parent);
    bool others;
    pthread_mutex_lock(&mu);
    others = last[ph % ZKL_HEADS_PARENTS].parent == ph && last[ph % ZKL_HEADS_PARENTS].owner != 0 &&
             last[ph % ZKL_HEADS_PARENTS].owner != self;
    pthread_mutex_unlock(&mu);
    return others;
}

/* Entry e rings its bell, if it has one (once). Caller holds mu. */
static void ring_locked(seq_entry *e)
{
    zkl__bell_fn fn = e ? e->bell : NULL;
    if (!fn)
        return;
    e->bell = NULL;
    fn(e->bell_owner, e->bell_waiter);
}

void zkl__heads_note(const char *parent, const char *name, int32_t seq, int64_t owner)
{
    uint64_t ph = fnv(parent);
    seq_entry *e;
    if (owner == 0)
        return;
    note(&held, parent, name, owner);
    if (seq < 0 || seq > INT32_MAX - 2)
        return;
    pthread_mutex_lock(&mu);
    if (head_at[ph % ZKL_HEADS_PARENTS].parent != ph || head_at[ph % ZKL_HEADS_PARENTS].seq < seq) {
        head_at[ph % ZKL_HEADS_PARENTS].parent = ph;
        head_at[ph % ZKL_HEADS_PARENTS].seq = seq;
    }
    if ((e = noted_locked(ph, seq)) && strcmp(e->name, name) == 0)
        e->granted = true;
    ring_locked(noted_locked(ph, seq + 1));
    ring_locked(noted_locked(ph, seq + 2));
    pthread_mutex_unlock(&mu);
}

/* Whether the node noted with sequence seq under ph has been granted. Caller holds mu. */
static bool granted_locked(uint64_t ph, int32_t seq)
{
    const seq_entry *e = noted_locked(ph, seq);
    return e && e->granted;
}

bool zkl__heads_bell(const char *parent, const char *name, int32_t seq, zkl__bell_fn fn,
                     void *owner, void *waiter)
{
    uint64_t ph = fnv(parent);
    seq_entry *e;
    bool set = false;
    if (seq < 2)
        return false;
    pthread_mutex_lock(&mu);
    e = noted_locked(ph, seq);
    if (e && strcmp(e->name, name) == 0 && !granted_locked(ph, seq - 1) &&
        !granted_locked(ph, seq - 2)) {
        e->bell = fn;
        e->bell_owner = owner;
        e->bell_waiter = waiter;
        set = true;
    }
    pthread_mutex_unlock(&mu);
    return set;
}

void zkl__heads_left(const char *parent, int32_t seq)
{
    uint64_t ph = fnv(parent);
    if (seq < 0 || seq > INT32_MAX - 2)
        return;
    pthread_mutex_lock(&mu);
    ring_locked(noted_locked(ph, seq + 1));
    ring_locked(noted_locked(ph, seq + 2));
    pthread_mutex_unlock(&mu);
}

int32_t zkl__heads_behind(const char *parent, int32_t seq)
{
    uint64_t ph = fnv(parent);
    const head_entry *h = &head_at[ph % ZKL_HEADS_PARENTS];
    int32_t behind = -1;
    pthread_mutex_lock(&mu);
    if (h->parent == ph && seq > h->seq)
        behind = seq - h->seq;
    pthread_mutex_unlock(&mu);
    return behind;
}

void zkl__heads_forget(const void *owner)
{
    size_t i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < ZKL_HEADS_MADE; i++) {
        if (by_seq[i].bell && by_seq[i].bell_owner == owner)
            by_seq[i].bell = NULL;
        if (awaits[i].fn && awaits[i].owner == owner)
            await_clear_locked(&awaits[i]);
    }
    pthread_mutex_unlock(&mu);
}

int64_t zkl__heads_made_at(const char *parent, int32_t seq, char *name, size_t cap)
{
    const seq_entry *e;
    int64_t by = 0;
    pthread_mutex_lock(&mu);
    if ((e = noted_locked(fnv(parent), seq)) && strlen(e->name) < cap) {
        memcpy(name, e->name, strlen(e->name) + 1);
        by = e->owner;
    }
    pthread_mutex_unlock(&mu);
    return by;
}

int64_t zkl__heads_made_by(const char *parent, const char *name, int32_t seq)
{
    const seq_entry *e;
    int64_t by = 0;
    pthread_mutex_lock(&mu);
    if ((e = noted_locked(fnv(parent), seq)) && strcmp(e->name, name) == 0)
        by = e->owner;
    pthread_mutex_unlock(&mu);
    return by;
}
