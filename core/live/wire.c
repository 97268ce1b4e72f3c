/* A worker's data connections: framing, the send queue, staging of
 * messages that arrive before their receive is posted, socket byte counts
 * and the test-only injected latency and pacing (live_inject). */
#include "live/wire.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Reading                                                             */

/* Starts reading the message whose header c holds; 1 when it must wait
 * for its receive (stuck), 0 when started, -1 on a bad header or memory. */
static int start_message(wire_conn *c, wire_in *ins, int32_t nmsgs, ps_err *err)
{
    uint32_t magic = c->hdr[0];
    int32_t msg = (int32_t)c->hdr[1];
    uint64_t len = (uint64_t)c->hdr[2] | (uint64_t)c->hdr[3] << 32;
    if (magic != WIRE_MAGIC || msg < 0 || msg >= nmsgs)
        return ps_errf(err, "rank %d sent a damaged message header",
                       (int)c->peer);
    wire_in *in = &ins[msg];
    if (in->started || in->peer != c->peer)
        return ps_errf(err,
                       "rank %d sent message %d, which is not its to send "
                       "or came twice",
                       (int)c->peer, (int)msg);
    if (in->posted && in->len != len)
        return ps_errf(err,
                       "rank %d sent %llu bytes for message %d, the receive "
                       "expects %llu",
                       (int)c->peer, (unsigned long long)len, (int)msg,
                       (unsigned long long)in->len);
    if (!in->posted) {
        /* written so that a damaged length cannot wrap the sum */
        if (len > LIVE_STAGING || c->staged > LIVE_STAGING - len) {
            c->stuck = 1;
            return 1;
        }
        in->len = (size_t)len;
        in->buf = malloc(in->len + 1);
        if (!in->buf)
            return ps_errf(err, "out of memory staging a message");
        c->staged += in->len;
    }
    in->started = 1;
    in->got = 0;
    c->stuck = 0;
    c->cur = in;
    return 0;
}

static void finish_message(wire_conn *c, double now,
                           void (*done_cb)(void *, wire_in *), void *ctx)
{
    wire_in *in = c->cur;
    in->done = 1;
    in->t_end = now;
    c->cur = NULL;
    c->hdr_got = 0;
    done_cb(ctx, in);
}

/* Reads a streamed message's next bytes into the connection's chunk
 * buffer: read's result, or -2 with err set (no memory). */
static ssize_t read_chunk(wire_conn *c, wire_in *in, ps_err *err)
{
    if (!c->chunk && !(c->chunk = malloc(WIRE_CHUNK))) {
        ps_errf(err, "out of memory for a receive buffer");
        return -2;
    }
    size_t want = in->len - in->got, room = WIRE_CHUNK - c->chunk_fill;
    ssize_t n =
        read(c->fd, c->chunk + c->chunk_fill, want < room ? want : room);
    if (n > 0)
        c->chunk_fill += (size_t)n;
    return n;
}

/* Hands the whole units of the chunk buffer (all of it at the message's
 * end) to chunk_cb and keeps the remainder. */
static int hand_chunk(wire_conn *c, wire_in *in, ps_err *err)
{
    size_t give = in->got == in->len ? c->chunk_fill
                                     : c->chunk_fill - c->chunk_fill % in->unit;
    if (!give)
        return PS_OK;
    if (c->chunk_cb(c->chunk_ctx, in, in->got - c->chunk_fill, c->chunk, give,
                    err))
        return PS_ERR;
    c->chunk_fill -= give;
    memmove(c->chunk, c->chunk + give, c->chunk_fill);
    return PS_OK;
}

