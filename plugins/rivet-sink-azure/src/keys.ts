/** Azure's limit on the length of a blob name (prefix included). */
export const MAX_BLOB_NAME_LENGTH = 1024

/** Azure's refusals beyond Rivet's key rules (which the framework checks): control characters and the name length. */
export const azureKeyProblem = (key: string, prefix: string): string | undefined => {
  if ([...key].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)) {
    return "the key contains a control character"
  }
  if ((prefix + key).length > MAX_BLOB_NAME_LENGTH) return `prefix + key exceed Azure's ${MAX_BLOB_NAME_LENGTH}-character blob name limit`
  return undefined
}
