import { ConfigError } from "../core/errors.js"
import type { SharedRead } from "./mode.js"

/** Exports reading one shared resource (a cdc slot) must agree on some settings and differ on others. */

export interface SharedReader {
  readonly index: number
  readonly name: string
  readonly read: SharedRead
}

/** Where an export reading a shared resource disagrees with the first export reading it, or repeats another's. */
export const sharedReadProblems = (reader: SharedReader, earlier: ReadonlyArray<SharedReader>): ReadonlyArray<ConfigError> => {
  const { index, name, read } = reader
  const first = earlier[0]!
  const text = (value: unknown) => (value === undefined ? "unset" : JSON.stringify(value))
  const differing = Object.entries(read.agree).flatMap(([key, value]) => {
    const theirs = first.read.agree[key]
    if (JSON.stringify(value) === JSON.stringify(theirs)) return []
    return [
      new ConfigError({
        path: `exports[${index}].${key}`,
        message: `export '${name}' reads ${read.resource} with export '${first.name}' (exports[${first.index}]), which has ${key} ${text(theirs)}, not ${text(value)}`,
        hint: `the exports reading ${read.resource} share its ${key}: set the same value, or give this export its own`
      })
    ]
  })
  const same = Object.entries(read.distinct).flatMap(([key, value]) => {
    const other = earlier.find((candidate) => JSON.stringify(candidate.read.distinct[key]) === JSON.stringify(value))
    if (other === undefined) return []
    return [
      new ConfigError({
        path: `exports[${index}].${key}`,
        message: `export '${name}' reads ${read.resource} with export '${other.name}' (exports[${other.index}]), and both have ${key} ${text(value)}`,
        hint: `each export reading ${read.resource} needs its own ${key}: give one of them its own`
      })
    ]
  })
  return [...differing, ...same]
}
