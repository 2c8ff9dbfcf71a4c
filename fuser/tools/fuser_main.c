/* fuser_main.c -- the `fuser` command (placeholder until the CLI lands). */
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "fuser: not built yet\n");
    return 2;
}
