/* The command line's help: one text per command (cli/help.c's table), from
 * which pipesim --help, pipesim help COMMAND, pipesim COMMAND --help, the
 * man page (pipesim --man) and the bash and zsh completions (pipesim
 * --completion bash|zsh) are all printed, so that none can drift from the
 * others. */
#ifndef PS_HELP_H
#define PS_HELP_H

#include <stdio.h>

/* pipesim --help: the synopsis of every command and a line on each. */
void help_overview(FILE *out);

/* Whether name is a command with a help text (run, report, ...). */
int help_is_command(const char *name);

/* pipesim help [COMMAND | --man | --completion SHELL]: argv[0] is "help".
 * Returns the exit status; an unknown command is one line on stderr
 * naming the nearest command. */
int help_main(int argc, char **argv);

/* Whether the arguments of a command (argv[0] the command) ask for its
 * help: a "-h" or "--help" before any "--". */
int help_asked(int argc, char **argv);

/* pipesim COMMAND --help: the command's text on stdout; returns 0, or 1
 * (one line on stderr) when name has none. */
int help_command(const char *name);

/* The one-line error for an unknown command: with the nearest command
 * when one is close ("did you mean 'run'?"). Returns 1. */
int help_unknown(const char *name);

/* The man page pipesim(1) in roff. */
void help_man(FILE *out);

/* A completion script for shell "bash" or "zsh"; returns 0, or -1 for
 * another shell (nothing written). */
int help_completion(const char *shell, FILE *out);

#endif
