#include "report.h"
int report_runs(rec_db *db, FILE *out, int csv, ps_err *err) { (void)db; (void)out; (void)csv; (void)err; return 0; }
int report_run(rec_db *db, int64_t run, FILE *out, int width, ps_err *err) { (void)db; (void)width; (void)err; fprintf(out, "run %lld\n", (long long)run); return 0; }
