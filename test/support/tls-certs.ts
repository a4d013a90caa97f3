import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** Throw-away certificates for TLS tests, made with openssl: a CA, and certificates it signs. */

export const hasOpenssl = spawnSync("openssl", ["version"]).status === 0

const openssl = (args: ReadonlyArray<string>, cwd: string) => {
  const result = spawnSync("openssl", args, { cwd, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${result.stderr}`)
}

/** A CA (`name`.crt/.key) in `dir`. */
export const makeCa = (dir: string, name: string) =>
  openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", `/CN=${name}`, "-keyout", `${name}.key`, "-out", `${name}.crt`],
    dir
  )

/** A certificate `name`.crt/.key signed by the CA `ca`, with the given subjectAltName; `days` 0: expired at once. */
export const makeCert = (dir: string, name: string, ca: string, cn: string, san?: string, days = 2) => {
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${cn}`, "-keyout", `${name}.key`, "-out", `${name}.csr`], dir)
  const ext = path.join(dir, `${name}.ext`)
  fs.writeFileSync(ext, san === undefined ? "basicConstraints=CA:FALSE\n" : `basicConstraints=CA:FALSE\nsubjectAltName=${san}\n`)
  openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", String(days), "-extfile", ext, "-out", `${name}.crt`],
    dir
  )
}

let configs = 0
/** A config in a directory of its own under `root`, exporting `query` of `source` as CSV to `out`. */
export const tlsExportConfig = (root: string, source: Record<string, unknown>, query: string): string => {
  const dir = path.join(root, `config-${++configs}`)
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, "rivet.yaml")
  const document = { source, exports: [{ name: "tls", query, format: "csv", destination: { type: "local", path: "out" } }] }
  fs.writeFileSync(file, JSON.stringify(document, null, 2))
  return file
}

/** The fields of the one row the export of `tlsExportConfig` wrote. */
export const exportedRow = (file: string): ReadonlyArray<string> => {
  const dir = path.join(path.dirname(file), "out")
  const csv = (fs.readdirSync(dir, { recursive: true }) as Array<string>).filter((name) => name.endsWith(".csv"))
  if (csv.length !== 1) throw new Error(`expected one CSV part in ${dir}, found ${csv.length}`)
  const [, row] = fs.readFileSync(path.join(dir, csv[0]!), "utf8").trim().split("\n")
  return row!.split(",")
}

/**
 * A temporary directory (real path) with `certs/`: CAs `ca` and `wrong-ca`, `server` (for localhost and 127.0.0.1)
 * and `client` (CN rivet-client) signed by `ca`.
 */
export const makeTestCertificates = (prefix: string): { readonly root: string; readonly certs: string } => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))
  const certs = path.join(root, "certs")
  fs.mkdirSync(certs)
  makeCa(certs, "ca")
  makeCa(certs, "wrong-ca")
  makeCert(certs, "server", "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
  makeCert(certs, "client", "ca", "rivet-client")
  return { root, certs }
}
