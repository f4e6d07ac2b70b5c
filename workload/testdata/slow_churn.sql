-- slow_churn: 4950 hot queries keep pg_stat_statements near capacity; about
-- one transaction in 150000 runs a query never seen before (one every few
-- seconds at typical rates): admission near capacity.
\set r random(1, 150000)
\set hot random(1, 4950)
\set new random(1, 1000000000)
\if :r = 1
WITH new_:new AS (SELECT 1) SELECT * FROM new_:new;
\else
WITH hot_:hot AS (SELECT 1) SELECT * FROM hot_:hot;
\endif
