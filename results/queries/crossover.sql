-- Up to which size does a tree still beat a ring? For every (op, number of
-- ranks, topology) and every tree-like algorithm, the largest message size
-- at which it was faster than ring, and the next size swept, where ring
-- was at least as fast. "Tree-like" means the latency-optimised
-- algorithms: tree (NCCL's), binomial_tree (log2(N) steps of the whole
-- array) and double_binary_tree; edit the tree_like table below to change that. The
-- topology is run.params' "topology" key (ps.collective stores the
-- cluster's name there); only runs at the same op, ranks, topology and
-- size are compared, taking the fastest run of each algorithm.
-- On a mesh every rank has N - 1 independent ports, so double_binary_tree
-- can beat ring at every size: then ring_wins_from is NULL.
-- Usage: sqlite3 -header -column results/ring_vs_tree.db < results/queries/crossover.sql
WITH tree_like(algorithm) AS (VALUES ('tree'), ('binomial_tree'),
                                    ('double_binary_tree')),
times AS (
    SELECT c.op, c.ranks, json_extract(r.params, '$.topology') AS topology,
           c.bytes, c.algorithm, min(c.time) AS time
    FROM collective AS c
    JOIN run AS r ON r.id = c.run
    WHERE r.status = 'ok'
    GROUP BY 1, 2, 3, 4, 5),
duel AS (
    SELECT t.op, t.ranks, t.topology, t.algorithm, t.bytes,
           t.time AS tree_time, g.time AS ring_time
    FROM times AS t
    JOIN times AS g
      ON g.op = t.op AND g.ranks = t.ranks AND g.topology IS t.topology
     AND g.bytes = t.bytes AND g.algorithm = 'ring'
    WHERE t.algorithm IN (SELECT algorithm FROM tree_like)),
won AS (
    SELECT op, ranks, topology, algorithm, max(bytes) AS bytes
    FROM duel
    WHERE tree_time < ring_time
    GROUP BY 1, 2, 3, 4)
SELECT w.op, w.ranks, w.topology, w.algorithm,
       CAST(w.bytes AS INTEGER) AS wins_up_to_bytes,
       (SELECT CAST(min(d.bytes) AS INTEGER) FROM duel AS d
        WHERE d.op = w.op AND d.ranks = w.ranks AND d.topology IS w.topology
          AND d.algorithm = w.algorithm AND d.bytes > w.bytes)
           AS ring_wins_from_bytes
FROM won AS w
ORDER BY w.op, w.topology, w.ranks, w.algorithm;
