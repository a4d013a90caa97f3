import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { defectDetail, describeCause, PluginError } from "../core/errors.js"
import {
  FormatDriver,
  type FormatDriverShape,
  type PartEncoder,
  type RenderedPartEncoder,
  SinkDriver,
  type SinkDriverShape,
  SourceDriver,
  type SourceChanges,
  type SourceDriverShape,
  type SourceResult,
  type UploadHandle
} from "../core/plugin.js"

/**
 * Every call the engine makes into a plugin goes through a guard: a synchronous throw, a rejected Promise (an
 * `async` function where an Effect was due), a defect inside the returned Effect, or a value that is not an Effect
 * becomes a `PluginError` naming the plugin, the operation and the export, with the cause's stack as `detail`
 * (`--verbose`). It travels as a defect, so retries never repeat it and the plugin's own error types stay as
 * declared; the run reports it as the export's error (`exportError`), after aborting uploads and journaling the run
 * failed like any other failure.
 */
export interface PluginIdentity {
  readonly kind: "source" | "format" | "sink"
  readonly type: string
  readonly exportName: string | undefined
}
type Who = PluginIdentity

const failure = (who: Who, operation: string, what: string, cause: unknown) =>
  new PluginError({
    plugin: who.type,
    message: `the ${who.kind} plugin '${who.type}' ${what} in ${operation}${
      who.exportName === undefined ? "" : ` (export '${who.exportName}')`
    }: ${describeCause(cause)}`,
    hint: `this is a bug in the plugin '${who.type}' (its ${operation} must return an Effect that fails with a tagged error); run with --verbose for its stack`,
    ...defectDetail(cause)
  })

const isPromiseLike = (value: unknown): value is PromiseLike<unknown> =>
  typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function"

/** Defects of a plugin's cause become one PluginError defect (one already made by a guard is kept). */
const named = <E>(who: Who, operation: string, cause: Cause.Cause<E>): Cause.Cause<E> => {
  const defects = Cause.defects(cause)
  if (defects.length === 0 || Option.isSome(Cause.failureOption(cause))) return cause
  const first = Chunk.unsafeHead(defects)
  return first instanceof PluginError ? cause : Cause.die(failure(who, operation, "failed unexpectedly", first))
}

/** The Effect a plugin gave (or should have given) for one operation, made safe. */
const adopt = <A, E, R>(who: Who, operation: string, produced: unknown): Effect.Effect<A, E, R> => {
  if (Effect.isEffect(produced)) {
    return Effect.catchAllCause(produced as Effect.Effect<A, E, R>, (cause) => Effect.failCause(named(who, operation, cause)))
  }
  if (isPromiseLike(produced)) {
    return Effect.async<A>((resume) => {
      Promise.resolve(produced).then(
        (result) => resume(Effect.succeed(result as A)),
        (error: unknown) => resume(Effect.die(failure(who, operation, "rejected", error)))
      )
    })
  }
  return Effect.die(failure(who, operation, "returned something that is not an Effect", produced === null ? "null" : typeof produced))
}

/** Calls `f`, guarding a synchronous throw as well as what it returns. */
const call = <A, E, R>(who: Who, operation: string, f: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    let produced: unknown
    try {
      produced = f()
    } catch (cause) {
      return Effect.die(failure(who, operation, "threw", cause))
    }
    return adopt<A, E, R>(who, operation, produced)
  })

