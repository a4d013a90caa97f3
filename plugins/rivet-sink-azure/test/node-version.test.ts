import { expect, it } from "vitest"

// The package's `node` dev dependency puts Node 22 first on PATH for npm scripts (Azurite and the Azure SDK
// require it); this fails if the tests ran on the machine's Node instead.
it("runs on the package's Node 22", () => {
  expect(process.versions.node.split(".")[0]).toBe("22")
})
