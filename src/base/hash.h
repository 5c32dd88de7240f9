/*
 * hash.h - uthash, as the library uses it: include this, never <uthash.h>
 * itself, so that every table is made the same way.
 *  - uthash exits the process when it cannot allocate; a library must not.
 *    With HASH_NONFATAL_OOM an add that runs out of memory leaves the table
 *    as it was, and the element's hh.tbl NULL.
 *  - A new table starts with 4 buckets, not uthash's 32: the library keeps
 *    small tables per lock (a mutex's holders, a line's nodes made), most of
 *    one or two entries, and 32 buckets are 512 bytes each (lockbench's
 *    memory workload: a tenth of a held lock's cost). uthash doubles a
 *    table's buckets as it grows, so a big one costs what it did.
 */
#ifndef ZKL_BASE_HASH_H
#define ZKL_BASE_HASH_H

#define HASH_NONFATAL_OOM 1
#include <uthash.h>
/* (uthash defines them without #ifndef: redefined after it, read where a table is made) */
#undef HASH_INITIAL_NUM_BUCKETS
#undef HASH_INITIAL_NUM_BUCKETS_LOG2
#define HASH_INITIAL_NUM_BUCKETS 4U
#define HASH_INITIAL_NUM_BUCKETS_LOG2 2U

#endif
