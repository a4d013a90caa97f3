-- A mixed-type MariaDB table of @rows rows × 20 columns for bench/mysql.sh, the MySQL twin of make-table.sql
-- (MariaDB's seq_1_to_N sequence engine makes the rows). Run with: mariadb -e "SET @rows = 2000000; SOURCE …".
DROP TABLE IF EXISTS bench_my;
CREATE TABLE bench_my (
  id          bigint PRIMARY KEY,
  customer_id int NOT NULL,
  quantity    smallint,
  amount      decimal(12,2),
  unit_price  decimal(18,6),
  ratio       double,
  score       float,
  name        varchar(64),
  email       varchar(128),
  country     char(2),
  status      enum('new','paid','shipped','delivered','returned'),
  active      tinyint(1),
  created_at  timestamp(6) NULL,
  updated_at  datetime,
  birth_date  date,
  open_time   time,
  uid         char(36),
  payload     json,
  tags        varchar(64),
  note        text
) CHARACTER SET utf8mb4;
SET SESSION time_zone = '+00:00';
EXECUTE IMMEDIATE CONCAT('INSERT INTO bench_my SELECT seq, (seq * 7919) % 100000,
  IF(seq % 11 = 0, NULL, seq % 500), ((seq * 37) % 10000000) / 100.0, ((seq * 7) % 1000000007) / 1000000.0,
  (seq % 1000) / 7.0, IF(seq % 13 = 0, NULL, (seq % 100) / 3.0), CONCAT(''customer '', seq),
  CONCAT(''user'', seq, ''@example.com''), ELT(1 + seq % 8, ''DE'',''FR'',''US'',''GB'',''JP'',''BR'',''IN'',''NL''),
  1 + seq % 5, seq % 3 <> 0,
  TIMESTAMP''2020-01-01 00:00:00'' + INTERVAL seq SECOND + INTERVAL (seq % 1000000) MICROSECOND,
  TIMESTAMP''2021-06-01 12:00:00'' + INTERVAL (seq * 17) SECOND,
  IF(seq % 9 = 0, NULL, DATE''1950-01-01'' + INTERVAL (seq % 20000) DAY), SEC_TO_TIME(seq % 86400),
  INSERT(INSERT(INSERT(INSERT(MD5(seq), 9, 0, ''-''), 14, 0, ''-''), 19, 0, ''-''), 24, 0, ''-''),
  JSON_OBJECT(''id'', seq, ''kind'', ''event'', ''big'', 12345678901234567890 + seq),
  CONCAT(''["tag'', seq % 10, ''","tag'', seq % 7, ''"]''),
  IF(seq % 5 = 0, NULL, CONCAT(''note with, comma and "quotes" #'', seq))
  FROM seq_1_to_', @rows);
ANALYZE TABLE bench_my;
