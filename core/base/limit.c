/* Limits of one run: the stop flag (signals, --timeout, the memory budget)
 * and the memory accounting behind --max-memory. The signal handlers only
 * store into sig_atomic_t and call the async-signal-safe on_stop hook;
 * everything that formats or allocates runs later, in the normal flow. */
/* sigaction and setitimer are POSIX; malloc_usable_size is glibc's: ask
 * for both before the first system header */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1
#endif
#include "base/limit.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_reason;
static void (*stop_hook)(void);
static double timeout_seconds;
static char where_buf[256];
static int where_set;
static char need_buf[320]; /* limit_note_need, "" if none */

static size_t budget; /* 0: none */
static size_t used;

/* --- the hard stop (issue 27 item 3) ---
 * Lua runs no hook inside a __gc metamethod, so a finalizer that loops
 * (at a garbage collection during the scenario, or at lua_close) cannot
 * be stopped by raising. A stop is therefore backed by a second alarm:
 * once a stop is requested, the process has HARD_STOP_S to end by the
 * normal path (which keeps the finished runs); if the alarm rings first,
 * the handler writes the stop's message and _exits. After limit_final
 * (the runs are committed, only finalizers are left) a stop exits at
 * once. The messages are formatted in advance: a handler may only
 * write(). */
#define HARD_STOP_S 5.0
static volatile sig_atomic_t final_phase;
static volatile sig_atomic_t hard_armed;
static char hard_msg[3][200]; /* timeout, memory, interrupted */

static void hard_exit(void)
{
    int r = stop_reason;
    const char *m = r == LIMIT_TIMEOUT  ? hard_msg[0]
                    : r == LIMIT_MEMORY ? hard_msg[1]
                                        : hard_msg[2];
    ssize_t w = write(STDERR_FILENO, m, strlen(m));
    (void)w;
    _exit(r == LIMIT_SIGINT    ? 128 + SIGINT
          : r == LIMIT_SIGTERM ? 128 + SIGTERM
                               : 1);
}

static double hard_grace(void)
{
    const char *g = getenv("PIPESIM_TEST_HARD_STOP");
    double v = g && *g ? strtod(g, NULL) : 0;
    return v > 0 ? v : HARD_STOP_S;
}

/* One alarm in seconds, at least a microsecond (async-signal-safe:
 * setitimer); setitimer's result. */
static int alarm_in(double seconds)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = (time_t)seconds;
    it.it_value.tv_usec =
        (suseconds_t)((seconds - (double)(time_t)seconds) * 1e6);
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
        it.it_value.tv_usec = 1;
    return setitimer(ITIMER_REAL, &it, NULL);
}

static void on_signal(int sig);
static void set_action(int sig, void (*fn)(int), int flags);

static void request(int reason)
{
    int first = stop_reason == LIMIT_NONE;
    if (first)
        stop_reason = reason;
    if (final_phase && first)
        hard_exit();
    if (stop_hook)
        stop_hook();
    if (!hard_armed && stop_hook) { /* between limit_start and limit_end */
        hard_armed = 1;
        set_action(SIGALRM, on_signal, 0);
        alarm_in(hard_grace());
    }
}

static void on_signal(int sig)
{
    if (sig == SIGALRM && stop_reason != LIMIT_NONE)
        hard_exit(); /* the hard stop's alarm */
    request(sig == SIGINT    ? LIMIT_SIGINT
            : sig == SIGTERM ? LIMIT_SIGTERM
                             : LIMIT_TIMEOUT);
}

void limit_final(void)
{
    final_phase = 1; /* a stop already requested has its alarm armed */
}

/* The hard stop's messages, as limit_message words them. */
static void prepare_hard(void)
{
    static const char *const how = " (stopped at once: a __gc metamethod "
                                   "or a blocking call did not return)\n";
    char b[64];
    snprintf(hard_msg[0], sizeof hard_msg[0],
             "pipesim: time limit of %g s reached%s", timeout_seconds, how);
    snprintf(hard_msg[1], sizeof hard_msg[1],
             "pipesim: memory limit of %s reached (--max-memory)%s",
             limit_format_bytes(budget, b, sizeof b), how);
    snprintf(hard_msg[2], sizeof hard_msg[2], "pipesim: interrupted%s", how);
}

