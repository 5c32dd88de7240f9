/*
 * heads.h - nodes this process has seen at the head of their line.
 *
 * A mutex waiter watches the node just ahead of it and, looking ahead, the
 * one before that. When that farther node goes, the waiter used to list the
 * line again to learn whether only the nearer one is left ahead. If the
 * farther node had held the lock, the answer is known without asking: when
 * it was granted nothing was ahead of it, nothing can be put ahead of it
 * later (sequences only grow), and the waiter's own listing showed just the
 * nearer node between the two. So the nearer node's deletion hands the lock
 * over, as if the waiter had listed (wait.c).
 *
 * Only a grant in this process is known here: every client of the process
 * notes its grants, by node name, owner session and parent, in one small
 * ring (the oldest noted goes first). A node not found, for whatever reason
 * (another process's, or noted too long ago), costs the listing as before.
 * The name carries the create's random UUID and the owner is the session
 * id: no other node can be taken for a noted one.
 */
#ifndef ZKL_CORE_HEADS_H
#define ZKL_CORE_HEADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Nodes made here, noted with their owner session when their waiter starts
 * to wait. A waiter right behind one of another session does not look ahead
 * but watches its own node instead (wait.c): the node ahead will most
 * likely hold in this process, and its going then hands the lock over with
 * no listing. Only a hint: a wrong answer costs a request. made_by: the
 * owner session of node name (its sequence seq), 0 if it was not noted.
 */
void zkl__heads_note_made(const char *parent, const char *name, int32_t seq, int64_t owner);
int64_t zkl__heads_made_by(const char *parent, const char *name, int32_t seq);

/*
 * A joiner's node just ahead, without a listing (wait.c, "known
 * predecessor"). Sequences are unique under a parent and only grow, so no
 * node can sort between the one made with sequence s - 1 and ours (s): if
 * that node was made here and the server still has it, it is the node just
 * ahead. made_at: the owner session of the node noted with sequence seq
 * under parent (its name copied into name, cap bytes), 0 if none is noted.
 * others_joined: the last node noted under parent is another session's
 * than self, so that a new node of self will likely land right behind a
 * node made here, and its create may go without the listing.
 */
int64_t zkl__heads_made_at(const char *parent, int32_t seq, char *name, size_t cap);
bool zkl__heads_others_joined(const char *parent, int64_t self);

/*
 * Node name (a child of parent, its sequence seq), owned by session owner,
 * is at the head of its line: noted, and the bells of the two nodes made
 * here just behind it (sequences seq + 1 and seq + 2) are rung.
 */
void zkl__heads_note(const char *parent, const char *name, int32_t seq, int64_t owner);

/*
 * The bell (wait.c, "the watch on our own node, left to its bell"). A waiter right
 * behind a node of another session of this process (sequence s - 1 against
 * its s) needs a watch on its own node only for the hand-off from that
 * node, so it asks to be told when the lock is granted to the node two
 * places ahead of it (s - 2) or one (s - 1): fn(owner, waiter) is then
 * called once, under this file's mutex (fn may take its client's c->mu: the
 * lock order is this mutex, then a client's). false: not registered (its
 * node is not noted here, or s - 1 or s - 2 holds already): watch now. Only
 * a hint, like the rest: a bell that never rings costs the waiter a
 * listing at the hand-off. forget: no bell of owner will ring (before owner
 * is freed; called without its c->mu).
 */
typedef void (*zkl__bell_fn)(void *owner, void *waiter);
bool zkl__heads_bell(const char *parent, const char *name, int32_t seq, zkl__bell_fn fn,
                     void *owner, void *waiter);
void zkl__heads_forget(const void *owner);

/*
 * Node seq under parent, made here, leaves the line without holding (its
 * wait timed out, was canceled, or its session went): the bells of the two
 * nodes made here just behind it are rung, as a grant would ring them, so
 * that their waiters watch now instead of waiting on a grant that will not
 * come. behind: how many sequences node seq under parent is behind the last
 * grant noted here under parent (-1: none noted, or an older seq): the line
 * ahead of it is at most that long, and at least that long when every node
 * between is this process's and waits.
 */
void zkl__heads_left(const char *parent, int32_t seq);
int32_t zkl__heads_behind(const char *parent, int32_t seq);

/*
 * The joiner's await (wait.c, "the note awaited"). Creates of this process
 * complete on many threads, in the order they are scheduled, so a joiner
 * may learn its own node before the node made here just ahead of it is
 * noted. While a create of this process under parent is in flight, the
 * joiner whose node s - 1 is not known waits for it instead of listing.
 * create_sent: a create under parent is sent (true: counted, and the caller
 * calls create_done once, when its node is noted made or the create ends
 * without one). await: fn(owner, waiter) is called once, under this file's
 * mutex, when node seq under parent is noted made or no create of this
 * process is in flight there; false: not registered (nothing in flight,
 * seq noted already, or no room): list now. unawait: waiter no longer
 * awaits node seq (it timed out, or went). forget also lets go of owner's
 * awaits. Only a hint: a note that never comes costs the wait's time bound.
 */
bool zkl__heads_create_sent(const char *parent);
void zkl__heads_create_done(const char *parent);
bool zkl__heads_await(const char *parent, int32_t seq, zkl__bell_fn fn, void *owner, void *waiter);
void zkl__heads_unawait(const char *parent, int32_t seq, const void *waiter);

/* Once, before the first use: a fork()ed child forgets every note (they are the parent's). */
void zkl__heads_init(void);

/* Whether that node was noted (and not yet pushed out of the ring). */
bool zkl__heads_seen(const char *parent, const char *name, int64_t owner);

#endif
