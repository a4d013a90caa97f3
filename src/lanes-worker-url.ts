/**
 * Where the chunk worker threads' entry is built: `dist/lanes-worker.js` beside the library's modules, and
 * `dist/bundle/lanes-worker.js` beside the CLI's bundled chunks (scripts/bundle-cli.mjs names the entry so). Run from
 * sources (vitest) there is no .js beside this module, and chunks stay in the main thread.
 */
export const LANES_WORKER_URL = new URL("./lanes-worker.js", import.meta.url)
