/* UTF-8 well-formedness for the text pipesim writes for other programs
 * (JSON, SVG, CSV). Run names, tags, layer names and database contents
 * reach those writers as any bytes; each writer keeps a well-formed
 * sequence and replaces every byte that does not start one with U+FFFD,
 * one replacement per byte, as Lua's utf8.len finds them (lua/pipesim's
 * JSON encoder does the same), so the output is valid for any input. */
#ifndef PS_UTF8_H
#define PS_UTF8_H

/* U+FFFD REPLACEMENT CHARACTER, encoded. */
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* The length (1 to 4) of the well-formed UTF-8 sequence that starts at s
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF), or
 * 0 when the byte at s starts none. s is NUL-terminated; a NUL is never
 * part of a sequence, so a truncated one at the end is 0. */
int utf8_len(const char *s);

/* 1 when all of s (NUL-terminated) is well-formed UTF-8. */
int utf8_valid(const char *s);

#endif
