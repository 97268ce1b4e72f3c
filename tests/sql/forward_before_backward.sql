-- Invariant: the forward of a (run, stage, chunk, microbatch) ends before
-- its backward starts (1e-12 s tolerance), and every ok pipeline run
-- recorded with events has forwards and backwards to compare.
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok' AND coalesce(json_extract(params, '$.record'), 'events') = 'events'
SELECT run, stage, chunk, mb, f_end, b_start
FROM (SELECT run, stage, chunk, mb,
             max(CASE WHEN kind = 'F' THEN t_end END) AS f_end,
             min(CASE WHEN kind = 'B' THEN t_start END) AS b_start
      FROM event
      WHERE kind IN ('F', 'B') AND mb IS NOT NULL
      GROUP BY run, stage, chunk, mb)
WHERE b_start < f_end - 1e-12
UNION ALL
SELECT r.id, NULL, NULL, NULL, 'no F or no B events', NULL
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND coalesce(json_extract(r.params, '$.record'), 'events') = 'events'
  AND r.schedule <> 'forward_only' -- inference has no backward
  AND (NOT EXISTS (SELECT 1 FROM event AS e WHERE e.run = r.id AND e.kind = 'F')
       OR NOT EXISTS (SELECT 1 FROM event AS e WHERE e.run = r.id AND e.kind = 'B'))
UNION ALL
SELECT NULL, NULL, NULL, NULL, 'nothing to check: no ok pipeline run with events', NULL
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok'
                  AND coalesce(json_extract(params, '$.record'), 'events') = 'events');
