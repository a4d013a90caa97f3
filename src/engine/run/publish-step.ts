import * as Effect from "effect/Effect"
import type { Manifest, PartRecord } from "../../core/manifest.js"
import { withRetry } from "../../core/retry.js"
import type { ModeOutcome, RunJournal } from "../modes/mode.js"
import type { CommittedSnapshot } from "../table-format/iceberg/commit.js"
import { TABLE_DATA_PREFIX } from "../table-format/layout.js"
import type { ExportRun } from "./export-run.js"
import { writeMarkers } from "./markers.js"
import { cursorToStore } from "./store-cursor.js"

export interface RunTotals {
  readonly rows: number
  readonly parts: number
  readonly bytes: number
}

export const totalsOf = (parts: ReadonlyArray<PartRecord>): RunTotals => ({
  rows: parts.reduce((sum, part) => sum + part.rows, 0),
  parts: parts.length,
  bytes: parts.reduce((sum, part) => sum + part.size_bytes, 0)
})

/**
 * How the publish step ended. `success`: published (markers written where the destination keeps them); `skipped`:
 * `skip_empty` and no rows, nothing written; `joined`: a worker whose run another worker publishes.
 */
export interface PublishedRun {
  readonly outcome: ModeOutcome
  readonly total: RunTotals
  /** Absent for destinations without markers (stdout) and for runs not published here. */
  readonly manifest: Manifest | undefined
  /** Objects an interrupted attempt of this run left that the manifest does not list (resumed runs only). */
  readonly untracked: ReadonlyArray<string>
  readonly status: "success" | "skipped" | "joined"
  /** The table snapshot the run committed (`table_format:`), when it had rows. */
  readonly snapshot?: CommittedSnapshot | undefined
}

/** Objects named like this run's parts that the manifest does not list: leftovers of an interrupted attempt. */
const findUntracked = ({ ctx, table }: ExportRun, outcome: ModeOutcome, journal: RunJournal) =>
  Effect.gen(function* () {
    const { list } = ctx.sink
    if (!journal.resumed || outcome.partStem === undefined || list === undefined) return []
    const listed = new Set(outcome.parts.map((part) => part.path))
    const stem = `${table === undefined ? "" : TABLE_DATA_PREFIX}${outcome.partStem}`
    const objects = yield* withRetry(list, ctx.retry, () => {})
    return objects
      .map((object) => object.key)
      .filter((key) => key.startsWith(stem) && !listed.has(key))
      .sort()
  })

/**
 * Everything from the mode's outcome up to `_SUCCESS`: an empty run is skipped (`skip_empty`), a published one
 * passes the schema-drift check and the quality gates, then — once the run confirmed its lease and its starting
 * cursor are still its own — gets its markers.
 */
export const publishRun = Effect.fn("Run.publish")(function* (run: ExportRun, journal: RunJournal, outcome: ModeOutcome) {
  const { ctx } = run
  const { spec, reporter } = ctx
  const total = totalsOf(outcome.parts)
  if (outcome.publishedElsewhere) {
    return { outcome, total, manifest: undefined, untracked: [], status: "joined" } satisfies PublishedRun
  }
  if (spec.skipEmpty && total.rows === 0) {
    yield* ctx.state.finishRun(journal.runId, { status: "skipped", finishedAt: ctx.now().toISOString(), ...total })
    return { outcome, total, manifest: undefined, untracked: [], status: "skipped" } satisfies PublishedRun
  }
  yield* run.drift.check(outcome.schema)
  if (ctx.gates) {
    if (journal.resumed && ctx.gates.needsValues) {
      yield* reporter.notice(spec.name, "resumed run: NULL-ratio and uniqueness gates cover only the chunks or pages read by this attempt")
    }
    yield* ctx.gates.verdict(outcome.schema, total.rows)
  }
  // Listed before publishing and only reported: a listing that fails (no s3:ListBucket) must not fail a run whose
  // data is complete, least of all after its _SUCCESS is written.
  const untracked = yield* findUntracked(run, outcome, journal).pipe(
    Effect.catchAll((error) =>
      Effect.as(
        reporter.notice(
          spec.name,
          `could not list the destination for files of the interrupted attempt (${error.message}).${error.hint === undefined ? "" : ` ${error.hint}`} \`rivet validate\` reports them`
        ),
        []
      )
    )
  )
  // Right before publishing: the lease is still this run's, and no other run moved the cursor meanwhile.
  yield* run.lease.confirm
  yield* cursorToStore(run, journal.runId, outcome).confirmUnmoved
  const manifest = ctx.sink.capabilities.markers ? yield* writeMarkers(run, journal, outcome) : undefined
  // The snapshot last: readers of the table see the run only once Rivet's own markers vouch for it, and a run
  // stopped before it leaves the table as it was (its state is not advanced either: the next run reads the rows again).
  const snapshot = run.table === undefined ? undefined : yield* run.table.commit(outcome, journal)
  if (snapshot !== undefined && snapshot.lostRaces > 0)
    yield* reporter.notice(spec.name, `table ${run.table!.name}: committed snapshot ${snapshot.snapshotId} after ${snapshot.lostRaces} commit(s) of other writers landed first`)
  return { outcome, total, manifest, untracked, status: "success", snapshot } satisfies PublishedRun
})
