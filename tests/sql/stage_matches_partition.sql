-- Every pipeline run's stage rows are its partition: stage s holds
-- partition[s] layers (run.params JSON), the stages tile the layers in
-- order from layer 0, and there is one row per entry of the partition.
-- Returns the offending runs; must return no rows.
-- Every ok pipeline run records its partition (ps.run writes the resolved
-- counts into run.params).
-- applies: SELECT count(*) FROM run WHERE kind = 'pipeline' AND status = 'ok'
WITH p AS (
    SELECT r.id AS run, CAST(j.key AS INTEGER) AS stage, j.value AS count
    FROM run AS r, json_each(r.params, '$.partition') AS j
    WHERE r.kind = 'pipeline' AND r.status = 'ok'
      AND json_type(r.params, '$.partition') = 'array'
)
SELECT p.run, p.stage, 'layer count differs from the partition'
FROM p LEFT JOIN stage AS s ON s.run = p.run AND s.stage = p.stage
WHERE s.run IS NULL OR s.last_layer - s.first_layer + 1 <> p.count
UNION ALL
SELECT s.run, s.stage, 'stage does not start after the previous one'
FROM stage AS s JOIN run AS r ON r.id = s.run AND r.kind = 'pipeline'
WHERE s.first_layer <> coalesce((SELECT t.last_layer + 1 FROM stage AS t
                                 WHERE t.run = s.run AND t.stage = s.stage - 1), 0)
UNION ALL
SELECT r.id, NULL, 'stage rows and partition differ in number'
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND json_type(r.params, '$.partition') = 'array'
  AND json_array_length(r.params, '$.partition')
      <> (SELECT count(*) FROM stage AS s WHERE s.run = r.id)
UNION ALL
SELECT r.id, NULL, 'no partition list in run.params'
FROM run AS r
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND json_type(r.params, '$.partition') IS NOT 'array'
UNION ALL
SELECT NULL, NULL, 'nothing to check: no ok pipeline run'
WHERE NOT EXISTS (SELECT 1 FROM run WHERE kind = 'pipeline' AND status = 'ok');
