/* `pipesim calibrate`: a cluster file fitted to nccl-tests logs and GEMM
 * timings (bind/calibrate.c; docs/calibrate.md). */
#ifndef PS_BIND_CALIBRATE_H
#define PS_BIND_CALIBRATE_H

/* argv[0] is "calibrate", the flags and files follow; luadir as cli/main.c
 * finds it. Returns the exit status (0, or 1 after one `pipesim: ...`
 * line). */
int bind_calibrate_main(int argc, char **argv, const char *luadir);

#endif
