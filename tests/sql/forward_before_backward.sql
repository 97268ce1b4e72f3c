-- Invariant: the forward of a (run, stage, chunk, microbatch) ends before
-- its backward starts (1e-12 s tolerance).
SELECT run, stage, chunk, mb, f_end, b_start
FROM (SELECT run, stage, chunk, mb,
             max(CASE WHEN kind = 'F' THEN t_end END) AS f_end,
             min(CASE WHEN kind = 'B' THEN t_start END) AS b_start
      FROM event
      WHERE kind IN ('F', 'B') AND mb IS NOT NULL
      GROUP BY run, stage, chunk, mb)
WHERE b_start < f_end - 1e-12;
