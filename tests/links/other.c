/*
 * other.c - another user of ZooKeeper in the same process, as programs and
 * their libraries are: the system's libzookeeper_mt and its synchronous
 * calls. Linked into the program, into a shared library of the program's,
 * or into a plugin (test_links.sh builds each shape); every call returns in
 * bounded time or the run fails (the script's timeout is the backstop).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include "links.h"

static zhandle_t *zh;

int links_other_open(const char *hosts)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zh = zookeeper_init(hosts, NULL, 10000, NULL, NULL, 0);
    if (!zh) {
        perror("links: zookeeper_init");
        return -1;
    }
    for (int i = 0; i < 1500; i++) { /* up to 15 s */
        if (zoo_state(zh) == ZOO_CONNECTED_STATE)
            return 0;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "links: the other user's handle never connected\n");
    return -1;
}

/*
 * Each synchronous call once, on a node of its own named after path, at the
 * root: path's parent is the lock's container, which the server removes
 * once it is empty, so a user that comes first (other-first) could find it
 * gone ("no node": a fresh clone's run, with the links test slowed to 140 s).
 */
int links_other_calls(const char *path)
{
    char node[512], got[64];
    int len = sizeof got, rc;
    struct Stat st;
    struct String_vector kids = {0};
    snprintf(node, sizeof node, "%s-other-%ld", path, (long)getpid());
    for (char *p = node + 1; *p; p++)
        if (*p == '/')
            *p = '_';
    if ((rc = zoo_create(zh, node, "a", 1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0)) != ZOK ||
        (rc = zoo_exists(zh, node, 0, &st)) != ZOK ||
        (rc = zoo_set(zh, node, "bc", 2, -1)) != ZOK ||
        (rc = zoo_get(zh, node, 0, got, &len, &st)) != ZOK ||
        (rc = zoo_get_children(zh, "/", 0, &kids)) != ZOK ||
        (rc = zoo_delete(zh, node, -1)) != ZOK) {
        fprintf(stderr, "links: the other user's call on %s: %s\n", node, zerror(rc));
        return -1;
    }
    deallocate_String_vector(&kids);
    if (len != 2 || memcmp(got, "bc", 2) != 0) {
        fprintf(stderr, "links: the other user read back %.*s\n", len, got);
        return -1;
    }
    return 0;
}

void links_other_close(void)
{
    if (zh)
        zookeeper_close(zh);
    zh = NULL;
}
