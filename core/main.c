/* pipesim command line (placeholder until the binding lands). */
#include <stdio.h>

int main(void)
{
    puts("pipesim " PS_VERSION);
    return 0;
}
