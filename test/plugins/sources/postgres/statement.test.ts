import { describe, expect, it } from "@effect/vitest"
import type { SourceQuery } from "../../../../src/core/plugin.js"
import {
  boundsStatement,
  copyStatement,
  queryProblem,
  renderInline,
  renderForDisplay,
  renderStatement
} from "../../../../src/plugins/sources/postgres/statement.js"

const q = (sql: string, extra: Partial<SourceQuery> = {}): SourceQuery => ({
  exportName: "e",
  base: { _tag: "Query", sql },
  batchSize: 10,
  columnTypes: new Map(),
  ...extra
})

describe("postgres statement rendering", () => {
  it("leaves a query without filters, order or limit byte-identical", () => {
    for (const sql of ["select * from t;", "  select 1 -- trailing\n", "select $$;$$ as x"]) {
      expect(renderStatement(q(sql))).toEqual({ text: sql, params: [] })
      expect(renderStatement(q(sql, { where: [], orderBy: [] }))).toEqual({ text: sql, params: [] })
      expect(renderForDisplay(q(sql))).toBe(sql)
    }
  })

  it("renders a table base in PostgreSQL's quoting, and distinct columns around the base", () => {
    const table: SourceQuery = { ...q(""), base: { _tag: "Table", schema: 'sh"op', name: "orders" } }
    expect(renderStatement(table)).toEqual({ text: 'SELECT * FROM "sh""op"."orders"', params: [] })
    expect(renderStatement({ ...table, base: { _tag: "Table", name: "orders" } }).text).toBe('SELECT * FROM "orders"')
    expect(renderStatement({ ...table, distinct: ["country", "day"], where: [{ _tag: "IsNull", column: "x" }] }).text).toBe(
      'SELECT DISTINCT "country", "day" FROM (SELECT * FROM "sh""op"."orders"\n) AS _rivet WHERE "x" IS NULL'
    )
  })

  it("wraps the query with every filter kind, numbering parameters in order", () => {
    const query = q('SELECT * FROM "public"."orders"', {
      where: [
        { _tag: "Between", column: "id", low: "10", high: "20" },
        { _tag: "IsNull", column: "deleted_at" },
        { _tag: "After", columns: ["updated_at", "id"], values: ["2026-01-02T03:04:05.123456Z", "7"] },
        { _tag: "After", columns: ["id"], values: ["3"] },
        { _tag: "AtLeast", column: "day", value: "2026-01-01" },
        { _tag: "AtMost", column: "day", value: "2026-01-31" }
      ],
      orderBy: ["updated_at", "id"],
      limit: 500
    })
    expect(renderStatement(query)).toEqual({
      text:
        'SELECT * FROM (SELECT * FROM "public"."orders"\n) AS _rivet WHERE "id" BETWEEN $1 AND $2 AND ' +
        '"deleted_at" IS NULL AND ("updated_at", "id") > ($3, $4) AND "id" > $5 AND "day" >= $6 AND "day" <= $7 ' +
        'ORDER BY "updated_at", "id" LIMIT 500',
      params: ["10", "20", "2026-01-02T03:04:05.123456Z", "7", "3", "2026-01-01", "2026-01-31"]
    })
  })

  it("renders each part only when present", () => {
    expect(renderStatement(q("select 1 as a", { limit: 0 })).text).toBe("SELECT * FROM (select 1 as a\n) AS _rivet LIMIT 0")
    expect(renderStatement(q("select 1 as a", { orderBy: ["a"] })).text).toBe(
      'SELECT * FROM (select 1 as a\n) AS _rivet ORDER BY "a"'
    )
    expect(renderStatement(q("select 1 as a", { where: [{ _tag: "IsNull", column: "a" }] }))).toEqual({
      text: 'SELECT * FROM (select 1 as a\n) AS _rivet WHERE "a" IS NULL',
      params: []
    })
  })

  it("quotes identifiers by doubling quotes and never inlines values", () => {
    const { text, params } = renderStatement(
      q("select 1", { where: [{ _tag: "AtLeast", column: 'we"ird col', value: "x'); drop table t; --" }] })
    )
    expect(text).toBe('SELECT * FROM (select 1\n) AS _rivet WHERE "we""ird col" >= $1')
    expect(params).toEqual(["x'); drop table t; --"])
  })

  it("strips one trailing semicolon and survives a trailing line comment", () => {
    const limit = { limit: 5 }
    expect(renderStatement(q("select * from t ;  \n", limit)).text).toBe("SELECT * FROM (select * from t\n) AS _rivet LIMIT 5")
    expect(renderStatement(q("select * from t -- the orders", limit)).text).toBe(
      "SELECT * FROM (select * from t -- the orders\n) AS _rivet LIMIT 5"
    )
    expect(renderStatement(q("select * from t;;", limit)).text).toBe("SELECT * FROM (select * from t;\n) AS _rivet LIMIT 5")
  })

  it("finds the trailing semicolon before trailing comments, and not inside strings or comments", () => {
    const limit = { limit: 5 }
    const wrapped = (sql: string) => renderStatement(q(sql, limit)).text
    expect(wrapped("select * from t; -- the orders\n")).toBe("SELECT * FROM (select * from t -- the orders\n) AS _rivet LIMIT 5")
    expect(wrapped("select * from t; /* a /* nested */ note */")).toBe(
      "SELECT * FROM (select * from t /* a /* nested */ note */\n) AS _rivet LIMIT 5"
    )
    expect(wrapped("select ';' as x")).toBe("SELECT * FROM (select ';' as x\n) AS _rivet LIMIT 5")
    expect(wrapped("select $q$;$q$ as x -- ;")).toBe("SELECT * FROM (select $q$;$q$ as x -- ;\n) AS _rivet LIMIT 5")
    expect(wrapped('select 1 as "a;" /* ; */')).toBe('SELECT * FROM (select 1 as "a;" /* ; */\n) AS _rivet LIMIT 5')
  })

  it("shows parameters inline as quoted literals for display", () => {
    const query = q("select * from t", {
      where: [
        { _tag: "Between", column: "name", low: "O'Hara", high: "$2" },
        { _tag: "After", columns: ["a", "b"], values: ["1", "back\\slash"] }
      ],
      orderBy: ["a", "b"],
      limit: 3
    })
    expect(renderForDisplay(query)).toBe(
      "SELECT * FROM (select * from t\n) AS _rivet WHERE \"name\" BETWEEN 'O''Hara' AND '$2' AND " +
        "(\"a\", \"b\") > ('1', 'back\\slash') ORDER BY \"a\", \"b\" LIMIT 3"
    )
  })

  it("writes bounds as three scalar subqueries over the rendered query, sharing its parameters", () => {
    const inner = renderStatement(q("select * from t;", { where: [{ _tag: "AtLeast", column: "id", value: "5" }] }))
    const from = 'FROM (SELECT * FROM (select * from t\n) AS _rivet WHERE "id" >= $1\n) AS _rivet_b'
    expect(boundsStatement(inner, 'c"1')).toEqual({
      text:
        `SELECT (SELECT "c""1" ${from} WHERE "c""1" IS NOT NULL ORDER BY "c""1" ASC LIMIT 1)::text, ` +
        `(SELECT "c""1" ${from} WHERE "c""1" IS NOT NULL ORDER BY "c""1" DESC LIMIT 1)::text, ` +
        `EXISTS (SELECT 1 ${from} WHERE "c""1" IS NULL)`,
      params: ["5"]
    })
    const plain = boundsStatement(renderStatement(q("select * from t;")), "id")
    expect(plain.text).toContain('(SELECT "id" FROM (select * from t\n) AS _rivet_b WHERE "id" IS NOT NULL ORDER BY "id" ASC')
    expect(plain.params).toEqual([])
  })

  it("names queries that cannot be rendered", () => {
    expect(queryProblem(q("select 1", { limit: 10 }))).toBeUndefined()
    expect(queryProblem(q("select 1", { limit: -1 }))).toContain("non-negative integer")
    expect(queryProblem(q("select 1", { limit: 1.5 }))).toContain("non-negative integer")
    expect(queryProblem(q("select 1", { where: [{ _tag: "After", columns: ["a", "b"], values: ["1"] }] }))).toContain(
      "one value per column"
    )
    expect(queryProblem(q("select 1", { where: [{ _tag: "After", columns: [], values: [] }] }))).toContain(
      "one value per column"
    )
  })
})

