/**
 * The Rust rivet's `tuning:` blocks (`source.tuning`, `exports[].tuning`, merged field by field, the export's
 * winning) and `source.environment`, mapped onto Rivet's settings. What has an equivalent becomes that setting;
 * every other sub-key is reported as a warning naming it — never accepted in silence.
 *
 * | Rust key | Rivet |
 * |---|---|
 * | `profile` / `environment` (local → fast, replica and production → balanced) | the profile's `batch_size`, `statement_timeout_s`, `lock_timeout_s` below |
 * | `batch_size` | the export's `batch_size` (rows per batch) |
 * | `statement_timeout_s`, `lock_timeout_s` | the source's keys of the same name (from `source.tuning` or the profile; per export: a warning) |
 * | anything else | a warning: Rivet sizes batches by rows and a fixed byte cap, retries by its own policy |
 */

import type { ConfigNotice } from "./advisory.js"

export const PROFILES = {
  fast: { batch_size: 50_000, statement_timeout_s: 0, lock_timeout_s: 0 },
  balanced: { batch_size: 10_000, statement_timeout_s: 300, lock_timeout_s: 30 },
  safe: { batch_size: 2_000, statement_timeout_s: 120, lock_timeout_s: 10 }
} as const

type Profile = keyof typeof PROFILES

const ENVIRONMENT_PROFILES: Readonly<Record<string, Profile>> = { local: "fast", replica: "balanced", production: "balanced" }

/** Sub-keys with no equivalent, and why. */
const NO_EQUIVALENT: Readonly<Record<string, string>> = {
  throttle_ms: "Rivet does not pause between batches",
  batch_size_memory_mb: "Rivet caps each batch at a fixed 4–8 MiB besides batch_size rows",
  max_batch_memory_mb: "Rivet caps each batch at a fixed 4–8 MiB besides batch_size rows",
  on_batch_memory_exceeded: "Rivet caps each batch at a fixed 4–8 MiB besides batch_size rows",
  adaptive: "Rivet's batch size is fixed (batch_size rows, a fixed byte cap)",
  memory_threshold_mb: "Rivet does not pause chunks on memory",
  max_retries: "Rivet retries with its own policy (chunk_max_attempts for chunks)",
  retry_backoff_ms: "Rivet retries with its own policy (chunk_max_attempts for chunks)",
  min_parallel: "set parallel on the export",
  max_value_mb: "Rivet has no per-value cap"
}

const KNOWN = new Set(["profile", "batch_size", "statement_timeout_s", "lock_timeout_s"])

export type Mapping = Record<string, unknown>

const isRecord = (value: unknown): value is Mapping => value !== null && typeof value === "object" && !Array.isArray(value)

const warning = (path: string, message: string): ConfigNotice => ({ path, message, severity: "warning" })

/** Warnings for a tuning block's keys without equivalent (unknown ones are left for the profile check below). */
const unmapped = (block: Mapping, at: string): ReadonlyArray<ConfigNotice> =>
  Object.keys(block)
    .filter((key) => !KNOWN.has(key))
    .map((key) =>
      warning(
        `${at}.${key}`,
        NO_EQUIVALENT[key] === undefined
          ? "is not a tuning key Rivet knows: ignored"
          : `has no equivalent in Rivet and is ignored: ${NO_EQUIVALENT[key]}`
      )
    )

const profileOf = (tuning: Mapping, environment: unknown): Profile | undefined => {
  const written = tuning["profile"]
  if (typeof written === "string" && written in PROFILES) return written as Profile
  return typeof environment === "string" ? ENVIRONMENT_PROFILES[environment] : undefined
}

/** The source block with `tuning`/`environment` replaced by the settings they give, and what has no equivalent. */
export const translateSourceTuning = (source: Mapping): { source: Mapping; notices: ReadonlyArray<ConfigNotice>; profile?: Profile; tuning: Mapping } => {
  const { tuning: rawTuning, environment, ...rest } = source
  if (rawTuning === undefined && environment === undefined) return { source, notices: [], tuning: {} }
  const tuning = isRecord(rawTuning) ? rawTuning : {}
  const profile = profileOf(tuning, environment)
  const notices = [...unmapped(tuning, "source.tuning")]
  const fromProfile: Partial<Record<string, number>> = profile === undefined ? {} : PROFILES[profile]
  const translated: Mapping = { ...rest }
  for (const key of ["statement_timeout_s", "lock_timeout_s"] as const) {
    const value = tuning[key] ?? fromProfile[key]
    if (value !== undefined && translated[key] === undefined) translated[key] = value
  }
  return { source: translated, notices, ...(profile === undefined ? {} : { profile }), tuning }
}

/** The export with its `tuning` replaced by `batch_size` (the source's tuning and profile under it). */
export const translateExportTuning = (
  raw: Mapping,
  at: string,
  source: { readonly profile?: Profile | undefined; readonly tuning: Mapping }
): { exported: Mapping; notices: ReadonlyArray<ConfigNotice> } => {
  const { tuning: rawTuning, ...rest } = raw
  const own = isRecord(rawTuning) ? rawTuning : {}
  if (rawTuning === undefined && source.profile === undefined && source.tuning["batch_size"] === undefined) return { exported: raw, notices: [] }
  const notices = [...unmapped(own, `${at}.tuning`)]
  for (const key of ["statement_timeout_s", "lock_timeout_s"]) {
    if (own[key] !== undefined) notices.push(warning(`${at}.tuning.${key}`, `is set per source in Rivet: write source.${key} (this value is ignored)`))
  }
  const profile = typeof own["profile"] === "string" && own["profile"] in PROFILES ? (own["profile"] as Profile) : source.profile
  const batchSize = own["batch_size"] ?? source.tuning["batch_size"] ?? (profile === undefined ? undefined : PROFILES[profile].batch_size)
  const exported: Mapping = { ...rest }
  if (batchSize !== undefined && exported["batch_size"] === undefined) exported["batch_size"] = batchSize
  return { exported, notices }
}
