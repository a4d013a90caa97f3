import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { IntegrityError, type SinkError } from "../core/errors.js"
import { sha256Hex } from "../core/manifest.js"
import { markerKeys } from "../core/naming.js"
import type { WriteReceipt } from "../core/plugin.js"
import { withRetry } from "../core/retry.js"
import type { ExportContext } from "./modes/context.js"

/**
 * Reads back `manifest.json` and fails unless it is the one this run wrote: another run may have published over it.
 * A read the destination refuses (no s3:GetObject) skips that check with a notice — the export's data is complete —
 * and what the write's receipt confirms stands in for the read: the store's own checksum of the bytes it stored.
 */
export const verifyOwnManifest = (ctx: ExportContext, runId: string, written: Uint8Array, receipt: WriteReceipt | void) =>
  Effect.gen(function* () {
    const { read } = ctx.sink
    if (read === undefined) return
    const keys = markerKeys(ctx.spec.name, ctx.spec.sharedDestination === true)
    const readBack = <A>(collect: (bytes: Stream.Stream<Uint8Array, SinkError>) => Effect.Effect<A, SinkError>) =>
      withRetry(collect(read(keys.manifest)), ctx.retry, () => ctx.progress.retried)
    // Hashed as it streams in: a manifest of many parts is megabytes, read back only to be compared.
    const readHash = yield* readBack((bytes) =>
      Effect.map(Stream.runFold(bytes, createHash("sha256"), (hash, chunk) => hash.update(chunk)), (hash) => hash.digest("hex"))
    ).pipe(
      Effect.catchIf(
        (error) => error.reason === "PermissionDenied",
        (error) => Effect.as(ctx.reporter.notice(ctx.spec.name, unreadNotice(keys.manifest, written, receipt, error)), undefined)
      )
    )
    if (readHash === undefined || readHash === sha256Hex(written)) return
    const bytes = Buffer.concat([...(yield* readBack(Stream.runCollect))])
    const found = yield* Effect.try(() => JSON.parse(bytes.toString("utf8")) as { run_id?: unknown }).pipe(
      Effect.map((parsed) => (typeof parsed.run_id === "string" ? `run '${parsed.run_id}'` : "something else")),
      Effect.orElseSucceed(() => "unreadable bytes")
    )
    return yield* new IntegrityError({
      message: `export '${ctx.spec.name}': ${keys.manifest} at ${ctx.sink.uri()} is no longer the one run '${runId}' wrote (it now holds ${found}), so this run did not write ${keys.success}`,
      hint: `another run of the export published at the same destination meanwhile (two runs overlapped: a lease that expired while its holder still ran, or a process writing there without the shared state); its manifest and ${keys.success} stand, this run's files are listed only by its kept manifest ${keys.kept(runId)}, which \`rivet validate\` reports as not published`
    })
  })

/** The notice of a manifest the destination would not let this run read back. */
const unreadNotice = (manifest: string, written: Uint8Array, receipt: WriteReceipt | void, error: SinkError): string => {
  const confirmed =
    receipt?.sha256 === sha256Hex(written)
      ? `the write's response confirms the bytes stored (SHA-256 ${receipt.sha256})`
      : "the write succeeded, but its response carried no checksum to confirm the bytes stored"
  return `${manifest} was not read back (${error.message}). ${error.hint ?? ""} Skipped: the check that no other run published over it before _SUCCESS; ${confirmed}.`.replace("  ", " ")
}
