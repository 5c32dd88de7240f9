/*
 * test_serverconf.c - reading the lag from a server's `conf` reply
 * (services/serverconf.c), on replies of ZooKeeper 3.8's servers.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "services/serverconf.h"

static const char ensemble[] = "clientPort=13294\nsecureClientPort=-1\n"
                               "dataDir=/tmp/zk3/server2/data/version-2\ntickTime=500\n"
                               "maxClientCnxns=0\nminSessionTimeout=1000\nserverId=2\n"
                               "initLimit=10\nsyncLimit=2\nelectionAlg=3\npeerType=0\n"
                               "membership: \nserver.1=127.0.0.1:26702:21360:participant\n"
                               "version=0";
static const char standalone[] = "clientPort=18940\nsecureClientPort=-1\n"
                                 "dataDir=/tmp/zk/server1/data/version-2\ntickTime=500\n"
                                 "maxClientCnxns=0\nminSessionTimeout=1000\nserverId=0\n";

Test(serverconf, an_ensemble_member_gives_its_lag)
{
    int lag = -1;
    cr_assert_eq(zkl__conf_parse(ensemble, &lag), ZKL__CONF_ENSEMBLE);
    cr_assert_eq(lag, 2 * 500 + 250, "syncLimit x tickTime + tickTime/2");
}

Test(serverconf, a_standalone_server_has_none)
{
    int lag = -1;
    cr_assert_eq(zkl__conf_parse(standalone, &lag), ZKL__CONF_STANDALONE);
    cr_assert_eq(lag, 0);
}

Test(serverconf, a_refusal_or_nonsense_says_nothing)
{
    int lag = -1;
    cr_assert_eq(
        zkl__conf_parse("conf is not executed because it is not in the whitelist.\n", &lag),
        ZKL__CONF_REFUSED);
    cr_assert_eq(lag, 0);
    cr_assert_eq(zkl__conf_parse("", &lag), ZKL__CONF_NO_ANSWER);
    cr_assert_eq(zkl__conf_parse("HTTP/1.1 400 Bad Request\r\n\r\n", &lag), ZKL__CONF_NO_ANSWER);
    cr_assert_eq(zkl__conf_parse("tickTime=x\nsyncLimit=2\n", &lag), ZKL__CONF_NO_ANSWER);
    cr_assert_eq(zkl__conf_parse("tickTime=0\n", &lag), ZKL__CONF_NO_ANSWER);
    cr_assert_eq(zkl__conf_parse("tickTime=2000000000\nsyncLimit=2000000000\n", &lag),
                 ZKL__CONF_NO_ANSWER, "a lag past int is not a lag");
    cr_assert_eq(zkl__conf_parse("xtickTime=500\n", &lag), ZKL__CONF_NO_ANSWER, "whole keys only");
}

/* `srvr` replies of ZooKeeper 3.8's servers: the "Mode:" line. */
Test(serverconf, srvr_tells_a_standalone_server_from_an_ensemble_member)
{
    static const char head[] = "Zookeeper version: 3.8.0-11+deb12u2, built on 2024-06-16\n"
                               "Latency min/avg/max: 0/0.1/3\nReceived: 12\nSent: 11\n"
                               "Connections: 1\nOutstanding: 0\nZxid: 0x100000002\n";
    char reply[512];
    snprintf(reply, sizeof reply, "%sMode: standalone\nNode count: 5\n", head);
    cr_assert_eq(zkl__srvr_parse(reply), ZKL__MODE_STANDALONE);
    snprintf(reply, sizeof reply, "%sMode: follower\nNode count: 5\n", head);
    cr_assert_eq(zkl__srvr_parse(reply), ZKL__MODE_ENSEMBLE);
    snprintf(reply, sizeof reply, "%sMode: leader\nNode count: 5\nProposal sizes: -1\n", head);
    cr_assert_eq(zkl__srvr_parse(reply), ZKL__MODE_ENSEMBLE);
    snprintf(reply, sizeof reply, "%sMode: observer\n", head);
    cr_assert_eq(zkl__srvr_parse(reply), ZKL__MODE_ENSEMBLE);
    cr_assert_eq(zkl__srvr_parse("srvr is not executed because it is not in the whitelist.\n"),
                 ZKL__MODE_UNKNOWN);
    cr_assert_eq(zkl__srvr_parse("This ZooKeeper instance is not currently serving requests\n"),
                 ZKL__MODE_UNKNOWN);
    cr_assert_eq(zkl__srvr_parse(""), ZKL__MODE_UNKNOWN);
    cr_assert_eq(zkl__srvr_parse("Mode: read-only\n"), ZKL__MODE_UNKNOWN, "not a mode we know");
    cr_assert_eq(zkl__srvr_parse("XMode: standalone\n"), ZKL__MODE_UNKNOWN, "whole lines only");
}
