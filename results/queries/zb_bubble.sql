-- The zero-bubble paper's bubble rate (Qi et al. 2024, Sec. 5.3) of every
-- recorded run: (cost - busy) / cost, where cost is the longest time any
-- rank spends from its first compute event to its last (the ILP's
-- objective) and busy a rank's compute time. For 1F1B and ZB-H1 the first
-- rank spans the makespan; ZB-H2's ranks end at different times.
--   sqlite3 results/zb_validation.db < results/queries/zb_bubble.sql
WITH per_rank AS (
    SELECT e.run, e.rank, max(e.t_end) - min(e.t_start) AS span,
           sum(e.t_end - e.t_start) AS busy
    FROM event e
    WHERE e.kind IN ('F', 'B', 'W', 'FB.F', 'FB.B')
    GROUP BY e.run, e.rank
)
SELECT r.id, r.name, printf('%.4f', r.makespan) AS makespan,
       printf('%.2f%%', 100.0 * (max(p.span) - max(p.busy)) / max(p.span)) AS bubble_rate
FROM per_rank p JOIN run r ON r.id = p.run
GROUP BY r.id ORDER BY r.id;
