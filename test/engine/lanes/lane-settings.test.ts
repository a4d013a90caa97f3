import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import type { RivetConfig } from "../../../src/config/model.js"
import { laneSettings, workerThreadsFor } from "../../../src/engine/lanes/runner.js"

// How many of a chunked export's lanes run in worker threads: RIVET_LANES, else one per core beyond two.

const fromFile = { reloadable: true, origin: "/etc/rivet/export.yaml" } as unknown as RivetConfig
const workerEntry = new URL("file:///opt/rivet/dist/lanes-worker.js")
const settingsOf = (value: string | undefined, config: RivetConfig = fromFile) =>
  Effect.runSync(Effect.either(laneSettings(config, { RIVET_LANES: value }, workerEntry)))

describe("RIVET_LANES", () => {
  it("unset or empty: automatic; a number: at most that many worker threads; 0: none", () => {
    expect(settingsOf(undefined)).toEqual(
      Either.right({ configFile: "/etc/rivet/export.yaml", env: { RIVET_LANES: undefined }, threads: undefined, workerEntry })
    )
    expect(Either.getOrThrow(settingsOf(" "))?.threads).toBeUndefined()
    expect(Either.getOrThrow(settingsOf("3"))?.threads).toBe(3)
    expect(Either.getOrThrow(settingsOf("0"))).toBeUndefined()
  })

  it("without the worker threads' entry (given by the edge), every chunk runs in this thread", () => {
    expect(Effect.runSync(laneSettings(fromFile, { RIVET_LANES: "2" }, undefined))).toBeUndefined()
  })

  it("a config that is not a file (plugins or transforms in code) never uses worker threads", () => {
    expect(Either.getOrThrow(settingsOf("2", { reloadable: false, origin: "inline" } as unknown as RivetConfig))).toBeUndefined()
  })

  it.each(["two", "-1", "1.5", "65"])("RIVET_LANES=%s is refused, naming the variable and the range", (value) => {
    const refused = settingsOf(value)
    if (Either.isRight(refused)) throw new Error(`RIVET_LANES=${value} was accepted`)
    expect(refused.left._tag).toBe("ConfigError")
    expect(refused.left.path).toBe("RIVET_LANES")
    expect(refused.left.message).toBe(`RIVET_LANES=${value} is not a number of worker threads from 0 to 64`)
  })
})

describe("workerThreadsFor", () => {
  const automatic = { configFile: "/x.yaml", env: {}, workerEntry }
  it("automatic: one worker thread per core beyond two, at most lanes − 1 (this thread runs chunks too)", () => {
    expect(workerThreadsFor(2, automatic, 1)).toBe(0)
    expect(workerThreadsFor(2, automatic, 2)).toBe(0)
    expect(workerThreadsFor(4, automatic, 2)).toBe(0)
    expect(workerThreadsFor(2, automatic, 3)).toBe(1)
    expect(workerThreadsFor(4, automatic, 4)).toBe(2)
    expect(workerThreadsFor(4, automatic, 16)).toBe(3)
    expect(workerThreadsFor(1, automatic, 16)).toBe(0)
  })

  it("RIVET_LANES=N: N worker threads whatever the cores, at most lanes − 1", () => {
    expect(workerThreadsFor(2, { ...automatic, threads: 1 }, 2)).toBe(1)
    expect(workerThreadsFor(3, { ...automatic, threads: 5 }, 1)).toBe(2)
    expect(workerThreadsFor(8, { ...automatic, threads: 2 }, 16)).toBe(2)
  })
})
