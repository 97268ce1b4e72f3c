-- The fastest run of each sweep: runs are grouped by the part of their name
-- before the first '/' (scenarios/balance_sweep.lua names its runs
-- "gpt3-xl/params", "gpt3-xl/flops", "gpt3-xl/sweep", ...; a name without
-- '/' is its own group). One row per group: how many runs it has, the
-- fastest one (ties: the earliest), how that run was chosen (the rest of
-- its name), its partition (layer counts per stage, from the run's
-- parameters), step time, bubble, imbalance (slowest stage / mean) and how
-- much slower the slowest run of the group was.
-- Usage: sqlite3 -header -column results/balance_sweep.db < results/queries/best_partition.sql
WITH r AS (
    SELECT id, name, makespan, bubble, imbalance, params,
           CASE WHEN instr(name, '/') > 0
                THEN substr(name, 1, instr(name, '/') - 1)
                ELSE name END AS sweep,
           CASE WHEN instr(name, '/') > 0
                THEN substr(name, instr(name, '/') + 1)
                ELSE '' END AS how
    FROM run
    WHERE kind = 'pipeline' AND status = 'ok'
),
ranked AS (
    SELECT r.*,
           row_number() OVER (PARTITION BY sweep ORDER BY makespan, id) AS pos,
           count(*) OVER (PARTITION BY sweep) AS runs,
           max(makespan) OVER (PARTITION BY sweep) AS worst
    FROM r
)
SELECT sweep,
       runs,
       id AS best_run,
       how,
       json_extract(params, '$.partition') AS partition,
       printf('%.6g', makespan) AS makespan_s,
       printf('%.2f%%', 100 * bubble) AS bubble,
       printf('%.3f', imbalance) AS imbalance,
       printf('%.1f%%', 100 * (worst / makespan - 1)) AS worst_is_slower_by
FROM ranked
WHERE pos = 1
ORDER BY sweep;
