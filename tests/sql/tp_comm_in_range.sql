-- Invariant: tensor-parallel communication (stage and rank_stat tp_comm,
-- tp_exposed) is recorded for every ok pipeline run, is never negative,
-- its exposed part lies within the total (1e-12 relative), and a run
-- without tensor parallelism (tp = 1) has none.
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok'
SELECT 'stage', s.run, s.stage
FROM stage AS s JOIN run AS r ON r.id = s.run
WHERE r.status = 'ok'
  AND (s.tp_comm IS NULL OR s.tp_exposed IS NULL OR s.tp_comm < 0 OR s.tp_exposed < 0
       OR s.tp_exposed > s.tp_comm * (1 + 1e-12) + 1e-15 OR (r.tp = 1 AND s.tp_comm > 0))
UNION ALL
SELECT 'rank_stat', s.run, s.rank
FROM rank_stat AS s JOIN run AS r ON r.id = s.run
WHERE r.status = 'ok'
  AND (s.tp_comm IS NULL OR s.tp_exposed IS NULL OR s.tp_comm < 0 OR s.tp_exposed < 0
       OR s.tp_exposed > s.tp_comm * (1 + 1e-12) + 1e-15 OR (r.tp = 1 AND s.tp_comm > 0))
UNION ALL
SELECT 'no tp_comm with tp > 1', r.id, NULL
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok' AND r.tp > 1
  AND NOT EXISTS (SELECT 1 FROM stage AS s WHERE s.run = r.id AND s.tp_comm > 0)
UNION ALL
SELECT 'nothing to check: no ok pipeline run', NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok');
