-- How busy was each link? For one run (the parameter :run, by default the
-- latest run with link rows; links are recorded with record = "events"):
-- every link's endpoints (node ids: ranks first, then switches and NICs in
-- the order they were created), bandwidth, latency, bytes carried, busy
-- time (seconds with at least one transfer on it), busy / makespan, and
-- the mean rate while busy as a share of the bandwidth. Busiest first.
-- Usage: sqlite3 -header -column results/x.db < results/queries/link_utilisation.sql
--        sqlite3 -header -column results/x.db '.param set :run 3' \
--                '.read results/queries/link_utilisation.sql'
WITH pick AS (SELECT coalesce(:run, (SELECT max(run) FROM link)) AS id)
SELECT l.run,
       r.name,
       l.src,
       l.dst,
       printf('%.4g', l.bandwidth / 1e9) AS bandwidth_gbs,
       printf('%.4g', l.latency * 1e6) AS latency_us,
       CAST(l.bytes AS INTEGER) AS bytes,
       printf('%.6g', l.busy) AS busy_s,
       printf('%.6g', r.makespan) AS makespan_s,
       printf('%.2f%%', 100 * l.busy / nullif(r.makespan, 0)) AS busy,
       printf('%.2f%%', 100 * l.bytes / nullif(l.busy * l.bandwidth, 0))
           AS rate_while_busy
FROM link AS l
JOIN run AS r ON r.id = l.run
WHERE l.run = (SELECT id FROM pick)
ORDER BY l.busy DESC, l.bytes DESC, l.src, l.dst;
