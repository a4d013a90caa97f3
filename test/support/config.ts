import type { RivetConfigInput } from "../../src/config-input.js"

/**
 * A config object built from untyped pieces (table-driven tests, deliberately invalid configs), passed on as the
 * typed input: the tests check what Rivet does at run time with whatever they build.
 */
export const untyped = (value: object): RivetConfigInput => value as RivetConfigInput
