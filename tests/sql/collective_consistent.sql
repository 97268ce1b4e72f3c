-- Invariant: a collective run's row agrees with its collective row: time =
-- makespan, algbw = bytes / time, busbw = algbw x nccl-tests' factor
-- (2(n-1)/n allreduce, (n-1)/n reduce_scatter and allgather, 1 otherwise),
-- up to 1e-9 relative; its transfers lie within [0, time].
SELECT r.id, c.op, c.algorithm, c.time, r.makespan, c.algbw, c.busbw
FROM run AS r
JOIN collective AS c ON c.run = r.id
WHERE r.kind = 'collective' AND r.status = 'ok'
  AND (abs(c.time - r.makespan) > 1e-9 * c.time
       OR (c.time > 0 AND abs(c.algbw - c.bytes / c.time) > 1e-9 * c.algbw)
       OR abs(c.busbw - c.algbw * CASE c.op
               WHEN 'allreduce' THEN 2.0 * (c.ranks - 1) / c.ranks
               WHEN 'reduce_scatter' THEN 1.0 * (c.ranks - 1) / c.ranks
               WHEN 'allgather' THEN 1.0 * (c.ranks - 1) / c.ranks
               ELSE 1.0 END) > 1e-9 * c.busbw)
UNION ALL
SELECT t.run, 'transfer', t.src, t.t_start, t.t_end, NULL, NULL
FROM transfer AS t
JOIN run AS r ON r.id = t.run
WHERE r.kind = 'collective' AND t.t_end > r.makespan * (1 + 1e-12);
