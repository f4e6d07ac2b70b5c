-- abtest:setup
CREATE TABLE IF NOT EXISTS ping (id bigserial PRIMARY KEY, batch int NOT NULL, hits int NOT NULL DEFAULT 0, payload text NOT NULL);
CREATE INDEX IF NOT EXISTS ping_batch ON ping (batch);
-- Steady state: the rows the updates pick (ids 1 to 100 100) are there
-- before the first cell, so every update finds :batch rows from the
-- first transaction on; new rows take ids above them.
INSERT INTO ping (id, batch, payload) SELECT g, 0, md5(g::text) FROM generate_series(1, 100100) g ON CONFLICT (id) DO NOTHING;
SELECT setval(pg_get_serial_sequence('ping', 'id'), greatest(100100, (SELECT max(id) FROM ping)));
-- abtest:script
-- One transaction carries :batch pings (seed 000): each inserts a row
-- and updates one of those already there. Rates and probes count pings
-- (ops-per-tx below): run it with --var batch=1,10 and offered pings a
-- second, -R LISTops: abtest matrix -w file:examples/ping.sql --var batch=1,10 -R 500,1000,4000ops
-- abtest:ops-per-tx :batch
\set id random(1, 100000)
BEGIN;
INSERT INTO ping (batch, payload) SELECT :batch, md5(g::text) FROM generate_series(1, :batch) g;
UPDATE ping SET hits = hits + 1 WHERE id BETWEEN :id AND :id + :batch - 1;
END;
