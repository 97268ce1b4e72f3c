/* The command line's help in its text forms: pipesim --help, pipesim help
 * COMMAND (= pipesim COMMAND --help), the unknown-command line with its
 * suggestion, and the man page. Everything comes from help_text.c's table;
 * the completions are cli/help_comp.c. */
#include "cli/help.h"

#include <string.h>

#include "base/err.h"
#include "cli/help_impl.h"

#define OPT_COLUMN 24 /* where an option's text starts */
#define WIDTH 79      /* the last column of a line */

static const help_cmd *find_cmd(const char *name)
{
    for (const help_cmd *c = help_cmds; c->name; c++)
        if (name && strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

int help_is_command(const char *name)
{
    return find_cmd(name) != NULL;
}

/* The synopsis lines of c, each after lead (a line that starts with four
 * spaces continues the one above, aligned after "pipesim NAME "). */
static void put_synopsis(const help_cmd *c, const char *first, const char *lead,
                         FILE *out)
{
    const char *s = c->synopsis;
    int n = 0;
    while (*s) {
        size_t len = strcspn(s, "\n");
        if (strncmp(s, "    ", 4) == 0)
            fprintf(out, "%*s%.*s\n",
                    (int)(strlen(lead) + strlen("pipesim ") + strlen(c->name)),
                    "", (int)(len - 3), s + 3);
        else
            fprintf(out, "%spipesim %.*s\n", n ? lead : first, (int)len, s);
        n++;
        s += len + (s[len] == '\n');
    }
}

/* text, every line after indent spaces (blank lines stay blank). */
static void put_indented(const char *text, int indent, FILE *out)
{
    while (*text) {
        size_t len = strcspn(text, "\n");
        if (len)
            fprintf(out, "%*s%.*s\n", indent, "", (int)len, text);
        else
            fputc('\n', out);
        text += len + (text[len] == '\n');
    }
}

/* text filled to WIDTH columns from column OPT_COLUMN (its line breaks
 * are spaces), the first line after pad spaces. */
static void put_wrapped(const char *text, int pad, FILE *out)
{
    int col = OPT_COLUMN;
    fprintf(out, "%*s", pad, "");
    while (*text) {
        size_t len = strcspn(text, " \n");
        if (col > OPT_COLUMN && col + 1 + (int)len > WIDTH) {
            fprintf(out, "\n%*s", OPT_COLUMN, "");
            col = OPT_COLUMN;
        } else if (col > OPT_COLUMN) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)len, text);
        col += (int)len;
        text += len;
        while (*text == ' ' || *text == '\n')
            text++;
    }
    fputc('\n', out);
}

static void put_options(const help_opt *o, FILE *out)
{
    for (; o->names; o++) {
        int w = fprintf(out, "  %s%s%s", o->names, o->arg ? " " : "",
                        o->arg ? o->arg : "");
        if (w >= OPT_COLUMN) {
            fputc('\n', out);
            w = 0;
        }
        put_wrapped(o->text, OPT_COLUMN - w, out);
    }
}

void help_overview(FILE *out)
{
    int n = 0;
    for (const help_cmd *c = help_cmds; c->name; c++, n++)
        put_synopsis(c, n ? "       " : "usage: ", "       ", out);
    fputs("       pipesim --help | --version\n\nCommands:\n", out);
    for (const help_cmd *c = help_cmds; c->name; c++)
        fprintf(out, "  %-12s %s\n", c->name, c->summary);
    fputs("\npipesim help COMMAND or pipesim COMMAND --help: the command's "
          "options.\n"
          "pipesim help --man: the whole manual (man pipesim when "
          "installed).\n"
          "\nExamples:\n"
          "  pipesim run scenarios/demo.lua\n"
          "  pipesim report results/demo.db 2\n"
          "  pipesim export results/demo.db 2 --format chrome -o trace.json\n"
          "  sqlite3 results/demo.db < results/queries/bubble_per_rank.sql\n",
          out);
}

static void put_command(const help_cmd *c, FILE *out)
{
    put_synopsis(c, "usage: ", "       ", out);
    fprintf(out, "\n%s\n\n", c->summary);
    put_indented(c->text, 0, out);
    fputs("\nOptions:\n", out);
    put_options(c->opts, out);
    fputs("\nExamples:\n", out);
    put_indented(c->examples, 2, out);
}

int help_asked(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

int help_command(const char *name)
{
    const help_cmd *c = find_cmd(name);
    if (!c)
        return help_unknown(name);
    put_command(c, stdout);
    return 0;
}

/* Edit distance of a and b (Levenshtein; a transposition counts 2), for
 * names of up to 31 characters; longer ones are far from any command. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31)
        return 32;
    size_t row[32];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

int help_unknown(const char *name)
{
    const help_cmd *near = NULL;
    size_t best = 3; /* at most two edits away, or a prefix */
    for (const help_cmd *c = help_cmds; c->name; c++) {
        size_t d = distance(name, c->name);
        if (*name && strncmp(c->name, name, strlen(name)) == 0)
            d = 1;
        if (d < best) {
            best = d;
            near = c;
        }
    }
    if (near)
        return ps_fail("unknown command '%s' (did you mean '%s'? try pipesim "
                       "help)",
                       name, near->name);
    return ps_fail("unknown command '%s' (expected run, report, export, "
                   "plot, merge, nccl-tests or help; try pipesim help)",
                   name);
}

/* ---- the man page ------------------------------------------------------ */

