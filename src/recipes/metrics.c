/*
 * metrics.c - zkl_client_metrics and zkl_process_metrics (zklock/metrics.h),
 * on core/objects/metrics.c.
 */
#include "base/log.h"
#include "base/status.h"
#include "core/objects/metrics.h"
#include "zklock/metrics.h"

zkl_status zkl_client_metrics(zkl_client *c, char *buf, size_t len, size_t *needed)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!c || !buf)
        return zkl__fail(ZKL_EINVAL, "zkl_client_metrics: %s is NULL", c ? "buf" : "client");
    return zkl__metrics_write(c, buf, len, needed);
}

zkl_status zkl_process_metrics(char *buf, size_t len, size_t *needed)
{
    ZKL__REFUSE_IN_LOG();
    zkl__clear_err();
    if (!buf)
        return zkl__fail(ZKL_EINVAL, "zkl_process_metrics: buf is NULL");
    return zkl__metrics_write_process(buf, len, needed);
}
