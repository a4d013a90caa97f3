import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { describe, expect, it } from "vitest"
import { makeResolver } from "../../src/registry/resolver.js"
import { type AnyPlugin, defineSink, PLUGIN_API_VERSION } from "../../src/core/plugin.js"
import { memorySink } from "../../src/testing/memory.js"

const base = memorySink().plugin
const { kind: _kind, apiVersion: _version, ...definition } = base

/** The ConfigError's message and hint when a plugin passed in code is refused. */
const refusal = async (plugin: AnyPlugin) => {
  const exit = await Effect.runPromiseExit(Effect.provide(makeResolver([], process.cwd(), [plugin]), NodeFileSystem.layer))
  if (Exit.isSuccess(exit)) return undefined
  const error = exit.cause._tag === "Fail" ? (exit.cause.error as { message: string; hint?: string }) : undefined
  return { message: error?.message, hint: error?.hint }
}

describe("plugin apiVersion", () => {
  it("define* keep an explicit version and stamp Rivet's own when none is given", () => {
    expect(defineSink({ ...definition, apiVersion: 7 }).apiVersion).toBe(7)
    expect(defineSink(definition).apiVersion).toBe(PLUGIN_API_VERSION)
  })

  it("accepts the version this Rivet implements", async () => {
    expect(await refusal(defineSink({ ...definition, type: "mem-ok", apiVersion: PLUGIN_API_VERSION }))).toBeUndefined()
  })

  it("a newer plugin says to upgrade Rivet; an older one says to upgrade the plugin — both versions named", async () => {
    const newer = await refusal(defineSink({ ...definition, type: "mem-new", apiVersion: PLUGIN_API_VERSION + 1 }))
    expect(newer?.message).toBe(
      `the sink plugin 'mem-new' passed in code targets plugin API version ${PLUGIN_API_VERSION + 1}, this Rivet supports ${PLUGIN_API_VERSION}`
    )
    expect(newer?.hint).toBe(`upgrade Rivet to a release with plugin API version ${PLUGIN_API_VERSION + 1}`)
    const older = await refusal(defineSink({ ...definition, type: "mem-old", apiVersion: PLUGIN_API_VERSION - 1 }))
    expect(older?.hint).toBe(`upgrade the plugin to a release built for plugin API version ${PLUGIN_API_VERSION}`)
  })

  it("a plugin value without apiVersion was not made with define*; a non-number is not a version", async () => {
    const handMade = { ...definition, kind: "sink", type: "mem-hand" } as unknown as AnyPlugin
    expect((await refusal(handMade))?.message).toContain("has no apiVersion: it was not made with defineSource / defineFormat / defineSink")
    const odd = { ...definition, kind: "sink", type: "mem-odd", apiVersion: "1" } as unknown as AnyPlugin
    expect((await refusal(odd))?.message).toContain(`has apiVersion "1", which is not a plugin API version`)
  })
})
