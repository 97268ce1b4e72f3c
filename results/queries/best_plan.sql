-- The best plan of each ps.search (lua/pipesim/search.lua). A search
-- records each simulated configuration as a point of a sweep named after
-- it (run.sweep; run.point holds tp, pp, dp, virtual_stages, microbatch,
-- schedule, recompute, zero, sequence_parallel) and names the run
-- "SEARCH/tpT ppP dpD vV mbB SCHEDULE RECOMPUTE zeroZ[ sp]". Per search:
-- how many configurations were simulated and how many fit in device
-- memory, how many are on the Pareto front of step time against peak
-- memory (no other fitting run is at least as fast and at most as large,
-- one of the two strictly), and the fastest fitting run (ties: the
-- earliest) with its plan, model, microbatch count, step time, peak
-- memory and bubble.
-- Usage: sqlite3 -header -column search.db < results/queries/best_plan.sql
WITH r AS (
    SELECT id, makespan, peak_memory, bubble, fits, microbatches, model, sweep AS search,
           substr(name, instr(name, '/') + 1) AS plan
    FROM run
    WHERE kind = 'pipeline' AND status = 'ok' AND sweep IS NOT NULL
      AND json_extract(point, '$.recompute') IS NOT NULL
      AND json_extract(point, '$.zero') IS NOT NULL
      AND json_extract(point, '$.microbatch') IS NOT NULL
),
front AS (
    SELECT a.search, count(*) AS n
    FROM r a
    WHERE a.fits = 1 AND NOT EXISTS (
        SELECT 1 FROM r b
        WHERE b.search = a.search AND b.fits = 1 AND b.id <> a.id
          AND b.makespan <= a.makespan AND b.peak_memory <= a.peak_memory
          AND (b.makespan < a.makespan OR b.peak_memory < a.peak_memory))
    GROUP BY a.search
),
ranked AS (
    SELECT r.*,
           row_number() OVER (PARTITION BY search ORDER BY fits = 1 DESC, makespan, id) AS pos,
           count(*) OVER (PARTITION BY search) AS simulated,
           sum(fits = 1) OVER (PARTITION BY search) AS fitting
    FROM r
)
SELECT ranked.search,
       simulated,
       fitting,
       coalesce(front.n, 0) AS on_front,
       id AS best_run,
       plan,
       model,
       microbatches,
       printf('%.6g', makespan) AS step_s,
       printf('%.3f', peak_memory / 1073741824.0) AS peak_gib,
       printf('%.2f%%', 100 * bubble) AS bubble
FROM ranked LEFT JOIN front ON front.search = ranked.search
WHERE pos = 1 AND fits = 1
ORDER BY ranked.search;
