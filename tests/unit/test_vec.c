/* base/vec.h's growable array: the capacity doubles from VEC_MIN_CAP, the
 * elements kept, the new ones zeroed, and a size that cannot be allocated
 * refused with the array and its capacity unchanged. */
#include "base/vec.h"

#include <stdint.h>
#include <stdlib.h>

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

int main(void)
{
    test_grow();
    return harness_done();
}
