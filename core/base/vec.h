/* The growable array: one way to make room in a plain C array that grows
 * by appending (issue 26 counted eight private grow helpers and 53 realloc
 * calls). The array stays a plain pointer with a size_t capacity beside
 * it, so structs and loops keep their shape:
 *
 *     row *rows = NULL;
 *     size_t n = 0, cap = 0;
 *     if (VEC_RESERVE(rows, cap, n + 1))
 *         return ps_errf(err, "out of memory");
 *     rows[n++] = r;
 *
 * The capacity doubles (from VEC_MIN_CAP), so n appends cost O(n) copies,
 * and the new elements are zeroed, so a table indexed by id reads 0 where
 * nothing was written. Allocation is plain realloc: buffers charged to the
 * run's memory budget (program arenas, the event queue: base/limit.h)
 * grow through limit_realloc instead. */
#ifndef PS_VEC_H
#define PS_VEC_H

#include <stddef.h>

#define VEC_MIN_CAP 8

/* Makes room for need elements of size elem in the array whose address is
 * arrp (a T **), of *cap elements now. Returns 0, or -1 when out of memory
 * or when the bytes would not fit a size_t: then the array and *cap are
 * unchanged, and still valid. Use VEC_RESERVE. */
int vec_reserve(void *arrp, size_t *cap, size_t need, size_t elem);

/* VEC_RESERVE(arr, cap, need): arr a T * lvalue, cap its size_t capacity
 * lvalue; both updated. */
#define VEC_RESERVE(arr, cap, need)                                            \
    vec_reserve(&(arr), &(cap), (size_t)(need), sizeof *(arr))

/* Appends n bytes from src to the byte array *p of *len bytes and capacity
 * *cap (all updated), growing it as VEC_RESERVE does: the one byte buffer
 * of the result files (bind/result.c), shipped runs (rec/ship.c) and the
 * embedded data (cli/embed_tool.c). Returns 0, or -1 with nothing
 * appended. */
int vec_append_bytes(unsigned char **p, size_t *len, size_t *cap,
                     const void *src, size_t n);

#endif