static void set_action(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

int limit_start(double seconds, void (*on_stop)(void), ps_err *err)
{
    stop_hook = on_stop;
    final_phase = 0;
    hard_armed = 0;
    /* SA_RESTART: SQLite's reads and writes carry on; SA_RESETHAND: a
     * second Ctrl-C stops a process that does not get to a check */
    set_action(SIGINT, on_signal, SA_RESTART | SA_RESETHAND);
    set_action(SIGTERM, on_signal, SA_RESTART | SA_RESETHAND);
    timeout_seconds = seconds;
    prepare_hard();
    if (seconds > 0) {
        /* no SA_RESTART: a read that waits for input that may never come
         * (io.read on a quiet stdin, io.open of a FIFO nobody writes)
         * fails with EINTR, and the Lua hook raises the stop right after
         * (SQLite retries its own reads and writes on EINTR) */
        set_action(SIGALRM, on_signal, 0);
        if (alarm_in(seconds))
            return ps_errf(err, "--timeout %g: cannot set the timer", seconds);
    }
    return PS_OK;
}

void limit_end(void)
{
    final_phase = 0;
    if (timeout_seconds > 0 || hard_armed) {
        struct itimerval it;
        memset(&it, 0, sizeof it);
        setitimer(ITIMER_REAL, &it, NULL);
        set_action(SIGALRM, SIG_DFL, 0);
    }
    set_action(SIGINT, SIG_DFL, 0);
    set_action(SIGTERM, SIG_DFL, 0);
    stop_hook = NULL;
}

int limit_stopped(void)
{
    return stop_reason;
}

void limit_request_stop(int reason)
{
    request(reason);
}

void limit_reset(void)
{
    stop_reason = LIMIT_NONE;
    where_set = 0;
    need_buf[0] = 0;
}

void limit_note_where(const char *where)
{
    if (where_set || !where)
        return;
    snprintf(where_buf, sizeof where_buf, "%s", where);
    where_set = 1;
}

int limit_has_where(void)
{
    return where_set;
}

void limit_note_need(const char *need)
{
    snprintf(need_buf, sizeof need_buf, "%s", need ? need : "");
}

const char *limit_message(char *buf, size_t size)
{
    const char *pos = where_set ? where_buf : "";
    char b[64];
    switch (stop_reason) {
    case LIMIT_TIMEOUT:
        snprintf(buf, size, "%stime limit of %g s reached", pos,
                 timeout_seconds);
        break;
    case LIMIT_MEMORY:
        snprintf(buf, size, "%smemory limit of %s reached (--max-memory)%s%s",
                 pos, limit_format_bytes(budget, b, sizeof b),
                 need_buf[0] ? ": " : "", need_buf);
        break;
    case LIMIT_SIGINT:
    case LIMIT_SIGTERM: snprintf(buf, size, "interrupted"); break;
    default: snprintf(buf, size, "running"); break;
    }
    return buf;
}

/* --- memory --- */

void limit_set_memory(size_t bytes)
{
    budget = bytes;
}

size_t limit_memory(void)
{
    return budget;
}

/* The memory limit of the process's cgroup (a container's), or 0 when
 * there is none: cgroup v2's memory.max ("max" when unlimited), else v1's
 * memory.limit_in_bytes (a huge number when unlimited). */
static size_t cgroup_limit(void)
{
    static const char *const files[] = {
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    };
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f)
            continue;
        unsigned long long v = 0;
        int n = fscanf(f, "%llu", &v);
        fclose(f);
        return n == 1 && v > 0 && v < ((size_t)-1) / 2 ? (size_t)v : 0;
    }
    return 0;
}

size_t limit_default_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return 0;
    size_t phys = (size_t)pages * (size_t)page, cg = cgroup_limit();
    return (cg && cg < phys ? cg : phys) / 2;
}

size_t limit_used(void)
{
    return used;
}

int limit_charge(size_t n)
{
    if (budget && (n > budget || used > budget - n)) {
        request(LIMIT_MEMORY);
        return -1;
    }
    used += n;
    return 0;
}

void limit_force(size_t n)
{
    used += n;
}

void limit_uncharge(size_t n)
{
    used = n < used ? used - n : 0;
}

/* Each block is charged its usable size, which free gives back; the
 * allocator's own rounding is thus counted too. */
static void *charged(void *p)
{
    if (p && limit_charge(malloc_usable_size(p))) {
        free(p);
        return NULL;
    }
    return p;
}

