/* A sweep's worker processes and their scratch directories, without Lua
 * (run/proc.h): locked scratch directories that the next sweep reclaims
 * when their maker died, workers that die with the writer, and the
 * writer's watch over them. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE 1 /* d_type, prctl's header */
#endif
#include "run/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define PREFIX "pipesim-sweep."
/* a directory being made: visible under PREFIX only once locked */
#define NEW_PREFIX ".pipesim-sweep-new."
#define LOCK_FILE "lock"
/* a NEW_PREFIX directory without its lock this old was left by a maker
 * that died between mkdtemp and the lock (microseconds) */
#define NEW_STALE_S 60

static const char *tmp_root(const char *tmpdir)
{
    if (tmpdir && *tmpdir)
        return tmpdir;
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* Takes the write lock on the whole of fd's file without waiting: 0, or
 * -1 when another process holds it (or the lock fails). */
static int lock_file(int fd)
{
    struct flock fl = {0};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    return fcntl(fd, F_SETLK, &fl) == 0 ? 0 : -1;
}

/* The files of a scratch directory (it has no subdirectories) and the
 * directory. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char f[8600];
        snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
        unlink(f);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* 1 when name is one of this process's own directories (its lock would
 * not conflict with itself). */
static int own(const char *name)
{
    char mine[64];
    snprintf(mine, sizeof mine, PREFIX "%ld.", (long)getpid());
    return strncmp(name, mine, strlen(mine)) == 0;
}

/* Removes dir when its maker died: its lock can be taken. A directory
 * being made is left alone until it is stale: its maker creates the lock
 * file before it takes the lock, and another process taking the lock in
 * between must not remove it. 1 when removed. */
static int reclaim_one(const char *dir, int being_made)
{
    struct stat sb;
    if (being_made &&
        (stat(dir, &sb) != 0 || time(NULL) - sb.st_mtime < NEW_STALE_S))
        return 0;
    char lock[8400];
    snprintf(lock, sizeof lock, "%s/" LOCK_FILE, dir);
    int fd = open(lock, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        if (!being_made || errno != ENOENT)
            return 0; /* not ours to judge (an older pipesim's) */
        remove_tree(dir);
        return 1;
    }
    int dead = lock_file(fd) == 0;
    if (dead)
        remove_tree(dir); /* the lock held: no maker can come back */
    close(fd);
    return dead;
}

int proc_scratch_reclaim(const char *tmpdir)
{
    const char *root = tmp_root(tmpdir);
    DIR *d = opendir(root);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int visible = strncmp(e->d_name, PREFIX, strlen(PREFIX)) == 0;
        int made = strncmp(e->d_name, NEW_PREFIX, strlen(NEW_PREFIX)) == 0;
        if ((!visible && !made) || own(e->d_name))
            continue;
        char dir[8192];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        n += reclaim_one(dir, made);
    }
    closedir(d);
    return n;
}

int proc_scratch_make(proc_scratch *s, const char *tmpdir, ps_err *err)
{
    const char *root = tmp_root(tmpdir);
    s->dir[0] = '\0';
    s->lock_fd = -1;
    proc_scratch_reclaim(root);
    char made[4096], lock[4200];
    snprintf(made, sizeof made, "%s/" NEW_PREFIX "XXXXXX", root);
    if (!mkdtemp(made))
        return ps_errf(err,
                       "ps.sweep: cannot create a scratch directory in "
                       "%s: %s (set TMPDIR to a writable directory)",
                       root, strerror(errno));
    snprintf(lock, sizeof lock, "%s/" LOCK_FILE, made);
    /* the workers inherit the descriptor, not the lock (a record lock is
     * the process's), so their exit leaves it to this process */
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || lock_file(fd)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        remove_tree(made);
        return ps_errf(err,
                       "ps.sweep: cannot lock a scratch directory in "
                       "%s: %s",
                       root, strerror(e));
    }
    /* visible, and so reclaimable, only once locked */
    const char *suffix = made + strlen(made) - 6;
    snprintf(s->dir, sizeof s->dir, "%s/" PREFIX "%ld.%s", root, (long)getpid(),
             suffix);
    if (rename(made, s->dir) != 0) {
        int e = errno;
        close(fd);
        remove_tree(made);
        s->dir[0] = '\0';
        return ps_errf(err,
                       "ps.sweep: cannot create a scratch directory in "
                       "%s: %s",
                       root, strerror(e));
    }
    s->lock_fd = fd;
    return PS_OK;
}

