/* UTF-8 well-formedness (base/utf8.h). The table is RFC 3629's section 4
 * (Unicode's Table 3-7), which leaves out overlong forms, surrogates and
 * code points past U+10FFFF by the range of the second byte. */
#include "base/utf8.h"

int utf8_len(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates U+D800..U+DFFF */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1 or F5..FF */
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

int utf8_valid(const char *s)
{
    while (*s) {
        int n = utf8_len(s);
        if (!n)
            return 0;
        s += n;
    }
    return 1;
}
