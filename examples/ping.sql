-- abtest:setup
CREATE TABLE IF NOT EXISTS ping (id bigserial PRIMARY KEY, batch int NOT NULL, hits int NOT NULL DEFAULT 0, payload text NOT NULL);
CREATE INDEX IF NOT EXISTS ping_batch ON ping (batch);
-- Steady state: the rows the updates pick (ids 1 to 100 100) are there
-- before the first cell, so every update finds :batch rows from the
-- first transaction on; new rows take ids above them.
INSERT INTO ping (id, batch, payload) SELECT g, 0, md5(g::text) FROM generate_series(1, 100100) g ON CONFLICT (id) DO NOTHING;
SELECT setval(pg_get_serial_sequence('ping', 'id'), greatest(100100, (SELECT max(id) FROM ping)));
-- abtest:script
-- One "ping" (seed 000): insert :batch rows, then update :batch rows
-- of those already there. Run it with --var batch=1,10 (and -R for
-- offered rates): abtest matrix -w file:examples/ping.sql --var batch=1,10 -R 500,1000,4000
\set id random(1, 100000)
BEGIN;
INSERT INTO ping (batch, payload) SELECT :batch, md5(g::text) FROM generate_series(1, :batch) g;
UPDATE ping SET hits = hits + 1 WHERE id BETWEEN :id AND :id + :batch - 1;
END;
