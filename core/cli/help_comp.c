/* Shell completions written from help_text.c's table, so that a new command
 * or option completes as soon as it is documented: bash (complete -F, one
 * case per command) and zsh (#compdef, _arguments per command). Each
 * option's value and each command's operands complete as its `complete`
 * string says: files by glob, words, or nothing. */
#include <string.h>

#include "cli/help.h"
#include "cli/help_impl.h"

/* Calls put(spelling, len, o, out) for each of o's spellings ("-o, --output"
 * is two). */
static void each_name(const help_opt *o, FILE *out,
                      void (*put)(const char *, size_t, const help_opt *,
                                  FILE *))
{
    const char *s = o->names;
    while (*s) {
        size_t len = strcspn(s, ",");
        put(s, len, o, out);
        s += len;
        while (*s == ',' || *s == ' ')
            s++;
    }
}

/* ---- bash --------------------------------------------------------------- */

static void bash_word(const char *s, size_t len, const help_opt *o, FILE *out)
{
    (void)o;
    fprintf(out, " %.*s", (int)len, s);
}

static void bash_command(const help_cmd *c, FILE *out)
{
    fprintf(out, "    %s)\n        opts='", c->name);
    for (const help_opt *o = c->opts; o->names; o++)
        each_name(o, out, bash_word);
    fputs("'\n        case $prev in\n", out);
    for (const help_opt *o = c->opts; o->names; o++) {
        if (!o->arg)
            continue;
        const char *sep = "        ";
        const char *s = o->names;
        while (*s) {
            size_t len = strcspn(s, ",");
            fprintf(out, "%s%.*s", sep, (int)len, s);
            sep = "|";
            s += len;
            while (*s == ',' || *s == ' ')
                s++;
        }
        fprintf(out, ") value='%s' ;;\n", o->complete ? o->complete : "none");
    }
    fprintf(out, "        esac\n        operands='%s' ;;\n",
            c->operands ? c->operands : "none");
}

static void bash_script(FILE *out)
{
    fputs("# bash completion for pipesim, written by pipesim help "
          "--completion bash\n"
          "# from the text of pipesim help; source it, or install it as\n"
          "# share/bash-completion/completions/pipesim\n"
          "_pipesim_values() {\n"
          "    case $1 in\n"
          "    words:*) mapfile -t COMPREPLY < <(compgen -W \"${1#words:}\" "
          "-- \"$cur\") ;;\n"
          "    file:*) mapfile -t COMPREPLY < <(compgen -f -X \"!${1#file:}\" "
          "-- \"$cur\"; compgen -d -- \"$cur\") ;;\n"
          "    file) mapfile -t COMPREPLY < <(compgen -f -- \"$cur\") ;;\n"
          "    *) COMPREPLY=() ;;\n"
          "    esac\n"
          "}\n"
          "_pipesim() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} "
          "prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    local opts='' value='' operands=none\n"
          "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
          "        _pipesim_values 'words:",
          out);
    for (const help_cmd *c = help_cmds; c->name; c++)
        fprintf(out, "%s ", c->name);
    fputs("--help --version'\n"
          "        return\n"
          "    fi\n"
          "    case ${COMP_WORDS[1]} in\n",
          out);
    for (const help_cmd *c = help_cmds; c->name; c++)
        bash_command(c, out);
    fputs("    *) return ;;\n"
          "    esac\n"
          "    if [ -n \"$value\" ]; then\n"
          "        _pipesim_values \"$value\"\n"
          "    elif [ \"${cur#-}\" != \"$cur\" ]; then\n"
          "        _pipesim_values \"words:$opts\"\n"
          "    else\n"
          "        _pipesim_values \"$operands\"\n"
          "    fi\n"
          "}\n"
          "complete -o filenames -F _pipesim pipesim\n",
          out);
}

/* ---- zsh ---------------------------------------------------------------- */

/* s inside a single-quoted _arguments spec: quotes closed and reopened,
 * the spec's own brackets and colons escaped. */
static void zsh_quoted(const char *s, size_t len, FILE *out)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\'')
            fputs("'\\''", out);
        else if (s[i] == '[' || s[i] == ']' || s[i] == ':')
            fprintf(out, "\\%c", s[i]);
        else
            fputc(s[i], out);
    }
}

/* The action of a `complete` string. */
static void zsh_action(const char *complete, FILE *out)
{
    if (!complete)
        fputs(" ", out);
    else if (strncmp(complete, "words:", 6) == 0)
        fprintf(out, "(%s)", complete + 6);
    else if (strncmp(complete, "file:", 5) == 0)
        fprintf(out, "_files -g \"%s\"", complete + 5);
    else
        fputs("_files", out);
}

static void zsh_spec(const char *s, size_t len, const help_opt *o, FILE *out)
{
    fprintf(out, " \\\n        '*%.*s[", (int)len, s);
    zsh_quoted(o->text, strcspn(o->text, "\n"), out);
    fputc(']', out);
    if (o->arg) {
        fputc(':', out);
        zsh_quoted(o->arg, strlen(o->arg), out);
        fputc(':', out);
        zsh_action(o->complete, out);
    }
    fputc('\'', out);
}

static void zsh_script(FILE *out)
{
    fputs("#compdef pipesim\n"
          "# zsh completion for pipesim, written by pipesim help "
          "--completion zsh\n"
          "# from the text of pipesim help; install it as _pipesim in a\n"
          "# directory of $fpath (share/zsh/site-functions)\n"
          "_pipesim() {\n"
          "    local -a cmds\n"
          "    cmds=(\n",
          out);
    for (const help_cmd *c = help_cmds; c->name; c++) {
        fprintf(out, "        '%s:", c->name);
        zsh_quoted(c->summary, strlen(c->summary), out);
        fputs("'\n", out);
    }
    fputs("    )\n"
          "    if (( CURRENT == 2 )); then\n"
          "        _describe command cmds\n"
          "        return\n"
          "    fi\n"
          "    local cmd=$words[2]\n"
          "    shift words\n"
          "    (( CURRENT-- ))\n"
          "    case $cmd in\n",
          out);
    for (const help_cmd *c = help_cmds; c->name; c++) {
        fprintf(out, "    %s)\n        _arguments", c->name);
        for (const help_opt *o = c->opts; o->names; o++)
            each_name(o, out, zsh_spec);
        fputs(" \\\n        '*:operand:", out);
        zsh_action(c->operands, out);
        fputs("' ;;\n", out);
    }
    fputs("    esac\n"
          "}\n"
          "_pipesim \"$@\"\n",
          out);
}

int help_completion(const char *shell, FILE *out)
{
    if (strcmp(shell, "bash") == 0)
        bash_script(out);
    else if (strcmp(shell, "zsh") == 0)
        zsh_script(out);
    else
        return -1;
    return 0;
}
