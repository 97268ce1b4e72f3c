/* The SVG document scaffolding the readers share: XML escaping and the
 * opening tags (out/svg.h). Plain SVG 1.1, so pictures render the same in
 * browsers, rsvg and document editors. */
#include "out/svg.h"

#include <string.h>

#include "base/utf8.h"

void svg_text(FILE *out, const char *s)
{
    while (*s) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: {
            /* XML 1.0 forbids most control characters, even escaped */
            if ((unsigned char)*s < 0x20) {
                if (*s == '\t' || *s == '\n')
                    fputc(*s, out);
                break;
            }
            int n = utf8_len(s);
            /* U+FFFE and U+FFFF are well-formed but no XML character */
            int nonchar = n == 3 && (memcmp(s, "\xEF\xBF\xBE", 3) == 0 ||
                                     memcmp(s, "\xEF\xBF\xBF", 3) == 0);
            if (!n || nonchar) {
                fputs(UTF8_REPLACEMENT, out);
                s += n ? n : 1;
                continue;
            }
            fwrite(s, 1, (size_t)n, out);
            s += n;
            continue;
        }
        }
        s++;
    }
}

void svg_begin(FILE *out, int w, int h, const char *attrs)
{
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" %s>\n",
            w, h, w, h, attrs);
}
