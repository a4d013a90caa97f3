import js from "@eslint/js"
import tseslint from "typescript-eslint"

const EDGES = ["**/cli/**", "**/registry/**", "**/testing/**", "**/api.js"]
const PLUGINS = ["**/plugins/**"]
const ENGINE = ["**/engine/**"]
const STATE = ["**/state/**"]
const CONFIG = ["**/config/**"]
const LIB = ["**/lib/**"]

/** A layer's files may import nothing matching `forbidden` (import specifiers, as globs). */
const layer = (files, forbidden, message, ignores = []) => ({
  files,
  ignores,
  rules: { "no-restricted-imports": ["error", { patterns: [{ group: forbidden, message }] }] }
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
  // state/ and lib/ ← engine/ ← the edges (cli/, registry/, api.ts, testing/, the lanes worker's entry), which may
  // import anything. Built-in plugins (plugins/sources, plugins/sinks, plugins/formats) see core/ and config/, never
  // the engine, the state store, an edge or another kind of plugin.
  layer(["src/core/**/*.ts"], [...EDGES, ...PLUGINS, ...ENGINE, ...STATE, ...CONFIG, ...LIB], "core/ is the contract: it imports nothing of Rivet's outside core/"),
  layer(["src/config/**/*.ts"], [...EDGES, ...PLUGINS, ...ENGINE, ...STATE], "config/ sees only core/: a config model that needs more takes it as a parameter"),
  layer(["src/state/**/*.ts", "src/lib/**/*.ts"], [...EDGES, ...PLUGINS, ...ENGINE], "state/ and lib/ sit below the engine: they never import it, an edge or a plugin"),
  layer(
    ["src/engine/**/*.ts"],
    [...EDGES, ...PLUGINS],
    "the engine must not depend on an edge or a plugin: take what it needs as a parameter, a service or a plugin capability",
    ["src/engine/lanes/worker.ts"]
  ),
  ...["sources", "sinks", "formats"].map((kind) =>
    layer(
      [`src/plugins/${kind}/**/*.ts`],
      [...EDGES, ...ENGINE, ...STATE, ...["sources", "sinks", "formats"].filter((other) => other !== kind).map((other) => `**/${other}/**`)],
      "a plugin sees only the plugin contract (core/, config/ and what src/plugin.ts exports), never the engine or another plugin"
    )
  ),
  {
    files: ["bin/**/*.js"],
    languageOptions: { globals: { process: "readonly" } }
  }
)
