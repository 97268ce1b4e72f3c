/* Error reporting shared by every core module: a code and a one-line message.
 * Fallible functions return 0 on success or PS_ERR after filling the caller's
 * ps_err (which may be NULL when the caller does not care why). */
#ifndef PS_ERR_H
#define PS_ERR_H

#define PS_OK 0
#define PS_ERR (-1)

typedef struct ps_err {
    int code;       /* PS_OK or PS_ERR */
    char msg[4096]; /* lowercase, no trailing period, names the object */
} ps_err;

/* Formats the message into err (when non-NULL) and returns PS_ERR, so that
 * `return ps_errf(err, "...")` reads naturally. */
int ps_errf(ps_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Resets err to "no error". Harmless on NULL. */
void ps_err_clear(ps_err *err);

/* Prints "pipesim: msg" on stderr as exactly one line whatever msg holds:
 * a control character (a newline in a name the scenario or a database
 * gave) is written as an escape, \n or \xNN. The CLI's only error
 * printer. */
void ps_print_error(const char *msg);

#endif
