/*
 * links.h - the two parts of a link shape (test_links.sh): another user of
 * ZooKeeper on the system's libzookeeper_mt (other.c), and zklock
 * (lock.c). app.c calls them directly or through dlopen()ed plugins.
 */
#ifndef ZKL_TESTS_LINKS_H
#define ZKL_TESTS_LINKS_H

int links_other_open(const char *hosts);
int links_other_calls(const char *path);
void links_other_close(void);

int links_lock_open(const char *hosts, const char *path);
int links_lock_rounds(const char *log, const char *who, int rounds);
void links_lock_close(void);

#endif