describe("statements for COPY", () => {
  it("inlines filter values as E'' literals, untyped, and wraps the SELECT in COPY … (FORMAT binary)", () => {
    const query = q("select * from t; -- done", {
      where: [{ _tag: "Between", column: "id", low: "1", high: "it's \\ 2" }],
      orderBy: ["id"],
      limit: 5
    })
    const inline = renderInline(query)
    expect(inline).toBe(`SELECT * FROM (select * from t -- done\n) AS _rivet WHERE "id" BETWEEN E'1' AND E'it''s \\\\ 2' ORDER BY "id" LIMIT 5`)
    expect(copyStatement(inline, [false])).toBe(`COPY (${inline}\n) TO STDOUT (FORMAT binary)`)
    expect(copyStatement("select 1; ", [false])).toBe("COPY (select 1\n) TO STDOUT (FORMAT binary)")
  })

  it("renders flagged columns with their output function, renaming columns by position (duplicates survive)", () => {
    expect(copyStatement("select a, a from t", [false, true])).toBe(
      `COPY (SELECT _rivet_copy."c1", CASE WHEN num_nulls(_rivet_copy."c2") = 0 THEN format('%s', _rivet_copy."c2") END ` +
        `FROM (select a, a from t\n) AS _rivet_copy("c1", "c2")) TO STDOUT (FORMAT binary)`
    )
  })

  it("refuses a filter value with a NUL character (PostgreSQL text cannot hold it)", () => {
    expect(queryProblem(q("select 1", { where: [{ _tag: "AtLeast", column: "id", value: "a\u0000b" }] }))).toContain("NUL")
  })
})
