/* A small counting test harness: each CHECK prints both values on failure;
 * main() ends with harness_done(), which prints "N passed, N failed" and
 * returns the exit status. */
#ifndef PS_HARNESS_H
#define PS_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int harness_passed, harness_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond)                                                              \
            harness_passed++;                                                  \
        else {                                                                 \
            harness_failed++;                                                  \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
        }                                                                      \
    } while (0)

#define CHECK_INT(got, want)                                                   \
    do {                                                                       \
        long long g_ = (long long)(got), w_ = (long long)(want);               \
        if (g_ == w_)                                                          \
            harness_passed++;                                                  \
        else {                                                                 \
            harness_failed++;                                                  \
            printf("FAIL %s:%d: %s = %lld, want %lld\n", __FILE__, __LINE__,   \
                   #got, g_, w_);                                              \
        }                                                                      \
    } while (0)

/* Relative tolerance 1e-9 (absolute near zero), as the closed-form tests
 * demand. */
#define CHECK_NEAR(got, want)                                                  \
    do {                                                                       \
        double g_ = (got), w_ = (want);                                        \
        double tol_ = 1e-9 * (fabs(w_) > 1 ? fabs(w_) : 1);                    \
        if (fabs(g_ - w_) <= tol_)                                             \
            harness_passed++;                                                  \
        else {                                                                 \
            harness_failed++;                                                  \
            printf("FAIL %s:%d: %s = %.17g, want %.17g\n", __FILE__, __LINE__, \
                   #got, g_, w_);                                              \
        }                                                                      \
    } while (0)

#define CHECK_STR(got, want)                                                   \
    do {                                                                       \
        const char *g_ = (got), *w_ = (want);                                  \
        if (g_ && w_ && strcmp(g_, w_) == 0)                                   \
            harness_passed++;                                                  \
        else {                                                                 \
            harness_failed++;                                                  \
            printf("FAIL %s:%d: %s = \"%s\", want \"%s\"\n", __FILE__,         \
                   __LINE__, #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)");    \
        }                                                                      \
    } while (0)

/* got contains the substring want */
#define CHECK_HAS(got, want)                                                   \
    do {                                                                       \
        const char *g_ = (got), *w_ = (want);                                  \
        if (g_ && w_ && strstr(g_, w_))                                        \
            harness_passed++;                                                  \
        else {                                                                 \
            harness_failed++;                                                  \
            printf("FAIL %s:%d: %s = \"%s\", want it to contain \"%s\"\n",     \
                   __FILE__, __LINE__, #got, g_ ? g_ : "(null)",               \
                   w_ ? w_ : "(null)");                                        \
        }                                                                      \
    } while (0)

static inline int harness_done(void)
{
    printf("%d passed, %d failed\n", harness_passed, harness_failed);
    return harness_failed ? 1 : 0;
}

#endif
