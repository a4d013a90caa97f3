import js from "@eslint/js"
import tseslint from "typescript-eslint"

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
  // Layers (docs/architecture.md#layers): the edges (cli/, api.ts, the lanes worker's entry) may import anything;
  // the engine (runtime/, state/) and shared libraries (lib/) never import an edge or a plugin; built-in plugins
  // (sources/, sinks/, formats/) see the contract, never the engine's internals or another plugin.
  {
    files: ["src/runtime/**/*.ts", "src/state/**/*.ts", "src/lib/**/*.ts"],
    ignores: ["src/runtime/lanes/worker.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/cli/**", "**/registry/**", "**/sources/**", "**/sinks/**", "**/formats/**", "**/api.js"],
              message:
                "the engine must not depend on an edge or a plugin: take what it needs as a parameter, a service or a plugin capability"
            }
          ]
        }
      ]
    }
  },
  ...["sources", "sinks", "formats"].map((folder) => ({
    files: [`src/${folder}/**/*.ts`],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: [
                ...["modes", "lanes", "plan", "validate", "quality"].map((engine) => `**/runtime/${engine}/**`),
                ...["pipeline", "run", "layers", "doctor", "encode-parts", "upload-parts", "upload-cleanup", "lease"].map(
                  (engine) => `**/runtime/${engine}.js`
                ),
                "**/state/**",
                "**/cli/**",
                "**/registry/**",
                ...["sources", "sinks", "formats"].filter((other) => other !== folder).map((other) => `**/${other}/**`)
              ],
              message: "a plugin sees only the plugin contract (src/plugin.ts and what it exports), never the engine or another plugin"
            }
          ]
        }
      ]
    }
  })),
  {
    files: ["bin/**/*.js"],
    languageOptions: { globals: { process: "readonly" } }
  }
)