int wire_read(wire_conn *c, wire_in *ins, int32_t nmsgs, wire_bytes *bytes,
              double now, void (*done_cb)(void *ctx, wire_in *in), void *ctx,
              ps_err *err)
{
    for (;;) {
        if (!c->cur && c->stuck)
            return PS_OK;
        if (!c->cur && c->hdr_got < WIRE_HDR) {
            ssize_t n =
                read(c->fd, (char *)c->hdr + c->hdr_got, WIRE_HDR - c->hdr_got);
            if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return PS_OK;
            if (n == 0 && c->hdr_got == 0) {
                c->eof = 1;
                return PS_OK; /* the peer closed: fine once it is done */
            }
            if (n <= 0)
                return ps_errf(err, "the connection to rank %d broke",
                               (int)c->peer);
            c->hdr_got += (size_t)n;
            bytes->header += (double)n;
            bytes->progress++;
            if (c->hdr_got < WIRE_HDR)
                return PS_OK;
        }
        if (!c->cur && c->hdr[0] == WIRE_SIGNAL) {
            int32_t sg = (int32_t)c->hdr[1];
            if (sg < 0 || sg >= c->nsignals || c->hdr[2] || c->hdr[3])
                return ps_errf(err, "rank %d sent a damaged signal",
                               (int)c->peer);
            c->raised[sg] = 1;
            c->hdr_got = 0;
            continue;
        }
        if (!c->cur) {
            int rc = start_message(c, ins, nmsgs, err);
            if (rc)
                return rc < 0 ? PS_ERR : PS_OK;
            if (c->cur->len == 0) {
                finish_message(c, now, done_cb, ctx);
                continue;
            }
        }
        wire_in *in = c->cur;
        ssize_t n = in->unit
                        ? read_chunk(c, in, err)
                        : read(c->fd, in->buf + in->got, in->len - in->got);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return PS_OK;
        if (n <= 0)
            return n == -2 ? PS_ERR
                           : ps_errf(err, "the connection to rank %d broke",
                                     (int)c->peer);
        in->got += (size_t)n;
        bytes->recvd += (double)n;
        bytes->progress++;
        if (in->unit && hand_chunk(c, in, err))
            return PS_ERR;
        if (in->got == in->len)
            finish_message(c, now, done_cb, ctx);
    }
}

int wire_post(wire_conn *c, wire_in *in, int32_t msg)
{
    in->posted = 1;
    if (in->started) { /* staged, whole or in part: it is ours now */
        c->staged -= in->len;
        return 0;
    }
    if (!in->direct && !in->unit && !(in->buf = malloc(in->len + 1)))
        return -1;
    /* the connection waited for this receive */
    if (c->stuck && (int32_t)c->hdr[1] == msg)
        c->stuck = 0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

/* Payload bytes the head message may have written by now (pacing). */
static size_t paced_limit(const wire_out *o, const live_inject *inj, double now)
{
    if (!(inj->bandwidth > 0))
        return o->ready;
    double t = now - o->not_before;
    double allowed = t > 0 ? floor(t * inj->bandwidth) : 0;
    return allowed >= (double)o->ready ? o->ready : (size_t)allowed;
}

double wire_next_write(const wire_conn *c, const live_inject *inj, double now)
{
    const wire_out *o = c->head;
    if (!o)
        return INFINITY;
    if (now < o->not_before)
        return o->not_before;
    size_t done = o->off > WIRE_HDR ? o->off - WIRE_HDR : 0;
    if (o->off >= WIRE_HDR && done >= o->ready && done < o->len)
        return INFINITY; /* an early send waits for its data, not a time */
    if (done >= paced_limit(o, inj, now) && done < o->len) {
        /* pacing: when the next 16 KiB (or the rest) are due, so that the
         * last byte leaves when latency + len / bandwidth says */
        double next = (double)done + 16384 < (double)o->len
                          ? (double)done + 16384
                          : (double)o->len;
        return o->not_before + next / inj->bandwidth;
    }
    return 0;
}

int wire_write(wire_conn *c, const live_inject *inj, wire_bytes *bytes,
               double now, void (*done_cb)(void *ctx, wire_out *out), void *ctx,
               ps_err *err)
{
    while (c->head) {
        wire_out *o = c->head;
        if (now < o->not_before)
            return PS_OK;
        size_t limit = paced_limit(o, inj, now);
        size_t hdr_left = o->off < WIRE_HDR ? WIRE_HDR - o->off : 0;
        size_t done = o->off > WIRE_HDR ? o->off - WIRE_HDR : 0;
        if (!hdr_left && done >= limit && done < o->len)
            return PS_OK;
        struct iovec iov[2];
        int k = 0;
        if (hdr_left)
            iov[k++] = (struct iovec){(char *)o->hdr + o->off, hdr_left};
        if (limit > done)
            iov[k++] =
                (struct iovec){(char *)(uintptr_t)o->data + done, limit - done};
        if (o->off == 0)
            o->t_first = now;
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t n = k ? sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return PS_OK;
        if (n < 0)
            return ps_errf(err, "the connection to rank %d broke",
                           (int)c->peer);
        size_t h = (size_t)n < hdr_left ? (size_t)n : hdr_left;
        bytes->header += (double)h;
        bytes->sent += (double)((size_t)n - h);
        bytes->progress++;
        o->off += (size_t)n;
        if (o->off < WIRE_HDR + o->len)
            continue; /* the kernel may take more, or says EAGAIN */
        o->done = 1;
        o->t_last = now;
        c->head = o->next;
        if (!c->head)
            c->tail = NULL;
        done_cb(ctx, o);
    }
    return PS_OK;
}
