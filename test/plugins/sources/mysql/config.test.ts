import * as Either from "effect/Either"
import { decodeBlock } from "../../../../src/config/issues.js"
import { describe, expect, it } from "vitest"
import { MysqlConfig } from "../../../../src/plugins/sources/mysql/config.js"
import { timeToInterval } from "../../../../src/plugins/sources/mysql/decode.js"
import { mysqlTimestampText, renderForDisplay, renderStatement, stripTerminator } from "../../../../src/plugins/sources/mysql/statement.js"
import { displayAddress, isUrlProblem, parseMysqlUrl, shortAddress } from "../../../../src/plugins/sources/mysql/url.js"

// What the config decoder reports for a source block: the messages and hints of its ConfigErrors.
const decode = (input: unknown) => decodeBlock(MysqlConfig, input, "source")
const failure = (input: unknown): string => {
  const result = decode(input)
  if (Either.isRight(result)) throw new Error("decoded, but should have failed")
  return result.left.map((error) => `${error.path}: ${error.message} ${error.hint ?? ""}`).join("; ")
}

describe("mysql source config and URLs", () => {
  it("parses a URL into explicit parts and masks the password for display", () => {
    const address = parseMysqlUrl("mysql://app:p%40ss%2Fw%23rd@db.internal:3307/shop?ssl-mode=REQUIRED")
    expect(address).toEqual({ host: "db.internal", port: 3307, user: "app", password: "p@ss/w#rd", database: "shop", sslMode: "REQUIRED" })
    if (isUrlProblem(address)) throw new Error("unreachable")
    expect(displayAddress(address)).toBe("mysql://app:***@db.internal:3307/shop")
    expect(shortAddress(address)).toBe("db.internal/shop")
    expect(parseMysqlUrl("mariadb://root@[::1]/test")).toMatchObject({ host: "::1", port: 3306, user: "root", password: undefined })
  })

  it.each([
    ["postgres://u:hunter2x@db/shop", /must start with mysql:\/\//],
    ["mysql://u:hunter2x@db", /must name the database/],
    ["mysql://u:hun@ter2x@db/shop", /unencoded `@`/],
    ["mysql://u:hunter2x/@db/shop", /unencoded `\/`/],
    ["mysql://u:hunter2x@db/shop?sslmode=sometimes", /ssl-mode must be/],
    ["mysql://u:hunter2x@db/shop?charset=latin1", /unknown parameter `charset`/],
    ["mysql://u:hunter2x@db:99999/shop", /port/]
  ])("refuses %s without quoting it", (url, reason) => {
    const text = failure({ url })
    expect(text).toMatch(reason)
    expect(text).not.toContain("hunter2x")
  })

  it("needs exactly one way to connect, and url_env must be a variable name", () => {
    expect(failure({})).toMatch(/set one of `url`, `url_env`, `url_file`, `host` to say which database to read/)
    expect(failure({ url: "mysql://a@b/c", url_env: "X" })).toMatch(/set only one/)
    expect(failure({ url_env: "mysql://u:pw@h/db" })).toMatch(/NAME of an environment variable/)
    const decoded = decode({ url_env: "MYSQL_URL" })
    expect(Either.getOrThrow(decoded)).toMatchObject({ statement_timeout_s: 300, lock_timeout_s: 30, zero_dates: "error" })
    expect(failure({ url_env: "X", zero_dates: "zero" })).toMatch(/zero_dates/)
  })
})

describe("mysql statements", () => {
  const base = { exportName: "t", base: { _tag: "Table", schema: "shop", name: "or`ders" } as const, batchSize: 10, columnTypes: new Map() }

  it("renders a table shortcut with backticks and binds every value where it appears", () => {
    expect(renderStatement(base)).toEqual({ text: "SELECT * FROM `shop`.`or``ders`", params: [] })
    const after = renderStatement({
      ...base,
      where: [{ _tag: "After", columns: ["a", "b"], values: ["1", "x'y"] }],
      orderBy: ["a", "b"],
      limit: 5
    })
    expect(after.text).toBe(
      "SELECT * FROM (SELECT * FROM `shop`.`or``ders`\n) AS _rivet WHERE ((`a` > ?) OR (`a` = ? AND `b` > ?)) ORDER BY `a`, `b` LIMIT 5"
    )
    expect(after.params).toEqual(["1", "1", "x'y"])
    expect(renderForDisplay({ ...base, where: [{ _tag: "Between", column: "id", low: "1", high: "9" }] })).toBe(
      "SELECT * FROM (SELECT * FROM `shop`.`or``ders`\n) AS _rivet WHERE `id` BETWEEN '1' AND '9'"
    )
  })

  it("binds cursor and window timestamps in MySQL's literal form, other values as they are", () => {
    expect(mysqlTimestampText("2026-01-01T00:01:40.000123Z")).toBe("2026-01-01 00:01:40.000123")
    expect(mysqlTimestampText("2026-01-01T00:01:40")).toBe("2026-01-01 00:01:40")
    expect(mysqlTimestampText("2026-01-01")).toBe("2026-01-01")
    expect(mysqlTimestampText("not T a timestampZ")).toBe("not T a timestampZ")
    const statement = renderStatement(
      { ...base, where: [{ _tag: "After", columns: [{ _tag: "Coalesce", columns: ["at", "b"] }], values: ["2026-01-01T00:00:00.5Z"] }] },
      (value, column) => (column === "at" ? mysqlTimestampText(value) : value)
    )
    expect(statement.text).toMatch(/WHERE COALESCE\(`at`, `b`\) > \?$/)
    expect(statement.params).toEqual(["2026-01-01 00:00:00.5"])
  })

  it("strips one trailing semicolon, not one inside a string or comment", () => {
    expect(stripTerminator("SELECT 1;  ")).toBe("SELECT 1")
    expect(stripTerminator("SELECT ';'")).toBe("SELECT ';'")
    expect(stripTerminator("SELECT 1; -- done;")).toBe("SELECT 1 -- done;")
    expect(stripTerminator("SELECT 1 # note;")).toBe("SELECT 1 # note;")
  })

  it("renders TIME as a signed ISO-8601 duration, never wrapped at 24 hours", () => {
    expect(timeToInterval("-838:59:59.000000")).toBe("-PT838H59M59S")
    expect(timeToInterval("838:59:59")).toBe("PT838H59M59S")
    expect(timeToInterval("25:00:00.500000")).toBe("PT25H0M0.5S")
    expect(timeToInterval("-00:00:00.000001")).toBe("-PT0H0M0.000001S")
    expect(timeToInterval("00:00:00")).toBe("PT0S")
  })
})
