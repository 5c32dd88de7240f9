/*
 * zklock.h - everything of zklock in one include.
 */
#ifndef ZKLOCK_ZKLOCK_H
#define ZKLOCK_ZKLOCK_H

#include "status.h"
#include "client.h"
#include "mutex.h"
#include "rwlock.h"
#include "semaphore.h"
#include "multilock.h"
#include "revoke.h"
#include "inspect.h"
#include "async.h"
#include "metrics.h"
#include "guard.h"
#include "leader.h"

#define ZKLOCK_VERSION "0.1.0"

#endif
