/* The SVG scaffolding out/export_svg.c and out/plot_svg.c share: XML escaping
 * (the forbidden control characters dropped, tab and newline kept) and the
 * document's opening tags. */
#include "out/svg.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

static void test_text(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    svg_text(f, "a<b>&\"c\" 'd'\t\n\x01\x1f\r|");
    fclose(f);
    CHECK_STR(buf, "a&lt;b&gt;&amp;&quot;c&quot; &apos;d&apos;\t\n|");
    free(buf);
}

static void test_begin(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    svg_begin(f, 300, 40, "font-size=\"12\"");
    fclose(f);
    CHECK_STR(buf, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"300\" "
                   "height=\"40\" viewBox=\"0 0 300 40\" font-size=\"12\">\n");
    free(buf);
}

int main(void)
{
    test_text();
    test_begin();
    return harness_done();
}
