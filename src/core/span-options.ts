/**
 * Options for spans opened once per part or per block — thousands in a partitioned run: no call-site stack trace.
 * Effect captures one for every span by default (an Error kept as long as the span); these spans' names already
 * say where they come from.
 */
export const perPart = { captureStackTrace: false } as const
