import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { parseAllDocuments, parse } from "yaml"
import { loadConfig } from "../../src/api.js"

// The distributed-run recipes (docs/distributed.md). No Kubernetes API server is at hand (`kubectl apply
// --dry-run=client` needs one for discovery) and the maintained schema packages need Node 22, so the Job is checked
// field by field for what the recipe relies on; the config it mounts is decoded by Rivet itself.

const EXAMPLES = path.resolve(import.meta.dirname, "../../examples")

type Json = Record<string, unknown>
const at = (value: unknown, ...keys: ReadonlyArray<string | number>): unknown =>
  keys.reduce<unknown>((node, key) => (node === null || typeof node !== "object" ? undefined : (node as Json)[key]), value)

describe("examples/kubernetes: an Indexed Job of rivet workers", () => {
  const documents = parseAllDocuments(fs.readFileSync(path.join(EXAMPLES, "kubernetes/rivet-job.yaml"), "utf8"))
  const objects = documents.map((document) => {
    expect(document.errors).toEqual([])
    return document.toJSON() as Json
  })
  const job = objects.find((object) => object["kind"] === "Job")
  const configMap = objects.find((object) => object["kind"] === "ConfigMap")

  it("is an Indexed batch/v1 Job whose pods each run `rivet run --worker` and are never restarted in place", () => {
    expect(job).toMatchObject({ apiVersion: "batch/v1", metadata: { name: expect.any(String) } })
    const spec = at(job, "spec") as Json
    expect(spec["completionMode"]).toBe("Indexed")
    expect(spec["completions"]).toBe(spec["parallelism"])
    expect(at(spec, "template", "spec", "restartPolicy")).toBe("Never")
    const container = at(spec, "template", "spec", "containers", 0) as Json
    const command = [...(container["command"] as Array<string>), ...(container["args"] as Array<string>)].join(" ")
    expect(command).toContain("rivet run -c /etc/rivet/export.yaml --worker")
    // The completion index is for the logs only: it is never what picks the work.
    expect(command.match(/JOB_COMPLETION_INDEX/g)).toHaveLength(1)
    expect(command).toMatch(/echo "worker \$JOB_COMPLETION_INDEX/)
  })

  it("names the run by the Job's uid and takes the state URL and S3 credentials from Secrets", () => {
    const env = at(job, "spec", "template", "spec", "containers", 0, "env") as Array<Json>
    const byName = new Map(env.map((entry) => [entry["name"], entry]))
    expect(at(byName.get("RIVET_RUN_ID"), "valueFrom", "fieldRef", "fieldPath")).toBe(
      "metadata.labels['batch.kubernetes.io/controller-uid']"
    )
    for (const name of ["RIVET_STATE_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "SOURCE_URL"]) {
      expect(at(byName.get(name), "valueFrom", "secretKeyRef", "name"), name).toEqual(expect.any(String))
      expect(byName.get(name)?.["value"], name).toBeUndefined()
    }
    const mount = at(job, "spec", "template", "spec", "containers", 0, "volumeMounts", 0) as Json
    const volume = at(job, "spec", "template", "spec", "volumes", 0) as Json
    expect(mount).toMatchObject({ name: volume["name"], mountPath: "/etc/rivet" })
    expect(at(volume, "configMap", "name")).toBe(at(configMap, "metadata", "name"))
  })

  it("mounts a config Rivet accepts: a chunked export whose parallel caps the source load across pods", async () => {
    const yaml = at(configMap, "data", "export.yaml") as string
    const config = await Effect.runPromise(
      loadConfig(parse(yaml) as never, { env: { SOURCE_URL: "postgres://rivet@db.internal/orders" } })
    )
    expect(config.exports[0]?.mode.settings).toMatchObject({ kind: "chunked", parallel: 8 })
    expect(config.exports[0]?.destination.plugin.type).toBe("s3")
  })
})

describe("examples/airflow: a DAG mapping N rivet workers", () => {
  const dag = path.join(EXAMPLES, "airflow/rivet_distributed_dag.py")

  it.skipIf(spawnSync("python3", ["--version"]).status !== 0)("compiles with python3 -m py_compile", () => {
    const cfile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-dag-")), "dag.pyc")
    const compiled = spawnSync("python3", ["-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)", dag, cfile], {
      encoding: "utf8"
    })
    fs.rmSync(path.dirname(cfile), { recursive: true, force: true })
    expect(compiled.status, compiled.stderr).toBe(0)
  })

  it("maps one `rivet run --worker` task per worker, all naming the DAG run", () => {
    const source = fs.readFileSync(dag, "utf8")
    expect(source).toMatch(/\.expand\(env=worker_envs\(\)\)/)
    expect(source).toContain('"RIVET_RUN_ID": context["run_id"]')
    expect(source).toContain("rivet run -c /opt/rivet/export.yaml --worker")
    expect(source).toContain("append_env=True")
  })
})
