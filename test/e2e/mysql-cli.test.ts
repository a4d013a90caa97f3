import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { adminConnection, noMysql, testMysqlUrl } from "../support/mysql.js"

// The CLI with a MySQL source: doctor's label, plan's statements (backticks) and estimate, secrets never shown.

const dirs: Array<string> = []
const config = (source: string, exports = "  - { name: t, table: mx_cli, destination: { type: local, path: out } }") => {
  const file = writeConfig(`source: ${source}\nexports:\n${exports}\n`)
  dirs.push(path.dirname(file))
  return file
}
const where = () => {
  const url = new URL(testMysqlUrl())
  return `${url.hostname}${url.pathname}`
}

describe.skipIf(noMysql())("mysql source through the CLI", () => {
  beforeAll(async () => {
    const admin = await adminConnection()
    await admin
      .query("DROP TABLE IF EXISTS mx_cli; CREATE TABLE mx_cli (id int PRIMARY KEY, v varchar(10)); INSERT INTO mx_cli VALUES (1, 'a'), (2, 'b'); ANALYZE TABLE mx_cli")
      .finally(() => admin.end())
  })
  afterAll(async () => {
    const admin = await adminConnection()
    await admin.query("DROP TABLE IF EXISTS mx_cli").finally(() => admin.end())
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
  })

  it("rivet doctor names the source MySQL(<host>/<db>)", async () => {
    const result = await runCli(["doctor", "-c", config(`{ type: mysql, url_env: MY_URL }`)], { env: { MY_URL: testMysqlUrl() } })
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toContain(`[OK]  Source MySQL(${where()})`)
    expect(result.stdout).toContain("[OK]  Export t")
  })

  it("rivet plan shows the statements MySQL runs and the catalog's row estimate", async () => {
    const file = config(
      `{ type: mysql, url: "${testMysqlUrl()}" }`,
      "  - { name: t, table: mx_cli, mode: chunked, chunk_column: id, chunk_size: 1, destination: { type: local, path: out } }"
    )
    const result = await runCli(["plan", "-c", file, "--json"])
    expect(result.code, result.stderr).toBe(0)
    const plans = JSON.parse(result.stdout) as unknown
    const plan = (Array.isArray(plans) ? plans[0] : (plans as { exports: Array<unknown> }).exports[0]) as {
      statements: Array<string>
      estimated_rows: number
    }
    expect(plan.statements).toEqual([
      "SELECT * FROM (SELECT * FROM `mx_cli`\n) AS _rivet WHERE `id` BETWEEN '1' AND '1'",
      "SELECT * FROM (SELECT * FROM `mx_cli`\n) AS _rivet WHERE `id` BETWEEN '2' AND '2'"
    ])
    expect(plan.estimated_rows).toBe(2)
  })

  it("a wrong password fails with the password masked, and a missing url_env names the variable", async () => {
    const url = new URL(testMysqlUrl())
    url.username = "rivet_no_such_user"
    url.password = "s3cr3t-Pa55"
    const wrong = await runCli(["run", "-c", config(`{ type: mysql, url: "${url.toString()}" }`)])
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toMatch(/MySQL error 1045|Access denied/)
    expect(wrong.stderr).toContain("rivet_no_such_user:***@")
    expect(wrong.stderr + wrong.stdout).not.toContain("s3cr3t-Pa55")

    const unset = await runCli(["run", "-c", config("{ type: mysql, url_env: RIVET_NO_SUCH_VARIABLE }")])
    expect(unset.code).toBe(1)
    expect(unset.stderr).toMatch(/environment variable RIVET_NO_SUCH_VARIABLE \(source.url_env\) is not set/)
  })

  it("a connection given by its parts (host, port, user, database, password_env) exports; a wrong password is never shown", async () => {
    const url = new URL(testMysqlUrl())
    const parts = `type: mysql, host: "${url.hostname}", port: ${url.port || "3306"}, database: "${url.pathname.slice(1)}"`
    // The test server's user may have no password (root on a developer machine): then none is given.
    const password = url.password === "" ? "" : ", password_env: MY_PASSWORD"
    const file = config(`{ ${parts}, user: "${decodeURIComponent(url.username)}"${password} }`)
    const result = await runCli(["run", "-c", file], { env: { MY_PASSWORD: decodeURIComponent(url.password) } })
    expect(result.code, result.stderr).toBe(0)
    expect(fs.readdirSync(path.join(path.dirname(file), "out")).some((name) => name.endsWith(".parquet"))).toBe(true)
    const wrong = await runCli(["run", "-c", config(`{ ${parts}, user: rivet_no_such_user, password_env: MY_PASSWORD }`)], { env: { MY_PASSWORD: "s3cr3t-Pa55" } })
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toMatch(/MySQL error 1045|Access denied/)
    expect(wrong.stderr + wrong.stdout).not.toContain("s3cr3t-Pa55")
  })
})
