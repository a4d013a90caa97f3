import * as WorkerRunner from "@effect/platform/WorkerRunner"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeWorkerRunner from "@effect/platform-node/NodeWorkerRunner"
import * as Effect from "effect/Effect"
import { laneRunner } from "./engine/lanes/serve.js"
import { loadConfigFile } from "./registry/load-config.js"

// The entry of a chunk worker thread (src/engine/lanes): it serves the lane with the config loader of the edge, which
// knows the plugins. The thread ends when the main thread closes it.
Effect.runFork(
  WorkerRunner.launch(laneRunner((file, env) => loadConfigFile(file, { env }))).pipe(
    Effect.provide(NodeWorkerRunner.layer),
    Effect.provide(NodeFileSystem.layer)
  )
)
