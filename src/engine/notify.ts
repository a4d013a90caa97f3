import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type { NotificationsConfig, NotifyEvent } from "../config/notifications.js"
import { describeCause } from "../core/errors.js"

/** What an export's notification says. */
export interface ExportNotice {
  readonly exportName: string
  readonly event: NotifyEvent
  readonly rows: number
  readonly files: number
  readonly error?: string | undefined
}

const TIMEOUT_MS = 10_000

/** Slack's `text` (other webhooks read it too): export, status, rows, error. */
export const notificationText = (notice: ExportNotice): string =>
  notice.event === "failure"
    ? `Rivet: export ${notice.exportName} failed — status failed, ${notice.rows} rows — error: ${notice.error ?? "unknown"}`
    : `Rivet: export ${notice.exportName} succeeded — status success, ${notice.rows} rows in ${notice.files} file(s)`

const webhookUrl = (settings: NotificationsConfig, env: Readonly<Record<string, string | undefined>>) => {
  if (settings.webhookUrl !== undefined) return { url: Redacted.value(settings.webhookUrl), origin: "notifications.slack.webhook_url" }
  const name = settings.webhookUrlEnv!
  const value = env[name]
  return value === undefined || value === "" ? { missing: name } : { url: value, origin: `the webhook URL in ${name}` }
}

/**
 * Posts an export's outcome to the webhook, when the settings ask for that event. Never fails: a webhook that
 * cannot be reached or refuses the message is a problem returned as text (the URL, which carries a token, is never
 * in it), for the run to report beside the export's own outcome.
 */
export const notifyExport = Effect.fn("Rivet.notifyExport")(function* (
  settings: NotificationsConfig | undefined,
  env: Readonly<Record<string, string | undefined>>,
  notice: ExportNotice
) {
  if (settings === undefined || !settings.on.has(notice.event)) return undefined
  const target = webhookUrl(settings, env)
  if ("missing" in target) return `notification not sent: the environment variable ${target.missing} (notifications.slack.webhook_url_env) is not set`
  const scrub = (text: string) => text.split(target.url).join("***")
  return yield* Effect.tryPromise({
    try: (signal) =>
      fetch(target.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ text: notificationText(notice) }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(TIMEOUT_MS)])
      }),
    catch: (cause) => `notification not sent: could not reach ${target.origin}: ${scrub(describeCause(cause))}`
  }).pipe(
    Effect.map((response) => (response.ok ? undefined : `notification not sent: ${target.origin} answered HTTP ${response.status}`)),
    Effect.merge
  )
})
