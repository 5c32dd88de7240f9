/*
 * sendfail.c - the wrapped ZooKeeper requests behind sendfail.h: each one
 * counts down zkt_sendfail and, at the armed one, returns ZSYSTEMERROR
 * without sending, so its completion never runs.
 */
#include <zookeeper/zookeeper.h>

#include "sendfail.h"

zkt_countdown zkt_sendfail;

/* __wrap_zkl__zkc_NAME(PARAMS): fail now, or call zklock's private
 * client's NAME(ARGS) (its names are zkl__zkc_NAME: cmake/private-zookeeper.sh;
 * the tests' own handles, on libzookeeper_mt, are not touched). */
#define SENDFAIL_WRAP(name, params, args)                                                          \
    int __real_zkl__zkc_##name params;                                                             \
    int __wrap_zkl__zkc_##name params;                                                             \
    int __wrap_zkl__zkc_##name params                                                              \
    {                                                                                              \
        return zkt_countdown_fire(&zkt_sendfail) ? ZSYSTEMERROR : __real_zkl__zkc_##name args;     \
    }

SENDFAIL_WRAP(zoo_acreate2,
              (zhandle_t * zh, const char *path, const char *value, int valuelen,
               const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
               const void *data),
              (zh, path, value, valuelen, acl, mode, completion, data))
SENDFAIL_WRAP(zoo_adelete,
              (zhandle_t * zh, const char *path, int version, void_completion_t completion,
               const void *data),
              (zh, path, version, completion, data))
SENDFAIL_WRAP(zoo_aexists,
              (zhandle_t * zh, const char *path, int watch, stat_completion_t completion,
               const void *data),
              (zh, path, watch, completion, data))
SENDFAIL_WRAP(zoo_aget,
              (zhandle_t * zh, const char *path, int watch, data_completion_t completion,
               const void *data),
              (zh, path, watch, completion, data))
SENDFAIL_WRAP(zoo_awget,
              (zhandle_t * zh, const char *path, watcher_fn watcher, void *ctx,
               data_completion_t completion, const void *data),
              (zh, path, watcher, ctx, completion, data))
SENDFAIL_WRAP(zoo_aset,
              (zhandle_t * zh, const char *path, const char *buffer, int buflen, int version,
               stat_completion_t completion, const void *data),
              (zh, path, buffer, buflen, version, completion, data))
SENDFAIL_WRAP(zoo_aget_children,
              (zhandle_t * zh, const char *path, int watch, strings_completion_t completion,
               const void *data),
              (zh, path, watch, completion, data))
SENDFAIL_WRAP(zoo_awget_children,
              (zhandle_t * zh, const char *path, watcher_fn watcher, void *ctx,
               strings_completion_t completion, const void *data),
              (zh, path, watcher, ctx, completion, data))
SENDFAIL_WRAP(zoo_amulti,
              (zhandle_t * zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
               void_completion_t completion, const void *data),
              (zh, count, ops, results, completion, data))
