import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { describeCause } from "../../core/errors.js"
import { Manifest, sha256Hex } from "../../core/manifest.js"
import type { MarkerKeys } from "../../core/naming.js"
import { type Finding, finding, formatCount } from "./findings.js"
import { partitionMismatch } from "../../engine/partition/check.js"

/** The fields of `manifest.json` that validation relies on; others are ignored (`run_id` is absent in old ones). */
const StoredManifest = Schema.Struct({
  ...Manifest.pick("manifest_version", "export_name", "started_at", "format", "row_count", "part_count", "parts").fields,
  run_id: Schema.optional(Schema.String)
})

/** A manifest as validation reads it. */
export type StoredManifest = typeof StoredManifest.Type

const decodeManifest = Schema.decodeUnknownEither(StoredManifest, { errors: "first" })

/** Why the bytes are not a manifest this Rivet can check, or the manifest. */
const parseManifest = (bytes: Uint8Array): Either.Either<StoredManifest, string> => {
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  } catch (cause) {
    return Either.left(`not valid JSON (${describeCause(cause)})`)
  }
  if (typeof value === "object" && value !== null && "manifest_version" in value && value.manifest_version !== 1) {
    return Either.left(
      `manifest_version ${JSON.stringify(value.manifest_version)} is not one this Rivet reads (it reads version 1)`
    )
  }
  return Either.mapLeft(decodeManifest(value), (error) => {
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
    const where = (issue?.path ?? [])
      .map((segment) => (typeof segment === "number" ? `[${segment}]` : `.${String(segment)}`))
      .join("")
      .replace(/^\./, "")
    return `unexpected content${where === "" ? "" : ` at ${where}`}: ${issue?.message ?? "not a manifest"}`
  })
}

/** The export a manifest's bytes belong to, or undefined when they are not a manifest. */
export const manifestExportName = (bytes: Uint8Array): string | undefined => {
  const parsed = parseManifest(bytes)
  return Either.isRight(parsed) ? parsed.right.export_name : undefined
}

/**
 * Checks a manifest (`key`: the latest one or a kept copy): that it decodes, belongs to `exportName`, and that its
 * totals agree with its parts (a manifest edited by hand rarely keeps them consistent). Returns the manifest when
 * its parts can be checked.
 */
export const checkManifest = (
  bytes: Uint8Array,
  key: string,
  exportName: string,
  strict: boolean
): { readonly manifest?: StoredManifest; readonly findings: ReadonlyArray<Finding> } => {
  const parsed = parseManifest(bytes)
  if (Either.isLeft(parsed)) {
    return { findings: [finding("MANIFEST_INVALID", key, parsed.left, strict)] }
  }
  const manifest = parsed.right
  const findings: Array<Finding> = []
  const invalid = (message: string) => findings.push(finding("MANIFEST_INVALID", key, message, strict))
  if (manifest.export_name !== exportName) {
    invalid(
      `belongs to export '${manifest.export_name}', not '${exportName}': does another config write to this destination?`
    )
  }
  const rows = manifest.parts.reduce((sum, part) => sum + part.rows, 0)
  if (manifest.row_count !== rows) {
    invalid(
      `row_count is ${formatCount(manifest.row_count)} but its parts hold ${formatCount(rows)} rows (tampered manifest)`
    )
  }
  if (manifest.part_count !== manifest.parts.length) {
    invalid(`part_count is ${manifest.part_count} but it lists ${manifest.parts.length} parts (tampered manifest)`)
  }
  const seen = new Set<string>()
  for (const part of manifest.parts) {
    if (seen.has(part.path)) invalid(`lists ${part.path} twice (tampered manifest)`)
    seen.add(part.path)
    const mismatch = partitionMismatch(part)
    if (mismatch !== undefined) invalid(mismatch)
  }
  return { manifest, findings }
}

const SUCCESS_BODY = /^sha256:([0-9a-f]{64})\n$/

/** `_SUCCESS` must hold `sha256:<hex of the manifest bytes>\n`. */
export const checkSuccessMarker = (
  marker: Uint8Array,
  manifestBytes: Uint8Array,
  keys: MarkerKeys,
  strict: boolean
): ReadonlyArray<Finding> => {
  const body = new TextDecoder().decode(marker)
  const match = SUCCESS_BODY.exec(body)
  if (match === null) {
    const shown = JSON.stringify(body.length > 80 ? `${body.slice(0, 80)}…` : body)
    return [finding("SUCCESS_MALFORMED", keys.success, `holds ${shown}, expected sha256:<hex of ${keys.manifest}> and a newline`, strict)]
  }
  const actual = sha256Hex(manifestBytes)
  if (match[1] === actual) return []
  return [
    finding(
      "SUCCESS_STALE",
      keys.success,
      `records sha256:${match[1]} but ${keys.manifest} hashes to sha256:${actual}: the manifest changed after the run ` +
        "that wrote it finished, or a later run did not finish",
      strict
    )
  ]
}
