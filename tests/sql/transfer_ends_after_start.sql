-- Invariant: a transfer never ends before it starts, and no time is
-- negative.
SELECT run, src, dst, kind, mb, t_start, t_end
FROM transfer
WHERE t_end < t_start OR t_start < 0;
