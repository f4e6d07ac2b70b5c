-- Setup SQL (--setup-sql) for examples/ticker.sql: its ticker as a
-- pg_cron job (seed 002). pg_cron calls ticker_loop once a second; it
-- delivers every pending message each ${tick_ms} ms within that slot,
-- committing between ticks. The slot ends 50 ms before the next whole
-- second: a call still running when pg_cron's next second comes makes
-- it skip that second, and a 10 ms ticker then left its messages
-- waiting a whole second (p99 950 ms at tick_ms=10 in one run). Run with --extension PG_CRON_SOURCE
-- --preload pg_cron --set cron.database_name=benchmark
-- --set cron.use_background_workers=on --var tick_ms=1,10,100,1000.
CREATE EXTENSION IF NOT EXISTS pg_cron;
CREATE TABLE IF NOT EXISTS tick_queue (id bigserial PRIMARY KEY, sent timestamptz NOT NULL DEFAULT clock_timestamp(), got timestamptz);
CREATE OR REPLACE PROCEDURE ticker_loop(period_ms int) LANGUAGE plpgsql AS $$
DECLARE
  slot_end timestamptz := date_trunc('second', clock_timestamp()) + interval '950 milliseconds';
BEGIN
  LOOP
    UPDATE tick_queue SET got = clock_timestamp() WHERE got IS NULL;
    COMMIT;
    EXIT WHEN clock_timestamp() + make_interval(secs => period_ms / 1000.0) >= slot_end;
    PERFORM pg_sleep(period_ms / 1000.0);
  END LOOP;
END $$;
SELECT cron.schedule('ticker', '1 seconds', 'CALL ticker_loop(${tick_ms})');
