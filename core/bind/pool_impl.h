/* Internal to core.sweep_map: the writer (bind/pool.c) and its forked
 * worker processes (bind/worker.c). */
#ifndef PS_POOL_IMPL_H
#define PS_POOL_IMPL_H

#include <lua.h>
#include <stddef.h>
#include <sys/types.h>

#include "bind/bind.h"

/* Databases one chunk may record into. */
#define POOL_MAX_DBS 16

/* Writes n bytes to fd (a pipe), retrying interrupted writes; gives up
 * quietly when the pipe is gone (the reader notices the missing bytes). */
void pool_write_all(int fd, const void *buf, size_t n);

/* A worker's life, in the child right after fork(): chunks from task_fd
 * until it is empty (points (c - 1) * size + 1 ... of n, evaluated by the
 * function at stack index eval), each announced on done_fd, results and
 * scratch databases in dir; writer is the parent. Never returns. Its Lua
 * state is closed before _exit, so that the worker frees what it
 * allocated (valgrind checks workers too, tests/run.sh); the finalizers
 * of what it inherited leave the writer's resources alone: the writer's
 * SQLite connections are not touched (bind/core.c db_gc), and the caller
 * made the pool forget the writer's other workers and directory. */
_Noreturn void pool_worker_main(lua_State *L, int eval, const char *dir,
                                pid_t writer, int task_fd, int done_fd,
                                lua_Integer n, lua_Integer size);

#endif
