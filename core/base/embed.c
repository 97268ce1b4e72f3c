/* The switch of the data built into the binary (base/embed.h): on unless the
 * test mode PIPESIM_EMBED=0 asks for what a build without it does. The
 * data itself is generated (build/embed_data.c, core/cli/embed_tool.c). */
#include "base/embed.h"

#include <stdlib.h>
#include <string.h>

int embed_enabled(void)
{
    /* read each time (once per module and per new file): a test may set it */
    const char *e = getenv("PIPESIM_EMBED");
    return !(e && strcmp(e, "0") == 0);
}
