/* A database's files as the recorder opens them (issue 27 items 4, 7, 15):
 * its path as an SQLite URI (so that a reader can ask for read-only or
 * immutable access, and a path that happens to start with "file:" is
 * still a path), the check that it is a regular file (a FIFO would block
 * SQLite's first read forever, a directory fails with "disk I/O error"),
 * and the -wal and -shm files a read-only connection leaves beside a
 * database in WAL mode, which SQLite itself removes only from a
 * connection that can write. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rec/impl.h"

/* The unix VFS's dead-man-switch byte in the -shm file (sqlite3.c,
 * os_unix.c: UNIX_SHM_DMS = (22 + SQLITE_SHM_NLOCK) * 4 + SQLITE_SHM_NLOCK
 * = 128, SQLite 3.7 to 3.46): every connection using the -shm holds a
 * read lock on it while it is open, and the last one to close takes the
 * write lock before it deletes the file. */
#define SHM_DMS 128

char *rec_uri(const char *path, const char *params)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path);
    size_t cap = 5 + 3 * n + 1 + (params ? strlen(params) + 1 : 0);
    char *u = malloc(cap);
    if (!u)
        return NULL;
    char *o = u;
    memcpy(o, "file:", 5);
    o += 5;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || strchr("/._-~+,=@", c);
        /* "file://" would start an authority: the leading slash of
         * "//x" is escaped */
        if (c == '/' && i == 0 && path[1] == '/')
            plain = 0;
        if (plain) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    if (params) {
        *o++ = '?';
        memcpy(o, params, strlen(params));
        o += strlen(params);
    }
    *o = '\0';
    return u;
}

const char *rec_dir_of(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, n, ".");
    else if (slash == path)
        snprintf(buf, n, "/");
    else
        snprintf(buf, n, "%.*s", (int)(slash - path), path);
    return buf;
}

int rec_check_path(const char *path, ps_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return errno == ENOENT ? 1
                               : ps_errf(err, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return ps_errf(err,
                       "%s is a directory, not a database file (name a file "
                       "in it, such as %s/results.db)",
                       path, path);
    if (!S_ISREG(sb.st_mode))
        return ps_errf(err,
                       "%s is not a regular file (%s): a pipesim database is "
                       "a file SQLite can seek in",
                       path,
                       S_ISFIFO(sb.st_mode)   ? "a FIFO"
                       : S_ISCHR(sb.st_mode)  ? "a character device"
                       : S_ISBLK(sb.st_mode)  ? "a block device"
                       : S_ISSOCK(sb.st_mode) ? "a socket"
                                              : "not a file");
    return PS_OK;
}

static int exists(const char *path, const char *suffix)
{
    char f[4200];
    snprintf(f, sizeof f, "%s%s", path, suffix);
    return access(f, F_OK) == 0;
}

unsigned rec_sidecars(const char *path)
{
    return (exists(path, "-wal") ? REC_HAD_WAL : 0) |
           (exists(path, "-shm") ? REC_HAD_SHM : 0);
}

void rec_sidecars_tidy(const char *path, unsigned had)
{
    if ((had & (REC_HAD_WAL | REC_HAD_SHM)) == (REC_HAD_WAL | REC_HAD_SHM))
        return; /* both were there before: someone else's */
    char wal[4200], shm[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    int fd = open(shm, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    /* no connection of any process has the -shm open (else its read
     * lock on the byte refuses ours); a new one finds the byte locked,
     * gets SQLITE_BUSY and opens the files again once they are gone, as
     * after SQLite's own deletion */
    struct flock fl = {0};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = SHM_DMS;
    fl.l_len = 1;
    struct stat sb;
    if (fcntl(fd, F_SETLK, &fl) == 0) {
        /* a log with frames is data (a writer that died): kept */
        int empty = stat(wal, &sb) != 0 || sb.st_size == 0;
        if (empty && !(had & REC_HAD_WAL))
            unlink(wal);
        if (empty && !(had & REC_HAD_SHM))
            unlink(shm);
    }
    close(fd);
}
