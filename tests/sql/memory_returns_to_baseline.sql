-- Invariant: every activation allocated during an ok run is freed, so the
-- last memory row of each (run, rank) equals the first (the static
-- baseline), up to rounding of 1e-9 of the rank's peak. Rows are in ledger
-- order by rowid.
SELECT g.run, g.rank, first.bytes AS baseline, last.bytes AS final
FROM (SELECT run, rank, min(rowid) AS first_row, max(rowid) AS last_row,
             max(abs(bytes)) AS peak
      FROM memory
      GROUP BY run, rank) AS g
JOIN memory AS first ON first.rowid = g.first_row
JOIN memory AS last ON last.rowid = g.last_row
JOIN run AS r ON r.id = g.run
WHERE r.status = 'ok'
  AND abs(last.bytes - first.bytes) > 1e-9 * max(1.0, g.peak);
