/* A scenario's version (run.scenario, which pipesim merge compares across
 * shards): FNV-1a 64 over the script's bytes and the -D arguments as
 * ps.args sees them. Plain C: the binding hands in the bytes it read and
 * the session's arguments. */
#ifndef PS_RUN_VERSION_H
#define PS_RUN_VERSION_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64's offset basis: the hash of no bytes */
#define RUN_FNV1A_BASIS 0xcbf29ce484222325u

/* h with the n bytes at p hashed in (FNV-1a 64). */
uint64_t run_fnv1a(uint64_t h, const void *p, size_t n);

/* Writes "fnv1a64:<16 hex>" into out (cap bytes, 25 or more) for a script
 * whose bytes hash to src_hash (run_fnv1a from RUN_FNV1A_BASIS) and its
 * ndefs "key=value" -D arguments: NUL-separated, by key, each key once
 * with its last value, so that shards of one command line agree whatever
 * the order of their -D arguments, and an edited script or other values
 * do not. Files the script requires are not included. Out of memory, the
 * arguments are left out. */
void run_version(uint64_t src_hash, const char *const *defs, int ndefs,
                 char *out, size_t cap);

#endif
