/* JSON text pipesim writes in C: one string writer, so that every JSON
 * document (the Chrome trace, out/export_chrome.c) escapes alike and is
 * valid for any bytes it is given. run.params and run.tags are written by
 * lua/pipesim/init.lua's encoder (and its fast path core.json_plain,
 * bind/sweep.c), which escapes the same way; live mode's byte counters by
 * SQLite's json_object (rec/jsonl.c). */
#ifndef PS_JSON_H
#define PS_JSON_H

#include <stdio.h>

/* Writes s as a JSON string, quotes included: " and \ escaped, control
 * characters as \n, \r, \t or \u00XX, well-formed UTF-8 as itself and
 * every other byte as \ufffd (base/utf8.h). */
void json_string(FILE *out, const char *s);

#endif
