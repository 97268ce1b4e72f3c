/* base/vec.h's growable array: the capacity doubles from VEC_MIN_CAP, the
 * elements kept, the new ones zeroed, and a size that cannot be allocated
 * refused with the array and its capacity unchanged; its byte buffer,
 * vec_append_bytes. */
#include "base/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void test_grow(void)
{
    int64_t *a = NULL;
    size_t cap = 0;
    CHECK_INT(VEC_RESERVE(a, cap, 0), 0);
    CHECK(a == NULL);
    CHECK_INT(VEC_RESERVE(a, cap, 1), 0);
    CHECK_INT(cap, VEC_MIN_CAP);
    for (size_t i = 0; i < 100; i++) {
        CHECK_INT(VEC_RESERVE(a, cap, i + 1), 0);
        a[i] = (int64_t)i * 3;
    }
    CHECK_INT(cap, 128); /* 8, 16, 32, 64, 128 */
    int kept = 1, zero = 1;
    for (size_t i = 0; i < 100; i++)
        kept &= a[i] == (int64_t)i * 3;
    for (size_t i = 100; i < cap; i++)
        zero &= a[i] == 0;
    CHECK(kept);
    CHECK(zero);
    /* a jump straight to its size, the doubling kept */
    CHECK_INT(VEC_RESERVE(a, cap, 1000), 0);
    CHECK_INT(cap, 1024);
    CHECK_INT(a[99], 297);
    CHECK_INT(a[1023], 0);
    /* more bytes than a size_t holds: refused, nothing changed */
    int64_t *before = a;
    CHECK_INT(VEC_RESERVE(a, cap, SIZE_MAX / 4), -1);
    CHECK(a == before);
    CHECK_INT(cap, 1024);
    CHECK_INT(a[99], 297);
    free(a);
}

/* The byte buffer: appends in order, an empty append changes nothing,
 * and a length that would pass SIZE_MAX is refused with nothing
 * appended. */
static void test_append(void)
{
    unsigned char *p = NULL;
    size_t n = 0, cap = 0;
    CHECK_INT(vec_append_bytes(&p, &n, &cap, "abc", 3), 0);
    CHECK_INT(vec_append_bytes(&p, &n, &cap, NULL, 0), 0);
    for (int i = 0; i < 10; i++)
        CHECK_INT(vec_append_bytes(&p, &n, &cap, "0123456789", 10), 0);
    CHECK_INT(n, 103);
    CHECK_INT(cap, 128);
    CHECK(memcmp(p, "abc0123456789012", 16) == 0);
    CHECK_INT(p[102], '9');
    CHECK_INT(vec_append_bytes(&p, &n, &cap, "x", SIZE_MAX - 50), -1);
    CHECK_INT(n, 103);
    CHECK_INT(cap, 128);
    free(p);
}

int main(void)
{
    test_grow();
    test_append();
    return harness_done();
}
