/* libFuzzer target: live mode's data-connection reader (core/live/wire.c),
 * the parser of what a peer sends over TCP: headers (magic, message id,
 * length) and payloads, read into the records of 4 message ids whose
 * receives are posted or not (the first byte says which, and how many
 * bytes each expects), with staging of early messages; message 1, when
 * posted, is streamed through the chunk buffer in 4-byte units. The input is
 * written into a socketpair, closed, and read until the reader stops;
 * any outcome but a crash, a leak or a hang is fine (a damaged stream
 * fails with a message). */
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "live/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void done(void *ctx, wire_in *in)
{
    (void)in;
    ++*(int *)ctx;
}

/* a streamed message's chunks: each must lie inside its message */
static int chunk(void *ctx, wire_in *in, size_t off, const char *data,
                 size_t len, ps_err *err)
{
    (void)ctx, (void)data, (void)err;
    if (off + len > in->len || (len % in->unit && off + len != in->len))
        __builtin_trap();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 16)
        return 0;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 0;
    wire_in ins[4];
    memset(ins, 0, sizeof ins);
    wire_conn c = {.fd = sv[1], .peer = 1, .chunk_cb = chunk};
    for (int m = 0; m < 4; m++) {
        ins[m].peer = m == 3 ? 2 : 1; /* message 3 is another peer's */
        ins[m].len = (size_t)((data[0] >> (2 * m)) & 3) * 8;
        /* message 1, when posted, is streamed in 4-byte units */
        ins[m].unit = m == 1 && (data[0] & (0x10 << m)) ? 4 : 0;
        if (data[0] & (0x10 << m) && m < 3 && wire_post(&c, &ins[m], m)) {
            close(sv[0]);
            close(sv[1]);
            return 0;
        }
    }
    /* the stream: what a peer sent, then its end */
    size_t off = 1;
    while (off < size) {
        ssize_t n = write(sv[0], data + off, size - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(sv[0]);
    wire_bytes bytes = {0};
    ps_err err;
    int completed = 0;
    for (int round = 0; round < 64 && !c.eof; round++) {
        size_t before = c.hdr_got + (c.cur ? c.cur->got : 0);
        if (wire_read(&c, ins, 4, &bytes, 0, done, &completed, &err))
            break;
        if (c.stuck && !c.cur) /* waits for a receive that never comes */
            break;
        if (!c.eof && c.hdr_got + (c.cur ? c.cur->got : 0) == before &&
            !c.stuck)
            break;
    }
    for (int m = 0; m < 4; m++)
        free(ins[m].buf);
    free(c.chunk);
    close(sv[1]);
    return 0;
}
