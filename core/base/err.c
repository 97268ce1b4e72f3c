/* ps_err helpers: the one place messages are formatted. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

int ps_errf(ps_err *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return PS_ERR;
}

void ps_err_clear(ps_err *err)
{
    if (err) {
        err->msg[0] = '\0';
    }
}

void ps_print_error(const char *msg)
{
    fputs("pipesim: ", stderr);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if (*p == '\n')
            fputs("\\n", stderr);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(stderr, "\\x%02x", *p);
        else
            fputc(*p, stderr);
    }
    fputc('\n', stderr);
}

int ps_fail(const char *fmt, ...)
{
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ps_print_error(msg);
    return 1;
}
