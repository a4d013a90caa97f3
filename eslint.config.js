import js from "@eslint/js"
import tseslint from "typescript-eslint"

const EDGES = ["**/cli/**", "**/registry/**", "**/testing/**", "**/api.js", "**/lanes-worker.js", "**/lanes-worker-url.js"]
const PLUGINS = ["**/plugins/**"]
const ENGINE = ["**/engine/**"]
/** What is not the run (validate, plan, doctor, init): on the engine, beside it. */
const COMMANDS = ["**/commands/**"]
const STATE = ["**/state/**"]
/** The concrete state backends and the choice between them: the edge picks a store, the engine sees its interface. */
const STATE_BACKENDS = ["**/state/**", "!**/state/store.js"]
const CONFIG = ["**/config/**"]
const EMBEDDED_POSTGRES = ["**/embedded-postgres/**"]

/**
 * A layer's files may import nothing matching `forbidden` (import specifiers, as globs); `more` adds groups with
 * messages of their own. One entry per layer: a second entry for the same files would replace this rule, not add to it.
 */
const layer = (files, forbidden, message, more = []) => ({
  files,
  rules: {
    "no-restricted-imports": [
      "error",
      { patterns: [{ group: forbidden, message }, ...more.map(([group, why]) => ({ group, message: why }))] }
    ]
  }
})

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "plugins/*/node_modules/**", "plugins/*/dist/**", "output/**", "bench/.work/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error"
    }
  },
  // Layers (docs/architecture.md#layers), each importing only what lies below it: core/ (the contract) ← config/ ←
  // state/ ← engine/ ← the edges (cli/, registry/, api.ts, testing/, the lanes worker's entry), which may
  // import anything. The engine sees the state store's interface (state/store.ts) only: which store a run uses is
  // chosen at the edge. Built-in plugins (plugins/sources, plugins/sinks, plugins/formats) see core/ only, as
  // third-party plugins see rivet-export/plugin: never config/, the engine, the state store, an edge or another kind
  // of plugin. The embedded demo PostgreSQL (embedded-postgres/)
  // is quickstart and test infrastructure beside the plugins: it sees core/ and config/, and only an edge starts it.
  layer(["src/core/**/*.ts"], [...EDGES, ...PLUGINS, ...ENGINE, ...COMMANDS, ...STATE, ...CONFIG, ...EMBEDDED_POSTGRES], "core/ is the contract: it imports nothing of Rivet's outside core/"),
  layer(["src/config/**/*.ts"], [...EDGES, ...PLUGINS, ...ENGINE, ...COMMANDS, ...STATE, ...EMBEDDED_POSTGRES], "config/ sees only core/: a config model that needs more takes it as a parameter"),
  layer(["src/state/**/*.ts"], [...EDGES, ...PLUGINS, ...ENGINE, ...COMMANDS, ...EMBEDDED_POSTGRES], "state/ sits below the engine: it never imports it, an edge or a plugin"),
  layer(
    ["src/embedded-postgres/**/*.ts"],
    [...EDGES, ...PLUGINS, ...ENGINE, ...COMMANDS, ...STATE],
    "embedded-postgres/ sees only core/ and config/: the edge that starts it hands its URL to the postgres source"
  ),
  layer(
    ["src/engine/**/*.ts"],
    [...EDGES, ...PLUGINS, ...COMMANDS, ...EMBEDDED_POSTGRES],
    "the engine must not depend on an edge or a plugin, nor on a command beside the run: take what it needs as a parameter, a service or a plugin capability",
    [[STATE_BACKENDS, "the engine sees only the state store's interface (state/store.ts): the edge chooses the store and passes its layer"]]
  ),
  layer(
    ["src/commands/**/*.ts"],
    [...EDGES, ...PLUGINS, ...EMBEDDED_POSTGRES],
    "the commands beside the run (validate, plan, doctor, init) sit on the engine: they never import an edge or a plugin",
    [[STATE_BACKENDS, "a command sees only the state store's interface (state/store.ts): the edge chooses the store"]]
  ),
  ...["sources", "sinks", "formats"].map((kind) =>
    layer(
      [`src/plugins/${kind}/**/*.ts`],
      [...EDGES, ...ENGINE, ...COMMANDS, ...STATE, ...CONFIG, ...EMBEDDED_POSTGRES, ...["sources", "sinks", "formats"].filter((other) => other !== kind).map((other) => `**/${other}/**`)],
      "a plugin sees only the plugin contract (core/, what src/plugin.ts exports), never the engine, another plugin or the embedded demo server, nor config/"
    )
  ),
  {
    files: ["bin/**/*.js"],
    languageOptions: { globals: { process: "readonly" } }
  }
)