void proc_scratch_remove(proc_scratch *s)
{
    if (s->dir[0])
        remove_tree(s->dir); /* the lock file with the rest */
    s->dir[0] = '\0';
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    s->lock_fd = -1;
}

void proc_scratch_forget(proc_scratch *s)
{
    s->dir[0] = '\0';
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* the child holds no lock: the parent keeps it */
    s->lock_fd = -1;
}

/* 1 from proc_child_init on in a worker process */
static int is_worker;

int proc_is_worker(void)
{
    return is_worker;
}

void proc_child_init(pid_t parent)
{
    is_worker = 1;
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    /* the writer died before the line above: nobody reads the results */
    if (getppid() != parent)
        _exit(1);
}

int proc_orphaned(pid_t parent)
{
    return getppid() != parent;
}

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double stop_grace(void)
{
    const char *g = getenv("PIPESIM_TEST_STOP_GRACE");
    double v = g && *g ? strtod(g, NULL) : 0;
    return v > 0 ? v : PROC_STOP_GRACE_S;
}

void proc_scratch_note(const proc_scratch *s, ps_err *err)
{
    struct statvfs fs;
    if (!err || !s->dir[0] || statvfs(s->dir, &fs) != 0)
        return;
    double avail = (double)fs.f_bavail * (double)fs.f_frsize;
    if (avail >= PROC_SCRATCH_LOW)
        return;
    const char *slash = strrchr(s->dir, '/');
    int root = slash ? (int)(slash - s->dir) : (int)strlen(s->dir);
    /* replaces the guess ("killed, or out of memory?") with the cause */
    ps_errf(err,
            "ps.sweep: a worker process stopped before its points were done: "
            "the scratch space of --jobs, in TMPDIR=%.*s, is full (%.0f KiB "
            "free): free space there, set TMPDIR to a directory with room, "
            "or run with --jobs 1",
            root, s->dir, avail / 1024);
}

int proc_watch(const pid_t *pids, int n, double *stopped_since, ps_err *err)
{
    for (int i = 0; i < n; i++) {
        if (pids[i] <= 0)
            continue;
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_PID, (id_t)pids[i], &info,
                   WEXITED | WSTOPPED | WNOHANG | WNOWAIT) != 0 ||
            info.si_pid == 0) {
            stopped_since[i] = 0; /* running (or continued) */
            continue;
        }
        int code = info.si_code, st = info.si_status;
        if (code == CLD_EXITED && st == 0)
            continue; /* no points were left for it */
        if (code == CLD_EXITED)
            return ps_errf(err,
                           "ps.sweep: worker process %ld ended with status %d "
                           "before its points were done",
                           (long)pids[i], st);
        if (code == CLD_KILLED || code == CLD_DUMPED)
            return ps_errf(err,
                           "ps.sweep: worker process %ld ended with signal %d "
                           "(%s) before its points were done (killed, or out "
                           "of memory?)",
                           (long)pids[i], st, strsignal(st));
        if (code != CLD_STOPPED && code != CLD_TRAPPED)
            continue;
        double now = monotonic();
        if (stopped_since[i] == 0)
            stopped_since[i] = now;
        double grace = stop_grace();
        if (now - stopped_since[i] >= grace)
            return ps_errf(err,
                           "ps.sweep: worker process %ld has been stopped "
                           "(signal %d, %s) for %g s, and the sweep cannot "
                           "finish without it: the sweep is abandoned (resume "
                           "a stopped worker within %g s with kill -CONT, or "
                           "run with --jobs 1)",
                           (long)pids[i], st, strsignal(st), grace, grace);
    }
    return PS_OK;
}
