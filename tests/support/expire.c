/*
 * expire.c - see expire.h.
 */
#include <stdatomic.h>
#include <time.h>

#include "expire.h"

static void nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Open a handle on cid; wait for CONNECTED or EXPIRED (up to 10 s). */
static zhandle_t *open_on(const char *servers, const clientid_t *cid, int *state)
{
    zhandle_t *zh = zookeeper_init(servers, NULL, 10000, cid, NULL, 0);
    int i;
    *state = 0;
    for (i = 0; zh && i < 1000; i++) {
        *state = zoo_state(zh);
        if (*state == ZOO_CONNECTED_STATE || *state == ZOO_EXPIRED_SESSION_STATE)
            break;
        nap(10);
    }
    return zh;
}

int zkt_expire_session(const char *servers, const clientid_t *cid)
{
    int attempt;
    zoo_set_debug_level((ZooLogLevel)0);
    for (attempt = 0; attempt < 50; attempt++) {
        int state;
        zhandle_t *zh = open_on(servers, cid, &state);
        if (!zh)
            return -1;
        zookeeper_close(zh); /* if it was ours now, this ends the session */
        if (state == ZOO_EXPIRED_SESSION_STATE)
            return 0;
        nap(20);
    }
    return -1;
}
