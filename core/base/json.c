/* The JSON string writer (base/json.h). */
#include "base/json.h"

#include "base/utf8.h"

void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    while (*s) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (c < 0x20) {
                fprintf(out, "\\u%04x", c);
            } else {
                int n = utf8_len(s);
                if (!n) {
                    fputs("\\ufffd", out);
                } else {
                    fwrite(s, 1, (size_t)n, out);
                    s += n;
                    continue;
                }
            }
        }
        s++;
    }
    fputc('"', out);
}
