/* Process-wide limits of one `pipesim run`: a stop request (SIGINT,
 * SIGTERM, the --timeout alarm, the memory budget) that the engine and the
 * Lua hook poll, and the memory budget (--max-memory) that Lua's allocator
 * and pipesim's large buffers (program arenas, engine and network tables)
 * draw from. One process; the state is global and unlocked because only
 * the main thread touches it: the recorder's writer thread (rec/writer.c)
 * never does (its blocks are allocated by the main thread, SQLite's memory
 * is not in the budget, and it blocks every signal), and the stop flag is
 * written from signal handlers only through sig_atomic_t. */
#ifndef PS_LIMIT_H
#define PS_LIMIT_H

#include <stddef.h>

#include "base/err.h"

/* Why the run stops; LIMIT_NONE while it runs. */
enum limit_stop {
    LIMIT_NONE = 0,
    LIMIT_TIMEOUT, /* --timeout seconds of wall clock have passed */
    LIMIT_MEMORY,  /* an allocation would pass --max-memory */
    LIMIT_SIGINT,
    LIMIT_SIGTERM,
};

/* Installs the SIGINT and SIGTERM handlers (a second signal of either kind
 * kills with the default action) and, for seconds > 0, a one-shot
 * wall-clock timer. on_stop (may be NULL) is called whenever a stop is
 * requested, also from the signal handler: it must be async-signal-safe.
 * Returns 0, or PS_ERR when the timer cannot be set. */
int limit_start(double seconds, void (*on_stop)(void), ps_err *err);
/* Restores the default signal actions and cancels the timer. */
void limit_end(void);
/* Only finalizers are left to run (the runs are committed): from here a
 * new stop ends the process at once with its message, since Lua cannot
 * interrupt a __gc metamethod. Every stop also ends the process so when
 * the normal path has not ended it within 5 s (a finalizer looping
 * during the scenario or at exit, a call blocked in C). */
void limit_final(void);

/* The stop requested so far (an enum limit_stop); cheap: poll it. */
int limit_stopped(void);
/* Requests a stop; the first reason wins. */
void limit_request_stop(int reason);
/* Forgets the stop and its position (for tests, or a host that runs one
 * scenario after another). */
void limit_reset(void);
/* Where the stop was noticed, "x.lua:3: ", kept for limit_message (the
 * first call wins; at most ~200 bytes kept). */
void limit_note_where(const char *where);
/* The one-line message for the stop: "x.lua:2: time limit of 10 s
 * reached", "memory limit of 12 GiB reached (--max-memory)",
 * "interrupted". Returns buf. */
const char *limit_message(char *buf, size_t size);
/* 1 when the stop already has a position (limit_note_where). */
int limit_has_where(void);
/* What the allocation that hit the memory budget was for, appended to the
 * memory stop's message after a colon: "the run's programs need 1.5 GiB as
 * arrays (33.5 M ops)". The last call before the message wins (at most
 * ~300 bytes kept); limit_reset forgets it. */
void limit_note_need(const char *need);

/* --- memory --- */

/* The budget in bytes (0: none). limit_default_memory is half of the
 * machine's physical memory, or of the cgroup's (a container's) limit when
 * that is lower. */
void limit_set_memory(size_t bytes);
size_t limit_memory(void);
size_t limit_default_memory(void);
/* Bytes charged now (Lua's heap plus the buffers below). */
size_t limit_used(void);

/* Charges n bytes; returns 0, or -1 (nothing charged, a LIMIT_MEMORY stop
 * requested) when that would pass the budget. limit_force charges without
 * a check, for an overdraft the caller has bounded. */
int limit_charge(size_t n);
void limit_force(size_t n);
void limit_uncharge(size_t n);

/* malloc, calloc, realloc, aligned_alloc and free that charge what they
 * hold. NULL on failure: out of memory, or the budget (a LIMIT_MEMORY stop
 * is then requested). A block from these must go back through
 * limit_realloc or limit_free; limit_free(NULL) is a no-op. */
void *limit_malloc(size_t n);
void *limit_calloc(size_t count, size_t size);
void *limit_realloc(void *p, size_t n);
void *limit_aligned_alloc(size_t align, size_t n);
void limit_free(void *p);

/* Reads the whole file at path (a regular file, a pipe, a FIFO, a
 * terminal) into *bytes (from limit_malloc, NUL-terminated, *n long;
 * free it with limit_free), waiting for input until a stop is requested:
 * opening a FIFO does not wait for a writer, and a read with nothing to
 * read wakes up for the stop (--timeout, a signal). PS_ERR with "PATH:
 * why", or the stop's message. */
int limit_read_file(const char *path, char **bytes, size_t *n, ps_err *err);

/* "12 GiB", "64 MiB", "1.5 GiB", "1000 B": the budget as users write it. */
const char *limit_format_bytes(size_t bytes, char *buf, size_t size);

#endif
