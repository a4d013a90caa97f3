-- A heavy-text table of :rows rows for the benchmarks (psql -v rows=2000000 -v table=bench_text_2m): an int8 key,
-- a 1–4 KiB text (1024–4096 bytes with commas, quotes, newlines and a few multibyte characters, so CSV quoting
-- and UTF-8 both get exercised) and a ~250-byte jsonb document (10 % NULL). Most bytes are in the text column.
DROP TABLE IF EXISTS :"table";
CREATE TABLE :"table" (
  id   bigint NOT NULL,
  body text NOT NULL,
  doc  jsonb
);
-- Each body is a slice of one ~150 KB ASCII pool of md5 words, taken as bytes (bytea substring is O(1); a text
-- substring of a multibyte-encoded string walks every character before the offset), so rows differ and a value
-- does not repeat itself the way repeat() would (which TOAST and zstd would squeeze to nothing).
INSERT INTO :"table"
SELECT i,
       'Grüße — ' || convert_from(substring(p.pool from 1 + ((i * 104729) % (length(p.pool) - 4096))::int
                                                   for 1012 + ((i * 7919) % 3073)::int), 'UTF8'),
       CASE WHEN i % 10 = 0 THEN NULL ELSE jsonb_build_object(
         'id', i,
         'user', jsonb_build_object('name', 'user ' || i, 'email', 'user' || i || '@example.com',
                                    'roles', jsonb_build_array('reader', CASE WHEN i % 7 = 0 THEN 'admin' ELSE 'writer' END)),
         'score', (i % 1000) / 7.0,
         'active', i % 3 <> 0,
         'tags', jsonb_build_array('t' || (i % 17), 't' || (i % 5)),
         'note', CASE WHEN i % 4 = 0 THEN 'line one' || chr(10) || 'line "two"' ELSE 'plain' END) END
FROM (SELECT convert_to(string_agg(md5(g::text) || CASE WHEN g % 9 = 0 THEN ', "quoted"' || chr(10)
                                                        WHEN g % 2 = 0 THEN ' ' ELSE ', ' END, ''), 'UTF8') AS pool
      FROM generate_series(1, 4096) AS g) AS p,
     generate_series(1::bigint, :rows) AS i;
ALTER TABLE :"table" ADD PRIMARY KEY (id);
ANALYZE :"table";
