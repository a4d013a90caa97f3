import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import { ProgressReporter, silentProgress } from "../../src/core/progress.js"
import { testPgUrl } from "../support/pg.js"

// notifications: a Slack-compatible webhook on loopback is told about a failed and a successful export; a webhook
// that answers 500 or is not there never fails an export, and its URL (the secret) never shows.

let receiver: http.Server
let status = 200
const received: Array<{ path: string; body: { text: string } }> = []
let hook: string
const dirs: Array<string> = []

beforeAll(async () => {
  receiver = http.createServer((request, response) => {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString()))
    request.on("end", () => {
      received.push({ path: request.url ?? "", body: JSON.parse(body) as { text: string } })
      response.writeHead(status).end(status === 200 ? "ok" : "no")
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/services/T000/B000/secret-token-123`
})

afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve))
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const notices: Array<string> = []
const progress = Layer.succeed(ProgressReporter, {
  ...Effect.runSync(Effect.provide(ProgressReporter, silentProgress)),
  notice: (exportName: string, message: string) => Effect.sync(() => void notices.push(`${exportName}: ${message}`))
})

const run = (env: Record<string, string>, on: ReadonlyArray<string> = ["failure", "success"]) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-notify-"))
  dirs.push(dir)
  return Effect.runPromise(
    runExportsEffect(
      {
        source: { type: "postgres", url: testPgUrl() },
        notifications: { slack: { webhook_url_env: "RIVET_TEST_HOOK", on } },
        exports: [
          { name: "fine", query: "SELECT g AS id FROM generate_series(1, 7) AS g", format: "csv", destination: { type: "local", path: "fine" } },
          { name: "broken", query: "SELECT * FROM no_such_table_for_notify", format: "csv", destination: { type: "local", path: "broken" } }
        ]
      } as never,
      { configDir: dir, env: { ...process.env, ...env }, progress }
    )
  )
}

describe("notifications", () => {
  it("post the export, status, rows and error of each export to the webhook", async () => {
    received.length = 0
    const outcomes = await run({ RIVET_TEST_HOOK: hook })
    expect(outcomes.map((outcome) => outcome._tag)).toEqual(["success", "failure"])
    expect(received.map((message) => message.path)).toEqual(["/services/T000/B000/secret-token-123", "/services/T000/B000/secret-token-123"])
    const texts = received.map((message) => message.body.text)
    expect(texts[0]).toBe("Rivet: export fine succeeded — status success, 7 rows in 1 file(s)")
    expect(texts[1]).toMatch(/^Rivet: export broken failed — status failed, 0 rows — error: .*no_such_table_for_notify/)
  })

  it("only the events asked for: failure by default", async () => {
    received.length = 0
    await run({ RIVET_TEST_HOOK: hook }, ["failure", "schema_change"])
    expect(received.map((message) => message.body.text)).toEqual([expect.stringContaining("export broken failed")])
  })

  it("a webhook that answers 500, is unreachable or unset never fails an export and never shows its URL", async () => {
    status = 500
    notices.length = 0
    try {
      expect((await run({ RIVET_TEST_HOOK: hook })).map((outcome) => outcome._tag)).toEqual(["success", "failure"])
    } finally {
      status = 200
    }
    expect(notices).toContain("fine: notification not sent: the webhook URL in RIVET_TEST_HOOK answered HTTP 500")
    notices.length = 0
    expect((await run({ RIVET_TEST_HOOK: "http://127.0.0.1:1/services/secret-token-456" })).map((outcome) => outcome._tag)).toEqual(["success", "failure"])
    expect(notices[0]).toMatch(/^fine: notification not sent: could not reach the webhook URL in RIVET_TEST_HOOK/)
    expect(notices.join("\n")).not.toContain("secret-token")
    notices.length = 0
    expect((await run({})).map((outcome) => outcome._tag)).toEqual(["success", "failure"])
    expect(notices[0]).toBe("fine: notification not sent: the environment variable RIVET_TEST_HOOK (notifications.slack.webhook_url_env) is not set")
  })
})