/* s as roff text: backslashes and minus signs escaped, a line that would
 * start with a control character guarded. */
static void roff_text(const char *s, size_t len, FILE *out)
{
    if (len && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", out);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\')
            fputs("\\e", out);
        else if (s[i] == '-')
            fputs("\\-", out);
        else
            fputc(s[i], out);
    }
}

/* Paragraphs of text as roff: a blank line starts a new paragraph. */
static void roff_paragraphs(const char *text, FILE *out)
{
    while (*text) {
        size_t len = strcspn(text, "\n");
        if (len) {
            roff_text(text, len, out);
            fputc('\n', out);
        } else {
            fputs(".PP\n", out);
        }
        text += len + (text[len] == '\n');
    }
}

/* Lines kept as they are (synopses, examples), in an indented block. */
static void roff_lines(const char *text, const char *prefix, FILE *out)
{
    fputs(".RS 4\n.nf\n", out);
    while (*text) {
        size_t len = strcspn(text, "\n");
        if (strncmp(text, "    ", 4) == 0)
            fputs("    ", out);
        else if (prefix)
            roff_text(prefix, strlen(prefix), out);
        roff_text(text, len, out);
        fputc('\n', out);
        text += len + (text[len] == '\n');
    }
    fputs(".fi\n.RE\n", out);
}

static void roff_command(const help_cmd *c, FILE *out)
{
    fputs(".SS \"", out);
    roff_text(c->name, strlen(c->name), out);
    fputs("\"\n", out);
    roff_lines(c->synopsis, "pipesim ", out);
    fputs(".PP\n", out);
    roff_paragraphs(c->text, out);
    for (const help_opt *o = c->opts; o->names; o++) {
        fputs(".TP\n\\fB", out);
        roff_text(o->names, strlen(o->names), out);
        fputs("\\fR", out);
        if (o->arg) {
            fputs(" \\fI", out);
            roff_text(o->arg, strlen(o->arg), out);
            fputs("\\fR", out);
        }
        fputc('\n', out);
        roff_paragraphs(o->text, out);
    }
    fputs(".PP\nExamples:\n", out);
    roff_lines(c->examples, NULL, out);
}

void help_man(FILE *out)
{
    fprintf(out,
            ".\\\" pipesim(1), written by pipesim help --man from the text "
            "of pipesim help\n"
            ".TH PIPESIM 1 \"\" \"pipesim %s\" \"User Commands\"\n"
            ".SH NAME\n"
            "pipesim \\- simulate pipeline\\-parallel LLM training and "
            "collectives, recorded in SQLite\n"
            ".SH SYNOPSIS\n"
            ".nf\n",
            PS_VERSION);
    for (const help_cmd *c = help_cmds; c->name; c++) {
        const char *s = c->synopsis;
        while (*s) {
            size_t len = strcspn(s, "\n");
            fputs(strncmp(s, "    ", 4) == 0 ? "        " : "\\fBpipesim\\fR ",
                  out);
            roff_text(s + (strncmp(s, "    ", 4) == 0 ? 4 : 0),
                      len - (strncmp(s, "    ", 4) == 0 ? 4 : 0), out);
            fputc('\n', out);
            s += len + (s[len] == '\n');
        }
    }
    fputs("\\fBpipesim\\fR \\-\\-help | \\-\\-version\n.fi\n"
          ".SH DESCRIPTION\n"
          "pipesim is a discrete\\-event simulator of LLM training steps "
          "(pipeline schedules, tensor and data parallelism, memory) and of "
          "NCCL collectives on a modelled cluster. Scenarios are Lua 5.4 "
          "scripts; every run is recorded in an SQLite database, so runs "
          "are compared with SQL.\n"
          ".SH COMMANDS\n",
          out);
    for (const help_cmd *c = help_cmds; c->name; c++)
        roff_command(c, out);
    fputs(".SH ENVIRONMENT\n"
          ".TP\n.B PIPESIM_LUA\n"
          "the directory of pipesim's Lua library (the one holding "
          "pipesim/init.lua); by default the lua directory beside the "
          "binary's parent (a build tree) or the installed "
          "share/pipesim/lua.\n"
          ".SH EXIT STATUS\n"
          "0 on success. Otherwise one line \\(lqpipesim: ...\\(rq on "
          "standard error and a non\\-zero status: 1 for an error, 130 or "
          "143 after SIGINT or SIGTERM (pipesim run keeps the runs that "
          "finished).\n"
          ".SH SEE ALSO\n"
          ".BR sqlite3 (1),\n"
          ".BR lua (1)\n",
          out);
}

/* ---- pipesim help ------------------------------------------------------ */

int help_main(int argc, char **argv)
{
    if (argc < 2) {
        help_overview(stdout);
        return 0;
    }
    const char *a = argv[1];
    if (strcmp(a, "--man") == 0 && argc == 2) {
        help_man(stdout);
        return 0;
    }
    if (strcmp(a, "--completion") == 0) {
        if (argc != 3 || help_completion(argv[2], stdout))
            return ps_fail("help: --completion %s: expected bash or zsh",
                           argc > 2 ? argv[2] : "(missing)");
        return 0;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
        return help_command("help");
    if (a[0] == '-')
        return ps_fail("help: unknown option '%s' (expected COMMAND, --man "
                       "or --completion bash|zsh)",
                       a);
    if (argc > 2)
        return ps_fail("help: one command at a time ('%s' and '%s')", a,
                       argv[2]);
    return help_command(a);
}
