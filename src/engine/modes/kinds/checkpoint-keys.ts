import * as Schema from "effect/Schema"

/** The keys chunked and keyset share: both record committed units and retry a failed one. */
export const checkpointFields = {
  chunk_checkpoint: Schema.optional(
    Schema.Boolean.annotations({
      description: "chunked/keyset: record each committed chunk or page so `rivet run --resume` continues a failed run."
    })
  ),
  chunk_max_attempts: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 100, { message: () => "must be a whole number from 1 to 100" })).annotations({
      description:
        "chunked/keyset: attempts per chunk or page when the source fails in a retryable way (connection lost), before the run fails (default 6: the first and 5 retries)."
    })
  ),
}

/** `chunk_checkpoint` and `chunk_max_attempts` as settings: unset, a run is not recorded unit by unit. */
export const checkpointSettings = (keys: { readonly chunk_checkpoint?: boolean | undefined; readonly chunk_max_attempts?: number | undefined }) => ({
  checkpoint: keys.chunk_checkpoint ?? false,
  maxAttempts: keys.chunk_max_attempts
})

/** What chunked and keyset say about the checkpoint in `rivet check`. */
export const noCheckpointNote = (kind: string, unit: string, checkpoint: boolean) => (at: (key?: string) => string) =>
  checkpoint
    ? []
    : [
        {
          severity: "note" as const,
          path: at("mode"),
          message: `without chunk_checkpoint a failed ${kind} run starts over from the first ${unit}`,
          hint: `set chunk_checkpoint: true so that rivet run --resume redoes only the unfinished ${unit}s`
        }
      ]
