import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { TableCommitError } from "../../../core/errors.js"
import { parseTableMetadata } from "../iceberg/metadata.js"
import type { TableFiles } from "../table-files.js"
import type { Catalog, TableHead } from "./catalog.js"

export const VERSION_HINT_KEY = "metadata/version-hint.text"
const metadataKey = (version: number) => `metadata/v${version}.metadata.json`
const VERSION_OF_KEY = /^metadata\/v(\d+)\.metadata\.json$/

const versionOf = (head: TableHead | undefined): number => Number(VERSION_OF_KEY.exec(head?.key ?? "")?.[1] ?? 0)

/**
 * The file-system catalog (Iceberg's "Hadoop" tables): the table's versions are `metadata/v{N}.metadata.json`, each
 * written only if absent — so of two writers of v{N+1} exactly one wins — and `version-hint.text` names the latest
 * for readers. The hint is written after the version and may lag behind it: loading starts at the hint and moves on
 * while a next version exists.
 */
export const fileSystemCatalog = (files: TableFiles): Catalog => {
  const parsed = (key: string, bytes: Uint8Array) =>
    Either.match(parseTableMetadata(bytes), {
      onLeft: (problem) =>
        Effect.fail(
          new TableCommitError({
            table: files.table,
            message: `${files.locationOf(key)} is not Iceberg format-v2 table metadata Rivet can extend: ${problem}`,
            hint: "point the export at an empty location, or at a table Rivet created",
            retryable: false
          })
        ),
      onRight: (metadata) => Effect.succeed({ metadata, key } satisfies TableHead)
    })

  const load = Effect.gen(function* () {
    const hint = yield* files.read(VERSION_HINT_KEY)
    const hinted = hint === undefined ? 0 : Number.parseInt(new TextDecoder().decode(hint).trim(), 10)
    let version = Number.isInteger(hinted) && hinted > 0 ? hinted : 0
    let latest = version === 0 ? undefined : yield* files.read(metadataKey(version))
    if (version > 0 && latest === undefined)
      return yield* new TableCommitError({
        table: files.table,
        message: `${files.locationOf(VERSION_HINT_KEY)} names version ${version}, but ${files.locationOf(metadataKey(version))} does not exist`,
        hint: "restore the metadata file, or correct version-hint.text to the latest v{N}.metadata.json",
        retryable: false
      })
    for (;;) {
      const next = yield* files.read(metadataKey(version + 1))
      if (next === undefined) break
      version += 1
      latest = next
    }
    return latest === undefined ? undefined : yield* parsed(metadataKey(version), latest)
  })

  return {
    label: "file-system catalog",
    load,
    commit: (head, bytes) =>
      Effect.gen(function* () {
        const version = versionOf(head) + 1
        const key = metadataKey(version)
        if (!(yield* files.create(key, bytes, "application/json"))) return false as const
        // The version is committed once it exists; a hint that could not be written only makes readers that trust
        // it see the version before, until the next commit writes it again.
        yield* Effect.ignore(files.put(VERSION_HINT_KEY, new TextEncoder().encode(`${version}`), "text/plain"))
        return { key }
      }),
    check: Effect.map(load, (head) => (head === undefined ? "no table yet: the first run creates it" : `table at ${files.locationOf(head.key)}`))
  }
}
