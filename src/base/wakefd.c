/*
 * wakefd.c - see wakefd.h.
 */
#define _GNU_SOURCE /* ppoll */
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "base/wakefd.h"

int zkl__wakefd_new(void)
{
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

/* ppoll on fds until one is readable or deadline_us; take what each has. */
static void sleep_on(struct pollfd *p, nfds_t n, int64_t deadline_us)
{
    struct timespec ts, *tsp = NULL;
    uint64_t got;
    nfds_t i;
    if (deadline_us != INT64_MAX) {
        int64_t left = deadline_us - zkl__now_us();
        if (left < 0)
            left = 0;
        ts.tv_sec = left / 1000000;
        ts.tv_nsec = (left % 1000000) * 1000;
        tsp = &ts;
    }
    if (ppoll(p, n, tsp, NULL) <= 0)
        return;
    for (i = 0; i < n; i++)
        if ((p[i].revents & POLLIN) && read(p[i].fd, &got, sizeof got) < 0)
            continue; /* EAGAIN: already taken; the caller looks again anyway */
}

void zkl__wakefd_sleep_until_us(int fd, int64_t deadline_us)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    sleep_on(&p, 1, deadline_us);
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

int zkl__alarmfd_new(void)
{
    return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
}

bool zkl__alarmfd_set(int afd, int64_t at_us)
{
    /* (an it_value of zero would disarm it: the earliest time is 1 ns) */
    struct itimerspec t = {.it_value = {.tv_sec = at_us > 0 ? at_us / 1000000 : 0,
                                        .tv_nsec = at_us > 0 ? (at_us % 1000000) * 1000 : 1}};
    return afd >= 0 && timerfd_settime(afd, TFD_TIMER_ABSTIME, &t, NULL) == 0;
}

void zkl__wakefd_sleep_alarm(int fd, int afd, int64_t deadline_us)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = afd, .events = POLLIN}};
    sleep_on(p, afd >= 0 ? 2 : 1, deadline_us);
}
