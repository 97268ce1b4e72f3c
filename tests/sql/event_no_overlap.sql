-- Invariant: a rank's device runs one compute op at a time, so no two
-- events of one (run, rank) overlap by more than 1e-12 s. Sorted by start,
-- any overlap shows up between neighbours, so a window is enough (no
-- quadratic self-join). Every ok pipeline run recorded with events
-- (record = "events", the default) has event rows to check.
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok' AND coalesce(json_extract(params, '$.record'), 'events') = 'events'
SELECT run, rank, kind, mb, t_start, t_end, next_start
FROM (SELECT run, rank, kind, mb, t_start, t_end,
             lead(t_start) OVER (PARTITION BY run, rank
                                 ORDER BY t_start, t_end) AS next_start
      FROM event)
WHERE next_start < t_end - 1e-12
UNION ALL
SELECT r.id, NULL, 'no events', NULL, NULL, NULL, NULL
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND coalesce(json_extract(r.params, '$.record'), 'events') = 'events'
  AND NOT EXISTS (SELECT 1 FROM event AS e WHERE e.run = r.id)
UNION ALL
SELECT NULL, NULL, 'nothing to check: no ok pipeline run with events', NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok'
                  AND coalesce(json_extract(params, '$.record'), 'events') = 'events');
