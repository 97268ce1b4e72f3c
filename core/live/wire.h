/* Internal to live/: a worker's data connections. One TCP connection per
 * communicating pair of lanes (live/peers.c) carries the messages of both
 * directions,
 * each as a 16-byte header (magic, message id, length) and its payload,
 * and the signals one side raises for the other (a header alone).
 * Outgoing messages leave in the order their sends were posted; incoming
 * ones are read into the record of their message id (live/worker.c posts
 * the receives). Non-blocking: the worker's poll loop calls wire_read and
 * wire_write when the socket is ready, and they return without waiting. */
#ifndef PS_LIVE_WIRE_H
#define PS_LIVE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "live/live.h"
#include "sim/prog.h"

#define WIRE_MAGIC 0x564c5350u /* "PSLV" */
/* A signal raised for a lane of the peer (its id in the message id's
 * place, no payload): the pipelined tree's free slot. */
#define WIRE_SIGNAL 0x47535350u /* "PSSG" */
#define WIRE_HDR 16
/* The connection's buffer for streamed messages: small enough that a
 * chunk is still in the cache when it is applied. */
#define WIRE_CHUNK (128 * 1024)

/* One outgoing message. */
typedef struct wire_out {
    struct wire_out *next;
    uint32_t hdr[4]; /* magic, message id, length (low, high) */
    const char *data;
    size_t len;
    char *owned;       /* a copy of the payload (PROG_NOWAIT), or NULL */
    size_t off;        /* bytes of header and payload written */
    double not_before; /* injected latency: no byte before this time */
    size_t ready;      /* payload bytes that may leave: len, but less for
                          an early send (live/early.c) whose source is
                          still arriving */
    int posted;        /* its SEND is posted (early or with its batch) */
    double t_first, t_last;
    int done;
    int32_t lane, index; /* its SEND op */
} wire_out;

/* One incoming message, by message id. */
typedef struct wire_in {
    char *buf;
    size_t len, got;
    int posted;  /* its RECV is posted */
    int started; /* its header has been read */
    int done;    /* every byte read */
    int32_t lane, index, peer;
    double t_end;
    /* streamed (live_ops.recv_stream): buf is the front end's (direct),
     * or the bytes go through the connection's chunk buffer to its
     * chunk_cb, unit bytes at a time */
    int direct;
    size_t unit;
} wire_in;

/* Socket byte counts of one worker. */
typedef struct wire_bytes {
    double sent, recvd, header;
    uint64_t progress; /* bumped by every byte moved */
} wire_bytes;

typedef struct wire_conn {
    int fd;
    int32_t peer;
    wire_out *head, *tail;
    uint32_t hdr[4]; /* the header being read */
    size_t hdr_got;
    wire_in *cur;  /* the message being read, or NULL */
    size_t staged; /* bytes held of messages not yet posted */
    int stuck;     /* a whole header read, its message unposted and no
                      room to stage it: reading waits for its receive */
    int eof;
    uint8_t *raised; /* the worker's signals, raised by WIRE_SIGNAL */
    int32_t nsignals;
    /* streamed messages: chunk (WIRE_CHUNK bytes, made when first
     * needed) holds chunk_fill bytes read but not yet handed to chunk_cb
     * (a unit's remainder) */
    char *chunk;
    size_t chunk_fill;
    int (*chunk_cb)(void *ctx, wire_in *in, size_t off, const char *data,
                    size_t len, ps_err *err);
    void *chunk_ctx;
} wire_conn;

/* Reads what the socket has. ins holds nmsgs records; done_cb is called
 * for every message completed (its record; posted or staged) with ctx. Returns
 * 0, or fills err and returns PS_ERR on a closed connection or a damaged
 * stream. */
int wire_read(wire_conn *c, wire_in *ins, int32_t nmsgs, wire_bytes *bytes,
              double now, void (*done_cb)(void *ctx, wire_in *in), void *ctx,
              ps_err *err);

/* Writes what the socket takes, messages in order, paced by inj. Calls
 * done_cb for every message whose last byte was taken. Returns 0, or
 * fills err and returns PS_ERR when the peer is gone. */
int wire_write(wire_conn *c, const live_inject *inj, wire_bytes *bytes,
               double now, void (*done_cb)(void *ctx, wire_out *out), void *ctx,
               ps_err *err);

/* The earliest time the head message may write again (injected latency
 * or pacing), or 0 when it may now; INFINITY with nothing queued. */
double wire_next_write(const wire_conn *c, const live_inject *inj, double now);

/* A receive was posted for in (whose len is set): allocates its buffer
 * unless the message was staged or is streamed (in->direct, in->unit),
 * and releases a connection stuck on it. Returns 0, or -1 out of memory. */
int wire_post(wire_conn *c, wire_in *in, int32_t msg);

/* Connects rank to its peers, a connection per pair of lanes that
 * exchange messages (live/peers.c): through the listeners, listen_fd its
 * own and addr[r] rank r's. Fills *conns (nconn of them, owned by the
 * caller), *conn_of (message id -> connection, -1) and *sig_conn
 * (signal id -> the connection rank raises it through when a lane of
 * another rank waits on it, -1). Fails naming the peer. */
struct live_addr;
int wire_connect(const prog_set *ps, int32_t rank, int listen_fd,
                 const struct live_addr *addr, wire_conn **conns,
                 int32_t *nconn, int32_t **conn_of, int32_t **sig_conn,
                 ps_err *err);

#endif
