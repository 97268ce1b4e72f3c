-- Invariant: a collective run's row agrees with its collective row: time =
-- makespan, algbw = bytes / time, busbw = algbw x nccl-tests' factor
-- (2(n-1)/n allreduce, (n-1)/n reduce_scatter, allgather and alltoall, 1
-- otherwise: broadcast, reduce, sendrecv),
-- up to 1e-9 relative; its transfers lie within [0, time]. Every ok
-- collective run has exactly one collective row, and one recorded with
-- events that moves bytes between ranks has transfer rows.
-- applies: SELECT count(*) FROM run WHERE kind = 'collective' AND status = 'ok'
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
               WHEN 'alltoall' THEN 1.0 * (c.ranks - 1) / c.ranks
               ELSE 1.0 END) > 1e-9 * c.busbw)
UNION ALL
SELECT t.run, 'transfer', t.src, t.t_start, t.t_end, NULL, NULL
FROM transfer AS t
JOIN run AS r ON r.id = t.run
WHERE r.kind = 'collective' AND t.t_end > r.makespan * (1 + 1e-12)
UNION ALL
SELECT r.id, 'collective rows', (SELECT count(*) FROM collective AS c WHERE c.run = r.id),
       NULL, NULL, NULL, NULL
FROM run AS r
WHERE r.kind = 'collective' AND r.status = 'ok'
  AND (SELECT count(*) FROM collective AS c WHERE c.run = r.id) <> 1
UNION ALL
SELECT r.id, 'no transfers', c.ranks, c.bytes, NULL, NULL, NULL
FROM run AS r
JOIN collective AS c ON c.run = r.id
WHERE r.kind = 'collective' AND r.status = 'ok' AND c.ranks > 1 AND c.bytes > 0
  AND coalesce(json_extract(r.params, '$.record'), 'events') = 'events'
  AND NOT EXISTS (SELECT 1 FROM transfer AS t WHERE t.run = r.id)
UNION ALL
SELECT NULL, 'nothing to check: no ok collective run', NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'collective' AND status = 'ok');
