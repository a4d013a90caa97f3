import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createServer } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliResult, runCli } from "../support/cli.js"
import { filesUnder } from "../support/output.js"
import { dropLoginRole, loginRoleName, testPgUrl } from "../support/pg.js"
import { startS3Server, type S3TestServer } from "../support/s3/server.js"
import { isolateAwsEnv, noAmbientCredentials, s3Destination } from "./s3-support.js"

// Canary secrets, fresh per run, in the three places a user keeps them: the source URL's password, an S3 secret
// in an env var named by secret_key_env, and an aws_profile's secret. Every command and error path below scans its
// stdout+stderr, and the last test every file Rivet left (config dirs, cwd, HOME, state DB, bucket objects).
const HEX = randomBytes(6).toString("hex")
/** `@`, `:` and `/` must be percent-encoded in the URL: both the raw and the encoded form are secret. */
const PG_PASSWORD = `CANARYpw${HEX}@:/`
const S3_SECRET = `CANARYs3${HEX}/+x`
const PROFILE_SECRET = `CANARYprof${HEX}/+y`

const SCHEMA = "h6_secrets"
const BUCKET = "rivet-h6-secrets"
const ROLE = loginRoleName("h6_canary")
const ENV_KEY_ID = "AKIAH6CANARYENV00001"
const PROFILE_KEY_ID = "AKIAH6CANARYPROF0001"
/** Known to the server with another secret: signing with S3_SECRET gives SignatureDoesNotMatch. */
const SIGNATURE_KEY_ID = "AKIAH6SIGNATURE00001"
/** Not known to the server: InvalidAccessKeyId. */
const UNKNOWN_KEY_ID = "AKIAH6UNKNOWNKEY0001"

/** Each form a secret could leak in: raw, URL-encoded, base64 (at the three byte alignments, and base64url). */
const formsOf = (name: string, secret: string): ReadonlyArray<readonly [string, string]> => {
  const forms: Array<readonly [string, string]> = [
    [name, secret],
    [`${name} (URL-encoded)`, encodeURIComponent(secret)]
  ]
  for (const pad of [0, 1, 2]) {
    const base64 = Buffer.concat([Buffer.alloc(pad), Buffer.from(secret)]).toString("base64")
    // Only the characters that depend on the secret's bytes alone, whatever surrounds it.
    const stable = base64.slice([0, 2, 3][pad], Math.floor((pad + secret.length) / 3) * 4)
    forms.push([`${name} (base64)`, stable], [`${name} (base64url)`, stable.replaceAll("+", "-").replaceAll("/", "_")])
  }
  return forms
}

const NEEDLES: ReadonlyArray<readonly [string, string]> = [
  // The random part alone catches any fragment or re-quoting of any canary (JSON-escaped, partly masked…).
  ["canary random part", HEX],
  ...formsOf("PostgreSQL password", PG_PASSWORD),
  ...formsOf("S3 secret (env)", S3_SECRET),
  ...formsOf("S3 secret (profile)", PROFILE_SECRET)
]

/** The canary forms found in `text` (a latin1 view of bytes works too: the needles are ASCII). */
const leaksIn = (text: string): ReadonlyArray<string> =>
  NEEDLES.filter(([, needle]) => text.includes(needle)).map(([name]) => name)

let sql: postgres.Sql
let server: S3TestServer
let root: string
/** Files the test wrote itself with a canary in them (configs, the profile file): excluded from the final scan. */
const ownFiles = new Set<string>()
let baseEnv: Record<string, string>
let pgUrlParts: URL
let closedPort: number

const hostPort = (port?: number) => `${pgUrlParts.hostname}:${port ?? (pgUrlParts.port || "5432")}`

