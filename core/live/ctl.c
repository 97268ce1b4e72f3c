/* The control channel between the coordinator and a worker: framed
 * messages over a stream socket, written and read whole (blocking), and
 * the clock both sides read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "live/impl.h"

/* Messages above this are refused as a damaged stream. */
#define CTL_MAX ((size_t)1 << 31)

double live_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double live_clock(void)
{
    return live_now();
}

int live_ctl_send(int fd, uint32_t type, const void *a, size_t alen,
                  const void *b, size_t blen)
{
    uint32_t hdr[2] = {type, (uint32_t)(alen + blen)};
    struct iovec iov[3] = {{hdr, sizeof hdr},
                           {(void *)(uintptr_t)a, alen},
                           {(void *)(uintptr_t)b, blen}};
    int at = 0;
    while (at < 3) {
        if (iov[at].iov_len == 0) {
            at++;
            continue;
        }
        struct msghdr mh = {.msg_iov = iov + at, .msg_iovlen = 3 - at};
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        while (n > 0 && at < 3) {
            size_t take =
                (size_t)n < iov[at].iov_len ? (size_t)n : iov[at].iov_len;
            iov[at].iov_base = (char *)iov[at].iov_base + take;
            iov[at].iov_len -= take;
            n -= (ssize_t)take;
            if (iov[at].iov_len == 0)
                at++;
        }
    }
    return 0;
}

int live_read_all(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, (char *)p + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k == 0)
            return got == 0 ? 1 : -1;
        if (k < 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

int live_ctl_recv(int fd, uint32_t *type, void **buf, size_t *cap, size_t *len)
{
    uint32_t hdr[2];
    int rc = live_read_all(fd, hdr, sizeof hdr);
    if (rc)
        return rc;
    if (hdr[1] >= CTL_MAX)
        return -1;
    if (hdr[1] + 1 > *cap) {
        void *p = realloc(*buf, (size_t)hdr[1] + 1);
        if (!p)
            return -1;
        *buf = p;
        *cap = (size_t)hdr[1] + 1;
    }
    if (hdr[1] && live_read_all(fd, *buf, hdr[1]))
        return -1;
    ((char *)*buf)[hdr[1]] = '\0'; /* text messages end there */
    *type = hdr[0];
    *len = hdr[1];
    return 0;
}
