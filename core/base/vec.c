/* The growable array (base/vec.h). The array's pointer is read and written
 * through memcpy as a void *: every pipesim platform represents object
 * pointers alike (POSIX requires it of dlsym's), and the macro checks that
 * cap is a size_t. */
#include "base/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int vec_reserve(void *arrp, size_t *cap, size_t need, size_t elem)
{
    size_t old = *cap;
    if (need <= old)
        return 0;
    size_t c = old >= VEC_MIN_CAP ? old : VEC_MIN_CAP;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return -1;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return -1;
    void *p;
    memcpy(&p, arrp, sizeof p);
    void *q = realloc(p, c * elem);
    if (!q)
        return -1;
    memset((char *)q + old * elem, 0, (c - old) * elem);
    memcpy(arrp, &q, sizeof q);
    *cap = c;
    return 0;
}

int vec_append_bytes(unsigned char **p, size_t *len, size_t *cap,
                     const void *src, size_t n)
{
    if (n > SIZE_MAX - *len || VEC_RESERVE(*p, *cap, *len + n))
        return -1;
    if (n)
        memcpy(*p + *len, src, n);
    *len += n;
    return 0;
}
