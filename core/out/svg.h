/* The SVG document scaffolding the readers share (out/export_svg.c's Gantt,
 * out/plot_svg.c's plots): the XML text escaping and the document's opening
 * tags. What goes inside each picture stays with its file. */
#ifndef PS_SVG_H
#define PS_SVG_H

#include <stdio.h>

/* Writes s as XML character data or attribute text: & < > " ' escaped,
 * the control characters XML 1.0 forbids even escaped (all below 0x20 but
 * tab and newline) left out, and each byte that is not well-formed UTF-8
 * (and U+FFFE, U+FFFF) written as U+FFFD (base/utf8.h), so that the
 * document is valid for any run name. */
void svg_text(FILE *out, const char *s);

/* Writes the XML declaration and the opening <svg> tag of a w x h px
 * document (viewBox 0 0 w h), with attrs (e.g. font-family="sans-serif")
 * as its further attributes, then a newline. The caller closes it with
 * "</svg>\n". */
void svg_begin(FILE *out, int w, int h, const char *attrs);

#endif
