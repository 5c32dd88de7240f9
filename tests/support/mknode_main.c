/*
 * mknode_main.c - `mknode CONNECT PATH [DATA]`: create PATH as a persistent
 * node (its parents too) holding DATA's bytes, for the command's tests that
 * need a child that is not a lock node. Exit 0 when it exists afterwards.
 * `mknode CONNECT --delete PATH`: delete PATH (an operator's delete), exit 0
 * when it is gone.
 */
#include <stdio.h>
#include <string.h>
#include <zookeeper/zookeeper.h>

int main(int argc, char **argv)
{
    zhandle_t *zh;
    char buf[1024];
    size_t i;
    int rc = ZOK, tries;
    const char *data = argc == 4 ? argv[3] : "";
    if (argc < 3 || argc > 4 || strlen(argv[2]) >= sizeof buf ||
        (argv[2][0] != '/' && strcmp(argv[2], "--delete") != 0)) {
        fprintf(stderr, "usage: mknode CONNECT /PATH [DATA] | mknode CONNECT --delete /PATH\n");
        return 2;
    }
    zoo_set_debug_level(0);
    zh = zookeeper_init(argv[1], NULL, 10000, NULL, NULL, 0);
    if (!zh) {
        perror("mknode: zookeeper_init");
        return 1;
    }
    if (!strcmp(argv[2], "--delete") && argc == 4) {
        rc = zoo_delete(zh, argv[3], -1);
        if (rc != ZOK && rc != ZNONODE)
            fprintf(stderr, "mknode: delete %s: %s\n", argv[3], zerror(rc));
        zookeeper_close(zh);
        return rc == ZOK || rc == ZNONODE ? 0 : 1;
    }
    /* A parent that exists may be a lock's container, which the server
     * deletes once it is empty: a create under it that finds it gone
     * (ZNONODE) starts again from the root, a few times. */
    for (tries = 0; tries < 5; tries++) {
        rc = ZOK;
        for (i = 1; argv[2][i - 1] && rc == ZOK; i++) { /* every prefix that ends a component */
            if (argv[2][i] != '/' && argv[2][i] != '\0')
                continue;
            memcpy(buf, argv[2], i);
            buf[i] = '\0';
            rc = argv[2][i] ? zoo_create(zh, buf, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0)
                            : zoo_create(zh, buf, data, (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE, 0,
                                         NULL, 0);
            if (rc == ZNODEEXISTS)
                rc = ZOK;
        }
        if (rc != ZNONODE)
            break;
    }
    if (rc != ZOK) {
        fprintf(stderr, "mknode: %s: %s\n", buf, zerror(rc));
        rc = -1;
    }
    zookeeper_close(zh);
    return rc == -1 ? 1 : 0;
}
