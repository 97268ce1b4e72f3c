/* Error reporting shared by every core module: a code and a one-line message.
 *
 * The rule, one for the whole core:
 *   - A function that takes a `ps_err *err` reports failure with a message:
 *     it returns PS_ERR (a pointer-returning one, NULL) after filling err,
 *     by ps_errf or by passing on the err its failed callee filled. err may
 *     be NULL when the caller does not care why. It never returns a bare -1.
 *   - A function without one cannot say why, so it fails in exactly one way
 *     its caller can word: out of memory (or, for a lookup, "not found").
 *     It returns -1 (an id-returning one, a negative id; a pointer, NULL)
 *     and the caller that has an err writes the message. These are the
 *     per-event and allocation helpers (eq_push, prog_push, net_start, the
 *     grow functions), which must not format strings.
 *   - PS_OK is 0 and PS_ERR is -1, so `if (f(...))` tests either kind.
 *   - Lua C functions raise Lua errors (luaL_error) instead, and the CLI's
 *     commands (cli/main.c) return exit statuses. */
#ifndef PS_ERR_H
#define PS_ERR_H

#define PS_OK 0
#define PS_ERR (-1)

/* What failed, in words: the return value says whether (PS_ERR), the
 * message says why; there is no code to branch on, since no caller ever
 * handled two failures differently. */
typedef struct ps_err {
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
/* ps_print_error of a formatted message; returns 1, the exit status
 * (commands in cli/main.c and out/export_cli.c return exit statuses). */
int ps_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
