-- Which ranks wait the most? For every run and rank: busy seconds, the
-- step's makespan and the bubble (share of the step the rank is idle),
-- worst rank first within each run.
-- Usage: sqlite3 -header -column results/demo.db < results/queries/bubble_per_rank.sql
SELECT b.run,
       r.name,
       r.schedule,
       b.rank,
       printf('%.6g', b.busy) AS busy_s,
       printf('%.6g', b.makespan) AS makespan_s,
       printf('%.2f%%', 100 * b.fraction) AS bubble
FROM bubble AS b
JOIN run AS r ON r.id = b.run
ORDER BY b.run, b.fraction DESC, b.rank;
