-- Invariant: with a split backward, the weight gradient (W) of a (run,
-- stage, chunk, microbatch) starts after its input gradient (B) ends
-- (1e-12 s tolerance; gradient sync may cut a W into pieces).
SELECT run, stage, chunk, mb, b_end, w_start
FROM (SELECT run, stage, chunk, mb,
             max(CASE WHEN kind = 'B' THEN t_end END) AS b_end,
             min(CASE WHEN kind = 'W' THEN t_start END) AS w_start,
             sum(kind = 'W') AS nw
      FROM event
      WHERE kind IN ('B', 'W') AND mb IS NOT NULL
      GROUP BY run, stage, chunk, mb)
WHERE nw > 0 AND (b_end IS NULL OR w_start < b_end - 1e-12);
