import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"
import { adminConnection, noMysql, testMysqlUrl } from "../support/mysql.js"
import { readManifest } from "../support/output.js"

// `rivet init` against MySQL: the generated config checks and runs as written (geometry through its bytes override).

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-mysql-init-"))

describe.skipIf(noMysql())("rivet init with a MySQL source", () => {
  beforeAll(async () => {
    const admin = await adminConnection()
    await admin
      .query(`DROP TABLE IF EXISTS mi_orders, mi_places;
        CREATE TABLE mi_orders (id bigint unsigned PRIMARY KEY, total decimal(10,2), updated_at timestamp(6) NULL);
        INSERT INTO mi_orders VALUES (1, 9.99, '2026-01-01 00:00:00'), (2, 0.01, NULL);
        CREATE TABLE mi_places (id int PRIMARY KEY, name varchar(20), at point);
        INSERT INTO mi_places VALUES (1, 'origin', ST_GeomFromText('POINT(0 0)'));`)
      .finally(() => admin.end())
  })
  afterAll(async () => {
    const admin = await adminConnection()
    await admin.query("DROP TABLE IF EXISTS mi_orders, mi_places").finally(() => admin.end())
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("writes a config that checks and runs: one export per table, geometry as its stored bytes", async () => {
    const file = path.join(dir, "rivet.yaml")
    const env = { MY_URL: testMysqlUrl() }
    const init = await runCli(["init", "--source-env", "MY_URL", "--table", "mi_orders", "--table", "mi_places", "-o", file], { env })
    expect(init.code, init.stderr).toBe(0)
    const text = fs.readFileSync(file, "utf8")
    expect(text).toContain("type: mysql")
    expect(text).toContain("url_env: MY_URL")
    expect(text).toMatch(/- name: mi_orders\n\s+table: mi_orders\n/)
    expect(text).toMatch(/REVIEW: at is geometry/)
    expect(text).toContain("SELECT `id`, `name` FROM")
    expect(text).toMatch(/at: \{ type: bytes \}|at:\n\s+type: bytes/)
    expect(text).toMatch(/updated_at/)

    const check = await runCli(["check", "-c", file], { env })
    expect(check.code, check.stderr).toBe(0)
    const run = await runCli(["run", "-c", file], { env })
    expect(run.code, run.stderr).toBe(0)
    expect(readManifest(path.join(dir, "output/mi_orders")).row_count).toBe(2)
    const places = readManifest(path.join(dir, "output/mi_places"))
    expect(places.row_count).toBe(1)
    expect(places.schema.find((column: { name: string }) => column.name === "at")).toMatchObject({ type: "bytes" })
  })
})
