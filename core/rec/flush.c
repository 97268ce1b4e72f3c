/* The recorder's early writeback (issue 12): a streamed run's pages reach
 * its file as SQLite's cache spills them (the scratch of a new file, or
 * the -wal of an existing one), and the kernel would write them to disk
 * only at the fsync that makes the run durable (rec/txn.c), which then
 * waits for all of them (12 MB: 50 ms here). Asking the kernel to start
 * writing what is dirty while the run goes on leaves that fsync the last
 * pages. Durability is unchanged: the fsync still comes before the run
 * counts as recorded. */
#define _GNU_SOURCE /* sync_file_range (Linux) */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "rec/impl.h"

int rec_flush_open(const rec_db *db)
{
    char wal[4096];
    const char *file = db->pending;
    if (!file) {
        if (snprintf(wal, sizeof wal, "%s-wal", db->path) >= (int)sizeof wal)
            return -1;
        file = wal;
    }
    return open(file, O_RDONLY | O_CLOEXEC);
}

void rec_flush_start(int fd)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (fd >= 0)
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
#endif
}
