/* `pipesim nccl-tests`: nccl-tests' command line on a simulated cluster
 * (bind/nccl_tests.c; README "nccl-tests tables"). */
#ifndef PS_BIND_NCCL_TESTS_H
#define PS_BIND_NCCL_TESTS_H

/* argv[0] is "nccl-tests", the op and flags follow; luadir as cli/main.c
 * finds it. Returns the exit status
 * (0, or 1 after one `pipesim: ...` line). */
int bind_nccl_tests_main(int argc, char **argv, const char *luadir);

#endif
