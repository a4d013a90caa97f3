import { DecodeFailure } from "./decode.js"

/**
 * Parses the text output of a one-dimensional PostgreSQL array (`{1,NULL,"a \"b\""}`) into element texts, `null`
 * for SQL NULL. Quoted elements may contain `,{}"\` (escaped with backslashes); an unquoted `NULL` is SQL NULL
 * while a quoted `"NULL"` is the string. A `[lo:hi]=` dimension prefix (arrays not starting at 1) is skipped.
 * Multi-dimensional arrays are rejected: they have no list<T> equivalent.
 */
export const parseArrayText = (text: string): Array<string | null> => {
  let i = 0
  if (text.charCodeAt(0) === 91) {
    const eq = text.indexOf("=")
    if (text.indexOf("[", 1) !== -1 && text.indexOf("[", 1) < eq) throw multiDimensional()
    i = eq + 1
  }
  if (text.charCodeAt(i) !== 123) throw malformed(text)
  i++
  const out: Array<string | null> = []
  if (text.charCodeAt(i) === 125) return out
  const end = text.length
  for (;;) {
    const c = text.charCodeAt(i)
    if (c === 123) throw multiDimensional()
    if (c === 34) {
      let value = ""
      let from = ++i
      for (;;) {
        const q = text.charCodeAt(i)
        if (q === 92) {
          value += text.slice(from, i)
          from = i + 1
          i += 2
        } else if (q === 34) {
          value += text.slice(from, i)
          i++
          break
        } else if (i >= end) {
          throw malformed(text)
        } else {
          i++
        }
      }
      out.push(value)
    } else {
      const from = i
      while (i < end) {
        const u = text.charCodeAt(i)
        if (u === 44 || u === 125) break
        i++
      }
      const raw = text.slice(from, i)
      out.push(raw.length === 4 && raw.toUpperCase() === "NULL" ? null : raw)
    }
    const sep = text.charCodeAt(i)
    if (sep === 125 && i === end - 1) return out
    if (sep !== 44) throw malformed(text)
    i++
  }
}

const multiDimensional = (): DecodeFailure =>
  new DecodeFailure(
    "multi-dimensional arrays are not supported",
    "unnest the array in SQL or cast it to text (col::text)"
  )

const malformed = (text: string): DecodeFailure =>
  new DecodeFailure(`malformed array text ${JSON.stringify(text.length > 60 ? text.slice(0, 60) + "…" : text)}`)
