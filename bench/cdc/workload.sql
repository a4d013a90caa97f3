-- The CDC benchmark's table and changes (bench/cdc/run.sh runs it on a server with wal_level=logical).
-- The slot cdc_bench_src is created before the changes and never consumed: each measured run streams a copy of it
-- (pg_copy_logical_replication_slot), so every run decodes the same 2 000 000 changes:
--   500 000 inserts, 300 000 updates, 200 000 deletes, each in transactions of 1 000 rows (1 000 transactions),
--   then one transaction inserting 1 000 000 rows.
\set ON_ERROR_STOP on
SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'cdc_bench%';
DROP PUBLICATION IF EXISTS cdc_bench_pub;
DROP TABLE IF EXISTS cdc_bench;
CREATE TABLE cdc_bench (
  id int8 PRIMARY KEY,
  amount numeric(12,2),
  note text,
  ts timestamptz,
  doc jsonb,
  flag bool,
  uid uuid
);
CREATE PUBLICATION cdc_bench_pub FOR TABLE cdc_bench;
SELECT lsn AS start_lsn FROM pg_create_logical_replication_slot('cdc_bench_src', 'pgoutput');

CREATE OR REPLACE FUNCTION pg_temp.rows(lo int8, hi int8) RETURNS SETOF cdc_bench LANGUAGE sql AS $$
  SELECT g, (g % 1000000) / 100.0, 'note ' || g || repeat('x', (g % 40)::int),
         timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second',
         jsonb_build_object('k', g, 's', 'v' || g, 'a', jsonb_build_array(g % 7, g % 11)),
         g % 2 = 0, md5(g::text)::uuid
  FROM generate_series(lo, hi) g
$$;

DO $$ BEGIN
  FOR i IN 0..499 LOOP
    INSERT INTO cdc_bench SELECT * FROM pg_temp.rows(i * 1000 + 1, i * 1000 + 1000);
    COMMIT;
  END LOOP;
END $$;
DO $$ BEGIN
  FOR i IN 0..299 LOOP
    UPDATE cdc_bench SET amount = amount + 1, note = note || 'u', ts = ts + interval '1 day', flag = NOT flag
      WHERE id BETWEEN i * 1000 + 1 AND i * 1000 + 1000;
    COMMIT;
  END LOOP;
END $$;
DO $$ BEGIN
  FOR i IN 300..499 LOOP
    DELETE FROM cdc_bench WHERE id BETWEEN i * 1000 + 1 AND i * 1000 + 1000;
    COMMIT;
  END LOOP;
END $$;
INSERT INTO cdc_bench SELECT * FROM pg_temp.rows(1000001, 2000000);
SELECT pg_current_wal_lsn() AS target_lsn \gset
\echo target_lsn :target_lsn
