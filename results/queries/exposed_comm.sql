-- Exposed communication: how long each stage waits for gradient sync after
-- its compute ends (the worst replica), per data-parallel run.
-- sqlite3 -header -column results/dp_pp.db < results/queries/exposed_comm.sql
SELECT r.id AS run, r.name, r.dp, s.stage, s.rank,
       printf('%.3f ms', 1e3 * s.exposed_comm) AS exposed,
       printf('%.1f%%', 100.0 * s.exposed_comm / r.makespan) AS of_step
FROM stage s JOIN run r ON r.id = s.run
WHERE s.exposed_comm IS NOT NULL
ORDER BY r.id, s.stage;
