import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Redacted from "effect/Redacted"
import { describe, expect, it } from "vitest"
import { connectionProblem, resolveConnection } from "../../../src/core/source/connection.js"

// A source's connection as a URL or as its parts: which combinations name one connection, and the URL the parts
// make (percent-encoded, the password from the config, a variable or a file; never in a message).

const template = { scheme: "postgres", defaultPort: 5432, exampleVariable: "DATABASE_URL" }
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-connection-"))
const context = (env: Record<string, string | undefined> = {}) => ({ env, configDir: dir })

describe("connectionProblem", () => {
  it("one way to connect: a URL key, or host + user + database with at most one password key", () => {
    expect(connectionProblem({ url_env: "DATABASE_URL" })).toBeUndefined()
    expect(connectionProblem({ url_file: "db.url" })).toBeUndefined()
    expect(connectionProblem({ host: "db", user: "u", database: "d", password_env: "PW" })).toBeUndefined()
    expect(connectionProblem({}, { embedded: {} })).toBeUndefined()
    expect(connectionProblem({})).toBe("set one of `url`, `url_env`, `url_file`, `host` to say which database to read")
    expect(connectionProblem({ url_env: "A", url_file: "b" })).toContain("set only one way to connect (found `url_env` and `url_file`)")
    expect(connectionProblem({ url_env: "A", host: "db" })).toContain("set only one way to connect (found `url_env` and `host`)")
    expect(connectionProblem({ host: "db" }, { embedded: {} })).toContain("(found `embedded` and `host`)")
    expect(connectionProblem({ host: "db", user: "u" })).toBe("a connection given by its parts needs `database` too (or use `url` / `url_env`)")
    expect(connectionProblem({ port: 5433, password_env: "PW" })).toBe(
      "a connection given by its parts needs `host` and `user` and `database` too (or use `url` / `url_env`)"
    )
    expect(connectionProblem({ host: "db", user: "u", database: "d", password: Redacted.make("x"), password_env: "PW" })).toBe(
      "set at most one of `password` and `password_env` and `password_file` (found `password` and `password_env`)"
    )
  })
})

describe("resolveConnection", () => {
  it("the parts make a URL, user, password and database percent-encoded, the port defaulted", () => {
    const parts = { host: "db.internal", user: "app@eu", database: "shop/main", password_env: "PW" }
    expect(resolveConnection(parts, context({ PW: "p@ss:w/rd#1%" }), template)).toEqual({
      url: "postgres://app%40eu:p%40ss%3Aw%2Frd%231%25@db.internal:5432/shop%2Fmain",
      origin: "source.host, source.user and source.database"
    })
    expect(resolveConnection({ host: "::1", port: 6543, user: "u", database: "d" }, context(), template)).toMatchObject({
      url: "postgres://u@[::1]:6543/d"
    })
  })

  it("a password or URL file's trailing newline is not part of it; a missing file or variable names the key", () => {
    fs.writeFileSync(path.join(dir, "pw"), "s3cret\n")
    fs.writeFileSync(path.join(dir, "url"), "postgres://u:p@h:1/d\n")
    expect(resolveConnection({ host: "h", user: "u", database: "d", password_file: "pw" }, context(), template)).toMatchObject({
      url: "postgres://u:s3cret@h:5432/d"
    })
    expect(resolveConnection({ url_file: "url" }, context(), template)).toEqual({ url: "postgres://u:p@h:1/d", origin: "the file of source.url_file" })
    expect(resolveConnection({ host: "h", user: "u", database: "d", password_file: "none" }, context(), template)).toEqual({
      message: `the file ${path.join(dir, "none")} (source.password_file) does not exist`,
      hint: "point source.password_file at a readable file, relative to the config file's directory"
    })
    const unset = resolveConnection({ host: "h", user: "u", database: "d", password_env: "PW" }, context(), template)
    expect(unset).toEqual({ message: "environment variable PW (source.password_env) is not set", hint: "set it, e.g. export PW=<the password>" })
  })
})
