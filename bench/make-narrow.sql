-- A narrow table of :rows rows × 4 integer/timestamp columns for the benchmarks
-- (psql -v rows=10000000 -v table=bench_narrow_10m). Per row the cost is in the row/field overhead, not the bytes.
DROP TABLE IF EXISTS :"table";
CREATE TABLE :"table" (
  id         bigint NOT NULL,
  account_id integer NOT NULL,
  amount     bigint,
  created_at timestamptz NOT NULL
);
INSERT INTO :"table"
SELECT i,
       ((i * 7919) % 100000)::int,
       CASE WHEN i % 17 = 0 THEN NULL ELSE (i * 2654435761) % 1000000007 - 500000000 END,
       timestamptz '2020-01-01 00:00:00+00' + (i * interval '37 millisecond') + ((i % 1000) * interval '1 microsecond')
FROM generate_series(1::bigint, :rows) AS i;
-- After the load: building the index once is faster than maintaining it row by row.
ALTER TABLE :"table" ADD PRIMARY KEY (id);
ANALYZE :"table";
