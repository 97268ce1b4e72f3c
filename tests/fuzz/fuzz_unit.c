/* libFuzzer target: the unit parser (core/base/unit.c). Input: one byte
 * choosing the kind, then the text. Checks the contract: a success gives
 * a finite value, a failure a non-empty one-line message. */
#include <math.h>

#include "base/unit.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum unit_kind kind = (enum unit_kind)(data[0] % 5);
    char *text = fuzz_cstr(data + 1, size - 1);
    if (!text)
        return 0;
    double v = NAN;
    ps_err err;
    err.msg[0] = '\0';
    if (unit_parse(text, kind, &v, &err) == PS_OK) {
        if (!isfinite(v)) {
            fprintf(stderr, "unit_parse('%s') gave %g\n", text, v);
            abort();
        }
    } else if (err.msg[0] == '\0' ||
               (strchr(err.msg, '\n') && !strchr(text, '\n'))) {
        /* a newline only where the text had one */
        fprintf(stderr, "unit_parse('%s'): bad message '%s'\n", text, err.msg);
        abort();
    }
    free(text);
    return 0;
}
