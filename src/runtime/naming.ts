const pad = (value: number, width = 2): string => String(value).padStart(width, "0")

const utcParts = (at: Date) => ({
  date: `${at.getUTCFullYear()}${pad(at.getUTCMonth() + 1)}${pad(at.getUTCDate())}`,
  time: `${pad(at.getUTCHours())}${pad(at.getUTCMinutes())}${pad(at.getUTCSeconds())}`,
  millis: pad(at.getUTCMilliseconds(), 3)
})

/** `{export}_{YYYYMMDD}T{HHMMSS}.{mmm}` (UTC) — identifies one run of one export. */
export const makeRunId = (exportName: string, startedAt: Date): string => {
  const { date, time, millis } = utcParts(startedAt)
  return `${exportName}_${date}T${time}.${millis}`
}

/**
 * Names the parts of a single-runner export: `{export}_{YYYYMMDD}_{HHMMSS}_{mmm}.{ext}` (UTC, when the
 * first part is opened). With `max_file_size` set every part is suffixed `_part{N}` (N from 0) — a
 * streamed object cannot be renamed once we learn whether a second part follows.
 */
export const singleRunnerPartName = (
  exportName: string,
  openedAt: Date,
  extension: string,
  part: number,
  sizeSplit: boolean
): string => {
  const { date, time, millis } = utcParts(openedAt)
  const suffix = sizeSplit ? `_part${part}` : ""
  return `${exportName}_${date}_${time}_${millis}${suffix}.${extension}`
}

export const MANIFEST_KEY = "manifest.json"
export const SUCCESS_KEY = "_SUCCESS"
