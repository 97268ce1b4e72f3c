-- Invariant: every ok events-level pipeline run says what each simulated
-- rank stands for (rank_member, core/par/sim.h): one row per cluster rank
-- of its layout, tp x cp x dp x stages of them (the layout's world; cp
-- is ps.run's, kept in the inputs' JSON); every rank
-- of rank_stat stands for itself; every member belongs to a simulated
-- rank; coordinates lie within the sizes.
-- applies: SELECT count(*) FROM run r JOIN span s ON s.run = r.id WHERE r.kind = 'pipeline' AND r.status = 'ok'
SELECT r.id, NULL, 'members: ' || (SELECT count(*) FROM rank_member m WHERE m.run = r.id)
FROM run AS r JOIN span AS s ON s.run = r.id
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND (SELECT count(*) FROM rank_member m WHERE m.run = r.id)
      != r.stages * coalesce(r.dp, 1) * coalesce(r.tp, 1)
         * coalesce(json_extract(r.params, '$.cp'), 1)
UNION ALL
SELECT k.run, k.rank, 'a simulated rank that does not stand for itself'
FROM rank_stat AS k JOIN span AS s ON s.run = k.run JOIN run AS r ON r.id = k.run
WHERE r.kind = 'pipeline' AND r.status = 'ok'
  AND NOT EXISTS (SELECT 1 FROM rank_member m
                  WHERE m.run = k.run AND m.rank = k.rank AND m.member = k.rank)
UNION ALL
SELECT m.run, m.rank, 'a member of a rank that was not simulated'
FROM rank_member AS m
WHERE NOT EXISTS (SELECT 1 FROM rank_stat k WHERE k.run = m.run AND k.rank = m.rank)
UNION ALL
SELECT m.run, m.member, 'coordinates outside the sizes'
FROM rank_member AS m JOIN run AS r ON r.id = m.run
WHERE m.tp < 0 OR m.tp >= coalesce(r.tp, 1) OR m.dp < 0 OR m.dp >= coalesce(r.dp, 1)
   OR m.pp < 0 OR m.pp >= r.stages OR m.cp < 0
   OR m.cp >= coalesce(json_extract(r.params, '$.cp'), 1)
UNION ALL
SELECT NULL, NULL, 'nothing to check: no ok events-level pipeline run'
WHERE NOT EXISTS (SELECT 1 FROM run r JOIN span s ON s.run = r.id
                  WHERE r.kind = 'pipeline' AND r.status = 'ok');
