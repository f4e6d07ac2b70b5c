-- abtest:setup
CREATE TABLE IF NOT EXISTS queue (id bigserial PRIMARY KEY, sent timestamptz NOT NULL, got timestamptz);
TRUNCATE queue;
-- abtest:script
-- A producer and a consumer in one transaction (seed 002's shape): send
-- one message, take the oldest one not taken yet. The latency from send
-- to take is the workload's own metric, read after the window, and its
-- open loop's primary; one message a transaction.
-- abtest:primary delivery_p99_ms
-- abtest:ops-per-tx 1
INSERT INTO queue (sent) VALUES (clock_timestamp());
UPDATE queue SET got = clock_timestamp() WHERE id = (SELECT id FROM queue WHERE got IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED);
-- abtest:metric delivery_p99_ms unit=ms direction=lower threshold=10 tier=band
SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM got - sent) * 1000) FROM queue WHERE got IS NOT NULL;
-- abtest:metric delivered_per_tx unit=msg/tx direction=descriptive tier=report
SELECT count(*) FILTER (WHERE got IS NOT NULL)::float8 / greatest(count(*), 1) FROM queue;
