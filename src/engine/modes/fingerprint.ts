import { sha256Hex } from "../../core/manifest.js"
import type { ExportContext } from "./context.js"

/**
 * What a checkpointed run's plan depends on. A resume with a different query, key, split size, format, meta
 * columns or destination would mix parts of two different exports under one manifest, so it is refused.
 */
export const planFingerprint = (ctx: ExportContext, details: Readonly<Record<string, unknown>>): string =>
  `sha256:${sha256Hex(
    JSON.stringify({
      sql: ctx.spec.query ?? null,
      table: ctx.spec.table ?? null,
      columns: [...ctx.spec.columnTypes.entries()],
      format: ctx.spec.format.plugin.type,
      extension: ctx.format.extension,
      destination: ctx.sink.uri(),
      maxFileSize: ctx.spec.maxFileSize ?? null,
      // Only when set, so that the fingerprints of runs recorded before meta columns existed stay the same.
      ...(ctx.spec.partition
        ? { partition: { by: ctx.spec.partition.columns.map((column) => column.key), keep: ctx.spec.partition.keepColumns } }
        : {}),
      ...((ctx.spec.metaColumns ?? []).length > 0 ? { metaColumns: ctx.spec.metaColumns } : {}),
      ...details
    })
  )}`
