-- abtest:setup
-- Seed 000's heartbeat in steady state: every timer is in the table
-- before the run, as in production, so each ping finds its row.
CREATE TABLE IF NOT EXISTS timer (id int PRIMARY KEY, deadline timestamptz NOT NULL, pings bigint NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS timer_deadline ON timer (deadline);
INSERT INTO timer (id, deadline) SELECT g, now() + interval '6 s' FROM generate_series(1, 20000) g ON CONFLICT (id) DO NOTHING;
-- abtest:script
-- One transaction carries :batch pings (seed 000: one commit per ping,
-- or batches of up to N), to :batch consecutive timers in id order, so
-- that concurrent batches lock rows in one order. A ping moves its
-- timer's deadline to now + 6 s: the indexed column changes, so no
-- update is HOT and each ping leaves exactly one dead tuple (seed 000:
-- "0% HOT, and one dead tuple per ping"). Rates and probes count pings
-- (ops-per-tx below); run it open loop in pings a second, e.g.
-- abtest matrix -k base -w file:examples/heartbeat.sql --var batch=1,10 -R 200,1000,3000ops -r 3
-- abtest:ops-per-tx :batch
\set id random(1, 20001 - :batch)
UPDATE timer SET deadline = now() + interval '6 s', pings = pings + 1 WHERE id BETWEEN :id AND :id + :batch - 1;
