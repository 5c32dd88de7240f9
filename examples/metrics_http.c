/*
 * metrics_http.c - lock metrics over HTTP for Prometheus, with
 * zkl_process_metrics and plain sockets.
 *
 *   zklock_example_metrics_http HOSTS [PATH [PORT [SECONDS]]]
 *
 * Two clients, named "jobs" and "reports" (zkl_client_set_name), as two
 * parts of one service might have, each with a worker thread that takes
 * and lets go of a mutex at PATH in a loop; the main thread serves GET
 * /metrics on 127.0.0.1:PORT (0, the default: any free port): one
 * OpenMetrics text for the whole process, its series told apart by their
 * client label. One request at a time. It prints "listening on
 * 127.0.0.1:PORT" once it listens, and exits 0 after SECONDS (default 30)
 * or at SIGINT/SIGTERM.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <zklock/zklock.h>

static atomic_bool stop;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop, true);
}

/* Take and let go of the mutex until told to stop. */
static void *work(void *arg)
{
    zkl_mutex *m = arg;
    while (!atomic_load(&stop)) {
        if (zkl_mutex_acquire(m, 1000) == ZKL_OK) {
            usleep(2000);
            zkl_mutex_release(m);
        }
        usleep(5000);
    }
    return NULL;
}

/* Write all of buf, or give up. */
static void send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* One HTTP/1.0 request: /metrics gets the text, anything else a 404. */
static void serve(int fd)
{
    char req[1024], head[256], *text = NULL;
    size_t need = 0, cap = 16384;
    ssize_t n = recv(fd, req, sizeof req - 1, 0);
    if (n <= 0)
        return;
    req[n] = '\0';
    if (strncmp(req, "GET /metrics ", 13) != 0 && strncmp(req, "GET /metrics\r", 13) != 0) {
        static const char nf[] = "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        send_all(fd, nf, sizeof nf - 1);
        return;
    }
    /* the text grows with the lock objects: ask again with the size it needs */
    for (;;) {
        char *t = realloc(text, cap);
        if (!t)
            break;
        text = t;
        if (zkl_process_metrics(text, cap, &need) == ZKL_OK)
            break;
        cap = need + 1;
    }
    if (!text || strlen(text) != need) {
        static const char err[] = "HTTP/1.0 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
        send_all(fd, err, sizeof err - 1);
        free(text);
        return;
    }
    snprintf(head, sizeof head,
             "HTTP/1.0 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; "
             "charset=utf-8\r\nContent-Length: %zu\r\n\r\n",
             need);
    send_all(fd, head, strlen(head));
    send_all(fd, text, need);
    free(text);
}

int main(int argc, char **argv)
{
    const char *hosts = argc > 1 ? argv[1] : "127.0.0.1:2181";
    const char *path = argc > 2 ? argv[2] : "/zklock-examples/metrics";
    int port = argc > 3 ? atoi(argv[3]) : 0, seconds = argc > 4 ? atoi(argv[4]) : 30, one = 1;
    struct sockaddr_in addr;
    socklen_t alen = sizeof addr;
    static const char *const names[2] = {"jobs", "reports"};
    zkl_client *c[2];
    zkl_mutex *m[2];
    pthread_t t[2];
    time_t end = time(NULL) + seconds;
    int lfd, i;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    for (i = 0; i < 2; i++) {
        if (zkl_client_open(hosts, NULL, &c[i]) != ZKL_OK ||
            zkl_client_set_name(c[i], names[i]) != ZKL_OK ||
            zkl_mutex_create(c[i], path, &m[i]) != ZKL_OK) {
            fprintf(stderr, "metrics_http: %s\n", zkl_errmsg());
            return 1;
        }
    }
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((uint16_t)port);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) {
        fprintf(stderr, "metrics_http: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        return 1;
    }
    printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
    fflush(stdout);
    for (i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, work, m[i]);
    while (!atomic_load(&stop) && time(NULL) < end) {
        struct pollfd p = {lfd, POLLIN, 0};
        if (poll(&p, 1, 200) == 1) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0) {
                serve(fd);
                close(fd);
            }
        }
    }
    atomic_store(&stop, true);
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    close(lfd);
    for (i = 0; i < 2; i++) {
        zkl_mutex_destroy(m[i]);
        zkl_client_close(c[i]);
    }
    return 0;
}
