/**
 * The Rust rivet's spelling of settings Rivet has under other names, rewritten before decoding so a migrated config
 * runs unchanged: `compression_profile`, `parquet:`, `chunk_by_key`, `chunk_size_memory_mb`, `query_file`, and
 * `tuning` / `environment` (rust-tuning.ts). A sub-key without an equivalent is a warning naming it; the keys Rivet
 * still refuses, with their hints, are in rust-keys.ts.
 */

import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import { ConfigError } from "../core/errors.js"
import type { ConfigNotice } from "./advisory.js"
import { fileProblem } from "./read-file.js"
import { type Mapping, translateExportTuning, translateSourceTuning } from "./rust-tuning.js"

/** `compression_profile` → the codec and level the Rust rivet's presets meant. */
export const COMPRESSION_PROFILES: Readonly<Record<string, Mapping>> = {
  none: { compression: "none" },
  fast: { compression: "snappy" },
  balanced: { compression: "zstd", compression_level: 3 },
  compact: { compression: "zstd", compression_level: 9 }
}

export interface Translated {
  readonly value: unknown
  /** Notices per export index (a source-level one is repeated on every export, which it affects). */
  readonly notices: ReadonlyMap<number, ReadonlyArray<ConfigNotice>>
  readonly problems: ReadonlyArray<ConfigError>
}

const isRecord = (value: unknown): value is Mapping => value !== null && typeof value === "object" && !Array.isArray(value)

const warning = (at: string, message: string): ConfigNotice => ({ path: at, message, severity: "warning" })

const translateCompressionProfile = (raw: Mapping, at: string, notices: Array<ConfigNotice>, problems: Array<ConfigError>): Mapping => {
  const { compression_profile: profile, ...rest } = raw
  if (profile === undefined) return raw
  const preset = typeof profile === "string" ? COMPRESSION_PROFILES[profile] : undefined
  if (preset === undefined) {
    problems.push(new ConfigError({ path: `${at}.compression_profile`, message: `unknown compression_profile ${JSON.stringify(profile)}`, hint: "none, fast (snappy), balanced (zstd level 3) or compact (zstd level 9)" }))
    return rest
  }
  if (rest["compression"] !== undefined || rest["compression_level"] !== undefined) {
    notices.push(warning(`${at}.compression_profile`, `overrides compression / compression_level, as in the Rust rivet (${JSON.stringify(preset)})`))
  }
  // A text format takes no level; `none` is the only preset it can take.
  const { compression_level: _, ...withoutLevel } = rest
  return { ...withoutLevel, ...preset }
}

const PARQUET_UNMAPPED: Readonly<Record<string, string>> = {
  row_group_strategy: "Rivet's row groups end at row_group_size rows when set, else at its own rows/bytes budget",
  target_row_group_mb: "Rivet's row-group byte budget is fixed (row groups are also sized to close below max_file_size)",
  max_row_group_mb: "Rivet's row-group byte budget is fixed (row groups are also sized to close below max_file_size)"
}

const translateParquet = (raw: Mapping, at: string, notices: Array<ConfigNotice>): Mapping => {
  const { parquet, ...rest } = raw
  if (!isRecord(parquet)) return parquet === undefined ? raw : { ...rest, parquet }
  const translated: Mapping = { ...rest }
  for (const [key, value] of Object.entries(parquet)) {
    if (key === "row_group_rows") {
      if (translated["row_group_size"] === undefined) translated["row_group_size"] = value
    } else if (key === "row_group_strategy" && (value === "fixed_rows" || value === "auto")) {
      continue
    } else {
      notices.push(warning(`${at}.parquet.${key}`, `has no equivalent in Rivet and is ignored: ${PARQUET_UNMAPPED[key] ?? "not a parquet: key Rivet knows"}`))
    }
  }
  return translated
}

const translateChunking = (raw: Mapping, at: string, notices: Array<ConfigNotice>): Mapping => {
  const { chunk_by_key: key, chunk_size_memory_mb: memory, ...rest } = raw
  if (memory !== undefined) {
    notices.push(warning(`${at}.chunk_size_memory_mb`, "has no equivalent in Rivet and is ignored: chunks are sized by chunk_size key values (page_size rows in keyset mode); batches are capped at 4–8 MiB"))
  }
  if (key === undefined) return memory === undefined ? raw : rest
  // The Rust rivet's keyset chunking: pages of chunk_size rows ordered by the key.
  const { chunk_size: pageSize, ...keyset } = rest
  return {
    ...keyset,
    mode: "keyset",
    key_columns: key,
    ...(pageSize === undefined || keyset["page_size"] !== undefined ? {} : { page_size: pageSize })
  }
}

const translateQueryFile = (raw: Mapping, at: string, configDir: string, problems: Array<ConfigError>) =>
  Effect.gen(function* () {
    const { query_file: file, ...rest } = raw
    if (file === undefined) return raw
    if (typeof file !== "string" || file === "") {
      problems.push(new ConfigError({ path: `${at}.query_file`, message: "must be a path to a file holding the query", hint: "relative to the config file's directory, e.g. query_file: sql/orders.sql" }))
      return rest
    }
    if (rest["query"] !== undefined || rest["table"] !== undefined) {
      problems.push(new ConfigError({ path: `${at}.query_file`, message: "is given with query or table", hint: "an export reads exactly one of query, query_file or table" }))
      return rest
    }
    const full = path.resolve(configDir, file)
    const fs = yield* FileSystem.FileSystem
    const text = yield* Effect.either(fs.readFileString(full))
    if (text._tag === "Left") {
      problems.push(new ConfigError({ path: `${at}.query_file`, message: `cannot read ${full}: ${fileProblem(text.left)}`, hint: "query_file is relative to the config file's directory" }))
      return rest
    }
    return { ...rest, query: text.right.trim().replace(/;\s*$/, "") }
  })

/** Rewrites the Rust rivet's spelling in a config value (after `${VAR}` substitution); the rest is left as it is. */
export const translateRustSpelling = (value: unknown, configDir: string): Effect.Effect<Translated, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const notices = new Map<number, Array<ConfigNotice>>()
    const problems: Array<ConfigError> = []
    if (!isRecord(value)) return { value, notices, problems }
    const source = isRecord(value["source"]) ? translateSourceTuning(value["source"]) : undefined
    const exportsList = Array.isArray(value["exports"]) ? (value["exports"] as ReadonlyArray<unknown>) : undefined
    const exports: Array<unknown> = []
    for (const [index, raw] of (exportsList ?? []).entries()) {
      if (!isRecord(raw)) {
        exports.push(raw)
        continue
      }
      const at = `exports[${index}]`
      const own: Array<ConfigNotice> = [...(source?.notices ?? [])]
      let translated = translateCompressionProfile(raw, at, own, problems)
      translated = translateParquet(translated, at, own)
      translated = translateChunking(translated, at, own)
      translated = yield* translateQueryFile(translated, at, configDir, problems)
      const tuned = translateExportTuning(translated, at, source ?? { tuning: {} })
      own.push(...tuned.notices)
      exports.push(tuned.exported)
      if (own.length > 0) notices.set(index, own)
    }
    const translated: Mapping = { ...value, ...(source === undefined ? {} : { source: source.source }), ...(exportsList === undefined ? {} : { exports }) }
    return { value: translated, notices, problems }
  })