/** `postgres://h6_canary:<encoded canary>@host:port/<database>` on the test server; `password` replaces the canary. */
const canaryUrl = (options: { port?: number; database?: string; password?: string } = {}) => {
  const password = options.password ?? encodeURIComponent(PG_PASSWORD)
  const database = options.database ?? pgUrlParts.pathname.slice(1)
  return `${pgUrlParts.protocol}//${ROLE}:${password}@${hostPort(options.port)}/${database}${pgUrlParts.search}`
}

/** The masked form Rivet prints (src/lib/postgres-url.ts `maskUrl`). */
const maskedUrl = (options: { port?: number } = {}) =>
  `${pgUrlParts.protocol}//${ROLE}:***@${hostPort(options.port)}${pgUrlParts.pathname}${pgUrlParts.search}`

const writeOwn = (relative: string, text: string): string => {
  const file = path.join(root, relative)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
  ownFiles.add(file)
  return file
}

/** A config (JSON is YAML) in its own directory, so each keeps its own state DB. */
const config = (dir: string, document: Readonly<Record<string, unknown>>): string =>
  writeOwn(`${dir}/rivet.yaml`, JSON.stringify(document, null, 2))

const source = (url: string = canaryUrl()) => ({ type: "postgres", url, schema: SCHEMA })

/** Runs the CLI in `root` (cwd and HOME, so anything it writes lands where the last test scans). */
const cli = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<CliResult> => {
  const result = await runCli(args, { cwd: root, env: { ...baseEnv, ...env } })
  const output = `${result.stdout}\n${result.stderr}`
  expect(leaksIn(output), `rivet ${args.join(" ")} leaked a canary:\n${output}`).toEqual([])
  return result
}

beforeAll(async () => {
  isolateAwsEnv()
  pgUrlParts = new URL(testPgUrl())
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-h6-secrets-")))
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  // The server may check passwords (RIVET_TEST_PG_URL): the role really has the canary password.
  await sql.unsafe(`
    DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE;
    CREATE SCHEMA ${SCHEMA};
    CREATE TABLE ${SCHEMA}.src (id int PRIMARY KEY, label text NOT NULL);
    INSERT INTO ${SCHEMA}.src SELECT i, 'row ' || i FROM generate_series(1, 50) AS i;
    DO $$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${ROLE}') THEN CREATE ROLE ${ROLE}; END IF;
    END $$;
    ALTER ROLE ${ROLE} LOGIN PASSWORD '${PG_PASSWORD}';
    GRANT USAGE ON SCHEMA ${SCHEMA} TO ${ROLE};
    GRANT SELECT ON ALL TABLES IN SCHEMA ${SCHEMA} TO ${ROLE};
  `)
  server = await startS3Server({
    extraCredentials: [
      { accessKeyId: ENV_KEY_ID, secretAccessKey: S3_SECRET },
      { accessKeyId: PROFILE_KEY_ID, secretAccessKey: PROFILE_SECRET },
      { accessKeyId: SIGNATURE_KEY_ID, secretAccessKey: randomBytes(20).toString("base64") }
    ]
  })
  await server.createBucket(BUCKET)
  const listener = createServer()
  closedPort = await new Promise<number>((resolve) =>
    listener.listen(0, "127.0.0.1", () => {
      const { port } = listener.address() as { port: number }
      listener.close(() => resolve(port))
    })
  )
  const profiles = writeOwn(
    "aws/credentials",
    [
      "[h6]",
      `aws_access_key_id = ${PROFILE_KEY_ID}`,
      `aws_secret_access_key = ${PROFILE_SECRET}`,
      "[h6_unknown]",
      `aws_access_key_id = ${UNKNOWN_KEY_ID}`,
      `aws_secret_access_key = ${PROFILE_SECRET}`,
      ""
    ].join("\n")
  )
  baseEnv = {
    ...noAmbientCredentials(),
    AWS_SHARED_CREDENTIALS_FILE: profiles,
    HOME: root,
    H6_S3_KEY: ENV_KEY_ID,
    H6_S3_SECRET: S3_SECRET,
    H6_SIGNATURE_KEY: SIGNATURE_KEY_ID,
    H6_URL: canaryUrl(),
    H6_PG_PASSWORD: encodeURIComponent(PG_PASSWORD)
  }
}, 120_000)

