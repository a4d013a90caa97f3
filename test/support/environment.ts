import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * Skips the running test and says why on stderr, so a case the environment cannot run shows up as skipped with its
 * reason, never as a silent pass.
 */
export const skipBecause = (context: { readonly skip: (note?: string) => never; readonly task: { readonly name: string } }, reason: string): never => {
  process.stderr.write(`SKIPPED "${context.task.name}": ${reason}\n`)
  return context.skip(reason)
}

export const isRoot = process.getuid?.() === 0

/** A directory made to refuse new files, and how to make it writable again. */
export interface WriteDenial {
  /** How: `mode 0555` for a user, `chattr +i` (immutable) for root, whom permission bits do not stop. */
  readonly how: string
  readonly undo: () => void
}

const refusesNewFiles = (dir: string): boolean => {
  const probe = path.join(dir, `.probe-${process.pid}`)
  try {
    fs.writeFileSync(probe, "")
    fs.rmSync(probe, { force: true })
    return false
  } catch {
    return true
  }
}

/**
 * Makes the existing directory `dir` refuse to create files for this process with a permission error (EACCES or
 * EPERM): mode 0555 for an ordinary user; as root the immutable attribute (`chattr +i`), which binds root too.
 * Returns why not where neither works (root on a file system without the attribute, or without CAP_LINUX_IMMUTABLE).
 */
export const denyWrites = (dir: string): WriteDenial | { readonly reason: string } => {
  if (!isRoot) {
    fs.chmodSync(dir, 0o555)
    const undo = () => fs.chmodSync(dir, 0o755)
    if (refusesNewFiles(dir)) return { how: "mode 0555", undo }
    undo()
    return { reason: `mode 0555 did not stop this user (uid ${process.getuid?.()}) from creating files in ${dir}` }
  }
  const set = spawnSync("chattr", ["+i", dir], { encoding: "utf8" })
  const undo = () => void spawnSync("chattr", ["-i", dir])
  if (set.status === 0 && refusesNewFiles(dir)) return { how: "chattr +i", undo }
  undo()
  return {
    reason: `running as root, whom mode bits do not stop, and chattr +i is not available here (${
      set.error?.message ?? (set.stderr.trim() || `exit ${set.status}`)
    })`
  }
}
