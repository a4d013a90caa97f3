import type { TestProject } from "vitest/node"
import { startAzurite } from "./azurite.js"

/** One Azurite for the whole run; each test file uses its own containers. */
export default async function setup(project: TestProject) {
  const azurite = await startAzurite()
  project.provide("azuriteUrl", azurite.accountUrl)
  return azurite.stop
}

declare module "vitest" {
  export interface ProvidedContext {
    azuriteUrl: string
  }
}
