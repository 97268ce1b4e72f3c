-- Which configuration is fastest, and at what memory cost? One row per
-- pipeline run: schedule, pipeline ranks p, microbatches m, virtual stages
-- v, makespan, measured bubble, the closed-form bubble for uniform stages
-- (NULL when the stages are not uniform) and the largest per-rank peak
-- memory. Fastest first.
-- Usage: sqlite3 -header -column results/demo.db < results/queries/compare_schedules.sql
SELECT r.id AS run,
       r.name,
       r.schedule,
       r.stages AS p,
       r.microbatches AS m,
       r.virtual_stages AS v,
       printf('%.6g', r.makespan) AS makespan_s,
       printf('%.2f%%', 100 * r.bubble) AS bubble,
       CASE WHEN r.closed_form_bubble IS NULL THEN NULL
            ELSE printf('%.2f%%', 100 * r.closed_form_bubble) END
           AS closed_form_bubble,
       printf('%.3f', coalesce(r.peak_memory,
                               (SELECT max(mp.peak) FROM memory_peak AS mp
                                WHERE mp.run = r.id)) / 1073741824.0)
           AS max_peak_gib,
       r.status
FROM run AS r
WHERE r.kind = 'pipeline'
ORDER BY r.status <> 'ok', r.makespan, r.id;
