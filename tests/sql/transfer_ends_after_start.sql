-- Invariant: a transfer never ends before it starts, and no time is
-- negative. Every ok pipeline run of more than one stage recorded with
-- events sends activations, so it has transfer rows to check.
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok' AND stages > 1 AND coalesce(json_extract(params, '$.record'), 'events') = 'events'
SELECT run, src, dst, kind, mb, t_start, t_end
FROM transfer
WHERE t_end < t_start OR t_start < 0
UNION ALL
SELECT r.id, NULL, NULL, 'no transfers', NULL, NULL, NULL
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok' AND r.stages > 1
  AND coalesce(json_extract(r.params, '$.record'), 'events') = 'events'
  AND NOT EXISTS (SELECT 1 FROM transfer AS t WHERE t.run = r.id)
UNION ALL
SELECT NULL, NULL, NULL, 'nothing to check: no ok pipeline run of 2+ stages with events',
       NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok' AND stages > 1
                  AND coalesce(json_extract(params, '$.record'), 'events') = 'events');
