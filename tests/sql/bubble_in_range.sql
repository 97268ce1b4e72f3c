-- Invariant: bubble fractions, per rank (the bubble view) and per run, lie
-- in [0, 1] up to 1e-12 of rounding; every ok pipeline run has a bubble
-- and per-rank rows (rank_stat is written at every recording level).
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok'
SELECT run, rank, fraction
FROM bubble
WHERE fraction < -1e-12 OR fraction > 1 + 1e-12
UNION ALL
SELECT id, NULL, bubble
FROM run
WHERE bubble < -1e-12 OR bubble > 1 + 1e-12
UNION ALL
SELECT r.id, NULL, 'ok pipeline run without a bubble or rank rows'
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND (r.bubble IS NULL OR NOT EXISTS (SELECT 1 FROM bubble AS b WHERE b.run = r.id))
UNION ALL
SELECT NULL, NULL, 'nothing to check: no ok pipeline run'
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok');
