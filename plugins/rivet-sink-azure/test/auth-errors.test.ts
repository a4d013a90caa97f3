import {
  ContainerSASPermissions,
  generateBlobSASQueryParameters,
  StorageSharedKeyCredential
} from "@azure/storage-blob"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import type { SinkError } from "rivet-export"
import { beforeAll, describe, expect, it } from "vitest"
import { AZURITE_ACCOUNT, AZURITE_KEY, connectionStringFor } from "./support/azurite.js"
import { azuriteUrl, createContainer, keyAuth, layerFor, uniqueName, withDriver } from "./support/sink.js"

const container = uniqueName("auth")
const WRONG_KEY = Buffer.alloc(64, 7).toString("base64")
const bytes = new TextEncoder().encode("hello azure")

const sasFor = (permissions: string) =>
  generateBlobSASQueryParameters(
    {
      containerName: container,
      permissions: ContainerSASPermissions.parse(permissions),
      expiresOn: new Date(Date.now() + 3_600_000)
    },
    new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY)
  ).toString()

const failure = <A>(result: Either.Either<A, SinkError>): SinkError => {
  if (Either.isRight(result)) throw new Error("expected a SinkError, got success")
  return result.left
}

beforeAll(async () => {
  await createContainer(container)
})

describe("azure auth sources against Azurite", () => {
  it("a connection string writes, lists and reads back", async () => {
    const layer = layerFor({ container, prefix: "cs/", connection_string_env: "AZ_CS" }, { AZ_CS: connectionStringFor(azuriteUrl()) })
    const result = await withDriver(layer, (sink) =>
      Effect.gen(function* () {
        yield* sink.check
        yield* sink.put("a.txt", bytes, "text/plain")
        const listed = yield* sink.list!
        const read = yield* Stream.runCollect(sink.read!("a.txt"))
        return { listed, read: Buffer.concat(Chunk.toReadonlyArray(read)).toString() }
      })
    )
    expect(Either.getOrThrow(result)).toEqual({ listed: [{ key: "a.txt", size: bytes.length }], read: "hello azure" })
  })

  it("a SAS token with create/write/read/list permissions writes blobs, and a leading ? is accepted", async () => {
    const layer = layerFor(
      { container, prefix: "sas/", account_url: azuriteUrl(), sas_token_env: "AZ_SAS" },
      { AZ_SAS: `?${sasFor("rcwl")}` }
    )
    const result = await withDriver(layer, (sink) =>
      Effect.gen(function* () {
        const upload = yield* sink.begin("big.bin", "application/octet-stream")
        yield* upload.writeBlock(0, bytes)
        yield* upload.complete(1)
        return (yield* sink.list!).map((object) => object.key)
      })
    )
    expect(Either.getOrThrow(result)).toEqual(["big.bin"])
  })

  it("a read-only SAS token fails with PermissionDenied naming the permissions", async () => {
    const layer = layerFor({ container, account_url: azuriteUrl(), sas_token_env: "AZ_SAS" }, { AZ_SAS: sasFor("rl") })
    const error = failure(await withDriver(layer, (sink) => sink.put("denied.txt", bytes, "text/plain")))
    expect(error).toMatchObject({ plugin: "azure", operation: "PutBlob", reason: "PermissionDenied", retryable: false })
    expect(error.hint).toMatch(/create \(c\), write \(w\)/)
  })
})

describe("azure error mapping against Azurite", () => {
  it("a wrong account key fails check with InvalidCredentials and a hint, never printing the key", async () => {
    const layer = layerFor(keyAuth(container), { AZURITE_KEY: WRONG_KEY })
    const error = failure(await withDriver(layer, (sink) => sink.check))
    expect(error).toMatchObject({ plugin: "azure", reason: "InvalidCredentials", retryable: false })
    expect(error.message).toMatch(/^Azure PutBlob http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1\/auth-\w+\/\.rivet_doctor_probe failed: /)
    expect(error.hint).toMatch(/Check the account key in \$AZURITE_KEY and the account name 'devstoreaccount1'/)
    expect(`${error.message} ${error.hint}`).not.toContain(WRONG_KEY)
  })

  it("a missing container is NotFound with the hint that it must already exist", async () => {
    const missing = uniqueName("missing")
    const error = failure(await withDriver(layerFor(keyAuth(missing)), (sink) => sink.put("x.txt", bytes, "text/plain")))
    expect(error).toMatchObject({ reason: "NotFound", retryable: false, key: "x.txt" })
    expect(error.hint).toMatch(/container must already exist.*az storage container create --name missing-/)
  })

  it("an unset credential variable fails before any request", async () => {
    const error = failure(await withDriver(layerFor(keyAuth(container), {}), (sink) => sink.check))
    expect(error).toMatchObject({
      reason: "InvalidCredentials",
      retryable: false,
      message: "environment variable 'AZURITE_KEY' named by destination.account_key_env is not set"
    })
  })

  it("a connection string whose endpoint is plain http to another host is refused before any request", async () => {
    const env = { AZ_CS: connectionStringFor("http://10.1.2.3:10000/devstoreaccount1") }
    const error = failure(await withDriver(layerFor({ container, connection_string_env: "AZ_CS" }, env), (sink) => sink.check))
    expect(error.message).toMatch(/BlobEndpoint of \$AZ_CS .*non-loopback host '10\.1\.2\.3'/)
    expect(error.message).not.toContain(AZURITE_KEY)
  })

  it("an unreachable endpoint is Unavailable and retryable", async () => {
    const layer = layerFor({ container, account_url: "http://127.0.0.1:9/devstoreaccount1", account_key_env: "AZURITE_KEY" })
    const error = failure(await withDriver(layer, (sink) => sink.put("x.txt", bytes, "text/plain")))
    expect(error).toMatchObject({ reason: "Unavailable", retryable: true })
    expect(error.message).toMatch(/ECONNREFUSED/)
  })

  it("complete refuses a block that was never written", async () => {
    const error = failure(
      await withDriver(layerFor(keyAuth(container)), (sink) =>
        Effect.gen(function* () {
          const upload = yield* sink.begin("gap.bin", "application/octet-stream")
          yield* upload.writeBlock(0, bytes)
          yield* upload.writeBlock(2, bytes)
          yield* upload.complete(3)
        })
      )
    )
    expect(error.message).toMatch(/block 1 of 3 was never written/)
  })
})
