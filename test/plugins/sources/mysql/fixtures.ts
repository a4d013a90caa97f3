/** A table with every MySQL type the source maps, at its extremes, and a row of NULLs (test/plugins/sources/mysql). */
export const TYPES_TABLE = "mt_types"

export const TYPES_DDL = `
DROP TABLE IF EXISTS mt_types;
CREATE TABLE mt_types (
  id int PRIMARY KEY,
  ti tinyint, tiu tinyint unsigned, b1 tinyint(1), si smallint, siu smallint unsigned,
  mi mediumint, miu mediumint unsigned, i int, iu int unsigned, bi bigint, biu bigint unsigned,
  d decimal(65,30), du decimal(10,2) unsigned, f float, dbl double, bt bit(64),
  ch char(10), vc varchar(100), tx text, bn binary(4), vb varbinary(10), bl blob,
  e enum('a','bé'), st set('x','y','z'),
  dt date, dtm datetime(6), dt0 datetime, ts timestamp(6) NULL, tm time(6), y year, j json
) CHARACTER SET utf8mb4;
INSERT INTO mt_types VALUES
 (1, 127, 255, 1, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
  99999999999999999999999999999999999.999999999999999999999999999999, 99999999.99, 3.4028234e38, 1.7976931348623157e308,
  b'1111111111111111111111111111111111111111111111111111111111111111',
  'héllo', '😀 emoji', 'line\\nbreak, "quoted"', 0x00010200, 0x00, 0x00ff, 'bé', 'x,z',
  '9999-12-31', '9999-12-31 23:59:59.999999', '1000-01-01 00:00:00', '2038-01-19 03:14:07.999999', '838:59:59.000000',
  2155, '{"big": 12345678901234567890.5, "s": "é"}'),
 (2, -128, 0, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
  -99999999999999999999999999999999999.999999999999999999999999999999, 0, -1.17549435e-38, -2.2250738585072014e-308,
  b'0', '', '', '', 0x00000000, '', '', 'a', '',
  '1000-01-01', '1000-01-01 00:00:00.000001', '2024-02-29 12:30:45', '1970-01-01 00:00:01.000000', '-838:59:59.000000',
  1901, '[]'),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
`
