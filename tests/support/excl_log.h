/*
 * excl_log.h - the mutual-exclusion checker shared by tests: holders of any
 * library (zklock threads, Curator processes) append "KIND EVENT WHO TOKEN"
 * lines to one O_APPEND file while they hold; the checker replays the file.
 *
 * KIND: M mutex, W write lock, R read lock, S semaphore lease.
 * EVENT: enter | exit. WHO: a unique holder name. TOKEN: fencing token or 0.
 */
#ifndef EXCL_LOG_H
#define EXCL_LOG_H

#include <stdint.h>

typedef struct excl_report {
    int lines, enters;
    int violations;        /* exclusive overlap, read inside write, or over max_shared */
    int token_regressions; /* a non-zero M/W token not above the previous one */
    int max_readers;       /* most R holders at once */
    int max_shared;        /* most S holders at once */
    int malformed;
    int handoffs_c_to_j, handoffs_j_to_c; /* exclusive hand-offs between "c-" and "j-" holders */
    char first_error[256];
} excl_report;

/* Open (create/truncate) a log for appending; returns an fd. */
int excl_open(const char *file);
/* Append one line with a single write(2). */
void excl_log(int fd, char kind, const char *event, const char *who, int64_t token);
/* Replay file; max_shared bounds S holders (0: no S lines expected). */
excl_report excl_check(const char *file, int max_shared);

#endif
