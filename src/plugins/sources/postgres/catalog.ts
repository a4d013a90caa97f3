import type postgres from "postgres"
import type { PgType } from "./types.js"

/** A result column as postgres.js describes it (RowDescription): type OID and, for plain columns, table and attnum. */
export interface DescribedColumn {
  readonly name: string
  readonly type: number
  readonly table: number
  readonly number: number
}

/** The declared type of a table or view column: domains and typmods (numeric precision) survive only here. */
export interface Attribute {
  readonly type: number
  readonly typmod: number
}

export interface CatalogInfo {
  readonly types: ReadonlyMap<number, PgType>
  /** Keyed by `attributeKey(table, attnum)`. */
  readonly attributes: ReadonlyMap<string, Attribute>
}

export const attributeKey = (table: number, attnum: number): string => `${table}:${attnum}`

// One round trip: the attributes of the described table columns, then every type reachable from the result's
// type OIDs and those attributes through array elements and domain base types. Results come back as JSON text
// (the client keeps every value as text), oids cast to int8 so they arrive as JSON numbers.
const CATALOG_SQL = `
with recursive
  att as (
    select k.relid, k.num, a.atttypid, a.atttypmod
    from unnest($1::oid[], $2::int2[]) as k(relid, num)
    join pg_catalog.pg_attribute a on a.attrelid = k.relid and a.attnum = k.num
  ),
  ty(oid) as (
    select unnest($3::oid[])
    union select atttypid from att
    union select x.oid from ty join pg_catalog.pg_type t on t.oid = ty.oid
      cross join lateral (values (t.typelem), (t.typbasetype)) as x(oid)
      where x.oid <> 0
  )
select
  (select coalesce(json_agg(json_build_array(relid::int8, num, atttypid::int8, atttypmod)), '[]') from att),
  (select coalesce(json_agg(json_build_array(t.oid::int8, t.typname, t.typtype, t.typcategory, t.typelem::int8,
      t.typlen, t.typbasetype::int8, t.typtypmod)), '[]')
   from ty join pg_catalog.pg_type t on t.oid = ty.oid)`

const arrayLiteral = (values: ReadonlyArray<number>): string => `{${values.join(",")}}`

type AttributeRow = [number, number, number, number]
type TypeRow = [number, string, string, string, number, number, number, number]

/** Loads the catalog rows needed to map the described columns (runs inside the export's transaction). */
export const loadCatalog = async (
  sql: postgres.TransactionSql,
  columns: ReadonlyArray<DescribedColumn>
): Promise<CatalogInfo> => {
  const tableColumns = columns.filter((column) => column.table !== 0 && column.number > 0)
  const rows = await sql
    .unsafe(CATALOG_SQL, [
      arrayLiteral(tableColumns.map((column) => column.table)),
      arrayLiteral(tableColumns.map((column) => column.number)),
      arrayLiteral([...new Set(columns.map((column) => column.type))])
    ])
    .values()
  const [attributesJson, typesJson] = (rows[0] ?? []) as ReadonlyArray<string>
  const attributes = new Map<string, Attribute>()
  for (const [table, attnum, type, typmod] of JSON.parse(attributesJson ?? "[]") as Array<AttributeRow>) {
    attributes.set(attributeKey(table, attnum), { type, typmod })
  }
  const types = new Map<number, PgType>()
  for (const [oid, name, kind, category, element, length, baseType, typmod] of JSON.parse(
    typesJson ?? "[]"
  ) as Array<TypeRow>) {
    types.set(oid, { oid, name, kind, category, element, length, baseType, typmod })
  }
  return { types, attributes }
}
