-- Invariant: a rank's device runs one compute op at a time, so no two
-- events of one (run, rank) overlap by more than 1e-12 s. Sorted by start,
-- any overlap shows up between neighbours, so a window is enough (no
-- quadratic self-join).
SELECT run, rank, kind, mb, t_start, t_end, next_start
FROM (SELECT run, rank, kind, mb, t_start, t_end,
             lead(t_start) OVER (PARTITION BY run, rank
                                 ORDER BY t_start, t_end) AS next_start
      FROM event)
WHERE next_start < t_end - 1e-12;
