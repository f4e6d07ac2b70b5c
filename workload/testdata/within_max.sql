-- within_max: 4500 distinct queries inside transactions; stays under
-- pg_stat_statements.max, so nothing is evicted.
\set q random(1, 4500)
BEGIN;
WITH wm_:q AS (SELECT 1) SELECT * FROM wm_:q;
COMMIT;
