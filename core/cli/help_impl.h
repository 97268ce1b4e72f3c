/* The help table (cli/help_text.c) that cli/help.c prints in its forms. */
#ifndef PS_HELP_IMPL_H
#define PS_HELP_IMPL_H

/* One option of a command. */
typedef struct help_opt {
    const char *names;    /* "-o, --output": the spellings, ", " between */
    const char *arg;      /* its value's name ("FILE"), NULL for a flag */
    const char *text;     /* what it does, lines of at most ~66 columns */
    const char *complete; /* its value's completion (help_text.c), or NULL */
} help_opt;

/* One command. */
typedef struct help_cmd {
    const char *name;     /* "run" */
    const char *summary;  /* one line, lowercase, no period */
    const char *synopsis; /* lines without "pipesim "; "    " continues one */
    const char *text;     /* paragraphs, a blank line between */
    const char *operands; /* the operands' completion, or NULL */
    const help_opt *opts; /* ends with names NULL */
    const char *examples; /* command lines, one a line */
} help_cmd;

/* Every command, in the order pipesim --help lists them; ends with name
 * NULL. */
extern const help_cmd help_cmds[];

#endif
