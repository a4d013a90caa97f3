import type * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"

/**
 * `notifications:` (the Rust rivet's block): a Slack-compatible webhook told when an export fails or succeeds. The
 * URL is a secret (it carries the token): from an environment variable (`webhook_url_env`) or written in place
 * (`webhook_url`), never printed.
 */

/** Events a webhook is told about. */
export const NOTIFY_EVENTS = ["failure", "success"] as const
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number]

/** The Rust rivet's events without an equivalent here: accepted, never sent. */
const RUST_ONLY_EVENTS = ["schema_change", "degraded"] as const

export interface NotificationsConfig {
  /** The variable holding the webhook URL, read when a run notifies. */
  readonly webhookUrlEnv?: string | undefined
  readonly webhookUrl?: Redacted.Redacted<string> | undefined
  readonly on: ReadonlySet<NotifyEvent>
}

const SlackBlock = Schema.Struct({
  webhook_url_env: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: () => "must be the NAME of an environment variable holding the webhook URL, e.g. SLACK_WEBHOOK_URL" })
    ).annotations({ description: "Environment variable holding the webhook URL (a secret: never printed)." })
  ),
  webhook_url: Schema.optional(
    Schema.Redacted(Schema.String.annotations({ message: () => "expected a string: the webhook URL (value not shown)" })).annotations({
      description: "The webhook URL itself (prefer webhook_url_env: the URL carries a token). Never printed."
    })
  ),
  on: Schema.optional(
    Schema.Array(Schema.Literal(...NOTIFY_EVENTS, ...RUST_ONLY_EVENTS)).annotations({
      description: "When to post: failure (the default), success. The Rust rivet's schema_change and degraded are accepted and never sent."
    })
  )
}).pipe(
  Schema.filter((block) =>
    (block.webhook_url_env === undefined) !== (block.webhook_url === undefined) ? true : "give exactly one of webhook_url_env or webhook_url"
  ),
  Schema.annotations({ description: "A Slack incoming webhook (or any that takes Slack's { text } message)." })
)

/** The top-level `notifications:` block as written in the YAML. */
export const NotificationsBlock = Schema.Struct({ slack: SlackBlock }).annotations({
  description:
    "Post a message to a Slack-compatible webhook when an export fails (or succeeds): export, status, rows, error. A webhook that fails never fails the export."
})

export const readNotifications = (block: typeof NotificationsBlock.Type): NotificationsConfig => ({
  webhookUrlEnv: block.slack.webhook_url_env,
  webhookUrl: block.slack.webhook_url,
  on: new Set((block.slack.on ?? ["failure"]).filter((event): event is NotifyEvent => (NOTIFY_EVENTS as ReadonlyArray<string>).includes(event)))
})
