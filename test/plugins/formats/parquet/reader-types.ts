/**
 * The type each independent reader reports for every logical type Rivet writes to Parquet (the columns of
 * `allTypesColumns`): DuckDB's `DESCRIBE`, the Arrow type arrow-rs (parquet-wasm) reads (with the extension name
 * from the field metadata, if any), and hyparquet's view of the schema element (physical type / annotation).
 * docs/formats/parquet.md has the same table.
 */
export interface ReaderTypes {
  readonly duckdb: string
  readonly arrow: string
  readonly hyparquet: string
}

export const expectedReaderTypes: Readonly<Record<string, ReaderTypes>> = {
  i16: { duckdb: "SMALLINT", arrow: "Int16", hyparquet: "INT32 / INTEGER(16, signed)" },
  i32: { duckdb: "INTEGER", arrow: "Int32", hyparquet: "INT32" },
  i64: { duckdb: "BIGINT", arrow: "Int64", hyparquet: "INT64" },
  f32: { duckdb: "FLOAT", arrow: "Float32", hyparquet: "FLOAT" },
  f64: { duckdb: "DOUBLE", arrow: "Float64", hyparquet: "DOUBLE" },
  dec_5_2: { duckdb: "DECIMAL(5,2)", arrow: "Decimal[5e+2]", hyparquet: "INT32 / DECIMAL(5,2)" },
  dec_18_4: { duckdb: "DECIMAL(18,4)", arrow: "Decimal[18e+4]", hyparquet: "INT64 / DECIMAL(18,4)" },
  dec_38_10: { duckdb: "DECIMAL(38,10)", arrow: "Decimal[38e+10]", hyparquet: "FIXED_LEN_BYTE_ARRAY / DECIMAL(38,10)" },
  // DuckDB's DECIMAL stops at 38 digits: it reads wider decimals as DOUBLE (the only lossy cell of the table).
  dec_50_0: { duckdb: "DOUBLE", arrow: "Decimal[50e0]", hyparquet: "FIXED_LEN_BYTE_ARRAY / DECIMAL(50,0)" },
  txt: { duckdb: "VARCHAR", arrow: "Utf8", hyparquet: "BYTE_ARRAY / STRING" },
  flag: { duckdb: "BOOLEAN", arrow: "Bool", hyparquet: "BOOLEAN" },
  day: { duckdb: "DATE", arrow: "Date32<DAY>", hyparquet: "INT32 / DATE" },
  clock: { duckdb: "TIME", arrow: "Time64<MICROSECOND>", hyparquet: "INT64 / TIME(MICROS, local)" },
  ts: { duckdb: "TIMESTAMP", arrow: "Timestamp<MICROSECOND>", hyparquet: "INT64 / TIMESTAMP(MICROS, local)" },
  tstz: { duckdb: "TIMESTAMP WITH TIME ZONE", arrow: "Timestamp<MICROSECOND, UTC>", hyparquet: "INT64 / TIMESTAMP(MICROS, UTC)" },
  id: { duckdb: "UUID", arrow: "FixedSizeBinary[16] arrow.uuid", hyparquet: "FIXED_LEN_BYTE_ARRAY / UUID" },
  doc: { duckdb: "JSON", arrow: "Utf8 arrow.json", hyparquet: "BYTE_ARRAY / JSON" },
  blob: { duckdb: "BLOB", arrow: "Binary", hyparquet: "BYTE_ARRAY" },
  span: { duckdb: "VARCHAR", arrow: "Utf8", hyparquet: "BYTE_ARRAY / STRING" },
  ints: { duckdb: "INTEGER[]", arrow: "List<Int32>", hyparquet: "LIST<INT32>" },
  words: { duckdb: "VARCHAR[]", arrow: "List<Utf8>", hyparquet: "LIST<BYTE_ARRAY / STRING>" },
  amounts: { duckdb: "DECIMAL(10,2)[]", arrow: "List<Decimal[10e+2]>", hyparquet: "LIST<INT64 / DECIMAL(10,2)>" },
  ids: { duckdb: "UUID[]", arrow: "List<FixedSizeBinary[16] arrow.uuid>", hyparquet: "LIST<FIXED_LEN_BYTE_ARRAY / UUID>" },
  stamps: {
    duckdb: "TIMESTAMP WITH TIME ZONE[]",
    arrow: "List<Timestamp<MICROSECOND, UTC>>",
    hyparquet: "LIST<INT64 / TIMESTAMP(MICROS, UTC)>"
  },
  grid: { duckdb: "BIGINT[][]", arrow: "List<List<Int64>>", hyparquet: "LIST<LIST<INT64>>" }
}
