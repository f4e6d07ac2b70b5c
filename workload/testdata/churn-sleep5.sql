-- churn: 80% of transactions run one of 1000 hot queries, the rest one of
-- 3000000 cold ones: pg_stat_statements evicts constantly.
\set r random(1, 100)
\set hot random(1, 1000)
\set cold random(1, 3000000)
\if :r <= 80
WITH hot_:hot AS (SELECT 1) SELECT * FROM hot_:hot;
\else
WITH cold_:cold AS (SELECT 1) SELECT * FROM cold_:cold;
\endif
\sleep 5 ms