afterAll(async () => {
  if (root) fs.rmSync(root, { recursive: true, force: true })
  await server?.stop()
  await sql?.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
  if (sql) await dropLoginRole(sql, ROLE)
  await sql?.end()
})

/** An export of `src` to the bucket under `prefix`, signed with `credentials` (destination keys). */
const s3Export = (name: string, format: string, prefix: string, credentials: Readonly<Record<string, string>>) => ({
  name,
  table: "src",
  format,
  destination: s3Destination(server, BUCKET, { prefix, ...credentials })
})

const envKeys = (keyVariable: string, secretVariable: string) => ({ access_key_env: keyVariable, secret_key_env: secretVariable })

const s3Exports = () => [
  s3Export("s3_env", "parquet", "env/", envKeys("H6_S3_KEY", "H6_S3_SECRET")),
  s3Export("s3_profile", "ndjson", "profile/", { aws_profile: "h6" })
]

const localExport = { name: "local", table: "src", format: "csv", destination: { type: "local", path: "out" } }

/** stderr's `--json` events. */
const events = (stderr: string): Array<Record<string, unknown>> =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

const occurrences = (text: string, part: string) => text.split(part).length - 1

describe("successful commands print no secret", () => {
  let ok: string
  beforeAll(() => {
    ok = config("ok", { source: source(), exports: [localExport, ...s3Exports()] })
  })

  it("run, run --verbose and run --json (local, S3 with env keys, S3 with a profile)", async () => {
    const plain = await cli(["run", "-c", ok])
    expect(plain.code).toBe(0)
    expect(occurrences(plain.stderr, "status:     success")).toBe(3)
    const verbose = await cli(["run", "-c", ok, "--verbose"])
    expect(verbose.code).toBe(0)
    expect(verbose.stderr).toContain("statements (s3_profile):")
    const json = await cli(["run", "-c", ok, "--json"])
    expect(json.code).toBe(0)
    const finished = events(json.stderr).filter((event) => event["event"] === "export_finished")
    expect(finished.map((event) => [event["export"], event["status"]])).toEqual([
      ["local", "success"],
      ["s3_env", "success"],
      ["s3_profile", "success"]
    ])
  })

  it("plan, plan --json and its -o file show the source as the masked URL", async () => {
    const text = await cli(["plan", "-c", ok])
    expect(text.code).toBe(0)
    expect(occurrences(text.stdout, `  source:         ${maskedUrl()}\n`)).toBe(3)
    const file = path.join(root, "ok", "plan.json")
    const json = await cli(["plan", "-c", ok, "--json", "-o", file])
    expect(json.code).toBe(0)
    for (const document of [json.stdout, fs.readFileSync(file, "utf8")]) {
      const plan = JSON.parse(document) as { exports: Array<{ source: string }> }
      expect(plan.exports.map((planned) => planned.source)).toEqual([maskedUrl(), maskedUrl(), maskedUrl()])
    }
  })

  it("check, doctor, validate and state show --json", async () => {
    const [check, doctor, validate, state] = await Promise.all([
      cli(["check", "-c", ok]),
      cli(["doctor", "-c", ok]),
      cli(["validate", "-c", ok]),
      cli(["state", "show", "-c", ok, "--json"])
    ])
    expect(check.stdout).toContain("3 export(s) valid")
    expect(check.code).toBe(0)
    expect(doctor.stdout).toContain(`[OK]  Destination S3(${BUCKET})`)
    expect(doctor.stdout).toContain("All checks passed.")
    expect(doctor.code).toBe(0)
    expect(validate.stdout).toContain("3 exports validated: 3 ok")
    expect(validate.code).toBe(0)
    const shown = JSON.parse(state.stdout) as Array<{ export_name: string; last_run: { status: string } }>
    expect(shown.map((entry) => [entry.export_name, entry.last_run.status]).sort()).toEqual([
      ["local", "success"],
      ["s3_env", "success"],
      ["s3_profile", "success"]
    ])
  })

  it("init --source-env writes url_env, and a URL passed as the variable's name is refused without echoing it", async () => {
    const file = path.join(root, "init", "rivet.yaml")
    fs.mkdirSync(path.dirname(file), { recursive: true })
    const [init, misused] = await Promise.all([
      cli(["init", "--source-env", "H6_URL", "--schema", SCHEMA, "-o", file]),
      cli(["init", "--source-env", canaryUrl(), "--schema", SCHEMA])
    ])
    expect(init.code).toBe(0)
    expect(fs.readFileSync(file, "utf8")).toContain("url_env: H6_URL")
    expect(misused.stderr).toContain("Error: --source-env: must be the NAME of an environment variable")
    expect(misused.code).toBe(1)
  })
})

