/* A small counting test harness: each CHECK prints both values on failure;
 * main() ends with harness_done(), which prints "checks: N passed, N
 * failed" (every check run, loops counted per iteration) and then "N
 * passed, N failed" for the cases (each CHECK written in the source, which
 * fails when any of its runs failed), and returns the exit status. */
#ifndef PS_HARNESS_H
#define PS_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int harness_passed, harness_failed;      /* checks run */
static int harness_cases, harness_cases_failed; /* call sites */

/* Counts one check of the call site it is expanded at: the site becomes a
 * case the first time it runs, and a failed case the first time it fails
 * (a static per expansion). */
#define HARNESS_COUNT(ok)                                                      \
    do {                                                                       \
        static int seen_, bad_;                                                \
        if (!seen_) {                                                          \
            seen_ = 1;                                                         \
            harness_cases++;                                                   \
        }                                                                      \
        if (ok)                                                                \
            harness_passed++;                                                  \
        else {                                                                 \
            harness_failed++;                                                  \
            if (!bad_) {                                                       \
                bad_ = 1;                                                      \
                harness_cases_failed++;                                        \
            }                                                                  \
        }                                                                      \
    } while (0)

/* A check with a message of its own, printf-style, printed on failure. */
#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        int ok_ = (cond) ? 1 : 0;                                              \
        HARNESS_COUNT(ok_);                                                    \
        if (!ok_) {                                                            \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                        \
            printf(__VA_ARGS__);                                               \
            printf("\n");                                                      \
        }                                                                      \
    } while (0)

#define CHECK(cond)                                                            \
    do {                                                                       \
        int ok_ = (cond) ? 1 : 0;                                              \
        HARNESS_COUNT(ok_);                                                    \
        if (!ok_) {                                                            \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);             \
        }                                                                      \
    } while (0)

#define CHECK_INT(got, want)                                                   \
    do {                                                                       \
        long long g_ = (long long)(got), w_ = (long long)(want);               \
        int ok_ = (g_ == w_) ? 1 : 0;                                          \
        HARNESS_COUNT(ok_);                                                    \
        if (!ok_) {                                                            \
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
        int ok_ = (fabs(g_ - w_) <= tol_) ? 1 : 0;                             \
        HARNESS_COUNT(ok_);                                                    \
        if (!ok_) {                                                            \
            printf("FAIL %s:%d: %s = %.17g, want %.17g\n", __FILE__, __LINE__, \
                   #got, g_, w_);                                              \
        }                                                                      \
    } while (0)

#define CHECK_STR(got, want)                                                   \
    do {                                                                       \
        const char *g_ = (got), *w_ = (want);                                  \
        int ok_ = (g_ && w_ && strcmp(g_, w_) == 0) ? 1 : 0;                   \
        HARNESS_COUNT(ok_);                                                    \
        if (!ok_) {                                                            \
            printf("FAIL %s:%d: %s = \"%s\", want \"%s\"\n", __FILE__,         \
                   __LINE__, #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)");    \
        }                                                                      \
    } while (0)

/* got contains the substring want */
#define CHECK_HAS(got, want)                                                   \
    do {                                                                       \
        const char *g_ = (got), *w_ = (want);                                  \
        int ok_ = (g_ && w_ && strstr(g_, w_)) ? 1 : 0;                        \
        HARNESS_COUNT(ok_);                                                    \
        if (!ok_) {                                                            \
            printf("FAIL %s:%d: %s = \"%s\", want it to contain \"%s\"\n",     \
                   __FILE__, __LINE__, #got, g_ ? g_ : "(null)",               \
                   w_ ? w_ : "(null)");                                        \
        }                                                                      \
    } while (0)

static inline int harness_done(void)
{
    printf("checks: %d passed, %d failed\n", harness_passed, harness_failed);
    printf("%d passed, %d failed\n", harness_cases - harness_cases_failed,
           harness_cases_failed);
    return harness_failed ? 1 : 0;
}

#endif
