-- abtest:setup
CREATE TABLE IF NOT EXISTS tick_queue (id bigserial PRIMARY KEY, sent timestamptz NOT NULL DEFAULT clock_timestamp(), got timestamptz);
CREATE INDEX IF NOT EXISTS tick_queue_pending ON tick_queue (id) WHERE got IS NULL;
TRUNCATE tick_queue;
-- abtest:script
-- A producer only (seed 002's shape): each transaction sends one message
-- stamped with its send time; a ticker outside the workload (a pg_cron
-- job, a background worker, …) delivers them, stamping got. The latency
-- from send to delivery is the workload's own metric, read after the
-- window over the messages delivered by then, and what its open-loop
-- configurations are judged by first. Run it open loop, in messages a
-- second (-R 100ops: one message a transaction).
-- abtest:primary delivery_p99_ms
-- abtest:ops-per-tx 1
INSERT INTO tick_queue DEFAULT VALUES;
-- abtest:metric delivery_p99_ms unit=ms direction=lower threshold=10 tier=band
SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM got - sent) * 1000) FROM tick_queue WHERE got IS NOT NULL;
-- abtest:metric delivery_p50_ms unit=ms direction=lower threshold=10 tier=report
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM got - sent) * 1000) FROM tick_queue WHERE got IS NOT NULL;
-- abtest:metric delivered_ratio unit=ratio direction=descriptive tier=report
SELECT count(got)::float8 / greatest(count(*), 1) FROM tick_queue;
