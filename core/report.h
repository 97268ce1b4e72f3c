/* placeholder until the report module lands */
#ifndef PS_REPORT_H
#define PS_REPORT_H
#include <stdint.h>
#include <stdio.h>
#include "err.h"
#include "rec.h"
int report_runs(rec_db *db, FILE *out, int csv, ps_err *err);
int report_run(rec_db *db, int64_t run, FILE *out, int width, ps_err *err);
#endif