describe("error paths print no secret", () => {
  it("an unreachable source (closed port), password from ${VAR}: run --verbose and doctor name it by the masked URL", async () => {
    const url = canaryUrl({ port: closedPort, password: "${H6_PG_PASSWORD}" })
    const down = config("down", { source: source(url), exports: [localExport] })
    const [run, doctor] = await Promise.all([cli(["run", "-c", down, "--verbose"]), cli(["doctor", "-c", down])])
    expect(run.stderr).toContain(`Error: cannot reach PostgreSQL at ${maskedUrl({ port: closedPort })} while connecting`)
    expect(run.code).toBe(2)
    expect(doctor.stdout).toContain(`[FAIL] Source Postgres: cannot reach PostgreSQL at ${maskedUrl({ port: closedPort })}`)
    expect(doctor.code).toBe(2)
  })

  it("an unknown database, with --json", async () => {
    const missing = config("no-db", { source: source(canaryUrl({ database: "h6_no_such_db" })), exports: [localExport] })
    const run = await cli(["run", "-c", missing, "--json"])
    expect(events(run.stderr)).toContainEqual(
      expect.objectContaining({ event: "error", kind: "SourceError", message: expect.stringContaining("3D000") })
    )
    expect(run.code).toBe(1)
  })

  it("a query error and S3 SignatureDoesNotMatch, AccessDenied, unknown profile key, unset secret variable", async () => {
    const failing = config("fail", {
      source: source(),
      exports: [
        { name: "bad_sql", query: "SELEC id FROM src", format: "csv", destination: { type: "local", path: "out" } },
        s3Export("wrong_secret", "csv", "wrong/", envKeys("H6_SIGNATURE_KEY", "H6_S3_SECRET")),
        s3Export("denied", "csv", "denied/", envKeys("H6_S3_KEY", "H6_S3_SECRET")),
        s3Export("unknown_key", "csv", "unknown/", { aws_profile: "h6_unknown" }),
        s3Export("unset_secret", "csv", "unset/", envKeys("H6_S3_KEY", "H6_UNSET_SECRET"))
      ]
    })
    server.faults.add({ keyPattern: /^denied\//, respond: { s3Error: "AccessDenied" } })
    try {
      const expected = [
        "42601",
        "SignatureDoesNotMatch",
        "AccessDenied",
        "InvalidAccessKeyId",
        "environment variable 'H6_UNSET_SECRET' named by destination.secret_key_env is not set"
      ]
      const [verbose, doctor] = await Promise.all([cli(["run", "-c", failing, "--verbose"]), cli(["doctor", "-c", failing])])
      for (const error of expected) expect(verbose.stderr).toContain(error)
      expect(verbose.code).toBe(1)
      for (const error of expected.slice(1)) expect(doctor.stdout).toContain(error)
      expect(doctor.code).toBe(1)
      const json = await cli(["run", "-c", failing, "--json"])
      const errors = events(json.stderr).filter((event) => event["event"] === "error")
      expect(errors.map((event) => event["message"])).toEqual(expected.map((error) => expect.stringContaining(error)))
      // Failures are recorded in the state DB, which the last test scans.
      const state = await cli(["state", "show", "-c", failing, "--json"])
      const shown = JSON.parse(state.stdout) as Array<{ export_name: string; last_run: { status: string; error: string | null } }>
      expect(shown.find((entry) => entry.export_name === "wrong_secret")?.last_run).toMatchObject({
        status: "failed",
        error: expect.stringContaining("SignatureDoesNotMatch")
      })
    } finally {
      server.faults.clear()
    }
  })

  it("config errors in a file holding the canary URL: typo key, non-string url, URL in url_env, unset ${VAR}, plugin, YAML", async () => {
    const decoding = config("config-decode", {
      source: { type: "postgres", url: [canaryUrl()], url_env: canaryUrl(), shema: SCHEMA },
      exports: [localExport]
    })
    const unsetQuery = { ...localExport, table: undefined, query: "SELECT ${H6_UNSET_VAR}" }
    const unset = config("config-unset", { source: source(), exports: [unsetQuery] })
    const plugin = config("config-plugin", { plugins: ["./h6-no-such-plugin.mjs"], source: source(), exports: [localExport] })
    const yaml = writeOwn("config-yaml/rivet.yaml", `source:\n  type: postgres\n  url: ${canaryUrl()}: x: {\nexports: []\n`)
    const [decoded, interpolated, loaded, parsed] = await Promise.all([
      cli(["run", "-c", decoding, "--json"]),
      cli(["run", "-c", unset]),
      cli(["check", "-c", plugin]),
      cli(["plan", "-c", yaml])
    ])
    expect(events(decoded.stderr).map((event) => String(event["path"]).replace(/ \(line \d+\)$/, "")).sort()).toEqual([
      "source.shema",
      "source.url",
      "source.url_env"
    ])
    expect(interpolated.stderr).toContain("environment variable 'H6_UNSET_VAR' is not set")
    expect(loaded.stderr).toContain("cannot load plugin './h6-no-such-plugin.mjs'")
    expect(parsed.stderr).toContain("invalid YAML: line 3")
    for (const result of [decoded, interpolated, loaded, parsed]) expect(result.code).toBe(1)
  })
})

describe("nothing Rivet wrote holds a secret", () => {
  it("files under the config dirs, cwd and HOME (state DBs, plan.json, init output, data) and every S3 object", async () => {
    const written = filesUnder(root).map((relative) => path.join(root, relative)).filter((file) => !ownFiles.has(file))
    const names = written.map((file) => path.relative(root, file))
    // The scan must cover what the commands wrote: state databases (a failed run's error included), plan, init, data.
    const expectedFiles = ["ok/.rivet_state.db", "fail/.rivet_state.db", "ok/plan.json", "init/rivet.yaml", "ok/out/manifest.json"]
    expect(names).toEqual(expect.arrayContaining(expectedFiles))
    const failState = ["", "-wal"].map((suffix) => path.join(root, `fail/.rivet_state.db${suffix}`)).filter(fs.existsSync)
    expect(failState.map((file) => fs.readFileSync(file, "latin1")).join("")).toContain("SignatureDoesNotMatch")
    for (const file of written) {
      expect(leaksIn(path.relative(root, file)), file).toEqual([])
      expect(leaksIn(fs.readFileSync(file, "latin1")), file).toEqual([])
    }
    const objects = await server.listObjects(BUCKET)
    const keys = objects.map((object) => object.key)
    expect(keys).toEqual(expect.arrayContaining(["env/manifest.json", "env/_SUCCESS", "profile/manifest.json"]))
    for (const object of objects) {
      expect(leaksIn(object.key), object.key).toEqual([])
      const body = Buffer.from(await server.getObject(BUCKET, object.key)).toString("latin1")
      expect(leaksIn(body), object.key).toEqual([])
    }
  })
})
