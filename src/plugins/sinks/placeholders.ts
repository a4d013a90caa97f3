/**
 * Path templates of other export tools (`{date}`, `{export}`, `{table}`, `{run_id}`, `{partition}`). Rivet does not
 * expand them: written literally they would silently become a directory or key segment named `{date}`.
 */
const PLACEHOLDER = /\{(date|export|table|run_id|partition)\}/

/** Why `value` (the `key` of a destination block) cannot be used as written, or undefined when it has no template. */
export const placeholderProblem = (key: string, value: string): string | undefined => {
  const token = PLACEHOLDER.exec(value)?.[1]
  if (token === undefined) return undefined
  return (
    `${key} contains '{${token}}', which Rivet does not expand (it would stay in every file's location as the literal text '{${token}}'); ` +
    `write it out, or use an environment variable or --param, e.g. ${key}: exports/\${RUN_DATE}/ with RUN_DATE=$(date -u +%F)`
  )
}
