-- Invariant: every activation allocated during an ok run is freed, so the
-- last memory row of each (run, rank) equals the first (the static
-- baseline), up to rounding of 1e-9 of the rank's peak. Rows are in ledger
-- order by rowid. Every rank of an ok pipeline run recorded with events
-- has memory rows (at least its baseline).
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok' AND coalesce(json_extract(params, '$.record'), 'events') = 'events'
SELECT g.run, g.rank, first.bytes AS baseline, last.bytes AS final
FROM (SELECT run, rank, min(rowid) AS first_row, max(rowid) AS last_row,
             max(abs(bytes)) AS peak
      FROM memory
      GROUP BY run, rank) AS g
JOIN memory AS first ON first.rowid = g.first_row
JOIN memory AS last ON last.rowid = g.last_row
JOIN run AS r ON r.id = g.run
WHERE r.status = 'ok'
  AND abs(last.bytes - first.bytes) > 1e-9 * max(1.0, g.peak)
UNION ALL
SELECT s.run, s.rank, 'no memory rows', NULL
FROM rank_stat AS s
JOIN run AS r ON r.id = s.run
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND coalesce(json_extract(r.params, '$.record'), 'events') = 'events'
  AND NOT EXISTS (SELECT 1 FROM memory AS m WHERE m.run = s.run AND m.rank = s.rank)
UNION ALL
SELECT r.id, NULL, 'no memory rows', NULL
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND coalesce(json_extract(r.params, '$.record'), 'events') = 'events'
  AND NOT EXISTS (SELECT 1 FROM memory AS m WHERE m.run = r.id)
UNION ALL
SELECT NULL, NULL, 'nothing to check: no ok pipeline run with events', NULL
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok'
                  AND coalesce(json_extract(params, '$.record'), 'events') = 'events');