/* A request that alone passes the budget fails before it is made, so a
 * huge one never reaches the system (which might grant it lazily). */
static int too_big(size_t n)
{
    if (budget && n > budget - (used < budget ? used : budget)) {
        request(LIMIT_MEMORY);
        return 1;
    }
    return 0;
}

void *limit_malloc(size_t n)
{
    return too_big(n) ? NULL : charged(malloc(n));
}

void *limit_calloc(size_t count, size_t size)
{
    if (size && count > (size_t)-1 / size)
        return NULL;
    return too_big(count * size) ? NULL : charged(calloc(count, size));
}

void *limit_aligned_alloc(size_t align, size_t n)
{
    return too_big(n) ? NULL : charged(aligned_alloc(align, n));
}

void *limit_realloc(void *p, size_t n)
{
    if (!p)
        return limit_malloc(n);
    size_t old = malloc_usable_size(p);
    if (n > old && too_big(n - old))
        return NULL;
    void *q = realloc(p, n);
    if (!q)
        return NULL;
    size_t now = malloc_usable_size(q);
    if (now >= old) {
        if (limit_charge(now - old)) {
            /* rare: rounding passed the budget; keep q, it is charged */
            limit_force(now - old);
        }
    } else {
        limit_uncharge(old - now);
    }
    return q;
}

void limit_free(void *p)
{
    if (!p)
        return;
    limit_uncharge(malloc_usable_size(p));
    free(p);
}

const char *limit_format_bytes(size_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"GiB", "MiB", "KiB"};
    for (int i = 0; i < 3; i++) {
        size_t u = (size_t)1 << (30 - 10 * i);
        if (bytes >= u) {
            if (bytes % u == 0)
                snprintf(buf, size, "%zu %s", bytes / u, units[i]);
            else
                snprintf(buf, size, "%.1f %s", (double)bytes / (double)u,
                         units[i]);
            return buf;
        }
    }
    snprintf(buf, size, "%zu B", bytes);
    return buf;
}

/* --- reading a whole file --- */

/* Waits until fd (non-blocking) can be read or a stop is requested: 0,
 * or -1 on a stop. A FIFO nobody has opened for writing yet reads as
 * "not ready" on Linux, not as the end of the file. */
static int wait_readable(int fd)
{
    for (;;) {
        if (limit_stopped())
            return -1;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r = poll(&pf, 1, 200);
        if (r > 0) /* data, or the writer's end: the read says which */
            return 0;
        if (r < 0 && errno != EINTR)
            return 0; /* the read says why */
    }
}

int limit_read_file(const char *path, char **bytes, size_t *n, ps_err *err)
{
    *bytes = NULL;
    *n = 0;
    /* O_NONBLOCK: opening a FIFO waits for no writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ps_errf(err, "%s: %s", path, strerror(errno));
    struct stat sb;
    int regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    if (!regular && S_ISDIR(sb.st_mode)) {
        close(fd);
        return ps_errf(err, "%s: is a directory", path);
    }
    size_t cap = 0, len = 0;
    char *buf = NULL;
    int rc = PS_OK;
    for (;;) {
        if (len + 1 >= cap) {
            size_t grow = cap ? cap * 2 : 64 * 1024;
            char *b = limit_realloc(buf, grow);
            if (!b) {
                rc = limit_stopped() ? PS_ERR
                                     : ps_errf(err, "%s: out of memory", path);
                break;
            }
            buf = b;
            cap = grow;
        }
        /* a FIFO reads as empty until its writer comes: wait for data
         * (or the writer's close) before every read */
        if (!regular && wait_readable(fd)) {
            rc = PS_ERR;
            break;
        }
        ssize_t k = read(fd, buf + len, cap - 1 - len);
        if (k > 0) {
            len += (size_t)k;
            continue;
        }
        if (k == 0)
            break;
        if (errno == EINTR && !limit_stopped())
            continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) &&
            wait_readable(fd) == 0)
            continue;
        rc = limit_stopped() ? PS_ERR
                             : ps_errf(err, "%s: %s", path, strerror(errno));
        break;
    }
    close(fd);
    if (rc) {
        limit_free(buf);
        if (limit_stopped()) {
            char msg[512];
            ps_errf(err, "%s", limit_message(msg, sizeof msg));
        }
        return PS_ERR;
    }
    buf[len] = '\0';
    *bytes = buf;
    *n = len;
    return PS_OK;
}
