import { manifest } from "../manifest.js"

export type PluginKind = "sink" | "format" | "source"

const devVersion = (name: string): string => {
  const version = manifest.devDependencies[name] ?? manifest.dependencies[name]
  if (version === undefined) throw new Error(`Rivet's package.json does not pin ${name}`)
  return version
}

/** The scaffold's package.json: Rivet and Effect as peers (one copy each in the user's project), tools pinned. */
export const packageJson = (name: string, kind: PluginKind): string =>
  `${JSON.stringify(
    {
      name,
      version: "0.1.0",
      description: `Rivet ${kind} plugin`,
      type: "module",
      main: "./dist/index.js",
      types: "./dist/index.d.ts",
      exports: { ".": { types: "./dist/index.d.ts", default: "./dist/index.js" } },
      files: ["dist"],
      engines: { node: ">=20.19" },
      scripts: {
        build: "tsc -p tsconfig.json",
        test: "npm run build && vitest run",
        prepublishOnly: "npm test"
      },
      peerDependencies: { [manifest.name]: `^${manifest.version}`, effect: `^${devVersion("effect")}` },
      devDependencies: {
        [manifest.name]: `^${manifest.version}`,
        "@types/node": devVersion("@types/node"),
        effect: devVersion("effect"),
        typescript: devVersion("typescript"),
        vitest: devVersion("vitest")
      },
      // Install scripts npm would otherwise warn about: neither is needed (prebuilt binaries, optional watchers).
      allowScripts: { "@parcel/watcher": false, "msgpackr-extract": false, esbuild: true }
    },
    null,
    2
  )}\n`

/** Compiles src/ to dist/ with declarations; the tests (test/) run from source through vitest. */
export const tsconfigJson = `${JSON.stringify(
  {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2022"],
      types: ["node"],
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      declaration: true,
      sourceMap: true,
      rootDir: "src",
      outDir: "dist",
      skipLibCheck: true
    },
    include: ["src"]
  },
  null,
  2
)}\n`

export const gitignore = "node_modules/\ndist/\n"

const usage: Record<PluginKind, (type: string) => string> = {
  sink: (type) => `exports:\n  - name: orders\n    table: orders\n    format: parquet\n    destination: { type: ${type}, root: ./out }`,
  format: (type) => `exports:\n  - name: orders\n    table: orders\n    format: ${type}\n    destination: { type: local, path: ./out/orders }`,
  source: (type) => `source: { type: ${type}, rows: 1000 }\nexports:\n  - name: items\n    table: items\n    format: csv\n    destination: { type: local, path: ./out/items }`
}

export const readme = (name: string, kind: PluginKind, type: string): string => `# ${name}

A Rivet ${kind} plugin (\`type: ${type}\`), made with \`rivet plugin init\`.

\`\`\`bash
npm install        # Rivet (rivet-export), Effect 3, TypeScript, vitest
npm test           # builds dist/ and runs test/ with vitest
\`\`\`

Use it from a Rivet config:

\`\`\`yaml
plugins: [${name}]
${usage[kind](type)}
\`\`\`

- \`src/index.ts\` is the plugin: \`define${kind[0]!.toUpperCase()}${kind.slice(1)}\` from \`rivet-export/plugin\`, the only
  Rivet entry a plugin imports. Its tests may also use \`rivet-export\` and \`rivet-export/testing\`.
- \`rivet-export\` and \`effect\` are peer dependencies: the plugin shares the user's copy of both. Effect must be
  version 3 (\`effect@latest\` is 4, which Rivet does not support).
- See Rivet's docs/plugin-authoring.md for the contract, the error model and publishing.
`
