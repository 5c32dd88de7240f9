/*
 * app.c - a program of one link shape (test_links.sh):
 *
 *   app HOSTS PATH LOG WHO ORDER [--lock-plugin SO local|global]
 *       [--other-plugin SO local|global]
 *
 * ORDER is lock-first (zklock opens and holds first, then the other user
 * opens and calls) or other-first (the other way round); either way both
 * are open together, and each part runs again after the other started.
 * A part built into the program (LOCK_LINKED, OTHER_LINKED) is called
 * directly; a plugin's is found with dlopen() and dlsym() first. Exits 0
 * when every call of both parts succeeded.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "links.h"

#define ROUNDS 3

static struct {
    int (*other_open)(const char *);
    int (*other_calls)(const char *);
    void (*other_close)(void);
    int (*lock_open)(const char *, const char *);
    int (*lock_rounds)(const char *, const char *, int);
    void (*lock_close)(void);
} f;

static void *plugin(const char *so, const char *mode)
{
    void *h = dlopen(so, RTLD_NOW | (strcmp(mode, "global") == 0 ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!h)
        fprintf(stderr, "links: dlopen %s: %s\n", so, dlerror());
    return h;
}

#define FIND(h, field, name)                                                                       \
    do {                                                                                           \
        *(void **)&f.field = dlsym(h, name);                                                       \
        if (!f.field) {                                                                            \
            fprintf(stderr, "links: dlsym %s: %s\n", name, dlerror());                             \
            return 2;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    const char *hosts, *path, *log, *who, *order;
    int i, rc;
    if (argc < 6) {
        fprintf(stderr, "usage: app HOSTS PATH LOG WHO lock-first|other-first "
                        "[--lock-plugin SO MODE] [--other-plugin SO MODE]\n");
        return 2;
    }
    hosts = argv[1], path = argv[2], log = argv[3], who = argv[4], order = argv[5];
#ifdef LOCK_LINKED
    f.lock_open = links_lock_open, f.lock_rounds = links_lock_rounds,
    f.lock_close = links_lock_close;
#endif
#ifdef OTHER_LINKED
    f.other_open = links_other_open, f.other_calls = links_other_calls,
    f.other_close = links_other_close;
#endif
    for (i = 6; i + 2 < argc; i += 3) {
        void *h = plugin(argv[i + 1], argv[i + 2]);
        if (!h)
            return 2;
        if (strcmp(argv[i], "--lock-plugin") == 0) {
            FIND(h, lock_open, "links_lock_open");
            FIND(h, lock_rounds, "links_lock_rounds");
            FIND(h, lock_close, "links_lock_close");
        } else {
            FIND(h, other_open, "links_other_open");
            FIND(h, other_calls, "links_other_calls");
            FIND(h, other_close, "links_other_close");
        }
    }
    if (!f.lock_open || !f.other_open) {
        fprintf(stderr, "links: a part is missing (built in, or --lock-plugin / --other-plugin)\n");
        return 2;
    }
    if (strcmp(order, "lock-first") == 0)
        rc = f.lock_open(hosts, path) || f.lock_rounds(log, who, ROUNDS) || f.other_open(hosts) ||
             f.other_calls(path) || f.lock_rounds(log, who, ROUNDS) || f.other_calls(path);
    else
        rc = f.other_open(hosts) || f.other_calls(path) || f.lock_open(hosts, path) ||
             f.lock_rounds(log, who, ROUNDS) || f.other_calls(path) ||
             f.lock_rounds(log, who, ROUNDS);
    f.lock_close();
    f.other_close();
    if (rc)
        fprintf(stderr, "links: %s failed\n", who);
    return rc ? 1 : 0;
}
