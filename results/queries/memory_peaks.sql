-- How much memory does each GPU need? For every run and rank: the static
-- part (weights, gradients, optimizer state), the peak, the activations on
-- top of the static part at the peak, and when the peak is first reached.
-- Largest peak first within each run. Sizes in GiB (2^30 bytes).
-- Usage: sqlite3 -header -column results/demo.db < results/queries/memory_peaks.sql
SELECT p.run,
       r.name,
       p.rank,
       printf('%.3f', s.static_memory / 1073741824.0) AS static_gib,
       printf('%.3f', p.peak / 1073741824.0) AS peak_gib,
       printf('%.3f', (p.peak - s.static_memory) / 1073741824.0)
           AS activations_gib,
       printf('%.6g', p.t_peak) AS t_peak_s
FROM memory_peak AS p
JOIN rank_stat AS s ON s.run = p.run AND s.rank = p.rank
JOIN run AS r ON r.id = p.run
ORDER BY p.run, p.peak DESC, p.rank;
