-- Invariant: bubble fractions, per rank (the bubble view) and per run, lie
-- in [0, 1] up to 1e-12 of rounding.
SELECT run, rank, fraction
FROM bubble
WHERE fraction < -1e-12 OR fraction > 1 + 1e-12
UNION ALL
SELECT id, NULL, bubble
FROM run
WHERE bubble < -1e-12 OR bubble > 1 + 1e-12;
