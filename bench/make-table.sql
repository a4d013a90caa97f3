-- A mixed-type table of :rows rows × 20 columns for the benchmarks (psql -v rows=2000000 -v table=bench_2m).
DROP TABLE IF EXISTS :"table";
CREATE TABLE :"table" (
  id          bigint PRIMARY KEY,
  customer_id integer NOT NULL,
  quantity    smallint,
  amount      numeric(12,2),
  unit_price  numeric(18,6),
  ratio       double precision,
  score       real,
  name        text,
  email       text,
  country     char(2),
  status      text,
  active      boolean,
  created_at  timestamptz,
  updated_at  timestamp,
  birth_date  date,
  open_time   time,
  uid         uuid,
  payload     jsonb,
  tags        text[],
  note        text
);
INSERT INTO :"table"
SELECT i,
       (i * 7919) % 100000,
       CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 500)::smallint END,
       ((i * 37) % 10000000) / 100.0,
       ((i * 7) % 1000000007) / 1000000.0,
       (i % 1000) / 7.0,
       CASE WHEN i % 13 = 0 THEN NULL ELSE ((i % 100) / 3.0)::real END,
       'customer ' || i,
       'user' || i || '@example.com',
       (ARRAY['DE','FR','US','GB','JP','BR','IN','NL'])[1 + i % 8],
       (ARRAY['new','paid','shipped','delivered','returned'])[1 + i % 5],
       i % 3 <> 0,
       timestamptz '2020-01-01 00:00:00+00' + (i * interval '1 second') + ((i % 1000000) * interval '1 microsecond'),
       timestamp '2021-06-01 12:00:00' + (i * interval '17 second'),
       CASE WHEN i % 9 = 0 THEN NULL ELSE date '1950-01-01' + (i % 20000)::int END,
       time '00:00:00' + ((i % 86400) * interval '1 second'),
       md5(i::text)::uuid,
       jsonb_build_object('id', i, 'kind', 'event', 'big', 12345678901234567890::numeric + i),
       ARRAY['tag' || (i % 10), 'tag' || (i % 7)],
       CASE WHEN i % 5 = 0 THEN NULL ELSE 'note with, comma and "quotes" #' || i END
FROM generate_series(1::bigint, :rows) AS i;
ANALYZE :"table";