/** An Effect value of the driver (`check`, `finish`, `abort`): guarded each time it runs. */
const value = <A, E, R>(who: Who, operation: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  call(who, operation, () => effect)

const stream = <A, E>(who: Who, operation: string, batches: Stream.Stream<A, E>): Stream.Stream<A, E> =>
  Stream.catchAllCause(batches, (cause) => Stream.failCause(named(who, operation, cause)))

/** A plain synchronous call (`render`): a throw becomes the PluginError defect. */
const sync = <A>(who: Who, operation: string, f: () => A): A => {
  try {
    return f()
  } catch (cause) {
    throw failure(who, operation, "threw", cause)
  }
}

const guardResult = (who: Who, result: SourceResult): SourceResult => ({
  ...result,
  batches: stream(who, "open (reading rows)", result.batches)
})

const guardChanges = (who: Who, changes: SourceChanges): SourceChanges => ({
  open: (request) =>
    Effect.map(call(who, "changes.open", () => changes.open(request)), (feed) => ({
      ...feed,
      batches: stream(who, "changes.open (reading changes)", feed.batches),
      reached: value(who, "changes.open (position reached)", feed.reached)
    })),
  confirm: (request, position) => call(who, "changes.confirm", () => changes.confirm(request, position)),
  inspect: (request) => call(who, "changes.inspect", () => changes.inspect(request)),
  drop: (request) => call(who, "changes.drop", () => changes.drop(request))
})

const guardSource = (who: Who, driver: SourceDriverShape): SourceDriverShape => {
  const { describe, bounds, estimateRows, render, openRendered, changes, connectionDetail } = driver
  return {
    ...driver,
    ...(changes && { changes: guardChanges(who, changes) }),
    check: value(who, "check", driver.check),
    ...(connectionDetail && { connectionDetail: value(who, "connectionDetail", connectionDetail) }),
    open: (query) => Effect.map(call(who, "open", () => driver.open(query)), (result) => guardResult(who, result)),
    ...(describe && { describe: (query) => call(who, "describe", () => describe(query)) }),
    ...(bounds && { bounds: (query, column) => call(who, "bounds", () => bounds(query, column)) }),
    ...(estimateRows && { estimateRows: (query) => call(who, "estimateRows", () => estimateRows(query)) }),
    ...(render && { render: (query) => sync(who, "render", () => render(query)) }),
    ...(openRendered && {
      openRendered: (query, dialect) =>
        Effect.map(call(who, "openRendered", () => openRendered(query, dialect)), (opened) =>
          opened._tag === "Batches"
            ? { ...opened, result: guardResult(who, opened.result) }
            : { ...opened, chunks: stream(who, "openRendered (reading rows)", opened.chunks) }
        )
    })
  }
}

const guardEncoder = (who: Who, encoder: PartEncoder): PartEncoder => {
  const { writeCapped } = encoder
  return {
    write: (batch) => call(who, "encoder write", () => encoder.write(batch)),
    finish: value(who, "encoder finish", encoder.finish),
    ...(writeCapped && {
      writeCapped: (batch, from, maxBytes) => call(who, "encoder writeCapped", () => writeCapped(batch, from, maxBytes))
    })
  }
}

const guardRenderedEncoder = (who: Who, encoder: RenderedPartEncoder): RenderedPartEncoder => ({
  write: (rows) => call(who, "rendered encoder write", () => encoder.write(rows)),
  finish: value(who, "rendered encoder finish", encoder.finish)
})

const guardFormat = (who: Who, driver: FormatDriverShape): FormatDriverShape => {
  const { rendered, countRows } = driver
  return {
    ...driver,
    validate: (schema) => call(who, "validate", () => driver.validate(schema)),
    open: (schema, part) => Effect.map(call(who, "open", () => driver.open(schema, part)), (encoder) => guardEncoder(who, encoder)),
    ...(rendered && {
      rendered: {
        dialect: rendered.dialect,
        open: (schema) =>
          Effect.map(call(who, "rendered.open", () => rendered.open(schema)), (encoder) => guardRenderedEncoder(who, encoder))
      }
    }),
    ...(countRows && { countRows: (key, read) => call(who, "countRows", () => countRows(key, read)) })
  }
}

const guardUpload = (who: Who, handle: UploadHandle): UploadHandle => ({
  ...handle,
  writeBlock: (index, bytes) => call(who, "writeBlock", () => handle.writeBlock(index, bytes)),
  complete: (blocks) => call(who, "complete", () => handle.complete(blocks)),
  abort: value(who, "abort", handle.abort)
})

const guardSink = (who: Who, driver: SinkDriverShape): SinkDriverShape => {
  const { list, sweep, read, readRange, create, pendingUploads } = driver
  return {
    ...driver,
    check: value(who, "check", driver.check),
    put: (key, bytes, contentType) => call(who, "put", () => driver.put(key, bytes, contentType)),
    begin: (key, contentType) => Effect.map(call(who, "begin", () => driver.begin(key, contentType)), (handle) => guardUpload(who, handle)),
    ...(list && { list: value(who, "list", list) }),
    ...(sweep && { sweep: value(who, "sweep", sweep) }),
    ...(read && { read: (key) => stream(who, "read", Stream.suspend(() => sync(who, "read", () => read(key)))) }),
    ...(readRange && { readRange: (key, offset, length) => call(who, "readRange", () => readRange(key, offset, length)) }),
    ...(create && { create: (key, bytes, contentType) => call(who, "create", () => create(key, bytes, contentType)) }),
    ...(pendingUploads && {
      pendingUploads: {
        list: (prefix) => call(who, "pendingUploads.list", () => pendingUploads.list(prefix)),
        abort: (upload) => call(who, "pendingUploads.abort", () => pendingUploads.abort(upload))
      }
    })
  }
}

/**
 * A plugin's `make`, guarded: a throw, or something that is not a Layer, fails with a PluginError naming `make`,
 * a defect while the layer is built too; the driver it provides is guarded as above.
 */
const guardedMake =
  <I, S>(tag: Context.Tag<I, S>, guard: (who: Who, driver: S) => S) =>
  <E>(who: Who, make: () => Layer.Layer<I, E>): Layer.Layer<I, E> =>
    Layer.unwrapEffect(
      Effect.sync(() => {
        let layer: unknown
        try {
          layer = make()
        } catch (cause) {
          return Layer.die(failure(who, "make", "threw", cause))
        }
        if (isPromiseLike(layer)) {
          // Settled here, so that a rejection is not left unhandled; its reason is not needed.
          Promise.resolve(layer).catch(() => undefined)
          return Layer.die(failure(who, "make", "returned a Promise, not a Layer", "make must return a Layer (Layer.effect for asynchronous set-up)"))
        }
        if (!Layer.isLayer(layer)) return Layer.die(failure(who, "make", "returned something that is not a Layer", typeof layer))
        const built = Layer.catchAllCause(layer as Layer.Layer<I, E>, (cause) => Layer.failCause(named(who, "make", cause)))
        return Layer.map(built, (context) => Context.add(context, tag, guard(who, Context.get(context, tag))))
      })
    )

export const guardedSource = guardedMake(SourceDriver, guardSource)
export const guardedFormat = guardedMake(FormatDriver, guardFormat)
export const guardedSink = guardedMake(SinkDriver, guardSink)

/** The PluginError a guard raised, when a cause's only defect is one (the export's error to report). */
export const guardedPluginError = (cause: Cause.Cause<unknown>): PluginError | undefined => {
  const defect = Option.getOrUndefined(Chunk.head(Cause.defects(cause)))
  return defect instanceof PluginError ? defect : undefined
}
