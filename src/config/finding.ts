/**
 * Something `rivet check` reports about a config that decodes: an `error` (a sure bug: the config must not run as
 * is), a `warning` (a likely mistake or risk) or a `note` (worth knowing; fine for small tables). Lints read the
 * config only — nothing connects — so they cannot know table sizes or column types.
 */
export interface LintFinding {
  readonly severity: "error" | "warning" | "note"
  readonly path: string
  readonly message: string
  readonly hint?: string | undefined
}
