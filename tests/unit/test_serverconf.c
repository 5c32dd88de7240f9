/*
 * test_serverconf.c - reading the lag from a server's `conf` reply
 * (services/serverconf.c), on replies of ZooKeeper 3.8's servers.
 */
#include <criterion/criterion.h>

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
