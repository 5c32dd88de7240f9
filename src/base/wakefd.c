/*
 * wakefd.c - see wakefd.h.
 */
#define _GNU_SOURCE /* ppoll */
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "base/wakefd.h"

int zkl__wakefd_new(void)
{
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void zkl__wakefd_sleep_until_us(int fd, int64_t deadline_us)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct timespec ts, *tsp = NULL;
    uint64_t n;
    if (deadline_us != INT64_MAX) {
        int64_t left = deadline_us - zkl__now_us();
        if (left < 0)
            left = 0;
        ts.tv_sec = left / 1000000;
        ts.tv_nsec = (left % 1000000) * 1000;
        tsp = &ts;
    }
    if (ppoll(&p, 1, tsp, NULL) > 0 && read(fd, &n, sizeof n) < 0)
        return; /* EAGAIN: already taken; the caller looks again anyway */
}

void zkl__wakefd_wake(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof one) < 0) /* EAGAIN only: the counter is full, a wake-up pending */
        return;
}

void zkl__wakefd_close(int fd)
{
    if (fd >= 0)
        close(fd);
}
