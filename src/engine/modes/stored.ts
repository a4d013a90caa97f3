import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { StateError } from "../../core/errors.js"

/**
 * Decodes JSON a mode stored in the state store (a chunk's range, a page's last key, a schema baseline) with its
 * Schema: state written by another Rivet version or edited by hand is refused naming the export, not trusted.
 */
export const decodeStored = <A, I>(schema: Schema.Schema<A, I>, exportName: string, what: string) => {
  const decode = Schema.decodeUnknown(Schema.parseJson(schema))
  return (text: string): Effect.Effect<A, StateError> =>
    decode(text).pipe(
      Effect.mapError(
        (error) =>
          new StateError({
            message: `export '${exportName}': the stored ${what} cannot be read: ${ParseResult.TreeFormatter.formatErrorSync(error)}`,
            hint: `the state was written by another Rivet version or edited by hand; \`rivet state reset -e ${exportName}\` starts the export over`
          })
      )
    )
}
